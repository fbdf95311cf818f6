//! Turns the raw schema into a [`Plan`], resolving every default and reporting every
//! semantic error at once (with its position) rather than stopping at the first: a benchmark
//! that fails after ten minutes of image builds because of a typo costs far more than this.

use crate::documents::{HELLO_WORLD, HTML_MIN_SIZE, PNG_MAX_SIZE, PNG_MIN_SIZE};
use crate::error::Diagnostic;
use crate::error::{Diagnostics, ScenarioError};
use crate::kinds::{Kind, Kinds};
use crate::manifest::{Manifest, OptionDecl, OptionType};
use crate::plan::{
    CpuPlan, DocumentSource, DocumentSpec, GeneratorKind, HostImages, HostSpec, HostUrl,
    ImageSource, LoadSpec, OptionValue, Plan, ServerSpec, SourceFile, TlsKey,
};
use crate::raw::{RawHost, RawLoad, RawScenario, RawSize};
use crate::units::{
    describe_bytes, parse_coalesce, parse_cpuset, parse_duration, parse_size, Coalesce,
};
use loadgen::{HttpVersion, Method};
use serde_spanned::Spanned;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// CPU layout on the 2-core machines this runs on: servers on CPU 1, load generator on CPU 0.
pub const DEFAULT_SERVER_CPUS: &str = "1";
pub const DEFAULT_LOADGEN_CPUS: &str = "0";
/// Container memory limit when a server names none.
pub const DEFAULT_MEMORY: u64 = 1 << 30;
/// Docker refuses memory limits below 6 MiB.
pub const MIN_MEMORY: u64 = 6 << 20;
/// ab's default `-s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Containers cannot raise their open-files limit above 20,000; keep well below.
pub const MAX_CONCURRENCY: u32 = 10_000;
/// Names end up in container names and labels; Docker's DNS-label limit.
const MAX_NAME_LEN: usize = 63;
/// The smallest CPU share a server may be given, in cores: below it the kernel's scheduling
/// period (100 ms, of which the server then runs under 5 ms) is what is measured.
pub const MIN_SERVER_SHARE: f64 = 0.05;

pub(crate) fn validate(
    src: &str,
    file: &Path,
    raw: RawScenario,
    kinds: &Kinds,
) -> Result<Plan, ScenarioError> {
    let mut d = Diagnostics::new(src, file);
    let base_dir = file.parent().unwrap_or(Path::new("")).to_path_buf();

    check_name(&mut d, &raw.name, "scenario");
    let runs = match &raw.runs {
        None => 1,
        Some(r) => match u32::try_from(*r.get_ref()) {
            Ok(n) if n >= 1 => n,
            _ => {
                d.error(
                    r.span(),
                    format!(
                        "runs must be a whole number of at least 1, not {} (use 1 for a single round)",
                        r.get_ref()
                    ),
                );
                1
            }
        },
    };
    let cpus = check_cpus(&mut d, &raw);
    let protocol = check_protocol(&mut d, &raw);

    let default_load = match &raw.load {
        Some(l) => check_load_level(&mut d, l.get_ref(), &protocol),
        None => LoadLevel::default(),
    };

    let roots = DocumentRoots::new(&mut d, &raw, &base_dir);
    let documents = check_documents(&mut d, &raw, &roots, &default_load, &protocol);
    let largest = documents.iter().map(|doc| doc.length).max().unwrap_or(0);
    let hosts = check_hosts(&mut d, &raw, &base_dir);
    let (servers, foreign) = check_servers(&mut d, src, &raw, kinds, &base_dir, largest);
    let capacity = raw
        .capacity
        .as_ref()
        .and_then(|c| crate::capacity::check(&mut d, c));
    let tls_key = check_tls_key(&mut d, &raw);
    let generators = check_generators(&mut d, &raw, &servers, &documents);

    if raw.server.is_empty() {
        d.error(
            0..0,
            "the scenario has no servers (add a [[server]] table with a name and kind)",
        );
    }
    if raw.document.is_empty() {
        d.error(
            0..0,
            "the scenario has no documents (add a [[document]] table with a name, path and generate or file)",
        );
    }

    // The scenario's own mistakes first, then those of the manifests of kinds it uses.
    match d.finish() {
        Err(ScenarioError::Invalid { mut errors }) => {
            errors.extend(foreign);
            return Err(ScenarioError::Invalid { errors });
        }
        Err(e) => return Err(e),
        Ok(()) if !foreign.is_empty() => return Err(ScenarioError::Invalid { errors: foreign }),
        Ok(()) => {}
    }
    Ok(Plan {
        name: raw.name.into_inner(),
        description: raw.description.unwrap_or_default(),
        seed: raw.seed,
        source: file.to_path_buf(),
        text: src.to_string(),
        scenario_hash: crate::sha256_hex(src.as_bytes()),
        runs,
        cpus,
        servers,
        documents,
        capacity,
        tls: raw.tls.unwrap_or(false),
        tls_key,
        http2: protocol.http2.is_some(),
        hosts,
        generators,
    })
}

/// `tls_key`: one of [`TlsKey::ALL`], and only where the scenario serves TLS.
fn check_tls_key(d: &mut Diagnostics, raw: &RawScenario) -> TlsKey {
    let Some(k) = &raw.tls_key else {
        return TlsKey::default();
    };
    let Some(key) = TlsKey::ALL
        .into_iter()
        .find(|t| t.as_str() == k.get_ref().as_str())
    else {
        let names: Vec<String> = TlsKey::ALL.iter().map(|t| format!("\"{t}\"")).collect();
        d.error(
            k.span(),
            format!(
                "tls_key `{}` is not a key type benchctl makes (use {})",
                k.get_ref(),
                names.join(" or ")
            ),
        );
        return TlsKey::default();
    };
    if raw.tls != Some(true) {
        d.error(
            k.span(),
            "tls_key sets the key of the run's TLS certificate, but the scenario does not serve TLS (add tls = true, or remove tls_key)",
        );
    }
    key
}

/// `[load] generators`: each a `[[host]]`, once; every server on a host (a server on this
/// machine's engine listens on 127.0.0.1, which no other machine reaches); every load big
/// enough to give each generator a share.
fn check_generators(
    d: &mut Diagnostics,
    raw: &RawScenario,
    servers: &[ServerSpec],
    documents: &[DocumentSpec],
) -> Vec<usize> {
    for doc in &raw.document {
        if let Some(g) = doc
            .get_ref()
            .load
            .as_ref()
            .and_then(|l| l.get_ref().generators.as_ref())
        {
            d.error(
                g.span(),
                "generators are the scenario's, not a document's: set them in [load]",
            );
        }
    }
    let Some(list) = raw
        .load
        .as_ref()
        .and_then(|l| l.get_ref().generators.as_ref())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let names: Vec<&str> = raw
        .host
        .iter()
        .map(|h| h.get_ref().name.get_ref().as_str())
        .collect();
    for g in list.get_ref() {
        match names.iter().position(|n| *n == g.get_ref()) {
            None => d.error(
                g.span(),
                if names.is_empty() {
                    format!(
                        "generator `{}` is not defined (add a [[host]] table with name = \"{}\" and its url)",
                        g.get_ref(),
                        g.get_ref()
                    )
                } else {
                    format!(
                        "generator `{}` is not a [[host]] of this scenario (name one of: {})",
                        g.get_ref(),
                        names.join(", ")
                    )
                },
            ),
            Some(i) if out.contains(&i) => d.error(
                g.span(),
                format!("generator `{}` is named twice (each host runs one generator)", g.get_ref()),
            ),
            Some(i) => out.push(i),
        }
    }
    if list.get_ref().is_empty() {
        d.error(
            list.span(),
            "generators is empty (name at least one [[host]], or leave generators out to generate the load here)",
        );
    }
    if out.is_empty() {
        return out;
    }
    if let Some(s) = servers.iter().find(|s| s.host.is_none()) {
        d.error(
            list.span(),
            format!(
                "server `{}` runs on this machine's engine and listens on 127.0.0.1, which generators on other hosts cannot reach: give it a host, or leave generators out",
                s.name
            ),
        );
    }
    let n = out.len();
    for doc in documents {
        if doc.load.concurrency < n as u32 {
            d.error(
                list.span(),
                format!(
                    "document `{}`: concurrency {} cannot be shared among {n} generators (each needs at least one connection)",
                    doc.name, doc.load.concurrency
                ),
            );
        }
        if let Some(r) = doc.load.requests.filter(|&r| r < n as u64) {
            d.error(
                list.span(),
                format!(
                    "document `{}`: requests = {r} cannot be shared among {n} generators (each needs at least one)",
                    doc.name
                ),
            );
        }
    }
    out
}

