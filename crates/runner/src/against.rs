//! A/B in one sitting ([`Against`]): the baseline side's servers are the images a stored record
//! measured, started beside the candidate's (built from the current `docker/` folders), and
//! both are measured round by round, each server and document on both sides at the same time
//! (or, asked, back to back in ABBA order), until the paired comparison ([`report::paired`]) has judged every gated metric or the
//! budget is spent. Everything here is checked or looked up before anything starts.

use crate::error::RunError;
use crate::options::RunOptions;
use crate::Headroom;
use loadgen::{HttpVersion, Method};
use report::ServerStatus;
use scenario::{LoadSpec, Plan};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::options::{Against, DEFAULT_BUDGET};

/// An A/B run's plan, worked out from the scenario and the baseline record.
#[derive(Debug)]
pub(crate) struct AgainstPlan {
    /// The A/B run as asked for.
    pub asked: Against,
    /// Per scenario server (by index): the image the baseline side runs, by id where the
    /// record has one (a tag may have been rebuilt since; the id is what was measured).
    pub images: HashMap<usize, BaselineImage>,
    /// Per scenario server (by index): the factor of `slowed`.
    pub slowed: HashMap<usize, f64>,
    /// Gated metrics the family-wise alpha is split over: one per measured server and
    /// document.
    pub gates: u32,
    /// The binary that sends the baseline side's loads, when not this one.
    pub generator: Option<BaselineGenerator>,
    /// Both sides of a server and document are loaded at the same time: as asked, unless
    /// `[load] generators` send the loads (one job at a time each).
    pub together: bool,
}

/// Another benchctl binary, checked before anything starts.
#[derive(Debug, Clone)]
pub(crate) struct BaselineGenerator {
    pub path: PathBuf,
    /// What it says of itself (`benchctl --version`).
    pub version: String,
}

#[derive(Debug, Clone)]
pub(crate) struct BaselineImage {
    /// What the container is created from: the image id when recorded, else the tag.
    pub reference: String,
    pub tag: String,
    pub kind: String,
}

impl AgainstPlan {
    /// The CPU share both sides of `server` get for `document`: the one the baseline's loads
    /// had (their last round), else the scenario's.
    pub fn share(&self, plan: &Plan, server: &str, document: &str) -> Option<f64> {
        self.asked
            .record
            .loads
            .iter()
            .filter(|l| l.server == server && l.document == document)
            .max_by_key(|l| l.round)
            .map_or(plan.cpus.server_share, |l| l.server_share)
    }

    /// The CPU shares of the baseline and the candidate side of server `index` (named `server`)
    /// for `document`: `settled` when a pair loaded together settled on one, else the
    /// baseline's [`share`](Self::share), at most half the servers' CPUs when both sides are
    /// loaded together (so that each side gets all of its share while the other runs); and for
    /// a slowed candidate its factor of what the baseline side can use.
    pub fn shares(
        &self,
        plan: &Plan,
        index: usize,
        server: &str,
        document: &str,
        settled: Option<f64>,
    ) -> (Option<f64>, Option<f64>) {
        let cores = plan.cpus.servers.len() as f64;
        let mut base = self.share(plan, server, document);
        if self.together {
            let half = cores / 2.0;
            base = Some(base.map_or(half, |s| s.min(half)));
        }
        if settled.is_some() {
            base = settled;
        }
        let cand = match self.slowed.get(&index) {
            Some(f) => Some(f * self.used(plan, server, document).min(base.unwrap_or(cores))),
            None => base,
        };
        (base, cand)
    }
}

impl AgainstPlan {
    /// The cores `server` used serving `document` in the baseline record's last load of it,
    /// at most its share (or its cpuset's cores): what a slowed candidate gets a fraction of.
    /// A share is a ceiling, and a server held back by something else (its generator, its own
    /// waits) did not use all of it, so a fraction of the share alone would cut less than it
    /// says.
    pub fn used(&self, plan: &Plan, server: &str, document: &str) -> f64 {
        let ceiling = self
            .share(plan, server, document)
            .unwrap_or(plan.cpus.servers.len() as f64);
        self.asked
            .record
            .loads
            .iter()
            .filter(|l| l.server == server && l.document == document)
            .max_by_key(|l| l.round)
            .and_then(|l| {
                let u = l.server_usage.as_ref()?;
                (l.load.elapsed_s > 0.0).then(|| u.cpu_s / l.load.elapsed_s)
            })
            .filter(|c| *c > 0.0)
            .map_or(ceiling, |c| c.min(ceiling))
    }
}

