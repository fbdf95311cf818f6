//! `benchctl run SCENARIO`: maps the arguments onto the run pipeline ([`runner::run`]), prints
//! what it hears while the run goes, then the report, and says how the run ended.

use crate::args::{kind_and_file, parse_threshold};
use crate::failure::Failure;
use crate::output::{shipment, stdout, TableFormat};
use crate::progress::{Progress, Style};
use crate::signals::OnSignals;
use crate::signals::Signal;
use clap::Args;
use loadgen::{HttpVersion, LoadSpec, Method};
use report::RecordIo;
use runner::{Cancel, Cleanup, Event, Headroom, Observer, RunError, RunOptions, Saved};
use std::collections::HashSet;
use std::mem::Discriminant;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Repetitions (overrides the scenario's `runs`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    runs: Option<u32>,
    /// Where to write the results record (default: results/<scenario>-<time>.json). It must not
    /// exist yet and its folder must: a run never overwrites a record.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Folder of server kinds, one build context each (default: `docker/` beside the
    /// scenario's folder, else in the current directory); the scenario's own folder is looked
    /// in first.
    #[arg(long)]
    docker_dir: Option<PathBuf>,
    /// Measure only these servers (by name; the servers they need are started anyway).
    #[arg(long = "only", value_name = "SERVER")]
    only: Vec<String>,
    /// A server kind's own source for its image's build, where it cannot be downloaded, e.g.
    /// --source cherokee=../shared/vendor/cherokee-1.2.104.tar.gz (repeatable).
    #[arg(long = "source", value_name = "KIND=FILE", value_parser = kind_and_file)]
    sources: Vec<(String, PathBuf)>,
    /// Report format printed at the end.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    format: TableFormat,
    /// `auto`: when a load leaves the load generator no headroom (80% of its cores or more),
    /// measure that server again capped at a smaller CPU share until it does; the tables then
    /// report requests/s per server core. `off`: measure once, as the scenario says.
    #[arg(long, value_enum, default_value_t = HeadroomArg::Off)]
    headroom: HeadroomArg,
    /// Folder of templates overriding the built-in ones.
    #[arg(long)]
    templates: Option<PathBuf>,
    /// After the loads, search each server's capacity at this latency target: the highest
    /// constant rate whose percentile stays within it (p50, p90, p99 or p99.9), e.g.
    /// --capacity p99=10ms. Overrides the target of the scenario's [capacity], keeping its
    /// bounds.
    #[arg(long, value_name = "PERCENTILE=LATENCY", value_parser = capacity_target)]
    capacity: Option<scenario::CapacityTarget>,
    /// After the capacity searches, hold each server past its capacity: an open-model
    /// staircase (0.5x, 1x, 1.5x, 2x, 3x its capacity), then 0.5x to recover; reports its knee,
    /// goodput, collapse and recovery time. The scenario's [overload] sets the staircase; its
    /// target is the capacity's (--capacity, [capacity], else p99=100ms).
    #[arg(long, conflicts_with = "against")]
    overload: bool,
    /// A/B in one sitting: measure the images of this stored run (the baseline) beside the
    /// current docker/ folders' (the candidate), round by round, both sides at once, until the paired
    /// comparison is decided or the budget is spent; exit 1 on a significant change beyond the
    /// threshold. --runs is then the most rounds (default 40).
    #[arg(long, value_name = "BASELINE.json")]
    against: Option<PathBuf>,
    /// With --against: the change that counts, e.g. 5% or 0.05 (default 5%).
    #[arg(long, requires = "against")]
    threshold: Option<String>,
    /// With --against: the time the run may take from starting its servers (no round starts
    /// that would end beyond it if it took as long as the longest so far), e.g. 20m.
    #[arg(long, requires = "against", value_name = "DURATION", value_parser = budget)]
    budget: Option<std::time::Duration>,
    /// With --against: cap the candidate's SERVER at FACTOR times the CPU the baseline record's
    /// loads of it used (at most its share), e.g. apache=0.9: a known slowdown of about 10%
    /// where it is CPU-bound, to check that a regression run catches it (repeatable).
    #[arg(long = "slow-candidate", requires = "against", value_name = "SERVER=FACTOR", value_parser = server_factor)]
    slow_candidate: Vec<(String, f64)>,
    /// With --against: keep one container per server and side for the whole run, instead of
    /// fresh containers every round (faster rounds, but a container's own luck then favours
    /// one side all run long, which the interval cannot see).
    #[arg(long = "keep-containers", requires = "against")]
    keep_containers: bool,
    /// With --against: load the two sides of a server and document one after the other (in
    /// ABBA order), each at its full share, instead of both at the same time, each at most
    /// half the servers' CPUs. Noisier, since each side then sees a moment of the machine of
    /// its own; for a server that needs more than half the CPUs to be measured as it runs.
    #[arg(long = "in-turn", requires = "against")]
    in_turn: bool,
    /// With --against: another benchctl binary (e.g. the last good build) sends the baseline
    /// side's loads, this one the candidate's: an A/B run of a change in the load generator
    /// itself. With the same images on both sides, only the generators differ.
    #[arg(
        long = "baseline-generator",
        requires = "against",
        value_name = "BENCHCTL"
    )]
    baseline_generator: Option<PathBuf>,
}

