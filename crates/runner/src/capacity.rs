//! Capacity at a latency target: the search for the highest constant request rate at which a
//! server keeps a percentile of its latency within a limit, with few errors, while the load
//! generator keeps its schedule.
//!
//! The search is pure: [`Search`] says which rate to measure next ([`Search::next`]) and takes
//! each step's result ([`Search::record`]); whoever drives it measures (the run pipeline against
//! a container, [`search`] with any function, tests with a model). It is bounded twice: at most
//! `max_steps` steps, and no step starts that would end beyond the time budget.
//!
//! - It starts at a given rate (by default half the closed-loop requests/s the scenario's own
//!   load measured) and doubles it while steps pass.
//! - Once a rate has failed it bisects between the highest rate that passed and the lowest
//!   that failed, until the failing one is within [`PRECISION`] above the passing one: the
//!   passing rate is the capacity.
//! - When the first rate fails it halves instead, down to [`MIN_RATE`].
//! - A step at which the generator could not keep its schedule says nothing of the server at
//!   that rate, and no higher rate can be measured: it bounds the search from above as a
//!   failure does, but what the search then closes in on is the generator's limit, so the
//!   result is "at least" the best rate the server passed at (a generator limit).
//!
//! A step ([`judge`]) passes when the percentile of the latency from each request's intended
//! send time, counting the requests still unanswered at the end of the window at how long they
//! had waited, is within the target; fewer than [`MAX_ERROR_SHARE`] of the requests failed; and
//! the generator sent at least [`MIN_SCHEDULE_SHARE`] of the rate. Each step opens enough
//! connections ([`connections_for`]) that, as long as the server answers within the target, the
//! generator never waits for a free one: running out of connections then means the server was
//! slow, and its latency shows it.

use loadgen::json::{HistogramDecodeError, LoadReport};
use loadgen::LoadSpec;
use report::capacity::{
    CapacityCriteria, CapacityKind, CapacityResult, CapacityStep, StepVerdict, StopReason,
};
use scenario::CapacitySpec;
use std::time::Duration;

/// A step fails when this share of its requests or more failed: 0.1%.
pub const MAX_ERROR_SHARE: f64 = 0.001;
/// The generator kept its schedule when it sent at least this share of the rate asked.
pub const MIN_SCHEDULE_SHARE: f64 = 0.99;
/// Bisection stops when the lowest failing rate is at most this share above the highest
/// passing one.
pub const PRECISION: f64 = 0.05;
/// Factor by which the rate grows while steps pass (and shrinks while none has).
pub const GROWTH: f64 = 2.0;
/// The lowest rate a search measures, requests/s.
pub const MIN_RATE: f64 = 1.0;
/// Requests a step's window holds at least: at low rates the window grows to hold them, so
/// that a percentile rests on enough requests.
pub const MIN_STEP_REQUESTS: f64 = 100.0;
/// The first rate when neither the scenario nor a closed-loop load gives one, requests/s.
pub const DEFAULT_START: f64 = 100.0;
/// A step's connections: this many times the requests in flight at the rate when each takes
/// the target latency (Little's law), plus [`SPARE_CONNECTIONS`].
pub const CONNECTION_HEADROOM: f64 = 4.0;
pub const SPARE_CONNECTIONS: u32 = 8;

/// The rules a search with `spec` judges by, as the record keeps them.
pub fn criteria(spec: &CapacitySpec) -> CapacityCriteria {
    CapacityCriteria {
        percentile: spec.target.percentile.percent(),
        target_us: spec.target.latency.as_micros() as u64,
        max_error_share: MAX_ERROR_SHARE,
        min_schedule_share: MIN_SCHEDULE_SHARE,
        step_s: spec.step.as_secs_f64(),
        warmup_s: spec.warmup.as_secs_f64(),
        max_steps: spec.max_steps,
        budget_s: spec.budget.as_secs_f64(),
        precision: PRECISION,
    }
}

/// The measured window of a step at `rate`: the configured one, longer at rates too low to
/// fill it with [`MIN_STEP_REQUESTS`].
pub fn window(spec: &CapacitySpec, rate: f64) -> Duration {
    spec.step.max(Duration::from_secs_f64(
        MIN_STEP_REQUESTS / rate.max(MIN_RATE),
    ))
}

/// What a step at `rate` is expected to take: its warm-up and its window.
pub fn step_cost(spec: &CapacitySpec, rate: f64) -> Duration {
    spec.warmup + window(spec, rate)
}

/// Connections enough that at `rate`, with every request taking `target`, the generator never
/// waits for a free one, with room for bursts.
pub fn connections_for(rate: f64, target: Duration) -> u32 {
    let in_flight = (CONNECTION_HEADROOM * rate * target.as_secs_f64()).ceil();
    (in_flight.min(f64::from(u32::MAX / 2)) as u32).saturating_add(SPARE_CONNECTIONS)
}

