//! Capacity at a latency target: what a search found per server and document (every step it
//! measured, and the rate it settled on), as the results record stores it, and the words and
//! tables reports show for it.
//!
//! A step is one constant rate held for a window after a warm-up; it passes when the
//! percentile asked for of the latency measured from each request's intended send time (so
//! queueing in front of the server counts, see the load generator's coordinated-omission
//! correction) is within the target, under [`CapacityCriteria::max_error_share`] of the
//! requests failed, and the generator sent at least [`CapacityCriteria::min_schedule_share`]
//! of the rate asked. The search itself is the runner's.

use crate::compare::{compare_metric, MetricComparison, Verdict};
use crate::record::RunRecord;
use crate::render::{Column, TextTable};
use crate::stats::{Metric, Summary};
use serde::{Deserialize, Serialize};

/// One server's search on one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityRecord {
    /// [`crate::ServerRecord::name`].
    pub server: String,
    /// The scenario's name for the document.
    pub document: String,
    pub url_path: String,
    pub criteria: CapacityCriteria,
    /// The first rate tried, requests/s.
    pub start: f64,
    /// Where that rate came from.
    pub start_from: StartFrom,
    /// In the order they ran.
    pub steps: Vec<CapacityStep>,
    pub result: CapacityResult,
}

/// What the search was asked and by which rules it judged each step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityCriteria {
    /// The percentile held to the target, in percent: 99 for p99, 99.9 for p99.9.
    pub percentile: f64,
    /// The latency that percentile must not exceed, µs.
    pub target_us: u64,
    /// A step fails when this share of its requests or more failed (0.001: 0.1%).
    pub max_error_share: f64,
    /// The generator kept its schedule when it sent at least this share of the rate asked.
    pub min_schedule_share: f64,
    /// The measured window of a step, seconds.
    pub step_s: f64,
    /// Load before each window, not counted, seconds.
    pub warmup_s: f64,
    pub max_steps: u32,
    /// No step starts that would end beyond this much time spent on the search, seconds.
    pub budget_s: f64,
    /// Bisection stops when the lowest failing rate is within this share above the highest
    /// passing one (0.05: 5%).
    pub precision: f64,
}

impl CapacityCriteria {
    /// `p99`, `p99.9`.
    pub fn percentile_name(&self) -> String {
        format!("p{}", trim_number(self.percentile))
    }

    /// `p99 <= 10ms`.
    pub fn target_text(&self) -> String {
        format!(
            "{} <= {}",
            self.percentile_name(),
            describe_us(self.target_us)
        )
    }
}

/// Where the first rate of a search came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartFrom {
    /// The scenario's `start`.
    Configured,
    /// Half the median requests/s of the scenario's own (closed-loop) loads of the same
    /// server and document.
    ClosedLoop,
    /// Neither was there: a fixed rate.
    Default,
}

/// One rate held for one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityStep {
    /// The rate asked, requests/s.
    pub rate: f64,
    /// Connections the generator could use: enough that at the target latency it never runs
    /// out of them.
    pub connections: u32,
    /// Fewer connections than that were allowed (the generator's open-files limit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub connections_capped: bool,
    /// The measured window, seconds.
    pub window_s: f64,
    /// Requests begun in the window (the `generator_failures` among them never left it).
    pub started: u64,
    /// Requests that ended in the window, with a response or a failure.
    pub answered: u64,
    /// Requests still unanswered when the window closed (they count in the latency at how
    /// long they had waited by then).
    pub unanswered: u64,
    /// Failed requests of every kind the server is answerable for, and non-2xx responses.
    pub errors: u64,
    /// Connections the generator could not open for want of its own file descriptors or
    /// ports: never the server's.
    pub generator_failures: u64,
    /// The percentile held, µs, from each request's intended send time; `None` when nothing
    /// was sent.
    pub latency_us: Option<u64>,
    /// The same percentile of how late the requests whose connection was free left after
    /// their intended send time, µs: the generator's own lateness in sending, which is in
    /// `latency_us` too. `None` when no request left that way.
    #[serde(default)]
    pub send_lag_us: Option<u64>,
    /// The same percentile of how long responses had arrived before the generator read them,
    /// µs: its own lateness in reading, which keeps connections busy and so delays the
    /// requests after them. `None` without the kernel's receive stamps.
    #[serde(default)]
    pub read_delay_us: Option<u64>,
    /// The generator's CPU time over the window, as a share of its threads' (1.0: every
    /// thread busy all the time).
    pub client_cpu_share: f64,
    pub verdict: StepVerdict,
    /// Wall time the step took, warm-up included, seconds.
    pub wall_s: f64,
}

