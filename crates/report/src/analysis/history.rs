//! Many records of the same scenarios, night by night: each server and document's figures as a
//! series over the nights, the A/B verdicts where an A/B run judged them, and where a series
//! changed level ([`changepoint`](super::changepoint)).
//!
//! A night is one record. Its figure for a server and document is the median over its rounds
//! (the candidate side's, in an A/B run); nights are in the order they started. A record that is
//! still running has no night; one that failed or was interrupted keeps its night (its status
//! says so) and the figures of the loads it measured.
//!
//! Figures are compared only between nights of the same setup: the same machine, the same
//! scenario text and the same servers' CPU shares. Where the setup changed, the night says how,
//! and each stretch of nights is searched for change points on its own.

use super::changepoint::{change_points, Split};
use super::paired::{compare_record, PairedComparison, PairedVerdict};
use super::stats::{self, Metric};
use crate::record::{RunRecord, RunStatus};
use serde::Serialize;

/// The figures followed night by night, in the order pages show them: those an A/B run judges.
pub const METRICS: [Metric; 4] = super::paired::METRICS;

/// A change point's permutation test level, per series.
pub const ALPHA: f64 = 0.05;

/// A file the history could not use, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// Everything `benchctl history` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    /// Where the records were read (as given).
    pub source: String,
    /// The smallest change of level named as a change point (0.05 for 5%).
    pub threshold: f64,
    pub alpha: f64,
    pub scenarios: Vec<ScenarioHistory>,
    pub skipped: Vec<Skipped>,
}

/// The nights of one scenario (by its name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioHistory {
    pub name: String,
    pub nights: Vec<Night>,
    pub documents: Vec<DocumentHistory>,
    /// Every change point of the scenario's series, in night order.
    pub changes: Vec<NamedChange>,
}

/// One record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Night {
    pub path: String,
    pub started_at: String,
    /// The commit benchctl was built from, when the record says.
    pub commit: Option<String>,
    pub status: String,
    /// The run measured both sides of an A/B comparison.
    pub ab: bool,
    /// An A/B run whose gated metric was worse beyond the threshold for some server, or a
    /// server of the baseline that the candidate could not start.
    pub regression: bool,
    /// The machine, as the record describes it ("CPU model, N CPUs").
    pub host: String,
    /// How this night's setup differs from the night before's ("another host", "the scenario
    /// changed", "other CPU shares"): figures across it are not compared, and no change point
    /// is named across it. Empty for the first night and where nothing differs.
    pub setup_changes: Vec<String>,
}

/// One document's series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentHistory {
    pub document: String,
    /// The servers measured in any night, in the order the scenario lists them.
    pub servers: Vec<String>,
    /// One per server and metric of [`METRICS`] that some night measured: metrics first.
    pub series: Vec<Series>,
}

/// One figure of one server and document, night by night.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub server: String,
    pub metric: Metric,
    /// One per night of the scenario; `None` where that night did not measure it.
    pub points: Vec<Option<Point>>,
    pub changes: Vec<Change>,
}

/// One night's figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Median over the night's rounds.
    pub value: f64,
    /// The night's A/B verdict on this figure, when it was an A/B run.
    pub verdict: Option<AbMark>,
}

/// What an A/B run said of one figure that night.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbMark {
    pub verdict: PairedVerdict,
    /// The verdict could fail the run (the server and document's gated metric).
    pub gated: bool,
    /// Candidate over baseline, when the rounds gave one.
    pub ratio: Option<f64>,
}

/// A change of level in a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index of the first night at the new level.
    pub night: usize,
    /// Geometric means of the nights before and from it (up to the neighbouring change points).
    pub before: f64,
    pub after: f64,
    /// after / before - 1.
    pub change: f64,
    pub p: f64,
    /// The change is for the worse (a higher figure where lower is better, or the reverse).
    pub worse: bool,
}

/// A change with the series it belongs to, for the scenario's list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedChange {
    pub server: String,
    pub document: String,
    pub metric: Metric,
    pub change: Change,
}

