//! Engines reached over SSH (`ssh://[USER@]HOST[:PORT][/SOCKET]`): the system's `ssh` forwards
//! a private socket of this machine to the engine's socket on the other (`ssh -L`), and the
//! client speaks to that socket as to a local engine. Authentication, host keys and jump hosts
//! are ssh's own: the user's `~/.ssh/config` and agent, or a config file given for the host
//! (`-F`). No password is ever asked for (`BatchMode`): a host that needs one fails with ssh's
//! own message.
//!
//! One tunnel serves every connection to its engine for the life of the process; a tunnel
//! whose ssh has exited (a lost network) is started again on the next connection. The ssh
//! processes are started by one thread that lives as long as the process and are told to end
//! with it (`PR_SET_PDEATHSIG`), so neither a crash nor a kill leaves them behind; their
//! sockets live in a folder of their own, mode 0700, removed by [`close_all`] or, when a
//! process could not, by the next process that opens a tunnel.

use crate::error::{OrchestratorError, Result};
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The engine's socket on the other machine when the URL names none.
pub const DEFAULT_REMOTE_SOCKET: &str = "/var/run/docker.sock";
/// Prefix of the folders that hold the forwarded sockets, followed by the owning process id.
const DIR_PREFIX: &str = "benchctl-ssh-";

/// An engine on another machine, reached by ssh.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SshTarget {
    /// `HOST` or `USER@HOST`, as ssh takes it.
    pub destination: String,
    /// ssh's `-p`; `None`: ssh's own choice (its config, else 22).
    pub port: Option<u16>,
    /// The engine's socket on that machine.
    pub socket: PathBuf,
    /// An ssh config file (`-F`) used instead of the user's.
    pub config: Option<PathBuf>,
}

impl SshTarget {
    /// As a URL, for messages: `ssh://bench@srv1:2222/var/run/docker.sock`.
    pub fn url(&self) -> String {
        let (user, host) = match self.destination.rsplit_once('@') {
            Some((u, h)) => (format!("{u}@"), h),
            None => (String::new(), self.destination.as_str()),
        };
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("ssh://{user}{host}{port}{}", self.socket.display())
    }

    /// The machine's name or address, without the user.
    pub fn host(&self) -> &str {
        self.destination
            .rsplit_once('@')
            .map_or(self.destination.as_str(), |(_, h)| h)
    }
}

struct Tunnel {
    child: Child,
    dir: PathBuf,
    local: PathBuf,
}

impl Tunnel {
    fn close(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tunnels() -> &'static Mutex<HashMap<SshTarget, Tunnel>> {
    static TUNNELS: OnceLock<Mutex<HashMap<SshTarget, Tunnel>>> = OnceLock::new();
    TUNNELS.get_or_init(|| Mutex::new(HashMap::new()))
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Starts `cmd` from the thread that lives as long as the process: a child told to end when
/// its parent does is told so about the thread that started it, and the threads that ask for
/// tunnels (a runtime's, a cleanup's) come and go.
fn spawn_for_life(mut cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("benchctl-ssh".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread to start ssh from");
        Mutex::new(tx)
    });
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the closure only makes the prctl and getppid system calls
    // (rustix's wrappers, which take no locks), both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            // The parent may have died before the request took effect (compared with its pid,
            // not with 1: benchctl may itself be a container's first process).
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("benchctl exited"));
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((cmd, reply))
        .map_err(|_| std::io::Error::other("the ssh starter thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the ssh starter thread is gone"))?
}

/// The local socket that reaches `target`'s engine, starting its tunnel when it has none (or
/// its ssh has exited), and waiting at most `bound` for it. Blocks: call it off the runtime.
pub fn local_socket(target: &SshTarget, bound: Duration) -> Result<PathBuf> {
    let mut map = tunnels().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = map.get_mut(target) {
        if matches!(t.child.try_wait(), Ok(None)) && t.local.exists() {
            return Ok(t.local.clone());
        }
        if let Some(t) = map.remove(target) {
            t.close();
        }
    }
    sweep_stale();
    let tunnel = open(target, bound)?;
    let local = tunnel.local.clone();
    map.insert(target.clone(), tunnel);
    Ok(local)
}

