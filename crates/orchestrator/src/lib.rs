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
mod client;
mod container;
mod engine;
mod error;
mod image;
mod labels;
mod logtail;
pub mod owner;
mod probe;
mod sockets;
pub mod ssh;
mod stats;

pub use audit::{parse_net_table, parse_process_table, root_among, Listener, ProcessIds, Socket};
pub use client::Orchestrator;
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
pub use labels::{LABEL_MACHINE, LABEL_OWNER, LABEL_PID, LABEL_PID_START, LABEL_RUN, LABEL_SERVER};
pub use owner::Owner;
pub use probe::{verify_served, ExpectedDoc, Scheme, Verified};
pub use ssh::SshTarget;
pub use stats::{ContainerUsage, StatsSampler};