/// The options an A/B run cannot be made with, and a baseline record it cannot be made
/// against.
fn check(plan: &Plan, opts: &RunOptions, a: &Against) -> Result<(), RunError> {
    let bad = |m: String| Err(RunError::Invalid(m));
    let path = a.path.display();
    if opts.headroom == Headroom::Auto {
        return bad(format!(
            "--against {path} with --headroom auto: both sides run at the CPU shares the baseline's loads had (headroom's included); give --headroom when making the baseline"
        ));
    }
    if opts.capacity.is_some() || plan.capacity.is_some() {
        return bad(format!(
            "--against {path}: a capacity search is one search per side, not paired rounds; search capacity in a run of its own (remove --capacity, or the scenario's [capacity])"
        ));
    }
    let min = report::paired::MIN_ROUNDS;
    if a.max_rounds < min {
        return bad(format!(
            "--against {path} needs at least {min} rounds (the comparison is looked at after round {}, or after the last round of a shorter run); got {}",
            report::paired::FIRST_LOOK,
            a.max_rounds
        ));
    }
    if !(a.threshold > 0.0 && a.threshold < 1.0) {
        return bad(format!(
            "--against {path}: a threshold of {} cannot be judged (give one between 0% and 100%)",
            a.threshold
        ));
    }
    if a.budget.is_zero() {
        return bad(format!("--against {path}: a budget of 0 leaves no round"));
    }
    if a.record.run_id.is_empty() || a.record.servers.is_empty() {
        return bad(format!(
            "--against {path}: the baseline record names no server images"
        ));
    }
    Ok(())
}

/// Per scenario server (by index), the factor `--slow-candidate` gives it.
fn slowed(plan: &Plan, a: &Against) -> Result<HashMap<usize, f64>, RunError> {
    let bad = |m: String| Err(RunError::Invalid(m));
    let mut slowed = HashMap::new();
    for (name, factor) in &a.slowed {
        let Some(i) = plan.servers.iter().position(|s| &s.name == name) else {
            return bad(format!(
                "--slow-candidate {name}={factor}: the scenario has no server of that name"
            ));
        };
        if !(*factor > 0.0 && *factor <= 1.0) {
            return bad(format!(
                "--slow-candidate {name}={factor}: the factor is a fraction of the baseline side's CPU, above 0 and at most 1"
            ));
        }
        slowed.insert(i, *factor);
    }
    Ok(slowed)
}

