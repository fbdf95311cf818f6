//! The record's layout: every type its JSON holds, and what some of its figures mean.

use super::host::HostFacts;
use crate::json::LoadReport;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::{SystemTime, UNIX_EPOCH};

/// Layout version of [`RunRecord`]; bumped on any change an older reader would misread.
///
/// 2 added `capacity` (the capacity searches). A record of version 1 is read as one with no
/// searches; a reader of version 1 refuses a record of version 2 by its version rather than
/// by a field it does not know.
///
/// 3 added each load's `timeline` (its counts and histograms per interval), the `unsteady` note
/// (which a reader of version 2 would refuse as an unknown kind of note) and `against` (the
/// baseline side of an A/B run). Records of versions 1 and 2 are read as loads without
/// timelines and runs without a baseline side.
///
/// 4 added the host's `system` check (what biases measurements on the machine). Records of
/// versions 1 to 3 are read as made on a machine that was not checked.
///
/// 5 added `benchctl_commit` (the commit the writing binary was built from), which the history
/// of nightly records shows per night, and an A/B run's `interval` (how its intervals are made).
/// Older records are read as made by a binary of unknown commit, their A/B runs judged with
/// Student's t as they were.
///
/// 6 added HTTP/3 loads (`protocol` "h3", a reader of version 5 would refuse it) and lists the
/// notes of HTTP/2 errors and of QUIC's accounting. Older records are read as they are: none of
/// their loads spoke HTTP/3.
///
/// 7 added `overload` (what each server did past its capacity). Older records are read as runs
/// that made no staircase.
pub const SCHEMA_VERSION: u32 = 7;

/// Everything one `benchctl run` produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// Always [`SCHEMA_VERSION`] when written by this crate.
    pub schema_version: u32,
    /// The benchctl that wrote the record (`CARGO_PKG_VERSION` of the binary).
    pub benchctl_version: String,
    /// The commit the writing binary was built from (`git describe --always --dirty` of its
    /// source tree: a short hash, `-dirty` when files tracked by git differed from it); absent
    /// when it was built outside a git checkout, and in records of versions 1 to 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchctl_commit: Option<String>,
    /// Unique per run; also the label on the run's containers.
    pub run_id: String,
    /// RFC 3339, UTC, whole seconds.
    pub started_at: String,
    /// RFC 3339, UTC; absent while the run is still going (or when its writer died).
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub scenario: ScenarioRecord,
    pub host: HostFacts,
    /// The Docker engines of the scenario's `[[host]]`s the run used, as each described
    /// itself when the run started; empty when everything ran on this machine's engine (and in
    /// records made before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineRecord>,
    /// In scenario order; the first one is the reference that ratios are taken against.
    pub servers: Vec<ServerRecord>,
    /// In the order they were measured: round by round, servers interleaved within a round.
    pub loads: Vec<LoadRecord>,
    /// Capacity searches at a latency target, after the loads: per server and document, in the
    /// order they ran (absent when the run made none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<super::capacity::CapacityRecord>,
    /// Staircases past the capacity (`--overload`), after the capacity searches: per server
    /// and document, in the order they ran (absent when the run made none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overload: Vec<super::overload::OverloadRecord>,
    /// An A/B run (`benchctl run --against BASELINE.json`): the baseline side, measured in the
    /// same sitting, round by round beside the loads above (the candidate's). Absent for an
    /// ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<AgainstRecord>,
}

/// The baseline side of an A/B run and the settings of its sequential test (the report crate's paired comparison): everything a later `benchctl compare` needs to judge the run again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgainstRecord {
    /// The run id of the baseline record whose images were measured.
    pub baseline_run_id: String,
    /// The baseline record's path, as given.
    pub baseline_path: String,
    /// Relative change beyond which a gated metric is judged better or worse (0.05 for 5%).
    pub threshold: f64,
    /// The chance, over all the looks and gated metrics together, that an interval misses.
    pub alpha: f64,
    /// Rounds (AB pairs) before the first look.
    pub min_rounds: u32,
    /// The most rounds the run may take.
    pub max_rounds: u32,
    /// How each interval was made (records without it used Student's t).
    #[serde(default, skip_serializing_if = "Interval::is_student_t")]
    pub interval: Interval,
    /// After which rounds the stopping rule looked (records without it looked after every
    /// round).
    #[serde(default, skip_serializing_if = "Looks::is_every_round")]
    pub looks: Looks,
    /// Each round ran on fresh containers of both sides (records without it kept one
    /// container per side all run long).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fresh_containers: bool,
    /// Both sides of each server and document were loaded at the same time, each at most half
    /// the servers' CPUs (records without it loaded them one after the other, in ABBA order).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub together: bool,
    /// The other benchctl binary that sent the baseline side's loads ("PATH (benchctl
    /// VERSION)"); absent when this run's own binary sent both sides'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_generator: Option<String>,
    /// How many gated metrics `alpha` is split over (one per server and document).
    pub gates: u32,
    /// The time the rounds may take, seconds, from the first load.
    pub budget_s: f64,
    /// Candidate servers given a fraction of the baseline side's CPU on purpose (a known
    /// slowdown, to check that a regression run catches one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowed: Vec<Slowed>,
    /// The baseline side's servers: the images measured (the baseline record's, by tag and id).
    pub servers: Vec<ServerRecord>,
    /// The baseline side's loads; round `r` of a server and document pairs with the candidate's
    /// round `r` in [`RunRecord::loads`].
    pub loads: Vec<LoadRecord>,
    /// Why the rounds ended; absent while they go on (or when the run failed or was stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<AgainstStop>,
}

