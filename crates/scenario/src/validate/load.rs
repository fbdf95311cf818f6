//! The load keys: `[load]` and each `[document.load]`, checked where they are written and
//! resolved key by key into every document's [`LoadSpec`].

use super::common::Protocol;
use super::limits::{DEFAULT_TIMEOUT, MAX_CONCURRENCY, MAX_STREAMS};
use crate::error::Diagnostics;
use crate::plan::LoadSpec;
use crate::raw::RawLoad;
use crate::units::{parse_coalesce, parse_duration, Coalesce};
use model::{HttpVersion, Method};
use serde_spanned::Spanned;
use std::ops::Range;
use std::time::Duration;

/// One level of load settings (`[load]` or a `[document.load]`) with its values checked.
/// Values that failed their check are dropped and `poisoned` set, so that the merged result
/// does not produce follow-on errors from a value already reported.
#[derive(Default, Clone)]
pub(super) struct LoadLevel {
    pub(super) requests: Option<(u64, Range<usize>)>,
    pub(super) duration: Option<(Duration, Range<usize>)>,
    pub(super) min_duration: Option<(Duration, Range<usize>)>,
    pub(super) concurrency: Option<(u32, Range<usize>)>,
    pub(super) keep_alive: Option<bool>,
    pub(super) http11: Option<bool>,
    pub(super) timeout: Option<Duration>,
    pub(super) warmup: Option<Duration>,
    pub(super) rate: Option<f64>,
    pub(super) head: Option<bool>,
    pub(super) user_timestamps: Option<bool>,
    pub(super) coalesce: Option<Coalesce>,
    pub(super) engine: Option<model::Engine>,
    /// HTTP/2 or HTTP/3 streams per connection.
    pub(super) streams: Option<u32>,
    pub(super) poisoned: bool,
}

pub(super) fn check_load_level(
    d: &mut Diagnostics,
    raw: &RawLoad,
    protocol: &Protocol,
) -> LoadLevel {
    let mut level = LoadLevel {
        keep_alive: raw.keep_alive.as_ref().map(|k| *k.get_ref()),
        user_timestamps: raw.user_timestamps,
        ..LoadLevel::default()
    };
    level.check_connections(d, raw, protocol);
    level.check_amount(d, raw);
    level.check_durations(d, raw);
    level.check_http(d, raw, protocol);
    level.check_request_shape(d, raw, protocol);
    level
}

impl LoadLevel {
    /// `streams` and `keep_alive`, which depend on the scenario's HTTP version.
    fn check_connections(&mut self, d: &mut Diagnostics, raw: &RawLoad, protocol: &Protocol) {
        if let Some(s) = &raw.streams {
            let n = *s.get_ref();
            if protocol.http2.is_none() && protocol.http3.is_none() {
                d.error(
                    s.span(),
                    "streams is the number of requests at once on one HTTP/2 or HTTP/3 connection, and this scenario speaks HTTP/1.x (add http = \"2\" or http = \"3\" at the top of the file, or remove streams)",
                );
                self.poisoned = true;
            } else if n < 1 || n > i64::from(MAX_STREAMS) {
                d.error(
                    s.span(),
                    format!("streams must be 1 to {MAX_STREAMS}, not {n} (requests at once on each connection, as h2load's -m)"),
                );
                self.poisoned = true;
            } else {
                self.streams = Some(n as u32);
            }
        }
        // HTTP/3 without keep-alive is a new QUIC connection (and handshake) per request, as a
        // browser's first visit; HTTP/2 has no such mode.
        if let (Some(line), Some(k)) = (protocol.http2, &raw.keep_alive) {
            if !*k.get_ref() {
                let said = &protocol.said;
                d.error(
                    k.span(),
                    format!("keep_alive = false cannot apply: the scenario speaks HTTP/2 ({said}, line {line}), which keeps its connections open (remove keep_alive)"),
                );
                self.poisoned = true;
            }
        }
    }

