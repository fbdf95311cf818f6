//! `benchctl hosts check` and `benchctl gc --host` through the built binary, against engines
//! the test makes in network namespaces ([`testhosts`]): each engine's line has its version,
//! API version, CPUs, memory and clock offset; an engine that does not answer fails the check
//! (exit 1) with its name and URL while the others are still reported; an engine over ssh (an
//! sshd the test starts in a namespace) is checked alike; plain TCP is repeated as a warning; a mistake in `[[host]]` is a positioned error (exit 2) before anything connects.

use std::path::Path;
use std::process::{Command, Output};
use testhosts::TestHosts;

fn hosts_or_skip(n: usize) -> Option<TestHosts> {
    if !testhosts::available_or_skip() {
        return None;
    }
    Some(TestHosts::up(n).unwrap_or_else(|e| panic!("making {n} test hosts: {e}")))
}

fn benchctl(args: &[&str]) -> Output {
    // Bounded: each engine's check gives up after 10 s, all at once.
    Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(args)
        .output()
        .expect("run benchctl")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A scenario whose one server runs on `srv1`, with `hosts` (TOML) added.
fn scenario(dir: &Path, hosts: &str) -> String {
    let path = dir.join("hosts.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"hosts\"\n[load]\nrequests = 10\n{hosts}\n\
             [[server]]\nname = \"web\"\nimage = \"web:1\"\nhost = \"srv1\"\n\
             [[document]]\nname = \"hello\"\npath = \"/\"\ngenerate = \"hello\"\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn hosts_check_reports_each_engine_and_fails_naming_the_one_that_does_not_answer() {
    let Some(mut hosts) = hosts_or_skip(2) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ssh = hosts.start_sshd(1).unwrap_or_else(|e| panic!("{e}"));
    let [h0, h1] = [&hosts.hosts()[0], &hosts.hosts()[1]];
    let good = format!(
        "[[host]]\nname = \"srv1\"\nurl = \"{}\"\ninsecure = true\n\
         [[host]]\nname = \"cli1\"\nurl = \"{}\"\ninsecure = true\n",
        h0.tcp_url(),
        h1.tcp_url()
    );
    let file = scenario(dir.path(), &good);
    let o = benchctl(&["hosts", "check", &file]);
    let (out, err) = text(&o);
    eprintln!("{out}{err}");
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    for (name, h) in [("srv1", h0), ("cli1", h1)] {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {out}"));
        assert!(line.contains(&h.tcp_url()), "{line}");
        for part in ["engine ", "API 1.", " CPUs", " GiB", "clock "] {
            assert!(line.contains(part), "{part:?} missing: {line}");
        }
        assert!(
            err.contains(&format!("warning: host {name} ({})", h.tcp_url())),
            "{err}"
        );
    }
    // Only the servers' engines: no server runs on this machine's, so it is not checked.
    assert!(!out.contains("local"), "{out}");

    // The same engine over ssh: reported alike, with no warning, and no ssh left running.
    let over_ssh = format!(
        "{good}[[host]]\nname = \"tunnel\"\nurl = \"{}\"\nssh_config = \"{}\"\n",
        ssh.url,
        ssh.config.display()
    );
    let o = benchctl(&["hosts", "check", &scenario(dir.path(), &over_ssh)]);
    let (out, err) = text(&o);
    eprintln!("{out}{err}");
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = out.lines().find(|l| l.starts_with("tunnel")).expect(&out);
    assert!(
        line.contains(&ssh.url) && line.contains("engine "),
        "{line}"
    );
    assert!(!err.contains("host tunnel"), "{err}");
    let tunnels = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("benchctl-ssh-") && c.contains(&h1.address.to_string())
            })
        })
        .count();
    assert_eq!(tunnels, 0, "no ssh tunnel outlives benchctl");

    // A third host at an address nobody has.
    let silent = format!("tcp://{}:2375", hosts.silent_address());
    let file = scenario(
        dir.path(),
        &format!("{good}[[host]]\nname = \"gone\"\nurl = \"{silent}\"\ninsecure = true\n"),
    );
    let t = std::time::Instant::now();
    let o = benchctl(&["hosts", "check", &file]);
    let (out, err) = text(&o);
    eprintln!("after {:?}:\n{out}{err}", t.elapsed());
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let gone = out.lines().find(|l| l.starts_with("gone")).expect(&out);
    assert!(gone.contains("FAILED") && gone.contains(&silent), "{gone}");
    assert!(out
        .lines()
        .any(|l| l.starts_with("srv1") && l.contains("engine ")));
    assert!(
        err.contains("1 of 3 engines could not be checked: gone"),
        "{err}"
    );

    // `gc --host` sweeps that engine only; a name the scenario lacks is bad input.
    let o = benchctl(&["gc", "--scenario", &file, "--host", "srv1"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("srv1: removed 0 container(s)"), "{out}");
    assert!(!out.contains("local:"), "{out}");
    let o = benchctl(&["gc", "--scenario", &file, "--host", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    let o = benchctl(&["gc", "--scenario", &file, "--all-hosts"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "gone cannot be swept: {out}{err}");
    assert!(out.contains("cli1: removed 0 container(s)"), "{out}");
    assert!(err.contains("could not sweep gone"), "{err}");
}

#[test]
fn a_host_mistake_is_a_positioned_error_before_anything_connects() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "[[host]]\nname = \"srv1\"\nurl = \"tcp://10.213.250.1:2375\"\n",
    );
    let o = benchctl(&["hosts", "check", &file]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains(&format!(
            "{file}:6:7: error: `tcp://10.213.250.1:2375` is plain, unauthenticated TCP"
        )),
        "{err}"
    );
}
