//! The run itself: check, claim the results file, start and verify every server, measure every
//! document round by round, search each one's capacity when asked ([`capacity`]), record after
//! each load, and leave nothing behind.

mod capacity;

use crate::against::{self, Against, AgainstPlan, BaselineImage};
use crate::cancel::{Cancel, Cleanup};
use crate::events::{Event, Observer};
use crate::headroom::{self, Headroom, Reading, MAX_TRIES};
use crate::results::{Results, Saved};
use crate::rundir::{self, RunDir};
use loadgen::json::LoadReport;
use loadgen::{LoadConfig, LoadSpec, StopReason, Target};
use orchestrator::{
    BuildSource, BuiltImage, Confinement, ContainerGuard, ContainerSpec, ExpectedDoc, Orchestrator,
    OrchestratorError, Scheme, Tmpfs,
};
use report::{
    AbStop, AgainstRecord, GeneratorRecord, HostFacts, LoadRecord, RecordFile, ReportError,
    RunRecord, RunStatus, ScenarioRecord, ServerRecord, ServerStatus, Slowed, Usage,
};
use scenario::{HostImages, ImageSource, Kinds, Manifest, OptionValue, Plan, VersionHeader};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a run is asked to do beyond its scenario.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Repetitions; `None` takes the scenario's `runs`.
    pub runs: Option<u32>,
    /// The results file, which must not exist and whose folder must; `None` for
    /// `<results_dir>/<run id>.json`.
    pub out: Option<PathBuf>,
    /// Where default-named records go (made when missing).
    pub results_dir: PathBuf,
    /// Measure only these servers (by name); the servers they need are started anyway.
    pub only: Vec<String>,
    /// A server kind's own source, given to its image's build (by kind: `cherokee` -> the
    /// release tarball or git tree), for machines that cannot download it.
    pub sources: BTreeMap<String, PathBuf>,
    pub cancel: Cancel,
    pub cleanup: Cleanup,
    /// How long a server may take from container creation to answering.
    pub ready_deadline: Duration,
    /// Measure again with a smaller CPU share a server that left the generator no headroom.
    pub headroom: Headroom,
    /// Search each server's capacity at this latency target after the loads, with the bounds
    /// of the scenario's `[capacity]` or their defaults (the command line's `--capacity`).
    pub capacity: Option<scenario::CapacityTarget>,
    /// An A/B run: measure the baseline record's images beside the candidate's, round by
    /// round, until the paired comparison is decided ([`crate::against`]); `runs` is then ignored
    /// for the against's `max_rounds`.
    pub against: Option<Against>,
    /// The benchctl binary `[load] generators` run (an image is made of it on each generator
    /// host); `None` for this process's own file, which is what the command line uses.
    pub generator_binary: Option<PathBuf>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions::new()
    }
}

impl RunOptions {
    /// The scenario's runs, into `results/`, every server, nothing to cancel with yet.
    pub fn new() -> RunOptions {
        RunOptions {
            runs: None,
            out: None,
            results_dir: PathBuf::from("results"),
            only: Vec::new(),
            sources: BTreeMap::new(),
            cancel: Cancel::new(),
            cleanup: Cleanup::new(),
            ready_deadline: Duration::from_secs(20),
            headroom: Headroom::Off,
            capacity: None,
            against: None,
            generator_binary: None,
        }
    }
}

/// Why a run could not start, or could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The options, the scenario and this machine do not fit together; found before anything
    /// started.
    #[error("{0}")]
    Invalid(String),
    /// A server kind's manifest is missing or wrong.
    #[error("{0}")]
    Manifest(#[from] scenario::ScenarioError),
    /// The results file cannot be claimed.
    #[error("{0}")]
    Results(#[from] ReportError),
    /// Docker itself is unusable.
    #[error(transparent)]
    Docker(#[from] OrchestratorError),
    /// The engine of a `[[host]]` the scenario's servers use cannot be reached.
    #[error("host {host}: {source}")]
    Host {
        host: String,
        #[source]
        source: OrchestratorError,
    },
    /// A step of a run that had started failed.
    #[error("{0}")]
    Step(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// A mistake in what was asked (exit status 2), rather than a failure while doing it.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            RunError::Invalid(_) | RunError::Manifest(_) | RunError::Results(_)
        )
    }
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let context = context.into();
    move |source| RunError::Io { context, source }
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
                scenario,
                reason,
            } => write!(
                f,
                "containers of this run may remain on {host} ({}): `benchctl gc --scenario {} --host {host}` removes them once its engine answers, as does the next run that uses it",
                first_line(reason),
                scenario.display()
            ),
            Problem::LeftBehind {
                host: None, reason, ..
            } => write!(
                f,
                "containers of this run may remain on this machine's engine ({}): `benchctl gc` removes them once it answers",
                first_line(reason)
            ),
        }
    }
}

/// The server kinds a scenario at `scenario` may name: its own folder's, then those of
/// `docker_dir` when given (it must exist), else of `docker/` beside the scenario's folder and of
/// `./docker` ([`scenario::Kinds::around`]).
pub fn kinds_for(scenario: &Path, docker_dir: Option<&Path>) -> Result<Kinds, RunError> {
    if let Some(d) = docker_dir {
        if !d.is_dir() {
            return Err(RunError::Invalid(format!(
                "{}: no such folder (the docker folder holds one build context per server kind)",
                d.display()
            )));
        }
    }
    Ok(Kinds::around(scenario, docker_dir))
}

