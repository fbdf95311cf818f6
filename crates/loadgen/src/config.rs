//! What a load run is asked to do, checked before any socket opens: a malformed URL or an
//! impossible combination of options is a [`ConfigError`] with a one-line message, never a
//! panic or a hang.

use serde::Serialize;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;
use thiserror::Error;

/// A problem with the options of a load run.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("invalid URL {url:?}: {why}")]
    Url { url: String, why: String },
    #[error("{0}")]
    Option(String),
}

fn url_err(url: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::Url {
        url: url.to_string(),
        why: why.into(),
    }
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host as written in the URL (without brackets), for display as ab's "Server Hostname".
    pub host: String,
    pub port: u16,
    /// Path and query, as sent on the request line.
    pub path: String,
    /// The Host header value: `host` plus `:port` unless the port is 80, as ab sends it.
    pub host_header: String,
    /// Resolved address; filled by [`Target::resolve`].
    pub addr: Option<SocketAddr>,
}

impl Target {
    /// Parses `http://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(url_err(
                url,
                "no scheme; write it as http://HOST[:PORT]/PATH",
            ));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "http" => {}
            "https" => {
                return Err(url_err(
                    url,
                    "https is not supported yet (planned); benchmark over http://",
                ))
            }
            other => {
                return Err(url_err(
                    url,
                    format!("unsupported scheme {other:?}; use http://"),
                ))
            }
        }
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let path = match path.split_once('#') {
            Some((p, _)) => p.to_string(),
            None => path,
        };
        if authority.contains('@') {
            return Err(url_err(url, "user information in URLs is not supported"));
        }
        let (host, port_str) = if let Some(v6) = authority.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                return Err(url_err(url, "unclosed '[' in IPv6 address"));
            };
            match after {
                "" => (h, None),
                p if p.starts_with(':') => (h, Some(&p[1..])),
                _ => return Err(url_err(url, "unexpected text after IPv6 address")),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(url_err(url, "no host"));
        }
        if path
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(url_err(
                url,
                "the path contains spaces or control characters",
            ));
        }
        let port = match port_str {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(0) => return Err(url_err(url, "port 0 is not a port one can connect to")),
                Ok(n) => n,
                Err(_) => return Err(url_err(url, format!("bad port {p:?}: expected 1-65535"))),
            },
        };
        let host_in_header = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let host_header = if port == 80 {
            host_in_header
        } else {
            format!("{host_in_header}:{port}")
        };
        Ok(Target {
            host: host.to_string(),
            port,
            path,
            host_header,
            addr: None,
        })
    }

    /// Resolves the host once, before the run: names are looked up a single time, like ab.
    pub fn resolve(&mut self) -> Result<SocketAddr, ConfigError> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| ConfigError::Option(format!("cannot resolve {:?}: {e}", self.host)))?
            .next()
            .ok_or_else(|| {
                ConfigError::Option(format!("{:?} resolves to no address", self.host))
            })?;
        self.addr = Some(addr);
        Ok(addr)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    Get,
    Head,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HttpVersion {
    Http10,
    Http11,
}

/// How a worker waits once it has read everything there is (see [`crate::coalesce`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coalesce {
    /// Block in `epoll_wait`, woken by every response, as ab and wrk are.
    Off,
    /// Sleep a bounded share of the request cycle when that collects responses in batches;
    /// only with receive stamps, so that no nap is measured as server time.
    Auto,
    /// Sleep this long whenever there is nothing to read.
    Nap(Duration),
}

impl std::fmt::Display for Coalesce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Coalesce::Off => f.write_str("off"),
            Coalesce::Auto => f.write_str("auto"),
            Coalesce::Nap(d) => write!(f, "{}us", d.as_micros()),
        }
    }
}

/// ab's `-t` without `-n` caps the run at this many requests, as ab does.
pub const AB_TIMELIMIT_REQUESTS: u64 = 50_000;

/// The load itself, independent of where it is sent and which CPUs make it: what a scenario's
/// `[load]` describes and what `benchctl load`'s flags describe, in one type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSpec {
    /// Requests to perform (ab's `-n`); `None` to run for `duration` alone.
    pub requests: Option<u64>,
    /// Stop issuing requests after this long (ab's `-t`, or a duration-bounded run).
    pub duration: Option<Duration>,
    /// Connections at once (ab's `-c`).
    pub concurrency: u32,
    /// Reuse connections where the server agrees (ab's `-k`).
    pub keep_alive: bool,
    pub version: HttpVersion,
    pub method: Method,
    /// Per-request timeout (ab's `-s`).
    pub timeout: Duration,
    /// Load applied and discarded before measuring.
    pub warmup: Duration,
    /// Constant request rate (requests/s across all workers): an open-model run.
    pub rate: Option<f64>,
    /// Time responses by the kernel's receive stamps rather than by when the generator read
    /// them (see [`crate::sock`]).
    pub rx_stamps: bool,
    /// How a worker waits for responses once it has caught up.
    pub coalesce: Coalesce,
    /// With `requests`: repeat the load back to back (another `requests` each time, the
    /// connections carrying on) until the measured part has lasted at least this long, and
    /// count all of it. Keeps ab's parameters while giving a load long enough to settle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_duration: Option<Duration>,
}

