//! Statistics across repetitions: one load says little (the reference posts' own numbers swing
//! wildly), so every metric of a (server, document) pair is summarized over its rounds with a
//! median, a 95% confidence interval and a flag when the rounds disagree.
//!
//! Choices, so a reader can judge the numbers:
//! - The centre is the **median** of the rounds: one disturbed round does not move it.
//! - The interval is **Student's t-interval on the mean** (mean ± t(0.975, n−1)·s/√n). With the
//!   3 to 10 rounds a benchmark affords, distribution-free intervals for the median cannot reach
//!   95% (with 5 rounds the widest, min to max, covers only 94%), and a bootstrap from so few
//!   values understates the spread; the t-interval is honest about small n because its
//!   multiplier grows (4.30 for 3 rounds). With one round there is no interval.
//! - A metric is **noisy** when the interval's half-width exceeds 5% of the median or the
//!   largest round exceeds the smallest by more than 10%.
//!
//! The same t distribution gives Welch's test, which [`crate::compare`] uses.

use crate::record::{LoadRecord, RunRecord, ServerStatus};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Half-width of the confidence interval, relative to the median, above which rounds are said to
/// disagree.
pub const NOISY_CI_FRACTION: f64 = 0.05;
/// Largest-to-smallest round ratio above which rounds are said to disagree.
pub const NOISY_MAX_OVER_MIN: f64 = 1.10;

/// What is summarized per (server, document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Complete requests per second of wall time.
    RequestsPerSecond,
    /// Requests per second for each core of CPU time the server had: its share, or the CPU it
    /// used when that was less. A capped server's own rate, comparable across servers capped
    /// differently. Only for loads with a CPU share.
    RequestsPerServerCore,
    /// Mean of the per-request Total time (connect to last byte), milliseconds.
    MeanLatencyMs,
    /// 99th percentile of the Total time, milliseconds.
    P99LatencyMs,
    /// Kbytes (1024 bytes) received per second, as ab's "Transfer rate".
    TransferRateKBps,
    /// Failed requests (every kind but write errors, as ab counts them).
    Failures,
    /// Server CPU seconds spent per 10 000 complete requests.
    ServerCpuSPer10k,
    /// Highest server memory use, MB (10^6 bytes).
    ServerPeakMemoryMb,
    /// The highest constant rate within a latency target, requests/s: from a capacity search
    /// ([`crate::capacity`]), not from the loads, so not among [`Metric::ALL`].
    Capacity,
}

impl Metric {
    /// Every metric, in the order reports show them.
    pub const ALL: [Metric; 8] = [
        Metric::RequestsPerSecond,
        Metric::RequestsPerServerCore,
        Metric::MeanLatencyMs,
        Metric::P99LatencyMs,
        Metric::TransferRateKBps,
        Metric::Failures,
        Metric::ServerCpuSPer10k,
        Metric::ServerPeakMemoryMb,
    ];

