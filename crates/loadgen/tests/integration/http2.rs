//! HTTP/2 against real servers started by the test on 127.0.0.1 port 0: the `h2` crate's
//! server in cleartext (prior knowledge) and over TLS with ALPN, a hand-written server
//! that resets streams or sends GOAWAY mid-run, and a hostile one that floods the client.
//! Counts are exact, streams run side by side on a connection up to the smaller of `--streams`
//! and the server's limit, bodies of every size arrive whole through flow control, failures
//! are counted by kind without a hang, and a flood ends its connection at once.
//!
//! Every run is bounded in requests and wrapped in a deadline.

#[path = "support/h2srv.rs"]
pub(crate) mod h2srv;
use crate::support;

use h2srv::{Flood, FloodServer, H2Server, Mode, Rude, RudeServer};
use loadgen::{HttpVersion, LoadConfig, LoadError, Measurement, Note, Timer};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};
use support::{config, run_within};

const HANG: Duration = Duration::from_secs(30);

fn h2(url: &str, n: u64, c: u32, streams: u32) -> LoadConfig {
    let mut cfg = config(url, n, c);
    cfg.load.version = HttpVersion::Http2;
    cfg.load.streams = streams;
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    run_within(HANG, cfg).expect("the load run succeeds")
}

fn assert_clean(m: &Measurement, n: u64) {
    assert_eq!(m.complete(), n);
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.failures.write, 0);
    assert_eq!(m.rec.non_2xx, 0);
    for t in [Timer::Connect, Timer::Waiting, Timer::Total] {
        assert_eq!(m.rec.hist.get(t).len(), n, "{t:?} histogram count");
    }
    assert_eq!(m.rec.samples.as_ref().map(Vec::len), Some(n as usize));
}

#[test]
fn a_constant_rate_is_held_over_streams() {
    let s = H2Server::start(Mode::H2c, 100);
    let cfg = support::paced(
        h2(&s.url("http", "/"), 1, 2, 4),
        400.0,
        Duration::from_secs(2),
    );
    support::assert_rate_held(&run_ok(cfg), 400.0);
}

#[test]
fn at_a_rate_the_server_cannot_keep_waiting_is_counted_from_the_send_time_due() {
    // 200 ms a request and 2 streams on one connection: 10 requests/s at most, where 50 are
    // asked for.
    let s = H2Server::start(Mode::H2c, 100);
    let cfg = support::paced(
        h2(&s.url("http", "/slow?ms=200"), 1, 1, 2),
        50.0,
        Duration::from_secs(2),
    );
    support::assert_waiting_counted_from_due(&run_ok(cfg));
}

#[test]
fn h2c_counts_are_exact_and_streams_run_side_by_side() {
    let s = H2Server::start(Mode::H2c, 100);
    let m = run_ok(h2(&s.url("http", "/slow?ms=20"), 400, 2, 8));
    assert_clean(&m, 400);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.server.software, "h2-test");
    assert_eq!(m.rec.body_bytes, 400 * 13);
    assert_eq!(m.rec.keep_alive_requests, 400);
    assert_eq!(s.counters.requests.load(SeqCst), 400);
    assert_eq!(s.counters.accepted.load(SeqCst), 2, "one connection each");
    assert_eq!(
        s.counters.peak_streams.load(SeqCst),
        8,
        "the server saw 8 streams in progress at once on a connection"
    );
    assert!(m.settings.keep_alive);
    assert_eq!(m.settings.streams, Some(8));
    // Only the first stream on each connection waited for it to be made.
    let connects = m
        .rec
        .samples
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.connect > 0)
        .count();
    assert!(connects <= 2, "{connects} samples with a connect time");
}

#[test]
fn the_servers_stream_limit_caps_the_streams() {
    let s = H2Server::start(Mode::H2c, 3);
    let m = run_ok(h2(&s.url("http", "/slow?ms=20"), 120, 1, 16));
    assert_clean(&m, 120);
    assert_eq!(s.counters.peak_streams.load(SeqCst), 3);
}

#[test]
fn tls_by_alpn_with_bodies_larger_than_the_default_window() {
    let s = H2Server::start(Mode::Tls, 100);
    let len = 200_000;
    let m = run_ok(h2(&s.url("https", &format!("/bytes/{len}")), 60, 2, 4));
    assert_clean(&m, 60);
    assert_eq!(m.server.document_length, len);
    assert_eq!(m.rec.body_bytes, 60 * len);
    assert_eq!(s.counters.accepted.load(SeqCst), 2);
}

