//! An io_uring worker's connection slots as data: what each is doing, what it owns, and how a
//! completion names the slot and socket it is for.

use super::super::slot::Slot;
use io_uring::{opcode, squeue};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::time::Instant;

/// A connection's socket: a descriptor of the process's, or one of the ring's own (a direct
/// descriptor, made, set up, connected and closed by entries of the ring, in the slot that
/// bears the connection's index) where the kernel allows it.
pub(in crate::engine) enum Sock {
    Fd(OwnedFd),
    Direct(u32),
}

/// `$body`, with `$t` naming `$sock` (a `&Sock`) as an entry takes it: an `io_uring` entry is
/// built for one or the other kind of descriptor.
macro_rules! on_sock {
    ($sock:expr, |$t:ident| $body:expr) => {
        match $sock {
            Sock::Fd(fd) => {
                let $t = ::io_uring::types::Fd(::std::os::fd::AsRawFd::as_raw_fd(fd));
                $body
            }
            Sock::Direct(slot) => {
                let $t = ::io_uring::types::Fixed(*slot);
                $body
            }
        }
    };
}
pub(in crate::engine) use on_sock;

/// What a completion is for: the top byte of its user data.
pub(in crate::engine) const OP_CONNECT: u64 = 1;
pub(in crate::engine) const OP_SEND: u64 = 2;
pub(in crate::engine) const OP_RECV: u64 = 3;
pub(in crate::engine) const OP_CANCEL: u64 = 4;
pub(super) const OP_DROP: u64 = 5;
/// A send of TLS records: unlike a plain request's, it posts its completion, which hands its
/// buffer back.
pub(super) const OP_TLS_SEND: u64 = 6;
/// The steps that make a direct descriptor's socket before its connect: their failure is the
/// connection's.
pub(super) const OP_SOCKET: u64 = 7;

/// The user data of slot `idx`'s operation `op` on its socket number `generation` (its low
/// 24 bits: enough to tell an old socket's late completion from the current one's).
pub(in crate::engine) fn user_data(op: u64, idx: usize, generation: u32) -> u64 {
    (op << 56) | (u64::from(generation & 0xff_ffff) << 32) | idx as u64
}

pub(in crate::engine) fn split(data: u64) -> (u64, usize, u32) {
    (
        data >> 56,
        (data & 0xffff_ffff) as usize,
        ((data >> 32) & 0xff_ffff) as u32,
    )
}

pub(super) struct Conn {
    pub(super) sock: Option<Sock>,
    /// Bumped with every new socket.
    pub(super) generation: u32,
    /// A multishot receive is armed on the socket.
    pub(super) armed: bool,
    /// The socket is established: its first request went out (over TLS: its handshake
    /// ended), or response bytes came on it.
    pub(super) connected: bool,
    /// The request is not yet written: it waits for the next submission (or, on a new plain
    /// connection, for its `send`'s completion).
    pub(super) unsent: bool,
    /// The multishot receive is being cancelled, so that the body's rest can be dropped.
    pub(super) cancelling: bool,
    /// A receive that drops body bytes in the kernel (`MSG_TRUNC`) is in flight.
    pub(super) dropping: bool,
    /// What that receive is given (made the first time the slot drops bytes).
    pub(super) drop_hdr: Option<Box<DropHdr>>,
    /// Bytes that came after the last response due, before the next request was sent (a
    /// server answering ahead): the start of the next response.
    pub(super) early: Vec<u8>,
    /// Over `https://`: the connection's TLS session and the records it sends (boxed: a plain
    /// connection pays one pointer for it).
    pub(super) tls: Option<Box<TlsSide>>,
    pub(super) slot: Slot,
}

/// A connection's TLS session, and the records being sent: the kernel reads them until the
/// send's completion comes (`sending`), from `out_at` on.
pub(super) struct TlsSide {
    pub(super) session: crate::tls::TlsConn,
    pub(super) out: Vec<u8>,
    pub(super) out_at: usize,
    pub(super) sending: bool,
}

impl TlsSide {
    pub(super) fn new(session: crate::tls::TlsConn) -> Box<TlsSide> {
        Box::new(TlsSide {
            session: session.unbounded(),
            out: Vec::new(),
            out_at: 0,
            sending: false,
        })
    }
}

/// What a `recvmsg` that drops body bytes is given: its header, one vector with no buffer
/// whose length is what to drop, and room for the receive stamp. Boxed, so that the header may
/// point to the rest, and the kernel to all of it.
pub(super) struct DropHdr {
    pub(super) msg: libc::msghdr,
    pub(super) iov: libc::iovec,
    pub(super) control: [u8; 64],
}