/// Engine ports when the URL gives none, as Docker's own client assumes them.
const DOCKER_TLS_PORT: u16 = 2376;
const DOCKER_PLAIN_PORT: u16 = 2375;

/// The `[[host]]` tables: names, URLs, TLS folders, the plain-TCP consent and addresses.
fn check_hosts(d: &mut Diagnostics, raw: &RawScenario, base_dir: &Path) -> Vec<HostSpec> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut hosts = Vec::new();
    for h in &raw.host {
        let h = h.get_ref();
        check_name(d, &h.name, "host");
        let name = h.name.get_ref().as_str();
        if let Some(first) = names.insert(name, line_of(d, h.name.span())) {
            d.error(
                h.name.span(),
                format!("duplicate host name `{name}` (first used on line {first}; rename one)"),
            );
        }
        if let Some(spec) = check_host(d, h, base_dir) {
            hosts.push(spec);
        }
    }
    hosts
}

fn check_host(d: &mut Diagnostics, h: &RawHost, base_dir: &Path) -> Option<HostSpec> {
    let name = h.name.get_ref().as_str();
    // First, so that its mistake is reported beside the URL's.
    let images = check_host_images(d, h);
    let url_text = h.url.get_ref().trim();
    let url_span = h.url.span();
    let only_tcp = |d: &mut Diagnostics, key: &str, span: Range<usize>| {
        d.error(
            span,
            format!(
                "{key} applies to tcp:// engines only, and host `{name}` is {url_text} (remove it)"
            ),
        );
    };
    if let Some(c) = &h.ssh_config {
        if !url_text.starts_with("ssh://") {
            d.error(
                c.span(),
                format!("ssh_config applies to ssh:// engines only, and host `{name}` is {url_text} (remove it)"),
            );
        }
    }
    let url = if let Some(path) = url_text.strip_prefix("unix://") {
        if let Some(t) = &h.tls_dir {
            only_tcp(d, "tls_dir", t.span());
        }
        if let Some(i) = &h.insecure {
            only_tcp(d, "insecure", i.span());
        }
        if !path.starts_with('/') {
            d.error(
                url_span.clone(),
                format!("`{url_text}` needs an absolute socket path (write it as unix:///var/run/docker.sock)"),
            );
            return None;
        }
        HostUrl::Unix {
            path: PathBuf::from(path),
        }
    } else if let Some(rest) = url_text.strip_prefix("tcp://") {
        let tls_dir = h.tls_dir.as_ref().and_then(|t| {
            let dir = base_dir.join(t.get_ref());
            let missing: Vec<&str> = ["ca.pem", "cert.pem", "key.pem"]
                .into_iter()
                .filter(|f| !dir.join(f).is_file())
                .collect();
            if missing.is_empty() {
                Some(dir)
            } else {
                d.error(
                    t.span(),
                    format!(
                        "tls_dir `{}` ({}) has no {} (a TLS folder holds the engine's CA certificate, ca.pem, and this client's certificate and key, cert.pem and key.pem)",
                        t.get_ref(),
                        dir.display(),
                        missing.join(", ")
                    ),
                );
                None
            }
        });
        let insecure = h.insecure.as_ref().is_some_and(|i| *i.get_ref());
        match (&h.tls_dir, &h.insecure) {
            (Some(_), Some(i)) if *i.get_ref() => d.error(
                i.span(),
                format!("host `{name}` has both tls_dir and insecure = true (with TLS the connection is not insecure: remove insecure)"),
            ),
            (None, _) if !insecure => d.error(
                url_span.clone(),
                format!(
                    "`{url_text}` is plain, unauthenticated TCP: whoever reaches that port controls the engine and its machine (add tls_dir = \"FOLDER\" with ca.pem, cert.pem and key.pem, or insecure = true to accept it on a network you trust)"
                ),
            ),
            _ => {}
        }
        let rest = rest.trim_end_matches('/');
        let (host, port) = match split_host_port(rest) {
            Some(hp) => hp,
            None => {
                d.error(
                    url_span.clone(),
                    format!("`{url_text}` is not tcp://HOST or tcp://HOST:PORT (a port is 1-65535; an IPv6 address goes in brackets: tcp://[fd00::5]:2376)"),
                );
                return None;
            }
        };
        let port = port.unwrap_or(if h.tls_dir.is_some() {
            DOCKER_TLS_PORT
        } else {
            DOCKER_PLAIN_PORT
        });
        if h.tls_dir.is_some() && tls_dir.is_none() {
            return None;
        }
        HostUrl::Tcp {
            host,
            port,
            tls_dir,
        }
    } else if let Some(rest) = url_text.strip_prefix("ssh://") {
        if let Some(t) = &h.tls_dir {
            only_tcp(d, "tls_dir", t.span());
        }
        if let Some(i) = &h.insecure {
            only_tcp(d, "insecure", i.span());
        }
        let (authority, socket) = match rest.find('/') {
            Some(i) => (&rest[..i], PathBuf::from(&rest[i..])),
            None => (rest, PathBuf::from("/var/run/docker.sock")),
        };
        let (user, host_port) = match authority.rsplit_once('@') {
            Some((u, hp)) => (Some(u), hp),
            None => (None, authority),
        };
        let user_ok = user.is_none_or(|u| {
            !u.is_empty()
                && !u.starts_with('-')
                && u.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        });
        let Some((host, port)) = split_host_port(host_port).filter(|(h, _)| !h.starts_with('-'))
        else {
            d.error(
                url_span.clone(),
                format!("`{url_text}` is not ssh://[USER@]HOST[:PORT][/SOCKET] (an IPv6 address goes in brackets: ssh://bench@[fd00::5])"),
            );
            return None;
        };
        if !user_ok {
            d.error(
                url_span.clone(),
                format!("`{url_text}`: the user name may hold letters, digits, -, _ and . only"),
            );
            return None;
        }
        let config = h.ssh_config.as_ref().and_then(|c| {
            let file = base_dir.join(c.get_ref());
            if file.is_file() {
                Some(file)
            } else {
                d.error(
                    c.span(),
                    format!(
                        "ssh_config `{}` ({}) is not a file",
                        c.get_ref(),
                        file.display()
                    ),
                );
                None
            }
        });
        if h.ssh_config.is_some() && config.is_none() {
            return None;
        }
        HostUrl::Ssh {
            destination: match user {
                Some(u) => format!("{u}@{host}"),
                None => host,
            },
            port,
            socket,
            config,
        }
    } else {
        d.error(
            url_span,
            format!("`{url_text}` is not a Docker engine URL (write unix:///var/run/docker.sock, ssh://USER@HOST, tcp://HOST:2376 with tls_dir, or tcp://HOST:2375 with insecure = true)"),
        );
        return None;
    };
    let address = match &h.address {
        Some(a) => match a.get_ref().trim().parse::<IpAddr>() {
            Ok(ip) => ip,
            Err(_) => {
                d.error(
                    a.span(),
                    format!("address `{}` is not an IP address (servers listen on an address such as 10.0.0.5 or fd00::5)", a.get_ref()),
                );
                return None;
            }
        },
        None => match &url {
            HostUrl::Unix { .. } => IpAddr::V4(Ipv4Addr::LOCALHOST),
            HostUrl::Ssh {
                destination: host, ..
            }
            | HostUrl::Tcp { host, .. } => match host
                .rsplit_once('@')
                .map_or(host.as_str(), |(_, h)| h)
                .parse::<IpAddr>()
            {
                Ok(ip) => ip,
                Err(_) => {
                    d.error(
                        h.url.span(),
                        format!("host `{name}` is named `{host}`, not by an IP address: add address = \"<its IP>\" (its servers listen on that address and the load is sent there)"),
                    );
                    return None;
                }
            },
        },
    };
    Some(HostSpec {
        name: name.to_string(),
        url,
        address,
        images: images?,
    })
}

