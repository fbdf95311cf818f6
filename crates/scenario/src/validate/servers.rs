//! `[[server]]` tables: kinds and their manifests, images, options, the servers each one
//! needs, and the order they start in.

use super::common::{check_name, line_of, size_value};
use super::limits::{DEFAULT_MEMORY, MIN_MEMORY};
use super::server_keys::{server_key_positions, unknown_server_key};
use crate::error::{Diagnostic, Diagnostics};
use crate::kinds::{Kind, Kinds};
use crate::manifest::Manifest;
use crate::options::{OptionDecl, OptionType, OptionValue};
use crate::plan::{ImageSource, ServerSpec};
use crate::raw::{RawScenario, RawServer};
use crate::units::{describe_bytes, parse_size};
use serde_spanned::Spanned;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

/// One server's entry while its table is checked: its spec, and the names of the servers its
/// server-typed options name (resolved to indices once every server is known).
pub(super) struct ServerEntry {
    pub(super) spec: ServerSpec,
    pub(super) needs: Needs,
}

/// The servers a server's options name: (option name, named server, position of the value).
type Needs = Vec<(String, String, Range<usize>)>;

/// What every server's check reads besides its own table.
struct ScenarioContext<'a> {
    raw: &'a RawScenario,
    kinds: &'a Kinds,
    base_dir: &'a Path,
    largest_document: u64,
}

pub(super) fn check_servers(
    d: &mut Diagnostics,
    src: &str,
    raw: &RawScenario,
    kinds: &Kinds,
    base_dir: &Path,
    largest_document: u64,
) -> (Vec<ServerSpec>, Vec<Diagnostic>) {
    let cx = ScenarioContext {
        raw,
        kinds,
        base_dir,
        largest_document,
    };
    // Every key of every server table with its position, for the kinds' own options.
    let positions = server_key_positions(src);
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut ports: HashMap<u16, usize> = HashMap::new();
    let mut entries: Vec<Option<ServerEntry>> = Vec::new();
    // Problems in the manifests of the kinds used, reported with their own files.
    let mut foreign: Vec<Diagnostic> = Vec::new();

    for (i, server) in raw.server.iter().enumerate() {
        let s = server.get_ref();
        let name = s.name.get_ref().as_str();
        check_name(d, &s.name, "server");
        if let Some(first) = names.insert(name, line_of(d, s.name.span())) {
            d.error(
                s.name.span(),
                format!("duplicate server name `{name}` (first used on line {first}; rename one)"),
            );
        }
        let keys = positions.get(i).map_or(&[][..], Vec::as_slice);
        entries.push(check_server(d, &cx, server, keys, &mut ports, &mut foreign));
    }

    let entries = resolve_needs(d, raw, entries);
    if !d.is_empty() || !foreign.is_empty() {
        return (Vec::new(), foreign);
    }
    (dependency_order(entries), foreign)
}