/// Ends every tunnel of this process and removes its sockets.
pub fn close_all() {
    let mut map = tunnels().lock().unwrap_or_else(|p| p.into_inner());
    for (_, t) in map.drain() {
        t.close();
    }
}

fn open(target: &SshTarget, bound: Duration) -> Result<Tunnel> {
    let fail = |why: String| OrchestratorError::Ssh {
        url: target.url(),
        why,
    };
    if let Some(config) = &target.config {
        if !config.is_file() {
            return Err(fail(format!("no ssh config file {}", config.display())));
        }
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| fail(format!("making a folder for the socket: {e}")))?
        .keep();
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    let local = dir.join("docker.sock");
    let log = dir.join("ssh.log");
    let stderr =
        std::fs::File::create(&log).map_err(|e| fail(format!("{}: {e}", log.display())))?;
    let mut cmd = Command::new("ssh");
    cmd.args([
        "-nNT",
        "-o",
        "BatchMode=yes",
        "-o",
        "ExitOnForwardFailure=yes",
    ])
    .args(["-o", "StreamLocalBindUnlink=yes", "-o", "ConnectTimeout=10"])
    .args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
    if let Some(config) = &target.config {
        cmd.arg("-F").arg(config);
    }
    if let Some(port) = target.port {
        cmd.arg("-p").arg(port.to_string());
    }
    cmd.arg("-L")
        .arg(format!("{}:{}", local.display(), target.socket.display()))
        .arg("--")
        .arg(&target.destination)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let child = spawn_for_life(cmd).map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        fail(if e.kind() == std::io::ErrorKind::NotFound {
            "no `ssh` on this machine (install the OpenSSH client)".into()
        } else {
            format!("starting ssh: {e}")
        })
    })?;
    let mut tunnel = Tunnel { child, dir, local };
    let deadline = Instant::now() + bound;
    loop {
        match tunnel.child.try_wait() {
            Ok(Some(status)) => {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                let said = last_lines(&said);
                tunnel.close();
                return Err(fail(if said.is_empty() {
                    format!("ssh exited ({status}) before the socket was forwarded")
                } else {
                    format!("ssh exited ({status}): {said}")
                }));
            }
            Ok(None) if tunnel.local.exists() => return Ok(tunnel),
            Ok(None) if Instant::now() >= deadline => {
                tunnel.close();
                return Err(fail(format!(
                    "the forwarded socket did not appear within {}s",
                    bound.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                tunnel.close();
                return Err(fail(format!("waiting for ssh: {e}")));
            }
        }
    }
}

/// What ssh said last, on one line, without its warnings about known hosts being added.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// Removes socket folders whose process is gone.
fn sweep_stale() {
    let tmp = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_user_host_port_and_socket() {
        let t = SshTarget {
            destination: "bench@srv1".into(),
            port: Some(2222),
            socket: PathBuf::from(DEFAULT_REMOTE_SOCKET),
            config: None,
        };
        assert_eq!(t.url(), "ssh://bench@srv1:2222/var/run/docker.sock");
        assert_eq!(t.host(), "srv1");
        let t = SshTarget {
            destination: "fd00::5".into(),
            port: None,
            socket: PathBuf::from("/run/user/1000/docker.sock"),
            config: None,
        };
        assert_eq!(t.url(), "ssh://[fd00::5]/run/user/1000/docker.sock");
    }

    #[test]
    fn a_host_ssh_cannot_reach_fails_with_what_ssh_said() {
        // A config file that sends ssh nowhere: a proxy command that fails at once, so nothing
        // leaves this machine.
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(&config, "Host *\n  ProxyCommand false\n").unwrap();
        let t = SshTarget {
            destination: "nobody@unreachable.invalid".into(),
            port: None,
            socket: PathBuf::from(DEFAULT_REMOTE_SOCKET),
            config: Some(config),
        };
        let e = local_socket(&t, Duration::from_secs(10)).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("ssh://nobody@unreachable.invalid"), "{text}");
        assert!(text.contains("ssh exited"), "{text}");
        let missing = SshTarget {
            config: Some(dir.path().join("nope")),
            ..t
        };
        let text = local_socket(&missing, Duration::from_secs(10))
            .unwrap_err()
            .to_string();
        assert!(text.contains("no ssh config file"), "{text}");
    }
}
