//! Stopping a run from outside, and cleaning up after one that cannot stop in an orderly way.
//!
//! A [`Cancel`] is how a caller (the command line's Ctrl-C handler, a test) asks a run to end:
//! the load generator sees it within milliseconds, the pipeline stops between steps, removes its
//! containers, writes its record as interrupted and returns. The library never exits the
//! process.
//!
//! A [`Cleanup`] lists what a run has made that must not outlive it (its containers, its private
//! folder, its results file's temporary): for a caller that must end the process *now* (a second
//! Ctrl-C) while the run is still busy, [`Cleanup::now`] removes them from whatever thread
//! calls it, without the run's help.

use loadgen::StopFlag;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Asks a run to stop. Clones share the same state.
#[derive(Debug, Clone)]
pub struct Cancel {
    stop: StopFlag,
    reason: Arc<watch::Sender<Option<String>>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel {
            stop: StopFlag::new(),
            reason: Arc::new(watch::channel(None).0),
        }
    }

    /// Asks the run to stop; `reason` ("interrupted (SIGINT)") goes into its record. Only the
    /// first reason is kept.
    pub fn cancel(&self, reason: impl Into<String>) {
        let reason = reason.into();
        self.reason.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
        self.stop.stop();
    }

    /// Why the run was asked to stop, once it was.
    pub fn reason(&self) -> Option<String> {
        self.reason.borrow().clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.stop.is_stopped()
    }

    /// Resolves once [`cancel`](Self::cancel) was called.
    pub async fn cancelled(&self) {
        let mut rx = self.reason.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// The flag the load generator watches.
    pub(crate) fn stop_flag(&self) -> &StopFlag {
        &self.stop
    }
}

/// What a run has made that must not outlive it. Clones share the same list.
#[derive(Debug, Clone, Default)]
pub struct Cleanup {
    inner: Arc<Mutex<Leftovers>>,
}

#[derive(Debug, Default)]
struct Leftovers {
    run_id: Option<String>,
    /// The engines the run's containers may be on; empty for this machine's alone.
    endpoints: Vec<orchestrator::Endpoint>,
    /// The scenario that names the other engines, for the advice when some cannot be swept.
    scenario: Option<PathBuf>,
    paths: Vec<PathBuf>,
}

/// How long [`Cleanup::now`] waits for the Docker daemon.
const CLEANUP_BOUND: Duration = Duration::from_secs(15);

impl Cleanup {
    pub fn new() -> Cleanup {
        Cleanup::default()
    }

    pub(crate) fn set_run(&self, run_id: &str) {
        self.lock().run_id = Some(run_id.to_string());
    }

    /// The engines the run uses (this machine's and its hosts'), and the scenario that names
    /// them.
    pub(crate) fn set_endpoints(&self, endpoints: Vec<orchestrator::Endpoint>, scenario: &Path) {
        let mut l = self.lock();
        l.endpoints = endpoints;
        l.scenario = Some(scenario.to_path_buf());
    }

    /// A file or folder to remove if the run cannot.
    pub(crate) fn add_path(&self, path: PathBuf) {
        self.lock().paths.push(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Leftovers> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Removes everything listed: the run's containers (with a Docker connection of its own,
    /// waiting at most 15 s) and its files and folders. Callable from any thread, any number of
    /// times; what is already gone is skipped. Returns what could not be removed.
    pub fn now(&self) -> Vec<Leftover> {
        let (run_id, paths, mut endpoints, scenario) = {
            let l = self.lock();
            (
                l.run_id.clone(),
                l.paths.clone(),
                l.endpoints.clone(),
                l.scenario.clone(),
            )
        };
        if endpoints.is_empty() {
            endpoints.push(orchestrator::Endpoint::Local);
        }
        let mut problems = Vec::new();
        if let Some(id) = run_id {
            if let Err(e) = orchestrator::remove_run_blocking_on(&endpoints, &id, CLEANUP_BOUND) {
                let remote = endpoints.iter().any(|e| !e.is_local());
                problems.push(Leftover::Containers {
                    run_id: id,
                    error: e.to_string(),
                    scenario: scenario.filter(|_| remote),
                });
            }
        }
        for p in paths {
            let r = match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                Ok(_) => std::fs::remove_file(&p),
                Err(_) => Ok(()),
            };
            if let Err(e) = r {
                if e.kind() != std::io::ErrorKind::NotFound {
                    problems.push(Leftover::Path {
                        path: p,
                        error: e.to_string(),
                    });
                }
            }
        }
        problems
    }
}

/// What a last-moment [`Cleanup::now`] could not remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    /// The containers of run `run_id`, on one of its engines.
    Containers {
        run_id: String,
        error: String,
        /// The run's scenario when some of its engines are other machines' (removing what is
        /// left there needs to know them).
        scenario: Option<PathBuf>,
    },
    /// A file or folder the run made.
    Path { path: PathBuf, error: String },
}