/// `images`: one of [`HostImages::ALL`]; `None` (an error recorded) for any other word.
fn check_host_images(d: &mut Diagnostics, h: &RawHost) -> Option<HostImages> {
    let Some(i) = &h.images else {
        return Some(HostImages::default());
    };
    let found = HostImages::ALL
        .into_iter()
        .find(|m| m.as_str() == i.get_ref().trim());
    if found.is_none() {
        d.error(
            i.span(),
            format!(
                "images `{}` is not a way to give host `{}` its images (write \"build\": its engine builds them, or \"ship\": they are built here and sent to it, for a host that reaches no package mirror)",
                i.get_ref(),
                h.name.get_ref()
            ),
        );
    }
    found
}

/// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`.
fn split_host_port(text: &str) -> Option<(String, Option<u16>)> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p >= 1);
    let (host, p) = if let Some(inner) = text.strip_prefix('[') {
        let (h, after) = inner.split_once(']')?;
        match after {
            "" => (h, None),
            _ => (h, Some(port(after.strip_prefix(':')?)?)),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(port(p)?)),
            Some(_) => return None, // an IPv6 address without brackets
            None => (text, None),
        }
    };
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
    valid.then(|| (host.to_string(), p))
}

fn check_name(d: &mut Diagnostics, name: &Spanned<String>, what: &str) {
    let n = name.get_ref();
    let valid_chars = n
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if n.is_empty() {
        d.error(
            name.span(),
            format!("{what} name is empty (use letters a-z, digits and -)"),
        );
    } else if !valid_chars {
        let suggestion: String = n
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        d.error(
            name.span(),
            format!(
                "{what} name `{n}` may only use a-z, 0-9 and - (rename it, e.g. `{suggestion}`)"
            ),
        );
    } else if n.len() > MAX_NAME_LEN {
        d.error(
            name.span(),
            format!("{what} name `{n}` is longer than {MAX_NAME_LEN} characters (shorten it)"),
        );
    }
}

fn check_cpus(d: &mut Diagnostics, raw: &RawScenario) -> CpuPlan {
    let table = raw.cpus.as_ref();
    let field = |f: fn(&crate::raw::RawCpus) -> &Option<Spanned<String>>| {
        table.and_then(|t| f(t.get_ref()).as_ref())
    };
    let mut parse = |value: Option<&Spanned<String>>, default: &str| match value {
        None => Some(parse_cpuset(default).expect("default cpuset parses")),
        Some(v) => match parse_cpuset(v.get_ref()) {
            Ok(cpus) => Some(cpus),
            Err(msg) => {
                d.error(v.span(), msg);
                None
            }
        },
    };
    let servers_value = field(|c| &c.servers);
    let loadgen_value = field(|c| &c.loadgen);
    let servers = parse(servers_value, DEFAULT_SERVER_CPUS);
    let loadgen = parse(loadgen_value, DEFAULT_LOADGEN_CPUS);
    if let (Some(s), Some(l)) = (&servers, &loadgen) {
        let shared: Vec<usize> = s.iter().copied().filter(|c| l.contains(c)).collect();
        if !shared.is_empty() {
            let span = loadgen_value
                .or(servers_value)
                .map(|v| v.span())
                .or_else(|| table.map(|t| t.span()))
                .unwrap_or(0..0);
            d.error(
                span,
                format!(
                    "loadgen CPUs and server CPUs overlap on {} (give them separate CPUs, e.g. servers = \"1\" and loadgen = \"0\")",
                    crate::units::format_cpuset(&shared)
                ),
            );
        }
    }
    let server_share = table
        .and_then(|t| t.get_ref().server_share.as_ref())
        .and_then(|v| {
            let share = *v.get_ref();
            let cores = servers.as_ref().map_or(0, Vec::len);
            if !(share.is_finite() && share >= MIN_SERVER_SHARE) {
                d.error(
                    v.span(),
                    format!("server_share must be at least {MIN_SERVER_SHARE} of a core, not {share} (it is the CPU time each server may use, e.g. 0.25)"),
                );
                None
            } else if cores > 0 && share > cores as f64 {
                d.error(
                    v.span(),
                    format!("server_share {share} is more than the {cores} CPU(s) the servers have (servers = {:?}); lower it, or give the servers more CPUs", crate::units::format_cpuset(servers.as_deref().unwrap_or_default())),
                );
                None
            } else {
                Some(share)
            }
        });
    CpuPlan {
        servers: servers.unwrap_or_default(),
        loadgen: loadgen.unwrap_or_default(),
        server_share,
    }
}

/// Most streams at once on one HTTP/2 connection a scenario may ask for: above what the servers
/// here allow (nginx 128, Apache, H2O and Varnish 100, Caddy 250) a client cannot open more.
pub const MAX_STREAMS: u32 = 1000;

/// The scenario's top-level `http`: the HTTP version of every load.
#[derive(Default)]
struct Protocol {
    /// `http = "2"`, with the line it is on.
    http2: Option<usize>,
    /// `http = "1.1"` (true) or `"1.0"` (false): the request line of loads that name none.
    http11: Option<bool>,
}

fn check_protocol(d: &mut Diagnostics, raw: &RawScenario) -> Protocol {
    let Some(h) = &raw.http else {
        return Protocol::default();
    };
    match h.get_ref().trim() {
        "2" => Protocol {
            http2: Some(line_of(d, h.span())),
            http11: None,
        },
        "1.1" => Protocol {
            http2: None,
            http11: Some(true),
        },
        "1.0" => Protocol {
            http2: None,
            http11: Some(false),
        },
        other => {
            d.error(
                h.span(),
                format!("http version `{other}` is not supported (use \"2\" for HTTP/2, or \"1.1\" or \"1.0\")"),
            );
            Protocol::default()
        }
    }
}

/// One level of load settings (`[load]` or a `[document.load]`) with its values checked.
/// Values that failed their check are dropped and `poisoned` set, so that the merged result
/// does not produce follow-on errors from a value already reported.
#[derive(Default, Clone)]
struct LoadLevel {
    requests: Option<(u64, Range<usize>)>,
    duration: Option<(Duration, Range<usize>)>,
    min_duration: Option<(Duration, Range<usize>)>,
    concurrency: Option<(u32, Range<usize>)>,
    keep_alive: Option<bool>,
    http11: Option<bool>,
    timeout: Option<Duration>,
    warmup: Option<Duration>,
    rate: Option<f64>,
    head: Option<bool>,
    user_timestamps: Option<bool>,
    coalesce: Option<Coalesce>,
    /// HTTP/2 streams per connection.
    streams: Option<u32>,
    poisoned: bool,
}