/// The history of `records` (each with the path it was read from). Changes smaller than
/// `threshold` are not named.
pub fn history(
    source: &str,
    records: Vec<(String, RunRecord)>,
    skipped: Vec<Skipped>,
    threshold: f64,
) -> History {
    let mut skipped = skipped;
    let mut kept: Vec<(String, RunRecord)> = Vec::new();
    for (path, rec) in records {
        if rec.status == RunStatus::Running {
            skipped.push(Skipped {
                path,
                reason: "the run was still going (or its writer died): a partial record".into(),
            });
        } else if let Some((first, _)) = kept.iter().find(|(_, k)| k.run_id == rec.run_id) {
            skipped.push(Skipped {
                path,
                reason: format!("the same run as {first}"),
            });
        } else {
            kept.push((path, rec));
        }
    }
    kept.sort_by(|a, b| {
        (a.1.started_at.as_str(), a.1.run_id.as_str())
            .cmp(&(b.1.started_at.as_str(), b.1.run_id.as_str()))
    });
    let mut names: Vec<String> = Vec::new();
    for (_, r) in &kept {
        if !names.contains(&r.scenario.name) {
            names.push(r.scenario.name.clone());
        }
    }
    names.sort();
    let scenarios = names
        .iter()
        .map(|name| {
            let of: Vec<&(String, RunRecord)> = kept
                .iter()
                .filter(|(_, r)| &r.scenario.name == name)
                .collect();
            scenario(name, &of, threshold)
        })
        .collect();
    History {
        source: source.to_string(),
        threshold,
        alpha: ALPHA,
        scenarios,
        skipped,
    }
}

fn scenario(name: &str, records: &[&(String, RunRecord)], threshold: f64) -> ScenarioHistory {
    let verdicts: Vec<Option<PairedComparison>> =
        records.iter().map(|(_, r)| compare_record(r)).collect();
    let setups: Vec<Setup> = records.iter().map(|(_, r)| Setup::of(r)).collect();
    let nights: Vec<Night> = records
        .iter()
        .zip(&verdicts)
        .enumerate()
        .map(|(i, ((path, r), cmp))| Night {
            path: path.clone(),
            started_at: r.started_at.clone(),
            commit: r.benchctl_commit.clone(),
            status: r.status.label().to_string(),
            ab: r.against.is_some(),
            regression: cmp.as_ref().is_some_and(|c| c.has_regression()),
            host: format!("{}, {} CPUs", r.host.cpu_model, r.host.cores),
            setup_changes: match i {
                0 => Vec::new(),
                _ => setups[i].differences(&setups[i - 1]),
            },
        })
        .collect();
    // The stretches of nights with one setup: [start, end) by night.
    let mut stretches: Vec<(usize, usize)> = Vec::new();
    for (i, n) in nights.iter().enumerate() {
        match stretches.last_mut() {
            Some(last) if n.setup_changes.is_empty() => last.1 = i + 1,
            _ => stretches.push((i, i + 1)),
        }
    }
    let mut documents: Vec<String> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    for (_, r) in records {
        for d in stats::documents(r) {
            if !documents.contains(&d) {
                documents.push(d);
            }
        }
        for s in stats::servers(r) {
            if !servers.contains(&s) {
                servers.push(s);
            }
        }
    }
    let nightly = Nightly {
        records,
        verdicts: &verdicts,
        stretches: &stretches,
        threshold,
    };
    let documents: Vec<DocumentHistory> = documents
        .into_iter()
        .map(|document| nightly.document(document, &servers))
        .collect();
    let mut changes: Vec<NamedChange> = documents
        .iter()
        .flat_map(|d| {
            d.series.iter().flat_map(|s| {
                s.changes.iter().map(|c| NamedChange {
                    server: s.server.clone(),
                    document: d.document.clone(),
                    metric: s.metric,
                    change: c.clone(),
                })
            })
        })
        .collect();
    changes.sort_by_key(|c| c.change.night);
    ScenarioHistory {
        name: name.to_string(),
        nights,
        documents,
        changes,
    }
}

/// A scenario's nights, for building its series.
struct Nightly<'a> {
    records: &'a [&'a (String, RunRecord)],
    verdicts: &'a [Option<PairedComparison>],
    stretches: &'a [(usize, usize)],
    threshold: f64,
}

impl Nightly<'_> {
    /// Every series of one document: metrics first, servers in order.
    fn document(&self, document: String, servers: &[String]) -> DocumentHistory {
        let mut series = Vec::new();
        for metric in METRICS {
            for server in servers {
                let points: Vec<Option<Point>> = self
                    .records
                    .iter()
                    .zip(self.verdicts)
                    .map(|((_, r), cmp)| {
                        let mark = cmp
                            .as_ref()
                            .and_then(|c| ab_mark(c, server, &document, metric));
                        point(r, server, &document, metric, mark)
                    })
                    .collect();
                if points.iter().all(Option::is_none) {
                    continue;
                }
                let changes = self
                    .stretches
                    .iter()
                    .flat_map(|&(a, b)| changes(&points[a..b], a, metric, self.threshold))
                    .collect();
                series.push(Series {
                    server: server.clone(),
                    metric,
                    points,
                    changes,
                });
            }
        }
        let servers = servers
            .iter()
            .filter(|s| series.iter().any(|x| &x.server == *s))
            .cloned()
            .collect();
        DocumentHistory {
            document,
            servers,
            series,
        }
    }
}

