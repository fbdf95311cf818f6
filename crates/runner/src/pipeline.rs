//! The run itself: check, claim the results file, start and verify every server, measure every
//! document round by round, search each one's capacity when asked ([`capacity`]), record after
//! each load, and leave nothing behind.
//!
//! [`run`] here holds the run's course; its steps are methods of one run context spread over
//! the modules below: [`preflight`] (what is checked before anything starts), [`bringup`] (a
//! server's image, container, audit and verification), [`rounds`] (the loads, round by round,
//! and A/B's ABBA order), [`measure`] (one load and the server's use of CPU and memory),
//! [`liveness`] (deaths, lost hosts, fresh containers), [`capacity`], and [`outcome`] (how a
//! run ended).

mod bringup;
mod capacity;
mod liveness;
mod measure;
mod outcome;
mod preflight;
mod rounds;
#[cfg(test)]
mod tests;

pub use bringup::confinement;
use bringup::NotStarted;
use measure::Measured;
use outcome::io;
pub use outcome::{Problem, RunError, RunOutcome};
pub use preflight::kinds_for;
use preflight::{check_cpus, results_path};

use crate::against::{self, Against, AgainstPlan, BaselineImage};
use crate::cancel::{Cancel, Cleanup};
use crate::events::{Event, Observer};
use crate::fleet::{Container, Engine, Fleet};
use crate::headroom::{self, Headroom, Reading, MAX_TRIES};
use crate::results::{Results, Saved};
use crate::rundir::{self, RunDir};
use loadgen::json::LoadReport;
use loadgen::{LoadConfig, LoadSpec, StopReason, Target};
use orchestrator::{
    BuildSource, BuiltImage, Confinement, ContainerSpec, ExpectedDoc, OrchestratorError, Scheme,
    Tmpfs,
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

/// Runs `plan`: see the crate documentation. Errors are returned only when the run could not
/// start (nothing was made, nothing is left); once it has started, whatever happens ends in a
/// [`RunOutcome`] with the record saved somewhere.
pub async fn run(
    plan: &Plan,
    opts: RunOptions,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, RunError> {
    run_on(&crate::fleet::Docker, plan, opts, observer).await
}

/// [`run`] on the engines `fleet` connects to.
pub(crate) async fn run_on<F: Fleet>(
    fleet: &F,
    plan: &Plan,
    opts: RunOptions,
    observer: Arc<dyn Observer>,
) -> Result<RunOutcome, RunError> {
    // Everything that can be checked is checked before anything starts.
    let ab = match &opts.against {
        Some(a) => Some(against::prepare(plan, &opts, a)?),
        None => None,
    };
    let (runs, sources) = check_options(plan, &opts, ab.as_ref())?;
    let out = results_path(&opts, plan)?;

    let engines = connect(fleet, plan).await?;
    let connected: Vec<&F::Engine> = engines.iter().flatten().collect();
    let engine_records = engine_records(plan, &engines).await?;
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
        Some(local) => local.version().await.ok(),
        None => None,
    };
    let mut record = new_record(plan, &run_id, started_at, host, engine_records, ab.as_ref());
    // Claimed before any work: a file that exists or cannot be written stops the run here.
    let file = RecordFile::create(&out, &record, &rundir::writer_tag())?;
    opts.cleanup.set_run(&run_id);
    opts.cleanup.set_endpoints(
        connected.iter().filter_map(|o| o.endpoint()).collect(),
        &plan.source,
    );
    opts.cleanup.add_path(file.tmp_path().to_path_buf());
    let mut results = Results::new(file);

    sweep_stale(&connected, observer.as_ref()).await;

    let mut left_behind: Vec<(Option<String>, String)> = Vec::new();
    let outcome = match RunDir::create() {
        Err(e) => Err(format!("cannot make the run's private folder: {e}")),
        Ok(run_dir) => 'run: {
            opts.cleanup.add_path(run_dir.path().to_path_buf());
            // Should this run be killed while writing its record, the sweep that removes this
            // folder removes the temporary record too (a note lost costs only that).
            let _ = run_dir.note_record_tmp(results.tmp_path());
            let (scheme, tls_dir) = match scheme_for(plan, &run_dir) {
                Ok(s) => s,
                Err(e) => break 'run Err(e),
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
            left_behind = ctx.sweep().await;
            r
        }
    };

    let problems = outcome::conclude(
        &mut record,
        plan,
        outcome,
        opts.cancel.reason(),
        left_behind,
    );
    let saved = results.finish(&record, observer.as_ref());
    Ok(RunOutcome {
        record,
        saved,
        problems,
    })
}

/// The options checked against the scenario before anything starts: the rounds, the servers
/// `--only` names, the sources given (read now), the CPUs and the open files a load needs.
fn check_options(
    plan: &Plan,
    opts: &RunOptions,
    ab: Option<&AgainstPlan>,
) -> Result<(u32, BTreeMap<String, BuildSource>), RunError> {
    let runs = match ab {
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
    Ok((runs, sources))
}

/// Every engine a server runs on: this machine's (index 0) and each used `[[host]]`'s. This
/// machine's also when it makes the images of a host that has them shipped.
async fn connect<F: Fleet>(fleet: &F, plan: &Plan) -> Result<Vec<Option<F::Engine>>, RunError> {
    let mut engines: Vec<Option<F::Engine>> = Vec::with_capacity(plan.hosts.len() + 1);
    let here = plan
        .servers
        .iter()
        .any(|s| plan.host_of(s).is_none_or(|h| h.images == HostImages::Ship));
    engines.push(if here {
        Some(fleet.here().await?)
    } else {
        None
    });
    for (i, h) in plan.hosts.iter().enumerate() {
        if !plan.servers.iter().any(|s| s.host == Some(i)) && !plan.generators.contains(&i) {
            engines.push(None);
            continue;
        }
        let orch = fleet.host(h).await.map_err(|source| RunError::Host {
            host: h.name.clone(),
            source,
        })?;
        engines.push(Some(orch));
    }
    Ok(engines)
}

/// What each `[[host]]` engine says of itself, all at once: kept in the record, and the CPUs
/// `[cpus] servers` names checked against each server's own machine.
async fn engine_records<E: Engine>(
    plan: &Plan,
    engines: &[Option<E>],
) -> Result<Vec<report::EngineRecord>, RunError> {
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
    Ok(engine_records)
}

/// The record of a run that starts now: what it ran, where, and, for an A/B run, against what.
fn new_record(
    plan: &Plan,
    run_id: &str,
    started_at: String,
    host: HostFacts,
    engines: Vec<report::EngineRecord>,
    ab: Option<&AgainstPlan>,
) -> RunRecord {
    RunRecord {
        schema_version: report::SCHEMA_VERSION,
        benchctl_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.to_string(),
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
        engines,
        servers: Vec::new(),
        loads: Vec::new(),
        capacity: Vec::new(),
        against: ab.map(|ab| AgainstRecord {
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
    }
}

/// How servers are reached: HTTPS trusting the run's own certificate, made in `run_dir` for
/// every host's address, when the scenario says `tls = true` (with that certificate's folder);
/// HTTP/2 when it says `http = "2"`.
fn scheme_for(plan: &Plan, run_dir: &RunDir) -> Result<(Scheme, Option<PathBuf>), String> {
    if !plan.tls {
        return Ok((Scheme::Http { http2: plan.http2 }, None));
    }
    let addresses: Vec<IpAddr> = plan.hosts.iter().map(|h| h.address).collect();
    let c =
        crate::tls::RunCertificate::create(&run_dir.path().join("tls"), plan.tls_key, &addresses)
            .map_err(|e| format!("{e}"))?;
    Ok((
        Scheme::Https {
            cert_pem: c.ca_pem,
            http2: plan.http2,
        },
        Some(c.dir),
    ))
}

/// Removes what runs of this machine whose owners are gone left on every engine and in the
/// temporary folder, and says so when there was any.
async fn sweep_stale<E: Engine>(connected: &[&E], observer: &dyn Observer) {
    let mut containers = 0;
    for orch in connected {
        containers += orch.gc_stale().await.unwrap_or(0);
    }
    let folders = rundir::sweep_stale(&std::env::temp_dir()).folders;
    if containers + folders > 0 {
        observer.event(&Event::SweptStale {
            containers,
            folders,
        });
    }
}

struct Ctx<'a, E: Engine> {
    /// This machine's engine, then each `[[host]]`'s, in the plan's order; connected when a
    /// server runs there.
    engines: &'a [Option<E>],
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
struct Live<E: Engine> {
    index: usize,
    guard: E::Container,
    /// In a TLS run, where it also serves plain HTTP for a cache in front of it.
    plain: Option<SocketAddr>,
    /// On the baseline side of an A/B run.
    baseline: bool,
    /// The image it runs: a fresh container for the next round runs the same one.
    image: BuiltImage,
}

impl<E: Engine> Ctx<'_, E> {
    /// Whatever happened, no container of this run outlives it. The guards of the work removed
    /// theirs as they dropped; this catches any a cancelled step had just made. Every engine at
    /// once, each within its own bounds: one that stopped answering keeps its containers, and
    /// the run says where (`None`: this machine's engine).
    async fn sweep(&self) -> Vec<(Option<String>, String)> {
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
    fn here(&self) -> &E {
        self.engines[0]
            .as_ref()
            .expect("this machine's engine is connected when a host's images are shipped")
    }

    /// The engine that runs server `i` (connected before the run began).
    fn orch(&self, i: usize) -> &E {
        let engine = self.plan.servers[i].host.map_or(0, |h| h + 1);
        self.engines[engine]
            .as_ref()
            .expect("every engine a server uses is connected before the run starts")
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
}

fn available(servers: &[ServerRecord], name: &str) -> bool {
    servers
        .iter()
        .any(|s| s.name == name && matches!(s.status, ServerStatus::Available { .. }))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// How long the run's last sweep waits for an engine: a listing, the removals and the wait
/// until they are gone, each request within the engine's own answer bound.
const SWEEP_BOUND: Duration = Duration::from_secs(60);
/// The same for an engine that stopped answering during the run: one short try.
const LOST_ENGINE_SWEEP: Duration = Duration::from_secs(5);
