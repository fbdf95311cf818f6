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

use super::{
    note_connect_error, tighten_timer_slack, token, untoken, Request, Shared, Tally,
    CONNECT_RETRY_PAUSE, EVENTS, READ_BUF, STOP_CHECK, TURN_BYTES, UNKNOWN,
};
use crate::coalesce::Napper;
use crate::h2::{self, ConnError, Event, FrameReader, ResponseHead};
use crate::sock::{self, Recv, Stamp};
use crate::stats::{FailureKind, Recorder, Sample};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write as _};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Last-Stream-ID of the client's GOAWAY: the highest stream the server opened that the
/// client acted on (RFC 9113, 6.8). Servers open none here (push is off), so 0.
const LAST_PEER_STREAM: u32 = 0;

/// Streams a new connection opens before the server's SETTINGS say how many it takes: the
/// first request leaves with the preface, the others once the server's limit is known, so
/// that none is refused for opening beyond it.
const BEFORE_SETTINGS: u32 = 1;
/// The largest stream id; a connection that reaches it is closed and replaced.
const MAX_ID: u32 = 0x7fff_ffff;
/// Output waiting unwritten on a connection beyond which it opens no stream and queues no
/// request body until some has gone out: 64 KiB, a read's worth ([`READ_BUF`]). The kernel's
/// send buffer behind it keeps the socket busy; more here would only wait, and grow without
/// bound behind a server that does not read.
const OUT_CAP: usize = 64 * 1024;

/// How the connection's header blocks use the server's dynamic table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Default,
    /// The server shrank the table: the next block says so and indexes nothing.
    Shrink,
    Unindexed,
}

/// A header block being gathered: its HEADERS arrived without END_HEADERS.
struct Cont {
    stream: u32,
    /// The HEADERS frame's flags.
    flags: u8,
    block: Vec<u8>,
    /// CONTINUATION frames so far.
    frames: u32,
}

struct Stream {
    /// 0: a free slot.
    id: u32,
    req: Request,
    /// Where this stream's last frame ends in the connection's output, once queued.
    out_end: Option<u64>,
    written: bool,
    deadline: Instant,
    head: Option<ResponseHead>,
    body_len: u64,
    wire_len: u64,
    sent_len: u64,
    body_sent: usize,
    send_window: i64,
    /// Bytes received and not yet given back by a WINDOW_UPDATE.
    unacked: u32,
}

impl Stream {
    fn free(start: Instant) -> Stream {
        Stream {
            id: 0,
            req: Request::new(start, None, false, false),
            out_end: None,
            written: false,
            deadline: start,
            head: None,
            body_len: 0,
            wire_len: 0,
            sent_len: 0,
            body_sent: 0,
            send_window: 0,
            unacked: 0,
        }
    }

    /// Data for this stream arrived (at the stamp's time when there is one).
    fn touch(&mut self, now: Instant, arrival: Option<(Stamp, Stamp)>) {
        let t = match arrival {
            Some((st, real)) => sock::arrival(st, now, real, self.req.start),
            None => now,
        };
        if self.req.first_byte.is_none() {
            self.req.first_byte = Some(t);
        }
        self.req.last_data = t;
        self.req.read_at = now;
        self.req.stamped = arrival.is_some();
    }
}

struct Conn {
    stream: Option<TcpStream>,
    tls: Option<Box<crate::tls::TlsConn>>,
    generation: u32,
    registered: Option<Interest>,
    connected: bool,
    stamped: bool,
    finished: bool,
    /// No ticket is left for it: it ends with its last stream.
    done: bool,
    out: Vec<u8>,
    out_pos: usize,
    /// Bytes of output before `out[0]`, flushed and dropped.
    out_base: u64,
    reader: FrameReader,
    decoder: httlib_hpack::Decoder<'static>,
    first_sent: bool,
    table: Table,
    next_id: u32,
    slots: Vec<Stream>,
    open: u32,
    peer_max: u32,
    /// The server's first SETTINGS arrived.
    settings_seen: bool,
    peer_window: i64,
    conn_window: i64,
    max_frame: usize,
    goaway: bool,
    unacked: u64,
    /// When something last arrived on the connection.
    heard_at: Instant,
    /// A HEADERS frame waiting for its CONTINUATION.
    cont: Option<Cont>,
    /// Where each answer to the server's control frames that may still be unwritten ends in
    /// the output (as `out_end`), oldest first; at most [`h2::MAX_QUEUED_REPLIES`].
    replies: VecDeque<u64>,
    retry_at: Option<Instant>,
    dirty: bool,
}