fn check_load_level(d: &mut Diagnostics, raw: &RawLoad, protocol: &Protocol) -> LoadLevel {
    let mut level = LoadLevel {
        keep_alive: raw.keep_alive.as_ref().map(|k| *k.get_ref()),
        user_timestamps: raw.user_timestamps,
        ..LoadLevel::default()
    };
    if let Some(s) = &raw.streams {
        let n = *s.get_ref();
        if protocol.http2.is_none() {
            d.error(
                s.span(),
                "streams is the number of requests at once on one HTTP/2 connection, and this scenario speaks HTTP/1.x (add http = \"2\" at the top of the file, or remove streams)",
            );
            level.poisoned = true;
        } else if n < 1 || n > i64::from(MAX_STREAMS) {
            d.error(
                s.span(),
                format!("streams must be 1 to {MAX_STREAMS}, not {n} (requests at once on each HTTP/2 connection, as h2load's -m)"),
            );
            level.poisoned = true;
        } else {
            level.streams = Some(n as u32);
        }
    }
    if let (Some(line), Some(k)) = (protocol.http2, &raw.keep_alive) {
        if !*k.get_ref() {
            d.error(
                k.span(),
                format!("keep_alive = false cannot apply: the scenario speaks HTTP/2 (http = \"2\", line {line}), which keeps its connections open (remove keep_alive)"),
            );
            level.poisoned = true;
        }
    }
    if let Some(r) = &raw.requests {
        match u64::try_from(*r.get_ref()) {
            Ok(n) if n >= 1 => level.requests = Some((n, r.span())),
            _ => {
                d.error(
                    r.span(),
                    format!(
                        "requests must be at least 1, not {} (ab's -n counts requests)",
                        r.get_ref()
                    ),
                );
                level.poisoned = true;
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
            level.poisoned = true;
        } else if n > i64::from(MAX_CONCURRENCY) {
            d.error(
                c.span(),
                format!(
                    "concurrency {n} is more than {MAX_CONCURRENCY} (containers cannot open more than 20,000 files; lower it)"
                ),
            );
            level.poisoned = true;
        } else {
            level.concurrency = Some((n as u32, c.span()));
        }
    }
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
    let before = level.poisoned;
    level.timeout = duration(d, &raw.timeout, "timeout", false);
    level.warmup = duration(d, &raw.warmup, "warmup", true);
    level.duration =
        duration(d, &raw.duration, "duration", false).zip(raw.duration.as_ref().map(|v| v.span()));
    level.min_duration = duration(d, &raw.min_duration, "min_duration", false)
        .zip(raw.min_duration.as_ref().map(|v| v.span()));
    let failed = |v: &Option<Spanned<String>>, parsed: bool| v.is_some() && !parsed;
    level.poisoned = before
        || failed(&raw.timeout, level.timeout.is_some())
        || failed(&raw.warmup, level.warmup.is_some())
        || failed(&raw.duration, level.duration.is_some())
        || failed(&raw.min_duration, level.min_duration.is_some());

    if let (Some(min), Some(_), None) = (&raw.min_duration, &raw.duration, &raw.requests) {
        d.error(
            min.span(),
            "min_duration repeats a load of `requests` until it lasts that long; a load that runs for a `duration` has no use for it (remove one)",
        );
        level.poisoned = true;
    }
    if let (Some(_), Some(dur)) = (&raw.requests, &raw.duration) {
        d.error(
            dur.span(),
            "requests and duration are both set (keep one: requests stops after a count, duration after a time)",
        );
        level.poisoned = true;
    }
    if let Some(h) = &raw.http {
        match (h.get_ref().trim(), protocol.http2) {
            ("2", None) => {
                d.error(
                    h.span(),
                    "HTTP/2 is chosen for the whole scenario, not per load, as the servers are started for it (write http = \"2\" at the top of the file, before any table)",
                );
                level.poisoned = true;
            }
            ("2", Some(_)) => {}
            (v @ ("1.0" | "1.1"), Some(line)) => {
                d.error(
                    h.span(),
                    format!("http = \"{v}\" cannot apply: the scenario speaks HTTP/2 (http = \"2\", line {line}) in every load (remove this one, or the top-level http)"),
                );
                level.poisoned = true;
            }
            ("1.0", None) => level.http11 = Some(false),
            ("1.1", None) => level.http11 = Some(true),
            (other, _) => {
                d.error(
                    h.span(),
                    format!("http version `{other}` is not supported (use \"1.0\" or \"1.1\")"),
                );
                level.poisoned = true;
            }
        }
    }
    if let Some(r) = &raw.rate {
        let rate = *r.get_ref();
        if rate.is_finite() && rate > 0.0 {
            level.rate = Some(rate);
        } else {
            d.error(
                r.span(),
                format!("rate must be a positive number of requests per second, not {rate} (remove it to send as fast as possible)"),
            );
            level.poisoned = true;
        }
    }
    if let Some(c) = &raw.coalesce {
        match parse_coalesce(c.get_ref()) {
            Ok(v) => level.coalesce = Some(v),
            Err(msg) => {
                d.error(c.span(), format!("bad coalesce: {msg}"));
                level.poisoned = true;
            }
        }
    }
    if let Some(m) = &raw.method {
        match m.get_ref().as_str() {
            "GET" => level.head = Some(false),
            "HEAD" => level.head = Some(true),
            other => {
                d.error(
                    m.span(),
                    format!("method `{other}` is not supported (use \"GET\" or \"HEAD\")"),
                );
                level.poisoned = true;
            }
        }
    }
    level
}

/// Merges a document's load over the scenario's and applies the cross-field rules.
fn resolve_load(
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
    let http2 = protocol.http2.is_some();
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
        keep_alive: http2 || own.keep_alive.or(defaults.keep_alive).unwrap_or(false),
        version: if http2 {
            HttpVersion::Http2
        } else if http11 {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        },
        method: if head { Method::Head } else { Method::Get },
        timeout: own.timeout.or(defaults.timeout).unwrap_or(DEFAULT_TIMEOUT),
        warmup: own.warmup.or(defaults.warmup).unwrap_or(Duration::ZERO),
        rate: own.rate.or(defaults.rate),
        rx_stamps: !user_timestamps,
        coalesce: own.coalesce.or(defaults.coalesce).unwrap_or(Coalesce::Auto),
        min_duration: min_duration.filter(|_| has_requests).map(|(t, _)| t),
        streams: own.streams.or(defaults.streams).unwrap_or(1),
    }
}

/// Parses a size value, reporting at its position. `key` names it in messages.
fn size_value(d: &mut Diagnostics, value: &Spanned<RawSize>, key: &str) -> Option<u64> {
    let parsed = match value.get_ref() {
        RawSize::Number(n) => u64::try_from(*n).map_err(|_| {
            format!("{key} cannot be negative ({n}); give a size in bytes such as 468 or \"512m\"")
        }),
        RawSize::Text(t) => parse_size(t).map_err(|msg| format!("bad {key}: {msg}")),
    };
    match parsed {
        Ok(n) => Some(n),
        Err(msg) => {
            d.error(value.span(), msg);
            None
        }
    }
}

/// Where `file` documents are looked up, and the one folder they must lie in.
struct DocumentRoots {
    /// `file` paths are relative to the scenario's folder.
    base_dir: PathBuf,
    /// The scenario's folder, or the folder its `documents` key names, with every symlink
    /// resolved; `None` when that could not be resolved (already reported).
    root: Option<PathBuf>,
}

