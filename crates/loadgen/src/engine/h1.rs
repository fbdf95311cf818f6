//! HTTP/1 connections in a worker's loop ([`super::worker`]): one request (or one pipelined
//! batch, [`crate::pipeline`]) at a time per connection slot, each slot a small state machine
//! driven by its socket's readiness events and its timers.

use super::slot::{H1Slots, Slot, State};
use super::worker::{self, token, Core, Placement, Protocol, Schedule, TURN_BYTES};
use crate::http::Feed;
use crate::sock::{self, Recv};
use crate::stats::{FailureKind, Recorder};
use mio::event::Event;
use mio::net::TcpStream;
use mio::Interest;
use std::io::{self, Write as _};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// How long a closed-mode connection waits for the server's FIN after a complete response.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// One connection slot: at most one socket at a time, issuing requests one after another.
struct Conn {
    stream: Option<TcpStream>,
    /// The stream's TLS state (`https://` only): what is written and read goes through it.
    tls: Option<Box<crate::tls::TlsConn>>,
    /// Bumped with every new socket; part of the token, so an event for an earlier socket is
    /// never taken for one of the current one.
    generation: u32,
    /// The socket is registered with the poller (and whether for writability too).
    registered: Option<Interest>,
    /// The socket's first write went through: the connection is established.
    connected: bool,
    /// The kernel stamps what arrives on the socket.
    stamped: bool,
    /// Bytes of the request written so far.
    sent: usize,
    /// This request's write had to wait for writability (events for readability may have
    /// come and gone meanwhile).
    blocked: bool,
    /// The last response ended where a read ended without the socket being seen empty: bytes
    /// after it may already be waiting, and their readiness event is spent.
    unread: bool,
    slot: Slot,
}

/// An HTTP/1 worker: its slots, and the requests they wait to send.
struct H1 {
    core: Core,
    conns: Vec<Conn>,
    /// Body bytes nobody looks at are dropped in the kernel (see [`super::shared::Shared`]'s
    /// `discard`).
    discard: bool,
    schedule: Schedule,
    /// Slots in `Queued`, in the order their requests completed.
    queued: Vec<usize>,
}

/// Runs a worker's share of the connections over HTTP/1.x.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    let cfg = &core.sh.cfg;
    let head_only = cfg.load.method.head_only();
    let start = core.start;
    let w = H1 {
        conns: (0..at.conns)
            .map(|_| Conn {
                stream: None,
                tls: None,
                generation: 0,
                registered: None,
                connected: false,
                stamped: false,
                sent: 0,
                blocked: false,
                unread: false,
                slot: Slot::new(head_only, start),
            })
            .collect(),
        discard: core.sh.discard,
        schedule: Schedule::new(cfg.load.rate, at.threads),
        queued: Vec::new(),
        core,
    };
    worker::drive(w)
}

impl Protocol for H1 {
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
        for i in 0..self.conns.len() {
            self.next_request(i, Instant::now());
        }
    }

    fn ready(&mut self, idx: usize, ev: &Event) {
        let c = &self.conns[idx];
        let closed = ev.is_read_closed() || ev.is_error();
        match c.slot.state {
            // A TLS handshake waits for the server's flights while writing.
            State::Writing
                if ev.is_writable() || closed || (ev.is_readable() && c.tls.is_some()) =>
            {
                self.write(idx)
            }
            State::Reading if ev.is_readable() || closed => self.read(idx, closed),
            State::Draining if ev.is_readable() || closed => self.drain(idx),
            _ => {}
        }
    }

    fn resume(&mut self, idx: usize, closed: bool) {
        match self.conns[idx].slot.state {
            State::Reading => self.read(idx, closed),
            State::Draining => self.drain(idx),
            _ => {}
        }
    }

    fn pending(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Requests go out after every response of the batch has been read, as a burst (as wrk's
    /// loop also does): the server then finds them together in one wake-up instead of being
    /// woken for each. Each takes its own start time: the connects and writes before it are
    /// not its latency. The clock read as one request's write ended is the next one's start,
    /// so a burst reads the clock once a request.
    fn after_reads(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let mut now = Instant::now();
        for idx in std::mem::take(&mut self.queued) {
            if self.conns[idx].slot.state == State::Queued {
                self.core.wrote_at = None;
                self.next_request(idx, now);
                now = self.core.wrote_at.take().unwrap_or_else(Instant::now);
            }
        }
    }

    fn timer(&mut self, idx: usize, now: Instant) -> bool {
        H1Slots::timer(self, idx, now)
    }

    fn expire(&mut self, now: Instant) {
        H1Slots::expire(self, now)
    }

    fn ended(&mut self) {
        self.count_unfinished();
    }
}

impl H1Slots for H1 {
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
        H1::send(self, idx, now)
    }

    fn drop_socket(&mut self, idx: usize) {
        self.conns[idx].stream = None;
    }

    fn retire(&mut self, idx: usize) {
        self.conns[idx].stream = None;
    }
}

