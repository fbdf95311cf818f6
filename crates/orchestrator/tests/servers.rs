//! The real server folders under `docker/`: nginx builds, starts, serves a file and names
//! itself in the Server header; Cherokee, which cannot be built without its upstream download,
//! fails as an error value carrying the build's last lines.

mod common;

use common::{connect, free_port, run_id};
use orchestrator::{ContainerSpec, ExpectedDoc, OrchestratorError};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn server_dir(server: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docker")
        .join(server);
    if dir.join("Dockerfile").is_file() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} does not exist yet", dir.display());
        None
    }
}

#[tokio::test]
async fn nginx_builds_starts_and_serves() {
    let Some(dir) = server_dir("nginx") else {
        return;
    };
    let Some(orch) = connect().await else { return };
    let logs = tempfile::tempdir().unwrap();
    let image = orch
        .build_image("nginx", &dir, &logs.path().join("nginx.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "nginx image {} (built: {}, {:.1} s)",
        image.tag, image.built, image.seconds
    );

    let www = tempfile::tempdir().unwrap();
    let body = b"Hello, World!";
    std::fs::write(www.path().join("index.html"), body).unwrap();
    let spec = ContainerSpec {
        name: "nginx".to_string(),
        image: image.tag.clone(),
        port: free_port(),
        docroot: Some(www.path().to_path_buf()),
        run_id: run_id("nginx"),
        cpuset: Some("1".to_string()),
        memory_bytes: Some(512 << 20),
        ..Default::default()
    };
    let t = Instant::now();
    let guard = orch.start(&spec).await.unwrap();
    let ready = orch
        .wait_ready(&guard, spec.port, "/", Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let verified = orch
        .verify(
            spec.port,
            &[ExpectedDoc {
                url_path: "/index.html".to_string(),
                length: body.len() as u64,
                sha256_hex: hex::encode(Sha256::digest(body)),
            }],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let to_verified = t.elapsed();
    eprintln!(
        "nginx: create to ready {ready:?}, start to verified {to_verified:?}, Server: {:?}",
        verified.server_header
    );
    assert!(
        verified
            .server_header
            .as_deref()
            .is_some_and(|s| s.starts_with("nginx")),
        "{:?}",
        verified.server_header
    );
    let id = guard.id().to_string();
    guard.remove().await.unwrap();
    assert!(!common::exists(&orch, &id).await);
}

#[tokio::test]
async fn cherokee_build_failure_is_a_value_with_the_log_tail() {
    let Some(dir) = server_dir("cherokee") else {
        return;
    };
    let Some(orch) = connect().await else { return };
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("cherokee.log");
    let t = Instant::now();
    match orch.build_image("cherokee", &dir, &log).await {
        Ok(image) => eprintln!(
            "cherokee built here after all: {} (this machine reaches its download)",
            image.tag
        ),
        Err(OrchestratorError::Build {
            message, log_tail, ..
        }) => {
            eprintln!(
                "cherokee failed as expected after {:?}: {message}\n{}",
                t.elapsed(),
                log_tail.join("\n")
            );
            assert!(!message.is_empty());
            assert!(!log_tail.is_empty());
            assert!(std::fs::metadata(&log).unwrap().len() > 0);
        }
        Err(other) => panic!("expected a build error, got: {other}"),
    }
}
