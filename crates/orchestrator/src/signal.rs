//! Ctrl-C (SIGINT) and SIGTERM during a run: remove the run's containers, then let the CLI keep
//! what it has measured and exit with 130 (143 for SIGTERM).
//!
//! Design: [`install_ctrl_c_cleanup`] registers the signal handlers and spawns one task that
//! waits for the first signal, force-removes every container labelled with the run id, and only
//! then publishes the signal on a `tokio::sync::watch` channel. The CLI races its work against
//! [`Interrupt::wait`]:
//!
//! ```no_run
//! # async fn run(orch: orchestrator::Orchestrator) -> orchestrator::Result<()> {
//! let mut interrupt = orchestrator::install_ctrl_c_cleanup(&orch, "run-42")?;
//! let work = async { /* build, start, measure, write results after each server */ };
//! tokio::select! {
//!     () = work => {}
//!     signal = interrupt.wait() => {
//!         // The work future is dropped here, so its guards drop too (their removals find the
//!         // containers already gone). Partial results are still in the CLI's hands: write them,
//!         // then leave with the conventional status.
//!         std::process::exit(signal.exit_code());
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Why a watch channel and not a handler that exits by itself: exiting from the handler would
//! skip the CLI's own cleanup and lose partial results; the CLI must decide when to exit. Why
//! removal happens in the handler task and not only through guards: the work may be stuck in a
//! call that does not observe cancellation promptly (a long load phase on a blocking thread),
//! and the containers should go at once. [`Interrupt::is_interrupted`] lets code between steps
//! avoid starting new containers once a signal has arrived. A second signal while the first is
//! being handled exits immediately with the same status: the user insisted, and the run's
//! containers are already being removed.
//!
//! Once installed, tokio's handlers stay for the life of the process (the default "die on
//! SIGINT" is not restored), so keep the [`Interrupt`] until the program ends.

use crate::error::{OrchestratorError, Result};
use crate::Orchestrator;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The signal that interrupted the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// The conventional exit status: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM).
    pub fn exit_code(self) -> i32 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Interrupt => "interrupted (SIGINT)",
            Signal::Terminate => "terminated (SIGTERM)",
        })
    }
}

/// Resolves once a signal arrived and the run's containers were removed.
#[derive(Debug)]
pub struct Interrupt {
    rx: watch::Receiver<Option<Signal>>,
    task: tokio::task::JoinHandle<()>,
}

impl Interrupt {
    /// Waits for a signal; returns after the run's containers have been removed.
    pub async fn wait(&mut self) -> Signal {
        match self.rx.wait_for(Option::is_some).await {
            Ok(sig) => sig.expect("waited for Some"),
            // The watcher is gone (its runtime is shutting down): no signal will come.
            Err(_) => std::future::pending().await,
        }
    }

    /// The signal received so far, if any (already after cleanup).
    pub fn is_interrupted(&self) -> Option<Signal> {
        *self.rx.borrow()
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Installs SIGINT/SIGTERM handling for run `run_id`; see the module documentation.
pub fn install_ctrl_c_cleanup(orch: &Orchestrator, run_id: &str) -> Result<Interrupt> {
    let register = |kind: SignalKind| {
        signal(kind).map_err(|e| OrchestratorError::io("installing a signal handler", e))
    };
    let mut sigint = register(SignalKind::interrupt())?;
    let mut sigterm = register(SignalKind::terminate())?;
    let (tx, rx) = watch::channel(None);
    let orch = orch.clone();
    let run_id = run_id.to_string();
    let task = tokio::spawn(async move {
        let sig = tokio::select! {
            _ = sigint.recv() => Signal::Interrupt,
            _ = sigterm.recv() => Signal::Terminate,
        };
        eprintln!("benchctl: {sig}: removing the containers of run {run_id}");
        let cleanup = orch.remove_run(&run_id);
        tokio::pin!(cleanup);
        tokio::select! {
            result = &mut cleanup => {
                if let Err(e) = result {
                    eprintln!("benchctl: {e}; `benchctl gc` removes what is left");
                }
            }
            _ = sigint.recv() => std::process::exit(sig.exit_code()),
            _ = sigterm.recv() => std::process::exit(sig.exit_code()),
        }
        let _ = tx.send(Some(sig));
        tokio::select! {
            _ = sigint.recv() => {}
            _ = sigterm.recv() => {}
        }
        eprintln!("benchctl: second signal, exiting now");
        std::process::exit(sig.exit_code());
    });
    Ok(Interrupt { rx, task })
}
