//! HTTP/1.1 pipelining (`--pipeline N`), as wrk's pipeline script and TFB's plaintext test
//! use it: a keep-alive connection writes N requests back to back in one write, then reads
//! the N responses, which HTTP/1.1 returns in the order of the requests, and only then writes
//! the next batch.
//!
//! What a pipelined request's times mean: every request of a batch left in the same write, so
//! each is timed from the batch's start (its connect, on a new connection, included: the
//! whole batch waited for it) to the arrival of its own response's last byte; its Waiting is
//! from the batch's last byte written to its own response's first byte. The last response of
//! a batch is therefore timed as wrk times the batch (wrk records one latency per batch, at its
//! last response); the earlier ones are not made to wait for the later ones. Every request is
//! one sample, so ab's tables, the JSON and the histograms keep their meaning per request.
//!
//! A batch takes one ticket per request, so `-n` stays exact (the last batch of a load may be
//! shorter). When the server closes the connection with requests of the batch unanswered
//! (`Connection: close` mid-batch, a reset, a timeout), each of those is counted as failed,
//! by the kind of the failure; a connection that turns out stale before any response of its
//! batch is retried once with the whole batch, as a single request would be.

/// Most requests one batch may hold.
pub const MAX_DEPTH: u32 = 1024;

/// How many requests a slot's next batch holds: 1 without pipelining (a `depth` of 1), else up
/// to `depth`, taking one ticket per request beyond the first (which the caller took) while
/// measuring.
pub(crate) fn batch(depth: u32, measured: bool, mut take_ticket: impl FnMut() -> bool) -> u32 {
    let depth = depth.max(1);
    let mut n = 1;
    while n < depth && (!measured || take_ticket()) {
        n += 1;
    }
    n
}

/// Whether the next response of a batch can follow the one just completed on the same
/// connection: the server kept it open.
pub(crate) fn next_response(keep_alive: bool, server_closed: bool) -> bool {
    keep_alive && !server_closed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_takes_a_ticket_per_request_and_ends_with_them() {
        assert_eq!(batch(1, true, || panic!("no ticket without pipelining")), 1);
        let mut left = 20;
        let mut take = || {
            if left > 0 {
                left -= 1;
                true
            } else {
                false
            }
        };
        assert_eq!(batch(8, true, &mut take), 8);
        assert_eq!(batch(8, true, &mut take), 8);
        // 20 - 14 = 6 tickets left: a batch of the first request and 6 more.
        assert_eq!(batch(8, true, &mut take), 7);
        // Warm-up requests take no tickets.
        assert_eq!(batch(8, false, || panic!("no ticket in the warm-up")), 8);
        assert!(next_response(true, false));
        assert!(!next_response(false, false) && !next_response(true, true));
    }
}
