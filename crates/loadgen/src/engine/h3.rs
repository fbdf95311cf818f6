//! HTTP/3 connections in a worker's loop: the same thread, poller, tickets and recorder as
//! HTTP/1 and HTTP/2, with QUIC's state machine (quinn-proto, which does no I/O and reads no
//! clock of its own) driven from the loop.
//!
//! Each connection slot has a UDP socket of its own, connected to the server: the kernel then
//! tells a closed port at once (ECONNREFUSED), and a server that spreads connections over its
//! workers by 4-tuple (SO_REUSEPORT) sees one per connection, as from real clients. All the
//! worker's connections share one QUIC endpoint, which routes each datagram to its
//! connection. Datagrams are read up to [`RECV_BATCH`] per `recvmmsg`, a server's segments
//! coalesced by the kernel (UDP GRO) and stamped on arrival; the client's own leave up to
//! [`MAX_GSO_SEGMENTS`] per `sendmsg` (UDP GSO).
//!
//! A request is a stream and a sample, timed as an HTTP/2 one is: `start` when its ticket is
//! taken (before connecting, on a new connection), Connect from then to the end of the QUIC
//! handshake (TLS 1.3 included) for the first request of a connection and 0 for the rest,
//! `written` when its request was handed whole to QUIC, `first byte` when the datagram that
//! carried its response's first bytes arrived and `done` when the one that ended its stream
//! did, by the kernel's receive stamps. Requests open once the handshake is done, or with
//! 0-RTT on a resumed session before it (`early`). A request's stream, from its opening to
//! its sample, is `streams`.
//!
//! With keep-alive (`-k`) a connection carries requests until the load ends, up to `streams`
//! at once; without it, each request has a connection (and a handshake) of its own, closed
//! once its response is in, as a browser's first visit.
//!
//! What ends a stream other than its response: the server resetting it (`reset`), a
//! malformed response (`exception`: the client stops reading it with the error HTTP/3 names),
//! the connection ending (`receive`), or the per-request timeout (`timeout`: the client
//! cancels the stream; when nothing at all arrived on the connection since the stream
//! started, or the handshake never finished, the connection is dropped with every stream on
//! it). A handshake that fails (a bad certificate, no "h3" by ALPN) or a closed UDP port is a
//! connect failure with its reason; when no connection was ever made, the run ends with it.

use super::worker::CONNECT_RETRY_PAUSE;
use super::worker::{self, token, Core, Placement, Protocol, Schedule, TURN_BYTES};
use crate::h3::{Setup, MAX_FIELD_SECTION};
use crate::sock::Stamp;
use crate::stats::{FailureKind, Recorder};
use bytes::{Bytes, BytesMut};
use conn::{Conn, Held, Quic};
use h3wire::frame::code;
use h3wire::message::Heads;
use mio::event::Event as Readiness;
use mio::unix::SourceFd;
use mio::Interest;
use quinn_proto::{
    DatagramEvent, Dir, Endpoint, EndpointEvent, Event, ReadError, StreamEvent, StreamId, VarInt,
};
use quinn_udp::RecvMeta;
use std::cmp::Reverse;
use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use udp::Sock;

mod conn;
mod early;
mod failures;
mod streams;
mod udp;

/// Datagram buffers filled per `recvmmsg`.
const RECV_BATCH: usize = 8;
/// Each buffer's size: a whole GRO batch (at most 64 KiB).
const RECV_SLOT: usize = 64 * 1024;
/// Datagrams sent per `sendmsg` at most (quinn's own driver finds about 10 the best
/// compromise between fewer system calls and ACKs processed in between).
const MAX_GSO_SEGMENTS: usize = 10;

/// An HTTP/3 worker: its endpoint and connections, and those with work after this round.
struct H3Worker {
    core: Core,
    setup: Setup,
    endpoint: Endpoint,
    conns: Vec<Conn>,
    /// Streams per connection (`--streams`), and whether connections carry more than one
    /// request (`-k`).
    streams: u32,
    keep_alive: bool,
    /// `--rate`: the send times of this worker's share of the requests.
    schedule: Schedule,
    dirty: Vec<usize>,
    /// Receive buffers, [`RECV_BATCH`] of [`RECV_SLOT`] bytes, and what each got.
    rx: Box<[u8]>,
    metas: [RecvMeta; RECV_BATCH],
    /// Datagrams to send, as QUIC writes them.
    tx: Vec<u8>,
    /// Datagrams per send: [`MAX_GSO_SEGMENTS`], or 1 where the kernel has no UDP GSO.
    max_gso: usize,
    /// What QUIC's accounting said of the connections that ended (see [`super::shared::Shared::quic`]).
    tally: [u64; 4],
    /// What 0-RTT did (see [`super::shared::Shared::zero_rtt`]).
    early: early::EarlyTally,
    /// The last response head decoded, for the next one that repeats it.
    heads: Heads,
}

