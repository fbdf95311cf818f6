//! A/B in one sitting: the candidate and the baseline measured side by side, and judged by the
//! ratios of their paired rounds.
//!
//! Comparing the repetitions of one sitting with those of another (what [`crate::compare`]
//! does with two stored records) leaves out the variance between sittings: other tenants of
//! the machine, its thermal state, a kernel update. An A/B run ([`crate::AgainstRecord`])
//! measures both sides in one invocation, each server and document once per side per round,
//! both at the same time on the same CPUs (each under its own CPU share), so that whatever
//! slows the machine for a moment slows both alike; or (`--in-turn`, and records made before)
//! back to back, in ABBA order (one side first in every other round, the other in the rest;
//! which one starts is drawn per server, as is the servers' order in each round), so that both
//! see the same machine and a drift within a round falls on both sides alike.
//!
//! **Method.** For each server, document and metric, round `i` gives the ratio
//! `r_i = candidate_i / baseline_i`. Log ratios because a slowdown is a factor (a server 10%
//! slower is 10% slower at 2,000 or at 20,000 requests/s) and their spread is closer to
//! symmetric than the ratios'. The estimate and its interval are the Hodges-Lehmann estimate
//! and the Wilcoxon signed-rank interval on the `ln r_i` ([`signed_rank`]), mapped back with
//! `exp`: the median of the Walsh averages, and the interval between two of their order
//! statistics. Rounds on a shared machine are heavy-tailed (a round 30% off among rounds within
//! 3%): one such round widens a t-interval through its standard deviation, and moves this one
//! by one rank. Records made before it ([`Interval::StudentT`]) are judged as they were:
//! the geometric mean ratio and Student's t-interval on the mean log ratio (the paired t-test's,
//! Student 1908), `exp(mean ± t(1 − α'/2, n − 1) · s / √n)`.
//!
//! **Several looks, several metrics.** The run looks at the comparison after round
//! `min_rounds`, then each time the rounds have grown by half again (4, 6, 9, 14, 21, 32, ...),
//! and after `max_rounds` ([`look_rounds`]); a run the time budget stops between two of those
//! is looked at once more where it stopped. With `L` looks in all and `k` gated metrics (one
//! per server and document), each interval is made at level `α' = α / (L · k)`: a Bonferroni
//! correction over every look and metric, i.e. uniform alpha spending. By the union bound, the
//! chance that any interval at any look misses its true ratio is at most α (5%), however the
//! looks and metrics depend on each other, so stopping as soon as the intervals allow does not
//! inflate the false-alarm rate. Looking at geometrically spaced rounds rather than after every
//! one keeps `L` small (8 looks up to 40 rounds instead of 37), so each interval is narrower
//! for the same guarantee; a look after round 21 tells little that round 20's did not. It is
//! still conservative: the looks are strongly correlated, so the real rate is lower, and the
//! intervals are wider than a group-sequential design (Pocock, O'Brien–Fleming) would make
//! them. Records made before the schedule ([`Looks::EveryRound`]) are judged as they looked.
//!
//! **Minimum detectable effect.** The smallest change the test would find with power 0.8 at
//! level α'. For the signed-rank interval, from its own width: its half-width `h` on the log
//! scale is `z(1 − α'/2)` standard errors of the estimate, so the MDE is
//! `exp(h · (1 + z(0.8) / z(1 − α'/2))) − 1`, the normal-theory sample size relation with the
//! interval's own spread in place of a standard deviation. For Student's t, with the spread `s`
//! of the log ratios over `n` rounds, `exp((t(1 − α'/2, n − 1) + t(0.8, n − 1)) · s / √n) − 1`.
//!
//! **First look.** The signed-rank interval needs enough rounds to reach its level at all: `n`
//! rounds give none below `α' = 2 / 2^n`, the chance that every round's ratio falls on the same
//! side of 1. The first look is therefore after round [`FIRST_LOOK`] (12), then 18, 27 and 40.
//!
//! **Verdicts**, with the threshold δ (5% by default) and the interval [lo, hi] of a ratio:
//! - **worse** / **better** beyond the threshold: the interval excludes 1 (the change is
//!   significant at α') and the estimate lies beyond 1 ± δ in that direction;
//! - **within** the threshold: the whole interval lies inside [1 − δ, 1 + δ] (an equivalence
//!   test, two one-sided tests at α'/2 each);
//! - **not judged** otherwise: the interval is too wide for either, and the MDE says how wide.
//!   Never "same" for a metric too noisy to tell.
//!
//! Only the gated metric of each server and document can fail a run: requests/s, or the
//! servers' CPU per request when the load generator was the bottleneck in any round of
//! either side (its requests/s, and the latencies it saw, were then mostly the generator's).
//! Both sides run at the same CPU share, so requests/s at that share is the A/B form of the
//! head-to-head's requests/s per server core; unlike requests/s per core it also catches a
//! server that got slower without using more CPU. The other metrics are reported with the
//! same intervals and verdicts, but not gated.

