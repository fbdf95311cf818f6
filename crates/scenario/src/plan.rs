//! The validated, fully defaulted description of a benchmark run. Everything downstream
//! (orchestrator, load generator, reports) reads this and never the TOML, so no default or
//! check lives in two places.

pub use crate::units::Coalesce;
pub use loadgen::LoadSpec;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A scenario after validation: every default resolved, every reference checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// In dependency order: a Varnish's backend always comes before it.
    pub servers: Vec<ServerSpec>,
    /// In file order.
    pub documents: Vec<DocumentSpec>,
}

/// CPUs for the two sides, disjoint so that the load generator never competes with a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuPlan {
    /// Sorted, without repeats.
    pub servers: Vec<usize>,
    /// Sorted, without repeats.
    pub loadgen: Vec<usize>,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerSpec {
    /// Unique among the scenario's servers, `[a-z0-9-]+`.
    pub name: String,
    pub kind: ServerKind,
    /// Container memory limit in bytes.
    pub memory: u64,
    /// Fixed port, or `None` to have one chosen free at run time.
    pub port: Option<u16>,
    /// Varnish only (always set there): the server it forwards to.
    pub backend: Option<BackendRef>,
    /// Varnish only (always set there): malloc storage in bytes, larger than every document.
    pub storage: Option<u64>,
    /// A run in which this server is unavailable still succeeds (its reason is reported).
    pub optional: bool,
}

impl ServerSpec {
    /// The kind-specific options this server sets, by the names its manifest declares them
    /// under (`docker/<kind>/server.toml`, `[options.<name>]`).
    pub fn options(&self) -> Vec<(&'static str, OptionValue)> {
        let mut out = Vec::new();
        if let Some(b) = &self.backend {
            out.push(("backend", OptionValue::Server(b.index)));
        }
        if let Some(s) = self.storage {
            out.push(("storage", OptionValue::Size(s)));
        }
        out
    }

    /// The servers this one needs running (its backends), as indices into [`Plan::servers`].
    pub fn depends_on(&self) -> impl Iterator<Item = usize> + '_ {
        self.backend.iter().map(|b| b.index)
    }
}

/// The value of one kind-specific option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OptionValue {
    /// Another server of the scenario (by index into [`Plan::servers`]), started first; the
    /// server gets its address.
    Server(usize),
    /// A byte count.
    Size(u64),
}

/// A reference from a Varnish to its backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendRef {
    /// Index into [`Plan::servers`]; always smaller than the Varnish's own index.
    pub index: usize,
    pub name: String,
}

/// The servers benchctl knows how to build and run; each has a `docker/<as_str()>/` folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    Nginx,
    Apache,
    Varnish,
    Tornado,
    Gatling,
    Cherokee,
}

impl ServerKind {
    pub const ALL: [ServerKind; 6] = [
        ServerKind::Nginx,
        ServerKind::Apache,
        ServerKind::Varnish,
        ServerKind::Tornado,
        ServerKind::Gatling,
        ServerKind::Cherokee,
    ];

    /// The name used in scenario files and as the `docker/` folder name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Apache => "apache",
            ServerKind::Varnish => "varnish",
            ServerKind::Tornado => "tornado",
            ServerKind::Gatling => "gatling",
            ServerKind::Cherokee => "cherokee",
        }
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ServerKind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        ServerKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or(())
    }
}

/// One URL measured on every server.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DocumentSource {
    /// Made by [`crate::documents`], byte for byte the same on every machine.
    Generated { kind: GeneratorKind, size: u64 },
    /// A file, its path already resolved against the scenario file's folder.
    File(PathBuf),
}

/// The document generators; see [`crate::documents`] for what each produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
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
