//! Readiness and verification: before a server is measured it must answer, and it must serve
//! exactly the bytes the scenario expects.
//!
//! Readiness polls with a raw HTTP/1.0 GET over a fresh TCP connection every ~15 ms (any HTTP
//! status line counts: a 404 still proves the server is up), bounded by a deadline, and checks
//! the container's state every few attempts so a server that crashed on its config fails in
//! about a tenth of a second with its last log lines instead of waiting out the deadline.
//!
//! Over TLS, and with HTTP/2, readiness asks with the client verification uses (in cleartext
//! HTTP/2 an HTTP/1.x answer proves the server up too, so that one serving no HTTP/2 fails
//! verification saying so rather than readiness by its deadline). Over HTTP/3 both ask over
//! QUIC, with a client of another implementation than the load generator's (`quic`).
//!
//! Verification fetches every document with an HTTP client that never uses a proxy (every
//! request goes to the server's own address: 127.0.0.1, or another engine's host), hashing the body as it streams so a 100 MB file is never held in
//! memory, and records the Server header, which the results keep as the server's version.

mod expected;
mod quic;
pub use expected::{ExpectedDoc, Scheme, Verified};

use crate::client::Orchestrator;
use crate::container::ContainerGuard;
use crate::error::{OrchestratorError, Result};
use crate::logtail::TAIL_LINES;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Pause between readiness attempts.
const POLL_INTERVAL: Duration = Duration::from_millis(15);
/// One attempt may not take longer than this (a server that accepts but never answers).
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);
/// Check the container's state every this many attempts.
const STATE_EVERY: u32 = 5;

/// One attempt with the scheme's client: any HTTP response proves the server is up (and, over
/// TLS, speaks TLS with the run's certificate).
async fn answers_client(
    client: &reqwest::Client,
    scheme: &Scheme,
    addr: SocketAddr,
    path: &str,
) -> bool {
    let url = format!("{}://{addr}{path}", scheme.name());
    matches!(
        tokio::time::timeout(ATTEMPT_TIMEOUT, client.get(url).send()).await,
        Ok(Ok(_))
    )
}

/// One attempt: connect, send a GET, and see whether the reply starts like HTTP.
async fn answers_http(addr: SocketAddr, path: &str) -> bool {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request =
            format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: benchctl\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).await.ok()?;
        Some(&head == b"HTTP/")
    };
    matches!(
        tokio::time::timeout(ATTEMPT_TIMEOUT, attempt).await,
        Ok(Some(true))
    )
}

impl Orchestrator {
    /// Polls the guard's address, `port`, `path` until the server answers HTTP, the container exits, or
    /// `deadline` (counted from now) passes. Returns the time from container creation to ready.
    pub async fn wait_ready(
        &self,
        guard: &ContainerGuard,
        port: u16,
        path: &str,
        deadline: Duration,
    ) -> Result<Duration> {
        self.wait_ready_over(guard, &Scheme::HTTP, port, path, deadline)
            .await
    }