use super::signed_rank::{self, hodges_lehmann};
use crate::record::{AgainstStop, Interval, LoadRecord, Looks, RunRecord, ServerStatus, Slowed};
use crate::stats::{self, Metric};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// The chance, over every look and every gated metric of one A/B run together, that an
/// interval misses the true ratio.
pub const ALPHA: f64 = 0.05;
/// The power the minimum detectable effect is stated at.
pub const POWER: f64 = 0.8;
/// The fewest rounds (AB pairs) an A/B run may be asked for.
pub const MIN_ROUNDS: u32 = 4;
/// Rounds before the first look of a signed-rank run: fewer cannot reach the level of its
/// intervals (see the module documentation) and would cost a share of alpha for nothing.
pub const FIRST_LOOK: u32 = 12;

/// The first look of a run of at most `max_rounds` rounds.
pub fn first_look(max_rounds: u32) -> u32 {
    FIRST_LOOK.min(max_rounds)
}
/// The most rounds an A/B run takes unless told otherwise.
pub const DEFAULT_MAX_ROUNDS: u32 = 40;
/// How much the rounds grow between two looks of [`Looks::Growing`].
pub const LOOK_GROWTH: f64 = 1.5;

/// The metrics a paired comparison reports, in order; the gated one is picked per server and
/// document by [`gate_for`].
pub const METRICS: [Metric; 4] = [
    Metric::RequestsPerSecond,
    Metric::ServerCpuSPer10k,
    Metric::MeanLatencyMs,
    Metric::P99LatencyMs,
];

/// A short name of the method, for reports.
pub fn method_name(interval: Interval, together: bool) -> String {
    let order = if together {
        "both sides at once"
    } else {
        "ABBA order"
    };
    let interval = match interval {
        Interval::SignedRank => {
            "Hodges-Lehmann estimate with the Wilcoxon signed-rank interval on the log ratios"
        }
        Interval::StudentT => "Student's t-interval on the mean log ratio",
    };
    format!(
        "paired per-round ratios ({order}), {interval}, Bonferroni over looks and gated metrics"
    )
}

/// Student's t-interval on the mean of `values` at two-sided level `alpha`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TInterval {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub sd: f64,
    /// Standard error of the mean, sd / √n.
    pub se: f64,
    /// The multiplier t(1 − alpha/2, n − 1).
    pub t: f64,
    pub low: f64,
    pub high: f64,
}

/// The t-interval on the mean of `values`; `None` with fewer than two values or any that is not
/// finite.
pub fn t_interval(values: &[f64], alpha: f64) -> Option<TInterval> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = stats::sample_sd(values, mean);
    let se = sd / (n as f64).sqrt();
    let t = stats::t_critical(alpha, (n - 1) as f64);
    Some(TInterval {
        n,
        mean,
        sd,
        se,
        t,
        low: mean - t * se,
        high: mean + t * se,
    })
}