    /// `requests` and `concurrency`.
    fn check_amount(&mut self, d: &mut Diagnostics, raw: &RawLoad) {
        if let Some(r) = &raw.requests {
            match u64::try_from(*r.get_ref()) {
                Ok(n) if n >= 1 => self.requests = Some((n, r.span())),
                _ => {
                    d.error(
                        r.span(),
                        format!(
                            "requests must be at least 1, not {} (ab's -n counts requests)",
                            r.get_ref()
                        ),
                    );
                    self.poisoned = true;
                }
            }
        }
        if let Some(c) = &raw.concurrency {
            let n = *c.get_ref();
            if n < 1 {
                d.error(
                    c.span(),
                    format!("concurrency must be at least 1, not {n} (ab's -c is the number of requests in flight)"),
                );
                self.poisoned = true;
            } else if n > i64::from(MAX_CONCURRENCY) {
                d.error(
                    c.span(),
                    format!(
                        "concurrency {n} is more than {MAX_CONCURRENCY} (containers cannot open more than 20,000 files; lower it)"
                    ),
                );
                self.poisoned = true;
            } else {
                self.concurrency = Some((n as u32, c.span()));
            }
        }
    }

    /// `timeout`, `warmup`, `duration` and `min_duration`, and how they combine with
    /// `requests`.
    fn check_durations(&mut self, d: &mut Diagnostics, raw: &RawLoad) {
        let duration = |d: &mut Diagnostics,
                        value: &Option<Spanned<String>>,
                        key: &str,
                        zero_ok: bool| {
            let v = value.as_ref()?;
            match parse_duration(v.get_ref()) {
                Ok(t) if t.is_zero() && !zero_ok => {
                    d.error(v.span(), format!("{key} must be longer than 0s (give it a positive duration such as \"10s\")"));
                    None
                }
                Ok(t) => Some(t),
                Err(msg) => {
                    d.error(v.span(), format!("bad {key}: {msg}"));
                    None
                }
            }
        };
        let before = self.poisoned;
        self.timeout = duration(d, &raw.timeout, "timeout", false);
        self.warmup = duration(d, &raw.warmup, "warmup", true);
        self.duration = duration(d, &raw.duration, "duration", false)
            .zip(raw.duration.as_ref().map(|v| v.span()));
        self.min_duration = duration(d, &raw.min_duration, "min_duration", false)
            .zip(raw.min_duration.as_ref().map(|v| v.span()));
        let failed = |v: &Option<Spanned<String>>, parsed: bool| v.is_some() && !parsed;
        self.poisoned = before
            || failed(&raw.timeout, self.timeout.is_some())
            || failed(&raw.warmup, self.warmup.is_some())
            || failed(&raw.duration, self.duration.is_some())
            || failed(&raw.min_duration, self.min_duration.is_some());

        if let (Some(min), Some(_), None) = (&raw.min_duration, &raw.duration, &raw.requests) {
            d.error(
                min.span(),
                "min_duration repeats a load of `requests` until it lasts that long; a load that runs for a `duration` has no use for it (remove one)",
            );
            self.poisoned = true;
        }
        if let (Some(_), Some(dur)) = (&raw.requests, &raw.duration) {
            d.error(
                dur.span(),
                "requests and duration are both set (keep one: requests stops after a count, duration after a time)",
            );
            self.poisoned = true;
        }
    }

