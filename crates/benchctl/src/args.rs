//! Values given on the command line or in the environment, parsed.

use crate::failure::Failure;
use anyhow::anyhow;
use std::path::PathBuf;

/// The server sources named in `BENCHCTL_SOURCES` (`KIND=FILE[,KIND=FILE...]`).
pub fn env_sources() -> Result<Vec<(String, std::path::PathBuf)>, Failure> {
    let Some(value) = std::env::var_os("BENCHCTL_SOURCES") else {
        return Ok(Vec::new());
    };
    let value = value.to_string_lossy().into_owned();
    value
        .split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            kind_and_file(e.trim())
                .map_err(|m| Failure::usage(anyhow::anyhow!("BENCHCTL_SOURCES: {m}")))
        })
        .collect()
}

/// `KIND=FILE`: a server kind's own source (`--source`, `BENCHCTL_SOURCES`).
pub(crate) fn kind_and_file(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((kind, file)) if !kind.is_empty() && !file.is_empty() => {
            Ok((kind.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "expected KIND=FILE, e.g. cherokee=cherokee-1.2.104.tar.gz, not {text:?}"
        )),
    }
}

/// `--threshold`: a percentage (`5%`) or a fraction (`0.05`).
pub(crate) fn parse_threshold(s: &str) -> anyhow::Result<f64> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        anyhow!("--threshold {s:?}: expected a percentage such as 5% or a fraction such as 0.05")
    })?;
    if !(0.0..10.0).contains(&v) {
        return Err(anyhow!("--threshold {s:?} is out of range"));
    }
    Ok(v)
}
