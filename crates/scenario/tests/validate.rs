//! What a valid scenario becomes: defaults, overrides, dependency order, hashes.

use loadgen::{HttpVersion, Method};
use scenario::{
    Coalesce, DocumentSource, GeneratorKind, HostImages, HostUrl, Kinds, OptionValue, Plan,
    ScenarioError, TlsKey, DEFAULT_MEMORY, DEFAULT_TIMEOUT,
};
use std::path::Path;
use std::time::Duration;

/// The repository's server kinds (these scenarios live nowhere near them).
fn kinds() -> Kinds {
    Kinds::discover(&[testsupport::repo_root().join("docker")])
}

fn parse_str(src: &str, path: &Path) -> Result<Plan, ScenarioError> {
    scenario::parse_str_with(src, path, &kinds())
}

fn load_file(path: &Path) -> Result<Plan, ScenarioError> {
    scenario::load_file_with(path, &kinds())
}

fn option<'a>(plan: &'a Plan, server: &str, name: &str) -> Option<&'a OptionValue> {
    let s = plan.servers.iter().find(|s| s.name == server)?;
    s.options.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

const MINIMAL: &str = r#"
name = "minimal"
[load]
requests = 10
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#;

#[test]
fn min_duration_is_inherited_and_overridden_like_the_other_load_keys() {
    let src = MINIMAL.replace("requests = 10", "requests = 10\nmin_duration = \"5s\"")
        + r#"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
load = { min_duration = "2s" }

[[document]]
name = "timed"
path = "/timed.html"
generate = "html"
size = 468
load = { duration = "3s" }
"#;
    let plan = parse_str(&src, Path::new("min.toml")).unwrap();
    let min = |i: usize| plan.documents[i].load.min_duration;
    assert_eq!(min(0), Some(Duration::from_secs(5)));
    assert_eq!(min(1), Some(Duration::from_secs(2)));
    // A document bounded by time alone does not inherit a repetition it cannot use.
    assert_eq!(min(2), None);
    assert_eq!(
        plan.documents[2].load.duration,
        Some(Duration::from_secs(3))
    );
    let plain = parse_str(MINIMAL, Path::new("minimal.toml")).unwrap();
    assert_eq!(plain.documents[0].load.min_duration, None);
}

#[test]
fn defaults_are_resolved_like_ab() {
    let plan = parse_str(MINIMAL, Path::new("minimal.toml")).unwrap();
    assert_eq!(plan.runs, 1);
    assert_eq!(plan.description, "");
    assert_eq!(plan.seed, None);
    assert_eq!(plan.cpus.servers, [1]);
    assert_eq!(plan.cpus.loadgen, [0]);
    assert_eq!(plan.cpus.servers_cpuset(), "1");
    let server = &plan.servers[0];
    assert_eq!(server.memory, DEFAULT_MEMORY);
    assert_eq!((server.port, server.options.len()), (None, 0));
    let doc = &plan.documents[0];
    assert_eq!(doc.disk_path, Path::new("index.html"));
    let load = &doc.load;
    assert_eq!(load.requests, Some(10));
    assert_eq!(load.duration, None);
    assert_eq!(load.concurrency, 1);
    assert!(!load.keep_alive && load.version == HttpVersion::Http10 && load.method == Method::Get);
    assert_eq!(load.timeout, DEFAULT_TIMEOUT);
    assert_eq!(load.warmup, Duration::ZERO);
    assert_eq!(load.rate, None);
    assert!(load.rx_stamps);
    assert_eq!(load.coalesce, Coalesce::Auto);
}

#[test]
fn timing_keys_resolve_and_documents_override_them() {
    let src = r#"
name = "timing"
[load]
requests = 10
user_timestamps = true
coalesce = "off"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "a"
path = "/a"
generate = "hello"
[[document]]
name = "b"
path = "/b"
generate = "hello"
load = { user_timestamps = false, coalesce = "50us" }
"#;
    let plan = parse_str(src, Path::new("timing.toml")).unwrap();
    let (a, b) = (&plan.documents[0].load, &plan.documents[1].load);
    assert!(!a.rx_stamps);
    assert_eq!(a.coalesce, Coalesce::Off);
    assert!(b.rx_stamps);
    assert_eq!(b.coalesce, Coalesce::Nap(Duration::from_micros(50)));
}

#[test]
fn a_bad_coalesce_is_positioned() {
    let src = MINIMAL.replace("requests = 10", "requests = 10\ncoalesce = \"2s\"");
    let err = parse_str(&src, Path::new("minimal.toml")).unwrap_err();
    let d = &err.diagnostics()[0];
    assert_eq!((d.line, d.column), (5, 12));
    assert!(
        d.message
            .starts_with("bad coalesce: `2s` is longer than a second"),
        "{}",
        d.message
    );
}

