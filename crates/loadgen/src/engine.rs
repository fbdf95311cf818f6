//! The engine: worker threads, connections, requests and their timings.
//!
//! Layout (the hot path is everything inside one worker):
//! - one OS thread per worker, optionally pinned to a CPU, each running its own epoll loop (mio)
//!   over its share of the connections: a readiness event goes straight to the connection's
//!   state machine, with no task, waker or lock between the socket and the recorder;
//! - reads go into one buffer per worker, so a connection's own memory is its socket and its
//!   parser: 10,000 connections stay small; body bytes nothing looks at (all of a
//!   Content-Length or close-delimited body after the first read, large chunks) never reach
//!   it: the kernel drops them and says how many there were ([`crate::sock::discard`]);
//! - the coordinating thread hands out nothing per request: workers take request tickets from
//!   one atomic counter (exact `-n` with no straggling tail) and report progress in batches.
//!
//! System calls per request are what a client cannot avoid: keep-alive, one `send` and one
//! `recvmsg` (plus a share of one `epoll_wait`, and of a `nanosleep` when the worker naps); a
//! new connection adds `socket`, `connect`, the `setsockopt` that asks for receive stamps, one
//! `epoll_ctl` and `close`, and the `recv` that sees the server's FIN when the poller did not
//! already report it together with the response. The request is written
//! right after `connect` returns (on loopback the handshake has completed by then); only when
//! that write cannot proceed does the connection wait for writability.
//!
//! Timings follow ab.c: `start` is taken before connecting (or, on a reused keep-alive
//! connection, when the next request starts, so Connect is 0), `connect` when the
//! connection is known to be established (its first write goes through), `written` after the
//! request's last byte is written, `first byte` when the response's first data arrived and
//! `done` when the data that completed it arrived. "Arrived" is the kernel's receive stamp
//! ([`crate::sock`]): the generator's own delay in getting to a socket (other connections'
//! work, a nap while coalescing wake-ups) is not the server's and is kept apart as the read
//! delay. Without stamps (`rx_stamps` off, or a read the kernel did not stamp), these are the
//! instants the reads returned, as in ab.
//!
//! Once a worker has read everything there is, it either blocks in `epoll_wait` or, when
//! [`crate::coalesce`] says so, sleeps a bounded time on its own timer, so that the server's
//! CPU is not made to wake it for every response.

use crate::coalesce::Napper;
use crate::config::{Coalesce, ConfigError, HttpVersion, LoadConfig};
use crate::cpu;
use crate::http::{build_request, Feed, ResponseParser};
use crate::sock::{self, Recv};
use crate::stats::{
    FailureKind, Measurement, Note, Recorder, RunSettings, Sample, ServerInfo, StopReason,
};
use crate::timeline::Timeline;
use crate::timer::Alarm;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Size of each worker's read buffer.
const READ_BUF: usize = 64 * 1024;
/// Connect failures with no connection ever established after which the target is declared
/// unreachable (ab gives up after 10 as well).
const REFUSED_LIMIT: u64 = 10;
/// Completions a worker counts locally before publishing them for the progress display.
const PROGRESS_BATCH: u64 = 32;
/// How long a closed-mode connection waits for the server's FIN after a complete response.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// Pause before a connection slot tries again after its connect failed.
const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(1);
/// Longest a worker sleeps in `epoll_wait` before it looks at the shared stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// Readiness events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// Bytes one connection may read or drop before the others get their turn (1 MiB, 16 full
/// buffers): a large body that keeps arriving must not hold up every other connection's
/// timings.
const TURN_BYTES: usize = 16 * READ_BUF;

/// Mean read delay, µs, from which a run says its generator was the bottleneck.
const READ_DELAY_NOTE_US: f64 = 100.0;
/// Timer slack of a worker that naps, ns.
const NAP_TIMER_SLACK_NS: std::num::NonZeroU64 = std::num::NonZeroU64::new(1_000).unwrap();
/// The poller token of a worker's [`Alarm`]: no connection's (their index is below `u32::MAX`).
const ALARM: Token = Token(u32::MAX as usize);

const UNKNOWN: u64 = u64::MAX;

mod h2;

/// Why a load run could not produce a measurement.
#[derive(Debug, Error)]
pub enum LoadError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(
        "{addr} refused every connection ({reason}); is the server running and listening there?"
    )]
    Unreachable { addr: SocketAddr, reason: String },
    /// Connections were made, but the server would not speak HTTP/2 on any of them.
    #[error("no HTTP/2 connection to {addr} could be made: {reason}")]
    Http2 { addr: SocketAddr, reason: String },
    /// Connections were made, but not one TLS handshake succeeded.
    #[error("no TLS connection to {addr} could be made: {reason}")]
    Tls { addr: SocketAddr, reason: String },
    /// Connections failed for want of the generator's own resources before any succeeded.
    #[error("the load generator could not open connections: {reason}; this is a limit of the machine running the generator, not of the server")]
    GeneratorLimit { reason: String },
    #[error("could not start the load generator: {0}")]
    Io(#[from] io::Error),
}

/// A flag another thread (a Ctrl-C handler) sets to end the run early; the run then returns
/// what it measured so far.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn stop(&self) {
        self.0.store(true, Relaxed);
    }
    pub fn is_stopped(&self) -> bool {
        self.0.load(Relaxed)
    }
}

