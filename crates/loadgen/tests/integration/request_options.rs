//! What ab's request options put on the wire, checked by the test server that receives it
//! (127.0.0.1, port 0): a POST or PUT body arrives byte for byte with its Content-Length,
//! cookies and credentials arrive as one header each, a proxy is sent the absolute URL, the
//! socket options leave the requests as they were, and a line break in anything the user gave
//! is refused before a connection is made.

use crate::support;

use loadgen::connect::SocketOptions;
use loadgen::{HttpVersion, LoadConfig, LoadError, Measurement, Method, Proxy};
use std::time::Duration;
use support::{config, run_within, TestServer, HELLO};

const HANG: Duration = Duration::from_secs(60);

fn run_ok(cfg: LoadConfig) -> Measurement {
    let m = run_within(HANG, cfg).expect("the load run succeeds");
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.non_2xx, 0);
    m
}

/// Every byte value, over more than one socket buffer's worth, so the body is written in
/// several pieces.
fn odd_body() -> Vec<u8> {
    (0..300_001u32)
        .map(|i| (i.wrapping_mul(7) % 256) as u8)
        .collect()
}

#[test]
fn a_post_body_arrives_byte_for_byte() {
    let s = TestServer::start();
    let body = odd_body();
    for keep_alive in [false, true] {
        let mut cfg = config(&s.url("/cl"), 20, 4);
        cfg.load.method = Method::Post;
        cfg.load.keep_alive = keep_alive;
        cfg.body = Some(body.clone());
        cfg.content_type = Some("application/octet-stream".into());
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 20);
        assert_eq!(m.rec.body_bytes, 20 * HELLO.len() as u64);
        assert!(
            m.rec.sent_bytes > 20 * body.len() as u64,
            "the bodies count as sent: {}",
            m.rec.sent_bytes
        );
    }
    let seen = s.seen();
    assert_eq!(seen.len(), 40);
    for r in &seen {
        assert_eq!(r.line, "POST /cl HTTP/1.0");
        assert_eq!(r.header("content-length"), [body.len().to_string()]);
        assert_eq!(r.header("content-type"), ["application/octet-stream"]);
        assert!(r.body == body, "a body differs ({} bytes)", r.body.len());
    }
}

#[test]
fn put_and_other_methods_carry_the_body_too() {
    let s = TestServer::start();
    let body = b"{\"k\": \"v\"}\n".to_vec();
    for (method, line) in [
        (Method::Put, "PUT /cl HTTP/1.1"),
        (Method::parse("PATCH"), "PATCH /cl HTTP/1.1"),
    ] {
        let mut cfg = config(&s.url("/cl"), 6, 2);
        cfg.load.method = method;
        cfg.load.version = HttpVersion::Http11;
        cfg.load.keep_alive = true;
        cfg.body = Some(body.clone());
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 6);
        assert_eq!(m.rec.keep_alive_requests, 6);
        let seen = s.seen();
        let these: Vec<_> = seen.iter().filter(|r| r.line == line).collect();
        assert_eq!(these.len(), 6, "{seen:?}");
        for r in these {
            // ab's type when -T is not given.
            assert_eq!(r.header("content-type"), ["text/plain"]);
            assert_eq!(r.body, body);
        }
    }
}

#[test]
fn cookies_and_credentials_arrive_as_one_header_each() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 10, 2);
    cfg.cookies = vec!["session=abc123".into(), "theme=dark".into()];
    cfg.basic_auth = Some("user:pa:ss".into());
    cfg.headers = vec![("X-Trace".into(), "on; really".into())];
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 10);
    let seen = s.seen();
    assert_eq!(seen.len(), 10);
    for r in &seen {
        assert_eq!(r.line, "GET /cl HTTP/1.0");
        assert_eq!(r.header("cookie"), ["session=abc123; theme=dark"]);
        // base64("user:pa:ss"): the password keeps its colon.
        assert_eq!(r.header("authorization"), ["Basic dXNlcjpwYTpzcw=="]);
        assert_eq!(r.header("x-trace"), ["on; really"]);
        assert!(r.header("proxy-authorization").is_empty());
        assert!(r.body.is_empty());
    }
}

