//! CPU and memory a server used while the load ran, so reports can show CPU-seconds per 10k
//! requests and peak memory next to requests per second.
//!
//! When the container's cgroup is on this machine ([`crate::cgroup`]), CPU is the difference of
//! the kernel's counter read when the sampler starts and when it finishes: exact, and read at
//! once. Otherwise (an engine on another machine) it comes from the API: Docker's stats stream
//! sends one sample about every second, so a short run would lose up to a second of CPU time at
//! each end if only streamed samples counted, and the sampler takes a one-shot reading when it
//! starts and another when it finishes (each waits for the collector's next tick, up to a
//! second). CPU is then the difference of `cpu_stats.cpu_usage.total_usage` (nanoseconds)
//! between the first and last reading. Either way the streamed samples in between catch the
//! memory peak; memory is the usage minus the page cache (`cache` on cgroup v1, `inactive_file`
//! on v2), as `docker stats` shows it: a server that sendfile()s a 100 MB document would
//! otherwise be charged for the file's cached pages. For a container on this machine, each
//! reading also counts the TCP sockets it holds ([`crate::sockets`]), and the most any reading
//! saw is kept.

use crate::cgroup::Cgroup;
use crate::client::Orchestrator;
use crate::container::ContainerGuard;
use crate::error::{OrchestratorError, Result};
use crate::sockets::Sockets;
use bollard::models::ContainerStatsResponse;
use bollard::query_parameters::StatsOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use std::sync::{Arc, Mutex};

/// What a container used between [`Orchestrator::sample_stats`] (or the last
/// [`StatsSampler::restart`]) and [`StatsSampler::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContainerUsage {
    /// CPU time of all the container's processes, in seconds (user + system).
    pub cpu_seconds: f64,
    /// Largest memory use seen, in bytes, page cache excluded.
    pub peak_memory_bytes: u64,
    /// The most TCP sockets the container held at any reading, about one a second: its
    /// connections, open or closing, and its listening sockets (not those in TIME_WAIT);
    /// `None` for a container whose network namespace is out of sight (another machine's).
    pub peak_connections: Option<u64>,
    /// How many readings the figures come from.
    pub samples: u32,
    /// CPU came from the container's cgroup on this machine, not from the API's samples.
    pub from_cgroup: bool,
}

#[derive(Debug, Default)]
struct Accumulated {
    first_cpu_ns: Option<u64>,
    last_cpu_ns: Option<u64>,
    peak_memory: u64,
    peak_connections: Option<u64>,
    samples: u32,
}

impl Accumulated {
    fn add(&mut self, s: &ContainerStatsResponse, with_cpu: bool) {
        let cpu = s
            .cpu_stats
            .as_ref()
            .and_then(|c| c.cpu_usage.as_ref())
            .and_then(|u| u.total_usage);
        let memory = s.memory_stats.as_ref().and_then(|m| {
            let usage = m.usage?;
            let cache = m
                .stats
                .as_ref()
                .and_then(|st| st.get("cache").or_else(|| st.get("inactive_file")).copied())
                .unwrap_or(0);
            Some(usage.saturating_sub(cache))
        });
        // A stopped container reports zeros; they are not a reading.
        let Some(cpu) = cpu.filter(|c| *c > 0) else {
            return;
        };
        if with_cpu {
            self.add_cpu(cpu);
        }
        self.add_memory(memory);
        self.samples += 1;
    }

    fn add_cpu(&mut self, ns: u64) {
        self.first_cpu_ns.get_or_insert(ns);
        self.last_cpu_ns = Some(ns);
    }

    fn add_memory(&mut self, bytes: Option<u64>) {
        if let Some(m) = bytes {
            self.peak_memory = self.peak_memory.max(m);
        }
    }

    fn add_connections(&mut self, sockets: Option<&Sockets>) {
        if let Some(n) = sockets.and_then(Sockets::open) {
            self.peak_connections = Some(self.peak_connections.map_or(n, |p| p.max(n)));
        }
    }

    /// A reading of the container's cgroup here; false when it has none left (it stopped).
    fn add_cgroup(&mut self, cg: &Cgroup) -> bool {
        let Some(ns) = cg.cpu_ns() else {
            return false;
        };
        self.add_cpu(ns);
        self.add_memory(cg.memory_bytes());
        self.samples += 1;
        true
    }

    fn usage(&self) -> ContainerUsage {
        let cpu_ns = match (self.first_cpu_ns, self.last_cpu_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        };
        ContainerUsage {
            cpu_seconds: cpu_ns as f64 / 1e9,
            peak_memory_bytes: self.peak_memory,
            peak_connections: self.peak_connections,
            samples: self.samples,
            from_cgroup: false,
        }
    }
}