impl DocumentRoots {
    fn new(d: &mut Diagnostics, raw: &RawScenario, base_dir: &Path) -> DocumentRoots {
        let dir_of_scenario = if base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base_dir
        };
        let root = match &raw.documents {
            None => dir_of_scenario.canonicalize().ok(),
            Some(v) => {
                let given = v.get_ref();
                let joined = dir_of_scenario.join(given);
                match joined.canonicalize() {
                    Ok(p) if p.is_dir() && p != Path::new("/") => Some(p),
                    Ok(p) if p.is_dir() => {
                        d.error(
                            v.span(),
                            "documents = \"/\" would let a scenario serve any file of this machine (name the folder that holds its documents)",
                        );
                        None
                    }
                    Ok(_) => {
                        d.error(
                            v.span(),
                            format!("documents `{given}` is not a folder (name the folder that holds the scenario's files)"),
                        );
                        None
                    }
                    Err(e) => {
                        d.error(
                            v.span(),
                            format!("documents folder `{given}` cannot be used: {e} (looked for {}; paths are relative to the scenario file)", joined.display()),
                        );
                        None
                    }
                }
            }
        };
        DocumentRoots {
            base_dir: base_dir.to_path_buf(),
            root,
        }
    }
}

fn check_documents(
    d: &mut Diagnostics,
    raw: &RawScenario,
    roots: &DocumentRoots,
    default_load: &LoadLevel,
    protocol: &Protocol,
) -> Vec<DocumentSpec> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut url_paths: HashMap<&str, usize> = HashMap::new();
    let mut disk_paths: HashMap<PathBuf, (usize, &str)> = HashMap::new();
    let mut docs = Vec::new();

    for doc in &raw.document {
        let table_span = doc.span();
        let doc = doc.get_ref();
        let name = doc.name.get_ref().as_str();
        check_name(d, &doc.name, "document");
        if let Some(first) = names.insert(name, line_of(d, doc.name.span())) {
            d.error(
                doc.name.span(),
                format!(
                    "duplicate document name `{name}` (first used on line {first}; rename one)"
                ),
            );
        }

        let url = doc.path.get_ref().as_str();
        let disk_path = match check_url_path(url) {
            Ok(p) => Some(p),
            Err(msg) => {
                d.error(doc.path.span(), msg);
                None
            }
        };
        if let Some(first) = url_paths.insert(url, line_of(d, doc.path.span())) {
            d.error(
                doc.path.span(),
                format!("duplicate document path `{url}` (first used on line {first}; give each document its own path)"),
            );
        } else if let Some(disk) = &disk_path {
            if let Some((first, other)) = disk_paths.get(disk) {
                d.error(
                    doc.path.span(),
                    format!(
                        "document path `{url}` is served from the same file as `{other}` on line {first} (`/` paths serve index.html; use a different path)"
                    ),
                );
            } else {
                disk_paths.insert(disk.clone(), (line_of(d, doc.path.span()), url));
            }
        }

        let source = check_source(d, doc, table_span.clone(), roots);
        let own_load = match &doc.load {
            Some(l) => check_load_level(d, l.get_ref(), protocol),
            None => LoadLevel::default(),
        };
        let load = resolve_load(d, default_load, &own_load, protocol, table_span, name);
        if let (Some(disk_path), Some((source, length))) = (disk_path, source) {
            docs.push(DocumentSpec {
                name: name.to_owned(),
                path: url.to_owned(),
                disk_path,
                source,
                length,
                load,
            });
        }
    }

    // A document at /a and another at /a/b cannot both exist on disk: /a would have to be a
    // file and a folder at once.
    for (disk, (_, url)) in &disk_paths {
        for ancestor in disk.ancestors().skip(1) {
            if let Some((other_line, other_url)) = disk_paths.get(ancestor) {
                let span = raw
                    .document
                    .iter()
                    .find(|doc| doc.get_ref().path.get_ref() == url)
                    .map_or(0..0, |doc| doc.get_ref().path.span());
                d.error(
                    span,
                    format!(
                        "document path `{url}` lies inside `{other_url}` (line {other_line}), which is a file (move one of them)"
                    ),
                );
            }
        }
    }
    docs
}

fn line_of(d: &Diagnostics, span: Range<usize>) -> usize {
    d.line_column(span.start).0
}

/// Checks a URL path and maps it to its place under the document root.
fn check_url_path(url: &str) -> Result<PathBuf, String> {
    if !url.starts_with('/') {
        return Err(format!(
            "document path `{url}` must start with / (write it as `/{url}`)"
        ));
    }
    if let Some(bad) = url
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "/._-~".contains(*c)))
    {
        return Err(format!(
            "document path `{url}` contains `{bad}` (use only letters, digits, /, ., _, - and ~, so every server maps it to the same file)"
        ));
    }
    let mut relative = PathBuf::new();
    let segments: Vec<&str> = url[1..].split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "" if last => relative.push("index.html"),
            "" => return Err(format!("document path `{url}` has an empty segment (remove the doubled /)")),
            "." | ".." => {
                return Err(format!("document path `{url}` contains `{segment}` (write the path without . or .. segments)"))
            }
            s => relative.push(s),
        }
    }
    debug_assert!(relative
        .components()
        .all(|c| matches!(c, Component::Normal(_))));
    Ok(relative)
}

