//! The serializable form of a [`Measurement`]: what `benchctl load --json` prints and what a
//! results file stores per load. It carries every counter, exact moments, percentiles and the
//! HdrHistograms themselves (V2 deflate serialization, base64), so any later report or
//! comparison can be computed exactly from it.

use crate::stats::{Failures, Moments, RunSettings, ServerInfo};
use serde::{Deserialize, Serialize};

/// Version of this document's layout; bumped on any incompatible change.
pub const LOAD_REPORT_VERSION: u32 = 1;

/// One timer's distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerReport {
    /// Exact count, min, max, sum and sum of squares, µs.
    pub moments: Moments,
    /// Arithmetic mean, µs.
    pub mean_us: f64,
    /// Sample standard deviation, µs.
    pub sd_us: f64,
    /// (percentile, value µs) pairs: 50, 66, 75, 80, 90, 95, 98, 99, 99.9, 100.
    pub percentiles_us: Vec<(f64, u64)>,
    /// The HdrHistogram, V2 deflate serialization, base64 (standard alphabet).
    pub histogram: String,
}

/// Everything one load run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub version: u32,
    pub server: ServerInfo,
    pub settings: RunSettings,
    /// Wall time of the measured part, seconds.
    pub elapsed_s: f64,
    /// ab's "Complete requests".
    pub complete: u64,
    /// ab's "Failed requests" (every failure kind but write errors).
    pub failed: u64,
    pub failures: Failures,
    pub non_2xx: u64,
    pub keep_alive_requests: u64,
    /// Bytes read: headers and bodies (ab's "Total transferred").
    pub total_bytes: u64,
    /// Body bytes read (ab's "HTML transferred").
    pub body_bytes: u64,
    pub sent_bytes: u64,
    pub requests_per_second: f64,
    /// Kbytes/s received, as ab computes its "Transfer rate".
    pub transfer_rate_kbps: f64,
    /// CPU seconds (user + system) the load generator used while measuring.
    pub client_cpu_s: f64,
    pub connect: TimerReport,
    pub processing: TimerReport,
    pub waiting: TimerReport,
    pub total: TimerReport,
    /// Total latency from each request's intended send time (constant-rate runs only).
    pub corrected_total: Option<TimerReport>,
    pub stopped_early: Option<String>,
}