/// A handshake the server ended for want of a protocol in common says so in HTTP/2's terms.
fn alpn_refused(e: io::Error) -> io::Error {
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

pub(super) struct H2Worker {
    sh: Arc<Shared>,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    buf: Box<[u8]>,
    scratch: Vec<u8>,
    active: usize,
    start: Instant,
    wall_start_us: u64,
    measure_start: Instant,
    end: Option<Instant>,
    timeout: Duration,
    streams: u32,
    tally: Tally,
    resume: Vec<(usize, u32)>,
    dirty: Vec<usize>,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    napper: Napper,
}

/// Runs a worker's share of the connections over HTTP/2; `clock` holds when the load started
/// (monotonic and as wall-clock microseconds) and when its measurement starts.
pub(super) fn run_worker(
    sh: Arc<Shared>,
    conns: usize,
    poll: Poll,
    rec: Recorder,
    napper: Napper,
    clock: (Instant, Instant, u64),
) -> (Recorder, Option<Instant>) {
    let (start, measure_start, wall_start_us) = clock;
    let cfg = &sh.cfg;
    let streams = cfg.load.streams.max(1);
    let mut w = H2Worker {
        poll,
        conns: (0..conns)
            .map(|_| Conn {
                stream: None,
                tls: None,
                generation: 0,
                registered: None,
                connected: false,
                stamped: false,
                finished: false,
                done: false,
                out: Vec::new(),
                out_pos: 0,
                out_base: 0,
                reader: FrameReader::new(),
                decoder: httlib_hpack::Decoder::default(),
                first_sent: false,
                table: Table::Default,
                next_id: 1,
                slots: (0..streams).map(|_| Stream::free(start)).collect(),
                open: 0,
                peer_max: BEFORE_SETTINGS,
                settings_seen: false,
                peer_window: h2::DEFAULT_WINDOW,
                conn_window: h2::DEFAULT_WINDOW,
                max_frame: h2::DEFAULT_MAX_FRAME,
                goaway: false,
                unacked: 0,
                heard_at: start,
                cont: None,
                replies: VecDeque::new(),
                retry_at: None,
                dirty: false,
            })
            .collect(),
        rec,
        buf: vec![0u8; READ_BUF].into_boxed_slice(),
        scratch: Vec::new(),
        active: conns,
        start,
        wall_start_us,
        measure_start,
        end: cfg.load.duration.map(|d| measure_start + d),
        timeout: cfg.load.timeout,
        streams,
        tally: Tally::default(),
        resume: Vec::new(),
        dirty: Vec::new(),
        timers: BinaryHeap::new(),
        napper,
        sh,
    };
    tighten_timer_slack(&w.napper);
    w.run();
    w.tally.publish(&w.sh);
    (w.rec, w.tally.last_done)
}

impl H2Worker {
    fn run(&mut self) {
        for i in 0..self.conns.len() {
            self.pump(i, Instant::now());
        }
        let mut events = Events::with_capacity(EVENTS.min(self.conns.len().max(16)));
        let tick = (self.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_watch = Instant::now() + tick;
        // The last poll found nothing: the worker has caught up with the server.
        let mut caught_up = false;
        while self.active > 0 && !self.sh.stop.load(Relaxed) {
            let now = Instant::now();
            if self.end.is_some_and(|e| now >= e) {
                break;
            }
            let mut wake = (now + STOP_CHECK).min(next_watch);
            if let Some(Reverse((t, _))) = self.timers.peek() {
                wake = wake.min(*t);
            }
            if let Some(e) = self.end {
                wake = wake.min(e);
            }
            if !self.resume.is_empty() || !self.dirty.is_empty() {
                wake = now;
            }
            let mut timeout = wake.saturating_duration_since(now);
            if let Some(napped) = self.napper.before_poll(caught_up, timeout) {
                self.rec.naps += u64::from(napped);
                timeout = Duration::ZERO;
            }
            let polled = self.poll.poll(&mut events, Some(timeout));
            caught_up = events.is_empty();
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let mut first = self
                        .sh
                        .first_connect_error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert_with(|| format!("epoll_wait failed: {e}"));
                    self.sh.trigger_stop();
                    break;
                }
            }
            for ev in events.iter() {
                let (idx, generation) = untoken(ev.token());
                let Some(c) = self.conns.get(idx) else {
                    continue;
                };
                if c.generation != generation || c.stream.is_none() {
                    continue;
                }
                let closed = ev.is_read_closed() || ev.is_error();
                let was_connected = c.connected;
                if !was_connected || ev.is_writable() {
                    // Connecting (a TLS handshake waits for the server's flights while
                    // writing) or output waiting for room.
                    self.flush(idx);
                }
                let c = &self.conns[idx];
                if c.stream.is_some()
                    && c.connected
                    && (!was_connected || ev.is_readable() || closed)
                {
                    self.read(idx, closed);
                }
                self.mark(idx);
            }
            for (idx, generation) in std::mem::take(&mut self.resume) {
                let c = &self.conns[idx];
                if c.generation == generation && c.stream.is_some() {
                    self.read(idx, false);
                    self.mark(idx);
                }
            }
            let now = Instant::now();
            while let Some(&Reverse((t, idx))) = self.timers.peek() {
                if t > now {
                    break;
                }
                self.timers.pop();
                self.conns[idx].retry_at = None;
                self.mark(idx);
            }
            for idx in std::mem::take(&mut self.dirty) {
                self.pump(idx, Instant::now());
            }
            let now = Instant::now();
            if now >= next_watch {
                self.expire(now);
                next_watch = now + tick;
            }
        }
    }

    fn mark(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.dirty && !c.finished {
            c.dirty = true;
            self.dirty.push(idx);
        }
    }

    /// Streams a connection may have open at once now.
    fn limit(&self, c: &Conn) -> u32 {
        self.streams.min(c.peer_max)
    }

    /// Opens the streams a connection has room for (connecting first when it has no socket),
    /// then writes what it has to send.
    fn pump(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.dirty = false;
        if c.finished || c.retry_at.is_some() {
            return;
        }
        if c.stream.is_some() && (c.goaway || c.next_id > MAX_ID) && c.open == 0 {
            // The server is done with it (or its stream ids are): a new one takes over.
            self.drop_socket(idx);
        }
        let stopping = self.sh.stop.load(Relaxed);
        while !stopping && !self.conns[idx].done {
            let c = &self.conns[idx];
            if c.stream.is_some() && (c.goaway || c.next_id > MAX_ID || c.open >= self.limit(c)) {
                break;
            }
            if !self.room(idx) {
                // The server is not reading: the stream waits for the socket to take more.
                break;
            }
            let measured = now >= self.measure_start;
            if measured && (self.end.is_some_and(|e| now >= e) || !self.sh.take_ticket()) {
                self.conns[idx].done = true;
                break;
            }
            if self.conns[idx].stream.is_none() {
                if let Err(kind) = self.connect(idx, now) {
                    if measured {
                        self.rec.started += 1;
                    }
                    self.count_failure(measured, kind, now);
                    let t = now + CONNECT_RETRY_PAUSE;
                    self.conns[idx].retry_at = Some(t);
                    self.timers.push(Reverse((t, idx)));
                    return;
                }
            }
            self.open_stream(idx, now, measured);
        }
        let c = &self.conns[idx];
        if c.open == 0 && (stopping || c.done) {
            return self.finish(idx);
        }
        loop {
            let stalled = self.send_bodies(idx);
            self.flush(idx);
            let c = &self.conns[idx];
            // Bodies stopped at the cap and all went out: more follow now, as no event will
            // come for a socket that took everything.
            if !stalled || c.stream.is_none() || c.out_pos < c.out.len() {
                break;
            }
        }
    }

    /// The connection may queue more output of its own (a stream, a request body): less than
    /// [`OUT_CAP`] waits unwritten, once what the socket takes has been written.
    fn room(&mut self, idx: usize) -> bool {
        let c = &self.conns[idx];
        if c.out.len() - c.out_pos < OUT_CAP {
            return true;
        }
        self.flush(idx);
        let c = &self.conns[idx];
        c.stream.is_some() && c.out.len() - c.out_pos < OUT_CAP
    }

    /// Room for one more answer to the server's control frames: fewer than
    /// [`h2::MAX_QUEUED_REPLIES`] wait unwritten, once what the socket takes has been written;
    /// else the server is flooding the client. `Ok(false)`: the connection failed meanwhile.
    fn reply_room(&mut self, idx: usize) -> Result<bool, ConnError> {
        if self.unwritten_replies(idx) < h2::MAX_QUEUED_REPLIES {
            return Ok(true);
        }
        self.flush(idx);
        if self.conns[idx].stream.is_none() {
            return Ok(false);
        }
        if self.unwritten_replies(idx) < h2::MAX_QUEUED_REPLIES {
            Ok(true)
        } else {
            Err(ConnError::Flood)
        }
    }

    fn unwritten_replies(&mut self, idx: usize) -> usize {
        let c = &mut self.conns[idx];
        let written = c.out_base + c.out_pos as u64;
        while c.replies.front().is_some_and(|&end| end <= written) {
            c.replies.pop_front();
        }
        c.replies.len()
    }

    /// Opens a new connection and queues the client's preface.
    fn connect(&mut self, idx: usize, now: Instant) -> Result<(), FailureKind> {
        let s = crate::connect::connect(self.sh.addr, &self.sh.cfg.socket)
            .map_err(|e| note_connect_error(&self.sh, &e))?;
        let tls = self
            .sh
            .tls
            .as_ref()
            .map(|t| t.connect())
            .transpose()
            .map_err(|e| note_connect_error(&self.sh, &e))?;
        // Frames are written whenever there are some, while earlier ones may be unacknowledged:
        // Nagle must not hold them back (one setsockopt per connection, as h2load does).
        let _ = s.set_nodelay(true);
        let c = &mut self.conns[idx];
        c.stamped = self.sh.stamps.is_some() && sock::enable_rx_stamps(s.as_fd()).is_ok();
        c.stream = Some(s);
        c.tls = tls;
        c.generation = c.generation.wrapping_add(1);
        c.registered = None;
        c.connected = false;
        c.out.clear();
        c.out_pos = 0;
        c.out_base = 0;
        c.reader = FrameReader::new();
        c.decoder = httlib_hpack::Decoder::default();
        c.first_sent = false;
        c.table = Table::Default;
        c.next_id = 1;
        c.peer_max = BEFORE_SETTINGS;
        c.settings_seen = false;
        c.peer_window = h2::DEFAULT_WINDOW;
        c.conn_window = h2::DEFAULT_WINDOW;
        c.max_frame = h2::DEFAULT_MAX_FRAME;
        c.goaway = false;
        c.unacked = 0;
        c.heard_at = now;
        c.cont = None;
        c.replies.clear();
        h2::client_preface(&mut c.out);
        Ok(())
    }

    fn open_stream(&mut self, idx: usize, now: Instant, measured: bool) {
        let sh = &*self.sh;
        let blocks = sh
            .h2
            .as_ref()
            .expect("HTTP/2 runs encode their header blocks");
        let has_body = sh.cfg.body.is_some();
        let c = &mut self.conns[idx];
        let Some(k) = c.slots.iter().position(|s| s.id == 0) else {
            return;
        };
        let id = c.next_id;
        c.next_id += 2;
        let block = match c.table {
            Table::Default if c.first_sent => &blocks.repeat,
            Table::Default => {
                c.first_sent = true;
                &blocks.first
            }
            Table::Shrink => {
                c.table = Table::Unindexed;
                &blocks.shrink
            }
            Table::Unindexed => &blocks.unindexed,
        };
        let before = c.out.len();
        h2::headers(&mut c.out, id, block, !has_body, c.max_frame);
        let mut req = Request::new(now, None, measured, sh.server.get().is_none());
        req.reused = c.connected;
        let s = &mut c.slots[k];
        *s = Stream {
            id,
            req,
            out_end: (!has_body).then_some(c.out_base + c.out.len() as u64),
            written: false,
            deadline: now + self.timeout,
            head: None,
            body_len: 0,
            wire_len: 0,
            sent_len: (c.out.len() - before) as u64,
            body_sent: 0,
            send_window: c.peer_window,
            unacked: 0,
        };
        c.open += 1;
        if measured {
            self.rec.started += 1;
        }
    }

    /// Queues the request bodies of the connection's streams as far as the windows allow;
    /// true when it stopped short of that for the output waiting ([`OUT_CAP`]).
    fn send_bodies(&mut self, idx: usize) -> bool {
        let Some(body) = self.sh.cfg.body.as_deref() else {
            return false;
        };
        let c = &mut self.conns[idx];
        for s in c.slots.iter_mut() {
            if s.id == 0 || s.out_end.is_some() {
                continue;
            }
            loop {
                if c.out.len() - c.out_pos >= OUT_CAP {
                    return true;
                }
                let left = body.len() - s.body_sent;
                let n = (left as i64)
                    .min(c.max_frame as i64)
                    .min(s.send_window)
                    .min(c.conn_window)
                    .max(0) as usize;
                if n == 0 && left > 0 {
                    break;
                }
                let end = n == left;
                h2::frame_head(
                    &mut c.out,
                    n,
                    h2::DATA,
                    if end { h2::END_STREAM } else { 0 },
                    s.id,
                );
                c.out.extend_from_slice(&body[s.body_sent..s.body_sent + n]);
                s.body_sent += n;
                s.send_window -= n as i64;
                c.conn_window -= n as i64;
                s.sent_len += 9 + n as u64;
                if end {
                    s.out_end = Some(c.out_base + c.out.len() as u64);
                    break;
                }
            }
        }
        false
    }

    /// Writes what the connection has queued; the first write that goes through establishes
    /// it (over TLS: the handshake is done, and the server chose HTTP/2).
    fn flush(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(s) = c.stream.as_mut() else {
            return;
        };
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
                Ok(0) if pending => return self.conn_failed(idx, FailureKind::Write),
                Ok(n) => {
                    c.out_pos += n;
                    if !c.connected {
                        if c.tls.as_ref().is_some_and(|t| !t.alpn_h2()) {
                            let e = io::Error::other(h2::NotHttp2(
                                "the server did not select HTTP/2 (ALPN \"h2\") in the TLS handshake; it may serve HTTP/1.1 only over TLS (leave out --h2)"
                                    .into(),
                            ));
                            let kind = note_connect_error(&self.sh, &e);
                            return self.conn_failed(idx, kind);
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
                        let kind = note_connect_error(&self.sh, &alpn_refused(e));
                        return self.conn_failed(idx, kind);
                    }
                    return self.conn_failed(idx, FailureKind::Write);
                }
            }
        }
        let now = Instant::now();
        if c.out_pos == c.out.len() {
            c.out_base += c.out.len() as u64;
            c.out.clear();
            c.out_pos = 0;
        } else if c.out_pos >= OUT_CAP {
            // Never emptied, behind a server that reads slowly: what went out is dropped, or
            // it would stay in front of what waits for good.
            c.out.drain(..c.out_pos);
            c.out_base += c.out_pos as u64;
            c.out_pos = 0;
        }
        let flushed = c.out_base + c.out_pos as u64;
        for st in c.slots.iter_mut() {
            if st.id != 0 && !st.written && st.out_end.is_some_and(|e| e <= flushed) {
                st.written = true;
                st.req.written = now;
            }
        }
        let want = if blocked {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        if c.registered != Some(want) {
            let tok = token(idx, c.generation);
            let r = match c.registered {
                None => self.poll.registry().register(s, tok, want),
                Some(_) => self.poll.registry().reregister(s, tok, want),
            };
            if r.is_err() {
                return self.conn_failed(idx, FailureKind::Exception);
            }
            c.registered = Some(want);
        }
    }

    /// Reads and handles frames until the socket is empty, the connection ends, or the
    /// connection has had its turn.
    fn read(&mut self, idx: usize, closed: bool) {
        let mut budget = TURN_BYTES;
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let c = &mut self.conns[idx];
            let Some(s) = c.stream.as_ref() else {
                break;
            };
            let fd = s.as_fd();
            let got = match c.tls.as_mut() {
                Some(t) => t.recv(fd, &mut buf, c.stamped),
                None => sock::recv(fd, &mut buf, c.stamped),
            };
            match got {
                Recv::Data { len, stamp } => {
                    let now = Instant::now();
                    let arrival = stamp.map(|st| (st, sock::realtime_now()));
                    c.heard_at = now;
                    let emptied = len < buf.len();
                    let eof_after = c.tls.as_ref().is_some_and(|t| t.eof_pending());
                    if !c.settings_seen && c.reader.idle() && buf[..len].starts_with(b"HTTP/1.") {
                        let e = io::Error::other(h2::NotHttp2(
                            "the server answered HTTP/2's preface in HTTP/1.x: it does not speak HTTP/2 by prior knowledge (h2c) on this port; leave out --h2, or use its https:// address"
                                .into(),
                        ));
                        let kind = note_connect_error(&self.sh, &e);
                        self.conn_failed(idx, kind);
                        break;
                    }
                    if let Err(e) = self.frames(idx, &buf[..len], now, arrival) {
                        let c = &mut self.conns[idx];
                        h2::goaway(&mut c.out, LAST_PEER_STREAM, e.code());
                        self.flush(idx);
                        self.sh.note_h2_error(e);
                        self.conn_failed(idx, FailureKind::Exception);
                        break;
                    }
                    if self.conns[idx].stream.is_none() {
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
                        self.resume.push((idx, generation));
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
        self.buf = buf;
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
                    if c.cont.is_some() || stream == 0 {
                        return Err(ConnError::Protocol);
                    }
                    c.unacked += flow as u64;
                    if c.unacked >= u64::from(h2::RECV_WINDOW / 2) {
                        h2::window_update(&mut c.out, 0, c.unacked as u32);
                        c.unacked = 0;
                    }
                    let Some(k) = c.slots.iter().position(|s| s.id == stream) else {
                        continue;
                    };
                    let s = &mut c.slots[k];
                    s.touch(now, arrival);
                    s.body_len += body as u64;
                    s.wire_len += flow as u64 + if head { 9 } else { 0 };
                    s.unacked += flow as u32;
                    if end {
                        self.complete(idx, k);
                    } else if s.unacked >= h2::RECV_WINDOW / 2 {
                        h2::window_update(&mut c.out, stream, s.unacked);
                        s.unacked = 0;
                    }
                    continue;
                }
                Some(Event::Frame { head, payload }) => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(payload);
                    head
                }
            };
            let c = &mut self.conns[idx];
            let payload = std::mem::take(&mut self.scratch);
            if c.cont.is_some() && head.kind != h2::CONTINUATION {
                return Err(ConnError::Protocol);
            }
            match head.kind {
                h2::HEADERS => {
                    if head.stream == 0 {
                        return Err(ConnError::Protocol);
                    }
                    let frag = h2::headers_fragment(&head, &payload)?;
                    if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
                        s.wire_len += 9 + head.len as u64;
                    }
                    if head.flags & h2::END_HEADERS != 0 {
                        self.block(idx, head.stream, head.flags, frag, now, arrival)?;
                    } else {
                        c.cont = Some(Cont {
                            stream: head.stream,
                            flags: head.flags,
                            block: frag,
                            frames: 0,
                        });
                    }
                }
                h2::CONTINUATION => {
                    let Some(mut cont) = c.cont.take() else {
                        return Err(ConnError::Protocol);
                    };
                    if cont.stream != head.stream {
                        return Err(ConnError::Protocol);
                    }
                    cont.frames += 1;
                    if cont.frames > h2::MAX_CONTINUATIONS {
                        return Err(ConnError::Continuations);
                    }
                    if cont.block.len() + payload.len() > h2::MAX_HEADER_BLOCK {
                        return Err(ConnError::HeaderBlock);
                    }
                    if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
                        s.wire_len += 9 + head.len as u64;
                    }
                    cont.block.extend_from_slice(&payload);
                    if head.flags & h2::END_HEADERS != 0 {
                        self.block(idx, cont.stream, cont.flags, cont.block, now, arrival)?;
                    } else {
                        c.cont = Some(cont);
                    }
                }
                h2::SETTINGS if head.flags & h2::ACK == 0 => {
                    if head.stream != 0 || payload.len() % 6 != 0 {
                        return Err(ConnError::Protocol);
                    }
                    // Applied once per frame, as the last value leaves it: a frame of thousands
                    // of entries costs no more than one.
                    let mut window = None;
                    for e in payload.chunks_exact(6) {
                        let id = u16::from_be_bytes([e[0], e[1]]);
                        let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
                        match id {
                            h2::SETTINGS_HEADER_TABLE_SIZE
                                if v < h2::DEFAULT_TABLE && c.table == Table::Default =>
                            {
                                c.table = Table::Shrink
                            }
                            h2::SETTINGS_MAX_CONCURRENT_STREAMS => c.peer_max = v,
                            h2::SETTINGS_INITIAL_WINDOW_SIZE => {
                                if v > MAX_ID {
                                    return Err(ConnError::Protocol);
                                }
                                window = Some(i64::from(v));
                            }
                            h2::SETTINGS_MAX_FRAME_SIZE => {
                                if !(16_384..=16_777_215).contains(&v) {
                                    return Err(ConnError::Protocol);
                                }
                                c.max_frame = v as usize;
                            }
                            _ => {}
                        }
                    }
                    if let Some(v) = window {
                        let delta = v - c.peer_window;
                        for s in c.slots.iter_mut().filter(|s| s.id != 0) {
                            s.send_window += delta;
                        }
                        c.peer_window = v;
                    }
                    if !c.settings_seen {
                        c.settings_seen = true;
                        // The server speaks HTTP/2: a connection was made.
                        if !self.sh.connected_once.load(Relaxed) {
                            self.sh.connected_once.store(true, Relaxed);
                        }
                        if !payload.chunks_exact(6).any(|e| {
                            u16::from_be_bytes([e[0], e[1]]) == h2::SETTINGS_MAX_CONCURRENT_STREAMS
                        }) {
                            // No limit given: as many as asked for.
                            c.peer_max = u32::MAX;
                        }
                    }
                    if !self.reply_room(idx)? {
                        self.scratch = payload;
                        return Ok(());
                    }
                    let c = &mut self.conns[idx];
                    h2::settings_ack(&mut c.out);
                    c.replies.push_back(c.out_base + c.out.len() as u64);
                }
                h2::PING if head.flags & h2::ACK == 0 => {
                    if payload.len() != 8 {
                        return Err(ConnError::Protocol);
                    }
                    if !self.reply_room(idx)? {
                        self.scratch = payload;
                        return Ok(());
                    }
                    let c = &mut self.conns[idx];
                    h2::ping_ack(&mut c.out, &payload);
                    c.replies.push_back(c.out_base + c.out.len() as u64);
                }
                h2::GOAWAY => {
                    if payload.len() < 8 {
                        return Err(ConnError::Protocol);
                    }
                    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & MAX_ID;
                    c.goaway = true;
                    for k in 0..c.slots.len() {
                        let id = self.conns[idx].slots[k].id;
                        if id != 0 && id > last {
                            self.fail_stream(idx, k, FailureKind::GoAway, now);
                        }
                    }
                }
                h2::RST_STREAM => {
                    if head.stream == 0 || payload.len() != 4 {
                        return Err(ConnError::Protocol);
                    }
                    if let Some(k) = c.slots.iter().position(|s| s.id == head.stream) {
                        self.fail_stream(idx, k, FailureKind::Reset, now);
                    }
                }
                h2::WINDOW_UPDATE => {
                    if payload.len() != 4 {
                        return Err(ConnError::Protocol);
                    }
                    let inc = i64::from(
                        u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                            & MAX_ID,
                    );
                    if head.stream == 0 {
                        c.conn_window += inc;
                    } else if let Some(s) = c.slots.iter_mut().find(|s| s.id == head.stream) {
                        s.send_window += inc;
                    }
                }
                // Server push was turned off in the client's SETTINGS.
                h2::PUSH_PROMISE => return Err(ConnError::Protocol),
                _ => {}
            }
            self.scratch = payload;
        }
    }

    /// A complete header block arrived for `stream`.
    fn block(
        &mut self,
        idx: usize,
        stream: u32,
        flags: u8,
        block: Vec<u8>,
        now: Instant,
        arrival: Option<(Stamp, Stamp)>,
    ) -> Result<(), ConnError> {
        let c = &mut self.conns[idx];
        let k = c.slots.iter().position(|s| s.id == stream);
        let want = k.is_some_and(|k| c.slots[k].req.want_server);
        // Decoded even for a stream that is gone: the table must stay in step.
        let head = h2::decode_head(&mut c.decoder, block, want)?;
        let Some(k) = k else {
            return Ok(());
        };
        let s = &mut c.slots[k];
        s.touch(now, arrival);
        let end = flags & h2::END_STREAM != 0;
        if (100..200).contains(&head.status) && !end {
            // An interim response: the final one follows.
            return Ok(());
        }
        if s.head.is_none() {
            s.head = Some(head);
        }
        if end {
            self.complete(idx, k);
        }
        Ok(())
    }

    /// Records a stream whose response is complete, and frees its slot.
    fn complete(&mut self, idx: usize, k: usize) {
        self.mark(idx);
        let sh = &*self.sh;
        let cfg = &sh.cfg;
        let c = &mut self.conns[idx];
        let s = std::mem::replace(&mut c.slots[k], Stream::free(self.start));
        c.open -= 1;
        let req = s.req;
        let done = req.last_data;
        self.napper
            .observe(done.saturating_duration_since(req.start), req.read_at);
        let Some(head) = s.head else {
            // DATA ended a stream that never had a head: not HTTP.
            c.slots[k] = s;
            c.open += 1;
            return self.fail_stream(idx, k, FailureKind::Exception, done);
        };
        if req.want_server {
            let _ = sh.server.set(head.server.unwrap_or_default());
            sh.note_tls(c.tls.as_deref());
        }
        let ok = (200..300).contains(&head.status);
        let body = s.body_len;
        let head_only = cfg.load.method.head_only();
        if !head_only && head.content_length.is_some_and(|n| n != body) {
            return self.count_failure(req.measured, FailureKind::Exception, done);
        }
        let known = match sh.doc_len.load(Relaxed) {
            UNKNOWN if ok => sh
                .doc_len
                .compare_exchange(UNKNOWN, body, Relaxed, Relaxed)
                .err(),
            k => Some(k),
        };
        let length_failure = ok && known.is_some_and(|k| k != body) && !cfg.variable_length;
        if !(req.measured && self.end.is_none_or(|e| done < e)) {
            return;
        }
        let rec = &mut self.rec;
        rec.completed += 1;
        rec.total_bytes += s.wire_len;
        rec.body_bytes += body;
        rec.sent_bytes += s.sent_len;
        rec.keep_alive_requests += 1;
        if !ok {
            rec.non_2xx += 1;
        }
        if length_failure {
            rec.failures.add(FailureKind::Length);
        }
        let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
        let written = if s.written { req.written } else { req.start };
        let sample = Sample {
            connect: us(req.connect),
            waiting: us(req
                .first_byte
                .unwrap_or(done)
                .saturating_duration_since(written)),
            total: us(done.saturating_duration_since(req.start)),
        };
        rec.record(sample, None);
        rec.interval_response(done, &sample, None, s.wire_len, length_failure);
        let (wall, start) = (self.wall_start_us, self.start);
        rec.record_start(|| wall + req.start.saturating_duration_since(start).as_micros() as u64);
        if req.stamped {
            rec.read_delay
                .saturating_record(req.read_at.saturating_duration_since(done).as_micros() as u64);
        }
        self.tally.count(sh, done);
    }

    /// A stream ended without its response: counted by kind, its slot freed.
    fn fail_stream(&mut self, idx: usize, k: usize, kind: FailureKind, now: Instant) {
        let c = &mut self.conns[idx];
        let s = std::mem::replace(&mut c.slots[k], Stream::free(self.start));
        c.open -= 1;
        self.mark(idx);
        self.count_failure(s.req.measured, kind, now);
    }

    fn count_failure(&mut self, measured: bool, kind: FailureKind, now: Instant) {
        if !(measured && self.end.is_none_or(|e| now < e)) {
            return;
        }
        let no_connection = matches!(kind, FailureKind::Connect | FailureKind::Generator);
        self.rec.failures.add(kind);
        if !no_connection {
            self.rec.completed += 1;
        }
        self.rec.interval_failure(now, kind, !no_connection);
        self.tally.count(&self.sh, now);
    }

    /// The connection is over (closed by the server, failed, or given up on): every stream
    /// still open on it fails with `kind`, and the slot connects again when it next can.
    fn conn_failed(&mut self, idx: usize, kind: FailureKind) {
        let now = Instant::now();
        for k in 0..self.conns[idx].slots.len() {
            if self.conns[idx].slots[k].id != 0 {
                self.fail_stream(idx, k, kind, now);
            }
        }
        self.drop_socket(idx);
        if matches!(kind, FailureKind::Connect | FailureKind::Generator) {
            // A target that refuses connections must not turn the slot into a spin.
            let t = now + CONNECT_RETRY_PAUSE;
            self.conns[idx].retry_at = Some(t);
            self.timers.push(Reverse((t, idx)));
        }
        self.mark(idx);
    }

    fn drop_socket(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        c.stream = None;
        c.tls = None;
        c.connected = false;
        c.registered = None;
        c.out.clear();
        c.out_pos = 0;
        c.cont = None;
        c.replies.clear();
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
                self.flush(idx);
            }
            self.drop_socket(idx);
            self.active -= 1;
        }
    }

    /// Ends the streams whose deadline has passed.
    fn expire(&mut self, now: Instant) {
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
}