    /// [`Orchestrator::wait_ready`] over `scheme`.
    pub async fn wait_ready_over(
        &self,
        guard: &ContainerGuard,
        scheme: &Scheme,
        port: u16,
        path: &str,
        deadline: Duration,
    ) -> Result<Duration> {
        let until = Instant::now() + deadline;
        let max_attempts = (deadline.as_millis() / POLL_INTERVAL.as_millis()).max(1) as u32 + 1;
        let addr = SocketAddr::new(guard.address(), port);
        let client = match scheme {
            Scheme::Http { http2: false } | Scheme::H3 { .. } => None,
            _ => Some(scheme.client(ATTEMPT_TIMEOUT)?),
        };
        let quic = match scheme {
            Scheme::H3 { cert_pem } => Some(quic::H3Client::new(cert_pem, addr)?),
            _ => None,
        };
        for attempt in 0..max_attempts {
            let up = if let Some(q) = &quic {
                // Any HTTP/3 response's head proves it up, and serving QUIC with the run's
                // certificate.
                matches!(
                    tokio::time::timeout(ATTEMPT_TIMEOUT, q.get(addr, path, None)).await,
                    Ok(Ok(_))
                )
            } else {
                match (&client, scheme) {
                    (None, _) => answers_http(addr, path).await,
                    // In cleartext an answer in HTTP/1.x proves the server up as well: whether
                    // it serves HTTP/2 is for verification to say, in so many words.
                    (Some(c), Scheme::Http { .. }) => {
                        answers_client(c, scheme, addr, path).await
                            || answers_http(addr, path).await
                    }
                    (Some(c), _) => answers_client(c, scheme, addr, path).await,
                }
            };
            if up {
                return Ok(guard.started_at().elapsed());
            }
            if attempt % STATE_EVERY == 0 {
                self.fail_if_exited(guard).await?;
            }
            if Instant::now() >= until {
                break;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
        // Last chance to report the more useful error: it may have died at the very end.
        self.fail_if_exited(guard).await?;
        Err(OrchestratorError::NotReady {
            name: guard.name().to_string(),
            quic: scheme.http3(),
            address: guard.address(),
            port,
            waited: deadline,
            log_tail: self.log_tail(guard.id(), TAIL_LINES).await,
        })
    }

    /// `Err(Exited)` with the log tail if the container is no longer running.
    pub async fn fail_if_exited(&self, guard: &ContainerGuard) -> Result<()> {
        let Some(stopped) = self.stopped(guard).await? else {
            return Ok(());
        };
        let name = guard.name().to_string();
        Err(if stopped.removed {
            OrchestratorError::Exited {
                name,
                code: None,
                log_tail: vec!["(the container was removed)".to_string()],
            }
        } else if stopped.oom_killed {
            OrchestratorError::OutOfMemory {
                name,
                limit: stopped.memory_limit,
                log_tail: self.log_tail(guard.id(), TAIL_LINES).await,
            }
        } else {
            OrchestratorError::Exited {
                name,
                code: stopped.code,
                log_tail: self.log_tail(guard.id(), TAIL_LINES).await,
            }
        })
    }

    /// Fetches each document from 127.0.0.1:`port` and checks status 200, exact length and
    /// SHA-256. Returns the Server header of the first response.
    pub async fn verify(&self, port: u16, docs: &[ExpectedDoc]) -> Result<Verified> {
        self.verify_at(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port), docs)
            .await
    }

    /// [`verify`](Self::verify) of the server at `addr` (a [`ContainerGuard::socket_addr`]).
    pub async fn verify_at(&self, addr: SocketAddr, docs: &[ExpectedDoc]) -> Result<Verified> {
        self.verify_over(&Scheme::HTTP, addr, docs).await
    }

    /// [`verify_at`](Self::verify_at) over `scheme`: over HTTPS the server must also present
    /// the run's certificate, and with HTTP/2 every response must be HTTP/2.
    pub async fn verify_over(
        &self,
        scheme: &Scheme,
        addr: SocketAddr,
        docs: &[ExpectedDoc],
    ) -> Result<Verified> {
        verify_served(scheme, addr, docs).await
    }
}

/// What [`Orchestrator::verify_over`] checks, of any server at `addr`, whatever runs it: each
/// document answers 200 with its exact length and SHA-256 (and over HTTPS the run's certificate,
/// in HTTP/2 when `scheme` says so). Returns the headers the first response names it by.
pub async fn verify_served(
    scheme: &Scheme,
    addr: SocketAddr,
    docs: &[ExpectedDoc],
) -> Result<Verified> {
    if let Scheme::H3 { cert_pem } = scheme {
        return verify_h3(cert_pem, addr, docs).await;
    }
    let port = addr.port();
    let client = scheme.client(VERIFY_TIMEOUT)?;
    let mut verified = Verified::default();
    for (i, doc) in docs.iter().enumerate() {
        let fail = |what: String| OrchestratorError::Verify {
            address: addr.ip(),
            port,
            url_path: doc.url_path.clone(),
            what,
        };
        if !doc.url_path.starts_with('/') {
            return Err(fail("the path must start with '/'".to_string()));
        }
        let url = format!("{}://{addr}{}", scheme.name(), doc.url_path);
        let mut resp = match client.get(&url).send().await {
            Ok(resp) => resp,
            // A cleartext server that does not serve h2c answers the connection preface
            // with an HTTP/1.x error, or closes: say so rather than how the framing broke.
            Err(e) if matches!(scheme, Scheme::Http { http2: true }) => {
                let only_http1 = answers_http(addr, &doc.url_path).await;
                return Err(fail(if only_http1 {
                    format!(
                        "answers HTTP/1.x only where {} was asked (it does not serve HTTP/2 here): {}",
                        scheme.protocol(),
                        error_chain(&e)
                    )
                } else {
                    format!(
                        "request over {} failed: {}",
                        scheme.protocol(),
                        error_chain(&e)
                    )
                }));
            }
            Err(e) => return Err(fail(format!("request failed: {}", error_chain(&e)))),
        };
        if scheme.http2() && resp.version() != reqwest::Version::HTTP_2 {
            return Err(fail(format!(
                "answered in {:?} where {} was asked (it does not serve HTTP/2 here)",
                resp.version(),
                scheme.protocol()
            )));
        }
        if i == 0 {
            let header = |name| {
                resp.headers()
                    .get(name)
                    .map(|v: &reqwest::header::HeaderValue| {
                        String::from_utf8_lossy(v.as_bytes()).into_owned()
                    })
            };
            verified.server_header = header(reqwest::header::SERVER);
            verified.via = header(reqwest::header::VIA);
        }
        if resp.status() != reqwest::StatusCode::OK {
            return Err(fail(format!(
                "status {} where 200 was expected",
                resp.status()
            )));
        }
        let mut body = Body::new(doc);
        while let Some(chunk) = resp.chunk().await.map_err(|e| {
            fail(format!(
                "reading the body failed after {} bytes: {e}",
                body.length
            ))
        })? {
            body.take(&chunk).map_err(fail)?;
        }
        body.finish().map_err(fail)?;
    }
    Ok(verified)
}

/// How long verification waits for one document, the largest included.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(120);

/// A document's body as it arrives: counted and hashed, never held.
struct Body<'a> {
    doc: &'a ExpectedDoc,
    hasher: Sha256,
    length: u64,
}

