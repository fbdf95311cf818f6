//! How a load's progress is shown on stderr: ab's lines ("Completed N requests" every tenth of
//! the run, at least every 100, then "Finished N requests"), or a live bar on a terminal.

use std::io::{IsTerminal, Write};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Quiet,
    /// ab's lines.
    Lines,
    /// A live bar (only on a terminal).
    Bar,
}

impl Style {
    /// A bar on a terminal, else `otherwise`.
    pub fn bar_or(otherwise: Style) -> Style {
        if std::io::stderr().is_terminal() {
            Style::Bar
        } else {
            otherwise
        }
    }
}

/// The progress of one load.
pub struct Progress {
    style: Style,
    step: u64,
    next: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// For a load of `planned` requests (or one bounded by time).
    pub fn new(style: Style, planned: Option<u64>) -> Progress {
        let step = match planned {
            Some(n) if n > 150 => (n / 10).max(100),
            Some(_) => 0,
            None => 10_000,
        };
        let bar = (style == Style::Bar).then(|| {
            let bar = match planned {
                Some(n) => indicatif::ProgressBar::new(n),
                None => indicatif::ProgressBar::new_spinner(),
            };
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(10));
            let style = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} requests ({per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress {
            style,
            step,
            next: step,
            bar,
        }
    }

    pub fn update(&mut self, completed: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(completed);
            return;
        }
        if self.style != Style::Lines || self.step == 0 {
            return;
        }
        let mut err = std::io::stderr().lock();
        while completed >= self.next {
            let _ = writeln!(err, "Completed {} requests", self.next);
            self.next += self.step;
        }
    }

    pub fn finish(&mut self, completed: u64) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.style == Style::Lines {
            self.update(completed);
            let _ = writeln!(std::io::stderr(), "Finished {completed} requests");
        }
    }
}
