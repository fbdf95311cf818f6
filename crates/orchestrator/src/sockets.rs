//! The TCP sockets a container holds, as its network namespace counts them
//! (`/proc/PID/net/sockstat` and `sockstat6` on this machine, read through its main process):
//! its connections, open or closing, and its listening sockets; not those in TIME_WAIT. A
//! server past its capacity shows its queue of connections here before its latency says so.
//!
//! The counts are the kernel's running totals, read at once however many sockets there are;
//! the socket tables themselves (`net/tcp`) would be walked line by line, and after a load
//! with a new connection per request they hold hundreds of thousands of TIME_WAIT entries.

/// Where a local container's socket counts are read.
#[derive(Debug, Clone)]
pub(crate) struct Sockets {
    pid: u32,
}

impl Sockets {
    /// The counts of the network namespace of `pid` (a container's main process in this
    /// machine's process namespace); `None` when they cannot be read.
    pub(crate) fn of(pid: u32) -> Option<Sockets> {
        let s = Sockets { pid };
        (pid != 0 && s.open().is_some()).then_some(s)
    }

    /// TCP sockets in use now, IPv4 and IPv6; `None` once the counts are gone (the container
    /// stopped).
    pub(crate) fn open(&self) -> Option<u64> {
        let v4 = std::fs::read_to_string(format!("/proc/{}/net/sockstat", self.pid)).ok()?;
        // A kernel without IPv6 has no sockstat6.
        let v6 = std::fs::read_to_string(format!("/proc/{}/net/sockstat6", self.pid))
            .unwrap_or_default();
        Some(in_use(&v4, "TCP:")? + in_use(&v6, "TCP6:").unwrap_or(0))
    }
}

/// The `inuse` count of the line of `protocol` ("TCP:", "TCP6:") in a sockstat file.
fn in_use(sockstat: &str, protocol: &str) -> Option<u64> {
    let line = sockstat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(protocol))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "inuse")?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tcp_lines_inuse_count_is_read() {
        let v4 = "sockets: used 163
TCP: inuse 12 orphan 3 tw 261880 alloc 15 mem 40
UDP: inuse 1 mem 2
UDPLITE: inuse 0
RAW: inuse 0
FRAG: inuse 0 memory 0
";
        let v6 = "TCP6: inuse 7
UDP6: inuse 0
UDPLITE6: inuse 0
RAW6: inuse 0
FRAG6: inuse 0 memory 0
";
        assert_eq!(in_use(v4, "TCP:"), Some(12));
        assert_eq!(in_use(v6, "TCP6:"), Some(7));
        // UDP's line is not TCP's, and a file without the line has no count.
        assert_eq!(in_use("UDP: inuse 4 mem 1\n", "TCP:"), None);
        assert_eq!(in_use("", "TCP6:"), None);
        assert_eq!(in_use("TCP: inuse many\n", "TCP:"), None);
    }

    #[test]
    fn a_process_that_is_not_there_has_no_counts() {
        assert!(Sockets::of(0).is_none());
        assert!(Sockets::of(u32::MAX).is_none());
        // This process's own namespace has them.
        assert!(Sockets::of(std::process::id()).is_some());
    }
}
