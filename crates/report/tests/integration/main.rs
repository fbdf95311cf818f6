//! The report crate's integration tests, all in this one test binary (each binary links the
//! whole workspace, so one per crate rather than one per topic). Each module is a topic; run
//! one with `cargo test -p report --test integration render::` or
//! `cargo nextest run -p report --test integration -E 'test(/^render::/)'`.
//!
//! `common` holds the records they share (benchctl's `report_cli` tests use it too); the
//! recorded real run is in `tests/fixtures/`, the insta snapshots in `snapshots/` here.

mod common;

mod ab_golden;
mod ab_json_report;
mod compare;
mod history;
mod html_chromium;
mod paired;
mod record;
mod render;
mod reproductions;
