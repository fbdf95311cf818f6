//! Server containers and the guard that guarantees their removal.
//!
//! Every container runs on the host network (no NAT or userland proxy between load and server),
//! carries `benchctl=1`, `benchctl.run=<run id>` and `benchctl.server=<name>`, and is owned by a
//! [`ContainerGuard`].
//!
//! Why the guard's `Drop` removes the container with a blocking call on a helper thread rather
//! than by spawning a task on the current runtime: a guard is most often dropped exactly when the
//! runtime is going away (a test body that panicked, `main` returning an error, a `select!` that
//! abandoned the work on Ctrl-C). A task spawned then is cancelled with the runtime before it
//! runs, and the container leaks. So `Drop` starts a short-lived thread with its own
//! single-threaded runtime and its own daemon connection (a connection made on the caller's
//! runtime would need that runtime to make progress, which a blocked `Drop` prevents) and joins
//! it, with a bound. This blocks the dropping thread for one `DELETE /containers/{id}?force=1`
//! (tens of milliseconds), which is acceptable for teardown and works the same from async code,
//! sync code, a panic's unwinding and any runtime flavour. The orderly path,
//! [`ContainerGuard::remove`], does the same asynchronously and disarms the `Drop`.
//!
//! `std::process::exit` skips destructors: callers must let guards drop (or call
//! [`Orchestrator::remove_run`]) before exiting; `panic = "abort"` would skip them as well.

mod confinement;
mod guard;
mod removal;
mod spec;
pub use confinement::{Confinement, Tmpfs, DEFAULT_PIDS_LIMIT};
pub use guard::ContainerGuard;
use removal::{remove_labelled, remove_labelled_until_gone, RUN_REMOVAL_BOUND};
pub use removal::{remove_run_blocking, remove_run_blocking_on};
pub(crate) use spec::Stopped;
pub use spec::{ContainerSpec, DOCROOT, TLS_MOUNT};

use crate::client::Orchestrator;
use crate::error::{OrchestratorError, Result};
use crate::labels::{
    LABEL_MACHINE, LABEL_OWNER, LABEL_PID, LABEL_PID_START, LABEL_RUN, LABEL_SERVER,
};
use crate::owner::Owner;
use bollard::models::{
    ContainerCreateBody, ContainerUpdateBody, HostConfig, HostConfigLogConfig, Mount, MountType,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, LogsOptionsBuilder, UploadToContainerOptionsBuilder,
};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// A container's log (what `docker logs` shows): at most this many files of this size.
const LOG_MAX_SIZE: &str = "10m";
const LOG_MAX_FILES: &str = "2";

/// The container's labels: the caller's, then benchctl's own and its owner's.
fn container_labels(spec: &ContainerSpec) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = spec.labels.iter().cloned().collect();
    labels.insert(LABEL_OWNER.to_string(), "1".to_string());
    labels.insert(LABEL_RUN.to_string(), spec.run_id.clone());
    labels.insert(LABEL_SERVER.to_string(), spec.name.clone());
    // A caller may name another owner (a supervisor process, or a test standing in for a
    // crashed run); otherwise the owner is this process, named by its pid and start time so
    // that a reused pid is never taken for it.
    if !labels.contains_key(LABEL_PID) {
        let me = Owner::current();
        labels.insert(LABEL_PID.to_string(), me.pid.to_string());
        if let Some(start) = me.start {
            labels.insert(LABEL_PID_START.to_string(), start.to_string());
        }
    }
    if let Some(machine) = crate::owner::machine_id() {
        labels.entry(LABEL_MACHINE.to_string()).or_insert(machine);
    }
    labels
}

/// The container's environment: the spec's, with `BENCH_PORT`, `BENCH_TLS`, `BENCH_HTTP2` and
/// `BENCH_HTTP3` set from the spec whatever it says of them.
fn container_env(spec: &ContainerSpec) -> Vec<String> {
    let mut env: Vec<String> = spec
        .env
        .iter()
        .filter(|(k, _)| k != "BENCH_PORT")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    env.push(format!("BENCH_PORT={}", spec.port));
    if spec.tls_dir.is_some() {
        env.retain(|e| !e.starts_with("BENCH_TLS="));
        env.push("BENCH_TLS=1".to_string());
    }
    if spec.http2 {
        env.retain(|e| !e.starts_with("BENCH_HTTP2="));
        env.push("BENCH_HTTP2=1".to_string());
    }
    if spec.http3 {
        env.retain(|e| !e.starts_with("BENCH_HTTP3="));
        env.push("BENCH_HTTP3=1".to_string());
    }
    env
}