/// Checks an A/B run's options against the scenario and the baseline record, before anything
/// starts.
pub(crate) fn prepare(
    plan: &Plan,
    opts: &RunOptions,
    a: &Against,
) -> Result<AgainstPlan, RunError> {
    check(plan, opts, a)?;
    let bad = |m: String| Err(RunError::Invalid(m));
    let path = a.path.display();
    let wanted = |name: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == name);
    let mut images = HashMap::new();
    let mut gates = 0u32;
    for (i, s) in plan.servers.iter().enumerate() {
        // The servers measured and those they need: every one runs on both sides.
        let needed = wanted(&s.name)
            || plan
                .servers
                .iter()
                .any(|o| wanted(&o.name) && o.depends_on().any(|d| d == i));
        if !needed {
            continue;
        }
        if wanted(&s.name) {
            gates += plan.documents.len() as u32;
        }
        let Some(b) = a.record.servers.iter().find(|b| b.name == s.name) else {
            return bad(format!(
                "--against {path}: the baseline record has no server `{}` (it has: {}); an A/B run measures the scenario's servers on both sides",
                s.name,
                a.record
                    .servers
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if b.kind != s.kind.as_str() {
            return bad(format!(
                "--against {path}: `{}` is a {} server in the scenario but was a {} server in the baseline",
                s.name,
                s.kind.as_str(),
                b.kind
            ));
        }
        if !matches!(b.status, ServerStatus::Available { .. }) || b.image_tag.is_empty() {
            return bad(format!(
                "--against {path}: `{}` was not measured in the baseline run, so it has no image to measure again",
                s.name
            ));
        }
        images.insert(
            i,
            BaselineImage {
                reference: b.image_id.clone().unwrap_or_else(|| b.image_tag.clone()),
                tag: b.image_tag.clone(),
                kind: b.kind.clone(),
            },
        );
    }
    let slowed = slowed(plan, a)?;
    let generator = match &a.generator {
        Some(p) => Some(baseline_generator(p, plan)?),
        None => None,
    };
    Ok(AgainstPlan {
        asked: a.clone(),
        images,
        slowed,
        gates: gates.max(1),
        generator,
        together: a.together && plan.generators.is_empty(),
    })
}

/// `path` is a benchctl binary that can send the baseline side's loads of `plan`.
fn baseline_generator(path: &Path, plan: &Plan) -> Result<BaselineGenerator, RunError> {
    let bad = |m: String| {
        Err(RunError::Invalid(format!(
            "--baseline-generator {}: {m}",
            path.display()
        )))
    };
    if !plan.generators.is_empty() {
        return bad("the scenario's loads are sent by [load] generators on other hosts, which run this binary; remove [load] generators to compare two generators here".into());
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return bad(format!("cannot be read: {e}")),
    };
    use std::os::unix::fs::PermissionsExt as _;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return bad("is not an executable file".into());
    }
    let out = std::process::Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    let version = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => {
            return bad(format!(
                "`--version` exited with {}: is it a benchctl binary?",
                o.status
            ))
        }
        Err(e) => return bad(format!("cannot be run: {e}")),
    };
    if !version.starts_with("benchctl ") {
        return bad(format!("says it is {version:?}, not benchctl"));
    }
    Ok(BaselineGenerator {
        path: path.to_path_buf(),
        version,
    })
}

/// One load sent by another benchctl binary (`benchctl load --json`) on this machine, pinned
/// to the generator's CPUs: its report, or why there is none. `None` when the run was
/// cancelled meanwhile (the child is killed; a partial load is not kept).
pub(crate) async fn measure_with(
    g: &BaselineGenerator,
    load: &LoadSpec,
    cpus: &[usize],
    url: &str,
    cancel: &crate::Cancel,
) -> Result<Option<loadgen::json::LoadReport>, RunError> {
    let args = load_args(load, cpus, url);
    let child = tokio::process::Command::new(&g.path)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| RunError::Step(format!("{} could not be started: {e}", g.path.display())))?;
    let out = tokio::select! {
        out = child.wait_with_output() => out,
        _ = cancel.cancelled() => return Ok(None),
    };
    let out = out.map_err(|e| RunError::Step(format!("{}: {e}", g.path.display())))?;
    // A load that ran into the generator's own limits exits 1 with its measurement.
    crate::generators::report_of(&out.stdout, &out.stderr)
        .map(Some)
        .map_err(|why| {
            RunError::Step(format!(
                "the baseline generator {} ({}) exited with {} without a measurement this binary can read {why}",
                g.path.display(),
                g.version,
                out.status
            ))
        })
}

