//! benchctl's integration tests, the command line as users run it, all in this one test binary
//! (each binary links the whole workspace, so one per crate rather than one per topic). Each
//! module is a topic; run one with `cargo test -p benchctl --test integration load_cli::` or
//! `cargo nextest run -p benchctl --test integration -E 'test(/^load_cli::/)'`.
//!
//! Two modules are other crates' test set-up, shared rather than copied: `support`, the load
//! generator's test servers (for `load_cli`), and `common`, the report's deterministic records
//! (for `report_cli`). The broken scenarios `scenarios_cli` checks are in `tests/fixtures/`.

#[path = "../../../report/tests/integration/common/mod.rs"]
mod common;
// The HTTP/3 test server of the load generator's tests; these use only part of it.
#[allow(dead_code)]
#[path = "../../../loadgen/tests/integration/support/h3srv.rs"]
mod h3srv;
#[path = "../../../loadgen/tests/integration/support/mod.rs"]
mod support;

mod generators_cli;
mod hosts_cli;
mod images_push_cli;
mod load_cli;
mod report_cli;
mod run_docker;
mod scenarios_cli;
mod system_cli;

/// The tests' base image on this machine's engine, bootstrapped from Debian's mirrors when it
/// is not there yet (the recipe every host test shares, so the tag is theirs).
async fn ensure_test_base(local: &orchestrator::Orchestrator) {
    let base = testsupport::TEST_BASE;
    if local.image_id(base).await.unwrap().is_none() {
        local
            .bootstrap_debian("bookworm", base)
            .await
            .unwrap_or_else(|e| panic!("bootstrapping {base}: {e}"));
    }
}