/// Bind mounts (`SOURCE:TARGET:ro`) and volumes of a container.
type Storage = (Option<Vec<String>>, Option<Vec<Mount>>);

/// The documents and the certificate: bind mounts here, volumes (filled before the start) on
/// another machine's engine.
fn container_storage(spec: &ContainerSpec, local: bool) -> Result<Storage> {
    // On another engine no path of this machine exists: the documents and the certificate
    // go into volumes of the container's own, uploaded before it starts.
    let volume = |target: &str| Mount {
        target: Some(target.to_string()),
        typ: Some(MountType::VOLUME),
        read_only: Some(false),
        ..Default::default()
    };
    let (binds, mut mounts) = match &spec.docroot {
        Some(_) if !local => (None, Some(vec![volume(DOCROOT)])),
        Some(dir) => {
            let abs = std::fs::canonicalize(dir).map_err(|e| {
                OrchestratorError::io(format!("document root {}", dir.display()), e)
            })?;
            let abs = abs.to_str().ok_or_else(|| {
                OrchestratorError::Invalid(format!("{}: path must be UTF-8", abs.display()))
            })?;
            (Some(vec![format!("{abs}:{DOCROOT}:ro")]), None)
        }
        None => (None, None),
    };
    // The run's certificate: bind-mounted read-only here, uploaded into a volume there.
    let binds = match (&spec.tls_dir, local) {
        (None, _) => binds,
        (Some(dir), true) => {
            let abs = std::fs::canonicalize(dir).map_err(|e| {
                OrchestratorError::io(format!("certificate folder {}", dir.display()), e)
            })?;
            let abs = abs.to_str().ok_or_else(|| {
                OrchestratorError::Invalid(format!("{}: path must be UTF-8", abs.display()))
            })?;
            let mut v = binds.unwrap_or_default();
            v.push(format!("{abs}:{TLS_MOUNT}:ro"));
            Some(v)
        }
        (Some(_), false) => {
            mounts.get_or_insert_with(Vec::new).push(volume(TLS_MOUNT));
            binds
        }
    };
    Ok((binds, mounts))
}

/// The container's limits, mounts and confinement.
fn host_config(
    spec: &ContainerSpec,
    memory: Option<i64>,
    binds: Option<Vec<String>>,
    mounts: Option<Vec<Mount>>,
) -> Result<HostConfig> {
    let c = &spec.confinement;
    Ok(HostConfig {
        network_mode: Some("host".to_string()),
        cpuset_cpus: spec.cpuset.clone(),
        cpu_period: spec.cpu_share.map(|_| CPU_PERIOD_US),
        cpu_quota: spec.cpu_share.map(cpu_quota).transpose()?,
        memory,
        // Without this the limit would allow as much swap again, and swapping servers measure the disk.
        memory_swap: memory,
        binds,
        mounts,
        init: Some(false),
        // Host networking shares the host's network namespace: with NET_RAW a server could
        // open a packet socket and read every local connection's traffic. Nothing a server
        // does needs a capability unless it says so.
        cap_drop: Some(vec!["ALL".to_string()]),
        cap_add: (!c.cap_add.is_empty()).then(|| c.cap_add.clone()),
        security_opt: Some(vec!["no-new-privileges".to_string()]),
        readonly_rootfs: Some(c.read_only),
        tmpfs: (!c.tmpfs.is_empty()).then(|| {
            c.tmpfs
                .iter()
                .map(|t| (t.path.clone(), t.options()))
                .collect()
        }),
        pids_limit: Some(c.pids_limit),
        log_config: Some(HostConfigLogConfig {
            typ: Some("json-file".to_string()),
            config: Some(HashMap::from([
                ("max-size".to_string(), LOG_MAX_SIZE.to_string()),
                ("max-file".to_string(), LOG_MAX_FILES.to_string()),
            ])),
        }),
        ..Default::default()
    })
}

/// Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`; anything else becomes '-'.
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What a container's ports and protocols need before it is created: its port free on this
/// machine (TCP, and UDP too for HTTP/3), and a certificate where it serves QUIC.
fn check_ports(spec: &ContainerSpec, address: std::net::IpAddr, local: bool) -> Result<()> {
    // With host networking a port already taken means either a failed bind inside the
    // container or, worse, probing and measuring whatever else listens there. (On another
    // machine's engine the port cannot be checked from here: a server that cannot bind
    // exits, and says so in its log.)
    if local && std::net::TcpListener::bind((address, spec.port)).is_err() {
        return Err(OrchestratorError::PortBusy { port: spec.port });
    }
    // HTTP/3 listens on UDP at the same port number: that must be free as well.
    if local && spec.http3 && std::net::UdpSocket::bind((address, spec.port)).is_err() {
        return Err(OrchestratorError::PortBusy { port: spec.port });
    }
    if spec.http3 && spec.tls_dir.is_none() {
        return Err(OrchestratorError::Invalid(format!(
            "container {}: HTTP/3 needs the run's certificate (QUIC is always encrypted), and the spec gives none",
            spec.name
        )));
    }
    Ok(())
}

impl Orchestrator {
    /// Creates and starts a container for `spec` and returns the guard that will remove it.
    pub async fn start(&self, spec: &ContainerSpec) -> Result<ContainerGuard> {
        if spec.name.is_empty() || spec.image.is_empty() || spec.run_id.is_empty() {
            return Err(OrchestratorError::Invalid(
                "a container needs a name, an image and a run id".to_string(),
            ));
        }
        let local = self.endpoint.is_local();
        let address = match spec.address.or_else(|| self.endpoint.default_address()) {
            Some(a) => a,
            None => {
                return Err(OrchestratorError::Invalid(format!(
                    "the engine at {} is named by a host name: say at which IP address its servers are reached",
                    self.endpoint.url()
                )))
            }
        };
        check_ports(spec, address, local)?;

        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "benchctl-{}-{}-{}-{seq}",
            name_part(&spec.run_id),
            name_part(&spec.name),
            std::process::id()
        );

