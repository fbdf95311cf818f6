//! The verdict on one metric of one server and document: its change, its test and what the
//! threshold makes of them.

use crate::stats::{self, Metric, Summary};
use serde::Serialize;

/// Significance level of the test.
pub const ALPHA: f64 = 0.05;

/// How the current run compares with the baseline on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Same,
    Worse,
    /// Beyond the threshold, but no test could say whether the move is more than noise (a side
    /// has a single round): neither better nor worse, and no regression.
    NotTested,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Same => "same",
            Verdict::Worse => "worse",
            Verdict::NotTested => "not tested",
        }
    }
}

/// One metric of one (server, document) in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    pub metric: Metric,
    pub baseline: Summary,
    pub current: Summary,
    /// (current − baseline) / baseline of the medians; infinite when the baseline is 0 and the
    /// current is not.
    pub change: f64,
    /// Welch's two-sided p-value; `None` when a side has a single round.
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, when the numbers alone do not say ("within noise",
    /// "1 run: not tested for significance").
    pub note: Option<String>,
}

/// The verdict on one metric.
pub fn compare_metric(
    metric: Metric,
    baseline: &Summary,
    current: &Summary,
    threshold: f64,
) -> MetricComparison {
    let change = relative_change(baseline.median, current.median);
    let p_value = stats::welch_t_test(&baseline.values, &current.values);
    let (verdict, note) = verdict(metric, change, p_value, threshold);
    MetricComparison {
        metric,
        baseline: baseline.clone(),
        current: current.clone(),
        change,
        p_value,
        verdict,
        note,
    }
}

/// The verdict and its note from a change, its p-value (None: untestable) and the threshold.
pub(super) fn verdict(
    metric: Metric,
    change: f64,
    p_value: Option<f64>,
    threshold: f64,
) -> (Verdict, Option<String>) {
    // Positive when the move is for the better.
    let goodness = if metric.higher_is_better() {
        change
    } else {
        -change
    };
    let beyond = goodness.abs() > threshold;
    let direction = if goodness > 0.0 {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    match (beyond, p_value) {
        (false, None) => (
            Verdict::Same,
            Some("1 run: not tested for significance".to_string()),
        ),
        (false, Some(_)) => (Verdict::Same, None),
        (true, Some(p)) if p < ALPHA => (direction, None),
        (true, Some(p)) => (Verdict::Same, Some(format!("within noise, p = {p:.2}"))),
        (true, None) => (
            Verdict::NotTested,
            Some(format!("1 run: {} beyond the threshold", direction.label())),
        ),
    }
}

pub(super) fn relative_change(base: f64, cur: f64) -> f64 {
    if base == cur {
        0.0
    } else if base == 0.0 {
        if cur > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    } else {
        (cur - base) / base.abs()
    }
}
