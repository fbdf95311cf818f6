//! Images a set's engines start with ([`crate::TestHosts::up_with_images`]): a data root made
//! once per machine by loading those images of this machine's engine into an engine of its
//! own, then copied into each new host before its dockerd starts.
//!
//! Why: a fresh engine has no image, and the tests that need one as a mere starting point (the
//! base of a server's kind, an image a run is to find there) shipped it to every host of every
//! set: `docker save` here, then `docker load` there, whose unpacking took 5 to 10 s a host.
//! A copy of the unpacked data root takes a fraction of a second: its layers' files are hard
//! links (an engine never writes into a layer it has unpacked; a container writes into a layer
//! of its own), everything else is copied (the engine's databases are written in place).
//!
//! A seed is keyed by the engine's version and each image's tag and id here: a tag that now
//! names another image, or another dockerd, makes a new seed. At most [`KEEP`] seeds stay on
//! the machine, the least recently used removed first.

use crate::cmd::{output, run};
use crate::layout::Layout;
use crate::teardown::{stop_all, unmount_under};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Where seeds live: on the filesystem of the hosts' data roots (hard links cannot cross
/// filesystems), but not under `DATA_ROOT`, which every new set empties.
pub(crate) const SEED_ROOT: &str = "/var/lib/benchctl-testhosts-seeds";
/// How many seeds are kept (each is the size of its images).
const KEEP: usize = 4;
/// The file in a finished seed that says what it holds; its modification time is its last use.
const KEY_FILE: &str = "seed-key";
/// How long loading the images into the seed's engine may take.
const LOAD_DEADLINE: Duration = Duration::from_secs(300);

/// The seed holding `images` (tags of this machine's engine), made first if there is none.
/// Made with the set's lock held, by an engine in host 0's namespace (so a test killed
/// meanwhile leaves nothing running that the next set would not take apart).
pub(crate) fn ready(images: &[&str], layout: &Layout) -> Result<PathBuf, String> {
    let key = key(images)?;
    let dir = Path::new(SEED_ROOT).join(format!("{:016x}", {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        h.finish()
    }));
    let finished = std::fs::read_to_string(dir.join(KEY_FILE)).is_ok_and(|k| k == key);
    if !finished {
        make(images, &key, &dir, layout)?;
    }
    // Its last use, for the eviction below.
    File::options()
        .append(true)
        .open(dir.join(KEY_FILE))
        .and_then(|f| f.set_modified(SystemTime::now()))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    evict(&dir);
    Ok(dir)
}

/// The engine's version and each image's tag and id here, one a line, sorted.
fn key(images: &[&str]) -> Result<String, String> {
    let version = output(&["dockerd", "--version"]);
    let mut lines = vec![format!("dockerd {}", version.trim())];
    for image in images {
        lines.push(format!("{image} {}", local_id(image)?));
    }
    lines[1..].sort();
    Ok(lines.join("\n") + "\n")
}

/// The id of `image` on this machine's engine.
fn local_id(image: &str) -> Result<String, String> {
    let id = output(&["docker", "image", "inspect", "--format", "{{.Id}}", image]);
    let id = id.trim();
    if id.starts_with("sha256:") {
        Ok(id.to_string())
    } else {
        Err(format!(
            "no image {image} on this machine's engine to seed the hosts with"
        ))
    }
}

