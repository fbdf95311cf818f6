//! Removing containers whatever happens: a guard dropped on a runtime, off one or during a
//! panic, a run's containers swept from any thread, and the sweep waiting until the engine lists
//! none of them.

use crate::engine::Endpoint;
use crate::error::{is_not_found, is_removal_in_progress, OrchestratorError, Result};
use crate::labels::LABEL_RUN;
use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};
use bollard::Docker;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a `Drop` may wait for the daemon to remove its container.
pub(super) const DROP_REMOVE_BOUND: Duration = Duration::from_secs(20);

/// Runs `f` with a fresh runtime and daemon connection on the calling thread: usable from any
/// context, including a thread whose own runtime is blocked or gone.
pub(super) fn with_fresh_connection<T>(
    endpoint: &Endpoint,
    what: &str,
    f: impl AsyncFnOnce(&Docker) -> Result<T>,
) -> Result<T> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OrchestratorError::io(format!("starting a runtime to {what}"), e))?;
    rt.block_on(async {
        let docker = endpoint.connect().await?;
        f(&docker).await
    })
}

/// Removal from any context.
pub(super) fn blocking_remove(endpoint: &Endpoint, id: &str) -> Result<()> {
    with_fresh_connection(endpoint, "remove a container", async |docker| {
        remove_container(docker, id).await
    })
}

/// Force-removes every container of run `run_id` from any thread, with a connection of its
/// own, waiting at most `bound`: for a last-moment cleanup (a second Ctrl-C) while the run's
/// own runtime may be busy. Returns how many containers were removed.
pub fn remove_run_blocking(run_id: &str, bound: Duration) -> Result<usize> {
    remove_run_blocking_on(&[Endpoint::Local], run_id, bound)
}

/// [`remove_run_blocking`] on every engine of `endpoints`, all at once; an engine that
/// cannot be reached does not keep the others' containers.
pub fn remove_run_blocking_on(
    endpoints: &[Endpoint],
    run_id: &str,
    bound: Duration,
) -> Result<usize> {
    let run_id = run_id.to_string();
    let endpoints = endpoints.to_vec();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("benchctl-remove-run".to_string())
        .spawn(move || {
            let label = format!("{LABEL_RUN}={run_id}");
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(OrchestratorError::io(
                        "starting a runtime to remove a run's containers",
                        e,
                    )));
                    return;
                }
            };
            let r = rt.block_on(async {
                // Leave time to report before the caller stops waiting.
                let deadline = Instant::now() + bound.mul_f64(0.9);
                let all = futures_util::future::join_all(endpoints.iter().map(|e| async {
                    let docker = e.connect().await?;
                    remove_labelled_until_gone(&docker, &label, deadline).await
                }))
                .await;
                let mut removed = 0;
                let mut first_error = None;
                for r in all {
                    match r {
                        Ok(n) => removed += n,
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                match first_error {
                    Some(e) => Err(e),
                    None => Ok(removed),
                }
            });
            let _ = tx.send(r);
        })
        .map_err(|e| OrchestratorError::io("starting a thread to remove containers", e))?;
    rx.recv_timeout(bound).unwrap_or_else(|_| {
        Err(OrchestratorError::Invalid(format!(
            "removing the run's containers took longer than {bound:?}"
        )))
    })
}

pub(crate) async fn remove_container(docker: &Docker, id: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(()),
        Err(e) if is_not_found(&e) || is_removal_in_progress(&e) => Ok(()),
        Err(e) => Err(OrchestratorError::docker(
            format!("remove container {id}"),
            e,
        )),
    }
}

/// Force-removes the containers carrying `label` for which `select` says yes, given their
/// labels; returns how many.
pub(super) async fn remove_labelled(
    docker: &Docker,
    label: &str,
    select: impl Fn(Option<&HashMap<String, String>>) -> bool,
) -> Result<usize> {
    let ids = list_labelled(docker, label, select).await?;
    let results =
        futures_util::future::join_all(ids.iter().map(|id| remove_container(docker, id))).await;
    for r in results {
        r?;
    }
    Ok(ids.len())
}

/// The ids of the containers, any state, carrying `label` for which `select` says yes.
pub(super) async fn list_labelled(
    docker: &Docker,
    label: &str,
    select: impl Fn(Option<&HashMap<String, String>>) -> bool,
) -> Result<Vec<String>> {
    let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let list = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| OrchestratorError::docker(format!("list containers labelled {label}"), e))?;
    Ok(list
        .into_iter()
        .filter(|c| select(c.labels.as_ref()))
        .filter_map(|c| c.id)
        .collect())
}

/// [`remove_labelled`] for every container carrying `label`, then waits until the engine
/// lists none of them, asking again for any still there, until `deadline`. A removal that
/// another connection started ("already in progress") counts as done only once it is: the
/// engine may abandon it when that connection dies, as it does when this process exits.
pub(super) async fn remove_labelled_until_gone(
    docker: &Docker,
    label: &str,
    deadline: Instant,
) -> Result<usize> {
    let removed = remove_labelled(docker, label, |_| true).await?;
    loop {
        let left = list_labelled(docker, label, |_| true).await?;
        if left.is_empty() {
            return Ok(removed);
        }
        if Instant::now() >= deadline {
            return Err(OrchestratorError::Invalid(format!(
                "{} container(s) labelled {label} were still there after removal",
                left.len()
            )));
        }
        tokio::time::sleep(GONE_POLL).await;
        for id in &left {
            remove_container(docker, id).await?;
        }
    }
}

/// How long [`Orchestrator::remove_run`] waits for a run's containers to be gone.
pub(super) const RUN_REMOVAL_BOUND: Duration = Duration::from_secs(15);

/// How often [`remove_labelled_until_gone`] looks again.
pub(super) const GONE_POLL: Duration = Duration::from_millis(100);
