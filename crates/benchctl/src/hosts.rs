//! `benchctl hosts check FILE`: can every Docker engine the scenario uses be reached, and what
//! is each (engine and API version, CPUs, memory, clock offset)? Exit 1 when one cannot.

use crate::failure::Failure;
use crate::output::stdout;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct HostsArgs {
    #[command(subcommand)]
    action: HostsAction,
}

#[derive(Subcommand, Debug)]
enum HostsAction {
    /// Connect to each engine the scenario uses and say what it is; exit 1 if one fails.
    Check {
        /// The scenario whose `[[host]]` tables (and local engine) to check.
        file: PathBuf,
        /// Folder of server kinds (as for `validate`).
        #[arg(long)]
        docker_dir: Option<PathBuf>,
    },
}

pub async fn main(a: HostsArgs) -> Result<ExitCode, Failure> {
    let HostsAction::Check { file, docker_dir } = a.action;
    let kinds = runner::kinds_for(&file, docker_dir.as_deref()).map_err(Failure::usage)?;
    let plan = match scenario::load_file_with(&file, &kinds) {
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
    let checks = runner::hosts::check(&plan).await;
    let mut failed = Vec::new();
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &checks {
        match &c.facts {
            Ok(f) => stdout(&format!(
                "{:width$}  {}  engine {}  API {}  {} CPUs  {:.1} GiB  clock {:+.3} s (±{:.3})\n",
                c.name,
                c.url,
                f.version,
                f.api_version,
                f.cpus,
                f.memory_bytes as f64 / f64::from(1u32 << 30),
                f.clock_offset_s,
                f.clock_uncertainty_s,
            ))?,
            Err(e) => {
                stdout(&format!("{:width$}  {}  FAILED: {e}\n", c.name, c.url))?;
                failed.push(c.name.as_str());
            }
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::from(anyhow::anyhow!(
            "{} of {} engines could not be checked: {}",
            failed.len(),
            checks.len(),
            failed.join(", ")
        )))
    }
}
