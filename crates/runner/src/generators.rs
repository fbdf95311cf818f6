//! `[load] generators`: the load sent from other machines. benchctl's own generator runs as a
//! container on each generator host's engine, from an image made of the running benchctl
//! binary (so the code that measures is the code that reports), each with its share of the
//! load, all starting at one instant of this machine's clock, shifted by each engine's clock
//! offset. Each prints its measurement as `benchctl load --json` does; the parts are merged
//! without loss ([`LoadReport::merge`]) and each is recorded on its own
//! ([`GeneratorRecord`]). A generator that fails is reported with its host and its container
//! removed; the others' parts are kept.

use crate::cancel::Cancel;
use crate::error::RunError;
use crate::events::{Event, Observer};
use loadgen::json::LoadReport;
use loadgen::{Job, LoadSpec};
use orchestrator::{ContainerGuard, ContainerSpec, Orchestrator, DOCROOT};
use report::GeneratorRecord;
use scenario::Plan;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The image's name on every generator host (`benchctl/benchctl-load:<hash of the binary and
/// its libraries>`): built once per binary, found again by later runs of the same one.
pub const IMAGE_NAME: &str = "benchctl-load";
/// The least a load's start is set ahead of now: time for every generator's container to be
/// created and started on its engine. It is more when a host's trial run (`benchctl
/// --version` in the image, made before the first load) took longer: [`LEAD_FACTOR`] times
/// the slowest trial.
pub const START_LEAD: Duration = Duration::from_secs(5);
/// How many times the slowest trial run a load's start is set ahead.
pub const LEAD_FACTOR: u32 = 3;
/// How long a generator's trial run may take.
const TRIAL_BOUND: Duration = Duration::from_secs(120);
/// How long one request to a generator's engine may take during a load before its host counts
/// as lost.
const ENGINE_BOUND: Duration = Duration::from_secs(10);
/// The label that marks a run's generator containers (beside the run's own labels).
const GENERATOR_ROLE: (&str, &str) = ("benchctl.role", "generator");

/// How often a running generator is looked at.
const POLL: Duration = Duration::from_millis(250);
/// Beyond a time-bounded load's own length, how long its generators may take to finish.
const FINISH_MARGIN: Duration = Duration::from_secs(60);

/// One generator host, ready: connected, its clock read, the image on it.
pub(crate) struct Generator {
    pub name: String,
    pub address: IpAddr,
    pub orch: Orchestrator,
    pub image: String,
    /// Its engine's clock minus this machine's, seconds.
    pub clock_offset_s: f64,
    /// How far off that may be (half the round trip of the reading), seconds.
    pub clock_uncertainty_s: f64,
    /// How long its trial run took, from the request to create the container to its program's
    /// first output.
    pub trial: Duration,
    /// Where its jobs are written: a folder of its own in the run's private folder, which goes
    /// with the run (or with a later run's sweep, should this one be killed).
    jobs: PathBuf,
    /// Why it can no longer be used (its engine stopped answering during a load).
    lost: Mutex<Option<String>>,
}

impl Generator {
    fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Its engine stopped answering during a load.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost().is_some()
    }
}

/// The build context of the generator's image in `dir`: the binary at `/benchctl` and every
/// shared library it loads at its own path (as `ldd` names them), on an empty base, so the
/// image needs nothing from the engine's machine nor a registry.
/// The tag of the generators' image made from `binary`, as a run builds it on a generator
/// host: what `benchctl gc` keeps there while it removes the images of earlier binaries.
pub fn image_tag(binary: &Path) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a folder for the image's context: {e}"))?;
    image_context(binary, dir.path())?;
    orchestrator::context_tag(IMAGE_NAME, dir.path()).map_err(|e| e.to_string())
}