#[test]
fn bodies_of_every_size_arrive_whole() {
    let s = H2Server::start(Mode::H2c, 100);
    for len in [
        0u64, 1, 16_383, 16_384, 16_385, 65_535, 65_536, 70_000, 1_000_000,
    ] {
        let m = run_ok(h2(&s.url("http", &format!("/bytes/{len}")), 24, 2, 3));
        assert_clean(&m, 24);
        assert_eq!(m.rec.body_bytes, 24 * len, "body of {len}");
        assert_eq!(m.server.document_length, len);
        assert!(m.rec.total_bytes > m.rec.body_bytes);
    }
}

#[test]
fn request_bodies_respect_the_servers_windows() {
    let s = H2Server::start(Mode::H2c, 100);
    let mut cfg = h2(&s.url("http", "/"), 12, 1, 4);
    let body: Vec<u8> = (0..150_000u32).map(|i| i as u8).collect();
    cfg.body = Some(body);
    cfg.load.method = loadgen::Method::Post;
    let m = run_ok(cfg);
    assert_clean(&m, 12);
    assert_eq!(s.counters.body_bytes.load(SeqCst), 12 * 150_000);
}

#[test]
fn request_bodies_beyond_the_output_limit_go_out_whole() {
    // Windows that take every body at once: the client queues no more than its output limit
    // (64 KiB) at a time, and carries on as the socket takes it.
    let s = H2Server::start_with_window(Mode::H2c, 100, Some(16 << 20));
    let mut cfg = h2(&s.url("http", "/"), 12, 1, 4);
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    cfg.body = Some(body);
    cfg.load.method = loadgen::Method::Post;
    let m = run_ok(cfg);
    assert_clean(&m, 12);
    assert_eq!(s.counters.body_bytes.load(SeqCst), 12 * 1_000_000);
}

#[test]
fn a_server_that_does_not_select_h2_is_a_clear_error() {
    // One that refuses the handshake for want of a protocol in common, one that completes it
    // without choosing any.
    for mode in [Mode::TlsHttp1Only, Mode::TlsNoAlpn] {
        let s = H2Server::start(mode, 100);
        let e = run_within(HANG, h2(&s.url("https", "/"), 20, 1, 1)).unwrap_err();
        assert!(matches!(e, LoadError::Http2 { .. }), "{mode:?}: {e}");
        assert!(e.to_string().contains("ALPN"), "{mode:?}: {e}");
    }
}

#[test]
fn an_http1_server_is_a_clear_error_for_h2c() {
    let s = support::TestServer::start();
    let e = run_within(HANG, h2(&s.url("/cl"), 20, 1, 1)).unwrap_err();
    assert!(matches!(e, LoadError::Http2 { .. }), "{e}");
    assert!(e.to_string().contains("prior knowledge (h2c)"), "{e}");
}

#[test]
fn reset_streams_are_counted_and_the_load_carries_on() {
    let s = RudeServer::start(Rude::ResetEveryThird);
    let m = run_ok(h2(&s.url(), 300, 1, 10));
    let reset = s.reset.load(SeqCst);
    assert_eq!(m.complete(), 300);
    assert!(reset >= 99, "the server reset {reset} streams");
    assert_eq!(m.rec.failures.reset, reset);
    assert_eq!(m.failed(), reset, "{:?}", m.rec.failures);
    assert_eq!(s.answered.load(SeqCst) + reset, 300);
    assert_eq!(m.rec.hist.get(Timer::Total).len(), 300 - reset);
    assert_eq!(
        s.accepted.load(SeqCst),
        1,
        "a reset stream leaves its connection up"
    );
}

#[test]
fn goaway_refuses_streams_counted_and_new_connections_carry_the_load() {
    let s = RudeServer::start(Rude::GoAwayAfter(40));
    let started = Instant::now();
    let m = run_ok(h2(&s.url(), 400, 2, 10));
    assert!(started.elapsed() < Duration::from_secs(15));
    let answered = s.answered.load(SeqCst);
    assert_eq!(m.complete(), 400);
    let (goaways, accepted) = (s.goaways.load(SeqCst), s.accepted.load(SeqCst));
    // Each connection answers 40 streams, then says GOAWAY: the load needs several.
    assert!(goaways >= 5, "{goaways} GOAWAYs");
    assert!(accepted > goaways, "a new connection after each GOAWAY");
    assert!(answered <= 40 * accepted);
    assert!(m.rec.failures.goaway > 0);
    assert_eq!(
        m.failed(),
        m.rec.failures.goaway,
        "only GOAWAY failures: {:?}",
        m.rec.failures
    );
    assert_eq!(answered + m.rec.failures.goaway, 400);
    assert_eq!(m.rec.hist.get(Timer::Total).len(), answered);
}