impl H1 {
    /// Sends the slot's current request, connecting first when it has no open connection.
    fn send(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.slot.req.start = now;
        c.slot.req.reused = c.stream.is_some();
        c.slot.deadline = Some(now + self.core.timeout);
        c.sent = 0;
        c.blocked = false;
        c.slot.parser.reset(c.slot.req.want_server);
        c.slot.state = State::Writing;
        if c.stream.is_none() {
            // Connect without TCP_NODELAY: each request leaves in one write, and everything
            // sent before it was acknowledged by the response it got, so Nagle never holds a
            // request back, and the setsockopt would be one more system call per connection.
            match crate::connect::connect(self.core.sh.addr, &self.core.sh.cfg.socket) {
                Ok(s) => {
                    c.tls = match self.core.sh.tls.as_ref().map(|t| t.connect()).transpose() {
                        Ok(t) => t,
                        Err(e) => {
                            let kind = self.core.sh.note_connect_error(&e);
                            return self.fail(idx, kind);
                        }
                    };
                    c.stamped =
                        self.core.sh.stamps.is_some() && sock::enable_rx_stamps(s.as_fd()).is_ok();
                    c.stream = Some(s);
                    c.unread = false;
                    c.generation = c.generation.wrapping_add(1);
                    c.registered = None;
                    c.connected = false;
                }
                Err(e) => {
                    let kind = self.core.sh.note_connect_error(&e);
                    return self.fail(idx, kind);
                }
            }
        }
        self.write(idx);
    }

