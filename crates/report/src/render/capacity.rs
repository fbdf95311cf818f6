//! Capacity searches in words and tables: why a step passed or failed, a capacity and its ratio
//! to another, and a document's head-to-head of searches with their steps.

use super::table::{Column, TextTable};
use crate::capacity::search::trim_number;
use crate::capacity::{
    describe_us, of_document, result_step, CapacityCriteria, CapacityKind, CapacityRecord,
    CapacityResult, CapacityStep, StepVerdict,
};
use crate::record::RunRecord;
use serde::Serialize;

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
    use crate::capacity::StopReason;

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
