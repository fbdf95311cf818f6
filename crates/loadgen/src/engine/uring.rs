//! The io_uring engine: HTTP/1.x, plain or over TLS, with the same slots, timings and records
//! as the epoll engine's ([`super::h1`]), and the system calls batched.
//!
//! - One ring per worker, a single issuer whose completions' work the kernel runs only when the
//!   worker waits (`DEFER_TASKRUN`): the server's writes do not wake the worker, and the worker
//!   waits for several completions at once, up to a time cap taken from the load (the nap of
//!   [`crate::coalesce`]), or for one when that policy says to block.
//! - Each connection has one multishot `recvmsg` armed, into a ring of buffers the worker
//!   registered: the kernel fills a buffer whenever data arrives and keeps the receive stamp
//!   with it, so the time a response waited in the ring is the generator's, not the server's,
//!   as with epoll.
//! - A request is one `send` that posts no completion when it succeeds. With keep-alive a
//!   request costs no system call of its own: one `io_uring_enter` submits a batch of sends
//!   and waits for the next batch of responses.
//! - A new connection's socket is a direct descriptor where the kernel allows it (Linux 6.7
//!   and later, [`ring::probe_direct`]): its entries make it in the ring's slot of the
//!   connection's index (`socket`), ask for receive stamps (`setsockopt`), connect, send the
//!   request and arm the receive, and its `close` goes with a later submission. With `-B` or
//!   `--buffer` (options the ring does not apply) or on older kernels, the socket is the
//!   process's own, made by `socket(2)` and `setsockopt(2)` first.
//!
//! Timings: a request on an open connection is written when the batch holding its `send` is
//! handed to the kernel. A new connection is handed over on its own, between two reads of the
//! clock, its entries unlinked so that the kernel issues them in order inside that
//! submission: its time starts when the worker gets to it, as on epoll, not when a batch of
//! connections was handed over (the kernel's work for the ones before it would then count as
//! the server's). Its `send` posts its completion, which says when the request was written
//! and the connection made: on loopback within that submission, over a network once the
//! handshake is done.
//!
//! Over TLS the receive buffers hold records, which the connection's rustls session turns
//! into the plaintext the slots read ([`crate::tls::TlsConn::absorb`]); nothing is dropped in
//! the kernel. A new connection's first `send` is the ClientHello; the request is queued in
//! the session behind the handshake and leaves with its last flight, which is when it counts
//! as written and the connection as connected (the handshake in Connect, as ab counts it).
//! Records are sent from the connection's own buffer, so their `send` posts its completion,
//! which hands the buffer back; one is in flight per connection at a time.

use super::slot::{H1Slots, Slot, State};
use super::worker::{self, Core, Placement, Schedule};
use crate::http::Feed;
use crate::sock;
use crate::stats::{FailureKind, Recorder};
use conn::{
    on_sock, send_entry, split, user_data, Conn, DropHdr, Peer, Sock, OP_CANCEL, OP_CONNECT,
    OP_DROP, OP_RECV, OP_SEND, OP_SOCKET, OP_TLS_SEND,
};
use io_uring::{opcode, squeue};
use ring::{Cqe, Ring, Wait};
use std::io;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub(super) mod conn;
pub(super) mod ring;
pub(super) mod rounds;
mod sockets;
mod tls;

/// Size of each receive buffer; the first [`ring::PAYLOAD_AT`] bytes hold the receive stamp.
const BUF_SIZE: usize = 16 * 1024;
/// Most completions a worker waits for at once.
const MAX_BATCH: usize = 32;
/// How long the closed-mode drain of the server's FIN may take, as with epoll.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// Most new connections a worker opens per submission.
const OPENS_PER_ROUND: usize = 128;
/// Most requests a worker starts per submission.
const STARTS_PER_ROUND: usize = 1024;
/// Most bytes a connection keeps that came before their request was sent.
const EARLY_MAX: usize = 1024 * 1024;
/// Longest a worker waits before it looks at the shared stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// Body bytes still due from which a response's body is dropped in the kernel rather than
/// copied into the receive buffers.
const DROP_FROM: u64 = 4 * BUF_SIZE as u64;