fn image_context(binary: &Path, dir: &Path) -> Result<(), String> {
    let root = dir.join("rootfs");
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let copy = |from: &Path, to: &Path| -> Result<(), String> {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        // A copy, not a link: symbolic links are followed, so the image holds the files.
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("copying {} into the image: {e}", from.display()))
    };
    copy(binary, &root.join("benchctl"))?;
    let out = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("ldd {}: {e} (ldd names the libraries the binary needs; it comes with the C library)", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() && !text.contains("statically linked") {
        return Err(format!(
            "ldd {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    for line in text.lines() {
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or `/lib64/ld-linux-x86-64.so.2 (0x...)`.
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        let Some(path) = path.filter(|p| p.starts_with('/')) else {
            continue; // the vDSO, which the kernel provides
        };
        // Kept inside the image's root: an absolute path of plain names, nothing to climb out.
        let path = Path::new(path);
        if !path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        {
            return Err(format!(
                "ldd {} names the library {} by a path with `.` or `..` in it; give the binary's libraries by plain absolute paths",
                binary.display(),
                path.display()
            ));
        }
        copy(path, &root.join(path.strip_prefix("/").unwrap_or(path)))?;
    }
    std::fs::write(
        dir.join("Dockerfile"),
        format!(
            "# benchctl's load generator: the binary that runs the benchmark, and its libraries.\n\
             FROM scratch\n\
             COPY rootfs/ /\n\
             USER {GENERATOR_USER}\n\
             ENTRYPOINT [\"/benchctl\"]\n"
        ),
    )
    .map_err(|e| format!("{}: {e}", dir.display()))
}

/// The user a generator runs as (nobody): it needs no file of its own and no privilege.
const GENERATOR_USER: &str = "65534:65534";

/// A generator container's rights: its user, stated rather than left to the image, no
/// capabilities, a read-only root.
fn confinement() -> orchestrator::Confinement {
    orchestrator::Confinement {
        user: Some(GENERATOR_USER.to_string()),
        ..orchestrator::Confinement::default()
    }
}

/// Connects to every generator host (already connected in `engines`: this machine's engine,
/// then each `[[host]]`'s), reads its clock and CPUs, and builds the generator's image on it
/// from `binary`, all hosts at once.
pub(crate) async fn prepare(
    plan: &Plan,
    engines: &[Option<Orchestrator>],
    binary: &Path,
    run_dir: &Path,
    run_id: &str,
    observer: &dyn Observer,
) -> Result<Vec<Generator>, RunError> {
    let ctx = run_dir.join("generator-image");
    let (b, c) = (binary.to_path_buf(), ctx.clone());
    tokio::task::spawn_blocking(move || image_context(&b, &c))
        .await
        .map_err(|e| RunError::Step(format!("making the generator's image: {e}")))?
        .map_err(|e| RunError::Step(format!("making the generator's image: {e}")))?;
    let highest_cpu = plan.cpus.loadgen.iter().copied().max().unwrap_or(0);
    let shown: Vec<String> = plan
        .generators
        .iter()
        .map(|&h| format!("generator on {}", plan.hosts[h].name))
        .collect();
    for s in &shown {
        observer.event(&Event::Building {
            server: s,
            context: binary,
            host: None,
        });
    }
    let results = futures_util::future::join_all(plan.generators.iter().map(|&h| {
        let host = &plan.hosts[h];
        let orch = engines[h + 1]
            .as_ref()
            .expect("every generator host is connected before the run starts");
        let log = run_dir.join(format!("generator-{}.build.log", host.name));
        let ctx = &ctx;
        async move {
            let facts = orch.facts().await.map_err(|e| format!("{e}"))?;
            if facts.cpus > 0 && highest_cpu as u64 >= facts.cpus {
                return Err(format!(
                    "[cpus] loadgen names CPU {highest_cpu}, but that machine has CPUs 0-{}",
                    facts.cpus - 1
                ));
            }
            let built = orch
                .build_image(IMAGE_NAME, ctx, &log)
                .await
                .map_err(|e| format!("building the generator's image: {}", e.headline()))?;
            Ok::<_, String>((orch, host, facts, built))
        }
    }))
    .await;
    // Then, once every image is there (a build hashes the binary on this process's thread,
    // which would hold up another host's timing), the trials and the clocks, all at once.
    let results = futures_util::future::join_all(results.into_iter().map(|r| async move {
        let (orch, host, facts, built) = r?;
        let trial = trial(orch, host, &built.tag, run_id).await?;
        let facts = best_clock(orch, facts).await;
        Ok::<_, String>((facts, built, trial))
    }))
    .await;
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for ((&h, r), shown) in plan.generators.iter().zip(results).zip(&shown) {
        let host = &plan.hosts[h];
        match r {
            Ok((facts, built, trial)) => {
                observer.event(&Event::Built {
                    server: shown,
                    tag: &built.tag,
                    built: built.built,
                    seconds: built.seconds,
                });
                out.push(Generator {
                    name: host.name.clone(),
                    address: host.address,
                    orch: engines[h + 1].clone().expect("connected"),
                    image: built.tag,
                    clock_offset_s: facts.clock_offset_s,
                    clock_uncertainty_s: facts.clock_uncertainty_s,
                    trial,
                    jobs: run_dir.join("jobs").join(&host.name),
                    lost: Mutex::new(None),
                });
            }
            Err(e) => failed.push(format!("host {}: {e}", host.name)),
        }
    }
    if !failed.is_empty() {
        return Err(RunError::Step(format!(
            "the load generators cannot run: {}",
            failed.join("; ")
        )));
    }
    Ok(out)
}

/// Runs `benchctl --version` from the generator's image on `host`: proof that the image runs
/// there, and how long a container takes from the request to create it to its program's exit
/// (the first run of an image also brings the binary into that machine's page cache).
async fn trial(
    orch: &Orchestrator,
    host: &scenario::HostSpec,
    image: &str,
    run_id: &str,
) -> Result<Duration, String> {
    let spec = ContainerSpec {
        name: format!("load-trial-{}", host.name),
        image: image.to_string(),
        address: Some(host.address),
        run_id: run_id.to_string(),
        labels: vec![(GENERATOR_ROLE.0.to_string(), GENERATOR_ROLE.1.to_string())],
        cmd: Some(vec!["--version".to_string()]),
        confinement: confinement(),
        ..ContainerSpec::default()
    };
    let started = std::time::Instant::now();
    let guard = orch
        .start(&spec)
        .await
        .map_err(|e| format!("the generator's image does not start: {}", e.headline()))?;
    // From the request to create it to its program's first words: what a load's start must
    // wait for (a container's exit and removal take longer, and do not delay a load).
    let mut took = None;
    let code = loop {
        let state = orch.exit_code(&guard).await;
        if took.is_none() {
            if let Ok((out, _)) = orch.output(&guard).await {
                if !out.is_empty() {
                    took = Some(started.elapsed());
                }
            }
        }
        match state {
            Ok(Some(code)) => break code,
            Ok(None) if started.elapsed() < TRIAL_BOUND => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Ok(None) => {
                remove(guard).await;
                return Err(format!(
                    "the generator's trial run (benchctl --version) did not end within {TRIAL_BOUND:?}"
                ));
            }
            Err(e) => {
                remove(guard).await;
                return Err(e.headline());
            }
        }
    };
    let took = took.unwrap_or_else(|| started.elapsed());
    let output = orch.output(&guard).await;
    remove(guard).await;
    let (out, err) = output.map_err(|e| e.headline())?;
    let out = String::from_utf8_lossy(&out);
    if code != 0 || !out.starts_with("benchctl") {
        return Err(format!(
            "the generator's image does not run there (benchctl --version exited with {code}: {}{})",
            out.trim(),
            String::from_utf8_lossy(&err).trim()
        ));
    }
    Ok(took)
}

/// How many times an engine's clock is read: the reading with the shortest round trip is kept.
const CLOCK_READINGS: usize = 5;

/// The engine's facts with its clock read [`CLOCK_READINGS`] more times, now that it is idle,
/// keeping the reading of the shortest round trip (whose offset is the least uncertain: an
/// engine busy with a build or a first request can take seconds to answer).
async fn best_clock(
    orch: &Orchestrator,
    first: orchestrator::EngineFacts,
) -> orchestrator::EngineFacts {
    let mut best = first;
    for _ in 0..CLOCK_READINGS {
        if let Ok(f) = orch.facts().await {
            if f.clock_uncertainty_s < best.clock_uncertainty_s {
                best = f;
            }
        }
    }
    best
}

/// How far ahead of now a load's start is set for `gens`: [`LEAD_FACTOR`] times the slowest
/// trial run, at least [`START_LEAD`], plus twice the largest uncertainty of a clock offset.
pub(crate) fn lead(gens: &[Generator]) -> Duration {
    let slowest = gens.iter().map(|g| g.trial).max().unwrap_or_default();
    let uncertain = gens
        .iter()
        .map(|g| g.clock_uncertainty_s)
        .fold(0.0, f64::max);
    START_LEAD.max(slowest * LEAD_FACTOR) + Duration::from_secs_f64(2.0 * uncertain)
}

/// The binary the generators' image is made of: the one asked for, else this process's own.
pub(crate) fn binary(asked: Option<&Path>) -> Result<PathBuf, RunError> {
    match asked {
        Some(p) => Ok(p.to_path_buf()),
        None => std::env::current_exe().map_err(|e| {
            RunError::Step(format!(
                "cannot find this program's own file to make the generators' image of: {e}"
            ))
        }),
    }
}

/// Generator `i`'s share of `total` among `n`: as even as whole numbers allow, the first ones
/// one more.
pub fn share(total: u64, n: usize, i: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How one generator's part ended.
enum Part {
    Measured(Box<LoadReport>),
    Failed(String),
    Cancelled,
}

/// The file a generator's job is written to, in the folder its container gets as documents.
const JOB_FILE: &str = "job.json";

/// Writes generator `g`'s `job` into its jobs folder, readable by the generator's user; the
/// folder.
fn write_job(g: &Generator, job: &Job) -> Result<PathBuf, RunError> {
    let dir = g.jobs.clone();
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(JOB_FILE), serde_json::to_vec_pretty(job)?))
        .and_then(|()| crate::rundir::open_to_servers(&dir));
    let name = &g.name;
    written.map_err(|e| RunError::Step(format!("writing the job of generator {name}: {e}")))?;
    Ok(dir)
}

/// Every generator's record of a load, and the container of each that takes part (by index).
type Parts = (Vec<GeneratorRecord>, Vec<(usize, ContainerSpec)>);

/// Each generator's part of one load: its record (`error` says why an unusable one takes no
/// part) and, for each usable one, the container that sends its share, starting at `start_at`.
fn plan_parts(
    gens: &[Generator],
    usable: &[usize],
    job: &Job,
    run_id: &str,
) -> Result<Parts, RunError> {
    let n = usable.len();
    let load = &job.load;
    let mut records: Vec<GeneratorRecord> = Vec::with_capacity(gens.len());
    let mut runs = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        let mut rec = GeneratorRecord {
            host: g.name.clone(),
            requests: None,
            concurrency: 0,
            rate: None,
            clock_offset_s: g.clock_offset_s,
            clock_uncertainty_s: g.clock_uncertainty_s,
            complete: None,
            failed: None,
            elapsed_s: None,
            requests_per_second: None,
            client_cpu_s: None,
            client_bound: false,
            error: None,
        };
        let Some(k) = usable.iter().position(|&u| u == i) else {
            rec.error = Some(format!(
                "not used: its engine was lost during an earlier load ({})",
                g.lost().unwrap_or_default()
            ));
            records.push(rec);
            continue;
        };
        let mut part = job.clone();
        part.load.requests = load.requests.map(|r| share(r, n, k));
        part.load.concurrency = share(u64::from(load.concurrency), n, k) as u32;
        part.load.rate = load.rate.map(|r| r / n as f64);
        // At the same instant everywhere: each generator's clock is read against this one's.
        part.start_at = job.start_at.map(|t| t + g.clock_offset_s);
        rec.requests = part.load.requests;
        rec.concurrency = part.load.concurrency;
        rec.rate = part.load.rate;
        let dir = write_job(g, &part)?;
        let cpus = &part.cpus;
        let spec = ContainerSpec {
            name: format!("load-{}", g.name),
            image: g.image.clone(),
            port: 0,
            address: Some(g.address),
            cpuset: (!cpus.is_empty()).then(|| {
                cpus.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            run_id: run_id.to_string(),
            labels: vec![(GENERATOR_ROLE.0.to_string(), GENERATOR_ROLE.1.to_string())],
            cmd: Some(
                [
                    "load",
                    "--json",
                    "-q",
                    "--job",
                    &format!("{DOCROOT}/{JOB_FILE}"),
                ]
                .map(str::to_string)
                .to_vec(),
            ),
            // The job goes in as the container's documents: bound here, uploaded to another
            // machine's engine before the generator starts.
            docroot: Some(dir),
            confinement: confinement(),
            ..ContainerSpec::default()
        };
        records.push(rec);
        runs.push((i, spec));
    }
    Ok((records, runs))
}

/// Each part's outcome kept in its generator's record; the reports of those that measured,
/// or an error naming why each failed when none did.
fn collect_parts(
    gens: &[Generator],
    runs: &[(usize, ContainerSpec)],
    parts: Vec<Part>,
    records: &mut [GeneratorRecord],
    observer: &dyn Observer,
) -> Result<Vec<LoadReport>, RunError> {
    let mut reports = Vec::new();
    for ((i, _), part) in runs.iter().zip(parts) {
        let rec = &mut records[*i];
        match part {
            Part::Measured(r) => {
                rec.complete = Some(r.complete);
                rec.failed = Some(r.failed);
                rec.elapsed_s = Some(r.elapsed_s);
                rec.requests_per_second = Some(r.requests_per_second);
                rec.client_cpu_s = Some(r.client_cpu_s);
                rec.client_bound = report::record::is_client_bound(&r);
                reports.push(*r);
            }
            Part::Failed(e) => {
                observer.event(&Event::GeneratorFailed {
                    host: &gens[*i].name,
                    reason: &e,
                });
                rec.error = Some(e);
            }
            Part::Cancelled => unreachable!("returned above"),
        }
    }
    if reports.is_empty() {
        let why: Vec<String> = records
            .iter()
            .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.host)))
            .collect();
        return Err(RunError::Step(format!(
            "every load generator failed: {}",
            why.join("; ")
        )));
    }
    Ok(reports)
}