    /// Human name, with unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::RequestsPerSecond => "requests/s",
            Metric::RequestsPerServerCore => "requests/s per server core",
            Metric::MeanLatencyMs => "mean latency (ms)",
            Metric::P99LatencyMs => "p99 latency (ms)",
            Metric::TransferRateKBps => "transfer rate (KB/s)",
            Metric::Failures => "failed requests",
            Metric::ServerCpuSPer10k => "server CPU-s per 10k requests",
            Metric::ServerPeakMemoryMb => "server peak memory (MB)",
            Metric::Capacity => "capacity (requests/s)",
        }
    }

    /// Stable identifier, usable as a key in exported JSON.
    pub fn slug(self) -> &'static str {
        match self {
            Metric::RequestsPerSecond => "requests-per-second",
            Metric::RequestsPerServerCore => "requests-per-second-per-server-core",
            Metric::MeanLatencyMs => "mean-latency-ms",
            Metric::P99LatencyMs => "p99-latency-ms",
            Metric::TransferRateKBps => "transfer-rate-kbps",
            Metric::Failures => "failures",
            Metric::ServerCpuSPer10k => "server-cpu-s-per-10k",
            Metric::ServerPeakMemoryMb => "server-peak-memory-mb",
            Metric::Capacity => "capacity",
        }
    }

    /// Whether a larger value is the better one.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::RequestsPerSecond
                | Metric::RequestsPerServerCore
                | Metric::TransferRateKBps
                | Metric::Capacity
        )
    }

    /// This metric's value for one load; `None` when the load did not measure it (no server
    /// usage from Docker, or no complete request to spread CPU time over).
    pub fn value(self, l: &LoadRecord) -> Option<f64> {
        let r = &l.load;
        match self {
            Metric::RequestsPerSecond => Some(r.requests_per_second),
            Metric::RequestsPerServerCore => {
                // Over the CPU the server had: its share, or what it used when that was less
                // (a quota is a ceiling; a server held back by something else, or by other
                // tenants of its cores, did not get all of it).
                let share = l.server_share?;
                let used = l
                    .server_usage
                    .filter(|_| r.elapsed_s > 0.0)
                    .map(|u| u.cpu_s / r.elapsed_s)
                    .filter(|c| *c > 0.0);
                let cores = used.map_or(share, |c| c.min(share));
                Some(r.requests_per_second / cores)
            }
            Metric::MeanLatencyMs => {
                (r.timers.total.moments.count > 0).then(|| r.timers.total.mean_us / 1e3)
            }
            Metric::P99LatencyMs => {
                if r.timers.total.moments.count == 0 {
                    return None;
                }
                r.timers
                    .total
                    .percentiles_us
                    .iter()
                    .find(|(p, _)| (*p - 99.0).abs() < 1e-9)
                    .map(|&(_, v)| v as f64 / 1e3)
            }
            Metric::TransferRateKBps => Some(r.transfer_rate_kbps),
            Metric::Failures => Some(r.failed as f64),
            Metric::ServerCpuSPer10k => {
                let u = l.server_usage?;
                (r.complete > 0).then(|| u.cpu_s * 10_000.0 / r.complete as f64)
            }
            Metric::ServerPeakMemoryMb => l.server_usage.map(|u| u.peak_memory_bytes as f64 / 1e6),
            Metric::Capacity => None,
        }
    }
}

/// One metric over the rounds of one (server, document).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The per-round values, in round order.
    pub values: Vec<f64>,
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one round.
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    /// 95% t-interval on the mean; both bounds equal the value for one round.
    pub ci_low: f64,
    pub ci_high: f64,
    /// (max − min) / median; 0 when the median is 0.
    pub relative_spread: f64,
    pub noisy: bool,
}

impl Summary {
    /// Summarizes per-round values. Panics on an empty slice: a summary of nothing is a bug in
    /// the caller, who groups loads that exist.
    pub fn of(values: &[f64]) -> Summary {
        assert!(!values.is_empty(), "a summary needs at least one value");
        let n = values.len();
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = sample_sd(values, mean);
        let (min, max) = (sorted[0], sorted[n - 1]);
        let (ci_low, ci_high) = if n >= 2 {
            let half = t_quantile_975((n - 1) as f64) * sd / (n as f64).sqrt();
            (mean - half, mean + half)
        } else {
            (mean, mean)
        };
        let relative_spread = if median != 0.0 {
            (max - min) / median.abs()
        } else {
            0.0
        };
        let noisy = n >= 2
            && if median == 0.0 {
                max != min
            } else {
                (ci_high - ci_low) / 2.0 > NOISY_CI_FRACTION * median.abs()
                    || (min > 0.0 && max / min > NOISY_MAX_OVER_MIN)
            };
        Summary {
            values: values.to_vec(),
            n,
            median,
            mean,
            sd,
            min,
            max,
            ci_low,
            ci_high,
            relative_spread,
            noisy,
        }
    }

    /// Half the interval's width: the "±" reports print.
    pub fn ci_half_width(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0
    }
}

