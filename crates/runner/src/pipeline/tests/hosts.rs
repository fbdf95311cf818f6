//! Deaths during the run, and servers on other machines' engines: ports taken there, images
//! shipped there, a host that stops answering, one that cannot be reached, and one with fewer
//! CPUs than the scenario names.

use super::*;

/// TWO with server b on host h1, whose engine is at `url`.
fn on_host(extra_host: &str) -> String {
    TWO.replace("kind = \"alt\"", "kind = \"alt\"\nhost = \"h1\"")
        + &format!("[[host]]\nname = \"h1\"\nurl = \"tcp://127.0.0.1:2375\"\ninsecure = true\n{extra_host}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_during_a_load_is_reported_with_its_log_and_the_others_go_on() {
    let setup = Setup::new(&TWO.replace("runs = 1", "runs = 2"));
    // Its check before the first load passes; the one after it finds it dead.
    let script = Script {
        dies_after: [("a".to_string(), 1)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    let reason = ran.reason("a");
    assert!(
        reason.starts_with("died before or during the load of /"),
        "{reason}"
    );
    assert!(reason.contains("out.a.log"), "{reason}");
    // A load the server died in is not kept; b runs both rounds.
    assert_eq!(ran.loads_of("a"), 0);
    assert_eq!(ran.loads_of("b"), 2);
    assert!(
        ran.lines("unavailable a: died").len() == 1,
        "{:?}",
        ran.events
    );
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_death_in_a_later_round_keeps_the_rounds_before_it() {
    let setup = Setup::new(&TWO.replace("runs = 1", "runs = 3"));
    let script = Script {
        dies_after: [("a".to_string(), 3)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert_eq!(ran.loads_of("a"), 1);
    assert_eq!(ran.loads_of("b"), 3);
    assert!(ran.reason("a").starts_with("died "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_dies_ends_its_cache_too() {
    let setup = Setup::new(&format!(
        "{TWO}[[server]]\nname = \"front\"\nkind = \"cache\"\nbackend = \"b\"\n"
    ));
    // b's own load passes two checks; the check before the cache's load finds it dead.
    let script = Script {
        dies_after: [("b".to_string(), 2)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert_eq!(ran.loads_of("b"), 1);
    assert_eq!(ran.loads_of("front"), 0);
    assert!(ran
        .reason("b")
        .contains("died before or during the load of / on front"));
    let front = ran.reason("front");
    assert!(front.contains("b, which it needs, died"), "{front}");
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_a_host_runs_there_and_says_where() {
    let setup = Setup::new(&on_host(""));
    let ran = run(&setup, Script::new()).await;
    assert!(problems(&ran).is_empty(), "{:?}", problems(&ran));
    let calls = ran.fake.calls();
    assert!(calls.contains(&"build alt @h1".to_string()), "{calls:?}");
    assert!(calls.contains(&"start b @h1".to_string()), "{calls:?}");
    let b = ran.record().servers.iter().find(|s| s.name == "b").unwrap();
    assert_eq!(b.host.as_deref(), Some("h1"));
    assert_eq!(ran.record().engines.len(), 1);
    assert_eq!(ran.record().engines[0].name, "h1");
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_taken_on_a_host_is_tried_again_on_another() {
    let setup = Setup::new(&on_host(""));
    let script = Script {
        port_taken: [("b".to_string(), 2)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert_eq!(ran.loads_of("b"), 1);
    let calls = ran.fake.calls();
    let starts = calls.iter().filter(|c| *c == "start b @h1").count();
    let removes = calls.iter().filter(|c| *c == "remove b @h1").count();
    // Two taken, removed, the third serves (and is removed at the end).
    assert_eq!((starts, removes), (3, 3), "{calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_taken_on_a_host_every_time_makes_the_server_unavailable() {
    let setup = Setup::new(&on_host(""));
    let script = Script {
        port_taken: [("b".to_string(), 3)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert!(ran.reason("b").starts_with("never became ready"));
    let starts = ran
        .fake
        .calls()
        .iter()
        .filter(|c| *c == "start b @h1")
        .count();
    assert_eq!(starts, 3);
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_has_its_images_shipped_gets_them_from_here() {
    let setup = Setup::new(&on_host("images = \"ship\"\n"));
    let ran = run(&setup, Script::new()).await;
    let calls = ran.fake.calls();
    assert!(calls.contains(&"build alt".to_string()), "{calls:?}");
    assert!(
        calls.contains(&"ship benchctl/alt:fake to h1".to_string()),
        "{calls:?}"
    );
    assert!(!calls
        .iter()
        .any(|c| c.starts_with("build") && c.ends_with("@h1")));
    assert_eq!(ran.lines("shipped "), ["shipped b to h1: sent"]);
    assert_eq!(ran.loads_of("b"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_that_fails_on_a_host_suggests_shipping_its_image() {
    let setup = Setup::new(&on_host(""));
    let script = Script {
        build_fails: ["alt".to_string()].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    let reason = ran.reason("b");
    assert!(
        reason.contains("images = \"ship\" in its [[host]]"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_stops_answering_ends_its_servers_and_the_run_says_what_stays_there() {
    let setup = Setup::new(&on_host("").replace("runs = 1", "runs = 2"));
    let script = Script {
        lost_after: [("h1".to_string(), 1)].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    let reason = ran.reason("b");
    assert!(
        reason.contains("lost contact with its engine on h1"),
        "{reason}"
    );
    assert_eq!(ran.loads_of("a"), 2);
    // Not waited for: its container is left to the last sweep, which cannot reach it either.
    let calls = ran.fake.calls();
    assert!(calls.contains(&"leak b @h1".to_string()), "{calls:?}");
    assert!(
        problems(&ran)
            .iter()
            .any(|p| matches!(p, Problem::LeftBehind { host: Some(h), .. } if h == "h1")),
        "{:?}",
        problems(&ran)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_cannot_be_reached_stops_the_run_before_anything() {
    let setup = Setup::new(&on_host(""));
    let script = Script {
        unreachable: ["h1".to_string()].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert!(matches!(&ran.outcome, Err(RunError::Host { host, .. }) if host == "h1"));
    assert!(ran.fake.calls().is_empty(), "{:?}", ran.fake.calls());
    assert!(!setup.out().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_the_host_does_not_have_is_refused_before_anything() {
    let setup = Setup::new(&on_host(""));
    let script = Script {
        cpus: 1,
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    match &ran.outcome {
        Err(RunError::Invalid(m)) => assert!(m.contains("host h1 has CPUs 0-0"), "{m}"),
        other => panic!("{:?}", other.as_ref().map(|o| &o.record.status)),
    }
    assert!(ran.fake.calls().is_empty());
}