    /// A load's own `http`, which may only repeat an HTTP/1.x version, or the scenario's own.
    fn check_http(&mut self, d: &mut Diagnostics, raw: &RawLoad, protocol: &Protocol) {
        if let Some(h) = &raw.http {
            match (h.get_ref().trim(), protocol.multiplexed()) {
                (v, Some(_)) if !protocol.each.is_empty() => {
                    d.error(
                        h.span(),
                        format!("http = \"{v}\" cannot apply: the scenario measures every document over each version of its list ({}): remove this one", protocol.said),
                    );
                    self.poisoned = true;
                }
                (v @ ("2" | "3"), None) => {
                    d.error(
                        h.span(),
                        format!("HTTP/{v} is chosen for the whole scenario, not per load, as the servers are started for it (write http = \"{v}\" at the top of the file, before any table)"),
                    );
                    self.poisoned = true;
                }
                (v @ ("2" | "3"), Some((c, _, _))) if v == c => {}
                (v @ ("1.0" | "1.1" | "2" | "3"), Some((c, said, line))) => {
                    d.error(
                        h.span(),
                        format!("http = \"{v}\" cannot apply: the scenario speaks HTTP/{c} ({said}, line {line}) in every load (remove this one, or the top-level http)"),
                    );
                    self.poisoned = true;
                }
                ("1.0", None) => self.http11 = Some(false),
                ("1.1", None) => self.http11 = Some(true),
                (other, _) => {
                    d.error(
                        h.span(),
                        format!("http version `{other}` is not supported (use \"1.0\" or \"1.1\")"),
                    );
                    self.poisoned = true;
                }
            }
        }
    }

    /// `rate`, `coalesce` and `method`: how requests are sent.
    fn check_request_shape(&mut self, d: &mut Diagnostics, raw: &RawLoad, protocol: &Protocol) {
        if let Some(r) = &raw.rate {
            let rate = *r.get_ref();
            if rate.is_finite() && rate > 0.0 {
                self.rate = Some(rate);
            } else {
                d.error(
                    r.span(),
                    format!("rate must be a positive number of requests per second, not {rate} (remove it to send as fast as possible)"),
                );
                self.poisoned = true;
            }
        }
        if let Some(c) = &raw.coalesce {
            match parse_coalesce(c.get_ref()) {
                Ok(v) => self.coalesce = Some(v),
                Err(msg) => {
                    d.error(c.span(), format!("bad coalesce: {msg}"));
                    self.poisoned = true;
                }
            }
        }
        if let Some(e) = &raw.engine {
            match e.get_ref().parse() {
                Ok(model::Engine::Uring) if protocol.beyond_uring().is_some() => {
                    let why = protocol.beyond_uring().unwrap_or_default();
                    d.error(
                        e.span(),
                        format!("engine = \"uring\" drives HTTP/1.x and HTTP/2, and {why}: remove engine (the epoll engine runs it), or say engine = \"epoll\""),
                    );
                    self.poisoned = true;
                }
                Ok(v) => self.engine = Some(v),
                Err(msg) => {
                    d.error(e.span(), format!("bad engine: {msg}"));
                    self.poisoned = true;
                }
            }
        }
        if let Some(m) = &raw.method {
            match m.get_ref().as_str() {
                "GET" => self.head = Some(false),
                "HEAD" => self.head = Some(true),
                other => {
                    d.error(
                        m.span(),
                        format!("method `{other}` is not supported (use \"GET\" or \"HEAD\")"),
                    );
                    self.poisoned = true;
                }
            }
        }
    }
}

/// `load` (a document's, resolved) over `version`, for a scenario that measures each document
/// over a list of versions: HTTP/1.1 one request at a time on a connection, HTTP/2 with its
/// connections kept open, HTTP/3 with or without (a QUIC connection per request).
pub(super) fn over(load: &LoadSpec, version: HttpVersion) -> LoadSpec {
    let mut l = load.clone();
    l.version = version;
    match version {
        HttpVersion::Http2 => l.keep_alive = true,
        HttpVersion::Http3 => {}
        HttpVersion::Http10 | HttpVersion::Http11 => l.streams = 1,
    }
    l
}

