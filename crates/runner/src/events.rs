//! What a run tells its caller while it goes: the caller decides what to show (the command line
//! prints lines and a progress bar; a test may collect them).

use loadgen::LoadSpec;
use report::capacity::{CapacityCriteria, CapacityRecord, CapacityStep};
use report::LoadRecord;
use std::path::Path;

/// Receives a run's events. Called from the run's tasks and, for [`progress`](Self::progress),
/// from the thread that drives the load generator: implementations synchronise themselves.
pub trait Observer: Send + Sync {
    fn event(&self, event: &Event<'_>);

    /// Requests completed so far in the load under way (about every 50 ms), and how many the
    /// load will make when it is bounded by a count.
    fn progress(&self, _completed: u64, _planned: Option<u64>) {}
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {
    fn event(&self, _: &Event<'_>) {}
}

/// One step of a run.
#[derive(Debug)]
pub enum Event<'a> {
    /// Containers and run folders left by earlier runs whose owners are gone were removed.
    SweptStale { containers: usize, folders: usize },
    /// An image is about to be built (or found up to date).
    Building {
        server: &'a str,
        context: &'a Path,
        /// The `[[host]]` whose engine builds it; `None` for this machine's.
        host: Option<&'a str>,
    },
    Built {
        server: &'a str,
        tag: &'a str,
        /// False when the image was up to date and nothing was built.
        built: bool,
        seconds: f64,
    },
    /// The image of a server on a host with `images = "ship"`, made here, is on that host's
    /// engine now, with the id it has here.
    Shipped {
        server: &'a str,
        /// The `[[host]]`.
        host: &'a str,
        /// The image's id, checked there on arrival.
        id: &'a str,
        /// False when that engine had it already and nothing was sent.
        sent: bool,
        /// Bytes of the archive sent.
        bytes: u64,
        seconds: f64,
    },
    /// The server answered and served every document byte for byte.
    Ready {
        server: &'a str,
        /// From container creation to its first HTTP answer.
        answering_s: f64,
        /// From container creation to the end of verification.
        verified_s: f64,
        /// What the server calls itself (its manifest says which header).
        version: Option<&'a str>,
        /// The `[[host]]` it runs on; `None` for this machine's engine.
        host: Option<&'a str>,
        /// Where it listens.
        address: std::net::SocketAddr,
    },
    /// The server cannot be measured (any more): it did not build, start or verify, or it
    /// died, or a server it needs did.
    Unavailable { server: &'a str, reason: &'a str },
    LoadStarting {
        /// 1-based.
        round: u32,
        rounds: u32,
        server: &'a str,
        url_path: &'a str,
        load: &'a LoadSpec,
    },
    /// The load left the generator no headroom: it is measured again with the server capped at
    /// a smaller CPU share ([`crate::Headroom::Auto`]).
    Headroom {
        server: &'a str,
        url_path: &'a str,
        /// The share it had, in cores (`None`: its whole cpuset).
        share: Option<f64>,
        /// The generator's CPU over the load, as a share of its cores.
        generator: f64,
        /// The share it is measured with next.
        next: f64,
    },
    /// `[load] generators`: their containers are being started, each told to begin the load
    /// `lead_s` seconds from now (by this machine's clock, shifted by its own engine's offset).
    GeneratorsStarting {
        generators: usize,
        lead_s: f64,
        /// The slowest trial run: how long a generator's container took to start.
        slowest_trial_s: f64,
    },
    /// One of `[load] generators` failed during a load: its container is removed, the load
    /// keeps the others' parts (and its record says it is partial).
    GeneratorFailed { host: &'a str, reason: &'a str },
    /// A load was measured and recorded.
    LoadDone {
        /// 1-based.
        round: u32,
        rounds: u32,
        record: &'a LoadRecord,
        /// On the baseline side of an A/B run.
        baseline: bool,
    },
    /// A load waits for room in the kernel's connection tracking table (at most 130 s).
    ConntrackWait {
        /// Entries in use and the table's size.
        count: u64,
        max: u64,
        /// Connections the load may open.
        need: u64,
    },
    /// An A/B run put both sides on fresh containers before a round.
    AgainstFresh {
        /// 1-based: the round about to start.
        round: u32,
        /// Containers started.
        containers: usize,
        /// Containers of the last round the engine did not remove (`benchctl gc` does).
        not_removed: usize,
        seconds: f64,
    },
    /// An A/B run looked at its paired comparison after a round.
    AgainstLook {
        /// 1-based: rounds done.
        round: u32,
        /// The most it may take.
        rounds: u32,
        /// Gated metrics not judged yet.
        undecided: usize,
        gated: usize,
        /// The stopping rule looked after this round ([`report::paired::look_rounds`]);
        /// otherwise the verdicts are not acted on.
        looked: bool,
        /// The round after which it looks next, if any.
        next_look: Option<u32>,
        /// The undecided gated metric that needs the most rounds at the noise seen so far
        /// (`server / document`), and about how many ([`report::paired::rounds_to_show`]).
        slowest: Option<(String, usize)>,
    },
    /// A capacity search begins on one server and document.
    CapacityStarting {
        server: &'a str,
        url_path: &'a str,
        criteria: &'a CapacityCriteria,
        /// The first rate it tries, requests/s.
        start: f64,
    },
    /// A step of a capacity search was measured and judged.
    CapacityStep {
        server: &'a str,
        url_path: &'a str,
        /// 1-based.
        number: usize,
        step: &'a CapacityStep,
        criteria: &'a CapacityCriteria,
    },
    /// A capacity search ended and was recorded.
    CapacityDone { record: &'a CapacityRecord },
    /// A staircase past the capacity begins on one server and document.
    OverloadStarting {
        server: &'a str,
        url_path: &'a str,
        /// The rate its multiples are of, requests/s.
        capacity: f64,
    },
    /// A server and document get no staircase: no capacity to climb from (`why`).
    OverloadSkipped {
        server: &'a str,
        url_path: &'a str,
        why: &'a str,
    },
    /// A step of a staircase (or its recovery phase) was measured.
    OverloadStep {
        server: &'a str,
        url_path: &'a str,
        step: &'a report::overload::OverloadStep,
    },
    /// A staircase ended and was recorded.
    OverloadDone {
        record: &'a report::overload::OverloadRecord,
    },
    /// The results record could not be written where asked; the run goes on, keeps every
    /// measurement, and tries again after each load and elsewhere at the end. Sent once.
    RecordNotWritten { path: &'a Path, error: &'a str },
    /// The machine was checked before the run ([`crate::RunOptions::system_sample`]) and
    /// something about it biases measurements (the check's findings, the biases among them).
    MachineBiased {
        check: &'a report::record::SystemCheck,
    },
}

/// Collects a run's events as short lines (`ready nginx`, `done nginx /`, ...), and passes the
/// names of ready servers on to a channel if asked: what tests read a run's course from.
#[derive(Default)]
pub struct Recorder {
    pub lines: std::sync::Mutex<Vec<String>>,
    pub on_ready: std::sync::Mutex<Option<std::sync::mpsc::Sender<String>>>,
}

impl Recorder {
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Observer for Recorder {
    fn event(&self, event: &Event<'_>) {
        let line = match event {
            Event::SweptStale { .. } => "swept".to_string(),
            Event::Building { server, .. } => format!("building {server}"),
            Event::Built { server, .. } => format!("built {server}"),
            Event::Shipped {
                server, host, sent, ..
            } => format!(
                "shipped {server} to {host}: {}",
                if *sent { "sent" } else { "there" }
            ),
            Event::Ready { server, .. } => {
                if let Some(tx) = self.on_ready.lock().unwrap().as_ref() {
                    let _ = tx.send(server.to_string());
                }
                format!("ready {server}")
            }
            Event::Unavailable { server, reason } => format!("unavailable {server}: {reason}"),
            Event::GeneratorsStarting { generators, .. } => format!("{generators} generators"),
            Event::GeneratorFailed { host, reason } => format!("generator {host} failed: {reason}"),
            Event::LoadStarting {
                server, url_path, ..
            } => format!("load {server} {url_path}"),
            Event::LoadDone {
                record, baseline, ..
            } => format!(
                "done {}{} {}",
                record.server,
                if *baseline { " [baseline]" } else { "" },
                record.url_path
            ),
            Event::Headroom {
                server,
                url_path,
                next,
                ..
            } => format!("headroom {server} {url_path} {next}"),
            Event::CapacityStarting {
                server, url_path, ..
            } => format!("capacity {server} {url_path}"),
            Event::CapacityStep { server, step, .. } => format!("step {server} {:.0}", step.rate),
            Event::CapacityDone { record } => {
                format!("capacity done {} {}", record.server, record.url_path)
            }
            Event::OverloadStarting {
                server, url_path, ..
            } => format!("overload {server} {url_path}"),
            Event::OverloadSkipped {
                server, url_path, ..
            } => format!("overload skipped {server} {url_path}"),
            Event::OverloadStep { server, step, .. } => {
                format!("overload step {server} {}", step.multiple)
            }
            Event::OverloadDone { record } => {
                format!("overload done {} {}", record.server, record.url_path)
            }
            Event::AgainstFresh {
                round, containers, ..
            } => format!("against fresh {round} {containers}"),
            Event::ConntrackWait { count, max, .. } => format!("conntrack wait {count}/{max}"),
            Event::AgainstLook {
                round, undecided, ..
            } => format!("against look {round} {undecided}"),
            Event::RecordNotWritten { error, .. } => format!("not written: {error}"),
            Event::MachineBiased { check } => format!("biased {}", check.biases().count()),
        };
        self.lines.lock().unwrap().push(line);
    }
}
