//! One worker's loop, the same for HTTP/1 and HTTP/2: wait for readiness (or nap, see
//! [`crate::coalesce`]), hand each event to the protocol's connection, give slots that stopped
//! reading for others their turn again, fire due timers and end requests past their deadline.
//!
//! What differs between the protocols is behind [`Protocol`]; the loop is generic over it, so
//! each protocol gets its own copy with nothing dispatched at run time. What both record (a
//! response, a failure) is done by [`Core`], which holds the worker's state the loop needs.

use super::shared::Shared;
use crate::coalesce::Napper;
use crate::config::Coalesce;
use crate::cpu;
use crate::http::{HeadCache, ResponseParser};
use crate::sock;
use crate::stats::{FailureKind, Recorder, Sample};
use crate::timeline::Timeline;
use crate::timer::Alarm;
use mio::event::Event;
use mio::{Events, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Size of each worker's read buffer.
pub(super) const READ_BUF: usize = 64 * 1024;
/// Bytes one connection may read or drop before the others get their turn (1 MiB, 16 full
/// buffers): a large body that keeps arriving must not hold up every other connection's
/// timings.
pub(super) const TURN_BYTES: usize = 16 * READ_BUF;
/// Pause before a connection slot tries again after its connect failed.
pub(super) const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(1);
/// Completions a worker counts locally before publishing them for the progress display.
const PROGRESS_BATCH: u64 = 32;
/// Longest a worker sleeps in `epoll_wait` before it looks at the shared stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// Readiness events taken per `epoll_wait`.
const EVENTS: usize = 1024;
/// Timer slack of a worker that naps, ns.
const NAP_TIMER_SLACK_NS: std::num::NonZeroU64 = std::num::NonZeroU64::new(1_000).unwrap();
/// The poller token of a worker's [`Alarm`]: no connection's (their index is below `u32::MAX`).
const ALARM: Token = Token(u32::MAX as usize);

/// The poller token of slot `idx`'s socket number `generation`.
pub(super) fn token(idx: usize, generation: u32) -> Token {
    Token(((u64::from(generation) << 32) | idx as u64) as usize)
}

fn untoken(t: Token) -> (usize, u32) {
    let v = t.0 as u64;
    ((v & 0xffff_ffff) as usize, (v >> 32) as u32)
}

/// The request a slot (HTTP/1) or a stream (HTTP/2) is working on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    pub(super) start: Instant,
    /// The send time its constant-rate schedule gave it (coordinated-omission correction).
    pub(super) intended: Option<Instant>,
    pub(super) connect: Duration,
    pub(super) written: Instant,
    pub(super) first_byte: Option<Instant>,
    /// When the newest data read for this response arrived, and when it was read.
    pub(super) last_data: Instant,
    pub(super) read_at: Instant,
    /// That newest data carried a receive stamp.
    pub(super) stamped: bool,
    /// Started after the warm-up, so it holds a ticket and is recorded.
    pub(super) measured: bool,
    pub(super) want_server: bool,
    /// Already retried once after a stale keep-alive connection.
    pub(super) retried: bool,
    /// Sent on a kept-alive connection.
    pub(super) reused: bool,
}

