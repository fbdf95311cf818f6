//! The Docker side of benchctl: build each server's image from its folder, start it on the host
//! network, wait until it answers, check it serves the expected bytes, sample its CPU and memory
//! while the load runs, and make sure no container outlives the run.
//!
//! It knows nothing of scenarios or load generation: the run pipeline (the runner crate) maps a
//! scenario's plan onto [`Orchestrator`]'s calls. Everything goes through the Engine API (bollard) with the API version
//! negotiated down to the daemon's, because the daemons benchctl runs on (20.10, API 1.41) refuse
//! newer request paths.
//!
//! Containers are owned by [`ContainerGuard`]s that force-remove them when dropped, carry the
//! labels `benchctl=1`, `benchctl.run=<run id>` and their owner's identity
//! ([`owner::Owner`]), and can be swept by run ([`Orchestrator::remove_run`], or
//! [`remove_run_blocking`] from any thread), once their owner is gone
//! ([`Orchestrator::gc_stale`]) or all at once ([`Orchestrator::gc_all`]). Every server
//! container runs confined ([`Confinement`]): no capabilities, no new privileges, a read-only
//! root, bounded processes and logs.

mod audit;
mod bootstrap;
mod cgroup;
mod container;
mod engine;
mod error;
mod image;
mod logtail;
pub mod owner;
mod probe;
pub mod ssh;
mod stats;

use bollard::Docker;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

pub use audit::{parse_net_table, parse_process_table, root_among, Listener, ProcessIds};
pub use container::{
    remove_run_blocking, remove_run_blocking_on, Confinement, ContainerGuard, ContainerSpec, Tmpfs,
    DEFAULT_PIDS_LIMIT, DOCROOT, TLS_MOUNT,
};
pub use engine::{parse_rfc3339, Endpoint, EngineFacts, CONNECT_BOUND};
pub use error::{OrchestratorError, Result};
pub use image::{
    context_hash, context_tag, dockerfile_bases, BuildSource, BuiltImage, ShippedImage,
    LABEL_SOURCE, SOURCE_IN_CONTEXT,
};
pub use owner::Owner;
pub use probe::{verify_served, ExpectedDoc, Scheme, Verified};
pub use ssh::SshTarget;
pub use stats::{ContainerUsage, StatsSampler};

/// Label every benchctl container carries; `gc` removes whatever has it.
pub const LABEL_OWNER: &str = "benchctl";
/// Label naming the run a container belongs to.
pub const LABEL_RUN: &str = "benchctl.run";
/// Label naming the server a container (or image) is for.
pub const LABEL_SERVER: &str = "benchctl.server";
/// Label holding the pid of the benchctl process that started a container, so a later run can
/// tell a leftover (owner gone) from a container of a run still going.
pub const LABEL_PID: &str = "benchctl.pid";
/// Label holding that process's start time (clock ticks since boot), so that a reused pid is
/// not taken for the owner.
pub const LABEL_PID_START: &str = "benchctl.pid-start";
/// Label naming the machine (its `/etc/machine-id`) of the process in [`LABEL_PID`]: on an
/// engine of another machine, a pid says nothing about whether its owner lives, so only the
/// machine that started a container judges it stale.
pub const LABEL_MACHINE: &str = "benchctl.machine";

/// A negotiated connection to the Docker daemon plus the few settings that shape builds.
#[derive(Clone)]
pub struct Orchestrator {
    docker: Docker,
    /// Which engine `docker` talks to.
    endpoint: Endpoint,
    /// How long a single image build may take before it is abandoned (the daemon cancels a
    /// build whose client goes away).
    build_timeout: Duration,
    /// How long a pull attempt for a missing base image may take; registries are unreachable on
    /// the machines benchctl targets, so this must fail fast.
    pull_timeout: Duration,
    /// How long mmdebstrap may run when a base image is made locally.
    bootstrap_timeout: Duration,
    /// Makes container names unique within this process even for the same server twice in a run.
    sequence: Arc<AtomicU64>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("endpoint", &self.endpoint)
            .field("api_version", &self.docker.client_version().to_string())
            .field("build_timeout", &self.build_timeout)
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// Connects to the daemon (`DOCKER_HOST` or the local socket) and negotiates the API version.
    pub async fn connect() -> Result<Orchestrator> {
        Orchestrator::connect_to(&Endpoint::Local).await
    }

    /// Connects to the engine at `endpoint` and negotiates the API version, failing within
    /// [`CONNECT_BOUND`] when it does not answer.
    pub async fn connect_to(endpoint: &Endpoint) -> Result<Orchestrator> {
        let docker = endpoint.connect().await?;
        Ok(Orchestrator {
            docker,
            endpoint: endpoint.clone(),
            build_timeout: Duration::from_secs(30 * 60),
            pull_timeout: Duration::from_secs(15),
            bootstrap_timeout: Duration::from_secs(15 * 60),
            sequence: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The engine this orchestrator talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Overrides the limit on one base-image pull attempt (default 15 s).
    pub fn with_pull_timeout(mut self, timeout: Duration) -> Self {
        self.pull_timeout = timeout;
        self
    }

    /// The daemon's version string (e.g. `20.10.24+dfsg1`), for the run's host facts.
    pub async fn docker_version(&self) -> Result<String> {
        let v = self
            .docker
            .version()
            .await
            .map_err(|e| OrchestratorError::docker("version", e))?;
        Ok(v.version.unwrap_or_else(|| "unknown".to_string()))
    }

    /// The Engine API version in use after negotiation (e.g. `1.41`).
    pub fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    /// The underlying bollard client, for calls this crate does not wrap.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The same connection for a request that moves an image, a build context or documents,
    /// or that answers only once a build has begun: it may wait far longer for the engine's
    /// answer than a control request ([`engine::PATIENT_TIMEOUT`]).
    pub(crate) fn patient(&self) -> Docker {
        self.docker.clone().with_timeout(engine::PATIENT_TIMEOUT)
    }
}

pub(crate) fn classify_connect_error(err: bollard::errors::Error) -> OrchestratorError {
    match err {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 400,
            message,
        } => OrchestratorError::ApiVersion { message },
        bollard::errors::Error::APIVersionParseError {} => OrchestratorError::ApiVersion {
            message: "the daemon reported no usable API version".to_string(),
        },
        other => OrchestratorError::Unreachable { source: other },
    }
}
