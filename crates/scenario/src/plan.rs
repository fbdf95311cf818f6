//! The validated, fully defaulted description of a benchmark run. Everything downstream
//! (orchestrator, load generator, reports) reads this and never the TOML, so no default or
//! check lives in two places.

use crate::manifest::Manifest;
pub use crate::units::Coalesce;
pub use loadgen::LoadSpec;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// A scenario after validation: every default resolved, every reference checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `[a-z0-9-]+`.
    pub name: String,
    /// Empty when the file has none.
    pub description: String,
    /// The reference post reproduced, if any.
    pub seed: Option<String>,
    /// The scenario file as it was named.
    pub source: PathBuf,
    /// The scenario text that was validated, kept in results so a run can be repeated after
    /// the file changed.
    pub text: String,
    /// SHA-256 (lowercase hex) of `text`, so results name exactly what ran.
    pub scenario_hash: String,
    /// Repetitions (>= 1); servers are interleaved round by round.
    pub runs: u32,
    pub cpus: CpuPlan,
    /// In dependency order: a server another one needs (a Varnish's backend) comes first.
    pub servers: Vec<ServerSpec>,
    /// In file order.
    pub documents: Vec<DocumentSpec>,
    /// A search, after the loads, for the highest rate each server keeps within a latency
    /// target (`[capacity]`); `None` when the scenario asks for none.
    pub capacity: Option<crate::capacity::CapacitySpec>,
    /// Every server serves HTTPS with a certificate made for the run (`tls = true`).
    pub tls: bool,
    /// The key of that certificate (`tls_key`); ECDSA P-256 unless the scenario asks for RSA.
    pub tls_key: TlsKey,
    /// Every server serves HTTP/2 and every load speaks it (`http = "2"`): by ALPN over TLS
    /// with `tls`, by prior knowledge (h2c) without. Each document's [`LoadSpec::version`] is
    /// then [`loadgen::HttpVersion::Http2`], with its `streams` per connection.
    pub http2: bool,
    /// The Docker engines named by `[[host]]` tables, in file order; the local engine is not
    /// among them (it needs no table).
    pub hosts: Vec<HostSpec>,
}

/// The key type of a TLS run's server certificate. The handshake's cost is mostly the
/// server's signature, so this decides what a new-connection load over TLS measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsKey {
    /// ECDSA over P-256 with SHA-256, as servers are deployed with today.
    #[default]
    EcdsaP256,
    /// RSA with a 2048-bit modulus, signing with SHA-256: the certificates most sites served
    /// for a decade, and several times the server's work per full handshake.
    Rsa2048,
}

impl TlsKey {
    pub const ALL: [TlsKey; 2] = [TlsKey::EcdsaP256, TlsKey::Rsa2048];

    /// The scenario's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsKey::EcdsaP256 => "ecdsa-p256",
            TlsKey::Rsa2048 => "rsa-2048",
        }
    }
}

impl fmt::Display for TlsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Docker engine other than the local one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// Unique among the scenario's hosts, `[a-z0-9-]+`.
    pub name: String,
    pub url: HostUrl,
    /// Where its servers listen and are reached.
    pub address: IpAddr,
}

/// How an engine is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostUrl {
    /// `unix:///path`: a socket on this machine (an engine here, or one forwarded here).
    Unix { path: PathBuf },
    /// `tcp://host:port` with TLS client certificates from `tls_dir` (resolved against the
    /// scenario's folder), or plain when `tls_dir` is `None` (which the scenario had to
    /// accept with `insecure = true`).
    Tcp {
        host: String,
        port: u16,
        tls_dir: Option<PathBuf>,
    },
}

impl HostUrl {
    /// Plain, unauthenticated TCP: anyone who reaches the port controls the engine.
    pub fn is_insecure(&self) -> bool {
        matches!(self, HostUrl::Tcp { tls_dir: None, .. })
    }
}

impl fmt::Display for HostUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostUrl::Unix { path } => write!(f, "unix://{}", path.display()),
            HostUrl::Tcp { host, port, .. } if host.contains(':') => {
                write!(f, "tcp://[{host}]:{port}")
            }
            HostUrl::Tcp { host, port, .. } => write!(f, "tcp://{host}:{port}"),
        }
    }
}

impl Plan {
    /// The host a server runs on; `None` for the local engine.
    pub fn host_of(&self, server: &ServerSpec) -> Option<&HostSpec> {
        server.host.map(|h| &self.hosts[h])
    }
}