impl<'a> Body<'a> {
    fn new(doc: &'a ExpectedDoc) -> Body<'a> {
        Body {
            doc,
            hasher: Sha256::new(),
            length: 0,
        }
    }

    /// The next chunk; an error once the body is longer than the document.
    fn take(&mut self, chunk: &[u8]) -> std::result::Result<(), String> {
        self.length += chunk.len() as u64;
        if self.length > self.doc.length {
            return Err(format!(
                "body is longer than the expected {} bytes",
                self.doc.length
            ));
        }
        self.hasher.update(chunk);
        Ok(())
    }

    /// The whole body: its exact length and SHA-256.
    fn finish(self) -> std::result::Result<(), String> {
        if self.length != self.doc.length {
            return Err(format!(
                "body is {} bytes where {} were expected",
                self.length, self.doc.length
            ));
        }
        let got = hex::encode(self.hasher.finalize());
        if !got.eq_ignore_ascii_case(&self.doc.sha256_hex) {
            return Err(format!(
                "SHA-256 is {got} where {} was expected (same length, different bytes)",
                self.doc.sha256_hex
            ));
        }
        Ok(())
    }
}

/// [`verify_served`] over HTTP/3: each document on a QUIC connection of its own.
async fn verify_h3(cert_pem: &[u8], addr: SocketAddr, docs: &[ExpectedDoc]) -> Result<Verified> {
    let client = quic::H3Client::new(cert_pem, addr)?;
    let mut verified = Verified::default();
    for (i, doc) in docs.iter().enumerate() {
        let fail = |what: String| OrchestratorError::Verify {
            address: addr.ip(),
            port: addr.port(),
            url_path: doc.url_path.clone(),
            what,
        };
        if !doc.url_path.starts_with('/') {
            return Err(fail("the path must start with '/'".to_string()));
        }
        let mut body = Body::new(doc);
        let head = {
            let mut each = |chunk: &[u8]| body.take(chunk);
            tokio::time::timeout(
                VERIFY_TIMEOUT,
                client.get(addr, &doc.url_path, Some(&mut each)),
            )
            .await
        };
        let head = head
            .map_err(|_| {
                fail(format!(
                    "no complete answer over HTTP/3 within {} s",
                    VERIFY_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| fail(format!("request over HTTP/3 (QUIC, ALPN h3) failed: {e}")))?;
        if i == 0 {
            verified.server_header = head.server.clone();
            verified.via = head.via.clone();
        }
        if head.status != 200 {
            return Err(fail(format!(
                "status {} where 200 was expected",
                head.status
            )));
        }
        body.finish().map_err(fail)?;
    }
    Ok(verified)
}

/// An error with its causes: reqwest's own message alone ("error sending request") hides why,
/// e.g. that the certificate was not the one expected.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
