//! The load over time: per fixed interval of the measured part (1 s by default), the requests
//! that ended in it, its failures by kind, the bytes received and an HdrHistogram of its
//! latencies, so that a reader can see whether a load was steady (the load generator judges that from [`Point`]s).
//!
//! Recording stays on the worker: each worker keeps its own [`Timeline`] in its
//! [`crate::stats::Recorder`], indexed by interval number from the shared start of
//! measurement (so the workers' intervals line up), with histograms created only for the
//! intervals that have a response. Timelines are merged once at the end, like recorders.
//!
//! Every interval counts exactly what the recorder counts, at the instant it counts it (a
//! response when its last byte arrived, a failure when it was found), so the intervals add up
//! to the load's totals: completed requests, failures of each kind, bytes, and the histogram
//! counts to the main histograms' counts.
//!
//! A load longer than [`MAX_INTERVALS`] intervals doubles its interval length, merging
//! neighbouring intervals, as often as it takes: memory stays bounded and the sums exact.

use crate::failure::{FailureKind, Failures};
use crate::histogram::{decode_histogram, encode_histogram, HistogramDecodeError};
use crate::histogram::{HIST_MAX_US, HIST_SIGFIG};
use crate::steady::Point;
use hdrhistogram::{Counter, Histogram};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The interval length unless asked otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval a load may ask for: shorter ones hold too few requests to say
/// anything and cost a histogram each.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The most intervals a timeline keeps; beyond it the interval length doubles.
pub const MAX_INTERVALS: usize = 600;

/// One interval's counts, as a worker records them.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    /// Requests that ended in it, by any outcome but a connect failure (the recorder's
    /// `completed`).
    pub completed: u64,
    pub failures: Failures,
    /// Bytes read from the server for the responses that completed in it.
    pub total_bytes: u64,
    /// Total time of the responses that completed in it, µs (created with the first one).
    pub total: Option<Histogram<u32>>,
    /// Latency from each request's intended send time, µs (constant-rate runs).
    pub corrected: Option<Histogram<u32>>,
}

/// A histogram of the same precision as the run's main ones, which grows to the values it
/// is given: most intervals only ever see a narrow range of latencies.
fn interval_histogram() -> Histogram<u32> {
    Histogram::new(HIST_SIGFIG).expect("static histogram precision")
}

/// Records `us` as the main histograms do (values beyond their range saturate at it).
#[inline]
fn record(h: &mut Option<Histogram<u32>>, us: u64) {
    // Growing to the value cannot fail below the main histograms' bound.
    let _ = h
        .get_or_insert_with(interval_histogram)
        .record(us.min(HIST_MAX_US));
}

fn add(a: &mut Option<Histogram<u32>>, b: Option<Histogram<u32>>) {
    match (a.as_mut(), b) {
        // Auto-resizing histograms take any value of the other.
        (Some(x), Some(y)) => {
            let _ = x.add(&y);
        }
        (None, Some(y)) => *a = Some(y),
        (_, None) => {}
    }
}

impl Interval {
    fn absorb(&mut self, o: Interval) {
        self.completed += o.completed;
        self.failures.merge(&o.failures);
        self.total_bytes += o.total_bytes;
        add(&mut self.total, o.total);
        add(&mut self.corrected, o.corrected);
    }
}

/// One worker's (or, merged, the whole load's) intervals.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// The start of measurement: interval `i` covers `[origin + i·interval, origin + (i+1)·interval)`.
    origin: Instant,
    interval: Duration,
    interval_ns: u64,
    intervals: Vec<Interval>,
    /// The measured part's length, once the load is over ([`Timeline::close`]).
    elapsed: Option<Duration>,
}

impl Timeline {
    /// An empty timeline of `interval`-long intervals from `origin`. `interval` is at least
    /// [`MIN_INTERVAL`] (the load generator checks it).
    pub fn new(origin: Instant, interval: Duration) -> Timeline {
        let interval = interval.max(MIN_INTERVAL);
        Timeline {
            origin,
            interval,
            interval_ns: interval.as_nanos().min(u128::from(u64::MAX)) as u64,
            intervals: Vec::new(),
            elapsed: None,
        }
    }

    /// The interval length (longer than asked when the load outgrew [`MAX_INTERVALS`]).
    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// The interval `at` falls in.
    #[inline]
    fn slot(&mut self, at: Instant) -> &mut Interval {
        // Nanoseconds fit a u64 for 584 years, and a u64 division is cheaper than a u128 one.
        let since = at.saturating_duration_since(self.origin).as_nanos() as u64;
        let mut i = usize::try_from(since / self.interval_ns).unwrap_or(usize::MAX);
        while i >= MAX_INTERVALS {
            self.coarsen();
            i /= 2;
        }
        if i >= self.intervals.len() {
            self.intervals.resize_with(i + 1, Interval::default);
        }
        &mut self.intervals[i]
    }