/// Runs a worker's share of the connections over HTTP/3.
pub(super) fn run(core: Core, at: &Placement) -> (Recorder, Option<Instant>) {
    let setup = core
        .sh
        .h3
        .clone()
        .expect("HTTP/3 runs have their QUIC setup");
    let streams = core.sh.cfg.load.streams.max(1);
    let w = H3Worker {
        endpoint: Endpoint::new(setup.endpoint.clone(), None, true, None),
        setup,
        conns: (0..at.conns)
            .map(|_| Conn::new(streams, core.start))
            .collect(),
        streams,
        keep_alive: core.sh.cfg.load.keep_alive,
        schedule: Schedule::new(core.sh.cfg.load.rate, at.threads),
        dirty: Vec::new(),
        rx: vec![0u8; RECV_BATCH * RECV_SLOT].into_boxed_slice(),
        metas: [RecvMeta::default(); RECV_BATCH],
        tx: Vec::new(),
        max_gso: 0,
        tally: [0; 4],
        early: early::EarlyTally::default(),
        heads: Heads::new(),
        core,
    };
    worker::drive(w)
}

impl Protocol for H3Worker {
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
            .is_some_and(|c| c.generation == generation && c.sock.is_some())
    }

    fn start(&mut self) {
        for i in 0..self.conns.len() {
            self.pump(i, Instant::now());
        }
    }

    fn ready(&mut self, idx: usize, ev: &Readiness) {
        if ev.is_writable() {
            self.flush(idx);
        }
        if ev.is_readable() || ev.is_error() {
            self.receive(idx);
        }
        self.mark(idx);
    }

    fn resume(&mut self, idx: usize, _closed: bool) {
        self.receive(idx);
        self.mark(idx);
    }

    fn pending(&self) -> bool {
        !self.dirty.is_empty()
    }

    fn timer(&mut self, idx: usize, now: Instant) -> bool {
        let c = &mut self.conns[idx];
        if c.retry_at.is_some_and(|t| t <= now) {
            c.retry_at = None;
        }
        if c.timer_at.is_some_and(|t| t <= now) {
            c.timer_at = None;
            if let Some(q) = c.quic.as_mut() {
                q.conn.handle_timeout(now);
            }
            self.events(idx, now, false);
        }
        self.mark(idx);
        false
    }

    /// Every connection with something to do opens its streams and sends, after the round's
    /// reads and timers: what a burst queues leaves together.
    fn after_timers(&mut self) {
        for idx in std::mem::take(&mut self.dirty) {
            self.pump(idx, Instant::now());
        }
    }

    fn expire(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if c.quic.is_none() {
                continue;
            }
            // A handshake that never finished within the timeout.
            let since = c.held.map(|h| h.start).or_else(|| {
                (0..c.slots.len())
                    .filter(|&k| c.slots[k].id.is_some())
                    .map(|k| c.slots[k].req.start)
                    .min()
            });
            if !c.connected {
                if since.is_some_and(|s| s + self.core.timeout <= now) {
                    self.handshake_timed_out(idx);
                }
                continue;
            }
            let late: Vec<usize> = (0..c.slots.len())
                .filter(|&k| c.slots[k].id.is_some() && c.slots[k].deadline <= now)
                .collect();
            if late.is_empty() {
                continue;
            }
            // Nothing arrived since the earliest late stream began: the connection itself is
            // stuck, and every stream on it goes with it.
            if late.iter().any(|&k| c.heard_at <= c.slots[k].req.start) {
                self.conn_failed(idx, FailureKind::Timeout);
                continue;
            }
            for k in late {
                let c = &mut self.conns[idx];
                if let (Some(q), Some(id)) = (c.quic.as_mut(), c.slots[k].id) {
                    let cancelled = VarInt::from_u64(code::H3_REQUEST_CANCELLED).expect("small");
                    let _ = q.conn.recv_stream(id).stop(cancelled);
                    let _ = q.conn.send_stream(id).reset(cancelled);
                }
                self.fail_stream(idx, k, FailureKind::Timeout, now);
            }
        }
    }

    /// Connections still open say goodbye, so that the server does not keep them until its
    /// idle timeout. At a constant rate, the requests still waiting for their responses are
    /// counted with how long they had waited.
    fn ended(&mut self) {
        if self.schedule.paced() {
            let waiting = self.conns.iter().flat_map(|c| c.slots.iter());
            self.core
                .count_unfinished(waiting.filter(|s| s.id.is_some()).map(|s| &s.req));
        }
        for idx in 0..self.conns.len() {
            if self.conns[idx].quic.is_some() {
                self.close(idx);
            }
        }
        for (total, n) in self.core.sh.quic.iter().zip(self.tally) {
            total.fetch_add(n, Relaxed);
        }
        for (total, n) in self.core.sh.zero_rtt.iter().zip(self.early.as_array()) {
            total.fetch_add(n, Relaxed);
        }
    }
}