/// Whether the workers may use io_uring here; `Err` says why not. Tried once per process.
pub(super) fn available() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED.get_or_init(ring::probe).clone()
}

/// Whether the ring can make connections' sockets itself ([`ring::probe_direct`]). Tried once
/// per process.
fn direct_sockets() -> bool {
    static PROBED: OnceLock<bool> = OnceLock::new();
    *PROBED.get_or_init(ring::probe_direct)
}

/// A worker's slots and what they stage for the next submission; the ring is apart, so that
/// a completion's buffer can be read while the slots move on.
struct Slots {
    core: Core,
    conns: Vec<Conn>,
    peer: Box<Peer>,
    /// The header every multishot `recvmsg` is given.
    msghdr: Box<libc::msghdr>,
    staged: Vec<squeue::Entry>,
    schedule: Schedule,
    /// Slots in `Queued`, in the order their requests completed.
    queued: Vec<usize>,
    /// Slots whose request goes out with the next submission.
    unsent: Vec<usize>,
    /// Slots whose multishot receive ended for want of buffers: armed again after the batch.
    rearm: Vec<usize>,
    /// Body bytes nobody looks at are dropped in the kernel (see the epoll engine's).
    discard: bool,
    /// A fixed nap: every wait lasts it, collecting what came meanwhile.
    fixed_nap: bool,
    /// Sockets are direct descriptors, made by the ring in the slot of their connection's
    /// index; else the process's own, made by `socket(2)` (with `-B` or `--buffer`, which
    /// the ring does not apply, or on kernels before 6.7).
    direct: bool,
    /// Over TLS, the plaintext of the records a completion brought.
    plain: Vec<u8>,
    /// TLS record buffers of sockets given up while a send of them was in flight, by that
    /// send's user data: the kernel may still read them until its completion comes.
    retired: Vec<(u64, Vec<u8>)>,
}

struct Worker {
    /// First: torn down before the memory its operations point into.
    ring: Ring,
    s: Slots,
    cqes: Vec<Cqe>,
}

/// A worker's ring for `slots` requests in flight at once (its connections; over HTTP/2 their
/// streams), with receive buffers for them, 2 MiB at most: 10,000 connections share them (a
/// multishot receive that finds none left ends, and is armed again once the batch has handed
/// its buffers back). `None` when it cannot be set up: the load stops with the reason.
pub(super) fn worker_ring(core: &Core, slots: usize) -> Option<Ring> {
    let buffers = (slots * 2).clamp(64, 128) as u16;
    match Ring::new(slots, buffers, BUF_SIZE) {
        Ok(r) => Some(r),
        Err(e) => {
            core.sh
                .note_first_error(|| format!("cannot set up io_uring: {e}"));
            core.sh.trigger_stop();
            None
        }
    }
}

/// Runs a worker's share of the connections over io_uring.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    let Some(ring) = worker_ring(&core, at.conns) else {
        return core.finish();
    };
    let socket = &core.sh.cfg.socket;
    let direct = socket.bind.is_none()
        && socket.buffer.is_none()
        && direct_sockets()
        && ring.register_sockets(at.conns).is_ok();
    worker::tighten_timer_slack(&core.napper);
    let head_only = core.sh.cfg.load.method.head_only();
    let start = core.start;
    let mut w = Worker {
        ring,
        s: Slots {
            conns: (0..at.conns).map(|_| Conn::new(head_only, start)).collect(),
            peer: Peer::new(core.sh.addr),
            msghdr: ring::msghdr(),
            staged: Vec::new(),
            schedule: Schedule::new(core.sh.cfg.load.rate, at.threads),
            queued: Vec::new(),
            unsent: Vec::new(),
            rearm: Vec::new(),
            discard: core.sh.discard,
            fixed_nap: matches!(at.coalesce, crate::config::Coalesce::Nap(_)),
            direct,
            plain: Vec::new(),
            retired: Vec::new(),
            core,
        },
        cqes: Vec::new(),
    };
    w.run();
    w.s.count_unfinished();
    // What is staged (closes of finished connections among it) still goes to the kernel.
    let _ = w.ring.submit_and_wait(&mut w.s.staged, Wait::NONE);
    let Worker { ring, s, .. } = w;
    drop(ring);
    s.core.finish()
}