/// `benchctl load`'s flags for `load` (its parts given apart), for another benchctl binary:
/// one older than `--job` reads only these. Every field of the load that binary should send
/// has its flag here.
fn load_args(load: &LoadSpec, cpus: &[usize], url: &str) -> Vec<String> {
    let us = |d: Duration| format!("{}us", d.as_micros());
    let mut a: Vec<String> = vec!["load".into(), "--json".into(), "-q".into()];
    if let Some(n) = load.requests {
        a.extend(["-n".into(), n.to_string()]);
    }
    if let Some(d) = load.duration {
        a.extend(["--duration".into(), us(d)]);
    }
    a.extend(["-c".into(), load.concurrency.to_string()]);
    if load.keep_alive {
        a.push("-k".into());
    }
    match load.version {
        HttpVersion::Http10 => {}
        HttpVersion::Http11 => a.push("--http1.1".into()),
        HttpVersion::Http2 => a.extend([
            "--h2".into(),
            "--streams".into(),
            load.streams.max(1).to_string(),
        ]),
        HttpVersion::Http3 => a.extend([
            "--h3".into(),
            "--streams".into(),
            load.streams.max(1).to_string(),
        ]),
    }
    match &load.method {
        Method::Get => {}
        Method::Head => a.push("-i".into()),
        m => a.extend(["-m".into(), m.as_str().to_string()]),
    }
    a.extend(["-s".into(), us(load.timeout)]);
    if !load.warmup.is_zero() {
        a.extend(["--warmup".into(), us(load.warmup)]);
    }
    if let Some(r) = load.rate {
        a.extend(["--rate".into(), format!("{r}")]);
    }
    if !load.rx_stamps {
        a.push("--user-timestamps".into());
    }
    a.extend(["--coalesce".into(), load.coalesce.to_string()]);
    if let Some(d) = load.min_duration {
        a.extend(["--min-duration".into(), us(d)]);
    }
    let cpus: Vec<String> = cpus.iter().map(usize::to_string).collect();
    if !cpus.is_empty() {
        a.extend([
            "--cpus".into(),
            cpus.join(","),
            "--threads".into(),
            cpus.len().to_string(),
        ]);
    }
    a.push(url.to_string());
    a
}

/// Every baseline image is on this machine: a missing one is named, with how to get it back.
pub(crate) async fn check_images<E: crate::fleet::Engine>(
    orch: &E,
    against: &AgainstPlan,
) -> Result<(), RunError> {
    let mut indices: Vec<&usize> = against.images.keys().collect();
    indices.sort();
    for i in indices {
        let img = &against.images[i];
        let present = orch
            .image_id(&img.reference)
            .await
            .map_err(RunError::Docker)?
            .is_some();
        if present {
            continue;
        }
        let id = if img.reference != img.tag {
            format!(" (image id {})", img.reference)
        } else {
            String::new()
        };
        return Err(RunError::Invalid(format!(
            "--against {}: the baseline's image {}{id} is not on this machine. Rebuild it from docker/{} as it was when the baseline ran (git checkout COMMIT -- docker/{} && benchctl images build {}: the tag is that folder's hash, but a rebuild installs today's packages, so its id and figures may differ), or load a saved copy (docker save {} > img.tar on a machine that has it, docker load < img.tar here). bench/nightly.sh --promote keeps the images of the baselines it promotes.",
            against.asked.path.display(),
            img.tag,
            img.kind,
            img.kind,
            img.kind,
            img.tag
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::{HttpVersion, Method};

    #[test]
    fn a_load_becomes_the_flags_an_older_benchctl_load_reads() {
        let mut load = LoadSpec {
            requests: Some(500),
            concurrency: 5,
            keep_alive: true,
            version: HttpVersion::Http11,
            method: Method::Head,
            rate: Some(200.0),
            warmup: Duration::from_millis(500),
            ..LoadSpec::default()
        };
        let text = load_args(&load, &[0], "http://10.0.0.5:8080/").join(" ");
        for want in [
            "load --json -q -n 500",
            "-c 5 -k --http1.1 -i",
            "--warmup 500000us",
            "--rate 200",
            "--cpus 0 --threads 1 http://10.0.0.5:8080/",
        ] {
            assert!(text.contains(want), "{want:?} in {text}");
        }
        load.version = HttpVersion::Http2;
        load.streams = 8;
        load.rate = None;
        load.requests = None;
        let text = load_args(&load, &[0], "https://10.0.0.5:8443/").join(" ");
        assert!(text.contains("-c 5 -k --h2 --streams 8 -i"), "{text}");
        assert!(!text.contains("--http1.1"), "{text}");
    }
}
