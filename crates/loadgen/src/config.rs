//! What a load run is asked to do, checked before any socket opens: a malformed URL or an
//! impossible combination of options is a [`ConfigError`] with a one-line message, never a
//! panic or a hang.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;
use thiserror::Error;

use model::authority::Authority;

pub use model::load::{Coalesce, Engine, HttpVersion, LoadSpec, Method};

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
    /// The Host header value: `host` plus `:port` unless the port is the scheme's default (80,
    /// or 443 for https), as ab sends it.
    pub host_header: String,
    /// Resolved address; filled by [`Target::resolve`].
    pub addr: Option<SocketAddr>,
    /// `https://`: every connection speaks TLS (see [`crate::tls`]).
    pub https: bool,
}

impl Target {
    /// Parses `http://host[:port][/path]` or `https://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(url_err(
                url,
                "no scheme; write it as http://HOST[:PORT]/PATH",
            ));
        };
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => {
                return Err(url_err(
                    url,
                    format!("unsupported scheme {other:?}; use http:// or https://"),
                ))
            }
        };
        let default_port = if https { 443 } else { 80 };
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
        let Authority {
            host,
            port: port_str,
            ..
        } = Authority::split(authority).map_err(|e| url_err(url, e.to_string()))?;
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
            None => default_port,
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
        let host_header = if port == default_port {
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
            https,
        })
    }

    /// Resolves the host once, before the run: names are looked up a single time, like ab
    /// (a second call gives the address found by the first).
    pub fn resolve(&mut self) -> Result<SocketAddr, ConfigError> {
        if let Some(addr) = self.addr {
            return Ok(addr);
        }
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

/// Header fields an HTTP/2 request may not carry (RFC 9113, section 8.2.2): they describe an
/// HTTP/1.1 connection.
pub const CONNECTION_FIELDS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Most streams one HTTP/2 connection may be asked to keep open at once.
pub const MAX_STREAMS: u32 = 1024;

/// ab's `-t` without `-n` caps the run at this many requests, as ab does.
pub const AB_TIMELIMIT_REQUESTS: u64 = 50_000;

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
    /// With `keep_samples`: also keep each request's wall-clock start (ab's `-g` file needs it).
    pub keep_start_times: bool,
    /// Cookies, each `name=value` as the user wrote it (ab's `-C`), sent in one `Cookie` header
    /// joined by `; `.
    pub cookies: Vec<String>,
    /// `user:password` for Basic authentication to the server (ab's `-A`).
    pub basic_auth: Option<String>,
    /// `user:password` for Basic authentication to a proxy (ab's `-P`).
    pub proxy_auth: Option<String>,
    /// The body every request carries (ab's `-p` / `-u` file), sent with its Content-Length.
    pub body: Option<Vec<u8>>,
    /// The body's Content-Type (ab's `-T`; `text/plain` when a body has none, as ab).
    pub content_type: Option<String>,
    /// Send every request through this HTTP proxy (ab's `-X`), with the absolute URL on the
    /// request line.
    pub proxy: Option<Proxy>,
    /// Options every connection's socket is opened with (ab's `-b` and `-B`).
    pub socket: crate::connect::SocketOptions,
    /// Requests written back to back on a keep-alive connection before their responses are
    /// read (`--pipeline N`; 1: one at a time). See [`crate::pipeline`].
    pub pipeline: u32,
    /// How `https://` connections are made (verification, resumption, ab's `-f` and `-Z`).
    pub tls: crate::tls::TlsOptions,
    /// HTTP/3: write a qlog trace of the run's first connections into this folder
    /// (`--qlog DIR`), one file each; see [`crate::h3::QLOG_CONNECTIONS`].
    pub qlog: Option<std::path::PathBuf>,
}

/// An HTTP proxy the requests go through (ab's `-X HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// Resolved address; filled by [`Proxy::resolve`].
    pub addr: Option<SocketAddr>,
}

