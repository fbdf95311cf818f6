//! The error a command ends with, and the exit status it deserves.

/// An error with the exit status it deserves: 2 for bad input, 1 otherwise.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn usage(e: impl Into<anyhow::Error>) -> Self {
        Failure {
            code: 2,
            error: e.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: 1,
            error: e.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    /// `{:#}` is the error and its causes on one line, each said once.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if f.alternate() {
            write!(f, "{}", chain_text(&self.error))
        } else {
            write!(f, "{}", self.error)
        }
    }
}

/// The error and its causes, joined by ": ", leaving out a cause whose text is already there:
/// many errors quote their source in their own message ("cannot write X: {source}") and keep it
/// as their source too, and wrappers repeat their inner error's message, so anyhow's `{:#}`
/// would print the same words two or three times.
fn chain_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if text.is_empty() {
            text = s;
        } else if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
    }
    text
}
