//! That a run's containers are gone when it is: swept by run, raced by other removals, and
//! removed by a guard dropped outside a runtime, by a panic or in a cancelled task.

use crate::common::{connect, exists, free_port, run_id, test_base, TEST_BASE};
use orchestrator::ContainerSpec;
use std::time::Duration;

#[tokio::test]
async fn remove_run_removes_only_that_run() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let sleeper = |run: &str| ContainerSpec {
        name: "sleeper".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run.to_string(),
        cmd: Some(vec!["sleep".into(), "60".into()]),
        ..Default::default()
    };
    let (a, b) = (run_id("run-a"), run_id("run-b"));
    let a1 = orch.start(&sleeper(&a)).await.unwrap().leak();
    let a2 = orch.start(&sleeper(&a)).await.unwrap().leak();
    let b1 = orch.start(&sleeper(&b)).await.unwrap();
    assert_eq!(orch.remove_run(&a).await.unwrap(), 2);
    assert!(!exists(&orch, &a1).await && !exists(&orch, &a2).await);
    assert!(exists(&orch, b1.id()).await);
    assert_eq!(orch.remove_run(&a).await.unwrap(), 0);

    // Of one run, only those with a given label.
    let mut marked = sleeper(&b);
    marked.labels = vec![("benchctl.role".to_string(), "generator".to_string())];
    let m = orch.start(&marked).await.unwrap().leak();
    assert_eq!(
        orch.remove_run_where(&b, "benchctl.role", "generator")
            .await
            .unwrap(),
        1
    );
    assert!(!exists(&orch, &m).await);
    assert!(exists(&orch, b1.id()).await);
    b1.remove().await.unwrap();
}

/// A second Ctrl-C sweeps a run while its guards may still be removing the same containers
/// on connections that die with the process: the sweep must not count "removal already in
/// progress" as done, only a container the engine no longer lists.
#[tokio::test]
async fn a_sweep_racing_other_removals_returns_only_once_they_are_gone() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let run = run_id("race");
    for _ in 0..3 {
        let spec = ContainerSpec {
            name: "sleeper".to_string(),
            image: TEST_BASE.to_string(),
            port: free_port(),
            run_id: run.clone(),
            cmd: Some(vec!["sleep".into(), "60".into()]),
            ..Default::default()
        };
        let guard = orch.start(&spec).await.unwrap();
        // Another connection starts removing it and is dropped mid-request.
        let other = orch.docker().clone();
        let id = guard.leak();
        let abandoned = tokio::spawn(async move {
            let options = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
                .force(true)
                .build();
            let _ = other.remove_container(&id, Some(options)).await;
        });
        let r = run.clone();
        let sweep = tokio::task::spawn_blocking(move || {
            orchestrator::remove_run_blocking(&r, Duration::from_secs(15))
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        abandoned.abort();
        sweep.await.unwrap().unwrap();
        let left = orch
            .docker()
            .list_containers(Some(
                bollard::query_parameters::ListContainersOptionsBuilder::default()
                    .all(true)
                    .filters(&std::collections::HashMap::from([(
                        "label".to_string(),
                        vec![format!("{}={run}", orchestrator::LABEL_RUN)],
                    )]))
                    .build(),
            ))
            .await
            .unwrap();
        assert!(left.is_empty(), "left after the sweep: {left:?}");
    }
}

/// Drop after the runtime that created the guard is gone: no runtime anywhere on this thread.
#[test]
fn guard_dropped_outside_any_runtime_removes_the_container() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((guard, id)) = rt.block_on(async {
        let orch = connect().await?;
        test_base(&orch).await;
        let spec = ContainerSpec {
            name: "orphan".to_string(),
            image: TEST_BASE.to_string(),
            port: free_port(),
            run_id: run_id("no-runtime"),
            cmd: Some(vec!["sleep".into(), "60".into()]),
            ..Default::default()
        };
        let guard = orch.start(&spec).await.unwrap();
        let id = guard.id().to_string();
        Some((guard, id))
    }) else {
        return;
    };
    drop(rt);
    drop(guard);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let orch = connect().await.unwrap();
        assert!(
            !exists(&orch, &id).await,
            "container {id} survived its guard"
        );
    });
}

/// A panic while the guard is alive, on a current-thread runtime: unwinding drops the guard
/// inside the runtime that is itself being torn down.
#[test]
fn guard_dropped_by_a_panic_removes_the_container() {
    let id = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let seen = std::sync::Arc::clone(&id);
    let outcome = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let Some(orch) = connect().await else { return };
            test_base(&orch).await;
            let spec = ContainerSpec {
                name: "panicky".to_string(),
                image: TEST_BASE.to_string(),
                port: free_port(),
                run_id: run_id("panic"),
                cmd: Some(vec!["sleep".into(), "60".into()]),
                ..Default::default()
            };
            let guard = orch.start(&spec).await.unwrap();
            *seen.lock().unwrap() = Some(guard.id().to_string());
            panic!("deliberate panic with container {} alive", guard.name());
        })
    })
    .join();
    let Some(id) = id.lock().unwrap().clone() else {
        return; // no daemon, already reported
    };
    assert!(outcome.is_err(), "the thread was meant to panic");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let orch = connect().await.unwrap();
        assert!(
            !exists(&orch, &id).await,
            "container {id} survived the panic"
        );
    });
}

/// A guard dropped by a spawned task that is cancelled (what `select!` does on Ctrl-C).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_in_a_cancelled_task_removes_the_container() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let o = orch.clone();
    let task = tokio::spawn(async move {
        let spec = ContainerSpec {
            name: "cancelled".to_string(),
            image: TEST_BASE.to_string(),
            port: free_port(),
            run_id: run_id("cancel"),
            cmd: Some(vec!["sleep".into(), "60".into()]),
            ..Default::default()
        };
        let guard = o.start(&spec).await.unwrap();
        tx.send(guard.id().to_string()).unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    let id = rx.await.unwrap();
    task.abort();
    let _ = task.await;
    assert!(
        !exists(&orch, &id).await,
        "container {id} survived its cancelled task"
    );
}