impl Worker {
    fn run(&mut self) {
        for i in 0..self.s.conns.len() {
            self.s.queue(i);
        }
        self.s.start_queued(&mut self.ring, &mut self.cqes);
        let tick =
            (self.s.core.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_watch = Instant::now() + tick;
        // The last look found nothing: the worker has caught up with the server.
        let mut caught_up = false;
        loop {
            let now = Instant::now();
            if !self.s.core.running(now) {
                break;
            }
            let batch_waits = self.ring.batch_waits();
            let wait = self
                .s
                .wait(now, next_watch, caught_up, &self.cqes, batch_waits);
            // The batch's requests leave with this submission: written now.
            self.s.written(now);
            if !self.s.submit(&mut self.ring, wait) {
                break;
            }
            self.ring.reap(&mut self.cqes);
            caught_up = self.cqes.is_empty();
            if !self.cqes.is_empty() {
                let now = Instant::now();
                let real = sock::realtime_now();
                for cqe in self.cqes.drain(..) {
                    let got = cqe.buffer().and_then(|b| self.ring.received(b, cqe.res));
                    self.s.completion(cqe, got, now, real);
                    if let Some(b) = cqe.buffer() {
                        self.ring.recycle(b);
                    }
                }
                self.ring.publish();
            }
            for idx in std::mem::take(&mut self.s.rearm) {
                self.s.arm(idx);
            }
            self.s.start_queued(&mut self.ring, &mut self.cqes);
            self.s.fire_timers();
            let now = Instant::now();
            if now >= next_watch {
                self.s.expire(now);
                next_watch = now + tick;
            }
        }
    }
}

impl Slots {
    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(idx) = self.core.due_timer(now) {
            self.timer(idx, now);
        }
    }

    /// Stages the slot's request, and a new connection first when it has none.
    fn send(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.slot.req.start = now;
        c.slot.req.reused = c.sock.is_some();
        c.slot.deadline = Some(now + self.core.timeout);
        c.slot.parser.reset(c.slot.req.want_server);
        c.slot.state = State::Reading;
        if c.sock.is_none() && !self.open(idx) {
            return;
        }
        if self.conns[idx].tls.is_some() {
            self.send_tls(idx);
        } else {
            self.send_plain(idx);
        }
        self.arm(idx);
        let early = std::mem::take(&mut self.conns[idx].early);
        if !early.is_empty() {
            // They came before the request was sent: the response started with it.
            self.data(idx, &early, None, now, sock::realtime_now());
        }
    }

    /// Stages the slot's request as one `send` of the shared request bytes, silent on success
    /// but on a new connection, where its completion says when it went out ([`Self::sent`]).
    fn send_plain(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        let request = self.core.sh.request_bytes(c.slot.batch);
        let send = send_entry(sock, request, user_data(OP_SEND, idx, c.generation));
        c.unsent = true;
        if c.slot.req.reused {
            self.staged.push(send.flags(squeue::Flags::SKIP_SUCCESS));
            self.unsent.push(idx);
        } else {
            self.staged.push(send);
        }
    }

    /// Arms the slot's multishot receive.
    fn arm(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        if c.armed || c.dropping {
            return;
        }
        c.armed = true;
        let msghdr: &libc::msghdr = &self.msghdr;
        let recv = on_sock!(sock, |t| opcode::RecvMsgMulti::new(t, msghdr, ring::GROUP)
            .build())
        .user_data(user_data(OP_RECV, idx, c.generation));
        self.staged.push(recv);
    }

