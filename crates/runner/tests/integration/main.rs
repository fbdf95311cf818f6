//! The runner's integration tests, whole runs against the real Docker daemon, all in this one
//! test binary (each binary links the whole workspace, so one per crate rather than one per
//! topic). Each module is a topic; run one with
//! `cargo test -p runner --test integration pipeline::` or
//! `cargo nextest run -p runner --test integration -E 'test(/^pipeline::/)'`.
//!
//! `common` is the set-up they share: the daemon, the test images, scenarios made to measure.

mod common;

mod against_run;
mod capacity;
mod capacity_run;
mod h2_servers;
mod h3_servers;
mod hosts_run;
mod pipeline;
mod tls_servers;
