//! Containers against the real daemon: start, readiness, verification, stats, and above all
//! that nothing outlives its guard, whether it is removed in order, dropped on a runtime,
//! dropped after the runtime is gone, or dropped while a panic unwinds.

use crate::common::{busybox_image, connect, exists, free_port, run_id, test_base, TEST_BASE};
use orchestrator::{ContainerSpec, ExpectedDoc, OrchestratorError};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// Idle connections the stats test holds open to the container while it samples.
const HELD: u64 = 5;

mod confinement;
mod removal;

fn doc(url_path: &str, body: &[u8]) -> ExpectedDoc {
    ExpectedDoc {
        url_path: url_path.to_string(),
        length: body.len() as u64,
        sha256_hex: hex::encode(Sha256::digest(body)),
    }
}

/// A busybox spec serving `docroot`.
fn busybox_spec(image: &str, docroot: &std::path::Path, run: &str) -> ContainerSpec {
    ContainerSpec {
        name: "busybox".to_string(),
        image: image.to_string(),
        port: free_port(),
        docroot: Some(docroot.to_path_buf()),
        run_id: run.to_string(),
        cpuset: Some("0".to_string()),
        memory_bytes: Some(256 << 20),
        labels: vec![("purpose".to_string(), "test".to_string())],
        ..Default::default()
    }
}

