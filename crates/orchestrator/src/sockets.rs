//! The TCP connections a container holds open, counted in its network namespace's socket
//! tables as its main process sees them (`/proc/PID/net/tcp` and `tcp6` on this machine): those
//! established, being accepted, or closed by the client and not yet by the server. A server
//! past its capacity shows its queue here before its latency says so.

/// TCP states counted as open, as the kernel's tables write them (hexadecimal): ESTABLISHED,
/// SYN_RECV and CLOSE_WAIT. LISTEN, TIME_WAIT and the closing states hold no client.
const OPEN_STATES: [&str; 3] = ["01", "03", "08"];

/// Where a local container's socket tables are read.
#[derive(Debug, Clone)]
pub(crate) struct Sockets {
    pid: u32,
}

impl Sockets {
    /// The tables of the network namespace of `pid` (a container's main process in this
    /// machine's process namespace); `None` when they cannot be read.
    pub(crate) fn of(pid: u32) -> Option<Sockets> {
        let s = Sockets { pid };
        (pid != 0 && s.open().is_some()).then_some(s)
    }

    /// Connections open now; `None` once the tables are gone (the container stopped).
    pub(crate) fn open(&self) -> Option<u64> {
        let v4 = std::fs::read_to_string(format!("/proc/{}/net/tcp", self.pid)).ok()?;
        // A kernel without IPv6 has no tcp6 table.
        let v6 =
            std::fs::read_to_string(format!("/proc/{}/net/tcp6", self.pid)).unwrap_or_default();
        Some(count_open(&v4) + count_open(&v6))
    }
}

/// The open connections of one table: its lines after the heading whose fourth field (`st`)
/// is one of [`OPEN_STATES`].
fn count_open(table: &str) -> u64 {
    table
        .lines()
        .skip(1)
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|st| OPEN_STATES.contains(&st))
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_with_a_client_count() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:A1B3 03 00000000:00000000 02:000003E8 00000000     0        0 0 0 0000000000000000
   3: 0100007F:1F90 0100007F:A1B4 08 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:1F90 0100007F:A1B5 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
   5: 0100007F:1F90 0100007F:A1B6 04 00000000:00000001 01:00000014 00000000     0        0 0 3 0000000000000000
";
        // Established, being accepted, closed by the client: 3; the listener, TIME_WAIT and
        // FIN_WAIT1 are not.
        assert_eq!(count_open(table), 3);
        assert_eq!(count_open(""), 0);
        assert_eq!(count_open(table.lines().next().unwrap()), 0);
    }

    #[test]
    fn a_process_that_is_not_there_has_no_tables() {
        assert!(Sockets::of(0).is_none());
        assert!(Sockets::of(u32::MAX).is_none());
    }
}
