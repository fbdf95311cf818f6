//! The test hosts' own integration tests, all in this one test binary (each binary links the
//! whole workspace, so one per crate rather than one per topic). Each module is a topic; run
//! one with `cargo test -p testhosts --test integration sweep::` or
//! `cargo nextest run -p testhosts --test integration -E 'test(/^sweep::/)'`.

mod seed;
mod sweep;