/// What an A/B run said of one figure of a server and document, when it judged it.
fn ab_mark(c: &PairedComparison, server: &str, document: &str, metric: Metric) -> Option<AbMark> {
    let g = c
        .groups
        .iter()
        .find(|g| g.server == server && g.document == document)?;
    let m = g.metrics.iter().find(|m| m.metric == metric)?;
    Some(AbMark {
        verdict: m.verdict,
        gated: m.gated,
        ratio: m.estimate.as_ref().map(|e| e.ratio),
    })
}

/// One night's figure of a server and document: the median over the rounds that measured it.
fn point(
    r: &RunRecord,
    server: &str,
    document: &str,
    metric: Metric,
    verdict: Option<AbMark>,
) -> Option<Point> {
    let values: Vec<f64> = r
        .loads
        .iter()
        .filter(|l| l.server == server && l.document == document)
        .filter_map(|l| metric.value(l))
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return None;
    }
    Some(Point {
        value: stats::Summary::of(&values).median,
        verdict,
    })
}

/// The change points of a stretch of a series (its first night is night `first`), on the
/// logarithm of its positive values (a change is a ratio, whatever the level), keeping those of
/// at least `threshold`.
fn changes(points: &[Option<Point>], first: usize, metric: Metric, threshold: f64) -> Vec<Change> {
    let present: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.as_ref().map(|p| (i, p.value)))
        .filter(|&(_, v)| v > 0.0)
        .collect();
    let logs: Vec<f64> = present.iter().map(|&(_, v)| v.ln()).collect();
    let splits: Vec<Split> = change_points(&logs, ALPHA);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(splits.iter().map(|s| s.at))
        .chain(std::iter::once(logs.len()))
        .collect();
    let geo = |a: usize, b: usize| (logs[a..b].iter().sum::<f64>() / (b - a) as f64).exp();
    splits
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let before = geo(bounds[i], bounds[i + 1]);
            let after = geo(bounds[i + 1], bounds[i + 2]);
            let change = after / before - 1.0;
            (change.abs() >= threshold).then(|| Change {
                night: first + present[s.at].0,
                before,
                after,
                change,
                p: s.p,
                worse: (change < 0.0) == metric.higher_is_better(),
            })
        })
        .collect()
}

/// What must stay the same for two nights' figures to be compared.
#[derive(Debug, Clone, PartialEq)]
struct Setup {
    host: (String, u32),
    scenario_sha256: String,
    /// Each server's CPU share over the night's loads, in cores (`None`: its whole cpuset).
    shares: Vec<(String, Option<String>)>,
}

impl Setup {
    fn of(r: &RunRecord) -> Setup {
        let mut shares: Vec<(String, Option<String>)> = stats::servers(r)
            .into_iter()
            .map(|server| {
                let mut of_server: Vec<f64> = r
                    .loads
                    .iter()
                    .filter(|l| l.server == server)
                    .filter_map(|l| l.server_share)
                    .collect();
                of_server.sort_by(f64::total_cmp);
                of_server.dedup();
                let share = (!of_server.is_empty()).then(|| {
                    of_server
                        .iter()
                        .map(|v| format!("{v:.2}"))
                        .collect::<Vec<_>>()
                        .join("/")
                });
                (server, share)
            })
            .collect();
        shares.sort();
        Setup {
            host: (r.host.cpu_model.clone(), r.host.cores),
            scenario_sha256: r.scenario.sha256.clone(),
            shares,
        }
    }

    /// How `self` differs from `before`, in words.
    fn differences(&self, before: &Setup) -> Vec<String> {
        let mut out = Vec::new();
        if self.host != before.host {
            out.push("another host".to_string());
        }
        if self.scenario_sha256 != before.scenario_sha256 {
            out.push("the scenario changed".to_string());
        }
        let changed: Vec<String> = self
            .shares
            .iter()
            .filter_map(|(server, share)| {
                let old = before.shares.iter().find(|(s, _)| s == server)?;
                let word = |s: &Option<String>| {
                    s.as_ref()
                        .map_or_else(|| "its whole cpuset".to_string(), |v| format!("{v} cores"))
                };
                (old.1 != *share)
                    .then(|| format!("{server}'s CPU share {} to {}", word(&old.1), word(share)))
            })
            .collect();
        out.extend(changed);
        out
    }
}
