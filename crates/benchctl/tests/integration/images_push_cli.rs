//! Images for a host whose engine cannot build them (it reaches no package mirror), through the
//! built binary, against an engine the test makes in a network namespace ([`testhosts`]):
//! - `benchctl images push` builds a kind here and sends it there, where it has the id it has
//!   here; a second push says it is already there and sends nothing; a kind whose folder
//!   changed without changing the image is only tagged there; a kind that fails to
//!   build is named and the command exits 1;
//! - `benchctl run` with `images = "ship"` builds here and sends the image a server on that
//!   host needs, finds there the one pushed before, and measures both servers there.
//!
//! Every request goes to the address of the namespace this test made; the loads are bounded
//! (50 requests each), and every command is waited for within a limit.

use orchestrator::{Endpoint, Orchestrator};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use testhosts::TestHosts;

/// busybox's httpd in the tests' base image, built on this machine's engine by the recipe the
/// other host tests use (so its tag is theirs).
async fn busybox_base(local: &Orchestrator) -> String {
    crate::ensure_test_base(local).await;
    let ctx = tempfile::tempdir().unwrap();
    std::fs::write(
        ctx.path().join("Dockerfile"),
        testsupport::busybox_dockerfile(),
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    local
        .build_image("test-busybox", ctx.path(), &logs.path().join("b.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .tag
}

/// A server kind by the contract in docker/README.md, on top of `base`, with `extra` lines
/// at the end of its Dockerfile.
fn write_kind(dir: &Path, base: &str, extra: &str) {
    testsupport::write_busybox_kind(dir, base, 64, extra);
}

/// Runs benchctl to completion, killed past `limit`.
fn benchctl(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchctl");
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "benchctl {args:?} outlasted {limit:?}:\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    eprintln!(
        "--- benchctl {}: {}\n{}{}",
        args.join(" "),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn images_built_here_are_shipped_to_a_host_checked_by_id_and_not_sent_twice() {
    if !testhosts::available_or_skip() {
        return;
    }
    let _one_at_a_time = testsupport::exclusive();
    let w = World::up();
    let (tag, id, first_s) = a_first_push_sends_it(&w);
    let second_s = a_second_push_sends_nothing(&w, &tag, &id);
    a_changed_folder_is_only_retagged(&w, &tag, &id);
    a_broken_kind_is_named(&w);
    a_run_ships_what_it_needs(&w, &id);
    eprintln!(
        "first push {first_s:.1} s, second {second_s:.1} s; {:.1} s from the host's start",
        w.started.elapsed().as_secs_f64()
    );
}

/// This machine's engine, a namespace host's (srv1) and the kinds and scenario of the test
/// above. (Fields drop in this order: the clients before their runtime, the host last.)
struct World {
    dir: tempfile::TempDir,
    kinds: PathBuf,
    scenario: PathBuf,
    local: Orchestrator,
    remote: Orchestrator,
    rt: tokio::runtime::Runtime,
    started: Instant,
    hosts: TestHosts,
}

impl World {
    fn up() -> World {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let local = rt
            .block_on(Orchestrator::connect())
            .expect("the local engine");
        // Made before the clock starts: shared with the other host tests, built once per machine.
        let base = rt.block_on(busybox_base(&local));
        let started = Instant::now();
        let hosts = TestHosts::up(1).unwrap_or_else(|e| panic!("making a test host: {e}"));
        let h = &hosts.hosts()[0];
        eprintln!(
            "host at {}: dockerd answered after {:.1} s",
            h.address,
            h.ready_after.as_secs_f64()
        );
        let remote = rt
            .block_on(Orchestrator::connect_to(&Endpoint::Tcp {
                host: h.address.to_string(),
                port: testhosts::ENGINE_PORT,
                tls: None,
            }))
            .unwrap();

        let dir = tempfile::tempdir().unwrap();
        let kinds = dir.path().join("kinds");
        write_kind(&kinds.join("tiny"), &base, "");
        // Another image (its label differs), which the run sends itself.
        write_kind(
            &kinds.join("other"),
            &base,
            "LABEL purpose=shipped-by-the-run\n",
        );
        write_kind(&kinds.join("broken"), &base, "RUN false\n");
        let scenario = dir.path().join("ship.toml");
        std::fs::write(
            &scenario,
            format!(
                "name = \"ship\"\n[load]\nrequests = 50\nconcurrency = 2\ntimeout = \"10s\"\n\
                 [[host]]\nname = \"srv1\"\nurl = \"{}\"\ninsecure = true\nimages = \"ship\"\n\
                 [[server]]\nname = \"tiny\"\nkind = \"tiny\"\nhost = \"srv1\"\nmemory = \"64m\"\n\
                 [[server]]\nname = \"other\"\nkind = \"other\"\nhost = \"srv1\"\nmemory = \"64m\"\n\
                 [[document]]\nname = \"hello\"\npath = \"/\"\ngenerate = \"hello\"\n",
                h.tcp_url()
            ),
        )
        .unwrap();
        World {
            dir,
            kinds,
            scenario,
            local,
            remote,
            rt,
            started,
            hosts,
        }
    }

    fn scenario_arg(&self) -> &str {
        self.scenario.to_str().unwrap()
    }

    fn kinds_arg(&self) -> &str {
        self.kinds.to_str().unwrap()
    }

    /// `benchctl images push` to srv1, with `extra` arguments.
    fn push(&self, extra: &[&str]) -> Output {
        let mut args = vec![
            "images",
            "push",
            "--scenario",
            self.scenario_arg(),
            "--host",
            "srv1",
            "--docker-dir",
            self.kinds_arg(),
        ];
        args.extend_from_slice(extra);
        benchctl(&args, Duration::from_secs(300))
    }

    fn id_of(&self, orch: &Orchestrator, tag: &str) -> Option<String> {
        self.rt.block_on(orch.image_id(tag)).unwrap()
    }
}

/// Sent, with its tag, id and size, and there by the same id.
/// Returns the tag and id sent, and the seconds it took.
fn a_first_push_sends_it(w: &World) -> (String, String, f64) {
    let t = Instant::now();
    let o = w.push(&["tiny"]);
    let first_s = t.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("sent to srv1"))
        .unwrap_or_else(|| panic!("no line says what was sent: {out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (tag, id) = (words[1], words[2]);
    assert!(tag.starts_with("benchctl/tiny:"), "{line}");
    assert!(id.starts_with("sha256:") && id.len() == 71, "{line}");
    assert!(
        line.contains(" MiB in ") && line.ends_with("the same id there"),
        "{line}"
    );
    assert_eq!(w.id_of(&w.local, tag).as_deref(), Some(id));
    assert_eq!(
        w.id_of(&w.remote, tag).as_deref(),
        Some(id),
        "the id on arrival"
    );
    assert!(
        err.contains("warning: host srv1"),
        "plain TCP is warned of: {err}"
    );
    (tag.to_string(), id.to_string(), first_s)
}

/// Once more: already there, nothing sent.
/// Returns the seconds it took.
fn a_second_push_sends_nothing(w: &World, tag: &str, id: &str) -> f64 {
    let t = Instant::now();
    let o = w.push(&["tiny"]);
    let second_s = t.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert_eq!(
        out.trim(),
        format!("tiny: {tag} {id} already there on srv1"),
        "{err}"
    );
    second_s
}

/// A folder changed without changing the image (a file its Dockerfile does not use: the
/// build is all cache, the id the same): a new tag, which that engine is only given.
fn a_changed_folder_is_only_retagged(w: &World, tag: &str, id: &str) {
    std::fs::write(
        w.kinds.join("tiny/README"),
        "The image's folder changes; the image does not.\n",
    )
    .unwrap();
    let o = w.push(&["tiny"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = out.lines().last().unwrap_or_default();
    let retagged = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert_ne!(retagged, tag, "{out}");
    assert!(
        line.ends_with(&format!("{id} already there on srv1")),
        "{out}"
    );
    assert_eq!(w.id_of(&w.remote, &retagged).as_deref(), Some(id));
}

/// A kind that does not build here is named, and nothing else is said to fail.
fn a_broken_kind_is_named(w: &World) {
    let o = w.push(&["broken", "tiny"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("broken: FAILED: "), "{out}");
    assert!(out.contains("tiny: "), "{out}");
    assert!(
        err.trim_end().ends_with("could not send to srv1: broken"),
        "{err}"
    );
}

/// A run: `other` is built here and sent by the run, `tiny` found there as pushed; both
/// are measured on srv1.
fn a_run_ships_what_it_needs(w: &World, id: &str) {
    let h = &w.hosts.hosts()[0];
    let record = w.dir.path().join("ship.json");
    let o = benchctl(
        &[
            "run",
            w.scenario_arg(),
            "--docker-dir",
            w.kinds_arg(),
            "-o",
            record.to_str().unwrap(),
        ],
        Duration::from_secs(300),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains(&format!("tiny: image {id} already there on srv1")),
        "{err}"
    );
    let other_line = err
        .lines()
        .find(|l| l.starts_with("other: image sha256:"))
        .unwrap_or_else(|| panic!("the run says nothing of other's image: {err}"));
    assert!(other_line.contains("sent to srv1"), "{other_line}");
    assert!(
        err.contains(&format!("tiny: on srv1 at {}:", h.address)),
        "{err}"
    );
    let rec: report::RunRecord =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(rec.loads.len(), 2);
    for l in &rec.loads {
        assert_eq!((l.load.complete, l.load.failed), (50, 0), "{}", l.server);
    }
    for srv in &rec.servers {
        let (tag, id) = (&srv.image_tag, srv.image_id.as_deref());
        assert_eq!(
            w.id_of(&w.remote, tag).as_deref(),
            id,
            "{} on srv1",
            srv.name
        );
        assert_eq!(w.id_of(&w.local, tag).as_deref(), id, "{} here", srv.name);
    }
}
