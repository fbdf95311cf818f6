//! Images against the real daemon: version negotiation, the locally made base image, the
//! hash-tag rule (untouched folder skips, edited folder rebuilds) and a failing build's error.

use crate::common::{connect, context, log_path, test_base, TEST_BASE};
use orchestrator::OrchestratorError;

#[tokio::test]
async fn negotiates_the_daemons_api_version() {
    let Some(orch) = connect().await else { return };
    let api = orch.api_version();
    let (major, minor) = api.split_once('.').expect("major.minor");
    assert_eq!(major, "1");
    assert!(minor.parse::<u32>().unwrap() >= 41, "api {api}");
    let version = orch.docker_version().await.unwrap();
    assert!(!version.is_empty() && version != "unknown", "{version}");
    eprintln!("daemon {version}, API {api}");
}

#[tokio::test]
async fn bootstraps_a_base_image_that_runs() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    // The image is a real Debian: build something on it that needs its userland.
    let ctx = context(&[(
        "Dockerfile",
        &format!("FROM {TEST_BASE}\nRUN . /etc/os-release && test \"$VERSION_CODENAME\" = bookworm && test -f /etc/ssl/certs/ca-certificates.crt\n"),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let built = orch
        .build_image("test-osrelease", ctx.path(), &log_path(logs.path(), "os"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = orch
        .docker()
        .remove_image(
            &built.tag,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}

#[tokio::test]
async fn hash_tag_skips_unchanged_and_rebuilds_edited() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    // Unique content so that the first build really builds, whatever earlier runs left.
    let nonce = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
    let ctx = context(&[
        (
            "Dockerfile",
            &format!("FROM {TEST_BASE}\nCOPY page.txt /page.txt\n"),
        ),
        ("page.txt", &nonce),
    ]);
    let logs = tempfile::tempdir().unwrap();
    let log = log_path(logs.path(), "hash");

    let first = orch
        .build_image("test-hash", ctx.path(), &log)
        .await
        .unwrap();
    assert!(first.built);
    assert!(first.tag.starts_with("benchctl/test-hash:"));
    assert_eq!(first.tag.len(), "benchctl/test-hash:".len() + 12);
    assert!(first.id.starts_with("sha256:"));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("COPY page.txt"), "log: {logged}");

    let again = orch
        .build_image("test-hash", ctx.path(), &log)
        .await
        .unwrap();
    assert!(!again.built);
    assert_eq!(
        (again.tag.as_str(), again.id.as_str()),
        (first.tag.as_str(), first.id.as_str())
    );
    eprintln!(
        "build {:.2} s, skipped build {:.3} s",
        first.seconds, again.seconds
    );

    std::fs::write(ctx.path().join("page.txt"), format!("{nonce} edited")).unwrap();
    let edited = orch
        .build_image("test-hash", ctx.path(), &log_path(logs.path(), "edited"))
        .await
        .unwrap();
    assert!(edited.built);
    assert_ne!(edited.tag, first.tag);
    assert_ne!(edited.id, first.id);

    for tag in [&first.tag, &edited.tag] {
        orch.docker()
            .remove_image(
                tag,
                None::<bollard::query_parameters::RemoveImageOptions>,
                None,
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn failing_build_is_an_error_with_the_log_tail() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let nonce = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
    let ctx = context(&[(
        "Dockerfile",
        &format!("FROM {TEST_BASE}\nRUN echo 'about to fail {nonce}' && false\n"),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let log = log_path(logs.path(), "fail");
    let t = std::time::Instant::now();
    let err = orch
        .build_image("test-fail", ctx.path(), &log)
        .await
        .unwrap_err();
    eprintln!(
        "failed build reported in {:.2} s:\n{err}",
        t.elapsed().as_secs_f64()
    );
    match &err {
        OrchestratorError::Build {
            server,
            message,
            log_tail,
            log_path,
        } => {
            assert_eq!(server, "test-fail");
            // The step's exit code and the last thing it printed, not the quoted command.
            assert_eq!(
                message,
                &format!("a RUN step exited with code 1: about to fail {nonce}")
            );
            assert!(
                log_tail
                    .iter()
                    .any(|l| l.contains(&format!("about to fail {nonce}"))),
                "{log_tail:?}"
            );
            assert!(log_tail.len() <= 20);
            assert_eq!(log_path, &log);
        }
        other => panic!("expected a build error, got {other}"),
    }
    assert!(err.to_string().contains("about to fail"));
}

#[tokio::test]
async fn unknown_base_image_is_a_clean_error() {
    let Some(orch) = connect().await else { return };
    let orch = orch.with_pull_timeout(std::time::Duration::from_secs(5));
    let ctx = context(&[("Dockerfile", "FROM benchctl-test/never-made:x\n")]);
    let logs = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let err = orch
        .build_image("test-nobase", ctx.path(), &log_path(logs.path(), "nobase"))
        .await
        .unwrap_err();
    assert!(t.elapsed().as_secs() < 10, "took {:?}", t.elapsed());
    assert!(matches!(err, OrchestratorError::BaseImage { .. }), "{err}");
}

/// A suite other than the host's goes through the sources-file substitution (bullseye is what
/// the gatling image needs). Made once under a test tag and reused.
#[tokio::test]
async fn bootstraps_another_suite_from_substituted_sources() {
    let Some(orch) = connect().await else { return };
    let tag = "benchctl-test/bullseye:base";
    if orch.image_id(tag).await.unwrap().is_none() {
        let t = std::time::Instant::now();
        orch.bootstrap_debian("bullseye", tag)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("bootstrapped {tag} in {:.1} s", t.elapsed().as_secs_f64());
    }
    let ctx = context(&[(
        "Dockerfile",
        &format!(
            "FROM {tag}\nRUN . /etc/os-release && test \"$VERSION_CODENAME\" = bullseye \
             && grep -rq bullseye-security /etc/apt/sources.list /etc/apt/sources.list.d/ \
             && ! grep -rq bookworm /etc/apt/sources.list /etc/apt/sources.list.d/\n"
        ),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let built = orch
        .build_image(
            "test-bullseye",
            ctx.path(),
            &log_path(logs.path(), "bullseye"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = orch
        .docker()
        .remove_image(
            &built.tag,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}

/// A build log is never written through a symlink someone planted at its path, nor over an
/// existing file: the build refuses, and the file the link points at is untouched.
#[tokio::test]
async fn a_planted_symlink_at_the_build_log_is_not_followed() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let log = dir.path().join("build.log");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let nonce = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
    let ctx = context(&[
        (
            "Dockerfile",
            &format!("FROM {TEST_BASE}\nCOPY n.txt /n.txt\n"),
        ),
        ("n.txt", &nonce),
    ]);
    let err = orch
        .build_image("test-symlink", ctx.path(), &log)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("never overwritten"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&log)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// A build runs on the engine's bridge, not in the host's network namespace: a RUN step does
/// not reach a service listening on the host's loopback.
#[tokio::test]
async fn a_build_does_not_reach_the_hosts_loopback() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ctx = context(&[(
        "Dockerfile",
        &format!(
            "FROM {TEST_BASE}\n\
             RUN if timeout 5 bash -c 'echo > /dev/tcp/127.0.0.1/{port}' 2>/dev/null; then echo HOST-LOOPBACK-REACHED; else echo HOST-LOOPBACK-UNREACHED; fi\n"
        ),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let log = log_path(logs.path(), "netprobe");
    let built = orch
        .build_image("test-netprobe", ctx.path(), &log)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = orch
        .docker()
        .remove_image(
            &built.tag,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
    assert!(text.contains("HOST-LOOPBACK-UNREACHED"), "{text}");
    drop(listener);
}