pub(crate) fn sample_sd(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// One metric's summary, tagged with the metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    pub metric: Metric,
    pub summary: Summary,
}

/// Every metric of one server serving one document, over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    pub server: String,
    pub document: String,
    pub url_path: String,
    /// How many rounds were recorded.
    pub rounds: usize,
    /// At least one round had the load generator saturated.
    pub client_bound: bool,
    /// The longest round's measured part, seconds, when it was too short to measure (see
    /// [`crate::record::is_too_short`]); `None` when every round lasted long enough.
    pub too_short_s: Option<f64>,
    /// How many times the load ran back to back in each round to last its `min_duration`
    /// (fewest, most); `None` when it ran once.
    pub repetitions: Option<(u64, u64)>,
    /// The CPU share the server had, in cores (smallest, largest over the rounds); `None` when
    /// it was not capped.
    pub shares: Option<(f64, f64)>,
    /// How much of its share the server used, median over the rounds (1.0: all of it); `None`
    /// without a share or Docker's figures.
    pub share_used: Option<f64>,
    /// Every round timed its responses by the kernel's receive stamps, so the latencies leave
    /// the generator's own delay in reading them out.
    pub rx_stamps: bool,
    /// The rounds whose halves differed beyond noise (1-based round, the load generator's
    /// note), in round order.
    pub unsteady: Vec<(u32, model::Note)>,
    /// In [`Metric::ALL`] order; metrics no round measured are left out.
    pub metrics: Vec<MetricSummary>,
}

impl GroupStats {
    pub fn get(&self, m: Metric) -> Option<&Summary> {
        self.metrics
            .iter()
            .find(|s| s.metric == m)
            .map(|s| &s.summary)
    }

    /// Requests/s or latency disagree across rounds: the headline numbers are uncertain.
    pub fn noisy(&self) -> bool {
        self.noisy_headlines().next().is_some()
    }

    /// The headline metrics (requests/s, mean latency) whose rounds disagree.
    pub fn noisy_headlines(&self) -> impl Iterator<Item = (Metric, &Summary)> {
        [Metric::RequestsPerSecond, Metric::MeanLatencyMs]
            .into_iter()
            .filter_map(|m| self.get(m).filter(|s| s.noisy).map(|s| (m, s)))
    }
}

/// Summarizes each metric of each loads group. A metric enters a summary only from the rounds
/// that measured it.
pub fn summarize_loads<'a>(
    server: &str,
    document: &str,
    loads: impl IntoIterator<Item = &'a LoadRecord>,
) -> Option<GroupStats> {
    let mut loads: Vec<&LoadRecord> = loads.into_iter().collect();
    if loads.is_empty() {
        return None;
    }
    loads.sort_by_key(|l| l.round);
    let metrics = Metric::ALL
        .iter()
        .filter_map(|&metric| {
            let values: Vec<f64> = loads.iter().filter_map(|l| metric.value(l)).collect();
            (!values.is_empty()).then(|| MetricSummary {
                metric,
                summary: Summary::of(&values),
            })
        })
        .collect();
    Some(GroupStats {
        server: server.to_string(),
        document: document.to_string(),
        url_path: loads[0].url_path.clone(),
        rounds: loads.len(),
        client_bound: loads.iter().any(|l| l.client_bound),
        shares: min_max(loads.iter().filter_map(|l| l.server_share)),
        share_used: {
            let used: Vec<f64> = loads
                .iter()
                .filter_map(|l| {
                    let (share, usage) = (l.server_share?, l.server_usage?);
                    (l.load.elapsed_s > 0.0).then(|| usage.cpu_s / l.load.elapsed_s / share)
                })
                .collect();
            (!used.is_empty()).then(|| Summary::of(&used).median)
        },
        too_short_s: loads
            .iter()
            .all(|l| crate::record::is_too_short(&l.load))
            .then(|| loads.iter().map(|l| l.load.elapsed_s).fold(0.0, f64::max)),
        repetitions: min_max(loads.iter().filter_map(|l| l.load.settings.repetitions)),
        rx_stamps: loads.iter().all(|l| l.load.settings.rx_stamps),
        unsteady: loads
            .iter()
            .flat_map(|l| {
                l.load
                    .notes
                    .iter()
                    .filter(|n| matches!(n, model::Note::Unsteady { .. }))
                    .map(|n| (l.round + 1, n.clone()))
            })
            .collect(),
        metrics,
    })
}

