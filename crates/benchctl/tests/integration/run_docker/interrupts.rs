//! Runs stopped from outside: SIGINT during a load, a second SIGINT, SIGHUP and SIGUSR1, and
//! `benchctl gc` while a run goes on.

use super::{
    assert_no_container, containers_of, docker_dir_arg, loads_of, scenario, server, Run, LONG_NGINX,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn sigint_during_a_load_cleans_up_and_keeps_an_interrupted_record() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(
        r#"
name = "sigint"
runs = 1

[load]
duration = "30s"
concurrency = 10

[[server]]
name = "nginx"
kind = "nginx"

[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
    );
    let mut run = Run::start(&path, &["--docker-dir", &docker_dir_arg()]);
    run.wait_for_stderr("nginx: answering after", Duration::from_secs(15 * 60));
    // The load starts right after verification; give it a moment to be under way.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        containers_of(run.pid, &["benchctl.server=nginx"]).len(),
        1,
        "nginx's container runs while it is measured"
    );
    let sent = Instant::now();
    run.signal(libc::SIGINT);
    let f = run.finish(Duration::from_secs(20));
    let record = run.record(&f);
    let took = sent.elapsed();
    eprintln!(
        "SIGINT: ended {took:.1?} after the signal; {}",
        f.describe()
    );
    assert_eq!(f.code, Some(130), "{}", f.describe());
    assert!(
        took < Duration::from_secs(10),
        "the run took {took:?} to end after SIGINT"
    );
    assert_no_container(&f);
    assert_eq!(record["status"]["state"], "interrupted", "{record:#}");
    assert!(
        record["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("SIGINT")),
        "{record:#}"
    );
    assert_eq!(server(&record, "nginx")["status"]["state"], "available");
    assert!(
        loads_of(&record, "nginx").is_empty(),
        "a load cut short is not kept: {record:#}"
    );
}

/// The run folders (`benchctl-run-*`) in `dir`.
fn run_folders(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("benchctl-run-"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_second_sigint_still_leaves_nothing_behind() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(LONG_NGINX);
    // The run's own temporary folder, so that what it leaves there can be seen.
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut run = Run::start_with_env(
        &path,
        &["--docker-dir", &docker_dir_arg()],
        &[("TMPDIR", tmp.path())],
    );
    run.wait_for_stderr("nginx: answering after", Duration::from_secs(15 * 60));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(run_folders(tmp.path()).len(), 1, "the run's private folder");
    assert_eq!(containers_of(run.pid, &[]).len(), 1);
    run.signal(libc::SIGINT);
    run.signal(libc::SIGINT);
    let f = run.finish(Duration::from_secs(30));
    assert_eq!(f.code, Some(130), "{}", f.describe());
    assert_no_container(&f);
    assert!(
        run_folders(tmp.path()).is_empty(),
        "{:?}\n{}",
        run_folders(tmp.path()),
        f.describe()
    );
    let out_dir = run.out.parent().expect("out's folder").to_path_buf();
    let left: Vec<String> = std::fs::read_dir(&out_dir)
        .expect("read the out folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "unfinished results files: {left:?}");
}

#[test]
fn sighup_and_sigusr1_clean_up_like_sigterm() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(LONG_NGINX);
    for (sig, name, code) in [
        (libc::SIGHUP, "SIGHUP", 129),
        (libc::SIGUSR1, "SIGUSR1", 138),
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut run = Run::start_with_env(
            &path,
            &["--docker-dir", &docker_dir_arg()],
            &[("TMPDIR", tmp.path())],
        );
        run.wait_for_stderr("nginx: answering after", Duration::from_secs(15 * 60));
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(containers_of(run.pid, &[]).len(), 1, "{name}");
        run.signal(sig);
        let f = run.finish(Duration::from_secs(30));
        assert_eq!(f.code, Some(code), "{name}: {}", f.describe());
        assert_no_container(&f);
        assert!(
            run_folders(tmp.path()).is_empty(),
            "{name}: {:?}",
            run_folders(tmp.path())
        );
        let record = run.record(&f);
        assert_eq!(
            record["status"]["state"], "interrupted",
            "{name}: {record:#}"
        );
        assert!(
            record["status"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains(name)),
            "{name}: {record:#}"
        );
        std::fs::remove_file(&run.out).ok();
    }
}

#[test]
fn gc_during_a_run_leaves_it_running() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(&LONG_NGINX.replace("duration = \"30s\"", "duration = \"3s\""));
    let mut run = Run::start(&path, &["--docker-dir", &docker_dir_arg()]);
    run.wait_for_stderr("nginx: answering after", Duration::from_secs(15 * 60));
    let gc = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .arg("gc")
        .output()
        .expect("benchctl gc");
    assert!(gc.status.success(), "{gc:?}");
    assert_eq!(
        containers_of(run.pid, &[]).len(),
        1,
        "gc removed a live run's container: {}",
        String::from_utf8_lossy(&gc.stdout)
    );
    let f = run.finish(Duration::from_secs(60));
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let record = run.record(&f);
    assert_eq!(record["status"]["state"], "complete", "{record:#}");
    assert_eq!(loads_of(&record, "nginx").len(), 1);
    assert_no_container(&f);
}
