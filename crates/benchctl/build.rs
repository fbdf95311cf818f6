//! Records the commit the binary is built from (`BENCHCTL_COMMIT`, empty outside a git
//! checkout), which every results record keeps, with `-dirty` after it when the code compiled
//! (the workspace's crates, its manifest or its lock file) differs from that commit's.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let mut commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
    let compiled = ["crates", "Cargo.toml", "Cargo.lock"].map(|p| format!("../../{p}"));
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(compiled.iter().map(String::as_str));
    if !commit.is_empty() && git(&status).is_some() {
        commit.push_str("-dirty");
    }
    println!("cargo:rustc-env=BENCHCTL_COMMIT={commit}");
    // What `benchctl --version` prints after the name.
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let shown = match commit.as_str() {
        "" => version,
        c => format!("{version} (commit {c})"),
    };
    println!("cargo:rustc-env=BENCHCTL_VERSION_LINE={shown}");
    // Built again when HEAD moves: a new commit, a checkout, a branch that moved.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            println!("cargo:rerun-if-changed={}", here.join(path).display());
        }
    }
    // And when any compiled file changes, so that `-dirty` comes and goes with the edits.
    for p in &compiled {
        println!("cargo:rerun-if-changed={}", here.join(p).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
