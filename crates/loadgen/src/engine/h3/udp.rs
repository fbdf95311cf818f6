//! A connection slot's UDP socket: opened connected to the server, sending QUIC's transmits
//! (several datagrams at once by GSO), and saying how many datagrams its receive buffer
//! dropped.

use quinn_udp::UdpSocketState;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// The socket buffers asked for (the kernel caps them at `net.core.{r,w}mem_max`).
pub(super) const SOCKET_BUFFER: usize = 4 << 20;

/// A slot's socket: connected to the server, so that the kernel reports a closed port on it
/// and the server's workers (SO_REUSEPORT) see a 4-tuple of its own.
pub(super) struct Sock {
    pub(super) udp: UdpSocket,
    pub(super) state: UdpSocketState,
}

impl Sock {
    /// A socket bound to `local` (port 0), connected to `server`, with buffers of `buffer`
    /// bytes asked for.
    pub(super) fn open(local: IpAddr, server: SocketAddr, buffer: usize) -> io::Result<Sock> {
        let udp = UdpSocket::bind(SocketAddr::new(local, 0))?;
        udp.connect(server)?;
        let state = UdpSocketState::new((&udp).into())?;
        let _ = state.set_recv_buffer_size((&udp).into(), buffer);
        let _ = state.set_send_buffer_size((&udp).into(), buffer);
        Ok(Sock { udp, state })
    }

    /// Sends one transmit (one datagram, or several of the same size by GSO).
    pub(super) fn send(&self, t: &quinn_proto::Transmit, contents: &[u8]) -> io::Result<()> {
        let transmit = quinn_udp::Transmit {
            destination: t.destination,
            ecn: t
                .ecn
                .and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
            contents,
            segment_size: t.segment_size,
            src_ip: t.src_ip,
        };
        self.state.try_send((&self.udp).into(), &transmit)
    }

    /// The datagrams the socket dropped because its receive buffer was full (0 where the
    /// kernel does not say).
    pub(super) fn receive_drops(&self) -> u64 {
        let mut info = [0u32; SK_MEMINFO_VARS];
        let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
        // SAFETY: `info` is writable for `len` bytes, and the kernel writes at most that many.
        let rc = unsafe {
            libc::getsockopt(
                self.udp.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_MEMINFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc == 0 && len as usize >= (SK_MEMINFO_DROPS + 1) * 4 {
            u64::from(info[SK_MEMINFO_DROPS])
        } else {
            0
        }
    }
}

/// `SO_MEMINFO` (Linux 3.9): a socket's memory counters, of which `SK_MEMINFO_DROPS` is the
/// datagrams it dropped for want of room in its receive buffer.
const SO_MEMINFO: libc::c_int = 55;
const SK_MEMINFO_VARS: usize = 9;
const SK_MEMINFO_DROPS: usize = 8;
