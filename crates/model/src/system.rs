//! What a machine does to the figures measured on it: the findings of `benchctl system check`,
//! which a run keeps in its record beside the host's facts.

use serde::{Deserialize, Serialize};

/// The findings of one check of a machine, one per thing looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemCheck {
    pub findings: Vec<Finding>,
}

impl SystemCheck {
    /// The findings that bias measurements here.
    pub fn biases(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.level == Level::Bias)
    }
}

/// What was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    /// netfilter's connection tracking: whether loopback traffic goes through it, and its
    /// table's size.
    Conntrack,
    /// The local port range new connections take their ports from.
    PortRange,
    /// Whether a new connection may reuse a port still in TIME_WAIT.
    TimeWaitReuse,
    /// The CPU frequency governor of the chosen CPUs.
    Governor,
    /// Turbo/boost clocks.
    Boost,
    /// A load generator CPU and a server CPU that are hyper-threads of one core.
    SmtSiblings,
    /// Transparent huge pages.
    HugePages,
    /// Swap in use.
    Swap,
    /// Other processes running on the chosen CPUs.
    BusyCpus,
    /// Address-space layout randomization: each process's memory placed anew at every start.
    AddressLayout,
}

impl Aspect {
    /// Its name as the CLI and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Aspect::Conntrack => "connection tracking",
            Aspect::PortRange => "local port range",
            Aspect::TimeWaitReuse => "TIME_WAIT reuse",
            Aspect::Governor => "CPU frequency governor",
            Aspect::Boost => "CPU boost",
            Aspect::SmtSiblings => "SMT siblings",
            Aspect::HugePages => "transparent huge pages",
            Aspect::Swap => "swap",
            Aspect::BusyCpus => "busy CPUs",
            Aspect::AddressLayout => "address-space layout",
        }
    }
}

/// How much a finding matters to a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// As a benchmark wants it.
    Ok,
    /// Worth knowing when reading figures, but no bias of its own.
    Info,
    /// Biases measurements: a run warns of it.
    Bias,
}

/// One thing looked at, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub aspect: Aspect,
    pub level: Level,
    /// What was found, as facts ("nf_conntrack_max 262144, 1203 in use; loopback tracked").
    pub found: String,
    /// What it does to a measurement (empty when nothing).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
    /// `benchctl system tune` changes it.
    #[serde(default)]
    pub tunable: bool,
}
