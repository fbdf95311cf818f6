//! Servers over TLS with the run's certificate: each image whose manifest says `tls = true`
//! serves HTTPS with the certificate it is given, ECDSA or RSA, verification passes trusting
//! the run's authority and fails trusting any other, and a container told to serve TLS without
//! a certificate says so.

use crate::common;

use orchestrator::{ContainerSpec, ExpectedDoc, Orchestrator, Scheme};
use runner::tls::RunCertificate;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use scenario::TlsKey;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn nginx_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("nginx").await;
}

#[tokio::test]
async fn caddy_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("caddy").await;
}

#[tokio::test]
async fn h2o_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("h2o").await;
}

#[tokio::test]
async fn apache_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("apache").await;
}

#[tokio::test]
async fn tornado_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("tornado").await;
}

#[tokio::test]
async fn lighttpd_serves_https_with_the_runs_certificate_and_no_other() {
    serves_https("lighttpd").await;
}

/// A server of `kind` with the run's documents and certificate: its image, the container spec
/// it starts from, the document it must serve and the run's folder.
struct Served {
    orch: Orchestrator,
    spec: ContainerSpec,
    doc: ExpectedDoc,
    run: tempfile::TempDir,
    cert: RunCertificate,
}

async fn serves_https(kind: &str) {
    if !common::daemon_or_skip(kind).await {
        return;
    }
    let _one = common::exclusive();
    let s = prepare(kind).await;
    serves_with_its_own_authority_only(&s).await;
    a_missing_certificate_is_named(&s).await;
    an_rsa_certificate_is_presented_as_given(kind, &s).await;
}

async fn prepare(kind: &str) -> Served {
    let orch = Orchestrator::connect().await.unwrap();
    let logs = tempfile::tempdir().unwrap();
    let image = orch
        .build_image(
            kind,
            &common::repo_root().join("docker").join(kind),
            &logs.path().join(format!("{kind}.log")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // The run's private folder holds the documents and the certificate.
    let run = tempfile::tempdir().unwrap();
    let www = run.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let body = b"<html>served over TLS</html>\n";
    std::fs::write(www.join("index.html"), body).unwrap();
    runner::rundir::open_to_servers(&www).unwrap();
    let cert = RunCertificate::create(&run.path().join("tls"), TlsKey::EcdsaP256, &[]).unwrap();
    let spec = ContainerSpec {
        name: kind.to_string(),
        image: image.tag.clone(),
        port: free_port(),
        docroot: Some(www.clone()),
        tls_dir: Some(cert.dir.clone()),
        run_id: format!("tls-test-{}", std::process::id()),
        cpuset: Some("1".to_string()),
        memory_bytes: Some(512 << 20),
        ..Default::default()
    };
    let doc = ExpectedDoc {
        url_path: "/index.html".to_string(),
        length: body.len() as u64,
        sha256_hex: hex::encode(Sha256::digest(body)),
    };
    Served {
        orch,
        spec,
        doc,
        run,
        cert,
    }
}

/// Verified over HTTPS trusting the run's authority; another run's authority, or plain HTTP to
/// the TLS port, is not mistaken for the server.
async fn serves_with_its_own_authority_only(s: &Served) {
    let (orch, spec, doc) = (&s.orch, &s.spec, std::slice::from_ref(&s.doc));
    let guard = orch.start(spec).await.unwrap();
    let trusted = Scheme::Https {
        cert_pem: s.cert.ca_pem.clone(),
        http2: false,
    };
    orch.wait_ready_over(&guard, &trusted, spec.port, "/", Duration::from_secs(15))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let verified = orch
        .verify_over(&trusted, guard.socket_addr(), doc)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        verified
            .server_header
            .as_deref()
            .is_some_and(|s| !s.is_empty()),
        "{verified:?}"
    );
    let other =
        RunCertificate::create(&s.run.path().join("other"), TlsKey::EcdsaP256, &[]).unwrap();
    let e = orch
        .verify_over(
            &Scheme::Https {
                cert_pem: other.ca_pem,
                http2: false,
            },
            guard.socket_addr(),
            doc,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("certificate"), "{e}");
    let e = orch.verify(spec.port, doc).await.unwrap_err().to_string();
    assert!(e.contains("/index.html"), "{e}");
    guard.remove().await.unwrap();
}

/// BENCH_TLS=1 without the certificate folder: the entrypoint says what is missing.
async fn a_missing_certificate_is_named(s: &Served) {
    let mut bare = s.spec.clone();
    bare.port = free_port();
    bare.tls_dir = None;
    bare.env = vec![("BENCH_TLS".to_string(), "1".to_string())];
    let trusted = Scheme::Https {
        cert_pem: s.cert.ca_pem.clone(),
        http2: false,
    };
    let guard = s.orch.start(&bare).await.unwrap();
    let e = s
        .orch
        .wait_ready_over(&guard, &trusted, bare.port, "/", Duration::from_secs(15))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("/etc/benchctl/tls/cert.pem is missing"), "{e}");
    guard.remove().await.unwrap();
}

