//! SIGINT, SIGTERM and the other signals whose default is to end the process (SIGHUP when an
//! ssh session hangs up, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM) for `run` and `load`: the first
//! asks the work to stop (it then keeps and prints what it measured), the second says the user
//! will not wait, and `main` ends the process after the last-moment cleanup it was given.
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
    /// SIGHUP: the terminal or ssh session went away.
    Hangup,
    /// SIGQUIT.
    Quit,
    /// SIGUSR1.
    User1,
    /// SIGUSR2.
    User2,
    /// SIGALRM.
    Alarm,
}

impl Signal {
    /// Every signal handled, each with its number.
    const ALL: [(Signal, i32); 7] = [
        (Signal::Interrupt, libc::SIGINT),
        (Signal::Terminate, libc::SIGTERM),
        (Signal::Hangup, libc::SIGHUP),
        (Signal::Quit, libc::SIGQUIT),
        (Signal::User1, libc::SIGUSR1),
        (Signal::User2, libc::SIGUSR2),
        (Signal::Alarm, libc::SIGALRM),
    ];

    fn number(self) -> i32 {
        Self::ALL
            .iter()
            .find(|(s, _)| *s == self)
            .map_or(libc::SIGTERM, |&(_, n)| n)
    }

    /// The conventional exit status: 128 + signal number.
    pub fn exit_code(self) -> u8 {
        (128 + self.number()) as u8
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Interrupt => "interrupted (SIGINT)",
            Signal::Terminate => "terminated (SIGTERM)",
            Signal::Hangup => "hung up (SIGHUP)",
            Signal::Quit => "quit (SIGQUIT)",
            Signal::User1 => "signalled (SIGUSR1)",
            Signal::User2 => "signalled (SIGUSR2)",
            Signal::Alarm => "signalled (SIGALRM)",
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
                Signal::ALL
                    .iter()
                    .map(|&(sig, n)| signal(SignalKind::from_raw(n)).map(|s| (sig, s)))
                    .collect::<std::io::Result<Vec<_>>>()
            };
            let mut streams = match registered {
                Ok(streams) => {
                    let _ = ready_tx.send(Ok(()));
                    streams
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                // The first of the signals to arrive, whichever it is.
                async fn next(streams: &mut [(Signal, tokio::signal::unix::Signal)]) -> Signal {
                    std::future::poll_fn(|cx| {
                        for (sig, stream) in streams.iter_mut() {
                            if stream.poll_recv(cx).is_ready() {
                                return std::task::Poll::Ready(*sig);
                            }
                        }
                        std::task::Poll::Pending
                    })
                    .await
                }
                let sig = next(&mut streams).await;
                first(sig);
                next(&mut streams).await;
                second(sig);
            });
        })?;
    ready_rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the signal thread ended at start")))
}

/// What the first SIGINT/SIGTERM does, and what must be cleaned up if a second one comes.
pub type OnSignals =
    fn(Box<dyn FnOnce(Signal) + Send>, Box<dyn FnOnce() + Send>) -> std::io::Result<()>;
