//! Set-up the integration tests of every crate share, each piece written once so that all the
//! tests agree on it:
//!
//! - [`in_ci`]: one meaning of "these tests run in CI", where a test that cannot run fails
//!   instead of skipping ([`skip_or_fail`], [`ok_or_skip`]);
//! - [`repo_root`]: the repository's root folder;
//! - [`exclusive`]: one Docker run at a time across test processes ([`lock_exclusive`] for
//!   other lock files);
//! - [`docker_answers`] / [`docker_or_skip`]: whether a Docker daemon answers the `docker` CLI;
//! - [`TEST_BASE`] and [`busybox_dockerfile`]: the tests' base image and the small busybox web
//!   server built on it, by one recipe so that every test finds the same image by its tag.
//!
//! It depends on nothing of the workspace, so that every crate's tests can use it (the
//! orchestrator's included); what needs the orchestrator stays with the tests.

use std::fmt::Display;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether the tests run in CI: `CI` is set to anything but the empty string, `0` or `false`
/// (so `CI=` or `CI=false`, as some shells and tools leave it, means a machine of one's own).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The name of the running test: the test harness names each test's thread after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string()
}

/// A test that cannot run here for `why`: outside CI it prints why it skips (the caller then
/// returns); in CI, where every test must run, it panics with the reason.
pub fn skip_or_fail(why: impl Display) {
    let test = test_name();
    if in_ci() {
        panic!("{test}: CI is set, so this test must run, but: {why}");
    }
    eprintln!("{test}: SKIPPED: {why} (set CI=1 to make this a failure)");
}

/// The value of `result`, or `None` after [`skip_or_fail`] with `what` and the error: for a
/// test that needs what `result` was to give (a daemon's connection, a tool, a source).
pub fn ok_or_skip<T, E: Display>(what: &str, result: Result<T, E>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            skip_or_fail(format!("{what} ({e})"));
            None
        }
    }
}

/// The repository's root folder (this crate lives two folders below it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// An exclusive flock(2) on `path` (made if missing, never truncated), waiting while another
/// process holds it; it is held for as long as the returned file is open.
pub fn lock_exclusive(path: &Path) -> std::io::Result<File> {
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    // The lock goes with the descriptor when the returned file is closed.
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(f)
}

/// The lock file of [`exclusive`]. Every test that runs servers under load takes this one file,
/// whichever crate and test binary it is in, so that no two such runs overlap.
pub const RUN_LOCK_FILE: &str = "benchctl-run-docker-tests.lock";

/// One Docker run at a time across test processes: the machines have 2 cores with servers
/// pinned to one and the load generator to the other, so overlapping runs would measure each
/// other and stretch every deadline. Held until the returned file drops.
pub fn exclusive() -> File {
    let path = std::env::temp_dir().join(RUN_LOCK_FILE);
    lock_exclusive(&path).unwrap_or_else(|e| panic!("flock {}: {e}", path.display()))
}

/// How long a `docker info` may take before the daemon counts as not answering.
const DOCKER_INFO_LIMIT: Duration = Duration::from_secs(60);

/// Whether a Docker daemon answers `docker info` (within 60 s); the error says why not.
pub fn docker_answers() -> Result<(), String> {
    let mut child = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("no docker CLI: {e}"))?;
    let deadline = Instant::now() + DOCKER_INFO_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "docker info did not answer within {} s",
                    DOCKER_INFO_LIMIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for docker info: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("docker info: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "docker info failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether a Docker daemon answers; without one the test skips, except in CI where it fails
/// ([`skip_or_fail`]).
pub fn docker_or_skip() -> bool {
    ok_or_skip("no Docker daemon answers `docker info`", docker_answers()).is_some()
}

/// The base image the tests make for themselves (with mmdebstrap), apart from the real
/// `debian:*` tags so that a test run never races with someone making those.
pub const TEST_BASE: &str = "benchctl-test/bookworm:base";

/// The Dockerfile of the busybox test server: busybox's httpd on [`TEST_BASE`], serving
/// /srv/www on 127.0.0.1:$BENCH_PORT. Its context is this one file and never changes, so every
/// test that builds it gets the same image and finds it by its tag afterwards.
pub fn busybox_dockerfile() -> String {
    format!(
        "FROM {TEST_BASE}\n\
         RUN apt-get update && apt-get install -y --no-install-recommends busybox \
             && rm -rf /var/lib/apt/lists/*\n\
         ENTRYPOINT [\"sh\", \"-c\", \"exec busybox httpd -f -v -p 127.0.0.1:$BENCH_PORT -h /srv/www\"]\n"
    )
}

/// Writes a server kind by the contract in docker/README.md into `dir`: busybox's httpd from
/// `base` (an image of [`busybox_dockerfile`]), run as nobody on $BENCH_ADDR (127.0.0.1 when
/// unset) and $BENCH_PORT, confined as its server.toml says with `pids_limit`; `extra` is added
/// to the end of its Dockerfile (lines ending in a newline, or nothing).
pub fn write_busybox_kind(dir: &Path, base: &str, pids_limit: u32, extra: &str) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let dockerfile = format!(
        "FROM {base}\nUSER 65534:65534\n\
         ENTRYPOINT [\"sh\", \"-c\", \"exec busybox httpd -f -p ${{BENCH_ADDR:-127.0.0.1}}:$BENCH_PORT -h /srv/www\"]\n{extra}"
    );
    let manifest = format!(
        "[server]\nname = \"busybox httpd\"\nsource = \"Debian bookworm package busybox\"\n\n\
         [container]\nuser = \"65534:65534\"\ncapabilities = []\npids_limit = {pids_limit}\n\
         tmpfs = [{{ path = \"/tmp\", size = \"1m\" }}]\n"
    );
    for (name, text) in [("Dockerfile", dockerfile), ("server.toml", manifest)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Checks, in an A/B run's event lines (`load …`, `done …` and `headroom …` of one server),
/// that both loads of every pair started before either was done; a pair measured again at a
/// smaller share (a `headroom` line after its two starts) starts again. Returns how many loads
/// were done.
pub fn assert_pairs_loaded_together<S: AsRef<str>>(course: &[S]) -> usize {
    let lines: Vec<&str> = course.iter().map(AsRef::as_ref).collect();
    let (mut started, mut done, mut total) = (0, 0, 0);
    for l in &lines {
        if l.starts_with("headroom ") {
            assert_eq!((started, done), (2, 0), "{lines:?}");
            started = 0;
        } else if l.starts_with("load ") {
            assert_eq!(done, 0, "{lines:?}");
            started += 1;
        } else {
            assert!(l.starts_with("done "), "{l}");
            assert_eq!(started, 2, "{lines:?}");
            done += 1;
            total += 1;
            if done == 2 {
                (started, done) = (0, 0);
            }
        }
    }
    assert_eq!((started, done), (0, 0), "a pair left unfinished: {lines:?}");
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_root_holds_the_workspace() {
        let root = repo_root();
        assert!(root.join("Cargo.toml").is_file(), "{}", root.display());
        assert!(
            root.join("crates/testsupport").is_dir(),
            "{}",
            root.display()
        );
    }

    #[test]
    fn the_lock_is_held_until_dropped_and_can_be_taken_again() {
        let path = std::env::temp_dir().join(format!("testsupport-lock-{}", std::process::id()));
        let held = lock_exclusive(&path).unwrap();
        // A second descriptor cannot take it while the first holds it.
        let other = File::options().write(true).open(&path).unwrap();
        let taken = rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        assert!(taken.is_err());
        drop(held);
        drop(lock_exclusive(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
    }
}
