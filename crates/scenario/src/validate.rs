//! Turns the raw schema into a [`Plan`], resolving every default and reporting every
//! semantic error at once (with its position) rather than stopping at the first: a benchmark
//! that fails after ten minutes of image builds because of a typo costs far more than this.

use crate::documents::{HELLO_WORLD, HTML_MIN_SIZE, PNG_MAX_SIZE, PNG_MIN_SIZE};
use crate::error::{Diagnostics, ScenarioError};
use crate::plan::{
    BackendRef, CpuPlan, DocumentSource, DocumentSpec, GeneratorKind, LoadSpec, Plan, ServerKind,
    ServerSpec,
};
use crate::raw::{RawLoad, RawScenario, RawSize};
use crate::units::{
    describe_bytes, parse_coalesce, parse_cpuset, parse_duration, parse_size, Coalesce,
};
use loadgen::{HttpVersion, Method};
use serde_spanned::Spanned;
use std::collections::HashMap;
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
/// Varnish malloc storage when none is named; enough for the 100 MB seed file.
pub const DEFAULT_VARNISH_STORAGE: u64 = 256 << 20;
/// ab's default `-s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Containers cannot raise their open-files limit above 20,000; keep well below.
pub const MAX_CONCURRENCY: u32 = 10_000;
/// Names end up in container names and labels; Docker's DNS-label limit.
const MAX_NAME_LEN: usize = 63;

pub(crate) fn validate(src: &str, file: &Path, raw: RawScenario) -> Result<Plan, ScenarioError> {
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

    let default_load = match &raw.load {
        Some(l) => check_load_level(&mut d, l.get_ref()),
        None => LoadLevel::default(),
    };

    let roots = DocumentRoots::new(&mut d, &raw, &base_dir);
    let documents = check_documents(&mut d, &raw, &roots, &default_load);
    let largest = documents.iter().map(|doc| doc.length).max().unwrap_or(0);
    let servers = check_servers(&mut d, &raw, largest);

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

    d.finish()?;
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
    })
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
    CpuPlan {
        servers: servers.unwrap_or_default(),
        loadgen: loadgen.unwrap_or_default(),
    }
}

/// One level of load settings (`[load]` or a `[document.load]`) with its values checked.
/// Values that failed their check are dropped and `poisoned` set, so that the merged result
/// does not produce follow-on errors from a value already reported.
#[derive(Default, Clone)]
struct LoadLevel {
    requests: Option<(u64, Range<usize>)>,
    duration: Option<(Duration, Range<usize>)>,
    concurrency: Option<(u32, Range<usize>)>,
    keep_alive: Option<bool>,
    http11: Option<bool>,
    timeout: Option<Duration>,
    warmup: Option<Duration>,
    rate: Option<f64>,
    head: Option<bool>,
    user_timestamps: Option<bool>,
    coalesce: Option<Coalesce>,
    poisoned: bool,
}