/// One load sent by every usable generator, each its share, all starting [`lead`] from now: the merged report and each generator's record; `None` when the run was cancelled
/// meanwhile. Fails only when no generator measured anything.
pub(crate) async fn measure(
    gens: &[Generator],
    url: &str,
    load: &LoadSpec,
    cpus: &[usize],
    run_id: &str,
    cancel: &Cancel,
    observer: &dyn Observer,
) -> Result<Option<(LoadReport, Vec<GeneratorRecord>)>, RunError> {
    let usable: Vec<usize> = (0..gens.len())
        .filter(|&i| gens[i].lost().is_none())
        .collect();
    let n = usable.len();
    if n == 0 {
        return Err(RunError::Step(
            "no load generator is left: every generator host was lost".to_string(),
        ));
    }
    let lead = lead(gens);
    let start_at = unix_now() + lead.as_secs_f64();
    observer.event(&Event::GeneratorsStarting {
        generators: n,
        lead_s: lead.as_secs_f64(),
        slowest_trial_s: gens
            .iter()
            .map(|g| g.trial.as_secs_f64())
            .fold(0.0, f64::max),
    });
    let bound = load
        .duration
        .or(load.min_duration)
        .map(|d| lead + load.warmup + d + load.timeout + FINISH_MARGIN);
    let job = Job {
        cpus: cpus.to_vec(),
        start_at: Some(start_at),
        ..Job::new(url, load.clone())
    };
    let (mut records, runs) = plan_parts(gens, &usable, &job, run_id)?;
    let parts = futures_util::future::join_all(
        runs.iter()
            .map(|(i, spec)| run_one(&gens[*i], spec, bound, cancel)),
    )
    .await;
    if cancel.is_cancelled() || parts.iter().any(|p| matches!(p, Part::Cancelled)) {
        return Ok(None);
    }
    let reports = collect_parts(gens, &runs, parts, &mut records, observer)?;
    let merged = LoadReport::merge(&reports)
        .map_err(|e| RunError::Step(format!("merging the generators' measurements: {e}")))?;
    Ok(Some((merged, records)))
}

