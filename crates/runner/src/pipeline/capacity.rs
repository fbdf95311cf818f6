//! The capacity phase of a run: after the loads, a search ([`crate::capacity`]) per server and
//! document against the running containers, each step one constant-rate load, each search
//! recorded as it ends. A server that dies during a search is reported as after any load and
//! skipped from there; the steps of an unfinished search are not kept.

use super::ctx::{Ctx, Live};
use super::turn::Measured;
use crate::capacity::{self, Next, Search};
use crate::events::Event;
use crate::fleet::Engine;
use crate::results::Results;
use crate::RunError;
use report::capacity::{CapacityRecord, StartFrom};
use report::RunRecord;
use scenario::{CapacitySpec, MaterializedDoc};
use std::time::Instant;

impl<E: Engine> Ctx<'_, E> {
    pub(super) async fn search_capacity(
        &self,
        spec: &CapacitySpec,
        record: &mut RunRecord,
        results: &mut Results,
        live: &[Live<E>],
        docs: &[MaterializedDoc],
    ) -> Result<(), RunError> {
        let criteria = capacity::criteria(spec);
        let ceiling = capacity::connection_ceiling(self.plan.cpus.loadgen.len().max(1));
        for l in live {
            let server = &self.plan.servers[l.index];
            if !self.chosen(&server.name) {
                continue;
            }
            'documents: for (doc, dspec) in docs.iter().zip(&self.plan.documents) {
                let during = format!("during the capacity search on {}", doc.url_path);
                if !self
                    .still_measurable(l, live, &during, record, results)
                    .await?
                {
                    break;
                }
                let (start, start_from) = start_rate(spec, record, &server.name, &dspec.name);
                self.observer.event(&Event::CapacityStarting {
                    server: &server.name,
                    url_path: &doc.url_path,
                    criteria: &criteria,
                    start,
                });
                let mut search = Search::new(start, criteria.clone());
                let result = loop {
                    let rate = match search.next(|r| capacity::step_cost(spec, r)) {
                        Next::Done(result) => break result,
                        Next::Measure(rate) => rate,
                    };
                    let (load, capped) = capacity::step_load(&dspec.load, spec, rate, ceiling);
                    let began = Instant::now();
                    let m = self.measure(l, &load, &doc.url_path, false).await;
                    if let Some(death) = self.find_death(l, live, &during).await? {
                        self.report_deaths(record, results, death, false);
                        break 'documents;
                    }
                    let Some(Measured { load: report, .. }) = m.map_err(|e| {
                        RunError::Step(format!(
                            "{} {} at {rate:.0} requests/s: {e}",
                            server.name, doc.url_path
                        ))
                    })?
                    else {
                        return Ok(()); // stopped mid-step: an unfinished search is not kept
                    };
                    let step = capacity::step_from_report(
                        &report,
                        rate,
                        capped,
                        &criteria,
                        began.elapsed(),
                    )
                    .map_err(|e| {
                        RunError::Step(format!("{} {}: {e}", server.name, doc.url_path))
                    })?;
                    self.observer.event(&Event::CapacityStep {
                        server: &server.name,
                        url_path: &doc.url_path,
                        number: search.steps().len() + 1,
                        step: &step,
                        criteria: &criteria,
                    });
                    search.record(step);
                };
                record.capacity.push(CapacityRecord {
                    server: server.name.clone(),
                    document: dspec.name.clone(),
                    url_path: doc.url_path.clone(),
                    criteria: criteria.clone(),
                    start,
                    start_from,
                    steps: search.into_steps(),
                    result,
                });
                self.observer.event(&Event::CapacityDone {
                    record: record.capacity.last().expect("just pushed"),
                });
                results.save(record, self.observer);
            }
        }
        Ok(())
    }
}

/// The first rate of a search: the scenario's `start`, else half the median requests/s of the
/// run's own loads of this server and document, else [`capacity::DEFAULT_START`].
fn start_rate(
    spec: &CapacitySpec,
    record: &RunRecord,
    server: &str,
    document: &str,
) -> (f64, StartFrom) {
    if let Some(r) = spec.start {
        return (r, StartFrom::Configured);
    }
    let mut rps: Vec<f64> = record
        .loads
        .iter()
        .filter(|l| l.server == server && l.document == document)
        .map(|l| l.load.requests_per_second)
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    if rps.is_empty() {
        return (capacity::DEFAULT_START, StartFrom::Default);
    }
    rps.sort_by(f64::total_cmp);
    let median = rps[(rps.len() - 1) / 2];
    (
        (median / 2.0).max(capacity::MIN_RATE),
        StartFrom::ClosedLoop,
    )
}