#[test]
fn the_hash_is_sha256_of_the_source_bytes() {
    let plan = parse_str(MINIMAL, Path::new("minimal.toml")).unwrap();
    assert_eq!(plan.scenario_hash, scenario::sha256_hex(MINIMAL.as_bytes()));
    assert_eq!(plan.scenario_hash.len(), 64);
    let changed = MINIMAL.replace("requests = 10", "requests = 11");
    let other = parse_str(&changed, Path::new("minimal.toml")).unwrap();
    assert_ne!(plan.scenario_hash, other.scenario_hash);
    // Known vector: SHA-256 of "abc".
    assert_eq!(
        scenario::sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn documents_override_the_scenario_load_key_by_key() {
    let src = r#"
name = "overrides"
[load]
requests = 1000
concurrency = 200
keep_alive = true
timeout = "5s"
method = "HEAD"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "a"
path = "/a.html"
generate = "html"
size = 468
[[document]]
name = "b"
path = "/b.bin"
generate = "blob"
size = "1k"
[document.load]
duration = "1.5s"
http = "1.1"
rate = 5000
warmup = "500ms"
keep_alive = false
"#;
    let plan = parse_str(src, Path::new("o.toml")).unwrap();
    let a = &plan.documents[0].load;
    assert_eq!(
        (a.requests, a.duration, a.concurrency),
        (Some(1000), None, 200)
    );
    assert!(a.keep_alive && a.method == Method::Head && a.version == HttpVersion::Http10);
    assert_eq!(a.timeout, Duration::from_secs(5));
    let b = &plan.documents[1];
    assert_eq!(b.length, 1024);
    let b = &b.load;
    // A document's duration replaces the inherited request count.
    assert_eq!(
        (b.requests, b.duration),
        (None, Some(Duration::from_millis(1500)))
    );
    assert_eq!(b.concurrency, 200);
    assert!(!b.keep_alive && b.version == HttpVersion::Http11 && b.method == Method::Head);
    assert_eq!(b.rate, Some(5000.0));
    assert_eq!(b.warmup, Duration::from_millis(500));
    assert_eq!(b.timeout, Duration::from_secs(5));
}

#[test]
fn servers_come_in_dependency_order() {
    let src = r#"
name = "chain"
[cpus]
servers = "2-3"
loadgen = "0,1"
[load]
requests = 10
[[server]]
name = "front"
kind = "varnish"
backend = "middle"
[[server]]
name = "apache"
kind = "apache"
port = 8081
[[server]]
name = "middle"
kind = "varnish"
backend = "nginx"
storage = "64m"
memory = "128m"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#;
    let plan = parse_str(src, Path::new("chain.toml")).unwrap();
    let names: Vec<&str> = plan.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["nginx", "middle", "front", "apache"]);
    for (i, s) in plan.servers.iter().enumerate() {
        assert!(
            s.depends_on().all(|d| d < i),
            "{} needs a later server",
            s.name
        );
    }
    assert_eq!(
        option(&plan, "front", "backend"),
        Some(&OptionValue::Server(1))
    );
    assert_eq!(
        option(&plan, "middle", "backend"),
        Some(&OptionValue::Server(0))
    );
    assert_eq!(
        option(&plan, "middle", "storage"),
        Some(&OptionValue::Size(64 << 20))
    );
    assert_eq!(plan.servers[1].memory, 128 << 20);
    // The manifest's default.
    assert_eq!(
        option(&plan, "front", "storage"),
        Some(&OptionValue::Size(256 << 20))
    );
    assert_eq!(plan.servers[3].port, Some(8081));
    assert_eq!(plan.cpus.servers, [2, 3]);
    assert_eq!(plan.cpus.loadgen_cpuset(), "0-1");
}

#[test]
fn huge_documents_with_many_requests_are_fine() {
    let src = r#"
name = "huge"
[load]
requests = 1000000000
concurrency = 10000
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "big"
path = "/big"
generate = "blob"
size = "50g"
"#;
    let plan = parse_str(src, Path::new("huge.toml")).unwrap();
    assert_eq!(plan.documents[0].length, 50 << 30);
    assert_eq!(plan.documents[0].load.requests, Some(1_000_000_000));
}

#[test]
fn file_documents_resolve_against_the_scenario_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/page.txt"), b"twelve bytes").unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        r#"name = "files"
[load]
requests = 5
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "page"
path = "/sub/page.txt"
file = "docs/page.txt"
"#,
    )
    .unwrap();
    let plan = load_file(&path).unwrap();
    let doc = &plan.documents[0];
    let DocumentSource::File(file) = &doc.source else {
        panic!("{:?}", doc.source)
    };
    assert_eq!(file.path, dir.path().join("docs/page.txt"));
    assert_eq!(doc.length, 12);
    assert_eq!(doc.disk_path, Path::new("sub/page.txt"));
}

