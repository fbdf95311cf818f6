//! HTTP/2 connections in a worker's loop: the same thread, poller, tickets and recorder as
//! HTTP/1, with a connection carrying up to `streams` requests at once (h2load's `-m`).
//!
//! A request is a stream and a sample, timed as an HTTP/1 keep-alive request is: `start`
//! when its stream is opened (before connecting, on a new connection), Connect from then to
//! the connection's establishment (TLS handshake included) for the first stream of a
//! connection, which leaves with the client's preface, 0 for the rest, which are opened once
//! the server's SETTINGS have said how many it takes; `written` when the output holding its HEADERS (and body) has been written
//! to the socket; `first byte` when its response's first frame arrived and `done` when the
//! frame that ended its stream arrived, by the kernel's receive stamps as for HTTP/1.
//!
//! Streams are opened in bursts: after each round of readiness events every connection opens
//! streams for the ones that ended, and all the frames it has to send leave in one write.
//!
//! Waiting for the server: as an HTTP/1 worker does, a worker that has caught up naps
//! ([`crate::coalesce`]) rather than block in the poller, so that the server's writes do
//! not have to wake it one by one. Against nginx over TLS on one core, blocking made nginx
//! spend a fifth more CPU per request than with h2load (which is rarely idle long enough to
//! block), and got that much fewer requests/s out of it.
//!
//! Flow control: the client gives every stream and the connection a 1 GiB window and
//! returns what was consumed once half of it is, so no body waits for the client; request
//! bodies (`-p`/`-u`) are sent as the server's windows allow.
//!
//! What ends a stream other than its response: RST_STREAM from the server (a `reset`
//! failure), a GOAWAY whose last stream id is below it (a `goaway` failure: the server never
//! processed it), the connection ending (`receive`), or the per-request timeout (`timeout`:
//! the client resets the stream; when nothing at all arrived on the connection since the
//! stream started, the connection is closed with every stream on it). After a GOAWAY the
//! connection takes no new streams; once its last one ends it is closed and a new one opened,
//! so the load carries on.
//!
//! Whatever a server sends, what a connection holds stays bounded: a frame is at most
//! [`h2::MAX_FRAME_RECV`], a header block at most [`h2::MAX_HEADER_BLOCK`] in at most
//! [`h2::MAX_CONTINUATIONS`] CONTINUATION frames, decoding to at most [`h2::MAX_HEADER_LIST`];
//! at most [`h2::MAX_QUEUED_REPLIES`] answers to its PINGs and SETTINGS wait unwritten; and no
//! stream is opened nor request body queued while [`OUT_CAP`] bytes wait to be written. A server
//! beyond these limits has the connection ended with a GOAWAY saying why (ENHANCE_YOUR_CALM for
//! the floods), its open streams counted as exceptions, and the run notes the reason.

use super::worker::{Core, Placement, Request, Response, Schedule, CONNECT_RETRY_PAUSE};
use crate::h2::{self, ConnError, Event, Head};
use crate::sock::Stamp;
use crate::stats::{FailureKind, Recorder};
use conn::{Conn, Stream, MAX_ID, OUT_CAP};
use frames::Data;
use std::cmp::Reverse;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

mod conn;
mod epoll;
mod frames;
mod uring;

/// The Last-Stream-ID of the client's GOAWAY: the highest stream the server opened that the
/// client acted on (RFC 9113, 6.8). Servers open none here (push is off), so 0.
const LAST_PEER_STREAM: u32 = 0;

/// A handshake the server ended for want of a protocol in common says so in HTTP/2's terms.
pub(super) fn alpn_refused(e: io::Error) -> io::Error {
    match crate::tls::handshake_error(&e) {
        Some(h) if h.0.contains("NoApplicationProtocol") => {
            io::Error::other(h2::NotHttp2(format!(
                "the server refused HTTP/2 (ALPN \"h2\") in the TLS handshake ({}); it may serve HTTP/1.1 only over TLS (leave out --h2)",
                h.0
            )))
        }
        _ => e,
    }
}

