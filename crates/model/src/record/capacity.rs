//! What a capacity search found, as the results record stores it: its criteria, every step
//! it measured and the rate it settled on.

use serde::{Deserialize, Serialize};

/// One server's search on one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityRecord {
    /// [`super::ServerRecord::name`].
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
pub fn trim_number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Every figure of a record's searches, checked as
/// [`RunRecord::check_figures`](super::RunRecord::check_figures) checks its loads'.
pub fn check_figures(searches: &[CapacityRecord]) -> Result<(), String> {
    let figure = |at: String, v: f64| -> Result<(), String> {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{at} is {v}"));
        }
        Ok(())
    };
    for (i, c) in searches.iter().enumerate() {
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
