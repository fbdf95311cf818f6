//! The words for what the load generator reports as data ([`model::Note`]), so that
//! `benchctl load`, `benchctl run` and the reports say the same thing the same way.

use model::steady::{Pattern, Shift};
use model::Note;

/// One sentence (no final full stop) a person reads under a load's numbers.
pub fn describe(note: &Note) -> String {
    match note {
        Note::PortsExhausted { connections } => format!(
            "{connections} connections failed with EADDRNOTAVAIL: the local port range is \
             exhausted (sockets in TIME_WAIT), a limit of this host, not of the server; use \
             keep-alive (-k), fewer requests, or wait between runs"
        ),
        Note::ConntrackFull { count, max } => format!(
            "the kernel's connection tracking table was full when the load ended ({count} of \
             {max} entries): the kernel drops new connections then, so connect failures and \
             timeouts are this host's, not the server's. Each connection keeps its entry for two \
             minutes after it closes; raise net.netfilter.nf_conntrack_max, use keep-alive \
             (-k), or leave time between loads"
        ),
        Note::EngineFallback { reason } => {
            format!("{reason}: the epoll engine ran this load instead of io_uring")
        }
        Note::OutOfFileDescriptors { connections, limit } => format!(
            "{connections} connections could not be opened because the load generator ran out \
             of file descriptors (its open-files limit is {limit}): a limit of the generator, not \
             of the server; raise it (ulimit -n) or lower the concurrency"
        ),
        Note::Http2Errors { connections, first } => format!(
            "{connections} HTTP/2 connections were ended by the generator, with a GOAWAY, for \
             the server's errors, and the streams open on them counted as Exceptions; the \
             first because {first}"
        ),
        Note::Quic { .. } | Note::ZeroRtt { .. } => quic(note),
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
        Note::Unsteady {
            pattern,
            requests_per_s,
            p50_us,
            steady,
        } => {
            let mut moved = Vec::new();
            if let Some(r) = requests_per_s {
                moved.push(format!(
                    "throughput {} ({:.0} to {:.0} requests/s)",
                    change(r),
                    r.before,
                    r.after
                ));
            }
            if let Some(l) = p50_us {
                moved.push(format!(
                    "median latency {} ({:.2} to {:.2} ms)",
                    change(l),
                    l.before / 1000.0,
                    l.after / 1000.0
                ));
            }
            let (when, window) = match steady {
                Some(w) if w.from_s > 0.0 => (
                    format!("over the first {}", seconds(w.from_s, " ")),
                    format!(
                        "steady from {} to {}",
                        seconds(w.from_s, " "),
                        seconds(w.to_s, " ")
                    ),
                ),
                Some(w) => (
                    format!("after {}", seconds(w.to_s, " ")),
                    format!("steady from 0 s to {}", seconds(w.to_s, " ")),
                ),
                None => (
                    "from the first half of the load to the second".to_string(),
                    "steady in neither half".to_string(),
                ),
            };
            let (kind, advice) = match (pattern, steady) {
                (Pattern::WarmUp, Some(w)) => (
                    "warm-up",
                    format!(
                        "; a warm-up of {} (--warmup, scenario key `warmup`) leaves it out of the figures",
                        seconds(w.from_s, "")
                    ),
                ),
                (Pattern::WarmUp, None) => ("warm-up, not over by the end", String::new()),
                (Pattern::Drift, _) => ("drift", String::new()),
            };
            format!("{} {when} ({kind}); {window}{advice}", moved.join(" and "))
        }
    }
}

/// "rose 40%", "fell 25%", or "rose from 0" when there was nothing before.
fn change(s: &Shift) -> String {
    let verb = if s.after >= s.before { "rose" } else { "fell" };
    if s.before > 0.0 {
        format!("{verb} {:.0}%", ((s.after / s.before - 1.0) * 100.0).abs())
    } else {
        format!("{verb} from 0")
    }
}

