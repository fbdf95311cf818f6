//! Servers over HTTP/3: each kind whose manifest says `http3 = true` (Caddy, nginx-trixie)
//! serves HTTP/3 over QUIC on UDP at its HTTPS port when told to (`BENCH_HTTP3=1`), beside
//! HTTP/2 and HTTP/1.1 over TLS on the same port number; readiness and verification then go
//! over QUIC byte for byte, and the confinement check lets it hold that UDP socket. A server
//! without HTTP/3 never becomes ready over QUIC. Then a whole scenario with `http = "3"`:
//! Caddy measured over HTTP/3 with and without keep-alive, nginx unavailable.

use crate::common;
use crate::h2_servers::{build, free_port, start_and_verify, Run, READY};
use report::RecordIo;

use orchestrator::{Orchestrator, Scheme, Socket};
use report::Protocol;
use std::time::{Duration, Instant};

fn h3(run: &Run) -> Scheme {
    Scheme::H3 {
        cert_pem: run.cert.ca_pem.clone(),
    }
}

#[tokio::test]
async fn caddy_serves_http3_beside_h2_and_https_and_may_hold_that_udp_socket() {
    serves_http3("caddy").await;
}

#[tokio::test]
async fn nginx_trixie_serves_http3_beside_h2_and_https_and_may_hold_that_udp_socket() {
    serves_http3("nginx-trixie").await;
}

async fn serves_http3(kind: &str) {
    if !common::daemon_or_skip(kind).await {
        return;
    }
    let _one = common::exclusive();
    let orch = Orchestrator::connect().await.unwrap();
    let image = build(&orch, kind).await;
    let run = Run::new();

    // All three at once, as a run over every protocol starts it.
    let mut spec = run.spec(kind, &image, true, true);
    spec.http3 = true;
    let (guard, verified) = start_and_verify(&orch, &run, &spec, &h3(&run)).await;
    verified.unwrap_or_else(|e| panic!("{kind} over HTTP/3: {e}"));
    let doc = run.doc();
    let doc = std::slice::from_ref(&doc);
    // HTTP/2 and HTTP/1.1 over TLS stay served on the same port number.
    for http2 in [true, false] {
        orch.verify_over(&run.https(http2), guard.socket_addr(), doc)
            .await
            .unwrap_or_else(|e| panic!("{kind} over TLS (h2: {http2}) beside HTTP/3: {e}"));
    }
    // Its UDP socket is the one a run allows it, and only then.
    let addr = guard.socket_addr();
    orch.audit(&guard, &[Socket::tcp(addr), Socket::udp(addr)])
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    let err = orch
        .audit(&guard, &[Socket::tcp(addr)])
        .await
        .expect_err("a UDP socket beyond what was allowed")
        .to_string();
    assert!(err.contains(&format!("udp {addr}")), "{err}");
    // Another document is a clear error, not a hang.
    let missing = orchestrator::ExpectedDoc {
        url_path: "/missing.html".to_string(),
        ..run.doc()
    };
    let err = orch
        .verify_over(&h3(&run), addr, std::slice::from_ref(&missing))
        .await
        .expect_err("a 404")
        .to_string();
    assert!(err.contains("status 404 where 200 was expected"), "{err}");
    guard.remove().await.unwrap();
}