    /// Writes what is left of the request; a new connection's first successful write is what
    /// shows it established.
    fn write(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let request = self.core.sh.request_bytes(c.slot.batch);
        let Some(s) = c.stream.as_mut() else {
            return;
        };
        let mut at = if c.connected {
            c.slot.req.written
        } else {
            Instant::now()
        };
        let mut wrote = false;
        // Over TLS, the records of what was taken may still be waiting for the socket.
        while c.sent < request.len() || c.tls.as_ref().is_some_and(|t| t.wants_write()) {
            let written = match c.tls.as_mut() {
                Some(t) => t.send(s.as_fd(), &request[c.sent..]),
                None => s.write(&request[c.sent..]),
            };
            match written {
                Ok(0) if c.sent < request.len() => return self.fail(idx, FailureKind::Write),
                Ok(n) => {
                    if !c.connected {
                        c.connected = true;
                        c.slot.req.connect = at.saturating_duration_since(c.slot.req.start);
                        self.core.sh.note_connected();
                    }
                    c.sent += n;
                    wrote = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.blocked = true;
                    let want = Interest::READABLE | Interest::WRITABLE;
                    if c.registered != Some(want) {
                        let tok = token(idx, c.generation);
                        let r = match c.registered {
                            None => self.core.poll.registry().register(s, tok, want),
                            Some(_) => self.core.poll.registry().reregister(s, tok, want),
                        };
                        if r.is_err() {
                            return self.fail(idx, FailureKind::Exception);
                        }
                        c.registered = Some(want);
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if !c.connected {
                        // The connect failed (refused, unreachable...): the socket reports it
                        // at the first write.
                        let kind = self.core.sh.note_connect_error(&e);
                        return self.fail(idx, kind);
                    }
                    if c.slot.req.reused && c.sent == 0 {
                        return self.stale(idx);
                    }
                    return self.fail(idx, FailureKind::Write);
                }
            }
            at = Instant::now();
        }
        c.slot.req.written = at;
        c.slot.state = State::Reading;
        // The clock read as the write ended is still now, unless a system call follows.
        self.core.wrote_at = wrote.then_some(at);
        if c.registered.is_none() {
            self.core.wrote_at = None;
            let r =
                self.core
                    .poll
                    .registry()
                    .register(s, token(idx, c.generation), Interest::READABLE);
            if r.is_err() {
                return self.fail(idx, FailureKind::Exception);
            }
            c.registered = Some(Interest::READABLE);
        }
        if c.blocked || c.unread {
            // The response may have started while the request was still being written, or
            // (from a server that answers before it is asked) before, and its readiness event
            // was then spent.
            c.unread = false;
            self.read(idx, false);
        }
    }

    /// Reads until the response is complete, the connection ends, or the socket has nothing
    /// more for now. `closed` is the poller's word that the server has shut its side.
    ///
    /// Body bytes nobody looks at (see [`ResponseParser::skippable`]) are dropped in the
    /// kernel ([`sock::discard`]), never more than the response has left, so they cost neither
    /// a copy nor room in the buffer: each call takes whatever has arrived, up to
    /// [`TURN_BYTES`]. They are counted and stamped as read bytes are.
    fn read(&mut self, idx: usize, closed: bool) {
        self.core.wrote_at = None;
        let mut budget = TURN_BYTES;
        loop {
            let c = &mut self.conns[idx];
            let Some(s) = c.stream.as_mut() else {
                return;
            };
            // Over TLS every byte is decrypted: nothing can be dropped in the kernel.
            let skip = if self.discard && c.tls.is_none() {
                c.slot.parser.skippable().min(budget as u64) as usize
            } else {
                0
            };
            let (got, asked) = if skip > 0 {
                (sock::discard(s.as_fd(), skip, c.stamped), skip)
            } else {
                let got = match c.tls.as_mut() {
                    Some(t) => t.recv(s.as_fd(), &mut self.core.buf, c.stamped),
                    None => sock::recv(s.as_fd(), &mut self.core.buf, c.stamped),
                };
                (got, self.core.buf.len())
            };
            match got {
                Recv::Eof => {
                    return match c.slot.parser.eof() {
                        Feed::Done => {
                            // A close-delimited body: the server has closed already. The FIN
                            // carries no stamp; a stamped body ended when its last byte came.
                            c.stream = None;
                            let req = &mut c.slot.req;
                            if !req.stamped {
                                let now = Instant::now();
                                (req.last_data, req.read_at) = (now, now);
                            }
                            let done = req.last_data;
                            self.complete(idx, done, true)
                        }
                        Feed::More => self.closed(idx),
                    };
                }
                Recv::Data { len: n, stamp } => {
                    let now = Instant::now();
                    let t = self.core.arrival(stamp, now, c.slot.req.start);
                    // A short read took everything there was: the socket is empty.
                    let emptied = n < asked;
                    // Over TLS, the end of the stream may have come with the data: its
                    // readiness event was spent on them, so it is acted on now.
                    let eof_after = c.tls.as_ref().is_some_and(|t| t.eof_pending());
                    // Where this read's bytes start that the current response has not taken
                    // yet: past 0 only after a pipelined response ended inside the read.
                    let mut from = 0;
                    loop {
                        let c = &mut self.conns[idx];
                        if c.slot.req.first_byte.is_none() {
                            c.slot.req.first_byte = Some(t);
                        }
                        c.slot.req.last_data = t;
                        c.slot.req.read_at = now;
                        c.slot.req.stamped = stamp.is_some();
                        let fed = if skip > 0 {
                            c.slot.parser.skip(n as u64).map(|f| (f, n))
                        } else {
                            c.slot
                                .parser
                                .feed_prefix_with(
                                    &self.core.buf[from..n],
                                    Some(&mut self.core.heads),
                                )
                                .map(|(f, used)| (f, from + used))
                        };
                        match fed {
                            // A pipelined response with more of its batch due: the next one
                            // starts where it ended, in this read or a later one.
                            Ok((Feed::Done, end)) if c.slot.answered + 1 < c.slot.batch => {
                                self.complete(idx, t, false);
                                if self.conns[idx].slot.state != State::Reading {
                                    return;
                                }
                                if end < n {
                                    from = end;
                                    continue;
                                }
                                break;
                            }
                            // Bytes after the last response due: not HTTP.
                            Ok((Feed::Done, end)) if end < n => {
                                return self.fail(idx, FailureKind::Exception)
                            }
                            // A FIN the poller reported has nothing after it when the read
                            // emptied the socket, or when it ended exactly where the response
                            // did (what follows a response on a connection the server closed
                            // is not read).
                            Ok((Feed::Done, _)) => {
                                c.unread = !emptied;
                                let server_closed = (closed && (emptied || skip > 0)) || eof_after;
                                return self.complete(idx, t, server_closed);
                            }
                            Ok((Feed::More, _)) => break,
                            Err(_) => return self.fail(idx, FailureKind::Exception),
                        }
                    }
                    if emptied && !closed && !eof_after {
                        return;
                    }
                    budget = budget.saturating_sub(n);
                    if budget == 0 {
                        let generation = self.conns[idx].generation;
                        return self.core.resume.push((idx, generation, closed));
                    }
                }
                Recv::Again => return,
                Recv::Failed => return self.closed(idx),
            }
        }
    }

    /// The connection ended (EOF or error) before the response did.
    fn closed(&mut self, idx: usize) {
        if self.conns[idx].slot.stale() {
            self.stale(idx)
        } else {
            self.fail(idx, FailureKind::Receive)
        }
    }

    /// Records a complete response and moves the slot on. `server_closed`: the server has
    /// closed its side and nothing is left to read.
    fn complete(&mut self, idx: usize, done: Instant, server_closed: bool) {
        let c = &mut self.conns[idx];
        c.slot.deadline = None;
        self.core
            .respond(&c.slot.req, &mut c.slot.parser, c.tls.as_deref(), done);
        if self.after_response(idx, done, server_closed) {
            return;
        }
        let c = &mut self.conns[idx];
        if c.slot.parser.head_done()
            && !c.slot.parser.until_close()
            && c.stream.is_some()
            && !server_closed
        {
            // Wait for the server's FIN, unless the poller reported it with the response
            // (nginx's usual answer: data and FIN in one wake-up), which saves the read of
            // the end of the stream.
            c.slot.state = State::Draining;
            c.slot.deadline = Some(done + DRAIN_LIMIT.min(self.core.timeout));
            return;
        }
        c.stream = None;
        self.queue(idx);
    }

    /// Reads (and discards) until the server's FIN, then closes and moves on.
    fn drain(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(s) = c.stream.as_mut() else {
            return;
        };
        let mut budget = TURN_BYTES;
        loop {
            let got = match c.tls.as_mut() {
                // Read through the session: its close_notify ends the stream as a FIN does
                // (some servers, lighttpd, send it and then wait for the client to close).
                Some(t) => t.recv(s.as_fd(), &mut self.core.buf, false),
                None if self.discard => sock::discard(s.as_fd(), budget, false),
                None => sock::recv(s.as_fd(), &mut self.core.buf, false),
            };
            match got {
                Recv::Data { len, .. } => {
                    budget = budget.saturating_sub(len);
                    if budget == 0 {
                        return self.core.resume.push((idx, c.generation, false));
                    }
                }
                Recv::Again => return,
                Recv::Eof | Recv::Failed => break,
            }
        }
        c.stream = None;
        c.slot.deadline = None;
        self.queue(idx);
    }
}
