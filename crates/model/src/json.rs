//! The serializable form of a [`Measurement`]: what `benchctl load --json` prints and what a
//! results file stores per load. It carries every counter, exact moments, percentiles and the
//! HdrHistograms themselves (V2 deflate serialization, base64), so any later report or
//! comparison can be computed exactly from it.

use crate::stats::{
    nth_value, Failures, Measurement, Moments, Note, RunSettings, ServerInfo, StopReason, Timer,
    Timers,
};
use crate::timeline::TimelineReport;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use crate::histogram::{decode_histogram, encode_histogram, HistogramDecodeError};

/// Version of this document's layout; bumped on any incompatible change.
pub const LOAD_REPORT_VERSION: u32 = 1;

/// One timer's distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerReport {
    /// Exact count, min, max, sum and sum of squares, µs.
    pub moments: Moments,
    /// Arithmetic mean, µs.
    pub mean_us: f64,
    /// Sample standard deviation, µs.
    pub sd_us: f64,
    /// (percentile, value µs) pairs: 50, 66, 75, 80, 90, 95, 98, 99, 99.9, 100, picked with ab's
    /// index rule (element `n * p / 100` of the sorted values; the maximum for 100). Exact when
    /// the run kept per-request samples, else read from the histogram (within 0.1%); the 100
    /// entry is always the exact maximum.
    pub percentiles_us: Vec<(f64, u64)>,
    /// The HdrHistogram, V2 deflate serialization, base64 (standard alphabet).
    pub histogram: String,
}

/// Everything one load run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub version: u32,
    pub server: ServerInfo,
    pub settings: RunSettings,
    /// Wall time of the measured part, seconds.
    pub elapsed_s: f64,
    /// ab's "Complete requests".
    pub complete: u64,
    /// Requests begun in the measured window, answered or not (absent from records made before
    /// it was counted).
    #[serde(default)]
    pub started: u64,
    /// ab's "Failed requests" (every failure kind but write errors).
    pub failed: u64,
    pub failures: Failures,
    pub non_2xx: u64,
    pub keep_alive_requests: u64,
    /// Bytes read: headers and bodies (ab's "Total transferred").
    pub total_bytes: u64,
    /// Body bytes read (ab's "HTML transferred").
    pub body_bytes: u64,
    pub sent_bytes: u64,
    pub requests_per_second: f64,
    /// Kbytes/s received, as ab computes its "Transfer rate".
    pub transfer_rate_kbps: f64,
    /// CPU seconds (user + system) the load generator's worker threads used while measuring.
    pub client_cpu_s: f64,
    /// ab's four timers: `connect`, `processing`, `waiting` and `total`.
    #[serde(flatten)]
    pub timers: Timers<TimerReport>,
    /// Total latency from each request's intended send time (constant-rate runs only).
    pub corrected_total: Option<TimerReport>,
    /// Constant-rate runs bounded by a duration: the requests still unanswered when the
    /// measurement window closed, each with how long it had waited by then since its intended
    /// send time (a lower bound of its latency). Absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<TimerReport>,
    /// Constant-rate runs: how late the requests whose connection was free left after their
    /// intended send time, the generator's own lateness (absent in other runs and in records
    /// made before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<TimerReport>,
    pub stopped_early: Option<StopReason>,
    /// Recorded responses timed by the kernel's receive stamps; the others (all of them in
    /// records made before stamps existed) were timed when the generator read them.
    #[serde(default)]
    pub stamped: u64,
    /// How long stamped responses had been complete on this host before the generator read
    /// them, µs: the generator's own delay, excluded from every other timer. Percentiles from
    /// the histogram.
    #[serde(default)]
    pub read_delay: Option<TimerReport>,
    /// Times a worker slept to collect responses in batches rather than being woken by each.
    #[serde(default)]
    pub naps: u64,
    /// What a reader of these numbers must know; absent from records made before notes were
    /// kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    /// The load over time: per interval of the measured part, its requests, failures, bytes
    /// and latency histograms ([`crate::timeline`]); absent from records made before it was
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineReport>,
}

/// The percentiles every [`TimerReport`] lists, in per mille so that 99.9 is exact.
pub const REPORT_PERCENTILES_PERMILLE: [u32; 10] =
    [500, 660, 750, 800, 900, 950, 980, 990, 999, 1000];