/// Checks `generate`/`size`/`file` and returns the source and its exact length.
fn check_source(
    d: &mut Diagnostics,
    doc: &crate::raw::RawDocument,
    table_span: Range<usize>,
    roots: &DocumentRoots,
) -> Option<(DocumentSource, u64)> {
    let name = doc.name.get_ref();
    match (&doc.generate, &doc.file) {
        (Some(_), Some(file)) => {
            d.error(
                file.span(),
                format!("document `{name}` has both generate and file (keep one: generate makes the bytes, file serves yours)"),
            );
            None
        }
        (None, None) => {
            d.error(
                table_span,
                format!("document `{name}` has neither generate nor file (add generate = \"html\" with a size, or file = \"path/to/file\")"),
            );
            None
        }
        (None, Some(file)) => {
            if let Some(size) = &doc.size {
                d.error(
                    size.span(),
                    "size is only for generated documents (remove it: a file is served at its own size)",
                );
            }
            let rel = file.get_ref();
            if rel.is_empty() {
                d.error(
                    file.span(),
                    "file is empty (name a file relative to the scenario file)",
                );
                return None;
            }
            let resolved = roots.base_dir.join(rel);
            let meta = match std::fs::metadata(&resolved) {
                Ok(meta) if meta.is_file() => meta,
                Ok(_) => {
                    d.error(
                        file.span(),
                        format!("file `{rel}` is not a regular file (name a file, not a folder)"),
                    );
                    return None;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    d.error(
                        file.span(),
                        format!(
                            "file `{rel}` does not exist (looked for {}; paths are relative to the scenario file)",
                            resolved.display()
                        ),
                    );
                    return None;
                }
                Err(e) => {
                    d.error(
                        file.span(),
                        format!("file `{rel}` cannot be read: {e} (check its permissions)"),
                    );
                    return None;
                }
            };
            // Every server serves its documents to anyone who can connect: a scenario may only
            // name files in its own folder (or the one its `documents` key names), with every
            // symlink resolved, and only files that every user of this machine may read already.
            let root = roots.root.as_ref()?;
            let real = match resolved.canonicalize() {
                Ok(p) => p,
                Err(e) => {
                    d.error(
                        file.span(),
                        format!("file `{rel}` cannot be resolved: {e} (check its path)"),
                    );
                    return None;
                }
            };
            if !real.starts_with(root) {
                d.error(
                    file.span(),
                    format!(
                        "file `{rel}` is outside {} (it is {}): a scenario serves only files inside its own folder, or the folder its `documents` key names (copy the file there)",
                        root.display(),
                        real.display()
                    ),
                );
                return None;
            }
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o004 == 0 {
                d.error(
                    file.span(),
                    format!(
                        "file `{rel}` is not readable by other users (mode {mode:04o}): benchctl serves documents to anyone who can connect to the server, so it serves only files every user may read already (chmod o+r it if it is not secret)"
                    ),
                );
                return None;
            }
            use std::os::unix::fs::MetadataExt;
            Some((
                DocumentSource::File(SourceFile {
                    path: real,
                    dev: meta.dev(),
                    ino: meta.ino(),
                }),
                meta.len(),
            ))
        }
        (Some(generate), None) => {
            let kind = match GeneratorKind::ALL
                .into_iter()
                .find(|k| k.as_str() == generate.get_ref())
            {
                Some(k) => k,
                None => {
                    d.error(
                        generate.span(),
                        format!(
                            "unknown generator `{}` (use one of: hello, html, png, blob; or file = \"...\" for your own)",
                            generate.get_ref()
                        ),
                    );
                    return None;
                }
            };
            let size = match &doc.size {
                Some(s) => size_value(d, s, "size")?,
                None if kind == GeneratorKind::Hello => HELLO_WORLD.len() as u64,
                None => {
                    d.error(
                        generate.span(),
                        format!(
                            "generate = \"{kind}\" needs a size in bytes (add e.g. size = 468)"
                        ),
                    );
                    return None;
                }
            };
            let span = doc.size.as_ref().map_or(generate.span(), |s| s.span());
            let problem = match kind {
                GeneratorKind::Hello if size != HELLO_WORLD.len() as u64 => Some(format!(
                    "hello is always {} bytes, not {size} (remove size, or use html or blob for other sizes)",
                    HELLO_WORLD.len()
                )),
                _ if size == 0 => Some(
                    "size 0 makes an empty document (give at least 1 byte)".to_owned(),
                ),
                GeneratorKind::Html if size < HTML_MIN_SIZE => Some(format!(
                    "an html page cannot be smaller than {HTML_MIN_SIZE} bytes, not {size} (raise size, or use blob for tiny bodies)"
                )),
                GeneratorKind::Png if size < PNG_MIN_SIZE => Some(format!(
                    "the smallest valid PNG is {PNG_MIN_SIZE} bytes, not {size} (raise size)"
                )),
                GeneratorKind::Png if size > PNG_MAX_SIZE => Some(format!(
                    "a PNG of {} is beyond the {} this generator makes (use blob for large files)",
                    describe_bytes(size),
                    describe_bytes(PNG_MAX_SIZE)
                )),
                _ => None,
            };
            if let Some(msg) = problem {
                d.error(span, msg);
                return None;
            }
            Some((DocumentSource::Generated { kind, size }, size))
        }
    }
}

/// One server's entry while its table is checked: its spec, and the names of the servers its
/// server-typed options name (resolved to indices once every server is known).
struct ServerEntry {
    spec: ServerSpec,
    /// (option name, named server, position of the value).
    needs: Vec<(String, String, Range<usize>)>,
}