#[test]
fn an_unreadable_file_is_a_read_error_naming_it() {
    let err = scenario::load_file(Path::new("no/such/scenario.toml")).unwrap_err();
    assert!(matches!(err, ScenarioError::Read { .. }));
    assert!(err.diagnostics().is_empty());
    assert!(err
        .to_string()
        .starts_with("no/such/scenario.toml: error: cannot read the scenario file"));
}

#[test]
fn invalid_utf8_is_positioned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, b"name = \"ok\"\ndescription = \"caf\xe9\"\n").unwrap();
    let err = load_file(&path).unwrap_err();
    let d = &err.diagnostics()[0];
    assert_eq!((d.line, d.column), (2, 19));
    assert!(d.message.starts_with("the file is not valid UTF-8"));
}

#[test]
fn all_semantic_errors_are_reported_together() {
    let src = r#"
name = "many"
[load]
requests = 0
[[server]]
name = "a"
kind = "thttpd"
[[server]]
name = "b"
kind = "varnish"
[[document]]
name = "x"
path = "x"
generate = "png"
size = 10
"#;
    let err = parse_str(src, Path::new("many.toml")).unwrap_err();
    let lines: Vec<usize> = err.diagnostics().iter().map(|d| d.line).collect();
    // requests, kind, varnish without backend, path, png size: in file order.
    assert_eq!(lines, [4, 7, 8, 13, 15]);
}

#[test]
fn generator_kind_names_print_as_written() {
    assert_eq!(GeneratorKind::Png.to_string(), "png");
}

/// A scenario in its own folder, with `file` documents named as given.
fn with_files(files: &[&str], extra: &str) -> (tempfile::TempDir, Result<Plan, ScenarioError>) {
    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    std::fs::create_dir(&scenario_dir).unwrap();
    let mut text = format!("name = \"files\"\n{extra}\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n");
    for (i, f) in files.iter().enumerate() {
        text.push_str(&format!(
            "[[document]]\nname = \"d{i}\"\npath = \"/d{i}\"\nfile = \"{f}\"\n"
        ));
    }
    let path = scenario_dir.join("s.toml");
    std::fs::write(&path, &text).unwrap();
    let r = load_file(&path);
    (dir, r)
}

fn messages(r: &Result<Plan, ScenarioError>) -> Vec<String> {
    match r {
        Ok(_) => Vec::new(),
        Err(e) => e.diagnostics().iter().map(|d| d.message.clone()).collect(),
    }
}

#[test]
fn files_outside_the_scenarios_folder_are_refused() {
    // Host secrets by absolute path, by climbing out, and through a symlink.
    let (dir, r) = with_files(&["/etc/passwd", "../../../../../../etc/passwd"], "");
    let m = messages(&r);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m.iter().all(|m| m.contains("is outside")), "{m:?}");
    drop(dir);

    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    std::fs::create_dir(&scenario_dir).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", scenario_dir.join("innocent.txt")).unwrap();
    let path = scenario_dir.join("s.toml");
    std::fs::write(
        &path,
        "name = \"x\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n\
         [[document]]\nname = \"d\"\npath = \"/d\"\nfile = \"innocent.txt\"\n",
    )
    .unwrap();
    let m = messages(&load_file(&path));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].contains("is outside") && m[0].contains("/etc/passwd"),
        "{m:?}"
    );
}

#[test]
fn the_shadow_file_is_never_served() {
    // Readable by root only: refused whatever the scenario's folder (here `documents = "/etc"`
    // would even put it inside).
    if !std::path::Path::new("/etc/shadow").exists() {
        return;
    }
    let (_dir, r) = with_files(&["/etc/shadow"], "documents = \"/etc\"");
    let m = messages(&r);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("not readable by other users"), "{m:?}");
    // And `documents = "/"` is refused outright.
    let (_dir, r) = with_files(&["/etc/hostname"], "documents = \"/\"");
    assert!(
        messages(&r)
            .iter()
            .any(|m| m.contains("any file of this machine")),
        "{:?}",
        messages(&r)
    );
}

