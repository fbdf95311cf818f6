//! The facts of the machine a run measured on (the report crate reads them from /proc).

use serde::{Deserialize, Serialize};

/// The machine the run was measured on: numbers from different hosts are not comparable, and
/// these facts are what a reader checks first when two runs disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFacts {
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cores: u32,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// The Docker Engine's version, when one was asked.
    pub docker_version: Option<String>,
    /// What biases measurements on this machine (`benchctl system check`), as found when the
    /// run started; absent from records made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<crate::system::SystemCheck>,
}
