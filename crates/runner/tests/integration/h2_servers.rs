//! Servers over HTTP/2: each image whose manifest says `http2 = true` serves HTTP/2 when told
//! to (`BENCH_HTTP2=1`), by ALPN over TLS with the run's certificate and by prior knowledge
//! (h2c) in cleartext, and readiness and verification then go over HTTP/2, byte for byte. The
//! same server started without HTTP/2 fails that verification saying it answers HTTP/1.x.
//! Then whole scenarios with `http = "2"`, in cleartext and over TLS.

use crate::common;
use report::RecordIo;

use orchestrator::{ContainerSpec, ExpectedDoc, Orchestrator, Scheme};
use report::Protocol;
use runner::tls::RunCertificate;
use scenario::TlsKey;
use sha2::{Digest, Sha256};
use std::time::Duration;

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) const READY: Duration = Duration::from_secs(15);

#[tokio::test]
async fn nginx_serves_http2_by_alpn_and_by_prior_knowledge() {
    serves_http2("nginx", true).await;
}

#[tokio::test]
async fn nginx_trixie_serves_http2_by_alpn_and_by_prior_knowledge() {
    // nginx 1.26: HTTP/2 switched by a directive, not the listen parameter.
    serves_http2("nginx-trixie", true).await;
}

#[tokio::test]
async fn apache_serves_http2_by_alpn_and_by_prior_knowledge() {
    serves_http2("apache", true).await;
}

#[tokio::test]
async fn lighttpd_serves_http2_by_alpn_and_by_prior_knowledge() {
    serves_http2("lighttpd", true).await;
}

#[tokio::test]
async fn caddy_serves_http2_by_alpn_and_by_prior_knowledge() {
    serves_http2("caddy", true).await;
}

#[tokio::test]
async fn h2o_serves_http2_by_alpn_and_by_prior_knowledge() {
    // H2O offers h2 by ALPN whether told to or not: only its cleartext side is switched.
    serves_http2("h2o", false).await;
}

/// A document root with one page in the run's private folder, and the run's certificate.
pub(crate) struct Run {
    dir: tempfile::TempDir,
    body: &'static [u8],
    pub(crate) cert: RunCertificate,
}

impl Run {
    pub(crate) fn new() -> Run {
        let dir = tempfile::tempdir().unwrap();
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        let body: &[u8] = b"<html>served over HTTP/2</html>\n";
        std::fs::write(www.join("index.html"), body).unwrap();
        runner::rundir::open_to_servers(&www).unwrap();
        let cert = RunCertificate::create(&dir.path().join("tls"), TlsKey::EcdsaP256, &[]).unwrap();
        Run { dir, body, cert }
    }

    pub(crate) fn doc(&self) -> ExpectedDoc {
        ExpectedDoc {
            url_path: "/index.html".to_string(),
            length: self.body.len() as u64,
            sha256_hex: hex::encode(Sha256::digest(self.body)),
        }
    }

    pub(crate) fn spec(&self, kind: &str, image: &str, tls: bool, http2: bool) -> ContainerSpec {
        ContainerSpec {
            name: kind.to_string(),
            image: image.to_string(),
            port: free_port(),
            docroot: Some(self.dir.path().join("www")),
            tls_dir: tls.then(|| self.cert.dir.clone()),
            http2,
            run_id: format!("h2-test-{}", std::process::id()),
            cpuset: Some("1".to_string()),
            memory_bytes: Some(512 << 20),
            // Confined as a run confines it: its manifest's user, tmpfs mounts and pids limit.
            confinement: runner::confinement(&manifest(kind)),
            ..Default::default()
        }
    }

    pub(crate) fn https(&self, http2: bool) -> Scheme {
        Scheme::Https {
            cert_pem: self.cert.ca_pem.clone(),
            http2,
        }
    }
}

fn manifest(kind: &str) -> scenario::Manifest {
    let kinds = scenario::Kinds::discover(&[common::repo_root().join("docker")]);
    let k = kinds.get(kind).unwrap_or_else(|| panic!("no kind {kind}"));
    k.manifest.clone().unwrap_or_else(|e| panic!("{e:?}"))
}

