//! Opening a connection with ab's socket options: `-b` (the size of the socket's send and
//! receive buffers, set before the SYN so that the window it announces follows) and `-B` (the
//! local address to connect from). Without either, a connection is mio's plain non-blocking
//! connect, so the default path costs no extra system call.

use mio::net::TcpStream;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Options every connection's socket is opened with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketOptions {
    /// `SO_SNDBUF` and `SO_RCVBUF`, bytes (ab's `-b`; the kernel doubles what it is given).
    pub buffer: Option<u32>,
    /// Local address to bind before connecting (ab's `-B`); the port is the kernel's choice.
    pub bind: Option<IpAddr>,
}

impl SocketOptions {
    fn is_default(&self) -> bool {
        self.buffer.is_none() && self.bind.is_none()
    }
}

/// Starts a non-blocking connect to `addr` with `opts`. As with [`TcpStream::connect`], the
/// connection may still be in progress when this returns: the first write tells.
pub fn connect(addr: SocketAddr, opts: &SocketOptions) -> io::Result<TcpStream> {
    if opts.is_default() {
        return TcpStream::connect(addr);
    }
    let fd = socket_for(addr)?;
    let raw = fd.as_raw_fd();
    if let Some(size) = opts.buffer {
        let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
        set_int(raw, libc::SO_SNDBUF, size)?;
        set_int(raw, libc::SO_RCVBUF, size)?;
    }
    if let Some(ip) = opts.bind {
        with_sockaddr(SocketAddr::new(ip, 0), |sa, len| {
            // SAFETY: `sa` points to a sockaddr of `len` bytes that lives through the call.
            cvt(unsafe { libc::bind(raw, sa, len) })
        })?;
    }
    let r = with_sockaddr(addr, |sa, len| {
        // SAFETY: as for bind above.
        cvt(unsafe { libc::connect(raw, sa, len) })
    });
    match r {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(std::net::TcpStream::from(fd)))
}

/// Checks, once before the run, that connections to `addr` can be opened with `opts`: a `-B`
/// address of another family, or one this machine does not have, is the user's mistake, and
/// would otherwise show up as every connection failing for want of local ports.
pub fn check(addr: SocketAddr, opts: &SocketOptions) -> Result<(), String> {
    let Some(ip) = opts.bind else {
        return Ok(());
    };
    if ip.is_ipv4() != addr.is_ipv4() {
        return Err(format!(
            "the local address {ip} (-B) cannot reach {addr}: one is IPv4, the other IPv6"
        ));
    }
    let fd = socket_for(addr).map_err(|e| format!("cannot open a socket: {e}"))?;
    with_sockaddr(SocketAddr::new(ip, 0), |sa, len| {
        // SAFETY: `sa` points to a sockaddr of `len` bytes that lives through the call.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), sa, len) })
    })
    .map_err(|e| format!("cannot connect from {ip} (-B): {e}; is it an address of this machine?"))
}

fn socket_for(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket takes plain integers and returns a new descriptor or -1.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor just created and owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_int(fd: RawFd, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: `v` outlives the call and its size is passed with it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

fn cvt(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Calls `f` with `addr` as a C socket address and its length.
fn with_sockaddr<T>(
    addr: SocketAddr,
    f: impl FnOnce(*const libc::sockaddr, libc::socklen_t) -> T,
) -> T {
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: an all-zero sockaddr_in is valid; the fields are set below.
            let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_port = a.port().to_be();
            sa.sin_addr = libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            };
            f(
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            // SAFETY: an all-zero sockaddr_in6 is valid; the fields are set below.
            let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sa.sin6_port = a.port().to_be();
            sa.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sa.sin6_flowinfo = a.flowinfo();
            sa.sin6_scope_id = a.scope_id();
            f(
                (&sa as *const libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    /// Connects with both options to a listener on 127.0.0.1 and checks what the server sees:
    /// the connection comes from the bound address, and the buffers were set.
    #[test]
    fn options_apply_to_the_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = SocketOptions {
            buffer: Some(16 * 1024),
            bind: Some("127.0.0.2".parse().unwrap()),
        };
        check(addr, &opts).unwrap();
        let s = connect(addr, &opts).unwrap();
        let (mut peer, from) = listener.accept().unwrap();
        assert_eq!(from.ip(), opts.bind.unwrap());
        let mut got: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `got` and `len` outlive the call and describe a c_int.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut got as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0);
        // Linux doubles the size asked for, to leave room for its bookkeeping (socket(7)).
        assert_eq!(got, 32 * 1024);
        // The connection works: bytes go through both ways.
        use std::os::fd::IntoRawFd;
        // SAFETY: the descriptor is taken out of mio's stream, which gives up owning it.
        let mut s = unsafe { std::net::TcpStream::from_raw_fd(s.into_raw_fd()) };
        s.set_nonblocking(false).unwrap();
        s.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        peer.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");
        let deadline = Instant::now() + Duration::from_secs(5);
        peer.write_all(b"pong").unwrap();
        s.set_read_timeout(Some(deadline - Instant::now())).unwrap();
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"pong");
    }

    #[test]
    fn a_bind_address_of_the_wrong_family_or_not_ours_is_refused() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let v6 = SocketOptions {
            bind: Some("::1".parse().unwrap()),
            ..SocketOptions::default()
        };
        assert!(check(addr, &v6).unwrap_err().contains("IPv4"));
        // TEST-NET-1 (RFC 5737) is never an address of this machine; nothing is sent to it.
        let foreign = SocketOptions {
            bind: Some("192.0.2.1".parse().unwrap()),
            ..SocketOptions::default()
        };
        let e = check(addr, &foreign).unwrap_err();
        assert!(e.contains("is it an address of this machine"), "{e}");
        assert!(check(addr, &SocketOptions::default()).is_ok());
    }
}
