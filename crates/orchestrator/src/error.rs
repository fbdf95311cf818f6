//! One error type for everything the orchestrator does, so the CLI can tell "this server is
//! unavailable, here is why" apart from "Docker itself is unusable", and so every message ends
//! with what the reader can do about it.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while talking to Docker on benchctl's behalf.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    /// The daemon did not answer at all.
    #[error(
        "cannot reach the Docker daemon ({source}); is dockerd running? `.ci/run` / `./x` starts it, \
         and DOCKER_HOST must point at it if it is not on /var/run/docker.sock"
    )]
    Unreachable {
        #[source]
        source: bollard::errors::Error,
    },

    /// An engine named by its URL (not the local default) could not be reached.
    #[error("cannot reach the Docker engine at {url} ({source}); check that the machine is up, that its engine listens there, and the address and port")]
    EngineUnreachable {
        url: String,
        #[source]
        source: bollard::errors::Error,
    },

    /// The ssh tunnel to an engine on another machine could not be made.
    #[error("cannot reach the Docker engine at {url} over ssh: {why}")]
    Ssh { url: String, why: String },

    /// An engine did not answer in time (a machine that is off, or a firewall that drops).
    #[error("the Docker engine at {url} did not answer within {waited:?}; check that the machine is up and that nothing between drops the connection")]
    NoAnswer { url: String, waited: Duration },

    /// The daemon answered but refused the API version, or sent one we cannot parse.
    #[error(
        "the Docker daemon refused the Engine API version ({message}); benchctl negotiates down to \
         the daemon's version, so this daemon is older than any version bollard can speak; upgrade docker.io"
    )]
    ApiVersion { message: String },

    /// Any other Engine API call that failed; `action` says which one.
    #[error("docker {action} failed: {}", explain_docker(source))]
    Docker {
        action: String,
        #[source]
        source: bollard::errors::Error,
    },

    /// An image build failed; the message is the daemon's, the tail is the end of the build log.
    #[error(
        "building the {server} image failed: {message}\n  (full log: {log_path})\n{}",
        indent(log_tail)
    )]
    Build {
        server: String,
        message: String,
        log_tail: Vec<String>,
        log_path: PathBuf,
    },

    /// A Dockerfile names a base image that is neither local, nor pullable, nor one we can make.
    #[error(
        "base image {image} is not available: {reason}; pull it on a machine with a registry, or \
         use a debian:<suite> base that `benchctl images bootstrap` can create"
    )]
    BaseImage { image: String, reason: String },

    /// mmdebstrap is not installed.
    #[error("making base image {image} needs mmdebstrap, which is not installed: install Debian's mmdebstrap (apt-get install mmdebstrap)")]
    MmdebstrapMissing { image: String },

    /// Creating a base image with mmdebstrap or importing it failed.
    #[error("making base image {image} failed: {message}\n{}", indent(stderr_tail))]
    Bootstrap {
        image: String,
        message: String,
        stderr_tail: Vec<String>,
    },

    /// The port the server is to listen on is already taken on the host (host networking).
    #[error(
        "port {port} on 127.0.0.1 is already in use by another process; with host networking the \
         server would fail to bind or benchctl would measure the wrong server: stop it or choose another port"
    )]
    PortBusy { port: u16 },

    /// The container stopped before it answered (or while it was being used).
    #[error("container {name} stopped (exit code {}); its last log lines:\n{}", code.map_or("unknown".to_string(), |c| c.to_string()), indent(log_tail))]
    Exited {
        name: String,
        code: Option<i64>,
        log_tail: Vec<String>,
    },

    /// The kernel's OOM killer ended the container: it needed more memory than its limit.
    #[error("container {name} was killed for running out of memory (OOM): it needed more than its limit of {}; raise the server's `memory` in the scenario. Its last log lines:\n{}", limit.map_or("unknown".to_string(), mib), indent(log_tail))]
    OutOfMemory {
        name: String,
        limit: Option<u64>,
        log_tail: Vec<String>,
    },

    /// The server did not answer in time although its container kept running.
    #[error("container {name} did not answer {} on {} within {waited:?}; check that it listens on $BENCH_ADDR:$BENCH_PORT; its last log lines:\n{}", asked_over(*quic), std::net::SocketAddr::new(*address, *port), indent(log_tail))]
    NotReady {
        name: String,
        /// Asked over QUIC (HTTP/3 on UDP) rather than HTTP over TCP.
        quic: bool,
        address: std::net::IpAddr,
        port: u16,
        waited: Duration,
        log_tail: Vec<String>,
    },

    /// A document the server returned is not the one expected.
    #[error("verifying {url_path} on {}: {what}", std::net::SocketAddr::new(*address, *port))]
    Verify {
        address: std::net::IpAddr,
        port: u16,
        url_path: String,
        what: String,
    },

    /// An image could not be sent to another engine, or what arrived there is not it.
    #[error("shipping image {image} to the engine at {url} failed: {message}")]
    Ship {
        image: String,
        url: String,
        message: String,
    },

    /// A local file operation (build context, log file, sources file) failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// A started container is not one a server may run as (a process as root, a socket listening
    /// where it was not told to, a volume of its image no tmpfs covers).
    #[error("container {name} was refused: {why}")]
    Refused { name: String, why: String },

    /// The arguments cannot work (bad server name, relative path, ...).
    #[error("{0}")]
    Invalid(String),
}

