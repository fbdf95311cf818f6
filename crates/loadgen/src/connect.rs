//! Opening a connection with ab's socket options: `-b` (the size of the socket's send and
//! receive buffers, set before the SYN so that the window it announces follows) and `-B` (the
//! local address to connect from). Without either, a connection is mio's plain non-blocking
//! connect, so the default path costs no extra system call.

use mio::net::TcpStream;
use rustix::io::Errno;
use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;

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
    let fd = open(addr, opts)?;
    match rustix::net::connect(&fd, &addr) {
        Ok(()) | Err(Errno::INPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(TcpStream::from_std(std::net::TcpStream::from(fd)))
}

/// A non-blocking socket for a connection to `addr`, with the options applied, not yet
/// connected.
pub fn open(addr: SocketAddr, opts: &SocketOptions) -> io::Result<OwnedFd> {
    let fd = socket_for(addr)?;
    if let Some(size) = opts.buffer {
        // The kernel takes an int.
        let size = i32::try_from(size).unwrap_or(i32::MAX) as usize;
        sockopt::set_socket_send_buffer_size(&fd, size)?;
        sockopt::set_socket_recv_buffer_size(&fd, size)?;
    }
    if let Some(ip) = opts.bind {
        rustix::net::bind(&fd, &SocketAddr::new(ip, 0))?;
    }
    Ok(fd)
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
    rustix::net::bind(&fd, &SocketAddr::new(ip, 0)).map_err(|e| {
        format!(
            "cannot connect from {ip} (-B): {}; is it an address of this machine?",
            io::Error::from(e)
        )
    })
}

fn socket_for(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    Ok(rustix::net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?)
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
        let got = sockopt::socket_recv_buffer_size(&s).unwrap();
        // Linux doubles the size asked for, to leave room for its bookkeeping (socket(7)).
        assert_eq!(got, 32 * 1024);
        // The connection works: bytes go through both ways.
        let mut s = std::net::TcpStream::from(OwnedFd::from(s));
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
