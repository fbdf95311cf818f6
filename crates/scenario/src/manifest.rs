//! A server kind's manifest, `docker/<kind>/server.toml`: what benchctl must know about a
//! server beyond the image contract of `docker/README.md`. The per-kind knowledge lives in the
//! kind's folder, beside its Dockerfile, and the run pipeline holds none of its own:
//!
//! ```toml
//! [server]
//! name = "Varnish Cache"
//! source = "Debian bookworm package `varnish` (7.1)"
//! # Varnish passes its backend's Server header on and names itself in Via.
//! version_header = "via"
//!
//! [container]
//! user = "65534:65534"        # never root
//! capabilities = []           # added back after all are dropped; none is the norm
//! pids_limit = 2048
//! tmpfs = [
//!     { path = "/tmp", size = "64m" },
//!     { path = "/var/lib/varnish", size = "64m", exec = true },
//! ]
//!
//! [options.backend]           # a scenario key of this kind's servers:
//! type = "server"             #   another server of the scenario, started first
//! env = "BENCH_BACKEND"       #   the variable its value is passed in (here: HOST:PORT)
//! required = true
//! help = "the server Varnish caches"
//!
//! [options.storage]
//! type = "size"               # also "integer", "string", "bool"
//! env = "BENCH_CACHE_SIZE"
//! default = "256m"
//! exceeds = "largest_document"  # sizes only: must be larger than every document
//! below = "memory"            # sizes only: must be smaller than the container's memory
//! ```
//!
//! Errors come with file, line and column, as a scenario's do.

use crate::error::{Diagnostics, ScenarioError};
use crate::options::OptionValue;
pub use crate::options::{OptionDecl, OptionType};
use crate::units::parse_size;
use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod container;
use container::check_container;
pub use container::parse_user;

/// The manifest's file name inside a kind's folder.
pub const MANIFEST_FILE: &str = "server.toml";

/// The default of `pids_limit` (its bounds: `container::PIDS_RANGE`).
pub const DEFAULT_PIDS_LIMIT: u32 = 4096;

/// What a server kind declares about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The folder's name: what a scenario's `kind` says.
    pub kind: String,
    /// The file it was read from.
    pub path: PathBuf,
    /// The server's own name ("nginx", "Apache httpd").
    pub name: String,
    /// Where it comes from (package and version, or source release).
    pub source: String,
    /// Which response header names the server's version in results.
    pub version_header: VersionHeader,
    /// It serves HTTPS when started with `BENCH_TLS=1` and the run's certificate and key in
    /// `/etc/benchctl/tls` (`[server] tls = true`).
    pub tls: bool,
    /// With `BENCH_TLS=1` (or `BENCH_HTTP2=1`) it also serves plain HTTP/1.x on
    /// `BENCH_PLAIN_PORT` when given one (`[server] plain_port = true`): how a cache in front of
    /// it (Varnish, whose backends are plain HTTP/1.1) reaches it in a TLS or HTTP/2 run.
    pub plain_port: bool,
    /// It serves HTTP/2 when started with `BENCH_HTTP2=1` (`[server] http2 = true`): by ALPN
    /// over TLS when it also serves TLS, by prior knowledge (h2c) in cleartext.
    pub http2: bool,
    /// It serves HTTP/3 over QUIC on UDP, on the same port number as its HTTPS, when started
    /// with `BENCH_TLS=1` and `BENCH_HTTP3=1` (`[server] http3 = true`, which needs `tls = true`).
    pub http3: bool,
    pub container: ContainerNeeds,
    /// Scenario options of this kind and the environment variable each one sets.
    pub options: BTreeMap<String, OptionDecl>,
}

/// The response header whose value results keep as the server's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionHeader {
    Server,
    /// A proxy that passes its backend's Server header on and names itself in `Via`.
    Via,
}

