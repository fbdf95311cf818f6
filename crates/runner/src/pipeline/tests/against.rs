//! A/B runs: a stored record's images measured beside the candidate's, both at once (or in ABBA
//! order), on fresh containers each round, until the paired comparison is decided or the rounds run out.

use super::*;
use crate::against::Against;
use report::AgainstStop;

/// A baseline record of TWO made by a first run, and an A/B run's options against it.
async fn baseline(setup: &Setup) -> Against {
    let ran = run(setup, Script::new()).await;
    assert!(complete(&ran));
    let path = setup.dir.path().join("baseline.json");
    std::fs::rename(setup.out(), &path).unwrap();
    let mut a = Against::new(ran.record().clone(), path);
    a.max_rounds = 6;
    a
}

/// The images the baseline ran, present on this machine's engine.
fn with_baseline_images() -> Script {
    Script {
        images: [
            ("sha256:web".to_string(), "65534:65534".to_string()),
            ("sha256:alt".to_string(), "65534:65534".to_string()),
        ]
        .into(),
        ..Script::new()
    }
}

async fn against_run(setup: &Setup, against: Against, script: Script) -> Ran {
    let mut opts = setup.options();
    opts.against = Some(against);
    run_with(setup, script, opts, None).await
}

/// The rounds an A/B run measured, from its candidate side's loads of `server`.
fn rounds_of(ran: &Ran, server: &str) -> Vec<u32> {
    let mut r: Vec<u32> = ran
        .record()
        .loads
        .iter()
        .filter(|l| l.server == server)
        .map(|l| l.round)
        .collect();
    r.dedup();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_turn_both_sides_are_measured_back_to_back_in_abba_order() {
    let setup = Setup::new(TWO);
    let mut against = baseline(&setup).await;
    against.fresh = false;
    against.together = false;
    let ran = against_run(&setup, against, with_baseline_images()).await;
    assert!(complete(&ran), "{:?}", ran.record().status);
    let a: Vec<&str> = ran.lines("done a").into_iter().collect();
    assert!(a.len() >= 8, "{a:?}");
    // ABBA from whichever side the run drew to go first.
    let (b, c) = ("done a [baseline] /", "done a /");
    let first = if a[0] == b { [b, c] } else { [c, b] };
    for (round, pair) in a.chunks(2).enumerate() {
        let expected = if round % 2 == 0 {
            first
        } else {
            [first[1], first[0]]
        };
        assert_eq!(pair, expected, "round {round}: {a:?}");
    }
    let against = ran.record().against.as_ref().unwrap();
    assert_eq!(against.loads.len(), ran.record().loads.len());
    assert!(against
        .servers
        .iter()
        .all(|s| s.name != "a" || s.image_tag == "benchctl/web:fake"));
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rounds_stop_when_decided_or_at_the_most_rounds() {
    let setup = Setup::new(TWO);
    let against = baseline(&setup).await;
    let ran = against_run(&setup, against, with_baseline_images()).await;
    let a = ran.record().against.as_ref().unwrap();
    let rounds = rounds_of(&ran, "a").len() as u32;
    match a.stop {
        Some(AgainstStop::Rounds) => assert_eq!(rounds, 6),
        Some(AgainstStop::Decided) => {
            let looks = report::paired::look_rounds(
                report::paired::first_look(6),
                6,
                report::Looks::Growing,
            );
            assert!(looks.contains(&rounds), "{rounds} not at a look {looks:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(rounds >= report::paired::MIN_ROUNDS);
    assert_eq!(ran.lines("against look ").len() as u32, rounds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_round_after_the_first_runs_on_fresh_containers_of_both_sides() {
    let setup = Setup::new(TWO);
    let against = baseline(&setup).await;
    let ran = against_run(&setup, against, with_baseline_images()).await;
    let rounds = rounds_of(&ran, "a").len();
    let fresh = ran.lines("against fresh ");
    assert_eq!(fresh.len(), rounds - 1, "{fresh:?}");
    // Each renewal starts all four containers again.
    assert!(fresh.iter().all(|l| l.ends_with(" 4")), "{fresh:?}");
    let starts = ran
        .fake
        .calls()
        .iter()
        .filter(|c| *c == "start a-baseline")
        .count();
    assert_eq!(starts, rounds);
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_image_that_is_not_here_stops_the_run_before_anything() {
    let setup = Setup::new(TWO);
    let against = baseline(&setup).await;
    let ran = against_run(&setup, against, Script::new()).await;
    match &ran.outcome {
        Err(RunError::Invalid(m)) => assert!(m.contains("is not on this machine"), "{m}"),
        other => panic!("{:?}", other.as_ref().map(|o| &o.record.status)),
    }
    assert!(ran.fake.calls().is_empty(), "{:?}", ran.fake.calls());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_server_that_dies_ends_that_servers_comparison_only() {
    let setup = Setup::new(TWO);
    let mut against = baseline(&setup).await;
    against.fresh = false;
    let script = Script {
        dies_after: [("a-baseline".to_string(), 1)].into(),
        ..with_baseline_images()
    };
    let ran = against_run(&setup, against, script).await;
    let a = ran.record().against.as_ref().unwrap();
    let base_a = a.servers.iter().find(|s| s.name == "a").unwrap();
    assert!(
        matches!(&base_a.status, ServerStatus::Unavailable { reason } if reason.starts_with("died")),
        "{base_a:?}"
    );
    assert!(a.loads.iter().all(|l| l.server != "a"));
    assert!(rounds_of(&ran, "b").len() >= 4);
    assert!(
        ran.lines("unavailable a [baseline]: died").len() == 1,
        "{:?}",
        ran.events
    );
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowed_candidate_runs_at_a_fraction_of_the_cpu_its_baseline_used() {
    let setup = Setup::new(TWO);
    let mut against = baseline(&setup).await;
    against.fresh = false;
    against.together = false;
    against.slowed = vec![("a".to_string(), 0.5)];
    let ran = against_run(&setup, against, with_baseline_images()).await;
    let calls = ran.fake.calls();
    assert!(
        calls.iter().any(|c| c.starts_with("share a 0.")),
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("share a-baseline")),
        "{calls:?}"
    );
    assert!(!calls.iter().any(|c| c.starts_with("share b")), "{calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn together_both_sides_are_loaded_at_once_under_half_the_servers_cpus() {
    let setup = Setup::new(TWO);
    let mut against = baseline(&setup).await;
    against.fresh = false;
    against.slowed = vec![("b".to_string(), 0.5)];
    let ran = against_run(&setup, against, with_baseline_images()).await;
    assert!(complete(&ran), "{:?}", ran.record().status);
    // Both loads of a pair start before either is done; a pair measured again at a smaller
    // share (the two loads left the generator no headroom) starts again.
    let course: Vec<&str> = ran
        .events
        .iter()
        .map(String::as_str)
        .filter(|l| {
            ["load a", "done a", "headroom a"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert!(testsupport::assert_pairs_loaded_together(&course) >= 8);
    let record = ran.record();
    let ab = record.against.as_ref().unwrap();
    assert!(ab.together);
    let half = setup.plan.cpus.servers.len() as f64 / 2.0;
    let shares = |loads: &[report::LoadRecord], server: &str| -> Vec<Option<f64>> {
        let mut s: Vec<_> = loads
            .iter()
            .filter(|l| l.server == server)
            .map(|l| l.server_share)
            .collect();
        s.dedup();
        s
    };
    // One share per side all run long (the one a pair settled on), at most half the CPUs.
    let a = shares(&ab.loads, "a");
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(a[0].is_some_and(|s| s <= half), "{a:?}");
    assert_eq!(shares(&record.loads, "a"), a);
    let base_b = shares(&ab.loads, "b");
    assert_eq!(base_b.len(), 1, "{base_b:?}");
    assert!(base_b[0].is_some_and(|s| s <= half), "{base_b:?}");
    // The slowed candidate: its factor of what the baseline side can use, at most its share.
    let b = shares(&record.loads, "b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(b[0].unwrap() <= 0.5 * base_b[0].unwrap() + 1e-9, "{b:?}");
    ran.left_nothing();
}
