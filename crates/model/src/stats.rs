//! What a load run measured: per-worker recorders on the hot path, merged once at the end into a
//! [`Measurement`], the plain serializable result every report is rendered from.
//!
//! All times are whole microseconds. Two views are kept of the same requests:
//! - exact per-request [`Sample`]s while the run is bounded by a request count (as ab keeps its
//!   `stats` array), so ab's Connection Times table, median rule and percentile picks come out
//!   exactly;
//! - HdrHistograms (3 significant digits), which bound memory for runs of any length, merge
//!   cheaply and serialize compactly into results files.

use crate::timeline::Timeline;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

pub use crate::failure::{FailureKind, Failures};
pub use crate::histogram::{new_histogram, HIST_MAX_US, HIST_SIGFIG};

/// One finished request, as ab's `struct data` holds it (without the start time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Connection start to connection established, µs (0 on a reused keep-alive connection).
    pub connect: u32,
    /// Request fully written to first response byte read, µs (ab's "Waiting").
    pub waiting: u32,
    /// Start (connection start, or previous response end on a reused connection) to response
    /// complete, µs (ab's "Total"). ab's "Processing" is `total - connect`.
    pub total: u32,
}

impl Sample {
    /// ab's "Processing" time: total minus connect.
    #[inline]
    pub fn processing(&self) -> u32 {
        self.total.saturating_sub(self.connect)
    }
}

/// Exact running moments of one timer, so mean and standard deviation need no samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moments {
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    /// Sum of squares, exact (µs² overflows u64 after a few thousand one-second requests).
    #[serde(with = "u128_string")]
    pub sum_sq: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }
}

impl Moments {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
        self.sum_sq += (v as u128) * (v as u128);
    }

    pub fn merge(&mut self, o: &Moments) {
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }

    /// ab's mean: integer division of the microsecond total.
    pub fn mean_int(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }

    /// ab's sample standard deviation (n - 1), taken about ab's integer mean, in µs.
    pub fn sd_about_int_mean(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as i128;
        let m = self.mean_int() as i128;
        // Σ(x - m)² = Σx² - 2mΣx + n m², exact in integers.
        let ss = self.sum_sq as i128 - 2 * m * self.sum as i128 + n * m * m;
        (ss as f64 / (self.count - 1) as f64).sqrt()
    }

    /// Arithmetic mean, µs, as a float.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

mod u128_string {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Which of the four ab timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timer {
    Connect,
    Processing,
    Waiting,
    Total,
}

impl Timer {
    /// In ab's order: the rows of its Connection Times table.
    pub const ALL: [Timer; 4] = [
        Timer::Connect,
        Timer::Processing,
        Timer::Waiting,
        Timer::Total,
    ];
}

/// One `T` for each of ab's four timers: their moments, their histograms, their reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timers<T> {
    pub connect: T,
    pub processing: T,
    pub waiting: T,
    pub total: T,
}

impl<T> Timers<T> {
    /// Builds each timer's value from the timer.
    pub fn from_fn(mut f: impl FnMut(Timer) -> T) -> Self {
        Timers {
            connect: f(Timer::Connect),
            processing: f(Timer::Processing),
            waiting: f(Timer::Waiting),
            total: f(Timer::Total),
        }
    }

