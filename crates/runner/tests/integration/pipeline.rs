//! Whole runs driven in-process through [`runner::run`], against the real Docker daemon and the
//! repository's server images:
//! - a run measures every server and leaves no container and no private folder behind, and
//!   its containers run confined (checked while they run);
//! - a run that measured nothing, or lost a required server, says so; an optional one may go;
//! - removing stale leftovers (what `benchctl gc` does) during a run leaves the run alone;
//! - two runs given the same results file: one runs, the other is refused before any work;
//! - a results file on a full disk: the run goes on and its record is saved elsewhere, whole.

use crate::common::*;
use report::RecordIo;
use report::{RunRecord, RunStatus, ServerStatus};
use runner::{Problem, RunError, RunOptions, Saved};
use std::sync::Arc;

const TINY: &str = r#"
name = "tiny"
runs = 1
[load]
requests = 300
concurrency = 4
timeout = "10s"
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
"#;

fn options(out: &std::path::Path) -> RunOptions {
    RunOptions {
        out: Some(out.to_path_buf()),
        ..RunOptions::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_run_in_process_measures_and_leaves_nothing() {
    if !daemon_or_skip("a_whole_run_in_process_measures_and_leaves_nothing").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) = scenario(TINY);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let out = dir.path().join("x.json");
    let rec = Arc::new(Recorder::default());
    let (tx, rx) = std::sync::mpsc::channel();
    *rec.on_ready.lock().unwrap() = Some(tx);
    let run = tokio::spawn({
        let rec = Arc::clone(&rec);
        let opts = options(&out);
        async move { runner::run(&plan, opts, rec).await }
    });

    // While the first server runs: its container has no capability, no new privileges, a
    // read-only root, a pids limit, bounded logs and a non-root user.
    let server = tokio::task::spawn_blocking(move || rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(server, "nginx");
    let list = containers_labelled(&[
        "benchctl.server=nginx".to_string(),
        format!("benchctl.pid={}", std::process::id()),
    ])
    .await;
    assert_eq!(list.len(), 1, "{list:?}");
    let info = docker()
        .await
        .inspect_container(
            &list[0],
            None::<bollard::query_parameters::InspectContainerOptions>,
        )
        .await
        .unwrap();
    let hc = info.host_config.unwrap();
    assert_eq!(hc.cap_drop.as_deref(), Some(&["ALL".to_string()][..]));
    assert!(hc.cap_add.unwrap_or_default().is_empty());
    assert!(hc
        .security_opt
        .unwrap_or_default()
        .iter()
        .any(|o| o.starts_with("no-new-privileges")));
    assert_eq!(hc.readonly_rootfs, Some(true));
    assert_eq!(hc.pids_limit, Some(256));
    let log = hc.log_config.unwrap().config.unwrap();
    assert_eq!(log.get("max-size").map(String::as_str), Some("10m"));
    assert_eq!(info.config.unwrap().user.as_deref(), Some("33:33"));

    let outcome = run.await.unwrap().unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    assert_eq!(outcome.saved, Saved::At(out.clone()));
    let record = RunRecord::load(&out).unwrap();
    assert_eq!(record, outcome.record);
    assert_eq!(record.status, RunStatus::Complete);
    assert_eq!(record.loads.len(), 2);
    assert!(record.loads.iter().all(|l| l.load.failed == 0));
    assert_eq!(
        record.scenario.sha256,
        scenario::sha256_hex(TINY.as_bytes())
    );
    assert!(containers_of_run(&record.run_id).await.is_empty());
    assert!(my_run_folders().is_empty(), "{:?}", my_run_folders());
    assert!(!dir.path().join(".x.json.tmp").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_measured_nothing_fails_and_keeps_the_build_log() {
    if !daemon_or_skip("a_run_that_measured_nothing_fails_and_keeps_the_build_log").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let docker = docker_dir_with_broken(&["nginx", "apache"]);
    let (dir, path) = scenario(TINY);
    let plan = plan_with(&path, docker.path());
    let out = dir.path().join("x.json");
    let opts = RunOptions {
        out: Some(out.clone()),
        ..RunOptions::new()
    };
    let outcome = runner::run(&plan, opts, Arc::new(Recorder::default()))
        .await
        .unwrap();
    assert!(!outcome.succeeded());
    assert!(
        outcome.problems.contains(&Problem::NothingMeasured),
        "{:?}",
        outcome.problems
    );
    assert!(
        matches!(&outcome.record.status, RunStatus::Failed { reason } if reason.contains("no load was measured")),
        "{:?}",
        outcome.record.status
    );
    // The reason names the kept log, which says why.
    let ServerStatus::Unavailable { reason } = &outcome.record.servers[0].status else {
        panic!("{:?}", outcome.record.servers[0]);
    };
    let kept = dir.path().join("x.nginx.build.log");
    assert!(reason.contains(&kept.display().to_string()), "{reason}");
    // One line: the cause and where the log is; the log itself is not repeated.
    assert_eq!(reason.lines().count(), 1, "{reason}");
    assert!(
        reason.starts_with("image build failed: building the nginx image failed: "),
        "{reason}"
    );
    let log = std::fs::read_to_string(&kept).unwrap();
    assert!(log.contains("this server does not build here"), "{log}");
    assert_eq!(RunRecord::load(&out).unwrap().status, outcome.record.status);
    assert!(my_run_folders().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_server_may_be_unavailable_a_required_one_may_not() {
    if !daemon_or_skip("an_optional_server_may_be_unavailable_a_required_one_may_not").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let docker = docker_dir_with_broken(&["apache"]);
    for optional in [true, false] {
        let text = TINY.replace(
            "name = \"apache\"\nkind = \"apache\"",
            &format!("name = \"apache\"\nkind = \"apache\"\noptional = {optional}"),
        );
        let (dir, path) = scenario(&text);
        let plan = plan_with(&path, docker.path());
        let opts = RunOptions {
            out: Some(dir.path().join("x.json")),
            ..RunOptions::new()
        };
        let outcome = runner::run(&plan, opts, Arc::new(Recorder::default()))
            .await
            .unwrap();
        assert_eq!(outcome.record.loads.len(), 1, "nginx is measured");
        assert_eq!(outcome.record.status, RunStatus::Complete);
        assert_eq!(outcome.succeeded(), optional, "{:?}", outcome.problems);
        if !optional {
            assert!(
                matches!(&outcome.problems[..], [Problem::Unavailable { server, .. }] if server == "apache"),
                "{:?}",
                outcome.problems
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeping_stale_leftovers_during_a_run_leaves_it_running() {
    if !daemon_or_skip("sweeping_stale_leftovers_during_a_run_leaves_it_running").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let text = TINY.replace("requests = 300", "requests = 30000\nkeep_alive = true");
    let (dir, path) = scenario(&text);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let rec = Arc::new(Recorder::default());
    let (tx, rx) = std::sync::mpsc::channel();
    *rec.on_ready.lock().unwrap() = Some(tx);
    let run = tokio::spawn({
        let rec = Arc::clone(&rec);
        let opts = options(&dir.path().join("x.json"));
        async move { runner::run(&plan, opts, rec).await }
    });
    tokio::task::spawn_blocking(move || rx.recv())
        .await
        .unwrap()
        .unwrap();
    let orch = orchestrator::Orchestrator::connect().await.unwrap();
    orch.gc_stale().await.unwrap();
    runner::rundir::sweep_stale(&std::env::temp_dir());
    let outcome = run.await.unwrap().unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    assert_eq!(outcome.record.loads.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_given_the_same_results_file_lose_nothing() {
    if !daemon_or_skip("two_runs_given_the_same_results_file_lose_nothing").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) =
        scenario(&TINY.replace("[[server]]\nname = \"apache\"\nkind = \"apache\"\n", ""));
    let plan = plan_with(&path, &repo_root().join("docker"));
    let out = dir.path().join("same.json");
    let a = runner::run(&plan, options(&out), Arc::new(Recorder::default()));
    let b = runner::run(&plan, options(&out), Arc::new(Recorder::default()));
    let (a, b) = tokio::join!(a, b);
    let (won, lost) = match (a, b) {
        (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
        (a, b) => panic!("exactly one run may claim the file: {a:?} / {b:?}"),
    };
    assert!(matches!(lost, RunError::Results(_)), "{lost}");
    assert!(lost.is_bad_input());
    assert!(lost.to_string().contains("exists already"), "{lost}");
    assert!(won.succeeded(), "{:?}", won.problems);
    assert_eq!(RunRecord::load(&out).unwrap(), won.record);
}

/// A tmpfs of `size` mounted on a fresh folder; unmounted when dropped. `None` where mounting
/// is not allowed (not root) outside CI.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            testsupport::skip_or_fail("cannot mount a tmpfs (this test needs root)");
            return None;
        }
        Some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_loses_no_measurement() {
    if !daemon_or_skip("a_full_disk_loses_no_measurement").await {
        return;
    }
    // Room for the record as it starts, not for it with a load's histograms.
    let Some(disk) = SmallDisk::mount("8k") else {
        return;
    };
    let _one_at_a_time = exclusive();
    let (_dir, path) = scenario(TINY);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let out = disk.dir.path().join("x.json");
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(&plan, options(&out), Arc::clone(&rec) as Arc<_>)
        .await
        .unwrap();
    assert!(!outcome.succeeded());
    let lines = rec.lines();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("not written"))
            .count(),
        1,
        "the failure is reported once: {lines:?}"
    );
    let Saved::Rescued { wanted, at, error } = &outcome.saved else {
        panic!("{:?}", outcome.saved);
    };
    assert_eq!(wanted, &out);
    assert!(error.contains("No space left"), "{error}");
    let rescued = RunRecord::load(at).unwrap();
    std::fs::remove_file(at).unwrap();
    assert_eq!(rescued, outcome.record);
    assert_eq!(rescued.status, RunStatus::Complete);
    assert_eq!(rescued.loads.len(), 2, "every measurement is kept");
    // What the full disk holds is the last state that fit, never a torn file.
    let on_disk = RunRecord::load(&out).unwrap();
    assert!(on_disk.loads.len() < 2);
    assert!(!disk.dir.path().join(".x.json.tmp").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_servers_asked_for_are_started_and_judged() {
    if !daemon_or_skip("only_the_servers_asked_for_are_started_and_judged").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) = scenario(TINY);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let opts = RunOptions {
        only: vec!["apache".to_string()],
        ..options(&dir.path().join("x.json"))
    };
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(&plan, opts, Arc::clone(&rec) as Arc<_>)
        .await
        .unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    let names: Vec<&str> = outcome
        .record
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["apache"]);
    assert_eq!(outcome.record.loads.len(), 1);
    assert!(
        !rec.lines().iter().any(|l| l.contains("nginx")),
        "{:?}",
        rec.lines()
    );

    let bad = RunOptions {
        only: vec!["lighttpd".to_string()],
        ..options(&dir.path().join("y.json"))
    };
    let err = runner::run(&plan, bad, Arc::new(Recorder::default()))
        .await
        .unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert!(err.to_string().contains("it has: nginx, apache"), "{err}");
    assert!(!dir.path().join("y.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prebuilt_image_runs_as_it_is_but_never_as_root() {
    if !daemon_or_skip("a_prebuilt_image_runs_as_it_is_but_never_as_root").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let orch = orchestrator::Orchestrator::connect().await.unwrap();
    let nginx = runner::build_image(&orch, "nginx", &repo_root().join("docker/nginx"), None)
        .await
        .unwrap();
    let text = TINY.replace(
        "name = \"nginx\"\nkind = \"nginx\"",
        &format!(
            "name = \"nginx\"\nkind = \"nginx\"\nimage = \"{}\"",
            nginx.tag
        ),
    );
    // The base image runs as root and has no kind to say otherwise.
    let text = text.replace(
        "name = \"apache\"\nkind = \"apache\"",
        "name = \"plain\"\nimage = \"debian:bookworm-slim\"\noptional = true",
    );
    let (dir, path) = scenario(&text);
    let plan = plan_with(&path, &repo_root().join("docker"));
    assert_eq!(plan.servers[1].kind, "debian");
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(
        &plan,
        options(&dir.path().join("x.json")),
        Arc::clone(&rec) as Arc<_>,
    )
    .await
    .unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    let servers = &outcome.record.servers;
    assert_eq!(servers[0].image_tag, nginx.tag);
    assert!(
        !rec.lines().iter().any(|l| l == "building nginx"),
        "{:?}",
        rec.lines()
    );
    let ServerStatus::Unavailable { reason } = &servers[1].status else {
        panic!("{:?}", servers[1]);
    };
    assert!(reason.contains("runs as root"), "{reason}");
    assert_eq!(outcome.record.loads.len(), 1);
}

/// A scenario's CPU share caps every server from the start; with headroom, a load that left
/// the generator no headroom is measured again with a smaller share, each try lower than the
/// last, and the load kept says which share it had. Whether the generator saturates depends on
/// the machine, so the tries are checked for what they must be, however many there were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_share_caps_the_servers_and_headroom_lowers_it_while_the_generator_is_saturated() {
    if !daemon_or_skip(
        "a_cpu_share_caps_the_servers_and_headroom_lowers_it_while_the_generator_is_saturated",
    )
    .await
    {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) = scenario(
        r#"
name = "headroom"
runs = 2
[cpus]
server_share = 0.5
[load]
requests = 5000
concurrency = 50
timeout = "10s"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#,
    );
    let plan = plan_with(&path, &repo_root().join("docker"));
    assert_eq!(plan.cpus.server_share, Some(0.5));
    let out = dir.path().join("x.json");
    let rec = Arc::new(Recorder::default());
    let opts = RunOptions {
        headroom: runner::Headroom::Auto,
        ..options(&out)
    };
    let outcome = runner::run(&plan, opts, rec.clone()).await.unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    let lines = rec.lines();
    eprintln!("{lines:#?}");
    let record = &outcome.record;
    assert_eq!(record.loads.len(), 2);
    let mut share = 0.5;
    let mut events = lines
        .iter()
        .filter(|l| l.starts_with("headroom ") || l.starts_with("done "));
    for load in &record.loads {
        // The tries of this load, up to its "done".
        let mut tries = 0;
        for l in events.by_ref() {
            let Some(next) = l.strip_prefix("headroom nginx / ") else {
                break;
            };
            let next: f64 = next.parse().unwrap();
            assert!(next < share, "{next} after {share}: {lines:?}");
            share = next;
            tries += 1;
        }
        assert!(tries < runner::headroom::MAX_TRIES, "{lines:?}");
        assert_eq!(load.server_share, Some(share), "{lines:?}");
        let l = &load.load;
        let generator = l.client_cpu_s / l.elapsed_s / l.settings.threads as f64;
        // Kept because the generator had headroom, or the share could go no lower.
        assert!(
            generator < runner::headroom::TARGET || share <= scenario::MIN_SERVER_SHARE,
            "kept at {generator:.2} of the generator's cores with {share} of a core"
        );
        // The cap held (with some slack for how Docker samples).
        let usage = load.server_usage.expect("Docker gave the server's CPU");
        let cores = usage.cpu_s / l.elapsed_s;
        eprintln!(
            "round {}: share {share}, nginx used {cores:.3} cores, the generator {generator:.2}",
            load.round
        );
        assert!(
            cores <= share * 1.15 + 0.02,
            "used {cores:.3} cores under a share of {share}"
        );
    }
    assert!(containers_of_run(&record.run_id).await.is_empty());
}