fn budget(text: &str) -> Result<std::time::Duration, String> {
    scenario::units::parse_duration(text)
}

fn server_factor(text: &str) -> Result<(String, f64), String> {
    let bad = || format!("expected SERVER=FACTOR, e.g. apache=0.9, not {text:?}");
    let (server, factor) = text.split_once('=').ok_or_else(bad)?;
    let factor: f64 = factor.trim().parse().map_err(|_| bad())?;
    if server.is_empty() {
        return Err(bad());
    }
    Ok((server.to_string(), factor))
}

fn capacity_target(text: &str) -> Result<scenario::CapacityTarget, String> {
    scenario::CapacityTarget::parse(text)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HeadroomArg {
    Off,
    Auto,
}

pub async fn main(a: RunArgs, on_signals: OnSignals) -> Result<ExitCode, Failure> {
    let kinds = runner::kinds_for(&a.scenario, a.docker_dir.as_deref()).map_err(Failure::usage)?;
    let plan = match scenario::load_file_with(&a.scenario, &kinds) {
        Ok(plan) => plan,
        Err(e) => {
            // Each diagnostic is already a complete `FILE:LINE:COL: error: ...` line.
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    for h in &plan.hosts {
        if let Some(w) = runner::hosts::insecure_warning(h) {
            eprintln!("benchctl: warning: {w}");
        }
    }
    // The templates are read before anything starts: a broken override is bad input, not a
    // surprise after the measurements.
    let renderer = report::Renderer::new(a.templates.as_deref()).map_err(Failure::usage)?;
    let against = match &a.against {
        None => None,
        Some(path) => Some(against(&a, &plan, path)?),
    };
    let cancel = Cancel::new();
    let cleanup = Cleanup::new();
    let signalled: Arc<Mutex<Option<Signal>>> = Arc::default();
    on_stop_signals(on_signals, &cancel, &cleanup, &signalled)?;
    // Sources named on the command line must fit the scenario; those from the environment
    // (BENCHCTL_SOURCES, which ./x sets from the machine's vendored copies) serve where they do.
    let mut sources: std::collections::BTreeMap<String, PathBuf> = crate::args::env_sources()?
        .into_iter()
        .filter(|(kind, _)| plan.servers.iter().any(|s| s.kind.as_str() == kind))
        .collect();
    sources.extend(a.sources.iter().cloned());
    let opts = RunOptions {
        runs: a.runs,
        out: a.out.clone(),
        only: a.only.clone(),
        sources,
        cancel,
        cleanup,
        headroom: match a.headroom {
            HeadroomArg::Off => Headroom::Off,
            HeadroomArg::Auto => Headroom::Auto,
        },
        capacity: a.capacity,
        overload: a.overload,
        against,
        commit: Some(env!("BENCHCTL_COMMIT"))
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        ..RunOptions::new()
    };
    let observer = Arc::new(Printer::default());
    let outcome = match runner::run(&plan, opts, observer).await {
        Ok(o) => o,
        Err(e @ RunError::Invalid(_) | e @ RunError::Manifest(_) | e @ RunError::Results(_)) => {
            return Err(Failure::usage(e))
        }
        Err(e) => return Err(e.into()),
    };

    let record = &outcome.record;
    if !record.loads.is_empty() || outcome.problems.is_empty() {
        let text = renderer.render(record, a.format.into())?;
        stdout(&text)?;
    }
    // An A/B run's verdict: the paired comparison, after the candidate's own tables.
    let paired = report::compare_record(record);
    if let Some(cmp) = &paired {
        let text = renderer.render_paired(cmp, a.format.into())?;
        stdout(&format!("\n{text}"))?;
    }
    say_where_saved(&outcome.saved);
    for p in &outcome.problems {
        if !matches!(p, runner::Problem::Interrupted(_)) {
            eprintln!("benchctl: error: {p}{}", advice(p));
        }
    }
    if let Some(sig) = *signalled.lock().unwrap_or_else(|p| p.into_inner()) {
        return Ok(ExitCode::from(sig.exit_code()));
    }
    if outcome.interrupted().is_some() {
        return Ok(ExitCode::from(130));
    }
    let regression = paired.as_ref().is_some_and(|c| c.has_regression());
    Ok(if outcome.succeeded() && !regression {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The A/B side of a run against the stored run at `path`, with the command line's bounds.
fn against(
    a: &RunArgs,
    plan: &scenario::Plan,
    path: &std::path::Path,
) -> Result<runner::Against, Failure> {
    let record = report::RunRecord::load(path).map_err(Failure::usage)?;
    if record.scenario.sha256 != plan.scenario_hash {
        eprintln!(
            "benchctl: note: {} ran another version of the scenario ({}); both sides run {} as it is now",
            path.display(),
            record.scenario.path,
            a.scenario.display()
        );
    }
    let mut against = runner::Against::new(record, path.to_path_buf());
    if let Some(t) = &a.threshold {
        against.threshold = parse_threshold(t).map_err(Failure::usage)?;
    }
    if let Some(n) = a.runs {
        against.max_rounds = n;
    }
    if let Some(b) = a.budget {
        against.budget = b;
    }
    against.slowed = a.slow_candidate.clone();
    against.fresh = !a.keep_containers;
    against.together = !a.in_turn;
    against.generator = a.baseline_generator.clone();
    Ok(against)
}

/// On a first signal the run is cancelled (and the signal kept in `signalled` for the exit
/// code); on a second, what it made is removed at once.
fn on_stop_signals(
    on_signals: OnSignals,
    cancel: &Cancel,
    cleanup: &Cleanup,
    signalled: &Arc<Mutex<Option<Signal>>>,
) -> Result<(), Failure> {
    let cancel = cancel.clone();
    let signalled = Arc::clone(signalled);
    let cleanup = cleanup.clone();
    on_signals(
        Box::new(move |sig| {
            eprintln!("benchctl: {sig}: stopping the run and removing its containers");
            *signalled.lock().unwrap_or_else(|p| p.into_inner()) = Some(sig);
            cancel.cancel(sig.to_string());
        }),
        Box::new(move || {
            eprintln!("benchctl: second signal: removing what the run made, then exiting");
            for left in cleanup.now() {
                eprintln!("benchctl: could not remove {}", leftover(&left));
            }
        }),
    )?;
    Ok(())
}

/// Where the results record went: its path, where it was rescued to, or the record itself.
fn say_where_saved(saved: &Saved) {
    match saved {
        Saved::At(p) => eprintln!("results: {}", p.display()),
        Saved::Rescued { wanted, at, error } => eprintln!(
            "benchctl: error: could not write the results record to {} ({error}); it was saved to {} instead ({} may hold an earlier, incomplete state of it)",
            wanted.display(),
            at.display(),
            wanted.display()
        ),
        Saved::Unsaved {
            wanted,
            error,
            json,
        } => {
            eprintln!(
                "benchctl: error: could not write the results record to {} ({error}) nor anywhere else; here it is:",
                wanted.display()
            );
            eprintln!("{}", String::from_utf8_lossy(json));
        }
    }
}

/// Prints the run's progress on stderr, a line per step, and a bar per load on a terminal.
#[derive(Default)]
struct Printer {
    bar: Mutex<Option<Progress>>,
    /// The notes already printed, by server, document and kind: each is said once, in the
    /// first round that gave it, rather than again in every round.
    said: Mutex<HashSet<(String, String, Discriminant<loadgen::Note>)>>,
}

impl Printer {
    fn bar(&self) -> std::sync::MutexGuard<'_, Option<Progress>> {
        self.bar.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Printer {
    /// A load's start and end, and what its generators and the machine said of it. Only
    /// those events are passed here.
    fn load_event(&self, event: &Event<'_>) {
        match event {
            Event::LoadStarting {
                round,
                rounds,
                server,
                url_path,
                load,
            } => {
                eprintln!(
                    "round {round}/{rounds}  {server:<10} {url_path:<16} {}",
                    describe_load(load)
                );
                *self.bar() = Some(Progress::new(Style::bar_or(Style::Quiet), load.requests));
            }
            Event::LoadDone {
                round,
                rounds,
                record,
                baseline,
            } => self.load_done(*round, *rounds, record, *baseline),
            Event::GeneratorsStarting {
                generators,
                lead_s,
                slowest_trial_s,
            } => eprintln!(
                "           {generators} generators start the load in {lead_s:.1} s (a trial container took up to {slowest_trial_s:.1} s to start)"
            ),
            Event::GeneratorFailed { host, reason } => {
                eprintln!("generator on {host} failed: {}", first_line(reason))
            }
            Event::Headroom {
                server,
                url_path,
                share,
                generator,
                next,
            } => eprintln!(
                "           {server:<10} {url_path:<16} the generator used {:.0}% of its cores{}: again with {server} capped at {next} of a core",
                generator * 100.0,
                share.map_or_else(String::new, |s| format!(" ({server} at {s} of a core)"))
            ),
            Event::ConntrackWait { count, max, need } => eprintln!(
                "           waiting for room in the kernel's connection tracking table ({count} of {max} entries in use, {need} wanted; entries expire 2 minutes after their connection closes; at most 130 s)"
            ),
            _ => {}
        }
    }

    /// A load's line: its requests/s and failures, with its flags, generators and the notes
    /// not said before of that server and document.
    fn load_done(&self, round: u32, rounds: u32, record: &report::LoadRecord, baseline: bool) {
        if let Some(mut p) = self.bar().take() {
            p.finish(record.load.complete);
        }
        let l = &record.load;
        let mut flags = Vec::new();
        if record.client_bound {
            flags.push("client-bound".to_string());
        }
        if report::record::is_too_short(l) {
            flags.push(format!("too short: {:.0} ms", l.elapsed_s * 1000.0));
        }
        if let Some(n) = l.settings.repetitions {
            flags.push(format!("{n} loads back to back"));
        }
        let shown = if baseline {
            format!("{} [baseline]", record.server)
        } else {
            record.server.clone()
        };
        eprintln!(
            "round {round}/{rounds}  {:<10} {:<16} {:>10.1} req/s  {} failed{}",
            shown,
            record.url_path,
            l.requests_per_second,
            l.failed,
            if flags.is_empty() {
                String::new()
            } else {
                format!("  ({})", flags.join(", "))
            }
        );
        for g in &record.generators {
            eprintln!("  {}", g.summary_line());
        }
        let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        for n in &l.notes {
            let key = (
                record.server.clone(),
                record.document.clone(),
                std::mem::discriminant(n),
            );
            if said.insert(key) {
                eprintln!("  note: {}", report::notes::describe(n));
            }
        }
    }
}

/// The servers' images and containers getting ready. Only those events are passed here.
fn server_event(event: &Event<'_>) {
    match event {
        Event::SweptStale {
            containers,
            folders,
        } => eprintln!(
            "removed {containers} container(s) and {folders} folder(s) left behind by earlier runs"
        ),
        Event::Building {
            server,
            context,
            host,
        } => eprintln!(
            "{server}: building image{} from {}",
            host.map(|h| format!(" on {h}")).unwrap_or_default(),
            context.display()
        ),
        Event::Built {
            server,
            tag,
            built,
            seconds,
        } => eprintln!(
            "{server}: image {tag} ({})",
            if *built {
                format!("built in {seconds:.1} s")
            } else {
                "up to date".to_string()
            }
        ),
        Event::Shipped {
            server,
            host,
            id,
            sent,
            bytes,
            seconds,
        } => eprintln!(
            "{server}: image {id} {}",
            shipment(host, *sent, *bytes, *seconds)
        ),
        Event::Ready {
            server,
            answering_s,
            verified_s,
            version,
            host,
            address,
        } => eprintln!(
            "{server}: {}answering after {answering_s:.2} s, verified after {verified_s:.2} s ({})",
            // A server on this machine listens on 127.0.0.1, which says nothing new.
            host.map(|h| format!("on {h} at {address}, "))
                .unwrap_or_default(),
            version.unwrap_or("no Server header")
        ),
        Event::Unavailable { server, reason } => {
            eprintln!("{server}: unavailable: {}", first_line(reason))
        }
        _ => {}
    }
}

/// A capacity search's start, steps and result. Only those events are passed here.
fn capacity_event(event: &Event<'_>) {
    match event {
        Event::CapacityStarting {
            server,
            url_path,
            criteria,
            start,
        } => eprintln!(
            "capacity   {server:<10} {url_path:<16} {}, from {start:.0} req/s",
            criteria.target_text()
        ),
        Event::CapacityStep {
            server,
            url_path,
            number,
            step,
            criteria,
        } => eprintln!(
            "capacity   {server:<10} {url_path:<16} step {number}: {:>8.0} req/s asked, {:>8.0} sent, {} {}: {}",
            step.rate,
            step.achieved(),
            criteria.percentile_name(),
            step.latency_us
                .map_or_else(|| "-".to_string(), |us| format!("{:.2} ms", us as f64 / 1e3)),
            report::render::capacity::verdict_text(step, criteria)
        ),
        Event::CapacityDone { record } => eprintln!(
            "capacity   {:<10} {:<16} {} req/s: {}",
            record.server,
            record.url_path,
            report::render::capacity::rate_text(&record.result),
            record.result.text()
        ),
        _ => {}
    }
}

/// A staircase's start, steps and verdict. Only those events are passed here.
fn overload_event(event: &Event<'_>) {
    match event {
        Event::OverloadStarting {
            server,
            url_path,
            capacity,
        } => eprintln!("overload   {server:<10} {url_path:<16} from a capacity of {capacity:.0} req/s"),
        Event::OverloadSkipped {
            server,
            url_path,
            why,
        } => eprintln!("overload   {server:<10} {url_path:<16} skipped: {why}"),
        Event::OverloadStep {
            server,
            url_path,
            step,
        } => eprintln!(
            "overload   {server:<10} {url_path:<16} {:>5}x{}: {:>8.0} req/s offered, {:>8.0} sent, {:>8.0} goodput, p99 {}, errors: {}",
            report::capacity::search::trim_number(step.multiple),
            if step.recovery { " (recovery)" } else { "" },
            step.offered,
            step.sent,
            step.goodput,
            step.p99_us
                .map_or_else(|| "-".to_string(), |us| format!("{:.2} ms", us as f64 / 1e3)),
            report::render::overload::errors_text(step)
        ),
        Event::OverloadDone { record } => {
            let v = &record.verdict;
            eprintln!(
                "overload   {:<10} {:<16} knee {}, collapse {}, recovered {}",
                record.server,
                record.url_path,
                v.knee.map_or_else(|| "none".to_string(), |k| format!("at {k}x")),
                match v.collapse {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                },
                v.recovery_s.map_or_else(
                    || format!("not within {} s", record.criteria.recovery_s),
                    |s| format!("after {s:.2} s")
                )
            );
        }
        _ => {}
    }
}

/// An A/B run's fresh containers and its looks at the comparison. Only those events are
/// passed here.
fn against_event(event: &Event<'_>) {
    match event {
        Event::AgainstFresh {
            round,
            containers,
            not_removed,
            seconds,
        } => {
            eprintln!(
                "A/B        round {round}: {containers} fresh container(s) in {seconds:.1} s"
            );
            if *not_removed > 0 {
                eprintln!(
                    "  warning: {not_removed} container(s) of the last round were not removed; benchctl gc removes them once this run is over"
                );
            }
        }
        Event::AgainstLook {
            round,
            rounds,
            undecided,
            gated,
            looked,
            next_look,
            slowest,
        } => {
            let next = next_look.map_or(String::new(), |n| format!("; next look after round {n}"));
            let slowest = slowest.as_ref().map_or(String::new(), |(what, n)| {
                format!(" ({what} needs about {n} rounds at the noise seen so far)")
            });
            if !*looked {
                if let Some(n) = next_look {
                    eprintln!("A/B        round {round}/{rounds}: next look after round {n}");
                }
            } else if *undecided == 0 {
                eprintln!("A/B        round {round}/{rounds}: all {gated} gated metric(s) judged");
            } else {
                eprintln!(
                    "A/B        round {round}/{rounds}: {undecided} of {gated} gated metric(s) not judged yet{slowest}{next}"
                );
            }
        }
        _ => {}
    }
}

impl Observer for Printer {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::SweptStale { .. }
            | Event::Building { .. }
            | Event::Built { .. }
            | Event::Shipped { .. }
            | Event::Ready { .. }
            | Event::Unavailable { .. } => server_event(event),
            Event::LoadStarting { .. }
            | Event::LoadDone { .. }
            | Event::GeneratorsStarting { .. }
            | Event::GeneratorFailed { .. }
            | Event::Headroom { .. }
            | Event::ConntrackWait { .. } => self.load_event(event),
            Event::CapacityStarting { .. }
            | Event::CapacityStep { .. }
            | Event::CapacityDone { .. } => capacity_event(event),
            Event::OverloadStarting { .. }
            | Event::OverloadSkipped { .. }
            | Event::OverloadStep { .. }
            | Event::OverloadDone { .. } => overload_event(event),
            Event::AgainstFresh { .. }
            | Event::AgainstLook { .. } => against_event(event),
            Event::MachineBiased { check } => {
                for line in report::render::system::bias_lines(check) {
                    eprintln!("benchctl: warning: this machine biases measurements: {line}");
                }
                eprintln!("benchctl: `benchctl system check` says more; `benchctl system tune` (as root) changes what it can");
            }
            Event::RecordNotWritten { path, error } => eprintln!(
                "benchctl: warning: cannot write the results record {} ({error}); the run goes on with every measurement kept",
                path.display()
            ),
        }
    }

    fn progress(&self, completed: u64, _planned: Option<u64>) {
        if let Some(p) = self.bar().as_mut() {
            p.update(completed);
        }
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
    // As `benchctl load` says it.
    match l.version {
        HttpVersion::Http10 => {}
        HttpVersion::Http11 => parts.push("HTTP/1.1".into()),
        HttpVersion::Http2 => parts.push(format!("--h2 --streams {}", l.streams)),
        HttpVersion::Http3 => parts.push(format!("--h3 --streams {}", l.streams)),
    }
    if let Some(r) = l.rate {
        parts.push(format!("at {r} req/s"));
    }
    if l.method == Method::Head {
        parts.push("-i".into());
    }
    parts.join(" ")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
/// What a last-moment cleanup left, and the `benchctl gc` that removes containers.
fn leftover(left: &runner::Leftover) -> String {
    match left {
        runner::Leftover::Containers {
            run_id,
            error,
            scenario: Some(s),
        } => format!(
            "the containers of run {run_id}: {error} (`benchctl gc --scenario {} --all-hosts` removes them once every engine answers)",
            s.display()
        ),
        runner::Leftover::Containers {
            run_id,
            error,
            scenario: None,
        } => format!("the containers of run {run_id}: {error} (`benchctl gc` removes them)"),
        runner::Leftover::Path { path, error } => format!("{}: {error}", path.display()),
    }
}

/// What the user can do about a problem of the run, when this command can do it: the `benchctl
/// gc` that removes containers an engine kept.
fn advice(p: &runner::Problem) -> String {
    match p {
        runner::Problem::LeftBehind {
            host: Some(host),
            scenario,
            ..
        } => format!(
            ": `benchctl gc --scenario {} --host {host}` removes them once its engine answers, as does the next run that uses it",
            scenario.display()
        ),
        runner::Problem::LeftBehind { host: None, .. } => {
            ": `benchctl gc` removes them once it answers".to_string()
        }
        _ => String::new(),
    }
}