/// An RSA 2048 certificate (`tls_key = "rsa-2048"`): verified the same way, and the
/// certificate the server presents is exactly the one it was given.
async fn an_rsa_certificate_is_presented_as_given(kind: &str, s: &Served) {
    let rsa = RunCertificate::create(&s.run.path().join("rsa"), TlsKey::Rsa2048, &[]).unwrap();
    let mut with_rsa = s.spec.clone();
    with_rsa.port = free_port();
    with_rsa.tls_dir = Some(rsa.dir.clone());
    let guard = s.orch.start(&with_rsa).await.unwrap();
    let trusted = Scheme::Https {
        cert_pem: rsa.ca_pem.clone(),
        http2: false,
    };
    s.orch
        .wait_ready_over(
            &guard,
            &trusted,
            with_rsa.port,
            "/",
            Duration::from_secs(15),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.orch
        .verify_over(&trusted, guard.socket_addr(), std::slice::from_ref(&s.doc))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let given = CertificateDer::from_pem_file(rsa.dir.join("cert.pem")).unwrap();
    let presented = presented_certificate(guard.socket_addr(), &rsa.ca_pem);
    assert!(presented == given, "{kind} presents another certificate");
    guard.remove().await.unwrap();
}

/// The leaf certificate a TLS server at `addr` presents, the handshake trusting `ca_pem` alone.
fn presented_certificate(addr: SocketAddr, ca_pem: &[u8]) -> CertificateDer<'static> {
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(b"HEAD / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 1];
    tls.read_exact(&mut first).unwrap();
    tls.conn.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
}

/// A scenario with `tls = true`, run whole: nginx and apache are verified and measured over
/// HTTPS; Varnish too, behind hitch, fetching from nginx over the plain port nginx opens for
/// it; a Varnish in front of Apache (which opens no plain port) is unavailable with that
/// reason, as is a kind that serves no TLS (gatling); the run's certificate goes with its
/// private folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_scenario_measures_over_https_and_lists_who_cannot() {
    if !common::daemon_or_skip("a_tls_scenario").await {
        return;
    }
    let _one = common::exclusive();
    let (_dir, plan, outcome, lines) = common::run_whole(
        r#"
name = "tls-tiny"
tls = true
[load]
requests = 400
concurrency = 4
keep_alive = true
timeout = "10s"
[[server]]
name = "nginx"
kind = "nginx"
[[server]]
name = "apache"
kind = "apache"
[[server]]
name = "varnish"
kind = "varnish"
backend = "nginx"
[[server]]
name = "cache-apache"
kind = "varnish"
backend = "apache"
optional = true
[[server]]
name = "gatling"
kind = "gatling"
optional = true
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
"#,
    )
    .await;
    assert!(plan.tls);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("unavailable gatling: serves no HTTPS here")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "unavailable cache-apache: \"apache\", which it fronts over plain HTTP, serves only HTTPS in a TLS run: docker/apache/server.toml does not say plain_port = true"
        )),
        "{lines:#?}"
    );
    let loads = &outcome.record.loads;
    let measured: Vec<&str> = loads.iter().map(|l| l.server.as_str()).collect();
    assert_eq!(measured, ["nginx", "apache", "varnish"], "{lines:#?}");
    for l in loads {
        let l = &l.load;
        assert_eq!((l.complete, l.failed), (400, 0));
        assert_eq!(l.body_bytes, 400 * 468);
    }
    let varnish = outcome
        .record
        .servers
        .iter()
        .find(|s| s.name == "varnish")
        .unwrap();
    assert!(
        varnish
            .server_header
            .as_deref()
            .is_some_and(|v| v.to_lowercase().contains("varnish")),
        "{varnish:?}"
    );
    assert!(outcome.record.scenario.source.contains("tls = true"));
}
