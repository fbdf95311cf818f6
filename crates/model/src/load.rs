//! A load as data: what a scenario's `[load]` and `benchctl load`'s flags both describe, and
//! what a generator's [`Job`](crate::job::Job) carries. Where the requests go and how the
//! generator lays out its threads are the load generator's own configuration.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The request method. ab sends GET, HEAD with `-i`, POST with `-p`, PUT with `-u`, and any
/// other token with `-m`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    /// Any other method, as written (methods are case-sensitive).
    Other(String),
}

impl Method {
    /// The method as given on the command line: the four ab knows by name map to their
    /// variants, anything else is kept as written (the load generator checks it).
    pub fn parse(s: &str) -> Method {
        match s {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            other => Method::Other(other.to_string()),
        }
    }

    /// The method's name on the request line.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Other(m) => m,
        }
    }

    /// Responses to this method carry no body, whatever their Content-Length says.
    pub fn head_only(&self) -> bool {
        *self == Method::Head
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HttpVersion {
    Http10,
    Http11,
    /// HTTP/2: by ALPN over TLS, by prior knowledge in cleartext (h2c). Each request is a
    /// stream; [`LoadSpec::streams`] of them at once on each connection.
    Http2,
    /// HTTP/3 over QUIC v1 (always TLS 1.3, ALPN "h3"): each request is a QUIC stream,
    /// [`LoadSpec::streams`] of them at once on each connection.
    Http3,
}

/// How a worker waits once it has read everything there is (the load generator's napping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Coalesce {
    /// Block in `epoll_wait`, woken by every response, as ab and wrk are.
    Off,
    /// Sleep a bounded share of the request cycle when that collects responses in batches;
    /// only with receive stamps, so that no nap is measured as server time.
    Auto,
    /// Sleep this long whenever there is nothing to read.
    Nap(#[serde(with = "humantime_serde")] Duration),
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

/// Which of the generator's engines drives the connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The generator picks: see the load generator's engine choice.
    #[default]
    Auto,
    /// Readiness through epoll, one system call per send and per receive.
    Epoll,
    /// Completions through io_uring, submitted and reaped in batches.
    Uring,
}

impl Engine {
    pub fn is_auto(&self) -> bool {
        *self == Engine::Auto
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Engine::Auto => "auto",
            Engine::Epoll => "epoll",
            Engine::Uring => "uring",
        })
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Engine::Auto),
            "epoll" => Ok(Engine::Epoll),
            "uring" | "io_uring" => Ok(Engine::Uring),
            _ => Err(format!("unknown engine {s:?}: auto, epoll or uring")),
        }
    }
}

/// The load itself, independent of where it is sent and which CPUs make it: what a scenario's
/// `[load]` describes and what `benchctl load`'s flags describe, in one type.
/// Durations are written as people write them (`250ms`, `1m 30s`), exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Requests to perform (ab's `-n`); `None` to run for `duration` alone.
    pub requests: Option<u64>,
    /// Stop issuing requests after this long (ab's `-t`, or a duration-bounded run).
    #[serde(default, with = "humantime_serde")]
    pub duration: Option<Duration>,
    /// Connections at once (ab's `-c`).
    pub concurrency: u32,
    /// Reuse connections where the server agrees (ab's `-k`).
    pub keep_alive: bool,
    pub version: HttpVersion,
    pub method: Method,
    /// Per-request timeout (ab's `-s`).
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Load applied and discarded before measuring.
    #[serde(with = "humantime_serde")]
    pub warmup: Duration,
    /// Constant request rate (requests/s across all workers): an open-model run.
    pub rate: Option<f64>,
    /// Time responses by the kernel's receive stamps rather than by when the generator read
    /// them .
    pub rx_stamps: bool,
    /// How a worker waits for responses once it has caught up.
    pub coalesce: Coalesce,
    /// With `requests`: repeat the load back to back (another `requests` each time, the
    /// connections carrying on) until the measured part has lasted at least this long, and
    /// count all of it. Keeps ab's parameters while giving a load long enough to settle.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde"
    )]
    pub min_duration: Option<Duration>,
    /// HTTP/2 and HTTP/3 only: streams open at once on each connection (h2load's `-m`); 1
    /// otherwise.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// The engine that drives the connections (absent: auto).
    #[serde(default, skip_serializing_if = "Engine::is_auto")]
    pub engine: Engine,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn one() -> u32 {
    1
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
            streams: 1,
            engine: Engine::Auto,
        }
    }
}
