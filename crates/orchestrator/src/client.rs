//! The client of one Docker engine: what every part of this crate calls through.

use crate::engine::{self, parse_rfc3339, unix_seconds, Endpoint, EngineFacts};
use crate::error::{OrchestratorError, Result};
use bollard::Docker;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A negotiated connection to the Docker daemon plus the few settings that shape builds.
#[derive(Clone)]
pub struct Orchestrator {
    pub(crate) docker: Docker,
    /// Which engine `docker` talks to.
    pub(crate) endpoint: Endpoint,
    /// How long a single image build may take before it is abandoned (the daemon cancels a
    /// build whose client goes away).
    pub(crate) build_timeout: Duration,
    /// How long a pull attempt for a missing base image may take; registries are unreachable on
    /// the machines benchctl targets, so this must fail fast.
    pub(crate) pull_timeout: Duration,
    /// How long mmdebstrap may run when a base image is made locally.
    pub(crate) bootstrap_timeout: Duration,
    /// Makes container names unique within this process even for the same server twice in a run.
    pub(crate) sequence: Arc<AtomicU64>,
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

impl Orchestrator {
    /// Asks the engine for its version, CPUs, memory and clock.
    pub async fn facts(&self) -> Result<EngineFacts> {
        let version = self.docker_version().await?;
        let before = SystemTime::now();
        let sent = Instant::now();
        let info = self
            .docker
            .info()
            .await
            .map_err(|e| OrchestratorError::docker("info", e))?;
        let round_trip = sent.elapsed();
        let their = info
            .system_time
            .as_deref()
            .and_then(parse_rfc3339)
            .ok_or_else(|| {
                OrchestratorError::Invalid(format!(
                    "the engine at {} did not report its clock in a form benchctl reads ({:?})",
                    self.endpoint.url(),
                    info.system_time
                ))
            })?;
        let ours = unix_seconds(before) + round_trip.as_secs_f64() / 2.0;
        Ok(EngineFacts {
            version,
            api_version: self.api_version(),
            cpus: info.ncpu.and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
            memory_bytes: info
                .mem_total
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            kernel: info.kernel_version.unwrap_or_default(),
            clock_offset_s: their - ours,
            clock_uncertainty_s: round_trip.as_secs_f64() / 2.0,
        })
    }
}
