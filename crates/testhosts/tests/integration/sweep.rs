//! A set of hosts whose process was killed (no `Drop` ran) is taken apart by the next set:
//! its namespaces, its dockerd and everything else it made, so a killed test leaves nothing
//! for long.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;
use testhosts::TestHosts;

const CHILD: &str = "TESTHOSTS_SWEEP_CHILD";
/// This test's name as the test binary knows it (its module, then the function): the child is
/// this same binary running only this test.
const NAME: &str = "sweep::a_set_left_by_a_killed_process_is_removed_by_the_next";

fn netns_list() -> String {
    String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned()
}

#[test]
fn a_set_left_by_a_killed_process_is_removed_by_the_next() {
    if std::env::var_os(CHILD).is_some() {
        // The child: make a set, say so, and wait to be killed (at most two minutes).
        let hosts = TestHosts::up(1).unwrap();
        println!("UP {}", hosts.hosts()[0].netns);
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    if !testhosts::available_or_skip() {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            // libtest's "test NAME ... " may come first on the line.
            if let Some((_, ns)) = line.split_once("UP ") {
                let _ = tx.send(ns.trim().to_string());
            }
        }
    });
    let left = rx.recv_timeout(Duration::from_secs(150));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = left.expect("the child made its hosts");
    assert!(netns_list().contains(&left), "{left} was never made");

    let hosts = TestHosts::up(1).unwrap();
    assert!(
        !netns_list().contains(&left),
        "{left} is still there: {}",
        netns_list()
    );
    drop(hosts);
    let links = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-br", "link"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    let rules = String::from_utf8_lossy(
        &Command::new("iptables")
            .args(["-S", "FORWARD"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    let id = &left[2..6];
    assert!(!links.contains(&format!("bc{id}")), "{links}");
    assert!(!rules.contains(&format!("bc{id}")), "{rules}");
    let dockerds = Command::new("pgrep")
        .args(["-f", &format!("benchctl-testhosts/{id}")])
        .output()
        .unwrap();
    assert!(
        dockerds.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&dockerds.stdout)
    );
}
