//! The smaller subcommands: `validate`, `images`, `gc`, `report` and `compare`.

use crate::args::{env_sources, kind_and_file, parse_threshold};
use crate::failure::Failure;
use crate::output::{emit, shipment, stdout};
use anyhow::anyhow;
use clap::{Args, Subcommand, ValueEnum};
use orchestrator::Orchestrator;
use report::RecordIo;
use report::{Format, RunRecord};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `println!` through [`stdout`], so a closed pipe is not a panic.
macro_rules! say {
    ($($t:tt)*) => {
        stdout(&format!("{}\n", format!($($t)*)))?
    };
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Folder of server kinds (default: `docker/` beside each scenario's folder, else in the
    /// current directory).
    #[arg(long)]
    docker_dir: Option<PathBuf>,
}

/// Checks scenarios without starting anything.
pub fn validate(a: ValidateArgs) -> Result<ExitCode, Failure> {
    let mut bad = 0;
    for f in &a.files {
        let kinds = runner::kinds_for(f, a.docker_dir.as_deref()).map_err(Failure::usage)?;
        match scenario::load_file_with(f, &kinds) {
            Ok(plan) => {
                say!(
                    "{}: ok: {} server(s), {} document(s), {} run(s)",
                    f.display(),
                    plan.servers.len(),
                    plan.documents.len(),
                    plan.runs
                );
                for h in &plan.hosts {
                    if let Some(w) = runner::hosts::insecure_warning(h) {
                        eprintln!("benchctl: warning: {w}");
                    }
                }
            }
            Err(e) => {
                bad += 1;
                eprintln!("{e}");
            }
        }
    }
    Ok(if bad > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[derive(Args, Debug)]
pub struct ImagesArgs {
    #[command(subcommand)]
    action: ImagesAction,
    /// Folder holding one build context per server (default: docker; for push, the
    /// scenario's: a docker/ folder beside it or here).
    #[arg(long, global = true, value_name = "DIR")]
    docker_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum ImagesAction {
    /// Build the servers' images (all, or the ones named); up-to-date images are kept.
    Build {
        servers: Vec<String>,
        /// The server's own source (a release tarball or a git tree as .tar.gz), for a machine
        /// that cannot download it; with exactly one server named.
        #[arg(long, value_name = "FILE")]
        source: Option<PathBuf>,
    },
    /// Make the Debian base images the Dockerfiles start from, where no registry is reachable.
    Bootstrap,
    /// Build server images here and send them to a scenario's [[host]] (for an engine that
    /// cannot build them: no package mirror); an image the host has already is not sent, and
    /// each is checked there by its id.
    Push {
        /// Server kinds to send (default: those of the scenario's servers on the host).
        kinds: Vec<String>,
        /// The scenario whose [[host]] `--host` names.
        #[arg(long, value_name = "FILE")]
        scenario: PathBuf,
        /// The [[host]] to send them to.
        #[arg(long, value_name = "NAME")]
        host: String,
        /// A kind's own source for its build here, as `run --source` (repeatable).
        #[arg(long = "source", value_name = "KIND=FILE", value_parser = kind_and_file)]
        sources: Vec<(String, PathBuf)>,
    },
}

pub async fn images(a: ImagesArgs) -> Result<ExitCode, Failure> {
    if let ImagesAction::Push {
        kinds,
        scenario,
        host,
        sources,
    } = a.action
    {
        return push(a.docker_dir.as_deref(), &scenario, &host, &kinds, sources).await;
    }
    let docker_dir = a.docker_dir.unwrap_or_else(|| PathBuf::from("docker"));
    let contexts = server_contexts(&docker_dir)?;
    match a.action {
        ImagesAction::Bootstrap => {
            let orch = Orchestrator::connect().await?;
            let mut bases: Vec<String> = Vec::new();
            for (_, dir) in &contexts {
                let text = userfile::read_to_string(&dir.join("Dockerfile"))?;
                for b in orchestrator::dockerfile_bases(&text) {
                    if !bases.contains(&b) {
                        bases.push(b);
                    }
                }
            }
            for b in bases {
                let made = orch.ensure_base_image(&b).await?;
                say!("{b}: {}", if made { "made locally" } else { "present" });
            }
            Ok(ExitCode::SUCCESS)
        }
        ImagesAction::Build { servers, source } => {
            let env_sources = env_sources()?;
            let source = match &source {
                None => None,
                Some(path) => {
                    if servers.len() != 1 {
                        return Err(Failure::usage(anyhow!(
                            "--source {}: name the one server it is the source of",
                            path.display()
                        )));
                    }
                    Some(orchestrator::BuildSource::read(path).map_err(Failure::usage)?)
                }
            };
            for s in &servers {
                if !contexts.iter().any(|(n, _)| n == s) {
                    return Err(Failure::usage(anyhow!(
                        "no build context {}/{s}",
                        docker_dir.display()
                    )));
                }
            }
            // The arguments are checked (and the source read) before the engine is asked.
            let orch = Orchestrator::connect().await?;
            let mut failed = 0;
            for (name, dir) in contexts {
                if !servers.is_empty() && !servers.contains(&name) {
                    continue;
                }
                // A source from the environment serves the kind it names.
                let from_env = match (&source, env_sources.iter().find(|(k, _)| k == &name)) {
                    (None, Some((_, path))) => Some(orchestrator::BuildSource::read(path)?),
                    _ => None,
                };
                let source = source.as_ref().or(from_env.as_ref());
                match runner::build_image(&orch, &name, &dir, source).await {
                    Ok(b) => say!(
                        "{name}: {} {}",
                        b.tag,
                        if b.built {
                            format!("built in {:.1} s", b.seconds)
                        } else {
                            "up to date".into()
                        }
                    ),
                    Err(e) => {
                        failed += 1;
                        say!("{name}: FAILED: {e:#}");
                    }
                }
            }
            Ok(if failed > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        ImagesAction::Push { .. } => unreachable!("handled above"),
    }
}

/// `benchctl images push`: builds here what is not up to date and ships it to the host,
/// saying for each kind what was sent (or that it was there already).
async fn push(
    docker_dir: Option<&Path>,
    file: &Path,
    host: &str,
    names: &[String],
    sources: Vec<(String, PathBuf)>,
) -> Result<ExitCode, Failure> {
    let kinds = runner::kinds_for(file, docker_dir).map_err(Failure::usage)?;
    let plan = scenario::load_file_with(file, &kinds).map_err(Failure::usage)?;
    let h = host_named(&plan, file, host)?;
    let spec = &plan.hosts[h];
    let targets =
        runner::push_targets(&plan, &kinds, h, names).map_err(|e| Failure::usage(anyhow!(e)))?;
    // Sources from the environment serve the kinds they name; those given here must be sent.
    let mut by_kind: std::collections::BTreeMap<String, PathBuf> =
        env_sources()?.into_iter().collect();
    for (kind, path) in sources {
        if !targets.iter().any(|(k, _)| k == &kind) {
            return Err(Failure::usage(anyhow!(
                "--source {kind}={}: {kind} is not among the kinds to send",
                path.display()
            )));
        }
        by_kind.insert(kind, path);
    }
    if let Some(w) = runner::hosts::insecure_warning(spec) {
        eprintln!("benchctl: warning: {w}");
    }
    let here = Orchestrator::connect().await?;
    let there = Orchestrator::connect_to(&runner::hosts::endpoint(spec))
        .await
        .map_err(|e| anyhow!("host {host}: {e}"))?;
    let mut failed = Vec::new();
    for (kind, dir) in &targets {
        let pushed = async {
            let source = match by_kind.get(kind) {
                Some(p) => Some(orchestrator::BuildSource::read(p)?),
                None => None,
            };
            runner::push_image(&here, &there, kind, dir, source.as_ref()).await
        }
        .await;
        match pushed {
            Ok((built, shipped)) => {
                if built.built {
                    say!("{kind}: {} built here in {:.1} s", built.tag, built.seconds);
                }
                say!(
                    "{kind}: {} {} {}",
                    built.tag,
                    shipped.id,
                    shipment(host, shipped.sent, shipped.bytes, shipped.seconds)
                );
            }
            Err(e) => {
                say!("{kind}: FAILED: {e:#}");
                failed.push(kind.as_str());
            }
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::from(anyhow!(
            "could not send to {host}: {}",
            failed.join(", ")
        )))
    }
}

/// Every `docker/<server>/` folder with a Dockerfile, sorted by name.
fn server_contexts(dir: &Path) -> Result<Vec<(String, PathBuf)>, Failure> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| Failure::usage(anyhow!("{}: {e}", dir.display())))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e?;
        if e.path().join("Dockerfile").is_file() {
            out.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    }
    out.sort();
    Ok(out)
}

#[derive(Args, Debug)]
pub struct ServersArgs {
    /// Folder of server kinds.
    #[arg(long, default_value = "docker")]
    docker_dir: PathBuf,
}

/// Lists the server kinds found: where each comes from, its options, and what its container
/// may do.
pub fn servers(a: ServersArgs) -> Result<ExitCode, Failure> {
    if !a.docker_dir.is_dir() {
        return Err(Failure::usage(anyhow!(
            "{}: no such folder (pass --docker-dir)",
            a.docker_dir.display()
        )));
    }
    let kinds = scenario::Kinds::discover(std::slice::from_ref(&a.docker_dir));
    let mut broken = 0;
    for k in kinds.iter() {
        match &k.manifest {
            Err(diagnostics) => {
                broken += 1;
                say!("{}: BROKEN MANIFEST", k.name);
                for d in diagnostics {
                    say!("  {d}");
                }
            }
            Ok(m) => {
                say!("{}: {} ({})", k.name, m.name, m.source);
                say!(
                    "  {}",
                    if m.tls {
                        "serves HTTP or, in a scenario with tls = true, HTTPS"
                    } else {
                        "serves HTTP only: unavailable in a scenario with tls = true"
                    }
                );
                say!(
                    "  {}",
                    match (m.http2, m.tls) {
                        (true, true) => "serves HTTP/2 in a scenario with http = \"2\" (h2 by ALPN over TLS, h2c by prior knowledge without)",
                        (true, false) => "serves cleartext HTTP/2 (h2c) in a scenario with http = \"2\" and no tls",
                        (false, _) => "serves HTTP/1.x only: unavailable in a scenario with http = \"2\"",
                    }
                );
                say!(
                    "  {}",
                    if m.http3 {
                        "serves HTTP/3 over QUIC (UDP, same port number) in a scenario with http = \"3\""
                    } else {
                        "serves no HTTP/3: unavailable in a scenario with http = \"3\""
                    }
                );
                let c = &m.container;
                say!(
                    "  runs as {}, {} capabilit{}, pids {}, writes {}",
                    c.user,
                    if c.capabilities.is_empty() {
                        "no".to_string()
                    } else {
                        c.capabilities.join(", ")
                    },
                    if c.capabilities.len() == 1 {
                        "y"
                    } else {
                        "ies"
                    },
                    c.pids_limit,
                    c.tmpfs
                        .iter()
                        .map(|t| format!("{}{}", t.path, if t.exec { " (exec)" } else { "" }))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                for (name, o) in &m.options {
                    let mut facts = vec![o.typ.as_str().to_string(), format!("${}", o.env)];
                    if o.required {
                        facts.push("required".into());
                    }
                    if let Some(d) = &o.default {
                        facts.push(format!("default {}", option_text(d)));
                    }
                    if o.exceeds_largest_document {
                        facts.push("> the largest document".into());
                    }
                    if o.below_memory {
                        facts.push("< memory".into());
                    }
                    let help = if o.help.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", o.help)
                    };
                    say!("  option {name} ({}){help}", facts.join(", "));
                }
            }
        }
    }
    if kinds.iter().next().is_none() {
        say!(
            "no server kinds in {} (a kind is a folder with a Dockerfile and a server.toml)",
            a.docker_dir.display()
        );
    }
    Ok(if broken > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn option_text(v: &scenario::OptionValue) -> String {
    match v {
        scenario::OptionValue::Server(i) => format!("server #{i}"),
        scenario::OptionValue::Size(n) => scenario::units::describe_bytes(*n),
        scenario::OptionValue::Integer(n) => n.to_string(),
        scenario::OptionValue::Text(t) => format!("{t:?}"),
        scenario::OptionValue::Bool(b) => b.to_string(),
    }
}

#[derive(Args, Debug)]
pub struct GcArgs {
    /// Also remove the containers of runs still going (they then fail).
    #[arg(long)]
    force: bool,
    /// The scenario whose `[[host]]` tables `--host` and `--all-hosts` name.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Server kinds for `--scenario` (default: a docker/ folder beside it or here).
    #[arg(long, value_name = "DIR", requires = "scenario")]
    docker_dir: Option<PathBuf>,
    /// Sweep this host's engine (a `[[host]]` of `--scenario`) instead of the local one;
    /// may be given more than once.
    #[arg(long = "host", value_name = "NAME", requires = "scenario")]
    hosts: Vec<String>,
    /// Sweep the local engine and every host of `--scenario`.
    #[arg(long, requires = "scenario", conflicts_with = "hosts")]
    all_hosts: bool,
}

/// Removes what runs whose process is gone left behind: containers, private folders (in the
/// system's temporary folder) and the temporary files of results records they were writing
/// (`.<name>.<pid>-<start>.tmp`: the one each run folder notes, and any in `results/`).
pub async fn gc(a: GcArgs) -> Result<ExitCode, Failure> {
    let mut engines: Vec<(String, orchestrator::Endpoint)> = Vec::new();
    if a.hosts.is_empty() {
        engines.push(("local".to_string(), orchestrator::Endpoint::Local));
    }
    if let Some(file) = &a.scenario {
        let kinds = runner::kinds_for(file, a.docker_dir.as_deref()).map_err(Failure::usage)?;
        let plan = scenario::load_file_with(file, &kinds).map_err(Failure::usage)?;
        for name in &a.hosts {
            let h = &plan.hosts[host_named(&plan, file, name)?];
            engines.push((h.name.clone(), runner::hosts::endpoint(h)));
        }
        if a.all_hosts {
            engines.extend(
                plan.hosts
                    .iter()
                    .map(|h| (h.name.clone(), runner::hosts::endpoint(h))),
            );
        } else if a.hosts.is_empty() {
            return Err(Failure::usage(anyhow!(
                "--scenario names hosts for --host NAME or --all-hosts; give one of them"
            )));
        }
    }
    // On the hosts' engines (where generators run), the generators' images of other binaries
    // than this one go too. Working out this binary's tag copies and hashes the binary, so it
    // is done only when a host is swept: a plain `gc` stays quick.
    let keep = engines.iter().any(|(_, ep)| !ep.is_local()).then(|| {
        std::env::current_exe()
            .map_err(|e| e.to_string())
            .and_then(|b| runner::generators::image_tag(&b))
    });
    if let Some(Err(e)) = &keep {
        eprintln!("benchctl: warning: the generators' images are left as they are: {e}");
    }
    let mut failed = Vec::new();
    for (name, ep) in &engines {
        let swept = async {
            let orch = Orchestrator::connect_to(ep).await?;
            let containers = if a.force {
                orch.gc_all().await?
            } else {
                orch.gc_stale().await?
            };
            let images = match keep.as_ref().filter(|_| !ep.is_local()) {
                Some(Ok(tag)) => {
                    orch.remove_older_images(runner::generators::IMAGE_NAME, tag)
                        .await?
                }
                _ => 0,
            };
            Ok::<_, orchestrator::OrchestratorError>((containers, images))
        }
        .await;
        match swept {
            Ok((n, 0)) => say!("{name}: removed {n} container(s)"),
            Ok((n, images)) => say!(
                "{name}: removed {n} container(s) and {images} generator image(s) of other benchctl binaries"
            ),
            Err(e) => {
                eprintln!("benchctl: {name}: {e}");
                failed.push(name.as_str());
            }
        }
    }
    // Run folders are in the system's temporary folder; each notes its record's temporary
    // file, wherever -o put it. Default-named records are in the results folder, swept too
    // for a run killed before its folder was made.
    let swept = runner::rundir::sweep_stale(&std::env::temp_dir());
    let records =
        swept.records + runner::rundir::sweep_stale_records(&runner::RunOptions::new().results_dir);
    say!(
        "removed {} run folder(s) and {records} unfinished results record(s)",
        swept.folders
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::from(anyhow!(
            "could not sweep {}",
            failed.join(", ")
        )))
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A results record written by `benchctl run`.
    results: PathBuf,
    /// bmf is Bencher Metric Format JSON.
    #[arg(long, short = 'f', value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Folder of templates overriding the built-in ones.
    #[arg(long)]
    templates: Option<PathBuf>,
}

/// The formats `benchctl report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Markdown,
    Html,
    Bmf,
}

pub fn report(a: ReportArgs) -> Result<ExitCode, Failure> {
    let record = RunRecord::load(&a.results).map_err(Failure::usage)?;
    let format = match a.format {
        ReportFormat::Text => Format::Text,
        ReportFormat::Markdown => Format::Markdown,
        ReportFormat::Html => Format::Html,
        ReportFormat::Bmf => {
            emit(&report::bmf::to_bmf_json(&record), a.out.as_deref())?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let text = report::render(&record, format, a.templates.as_deref()).map_err(|e| match e {
        // A template folder that cannot be used is bad input, as a bad record is.
        report::ReportError::TemplateRead { .. } => Failure::usage(e),
        report::ReportError::Template { .. } if a.templates.is_some() => Failure::usage(e),
        e => Failure::from(e),
    })?;
    emit(&text, a.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct ReproductionsArgs {
    /// The folder of published figures (published.toml) and the records measured again.
    #[arg(default_value = "results/reproductions")]
    dir: PathBuf,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
}

pub fn reproductions(a: ReproductionsArgs) -> Result<ExitCode, Failure> {
    let r = report::reproductions::Reproductions::load(&a.dir).map_err(Failure::usage)?;
    emit(
        &report::reproductions::render_markdown(&r),
        a.out.as_deref(),
    )?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference run; alone, an A/B run (`benchctl run --against`), whose paired verdict
    /// is judged again.
    baseline: PathBuf,
    /// The run to judge against the baseline: a coarse check between two sittings.
    current: Option<PathBuf>,
    /// Slow-down beyond which a significant difference is a regression, e.g. 5% or 0.05 (for
    /// an A/B run, the threshold it ran with unless given).
    #[arg(long)]
    threshold: Option<String>,
    #[arg(long, short = 'f', value_enum, default_value_t = CompareFormat::Text)]
    format: CompareFormat,
    /// Write the table to this file as well as checking it.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
}

/// The formats `benchctl compare` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Markdown,
    Json,
}

pub fn compare(a: CompareArgs) -> Result<ExitCode, Failure> {
    let threshold = a
        .threshold
        .as_deref()
        .map(parse_threshold)
        .transpose()
        .map_err(Failure::usage)?;
    let Some(current) = &a.current else {
        return compare_against(&a, threshold);
    };
    if let (Ok(b), Ok(c)) = (a.baseline.canonicalize(), current.canonicalize()) {
        if b == c {
            return Err(Failure::usage(anyhow!(
                "{} is given as both the baseline and the run to judge; compare two different runs",
                a.baseline.display()
            )));
        }
    }
    let base = RunRecord::load(&a.baseline).map_err(Failure::usage)?;
    let cur = RunRecord::load(current).map_err(Failure::usage)?;
    if base.run_id == cur.run_id {
        eprintln!(
            "benchctl: warning: {} and {} hold the same run ({}): every metric compares with itself",
            a.baseline.display(),
            current.display(),
            cur.run_id
        );
    }
    let cmp = report::compare(&base, &cur, threshold.unwrap_or(report::DEFAULT_THRESHOLD));
    let text = match a.format {
        CompareFormat::Json => serde_json::to_string_pretty(&cmp)? + "\n",
        CompareFormat::Text => report::render_comparison(&cmp, Format::Text, None)?,
        CompareFormat::Markdown => report::render_comparison(&cmp, Format::Markdown, None)?,
    };
    emit(&text, a.out.as_deref())?;
    Ok(if cmp.has_regression() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `benchctl compare AB.json`: the paired verdict of an A/B run, judged again from its record.
fn compare_against(a: &CompareArgs, threshold: Option<f64>) -> Result<ExitCode, Failure> {
    let mut record = RunRecord::load(&a.baseline).map_err(Failure::usage)?;
    let Some(against) = record.against.as_mut() else {
        return Err(Failure::usage(anyhow!(
            "{} is an ordinary run, not an A/B run (benchctl run --against): give the run to compare it with, benchctl compare {} CURRENT.json",
            a.baseline.display(),
            a.baseline.display()
        )));
    };
    if let Some(t) = threshold {
        against.threshold = t;
    }
    let cmp = report::compare_record(&record).expect("an A/B record");
    let text = match a.format {
        CompareFormat::Json => serde_json::to_string_pretty(&cmp)? + "\n",
        CompareFormat::Text => report::Renderer::embedded().render_paired(&cmp, Format::Text)?,
        CompareFormat::Markdown => {
            report::Renderer::embedded().render_paired(&cmp, Format::Markdown)?
        }
    };
    emit(&text, a.out.as_deref())?;
    Ok(if cmp.has_regression() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Where in `plan` (read from `file`) the `[[host]]` that `--host NAME` names is.
fn host_named(plan: &scenario::Plan, file: &Path, name: &str) -> Result<usize, Failure> {
    plan.hosts
        .iter()
        .position(|h| h.name == name)
        .ok_or_else(|| {
            Failure::usage(anyhow!(
                "--host {name}: {} has no [[host]] of that name (it has: {})",
                file.display(),
                plan.hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}
