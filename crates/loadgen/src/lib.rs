//! benchctl's load generator: ApacheBench's semantics and tables, at wrk's speed.
//!
//! Usable on its own (`benchctl load URL`) and as the measuring instrument of `benchctl run`.
//! One OS thread per worker, each with its own epoll loop over its share of the connections;
//! every connection records into its worker's [`stats::Recorder`], and recorders are merged once
//! at the end.

pub mod ab;
pub mod coalesce;
pub mod config;
pub mod cpu;
pub mod engine;
pub mod http;
pub mod json;
pub mod sock;
pub mod stats;
pub mod timer;

pub use config::{Coalesce, HttpVersion, LoadConfig, Method, Progress, Target};
pub use engine::{run, run_until, LoadError, StopFlag};
pub use stats::{FailureKind, Failures, Measurement, Sample, ServerInfo};