/// CPUs for the two sides, disjoint so that the load generator never competes with a server.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuPlan {
    /// Sorted, without repeats.
    pub servers: Vec<usize>,
    /// Sorted, without repeats.
    pub loadgen: Vec<usize>,
    /// CPU time each server container may use, in cores; `None` for all of its cpuset.
    pub server_share: Option<f64>,
}

impl CpuPlan {
    /// The servers' CPUs as Docker's `cpuset_cpus` string, e.g. `"1"` or `"0-2,5"`.
    pub fn servers_cpuset(&self) -> String {
        crate::units::format_cpuset(&self.servers)
    }

    /// The load generator's CPUs as a cpuset string.
    pub fn loadgen_cpuset(&self) -> String {
        crate::units::format_cpuset(&self.loadgen)
    }
}

/// One server under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Unique among the scenario's servers, `[a-z0-9-]+`.
    pub name: String,
    /// Its kind's name (the folder its image is built from), or for a prebuilt image without
    /// a kind, the image's repository name.
    pub kind: String,
    /// Where its image comes from.
    pub image: ImageSource,
    /// What its kind declares (`server.toml`); `None` for a prebuilt image run without a kind,
    /// which then gets the defaults (its image's own user, `/tmp` and `/run` writable, no
    /// options).
    pub manifest: Option<Manifest>,
    /// Container memory limit in bytes.
    pub memory: u64,
    /// Fixed port, or `None` to have one chosen free at run time.
    pub port: Option<u16>,
    /// The kind's options this server has, defaults applied, in the manifest's order.
    pub options: Vec<(String, OptionValue)>,
    /// A run in which this server is unavailable still succeeds (its reason is reported).
    pub optional: bool,
    /// The engine that runs it, as an index into [`Plan::hosts`]; `None` for the local one.
    pub host: Option<usize>,
}

/// Where a server's image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// Built from this folder (a Dockerfile and its files), tagged by the folder's hash.
    Build { context: PathBuf },
    /// An existing image (local, or pulled from a reachable registry), run as it is.
    Prebuilt { image: String },
}

impl ServerSpec {
    /// The servers this one needs running, as indices into [`Plan::servers`] (always smaller
    /// than its own).
    pub fn depends_on(&self) -> impl Iterator<Item = usize> + '_ {
        self.options.iter().filter_map(|(_, v)| match v {
            OptionValue::Server(i) => Some(*i),
            _ => None,
        })
    }
}

/// The value of one of a kind's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// Another server of the scenario (by index into [`Plan::servers`]), started first; the
    /// server gets its address.
    Server(usize),
    /// A byte count.
    Size(u64),
    Integer(i64),
    Text(String),
    Bool(bool),
}

/// One URL measured on every server.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSpec {
    /// Unique among the scenario's documents, `[a-z0-9-]+`.
    pub name: String,
    /// URL path requested, starting with `/`.
    pub path: String,
    /// Where the document lives relative to the document root: the URL path without its
    /// leading `/`, with `index.html` appended when the path ends in `/` (every server's
    /// configuration serves `index.html` as the directory index).
    pub disk_path: PathBuf,
    pub source: DocumentSource,
    /// Exact length in bytes of the body every server must return.
    pub length: u64,
    /// How the document is loaded: ab's parameters, resolved from `[document.load]` over
    /// `[load]` over the defaults. Exactly one of `requests` and `duration` is set.
    pub load: LoadSpec,
}

/// Where a document's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentSource {
    /// Made by [`crate::documents`], byte for byte the same on every machine.
    Generated { kind: GeneratorKind, size: u64 },
    /// A file, its path already resolved against the scenario file's folder.
    File(PathBuf),
}

/// The document generators; see [`crate::documents`] for what each produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GeneratorKind {
    /// Exactly `Hello, World!`, 13 bytes.
    Hello,
    /// A valid HTML page padded to the exact size.
    Html,
    /// A valid, decodable PNG of the exact size.
    Png,
    /// Pseudo-random bytes.
    Blob,
}

impl GeneratorKind {
    pub const ALL: [GeneratorKind; 4] = [
        GeneratorKind::Hello,
        GeneratorKind::Html,
        GeneratorKind::Png,
        GeneratorKind::Blob,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GeneratorKind::Hello => "hello",
            GeneratorKind::Html => "html",
            GeneratorKind::Png => "png",
            GeneratorKind::Blob => "blob",
        }
    }
}

impl fmt::Display for GeneratorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
