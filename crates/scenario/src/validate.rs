//! Turns the raw schema into a [`Plan`], resolving every default and reporting every
//! semantic error at once (with its position) rather than stopping at the first: a benchmark
//! that fails after ten minutes of image builds because of a typo costs far more than this.

mod common;
mod docs;
mod hosts;
mod limits;
mod load;
mod server_keys;
mod servers;

pub use limits::{
    DEFAULT_LOADGEN_CPUS, DEFAULT_MEMORY, DEFAULT_SERVER_CPUS, DEFAULT_TIMEOUT, MAX_CONCURRENCY,
    MAX_STREAMS, MIN_MEMORY, MIN_SERVER_SHARE,
};
pub(crate) use server_keys::unknown_server_keys;

use crate::error::{Diagnostics, ScenarioError};
use crate::kinds::Kinds;
use crate::plan::{CpuPlan, Plan, TlsKey};
use crate::raw::{RawHttp, RawScenario};
use crate::units::parse_cpuset;
use common::{check_name, line_of, Protocol};
use docs::{check_documents, DocumentRoots};
use hosts::{check_generators, check_hosts};
use load::{check_load_level, LoadLevel};
use model::HttpVersion;
use serde_spanned::Spanned;
use servers::check_servers;
use std::path::Path;

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
    let overload = raw
        .overload
        .as_ref()
        .and_then(|o| crate::overload::check(&mut d, o));
    let tls_key = check_tls_key(&mut d, &raw, &protocol);
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
        scenario_hash: crate::hash::sha256_hex(src.as_bytes()),
        runs,
        cpus,
        servers,
        documents,
        capacity,
        overload,
        tls: protocol.tls,
        tls_key,
        http2: protocol.http2.is_some(),
        http3: protocol.http3.is_some(),
        hosts,
        generators,
    })
}

/// `tls_key`: one of [`TlsKey::ALL`], and only where the scenario serves TLS.
fn check_tls_key(d: &mut Diagnostics, raw: &RawScenario, protocol: &Protocol) -> TlsKey {
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
    if !protocol.tls {
        d.error(
            k.span(),
            "tls_key sets the key of the run's TLS certificate, but the scenario does not serve TLS (add tls = true, or remove tls_key)",
        );
    }
    key
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

fn check_protocol(d: &mut Diagnostics, raw: &RawScenario) -> Protocol {
    let mut p = protocol_of(d, raw);
    p.tls = raw.tls == Some(true) || p.http3.is_some();
    p
}

/// The top-level `http`, without what `tls` adds.
fn protocol_of(d: &mut Diagnostics, raw: &RawScenario) -> Protocol {
    let Some(h) = &raw.http else {
        return Protocol::default();
    };
    let span = h.span();
    let line = line_of(d, span.clone());
    match h.get_ref() {
        RawHttp::One(v) => {
            let v = v.trim();
            let mut p = Protocol {
                said: format!("http = \"{v}\""),
                ..Protocol::default()
            };
            match v {
                "2" => p.http2 = Some(line),
                "3" => p.http3 = Some(line),
                "1.1" => p.http11 = Some(true),
                "1.0" => p.http11 = Some(false),
                other => d.error(
                    span.clone(),
                    format!("http version `{other}` is not supported (use \"2\" for HTTP/2, \"3\" for HTTP/3, or \"1.1\" or \"1.0\"; or a list of \"1.1\", \"2\" and \"3\" to measure each document over each)"),
                ),
            }
            if p.http3.is_some() && raw.tls == Some(false) {
                d.error(
                    span,
                    "http = \"3\" runs over QUIC, which is always encrypted, and the scenario says tls = false (remove tls = false: HTTP/3 serves the run's certificate anyway)",
                );
            }
            p
        }
        RawHttp::Each(list) => check_protocol_list(d, raw, span, line, list),
    }
}

/// `http = ["1.1", "2", "3"]`: each document measured over each version, every server started
/// once serving them all on one port number (HTTP/1.1 and HTTP/2 by ALPN over TLS, HTTP/3 over
/// QUIC on UDP), so the run's certificate is a must.
fn check_protocol_list(
    d: &mut Diagnostics,
    raw: &RawScenario,
    span: std::ops::Range<usize>,
    line: usize,
    list: &[String],
) -> Protocol {
    let quoted: Vec<String> = list.iter().map(|v| format!("\"{}\"", v.trim())).collect();
    let mut p = Protocol {
        said: format!("http = [{}]", quoted.join(", ")),
        http11: Some(true),
        ..Protocol::default()
    };
    for v in list {
        let version = match v.trim() {
            "1.1" => HttpVersion::Http11,
            "2" => HttpVersion::Http2,
            "3" => HttpVersion::Http3,
            "1.0" => {
                d.error(
                    span.clone(),
                    "a list of HTTP versions compares HTTP/1.1, HTTP/2 and HTTP/3 over TLS; HTTP/1.0 is not among them (remove \"1.0\" from the list, or measure it in a scenario of its own with http = \"1.0\")",
                );
                continue;
            }
            other => {
                d.error(
                    span.clone(),
                    format!("http version `{other}` in the list is not supported (use \"1.1\", \"2\" and \"3\")"),
                );
                continue;
            }
        };
        if p.each.contains(&version) {
            d.error(
                span.clone(),
                format!(
                    "\"{}\" is in the http list twice (name each version once)",
                    v.trim()
                ),
            );
            continue;
        }
        p.each.push(version);
    }
    if list.is_empty() {
        d.error(
            span.clone(),
            "http = [] names no version (list the ones to measure each document over, e.g. [\"1.1\", \"2\", \"3\"], or remove http)",
        );
    }
    if p.each.contains(&HttpVersion::Http2) {
        p.http2 = Some(line);
    }
    if p.each.contains(&HttpVersion::Http3) {
        p.http3 = Some(line);
        if raw.tls == Some(false) {
            d.error(
                span.clone(),
                format!("{} measures HTTP/3, over QUIC, which is always encrypted, and the scenario says tls = false (remove tls = false: the list serves the run's certificate anyway)", p.said),
            );
        }
    } else if list.len() > 1 && raw.tls != Some(true) {
        d.error(
            span,
            format!("{} measures each document over each version on one port, which a server tells apart by ALPN over TLS: add tls = true", p.said),
        );
    }
    p
}