/// The smallest true mean a two-sided t-test at `alpha` finds with probability `power`, given
/// the spread `sd` of `n` values: `(t(1 − alpha/2, n − 1) + t(power, n − 1)) · sd / √n`.
/// `None` for fewer than two values.
pub fn minimum_detectable(sd: f64, n: usize, alpha: f64, power: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let df = (n - 1) as f64;
    // t(power) is the t whose two-sided tail is 2 (1 − power).
    let t_power = stats::t_critical(2.0 * (1.0 - power), df);
    Some((stats::t_critical(alpha, df) + t_power) * sd / (n as f64).sqrt())
}

/// The paired ratio candidate / baseline of one metric over its rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioEstimate {
    /// Paired rounds.
    pub n: usize,
    /// The estimate: the Hodges-Lehmann ratio (the geometric mean ratio for Student's t).
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Minimum detectable effect, relative (0.03: a 3% change), at the interval's level and
    /// [`POWER`].
    pub mde: f64,
    /// Standard deviation of the log ratios: the round-to-round noise of the comparison.
    pub sd_log: f64,
}

/// The paired ratio of `(baseline, candidate)` pairs at two-sided level `alpha`, its interval
/// made as `interval` says; `None` with fewer than two pairs, or when a value is not positive (a
/// ratio of counts that can be 0, such as failures, is not a ratio). A signed-rank interval
/// that so few pairs cannot make at `alpha` runs from 0 to infinity, its MDE infinite.
pub fn ratio_estimate(
    pairs: &[(f64, f64)],
    alpha: f64,
    interval: Interval,
) -> Option<RatioEstimate> {
    if pairs
        .iter()
        .any(|&(b, c)| !(b > 0.0 && c > 0.0 && b.is_finite() && c.is_finite()))
    {
        return None;
    }
    let logs: Vec<f64> = pairs.iter().map(|&(b, c)| (c / b).ln()).collect();
    if interval == Interval::SignedRank {
        let hl = hodges_lehmann(&logs, alpha)?;
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let normal = Normal::standard();
        let (z_a, z_p) = (
            normal.inverse_cdf(1.0 - alpha / 2.0),
            normal.inverse_cdf(POWER),
        );
        let half = (hl.high - hl.low) / 2.0;
        return Some(RatioEstimate {
            n: hl.n,
            ratio: hl.estimate.exp(),
            low: hl.low.exp(),
            high: hl.high.exp(),
            mde: (half * (1.0 + z_p / z_a)).exp() - 1.0,
            sd_log: stats::sample_sd(&logs, mean),
        });
    }
    let ci = t_interval(&logs, alpha)?;
    let mde = minimum_detectable(ci.sd, ci.n, alpha, POWER)?;
    Some(RatioEstimate {
        n: ci.n,
        ratio: ci.mean.exp(),
        low: ci.low.exp(),
        high: ci.high.exp(),
        mde: mde.exp() - 1.0,
        sd_log: ci.sd,
    })
}

/// What a paired comparison says of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairedVerdict {
    /// Significantly better, by more than the threshold.
    Better,
    /// Significantly worse, by more than the threshold: a regression when the metric is gated.
    Worse,
    /// The whole interval lies within the threshold: no change that matters.
    Within,
    /// The interval is too wide to say either.
    NotJudged,
}

impl PairedVerdict {
    pub fn label(self) -> &'static str {
        match self {
            PairedVerdict::Better => "better",
            PairedVerdict::Worse => "WORSE",
            PairedVerdict::Within => "within",
            PairedVerdict::NotJudged => "not judged",
        }
    }
}

