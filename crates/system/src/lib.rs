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
mod probe;
pub mod tune;

pub use busy::{busy_processes, sample_processes, Busy, ProcSample};
pub use check::check;
pub use model::system::{Aspect, Finding, Level, SystemCheck};
pub use probe::{Cpus, Host, Probe};

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

#[cfg(test)]
pub(crate) mod fake {
    //! A machine made of a map of file texts, for the tests.

    use crate::probe::Probe;
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