    /// One completion; `got` is what its buffer holds, if it filled one.
    fn completion(
        &mut self,
        cqe: Cqe,
        got: Option<ring::Received<'_>>,
        now: Instant,
        real: sock::Stamp,
    ) {
        let (op, idx, generation) = split(cqe.data);
        let Some(c) = self.conns.get_mut(idx) else {
            return;
        };
        if op == OP_TLS_SEND && !self.retired.is_empty() {
            // A given-up socket's records: the kernel has done with them.
            if let Some(at) = self.retired.iter().position(|(d, _)| *d == cqe.data) {
                self.retired.swap_remove(at);
                return;
            }
        }
        if c.sock.is_none() || c.generation & 0xff_ffff != generation {
            // A late word about a socket the slot has done with.
            return;
        }
        match op {
            OP_RECV => self.received(idx, generation, cqe, got, now, real),
            OP_SEND if cqe.res >= 0 => {
                self.sent(cqe, now);
            }
            OP_TLS_SEND if cqe.res >= 0 => {
                let Some(tls) = c.tls.as_mut() else {
                    return;
                };
                tls.out_at += cqe.res as usize;
                if tls.out_at < tls.out.len() {
                    return self.stage_out(idx);
                }
                tls.sending = false;
                self.flush_tls(idx);
            }
            OP_DROP => {
                c.dropping = false;
                match usize::try_from(cqe.res) {
                    Ok(0) => self.ended(idx, true),
                    Ok(n) => {
                        let stamp = c.drop_hdr.as_ref().and_then(|h| sock::stamp_in(&h.control));
                        self.dropped(idx, n as u64, stamp, now, real);
                        self.receive_ended(idx, generation);
                    }
                    Err(_) => self.ended(idx, false),
                }
            }
            OP_CANCEL => {}
            // An earlier step of the chain failed, and says so itself.
            OP_CONNECT if cqe.res == -libc::ECANCELED => {}
            // The request went out, so the connection was made: the connect's completion,
            // which the kernel runs later, may find the server's reset since.
            OP_CONNECT if c.connected => {}
            OP_SOCKET | OP_CONNECT => {
                self.connect_failed(idx, io::Error::from_raw_os_error(-cqe.res))
            }
            OP_SEND | OP_TLS_SEND if cqe.res == -libc::ECANCELED => {
                // Its connect failed, and says so itself.
                if let Some(tls) = c.tls.as_mut() {
                    tls.sending = false;
                }
            }
            OP_SEND | OP_TLS_SEND if cqe.res < 0 && !c.connected && !c.slot.req.reused => {
                // A connect that failed shows at the first send.
                self.connect_failed(idx, io::Error::from_raw_os_error(-cqe.res));
            }
            OP_SEND | OP_TLS_SEND => {
                if let Some(tls) = self.conns[idx].tls.as_mut() {
                    tls.sending = false;
                }
                if self.conns[idx].slot.stale() {
                    self.stale(idx)
                } else {
                    self.fail(idx, FailureKind::Write)
                }
            }
            _ => {}
        }
    }

    /// A completion of the slot's multishot receive on its socket number `generation`.
    fn received(
        &mut self,
        idx: usize,
        generation: u32,
        cqe: Cqe,
        got: Option<ring::Received<'_>>,
        now: Instant,
        real: sock::Stamp,
    ) {
        let c = &mut self.conns[idx];
        let last = !cqe.more();
        if last {
            c.armed = false;
        }
        match got {
            Some(r) if !r.payload.is_empty() => {
                let stamp = sock::stamp_in(r.control);
                if c.tls.is_some() {
                    self.tls_data(idx, r.payload, stamp, now, real);
                } else {
                    self.data(idx, r.payload, stamp, now, real);
                }
                if last {
                    self.receive_ended(idx, generation);
                }
            }
            _ if cqe.res == -libc::ECANCELED || cqe.res == -libc::ENOBUFS => {
                self.receive_ended(idx, generation)
            }
            _ if cqe.res < 0 && !c.connected && !c.slot.req.reused => {
                // The socket never connected: its receive reports the connect's error.
                self.connect_failed(idx, io::Error::from_raw_os_error(-cqe.res));
            }
            _ if c.tls.as_ref().is_some_and(|t| t.session.handshaking()) => {
                // The server closed or reset the connection before the handshake's end.
                // (A multishot receive's end of stream fills a buffer with its header alone.)
                let why = match cqe.res {
                    e if e < 0 => io::Error::from_raw_os_error(-e).to_string(),
                    _ => "the server closed the connection".to_string(),
                };
                self.connect_failed(idx, io::Error::other(crate::tls::HandshakeError(why)));
            }
            _ if cqe.res < 0 => self.ended(idx, false),
            _ => self.ended(idx, true),
        }
    }

    /// The slot's connection could not be made (or its handshake failed): `e` says why.
    fn connect_failed(&mut self, idx: usize, e: io::Error) {
        let kind = self.core.sh.note_connect_error(&e);
        self.fail(idx, kind);
    }

