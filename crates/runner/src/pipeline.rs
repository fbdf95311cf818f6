//! The run itself: check, claim the results file, start and verify every server, measure every
//! document round by round, search each one's capacity when asked ([`capacity`]), record after
//! each load, and leave nothing behind.
//!
//! [`run`] here holds the run's course; its steps are methods of one run context spread over
//! the modules below: [`preflight`] (what is checked before anything starts), [`bringup`] (a
//! server's image, container, audit and verification), [`rounds`] (the loads, round by round,
//! and A/B's pairs), [`measure`] (one load and the server's use of CPU and memory),
//! [`liveness`] (deaths, lost hosts, fresh containers), [`capacity`], and [`outcome`] (how a
//! run ended). The run's context and the servers it started are in [`ctx`], what the steps of a
//! load pass between them in [`turn`]: every step imports what it uses by name, and none of
//! them imports this module.

mod bringup;
mod capacity;
mod ctx;
mod liveness;
mod measure;
mod outcome;
mod overload;
mod preflight;
mod rounds;
#[cfg(test)]
mod tests;
mod together;
mod turn;

pub use bringup::confinement;
pub use outcome::{Problem, RunOutcome};

pub use crate::error::RunError;
pub use crate::options::RunOptions;
use ctx::Ctx;
pub use preflight::kinds_for;
use preflight::{check_cpus, results_path};

use crate::against::{self, AgainstPlan};
use crate::events::{Event, Observer};
use crate::fleet::{Engine, Fleet};
use crate::results::Results;
use crate::rundir::{self, RunDir};
use crate::schedule::Schedule;
use loadgen::HttpVersion;
use orchestrator::{BuildSource, Scheme};
use report::{AgainstRecord, HostFacts, RecordFile, RunRecord, RunStatus, ScenarioRecord, Slowed};
use scenario::{HostImages, ImageSource, Plan};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

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
    let against = match &opts.against {
        Some(a) => Some(against::prepare(plan, &opts, a)?),
        None => None,
    };
    let (runs, sources) = check_options(plan, &opts, against.as_ref())?;
    let out = results_path(&opts, plan)?;

    let engines = connect(fleet, plan).await?;
    let connected: Vec<&F::Engine> = engines.iter().flatten().collect();
    let engine_records = engine_records(plan, &engines).await?;
    // An A/B run's baseline images must be here, on this machine's engine.
    if let (Some(against), Some(orch)) = (&against, engines[0].as_ref()) {
        against::check_images(orch, against).await?;
    }

    let started_at = report::record::now_rfc3339();
    let run_id = format!(
        "{}-{}-{}",
        plan.name,
        started_at.replace([':', '-'], "").trim_end_matches('Z'),
        std::process::id()
    );
    let out = out.unwrap_or_else(|| opts.results_dir.join(format!("{run_id}.json")));
    let host = host_facts(plan, &opts, engines[0].as_ref(), observer.as_ref()).await;
    let mut record = new_record(
        plan,
        opts.commit.clone(),
        &run_id,
        started_at,
        host,
        engine_records,
        against.as_ref(),
    );
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
                schedule: schedule_for(against.as_ref(), runs, &run_id),
                opts: &opts,
                run_dir: &run_dir,
                run_id: &run_id,
                observer: observer.as_ref(),
                observer_arc: &observer,
                against: against.as_ref(),
                capacity: capacity_for(&opts, plan),
                overload: overload_for(&opts, plan),
                scheme,
                tls_dir,
                generators: std::sync::OnceLock::new(),
                lost: Default::default(),
                down: Default::default(),
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

/// This machine's facts: its CPUs and kernel, the local engine's version, and what biases
/// measurements here (said to `observer` when anything does).
async fn host_facts<E: Engine>(
    plan: &Plan,
    opts: &RunOptions,
    local: Option<&E>,
    observer: &dyn Observer,
) -> HostFacts {
    let mut host = report::record::host_facts();
    host.docker_version = match local {
        Some(local) => local.version().await.ok(),
        None => None,
    };
    host.system = check_machine(plan, opts).await;
    if let Some(check) = host.system.as_ref().filter(|c| c.biases().count() > 0) {
        observer.event(&Event::MachineBiased { check });
    }
    host
}

/// What biases measurements on this machine for a run on the plan's CPUs, when asked.
async fn check_machine(plan: &Plan, opts: &RunOptions) -> Option<report::record::SystemCheck> {
    let sample = opts.system_sample?;
    let cpus = system::Cpus {
        client: plan.cpus.loadgen.clone(),
        server: plan.cpus.servers.clone(),
    };
    tokio::task::spawn_blocking(move || system::check_host(&cpus, sample))
        .await
        .ok()
}