impl H3Worker {
    fn mark(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.dirty && !c.finished {
            c.dirty = true;
            self.dirty.push(idx);
        }
    }

    /// Opens the streams the connection has room for (connecting first when it has none),
    /// replaces a connection that is spent, then sends what QUIC has to send.
    fn pump(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.dirty = false;
        if c.finished || c.retry_at.is_some() {
            return;
        }
        let spent = c.quic.as_ref().is_some_and(|q| q.conn.is_closed())
            || c.peer.goaway.is_some()
            || (!self.keep_alive && c.carried >= 1);
        if spent && c.open == 0 && c.held.is_none() && c.quic.is_some() {
            self.close(idx);
        }
        let stopping = self.core.sh.stop.load(Relaxed);
        if !stopping && !self.open_streams(idx, now) {
            return;
        }
        let c = &self.conns[idx];
        if c.open == 0 && c.held.is_none() && (stopping || c.done) {
            return self.finish(idx);
        }
        self.events(idx, now, false);
        self.flush(idx);
    }

    /// Takes tickets and opens streams while the connection has room, connecting first when
    /// there is no connection; false when a connect failed (the slot then waits to try
    /// again). A ticket taken while the connection cannot open a stream yet (its handshake
    /// is under way, or the server's stream limit is reached) is held for the next one.
    fn open_streams(&mut self, idx: usize, now: Instant) -> bool {
        loop {
            let c = &self.conns[idx];
            if c.held.is_none() {
                let full = c.quic.is_some()
                    && (c.open >= self.streams
                        || c.peer.goaway.is_some()
                        || (!self.keep_alive && c.carried >= 1));
                if c.done || full {
                    return true;
                }
                let Some(intended) = self.scheduled(idx, now) else {
                    return true;
                };
                let measured = now >= self.core.measure_start;
                if measured
                    && (self.core.end.is_some_and(|e| now >= e) || !self.core.sh.take_ticket())
                {
                    self.conns[idx].done = true;
                    return true;
                }
                if measured {
                    self.core.rec.started += 1;
                }
                if let Some(t) = intended {
                    // How late the worker got to it is the generator's own lateness.
                    self.core.note_send_lag(measured, t, now);
                }
                self.conns[idx].held = Some(Held {
                    measured,
                    start: now,
                    intended,
                });
            }
            if self.conns[idx].quic.is_none() {
                if let Err(kind) = self.connect(idx, now) {
                    let h = self.conns[idx].held.take().expect("a ticket is held");
                    self.core.count_failure(h.measured, kind, now);
                    let t = now + CONNECT_RETRY_PAUSE;
                    self.conns[idx].retry_at = Some(t);
                    self.core.timers.push(Reverse((t, idx)));
                    return false;
                }
            }
            if !self.open_stream(idx, now) {
                return true;
            }
        }
    }

    /// With `--rate`, the send time of connection `idx`'s next request: `Some(None)` without a
    /// rate, `Some(Some(t))` once it is due, `None` while it is still to come (a timer then
    /// wakes the connection for it).
    fn scheduled(&mut self, idx: usize, now: Instant) -> Option<Option<Instant>> {
        let c = &mut self.conns[idx];
        match self.schedule.next_for(&mut c.due, self.core.start, now) {
            Ok(intended) => Some(intended),
            Err(wake) => {
                if let Some(t) = wake {
                    self.core.timers.push(Reverse((t, idx)));
                }
                None
            }
        }
    }

