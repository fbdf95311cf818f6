//! `https://` against a rustls test server on 127.0.0.1 port 0 with certificates made by the
//! test: keep-alive and a new connection per request work, each new connection does a full
//! handshake unless resumption is allowed, `--verify` refuses a wrong-name or expired
//! certificate with a clear error (and the same servers pass without it), ab's `-f` and `-Z`
//! choose what is negotiated, and a plain-HTTP server behind an https URL fails clearly.

use crate::support::tls::{Cert, TlsServer};
use crate::support::{run_within, TestServer};
use loadgen::tls::TlsOptions;
use loadgen::{HttpVersion, LoadConfig, LoadError, LoadSpec, Measurement, Target};
use std::time::Duration;

const HANG: Duration = Duration::from_secs(60);

fn https(url: &str, n: u64, c: u32) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.requests = Some(n);
    cfg.load.concurrency = c;
    cfg.load.timeout = Duration::from_secs(5);
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    let m = run_within(HANG, cfg).expect("the load run succeeds");
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.non_2xx, 0);
    m
}

#[test]
fn keep_alive_over_tls() {
    let s = TlsServer::start(Cert::Good);
    for version in [HttpVersion::Http10, HttpVersion::Http11] {
        let before = s.accepted();
        let mut cfg = https(&s.url("/"), 200, 4);
        cfg.load.keep_alive = true;
        cfg.load.version = version;
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 200);
        assert_eq!(m.rec.keep_alive_requests, 200);
        assert_eq!(m.rec.body_bytes, 200 * 13);
        assert_eq!(m.server.software, "tlstest/1.0");
        assert_eq!(m.server.document_length, 13);
        assert_eq!(s.accepted() - before, 4, "one connection per -c");
    }
    assert_eq!(s.requests(), 400);
}

#[test]
fn a_new_connection_per_request_does_a_full_handshake_each_time() {
    let s = TlsServer::start(Cert::Good);
    let m = run_ok(https(&s.url("/"), 60, 3));
    assert_eq!(m.complete(), 60);
    assert_eq!(s.accepted(), 60);
    assert_eq!(s.handshakes(), 60);
    assert_eq!(s.resumed(), 0, "no session is resumed unless asked");
    // The handshake is part of Connect, as in ab: never zero.
    let samples = m.rec.samples.as_ref().unwrap();
    assert!(samples.iter().all(|s| s.connect > 0), "{samples:?}");
}

#[test]
fn tls_resume_lets_new_connections_resume() {
    let s = TlsServer::start(Cert::Good);
    let mut cfg = https(&s.url("/"), 40, 1);
    cfg.tls.resume = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 40);
    assert_eq!(s.handshakes(), 40);
    assert!(
        s.resumed() >= 20,
        "{} of 40 handshakes resumed",
        s.resumed()
    );
}

#[test]
fn a_body_ended_by_close_notify_and_the_close_completes_at_once() {
    // The body, close_notify and the FIN arrive together: the end of the stream must be
    // noticed without another readiness event, or every request would wait for its timeout.
    let s = TlsServer::start(Cert::Good);
    for keep_alive in [false, true] {
        let mut cfg = https(&s.url("/close"), 20, 2);
        cfg.load.keep_alive = keep_alive;
        let started = std::time::Instant::now();
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 20);
        assert_eq!(m.rec.body_bytes, 20 * 13);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no request waited for its 5 s timeout ({:?})",
            started.elapsed()
        );
    }
}

#[test]
fn close_notify_ends_a_connection_the_server_leaves_open() {
    // The server sends the response and close_notify, then waits for the client to close
    // (lighttpd's way). The close_notify is the end of the stream: the next request starts
    // at once rather than after the wait for a FIN that comes only once the client has gone.
    let s = TlsServer::start(Cert::Good);
    let started = std::time::Instant::now();
    let m = run_ok(https(&s.url("/linger"), 20, 1));
    assert_eq!(m.complete(), 20);
    assert_eq!(s.accepted(), 20);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "requests waited for a FIN after close_notify ({:?} for 20)",
        started.elapsed()
    );
}

#[test]
fn large_bodies_and_pipelining_over_tls() {
    let s = TlsServer::start(Cert::Good);
    let mut cfg = https(&s.url("/bytes/300001"), 20, 2);
    cfg.load.keep_alive = true;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 20);
    assert_eq!(m.rec.body_bytes, 20 * 300_001);
    assert_eq!(
        m.rec.dropped_bytes, 0,
        "TLS bodies are decrypted, never dropped"
    );

    let mut cfg = https(&s.url("/"), 101, 2);
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    cfg.pipeline = 8;
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 101);
    assert_eq!(m.rec.keep_alive_requests, 101);
}

