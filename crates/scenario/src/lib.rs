//! Scenario files: what to benchmark, read from TOML, checked completely (every error with
//! its file, line and column) and turned into a typed [`Plan`] before any container starts.
//! Also the documents a scenario serves ([`documents`]), generated deterministically.
//!
//! Knows nothing of Docker or sockets; the orchestrator and load generator only read the Plan.

pub mod capacity;
pub mod documents;
mod error;
mod hash;
pub mod kinds;
pub mod manifest;
mod options;
pub mod overload;
mod plan;
mod raw;
pub mod units;
mod validate;

pub use capacity::{CapacitySpec, CapacityTarget, Percentile};
pub use documents::{materialize, MaterializeError, MaterializedDoc};
pub use error::{escape_controls, Diagnostic, ScenarioError};
pub use hash::sha256_hex;
pub use kinds::{Kind, Kinds};
pub use manifest::{Manifest, OptionDecl, OptionType, VersionHeader};
pub use options::OptionValue;
pub use overload::OverloadSpec;
pub use plan::{
    Coalesce, CpuPlan, DocumentSource, DocumentSpec, GeneratorKind, HostImages, HostSpec, HostUrl,
    ImageSource, LoadSpec, Plan, ServerSpec, SourceFile, TlsKey,
};
pub use validate::{
    DEFAULT_LOADGEN_CPUS, DEFAULT_MEMORY, DEFAULT_SERVER_CPUS, DEFAULT_TIMEOUT, MAX_CONCURRENCY,
    MAX_STREAMS, MIN_MEMORY, MIN_SERVER_SHARE,
};

use std::path::Path;

/// Reads and validates a scenario file with the server kinds around it ([`Kinds::around`]).
/// `file` documents are resolved against its folder.
pub fn load_file(path: &Path) -> Result<Plan, ScenarioError> {
    load_file_with(path, &Kinds::around(path, None))
}

/// Reads and validates a scenario file whose server kinds are `kinds`.
pub fn load_file_with(path: &Path, kinds: &Kinds) -> Result<Plan, ScenarioError> {
    let bytes = userfile::read(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    match String::from_utf8(bytes) {
        Ok(src) => parse_str_with(&src, path, kinds),
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let src = String::from_utf8_lossy(e.as_bytes());
            let mut d = error::Diagnostics::new(&src, path);
            d.error(
                offset..offset,
                "the file is not valid UTF-8 (save it as UTF-8, as TOML requires)",
            );
            Err(d.finish().expect_err("one error was recorded"))
        }
    }
}

/// Validates scenario text as if it were the file at `path`: `path` names the file in
/// errors, anchors relative `file` documents and finds the server kinds ([`Kinds::around`]),
/// and `scenario_hash` is the hash of `src`.
pub fn parse_str(src: &str, path: &Path) -> Result<Plan, ScenarioError> {
    parse_str_with(src, path, &Kinds::around(path, None))
}

/// [`parse_str`] with the server kinds given.
pub fn parse_str_with(src: &str, path: &Path, kinds: &Kinds) -> Result<Plan, ScenarioError> {
    // Every unknown key at once: the schema below would stop at the first.
    let unknown = raw::unknown_keys(src);
    if !unknown.is_empty() {
        let mut d = error::Diagnostics::new(src, path);
        for (span, message) in unknown
            .into_iter()
            .chain(validate::unknown_server_keys(src, kinds))
        {
            d.error(span, message);
        }
        return Err(d.finish().expect_err("errors were recorded"));
    }
    let raw: raw::RawScenario = match toml::from_str(src) {
        Ok(raw) => raw,
        Err(e) => {
            let mut d = error::Diagnostics::new(src, path);
            d.error(e.span().unwrap_or(0..0), toml_message(e.message()));
            return Err(d.finish().expect_err("one error was recorded"));
        }
    };
    validate::validate(src, path, raw, kinds)
}

/// toml's message for a syntax or schema error, on one line, with what to do about it.
fn toml_message(message: &str) -> String {
    // serde names Rust types; a scenario's author thinks in TOML's.
    let message = message
        .trim()
        .replace('\n', "; ")
        .replace("expected i64", "expected an integer")
        .replace("expected u64", "expected an integer")
        .replace("expected f64", "expected a number");
    let hint = if message.starts_with("unknown field") {
        "remove it or correct its spelling; scenarios/README.md lists every key"
    } else if message.starts_with("missing field") {
        "add it"
    } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
        "change the value to the expected type"
    } else if message.starts_with("duplicate key") {
        "keep only one of them"
    } else {
        "fix the TOML syntax"
    };
    format!("{message} ({hint})")
}
