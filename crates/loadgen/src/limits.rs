//! The generator's own limits: file descriptors and local ports. When they run out, the
//! connections that fail are the generator's failures, not the server's, and must be reported
//! as such (see [`crate::stats::FailureKind::Generator`]).

use crate::config::ConfigError;
use std::io;

/// A resource of the generator's host that a connection attempt found exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalLimit {
    /// EMFILE (this process's open-files limit), ENFILE (the system's), or ENOBUFS/ENOMEM (the
    /// kernel could not allocate a socket).
    FileDescriptors,
    /// EADDRNOTAVAIL: no local port is free for another connection to the same address.
    Ports,
}

/// Whose failure a failed `socket`/`connect` is: `Some` when it is the generator's own.
pub fn local_limit(e: &io::Error) -> Option<LocalLimit> {
    match e.raw_os_error()? {
        libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM => {
            Some(LocalLimit::FileDescriptors)
        }
        libc::EADDRNOTAVAIL => Some(LocalLimit::Ports),
        _ => None,
    }
}

/// This process's open-files limit: (soft, hard).
pub fn open_files_limit() -> (u64, u64) {
    // No limit (RLIM_INFINITY) is u64::MAX, as the kernel writes it.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    (
        lim.current.unwrap_or(u64::MAX),
        lim.maximum.unwrap_or(u64::MAX),
    )
}

/// File descriptors a run needs: one per connection, a poller and a timer per worker thread,
/// and room for what the process already holds (standard streams, the Docker connection...).
pub fn needed_open_files(concurrency: u32, threads: usize) -> u64 {
    budget(concurrency, threads, open_now())
}

fn budget(concurrency: u32, threads: usize, open: u64) -> u64 {
    u64::from(concurrency) + 4 * threads as u64 + open + 16
}

/// Descriptors this process has open now.
fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64)
}

/// Makes sure `concurrency` connections fit under the open-files limit, raising the soft limit
/// up to the hard one when needed (as a shell's `ulimit -n` would); an error that says so when
/// even the hard limit is too low, rather than thousands of failed connections that look like
/// the server's.
pub fn ensure_open_files(concurrency: u32, threads: usize) -> Result<(), ConfigError> {
    let need = needed_open_files(concurrency, threads);
    let (soft, hard) = open_files_limit();
    if need <= soft {
        return Ok(());
    }
    if need <= hard {
        // Lowering nothing, raising the soft limit within the hard one, which any process may
        // do (a hard limit of u64::MAX stays RLIM_INFINITY).
        let lim = rustix::process::Rlimit {
            current: Some(need),
            maximum: Some(hard),
        };
        if rustix::process::setrlimit(rustix::process::Resource::Nofile, lim).is_ok() {
            return Ok(());
        }
    }
    Err(ConfigError::Option(format!(
        "concurrency {concurrency} needs about {need} file descriptors, but this process may open \
         only {} (open-files limit: soft {soft}, hard {hard}); raise the limit (ulimit -n) or \
         lower the concurrency",
        soft.max(hard.min(need))
    )))
}

/// The kernel's connection tracking table (netfilter's `nf_conntrack`, loaded wherever Docker
/// manages iptables): entries in use and the most it holds. Every connection, loopback ones
/// included, takes an entry that lasts until two minutes after the connection closed
/// (`nf_conntrack_tcp_timeout_time_wait`); when the table is full the kernel drops the packets
/// of new connections, which a load then sees as connect timeouts that are this host's, not the
/// server's. `None` where the table does not exist (the module is not loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conntrack {
    pub count: u64,
    pub max: u64,
}

impl Conntrack {
    /// The table's state now.
    pub fn read() -> Option<Conntrack> {
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/proc/sys/net/netfilter/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let max = read("nf_conntrack_max")?;
        let count = read("nf_conntrack_count")?;
        (max > 0).then_some(Conntrack { count, max })
    }

    /// The table is full, or too nearly so to take a burst of new connections: above 99%.
    pub fn full(&self) -> bool {
        self.count.saturating_mul(100) >= self.max.saturating_mul(99)
    }

    /// Whether `new` more entries fit below 95% of the table.
    pub fn has_room_for(&self, new: u64) -> bool {
        self.count.saturating_add(new).saturating_mul(100) <= self.max.saturating_mul(95)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_is_told_apart_from_the_servers_failures() {
        let e = |code| io::Error::from_raw_os_error(code);
        assert_eq!(
            local_limit(&e(libc::EMFILE)),
            Some(LocalLimit::FileDescriptors)
        );
        assert_eq!(
            local_limit(&e(libc::ENFILE)),
            Some(LocalLimit::FileDescriptors)
        );
        assert_eq!(
            local_limit(&e(libc::ENOBUFS)),
            Some(LocalLimit::FileDescriptors)
        );
        assert_eq!(
            local_limit(&e(libc::EADDRNOTAVAIL)),
            Some(LocalLimit::Ports)
        );
        assert_eq!(local_limit(&e(libc::ECONNREFUSED)), None);
        assert_eq!(local_limit(&e(libc::ECONNRESET)), None);
        assert_eq!(local_limit(&e(libc::ETIMEDOUT)), None);
        assert_eq!(local_limit(&io::Error::other("x")), None);
    }

    #[test]
    fn the_budget_counts_connections_threads_and_what_is_open() {
        assert_eq!(budget(1000, 2, 5), 1000 + 8 + 5 + 16);
        assert!(needed_open_files(0, 0) >= 16 + 3);
    }

    #[test]
    fn a_full_table_and_room_in_it() {
        let t = |count, max| Conntrack { count, max };
        assert!(t(262_142, 262_144).full());
        assert!(t(259_523, 262_144).full());
        assert!(!t(259_000, 262_144).full());
        assert!(t(0, 1000).has_room_for(950));
        assert!(!t(0, 1000).has_room_for(951));
        assert!(!t(900, 1000).has_room_for(100));
        assert!(!t(u64::MAX, 1000).has_room_for(1));
    }
}
