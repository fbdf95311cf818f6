//! A run cancelled at every step ends interrupted, with its record saved whole and nothing
//! left on any engine.

use super::*;

/// Cancels a run of TWO (two rounds) when the event line starting with `at` is heard.
async fn cancelled_at(at: &str) -> (Setup, Ran) {
    let setup = Setup::new(&TWO.replace("runs = 1", "runs = 2"));
    let ran = run_with(&setup, Script::new(), setup.options(), Some(at)).await;
    assert!(
        ran.events.iter().any(|l| l.starts_with(at)),
        "never heard {at}: {:?}",
        ran.events
    );
    let status = &ran.record().status;
    assert!(
        matches!(status, RunStatus::Interrupted { reason } if reason.starts_with("asked at")),
        "{status:?}"
    );
    assert!(problems(&ran)
        .iter()
        .any(|p| matches!(p, Problem::Interrupted(_))));
    ran.left_nothing();
    ran.saved_whole(&setup);
    (setup, ran)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_while_the_first_image_builds() {
    let (_, ran) = cancelled_at("building a").await;
    assert!(ran.record().loads.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_once_the_first_server_is_ready() {
    let (_, ran) = cancelled_at("ready a").await;
    assert!(ran.record().loads.is_empty());
    assert!(ran.lines("load ").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_as_a_load_starts_keeps_no_part_of_it() {
    let (_, ran) = cancelled_at("load a /").await;
    assert!(ran.record().loads.is_empty(), "{:?}", ran.record().loads);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_between_loads_keeps_the_loads_made() {
    let (_, ran) = cancelled_at("done b /").await;
    assert_eq!(ran.record().loads.len(), 2);
    assert!(ran.lines("load ").len() == 2, "{:?}", ran.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_while_the_second_server_builds_removes_the_first() {
    let (_, ran) = cancelled_at("building b").await;
    assert!(ran.record().loads.is_empty());
    assert!(ran.fake.calls().contains(&"start a".to_string()));
}