/// Seconds as a person writes them: "2 s", "2.5 s" (or "2s", "2.5s" with an empty `space`,
/// as a duration is written on the command line), to the millisecond.
pub fn seconds(s: f64, space: &str) -> String {
    let ms = (s * 1000.0).round() as u64;
    if ms % 1000 == 0 {
        format!("{}{space}s", ms / 1000)
    } else {
        let text = format!("{:.3}", ms as f64 / 1000.0);
        format!("{}{space}s", text.trim_end_matches('0'))
    }
}

/// The words of [`Note::Quic`] and [`Note::ZeroRtt`].
fn quic(note: &Note) -> String {
    match *note {
        Note::Quic {
            sent_packets,
            lost_packets,
            udp_drops,
            window_stalls,
        } => quic_accounting(sent_packets, lost_packets, udp_drops, window_stalls),
        Note::ZeroRtt {
            connections,
            sent,
            accepted,
            rejected,
            resent,
        } => zero_rtt(connections, sent, accepted, rejected, resent),
        _ => unreachable!("a QUIC note"),
    }
}

fn zero_rtt(connections: u64, sent: u64, accepted: u64, rejected: u64, resent: u64) -> String {
    let mut text = format!(
        "0-RTT: {sent} of the {connections} QUIC connections sent their requests with the \
         handshake's first flight (the others had no session to resume, or the server allows \
         no early data)"
    );
    if sent > 0 {
        text.push_str(&format!(
            "; the server accepted {accepted} and rejected {rejected}"
        ));
        if rejected > 0 {
            text.push_str(&format!(
                ", whose {resent} requests were sent again once the handshake was done"
            ));
        }
    }
    text
}

fn quic_accounting(sent: u64, lost: u64, udp_drops: u64, window_stalls: u64) -> String {
    let mut parts = vec![format!(
        "QUIC: {lost} of the {sent} packets the client sent were lost and sent again"
    )];
    if udp_drops > 0 {
        parts.push(format!(
            "the client's UDP receive buffers dropped {udp_drops} datagrams: the generator did \
             not read them in time, a limit of the generator, not of the server (raise \
             net.core.rmem_max, or give the generator more CPU)"
        ));
    }
    if window_stalls > 0 {
        parts.push(format!(
            "the server said {window_stalls} times that the client's flow-control windows held it up"
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::steady::Window;

    #[test]
    fn an_unsteady_load_says_what_moved_when_and_where_it_was_steady() {
        let warm = Note::Unsteady {
            pattern: Pattern::WarmUp,
            requests_per_s: Some(Shift {
                before: 6000.0,
                after: 8400.0,
            }),
            p50_us: Some(Shift {
                before: 2500.0,
                after: 1000.0,
            }),
            steady: Some(Window {
                from_s: 2.0,
                to_s: 10.0,
            }),
        };
        assert_eq!(
            describe(&warm),
            "throughput rose 40% (6000 to 8400 requests/s) and median latency fell 60% (2.50 to \
             1.00 ms) over the first 2 s (warm-up); steady from 2 s to 10 s; a warm-up of 2s \
             (--warmup, scenario key `warmup`) leaves it out of the figures"
        );
        let drift = Note::Unsteady {
            pattern: Pattern::Drift,
            requests_per_s: Some(Shift {
                before: 10000.0,
                after: 7000.0,
            }),
            p50_us: None,
            steady: Some(Window {
                from_s: 0.0,
                to_s: 6.5,
            }),
        };
        assert_eq!(
            describe(&drift),
            "throughput fell 30% (10000 to 7000 requests/s) after 6.5 s (drift); steady from 0 s \
             to 6.5 s"
        );
        let wandering = Note::Unsteady {
            pattern: Pattern::Drift,
            requests_per_s: None,
            p50_us: Some(Shift {
                before: 1000.0,
                after: 3000.0,
            }),
            steady: None,
        };
        assert_eq!(
            describe(&wandering),
            "median latency rose 200% (1.00 to 3.00 ms) from the first half of the load to the \
             second (drift); steady in neither half"
        );
    }
}
