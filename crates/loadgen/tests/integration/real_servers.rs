//! The load generator against real servers started in the test (127.0.0.1, port 0): each kind
//! of response framing, each kind of misbehaving server, and each failure is counted exactly as
//! ab counts it, keep-alive reuses connections only where the server agrees, and no run hangs.
//!
//! Every run is bounded in requests and wrapped in a deadline, so a hang fails the test quickly.

use crate::support;

use loadgen::{HttpVersion, LoadConfig, LoadError, Measurement, Method, StopReason};
use std::time::{Duration, Instant};
use support::{config, run_within, TestServer, HELLO};

/// The longest any run here may take before the test declares it hung.
const HANG: Duration = Duration::from_secs(20);

fn run_ok(cfg: LoadConfig) -> Measurement {
    run_within(HANG, cfg).expect("the load run succeeds")
}

fn assert_no_failures(m: &Measurement) {
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.failures.write, 0, "write errors");
}

#[test]
fn content_length_new_connection_per_request() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/cl"), 200, 10));
    assert_eq!(m.complete(), 200);
    assert_no_failures(&m);
    assert_eq!(m.rec.non_2xx, 0);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.server.software, "testserver/1.0");
    assert_eq!(m.rec.body_bytes, 200 * HELLO.len() as u64);
    assert_eq!(
        m.rec.total_bytes,
        s.bytes_sent(),
        "every byte the server sent, no more"
    );
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(s.accepted(), 200, "one connection per request without -k");
    assert_eq!(s.requests(), 200);
}

#[test]
fn content_length_keep_alive_reuses_connections_http10() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 200, 10);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 200);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.rec.keep_alive_requests, 200);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
    assert!(
        s.accepted() <= 10,
        "{} connections for -c 10 -k",
        s.accepted()
    );
    assert_eq!(s.requests(), 200);
}

#[test]
fn content_length_keep_alive_http11() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 100, 4);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 100);
    assert_no_failures(&m);
    assert_eq!(m.rec.keep_alive_requests, 100);
    assert!(
        s.accepted() <= 4,
        "{} connections for -c 4 -k",
        s.accepted()
    );
}

#[test]
fn http11_without_keep_alive_asks_to_close() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 30, 3);
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 30);
    assert_no_failures(&m);
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(
        s.accepted(),
        30,
        "HTTP/1.1 without -k sends Connection: close"
    );
}

#[test]
fn chunked_body() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/chunked"), 50, 5));
    assert_eq!(m.complete(), 50);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 13, "chunk payload only");
    assert_eq!(m.rec.body_bytes, 50 * 13);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
    assert_eq!(s.accepted(), 50);
}

#[test]
fn chunked_body_keep_alive_http11() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/chunked"), 100, 5);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 100);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.rec.keep_alive_requests, 100);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
    assert!(
        s.accepted() <= 5,
        "{} connections for -c 5 -k",
        s.accepted()
    );
}

#[test]
fn close_delimited_body() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/close"), 40, 4));
    assert_eq!(m.complete(), 40);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.rec.body_bytes, 40 * 13);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
}

#[test]
fn close_delimited_body_with_keep_alive_asked() {
    // A body that ends at close cannot be followed by another response: -k must not reuse it.
    let s = TestServer::start();
    let mut cfg = config(&s.url("/close"), 40, 4);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 40);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(s.accepted(), 40);
}

#[test]
fn server_refusing_keep_alive() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/nokeepalive"), 60, 6);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 60);
    assert_no_failures(&m);
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(
        s.accepted(),
        60,
        "one connection per request when the server closes"
    );
    assert_eq!(s.requests(), 60, "no request was sent twice");
}

#[test]
fn server_refusing_keep_alive_http11() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/nokeepalive"), 60, 6);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 60);
    assert_no_failures(&m);
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(s.accepted(), 60);
    assert_eq!(s.requests(), 60);
}

#[test]
fn reset_mid_body_is_a_receive_failure() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/reset"), 20, 4);
    cfg.load.timeout = Duration::from_secs(3);
    let t = Instant::now();
    let m = run_ok(cfg);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(m.complete(), 20);
    assert_eq!(m.failed(), 20);
    assert_eq!(m.rec.failures.receive, 20, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.failures.timeout, 0);
    assert_eq!(s.requests(), 20);
}

#[test]
fn reset_mid_body_with_keep_alive() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/reset"), 20, 4);
    cfg.load.keep_alive = true;
    cfg.load.timeout = Duration::from_secs(3);
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 20);
    assert_eq!(m.rec.failures.receive, 20, "failures: {:?}", m.rec.failures);
    assert_eq!(m.failed(), 20);
}

