//! `benchctl load --job FILE|-`: the load a job document describes is the load sent, exactly
//! as the same load given by flags; a job from standard input; the flags a job replaces, a
//! field the generator does not know and a job of another version refused with exit status 2.

use super::{assert_usage_error, benchctl, SHORT};
use crate::support::TestServer;
use loadgen::{HttpVersion, Job, LoadSpec};
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

fn job_for(url: String) -> Job {
    Job {
        cpus: vec![0],
        ..Job::new(
            url,
            LoadSpec {
                requests: Some(120),
                concurrency: 3,
                keep_alive: true,
                version: HttpVersion::Http11,
                warmup: Duration::from_millis(20),
                ..LoadSpec::default()
            },
        )
    }
}

fn write(dir: &std::path::Path, job: &serde_json::Value) -> String {
    let path = dir.join("job.json");
    std::fs::write(&path, serde_json::to_vec_pretty(job).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// The settings `benchctl load --json` reports, which say what was sent.
fn settings(stdout: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("--json output");
    assert_eq!(v["failed"], 0, "{stdout}");
    v["settings"].clone()
}

#[test]
fn a_job_sends_the_load_its_flags_would() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let job = job_for(s.url("/"));
    let file = write(dir.path(), &serde_json::to_value(&job).unwrap());
    let by_job = benchctl(&["load", "--json", "-q", "--job", &file], SHORT);
    assert_eq!(by_job.code, Some(0), "{}", by_job.describe());
    let url = s.url("/");
    let by_flags = benchctl(
        &[
            "load",
            "--json",
            "-q",
            "-n",
            "120",
            "-c",
            "3",
            "-k",
            "--http1.1",
            "--warmup",
            "20ms",
            "--cpus",
            "0",
            &url,
        ],
        SHORT,
    );
    assert_eq!(by_flags.code, Some(0), "{}", by_flags.describe());
    assert_eq!(settings(&by_job.stdout), settings(&by_flags.stdout));
    let v: serde_json::Value = serde_json::from_str(&by_job.stdout).unwrap();
    assert_eq!(v["complete"], 120);
}

#[test]
fn a_job_is_read_from_standard_input_with_a_dash() {
    let s = TestServer::start();
    let job = serde_json::to_vec(&job_for(s.url("/"))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(["load", "--json", "-q", "--job", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&job).unwrap();
    let pid = child.id();
    // Bounded: a child still there after the deadline is killed, and the test fails.
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if finished.recv_timeout(SHORT).is_err() {
            // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped yet.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    guard.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["complete"], 120);
}

#[test]
fn what_a_job_cannot_be_given_with_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let job = job_for("http://127.0.0.1:9/".to_string());
    let file = write(dir.path(), &serde_json::to_value(&job).unwrap());
    // The load's flags: the job says all of that.
    assert_usage_error(&["load", "--job", &file, "-n", "5"], "--job");
    assert_usage_error(&["load", "--job", &file, "--rate", "10"], "--job");
    assert_usage_error(&["load", "--job", &file, "http://127.0.0.1:9/"], "--job");
    // Neither a URL nor a job.
    assert_usage_error(&["load", "-n", "5"], "URL");
}

#[test]
fn a_job_the_generator_cannot_read_is_refused_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let mut job = serde_json::to_value(job_for("http://127.0.0.1:9/".to_string())).unwrap();
    job["load"]["pipelining"] = serde_json::json!(4);
    let file = write(dir.path(), &job);
    let f = benchctl(&["load", "--job", &file], SHORT);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains(&format!("--job {file}")),
        "{}",
        f.describe()
    );
    assert!(
        f.stderr.contains("unknown field `pipelining`"),
        "{}",
        f.describe()
    );
    assert!(f.stderr.contains("line "), "{}", f.describe());

    job["load"].as_object_mut().unwrap().remove("pipelining");
    job["version"] = serde_json::json!(9);
    let file = write(dir.path(), &job);
    let f = benchctl(&["load", "--job", &file], SHORT);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("a job of version 9"), "{}", f.describe());

    let f = benchctl(&["load", "--job", dir.path().to_str().unwrap()], SHORT);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("--job "), "{}", f.describe());
}
