//! Bringing a server up: its image (built, found, or shipped to its host), its container,
//! readiness, the confinement audit and verification; and what is kept when one cannot start.

use super::ctx::{Ctx, Live};
use crate::against::BaselineImage;
use crate::events::Event;
use crate::fleet::{Container, Engine};
use loadgen::HttpVersion;
use orchestrator::{
    BuiltImage, Confinement, ContainerSpec, ExpectedDoc, OrchestratorError, Scheme, Socket, Tmpfs,
    Verified,
};
use report::{ServerRecord, ServerStatus};
use scenario::{ImageSource, Manifest, OptionValue, VersionHeader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// A server started and verified.
pub(super) struct Started<C> {
    pub(super) guard: C,
    /// Its plain-HTTP listener beside TLS, for the servers that front it.
    pub(super) plain: Option<SocketAddr>,
    pub(super) image: BuiltImage,
    /// What it calls itself, from the header its manifest names.
    pub(super) version: Option<String>,
    /// From container creation to verified, seconds.
    pub(super) ready_s: f64,
}

/// Why a server is not measured, and its image when it got that far.
pub(super) struct NotStarted {
    pub(super) image: Option<BuiltImage>,
    pub(super) reason: String,
}

pub(super) fn server_record(
    spec: &scenario::ServerSpec,
    host: Option<&str>,
    image: Option<&BuiltImage>,
    server_header: Option<String>,
    status: ServerStatus,
) -> ServerRecord {
    ServerRecord {
        name: spec.name.clone(),
        kind: spec.kind.as_str().to_string(),
        image_tag: image.map(|b| b.tag.clone()).unwrap_or_default(),
        image_id: image.map(|b| b.id.clone()),
        server_header,
        status,
        host: host.map(str::to_string),
    }
}

/// A server container's rights: what its manifest declares, nothing more.
pub fn confinement(m: &Manifest) -> Confinement {
    let c = &m.container;
    Confinement {
        user: Some(c.user.clone()),
        cap_add: c.capabilities.clone(),
        read_only: true,
        tmpfs: c
            .tmpfs
            .iter()
            .map(|t| Tmpfs {
                path: t.path.clone(),
                size_bytes: t.size,
                exec: t.exec,
            })
            .collect(),
        pids_limit: i64::from(c.pids_limit),
    }
}

/// A new, empty file beside `out` for what a run keeps of `server` (`suffix`: `build.log`,
/// `log`): `<record>.<server>.<suffix>`, or, when that exists already, the first free of
/// `<record>.<server>.2.<suffix>` ... `.99.`; created exclusively, never through a symlink.
pub fn create_beside(
    out: &Path,
    server: &str,
    suffix: &str,
) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut last = None;
    for n in 1..100 {
        let kept = match n {
            1 => out.with_extension(format!("{server}.{suffix}")),
            n => out.with_extension(format!("{server}.{n}.{suffix}")),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&kept)
        {
            Ok(file) => return Ok((kept, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

/// A port nothing listens on now (the server binds it a moment later).
/// How many ports a server on another machine's engine is tried on, each free here, before
/// one taken there makes it unavailable.
pub(super) const PORT_ATTEMPTS: u32 = 3;

/// The server exited because its port was taken: every server kind's bind error says
/// "Address already in use" (EADDRINUSE), in some capitalisation.
pub(super) fn port_taken(e: &OrchestratorError) -> bool {
    matches!(e, OrchestratorError::Exited { .. })
        && e.log_lines().iter().any(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("address already in use") || l.contains("eaddrinuse")
        })
}

pub(super) fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

/// A port free here for TCP and, with `udp` (a server of HTTP/3 listens on both), for UDP.
pub(super) fn free_port_for(udp: bool) -> std::io::Result<u16> {
    const TRIES: u32 = 32;
    let mut last = None;
    for _ in 0..TRIES {
        let port = free_port()?;
        if !udp {
            return Ok(port);
        }
        match std::net::UdpSocket::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no port free for both TCP and UDP")))
}

impl<E: Engine> Ctx<'_, E> {
    /// Starts server `i` (from `baseline`'s image on an A/B run's baseline side) and adds it to
    /// `live`; its record says whether it could be.
    pub(super) async fn start_server(
        &self,
        i: usize,
        expected: &[ExpectedDoc],
        live: &mut Vec<Live<E>>,
        baseline: Option<&BaselineImage>,
    ) -> ServerRecord {
        let spec = &self.plan.servers[i];
        let mut srec = match self.bring_up(i, expected, live, baseline, None).await {
            Ok(up) => {
                live.push(Live {
                    index: i,
                    guard: up.guard,
                    plain: up.plain,
                    baseline: baseline.is_some(),
                    image: up.image.clone(),
                });
                server_record(
                    spec,
                    self.host_name(i),
                    Some(&up.image),
                    up.version,
                    ServerStatus::Available {
                        ready_s: up.ready_s,
                    },
                )
            }
            Err(NotStarted { image, reason }) => {
                self.mark_down(baseline.is_some(), i);
                self.observer.event(&Event::Unavailable {
                    server: &self.shown(i, baseline.is_some()),
                    reason: &reason,
                });
                server_record(
                    spec,
                    self.host_name(i),
                    image.as_ref(),
                    None,
                    ServerStatus::Unavailable { reason },
                )
            }
        };
        if let Some(b) = baseline {
            // Run by id; recorded by the tag it had too.
            srec.image_tag = b.tag.clone();
        }
        srec
    }

    /// Builds (or, on an A/B run's baseline side, finds `baseline`'s image), starts, waits for
    /// and verifies one server.
    pub(super) async fn bring_up(
        &self,
        i: usize,
        expected: &[ExpectedDoc],
        live: &[Live<E>],
        baseline: Option<&BaselineImage>,
        again: Option<&BuiltImage>,
    ) -> Result<Started<E::Container>, NotStarted> {
        let spec = &self.plan.servers[i];
        let manifest = spec.manifest.as_ref();
        self.serves_protocol(i)?;
        let shown = self.shown(i, baseline.is_some());
        // Files kept beside the record and container names: no spaces or brackets.
        let file_name = if baseline.is_some() {
            format!("{}-baseline", spec.name)
        } else {
            spec.name.clone()
        };
        let built = self.image_for(i, baseline, again, &shown).await?;
        let unavailable = |reason: String| NotStarted {
            image: Some(built.clone()),
            reason,
        };

        // The address the server listens on and the load is sent to: 127.0.0.1 on this
        // machine's engine, its host's address on another's.
        let address = self
            .plan
            .host_of(spec)
            .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |h| h.address);
        let env = self.server_env(i, address, live).map_err(unavailable)?;
        // On another machine's engine a port free here is only likely to be free there too: a
        // server that exits because its port is taken there is started again on another, up
        // to PORT_ATTEMPTS times. The baseline side of an A/B run runs beside the candidate's:
        // never on the scenario's fixed port.
        let fixed = spec.port.filter(|_| baseline.is_none());
        let elsewhere = self.plan.host_of(spec).is_some();
        let orch = self.orch(i);
        let first = expected.first().map(|d| d.url_path.as_str()).unwrap_or("/");
        let mut attempt = 0;
        let (guard, plain, ready) = loop {
            attempt += 1;
            let port = match fixed {
                Some(p) => p,
                None => free_port_for(self.plan.http3)
                    .map_err(|e| unavailable(format!("no free port: {e}")))?,
            };
            let mut env = env.clone();
            // In a TLS or HTTP/2 run, a server that another one fronts also listens for plain
            // HTTP/1.x when its kind can.
            let plain = if self.scheme != Scheme::HTTP
                && manifest.is_some_and(|m| m.plain_port)
                && self.fronted(i)
            {
                let p = free_port().map_err(|e| unavailable(format!("no free port: {e}")))?;
                env.push(("BENCH_PLAIN_PORT".to_string(), p.to_string()));
                Some(SocketAddr::new(address, p))
            } else {
                None
            };
            let cspec = self.container_spec(i, &file_name, &built.tag, env, port, address);
            let guard = orch
                .start(&cspec)
                .await
                .map_err(|e| unavailable(self.explain(&file_name, "could not start", &e)))?;
            match orch
                .wait_ready(&guard, &self.scheme, port, first, self.opts.ready_deadline)
                .await
            {
                Ok(ready) => break (guard, plain, ready),
                Err(e)
                    if elsewhere
                        && fixed.is_none()
                        && attempt < PORT_ATTEMPTS
                        && port_taken(&e) =>
                {
                    guard.remove().await.map_err(|e| {
                        unavailable(self.explain(&file_name, "could not be removed", &e))
                    })?;
                }
                Err(e) => {
                    return Err(unavailable(self.explain(
                        &file_name,
                        "never became ready",
                        &e,
                    )))
                }
            }
        };
        let verified = self
            .confirm(i, &file_name, &guard, plain, expected)
            .await
            .map_err(unavailable)?;
        let total = guard.started_at().elapsed();
        let version = match manifest.map_or(VersionHeader::Server, |m| m.version_header) {
            VersionHeader::Via => verified.via.clone().or(verified.server_header.clone()),
            VersionHeader::Server => verified.server_header.clone(),
        };
        if again.is_none() {
            self.observer.event(&Event::Ready {
                server: &shown,
                answering_s: ready.as_secs_f64(),
                verified_s: total.as_secs_f64(),
                version: version.as_deref(),
                host: self.host_name(i),
                address: guard.socket_addr(),
            });
        }
        Ok(Started {
            guard,
            plain,
            image: built,
            version,
            ready_s: total.as_secs_f64(),
        })
    }

    /// Whether server `i`'s kind serves the run's protocol: HTTPS, HTTP/2 and HTTP/3 where the
    /// scenario asks for them. (A kind without a manifest is not asked: its build says.)
    fn serves_protocol(&self, i: usize) -> Result<(), NotStarted> {
        let spec = &self.plan.servers[i];
        let Some(m) = spec.manifest.as_ref() else {
            return Ok(());
        };
        // What the run asks, whether the kind's manifest says it serves it, the manifest key
        // and the scenario's words. HTTP/3 comes first: a kind that serves it serves TLS (its
        // manifest cannot say otherwise), so the one thing to say of another is that.
        let p = self.plan;
        let asks = [
            (p.http3, m.http3, "HTTP/3", "http3", "http = \"3\""),
            (p.tls, m.tls, "HTTPS", "tls", "tls = true"),
            (p.http2, m.http2, "HTTP/2", "http2", "http = \"2\""),
        ];
        match asks.into_iter().find(|&(asked, served, ..)| asked && !served) {
            Some((_, _, what, key, says)) => Err(NotStarted {
                image: None,
                reason: format!(
                    "serves no {what} here: docker/{}/server.toml does not say {key} = true, and the scenario says {says}",
                    spec.kind.as_str()
                ),
            }),
            None => Ok(()),
        }
    }

    /// Server `i`'s image: built (or found) where it runs or, for a host that has its images
    /// shipped, here and sent there; the baseline's on an A/B run's baseline side; `again` for
    /// a fresh container of an image this run already started.
    async fn image_for(
        &self,
        i: usize,
        baseline: Option<&BaselineImage>,
        again: Option<&BuiltImage>,
        shown: &str,
    ) -> Result<BuiltImage, NotStarted> {
        let spec = &self.plan.servers[i];
        let kind = spec.kind.as_str();
        let manifest = spec.manifest.as_ref();
        let image = match baseline {
            Some(b) => ImageSource::Prebuilt {
                image: b.reference.clone(),
            },
            None => spec.image.clone(),
        };
        // A host that has its images shipped gets them from this machine's engine, which
        // builds (or finds) them.
        let ships = self.ships(i);
        let maker = if ships { self.here() } else { self.orch(i) };
        let built = match (again, &image) {
            // A fresh container of an image this run already started: nothing to build, check
            // or ship again.
            (Some(b), _) => b.clone(),
            (None, ImageSource::Build { context }) => {
                self.observer.event(&Event::Building {
                    server: &spec.name,
                    context,
                    host: if ships { None } else { self.host_name(i) },
                });
                let log = self.run_dir.build_log(&spec.name);
                match maker
                    .build_image(kind, context, self.sources.get(kind), &log)
                    .await
                {
                    Ok(b) => b,
                    Err(e) => {
                        let e =
                            crate::images::keep_log(e, &log, |_| self.kept_log_path(&spec.name));
                        let mut reason = self.explain(&spec.name, "image build failed", &e);
                        if let (Some(h), false, OrchestratorError::Build { .. }) =
                            (self.host_name(i), ships, &e)
                        {
                            reason.push_str(&format!(
                                "; if {h} reaches no package mirror, images = \"ship\" in its [[host]] builds the image here and sends it there"
                            ));
                        }
                        return Err(NotStarted {
                            image: None,
                            reason,
                        });
                    }
                }
            }
            (None, ImageSource::Prebuilt { image }) => self
                .prebuilt(maker, image, manifest.is_some())
                .await
                .map_err(|reason| NotStarted {
                    image: None,
                    reason,
                })?,
        };
        let shipped = match (again, ships) {
            (None, true) => match maker.ship_image(self.orch(i), &built.tag).await {
                Ok(s) => Some(s),
                Err(e) => {
                    let host = self.host_name(i).unwrap_or_default();
                    return Err(NotStarted {
                        image: Some(built.clone()),
                        reason: self.explain(
                            &spec.name,
                            &format!("its image could not be shipped to {host}"),
                            &e,
                        ),
                    });
                }
            },
            _ => None,
        };
        if again.is_none() {
            self.observer.event(&Event::Built {
                server: shown,
                tag: &built.tag,
                built: built.built,
                seconds: built.seconds,
            });
        }
        if let Some(s) = &shipped {
            self.observer.event(&Event::Shipped {
                server: shown,
                host: self.host_name(i).unwrap_or_default(),
                id: &s.id,
                sent: s.sent,
                bytes: s.bytes,
                seconds: s.seconds,
            });
        }
        Ok(built)
    }

    /// The environment server `i` starts with: the address it listens on, and its options as
    /// its manifest names them (a server it fronts as the address that one answers at).
    fn server_env(
        &self,
        i: usize,
        address: IpAddr,
        live: &[Live<E>],
    ) -> Result<Vec<(String, String)>, String> {
        let spec = &self.plan.servers[i];
        let manifest = spec.manifest.as_ref();
        let mut env = vec![("BENCH_ADDR".to_string(), address.to_string())];
        for (name, value) in &spec.options {
            let Some(decl) = manifest.and_then(|m| m.options.get(name)) else {
                continue;
            };
            let var = decl.env.clone();
            let text = match value {
                OptionValue::Server(d) => {
                    let d = *d;
                    let Some(dep) = live.iter().find(|l| l.index == d) else {
                        return Err(format!(
                            "{:?}, which it needs, is unavailable",
                            self.plan.servers[d].name
                        ));
                    };
                    // A server fronting another (a cache) reaches it over plain HTTP/1.x, as
                    // such deployments do; in a TLS run that is the backend's second port, in
                    // a cleartext HTTP/2 run too where the backend has one (one whose own port
                    // then answers HTTP/2 alone), else its own port, which serves HTTP/1.x
                    // beside h2c.
                    match (&self.scheme, dep.plain) {
                        (_, Some(plain)) => plain.to_string(),
                        (Scheme::Http { .. }, None) => dep.guard.socket_addr().to_string(),
                        (Scheme::Https { .. } | Scheme::H3 { .. }, None) => {
                            let dep_kind = &self.plan.servers[d].kind;
                            return Err(format!(
                                "{:?}, which it fronts over plain HTTP, serves only HTTPS in a TLS run: docker/{dep_kind}/server.toml does not say plain_port = true",
                                self.plan.servers[d].name
                            ));
                        }
                    }
                }
                // Sizes go as whole KiB: every server's size syntax reads a `k` suffix.
                OptionValue::Size(bytes) => format!("{}k", bytes.div_ceil(1024)),
                OptionValue::Integer(n) => n.to_string(),
                OptionValue::Text(t) => t.clone(),
                OptionValue::Bool(b) => b.to_string(),
            };
            env.push((var, text));
        }
        Ok(env)
    }

    /// Whether server `i`'s container, started as `name`, runs as declared and serves the
    /// documents: confined whatever the image says (no process as root and, on this machine's
    /// engine, nothing listening beyond its address and `plain` port), then every document's
    /// bytes checked. Why not, in one line, when it does not.
    async fn confirm(
        &self,
        i: usize,
        name: &str,
        guard: &E::Container,
        plain: Option<SocketAddr>,
        expected: &[ExpectedDoc],
    ) -> Result<Verified, String> {
        let orch = self.orch(i);
        // Over HTTP/3 the server also waits for QUIC on UDP at its address and port number.
        let addr = guard.socket_addr();
        let allowed: Vec<Socket> = std::iter::once(Socket::tcp(addr))
            .chain(self.plan.http3.then(|| Socket::udp(addr)))
            .chain(plain.map(Socket::tcp))
            .collect();
        orch.audit(guard, &allowed)
            .await
            .map_err(|e| self.explain(name, "failed its confinement check", &e))?;
        // Each document over its load's version: a scenario that measures them over several
        // has each server verified over each.
        let mut verified = None;
        for (version, docs) in self.by_version(expected) {
            let scheme = super::scheme_over(&self.scheme, version);
            let v = orch
                .verify(&scheme, addr, &docs)
                .await
                .map_err(|e| self.explain(name, "verification failed", &e))?;
            verified.get_or_insert(v);
        }
        verified.ok_or_else(|| format!("{name}: no document to verify"))
    }

    /// `expected` (one per document of the plan, in its order) grouped by the version of each
    /// document's load, in the order the versions first appear.
    fn by_version(&self, expected: &[ExpectedDoc]) -> Vec<(HttpVersion, Vec<ExpectedDoc>)> {
        debug_assert_eq!(expected.len(), self.plan.documents.len());
        let mut groups: Vec<(HttpVersion, Vec<ExpectedDoc>)> = Vec::new();
        for (doc, e) in self.plan.documents.iter().zip(expected) {
            let v = doc.load.version;
            match groups.iter_mut().find(|(g, _)| *g == v) {
                Some((_, docs)) => docs.push(e.clone()),
                None => groups.push((v, vec![e.clone()])),
            }
        }
        groups
    }

    /// The container server `i` runs in, as `name`, from `image`, with `env`, listening on
    /// `address`:`port`: pinned to the servers' CPUs, given the documents (and the run's
    /// certificate), labelled for the run, and confined as its manifest says.
    fn container_spec(
        &self,
        i: usize,
        name: &str,
        image: &str,
        env: Vec<(String, String)>,
        port: u16,
        address: IpAddr,
    ) -> ContainerSpec {
        let spec = &self.plan.servers[i];
        let manifest = spec.manifest.as_ref();
        ContainerSpec {
            name: name.to_string(),
            image: image.to_string(),
            env,
            port,
            address: Some(address),
            cpuset: Some(self.plan.cpus.servers_cpuset()),
            cpu_share: self.plan.cpus.server_share,
            memory_bytes: Some(spec.memory),
            docroot: Some(self.run_dir.docroot()),
            tls_dir: self.tls_dir.clone(),
            http2: self.plan.http2,
            http3: self.plan.http3,
            run_id: self.run_id.to_string(),
            labels: vec![("benchctl.kind".to_string(), spec.kind.as_str().to_string())],
            cmd: None,
            entrypoint: None,
            confinement: manifest.map(confinement).unwrap_or_default(),
        }
    }

    /// Whether another server of the scenario takes server `i` as one of its options (a
    /// Varnish's backend).
    pub(super) fn fronted(&self, i: usize) -> bool {
        self.plan.servers.iter().any(|s| {
            s.options
                .iter()
                .any(|(_, v)| matches!(v, OptionValue::Server(d) if *d == i))
        })
    }

    /// An existing image to run as it is: present on `orch`, or pulled there. Without a
    /// manifest to name its user, the image's own must not be root.
    pub(super) async fn prebuilt(
        &self,
        orch: &E,
        image: &str,
        has_manifest: bool,
    ) -> Result<BuiltImage, String> {
        let started = std::time::Instant::now();
        if orch.image_id(image).await.ok().flatten().is_none() {
            orch.ensure_image(image)
                .await
                .map_err(|e| format!("image {image} is not here and cannot be had: {e:#}"))?;
        }
        let user = orch
            .image_user(image)
            .await
            .map_err(|e| format!("image {image}: {e:#}"))?;
        if !has_manifest {
            if let Err(why) = scenario::manifest::parse_user(&user) {
                let what = if user.trim().is_empty() {
                    "runs as root (it names no USER)".to_string()
                } else {
                    format!("runs as USER {user:?}, which a server may not: {why}")
                };
                return Err(format!(
                    "image {image} {what}; give the image a numeric, non-root USER UID:GID, or run it through a kind whose server.toml names the user"
                ));
            }
        }
        let id = orch
            .image_id(image)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| format!("image {image} went away"))?;
        Ok(BuiltImage {
            tag: image.to_string(),
            id,
            built: false,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Why a server cannot be measured, in one line: `what` happened, the error's cause, and
    /// where its log is kept (a failed build's whole log; a container's last lines, written to
    /// `<record>.<server>.log` beside the results record).
    pub(super) fn explain(&self, server: &str, what: &str, e: &OrchestratorError) -> String {
        let mut line = format!("{what}: {}", e.headline());
        if let Some(log) = e.log_path() {
            line.push_str(&format!(" (full log: {})", log.display()));
        } else if !e.log_lines().is_empty() {
            let mut text = e.log_lines().join("\n");
            text.push('\n');
            use std::io::Write as _;
            let kept = self
                .kept_file(server, "log")
                .and_then(|(p, mut f)| f.write_all(text.as_bytes()).ok().map(|()| p));
            if let Some(p) = kept {
                line.push_str(&format!(" (its last log lines: {})", p.display()));
            }
        }
        line
    }

    /// A new, empty file beside the results record for a failed build's log (the run folder
    /// goes with the run): `<record>.<server>.build.log`.
    pub(super) fn kept_log_path(&self, server: &str) -> Option<PathBuf> {
        self.kept_file(server, "build.log").map(|(p, _)| p)
    }

    /// A new, empty file beside the results record (see [`create_beside`]); `None` when none
    /// can be made.
    pub(super) fn kept_file(&self, server: &str, suffix: &str) -> Option<(PathBuf, std::fs::File)> {
        let out = self
            .opts
            .out
            .clone()
            .unwrap_or_else(|| self.opts.results_dir.join(format!("{}.json", self.run_id)));
        create_beside(&out, server, suffix).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(lines: &[&str]) -> OrchestratorError {
        OrchestratorError::Exited {
            name: "nginx".into(),
            code: Some(1),
            log_tail: lines.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn a_kept_log_takes_the_next_free_name_beside_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.json");
        let (first, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(first, dir.path().join("run.nginx.build.log"));
        let (second, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(second, dir.path().join("run.nginx.2.build.log"));
        // A symlink where the next name would be is a name taken, never followed.
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join("run.nginx.3.build.log")).unwrap();
        let (third, _) = create_beside(&out, "nginx", "build.log").unwrap();
        assert_eq!(third, dir.path().join("run.nginx.4.build.log"));
        assert!(!target.exists());
    }

    #[test]
    fn a_bind_error_in_any_servers_words_is_a_port_taken() {
        for line in [
            "nginx: [emerg] bind() to 10.0.0.5:40001 failed (98: Address already in use)",
            "(98)Address already in use: AH00072: make_sock: could not bind to address 10.0.0.5:40001",
            "OSError: [Errno 98] Address already in use",
            "listen tcp 10.0.0.5:40001: bind: address already in use",
            "bind failed: EADDRINUSE",
        ] {
            assert!(port_taken(&exited(&["starting", line])), "{line}");
        }
        assert!(!port_taken(&exited(&["segmentation fault"])));
        // Only a server that exited: one that never answered is not retried elsewhere.
        assert!(!port_taken(&OrchestratorError::Invalid(
            "Address already in use".into()
        )));
    }
}
