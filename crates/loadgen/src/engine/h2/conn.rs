//! An HTTP/2 connection's own state: its socket, its output, the server's settings and
//! windows, and its streams' slots. Nothing here records or talks to the worker: the worker
//! ([`super`]) acts on what these methods say.

use crate::engine::worker::{Request, READ_BUF};
use crate::h2::{self, Blocks, FrameReader, ResponseHead};
use crate::sock::{self, Stamp};
use std::collections::VecDeque;
use std::time::Instant;

/// Streams a new connection opens before the server's SETTINGS say how many it takes: the
/// first request leaves with the preface, the others once the server's limit is known, so
/// that none is refused for opening beyond it.
const BEFORE_SETTINGS: u32 = 1;
/// The largest stream id; a connection that reaches it is closed and replaced.
pub(super) const MAX_ID: u32 = 0x7fff_ffff;
/// Output waiting unwritten on a connection beyond which it opens no stream and queues no
/// request body until some has gone out: 64 KiB, a read's worth ([`READ_BUF`]). The kernel's
/// send buffer behind it keeps the socket busy; more here would only wait, and grow without
/// bound behind a server that does not read.
pub(super) const OUT_CAP: usize = READ_BUF;

/// How the connection's header blocks use the server's dynamic table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    Default,
    /// The server shrank the table: the next block says so and indexes nothing.
    Shrink,
    Unindexed,
}

/// A header block being gathered: its HEADERS arrived without END_HEADERS.
pub(super) struct Cont {
    pub(super) stream: u32,
    /// The HEADERS frame's flags.
    pub(super) flags: u8,
    pub(super) block: Vec<u8>,
    /// CONTINUATION frames so far.
    pub(super) frames: u32,
}

pub(super) struct Stream {
    /// 0: a free slot.
    pub(super) id: u32,
    pub(super) req: Request,
    /// Where this stream's last frame ends in the connection's output, once queued.
    pub(super) out_end: Option<u64>,
    pub(super) written: bool,
    pub(super) deadline: Instant,
    pub(super) head: Option<ResponseHead>,
    pub(super) body_len: u64,
    pub(super) wire_len: u64,
    pub(super) sent_len: u64,
    pub(super) body_sent: usize,
    pub(super) send_window: i64,
    /// Bytes received and not yet given back by a WINDOW_UPDATE.
    pub(super) unacked: u32,
}