    /// The slot's receive on its socket number `generation` is no longer in flight: what comes
    /// next is read by a new multishot receive, or dropped by a `MSG_TRUNC` one while the
    /// body's rest is long enough to be worth it.
    fn receive_ended(&mut self, idx: usize, generation: u32) {
        let c = &mut self.conns[idx];
        c.cancelling = false;
        if c.sock.is_none() || c.generation & 0xff_ffff != generation || c.armed || c.dropping {
            return;
        }
        let skip = match c.slot.parser.skippable() {
            // Over TLS every byte is decrypted: nothing can be dropped in the kernel.
            n if self.discard
                && c.tls.is_none()
                && c.slot.state == State::Reading
                && n >= DROP_FROM =>
            {
                n
            }
            _ => 0,
        };
        if skip == 0 {
            return self.rearm.push(idx);
        }
        let Some(sock) = c.sock.as_ref() else {
            return;
        };
        let len = skip.min(super::worker::TURN_BYTES as u64) as usize;
        let msg = c.drop_hdr.get_or_insert_with(DropHdr::new).prepare(len);
        let drop = on_sock!(sock, |t| opcode::RecvMsg::new(t, msg)
            .flags(libc::MSG_TRUNC as u32)
            .build())
        .user_data(user_data(OP_DROP, idx, c.generation));
        c.dropping = true;
        self.staged.push(drop);
    }

    /// `n` body bytes of the slot's response were dropped in the kernel (the last of them
    /// stamped `stamp`), seen at `now`.
    fn dropped(
        &mut self,
        idx: usize,
        n: u64,
        stamp: Option<sock::Stamp>,
        now: Instant,
        real: sock::Stamp,
    ) {
        let c = &mut self.conns[idx];
        if c.slot.state != State::Reading {
            return;
        }
        let t = match stamp {
            Some(st) => sock::arrival(st, now, real, c.slot.req.start),
            None => now,
        };
        c.slot.req.last_data = t;
        c.slot.req.read_at = now;
        c.slot.req.stamped = stamp.is_some();
        match c.slot.parser.skip(n) {
            Ok(Feed::Done) => self.complete(idx, t, false),
            Ok(Feed::More) => {}
            Err(_) => self.fail(idx, FailureKind::Exception),
        }
    }

    /// Once a response's body has this much left, stops the slot's multishot receive so
    /// that the rest is dropped in the kernel.
    fn maybe_drop_body(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !self.discard
            || c.tls.is_some()
            || !c.armed
            || c.cancelling
            || c.slot.parser.skippable() < DROP_FROM
        {
            return;
        }
        c.cancelling = true;
        let cancel = opcode::AsyncCancel::new(user_data(OP_RECV, idx, c.generation))
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(user_data(OP_CANCEL, idx, c.generation));
        self.staged.push(cancel);
    }

