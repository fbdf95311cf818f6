//! Turns the raw schema into a [`Plan`], resolving every default and reporting every
//! semantic error at once (with its position) rather than stopping at the first: a benchmark
//! that fails after ten minutes of image builds because of a typo costs far more than this.

mod docs;
mod hosts;
mod load;
mod servers;
use docs::*;
use hosts::*;
use load::*;
pub(crate) use servers::unknown_server_keys;
use servers::*;

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
