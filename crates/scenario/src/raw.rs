//! The scenario file exactly as written: a serde schema that rejects unknown keys and wrong
//! types, keeping the position of every value whose meaning is checked afterwards in
//! `validate`. Nothing here has defaults applied; `scenarios/README.md` documents each key.

use crate::capacity::{not_a_percentile, RawCapacity};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_spanned::Spanned;
use std::fmt;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    /// Required. `[a-z0-9-]+`, used in result file names and container labels.
    pub name: Spanned<String>,
    /// Free text shown in reports.
    pub description: Option<String>,
    /// The reference post this scenario reproduces, e.g. `004_e68670c19e296475.txt`.
    pub seed: Option<String>,
    /// Repetitions of the whole comparison (>= 1, default 1); servers take turns each round.
    pub runs: Option<Spanned<i64>>,
    /// The folder `file` documents must lie in (relative to the scenario file); default: the
    /// scenario's own folder.
    pub documents: Option<Spanned<String>>,
    /// Which CPUs the servers and the load generator may use.
    pub cpus: Option<Spanned<RawCpus>>,
    /// Load defaults for every document.
    pub load: Option<Spanned<RawLoad>>,
    /// `[[server]]` tables, one per server under test.
    #[serde(default)]
    pub server: Vec<Spanned<RawServer>>,
    /// `[[document]]` tables, one per URL measured.
    #[serde(default)]
    pub document: Vec<Spanned<RawDocument>>,
    /// `[capacity]`: a search for the highest rate each server keeps within a latency target.
    pub capacity: Option<Spanned<RawCapacity>>,
    /// `[overload]`: each server held past its capacity, then left to recover.
    pub overload: Option<Spanned<crate::overload::RawOverload>>,
    /// Every server serves HTTPS, with a certificate benchctl makes for the run.
    pub tls: Option<bool>,
    /// The key type of the run's server certificate: `"ecdsa-p256"` (default) or `"rsa-2048"`.
    pub tls_key: Option<Spanned<String>>,
    /// The HTTP version of every load: `"2"` (the servers serve HTTP/2: by ALPN with `tls`, by
    /// prior knowledge without), `"3"` (HTTP/3 over QUIC, always with the run's certificate),
    /// or `"1.1"` / `"1.0"` (the request line of every load that does not set its own `http`);
    /// or a list of `"1.1"`, `"2"` and `"3"`: every document measured over each, over TLS.
    pub http: Option<Spanned<RawHttp>>,
    /// `[[host]]` tables: Docker engines other than the local one that servers may run on.
    #[serde(default)]
    pub host: Vec<Spanned<RawHost>>,
}

/// `[[host]]`: a Docker engine, by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHost {
    /// Unique id, `[a-z0-9-]+`; servers name it in their `host` key.
    pub name: Spanned<String>,
    /// `unix:///path`, `tcp://HOST[:PORT]` or `ssh://[USER@]HOST[:PORT][/SOCKET]`.
    pub url: Spanned<String>,
    /// For `ssh://`: an ssh config file (relative to the scenario file) used instead of the
    /// user's own (ssh's `-F`).
    pub ssh_config: Option<Spanned<String>>,
    /// For `tcp://`: a folder (relative to the scenario file) holding `ca.pem`, `cert.pem` and
    /// `key.pem`.
    pub tls_dir: Option<Spanned<String>>,
    /// For `tcp://` without `tls_dir`: accept plain, unauthenticated TCP.
    pub insecure: Option<Spanned<bool>>,
    /// The IP address the host's servers listen on and are reached at (default: the url's
    /// host when it is an IP address; 127.0.0.1 for `unix://`).
    pub address: Option<Spanned<String>>,
    /// Where its servers' images come from: `"build"` (by its engine, the default) or
    /// `"ship"` (built here and sent to it).
    pub images: Option<Spanned<String>>,
}

/// `[cpus]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCpus {
    /// cpuset list for every server container (default `"1"`).
    pub servers: Option<Spanned<String>>,
    /// cpuset list for the load generator (default `"0"`); must not overlap `servers`.
    pub loadgen: Option<Spanned<String>>,
    /// CPU time each server container may use, in cores (e.g. `0.25`); default: all of its
    /// cpuset.
    pub server_share: Option<Spanned<f64>>,
}