/// The verdict on one ratio (see the module documentation), with a note when it is not judged.
pub fn decide(
    est: &RatioEstimate,
    threshold: f64,
    higher_is_better: bool,
) -> (PairedVerdict, Option<String>) {
    let (worse_if_lower, better_if_lower) = if higher_is_better {
        (PairedVerdict::Worse, PairedVerdict::Better)
    } else {
        (PairedVerdict::Better, PairedVerdict::Worse)
    };
    if est.high < 1.0 && est.ratio < 1.0 - threshold {
        return (worse_if_lower, None);
    }
    if est.low > 1.0 && est.ratio > 1.0 + threshold {
        return (better_if_lower, None);
    }
    if est.low >= 1.0 - threshold && est.high <= 1.0 + threshold {
        return (PairedVerdict::Within, None);
    }
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let note = if est.mde > threshold {
        format!(
            "too noisy for ±{}: the smallest change these rounds could show was ±{}; at this noise about {} rounds would show ±{}",
            pct(threshold),
            pct(est.mde),
            rounds_to_show(est, threshold),
            pct(threshold)
        )
    } else if est.high < 1.0 || est.low > 1.0 {
        format!(
            "a real change of {:+.1}%, but not shown to be beyond or within ±{}",
            (est.ratio - 1.0) * 100.0,
            pct(threshold)
        )
    } else {
        format!(
            "the interval reaches past ±{}: more rounds would tell",
            pct(threshold)
        )
    };
    (PairedVerdict::NotJudged, Some(note))
}

/// About how many paired rounds would bring `est`'s minimum detectable effect down to
/// `threshold` at the same noise: the MDE narrows with the square root of the rounds (the
/// interval's level, fixed by the looks and the gates, is taken as it is).
pub fn rounds_to_show(est: &RatioEstimate, threshold: f64) -> usize {
    let grow = (est.mde / threshold).powi(2);
    ((est.n as f64 * grow).ceil() as usize).max(est.n)
}

/// The metric a server and document's verdict rests on, from the loads of both sides: the
/// servers' CPU per request when the generator was the bottleneck (`None` when Docker gave no
/// CPU figure for every one), else requests/s.
///
/// Loads one after the other (`together` false): the generator was the bottleneck when it was
/// in any load, since one side's load paced by the generator and the other's by the server
/// make a ratio of two different things. Both sides at once: when it was in more than
/// [`BOUND_PAIRS_GATE`] of the loads. The two loads of a pair wait for the same generator at
/// the same moment, so a pair it paced has a ratio pulled towards 1: it can hide a change,
/// never make one, and the signed-rank interval gives such a round one rank among the others.
pub fn gate_for(loads: &[&LoadRecord], together: bool) -> Option<Metric> {
    let bound = loads.iter().filter(|l| l.client_bound).count();
    let paced = if together {
        bound as f64 > BOUND_PAIRS_GATE * loads.len() as f64
    } else {
        bound > 0
    };
    if paced {
        loads
            .iter()
            .all(|l| Metric::ServerCpuSPer10k.value(l).is_some())
            .then_some(Metric::ServerCpuSPer10k)
    } else {
        Some(Metric::RequestsPerSecond)
    }
}

/// The share of a pair-at-once run's loads the generator may pace before the gate moves from
/// requests/s to CPU per request ([`gate_for`]).
pub const BOUND_PAIRS_GATE: f64 = 0.25;

/// Why [`gate_for`] chose what it chose, in words, for the output.
pub fn gate_reason(loads: &[&LoadRecord], gate: Option<Metric>) -> String {
    let bound = loads.iter().filter(|l| l.client_bound).count();
    let share = loads.iter().find_map(|l| l.server_share);
    let kept_up = if bound == 0 {
        "the generator kept up in every load".to_string()
    } else {
        format!(
            "the generator set the pace in only {bound} of {} loads (both sides at once: those pairs' ratios are pulled towards 1, which can hide a change but not make one)",
            loads.len()
        )
    };
    match gate {
        Some(Metric::ServerCpuSPer10k) => format!(
            "gated on the server's CPU per request, exact from its cgroup: the generator set the pace in {bound} of {} loads, so their requests/s measured it",
            loads.len()
        ),
        Some(m) => match share {
            Some(s) => format!(
                "gated on {}: {kept_up}, and both sides had a CPU share of {s:.3} cores, so requests/s is the server's rate per core of that share, and it also falls when the server gets slower without using more CPU",
                m.label()
            ),
            None => format!("gated on {}: {kept_up}", m.label()),
        },
        None => format!(
            "nothing gated: the generator set the pace in {bound} of {} loads and Docker gave no CPU figure for some",
            loads.len()
        ),
    }
}

