//! An engine made in memory, for the tests of the run's course: its "containers" are small
//! HTTP/1.1 servers of this process on 127.0.0.1 that serve the run's document folder as every
//! server kind does, and a [`Script`] says which of them fail, when and how (a build, a start,
//! readiness, the audit, the bytes, a death, a host that stops answering, a sweep).
//! Everything it was asked to do is kept in order ([`Fake::calls`]), and what still runs
//! ([`Fake::running`]), so that a test can say what a run did and what it left.

use super::{Container, Engine, Fleet};
use orchestrator::{
    BuildSource, BuiltImage, ContainerSpec, ContainerUsage, Endpoint, EngineFacts, ExpectedDoc,
    Orchestrator, OrchestratorError, Scheme, ShippedImage, Socket, Verified,
};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Result<T> = std::result::Result<T, OrchestratorError>;

/// What goes wrong, and when. Servers are named by their container name (the scenario's
/// server name; `NAME-baseline` on an A/B run's baseline side), hosts by their `[[host]]` name.
#[derive(Debug, Default, Clone)]
pub(crate) struct Script {
    /// Kinds whose image build fails.
    pub build_fails: BTreeSet<String>,
    /// Servers whose container cannot be created.
    pub start_fails: BTreeSet<String>,
    /// Servers that exit at once with "Address already in use", this many times each.
    pub port_taken: BTreeMap<String, u32>,
    /// Servers that never answer.
    pub never_ready: BTreeSet<String>,
    /// Servers with a process running as root.
    pub root: BTreeSet<String>,
    /// Servers that serve every document with one byte changed.
    pub wrong_bytes: BTreeSet<String>,
    /// Servers that pass this many liveness checks, then have exited.
    pub dies_after: BTreeMap<String, u32>,
    /// Hosts whose engine answers this many liveness checks, then nothing more.
    pub lost_after: BTreeMap<String, u32>,
    /// Hosts that cannot be reached at all.
    pub unreachable: BTreeSet<String>,
    /// Engines (`None`: this machine's) whose sweep of the run's containers fails.
    pub sweep_fails: BTreeSet<Option<String>>,
    /// Containers of dead runs that this machine's engine removes when asked.
    pub stale: usize,
    /// CPUs every engine's machine has.
    pub cpus: u64,
    /// Images present on every engine from the start, with the user each runs as.
    pub images: BTreeMap<String, String>,
    /// Servers that serve only so many requests a second, and what they do beyond it.
    pub behaviour: BTreeMap<String, Behaviour>,
}

/// How a server with a known capacity of `rate` requests/s treats what it is asked beyond it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Behaviour {
    /// Answers what it cannot serve at once with 503 (a token bucket of 50 ms of requests).
    Sheds { rate: f64 },
    /// Serves one request at a time, each taking `1/rate` s, the rest waiting in a queue
    /// without bound: the more it is asked, the longer every answer takes.
    Queues { rate: f64 },
    /// Sheds as [`Behaviour::Sheds`], and for `slow_for` after it last shed, answers every
    /// request `slow` late: it takes a known time to recover.
    SlowAfter {
        rate: f64,
        slow: Duration,
        slow_for: Duration,
    },
}

/// The state of a server with a [`Behaviour`]: its tokens or its queue, and when it last shed.
struct Limiter {
    behaviour: Behaviour,
    state: Mutex<LimiterState>,
}

struct LimiterState {
    tokens: f64,
    refilled: Instant,
    /// The queue's end: when the last request queued will have been served.
    free_at: Instant,
    shed_at: Option<Instant>,
}

/// What a [`Limiter`] makes of a request: wait this long, then answer 200, or answer 503.
enum Verdict {
    Serve(Duration),
    Shed,
}

impl Limiter {
    fn new(behaviour: Behaviour) -> Limiter {
        let now = Instant::now();
        let rate = match behaviour {
            Behaviour::Sheds { rate }
            | Behaviour::Queues { rate }
            | Behaviour::SlowAfter { rate, .. } => rate,
        };
        Limiter {
            behaviour,
            state: Mutex::new(LimiterState {
                tokens: Self::burst(rate),
                refilled: now,
                free_at: now,
                shed_at: None,
            }),
        }
    }

    /// The most a bucket of `rate` holds: 50 ms of requests.
    fn burst(rate: f64) -> f64 {
        (rate * 0.05).max(1.0)
    }

