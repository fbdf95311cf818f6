//! The contexts of `compare`'s reports: two stored runs side by side, and an A/B run's paired
//! verdicts.

use super::numbers::f;
use super::table::{Column, TextTable};
use crate::compare::metric::Verdict;
use crate::compare::Comparison;
use crate::paired::{PairedComparison, PairedVerdict};
use crate::record::Interval;
use crate::stats::Metric;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct ComparisonContext {
    pub(super) baseline_run_id: String,
    pub(super) current_run_id: String,
    pub(super) threshold: String,
    pub(super) scenario_changed: bool,
    pub(super) regression: bool,
    pub(super) regressions: usize,
    /// Metrics beyond the threshold that no test could judge ("not tested").
    pub(super) untested: usize,
    pub(super) rows: Vec<ComparisonRow>,
    /// The rows as the text template lays them out.
    pub(super) table: TextTable,
    pub(super) missing_in_current: Vec<String>,
    pub(super) new_in_current: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct ComparisonRow {
    pub(super) server: String,
    pub(super) document: String,
    pub(super) metric: String,
    pub(super) baseline: String,
    pub(super) current: String,
    pub(super) change: String,
    pub(super) p_value: String,
    pub(super) verdict: String,
    pub(super) note: String,
}

/// The comparison table's columns in the text report.
pub(super) const COMPARISON: [Column; 8] = [
    Column::left("server"),
    Column::left("document"),
    Column::left("metric"),
    Column::right("baseline"),
    Column::right("current"),
    Column::right("change"),
    Column::right("p"),
    Column::last("verdict"),
];

pub(super) fn comparison_context(cmp: &Comparison) -> ComparisonContext {
    let decimals = |m: Metric| match m {
        Metric::Failures | Metric::Capacity => 0,
        Metric::ServerCpuSPer10k => 3,
        Metric::ServerPeakMemoryMb => 1,
        _ => 2,
    };
    let rows: Vec<ComparisonRow> = cmp
        .groups
        .iter()
        .flat_map(|g| {
            g.metrics.iter().map(move |m| {
                let d = decimals(m.metric);
                ComparisonRow {
                    server: g.server.clone(),
                    document: g.document.clone(),
                    metric: m.metric.label().to_string(),
                    baseline: f(m.baseline.median, d),
                    current: f(m.current.median, d),
                    change: if m.change.is_finite() {
                        format!("{:+.1}%", m.change * 100.0)
                    } else {
                        "new".to_string()
                    },
                    p_value: match m.p_value {
                        None => "-".to_string(),
                        Some(p) if p < 0.001 => "<0.001".to_string(),
                        Some(p) => f(p, 3),
                    },
                    verdict: match m.verdict {
                        Verdict::Worse => "WORSE".to_string(),
                        v => v.label().to_string(),
                    },
                    note: m.note.clone().unwrap_or_default(),
                }
            })
        })
        .collect();
    let table = TextTable::new(
        &COMPARISON,
        rows.iter()
            .map(|r| {
                let cells = [
                    &r.server,
                    &r.document,
                    &r.metric,
                    &r.baseline,
                    &r.current,
                    &r.change,
                    &r.p_value,
                    &r.verdict,
                ];
                (cells.map(String::clone).to_vec(), r.note.clone())
            })
            .collect(),
    );
    let pair = |(s, d): &(String, String)| format!("{s} / {d}");
    ComparisonContext {
        baseline_run_id: cmp.baseline_run_id.clone(),
        current_run_id: cmp.current_run_id.clone(),
        threshold: format!("{}%", f(cmp.threshold * 100.0, 1)),
        scenario_changed: cmp.scenario_changed,
        regression: cmp.has_regression(),
        regressions: cmp.regressions().count(),
        untested: cmp.untested().count(),
        rows,
        table,
        missing_in_current: cmp.missing_in_current.iter().map(pair).collect(),
        new_in_current: cmp.new_in_current.iter().map(pair).collect(),
    }
}

#[derive(Serialize)]
pub(super) struct PairedContext {
    pub(super) baseline_run_id: String,
    pub(super) baseline_path: String,
    pub(super) candidate_run_id: String,
    pub(super) threshold: String,
    /// How the verdicts were reached, a sentence each.
    pub(super) method: Vec<String>,
    /// Why the rounds stopped.
    pub(super) stop: String,
    pub(super) slowed: Vec<String>,
    pub(super) rows: Vec<PairedRow>,
    pub(super) table: TextTable,
    /// Per server and document, which metric is gated and why.
    pub(super) gates: Vec<String>,
    pub(super) missing_in_candidate: Vec<String>,
    pub(super) regression: bool,
    /// The closing line: the regressions, or that none was found, and whether every gated
    /// metric was judged.
    pub(super) conclusion: String,
}

#[derive(Serialize)]
pub(super) struct PairedRow {
    pub(super) server: String,
    pub(super) document: String,
    pub(super) metric: String,
    pub(super) gated: bool,
    pub(super) rounds: String,
    pub(super) ratio: String,
    pub(super) interval: String,
    pub(super) change: String,
    pub(super) mde: String,
    pub(super) verdict: String,
    pub(super) note: String,
}

pub(super) const PAIRED: [Column; 10] = [
    Column::left("server"),
    Column::left("document"),
    Column::left("metric"),
    Column::left("gate"),
    Column::right("rounds"),
    Column::right("ratio"),
    Column::right("interval"),
    Column::right("change"),
    Column::right("MDE"),
    Column::last("verdict"),
];

pub(super) fn paired_context(cmp: &PairedComparison) -> PairedContext {
    let threshold = pct(cmp.threshold);
    let rows = paired_rows(cmp, &threshold);
    let table = paired_table(&rows);
    let method = method_text(cmp, &threshold);
    let stop = stop_text(cmp);
    let conclusion = conclusion_text(cmp, &threshold);
    PairedContext {
        baseline_run_id: cmp.baseline_run_id.clone(),
        baseline_path: cmp.baseline_path.clone(),
        candidate_run_id: cmp.candidate_run_id.clone(),
        threshold,
        method,
        stop,
        slowed: cmp
            .slowed
            .iter()
            .map(|s| {
                format!(
                    "{} given {} of the baseline side's CPU on purpose",
                    s.server, s.factor
                )
            })
            .collect(),
        rows,
        table,
        gates: cmp
            .groups
            .iter()
            .map(|g| format!("{} / {}: {}", g.server, g.document, g.gate_reason))
            .collect(),
        missing_in_candidate: cmp.missing_in_candidate.clone(),
        regression: cmp.has_regression(),
        conclusion,
    }
}

/// A share as a percentage with one decimal: "5.0%".
fn pct(v: f64) -> String {
    format!("{}%", f(v * 100.0, 1))
}

/// One row per metric of every server and document.
fn paired_rows(cmp: &PairedComparison, threshold: &str) -> Vec<PairedRow> {
    cmp.groups
        .iter()
        .flat_map(|g| {
            g.metrics.iter().map(move |m| {
                let e = m.estimate.as_ref();
                PairedRow {
                    server: g.server.clone(),
                    document: g.document.clone(),
                    metric: m.metric.label().to_string(),
                    gated: m.gated,
                    rounds: e.map_or_else(|| g.rounds.to_string(), |e| e.n.to_string()),
                    ratio: e.map_or_else(|| "-".to_string(), |e| f(e.ratio, 3)),
                    // An interval so few rounds could not make runs from 0 to infinity.
                    interval: e.filter(|e| e.high.is_finite()).map_or_else(
                        || "-".to_string(),
                        |e| format!("{}-{}", f(e.low, 3), f(e.high, 3)),
                    ),
                    change: e.map_or_else(
                        || "-".to_string(),
                        |e| format!("{:+.1}%", (e.ratio - 1.0) * 100.0),
                    ),
                    mde: e
                        .filter(|e| e.mde.is_finite())
                        .map_or_else(|| "-".to_string(), |e| format!("±{}", pct(e.mde))),
                    verdict: match m.verdict {
                        PairedVerdict::Within => format!("within ±{threshold}"),
                        PairedVerdict::Worse => format!("WORSE beyond {threshold}"),
                        PairedVerdict::Better => format!("better beyond {threshold}"),
                        PairedVerdict::NotJudged => "not judged".to_string(),
                    },
                    note: m.note.clone().unwrap_or_default(),
                }
            })
        })
        .collect()
}

/// The text table of [`paired_rows`].
fn paired_table(rows: &[PairedRow]) -> TextTable {
    TextTable::new(
        &PAIRED,
        rows.iter()
            .map(|r| {
                let cells = vec![
                    r.server.clone(),
                    r.document.clone(),
                    r.metric.clone(),
                    if r.gated { "gate" } else { "-" }.to_string(),
                    r.rounds.clone(),
                    r.ratio.clone(),
                    r.interval.clone(),
                    r.change.clone(),
                    r.mde.clone(),
                    r.verdict.clone(),
                ];
                (cells, r.note.clone())
            })
            .collect(),
    )
}

/// A confidence level with enough decimals to tell 99.85% from 100%: "95%", "99.853%".
fn confidence(a: f64) -> String {
    let d = ((-a.log10()).ceil() as usize).saturating_sub(1).min(6);
    let text = f((1.0 - a) * 100.0, d);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}%")
}

