//! SIGTERM/SIGINT during a run removes the run's containers before the CLI is told, and leaves
//! other runs alone. A test binary of its own: it signals its own process.

mod common;

use common::{connect, exists, free_port, run_id, test_base, TEST_BASE};
use orchestrator::{install_ctrl_c_cleanup, ContainerSpec, Signal};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_removes_the_runs_containers_then_reports() {
    let Some(orch) = connect().await else { return };
    test_base(&orch).await;
    let run = run_id("signal");
    let other = run_id("signal-other");
    let sleeper = |run: &str| ContainerSpec {
        name: "sleeper".to_string(),
        image: TEST_BASE.to_string(),
        port: free_port(),
        run_id: run.to_string(),
        cmd: Some(vec!["sleep".into(), "60".into()]),
        ..Default::default()
    };
    let mut interrupt = install_ctrl_c_cleanup(&orch, &run).unwrap();
    assert_eq!(interrupt.is_interrupted(), None);
    let g1 = orch.start(&sleeper(&run)).await.unwrap();
    let g2 = orch.start(&sleeper(&run)).await.unwrap();
    let bystander = orch.start(&sleeper(&other)).await.unwrap();

    // SAFETY: signalling our own process; the handler above is installed.
    assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGINT) }, 0);
    let got = tokio::time::timeout(Duration::from_secs(20), interrupt.wait())
        .await
        .expect("the signal was handled");
    assert_eq!(got, Signal::Interrupt);
    assert_eq!(got.exit_code(), 130);
    assert_eq!(interrupt.is_interrupted(), Some(Signal::Interrupt));
    // Removed before wait() returned, not by the guards.
    assert!(!exists(&orch, g1.id()).await);
    assert!(!exists(&orch, g2.id()).await);
    assert!(exists(&orch, bystander.id()).await);
    // The guards then find nothing to remove, which is not an error.
    drop((g1, g2));
    bystander.remove().await.unwrap();
}
