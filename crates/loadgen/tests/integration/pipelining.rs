//! `--pipeline N` against the test server (127.0.0.1, port 0), which answers a connection's
//! requests one after another as it reads them: every request is answered once and recorded
//! once, on as many connections as asked, whatever the framing of the responses; a server that
//! closes the connection mid-batch has the requests it left unanswered counted as failed, and
//! nothing hangs.

use crate::support;

use loadgen::{HttpVersion, LoadConfig, LoadSpec, Measurement, Target};
use std::time::Duration;
use support::{run_within, TestServer, HELLO};

const HANG: Duration = Duration::from_secs(60);

fn pipelined(url: &str, n: u64, c: u32, depth: u32) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.requests = Some(n);
    cfg.load.concurrency = c;
    cfg.load.timeout = Duration::from_secs(5);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    cfg.pipeline = depth;
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    run_within(HANG, cfg).expect("the load run succeeds")
}

#[test]
fn every_pipelined_request_is_answered_and_recorded_once() {
    for (path, doc) in [
        ("/cl", HELLO.len() as u64),
        ("/chunked", 13),
        ("/tail?ms=0", support::TAIL_LEN),
    ] {
        let s = TestServer::start();
        // 997 is no multiple of 16: the last batch of each connection is shorter.
        let n = if path.starts_with("/tail") { 97 } else { 997 };
        let m = run_ok(pipelined(&s.url(path), n, 3, 16));
        assert_eq!(m.complete(), n, "{path}");
        assert_eq!(m.failed(), 0, "{path}: {:?}", m.rec.failures);
        assert_eq!(m.rec.keep_alive_requests, n, "{path}");
        assert_eq!(m.rec.body_bytes, n * doc, "{path}");
        assert_eq!(m.rec.total_bytes, s.bytes_sent(), "{path}");
        assert_eq!(s.accepted(), 3, "{path}: one connection per -c");
        assert_eq!(s.requests(), n, "{path}: no request sent twice");
        let samples = m.rec.samples.as_ref().expect("samples");
        assert_eq!(samples.len() as u64, n, "{path}");
        assert!(samples.iter().all(|s| s.waiting <= s.total), "{path}");
    }
}

#[test]
fn a_batch_was_written_at_once_and_its_responses_came_in_order() {
    // Each response waits 20 ms in the server, one after another: the k-th response of a
    // batch of 4 arrives about k * 20 ms after the batch left, and is timed so.
    let s = TestServer::start();
    let m = run_ok(pipelined(&s.url("/slow?ms=20"), 8, 1, 4));
    assert_eq!(m.complete(), 8);
    assert_eq!(m.failed(), 0, "{:?}", m.rec.failures);
    assert_eq!(s.accepted(), 1);
    let mut totals: Vec<u32> = m
        .rec
        .samples
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.total)
        .collect();
    totals.sort_unstable();
    // Two of each rank: the first of each batch about 20 ms, the last about 80 ms.
    for (k, pair) in totals.chunks(2).enumerate() {
        let floor = (k as u32 + 1) * 20_000;
        assert!(
            pair.iter().all(|&t| t >= floor),
            "rank {k}: {pair:?} (all: {totals:?})"
        );
    }
}

#[test]
fn a_server_closing_mid_batch_fails_the_requests_it_left_unanswered() {
    // /nokeepalive answers the first request of each batch with Connection: close and closes.
    let s = TestServer::start();
    let m = run_ok(pipelined(&s.url("/nokeepalive"), 12, 1, 4));
    assert_eq!(m.complete(), 12, "every request ended, answered or failed");
    assert_eq!(
        m.rec.samples.as_ref().unwrap().len(),
        3,
        "one answer per batch"
    );
    assert_eq!(m.rec.failures.receive, 9, "{:?}", m.rec.failures);
    assert_eq!(s.accepted(), 3);
}

#[test]
fn pipelining_needs_keep_alive_http11_and_no_rate() {
    let url = "http://127.0.0.1:9/";
    let mut cfg = pipelined(url, 10, 1, 4);
    cfg.load.keep_alive = false;
    assert!(cfg.validate().unwrap_err().to_string().contains("-k"));
    let mut cfg = pipelined(url, 10, 1, 4);
    cfg.load.version = HttpVersion::Http10;
    assert!(cfg
        .validate()
        .unwrap_err()
        .to_string()
        .contains("--http1.1"));
    let mut cfg = pipelined(url, 10, 1, 4);
    cfg.load.rate = Some(100.0);
    assert!(cfg.validate().unwrap_err().to_string().contains("--rate"));
    let cfg = pipelined(url, 10, 1, 0);
    assert!(cfg
        .validate()
        .unwrap_err()
        .to_string()
        .contains("out of range"));
}
