//! The shipped scenarios in `scenarios/` must validate, and must carry the parameters of the
//! posts they reproduce (read from `../shared/seeds/`): these tests pin them.

use model::HttpVersion;
use scenario::{DocumentSource, GeneratorKind, OptionValue, Plan};
use std::path::PathBuf;

fn scenarios_dir() -> PathBuf {
    testsupport::repo_root().join("scenarios")
}

fn load(name: &str) -> Plan {
    let path = scenarios_dir().join(name);
    scenario::load_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn kinds(plan: &Plan) -> Vec<&str> {
    plan.servers.iter().map(|s| s.kind.as_str()).collect()
}

/// A server's option, by name.
fn option<'a>(plan: &'a Plan, server: &str, name: &str) -> Option<&'a OptionValue> {
    let s = plan.servers.iter().find(|s| s.name == server)?;
    s.options.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

#[test]
fn every_scenario_file_validates() {
    let mut count = 0;
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let plan = scenario::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                Some(plan.name.as_str()),
                path.file_stem().and_then(|s| s.to_str()),
                "a scenario's name matches its file name"
            );
            count += 1;
        }
    }
    assert!(
        count >= 6,
        "expected the six shipped scenarios, found {count}"
    );
}

#[test]
fn hello_world_is_seed_000() {
    let plan = load("hello-world.toml");
    assert_eq!(plan.seed.as_deref(), Some("000_bc26a0abf24b7d32.txt"));
    assert_eq!(kinds(&plan), ["apache", "nginx", "tornado"]);
    let [doc] = &plan.documents[..] else { panic!() };
    assert_eq!(doc.path, "/");
    assert_eq!(doc.length, 13);
    assert_eq!(
        doc.source,
        DocumentSource::Generated {
            kind: GeneratorKind::Hello,
            size: 13
        }
    );
    assert_eq!(doc.load.requests, Some(10_000));
    assert_eq!(doc.load.concurrency, 300);
    assert!(!doc.load.keep_alive);
    assert!(doc.load.version == HttpVersion::Http10);
}

#[test]
fn gatling_vs_nginx_is_seed_001() {
    let plan = load("gatling-vs-nginx.toml");
    assert_eq!(kinds(&plan), ["gatling", "nginx"]);
    let [doc] = &plan.documents[..] else { panic!() };
    assert_eq!(doc.path, "/index.html");
    assert_eq!(doc.length, 151);
    assert_eq!(
        (doc.load.requests, doc.load.concurrency),
        (Some(20_000), 10)
    );
}

#[test]
fn robots_is_seed_002_with_a_204_byte_file() {
    let plan = load("robots.toml");
    assert_eq!(kinds(&plan), ["nginx", "apache"]);
    let [doc] = &plan.documents[..] else { panic!() };
    assert_eq!(doc.path, "/robots.txt");
    assert_eq!(doc.length, 204);
    let DocumentSource::File(file) = &doc.source else {
        panic!("{:?}", doc.source)
    };
    assert_eq!(std::fs::metadata(&file.path).unwrap().len(), 204);
    assert_eq!((doc.load.requests, doc.load.concurrency), (Some(1000), 200));
}

#[test]
fn small_static_is_seed_004_small_files_with_varnish_after_nginx() {
    let plan = load("small-static.toml");
    assert_eq!(kinds(&plan), ["nginx", "cherokee", "varnish"]);
    assert_eq!(plan.servers[2].name, "varnish");
    assert_eq!(
        option(&plan, "varnish", "backend"),
        Some(&OptionValue::Server(0))
    );
    assert_eq!(plan.servers[0].name, "nginx");
    let lengths: Vec<(&str, u64)> = plan
        .documents
        .iter()
        .map(|d| (d.path.as_str(), d.length))
        .collect();
    assert_eq!(lengths, [("/", 468), ("/cherokee-logo.png", 23_619)]);
    for doc in &plan.documents {
        assert_eq!((doc.load.requests, doc.load.concurrency), (Some(1000), 200));
    }
}

#[test]
fn large_file_is_seed_004_hundred_megabytes() {
    let plan = load("large-file.toml");
    let [doc] = &plan.documents[..] else { panic!() };
    assert_eq!(doc.path, "/100mb.test");
    assert_eq!(doc.length, 104_857_600);
    assert_eq!((doc.load.requests, doc.load.concurrency), (Some(200), 20));
    assert_eq!(
        option(&plan, "varnish", "storage"),
        Some(&OptionValue::Size(256 << 20))
    );
}

#[test]
fn quick_is_small_enough_for_ci() {
    let plan = load("quick.toml");
    assert_eq!(plan.runs, 1);
    let total: u64 = plan
        .documents
        .iter()
        .map(|d| d.load.requests.unwrap() * plan.servers.len() as u64)
        .sum();
    assert!(
        total <= 10_000,
        "{total} requests is too many for a smoke run"
    );
    assert!(plan
        .servers
        .iter()
        .all(|s| matches!(s.kind.as_str(), "nginx" | "apache")));
}