/// Runs `plan`: see the crate documentation. Errors are returned only when the run could not
/// start (nothing was made, nothing is left); once it has started, whatever happens ends in a
/// [`RunOutcome`] with the record saved somewhere.
pub async fn run(
    plan: &Plan,
    opts: RunOptions,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, RunError> {
    // Everything that can be checked is checked before anything starts.
    let ab = match &opts.against {
        Some(a) => Some(against::prepare(plan, &opts, a)?),
        None => None,
    };
    let runs = match &ab {
        Some(ab) => ab.against.max_rounds,
        None => opts.runs.unwrap_or(plan.runs),
    };
    if runs == 0 {
        return Err(RunError::Invalid(
            "the number of runs must be at least 1".to_string(),
        ));
    }
    for name in &opts.only {
        if !plan.servers.iter().any(|s| &s.name == name) {
            return Err(RunError::Invalid(format!(
                "--only {name}: the scenario has no server of that name (it has: {})",
                plan.servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut sources = BTreeMap::new();
    for (kind, path) in &opts.sources {
        let built_here = plan
            .servers
            .iter()
            .any(|s| &s.kind == kind && matches!(s.image, ImageSource::Build { .. }));
        if !built_here {
            return Err(RunError::Invalid(format!(
                "--source {kind}={}: the scenario has no server of kind {kind}",
                path.display()
            )));
        }
        let src = BuildSource::read(path).map_err(|e| RunError::Invalid(e.to_string()))?;
        sources.insert(kind.clone(), src);
    }
    check_cpus(plan)?;
    // A load the generator cannot open the connections for would fail on its own limits and
    // look like the server's failures: found now, not after the images are built.
    let threads = plan.cpus.loadgen.len().max(1);
    for d in plan.documents.iter().filter(|_| plan.generators.is_empty()) {
        loadgen::limits::ensure_open_files(d.load.concurrency, threads)
            .map_err(|e| RunError::Invalid(format!("document `{}`: {e}", d.name)))?;
    }
    let out = results_path(&opts, plan)?;

    // Every engine a server runs on: this machine's (index 0) and each used [[host]]'s. This
    // machine's also when it makes the images of a host that has them shipped.
    let mut engines: Vec<Option<Orchestrator>> = Vec::with_capacity(plan.hosts.len() + 1);
    let here = plan
        .servers
        .iter()
        .any(|s| plan.host_of(s).is_none_or(|h| h.images == HostImages::Ship));
    engines.push(if here {
        Some(Orchestrator::connect().await?)
    } else {
        None
    });
    for (i, h) in plan.hosts.iter().enumerate() {
        if !plan.servers.iter().any(|s| s.host == Some(i)) && !plan.generators.contains(&i) {
            engines.push(None);
            continue;
        }
        let orch = Orchestrator::connect_to(&crate::hosts::endpoint(h))
            .await
            .map_err(|source| RunError::Host {
                host: h.name.clone(),
                source,
            })?;
        engines.push(Some(orch));
    }
    let connected: Vec<&Orchestrator> = engines.iter().flatten().collect();
    // What each [[host]] engine says of itself, all at once: kept in the record, and the
    // CPUs `[cpus] servers` names checked against each server's own machine.
    let facts = futures_util::future::join_all(
        plan.hosts
            .iter()
            .zip(&engines[1..])
            .filter_map(|(h, e)| e.as_ref().map(|e| (h, e)))
            .map(|(h, orch)| async move {
                orch.facts()
                    .await
                    .map(|f| (h, f))
                    .map_err(|source| RunError::Host {
                        host: h.name.clone(),
                        source,
                    })
            }),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, RunError>>()?;
    let mut engine_records = Vec::new();
    for (h, f) in facts {
        let i = plan.hosts.iter().position(|x| x.name == h.name);
        if f.cpus > 0 && plan.servers.iter().any(|s| s.host.is_some() && s.host == i) {
            if let Some(c) = plan.cpus.servers.iter().find(|&&c| c as u64 >= f.cpus) {
                return Err(RunError::Invalid(format!(
                    "{}: [cpus] servers names CPU {c}, but host {} has CPUs 0-{}",
                    plan.source.display(),
                    h.name,
                    f.cpus - 1
                )));
            }
        }
        engine_records.push(report::EngineRecord {
            name: h.name.clone(),
            url: h.url.to_string(),
            version: f.version,
            api_version: f.api_version,
            cpus: f.cpus,
            memory_bytes: f.memory_bytes,
            kernel: f.kernel,
            clock_offset_s: f.clock_offset_s,
            clock_uncertainty_s: f.clock_uncertainty_s,
        });
    }
    // An A/B run's baseline images must be here, on this machine's engine.
    if let (Some(ab), Some(orch)) = (&ab, engines[0].as_ref()) {
        against::check_images(orch, ab).await?;
    }

    let started_at = report::record::now_rfc3339();
    let run_id = format!(
        "{}-{}-{}",
        plan.name,
        started_at.replace([':', '-'], "").trim_end_matches('Z'),
        std::process::id()
    );
    let out = out.unwrap_or_else(|| opts.results_dir.join(format!("{run_id}.json")));
    let mut host = HostFacts::collect();
    host.docker_version = match &engines[0] {
        Some(local) => local.docker_version().await.ok(),
        None => None,
    };
    let mut record = RunRecord {
        schema_version: report::SCHEMA_VERSION,
        benchctl_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.clone(),
        started_at,
        finished_at: None,
        status: RunStatus::Running,
        scenario: ScenarioRecord {
            name: plan.name.clone(),
            path: plan.source.display().to_string(),
            sha256: plan.scenario_hash.clone(),
            source: plan.text.clone(),
        },
        host,
        engines: engine_records,
        servers: Vec::new(),
        loads: Vec::new(),
        capacity: Vec::new(),
        against: ab.as_ref().map(|ab| AgainstRecord {
            baseline_run_id: ab.against.record.run_id.clone(),
            baseline_path: ab.against.path.display().to_string(),
            threshold: ab.against.threshold,
            alpha: report::paired::ALPHA,
            min_rounds: report::paired::MIN_ROUNDS,
            max_rounds: ab.against.max_rounds,
            looks: report::Looks::Growing,
            fresh_containers: ab.against.fresh,
            baseline_generator: ab
                .generator
                .as_ref()
                .map(|g| format!("{} ({})", g.path.display(), g.version)),
            gates: ab.gates,
            budget_s: ab.against.budget.as_secs_f64(),
            slowed: ab
                .against
                .slowed
                .iter()
                .map(|(server, factor)| Slowed {
                    server: server.clone(),
                    factor: *factor,
                })
                .collect(),
            servers: Vec::new(),
            loads: Vec::new(),
            stop: None,
        }),
    };
    // Claimed before any work: a file that exists or cannot be written stops the run here.
    let file = RecordFile::create(&out, &record, &rundir::writer_tag())?;
    opts.cleanup.set_run(&run_id);
    opts.cleanup.set_endpoints(
        connected.iter().map(|o| o.endpoint().clone()).collect(),
        &plan.source,
    );
    opts.cleanup.add_path(file.tmp_path().to_path_buf());
    let mut results = Results::new(file);

    let mut containers = 0;
    for orch in &connected {
        containers += orch.gc_stale().await.unwrap_or(0);
    }
    let folders = rundir::sweep_stale(&std::env::temp_dir()).folders;
    if containers + folders > 0 {
        observer.event(&Event::SweptStale {
            containers,
            folders,
        });
    }

    let mut left_behind: Vec<(Option<String>, String)> = Vec::new();
    let outcome = match RunDir::create() {
        Err(e) => Err(format!("cannot make the run's private folder: {e}")),
        Ok(run_dir) => 'run: {
            opts.cleanup.add_path(run_dir.path().to_path_buf());
            // Should this run be killed while writing its record, the sweep that removes this
            // folder removes the temporary record too (a note lost costs only that).
            let _ = run_dir.note_record_tmp(results.tmp_path());
            let (scheme, tls_dir) = if plan.tls {
                let addresses: Vec<std::net::IpAddr> =
                    plan.hosts.iter().map(|h| h.address).collect();
                match crate::tls::RunCertificate::create(
                    &run_dir.path().join("tls"),
                    plan.tls_key,
                    &addresses,
                ) {
                    Ok(c) => (
                        Scheme::Https {
                            cert_pem: c.ca_pem,
                            http2: plan.http2,
                        },
                        Some(c.dir),
                    ),
                    Err(e) => break 'run Err(format!("{e}")),
                }
            } else {
                (Scheme::Http { http2: plan.http2 }, None)
            };
            let ctx = Ctx {
                engines: &engines,
                plan,
                sources: &sources,
                runs,
                opts: &opts,
                run_dir: &run_dir,
                run_id: &run_id,
                observer: observer.as_ref(),
                observer_arc: &observer,
                ab: ab.as_ref(),
                capacity: match (opts.capacity, &plan.capacity) {
                    (Some(t), Some(c)) => Some(c.clone().with_target(t)),
                    (Some(t), None) => Some(scenario::CapacitySpec::new(t)),
                    (None, c) => c.clone(),
                },
                scheme,
                tls_dir,
                generators: std::sync::OnceLock::new(),
                lost: Default::default(),
            };
            let r = {
                let work = ctx.execute(&mut record, &mut results);
                tokio::pin!(work);
                tokio::select! {
                    r = &mut work => r.map_err(|e| format!("{e:#}")),
                    () = opts.cancel.cancelled() => Ok(()),
                }
                // The work is dropped here when it was cancelled: its containers' guards go
                // with it.
            };
            // Whatever happened, no container of this run outlives it. The guards of the work
            // removed theirs as they dropped; this catches any a cancelled step had just made.
            // Every engine at once, each within its own bounds: one that stopped answering
            // keeps its containers, and the run says where.
            let run_id = &run_id;
            let ctx = &ctx;
            let swept =
                futures_util::future::join_all(engines.iter().enumerate().filter_map(|(i, e)| {
                    let host = i.checked_sub(1).map(|h| plan.hosts[h].name.clone());
                    // An engine lost during the run gets one short try: it may be back.
                    let bound = match &host {
                        Some(h) if ctx.is_lost(h) => LOST_ENGINE_SWEEP,
                        _ => SWEEP_BOUND,
                    };
                    e.as_ref().map(|orch| async move {
                        let r = match tokio::time::timeout(bound, orch.remove_run(run_id)).await {
                            Ok(r) => r.map_err(|e| e.to_string()),
                            Err(_) => Err(format!("its engine did not answer within {bound:?}")),
                        };
                        (host, r)
                    })
                }))
                .await;
            left_behind = swept
                .into_iter()
                .filter_map(|(host, r)| r.err().map(|e| (host, e)))
                .collect();
            r
        }
    };

    record.finished_at = Some(report::record::now_rfc3339());
    let mut problems = Vec::new();
    record.status = match (outcome, opts.cancel.reason()) {
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
    for (host, reason) in left_behind {
        problems.push(Problem::LeftBehind {
            host,
            scenario: plan.source.clone(),
            reason,
        });
    }
    // One problem per server and document, over its rounds.
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
    let saved = results.finish(&record, observer.as_ref());
    Ok(RunOutcome {
        record,
        saved,
        problems,
    })
}

fn check_cpus(plan: &Plan) -> Result<(), RunError> {
    let n = loadgen::cpu::online_cpus();
    // With generators on other hosts, `loadgen` names their CPUs: checked against each
    // generator's machine before the first load.
    let loadgen: &[usize] = if plan.generators.is_empty() {
        &plan.cpus.loadgen
    } else {
        &[]
    };
    // Servers on other hosts name those machines' CPUs: checked against each once connected.
    let servers: &[usize] = if plan.servers.iter().any(|s| s.host.is_none()) {
        &plan.cpus.servers
    } else {
        &[]
    };
    for (what, list) in [("servers", servers), ("loadgen", loadgen)] {
        if let Some(c) = list.iter().find(|&&c| c >= n) {
            return Err(RunError::Invalid(format!(
                "{}: [cpus] {what} names CPU {c}, but this machine has CPUs 0-{}",
                plan.source.display(),
                n - 1
            )));
        }
    }
    Ok(())
}

/// The results file asked for, its folder checked; `None` for a default name in the results
/// folder, which is made if missing.
fn results_path(opts: &RunOptions, plan: &Plan) -> Result<Option<PathBuf>, RunError> {
    match &opts.out {
        Some(p) => {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if dir.exists() && !dir.is_dir() {
                return Err(RunError::Invalid(format!(
                    "{}: {} is not a folder",
                    p.display(),
                    dir.display()
                )));
            }
            if !dir.is_dir() {
                return Err(RunError::Invalid(format!(
                    "{}: the folder {} does not exist (make it first; a run does not guess where results belong)",
                    p.display(),
                    dir.display()
                )));
            }
            if p.exists() {
                return Err(ReportError::Exists { path: p.clone() }.into());
            }
            Ok(Some(p.clone()))
        }
        None => {
            std::fs::create_dir_all(&opts.results_dir).map_err(|e| {
                RunError::Invalid(format!(
                    "cannot make the results folder {} for {}: {e}",
                    opts.results_dir.display(),
                    plan.name
                ))
            })?;
            Ok(None)
        }
    }
}

struct Ctx<'a> {
    /// This machine's engine, then each `[[host]]`'s, in the plan's order; connected when a
    /// server runs there.
    engines: &'a [Option<Orchestrator>],
    plan: &'a Plan,
    sources: &'a BTreeMap<String, BuildSource>,
    runs: u32,
    opts: &'a RunOptions,
    run_dir: &'a RunDir,
    run_id: &'a str,
    observer: &'a dyn Observer,
    observer_arc: &'a Arc<dyn Observer>,
    /// The capacity search to make after the loads, if any.
    capacity: Option<scenario::CapacitySpec>,
    /// How servers are reached: HTTPS trusting the run's own authority when the scenario
    /// says `tls = true`, with the folder of the certificate the servers get; HTTP/2 when it
    /// says `http = "2"`.
    scheme: Scheme,
    tls_dir: Option<PathBuf>,
    /// An A/B run's plan.
    ab: Option<&'a AgainstPlan>,
    /// `[load] generators`, ready once the run has made their image on each host.
    generators: std::sync::OnceLock<Vec<crate::generators::Generator>>,
    /// The `[[host]]`s whose engine stopped answering about a server during the run.
    lost: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// A server that was started and verified.
struct Live {
    index: usize,
    guard: ContainerGuard,
    /// In a TLS run, where it also serves plain HTTP for a cache in front of it.
    plain: Option<SocketAddr>,
    /// On the baseline side of an A/B run.
    baseline: bool,
    /// The image it runs: a fresh container for the next round runs the same one.
    image: BuiltImage,
}

/// One side of an A/B run on fresh containers (`Ctx::renew`).
struct Renewed {
    started: usize,
    /// Containers of the last round the engine did not remove.
    not_removed: usize,
    /// Servers that could not start again, with why.
    lost: Vec<(usize, String)>,
}

/// The warm-up of a fresh container's first load in a round of an A/B run.
const FRESH_WARMUP: Duration = Duration::from_millis(250);

/// The longest a load waits for room in the kernel's connection tracking table: its entries
/// of closed connections expire after 120 s.
const CONNTRACK_WAIT: Duration = Duration::from_secs(130);

/// What became of one load.
enum Turn {
    /// Measured at the CPU share it ended with.
    Measured(Box<Measured>, Option<f64>),
    /// The server, or one it needs, died: these servers are unavailable from here on.
    Died(Vec<(usize, String)>),
    /// The run was stopped during the load, which is not kept.
    Stopped,
}

/// A server started and verified.
struct Started {
    guard: ContainerGuard,
    /// Its plain-HTTP listener beside TLS, for the servers that front it.
    plain: Option<SocketAddr>,
    image: BuiltImage,
    /// What it calls itself, from the header its manifest names.
    version: Option<String>,
    /// From container creation to verified, seconds.
    ready_s: f64,
}

/// Why a server is not measured, and its image when it got that far.
struct NotStarted {
    image: Option<BuiltImage>,
    reason: String,
}

fn server_record(
    spec: &scenario::ServerSpec,
    host: Option<&str>,
    image: Option<&BuiltImage>,
    server_header: Option<String>,
    status: ServerStatus,
) -> ServerRecord {
    ServerRecord {
        name: spec.name.clone(),
        kind: spec.kind.as_str().to_string(),
        image_tag: image.map(|b| b.tag.clone()).unwrap_or_default(),
        image_id: image.map(|b| b.id.clone()),
        server_header,
        status,
        host: host.map(str::to_string),
    }
}

impl Ctx<'_> {
    /// The `[[host]]` whose engine runs server `i`; `None` for this machine's.
    fn host_name(&self, i: usize) -> Option<&str> {
        self.plan.servers[i]
            .host
            .map(|h| self.plan.hosts[h].name.as_str())
    }

    /// Whether server `i` runs on a `[[host]]` whose images are built here and shipped.
    fn ships(&self, i: usize) -> bool {
        self.plan
            .host_of(&self.plan.servers[i])
            .is_some_and(|h| h.images == HostImages::Ship)
    }

    /// This machine's engine (connected before the run began when a server runs there or a
    /// host has its images shipped).
    fn here(&self) -> &Orchestrator {
        self.engines[0]
            .as_ref()
            .expect("this machine's engine is connected when a host's images are shipped")
    }

    /// The engine that runs server `i` (connected before the run began).
    fn orch(&self, i: usize) -> &Orchestrator {
        let engine = self.plan.servers[i].host.map_or(0, |h| h + 1);
        self.engines[engine]
            .as_ref()
            .expect("every engine a server uses is connected before the run starts")
    }

    async fn execute(&self, record: &mut RunRecord, results: &mut Results) -> Result<(), RunError> {
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
            let gens = crate::generators::prepare(
                plan,
                self.engines,
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

        let mut live: Vec<Live> = Vec::new();
        for (i, want) in wanted.iter().enumerate() {
            if !want {
                continue;
            }
            let srec = self.start_server(i, &expected, &mut live, None).await;
            record.servers.push(srec);
            results.save(record, self.observer);
        }
        // An A/B run's baseline side: the same servers from the baseline record's images.
        let mut base_live: Vec<Live> = Vec::new();
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
                let t = Instant::now();
                let (mut started, mut not_removed) = (0, 0);
                for baseline in [false, true] {
                    let side = if baseline { &mut base_live } else { &mut live };
                    let r = self.renew(side, &expected, ab).await;
                    started += r.started;
                    not_removed += r.not_removed;
                    if !r.lost.is_empty() {
                        self.report_deaths(record, results, r.lost, baseline);
                    }
                }
                applied.clear();
                self.observer.event(&Event::AbFresh {
                    round: round + 1,
                    containers: started,
                    not_removed,
                    seconds: t.elapsed().as_secs_f64(),
                });
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
                let Some(cmp) = report::paired::compare_record(record) else {
                    break;
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
                    stop = Some(AbStop::Decided);
                    break;
                }
                if cmp.groups.is_empty() {
                    // Nothing is measured on both sides any more: more rounds cannot help.
                    break;
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

    /// Whether `host`'s engine stopped answering during the run, about a server or a
    /// generator.
    fn is_lost(&self, host: &str) -> bool {
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
    async fn renew(
        &self,
        side: &mut Vec<Live>,
        expected: &[ExpectedDoc],
        ab: &AgainstPlan,
    ) -> Renewed {
        let old: Vec<Live> = std::mem::take(side);
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
                ab.images.get(&index)
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

    /// A server's name as progress lines print it: the baseline side of an A/B run is marked.
    fn shown(&self, i: usize, baseline: bool) -> String {
        let name = &self.plan.servers[i].name;
        if baseline {
            format!("{name} [baseline]")
        } else {
            name.clone()
        }
    }

    /// Starts server `i` (from `baseline`'s image on an A/B run's baseline side) and adds it to
    /// `live`; its record says whether it could be.
    async fn start_server(
        &self,
        i: usize,
        expected: &[ExpectedDoc],
        live: &mut Vec<Live>,
        baseline: Option<&BaselineImage>,
    ) -> ServerRecord {
        let spec = &self.plan.servers[i];
        let mut srec = match self.bring_up(i, expected, live, baseline, None).await {
            Ok(up) => {
                live.push(Live {
                    index: i,
                    guard: up.guard,
                    plain: up.plain,
                    baseline: baseline.is_some(),
                    image: up.image.clone(),
                });
                server_record(
                    spec,
                    self.host_name(i),
                    Some(&up.image),
                    up.version,
                    ServerStatus::Available {
                        ready_s: up.ready_s,
                    },
                )
            }
            Err(NotStarted { image, reason }) => {
                self.observer.event(&Event::Unavailable {
                    server: &self.shown(i, baseline.is_some()),
                    reason: &reason,
                });
                server_record(
                    spec,
                    self.host_name(i),
                    image.as_ref(),
                    None,
                    ServerStatus::Unavailable { reason },
                )
            }
        };
        if let Some(b) = baseline {
            // Run by id; recorded by the tag it had too.
            srec.image_tag = b.tag.clone();
        }
        srec
    }

    /// One load of one server and document at CPU share `share`, measured again at smaller
    /// shares while `auto` headroom says the generator had none.
    async fn one_load(
        &self,
        l: &Live,
        live: &[Live],
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
    fn keep_load(
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

    /// Gives `l`'s container the CPU share `share` (`None`: its whole cpuset) unless it has it.
    async fn apply_share(
        &self,
        l: &Live,
        share: Option<f64>,
        applied: &mut HashMap<(bool, usize), Option<f64>>,
    ) -> Result<(), OrchestratorError> {
        let key = (l.baseline, l.index);
        let current = applied
            .get(&key)
            .copied()
            .unwrap_or(self.plan.cpus.server_share);
        if share != current {
            self.orch(l.index).set_cpu_share(&l.guard, share).await?;
            applied.insert(key, share);
        }
        Ok(())
    }

    /// What a load says about the generator's headroom: its own CPU time (the kernel's
    /// interrupt work for its sockets outside its own time is not counted: on a shared machine
    /// it cannot be told apart from other tenants').
    fn reading(&self, load: &LoadReport, usage: Option<&Usage>, share: Option<f64>) -> Reading {
        let secs = load.elapsed_s.max(1e-9);
        Reading {
            generator: load.client_cpu_s / secs / load.settings.threads.max(1) as f64,
            lagging: report::record::fell_behind(load),
            server_cores: usage.map(|u| u.cpu_s / secs),
            share,
            cpuset_cores: self.plan.cpus.servers.len() as f64,
        }
    }

    /// Whether `l` or a server it needs has stopped: the servers to report, each with why.
    async fn find_death(
        &self,
        l: &Live,
        live: &[Live],
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
    fn ended(&self, i: usize, e: &OrchestratorError, during: &str) -> String {
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
    fn report_deaths(
        &self,
        record: &mut RunRecord,
        results: &mut Results,
        deaths: Vec<(usize, String)>,
        baseline: bool,
    ) {
        for (i, reason) in deaths {
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

    /// Builds (or, on an A/B run's baseline side, finds `baseline`'s image), starts, waits for
    /// and verifies one server.
    async fn bring_up(
        &self,
        i: usize,
        expected: &[ExpectedDoc],
        live: &[Live],
        baseline: Option<&BaselineImage>,
        again: Option<&BuiltImage>,
    ) -> Result<Started, NotStarted> {
        let spec = &self.plan.servers[i];
        let kind = spec.kind.as_str();
        let manifest = spec.manifest.as_ref();
        if let (Scheme::Https { .. }, Some(m)) = (&self.scheme, manifest) {
            if !m.tls {
                return Err(NotStarted {
                    image: None,
                    reason: format!(
                        "serves no HTTPS here: docker/{kind}/server.toml does not say tls = true, and the scenario says tls = true"
                    ),
                });
            }
        }
        if let (true, Some(m)) = (self.scheme.http2(), manifest) {
            if !m.http2 {
                return Err(NotStarted {
                    image: None,
                    reason: format!(
                        "serves no HTTP/2 here: docker/{kind}/server.toml does not say http2 = true, and the scenario says http = \"2\""
                    ),
                });
            }
        }
        let shown = self.shown(i, baseline.is_some());
        // Files kept beside the record and container names: no spaces or brackets.
        let file_name = if baseline.is_some() {
            format!("{}-baseline", spec.name)
        } else {
            spec.name.clone()
        };
        let image = match baseline {
            Some(b) => ImageSource::Prebuilt {
                image: b.reference.clone(),
            },
            None => spec.image.clone(),
        };
        // A host that has its images shipped gets them from this machine's engine, which
        // builds (or finds) them.
        let ships = self.ships(i);
        let maker = if ships { self.here() } else { self.orch(i) };
        let built = match (again, &image) {
            // A fresh container of an image this run already started: nothing to build, check
            // or ship again.
            (Some(b), _) => b.clone(),
            (None, ImageSource::Build { context }) => {
                self.observer.event(&Event::Building {
                    server: &spec.name,
                    context,
                    host: if ships { None } else { self.host_name(i) },
                });
                let log = self.run_dir.build_log(&spec.name);
                match maker
                    .build_image_from(kind, context, self.sources.get(kind), &log)
                    .await
                {
                    Ok(b) => b,
                    Err(e) => {
                        let e =
                            crate::images::keep_log(e, &log, |_| self.kept_log_path(&spec.name));
                        let mut reason = self.explain(&spec.name, "image build failed", &e);
                        if let (Some(h), false, OrchestratorError::Build { .. }) =
                            (self.host_name(i), ships, &e)
                        {
                            reason.push_str(&format!(
                                "; if {h} reaches no package mirror, images = \"ship\" in its [[host]] builds the image here and sends it there"
                            ));
                        }
                        return Err(NotStarted {
                            image: None,
                            reason,
                        });
                    }
                }
            }
            (None, ImageSource::Prebuilt { image }) => self
                .prebuilt(maker, image, manifest.is_some())
                .await
                .map_err(|reason| NotStarted {
                    image: None,
                    reason,
                })?,
        };
        let shipped = match (again, ships) {
            (None, true) => match maker.ship_image(self.orch(i), &built.tag).await {
                Ok(s) => Some(s),
                Err(e) => {
                    let host = self.host_name(i).unwrap_or_default();
                    return Err(NotStarted {
                        image: Some(built.clone()),
                        reason: self.explain(
                            &spec.name,
                            &format!("its image could not be shipped to {host}"),
                            &e,
                        ),
                    });
                }
            },
            _ => None,
        };
        if again.is_none() {
            self.observer.event(&Event::Built {
                server: &shown,
                tag: &built.tag,
                built: built.built,
                seconds: built.seconds,
            });
        }
        if let Some(s) = &shipped {
            self.observer.event(&Event::Shipped {
                server: &shown,
                host: self.host_name(i).unwrap_or_default(),
                id: &s.id,
                sent: s.sent,
                bytes: s.bytes,
                seconds: s.seconds,
            });
        }
        let unavailable = |reason: String| NotStarted {
            image: Some(built.clone()),
            reason,
        };

        // The address the server listens on and the load is sent to: 127.0.0.1 on this
        // machine's engine, its host's address on another's.
        let address = self
            .plan
            .host_of(spec)
            .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |h| h.address);
        let mut env = vec![("BENCH_ADDR".to_string(), address.to_string())];
        for (name, value) in &spec.options {
            let Some(decl) = manifest.and_then(|m| m.options.get(name)) else {
                continue;
            };
            let var = decl.env.clone();
            let text = match value {
                OptionValue::Server(d) => {
                    let d = *d;
                    let Some(dep) = live.iter().find(|l| l.index == d) else {
                        return Err(unavailable(format!(
                            "{:?}, which it needs, is unavailable",
                            self.plan.servers[d].name
                        )));
                    };
                    // A server fronting another (a cache) reaches it over plain HTTP/1.x, as
                    // such deployments do; in a TLS run that is the backend's second port, in
                    // a cleartext HTTP/2 run too where the backend has one (one whose own port
                    // then answers HTTP/2 alone), else its own port, which serves HTTP/1.x
                    // beside h2c.
                    match (&self.scheme, dep.plain) {
                        (_, Some(plain)) => plain.to_string(),
                        (Scheme::Http { .. }, None) => dep.guard.socket_addr().to_string(),
                        (Scheme::Https { .. }, None) => {
                            let dep_kind = &self.plan.servers[d].kind;
                            return Err(unavailable(format!(
                                "{:?}, which it fronts over plain HTTP, serves only HTTPS in a TLS run: docker/{dep_kind}/server.toml does not say plain_port = true",
                                self.plan.servers[d].name
                            )));
                        }
                    }
                }
                // Sizes go as whole KiB: every server's size syntax reads a `k` suffix.
                OptionValue::Size(bytes) => format!("{}k", bytes.div_ceil(1024)),
                OptionValue::Integer(n) => n.to_string(),
                OptionValue::Text(t) => t.clone(),
                OptionValue::Bool(b) => b.to_string(),
            };
            env.push((var, text));
        }
        // On another machine's engine a port free here is only likely to be free there too: a
        // server that exits because its port is taken there is started again on another, up
        // to PORT_ATTEMPTS times. The baseline side of an A/B run runs beside the candidate's:
        // never on the scenario's fixed port.
        let fixed = spec.port.filter(|_| baseline.is_none());
        let elsewhere = self.plan.host_of(spec).is_some();
        let orch = self.orch(i);
        let first = expected.first().map(|d| d.url_path.as_str()).unwrap_or("/");
        let mut attempt = 0;
        let (guard, plain, ready) = loop {
            attempt += 1;
            let port = match fixed {
                Some(p) => p,
                None => free_port().map_err(|e| unavailable(format!("no free port: {e}")))?,
            };
            let mut env = env.clone();
            // In a TLS or HTTP/2 run, a server that another one fronts also listens for plain
            // HTTP/1.x when its kind can.
            let plain = if self.scheme != Scheme::HTTP
                && manifest.is_some_and(|m| m.plain_port)
                && self.fronted(i)
            {
                let p = free_port().map_err(|e| unavailable(format!("no free port: {e}")))?;
                env.push(("BENCH_PLAIN_PORT".to_string(), p.to_string()));
                Some(SocketAddr::new(address, p))
            } else {
                None
            };
            let cspec = ContainerSpec {
                name: file_name.clone(),
                image: built.tag.clone(),
                env,
                port,
                address: Some(address),
                cpuset: Some(self.plan.cpus.servers_cpuset()),
                cpu_share: self.plan.cpus.server_share,
                memory_bytes: Some(spec.memory),
                docroot: Some(self.run_dir.docroot()),
                tls_dir: self.tls_dir.clone(),
                http2: self.scheme.http2(),
                run_id: self.run_id.to_string(),
                labels: vec![("benchctl.kind".to_string(), kind.to_string())],
                cmd: None,
                entrypoint: None,
                confinement: manifest.map(confinement).unwrap_or_default(),
            };
            let guard = orch
                .start(&cspec)
                .await
                .map_err(|e| unavailable(self.explain(&file_name, "could not start", &e)))?;
            match orch
                .wait_ready_over(&guard, &self.scheme, port, first, self.opts.ready_deadline)
                .await
            {
                Ok(ready) => break (guard, plain, ready),
                Err(e)
                    if elsewhere
                        && fixed.is_none()
                        && attempt < PORT_ATTEMPTS
                        && port_taken(&e) =>
                {
                    guard.remove().await.map_err(|e| {
                        unavailable(self.explain(&file_name, "could not be removed", &e))
                    })?;
                }
                Err(e) => {
                    return Err(unavailable(self.explain(
                        &file_name,
                        "never became ready",
                        &e,
                    )))
                }
            }
        };
        // Confined as declared, whatever the image says: no process as root, and (on this
        // machine's engine) nothing listening beyond its address and port(s).
        let allowed: Vec<SocketAddr> = std::iter::once(guard.socket_addr()).chain(plain).collect();
        orch.audit(&guard, &allowed).await.map_err(|e| {
            unavailable(self.explain(&file_name, "failed its confinement check", &e))
        })?;
        let verified = orch
            .verify_over(&self.scheme, guard.socket_addr(), expected)
            .await
            .map_err(|e| unavailable(self.explain(&file_name, "verification failed", &e)))?;
        let total = guard.started_at().elapsed();
        let version = match manifest.map_or(VersionHeader::Server, |m| m.version_header) {
            VersionHeader::Via => verified.via.clone().or(verified.server_header.clone()),
            VersionHeader::Server => verified.server_header.clone(),
        };
        if again.is_none() {
            self.observer.event(&Event::Ready {
                server: &shown,
                answering_s: ready.as_secs_f64(),
                verified_s: total.as_secs_f64(),
                version: version.as_deref(),
                host: self.host_name(i),
                address: guard.socket_addr(),
            });
        }
        Ok(Started {
            guard,
            plain,
            image: built,
            version,
            ready_s: total.as_secs_f64(),
        })
    }

    /// Whether another server of the scenario takes server `i` as one of its options (a
    /// Varnish's backend).
    fn fronted(&self, i: usize) -> bool {
        self.plan.servers.iter().any(|s| {
            s.options
                .iter()
                .any(|(_, v)| matches!(v, OptionValue::Server(d) if *d == i))
        })
    }

    /// An existing image to run as it is: present on `orch`, or pulled there. Without a
    /// manifest to name its user, the image's own must not be root.
    async fn prebuilt(
        &self,
        orch: &Orchestrator,
        image: &str,
        has_manifest: bool,
    ) -> Result<BuiltImage, String> {
        let started = std::time::Instant::now();
        if orch.image_id(image).await.ok().flatten().is_none() {
            orch.ensure_base_image(image)
                .await
                .map_err(|e| format!("image {image} is not here and cannot be had: {e:#}"))?;
        }
        let user = orch
            .image_user(image)
            .await
            .map_err(|e| format!("image {image}: {e:#}"))?;
        if !has_manifest {
            if let Err(why) = scenario::manifest::parse_user(&user) {
                let what = if user.trim().is_empty() {
                    "runs as root (it names no USER)".to_string()
                } else {
                    format!("runs as USER {user:?}, which a server may not: {why}")
                };
                return Err(format!(
                    "image {image} {what}; give the image a numeric, non-root USER UID:GID, or run it through a kind whose server.toml names the user"
                ));
            }
        }
        let id = orch
            .image_id(image)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| format!("image {image} went away"))?;
        Ok(BuiltImage {
            tag: image.to_string(),
            id,
            built: false,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Why a server cannot be measured, in one line: `what` happened, the error's cause, and
    /// where its log is kept (a failed build's whole log; a container's last lines, written to
    /// `<record>.<server>.log` beside the results record).
    fn explain(&self, server: &str, what: &str, e: &OrchestratorError) -> String {
        let mut line = format!("{what}: {}", e.headline());
        if let Some(log) = e.log_path() {
            line.push_str(&format!(" (full log: {})", log.display()));
        } else if !e.log_lines().is_empty() {
            let mut text = e.log_lines().join("\n");
            text.push('\n');
            use std::io::Write as _;
            let kept = self
                .kept_file(server, "log")
                .and_then(|(p, mut f)| f.write_all(text.as_bytes()).ok().map(|()| p));
            if let Some(p) = kept {
                line.push_str(&format!(" (its last log lines: {})", p.display()));
            }
        }
        line
    }

    /// A new, empty file beside the results record for a failed build's log (the run folder
    /// goes with the run): `<record>.<server>.build.log`.
    fn kept_log_path(&self, server: &str) -> Option<PathBuf> {
        self.kept_file(server, "build.log").map(|(p, _)| p)
    }

    /// A new, empty file beside the results record (see [`create_beside`]); `None` when none
    /// can be made.
    fn kept_file(&self, server: &str, suffix: &str) -> Option<(PathBuf, std::fs::File)> {
        let out = self
            .opts
            .out
            .clone()
            .unwrap_or_else(|| self.opts.results_dir.join(format!("{}.json", self.run_id)));
        create_beside(&out, server, suffix).ok()
    }

    /// Waits, at most [`CONNTRACK_WAIT`], until the kernel's connection tracking table has room
    /// for the connections a load here opens: a load started into a full table has its new
    /// connections dropped by the kernel, and would blame the server for the timeouts. Back to
    /// back loads of a connection per request fill it (each entry outlives its connection by
    /// two minutes), and fresh entries expire at the rate they were made.
    async fn conntrack_room(&self, load: &LoadSpec) {
        let Some(t) = loadgen::limits::Conntrack::read() else {
            return;
        };
        // A load bounded by time alone opens an unknown number: room for a twentieth of the
        // table is asked, as for a burst.
        let opened = if load.keep_alive || load.version == loadgen::HttpVersion::Http2 {
            u64::from(load.concurrency)
        } else {
            load.requests.unwrap_or(t.max / 20)
        };
        let need = opened.min(t.max / 2);
        if t.has_room_for(need) {
            return;
        }
        self.observer.event(&Event::ConntrackWait {
            count: t.count,
            max: t.max,
            need,
        });
        let deadline = Instant::now() + CONNTRACK_WAIT;
        while Instant::now() < deadline {
            tokio::select! {
                _ = self.opts.cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            if loadgen::limits::Conntrack::read().is_none_or(|t| t.has_room_for(need)) {
                return;
            }
        }
    }

    /// One load against one document, with the server's resource use when `usage`; `None`
    /// when the run was stopped during it.
    async fn measure(
        &self,
        l: &Live,
        load: &LoadSpec,
        url_path: &str,
        usage: bool,
    ) -> Result<Option<Measured>, RunError> {
        let guard = &l.guard;
        let url = format!(
            "{}://{}{}",
            self.scheme.name(),
            guard.socket_addr(),
            url_path
        );
        let target = Target::parse(&url).map_err(|e| RunError::Step(format!("{url}: {e}")))?;
        if self.generators.get().is_none() {
            self.conntrack_room(load).await;
        }
        // The server's CPU counts from where the load's measured part begins: after its
        // warm-up, which the load's requests leave out as well.
        let sampler = async {
            if !usage {
                return None;
            }
            if !load.warmup.is_zero() {
                tokio::time::sleep(load.warmup).await;
            }
            self.orch(l.index).sample_stats(guard).await.ok()
        };
        let baseline_generator = self
            .ab
            .and_then(|ab| ab.generator.as_ref())
            .filter(|_| l.baseline);
        let measured = async {
            Ok::<_, RunError>(match (baseline_generator, self.generators.get()) {
                (Some(g), _) => crate::against::measure_with(
                    g,
                    load,
                    &self.plan.cpus.loadgen,
                    &url,
                    &self.opts.cancel,
                )
                .await?
                .map(|r| (r, Vec::new())),
                (None, Some(gens)) => {
                    crate::generators::measure(
                        gens,
                        &url,
                        load,
                        &self.plan.cpus.loadgen,
                        self.run_id,
                        &self.opts.cancel,
                        self.observer,
                    )
                    .await?
                }
                (None, None) => {
                    let mut cfg = LoadConfig::new(target, load.clone());
                    cfg.cpus = Some(self.plan.cpus.loadgen.clone());
                    cfg.threads = self.plan.cpus.loadgen.len().max(1);
                    let stop = self.opts.cancel.stop_flag().clone();
                    let observer = Arc::clone(self.observer_arc);
                    let planned = load.requests;
                    let m = tokio::task::spawn_blocking(move || {
                        loadgen::run_observed(cfg, &stop, &mut |n| observer.progress(n, planned))
                    })
                    .await
                    .map_err(|e| RunError::Step(format!("the load generator panicked: {e}")))?
                    .map_err(|e| RunError::Step(e.to_string()))?;
                    (m.stopped_early != Some(StopReason::Interrupted))
                        .then(|| (LoadReport::from_measurement(&m), Vec::new()))
                }
            })
        };
        let (sampler, measured) = tokio::join!(sampler, measured);
        let measured: Option<(LoadReport, Vec<GeneratorRecord>)> = measured?;
        let usage = match sampler {
            Some(s) => usage_of(s.finish().await),
            None => None,
        };
        Ok(measured.map(|(load, generators)| Measured {
            load,
            usage,
            generators,
        }))
    }
}

/// A server's resource use over a load, when Docker reported any.
fn usage_of(u: orchestrator::ContainerUsage) -> Option<Usage> {
    (u.samples > 0).then_some(Usage {
        cpu_s: u.cpu_seconds,
        peak_memory_bytes: u.peak_memory_bytes,
    })
}

/// What one load is of: the round, the server, and the document with its load.
#[derive(Clone, Copy)]
struct LoadAt<'a> {
    round: u32,
    server: &'a scenario::ServerSpec,
    doc: &'a scenario::MaterializedDoc,
    spec: &'a scenario::DocumentSpec,
}

/// One load as measured: the generator's report and the server's resource use; with `[load]
/// generators`, each one's part (the report is their merge).
struct Measured {
    load: LoadReport,
    usage: Option<Usage>,
    generators: Vec<GeneratorRecord>,
}

/// A server container's rights: what its manifest declares, nothing more.
pub fn confinement(m: &Manifest) -> Confinement {
    let c = &m.container;
    Confinement {
        user: Some(c.user.clone()),
        cap_add: c.capabilities.clone(),
        read_only: true,
        tmpfs: c
            .tmpfs
            .iter()
            .map(|t| Tmpfs {
                path: t.path.clone(),
                size_bytes: t.size,
                exec: t.exec,
            })
            .collect(),
        pids_limit: i64::from(c.pids_limit),
    }
}

/// A new, empty file beside `out` for what a run keeps of `server` (`suffix`: `build.log`,
/// `log`): `<record>.<server>.<suffix>`, or, when that exists already, the first free of
/// `<record>.<server>.2.<suffix>` ... `.99.`; created exclusively, never through a symlink.
pub fn create_beside(
    out: &Path,
    server: &str,
    suffix: &str,
) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut last = None;
    for n in 1..100 {
        let kept = match n {
            1 => out.with_extension(format!("{server}.{suffix}")),
            n => out.with_extension(format!("{server}.{n}.{suffix}")),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&kept)
        {
            Ok(file) => return Ok((kept, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

fn available(servers: &[ServerRecord], name: &str) -> bool {
    servers
        .iter()
        .any(|s| s.name == name && matches!(s.status, ServerStatus::Available { .. }))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// A port nothing listens on now (the server binds it a moment later).
/// How many ports a server on another machine's engine is tried on, each free here, before
/// one taken there makes it unavailable.
const PORT_ATTEMPTS: u32 = 3;

/// How long the run's last sweep waits for an engine: a listing, the removals and the wait
/// until they are gone, each request within the engine's own answer bound.
const SWEEP_BOUND: Duration = Duration::from_secs(60);
/// The same for an engine that stopped answering during the run: one short try.
const LOST_ENGINE_SWEEP: Duration = Duration::from_secs(5);

/// The server exited because its port was taken: every server kind's bind error says
/// "Address already in use" (EADDRINUSE), in some capitalisation.
fn port_taken(e: &OrchestratorError) -> bool {
    matches!(e, OrchestratorError::Exited { .. })
        && e.log_lines().iter().any(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("address already in use") || l.contains("eaddrinuse")
        })
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(lines: &[&str]) -> OrchestratorError {
        OrchestratorError::Exited {
            name: "nginx".into(),
            code: Some(1),
            log_tail: lines.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn a_kept_log_takes_the_next_free_name_beside_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.json");
        let (first, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(first, dir.path().join("run.nginx.build.log"));
        let (second, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(second, dir.path().join("run.nginx.2.build.log"));
        // A symlink where the next name would be is a name taken, never followed.
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join("run.nginx.3.build.log")).unwrap();
        let (third, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(third, dir.path().join("run.nginx.4.build.log"));
        assert!(!target.exists());
    }

    #[test]
    fn a_bind_error_in_any_servers_words_is_a_port_taken() {
        for line in [
            "nginx: [emerg] bind() to 10.0.0.5:40001 failed (98: Address already in use)",
            "(98)Address already in use: AH00072: make_sock: could not bind to address 10.0.0.5:40001",
            "OSError: [Errno 98] Address already in use",
            "listen tcp 10.0.0.5:40001: bind: address already in use",
            "bind failed: EADDRINUSE",
        ] {
            assert!(port_taken(&exited(&["starting", line])), "{line}");
        }
        assert!(!port_taken(&exited(&["segmentation fault"])));
        // Only a server that exited: one that never answered is not retried elsewhere.
        assert!(!port_taken(&OrchestratorError::Invalid(
            "Address already in use".into()
        )));
    }
}