impl CapacityStep {
    /// Requests sent per second of the window: begun, and not stopped by the generator's own
    /// limits before they left.
    pub fn achieved(&self) -> f64 {
        if self.window_s > 0.0 {
            self.started.saturating_sub(self.generator_failures) as f64 / self.window_s
        } else {
            0.0
        }
    }

    /// What the generator sent as a share of the rate asked.
    pub fn schedule_share(&self) -> f64 {
        if self.rate > 0.0 {
            self.achieved() / self.rate
        } else {
            0.0
        }
    }

    /// Failed requests as a share of those sent.
    pub fn error_share(&self) -> f64 {
        self.errors as f64 / self.started.max(1) as f64
    }
}

/// How a step was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// Within the target, few enough errors, the schedule kept.
    Pass,
    /// The percentile exceeded the target (or nothing was answered).
    Latency,
    /// Too many requests failed.
    Errors,
    /// The generator did not keep its schedule with the server within the target, or the
    /// server missed the target while the generator was itself late, sending or reading, by
    /// more than half of it, or sent too little for want of its own CPU, descriptors, ports
    /// or connections: the rate says nothing about the server.
    Generator,
}

/// What a search settled on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityResult {
    pub kind: CapacityKind,
    /// The highest rate the server passed at, requests/s (with a generator limit, the rate the
    /// generator reached at the step it could not go beyond, if the server passed there);
    /// absent when no step passed.
    pub rate: Option<f64>,
    /// The lowest rate that failed, when one did.
    pub failed_at: Option<f64>,
    /// Why the search stopped.
    pub stop: StopReason,
}

/// The kind of a search's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityKind {
    /// The capacity, to within the precision: a rate passed and one at most that much higher
    /// failed.
    Found,
    /// A lower bound: the search stopped before a failing rate close enough above it was
    /// found.
    AtLeast,
    /// No rate passed.
    NonePassed,
}

/// Why a search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The passing and failing rates closed in to within the precision.
    Converged,
    /// The rates left to try were ones the generator could not keep: it stopped below such a
    /// rate with no failure of the server's in between.
    GeneratorLimit,
    /// It took its `max_steps`.
    MaxSteps,
    /// Another step would have gone beyond its time budget.
    Budget,
    /// Halving the rate went below the lowest rate worth measuring.
    MinimumRate,
}

impl StopReason {
    fn text(self) -> &'static str {
        match self {
            StopReason::Converged => "converged",
            StopReason::GeneratorLimit => "generator limit",
            StopReason::MaxSteps => "out of steps",
            StopReason::Budget => "time budget spent",
            StopReason::MinimumRate => "below the lowest rate measured",
        }
    }
}

impl CapacityResult {
    /// The rate as a comparison takes it: 0 when nothing passed.
    pub fn value(&self) -> f64 {
        self.rate.unwrap_or(0.0)
    }

    /// Only a lower bound of the capacity.
    pub fn is_lower_bound(&self) -> bool {
        self.kind == CapacityKind::AtLeast
    }

    /// "found", "at least: generator limit", "none passed: out of steps".
    pub fn text(&self) -> String {
        match self.kind {
            CapacityKind::Found => "found".to_string(),
            CapacityKind::AtLeast => format!("at least: {}", self.stop.text()),
            CapacityKind::NonePassed => format!("none passed: {}", self.stop.text()),
        }
    }
}

/// Why a step was judged as it was, in words: "pass", "p99 14.20 ms > 10ms", "errors 2.10%
/// >= 0.1%", "generator sent 91% of the rate, using its whole CPU".
pub fn verdict_text(step: &CapacityStep, c: &CapacityCriteria) -> String {
    match step.verdict {
        StepVerdict::Pass => "pass".to_string(),
        StepVerdict::Latency => match step.latency_us {
            None => "no request sent".to_string(),
            Some(us) => {
                let mut s = format!(
                    "{} {} ms > {}",
                    c.percentile_name(),
                    f(us as f64 / 1e3, 2),
                    describe_us(c.target_us)
                );
                if step.unanswered > 0 {
                    s.push_str(&format!(", {} unanswered at the end", step.unanswered));
                }
                s
            }
        },
        StepVerdict::Errors => format!(
            "errors {}% >= {}%",
            f(step.error_share() * 100.0, 2),
            trim_number(c.max_error_share * 100.0)
        ),
        StepVerdict::Generator => {
            let mut why = Vec::new();
            let late = |v: Option<u64>| v.filter(|l| 2 * l > c.target_us);
            if let Some(lag) = late(step.send_lag_us) {
                why.push(format!(
                    "itself {} ms late sending at {}",
                    f(lag as f64 / 1e3, 2),
                    c.percentile_name()
                ));
            }
            if let Some(d) = late(step.read_delay_us) {
                why.push(format!(
                    "{} ms late reading at {}",
                    f(d as f64 / 1e3, 2),
                    c.percentile_name()
                ));
            }
            if step.client_cpu_share >= crate::record::CLIENT_BOUND_SHARE {
                why.push("using its whole CPU".to_string());
            }
            if step.generator_failures > 0 {
                why.push(format!(
                    "{} connections failed for want of its own descriptors or ports",
                    step.generator_failures
                ));
            }
            if step.connections_capped {
                why.push(format!("capped at {} connections", step.connections));
            }
            let mut s = format!(
                "generator sent {}% of the rate",
                f(step.schedule_share() * 100.0, 0)
            );
            if !why.is_empty() {
                s.push_str(", ");
                s.push_str(&why.join(", "));
            }
            s
        }
    }
}

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

