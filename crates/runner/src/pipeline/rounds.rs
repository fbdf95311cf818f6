//! The rounds: every server and document in turn (in an A/B run both sides at once, or back to
//! back in ABBA order), each load measured again at smaller shares while headroom asks, and
//! kept.

use super::ctx::{Ctx, Live, Sides};
use super::turn::{Flow, LoadAt, Look, Measured, ShareBook, Turn};
use crate::against::AgainstPlan;
use crate::error::{io, RunError};
use crate::events::Event;
use crate::fleet::{Container, Engine};
use crate::headroom::{Headroom, MAX_TRIES};
use crate::results::Results;
use crate::schedule::Side;
use crate::{headroom, rundir};
use loadgen::HttpVersion;
use orchestrator::ExpectedDoc;
use report::{AgainstStop, LoadRecord, RunRecord};
use scenario::MaterializedDoc;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The warm-up of a fresh container's first load in a round of an A/B run.
pub(super) const FRESH_WARMUP: Duration = Duration::from_millis(250);

impl<E: Engine> Ctx<'_, E> {
    /// The run's work once it has its folder: the documents written, the generators and the
    /// servers started, the rounds, the capacity searches, and the servers removed.
    pub(super) async fn execute(
        &self,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<(), RunError> {
        let plan = self.plan;
        let (docs, expected) = self.documents()?;
        // An A/B run's budget counts from here: starting the servers is part of the run's time.
        let started = Instant::now();
        self.start_generators().await?;
        let (mut live, mut base_live) = self.start_servers(&expected, record, results).await;

        let mut book = ShareBook::default();
        // The longest round so far, leaving out the first once there are others: it alone
        // settles the shares (loads measured again) and starts no fresh containers.
        let (mut first_round, mut longest_round) = (Duration::ZERO, Duration::ZERO);
        let mut stop = None;
        for round in 0..self.schedule.rounds {
            let longest = if round == 1 {
                first_round
            } else {
                longest_round
            };
            if !self.schedule.may_start(round, started.elapsed(), longest) {
                stop = Some(AgainstStop::Time);
                break;
            }
            let round_started = Instant::now();
            if let Some(against) = self.against.filter(|_| self.schedule.renews(round)) {
                // Every round on fresh containers of both sides: what differs from one
                // container to the next of the same image (where its memory landed, how its
                // workers were spawned) then varies from round to round, where the interval
                // sees it, instead of favouring one side for the whole run.
                let sides = [&mut live, &mut base_live];
                self.renew_both(round, sides, &expected, against, record, results)
                    .await;
                book.applied.clear();
            }
            let sides = Sides {
                live: &live,
                base: &base_live,
            };
            if let Flow::Stop = self
                .round(round, &docs, sides, &mut book, record, results)
                .await?
            {
                return Ok(());
            }
            match round {
                0 => first_round = round_started.elapsed(),
                _ => longest_round = longest_round.max(round_started.elapsed()),
            }
            if self.against.is_some() {
                if let Look::Stop(why) = self.look(record, round) {
                    stop = why;
                    break;
                }
            }
        }
        if let Some(a) = record.against.as_mut() {
            a.stop = Some(stop.unwrap_or(AgainstStop::Rounds));
            results.save(record, self.observer);
        }
        if self.capacity.is_some() || self.overload.is_some() {
            // Capacity is searched, and servers held past it, at the scenario's share:
            // headroom's lower shares were for the loads whose generator could not keep up,
            // and the generator needs its own to offer several times a server's capacity.
            for l in &live {
                self.apply_share(l, plan.cpus.server_share, &mut book.applied)
                    .await
                    .map_err(|e| {
                        RunError::Step(format!("{}: {e:#}", plan.servers[l.index].name))
                    })?;
            }
        }
        if let Some(spec) = &self.capacity {
            self.search_capacity(spec, record, results, &live, &docs)
                .await?;
        }
        if let Some(spec) = &self.overload {
            self.climb_overload(spec, record, results, &live, &docs)
                .await?;
        }
        self.release(live.into_iter().chain(base_live)).await;
        Ok(())
    }

    /// Every document written to the run's document folder, opened to the servers, and what
    /// each server must serve of them.
    fn documents(&self) -> Result<(Vec<MaterializedDoc>, Vec<ExpectedDoc>), RunError> {
        let docroot = self.run_dir.docroot();
        let docs = scenario::materialize(self.plan, &docroot).map_err(|e| RunError::Io {
            context: format!("writing the document {}", e.name),
            source: e.source,
        })?;
        rundir::open_to_servers(&docroot).map_err(io("opening the documents to the servers"))?;
        let expected = docs
            .iter()
            .map(|d| ExpectedDoc {
                url_path: d.url_path.clone(),
                length: d.len,
                sha256_hex: d.sha256.clone(),
            })
            .collect();
        Ok((docs, expected))
    }

    /// `[load] generators`, started on their hosts' engines (as Docker containers) when the
    /// scenario names any.
    async fn start_generators(&self) -> Result<(), RunError> {
        let plan = self.plan;
        if plan.generators.is_empty() {
            return Ok(());
        }
        let binary = crate::generators::binary(self.opts.generator_binary.as_deref())?;
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
        Ok(())
    }

    /// Which servers to bring up: the ones asked for and the servers they need.
    fn wanted(&self) -> Vec<bool> {
        let plan = self.plan;
        let mut wanted: Vec<bool> = plan.servers.iter().map(|s| self.chosen(&s.name)).collect();
        for i in (0..plan.servers.len()).rev() {
            if wanted[i] {
                for d in plan.servers[i].depends_on() {
                    wanted[d] = true;
                }
            }
        }
        wanted
    }

    /// Every server wanted, in the scenario's order (a backend before the cache that fronts
    /// it), and on an A/B run the same servers from the baseline record's images; each one's
    /// record kept as it is known.
    async fn start_servers(
        &self,
        expected: &[ExpectedDoc],
        record: &mut RunRecord,
        results: &mut Results,
    ) -> (Vec<Live<E>>, Vec<Live<E>>) {
        let wanted = self.wanted();
        let mut live: Vec<Live<E>> = Vec::new();
        for (i, _) in wanted.iter().enumerate().filter(|(_, want)| **want) {
            let srec = self.start_server(i, expected, &mut live, None).await;
            record.servers.push(srec);
            results.save(record, self.observer);
        }
        let mut base_live: Vec<Live<E>> = Vec::new();
        if let Some(against) = self.against {
            for (i, want) in wanted.iter().enumerate() {
                let Some(image) = against.images.get(&i).filter(|_| *want) else {
                    continue;
                };
                let srec = self
                    .start_server(i, expected, &mut base_live, Some(image))
                    .await;
                if let Some(a) = record.against.as_mut() {
                    a.servers.push(srec);
                }
                results.save(record, self.observer);
            }
        }
        (live, base_live)
    }

    /// One round: every server measured (the ones `--only` names) on every document in turn.
    async fn round(
        &self,
        round: u32,
        docs: &[MaterializedDoc],
        sides: Sides<'_, E>,
        book: &mut ShareBook,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<Flow, RunError> {
        let plan = self.plan;
        for i in self.schedule.servers(round, sides.live.len()) {
            let l = &sides.live[i];
            let server = &plan.servers[l.index];
            if !self.chosen(&server.name) {
                continue;
            }
            for (doc, spec) in docs.iter().zip(&plan.documents) {
                if self.opts.cancel.is_cancelled() {
                    return Ok(Flow::Stop);
                }
                if !self.is_up(false, l.index) {
                    break;
                }
                let at = LoadAt {
                    round,
                    server,
                    doc,
                    spec,
                };
                let flow = match self.against {
                    None => {
                        self.single(l, sides.live, at, book, record, results)
                            .await?
                    }
                    Some(_) => self.pair(l, sides, at, book, record, results).await?,
                };
                match flow {
                    Flow::Next => {}
                    Flow::NextServer => break,
                    Flow::Stop => return Ok(Flow::Stop),
                }
            }
        }
        Ok(Flow::Next)
    }

    /// One server's load of one document, at the share headroom settled on for it.
    async fn single(
        &self,
        l: &Live<E>,
        live: &[Live<E>],
        at: LoadAt<'_>,
        book: &mut ShareBook,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<Flow, RunError> {
        let plan = self.plan;
        let headroom = self.opts.headroom == Headroom::Auto;
        // The share this server had for this document last round, else the scenario's:
        // headroom found once holds for the later rounds.
        let key = (l.index, at.doc.url_path.clone());
        let share = book.shares.get(&key).copied().or(plan.cpus.server_share);
        match self
            .one_load(l, live, at, share, headroom, &mut book.applied)
            .await?
        {
            Turn::Stopped => Ok(Flow::Stop),
            Turn::Died(deaths) => {
                self.report_deaths(record, results, deaths, false);
                Ok(Flow::NextServer)
            }
            Turn::Measured(measured, share) => {
                if let Some(s) = share {
                    book.shares.insert(key, s);
                }
                // With headroom, every load says what it had, capped or not, so that
                // requests/s per core compares servers capped and not alike.
                let share = share.or(headroom.then_some(plan.cpus.servers.len() as f64));
                self.keep_load(record, results, at, *measured, share, false);
                Ok(Flow::Next)
            }
        }
    }

    /// A/B: the same server and document on both sides, at the same time, or (`--in-turn`)
    /// back to back in the order the schedule gives (ABBA from a side drawn per server).
    async fn pair(
        &self,
        l: &Live<E>,
        sides: Sides<'_, E>,
        at: LoadAt<'_>,
        book: &mut ShareBook,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<Flow, RunError> {
        let plan = self.plan;
        let against = self
            .against
            .expect("a pair of loads is made on an A/B run only");
        let (server, spec) = (at.server, at.spec);
        let Some(b) = sides.base.iter().find(|b| b.index == l.index) else {
            return Ok(Flow::NextServer);
        };
        if !self.is_up(true, l.index) {
            return Ok(Flow::NextServer);
        }
        // A fresh container's first load of the round starts warm: its first requests (workers
        // spawned, pages touched) vary from one container to the next and would add their
        // noise to the round.
        let warmed;
        let at = if against.asked.fresh && std::ptr::eq(spec, &plan.documents[0]) {
            let mut s = spec.clone();
            s.load.warmup = s.load.warmup.max(FRESH_WARMUP);
            warmed = s;
            LoadAt {
                spec: &warmed,
                ..at
            }
        } else {
            at
        };
        if against.together {
            return self
                .together((b, l), sides, at, book, record, results)
                .await;
        }
        let (base_share, cand_share) =
            against.shares(plan, l.index, &server.name, &spec.name, None);
        let order = self
            .schedule
            .sides(at.round, l.index)
            .map(|side| side == Side::Baseline);
        for baseline in order {
            let (lv, lives, share) = if baseline {
                (b, sides.base, base_share)
            } else {
                (l, sides.live, cand_share)
            };
            match self
                .one_load(lv, lives, at, share, false, &mut book.applied)
                .await?
            {
                Turn::Stopped => return Ok(Flow::Stop),
                Turn::Died(deaths) => {
                    self.report_deaths(record, results, deaths, baseline);
                    return Ok(Flow::NextServer);
                }
                Turn::Measured(measured, share) => {
                    self.keep_load(record, results, at, *measured, share, baseline)
                }
            }
        }
        Ok(Flow::Next)
    }

    /// The servers' containers removed at the end; those on a host lost during the run are
    /// not waited for again: the run's last sweep tries that engine once more and says what
    /// stays there.
    async fn release(&self, servers: impl Iterator<Item = Live<E>>) {
        for l in servers {
            if self.host_name(l.index).is_some_and(|h| self.is_lost(h)) {
                l.guard.leak();
            } else {
                let _ = l.guard.remove().await;
            }
        }
    }

    /// Both sides of an A/B run on fresh containers for round `round` (counted from 0).
    async fn renew_both(
        &self,
        round: u32,
        sides: [&mut Vec<Live<E>>; 2],
        expected: &[ExpectedDoc],
        against: &AgainstPlan,
        record: &mut RunRecord,
        results: &mut Results,
    ) {
        let t = Instant::now();
        let (mut started, mut not_removed) = (0, 0);
        for baseline in [false, true] {
            let side = &mut *sides[usize::from(baseline)];
            let r = self.renew(side, expected, against).await;
            started += r.started;
            not_removed += r.not_removed;
            if !r.lost.is_empty() {
                self.report_deaths(record, results, r.lost, baseline);
            }
        }
        self.observer.event(&Event::AgainstFresh {
            round: round + 1,
            containers: started,
            not_removed,
            seconds: t.elapsed().as_secs_f64(),
        });
    }

    /// An A/B run's look at the paired comparison after round `round` (counted from 0):
    /// whether another round is worth its time.
    fn look(&self, record: &RunRecord, round: u32) -> Look {
        let Some(cmp) = report::paired::compare_record(record) else {
            return Look::Stop(None);
        };
        // The stopping rule acts only at its scheduled looks: the level of each
        // interval was set for those.
        let looked = self.schedule.looks_after(round);
        let settled = looked && cmp.settled();
        self.observer.event(&Event::AgainstLook {
            round: round + 1,
            rounds: self.schedule.rounds,
            undecided: cmp.undecided(),
            gated: cmp.groups.iter().filter(|g| g.gated().is_some()).count(),
            looked,
            next_look: self.schedule.next_look(round),
            slowest: cmp.slowest_to_judge(),
        });
        if settled {
            return Look::Stop(Some(AgainstStop::Decided));
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
            rounds: self.schedule.rounds,
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
            client_bound,
        } = measured;
        // With several generators the load was client-bound when any of them was.
        let client_bound = client_bound
            || report::record::is_client_bound(&load)
            || generators.iter().any(|g| g.client_bound);
        let rec = LoadRecord {
            server: server.name.clone(),
            document: spec.name.clone(),
            url_path: doc.url_path.clone(),
            round,
            load,
            server_usage: usage,
            client_bound,
            server_share: share,
            protocol: match spec.load.version {
                HttpVersion::Http3 => Some(report::Protocol::H3),
                v => report::Protocol::of(self.plan.tls, v == HttpVersion::Http2),
            },
            streams: matches!(spec.load.version, HttpVersion::Http2 | HttpVersion::Http3)
                .then_some(spec.load.streams),
            generators,
        };
        let loads = match (baseline, record.against.as_mut()) {
            (true, Some(a)) => &mut a.loads,
            _ => &mut record.loads,
        };
        loads.push(rec);
        self.observer.event(&Event::LoadDone {
            round: round + 1,
            rounds: self.schedule.rounds,
            record: loads.last().expect("just pushed"),
            baseline,
        });
        results.save(record, self.observer);
    }
}
