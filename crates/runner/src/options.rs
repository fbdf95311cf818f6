//! What a run is asked to do beyond its scenario ([`RunOptions`]), an A/B run's baseline among
//! it ([`Against`]).

use crate::cancel::{Cancel, Cleanup};
use crate::headroom::Headroom;
use report::RunRecord;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

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
    /// After the capacity searches, hold each server past its capacity (`--overload`): the
    /// scenario's `[overload]`, or its defaults.
    pub overload: bool,
    /// An A/B run: measure the baseline record's images beside the candidate's, round by
    /// round, until the paired comparison is decided ([`crate::against`]); `runs` is then ignored
    /// for the against's `max_rounds`.
    pub against: Option<Against>,
    /// The benchctl binary `[load] generators` run (an image is made of it on each generator
    /// host); `None` for this process's own file, which is what the command line uses.
    pub generator_binary: Option<PathBuf>,
    /// Before the run, the machine is checked for what biases measurements (`benchctl system
    /// check`) with other processes on the run's CPUs watched this long; the record keeps the
    /// check. `None`: not checked.
    pub system_sample: Option<Duration>,
    /// The commit the running binary was built from, kept in the record; `None` when unknown.
    pub commit: Option<String>,
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
            overload: false,
            against: None,
            generator_binary: None,
            system_sample: Some(DEFAULT_SYSTEM_SAMPLE),
            commit: None,
        }
    }
}

/// How long other processes on the run's CPUs are watched before a run.
pub const DEFAULT_SYSTEM_SAMPLE: Duration = Duration::from_millis(250);

/// The time the rounds of an A/B run may take unless told otherwise.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(20 * 60);

/// What an A/B run is measured against.
#[derive(Debug, Clone)]
pub struct Against {
    /// The baseline record: its servers' images are the baseline side.
    pub record: RunRecord,
    /// Where it was read from (for the report).
    pub path: PathBuf,
    /// Relative change beyond which a gated metric is worse or better (0.05).
    pub threshold: f64,
    /// The most rounds (AB pairs); at least [`report::paired::MIN_ROUNDS`].
    pub max_rounds: u32,
    /// The time the rounds may take, from the first load; no round starts that the last one
    /// says would end beyond it.
    pub budget: Duration,
    /// Candidate servers given this fraction of the CPU the baseline record's loads of them
    /// used (at most their share): a known slowdown, to check that a run catches one; server
    /// name, factor in (0, 1].
    pub slowed: Vec<(String, f64)>,
    /// Every round on fresh containers of both sides (the default): a container's own luck
    /// (where its memory landed, how its workers were spawned) then varies from round to
    /// round, where the paired interval sees it, instead of favouring one side all run long.
    pub fresh: bool,
    /// Both sides of each server and document loaded at the same time (the default), each at
    /// most half the servers' CPUs: whatever slows the machine for a moment (another tenant,
    /// the host's clocks) then slows both alike and cancels in their ratio, where loads one
    /// after the other each see a moment of their own. `false`: one after the other, in ABBA
    /// order. Loads sent by `[load] generators` always go one after the other.
    pub together: bool,
    /// Another benchctl binary that sends the baseline side's loads (`benchctl load --json`),
    /// to judge a change in the load generator itself; `None`: this one sends both sides'.
    pub generator: Option<PathBuf>,
}

impl Against {
    /// Against `record` (read from `path`) with the default threshold, rounds and budget.
    pub fn new(record: RunRecord, path: PathBuf) -> Against {
        Against {
            record,
            path,
            threshold: report::DEFAULT_THRESHOLD,
            max_rounds: report::paired::DEFAULT_MAX_ROUNDS,
            budget: DEFAULT_BUDGET,
            slowed: Vec::new(),
            fresh: true,
            together: true,
            generator: None,
        }
    }
}
