//! The engine: worker threads, connections, requests and their timings.
//!
//! Layout (the hot path is everything inside one worker):
//! - one OS thread per worker, optionally pinned to a CPU, each running a current-thread tokio
//!   runtime, so a connection's task never migrates and nothing on the hot path takes a lock;
//! - each worker owns a share of the connections, one task each, all recording into the
//!   worker's [`Recorder`] through a `RefCell` (no task holds it across an `.await`);
//! - reads go into one buffer per worker (again borrowed only inside a single poll), so a
//!   connection's own memory is its socket and its parser: 10,000 connections stay small and a
//!   100 MB body streams through 64 KiB;
//! - the coordinating thread hands out nothing per request: workers take request tickets from
//!   one atomic counter (exact `-n` with no straggling tail) and report progress in batches.
//!
//! Timings follow ab.c: `start` is taken before connecting (or, on a reused keep-alive
//! connection, when the next request begins, so Connect is 0), `connect` when the connection is
//! established, `written` after the request's last byte is written, `first byte` at the first
//! read that returns data, and `done` when the response is complete.

use crate::config::{HttpVersion, LoadConfig, Method, Progress};
use crate::cpu;
use crate::http::{build_request, Feed, ResponseParser};
use crate::stats::{FailureKind, Measurement, Recorder, RunSettings, Sample, ServerInfo};
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::future::Future;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Size of each worker's read buffer.
const READ_BUF: usize = 64 * 1024;
/// Connect failures with no connection ever established after which the target is declared
/// unreachable (ab gives up after 10 as well).
const REFUSED_LIMIT: u64 = 10;
/// Completions a worker counts locally before publishing them for the progress display.
const PROGRESS_BATCH: u64 = 32;
/// How long a closed-mode connection waits for the server's FIN after a complete response.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

const UNKNOWN: u64 = u64::MAX;

/// Why a load run could not produce a measurement.
#[derive(Debug, Error)]
pub enum LoadError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(
        "{addr} refused every connection ({reason}); is the server running and listening there?"
    )]
    Unreachable { addr: SocketAddr, reason: String },
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
    limit: u64,
    issued: AtomicU64,
    doc_len: AtomicU64,
    server: OnceLock<String>,
    completed: AtomicU64,
    stop: AtomicBool,
    stop_tx: tokio::sync::watch::Sender<bool>,
    connected_once: AtomicBool,
    connect_failures: AtomicU64,
    ports_exhausted: AtomicU64,
    first_connect_error: Mutex<Option<String>>,
    /// Set by the coordinator before the workers are released.
    start: OnceLock<Instant>,
    measure_start: OnceLock<Instant>,
}

impl Shared {
    fn trigger_stop(&self) {
        self.stop.store(true, Relaxed);
        self.stop_tx.send_replace(true);
    }

    /// Takes a ticket for one measured request; false once `-n` requests have been issued.
    #[inline]
    fn take_ticket(&self) -> bool {
        self.limit == UNKNOWN || self.issued.fetch_add(1, Relaxed) < self.limit
    }
}

/// One worker thread's state, shared by its connection tasks.
struct Worker {
    sh: Arc<Shared>,
    rec: RefCell<Recorder>,
    buf: RefCell<Box<[u8]>>,
    /// Next slot of this worker's constant-rate schedule.
    next_slot: Cell<u64>,
    /// Interval between this worker's scheduled requests.
    slot_interval: Option<Duration>,
    unpublished: Cell<u64>,
    last_done: Cell<Option<Instant>>,
}

impl Worker {
    #[inline]
    fn count_completion(&self, done: Instant) {
        self.last_done.set(Some(done));
        let n = self.unpublished.get() + 1;
        if n >= PROGRESS_BATCH {
            self.sh.completed.fetch_add(n, Relaxed);
            self.unpublished.set(0);
        } else {
            self.unpublished.set(n);
        }
    }

    fn publish(&self) {
        self.sh
            .completed
            .fetch_add(self.unpublished.replace(0), Relaxed);
    }
}

/// A connection's deadline, watched by its worker's watchdog instead of a tokio timer per
/// request: arming and disarming a deadline is two stores, where a timer is a trip through the
/// timer wheel at every request. Deadlines fire up to one watchdog tick late (a tenth of the
/// timeout, at most 100 ms), which a timeout does not need to be more exact than.
#[derive(Default)]
struct Slot {
    deadline: Cell<Option<Instant>>,
    expired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
    fn arm(&self, deadline: Instant) {
        self.expired.set(false);
        self.deadline.set(Some(deadline));
    }

    fn disarm(&self) {
        self.deadline.set(None);
    }
}