        let labels = container_labels(spec);
        let env = container_env(spec);
        let (binds, mounts) = container_storage(spec, local)?;
        let memory = spec
            .memory_bytes
            .map(|m| {
                i64::try_from(m).map_err(|_| {
                    OrchestratorError::Invalid(format!("memory limit {m} bytes is too large"))
                })
            })
            .transpose()?;
        let c = &spec.confinement;
        let mut covered: Vec<&str> = c.tmpfs.iter().map(|t| t.path.as_str()).collect();
        if spec.docroot.is_some() {
            covered.push(DOCROOT);
        }
        if spec.tls_dir.is_some() {
            covered.push(TLS_MOUNT);
        }
        self.check_volumes(&spec.image, &covered).await?;
        let host_config = host_config(spec, memory, binds, mounts)?;
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            user: c.user.clone(),
            env: Some(env),
            cmd: spec.cmd.clone(),
            entrypoint: spec.entrypoint.clone(),
            labels: Some(labels),
            host_config: Some(host_config),
            ..Default::default()
        };

        let started = Instant::now();
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| OrchestratorError::docker(format!("create container {name}"), e))?;
        // From here on the container exists: the guard owns it even if starting fails.
        let guard = ContainerGuard {
            docker: self.docker.clone(),
            endpoint: self.endpoint.clone(),
            id: created.id,
            name,
            port: spec.port,
            address,
            started,
            armed: true,
        };
        if !local {
            if let Some(dir) = &spec.docroot {
                self.upload_folder(&guard, dir, DOCROOT, "the documents")
                    .await?;
            }
            if let Some(dir) = &spec.tls_dir {
                self.upload_folder(&guard, dir, TLS_MOUNT, "the certificate")
                    .await?;
            }
        }
        self.docker
            .start_container(
                &guard.id,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .map_err(|e| OrchestratorError::docker(format!("start container {}", guard.name), e))?;
        Ok(guard)
    }

    /// Copies `dir` into the created (not yet started) container's volume at `target` (the
    /// documents, the certificate), as one tar archive through the Engine API, files
    /// root-owned and world-readable; `what` names it in errors.
    async fn upload_folder(
        &self,
        guard: &ContainerGuard,
        dir: &Path,
        target: &str,
        what: &str,
    ) -> Result<()> {
        let dir = dir.to_path_buf();
        let archive = tokio::task::spawn_blocking(move || folder_tar(&dir))
            .await
            .map_err(|e| OrchestratorError::Invalid(format!("archiving {what}: {e}")))??;
        let options = UploadToContainerOptionsBuilder::default()
            .path(target)
            .build();
        self.patient()
            .upload_to_container(
                guard.id(),
                Some(options),
                bollard::body_full(archive.into()),
            )
            .await
            .map_err(|e| {
                OrchestratorError::docker(
                    format!(
                        "upload {what} into {} on {}",
                        guard.name(),
                        self.endpoint.url()
                    ),
                    e,
                )
            })
    }

    /// Changes how much CPU time a running container may use, in cores (see
    /// [`ContainerSpec::cpu_share`]); `None` lifts the limit. Takes effect at once: the server
    /// keeps running, its connections and caches with it.
    pub async fn set_cpu_share(&self, guard: &ContainerGuard, share: Option<f64>) -> Result<()> {
        let body = ContainerUpdateBody {
            cpu_period: Some(CPU_PERIOD_US),
            cpu_quota: Some(share.map(cpu_quota).transpose()?.unwrap_or(-1)),
            ..Default::default()
        };
        self.docker
            .update_container(guard.id(), body)
            .await
            .map_err(|e| OrchestratorError::docker("update (CPU share)", e))
    }

    /// The engine's view of a container.
    pub(crate) async fn inspect(
        &self,
        guard: &ContainerGuard,
    ) -> std::result::Result<bollard::models::ContainerInspectResponse, bollard::errors::Error>
    {
        self.docker
            .inspect_container(
                guard.id(),
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
    }

    /// How a container stands: `None` while it runs, else how it stopped. A container the
    /// engine no longer has stopped too (`removed`).
    pub(crate) async fn stopped(&self, guard: &ContainerGuard) -> Result<Option<Stopped>> {
        let info = match self.inspect(guard).await {
            Ok(info) => info,
            Err(e) if crate::error::is_not_found(&e) => {
                return Ok(Some(Stopped {
                    code: None,
                    oom_killed: false,
                    memory_limit: None,
                    removed: true,
                }))
            }
            Err(e) => {
                return Err(OrchestratorError::docker(
                    format!(
                        "inspect container {} on {}",
                        guard.name(),
                        self.endpoint.url()
                    ),
                    e,
                ))
            }
        };
        let state = info.state.unwrap_or_default();
        if state.running.unwrap_or(false) {
            return Ok(None);
        }
        Ok(Some(Stopped {
            code: state.exit_code,
            oom_killed: state.oom_killed == Some(true),
            memory_limit: info
                .host_config
                .and_then(|h| h.memory)
                .and_then(|m| u64::try_from(m).ok())
                .filter(|&m| m > 0),
            removed: false,
        }))
    }

    /// How a program run in a container stands: `None` while it runs, else the code it exited
    /// with (`-1` when the engine gives none, or no longer has the container).
    pub async fn exit_code(&self, guard: &ContainerGuard) -> Result<Option<i64>> {
        Ok(self.stopped(guard).await?.map(|s| s.code.unwrap_or(-1)))
    }

    /// Everything a container wrote, its standard output and its standard error apart: how a
    /// program run in a container hands back its result.
    pub async fn output(&self, guard: &ContainerGuard) -> Result<(Vec<u8>, Vec<u8>)> {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        let mut stream = self.docker.logs(guard.id(), Some(options));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Some(item) = stream.next().await {
            match item.map_err(|e| {
                OrchestratorError::docker(
                    format!(
                        "read the output of {} on {}",
                        guard.name(),
                        self.endpoint.url()
                    ),
                    e,
                )
            })? {
                bollard::container::LogOutput::StdOut { message } => {
                    out.extend_from_slice(&message)
                }
                bollard::container::LogOutput::StdErr { message } => {
                    err.extend_from_slice(&message)
                }
                _ => {}
            }
        }
        Ok((out, err))
    }

    /// The last `lines` lines of a container's stdout and stderr, interleaved as written.
    pub async fn log_tail(&self, container: &str, lines: usize) -> Vec<String> {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail(&lines.to_string())
            .build();
        let mut stream = self.docker.logs(container, Some(options));
        let mut tail = crate::logtail::Tail::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(out) => tail.push(&crate::logtail::strip_ansi(&out.to_string())),
                Err(e) => {
                    tail.push(&format!("\n(could not read the logs: {e})\n"));
                    break;
                }
            }
        }
        tail.finish()
    }

    /// Force-removes every container of run `run_id` and waits (at most 15 s) until the
    /// engine lists none; returns how many there were.
    pub async fn remove_run(&self, run_id: &str) -> Result<usize> {
        let deadline = Instant::now() + RUN_REMOVAL_BOUND;
        remove_labelled_until_gone(&self.docker, &format!("{LABEL_RUN}={run_id}"), deadline).await
    }

    /// Force-removes the containers of run `run_id` whose label `key` is `value` (a run's load
    /// generators on one engine, say); returns how many there were.
    pub async fn remove_run_where(&self, run_id: &str, key: &str, value: &str) -> Result<usize> {
        remove_labelled(&self.docker, &format!("{LABEL_RUN}={run_id}"), |labels| {
            labels.and_then(|l| l.get(key)).is_some_and(|v| v == value)
        })
        .await
    }

    /// Force-removes every container labelled `benchctl=1`, whatever its run, live runs'
    /// included: `benchctl gc --force`.
    pub async fn gc_all(&self) -> Result<usize> {
        remove_labelled(&self.docker, &format!("{LABEL_OWNER}=1"), |_| true).await
    }

    /// Force-removes the benchctl containers whose owning process is gone: what a crashed or
    /// killed run left behind. Swept at the start of each run and by `benchctl gc`; containers
    /// of runs still in progress (another `benchctl run`, a test running in parallel) are left
    /// alone.
    pub async fn gc_stale(&self) -> Result<usize> {
        let here = crate::owner::machine_id();
        remove_labelled(&self.docker, &format!("{LABEL_OWNER}=1"), |labels| {
            let owner = labels.and_then(|l| {
                let pid = l.get(LABEL_PID)?;
                let text = match l.get(LABEL_PID_START) {
                    Some(start) => format!("{pid}:{start}"),
                    None => pid.clone(),
                };
                Owner::from_label(&text)
            });
            // A container started from another machine is that machine's to judge.
            let machine = labels.and_then(|l| l.get(LABEL_MACHINE));
            if machine.is_some_and(|m| Some(m) != here.as_ref()) {
                return false;
            }
            // Without a pid label the owner cannot be checked: such a container predates the
            // label and is stale by now.
            owner.is_none_or(|o| !o.is_alive())
        })
        .await
    }
}

