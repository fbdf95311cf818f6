//! The words benchctl's crates share, as data: a load ([`LoadSpec`]), a generator's job
//! ([`Job`]), what a load measured ([`Measurement`] while it runs, [`LoadReport`] once
//! serialized) with its failures and notes, and the load over time.
//!
//! It holds data and its serialized form only: no sockets, no threads, no files. The load
//! generator fills these types, the scenario crate writes loads in them, the runner sends jobs
//! and merges reports, and the report crate reads them, so none of those needs another's
//! engine to speak of a load.

pub mod authority;
pub mod cpuset;
pub mod failure;
pub mod histogram;
pub mod job;
pub mod json;
pub mod load;
pub mod record;
pub mod stats;
pub mod steady;
pub mod system;
pub mod timeline;

pub use job::Job;
pub use json::LoadReport;
pub use load::{Coalesce, Engine, HttpVersion, LoadSpec, Method};
pub use stats::{
    FailureKind, Failures, Measurement, Note, Sample, ServerInfo, StopReason, Timer, Timers,
    TlsSession,
};
