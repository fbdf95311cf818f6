//! The run's context: what every step of a run reads (the plan, the options, the engines, the
//! run's folder and id, the observer, the scheme), the servers it started ([`Live`]), and the
//! last sweep of the run's containers.

use crate::against::AgainstPlan;
use crate::events::Observer;
use crate::fleet::Engine;
use crate::options::RunOptions;
use crate::rundir::RunDir;
use crate::schedule::Schedule;
use orchestrator::{BuildSource, BuiltImage, Scheme};
use scenario::{HostImages, Plan};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Ctx<'a, E: Engine> {
    /// This machine's engine, then each `[[host]]`'s, in the plan's order; connected when a
    /// server runs there.
    pub(super) engines: &'a [Option<E>],
    pub(super) plan: &'a Plan,
    pub(super) sources: &'a BTreeMap<String, BuildSource>,
    /// The rounds, and an A/B run's order, renewals, budget and looks.
    pub(super) schedule: Schedule,
    pub(super) opts: &'a RunOptions,
    pub(super) run_dir: &'a RunDir,
    pub(super) run_id: &'a str,
    pub(super) observer: &'a dyn Observer,
    pub(super) observer_arc: &'a Arc<dyn Observer>,
    /// The capacity search to make after the loads, if any.
    pub(super) capacity: Option<scenario::CapacitySpec>,
    /// The staircase past the capacity to climb after the searches, if any.
    pub(super) overload: Option<scenario::OverloadSpec>,
    /// How servers are reached first (readiness; the first document's load): HTTPS trusting
    /// the run's own authority when the scenario serves TLS, with the folder of the
    /// certificate the servers get; HTTP/2 or HTTP/3 when that load speaks it. Each load's
    /// is `super::scheme_over(scheme, its version)`.
    pub(super) scheme: Scheme,
    pub(super) tls_dir: Option<PathBuf>,
    /// An A/B run's plan.
    pub(super) against: Option<&'a AgainstPlan>,
    /// `[load] generators`, ready once the run has made their image on each host.
    pub(super) generators: std::sync::OnceLock<Vec<crate::generators::Generator>>,
    /// The `[[host]]`s whose engine stopped answering about a server during the run.
    pub(super) lost: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The servers that cannot be measured (any more), by side (`true`: an A/B run's baseline)
    /// and index: the run's own account of what to measure next, apart from the record it
    /// writes.
    pub(super) down: std::sync::Mutex<std::collections::BTreeSet<(bool, usize)>>,
}

/// A server that was started and verified.
pub(super) struct Live<E: Engine> {
    pub(super) index: usize,
    pub(super) guard: E::Container,
    /// In a TLS run, where it also serves plain HTTP for a cache in front of it.
    pub(super) plain: Option<SocketAddr>,
    /// On the baseline side of an A/B run.
    pub(super) baseline: bool,
    /// The image it runs: a fresh container for the next round runs the same one.
    pub(super) image: BuiltImage,
}

impl<E: Engine> Ctx<'_, E> {
    /// Whether `--only` leaves the server `name` in the run (every server without it).
    pub(super) fn chosen(&self, name: &str) -> bool {
        let only = &self.opts.only;
        only.is_empty() || only.iter().any(|o| o == name)
    }

    /// Whatever happened, no container of this run outlives it. The guards of the work removed
    /// theirs as they dropped; this catches any a cancelled step had just made. Every engine at
    /// once, each within its own bounds: one that stopped answering keeps its containers, and
    /// the run says where (`None`: this machine's engine).
    pub(super) async fn sweep(&self) -> Vec<(Option<String>, String)> {
        let plan = self.plan;
        let run_id = self.run_id;
        let swept =
            futures_util::future::join_all(self.engines.iter().enumerate().filter_map(|(i, e)| {
                let host = i.checked_sub(1).map(|h| plan.hosts[h].name.clone());
                // An engine lost during the run gets one short try: it may be back.
                let bound = match &host {
                    Some(h) if self.is_lost(h) => LOST_ENGINE_SWEEP,
                    _ => SWEEP_BOUND,
                };
                e.as_ref().map(|orch| async move {
                    let r = match tokio::time::timeout(bound, orch.remove_run(run_id)).await {
                        Ok(r) => r.map(|_| ()).map_err(|e| e.to_string()),
                        Err(_) => Err(format!("its engine did not answer within {bound:?}")),
                    };
                    (host, r)
                })
            }))
            .await;
        swept
            .into_iter()
            .filter_map(|(host, r)| r.err().map(|e| (host, e)))
            .collect()
    }

    /// Server `i` (on the baseline side when `baseline`) cannot be measured from here on.
    pub(super) fn mark_down(&self, baseline: bool, i: usize) {
        self.down
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((baseline, i));
    }

    /// Whether server `i` (on the baseline side when `baseline`) is still to be measured.
    pub(super) fn is_up(&self, baseline: bool, i: usize) -> bool {
        !self
            .down
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&(baseline, i))
    }

    /// The `[[host]]` whose engine runs server `i`; `None` for this machine's.
    pub(super) fn host_name(&self, i: usize) -> Option<&str> {
        self.plan.servers[i]
            .host
            .map(|h| self.plan.hosts[h].name.as_str())
    }

    /// Whether server `i` runs on a `[[host]]` whose images are built here and shipped.
    pub(super) fn ships(&self, i: usize) -> bool {
        self.plan
            .host_of(&self.plan.servers[i])
            .is_some_and(|h| h.images == HostImages::Ship)
    }

    /// This machine's engine (connected before the run began when a server runs there or a
    /// host has its images shipped).
    pub(super) fn here(&self) -> &E {
        self.engines[0]
            .as_ref()
            .expect("this machine's engine is connected when a host's images are shipped")
    }

    /// The engine that runs server `i` (connected before the run began).
    pub(super) fn orch(&self, i: usize) -> &E {
        let engine = self.plan.servers[i].host.map_or(0, |h| h + 1);
        self.engines[engine]
            .as_ref()
            .expect("every engine a server uses is connected before the run starts")
    }

    /// A server's name as progress lines print it: the baseline side of an A/B run is marked.
    pub(super) fn shown(&self, i: usize, baseline: bool) -> String {
        let name = &self.plan.servers[i].name;
        if baseline {
            format!("{name} [baseline]")
        } else {
            name.clone()
        }
    }
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// How long the run's last sweep waits for an engine: a listing, the removals and the wait
/// until they are gone, each request within the engine's own answer bound.
pub(super) const SWEEP_BOUND: Duration = Duration::from_secs(60);
/// The same for an engine that stopped answering during the run: one short try.
pub(super) const LOST_ENGINE_SWEEP: Duration = Duration::from_secs(5);

/// The servers of both sides of a run (the baseline side empty unless it is an A/B run).
pub(super) struct Sides<'a, E: Engine> {
    pub(super) live: &'a [Live<E>],
    pub(super) base: &'a [Live<E>],
}

impl<E: Engine> Clone for Sides<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: Engine> Copy for Sides<'_, E> {}
