//! An io_uring connection's socket from its making to its closing: the process's own (made by
//! `socket(2)`) or a direct descriptor the ring makes in the chain that connects it.

use super::super::slot::H1Slots;
use super::conn::{
    on_sock, user_data, Peer, Sock, TlsSide, OP_CONNECT, OP_DROP, OP_RECV, OP_SOCKET,
};
use super::{ring, sock, Slots};
use io_uring::{opcode, squeue, types};
use std::os::fd::{AsFd, IntoRawFd};

impl Slots {
    /// Opens a socket for the slot and stages its connect. Nothing in a new connection's
    /// entries is linked: handed to the kernel together they are issued in order, inline (a
    /// linked entry would wait for the one before it to complete in the ring's deferred work,
    /// after every other connection of the submission had been made). On loopback the
    /// handshake is done when `connect` returns, so the `send` after it goes out at once; over
    /// a network it waits for the socket to become writable, the receive for data.
    pub(super) fn open(&mut self, idx: usize) -> bool {
        let sh = &self.core.sh;
        let tls = match sh.tls.as_ref().map(|t| t.connect()).transpose() {
            Ok(t) => t.map(|t| TlsSide::new(*t)),
            Err(e) => {
                let kind = sh.note_connect_error(&e);
                self.fail(idx, kind);
                return false;
            }
        };
        let sock = if self.direct {
            self.stage_direct_socket(idx)
        } else {
            let fd = match crate::connect::open(sh.addr, &sh.cfg.socket) {
                Ok(fd) => fd,
                Err(e) => {
                    let kind = sh.note_connect_error(&e);
                    self.fail(idx, kind);
                    return false;
                }
            };
            if sh.stamps.is_some() {
                let _ = sock::enable_rx_stamps(fd.as_fd());
            }
            Sock::Fd(fd)
        };
        let c = &mut self.conns[idx];
        if !matches!(sock, Sock::Direct(_)) {
            c.generation = c.generation.wrapping_add(1);
        }
        c.tls = tls;
        c.armed = false;
        c.connected = false;
        let (addr, len) = self.peer.as_ptr();
        let connect = on_sock!(&sock, |t| opcode::Connect::new(t, addr, len).build())
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(user_data(OP_CONNECT, idx, c.generation));
        c.sock = Some(sock);
        self.staged.push(connect);
        true
    }

    /// Stages the making of the slot's next socket as a direct descriptor in the slot of its
    /// index (replacing whatever the slot held), with receive stamps asked for. Its failure is
    /// the first completion of the connection's entries; the others find the slot empty.
    fn stage_direct_socket(&mut self, idx: usize) -> Sock {
        let c = &mut self.conns[idx];
        c.generation = c.generation.wrapping_add(1);
        let data = user_data(OP_SOCKET, idx, c.generation);
        let slot = idx as u32;
        let domain = match *self.peer {
            Peer::V4(_) => libc::AF_INET,
            Peer::V6(_) => libc::AF_INET6,
        };
        let quiet = squeue::Flags::SKIP_SUCCESS;
        self.staged.push(
            opcode::Socket::new(domain, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0)
                .file_index(types::DestinationSlot::try_from_slot_target(slot).ok())
                .build()
                .flags(quiet)
                .user_data(data),
        );
        if self.core.sh.stamps.is_some() {
            self.staged.push(
                opcode::SetSockOpt::new(
                    types::Fixed(slot),
                    libc::SOL_SOCKET as u32,
                    libc::SO_TIMESTAMPNS as u32,
                    (&ring::ON as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as u32,
                )
                .build()
                .flags(quiet)
                .user_data(data),
            );
        }
        Sock::Direct(slot)
    }

    /// Closes the slot's socket once nothing is in flight on it: with the next submission.
    pub(super) fn close_socket(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.armed || c.dropping {
            return self.abandon(idx);
        }
        self.retire_out(idx);
        let c = &mut self.conns[idx];
        let close = match c.sock.take() {
            Some(Sock::Fd(fd)) => opcode::Close::new(types::Fd(fd.into_raw_fd())),
            Some(Sock::Direct(slot)) => opcode::Close::new(types::Fixed(slot)),
            None => return,
        };
        self.staged
            .push(close.build().flags(squeue::Flags::SKIP_SUCCESS));
    }

    /// Abandons the slot's socket: its armed receive, if any, is ended by shutting the socket
    /// down (its completion then names an old socket and is ignored), then it is closed.
    pub(super) fn abandon(&mut self, idx: usize) {
        self.retire_out(idx);
        let c = &mut self.conns[idx];
        if let Some(sock) = c.sock.take() {
            match sock {
                Sock::Fd(fd) if c.armed => {
                    let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Both);
                }
                Sock::Fd(_) => {}
                Sock::Direct(slot) => {
                    // What is in flight on it is cancelled (a shutdown would run later, in
                    // the kernel's workers, and could find the slot's next socket), then the
                    // slot is emptied; the socket closes once the cancelled entries let go.
                    let quiet = squeue::Flags::SKIP_SUCCESS;
                    for (op, on) in [(OP_RECV, c.armed), (OP_DROP, c.dropping)] {
                        if on {
                            let cancel = opcode::AsyncCancel::new(user_data(op, idx, c.generation));
                            self.staged.push(cancel.build().flags(quiet));
                        }
                    }
                    let close = opcode::Close::new(types::Fixed(slot));
                    self.staged.push(close.build().flags(quiet));
                }
            }
            c.armed = false;
            c.unsent = false;
            c.cancelling = false;
            c.dropping = false;
            c.early.clear();
        }
    }
}
