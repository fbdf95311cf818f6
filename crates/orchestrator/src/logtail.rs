//! The last lines of a log (a build's, a container's), for error messages.

use std::collections::VecDeque;

/// How many log lines an error carries.
pub(crate) const TAIL_LINES: usize = 20;

/// Keeps the last lines written to a log, for error messages.
pub(crate) struct Tail {
    lines: VecDeque<String>,
    partial: String,
}

impl Tail {
    pub(crate) fn new() -> Self {
        Tail {
            lines: VecDeque::new(),
            partial: String::new(),
        }
    }

    pub(crate) fn push(&mut self, text: &str) {
        for ch in text.chars() {
            if ch == '\n' || ch == '\r' {
                let line = std::mem::take(&mut self.partial);
                if !line.trim().is_empty() {
                    if self.lines.len() == TAIL_LINES {
                        self.lines.pop_front();
                    }
                    self.lines.push_back(line);
                }
            } else {
                self.partial.push(ch);
            }
        }
    }

    pub(crate) fn finish(mut self) -> Vec<String> {
        self.push("\n");
        self.lines.into()
    }
}

/// Removes ANSI escape sequences (`ESC [ ... final`) and lone escapes.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[91mcurl: (6) x\n\u{1b}[0mnext"),
            "curl: (6) x\nnext"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn tail_keeps_last_lines() {
        let mut t = Tail::new();
        for i in 0..30 {
            t.push(&format!("line {i}\n\n"));
        }
        t.push("partial");
        let lines = t.finish();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines.last().unwrap(), "partial");
        assert_eq!(lines[0], "line 11");
    }
}