    fn admit(&self) -> Verdict {
        let now = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = |st: &mut LimiterState, rate: f64| {
            st.tokens = (st.tokens + now.duration_since(st.refilled).as_secs_f64() * rate)
                .min(Self::burst(rate));
            st.refilled = now;
            if st.tokens >= 1.0 {
                st.tokens -= 1.0;
                true
            } else {
                st.shed_at = Some(now);
                false
            }
        };
        match self.behaviour {
            Behaviour::Sheds { rate } => match bucket(&mut st, rate) {
                true => Verdict::Serve(Duration::ZERO),
                false => Verdict::Shed,
            },
            Behaviour::Queues { rate } => {
                let start = st.free_at.max(now);
                st.free_at = start + Duration::from_secs_f64(1.0 / rate);
                Verdict::Serve(st.free_at - now)
            }
            Behaviour::SlowAfter {
                rate,
                slow,
                slow_for,
            } => {
                if !bucket(&mut st, rate) {
                    return Verdict::Shed;
                }
                match st.shed_at {
                    Some(t) if now < t + slow_for => Verdict::Serve(slow),
                    _ => Verdict::Serve(Duration::ZERO),
                }
            }
        }
    }
}

impl Script {
    pub fn new() -> Script {
        Script {
            cpus: 2,
            ..Script::default()
        }
    }
}

/// The fleet: this machine's engine and every host's, sharing one account of what they did.
#[derive(Clone)]
pub(crate) struct Fake {
    shared: Arc<Shared>,
}

struct Shared {
    script: Script,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    calls: Vec<String>,
    running: BTreeMap<u64, Running>,
    checks: BTreeMap<String, u32>,
    host_checks: BTreeMap<String, u32>,
    port_tries: BTreeMap<String, u32>,
    dead: BTreeSet<String>,
    lost: BTreeSet<String>,
    images: BTreeMap<(Option<String>, String), String>,
    env: BTreeMap<String, Vec<(String, String)>>,
}

struct Running {
    name: String,
    engine: Option<String>,
    server: tokio::task::JoinHandle<()>,
}

