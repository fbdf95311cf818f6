//! Runs whose servers fail: killed before or during their own load, a run that measured
//! nothing, a Varnish whose backend is gone.

use super::{
    assert_no_container, docker_dir_arg, loads_of, scenario, server, Finished, Run, LONG_NGINX,
};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a run whose server `name` was killed must show: it ends with 0 or 1, `name` is
/// unavailable and no load of it is kept, and nginx's one load has no failure. Returns the
/// reason the record gives for `name`.
fn assert_killed_server_reported<'a>(f: &Finished, record: &'a Value, name: &str) -> &'a str {
    assert!(
        matches!(f.code, Some(0) | Some(1)),
        "the run ends with 0 or 1\n{}",
        f.describe()
    );
    let killed = server(record, name);
    assert_eq!(killed["status"]["state"], "unavailable", "{record:#}");
    let reason = killed["status"]["reason"].as_str().expect("reason");
    // One line; the container's last log lines, if it had any, are kept in a file it names.
    assert_eq!(reason.lines().count(), 1, "{reason}");
    if let Some((_, rest)) = reason.split_once("(its last log lines: ") {
        let path = rest.trim_end_matches(')');
        assert!(Path::new(path).is_file(), "{reason}");
    }
    assert!(
        loads_of(record, name).is_empty(),
        "no load of a dead server is kept: {record:#}"
    );
    let nginx = loads_of(record, "nginx");
    assert_eq!(nginx.len(), 1, "{record:#}");
    assert_eq!(nginx[0]["load"]["failed"], 0, "{:#}", nginx[0]);
    reason
}

#[test]
fn a_server_killed_mid_run_is_reported_and_cleaned_up() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(
        r#"
name = "killed"
runs = 1

[load]
duration = "6s"
concurrency = 4

[[server]]
name = "nginx"
kind = "nginx"

[[server]]
name = "apache"
kind = "apache"

# Measured after the dead server's turn: the run must go on to it.
[[server]]
name = "nginx-after"
kind = "nginx"

[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
    );
    let mut run = Run::start(&path, &["--docker-dir", &docker_dir_arg()]);
    // All are up once the last one answers; nginx's 6 s load starts right then.
    run.wait_for_stderr("nginx-after: answering after", Duration::from_secs(15 * 60));
    run.kill_server("apache");
    let killed = Instant::now();
    let f = run.finish(Duration::from_secs(120));
    let record = run.record(&f);
    eprintln!(
        "killed: ended {:.1?} after the kill; {}",
        killed.elapsed(),
        f.describe()
    );
    let reason = assert_killed_server_reported(&f, &record, "apache");
    assert!(!reason.is_empty(), "{record:#}");
    eprintln!("killed: exit {:?}, apache's reason: {reason}", f.code);
    let nginx = loads_of(&record, "nginx");
    assert!(
        nginx[0]["load"]["complete"].as_u64().unwrap_or(0) > 0,
        "{:#}",
        nginx[0]
    );
    assert_eq!(server(&record, "nginx")["status"]["state"], "available");
    let after = loads_of(&record, "nginx-after");
    assert_eq!(
        after.len(),
        1,
        "the server after the dead one is still measured: {record:#}"
    );
    assert_eq!(after[0]["load"]["failed"], 0, "{:#}", after[0]);
    assert_no_container(&f);
}

#[test]
fn a_server_killed_during_its_own_load_is_reported_and_cleaned_up() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(
        r#"
name = "killed-in-load"
runs = 1

[load]
duration = "5s"
concurrency = 4

[[server]]
name = "nginx"
kind = "nginx"

[[server]]
name = "apache"
kind = "apache"

[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
    );
    let mut run = Run::start(&path, &["--docker-dir", &docker_dir_arg()]);
    // nginx's load is reported when it ends; apache's starts right then.
    run.wait_for_stderr("round 1/1  nginx", Duration::from_secs(15 * 60));
    std::thread::sleep(Duration::from_secs(1));
    run.kill_server("apache");
    let f = run.finish(Duration::from_secs(120));
    let record = run.record(&f);
    eprintln!("killed in its load: {}", f.describe());
    let reason = assert_killed_server_reported(&f, &record, "apache");
    eprintln!(
        "killed in its load: exit {:?}, apache's reason: {reason}",
        f.code
    );
    assert!(reason.contains("died"), "{reason}");
    assert_no_container(&f);
}

#[test]
fn a_run_that_measured_nothing_exits_non_zero() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    // The repository's docker folder, nginx's Dockerfile broken.
    let docker = tempfile::tempdir().expect("tempdir");
    let nginx = docker.path().join("nginx");
    std::fs::create_dir(&nginx).unwrap();
    for f in ["server.toml", "entrypoint.sh", "nginx.conf.template"] {
        std::fs::copy(
            testsupport::repo_root().join("docker/nginx").join(f),
            nginx.join(f),
        )
        .unwrap();
    }
    std::fs::write(
        nginx.join("Dockerfile"),
        "FROM debian:bookworm-slim\nRUN echo 'no nginx today' >&2 && exit 3\n",
    )
    .unwrap();
    let (_dir, path) = scenario(&LONG_NGINX.replace("duration = \"30s\"", "requests = 10"));
    let mut run = Run::start(&path, &["--docker-dir", docker.path().to_str().unwrap()]);
    let f = run.finish(Duration::from_secs(5 * 60));
    assert_eq!(f.code, Some(1), "{}", f.describe());
    assert!(
        f.stderr.contains("no load was measured"),
        "{}",
        f.describe()
    );
    assert!(f.stderr.contains("no nginx today"), "{}", f.describe());
    let record = run.record(&f);
    assert_eq!(record["status"]["state"], "failed", "{record:#}");
    assert_no_container(&f);
}

/// Varnish serves from its cache when its backend dies: its figures would then measure the
/// cache alone. Its load is dropped and both are reported.
#[test]
fn a_dead_varnish_backend_is_reported() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(
        r#"
name = "dead-backend"
runs = 1

[load]
duration = "6s"
concurrency = 4
keep_alive = true

[[server]]
name = "nginx"
kind = "nginx"

[[server]]
name = "varnish"
kind = "varnish"
backend = "nginx"

[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
    );
    let mut run = Run::start(&path, &["--docker-dir", &docker_dir_arg()]);
    run.wait_for_stderr("round 1/1  varnish", Duration::from_secs(15 * 60));
    std::thread::sleep(Duration::from_secs(1));
    run.kill_server("nginx");
    let f = run.finish(Duration::from_secs(60));
    assert_eq!(f.code, Some(1), "{}", f.describe());
    let record = run.record(&f);
    let varnish = server(&record, "varnish");
    assert_eq!(varnish["status"]["state"], "unavailable", "{record:#}");
    assert!(
        varnish["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("nginx, which it needs, died")),
        "{record:#}"
    );
    assert!(loads_of(&record, "varnish").is_empty(), "{record:#}");
    assert_eq!(server(&record, "nginx")["status"]["state"], "unavailable");
    assert_eq!(
        loads_of(&record, "nginx").len(),
        1,
        "measured before it died"
    );
    assert_no_container(&f);
}
