//! The scenario crate's integration tests, all in this one test binary (each binary links the
//! whole workspace, so one per crate rather than one per topic). Each module is a topic; run
//! one with `cargo test -p scenario --test integration validate::` or
//! `cargo nextest run -p scenario --test integration -E 'test(/^validate::/)'`.
//!
//! Their fixtures stay beside this folder, in `tests/broken/` and `tests/hosts/`.

mod broken;
mod documents;
mod scenarios;
mod validate;