/// This capacity over the reference's: "0.45x", with "≥" or "≤" when one of them is only a
/// lower bound, "-" when both are or the reference has none.
pub fn ratio_text(this: &CapacityResult, reference: &CapacityResult) -> String {
    let (Some(v), Some(r)) = (this.rate, reference.rate) else {
        return "-".to_string();
    };
    if r <= 0.0 {
        return "-".to_string();
    }
    let ratio = format!("{}x", f(v / r, 2));
    match (this.is_lower_bound(), reference.is_lower_bound()) {
        (false, false) => ratio,
        (true, false) => format!(">= {ratio}"),
        (false, true) => format!("<= {ratio}"),
        (true, true) => "-".to_string(),
    }
}

/// The capacity cell: "4375", ">= 9800", "-".
pub fn rate_text(r: &CapacityResult) -> String {
    match (r.kind, r.rate) {
        (_, None) => "-".to_string(),
        (CapacityKind::AtLeast, Some(v)) => format!(">= {}", f(v, 0)),
        (_, Some(v)) => f(v, 0),
    }
}

// ---------------------------------------------------------------------------------------------
// What reports show.

/// A document's capacity head-to-head, every cell formatted.
#[derive(Serialize)]
pub(crate) struct CapacityContext {
    /// "p99 <= 10ms".
    target: String,
    /// "p99".
    percentile: String,
    /// The rules besides the target, in words.
    rules: String,
    rows: Vec<CapacityRow>,
    table: TextTable,
    steps: Vec<StepRow>,
    steps_table: TextTable,
}

#[derive(Serialize)]
struct CapacityRow {
    server: String,
    /// "4375", ">= 9800", "-".
    rate: String,
    ratio: String,
    /// The percentile at that rate, ms.
    latency_ms: String,
    steps: String,
    /// Seconds the search took.
    time_s: String,
    /// "found: fails at 4594", "at least: generator limit".
    result: String,
}

#[derive(Serialize)]
struct StepRow {
    server: String,
    /// 1-based.
    step: String,
    rate: String,
    sent: String,
    latency_ms: String,
    errors: String,
    verdict: String,
}

/// The capacity table of one document's searches, and their steps.
pub(crate) fn context(record: &RunRecord, document: &str) -> Option<CapacityContext> {
    let searches = of_document(record, document);
    let first = searches.first()?;
    let c = &first.criteria;
    let rows = capacity_rows(&searches, first);
    let latency_header = format!("{} ms", c.percentile_name());
    let table = capacity_table(&rows, &latency_header);
    let steps = step_rows(&searches);
    let steps_table = steps_table(&steps, &latency_header);
    Some(CapacityContext {
        target: c.target_text(),
        percentile: c.percentile_name(),
        rules: rules_text(c),
        rows,
        table,
        steps,
        steps_table,
    })
}

/// One row per search: its capacity, its ratio to the first server's and how it ended.
fn capacity_rows(searches: &[&CapacityRecord], first: &CapacityRecord) -> Vec<CapacityRow> {
    searches
        .iter()
        .map(|r| {
            let mut result = r.result.text();
            if let Some(x) = r.result.failed_at {
                result.push_str(&format!(", fails at {}", f(x, 0)));
            }
            CapacityRow {
                server: r.server.clone(),
                rate: rate_text(&r.result),
                ratio: ratio_text(&r.result, &first.result),
                latency_ms: result_step(r)
                    .and_then(|s| s.latency_us)
                    .map_or_else(|| "-".to_string(), |us| f(us as f64 / 1e3, 2)),
                steps: r.steps.len().to_string(),
                time_s: f(r.steps.iter().map(|s| s.wall_s).sum::<f64>(), 1),
                result,
            }
        })
        .collect()
}

