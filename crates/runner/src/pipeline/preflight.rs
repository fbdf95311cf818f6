//! What is checked before anything starts: the kinds a scenario sees, the CPUs it names, and
//! the results file it will write.

use crate::error::RunError;
use crate::options::RunOptions;
use report::ReportError;
use scenario::{Kinds, Plan};
use std::path::{Path, PathBuf};

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

pub(super) fn check_cpus(plan: &Plan) -> Result<(), RunError> {
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
pub(super) fn results_path(opts: &RunOptions, plan: &Plan) -> Result<Option<PathBuf>, RunError> {
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