#[test]
fn a_documents_folder_is_where_files_may_come_from() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let scenario_dir = dir.path().join("scenario");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&scenario_dir).unwrap();
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("page.html"), "<p>hi</p>").unwrap();
    std::fs::write(docs.join("secret.txt"), "s").unwrap();
    std::fs::set_permissions(
        docs.join("secret.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let path = scenario_dir.join("s.toml");
    let text = |file: &str| {
        format!(
            "name = \"x\"\ndocuments = \"../docs\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n\
             [[document]]\nname = \"d\"\npath = \"/d\"\nfile = \"{file}\"\n"
        )
    };
    std::fs::write(&path, text("../docs/page.html")).unwrap();
    let plan = load_file(&path).unwrap();
    let DocumentSource::File(file) = &plan.documents[0].source else {
        panic!("{:?}", plan.documents[0].source)
    };
    assert_eq!(file.path, docs.canonicalize().unwrap().join("page.html"));
    std::fs::write(&path, text("../docs/secret.txt")).unwrap();
    let m = messages(&load_file(&path));
    assert!(m[0].contains("mode 0600"), "{m:?}");
}

#[test]
fn every_unknown_key_is_reported_at_once() {
    let src = "name = \"x\"\nrnus = 2\n[load]\nrequests = 1\nconcurency = 2\n[[server]]\nname = \"a\"\nkind = \"nginx\"\nbakend = \"b\"\n";
    let e = parse_str(src, Path::new("k.toml")).unwrap_err();
    let got: Vec<(usize, usize)> = e.diagnostics().iter().map(|d| (d.line, d.column)).collect();
    assert_eq!(got, [(2, 1), (5, 1), (9, 1)], "{e}");
}

#[test]
fn validation_time_grows_linearly_with_the_documents() {
    // 20,000 documents validated in well under the 24 s the quadratic position lookup took:
    // count the work, not the clock, by comparing 2,000 with 20,000 documents.
    let make = |n: usize| {
        let mut s = String::from(
            "name = \"many\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"nginx\"\n",
        );
        for i in 0..n {
            s.push_str(&format!(
                "[[document]]\nname = \"d{i}\"\npath = \"/d/{i}.html\"\ngenerate = \"hello\"\n"
            ));
        }
        s
    };
    // The best of three, so that a moment of another process's load on a shared machine does
    // not count.
    let time = |n: usize| {
        let src = make(n);
        (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                let plan = parse_str(&src, Path::new("many.toml")).unwrap();
                assert_eq!(plan.documents.len(), n);
                t.elapsed()
            })
            .min()
            .unwrap()
    };
    let small = time(2_000).max(std::time::Duration::from_millis(1));
    let large = time(20_000);
    // Linear is ~10x; quadratic would be ~100x. Generous for a shared machine.
    assert!(
        large < small * 50,
        "2,000 documents: {small:?}; 20,000: {large:?}"
    );
}

#[test]
fn a_capacity_table_asks_for_a_search_with_its_defaults_or_its_own_bounds() {
    let plan = parse_str(MINIMAL, Path::new("minimal.toml")).unwrap();
    assert_eq!(plan.capacity, None, "no [capacity], no search");

    let src = format!("{MINIMAL}\n[capacity]\np99 = \"10ms\"\n");
    let c = parse_str(&src, Path::new("c.toml"))
        .unwrap()
        .capacity
        .unwrap();
    assert_eq!(c.target.percentile, scenario::Percentile::P99);
    assert_eq!(c.target.latency, Duration::from_millis(10));
    assert_eq!(c.step, scenario::capacity::DEFAULT_STEP);
    assert_eq!(c.warmup, scenario::capacity::DEFAULT_WARMUP);
    assert_eq!(c.max_steps, scenario::capacity::DEFAULT_MAX_STEPS);
    assert_eq!(c.budget, scenario::capacity::DEFAULT_BUDGET);
    assert_eq!(c.start, None);

    let src = format!(
        "{MINIMAL}\n[capacity]\n\"p99.9\" = \"2.5ms\"\nstep = \"1s\"\nwarmup = \"0s\"\nmax_steps = 6\nbudget = \"20s\"\nstart = 800\n"
    );
    let c = parse_str(&src, Path::new("c.toml"))
        .unwrap()
        .capacity
        .unwrap();
    assert_eq!(c.target.percentile, scenario::Percentile::P999);
    assert_eq!(c.target.latency, Duration::from_micros(2500));
    assert_eq!(
        (c.step, c.warmup, c.max_steps, c.budget, c.start),
        (
            Duration::from_secs(1),
            Duration::ZERO,
            6,
            Duration::from_secs(20),
            Some(800.0)
        )
    );
    // The command line's --capacity replaces the target and keeps the bounds.
    let t: scenario::CapacityTarget = "p50=1ms".parse().unwrap();
    let c = c.with_target(t);
    assert_eq!((c.target, c.max_steps), (t, 6));
}

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
fn the_kinds_say_whether_they_serve_http2() {
    let serves = |kind: &str| {
        kinds()
            .get(kind)
            .and_then(|k| k.manifest.as_ref().ok())
            .map(|m| m.http2)
    };
    for kind in ["nginx", "apache", "lighttpd", "caddy", "h2o", "varnish"] {
        assert_eq!(serves(kind), Some(true), "{kind}");
    }
    for kind in ["tornado", "gatling", "cherokee"] {
        assert_eq!(serves(kind), Some(false), "{kind}");
    }
}