/// The text table of [`capacity_rows`].
fn capacity_table(rows: &[CapacityRow], latency_header: &str) -> TextTable {
    TextTable::new(
        &[
            Column::left("server"),
            Column::right("capacity req/s"),
            Column::right("ratio"),
            Column::right(latency_header),
            Column::right("steps"),
            Column::right("time s"),
            Column::last("result"),
        ],
        rows.iter()
            .map(|r| {
                let cells = [
                    &r.server,
                    &r.rate,
                    &r.ratio,
                    &r.latency_ms,
                    &r.steps,
                    &r.time_s,
                    &r.result,
                ];
                (cells.map(String::clone).to_vec(), String::new())
            })
            .collect(),
    )
}

/// One row per step of every search, in the order they were taken.
fn step_rows(searches: &[&CapacityRecord]) -> Vec<StepRow> {
    searches
        .iter()
        .flat_map(|r| {
            r.steps.iter().enumerate().map(move |(i, s)| StepRow {
                server: r.server.clone(),
                step: (i + 1).to_string(),
                rate: f(s.rate, 0),
                sent: f(s.achieved(), 0),
                latency_ms: s
                    .latency_us
                    .map_or_else(|| "-".to_string(), |us| f(us as f64 / 1e3, 2)),
                errors: s.errors.to_string(),
                verdict: verdict_text(s, &r.criteria),
            })
        })
        .collect()
}

/// The text table of [`step_rows`].
fn steps_table(steps: &[StepRow], latency_header: &str) -> TextTable {
    TextTable::new(
        &[
            Column::left("server"),
            Column::right("step"),
            Column::right("asked req/s"),
            Column::right("sent req/s"),
            Column::right(latency_header),
            Column::right("errors"),
            Column::last("verdict"),
        ],
        steps
            .iter()
            .map(|s| {
                let cells = [
                    &s.server,
                    &s.step,
                    &s.rate,
                    &s.sent,
                    &s.latency_ms,
                    &s.errors,
                    &s.verdict,
                ];
                (cells.map(String::clone).to_vec(), String::new())
            })
            .collect(),
    )
}

/// What a step must meet to pass, in a sentence.
fn rules_text(c: &CapacityCriteria) -> String {
    format!(
            "A step passes when its {p}, timed from each request's intended send time, is within {t}, under {e}% of its requests fail, and the generator sends at least {k}% of the rate asked; {step} steps after {w} of warm-up, found to within {prec}%",
            p = c.percentile_name(),
            t = describe_us(c.target_us),
            e = trim_number(c.max_error_share * 100.0),
            k = trim_number(c.min_schedule_share * 100.0),
            step = describe_seconds(c.step_s),
            w = describe_seconds(c.warmup_s),
            prec = trim_number(c.precision * 100.0)
        )
}

fn describe_seconds(s: f64) -> String {
    describe_us((s * 1e6).round() as u64)
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

/// Every figure of the searches, checked as [`RunRecord::check_figures`] checks the loads'.
pub(crate) fn check_figures(record: &RunRecord) -> Result<(), String> {
    let figure = |at: String, v: f64| -> Result<(), String> {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{at} is {v}"));
        }
        Ok(())
    };
    for (i, c) in record.capacity.iter().enumerate() {
        let at = |f: &str| format!("capacity[{i}].{f}");
        figure(at("start"), c.start)?;
        figure(at("criteria.percentile"), c.criteria.percentile)?;
        figure(at("criteria.step_s"), c.criteria.step_s)?;
        figure(at("criteria.budget_s"), c.criteria.budget_s)?;
        for (j, s) in c.steps.iter().enumerate() {
            let at = |f: &str| format!("capacity[{i}].steps[{j}].{f}");
            figure(at("rate"), s.rate)?;
            figure(at("window_s"), s.window_s)?;
            figure(at("client_cpu_share"), s.client_cpu_share)?;
            figure(at("wall_s"), s.wall_s)?;
            if s.answered > s.started {
                return Err(format!(
                    "{} is {}, more than the {} requests started",
                    at("answered"),
                    s.answered,
                    s.started
                ));
            }
        }
        let r = &c.result;
        if let Some(v) = r.rate {
            figure(at("result.rate"), v)?;
        }
        if let Some(v) = r.failed_at {
            figure(at("result.failed_at"), v)?;
        }
        if (r.kind == CapacityKind::NonePassed) != r.rate.is_none() {
            return Err(format!(
                "{} is {:?} with a rate of {:?}",
                at("result.kind"),
                r.kind,
                r.rate
            ));
        }
    }
    Ok(())
}

