//! How a scenario is reached and spoken to: TLS, remote engines (`[[host]]`) and the HTTP
//! version.

use super::{kinds, parse_str, MINIMAL};
use model::HttpVersion;
use scenario::{HostImages, HostUrl, TlsKey};
use std::path::Path;

#[test]
fn the_certificate_key_is_ecdsa_unless_rsa_is_asked_and_only_with_tls() {
    let p = Path::new("minimal.toml");
    let key = |head: &str| parse_str(&format!("{head}\n{MINIMAL}"), p).map(|plan| plan.tls_key);
    assert_eq!(key("tls = true").unwrap(), TlsKey::EcdsaP256);
    assert_eq!(
        key("tls = true\ntls_key = \"ecdsa-p256\"").unwrap(),
        TlsKey::EcdsaP256
    );
    assert_eq!(
        key("tls = true\ntls_key = \"rsa-2048\"").unwrap(),
        TlsKey::Rsa2048
    );
    let e = key("tls = true\ntls_key = \"rsa-4096\"")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("minimal.toml:2:11: error: "), "{e}");
    assert!(
        e.contains("tls_key `rsa-4096` is not a key type benchctl makes (use \"ecdsa-p256\" or \"rsa-2048\")"),
        "{e}"
    );
    let e = key("tls_key = \"rsa-2048\"").unwrap_err().to_string();
    assert!(e.starts_with("minimal.toml:1:11: error: "), "{e}");
    assert!(
        e.contains("the scenario does not serve TLS (add tls = true"),
        "{e}"
    );
}

#[test]
fn tls_is_off_unless_asked_and_the_kinds_say_whether_they_serve_it() {
    let p = Path::new("minimal.toml");
    assert!(!parse_str(MINIMAL, p).unwrap().tls);
    let plan = parse_str(&format!("tls = true\n{MINIMAL}"), p).unwrap();
    assert!(plan.tls);
    let serves = |kind: &str| {
        kinds()
            .get(kind)
            .and_then(|k| k.manifest.as_ref().ok())
            .map(|m| m.tls)
    };
    for kind in [
        "nginx", "apache", "lighttpd", "caddy", "h2o", "tornado", "varnish",
    ] {
        assert_eq!(serves(kind), Some(true), "{kind}");
    }
    for kind in ["gatling", "cherokee"] {
        assert_eq!(serves(kind), Some(false), "{kind}");
    }
    let e = parse_str(&format!("tls = \"yes\"\n{MINIMAL}"), p)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("minimal.toml:1:7: error: "), "{e}");
    assert!(
        e.contains("invalid type: string \"yes\", expected a boolean"),
        "{e}"
    );
}