    /// A new UDP socket and QUIC connection for slot `idx`; the handshake's first flight
    /// leaves with the slot's next flush.
    fn connect(&mut self, idx: usize, now: Instant) -> Result<(), FailureKind> {
        let sh = &*self.core.sh;
        let addr = sh.addr;
        let local = sh.cfg.socket.bind.unwrap_or(if addr.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        });
        let noted = |e: io::Error| sh.note_connect_error(&e);
        let client = self.setup.client_for_connection(now).map_err(|e| {
            sh.note_first_error(|| e);
            FailureKind::Generator
        })?;
        let size = sh
            .cfg
            .socket
            .buffer
            .map_or(udp::SOCKET_BUFFER, |b| b as usize);
        let sock = Sock::open(local, addr, size).map_err(noted)?;
        if self.max_gso == 0 {
            self.max_gso = sock.state.max_gso_segments().clamp(1, MAX_GSO_SEGMENTS);
        }
        let c = &mut self.conns[idx];
        self.core
            .poll
            .registry()
            .register(
                &mut SourceFd(&sock.udp.as_raw_fd()),
                token(idx, c.generation),
                Interest::READABLE,
            )
            .map_err(noted)?;
        let (ch, conn) = self
            .endpoint
            .connect(now, client, addr, &self.setup.server_name)
            .map_err(|e| {
                noted(io::Error::other(format!(
                    "cannot start a QUIC connection: {e}"
                )))
            })?;
        c.sock = Some(sock);
        c.quic = Some(Quic {
            ch,
            conn,
            drained: false,
        });
        c.connected = false;
        c.heard_at = now;
        self.start_early(idx);
        Ok(())
    }

    /// Reads what the slot's socket has, datagram by datagram, into QUIC; each datagram's
    /// events are handled at once, so that a response is timed by the datagram that ended it.
    fn receive(&mut self, idx: usize) {
        let mut taken = 0;
        loop {
            let Some(sock) = self.conns[idx].sock.as_ref() else {
                return;
            };
            let mut chunks = self.rx.chunks_mut(RECV_SLOT);
            let mut bufs: [IoSliceMut<'_>; RECV_BATCH] =
                std::array::from_fn(|_| IoSliceMut::new(chunks.next().expect("RECV_BATCH slots")));
            let got = sock
                .state
                .recv((&sock.udp).into(), &mut bufs, &mut self.metas);
            let n = match got {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.socket_failed(idx, e),
            };
            let now = Instant::now();
            let generation = self.conns[idx].generation;
            for i in 0..n {
                let meta = self.metas[i];
                let stamp = meta
                    .timestamp
                    .map(|t| Stamp::from_nanos(t.as_nanos() as u64));
                let at = self.core.arrival(stamp, now, self.core.start);
                let mut data = BytesMut::from(&self.rx[i * RECV_SLOT..i * RECV_SLOT + meta.len]);
                taken += meta.len;
                while !data.is_empty() {
                    let seg = data.split_to(meta.stride.clamp(1, data.len()));
                    self.datagram(idx, now, (at, stamp.is_some()), &meta, seg);
                    if self.conns[idx].generation != generation {
                        // The connection ended with this datagram.
                        return;
                    }
                }
            }
            if taken >= TURN_BYTES {
                self.core.resume.push((idx, generation, false));
                return;
            }
        }
    }

    /// One datagram from the server, which arrived at `at` (by its receive stamp, when it
    /// has one).
    fn datagram(
        &mut self,
        idx: usize,
        now: Instant,
        at: (Instant, bool),
        meta: &RecvMeta,
        seg: BytesMut,
    ) {
        let ecn = meta
            .ecn
            .and_then(|e| quinn_proto::EcnCodepoint::from_bits(e as u8));
        self.tx.clear();
        match self
            .endpoint
            .handle(now, meta.addr, meta.dst_ip, ecn, seg, &mut self.tx)
        {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                let c = &mut self.conns[idx];
                let Some(q) = c.quic.as_mut().filter(|q| q.ch == ch) else {
                    return;
                };
                q.conn.handle_event(ev);
                c.heard_at = at.0;
                self.events(idx, at.0, at.1);
            }
            Some(DatagramEvent::Response(t)) => {
                // The endpoint's own answer (a stateless reset, a version negotiation).
                if let Some(sock) = self.conns[idx].sock.as_ref() {
                    let _ = sock.send(&t, &self.tx[..t.size]);
                }
            }
            Some(DatagramEvent::NewConnection(_)) | None => {}
        }
    }

    /// Acts on what the connection has to say: to the endpoint (new connection ids, its
    /// end), and to the client (the handshake's end, streams readable, writable, opened),
    /// `at` being when the input that caused it arrived (`stamped`: by a receive stamp).
    fn events(&mut self, idx: usize, at: Instant, stamped: bool) {
        loop {
            let Some(q) = self.conns[idx].quic.as_mut() else {
                return;
            };
            if let Some(ev) = q.conn.poll_endpoint_events() {
                let drained = ev.is_drained();
                if let Some(back) = self.endpoint.handle_event(q.ch, ev) {
                    q.conn.handle_event(back);
                }
                q.drained |= drained;
                continue;
            }
            let Some(ev) = q.conn.poll() else {
                return;
            };
            match ev {
                Event::Connected => self.connected(idx, at),
                Event::ConnectionLost { reason } => return self.lost(idx, &reason),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_uni(idx),
                Event::Stream(StreamEvent::Readable { id }) => {
                    if id.dir() == Dir::Uni {
                        self.read_uni(idx, id);
                    } else {
                        self.read_response(idx, id, at, stamped);
                    }
                }
                Event::Stream(StreamEvent::Writable { id }) => self.write_request(idx, id),
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => self.mark(idx),
                // A STOP_SENDING for a request already sent whole says nothing about its
                // response; a server that gives up on a request resets its response too.
                Event::Stream(_)
                | Event::HandshakeDataReady
                | Event::DatagramReceived
                | Event::DatagramsUnblocked => {}
            }
        }
    }

    /// The handshake is done: HTTP/3's own streams are opened (unless they went in 0-RTT, and
    /// the server took them), and the held request goes.
    fn connected(&mut self, idx: usize, at: Instant) {
        let c = &mut self.conns[idx];
        if c.quic.is_none() {
            return;
        }
        c.connected = true;
        c.connected_at = at;
        self.core.sh.note_connected();
        if self.core.sh.tls_session.get().is_none() {
            let sni = self.core.sh.tls.as_ref().and_then(|t| t.sni());
            if let Some(session) = self.setup.negotiated.session(sni) {
                let _ = self.core.sh.tls_session.set(session);
            }
        }
        if self.conns[idx].early {
            self.early_settled(idx);
        } else {
            self.open_control_streams(idx);
        }
        self.mark(idx);
    }

    /// Opens HTTP/3's three unidirectional streams (control, QPACK encoder and decoder) and
    /// writes what they start with; false when the server allows fewer (the connection is
    /// then closed for it).
    fn open_control_streams(&mut self, idx: usize) -> bool {
        let Some(q) = self.conns[idx].quic.as_mut() else {
            return false;
        };
        for bytes in h3wire::control::client_streams(MAX_FIELD_SECTION) {
            // The server must allow these three (RFC 9114, section 6.2); each is a few bytes,
            // within any stream's first window.
            let Some(id) = q.conn.streams().open(Dir::Uni) else {
                self.protocol_error(
                    idx,
                    code::H3_STREAM_CREATION_ERROR,
                    "the server allows the client fewer than the three unidirectional streams HTTP/3 needs",
                );
                return false;
            };
            let _ = q.conn.send_stream(id).write(&bytes);
        }
        true
    }

    /// Takes the server's new unidirectional streams.
    fn accept_uni(&mut self, idx: usize) {
        loop {
            let c = &mut self.conns[idx];
            let Some(q) = c.quic.as_mut() else {
                return;
            };
            let Some(id) = q.conn.streams().accept(Dir::Uni) else {
                return;
            };
            c.uni.push((id, h3wire::control::UniReader::default()));
            self.read_uni(idx, id);
        }
    }

    /// Reads one of the server's unidirectional streams (its control stream, QPACK's, or
    /// one HTTP/3 does not know, which is dropped).
    fn read_uni(&mut self, idx: usize, id: StreamId) {
        let conn::Conn {
            quic, uni, peer, ..
        } = &mut self.conns[idx];
        let (Some(q), Some(r)) = (quic.as_mut(), uni.iter_mut().find(|(u, _)| *u == id)) else {
            return;
        };
        let mut recv = q.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut failed = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if let Err(e) = r.1.feed(peer, &chunk.bytes) {
                        failed = Some(e);
                        break;
                    }
                }
                Ok(None) | Err(ReadError::Reset(_)) => {
                    failed = r.1.finish().err();
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        if let Some(e) = failed {
            return self.protocol_error(idx, e.code(), &e.to_string());
        }
        if self.conns[idx].peer.goaway.is_some() {
            self.mark(idx);
        }
    }

    /// The connection is over (closed by the server, failed, or given up on): every request
    /// on it (and a ticket held for it) fails with `kind`, and the slot connects again when
    /// it next can.
    fn conn_failed(&mut self, idx: usize, kind: FailureKind) {
        let now = Instant::now();
        for k in 0..self.conns[idx].slots.len() {
            if self.conns[idx].slots[k].id.is_some() {
                self.fail_stream(idx, k, kind, now);
            }
        }
        if let Some(h) = self.conns[idx].held.take() {
            self.core.count_failure(h.measured, kind, now);
        }
        self.drop_conn(idx);
        if matches!(kind, FailureKind::Connect | FailureKind::Generator) {
            // A target that refuses connections must not turn the slot into a spin.
            let t = now + CONNECT_RETRY_PAUSE;
            self.conns[idx].retry_at = Some(t);
            self.core.timers.push(Reverse((t, idx)));
        }
        self.mark(idx);
    }

    /// Closes the connection as a client that is done with it (HTTP/3's NO_ERROR), sends the
    /// close, and forgets it: nothing waits for the server's answer.
    fn close(&mut self, idx: usize) {
        if let Some(q) = self.conns[idx].quic.as_mut() {
            if !q.conn.is_closed() {
                let no_error = VarInt::from_u64(code::H3_NO_ERROR).expect("small");
                q.conn.close(Instant::now(), no_error, Bytes::new());
            }
        }
        self.flush(idx);
        self.drop_conn(idx);
    }

    /// Forgets the slot's connection, freeing its handle at the endpoint, and its socket.
    fn drop_conn(&mut self, idx: usize) {
        if let Some(q) = self.conns[idx].quic.as_ref() {
            let st = q.conn.stats();
            self.tally[0] += st.path.sent_packets;
            self.tally[1] += st.path.lost_packets;
            self.tally[3] += st.frame_rx.stream_data_blocked + st.frame_rx.data_blocked;
        }
        if let Some(sock) = self.conns[idx].sock.as_ref() {
            self.tally[2] += sock.receive_drops();
        }
        if let Some(q) = self.conns[idx].quic.take() {
            if !q.drained {
                self.endpoint.handle_event(q.ch, EndpointEvent::drained());
            }
        }
        self.conns[idx].drop_connection();
    }

    fn finish(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if !c.finished {
            c.finished = true;
            self.close(idx);
            self.core.active -= 1;
        }
    }

    /// Sends what the connection has to send, until QUIC has no more or the socket is full,
    /// then sets the connection's timer.
    fn flush(&mut self, idx: usize) {
        let now = Instant::now();
        let c = &mut self.conns[idx];
        let (Some(sock), Some(q)) = (c.sock.as_ref(), c.quic.as_mut()) else {
            return;
        };
        let mut failed = None;
        if let Some((t, bytes)) = c.blocked.take() {
            match sock.send(&t, &bytes) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.blocked = Some((t, bytes));
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => failed = Some(e),
                _ => {}
            }
        }
        while failed.is_none() {
            self.tx.clear();
            let Some(t) = q.conn.poll_transmit(now, self.max_gso.max(1), &mut self.tx) else {
                break;
            };
            match sock.send(&t, &self.tx[..t.size]) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let bytes = self.tx[..t.size].to_vec();
                    c.blocked = Some((t, bytes));
                    if !c.want_write {
                        c.want_write = true;
                        let _ = self.core.poll.registry().reregister(
                            &mut SourceFd(&sock.udp.as_raw_fd()),
                            token(idx, c.generation),
                            Interest::READABLE | Interest::WRITABLE,
                        );
                    }
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => failed = Some(e),
                // Anything else (a path MTU probe too large, say) loses these datagrams,
                // which QUIC's loss recovery sends again as it would after any loss.
                Err(_) => {}
            }
        }
        if let Some(t) = q.conn.poll_timeout() {
            if c.timer_at.is_none_or(|a| t < a) {
                c.timer_at = Some(t);
                self.core.timers.push(Reverse((t, idx)));
            }
        }
        if let Some(e) = failed {
            self.socket_failed(idx, e);
        }
    }
}