/// State all workers share. Touched per request: only `issued` (a ticket) and, once, the
/// document length and server name.
struct Shared {
    cfg: LoadConfig,
    addr: SocketAddr,
    request: Box<[u8]>,
    /// With `--pipeline N`: the request N times over, written as one batch (else empty).
    pipelined: Box<[u8]>,
    /// Requests of one load (`-n`), or [`UNKNOWN`] for a load bounded by time.
    per_load: u64,
    /// Requests to issue in all: `per_load`, raised by another `per_load` each time the
    /// measured part has not yet lasted the load's `min_duration` when they run out.
    limit: AtomicU64,
    /// When `min_duration` was found reached and tickets stopped: the measured part lasts at
    /// least until then, even where its last response was stamped by the kernel a little
    /// before the worker read it and asked.
    enough_at: OnceLock<Instant>,
    issued: AtomicU64,
    doc_len: AtomicU64,
    server: OnceLock<String>,
    /// Over TLS: what the handshake of the connection that set `server` settled on.
    tls_session: OnceLock<crate::stats::TlsSession>,
    completed: AtomicU64,
    stop: AtomicBool,
    connected_once: AtomicBool,
    connect_failures: AtomicU64,
    ports_exhausted: AtomicU64,
    fds_exhausted: AtomicU64,
    first_connect_error: Mutex<Option<String>>,
    /// The first connect error was a failed TLS handshake.
    tls_failed: AtomicBool,
    /// The first connect error was a server that does not speak HTTP/2.
    h2_failed: AtomicBool,
    /// HTTP/2 connections the client ended for the server's errors, and the first one's
    /// reason ([`Note::Http2Errors`]).
    h2_errors: AtomicU64,
    first_h2_error: OnceLock<String>,
    /// `https://`: what every connection's TLS is made from.
    tls: Option<crate::tls::Tls>,
    /// HTTP/2: the request's header blocks.
    h2: Option<crate::h2::Blocks>,
    /// Holds receive stamping on for the run; `None` without stamps (asked for or possible).
    stamps: Option<sock::StampKeeper>,
    /// This kernel drops body bytes nobody looks at without copying them
    /// ([`sock::discard_works`]).
    discard: bool,
    /// Set by the coordinator before the workers are released.
    start: OnceLock<Instant>,
    measure_start: OnceLock<Instant>,
}

