//! The real server folders under `docker/`: nginx builds, starts, serves a file and names
//! itself in the Server header; Cherokee builds from the source it is given, and a source that
//! is not Cherokee's fails as an error value.

use crate::common;

use common::{connect, free_port, run_id};
use orchestrator::{
    BuildSource, Confinement, ContainerSpec, ExpectedDoc, OrchestratorError, LABEL_SOURCE,
};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn server_dir(server: &str) -> Option<PathBuf> {
    let dir = testsupport::repo_root().join("docker").join(server);
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

/// Cherokee's source where upstream cannot be reached: BENCHCTL_SOURCES (./x sets it from the
/// machine's vendored copy). Without it the test skips, except under CI, where it fails.
fn cherokee_source() -> Option<PathBuf> {
    let found = std::env::var("BENCHCTL_SOURCES").ok().and_then(|v| {
        v.split(',')
            .find_map(|e| e.trim().strip_prefix("cherokee=").map(PathBuf::from))
    });
    if found.is_none() {
        testsupport::skip_or_fail("BENCHCTL_SOURCES names no local Cherokee source");
    }
    found
}

/// Cherokee builds from the source given (a git tree: `configure` is generated), the image
/// carries that source's hash, the same source finds it up to date, and other source is
/// rebuilt from (here: not Cherokee's, which fails as a value with the build's last lines and
/// leaves the image as it was). It then starts confined, as its manifest says, and serves.
#[tokio::test]
async fn cherokee_builds_from_the_source_given_and_serves() {
    let Some(dir) = server_dir("cherokee") else {
        return;
    };
    let Some(source) = cherokee_source() else {
        return;
    };
    let Some(orch) = connect().await else { return };
    let logs = tempfile::tempdir().unwrap();
    let src = BuildSource::read(&source).unwrap();
    let image = orch
        .build_image_from("cherokee", &dir, Some(&src), &logs.path().join("1.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, labels) = orch.image_labels(&image.tag).await.unwrap().unwrap();
    assert_eq!(
        labels.get(LABEL_SOURCE).map(String::as_str),
        Some(src.sha256())
    );
    let again = orch
        .build_image_from("cherokee", &dir, Some(&src), &logs.path().join("2.log"))
        .await
        .unwrap();
    assert!(!again.built);
    assert_eq!(again.id, image.id);

    let bogus_file = logs.path().join("not-cherokee.tar.gz");
    std::fs::create_dir(logs.path().join("not-cherokee")).unwrap();
    std::fs::write(logs.path().join("not-cherokee/README"), "something else").unwrap();
    let status = std::process::Command::new("tar")
        .args(["czf"])
        .arg(&bogus_file)
        .args(["-C", logs.path().to_str().unwrap(), "not-cherokee"])
        .status()
        .unwrap();
    assert!(status.success());
    let bogus = BuildSource::read(&bogus_file).unwrap();
    match orch
        .build_image_from("cherokee", &dir, Some(&bogus), &logs.path().join("3.log"))
        .await
    {
        Err(OrchestratorError::Build { message, .. }) => {
            assert!(message.contains("not Cherokee's source tree"), "{message}")
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    assert_eq!(
        orch.image_id(&image.tag).await.unwrap(),
        Some(image.id.clone())
    );

    let www = tempfile::tempdir().unwrap();
    let body = b"Hello, World!";
    std::fs::write(www.path().join("index.html"), body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(www.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        www.path().join("index.html"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let spec = ContainerSpec {
        name: "cherokee".to_string(),
        image: image.tag.clone(),
        port: free_port(),
        docroot: Some(www.path().to_path_buf()),
        run_id: run_id("cherokee"),
        memory_bytes: Some(256 << 20),
        confinement: Confinement {
            user: Some("65534:65534".to_string()),
            ..Confinement::default()
        },
        ..Default::default()
    };
    let guard = orch.start(&spec).await.unwrap();
    orch.wait_ready(&guard, spec.port, "/", Duration::from_secs(20))
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
    assert!(
        verified
            .server_header
            .as_deref()
            .is_some_and(|s| s.starts_with("Cherokee/1.2.104")),
        "{:?}",
        verified.server_header
    );
    guard.remove().await.unwrap();
}