impl DropHdr {
    pub(super) fn new() -> Box<DropHdr> {
        let mut h = Box::new(DropHdr {
            msg: libc::msghdr {
                msg_name: std::ptr::null_mut(),
                msg_namelen: 0,
                msg_iov: std::ptr::null_mut(),
                msg_iovlen: 1,
                msg_control: std::ptr::null_mut(),
                msg_controllen: 0,
                msg_flags: 0,
            },
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            },
            control: [0; 64],
        });
        h.msg.msg_iov = &mut h.iov;
        h.msg.msg_control = h.control.as_mut_ptr().cast();
        h
    }

    /// Readies it to drop `len` bytes; returns the header to give the kernel.
    pub(super) fn prepare(&mut self, len: usize) -> *mut libc::msghdr {
        self.iov.iov_len = len;
        self.control = [0; 64];
        self.msg.msg_controllen = self.control.len();
        self.msg.msg_flags = 0;
        &mut self.msg
    }
}

/// The address connections go to, as the kernel takes it; boxed, so that an entry may point to it.
pub(in crate::engine) enum Peer {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
}

impl Peer {
    pub(in crate::engine) fn new(addr: SocketAddr) -> Box<Peer> {
        Box::new(match addr {
            SocketAddr::V4(a) => Peer::V4(libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            }),
            SocketAddr::V6(a) => Peer::V6(libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            }),
        })
    }

    pub(in crate::engine) fn as_ptr(&self) -> (*const libc::sockaddr, libc::socklen_t) {
        match self {
            Peer::V4(a) => (
                (a as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ),
            Peer::V6(a) => (
                (a as *const libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            ),
        }
    }
}

impl Conn {
    /// A slot with no socket yet, waiting to start; `head_only`: its requests are HEAD.
    pub(super) fn new(head_only: bool, start: Instant) -> Conn {
        Conn {
            sock: None,
            generation: 0,
            armed: false,
            connected: false,
            unsent: false,
            cancelling: false,
            dropping: false,
            drop_hdr: None,
            early: Vec::new(),
            tls: None,
            slot: Slot::new(head_only, start),
        }
    }

    /// The request was written at `at`: on a new connection, the connection was made then.
    pub(super) fn wrote(&mut self, at: Instant) {
        self.unsent = false;
        self.slot.req.written = at;
        if !self.slot.req.reused {
            self.slot.req.connect = at.saturating_duration_since(self.slot.req.start);
        }
    }
}

/// A `send` of `bytes` on `sock` (all of them, or an error), which must stay put until it
/// completes.
pub(in crate::engine) fn send_entry(sock: &Sock, bytes: &[u8], data: u64) -> squeue::Entry {
    on_sock!(sock, |t| opcode::Send::new(
        t,
        bytes.as_ptr(),
        bytes.len() as u32
    )
    .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
    .build())
    .user_data(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_names_the_operation_the_slot_and_the_socket() {
        for (op, idx, generation) in [
            (OP_CONNECT, 0, 0),
            (OP_DROP, 9_999, 7),
            (OP_RECV, 3, 1 << 24),
        ] {
            let (o, i, g) = split(user_data(op, idx, generation));
            assert_eq!((o, i), (op, idx));
            // The socket's number wraps at 24 bits, as the comparison with the slot's does.
            assert_eq!(g, generation & 0xff_ffff);
        }
        assert_ne!(user_data(OP_RECV, 1, 2), user_data(OP_RECV, 1, 3));
        assert_ne!(user_data(OP_RECV, 1, 2), user_data(OP_SEND, 1, 2));
    }

    #[test]
    fn a_drop_header_points_at_its_own_vector_and_control_room() {
        let mut h = DropHdr::new();
        let msg = h.prepare(1 << 20);
        assert_eq!(msg, &mut h.msg as *mut libc::msghdr);
        assert_eq!(h.msg.msg_iov, &mut h.iov as *mut libc::iovec);
        assert_eq!(h.msg.msg_iovlen, 1);
        assert!(h.iov.iov_base.is_null(), "no buffer: the bytes are dropped");
        assert_eq!(h.iov.iov_len, 1 << 20);
        assert_eq!(h.msg.msg_control, h.control.as_mut_ptr().cast());
        assert_eq!(h.msg.msg_controllen, h.control.len());
    }

    #[test]
    fn the_peer_is_the_kernels_sockaddr() {
        let v4 = Peer::new("127.0.0.1:8080".parse().unwrap());
        let Peer::V4(a) = &*v4 else { panic!() };
        assert_eq!(u16::from_be(a.sin_port), 8080);
        assert_eq!(u32::from_be(a.sin_addr.s_addr), 0x7f00_0001);
        assert_eq!(
            v4.as_ptr().1 as usize,
            std::mem::size_of::<libc::sockaddr_in>()
        );
        let v6 = Peer::new("[::1]:443".parse().unwrap());
        let Peer::V6(a) = &*v6 else { panic!() };
        assert_eq!(u16::from_be(a.sin6_port), 443);
        assert_eq!(a.sin6_addr.s6_addr[15], 1);
        assert_eq!(
            v6.as_ptr().1 as usize,
            std::mem::size_of::<libc::sockaddr_in6>()
        );
    }
}
