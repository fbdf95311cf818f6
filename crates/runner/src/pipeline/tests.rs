//! The run's course against the fake fleet ([`crate::fleet::fake`]): which servers start, what
//! a failure at each step of a bring-up makes of a server, deaths and lost hosts, A/B order and
//! stopping, a cancellation at every step, and what each run leaves (nothing). No Docker: the
//! "containers" are HTTP servers of this process on 127.0.0.1, loaded by the real generator
//! with a few dozen requests.

mod against;
mod bringup;
mod cancel;
mod course;
mod hosts;
mod overload;

use super::{run_on, Problem, RunError, RunOptions, RunOutcome};
use crate::events::{Event, Observer, Recorder};
use crate::fleet::fake::{Fake, Script};
use report::{RunRecord, RunStatus, ServerStatus};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Two server kinds in the repository's folder shape, `web` and `alt`, and `cache`, which
/// fronts a `backend` server.
fn write_kinds(docker: &Path) {
    for kind in ["web", "alt"] {
        testsupport::write_busybox_kind(&docker.join(kind), "debian:bookworm-slim", 16, "");
    }
    let cache = docker.join("cache");
    testsupport::write_busybox_kind(&cache, "debian:bookworm-slim", 16, "");
    let manifest = cache.join("server.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str(
        "\n[options.backend]\ntype = \"server\"\nenv = \"BENCH_BACKEND\"\nrequired = true\nhelp = \"the server it fronts\"\n",
    );
    std::fs::write(&manifest, text).unwrap();
}

/// A scenario of this text in a folder of its own, with the kinds beside it.
struct Setup {
    dir: tempfile::TempDir,
    plan: scenario::Plan,
}

impl Setup {
    fn new(text: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let docker = dir.path().join("docker");
        write_kinds(&docker);
        let path = dir.path().join("fake.toml");
        std::fs::write(&path, text).unwrap();
        let kinds = super::kinds_for(&path, Some(&docker)).unwrap();
        let plan = scenario::load_file_with(&path, &kinds).unwrap_or_else(|e| panic!("{e}"));
        Setup { dir, plan }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out.json")
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            out: Some(self.out()),
            results_dir: self.dir.path().join("results"),
            // Watching the CPUs costs a quarter of a second a run; one test asks for it.
            system_sample: None,
            ..RunOptions::new()
        }
    }
}

/// Two servers of kind `web`, one document, the load small.
const TWO: &str = r#"
name = "fake"
runs = 1
[load]
requests = 40
concurrency = 2
timeout = "5s"
[[server]]
name = "a"
kind = "web"
[[server]]
name = "b"
kind = "alt"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#;

/// What a run did: its outcome, the fleet's account, and its events as lines.
struct Ran {
    outcome: Result<RunOutcome, RunError>,
    fake: Fake,
    events: Vec<String>,
}

impl Ran {
    fn ok(&self) -> &RunOutcome {
        self.outcome.as_ref().unwrap_or_else(|e| panic!("{e}"))
    }

    fn record(&self) -> &RunRecord {
        &self.ok().record
    }

    /// The lines of the events that start with `prefix`.
    fn lines(&self, prefix: &str) -> Vec<&str> {
        self.events
            .iter()
            .filter(|l| l.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// Why server `name` is unavailable (panics when it is not).
    fn reason(&self, name: &str) -> String {
        let s = self
            .record()
            .servers
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no server {name}"));
        match &s.status {
            ServerStatus::Unavailable { reason } => reason.clone(),
            other => panic!("{name} is {other:?}"),
        }
    }

    /// How many loads of server `name` were kept.
    fn loads_of(&self, name: &str) -> usize {
        self.record()
            .loads
            .iter()
            .filter(|l| l.server == name)
            .count()
    }

    /// The run left no container on any engine.
    fn left_nothing(&self) {
        assert_eq!(
            self.fake.running(),
            Vec::<String>::new(),
            "{:?}",
            self.fake.calls()
        );
    }

    /// The record on disk is the one the outcome holds, whole.
    fn saved_whole(&self, setup: &Setup) {
        let text = std::fs::read_to_string(setup.out()).unwrap();
        let on_disk: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(&on_disk, self.record());
    }
}

/// Passes events to a [`Recorder`] and cancels the run at the first whose line starts with
/// `at`.
struct CancelAt {
    lines: Recorder,
    at: Option<String>,
    cancel: crate::Cancel,
}

impl Observer for CancelAt {
    fn event(&self, event: &Event<'_>) {
        self.lines.event(event);
        let last = self.lines.lines().last().cloned().unwrap_or_default();
        if self.at.as_deref().is_some_and(|at| last.starts_with(at)) {
            self.cancel.cancel(format!("asked at `{last}`"));
        }
    }
}

async fn run_with(setup: &Setup, script: Script, opts: RunOptions, cancel_at: Option<&str>) -> Ran {
    let fake = Fake::new(script);
    let observer = Arc::new(CancelAt {
        lines: Recorder::default(),
        at: cancel_at.map(str::to_string),
        cancel: opts.cancel.clone(),
    });
    let outcome = run_on(
        &fake,
        &setup.plan,
        opts,
        Arc::clone(&observer) as Arc<dyn Observer>,
    )
    .await;
    let events = observer.lines.lines();
    Ran {
        outcome,
        fake,
        events,
    }
}

async fn run(setup: &Setup, script: Script) -> Ran {
    run_with(setup, script, setup.options(), None).await
}

fn problems(ran: &Ran) -> &[Problem] {
    &ran.ok().problems
}

fn complete(ran: &Ran) -> bool {
    ran.record().status == RunStatus::Complete
}
