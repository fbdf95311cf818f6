//! The generator where io_uring is forbidden: this very binary in a container of the tests'
//! base image, under a seccomp profile that denies io_uring's system calls (as Docker's
//! default profile does in some releases, and as a hardened host may), asked for
//! `--engine uring`: the load runs on epoll, and one line says why.

use crate::support::TestServer;
use orchestrator::Orchestrator;
use std::process::Command;
use testsupport::TEST_BASE;

/// Every system call allowed but io_uring's, which fail with EPERM.
const NO_IO_URING: &str = r#"{
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [
    {
      "names": ["io_uring_setup", "io_uring_enter", "io_uring_register"],
      "action": "SCMP_ACT_ERRNO",
      "errnoRet": 1
    }
  ]
}"#;

/// `benchctl load ARGS` in a container that may not use io_uring, on the host's network (the
/// test server listens on 127.0.0.1); its exit status, standard output and standard error.
fn load_without_io_uring(args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("no-io-uring.json");
    std::fs::write(&profile, NO_IO_URING).unwrap();
    let name = format!("benchctl-test-seccomp-{}", std::process::id());
    let mut cmd = Command::new("timeout");
    cmd.args([
        "120",
        "docker",
        "run",
        "--rm",
        "--name",
        &name,
        "--label",
        "benchctl-test=1",
    ])
    .args(["--network", "host", "--security-opt"])
    .arg(format!("seccomp={}", profile.display()))
    .arg("-v")
    .arg(format!("{}:/benchctl:ro", env!("CARGO_BIN_EXE_benchctl")))
    .args([TEST_BASE, "/benchctl", "load"])
    .args(args);
    let out = cmd.output().expect("docker run");
    // Killed at its deadline, the container may outlive the client.
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn where_io_uring_is_forbidden_the_load_runs_on_epoll_and_says_so_once() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let local = Orchestrator::connect().await.expect("the local engine");
        crate::ensure_test_base(&local).await;
    });
    let s = TestServer::start();
    let url = s.url("/cl");
    let (code, out, err) = load_without_io_uring(&[
        "--engine", "uring", "-k", "-c", "4", "-n", "400", "--json", &url,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("--json output");
    assert_eq!(v["complete"], 400, "{v}");
    assert_eq!(v["failed"], 0);
    assert_eq!(v["settings"]["engine"], "epoll", "{v}");
    let fallbacks: Vec<&serde_json::Value> = v["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter(|n| n["kind"] == "engine_fallback")
        .collect();
    assert_eq!(fallbacks.len(), 1, "{}", v["notes"]);
    let reason = fallbacks[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("io_uring is not permitted here"),
        "{reason}"
    );

    // As a person reads it: one line under the figures.
    let (code, out, err) =
        load_without_io_uring(&["--engine", "uring", "-k", "-c", "4", "-n", "400", &url]);
    assert_eq!(code, Some(0), "{err}");
    let said = format!("{out}{err}");
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("the epoll engine ran this load instead of io_uring"))
        .collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].contains("io_uring is not permitted here"),
        "{}",
        lines[0]
    );
    assert!(out.contains("Complete requests:      400"), "{out}");
}