    /// A response recorded at `done`, as the recorder counts it: its Total time, its latency
    /// from the intended send time (constant-rate runs), the bytes read for it, and whether
    /// its length made it a failure.
    #[inline]
    pub fn response(
        &mut self,
        done: Instant,
        total_us: u64,
        corrected_us: Option<u64>,
        bytes: u64,
        length_failure: bool,
    ) {
        let s = self.slot(done);
        s.completed += 1;
        s.total_bytes += bytes;
        if length_failure {
            s.failures.add(FailureKind::Length);
        }
        record(&mut s.total, total_us);
        if let Some(c) = corrected_us {
            record(&mut s.corrected, c);
        }
    }

    /// A failure found at `at`; `completed`: the recorder counts it as a request that ended
    /// (every kind but a failed connect).
    #[inline]
    pub fn failure(&mut self, at: Instant, kind: FailureKind, completed: bool) {
        let s = self.slot(at);
        s.failures.add(kind);
        if completed {
            s.completed += 1;
        }
    }

    /// Doubles the interval length, merging intervals pairwise.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.intervals);
        let mut merged: Vec<Interval> = Vec::with_capacity(old.len().div_ceil(2));
        for (i, iv) in old.into_iter().enumerate() {
            if i % 2 == 0 {
                merged.push(iv);
            } else if let Some(last) = merged.last_mut() {
                last.absorb(iv);
            }
        }
        self.intervals = merged;
        self.interval *= 2;
        self.interval_ns = self.interval_ns.saturating_mul(2);
    }

    /// Adds another worker's timeline (same origin) to this one.
    pub fn merge(&mut self, mut o: Timeline) {
        while self.interval < o.interval {
            self.coarsen();
        }
        while o.interval < self.interval {
            o.coarsen();
        }
        if o.intervals.len() > self.intervals.len() {
            self.intervals
                .resize_with(o.intervals.len(), Interval::default);
        }
        for (a, b) in self.intervals.iter_mut().zip(o.intervals) {
            a.absorb(b);
        }
    }

    /// Ends the timeline with the measured part: the intervals cover `elapsed` exactly (empty
    /// ones where nothing ended, none after it: anything stamped at its very end joins the last
    /// interval), and only the last may be shorter than the others.
    pub fn close(&mut self, elapsed: Duration) {
        let n = (elapsed.as_nanos().div_ceil(u128::from(self.interval_ns)) as usize).max(1);
        if self.intervals.len() > n {
            let extra: Vec<Interval> = self.intervals.drain(n..).collect();
            let last = &mut self.intervals[n - 1];
            for iv in extra {
                last.absorb(iv);
            }
        } else {
            self.intervals.resize_with(n, Interval::default);
        }
        self.elapsed = Some(elapsed);
    }

    /// Start and length of interval `i`, seconds.
    fn span(&self, i: usize) -> (f64, f64) {
        let iv = self.interval.as_secs_f64();
        let start = iv * i as f64;
        let len = match self.elapsed {
            Some(e) => (e.as_secs_f64() - start).clamp(0.0, iv),
            None => iv,
        };
        (start, len)
    }

    /// The intervals as the steady-state judgement reads them: requests and median latency,
    /// from the corrected histograms when `corrected` (constant-rate runs).
    pub fn points(&self, corrected: bool) -> Vec<Point> {
        self.intervals
            .iter()
            .enumerate()
            .map(|(i, iv)| {
                let (start_s, duration_s) = self.span(i);
                let h = if corrected { &iv.corrected } else { &iv.total };
                point(start_s, duration_s, iv.completed, h.as_ref())
            })
            .collect()
    }
}

fn point<T: Counter>(
    start_s: f64,
    duration_s: f64,
    requests: u64,
    h: Option<&Histogram<T>>,
) -> Point {
    let h = h.filter(|h| !h.is_empty());
    Point {
        start_s,
        duration_s,
        requests,
        p50_us: h.map(|h| h.value_at_quantile(0.5)),
        p99_us: h.map(|h| h.value_at_quantile(0.99)),
    }
}

/// The timeline as a load report stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineReport {
    /// Length of every interval but the last, seconds (the last one ends with the measured
    /// part, so it may be shorter).
    pub interval_s: f64,
    /// In order from the start of measurement, covering all of it.
    pub intervals: Vec<IntervalReport>,
}

/// One interval of a [`TimelineReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Seconds from the start of measurement.
    pub start_s: f64,
    /// Its length, seconds.
    pub duration_s: f64,
    /// Requests that ended in it, by any outcome but a failed connect (they add up to the
    /// load's `complete`).
    pub completed: u64,
    /// Failed requests by kind (absent when none).
    #[serde(default, skip_serializing_if = "Failures::is_zero")]
    pub failures: Failures,
    /// Bytes received for the responses that completed in it.
    pub total_bytes: u64,
    /// Total time of those responses, µs: HdrHistogram, V2 deflate, base64 (absent when none
    /// completed in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<String>,
    /// Latency from each request's intended send time, µs (constant-rate runs), as `total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<String>,
}

