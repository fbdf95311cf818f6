//! `gc_stale` removes the benchctl containers whose owning process is gone, running or stopped,
//! and leaves alone those of a live owner, so a run (or a test) never sweeps away the servers of
//! another run going on at the same time. `gc` (every labelled container on the machine) is not
//! called here for the same reason.

use crate::common::{connect, exists, free_port, run_id, test_base, TEST_BASE};
use orchestrator::{ContainerSpec, LABEL_PID};

/// The pid of a process that has exited: an owner that is certainly gone.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[tokio::test]
async fn gc_stale_sweeps_only_containers_whose_owner_is_gone() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let dead = dead_pid().to_string();
    let live_run = run_id("live-owner");
    let spec = |what: &str, cmd: &str, owner: Option<&str>, run: String| ContainerSpec {
        name: what.to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run,
        cmd: Some(vec!["sh".into(), "-c".into(), cmd.into()]),
        labels: owner
            .map(|p| vec![(LABEL_PID.to_string(), p.to_string())])
            .unwrap_or_default(),
        ..Default::default()
    };
    // Left behind as a crashed run would leave them: one running, one exited.
    let running = orch
        .start(&spec(
            "stale-running",
            "sleep 60",
            Some(&dead),
            run_id("stale-a"),
        ))
        .await
        .unwrap()
        .leak();
    let exited = orch
        .start(&spec(
            "stale-exited",
            "exit 0",
            Some(&dead),
            run_id("stale-b"),
        ))
        .await
        .unwrap()
        .leak();
    // Owned by this (live) process.
    let mine = orch
        .start(&spec("live", "sleep 60", None, live_run.clone()))
        .await
        .unwrap()
        .leak();
    let removed = orch.gc_stale().await.unwrap();
    assert!(removed >= 2, "removed {removed}");
    assert!(!exists(&orch, &running).await);
    assert!(!exists(&orch, &exited).await);
    assert!(
        exists(&orch, &mine).await,
        "a live owner's container was swept"
    );
    assert_eq!(orch.remove_run(&live_run).await.unwrap(), 1);
    assert!(!exists(&orch, &mine).await);
}

/// A container whose owner's pid now belongs to another process (pids are reused) is stale:
/// the owner is named by pid and start time.
#[tokio::test]
async fn a_reused_pid_does_not_keep_a_container() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let me = orchestrator::Owner::current();
    let impostor_start = me.start.expect("this process's start time") + 1;
    let spec = ContainerSpec {
        name: "reused-pid".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id("reused-pid"),
        cmd: Some(vec!["sleep".into(), "60".into()]),
        labels: vec![
            (LABEL_PID.to_string(), me.pid.to_string()),
            (
                orchestrator::LABEL_PID_START.to_string(),
                impostor_start.to_string(),
            ),
        ],
        ..Default::default()
    };
    let id = orch.start(&spec).await.unwrap().leak();
    orch.gc_stale().await.unwrap();
    assert!(
        !exists(&orch, &id).await,
        "a reused pid kept a stale container"
    );
}

#[tokio::test]
async fn older_images_of_a_kind_are_removed_and_the_one_to_keep_stays() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    // Three tags of one image under a repository no other test uses, the process's id in it.
    let repo = format!("benchctl/test-older-{}", std::process::id());
    let tag = |t: &str| {
        bollard::query_parameters::TagImageOptionsBuilder::default()
            .repo(&repo)
            .tag(t)
            .build()
    };
    for t in ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"] {
        orch.docker()
            .tag_image(TEST_BASE, Some(tag(t)))
            .await
            .unwrap();
    }
    let server = repo.strip_prefix("benchctl/").unwrap();
    let keep = format!("{repo}:bbbbbbbbbbbb");
    assert_eq!(orch.remove_older_images(server, &keep).await.unwrap(), 2);
    for (t, there) in [
        ("aaaaaaaaaaaa", false),
        ("bbbbbbbbbbbb", true),
        ("cccccccccccc", false),
    ] {
        let id = orch.image_id(&format!("{repo}:{t}")).await.unwrap();
        assert_eq!(id.is_some(), there, "{t}");
    }
    // The image itself is still the base's: only tags went.
    assert!(orch.image_id(TEST_BASE).await.unwrap().is_some());
    assert_eq!(orch.remove_older_images(server, &keep).await.unwrap(), 0);
    orch.docker()
        .remove_image(
            &keep,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await
        .unwrap();
}