#[test]
fn a_proxy_is_sent_the_absolute_url() {
    // The test server stands in for the proxy; the target's port is never connected to.
    let proxy = TestServer::start();
    let mut cfg = config("http://127.0.0.1:9/cl?x=1", 8, 2);
    cfg.proxy = Some(Proxy::parse(&format!("127.0.0.1:{}", proxy.port)).unwrap());
    cfg.proxy_auth = Some("proxy:secret".into());
    let m = run_ok(cfg);
    assert_eq!(m.complete(), 8);
    assert_eq!(m.server.hostname, "127.0.0.1");
    assert_eq!(m.server.port, 9, "the target is reported, not the proxy");
    assert_eq!(proxy.accepted(), 8);
    for r in &proxy.seen() {
        assert_eq!(r.line, "GET http://127.0.0.1:9/cl?x=1 HTTP/1.0");
        assert_eq!(r.header("host"), ["127.0.0.1:9"]);
        assert_eq!(r.header("proxy-authorization"), ["Basic cHJveHk6c2VjcmV0"]);
    }
}

#[test]
fn socket_buffers_and_a_local_address_leave_the_requests_whole() {
    let s = TestServer::start();
    for keep_alive in [false, true] {
        let mut cfg = config(&s.url("/tail?ms=0"), 4, 2);
        cfg.load.keep_alive = keep_alive;
        cfg.socket = SocketOptions {
            buffer: Some(8 * 1024),
            bind: Some("127.0.0.1".parse().unwrap()),
        };
        let m = run_ok(cfg);
        assert_eq!(m.complete(), 4);
        assert_eq!(m.rec.body_bytes, 4 * support::TAIL_LEN);
    }
}

#[test]
fn a_bind_address_that_cannot_reach_the_target_is_refused_before_any_request() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 2, 1);
    cfg.socket.bind = Some("::1".parse().unwrap());
    match loadgen::run(cfg) {
        Err(LoadError::Config(e)) => assert!(e.to_string().contains("IPv6"), "{e}"),
        other => panic!("expected a config error, got {other:?}"),
    }
    assert_eq!(s.accepted(), 0);
}

#[test]
fn a_line_break_in_anything_the_user_gave_is_refused_before_any_request() {
    let s = TestServer::start();
    type Edit = fn(&mut LoadConfig);
    let cases: [(&str, Edit); 9] = [
        ("header value", |c| {
            c.headers = vec![("X-A".into(), "1\r\nX-Injected: yes".into())]
        }),
        ("header value LF", |c| {
            c.headers = vec![("X-A".into(), "1\nX-Injected: yes".into())]
        }),
        ("header name", |c| {
            c.headers = vec![("X-A\r\nX-Injected".into(), "yes".into())]
        }),
        ("cookie", |c| {
            c.cookies = vec!["a=1\r\nX-Injected: yes".into()]
        }),
        ("credentials", |c| {
            c.basic_auth = Some("user:pass\r\nX-Injected: yes".into())
        }),
        ("proxy credentials", |c| {
            c.proxy_auth = Some("user:pass\nX".into())
        }),
        ("content type", |c| {
            c.body = Some(b"x".to_vec());
            c.content_type = Some("text/plain\r\nX-Injected: yes".into());
        }),
        ("method", |c| {
            c.load.method = Method::parse("GET / HTTP/1.0\r\nX-Injected: yes\r\n\r\nGET")
        }),
        ("framing header", |c| {
            c.headers = vec![("Content-Length".into(), "5".into())]
        }),
    ];
    for (what, edit) in cases {
        let mut cfg = config(&s.url("/cl"), 2, 1);
        edit(&mut cfg);
        let e = cfg.validate().expect_err(what).to_string();
        assert!(
            e.contains("line break")
                || e.contains("bad method")
                || e.contains("frames each request"),
            "{what}: {e}"
        );
        assert!(
            matches!(loadgen::run(cfg), Err(LoadError::Config(_))),
            "{what}"
        );
    }
    assert_eq!(s.accepted(), 0, "nothing reached the server");
}