    #[inline]
    pub fn get(&self, t: Timer) -> &T {
        match t {
            Timer::Connect => &self.connect,
            Timer::Processing => &self.processing,
            Timer::Waiting => &self.waiting,
            Timer::Total => &self.total,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, t: Timer) -> &mut T {
        match t {
            Timer::Connect => &mut self.connect,
            Timer::Processing => &mut self.processing,
            Timer::Waiting => &mut self.waiting,
            Timer::Total => &mut self.total,
        }
    }

    /// Each timer's value through `f`.
    pub fn map<'a, U>(&'a self, mut f: impl FnMut(Timer, &'a T) -> U) -> Timers<U> {
        Timers::from_fn(|t| f(t, self.get(t)))
    }

    /// Fallible [`map`](Self::map): the first error wins.
    pub fn try_map<U, E>(
        &self,
        mut f: impl FnMut(Timer, &T) -> Result<U, E>,
    ) -> Result<Timers<U>, E> {
        Ok(Timers {
            connect: f(Timer::Connect, &self.connect)?,
            processing: f(Timer::Processing, &self.processing)?,
            waiting: f(Timer::Waiting, &self.waiting)?,
            total: f(Timer::Total, &self.total)?,
        })
    }

    /// (timer, value) in ab's order.
    pub fn iter(&self) -> impl Iterator<Item = (Timer, &T)> {
        Timer::ALL.into_iter().map(move |t| (t, self.get(t)))
    }
}

impl Sample {
    /// The value each timer records for this request, µs.
    #[inline]
    pub fn timers(&self) -> Timers<u64> {
        Timers {
            connect: u64::from(self.connect),
            processing: u64::from(self.processing()),
            waiting: u64::from(self.waiting),
            total: u64::from(self.total),
        }
    }
}

/// The `i`-th smallest (0-based) recorded value as the histogram knows it (the highest value of
/// its bucket), kept within the exact min and max of `m`.
pub fn nth_value(h: &Histogram<u64>, m: &Moments, i: u64) -> u64 {
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        if seen > i {
            return v.value_iterated_to().clamp(m.min.min(m.max), m.max);
        }
    }
    m.max
}

/// Something the reader of a load's numbers must know, as data: the words are the
/// presentation's (see the report crate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Note {
    /// Connections failed with EADDRNOTAVAIL: the local port range was used up (sockets in
    /// TIME_WAIT), a limit of this host, not of the server.
    PortsExhausted { connections: u64 },
    /// The kernel's connection tracking table was full when the load ended
    /// (the load generator's connection-tracking check): it drops new connections then, so connect failures and
    /// timeouts are this host's, not the server's.
    ConntrackFull { count: u64, max: u64 },
    /// The io_uring engine would have run the load but this host does not allow it (`reason`):
    /// the epoll engine ran it instead.
    EngineFallback { reason: String },
    /// Connections could not be opened because this process or the system ran out of file
    /// descriptors (EMFILE, ENFILE): the generator's limit, not the server's.
    OutOfFileDescriptors { connections: u64, limit: u64 },
    /// HTTP/2 connections the generator ended for the server's errors, with a GOAWAY saying
    /// why: frames HTTP/2 does not allow, or more than the generator gives any server (a
    /// header block beyond its limits, a flood of control frames whose answers it does not
    /// read). The streams open on them are counted as exceptions; `first` is the first
    /// connection's reason.
    Http2Errors { connections: u64, first: String },
    /// HTTP/3: what QUIC's own accounting said of the load's connections, when it says the
    /// delivery was not clean: packets the client sent and of them those declared lost (and
    /// sent again), datagrams the client's UDP receive buffers dropped (it did not read them in
    /// time: the generator's limit, which makes the load client-bound), and the times the
    /// server said it was held up by the client's flow-control windows.
    Quic {
        sent_packets: u64,
        lost_packets: u64,
        udp_drops: u64,
        window_stalls: u64,
    },
    /// HTTP/3 with 0-RTT allowed (`--0rtt`): of the QUIC connections made, those that sent
    /// their requests in 0-RTT (a resumed session whose server allowed early data; the first
    /// connections have no session to resume), of them those whose early data the server
    /// accepted and those it rejected, and the requests sent again after a rejection. Present
    /// whenever 0-RTT was allowed, so that a run says whether it was used.
    ZeroRtt {
        connections: u64,
        sent: u64,
        accepted: u64,
        rejected: u64,
        resent: u64,
    },
    /// Responses waited longer for the generator to read them than the server took to send
    /// them (means, µs): the generator was the bottleneck.
    GeneratorBound {
        read_delay_mean_us: f64,
        total_mean_us: f64,
    },
    /// The load's first and second halves differed beyond the noise of its intervals: a
    /// warm-up or a drift (the load generator's steadiness judgement), with the figures before and after the change
    /// for what moved, and the stretch where it was steady (absent when neither half was).
    Unsteady {
        pattern: crate::steady::Pattern,
        /// Requests/s, means of the intervals before and after the change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requests_per_s: Option<crate::steady::Shift>,
        /// Median latency, µs, means of the intervals' medians before and after the change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p50_us: Option<crate::steady::Shift>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steady: Option<crate::steady::Window>,
    },
}