/// Starts one generator's container, waits for it to finish (or its engine to stop
/// answering, or the run to be cancelled), reads its measurement and removes it.
async fn run_one(
    g: &Generator,
    spec: &ContainerSpec,
    bound: Option<Duration>,
    cancel: &Cancel,
) -> Part {
    let started = std::time::Instant::now();
    let guard = match tokio::time::timeout(ENGINE_BOUND, g.orch.start(spec)).await {
        Ok(Ok(guard)) => guard,
        Ok(Err(e)) => return Part::Failed(format!("could not start: {}", e.headline())),
        Err(_) => {
            let why = format!("its engine did not start the container within {ENGINE_BOUND:?}");
            *g.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
            // The engine may have made the container before the wait ran out, with no guard to
            // remove it: this run's generator containers there go, if the engine lets them.
            let _ = tokio::time::timeout(
                ENGINE_BOUND,
                g.orch
                    .remove_run_where(&spec.run_id, GENERATOR_ROLE.0, GENERATOR_ROLE.1),
            )
            .await;
            return Part::Failed(why);
        }
    };
    let code = loop {
        tokio::select! {
            () = cancel.cancelled() => {
                remove(guard).await;
                return Part::Cancelled;
            }
            () = tokio::time::sleep(POLL) => {}
        }
        match tokio::time::timeout(ENGINE_BOUND, g.orch.exit_code(&guard)).await {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(code))) => break code,
            Ok(Err(e)) => return lost(g, guard, e.headline()).await,
            Err(_) => {
                return lost(
                    g,
                    guard,
                    format!("it did not answer within {ENGINE_BOUND:?}"),
                )
                .await
            }
        }
        if let Some(b) = bound.filter(|&b| started.elapsed() > b) {
            remove(guard).await;
            return Part::Failed(format!(
                "still running {:.0} s after it started, beyond the load's length; stopped",
                b.as_secs_f64()
            ));
        }
    };
    let output = tokio::time::timeout(ENGINE_BOUND, g.orch.output(&guard)).await;
    remove(guard).await;
    let (out, err) = match output {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => {
            return Part::Failed(format!("its output could not be read: {}", e.headline()))
        }
        Err(_) => {
            return Part::Failed(format!(
                "its output could not be read within {ENGINE_BOUND:?}"
            ))
        }
    };
    // A load whose generator ran out of its own resources exits 1 with its measurement: the
    // measurement is kept, and its notes say so.
    match report_of(&out, &err) {
        Ok(r) => Part::Measured(Box::new(r)),
        Err(why) => Part::Failed(format!(
            "exited with status {code} without a measurement {why}"
        )),
    }
}

