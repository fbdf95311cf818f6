//! What a server container may do: no rights beyond serving, a memory limit that kills, a
//! CPU share that caps it, and images whose user or volumes would reach beyond that refused.

use super::busybox_spec;
use crate::common::{busybox_image, connect, free_port, log_path, run_id, test_base, TEST_BASE};
use orchestrator::{Confinement, ContainerSpec};
use std::time::{Duration, Instant};

/// A server container cannot sniff the host's traffic (no AF_PACKET socket: NET_RAW is
/// dropped with every other capability), cannot write its root filesystem, cannot gain
/// privileges, and `docker inspect` shows each limit.
#[tokio::test]
async fn a_server_container_has_no_rights_beyond_serving() {
    let Some(orch) = connect().await else { return };
    let context = testsupport::repo_root().join("docker/tornado");
    let logs = tempfile::tempdir().unwrap();
    let image = orch
        .build_image("tornado", &context, &log_path(logs.path(), "tornado"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let probe = r#"
import os, socket
def attempt(what, f):
    try:
        f()
        print(what + ": ALLOWED")
    except OSError as e:
        print(what + ": refused (" + os.strerror(e.errno) + ")")
attempt("packet socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
attempt("raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("write /etc", lambda: open("/etc/benchctl-probe", "w"))
attempt("write /tmp", lambda: open("/tmp/benchctl-probe", "w"))
print("uid", os.getuid(), "gid", os.getgid())
print(open("/proc/self/status").read().split("NoNewPrivs:")[1].split()[0], "no_new_privs")
print(open("/proc/self/status").read().split("CapEff:")[1].split()[0], "capeff")
"#;
    let spec = ContainerSpec {
        name: "probe".to_string(),
        image: image.tag.clone(),
        port: free_port(),
        run_id: run_id("confined"),
        entrypoint: Some(vec!["python3".into(), "-c".into(), probe.into()]),
        confinement: Confinement {
            user: Some("65534:65534".to_string()),
            ..Confinement::default()
        },
        ..Default::default()
    };
    let guard = orch.start(&spec).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while orch.fail_if_exited(&guard).await.is_ok() {
        assert!(Instant::now() < deadline, "the probe did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = orch.log_tail(guard.id(), 50).await.join("\n");
    assert!(
        out.contains("packet socket: refused (Operation not permitted)"),
        "{out}"
    );
    assert!(
        out.contains("raw socket: refused (Operation not permitted)"),
        "{out}"
    );
    assert!(
        out.contains("write /etc: refused (Read-only file system)"),
        "{out}"
    );
    assert!(out.contains("write /tmp: ALLOWED"), "{out}");
    assert!(out.contains("uid 65534 gid 65534"), "{out}");
    assert!(out.contains("1 no_new_privs"), "{out}");
    assert!(out.contains("0000000000000000 capeff"), "{out}");

    let info = orch
        .docker()
        .inspect_container(
            guard.id(),
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
        .unwrap();
    let hc = info.host_config.unwrap();
    assert_eq!(hc.cap_drop, Some(vec!["ALL".to_string()]));
    assert_eq!(hc.readonly_rootfs, Some(true));
    assert_eq!(hc.pids_limit, Some(orchestrator::DEFAULT_PIDS_LIMIT));
    assert!(hc
        .security_opt
        .unwrap()
        .contains(&"no-new-privileges".to_string()));
    let log = hc.log_config.unwrap();
    assert_eq!(log.typ.as_deref(), Some("json-file"));
    assert_eq!(
        log.config.unwrap().get("max-file").map(String::as_str),
        Some("2")
    );
    let tmpfs = hc.tmpfs.unwrap();
    assert!(tmpfs["/tmp"].contains("noexec") && tmpfs["/run"].contains("nosuid"));
    guard.remove().await.unwrap();
}

/// A container killed for memory says so, with the word OOM and its limit.
#[tokio::test]
async fn an_oom_killed_server_is_reported_as_such() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = ContainerSpec {
        name: "hungry".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id("oom"),
        memory_bytes: Some(8 << 20),
        // A shell variable that doubles until the kernel stops it.
        cmd: Some(vec![
            "sh".into(),
            "-c".into(),
            "x=a; while true; do x=$x$x; done".into(),
        ]),
        ..Default::default()
    };
    let guard = orch.start(&spec).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let err = loop {
        match orch.fail_if_exited(&guard).await {
            Ok(()) => {
                assert!(Instant::now() < deadline, "never killed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => break e,
        }
    };
    let text = err.to_string();
    assert!(text.contains("(OOM)") && text.contains("8 MiB"), "{text}");
    guard.remove().await.unwrap();
}

/// A container that spins on CPU 0 at `share` of a core, for at most a minute whatever happens
/// to the test.
fn spinner(name: &str, run: &str, share: f64) -> ContainerSpec {
    ContainerSpec {
        name: name.to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id(run),
        cpuset: Some("0".to_string()),
        cpu_share: Some(share),
        cmd: Some(vec![
            "timeout".into(),
            "60".into(),
            "sh".into(),
            "-c".into(),
            "while :; do :; done".into(),
        ]),
        ..Default::default()
    }
}

/// A CPU share caps the container's CPU time from the start, and changes while it runs.
#[tokio::test]
async fn a_cpu_share_caps_the_container_and_can_change_while_it_runs() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = spinner("spinner", "share", 0.2);
    let guard = orch.start(&spec).await.unwrap();
    // (period, quota) µs, as the kernel enforces them.
    let limit = |orch: orchestrator::Orchestrator, id: String| async move {
        let hc = orch
            .docker()
            .inspect_container(
                &id,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .unwrap()
            .host_config
            .unwrap();
        (hc.cpu_period, hc.cpu_quota)
    };
    let id = guard.id().to_string();
    assert_eq!(
        limit(orch.clone(), id.clone()).await,
        (Some(20_000), Some(4_000))
    );
    // A spinning shell under a fifth of a core uses about that, never a whole core.
    let spin = |share: f64| {
        let orch = orch.clone();
        let guard = &guard;
        async move {
            let sampler = orch.sample_stats(guard).await.unwrap();
            let t = Instant::now();
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let usage = sampler.finish().await;
            let cores = usage.cpu_seconds / t.elapsed().as_secs_f64();
            eprintln!("at a share of {share}: {cores:.3} cores ({usage:?})");
            assert!(usage.samples >= 2, "{usage:?}");
            cores
        }
    };
    let cores = spin(0.2).await;
    assert!(cores < 0.3, "the share did not cap it: {cores:.3} cores");

    orch.set_cpu_share(&guard, Some(0.05)).await.unwrap();
    assert_eq!(
        limit(orch.clone(), id.clone()).await,
        (Some(20_000), Some(1_000))
    );
    let cores = spin(0.05).await;
    assert!(
        cores < 0.1,
        "the new share did not cap it: {cores:.3} cores"
    );

    // Lifted: no quota.
    orch.set_cpu_share(&guard, None).await.unwrap();
    assert_eq!(
        limit(orch.clone(), id.clone()).await,
        (Some(20_000), Some(-1))
    );
    let err = orch.set_cpu_share(&guard, Some(0.01)).await.unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    guard.remove().await.unwrap();
}

/// A local container's CPU is read from its cgroup, and that figure agrees with the one the
/// API's stats give over the same stretch of a steady spin.
#[tokio::test]
async fn cpu_comes_from_the_cgroup_and_agrees_with_the_api() {
    use futures_util::StreamExt;
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = spinner("cgroup-spinner", "cgroup", 0.3);
    let guard = orch.start(&spec).await.unwrap();
    // The API's reading: cumulative CPU ns, and when the collector took it (s since the epoch).
    let api = || async {
        let options = bollard::query_parameters::StatsOptionsBuilder::default()
            .stream(false)
            .one_shot(true)
            .build();
        let s = orch
            .docker()
            .stats(guard.id(), Some(options))
            .next()
            .await
            .unwrap()
            .unwrap();
        let cpu = s.cpu_stats.unwrap().cpu_usage.unwrap().total_usage.unwrap();
        let read = orchestrator::parse_rfc3339(&s.read.unwrap()).unwrap();
        (cpu, read)
    };
    let (cpu0, read0) = api().await;
    let sampler = orch.sample_stats(&guard).await.unwrap();
    let t = Instant::now();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let usage = sampler.finish().await;
    let elapsed = t.elapsed().as_secs_f64();
    let (cpu1, read1) = api().await;
    assert!(usage.from_cgroup, "{usage:?}");
    assert!(usage.samples >= 2, "{usage:?}");
    assert!(usage.peak_memory_bytes > 0, "{usage:?}");
    let ours = usage.cpu_seconds / elapsed;
    let theirs = (cpu1 - cpu0) as f64 / 1e9 / (read1 - read0);
    eprintln!(
        "cgroup: {ours:.3} cores over {elapsed:.3} s; API: {theirs:.3} cores over {:.3} s",
        read1 - read0
    );
    assert!(
        (ours / theirs - 1.0).abs() < 0.2,
        "the cgroup's {ours:.3} cores and the API's {theirs:.3} disagree"
    );
    assert!(
        ours > 0.15 && ours < 0.35,
        "{ours:.3} cores at a share of 0.3"
    );
    guard.remove().await.unwrap();
}

/// Readiness, then the audit a server passes before it is measured.
async fn ready_then_audit(
    orch: &orchestrator::Orchestrator,
    spec: &ContainerSpec,
) -> (orchestrator::ContainerGuard, orchestrator::Result<()>) {
    let guard = orch.start(spec).await.unwrap();
    orch.wait_ready(&guard, spec.port, "/", Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let allowed = [orchestrator::Socket::tcp(guard.socket_addr())];
    let audit = orch.audit(&guard, &allowed).await;
    (guard, audit)
}

#[tokio::test]
async fn a_server_as_root_however_spelled_or_listening_beyond_its_port_is_refused() {
    let Some(orch) = connect().await else { return };
    let image = busybox_image(&orch).await;
    let www = tempfile::tempdir().unwrap();
    std::fs::write(www.path().join("index.html"), b"hi").unwrap();
    let run = run_id("audit");

    // Confined as a server is: it passes.
    let mut spec = busybox_spec(&image.tag, www.path(), &run);
    spec.confinement.user = Some("65534:65534".to_string());
    let (guard, audit) = ready_then_audit(&orch, &spec).await;
    audit.unwrap_or_else(|e| panic!("{e}"));
    guard.remove().await.unwrap();

    // uid 0 written another way is still root: the runtime reads "0000" as 0.
    for user in ["0000:0000", "00:65534", "65534:0"] {
        let mut spec = busybox_spec(&image.tag, www.path(), &run);
        spec.confinement.user = Some(user.to_string());
        let (guard, audit) = ready_then_audit(&orch, &spec).await;
        let err = audit.expect_err(user).to_string();
        assert!(
            err.contains("was refused")
                && (err.contains("runs as root") || err.contains("group 0")),
            "{user}: {err}"
        );
        guard.remove().await.unwrap();
    }

    // Listening on every address of the machine (host networking) as well as where it was told.
    let mut spec = busybox_spec(&image.tag, www.path(), &run);
    spec.confinement.user = Some("65534:65534".to_string());
    let extra = loop {
        let p = free_port();
        if p != spec.port {
            break p;
        }
    };
    spec.env.push(("EXTRA_PORT".to_string(), extra.to_string()));
    spec.entrypoint = Some(vec![
        "sh".into(),
        "-c".into(),
        "busybox httpd -f -p 0.0.0.0:$EXTRA_PORT -h /srv/www & exec busybox httpd -f -p 127.0.0.1:$BENCH_PORT -h /srv/www".into(),
    ]);
    let guard = orch.start(&spec).await.unwrap();
    orch.wait_ready(&guard, spec.port, "/", Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The second listener starts beside the first: wait (bounded) until it accepts too.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", extra)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {extra}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let err = orch
        .audit(&guard, &[orchestrator::Socket::tcp(guard.socket_addr())])
        .await
        .expect_err("a second listener")
        .to_string();
    assert!(err.contains(&format!("tcp 0.0.0.0:{extra}")), "{err}");
    guard.remove().await.unwrap();
}

#[tokio::test]
async fn an_image_volume_needs_a_tmpfs_over_it() {
    let Some(orch) = connect().await else { return };
    let busybox = busybox_image(&orch).await;
    let ctx = crate::common::context(&[(
        "Dockerfile",
        &format!("FROM {}\nVOLUME /data\n", busybox.tag),
    )]);
    let logs = tempfile::tempdir().unwrap();
    let image = orch
        .build_image("test-volume", ctx.path(), &log_path(logs.path(), "volume"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let www = tempfile::tempdir().unwrap();
    std::fs::write(www.path().join("index.html"), b"hi").unwrap();
    let run = run_id("volume");
    let mut spec = busybox_spec(&image.tag, www.path(), &run);
    spec.confinement.user = Some("65534:65534".to_string());
    let err = orch
        .start(&spec)
        .await
        .expect_err("VOLUME /data")
        .to_string();
    assert!(err.contains("declares VOLUME /data"), "{err}");
    assert_eq!(
        orch.remove_run(&run).await.unwrap(),
        0,
        "nothing was created"
    );
    spec.confinement
        .tmpfs
        .push(orchestrator::Tmpfs::new("/data", 1 << 20));
    let guard = orch.start(&spec).await.unwrap_or_else(|e| panic!("{e}"));
    guard.remove().await.unwrap();
}