/// `[load]` and `[document.load]`: ApacheBench's parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLoad {
    /// `-n`: total requests (>= 1). Exclusive with `duration`.
    pub requests: Option<Spanned<i64>>,
    /// `-c`: requests in flight at once (1..=10000, <= requests). Default 1, as ab.
    pub concurrency: Option<Spanned<i64>>,
    /// `-k`: reuse connections. Default false, as ab; implied by HTTP/2.
    pub keep_alive: Option<Spanned<bool>>,
    /// `"1.0"` (ab's request line, the default) or `"1.1"`.
    pub http: Option<Spanned<String>>,
    /// Per-request timeout, e.g. `"30s"` (default `"30s"`, as ab's `-s`).
    pub timeout: Option<Spanned<String>>,
    /// Load sent and discarded before measuring, e.g. `"2s"` (default `"0s"`).
    pub warmup: Option<Spanned<String>>,
    /// Measure for this long instead of a request count. Exclusive with `requests`.
    pub duration: Option<Spanned<String>>,
    /// With `requests`: repeat the load back to back until it has lasted this long, e.g.
    /// `"5s"`, counting all of it.
    pub min_duration: Option<Spanned<String>>,
    /// Constant request rate in requests per second (open model); default: as fast as possible.
    pub rate: Option<Spanned<f64>>,
    /// `"GET"` (default) or `"HEAD"`.
    pub method: Option<Spanned<String>>,
    /// Time responses when the generator reads them, as ab does, instead of by the kernel's
    /// receive stamps. Default false.
    pub user_timestamps: Option<bool>,
    /// How the generator waits once caught up: `"auto"` (default), `"off"` or a nap (`"50us"`).
    pub coalesce: Option<Spanned<String>>,
    /// What drives the connections: `"auto"` (default), `"epoll"` or `"uring"`.
    pub engine: Option<Spanned<String>>,
    /// HTTP/2 only: requests in flight at once on each connection (h2load's `-m`); default 1.
    pub streams: Option<Spanned<i64>>,
    /// `[load]` only: the `[[host]]`s whose engines run the load generator, each its share of
    /// the load, instead of this process (default: this process).
    pub generators: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[[server]]`. Keys other than these are the kind's own options, checked against its
/// manifest (`server.toml`), so this table takes any other key and keeps it.
#[derive(Debug, Deserialize)]
pub(crate) struct RawServer {
    /// Unique id, `[a-z0-9-]+`.
    pub name: Spanned<String>,
    /// A server kind: a folder with a Dockerfile and a `server.toml` (in the scenario's folder
    /// or the docker folder). May be left out with `context` (the folder's name) or `image`.
    pub kind: Option<Spanned<String>>,
    /// The kind's folder, relative to the scenario file, for a server kept outside both.
    pub context: Option<Spanned<String>>,
    /// An existing image to run instead of building one.
    pub image: Option<Spanned<String>>,
    /// Container memory limit (default `"1g"`).
    pub memory: Option<Spanned<RawSize>>,
    /// Fixed port; default: a free port chosen at run time.
    pub port: Option<Spanned<i64>>,
    /// The run still succeeds when this server cannot be built or started (default false).
    pub optional: Option<bool>,
    /// The `[[host]]` whose engine runs it; default: the local engine.
    pub host: Option<Spanned<String>>,
    /// Every other key: the kind's options (their positions come from the document itself).
    #[serde(flatten)]
    pub options: std::collections::BTreeMap<String, toml::Value>,
}

/// `[[document]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDocument {
    /// Unique id, `[a-z0-9-]+`.
    pub name: Spanned<String>,
    /// URL path, starting with `/`.
    pub path: Spanned<String>,
    /// hello, html, png or blob. Exclusive with `file`.
    pub generate: Option<Spanned<String>>,
    /// Exact size in bytes for html, png and blob (a number, or `"100m"`).
    pub size: Option<Spanned<RawSize>>,
    /// A file to serve, relative to the scenario file. Exclusive with `generate`.
    pub file: Option<Spanned<String>>,
    /// Overrides of `[load]` for this document.
    pub load: Option<Spanned<RawLoad>>,
}

/// A byte count written either as a TOML integer or as a string with a suffix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawSize {
    Number(i64),
    Text(String),
}

