//! benchctl's results and everything computed from them: the versioned results record (its
//! types are [`model::record`]'s) kept as a file after each load, statistics across repetitions, comparison of a run against a
//! baseline, Bencher (BMF) export, and reports rendered from tera templates.
//!
//! It reads [`model::json::LoadReport`]s and knows nothing of Docker or sockets, so every
//! report and verdict can be recomputed exactly from a stored file.
//!
//! What is computed ([`analysis`]: statistics, comparison, paired and capacity verdicts) is kept
//! apart from how it is shown ([`render`](mod@render): text, Markdown, HTML, ApacheBench's text and files,
//! charts and the templates); the first never formats for a reader.
//!
//! The CLI's path through it: [`RecordIo::write_atomic`] during a run;
//! [`RecordIo::load`] then [`render()`] for `benchctl report`; [`RecordIo::load`] twice then
//! [`compare()`], [`render_comparison`] and [`Comparison::has_regression`] for
//! `benchctl compare` of two stored runs (a coarse check between sittings); [`compare_record`],
//! [`Renderer::render_paired`] and [`PairedComparison::has_regression`] for an A/B run's paired
//! verdict ([`paired`]); [`bmf::to_bmf_json`] for the Bencher export.

pub mod analysis;
pub mod bmf;
pub mod error;
pub mod notes;
pub mod record;
pub mod render;
pub mod reproductions;

// The analysis modules by their old paths as well (`report::stats`, ...).
pub use analysis::{capacity, compare, overload, paired, stats};
// ApacheBench's text and files and the charts by their old paths as well (`report::ab`, ...).
pub use capacity::{CapacityRecord, CapacityResult, CapacityStep};
pub use compare::{compare, Comparison, Verdict, DEFAULT_THRESHOLD};
pub use error::ReportError;
pub use paired::{compare_record, PairedComparison, PairedVerdict};
pub use record::{
    AgainstRecord, AgainstStop, EngineRecord, GeneratorRecord, HostFacts, Interval, LoadRecord,
    Looks, Protocol, RecordFile, RecordIo, RunRecord, RunStatus, ScenarioRecord, ServerRecord,
    ServerStatus, Slowed, Usage, SCHEMA_VERSION,
};
pub use render::{ab, abfiles, charts};
pub use render::{render, render_comparison, Format, Renderer};
pub use stats::{summarize, GroupStats, Metric, Summary};
