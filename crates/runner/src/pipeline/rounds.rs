//! The rounds: every server and document in turn (both sides back to back in ABBA order in an
//! A/B run), each load measured again at smaller shares while headroom asks, and kept.

use super::ctx::{available, Ctx, Live};
use super::turn::{LoadAt, Look, Measured, Turn};
use crate::against::AgainstPlan;
use crate::error::{io, RunError};
use crate::events::Event;
use crate::fleet::{Container, Engine};
use crate::headroom::{Headroom, MAX_TRIES};
use crate::results::Results;
use crate::{headroom, rundir};
use orchestrator::ExpectedDoc;
use report::{AbStop, LoadRecord, RunRecord};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The warm-up of a fresh container's first load in a round of an A/B run.
pub(super) const FRESH_WARMUP: Duration = Duration::from_millis(250);

impl<E: Engine> Ctx<'_, E> {
    pub(super) async fn execute(
        &self,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<(), RunError> {
        let plan = self.plan;
        let docroot = self.run_dir.docroot();
        let docs = scenario::materialize(plan, &docroot).map_err(|e| RunError::Io {
            context: format!("writing the document {}", e.name),
            source: e.source,
        })?;
        rundir::open_to_servers(&docroot).map_err(io("opening the documents to the servers"))?;
        let expected: Vec<ExpectedDoc> = docs
            .iter()
            .map(|d| ExpectedDoc {
                url_path: d.url_path.clone(),
                length: d.len,
                sha256_hex: d.sha256.clone(),
            })
            .collect();

        if !plan.generators.is_empty() {
            let binary = crate::generators::binary(self.opts.generator_binary.as_deref())?;
            // Generators run as Docker containers on their hosts' engines.
            let docker: Vec<Option<orchestrator::Orchestrator>> = self
                .engines
                .iter()
                .map(|e| e.as_ref().and_then(|e| e.docker().cloned()))
                .collect();
            if let Some(&h) = plan.generators.iter().find(|&&h| docker[h + 1].is_none()) {
                return Err(RunError::Invalid(format!(
                    "[load] generators: host {} has no Docker engine to run a generator on",
                    plan.hosts[h].name
                )));
            }
            let gens = crate::generators::prepare(
                plan,
                &docker,
                &binary,
                self.run_dir.path(),
                self.run_id,
                self.observer,
            )
            .await?;
            let _ = self.generators.set(gens);
        }

        // Which servers to bring up: the ones asked for and the servers they need.
        let only = &self.opts.only;
        let mut wanted: Vec<bool> = plan
            .servers
            .iter()
            .map(|s| only.is_empty() || only.contains(&s.name))
            .collect();
        for i in (0..plan.servers.len()).rev() {
            if wanted[i] {
                for d in plan.servers[i].depends_on() {
                    wanted[d] = true;
                }
            }
        }

        let mut live: Vec<Live<E>> = Vec::new();
        for (i, want) in wanted.iter().enumerate() {
            if !want {
                continue;
            }
            let srec = self.start_server(i, &expected, &mut live, None).await;
            record.servers.push(srec);
            results.save(record, self.observer);
        }
        // An A/B run's baseline side: the same servers from the baseline record's images.
        let mut base_live: Vec<Live<E>> = Vec::new();
        if let Some(ab) = self.ab {
            for (i, want) in wanted.iter().enumerate() {
                let Some(image) = ab.images.get(&i).filter(|_| *want) else {
                    continue;
                };
                let srec = self
                    .start_server(i, &expected, &mut base_live, Some(image))
                    .await;
                if let Some(a) = record.against.as_mut() {
                    a.servers.push(srec);
                }
                results.save(record, self.observer);
            }
        }

        // Per server and document, the CPU share headroom settled on; per container, the
        // share it has now.
        let mut shares: HashMap<(usize, String), f64> = HashMap::new();
        let mut applied: HashMap<(bool, usize), Option<f64>> = HashMap::new();
        let headroom = self.opts.headroom == Headroom::Auto;
        let rounds_started = Instant::now();
        let mut last_round = Duration::ZERO;
        let mut stop = None;
        for round in 0..self.runs {
            if let Some(ab) = self.ab {
                // No round starts that the last one says would end beyond the budget.
                if round > 0 && rounds_started.elapsed() + last_round > ab.against.budget {
                    stop = Some(AbStop::Time);
                    break;
                }
            }
            let round_started = Instant::now();
            if let Some(ab) = self.ab.filter(|ab| ab.against.fresh && round > 0) {
                // Every round on fresh containers of both sides: what differs from one
                // container to the next of the same image (where its memory landed, how its
                // workers were spawned) then varies from round to round, where the interval
                // sees it, instead of favouring one side for the whole run.
                self.renew_both(
                    round,
                    [&mut live, &mut base_live],
                    &expected,
                    ab,
                    record,
                    results,
                )
                .await;
                applied.clear();
            }
            for l in &live {
                let server = &plan.servers[l.index];
                if !only.is_empty() && !only.contains(&server.name) {
                    continue;
                }
                for (doc, spec) in docs.iter().zip(&plan.documents) {
                    if self.opts.cancel.is_cancelled() {
                        return Ok(());
                    }
                    if !available(&record.servers, &server.name) {
                        break;
                    }
                    let Some(ab) = self.ab else {
                        // The share this server had for this document last round, else the
                        // scenario's: headroom found once holds for the later rounds.
                        let key = (l.index, doc.url_path.clone());
                        let share = shares.get(&key).copied().or(plan.cpus.server_share);
                        let at = LoadAt {
                            round,
                            server,
                            doc,
                            spec,
                        };
                        let turn = self
                            .one_load(l, &live, at, share, headroom, &mut applied)
                            .await?;
                        match turn {
                            Turn::Stopped => return Ok(()),
                            Turn::Died(deaths) => {
                                self.report_deaths(record, results, deaths, false);
                                break;
                            }
                            Turn::Measured(measured, share) => {
                                if let Some(s) = share {
                                    shares.insert(key, s);
                                }
                                // With headroom, every load says what it had, capped or not,
                                // so that requests/s per core compares servers capped and not
                                // alike.
                                let share =
                                    share.or(headroom.then_some(plan.cpus.servers.len() as f64));
                                self.keep_load(record, results, at, *measured, share, false);
                            }
                        }
                        continue;
                    };
                    // A/B: the same server and document on both sides, back to back, baseline
                    // first in even rounds and candidate first in odd ones (ABBA).
                    let Some(b) = base_live.iter().find(|b| b.index == l.index) else {
                        break;
                    };
                    let base_servers = record.against.as_ref().map_or(&[][..], |a| &a.servers);
                    if !available(base_servers, &server.name) {
                        break;
                    }
                    let base_share = ab.share(plan, &server.name, &spec.name);
                    let cand_share = match ab.slowed.get(&l.index) {
                        Some(f) => Some(f * ab.used(plan, &server.name, &spec.name)),
                        None => base_share,
                    };
                    let order = if round % 2 == 0 {
                        [true, false]
                    } else {
                        [false, true]
                    };
                    // A fresh container's first load of the round starts warm: its first
                    // requests (workers spawned, pages touched) vary from one container to the
                    // next and would add their noise to the round.
                    let warmed;
                    let spec = if ab.against.fresh && std::ptr::eq(spec, &plan.documents[0]) {
                        let mut s = spec.clone();
                        s.load.warmup = s.load.warmup.max(FRESH_WARMUP);
                        warmed = s;
                        &warmed
                    } else {
                        spec
                    };
                    let mut died = false;
                    for baseline in order {
                        let (lv, lives, share) = if baseline {
                            (b, &base_live, base_share)
                        } else {
                            (l, &live, cand_share)
                        };
                        let at = LoadAt {
                            round,
                            server,
                            doc,
                            spec,
                        };
                        let turn = self
                            .one_load(lv, lives, at, share, false, &mut applied)
                            .await?;
                        match turn {
                            Turn::Stopped => return Ok(()),
                            Turn::Died(deaths) => {
                                self.report_deaths(record, results, deaths, baseline);
                                died = true;
                                break;
                            }
                            Turn::Measured(measured, share) => {
                                self.keep_load(record, results, at, *measured, share, baseline)
                            }
                        }
                    }
                    if died {
                        break;
                    }
                }
            }
            last_round = round_started.elapsed();
            if let Some(ab) = self.ab {
                match self.look(ab, record, round) {
                    Look::Go => {}
                    Look::Stop(why) => {
                        stop = why;
                        break;
                    }
                }
            }
        }
        if let Some(a) = record.against.as_mut() {
            a.stop = Some(stop.unwrap_or(AbStop::Rounds));
            results.save(record, self.observer);
        }
        if let Some(spec) = &self.capacity {
            // Capacity is searched at the scenario's share: headroom's lower shares were for
            // the loads whose generator could not keep up.
            for l in &live {
                self.apply_share(l, plan.cpus.server_share, &mut applied)
                    .await
                    .map_err(|e| {
                        RunError::Step(format!("{}: {e:#}", plan.servers[l.index].name))
                    })?;
            }
            self.search_capacity(spec, record, results, &live, &docs)
                .await?;
        }
        for l in live.into_iter().chain(base_live) {
            if self.host_name(l.index).is_some_and(|h| self.is_lost(h)) {
                // Not waited for again: the run's last sweep tries that engine once more
                // and says what stays there.
                l.guard.leak();
            } else {
                let _ = l.guard.remove().await;
            }
        }
        Ok(())
    }

    /// Both sides of an A/B run on fresh containers for round `round` (counted from 0).
    async fn renew_both(
        &self,
        round: u32,
        sides: [&mut Vec<Live<E>>; 2],
        expected: &[ExpectedDoc],
        ab: &AgainstPlan,
        record: &mut RunRecord,
        results: &mut Results,
    ) {
        let t = Instant::now();
        let (mut started, mut not_removed) = (0, 0);
        for baseline in [false, true] {
            let side = &mut *sides[usize::from(baseline)];
            let r = self.renew(side, expected, ab).await;
            started += r.started;
            not_removed += r.not_removed;
            if !r.lost.is_empty() {
                self.report_deaths(record, results, r.lost, baseline);
            }
        }
        self.observer.event(&Event::AbFresh {
            round: round + 1,
            containers: started,
            not_removed,
            seconds: t.elapsed().as_secs_f64(),
        });
    }

    /// An A/B run's look at the paired comparison after round `round` (counted from 0):
    /// whether another round is worth its time.
    fn look(&self, ab: &AgainstPlan, record: &RunRecord, round: u32) -> Look {
        let Some(cmp) = report::paired::compare_record(record) else {
            return Look::Stop(None);
        };
        // The stopping rule acts only at its scheduled looks: the level of each
        // interval was set for those.
        let at = report::paired::look_rounds(
            report::paired::MIN_ROUNDS,
            ab.against.max_rounds,
            report::Looks::Growing,
        );
        let looked = at.contains(&(round + 1));
        let settled = looked && cmp.settled();
        self.observer.event(&Event::AbLook {
            round: round + 1,
            rounds: self.runs,
            undecided: cmp.undecided(),
            gated: cmp.groups.iter().filter(|g| g.gated().is_some()).count(),
            looked,
            next_look: at.into_iter().find(|&r| r > round + 1),
        });
        if settled {
            return Look::Stop(Some(AbStop::Decided));
        }
        if cmp.groups.is_empty() {
            // Nothing is measured on both sides any more: more rounds cannot help.
            return Look::Stop(None);
        }
        Look::Go
    }

    /// One load of one server and document at CPU share `share`, measured again at smaller
    /// shares while `auto` headroom says the generator had none.
    pub(super) async fn one_load(
        &self,
        l: &Live<E>,
        live: &[Live<E>],
        at: LoadAt<'_>,
        mut share: Option<f64>,
        auto: bool,
        applied: &mut HashMap<(bool, usize), Option<f64>>,
    ) -> Result<Turn, RunError> {
        let LoadAt {
            round, doc, spec, ..
        } = at;
        let shown = self.shown(l.index, l.baseline);
        // A server that died (before its turn or during the load), or one whose backend did,
        // is reported and skipped from here on; the others still run.
        let during = format!("before or during the load of {}", doc.url_path);
        if let Some(death) = self.find_death(l, live, &during).await? {
            return Ok(Turn::Died(death));
        }
        self.observer.event(&Event::LoadStarting {
            round: round + 1,
            rounds: self.runs,
            server: &shown,
            url_path: &doc.url_path,
            load: &spec.load,
        });
        let mut tries = 0;
        loop {
            tries += 1;
            self.apply_share(l, share, applied)
                .await
                .map_err(|e| RunError::Step(format!("{shown}: {e:#}")))?;
            let m = self.measure(l, &spec.load, &doc.url_path, true).await;
            if let Some(death) = self.find_death(l, live, &during).await? {
                return Ok(Turn::Died(death));
            }
            let Some(measured) =
                m.map_err(|e| RunError::Step(format!("{shown} {}: {e}", doc.url_path)))?
            else {
                return Ok(Turn::Stopped); // stopped mid-load: a partial load is not kept
            };
            let reading = self.reading(&measured.load, measured.usage.as_ref(), share);
            let next = (auto && tries < MAX_TRIES)
                .then(|| headroom::next_share(&reading, scenario::MIN_SERVER_SHARE))
                .flatten();
            let Some(next) = next else {
                return Ok(Turn::Measured(Box::new(measured), share));
            };
            self.observer.event(&Event::Headroom {
                server: &shown,
                url_path: &doc.url_path,
                share,
                generator: reading.generator,
                next,
            });
            share = Some(next);
        }
    }

    /// Records a measured load, made at CPU share `share`, on its side and saves the record.
    pub(super) fn keep_load(
        &self,
        record: &mut RunRecord,
        results: &mut Results,
        at: LoadAt<'_>,
        measured: Measured,
        share: Option<f64>,
        baseline: bool,
    ) {
        let LoadAt {
            round,
            server,
            doc,
            spec,
        } = at;
        let Measured {
            load,
            usage,
            generators,
        } = measured;
        // With several generators the load was client-bound when any of them was.
        let client_bound =
            report::record::is_client_bound(&load) || generators.iter().any(|g| g.client_bound);
        let rec = LoadRecord {
            server: server.name.clone(),
            document: spec.name.clone(),
            url_path: doc.url_path.clone(),
            round,
            load,
            server_usage: usage,
            client_bound,
            server_share: share,
            protocol: report::Protocol::of(self.plan.tls, self.plan.http2),
            streams: self.plan.http2.then_some(spec.load.streams),
            generators,
        };
        let loads = match (baseline, record.against.as_mut()) {
            (true, Some(a)) => &mut a.loads,
            _ => &mut record.loads,
        };
        loads.push(rec);
        self.observer.event(&Event::LoadDone {
            round: round + 1,
            rounds: self.runs,
            record: loads.last().expect("just pushed"),
            baseline,
        });
        results.save(record, self.observer);
    }
}
