//! How a run ended: the error that stopped it before or while it ran ([`RunError`]), and the
//! outcome of one that ran ([`RunOutcome`]) with the problems that make it a failure.

use super::ctx::first_line;
use crate::results::Saved;
use report::{RunRecord, RunStatus, ServerStatus};
use scenario::Plan;
use std::path::PathBuf;

/// Ends `record` as `outcome` and the cancellation left it, and says what makes the run a
/// failure: an interruption, an error, nothing measured, a required server unavailable, a
/// generator that failed or limited a load, containers left on an engine.
pub(super) fn conclude(
    record: &mut RunRecord,
    plan: &Plan,
    outcome: Result<(), String>,
    cancelled: Option<String>,
    left_behind: Vec<(Option<String>, String)>,
) -> Vec<Problem> {
    record.finished_at = Some(report::record::now_rfc3339());
    let mut problems = Vec::new();
    record.status = match (outcome, cancelled) {
        (_, Some(reason)) => {
            problems.push(Problem::Interrupted(reason.clone()));
            RunStatus::Interrupted { reason }
        }
        (Err(reason), None) => {
            problems.push(Problem::Failed(reason.clone()));
            RunStatus::Failed { reason }
        }
        (Ok(()), None) if record.loads.is_empty() => {
            problems.push(Problem::NothingMeasured);
            RunStatus::Failed {
                reason: "no load was measured: every server was unavailable".to_string(),
            }
        }
        (Ok(()), None) => RunStatus::Complete,
    };
    if record.status == RunStatus::Complete {
        for srec in &record.servers {
            let spec = plan.servers.iter().find(|s| s.name == srec.name);
            if let (Some(spec), ServerStatus::Unavailable { reason }) = (spec, &srec.status) {
                if !spec.optional {
                    problems.push(Problem::Unavailable {
                        server: spec.name.clone(),
                        reason: reason.clone(),
                    });
                }
            }
        }
    }
    problems.extend(failed_generators(record));
    for (host, reason) in left_behind {
        problems.push(Problem::LeftBehind {
            host,
            scenario: plan.source.clone(),
            reason,
        });
    }
    problems.extend(limited_loads(record));
    problems
}

/// The generators that failed, load by load.
fn failed_generators(record: &RunRecord) -> Vec<Problem> {
    let mut problems = Vec::new();
    for l in &record.loads {
        for g in &l.generators {
            if let Some(reason) = &g.error {
                problems.push(Problem::GeneratorFailed {
                    server: l.server.clone(),
                    document: l.document.clone(),
                    round: l.round,
                    host: g.host.clone(),
                    reason: reason.clone(),
                });
            }
        }
    }
    problems
}

/// The loads the generator's own limits failed requests of: one problem per server and
/// document, over its rounds.
fn limited_loads(record: &RunRecord) -> Vec<Problem> {
    let mut problems: Vec<Problem> = Vec::new();
    for l in &record.loads {
        let failures = l.load.failures.generator;
        if failures == 0 {
            continue;
        }
        let same = problems.iter_mut().find_map(|p| match p {
            Problem::GeneratorLimited {
                server,
                document,
                rounds,
                failures,
            } if *server == l.server && *document == l.document => Some((rounds, failures)),
            _ => None,
        });
        match same {
            Some((rounds, total)) => {
                rounds.push(l.round);
                *total += failures;
            }
            None => problems.push(Problem::GeneratorLimited {
                server: l.server.clone(),
                document: l.document.clone(),
                rounds: vec![l.round],
                failures,
            }),
        }
    }
    problems
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    pub record: RunRecord,
    pub saved: Saved,
    /// Why the run did not fully succeed; empty when it did.
    pub problems: Vec<Problem>,
}

impl RunOutcome {
    /// Every planned load of every required server was measured and the record is where it was
    /// asked to go.
    pub fn succeeded(&self) -> bool {
        self.problems.is_empty() && self.saved.is_where_wanted()
    }

    /// The reason given when the run was cancelled.
    pub fn interrupted(&self) -> Option<&str> {
        match &self.record.status {
            RunStatus::Interrupted { reason } => Some(reason),
            _ => None,
        }
    }
}

/// One reason a run did not fully succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Cancelled before every load ran.
    Interrupted(String),
    /// An error ended the run before every load ran.
    Failed(String),
    /// Not a single load was measured.
    NothingMeasured,
    /// A server the scenario does not mark optional could not be measured (in full).
    Unavailable { server: String, reason: String },
    /// The load generator ran into a limit of its own (file descriptors, local ports) during
    /// these loads: their failures are the generator's, not the server's.
    GeneratorLimited {
        server: String,
        document: String,
        /// 0-based, in order.
        rounds: Vec<u32>,
        /// Over those rounds.
        failures: u64,
    },
    /// One of `[load] generators` failed during this load, which holds only the others' part.
    GeneratorFailed {
        server: String,
        document: String,
        /// 0-based.
        round: u32,
        host: String,
        reason: String,
    },
    /// The run's containers could not all be removed from an engine (one that stopped
    /// answering): they stay, labelled, for `benchctl gc` or the next run on that engine.
    LeftBehind {
        /// The `[[host]]`; `None` for this machine's engine.
        host: Option<String>,
        scenario: PathBuf,
        reason: String,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Interrupted(r) => write!(f, "the run was {r} before every load ran"),
            Problem::Failed(r) => write!(f, "the run failed: {r}"),
            Problem::NothingMeasured => f.write_str(
                "no load was measured: every server was unavailable (reasons above)",
            ),
            Problem::Unavailable { server, reason } => write!(
                f,
                "{server} was not measured: {} (mark it `optional = true` in the scenario if the run may go without it)",
                first_line(reason)
            ),
            Problem::GeneratorLimited {
                server,
                document,
                rounds,
                failures,
            } => {
                let rounds: Vec<String> = rounds.iter().map(|r| (r + 1).to_string()).collect();
                write!(
                    f,
                    "{server} / {document} (round{} {}): {failures} requests failed for lack of the load generator's own resources (file descriptors or local ports), not the server's",
                    if rounds.len() == 1 { "" } else { "s" },
                    rounds.join(", ")
                )
            }
            Problem::GeneratorFailed {
                server,
                document,
                round,
                host,
                reason,
            } => write!(
                f,
                "{server} / {document} (round {}): the generator on {host} failed ({}); the load holds the other generators' part only",
                round + 1,
                first_line(reason)
            ),
            Problem::LeftBehind {
                host: Some(host),
                reason,
                ..
            } => write!(
                f,
                "containers of this run may remain on {host} ({})",
                first_line(reason),
            ),
            Problem::LeftBehind {
                host: None, reason, ..
            } => write!(
                f,
                "containers of this run may remain on this machine's engine ({})",
                first_line(reason)
            ),
        }
    }
}