/// Merges a document's load over the scenario's and applies the cross-field rules.
pub(super) fn resolve_load(
    d: &mut Diagnostics,
    defaults: &LoadLevel,
    own: &LoadLevel,
    protocol: &Protocol,
    doc_span: Range<usize>,
    doc_name: &str,
) -> LoadSpec {
    // requests and duration replace each other: a document asking for a duration does not
    // inherit the scenario's request count.
    let (requests, duration) = if own.requests.is_some() || own.duration.is_some() {
        (own.requests.clone(), own.duration.clone())
    } else {
        (defaults.requests.clone(), defaults.duration.clone())
    };
    let concurrency = own
        .concurrency
        .clone()
        .or_else(|| defaults.concurrency.clone());
    let poisoned = defaults.poisoned || own.poisoned;

    let min_duration = own
        .min_duration
        .clone()
        .or_else(|| defaults.min_duration.clone());
    // A document's own min_duration must have a request count to repeat; one inherited from
    // [load] does not apply where the document runs for a duration instead (as a request count
    // does not). A level setting both is reported with the level.
    if let (Some((_, span)), None, Some(_), None) =
        (&own.min_duration, &requests, &duration, &own.duration)
    {
        d.error(
            span.clone(),
            format!("min_duration repeats a load of `requests` until it lasts that long; document `{doc_name}` runs for a `duration` instead, which has no use for it (remove one)"),
        );
    }
    let has_requests = requests.is_some();
    if requests.is_none() && duration.is_none() && !poisoned {
        d.error(
            doc_span.clone(),
            format!(
                "document `{doc_name}` has neither requests nor duration (set requests = 1000 or duration = \"10s\" in [load] or in its [document.load])"
            ),
        );
    }
    if let (Some((n, n_span)), Some((c, c_span))) = (&requests, &concurrency) {
        if u64::from(*c) > *n {
            // Point at whichever of the two this document set itself; the scenario-wide value
            // otherwise.
            let own_c = own.concurrency.is_some();
            let own_n = own.requests.is_some();
            let span = if own_c || !own_n { c_span } else { n_span };
            d.error(
                span.clone(),
                format!("concurrency {c} is more than requests {n} (ab refuses this; lower concurrency or raise requests)"),
            );
        }
    }
    let http11 = own
        .http11
        .or(defaults.http11)
        .or(protocol.http11)
        .unwrap_or(false);
    // With a list of versions this is the load over HTTP/1.1; `over` makes the others.
    let listed = !protocol.each.is_empty();
    let http2 = protocol.http2.is_some() && !listed;
    let http3 = protocol.http3.is_some() && !listed;
    let streams = own.streams.or(defaults.streams).unwrap_or(1);
    let keep_alive = http2 || own.keep_alive.or(defaults.keep_alive).unwrap_or(false);
    if protocol.http3.is_some() && streams > 1 && !keep_alive && !poisoned {
        d.error(
            doc_span.clone(),
            format!("document `{doc_name}` asks for {streams} streams per connection without keep_alive: over HTTP/3 that is a new QUIC connection per request, which carries one stream (add keep_alive = true, or remove streams)"),
        );
    }
    let rate = own.rate.or(defaults.rate);
    let head = own.head.or(defaults.head).unwrap_or(false);
    let user_timestamps = own
        .user_timestamps
        .or(defaults.user_timestamps)
        .unwrap_or(false);
    LoadSpec {
        requests: requests.map(|(n, _)| n),
        duration: duration.map(|(t, _)| t),
        concurrency: concurrency.map_or(1, |(c, _)| c),
        // HTTP/2 keeps its connections open: a request is a stream on one of them.
        keep_alive,
        version: if http2 {
            HttpVersion::Http2
        } else if http3 {
            HttpVersion::Http3
        } else if http11 {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        },
        method: if head { Method::Head } else { Method::Get },
        timeout: own.timeout.or(defaults.timeout).unwrap_or(DEFAULT_TIMEOUT),
        warmup: own.warmup.or(defaults.warmup).unwrap_or(Duration::ZERO),
        rate,
        rx_stamps: !user_timestamps,
        coalesce: own.coalesce.or(defaults.coalesce).unwrap_or(Coalesce::Auto),
        engine: own.engine.or(defaults.engine).unwrap_or_default(),
        min_duration: min_duration.filter(|_| has_requests).map(|(t, _)| t),
        streams,
    }
}
