//! The system commands a fixture set is made and taken apart with.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Runs a command to completion; its stderr is the error.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

pub(crate) fn output(args: &[&str]) -> String {
    Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Where `tool` is: on PATH or in the system's binary folders.
pub(crate) fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].iter().map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|f| f.is_file())
}