    /// Bytes arrived on the slot's socket (stamped `stamp`) and were seen at `now`.
    fn data(
        &mut self,
        idx: usize,
        bytes: &[u8],
        stamp: Option<sock::Stamp>,
        now: Instant,
        real: sock::Stamp,
    ) {
        let c = &mut self.conns[idx];
        if !c.connected {
            c.connected = true;
            self.core.sh.note_connected();
        }
        match c.slot.state {
            // (io_uring's requests are never left half written.)
            State::Reading | State::Writing => {}
            // What follows the response on a connection the server closes is not read.
            State::Draining | State::Finished => return,
            // A server answering ahead (see below), within reason.
            State::Queued | State::Waiting(_) if self.discard && c.early.len() < EARLY_MAX => {
                return c.early.extend_from_slice(bytes)
            }
            // Bytes nobody asked for: the connection can carry no further request.
            State::Queued | State::Waiting(_) => return self.abandon(idx),
        }
        let t = match stamp {
            Some(st) => sock::arrival(st, now, real, c.slot.req.start),
            None => now,
        };
        let mut from = 0;
        loop {
            let c = &mut self.conns[idx];
            if c.slot.req.first_byte.is_none() {
                c.slot.req.first_byte = Some(t);
                if c.slot.req.written > t {
                    // Read as its submission returned, a new connection's request was written
                    // no later than its answer began.
                    c.wrote(t);
                }
            }
            c.slot.req.last_data = t;
            c.slot.req.read_at = now;
            c.slot.req.stamped = stamp.is_some();
            match c
                .slot
                .parser
                .feed_prefix_with(&bytes[from..], Some(&mut self.core.heads))
            {
                Ok((Feed::Done, used)) if c.slot.answered + 1 < c.slot.batch => {
                    // A pipelined response with more of its batch due.
                    self.complete(idx, t, false);
                    if self.conns[idx].slot.state != State::Reading || from + used == bytes.len() {
                        return;
                    }
                    from += used;
                }
                // Bytes after the last response due: a server answering ahead, where the epoll
                // engine would have left them in the socket (dropping the body's rest to its
                // last byte); not HTTP otherwise.
                Ok((Feed::Done, used)) if from + used < bytes.len() => {
                    if !self.discard {
                        return self.fail(idx, FailureKind::Exception);
                    }
                    let rest = from + used;
                    self.complete(idx, t, false);
                    let c = &mut self.conns[idx];
                    if c.slot.state == State::Queued && c.sock.is_some() {
                        c.early.extend_from_slice(&bytes[rest..]);
                    }
                    return;
                }
                Ok((Feed::Done, _)) => return self.complete(idx, t, false),
                Ok((Feed::More, _)) => return self.maybe_drop_body(idx),
                Err(_) => return self.fail(idx, FailureKind::Exception),
            }
        }
    }

    /// The slot's receive ended: the server closed the connection (`eof`) or it failed.
    fn ended(&mut self, idx: usize, eof: bool) {
        let c = &mut self.conns[idx];
        match c.slot.state {
            State::Reading => {
                if eof && c.slot.parser.eof() == Feed::Done {
                    // A close-delimited body: the FIN carries no stamp.
                    let done = if c.slot.req.stamped {
                        c.slot.req.last_data
                    } else {
                        c.slot.req.read_at = Instant::now();
                        c.slot.req.read_at
                    };
                    self.close_socket(idx);
                    return self.complete(idx, done, true);
                }
                if self.conns[idx].slot.stale() {
                    self.stale(idx)
                } else {
                    self.fail(idx, FailureKind::Receive)
                }
            }
            State::Draining => {
                self.close_socket(idx);
                self.conns[idx].slot.deadline = None;
                self.queue(idx);
            }
            // The server dropped an idle connection: the next request opens another.
            _ => self.close_socket(idx),
        }
    }

    /// Records a complete response and moves the slot on; `server_closed`: the server has
    /// closed its side.
    fn complete(&mut self, idx: usize, done: Instant, server_closed: bool) {
        let c = &mut self.conns[idx];
        c.slot.deadline = None;
        self.core.respond(
            &c.slot.req,
            &mut c.slot.parser,
            c.tls.as_ref().map(|t| &t.session),
            done,
        );
        if self.after_response(idx, done, server_closed) {
            return;
        }
        let c = &mut self.conns[idx];
        if c.sock.is_some() && !server_closed {
            // The server's FIN comes to the armed receive.
            c.slot.state = State::Draining;
            c.slot.deadline = Some(done + DRAIN_LIMIT.min(self.core.timeout));
            return;
        }
        self.abandon(idx);
        self.queue(idx);
    }
}

impl H1Slots for Slots {
    fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }

    fn slot(&mut self, idx: usize) -> &mut Slot {
        &mut self.conns[idx].slot
    }

    fn slot_count(&self) -> usize {
        self.conns.len()
    }

    fn schedule(&mut self) -> &mut Schedule {
        &mut self.schedule
    }

    fn queued(&mut self) -> &mut Vec<usize> {
        &mut self.queued
    }

    fn send(&mut self, idx: usize, now: Instant) {
        Slots::send(self, idx, now)
    }

    fn drop_socket(&mut self, idx: usize) {
        self.abandon(idx)
    }

    /// Its socket, if kept alive, stays open until the worker ends (what still arrives on it
    /// is ignored): closing 10,000 of them one by one would be the generator's own work
    /// inside the measured time.
    fn retire(&mut self, _idx: usize) {}
}
