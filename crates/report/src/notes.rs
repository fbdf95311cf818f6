//! The words for what the load generator reports as data ([`loadgen::Note`]), so that
//! `benchctl load`, `benchctl run` and the reports say the same thing the same way.

use loadgen::Note;

/// One sentence (no final full stop) a person reads under a load's numbers.
pub fn describe(note: &Note) -> String {
    match note {
        Note::PortsExhausted { connections } => format!(
            "{connections} connections failed with EADDRNOTAVAIL: the local port range is \
             exhausted (sockets in TIME_WAIT), a limit of this host, not of the server; use \
             keep-alive (-k), fewer requests, or wait between runs"
        ),
        Note::OutOfFileDescriptors { connections, limit } => format!(
            "{connections} connections could not be opened because the load generator ran out \
             of file descriptors (its open-files limit is {limit}): a limit of the generator, not \
             of the server; raise it (ulimit -n) or lower the concurrency"
        ),
        Note::GeneratorBound {
            read_delay_mean_us,
            total_mean_us,
        } => format!(
            "responses waited {:.2} ms on average before the generator read them, longer than \
             their Total ({:.2} ms): the generator, not the server, was the bottleneck. Connection \
             Times leave that wait out; --user-timestamps counts it, as ab does",
            read_delay_mean_us / 1000.0,
            total_mean_us / 1000.0
        ),
    }
}