/// The files under `dir` as a tar archive: regular files and folders only (symlinks are
/// resolved, as the bind mount of the same folder would serve them), owned by root, files
/// 0644 and folders 0755.
fn folder_tar(dir: &Path) -> Result<Vec<u8>> {
    let err = |e: std::io::Error| OrchestratorError::io(format!("archiving {}", dir.display()), e);
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(true);
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(dir.join(&rel))
            .map_err(err)?
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(err)?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let rel = rel.join(e.file_name());
            let path = e.path();
            let meta = std::fs::metadata(&path).map_err(err)?;
            let mut header = tar::Header::new_gnu();
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            if meta.is_dir() {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                b.append_data(&mut header, &rel, std::io::empty())
                    .map_err(err)?;
                stack.push(rel);
            } else if meta.is_file() {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(meta.len());
                let file = std::fs::File::open(&path).map_err(err)?;
                b.append_data(&mut header, &rel, file).map_err(err)?;
            }
        }
    }
    b.into_inner().map_err(err)
}

/// The period over which a CPU share is enforced, µs. Docker's `--cpus` uses the kernel's
/// default of 100 ms, and a server that has spent its share early in a period waits for the
/// next: up to 100 ms added to a request's latency. A 20 ms period keeps that wait short while
/// the smallest quota the kernel takes (1 ms) still allows a share of 0.05.
pub const CPU_PERIOD_US: i64 = 20_000;

/// The CFS quota, µs per [`CPU_PERIOD_US`], for a share of cores: from 0.05 (1 ms, the
/// kernel's least) to 1024 cores.
fn cpu_quota(share: f64) -> Result<i64> {
    if !(share.is_finite() && (0.05..=1024.0).contains(&share)) {
        return Err(OrchestratorError::Invalid(format!(
            "a CPU share of {share} cores is out of range (0.05 to 1024)"
        )));
    }
    Ok((share * CPU_PERIOD_US as f64).round() as i64)
}
