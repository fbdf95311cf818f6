//! What the judgement of a load's steadiness reads (a [`Point`] per interval) and what it
//! gives (a [`Pattern`], [`Shift`]s, a [`Window`]).
//!
//! A leaf: the timeline makes the points and the recorder's notes carry the verdict, and
//! neither needs the judgement itself for that (it is the load generator's).

use serde::{Deserialize, Serialize};

/// Fewest intervals a load needs to be judged.
pub const MIN_INTERVALS: usize = 4;

/// One interval, as the judgement reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Seconds from the start of measurement.
    pub start_s: f64,
    pub duration_s: f64,
    /// Requests that ended in it.
    pub requests: u64,
    /// Median and 99th percentile latency of its responses, µs (`None` without any).
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

impl Point {
    /// Whether the judgement (and a chart) takes this interval: all of them but a last one cut
    /// shorter than half an interval by the end of the load.
    pub fn counts(&self, interval_s: f64) -> bool {
        self.duration_s > 0.0 && self.duration_s >= interval_s / 2.0
    }

    /// Requests per second of the interval.
    pub fn rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

/// What kind of change a load went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Better (more requests/s or lower latency) after a first stretch, then steady to the end.
    WarmUp,
    /// Any other change: worse over time, or never settling.
    Drift,
}

/// A figure before and after the change (means of the per-interval values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    pub before: f64,
    pub after: f64,
}

/// Where a load was steady, seconds from the start of measurement. Starting after 0, the
/// change came before it; starting at 0, the change came after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
}