impl Stream {
    pub(super) fn free(start: Instant) -> Stream {
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
    pub(super) fn touch(&mut self, now: Instant, arrival: Option<(Stamp, Stamp)>) {
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

/// A connection slot; `S` is its socket as its engine holds it ([`super::Wire::Sock`]).
pub(super) struct Conn<S> {
    pub(super) stream: Option<S>,
    pub(super) tls: Option<Box<crate::tls::TlsConn>>,
    pub(super) generation: u32,
    pub(super) connected: bool,
    pub(super) stamped: bool,
    pub(super) finished: bool,
    /// No ticket is left for it: it ends with its last stream.
    pub(super) done: bool,
    pub(super) out: Vec<u8>,
    pub(super) out_pos: usize,
    /// Bytes of output before `out[0]`, flushed and dropped.
    pub(super) out_base: u64,
    pub(super) reader: FrameReader,
    /// The connection's decoder of response heads (HPACK's, with the last head kept).
    pub(super) heads: h2::Heads,
    pub(super) first_sent: bool,
    pub(super) table: Table,
    pub(super) next_id: u32,
    pub(super) slots: Vec<Stream>,
    pub(super) open: u32,
    pub(super) peer_max: u32,
    /// The server's first SETTINGS arrived.
    pub(super) settings_seen: bool,
    pub(super) peer_window: i64,
    pub(super) conn_window: i64,
    pub(super) max_frame: usize,
    pub(super) goaway: bool,
    pub(super) unacked: u64,
    /// When something last arrived on the connection.
    pub(super) heard_at: Instant,
    /// A HEADERS frame waiting for its CONTINUATION.
    pub(super) cont: Option<Cont>,
    /// Where each answer to the server's control frames that may still be unwritten ends in
    /// the output (as `out_end`), oldest first; at most [`h2::MAX_QUEUED_REPLIES`].
    pub(super) replies: VecDeque<u64>,
    pub(super) retry_at: Option<Instant>,
    /// With `--rate`: the send time the schedule gave the connection's next request, still to
    /// come (the worker's heap holds a timer for it).
    pub(super) due: Option<Instant>,
    pub(super) dirty: bool,
}

impl<S> Conn<S> {
    /// A slot with room for `streams` streams and no socket yet.
    pub(super) fn new(streams: u32, start: Instant) -> Conn<S> {
        Conn {
            stream: None,
            tls: None,
            generation: 0,
            connected: false,
            stamped: false,
            finished: false,
            done: false,
            out: Vec::new(),
            out_pos: 0,
            out_base: 0,
            reader: FrameReader::new(),
            heads: h2::Heads::new(),
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
            due: None,
            dirty: false,
        }
    }

    /// Takes the new socket `s` (and its TLS) as of `now`, with everything a connection
    /// starts from, and queues the client's preface.
    pub(super) fn connected_to(
        &mut self,
        s: S,
        tls: Option<Box<crate::tls::TlsConn>>,
        stamped: bool,
        now: Instant,
    ) {
        self.stamped = stamped;
        self.stream = Some(s);
        self.tls = tls;
        self.generation = self.generation.wrapping_add(1);
        self.connected = false;
        self.out.clear();
        self.out_pos = 0;
        self.out_base = 0;
        self.reader = FrameReader::new();
        self.heads = h2::Heads::new();
        self.first_sent = false;
        self.table = Table::Default;
        self.next_id = 1;
        self.peer_max = BEFORE_SETTINGS;
        self.settings_seen = false;
        self.peer_window = h2::DEFAULT_WINDOW;
        self.conn_window = h2::DEFAULT_WINDOW;
        self.max_frame = h2::DEFAULT_MAX_FRAME;
        self.goaway = false;
        self.unacked = 0;
        self.heard_at = now;
        self.cont = None;
        self.replies.clear();
        h2::client_preface(&mut self.out);
    }

    /// Lets go of the socket and of everything that was on its way out.
    pub(super) fn drop_socket(&mut self) {
        self.stream = None;
        self.tls = None;
        self.connected = false;
        self.out.clear();
        self.out_pos = 0;
        self.cont = None;
        self.replies.clear();
    }

    /// Bytes queued and not yet written.
    pub(super) fn unwritten(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Answers to the server's control frames still unwritten.
    pub(super) fn unwritten_replies(&mut self) -> usize {
        let written = self.out_base + self.out_pos as u64;
        while self.replies.front().is_some_and(|&end| end <= written) {
            self.replies.pop_front();
        }
        self.replies.len()
    }

    /// Opens a stream for `req` in a free slot, queuing its HEADERS (the whole request
    /// without a body); false when no slot is free.
    pub(super) fn open_stream(
        &mut self,
        blocks: &Blocks,
        has_body: bool,
        mut req: Request,
        deadline: Instant,
    ) -> bool {
        let Some(k) = self.slots.iter().position(|s| s.id == 0) else {
            return false;
        };
        let id = self.next_id;
        self.next_id += 2;
        let block = match self.table {
            Table::Default if self.first_sent => &blocks.repeat,
            Table::Default => {
                self.first_sent = true;
                &blocks.first
            }
            Table::Shrink => {
                self.table = Table::Unindexed;
                &blocks.shrink
            }
            Table::Unindexed => &blocks.unindexed,
        };
        let before = self.out.len();
        h2::headers(&mut self.out, id, block, !has_body, self.max_frame);
        req.reused = self.connected;
        self.slots[k] = Stream {
            id,
            req,
            out_end: (!has_body).then_some(self.out_base + self.out.len() as u64),
            written: false,
            deadline,
            head: None,
            body_len: 0,
            wire_len: 0,
            sent_len: (self.out.len() - before) as u64,
            body_sent: 0,
            send_window: self.peer_window,
            unacked: 0,
        };
        self.open += 1;
        true
    }

    /// Queues the request bodies of the connection's streams as far as the windows allow;
    /// true when it stopped short of that for the output waiting ([`OUT_CAP`]).
    pub(super) fn queue_bodies(&mut self, body: &[u8]) -> bool {
        for s in self.slots.iter_mut() {
            if s.id == 0 || s.out_end.is_some() {
                continue;
            }
            loop {
                if self.out.len() - self.out_pos >= OUT_CAP {
                    return true;
                }
                let left = body.len() - s.body_sent;
                let n = (left as i64)
                    .min(self.max_frame as i64)
                    .min(s.send_window)
                    .min(self.conn_window)
                    .max(0) as usize;
                if n == 0 && left > 0 {
                    break;
                }
                let end = n == left;
                h2::frame_head(
                    &mut self.out,
                    n,
                    h2::DATA,
                    if end { h2::END_STREAM } else { 0 },
                    s.id,
                );
                self.out
                    .extend_from_slice(&body[s.body_sent..s.body_sent + n]);
                s.body_sent += n;
                s.send_window -= n as i64;
                self.conn_window -= n as i64;
                s.sent_len += 9 + n as u64;
                if end {
                    s.out_end = Some(self.out_base + self.out.len() as u64);
                    break;
                }
            }
        }
        false
    }

    /// After writing: drops what went out from the output, and marks the streams all of
    /// whose frames have gone as written at `now`.
    pub(super) fn wrote(&mut self, now: Instant) {
        if self.out_pos == self.out.len() {
            self.out_base += self.out.len() as u64;
            self.out.clear();
            self.out_pos = 0;
        } else if self.out_pos >= OUT_CAP {
            // Never emptied, behind a server that reads slowly: what went out is dropped, or
            // it would stay in front of what waits for good.
            self.out.drain(..self.out_pos);
            self.out_base += self.out_pos as u64;
            self.out_pos = 0;
        }
        let flushed = self.out_base + self.out_pos as u64;
        for st in self.slots.iter_mut() {
            if st.id != 0 && !st.written && st.out_end.is_some_and(|e| e <= flushed) {
                st.written = true;
                st.req.written = now;
            }
        }
    }
}