/// One metric of one server and document, both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedMetric {
    pub metric: Metric,
    /// The metric can fail the run.
    pub gated: bool,
    /// `None` with fewer than two paired rounds that measured it.
    pub estimate: Option<RatioEstimate>,
    pub verdict: PairedVerdict,
    pub note: Option<String>,
}

/// Every reported metric of one server serving one document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedGroup {
    pub server: String,
    pub document: String,
    /// Rounds measured on both sides.
    pub rounds: usize,
    /// The generator was the bottleneck in some round of either side.
    pub client_bound: bool,
    /// The gated metric; `None` when there was nothing to gate on.
    pub gate: Option<Metric>,
    /// Why that one ([`gate_reason`]).
    pub gate_reason: String,
    /// Failed requests over the paired rounds: baseline side, candidate side.
    pub failures: (u64, u64),
    pub metrics: Vec<PairedMetric>,
}

impl PairedGroup {
    /// The gated metric's comparison.
    pub fn gated(&self) -> Option<&PairedMetric> {
        self.metrics.iter().find(|m| m.gated)
    }
}

/// The paired comparison of an A/B run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedComparison {
    pub method: String,
    pub interval: Interval,
    pub baseline_run_id: String,
    pub baseline_path: String,
    pub candidate_run_id: String,
    pub threshold: f64,
    /// Family-wise.
    pub alpha: f64,
    /// Each interval's level: alpha / (looks · gates).
    pub interval_alpha: f64,
    pub looks: u32,
    /// The rounds after which the stopping rule looked ([`look_rounds`]).
    pub look_rounds: Vec<u32>,
    /// Each round ran on fresh containers of both sides.
    pub fresh_containers: bool,
    /// Both sides of each pair were loaded at the same time.
    pub together: bool,
    /// The other binary that sent the baseline side's loads, when one did.
    pub baseline_generator: Option<String>,
    pub gates: u32,
    pub min_rounds: u32,
    pub max_rounds: u32,
    pub budget_s: f64,
    /// The most paired rounds of any server and document.
    pub rounds: usize,
    pub stop: Option<AgainstStop>,
    pub slowed: Vec<Slowed>,
    pub groups: Vec<PairedGroup>,
    /// Servers the baseline side measured and the candidate side could not: they fail the run.
    pub missing_in_candidate: Vec<String>,
}

impl PairedComparison {
    /// Every gated metric judged worse beyond the threshold, with its group.
    pub fn regressions(&self) -> impl Iterator<Item = (&PairedGroup, &PairedMetric)> {
        self.groups.iter().flat_map(|g| {
            g.metrics
                .iter()
                .filter(|m| m.gated && m.verdict == PairedVerdict::Worse)
                .map(move |m| (g, m))
        })
    }

    /// A gated metric worse beyond the threshold, or a server only the baseline had.
    pub fn has_regression(&self) -> bool {
        self.regressions().next().is_some() || !self.missing_in_candidate.is_empty()
    }

    /// The gated metric not judged yet that needs the most rounds to be, at the noise its
    /// rounds showed so far (`server / document`, [`rounds_to_show`]); `None` when every one
    /// was judged, or none was too noisy for the threshold.
    pub fn slowest_to_judge(&self) -> Option<(String, usize)> {
        self.groups
            .iter()
            .filter_map(|g| {
                let m = g.gated()?;
                let e = m.estimate.as_ref()?;
                (m.verdict == PairedVerdict::NotJudged && e.mde > self.threshold).then(|| {
                    (
                        format!("{} / {}", g.server, g.document),
                        rounds_to_show(e, self.threshold),
                    )
                })
            })
            .max_by_key(|(_, n)| *n)
    }