#[tokio::test]
async fn a_server_without_http3_is_never_ready_over_quic_and_says_so_in_time() {
    if !common::daemon_or_skip("caddy without HTTP/3").await {
        return;
    }
    let _one = common::exclusive();
    let orch = Orchestrator::connect().await.unwrap();
    let image = build(&orch, "caddy").await;
    let run = Run::new();
    // HTTPS only: nothing answers on UDP.
    let spec = run.spec("caddy", &image, true, false);
    let guard = orch.start(&spec).await.unwrap();
    orch.wait_ready_over(&guard, &run.https(false), spec.port, "/", READY)
        .await
        .unwrap_or_else(|e| panic!("never ready over TLS: {e}"));
    let started = Instant::now();
    let err = orch
        .wait_ready_over(&guard, &h3(&run), spec.port, "/", Duration::from_secs(2))
        .await
        .expect_err("no QUIC on that port");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string()
            .contains("did not answer HTTP/3 over QUIC (UDP) on"),
        "{err}"
    );
    let doc = run.doc();
    let doc = std::slice::from_ref(&doc);
    let err = orch
        .verify_over(&h3(&run), guard.socket_addr(), doc)
        .await
        .expect_err("no QUIC on that port")
        .to_string();
    assert!(
        err.contains("request over HTTP/3 (QUIC, ALPN h3) failed"),
        "{err}"
    );
    // The port is closed to UDP: the kernel says so, and verification does not wait for
    // QUIC's idle timeout.
    assert!(err.contains("nothing listens on UDP"), "{err}");
    guard.remove().await.unwrap();
    // A port nothing listens on at all: the same, at once.
    let started = Instant::now();
    let err = orch
        .verify_over(
            &h3(&run),
            std::net::SocketAddr::from(([127, 0, 0, 1], free_port())),
            doc,
        )
        .await
        .expect_err("nothing there")
        .to_string();
    assert!(err.contains("QUIC handshake failed"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// A scenario with `http = "3"`, run whole: Caddy verified and measured over HTTP/3 with
/// keep-alive and 4 streams per connection, and with a QUIC connection per request; nginx
/// (no HTTP/3) unavailable with its reason; the record says h3 and its streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h3_scenario_measures_caddy_over_quic_with_and_without_keep_alive() {
    if !common::daemon_or_skip("an_h3_scenario").await {
        return;
    }
    let _one = common::exclusive();
    let (dir, plan, outcome, lines) = common::run_whole(
        r#"
name = "h3-tiny"
http = "3"
[load]
requests = 400
concurrency = 2
timeout = "10s"
[[server]]
name = "caddy"
kind = "caddy"
[[server]]
name = "nginx"
kind = "nginx"
optional = true
[[document]]
name = "hello"
path = "/"
generate = "hello"
load = { keep_alive = true, streams = 4 }
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
"#,
    )
    .await;
    assert!(plan.http3 && plan.tls);
    assert!(
        lines.iter().any(|l| l.starts_with(
            "unavailable nginx: serves no HTTP/3 here: docker/nginx/server.toml does not say http3 = true"
        )),
        "{lines:#?}"
    );
    let loads = &outcome.record.loads;
    assert_eq!(loads.len(), 2, "{lines:#?}");
    for (l, streams, keep_alive) in [(&loads[0], 4, true), (&loads[1], 1, false)] {
        assert_eq!(l.server, "caddy");
        assert_eq!(l.protocol, Some(Protocol::H3));
        assert_eq!(l.streams, Some(streams));
        let r = &l.load;
        assert!(
            r.settings.http3 && r.settings.keep_alive == keep_alive,
            "{:?}",
            r.settings
        );
        assert_eq!(
            (r.complete, r.failed, r.non_2xx),
            (400, 0, 0),
            "{}",
            l.document
        );
        assert_eq!(
            l.protocol_line().as_deref(),
            Some(if streams == 4 {
                "HTTP/3 over QUIC v1 (h3), 4 streams per connection"
            } else {
                "HTTP/3 over QUIC v1 (h3), 1 stream per connection"
            })
        );
    }
    assert_eq!(loads[1].load.body_bytes, 400 * 468);
    // Keep-alive reuses the two connections; without it every request had its own.
    assert_eq!(loads[0].load.keep_alive_requests, 400);
    let back = report::RunRecord::load(&dir.path().join("run.json")).unwrap();
    assert_eq!(back.loads, outcome.record.loads);
}

/// A scenario with `http = ["1.1", "2", "3"]`, run whole: Caddy and nginx-trixie each started
/// once serving all three, verified over each and measured over each, every document under
/// its name and the version's; nginx (no HTTP/3) unavailable with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_over_three_versions_measures_each_document_over_each() {
    if !common::daemon_or_skip("three versions").await {
        return;
    }
    let _one = common::exclusive();
    let (dir, plan, outcome, lines) = common::run_whole(
        r#"
name = "three-versions"
http = ["1.1", "2", "3"]
[load]
requests = 300
concurrency = 2
streams = 3
keep_alive = true
timeout = "10s"
[[server]]
name = "caddy"
kind = "caddy"
[[server]]
name = "nginx-trixie"
kind = "nginx-trixie"
[[server]]
name = "nginx"
kind = "nginx"
optional = true
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
[[document]]
name = "png"
path = "/img.png"
generate = "png"
size = 23000
"#,
    )
    .await;
    assert!(plan.tls && plan.http2 && plan.http3);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("unavailable nginx: serves no HTTP/3 here")),
        "{lines:#?}"
    );
    let loads = &outcome.record.loads;
    let mut seen: Vec<(&str, &str, Option<Protocol>, Option<u32>)> = loads
        .iter()
        .map(|l| {
            assert_eq!((l.load.complete, l.load.failed), (300, 0), "{l:?}");
            (
                l.server.as_str(),
                l.document.as_str(),
                l.protocol,
                l.streams,
            )
        })
        .collect();
    seen.sort_by_key(|s| (s.0, s.1));
    let mut want = Vec::new();
    for server in ["caddy", "nginx-trixie"] {
        for doc in ["page", "png"] {
            want.extend([
                (server, format!("{doc}-h1"), Some(Protocol::Https), None),
                (server, format!("{doc}-h2"), Some(Protocol::H2), Some(3)),
                (server, format!("{doc}-h3"), Some(Protocol::H3), Some(3)),
            ]);
        }
    }
    let want: Vec<_> = want
        .iter()
        .map(|(s, d, p, n)| (*s, d.as_str(), *p, *n))
        .collect();
    assert_eq!(seen, want);
    // Every load sent the document's bytes.
    for l in loads {
        let size = if l.document.starts_with("png") {
            23000
        } else {
            468
        };
        assert_eq!(l.load.body_bytes, 300 * size, "{}", l.document);
    }
    let back = report::RunRecord::load(&dir.path().join("run.json")).unwrap();
    assert_eq!(back.loads, outcome.record.loads);
}