/// One `[[server]]` table, or None when it has an error that leaves it unusable. `ports` holds
/// the fixed ports of the servers before it; `foreign` gathers the errors of their manifests.
fn check_server(
    d: &mut Diagnostics,
    cx: &ScenarioContext<'_>,
    server: &Spanned<RawServer>,
    keys: &[(String, Range<usize>, Range<usize>)],
    ports: &mut HashMap<u16, usize>,
    foreign: &mut Vec<Diagnostic>,
) -> Option<ServerEntry> {
    let table_span = server.span();
    let s = server.get_ref();
    let name = s.name.get_ref().as_str();
    let mut ok = true;

    // Where its image comes from, and what its kind declares.
    let kind = server_kind(d, s, &table_span, cx, &mut ok);
    if let Some(k) = &kind {
        if s.image.is_none() {
            check_kind_names_image(d, s, k, &table_span, &mut ok);
        }
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
    let image = server_image(d, s, kind.as_ref(), &mut ok);
    let kind_name = match (&kind, &s.image) {
        (Some(k), _) => k.name.clone(),
        (None, Some(img)) => image_repository(img.get_ref()),
        (None, None) => String::new(),
    };
    let memory = server_memory(d, s, &mut ok);
    let port = server_port(d, s, ports, &mut ok);

    // The kind's own options: every other key of the table.
    let table = OptionTable {
        server: s,
        name,
        span: &table_span,
        kind: kind.as_ref(),
        kind_name: &kind_name,
        manifest: manifest.as_ref(),
        keys,
    };
    let (mut options, needs) = table.given_options(d, &mut ok);
    if let Some(m) = &manifest {
        table.default_options(d, m, &mut options, &mut ok);
        table.check_size_bounds(d, m, &options, memory, cx.largest_document, &mut ok);
        // The manifest's order, whatever order the table had.
        options.sort_by_key(|(k, _)| m.options.keys().position(|o| o == k));
    }
    let host = server_host(d, cx.raw, s, &mut ok);
    (ok && image.is_some()).then(|| ServerEntry {
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
    })
}

/// The server's kind: from its `context` folder (renamed by `kind` if both are given), or the
/// kind of that name found around the scenario. None for a server run from an image alone.
fn server_kind(
    d: &mut Diagnostics,
    s: &RawServer,
    table_span: &Range<usize>,
    cx: &ScenarioContext<'_>,
    ok: &mut bool,
) -> Option<Kind> {
    let context_kind = s
        .context
        .as_ref()
        .and_then(|c| context_kind(d, c, cx.base_dir, ok));
    match (&s.kind, context_kind) {
        (_, Some(mut k)) => {
            if let Some(name) = &s.kind {
                k.name = name.get_ref().clone();
            }
            Some(k)
        }
        (Some(k), None) if s.context.is_none() => match cx.kinds.get(k.get_ref()) {
            Some(found) => Some(found.clone()),
            None => {
                d.error(k.span(), unknown_kind(k.get_ref(), cx.kinds));
                *ok = false;
                None
            }
        },
        (None, None) if s.image.is_none() && s.context.is_none() => {
            let name = s.name.get_ref();
            d.error(
                table_span.clone(),
                format!("server `{name}` has no kind (add kind = \"nginx\" or another kind; or image = \"NAME:TAG\" to run an existing image)"),
            );
            *ok = false;
            None
        }
        _ => None,
    }
}

/// The kind in the folder a server's `context` names.
fn context_kind(
    d: &mut Diagnostics,
    context: &Spanned<String>,
    base_dir: &Path,
    ok: &mut bool,
) -> Option<Kind> {
    let dir = base_dir.join(context.get_ref());
    let kind = Kind::at(&dir);
    if kind.is_none() {
        d.error(
            context.span(),
            format!(
                "context `{}` is not a server folder: {} needs a Dockerfile and a server.toml (see docker/README.md)",
                context.get_ref(),
                dir.display()
            ),
        );
        *ok = false;
    }
    kind
}

/// What to say of a `kind` that is not one of `kinds`.
fn unknown_kind(kind: &str, kinds: &Kinds) -> String {
    let found = kinds.names();
    format!(
        "unknown server kind `{kind}` ({}; a kind is a folder with a Dockerfile and a server.toml, see docker/README.md)",
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
    )
}

/// A kind whose image is built is named in the image's name, which allows fewer characters
/// than a folder does.
fn check_kind_names_image(
    d: &mut Diagnostics,
    s: &RawServer,
    kind: &Kind,
    table_span: &Range<usize>,
    ok: &mut bool,
) {
    if crate::kinds::names_an_image(&kind.name) {
        return;
    }
    let span = match (&s.kind, &s.context) {
        (Some(k), _) => k.span(),
        (None, Some(c)) => c.span(),
        (None, None) => table_span.clone(),
    };
    d.error(
        span,
        format!(
            "kind `{}` cannot name an image (benchctl/<kind>:<hash>): {} (rename its folder{})",
            kind.name.escape_debug(),
            crate::kinds::IMAGE_NAME_RULE,
            if s.kind.is_some() && s.context.is_some() {
                ", or the kind key"
            } else {
                ""
            }
        ),
    );
    *ok = false;
}

/// The image a server runs: the one it names, or the one built from its kind's folder.
fn server_image(
    d: &mut Diagnostics,
    s: &RawServer,
    kind: Option<&Kind>,
    ok: &mut bool,
) -> Option<ImageSource> {
    match (&s.image, kind) {
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
                *ok = false;
            }
            Some(ImageSource::Prebuilt {
                image: text.clone(),
            })
        }
        (None, Some(k)) => Some(ImageSource::Build {
            context: k.dir.clone(),
        }),
        (None, None) => None,
    }
}

/// `memory`, in bytes: the value given (even when too small, for the checks that compare with
/// it) or the default.
fn server_memory(d: &mut Diagnostics, s: &RawServer, ok: &mut bool) -> u64 {
    let Some(m) = &s.memory else {
        return DEFAULT_MEMORY;
    };
    match size_value(d, m, "memory") {
        Some(n) if n < MIN_MEMORY => {
            d.error(
                m.span(),
                format!(
                    "memory {} is below Docker's minimum of 6m (raise it; the default is 1g)",
                    describe_bytes(n)
                ),
            );
            *ok = false;
            n
        }
        Some(n) => n,
        None => {
            *ok = false;
            0
        }
    }
}

/// `port`: a TCP port no earlier server has fixed (`ports`: port -> line of its first use).
fn server_port(
    d: &mut Diagnostics,
    s: &RawServer,
    ports: &mut HashMap<u16, usize>,
    ok: &mut bool,
) -> Option<u16> {
    let p = s.port.as_ref()?;
    match u16::try_from(*p.get_ref()) {
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
            *ok = false;
            None
        }
    }
}

