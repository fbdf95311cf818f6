//! Scenario checking through the built binary, no Docker needed: `benchctl validate` accepts
//! every file in `scenarios/`; each broken file in `tests/fixtures/broken/` (unknown key, wrong
//! type, Varnish without a backend, a backend that is not a server, concurrency above requests,
//! a bad size, a TOML syntax error, a capacity percentile it cannot use, a host's `images`
//! that is neither "build" nor "ship") makes both
//! `benchctl run FILE` and `benchctl validate FILE` exit with status 2 and print
//! `FILE:LINE:COL: error:` at the line and column its `# expect:` comment names, while `run`
//! writes no results file and starts no container (checked by the `benchctl.pid` label when a
//! Docker daemon answers). `benchctl run -o EXISTING` exits 2 and
//! leaves that file byte for byte as it was. `benchctl images push` refuses a broken scenario,
//! a host it does not have and a kind there is not, with status 2, before it connects.
//!
//! Every child process runs under a deadline and is killed (and the test failed) past it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Validation never touches Docker, so anything slower than this is a hang.
const LIMIT: Duration = Duration::from_secs(30);

pub(crate) struct Finished {
    pid: u32,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `benchctl ARGS` from the repository root; kills it and fails past [`LIMIT`].
pub(crate) fn benchctl(args: &[&str]) -> Finished {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(args)
        .current_dir(testsupport::repo_root())
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("start benchctl");
    let pid = child.id();
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for benchctl") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let f = Finished {
        pid,
        code: status.and_then(|s| s.code()),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "benchctl {args:?} ran past {LIMIT:?} and was killed\n{}",
        f.describe()
    );
    f
}

/// Containers (running or not) that process `pid` started, or None when no daemon answers.
fn containers_of(pid: u32) -> Option<Vec<String>> {
    let mut child = Command::new("docker")
        .args(["ps", "-a", "-q", "--filter"])
        .arg(format!("label=benchctl.pid={pid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    })
}

fn assert_no_container(f: &Finished, what: &str) {
    if let Some(left) = containers_of(f.pid) {
        assert!(
            left.is_empty(),
            "{what}: containers labelled benchctl.pid={}: {left:?}",
            f.pid
        );
    }
    assert!(
        !f.stderr.contains("building image"),
        "{what}: an image build started\n{}",
        f.describe()
    );
}

/// The broken fixtures, relative to the repository root, with the `LINE:COL: message` each
/// expects (from its `# expect:` comment).
fn broken_fixtures() -> Vec<(String, String)> {
    let root = testsupport::repo_root();
    let dir = Path::new("crates/benchctl/tests/fixtures/broken");
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join(dir)).expect("fixtures/broken") {
        let path = e.expect("dir entry").path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let expect = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()))
            .to_string();
        let rel = dir.join(path.file_name().expect("file name"));
        out.push((rel.to_str().expect("UTF-8 path").to_string(), expect));
    }
    out.sort();
    assert!(
        out.len() >= 7,
        "expected the seven broken fixtures, found {out:?}"
    );
    out
}

/// `FILE:LINE:COL: error: message` for the fixture's expectation `LINE:COL: message`.
fn expected_error(file: &str, expect: &str) -> String {
    let (pos, message) = expect
        .split_once(": ")
        .unwrap_or_else(|| panic!("{file}: `# expect:` must read LINE:COL: message"));
    format!("{file}:{pos}: error: {message}")
}