impl Fake {
    pub fn new(script: Script) -> Fake {
        Fake {
            shared: Arc::new(Shared {
                script,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Every request made of the engines, in order: `start nginx`, `share nginx 0.5`, ...
    pub fn calls(&self) -> Vec<String> {
        self.shared.lock().calls.clone()
    }

    /// The value of environment variable `var` in the last container started as `name`
    /// (`BENCH_PORT` is its port).
    pub fn env_of(&self, name: &str, var: &str) -> Option<String> {
        self.shared
            .lock()
            .env
            .get(name)?
            .iter()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.clone())
    }

    /// The containers still there: `name` (`name@host` on a host's engine).
    pub fn running(&self) -> Vec<String> {
        self.shared
            .lock()
            .running
            .values()
            .map(|r| match &r.engine {
                Some(h) => format!("{}@{h}", r.name),
                None => r.name.clone(),
            })
            .collect()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn call(&self, engine: &Option<String>, what: String) {
        let line = match engine {
            Some(h) => format!("{what} @{h}"),
            None => what,
        };
        self.lock().calls.push(line);
    }

    /// An engine that stopped answering answers nothing more.
    fn answering(&self, engine: &Option<String>) -> Result<()> {
        match engine {
            Some(h) if self.lock().lost.contains(h) => Err(no_answer(h)),
            _ => Ok(()),
        }
    }
}

fn no_answer(host: &str) -> OrchestratorError {
    OrchestratorError::NoAnswer {
        url: format!("tcp://{host}:2375"),
        waited: Duration::from_millis(10),
    }
}

fn exited(name: &str, code: i64, line: &str) -> OrchestratorError {
    OrchestratorError::Exited {
        name: name.to_string(),
        code: Some(code),
        log_tail: vec![format!("{name}: starting"), line.to_string()],
    }
}

impl Fleet for Fake {
    type Engine = FakeEngine;

    async fn here(&self) -> Result<FakeEngine> {
        Ok(FakeEngine {
            host: None,
            shared: Arc::clone(&self.shared),
        })
    }

    async fn host(&self, host: &scenario::HostSpec) -> Result<FakeEngine> {
        if self.shared.script.unreachable.contains(&host.name) {
            return Err(no_answer(&host.name));
        }
        Ok(FakeEngine {
            host: Some(host.name.clone()),
            shared: Arc::clone(&self.shared),
        })
    }
}

/// One machine's engine of the [`Fake`] fleet.
pub(crate) struct FakeEngine {
    host: Option<String>,
    shared: Arc<Shared>,
}

/// A server of the fake fleet: removed from the account, and its listener closed, when it is
/// removed or dropped.
pub(crate) struct FakeContainer {
    id: u64,
    name: String,
    addr: SocketAddr,
    started: Instant,
    host: Option<String>,
    shared: Arc<Shared>,
    armed: bool,
}

impl FakeContainer {
    fn gone(&mut self) {
        self.armed = false;
        if let Some(r) = self.shared.lock().running.remove(&self.id) {
            r.server.abort();
        }
    }
}

impl Drop for FakeContainer {
    fn drop(&mut self) {
        if self.armed {
            self.shared.call(&self.host, format!("drop {}", self.name));
            self.gone();
        }
    }
}

impl Container for FakeContainer {
    fn socket_addr(&self) -> SocketAddr {
        self.addr
    }

    fn started_at(&self) -> Instant {
        self.started
    }

    async fn remove(mut self) -> Result<()> {
        self.shared
            .call(&self.host, format!("remove {}", self.name));
        let answered = self.shared.answering(&self.host);
        if answered.is_err() {
            // Unreachable, so it stays: only the account forgets it with the test.
            self.armed = false;
            return answered;
        }
        self.gone();
        Ok(())
    }

    fn leak(mut self) {
        self.shared.call(&self.host, format!("leak {}", self.name));
        self.armed = false;
    }
}

impl Engine for FakeEngine {
    type Container = FakeContainer;
    type Sampler = ();

    fn endpoint(&self) -> Option<Endpoint> {
        None
    }

    async fn version(&self) -> Result<String> {
        Ok("fake".to_string())
    }

    async fn facts(&self) -> Result<EngineFacts> {
        Ok(EngineFacts {
            version: "fake".to_string(),
            api_version: "1.41".to_string(),
            cpus: self.shared.script.cpus,
            memory_bytes: 1 << 30,
            kernel: "fake".to_string(),
            clock_offset_s: 0.0,
            clock_uncertainty_s: 0.0,
        })
    }

    fn docker(&self) -> Option<&Orchestrator> {
        None
    }

    async fn gc_stale(&self) -> Result<usize> {
        Ok(match self.host {
            None => self.shared.script.stale,
            Some(_) => 0,
        })
    }

    async fn remove_run(&self, run_id: &str) -> Result<usize> {
        self.shared.call(&self.host, format!("sweep {run_id}"));
        self.shared.answering(&self.host)?;
        if self.shared.script.sweep_fails.contains(&self.host) {
            return Err(OrchestratorError::Invalid(
                "the engine refused to remove a container".to_string(),
            ));
        }
        let mut state = self.shared.lock();
        let mine: Vec<u64> = state
            .running
            .iter()
            .filter(|(_, r)| r.engine == self.host)
            .map(|(id, _)| *id)
            .collect();
        for id in &mine {
            if let Some(r) = state.running.remove(id) {
                r.server.abort();
            }
        }
        Ok(mine.len())
    }

    async fn build_image(
        &self,
        kind: &str,
        _context: &Path,
        _source: Option<&BuildSource>,
        log: &Path,
    ) -> Result<BuiltImage> {
        self.shared.call(&self.host, format!("build {kind}"));
        if self.shared.script.build_fails.contains(kind) {
            let tail = vec!["E: Unable to locate package nothing-here".to_string()];
            let _ = std::fs::write(log, tail.join("\n"));
            return Err(OrchestratorError::Build {
                server: kind.to_string(),
                message: "The command '/bin/sh -c apt-get install' returned a non-zero code: 100"
                    .to_string(),
                log_tail: tail,
                log_path: log.to_path_buf(),
            });
        }
        let tag = format!("benchctl/{kind}:fake");
        let id = format!("sha256:{kind}");
        self.shared
            .lock()
            .images
            .insert((self.host.clone(), tag.clone()), id.clone());
        Ok(BuiltImage {
            tag,
            id,
            built: true,
            seconds: 0.0,
        })
    }

    async fn ship_image(&self, to: &Self, tag: &str) -> Result<ShippedImage> {
        self.shared.call(
            &self.host,
            format!("ship {tag} to {}", to.host.as_deref().unwrap_or("here")),
        );
        let id = self.image_id(tag).await?.unwrap_or_default();
        self.shared
            .lock()
            .images
            .insert((to.host.clone(), tag.to_string()), id.clone());
        Ok(ShippedImage {
            image: tag.to_string(),
            id,
            sent: true,
            bytes: 1024,
            seconds: 0.0,
        })
    }

    async fn image_id(&self, image: &str) -> Result<Option<String>> {
        if self.shared.script.images.contains_key(image) {
            return Ok(Some(match image.starts_with("sha256:") {
                true => image.to_string(),
                false => format!("sha256:{image}"),
            }));
        }
        let key = (self.host.clone(), image.to_string());
        Ok(self.shared.lock().images.get(&key).cloned())
    }

    async fn ensure_image(&self, image: &str) -> Result<()> {
        match self.image_id(image).await? {
            Some(_) => Ok(()),
            None => Err(OrchestratorError::BaseImage {
                image: image.to_string(),
                reason: "no registry answers here".to_string(),
            }),
        }
    }

    async fn image_user(&self, image: &str) -> Result<String> {
        Ok(self
            .shared
            .script
            .images
            .get(image)
            .cloned()
            .unwrap_or_default())
    }

    async fn start(&self, spec: &ContainerSpec) -> Result<FakeContainer> {
        let name = spec.name.clone();
        self.shared.call(&self.host, format!("start {name}"));
        self.shared.answering(&self.host)?;
        let script = &self.shared.script;
        if script.start_fails.contains(&name) {
            return Err(OrchestratorError::Invalid(format!(
                "{name}: the engine could not create the container"
            )));
        }
        let docroot = spec
            .docroot
            .clone()
            .ok_or_else(|| OrchestratorError::Invalid("a server needs its documents".into()))?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, spec.port));
        let taken = {
            let mut state = self.shared.lock();
            let tries = state.port_tries.entry(name.clone()).or_default();
            *tries += 1;
            script.port_taken.get(&name).is_some_and(|&n| *tries <= n)
        };
        let server = if taken || script.never_ready.contains(&name) {
            tokio::spawn(async {})
        } else {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                OrchestratorError::Invalid(format!("{name}: cannot listen on {addr}: {e}"))
            })?;
            let wrong = script.wrong_bytes.contains(&name);
            let limiter = script
                .behaviour
                .get(&name)
                .map(|b| Arc::new(Limiter::new(*b)));
            tokio::spawn(serve(listener, docroot, wrong, limiter))
        };
        let mut state = self.shared.lock();
        let mut env = spec.env.clone();
        env.push(("BENCH_PORT".to_string(), spec.port.to_string()));
        state.env.insert(name.clone(), env);
        state.next_id += 1;
        let id = state.next_id;
        state.running.insert(
            id,
            Running {
                name: name.clone(),
                engine: self.host.clone(),
                server,
            },
        );
        if taken {
            state.dead.insert(name.clone());
        }
        Ok(FakeContainer {
            id,
            name,
            addr,
            started: Instant::now(),
            host: self.host.clone(),
            shared: Arc::clone(&self.shared),
            armed: true,
        })
    }