/// How an A/B run's intervals on the paired log ratios are made (the report crate's paired
/// comparison).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    /// Student's t-interval on their mean: what records made before the signed-rank interval
    /// used.
    #[default]
    StudentT,
    /// The Hodges-Lehmann estimate and the Wilcoxon signed-rank interval: it holds for
    /// heavy-tailed rounds, where one wild round widens a t-interval.
    SignedRank,
}

impl Interval {
    pub fn is_student_t(&self) -> bool {
        *self == Interval::StudentT
    }
}

/// When an A/B run's stopping rule looks at the comparison (the report crate's paired comparison).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Looks {
    /// After every round from `min_rounds` to `max_rounds`.
    #[default]
    EveryRound,
    /// After round `min_rounds`, then whenever the rounds have grown by half again, and after
    /// `max_rounds`; plus a last look wherever the time budget ends the rounds.
    Growing,
}

impl Looks {
    pub fn is_every_round(&self) -> bool {
        *self == Looks::EveryRound
    }
}

/// A candidate server capped at `factor` times the CPU the baseline record's loads of it used (at
/// most its share).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slowed {
    pub server: String,
    pub factor: f64,
}

/// Why the rounds of an A/B run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgainstStop {
    /// Every gated metric was judged: worse, better or within the threshold.
    Decided,
    /// `max_rounds` ran before every gated metric was judged.
    Rounds,
    /// Another round would have gone past the time budget.
    Time,
}

impl AgainstStop {
    pub fn text(self) -> &'static str {
        match self {
            AgainstStop::Decided => "every gated metric judged",
            AgainstStop::Rounds => {
                "the round budget was used up before every gated metric was judged"
            }
            AgainstStop::Time => "the time budget was used up before every gated metric was judged",
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunStatus {
    /// Still going: a record left in this state by a killed process is partial.
    Running,
    /// Every planned load ran.
    Complete,
    /// Stopped on request (Ctrl-C, a signal); the loads recorded are valid but not all ran.
    Interrupted { reason: String },
    /// Stopped by an error; the loads recorded before it are valid.
    Failed { reason: String },
}

impl RunStatus {
    /// The word reports print ("complete", "interrupted"...).
    pub fn label(&self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted { .. } => "interrupted",
            RunStatus::Failed { .. } => "failed",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            RunStatus::Interrupted { reason } | RunStatus::Failed { reason } => Some(reason),
            _ => None,
        }
    }
}

/// The scenario as it was when the run started: its text is kept so the run can be repeated
/// even after the file changed, and its hash tells at a glance whether two runs ran the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRecord {
    pub name: String,
    /// As given on the command line.
    pub path: String,
    /// SHA-256 of `source`, lowercase hex.
    pub sha256: String,
    /// The TOML text.
    pub source: String,
}

impl ScenarioRecord {
    /// Records a scenario, hashing its text.
    pub fn new(
        name: impl Into<String>,
        path: impl Into<String>,
        source: impl Into<String>,
    ) -> Self {
        let source = source.into();
        let sha256 = hex::encode(Sha256::digest(source.as_bytes()));
        ScenarioRecord {
            name: name.into(),
            path: path.into(),
            sha256,
            source,
        }
    }
}

