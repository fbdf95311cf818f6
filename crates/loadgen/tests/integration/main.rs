//! The load generator's integration tests, all in this one test binary (each binary links the
//! whole workspace, so one per crate rather than one per topic). Each module is a topic; run
//! one with `cargo test -p loadgen --test integration rate::` or
//! `cargo nextest run -p loadgen --test integration -E 'test(/^rate::/)'`.
//!
//! `support` is the test servers they share (benchctl's `load_cli` tests use it too).

mod support;

mod engines;
mod http2;
mod http3;
mod large_bodies;
mod merge;
mod pipelining;
mod rate;
mod real_servers;
mod request_options;
mod timeline;
mod timing;
mod tls;
