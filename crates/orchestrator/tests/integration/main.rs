//! The orchestrator's integration tests, against the real Docker daemon, all in this one test
//! binary (each binary links the whole workspace, so one per crate rather than one per topic).
//! Each module is a topic; run one with `cargo test -p orchestrator --test integration gc::`
//! or `cargo nextest run -p orchestrator --test integration -E 'test(/^gc::/)'`.
//!
//! `common` is the set-up they share: the daemon's connection, the test images, run ids.

mod common;

mod containers;
mod gc;
mod hosts;
mod images;
mod servers;
