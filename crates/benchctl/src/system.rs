//! `benchctl system check` and `benchctl system tune`: what this machine does to the figures
//! measured on it, and the settings that remove it (with their exact undo).

use crate::failure::Failure;
use crate::output::stdout;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use system::tune::{self, Tuned};

#[derive(Args, Debug)]
pub struct SystemArgs {
    #[command(subcommand)]
    action: SystemAction,
}

#[derive(Subcommand, Debug)]
enum SystemAction {
    /// Say what biases measurements on this machine: connection tracking, the local port
    /// range, TIME_WAIT reuse, the CPU governor and boost, SMT siblings, huge pages, swap and
    /// other processes on the run's CPUs.
    Check {
        #[command(flatten)]
        cpus: CpuArgs,
        /// Print the findings as JSON (as a results record keeps them).
        #[arg(long)]
        json: bool,
    },
    /// Change what `check` marks [system tune] (as root), keeping the exact undo in
    /// /var/lib/benchctl/tune-undo.json.
    Tune {
        #[command(flatten)]
        cpus: CpuArgs,
        /// Print the changes without making them.
        #[arg(long)]
        dry_run: bool,
        /// Put back what earlier `system tune` runs changed.
        #[arg(long, conflicts_with_all = ["dry_run", "fixed_layout"])]
        undo: bool,
        /// Also fix every process's memory layout (kernel.randomize_va_space 0), so that two
        /// starts of one server do not differ in speed by where their memory landed: quieter
        /// A/B regression runs, at the cost of a defence against memory-corruption exploits on
        /// the whole machine. Only on a machine kept for measuring.
        #[arg(long)]
        fixed_layout: bool,
    },
}

#[derive(Args, Debug)]
struct CpuArgs {
    /// Take the CPUs from this scenario's [cpus] (loadgen and servers).
    #[arg(long, conflicts_with_all = ["loadgen", "servers"])]
    scenario: Option<PathBuf>,
    /// The load generator's CPUs, as a scenario writes them ("0", "0-1").
    #[arg(long, default_value = scenario::DEFAULT_LOADGEN_CPUS)]
    loadgen: String,
    /// The servers' CPUs.
    #[arg(long, default_value = scenario::DEFAULT_SERVER_CPUS)]
    servers: String,
}

impl CpuArgs {
    fn cpus(&self) -> Result<system::Cpus, Failure> {
        let Some(path) = &self.scenario else {
            let parse = |flag: &str, text: &str| {
                scenario::units::parse_cpuset(text)
                    .map_err(|e| Failure::usage(anyhow!("--{flag} {text:?}: {e}")))
            };
            return Ok(system::Cpus {
                client: parse("loadgen", &self.loadgen)?,
                server: parse("servers", &self.servers)?,
            });
        };
        // The scenario's server kinds are found as `run` finds them (`docker/` beside it).
        let kinds = runner::kinds_for(path, None).map_err(Failure::usage)?;
        let plan =
            scenario::load_file_with(path, &kinds).map_err(|e| Failure::usage(anyhow!("{e}")))?;
        Ok(system::Cpus {
            client: plan.cpus.loadgen,
            server: plan.cpus.servers,
        })
    }
}

/// How long other processes on the chosen CPUs are watched.
const SAMPLE: Duration = Duration::from_millis(500);

pub fn main(a: SystemArgs) -> Result<ExitCode, Failure> {
    match a.action {
        SystemAction::Check { cpus, json } => {
            let check = system::check_host(&cpus.cpus()?, SAMPLE);
            if json {
                let text = serde_json::to_string_pretty(&check).map_err(|e| anyhow!(e))?;
                stdout(&format!("{text}\n"))?;
            } else {
                stdout(&report::render::system::check_text(&check))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        SystemAction::Tune { undo: true, .. } => undo(),
        SystemAction::Tune {
            cpus,
            dry_run,
            fixed_layout,
            ..
        } => tune(&cpus.cpus()?, dry_run, fixed_layout),
    }
}

fn tune(cpus: &system::Cpus, dry_run: bool, fixed_layout: bool) -> Result<ExitCode, Failure> {
    let mut changes = tune::plan(&system::Host, cpus);
    if fixed_layout {
        changes.extend(tune::fixed_layout(&system::Host));
    }
    if changes.is_empty() {
        stdout("nothing to change: what system tune changes is as a benchmark wants it\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    for c in &changes {
        stdout(&format!(
            "{}{}\n",
            if dry_run { "would change " } else { "" },
            c.describe()
        ))?;
    }
    if dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let path = tune::undo_path();
    let mut kept = Tuned::load(&path).map_err(|e| Failure::usage(anyhow!("{e}")))?;
    make(&changes)?;
    kept.add(&changes);
    kept.save(&path).map_err(|e| {
        anyhow!(
            "the changes are made, but their undo could not be kept in {} ({e}); put back by hand: {}",
            path.display(),
            kept.undo().iter().map(tune::Change::describe).collect::<Vec<_>>().join("; ")
        )
    })?;
    stdout(&format!(
        "done; `benchctl system tune --undo` puts it back (kept in {})\n",
        path.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn undo() -> Result<ExitCode, Failure> {
    let path = tune::undo_path();
    let kept = Tuned::load(&path).map_err(|e| Failure::usage(anyhow!("{e}")))?;
    let changes = kept.undo_in_effect(&system::Host);
    if changes.is_empty() {
        if kept.changes.is_empty() {
            stdout(&format!(
                "nothing to undo ({} holds no change)\n",
                path.display()
            ))?;
        } else {
            stdout("nothing to undo: what system tune changed is no longer in effect (a reboot puts it back)\n")?;
            let _ = std::fs::remove_file(&path);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for c in &changes {
        stdout(&format!("{}\n", c.describe()))?;
    }
    make(&changes)?;
    std::fs::remove_file(&path)
        .map_err(|e| anyhow!("undone, but {} could not be removed: {e}", path.display()))?;
    stdout("undone\n")?;
    Ok(ExitCode::SUCCESS)
}

/// Makes `changes` on this machine (the ones made before a failure are put back).
fn make(changes: &[tune::Change]) -> Result<(), Failure> {
    tune::apply(changes, &tune::HostApply).map_err(|e| {
        let hint = if e.needs_root() {
            "; system tune changes kernel settings: run it as root"
        } else {
            ""
        };
        Failure::from(anyhow!("{e}{hint}"))
    })
}
