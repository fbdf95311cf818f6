//! Capacity at a latency target: what a search found per server and document (every step it
//! measured, and the rate it settled on), as the results record stores it, and the words and
//! comparison of two runs' searches; the words and tables reports show for it are
//! [`crate::render::capacity`]'s.
//!
//! A step is one constant rate held for a window after a warm-up; it passes when the
//! percentile asked for of the latency measured from each request's intended send time (so
//! queueing in front of the server counts, see the load generator's coordinated-omission
//! correction) is within the target, under [`CapacityCriteria::max_error_share`] of the
//! requests failed, and the generator sent at least [`CapacityCriteria::min_schedule_share`]
//! of the rate asked. The search itself is the runner's.

/// The searches as the record stores them.
pub use model::record::capacity as search;

pub use search::{
    describe_us, CapacityCriteria, CapacityKind, CapacityRecord, CapacityResult, CapacityStep,
    StartFrom, StepVerdict, StopReason,
};

use crate::compare::metric::{compare_metric, MetricComparison, Verdict};
use crate::record::RunRecord;
use crate::stats::{Metric, Summary};

/// The step a result's rate comes from: the last one that passed at it, or for a generator
/// limit the one that hit it.
pub fn result_step(r: &CapacityRecord) -> Option<&CapacityStep> {
    let rate = r.result.rate?;
    r.steps
        .iter()
        .rev()
        .find(|s| {
            (s.verdict == StepVerdict::Pass && s.rate == rate)
                || (s.verdict == StepVerdict::Generator && s.achieved() == rate)
        })
        .or_else(|| {
            r.steps
                .iter()
                .rev()
                .find(|s| s.verdict == StepVerdict::Pass)
        })
}

/// The capacity searches of `document`, in the order of the run's servers.
pub fn of_document<'a>(record: &'a RunRecord, document: &str) -> Vec<&'a CapacityRecord> {
    let order = crate::stats::servers(record);
    let mut v: Vec<&CapacityRecord> = record
        .capacity
        .iter()
        .filter(|c| c.document == document)
        .collect();
    v.sort_by_key(|c| order.iter().position(|s| s == &c.server));
    v
}

/// The documents that have capacity searches, in the order they were searched.
pub fn documents(record: &RunRecord) -> Vec<String> {
    let mut docs: Vec<String> = Vec::new();
    for c in &record.capacity {
        if !docs.contains(&c.document) {
            docs.push(c.document.clone());
        }
    }
    docs
}

/// The capacity comparisons of two runs: per (server, document) searched in both, with the
/// same target. One search per side allows no test of significance: the threshold alone
/// decides, except that a lower bound (a generator limit, a search cut short) is never judged
/// worse than what it bounds, nor a rate better than a lower bound it exceeds.
pub fn compare(
    baseline: &RunRecord,
    current: &RunRecord,
    threshold: f64,
) -> Vec<(String, String, MetricComparison)> {
    let mut out = Vec::new();
    for c in &current.capacity {
        let Some(b) = baseline
            .capacity
            .iter()
            .find(|b| b.server == c.server && b.document == c.document)
        else {
            continue;
        };
        let mut m = compare_metric(
            Metric::Capacity,
            &Summary::of(&[b.result.value()]),
            &Summary::of(&[c.result.value()]),
            threshold,
        );
        let same_target = b.criteria.percentile == c.criteria.percentile
            && b.criteria.target_us == c.criteria.target_us;
        // One search a side is never tested: a move beyond the threshold is "not tested".
        let moved = m.verdict == Verdict::NotTested;
        m.note = Some(if !same_target {
            m.verdict = Verdict::Same;
            format!(
                "not compared: the targets differ ({} then, {} now)",
                b.criteria.target_text(),
                c.criteria.target_text()
            )
        } else if moved && m.change < 0.0 && c.result.is_lower_bound() {
            m.verdict = Verdict::Same;
            format!("{}; now only a lower bound", c.criteria.target_text())
        } else if moved && m.change > 0.0 && b.result.is_lower_bound() {
            m.verdict = Verdict::Same;
            format!(
                "{}; the baseline was only a lower bound",
                c.criteria.target_text()
            )
        } else if moved {
            format!(
                "{}; one search each: {} beyond the threshold",
                c.criteria.target_text(),
                if m.change < 0.0 { "worse" } else { "better" }
            )
        } else {
            format!("{}; one search each", c.criteria.target_text())
        });
        out.push((c.server.clone(), c.document.clone(), m));
    }
    out
}