/// The smallest and largest of `values`; `None` when there are none.
fn min_max<T: PartialOrd + Copy>(values: impl Iterator<Item = T>) -> Option<(T, T)> {
    values.fold(None, |acc, v| {
        Some(match acc {
            None => (v, v),
            Some((lo, hi)) => (if v < lo { v } else { lo }, if v > hi { v } else { hi }),
        })
    })
}

/// The documents of a run, in the order they were first measured.
pub fn documents(record: &RunRecord) -> Vec<String> {
    let mut docs: Vec<String> = Vec::new();
    for l in &record.loads {
        if !docs.contains(&l.document) {
            docs.push(l.document.clone());
        }
    }
    docs
}

/// The servers of a run in scenario order, then any that only appear in the loads (a record
/// edited by hand, or written by a CLI that lists servers late).
pub fn servers(record: &RunRecord) -> Vec<String> {
    let mut names: Vec<String> = record.servers.iter().map(|s| s.name.clone()).collect();
    for l in &record.loads {
        if !names.contains(&l.server) {
            names.push(l.server.clone());
        }
    }
    names
}

/// Statistics of every (server, document) pair that has loads, documents first, then servers
/// in scenario order: the order every report and comparison shows them in.
pub fn summarize(record: &RunRecord) -> Vec<GroupStats> {
    let servers = servers(record);
    let mut out = Vec::new();
    for doc in documents(record) {
        for server in &servers {
            let group = record
                .loads
                .iter()
                .filter(|l| &l.server == server && l.document == doc);
            if let Some(g) = summarize_loads(server, &doc, group) {
                out.push(g);
            }
        }
    }
    out
}

