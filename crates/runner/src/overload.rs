//! Past the knee: the staircase each server is held to after its capacity search (the
//! pipeline's `overload` phase runs it), one constant-rate load per step, each step's figures
//! read from the load's report and timeline. What the steps add up to (knee, collapse,
//! recovery) is the report crate's ([`report::overload`]).
//!
//! Each step's load is the document's own (keep-alive, HTTP version, method, timeout) at
//! `multiple x capacity` requests/s, with no warm-up (the server's state carries from one step
//! into the next, as a real overload's does) and enough connections that a server answering
//! within the target never makes the generator wait for one; the per-request timeout is the
//! document's, so that a server that stops answering fills the step with timeouts, not with a
//! hang.

use loadgen::json::{HistogramDecodeError, LoadReport};
use loadgen::LoadSpec;
use report::overload::{OverloadErrors, OverloadStep, TimePoint};
use report::Usage;
use scenario::{CapacityTarget, OverloadSpec};
use std::time::Duration;

/// The generator kept up when it sent at least this share of the rate.
pub const MIN_SENT_SHARE: f64 = 0.99;

/// The load of one step at `rate` for `length`, with connections for the `target`, at most
/// `ceiling`; and whether the ceiling cut them.
pub fn step_load(
    base: &LoadSpec,
    target: &CapacityTarget,
    rate: f64,
    length: Duration,
    ceiling: u32,
) -> (LoadSpec, bool) {
    let wanted = crate::capacity::connections_for(rate, target.latency);
    let connections = wanted.min(ceiling).max(1);
    let load = LoadSpec {
        requests: None,
        duration: Some(length),
        concurrency: connections,
        warmup: Duration::ZERO,
        rate: Some(rate),
        min_duration: None,
        ..base.clone()
    };
    (load, wanted > ceiling)
}

/// The steps a staircase of `spec` measures for a server of capacity `capacity`: each
/// multiple with its rate and length, the recovery phase last (marked `true`).
pub fn plan(spec: &OverloadSpec, capacity: f64) -> Vec<(f64, f64, Duration, bool)> {
    spec.multiples
        .iter()
        .map(|&m| (m, m * capacity, spec.step, false))
        .chain(std::iter::once((
            spec.recovery_multiple,
            spec.recovery_multiple * capacity,
            spec.recovery,
            true,
        )))
        .collect()
}