/// How the verdicts were reached, a sentence each: the rounds, the interval, the MDE and the
/// verdict's rule.
fn method_text(cmp: &PairedComparison, threshold: &str) -> Vec<String> {
    let rounds_list = cmp
        .look_rounds
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let looks = if cmp.looks as usize > cmp.look_rounds.len() {
        format!(
            "{} looks (after rounds {rounds_list}, and where a budget stops the rounds)",
            cmp.looks
        )
    } else {
        format!("{} looks (after rounds {rounds_list})", cmp.looks)
    };
    let fresh = if cmp.fresh_containers {
        ", each round on fresh containers of both sides"
    } else {
        ", one container per server and side all run long"
    };
    let order = if cmp.together {
        "each server and document on both sides at the same time, on the same CPUs"
    } else {
        "each server and document back to back in ABBA order"
    };
    let generator = match &cmp.baseline_generator {
        Some(g) => format!(
            " The baseline side's loads were sent by {g}, the candidate's by this run's benchctl."
        ),
        None => String::new(),
    };
    vec![
        format!("Both sides measured in this sitting, {order}{fresh}; round i gives the ratio candidate/baseline, and the estimate is their geometric mean.{generator}"),
        format!(
            "Interval: {} at {} each, so that all {} x {} gated metric{} hold together at {} (Bonferroni).",
            match cmp.interval {
                Interval::SignedRank => "the Hodges-Lehmann estimate of the log ratios with the Wilcoxon signed-rank interval (it holds for rounds with a wild one among them)",
                Interval::StudentT => "Student's t-interval on the mean log ratio",
            },
            confidence(cmp.interval_alpha),
            looks,
            cmp.gates,
            if cmp.gates == 1 { "" } else { "s" },
            confidence(cmp.alpha)
        ),
        match cmp.interval {
            Interval::SignedRank => format!(
                "MDE: the smallest change these rounds could show with power {:.0}% at that level, from the interval's own width: h * (1 + z(power) / z(1-a/2)) on the log scale, h its half-width.",
                crate::paired::POWER * 100.0
            ),
            Interval::StudentT => format!(
                "MDE: the smallest change these rounds could show with power {:.0}% at that level, (t(1-a/2) + t(power)) * s / sqrt(n) on the log ratios.",
                crate::paired::POWER * 100.0
            ),
        },
        format!(
            "Verdict: worse or better when the interval excludes 1 and the ratio is beyond ±{threshold}; within when the whole interval is inside ±{threshold}; else not judged. Only the gated metric of each server and document (requests/s, or server CPU per request when the generator was the bottleneck: see the gates below) can fail the run."
        ),
    ]
}

