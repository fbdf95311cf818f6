//! Where the check reads a machine from ([`Probe`]: this machine is [`Host`]), and the CPUs
//! it looks at.

use std::process::{Command, Stdio};

/// Where the check reads a machine from.
pub trait Probe {
    /// The text of a file of /proc or /sys (an absolute path); `None` when it cannot be read.
    fn read(&self, path: &str) -> Option<String>;
    /// The names in a folder of /proc or /sys; empty when it cannot be read.
    fn list(&self, dir: &str) -> Vec<String>;
    /// The raw table's rules as `iptables-save -t raw` (`ip6tables-save` for `v6`) prints
    /// them; `None` when they cannot be read (no iptables, not root).
    fn raw_rules(&self, v6: bool) -> Option<String>;
}

/// This machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Host;

impl Probe for Host {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        std::fs::read_dir(dir).map_or_else(
            |_| Vec::new(),
            |d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            },
        )
    }

    fn raw_rules(&self, v6: bool) -> Option<String> {
        let tool = if v6 {
            "ip6tables-save"
        } else {
            "iptables-save"
        };
        let out = Command::new(tool)
            .args(["-t", "raw"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The CPUs a run uses: the load generator's and the servers'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cpus {
    pub client: Vec<usize>,
    pub server: Vec<usize>,
}

impl Cpus {
    /// Every chosen CPU, once, in order.
    pub fn all(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.client.iter().chain(&self.server).copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
