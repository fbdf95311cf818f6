//! HTTP/3 against a server of another implementation (the `h3` crate over `quinn`) started by
//! the test on UDP 127.0.0.1 port 0: counts are exact, a slow server's load is not flagged
//! client-bound and a starved client's is, streams run side by side on a
//! connection up to the smaller of `--streams` and the server's limit, a load without
//! keep-alive makes a QUIC handshake per request, bodies of every size arrive whole, failures
//! are counted by kind without a hang, and a server that does not answer QUIC is one clear
//! error, soon.
//!
//! Every run is bounded in requests and wrapped in a deadline.

#[path = "support/h3srv.rs"]
mod h3srv;
use crate::support;

use h3srv::{Alpn, H3Server, Options};
use loadgen::{HttpVersion, LoadConfig, LoadError, Measurement, Note, Timer};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};
use support::{config, run_within};

const HANG: Duration = Duration::from_secs(30);

fn h3(url: &str, n: u64, c: u32, streams: u32) -> LoadConfig {
    let mut cfg = config(url, n, c);
    cfg.load.version = HttpVersion::Http3;
    cfg.load.keep_alive = true;
    cfg.load.streams = streams;
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    run_within(HANG, cfg).expect("the load run succeeds")
}

fn assert_clean(m: &Measurement, n: u64) {
    assert_eq!(m.complete(), n);
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.non_2xx, 0);
    for t in [Timer::Connect, Timer::Waiting, Timer::Total] {
        assert_eq!(m.rec.hist.get(t).len(), n, "{t:?} histogram count");
    }
}

/// The datagrams the client's receive buffers dropped, by the run's QUIC note.
fn udp_drops(m: &Measurement) -> u64 {
    m.notes
        .iter()
        .find_map(|n| match n {
            Note::Quic { udp_drops, .. } => Some(*udp_drops),
            _ => None,
        })
        .unwrap_or(0)
}

#[test]
fn counts_are_exact_and_streams_run_side_by_side() {
    let s = H3Server::start(Alpn::H3, 100);
    let m = run_ok(h3(&s.url("/slow?ms=20"), 400, 2, 8));
    assert_clean(&m, 400);
    assert_eq!(m.server.document_length, 13);
    assert_eq!(m.server.software, "h3-test");
    assert_eq!(m.rec.body_bytes, 400 * 13);
    assert_eq!(m.rec.keep_alive_requests, 400);
    assert_eq!(s.counters.requests.load(SeqCst), 400);
    assert_eq!(
        s.counters.connections.load(SeqCst),
        2,
        "one connection each"
    );
    assert_eq!(
        s.counters.peak_streams.load(SeqCst),
        8,
        "the server saw 8 requests in progress at once on a connection"
    );
    assert!(m.settings.keep_alive);
    assert_eq!(m.settings.streams, Some(8));
    assert!(m.settings.http3);
    assert_eq!(udp_drops(&m), 0, "{:?}", m.notes);
    // The server, 20 ms a request, set these figures: the client is not flagged.
    let report = model::json::LoadReport::from_measurement(&m);
    assert!(!model::record::is_client_bound(&report), "{:?}", m.notes);
    // Only the first request on each connection waited for its handshake.
    let connects = m
        .rec
        .samples
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.connect > 0)
        .count();
    assert!(connects <= 2, "{connects} samples with a connect time");
    // 20 ms per request, 16 at a time: about 25 rounds of 20 ms, far from 400 of them.
    assert!(
        m.elapsed < Duration::from_secs(4),
        "the streams did not overlap: {:?}",
        m.elapsed
    );
}

#[test]
fn a_constant_rate_is_held_over_streams() {
    let s = H3Server::start(Alpn::H3, 100);
    let cfg = support::paced(h3(&s.url("/"), 1, 2, 4), 400.0, Duration::from_secs(2));
    support::assert_rate_held(&run_ok(cfg), 400.0);
}

#[test]
fn at_a_rate_the_server_cannot_keep_waiting_is_counted_from_the_send_time_due() {
    // 200 ms a request and 2 streams on one connection: 10 requests/s at most, where 50 are
    // asked for.
    let s = H3Server::start(Alpn::H3, 100);
    let cfg = support::paced(
        h3(&s.url("/slow?ms=200"), 1, 1, 2),
        50.0,
        Duration::from_secs(2),
    );
    support::assert_waiting_counted_from_due(&run_ok(cfg));
}

