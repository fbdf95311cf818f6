//! A whole run whose server is on another Docker engine: a `[[host]]` made by the test as a
//! network namespace with its own dockerd ([`testhosts`]), named by the server's `host` key.
//! The server's image is built on that engine (its context through the API), its documents are
//! uploaded there and verified by SHA-256 from this machine, the load goes to that host's
//! address, and afterwards no container is left on either engine. Over TLS and HTTP/2 too:
//! the run's certificate goes there as the documents do and names that host's address.
//!
//! Every request goes to the address of the namespace this test made; the load is bounded
//! (200 requests per document).

use crate::common::*;
use orchestrator::Orchestrator;
use report::ServerStatus;
use runner::RunOptions;
use std::sync::Arc;
use testhosts::TestHosts;
use testsupport::TEST_BASE;

/// busybox's httpd in the tests' base image, built here (where Debian's mirrors are
/// reachable) by the recipe every test uses ([`testsupport::busybox_dockerfile`]), so its tag
/// is theirs.
async fn busybox_image(local: &Orchestrator) -> String {
    if local.image_id(TEST_BASE).await.unwrap().is_none() {
        local
            .bootstrap_debian("bookworm", TEST_BASE)
            .await
            .unwrap_or_else(|e| panic!("bootstrapping {TEST_BASE}: {e}"));
    }
    let ctx = tempfile::tempdir().unwrap();
    std::fs::write(
        ctx.path().join("Dockerfile"),
        testsupport::busybox_dockerfile(),
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    local
        .build_image("test-busybox", ctx.path(), &logs.path().join("b.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .tag
}

/// A server kind by the contract in docker/README.md, on top of `base`.
fn write_kind(dir: &std::path::Path, base: &str) {
    testsupport::write_busybox_kind(dir, base, 16, "");
}

async fn labelled_on(orch: &Orchestrator, label: &str) -> Vec<String> {
    let filters = std::collections::HashMap::from([("label".to_string(), vec![label.to_string()])]);
    orch.docker()
        .list_containers(Some(
            bollard::query_parameters::ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

/// One namespace host, this machine's engine and that host's, with the Docker tests' lock
/// held.
struct OneHost {
    _one_at_a_time: std::fs::File,
    hosts: TestHosts,
    local: Orchestrator,
    remote: Orchestrator,
}

/// This machine's engine with the Docker tests' lock held; `None` (the test skips) without a
/// daemon or outside CI where hosts cannot be made.
async fn here(test: &str) -> Option<(std::fs::File, Orchestrator)> {
    if !daemon_or_skip(test).await {
        return None;
    }
    if !testhosts::available_or_skip() {
        return None;
    }
    let one_at_a_time = exclusive();
    Some((one_at_a_time, Orchestrator::connect().await.unwrap()))
}

/// One namespace host whose engine starts with `images` of this machine's engine, as if they
/// had been shipped there (the namespace cannot reach Debian's mirrors, and shipping is not
/// what these tests show: images_push_cli's is).
async fn one_host(
    (one_at_a_time, local): (std::fs::File, Orchestrator),
    images: &[&str],
) -> OneHost {
    let images: Vec<String> = images.iter().map(|i| i.to_string()).collect();
    let hosts = tokio::task::spawn_blocking(move || {
        let images: Vec<&str> = images.iter().map(String::as_str).collect();
        TestHosts::up_with_images(1, &images)
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("making a test host: {e}"));
    let h = &hosts.hosts()[0];
    eprintln!(
        "host at {}: dockerd answered after {:.1} s",
        h.address,
        h.ready_after.as_secs_f64()
    );
    let remote = Orchestrator::connect_to(&orchestrator::Endpoint::Tcp {
        host: h.address.to_string(),
        port: testhosts::ENGINE_PORT,
        tls: None,
    })
    .await
    .unwrap();
    OneHost {
        _one_at_a_time: one_at_a_time,
        hosts,
        local,
        remote,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_a_namespace_host_is_built_verified_and_measured_there_and_leaves_nothing() {
    let Some(ready) =
        here("a_server_on_a_namespace_host_is_built_verified_and_measured_there").await
    else {
        return;
    };
    // The namespace cannot reach Debian's mirrors: the kind's base image is there from the
    // start, by the id it has here.
    let base = busybox_image(&ready.1).await;
    let OneHost {
        _one_at_a_time: _held,
        hosts,
        local,
        remote,
    } = one_host(ready, &[&base]).await;
    let h = &hosts.hosts()[0];
    local.ship_image(&remote, &base).await.unwrap();

    let (dir, path) = scenario(&format!(
        r#"
name = "remote"
[load]
requests = 200
concurrency = 2
timeout = "10s"
[[host]]
name = "srv1"
url = "{}"
insecure = true
[[server]]
name = "tiny"
kind = "tiny"
host = "srv1"
memory = "64m"
[[document]]
name = "hello"
path = "/"
generate = "hello"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 20000
"#,
        h.tcp_url()
    ));
    let kinds = dir.path().join("kinds");
    write_kind(&kinds.join("tiny"), &base);
    let plan = plan_with(&path, &kinds);
    let out = dir.path().join("remote.json");
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(
        &plan,
        RunOptions {
            out: Some(out.clone()),
            ..RunOptions::new()
        },
        rec.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", rec.lines().join("\n"));
    assert!(outcome.succeeded(), "{:?}", outcome.problems);
    let record = &outcome.record;
    assert!(
        matches!(record.servers[0].status, ServerStatus::Available { .. }),
        "{:?}",
        record.servers[0].status
    );
    // The record and its report say where it ran, and what that engine is.
    assert_eq!(record.servers[0].host.as_deref(), Some("srv1"));
    assert_eq!(record.engines.len(), 1);
    assert_eq!(record.engines[0].name, "srv1");
    let text = report::render(record, report::Format::Text, None).unwrap();
    assert!(text.contains("  tiny: tiny on srv1, image"), "{text}");
    assert!(
        text.contains(&format!("engine     srv1: {}", h.tcp_url())),
        "{text}"
    );
    // Built there, not here.
    let tag = &record.servers[0].image_tag;
    assert!(remote.image_id(tag).await.unwrap().is_some(), "{tag}");
    assert!(local.image_id(tag).await.unwrap().is_none(), "{tag}");
    assert_eq!(record.loads.len(), 2);
    for l in &record.loads {
        assert_eq!(l.load.complete, 200, "{}", l.url_path);
        assert_eq!(l.load.failed, 0, "{}", l.url_path);
        assert_eq!(
            l.load.server.hostname,
            h.address.to_string(),
            "where the load went"
        );
    }
    assert!(out.is_file());

    // Nothing left on either engine.
    assert!(labelled_on(&remote, "benchctl=1").await.is_empty());
    let mine = format!("benchctl.pid={}", std::process::id());
    assert!(labelled_on(&local, &mine).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_on_a_namespace_host_serves_http2_over_tls_with_the_runs_certificate() {
    let Some(ready) = here("nginx_on_a_namespace_host_serves_http2_over_tls").await else {
        return;
    };
    // The namespace cannot reach Debian's mirrors: nginx's image is built here, from the
    // repository's kind, and is there from the start by the same id, where the run finds it
    // up to date.
    let logs = tempfile::tempdir().unwrap();
    let tag = ready
        .1
        .build_image(
            "nginx",
            &repo_root().join("docker/nginx"),
            &logs.path().join("nginx.log"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .tag;
    let OneHost {
        _one_at_a_time: _held,
        hosts,
        local,
        remote,
    } = one_host(ready, &[&tag]).await;
    let h = &hosts.hosts()[0];
    local.ship_image(&remote, &tag).await.unwrap();

    let (dir, path) = scenario(&format!(
        r#"
name = "remote-h2"
tls = true
http = "2"
[load]
requests = 200
concurrency = 2
streams = 4
timeout = "10s"
[[host]]
name = "srv1"
url = "{}"
insecure = true
[[server]]
name = "nginx"
kind = "nginx"
host = "srv1"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
        h.tcp_url()
    ));
    let plan = plan_with(&path, &repo_root().join("docker"));
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(
        &plan,
        RunOptions {
            out: Some(dir.path().join("remote-h2.json")),
            ..RunOptions::new()
        },
        rec.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", rec.lines().join("\n"));
    // Verified over TLS from here: the certificate names the host's address.
    assert!(outcome.succeeded(), "{:?}", outcome.problems);
    let record = &outcome.record;
    assert!(
        matches!(record.servers[0].status, ServerStatus::Available { .. }),
        "{:?}",
        record.servers[0].status
    );
    assert_eq!(record.servers[0].image_tag, tag);
    let l = &record.loads[0];
    assert_eq!(l.protocol, Some(report::Protocol::H2));
    assert_eq!((l.load.complete, l.load.failed), (200, 0));
    assert_eq!(l.load.server.hostname, h.address.to_string());

    assert!(labelled_on(&remote, "benchctl=1").await.is_empty());
    let mine = format!("benchctl.pid={}", std::process::id());
    assert!(labelled_on(&local, &mine).await.is_empty());
}