/// How many rounds were run and why they stopped.
fn stop_text(cmp: &PairedComparison) -> String {
    match cmp.stop {
        Some(s) => format!(
            "{} round{} ({} at most, {} first): {}",
            cmp.rounds,
            if cmp.rounds == 1 { "" } else { "s" },
            cmp.max_rounds,
            cmp.min_rounds,
            s.text()
        ),
        None => format!(
            "{} round{} (the run ended before its stopping rule did)",
            cmp.rounds,
            if cmp.rounds == 1 { "" } else { "s" }
        ),
    }
}

/// The closing line: the regressions, or that none was found, and whether every gated metric
/// was judged.
fn conclusion_text(cmp: &PairedComparison, threshold: &str) -> String {
    let regressions: Vec<String> = cmp
        .regressions()
        .map(|(g, m)| {
            let e = m.estimate.as_ref();
            format!(
                "{} / {} {} {}",
                g.server,
                g.document,
                m.metric.label(),
                e.map_or_else(String::new, |e| format!(
                    "x{} ({}-{})",
                    f(e.ratio, 3),
                    f(e.low, 3),
                    f(e.high, 3)
                ))
            )
        })
        .chain(
            cmp.missing_in_candidate
                .iter()
                .map(|s| format!("{s} measured on the baseline side only")),
        )
        .collect();
    let undecided = cmp.undecided();
    if !regressions.is_empty() {
        format!("REGRESSION beyond {threshold}: {}.", regressions.join("; "))
    } else if undecided == 0 && !cmp.groups.is_empty() {
        format!("No regression: every gated metric was judged, none worse beyond {threshold}.")
    } else {
        format!(
            "No regression shown, but {undecided} gated metric{} could not be judged at ±{threshold} within the budget (see their MDE: more rounds, a larger threshold or a quieter machine).",
            if undecided == 1 { "" } else { "s" }
        )
    }
}