#[test]
fn every_shipped_scenario_validates() {
    let root = testsupport::repo_root();
    let mut files: Vec<String> = std::fs::read_dir(root.join("scenarios"))
        .expect("scenarios/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("toml"))
        .map(|p| {
            p.strip_prefix(&root)
                .expect("under the root")
                .to_str()
                .expect("UTF-8 path")
                .to_string()
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 6,
        "expected a scenario per seed and quick.toml, found {files:?}"
    );
    for file in &files {
        let f = benchctl(&["validate", file]);
        assert_eq!(f.code, Some(0), "validate {file}\n{}", f.describe());
        assert!(
            f.stdout.starts_with(&format!("{file}: ok: ")),
            "validate {file}\n{}",
            f.describe()
        );
        assert!(f.stderr.is_empty(), "validate {file}\n{}", f.describe());
    }
    // All at once, as CI might call it.
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let f = benchctl(&args);
    assert_eq!(f.code, Some(0), "validate all\n{}", f.describe());
    assert_eq!(f.stdout.lines().count(), files.len(), "{}", f.describe());
}

#[test]
fn broken_scenarios_fail_validate_with_their_position() {
    for (file, expect) in broken_fixtures() {
        let f = benchctl(&["validate", &file]);
        assert_eq!(f.code, Some(2), "validate {file}\n{}", f.describe());
        let want = expected_error(&file, &expect);
        assert!(
            f.stderr.lines().any(|l| l.starts_with(&want)),
            "validate {file}: no line starting with {want:?}\n{}",
            f.describe()
        );
        assert!(
            f.stderr.lines().all(|l| l.starts_with(&format!("{file}:"))),
            "validate {file}: every error line names the file\n{}",
            f.describe()
        );
        assert!(f.stdout.is_empty(), "validate {file}\n{}", f.describe());
    }
}

#[test]
fn broken_scenarios_fail_run_before_anything_starts() {
    let out_dir = tempfile::tempdir().expect("tempdir");
    for (file, expect) in broken_fixtures() {
        let stem = Path::new(&file)
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("file stem");
        let out = out_dir.path().join(format!("{stem}.json"));
        let out_arg = out.to_str().expect("UTF-8 path");
        let f = benchctl(&["run", &file, "-o", out_arg]);
        assert_eq!(f.code, Some(2), "run {file}\n{}", f.describe());
        let want = expected_error(&file, &expect);
        assert!(
            f.stderr.contains(&want),
            "run {file}: stderr lacks {want:?}\n{}",
            f.describe()
        );
        assert!(
            !f.stderr.contains("panicked"),
            "run {file}\n{}",
            f.describe()
        );
        assert!(
            !out.exists(),
            "run {file} wrote a results file {}",
            out.display()
        );
        assert_no_container(&f, &format!("run {file}"));
    }
    let left: Vec<_> = std::fs::read_dir(out_dir.path())
        .expect("read out dir")
        .collect();
    assert!(
        left.is_empty(),
        "files appeared in the results folder: {left:?}"
    );
}

#[test]
fn run_never_overwrites_a_results_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("x.json");
    let before: &[u8] = b"{\"not\": \"a benchctl record\", \"keep\": [1, 2, 3]}\n\0\xff";
    std::fs::write(&out, before).expect("write the existing file");
    let out_arg = out.to_str().expect("UTF-8 path");
    let f = benchctl(&["run", "scenarios/quick.toml", "-o", out_arg]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains(out_arg) && f.stderr.contains("exists already"),
        "the error names the file and why\n{}",
        f.describe()
    );
    assert_eq!(
        f.stderr.matches("exists already").count(),
        1,
        "the error says it once\n{}",
        f.describe()
    );
    assert_eq!(
        std::fs::read(&out).expect("read back"),
        before,
        "the existing file changed"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("read dir").count(),
        1,
        "nothing else was written beside it"
    );
    assert_no_container(&f, "run -o EXISTING");
}

#[test]
fn an_unusable_results_file_or_run_count_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-folder/x.json");
    let f = benchctl(&[
        "run",
        "scenarios/quick.toml",
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains("does not exist (make it first"),
        "{}",
        f.describe()
    );
    assert!(!dir.path().join("no-such-folder").exists(), "it was made");
    assert_no_container(&f, "run -o MISSING/x.json");

    // A folder that is a file.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let inside = file.join("x.json");
    let f = benchctl(&[
        "run",
        "scenarios/quick.toml",
        "-o",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains(&format!(
            "{}: {} is not a folder",
            inside.display(),
            file.display()
        )),
        "{}",
        f.describe()
    );
    assert_no_container(&f, "run -o FILE/x.json");

    let f = benchctl(&["run", "scenarios/quick.toml", "--runs", "0"]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("'0'"), "{}", f.describe());
    assert_no_container(&f, "run --runs 0");
}

#[test]
fn a_bad_capacity_target_is_refused_before_anything_starts() {
    let out_dir = tempfile::tempdir().expect("tempdir");
    let out = out_dir.path().join("run.json");
    let out_arg = out.to_str().expect("UTF-8 path");
    for (value, why) in [
        (
            "p99=abc",
            "`abc` is not a latency (write it as 10ms, 500us or 1.5s)",
        ),
        (
            "p101=1ms",
            "`p101` is not a percentile a capacity search can hold a server to (use p50, p90, p99 or p99.9)",
        ),
        (
            "10ms",
            "`10ms` is not a latency target (write PERCENTILE=LATENCY, e.g. p99=10ms)",
        ),
    ] {
        let f = benchctl(&[
            "run",
            "scenarios/quick.toml",
            "--capacity",
            value,
            "-o",
            out_arg,
        ]);
        assert_eq!(f.code, Some(2), "--capacity {value}\n{}", f.describe());
        assert!(
            f.stderr.contains(&format!(
                "invalid value '{value}' for '--capacity <PERCENTILE=LATENCY>': {why}"
            )),
            "--capacity {value}\n{}",
            f.describe()
        );
        assert!(!out.exists(), "--capacity {value} wrote {}", out.display());
        assert_no_container(&f, &format!("--capacity {value}"));
    }
}

/// A scenario beside a kind folder `kind_dir` whose manifest says `user`.
fn scenario_with_kind(dir: &Path, kind_dir: &str, user: &str, extra: &str) -> PathBuf {
    let kind = dir.join(kind_dir);
    std::fs::create_dir_all(&kind).unwrap();
    std::fs::write(kind.join("Dockerfile"), "FROM debian:bookworm-slim\n").unwrap();
    std::fs::write(
        kind.join("server.toml"),
        format!(
            "[server]\nname = \"x\"\nsource = \"test\"\n[container]\nuser = \"{user}\"\n{extra}"
        ),
    )
    .unwrap();
    let path = dir.join("s.toml");
    std::fs::write(
        &path,
        format!("name = \"k\"\n[load]\nrequests = 1\n[[server]]\nname = \"a\"\nkind = \"{kind_dir}\"\n[[document]]\nname = \"h\"\npath = \"/\"\ngenerate = \"hello\"\n"),
    )
    .unwrap();
    path
}

#[test]
fn a_kind_that_would_run_as_root_however_spelled_is_refused() {
    for (user, expect) in [
        ("0000", "names no group"),
        ("0000:0000", "is root"),
        ("00:00", "is root"),
        ("+0:33", "is not a decimal number"),
        ("root:root", "is not a decimal number"),
        ("33:0", "group 0"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = scenario_with_kind(
            dir.path(),
            "rootish",
            user,
            "capabilities = [\"NET_BIND_SERVICE\"]\n",
        );
        for cmd in ["validate", "run"] {
            let f = benchctl(&[cmd, path.to_str().unwrap()]);
            assert_eq!(f.code, Some(2), "{user} {cmd}: {}", f.describe());
            assert!(
                f.stderr.contains("rootish/server.toml:5:8: error: user ")
                    && f.stderr.contains(expect),
                "{user} {cmd}: {}",
                f.describe()
            );
        }
    }
}

#[test]
fn kind_folders_that_cannot_name_an_image_are_refused_at_validation() {
    for name in ["UPPER", "a..b", "_under", "sp ace"] {
        let dir = tempfile::tempdir().unwrap();
        let path = scenario_with_kind(dir.path(), name, "33:33", "");
        let f = benchctl(&["validate", path.to_str().unwrap()]);
        assert_eq!(f.code, Some(2), "{name}: {}", f.describe());
        assert!(
            f.stderr.contains("s.toml:6:8: error: kind `")
                && f.stderr.contains("cannot name an image"),
            "{name}: {}",
            f.describe()
        );
    }
}

#[test]
fn images_push_refuses_what_it_cannot_send_before_it_connects() {
    let file = "crates/benchctl/tests/fixtures/broken/host-images.toml";
    let expect = broken_fixtures()
        .into_iter()
        .find(|(f, _)| f == file)
        .expect("the host-images fixture")
        .1;
    let f = benchctl(&["images", "push", "--scenario", file, "--host", "srv1"]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains(&expected_error(file, &expect)),
        "{}",
        f.describe()
    );

    // A good scenario, with a host of an address nobody has: refused before any connection.
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"s\"\n[load]\nrequests = 10\n\
         [[host]]\nname = \"srv1\"\nurl = \"tcp://127.0.0.1:9\"\ninsecure = true\nimages = \"ship\"\n\
         [[server]]\nname = \"nginx\"\nkind = \"nginx\"\nhost = \"srv1\"\n\
         [[document]]\nname = \"hello\"\npath = \"/\"\ngenerate = \"hello\"\n",
    )
    .unwrap();
    let s = scenario.to_str().unwrap();
    let docker = testsupport::repo_root().join("docker");
    let d = docker.to_str().unwrap();
    for (args, why) in [
        (
            vec!["--host", "srv9"],
            format!("--host srv9: {s} has no [[host]] of that name (it has: srv1)"),
        ),
        (
            vec!["--host", "srv1", "thttpd"],
            "no server kind thttpd (the kinds found: apache, ".to_string(),
        ),
    ] {
        let mut all = vec!["images", "push", "--scenario", s, "--docker-dir", d];
        all.extend(args);
        let f = benchctl(&all);
        assert_eq!(f.code, Some(2), "{all:?}\n{}", f.describe());
        assert!(
            f.stderr.starts_with(&format!("benchctl: error: {why}")),
            "{all:?}\n{}",
            f.describe()
        );
        assert!(f.stdout.is_empty(), "{all:?}\n{}", f.describe());
    }
}

#[test]
fn scenarios_and_sources_that_are_not_regular_files_are_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let fifo = fifo.to_str().unwrap();
    let out = dir.path().join("run.json");
    let chardev = "it is a character device, not a regular file";
    let named_pipe = "it is a FIFO (named pipe), not a regular file";
    let cases: &[(&[&str], &str, &str)] = &[
        (&["validate", "/dev/zero"], "/dev/zero", chardev),
        (&["validate", fifo], fifo, named_pipe),
        (
            &["run", fifo, "-o", out.to_str().unwrap()],
            fifo,
            named_pipe,
        ),
        (
            &["images", "build", "nginx", "--source", "/dev/zero"],
            "/dev/zero",
            chardev,
        ),
        (
            &["images", "build", "nginx", "--source", fifo],
            fifo,
            named_pipe,
        ),
    ];
    for (args, path, says) in cases {
        let f = benchctl(args);
        assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
        assert!(
            f.stderr.contains(path) && f.stderr.contains(says),
            "benchctl {args:?}: the error names the file and what it is\n{}",
            f.describe()
        );
        assert!(f.stdout.is_empty(), "benchctl {args:?}\n{}", f.describe());
        assert_no_container(&f, &format!("benchctl {args:?}"));
    }
    assert!(!out.exists(), "run wrote a results file");
}

#[test]
fn control_characters_in_a_scenario_or_a_name_are_shown_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let quick =
        std::fs::read_to_string(testsupport::repo_root().join("scenarios/quick.toml")).unwrap();
    // An escape sequence in a value, in a key, and in a size.
    let text = quick
        .replace(
            "kind = \"apache\"",
            "kind = \"apa\\u001b[31mche\"\n\"x\\u001b[2Jy\" = 1",
        )
        .replace("size = 468", "size = \"4\\u001b[0m68\"");
    assert_ne!(text, quick);
    let file = dir.path().join("escapes.toml");
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap();
    let out = dir.path().join("run.json");
    for args in [
        vec!["validate", file, "--docker-dir", "docker"],
        vec![
            "run",
            file,
            "--docker-dir",
            "docker",
            "-o",
            out.to_str().unwrap(),
        ],
    ] {
        let f = benchctl(&args);
        assert_eq!(f.code, Some(2), "{args:?}\n{}", f.describe());
        assert!(
            !f.stderr.contains('\u{1b}'),
            "{args:?}: raw escape\n{}",
            f.describe()
        );
        for quoted in [r"`apa\u{1b}[31mche`", r"`x\u{1b}[2Jy`", r"`4\u{1b}[0m68`"] {
            assert!(
                f.stderr.contains(quoted),
                "{args:?}: no {quoted}\n{}",
                f.describe()
            );
        }
    }
    // A file name quoted in a command's error.
    let named = dir.path().join("red\u{1b}[31m.json");
    let f = benchctl(&["report", named.to_str().unwrap()]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(!f.stderr.contains('\u{1b}'), "raw escape\n{}", f.describe());
    assert!(f.stderr.contains(r"red\u{1b}[31m.json"), "{}", f.describe());
}

#[test]
fn the_version_names_the_commit_the_binary_was_built_from() {
    let f = benchctl(&["--version"]);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(testsupport::repo_root())
        .output()
        .expect("git");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let line = f.stdout.trim();
    if head.is_empty() {
        assert_eq!(line, format!("benchctl {}", env!("CARGO_PKG_VERSION")));
    } else {
        // Built from this checkout: its commit, `-dirty` when the code compiled differs from it.
        let prefix = format!("benchctl {} (commit {head}", env!("CARGO_PKG_VERSION"));
        assert!(line.starts_with(&prefix), "{line:?} vs {prefix:?}");
        assert!(line.ends_with(')'), "{line:?}");
    }
}
