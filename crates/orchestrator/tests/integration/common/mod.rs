//! Shared set-up for the tests that talk to the real Docker daemon: connecting (or explaining
//! why not), the test base image and the small busybox web-server image the container tests run.

#![allow(dead_code)]

use orchestrator::{BuiltImage, Orchestrator};
use std::path::{Path, PathBuf};

pub use testsupport::TEST_BASE;

/// Connects, or returns `None` with a printed reason when no daemon is reachable outside CI.
/// In CI a missing daemon fails the test instead: those tests must not skip there.
pub async fn connect() -> Option<Orchestrator> {
    testsupport::ok_or_skip("no Docker daemon reachable", Orchestrator::connect().await)
}

static BASE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Makes the test base image once (mmdebstrap, ~20-60 s) and reuses it afterwards.
pub async fn test_base(orch: &Orchestrator) {
    let _held = BASE_LOCK.lock().await;
    if orch.image_id(TEST_BASE).await.unwrap().is_some() {
        return;
    }
    let t = std::time::Instant::now();
    orch.bootstrap_debian("bookworm", TEST_BASE)
        .await
        .unwrap_or_else(|e| panic!("bootstrapping {TEST_BASE}: {e}"));
    eprintln!(
        "bootstrapped {TEST_BASE} in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// Writes `files` (relative path, contents) into a fresh temporary folder.
pub fn context(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

pub fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.build.log"))
}

static BUSYBOX_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An image whose entrypoint serves /srv/www with busybox httpd on 127.0.0.1:$BENCH_PORT.
/// Its context never changes, so it is built once and found by its tag afterwards.
pub async fn busybox_image(orch: &Orchestrator) -> BuiltImage {
    test_base(orch).await;
    let _held = BUSYBOX_LOCK.lock().await;
    let dockerfile = testsupport::busybox_dockerfile();
    let ctx = context(&[("Dockerfile", &dockerfile)]);
    let logs = tempfile::tempdir().unwrap();
    orch.build_image(
        "test-busybox",
        ctx.path(),
        &log_path(logs.path(), "busybox"),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A run id unique to this test process and purpose.
pub fn run_id(what: &str) -> String {
    format!("test-{what}-{}", std::process::id())
}

/// Whether a container still exists.
pub async fn exists(orch: &Orchestrator, id: &str) -> bool {
    match orch
        .docker()
        .inspect_container(
            id,
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
    {
        Ok(_) => true,
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => false,
        Err(e) => panic!("inspect {id}: {e}"),
    }
}
