//! `benchctl run SCENARIO`: the whole comparison. Validate the scenario, build and start every
//! server, verify each serves the exact bytes, measure every document round by round with the
//! load generator, write the results record after every load, and print the report.
//!
//! Nothing starts before the scenario is valid. Every container carries the run's label and is
//! removed whatever happens: normal end, error, Ctrl-C (partial results kept, exit 130), a
//! server that dies mid-run (reported, its remaining loads skipped, the others go on).

use crate::Failure;
use anyhow::{anyhow, Context as _};
use clap::Args;
use loadgen::json::LoadReport;
use loadgen::{HttpVersion, LoadConfig, Method, Progress, StopFlag, Target};
use orchestrator::{ContainerGuard, ContainerSpec, ExpectedDoc, Orchestrator};
use report::{
    HostFacts, LoadRecord, RunRecord, RunStatus, ScenarioRecord, ServerRecord, ServerStatus, Usage,
};
use scenario::{LoadSpec, Plan, ServerKind};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// How long a server may take from `docker run` to answering.
const READY_DEADLINE: Duration = Duration::from_secs(20);

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Repetitions (overrides the scenario's `runs`).
    #[arg(long)]
    runs: Option<u32>,
    /// Where to write the results record (default: results/<scenario>-<time>.json). Must not
    /// exist yet: a run never overwrites a record.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Folder holding one build context per server (default: `docker/` beside the scenario's
    /// folder, else in the current directory).
    #[arg(long)]
    docker_dir: Option<PathBuf>,
    /// Measure only these servers (by name; backends they need are started anyway).
    #[arg(long = "only", value_name = "SERVER")]
    only: Vec<String>,
    /// Report format printed at the end: text or markdown.
    #[arg(long, default_value = "text")]
    format: String,
    /// Folder of templates overriding the built-in ones.
    #[arg(long)]
    templates: Option<PathBuf>,
}

