//! Extra "hosts" on this one machine, for the tests of benchctl's multi-host features: each a
//! network namespace joined to the machine by a veth pair on a bridge, running its own
//! `dockerd`. To benchctl such a host is a Docker engine at `tcp://ADDRESS:2375` whose
//! host-network containers answer at `ADDRESS`, exactly as another machine on the LAN would be.
//!
//! Why each piece is as it is (all of it measured on the development machines, see
//! ENVIRONMENT.md):
//! - `dockerd` is started with `nsenter --net=/var/run/netns/NAME`, not `ip netns exec`, which
//!   remounts /sys and leaves dockerd without its devices cgroup;
//! - every engine has its own data root, exec root, pid file and sockets, and runs with
//!   `--iptables=false --bridge=none`: it must not touch the machine's firewall or make a
//!   docker0 of its own (the machine's main engine is in use by others meanwhile);
//! - the main engine sets FORWARD's policy to DROP and bridged frames pass through iptables, so
//!   one rule, `FORWARD -i BRIDGE -o BRIDGE -j ACCEPT`, lets the namespaces reach each other; it
//!   names only our own bridge and is removed with it;
//! - names carry a short id unique to the fixture, so nothing collides with another test
//!   process, and a lock file lets only one fixture set exist at a time (a dockerd is heavy on
//!   a 2-core machine, and a set left by a killed test is recognised and removed by the next);
//! - everything is removed when [`TestHosts`] drops: also when the test panics. What stays is
//!   the seeds of [`TestHosts::up_with_images`] (images to start engines with, at most four,
//!   in their own folder), which later sets reuse.
//!
//! Every address a test sends requests to is one of the namespaces made here.

mod certs;
mod cmd;
mod layout;
mod seed;
mod teardown;

use cmd::{output, run, which};
use layout::{Layout, DATA_ROOT, RUN_ROOT};
use teardown::{kill_namespace, stop_all, sweep_stale, teardown};

use std::fs::File;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Held (flock) for the whole life of a fixture set.
const LOCK_FILE: &str = "/run/benchctl-testhosts.lock";
/// The port each engine's API listens on, plain TCP, on its namespace's address only.
pub const ENGINE_PORT: u16 = 2375;
/// The port instead when the engines ask for TLS client certificates ([`TestHosts::up_tls`]).
pub const ENGINE_TLS_PORT: u16 = 2376;
/// How long a fresh dockerd may take to answer.
const READY_DEADLINE: Duration = Duration::from_secs(90);

/// One extra host: a namespace with an address and an engine.
#[derive(Debug)]
pub struct TestHost {
    /// `h0`, `h1`, ...
    pub name: String,
    /// The network namespace (`/var/run/netns/<netns>`).
    pub netns: String,
    /// The namespace's address: the engine listens here, and host-network containers too.
    pub address: Ipv4Addr,
    /// Its exec root, sockets and log.
    pub run_dir: PathBuf,
    /// How long its dockerd took from start to answering `/_ping`.
    pub ready_after: Duration,
    /// The port its API listens on.
    pub port: u16,
    /// With TLS: the client's folder (`ca.pem`, `cert.pem`, `key.pem`), as a scenario's
    /// `tls_dir` names it.
    pub tls_dir: Option<PathBuf>,
}

impl TestHost {
    /// The engine's API over TCP: what a scenario's `[[host]] url` names.
    pub fn tcp_url(&self) -> String {
        format!("tcp://{}:{}", self.address, self.port)
    }

    /// The engine's local socket, for set-up done without the network.
    pub fn socket(&self) -> PathBuf {
        self.run_dir.join("docker.sock")
    }

    /// The dockerd's own log.
    pub fn log(&self) -> PathBuf {
        self.run_dir.join("dockerd.log")
    }
}

/// How to reach a host's engine over ssh ([`TestHosts::start_sshd`]).
#[derive(Debug, Clone)]
pub struct SshAccess {
    /// `ssh://root@ADDRESS/PATH/OF/ITS/ENGINE/SOCKET`: what a scenario's `[[host]] url` names.
    pub url: String,
    /// The ssh config file that holds the key and the host's key (a scenario's `ssh_config`).
    pub config: PathBuf,
}

/// A set of extra hosts, removed on drop.
#[derive(Debug)]
pub struct TestHosts {
    layout: Layout,
    hosts: Vec<TestHost>,
    dockerds: Vec<Child>,
    /// The engines require TLS client certificates signed by the set's own CA.
    tls: bool,
    /// Keeps the lock for as long as the hosts exist.
    _lock: File,
}

