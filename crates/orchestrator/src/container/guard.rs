//! The guard that owns a container and removes it when dropped.

use super::removal::{blocking_remove, remove_container, DROP_REMOVE_BOUND};
use crate::engine::Endpoint;
use crate::error::Result;
use bollard::Docker;
use std::net::IpAddr;
use std::time::Instant;

/// A running container that is force-removed when this guard is dropped or [`removed`](Self::remove).
#[derive(Debug)]
pub struct ContainerGuard {
    pub(crate) docker: Docker,
    /// Which engine runs it: a `Drop` connects there afresh.
    pub(super) endpoint: Endpoint,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) port: u16,
    pub(super) address: IpAddr,
    /// When the create request was sent: readiness time counts from here, like `docker run`.
    pub(super) started: Instant,
    pub(super) armed: bool,
}

impl ContainerGuard {
    /// The container's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The container's (unique) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The port from the spec.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address the server is reached at.
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// `address:port`.
    pub fn socket_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::new(self.address, self.port)
    }

    /// The engine that runs it.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// When the container was created.
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// Removes the container (forced) and waits for the daemon to confirm.
    pub async fn remove(mut self) -> Result<()> {
        self.armed = false;
        remove_container(&self.docker, &self.id).await
    }

    /// Forgets the container without removing it (it stays labelled, so `gc` still finds it).
    pub fn leak(mut self) -> String {
        self.armed = false;
        std::mem::take(&mut self.id)
    }
}

impl Drop for ContainerGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let id = self.id.clone();
        let endpoint = self.endpoint.clone();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("benchctl-container-drop".to_string())
            .spawn(move || {
                let result = blocking_remove(&endpoint, &id);
                let _ = done_tx.send(result);
            });
        match spawned {
            Ok(_) => match done_rx.recv_timeout(DROP_REMOVE_BOUND) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!(
                    "benchctl: could not remove container {} ({e}); `benchctl gc` removes it",
                    self.name
                ),
                Err(_) => eprintln!(
                    "benchctl: removing container {} is taking too long; `benchctl gc` removes it",
                    self.name
                ),
            },
            Err(e) => eprintln!(
                "benchctl: could not start removing container {} ({e}); `benchctl gc` removes it",
                self.name
            ),
        }
    }
}
