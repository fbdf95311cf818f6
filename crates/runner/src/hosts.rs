//! The Docker engines a scenario names (`[[host]]`): how each is reached, and `benchctl hosts
//! check`'s look at each before a run depends on it.

use orchestrator::{Endpoint, EngineFacts, Orchestrator};
use scenario::{HostSpec, HostUrl, Plan};

/// How the orchestrator reaches a scenario's host.
pub fn endpoint(host: &HostSpec) -> Endpoint {
    match &host.url {
        HostUrl::Unix { path } => Endpoint::Unix { path: path.clone() },
        HostUrl::Tcp {
            host,
            port,
            tls_dir,
        } => Endpoint::Tcp {
            host: host.clone(),
            port: *port,
            tls: tls_dir.clone(),
        },
        HostUrl::Ssh {
            destination,
            port,
            socket,
            config,
        } => Endpoint::Ssh(orchestrator::SshTarget {
            destination: destination.clone(),
            port: *port,
            socket: socket.clone(),
            config: config.clone(),
        }),
    }
}

/// The warning every command that uses a plain-TCP host prints.
pub fn insecure_warning(host: &HostSpec) -> Option<String> {
    host.url.is_insecure().then(|| {
        format!(
            "host {} ({}) is reached over plain TCP without authentication (insecure = true): anyone who can reach that port controls its engine and the machine",
            host.name, host.url
        )
    })
}

/// One engine as `hosts check` found it.
#[derive(Debug, Clone)]
pub struct HostCheck {
    /// The host's name, or `local` for this machine's engine.
    pub name: String,
    pub url: String,
    /// What it said about itself, or why it could not be asked.
    pub facts: Result<EngineFacts, String>,
}

/// Connects to every engine the scenario uses (this machine's when a server has no `host`,
/// and each `[[host]]`), all at once, and asks each for its facts.
pub async fn check(plan: &Plan) -> Vec<HostCheck> {
    let mut engines: Vec<(String, Endpoint)> = Vec::new();
    if plan.servers.iter().any(|s| s.host.is_none()) {
        engines.push(("local".to_string(), Endpoint::Local));
    }
    engines.extend(plan.hosts.iter().map(|h| (h.name.clone(), endpoint(h))));
    // All at once: an engine that does not answer costs its bound once, not once per host.
    futures_util::future::join_all(engines.into_iter().map(|(name, ep)| async move {
        let facts = match Orchestrator::connect_to(&ep).await {
            Ok(orch) => orch.facts().await.map_err(|e| format!("{e}")),
            Err(e) => Err(format!("{e}")),
        };
        HostCheck {
            name,
            url: ep.url(),
            facts,
        }
    }))
    .await
}
