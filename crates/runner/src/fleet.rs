//! The machines a run's servers live on, as the run needs them: an [`Engine`] per machine that
//! makes images and runs containers, and a [`Fleet`] that connects to this machine's engine and
//! to each `[[host]]`'s. The Docker Engine API ([`orchestrator::Orchestrator`]) is the engine a
//! real run uses ([`Docker`]); the run's course (which servers start, when a load is measured
//! again, when an A/B run stops, what a death or a lost host does) does not depend on it, and
//! is tested against an engine made in memory whose "containers" are small HTTP servers of
//! this process (`fake`, in the tests).
//!
//! The errors are the orchestrator's: what a failure says (a server that exited, its last log
//! lines, an engine that stopped answering) is what the run explains and records.

use orchestrator::{
    BuildSource, BuiltImage, ContainerGuard, ContainerSpec, ContainerUsage, Endpoint, EngineFacts,
    ExpectedDoc, Orchestrator, OrchestratorError, Scheme, ShippedImage, Socket, Verified,
};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, OrchestratorError>;

/// A running server container; dropping it removes the container.
pub trait Container: Send + Sync + 'static {
    /// Where it is reached: its address and port.
    fn socket_addr(&self) -> SocketAddr;
    /// When its creation was asked for: readiness counts from here.
    fn started_at(&self) -> Instant;
    /// Removes it and waits until its engine says it is gone.
    fn remove(self) -> impl Future<Output = Result<()>> + Send;
    /// Forgets it without removing it: it stays labelled for `benchctl gc`.
    fn leak(self);
}