/// Sample standard deviation (n - 1) about the true mean, µs, from the exact integer moments.
fn sample_sd(m: &Moments) -> f64 {
    if m.count < 2 {
        return 0.0;
    }
    let n = u128::from(m.count);
    let sum = u128::from(m.sum);
    // n·Σx² − (Σx)² is exact in integers and never negative; fall back to floats only if it
    // overflows, which takes sums beyond 10^19 µs.
    match n
        .checked_mul(m.sum_sq)
        .and_then(|a| a.checked_sub(sum * sum))
    {
        Some(num) => (num as f64 / (n * (n - 1)) as f64).sqrt(),
        None => {
            let mean = m.mean();
            let var = (m.sum_sq as f64 - m.count as f64 * mean * mean) / (m.count - 1) as f64;
            var.max(0.0).sqrt()
        }
    }
}

/// ab's pick of the `pm`-per-mille element among `n` sorted values (0-based index
/// `n * pm / 1000`; the last one for 100%).
fn pick_index(n: u64, pm: u32) -> u64 {
    if pm >= 1000 {
        n - 1
    } else {
        n * u64::from(pm) / 1000
    }
}

/// Moments rebuilt from a histogram, for the corrected timer, which keeps no exact moments:
/// every value counts as the highest value of its bucket (within 0.1%).
fn moments_of(h: &Histogram<u64>) -> Moments {
    let mut m = Moments::default();
    for v in h.iter_recorded() {
        let x = h.highest_equivalent(v.value_iterated_to());
        let c = v.count_since_last_iteration();
        m.count += c;
        m.min = m.min.min(x);
        m.max = m.max.max(x);
        m.sum += x * c;
        m.sum_sq += u128::from(x) * u128::from(x) * u128::from(c);
    }
    m
}

impl TimerReport {
    /// Percentiles come from the exact samples when the run kept them (`values`, unsorted),
    /// else from the histogram; either way with ab's index rule, so the 50..99 and 100 entries
    /// are the numbers ab's percentage table shows, in µs. The 100% entry is the exact maximum.
    fn new(moments: Moments, h: &Histogram<u64>, values: Option<Vec<u64>>) -> TimerReport {
        let n = moments.count;
        let percentiles_us = if n == 0 {
            Vec::new()
        } else if let Some(mut v) = values {
            v.sort_unstable();
            REPORT_PERCENTILES_PERMILLE
                .iter()
                .map(|&pm| (f64::from(pm) / 10.0, v[pick_index(n, pm) as usize]))
                .collect()
        } else {
            REPORT_PERCENTILES_PERMILLE
                .iter()
                .map(|&pm| {
                    let us = if pm >= 1000 {
                        moments.max
                    } else {
                        nth_value(h, &moments, pick_index(n, pm))
                    };
                    (f64::from(pm) / 10.0, us)
                })
                .collect()
        };
        TimerReport {
            moments,
            mean_us: moments.mean(),
            sd_us: sample_sd(&moments),
            percentiles_us,
            histogram: encode_histogram(h),
        }
    }

    /// Decodes this timer's histogram.
    pub fn decode_histogram(&self) -> Result<Histogram<u64>, HistogramDecodeError> {
        decode_histogram(&self.histogram)
    }

    /// The value listed for percentile `p` (e.g. 99.9), µs, if it is one of the listed ones.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles_us
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|&(_, v)| v)
    }
}