/// The rounds of a run; an A/B run's order of servers and sides is drawn from its run id, so
/// each run draws its own.
fn schedule_for(against: Option<&AgainstPlan>, runs: u32, run_id: &str) -> Schedule {
    use std::hash::{Hash as _, Hasher as _};
    match against {
        Some(against) => Schedule::against(
            runs,
            report::paired::first_look(runs),
            report::Looks::Growing,
            against.asked.fresh,
            against.asked.budget,
            {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                run_id.hash(&mut h);
                h.finish()
            },
        ),
        None => Schedule::plain(runs),
    }
}

/// The capacity search to make after the loads, if any: the scenario's `[capacity]`, its
/// target replaced by the command line's when it gives one. A staircase past the capacity
/// needs a target (what a good response is) and, unless it is given its capacity, a search: at
/// [`scenario::overload::DEFAULT_TARGET`] when nothing names another.
fn capacity_for(opts: &RunOptions, plan: &Plan) -> Option<scenario::CapacitySpec> {
    let asked = match (opts.capacity, &plan.capacity) {
        (Some(t), Some(c)) => Some(c.clone().with_target(t)),
        (Some(t), None) => Some(scenario::CapacitySpec::new(t)),
        (None, c) => c.clone(),
    };
    let staircase = overload_for(opts, plan);
    match (asked, staircase) {
        (None, Some(o)) if o.capacity.is_none() => Some(scenario::CapacitySpec::new(
            scenario::overload::DEFAULT_TARGET,
        )),
        (asked, _) => asked,
    }
}

/// The staircase past each server's capacity to climb after the searches, if any: the
/// scenario's `[overload]`, or with `--overload` alone its defaults.
fn overload_for(opts: &RunOptions, plan: &Plan) -> Option<scenario::OverloadSpec> {
    match (&plan.overload, opts.overload) {
        (Some(o), _) => Some(o.clone()),
        (None, true) => Some(scenario::OverloadSpec::default()),
        (None, false) => None,
    }
}

/// The options checked against the scenario before anything starts: the rounds, the servers
/// `--only` names, the sources given (read now), the CPUs and the open files a load needs.
fn check_options(
    plan: &Plan,
    opts: &RunOptions,
    against: Option<&AgainstPlan>,
) -> Result<(u32, BTreeMap<String, BuildSource>), RunError> {
    let runs = match against {
        Some(against) => against.asked.max_rounds,
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
    commit: Option<String>,
    run_id: &str,
    started_at: String,
    host: HostFacts,
    engines: Vec<report::EngineRecord>,
    against: Option<&AgainstPlan>,
) -> RunRecord {
    RunRecord {
        schema_version: report::SCHEMA_VERSION,
        benchctl_version: env!("CARGO_PKG_VERSION").to_string(),
        benchctl_commit: commit,
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
        overload: Vec::new(),
        against: against.map(|against| AgainstRecord {
            baseline_run_id: against.asked.record.run_id.clone(),
            baseline_path: against.asked.path.display().to_string(),
            threshold: against.asked.threshold,
            alpha: report::paired::ALPHA,
            min_rounds: report::paired::first_look(against.asked.max_rounds),
            max_rounds: against.asked.max_rounds,
            interval: report::Interval::SignedRank,
            looks: report::Looks::Growing,
            fresh_containers: against.asked.fresh,
            together: against.together,
            baseline_generator: against
                .generator
                .as_ref()
                .map(|g| format!("{} ({})", g.path.display(), g.version)),
            gates: against.gates,
            budget_s: against.asked.budget.as_secs_f64(),
            slowed: against
                .asked
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

/// How servers are reached first (readiness, and the first document's version): HTTPS
/// trusting the run's own certificate, made in `run_dir` for every host's address, when the
/// scenario serves TLS (with that certificate's folder); HTTP/2 or HTTP/3 where its first load
/// speaks it. [`scheme_over`] gives each load's.
fn scheme_for(plan: &Plan, run_dir: &RunDir) -> Result<(Scheme, Option<PathBuf>), String> {
    let first = plan
        .documents
        .first()
        .map_or(HttpVersion::Http11, |d| d.load.version);
    if !plan.tls {
        return Ok((scheme_over(&Scheme::HTTP, first), None));
    }
    let addresses: Vec<IpAddr> = plan.hosts.iter().map(|h| h.address).collect();
    let c =
        crate::tls::RunCertificate::create(&run_dir.path().join("tls"), plan.tls_key, &addresses)
            .map_err(|e| format!("{e}"))?;
    let tls = Scheme::Https {
        cert_pem: c.ca_pem,
        http2: false,
    };
    Ok((scheme_over(&tls, first), Some(c.dir)))
}

/// `scheme` (the run's: with its certificate or without) for a load over `version`.
pub(super) fn scheme_over(scheme: &Scheme, version: HttpVersion) -> Scheme {
    let http2 = version == HttpVersion::Http2;
    match (scheme.cert_pem(), version) {
        (None, _) => Scheme::Http { http2 },
        (Some(cert), HttpVersion::Http3) => Scheme::H3 {
            cert_pem: cert.to_vec(),
        },
        (Some(cert), _) => Scheme::Https {
            cert_pem: cert.to_vec(),
            http2,
        },
    }
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