/// What the server's container must be allowed; everything else is denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerNeeds {
    /// `UID:GID` its processes run as, both numeric and neither 0, written in canonical
    /// decimal (`"0033:33"` reads as `"33:33"`).
    pub user: String,
    /// Linux capabilities added back after all are dropped (without the `CAP_` prefix).
    pub capabilities: Vec<String>,
    /// Writable in-memory mounts: everything else of the image is read-only.
    pub tmpfs: Vec<TmpfsNeed>,
    /// Most processes and threads at once.
    pub pids_limit: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpfsNeed {
    pub path: String,
    pub size: u64,
    /// Programs or shared objects may be run from it.
    pub exec: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    server: Spanned<RawServer>,
    container: Spanned<RawContainer>,
    #[serde(default)]
    options: BTreeMap<Spanned<String>, Spanned<RawOption>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: Spanned<String>,
    source: Spanned<String>,
    version_header: Option<Spanned<String>>,
    #[serde(default)]
    tls: bool,
    #[serde(default)]
    plain_port: bool,
    #[serde(default)]
    http2: bool,
    http3: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContainer {
    user: Spanned<String>,
    #[serde(default)]
    capabilities: Vec<Spanned<String>>,
    tmpfs: Option<Vec<Spanned<RawTmpfs>>>,
    pids_limit: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTmpfs {
    path: Spanned<String>,
    size: Spanned<String>,
    #[serde(default)]
    exec: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOption {
    #[serde(rename = "type")]
    typ: Spanned<String>,
    env: Spanned<String>,
    required: Option<bool>,
    default: Option<Spanned<toml::Value>>,
    exceeds: Option<Spanned<String>>,
    below: Option<Spanned<String>>,
    help: Option<String>,
}

/// Keys of a `[[server]]` table that every kind has; an option may not take one of them.
pub const SERVER_KEYS: &[&str] = &[
    "name", "kind", "context", "image", "memory", "port", "optional", "host",
];

fn check_option(d: &mut Diagnostics, name: &Spanned<String>, o: &RawOption) -> Option<OptionDecl> {
    check_option_name(d, name);
    let typ = option_type(d, &o.typ)?;
    check_option_env(d, &o.env);
    let default = o.default.as_ref().and_then(|v| option_default(d, typ, v));
    let size_only = |d: &mut Diagnostics, key: &str, v: &Spanned<String>, want: &str| {
        if typ != OptionType::Size {
            d.error(v.span(), format!("`{key}` is only for size options"));
            false
        } else if v.get_ref() != want {
            d.error(
                v.span(),
                format!(
                    "`{key} = \"{}\"` is not a bound benchctl knows (use \"{want}\")",
                    v.get_ref()
                ),
            );
            false
        } else {
            true
        }
    };
    let exceeds = o
        .exceeds
        .as_ref()
        .is_some_and(|v| size_only(d, "exceeds", v, "largest_document"));
    let below = o
        .below
        .as_ref()
        .is_some_and(|v| size_only(d, "below", v, "memory"));
    Some(OptionDecl {
        typ,
        env: o.env.get_ref().clone(),
        required: o.required.unwrap_or(false),
        default,
        exceeds_largest_document: exceeds,
        below_memory: below,
        help: o.help.clone().unwrap_or_default(),
    })
}

/// An option's name becomes a scenario key: lowercase, and not one every server has.
fn check_option_name(d: &mut Diagnostics, name: &Spanned<String>) {
    let n = name.get_ref();
    let valid_name = !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid_name {
        d.error(
            name.span(),
            format!("option name `{n}` may only use a-z, 0-9 and _ (it is a scenario key)"),
        );
    } else if SERVER_KEYS.contains(&n.as_str()) {
        d.error(
            name.span(),
            format!(
                "option `{n}` would shadow the [[server]] key of that name (choose another name)"
            ),
        );
    }
}

/// `type`: one of the [`OptionType`]s.
fn option_type(d: &mut Diagnostics, typ: &Spanned<String>) -> Option<OptionType> {
    match typ.get_ref().as_str() {
        "server" => Some(OptionType::Server),
        "size" => Some(OptionType::Size),
        "integer" => Some(OptionType::Integer),
        "string" => Some(OptionType::String),
        "bool" => Some(OptionType::Bool),
        other => {
            d.error(
                typ.span(),
                format!("option type `{other}` is not one benchctl knows (use server, size, integer, string or bool)"),
            );
            None
        }
    }
}

/// `env`: a variable name benchctl does not set itself.
fn check_option_env(d: &mut Diagnostics, env: &Spanned<String>) {
    let span = env.span();
    let env = env.get_ref();
    let valid_env = !env.is_empty()
        && env
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !env.as_bytes()[0].is_ascii_digit();
    if !valid_env {
        d.error(
            span.clone(),
            format!("env `{env}` is not an environment variable name (use A-Z, 0-9 and _)"),
        );
    } else if env == "BENCH_PORT" || env == "BENCH_ADDR" {
        d.error(
            span.clone(),
            format!("{env} is set by benchctl itself (choose another variable)"),
        );
    }
}

/// `default`: a value of the option's type (a server option has none).
fn option_default(
    d: &mut Diagnostics,
    typ: OptionType,
    v: &Spanned<toml::Value>,
) -> Option<OptionValue> {
    let value = match (typ, v.get_ref()) {
        (OptionType::Size, toml::Value::Integer(n)) => {
            u64::try_from(*n).ok().map(OptionValue::Size)
        }
        (OptionType::Size, toml::Value::String(t)) => parse_size(t).ok().map(OptionValue::Size),
        (OptionType::Integer, toml::Value::Integer(n)) => Some(OptionValue::Integer(*n)),
        (OptionType::String, toml::Value::String(t)) => Some(OptionValue::Text(t.clone())),
        (OptionType::Bool, toml::Value::Boolean(b)) => Some(OptionValue::Bool(*b)),
        _ => None,
    };
    if value.is_none() {
        d.error(
            v.span(),
            format!(
                "default `{}` is not a {} value{}",
                v.get_ref(),
                typ.as_str(),
                if typ == OptionType::Server {
                    " (a server option has no default: it names another server)"
                } else {
                    ""
                }
            ),
        );
    }
    value
}

impl Manifest {
    /// Reads `<dir>/server.toml`; `dir`'s name is the kind.
    pub fn load(dir: &Path) -> Result<Manifest, ScenarioError> {
        let path = dir.join(MANIFEST_FILE);
        let text = userfile::read_to_string(&path).map_err(|source| ScenarioError::Read {
            path: path.clone(),
            source,
        })?;
        let kind = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Manifest::parse(&text, &path, &kind)
    }

    /// Parses manifest text as if it were the file at `path`.
    pub fn parse(src: &str, path: &Path, kind: &str) -> Result<Manifest, ScenarioError> {
        let mut d = Diagnostics::new(src, path);
        let raw: RawManifest = match toml::from_str(src) {
            Ok(r) => r,
            Err(e) => {
                d.error(
                    e.span().unwrap_or(0..0),
                    format!(
                        "{} (see docker/README.md for the manifest's keys)",
                        e.message().trim().replace('\n', "; ")
                    ),
                );
                return Err(d.finish().expect_err("one error was recorded"));
            }
        };
        let server = raw.server.get_ref();
        let version_header = check_server_table(&mut d, server);
        let container = check_container(&mut d, raw.container.get_ref());
        let mut options = BTreeMap::new();
        for (name, decl) in &raw.options {
            if let Some(o) = check_option(&mut d, name, decl.get_ref()) {
                options.insert(name.get_ref().clone(), o);
            }
        }
        d.finish()?;
        Ok(Manifest {
            kind: kind.to_string(),
            path: path.to_path_buf(),
            name: server.name.get_ref().trim().to_string(),
            source: server.source.get_ref().trim().to_string(),
            version_header,
            tls: server.tls,
            plain_port: server.plain_port,
            http2: server.http2,
            http3: server.http3.as_ref().is_some_and(|h| *h.get_ref()),
            container,
            options,
        })
    }
}

/// The `[server]` table: its name and source said, and the header its version is read from.
fn check_server_table(d: &mut Diagnostics, server: &RawServer) -> VersionHeader {
    if let Some(h3) = &server.http3 {
        if *h3.get_ref() && !server.tls {
            d.error(
                h3.span(),
                "http3 = true needs tls = true: HTTP/3 runs over QUIC, which is always encrypted (serve HTTPS with BENCH_TLS=1 and say tls = true, or remove http3)",
            );
        }
    }
    for (value, key) in [(&server.name, "name"), (&server.source, "source")] {
        if value.get_ref().trim().is_empty() {
            d.error(
                value.span(),
                format!("[server] {key} is empty (say what the server is and where it comes from)"),
            );
        }
    }
    match &server.version_header {
        None => VersionHeader::Server,
        Some(v) => match v.get_ref().as_str() {
            "server" => VersionHeader::Server,
            "via" => VersionHeader::Via,
            other => {
                d.error(
                    v.span(),
                    format!("version_header `{other}` is not one benchctl reads (use \"server\" or \"via\")"),
                );
                VersionHeader::Server
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Manifest, Vec<String>> {
        Manifest::parse(src, Path::new("docker/x/server.toml"), "x").map_err(|e| {
            e.diagnostics()
                .iter()
                .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
                .collect()
        })
    }

    const GOOD: &str = r#"[server]
name = "Varnish Cache"
source = "Debian bookworm package varnish"
version_header = "via"

[container]
user = "65534:65534"
pids_limit = 2048
tmpfs = [{ path = "/tmp", size = "64m" }, { path = "/var/lib/varnish", size = "64m", exec = true }]

[options.backend]
type = "server"
env = "BENCH_BACKEND"
required = true

[options.storage]
type = "size"
env = "BENCH_CACHE_SIZE"
default = "256m"
exceeds = "largest_document"
below = "memory"
"#;

    #[test]
    fn a_full_manifest_reads() {
        let m = parse(GOOD).unwrap();
        assert_eq!(m.kind, "x");
        assert_eq!(m.version_header, VersionHeader::Via);
        assert_eq!(m.container.user, "65534:65534");
        assert_eq!(m.container.pids_limit, 2048);
        assert_eq!(m.container.tmpfs.len(), 2);
        assert!(m.container.tmpfs[1].exec && !m.container.tmpfs[0].exec);
        assert_eq!(m.options["backend"].env, "BENCH_BACKEND");
        assert_eq!(m.options["backend"].typ, OptionType::Server);
        assert!(m.options["backend"].required);
        let storage = &m.options["storage"];
        assert_eq!(storage.default, Some(OptionValue::Size(256 << 20)));
        assert!(storage.exceeds_largest_document && storage.below_memory);
    }

    #[test]
    fn defaults_are_the_least_privilege() {
        let m = parse("[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"33:33\"\n")
            .unwrap();
        assert_eq!(m.version_header, VersionHeader::Server);
        assert!(m.container.capabilities.is_empty());
        assert_eq!(m.container.pids_limit, DEFAULT_PIDS_LIMIT);
        let paths: Vec<&str> = m.container.tmpfs.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, ["/tmp", "/run"]);
    }

    #[test]
    fn http3_is_served_over_tls_only() {
        let m = parse(
            "[server]\nname = \"n\"\nsource = \"s\"\ntls = true\nhttp3 = true\n\
             [container]\nuser = \"33:33\"\n",
        )
        .unwrap();
        assert!(m.tls && m.http3 && !m.http2);
        let m = parse("[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"33:33\"\n")
            .unwrap();
        assert!(!m.http3);
        let errs = parse(
            "[server]\nname = \"n\"\nsource = \"s\"\nhttp3 = true\n[container]\nuser = \"33:33\"\n",
        )
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("4:9: http3 = true needs tls = true"),
            "{errs:?}"
        );
    }

    #[test]
    fn every_mistake_is_located() {
        let errs = parse(
            "[server]\nname = \"\"\nsource = \"s\"\nversion_header = \"x-powered-by\"\n\
             [container]\nuser = \"0:0\"\ncapabilities = [\"NET_RAW\", \"CAP_SETUID\"]\n\
             tmpfs = [{ path = \"tmp\", size = \"1q\" }]\npids_limit = 5\n\
             [options.backend]\ntype = \"server\"\nenv = \"bench-backend\"\n",
        )
        .unwrap_err();
        assert_eq!(errs.len(), 8, "{errs:#?}");
        assert!(errs[0].starts_with("2:8: [server] name is empty"));
        assert!(errs[1].starts_with("4:18: version_header `x-powered-by`"));
        assert!(errs[2].starts_with("6:8: user `0:0` is root"));
        assert!(errs[3].starts_with("7:17: capability `NET_RAW`"));
        assert!(errs[4].starts_with("8:19: tmpfs path `tmp`"));
        assert!(errs[5].starts_with("8:33: bad tmpfs size"));
        assert!(errs[6].starts_with("9:14: pids_limit 5"));
        assert!(errs[7].starts_with("12:7: env `bench-backend`"));
    }

    #[test]
    fn root_is_refused_however_it_is_spelled() {
        for root in [
            "0:0",
            "00:00",
            "0000:0000",
            "0:33",
            "+0:33",
            "root:root",
            "0",
            "00",
        ] {
            let src =
                format!("[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"{root}\"\n");
            let errs = parse(&src).unwrap_err();
            assert_eq!(errs.len(), 1, "{root}: {errs:?}");
            assert!(errs[0].starts_with("5:8: user "), "{root}: {errs:?}");
        }
        for (given, why) in [
            ("33:0", "is in group 0"),
            ("33:000", "is in group 0"),
            ("-1:33", "is not a decimal number"),
            ("33", "names no group"),
            ("www-data:www-data", "is not a decimal number"),
            ("4294967295:33", "out of range"),
            (" ", "is empty"),
            ("1:2:3", "is not a decimal number"),
        ] {
            let err = parse_user(given.trim()).unwrap_err();
            assert!(err.contains(why), "{given}: {err}");
        }
        assert_eq!(parse_user("0033:0033"), Ok("33:33".to_string()));
        assert_eq!(parse_user("65534:65534"), Ok("65534:65534".to_string()));
    }

    #[test]
    fn tmpfs_paths_are_compared_normalised() {
        for path in [
            "/srv/www/",
            "/srv//www",
            "/srv/",
            "/srv/www/sub",
            "/proc/sys",
            "/./tmp",
            "/tmp/../srv",
        ] {
            let src = format!(
                "[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"1:1\"\ntmpfs = [{{ path = \"{path}\", size = \"1m\" }}]\n"
            );
            let errs = parse(&src).unwrap_err();
            assert!(errs[0].contains("tmpfs path"), "{path}: {errs:?}");
        }
        let twice = "[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"1:1\"\n\
                     tmpfs = [{ path = \"/run\", size = \"1m\" }, { path = \"/run/\", size = \"1m\" }]\n";
        assert!(parse(twice).unwrap_err()[0].contains("listed twice"));
        let m = parse("[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"1:1\"\ntmpfs = [{ path = \"/var/cache//x/\", size = \"1m\" }]\n").unwrap();
        assert_eq!(m.container.tmpfs[0].path, "/var/cache/x");
    }

    #[test]
    fn options_are_typed_and_their_defaults_checked() {
        let errs = parse(
            "[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"1:1\"\n\
             [options.port]\ntype = \"integer\"\nenv = \"X\"\n\
             [options.cache]\ntype = \"size\"\nenv = \"Y\"\ndefault = true\nbelow = \"disk\"\n\
             [options.mode]\ntype = \"enum\"\nenv = \"Z\"\n\
             [options.up]\ntype = \"server\"\nenv = \"BENCH_ADDR\"\nexceeds = \"largest_document\"\n",
        )
        .unwrap_err();
        assert_eq!(errs.len(), 6, "{errs:#?}");
        assert!(
            errs[0].contains("would shadow the [[server]] key"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("default `true` is not a size value"),
            "{errs:?}"
        );
        assert!(
            errs[2].contains("`below = \"disk\"` is not a bound"),
            "{errs:?}"
        );
        assert!(errs[3].contains("option type `enum`"), "{errs:?}");
        assert!(
            errs[4].contains("BENCH_ADDR is set by benchctl itself"),
            "{errs:?}"
        );
        assert!(
            errs[5].contains("`exceeds` is only for size options"),
            "{errs:?}"
        );
    }

    #[test]
    fn unknown_keys_and_missing_tables_are_errors() {
        let errs = parse(
            "[server]\nname = \"n\"\nsource = \"s\"\n[container]\nuser = \"1:1\"\nprivileged = true\n",
        )
        .unwrap_err();
        assert!(errs[0].contains("unknown field `privileged`"), "{errs:?}");
        let errs = parse("[server]\nname = \"n\"\nsource = \"s\"\n").unwrap_err();
        assert!(errs[0].contains("missing field `container`"), "{errs:?}");
    }
}
