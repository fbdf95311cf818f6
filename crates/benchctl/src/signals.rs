//! SIGINT and SIGTERM for `run` and `load`: the first asks the work to stop (it then keeps and
//! prints what it measured), the second says the user will not wait, and `main` ends the
//! process after the last-moment cleanup it was given.
//!
//! The handlers run on a thread of their own with its own small runtime, so they are heard
//! whatever the work is doing (a blocking load, a Docker call, a synchronous `benchctl load`).

use std::sync::mpsc;

/// The signal that ended (or is ending) the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// The conventional exit status: 128 + signal number.
    pub fn exit_code(self) -> u8 {
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

/// Installs the handlers: `first` on the first signal, `second` on any later one (it must not
/// return: it ends the process). Returns once the handlers are in place, so that a signal
/// arriving right after is never the default one (which would end the process without cleanup).
pub fn install(
    first: impl FnOnce(Signal) + Send + 'static,
    second: impl FnOnce(Signal) + Send + 'static,
) -> std::io::Result<()> {
    let (ready_tx, ready_rx) = mpsc::channel::<std::io::Result<()>>();
    std::thread::Builder::new()
        .name("benchctl-signals".to_string())
        .spawn(move || {
            use tokio::signal::unix::{signal, SignalKind};
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let registered = {
                let _in_runtime = rt.enter();
                signal(SignalKind::interrupt())
                    .and_then(|i| signal(SignalKind::terminate()).map(|t| (i, t)))
            };
            let (mut sigint, mut sigterm) = match registered {
                Ok(pair) => {
                    let _ = ready_tx.send(Ok(()));
                    pair
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let next = async |i: &mut tokio::signal::unix::Signal,
                                  t: &mut tokio::signal::unix::Signal| {
                    tokio::select! {
                        _ = i.recv() => Signal::Interrupt,
                        _ = t.recv() => Signal::Terminate,
                    }
                };
                let sig = next(&mut sigint, &mut sigterm).await;
                first(sig);
                next(&mut sigint, &mut sigterm).await;
                second(sig);
            });
        })?;
    ready_rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the signal thread ended at start")))
}