#[test]
fn qlog_traces_the_first_connections_one_file_each() {
    let s = H3Server::start(Alpn::H3, 100);
    let dir = tempfile::tempdir().unwrap();
    let qlog = dir.path().join("traces");
    let mut cfg = h3(&s.url("/"), 200, 3, 4);
    cfg.qlog = Some(qlog.clone());
    assert_clean(&run_ok(cfg), 200);
    let traces = |dir: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        v.sort();
        v
    };
    let files = traces(&qlog);
    assert_eq!(files.len(), 3, "one file per connection");
    for f in &files {
        // JSON-SEQ: each record after an RS byte; the first says what the file is.
        let records: Vec<serde_json::Value> = f
            .split(|&b| b == 0x1e)
            .filter(|r| !r.is_empty())
            .map(|r| serde_json::from_slice(r).expect("a JSON record"))
            .collect();
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ", "{}", records[0]);
        let named = |n: &str| records.iter().filter(|r| r["name"] == n).count();
        assert!(named("transport:packet_sent") > 5, "{}", records.len());
        assert!(named("transport:packet_received") > 5, "{}", records.len());
    }
    // A handshake per request: only the first connections leave a trace.
    let more = dir.path().join("more");
    let mut cfg = h3(&s.url("/"), 20, 2, 1);
    cfg.load.keep_alive = false;
    cfg.qlog = Some(more.clone());
    assert_clean(&run_ok(cfg), 20);
    assert_eq!(traces(&more).len(), loadgen::h3::QLOG_CONNECTIONS as usize);
    // Only QUIC is traced.
    let mut cfg = config(&s.url("/"), 1, 1);
    cfg.qlog = Some(more);
    assert!(cfg
        .validate()
        .unwrap_err()
        .to_string()
        .contains("--qlog traces QUIC connections"));
}

#[test]
fn the_servers_stream_limit_caps_the_streams() {
    let s = H3Server::start(Alpn::H3, 3);
    let m = run_ok(h3(&s.url("/slow?ms=20"), 120, 1, 16));
    assert_clean(&m, 120);
    assert_eq!(s.counters.peak_streams.load(SeqCst), 3);
}

#[test]
fn without_keep_alive_every_request_has_a_handshake_of_its_own() {
    let s = H3Server::start(Alpn::H3, 100);
    let mut cfg = h3(&s.url("/"), 60, 4, 1);
    cfg.load.keep_alive = false;
    let m = run_ok(cfg);
    assert_clean(&m, 60);
    assert_eq!(m.rec.keep_alive_requests, 0);
    assert_eq!(s.counters.connections.load(SeqCst), 60);
    let samples = m.rec.samples.as_ref().unwrap();
    assert!(
        samples.iter().all(|s| s.connect > 0),
        "every request waited for its handshake"
    );
}

/// What the run's 0-RTT note says: connections, sent in 0-RTT, accepted, rejected, resent.
fn zero_rtt(m: &Measurement) -> Option<[u64; 5]> {
    m.notes.iter().find_map(|n| match n {
        Note::ZeroRtt {
            connections,
            sent,
            accepted,
            rejected,
            resent,
        } => Some([*connections, *sent, *accepted, *rejected, *resent]),
        _ => None,
    })
}

#[test]
fn the_tls_lines_say_what_quics_handshake_settled_on() {
    let s = H3Server::start(Alpn::H3, 100);
    let m = run_ok(h3(&s.url("/"), 20, 2, 2));
    assert_clean(&m, 20);
    let tls = m.server.tls.clone().expect("the TLS lines");
    assert_eq!(tls.protocol, "TLSv1.3");
    // rustls's server prefers its first suite the client offers: AES-256 by default.
    assert_eq!(tls.cipher, "TLS_AES_256_GCM_SHA384");
    assert_eq!(tls.cipher_bits, 256);
    assert_eq!(tls.key_exchange, Some(("X25519".to_string(), 253)));
    assert_eq!(tls.server_name, None, "an address is not sent by SNI");
    // An offer of one suite (not the one QUIC's Initial packets use) and one group.
    let mut cfg = h3(&s.url("/"), 20, 2, 2);
    cfg.tls.ciphers = Some("TLS_CHACHA20_POLY1305_SHA256".into());
    let m = run_ok(cfg);
    assert_clean(&m, 20);
    let tls = m.server.tls.clone().expect("the TLS lines");
    assert_eq!(tls.cipher, "TLS_CHACHA20_POLY1305_SHA256");
    assert_eq!(tls.cipher_bits, 256);
    // Without 0-RTT allowed there is no note of it.
    assert_eq!(zero_rtt(&m), None);
    assert!(!m.settings.zero_rtt);
}