/// Why extra hosts cannot be made here, or `None` when they can: the tests skip with this
/// reason outside CI and fail with it in CI.
pub fn unavailable() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("making network namespaces and engines needs root".to_string());
    }
    for tool in ["ip", "nsenter", "iptables", "dockerd"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            || ["/usr/sbin", "/sbin", "/usr/bin"]
                .iter()
                .any(|d| Path::new(d).join(tool).is_file());
        if !found {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

/// Whether the multi-host tests can run here. When extra hosts cannot be made, says why and
/// returns `false` (the test skips), except under CI, where the multi-host tests must run and
/// this panics with the reason.
pub fn available_or_skip() -> bool {
    match unavailable() {
        None => true,
        Some(why) => {
            testsupport::skip_or_fail(format!("no extra hosts for the multi-host tests: {why}"));
            false
        }
    }
}

impl TestHosts {
    /// Makes `n` hosts (1..=8) and waits until each engine answers. Blocks while another set
    /// exists (in this process or another); removes a set whose process is gone first.
    pub fn up(n: usize) -> Result<TestHosts, String> {
        TestHosts::make(n, false, &[])
    }

    /// [`up`](Self::up) with engines that start with `images` (tags of this machine's engine,
    /// by the same ids), as if each had been shipped there: for tests to which those images
    /// are a starting point, not what they show. The images come from a data root made from
    /// them once per machine and reused while they and the engine's version stay the same
    /// (see the `seed` module).
    pub fn up_with_images(n: usize, images: &[&str]) -> Result<TestHosts, String> {
        TestHosts::make(n, false, images)
    }

    /// [`up`](Self::up) with engines that speak only TLS on [`ENGINE_TLS_PORT`] and accept
    /// only clients with a certificate of the set's own CA ([`TestHost::tls_dir`]), as
    /// `dockerd --tlsverify` does.
    pub fn up_tls(n: usize) -> Result<TestHosts, String> {
        TestHosts::make(n, true, &[])
    }

    fn make(n: usize, tls: bool, images: &[&str]) -> Result<TestHosts, String> {
        if !(1..=8).contains(&n) {
            return Err(format!("{n} hosts: make 1 to 8"));
        }
        if let Some(why) = unavailable() {
            return Err(why);
        }
        std::fs::create_dir_all(RUN_ROOT).map_err(|e| format!("{RUN_ROOT}: {e}"))?;
        std::fs::create_dir_all(DATA_ROOT).map_err(|e| format!("{DATA_ROOT}: {e}"))?;
        let lock = testsupport::lock_exclusive(Path::new(LOCK_FILE))
            .map_err(|e| format!("locking {LOCK_FILE}: {e}"))?;
        // With the lock held, any set still on the machine belongs to a process that is gone.
        sweep_stale();

        let id = unique_id();
        let net = free_subnet().ok_or("no free 10.213.N.0/24 subnet for the hosts")?;
        let layout = Layout {
            bridge: format!("bc{id}br"),
            id,
            net,
            hosts: n,
        };
        let mut set = TestHosts {
            layout: layout.clone(),
            hosts: Vec::new(),
            dockerds: Vec::new(),
            tls,
            _lock: lock,
        };
        // From here on, Drop takes apart whatever was made, even half of it.
        std::fs::create_dir_all(layout.run_dir()).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(layout.data_dir()).map_err(|e| e.to_string())?;
        std::fs::write(layout.run_dir().join("layout"), layout.to_text())
            .map_err(|e| e.to_string())?;
        set.make_network()?;
        if tls {
            certs::make_certificates(&layout)?;
        }
        if !images.is_empty() {
            let seed = seed::ready(images, &layout)?;
            for i in 0..n {
                seed::plant(&seed, &layout.data_dir().join(format!("h{i}")))?;
            }
        }
        let started = Instant::now();
        for i in 0..n {
            let child = set.start_dockerd(i)?;
            set.dockerds.push(child);
        }
        for i in 0..n {
            let ready_after = set.wait_ready(i, started)?;
            set.hosts.push(TestHost {
                name: format!("h{i}"),
                netns: layout.netns(i),
                address: layout.address(i),
                run_dir: layout.run_dir().join(format!("h{i}")),
                ready_after,
                port: if tls { ENGINE_TLS_PORT } else { ENGINE_PORT },
                tls_dir: tls.then(|| layout.run_dir().join("client")),
            });
        }
        Ok(set)
    }

    /// The hosts, in order.
    pub fn hosts(&self) -> &[TestHost] {
        &self.hosts
    }

    /// The machine's own address on the hosts' bridge: where a namespace reaches it.
    pub fn gateway(&self) -> Ipv4Addr {
        self.layout.gateway()
    }

    /// An address on the hosts' subnet that no namespace has: a "host" that does not answer
    /// (connections to it time out, as to a machine that is down).
    pub fn silent_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.layout.net, 200)
    }

    fn make_network(&self) -> Result<(), String> {
        let l = &self.layout;
        let br = l.bridge.as_str();
        run(&["ip", "link", "add", br, "type", "bridge"])?;
        run(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", l.gateway()),
            "dev",
            br,
        ])?;
        run(&["ip", "link", "set", br, "up"])?;
        let mut rule = vec!["iptables".to_string(), "-I".to_string()];
        rule.extend(l.rule());
        run(&rule.iter().map(String::as_str).collect::<Vec<_>>())?;
        for i in 0..l.hosts {
            let ns = l.netns(i);
            let (out, inside) = (l.veth_outside(i), l.veth_inside(i));
            run(&["ip", "netns", "add", &ns])?;
            run(&[
                "ip", "link", "add", &out, "type", "veth", "peer", "name", &inside,
            ])?;
            run(&["ip", "link", "set", &out, "master", br, "up"])?;
            run(&["ip", "link", "set", &inside, "netns", &ns])?;
            run(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", l.address(i)),
                "dev",
                &inside,
            ])?;
            run(&["ip", "-n", &ns, "link", "set", &inside, "up"])?;
            run(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// Starts an sshd in host `i`'s namespace on its address, port 22, that lets this
    /// machine's root in with a key made for it (and nobody else: no password), and allows
    /// local forwarding only (forwarding a socket is what `ssh://` engines use; OpenSSH
    /// counts it as local forwarding, so `AllowTcpForwarding no` would refuse it). Returns how
    /// to reach the host's engine over it. The sshd ends with the set.
    pub fn start_sshd(&mut self, i: usize) -> Result<SshAccess, String> {
        let host = self.hosts.get(i).ok_or_else(|| format!("no host {i}"))?;
        let address = host.address;
        let netns = host.netns.clone();
        let engine_socket = host.socket();
        let dir = host.run_dir.join("ssh");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        // The privilege-separation folder a packaged sshd expects; made by its service
        // otherwise.
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let p = |name: &str| dir.join(name).display().to_string();
        for key in ["host_key", "client_key"] {
            let _ = std::fs::remove_file(dir.join(key));
            run(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                key,
                "-f",
                &p(key),
            ])?;
        }
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{name}: {e}"))
        };
        std::fs::write(dir.join("authorized_keys"), read("client_key.pub")?)
            .map_err(|e| e.to_string())?;
        std::fs::write(
            dir.join("known_hosts"),
            format!("{address} {}", read("host_key.pub")?),
        )
        .map_err(|e| e.to_string())?;
        let sshd = which("sshd").ok_or("`sshd` is not installed (openssh-server)")?;
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress {address}:22\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 AllowTcpForwarding local\nAllowStreamLocalForwarding local\nX11Forwarding no\n\
                 PrintMotd no\n",
                p("host_key"),
                p("authorized_keys"),
                p("sshd.pid"),
            ),
        )
        .map_err(|e| e.to_string())?;
        let config = dir.join("ssh_config");
        std::fs::write(
            &config,
            format!(
                "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
                 StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n",
                p("client_key"),
                p("known_hosts"),
            ),
        )
        .map_err(|e| e.to_string())?;
        let log = File::create(dir.join("sshd.log")).map_err(|e| e.to_string())?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{netns}"))
            .arg(sshd)
            .args(["-D", "-e", "-f", &p("sshd_config")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting sshd for {netns}: {e}"))?;
        self.dockerds.push(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect_timeout(
            &std::net::SocketAddr::from((address, 22)),
            Duration::from_millis(200),
        )
        .is_err()
        {
            if Instant::now() >= deadline {
                return Err(format!(
                    "sshd in {netns} did not listen on {address}:22 within 10 s: {}",
                    std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(SshAccess {
            url: format!("ssh://root@{address}{}", engine_socket.display()),
            config,
        })
    }

    fn start_dockerd(&self, i: usize) -> Result<Child, String> {
        let l = &self.layout;
        let dir = l.run_dir().join(format!("h{i}"));
        let data = l.data_dir().join(format!("h{i}"));
        for d in [&dir, &data] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let log = File::create(dir.join("dockerd.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let p = |name: &str| dir.join(name).display().to_string();
        // Its own (empty) configuration: the machine's /etc/docker/daemon.json is the main
        // engine's.
        std::fs::write(dir.join("daemon.json"), "{}\n").map_err(|e| e.to_string())?;
        Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{}", l.netns(i)))
            .arg("dockerd")
            .arg(format!("--config-file={}", p("daemon.json")))
            .arg(format!("--data-root={}", data.display()))
            .arg(format!("--exec-root={}", p("exec")))
            .arg(format!("--pidfile={}", p("dockerd.pid")))
            .arg(format!("--host=unix://{}", p("docker.sock")))
            .args(if self.tls {
                let certs = l.run_dir().join("certs");
                vec![
                    format!("--host=tcp://{}:{ENGINE_TLS_PORT}", l.address(i)),
                    "--tlsverify".to_string(),
                    format!("--tlscacert={}", certs.join("ca.pem").display()),
                    format!(
                        "--tlscert={}",
                        certs.join(format!("h{i}-cert.pem")).display()
                    ),
                    format!("--tlskey={}", certs.join(format!("h{i}-key.pem")).display()),
                ]
            } else {
                // Plain TCP said in so many words: without `--tls=false` dockerd warns that an
                // unauthenticated port is deprecated and sleeps 16 s on purpose before it
                // answers (20.10 and later), which was most of a set's start.
                vec![
                    format!("--host=tcp://{}:{ENGINE_PORT}", l.address(i)),
                    "--tls=false".to_string(),
                ]
            })
            .args(["--iptables=false", "--ip-masq=false", "--bridge=none"])
            .args(["--log-level=warn", "--userland-proxy=false"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("starting dockerd for {}: {e}", l.netns(i)))
    }

    fn wait_ready(&mut self, i: usize, started: Instant) -> Result<Duration, String> {
        let sock = self.layout.run_dir().join(format!("h{i}/docker.sock"));
        loop {
            if ping(&sock) {
                return Ok(started.elapsed());
            }
            if let Ok(Some(status)) = self.dockerds[i].try_wait() {
                return Err(format!(
                    "dockerd of {} exited ({status}) before answering; its log:\n{}",
                    self.layout.netns(i),
                    std::fs::read_to_string(
                        self.layout.run_dir().join(format!("h{i}/dockerd.log"))
                    )
                    .unwrap_or_default()
                ));
            }
            if started.elapsed() > READY_DEADLINE {
                return Err(format!(
                    "dockerd of {} did not answer within {READY_DEADLINE:?}",
                    self.layout.netns(i)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Cuts host `i` off the network as a partition would: whatever crosses its link is
    /// dropped without an answer (no refusal, no reset), while its engine and containers keep
    /// running. The rules live in the host's own namespace, so they go with it;
    /// [`TestHosts::reconnect`] removes them sooner.
    pub fn cut_off(&self, i: usize) -> Result<(), String> {
        self.drop_rules(i, "-I")
    }

    /// Undoes [`TestHosts::cut_off`].
    pub fn reconnect(&self, i: usize) -> Result<(), String> {
        self.drop_rules(i, "-D")
    }

    /// Inserts (`-I`) or deletes (`-D`) the rules that drop all of host `i`'s traffic, both
    /// ways, in its own namespace.
    fn drop_rules(&self, i: usize, action: &str) -> Result<(), String> {
        let link = self.layout.veth_inside(i);
        for (chain, side) in [("INPUT", "-i"), ("OUTPUT", "-o")] {
            self.in_namespace(
                i,
                &["iptables", "-w", action, chain, side, &link, "-j", "DROP"],
            )?;
        }
        Ok(())
    }

    /// Runs a command in host `i`'s network namespace.
    fn in_namespace(&self, i: usize, args: &[&str]) -> Result<(), String> {
        let net = format!("--net=/var/run/netns/{}", self.layout.netns(i));
        let mut all = vec!["nsenter", net.as_str()];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Stops host `i`'s engine at once (SIGKILL), as a machine that goes away would: its API
    /// stops answering; its containers' processes are killed with it.
    pub fn kill_engine(&mut self, i: usize) {
        if let Some(child) = self.dockerds.get_mut(i) {
            let _ = child.kill();
            let _ = child.wait();
        }
        kill_namespace(&self.layout.netns(i));
    }
}

impl Drop for TestHosts {
    fn drop(&mut self) {
        stop_all(&mut self.dockerds);
        teardown(&self.layout);
        // The roots go too when no other set is in them (the lock file stays: removing it
        // would let two processes hold "the" lock at once).
        let _ = std::fs::remove_dir(RUN_ROOT);
        let _ = std::fs::remove_dir(DATA_ROOT);
    }
}

/// Four hex digits from the pid and the clock: short enough for interface names (15 bytes).
fn unique_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{:04x}",
        (std::process::id() ^ nanos.rotate_left(7)) & 0xffff
    )
}

/// A 10.213.N.0/24 no interface of the machine is on.
fn free_subnet() -> Option<u8> {
    let taken = output(&["ip", "-4", "-o", "addr", "show"]);
    let start = (std::process::id() % 200) as u8;
    (0..200u8)
        .map(|k| 20 + (start.wrapping_add(k)) % 200)
        .find(|n| !taken.contains(&format!("10.213.{n}.")))
}

/// Whether the engine behind `sock` answers `GET /_ping`.
fn ping(sock: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.") && reply.contains(" 200 ") && reply.ends_with("OK")
}