/// Why a run ended before its requests were all done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// Stopped from outside (a signal, a caller's stop flag).
    #[serde(rename = "interrupted")]
    Interrupted,
    /// `-t` / `--duration` ran out before `-n` requests were done.
    #[serde(rename = "time limit reached")]
    TimeLimit,
}

/// What one worker thread accumulates. Owned by that thread alone: no locks on the hot path.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub samples: Option<Vec<Sample>>,
    /// When asked for (ab's `-g`), the wall-clock start of each sample's request, µs since the
    /// Unix epoch: `starts[i]` belongs to `samples[i]`.
    pub starts: Option<Vec<u64>>,
    pub moments: Timers<Moments>,
    pub hist: Timers<Histogram<u64>>,
    /// Total latency measured from each request's intended send time (constant-rate runs only),
    /// which corrects for coordinated omission.
    pub corrected: Option<Histogram<u64>>,
    pub failures: Failures,
    /// Responses whose status was not 2xx (counted apart, as ab does; not failures).
    pub non_2xx: u64,
    /// Requests answered on a reused keep-alive connection.
    pub keep_alive_requests: u64,
    /// Every byte read from the server: headers and bodies.
    pub total_bytes: u64,
    /// Body bytes read.
    pub body_bytes: u64,
    /// The part of `body_bytes` (and of `total_bytes`) that the kernel dropped without copying
    /// it to the generator (the load generator's discarding read): counted, never looked at.
    pub dropped_bytes: u64,
    /// Request bytes written.
    pub sent_bytes: u64,
    /// Requests that ended, by any outcome but a connect failure (ab's `done`).
    pub completed: u64,
    /// Requests begun in the measured window, whatever became of them: what the generator sent
    /// (at a constant rate, whether it kept its schedule).
    pub started: u64,
    /// Constant-rate runs bounded by a duration: how long each measured request still
    /// unanswered when the window closed had waited by then since its intended send time, µs.
    /// Their latency is at least that; leaving them out would hide a server that stops
    /// answering near the end of the window.
    pub unfinished: Option<Histogram<u64>>,
    /// Constant-rate runs: how late each measured request left after its intended send time
    /// when its connection was free and waiting for it, µs: the generator's own lateness
    /// (requests that had to wait for a connection the server still held are not in it).
    pub send_lag: Option<Histogram<u64>>,
    /// How long each recorded response had been complete on this host before the generator
    /// read it, µs (stamped responses only): the generator's own delay, not the server's. Its
    /// count is [`Recorder::stamped`].
    pub read_delay: Histogram<u64>,
    /// Times a worker slept to collect responses in batches instead of being woken by each.
    pub naps: u64,
    /// The same counts per interval of the measured part (`None` unless the engine set it up).
    pub timeline: Option<Timeline>,
}

impl Recorder {
    /// Recorded responses timed by the kernel's receive stamps (the others were timed when the
    /// generator read them).
    #[inline]
    pub fn stamped(&self) -> u64 {
        self.read_delay.len()
    }