    async fn wait_ready(
        &self,
        c: &FakeContainer,
        _scheme: &Scheme,
        _port: u16,
        _path: &str,
        deadline: Duration,
    ) -> Result<Duration> {
        let dead = self.shared.lock().dead.remove(&c.name);
        if dead {
            return Err(exited(
                &c.name,
                1,
                &format!("bind() to {} failed (98: Address already in use)", c.addr),
            ));
        }
        if self.shared.script.never_ready.contains(&c.name) {
            return Err(OrchestratorError::Invalid(format!(
                "{} did not answer within {deadline:?}",
                c.name
            )));
        }
        Ok(c.started.elapsed())
    }

    async fn audit(&self, c: &FakeContainer, _allowed: &[Socket]) -> Result<()> {
        if self.shared.script.root.contains(&c.name) {
            return Err(OrchestratorError::Invalid(format!(
                "{}: process 1 runs as uid 0",
                c.name
            )));
        }
        Ok(())
    }

    async fn verify(
        &self,
        scheme: &Scheme,
        addr: SocketAddr,
        docs: &[ExpectedDoc],
    ) -> Result<Verified> {
        orchestrator::verify_served(scheme, addr, docs).await
    }

    async fn fail_if_exited(&self, c: &FakeContainer) -> Result<()> {
        let script = &self.shared.script;
        let mut state = self.shared.lock();
        if let Some(h) = &c.host {
            let n = state.host_checks.entry(h.clone()).or_default();
            *n += 1;
            if script.lost_after.get(h).is_some_and(|&after| *n > after) {
                state.lost.insert(h.clone());
            }
            if state.lost.contains(h) {
                return Err(no_answer(h));
            }
        }
        let n = state.checks.entry(c.name.clone()).or_default();
        *n += 1;
        if script
            .dies_after
            .get(&c.name)
            .is_some_and(|&after| *n > after)
        {
            if let Some(r) = state.running.get(&c.id) {
                r.server.abort();
            }
            return Err(exited(&c.name, 139, "Segmentation fault (core dumped)"));
        }
        Ok(())
    }