fn check_servers(
    d: &mut Diagnostics,
    src: &str,
    raw: &RawScenario,
    kinds: &Kinds,
    base_dir: &Path,
    largest_document: u64,
) -> (Vec<ServerSpec>, Vec<Diagnostic>) {
    // Every key of every server table with its position, for the kinds' own options.
    let positions = server_key_positions(src);
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut ports: HashMap<u16, usize> = HashMap::new();
    let mut entries: Vec<Option<ServerEntry>> = Vec::new();
    // Problems in the manifests of the kinds used, reported with their own files.
    let mut foreign: Vec<Diagnostic> = Vec::new();

    for (i, server) in raw.server.iter().enumerate() {
        let table_span = server.span();
        let s = server.get_ref();
        let name = s.name.get_ref().as_str();
        check_name(d, &s.name, "server");
        if let Some(first) = names.insert(name, line_of(d, s.name.span())) {
            d.error(
                s.name.span(),
                format!("duplicate server name `{name}` (first used on line {first}; rename one)"),
            );
        }
        let mut ok = true;

        // Where its image comes from, and what its kind declares.
        let context_kind = s.context.as_ref().and_then(|c| {
            let dir = base_dir.join(c.get_ref());
            match Kind::at(&dir) {
                Some(k) => Some(k),
                None => {
                    d.error(
                        c.span(),
                        format!(
                            "context `{}` is not a server folder: {} needs a Dockerfile and a server.toml (see docker/README.md)",
                            c.get_ref(),
                            dir.display()
                        ),
                    );
                    ok = false;
                    None
                }
            }
        });
        let kind: Option<Kind> = match (&s.kind, context_kind) {
            (_, Some(mut k)) => {
                if let Some(name) = &s.kind {
                    k.name = name.get_ref().clone();
                }
                Some(k)
            }
            (Some(k), None) if s.context.is_none() => match kinds.get(k.get_ref()) {
                Some(found) => Some(found.clone()),
                None => {
                    let found = kinds.names();
                    d.error(
                        k.span(),
                        format!(
                            "unknown server kind `{}` ({}; a kind is a folder with a Dockerfile and a server.toml, see docker/README.md)",
                            k.get_ref(),
                            if found.is_empty() {
                                format!(
                                    "no kinds were found in {}",
                                    kinds
                                        .searched()
                                        .iter()
                                        .map(|p| p.display().to_string())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            } else {
                                format!("kinds found: {}", found.join(", "))
                            }
                        ),
                    );
                    ok = false;
                    None
                }
            },
            (None, None) if s.image.is_none() && s.context.is_none() => {
                d.error(
                    table_span.clone(),
                    format!("server `{name}` has no kind (add kind = \"nginx\" or another kind; or image = \"NAME:TAG\" to run an existing image)"),
                );
                ok = false;
                None
            }
            _ => None,
        };
        if let (Some(k), None) = (&kind, &s.image) {
            if !crate::kinds::names_an_image(&k.name) {
                let span = match (&s.kind, &s.context) {
                    (Some(k), _) => k.span(),
                    (None, Some(c)) => c.span(),
                    (None, None) => table_span.clone(),
                };
                d.error(
                    span,
                    format!(
                        "kind `{}` cannot name an image (benchctl/<kind>:<hash>): {} (rename its folder{})",
                        k.name.escape_debug(),
                        crate::kinds::IMAGE_NAME_RULE,
                        if s.kind.is_some() && s.context.is_some() { ", or the kind key" } else { "" }
                    ),
                );
                ok = false;
            }
        }
        if let Some(k) = &kind {
            if let Err(ds) = &k.manifest {
                if !foreign.iter().any(|f| ds.contains(f)) {
                    foreign.extend(ds.iter().cloned());
                }
                ok = false;
            }
        }
        let manifest = kind
            .as_ref()
            .and_then(|k| k.manifest.as_ref().ok())
            .cloned();
        let image = match (&s.image, &kind) {
            (Some(img), _) => {
                let text = img.get_ref();
                let valid = !text.is_empty()
                    && !text.starts_with(['-', '/', ':'])
                    && text
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"/:._-@".contains(&b));
                if !valid {
                    d.error(
                        img.span(),
                        format!("image `{text}` is not an image reference (write it as NAME:TAG, e.g. \"my-server:1.0\")"),
                    );
                    ok = false;
                }
                Some(ImageSource::Prebuilt {
                    image: text.clone(),
                })
            }
            (None, Some(k)) => Some(ImageSource::Build {
                context: k.dir.clone(),
            }),
            (None, None) => None,
        };
        let kind_name = match (&kind, &s.image) {
            (Some(k), _) => k.name.clone(),
            (None, Some(img)) => image_repository(img.get_ref()),
            (None, None) => String::new(),
        };

        let memory = match &s.memory {
            None => DEFAULT_MEMORY,
            Some(m) => match size_value(d, m, "memory") {
                Some(n) if n < MIN_MEMORY => {
                    d.error(
                        m.span(),
                        format!("memory {} is below Docker's minimum of 6m (raise it; the default is 1g)", describe_bytes(n)),
                    );
                    ok = false;
                    n
                }
                Some(n) => n,
                None => {
                    ok = false;
                    0
                }
            },
        };
        let port = match &s.port {
            None => None,
            Some(p) => match u16::try_from(*p.get_ref()) {
                Ok(n) if n >= 1 => {
                    if let Some(first) = ports.insert(n, line_of(d, p.span())) {
                        d.error(
                            p.span(),
                            format!("port {n} is already used by the server on line {first} (give each server its own port, or remove port to pick one at run time)"),
                        );
                    }
                    Some(n)
                }
                _ => {
                    d.error(
                        p.span(),
                        format!("port {} is not a TCP port (use 1-65535, or remove it to pick a free one at run time)", p.get_ref()),
                    );
                    ok = false;
                    None
                }
            },
        };

        // The kind's own options: every other key of the table.
        let mut options: Vec<(String, OptionValue)> = Vec::new();
        let mut needs = Vec::new();
        let empty = Vec::new();
        let keys = positions.get(i).unwrap_or(&empty);
        let declared = manifest.as_ref().map(|m| &m.options);
        for (key, key_span, value_span) in keys {
            let Some(value) = s.options.get(key) else {
                continue;
            };
            let Some(decl) = declared.and_then(|o| o.get(key)) else {
                if kind.as_ref().is_some_and(|k| k.manifest.is_err()) {
                    continue; // its manifest's errors are reported already
                }
                d.error(
                    key_span.clone(),
                    unknown_server_key(key, name, &kind_name, manifest.as_ref()),
                );
                ok = false;
                continue;
            };
            match option_value(d, key, decl, value, value_span.clone()) {
                Some(OptionValue::Text(target)) if decl.typ == OptionType::Server => {
                    if target == name {
                        d.error(
                            value_span.clone(),
                            format!("server `{name}` cannot name itself as its {key} (name another server of the scenario)"),
                        );
                        ok = false;
                    } else {
                        needs.push((key.clone(), target, value_span.clone()));
                    }
                }
                Some(v) => options.push((key.clone(), v)),
                None => ok = false,
            }
        }
        if let Some(m) = &manifest {
            for (oname, decl) in &m.options {
                if s.options.contains_key(oname) {
                    continue;
                }
                if decl.required {
                    d.error(
                        table_span.clone(),
                        format!(
                            "server `{name}` of kind {kind_name} has no `{oname}`{} (add {oname} = {})",
                            if decl.help.is_empty() { String::new() } else { format!(": {}", decl.help) },
                            match decl.typ {
                                OptionType::Server => "\"<name of another server>\"".to_string(),
                                t => format!("<a {}>", t.as_str()),
                            }
                        ),
                    );
                    ok = false;
                } else if let Some(v) = &decl.default {
                    options.push((oname.clone(), v.clone()));
                }
            }
            // Bounds of sizes: above the largest document, below the memory limit.
            for (oname, v) in &options {
                let (Some(decl), OptionValue::Size(n)) = (m.options.get(oname), v) else {
                    continue;
                };
                let span = keys
                    .iter()
                    .find(|(k, _, _)| k == oname)
                    .map_or(table_span.clone(), |(_, _, vs)| vs.clone());
                if decl.exceeds_largest_document && *n <= largest_document {
                    d.error(
                        span.clone(),
                        format!(
                            "{kind_name} {oname} of {} does not exceed the largest document, {} (raise it, e.g. {oname} = \"{}m\"{})",
                            describe_bytes(*n),
                            describe_bytes(largest_document),
                            (largest_document >> 20) * 2 + 64,
                            if decl.help.is_empty() { String::new() } else { format!("; it is {}", decl.help) }
                        ),
                    );
                    ok = false;
                } else if decl.below_memory && *n >= memory {
                    let mspan = s.memory.as_ref().map_or(table_span.clone(), |m| m.span());
                    d.error(
                        mspan,
                        format!(
                            "memory {} does not exceed {kind_name} {oname} {} (raise memory above {oname})",
                            describe_bytes(memory),
                            describe_bytes(*n)
                        ),
                    );
                    ok = false;
                }
            }
            // The manifest's order, whatever order the table had.
            options.sort_by_key(|(k, _)| m.options.keys().position(|o| o == k));
        }
        let host = s.host.as_ref().and_then(|h| {
            let found = raw
                .host
                .iter()
                .position(|t| t.get_ref().name.get_ref() == h.get_ref());
            if found.is_none() {
                let mut names: Vec<&str> = Vec::new();
                for t in &raw.host {
                    let n = t.get_ref().name.get_ref().as_str();
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
                d.error(
                    h.span(),
                    if names.is_empty() {
                        format!("host `{}` is not defined (add a [[host]] table with name = \"{}\" and its url, or remove host to run on the local engine)", h.get_ref(), h.get_ref())
                    } else {
                        format!("host `{}` is not a [[host]] of this scenario (name one of: {}; or remove host to run on the local engine)", h.get_ref(), names.join(", "))
                    },
                );
                ok = false;
            }
            found
        });
        entries.push((ok && image.is_some()).then(|| ServerEntry {
            spec: ServerSpec {
                name: name.to_owned(),
                kind: kind_name,
                image: image.expect("checked"),
                manifest,
                memory,
                port,
                options,
                optional: s.optional.unwrap_or(false),
                host,
            },
            needs,
        }));
    }

    let entries = resolve_needs(d, raw, entries);
    if !d.is_empty() || !foreign.is_empty() {
        return (Vec::new(), foreign);
    }
    (dependency_order(entries), foreign)
}

/// The repository part of an image reference (`registry:5000/team/app:1.2` -> `app`), as a
/// kind name for an image run without one.
fn image_repository(image: &str) -> String {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last = no_digest.rsplit('/').next().unwrap_or(no_digest);
    let repo = last.split(':').next().unwrap_or(last);
    repo.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// What to say of a server key that neither every server nor its kind has.
fn unknown_server_key(key: &str, server: &str, kind: &str, manifest: Option<&Manifest>) -> String {
    let known: Vec<String> = crate::raw::keys::SERVER
        .iter()
        .map(|k| format!("`{k}`"))
        .chain(
            manifest
                .into_iter()
                .flat_map(|m| m.options.keys().map(|k| format!("`{k}`"))),
        )
        .collect();
    let of = if kind.is_empty() {
        String::new()
    } else {
        format!(" of kind {kind}")
    };
    format!(
        "unknown field `{key}` for server `{server}`{of}, expected one of {} (remove it or correct its spelling; a kind's own keys are in its server.toml)",
        known.join(", ")
    )
}

/// The server keys of `src` that neither every server nor the server's kind has, for a
/// scenario whose other unknown keys stop it before its servers are checked.
pub(crate) fn unknown_server_keys(src: &str, kinds: &Kinds) -> Vec<(Range<usize>, String)> {
    use toml::de::{DeTable, DeValue};
    let Ok(top) = DeTable::parse(src) else {
        return Vec::new();
    };
    let Some((_, servers)) = top
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "server")
    else {
        return Vec::new();
    };
    let DeValue::Array(list) = servers.get_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (t, keys) in list.iter().zip(server_key_positions(src)) {
        let DeValue::Table(t) = t.get_ref() else {
            continue;
        };
        let text = |key: &str| {
            t.iter()
                .find(|(k, _)| k.get_ref().as_ref() == key)
                .and_then(|(_, v)| match v.get_ref() {
                    DeValue::String(s) => Some(s.to_string()),
                    _ => None,
                })
        };
        let name = text("name").unwrap_or_default();
        let kind = text("kind").unwrap_or_default();
        let manifest = kinds.get(&kind).and_then(|k| k.manifest.as_ref().ok());
        if manifest.is_none() && !kind.is_empty() {
            continue; // an unknown kind or a broken manifest: said when its servers are checked
        }
        for (key, span, _) in keys {
            if !manifest.is_some_and(|m| m.options.contains_key(&key)) {
                out.push((span, unknown_server_key(&key, &name, &kind, manifest)));
            }
        }
    }
    out
}

/// A server table's keys other than the ones every server has: (key, its position, its
/// value's position).
type KeyPositions = Vec<(String, Range<usize>, Range<usize>)>;

/// Each server table's keys that are not the ones every server has, with the positions of the
/// key and of its value, by the table's index.
fn server_key_positions(src: &str) -> Vec<KeyPositions> {
    use toml::de::{DeTable, DeValue};
    let Ok(top) = DeTable::parse(src) else {
        return Vec::new();
    };
    let Some((_, servers)) = top
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "server")
    else {
        return Vec::new();
    };
    let DeValue::Array(list) = servers.get_ref() else {
        return Vec::new();
    };
    list.iter()
        .map(|t| match t.get_ref() {
            DeValue::Table(t) => t
                .iter()
                .filter(|(k, _)| !crate::raw::keys::SERVER.contains(&k.get_ref().as_ref()))
                .map(|(k, v)| (k.get_ref().to_string(), k.span(), v.span()))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// A kind's option value checked against its declared type. A server option comes back as the
/// server's name (`Text`), resolved later.
fn option_value(
    d: &mut Diagnostics,
    key: &str,
    decl: &OptionDecl,
    value: &toml::Value,
    span: Range<usize>,
) -> Option<OptionValue> {
    let got = match (decl.typ, value) {
        (OptionType::Server, toml::Value::String(t)) => Some(OptionValue::Text(t.clone())),
        (OptionType::Size, toml::Value::Integer(n)) => match u64::try_from(*n) {
            Ok(n) => Some(OptionValue::Size(n)),
            Err(_) => {
                d.error(span, format!("{key} cannot be negative ({n}); give a size in bytes such as 468 or \"512m\""));
                return None;
            }
        },
        (OptionType::Size, toml::Value::String(t)) => match parse_size(t) {
            Ok(n) => Some(OptionValue::Size(n)),
            Err(msg) => {
                d.error(span, format!("bad {key}: {msg}"));
                return None;
            }
        },
        (OptionType::Integer, toml::Value::Integer(n)) => Some(OptionValue::Integer(*n)),
        (OptionType::String, toml::Value::String(t)) => Some(OptionValue::Text(t.clone())),
        (OptionType::Bool, toml::Value::Boolean(b)) => Some(OptionValue::Bool(*b)),
        _ => None,
    };
    if got.is_none() {
        let want = match decl.typ {
            OptionType::Server => "the name of another server of the scenario, as a string",
            OptionType::Size => "a size such as 468 or \"256m\"",
            OptionType::Integer => "an integer",
            OptionType::String => "a string",
            OptionType::Bool => "true or false",
        };
        d.error(span, format!("{key} must be {want}, not {value}"));
    }
    got
}

/// Turns the server names that server options name into indices (in file order), reporting
/// names that are not servers and loops.
fn resolve_needs(
    d: &mut Diagnostics,
    raw: &RawScenario,
    entries: Vec<Option<ServerEntry>>,
) -> Vec<ServerSpec> {
    let index: HashMap<&str, usize> = raw
        .server
        .iter()
        .enumerate()
        .map(|(i, s)| (s.get_ref().name.get_ref().as_str(), i))
        .collect();
    let mut resolved: Vec<Option<ServerSpec>> = Vec::new();
    let mut edges: Vec<Vec<(usize, Range<usize>)>> = vec![Vec::new(); entries.len()];
    for (i, e) in entries.into_iter().enumerate() {
        let Some(mut e) = e else {
            resolved.push(None);
            continue;
        };
        let mut ok = true;
        for (key, target, span) in std::mem::take(&mut e.needs) {
            match index.get(target.as_str()) {
                Some(&j) => {
                    e.spec.options.push((key, OptionValue::Server(j)));
                    edges[i].push((j, span));
                }
                None => {
                    let others: Vec<&str> = raw
                        .server
                        .iter()
                        .map(|o| o.get_ref().name.get_ref().as_str())
                        .filter(|n| *n != e.spec.name)
                        .collect();
                    d.error(
                        span,
                        format!(
                            "{key} `{target}` is not a server in this scenario (name one of: {})",
                            if others.is_empty() {
                                "none defined, add one".to_owned()
                            } else {
                                others.join(", ")
                            }
                        ),
                    );
                    ok = false;
                }
            }
        }
        if let Some(m) = &e.spec.manifest {
            e.spec
                .options
                .sort_by_key(|(k, _)| m.options.keys().position(|o| o == k));
        }
        resolved.push(ok.then_some(e.spec));
    }
    // Loops: report each once, at its first member in file order.
    for start in 0..edges.len() {
        let mut chain = vec![start];
        let mut at = start;
        while let Some(&(next, _)) = edges[at].first() {
            if next == start {
                if chain.iter().all(|&m| m >= start) {
                    let names: Vec<&str> = chain
                        .iter()
                        .chain(std::iter::once(&start))
                        .map(|&m| raw.server[m].get_ref().name.get_ref().as_str())
                        .collect();
                    d.error(
                        edges[start][0].1.clone(),
                        format!(
                            "servers need each other in a loop: {} (each must be started before the other; end the chain at a server that needs none)",
                            names.join(" -> ")
                        ),
                    );
                }
                break;
            }
            if chain.contains(&next) {
                break; // a loop further along, reported at its own first member
            }
            chain.push(next);
            at = next;
        }
    }
    resolved.into_iter().flatten().collect()
}

/// Orders servers so every server another needs comes before it, otherwise keeping file
/// order, and renumbers the server options to the new order.
fn dependency_order(specs: Vec<ServerSpec>) -> Vec<ServerSpec> {
    let n = specs.len();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    fn place(i: usize, specs: &[ServerSpec], placed: &mut [bool], order: &mut Vec<usize>) {
        if placed[i] {
            return;
        }
        placed[i] = true;
        // Loops were rejected, so this ends.
        for d in specs[i].depends_on().collect::<Vec<_>>() {
            place(d, specs, placed, order);
        }
        order.push(i);
    }
    for i in 0..n {
        place(i, &specs, &mut placed, &mut order);
    }
    let new_index: Vec<usize> = {
        let mut v = vec![0; n];
        for (new, &old) in order.iter().enumerate() {
            v[old] = new;
        }
        v
    };
    let mut specs: Vec<Option<ServerSpec>> = specs.into_iter().map(Some).collect();
    order
        .into_iter()
        .map(|old| {
            let mut spec = specs[old].take().expect("each placed once");
            for (_, v) in &mut spec.options {
                if let OptionValue::Server(i) = v {
                    *i = new_index[*i];
                }
            }
            spec
        })
        .collect()
}
