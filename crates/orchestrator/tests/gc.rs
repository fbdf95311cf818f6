//! `gc` removes every container labelled benchctl=1, running or stopped, whatever its run. A
//! test binary of its own so that its sweep cannot remove the containers other tests are using.

mod common;

use common::{connect, exists, free_port, run_id, test_base, TEST_BASE};
use orchestrator::ContainerSpec;

#[tokio::test]
async fn gc_sweeps_stale_labelled_containers() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let spec = |what: &str, cmd: &str| ContainerSpec {
        name: what.to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run_id(what),
        cmd: Some(vec!["sh".into(), "-c".into(), cmd.into()]),
        ..Default::default()
    };
    // Left behind as a crashed run would leave them: one running, one exited.
    let running = orch
        .start(&spec("stale-running", "sleep 60"))
        .await
        .unwrap()
        .leak();
    let exited = orch
        .start(&spec("stale-exited", "exit 0"))
        .await
        .unwrap()
        .leak();
    let removed = orch.gc().await.unwrap();
    assert!(removed >= 2, "removed {removed}");
    assert!(!exists(&orch, &running).await);
    assert!(!exists(&orch, &exited).await);
    assert_eq!(orch.gc().await.unwrap(), 0);
}
