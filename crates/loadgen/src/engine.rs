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
//!
//! Where each part lives: this module starts the workers, collects their recorders and makes
//! the measurement; `worker` is a worker's loop, one for both protocols; `h1` and `h2` are
//! what each protocol does with its connections inside it; `shared` is what all workers of
//! a run share.

use crate::config::{Coalesce, ConfigError, Engine, HttpVersion, LoadConfig};
use crate::cpu;
use crate::stats::{Measurement, Note, Recorder, RunSettings, ServerInfo, StopReason};
use shared::{Shared, REFUSED_LIMIT, UNKNOWN};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use thiserror::Error;
use worker::{Core, Placement};

mod h1;
mod h2;
mod h3;
mod shared;
mod slot;
mod uring;
mod worker;

/// Mean read delay, µs, from which a run says its generator was the bottleneck.
const READ_DELAY_NOTE_US: f64 = 100.0;

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

/// Runs the load and returns the measurement.
pub fn run(cfg: LoadConfig) -> Result<Measurement, LoadError> {
    run_until(cfg, &StopFlag::new())
}

/// Runs the load until it is done or `stop` is set.
pub fn run_until(cfg: LoadConfig, stop: &StopFlag) -> Result<Measurement, LoadError> {
    run_observed(cfg, stop, &mut |_| {})
}

/// Checks `cfg` as a run does before it opens any connection (its options, the address its
/// connections go to, the local address they leave from), and returns that address. A command
/// line calls it before it announces the load, so that bad input is refused first.
pub fn preflight(cfg: &mut LoadConfig) -> Result<SocketAddr, LoadError> {
    cfg.validate()?;
    // Connections go to the proxy when there is one (ab's -X), else to the target.
    let addr = cfg.resolve()?;
    crate::connect::check(addr, &cfg.socket).map_err(ConfigError::Option)?;
    Ok(addr)
}

/// Runs the load until it is done or `stop` is set, telling `progress` the number of requests
/// completed so far about every 50 ms (from the calling thread, never from a worker).
pub fn run_observed(
    mut cfg: LoadConfig,
    stop: &StopFlag,
    progress: &mut dyn FnMut(u64),
) -> Result<Measurement, LoadError> {
    let addr = preflight(&mut cfg)?;
    let threads = cfg.threads.min(cfg.load.concurrency as usize).max(1);
    crate::limits::ensure_open_files(cfg.load.concurrency, threads)?;
    let sh = Arc::new(Shared::new(cfg, addr)?);
    let cfg = &sh.cfg;
    // Without stamps a nap would be measured as server time: the automatic policy then blocks.
    // So it does with pipelining: the server is woken once per batch already, so a nap saves it
    // little, and measured against nginx it cost the client more than it saved the server.
    let coalesce = match cfg.load.coalesce {
        Coalesce::Auto if sh.stamps.is_none() || cfg.pipeline > 1 => Coalesce::Off,
        c => c,
    };
    let (uring, fallback) = choose_engine(&sh);
    let (handles, done_rx) = spawn_workers(&sh, threads, coalesce, uring)?;
    let measure_start = *sh
        .measure_start
        .get()
        .expect("set before the workers start");
    if !cfg.load.warmup.is_zero() {
        wait_until(measure_start, stop, &sh);
    }
    // The workers' own CPU time, not the process's: a process that sends several loads at
    // once (both sides of an A/B pair) must not count one load's work in the other's.
    let cpu_before: Duration = handles.iter().filter_map(cpu::thread_cpu_time).sum();
    let ended = collect(&sh, &done_rx, threads, stop, progress);
    let cpu_used = ended.cpu.saturating_sub(cpu_before);
    for h in handles {
        let _ = h.join();
    }
    let mut rec = ended.merged.unwrap_or_else(|| Recorder::new(false, false));
    progress(rec.completed);
    if let Some(e) = refusal(&sh) {
        return Err(e);
    }

    // A stopped run covers the whole window up to the stop; a finished one ends with its last
    // response, as ab's "Time taken for tests" does, and a repeated one (`min_duration`) no
    // sooner than when it was found long enough.
    let last_done = ended
        .last_done
        .map(|d| sh.enough_at.get().map_or(d, |&e| d.max(e)));
    let end = ended.stopped_at.or(last_done).unwrap_or_else(Instant::now);
    let elapsed = end.saturating_duration_since(measure_start);
    let mut notes = notes(&sh, &mut rec, elapsed);
    if let Some(reason) = fallback {
        notes.insert(0, Note::EngineFallback { reason });
    }
    let mut settings = settings(&sh, threads, coalesce);
    settings.engine = if uring { "io_uring" } else { "epoll" }.to_string();
    Ok(Measurement {
        server: server_info(&sh),
        settings,
        elapsed,
        rec,
        client_cpu: cpu_used,
        stopped_early: ended.stopped_early,
        notes,
    })
}

