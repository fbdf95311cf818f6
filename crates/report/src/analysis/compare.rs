//! Holding a run against a baseline run: per server, document and metric a verdict of better,
//! same or worse, and whether any of it is a regression the nightly job must fail on.
//!
//! A metric is **worse** when its median moved in the bad direction by more than the threshold
//! (5% by default) **and** the move is statistically significant across the rounds: Welch's
//! two-sample t-test, p < 0.05. Welch rather than Mann–Whitney U (benchstat's choice) because
//! with the 3 rounds a nightly job affords per side, Mann–Whitney's smallest possible two-sided
//! p-value is 2/20 = 0.1, so it could never report a regression; Welch's test does not assume
//! equal variances, which two runs on different days do not have. A move beyond the threshold
//! that is not significant is **same** (within noise). With a single round on either side no
//! test is possible: a move within the threshold is **same**, one beyond it is **not tested**
//! (the change is shown, with its direction), and never fails the comparison: a single round
//! of a shared machine moves by more than any threshold with nothing changed.
//!
//! One comparison tests many metrics at once (7 per server and document), so at p < 0.05 each,
//! two identical runs would be called worse somewhere far too often. The p-values of one
//! comparison are therefore adjusted with Holm's step-down (Holm–Bonferroni) method, which
//! keeps the chance of any false alarm across the whole comparison under 5%; the adjusted
//! p-value is the one reported.
//!
//! A baseline measurement with no counterpart in the current run (a server that no longer
//! builds or starts) also fails the comparison: a nightly job must not go green by losing a
//! server.

pub(crate) mod metric;

use metric::verdict;
pub use metric::{compare_metric, MetricComparison, Verdict, ALPHA};

use crate::record::RunRecord;
use crate::stats::{self, GroupStats, Metric};
use serde::Serialize;

/// The threshold the CLI uses when none is given: 5%.
pub const DEFAULT_THRESHOLD: f64 = 0.05;

/// All metrics of one server serving one document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupComparison {
    pub server: String,
    pub document: String,
    pub metrics: Vec<MetricComparison>,
}

/// A whole comparison, in the current run's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline_run_id: String,
    pub current_run_id: String,
    /// Relative threshold, e.g. 0.05.
    pub threshold: f64,
    /// The scenarios' hashes differ: the two runs did not measure the same thing.
    pub scenario_changed: bool,
    pub groups: Vec<GroupComparison>,
    /// (server, document) measured in the baseline but not now: a server that no longer starts
    /// shows up here.
    pub missing_in_current: Vec<(String, String)>,
    /// (server, document) measured now but not in the baseline.
    pub new_in_current: Vec<(String, String)>,
}

impl Comparison {
    /// Any metric significantly worse beyond the threshold, or anything the baseline measured
    /// that the current run did not. A move that could not be tested is none.
    pub fn has_regression(&self) -> bool {
        self.regressions().next().is_some() || !self.missing_in_current.is_empty()
    }

    /// Every worse metric, with its group.
    pub fn regressions(&self) -> impl Iterator<Item = (&GroupComparison, &MetricComparison)> {
        self.with_verdict(Verdict::Worse)
    }

    /// Every metric that moved beyond the threshold untested, with its group.
    pub fn untested(&self) -> impl Iterator<Item = (&GroupComparison, &MetricComparison)> {
        self.with_verdict(Verdict::NotTested)
    }

    fn with_verdict(
        &self,
        verdict: Verdict,
    ) -> impl Iterator<Item = (&GroupComparison, &MetricComparison)> {
        self.groups.iter().flat_map(move |g| {
            g.metrics
                .iter()
                .filter(move |m| m.verdict == verdict)
                .map(move |m| (g, m))
        })
    }
}

