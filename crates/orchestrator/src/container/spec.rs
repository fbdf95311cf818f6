//! What to run in a container, and how one ended.

use super::confinement::Confinement;
use std::net::IpAddr;
use std::path::PathBuf;

/// Where a server's container finds the run's certificate (`cert.pem`) and key (`key.pem`),
/// read-only, when it is to serve HTTPS (`BENCH_TLS=1`).
pub const TLS_MOUNT: &str = "/etc/benchctl/tls";

/// Where a server's documents are, inside its container.
pub const DOCROOT: &str = "/srv/www";

/// What to run: one server, listening on `address`:`port`.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    /// The server's name (`nginx`, `varnish`, ...): in the container name and its labels.
    pub name: String,
    /// Image to run (a [`crate::BuiltImage::tag`] or id).
    pub image: String,
    /// Extra environment; `BENCH_PORT` is always set from `port`.
    pub env: Vec<(String, String)>,
    /// The port the server listens on (host networking: a port on the host itself).
    pub port: u16,
    /// Where the server is reached: `None` for the engine's own address (127.0.0.1 for this
    /// machine's engine, the host of a `tcp://` engine given as an IP address).
    pub address: Option<IpAddr>,
    /// CPUs to pin the server to, in cpuset syntax (`"1"`, `"2-3"`).
    pub cpuset: Option<String>,
    /// Memory limit in bytes.
    pub memory_bytes: Option<u64>,
    /// CPU time the container may use, in cores (`0.25`: a quarter of one core's time, spread
    /// over its cpuset); `None` for as much as its cpuset gives. See
    /// [`Orchestrator::set_cpu_share`] to change it while the server runs.
    pub cpu_share: Option<f64>,
    /// Folder of documents, served at `/srv/www`: bind-mounted read-only on this machine's
    /// engine; on another engine copied through the API into a volume of the container's own
    /// (removed with it), root-owned so that the server's non-root user can only read it.
    pub docroot: Option<PathBuf>,
    /// Folder holding the run's certificate (`cert.pem`) and key (`key.pem`) at [`TLS_MOUNT`]:
    /// bind-mounted read-only on this machine's engine, copied into a volume of the
    /// container's own on another, as the documents are; with it the container gets
    /// `BENCH_TLS=1` and serves HTTPS.
    pub tls_dir: Option<PathBuf>,
    /// Serve HTTP/2 as well (`BENCH_HTTP2=1`): by ALPN over TLS, by prior knowledge (h2c) in
    /// cleartext, for a server whose manifest says `http2 = true`.
    pub http2: bool,
    /// Serve HTTP/3 over QUIC as well (`BENCH_HTTP3=1`), on UDP at the same port number, for a
    /// server whose manifest says `http3 = true`; it needs `tls_dir` (QUIC is always encrypted).
    pub http3: bool,
    /// The run this container belongs to; names it and labels it.
    pub run_id: String,
    /// Additional labels.
    pub labels: Vec<(String, String)>,
    /// Overrides the image's command (tests use it; servers normally keep their entrypoint's).
    pub cmd: Option<Vec<String>>,
    /// Overrides the image's entrypoint (tests use it to run a probe in a server's image).
    pub entrypoint: Option<Vec<String>>,
    /// What the container may do beyond serving: least privilege unless a server declares
    /// otherwise.
    pub confinement: Confinement,
}

/// How a container stopped ([`Orchestrator::stopped`](crate::Orchestrator::stopped)).
pub(crate) struct Stopped {
    pub code: Option<i64>,
    /// The kernel's OOM killer ended it.
    pub oom_killed: bool,
    /// Its memory limit, bytes, when it had one.
    pub memory_limit: Option<u64>,
    /// The engine no longer has it.
    pub removed: bool,
}
