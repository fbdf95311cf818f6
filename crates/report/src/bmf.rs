//! Export of a run in Bencher's Metric Format (BMF), so benchctl's numbers plug into existing
//! continuous benchmarking trackers: `{ "<benchmark>": { "<measure>": { "value", "lower_value",
//! "upper_value" } } }`.
//!
//! Benchmarks are named `<scenario>/<server>/<document>`. Requests/s goes out under Bencher's
//! built-in `throughput` measure (operations per second) and the mean latency under its built-in
//! `latency` measure, converted to the nanoseconds that measure is defined in; every other
//! metric goes out under its own slug (see [`Metric::slug`]), which Bencher creates on first
//! use. The value is the median over rounds; the bounds are the 95% interval when there is more
//! than one round. A capacity search goes out as `capacity-<percentile>-<target>` (e.g.
//! `capacity-p99-10ms`, so that searches for different targets are different measures),
//! requests/s, bounded by the failing rate when the search found the capacity, with no upper
//! bound when it is a lower bound, 0 when no rate passed.

use crate::record::RunRecord;
use crate::stats::{self, Metric};
use serde::Serialize;
use std::collections::BTreeMap;

/// One measure of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BmfMetric {
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper_value: Option<f64>,
}

/// Benchmark name → measure → metric; sorted maps keep the output byte-for-byte stable.
pub type Bmf = BTreeMap<String, BTreeMap<String, BmfMetric>>;

/// The BMF measure name of a metric and the factor from its unit to the measure's.
fn measure(m: Metric) -> (&'static str, f64) {
    match m {
        Metric::RequestsPerSecond => ("throughput", 1.0),
        Metric::MeanLatencyMs => ("latency", 1e6),
        other => (other.slug(), 1.0),
    }
}

/// The run's statistics in BMF.
pub fn to_bmf(record: &RunRecord) -> Bmf {
    let mut out = Bmf::new();
    for g in stats::summarize(record) {
        let name = format!("{}/{}/{}", record.scenario.name, g.server, g.document);
        let entry = out.entry(name).or_default();
        for ms in &g.metrics {
            let (key, k) = measure(ms.metric);
            let s = &ms.summary;
            let bounds = (s.n >= 2).then_some((s.ci_low * k, s.ci_high * k));
            entry.insert(
                key.to_string(),
                BmfMetric {
                    value: s.median * k,
                    lower_value: bounds.map(|b| b.0),
                    upper_value: bounds.map(|b| b.1),
                },
            );
        }
    }
    for c in &record.capacity {
        let name = format!("{}/{}/{}", record.scenario.name, c.server, c.document);
        let r = &c.result;
        let measure = format!(
            "capacity-{}-{}",
            c.criteria.percentile_name(),
            crate::capacity::describe_us(c.criteria.target_us)
        );
        let found = r.kind == crate::capacity::CapacityKind::Found;
        out.entry(name).or_default().insert(
            measure,
            BmfMetric {
                value: r.value(),
                lower_value: r.rate,
                upper_value: if found { r.failed_at } else { None },
            },
        );
    }
    out
}

/// [`to_bmf`] as pretty JSON text, ending in a newline.
pub fn to_bmf_json(record: &RunRecord) -> String {
    let mut s = serde_json::to_string_pretty(&to_bmf(record))
        .expect("a map of strings and finite numbers always serializes");
    s.push('\n');
    s
}
