//! Why a run could not start, or could not go on.

use orchestrator::OrchestratorError;
use report::ReportError;

/// Why a run could not start, or could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The options, the scenario and this machine do not fit together; found before anything
    /// started.
    #[error("{0}")]
    Invalid(String),
    /// A server kind's manifest is missing or wrong.
    #[error("{0}")]
    Manifest(#[from] scenario::ScenarioError),
    /// The results file cannot be claimed.
    #[error("{0}")]
    Results(#[from] ReportError),
    /// Docker itself is unusable.
    #[error(transparent)]
    Docker(#[from] OrchestratorError),
    /// The engine of a `[[host]]` the scenario's servers use cannot be reached.
    #[error("host {host}: {source}")]
    Host {
        host: String,
        #[source]
        source: OrchestratorError,
    },
    /// A step of a run that had started failed.
    #[error("{0}")]
    Step(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// A mistake in what was asked (exit status 2), rather than a failure while doing it.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            RunError::Invalid(_) | RunError::Manifest(_) | RunError::Results(_)
        )
    }
}

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let context = context.into();
    move |source| RunError::Io { context, source }
}