/// Starts the workers, sets the start instants and releases them; returns their threads and
/// where each sends its recorder when it is done.
fn spawn_workers(
    sh: &Arc<Shared>,
    threads: usize,
    coalesce: Coalesce,
    uring: bool,
) -> io::Result<(Vec<JoinHandle<()>>, mpsc::Receiver<Finished>)> {
    let cfg = &sh.cfg;
    let barrier = Arc::new(Barrier::new(threads + 1));
    let (done_tx, done_rx) = mpsc::channel::<Finished>();
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let at = Placement {
            conns: cfg.load.concurrency as usize / threads
                + usize::from(i < cfg.load.concurrency as usize % threads),
            threads,
            cpu: cfg.cpus.as_ref().map(|c| c[i % c.len()]),
            coalesce,
            uring,
        };
        let sh = sh.clone();
        let barrier = barrier.clone();
        let done_tx = done_tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("loadgen-{i}"))
            .spawn(move || {
                let (rec, last) = worker_thread(sh, &at, &barrier);
                let _ = done_tx.send((rec, last, cpu::current_thread_cpu_time()));
            })?;
        handles.push(h);
    }
    drop(done_tx);

    let start = Instant::now();
    let _ = sh.start.set(start);
    let _ = sh.measure_start.set(start + cfg.load.warmup);
    barrier.wait();
    Ok((handles, done_rx))
}

/// What a worker hands back: its recorder, when its last counted request ended, and the CPU
/// time its thread used in all.
type Finished = (Recorder, Option<Instant>, Duration);

/// One worker thread: set up, then its loop in the protocol of the run; its recorder, and when
/// its last counted request ended.
fn worker_thread(
    sh: Arc<Shared>,
    at: &Placement,
    barrier: &Barrier,
) -> (Recorder, Option<Instant>) {
    let core = match Core::new(sh, at, barrier) {
        Ok(core) => core,
        Err(rec) => return (*rec, None),
    };
    if core.sh.cfg.load.version == HttpVersion::Http2 {
        h2::run(core, at)
    } else if at.uring {
        uring::run(core, at)
    } else if core.sh.cfg.load.version == HttpVersion::Http3 {
        h3::run(core, at)
    } else {
        h1::run(core, at)
    }
}

/// Which engine runs the load: io_uring (`true`) or epoll; and, when io_uring was to run it
/// but this host does not allow it, why (the run's note: the load runs on epoll, and the
/// record says so). `auto` takes io_uring for what it drives, HTTP/1.x and HTTP/2, plain or
/// over TLS: measured side by side on loopback it used less client CPU per request than epoll
/// with keep-alive, pipelined, over TLS and over HTTP/2, as much with a new connection per
/// request, and its latencies agree with epoll's (see docs/load-generator.md); HTTP/3 runs on
/// epoll. `uring` for it was refused by [`LoadConfig::validate`].
fn choose_engine(sh: &Shared) -> (bool, Option<String>) {
    match sh.cfg.load.engine {
        Engine::Epoll => (false, None),
        Engine::Auto if sh.cfg.load.version == HttpVersion::Http3 => (false, None),
        Engine::Auto | Engine::Uring => match uring::available() {
            Ok(()) => (true, None),
            Err(why) => (false, Some(why)),
        },
    }
}

/// How the measured part ended, as the coordinator saw it.
struct Ended {
    /// The workers' recorders, merged.
    merged: Option<Recorder>,
    last_done: Option<Instant>,
    stopped_at: Option<Instant>,
    stopped_early: Option<StopReason>,
    /// The CPU time the workers that finished used in all.
    cpu: Duration,
}

