//! Shared set-up for the runner's tests: they drive whole runs in-process against the real
//! Docker daemon, with the repository's server images, one run at a time.

#![allow(dead_code)]

pub use runner::Recorder;
use std::path::{Path, PathBuf};

pub use testsupport::{exclusive, repo_root};

/// Whether a daemon answers; without one the test skips, except in CI where it fails.
pub async fn daemon_or_skip(test: &str) -> bool {
    testsupport::ok_or_skip(
        &format!("{test}: no Docker daemon"),
        orchestrator::Orchestrator::connect().await,
    )
    .is_some()
}

/// A scenario file `name.toml` with `text` in a fresh folder.
pub fn scenario(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).expect("write the scenario");
    (dir, path)
}

/// The scenario at `path` with the server kinds of `docker_dir`.
pub fn plan_with(path: &Path, docker_dir: &Path) -> scenario::Plan {
    let kinds = runner::kinds_for(path, Some(docker_dir)).expect("the docker folder");
    scenario::load_file_with(path, &kinds).unwrap_or_else(|e| panic!("{e}"))
}

/// A run of the scenario `text` with the repository's kinds, whole, which must succeed: its
/// folder (the record is `run.json` there), plan, outcome and the lines it reported.
pub async fn run_whole(
    text: &str,
) -> (
    tempfile::TempDir,
    scenario::Plan,
    runner::RunOutcome,
    Vec<String>,
) {
    let (dir, path) = scenario(text);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let rec = std::sync::Arc::new(Recorder::default());
    let opts = runner::RunOptions {
        out: Some(dir.path().join("run.json")),
        ..runner::RunOptions::new()
    };
    let outcome = runner::run(&plan, opts, rec.clone()).await.unwrap();
    let lines = rec.lines();
    assert!(outcome.succeeded(), "{:?}\n{lines:#?}", outcome.problems);
    (dir, plan, outcome, lines)
}

/// A copy of the repository's docker folder in which `kind`'s Dockerfile fails to build.
pub fn docker_dir_with_broken(kinds: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = repo_root().join("docker");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_dir() {
            continue;
        }
        let to = dir.path().join(e.file_name());
        std::fs::create_dir(&to).unwrap();
        for f in std::fs::read_dir(e.path()).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
    }
    for k in kinds {
        std::fs::write(
            dir.path().join(k).join("Dockerfile"),
            "FROM debian:bookworm-slim\nRUN echo 'this server does not build here' >&2 && exit 3\n",
        )
        .unwrap();
    }
    dir
}

pub async fn docker() -> bollard::Docker {
    bollard::Docker::connect_with_defaults()
        .unwrap()
        .negotiate_version()
        .await
        .unwrap()
}

/// The ids of the containers carrying every one of `labels` (`key=value`), running or not.
pub async fn containers_labelled(labels: &[String]) -> Vec<String> {
    use bollard::query_parameters::ListContainersOptionsBuilder;
    let filters = std::collections::HashMap::from([("label".to_string(), labels.to_vec())]);
    docker()
        .await
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
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

/// The ids of the containers of run `run_id`, running or not.
pub async fn containers_of_run(run_id: &str) -> Vec<String> {
    containers_labelled(&[format!("benchctl.run={run_id}")]).await
}

/// The run folders in the system's temporary folder that this process owns.
pub fn my_run_folders() -> Vec<PathBuf> {
    let me = std::process::id().to_string();
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("benchctl-run-"))
        .filter(|e| {
            std::fs::read_to_string(e.path().join("owner"))
                .is_ok_and(|o| o.split(':').next() == Some(me.as_str()))
        })
        .map(|e| e.path())
        .collect()
}