impl Default for LoadSpec {
    /// ab's defaults: one request, one connection, no keep-alive, HTTP/1.0 GET, 30 s timeout.
    fn default() -> Self {
        LoadSpec {
            requests: Some(1),
            duration: None,
            concurrency: 1,
            keep_alive: false,
            version: HttpVersion::Http10,
            method: Method::Get,
            timeout: Duration::from_secs(30),
            warmup: Duration::ZERO,
            rate: None,
            rx_stamps: true,
            coalesce: Coalesce::Auto,
            min_duration: None,
        }
    }
}

/// Everything a load run needs: the load, its target, and how the generator is laid out.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    pub load: LoadSpec,
    /// Worker threads (each with its own poller and share of connections).
    pub threads: usize,
    /// CPUs the workers are pinned to, round-robin.
    pub cpus: Option<Vec<usize>>,
    /// Extra request headers (ab's `-H`).
    pub headers: Vec<(String, String)>,
    /// Accept a varying document length (ab's `-l`).
    pub variable_length: bool,
    /// Keep every request's timings for ab's exact tables (bounded runs only).
    pub keep_samples: bool,
    /// Length of the intervals the load is counted in over time ([`crate::timeline`]).
    pub interval: Duration,
}

impl LoadConfig {
    /// `load` against `target` from one unpinned worker thread.
    pub fn new(target: Target, load: LoadSpec) -> Self {
        LoadConfig {
            target,
            load,
            threads: 1,
            cpus: None,
            headers: Vec::new(),
            variable_length: false,
            keep_samples: true,
            interval: crate::timeline::DEFAULT_INTERVAL,
        }
    }

    /// Checks the combination of options.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        let l = &self.load;
        if l.concurrency == 0 {
            return bad("concurrency must be at least 1".into());
        }
        if l.concurrency > 1_000_000 {
            return bad(format!(
                "concurrency {} is beyond any sane number of connections",
                l.concurrency
            ));
        }
        match l.requests {
            Some(0) => return bad("the request count must be at least 1".into()),
            Some(n) if u64::from(l.concurrency) > n => {
                return bad(format!(
                    "cannot use concurrency level greater than total number of requests (concurrency {} > requests {n})",
                    l.concurrency
                ))
            }
            None if l.duration.is_none() => {
                return bad("give a request count or a duration".into())
            }
            _ => {}
        }
        if l.duration.is_some_and(|d| d.is_zero()) {
            return bad("the time limit must be longer than zero".into());
        }
        match l.min_duration {
            Some(d) if d.is_zero() => {
                return bad("the minimum duration must be longer than zero".into())
            }
            Some(_) if l.requests.is_none() => {
                return bad(
                    "a minimum duration repeats a load of a request count; a load bounded by time alone has no use for it"
                        .into(),
                )
            }
            _ => {}
        }
        if l.timeout.is_zero() {
            return bad("the request timeout must be longer than zero".into());
        }
        if self.interval < crate::timeline::MIN_INTERVAL {
            return bad(format!(
                "the interval must be at least {} ms, not {} µs: shorter ones hold too few requests",
                crate::timeline::MIN_INTERVAL.as_millis(),
                self.interval.as_micros()
            ));
        }
        if self.threads == 0 {
            return bad("there must be at least 1 worker thread".into());
        }
        if let Some(r) = l.rate {
            if !(r.is_finite() && r > 0.0) {
                return bad(format!(
                    "the request rate must be a positive number, not {r}"
                ));
            }
        }
        if let Some(cpus) = &self.cpus {
            if cpus.is_empty() {
                return bad("the generator needs at least one CPU".into());
            }
            let n = crate::cpu::online_cpus();
            if let Some(c) = cpus.iter().find(|&&c| c >= n) {
                return bad(format!(
                    "the generator's CPUs include CPU {c}, but this machine has CPUs 0-{}",
                    n - 1
                ));
            }
        }
        for (k, v) in &self.headers {
            if k.is_empty() || k.bytes().any(|b| b <= b' ' || b == b':' || b >= 0x7f) {
                return bad(format!("bad header name {k:?}"));
            }
            if v.bytes().any(|b| b == b'\r' || b == b'\n') {
                return bad(format!("header {k:?} has a line break in its value"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1")
        );
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let t = Target::parse("http://localhost").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.host_header.as_str()),
            (80, "/", "localhost")
        );
        let t = Target::parse("http://[::1]:81/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.host_header.as_str()),
            ("::1", "[::1]:81")
        );
        let t = Target::parse("http://127.0.0.1?q").unwrap();
        assert_eq!(t.path, "/?q");
    }

    #[test]
    fn bad_urls_say_why() {
        let e = |u: &str| Target::parse(u).unwrap_err().to_string();
        assert!(e("127.0.0.1:80/").contains("no scheme"));
        assert!(e("https://127.0.0.1/").contains("https is not supported yet"));
        assert!(e("http://127.0.0.1:99999/").contains("bad port"));
        assert!(e("http://127.0.0.1:x/").contains("bad port"));
        assert!(e("http://127.0.0.1:0/").contains("port 0"));
        assert!(e("http:///x").contains("no host"));
        assert!(e("ftp://h/").contains("unsupported scheme"));
    }

    #[test]
    fn option_checks() {
        let mut c = LoadConfig::new(
            Target::parse("http://127.0.0.1:1/").unwrap(),
            LoadSpec::default(),
        );
        c.load.concurrency = 0;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("concurrency"));
        c.load.concurrency = 5;
        c.load.requests = Some(2);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("greater than"));
        c.load.requests = None;
        assert!(c.validate().is_err());
        c.load.duration = Some(Duration::from_secs(1));
        assert!(c.validate().is_ok());
    }
}
