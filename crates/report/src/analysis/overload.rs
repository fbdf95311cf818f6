//! Past the knee: what a staircase of open-model rates beyond a server's capacity says of it
//! (the staircase itself is the runner's).
//!
//! - **Goodput** is good responses (2xx, whole) within the capacity's latency target per
//!   second, the latency counted from each request's intended send time, so that queueing in
//!   front of the server counts.
//! - The **knee** is the first step whose goodput fell below [`KNEE_SHARE`] of the rate it
//!   was offered.
//! - The server **collapses** when goodput at the highest step is below [`COLLAPSE_SHARE`] of
//!   the most it gave up to the knee: it gives less the more it is asked (an unbounded queue
//!   does this), where a server that sheds what it cannot serve (a quick 503) keeps giving what
//!   it can.
//! - The **recovery time** is how far into the recovery phase (a lower rate after the
//!   highest step) the server's latency and error share came back within the first step's
//!   noise and stayed there. An interval is within it when its latency is at most
//!   [`RECOVERED_LATENCY`] times the highest of the first step's intervals (plus
//!   [`RECOVERED_SLACK_US`]; the first quarter of that step, where connections and caches
//!   warm, left out) and its error share at most the first step's highest plus
//!   [`RECOVERED_ERRORS`]; an interval with no response is not. The server is back from the
//!   first interval within the noise after which it never has two intervals in a row out of
//!   line: one interval alone out of line between two within is noise on a shared machine,
//!   not a relapse.

pub use model::record::overload::{
    CapacityFrom, OverloadCriteria, OverloadErrors, OverloadRecord, OverloadStep, OverloadVerdict,
    TimePoint,
};

/// The knee is the first step whose goodput is below this share of the rate offered.
pub const KNEE_SHARE: f64 = 0.95;
/// Goodput at the highest step below this share of the most given up to the knee: collapse.
pub const COLLAPSE_SHARE: f64 = 0.9;
/// An interval of the recovery phase is back within the noise when its latency is at most
/// this many times the first step's highest interval latency, plus [`RECOVERED_SLACK_US`].
pub const RECOVERED_LATENCY: f64 = 1.5;
pub const RECOVERED_SLACK_US: u64 = 1_000;
/// ... and its error share at most the first step's highest plus this.
pub const RECOVERED_ERRORS: f64 = 0.01;

/// What the steps (the recovery phase last, marked so) add up to.
pub fn verdict(steps: &[OverloadStep]) -> OverloadVerdict {
    let stairs: Vec<&OverloadStep> = steps.iter().filter(|s| !s.recovery).collect();
    let knee_at = stairs
        .iter()
        .position(|s| s.goodput < KNEE_SHARE * s.offered);
    let peak_goodput = stairs.iter().map(|s| s.goodput).fold(0.0, f64::max);
    let capacity = stairs.first().map_or(0.0, |s| {
        if s.multiple > 0.0 {
            s.offered / s.multiple
        } else {
            0.0
        }
    });
    let share_at = |m: f64| {
        stairs
            .iter()
            .find(|s| (s.multiple - m).abs() < 1e-9)
            .filter(|_| capacity > 0.0)
            .map(|s| s.goodput / capacity)
    };
    let collapse = knee_at.and_then(|k| {
        let before = stairs[..=k].iter().map(|s| s.goodput).fold(0.0, f64::max);
        let last = stairs.last()?;
        Some(last.goodput < COLLAPSE_SHARE * before)
    });
    let generator_limited = match knee_at {
        Some(k) => stairs[..=k].iter().any(|s| s.generator_limited),
        None => stairs.iter().any(|s| s.generator_limited),
    } || collapse == Some(true)
        && stairs.last().is_some_and(|s| s.generator_limited);
    let recovery = steps.iter().find(|s| s.recovery);
    OverloadVerdict {
        knee: knee_at.map(|k| stairs[k].multiple),
        peak_goodput,
        goodput_2x: share_at(2.0),
        goodput_3x: share_at(3.0),
        collapse,
        recovery_s: match (stairs.first(), recovery) {
            (Some(first), Some(r)) => recovery_time(&first.points, &r.points),
            _ => None,
        },
        peak_memory_bytes: steps.iter().filter_map(|s| s.peak_memory_bytes).max(),
        generator_limited,
    }
}