#[test]
fn zero_rtt_sends_requests_with_the_first_flight_of_a_resumed_handshake() {
    let s = H3Server::start(Alpn::H3, 100);
    let mut cfg = h3(&s.url("/"), 40, 1, 1);
    cfg.load.keep_alive = false;
    cfg.tls.zero_rtt = true;
    let m = run_ok(cfg);
    assert_clean(&m, 40);
    assert!(m.settings.zero_rtt);
    assert!(m
        .settings
        .protocol_line()
        .unwrap()
        .ends_with(", 0-RTT allowed"));
    assert_eq!(s.counters.requests.load(SeqCst), 40);
    assert_eq!(s.counters.connections.load(SeqCst), 40);
    let [connections, sent, accepted, rejected, resent] = zero_rtt(&m).expect("a 0-RTT note");
    assert_eq!(connections, 40);
    // One connection at a time: each after the first has the ticket of the one before.
    assert_eq!(sent, 39, "{:?}", m.notes);
    assert_eq!((accepted, rejected, resent), (39, 0, 0));
    // Every request still has its handshake's time as Connect.
    let samples = m.rec.samples.as_ref().unwrap();
    assert!(samples.iter().all(|s| s.connect > 0), "{samples:?}");
    // A request sent in 0-RTT waited for no handshake before it left: its Waiting (from the
    // request written to the response's first byte) holds the handshake's round trip, so it
    // is longer than Total less Connect.
    let early = samples
        .iter()
        .filter(|s| s.waiting >= s.total - s.connect)
        .count();
    assert!(
        early >= 30,
        "{early} of 40 requests left before their handshake was done"
    );
}

#[test]
fn zero_rtt_requests_a_server_rejects_are_sent_again_after_the_handshake() {
    let rejecting = Options {
        resumes: false,
        goaway_after: None,
    };
    let s = H3Server::start_with(Alpn::H3, 100, rejecting);
    let mut cfg = h3(&s.url("/"), 30, 2, 1);
    cfg.load.keep_alive = false;
    cfg.tls.zero_rtt = true;
    let m = run_ok(cfg);
    assert_clean(&m, 30);
    let [connections, sent, accepted, rejected, resent] = zero_rtt(&m).expect("a 0-RTT note");
    assert_eq!(connections, 30);
    assert!(sent >= 20, "{:?}", m.notes);
    assert_eq!((accepted, rejected, resent), (0, sent, sent));
    // The server saw each request once: the rejected early data never reached it.
    assert_eq!(s.counters.requests.load(SeqCst), 30);
    // With keep-alive (a server that ends each connection after 10 requests, so that the
    // client connects again), every stream opened in 0-RTT goes again, in its order.
    for resumes in [false, true] {
        let opts = Options {
            resumes,
            goaway_after: Some(10),
        };
        let s = H3Server::start_with(Alpn::H3, 100, opts);
        let mut cfg = h3(&s.url("/slow?ms=2"), 200, 1, 4);
        cfg.tls.zero_rtt = true;
        let m = run_ok(cfg);
        assert_clean(&m, 200);
        assert_eq!(s.counters.requests.load(SeqCst), 200);
        let [connections, sent, accepted, rejected, resent] = zero_rtt(&m).unwrap();
        assert!(
            connections >= 10 && sent == connections - 1,
            "{:?}",
            m.notes
        );
        if resumes {
            assert_eq!((accepted, rejected, resent), (sent, 0, 0));
        } else {
            assert_eq!((accepted, rejected), (0, sent));
            // Each connection had its 4 streams open when the handshake was done.
            assert!(resent > 2 * sent, "{resent} requests sent again");
        }
    }
    // --0rtt is for HTTP/3 alone.
    let mut cfg = config(&s.url("/"), 1, 1);
    cfg.tls.zero_rtt = true;
    assert!(cfg.validate().unwrap_err().to_string().contains("--0rtt"));
}