/// Compares `current` with `baseline`, metric by metric, for every (server, document) both
/// measured. `threshold` is relative (0.05 for 5%).
pub fn compare(baseline: &RunRecord, current: &RunRecord, threshold: f64) -> Comparison {
    let base = stats::summarize(baseline);
    let cur = stats::summarize(current);
    let key = |g: &GroupStats| (g.server.clone(), g.document.clone());
    let find = |set: &[GroupStats], k: &(String, String)| {
        set.iter()
            .find(|g| g.server == k.0 && g.document == k.1)
            .cloned()
    };

    let mut groups = Vec::new();
    let mut new_in_current = Vec::new();
    for c in &cur {
        let k = key(c);
        let Some(b) = find(&base, &k) else {
            new_in_current.push(k);
            continue;
        };
        let metrics = Metric::ALL
            .iter()
            .filter_map(|&m| Some(compare_metric(m, b.get(m)?, c.get(m)?, threshold)))
            .collect();
        groups.push(GroupComparison {
            server: k.0,
            document: k.1,
            metrics,
        });
    }
    holm_adjust(&mut groups, threshold);
    // Capacity: one search per side, never tested, so after the adjustment.
    for (server, document, m) in crate::capacity::compare(baseline, current, threshold) {
        match groups
            .iter_mut()
            .find(|g| g.server == server && g.document == document)
        {
            Some(g) => g.metrics.push(m),
            None => groups.push(GroupComparison {
                server,
                document,
                metrics: vec![m],
            }),
        }
    }
    let missing_in_current = base
        .iter()
        .map(key)
        .filter(|k| find(&cur, k).is_none())
        .collect();

    Comparison {
        baseline_run_id: baseline.run_id.clone(),
        current_run_id: current.run_id.clone(),
        threshold,
        scenario_changed: baseline.scenario.sha256 != current.scenario.sha256,
        groups,
        missing_in_current,
        new_in_current,
    }
}

/// Replaces every p-value with its Holm-adjusted value across the whole comparison and
/// re-derives the verdicts from them.
fn holm_adjust(groups: &mut [GroupComparison], threshold: f64) {
    let mut tested: Vec<(f64, usize, usize)> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for (mi, m) in g.metrics.iter().enumerate() {
            if let Some(p) = m.p_value {
                tested.push((p, gi, mi));
            }
        }
    }
    let n = tested.len();
    if n < 2 {
        return;
    }
    tested.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut running_max: f64 = 0.0;
    for (rank, &(p, gi, mi)) in tested.iter().enumerate() {
        let adjusted = (p * (n - rank) as f64).min(1.0).max(running_max);
        running_max = adjusted;
        let m = &mut groups[gi].metrics[mi];
        let redone = verdict(m.metric, m.change, Some(adjusted), threshold);
        m.p_value = Some(adjusted);
        m.verdict = redone.0;
        m.note = redone.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn s(v: &[f64]) -> Summary {
        Summary::of(v)
    }

    #[test]
    fn direction_of_goodness() {
        let base = s(&[100.0, 101.0, 99.0]);
        let up = s(&[130.0, 131.0, 129.0]);
        let rps = compare_metric(Metric::RequestsPerSecond, &base, &up, 0.05);
        assert_eq!(rps.verdict, Verdict::Better);
        let lat = compare_metric(Metric::MeanLatencyMs, &base, &up, 0.05);
        assert_eq!(lat.verdict, Verdict::Worse);
        assert!((lat.change - 0.30).abs() < 1e-12);
    }

    #[test]
    fn beyond_threshold_but_noisy_is_same() {
        let base = s(&[100.0, 140.0, 60.0]);
        let cur = s(&[90.0, 130.0, 50.0]);
        let c = compare_metric(Metric::RequestsPerSecond, &base, &cur, 0.05);
        assert_eq!(c.verdict, Verdict::Same);
        assert!(c.note.as_deref().unwrap().starts_with("within noise"));
    }

    #[test]
    fn a_single_run_beyond_the_threshold_is_not_tested() {
        let c = compare_metric(Metric::RequestsPerSecond, &s(&[100.0]), &s(&[80.0]), 0.05);
        assert_eq!(c.verdict, Verdict::NotTested);
        assert_eq!(c.p_value, None);
        assert_eq!(c.note.as_deref(), Some("1 run: worse beyond the threshold"));
        let c = compare_metric(Metric::MeanLatencyMs, &s(&[100.0]), &s(&[80.0]), 0.05);
        assert_eq!(c.verdict, Verdict::NotTested);
        assert_eq!(
            c.note.as_deref(),
            Some("1 run: better beyond the threshold")
        );
        let c = compare_metric(Metric::RequestsPerSecond, &s(&[100.0]), &s(&[97.0]), 0.05);
        assert_eq!(c.verdict, Verdict::Same);
    }

    #[test]
    fn failures_from_zero_are_worse() {
        let c = compare_metric(Metric::Failures, &s(&[0.0, 0.0]), &s(&[3.0, 3.0]), 0.05);
        assert_eq!(c.verdict, Verdict::Worse);
        assert!(c.change.is_infinite());
        let c = compare_metric(Metric::Failures, &s(&[0.0]), &s(&[3.0]), 0.05);
        assert_eq!(c.verdict, Verdict::NotTested);
        let c = compare_metric(Metric::Failures, &s(&[0.0, 0.0]), &s(&[0.0, 0.0]), 0.05);
        assert_eq!(c.verdict, Verdict::Same);
    }
}
