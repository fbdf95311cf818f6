//! What a server container is allowed: its user, capabilities, writable mounts and process
//! limit.

/// Least privilege for a server container. Every capability is dropped and
/// `no-new-privileges` set, always; what a server needs back is declared here (from its
/// manifest, `docker/<server>/server.toml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// `UID:GID` (or a user name) the container's processes run as; `None` keeps the image's
    /// `USER`.
    pub user: Option<String>,
    /// Capabilities added back after all are dropped (`NET_BIND_SERVICE`, ...).
    pub cap_add: Vec<String>,
    /// Mount the image's root filesystem read-only: a server writes only to its tmpfs mounts.
    pub read_only: bool,
    /// Writable in-memory mounts.
    pub tmpfs: Vec<Tmpfs>,
    /// Most processes and threads the container may have at once.
    pub pids_limit: i64,
}

/// A tmpfs mount, `nosuid,nodev` always.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tmpfs {
    /// Absolute path inside the container.
    pub path: String,
    pub size_bytes: u64,
    /// Programs (or shared objects, as Varnish compiles its VCL into) may be run from it.
    pub exec: bool,
}

impl Tmpfs {
    /// A `noexec` tmpfs of `size_bytes` at `path`.
    pub fn new(path: &str, size_bytes: u64) -> Tmpfs {
        Tmpfs {
            path: path.to_string(),
            size_bytes,
            exec: false,
        }
    }

    pub(super) fn options(&self) -> String {
        format!(
            "rw,nosuid,nodev,{},size={}",
            if self.exec { "exec" } else { "noexec" },
            self.size_bytes
        )
    }
}

/// The process and thread limit when a server declares none.
pub const DEFAULT_PIDS_LIMIT: i64 = 4096;
impl Default for Confinement {
    /// The image's user, no capabilities, a read-only root with `/tmp` (64 MiB) and `/run`
    /// (16 MiB) writable, [`DEFAULT_PIDS_LIMIT`].
    fn default() -> Self {
        Confinement {
            user: None,
            cap_add: Vec::new(),
            read_only: true,
            tmpfs: vec![Tmpfs::new("/tmp", 64 << 20), Tmpfs::new("/run", 16 << 20)],
            pids_limit: DEFAULT_PIDS_LIMIT,
        }
    }
}