    pub fn new(keep_samples: bool, corrected: bool) -> Self {
        Recorder {
            samples: keep_samples.then(Vec::new),
            starts: None,
            moments: Timers::default(),
            hist: Timers::from_fn(|_| new_histogram()),
            corrected: corrected.then(new_histogram),
            failures: Failures::default(),
            non_2xx: 0,
            keep_alive_requests: 0,
            total_bytes: 0,
            body_bytes: 0,
            dropped_bytes: 0,
            sent_bytes: 0,
            completed: 0,
            started: 0,
            unfinished: corrected.then(new_histogram),
            send_lag: corrected.then(new_histogram),
            read_delay: new_histogram(),
            naps: 0,
            timeline: None,
        }
    }

    /// Records the timings of one request that got a whole response.
    #[inline]
    pub fn record(&mut self, s: Sample, corrected_total: Option<u64>) {
        let v = s.timers();
        for t in Timer::ALL {
            let x = *v.get(t);
            self.moments.get_mut(t).record(x);
            self.hist.get_mut(t).saturating_record(x);
        }
        if let (Some(h), Some(c)) = (self.corrected.as_mut(), corrected_total) {
            h.saturating_record(c);
        }
        if let Some(v) = self.samples.as_mut() {
            v.push(s);
        }
    }

    /// Keeps the wall-clock start of the request just recorded (see [`Recorder::starts`]).
    #[inline]
    pub fn record_start(&mut self, unix_us: impl FnOnce() -> u64) {
        if let Some(v) = self.starts.as_mut() {
            v.push(unix_us());
        }
    }

    pub fn merge(&mut self, mut o: Recorder) {
        match (self.starts.as_mut(), o.starts.take()) {
            (Some(a), Some(mut b)) => a.append(&mut b),
            _ => self.starts = None,
        }
        match (self.samples.as_mut(), o.samples.take()) {
            (Some(a), Some(mut b)) => a.append(&mut b),
            _ => self.samples = None,
        }
        for t in Timer::ALL {
            self.moments.get_mut(t).merge(o.moments.get(t));
            // Same bounds everywhere, so `add` cannot fail.
            let _ = self.hist.get_mut(t).add(o.hist.get(t));
        }
        if let (Some(a), Some(b)) = (self.corrected.as_mut(), o.corrected.as_ref()) {
            let _ = a.add(b);
        }
        self.failures.merge(&o.failures);
        self.non_2xx += o.non_2xx;
        self.keep_alive_requests += o.keep_alive_requests;
        self.total_bytes += o.total_bytes;
        self.body_bytes += o.body_bytes;
        self.dropped_bytes += o.dropped_bytes;
        self.sent_bytes += o.sent_bytes;
        self.completed += o.completed;
        self.started += o.started;
        if let (Some(a), Some(b)) = (self.unfinished.as_mut(), o.unfinished.as_ref()) {
            let _ = a.add(b);
        }
        if let (Some(a), Some(b)) = (self.send_lag.as_mut(), o.send_lag.as_ref()) {
            let _ = a.add(b);
        }
        let _ = self.read_delay.add(&o.read_delay);
        self.naps += o.naps;
        match (self.timeline.as_mut(), o.timeline.take()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, b) => self.timeline = b,
            (Some(_), None) => {}
        }
    }

    /// A response recorded at `done` also counts in its interval ([`crate::timeline`]).
    #[inline]
    pub fn interval_response(
        &mut self,
        done: Instant,
        s: &Sample,
        corrected_total: Option<u64>,
        bytes: u64,
        length_failure: bool,
    ) {
        if let Some(t) = self.timeline.as_mut() {
            t.response(
                done,
                u64::from(s.total),
                corrected_total,
                bytes,
                length_failure,
            );
        }
    }

    /// A failure counted at `at` also counts in its interval; `completed`: it counts as a
    /// request that ended.
    #[inline]
    pub fn interval_failure(&mut self, at: Instant, kind: FailureKind, completed: bool) {
        if let Some(t) = self.timeline.as_mut() {
            t.failure(at, kind, completed);
        }
    }
}

