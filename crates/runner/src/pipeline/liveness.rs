//! Whether the servers still run: deaths found before and after each load, engines that stop
//! answering (a lost host), and an A/B side renewed on fresh containers each round.

use super::bringup::NotStarted;
use super::ctx::{Ctx, Live};
use crate::against::AgainstPlan;
use crate::error::RunError;
use crate::events::Event;
use crate::fleet::{Container, Engine};
use crate::results::Results;
use orchestrator::{ExpectedDoc, OrchestratorError};
use report::{RunRecord, ServerStatus};

/// One side of an A/B run on fresh containers (`Ctx::renew`).
pub(super) struct Renewed {
    pub(super) started: usize,
    /// Containers of the last round the engine did not remove.
    pub(super) not_removed: usize,
    /// Servers that could not start again, with why.
    pub(super) lost: Vec<(usize, String)>,
}

impl<E: Engine> Ctx<'_, E> {
    /// Whether `host`'s engine stopped answering during the run, about a server or a
    /// generator.
    pub(super) fn is_lost(&self, host: &str) -> bool {
        self.lost
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(host)
            || self
                .generators
                .get()
                .is_some_and(|g| g.iter().any(|g| g.name == host && g.is_lost()))
    }

    /// Replaces every container of one side of an A/B run by a fresh one of the same image, in
    /// dependency order (a cache's backend first, so the cache is told its new address): how
    /// many started, and the servers that could not start again, with why.
    pub(super) async fn renew(
        &self,
        side: &mut Vec<Live<E>>,
        expected: &[ExpectedDoc],
        against: &AgainstPlan,
    ) -> Renewed {
        let old: Vec<Live<E>> = std::mem::take(side);
        let mut keep = Vec::with_capacity(old.len());
        let mut removals = Vec::with_capacity(old.len());
        for l in old {
            removals.push(l.guard.remove());
            keep.push((l.index, l.baseline, l.image));
        }
        // Removed all at once: a force removal is a kill and a wait, most of it the engine's.
        // One that fails stays labelled for `benchctl gc`.
        let not_removed = futures_util::future::join_all(removals)
            .await
            .iter()
            .filter(|r| r.is_err())
            .count();
        let mut lost = Vec::new();
        for (index, baseline, image) in keep {
            let base_image = if baseline {
                against.images.get(&index)
            } else {
                None
            };
            match self
                .bring_up(index, expected, side, base_image, Some(&image))
                .await
            {
                Ok(up) => side.push(Live {
                    index,
                    guard: up.guard,
                    plain: up.plain,
                    baseline,
                    image,
                }),
                Err(NotStarted { reason, .. }) => lost.push((
                    index,
                    format!("a fresh container for the next round: {reason}"),
                )),
            }
        }
        Renewed {
            started: side.len(),
            not_removed,
            lost,
        }
    }

    /// Before a measurement of `l` after the loads (a capacity search, a staircase) `during`
    /// which it may die: false when the run was stopped, `l` is down, or it died (reported).
    pub(super) async fn still_measurable(
        &self,
        l: &Live<E>,
        live: &[Live<E>],
        during: &str,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<bool, RunError> {
        if self.opts.cancel.is_cancelled() || !self.is_up(false, l.index) {
            return Ok(false);
        }
        if let Some(death) = self.find_death(l, live, during).await? {
            self.report_deaths(record, results, death, false);
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether `l` or a server it needs has stopped: the servers to report, each with why.
    pub(super) async fn find_death(
        &self,
        l: &Live<E>,
        live: &[Live<E>],
        during: &str,
    ) -> Result<Option<Vec<(usize, String)>>, RunError> {
        let server = &self.plan.servers[l.index];
        if let Err(e) = self.orch(l.index).fail_if_exited(&l.guard).await {
            let what = self.ended(l.index, &e, during);
            let reason = self.explain(&server.name, &what, &e);
            return Ok(Some(vec![(l.index, reason)]));
        }
        for d in server.depends_on() {
            let Some(dep) = live.iter().find(|x| x.index == d) else {
                continue;
            };
            if let Err(e) = self.orch(d).fail_if_exited(&dep.guard).await {
                let dep_name = &self.plan.servers[d].name;
                let what = self.ended(d, &e, during);
                let reason = self.explain(dep_name, &format!("{what} on {}", server.name), &e);
                return Ok(Some(vec![
                    (d, reason),
                    (
                        l.index,
                        format!(
                            "{dep_name}, which it needs, {what}: what it served since came from its cache alone, so its loads stop here"
                        ),
                    ),
                ]));
            }
        }
        Ok(None)
    }

    /// What became of server `i`, whose liveness check failed with `e`: it died, or its engine
    /// could not say (a host cut off, an engine gone), which marks that host lost.
    pub(super) fn ended(&self, i: usize, e: &OrchestratorError, during: &str) -> String {
        if e.is_stop() {
            return format!("died {during}");
        }
        let host = self.host_name(i);
        if let Some(h) = host {
            self.lost
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(h.to_string());
        }
        format!(
            "lost contact with its engine{} {during}",
            host.map(|h| format!(" on {h}")).unwrap_or_default()
        )
    }

    /// Marks the servers of `deaths` unavailable, on the baseline side of an A/B run when
    /// `baseline`.
    pub(super) fn report_deaths(
        &self,
        record: &mut RunRecord,
        results: &mut Results,
        deaths: Vec<(usize, String)>,
        baseline: bool,
    ) {
        for (i, reason) in deaths {
            self.mark_down(baseline, i);
            let name = &self.plan.servers[i].name;
            self.observer.event(&Event::Unavailable {
                server: &self.shown(i, baseline),
                reason: &reason,
            });
            let servers = match (baseline, record.against.as_mut()) {
                (true, Some(a)) => &mut a.servers,
                _ => &mut record.servers,
            };
            if let Some(s) = servers.iter_mut().find(|s| &s.name == name) {
                s.status = ServerStatus::Unavailable { reason };
            }
        }
        results.save(record, self.observer);
    }
}
