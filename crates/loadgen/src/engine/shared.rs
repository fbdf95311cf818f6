//! What all the workers of a run share, and what they tell the coordinator through it.
//! Touched per request: only `issued` (a ticket) and, once, the document length and server
//! name.

use crate::config::{ConfigError, HttpVersion, LoadConfig};
use crate::http::build_request;
use crate::sock;
use crate::stats::{FailureKind, TlsSession};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Connect failures with no connection ever established after which the target is declared
/// unreachable (ab gives up after 10 as well).
pub(super) const REFUSED_LIMIT: u64 = 10;

/// A count or length not known (yet).
pub(super) const UNKNOWN: u64 = u64::MAX;

pub(super) struct Shared {
    pub(super) cfg: LoadConfig,
    pub(super) addr: SocketAddr,
    pub(super) request: Box<[u8]>,
    /// With `--pipeline N`: the request N times over, written as one batch (else empty).
    pub(super) pipelined: Box<[u8]>,
    /// Requests of one load (`-n`), or [`UNKNOWN`] for a load bounded by time.
    pub(super) per_load: u64,
    /// Requests to issue in all: `per_load`, raised by another `per_load` each time the
    /// measured part has not yet lasted the load's `min_duration` when they run out.
    limit: AtomicU64,
    /// When `min_duration` was found reached and tickets stopped: the measured part lasts at
    /// least until then, even where its last response was stamped by the kernel a little
    /// before the worker read it and asked.
    pub(super) enough_at: OnceLock<Instant>,
    pub(super) issued: AtomicU64,
    pub(super) doc_len: AtomicU64,
    pub(super) server: OnceLock<String>,
    /// Over TLS: what the handshake of the connection that set `server` settled on.
    pub(super) tls_session: OnceLock<TlsSession>,
    pub(super) completed: AtomicU64,
    pub(super) stop: AtomicBool,
    pub(super) connected_once: AtomicBool,
    pub(super) connect_failures: AtomicU64,
    pub(super) ports_exhausted: AtomicU64,
    pub(super) fds_exhausted: AtomicU64,
    pub(super) first_connect_error: Mutex<Option<String>>,
    /// The first connect error was a failed TLS handshake.
    pub(super) tls_failed: AtomicBool,
    /// The first connect error was a server that does not speak HTTP/2.
    pub(super) h2_failed: AtomicBool,
    /// HTTP/2 connections the client ended for the server's errors, and the first one's
    /// reason ([`crate::Note::Http2Errors`]).
    pub(super) h2_errors: AtomicU64,
    pub(super) first_h2_error: OnceLock<String>,
    /// `https://`: what every connection's TLS is made from.
    pub(super) tls: Option<crate::tls::Tls>,
    /// HTTP/2: the request's header blocks.
    pub(super) h2: Option<crate::h2::Blocks>,
    /// HTTP/3: the QUIC client configuration and the request's bytes.
    pub(super) h3: Option<crate::h3::Setup>,
    /// HTTP/3: what QUIC's accounting said of the workers' connections, summed as each ended:
    /// packets sent, packets lost, datagrams the receive buffers dropped, window stalls.
    pub(super) quic: [AtomicU64; 4],
    /// HTTP/3 with `--0rtt`: connections made, those that sent requests in 0-RTT, those whose
    /// early data the server accepted and rejected, requests sent again after a rejection.
    pub(super) zero_rtt: [AtomicU64; 5],
    /// Holds receive stamping on for the run; `None` without stamps (asked for or possible).
    pub(super) stamps: Option<sock::StampKeeper>,
    /// This kernel drops body bytes nobody looks at without copying them
    /// ([`sock::discard_works`]).
    pub(super) discard: bool,
    /// Set by the coordinator before the workers are released.
    pub(super) start: OnceLock<Instant>,
    pub(super) measure_start: OnceLock<Instant>,
}

impl Shared {
    /// What one write of a request carries: the request, or `batch` of them pipelined.
    pub(super) fn request_bytes(&self, batch: u32) -> &[u8] {
        if batch > 1 {
            &self.pipelined[..batch as usize * self.request.len()]
        } else {
            &self.request
        }
    }