impl LoadReport {
    /// Everything `m` measured. Moments, counters and histograms are copied exactly; the
    /// percentile lists are exact when the run kept per-request samples (request-count-bounded
    /// runs) and read from the histograms otherwise (within 0.1%), the corrected timer always
    /// from its histogram (its moments too, as no exact ones are kept for it).
    pub fn from_measurement(m: &Measurement) -> LoadReport {
        let r = &m.rec;
        let secs = m.elapsed.as_secs_f64();
        let timers = r.moments.map(|t, moments| {
            let values = r
                .samples
                .as_ref()
                .map(|s| s.iter().map(|x| *x.timers().get(t)).collect::<Vec<u64>>());
            TimerReport::new(*moments, r.hist.get(t), values)
        });
        LoadReport {
            version: LOAD_REPORT_VERSION,
            server: m.server.clone(),
            settings: m.settings.clone(),
            elapsed_s: secs,
            complete: m.complete(),
            started: r.started,
            failed: m.failed(),
            failures: r.failures,
            non_2xx: r.non_2xx,
            keep_alive_requests: r.keep_alive_requests,
            total_bytes: r.total_bytes,
            body_bytes: r.body_bytes,
            sent_bytes: r.sent_bytes,
            requests_per_second: m.requests_per_second(),
            transfer_rate_kbps: if secs > 0.0 {
                r.total_bytes as f64 / 1024.0 / secs
            } else {
                0.0
            },
            client_cpu_s: m.client_cpu.as_secs_f64(),
            timers,
            corrected_total: r
                .corrected
                .as_ref()
                .map(|h| TimerReport::new(moments_of(h), h, None)),
            unfinished: r
                .unfinished
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| TimerReport::new(moments_of(h), h, None)),
            send_lag: r
                .send_lag
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| TimerReport::new(moments_of(h), h, None)),
            stopped_early: m.stopped_early,
            stamped: r.stamped(),
            read_delay: (r.stamped() > 0)
                .then(|| TimerReport::new(moments_of(&r.read_delay), &r.read_delay, None)),
            naps: r.naps,
            notes: m.notes.clone(),
            timeline: r.timeline.as_ref().map(TimelineReport::new),
        }
    }

    /// One of the four ab timers.
    pub fn timer(&self, t: Timer) -> &TimerReport {
        self.timers.get(t)
    }

    /// Decodes one timer's histogram back into an HdrHistogram.
    pub fn histogram(&self, t: Timer) -> Result<Histogram<u64>, HistogramDecodeError> {
        self.timer(t).decode_histogram()
    }

    /// The `pm`-per-mille latency from each request's intended send time (constant-rate runs)
    /// over every request measured, µs, with ab's index rule: the answered ones at their
    /// latency, the ones still unanswered when the window closed at how long they had waited
    /// by then (a lower bound), so a server that stops answering cannot hide behind the end of
    /// the window. `None` without a corrected timer or without any request.
    pub fn corrected_percentile_counting_unfinished(
        &self,
        pm: u32,
    ) -> Result<Option<u64>, HistogramDecodeError> {
        let Some(corrected) = &self.corrected_total else {
            return Ok(None);
        };
        let mut h = corrected.decode_histogram()?;
        if let Some(u) = &self.unfinished {
            // Every histogram of a run has the same bounds, so adding cannot fail.
            let _ = h.add(u.decode_histogram()?);
        }
        let n = h.len();
        if n == 0 {
            return Ok(None);
        }
        let m = moments_of(&h);
        Ok(Some(if pm >= 1000 {
            m.max
        } else {
            nth_value(&h, &m, pick_index(n, pm))
        }))
    }

    /// Decodes the coordinated-omission-corrected histogram, when the run had one.
    pub fn corrected_histogram(&self) -> Option<Result<Histogram<u64>, HistogramDecodeError>> {
        self.corrected_total
            .as_ref()
            .map(TimerReport::decode_histogram)
    }
}

/// Why load reports could not be merged into one.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("there is no load report to merge")]
    Empty,
    #[error("load reports of layout versions {0} and {1} cannot be merged")]
    Version(u32, u32),
    #[error(transparent)]
    Decode(#[from] HistogramDecodeError),
    #[error("{what}: histograms of {a} and {b} significant figures cannot be added without loss")]
    Precision { what: String, a: u8, b: u8 },
    #[error("{what}: {detail}")]
    Add { what: String, detail: String },
    #[error("timelines counted in intervals of {0} s and {1} s cannot be aligned")]
    Interval(f64, f64),
}

/// The sum of histograms, at their common precision: every count of every part kept in its
/// own bucket, none averaged or re-binned.
fn add_histograms<'a>(
    what: &str,
    parts: impl IntoIterator<Item = &'a str>,
) -> Result<Option<Histogram<u64>>, MergeError> {
    let mut sum: Option<Histogram<u64>> = None;
    for text in parts {
        let mut h = decode_histogram(text)?;
        match &mut sum {
            None => {
                // Parts cover different ranges (a timeline interval's grows with what it
                // saw): the sum grows to hold them all, at the same precision.
                h.auto(true);
                sum = Some(h);
            }
            Some(s) => {
                if s.sigfig() != h.sigfig() {
                    return Err(MergeError::Precision {
                        what: what.to_string(),
                        a: s.sigfig(),
                        b: h.sigfig(),
                    });
                }
                s.add(&h).map_err(|e| MergeError::Add {
                    what: what.to_string(),
                    detail: format!("{e:?}"),
                })?;
            }
        }
    }
    Ok(sum)
}

