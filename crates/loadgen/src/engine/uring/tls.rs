//! An io_uring connection's TLS: the request queued in its rustls session, the records sent
//! from its own buffer (a send that posts its completion, one in flight at a time), and the
//! records that came, turned into the plaintext the slots read.

use super::super::slot::H1Slots;
use super::conn::{send_entry, user_data, OP_TLS_SEND};
use super::{sock, Slots, State};
use crate::stats::FailureKind;
use std::time::Instant;

impl Slots {
    /// Queues the slot's request in its TLS session and stages the records that are ready: on
    /// a new connection the ClientHello (the request follows the handshake's last flight, and
    /// is written when that goes: see [`Slots::tls_data`]), else the request's records.
    pub(super) fn send_tls(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let request = self.core.sh.request_bytes(c.slot.batch);
        let Some(tls) = c.tls.as_mut() else {
            return;
        };
        if tls.session.queue_plaintext(request).is_err() {
            return self.fail(idx, FailureKind::Write);
        }
        if !tls.session.handshaking() {
            c.unsent = true;
            self.unsent.push(idx);
        }
        self.flush_tls(idx);
    }

    /// Stages a send of the records the slot's TLS session has waiting, unless one is in
    /// flight (its completion calls this again).
    pub(super) fn flush_tls(&mut self, idx: usize) {
        let Some(tls) = self.conns[idx].tls.as_mut() else {
            return;
        };
        if tls.sending {
            return;
        }
        tls.out.clear();
        tls.out_at = 0;
        tls.session.take_records(&mut tls.out);
        if !tls.out.is_empty() {
            self.stage_out(idx);
        }
    }

    /// Stages a send of what is left of the slot's records; its completion hands them back.
    pub(super) fn stage_out(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let (Some(sock), Some(tls)) = (c.sock.as_ref(), c.tls.as_mut()) else {
            return;
        };
        let data = user_data(OP_TLS_SEND, idx, c.generation);
        let send = send_entry(sock, &tls.out[tls.out_at..], data);
        tls.sending = true;
        self.staged.push(send);
    }

    /// Records that came on the slot's TLS connection (stamped `stamp`, seen at `now`): the
    /// plaintext they carry goes on as a plain connection's bytes do; the handshake's end
    /// sends its last flight with the request queued behind it, which is written then.
    pub(super) fn tls_data(
        &mut self,
        idx: usize,
        records: &[u8],
        stamp: Option<sock::Stamp>,
        now: Instant,
        real: sock::Stamp,
    ) {
        let c = &mut self.conns[idx];
        let Some(tls) = c.tls.as_mut() else {
            return;
        };
        let handshaking = tls.session.handshaking();
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        let absorbed = tls.session.absorb(records, &mut plain);
        if handshaking && !tls.session.handshaking() {
            // Connected as ab counts it: the handshake is done.
            c.connected = true;
            self.core.sh.note_connected();
            if c.slot.state == State::Reading {
                c.unsent = true;
                self.unsent.push(idx);
            }
        }
        match absorbed {
            Err(e) if handshaking => {
                let kind = self.core.sh.note_connect_error(&e);
                self.fail(idx, kind);
            }
            Err(_) => {
                if !plain.is_empty() {
                    self.data(idx, &plain, stamp, now, real);
                }
                self.ended(idx, false);
            }
            Ok(eof) => {
                self.flush_tls(idx);
                if !plain.is_empty() {
                    self.data(idx, &plain, stamp, now, real);
                }
                if eof && self.conns[idx].sock.is_some() {
                    // The server's close_notify ends the stream as its FIN does.
                    self.ended(idx, true);
                }
            }
        }
        self.plain = plain;
    }

    /// The slot's socket ends: TLS records still being sent are kept until the kernel has
    /// done with them. (Its session stays until the next connection's replaces it: the
    /// response that ended the connection is recorded with it.)
    pub(super) fn retire_out(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(tls) = c.tls.as_mut() else {
            return;
        };
        if tls.sending {
            tls.sending = false;
            let data = user_data(OP_TLS_SEND, idx, c.generation);
            self.retired.push((data, std::mem::take(&mut tls.out)));
        }
    }
}