/// One server of the scenario and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRecord {
    /// The scenario's name for it ("nginx", "apache-php").
    pub name: String,
    /// What software it is ("nginx", "apache", "varnish"...).
    pub kind: String,
    pub image_tag: String,
    /// The Docker image id (`sha256:...`), when the image was built.
    pub image_id: Option<String>,
    /// The `Server` header it answered with, taken as its version; absent when it sent none.
    pub server_header: Option<String>,
    pub status: ServerStatus,
    /// The `[[host]]` whose engine ran it (one of the record's `engines`); absent for this
    /// machine's engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Whether a server could be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerStatus {
    /// Started and verified; `ready_s` is how long it took to answer correctly, seconds.
    Available { ready_s: f64 },
    /// Could not be built, started or verified: reports list it with the reason.
    Unavailable { reason: String },
}

// `ready_s` is a float, but never NaN in practice; reports compare records as wholes.
impl Eq for ServerStatus {}

/// One load: one server, one document, one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadRecord {
    /// [`ServerRecord::name`].
    pub server: String,
    /// The scenario's name for the document ("hello", "robots.txt").
    pub document: String,
    /// The path requested.
    pub url_path: String,
    /// 0-based repetition.
    pub round: u32,
    pub load: LoadReport,
    /// The server container's resource use while this load ran, when Docker reported it.
    pub server_usage: Option<Usage>,
    /// The load generator used about a full core per thread: the numbers may measure the
    /// client rather than the server. See [`is_client_bound`].
    pub client_bound: bool,
    /// The CPU time the server could use, in cores, when it was capped (a scenario's
    /// `server_share`, or the share headroom settled on); absent when it had its whole cpuset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_share: Option<f64>,
    /// How the load reached the server when not in plain HTTP/1.x (a scenario's `tls = true`,
    /// `http = "2"` or `http = "3"`); absent for cleartext HTTP/1.x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// HTTP/2 and HTTP/3: the requests at once on each connection (a scenario's `streams`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// With `[load] generators`: each generator's part, in the scenario's order (`load` is the
    /// merge of those that succeeded). Empty when this process generated the load, and in
    /// records made before generators existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorRecord>,
}

/// The protocol a load spoke, when not plain HTTP/1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.x over TLS.
    Https,
    /// HTTP/2 over TLS, chosen by ALPN.
    H2,
    /// Cleartext HTTP/2, by prior knowledge.
    H2c,
    /// HTTP/3 over QUIC v1 (always encrypted, chosen by ALPN "h3").
    H3,
}

impl Protocol {
    /// The protocol of a load over TLS or not, in HTTP/2 or not; `None` for cleartext HTTP/1.x.
    pub fn of(tls: bool, http2: bool) -> Option<Protocol> {
        match (tls, http2) {
            (false, false) => None,
            (true, false) => Some(Protocol::Https),
            (true, true) => Some(Protocol::H2),
            (false, true) => Some(Protocol::H2c),
        }
    }

    pub fn is_http2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }

    /// Whether requests ran side by side as streams on each connection (HTTP/2, HTTP/3).
    pub fn is_multiplexed(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c | Protocol::H3)
    }
}

impl LoadRecord {
    /// The protocol line of its ab-style table ("HTTP/2 over TLS (h2), 8 streams per
    /// connection"); `None` for cleartext HTTP/1.x, which ab's own layout covers.
    pub fn protocol_line(&self) -> Option<String> {
        let version = if self.load.settings.http11 {
            "HTTP/1.1"
        } else {
            "HTTP/1.0"
        };
        let streams = |n: Option<u32>| {
            let n = n.unwrap_or(1);
            format!("{n} stream{} per connection", if n == 1 { "" } else { "s" })
        };
        Some(match self.protocol? {
            Protocol::Https => format!("{version} over TLS"),
            Protocol::H2 => format!("HTTP/2 over TLS (h2), {}", streams(self.streams)),
            Protocol::H2c => format!("HTTP/2 in cleartext (h2c), {}", streams(self.streams)),
            Protocol::H3 => format!("HTTP/3 over QUIC v1 (h3), {}", streams(self.streams)),
        })
    }
}

impl LoadRecord {
    /// A generator of this load failed: `load` holds only the others' part.
    pub fn is_partial(&self) -> bool {
        self.generators.iter().any(|g| g.error.is_some())
    }
}

/// A `[[host]]`'s Docker engine as it described itself (`benchctl hosts check`'s line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineRecord {
    /// The `[[host]]`'s name.
    pub name: String,
    pub url: String,
    pub version: String,
    pub api_version: String,
    pub cpus: u64,
    pub memory_bytes: u64,
    pub kernel: String,
    /// Its clock minus this machine's, seconds.
    pub clock_offset_s: f64,
    pub clock_uncertainty_s: f64,
}

