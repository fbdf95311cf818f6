//! `[[document]]` tables: URL paths, generated bodies and files, the latter only from the
//! scenario's own folder and only when every user may read them.

use super::common::{check_name, line_of, size_value, Protocol};
use super::load::{check_load_level, over, resolve_load, LoadLevel};
use crate::documents::{HELLO_WORLD, HTML_MIN_SIZE, PNG_MAX_SIZE, PNG_MIN_SIZE};
use crate::error::Diagnostics;
use crate::plan::{DocumentSource, DocumentSpec, GeneratorKind, SourceFile};
use crate::raw::RawScenario;
use crate::units::describe_bytes;
use model::HttpVersion;
use serde_spanned::Spanned;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

/// Where `file` documents are looked up, and the one folder they must lie in.
pub(super) struct DocumentRoots {
    /// `file` paths are relative to the scenario's folder.
    pub(super) base_dir: PathBuf,
    /// The scenario's folder, or the folder its `documents` key names, with every symlink
    /// resolved; `None` when that could not be resolved (already reported).
    pub(super) root: Option<PathBuf>,
}

impl DocumentRoots {
    pub(super) fn new(d: &mut Diagnostics, raw: &RawScenario, base_dir: &Path) -> DocumentRoots {
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

pub(super) fn check_documents(
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
            let doc = DocumentSpec {
                name: name.to_owned(),
                path: url.to_owned(),
                disk_path,
                source,
                length,
                load,
            };
            if protocol.each.is_empty() {
                docs.push(doc);
            } else {
                docs.extend(protocol.each.iter().map(|&v| DocumentSpec {
                    name: listed_name(name, v),
                    load: over(&doc.load, v),
                    ..doc.clone()
                }));
            }
        }
    }
    check_listed_names(d, raw, protocol, &names, &docs);

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

/// Over a list of versions each document is measured once per version, under its name and
/// the version's (`page-h2`): no other document may have that name.
fn check_listed_names(
    d: &mut Diagnostics,
    raw: &RawScenario,
    protocol: &Protocol,
    names: &HashMap<&str, usize>,
    docs: &[DocumentSpec],
) {
    if protocol.each.is_empty() {
        return;
    }
    for doc in docs {
        if let Some(line) = names.get(doc.name.as_str()) {
            d.error(
                raw.http.as_ref().map_or(0..0, |h| h.span()),
                format!(
                    "{} measures each document under its name and the version's, and `{}` is also the name of the document on line {line} (rename that one)",
                    protocol.said, doc.name
                ),
            );
        }
    }
}

/// The name a document's load over `version` has in a scenario that measures each document
/// over a list of versions: `page-h1`, `page-h2`, `page-h3` (the versions' ALPN names).
pub(super) fn listed_name(name: &str, version: HttpVersion) -> String {
    let suffix = match version {
        HttpVersion::Http10 | HttpVersion::Http11 => "h1",
        HttpVersion::Http2 => "h2",
        HttpVersion::Http3 => "h3",
    };
    format!("{name}-{suffix}")
}

/// Checks a URL path and maps it to its place under the document root.
pub(super) fn check_url_path(url: &str) -> Result<PathBuf, String> {
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
pub(super) fn check_source(
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
        (None, Some(file)) => file_source(d, doc, file, roots),
        (Some(generate), None) => generated_source(d, doc, generate),
    }
}

/// A `file` document: a regular file inside the document root that every user may read.
fn file_source(
    d: &mut Diagnostics,
    doc: &crate::raw::RawDocument,
    file: &Spanned<String>,
    roots: &DocumentRoots,
) -> Option<(DocumentSource, u64)> {
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
    let meta = file_metadata(d, file, &resolved)?;
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

/// The metadata of the file a `file` key names (at `resolved`), if it is a regular file.
fn file_metadata(
    d: &mut Diagnostics,
    file: &Spanned<String>,
    resolved: &Path,
) -> Option<std::fs::Metadata> {
    let rel = file.get_ref();
    match std::fs::metadata(resolved) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(_) => {
            d.error(
                file.span(),
                format!("file `{rel}` is not a regular file (name a file, not a folder)"),
            );
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            d.error(
                file.span(),
                format!(
                    "file `{rel}` does not exist (looked for {}; paths are relative to the scenario file)",
                    resolved.display()
                ),
            );
            None
        }
        Err(e) => {
            d.error(
                file.span(),
                format!("file `{rel}` cannot be read: {e} (check its permissions)"),
            );
            None
        }
    }
}

/// A `generate` document: a known generator, and a size it can make.
fn generated_source(
    d: &mut Diagnostics,
    doc: &crate::raw::RawDocument,
    generate: &Spanned<String>,
) -> Option<(DocumentSource, u64)> {
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
                format!("generate = \"{kind}\" needs a size in bytes (add e.g. size = 468)"),
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