/// Runs `fut` until it finishes or the slot's deadline passes (then `None`, and `fut` is
/// dropped, which closes whatever socket it held).
async fn within<F: Future>(slot: &Slot, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    poll_fn(|cx| {
        if slot.expired.get() {
            return Poll::Ready(None);
        }
        match fut.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending => {
                let mut w = slot.waker.borrow_mut();
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    })
    .await
}

/// Expires the deadlines of one worker's connections.
async fn watchdog(slots: Rc<RefCell<Vec<Rc<Slot>>>>, tick: Duration) {
    loop {
        tokio::time::sleep(tick).await;
        let now = Instant::now();
        for s in slots.borrow().iter() {
            if s.deadline.get().is_some_and(|d| now >= d) {
                s.deadline.set(None);
                s.expired.set(true);
                if let Some(w) = s.waker.borrow_mut().take() {
                    w.wake();
                }
            }
        }
    }
}

/// What one request ended in.
enum Outcome {
    Response {
        connect: Duration,
        written: Instant,
        first_byte: Instant,
        done: Instant,
        reusable: bool,
    },
    Failed(FailureKind),
    /// A reused keep-alive connection turned out to be closed before any byte of the response:
    /// the server legitimately dropped an idle connection. Retried once on a fresh connection,
    /// not counted (as ab does).
    Stale,
}

/// Runs the load and returns the measurement.
pub fn run(cfg: LoadConfig) -> Result<Measurement, LoadError> {
    run_until(cfg, &StopFlag::new())
}

/// Runs the load until it is done or `stop` is set.
pub fn run_until(mut cfg: LoadConfig, stop: &StopFlag) -> Result<Measurement, LoadError> {
    cfg.validate()?;
    let addr = cfg.target.resolve()?;
    let threads = cfg.threads.min(cfg.concurrency as usize).max(1);
    let request = build_request(
        &cfg.target,
        cfg.method,
        cfg.version,
        cfg.keep_alive,
        &cfg.headers,
    )
    .into_boxed_slice();
    let limit = cfg.requests.unwrap_or(UNKNOWN);
    let (stop_tx, _) = tokio::sync::watch::channel(false);
    let sh = Arc::new(Shared {
        addr,
        request,
        limit,
        issued: AtomicU64::new(0),
        doc_len: AtomicU64::new(UNKNOWN),
        server: OnceLock::new(),
        completed: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        stop_tx,
        connected_once: AtomicBool::new(false),
        connect_failures: AtomicU64::new(0),
        ports_exhausted: AtomicU64::new(0),
        first_connect_error: Mutex::new(None),
        start: OnceLock::new(),
        measure_start: OnceLock::new(),
        cfg,
    });
    let cfg = &sh.cfg;

    let barrier = Arc::new(Barrier::new(threads + 1));
    let (done_tx, done_rx) = mpsc::channel::<(Recorder, Option<Instant>)>();
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let conns = cfg.concurrency as usize / threads
            + usize::from(i < cfg.concurrency as usize % threads);
        let sh = sh.clone();
        let barrier = barrier.clone();
        let done_tx = done_tx.clone();
        let cpu = cfg.cpus.as_ref().map(|c| c[i % c.len()]);
        let h = std::thread::Builder::new()
            .name(format!("loadgen-{i}"))
            .spawn(move || {
                let out = worker_thread(sh, conns, threads, cpu, barrier);
                let _ = done_tx.send(out);
            })?;
        handles.push(h);
    }
    drop(done_tx);

    let start = Instant::now();
    let _ = sh.start.set(start);
    let measure_start = start + cfg.warmup;
    let _ = sh.measure_start.set(measure_start);
    barrier.wait();

    if !cfg.warmup.is_zero() {
        wait_until(measure_start, stop, &sh);
    }
    let cpu_before = cpu::process_cpu_time();
    let deadline = cfg.time_limit.map(|d| measure_start + d);
    let mut progress = ProgressLines::new(cfg.progress, cfg.requests);
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
        progress.update(sh.completed.load(Relaxed));
        if stopped_at.is_none() {
            if stop.is_stopped() {
                stopped_early = Some("interrupted".to_string());
                stopped_at = Some(Instant::now());
                sh.trigger_stop();
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                stopped_at = deadline;
                sh.trigger_stop();
                if let Some(n) = cfg.requests {
                    if sh.issued.load(Relaxed) < n {
                        stopped_early = Some("time limit reached".to_string());
                    }
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
    let rec = merged.unwrap_or_else(|| Recorder::new(false, false));
    progress.finish(rec.completed);

    if !sh.connected_once.load(Relaxed) && sh.connect_failures.load(Relaxed) > 0 {
        let reason = sh
            .first_connect_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_else(|| "connection failed".into());
        return Err(LoadError::Unreachable { addr, reason });
    }

    // A stopped run covers the whole window up to the stop; a finished one ends with its last
    // response, as ab's "Time taken for tests" does.
    let end = stopped_at.or(last_done).unwrap_or_else(Instant::now);
    let elapsed = end.saturating_duration_since(measure_start);

    let mut notes = Vec::new();
    let exhausted = sh.ports_exhausted.load(Relaxed);
    if exhausted > 0 {
        notes.push(format!(
            "{exhausted} connections failed with EADDRNOTAVAIL: the local port range is exhausted \
             (sockets in TIME_WAIT); use keep-alive (-k), fewer requests, or wait between runs"
        ));
    }
    let doc_len = sh.doc_len.load(Relaxed);
    Ok(Measurement {
        server: ServerInfo {
            software: sh.server.get().cloned().unwrap_or_default(),
            hostname: cfg.target.host.clone(),
            port: cfg.target.port,
            path: cfg.target.path.clone(),
            document_length: if doc_len == UNKNOWN { 0 } else { doc_len },
        },
        settings: RunSettings {
            concurrency: cfg.concurrency,
            keep_alive: cfg.keep_alive,
            rate: cfg.rate,
            threads,
            http11: cfg.version == HttpVersion::Http11,
            head: cfg.method == Method::Head,
        },
        elapsed,
        rec,
        client_cpu: cpu_used,
        stopped_early,
        notes,
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

fn worker_thread(
    sh: Arc<Shared>,
    conns: usize,
    threads: usize,
    cpu: Option<usize>,
    barrier: Arc<Barrier>,
) -> (Recorder, Option<Instant>) {
    if let Some(c) = cpu {
        // Pinning is best effort: a failure leaves the thread where the kernel puts it.
        let _ = cpu::pin_current_thread(&[c]);
    }
    let cfg = &sh.cfg;
    let keep = cfg.keep_samples && cfg.requests.is_some();
    let mut rec = Recorder::new(keep, cfg.rate.is_some());
    if let (Some(v), Some(n)) = (rec.samples.as_mut(), cfg.requests) {
        // Room for this worker's share and a little more; growth beyond is amortized.
        v.reserve(
            (n as usize / threads)
                .saturating_add(n as usize / 20)
                .min(1 << 26),
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            *sh.first_connect_error
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(format!("cannot start a runtime: {e}"));
            barrier.wait();
            return (rec, None);
        }
    };
    let slot_interval = cfg
        .rate
        .map(|r| Duration::from_secs_f64(threads as f64 / r));
    let w = Rc::new(Worker {
        sh: sh.clone(),
        rec: RefCell::new(rec),
        buf: RefCell::new(vec![0u8; READ_BUF].into_boxed_slice()),
        next_slot: Cell::new(0),
        slot_interval,
        unpublished: Cell::new(0),
        last_done: Cell::new(None),
    });
    let mut stop_rx = sh.stop_tx.subscribe();
    barrier.wait();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let slots: Vec<Rc<Slot>> = (0..conns).map(|_| Rc::new(Slot::default())).collect();
        let mut tasks = Vec::with_capacity(conns);
        for slot in &slots {
            tasks.push(tokio::task::spawn_local(connection(
                w.clone(),
                slot.clone(),
            )));
        }
        let tick = (cfg.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let dog = watchdog(Rc::new(RefCell::new(slots)), tick);
        let all = async {
            for t in tasks.iter_mut() {
                let _ = t.await;
            }
        };
        tokio::select! {
            _ = all => {}
            _ = stop_rx.wait_for(|s| *s) => {}
            _ = dog => {}
        }
        for t in &tasks {
            t.abort();
        }
    });
    drop(local);
    w.publish();
    let last = w.last_done.get();
    let w = Rc::try_unwrap(w)
        .unwrap_or_else(|_| unreachable!("every task was dropped with the LocalSet"));
    (w.rec.into_inner(), last)
}

/// One connection slot: issues requests one after another until the tickets run out or the run
/// stops.
async fn connection(w: Rc<Worker>, slot: Rc<Slot>) {
    let sh = &*w.sh;
    let cfg = &sh.cfg;
    let start = *sh.start.get().expect("set before workers start");
    let measure_start = *sh.measure_start.get().expect("set before workers start");
    let mut stream: Option<TcpStream> = None;
    let mut parser = ResponseParser::new(cfg.method == Method::Head);
    loop {
        if sh.stop.load(Relaxed) {
            return;
        }
        let intended = match w.slot_interval {
            Some(iv) => {
                let slot = w.next_slot.get();
                w.next_slot.set(slot + 1);
                let t = start + iv.mul_f64(slot as f64);
                if t > Instant::now() {
                    tokio::time::sleep_until(t.into()).await;
                }
                Some(t)
            }
            None => None,
        };
        let begin = Instant::now();
        let measured = begin >= measure_start;
        if measured && !sh.take_ticket() {
            return;
        }
        let want_server = sh.server.get().is_none();
        let mut retried = false;
        let mut req_start = begin;
        let outcome = loop {
            slot.arm(req_start + cfg.timeout);
            let fut = request(&w, &mut stream, &mut parser, req_start, want_server);
            let outcome = within(&slot, fut)
                .await
                .unwrap_or(Outcome::Failed(FailureKind::Timeout));
            slot.disarm();
            match outcome {
                Outcome::Stale if !retried => {
                    retried = true;
                    stream = None;
                    req_start = Instant::now();
                }
                Outcome::Stale => break Outcome::Failed(FailureKind::Receive),
                o => break o,
            }
        };
        match outcome {
            Outcome::Response {
                connect,
                written,
                first_byte,
                done,
                reusable,
            } => {
                if want_server {
                    let _ = sh.server.set(parser.server.take().unwrap_or_default());
                }
                let status = parser.head.status;
                let ok = (200..300).contains(&status);
                let body = parser.body_len;
                let mut length_failure = false;
                if ok {
                    match sh.doc_len.compare_exchange(UNKNOWN, body, Relaxed, Relaxed) {
                        Ok(_) => {}
                        Err(known) => length_failure = known != body && !cfg.variable_length,
                    }
                }
                if measured {
                    let mut rec = w.rec.borrow_mut();
                    rec.completed += 1;
                    rec.total_bytes += parser.wire_len;
                    rec.body_bytes += body;
                    rec.sent_bytes += sh.request.len() as u64;
                    if !ok {
                        rec.non_2xx += 1;
                    }
                    if length_failure {
                        rec.failures.add(FailureKind::Length);
                    }
                    if parser.head.keep_alive && cfg.keep_alive {
                        rec.keep_alive_requests += 1;
                    }
                    let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
                    let sample = Sample {
                        connect: us(connect),
                        waiting: us(first_byte.saturating_duration_since(written)),
                        total: us(done.saturating_duration_since(req_start)),
                    };
                    let corrected =
                        intended.map(|t| done.saturating_duration_since(t).as_micros() as u64);
                    rec.record(sample, corrected);
                    drop(rec);
                    w.count_completion(done);
                }
                if !reusable {
                    if let Some(s) = stream.take() {
                        if parser.head_done() && !parser.until_close() {
                            drain_to_eof(&w, &slot, s).await;
                        }
                    }
                }
            }
            Outcome::Failed(kind) => {
                stream = None;
                if measured {
                    let mut rec = w.rec.borrow_mut();
                    rec.failures.add(kind);
                    if kind != FailureKind::Connect {
                        rec.completed += 1;
                    }
                    drop(rec);
                    w.count_completion(Instant::now());
                }
                if kind == FailureKind::Connect {
                    // A target that refuses connections must not turn this loop into a spin.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            Outcome::Stale => unreachable!("retried above"),
        }
    }
}

/// Performs one request on `stream` (connecting first when there is none).
async fn request(
    w: &Worker,
    stream: &mut Option<TcpStream>,
    parser: &mut ResponseParser,
    start: Instant,
    want_server: bool,
) -> Outcome {
    let sh = &*w.sh;
    let reused = stream.is_some();
    let mut connect = Duration::ZERO;
    if !reused {
        match TcpStream::connect(sh.addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                connect = start.elapsed();
                *stream = Some(s);
                if !sh.connected_once.load(Relaxed) {
                    sh.connected_once.store(true, Relaxed);
                }
            }
            Err(e) => {
                note_connect_error(sh, &e);
                return Outcome::Failed(FailureKind::Connect);
            }
        }
    }
    let Some(s) = stream.as_mut() else {
        unreachable!("connected above")
    };
    if write_all(s, &sh.request).await.is_err() {
        return if reused {
            Outcome::Stale
        } else {
            Outcome::Failed(FailureKind::Write)
        };
    }
    let written = Instant::now();
    parser.reset(want_server);
    let mut first_byte: Option<Instant> = None;
    let step = poll_fn(|cx| read_response(cx, s, &w.buf, parser, &mut first_byte)).await;
    match step {
        Step::Done => {
            let done = Instant::now();
            Outcome::Response {
                connect,
                written,
                first_byte: first_byte.unwrap_or(done),
                done,
                reusable: sh.cfg.keep_alive && parser.head.keep_alive,
            }
        }
        Step::Closed if reused && !parser.started() => Outcome::Stale,
        Step::Closed => Outcome::Failed(FailureKind::Receive),
        Step::Malformed => Outcome::Failed(FailureKind::Exception),
    }
}

fn note_connect_error(sh: &Shared, e: &io::Error) {
    let n = sh.connect_failures.fetch_add(1, Relaxed) + 1;
    if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
        sh.ports_exhausted.fetch_add(1, Relaxed);
    }
    if n == 1 {
        if let Ok(mut first) = sh.first_connect_error.lock() {
            first.get_or_insert_with(|| e.to_string());
        }
    }
    if n >= REFUSED_LIMIT && !sh.connected_once.load(Relaxed) {
        sh.trigger_stop();
    }
}

enum Step {
    Done,
    /// The connection ended (EOF or error) before the response did.
    Closed,
    Malformed,
}

/// Reads until the response is complete, the connection ends, or the socket has no more data
/// for now. The worker's buffer is borrowed only within this one poll.
fn read_response(
    cx: &mut Context<'_>,
    s: &mut TcpStream,
    buf: &RefCell<Box<[u8]>>,
    parser: &mut ResponseParser,
    first_byte: &mut Option<Instant>,
) -> Poll<Step> {
    let mut b = buf.borrow_mut();
    loop {
        let mut rb = ReadBuf::new(&mut b[..]);
        match Pin::new(&mut *s).poll_read(cx, &mut rb) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(_)) => return Poll::Ready(Step::Closed),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(match parser.eof() {
                        Feed::Done => Step::Done,
                        Feed::More => Step::Closed,
                    });
                }
                if first_byte.is_none() {
                    *first_byte = Some(Instant::now());
                }
                match parser.feed(&b[..n]) {
                    Ok(Feed::Done) => return Poll::Ready(Step::Done),
                    Ok(Feed::More) => {}
                    Err(_) => return Poll::Ready(Step::Malformed),
                }
            }
        }
    }
}

async fn write_all(s: &mut TcpStream, data: &[u8]) -> io::Result<()> {
    let mut off = 0;
    poll_fn(|cx| {
        while off < data.len() {
            match Pin::new(&mut *s).poll_write(cx, &data[off..]) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => off += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    })
    .await
}

/// Waits (briefly) for the server to close a connection it will not reuse, so the server, not
/// the generator, ends up holding the TIME_WAIT state, as with ab.
async fn drain_to_eof(w: &Worker, slot: &Slot, mut s: TcpStream) {
    let drain = poll_fn(|cx| {
        let mut b = w.buf.borrow_mut();
        loop {
            let mut rb = ReadBuf::new(&mut b[..]);
            match Pin::new(&mut s).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if !rb.filled().is_empty() => {}
                Poll::Ready(_) => return Poll::Ready(()),
            }
        }
    });
    slot.arm(Instant::now() + DRAIN_LIMIT.min(w.sh.cfg.timeout));
    let _ = within(slot, drain).await;
    slot.disarm();
}

/// Progress on stderr: ab's lines ("Completed N requests" every tenth of the run, at least
/// every 100, then "Finished N requests"), or a live bar on a terminal.
struct ProgressLines {
    mode: Progress,
    step: u64,
    next: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressLines {
    fn new(mode: Progress, requests: Option<u64>) -> Self {
        let step = match requests {
            Some(n) if n > 150 => (n / 10).max(100),
            Some(_) => 0,
            None => 10_000,
        };
        let bar = (mode == Progress::Bar).then(|| {
            let bar = match requests {
                Some(n) => indicatif::ProgressBar::new(n),
                None => indicatif::ProgressBar::new_spinner(),
            };
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(10));
            let style = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} requests ({per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        ProgressLines {
            mode,
            step,
            next: step,
            bar,
        }
    }

    fn update(&mut self, completed: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(completed);
            return;
        }
        if self.mode != Progress::Lines || self.step == 0 {
            return;
        }
        let mut err = io::stderr().lock();
        while completed >= self.next {
            let _ = writeln!(err, "Completed {} requests", self.next);
            self.next += self.step;
        }
    }

    fn finish(&mut self, completed: u64) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.mode == Progress::Lines {
            self.update(completed);
            let _ = writeln!(io::stderr(), "Finished {completed} requests");
        }
    }
}