fn check_load_level(d: &mut Diagnostics, raw: &RawLoad) -> LoadLevel {
    let mut level = LoadLevel {
        keep_alive: raw.keep_alive,
        user_timestamps: raw.user_timestamps,
        ..LoadLevel::default()
    };
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
    let failed = |v: &Option<Spanned<String>>, parsed: bool| v.is_some() && !parsed;
    level.poisoned = before
        || failed(&raw.timeout, level.timeout.is_some())
        || failed(&raw.warmup, level.warmup.is_some())
        || failed(&raw.duration, level.duration.is_some());

    if let (Some(_), Some(dur)) = (&raw.requests, &raw.duration) {
        d.error(
            dur.span(),
            "requests and duration are both set (keep one: requests stops after a count, duration after a time)",
        );
        level.poisoned = true;
    }
    if let Some(h) = &raw.http {
        match h.get_ref().as_str() {
            "1.0" => level.http11 = Some(false),
            "1.1" => level.http11 = Some(true),
            other => {
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
    let http11 = own.http11.or(defaults.http11).unwrap_or(false);
    let head = own.head.or(defaults.head).unwrap_or(false);
    let user_timestamps = own
        .user_timestamps
        .or(defaults.user_timestamps)
        .unwrap_or(false);
    LoadSpec {
        requests: requests.map(|(n, _)| n),
        duration: duration.map(|(t, _)| t),
        concurrency: concurrency.map_or(1, |(c, _)| c),
        keep_alive: own.keep_alive.or(defaults.keep_alive).unwrap_or(false),
        version: if http11 {
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
            Some(l) => check_load_level(d, l.get_ref()),
            None => LoadLevel::default(),
        };
        let load = resolve_load(d, default_load, &own_load, table_span, name);
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
            Some((DocumentSource::File(real), meta.len()))
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

fn check_servers(d: &mut Diagnostics, raw: &RawScenario, largest_document: u64) -> Vec<ServerSpec> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut ports: HashMap<u16, usize> = HashMap::new();
    // (spec, backend name) in file order; `None` when the entry has an error.
    let mut entries: Vec<Option<(ServerSpec, Option<String>)>> = Vec::new();

    for server in &raw.server {
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
        let kind = s.kind.get_ref().parse::<ServerKind>().ok();
        if kind.is_none() {
            d.error(
                s.kind.span(),
                format!(
                    "unknown server kind `{}` (use one of: nginx, apache, varnish, tornado, gatling, cherokee)",
                    s.kind.get_ref()
                ),
            );
            ok = false;
        }
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

        let is_varnish = kind == Some(ServerKind::Varnish);
        let mut storage = None;
        if is_varnish {
            if s.backend.is_none() {
                d.error(
                    table_span.clone(),
                    format!("varnish server `{name}` has no backend (add backend = \"<name of the server it fronts>\")"),
                );
                ok = false;
            }
            let value = match &s.storage {
                None => Some(DEFAULT_VARNISH_STORAGE),
                Some(st) => size_value(d, st, "storage"),
            };
            let span = s
                .storage
                .as_ref()
                .map_or(table_span.clone(), |st| st.span());
            match value {
                Some(n) if n <= largest_document => {
                    d.error(
                        span,
                        format!(
                            "varnish storage of {} does not exceed the largest document, {} (raise storage, e.g. storage = \"{}m\"; Varnish cuts responses it cannot store)",
                            describe_bytes(n),
                            describe_bytes(largest_document),
                            (largest_document >> 20) * 2 + 64
                        ),
                    );
                    ok = false;
                }
                Some(n) if n >= memory => {
                    let mspan = s.memory.as_ref().map_or(table_span.clone(), |m| m.span());
                    d.error(
                        mspan,
                        format!(
                            "memory {} does not exceed varnish storage {} (raise memory above storage, or the cache runs out of memory)",
                            describe_bytes(memory),
                            describe_bytes(n)
                        ),
                    );
                    ok = false;
                }
                Some(n) => storage = Some(n),
                None => ok = false,
            }
        } else if kind.is_some() {
            if let Some(b) = &s.backend {
                d.error(
                    b.span(),
                    format!("backend is only for varnish servers, and `{name}` is of kind {} (remove it)", s.kind.get_ref()),
                );
                ok = false;
            }
            if let Some(st) = &s.storage {
                d.error(
                    st.span(),
                    format!("storage is only for varnish servers, and `{name}` is of kind {} (remove it; memory limits the container)", s.kind.get_ref()),
                );
                ok = false;
            }
        }
        entries.push(kind.filter(|_| ok).map(|kind| {
            (
                ServerSpec {
                    name: name.to_owned(),
                    kind,
                    memory,
                    port,
                    backend: None,
                    storage,
                    optional: s.optional.unwrap_or(false),
                },
                s.backend.as_ref().map(|b| b.get_ref().clone()),
            )
        }));
    }

    check_backends(d, raw);
    if !d.is_empty() {
        return Vec::new();
    }
    let entries: Vec<(ServerSpec, Option<String>)> = entries.into_iter().flatten().collect();
    dependency_order(entries)
}

/// Backend references: they must name another server of the scenario, and a chain of
/// Varnishes must end at a real server rather than loop.
fn check_backends(d: &mut Diagnostics, raw: &RawScenario) {
    let index: HashMap<&str, usize> = raw
        .server
        .iter()
        .enumerate()
        .map(|(i, s)| (s.get_ref().name.get_ref().as_str(), i))
        .collect();
    let backend_of = |i: usize| -> Option<usize> {
        let s = raw.server[i].get_ref();
        if s.kind.get_ref() != "varnish" {
            return None;
        }
        s.backend
            .as_ref()
            .and_then(|b| index.get(b.get_ref().as_str()).copied())
    };
    for (i, server) in raw.server.iter().enumerate() {
        let s = server.get_ref();
        let Some(b) = &s.backend else { continue };
        if s.kind.get_ref() != "varnish" {
            continue;
        }
        let target = b.get_ref().as_str();
        if target == s.name.get_ref() {
            d.error(
                b.span(),
                format!("varnish `{target}` cannot be its own backend (name the server it fronts)"),
            );
            continue;
        }
        if !index.contains_key(target) {
            let others: Vec<&str> = raw
                .server
                .iter()
                .map(|o| o.get_ref().name.get_ref().as_str())
                .filter(|n| *n != s.name.get_ref())
                .collect();
            d.error(
                b.span(),
                format!(
                    "backend `{target}` is not a server in this scenario (name one of: {})",
                    if others.is_empty() {
                        "none defined, add one".to_owned()
                    } else {
                        others.join(", ")
                    }
                ),
            );
            continue;
        }
        // Follow the chain; report a loop once, at its first member in file order.
        let mut chain = vec![i];
        let mut at = i;
        while let Some(next) = backend_of(at) {
            if next == i {
                if chain.iter().all(|&m| m >= i) {
                    let names: Vec<&str> = chain
                        .iter()
                        .chain(std::iter::once(&i))
                        .map(|&m| raw.server[m].get_ref().name.get_ref().as_str())
                        .collect();
                    d.error(
                        b.span(),
                        format!(
                            "varnish backends loop: {} (end the chain at a server that is not varnish)",
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
}

/// Orders servers so every backend precedes the Varnish in front of it, otherwise keeping
/// file order, and resolves backend names to indices in that order.
fn dependency_order(entries: Vec<(ServerSpec, Option<String>)>) -> Vec<ServerSpec> {
    let position: HashMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.name.clone(), i))
        .collect();
    let mut placed = vec![false; entries.len()];
    let mut order = Vec::with_capacity(entries.len());
    for start in 0..entries.len() {
        // Walk to the bottom of the chain, then place from the bottom up. Loops were already
        // rejected, so the walk ends.
        let mut chain = vec![start];
        while let Some(next) = entries[*chain.last().unwrap()]
            .1
            .as_ref()
            .and_then(|b| position.get(b).copied())
        {
            chain.push(next);
        }
        for &i in chain.iter().rev() {
            if !placed[i] {
                placed[i] = true;
                order.push(i);
            }
        }
    }
    let new_index: HashMap<String, usize> = order
        .iter()
        .enumerate()
        .map(|(new, &old)| (entries[old].0.name.clone(), new))
        .collect();
    order
        .into_iter()
        .map(|old| {
            let (mut spec, backend) = entries[old].clone();
            spec.backend = backend.map(|name| BackendRef {
                index: new_index[&name],
                name,
            });
            spec
        })
        .collect()
}