    /// Everything the workers of a run of `cfg` against `addr` start from: the request in
    /// its forms, TLS, receive stamps.
    pub(super) fn new(cfg: LoadConfig, addr: SocketAddr) -> Result<Shared, ConfigError> {
        let http2 = cfg.load.version == HttpVersion::Http2;
        let tls = if cfg.target.https {
            let mut tls =
                crate::tls::Tls::new(&cfg.target.host, &cfg.tls).map_err(ConfigError::Option)?;
            if http2 {
                tls.offer_h2();
            }
            Some(tls)
        } else {
            None
        };
        let h2 = http2.then(|| crate::h2::Blocks::new(&crate::h2::request_fields(&cfg)));
        let h3 = match (&tls, cfg.load.version) {
            (Some(tls), HttpVersion::Http3) => {
                Some(crate::h3::Setup::new(&cfg, tls).map_err(ConfigError::Option)?)
            }
            _ => None,
        };
        let request = build_request(&cfg).into_boxed_slice();
        let pipelined = if cfg.pipeline > 1 {
            request.repeat(cfg.pipeline as usize).into_boxed_slice()
        } else {
            Box::default()
        };
        let limit = cfg.load.requests.unwrap_or(UNKNOWN);
        Ok(Shared {
            addr,
            request,
            pipelined,
            per_load: limit,
            limit: AtomicU64::new(limit),
            enough_at: OnceLock::new(),
            issued: AtomicU64::new(0),
            doc_len: AtomicU64::new(UNKNOWN),
            server: OnceLock::new(),
            tls_session: OnceLock::new(),
            completed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            connected_once: AtomicBool::new(false),
            connect_failures: AtomicU64::new(0),
            ports_exhausted: AtomicU64::new(0),
            fds_exhausted: AtomicU64::new(0),
            first_connect_error: Mutex::new(None),
            tls_failed: AtomicBool::new(false),
            h2_failed: AtomicBool::new(false),
            h2_errors: AtomicU64::new(0),
            first_h2_error: OnceLock::new(),
            tls,
            h2,
            h3,
            quic: Default::default(),
            zero_rtt: Default::default(),
            stamps: if cfg.load.rx_stamps {
                sock::StampKeeper::start()
            } else {
                None
            },
            discard: sock::discard_works(),
            start: OnceLock::new(),
            measure_start: OnceLock::new(),
            cfg,
        })
    }

    /// Keeps what a connection's TLS handshake settled on, once per run, for the report.
    pub(super) fn note_tls(&self, conn: Option<&crate::tls::TlsConn>) {
        if self.tls_session.get().is_some() {
            return;
        }
        let (Some(conn), Some(tls)) = (conn, self.tls.as_ref()) else {
            return;
        };
        if let Some(session) = conn.session(tls.sni()) {
            let _ = self.tls_session.set(session);
        }
    }

    /// An HTTP/2 connection was ended for the server's error `e`.
    pub(super) fn note_h2_error(&self, e: crate::h2::ConnError) {
        self.h2_errors.fetch_add(1, Relaxed);
        if self.first_h2_error.get().is_none() {
            let _ = self.first_h2_error.set(e.to_string());
        }
    }

    /// Keeps `error` as the run's first error, unless there is one already.
    pub(super) fn note_first_error(&self, error: impl FnOnce() -> String) {
        let mut first = self
            .first_connect_error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(error);
    }

    pub(super) fn trigger_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// The first connection was established (its first write went through).
    #[inline]
    pub(super) fn note_connected(&self) {
        if !self.connected_once.load(Relaxed) {
            self.connected_once.store(true, Relaxed);
        }
    }

    /// Takes a ticket for one measured request; false once `-n` requests have been issued
    /// (as many times over as `min_duration` asks).
    #[inline]
    pub(super) fn take_ticket(&self) -> bool {
        if self.per_load == UNKNOWN {
            return true;
        }
        let Some(min) = self.cfg.load.min_duration else {
            return self.issued.fetch_add(1, Relaxed) < self.per_load;
        };
        // Only tickets actually handed out count, so that the total is a whole number of
        // loads: compare-and-swap rather than an increment that may overshoot.
        let mut n = self.issued.load(Relaxed);
        loop {
            let limit = self.limit.load(Relaxed);
            if n >= limit {
                let measuring_since = self.measure_start.get().copied();
                if measuring_since.is_some_and(|t| t.elapsed() >= min) {
                    let _ = self.enough_at.get_or_init(Instant::now);
                    return false;
                }
                let _ = self
                    .limit
                    .compare_exchange(limit, limit + self.per_load, Relaxed, Relaxed);
                continue;
            }
            match self
                .issued
                .compare_exchange_weak(n, n + 1, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
    }

    /// How many requests the load issues in all, as far as known now.
    pub(super) fn limit(&self) -> u64 {
        self.limit.load(Relaxed)
    }

    /// Counts a failed connection attempt and says whose failure it was: the server's
    /// (refused, unreachable) or the generator's own (see [`crate::limits::LocalLimit`]).
    pub(super) fn note_connect_error(&self, e: &io::Error) -> FailureKind {
        let tls = crate::tls::handshake_error(e).is_some();
        if let Some(limit) = crate::limits::local_limit(e) {
            let counter = match limit {
                crate::limits::LocalLimit::FileDescriptors => &self.fds_exhausted,
                crate::limits::LocalLimit::Ports => &self.ports_exhausted,
            };
            counter.fetch_add(1, Relaxed);
            let local = self.fds_exhausted.load(Relaxed) + self.ports_exhausted.load(Relaxed);
            if local >= REFUSED_LIMIT && !self.connected_once.load(Relaxed) {
                // Not one connection could be made: nothing would be measured but the
                // generator.
                self.trigger_stop();
            }
            return FailureKind::Generator;
        }
        let n = self.connect_failures.fetch_add(1, Relaxed) + 1;
        if n == 1 {
            if let Ok(mut first) = self.first_connect_error.lock() {
                if first.is_none() {
                    *first = Some(e.to_string());
                    self.tls_failed.store(tls, Relaxed);
                    let not_h2 = e
                        .get_ref()
                        .is_some_and(|i| i.downcast_ref::<crate::h2::NotHttp2>().is_some());
                    self.h2_failed.store(not_h2, Relaxed);
                }
            }
        }
        if n >= REFUSED_LIMIT && !self.connected_once.load(Relaxed) {
            self.trigger_stop();
        }
        FailureKind::Connect
    }
}
