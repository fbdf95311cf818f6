//! One HTTP/3 connection slot: its UDP socket, its QUIC connection, the streams it carries.

use super::super::worker::Request;
use super::udp::Sock;
use h3wire::control::{Peer, UniReader};
use h3wire::message::ResponseReader;
use quinn_proto::{Connection, ConnectionHandle, StreamId};
use std::time::Instant;

/// A request stream, or a free place for one.
pub(super) struct Stream {
    /// Its QUIC stream; `None` when free.
    pub(super) id: Option<StreamId>,
    pub(super) req: Request,
    pub(super) reader: ResponseReader,
    pub(super) deadline: Instant,
    /// Bytes of the response's stream read, and of the request written.
    pub(super) wire_len: u64,
    pub(super) sent: usize,
    /// The request is written whole and its stream's end sent.
    pub(super) fin: bool,
    /// Its status, once its final head came.
    pub(super) status: Option<u16>,
}

impl Stream {
    pub(super) fn free(start: Instant) -> Stream {
        Stream {
            id: None,
            req: Request::new(start, None, false, false),
            reader: ResponseReader::new(0, 0),
            deadline: start,
            wire_len: 0,
            sent: 0,
            fin: false,
            status: None,
        }
    }
}

/// A QUIC connection and its handle at the worker's endpoint.
pub(super) struct Quic {
    pub(super) ch: ConnectionHandle,
    pub(super) conn: Connection,
    /// The endpoint has been told the connection is over, and has freed its handle.
    pub(super) drained: bool,
}

/// A ticket taken for a request that waits for the connection to take a stream: whether it is
/// measured, when the request began, and its constant-rate send time (`--rate`).
#[derive(Clone, Copy)]
pub(super) struct Held {
    pub(super) measured: bool,
    pub(super) start: Instant,
    pub(super) intended: Option<Instant>,
}

pub(super) struct Conn {
    /// Numbers the slot's sockets: a readiness event for an earlier one is stale.
    pub(super) generation: u32,
    pub(super) sock: Option<Sock>,
    pub(super) quic: Option<Quic>,
    /// The handshake completed, at `connected_at`.
    pub(super) connected: bool,
    pub(super) connected_at: Instant,
    /// Its requests go in 0-RTT, before the handshake is done (`--0rtt`, and a resumed
    /// session with early data allowed).
    pub(super) early: bool,
    /// What the server's control stream said; its unidirectional streams being read.
    pub(super) peer: Peer,
    pub(super) uni: Vec<(StreamId, UniReader)>,
    pub(super) slots: Vec<Stream>,
    /// Request streams open now, and carried in all by this connection.
    pub(super) open: u32,
    pub(super) carried: u64,
    pub(super) held: Option<Held>,
    /// With `--rate`: the send time the schedule gave the connection's next request, still to
    /// come (the worker's heap holds a timer for it).
    pub(super) due: Option<Instant>,
    /// No tickets left for it, or it is over for good.
    pub(super) done: bool,
    pub(super) finished: bool,
    /// In the worker's list of connections to pump after this round.
    pub(super) dirty: bool,
    /// A failed connect waits until then to try again.
    pub(super) retry_at: Option<Instant>,
    /// The QUIC timer the worker's heap holds for it.
    pub(super) timer_at: Option<Instant>,
    /// When anything last arrived on it.
    pub(super) heard_at: Instant,
    /// Datagrams the socket had no room for: the transmit's destination, segment size and
    /// bytes.
    pub(super) blocked: Option<(quinn_proto::Transmit, Vec<u8>)>,
    /// The socket is registered for writability too.
    pub(super) want_write: bool,
}

impl Conn {
    pub(super) fn new(streams: u32, start: Instant) -> Conn {
        Conn {
            generation: 0,
            sock: None,
            quic: None,
            connected: false,
            connected_at: start,
            early: false,
            peer: Peer::default(),
            uni: Vec::new(),
            slots: (0..streams).map(|_| Stream::free(start)).collect(),
            open: 0,
            carried: 0,
            held: None,
            due: None,
            done: false,
            finished: false,
            dirty: false,
            retry_at: None,
            timer_at: None,
            heard_at: start,
            blocked: None,
            want_write: false,
        }
    }

    /// Forgets the connection and its socket (closing it); the slot's next connection starts
    /// afresh.
    pub(super) fn drop_connection(&mut self) {
        self.sock = None;
        self.quic = None;
        self.connected = false;
        self.early = false;
        self.peer = Peer::default();
        self.uni.clear();
        self.carried = 0;
        self.timer_at = None;
        self.blocked = None;
        self.want_write = false;
        self.generation = self.generation.wrapping_add(1);
    }
}