/// The top-level `http`: one version, or a list of them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawHttp {
    One(String),
    Each(Vec<String>),
}

impl<'de> Deserialize<'de> for RawHttp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HttpVisitor;
        impl<'de> Visitor<'de> for HttpVisitor {
            type Value = RawHttp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an HTTP version such as \"2\", or a list such as [\"1.1\", \"2\", \"3\"]",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawHttp, E> {
                Ok(RawHttp::One(v.to_string()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawHttp, A::Error> {
                let mut each = Vec::new();
                while let Some(v) = seq.next_element::<String>()? {
                    each.push(v);
                }
                Ok(RawHttp::Each(each))
            }
        }
        deserializer.deserialize_any(HttpVisitor)
    }
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size in bytes such as 468 or a string such as \"512m\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSize, E> {
                Ok(RawSize::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSize, E> {
                i64::try_from(v)
                    .map(RawSize::Number)
                    .map_err(|_| E::custom("size is too large"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_owned()))
            }
        }
        deserializer.deserialize_any(SizeVisitor)
    }
}

/// The keys each table of a scenario accepts, in the order its struct above declares them. The
/// schema rejects the first unknown key it meets; [`unknown_keys`] finds every one first, so a
/// user fixes them all in one pass. A test holds these lists to the structs'.
pub(crate) mod keys {
    pub const TOP: &[&str] = &[
        "name",
        "description",
        "seed",
        "runs",
        "documents",
        "cpus",
        "load",
        "server",
        "document",
        "capacity",
        "overload",
        "tls",
        "tls_key",
        "http",
        "host",
    ];
    pub const HOST: &[&str] = &[
        "name",
        "url",
        "ssh_config",
        "tls_dir",
        "insecure",
        "address",
        "images",
    ];
    pub const CPUS: &[&str] = &["servers", "loadgen", "server_share"];
    pub const LOAD: &[&str] = &[
        "requests",
        "concurrency",
        "keep_alive",
        "http",
        "timeout",
        "warmup",
        "duration",
        "min_duration",
        "rate",
        "method",
        "user_timestamps",
        "coalesce",
        "engine",
        "streams",
        "generators",
    ];
    /// The keys every server has; the others are its kind's options.
    pub const SERVER: &[&str] = crate::manifest::SERVER_KEYS;
    pub const DOCUMENT: &[&str] = &["name", "path", "generate", "size", "file", "load"];
    pub const CAPACITY: &[&str] = &[
        "p50",
        "p90",
        "p99",
        "p99.9",
        "step",
        "warmup",
        "max_steps",
        "budget",
        "start",
    ];
}

/// The message serde gives for an unknown key, with what to do about it.
pub(crate) fn unknown_key_message(key: &str, known: &[&str]) -> String {
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    // Worded as serde words it, so the message is the same whichever finds the key.
    let expected = match list.as_slice() {
        [one] => format!("expected {one}"),
        [a, b] => format!("expected {a} or {b}"),
        all => format!("expected one of {}", all.join(", ")),
    };
    format!(
        "unknown field `{key}`, {expected} (remove it or correct its spelling; scenarios/README.md lists every key)"
    )
}

