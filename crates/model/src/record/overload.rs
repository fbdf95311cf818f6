//! What a server did past its capacity, as the results record stores it: an open-model
//! staircase of rates (multiples of the capacity), each step's figures, the recovery phase
//! over time, and what they add up to (the knee, whether goodput collapsed, how long the
//! server took to come back).

use serde::{Deserialize, Serialize};

/// One server's staircase on one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadRecord {
    /// [`super::ServerRecord::name`].
    pub server: String,
    /// The scenario's name for the document.
    pub document: String,
    pub url_path: String,
    pub criteria: OverloadCriteria,
    /// The rate the multiples are of, requests/s.
    pub capacity: f64,
    pub capacity_from: CapacityFrom,
    /// In the order they ran, the recovery phase's step last.
    pub steps: Vec<OverloadStep>,
    pub verdict: OverloadVerdict,
}

/// What the staircase was asked, and the rules its figures are read by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadCriteria {
    /// The latency percentile a good response is held to (its goodput counts responses within
    /// `target_us`), in percent, and that limit, µs: the capacity's target.
    pub percentile: f64,
    pub target_us: u64,
    /// The rates of the staircase as multiples of the capacity, in order.
    pub multiples: Vec<f64>,
    /// The recovery phase's rate, as a multiple of the capacity.
    pub recovery_multiple: f64,
    /// Each step's shortest measured length, the longest it was held while unsettled, and the
    /// recovery phase's length, seconds.
    pub step_s: f64,
    pub step_max_s: f64,
    pub recovery_s: f64,
    /// The length of the intervals each step is followed over, seconds.
    pub interval_s: f64,
    /// The knee is the first step whose goodput is below this share of the rate offered.
    pub knee_share: f64,
}

/// Where the capacity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityFrom {
    /// The scenario's `[overload] capacity`.
    Configured,
    /// The capacity search just before (its rate; for "at least" results, that bound).
    Searched,
}

/// One rate held for one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadStep {
    /// The rate as a multiple of the capacity, and the rate offered, requests/s.
    pub multiple: f64,
    pub offered: f64,
    /// The recovery phase (after the highest step), not a step of the staircase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovery: bool,
    /// Connections the generator could use.
    pub connections: u32,
    /// How long the rate was held, seconds: `step_s` more than once when the load had not
    /// settled, up to `step_max_s`.
    pub held_s: f64,
    /// The measured length the step's figures are from, seconds: the last `step_s` it was
    /// held (the settled one, when it settled).
    pub window_s: f64,
    /// Requests sent per second (begun, and not stopped by the generator's own limits).
    pub sent: f64,
    /// Good responses (2xx, whole) within the target latency per second, counted from each
    /// request's intended send time.
    pub goodput: f64,
    /// Requests that ended in the window, and those still unanswered when it closed.
    pub answered: u64,
    pub unanswered: u64,
    pub errors: OverloadErrors,
    /// Latency percentiles from each request's intended send time, counting the unanswered at
    /// how long they had waited, µs: p50, p99 (`None` when nothing was sent).
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// The server's CPU time over the window, seconds, and the most memory it held, bytes
    /// (`None` when the engine did not say).
    pub server_cpu_s: Option<f64>,
    pub peak_memory_bytes: Option<u64>,
    /// The most TCP sockets the server held at any reading (about one a second): its
    /// connections, open or closing, and its listening sockets; a queue of connections waiting
    /// to be served shows here (`None` when the engine's machine is another).
    #[serde(default)]
    pub peak_connections: Option<u64>,
    /// The generator could not send the rate (it sent under 99% of it, short of its own
    /// CPU, descriptors or ports): what the server would have done at the rate is unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generator_limited: bool,
    /// The load's own steadiness check found it still changing (a queue growing, a warm-up).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsettled: bool,
    /// The step over time, interval by interval, over all of `held_s`.
    pub points: Vec<TimePoint>,
}

/// A step's failed requests by what the server did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadErrors {
    /// Connections refused (or not accepted in time).
    pub refused: u64,
    /// Connections reset or closed under a request.
    pub reset: u64,
    /// Requests that had no answer within the load's timeout.
    pub timeout: u64,
    /// Responses with a status other than 2xx (a server shedding load answers 503).
    pub status: u64,
    /// Responses of the wrong length or malformed.
    pub bad_bytes: u64,
}

impl OverloadErrors {
    pub fn total(&self) -> u64 {
        self.refused + self.reset + self.timeout + self.status + self.bad_bytes
    }
}

/// One interval of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimePoint {
    /// Seconds from the start of the step.
    pub start_s: f64,
    /// Responses per second that ended in it, and its failed requests' share of them.
    pub completed: f64,
    pub error_share: f64,
    /// The latency percentile held (from each request's intended send time), µs.
    pub latency_us: Option<u64>,
}

/// What the staircase adds up to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadVerdict {
    /// The first step whose goodput fell below `knee_share` of the rate offered, as a
    /// multiple of the capacity; `None` when every step kept up.
    pub knee: Option<f64>,
    /// The most goodput any step reached, requests/s: at and past the knee, what the server
    /// can give.
    pub peak_goodput: f64,
    /// Goodput at 2x and at 3x the capacity as a share of the capacity (`None` when the
    /// staircase had no such step).
    pub goodput_2x: Option<f64>,
    pub goodput_3x: Option<f64>,
    /// Goodput at the highest step fell below the knee's by more than the noise: the server
    /// gives less the more it is asked (`None` without a knee).
    pub collapse: Option<bool>,
    /// Seconds into the recovery phase from which its latency and errors stayed within the
    /// first step's noise; `None` when they never did within the phase.
    pub recovery_s: Option<f64>,
    /// The most memory the server held in any step, bytes.
    pub peak_memory_bytes: Option<u64>,
    /// A step that set the verdict was the generator's limit, not the server's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generator_limited: bool,
}