/// Collects a container's stats in a background task until [`finish`](Self::finish).
#[derive(Debug)]
pub struct StatsSampler {
    docker: Docker,
    id: String,
    acc: Arc<Mutex<Accumulated>>,
    task: tokio::task::JoinHandle<()>,
    /// The container's cgroup here, when found: CPU comes from it.
    cgroup: Option<Cgroup>,
    /// The container's socket tables here, when found.
    sockets: Option<Sockets>,
}

async fn one_shot(docker: &Docker, id: &str) -> Option<ContainerStatsResponse> {
    let options = StatsOptionsBuilder::default()
        .stream(false)
        .one_shot(true)
        .build();
    docker.stats(id, Some(options)).next().await?.ok()
}

impl Orchestrator {
    /// Takes a first reading now and keeps sampling in the background.
    pub async fn sample_stats(&self, guard: &ContainerGuard) -> Result<StatsSampler> {
        let acc = Arc::new(Mutex::new(Accumulated::default()));
        let gone = || {
            OrchestratorError::Invalid(format!(
                "no stats for container {}: is it still running?",
                guard.name()
            ))
        };
        let (cgroup, sockets) = self.local_view(guard).await;
        let docker = self.docker.clone();
        let id = guard.id().to_string();
        let task_acc = Arc::clone(&acc);
        let with_cpu = cgroup.is_none();
        let task_sockets = sockets.clone();
        let task = tokio::spawn(async move {
            let options = StatsOptionsBuilder::default().stream(true).build();
            let mut stream = docker.stats(&id, Some(options));
            // The stream ends when the container stops; errors end it as well (nothing to retry).
            while let Some(Ok(sample)) = stream.next().await {
                let mut acc = task_acc.lock().expect("stats lock");
                acc.add(&sample, with_cpu);
                acc.add_connections(task_sockets.as_ref());
            }
        });
        let sampler = StatsSampler {
            docker: self.docker.clone(),
            id: guard.id().to_string(),
            acc,
            task,
            cgroup,
            sockets,
        };
        if !sampler.first_reading().await {
            return Err(gone());
        }
        Ok(sampler)
    }

    /// The container's cgroup and socket tables on this machine, found through its main
    /// process; `None` for a container of another machine's engine or one whose cgroup or
    /// tables are out of sight.
    async fn local_view(&self, guard: &ContainerGuard) -> (Option<Cgroup>, Option<Sockets>) {
        let Ok(info) = self.inspect(guard).await else {
            return (None, None);
        };
        let Some(pid) = info
            .state
            .and_then(|s| s.pid)
            .and_then(|p| u32::try_from(p).ok())
        else {
            return (None, None);
        };
        let cgroup = info.id.and_then(|id| Cgroup::of(pid, &id));
        // Only where the cgroup is found is the process this machine's: a pid from another
        // machine's engine would name some process here.
        let sockets = cgroup.as_ref().and_then(|_| Sockets::of(pid));
        (cgroup, sockets)
    }
}

impl StatsSampler {
    /// Starts the figures over from a reading taken now, as if the sampler had started here:
    /// the CPU counts from now, and the peaks of memory and connections seen so far are
    /// forgotten. A load with a warm-up starts its sampler before its first request (so that
    /// finding the container costs the load nothing) and starts it over as the warm-up ends.
    pub async fn restart(&self) {
        self.first_reading().await;
    }

    /// Forgets what was seen and takes a first reading now: false when the container has none
    /// to give (it stopped).
    async fn first_reading(&self) -> bool {
        let remote = match self.cgroup {
            Some(_) => None,
            None => Some(one_shot(&self.docker, &self.id).await),
        };
        let mut acc = self.acc.lock().expect("stats lock");
        *acc = Accumulated::default();
        acc.add_connections(self.sockets.as_ref());
        match (&self.cgroup, remote) {
            (Some(cg), _) => acc.add_cgroup(cg),
            (None, Some(Some(first))) => {
                acc.add(&first, true);
                true
            }
            (None, _) => false,
        }
    }

    /// Stops sampling, takes a last reading (if the container still runs) and sums up.
    pub async fn finish(mut self) -> ContainerUsage {
        self.task.abort();
        let _ = (&mut self.task).await;
        self.acc
            .lock()
            .expect("stats lock")
            .add_connections(self.sockets.as_ref());
        if let Some(cg) = &self.cgroup {
            let mut acc = self.acc.lock().expect("stats lock");
            // A container that stopped has no cgroup left: its CPU is then unknown, and the
            // usage carries no reading.
            let read = acc.add_cgroup(cg);
            let mut usage = acc.usage();
            usage.from_cgroup = true;
            if !read {
                usage.cpu_seconds = 0.0;
                usage.samples = 0;
            }
            return usage;
        }
        let last = one_shot(&self.docker, &self.id).await;
        let mut acc = self.acc.lock().expect("stats lock");
        if let Some(last) = last {
            acc.add(&last, true);
        }
        acc.usage()
    }
}

impl Drop for StatsSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}