/// The measurement a `benchctl load --json` wrote to `out`, or why there is none: the parse
/// error and the last lines of what it wrote to `err`.
pub(crate) fn report_of(out: &[u8], err: &[u8]) -> Result<LoadReport, String> {
    serde_json::from_slice::<LoadReport>(out).map_err(|e| {
        let err = String::from_utf8_lossy(err);
        let last: Vec<&str> = err.lines().rev().take(5).collect();
        let last: Vec<&str> = last.into_iter().rev().collect();
        format!(
            "({e}){}",
            if last.is_empty() {
                String::new()
            } else {
                format!(": {}", last.join(" / "))
            }
        )
    })
}

/// A generator whose engine stopped answering: marked lost (later loads go without it), its
/// container removed if the engine still lets it be.
async fn lost(g: &Generator, guard: ContainerGuard, why: String) -> Part {
    let why = format!("lost contact with its engine during the load: {why}");
    *g.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
    remove(guard).await;
    Part::Failed(why)
}

/// Removes a generator's container, waiting at most [`ENGINE_BOUND`] (an engine that stopped
/// answering keeps it, labelled, for `benchctl gc --host`).
async fn remove(guard: ContainerGuard) {
    let _ = tokio::time::timeout(ENGINE_BOUND, guard.remove()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_one_at_most() {
        for total in [1u64, 2, 3, 7, 100, 1001] {
            for n in 1..=4usize.min(total as usize) {
                let parts: Vec<u64> = (0..n).map(|i| share(total, n, i)).collect();
                assert_eq!(parts.iter().sum::<u64>(), total, "{total} among {n}");
                let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
                assert!(hi - lo <= 1 && *lo >= 1, "{parts:?}");
            }
        }
    }
}