/// What carries a worker's connections: the epoll engine's sockets ([`epoll`]) or io_uring's.
/// The protocol (streams, frames, flow control, timings) is the worker's, the same on both.
pub(super) trait Wire: Sized {
    /// A connection's socket as the engine holds it.
    type Sock;
    /// Opens slot `idx`'s connection at `now`, handing its socket (and TLS session) to
    /// [`Conn::connected_to`], which queues the client's preface.
    fn connect(w: &mut H2Worker<Self>, idx: usize, now: Instant) -> Result<(), FailureKind>;
    /// Writes what the connection has queued, as far as the socket takes it, and establishes
    /// the connection with its first write ([`Conn::wrote`] marks the streams written).
    fn flush(w: &mut H2Worker<Self>, idx: usize);
    /// Lets go of the connection's socket ([`Conn::drop_socket`]).
    fn drop_socket(w: &mut H2Worker<Self>, idx: usize);
}

/// An HTTP/2 worker: its connections, and those with work to do after this round.
pub(super) struct H2Worker<W: Wire> {
    core: Core,
    conns: Vec<Conn<W::Sock>>,
    /// A control frame's payload, copied out of the read buffer while it is acted on.
    scratch: Vec<u8>,
    /// Streams per connection (`--streams`).
    streams: u32,
    /// `--rate`: the send times of this worker's share of the requests.
    schedule: Schedule,
    /// Connections that may open streams or have output to write, once this round is done.
    dirty: Vec<usize>,
    /// What the engine keeps besides the connections' sockets.
    wire: W,
}

/// Runs a worker's share of the connections over HTTP/2, on its engine.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    if at.uring {
        uring::run(core, at)
    } else {
        epoll::run(core, at)
    }
}

impl<W: Wire> H2Worker<W> {
    fn new(core: Core, at: &Placement, wire: W) -> H2Worker<W> {
        let streams = core.sh.cfg.load.streams.max(1);
        H2Worker {
            conns: (0..at.conns)
                .map(|_| Conn::new(streams, core.start))
                .collect(),
            scratch: Vec::new(),
            streams,
            schedule: Schedule::new(core.sh.cfg.load.rate, at.threads),
            dirty: Vec::new(),
            core,
            wire,
        }
    }

    /// Gives every connection its first streams.
    pub(super) fn pump_all(&mut self) {
        for i in 0..self.conns.len() {
            self.pump(i, Instant::now());
        }
    }

    /// Slot `idx`'s timer is due: a connect that failed may be tried again; a request due at
    /// a constant rate may go.
    pub(super) fn on_timer(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        if c.retry_at.is_some_and(|t| t <= now) {
            c.retry_at = None;
        }
        self.mark(idx);
    }

    /// Every connection with something to do opens its streams and writes, after the round's
    /// reads and timers: the frames of a burst leave together.
    pub(super) fn pump_dirty(&mut self) {
        for idx in std::mem::take(&mut self.dirty) {
            self.pump(idx, Instant::now());
        }
    }

    /// At a constant rate, the requests still waiting for their responses are counted with
    /// how long they had waited.
    pub(super) fn count_unfinished(&mut self) {
        if self.schedule.paced() {
            let waiting = self.conns.iter().flat_map(|c| c.slots.iter());
            self.core
                .count_unfinished(waiting.filter(|s| s.id != 0).map(|s| &s.req));
        }
    }