/// One machine's engine: images, containers, and what it says of itself.
pub trait Engine: Send + Sync + Sized + 'static {
    type Container: Container;
    /// What samples a container's CPU and memory over a load.
    type Sampler: Send;

    /// Where the last-moment sweep of a run reaches this engine from another thread; `None`
    /// for an engine that has none (its containers go with this process).
    fn endpoint(&self) -> Option<Endpoint>;
    /// The engine's own version line.
    fn version(&self) -> impl Future<Output = Result<String>> + Send;
    /// What the engine says of its machine (CPUs, memory, kernel, clock).
    fn facts(&self) -> impl Future<Output = Result<EngineFacts>> + Send;
    /// The Docker engine itself, for the work only Docker does (`[load] generators` run as its
    /// containers); `None` for an engine that is not one.
    fn docker(&self) -> Option<&Orchestrator>;

    /// Removes what dead runs of this machine left; how many containers.
    fn gc_stale(&self) -> impl Future<Output = Result<usize>> + Send;
    /// Removes every container of run `run_id` and waits until none is listed.
    fn remove_run(&self, run_id: &str) -> impl Future<Output = Result<usize>> + Send;

    /// Builds (or finds up to date) server `kind`'s image from `context`, its log at `log`.
    fn build_image(
        &self,
        kind: &str,
        context: &Path,
        source: Option<&BuildSource>,
        log: &Path,
    ) -> impl Future<Output = Result<BuiltImage>> + Send;
    /// Sends image `tag` to engine `to` unless it has it already.
    fn ship_image(&self, to: &Self, tag: &str)
        -> impl Future<Output = Result<ShippedImage>> + Send;
    /// The id of `image` when the engine has it.
    fn image_id(&self, image: &str) -> impl Future<Output = Result<Option<String>>> + Send;
    /// Makes `image` present (pulled or bootstrapped).
    fn ensure_image(&self, image: &str) -> impl Future<Output = Result<()>> + Send;
    /// The user `image` runs as (its `USER`, empty when it names none).
    fn image_user(&self, image: &str) -> impl Future<Output = Result<String>> + Send;

    /// Creates and starts a container of `spec`.
    fn start(&self, spec: &ContainerSpec) -> impl Future<Output = Result<Self::Container>> + Send;
    /// Waits until `c` answers `path` on `port` over `scheme`; how long that took.
    fn wait_ready(
        &self,
        c: &Self::Container,
        scheme: &Scheme,
        port: u16,
        path: &str,
        deadline: Duration,
    ) -> impl Future<Output = Result<Duration>> + Send;
    /// Whether `c` runs as declared: no process as root, nothing listening beyond `allowed`.
    fn audit(
        &self,
        c: &Self::Container,
        allowed: &[Socket],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Fetches every document from `addr` over `scheme` and checks its bytes.
    fn verify(
        &self,
        scheme: &Scheme,
        addr: SocketAddr,
        docs: &[ExpectedDoc],
    ) -> impl Future<Output = Result<Verified>> + Send;
    /// An error when `c` has stopped (with its last log lines), or when the engine cannot say.
    fn fail_if_exited(&self, c: &Self::Container) -> impl Future<Output = Result<()>> + Send;
    /// Limits `c` to `share` CPUs (`None`: its whole cpuset).
    fn set_cpu_share(
        &self,
        c: &Self::Container,
        share: Option<f64>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Starts sampling `c`'s CPU and memory.
    fn sample(&self, c: &Self::Container) -> impl Future<Output = Result<Self::Sampler>> + Send;
    /// Starts a sampler's figures over from now (a load's warm-up has ended).
    fn restart(sampler: &Self::Sampler) -> impl Future<Output = ()> + Send;
    /// What a sampler saw, from its start (or last restart) until now.
    fn finish(sampler: Self::Sampler) -> impl Future<Output = ContainerUsage> + Send;
}

/// How a run reaches its engines.
pub trait Fleet: Send + Sync {
    type Engine: Engine;
    /// This machine's engine.
    fn here(&self) -> impl Future<Output = Result<Self::Engine>> + Send;
    /// The engine of a `[[host]]`.
    fn host(&self, host: &scenario::HostSpec) -> impl Future<Output = Result<Self::Engine>> + Send;
}

/// The Docker engines of this machine and of each `[[host]]`: what a real run uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Docker;

impl Fleet for Docker {
    type Engine = Orchestrator;

    async fn here(&self) -> Result<Orchestrator> {
        Orchestrator::connect().await
    }

    async fn host(&self, host: &scenario::HostSpec) -> Result<Orchestrator> {
        Orchestrator::connect_to(&crate::hosts::endpoint(host)).await
    }
}

impl Container for ContainerGuard {
    fn socket_addr(&self) -> SocketAddr {
        ContainerGuard::socket_addr(self)
    }

    fn started_at(&self) -> Instant {
        ContainerGuard::started_at(self)
    }

    async fn remove(self) -> Result<()> {
        ContainerGuard::remove(self).await
    }

    fn leak(self) {
        ContainerGuard::leak(self);
    }
}

impl Engine for Orchestrator {
    type Container = ContainerGuard;
    type Sampler = orchestrator::StatsSampler;

    fn endpoint(&self) -> Option<Endpoint> {
        Some(Orchestrator::endpoint(self).clone())
    }

    async fn version(&self) -> Result<String> {
        self.docker_version().await
    }

    async fn facts(&self) -> Result<EngineFacts> {
        Orchestrator::facts(self).await
    }

    fn docker(&self) -> Option<&Orchestrator> {
        Some(self)
    }

    async fn gc_stale(&self) -> Result<usize> {
        Orchestrator::gc_stale(self).await
    }

    async fn remove_run(&self, run_id: &str) -> Result<usize> {
        Orchestrator::remove_run(self, run_id).await
    }

    async fn build_image(
        &self,
        kind: &str,
        context: &Path,
        source: Option<&BuildSource>,
        log: &Path,
    ) -> Result<BuiltImage> {
        self.build_image_from(kind, context, source, log).await
    }

    async fn ship_image(&self, to: &Self, tag: &str) -> Result<ShippedImage> {
        Orchestrator::ship_image(self, to, tag).await
    }

    async fn image_id(&self, image: &str) -> Result<Option<String>> {
        Orchestrator::image_id(self, image).await
    }

    async fn ensure_image(&self, image: &str) -> Result<()> {
        self.ensure_base_image(image).await.map(|_| ())
    }

    async fn image_user(&self, image: &str) -> Result<String> {
        Orchestrator::image_user(self, image).await
    }

    async fn start(&self, spec: &ContainerSpec) -> Result<ContainerGuard> {
        Orchestrator::start(self, spec).await
    }

    async fn wait_ready(
        &self,
        c: &ContainerGuard,
        scheme: &Scheme,
        port: u16,
        path: &str,
        deadline: Duration,
    ) -> Result<Duration> {
        self.wait_ready_over(c, scheme, port, path, deadline).await
    }

    async fn audit(&self, c: &ContainerGuard, allowed: &[Socket]) -> Result<()> {
        Orchestrator::audit(self, c, allowed).await
    }

    async fn verify(
        &self,
        scheme: &Scheme,
        addr: SocketAddr,
        docs: &[ExpectedDoc],
    ) -> Result<Verified> {
        self.verify_over(scheme, addr, docs).await
    }

    async fn fail_if_exited(&self, c: &ContainerGuard) -> Result<()> {
        Orchestrator::fail_if_exited(self, c).await
    }

    async fn set_cpu_share(&self, c: &ContainerGuard, share: Option<f64>) -> Result<()> {
        Orchestrator::set_cpu_share(self, c, share).await
    }

    async fn sample(&self, c: &ContainerGuard) -> Result<orchestrator::StatsSampler> {
        self.sample_stats(c).await
    }

    async fn restart(sampler: &orchestrator::StatsSampler) {
        sampler.restart().await;
    }

    async fn finish(sampler: orchestrator::StatsSampler) -> ContainerUsage {
        sampler.finish().await
    }
}

#[cfg(test)]
pub(crate) mod fake;
