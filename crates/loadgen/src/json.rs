//! The serializable form of a [`Measurement`]: what `benchctl load --json` prints and what a
//! results file stores per load. It carries every counter, exact moments, percentiles and the
//! HdrHistograms themselves (V2 deflate serialization, base64), so any later report or
//! comparison can be computed exactly from it.

use crate::stats::{
    nth_value, Failures, Measurement, Moments, Note, RunSettings, ServerInfo, StopReason, Timer,
    Timers,
};
use crate::timeline::TimelineReport;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::{Counter, Histogram};
use serde::{Deserialize, Serialize};

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
    /// CPU seconds (user + system) the load generator used while measuring.
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

/// Why a stored histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistogramDecodeError {
    #[error("histogram is not valid base64 (was the results file edited?): {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram is not a V2 deflate HdrHistogram (was the results file edited?): {0}")]
    Deserialize(#[from] hdrhistogram::serialization::DeserializeError),
}

/// V2 deflate serialization, base64 (standard alphabet, padded): the encoding HdrHistogram's
/// other implementations read, so results files can be checked with their tools too.
pub fn encode_histogram<T: Counter>(h: &Histogram<T>) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail, and u64 counts always fit the V2 format, so an error here
    // would be a bug in the serializer rather than a condition to report.
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The inverse of [`encode_histogram`].
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, HistogramDecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s)?;
    Ok(Deserializer::new().deserialize(&mut bytes.as_slice())?)
}

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