pub(crate) async fn build(orch: &Orchestrator, kind: &str) -> String {
    let logs = tempfile::tempdir().unwrap();
    orch.build_image(
        kind,
        &common::repo_root().join("docker").join(kind),
        &logs.path().join(format!("{kind}.log")),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .tag
}

/// Starts `spec`, waits for it over `scheme` and verifies the page over it.
pub(crate) async fn start_and_verify(
    orch: &Orchestrator,
    run: &Run,
    spec: &ContainerSpec,
    scheme: &Scheme,
) -> (orchestrator::ContainerGuard, Result<(), String>) {
    let guard = orch.start(spec).await.unwrap();
    orch.wait_ready_over(&guard, scheme, spec.port, "/", READY)
        .await
        .unwrap_or_else(|e| panic!("{} never became ready over {scheme:?}: {e}", spec.name));
    let verified = orch
        .verify_over(
            scheme,
            guard.socket_addr(),
            std::slice::from_ref(&run.doc()),
        )
        .await
        .map(|v| {
            assert!(
                v.server_header.as_deref().is_some_and(|s| !s.is_empty()),
                "{v:?}"
            );
        })
        .map_err(|e| e.to_string());
    (guard, verified)
}

async fn serves_http2(kind: &str, alpn_is_switched: bool) {
    if !common::daemon_or_skip(kind).await {
        return;
    }
    let _one = common::exclusive();
    let orch = Orchestrator::connect().await.unwrap();
    let image = build(&orch, kind).await;
    let run = Run::new();

    // h2 by ALPN with the run's certificate.
    let spec = run.spec(kind, &image, true, true);
    let (guard, verified) = start_and_verify(&orch, &run, &spec, &run.https(true)).await;
    verified.unwrap_or_else(|e| panic!("{kind} over h2: {e}"));
    // HTTP/1.1 is still offered beside it, and a client asking for it alone gets it.
    orch.verify_over(
        &run.https(false),
        guard.socket_addr(),
        std::slice::from_ref(&run.doc()),
    )
    .await
    .unwrap_or_else(|e| panic!("{kind} over TLS in HTTP/1.1 beside h2: {e}"));
    guard.remove().await.unwrap();

    // h2c by prior knowledge.
    let spec = run.spec(kind, &image, false, true);
    let (guard, verified) =
        start_and_verify(&orch, &run, &spec, &Scheme::Http { http2: true }).await;
    verified.unwrap_or_else(|e| panic!("{kind} over h2c: {e}"));
    guard.remove().await.unwrap();

    // Started without HTTP/2, the same server fails verification over h2c, saying why.
    let spec = run.spec(kind, &image, false, false);
    let (guard, verified) =
        start_and_verify(&orch, &run, &spec, &Scheme::Http { http2: true }).await;
    let e = verified.expect_err("a server started without HTTP/2 is not verified over h2c");
    assert!(
        e.contains("answers HTTP/1.x only where HTTP/2 by prior knowledge (h2c) was asked"),
        "{kind}: {e}"
    );
    assert!(e.contains("/index.html"), "{e}");
    guard.remove().await.unwrap();

    // Over TLS without HTTP/2 it chooses http/1.1 by ALPN, and verification says so.
    if alpn_is_switched {
        let spec = run.spec(kind, &image, true, false);
        let (guard, verified) = start_and_verify(&orch, &run, &spec, &run.https(true)).await;
        let e = verified.expect_err("a server started without HTTP/2 is not verified over h2");
        assert!(
            e.contains("answered in HTTP/1.1 where HTTP/2 by ALPN (h2) was asked"),
            "{kind}: {e}"
        );
        guard.remove().await.unwrap();
    }

    // A bad BENCH_HTTP2: the entrypoint says so and stops.
    let mut bad = run.spec(kind, &image, false, false);
    bad.env = vec![("BENCH_HTTP2".to_string(), "yes".to_string())];
    let guard = orch.start(&bad).await.unwrap();
    let e = orch
        .wait_ready_over(&guard, &Scheme::Http { http2: true }, bad.port, "/", READY)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("BENCH_HTTP2 must be 1 or 0, got 'yes'"), "{e}");
    guard.remove().await.unwrap();
}

/// Varnish serves h2c, and h2 through hitch, in front of an HTTP/1.1 backend; without HTTP/2 it
/// answers HTTP/1.x only.
#[tokio::test]
async fn varnish_serves_http2_in_front_of_its_backend() {
    if !common::daemon_or_skip("varnish").await {
        return;
    }
    let _one = common::exclusive();
    let orch = Orchestrator::connect().await.unwrap();
    let backend_image = build(&orch, "lighttpd").await;
    let image = build(&orch, "varnish").await;
    let run = Run::new();
    let backend = run.spec("lighttpd", &backend_image, false, false);
    let b = orch.start(&backend).await.unwrap();
    orch.wait_ready(&b, backend.port, "/", READY)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let varnish = |tls: bool, http2: bool| {
        let mut s = run.spec("varnish", &image, tls, http2);
        s.env = vec![(
            "BENCH_BACKEND".to_string(),
            format!("127.0.0.1:{}", backend.port),
        )];
        s
    };
    let h2c = Scheme::Http { http2: true };
    let (guard, verified) = start_and_verify(&orch, &run, &varnish(false, true), &h2c).await;
    verified.unwrap_or_else(|e| panic!("varnish over h2c: {e}"));
    guard.remove().await.unwrap();
    let (guard, verified) =
        start_and_verify(&orch, &run, &varnish(true, true), &run.https(true)).await;
    verified.unwrap_or_else(|e| panic!("varnish over h2 through hitch: {e}"));
    guard.remove().await.unwrap();
    let (guard, verified) =
        start_and_verify(&orch, &run, &varnish(true, false), &run.https(true)).await;
    let e = verified.expect_err("hitch offers no h2 without BENCH_HTTP2=1");
    assert!(
        e.contains("answered in HTTP/1.1 where HTTP/2 by ALPN (h2) was asked"),
        "{e}"
    );
    guard.remove().await.unwrap();
    let (guard, verified) = start_and_verify(&orch, &run, &varnish(false, false), &h2c).await;
    let e = verified.expect_err("varnish without http2 is not verified over h2c");
    assert!(
        e.contains("answers HTTP/1.x only where HTTP/2 by prior knowledge (h2c) was asked"),
        "{e}"
    );
    guard.remove().await.unwrap();
    b.remove().await.unwrap();
}