pub async fn main(a: RunArgs) -> Result<ExitCode, Failure> {
    let plan = match scenario::load_file(&a.scenario) {
        Ok(plan) => plan,
        Err(e) => {
            // Each diagnostic is already a complete `FILE:LINE:COL: error: ...` line.
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    let format: report::Format = a.format.parse().map_err(Failure::usage)?;
    if !matches!(format, report::Format::Text | report::Format::Markdown) {
        return Err(Failure::usage(anyhow!(
            "--format {}: `run` prints text or markdown (use `benchctl report` for html)",
            a.format
        )));
    }
    for name in &a.only {
        if !plan.servers.iter().any(|s| &s.name == name) {
            return Err(Failure::usage(anyhow!(
                "--only {name}: the scenario has no server of that name"
            )));
        }
    }
    let docker_dir = locate_docker_dir(a.docker_dir.as_deref(), &a.scenario)?;
    for s in &plan.servers {
        let dir = docker_dir.join(s.kind.as_str());
        if !dir.join("Dockerfile").is_file() {
            return Err(Failure::usage(anyhow!(
                "{}: no Dockerfile for server {:?} (kind {})",
                dir.display(),
                s.name,
                s.kind.as_str()
            )));
        }
    }
    check_cpus(&plan)?;
    let runs = a.runs.unwrap_or(plan.runs).max(1);
    let started_at = report::record::now_rfc3339();
    let stamp = started_at.replace([':', '-'], "");
    let run_id = format!(
        "{}-{}-{}",
        plan.name,
        stamp.trim_end_matches('Z'),
        std::process::id()
    );
    let out = match &a.out {
        Some(p) => p.clone(),
        None => PathBuf::from("results").join(format!("{run_id}.json")),
    };
    if out.exists() {
        return Err(Failure::usage(anyhow!(
            "{}: exists already; a run never overwrites a results record (choose another --out)",
            out.display()
        )));
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let source = std::fs::read_to_string(&plan.source)
        .with_context(|| format!("reading {}", plan.source.display()))?;

    let orch = Orchestrator::connect().await?;
    let swept = orch.gc_stale().await.unwrap_or(0);
    if swept > 0 {
        eprintln!("removed {swept} container(s) left behind by earlier runs");
    }
    let mut interrupt = orchestrator::install_ctrl_c_cleanup(&orch, &run_id)?;

    let mut host = HostFacts::collect();
    host.docker_version = orch.docker_version().await.ok();
    let mut record = RunRecord {
        schema_version: report::SCHEMA_VERSION,
        benchctl_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.clone(),
        started_at,
        finished_at: None,
        status: RunStatus::Running,
        scenario: ScenarioRecord::new(&plan.name, a.scenario.display().to_string(), source),
        host,
        servers: Vec::new(),
        loads: Vec::new(),
    };
    let stop = StopFlag::new();
    let docroot = tempfile::Builder::new()
        .prefix("benchctl-docs-")
        .tempdir()
        .context("creating the documents folder")?;
    let ctx = RunCtx {
        orch: &orch,
        plan: &plan,
        runs,
        docker_dir: &docker_dir,
        docroot: docroot.path(),
        run_id: &run_id,
        out: &out,
        stop: &stop,
        only: &a.only,
    };
    let outcome = {
        let work = ctx.execute(&mut record);
        tokio::pin!(work);
        tokio::select! {
            r = &mut work => r,
            sig = interrupt.wait() => {
                // The load generator sees the flag within milliseconds; the containers are
                // already gone (the signal task removed them before waking us).
                stop.stop();
                Err(anyhow!("{sig}"))
            }
        }
    };
    let interrupted = interrupt.is_interrupted();
    // Whatever happened, no container of this run outlives it.
    let _ = orch.remove_run(&run_id).await;
    record.finished_at = Some(report::record::now_rfc3339());
    record.status = match (&outcome, interrupted) {
        (_, Some(sig)) => RunStatus::Interrupted {
            reason: sig.to_string(),
        },
        (Ok(()), None) => RunStatus::Complete,
        (Err(e), None) => RunStatus::Failed {
            reason: format!("{e:#}"),
        },
    };
    record.write_atomic(&out)?;
    if !record.loads.is_empty() || outcome.is_ok() {
        let text = report::render(&record, format, a.templates.as_deref())?;
        crate::stdout(&text)?;
    }
    eprintln!("results: {}", out.display());
    if let Some(sig) = interrupted {
        return Ok(ExitCode::from(sig.exit_code() as u8));
    }
    outcome?;
    Ok(ExitCode::SUCCESS)
}

struct RunCtx<'a> {
    orch: &'a Orchestrator,
    plan: &'a Plan,
    runs: u32,
    docker_dir: &'a Path,
    docroot: &'a Path,
    run_id: &'a str,
    out: &'a Path,
    stop: &'a StopFlag,
    only: &'a [String],
}

/// A server that was started and verified.
struct Live {
    index: usize,
    guard: ContainerGuard,
}

impl RunCtx<'_> {
    async fn execute(&self, record: &mut RunRecord) -> anyhow::Result<()> {
        let plan = self.plan;
        let docs = scenario::materialize(plan, self.docroot).context("writing the documents")?;
        make_world_readable(self.docroot)?;
        let expected: Vec<ExpectedDoc> = docs
            .iter()
            .map(|d| ExpectedDoc {
                url_path: d.url_path.clone(),
                length: d.len,
                sha256_hex: d.sha256.clone(),
            })
            .collect();

        // Which servers to bring up: the ones asked for and the backends they need.
        let mut wanted = vec![self.only.is_empty(); plan.servers.len()];
        for (i, s) in plan.servers.iter().enumerate() {
            if self.only.contains(&s.name) {
                wanted[i] = true;
            }
        }
        for i in (0..plan.servers.len()).rev() {
            if let (true, Some(b)) = (wanted[i], plan.servers[i].backend.as_ref()) {
                wanted[b.index] = true;
            }
        }

        let mut live: Vec<Live> = Vec::new();
        for (i, spec) in plan.servers.iter().enumerate() {
            if !wanted[i] {
                continue;
            }
            let kind = spec.kind.as_str();
            let mut srec = ServerRecord {
                name: spec.name.clone(),
                kind: kind.to_string(),
                image_tag: String::new(),
                image_id: None,
                server_header: None,
                status: ServerStatus::Unavailable {
                    reason: String::new(),
                },
            };
            match self.bring_up(i, &expected, &live).await {
                Ok((guard, tag, id, header, ready)) => {
                    srec.image_tag = tag;
                    srec.image_id = Some(id);
                    srec.server_header = header;
                    srec.status = ServerStatus::Available { ready_s: ready };
                    live.push(Live { index: i, guard });
                }
                Err(Unavailable { tag, reason }) => {
                    eprintln!("{}: unavailable: {}", spec.name, first_line(&reason));
                    srec.image_tag = tag;
                    srec.status = ServerStatus::Unavailable { reason };
                }
            }
            record.servers.push(srec);
            record.write_atomic(self.out)?;
        }

        for round in 0..self.runs {
            for l in &live {
                let server = &plan.servers[l.index];
                if !self.only.is_empty() && !self.only.contains(&server.name) {
                    continue;
                }
                if !server_available(record, &server.name) {
                    continue;
                }
                for (doc, spec) in docs.iter().zip(&plan.documents) {
                    if self.stop.is_stopped() {
                        return Ok(());
                    }
                    // A server that died (before its turn or during the load) is reported and
                    // skipped from here on; the other servers still run.
                    let died = |e: &dyn std::fmt::Display| {
                        format!("died before or during the load of {}: {e:#}", doc.url_path)
                    };
                    if let Err(e) = self.orch.fail_if_exited(&l.guard).await {
                        self.report_death(record, &server.name, died(&e))?;
                        break;
                    }
                    eprintln!(
                        "round {}/{}  {:<10} {:<16} {}",
                        round + 1,
                        self.runs,
                        server.name,
                        doc.url_path,
                        describe_load(&spec.load)
                    );
                    let m = self.measure(&l.guard, &spec.load, &doc.url_path).await;
                    if let Err(dead) = self.orch.fail_if_exited(&l.guard).await {
                        self.report_death(record, &server.name, died(&dead))?;
                        break;
                    }
                    let m = m.with_context(|| format!("{} {}", server.name, doc.url_path))?;
                    let Some((load, usage)) = m else {
                        return Ok(()); // stopped mid-load: a partial load is not kept
                    };
                    let threads = load.settings.threads.max(1) as f64;
                    let client_bound =
                        load.elapsed_s > 0.0 && load.client_cpu_s / load.elapsed_s >= 0.9 * threads;
                    eprintln!(
                        "round {}/{}  {:<10} {:<16} {:>10.1} req/s  {} failed{}",
                        round + 1,
                        self.runs,
                        server.name,
                        doc.url_path,
                        load.requests_per_second,
                        load.failed,
                        if client_bound { "  (client-bound)" } else { "" }
                    );
                    record.loads.push(LoadRecord {
                        server: server.name.clone(),
                        document: spec.name.clone(),
                        url_path: doc.url_path.clone(),
                        round,
                        load,
                        server_usage: usage,
                        client_bound,
                    });
                    record.write_atomic(self.out)?;
                }
            }
        }
        for l in live {
            let _ = l.guard.remove().await;
        }
        Ok(())
    }

    fn report_death(
        &self,
        record: &mut RunRecord,
        name: &str,
        reason: String,
    ) -> anyhow::Result<()> {
        eprintln!("{name}: {}", first_line(&reason));
        mark_unavailable(record, name, reason);
        record.write_atomic(self.out)?;
        Ok(())
    }

    /// Builds, starts, waits for and verifies one server.
    async fn bring_up(
        &self,
        i: usize,
        expected: &[ExpectedDoc],
        live: &[Live],
    ) -> Result<(ContainerGuard, String, String, Option<String>, f64), Unavailable> {
        let plan = self.plan;
        let spec = &plan.servers[i];
        let kind = spec.kind.as_str();
        let unavailable = |tag: &str, reason: String| Unavailable {
            tag: tag.to_string(),
            reason,
        };
        let log = std::env::temp_dir().join(format!("benchctl-build-{kind}.log"));
        eprintln!(
            "{}: building image from {}",
            spec.name,
            self.docker_dir.join(kind).display()
        );
        let built = self
            .orch
            .build_image(kind, &self.docker_dir.join(kind), &log)
            .await
            .map_err(|e| unavailable("", format!("image build failed: {e:#}")))?;
        eprintln!(
            "{}: image {} ({})",
            spec.name,
            built.tag,
            if built.built {
                format!("built in {:.1} s", built.seconds)
            } else {
                "up to date".to_string()
            }
        );
        let mut env = Vec::new();
        if let Some(b) = &spec.backend {
            let Some(backend) = live.iter().find(|l| l.index == b.index) else {
                return Err(unavailable(
                    &built.tag,
                    format!("its backend {:?} is unavailable", b.name),
                ));
            };
            env.push((
                "BENCH_BACKEND".to_string(),
                format!("127.0.0.1:{}", backend.guard.port()),
            ));
        }
        if let Some(size) = spec.storage {
            env.push((
                "BENCH_CACHE_SIZE".to_string(),
                format!("{}k", size.div_ceil(1024)),
            ));
        }
        let port = match spec.port {
            Some(p) => p,
            None => {
                free_port().map_err(|e| unavailable(&built.tag, format!("no free port: {e}")))?
            }
        };
        let cspec = ContainerSpec {
            name: spec.name.clone(),
            image: built.tag.clone(),
            env,
            port,
            cpuset: Some(plan.cpus.servers_cpuset()),
            memory_bytes: Some(spec.memory),
            docroot: Some(self.docroot.to_path_buf()),
            run_id: self.run_id.to_string(),
            labels: vec![("benchctl.kind".to_string(), kind.to_string())],
            cmd: None,
        };
        let guard = self
            .orch
            .start(&cspec)
            .await
            .map_err(|e| unavailable(&built.tag, format!("could not start: {e:#}")))?;
        let first = expected.first().map(|d| d.url_path.as_str()).unwrap_or("/");
        let ready = self
            .orch
            .wait_ready(&guard, port, first, READY_DEADLINE)
            .await
            .map_err(|e| unavailable(&built.tag, format!("never became ready: {e:#}")))?;
        let verified = self
            .orch
            .verify(port, expected)
            .await
            .map_err(|e| unavailable(&built.tag, format!("verification failed: {e:#}")))?;
        let total = guard.started_at().elapsed();
        let header = match spec.kind {
            // Varnish passes its backend's Server header on; its own version is in Via.
            ServerKind::Varnish => verified.via.clone().or(verified.server_header.clone()),
            _ => verified.server_header.clone(),
        };
        eprintln!(
            "{}: answering after {:.2} s, verified after {:.2} s ({})",
            spec.name,
            ready.as_secs_f64(),
            total.as_secs_f64(),
            header.as_deref().unwrap_or("no Server header")
        );
        Ok((guard, built.tag, built.id, header, total.as_secs_f64()))
    }

    /// One load against one document; None when the run was stopped during it.
    async fn measure(
        &self,
        guard: &ContainerGuard,
        load: &LoadSpec,
        url_path: &str,
    ) -> anyhow::Result<Option<(LoadReport, Option<Usage>)>> {
        let url = format!("http://127.0.0.1:{}{}", guard.port(), url_path);
        let mut cfg = LoadConfig::new(Target::parse(&url)?);
        cfg.requests = load.requests;
        cfg.time_limit = load.duration;
        cfg.concurrency = load.concurrency;
        cfg.keep_alive = load.keep_alive;
        cfg.version = if load.http11 {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        };
        cfg.timeout = load.timeout;
        cfg.warmup = load.warmup;
        cfg.rate = load.rate;
        cfg.method = if load.head { Method::Head } else { Method::Get };
        cfg.rx_stamps = !load.user_timestamps;
        cfg.coalesce = crate::load::coalesce(load.coalesce);
        cfg.cpus = Some(self.plan.cpus.loadgen.clone());
        cfg.threads = self.plan.cpus.loadgen.len().max(1);
        cfg.progress = if std::io::stderr().is_terminal() {
            Progress::Bar
        } else {
            Progress::Quiet
        };
        let sampler = self.orch.sample_stats(guard).await.ok();
        let stop = self.stop.clone();
        let m = tokio::task::spawn_blocking(move || loadgen::run_until(cfg, &stop))
            .await
            .context("the load generator panicked")??;
        let usage = match sampler {
            Some(s) => {
                let u = s.finish().await;
                (u.samples > 0).then_some(Usage {
                    cpu_s: u.cpu_seconds,
                    peak_memory_bytes: u.peak_memory_bytes,
                })
            }
            None => None,
        };
        if m.stopped_early.as_deref() == Some("interrupted") {
            return Ok(None);
        }
        for n in &m.notes {
            eprintln!("  note: {n}");
        }
        Ok(Some((LoadReport::from_measurement(&m), usage)))
    }
}

/// The load in ab's terms, for the progress line.
fn describe_load(l: &LoadSpec) -> String {
    let mut parts = Vec::new();
    match (l.requests, l.duration) {
        (Some(n), _) => parts.push(format!("-n {n}")),
        (None, Some(d)) => parts.push(format!("for {:.1} s", d.as_secs_f64())),
        (None, None) => {}
    }
    parts.push(format!("-c {}", l.concurrency));
    if l.keep_alive {
        parts.push("-k".into());
    }
    if l.http11 {
        parts.push("HTTP/1.1".into());
    }
    if let Some(r) = l.rate {
        parts.push(format!("at {r} req/s"));
    }
    if l.head {
        parts.push("-i".into());
    }
    parts.join(" ")
}

struct Unavailable {
    tag: String,
    reason: String,
}

fn server_available(record: &RunRecord, name: &str) -> bool {
    record
        .servers
        .iter()
        .any(|s| s.name == name && matches!(s.status, ServerStatus::Available { .. }))
}

fn mark_unavailable(record: &mut RunRecord, name: &str, reason: String) {
    if let Some(s) = record.servers.iter_mut().find(|s| s.name == name) {
        s.status = ServerStatus::Unavailable { reason };
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// A port nothing listens on now (the server binds it a moment later).
fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

/// The servers drop root inside their containers, so the documents must be readable by all.
fn make_world_readable(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))?;
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            } else {
                std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644))?;
            }
        }
    }
    Ok(())
}