/// The most connections the generator may open with `threads` threads: the scenario's
/// ceiling, and what its open-files limit allows.
pub fn connection_ceiling(threads: usize) -> u32 {
    let (_, hard) = loadgen::limits::open_files_limit();
    let overhead = loadgen::limits::needed_open_files(0, threads);
    let by_files = u32::try_from(hard.saturating_sub(overhead)).unwrap_or(u32::MAX);
    scenario::MAX_CONCURRENCY.min(by_files).max(1)
}

/// The load of one step at `rate`: the document's own (keep-alive, HTTP version, method,
/// timeout, how the generator waits), held at the rate for the step's window after its warm-up,
/// with [`connections_for`] connections up to `ceiling`. Also whether the ceiling cut them.
/// A step is bounded by time, so a document's `min_duration` (which repeats a load of a request
/// count) has no part in it.
pub fn step_load(
    base: &LoadSpec,
    spec: &CapacitySpec,
    rate: f64,
    ceiling: u32,
) -> (LoadSpec, bool) {
    let wanted = connections_for(rate, spec.target.latency);
    let connections = wanted.min(ceiling).max(1);
    let load = LoadSpec {
        requests: None,
        duration: Some(window(spec, rate)),
        concurrency: connections,
        warmup: spec.warmup,
        rate: Some(rate),
        min_duration: None,
        ..base.clone()
    };
    (load, wanted > ceiling)
}

/// One step's figures from the load it ran, judged by `c`.
pub fn step_from_report(
    r: &LoadReport,
    rate: f64,
    connections_capped: bool,
    c: &CapacityCriteria,
    wall: Duration,
) -> Result<CapacityStep, HistogramDecodeError> {
    let permille = (c.percentile * 10.0).round() as u32;
    let threads = r.settings.threads.max(1) as f64;
    let mut step = CapacityStep {
        rate,
        connections: r.settings.concurrency,
        connections_capped,
        window_s: r.elapsed_s,
        started: r.started,
        answered: r.complete,
        unanswered: r.unfinished.as_ref().map_or(0, |u| u.moments.count),
        errors: r.failed + r.non_2xx + r.failures.write,
        generator_failures: r.failures.generator,
        latency_us: r.corrected_percentile_counting_unfinished(permille)?,
        send_lag_us: r
            .send_lag
            .as_ref()
            .and_then(|t| t.percentile(f64::from(permille) / 10.0)),
        read_delay_us: r
            .read_delay
            .as_ref()
            .and_then(|t| t.percentile(f64::from(permille) / 10.0)),
        client_cpu_share: if r.elapsed_s > 0.0 {
            r.client_cpu_s / (r.elapsed_s * threads)
        } else {
            0.0
        },
        verdict: StepVerdict::Pass,
        wall_s: wall.as_secs_f64(),
    };
    step.verdict = judge(&step, c);
    Ok(step)
}

/// The server met the target at this step: the percentile within it, few enough errors.
fn server_passed(s: &CapacityStep, c: &CapacityCriteria) -> bool {
    s.latency_us.is_some_and(|l| l <= c.target_us) && s.error_share() < c.max_error_share
}

/// How a step is judged (its own `verdict` is not read).
///
/// - The server met the target and the generator kept its schedule: **pass**.
/// - The server met the target but the generator sent too little: **generator** (what the
///   server would do at the rate asked is unknown).
/// - The server missed the target while the generator was itself late, by more than half the
///   target at the percentile, in sending requests whose connection was free or in reading
///   responses that had arrived (which keeps connections busy, and so delays the requests
///   after them); or while it sent too little and ran short of its own means (its whole CPU,
///   its descriptors or ports, its allowed connections): also **generator**, as its lateness
///   is in the latency. On a machine it shares, the generator can be late with little CPU
///   used: the CPU it was not given is not counted.
/// - Otherwise the server missed: **latency** or **errors**. A generator that sent too little
///   with means to spare was waiting for connections the server kept busy.
pub fn judge(s: &CapacityStep, c: &CapacityCriteria) -> StepVerdict {
    let kept = s.schedule_share() >= c.min_schedule_share;
    let short = s.client_cpu_share >= report::record::CLIENT_BOUND_SHARE
        || s.generator_failures > 0
        || s.connections_capped;
    let late = [s.send_lag_us, s.read_delay_us]
        .iter()
        .any(|v| v.is_some_and(|l| 2 * l > c.target_us));
    if server_passed(s, c) {
        return if kept {
            StepVerdict::Pass
        } else {
            StepVerdict::Generator
        };
    }
    if late || (!kept && short) {
        StepVerdict::Generator
    } else if s.latency_us.is_none_or(|l| l > c.target_us) {
        StepVerdict::Latency
    } else {
        StepVerdict::Errors
    }
}

/// What a search wants done next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Measure a step at this rate, then [`Search::record`] it.
    Measure(f64),
    /// The search is over.
    Done(CapacityResult),
}