#[test]
fn stall_past_the_timeout() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/stall"), 4, 2);
    cfg.load.timeout = Duration::from_millis(300);
    let t = Instant::now();
    let m = run_ok(cfg);
    let took = t.elapsed();
    println!("4 stalled requests at -c 2 with a 300 ms timeout took {took:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(
        took >= Duration::from_millis(600),
        "two rounds of 300 ms, took {took:?}"
    );
    assert_eq!(m.complete(), 4);
    assert_eq!(m.rec.failures.timeout, 4, "failures: {:?}", m.rec.failures);
    assert_eq!(m.failed(), 4);
    assert_eq!(s.accepted(), 4, "a timed-out connection is not reused");
}

#[test]
fn not_found_is_non_2xx_not_a_failure() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/404"), 30, 3));
    assert_eq!(m.complete(), 30);
    assert_eq!(m.rec.non_2xx, 30);
    assert_no_failures(&m);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
}

#[test]
fn changing_length_is_a_length_failure() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/vary"), 40, 4));
    assert_eq!(m.complete(), 40);
    assert_eq!(m.rec.failures.length, 20, "failures: {:?}", m.rec.failures);
    assert_eq!(m.failed(), 20);
    assert!(
        [13, 14].contains(&m.server.document_length),
        "document length {}",
        m.server.document_length
    );
    assert_eq!(m.rec.body_bytes, 20 * 13 + 20 * 14);
}

#[test]
fn changing_length_accepted_with_variable_length() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/vary"), 40, 4);
    cfg.variable_length = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 40);
    assert_no_failures(&m);
}

#[test]
fn garbage_is_an_exception() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/garbage"), 10, 2));
    assert_eq!(m.complete(), 10);
    assert_eq!(
        m.rec.failures.exception, 10,
        "failures: {:?}",
        m.rec.failures
    );
    assert_eq!(m.failed(), 10);
}

#[test]
fn head_requests_have_no_body() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 20, 2);
    cfg.load.method = Method::Head;
    cfg.load.timeout = Duration::from_secs(3);
    let t = Instant::now();
    let m = run_ok(cfg);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(m.complete(), 20);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, 0);
    assert_eq!(m.rec.body_bytes, 0);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
}

#[test]
fn head_requests_keep_alive() {
    // A HEAD response announces Content-Length 13 but carries no body: waiting for one would
    // hang every reused connection.
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 20, 2);
    cfg.load.method = Method::Head;
    cfg.load.keep_alive = true;
    cfg.load.timeout = Duration::from_secs(3);
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 20);
    assert_no_failures(&m);
    assert_eq!(m.rec.keep_alive_requests, 20);
    assert!(s.accepted() <= 2);
}

#[test]
fn refused_port_is_unreachable_quickly() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let cfg = config(&format!("http://127.0.0.1:{port}/"), 100, 4);
    let t = Instant::now();
    let r = run_within(Duration::from_secs(10), cfg);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    match r {
        Err(LoadError::Unreachable { addr, .. }) => assert_eq!(addr.port(), port),
        Err(e) => panic!("expected Unreachable, got {e}"),
        Ok(m) => panic!(
            "expected Unreachable, got a measurement of {} requests",
            m.complete()
        ),
    }
}

#[test]
fn bad_options_are_config_errors() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 2, 5);
    cfg.load.keep_alive = true;
    match run_within(Duration::from_secs(5), cfg) {
        Err(LoadError::Config(e)) => {
            assert!(e.to_string().contains("concurrency 5 > requests 2"), "{e}")
        }
        Err(e) => panic!("expected a config error, got {e}"),
        Ok(_) => panic!("expected a config error"),
    }
    assert_eq!(
        s.accepted(),
        0,
        "nothing connects before the options are checked"
    );
}

#[test]
fn time_limit_stops_before_n() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 1_000_000, 2);
    cfg.load.keep_alive = true;
    cfg.load.duration = Some(Duration::from_millis(500));
    let t = Instant::now();
    let m = run_ok(cfg);
    let took = t.elapsed();
    println!(
        "a 500 ms time limit ended after {took:?} and {} requests",
        m.complete()
    );
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    assert!(m.complete() > 0);
    assert!(m.complete() < 1_000_000);
    assert_no_failures(&m);
    assert_eq!(m.stopped_early, Some(StopReason::TimeLimit));
    assert!(
        m.elapsed >= Duration::from_millis(450) && m.elapsed < Duration::from_millis(1000),
        "measured window {:?}",
        m.elapsed
    );
}

