//! HTTP/2 over io_uring: the worker's protocol ([`super::H2Worker`]) with its connections
//! carried by a ring as the HTTP/1.x engine's are ([`crate::engine::uring`]): a single issuer
//! with deferred task running that waits for a batch of completions within the napper's cap,
//! and a multishot `recvmsg` per connection into a ring of registered buffers that keeps the
//! kernel's receive stamps.
//!
//! - A connection's output (its frames; over TLS, the records they make) is sent from the
//!   connection's own buffer by a `send` that posts its completion, which hands the buffer
//!   back; one is in flight per connection at a time, and what is queued meanwhile goes with
//!   the next. The streams whose frames a send holds are written when the submission holding
//!   it is handed to the kernel, as the HTTP/1.x engine's keep-alive requests are.
//! - A new connection (a socket of the process's, connected by the ring) is handed to the
//!   kernel in a submission of its own, between two reads of the clock: its `connect`, the
//!   `send` of the client's preface with its first stream and the receive. Without TLS the
//!   send's completion says when the connection was made and that stream written; over TLS
//!   the first send is the ClientHello, and the connection is made when the handshake ends,
//!   its last flight carrying the preface.
//! - A connection given up has what is in flight on it cancelled and is closed by entries of
//!   the next submission, after whatever was staged for it (a GOAWAY); a send still in flight
//!   keeps its buffer until its completion comes.

use super::super::uring::conn::{
    on_sock, send_entry, split, user_data, Peer, Sock, OP_CANCEL, OP_CONNECT, OP_RECV, OP_SEND,
};
use super::super::uring::ring::{self, Cqe, Received, Ring, Wait};
use super::super::uring::rounds::{submit_or_stop, wait_for, Waits};
use super::super::uring::worker_ring;
use super::super::worker::{self, Core, Placement};
use super::{alpn_refused, H2Worker, Wire};
use crate::h2;
use crate::sock::{self, Stamp};
use crate::stats::{FailureKind, Recorder};
use io_uring::{opcode, squeue, types};
use std::io;
use std::os::fd::{AsFd, IntoRawFd};
use std::time::{Duration, Instant};

/// The io_uring engine's way of carrying connections: what the next submission holds, and
/// what the ring's operations point into.
pub(super) struct Uring {
    peer: Box<Peer>,
    /// The header every multishot `recvmsg` is given.
    msghdr: Box<libc::msghdr>,
    staged: Vec<squeue::Entry>,
    /// Connections whose output went into the staged sends, with their socket's generation:
    /// written when they are handed to the kernel.
    unsent: Vec<(usize, u32)>,
    /// Connections whose multishot receive ended (for want of buffers, say): armed again
    /// after the batch.
    rearm: Vec<usize>,
    /// A connection was opened since the last submission: it goes to the kernel on its own.
    opened: bool,
    /// Send buffers of sockets given up while a send of them was in flight, by that send's
    /// user data: the kernel may read them until its completion comes.
    retired: Vec<(u64, Vec<u8>)>,
    /// Over TLS, the plaintext of the records a completion brought.
    plain: Vec<u8>,
    fixed_nap: bool,
}

/// A connection's socket on io_uring, its receive, and the bytes its send in flight reads.
pub(super) struct Ringed {
    sock: Sock,
    /// A multishot receive is armed on it.
    armed: bool,
    /// A send of `out[out_at..]` is in flight.
    sending: bool,
    out: Vec<u8>,
    out_at: usize,
}

/// A worker's ring apart from the worker, so that a completion's buffer can be read while
/// the worker acts on it; the ring is torn down before the memory its operations point into.
struct Run {
    ring: Ring,
    w: H2Worker<Uring>,
    cqes: Vec<Cqe>,
}