impl Proxy {
    /// Parses `HOST:PORT` or `[V6]:PORT`.
    pub fn parse(s: &str) -> Result<Proxy, ConfigError> {
        let bad = |why: &str| ConfigError::Option(format!("proxy {s:?}: {why}"));
        if s.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(bad("contains spaces or control characters"));
        }
        let Authority { host, port, .. } = Authority::split(s).map_err(|e| bad(&e.to_string()))?;
        if host.is_empty() || host.contains(['/', '@']) {
            return Err(bad("expected HOST:PORT"));
        }
        let port = match port.map(str::parse::<u16>) {
            Some(Ok(p)) if p > 0 => p,
            Some(_) => return Err(bad("bad port: expected 1-65535")),
            None => return Err(bad("no port; write it as HOST:PORT")),
        };
        Ok(Proxy {
            host: host.to_string(),
            port,
            addr: None,
        })
    }

    /// Resolves the proxy's host once, before the run.
    pub fn resolve(&mut self) -> Result<SocketAddr, ConfigError> {
        if let Some(addr) = self.addr {
            return Ok(addr);
        }
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| {
                ConfigError::Option(format!("cannot resolve the proxy {:?}: {e}", self.host))
            })?
            .next()
            .ok_or_else(|| {
                ConfigError::Option(format!("the proxy {:?} resolves to no address", self.host))
            })?;
        self.addr = Some(addr);
        Ok(addr)
    }
}

/// Checks that a string the user gave stays one field value on the wire: a CR or LF would end
/// the header there and start another (or end the head), and other control characters but tab
/// are not allowed in a field value (RFC 9110, section 5.5).
fn check_value(what: &str, v: &str) -> Result<(), ConfigError> {
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(ConfigError::Option(format!(
            "{what} {v:?} contains a line break (CR or LF); it would end the header there and send the rest as another header"
        )));
    }
    if v.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
        return Err(ConfigError::Option(format!(
            "{what} {v:?} contains a control character, which a header value may not hold"
        )));
    }
    Ok(())
}

