//! Which Docker engine an [`Orchestrator`] talks to, and what that engine says about itself.
//!
//! The local engine (`DOCKER_HOST` or the local socket) is the default. Others are named by an
//! [`Endpoint`]: a unix socket (possibly one forwarded from another machine), SSH (a socket
//! forwarded by the system's ssh, [`crate::ssh`]), or TCP, either with TLS client certificates
//! or, only when the caller says so, plain. Whoever can reach an
//! engine's API can run any container on that machine, root and host network included: plain TCP
//! hands that to anyone on the network, so the scenario layer asks for `insecure = true` before
//! it builds such an endpoint.
//!
//! Every connection negotiates the API version down to the engine's (the engines benchctl meets
//! speak 1.41 and refuse newer paths) and is proved with a ping, within a bound: a machine that
//! is off must fail in seconds with its name, not hang a run for bollard's two minutes.

use crate::error::{OrchestratorError, Result};
use crate::ssh::SshTarget;
use bollard::Docker;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long connecting to an engine and negotiating its API version may take.
pub const CONNECT_BOUND: Duration = Duration::from_secs(10);
/// How long a request to another machine's engine may wait for its answer, seconds: far more
/// than an inspect, a start or a forced removal takes, so that an engine cut off by the
/// network (which drops what is sent, and never refuses) is given up on within it. Requests
/// that send or wait for much more than that use [`PATIENT_TIMEOUT`].
const REQUEST_TIMEOUT_S: u64 = 30;
/// The answer bound of requests that carry an image, a build context or the documents, or
/// whose answer is a build: their own deadlines bound them (`build_timeout`, `pull_timeout`).
pub(crate) const PATIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Where an engine is and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// This machine's engine: `DOCKER_HOST` when set, else the local socket.
    Local,
    /// A unix socket: an engine of this machine, or one forwarded here (`ssh -L`).
    Unix { path: PathBuf },
    /// The Engine API over TCP; `tls` is a folder holding `ca.pem`, `cert.pem` and `key.pem`,
    /// `None` for plain, unauthenticated TCP.
    Tcp {
        host: String,
        port: u16,
        tls: Option<PathBuf>,
    },
    /// The engine's socket on another machine, forwarded here by ssh.
    Ssh(SshTarget),
}

impl Endpoint {
    /// As a URL (`unix:///...`, `tcp://host:port`), for messages.
    pub fn url(&self) -> String {
        match self {
            Endpoint::Local => std::env::var("DOCKER_HOST")
                .unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string()),
            Endpoint::Unix { path } => format!("unix://{}", path.display()),
            Endpoint::Tcp { host, port, .. } => format!("tcp://{host}:{port}"),
            Endpoint::Ssh(t) => t.url(),
        }
    }

    /// Whether containers of this engine run on this machine (so that a bind mount of a local
    /// folder, and a port check on 127.0.0.1, mean something there).
    pub fn is_local(&self) -> bool {
        matches!(self, Endpoint::Local)
    }

    /// A client for the endpoint, not yet negotiated; `forwarded` is the local end of an ssh
    /// endpoint's tunnel.
    pub(crate) fn client(&self, forwarded: Option<&Path>) -> Result<Docker> {
        let unreachable = |source| OrchestratorError::Unreachable { source };
        let version = bollard::API_DEFAULT_VERSION;
        let unix = |path: &Path| {
            Docker::connect_with_unix(
                &format!("unix://{}", path.display()),
                REQUEST_TIMEOUT_S,
                version,
            )
            .map_err(unreachable)
        };
        match self {
            Endpoint::Local => Docker::connect_with_defaults().map_err(unreachable),
            Endpoint::Unix { path } => unix(path),
            Endpoint::Ssh(t) => match forwarded {
                Some(path) => unix(path),
                None => Err(OrchestratorError::Ssh {
                    url: t.url(),
                    why: "no tunnel".into(),
                }),
            },
            Endpoint::Tcp {
                host,
                port,
                tls: None,
            } => Docker::connect_with_http(
                &format!("tcp://{}:{port}", bracket(host)),
                REQUEST_TIMEOUT_S,
                version,
            )
            .map_err(unreachable),
            Endpoint::Tcp {
                host,
                port,
                tls: Some(dir),
            } => {
                for f in ["ca.pem", "cert.pem", "key.pem"] {
                    if !dir.join(f).is_file() {
                        return Err(OrchestratorError::Invalid(format!(
                            "{}: no {f} (the TLS folder of an engine holds ca.pem, cert.pem and key.pem)",
                            dir.display()
                        )));
                    }
                }
                Docker::connect_with_ssl(
                    &format!("tcp://{}:{port}", bracket(host)),
                    &dir.join("key.pem"),
                    &dir.join("cert.pem"),
                    &dir.join("ca.pem"),
                    REQUEST_TIMEOUT_S,
                    version,
                )
                .map_err(unreachable)
            }
        }
    }

    /// A negotiated, proven connection, within [`CONNECT_BOUND`].
    pub(crate) async fn connect(&self) -> Result<Docker> {
        let forwarded = match self {
            Endpoint::Ssh(t) => {
                let t = t.clone();
                let made = tokio::task::spawn_blocking(move || {
                    crate::ssh::local_socket(&t, CONNECT_BOUND)
                })
                .await
                .map_err(|e| OrchestratorError::Ssh {
                    url: self.url(),
                    why: format!("the tunnel's task failed: {e}"),
                })??;
                Some(made)
            }
            _ => None,
        };
        let docker = self
            .client(forwarded.as_deref())
            .map_err(|e| self.name_in(e))?;
        let attempt = async {
            let docker = docker
                .negotiate_version()
                .await
                .map_err(classify_connect_error)?;
            // A failed negotiation leaves the client on its newest version; prove the pair works.
            docker.ping().await.map_err(classify_connect_error)?;
            Ok(docker)
        };
        match tokio::time::timeout(CONNECT_BOUND, attempt).await {
            Ok(r) => r.map_err(|e| self.name_in(e)),
            Err(_) => Err(OrchestratorError::NoAnswer {
                url: self.url(),
                waited: CONNECT_BOUND,
            }),
        }
    }

    /// An error reaching a named engine says which one; the local engine's keeps its advice
    /// about starting dockerd.
    fn name_in(&self, e: OrchestratorError) -> OrchestratorError {
        match e {
            OrchestratorError::Unreachable { source } if !self.is_local() => {
                OrchestratorError::EngineUnreachable {
                    url: self.url(),
                    source,
                }
            }
            // Go's HTTP server answers plain HTTP on a TLS port with a 400 of its own.
            OrchestratorError::ApiVersion { message } if message.contains("HTTPS") => {
                OrchestratorError::Invalid(format!(
                    "the engine at {} speaks only TLS ({}): give the host a TLS folder with ca.pem, cert.pem and key.pem",
                    self.url(),
                    message.trim()
                ))
            }
            OrchestratorError::ApiVersion { message } if !self.is_local() => {
                OrchestratorError::ApiVersion {
                    message: format!("{}: {message}", self.url()),
                }
            }
            other => other,
        }
    }

    /// The address this engine's host-network containers are reached at when nothing else is
    /// said: 127.0.0.1 for this machine's engines, the TCP host when it is an IP address.
    pub fn default_address(&self) -> Option<IpAddr> {
        match self {
            Endpoint::Local | Endpoint::Unix { .. } => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Endpoint::Tcp { host, .. } => host.trim_matches(['[', ']']).parse().ok(),
            Endpoint::Ssh(t) => t.host().trim_matches(['[', ']']).parse().ok(),
        }
    }
}

