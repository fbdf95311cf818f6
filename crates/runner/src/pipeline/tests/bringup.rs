//! What a failure at each step of a server's bring-up makes of it: unavailable with the step
//! and the cause, its container gone, the other servers measured.

use super::*;

/// Runs TWO with `script` and returns why server b is unavailable, checking that a was
/// measured and nothing is left.
async fn b_fails(script: Script) -> (Setup, Ran, String) {
    let setup = Setup::new(TWO);
    let ran = run(&setup, script).await;
    let reason = ran.reason("b");
    assert_eq!(ran.loads_of("a"), 1);
    assert_eq!(ran.loads_of("b"), 0);
    assert!(
        problems(&ran)
            .iter()
            .any(|p| matches!(p, Problem::Unavailable { server, .. } if server == "b")),
        "{:?}",
        problems(&ran)
    );
    ran.left_nothing();
    (setup, ran, reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_build_keeps_its_log_beside_the_record() {
    let script = Script {
        build_fails: ["alt".to_string()].into(),
        ..Script::new()
    };
    let (setup, ran, reason) = b_fails(script).await;
    assert!(reason.starts_with("image build failed: "), "{reason}");
    let kept = setup.dir.path().join("out.b.build.log");
    assert!(reason.contains(&kept.display().to_string()), "{reason}");
    assert!(std::fs::read_to_string(&kept)
        .unwrap()
        .contains("Unable to locate package"));
    // Never started.
    assert!(!ran.fake.calls().contains(&"start b".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_that_cannot_be_created_is_unavailable() {
    let script = Script {
        start_fails: ["b".to_string()].into(),
        ..Script::new()
    };
    let (_, _, reason) = b_fails(script).await;
    assert!(reason.starts_with("could not start: "), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_unavailable_and_removed() {
    let script = Script {
        never_ready: ["b".to_string()].into(),
        ..Script::new()
    };
    let (_, ran, reason) = b_fails(script).await;
    assert!(reason.starts_with("never became ready: "), "{reason}");
    assert!(
        ran.fake.calls().contains(&"drop b".to_string()),
        "{:?}",
        ran.fake.calls()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_a_process_as_root_fails_its_confinement_check() {
    let script = Script {
        root: ["b".to_string()].into(),
        ..Script::new()
    };
    let (_, ran, reason) = b_fails(script).await;
    assert!(
        reason.starts_with("failed its confinement check: "),
        "{reason}"
    );
    assert!(reason.contains("uid 0"), "{reason}");
    assert!(ran.lines("ready b").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_serves_other_bytes_fails_verification() {
    let script = Script {
        wrong_bytes: ["b".to_string()].into(),
        ..Script::new()
    };
    let (_, _, reason) = b_fails(script).await;
    assert!(reason.starts_with("verification failed: "), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_taken_on_this_machine_is_not_tried_again() {
    // Ports here are checked free just before: one taken is a server's own failure.
    let script = Script {
        port_taken: [("b".to_string(), 1)].into(),
        ..Script::new()
    };
    let (setup, ran, reason) = b_fails(script).await;
    assert!(reason.starts_with("never became ready: "), "{reason}");
    // The server's last log lines are kept beside the record, and named.
    let kept = setup.dir.path().join("out.b.log");
    assert!(reason.contains(&kept.display().to_string()), "{reason}");
    assert!(std::fs::read_to_string(&kept)
        .unwrap()
        .contains("Address already in use"));
    let starts = ran.fake.calls().iter().filter(|c| *c == "start b").count();
    assert_eq!(starts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_server_may_fail_without_failing_the_run() {
    let setup = Setup::new(&TWO.replace("kind = \"alt\"", "kind = \"alt\"\noptional = true"));
    let script = Script {
        build_fails: ["alt".to_string()].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert!(complete(&ran));
    assert!(problems(&ran).is_empty(), "{:?}", problems(&ran));
    assert!(ran.reason("b").starts_with("image build failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_no_server_could_start_measured_nothing_and_failed() {
    let setup = Setup::new(TWO);
    let script = Script {
        build_fails: ["web".to_string(), "alt".to_string()].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert!(matches!(ran.record().status, RunStatus::Failed { .. }));
    assert!(
        problems(&ran).contains(&Problem::NothingMeasured),
        "{:?}",
        problems(&ran)
    );
    ran.saved_whole(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http3_a_kind_that_serves_none_is_unavailable_and_never_started() {
    let setup = Setup::new(&format!("http = \"3\"\n{TWO}"));
    assert!(setup.plan.http3 && setup.plan.tls);
    let ran = run(&setup, Script::new()).await;
    for server in ["a", "b"] {
        let reason = ran.reason(server);
        assert!(
            reason.starts_with("serves no HTTP/3 here: docker/")
                && reason.ends_with(
                    "/server.toml does not say http3 = true, and the scenario says http = \"3\""
                ),
            "{reason}"
        );
    }
    let calls = ran.fake.calls();
    assert!(!calls.iter().any(|c| c.starts_with("start ")), "{calls:?}");
    assert!(matches!(ran.record().status, RunStatus::Failed { .. }));
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_whose_backend_is_unavailable_is_not_started() {
    let setup = Setup::new(&format!(
        "{TWO}[[server]]\nname = \"front\"\nkind = \"cache\"\nbackend = \"b\"\n"
    ));
    let script = Script {
        build_fails: ["alt".to_string()].into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    let reason = ran.reason("front");
    assert!(
        reason.contains("\"b\", which it needs, is unavailable"),
        "{reason}"
    );
    assert!(!ran.fake.calls().contains(&"start front".to_string()));
    ran.left_nothing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prebuilt_image_that_runs_as_root_is_refused_and_one_that_does_not_runs() {
    let text = TWO
        .replace("kind = \"alt\"", "image = \"example/srv:1\"")
        .replace("kind = \"web\"", "image = \"example/ok:1\"");
    let setup = Setup::new(&text);
    let script = Script {
        images: [
            ("example/srv:1".to_string(), String::new()),
            ("example/ok:1".to_string(), "1000:1000".to_string()),
        ]
        .into(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    let reason = ran.reason("b");
    assert!(
        reason.contains("runs as root (it names no USER)"),
        "{reason}"
    );
    assert_eq!(ran.loads_of("a"), 1);
    assert!(ran.fake.calls().iter().all(|c| !c.starts_with("build")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prebuilt_image_that_is_nowhere_is_unavailable() {
    let setup = Setup::new(&TWO.replace("kind = \"alt\"", "image = \"example/gone:1\""));
    let ran = run(&setup, Script::new()).await;
    let reason = ran.reason("b");
    assert!(reason.contains("is not here and cannot be had"), "{reason}");
    assert_eq!(ran.loads_of("a"), 1);
}