#[test]
fn bodies_of_every_size_arrive_whole() {
    let s = H3Server::start(Alpn::H3, 100);
    for len in [0u64, 1, 16 << 10, (16 << 10) + 1, 3 << 20] {
        let n = 12;
        let m = run_ok(h3(&s.url(&format!("/bytes/{len}")), n, 2, 4));
        assert_clean(&m, n);
        assert_eq!(m.server.document_length, len, "{len}");
        assert_eq!(m.rec.body_bytes, n * len, "{len}");
    }
}

#[test]
fn a_client_whose_receive_buffer_overflows_says_so_and_is_client_bound() {
    let s = H3Server::start(Alpn::H3, 100);
    // The smallest receive buffer the kernel allows, against bodies many datagrams long: the
    // server's bursts overflow it, QUIC sends the dropped datagrams again, the bodies still
    // arrive whole, and the run says the client could not take them in.
    let mut cfg = h3(&s.url("/bytes/262144"), 8, 1, 2);
    cfg.socket.buffer = Some(1024);
    let m = run_ok(cfg);
    assert_clean(&m, 8);
    assert_eq!(m.rec.body_bytes, 8 * 262_144);
    assert!(udp_drops(&m) > 0, "{:?}", m.notes);
    let report = model::json::LoadReport::from_measurement(&m);
    assert!(model::record::is_client_bound(&report), "{:?}", m.notes);
}

#[test]
fn reset_and_stalled_streams_are_counted_by_kind_without_a_hang() {
    let s = H3Server::start(Alpn::H3, 100);
    let m = run_ok(h3(&s.url("/reset"), 40, 2, 4));
    assert_eq!(m.complete(), 40);
    assert_eq!(m.rec.failures.reset, 40, "{:?}", m.rec.failures);

    let mut cfg = h3(&s.url("/stall"), 6, 2, 3);
    cfg.load.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let m = run_ok(cfg);
    assert_eq!(m.rec.failures.timeout, 6, "{:?}", m.rec.failures);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_closed_udp_port_is_one_clear_error_at_once() {
    // A port that was just free: nothing listens there over UDP.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let e = run_within(HANG, h3(&format!("https://127.0.0.1:{port}/"), 10, 1, 1)).unwrap_err();
    let LoadError::Unreachable { reason, .. } = &e else {
        panic!("{e}");
    };
    assert!(reason.contains("UDP port"), "{reason}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_quic_server_without_http3_is_refused_in_the_handshake() {
    let s = H3Server::start(Alpn::Other, 100);
    let e = run_within(HANG, h3(&s.url("/"), 10, 1, 1)).unwrap_err();
    let LoadError::Tls { reason, .. } = &e else {
        panic!("{e}");
    };
    assert!(reason.contains("ALPN"), "{reason}");
}

#[test]
fn a_certificate_that_does_not_verify_fails_the_handshake() {
    let s = H3Server::start(Alpn::H3, 100);
    let ca = std::env::temp_dir().join(format!("h3-test-ca-{}.pem", std::process::id()));
    // Any CA but the one that made the server's certificate.
    let other = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&other)
        .unwrap();
    std::fs::write(&ca, cert.pem()).unwrap();
    let mut cfg = h3(&s.url("/"), 10, 1, 1);
    cfg.tls.verify = Some(ca.clone());
    let e = run_within(HANG, cfg).unwrap_err();
    let _ = std::fs::remove_file(&ca);
    assert!(matches!(e, LoadError::Tls { .. }), "{e}");
}

#[test]
fn http3_needs_an_https_url() {
    let mut cfg = h3("http://127.0.0.1:1/", 10, 1, 1);
    let e = loadgen::preflight(&mut cfg).unwrap_err();
    assert!(e.to_string().contains("https://"), "{e}");
}