/// An IPv6 literal in a URL goes in brackets.
fn bracket(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// What an engine says about itself: `benchctl hosts check`'s line for it.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineFacts {
    /// The engine's version (`20.10.24+dfsg1`).
    pub version: String,
    /// The Engine API version in use after negotiation (`1.41`).
    pub api_version: String,
    /// CPUs the engine's machine has.
    pub cpus: u64,
    /// Its memory, bytes.
    pub memory_bytes: u64,
    /// Its kernel.
    pub kernel: String,
    /// How far its clock is ahead of this machine's (negative: behind), seconds.
    pub clock_offset_s: f64,
    /// Half the round trip of the request that read its clock: the offset's uncertainty.
    pub clock_uncertainty_s: f64,
}

pub(crate) fn unix_seconds(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time as Docker writes it
/// (`2026-12-02T00:25:01.123456789Z`, or with a `+01:00` offset).
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let t =
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_times_parse_to_unix_seconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        // `date -d 2026-12-02T00:25:01Z +%s`
        assert_eq!(parse_rfc3339("2026-12-02T00:25:01Z"), Some(1_796_171_101.0));
        let t = parse_rfc3339("2026-12-02T00:25:01.5+01:00").unwrap();
        assert!((t - (1_796_171_101.0 - 3600.0 + 0.5)).abs() < 1e-6, "{t}");
        assert_eq!(parse_rfc3339("2000-02-29T12:00:00Z"), Some(951_825_600.0));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2026-13-02T00:25:01Z"), None);
    }

    #[test]
    fn default_addresses_follow_the_endpoint() {
        let tcp = |host: &str| Endpoint::Tcp {
            host: host.to_string(),
            port: 2376,
            tls: None,
        };
        assert_eq!(
            Endpoint::Local.default_address(),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
        assert_eq!(
            tcp("10.0.0.5").default_address(),
            Some("10.0.0.5".parse().unwrap())
        );
        assert_eq!(
            tcp("[fd00::5]").default_address(),
            Some("fd00::5".parse().unwrap())
        );
        assert_eq!(tcp("srv1").default_address(), None);
        assert_eq!(tcp("fd00::5").url(), "tcp://fd00::5:2376");
        assert_eq!(bracket("fd00::5"), "[fd00::5]");
    }
}