/// Loads `images` into an engine of its own whose data root becomes `dir`.
fn make(images: &[&str], key: &str, dir: &Path, layout: &Layout) -> Result<(), String> {
    std::fs::create_dir_all(SEED_ROOT).map_err(|e| format!("{SEED_ROOT}: {e}"))?;
    let part = dir.with_extension("part");
    remove(dir);
    remove(&part);
    let run_dir = layout.run_dir().join("seed");
    std::fs::create_dir_all(&run_dir).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    let p = |name: &str| run_dir.join(name).display().to_string();
    std::fs::write(run_dir.join("daemon.json"), "{}\n").map_err(|e| e.to_string())?;
    let log = File::create(run_dir.join("dockerd.log")).map_err(|e| e.to_string())?;
    let mut dockerd = Command::new("nsenter")
        .arg(format!("--net=/var/run/netns/{}", layout.netns(0)))
        .arg("dockerd")
        .arg(format!("--config-file={}", p("daemon.json")))
        .arg(format!("--data-root={}", part.display()))
        .arg(format!("--exec-root={}", p("exec")))
        .arg(format!("--pidfile={}", p("dockerd.pid")))
        .arg(format!("--host=unix://{}", p("docker.sock")))
        .args(["--iptables=false", "--ip-masq=false", "--bridge=none"])
        .args(["--log-level=warn"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting the seed's dockerd: {e}"))?;
    let sock = run_dir.join("docker.sock");
    let loaded = wait_ping(&sock, &mut dockerd).and_then(|()| load(images, &sock, key));
    stop_all(std::slice::from_mut(&mut dockerd));
    if let Err(e) = loaded {
        remove(&part);
        return Err(format!(
            "{e}; the seed's dockerd log:\n{}",
            std::fs::read_to_string(run_dir.join("dockerd.log")).unwrap_or_default()
        ));
    }
    // Written last and moved into place whole: a seed without its key is never used.
    std::fs::write(part.join(KEY_FILE), key).map_err(|e| e.to_string())?;
    std::fs::rename(&part, dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn wait_ping(sock: &Path, dockerd: &mut std::process::Child) -> Result<(), String> {
    let until = Instant::now() + crate::READY_DEADLINE;
    while !crate::ping(sock) {
        if let Ok(Some(status)) = dockerd.try_wait() {
            return Err(format!("the seed's dockerd exited ({status})"));
        }
        if Instant::now() > until {
            return Err("the seed's dockerd did not answer".to_string());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// `docker save` here into `docker load` there, then each tag checked to name the id the key
/// says (a tag moved meanwhile would make a seed that lies about itself).
fn load(images: &[&str], sock: &Path, key: &str) -> Result<(), String> {
    let host = format!("unix://{}", sock.display());
    let mut save = Command::new("docker")
        .arg("save")
        .args(images)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("docker save: {e}"))?;
    let into = save.stdout.take().ok_or("docker save: no stdout")?;
    let mut load = Command::new("docker")
        .args(["-H", &host, "load", "-q"])
        .stdin(into)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("docker load: {e}"))?;
    let until = Instant::now() + LOAD_DEADLINE;
    let finished = |child: &mut std::process::Child, what: &str| loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut why = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut why);
                }
                return Err(format!("{what} failed ({status}): {}", why.trim()));
            }
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} did not end within {LOAD_DEADLINE:?}"));
            }
        }
    };
    let saved = finished(&mut save, "docker save");
    let loaded = finished(&mut load, "docker load");
    saved.and(loaded)?;
    for line in key.lines().skip(1) {
        let (tag, id) = line.split_once(' ').unwrap_or_default();
        let there = output(&[
            "docker", "-H", &host, "image", "inspect", "--format", "{{.Id}}", tag,
        ]);
        if there.trim() != id {
            return Err(format!(
                "{tag} arrived as {:?}, not {id}: it changed here meanwhile",
                there.trim()
            ));
        }
    }
    Ok(())
}

/// Fills host data root `data` (not yet in use) from `seed`: the layers by hard link, the rest
/// copied.
pub(crate) fn plant(seed: &Path, data: &Path) -> Result<(), String> {
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let to = data.display().to_string();
    for e in std::fs::read_dir(seed).map_err(|e| format!("{}: {e}", seed.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        if e.file_name() == KEY_FILE {
            continue;
        }
        let from = e.path().display().to_string();
        if e.file_name() == "overlay2" {
            // Linked where it can be; copied where the two are on different filesystems.
            if run(&["cp", "-a", "--link", &from, &to]).is_ok() {
                continue;
            }
            let _ = std::fs::remove_dir_all(data.join("overlay2"));
        }
        run(&["cp", "-a", &from, &to])?;
    }
    Ok(())
}

/// Removes the seeds beyond [`KEEP`], least recently used first, and any a killed process
/// left half made (called with the lock held, so none is being made). `keep` stays.
fn evict(keep: &Path) {
    let Ok(entries) = std::fs::read_dir(SEED_ROOT) else {
        return;
    };
    let mut seeds: Vec<(SystemTime, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        match std::fs::metadata(path.join(KEY_FILE)).and_then(|m| m.modified()) {
            Ok(used) if path != keep => seeds.push((used, path)),
            Ok(_) => {}
            Err(_) => remove(&path),
        }
    }
    seeds.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (_, path) in seeds.into_iter().skip(KEEP - 1) {
        remove(&path);
    }
}

fn remove(dir: &Path) {
    if dir.exists() {
        unmount_under(dir);
        let _ = std::fs::remove_dir_all(dir);
    }
}
