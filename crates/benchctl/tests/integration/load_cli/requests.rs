//! ab's request flags as the server receives them, those that would break a request refused,
//! HTTPS from the command line and a start at a given instant.

use super::{assert_usage_error, benchctl, SHORT};
use crate::support::TestServer;

#[test]
fn ab_request_flags_reach_the_server_as_ab_sends_them() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("body.bin");
    let body: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&post, &body).unwrap();
    let url = s.url("/cl");
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "6",
            "-c",
            "2",
            "-p",
            post.to_str().unwrap(),
            "-T",
            "application/x-www-form-urlencoded",
            "-C",
            "session=abc",
            "-C",
            "theme=dark",
            "-A",
            "user:secret",
            "-H",
            "X-Test: yes",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    // ab's lines for a run with a body.
    assert!(
        f.stdout.contains(&format!(
            "Total body sent:        {}\n",
            6 * (body.len() as u64 + request_head_len(&s))
        )),
        "{}",
        f.describe()
    );
    assert!(f.stdout.contains(" kb/s sent\n") && f.stdout.contains(" kb/s total\n"));
    let seen = s.seen();
    assert_eq!(seen.len(), 6);
    for r in &seen {
        assert_eq!(r.line, "POST /cl HTTP/1.0");
        assert_eq!(r.header("content-length"), [body.len().to_string()]);
        assert_eq!(
            r.header("content-type"),
            ["application/x-www-form-urlencoded"]
        );
        assert_eq!(r.header("cookie"), ["session=abc; theme=dark"]);
        assert_eq!(r.header("authorization"), ["Basic dXNlcjpzZWNyZXQ="]);
        assert_eq!(r.header("x-test"), ["yes"]);
        assert!(r.body == body, "the body arrives byte for byte");
    }
}

/// The length of the head of the last request the server saw, as it came.
fn request_head_len(s: &TestServer) -> u64 {
    let r = s.seen().pop().expect("a request");
    let lines: u64 = r.headers.iter().map(|h| h.len() as u64 + 2).sum();
    r.line.len() as u64 + 2 + lines + 2
}

#[test]
fn ab_flags_that_would_break_the_request_are_refused() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("body.txt");
    std::fs::write(&post, "a=1").unwrap();
    let post = post.to_str().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let https = url.replace("http://", "https://");
    let cases: &[(&[&str], &str)] = &[
        (
            &["load", "--engine", "uring", "--h3", "-k", &https],
            "HTTP/3 runs on the epoll engine",
        ),
        (
            &["load", "-H", "X-A: 1\r\nX-Injected: yes", &url],
            "line break",
        ),
        (
            &["load", "-H", "X-A: 1\nX-Injected: yes", &url],
            "line break",
        ),
        (&["load", "-H", "X-A: 1\r\n", &url], "line break"),
        (&["load", "-H", "X-A\r\nX-B: 1", &url], "line break"),
        (
            &["load", "-C", "a=1\r\nX-Injected: yes", &url],
            "line break",
        ),
        (&["load", "-A", "user:pw\r\nX: y", &url], "line break"),
        (&["load", "-A", "nocolon", &url], "USER:PASSWORD"),
        (
            &["load", "-p", post, "-T", "text/plain\nX: y", &url],
            "line break",
        ),
        (&["load", "-m", "GET /x HTTP/1.0\r\n", &url], "bad method"),
        (&["load", "-T", "text/plain", &url], "-p or -u"),
        (&["load", "-p", post, "-u", post, &url], "either -p"),
        (&["load", "-i", "-p", post, &url], "no body"),
        (&["load", "-i", "-m", "GET", &url], "either -i or -m"),
        (&["load", "-m", "HEAD", "-p", post, &url], "no body"),
        (&["load", "-p", missing, &url], "cannot read the file"),
        (
            &["load", "-H", "Content-Length: 3", &url],
            "frames each request",
        ),
        (&["load", "-X", "127.0.0.1", &url], "HOST:PORT"),
        (&["load", "-B", "localhost", &url], "not an IP address"),
        (&["load", "-B", "::1", &url], "IPv6"),
        (&["load", "-v", "3", &url], "-v 3"),
        (&["load", "-w", "--json", &url], "either -w"),
        (&["load", "--duration", "1s", "-g", missing, &url], "-g"),
        (&["load", "-e", "/nonexistent-dir/x.csv", &url], "-e"),
    ];
    for (args, names) in cases {
        assert_usage_error(args, names);
    }
    assert_eq!(s.accepted(), 0, "bad input never reaches the server");
}

#[test]
fn https_keep_alive_and_verify_from_the_command_line() {
    use crate::support::tls::{Cert, TlsServer};
    let good = TlsServer::start(Cert::Good);
    let ca = good.ca_file.to_str().unwrap().to_string();
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "40",
            "-c",
            "2",
            "-k",
            "--verify",
            &ca,
            &good.url("/"),
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(f.stdout.contains("Complete requests:      40\n"));
    assert!(f.stdout.contains("Keep-Alive requests:    40\n"));
    assert!(f.stdout.contains("Failed requests:        0\n"));
    assert_eq!(good.accepted(), 2);

    let expired = TlsServer::start(Cert::Expired);
    let ca = expired.ca_file.to_str().unwrap().to_string();
    let f = benchctl(
        &["load", "-q", "-n", "4", "--verify", &ca, &expired.url("/")],
        SHORT,
    );
    assert_eq!(f.code, Some(1), "{}", f.describe());
    assert!(
        f.stderr.contains("no TLS connection to 127.0.0.1:")
            && f.stderr.contains("certificate expired"),
        "{}",
        f.describe()
    );
    assert_eq!(expired.requests(), 0);
    // Without --verify, as ab: measured.
    let f = benchctl(&["load", "-q", "-n", "4", &expired.url("/")], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert_eq!(expired.requests(), 4);
}

#[test]
fn start_at_waits_for_its_instant_and_refuses_one_past_or_far_ahead() {
    let s = TestServer::start();
    let url = s.url("/start");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    assert_usage_error(&["load", "-n", "1", "--start-at", "1000", &url], "passed");
    let far = format!("{:.3}", now() + 3600.0);
    assert_usage_error(
        &["load", "-n", "1", "--start-at", &far, &url],
        "at most 600 s ahead",
    );
    assert_usage_error(
        &["load", "-n", "1", "--start-at", "soon", &url],
        "--start-at",
    );
    assert_eq!(s.requests(), 0, "bad input sends nothing");

    // Five requests take milliseconds: a run that ends after the instant waited for it.
    let at = now() + 1.5;
    let f = benchctl(
        &[
            "load",
            "-n",
            "5",
            "-q",
            "--start-at",
            &format!("{at:.6}"),
            &url,
        ],
        SHORT,
    );
    let ended = now();
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        ended >= at,
        "ended {:.3} s before its start instant",
        at - ended
    );
    assert_eq!(s.requests(), 5);
    // RFC 3339 is read too.
    let f = benchctl(
        &[
            "load",
            "-n",
            "1",
            "-q",
            "--start-at",
            "2000-01-01T00:00:00Z",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("passed"), "{}", f.describe());
}