/// The servers of both whole-scenario runs below (Varnish in front of nginx; Tornado, which
/// serves no HTTP/2, optional) and the one page they serve.
const EVERY_KIND_AND_A_PAGE: &str = r#"[[server]]
name = "nginx"
kind = "nginx"
[[server]]
name = "apache"
kind = "apache"
[[server]]
name = "lighttpd"
kind = "lighttpd"
[[server]]
name = "caddy"
kind = "caddy"
[[server]]
name = "h2o"
kind = "h2o"
[[server]]
name = "varnish"
kind = "varnish"
backend = "nginx"
[[server]]
name = "tornado"
kind = "tornado"
optional = true
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
"#;

/// A scenario with `http = "2"` in cleartext, run whole: every server that serves HTTP/2 is
/// verified and measured over h2c with 4 streams per connection (Varnish in front of nginx,
/// fetching in HTTP/1.1 from the plain port nginx opens beside its h2c-only one), Tornado is
/// unavailable for serving none, and the record says h2c and its streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2c_scenario_measures_every_server_that_serves_http2() {
    if !common::daemon_or_skip("an_h2c_scenario").await {
        return;
    }
    let _one = common::exclusive();
    let (dir, path) = common::scenario(&format!(
        r#"
name = "h2c-tiny"
http = "2"
[load]
requests = 400
concurrency = 2
streams = 4
timeout = "10s"
{EVERY_KIND_AND_A_PAGE}"#
    ));
    let plan = common::plan_with(&path, &common::repo_root().join("docker"));
    assert!(plan.http2 && !plan.tls);
    let measured = ["nginx", "apache", "lighttpd", "caddy", "h2o", "varnish"];
    let outcome = run_whole(
        &plan,
        dir.path(),
        &measured,
        "tornado: serves no HTTP/2 here",
    )
    .await;
    for l in &outcome.record.loads {
        assert_eq!(l.protocol, Some(Protocol::H2c), "{}", l.server);
        assert_eq!(l.streams, Some(4), "{}", l.server);
    }
}

/// A scenario with `tls = true` and `http = "2"`, run whole: every server that serves HTTP/2
/// over TLS is verified and measured over h2 by ALPN (Varnish through hitch, in front of
/// nginx's plain port); Tornado (no HTTP/2) is unavailable with its reason, and the record says
/// h2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_scenario_over_tls_measures_every_server_that_serves_it() {
    if !common::daemon_or_skip("an_h2_scenario").await {
        return;
    }
    let _one = common::exclusive();
    let (dir, path) = common::scenario(&format!(
        r#"
name = "h2-tiny"
tls = true
http = "2"
[load]
requests = 400
concurrency = 4
timeout = "10s"
{EVERY_KIND_AND_A_PAGE}"#
    ));
    let plan = common::plan_with(&path, &common::repo_root().join("docker"));
    assert!(plan.http2 && plan.tls);
    let measured = ["nginx", "apache", "lighttpd", "caddy", "h2o", "varnish"];
    let outcome = run_whole(
        &plan,
        dir.path(),
        &measured,
        "tornado: serves no HTTP/2 here",
    )
    .await;
    for l in &outcome.record.loads {
        assert_eq!(l.protocol, Some(Protocol::H2), "{}", l.server);
        assert_eq!(l.streams, Some(1), "{}", l.server);
    }
}

/// Runs `plan` whole and checks that each of `measured` was measured in full and that an
/// unavailable line starts with `unavailable`.
async fn run_whole(
    plan: &scenario::Plan,
    dir: &std::path::Path,
    measured: &[&str],
    unavailable: &str,
) -> runner::RunOutcome {
    let rec = std::sync::Arc::new(common::Recorder::default());
    let opts = runner::RunOptions {
        out: Some(dir.join("run.json")),
        ..runner::RunOptions::new()
    };
    let outcome = runner::run(plan, opts, rec.clone()).await.unwrap();
    let lines = rec.lines();
    assert!(outcome.succeeded(), "{:?}\n{lines:#?}", outcome.problems);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("unavailable {unavailable}"))),
        "{lines:#?}"
    );
    let loads = &outcome.record.loads;
    let mut servers: Vec<&str> = loads.iter().map(|l| l.server.as_str()).collect();
    servers.sort();
    let mut want = measured.to_vec();
    want.sort();
    assert_eq!(servers, want, "{lines:#?}");
    for l in loads {
        let r = &l.load;
        assert_eq!(
            (r.complete, r.failed, r.non_2xx),
            (400, 0, 0),
            "{}",
            l.server
        );
        assert_eq!(r.body_bytes, 400 * 468, "{}", l.server);
    }
    // The record on disk says the same.
    let back = report::RunRecord::load(&dir.join("run.json")).unwrap();
    assert_eq!(back.loads, outcome.record.loads);
    outcome
}