/// Seconds into the recovery phase (`after`) from which its intervals are back within the
/// noise of the first step's intervals (`before`); `None` when they are not by its end.
pub fn recovery_time(before: &[TimePoint], after: &[TimePoint]) -> Option<f64> {
    let settled = &before[before.len() / 4..];
    let latency_limit = settled
        .iter()
        .filter_map(|p| p.latency_us)
        .max()
        .map(|l| (l as f64 * RECOVERED_LATENCY) as u64 + RECOVERED_SLACK_US)?;
    let error_limit = settled.iter().map(|p| p.error_share).fold(0.0, f64::max) + RECOVERED_ERRORS;
    let out: Vec<bool> = after
        .iter()
        .map(|p| p.error_share > error_limit || p.latency_us.is_none_or(|l| l > latency_limit))
        .collect();
    // Out of line, with a neighbour out of line too: a relapse, not noise.
    let relapse =
        |i: usize| out[i] && (i > 0 && out[i - 1] || out.get(i + 1).copied().unwrap_or(false));
    let after_relapses = (0..out.len())
        .rev()
        .find(|&i| relapse(i))
        .map_or(0, |i| i + 1);
    // The first interval within, from there: before it the server was not back yet, even for
    // an interval alone.
    (after_relapses..out.len())
        .find(|&i| !out[i])
        .map(|i| after[i].start_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(start_s: f64, latency_ms: u64, error_share: f64) -> TimePoint {
        TimePoint {
            start_s,
            completed: 100.0,
            error_share,
            latency_us: Some(latency_ms * 1000),
        }
    }

    fn step(multiple: f64, goodput: f64) -> OverloadStep {
        OverloadStep {
            multiple,
            offered: 1000.0 * multiple,
            recovery: false,
            connections: 100,
            held_s: 3.0,
            window_s: 3.0,
            sent: 1000.0 * multiple,
            goodput,
            answered: 3000,
            unanswered: 0,
            errors: OverloadErrors::default(),
            p50_us: Some(1000),
            p99_us: Some(2000),
            server_cpu_s: Some(1.0),
            peak_memory_bytes: Some((multiple * 1e6) as u64),
            peak_connections: None,
            generator_limited: false,
            unsettled: false,
            points: (0..6).map(|i| point(f64::from(i) * 0.5, 2, 0.0)).collect(),
        }
    }

    fn staircase(goodputs: [f64; 5]) -> Vec<OverloadStep> {
        [0.5, 1.0, 1.5, 2.0, 3.0]
            .into_iter()
            .zip(goodputs)
            .map(|(m, g)| step(m, g))
            .collect()
    }

    #[test]
    fn a_server_that_sheds_has_a_knee_and_no_collapse() {
        let v = verdict(&staircase([500.0, 990.0, 1010.0, 1000.0, 980.0]));
        assert_eq!(v.knee, Some(1.5));
        assert_eq!(v.peak_goodput, 1010.0);
        assert_eq!(v.collapse, Some(false));
        assert_eq!(v.goodput_2x, Some(1.0));
        assert_eq!(v.goodput_3x, Some(0.98));
        assert_eq!(v.peak_memory_bytes, Some(3_000_000));
        assert_eq!(v.recovery_s, None, "no recovery phase");
    }

    #[test]
    fn a_server_whose_goodput_falls_as_it_is_asked_more_collapses() {
        let v = verdict(&staircase([500.0, 990.0, 400.0, 50.0, 0.0]));
        assert_eq!(v.knee, Some(1.5));
        assert_eq!(v.collapse, Some(true));
        assert_eq!(v.goodput_3x, Some(0.0));
    }

    #[test]
    fn a_server_that_keeps_up_has_no_knee() {
        let v = verdict(&staircase([500.0, 1000.0, 1500.0, 2000.0, 2990.0]));
        assert_eq!((v.knee, v.collapse), (None, None));
    }

    #[test]
    fn recovery_is_the_first_interval_within_after_the_last_two_out_of_line_in_a_row() {
        // The first step: its first quarter (warming) left out, the rest at most 2 ms: an
        // interval is within the noise at 1.5 x 2 ms + 1 ms = 4 ms and 1% errors.
        let mut before: Vec<TimePoint> = (0..8).map(|i| point(f64::from(i), 2, 0.0)).collect();
        before[0].latency_us = Some(50_000);
        before[1].latency_us = Some(30_000);
        let after = vec![
            point(0.0, 900, 0.0),
            point(0.5, 300, 0.2),
            point(1.0, 3, 0.0),
            point(1.5, 40, 0.0),
            point(2.0, 50, 0.005),
            point(2.5, 2, 0.0),
            point(3.0, 9, 0.0),
            point(3.5, 2, 0.0),
        ];
        // 1.5 s and 2 s are out of line together; 3 s alone is noise.
        assert_eq!(recovery_time(&before, &after), Some(2.5));
        let mut relapsed = after.clone();
        relapsed[7].error_share = 0.5;
        assert_eq!(
            recovery_time(&before, &relapsed),
            None,
            "not back by the end"
        );
        let mut silent = after.clone();
        silent[3].latency_us = None;
        silent[4].latency_us = Some(3000);
        assert_eq!(
            recovery_time(&before, &silent),
            Some(1.0),
            "one silent interval between two within is noise too"
        );
        let calm: Vec<TimePoint> = (0..3).map(|i| point(f64::from(i), 2, 0.0)).collect();
        assert_eq!(recovery_time(&before, &calm), Some(0.0));
        let mut first_slow = calm.clone();
        first_slow[0].latency_us = Some(85_000);
        assert_eq!(
            recovery_time(&before, &first_slow),
            Some(1.0),
            "the recovery phase's first interval alone out of line is the time it took"
        );
        assert_eq!(
            recovery_time(&[], &calm),
            None,
            "no noise to be back within"
        );
        let mut steps = staircase([500.0, 990.0, 1010.0, 1000.0, 980.0]);
        let mut r = step(0.5, 500.0);
        r.recovery = true;
        r.points = after;
        steps[0].points = before;
        steps.push(r);
        assert_eq!(verdict(&steps).recovery_s, Some(2.5));
    }
}