/// Shorthand used throughout the crate.
pub type Result<T, E = OrchestratorError> = std::result::Result<T, E>;

impl OrchestratorError {
    pub(crate) fn docker(action: impl Into<String>, source: bollard::errors::Error) -> Self {
        OrchestratorError::Docker {
            action: action.into(),
            source,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        OrchestratorError::Io {
            context: context.into(),
            source,
        }
    }

    /// The container stopped (it exited, or the OOM killer ended it), as opposed to its
    /// engine failing to say.
    pub fn is_stop(&self) -> bool {
        matches!(
            self,
            OrchestratorError::Exited { .. } | OrchestratorError::OutOfMemory { .. }
        )
    }

    /// The cause in one line, without the log lines some errors carry ([`log_lines`]) and
    /// without the path of a build's full log ([`log_path`]): what a table or a list of
    /// unavailable servers shows.
    ///
    /// [`log_lines`]: Self::log_lines
    /// [`log_path`]: Self::log_path
    pub fn headline(&self) -> String {
        match self {
            OrchestratorError::Build {
                server, message, ..
            } => format!("building the {server} image failed: {}", first_line(message)),
            OrchestratorError::Exited { name, code, .. } => format!(
                "container {name} stopped (exit code {})",
                code.map_or("unknown".to_string(), |c| c.to_string())
            ),
            OrchestratorError::OutOfMemory { name, limit, .. } => format!(
                "container {name} was killed for running out of memory (OOM): it needed more than its limit of {}; raise the server's `memory` in the scenario",
                limit.map_or("unknown".to_string(), mib)
            ),
            OrchestratorError::NotReady {
                name,
                quic,
                address,
                port,
                waited,
                ..
            } => format!(
                "container {name} did not answer {} on {} within {waited:?}; check that it listens on $BENCH_ADDR:$BENCH_PORT",
                asked_over(*quic),
                std::net::SocketAddr::new(*address, *port)
            ),
            OrchestratorError::Bootstrap { image, message, .. } => {
                format!("making base image {image} failed: {}", first_line(message))
            }
            other => first_line(&other.to_string()).to_string(),
        }
    }

    /// The last lines of the container's or the build's output that the error carries.
    pub fn log_lines(&self) -> &[String] {
        match self {
            OrchestratorError::Build { log_tail, .. }
            | OrchestratorError::Exited { log_tail, .. }
            | OrchestratorError::OutOfMemory { log_tail, .. }
            | OrchestratorError::NotReady { log_tail, .. } => log_tail,
            OrchestratorError::Bootstrap { stderr_tail, .. } => stderr_tail,
            _ => &[],
        }
    }

    /// Where a failed build's whole log was kept.
    pub fn log_path(&self) -> Option<&std::path::Path> {
        match self {
            OrchestratorError::Build { log_path, .. } => Some(log_path),
            _ => None,
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s).trim_end()
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes as f64 / f64::from(1 << 20))
}

fn indent(lines: &[String]) -> String {
    if lines.is_empty() {
        return "    (no output)".to_string();
    }
    lines
        .iter()
        .map(|l| format!("    | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether an Engine API error means "no such object", which removal treats as success.
pub(crate) fn is_not_found(err: &bollard::errors::Error) -> bool {
    matches!(
        err,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// Whether the daemon refused because the object is in use (409: an image a container uses).
pub(crate) fn is_conflict(err: &bollard::errors::Error) -> bool {
    matches!(
        err,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            ..
        }
    )
}

/// Whether removal failed only because the daemon is already removing the container (409).
/// bollard's own words, but for its bare "Timeout error".
pub(crate) fn explain_docker(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::RequestTimeoutError => {
            "the engine did not answer in time (is its machine up and reachable?)".to_string()
        }
        other => other.to_string(),
    }
}

pub(crate) fn is_removal_in_progress(err: &bollard::errors::Error) -> bool {
    matches!(
        err,
        bollard::errors::Error::DockerResponseServerError { status_code: 409, message }
            if message.contains("already in progress")
    )
}

/// What readiness was asked over, in a message.
fn asked_over(quic: bool) -> &'static str {
    if quic {
        "HTTP/3 over QUIC (UDP)"
    } else {
        "HTTP"
    }
}