/// µs as the shortest of `250us`, `10ms`, `1.5s`.
pub fn describe_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us}us")
    } else if us < 1_000_000 {
        format!("{}ms", trim_number(us as f64 / 1e3))
    } else {
        format!("{}s", trim_number(us as f64 / 1e6))
    }
}

/// A number with at most three decimals and no trailing zeros: 99, 99.9, 0.1.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn f(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criteria() -> CapacityCriteria {
        CapacityCriteria {
            percentile: 99.0,
            target_us: 10_000,
            max_error_share: 0.001,
            min_schedule_share: 0.99,
            step_s: 2.0,
            warmup_s: 0.5,
            max_steps: 12,
            budget_s: 40.0,
            precision: 0.05,
        }
    }

    fn step(rate: f64, verdict: StepVerdict) -> CapacityStep {
        CapacityStep {
            rate,
            connections: 50,
            connections_capped: false,
            window_s: 2.0,
            started: (rate * 2.0) as u64,
            answered: (rate * 2.0) as u64,
            unanswered: 0,
            errors: 0,
            generator_failures: 0,
            latency_us: Some(3_000),
            send_lag_us: Some(100),
            read_delay_us: Some(40),
            client_cpu_share: 0.2,
            verdict,
            wall_s: 2.5,
        }
    }

    fn result(kind: CapacityKind, rate: Option<f64>, stop: StopReason) -> CapacityResult {
        CapacityResult {
            kind,
            rate,
            failed_at: None,
            stop,
        }
    }

    #[test]
    fn targets_and_durations_read_as_written() {
        let mut c = criteria();
        assert_eq!(c.target_text(), "p99 <= 10ms");
        c.percentile = 99.9;
        c.target_us = 2_500;
        assert_eq!(c.target_text(), "p99.9 <= 2.5ms");
        assert_eq!(describe_us(250), "250us");
        assert_eq!(describe_us(1_500_000), "1.5s");
    }

    #[test]
    fn each_verdict_says_why() {
        let c = criteria();
        assert_eq!(verdict_text(&step(1000.0, StepVerdict::Pass), &c), "pass");
        let mut slow = step(1000.0, StepVerdict::Latency);
        slow.latency_us = Some(14_200);
        slow.unanswered = 12;
        assert_eq!(
            verdict_text(&slow, &c),
            "p99 14.20 ms > 10ms, 12 unanswered at the end"
        );
        let mut failing = step(1000.0, StepVerdict::Errors);
        failing.errors = 42;
        assert_eq!(verdict_text(&failing, &c), "errors 2.10% >= 0.1%");
        let mut behind = step(1000.0, StepVerdict::Generator);
        behind.started = 1820;
        behind.client_cpu_share = 0.97;
        assert_eq!(
            verdict_text(&behind, &c),
            "generator sent 91% of the rate, using its whole CPU"
        );
        let mut late = step(1000.0, StepVerdict::Generator);
        late.latency_us = Some(40_000);
        late.send_lag_us = Some(7_500);
        assert_eq!(
            verdict_text(&late, &c),
            "generator sent 100% of the rate, itself 7.50 ms late sending at p99"
        );
        late.read_delay_us = Some(12_000);
        assert_eq!(
            verdict_text(&late, &c),
            "generator sent 100% of the rate, itself 7.50 ms late sending at p99, 12.00 ms late reading at p99"
        );
    }

    #[test]
    fn ratios_say_when_a_side_is_only_a_lower_bound() {
        let found = |v| result(CapacityKind::Found, Some(v), StopReason::Converged);
        let at_least = |v| result(CapacityKind::AtLeast, Some(v), StopReason::GeneratorLimit);
        let none = result(CapacityKind::NonePassed, None, StopReason::MaxSteps);
        assert_eq!(ratio_text(&found(500.0), &found(1000.0)), "0.50x");
        assert_eq!(ratio_text(&at_least(2000.0), &found(1000.0)), ">= 2.00x");
        assert_eq!(ratio_text(&found(500.0), &at_least(1000.0)), "<= 0.50x");
        assert_eq!(ratio_text(&at_least(500.0), &at_least(1000.0)), "-");
        assert_eq!(ratio_text(&none, &found(1000.0)), "-");
        assert_eq!(ratio_text(&found(1000.0), &none), "-");
        assert_eq!(rate_text(&at_least(9800.4)), ">= 9800");
        assert_eq!(rate_text(&found(4375.0)), "4375");
        assert_eq!(rate_text(&none), "-");
        assert_eq!(at_least(1.0).text(), "at least: generator limit");
        assert_eq!(none.text(), "none passed: out of steps");
    }
}