    /// Ends the streams whose deadline has passed.
    pub(super) fn expire_streams(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if c.stream.is_none() || c.open == 0 {
                continue;
            }
            let late: Vec<usize> = (0..c.slots.len())
                .filter(|&k| c.slots[k].id != 0 && c.slots[k].deadline <= now)
                .collect();
            if late.is_empty() {
                continue;
            }
            // Nothing arrived since the earliest late stream began: the connection itself
            // is stuck (or never came up), and every stream on it goes with it.
            let silent = !c.connected || late.iter().any(|&k| c.heard_at <= c.slots[k].req.start);
            if silent {
                self.conn_failed(idx, FailureKind::Timeout);
                continue;
            }
            for k in late {
                let c = &mut self.conns[idx];
                h2::rst_stream(&mut c.out, c.slots[k].id, h2::CANCEL);
                self.fail_stream(idx, k, FailureKind::Timeout, now);
            }
        }
    }

    pub(super) fn mark(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.dirty && !c.finished {
            c.dirty = true;
            self.dirty.push(idx);
        }
    }

    /// Streams a connection may have open at once now.
    fn limit(&self, c: &Conn<W::Sock>) -> u32 {
        self.streams.min(c.peer_max)
    }

    /// Opens the streams a connection has room for (connecting first when it has no socket),
    /// then writes what it has to send.
    pub(super) fn pump(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.dirty = false;
        if c.finished || c.retry_at.is_some() {
            return;
        }
        if c.stream.is_some() && (c.goaway || c.next_id > MAX_ID) && c.open == 0 {
            // The server is done with it (or its stream ids are): a new one takes over.
            W::drop_socket(self, idx);
        }
        let stopping = self.core.sh.stop.load(Relaxed);
        if !stopping && !self.open_streams(idx, now) {
            return;
        }
        let c = &self.conns[idx];
        if c.open == 0 && (stopping || c.done) {
            return self.finish(idx);
        }
        loop {
            let stalled = match self.core.sh.cfg.body.as_deref() {
                Some(body) => self.conns[idx].queue_bodies(body),
                None => false,
            };
            W::flush(self, idx);
            let c = &self.conns[idx];
            // Bodies stopped at the cap and all went out: more follow now, as no event will
            // come for a socket that took everything.
            if !stalled || c.stream.is_none() || c.out_pos < c.out.len() {
                break;
            }
        }
    }

    /// Opens streams while the connection and the server's limits have room and tickets are
    /// left, connecting first when there is no socket; false when a connect failed (the slot
    /// then waits to try again).
    fn open_streams(&mut self, idx: usize, now: Instant) -> bool {
        while !self.conns[idx].done {
            let c = &self.conns[idx];
            if c.stream.is_some() && (c.goaway || c.next_id > MAX_ID || c.open >= self.limit(c)) {
                break;
            }
            if !self.room(idx) {
                // The server is not reading: the stream waits for the socket to take more.
                break;
            }
            let c = &mut self.conns[idx];
            let intended = match self.schedule.next_for(&mut c.due, self.core.start, now) {
                Ok(intended) => intended,
                Err(wake) => {
                    // Its request's constant-rate send time is still to come.
                    if let Some(t) = wake {
                        self.core.timers.push(Reverse((t, idx)));
                    }
                    break;
                }
            };
            let measured = now >= self.core.measure_start;
            if measured && (self.core.end.is_some_and(|e| now >= e) || !self.core.sh.take_ticket())
            {
                self.conns[idx].done = true;
                break;
            }
            if self.conns[idx].stream.is_none() {
                if let Err(kind) = W::connect(self, idx, now) {
                    if measured {
                        self.core.rec.started += 1;
                    }
                    self.core.count_failure(measured, kind, now);
                    let t = now + CONNECT_RETRY_PAUSE;
                    self.conns[idx].retry_at = Some(t);
                    self.core.timers.push(Reverse((t, idx)));
                    return false;
                }
            }
            if let Some(t) = intended {
                // How late the worker got to it is the generator's own lateness.
                self.core.note_send_lag(measured, t, now);
            }
            self.open_stream(idx, now, measured, intended);
        }
        true
    }

    /// The connection may queue more output of its own (a stream, a request body): less than
    /// [`OUT_CAP`] waits unwritten, once what the socket takes has been written.
    fn room(&mut self, idx: usize) -> bool {
        if self.conns[idx].unwritten() < OUT_CAP {
            return true;
        }
        W::flush(self, idx);
        let c = &self.conns[idx];
        c.stream.is_some() && c.unwritten() < OUT_CAP
    }

    /// Room for one more answer to the server's control frames: fewer than
    /// [`h2::MAX_QUEUED_REPLIES`] wait unwritten, once what the socket takes has been written;
    /// else the server is flooding the client. `Ok(false)`: the connection failed meanwhile.
    fn reply_room(&mut self, idx: usize) -> Result<bool, ConnError> {
        if self.conns[idx].unwritten_replies() < h2::MAX_QUEUED_REPLIES {
            return Ok(true);
        }
        W::flush(self, idx);
        if self.conns[idx].stream.is_none() {
            return Ok(false);
        }
        if self.conns[idx].unwritten_replies() < h2::MAX_QUEUED_REPLIES {
            Ok(true)
        } else {
            Err(ConnError::Flood)
        }
    }

    /// Queues an answer to a control frame, written by `answer`, when there is room for it
    /// ([`Self::reply_room`]).
    fn reply(&mut self, idx: usize, answer: impl FnOnce(&mut Vec<u8>)) -> Result<bool, ConnError> {
        if !self.reply_room(idx)? {
            return Ok(false);
        }
        let c = &mut self.conns[idx];
        answer(&mut c.out);
        c.replies.push_back(c.out_base + c.out.len() as u64);
        Ok(true)
    }

    fn open_stream(&mut self, idx: usize, now: Instant, measured: bool, intended: Option<Instant>) {
        let sh = &*self.core.sh;
        let blocks = sh
            .h2
            .as_ref()
            .expect("HTTP/2 runs encode their header blocks");
        let req = Request::new(now, intended, measured, sh.server.get().is_none());
        let deadline = now + self.core.timeout;
        let opened = self.conns[idx].open_stream(blocks, sh.cfg.body.is_some(), req, deadline);
        if opened && measured {
            self.core.rec.started += 1;
        }
    }

    /// Bytes that came on the connection, seen at `now` (`arrival`: their receive stamp, on
    /// both clocks): its frames are handled. False when the connection ended meanwhile.
    pub(super) fn received(
        &mut self,
        idx: usize,
        data: &[u8],
        now: Instant,
        arrival: Option<(Stamp, Stamp)>,
    ) -> bool {
        let c = &mut self.conns[idx];
        c.heard_at = now;
        if !c.settings_seen && c.reader.idle() && data.starts_with(b"HTTP/1.") {
            let e = io::Error::other(h2::NotHttp2(
                "the server answered HTTP/2's preface in HTTP/1.x: it does not speak HTTP/2 by prior knowledge (h2c) on this port; leave out --h2, or use its https:// address"
                    .into(),
            ));
            let kind = self.core.sh.note_connect_error(&e);
            self.conn_failed(idx, kind);
            return false;
        }
        if let Err(e) = self.frames(idx, data, now, arrival) {
            let c = &mut self.conns[idx];
            h2::goaway(&mut c.out, LAST_PEER_STREAM, e.code());
            W::flush(self, idx);
            self.core.sh.note_h2_error(e);
            self.conn_failed(idx, FailureKind::Exception);
            return false;
        }
        self.conns[idx].stream.is_some()
    }

    /// Handles the frames in one read's bytes.
    fn frames(
        &mut self,
        idx: usize,
        data: &[u8],
        now: Instant,
        arrival: Option<(Stamp, Stamp)>,
    ) -> Result<(), ConnError> {
        let mut pos = 0;
        loop {
            let c = &mut self.conns[idx];
            let head = match c.reader.next(data, &mut pos)? {
                None => return Ok(()),
                Some(Event::Data {
                    stream,
                    flow,
                    body,
                    end,
                    head,
                }) => {
                    let d = Data {
                        stream,
                        flow,
                        body,
                        end,
                        head,
                    };
                    if let Some(k) = frames::on_data(c, &d, now, arrival)? {
                        self.complete(idx, k);
                    }
                    continue;
                }
                Some(Event::Frame { head, payload }) => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(payload);
                    head
                }
            };
            let payload = std::mem::take(&mut self.scratch);
            let went_on = self.frame(idx, &head, &payload, now, arrival);
            self.scratch = payload;
            if !went_on? {
                return Ok(());
            }
        }
    }

    /// Handles one frame other than DATA; `Ok(false)`: the connection failed meanwhile.
    fn frame(
        &mut self,
        idx: usize,
        head: &Head,
        payload: &[u8],
        now: Instant,
        arrival: Option<(Stamp, Stamp)>,
    ) -> Result<bool, ConnError> {
        let c = &mut self.conns[idx];
        if c.cont.is_some() && head.kind != h2::CONTINUATION {
            return Err(ConnError::Protocol);
        }
        let block = match head.kind {
            h2::HEADERS => frames::on_headers(c, head, payload)?,
            h2::CONTINUATION => frames::on_continuation(c, head, payload)?,
            h2::SETTINGS if head.flags & h2::ACK == 0 => {
                if frames::on_settings(c, head, payload)? {
                    // The server speaks HTTP/2: a connection was made.
                    self.core.sh.note_connected();
                }
                return self.reply(idx, h2::settings_ack);
            }
            h2::PING if head.flags & h2::ACK == 0 => {
                if payload.len() != 8 {
                    return Err(ConnError::Protocol);
                }
                return self.reply(idx, |out| h2::ping_ack(out, payload));
            }
            h2::GOAWAY => {
                let last = frames::on_goaway(c, payload)?;
                for k in 0..c.slots.len() {
                    let id = self.conns[idx].slots[k].id;
                    if id != 0 && id > last {
                        self.fail_stream(idx, k, FailureKind::GoAway, now);
                    }
                }
                None
            }
            h2::RST_STREAM => {
                if let Some(k) = frames::on_rst_stream(c, head, payload)? {
                    self.fail_stream(idx, k, FailureKind::Reset, now);
                }
                None
            }
            h2::WINDOW_UPDATE => {
                frames::on_window_update(c, head, payload)?;
                None
            }
            // Server push was turned off in the client's SETTINGS.
            h2::PUSH_PROMISE => return Err(ConnError::Protocol),
            _ => None,
        };
        if let Some(block) = block {
            if let Some(k) = frames::on_block(&mut self.conns[idx], block, now, arrival)? {
                self.complete(idx, k);
            }
        }
        Ok(true)
    }

    /// Records a stream whose response is complete, and frees its slot.
    fn complete(&mut self, idx: usize, k: usize) {
        self.mark(idx);
        let c = &mut self.conns[idx];
        let s = std::mem::replace(&mut c.slots[k], Stream::free(self.core.start));
        c.open -= 1;
        let req = s.req;
        let done = req.last_data;
        self.core
            .napper
            .observe(done.saturating_duration_since(req.start), req.read_at);
        let Some(head) = s.head else {
            // DATA ended a stream that never had a head: not HTTP.
            c.slots[k] = s;
            c.open += 1;
            return self.fail_stream(idx, k, FailureKind::Exception, done);
        };
        let sh = &*self.core.sh;
        if req.want_server {
            let _ = sh.server.set(head.server.unwrap_or_default());
            sh.note_tls(c.tls.as_deref());
        }
        let body = s.body_len;
        let head_only = sh.cfg.load.method.head_only();
        if !head_only && head.content_length.is_some_and(|n| n != body) {
            return self
                .core
                .count_failure(req.measured, FailureKind::Exception, done);
        }
        let r = Response {
            ok: (200..300).contains(&head.status),
            wire_len: s.wire_len,
            body_len: body,
            dropped: 0,
            sent_len: s.sent_len,
            keep_alive: true,
            written: if s.written { req.written } else { req.start },
        };
        self.core.complete(&req, done, &r);
    }

    /// A stream ended without its response: counted by kind, its slot freed.
    fn fail_stream(&mut self, idx: usize, k: usize, kind: FailureKind, now: Instant) {
        let c = &mut self.conns[idx];
        let s = std::mem::replace(&mut c.slots[k], Stream::free(self.core.start));
        c.open -= 1;
        self.mark(idx);
        self.core.count_failure(s.req.measured, kind, now);
    }

    /// The connection is over (closed by the server, failed, or given up on): every stream
    /// still open on it fails with `kind`, and the slot connects again when it next can.
    pub(super) fn conn_failed(&mut self, idx: usize, kind: FailureKind) {
        let now = Instant::now();
        for k in 0..self.conns[idx].slots.len() {
            if self.conns[idx].slots[k].id != 0 {
                self.fail_stream(idx, k, kind, now);
            }
        }
        W::drop_socket(self, idx);
        if matches!(kind, FailureKind::Connect | FailureKind::Generator) {
            // A target that refuses connections must not turn the slot into a spin.
            let t = now + CONNECT_RETRY_PAUSE;
            self.conns[idx].retry_at = Some(t);
            self.core.timers.push(Reverse((t, idx)));
        }
        self.mark(idx);
    }

    fn finish(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.finished {
            c.finished = true;
            if c.connected {
                // Says goodbye as a client does; nothing waits for it.
                c.out.clear();
                c.out_pos = 0;
                h2::goaway(&mut c.out, LAST_PEER_STREAM, h2::NO_ERROR);
                W::flush(self, idx);
            }
            W::drop_socket(self, idx);
            self.core.active -= 1;
        }
    }
}
