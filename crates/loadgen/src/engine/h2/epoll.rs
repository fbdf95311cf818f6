//! HTTP/2 over the epoll engine: a connection's socket is mio's, registered with the worker's
//! poller, written until it would block and read when it is readable, in the loop every
//! epoll worker runs ([`worker::drive`]).

use super::super::worker::{self, token, Core, Placement, Protocol, TURN_BYTES};
use super::{alpn_refused, H2Worker, Wire};
use crate::h2;
use crate::sock::{self, Recv};
use crate::stats::{FailureKind, Recorder};
use mio::event::Event as Readiness;
use mio::net::TcpStream;
use mio::Interest;
use std::io::{self, Write as _};
use std::os::fd::AsFd;
use std::time::Instant;

/// The epoll engine's way of carrying connections.
pub(super) struct Epoll;

/// A connection's socket on epoll, and what it is registered with the poller for.
pub(super) struct Polled {
    s: TcpStream,
    registered: Option<Interest>,
}

/// Runs a worker's share of the connections over HTTP/2 on epoll.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    worker::drive(H2Worker::new(core, at, Epoll))
}

impl Wire for Epoll {
    type Sock = Polled;

    /// Opens a new connection and queues the client's preface.
    fn connect(w: &mut H2Worker<Epoll>, idx: usize, now: Instant) -> Result<(), FailureKind> {
        let sh = &*w.core.sh;
        let s = crate::connect::connect(sh.addr, &sh.cfg.socket)
            .map_err(|e| sh.note_connect_error(&e))?;
        let tls = sh
            .tls
            .as_ref()
            .map(|t| t.connect())
            .transpose()
            .map_err(|e| sh.note_connect_error(&e))?;
        // Frames are written whenever there are some, while earlier ones may be unacknowledged:
        // Nagle must not hold them back (one setsockopt per connection, as h2load does).
        let _ = s.set_nodelay(true);
        let stamped = sh.stamps.is_some() && sock::enable_rx_stamps(s.as_fd()).is_ok();
        let polled = Polled {
            s,
            registered: None,
        };
        w.conns[idx].connected_to(polled, tls, stamped, now);
        Ok(())
    }