    /// Gated metrics not (yet) judged.
    pub fn undecided(&self) -> usize {
        self.groups
            .iter()
            .filter_map(PairedGroup::gated)
            .filter(|m| m.verdict == PairedVerdict::NotJudged)
            .count()
    }

    /// Every gated metric is judged: more rounds would change no verdict's kind.
    pub fn settled(&self) -> bool {
        !self.groups.is_empty() && self.undecided() == 0
    }
}

/// The fewest rounds a signed-rank interval at two-sided level `alpha` can be made of.
pub fn rounds_for_level(alpha: f64) -> usize {
    (2..200)
        .find(|&n| signed_rank::smallest_level(n) <= alpha)
        .unwrap_or(200)
}

/// The interval level of each look and gated metric: `alpha / (looks · gates)`.
pub fn interval_alpha(alpha: f64, min_rounds: u32, max_rounds: u32, how: Looks, gates: u32) -> f64 {
    alpha / (looks(min_rounds, max_rounds, how) as f64 * f64::from(gates.max(1)))
}

/// The rounds after which the stopping rule looks: every one from `min_rounds` to
/// `max_rounds`, or ([`Looks::Growing`]) `min_rounds`, then each round count at least
/// [`LOOK_GROWTH`] times the last, and `max_rounds`.
pub fn look_rounds(min_rounds: u32, max_rounds: u32, how: Looks) -> Vec<u32> {
    let first = min_rounds.min(max_rounds).max(1);
    match how {
        Looks::EveryRound => (first..=max_rounds.max(first)).collect(),
        Looks::Growing => {
            let mut at = vec![first];
            loop {
                let last = *at.last().expect("one look at least");
                let next = ((f64::from(last) * LOOK_GROWTH).ceil() as u32).max(last + 1);
                if next >= max_rounds {
                    break;
                }
                at.push(next);
            }
            if max_rounds > first {
                at.push(max_rounds);
            }
            at
        }
    }
}

/// How many looks the intervals' level is split over: the scheduled ones ([`look_rounds`]),
/// and with [`Looks::Growing`] one more, where a time budget may end the rounds between two.
pub fn looks(min_rounds: u32, max_rounds: u32, how: Looks) -> u32 {
    let scheduled = look_rounds(min_rounds, max_rounds, how).len() as u32;
    match how {
        Looks::EveryRound => scheduled,
        Looks::Growing => scheduled + 1,
    }
}

