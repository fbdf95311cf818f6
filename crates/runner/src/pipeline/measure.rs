//! One load measured: the CPU share applied, room in connection tracking, the load sent (here,
//! from `[load] generators`, or by a baseline binary) and the server's CPU and memory read.

use super::ctx::{Ctx, Live};
use super::turn::Measured;
use crate::error::RunError;
use crate::events::Event;
use crate::fleet::{Container, Engine};
use crate::headroom::Reading;
use crate::source::{LoadSource, Sending};
use loadgen::json::LoadReport;
use loadgen::LoadSpec;
use orchestrator::OrchestratorError;
use report::Usage;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The longest a load waits for room in the kernel's connection tracking table: its entries
/// of closed connections expire after 120 s.
pub(super) const CONNTRACK_WAIT: Duration = Duration::from_secs(130);

/// A server's resource use over a load, when Docker reported any.
pub(super) fn usage_of(u: orchestrator::ContainerUsage) -> Option<Usage> {
    (u.samples > 0).then_some(Usage {
        cpu_s: u.cpu_seconds,
        peak_memory_bytes: u.peak_memory_bytes,
        peak_connections: u.peak_connections,
    })
}

impl<E: Engine> Ctx<'_, E> {
    /// Gives `l`'s container the CPU share `share` (`None`: its whole cpuset) unless it has it.
    pub(super) async fn apply_share(
        &self,
        l: &Live<E>,
        share: Option<f64>,
        applied: &mut HashMap<(bool, usize), Option<f64>>,
    ) -> Result<(), OrchestratorError> {
        let key = (l.baseline, l.index);
        let current = applied
            .get(&key)
            .copied()
            .unwrap_or(self.plan.cpus.server_share);
        if share != current {
            self.orch(l.index).set_cpu_share(&l.guard, share).await?;
            applied.insert(key, share);
        }
        Ok(())
    }

    /// What a load says about the generator's headroom: its own CPU time (the kernel's
    /// interrupt work for its sockets outside its own time is not counted: on a shared machine
    /// it cannot be told apart from other tenants').
    pub(super) fn reading(
        &self,
        load: &LoadReport,
        usage: Option<&Usage>,
        share: Option<f64>,
    ) -> Reading {
        let secs = load.elapsed_s.max(1e-9);
        Reading {
            generator: load.client_cpu_s / secs / load.settings.threads.max(1) as f64,
            lagging: report::record::fell_behind(load),
            server_cores: usage.map(|u| u.cpu_s / secs),
            share,
            cpuset_cores: self.plan.cpus.servers.len() as f64,
        }
    }

    /// Waits, at most [`CONNTRACK_WAIT`], until the kernel's connection tracking table has room
    /// for the connections a load here opens: a load started into a full table has its new
    /// connections dropped by the kernel, and would blame the server for the timeouts. Back to
    /// back loads of a connection per request fill it (each entry outlives its connection by
    /// two minutes), and fresh entries expire at the rate they were made.
    pub(super) async fn conntrack_room(&self, load: &LoadSpec) {
        let Some(t) = loadgen::limits::Conntrack::read() else {
            return;
        };
        // A load bounded by time alone opens an unknown number: room for a twentieth of the
        // table is asked, as for a burst.
        let opened = if load.keep_alive || load.version == loadgen::HttpVersion::Http2 {
            u64::from(load.concurrency)
        } else {
            load.requests.unwrap_or(t.max / 20)
        };
        let need = opened.min(t.max / 2);
        if t.has_room_for(need) {
            return;
        }
        self.observer.event(&Event::ConntrackWait {
            count: t.count,
            max: t.max,
            need,
        });
        let deadline = Instant::now() + CONNTRACK_WAIT;
        while Instant::now() < deadline {
            tokio::select! {
                _ = self.opts.cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            if loadgen::limits::Conntrack::read().is_none_or(|t| t.has_room_for(need)) {
                return;
            }
        }
    }

    /// Who sends `l`'s loads: an A/B run's baseline binary for the baseline side, else the
    /// scenario's generators, else this process.
    fn source(&self, l: &Live<E>) -> LoadSource<'_> {
        let baseline = self.against.and_then(|against| against.generator.as_ref());
        match (baseline.filter(|_| l.baseline), self.generators.get()) {
            (Some(g), _) => LoadSource::Baseline(g),
            (None, Some(gens)) => LoadSource::Generators(gens),
            (None, None) => LoadSource::Local,
        }
    }

    /// One load against one document, with the server's resource use when `usage`; `None`
    /// when the run was stopped during it.
    pub(super) async fn measure(
        &self,
        l: &Live<E>,
        load: &LoadSpec,
        url_path: &str,
        usage: bool,
    ) -> Result<Option<Measured>, RunError> {
        self.measure_over(l, load, url_path, usage, None).await
    }

    /// [`Self::measure`], its timeline in intervals of `interval` (`None`: the generator's
    /// default).
    pub(super) async fn measure_over(
        &self,
        l: &Live<E>,
        load: &LoadSpec,
        url_path: &str,
        usage: bool,
        interval: Option<std::time::Duration>,
    ) -> Result<Option<Measured>, RunError> {
        let guard = &l.guard;
        let url = format!(
            "{}://{}{}",
            self.scheme.name(),
            guard.socket_addr(),
            url_path
        );
        if self.generators.get().is_none() {
            self.conntrack_room(load).await;
        }
        // The server's CPU counts from where the load's measured part begins: after its
        // warm-up, which the load's requests leave out as well. The sampler starts before the
        // first request, so that the engine's answer to where the container is never delays a
        // reading the load needs, and starts over when the warm-up ends.
        let sampler = if usage {
            self.orch(l.index).sample(guard).await.ok()
        } else {
            None
        };
        let restart = async {
            if let Some(s) = sampler.as_ref().filter(|_| !load.warmup.is_zero()) {
                tokio::time::sleep(load.warmup).await;
                E::restart(s).await;
            }
        };
        let with = Sending {
            cpus: &self.plan.cpus.loadgen,
            run_id: self.run_id,
            cancel: &self.opts.cancel,
            observer: self.observer_arc,
            interval,
        };
        let measured = self.source(l).send(&url, load, &with);
        let ((), measured) = tokio::join!(restart, measured);
        let measured = measured?;
        let usage = match sampler {
            Some(s) => usage_of(E::finish(s).await),
            None => None,
        };
        Ok(measured.map(|(load, generators)| Measured {
            load,
            usage,
            generators,
            client_bound: false,
        }))
    }
}