#[test]
fn hosts_become_urls_and_addresses_and_servers_name_theirs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts");
    let src = MINIMAL.replace(
        "[[server]]\nname = \"nginx\"\nkind = \"nginx\"\n",
        r#"[[host]]
name = "srv1"
url = "tcp://10.0.0.5"
tls_dir = "certs"

[[host]]
name = "lab"
url = "tcp://[fd00::7]:2375"
insecure = true
images = "ship"

[[host]]
name = "tunnel"
url = "unix:///tmp/srv2.sock"
address = "10.0.0.9"

[[host]]
name = "by-ssh"
url = "ssh://bench@10.0.0.11:2222"
ssh_config = "ssh_config"

[[host]]
name = "by-ssh6"
url = "ssh://ops@[fd00::8]/run/user/1000/docker.sock"

[[server]]
name = "nginx"
kind = "nginx"
host = "srv1"

[[server]]
name = "apache"
kind = "apache"
"#,
    );
    let plan = parse_str(&src, &dir.join("s.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = plan.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["srv1", "lab", "tunnel", "by-ssh", "by-ssh6"]);
    assert_eq!(
        plan.hosts[0].url,
        HostUrl::Tcp {
            host: "10.0.0.5".to_string(),
            port: 2376,
            tls_dir: Some(dir.join("certs")),
        }
    );
    assert_eq!(plan.hosts[0].address.to_string(), "10.0.0.5");
    assert!(!plan.hosts[0].url.is_insecure());
    assert_eq!(plan.hosts[1].url.to_string(), "tcp://[fd00::7]:2375");
    assert_eq!(plan.hosts[1].address.to_string(), "fd00::7");
    assert!(plan.hosts[1].url.is_insecure());
    // Images are built by each host's engine unless the host says they are shipped.
    assert_eq!(plan.hosts[0].images, HostImages::Build);
    assert_eq!(plan.hosts[1].images, HostImages::Ship);
    assert_eq!(
        plan.hosts[2].url,
        HostUrl::Unix {
            path: "/tmp/srv2.sock".into()
        }
    );
    assert_eq!(plan.hosts[2].address.to_string(), "10.0.0.9");
    assert_eq!(
        plan.hosts[3].url,
        HostUrl::Ssh {
            destination: "bench@10.0.0.11".to_string(),
            port: Some(2222),
            socket: "/var/run/docker.sock".into(),
            config: Some(dir.join("ssh_config")),
        }
    );
    assert_eq!(
        plan.hosts[3].url.to_string(),
        "ssh://bench@10.0.0.11:2222/var/run/docker.sock"
    );
    assert_eq!(plan.hosts[3].address.to_string(), "10.0.0.11");
    assert!(!plan.hosts[3].url.is_insecure());
    assert_eq!(
        plan.hosts[4].url.to_string(),
        "ssh://ops@[fd00::8]/run/user/1000/docker.sock"
    );
    assert_eq!(plan.hosts[4].address.to_string(), "fd00::8");
    let nginx = plan.servers.iter().find(|s| s.name == "nginx").unwrap();
    let apache = plan.servers.iter().find(|s| s.name == "apache").unwrap();
    assert_eq!(plan.host_of(nginx).map(|h| h.name.as_str()), Some("srv1"));
    assert_eq!(plan.host_of(apache), None);
    // Without tables, everything is on the local engine.
    let plain = parse_str(MINIMAL, Path::new("m.toml")).unwrap();
    assert!(plain.hosts.is_empty());
    assert!(plain.servers.iter().all(|s| s.host.is_none()));
}

#[test]
fn http_2_makes_every_load_http2_with_its_streams_and_keep_alive() {
    let p = Path::new("h2.toml");
    let src = format!(
        "http = \"2\"\n{}",
        MINIMAL.replace(
            "requests = 10",
            "requests = 10\nstreams = 8\nconcurrency = 2"
        )
    ) + r#"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
load = { streams = 1, keep_alive = true }
"#;
    let plan = parse_str(&src, p).unwrap();
    assert!(plan.http2);
    assert!(!plan.tls);
    let loads: Vec<_> = plan
        .documents
        .iter()
        .map(|d| (d.load.version, d.load.streams, d.load.keep_alive))
        .collect();
    assert_eq!(
        loads,
        [(HttpVersion::Http2, 8, true), (HttpVersion::Http2, 1, true)]
    );
    assert_eq!(plan.documents[0].load.concurrency, 2);

    // Over TLS too: h2 by ALPN is the same plan with tls set.
    let plan = parse_str(&format!("tls = true\n{src}"), p).unwrap();
    assert!(plan.tls && plan.http2);

    // Without the key: HTTP/1.x, one stream, as before.
    let plan = parse_str(MINIMAL, p).unwrap();
    assert!(!plan.http2);
    assert_eq!(plan.documents[0].load.version, HttpVersion::Http10);
    assert_eq!(plan.documents[0].load.streams, 1);
}

#[test]
fn http_3_makes_every_load_http3_over_tls_with_or_without_keep_alive() {
    let p = Path::new("h3.toml");
    let src = format!(
        "http = \"3\"\n{}",
        MINIMAL.replace(
            "requests = 10",
            "requests = 10\nstreams = 8\nconcurrency = 2\nkeep_alive = true"
        )
    ) + r#"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
load = { streams = 1, keep_alive = false }
"#;
    let plan = parse_str(&src, p).unwrap();
    // QUIC is always encrypted: the run makes its certificate without tls = true.
    assert!(plan.http3 && plan.tls && !plan.http2);
    let loads: Vec<_> = plan
        .documents
        .iter()
        .map(|d| (d.load.version, d.load.streams, d.load.keep_alive))
        .collect();
    // Without keep-alive, a QUIC connection (and handshake) per request.
    assert_eq!(
        loads,
        [
            (HttpVersion::Http3, 8, true),
            (HttpVersion::Http3, 1, false)
        ]
    );
    // Saying tls = true as well changes nothing; so does a load repeating the version.
    let plan = parse_str(&format!("tls = true\n{src}"), p).unwrap();
    assert!(plan.tls && plan.http3);
    let plan = parse_str(&src.replace("keep_alive = false", "http = \"3\""), p).unwrap();
    let l = &plan.documents[1].load;
    assert_eq!(
        (l.version, l.streams, l.keep_alive),
        (HttpVersion::Http3, 1, true)
    );
}

#[test]
fn a_list_of_versions_measures_each_document_over_each_under_both_names() {
    let p = Path::new("each.toml");
    let src = format!(
        "http = [\"1.1\", \"2\", \"3\"]\n{}",
        MINIMAL.replace(
            "requests = 10",
            "requests = 10\nstreams = 4\nkeep_alive = true"
        )
    ) + r#"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
load = { keep_alive = false, streams = 1 }
"#;
    // keep_alive = false with HTTP/2 in the list is the HTTP/2 error.
    let e = parse_str(&src, p).unwrap_err().to_string();
    assert!(
        e.contains("keep_alive = false cannot apply: the scenario speaks HTTP/2 (http = [\"1.1\", \"2\", \"3\"], line 1)"),
        "{e}"
    );
    let plan = parse_str(&src.replace("keep_alive = false, ", ""), p).unwrap();
    // HTTP/3 in the list: the run's certificate without tls = true; servers serve all three.
    assert!(plan.tls && plan.http2 && plan.http3);
    let loads: Vec<_> = plan
        .documents
        .iter()
        .map(|d| {
            let l = &d.load;
            (
                d.name.as_str(),
                d.path.as_str(),
                l.version,
                l.streams,
                l.keep_alive,
            )
        })
        .collect();
    let first = plan.documents[0].path.as_str();
    assert_eq!(
        loads,
        [
            (
                plan.documents[0].name.as_str(),
                first,
                HttpVersion::Http11,
                1,
                true
            ),
            (
                plan.documents[1].name.as_str(),
                first,
                HttpVersion::Http2,
                4,
                true
            ),
            (
                plan.documents[2].name.as_str(),
                first,
                HttpVersion::Http3,
                4,
                true
            ),
            ("page-h1", "/page.html", HttpVersion::Http11, 1, true),
            ("page-h2", "/page.html", HttpVersion::Http2, 1, true),
            ("page-h3", "/page.html", HttpVersion::Http3, 1, true),
        ]
    );
    assert!(plan.documents[0].name.ends_with("-h1"));
    // Without "3" the list needs tls = true, and then has no HTTP/3.
    let two = src
        .replace("\"2\", \"3\"]", "\"2\"]")
        .replace("keep_alive = false, ", "");
    let e = parse_str(&two, p).unwrap_err().to_string();
    assert!(e.contains("by ALPN over TLS: add tls = true"), "{e}");
    let plan = parse_str(&format!("tls = true\n{two}"), p).unwrap();
    assert!(plan.tls && plan.http2 && !plan.http3);
    assert_eq!(plan.documents.len(), 4);
    // A list of one is that version alone, under the document's own name.
    let one = src.replace("[\"1.1\", \"2\", \"3\"]", "[\"3\"]");
    let plan = parse_str(&one, p).unwrap();
    assert_eq!(plan.documents.len(), 2);
    assert_eq!(plan.documents[1].name, "page-h3");
}

#[test]
fn a_top_level_http_1_x_is_the_request_line_of_loads_that_name_none() {
    let p = Path::new("h11.toml");
    let src = format!("http = \"1.1\"\n{MINIMAL}")
        + r#"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
load = { http = "1.0" }
"#;
    let plan = parse_str(&src, p).unwrap();
    assert!(!plan.http2);
    let versions: Vec<_> = plan.documents.iter().map(|d| d.load.version).collect();
    assert_eq!(versions, [HttpVersion::Http11, HttpVersion::Http10]);
    // [load]'s own http comes before the top-level one.
    let src = src.replace("requests = 10", "requests = 10\nhttp = \"1.0\"");
    let plan = parse_str(&src, p).unwrap();
    assert_eq!(plan.documents[0].load.version, HttpVersion::Http10);
}

#[test]
fn the_kinds_say_whether_they_serve_http2_and_http3() {
    let manifest = |kind: &str| {
        kinds()
            .get(kind)
            .and_then(|k| k.manifest.clone().ok())
            .unwrap_or_else(|| panic!("no manifest for {kind}"))
    };
    // (kind, HTTP/2, HTTP/3)
    for (kind, h2, h3) in [
        ("nginx", true, false),
        ("nginx-trixie", true, true),
        ("apache", true, false),
        ("lighttpd", true, false),
        ("caddy", true, true),
        ("h2o", true, false),
        ("varnish", true, false),
        ("tornado", false, false),
        ("gatling", false, false),
        ("cherokee", false, false),
    ] {
        let m = manifest(kind);
        assert_eq!((m.http2, m.http3), (h2, h3), "{kind}");
    }
}