/// One step's figures from the load it ran at `multiple` (`rate` requests/s, its connections
/// `capped` below what the rate needs), good responses held to `target`, the server's
/// resource use when the engine gave it.
///
/// The step is the generator's limit, as a capacity step is ([`crate::capacity::judge`]),
/// when the generator sent under [`MIN_SENT_SHARE`] of the rate short of its own means (its
/// whole CPU, its descriptors or ports, its connections), or was itself late in sending
/// requests or reading responses by more than half the target at the percentile, and by at
/// least a quarter of the step's latency there.
pub fn step_from_report(
    r: &LoadReport,
    (multiple, rate, recovery, capped): (f64, f64, bool, bool),
    target: &CapacityTarget,
    usage: Option<&Usage>,
) -> Result<OverloadStep, HistogramDecodeError> {
    let window = r.elapsed_s.max(f64::EPSILON);
    let f = &r.failures;
    let errors = OverloadErrors {
        refused: f.connect,
        reset: f.receive + f.write,
        timeout: f.timeout,
        status: r.non_2xx,
        bad_bytes: f.length + f.exception,
    };
    let target_us = target.latency.as_micros() as u64;
    // Responses within the target, from each request's intended send time, less the non-2xx
    // ones (counted as if they were all quick: an upper bound) and those of the wrong length.
    let within = match r.corrected_histogram() {
        Some(h) => h?.count_between(0, target_us),
        None => 0,
    };
    let good = within.saturating_sub(r.non_2xx + f.length);
    let sent = r.started.saturating_sub(f.generator) as f64 / window;
    let threads = r.settings.threads.max(1) as f64;
    let short = r.client_cpu_s / (window * threads) >= report::record::CLIENT_BOUND_SHARE
        || f.generator > 0
        || capped;
    let percent = target.percentile.percent();
    let latency = r.corrected_percentile_counting_unfinished(target.percentile.permille())?;
    // Late by more than half the target, and by enough to account for a quarter of the
    // latency: a server whose answers take seconds makes its own latency, whatever the
    // generator's few milliseconds.
    let late = [&r.send_lag, &r.read_delay]
        .iter()
        .filter_map(|t| t.as_ref().and_then(|t| t.percentile(percent)))
        .any(|l| 2 * l > target_us && latency.is_none_or(|p| 4 * l >= p));
    Ok(OverloadStep {
        multiple,
        offered: rate,
        recovery,
        connections: r.settings.concurrency,
        held_s: r.elapsed_s,
        window_s: r.elapsed_s,
        sent,
        goodput: good as f64 / window,
        answered: r.complete + r.failed - f.connect,
        unanswered: r.unfinished.as_ref().map_or(0, |u| u.moments.count),
        errors,
        p50_us: r.corrected_percentile_counting_unfinished(500)?,
        p99_us: r.corrected_percentile_counting_unfinished(990)?,
        server_cpu_s: usage.map(|u| u.cpu_s),
        peak_memory_bytes: usage.map(|u| u.peak_memory_bytes),
        peak_connections: usage.and_then(|u| u.peak_connections),
        generator_limited: (sent < MIN_SENT_SHARE * rate && short) || late,
        unsettled: r
            .notes
            .iter()
            .any(|n| matches!(n, loadgen::Note::Unsteady { .. })),
        points: points(r, target)?,
    })
}

/// A step held again because it had not settled: `later`'s figures (the state the rate led
/// to), over the time both were held, with both stretches' intervals and the most memory
/// either saw.
pub fn held_again(earlier: OverloadStep, later: OverloadStep) -> OverloadStep {
    let offset = earlier.held_s;
    let mut points = earlier.points;
    points.extend(later.points.into_iter().map(|p| TimePoint {
        start_s: offset + p.start_s,
        ..p
    }));
    OverloadStep {
        held_s: offset + later.held_s,
        peak_memory_bytes: earlier.peak_memory_bytes.max(later.peak_memory_bytes),
        peak_connections: earlier.peak_connections.max(later.peak_connections),
        points,
        ..later
    }
}

/// Whether a step held for `held` is held again: it had not settled, and another `spec.step`
/// fits within `spec.step_max`. The recovery phase is held once, for its length.
pub fn hold_again(spec: &OverloadSpec, step: &OverloadStep, held: Duration) -> bool {
    !step.recovery && step.unsettled && held + spec.step <= spec.step_max
}

/// The load's timeline as points: per interval, responses per second, the failures' share
/// and the target's percentile of the latency from the intended send time.
fn points(r: &LoadReport, target: &CapacityTarget) -> Result<Vec<TimePoint>, HistogramDecodeError> {
    let Some(t) = &r.timeline else {
        return Ok(Vec::new());
    };
    let quantile = f64::from(target.percentile.permille()) / 1000.0;
    t.intervals
        .iter()
        .map(|i| {
            let failed = i.failures.total();
            let latency = match &i.corrected {
                Some(h) => {
                    let h = loadgen::json::decode_histogram(h)?;
                    (!h.is_empty()).then(|| h.value_at_quantile(quantile))
                }
                None => None,
            };
            let ended = i.completed + failed.saturating_sub(i.failures.connect);
            Ok(TimePoint {
                start_s: i.start_s,
                completed: i.completed as f64 / i.duration_s.max(f64::EPSILON),
                error_share: if ended + i.failures.connect > 0 {
                    failed as f64 / (ended + i.failures.connect) as f64
                } else {
                    0.0
                },
                latency_us: latency,
            })
        })
        .collect()
}