#[test]
fn a_stream_that_is_never_answered_times_out() {
    let s = H2Server::start(Mode::H2c, 100);
    let mut cfg = h2(&s.url("http", "/stall"), 6, 1, 3);
    cfg.load.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let m = run_ok(cfg);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(m.complete(), 6);
    assert_eq!(m.rec.failures.timeout, 6, "{:?}", m.rec.failures);
}

#[test]
fn options_http2_cannot_take_are_refused() {
    let url = "http://127.0.0.1:9/";
    let e = |cfg: LoadConfig| cfg.validate().unwrap_err().to_string();
    let mut cfg = config(url, 10, 1);
    cfg.load.streams = 4;
    assert!(e(cfg).contains("needs HTTP/2"));
    let mut cfg = h2(url, 10, 1, 1);
    cfg.pipeline = 4;
    cfg.load.keep_alive = true;
    assert!(e(cfg).contains("--pipeline"));
    // A constant rate is one it takes.
    let mut cfg = h2(url, 10, 1, 1);
    cfg.load.rate = Some(100.0);
    assert!(cfg.validate().is_ok());
    let mut cfg = h2(url, 10, 1, 1);
    cfg.headers.push(("Connection".into(), "close".into()));
    assert!(e(cfg).contains("HTTP/2 forbids"));
    assert!(e(h2(url, 10, 1, 0)).contains("out of range"));
    assert!(h2(url, 10, 1, 100).validate().is_ok());
}

/// The reason the run gives for the first HTTP/2 connection it ended for the server's errors.
fn h2_error(m: &Measurement) -> String {
    m.notes
        .iter()
        .find_map(|n| match n {
            Note::Http2Errors { first, .. } => Some(first.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no note of an HTTP/2 error: {:?}", m.notes))
}

/// Waits up to 3 s for `done`.
fn soon(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while !done() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

#[test]
fn a_header_block_that_never_ends_ends_its_connection() {
    // CONTINUATION frames that grow the block past its size limit, and empty ones that only
    // add to their number.
    for (flood, why) in [
        (
            Flood::Continuation(16_384),
            "header block larger than 64 KiB",
        ),
        (Flood::Continuation(0), "more than 64 CONTINUATION frames"),
    ] {
        let s = FloodServer::start(flood);
        let mut cfg = h2(&s.url(), 1, 1, 1);
        cfg.load.timeout = Duration::from_secs(10);
        let started = Instant::now();
        let m = run_ok(cfg);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "{flood:?}: took {took:?}");
        assert_eq!(m.complete(), 1);
        assert_eq!(
            m.rec.failures.exception, 1,
            "{flood:?}: {:?}",
            m.rec.failures
        );
        assert_eq!(m.failed(), 1, "{flood:?}: {:?}", m.rec.failures);
        let first = h2_error(&m);
        assert!(first.contains(why), "{flood:?}: {first}");
        assert!(first.contains("ENHANCE_YOUR_CALM"), "{flood:?}: {first}");
        // The client said why, and dropped the connection long before the flood's bound.
        assert!(
            soon(|| s.goaway_code.load(SeqCst) == 0xb),
            "{flood:?}: GOAWAY code {:#x}",
            s.goaway_code.load(SeqCst)
        );
        assert!(soon(|| s.closed_by_client.load(SeqCst) == 1), "{flood:?}");
        assert_eq!(s.accepted.load(SeqCst), 1);
    }
}

#[test]
fn a_ping_flood_whose_answers_are_never_read_ends_its_connection() {
    let s = FloodServer::start(Flood::Ping);
    let mut cfg = h2(&s.url(), 1, 1, 1);
    cfg.load.timeout = Duration::from_secs(10);
    let started = Instant::now();
    let m = run_ok(cfg);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(m.complete(), 1);
    assert_eq!(m.rec.failures.exception, 1, "{:?}", m.rec.failures);
    assert_eq!(m.failed(), 1, "{:?}", m.rec.failures);
    let first = h2_error(&m);
    assert!(first.contains("PING"), "{first}");
    assert!(first.contains("ENHANCE_YOUR_CALM"), "{first}");
    // The answers went out as far as the socket took them; then the client closed the
    // connection (its GOAWAY cannot get past the answers the server never read).
    assert!(soon(|| s.closed_by_client.load(SeqCst) == 1));
    let sent = s.sent.load(SeqCst);
    assert!(sent > 1000, "the flood was cut short after {sent} PINGs");
    assert_eq!(s.accepted.load(SeqCst), 1);
}