/// RFC 9110's `tchar`: what a method or a header name is made of.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
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
            keep_start_times: false,
            cookies: Vec::new(),
            basic_auth: None,
            proxy_auth: None,
            body: None,
            content_type: None,
            proxy: None,
            socket: crate::connect::SocketOptions::default(),
            pipeline: 1,
            tls: crate::tls::TlsOptions::default(),
            qlog: None,
        }
    }

    /// Where the connections go: the proxy when there is one, else the target. Resolves it.
    pub fn resolve(&mut self) -> Result<SocketAddr, ConfigError> {
        match self.proxy.as_mut() {
            Some(p) => p.resolve(),
            None => self.target.resolve(),
        }
    }

    /// Checks the combination of options.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        let l = &self.load;
        if l.concurrency == 0 {
            return bad("concurrency must be at least 1".into());
        }
        if l.streams == 0 || l.streams > MAX_STREAMS {
            return bad(format!(
                "{} streams per connection is out of range: 1 to {MAX_STREAMS}",
                l.streams
            ));
        }
        let streams = matches!(l.version, HttpVersion::Http2 | HttpVersion::Http3);
        if l.streams != 1 && !streams {
            return bad(
                "more than one stream per connection needs HTTP/2 (--h2) or HTTP/3 (--h3)".into(),
            );
        }
        if self.qlog.is_some() && l.version != HttpVersion::Http3 {
            return bad("--qlog traces QUIC connections: it needs --h3".into());
        }
        if self.tls.zero_rtt && l.version != HttpVersion::Http3 {
            return bad("--0rtt sends requests in QUIC's 0-RTT: it needs --h3".into());
        }
        match l.version {
            HttpVersion::Http2 => self.validate_h2()?,
            HttpVersion::Http3 => self.validate_h3()?,
            _ => {}
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
        self.validate_engine()?;
        self.validate_request()
    }

    /// What the io_uring engine does not drive: asking for it there is an error, before the
    /// load starts (where the host does not allow io_uring, the load falls back to epoll).
    fn validate_engine(&self) -> Result<(), ConfigError> {
        if self.load.engine != Engine::Uring || self.load.version != HttpVersion::Http3 {
            return Ok(());
        }
        Err(ConfigError::Option(
            "--engine uring drives HTTP/1.x and HTTP/2; HTTP/3 runs on the epoll engine \
             (--engine epoll or auto)"
                .into(),
        ))
    }

    /// What HTTP/2 cannot be combined with.
    fn validate_h2(&self) -> Result<(), ConfigError> {
        self.validate_multiplexed("HTTP/2")
    }

    /// What HTTP/3 cannot be combined with: HTTP/2's limits, and QUIC's own (always TLS 1.3).
    fn validate_h3(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Option(m.to_string()));
        if !self.target.https {
            return bad("HTTP/3 runs over QUIC, which is always encrypted: give an https:// URL");
        }
        if self
            .tls
            .protocol
            .as_deref()
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("TLS1.2"))
        {
            return bad("-f: QUIC carries TLS 1.3 only; HTTP/3 cannot be asked for with TLS 1.2");
        }
        if !self.load.keep_alive && self.load.streams > 1 {
            return bad("--streams needs keep-alive (-k) with HTTP/3: without it every request has a connection of its own");
        }
        self.validate_multiplexed("HTTP/3")
    }

    /// What a protocol that runs requests side by side as streams (`name`) cannot be combined
    /// with.
    fn validate_multiplexed(&self, name: &str) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        if self.pipeline > 1 {
            return bad(format!("--pipeline is HTTP/1.1's; {name} runs requests side by side as streams (--streams N) instead"));
        }
        if self.proxy.is_some() {
            return bad(format!("-X: {name} goes straight to the server; benchctl does not send it through an HTTP proxy"));
        }
        for (k, _) in &self.headers {
            if CONNECTION_FIELDS.iter().any(|f| k.eq_ignore_ascii_case(f))
                || (k.eq_ignore_ascii_case("te"))
            {
                return Err(ConfigError::Option(format!(
                    "header {k:?} describes an HTTP/1.1 connection, which {name} forbids in a request (RFC 9113, section 8.2.2; RFC 9114, section 4.2)"
                )));
            }
        }
        Ok(())
    }

    /// Checks everything the user gave that is written into the request: nothing may add a
    /// header, end the head early or frame the request other than benchctl does.
    fn validate_request(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        self.validate_fields()?;
        if let Some(t) = &self.content_type {
            check_value("the content type", t)?;
            if self.body.is_none() {
                return bad(
                    "a content type (-T) is the type of a -p or -u body; give the file to send too, or a header with -H 'Content-Type: ...'"
                        .into(),
                );
            }
        }
        let method = self.load.method.as_str();
        if !is_token(method) {
            return bad(format!(
                "bad method {method:?}: a method is letters, digits and !#$%&'*+-.^_`|~ only, with no spaces or line breaks"
            ));
        }
        if self.body.is_some() && self.load.method.head_only() {
            return bad(
                "HEAD requests carry no body; -p/-u send one (leave out -i or -m HEAD)".into(),
            );
        }
        if let Some(p) = &self.proxy {
            if p.host.bytes().any(|b| b.is_ascii_control() || b == b' ') {
                return bad(format!(
                    "proxy {:?} contains spaces or control characters",
                    p.host
                ));
            }
        }
        self.validate_pipeline()?;
        if !self.target.https && self.tls.is_set() {
            return bad(
                "--verify, --tls-resume, -f and -Z apply to https:// URLs; this one is http://"
                    .into(),
            );
        }
        if self.target.https && self.proxy.is_some() {
            return bad(
                "-X with an https:// URL would need a CONNECT tunnel through the proxy, which benchctl does not make; benchmark the proxy over http:// or the server directly"
                    .into(),
            );
        }
        if self.socket.buffer == Some(0) {
            return bad("the socket buffer size must be at least 1 byte".into());
        }
        Ok(())
    }

    /// The header fields, cookies and credentials the user gave: each must stay one field
    /// of the request's head.
    fn validate_fields(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        for (k, v) in &self.headers {
            if k.bytes().any(|b| b == b'\r' || b == b'\n') {
                return bad(format!(
                    "header name {k:?} contains a line break (CR or LF); it would end the header there and send the rest as another header"
                ));
            }
            if !is_token(k) {
                return bad(format!(
                    "bad header name {k:?}: a name is letters, digits and !#$%&'*+-.^_`|~ only"
                ));
            }
            check_value(&format!("the value of header {k:?}"), v)?;
            if k.eq_ignore_ascii_case("content-length")
                || k.eq_ignore_ascii_case("transfer-encoding")
            {
                return bad(format!(
                    "header {k:?} is not for -H: benchctl frames each request itself (a Content-Length from the -p/-u file's size, or no body), and a second framing would make the server read the requests differently"
                ));
            }
        }
        for c in &self.cookies {
            check_value("the cookie", c)?;
        }
        for (what, cred) in [
            ("-A credentials", &self.basic_auth),
            ("-P credentials", &self.proxy_auth),
        ] {
            let Some(cred) = cred else { continue };
            if !cred.contains(':') {
                return bad(format!(
                    "{what} {cred:?}: expected USER:PASSWORD (Basic authentication sends them joined by a colon)"
                ));
            }
            if cred.bytes().any(|b| b < b' ' || b == 0x7f) {
                return bad(format!(
                    "{what} contain a control character or line break, which Basic authentication does not allow (RFC 7617)"
                ));
            }
        }
        Ok(())
    }

    /// Pipelining's depth and what it cannot be combined with.
    fn validate_pipeline(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Option(m));
        if self.pipeline == 0 || self.pipeline > crate::pipeline::MAX_DEPTH {
            return bad(format!(
                "a pipeline depth of {} is out of range: 1 (no pipelining) to {}",
                self.pipeline,
                crate::pipeline::MAX_DEPTH
            ));
        }
        if self.pipeline > 1 {
            if !self.load.keep_alive {
                return bad(
                    "--pipeline needs keep-alive (-k): the pipelined requests share a connection"
                        .into(),
                );
            }
            if self.load.version != HttpVersion::Http11 {
                return bad("--pipeline needs --http1.1: HTTP/1.0 has no pipelining".into());
            }
            if self.load.rate.is_some() {
                return bad(
                    "--pipeline writes requests in batches, --rate sends each at its own time; give one of them"
                        .into(),
                );
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
        assert!(!t.https);
        let t = Target::parse("https://localhost/x").unwrap();
        assert_eq!(
            (t.port, t.host_header.as_str(), t.https),
            (443, "localhost", true)
        );
        let t = Target::parse("HTTPS://127.0.0.1:8443/").unwrap();
        assert_eq!((t.port, t.host_header.as_str()), (8443, "127.0.0.1:8443"));
    }

    #[test]
    fn bad_urls_say_why() {
        let e = |u: &str| Target::parse(u).unwrap_err().to_string();
        assert!(e("127.0.0.1:80/").contains("no scheme"));
        assert!(e("gopher://127.0.0.1/").contains("use http:// or https://"));
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

    #[test]
    fn io_uring_is_refused_for_what_it_does_not_drive() {
        let spec = LoadSpec {
            engine: Engine::Uring,
            requests: Some(1),
            ..LoadSpec::default()
        };
        let plain = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap(), spec.clone());
        assert_eq!(plain.validate(), Ok(()));
        let tls = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap(), spec.clone());
        assert_eq!(tls.validate(), Ok(()));
        let mut h2 = plain.clone();
        h2.load.version = HttpVersion::Http2;
        assert_eq!(h2.validate(), Ok(()));
        let mut h3 = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap(), spec);
        h3.load.version = HttpVersion::Http3;
        let e = h3.validate().unwrap_err().to_string();
        assert!(e.contains("HTTP/3 runs on the epoll engine"), "{e}");
        // Epoll and the automatic choice drive it.
        h3.load.engine = Engine::Auto;
        assert_eq!(h3.validate(), Ok(()));
    }
}