#[test]
fn verify_refuses_a_wrong_name_or_an_expired_certificate_and_accepts_a_good_one() {
    for (kind, why) in [
        (Cert::WrongName, "not valid for name"),
        (Cert::Expired, "expired"),
    ] {
        let s = TlsServer::start(kind);
        let mut cfg = https(&s.url("/"), 10, 2);
        cfg.tls.verify = Some(s.ca_file.clone());
        match run_within(HANG, cfg) {
            Err(e @ LoadError::Tls { .. }) => {
                let e = e.to_string();
                assert!(e.contains("TLS handshake failed"), "{e}");
                assert!(e.to_lowercase().contains(why), "{kind:?}: {e}");
            }
            other => panic!("{kind:?}: expected a TLS error, got {other:?}"),
        }
        assert_eq!(s.requests(), 0, "{kind:?}: no request reached the server");
        // Without --verify, as ab: the same server is measured.
        let m = run_ok(https(&s.url("/"), 10, 2));
        assert_eq!(m.complete(), 10, "{kind:?}");
    }
    let s = TlsServer::start(Cert::Good);
    let mut cfg = https(&s.url("/"), 10, 2);
    cfg.tls.verify = Some(s.ca_file.clone());
    assert_eq!(run_ok(cfg).complete(), 10);
}

#[test]
fn protocol_and_cipher_suite_are_what_is_negotiated() {
    let s = TlsServer::start(Cert::Good);
    let mut cfg = https(&s.url("/"), 6, 1);
    cfg.tls.protocol = Some("TLS1.2".into());
    let m = run_ok(cfg);
    assert_eq!(s.tls12(), 6);
    // Reported as ab reports it; an address as the host sends no SNI.
    let t = m.server.tls.expect("a TLS run reports its session");
    assert_eq!(t.protocol, "TLSv1.2");
    assert!(t.cipher.starts_with("ECDHE-ECDSA-"), "{t:?}");
    assert!(t.key_exchange.is_some(), "{t:?}");
    assert_eq!(t.server_name, None);
    // The test certificate's key is ECDSA: an RSA suite alone leaves nothing in common.
    let mut cfg = https(&s.url("/"), 6, 1);
    cfg.tls.ciphers = Some("ECDHE-ECDSA-AES128-GCM-SHA256".into());
    let m = run_ok(cfg);
    assert_eq!(s.tls12(), 12, "a TLS 1.2 suite alone means TLS 1.2");
    let t = m.server.tls.unwrap();
    assert_eq!(
        (t.cipher.as_str(), t.cipher_bits),
        ("ECDHE-ECDSA-AES128-GCM-SHA256", 128)
    );
    let mut cfg = https(&s.url("/"), 6, 1);
    cfg.tls.protocol = Some("TLS1.3".into());
    let t = run_ok(cfg).server.tls.unwrap();
    assert_eq!(t.protocol, "TLSv1.3");
    assert!(t.cipher.starts_with("TLS_"), "{t:?}");
    let mut cfg = https(&s.url("/"), 6, 1);
    cfg.tls.ciphers = Some("ECDHE-RSA-AES128-GCM-SHA256".into());
    assert!(matches!(run_within(HANG, cfg), Err(LoadError::Tls { .. })));
}

/// A plain-HTTP server that reads what a client sends first, answers `answer` in plaintext
/// and closes, for up to `n` connections or 30 s.
fn plain_http_server(n: usize, answer: &'static [u8]) -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut served = 0;
        while served < n && std::time::Instant::now() < deadline {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            served += 1;
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer);
            let _ = s.shutdown(std::net::Shutdown::Write);
            // Let the client read the answer before the socket goes.
            let _ = s.read(&mut buf);
        }
    });
    (port, t)
}

#[test]
fn https_to_a_plain_http_server_fails_with_a_tls_error() {
    let (port, server) =
        plain_http_server(4, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    let url = format!("https://127.0.0.1:{port}/");
    match run_within(HANG, https(&url, 4, 1)) {
        Err(e @ LoadError::Tls { .. }) => {
            assert!(e.to_string().contains("TLS handshake failed"), "{e}")
        }
        other => panic!("expected a TLS error, got {other:?}"),
    }
    server.join().unwrap();
    // An option rustls cannot honour is refused before any connection.
    let s = TestServer::start();
    let mut cfg = https(&format!("https://127.0.0.1:{}/", s.port), 4, 1);
    cfg.tls = TlsOptions {
        protocol: Some("SSL3".into()),
        ..TlsOptions::default()
    };
    assert!(matches!(run_within(HANG, cfg), Err(LoadError::Config(_))));
    assert_eq!(s.accepted(), 0);
}

/// A server that reads the ClientHello and closes without a word is said to have closed the
/// connection in the handshake, over HTTP/1.1 and HTTP/2 alike (an io_uring receive's end of
/// stream is a buffer holding only its header, not a result of 0).
#[test]
fn a_server_that_closes_in_the_handshake_is_said_to_have_closed_it() {
    for version in [HttpVersion::Http11, HttpVersion::Http2] {
        let (port, server) = plain_http_server(2, b"");
        let mut cfg = https(&format!("https://127.0.0.1:{port}/"), 2, 1);
        cfg.load.version = version;
        match run_within(HANG, cfg) {
            Err(e @ LoadError::Tls { .. }) => assert!(
                e.to_string()
                    .contains("TLS handshake failed: the server closed the connection"),
                "{version:?}: {e}"
            ),
            other => panic!("{version:?}: expected a TLS error, got {other:?}"),
        }
        server.join().unwrap();
    }
}