/// Runs a worker's share of the connections over HTTP/2 on io_uring.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    let streams = core.sh.cfg.load.streams.max(1) as usize;
    let Some(ring) = worker_ring(&core, at.conns * streams) else {
        return core.finish();
    };
    worker::tighten_timer_slack(&core.napper);
    let wire = Uring {
        peer: Peer::new(core.sh.addr),
        msghdr: ring::msghdr(),
        staged: Vec::new(),
        unsent: Vec::new(),
        rearm: Vec::new(),
        opened: false,
        retired: Vec::new(),
        plain: Vec::new(),
        fixed_nap: matches!(at.coalesce, crate::config::Coalesce::Nap(_)),
    };
    let mut r = Run {
        ring,
        w: H2Worker::new(core, at, wire),
        cqes: Vec::new(),
    };
    r.drive();
    r.w.count_unfinished();
    // What is staged (GOAWAYs and closes of finished connections among it) still goes out.
    let _ = r.ring.submit_and_wait(&mut r.w.wire.staged, Wait::NONE);
    let Run { ring, w, .. } = r;
    drop(ring);
    w.core.finish()
}

impl Run {
    /// The loop, one submission per round: hand the kernel what is staged and wait for a
    /// batch of completions, handle them, fire due timers, let the connections with work
    /// open streams and write, and every `tick` end what is past its deadline.
    fn drive(&mut self) {
        for idx in 0..self.w.conns.len() {
            self.pump(idx);
        }
        let tick =
            (self.w.core.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_watch = Instant::now() + tick;
        let mut caught_up = false;
        loop {
            let now = Instant::now();
            if !self.w.core.running(now) {
                break;
            }
            let waits = Waits {
                busy: !self.cqes.is_empty()
                    || !self.w.wire.rearm.is_empty()
                    || !self.w.dirty.is_empty(),
                // Streams, not connections: each stream's response comes in a completion
                // of its own (the server writes them apart).
                reading: self.w.conns.iter().map(|c| c.open as usize).sum(),
                caught_up,
                fixed_nap: self.w.wire.fixed_nap,
                batch_waits: self.ring.batch_waits(),
            };
            let wait = wait_for(&mut self.w.core, now, next_watch, waits);
            if !self.submit(wait, now) {
                break;
            }
            self.ring.reap(&mut self.cqes);
            caught_up = self.cqes.is_empty();
            if !self.cqes.is_empty() {
                let now = Instant::now();
                let real = sock::realtime_now();
                for cqe in std::mem::take(&mut self.cqes) {
                    let got = cqe.buffer().and_then(|b| self.ring.received(b, cqe.res));
                    self.w.completion(cqe, got, now, real);
                    if let Some(b) = cqe.buffer() {
                        self.ring.recycle(b);
                    }
                }
                self.ring.publish();
            }
            for idx in std::mem::take(&mut self.w.wire.rearm) {
                self.w.arm(idx);
            }
            self.fire_timers();
            for idx in std::mem::take(&mut self.w.dirty) {
                self.pump(idx);
            }
            let now = Instant::now();
            if now >= next_watch {
                self.w.expire_streams(now);
                next_watch = now + tick;
            }
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(idx) = self.w.core.due_timer(now) {
            self.w.on_timer(idx, now);
        }
    }

    /// Lets connection `idx` open streams and stage its output. A connection it opened is
    /// handed to the kernel at once, on its own (with whatever was staged before it): its
    /// time started when the worker got to it, and the kernel's work for the connections
    /// opened after it must not count in it. Its send's completion, when the submission
    /// brings it (on loopback it does), is handled there; the rest wait for the next round.
    fn pump(&mut self, idx: usize) {
        let now = Instant::now();
        self.w.pump(idx, now);
        if !std::mem::take(&mut self.w.wire.opened) || !self.submit(Wait::NONE, now) {
            return;
        }
        let now = Instant::now();
        let from = self.cqes.len();
        self.ring.reap(&mut self.cqes);
        let mut kept = from;
        for i in from..self.cqes.len() {
            let cqe = self.cqes[i];
            // A failed send waits its turn: the connect's own failure, which comes before
            // it, says why.
            if split(cqe.data).0 == OP_SEND && cqe.res >= 0 {
                self.w.completion(cqe, None, now, sock::realtime_now());
            } else {
                self.cqes[kept] = cqe;
                kept += 1;
            }
        }
        self.cqes.truncate(kept);
    }

    /// Marks what the staged sends hold as written at `now` (the clock as the round's work
    /// ended), then hands the staged entries to the kernel as [`submit_or_stop`] does.
    fn submit(&mut self, wait: Wait, now: Instant) -> bool {
        for (idx, generation) in std::mem::take(&mut self.w.wire.unsent) {
            let c = &mut self.w.conns[idx];
            // (A socket given up since has taken its output with it.)
            if c.generation == generation {
                c.wrote(now);
            }
        }
        submit_or_stop(
            &mut self.ring,
            &mut self.w.wire.staged,
            wait,
            &self.w.core.sh,
        )
    }
}

impl Wire for Uring {
    type Sock = Ringed;

    /// Opens a socket of the process's, with the connection's options, and stages its
    /// connect; the preface and first stream follow with [`Self::flush`].
    fn connect(w: &mut H2Worker<Uring>, idx: usize, now: Instant) -> Result<(), FailureKind> {
        let sh = &*w.core.sh;
        let fd =
            crate::connect::open(sh.addr, &sh.cfg.socket).map_err(|e| sh.note_connect_error(&e))?;
        let tls = match sh.tls.as_ref().map(|t| t.connect()).transpose() {
            Ok(t) => t.map(|t| Box::new((*t).unbounded())),
            Err(e) => return Err(sh.note_connect_error(&e)),
        };
        // Frames go out whenever there are some: Nagle must not hold them back.
        let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
        let stamped = sh.stamps.is_some() && sock::enable_rx_stamps(fd.as_fd()).is_ok();
        let ringed = Ringed {
            sock: Sock::Fd(fd),
            armed: false,
            sending: false,
            out: Vec::new(),
            out_at: 0,
        };
        let c = &mut w.conns[idx];
        c.connected_to(ringed, tls, stamped, now);
        let Some(r) = c.stream.as_ref() else {
            return Ok(());
        };
        let (addr, len) = w.wire.peer.as_ptr();
        let connect = on_sock!(&r.sock, |t| opcode::Connect::new(t, addr, len).build())
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(user_data(OP_CONNECT, idx, c.generation));
        w.wire.staged.push(connect);
        w.wire.opened = true;
        Ok(())
    }

    /// Stages a send of what the connection has queued (over TLS, of the records it makes),
    /// unless one is in flight: its completion calls this again. Over TLS nothing is queued
    /// in the session before the handshake's end, so that the streams count as written when
    /// their frames leave with its last flight.
    fn flush(w: &mut H2Worker<Uring>, idx: usize) {
        let c = &mut w.conns[idx];
        let Some(r) = c.stream.as_mut() else {
            return;
        };
        if r.sending {
            return;
        }
        r.out.clear();
        r.out_at = 0;
        let mut moved = false;
        match c.tls.as_mut() {
            None => {
                r.out.extend_from_slice(&c.out[c.out_pos..]);
                moved = true;
            }
            Some(t) => {
                if !t.handshaking() && c.out_pos < c.out.len() {
                    if t.queue_plaintext(&c.out[c.out_pos..]).is_err() {
                        return w.conn_failed(idx, FailureKind::Write);
                    }
                    moved = true;
                }
                t.take_records(&mut r.out);
            }
        }
        if moved {
            c.out_pos = c.out.len();
        }
        if !r.out.is_empty() {
            let send = send_entry(&r.sock, &r.out, user_data(OP_SEND, idx, c.generation));
            w.wire.staged.push(send);
            r.sending = true;
            // A new plain connection's streams are written when its send completes.
            if moved && c.connected {
                w.wire.unsent.push((idx, c.generation));
            }
        }
        w.arm(idx);
    }

    /// Stages, after what is staged for it (a GOAWAY), the cancelling of what is in flight on
    /// the socket (a connect not yet made, its receive, a send waiting for room) and its
    /// close; a send's buffer is
    /// kept until its completion. (A shutdown would run later, in the kernel's workers, and
    /// could find the descriptor's number taken by the next socket.)
    fn drop_socket(w: &mut H2Worker<Uring>, idx: usize) {
        let c = &mut w.conns[idx];
        if let Some(mut r) = c.stream.take() {
            let wire = &mut w.wire;
            let quiet = squeue::Flags::SKIP_SUCCESS;
            // A cancel that finds nothing (the send went out meanwhile) is no news.
            let data = user_data(OP_CANCEL, idx, c.generation);
            let connecting = !c.connected;
            for (op, on) in [
                (OP_CONNECT, connecting),
                (OP_SEND, r.sending),
                (OP_RECV, r.armed),
            ] {
                if on {
                    let cancel = opcode::AsyncCancel::new(user_data(op, idx, c.generation));
                    wire.staged
                        .push(cancel.build().flags(quiet).user_data(data));
                }
            }
            if r.sending {
                let data = user_data(OP_SEND, idx, c.generation);
                wire.retired.push((data, std::mem::take(&mut r.out)));
            }
            let close = match r.sock {
                Sock::Fd(fd) => opcode::Close::new(types::Fd(fd.into_raw_fd())),
                Sock::Direct(slot) => opcode::Close::new(types::Fixed(slot)),
            };
            wire.staged.push(close.build().flags(quiet).user_data(data));
        }
        c.drop_socket();
    }
}

impl H2Worker<Uring> {
    /// Arms the connection's multishot receive, unless it is.
    fn arm(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(r) = c.stream.as_mut() else {
            return;
        };
        if r.armed {
            return;
        }
        r.armed = true;
        let msghdr: &libc::msghdr = &self.wire.msghdr;
        let recv = on_sock!(&r.sock, |t| opcode::RecvMsgMulti::new(
            t,
            msghdr,
            ring::GROUP
        )
        .build())
        .user_data(user_data(OP_RECV, idx, c.generation));
        self.wire.staged.push(recv);
    }

    /// One completion, seen at `now` (`real`: the same on the wall clock); `got` is what its
    /// buffer holds, if it filled one.
    fn completion(&mut self, cqe: Cqe, got: Option<Received<'_>>, now: Instant, real: Stamp) {
        let (op, idx, generation) = split(cqe.data);
        if op == OP_SEND && !self.wire.retired.is_empty() {
            // A given-up socket's output: the kernel has done with it.
            if let Some(at) = self.wire.retired.iter().position(|(d, _)| *d == cqe.data) {
                self.wire.retired.swap_remove(at);
                return;
            }
        }
        let Some(c) = self.conns.get(idx) else {
            return;
        };
        if c.stream.is_none() || c.generation & 0xff_ffff != generation {
            // A late word about a socket the slot has done with.
            return;
        }
        match op {
            OP_RECV => self.on_receive(idx, cqe, got, now, real),
            OP_SEND => self.on_sent(idx, cqe.res, now),
            // The connection was made: what its connect's completion says since is the
            // receive's to tell.
            OP_CONNECT if c.connected || cqe.res == -libc::ECANCELED => {}
            OP_CONNECT => self.connect_failed(idx, io::Error::from_raw_os_error(-cqe.res)),
            _ => {}
        }
    }

    /// The connection's send completed with `res` at `now`: the rest of its buffer is sent,
    /// or what was queued meanwhile follows. A new plain connection's first send says it was
    /// made, and its first stream written, then.
    fn on_sent(&mut self, idx: usize, res: i32, now: Instant) {
        let c = &mut self.conns[idx];
        let Some(r) = c.stream.as_mut() else {
            return;
        };
        let Ok(n) = usize::try_from(res) else {
            r.sending = false;
            if !c.connected {
                return self.connect_failed(idx, io::Error::from_raw_os_error(-res));
            }
            return self.conn_failed(idx, FailureKind::Write);
        };
        r.out_at += n;
        if r.out_at < r.out.len() {
            let send = send_entry(
                &r.sock,
                &r.out[r.out_at..],
                user_data(OP_SEND, idx, c.generation),
            );
            self.wire.staged.push(send);
            return;
        }
        r.sending = false;
        if !c.connected && c.tls.is_none() {
            c.connected = true;
            for st in c.slots.iter_mut().filter(|st| st.id != 0) {
                st.req.connect = now.saturating_duration_since(st.req.start);
            }
            c.wrote(now);
        }
        self.mark(idx);
    }

    /// A completion of the connection's multishot receive.
    fn on_receive(
        &mut self,
        idx: usize,
        cqe: Cqe,
        got: Option<Received<'_>>,
        now: Instant,
        real: Stamp,
    ) {
        let c = &mut self.conns[idx];
        let Some(r) = c.stream.as_mut() else {
            return;
        };
        let last = !cqe.more();
        if last {
            r.armed = false;
        }
        match got {
            Some(g) if !g.payload.is_empty() => {
                let arrival = sock::stamp_in(g.control).map(|st| (st, real));
                let alive = if c.tls.is_some() {
                    self.tls_data(idx, g.payload, now, arrival)
                } else {
                    self.received(idx, g.payload, now, arrival)
                };
                // What came may open windows or streams: the connection looks once the
                // batch is handled, as after a readiness event on epoll.
                self.mark(idx);
                if alive && last {
                    self.wire.rearm.push(idx);
                }
            }
            _ if cqe.res == -libc::ECANCELED || cqe.res == -libc::ENOBUFS => {
                self.wire.rearm.push(idx)
            }
            _ if cqe.res < 0 && !c.connected => {
                // The socket never connected (or its handshake never ended): its receive
                // reports the connection's error.
                self.connect_failed(idx, io::Error::from_raw_os_error(-cqe.res));
            }
            _ if c.tls.as_ref().is_some_and(|t| t.handshaking()) => {
                // The server closed or reset the connection before the handshake's end.
                // (A multishot receive's end of stream fills a buffer with its header alone.)
                let why = match cqe.res {
                    e if e < 0 => io::Error::from_raw_os_error(-e).to_string(),
                    _ => "the server closed the connection".to_string(),
                };
                self.connect_failed(idx, io::Error::other(crate::tls::HandshakeError(why)));
            }
            _ => self.conn_failed(idx, FailureKind::Receive),
        }
    }

    /// Records that came on a TLS connection: the handshake's end makes the connection (the
    /// server must have chosen HTTP/2) and sends its last flight with the preface; the
    /// plaintext goes on as a plain connection's bytes do. False when the connection ended.
    fn tls_data(
        &mut self,
        idx: usize,
        records: &[u8],
        now: Instant,
        arrival: Option<(Stamp, Stamp)>,
    ) -> bool {
        let c = &mut self.conns[idx];
        let Some(t) = c.tls.as_mut() else {
            return false;
        };
        let handshaking = t.handshaking();
        let mut plain = std::mem::take(&mut self.wire.plain);
        plain.clear();
        let absorbed = t.absorb(records, &mut plain);
        let alive = match absorbed {
            Err(e) if handshaking => {
                self.connect_failed(idx, e);
                false
            }
            Err(_) => {
                if plain.is_empty() || self.received(idx, &plain, now, arrival) {
                    self.conn_failed(idx, FailureKind::Receive);
                }
                false
            }
            Ok(eof) => {
                let made = handshaking && !t.handshaking();
                if made && !t.alpn_h2() {
                    let e = io::Error::other(h2::NotHttp2(
                        "the server did not select HTTP/2 (ALPN \"h2\") in the TLS handshake; it may serve HTTP/1.1 only over TLS (leave out --h2)"
                            .into(),
                    ));
                    self.connect_failed(idx, e);
                    self.wire.plain = plain;
                    return false;
                }
                if made {
                    c.connected = true;
                    for st in c.slots.iter_mut().filter(|st| st.id != 0) {
                        st.req.connect = now.saturating_duration_since(st.req.start);
                    }
                }
                Uring::flush(self, idx);
                let alive = plain.is_empty() || self.received(idx, &plain, now, arrival);
                if alive && eof {
                    // The server's close_notify ends the connection as its FIN does.
                    self.conn_failed(idx, FailureKind::Receive);
                }
                alive && !eof
            }
        };
        self.wire.plain = plain;
        alive
    }

    /// The connection could not be made (or its handshake failed): `e` says why.
    fn connect_failed(&mut self, idx: usize, e: io::Error) {
        let kind = self.core.sh.note_connect_error(&alpn_refused(e));
        self.conn_failed(idx, kind);
    }
}
