//! Taking a set apart: its engines stopped, what its namespaces run killed, its interfaces,
//! firewall rule and folders removed; also a set left behind by a killed process.

use crate::cmd::{output, run};
use crate::layout::{Layout, DATA_ROOT, RUN_ROOT};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// SIGTERM to each, then SIGKILL to any that has not stopped its containers and exited within
/// 20 s. All are asked at once: each dockerd takes about a second to shut down, and one after
/// another that second was paid once per host.
pub(crate) fn stop_all(children: &mut [Child]) {
    for child in children.iter_mut() {
        if let Ok(Some(_)) = child.try_wait() {
            continue;
        }
        // Our own child's pid, which it still is (not yet waited for).
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    let until = Instant::now() + Duration::from_secs(20);
    for child in children.iter_mut() {
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Kills every process left in a namespace (containerd, shims, host-network containers).
pub(crate) fn kill_namespace(ns: &str) {
    for _ in 0..3 {
        let pids = output(&["ip", "netns", "pids", ns]);
        let pids: Vec<rustix::process::Pid> = pids
            .split_whitespace()
            .filter_map(|p| rustix::process::Pid::from_raw(p.parse().ok()?))
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Removes everything a layout names; each step is tried whatever the others did.
pub(crate) fn teardown(l: &Layout) {
    for i in 0..l.hosts {
        // The dockerd of a set whose test was killed lives in its namespace too: found by
        // the namespace, never by a pid file whose pid may belong to someone else by now.
        kill_namespace(&l.netns(i));
        let _ = run(&["ip", "netns", "del", &l.netns(i)]);
        let _ = run(&["ip", "link", "del", &l.veth_outside(i)]);
    }
    let mut rule = vec!["iptables".to_string(), "-D".to_string()];
    rule.extend(l.rule());
    // Inserted once; deleted until none is left, in case a set was interrupted mid-way.
    for _ in 0..4 {
        if run(&rule.iter().map(String::as_str).collect::<Vec<_>>()).is_err() {
            break;
        }
    }
    let _ = run(&["ip", "link", "del", &l.bridge]);
    for dir in [l.data_dir(), l.run_dir()] {
        unmount_under(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Lazily unmounts every mount point under `dir`, deepest first (overlay and shm mounts a
/// killed dockerd left).
pub(crate) fn unmount_under(dir: &Path) {
    let mut text = String::new();
    if File::open("/proc/self/mountinfo")
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_err()
    {
        return;
    }
    let prefix = dir.display().to_string();
    let mut points: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = run(&["umount", "-l", p]);
    }
}

/// Takes apart every set left on the machine (call with the lock held: then none is live).
pub(crate) fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(RUN_ROOT) else {
        return;
    };
    for e in entries.flatten() {
        let layout = std::fs::read_to_string(e.path().join("layout"))
            .ok()
            .and_then(|t| Layout::from_text(&t));
        match layout {
            Some(l) => teardown(&l),
            None => {
                unmount_under(&e.path());
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    // Data folders whose run folder was already gone.
    if let Ok(entries) = std::fs::read_dir(DATA_ROOT) {
        for e in entries.flatten() {
            unmount_under(&e.path());
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
