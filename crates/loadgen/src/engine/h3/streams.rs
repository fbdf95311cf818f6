//! A request's stream on an HTTP/3 connection: opened for a held ticket, its request
//! written as far as QUIC's flow control lets it, its response read and checked as it
//! arrives (a head that repeats the last one decoded is taken from the worker's
//! [`h3wire::message::Heads`]), and its slot freed with a sample or a failure.

use super::conn::{self, Stream};
use super::H3Worker;
use crate::engine::worker::{Request, Response};
use crate::h3::{MAX_FIELD, MAX_FIELD_SECTION};
use crate::stats::FailureKind;
use h3wire::message::{Event as Msg, ResponseReader};
use quinn_proto::{Dir, ReadError, StreamId, VarInt, WriteError};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

impl H3Worker {
    /// Opens a stream for the held ticket and writes its request; false when the connection
    /// cannot take one now.
    pub(super) fn open_stream(&mut self, idx: usize, now: Instant) -> bool {
        let c = &mut self.conns[idx];
        let (Some(q), Some(h)) = (c.quic.as_mut(), c.held) else {
            return false;
        };
        if !c.connected && !c.early {
            return false;
        }
        let Some(id) = q.conn.streams().open(Dir::Bi) else {
            return false;
        };
        c.held = None;
        let sh = &*self.core.sh;
        let want_server = sh.server.get().is_none();
        let mut req = Request::new(h.start, h.intended, h.measured, want_server);
        if c.carried == 0 {
            // In 0-RTT the first request leaves before the handshake is done; its Connect is
            // set once it is.
            req.connect = c.connected_at.saturating_duration_since(h.start);
        }
        let reader = self.response_reader(want_server);
        let c = &mut self.conns[idx];
        let k = c
            .slots
            .iter()
            .position(|s| s.id.is_none())
            .expect("a free slot while fewer than `streams` are open");
        c.slots[k] = Stream {
            id: Some(id),
            req,
            reader,
            deadline: h.start + self.core.timeout,
            wire_len: 0,
            sent: 0,
            fin: false,
            status: None,
        };
        c.open += 1;
        c.carried += 1;
        let _ = now;
        self.write_request(idx, id);
        true
    }

    /// A reader of a response to this run's request (`want_server`: keeping its Server field).
    pub(super) fn response_reader(&self, want_server: bool) -> ResponseReader {
        let mut reader = ResponseReader::new(MAX_FIELD_SECTION, MAX_FIELD);
        if self.core.sh.cfg.load.method.head_only() {
            reader = reader.for_head_request();
        }
        if want_server {
            reader = reader.keeping_server();
        }
        reader
    }

    /// Writes what is left of stream `id`'s request as far as QUIC's flow control lets it,
    /// then ends the stream.
    pub(super) fn write_request(&mut self, idx: usize, id: StreamId) {
        let conn::Conn { slots, quic, .. } = &mut self.conns[idx];
        let (Some(q), Some(k)) = (quic.as_mut(), slots.iter().position(|s| s.id == Some(id)))
        else {
            return;
        };
        let s = &mut slots[k];
        let bytes = &self.setup.request;
        while !s.fin {
            let mut stream = q.conn.send_stream(id);
            if s.sent < bytes.len() {
                match stream.write(&bytes[s.sent..]) {
                    Ok(n) => s.sent += n,
                    Err(WriteError::Blocked) => return,
                    Err(_) => {
                        return self.fail_stream(idx, k, FailureKind::Write, Instant::now());
                    }
                }
            } else {
                if stream.finish().is_err() {
                    return self.fail_stream(idx, k, FailureKind::Write, Instant::now());
                }
                s.fin = true;
                s.req.written = Instant::now();
            }
        }
    }

    /// Reads a request stream's response as far as it has arrived, `at`.
    pub(super) fn read_response(&mut self, idx: usize, id: StreamId, at: Instant, stamped: bool) {
        let conn::Conn { quic, slots, .. } = &mut self.conns[idx];
        let (Some(q), Some(k)) = (quic.as_mut(), slots.iter().position(|s| s.id == Some(id)))
        else {
            return;
        };
        let s = &mut slots[k];
        let mut recv = q.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let now = Instant::now();
        // `None`: more to come; `Some(Ok)`: the stream ended; `Some(Err)`: it failed.
        let mut outcome: Option<Result<(), (FailureKind, Option<h3wire::Error>)>> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let at = at.max(s.req.written);
                    s.wire_len += chunk.bytes.len() as u64;
                    s.req.first_byte.get_or_insert(at);
                    s.req.last_data = at;
                    s.req.read_at = now;
                    s.req.stamped = stamped;
                    let mut input: &[u8] = &chunk.bytes;
                    loop {
                        match s.reader.next_remembering(&mut input, &mut self.heads) {
                            Ok(Some(Msg::Head { status, .. })) => s.status = Some(status),
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => {
                                outcome = Some(Err((FailureKind::Exception, Some(e))));
                                break;
                            }
                        }
                    }
                    if outcome.is_some() {
                        break;
                    }
                }
                Ok(None) => {
                    outcome = Some(
                        s.reader
                            .finish()
                            .map_err(|e| (FailureKind::Exception, Some(e))),
                    );
                    break;
                }
                Err(ReadError::Reset(_)) => {
                    outcome = Some(Err((FailureKind::Reset, None)));
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        match outcome {
            None => {}
            Some(Ok(())) => self.complete(idx, k),
            Some(Err((kind, error))) => {
                if let Some(e) = error {
                    let sh = &*self.core.sh;
                    sh.h2_errors.fetch_add(1, Relaxed);
                    if sh.first_h2_error.get().is_none() {
                        let _ = sh.first_h2_error.set(e.to_string());
                    }
                    if let Some(q) = self.conns[idx].quic.as_mut() {
                        let code = VarInt::from_u64(e.code()).unwrap_or(VarInt::from_u32(0x10e));
                        let _ = q.conn.recv_stream(id).stop(code);
                    }
                }
                self.fail_stream(idx, k, kind, now);
            }
        }
    }

    /// Records a stream whose response is complete, and frees its slot.
    pub(super) fn complete(&mut self, idx: usize, k: usize) {
        self.mark(idx);
        let c = &mut self.conns[idx];
        let mut s = std::mem::replace(&mut c.slots[k], Stream::free(self.core.start));
        c.open -= 1;
        let req = s.req;
        let done = req.last_data;
        self.core
            .napper
            .observe(done.saturating_duration_since(req.start), req.read_at);
        let sh = &*self.core.sh;
        if req.want_server {
            let _ = sh.server.set(s.reader.take_server().unwrap_or_default());
        }
        let r = Response {
            ok: s.status.is_some_and(|st| (200..300).contains(&st)),
            wire_len: s.wire_len,
            body_len: s.reader.body_len(),
            dropped: 0,
            sent_len: self.setup.request.len() as u64,
            keep_alive: self.keep_alive,
            written: req.written,
        };
        self.core.complete(&req, done, &r);
    }

    /// A stream ended without its response: counted by kind, its slot freed.
    pub(super) fn fail_stream(&mut self, idx: usize, k: usize, kind: FailureKind, now: Instant) {
        let c = &mut self.conns[idx];
        let s = std::mem::replace(&mut c.slots[k], Stream::free(self.core.start));
        c.open -= 1;
        self.mark(idx);
        self.core.count_failure(s.req.measured, kind, now);
    }
}