    async fn set_cpu_share(&self, c: &FakeContainer, share: Option<f64>) -> Result<()> {
        let share = share.map_or("all".to_string(), |s| format!("{s}"));
        self.shared
            .call(&self.host, format!("share {} {share}", c.name));
        Ok(())
    }

    async fn sample(&self, _c: &FakeContainer) -> Result<()> {
        Ok(())
    }

    async fn restart(_sampler: &()) {}

    async fn finish(_sampler: ()) -> ContainerUsage {
        ContainerUsage {
            cpu_seconds: 0.01,
            peak_memory_bytes: 1 << 20,
            peak_connections: None,
            samples: 1,
            from_cgroup: false,
        }
    }
}

/// Serves `docroot` over HTTP/1.1 with keep-alive, as the server kinds do: `/a/` is
/// `a/index.html`; with `wrong`, every body has its first byte changed; with a `limiter`, as
/// its behaviour says.
async fn serve(
    listener: tokio::net::TcpListener,
    docroot: PathBuf,
    wrong: bool,
    limiter: Option<Arc<Limiter>>,
) {
    let docroot = Arc::new(docroot);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(connection(
            stream,
            Arc::clone(&docroot),
            wrong,
            limiter.clone(),
        ));
    }
}

async fn connection(
    mut stream: tokio::net::TcpStream,
    docroot: Arc<PathBuf>,
    wrong: bool,
    limiter: Option<Arc<Limiter>>,
) {
    let mut buf = Vec::with_capacity(1024);
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 1024];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        // HTTP/1.0 closes unless asked to keep the connection; HTTP/1.1 keeps it unless asked
        // to close.
        let lower = head.to_ascii_lowercase();
        let close = match lower
            .split("\r\n")
            .next()
            .unwrap_or("")
            .ends_with("http/1.0")
        {
            true => !lower.contains("\r\nconnection: keep-alive"),
            false => lower.contains("\r\nconnection: close"),
        };
        let verdict = limiter.as_ref().map(|l| l.admit());
        if let Some(Verdict::Serve(wait)) = verdict {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        let (status, mut body) = match (verdict, body_of(&docroot, &path)) {
            (Some(Verdict::Shed), _) => ("503 Service Unavailable", b"busy\n".to_vec()),
            (_, Some(b)) => ("200 OK", b),
            (_, None) => ("404 Not Found", b"not found\n".to_vec()),
        };
        if wrong {
            if let Some(b) = body.first_mut() {
                *b ^= 1;
            }
        }
        let head = format!(
            "HTTP/1.1 {status}\r\nServer: fake/1.0\r\nContent-Length: {}\r\n{}\r\n",
            body.len(),
            if close {
                "Connection: close\r\n"
            } else {
                "Connection: keep-alive\r\n"
            }
        );
        let mut out = head.into_bytes();
        out.extend_from_slice(&body);
        if stream.write_all(&out).await.is_err() || close {
            return;
        }
    }
}

fn body_of(docroot: &Path, url_path: &str) -> Option<Vec<u8>> {
    let relative = url_path.strip_prefix('/')?;
    if relative.split('/').any(|s| s == "..") {
        return None;
    }
    let mut file = docroot.join(relative);
    if relative.is_empty() || relative.ends_with('/') {
        file.push("index.html");
    }
    std::fs::read(file).ok()
}