impl Shared {
    /// Keeps what a connection's TLS handshake settled on, once per run, for the report.
    fn note_tls(&self, conn: Option<&crate::tls::TlsConn>) {
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
    fn note_h2_error(&self, e: crate::h2::ConnError) {
        self.h2_errors.fetch_add(1, Relaxed);
        if self.first_h2_error.get().is_none() {
            let _ = self.first_h2_error.set(e.to_string());
        }
    }

    fn trigger_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Takes a ticket for one measured request; false once `-n` requests have been issued
    /// (as many times over as `min_duration` asks).
    #[inline]
    fn take_ticket(&self) -> bool {
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
    fn limit(&self) -> u64 {
        self.limit.load(Relaxed)
    }
}

/// Runs the load and returns the measurement.
pub fn run(cfg: LoadConfig) -> Result<Measurement, LoadError> {
    run_until(cfg, &StopFlag::new())
}

/// Runs the load until it is done or `stop` is set.
pub fn run_until(cfg: LoadConfig, stop: &StopFlag) -> Result<Measurement, LoadError> {
    run_observed(cfg, stop, &mut |_| {})
}

/// Runs the load until it is done or `stop` is set, telling `progress` the number of requests
/// completed so far about every 50 ms (from the calling thread, never from a worker).
pub fn run_observed(
    mut cfg: LoadConfig,
    stop: &StopFlag,
    progress: &mut dyn FnMut(u64),
) -> Result<Measurement, LoadError> {
    cfg.validate()?;
    // Connections go to the proxy when there is one (ab's -X), else to the target.
    let addr = cfg.resolve()?;
    crate::connect::check(addr, &cfg.socket).map_err(ConfigError::Option)?;
    let threads = cfg.threads.min(cfg.load.concurrency as usize).max(1);
    crate::limits::ensure_open_files(cfg.load.concurrency, threads)?;
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
    let request = build_request(&cfg).into_boxed_slice();
    let pipelined = if cfg.pipeline > 1 {
        request.repeat(cfg.pipeline as usize).into_boxed_slice()
    } else {
        Box::default()
    };
    let limit = cfg.load.requests.unwrap_or(UNKNOWN);
    let sh = Arc::new(Shared {
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
        stamps: if cfg.load.rx_stamps {
            sock::StampKeeper::start()
        } else {
            None
        },
        discard: sock::discard_works(),
        start: OnceLock::new(),
        measure_start: OnceLock::new(),
        cfg,
    });
    let cfg = &sh.cfg;
    // Without stamps a nap would be measured as server time: the automatic policy then blocks.
    // So it does with pipelining: the server is woken once per batch already, so a nap saves it
    // little, and measured against nginx it cost the client more than it saved the server.
    let coalesce = match cfg.load.coalesce {
        Coalesce::Auto if sh.stamps.is_none() || cfg.pipeline > 1 => Coalesce::Off,
        c => c,
    };

    let barrier = Arc::new(Barrier::new(threads + 1));
    let (done_tx, done_rx) = mpsc::channel::<(Recorder, Option<Instant>)>();
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let conns = cfg.load.concurrency as usize / threads
            + usize::from(i < cfg.load.concurrency as usize % threads);
        let sh = sh.clone();
        let barrier = barrier.clone();
        let done_tx = done_tx.clone();
        let cpu = cfg.cpus.as_ref().map(|c| c[i % c.len()]);
        let h = std::thread::Builder::new()
            .name(format!("loadgen-{i}"))
            .spawn(move || {
                let out = worker_thread(sh, conns, threads, cpu, coalesce, barrier);
                let _ = done_tx.send(out);
            })?;
        handles.push(h);
    }
    drop(done_tx);

    let start = Instant::now();
    let _ = sh.start.set(start);
    let measure_start = start + cfg.load.warmup;
    let _ = sh.measure_start.set(measure_start);
    barrier.wait();

    if !cfg.load.warmup.is_zero() {
        wait_until(measure_start, stop, &sh);
    }
    let cpu_before = cpu::process_cpu_time();
    let deadline = cfg.load.duration.map(|d| measure_start + d);
    let mut merged: Option<Recorder> = None;
    let mut last_done: Option<Instant> = None;
    let mut stopped_at: Option<Instant> = None;
    let mut stopped_early = None;
    let mut remaining = threads;
    while remaining > 0 {
        let tick = Duration::from_millis(50);
        let wait = match (deadline, stopped_at) {
            (Some(d), None) => d.saturating_duration_since(Instant::now()).min(tick),
            _ => tick,
        };
        match done_rx.recv_timeout(wait) {
            Ok((rec, ld)) => {
                remaining -= 1;
                last_done = last_done.max(ld);
                match merged.as_mut() {
                    Some(m) => m.merge(rec),
                    None => merged = Some(rec),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        progress(sh.completed.load(Relaxed));
        if stopped_at.is_none() {
            if stop.is_stopped() {
                stopped_early = Some(StopReason::Interrupted);
                stopped_at = Some(Instant::now());
                sh.trigger_stop();
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                stopped_at = deadline;
                sh.trigger_stop();
                if cfg.load.requests.is_some() && sh.issued.load(Relaxed) < sh.limit() {
                    stopped_early = Some(StopReason::TimeLimit);
                }
            } else if sh.stop.load(Relaxed) {
                // A worker gave up on the target.
                stopped_at = Some(Instant::now());
            }
        }
    }
    let cpu_used = cpu::process_cpu_time().saturating_sub(cpu_before);
    for h in handles {
        let _ = h.join();
    }
    let mut rec = merged.unwrap_or_else(|| Recorder::new(false, false));
    progress(rec.completed);

    let exhausted = sh.ports_exhausted.load(Relaxed);
    let no_fds = sh.fds_exhausted.load(Relaxed);
    if !sh.connected_once.load(Relaxed) && no_fds + exhausted >= REFUSED_LIMIT {
        return Err(LoadError::GeneratorLimit {
            reason: if no_fds > 0 {
                format!(
                    "it ran out of file descriptors (open-files limit {})",
                    crate::limits::open_files_limit().0
                )
            } else {
                "the local port range is exhausted (sockets in TIME_WAIT)".to_string()
            },
        });
    }
    if !sh.connected_once.load(Relaxed) && sh.connect_failures.load(Relaxed) > 0 {
        let reason = sh
            .first_connect_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_else(|| "connection failed".into());
        if sh.h2_failed.load(Relaxed) {
            return Err(LoadError::Http2 { addr, reason });
        }
        if sh.tls_failed.load(Relaxed) {
            return Err(LoadError::Tls { addr, reason });
        }
        return Err(LoadError::Unreachable { addr, reason });
    }

    // A stopped run covers the whole window up to the stop; a finished one ends with its last
    // response, as ab's "Time taken for tests" does, and a repeated one (`min_duration`) no
    // sooner than when it was found long enough.
    let last_done = last_done.map(|d| sh.enough_at.get().map_or(d, |&e| d.max(e)));
    let end = stopped_at.or(last_done).unwrap_or_else(Instant::now);
    let elapsed = end.saturating_duration_since(measure_start);

    let mut notes = Vec::new();
    if no_fds > 0 {
        notes.push(Note::OutOfFileDescriptors {
            connections: no_fds,
            limit: crate::limits::open_files_limit().0,
        });
    }
    if exhausted > 0 {
        notes.push(Note::PortsExhausted {
            connections: exhausted,
        });
    }
    if let Some(t) = crate::limits::Conntrack::read().filter(|t| t.full()) {
        notes.push(Note::ConntrackFull {
            count: t.count,
            max: t.max,
        });
    }
    let h2_errors = sh.h2_errors.load(Relaxed);
    if h2_errors > 0 {
        notes.push(Note::Http2Errors {
            connections: h2_errors,
            first: sh.first_h2_error.get().cloned().unwrap_or_default(),
        });
    }
    if let Some(note) = read_delay_note(&rec) {
        notes.push(note);
    }
    notes.extend(crate::steady::settle(&mut rec, elapsed));
    let doc_len = sh.doc_len.load(Relaxed);
    Ok(Measurement {
        server: ServerInfo {
            software: sh.server.get().cloned().unwrap_or_default(),
            hostname: cfg.target.host.clone(),
            port: cfg.target.port,
            path: cfg.target.path.clone(),
            document_length: if doc_len == UNKNOWN { 0 } else { doc_len },
            tls: sh.tls_session.get().cloned(),
        },
        settings: RunSettings {
            concurrency: cfg.load.concurrency,
            keep_alive: cfg.load.keep_alive || http2,
            rate: cfg.load.rate,
            threads,
            http11: cfg.load.version == HttpVersion::Http11,
            streams: http2.then_some(cfg.load.streams),
            head: cfg.load.method.head_only(),
            rx_stamps: sh.stamps.is_some(),
            coalesce: coalesce.to_string(),
            repetitions: cfg
                .load
                .min_duration
                .map(|_| sh.issued.load(Relaxed).div_ceil(sh.per_load.max(1))),
        },
        elapsed,
        rec,
        client_cpu: cpu_used,
        stopped_early,
        notes,
    })
}

/// When responses waited longer for the generator than the server took to send them, the
/// generator was the bottleneck, and its Connection Times (which leave that wait out) differ
/// from what ab would print for the same run.
fn read_delay_note(rec: &Recorder) -> Option<Note> {
    if rec.stamped() == 0 {
        return None;
    }
    let waited = rec.read_delay.mean();
    let total = rec.moments.total.mean();
    (waited >= READ_DELAY_NOTE_US && waited > total).then_some(Note::GeneratorBound {
        read_delay_mean_us: waited,
        total_mean_us: total,
    })
}

fn wait_until(t: Instant, stop: &StopFlag, sh: &Shared) {
    while Instant::now() < t && !stop.is_stopped() && !sh.stop.load(Relaxed) {
        std::thread::sleep(
            t.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
}

/// What a connection slot is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a timer: its constant-rate send time (`Some`), or a pause after a failed
    /// connect (`None`).
    Waiting(Option<Instant>),
    /// Writing the request: the socket is still connecting, or its buffer is full.
    Writing,
    /// The request is written; reading the response.
    Reading,
    /// The response is complete and the connection will not be reused: waiting for the
    /// server's FIN (or, over TLS, its close_notify), so that the server, not the generator,
    /// holds the TIME_WAIT state (as with ab).
    Draining,
    /// Done with its request; starts the next one once the current batch of events is handled.
    Queued,
    /// No tickets left (or the run is over): this slot is done.
    Finished,
}

/// The request a slot is working on.
#[derive(Debug, Clone, Copy)]
struct Request {
    start: Instant,
    /// The send time its constant-rate schedule gave it (coordinated-omission correction).
    intended: Option<Instant>,
    connect: Duration,
    written: Instant,
    first_byte: Option<Instant>,
    /// When the newest data read for this response arrived, and when it was read.
    last_data: Instant,
    read_at: Instant,
    /// That newest data carried a receive stamp.
    stamped: bool,
    /// Started after the warm-up, so it holds a ticket and is recorded.
    measured: bool,
    want_server: bool,
    /// Already retried once after a stale keep-alive connection.
    retried: bool,
    /// Sent on a kept-alive connection.
    reused: bool,
}

impl Request {
    /// A request starting at `start`, nothing done yet.
    fn new(start: Instant, intended: Option<Instant>, measured: bool, want_server: bool) -> Self {
        Request {
            start,
            intended,
            connect: Duration::ZERO,
            written: start,
            first_byte: None,
            last_data: start,
            read_at: start,
            stamped: false,
            measured,
            want_server,
            retried: false,
            reused: false,
        }
    }
}

/// One connection slot: at most one socket at a time, issuing requests one after another.
struct Conn {
    stream: Option<TcpStream>,
    /// The stream's TLS state (`https://` only): what is written and read goes through it.
    tls: Option<Box<crate::tls::TlsConn>>,
    /// Bumped with every new socket; part of the token, so an event for an earlier socket is
    /// never taken for one of the current one.
    generation: u32,
    /// The socket is registered with the poller (and whether for writability too).
    registered: Option<Interest>,
    /// The socket's first write went through: the connection is established.
    connected: bool,
    /// The kernel stamps what arrives on the socket.
    stamped: bool,
    /// Bytes of the request written so far.
    sent: usize,
    /// Requests written together in the current batch (1 unless pipelining), and how many of
    /// their responses have been recorded (see [`crate::pipeline`]).
    batch: u32,
    answered: u32,
    /// This request's write had to wait for writability (events for readability may have
    /// come and gone meanwhile).
    blocked: bool,
    /// The last response ended where a read ended without the socket being seen empty: bytes
    /// after it may already be waiting, and their readiness event is spent.
    unread: bool,
    state: State,
    deadline: Option<Instant>,
    parser: ResponseParser,
    req: Request,
}

fn token(idx: usize, generation: u32) -> Token {
    Token(((u64::from(generation) << 32) | idx as u64) as usize)
}

fn untoken(t: Token) -> (usize, u32) {
    let v = t.0 as u64;
    ((v & 0xffff_ffff) as usize, (v >> 32) as u32)
}

/// One worker thread: its poller, its connections and its share of the measurement.
struct Worker {
    sh: Arc<Shared>,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    buf: Box<[u8]>,
    /// Body bytes nobody looks at are dropped in the kernel (see [`Shared::discard`]).
    discard: bool,
    /// Pending timers: (when, slot). A slot has at most one, and only while `Waiting`.
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Slots not yet finished.
    active: usize,
    start: Instant,
    /// `start` on the wall clock, µs since the Unix epoch (for [`Recorder::starts`]).
    wall_start_us: u64,
    measure_start: Instant,
    /// End of the measurement window (`-t` / `--duration`): nothing completing later counts.
    end: Option<Instant>,
    timeout: Duration,
    /// Next slot of this worker's constant-rate schedule, and the interval between slots.
    next_slot: u64,
    slot_interval: Option<Duration>,
    tally: Tally,
    /// Slots that stopped reading only to give others a turn; the poller will not report them
    /// again (edge-triggered), so they are resumed after the next poll.
    resume: Vec<(usize, u32, bool)>,
    /// Slots in `Queued`, in the order their requests completed.
    queued: Vec<usize>,
    napper: Napper,
    /// Wakes the worker at a constant-rate send time to the microsecond (`None` without a rate,
    /// or where the host has no timerfd: the poller's millisecond timeout then does).
    alarm: Option<Alarm>,
}

/// Completions counted locally and published to the progress display in batches.
#[derive(Default)]
struct Tally {
    unpublished: u64,
    last_done: Option<Instant>,
}

impl Tally {
    #[inline]
    fn count(&mut self, sh: &Shared, done: Instant) {
        self.last_done = Some(self.last_done.map_or(done, |l| l.max(done)));
        self.unpublished += 1;
        if self.unpublished >= PROGRESS_BATCH {
            sh.completed.fetch_add(self.unpublished, Relaxed);
            self.unpublished = 0;
        }
    }

    fn publish(&mut self, sh: &Shared) {
        sh.completed.fetch_add(self.unpublished, Relaxed);
        self.unpublished = 0;
    }
}

fn worker_thread(
    sh: Arc<Shared>,
    conns: usize,
    threads: usize,
    cpu: Option<usize>,
    coalesce: Coalesce,
    barrier: Arc<Barrier>,
) -> (Recorder, Option<Instant>) {
    if let Some(c) = cpu {
        // Pinning is best effort: a failure leaves the thread where the kernel puts it.
        let _ = cpu::pin_current_thread(&[c]);
    }
    let cfg = &sh.cfg;
    let keep = cfg.keep_samples && cfg.load.requests.is_some();
    let mut rec = Recorder::new(keep, cfg.load.rate.is_some());
    if let (Some(v), Some(n)) = (rec.samples.as_mut(), cfg.load.requests) {
        // Room for this worker's share and a little more; growth beyond is amortized.
        v.reserve(
            (n as usize / threads)
                .saturating_add(n as usize / 20)
                .min(1 << 26),
        );
    }
    let poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            *sh.first_connect_error
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(format!("cannot create a poller: {e}"));
            sh.trigger_stop();
            barrier.wait();
            return (rec, None);
        }
    };
    let head_only = cfg.load.method.head_only();
    let alarm = cfg
        .load
        .rate
        .and_then(|_| Alarm::new(poll.registry(), ALARM).ok());
    // The coordinator sets the start instants, then meets the workers at the barrier.
    barrier.wait();
    let start = *sh.start.get().expect("set before workers start");
    let measure_start = *sh.measure_start.get().expect("set before workers start");
    if keep && cfg.keep_start_times {
        rec.starts = Some(Vec::new());
    }
    rec.timeline = Some(Timeline::new(measure_start, cfg.interval));
    let wall_start_us = {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        now.saturating_sub(start.elapsed()).as_micros() as u64
    };
    if cfg.load.version == HttpVersion::Http2 {
        return h2::run_worker(
            sh.clone(),
            conns,
            poll,
            rec,
            Napper::new(coalesce),
            (start, measure_start, wall_start_us),
        );
    }
    let mut w = Worker {
        poll,
        conns: (0..conns)
            .map(|_| Conn {
                stream: None,
                tls: None,
                generation: 0,
                registered: None,
                connected: false,
                stamped: false,
                sent: 0,
                batch: 1,
                answered: 0,
                blocked: false,
                unread: false,
                state: State::Waiting(None),
                deadline: None,
                parser: ResponseParser::new(head_only),
                req: Request::new(start, None, false, false),
            })
            .collect(),
        rec,
        buf: vec![0u8; READ_BUF].into_boxed_slice(),
        discard: sh.discard,
        timers: BinaryHeap::new(),
        active: conns,
        start,
        wall_start_us,
        measure_start,
        end: cfg.load.duration.map(|d| measure_start + d),
        timeout: cfg.load.timeout,
        next_slot: 0,
        slot_interval: cfg
            .load
            .rate
            .map(|r| Duration::from_secs_f64(threads as f64 / r)),
        tally: Tally::default(),
        resume: Vec::new(),
        queued: Vec::new(),
        napper: Napper::new(coalesce),
        alarm,
        sh,
    };
    tighten_timer_slack(&w.napper);
    w.run();
    w.count_unfinished();
    w.tally.publish(&w.sh);
    (w.rec, w.tally.last_done)
}

/// Naps are tens of microseconds; the default 50 µs timer slack would double them. Sets this
/// thread's slack when its worker may nap.
fn tighten_timer_slack(napper: &Napper) {
    if napper.enabled() {
        // PR_SET_TIMERSLACK, which affects only this thread.
        let _ = rustix::thread::set_current_timer_slack(Some(NAP_TIMER_SLACK_NS));
    }
}

impl Worker {
    fn run(&mut self) {
        for i in 0..self.conns.len() {
            self.next_request(i, Instant::now());
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
            if !self.resume.is_empty() || !self.queued.is_empty() {
                wake = now;
            }
            let mut timeout = wake.saturating_duration_since(now);
            if let Some(napped) = self.napper.before_poll(caught_up, timeout) {
                self.rec.naps += u64::from(napped);
                timeout = Duration::ZERO;
            } else if !timeout.is_zero() {
                let send_time = self.timers.peek().map(|&Reverse((t, _))| t) == Some(wake);
                if let Some(alarm) = self.alarm.as_mut().filter(|_| send_time) {
                    // The alarm wakes the poller at the send time; the poller's own timeout,
                    // rounded up to a whole millisecond, stays as the backstop.
                    if alarm.set(wake, now).is_ok() {
                        timeout += Duration::from_millis(1);
                    }
                }
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
                if ev.token() == ALARM {
                    if let Some(a) = self.alarm.as_mut() {
                        a.fired();
                    }
                    continue;
                }
                let (idx, generation) = untoken(ev.token());
                let Some(c) = self.conns.get(idx) else {
                    continue;
                };
                if c.generation != generation || c.stream.is_none() {
                    continue;
                }
                let closed = ev.is_read_closed() || ev.is_error();
                match c.state {
                    // A TLS handshake waits for the server's flights while writing.
                    State::Writing
                        if ev.is_writable() || closed || (ev.is_readable() && c.tls.is_some()) =>
                    {
                        self.write(idx)
                    }
                    State::Reading if ev.is_readable() || closed => self.read(idx, closed),
                    State::Draining if ev.is_readable() || closed => self.drain(idx),
                    _ => {}
                }
            }
            for (idx, generation, closed) in std::mem::take(&mut self.resume) {
                let c = &self.conns[idx];
                if c.generation != generation || c.stream.is_none() {
                    continue;
                }
                match c.state {
                    State::Reading => self.read(idx, closed),
                    State::Draining => self.drain(idx),
                    _ => {}
                }
            }
            // Requests go out after every response of the batch has been read, as a burst (as
            // wrk's loop also does): the server then finds them together in one wake-up instead
            // of being woken for each. Each takes its own start time: the connects and writes
            // before it are not its latency.
            for idx in std::mem::take(&mut self.queued) {
                if self.conns[idx].state == State::Queued {
                    self.next_request(idx, Instant::now());
                }
            }
            let mut now = Instant::now();
            while let Some(&Reverse((t, idx))) = self.timers.peek() {
                if t > now {
                    break;
                }
                self.timers.pop();
                if let State::Waiting(intended) = self.conns[idx].state {
                    match intended {
                        Some(t) => {
                            self.begin(idx, now, Some(t));
                            // Its connection was waiting for it: how late it left is the
                            // generator's own lateness.
                            if self.conns[idx].req.measured
                                && self.conns[idx].state != State::Finished
                            {
                                if let Some(h) = self.rec.send_lag.as_mut() {
                                    let lag = now.saturating_duration_since(t);
                                    h.saturating_record(lag.as_micros() as u64);
                                }
                            }
                        }
                        None => self.next_request(idx, now),
                    }
                    now = Instant::now();
                }
            }
            if now >= next_watch {
                self.expire(now);
                next_watch = now + tick;
            }
        }
    }

    /// When the measurement window has closed, the measured requests still waiting for their
    /// response, each with how long it had waited since its intended send time (constant-rate
    /// runs only).
    fn count_unfinished(&mut self) {
        let (Some(end), Some(h)) = (self.end, self.rec.unfinished.as_mut()) else {
            return;
        };
        for c in &self.conns {
            if !matches!(c.state, State::Writing | State::Reading) || !c.req.measured {
                continue;
            }
            let since = c.req.intended.unwrap_or(c.req.start);
            h.saturating_record(end.saturating_duration_since(since).as_micros() as u64);
        }
    }

    /// Starts the slot's next request, or parks it until its constant-rate send time.
    fn next_request(&mut self, idx: usize, now: Instant) {
        if self.sh.stop.load(Relaxed) {
            return self.finish(idx);
        }
        let intended = match self.slot_interval {
            Some(iv) => {
                let t = self.start + iv.mul_f64(self.next_slot as f64);
                self.next_slot += 1;
                if t > now {
                    self.conns[idx].state = State::Waiting(Some(t));
                    self.timers.push(Reverse((t, idx)));
                    return;
                }
                Some(t)
            }
            None => None,
        };
        self.begin(idx, now, intended);
    }

    fn begin(&mut self, idx: usize, now: Instant, intended: Option<Instant>) {
        let measured = now >= self.measure_start;
        if measured && (self.end.is_some_and(|e| now >= e) || !self.sh.take_ticket()) {
            return self.finish(idx);
        }
        let batch =
            crate::pipeline::batch(self.sh.cfg.pipeline, measured, || self.sh.take_ticket());
        if measured {
            self.rec.started += u64::from(batch);
        }
        let c = &mut self.conns[idx];
        c.batch = batch;
        c.answered = 0;
        c.req = Request::new(now, intended, measured, self.sh.server.get().is_none());
        self.send(idx, now);
    }

    /// Sends the slot's current request, connecting first when it has no open connection.
    fn send(&mut self, idx: usize, now: Instant) {
        let c = &mut self.conns[idx];
        c.req.start = now;
        c.req.reused = c.stream.is_some();
        c.deadline = Some(now + self.timeout);
        c.sent = 0;
        c.blocked = false;
        c.parser.reset(c.req.want_server);
        c.state = State::Writing;
        if c.stream.is_none() {
            // Connect without TCP_NODELAY: each request leaves in one write, and everything
            // sent before it was acknowledged by the response it got, so Nagle never holds a
            // request back, and the setsockopt would be one more system call per connection.
            match crate::connect::connect(self.sh.addr, &self.sh.cfg.socket) {
                Ok(s) => {
                    c.tls = match self.sh.tls.as_ref().map(|t| t.connect()).transpose() {
                        Ok(t) => t,
                        Err(e) => {
                            let kind = note_connect_error(&self.sh, &e);
                            return self.fail(idx, kind);
                        }
                    };
                    c.stamped =
                        self.sh.stamps.is_some() && sock::enable_rx_stamps(s.as_fd()).is_ok();
                    c.stream = Some(s);
                    c.unread = false;
                    c.generation = c.generation.wrapping_add(1);
                    c.registered = None;
                    c.connected = false;
                }
                Err(e) => {
                    let kind = note_connect_error(&self.sh, &e);
                    return self.fail(idx, kind);
                }
            }
        }
        self.write(idx);
    }

    /// Writes what is left of the request; a new connection's first successful write is what
    /// shows it established.
    fn write(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let request: &[u8] = if c.batch > 1 {
            &self.sh.pipelined[..c.batch as usize * self.sh.request.len()]
        } else {
            &self.sh.request
        };
        let Some(s) = c.stream.as_mut() else {
            return;
        };
        let mut at = if c.connected {
            c.req.written
        } else {
            Instant::now()
        };
        // Over TLS, the records of what was taken may still be waiting for the socket.
        while c.sent < request.len() || c.tls.as_ref().is_some_and(|t| t.wants_write()) {
            let written = match c.tls.as_mut() {
                Some(t) => t.send(s.as_fd(), &request[c.sent..]),
                None => s.write(&request[c.sent..]),
            };
            match written {
                Ok(0) if c.sent < request.len() => return self.fail(idx, FailureKind::Write),
                Ok(n) => {
                    if !c.connected {
                        c.connected = true;
                        c.req.connect = at.saturating_duration_since(c.req.start);
                        if !self.sh.connected_once.load(Relaxed) {
                            self.sh.connected_once.store(true, Relaxed);
                        }
                    }
                    c.sent += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.blocked = true;
                    let want = Interest::READABLE | Interest::WRITABLE;
                    if c.registered != Some(want) {
                        let tok = token(idx, c.generation);
                        let r = match c.registered {
                            None => self.poll.registry().register(s, tok, want),
                            Some(_) => self.poll.registry().reregister(s, tok, want),
                        };
                        if r.is_err() {
                            return self.fail(idx, FailureKind::Exception);
                        }
                        c.registered = Some(want);
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if !c.connected {
                        // The connect failed (refused, unreachable...): the socket reports it
                        // at the first write.
                        let kind = note_connect_error(&self.sh, &e);
                        return self.fail(idx, kind);
                    }
                    if c.req.reused && c.sent == 0 {
                        return self.stale(idx);
                    }
                    return self.fail(idx, FailureKind::Write);
                }
            }
            at = Instant::now();
        }
        c.req.written = at;
        c.state = State::Reading;
        if c.registered.is_none() {
            let r = self
                .poll
                .registry()
                .register(s, token(idx, c.generation), Interest::READABLE);
            if r.is_err() {
                return self.fail(idx, FailureKind::Exception);
            }
            c.registered = Some(Interest::READABLE);
        }
        if c.blocked || c.unread {
            // The response may have started while the request was still being written, or
            // (from a server that answers before it is asked) before, and its readiness event
            // was then spent.
            c.unread = false;
            self.read(idx, false);
        }
    }

    /// Reads until the response is complete, the connection ends, or the socket has nothing
    /// more for now. `closed` is the poller's word that the server has shut its side.
    ///
    /// Body bytes nobody looks at (see [`ResponseParser::skippable`]) are dropped in the
    /// kernel ([`sock::discard`]), never more than the response has left, so they cost neither
    /// a copy nor room in the buffer: each call takes whatever has arrived, up to
    /// [`TURN_BYTES`]. They are counted and stamped as read bytes are.
    fn read(&mut self, idx: usize, closed: bool) {
        let mut budget = TURN_BYTES;
        loop {
            let c = &mut self.conns[idx];
            let Some(s) = c.stream.as_mut() else {
                return;
            };
            // Over TLS every byte is decrypted: nothing can be dropped in the kernel.
            let skip = if self.discard && c.tls.is_none() {
                c.parser.skippable().min(budget as u64) as usize
            } else {
                0
            };
            let (got, asked) = if skip > 0 {
                (sock::discard(s.as_fd(), skip, c.stamped), skip)
            } else {
                let got = match c.tls.as_mut() {
                    Some(t) => t.recv(s.as_fd(), &mut self.buf, c.stamped),
                    None => sock::recv(s.as_fd(), &mut self.buf, c.stamped),
                };
                (got, self.buf.len())
            };
            match got {
                Recv::Eof => {
                    return match c.parser.eof() {
                        Feed::Done => {
                            // A close-delimited body: the server has closed already. The FIN
                            // carries no stamp; a stamped body ended when its last byte came.
                            c.stream = None;
                            let now = Instant::now();
                            let done = if c.req.stamped { c.req.last_data } else { now };
                            if !c.req.stamped {
                                c.req.read_at = now;
                            }
                            self.complete(idx, done, true)
                        }
                        Feed::More => self.closed(idx),
                    };
                }
                Recv::Data { len: n, stamp } => {
                    let now = Instant::now();
                    let t = match stamp {
                        Some(st) => sock::arrival(st, now, sock::realtime_now(), c.req.start),
                        None => now,
                    };
                    // A short read took everything there was: the socket is empty.
                    let emptied = n < asked;
                    // Over TLS, the end of the stream may have come with the data: its
                    // readiness event was spent on them, so it is acted on now.
                    let eof_after = c.tls.as_ref().is_some_and(|t| t.eof_pending());
                    // Where this read's bytes start that the current response has not taken
                    // yet: past 0 only after a pipelined response ended inside the read.
                    let mut from = 0;
                    loop {
                        let c = &mut self.conns[idx];
                        if c.req.first_byte.is_none() {
                            c.req.first_byte = Some(t);
                        }
                        c.req.last_data = t;
                        c.req.read_at = now;
                        c.req.stamped = stamp.is_some();
                        let fed = if skip > 0 {
                            c.parser.skip(n as u64).map(|f| (f, n))
                        } else {
                            c.parser
                                .feed_prefix(&self.buf[from..n])
                                .map(|(f, used)| (f, from + used))
                        };
                        match fed {
                            // A pipelined response with more of its batch due: the next one
                            // starts where it ended, in this read or a later one.
                            Ok((Feed::Done, end)) if c.answered + 1 < c.batch => {
                                self.complete(idx, t, false);
                                if self.conns[idx].state != State::Reading {
                                    return;
                                }
                                if end < n {
                                    from = end;
                                    continue;
                                }
                                break;
                            }
                            // Bytes after the last response due: not HTTP.
                            Ok((Feed::Done, end)) if end < n => {
                                return self.fail(idx, FailureKind::Exception)
                            }
                            // A FIN the poller reported has nothing after it when the read
                            // emptied the socket, or when it ended exactly where the response
                            // did (what follows a response on a connection the server closed
                            // is not read).
                            Ok((Feed::Done, _)) => {
                                c.unread = !emptied;
                                let server_closed = (closed && (emptied || skip > 0)) || eof_after;
                                return self.complete(idx, t, server_closed);
                            }
                            Ok((Feed::More, _)) => break,
                            Err(_) => return self.fail(idx, FailureKind::Exception),
                        }
                    }
                    if emptied && !closed && !eof_after {
                        return;
                    }
                    budget = budget.saturating_sub(n);
                    if budget == 0 {
                        let generation = self.conns[idx].generation;
                        return self.resume.push((idx, generation, closed));
                    }
                }
                Recv::Again => return,
                Recv::Failed => return self.closed(idx),
            }
        }
    }

    /// The connection ended (EOF or error) before the response did.
    fn closed(&mut self, idx: usize) {
        let c = &self.conns[idx];
        if c.req.reused && !c.parser.started() && c.answered == 0 {
            self.stale(idx)
        } else {
            self.fail(idx, FailureKind::Receive)
        }
    }

    /// A reused keep-alive connection turned out to be closed before any byte of the response:
    /// the server legitimately dropped an idle connection. Retried once on a fresh connection,
    /// not counted (as ab does).
    fn stale(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        c.stream = None;
        if c.req.retried {
            return self.fail(idx, FailureKind::Receive);
        }
        c.req.retried = true;
        self.send(idx, Instant::now());
    }

    /// Records a complete response and moves the slot on. `server_closed`: the server has
    /// closed its side and nothing is left to read.
    fn complete(&mut self, idx: usize, done: Instant, server_closed: bool) {
        let sh = &*self.sh;
        let cfg = &sh.cfg;
        let c = &mut self.conns[idx];
        c.deadline = None;
        let req = c.req;
        if req.want_server {
            let _ = sh.server.set(c.parser.server.take().unwrap_or_default());
            sh.note_tls(c.tls.as_deref());
        }
        let status = c.parser.head.status;
        let ok = (200..300).contains(&status);
        let body = c.parser.body_len;
        // The first good response sets the document length; every later one only reads it (a
        // compare-and-swap per response would take the shared cache line from every worker).
        let known = match sh.doc_len.load(Relaxed) {
            UNKNOWN if ok => sh
                .doc_len
                .compare_exchange(UNKNOWN, body, Relaxed, Relaxed)
                .err(),
            k => Some(k),
        };
        let length_failure = ok && known.is_some_and(|k| k != body) && !cfg.variable_length;
        if req.measured && self.end.is_none_or(|e| done < e) {
            let rec = &mut self.rec;
            rec.completed += 1;
            rec.total_bytes += c.parser.wire_len;
            rec.body_bytes += body;
            rec.dropped_bytes += c.parser.skipped;
            rec.sent_bytes += sh.request.len() as u64;
            if !ok {
                rec.non_2xx += 1;
            }
            if length_failure {
                rec.failures.add(FailureKind::Length);
            }
            if c.parser.head.keep_alive && cfg.load.keep_alive {
                rec.keep_alive_requests += 1;
            }
            let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
            let sample = Sample {
                connect: us(req.connect),
                waiting: us(req
                    .first_byte
                    .unwrap_or(done)
                    .saturating_duration_since(req.written)),
                total: us(done.saturating_duration_since(req.start)),
            };
            let corrected = req
                .intended
                .map(|t| done.saturating_duration_since(t).as_micros() as u64);
            rec.record(sample, corrected);
            rec.interval_response(done, &sample, corrected, c.parser.wire_len, length_failure);
            // Only kept for ab's -g file: worked out only then.
            let (wall, start) = (self.wall_start_us, self.start);
            rec.record_start(|| {
                wall + req.start.saturating_duration_since(start).as_micros() as u64
            });
            if req.stamped {
                rec.read_delay.saturating_record(
                    req.read_at.saturating_duration_since(done).as_micros() as u64,
                );
            }
            self.tally.count(sh, done);
        }
        self.napper
            .observe(done.saturating_duration_since(req.start), req.read_at);
        let c = &mut self.conns[idx];
        c.answered += 1;
        if c.answered < c.batch {
            // More responses of a pipelined batch are due on this connection.
            if crate::pipeline::next_response(c.parser.head.keep_alive, server_closed) {
                c.parser.reset(false);
                c.req.first_byte = None;
                c.deadline = Some(done + self.timeout);
                return;
            }
            // The server ends the connection with requests of the batch unanswered.
            return self.fail(idx, FailureKind::Receive);
        }
        if cfg.load.keep_alive && c.parser.head.keep_alive {
            return self.queue(idx);
        }
        if c.parser.head_done() && !c.parser.until_close() && c.stream.is_some() && !server_closed {
            // Wait for the server's FIN, unless the poller reported it with the response
            // (nginx's usual answer: data and FIN in one wake-up), which saves the read of
            // the end of the stream.
            c.state = State::Draining;
            c.deadline = Some(done + DRAIN_LIMIT.min(self.timeout));
            return;
        }
        c.stream = None;
        self.queue(idx);
    }

    /// Reads (and discards) until the server's FIN, then closes and moves on.
    fn drain(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let Some(s) = c.stream.as_mut() else {
            return;
        };
        let mut budget = TURN_BYTES;
        loop {
            let got = match c.tls.as_mut() {
                // Read through the session: its close_notify ends the stream as a FIN does
                // (some servers, lighttpd, send it and then wait for the client to close).
                Some(t) => t.recv(s.as_fd(), &mut self.buf, false),
                None if self.discard => sock::discard(s.as_fd(), budget, false),
                None => sock::recv(s.as_fd(), &mut self.buf, false),
            };
            match got {
                Recv::Data { len, .. } => {
                    budget = budget.saturating_sub(len);
                    if budget == 0 {
                        return self.resume.push((idx, c.generation, false));
                    }
                }
                Recv::Again => return,
                Recv::Eof | Recv::Failed => break,
            }
        }
        c.stream = None;
        c.deadline = None;
        self.queue(idx);
    }

    /// A request failed: counts it by kind and moves the slot on.
    fn fail(&mut self, idx: usize, kind: FailureKind) {
        let c = &mut self.conns[idx];
        c.stream = None;
        c.deadline = None;
        let measured = c.req.measured;
        // Every request of the batch still unanswered fails with it (one without pipelining).
        let unanswered = c.batch.saturating_sub(c.answered).max(1);
        let now = Instant::now();
        let no_connection = matches!(kind, FailureKind::Connect | FailureKind::Generator);
        if measured && self.end.is_none_or(|e| now < e) {
            for _ in 0..unanswered {
                self.rec.failures.add(kind);
                if !no_connection {
                    self.rec.completed += 1;
                }
                self.rec.interval_failure(now, kind, !no_connection);
                self.tally.count(&self.sh, now);
            }
        }
        if no_connection {
            // A target that refuses connections must not turn the slot into a spin.
            let t = now + CONNECT_RETRY_PAUSE;
            self.conns[idx].state = State::Waiting(None);
            self.timers.push(Reverse((t, idx)));
        } else {
            self.queue(idx);
        }
    }

    fn queue(&mut self, idx: usize) {
        self.conns[idx].state = State::Queued;
        self.queued.push(idx);
    }

    fn finish(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.state != State::Finished {
            c.state = State::Finished;
            c.stream = None;
            c.deadline = None;
            self.active -= 1;
        }
    }

    /// Ends the requests whose deadline has passed (checked every tenth of the timeout, at
    /// most every 100 ms, rather than with a timer per request).
    fn expire(&mut self, now: Instant) {
        for idx in 0..self.conns.len() {
            let c = &mut self.conns[idx];
            if c.deadline.is_none_or(|d| now < d) {
                continue;
            }
            c.deadline = None;
            match c.state {
                State::Draining => {
                    c.stream = None;
                    self.queue(idx);
                }
                State::Writing | State::Reading => self.fail(idx, FailureKind::Timeout),
                State::Waiting(_) | State::Queued | State::Finished => {}
            }
        }
    }
}

/// Counts a failed connection attempt and says whose failure it was: the server's (refused,
/// unreachable) or the generator's own (see [`crate::limits::LocalLimit`]).
fn note_connect_error(sh: &Shared, e: &io::Error) -> FailureKind {
    let tls = crate::tls::handshake_error(e).is_some();
    if let Some(limit) = crate::limits::local_limit(e) {
        let counter = match limit {
            crate::limits::LocalLimit::FileDescriptors => &sh.fds_exhausted,
            crate::limits::LocalLimit::Ports => &sh.ports_exhausted,
        };
        counter.fetch_add(1, Relaxed);
        let local = sh.fds_exhausted.load(Relaxed) + sh.ports_exhausted.load(Relaxed);
        if local >= REFUSED_LIMIT && !sh.connected_once.load(Relaxed) {
            // Not one connection could be made: nothing would be measured but the generator.
            sh.trigger_stop();
        }
        return FailureKind::Generator;
    }
    let n = sh.connect_failures.fetch_add(1, Relaxed) + 1;
    if n == 1 {
        if let Ok(mut first) = sh.first_connect_error.lock() {
            if first.is_none() {
                *first = Some(e.to_string());
                sh.tls_failed.store(tls, Relaxed);
                let not_h2 = e
                    .get_ref()
                    .is_some_and(|i| i.downcast_ref::<crate::h2::NotHttp2>().is_some());
                sh.h2_failed.store(not_h2, Relaxed);
            }
        }
    }
    if n >= REFUSED_LIMIT && !sh.connected_once.load(Relaxed) {
        sh.trigger_stop();
    }
    FailureKind::Connect
}
