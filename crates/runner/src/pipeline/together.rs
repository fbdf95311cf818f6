//! An A/B pair loaded together: both sides of a server and document at the same time, each
//! under its own CPU share on the same CPUs, so that whatever slows the machine for a moment
//! (another tenant, the host's clocks) slows both alike and cancels in their ratio.
//!
//! The generator then sends two loads at once. Where that leaves it without headroom (the
//! pair's loads together filled its CPUs, or responses waited for it), the pair is measured
//! again at smaller shares in its first round, as headroom does for one load, and keeps the
//! share it settled on for every later round: a quota that binds is what makes requests/s the
//! server's rate, and what lets a slowed candidate's smaller quota show.

use super::ctx::{Ctx, Live, Sides};
use super::turn::{Flow, LoadAt, Measured, ShareBook};
use crate::error::RunError;
use crate::events::Event;
use crate::fleet::Engine;
use crate::headroom::{self, Reading, MAX_TRIES};
use crate::results::Results;
use loadgen::json::LoadReport;
use report::RunRecord;

/// One side of a pair: its container, that side's servers, and the CPU share it gets.
struct PairSide<'a, E: Engine> {
    live: &'a Live<E>,
    lives: &'a [Live<E>],
    share: Option<f64>,
}

impl<E: Engine> Ctx<'_, E> {
    /// Loads both sides of `at` (`cand` on the candidate side, `base` on the baseline's) at the
    /// same time and keeps both loads; a side whose server (or one it needs) died is reported
    /// and the server skipped from here on, as in turn.
    pub(super) async fn together(
        &self,
        (base, cand): (&Live<E>, &Live<E>),
        sides: Sides<'_, E>,
        at: LoadAt<'_>,
        book: &mut ShareBook,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<Flow, RunError> {
        let against = self
            .against
            .expect("a pair of loads is made on an A/B run only");
        let LoadAt {
            round,
            server,
            doc,
            spec,
        } = at;
        let key = (cand.index, doc.url_path.clone());
        let probing = !book.shares.contains_key(&key);
        let during = format!("before or during the load of {}", doc.url_path);
        let mut tries = 0;
        loop {
            tries += 1;
            let settled = book.shares.get(&key).copied();
            let (base_share, cand_share) =
                against.shares(self.plan, cand.index, &server.name, &spec.name, settled);
            let pair = [
                PairSide {
                    live: base,
                    lives: sides.base,
                    share: base_share,
                },
                PairSide {
                    live: cand,
                    lives: sides.live,
                    share: cand_share,
                },
            ];
            if self.any_died(&pair, &during, record, results).await? {
                return Ok(Flow::NextServer);
            }
            for s in &pair {
                let shown = self.shown(s.live.index, s.live.baseline);
                self.apply_share(s.live, s.share, &mut book.applied)
                    .await
                    .map_err(|e| RunError::Step(format!("{shown}: {e:#}")))?;
                self.observer.event(&Event::LoadStarting {
                    round: round + 1,
                    rounds: self.schedule.rounds,
                    server: &shown,
                    url_path: &doc.url_path,
                    load: &spec.load,
                });
            }
            let (mb, mc) = tokio::join!(
                self.measure(base, &spec.load, &doc.url_path, true),
                self.measure(cand, &spec.load, &doc.url_path, true),
            );
            if self.any_died(&pair, &during, record, results).await? {
                return Ok(Flow::NextServer);
            }
            let mut kept = Vec::with_capacity(2);
            for (s, m) in pair.iter().zip([mb, mc]) {
                let shown = self.shown(s.live.index, s.live.baseline);
                let Some(m) =
                    m.map_err(|e| RunError::Step(format!("{shown} {}: {e}", doc.url_path)))?
                else {
                    return Ok(Flow::Stop); // stopped mid-load: a partial pair is not kept
                };
                kept.push(m);
            }
            let reading = self.pair_reading(&kept, base_share);
            let next = (probing && tries < MAX_TRIES)
                .then(|| headroom::next_share(&reading, scenario::MIN_SERVER_SHARE))
                .flatten();
            if let Some(next) = next {
                self.observer.event(&Event::Headroom {
                    server: &self.shown(cand.index, false),
                    url_path: &doc.url_path,
                    share: base_share,
                    generator: reading.generator,
                    next,
                });
                book.shares.insert(key.clone(), next);
                continue;
            }
            if let Some(s) = base_share.filter(|_| probing) {
                book.shares.entry(key.clone()).or_insert(s);
            }
            let bound = client_bound_together(&kept[0].load, &kept[1].load);
            for (s, mut m) in pair.iter().zip(kept) {
                m.client_bound |= bound;
                self.keep_load(record, results, at, m, s.share, s.live.baseline);
            }
            return Ok(Flow::Next);
        }
    }

    /// What a pair's two loads say about the generator's headroom: its CPU time for both
    /// together, lagging when either fell behind, and the busier server's CPU.
    fn pair_reading(&self, kept: &[Measured], share: Option<f64>) -> Reading {
        let one = |m: &Measured| self.reading(&m.load, m.usage.as_ref(), share);
        let (a, b) = (one(&kept[0]), one(&kept[1]));
        Reading {
            generator: combined_generator(&kept[0].load, &kept[1].load),
            lagging: a.lagging || b.lagging,
            server_cores: match (a.server_cores, b.server_cores) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            },
            ..a
        }
    }

    /// Whether a side's server, or one it needs, has died; the first found is reported.
    async fn any_died(
        &self,
        pair: &[PairSide<'_, E>; 2],
        during: &str,
        record: &mut RunRecord,
        results: &mut Results,
    ) -> Result<bool, RunError> {
        for s in pair {
            if let Some(deaths) = self.find_death(s.live, s.lives, during).await? {
                self.report_deaths(record, results, deaths, s.live.baseline);
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The generator's CPU time for two loads it sent at once from the same CPUs, as a share of
/// its workers' cores (1.0: all of them busy all the time).
fn combined_generator(a: &LoadReport, b: &LoadReport) -> f64 {
    let part = |l: &LoadReport| (l.elapsed_s, l.client_cpu_s, l.settings.threads);
    busy_together(part(a), part(b))
}

/// [`combined_generator`] of two loads' (seconds measured, CPU seconds, worker threads): both
/// loads' CPU over the longer one's time, on the CPUs of the one with more threads (both
/// run on the generator's CPUs).
fn busy_together(a: (f64, f64, usize), b: (f64, f64, usize)) -> f64 {
    let secs = a.0.max(b.0).max(1e-9);
    let threads = a.2.max(b.2).max(1) as f64;
    (a.1 + b.1) / secs / threads
}

/// Whether the generator set the pace of two loads it sent at once from the same CPUs: their
/// CPU time together filled its workers' CPUs, though each alone used less than that.
fn client_bound_together(a: &LoadReport, b: &LoadReport) -> bool {
    combined_generator(a, b) >= report::record::CLIENT_BOUND_SHARE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_loads_at_once_count_the_generators_cpu_for_both() {
        // Each alone half a core on one thread: together the core was full.
        let both = busy_together((0.5, 0.24, 1), (0.48, 0.23, 1));
        assert!((both - 0.94).abs() < 1e-9, "{both}");
        assert!(both >= report::record::CLIENT_BOUND_SHARE);
        assert!(busy_together((0.5, 0.15, 1), (0.5, 0.15, 1)) < 0.9);
        // Two threads each: over two cores.
        assert!((busy_together((1.0, 0.9, 2), (1.0, 0.9, 2)) - 0.9).abs() < 1e-9);
    }

    #[test]
    fn a_pair_that_filled_the_generator_is_measured_again_at_a_smaller_share() {
        let reading = |generator: f64| Reading {
            generator,
            lagging: false,
            server_cores: Some(0.38),
            share: Some(0.4),
            cpuset_cores: 1.0,
        };
        let full = busy_together((0.25, 0.245, 1), (0.25, 0.245, 1));
        let next = headroom::next_share(&reading(full), scenario::MIN_SERVER_SHARE).unwrap();
        assert!(next < 0.4 * 0.71, "{next}");
        let light = busy_together((0.5, 0.15, 1), (0.5, 0.15, 1));
        assert_eq!(
            headroom::next_share(&reading(light), scenario::MIN_SERVER_SHARE),
            None
        );
    }
}