    /// Writes what the connection has queued; the first write that goes through establishes
    /// it (over TLS: the handshake is done, and the server chose HTTP/2).
    fn flush(w: &mut H2Worker<Epoll>, idx: usize) {
        let c = &mut w.conns[idx];
        let Some(p) = c.stream.as_mut() else {
            return;
        };
        let s = &mut p.s;
        let mut blocked = false;
        loop {
            let pending = c.out_pos < c.out.len();
            if !pending && !c.tls.as_ref().is_some_and(|t| t.wants_write()) {
                break;
            }
            let at = Instant::now();
            let r = match c.tls.as_mut() {
                Some(t) => t.send(s.as_fd(), &c.out[c.out_pos..]),
                None => s.write(&c.out[c.out_pos..]),
            };
            match r {
                Ok(0) if pending => return w.conn_failed(idx, FailureKind::Write),
                Ok(n) => {
                    c.out_pos += n;
                    if !c.connected {
                        if c.tls.as_ref().is_some_and(|t| !t.alpn_h2()) {
                            let e = io::Error::other(h2::NotHttp2(
                                "the server did not select HTTP/2 (ALPN \"h2\") in the TLS handshake; it may serve HTTP/1.1 only over TLS (leave out --h2)"
                                    .into(),
                            ));
                            let kind = w.core.sh.note_connect_error(&e);
                            return w.conn_failed(idx, kind);
                        }
                        c.connected = true;
                        for st in c.slots.iter_mut().filter(|st| st.id != 0) {
                            st.req.connect = at.saturating_duration_since(st.req.start);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if !c.connected {
                        let kind = w.core.sh.note_connect_error(&alpn_refused(e));
                        return w.conn_failed(idx, kind);
                    }
                    return w.conn_failed(idx, FailureKind::Write);
                }
            }
        }
        c.wrote(Instant::now());
        let Some(p) = c.stream.as_mut() else {
            return;
        };
        let want = if blocked {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        if p.registered != Some(want) {
            let tok = token(idx, c.generation);
            let r = match p.registered {
                None => w.core.poll.registry().register(&mut p.s, tok, want),
                Some(_) => w.core.poll.registry().reregister(&mut p.s, tok, want),
            };
            if r.is_err() {
                return w.conn_failed(idx, FailureKind::Exception);
            }
            p.registered = Some(want);
        }
    }

    fn drop_socket(w: &mut H2Worker<Epoll>, idx: usize) {
        w.conns[idx].drop_socket();
    }
}

impl Protocol for H2Worker<Epoll> {
    fn core(&mut self) -> &mut Core {
        &mut self.core
    }

    fn into_core(self) -> Core {
        self.core
    }

    fn slots(&self) -> usize {
        self.conns.len()
    }

    fn is_current(&self, idx: usize, generation: u32) -> bool {
        self.conns
            .get(idx)
            .is_some_and(|c| c.generation == generation && c.stream.is_some())
    }

    fn start(&mut self) {
        self.pump_all();
    }

    fn ready(&mut self, idx: usize, ev: &Readiness) {
        let closed = ev.is_read_closed() || ev.is_error();
        let was_connected = self.conns[idx].connected;
        if !was_connected || ev.is_writable() {
            // Connecting (a TLS handshake waits for the server's flights while writing) or
            // output waiting for room.
            Epoll::flush(self, idx);
        }
        let c = &self.conns[idx];
        if c.stream.is_some() && c.connected && (!was_connected || ev.is_readable() || closed) {
            self.read(idx, closed);
        }
        self.mark(idx);
    }

    fn resume(&mut self, idx: usize, _closed: bool) {
        // A resumed read does not act on a FIN reported before: the read that finds it does.
        self.read(idx, false);
        self.mark(idx);
    }

    fn pending(&self) -> bool {
        !self.dirty.is_empty()
    }

    fn timer(&mut self, idx: usize, now: Instant) -> bool {
        self.on_timer(idx, now);
        false
    }

    fn after_timers(&mut self) {
        self.pump_dirty();
    }

    fn ended(&mut self) {
        self.count_unfinished();
    }

    fn expire(&mut self, now: Instant) {
        self.expire_streams(now);
    }
}

impl H2Worker<Epoll> {
    /// Reads and handles frames until the socket is empty, the connection ends, or the
    /// connection has had its turn.
    fn read(&mut self, idx: usize, closed: bool) {
        let mut budget = TURN_BYTES;
        let mut buf = std::mem::take(&mut self.core.buf);
        loop {
            let c = &mut self.conns[idx];
            let Some(p) = c.stream.as_ref() else {
                break;
            };
            let fd = p.s.as_fd();
            let got = match c.tls.as_mut() {
                Some(t) => t.recv(fd, &mut buf, c.stamped),
                None => sock::recv(fd, &mut buf, c.stamped),
            };
            match got {
                Recv::Data { len, stamp } => {
                    let now = Instant::now();
                    let arrival = stamp.map(|st| (st, self.core.realtime_at(now)));
                    let emptied = len < buf.len();
                    let eof_after = c.tls.as_ref().is_some_and(|t| t.eof_pending());
                    if !self.received(idx, &buf[..len], now, arrival) {
                        break;
                    }
                    if eof_after {
                        self.conn_failed(idx, FailureKind::Receive);
                        break;
                    }
                    if emptied && !closed {
                        break;
                    }
                    budget = budget.saturating_sub(len);
                    if budget == 0 {
                        let generation = self.conns[idx].generation;
                        self.core.resume.push((idx, generation, false));
                        break;
                    }
                }
                Recv::Again => break,
                Recv::Eof | Recv::Failed => {
                    self.conn_failed(idx, FailureKind::Receive);
                    break;
                }
            }
        }
        self.core.buf = buf;
    }
}
