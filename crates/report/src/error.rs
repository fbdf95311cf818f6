//! One error type for everything the report crate can refuse, so the CLI can print a message
//! that says what is wrong with which file and what to do about it.

use std::path::PathBuf;

/// What went wrong while loading, writing or rendering results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} exists already; a run never overwrites a results record (choose another file, or remove that one)")]
    Exists { path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not JSON (line {line}, column {column}: {message}); is it a benchctl results file, and was it cut short?")]
    NotJson {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path} is JSON but not a benchctl results file: {detail}")]
    NotARunRecord { path: PathBuf, detail: String },
    #[error("{path} has {what} version {found}, newer than the {supported} this benchctl reads; upgrade benchctl to read it")]
    NewerVersion {
        path: PathBuf,
        what: &'static str,
        found: u64,
        supported: u64,
    },
    #[error(
        "cannot decode the latency histogram of {server} / {document} round {round}: {detail}"
    )]
    Histogram {
        server: String,
        document: String,
        round: u32,
        detail: String,
    },
    #[error("cannot read template {path}: {source}")]
    TemplateRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Published { path: PathBuf, detail: String },
    #[error("template {name}: {detail}")]
    Template { name: String, detail: String },
    #[error("unknown report format {0:?}: expected text, markdown or html")]
    UnknownFormat(String),
    #[error("cannot serialize the results: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl ReportError {
    /// Tera hides the useful part of an error in its source chain; flatten it into one line so
    /// a template author sees the line that broke.
    pub(crate) fn template(name: &str, err: &tera::Error) -> Self {
        let mut detail = err.to_string();
        let mut src = std::error::Error::source(err);
        while let Some(s) = src {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            src = s.source();
        }
        ReportError::Template {
            name: name.to_string(),
            detail,
        }
    }
}