/// One search: see the module documentation.
#[derive(Debug, Clone)]
pub struct Search {
    criteria: CapacityCriteria,
    start: f64,
    budget: Duration,
    /// The highest rate that passed and the lowest that failed.
    passed: Option<f64>,
    failed: Option<f64>,
    /// The lowest rate whose schedule the generator could not keep.
    beyond_generator: Option<f64>,
    spent: Duration,
    steps: Vec<CapacityStep>,
    /// Set once the search is over.
    ended: Option<CapacityResult>,
}

impl Search {
    /// A search from `start` requests/s, judged and bounded by `criteria`.
    pub fn new(start: f64, criteria: CapacityCriteria) -> Search {
        Search {
            start: if start.is_finite() {
                start.max(MIN_RATE)
            } else {
                DEFAULT_START
            },
            budget: Duration::from_secs_f64(criteria.budget_s.max(0.0)),
            criteria,
            passed: None,
            failed: None,
            beyond_generator: None,
            spent: Duration::ZERO,
            steps: Vec::new(),
            ended: None,
        }
    }

    /// The next rate to measure, or the result. `cost` says how long a step at a rate is
    /// expected to take ([`step_cost`]): a step that would end beyond the budget is not begun.
    pub fn next(&mut self, cost: impl Fn(f64) -> Duration) -> Next {
        if let Some(r) = &self.ended {
            return Next::Done(r.clone());
        }
        let rate = match (self.steps.is_empty(), self.passed, self.upper()) {
            (true, _, _) => self.start,
            (false, Some(p), None) => p * GROWTH,
            (false, Some(p), Some(u)) => {
                if u - p <= self.criteria.precision * p {
                    return self.done(StopReason::Converged);
                }
                (p + u) / 2.0
            }
            (false, None, Some(u)) => u / GROWTH,
            // Every judged step moves a bound.
            (false, None, None) => unreachable!("a step was recorded without a verdict"),
        };
        if rate < MIN_RATE {
            return self.done(StopReason::MinimumRate);
        }
        if self.steps.len() >= self.criteria.max_steps as usize {
            return self.done(StopReason::MaxSteps);
        }
        if self.spent + cost(rate) > self.budget {
            return self.done(StopReason::Budget);
        }
        Next::Measure(rate)
    }

    /// Takes a measured step (its `rate` the one [`Search::next`] asked for).
    pub fn record(&mut self, step: CapacityStep) {
        self.spent += Duration::from_secs_f64(step.wall_s.max(0.0));
        match step.verdict {
            StepVerdict::Pass => {
                self.passed = Some(self.passed.map_or(step.rate, |p| p.max(step.rate)));
            }
            StepVerdict::Latency | StepVerdict::Errors => {
                self.failed = Some(self.failed.map_or(step.rate, |f| f.min(step.rate)));
            }
            StepVerdict::Generator => {
                // Nothing from this rate up can be measured. If the server met the target at
                // what the generator did send, that rate passed.
                if server_passed(&step, &self.criteria) {
                    let r = step.achieved();
                    self.passed = Some(self.passed.map_or(r, |p| p.max(r)));
                }
                self.beyond_generator = Some(
                    self.beyond_generator
                        .map_or(step.rate, |g| g.min(step.rate)),
                );
            }
        }
        self.steps.push(step);
    }

    /// The steps measured so far, in order.
    pub fn steps(&self) -> &[CapacityStep] {
        &self.steps
    }

    pub fn into_steps(self) -> Vec<CapacityStep> {
        self.steps
    }

    /// The lowest rate that failed or that the generator could not keep.
    fn upper(&self) -> Option<f64> {
        match (self.failed, self.beyond_generator) {
            (Some(f), Some(g)) => Some(f.min(g)),
            (f, g) => f.or(g),
        }
    }

    /// The search's end. A rate passed below a rate the generator could not keep, with no
    /// failure of the server's in between, is only a lower bound: its reason is the generator,
    /// however the search came to stop.
    fn done(&mut self, stop: StopReason) -> Next {
        let generator_bound = self
            .beyond_generator
            .is_some_and(|g| self.failed.is_none_or(|f| g < f));
        let stop = match stop {
            StopReason::MinimumRate => stop,
            _ if generator_bound && self.passed.is_some() => StopReason::GeneratorLimit,
            _ => stop,
        };
        let kind = match (self.passed, stop) {
            (None, _) => CapacityKind::NonePassed,
            (Some(_), StopReason::Converged) => CapacityKind::Found,
            (Some(_), _) => CapacityKind::AtLeast,
        };
        let r = CapacityResult {
            kind,
            rate: self.passed,
            failed_at: self.failed,
            stop,
        };
        self.ended = Some(r.clone());
        Next::Done(r)
    }
}

/// Runs a whole search with `measure` (`None` from it abandons the search: `None` here too).
pub fn search(
    mut s: Search,
    cost: impl Fn(f64) -> Duration,
    mut measure: impl FnMut(f64) -> Option<CapacityStep>,
) -> Option<(CapacityResult, Vec<CapacityStep>)> {
    loop {
        match s.next(&cost) {
            Next::Done(r) => return Some((r, s.into_steps())),
            Next::Measure(rate) => s.record(measure(rate)?),
        }
    }
}

#[cfg(test)]
mod tests;