/// Servers that could not be measured, with the reason.
pub fn unavailable(record: &RunRecord) -> Vec<(String, String)> {
    record
        .servers
        .iter()
        .filter_map(|s| match &s.status {
            ServerStatus::Unavailable { reason } => Some((s.name.clone(), reason.clone())),
            ServerStatus::Available { .. } => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The t distribution.

/// Two-sided p-value of Welch's t-test that the two samples have the same mean; `None` when
/// either side has fewer than two values, where no variance can be estimated.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let ma = a.iter().sum::<f64>() / na;
    let mb = b.iter().sum::<f64>() / nb;
    let va = sample_sd(a, ma).powi(2) / na;
    let vb = sample_sd(b, mb).powi(2) / nb;
    let se2 = va + vb;
    if se2 == 0.0 {
        // Both sides constant: identical, or different beyond any doubt.
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (ma - mb) / se2.sqrt();
    // Welch–Satterthwaite degrees of freedom; a zero-variance side contributes nothing.
    let mut denom = 0.0;
    if va > 0.0 {
        denom += va * va / (na - 1.0);
    }
    if vb > 0.0 {
        denom += vb * vb / (nb - 1.0);
    }
    let df = se2 * se2 / denom;
    Some(t_two_sided_p(t, df))
}

/// Student's t with `df` degrees of freedom, when `df` is one (positive, not NaN).
fn student_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom (1 when `df` is not positive:
/// no evidence either way).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    student_t(df).map_or(1.0, |d| (2.0 * d.sf(t.abs())).clamp(0.0, 1.0))
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom (the multiplier of a 95%
/// two-sided interval).
pub fn t_quantile_975(df: f64) -> f64 {
    t_critical(0.05, df)
}

/// The t beyond which Student's t with `df` degrees of freedom lies with two-sided probability
/// `p` (P(|T| ≥ t) = p): the multiplier of a two-sided interval at confidence 1 − p, and the
/// (1 − p/2) quantile; infinite when `df` is not positive.
pub fn t_critical(p: f64, df: f64) -> f64 {
    student_t(df).map_or(f64::INFINITY, |d| d.inverse_cdf(1.0 - p / 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided 95% critical values of Student's t.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (9.0, 2.262),
            (29.0, 2.045),
            (120.0, 1.980),
        ] {
            let got = t_quantile_975(df);
            assert!(close(got, want, 5e-4), "df {df}: {got} vs {want}");
        }
        assert!(close(t_quantile_975(1e6), 1.960, 5e-4));
    }

    #[test]
    fn t_p_values_at_known_points() {
        assert!(close(t_two_sided_p(0.0, 5.0), 1.0, 1e-12));
        // t = 2.571 with 5 df is the 95% critical value.
        assert!(close(t_two_sided_p(2.571, 5.0), 0.05, 1e-4));
        // With 1 df, t is Cauchy: P(|T| > 1) = 0.5.
        assert!(close(t_two_sided_p(1.0, 1.0), 0.5, 1e-12));
        assert!(close(t_two_sided_p(-1.0, 1.0), 0.5, 1e-12));
    }

    #[test]
    fn summary_median_interval_and_noise() {
        let s = Summary::of(&[100.0, 102.0, 98.0]);
        assert_eq!(s.median, 100.0);
        assert_eq!(s.mean, 100.0);
        assert!(close(s.sd, 2.0, 1e-12));
        // 4.303 * 2 / sqrt(3) = 4.969
        assert!(close(s.ci_half_width(), 4.969, 1e-3));
        assert!(!s.noisy, "a 5% half-width bound is not crossed");
        assert!(close(s.relative_spread, 0.04, 1e-12));

        let even = Summary::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(even.median, 2.5);

        let noisy = Summary::of(&[100.0, 120.0, 101.0]);
        assert!(noisy.noisy);

        let one = Summary::of(&[7.0]);
        assert_eq!((one.ci_low, one.ci_high, one.sd), (7.0, 7.0, 0.0));
        assert!(!one.noisy);

        let zeros = Summary::of(&[0.0, 0.0, 0.0]);
        assert!(!zeros.noisy);
        assert!(Summary::of(&[0.0, 3.0, 0.0]).noisy);
    }

    #[test]
    fn welch_separates_a_clear_drop_and_not_noise() {
        let base = [1000.0, 1010.0, 990.0];
        let slow = [700.0, 705.0, 695.0];
        let p = welch_t_test(&base, &slow).unwrap();
        assert!(p < 0.001, "p = {p}");
        let again = [1005.0, 995.0, 1002.0];
        let p = welch_t_test(&base, &again).unwrap();
        assert!(p > 0.5, "p = {p}");
        assert_eq!(welch_t_test(&[1.0], &base), None);
        assert_eq!(welch_t_test(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(welch_t_test(&[2.0, 2.0], &[3.0, 3.0]), Some(0.0));
    }

    #[test]
    fn welch_matches_a_hand_computed_case() {
        // a: mean 20, var 2.5 (n 5); b: mean 22, var 10 (n 5).
        // se² = 0.5 + 2 = 2.5, t = -2/1.5811 = -1.2649, df = 6.25 / (0.0625 + 1) = 5.882.
        let a = [18.0, 19.0, 20.0, 21.0, 22.0];
        let b = [18.0, 20.0, 22.0, 24.0, 26.0];
        let p = welch_t_test(&a, &b).unwrap();
        let want = t_two_sided_p(-2.0 / 2.5f64.sqrt(), 6.25 / 1.0625);
        assert!(close(p, want, 1e-12));
        // A t of 1.265 with ~5.9 df sits between the 0.20 (1.44) and 0.30 (1.13) points.
        assert!(p > 0.2 && p < 0.3, "p = {p}");
    }
}