impl TimelineReport {
    pub fn new(t: &Timeline) -> TimelineReport {
        let encode =
            |h: &Option<Histogram<u32>>| h.as_ref().filter(|h| !h.is_empty()).map(encode_histogram);
        TimelineReport {
            interval_s: t.interval.as_secs_f64(),
            intervals: t
                .intervals
                .iter()
                .enumerate()
                .map(|(i, iv)| {
                    let (start_s, duration_s) = t.span(i);
                    IntervalReport {
                        start_s,
                        duration_s,
                        completed: iv.completed,
                        failures: iv.failures,
                        total_bytes: iv.total_bytes,
                        total: encode(&iv.total),
                        corrected: encode(&iv.corrected),
                    }
                })
                .collect(),
        }
    }

    /// Every interval's requests and latency percentiles, from the corrected histograms when
    /// `corrected` and the interval has them.
    pub fn points(&self, corrected: bool) -> Result<Vec<Point>, HistogramDecodeError> {
        self.intervals
            .iter()
            .map(|iv| {
                let encoded = if corrected { &iv.corrected } else { &iv.total };
                let h = encoded.as_deref().map(decode_histogram).transpose()?;
                Ok(point(iv.start_s, iv.duration_s, iv.completed, h.as_ref()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(origin: Instant, ms: u64) -> Instant {
        origin + Duration::from_millis(ms)
    }

    #[test]
    fn events_land_in_their_interval_and_sum_to_what_was_recorded() {
        let o = Instant::now();
        let mut t = Timeline::new(o, Duration::from_millis(100));
        t.response(at(o, 5), 900, None, 200, false);
        t.response(at(o, 99), 1100, None, 200, true);
        t.failure(at(o, 250), FailureKind::Receive, true);
        t.failure(at(o, 260), FailureKind::Connect, false);
        t.close(Duration::from_millis(330));
        let iv = t.intervals();
        assert_eq!(iv.len(), 4);
        assert_eq!(iv[0].completed, 2);
        assert_eq!(iv[0].failures.length, 1);
        assert_eq!(iv[0].total_bytes, 400);
        assert_eq!(iv[0].total.as_ref().unwrap().len(), 2);
        assert_eq!(iv[1].completed, 0);
        assert!(iv[1].total.is_none());
        assert_eq!((iv[2].completed, iv[2].failures.total()), (1, 2));
        let r = TimelineReport::new(&t);
        assert!((r.intervals[3].start_s - 0.3).abs() < 1e-9);
        assert!((r.intervals[3].duration_s - 0.03).abs() < 1e-9);
        let points = r.points(false).unwrap();
        assert_eq!(points[0].p50_us, Some(900));
        assert_eq!(points[1].p50_us, None);
    }

    #[test]
    fn a_long_load_doubles_its_intervals_and_keeps_every_count() {
        let o = Instant::now();
        let mut t = Timeline::new(o, Duration::from_millis(10));
        // 2.5 times the most intervals kept: the length doubles twice.
        let n = (MAX_INTERVALS as u64) * 25 / 10;
        for i in 0..n {
            t.response(at(o, i * 10 + 1), 100 + i, None, 1, false);
        }
        assert_eq!(t.interval(), Duration::from_millis(40));
        assert!(t.intervals().len() <= MAX_INTERVALS);
        let done: u64 = t.intervals().iter().map(|i| i.completed).sum();
        let timed: u64 = t
            .intervals()
            .iter()
            .filter_map(|i| i.total.as_ref())
            .map(|h| h.len())
            .sum();
        assert_eq!((done, timed), (n, n));
        assert!(t.intervals().iter().all(|i| i.completed == 4));
    }

    #[test]
    fn merging_lines_up_intervals_of_different_lengths() {
        let o = Instant::now();
        let mut a = Timeline::new(o, Duration::from_millis(10));
        let mut b = Timeline::new(o, Duration::from_millis(10));
        for i in 0..(MAX_INTERVALS as u64 + 10) {
            b.response(at(o, i * 10), 50, Some(60), 1, false);
        }
        a.response(at(o, 15), 50, Some(60), 1, false);
        a.merge(b);
        assert_eq!(a.interval(), Duration::from_millis(20));
        assert_eq!(a.intervals()[0].completed, 3);
        let sum: u64 = a.intervals().iter().map(|i| i.completed).sum();
        assert_eq!(sum, MAX_INTERVALS as u64 + 11);
        let corrected: u64 = a
            .intervals()
            .iter()
            .filter_map(|i| i.corrected.as_ref())
            .map(|h| h.len())
            .sum();
        assert_eq!(corrected, sum);
    }

    #[test]
    fn a_response_at_the_very_end_joins_the_last_interval() {
        let o = Instant::now();
        let mut t = Timeline::new(o, Duration::from_millis(100));
        t.response(at(o, 50), 10, None, 1, false);
        t.response(at(o, 200), 10, None, 1, false);
        t.close(Duration::from_millis(200));
        assert_eq!(t.intervals().len(), 2);
        assert_eq!(t.intervals()[1].completed, 1);
    }
}
