//! Engines other than the local one, made by the test as network namespaces with their own
//! dockerd ([`testhosts`]): the orchestrator connects to them over TCP (or ssh, to an sshd
//! the test starts in the namespace) with the API version
//! negotiated, reads their facts, fails in bounded time and with the engine's URL when one does
//! not answer, and runs a server there: an image built on that engine, the documents uploaded
//! through the API (no bind mount of a local path), reached and verified at that host's
//! address, labelled, and removed (in order and by a guard's drop) so that no container is
//! left on any engine.
//!
//! Every request goes to an address of a namespace this test made.

use crate::common;

use common::{busybox_image, connect, run_id};
use orchestrator::{ContainerSpec, Endpoint, ExpectedDoc, Orchestrator, OrchestratorError};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use testhosts::TestHosts;

/// The hosts, or `None` with the reason printed when this machine cannot make them (outside
/// CI; in CI that is a failure).
fn hosts_or_skip(n: usize) -> Option<TestHosts> {
    hosts_or_skip_with(n, TestHosts::up)
}

fn hosts_or_skip_with(
    n: usize,
    up: impl FnOnce(usize) -> Result<TestHosts, String>,
) -> Option<TestHosts> {
    if !testhosts::available_or_skip() {
        return None;
    }
    let t = Instant::now();
    let hosts = up(n).unwrap_or_else(|e| panic!("making {n} test hosts: {e}"));
    for h in hosts.hosts() {
        eprintln!(
            "host {} at {}: dockerd answered after {:.1} s",
            h.name,
            h.address,
            h.ready_after.as_secs_f64()
        );
    }
    eprintln!("{n} hosts up in {:.1} s", t.elapsed().as_secs_f64());
    Some(hosts)
}

fn tcp(address: IpAddr, port: u16) -> Endpoint {
    Endpoint::Tcp {
        host: address.to_string(),
        port,
        tls: None,
    }
}

/// The labelled containers on an engine.
async fn labelled(orch: &Orchestrator) -> Vec<String> {
    let filters =
        std::collections::HashMap::from([("label".to_string(), vec!["benchctl=1".to_string()])]);
    let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    orch.docker()
        .list_containers(Some(options))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

#[tokio::test]
async fn engines_in_namespaces_answer_with_their_facts_and_a_silent_one_fails_in_bounded_time() {
    let Some(hosts) = hosts_or_skip(2) else {
        return;
    };
    for h in hosts.hosts() {
        let orch = Orchestrator::connect_to(&tcp(h.address.into(), testhosts::ENGINE_PORT))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", h.name));
        let facts = orch.facts().await.unwrap();
        eprintln!("{}: {facts:?}", h.name);
        assert!(!facts.version.is_empty());
        assert_eq!(facts.api_version, orch.api_version());
        assert!(facts.cpus >= 1, "{facts:?}");
        assert!(facts.memory_bytes > 64 << 20, "{facts:?}");
        // The same machine's clock: any offset is the request's own time.
        assert!(
            facts.clock_offset_s.abs() < 1.0 + facts.clock_uncertainty_s,
            "{facts:?}"
        );
    }

    // Nothing has this address: the connection gets no answer.
    let silent = tcp(hosts.silent_address().into(), testhosts::ENGINE_PORT);
    let t = Instant::now();
    let e = Orchestrator::connect_to(&silent)
        .await
        .expect_err("nobody is there");
    let waited = t.elapsed();
    let text = e.to_string();
    eprintln!("after {waited:?}: {text}");
    assert!(
        matches!(
            e,
            OrchestratorError::NoAnswer { .. } | OrchestratorError::EngineUnreachable { .. }
        ),
        "{e:?}"
    );
    assert!(text.contains(&silent.url()), "{text}");
    assert!(
        waited < orchestrator::CONNECT_BOUND + Duration::from_secs(5),
        "{waited:?}"
    );

    // An engine's port with nothing listening: refused at once, the URL in the message.
    let closed = tcp(hosts.hosts()[0].address.into(), 1);
    let e = Orchestrator::connect_to(&closed)
        .await
        .expect_err("nothing listens on port 1");
    assert!(e.to_string().contains(&closed.url()), "{e}");
}

#[tokio::test]
async fn a_server_on_another_engine_is_built_there_serves_uploaded_documents_and_is_removed() {
    let Some(local) = connect().await else { return };
    // The base image there from the start, as if shipped (the ssh test below ships it through
    // its tunnel): unpacking it into a fresh engine was most of this test.
    let base = busybox_image(&local).await;
    let Some(hosts) = hosts_or_skip_with(1, |n| TestHosts::up_with_images(n, &[&base.tag])) else {
        return;
    };
    let h = &hosts.hosts()[0];
    let remote = Orchestrator::connect_to(&tcp(h.address.into(), testhosts::ENGINE_PORT))
        .await
        .unwrap();
    a_server_there(&local, &remote, h).await;
}

/// Processes of this test's own ssh tunnels (their sockets' folders carry this process's id).
fn own_tunnels() -> usize {
    let mark = format!("benchctl-ssh-{}-", std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark))
        })
        .count()
}