/// One timer of several parts: exact moments merged, histograms added, percentiles read from
/// the sum (ab's index rule; the 100% entry the exact maximum).
fn merge_timer(what: &str, parts: &[&TimerReport]) -> Result<TimerReport, MergeError> {
    let mut moments = Moments::default();
    for p in parts {
        moments.merge(&p.moments);
    }
    let h = add_histograms(what, parts.iter().map(|p| p.histogram.as_str()))?
        .ok_or(MergeError::Empty)?;
    Ok(TimerReport::new(moments, &h, None))
}

/// A timer only some runs have (corrected, unfinished, send lag, read delay): the sum of those
/// that have it, its moments rebuilt from the summed histogram as each part's were.
fn merge_optional<'a>(
    what: &str,
    parts: impl IntoIterator<Item = Option<&'a TimerReport>>,
) -> Result<Option<TimerReport>, MergeError> {
    let present: Vec<&TimerReport> = parts.into_iter().flatten().collect();
    if present.is_empty() {
        return Ok(None);
    }
    let h = add_histograms(what, present.iter().map(|p| p.histogram.as_str()))?
        .ok_or(MergeError::Empty)?;
    Ok(Some(TimerReport::new(moments_of(&h), &h, None)))
}

/// Adds intervals: counts and bytes summed, failures merged, histograms added; the span runs
/// from the first one's start over all their lengths.
fn add_intervals(
    what: &str,
    here: &[&crate::timeline::IntervalReport],
    duration_s: f64,
) -> Result<crate::timeline::IntervalReport, MergeError> {
    let mut failures = Failures::default();
    for iv in here {
        failures.merge(&iv.failures);
    }
    let encode =
        |h: Option<Histogram<u64>>| h.filter(|h| !h.is_empty()).map(|h| encode_histogram(&h));
    Ok(crate::timeline::IntervalReport {
        start_s: here[0].start_s,
        duration_s,
        completed: here.iter().map(|iv| iv.completed).sum(),
        failures,
        total_bytes: here.iter().map(|iv| iv.total_bytes).sum(),
        total: encode(add_histograms(
            what,
            here.iter().filter_map(|iv| iv.total.as_deref()),
        )?),
        corrected: encode(add_histograms(
            what,
            here.iter().filter_map(|iv| iv.corrected.as_deref()),
        )?),
    })
}

