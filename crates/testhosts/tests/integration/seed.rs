//! Hosts that start with images of this machine's engine ([`TestHosts::up_with_images`]): each
//! engine has them by the ids they have here, a second set finds them again from the same
//! seed, and what one host does to its copy leaves the next set's untouched.

use std::process::{Command, Stdio};
use testhosts::TestHosts;

/// A tiny image made here without any registry: one file, imported once and found by its tag
/// afterwards (an import makes a new id each time, which would make a new seed each run).
const PROBE: &str = "benchctl-testhosts/seed-probe:1";

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("docker {args:?}: {e}"));
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn id_at(host: Option<&testhosts::TestHost>) -> String {
    let mut args = Vec::new();
    let h;
    if let Some(host) = host {
        h = format!("unix://{}", host.socket().display());
        args.extend(["-H", h.as_str()]);
    }
    args.extend(["image", "inspect", "--format", "{{.Id}}", PROBE]);
    docker(&args)
}

fn probe_here() {
    let present = Command::new("docker")
        .args(["image", "inspect", PROBE])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return;
    }
    let dir = std::env::temp_dir().join(format!("seed-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("probe"), "seeded\n").unwrap();
    let tar = dir.join("probe.tar");
    let made = Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(&dir)
        .arg("probe")
        .status()
        .unwrap();
    assert!(made.success());
    docker(&["import", tar.to_str().unwrap(), PROBE]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hosts_start_with_the_images_they_are_given_by_the_ids_they_have_here() {
    if !testhosts::available_or_skip() || !testsupport::docker_or_skip() {
        return;
    }
    probe_here();
    let here = id_at(None);
    let hosts = TestHosts::up_with_images(2, &[PROBE]).unwrap_or_else(|e| panic!("{e}"));
    for h in hosts.hosts() {
        assert_eq!(id_at(Some(h)), here, "{} has it by the same id", h.name);
    }
    // One host removes its copy: the seed, and so the next set, still has it.
    let h0 = format!("unix://{}", hosts.hosts()[0].socket().display());
    docker(&["-H", &h0, "image", "rm", PROBE]);
    drop(hosts);
    let again = TestHosts::up_with_images(1, &[PROBE]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(id_at(Some(&again.hosts()[0])), here);
    drop(again);
    let seeds = std::fs::read_dir("/var/lib/benchctl-testhosts-seeds")
        .unwrap()
        .count();
    assert!((1..=4).contains(&seeds), "{seeds} seeds kept");
}