#[tokio::test]
async fn serves_verifies_samples_and_is_removed_on_drop() {
    let Some(orch) = connect().await else { return };
    let image = busybox_image(&orch).await;
    let www = tempfile::tempdir().unwrap();
    let hello = b"Hello, World!";
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(www.path().join("index.html"), hello).unwrap();
    std::fs::write(www.path().join("big.bin"), &big).unwrap();

    let run = run_id("serve");
    let spec = busybox_spec(&image.tag, www.path(), &run);
    let port = spec.port;
    let guard = orch.start(&spec).await.unwrap();
    assert!(guard.name().contains(&run), "{}", guard.name());
    let id = guard.id().to_string();

    let info = orch
        .docker()
        .inspect_container(
            &id,
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
        .unwrap();
    let labels = info.config.unwrap().labels.unwrap();
    assert_eq!(labels.get("benchctl").map(String::as_str), Some("1"));
    assert_eq!(labels.get("benchctl.run"), Some(&run));
    assert_eq!(
        labels.get("benchctl.server").map(String::as_str),
        Some("busybox")
    );
    assert_eq!(labels.get("purpose").map(String::as_str), Some("test"));
    let host = info.host_config.unwrap();
    assert_eq!(host.network_mode.as_deref(), Some("host"));
    assert_eq!(host.cpuset_cpus.as_deref(), Some("0"));
    assert_eq!(host.memory, Some(256 << 20));

    let ready = orch
        .wait_ready(&guard, port, "/", Duration::from_secs(10))
        .await
        .unwrap();
    eprintln!("busybox: create to ready {ready:?}");
    assert!(ready < Duration::from_secs(5));

    let t = Instant::now();
    let verified = orch
        .verify(port, &[doc("/index.html", hello), doc("/big.bin", &big)])
        .await
        .unwrap();
    eprintln!(
        "verified 2 documents in {:?}; Server: {:?}",
        t.elapsed(),
        verified.server_header
    );

    // Same length, different bytes.
    let mut wrong = doc("/index.html", hello);
    wrong.sha256_hex = hex::encode(Sha256::digest(b"Hello, World?"));
    match orch.verify(port, &[wrong]).await.unwrap_err() {
        OrchestratorError::Verify { url_path, what, .. } => {
            assert_eq!(url_path, "/index.html");
            assert!(what.contains("SHA-256"), "{what}");
        }
        other => panic!("{other}"),
    }
    // Wrong length.
    let short = doc("/index.html", b"Hello");
    let err = orch.verify(port, &[short]).await.unwrap_err();
    assert!(
        err.to_string().contains("/index.html") && err.to_string().contains("longer"),
        "{err}"
    );
    // Missing document.
    let err = orch
        .verify(port, &[doc("/missing.html", b"x")])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");

    samples_under_load(&orch, &guard, port, &big).await;

    let t = Instant::now();
    drop(guard);
    eprintln!("drop removed the container in {:?}", t.elapsed());
    assert!(
        !exists(&orch, &id).await,
        "container {id} survived its guard"
    );
}

/// The sampler's figures while the container serves `big` a few times, and after it starts
/// over as a warm-up ends.
async fn samples_under_load(
    orch: &orchestrator::Orchestrator,
    guard: &orchestrator::ContainerGuard,
    port: u16,
    big: &[u8],
) {
    // Stats while some load runs: fetch the big file a few times, with connections held open
    // that the container counts (idle ones, which busybox's httpd keeps for its timeout).
    let sampler = orch.sample_stats(guard).await.unwrap();
    let held: Vec<std::net::TcpStream> = (0..HELD)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    for _ in 0..10 {
        orch.verify(port, &[doc("/big.bin", big)]).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let usage = sampler.finish().await;
    drop(held);
    eprintln!("usage: {usage:?}");
    assert!(usage.samples >= 2, "{usage:?}");
    assert!(usage.cpu_seconds > 0.0, "{usage:?}");
    assert!(usage.peak_memory_bytes > 0, "{usage:?}");
    if usage.from_cgroup {
        // Its network namespace is in sight where its cgroup is.
        let open = usage.peak_connections.expect("connections counted");
        assert!((HELD..HELD + 20).contains(&open), "{usage:?}");
    }
    // Started over when a warm-up ends: the load before it is not counted.
    let sampler = orch.sample_stats(guard).await.unwrap();
    for _ in 0..10 {
        orch.verify(port, &[doc("/big.bin", big)]).await.unwrap();
    }
    sampler.restart().await;
    let after = sampler.finish().await;
    eprintln!("usage after a restart: {after:?}");
    assert!(after.samples >= 1, "{after:?}");
    assert!(after.cpu_seconds < usage.cpu_seconds, "{after:?} {usage:?}");
}

#[tokio::test]
async fn orderly_remove() {
    let Some(orch) = connect().await else { return };
    let image = busybox_image(&orch).await;
    let www = tempfile::tempdir().unwrap();
    let guard = orch
        .start(&busybox_spec(&image.tag, www.path(), &run_id("orderly")))
        .await
        .unwrap();
    let id = guard.id().to_string();
    let t = Instant::now();
    guard.remove().await.unwrap();
    eprintln!("remove() took {:?}", t.elapsed());
    assert!(!exists(&orch, &id).await);
}

#[tokio::test]
async fn exited_container_fails_fast_with_its_logs() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = ContainerSpec {
        name: "crasher".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id("exit"),
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            "echo 'config error: no such directive' >&2; echo second line; exit 3".into(),
        ]),
        ..Default::default()
    };
    let guard = orch.start(&spec).await.unwrap();
    let t = Instant::now();
    let err = orch
        .wait_ready(&guard, spec.port, "/", Duration::from_secs(30))
        .await
        .unwrap_err();
    let took = t.elapsed();
    eprintln!("exit reported after {took:?}:\n{err}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    match err {
        OrchestratorError::Exited {
            code,
            log_tail,
            name,
        } => {
            assert_eq!(code, Some(3));
            assert!(name.contains("crasher"));
            assert!(
                log_tail
                    .iter()
                    .any(|l| l.contains("config error: no such directive")),
                "{log_tail:?}"
            );
            assert!(
                log_tail.iter().any(|l| l.contains("second line")),
                "{log_tail:?}"
            );
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn silent_container_hits_the_deadline_with_its_logs() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = ContainerSpec {
        name: "silent".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id("silent"),
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            "echo listening nowhere; exec sleep 60".into(),
        ]),
        ..Default::default()
    };
    let guard = orch.start(&spec).await.unwrap();
    let t = Instant::now();
    let err = orch
        .wait_ready(&guard, spec.port, "/", Duration::from_millis(400))
        .await
        .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    match err {
        OrchestratorError::NotReady { log_tail, port, .. } => {
            assert_eq!(port, spec.port);
            assert!(
                log_tail.iter().any(|l| l.contains("listening nowhere")),
                "{log_tail:?}"
            );
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn busy_port_is_refused_before_anything_starts() {
    let Some(orch) = connect().await else { return };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let spec = ContainerSpec {
        name: "busy".to_string(),
        image: TEST_BASE.to_string(),
        port: taken.local_addr().unwrap().port(),
        run_id: run_id("busy"),
        ..Default::default()
    };
    let err = orch.start(&spec).await.unwrap_err();
    assert!(matches!(err, OrchestratorError::PortBusy { .. }), "{err}");
}