/// Facts about the target and the response, learnt from the first good response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The `Server` header of the first response ("" when absent, as ab prints it).
    pub software: String,
    pub hostname: String,
    pub port: u16,
    pub path: String,
    /// Body length of the first good response (ab's "Document Length").
    pub document_length: u64,
    /// Over TLS: what the first connection's handshake settled on (ab's "SSL/TLS Protocol"
    /// lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSession>,
}

/// What a TLS handshake settled on, as ab reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSession {
    /// "TLSv1.2" or "TLSv1.3".
    pub protocol: String,
    /// The cipher suite by its OpenSSL name ("ECDHE-ECDSA-AES256-GCM-SHA384").
    pub cipher: String,
    /// The suite's symmetric key length, bits.
    pub cipher_bits: u32,
    /// The key exchange's group as OpenSSL names the server's temporary key ("X25519",
    /// "ECDH P-256"), and its size in bits (253 for X25519, as OpenSSL counts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_exchange: Option<(String, u32)>,
    /// The name sent by SNI; none when the host is an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// The settings a run used, as reports need them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub concurrency: u32,
    pub keep_alive: bool,
    /// Target request rate (requests/s), for an open-model run.
    pub rate: Option<f64>,
    pub threads: usize,
    pub http11: bool,
    /// HTTP/2 and HTTP/3: the streams open at once on each connection (absent for HTTP/1.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// The load spoke HTTP/3 over QUIC.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
    /// HTTP/3: new connections that resumed a session could send their requests in 0-RTT
    /// (`--0rtt`; what they did is the `zero_rtt` note). Scenarios do not set it, so no
    /// record has it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
    pub head: bool,
    /// Responses were timed by the kernel's receive stamps where the socket gave them (records
    /// made before stamps existed lack the field: their responses were timed when read).
    #[serde(default)]
    pub rx_stamps: bool,
    /// How workers waited for responses: "off" (woken by each), "auto", or a fixed nap ("50us").
    #[serde(default = "coalesce_off")]
    pub coalesce: String,
    /// With a minimum duration: how many times the load of `-n` requests ran back to back
    /// (the counts and timings are of all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u64>,
    /// The engine that ran the load: "epoll" or "io_uring", or "mixed" when generators on
    /// several hosts ran different ones (records made before there was a choice lack the
    /// field: theirs was epoll).
    #[serde(default = "engine_epoll")]
    pub engine: String,
}

impl RunSettings {
    /// How the load reached the server, for a protocol ab does not speak (HTTP/3); `None`
    /// otherwise.
    pub fn protocol_line(&self) -> Option<String> {
        self.http3.then(|| {
            let n = self.streams.unwrap_or(1);
            format!(
                "HTTP/3 over QUIC v1 (h3), {n} stream{} per connection{}",
                if n == 1 { "" } else { "s" },
                if self.zero_rtt { ", 0-RTT allowed" } else { "" }
            )
        })
    }
}

fn engine_epoll() -> String {
    "epoll".to_string()
}

fn coalesce_off() -> String {
    "off".to_string()
}

/// The whole result of one load run.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub server: ServerInfo,
    pub settings: RunSettings,
    /// Wall time from the first request to the last response (warm-up excluded).
    pub elapsed: Duration,
    pub rec: Recorder,
    /// CPU time the load generator itself used during the measured part (user + system).
    pub client_cpu: Duration,
    /// Why the run stopped early, when it did.
    pub stopped_early: Option<StopReason>,
    /// Things a reader of the numbers must know (port exhaustion, a saturated generator...).
    pub notes: Vec<Note>,
}

impl Measurement {
    /// ab's "Complete requests".
    pub fn complete(&self) -> u64 {
        self.rec.completed
    }
    pub fn failed(&self) -> u64 {
        self.rec.failures.total()
    }
    pub fn requests_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.rec.completed as f64 / secs
        } else {
            0.0
        }
    }
}
