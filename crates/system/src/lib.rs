//! What a machine does to the figures measured on it, the way pyperf's `system` command does
//! for Python benchmarks: [`check`] looks at what biases a load on loopback (connection
//! tracking, the local port range, TIME_WAIT reuse, the CPU frequency governor and boost, the
//! chosen CPUs' hyper-thread siblings, transparent huge pages, swap, other processes on the
//! chosen CPUs) and says so as [`SystemCheck`] findings that a run keeps in its record;
//! [`tune::plan`] and [`tune::apply`] change what can be changed, and keep the exact undo.
//!
//! Everything is read through a [`Probe`], so the judgement is tested on made-up machines and
//! only [`Host`] touches /proc, /sys and iptables.

mod busy;
mod check;
pub mod tune;

pub use busy::{busy_processes, sample_processes, Busy, ProcSample};
pub use check::check;
pub use model::system::{Aspect, Finding, Level, SystemCheck};

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

/// This machine checked for a run on `cpus`, the processes on them sampled over `sample`
/// (blocks that long).
pub fn check_host(cpus: &Cpus, sample: std::time::Duration) -> SystemCheck {
    let before = sample_processes(&Host);
    let started = std::time::Instant::now();
    std::thread::sleep(sample);
    let after = sample_processes(&Host);
    let ticks = rustix::param::clock_ticks_per_second();
    let busy = busy_processes(
        &before,
        &after,
        started.elapsed(),
        ticks,
        &cpus.all(),
        std::process::id(),
    );
    check(&Host, cpus, &busy)
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

/// A CPU list as the kernel writes it ("0-3,8,10-11"); `None` when it is not one.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
pub(crate) mod fake {
    //! A machine made of a map of file texts, for the tests.

    use super::Probe;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, Default)]
    pub struct Machine {
        pub files: BTreeMap<String, String>,
        pub raw: Option<String>,
    }

    impl Machine {
        pub fn with(mut self, path: &str, text: &str) -> Machine {
            self.files.insert(path.to_string(), text.to_string());
            self
        }
    }

    impl Probe for Machine {
        fn read(&self, path: &str) -> Option<String> {
            self.files.get(path).cloned()
        }

        fn list(&self, dir: &str) -> Vec<String> {
            let prefix = format!("{}/", dir.trim_end_matches('/'));
            let mut names: Vec<String> = self
                .files
                .keys()
                .filter_map(|k| k.strip_prefix(&prefix))
                .filter_map(|rest| rest.split('/').next())
                .map(str::to_string)
                .collect();
            names.dedup();
            names
        }

        fn raw_rules(&self, _v6: bool) -> Option<String> {
            self.raw.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_as_the_kernel_writes_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }
}