/// `docker/` given, or beside the scenario's folder (scenarios/../docker), or in the current
/// directory.
pub fn locate_docker_dir(given: Option<&Path>, scenario: &Path) -> Result<PathBuf, Failure> {
    if let Some(d) = given {
        return if d.is_dir() {
            Ok(d.to_path_buf())
        } else {
            Err(Failure::usage(anyhow!(
                "--docker-dir {}: no such folder",
                d.display()
            )))
        };
    }
    let beside = scenario
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().and_then(Path::parent).map(|p| p.join("docker")));
    for cand in beside.into_iter().chain([PathBuf::from("docker")]) {
        if cand.is_dir() {
            return Ok(cand);
        }
    }
    Err(Failure::usage(anyhow!(
        "cannot find the docker/ folder with the servers' build contexts; pass --docker-dir"
    )))
}

fn check_cpus(plan: &Plan) -> Result<(), Failure> {
    let n = loadgen::cpu::online_cpus();
    for (what, list) in [
        ("servers", &plan.cpus.servers),
        ("loadgen", &plan.cpus.loadgen),
    ] {
        if let Some(c) = list.iter().find(|&&c| c >= n) {
            return Err(Failure::usage(anyhow!(
                "{}: [cpus] {what} names CPU {c}, but this machine has CPUs 0-{}",
                plan.source.display(),
                n - 1
            )));
        }
    }
    Ok(())
}