#[test]
fn min_duration_repeats_whole_loads_back_to_back_and_counts_them_all() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 100, 4);
    cfg.load.keep_alive = true;
    cfg.load.min_duration = Some(Duration::from_millis(300));
    let m = run_ok(cfg);
    let reps = m
        .settings
        .repetitions
        .expect("a repeated load says how often");
    println!(
        "-n 100 for at least 300 ms: {} loads, {} requests in {:?}",
        reps,
        m.complete(),
        m.elapsed
    );
    // Whole loads only: every repetition is another -n, and all of them are counted.
    assert_eq!(m.complete(), reps * 100);
    assert_eq!(s.requests(), reps * 100);
    assert!(reps >= 2, "100 local requests take far less than 300 ms");
    assert!(m.elapsed >= Duration::from_millis(300), "{:?}", m.elapsed);
    assert_no_failures(&m);
    assert_eq!(m.stopped_early, None);
    assert_eq!(
        m.rec.samples.as_ref().map(Vec::len),
        Some(m.complete() as usize)
    );
    // The connections carry on from one repetition to the next.
    assert_eq!(s.accepted(), 4);

    // Without it, one load and no count of repetitions.
    let once = run_ok(config(&s.url("/cl"), 100, 4));
    assert_eq!(once.complete(), 100);
    assert_eq!(once.settings.repetitions, None);
}

#[test]
fn min_duration_needs_a_request_count() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 100, 4);
    cfg.load.requests = None;
    cfg.load.duration = Some(Duration::from_millis(100));
    cfg.load.min_duration = Some(Duration::from_millis(300));
    match run_within(Duration::from_secs(5), cfg) {
        Err(LoadError::Config(e)) => assert!(e.to_string().contains("minimum duration"), "{e}"),
        Err(e) => panic!("expected a config error, got {e}"),
        Ok(_) => panic!("expected a config error"),
    }
    assert_eq!(s.accepted(), 0);
}

#[test]
fn samples_match_complete_responses() {
    let s = TestServer::start();
    let m = run_ok(config(&s.url("/cl"), 50, 5));
    assert_eq!(m.complete(), 50);
    let samples = m.rec.samples.as_ref().expect("a -n run keeps samples");
    assert_eq!(samples.len() as u64, m.complete());
    for (i, x) in samples.iter().enumerate() {
        assert!(x.total >= x.waiting, "sample {i}: {x:?}");
        assert!(x.total >= x.connect, "sample {i}: {x:?}");
    }
    assert_eq!(m.rec.hist.total.len(), 50);
}

#[test]
fn keep_alive_samples_have_zero_connect_on_reuse() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 40, 2);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    let samples = m.rec.samples.as_ref().expect("a -n run keeps samples");
    assert_eq!(samples.len(), 40);
    let reused = samples.iter().filter(|x| x.connect == 0).count() as u64;
    // Every request but the first on each connection starts on a connection already open.
    assert!(
        reused >= 40 - s.accepted(),
        "{reused} with connect 0, {} connections",
        s.accepted()
    );
}

/// Streams `n` bodies of [`support::BIG_LEN`] bytes from `path`, `c` at a time, and checks that
/// every byte was counted.
fn assert_big_bodies_stream_through(path: &str, n: u64, c: u32) {
    let s = TestServer::start();
    let mut cfg = config(&s.url(path), n, c);
    cfg.load.timeout = Duration::from_secs(15);
    let m = run_within(Duration::from_secs(60), cfg).expect("run");
    assert_eq!(m.complete(), n);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, support::BIG_LEN);
    assert_eq!(m.rec.body_bytes, n * support::BIG_LEN);
    assert_eq!(m.rec.total_bytes, s.bytes_sent());
}

/// A body that only the server's close ends, large enough that the reader yields to other
/// connections many times before it sees the end.
#[test]
fn big_close_delimited_document_streams_through() {
    assert_big_bodies_stream_through("/big-close", 3, 3);
}

#[test]
fn big_document_streams_through() {
    assert_big_bodies_stream_through("/big", 4, 2);
}

/// An IPv6 loopback target works like an IPv4 one (a plain blocking server, one response per
/// connection).
#[test]
fn ipv6_loopback_target() {
    use std::io::{Read, Write};
    let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback on this machine; nothing to test");
        return;
    };
    let port = listener.local_addr().expect("bound").port();
    // Serves exactly the 10 connections the run makes, then ends with the test process.
    std::thread::spawn(move || {
        for _ in 0..10 {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 13\r\n\r\nHello, World!");
        }
    });
    let m = run_within(
        Duration::from_secs(30),
        config(&format!("http://[::1]:{port}/"), 10, 2),
    )
    .expect("run");
    assert_eq!(m.complete(), 10);
    assert_no_failures(&m);
    assert_eq!(m.server.document_length, HELLO.len() as u64);
    assert_eq!(m.server.hostname, "::1");
}