/// `t` counted in intervals `factor` times as long: each run of `factor` intervals becomes one,
/// as a timeline coarsens itself when a load outlasts its interval count.
fn coarsen_report(t: &TimelineReport, factor: usize) -> Result<TimelineReport, MergeError> {
    if factor <= 1 {
        return Ok(t.clone());
    }
    let intervals = t
        .intervals
        .chunks(factor)
        .enumerate()
        .map(|(i, run)| {
            let here: Vec<&crate::timeline::IntervalReport> = run.iter().collect();
            let duration_s = run.iter().map(|iv| iv.duration_s).sum();
            add_intervals(&format!("timeline interval {i}"), &here, duration_s)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TimelineReport {
        interval_s: t.interval_s * factor as f64,
        intervals,
    })
}

/// Timelines of parts that started at the same instant, added interval by interval. A part that
/// ran long enough to have coarsened its intervals (they double past a count) sets the length:
/// the others are coarsened to it first. Lengths that are not a power-of-two multiple of each
/// other (parts run with different `--interval`s) cannot be aligned.
fn merge_timelines(parts: &[&TimelineReport]) -> Result<TimelineReport, MergeError> {
    let coarsest = parts.iter().map(|t| t.interval_s).fold(0.0, f64::max);
    let aligned = parts
        .iter()
        .map(|t| {
            let ratio = coarsest / t.interval_s;
            let factor = ratio.round();
            let power_of_two = factor >= 1.0
                && (ratio - factor).abs() < 1e-6 * factor
                && (factor as u64).is_power_of_two();
            if !power_of_two {
                return Err(MergeError::Interval(t.interval_s, coarsest));
            }
            coarsen_report(t, factor as usize)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let len = aligned.iter().map(|t| t.intervals.len()).max().unwrap_or(0);
    let mut intervals = Vec::with_capacity(len);
    for i in 0..len {
        // The parts started at the same instant: interval i of each covers the same span.
        let here: Vec<&crate::timeline::IntervalReport> =
            aligned.iter().filter_map(|t| t.intervals.get(i)).collect();
        let duration_s = here.iter().map(|iv| iv.duration_s).fold(0.0, f64::max);
        intervals.push(add_intervals(
            &format!("timeline interval {i}"),
            &here,
            duration_s,
        )?);
    }
    Ok(TimelineReport {
        interval_s: coarsest,
        intervals,
    })
}

impl LoadReport {
    /// One report of several generators' that sent one load together, each its share, all
    /// started at the same instant: counters and CPU time summed, exact moments merged,
    /// histograms added at their common precision (no count lost or moved; percentiles are
    /// read from the sum, never averaged), timelines added interval by interval. The load
    /// lasted as long as its longest part; its rate is the sum of requests over that time.
    /// Settings add up where they are shares (concurrency, rate, threads) and are the first
    /// part's otherwise, as is the server's description.
    pub fn merge(parts: &[LoadReport]) -> Result<LoadReport, MergeError> {
        let first = parts.first().ok_or(MergeError::Empty)?;
        if let Some(p) = parts.iter().find(|p| p.version != first.version) {
            return Err(MergeError::Version(first.version, p.version));
        }
        let sum = |f: fn(&LoadReport) -> u64| parts.iter().map(f).sum::<u64>();
        let elapsed_s = parts.iter().map(|p| p.elapsed_s).fold(0.0, f64::max);
        let complete = sum(|p| p.complete);
        let total_bytes = sum(|p| p.total_bytes);
        let mut failures = Failures::default();
        for p in parts {
            failures.merge(&p.failures);
        }
        let timers = first.timers.try_map(|t, _| {
            let each: Vec<&TimerReport> = parts.iter().map(|p| p.timer(t)).collect();
            merge_timer(&format!("{t:?} time"), &each)
        })?;
        let mut settings = first.settings.clone();
        settings.concurrency = parts.iter().map(|p| p.settings.concurrency).sum();
        settings.threads = parts.iter().map(|p| p.settings.threads).sum();
        if parts
            .iter()
            .any(|p| p.settings.engine != first.settings.engine)
        {
            // Generators on hosts that differ in what they allow.
            settings.engine = "mixed".to_string();
        }
        settings.rate = parts.iter().map(|p| p.settings.rate).sum::<Option<f64>>();
        let mut notes: Vec<Note> = Vec::new();
        for n in parts.iter().flat_map(|p| &p.notes) {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        let timelines: Vec<&TimelineReport> =
            parts.iter().filter_map(|p| p.timeline.as_ref()).collect();
        Ok(LoadReport {
            version: first.version,
            server: first.server.clone(),
            settings,
            elapsed_s,
            complete,
            started: sum(|p| p.started),
            failed: sum(|p| p.failed),
            failures,
            non_2xx: sum(|p| p.non_2xx),
            keep_alive_requests: sum(|p| p.keep_alive_requests),
            total_bytes,
            body_bytes: sum(|p| p.body_bytes),
            sent_bytes: sum(|p| p.sent_bytes),
            requests_per_second: if elapsed_s > 0.0 {
                complete as f64 / elapsed_s
            } else {
                0.0
            },
            transfer_rate_kbps: if elapsed_s > 0.0 {
                total_bytes as f64 / 1024.0 / elapsed_s
            } else {
                0.0
            },
            client_cpu_s: parts.iter().map(|p| p.client_cpu_s).sum(),
            timers,
            corrected_total: merge_optional(
                "corrected total time",
                parts.iter().map(|p| p.corrected_total.as_ref()),
            )?,
            unfinished: merge_optional(
                "unfinished requests",
                parts.iter().map(|p| p.unfinished.as_ref()),
            )?,
            send_lag: merge_optional("send lag", parts.iter().map(|p| p.send_lag.as_ref()))?,
            stopped_early: parts.iter().find_map(|p| p.stopped_early),
            stamped: sum(|p| p.stamped),
            read_delay: merge_optional("read delay", parts.iter().map(|p| p.read_delay.as_ref()))?,
            naps: sum(|p| p.naps),
            notes,
            timeline: if timelines.is_empty() {
                None
            } else {
                Some(merge_timelines(&timelines)?)
            },
        })
    }
}