/// The paired comparison of an A/B run's record; `None` for an ordinary run.
pub fn compare_record(record: &RunRecord) -> Option<PairedComparison> {
    let ab = record.against.as_ref()?;
    let alpha_i = interval_alpha(ab.alpha, ab.min_rounds, ab.max_rounds, ab.looks, ab.gates);
    let mut documents = stats::documents(record);
    for l in &ab.loads {
        if !documents.contains(&l.document) {
            documents.push(l.document.clone());
        }
    }
    let servers = stats::servers(record);
    let mut groups = Vec::new();
    for doc in &documents {
        for server in &servers {
            let ours = |l: &&LoadRecord| &l.server == server && &l.document == doc;
            let cand: Vec<&LoadRecord> = record.loads.iter().filter(ours).collect();
            let pairs: Vec<(&LoadRecord, &LoadRecord)> = ab
                .loads
                .iter()
                .filter(ours)
                .filter_map(|b| cand.iter().find(|c| c.round == b.round).map(|c| (b, *c)))
                .collect();
            if pairs.is_empty() {
                continue;
            }
            groups.push(group(
                server,
                doc,
                &pairs,
                ab.threshold,
                (alpha_i, ab.interval, ab.together),
            ));
        }
    }
    let available = |servers: &[crate::record::ServerRecord], name: &str| {
        servers
            .iter()
            .any(|s| s.name == name && matches!(s.status, ServerStatus::Available { .. }))
    };
    let missing_in_candidate = ab
        .servers
        .iter()
        .filter(|s| available(&ab.servers, &s.name) && !available(&record.servers, &s.name))
        .map(|s| s.name.clone())
        .collect();
    Some(PairedComparison {
        method: method_name(ab.interval, ab.together),
        interval: ab.interval,
        baseline_run_id: ab.baseline_run_id.clone(),
        baseline_path: ab.baseline_path.clone(),
        candidate_run_id: record.run_id.clone(),
        threshold: ab.threshold,
        alpha: ab.alpha,
        interval_alpha: alpha_i,
        looks: looks(ab.min_rounds, ab.max_rounds, ab.looks),
        look_rounds: look_rounds(ab.min_rounds, ab.max_rounds, ab.looks),
        fresh_containers: ab.fresh_containers,
        together: ab.together,
        baseline_generator: ab.baseline_generator.clone(),
        gates: ab.gates,
        min_rounds: ab.min_rounds,
        max_rounds: ab.max_rounds,
        budget_s: ab.budget_s,
        rounds: groups.iter().map(|g| g.rounds).max().unwrap_or(0),
        stop: ab.stop,
        slowed: ab.slowed.clone(),
        groups,
        missing_in_candidate,
    })
}

/// One server and document: `pairs` are (baseline, candidate) loads of the same round.
fn group(
    server: &str,
    document: &str,
    pairs: &[(&LoadRecord, &LoadRecord)],
    threshold: f64,
    (alpha, interval, together): (f64, Interval, bool),
) -> PairedGroup {
    let all: Vec<&LoadRecord> = pairs.iter().flat_map(|&(b, c)| [b, c]).collect();
    let client_bound = all.iter().any(|l| l.client_bound);
    let gate = gate_for(&all, together);
    let metrics = METRICS
        .iter()
        .map(|&metric| {
            let values: Vec<(f64, f64)> = pairs
                .iter()
                .filter_map(|&(b, c)| Some((metric.value(b)?, metric.value(c)?)))
                .collect();
            let gated = gate == Some(metric);
            let estimate = ratio_estimate(&values, alpha, interval);
            let (verdict, mut note) = match &estimate {
                Some(e) if e.high.is_infinite() => (
                    PairedVerdict::NotJudged,
                    Some(format!(
                        "{} rounds cannot make a signed-rank interval at {:.3}%: it needs at least {}",
                        e.n,
                        alpha * 100.0,
                        rounds_for_level(alpha)
                    )),
                ),
                Some(e) => decide(e, threshold, metric.higher_is_better()),
                None => (
                    PairedVerdict::NotJudged,
                    Some(if values.len() < 2 {
                        "fewer than 2 paired rounds measured it".to_string()
                    } else {
                        "a round measured 0: no ratio".to_string()
                    }),
                ),
            };
            let latency = matches!(metric, Metric::MeanLatencyMs | Metric::P99LatencyMs);
            if client_bound && latency {
                let why = "client-bound: mostly the generator's own delay, not gated";
                note = Some(match note {
                    Some(n) => format!("{why}; {n}"),
                    None => why.to_string(),
                });
            }
            PairedMetric {
                metric,
                gated,
                estimate,
                verdict,
                note,
            }
        })
        .collect();
    PairedGroup {
        server: server.to_string(),
        document: document.to_string(),
        rounds: pairs.len(),
        client_bound,
        gate,
        gate_reason: gate_reason(&all, gate),
        failures: pairs.iter().fold((0, 0), |(fb, fc), &(b, c)| {
            (fb + b.load.failed, fc + c.load.failed)
        }),
        metrics,
    }
}

#[cfg(test)]
mod tests;