/// One generator's part of a load sent from several hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorRecord {
    /// The `[[host]]` it ran on.
    pub host: String,
    /// Its share: requests (absent for a load bounded by time), connections, and rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    pub concurrency: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Its engine's clock minus this machine's, seconds, as measured before the run: the
    /// start instant it was given was shifted by it.
    pub clock_offset_s: f64,
    /// How far off that offset may be (half the round trip of its reading), seconds.
    #[serde(default)]
    pub clock_uncertainty_s: f64,
    /// What it measured (absent when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_second: Option<f64>,
    /// CPU seconds it used while measuring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_s: Option<f64>,
    /// It set the pace rather than the server ([`is_client_bound`]).
    #[serde(default)]
    pub client_bound: bool,
    /// Why it has no part in `load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl GeneratorRecord {
    /// One line: what it sent against its target, the CPU it used, whether it set the pace;
    /// or why it has no part.
    pub fn summary_line(&self) -> String {
        let Some(rps) = self.requests_per_second else {
            let why = self.error.as_deref().unwrap_or("no measurement");
            return format!(
                "generator {}: FAILED: {}",
                self.host,
                why.lines().next().unwrap_or(why)
            );
        };
        let target = match self.rate {
            Some(r) if r > 0.0 => format!(" of {r:.1} target ({:.1}%)", rps / r * 100.0),
            _ => String::new(),
        };
        let (cpu, secs) = (
            self.client_cpu_s.unwrap_or(0.0),
            self.elapsed_s.unwrap_or(0.0).max(1e-9),
        );
        format!(
            "generator {}: {} requests over {} connections, {rps:.1} req/s{target}, CPU {cpu:.2} s ({:.2} cores), {}",
            self.host,
            self.complete.unwrap_or(0),
            self.concurrency,
            cpu / secs,
            if self.client_bound {
                "client-bound"
            } else {
                "not client-bound"
            }
        )
    }
}

/// Share of its threads' CPU time from which the load generator counts as the bottleneck.
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// Whether the load generator, not the server, set a load's pace: it used at least
/// [`CLIENT_BOUND_SHARE`] of a core per worker thread while measuring, or responses waited
/// longer for it to read them than the server took to send them
/// ([`crate::Note::GeneratorBound`]; its CPU time leaves out part of the kernel's work for
/// its sockets, so it can fall behind before its CPU time says so), or over HTTP/3 its UDP
/// receive buffers overflowed ([`crate::Note::Quic`]).
pub fn is_client_bound(load: &LoadReport) -> bool {
    let threads = load.settings.threads.max(1) as f64;
    let busy =
        load.elapsed_s > 0.0 && load.client_cpu_s / load.elapsed_s >= CLIENT_BOUND_SHARE * threads;
    busy || fell_behind(load)
}

/// Whether responses waited longer for the generator to read them than the server took to send
/// them ([`crate::Note::GeneratorBound`]), or were dropped for want of room in its UDP receive
/// buffers ([`crate::Note::Quic`]).
pub fn fell_behind(load: &LoadReport) -> bool {
    load.notes.iter().any(|n| match n {
        crate::Note::GeneratorBound { .. } => true,
        crate::Note::Quic { udp_drops, .. } => *udp_drops > 0,
        _ => false,
    })
}

/// The shortest measured part of a load whose figures are worth reading: below it, start-up,
/// the first connections and the last stragglers are much of what was measured, and the rounds
/// of one server disagree.
pub const MIN_MEASURED_S: f64 = 1.0;

/// Whether a load was too short to measure (see [`MIN_MEASURED_S`]): the posts' `-n 1000`
/// against a fast server lasts some tens of milliseconds. A load's `min_duration` repeats it
/// until it lasts long enough.
pub fn is_too_short(load: &LoadReport) -> bool {
    load.elapsed_s < MIN_MEASURED_S
}

/// The share of its CPU share from which a capped server counts as CPU-bound: its requests/s
/// per core of the share is then what a core gives it.
pub const SHARE_USED_FULLY: f64 = 0.8;

/// A container's resource use over one load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// CPU seconds (user + system) the container used.
    pub cpu_s: f64,
    /// Highest memory use seen, bytes.
    pub peak_memory_bytes: u64,
    /// The most TCP sockets it held at any reading (about one a second): its connections, open
    /// or closing, and its listening sockets; when its network namespace was in sight (a
    /// container of this machine's engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_connections: Option<u64>,
}

/// `t` as RFC 3339 in UTC with whole seconds ("2024-05-01T12:00:00Z"); times before 1970 are
/// clamped to the epoch, which no run can have started before.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    time::OffsetDateTime::from_unix_timestamp(secs as i64)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// The current time as [`rfc3339`].
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}
