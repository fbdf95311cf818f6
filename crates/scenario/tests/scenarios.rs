//! The shipped scenarios in `scenarios/` must validate, and must carry the parameters of the
//! posts they reproduce (read from `../shared/seeds/`): these tests pin them.

use loadgen::HttpVersion;
use scenario::{DocumentSource, GeneratorKind, Plan, ServerKind};
use std::path::{Path, PathBuf};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(name: &str) -> Plan {
    let path = scenarios_dir().join(name);
    scenario::load_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn kinds(plan: &Plan) -> Vec<ServerKind> {
    plan.servers.iter().map(|s| s.kind).collect()
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
    assert_eq!(
        kinds(&plan),
        [ServerKind::Apache, ServerKind::Nginx, ServerKind::Tornado]
    );
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
    assert_eq!(kinds(&plan), [ServerKind::Gatling, ServerKind::Nginx]);
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
    assert_eq!(kinds(&plan), [ServerKind::Nginx, ServerKind::Apache]);
    let [doc] = &plan.documents[..] else { panic!() };
    assert_eq!(doc.path, "/robots.txt");
    assert_eq!(doc.length, 204);
    let DocumentSource::File(file) = &doc.source else {
        panic!("{:?}", doc.source)
    };
    assert_eq!(std::fs::metadata(file).unwrap().len(), 204);
    assert_eq!((doc.load.requests, doc.load.concurrency), (Some(1000), 200));
}

#[test]
fn small_static_is_seed_004_small_files_with_varnish_after_nginx() {
    let plan = load("small-static.toml");
    assert_eq!(
        kinds(&plan),
        [ServerKind::Nginx, ServerKind::Cherokee, ServerKind::Varnish]
    );
    let varnish = &plan.servers[2];
    let backend = varnish.backend.as_ref().unwrap();
    assert_eq!((backend.index, backend.name.as_str()), (0, "nginx"));
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
    let varnish = plan
        .servers
        .iter()
        .find(|s| s.kind == ServerKind::Varnish)
        .unwrap();
    assert_eq!(varnish.storage, Some(256 << 20));
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
        .all(|s| matches!(s.kind, ServerKind::Nginx | ServerKind::Apache)));
}
