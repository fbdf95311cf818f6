//! How an HTTP/3 connection or stream ends other than well: the connection lost (before its
//! handshake finished, a connect failure with a reason a person can act on), a handshake
//! that never finished, a socket the kernel failed, a server that broke HTTP/3's rules.

use super::H3Worker;
use crate::stats::FailureKind;
use bytes::Bytes;
use quinn_proto::{ConnectionError, VarInt};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// A QUIC connection's end, told as a reason a person can act on.
fn lost_reason(addr: SocketAddr, reason: &ConnectionError) -> io::Error {
    let crypto = |code: u64| (0x100..0x200).contains(&code);
    let alert = match reason {
        ConnectionError::TransportError(e) => Some(u64::from(e.code)),
        ConnectionError::ConnectionClosed(c) => Some(u64::from(c.error_code)),
        _ => None,
    };
    match alert {
        // TLS alert 120, no_application_protocol.
        Some(0x178) => io::Error::other(crate::tls::HandshakeError(format!(
            "the server refused HTTP/3 (ALPN \"h3\") in the QUIC handshake ({reason})"
        ))),
        Some(c) if crypto(c) => io::Error::other(crate::tls::HandshakeError(format!(
            "the QUIC handshake with {addr} failed: {reason}"
        ))),
        _ => io::Error::other(format!("QUIC connection to {addr}: {reason}")),
    }
}

impl H3Worker {
    /// The connection ended: before its handshake finished, a failed connect with its
    /// reason; after, every stream still open on it fails.
    pub(super) fn lost(&mut self, idx: usize, reason: &ConnectionError) {
        if self.conns[idx].connected {
            self.conn_failed(idx, FailureKind::Receive);
        } else {
            let e = lost_reason(self.core.sh.addr, reason);
            let kind = self.core.sh.note_connect_error(&e);
            self.conn_failed(idx, kind);
        }
    }

    /// The handshake has taken longer than the request timeout: the server does not answer
    /// QUIC there. With no connection ever made, the run ends with that reason.
    pub(super) fn handshake_timed_out(&mut self, idx: usize) {
        let sh = &*self.core.sh;
        let e = io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no QUIC handshake with {} completed within {:?}: does the server speak HTTP/3 on UDP port {}?",
                sh.addr,
                self.core.timeout,
                sh.addr.port()
            ),
        );
        let kind = sh.note_connect_error(&e);
        if !sh.connected_once.load(Relaxed) {
            sh.trigger_stop();
        }
        self.conn_failed(idx, kind);
    }

    /// The socket failed: a closed port (the kernel's ICMP answer) is a refused connect.
    pub(super) fn socket_failed(&mut self, idx: usize, e: io::Error) {
        if self.conns[idx].connected {
            return self.conn_failed(idx, FailureKind::Receive);
        }
        let sh = &*self.core.sh;
        let e = if e.kind() == io::ErrorKind::ConnectionRefused {
            io::Error::new(
                e.kind(),
                format!(
                    "nothing answered on UDP port {} (connection refused): does the server speak HTTP/3 there?",
                    sh.addr.port()
                ),
            )
        } else {
            e
        };
        let kind = sh.note_connect_error(&e);
        self.conn_failed(idx, kind);
    }

    /// The server broke HTTP/3's rules: the connection is closed with `error` and counted.
    pub(super) fn protocol_error(&mut self, idx: usize, error: u64, why: &str) {
        let sh = &*self.core.sh;
        if sh.first_h2_error.get().is_none() {
            let _ = sh
                .first_h2_error
                .set(format!("HTTP/3 error {error:#x}: {why}"));
        }
        sh.h2_errors.fetch_add(1, Relaxed);
        if let Some(q) = self.conns[idx].quic.as_mut() {
            let code = VarInt::from_u64(error).unwrap_or(VarInt::from_u32(0x101));
            q.conn
                .close(Instant::now(), code, Bytes::copy_from_slice(why.as_bytes()));
        }
        self.flush(idx);
        self.conn_failed(idx, FailureKind::Exception);
    }
}
