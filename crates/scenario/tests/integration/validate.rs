//! What a valid scenario becomes: defaults, overrides, dependency order, hashes.

use model::{HttpVersion, Method};
use scenario::{
    Coalesce, GeneratorKind, Kinds, OptionValue, Plan, ScenarioError, DEFAULT_MEMORY,
    DEFAULT_TIMEOUT,
};
use std::path::Path;
use std::time::Duration;

mod files;
mod protocols;

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
fn the_engine_is_read_and_a_bad_one_positioned() {
    let src = MINIMAL.replace("requests = 10", "requests = 10\nengine = \"uring\"");
    let plan = parse_str(&src, Path::new("minimal.toml")).unwrap();
    assert_eq!(plan.documents[0].load.engine, model::Engine::Uring);
    let plan = parse_str(MINIMAL, Path::new("minimal.toml")).unwrap();
    assert_eq!(plan.documents[0].load.engine, model::Engine::Auto);
    let src = MINIMAL.replace("requests = 10", "requests = 10\nengine = \"kqueue\"");
    let err = parse_str(&src, Path::new("minimal.toml")).unwrap_err();
    let d = &err.diagnostics()[0];
    assert_eq!((d.line, d.column), (5, 10));
    assert!(
        d.message
            .starts_with("bad engine: unknown engine \"kqueue\": auto, epoll or uring"),
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
