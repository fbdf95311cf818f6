//! A capacity search through the whole pipeline, against nginx in Docker: after the
//! scenario's own load, the search starts from half its requests/s, takes its steps within its
//! bounds, is recorded with every step, shows in the report, and leaves nothing behind. The
//! command line's target (`RunOptions::capacity`) replaces the scenario's and keeps its bounds.

use crate::common::*;
use report::capacity::{CapacityKind, StartFrom, StepVerdict};
use report::RecordIo;
use report::{RunRecord, RunStatus};
use runner::RunOptions;
use std::sync::Arc;

const SEARCHED: &str = r#"
name = "searched"
[load]
requests = 1000
concurrency = 10
keep_alive = true
timeout = "5s"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
[capacity]
p99 = "50ms"
step = "500ms"
warmup = "200ms"
max_steps = 4
budget = "6s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_searches_each_servers_capacity_after_its_loads() {
    if !daemon_or_skip("a_run_searches_each_servers_capacity_after_its_loads").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) = scenario(SEARCHED);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let out = dir.path().join("x.json");
    let rec = Arc::new(Recorder::default());
    let opts = RunOptions {
        out: Some(out.clone()),
        capacity: Some("p90=25ms".parse().unwrap()),
        ..RunOptions::new()
    };
    let outcome = runner::run(&plan, opts, Arc::clone(&rec) as Arc<dyn runner::Observer>)
        .await
        .unwrap();
    let lines = rec.lines();
    assert!(outcome.succeeded(), "{:?}\n{lines:?}", outcome.problems);
    let record = RunRecord::load(&out).unwrap();
    assert_eq!(record, outcome.record);
    assert_eq!(record.status, RunStatus::Complete);
    assert_eq!(record.schema_version, report::SCHEMA_VERSION);

    // The load first, then the search.
    let load_at = lines.iter().position(|l| l == "done nginx /").unwrap();
    let search_at = lines.iter().position(|l| l == "capacity nginx /").unwrap();
    assert!(load_at < search_at, "{lines:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("capacity done nginx /")
    );

    assert_eq!(record.capacity.len(), 1);
    let c = &record.capacity[0];
    println!("{c:#?}");
    assert_eq!((c.server.as_str(), c.document.as_str()), ("nginx", "hello"));
    // The command line's target, the scenario's bounds.
    assert_eq!(
        (c.criteria.percentile, c.criteria.target_us),
        (90.0, 25_000)
    );
    assert_eq!((c.criteria.step_s, c.criteria.warmup_s), (0.5, 0.2));
    assert_eq!((c.criteria.max_steps, c.criteria.budget_s), (4, 6.0));
    // From half the closed-loop requests/s.
    assert_eq!(c.start_from, StartFrom::ClosedLoop);
    let closed = record.loads[0].load.requests_per_second;
    assert!(
        (c.start - closed / 2.0).abs() < 1e-6,
        "{} vs {closed}",
        c.start
    );
    assert_eq!(c.steps[0].rate, c.start);
    // Bounded, and every step measured its window at the rate asked.
    assert!(
        !c.steps.is_empty() && c.steps.len() <= 4,
        "{} steps",
        c.steps.len()
    );
    let spent: f64 = c.steps.iter().map(|s| s.wall_s).sum();
    assert!(spent <= 6.0 + 0.5, "the steps took {spent:.2} s");
    for s in &c.steps {
        assert!(s.window_s >= 0.45 && s.window_s <= 0.6, "{s:?}");
        assert!(s.started > 0 && s.answered <= s.started, "{s:?}");
        assert!(s.connections >= capacity_connections(s.rate), "{s:?}");
    }
    // Whatever the machine allowed, the result agrees with the steps.
    let passed = c
        .steps
        .iter()
        .filter(|s| s.verdict == StepVerdict::Pass)
        .map(|s| s.rate)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    match c.result.kind {
        CapacityKind::NonePassed => assert_eq!(passed, None),
        _ => assert!(c.result.rate.unwrap() >= passed.unwrap_or(0.0) * 0.99),
    }

    let text = report::render(&record, report::Format::Text, None).unwrap();
    assert!(text.contains("Capacity at p90 <= 25ms: hello"), "{text}");
    assert!(containers_of_run(&record.run_id).await.is_empty());
    assert!(my_run_folders().is_empty(), "{:?}", my_run_folders());
}

fn capacity_connections(rate: f64) -> u32 {
    runner::capacity::connections_for(rate, std::time::Duration::from_millis(25))
        .min(runner::capacity::connection_ceiling(1))
}
