//! benchctl's load generator: ApacheBench's semantics at wrk's speed.
//!
//! Usable on its own (`benchctl load URL`) and as the measuring instrument of `benchctl run`.
//! One OS thread per worker, each with its own epoll loop over its share of the connections;
//! every connection records into its worker's [`stats::Recorder`], and recorders are merged once
//! at the end.
//!
//! It measures and never formats: a run returns a [`Measurement`] (and its serializable form,
//! [`json::LoadReport`]); progress goes to a caller's callback and anything a reader must know
//! comes back as a [`Note`]. ab's tables and every word shown to a person are the report
//! crate's.

pub mod coalesce;
pub mod config;
pub mod connect;
pub mod cpu;
pub mod engine;
pub mod h2;
pub mod h3;
pub mod http;
pub mod job;
pub mod limits;
pub mod pipeline;
pub mod sock;
pub mod steady;
pub mod timer;
pub mod tls;

/// The measurement's types are the shared vocabulary's; they keep their paths here.
pub use model::{failure, histogram, json, stats, timeline};

pub use config::{
    Coalesce, ConfigError, Engine, HttpVersion, LoadConfig, LoadSpec, Method, Proxy, Target,
};
pub use engine::{preflight, run, run_observed, run_until, LoadError, StopFlag};
pub use job::Job;
pub use stats::{
    FailureKind, Failures, Measurement, Note, Sample, ServerInfo, StopReason, Timer, Timers,
    TlsSession,
};