/// Every key of `src` (already known to be valid TOML) that its table does not accept, with its
/// position, in no particular order.
pub(crate) fn unknown_keys(src: &str) -> Vec<(std::ops::Range<usize>, String)> {
    use toml::de::{DeTable, DeValue};
    let Ok(top) = DeTable::parse(src) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    fn check(table: &DeTable<'_>, known: &[&str], out: &mut Vec<(std::ops::Range<usize>, String)>) {
        for (k, _) in table.iter() {
            if !known.contains(&k.get_ref().as_ref()) {
                out.push((k.span(), unknown_key_message(k.get_ref(), known)));
            }
        }
    }
    fn tables<'a, 'i>(v: &'a DeValue<'i>) -> Vec<&'a DeTable<'i>> {
        match v {
            DeValue::Table(t) => vec![t],
            DeValue::Array(a) => a
                .iter()
                .filter_map(|e| match e.get_ref() {
                    DeValue::Table(t) => Some(t),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
    let top = top.get_ref();
    check(top, keys::TOP, &mut out);
    for (k, v) in top.iter() {
        // A server's other keys are its kind's options: checked against the kind's manifest.
        let known = match k.get_ref().as_ref() {
            "cpus" => keys::CPUS,
            "load" => keys::LOAD,
            "document" => keys::DOCUMENT,
            "host" => keys::HOST,
            "capacity" => {
                if let DeValue::Table(t) = v.get_ref() {
                    capacity_keys(t, &mut out);
                }
                continue;
            }
            _ => continue,
        };
        for t in tables(v.get_ref()) {
            check(t, known, &mut out);
            if known == keys::DOCUMENT {
                if let Some(l) = t.iter().find(|(k, _)| k.get_ref().as_ref() == "load") {
                    for lt in tables(l.1.get_ref()) {
                        check(lt, keys::LOAD, &mut out);
                    }
                }
            }
        }
    }
    out
}

/// The keys of `[capacity]`: a key that names a percentile it cannot use, or `p99.9` written
/// without quotes (which TOML reads as a table `p99` holding a key `9`), is said to be so.
fn capacity_keys(table: &toml::de::DeTable<'_>, out: &mut Vec<(std::ops::Range<usize>, String)>) {
    for (k, v) in table.iter() {
        let key: &str = k.get_ref().as_ref();
        if keys::CAPACITY.contains(&key) {
            if key.starts_with('p') && matches!(v.get_ref(), toml::de::DeValue::Table(_)) {
                out.push((
                    k.span(),
                    format!("`{key}` holds a table, not a latency (to name p99.9, quote it: \"p99.9\" = \"5ms\"; unquoted, TOML reads the dot as a table)"),
                ));
            }
            continue;
        }
        let looks_like_percentile = key
            .strip_prefix(['p', 'P'])
            .is_some_and(|n| !n.is_empty() && n.parse::<f64>().is_ok());
        let message = if looks_like_percentile {
            format!("{} (or correct its spelling)", not_a_percentile(key))
        } else {
            unknown_key_message(key, keys::CAPACITY)
        };
        out.push((k.span(), message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde's own list of a struct's fields, from its message for an unknown key.
    fn serde_fields<T: serde::de::DeserializeOwned>(tables: &str) -> String {
        let src = format!("{tables}\nzzz_not_a_key = 1\n");
        let e = toml::from_str::<T>(&src)
            .err()
            .expect("an unknown key is refused");
        let m = e.message().to_string();
        m[m.find("expected").expect("serde lists the fields")..].to_string()
    }

    fn ours(known: &[&str]) -> String {
        let m = unknown_key_message("zzz_not_a_key", known);
        let tail = &m[m.find("expected").unwrap()..];
        tail[..tail.find(" (remove").unwrap()].to_string()
    }

    #[test]
    fn the_key_lists_are_the_structs_fields() {
        assert_eq!(serde_fields::<RawLoad>(""), ours(keys::LOAD));
        assert_eq!(serde_fields::<RawCpus>(""), ours(keys::CPUS));
        assert_eq!(
            serde_fields::<RawDocument>("name = \"a\"\npath = \"/\""),
            ours(keys::DOCUMENT)
        );
        assert_eq!(serde_fields::<RawScenario>("name = \"a\""), ours(keys::TOP));
        assert_eq!(serde_fields::<RawCapacity>(""), ours(keys::CAPACITY));
        assert_eq!(
            serde_fields::<RawHost>("name = \"a\"\nurl = \"unix:///x\""),
            ours(keys::HOST)
        );
    }

    #[test]
    fn every_unknown_key_is_found_wherever_it_is() {
        let src = "name = \"x\"\nbogus = 1\n[cpus]\nservrs = \"1\"\n[load]\nconcurency = 1\n\
                   [[server]]\nname = \"a\"\nkind = \"nginx\"\n\
                   [[document]]\nname = \"d\"\npath = \"/\"\ngenerate = \"hello\"\nload = { reqs = 1 }\n";
        let mut found: Vec<String> = unknown_keys(src)
            .into_iter()
            .map(|(span, m)| format!("{}:{}", &src[span], &m[..m.find(',').unwrap()]))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                "bogus:unknown field `bogus`",
                "concurency:unknown field `concurency`",
                "reqs:unknown field `reqs`",
                "servrs:unknown field `servrs`",
            ]
        );
    }
}