/// Waits for the workers' recorders, merging them, while telling `progress` how far the load
/// is and stopping the workers when the load's time is up or `stop` is set.
fn collect(
    sh: &Shared,
    done_rx: &mpsc::Receiver<Finished>,
    threads: usize,
    stop: &StopFlag,
    progress: &mut dyn FnMut(u64),
) -> Ended {
    let cfg = &sh.cfg;
    let measure_start = *sh
        .measure_start
        .get()
        .expect("set before the workers start");
    let deadline = cfg.load.duration.map(|d| measure_start + d);
    let mut ended = Ended {
        merged: None,
        last_done: None,
        stopped_at: None,
        stopped_early: None,
        cpu: Duration::ZERO,
    };
    let mut remaining = threads;
    while remaining > 0 {
        let tick = Duration::from_millis(50);
        let wait = match (deadline, ended.stopped_at) {
            (Some(d), None) => d.saturating_duration_since(Instant::now()).min(tick),
            _ => tick,
        };
        match done_rx.recv_timeout(wait) {
            Ok((rec, ld, cpu)) => {
                remaining -= 1;
                ended.cpu += cpu;
                ended.last_done = ended.last_done.max(ld);
                match ended.merged.as_mut() {
                    Some(m) => m.merge(rec),
                    None => ended.merged = Some(rec),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        progress(sh.completed.load(Relaxed));
        if ended.stopped_at.is_none() {
            check_stop(sh, stop, deadline, &mut ended);
        }
    }
    ended
}

/// Stops the workers when `stop` is set or the `deadline` has passed, and notes when a worker
/// has stopped them.
fn check_stop(sh: &Shared, stop: &StopFlag, deadline: Option<Instant>, ended: &mut Ended) {
    if stop.is_stopped() {
        ended.stopped_early = Some(StopReason::Interrupted);
        ended.stopped_at = Some(Instant::now());
        sh.trigger_stop();
    } else if deadline.is_some_and(|d| Instant::now() >= d) {
        ended.stopped_at = deadline;
        sh.trigger_stop();
        if sh.cfg.load.requests.is_some() && sh.issued.load(Relaxed) < sh.limit() {
            ended.stopped_early = Some(StopReason::TimeLimit);
        }
    } else if sh.stop.load(Relaxed) {
        // A worker gave up on the target.
        ended.stopped_at = Some(Instant::now());
    }
}

/// The error of a run in which no connection was ever made, if it failed to make any.
fn refusal(sh: &Shared) -> Option<LoadError> {
    let addr = sh.addr;
    let exhausted = sh.ports_exhausted.load(Relaxed);
    let no_fds = sh.fds_exhausted.load(Relaxed);
    if !sh.connected_once.load(Relaxed) && no_fds + exhausted >= REFUSED_LIMIT {
        return Some(LoadError::GeneratorLimit {
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
            return Some(LoadError::Http2 { addr, reason });
        }
        if sh.tls_failed.load(Relaxed) {
            return Some(LoadError::Tls { addr, reason });
        }
        return Some(LoadError::Unreachable { addr, reason });
    }
    None
}

/// What a reader of the run's numbers must know, settling the recorder's steadiness too.
fn notes(sh: &Shared, rec: &mut Recorder, elapsed: Duration) -> Vec<Note> {
    let mut notes = Vec::new();
    let no_fds = sh.fds_exhausted.load(Relaxed);
    if no_fds > 0 {
        notes.push(Note::OutOfFileDescriptors {
            connections: no_fds,
            limit: crate::limits::open_files_limit().0,
        });
    }
    let exhausted = sh.ports_exhausted.load(Relaxed);
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
    if let Some(note) = quic_note(sh) {
        notes.push(note);
    }
    if sh.h3.as_ref().is_some_and(|s| s.zero_rtt) {
        let [connections, sent, accepted, rejected, resent] =
            sh.zero_rtt.each_ref().map(|a| a.load(Relaxed));
        notes.push(Note::ZeroRtt {
            connections,
            sent,
            accepted,
            rejected,
            resent,
        });
    }
    if let Some(note) = read_delay_note(rec) {
        notes.push(note);
    }
    notes.extend(crate::steady::settle(rec, elapsed));
    notes
}

fn server_info(sh: &Shared) -> ServerInfo {
    let cfg = &sh.cfg;
    let doc_len = sh.doc_len.load(Relaxed);
    ServerInfo {
        software: sh.server.get().cloned().unwrap_or_default(),
        hostname: cfg.target.host.clone(),
        port: cfg.target.port,
        path: cfg.target.path.clone(),
        document_length: if doc_len == UNKNOWN { 0 } else { doc_len },
        tls: sh.tls_session.get().cloned(),
    }
}

fn settings(sh: &Shared, threads: usize, coalesce: Coalesce) -> RunSettings {
    let cfg = &sh.cfg;
    let http2 = cfg.load.version == HttpVersion::Http2;
    let streams = http2 || cfg.load.version == HttpVersion::Http3;
    RunSettings {
        concurrency: cfg.load.concurrency,
        keep_alive: cfg.load.keep_alive || http2,
        rate: cfg.load.rate,
        threads,
        http11: cfg.load.version == HttpVersion::Http11,
        streams: streams.then_some(cfg.load.streams),
        http3: cfg.load.version == HttpVersion::Http3,
        zero_rtt: cfg.load.version == HttpVersion::Http3 && cfg.tls.zero_rtt,
        head: cfg.load.method.head_only(),
        rx_stamps: sh.stamps.is_some(),
        coalesce: coalesce.to_string(),
        engine: "epoll".to_string(),
        repetitions: cfg
            .load
            .min_duration
            .map(|_| sh.issued.load(Relaxed).div_ceil(sh.per_load.max(1))),
    }
}

/// Over HTTP/3, what QUIC's accounting said of the connections, when the delivery was not
/// clean: packets lost, datagrams dropped by the client's receive buffers, window stalls.
fn quic_note(sh: &Shared) -> Option<Note> {
    let [sent, lost, drops, stalls] = sh.quic.each_ref().map(|a| a.load(Relaxed));
    (lost + drops + stalls > 0).then_some(Note::Quic {
        sent_packets: sent,
        lost_packets: lost,
        udp_drops: drops,
        window_stalls: stalls,
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
