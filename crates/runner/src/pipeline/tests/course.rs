//! A run's course when nothing fails, and what it refuses before it starts.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_and_document_is_measured_round_by_round_and_nothing_is_left() {
    let text = TWO.replace("runs = 1", "runs = 2")
        + "[[document]]\nname = \"page\"\npath = \"/page.html\"\ngenerate = \"html\"\nsize = 468\n";
    let setup = Setup::new(&text);
    let ran = run(&setup, Script::new()).await;
    assert!(complete(&ran), "{:?}", ran.record().status);
    assert!(problems(&ran).is_empty(), "{:?}", problems(&ran));
    // Round by round, each server's documents in turn.
    assert_eq!(
        ran.lines("done "),
        [
            "done a /",
            "done a /page.html",
            "done b /",
            "done b /page.html",
            "done a /",
            "done a /page.html",
            "done b /",
            "done b /page.html"
        ]
    );
    for l in &ran.record().loads {
        assert_eq!(
            (l.load.complete, l.load.failed, l.load.non_2xx),
            (40, 0, 0),
            "{l:?}"
        );
    }
    ran.left_nothing();
    ran.saved_whole(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_is_built_started_audited_and_verified_before_any_load() {
    let setup = Setup::new(TWO);
    let ran = run(&setup, Script::new()).await;
    assert_eq!(
        ran.events.iter().take(4).collect::<Vec<_>>(),
        ["building a", "built a", "ready a", "building b"]
    );
    let first_load = ran
        .events
        .iter()
        .position(|l| l.starts_with("load "))
        .unwrap();
    let last_ready = ran
        .events
        .iter()
        .rposition(|l| l.starts_with("ready "))
        .unwrap();
    assert!(last_ready < first_load, "{:?}", ran.events);
    for s in &ran.record().servers {
        assert!(matches!(s.status, ServerStatus::Available { .. }), "{s:?}");
        assert_eq!(s.server_header.as_deref(), Some("fake/1.0"));
        assert!(s.image_tag.starts_with("benchctl/"), "{s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_servers_asked_for_are_measured() {
    let setup = Setup::new(TWO);
    let mut opts = setup.options();
    opts.only = vec!["b".to_string()];
    let ran = run_with(&setup, Script::new(), opts, None).await;
    assert_eq!(ran.lines("done "), ["done b /"]);
    assert_eq!(ran.lines("building "), ["building b"]);
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_asked_for_brings_the_servers_it_needs_but_only_it_is_measured() {
    let setup = Setup::new(&format!(
        "{TWO}[[server]]\nname = \"front\"\nkind = \"cache\"\nbackend = \"a\"\n"
    ));
    let mut opts = setup.options();
    opts.only = vec!["front".to_string()];
    let ran = run_with(&setup, Script::new(), opts, None).await;
    assert_eq!(ran.lines("ready "), ["ready a", "ready front"]);
    assert_eq!(ran.lines("done "), ["done front /"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_is_started_after_its_backend_and_told_where_it_listens() {
    let setup = Setup::new(&format!(
        "{TWO}[[server]]\nname = \"front\"\nkind = \"cache\"\nbackend = \"b\"\n"
    ));
    let ran = run(&setup, Script::new()).await;
    assert!(problems(&ran).is_empty(), "{:?}", problems(&ran));
    let backend = ran.fake.env_of("front", "BENCH_BACKEND").unwrap();
    let b_port = ran.fake.env_of("b", "BENCH_PORT").unwrap();
    assert_eq!(backend, format!("127.0.0.1:{b_port}"));
    assert_eq!(ran.loads_of("front"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_only_name_is_refused_before_anything_starts() {
    let setup = Setup::new(TWO);
    let mut opts = setup.options();
    opts.only = vec!["nginx".to_string()];
    let ran = run_with(&setup, Script::new(), opts, None).await;
    match &ran.outcome {
        Err(RunError::Invalid(m)) => assert!(m.contains("--only nginx"), "{m}"),
        other => panic!("{:?}", other.as_ref().map(|o| &o.record.status)),
    }
    assert!(ran.fake.calls().is_empty(), "{:?}", ran.fake.calls());
    assert!(!setup.out().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_runs_are_refused_before_anything_starts() {
    let setup = Setup::new(TWO);
    let mut opts = setup.options();
    opts.runs = Some(0);
    let ran = run_with(&setup, Script::new(), opts, None).await;
    assert!(matches!(&ran.outcome, Err(RunError::Invalid(m)) if m.contains("at least 1")));
    assert!(ran.fake.calls().is_empty());
    assert!(!setup.out().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_results_file_that_exists_is_never_overwritten() {
    let setup = Setup::new(TWO);
    std::fs::write(setup.out(), "another run's record").unwrap();
    let ran = run(&setup, Script::new()).await;
    assert!(ran.outcome.is_err());
    assert!(ran.fake.calls().is_empty(), "{:?}", ran.fake.calls());
    assert_eq!(
        std::fs::read_to_string(setup.out()).unwrap(),
        "another run's record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_dead_runs_are_swept_first_and_said() {
    let setup = Setup::new(TWO);
    let script = Script {
        stale: 3,
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert_eq!(ran.events.first().map(String::as_str), Some("swept"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_that_fails_at_the_end_is_a_problem_that_says_where() {
    let setup = Setup::new(TWO);
    let script = Script {
        sweep_fails: [None].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    // Measured all the same; the run says what may be left and how to remove it.
    assert_eq!(ran.record().loads.len(), 2);
    assert!(
        problems(&ran)
            .iter()
            .any(|p| matches!(p, Problem::LeftBehind { host: None, .. })),
        "{:?}",
        problems(&ran)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_are_numbered_and_kept_in_the_order_they_ran() {
    let setup = Setup::new(&TWO.replace("runs = 1", "runs = 3"));
    let ran = run(&setup, Script::new()).await;
    let order: Vec<(u32, &str)> = ran
        .record()
        .loads
        .iter()
        .map(|l| (l.round, l.server.as_str()))
        .collect();
    assert_eq!(
        order,
        [(0, "a"), (0, "b"), (1, "a"), (1, "b"), (2, "a"), (2, "b")]
    );
    ran.saved_whole(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_machine_is_checked_before_the_run_and_the_record_keeps_it() {
    let setup = Setup::new(TWO);
    let opts = RunOptions {
        system_sample: Some(std::time::Duration::from_millis(50)),
        ..setup.options()
    };
    let ran = run_with(&setup, Script::new(), opts, None).await;
    assert!(complete(&ran), "{:?}", ran.record().status);
    let check = ran
        .record()
        .host
        .system
        .as_ref()
        .expect("the machine's check");
    assert_eq!(check.findings.len(), 10, "{check:?}");
    // A bias is said once, before anything starts.
    let biased = ran.lines("biased ");
    assert_eq!(
        biased.len(),
        usize::from(check.biases().count() > 0),
        "{biased:?}"
    );
    if !biased.is_empty() {
        assert_eq!(
            ran.events.iter().position(|e| e.starts_with("biased ")),
            Some(0)
        );
    }
}
