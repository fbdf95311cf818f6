//! 0-RTT (`--0rtt`): a new connection that resumes a session whose server allowed early data
//! opens HTTP/3's streams and sends its requests with the handshake's first flight, without
//! waiting a round trip for the handshake. Once the handshake is done, the server has either
//! taken them (0-RTT accepted) or refused them (rejected: QUIC then forgets every stream the
//! client opened), and the refused requests go again on new streams, as they would have on a
//! connection without 0-RTT. Their times still run from when they began.

use super::H3Worker;
use crate::stats::FailureKind;
use quinn_proto::Dir;
use std::time::Instant;

/// What 0-RTT did over a worker's connections: connections made, those that sent requests in
/// 0-RTT, of them those whose early data the server accepted and those it rejected, and the
/// requests sent again after a rejection.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct EarlyTally {
    pub(super) connections: u64,
    pub(super) sent: u64,
    pub(super) accepted: u64,
    pub(super) rejected: u64,
    pub(super) resent: u64,
}

impl EarlyTally {
    pub(super) fn as_array(self) -> [u64; 5] {
        [
            self.connections,
            self.sent,
            self.accepted,
            self.rejected,
            self.resent,
        ]
    }
}

impl H3Worker {
    /// The connection just made sends in 0-RTT when the run allows it and its session's
    /// resumption gave it early keys: HTTP/3's own streams open at once.
    pub(super) fn start_early(&mut self, idx: usize) {
        self.early.connections += 1;
        let c = &mut self.conns[idx];
        c.early = self.setup.zero_rtt && c.quic.as_ref().is_some_and(|q| q.conn.has_0rtt());
        if c.early {
            self.early.sent += 1;
            self.open_control_streams(idx);
        }
    }

    /// The handshake of a connection that sent in 0-RTT is done: its first request's Connect
    /// is the handshake's time, and when the server refused the early data, HTTP/3's streams
    /// and every request on the connection are opened and written again.
    pub(super) fn early_settled(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(q) = c.quic.as_ref() else {
            return;
        };
        let accepted = q.conn.accepted_0rtt();
        let mut open: Vec<usize> = (0..c.slots.len())
            .filter(|&k| c.slots[k].id.is_some())
            .collect();
        // In the order they were opened, which is the order of their stream ids.
        open.sort_by_key(|&k| c.slots[k].id.map(u64::from));
        if let Some(&first) = open
            .first()
            .filter(|&&k| c.slots[k].req.first_byte.is_none())
        {
            let s = &mut c.slots[first];
            s.req.connect = c.connected_at.saturating_duration_since(s.req.start);
        }
        if accepted {
            self.early.accepted += 1;
            return;
        }
        self.early.rejected += 1;
        if !self.open_control_streams(idx) {
            return;
        }
        for k in open {
            let c = &mut self.conns[idx];
            let Some(q) = c.quic.as_mut() else {
                return;
            };
            let Some(id) = q.conn.streams().open(Dir::Bi) else {
                // The server's real limits allow fewer streams than its ticket promised.
                self.fail_stream(idx, k, FailureKind::Write, Instant::now());
                continue;
            };
            let want_server = c.slots[k].req.want_server;
            let reader = self.response_reader(want_server);
            let s = &mut self.conns[idx].slots[k];
            s.id = Some(id);
            s.reader = reader;
            s.sent = 0;
            s.fin = false;
            s.wire_len = 0;
            s.status = None;
            self.early.resent += 1;
            self.write_request(idx, id);
        }
    }
}