impl Request {
    /// A request starting at `start`, nothing done yet.
    pub(super) fn new(
        start: Instant,
        intended: Option<Instant>,
        measured: bool,
        want_server: bool,
    ) -> Self {
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

/// A complete response as the recorder counts it, beside its [`Request`].
pub(super) struct Response {
    pub(super) ok: bool,
    /// Bytes read for it, and of them its body's; body bytes dropped in the kernel.
    pub(super) wire_len: u64,
    pub(super) body_len: u64,
    pub(super) dropped: u64,
    /// Bytes written for its request.
    pub(super) sent_len: u64,
    /// It counts as a keep-alive request.
    pub(super) keep_alive: bool,
    /// When its request was written: Waiting runs from then.
    pub(super) written: Instant,
}

/// A worker's share of a constant-rate schedule: its requests' send times, `interval` apart.
pub(super) struct Schedule {
    next: u64,
    interval: Option<Duration>,
}

impl Schedule {
    /// The schedule of one of `threads` workers sharing `rate` requests/s (none: no rate).
    pub(super) fn new(rate: Option<f64>, threads: usize) -> Schedule {
        Schedule {
            next: 0,
            interval: rate.map(|r| Duration::from_secs_f64(threads as f64 / r)),
        }
    }

    /// Requests keep to a constant rate.
    pub(super) fn paced(&self) -> bool {
        self.interval.is_some()
    }

    /// For a connection of streams whose next request waits for `due` (none yet: it draws the
    /// next send time): `Ok` with its send time (`None` without a rate) when it may go at
    /// `now`; `Err` while it waits, with the time a new timer must wake it at (`None`: its
    /// timer is set already).
    pub(super) fn next_for(
        &mut self,
        due: &mut Option<Instant>,
        start: Instant,
        now: Instant,
    ) -> Result<Option<Instant>, Option<Instant>> {
        let (t, new) = match due.take() {
            Some(t) => (t, false),
            None => match self.next(start, now) {
                Ok(t) => return Ok(t),
                Err(t) => (t, true),
            },
        };
        if t > now {
            *due = Some(t);
            return Err(new.then_some(t));
        }
        Ok(Some(t))
    }

    /// When the next request, ready at `now`, is due: `Ok` to send it now, with its send time
    /// (`None` without a rate), `Err` with the send time it must wait for.
    pub(super) fn next(
        &mut self,
        start: Instant,
        now: Instant,
    ) -> Result<Option<Instant>, Instant> {
        let Some(iv) = self.interval else {
            return Ok(None);
        };
        let t = start + iv.mul_f64(self.next as f64);
        self.next += 1;
        if t > now {
            Err(t)
        } else {
            Ok(Some(t))
        }
    }
}

/// Completions counted locally and published to the progress display in batches.
#[derive(Default)]
pub(super) struct Tally {
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

/// What a worker holds whichever protocol it speaks: its poller, recorder, read buffer,
/// timers, clock and the state of its waiting.
pub(super) struct Core {
    pub(super) sh: Arc<Shared>,
    pub(super) poll: Poll,
    pub(super) rec: Recorder,
    pub(super) buf: Box<[u8]>,
    /// Pending timers: (when, slot). A slot has at most one.
    pub(super) timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Slots not yet finished.
    pub(super) active: usize,
    pub(super) start: Instant,
    /// `start` on the wall clock, µs since the Unix epoch (for [`Recorder::starts`]).
    pub(super) wall_start_us: u64,
    pub(super) measure_start: Instant,
    /// End of the measurement window (`-t` / `--duration`): nothing completing later counts.
    pub(super) end: Option<Instant>,
    pub(super) timeout: Duration,
    tally: Tally,
    /// Slots that stopped reading only to give others a turn, with the socket generation and
    /// whether the poller had reported the server's FIN: the poller will not report them
    /// again (edge-triggered), so they are resumed after the next poll.
    pub(super) resume: Vec<(usize, u32, bool)>,
    pub(super) napper: Napper,
    /// Wakes the worker at a constant-rate send time to the microsecond (`None` without a rate,
    /// or where the host has no timerfd: the poller's millisecond timeout then does).
    alarm: Option<Alarm>,
    /// Both clocks, read together at this round's first stamped read (`None` until then): the
    /// round's later reads are put on the stamps' clock from them.
    clocks: Option<sock::Clocks>,
    /// The clock as the last request's write ended, when nothing has been done since: the
    /// next request of a burst starts then, without reading the clock again.
    pub(super) wrote_at: Option<Instant>,
    /// The last response head parsed, for its repeats.
    pub(super) heads: HeadCache,
}

/// Where a worker thread runs and how it shares the load.
pub(super) struct Placement {
    /// Its connection slots, and the number of workers.
    pub(super) conns: usize,
    pub(super) threads: usize,
    pub(super) cpu: Option<usize>,
    pub(super) coalesce: Coalesce,
    /// The io_uring engine runs it.
    pub(super) uring: bool,
}

impl Core {
    /// Sets up a worker thread: pins it, makes its recorder and poller, then meets the other
    /// workers and the coordinator at `barrier`. `Err` carries the empty recorder of a worker
    /// that cannot run.
    pub(super) fn new(
        sh: Arc<Shared>,
        at: &Placement,
        barrier: &Barrier,
    ) -> Result<Core, Box<Recorder>> {
        if let Some(c) = at.cpu {
            // Pinning is best effort: a failure leaves the thread where the kernel puts it.
            let _ = cpu::pin_current_thread(&[c]);
        }
        let cfg = &sh.cfg;
        let keep = cfg.keep_samples && cfg.load.requests.is_some();
        let mut rec = Recorder::new(keep, cfg.load.rate.is_some());
        if let (Some(v), Some(n)) = (rec.samples.as_mut(), cfg.load.requests) {
            // Room for this worker's share and a little more; growth beyond is amortized.
            v.reserve(
                (n as usize / at.threads)
                    .saturating_add(n as usize / 20)
                    .min(1 << 26),
            );
        }
        let poll = match Poll::new() {
            Ok(p) => p,
            Err(e) => {
                sh.note_first_error(|| format!("cannot create a poller: {e}"));
                sh.trigger_stop();
                barrier.wait();
                return Err(Box::new(rec));
            }
        };
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
        Ok(Core {
            poll,
            rec,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            timers: BinaryHeap::new(),
            active: at.conns,
            start,
            wall_start_us,
            measure_start,
            end: cfg.load.duration.map(|d| measure_start + d),
            timeout: cfg.load.timeout,
            tally: Tally::default(),
            resume: Vec::new(),
            napper: Napper::new(at.coalesce),
            alarm,
            clocks: None,
            wrote_at: None,
            heads: HeadCache::new(),
            sh,
        })
    }

    /// When a read at `now` got its bytes: by their receive stamp, put on the monotonic clock by
    /// this round's pair of clock readings, or `now` without one; never before `floor`.
    #[inline]
    pub(super) fn arrival(
        &mut self,
        stamp: Option<sock::Stamp>,
        now: Instant,
        floor: Instant,
    ) -> Instant {
        match stamp {
            Some(st) => sock::arrival(st, now, self.realtime_at(now), floor),
            None => now,
        }
    }

    /// The realtime clock at `now`, a monotonic reading of this round: from the round's pair
    /// of readings, taken at its first call.
    #[inline]
    pub(super) fn realtime_at(&mut self, now: Instant) -> sock::Stamp {
        self.clocks
            .get_or_insert_with(sock::Clocks::now)
            .realtime_at(now)
    }

    /// A request that began `measured` and ended (or failed) at `t` counts: it holds a ticket
    /// and the measurement window was still open.
    #[inline]
    pub(super) fn counts(&self, measured: bool, t: Instant) -> bool {
        measured && self.end.is_none_or(|e| t < e)
    }

    /// Whether a good response's body of `body` bytes is a length failure: the first good
    /// response sets the document length, and a later one of another length fails (unless
    /// lengths may vary).
    #[inline]
    fn length_failure(&self, ok: bool, body: u64) -> bool {
        let sh = &*self.sh;
        // Every later response only reads the length (a compare-and-swap per response would
        // take the shared cache line from every worker).
        let known = match sh.doc_len.load(Relaxed) {
            super::shared::UNKNOWN if ok => sh
                .doc_len
                .compare_exchange(super::shared::UNKNOWN, body, Relaxed, Relaxed)
                .err(),
            k => Some(k),
        };
        ok && known.is_some_and(|k| k != body) && !sh.cfg.variable_length
    }

    /// A complete response to `req` that ended at `done`, whatever the protocol: its body's
    /// length checked against the document's (every response, measured or not: the first good
    /// one sets it), and recorded when it [`counts`](Self::counts).
    #[inline]
    pub(super) fn complete(&mut self, req: &Request, done: Instant, r: &Response) {
        let length_failure = self.length_failure(r.ok, r.body_len);
        if self.counts(req.measured, done) {
            self.record(req, done, r, length_failure);
        }
    }

    /// Records a measured response that completed at `done`; `length_failure`: its body's
    /// length differed from the document's.
    #[inline]
    fn record(&mut self, req: &Request, done: Instant, r: &Response, length_failure: bool) {
        let rec = &mut self.rec;
        rec.completed += 1;
        rec.total_bytes += r.wire_len;
        rec.body_bytes += r.body_len;
        rec.dropped_bytes += r.dropped;
        rec.sent_bytes += r.sent_len;
        if !r.ok {
            rec.non_2xx += 1;
        }
        if length_failure {
            rec.failures.add(FailureKind::Length);
        }
        if r.keep_alive {
            rec.keep_alive_requests += 1;
        }
        let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
        let sample = Sample {
            connect: us(req.connect),
            waiting: us(req
                .first_byte
                .unwrap_or(done)
                .saturating_duration_since(r.written)),
            total: us(done.saturating_duration_since(req.start)),
        };
        let corrected = req
            .intended
            .map(|t| done.saturating_duration_since(t).as_micros() as u64);
        rec.record(sample, corrected);
        rec.interval_response(done, &sample, corrected, r.wire_len, length_failure);
        // Only kept for ab's -g file: worked out only then.
        let (wall, start) = (self.wall_start_us, self.start);
        rec.record_start(|| wall + req.start.saturating_duration_since(start).as_micros() as u64);
        if req.stamped {
            rec.read_delay
                .saturating_record(req.read_at.saturating_duration_since(done).as_micros() as u64);
        }
        self.tally.count(&self.sh, done);
    }

    /// Opens a slot's next request at `now` (sent at `intended` by a constant-rate schedule):
    /// takes its tickets and returns how many requests it writes at once (more than one only
    /// when pipelining) with the request; `None` when the slot has nothing more to do.
    pub(super) fn open_request(
        &mut self,
        now: Instant,
        intended: Option<Instant>,
    ) -> Option<(u32, Request)> {
        let measured = now >= self.measure_start;
        if measured && (self.end.is_some_and(|e| now >= e) || !self.sh.take_ticket()) {
            return None;
        }
        let batch =
            crate::pipeline::batch(self.sh.cfg.pipeline, measured, || self.sh.take_ticket());
        if measured {
            self.rec.started += u64::from(batch);
        }
        let want_server = self.sh.server.get().is_none();
        Some((batch, Request::new(now, intended, measured, want_server)))
    }

    /// A slot's complete HTTP/1 response to `req`, which `parser` read, ended at `done`:
    /// recorded if it counts, and seen by the napper.
    pub(super) fn respond(
        &mut self,
        req: &Request,
        parser: &mut ResponseParser,
        tls: Option<&crate::tls::TlsConn>,
        done: Instant,
    ) {
        let sh = &*self.sh;
        if req.want_server {
            let _ = sh.server.set(parser.server.take().unwrap_or_default());
            sh.note_tls(tls);
        }
        let r = Response {
            ok: (200..300).contains(&parser.head.status),
            wire_len: parser.wire_len,
            body_len: parser.body_len,
            dropped: parser.skipped,
            sent_len: self.sh.request.len() as u64,
            keep_alive: parser.head.keep_alive && self.sh.cfg.load.keep_alive,
            written: req.written,
        };
        self.complete(req, done, &r);
        self.napper
            .observe(done.saturating_duration_since(req.start), req.read_at);
    }

    /// A slot's request (and the `unanswered` others of its pipelined batch) failed by `kind`.
    pub(super) fn fail_requests(&mut self, measured: bool, unanswered: u32, kind: FailureKind) {
        let now = Instant::now();
        for _ in 0..unanswered.max(1) {
            self.count_failure(measured, kind, now);
        }
    }

    /// A request due at `intended` by the constant-rate schedule left at `now`: how late is the
    /// generator's own lateness.
    pub(super) fn note_send_lag(&mut self, measured: bool, intended: Instant, now: Instant) {
        if let Some(h) = self.rec.send_lag.as_mut().filter(|_| measured) {
            let lag = now.saturating_duration_since(intended);
            h.saturating_record(lag.as_micros() as u64);
        }
    }

    /// When the measurement window has closed, the measured requests still waiting for their
    /// response, each with how long it had waited since its intended send time (constant-rate
    /// runs only).
    pub(super) fn count_unfinished<'a>(&mut self, waiting: impl Iterator<Item = &'a Request>) {
        let (Some(end), Some(h)) = (self.end, self.rec.unfinished.as_mut()) else {
            return;
        };
        for req in waiting.filter(|r| r.measured) {
            let since = req.intended.unwrap_or(req.start);
            h.saturating_record(end.saturating_duration_since(since).as_micros() as u64);
        }
    }

    /// The worker's end: its recorder, and when its last counted request ended.
    pub(super) fn finish(mut self) -> (Recorder, Option<Instant>) {
        self.tally.publish(&self.sh);
        (self.rec, self.tally.last_done)
    }

    /// Counts a request that began `measured` and failed at `now` by `kind`, if it counts.
    #[inline]
    pub(super) fn count_failure(&mut self, measured: bool, kind: FailureKind, now: Instant) {
        if !self.counts(measured, now) {
            return;
        }
        let no_connection = matches!(kind, FailureKind::Connect | FailureKind::Generator);
        self.rec.failures.add(kind);
        if !no_connection {
            self.rec.completed += 1;
        }
        self.rec.interval_failure(now, kind, !no_connection);
        self.tally.count(&self.sh, now);
    }

    /// How long the next poll may wait from `now`: until the next thing due (the watch over
    /// deadlines, a timer, the end of the window, a stop check), not at all when work is
    /// `pending`; a worker that has `caught_up` may nap first instead.
    fn poll_timeout(
        &mut self,
        now: Instant,
        next_watch: Instant,
        pending: bool,
        caught_up: bool,
    ) -> Duration {
        let mut wake = (now + STOP_CHECK).min(next_watch);
        if let Some(Reverse((t, _))) = self.timers.peek() {
            wake = wake.min(*t);
        }
        if let Some(e) = self.end {
            wake = wake.min(e);
        }
        if pending {
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
        timeout
    }

    /// The slot of the next timer due by `now`, taken off the heap; `None` when none is.
    pub(super) fn due_timer(&mut self, now: Instant) -> Option<usize> {
        let &Reverse((t, idx)) = self.timers.peek()?;
        (t <= now).then(|| {
            self.timers.pop();
            idx
        })
    }

    /// Whether the loop goes on: slots left, no stop, the window still open.
    pub(super) fn running(&self, now: Instant) -> bool {
        self.active > 0 && !self.sh.stop.load(Relaxed) && self.end.is_none_or(|e| now < e)
    }
}

/// The protocol-specific part of a worker: its connections and what happens to them.
pub(super) trait Protocol {
    fn core(&mut self) -> &mut Core;
    fn into_core(self) -> Core;
    /// Connection slots of the worker.
    fn slots(&self) -> usize;
    /// Slot `idx` has a socket, and it is the one numbered `generation` (an event for an
    /// earlier socket of the slot is stale).
    fn is_current(&self, idx: usize, generation: u32) -> bool;
    /// Gives every slot its first request.
    fn start(&mut self);
    /// The poller reported readiness of slot `idx`'s current socket.
    fn ready(&mut self, idx: usize, ev: &Event);
    /// Slot `idx` reads on where it stopped to give the others a turn (`closed`: the poller had
    /// reported the server's FIN).
    fn resume(&mut self, idx: usize, closed: bool);
    /// The protocol has work queued for right after this round: the next poll must not wait.
    fn pending(&self) -> bool;
    /// Called once the round's events and resumed reads are handled, before due timers.
    fn after_reads(&mut self) {}
    /// Slot `idx`'s timer is due; true when it was still waiting for it (the next due timer
    /// is then compared with a fresh clock).
    fn timer(&mut self, idx: usize, now: Instant) -> bool;
    /// Called once due timers are handled.
    fn after_timers(&mut self) {}
    /// Ends what has passed its deadline at `now`.
    fn expire(&mut self, now: Instant);
    /// The loop is over; last accounts.
    fn ended(&mut self) {}
}

/// Runs a worker to its end and returns its recorder and when its last counted request
/// ended.
pub(super) fn drive<P: Protocol>(mut p: P) -> (Recorder, Option<Instant>) {
    tighten_timer_slack(&p.core().napper);
    run(&mut p);
    p.ended();
    p.into_core().finish()
}

/// Naps are tens of microseconds; the default 50 µs timer slack would double them. Sets this
/// thread's slack when its worker may nap.
pub(super) fn tighten_timer_slack(napper: &Napper) {
    if napper.enabled() {
        // PR_SET_TIMERSLACK, which affects only this thread.
        let _ = rustix::thread::set_current_timer_slack(Some(NAP_TIMER_SLACK_NS));
    }
}

/// The loop, one round per poll: wait (or nap), handle the readiness events, resume the reads
/// that gave others a turn, fire due timers, and every `tick` end what is past its deadline.
fn run<P: Protocol>(p: &mut P) {
    p.start();
    let mut events = Events::with_capacity(EVENTS.min(p.slots().max(16)));
    let tick = (p.core().timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let mut next_watch = Instant::now() + tick;
    // The last poll found nothing: the worker has caught up with the server.
    let mut caught_up = false;
    loop {
        let pending = p.pending();
        let core = p.core();
        let now = Instant::now();
        if !core.running(now) {
            break;
        }
        let pending = pending || !core.resume.is_empty();
        let timeout = core.poll_timeout(now, next_watch, pending, caught_up);
        let polled = core.poll.poll(&mut events, Some(timeout));
        caught_up = events.is_empty();
        core.clocks = None;
        match polled {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                core.sh
                    .note_first_error(|| format!("epoll_wait failed: {e}"));
                core.sh.trigger_stop();
                break;
            }
        }
        dispatch(p, &events);
        for (idx, generation, closed) in std::mem::take(&mut p.core().resume) {
            if p.is_current(idx, generation) {
                p.resume(idx, closed);
            }
        }
        p.after_reads();
        fire_timers(p);
        p.after_timers();
        let now = Instant::now();
        if now >= next_watch {
            p.expire(now);
            next_watch = now + tick;
        }
    }
}

/// Hands each readiness event to its slot, unless it is stale.
fn dispatch<P: Protocol>(p: &mut P, events: &Events) {
    for ev in events.iter() {
        if ev.token() == ALARM {
            if let Some(a) = p.core().alarm.as_mut() {
                a.fired();
            }
            continue;
        }
        let (idx, generation) = untoken(ev.token());
        if p.is_current(idx, generation) {
            p.ready(idx, ev);
        }
    }
}

/// Fires the timers that are due.
fn fire_timers<P: Protocol>(p: &mut P) {
    let mut now = Instant::now();
    while let Some(idx) = p.core().due_timer(now) {
        if p.timer(idx, now) {
            now = Instant::now();
        }
    }
}
