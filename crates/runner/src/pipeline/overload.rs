//! The overload phase of a run: after the capacity searches, per server and document, the
//! staircase past its capacity ([`crate::overload`]) against the running container, each
//! step one constant-rate load followed over short intervals, then the recovery phase; each
//! staircase recorded as it ends. A server that dies during one is reported as after any load
//! and skipped from there; the steps of an unfinished staircase are not kept.

use super::ctx::{Ctx, Live};
use super::turn::Measured;
use crate::events::Event;
use crate::fleet::Engine;
use crate::overload;
use crate::results::Results;
use crate::RunError;
use report::overload::{CapacityFrom, OverloadCriteria, OverloadRecord, OverloadStep};
use report::RunRecord;
use scenario::{CapacityTarget, MaterializedDoc, OverloadSpec};
use std::time::Duration;

impl<E: Engine> Ctx<'_, E> {
    pub(super) async fn climb_overload(
        &self,
        spec: &OverloadSpec,
        record: &mut RunRecord,
        results: &mut Results,
        live: &[Live<E>],
        docs: &[MaterializedDoc],
    ) -> Result<(), RunError> {
        let criteria = criteria(spec, &self.overload_target());
        for l in live {
            let server = &self.plan.servers[l.index];
            if !self.chosen(&server.name) {
                continue;
            }
            'documents: for (doc, dspec) in docs.iter().zip(&self.plan.documents) {
                let during = format!("past its capacity on {}", doc.url_path);
                if !self
                    .still_measurable(l, live, &during, record, results)
                    .await?
                {
                    break;
                }
                let (capacity, from) = match capacity_of(spec, record, &server.name, &dspec.name) {
                    Ok(c) => c,
                    Err(why) => {
                        self.observer.event(&Event::OverloadSkipped {
                            server: &server.name,
                            url_path: &doc.url_path,
                            why: &why,
                        });
                        continue;
                    }
                };
                self.observer.event(&Event::OverloadStarting {
                    server: &server.name,
                    url_path: &doc.url_path,
                    capacity,
                });
                let mut steps = Vec::new();
                for (multiple, rate, length, recovery) in overload::plan(spec, capacity) {
                    let at = Rung {
                        multiple,
                        rate,
                        length,
                        recovery,
                    };
                    let step = match self
                        .hold(spec, (l, live), (doc, dspec), &at, &during)
                        .await?
                    {
                        Held::Step(step) => step,
                        // Stopped mid-step: an unfinished staircase is not kept.
                        Held::Stopped => return Ok(()),
                        Held::Died(death) => {
                            self.report_deaths(record, results, death, false);
                            break 'documents;
                        }
                    };
                    self.observer.event(&Event::OverloadStep {
                        server: &server.name,
                        url_path: &doc.url_path,
                        step: &step,
                    });
                    steps.push(step);
                }
                record.overload.push(OverloadRecord {
                    server: server.name.clone(),
                    document: dspec.name.clone(),
                    url_path: doc.url_path.clone(),
                    criteria: criteria.clone(),
                    capacity,
                    capacity_from: from,
                    verdict: report::overload::verdict(&steps),
                    steps,
                });
                self.observer.event(&Event::OverloadDone {
                    record: record.overload.last().expect("just pushed"),
                });
                results.save(record, self.observer);
            }
        }
        Ok(())
    }

    /// One rung of the staircase: its rate held for `at.length`, then again while the load
    /// had not settled, up to the spec's longest step.
    async fn hold(
        &self,
        spec: &OverloadSpec,
        (l, live): (&Live<E>, &[Live<E>]),
        (doc, dspec): (&MaterializedDoc, &scenario::DocumentSpec),
        at: &Rung,
        during: &str,
    ) -> Result<Held, RunError> {
        let target = self.overload_target();
        let ceiling = crate::capacity::connection_ceiling(self.plan.cpus.loadgen.len().max(1));
        let server = &self.plan.servers[l.index].name;
        let step_error = |e: &dyn std::fmt::Display| {
            RunError::Step(format!(
                "{server} {} at {:.0} requests/s: {e}",
                doc.url_path, at.rate
            ))
        };
        let (load, capped) = overload::step_load(&dspec.load, &target, at.rate, at.length, ceiling);
        let mut held = Duration::ZERO;
        let mut earlier: Option<OverloadStep> = None;
        loop {
            let m = self
                .measure_over(l, &load, &doc.url_path, true, Some(spec.interval))
                .await;
            if let Some(death) = self.find_death(l, live, during).await? {
                return Ok(Held::Died(death));
            }
            let Some(Measured {
                load: report,
                usage,
                ..
            }) = m.map_err(|e| step_error(&e))?
            else {
                return Ok(Held::Stopped);
            };
            let step = overload::step_from_report(
                &report,
                (at.multiple, at.rate, at.recovery, capped),
                &target,
                usage.as_ref(),
            )
            .map_err(|e| step_error(&e))?;
            held += at.length;
            let step = match earlier.take() {
                Some(e) => overload::held_again(e, step),
                None => step,
            };
            if !overload::hold_again(spec, &step, held) {
                return Ok(Held::Step(step));
            }
            earlier = Some(step);
        }
    }

    /// The latency target a good response is held to past the capacity: the capacity
    /// search's, else the default.
    fn overload_target(&self) -> CapacityTarget {
        self.capacity
            .as_ref()
            .map_or(scenario::overload::DEFAULT_TARGET, |c| c.target)
    }
}

/// One rung of a staircase: a multiple of the capacity, its rate, how long it is held at
/// least, and whether it is the recovery phase.
struct Rung {
    multiple: f64,
    rate: f64,
    length: Duration,
    recovery: bool,
}

/// How holding a rung ended.
enum Held {
    Step(OverloadStep),
    /// The run was stopped.
    Stopped,
    /// The server, or one it needs, died.
    Died(Vec<(usize, String)>),
}

/// What a staircase of `spec` held to `target` is read by, as the record keeps it.
fn criteria(spec: &OverloadSpec, target: &CapacityTarget) -> OverloadCriteria {
    OverloadCriteria {
        percentile: target.percentile.percent(),
        target_us: target.latency.as_micros() as u64,
        multiples: spec.multiples.clone(),
        recovery_multiple: spec.recovery_multiple,
        step_s: spec.step.as_secs_f64(),
        step_max_s: spec.step_max.as_secs_f64(),
        recovery_s: spec.recovery.as_secs_f64(),
        interval_s: spec.interval.as_secs_f64(),
        knee_share: report::overload::KNEE_SHARE,
    }
}

/// The rate a server's staircase climbs from: the scenario's, else what its capacity search
/// on the document found (its bound, for an "at least"); `Err` with the reason when there is
/// none.
fn capacity_of(
    spec: &OverloadSpec,
    record: &RunRecord,
    server: &str,
    document: &str,
) -> Result<(f64, CapacityFrom), String> {
    if let Some(c) = spec.capacity {
        return Ok((c, CapacityFrom::Configured));
    }
    let search = record
        .capacity
        .iter()
        .rev()
        .find(|c| c.server == server && c.document == document)
        .ok_or("its capacity search did not finish")?;
    match search.result.rate {
        Some(rate) => Ok((rate, CapacityFrom::Searched)),
        None => Err(format!(
            "no rate met {} in its capacity search",
            search.criteria.target_text()
        )),
    }
}