/// A server table seen for its kind's own options.
struct OptionTable<'a> {
    server: &'a RawServer,
    name: &'a str,
    span: &'a Range<usize>,
    kind: Option<&'a Kind>,
    kind_name: &'a str,
    manifest: Option<&'a Manifest>,
    keys: &'a [(String, Range<usize>, Range<usize>)],
}

impl OptionTable<'_> {
    /// The options the table gives, checked against the manifest's declarations, and the
    /// servers its server-typed options name: (option, server, position of the value).
    fn given_options(
        &self,
        d: &mut Diagnostics,
        ok: &mut bool,
    ) -> (Vec<(String, OptionValue)>, Needs) {
        let name = self.name;
        let mut options: Vec<(String, OptionValue)> = Vec::new();
        let mut needs = Vec::new();
        let declared = self.manifest.map(|m| &m.options);
        for (key, key_span, value_span) in self.keys {
            let Some(value) = self.server.options.get(key) else {
                continue;
            };
            let Some(decl) = declared.and_then(|o| o.get(key)) else {
                if self.kind.is_some_and(|k| k.manifest.is_err()) {
                    continue; // its manifest's errors are reported already
                }
                d.error(
                    key_span.clone(),
                    unknown_server_key(key, name, self.kind_name, self.manifest),
                );
                *ok = false;
                continue;
            };
            match option_value(d, key, decl, value, value_span.clone()) {
                Some(OptionValue::Text(target)) if decl.typ == OptionType::Server => {
                    if target == name {
                        d.error(
                            value_span.clone(),
                            format!("server `{name}` cannot name itself as its {key} (name another server of the scenario)"),
                        );
                        *ok = false;
                    } else {
                        needs.push((key.clone(), target, value_span.clone()));
                    }
                }
                Some(v) => options.push((key.clone(), v)),
                None => *ok = false,
            }
        }
        (options, needs)
    }

    /// The manifest's options the table leaves out: an error for a required one, its default
    /// for the others.
    fn default_options(
        &self,
        d: &mut Diagnostics,
        m: &Manifest,
        options: &mut Vec<(String, OptionValue)>,
        ok: &mut bool,
    ) {
        let (name, kind_name) = (self.name, self.kind_name);
        for (oname, decl) in &m.options {
            if self.server.options.contains_key(oname) {
                continue;
            }
            if decl.required {
                d.error(
                    self.span.clone(),
                    format!(
                        "server `{name}` of kind {kind_name} has no `{oname}`{} (add {oname} = {})",
                        if decl.help.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", decl.help)
                        },
                        match decl.typ {
                            OptionType::Server => "\"<name of another server>\"".to_string(),
                            t => format!("<a {}>", t.as_str()),
                        }
                    ),
                );
                *ok = false;
            } else if let Some(v) = &decl.default {
                options.push((oname.clone(), v.clone()));
            }
        }
    }

    /// Bounds of sizes: above the largest document, below the memory limit.
    fn check_size_bounds(
        &self,
        d: &mut Diagnostics,
        m: &Manifest,
        options: &[(String, OptionValue)],
        memory: u64,
        largest_document: u64,
        ok: &mut bool,
    ) {
        let kind_name = self.kind_name;
        for (oname, v) in options {
            let (Some(decl), OptionValue::Size(n)) = (m.options.get(oname), v) else {
                continue;
            };
            let span = self
                .keys
                .iter()
                .find(|(k, _, _)| k == oname)
                .map_or(self.span.clone(), |(_, _, vs)| vs.clone());
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
                *ok = false;
            } else if decl.below_memory && *n >= memory {
                let mspan = self
                    .server
                    .memory
                    .as_ref()
                    .map_or(self.span.clone(), |m| m.span());
                d.error(
                    mspan,
                    format!(
                        "memory {} does not exceed {kind_name} {oname} {} (raise memory above {oname})",
                        describe_bytes(memory),
                        describe_bytes(*n)
                    ),
                );
                *ok = false;
            }
        }
    }
}

/// `host`: the index of the `[[host]]` it names.
fn server_host(
    d: &mut Diagnostics,
    raw: &RawScenario,
    s: &RawServer,
    ok: &mut bool,
) -> Option<usize> {
    let h = s.host.as_ref()?;
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
        *ok = false;
    }
    found
}

/// The repository part of an image reference (`registry:5000/team/app:1.2` -> `app`), as a
/// kind name for an image run without one.
pub(super) fn image_repository(image: &str) -> String {
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

/// A kind's option value checked against its declared type. A server option comes back as the
/// server's name (`Text`), resolved later.
pub(super) fn option_value(
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
pub(super) fn resolve_needs(
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
pub(super) fn dependency_order(specs: Vec<ServerSpec>) -> Vec<ServerSpec> {
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