#[tokio::test]
async fn an_engine_over_ssh_runs_a_server_as_over_tcp_and_a_wrong_key_fails_with_sshs_reason() {
    let Some(local) = connect().await else { return };
    let Some(mut hosts) = hosts_or_skip(1) else {
        return;
    };
    let access = hosts.start_sshd(0).unwrap_or_else(|e| panic!("{e}"));
    let h = &hosts.hosts()[0];
    let rest = access.url.strip_prefix("ssh://").unwrap();
    let (destination, socket) = rest.split_at(rest.find('/').unwrap());
    let target = orchestrator::SshTarget {
        destination: destination.to_string(),
        port: None,
        socket: socket.into(),
        config: Some(access.config.clone()),
    };
    let endpoint = Endpoint::Ssh(target.clone());
    assert_eq!(endpoint.url(), access.url);
    assert_eq!(endpoint.default_address(), Some(IpAddr::V4(h.address)));
    let t = Instant::now();
    let remote = Orchestrator::connect_to(&endpoint)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("over ssh in {:.2} s", t.elapsed().as_secs_f64());
    let facts = remote.facts().await.unwrap();
    assert!(facts.cpus >= 1, "{facts:?}");
    assert_eq!(own_tunnels(), 1, "one tunnel for the engine");
    a_server_there(&local, &remote, h).await;
    assert_eq!(own_tunnels(), 1, "every connection used the same tunnel");

    // A tunnel whose ssh died (a lost network) is made again by the next connection.
    orchestrator::ssh::close_all();
    assert_eq!(own_tunnels(), 0);
    let again = Orchestrator::connect_to(&endpoint).await.unwrap();
    again.facts().await.unwrap();
    assert_eq!(own_tunnels(), 1);

    // A key the host does not know: ssh's own reason, at once, and no tunnel left.
    let wrong = tempfile::tempdir().unwrap();
    let key = wrong.path().join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    let config = std::fs::read_to_string(&access.config).unwrap();
    let config = config
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("IdentityFile") {
                format!("  IdentityFile {}", key.display())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(wrong.path().join("config"), config).unwrap();
    let refused = Endpoint::Ssh(orchestrator::SshTarget {
        config: Some(wrong.path().join("config")),
        ..target
    });
    let t = Instant::now();
    let e = Orchestrator::connect_to(&refused)
        .await
        .expect_err("the host does not know that key");
    let text = e.to_string();
    eprintln!("after {:?}: {text}", t.elapsed());
    assert!(text.contains(&access.url), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(
        t.elapsed() < orchestrator::CONNECT_BOUND,
        "{:?}",
        t.elapsed()
    );
    orchestrator::ssh::close_all();
    assert_eq!(own_tunnels(), 0);
}

/// A server on `remote` (host `h`'s engine): its image built there, documents uploaded,
/// verified at that host's address, sampled, swept and removed three ways.
async fn a_server_there(local: &Orchestrator, remote: &Orchestrator, h: &testhosts::TestHost) {
    let image = image_built_there(local, remote, h).await;

    let www = tempfile::tempdir().unwrap();
    let docs = documents_in(www.path());

    let run = run_id("remote");
    let address = IpAddr::V4(h.address);
    let spec = ContainerSpec {
        name: "remote".to_string(),
        image: image.tag.clone(),
        env: vec![("BENCH_ADDR".to_string(), address.to_string())],
        port: 8080,
        docroot: Some(www.path().to_path_buf()),
        run_id: run.clone(),
        memory_bytes: Some(64 << 20),
        ..Default::default()
    };
    let guard = remote.start(&spec).await.unwrap();
    assert_eq!(guard.address(), address);
    let info = remote
        .docker()
        .inspect_container(
            guard.id(),
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
        .unwrap();
    let host_config = info.host_config.unwrap();
    assert_eq!(host_config.binds, None, "no local path is mounted there");
    let labels = info.config.unwrap().labels.unwrap();
    assert_eq!(labels.get("benchctl.run"), Some(&run));
    assert_eq!(
        labels.get(orchestrator::LABEL_MACHINE),
        orchestrator::owner::machine_id().as_ref()
    );
    let ready = remote
        .wait_ready(&guard, spec.port, "/index.html", Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("remote busybox: create to ready {ready:?}");
    remote
        .verify_at(guard.socket_addr(), &docs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Stats come from its engine, started over (as a warm-up ends) through it too.
    let sampler = remote.sample_stats(&guard).await.unwrap();
    sampler.restart().await;
    let usage = sampler.finish().await;
    assert!(usage.samples >= 1);

    // This machine's sweep of stale containers leaves a live run's alone there too.
    assert_eq!(remote.gc_stale().await.unwrap(), 0);
    assert_eq!(labelled(remote).await.len(), 1);

    removed_three_ways(remote, guard, &spec, &run).await;

    certificate_served_there(remote, spec).await;
}

/// A busybox httpd image built on `remote`, from a base image shipped there from here.
async fn image_built_there(
    local: &Orchestrator,
    remote: &Orchestrator,
    h: &testhosts::TestHost,
) -> orchestrator::BuiltImage {
    // The namespace has no way out to Debian's mirrors: its base image comes from here.
    let base = busybox_image(local).await;
    let t = Instant::now();
    local.ship_image(remote, &base.tag).await.unwrap();
    eprintln!(
        "copied {} to {} in {:.1} s",
        base.tag,
        h.name,
        t.elapsed().as_secs_f64()
    );
    // Built on that engine: the context travels through its API.
    let ctx = common::context(&[(
        "Dockerfile",
        &format!(
            "FROM {}\nUSER 65534:65534\nENTRYPOINT [\"sh\", \"-c\", \"exec busybox httpd -f -v -p $BENCH_ADDR:$BENCH_PORT -h /srv/www\"]\n",
            base.tag
        ),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let image = remote
        .build_image("test-remote", ctx.path(), &logs.path().join("remote.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(local.image_id(&image.tag).await.unwrap().is_none());
    image
}

/// Two documents written into `www`, a small one and a 2 MB one in a subfolder.
fn documents_in(www: &std::path::Path) -> [ExpectedDoc; 2] {
    let hello = b"Hello, World!";
    let big: Vec<u8> = (0..2_000_000u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(www.join("index.html"), hello).unwrap();
    std::fs::create_dir(www.join("sub")).unwrap();
    std::fs::write(www.join("sub/big.bin"), &big).unwrap();
    [
        ExpectedDoc {
            url_path: "/index.html".to_string(),
            length: hello.len() as u64,
            sha256_hex: hex::encode(Sha256::digest(hello)),
        },
        ExpectedDoc {
            url_path: "/sub/big.bin".to_string(),
            length: big.len() as u64,
            sha256_hex: hex::encode(Sha256::digest(&big)),
        },
    ]
}

/// The container of `guard` removed when dropped, then others in order and by a run's sweep.
async fn removed_three_ways(
    remote: &Orchestrator,
    guard: orchestrator::ContainerGuard,
    spec: &ContainerSpec,
    run: &str,
) {
    // Dropped: the guard reaches its own engine to remove it.
    let id = guard.id().to_string();
    drop(guard);
    assert!(labelled(remote).await.is_empty(), "{id} is still there");

    // And in order, with a second one.
    let guard = remote.start(spec).await.unwrap();
    remote
        .wait_ready(&guard, spec.port, "/index.html", Duration::from_secs(20))
        .await
        .unwrap();
    guard.remove().await.unwrap();
    assert!(labelled(remote).await.is_empty());
    // A run's sweep from another thread reaches every engine named.
    let leaked = remote.start(spec).await.unwrap().leak();
    let removed = orchestrator::remove_run_blocking_on(
        &[Endpoint::Local, remote.endpoint().clone()],
        run,
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(removed, 1, "{leaked}");
    assert!(labelled(remote).await.is_empty());
}

/// A certificate folder goes there as the documents do: served back from TLS_MOUNT here by
/// the same httpd, byte for byte.
async fn certificate_served_there(remote: &Orchestrator, spec: ContainerSpec) {
    let tls = tempfile::tempdir().unwrap();
    let cert = b"-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n";
    std::fs::write(tls.path().join("cert.pem"), cert).unwrap();
    std::fs::write(tls.path().join("key.pem"), b"key").unwrap();
    let spec = ContainerSpec {
        tls_dir: Some(tls.path().to_path_buf()),
        entrypoint: Some(vec![
            "sh".to_string(),
            "-c".to_string(),
            format!(
                "exec busybox httpd -f -p $BENCH_ADDR:$BENCH_PORT -h {}",
                orchestrator::TLS_MOUNT
            ),
        ]),
        ..spec
    };
    let guard = remote.start(&spec).await.unwrap();
    remote
        .wait_ready(&guard, spec.port, "/cert.pem", Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    remote
        .verify_at(
            guard.socket_addr(),
            &[ExpectedDoc {
                url_path: "/cert.pem".to_string(),
                length: cert.len() as u64,
                sha256_hex: hex::encode(Sha256::digest(cert)),
            }],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    guard.remove().await.unwrap();
    assert!(labelled(remote).await.is_empty());
}

#[tokio::test]
async fn a_tls_engine_answers_a_client_with_its_certificates_and_refuses_plain_http() {
    let Some(hosts) = hosts_or_skip_with(1, TestHosts::up_tls) else {
        return;
    };
    let h = &hosts.hosts()[0];
    let tls_dir = h.tls_dir.clone().expect("a TLS host has a client folder");
    let with_tls = Endpoint::Tcp {
        host: h.address.to_string(),
        port: h.port,
        tls: Some(tls_dir.clone()),
    };
    let orch = Orchestrator::connect_to(&with_tls)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let facts = orch.facts().await.unwrap();
    assert!(facts.cpus >= 1, "{facts:?}");

    // The same port without TLS is not an engine that answers.
    let plain = tcp(h.address.into(), h.port);
    let e = Orchestrator::connect_to(&plain)
        .await
        .expect_err("a TLS engine does not speak plain HTTP");
    assert!(e.to_string().contains(&plain.url()), "{e}");

    // A folder without the client's key: said before any connection.
    let partial = tempfile::tempdir().unwrap();
    for f in ["ca.pem", "cert.pem"] {
        std::fs::copy(tls_dir.join(f), partial.path().join(f)).unwrap();
    }
    let e = Orchestrator::connect_to(&Endpoint::Tcp {
        host: h.address.to_string(),
        port: h.port,
        tls: Some(partial.path().to_path_buf()),
    })
    .await
    .expect_err("no key.pem");
    assert!(e.to_string().contains("no key.pem"), "{e}");
}
