//! A kind's build context: its files hashed into the image's tag (so an untouched folder is
//! never built again), archived for the engine with the server's own source when given one,
//! and the base images its Dockerfile names.

use crate::error::{OrchestratorError, Result};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One file of a build context, as hashed and archived.
pub(super) struct Entry {
    pub(super) rel: String,
    pub(super) path: PathBuf,
    pub(super) mode: u32,
    pub(super) kind: EntryKind,
}

pub(super) enum EntryKind {
    Dir,
    File,
    Symlink(PathBuf),
}

/// Every entry under `root`, sorted by relative path so hash and tar do not depend on readdir order.
///
/// A symlink to a regular file in another kind's folder beside `root` (a sibling folder with a
/// Dockerfile: `entrypoint.sh -> ../nginx/entrypoint.sh`) enters as that file, with its content
/// and executable bit: two kinds that differ in their base image share their scripts and
/// configuration without a copy, and a change to the shared file changes both tags. Any other
/// symlink stays a symlink, as Docker keeps it (one that leads out of the context then fails
/// the build where it is used, never reads a file of this machine into an image).
pub(super) fn collect(root: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = std::fs::read_dir(&dir)
            .map_err(|e| OrchestratorError::io(format!("reading {}", dir.display()), e))?;
        for item in rd {
            let item =
                item.map_err(|e| OrchestratorError::io(format!("reading {}", dir.display()), e))?;
            let path = item.path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| OrchestratorError::io(format!("stat {}", path.display()), e))?;
            let rel = path
                .strip_prefix(root)
                .expect("walked paths stay under the root")
                .to_str()
                .ok_or_else(|| {
                    OrchestratorError::Invalid(format!(
                        "{}: file names in a build context must be UTF-8",
                        path.display()
                    ))
                })?
                .to_string();
            let (path, meta) = match shared_file(root, &path, &meta) {
                Some(target) => target,
                None => (path, meta),
            };
            // Only the executable bit counts, as in git: a checkout made under another umask
            // (0664 instead of 0644) is the same context and must find the same image.
            let mode = if meta.is_dir() || meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            let kind = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| {
                    OrchestratorError::io(format!("readlink {}", path.display()), e)
                })?;
                EntryKind::Symlink(target)
            } else if meta.is_dir() {
                stack.push(path.clone());
                EntryKind::Dir
            } else if meta.is_file() {
                EntryKind::File
            } else {
                // Sockets and fifos cannot be sent to the daemon; they never belong in a context.
                continue;
            };
            out.push(Entry {
                rel,
                path,
                mode,
                kind,
            });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// Where `link` (a symlink in the context at `root`) leads, with its metadata, when that is a
/// regular file in a sibling kind's folder; `None` for any other entry.
fn shared_file(
    root: &Path,
    link: &Path,
    meta: &std::fs::Metadata,
) -> Option<(PathBuf, std::fs::Metadata)> {
    if !meta.file_type().is_symlink() {
        return None;
    }
    let root = std::fs::canonicalize(root).ok()?;
    let kinds = root.parent()?;
    let target = std::fs::canonicalize(link).ok()?;
    let kind = kinds.join(target.strip_prefix(kinds).ok()?.components().next()?);
    if kind == root || !kind.join("Dockerfile").is_file() {
        return None;
    }
    let target_meta = std::fs::metadata(&target).ok()?;
    target_meta.is_file().then_some((target, target_meta))
}

/// The tag an image of `server` built from `context_dir` gets: `benchctl/<server>:<the first
/// 12 hex digits of the context's hash>`.
pub fn context_tag(server: &str, context_dir: &Path) -> Result<String> {
    let hash = context_hash(context_dir)?;
    Ok(format!("benchctl/{server}:{}", &hash[..12]))
}

/// SHA-256 (hex) over a folder's relative paths, modes and contents: the identity of a build context.
pub fn context_hash(root: &Path) -> Result<String> {
    let mut h = Sha256::new();
    for e in collect(root)? {
        // Length-prefixed fields, so no two different folders can feed the same byte sequence.
        let mut field = |tag: u8, bytes: &[u8]| {
            h.update([tag]);
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b'p', e.rel.as_bytes());
        field(b'm', &e.mode.to_le_bytes());
        match &e.kind {
            EntryKind::Dir => field(b'd', &[]),
            EntryKind::Symlink(t) => field(b'l', t.as_os_str().as_encoded_bytes()),
            EntryKind::File => {
                let data = std::fs::read(&e.path).map_err(|err| {
                    OrchestratorError::io(format!("reading {}", e.path.display()), err)
                })?;
                field(b'f', &data);
            }
        }
    }
    Ok(hex::encode(h.finalize()))
}

/// The build context as a tar archive with a fixed order and no timestamps or owners.
/// The name a build's own source file takes in its context (see [`BuildSource`]).
pub const SOURCE_IN_CONTEXT: &str = "source.tar.gz";

/// Label naming the SHA-256 of the source an image was built from, when one was given.
pub const LABEL_SOURCE: &str = "benchctl.source-sha256";

/// A server's source given to its build (an offline machine's copy of upstream's tarball): it
/// enters the context as [`SOURCE_IN_CONTEXT`], stays out of the context hash (so the image has
/// the tag a build that downloads the same source gets, and a later run finds it), and its
/// SHA-256 is the image's [`LABEL_SOURCE`] label.
#[derive(Debug, Clone)]
pub struct BuildSource {
    pub path: PathBuf,
    data: Vec<u8>,
    sha256: String,
}

impl BuildSource {
    /// Reads the file (a source tarball is a few MB).
    pub fn read(path: &Path) -> Result<BuildSource> {
        let data = userfile::read(path).map_err(|e| {
            OrchestratorError::io(format!("reading the source {}", path.display()), e)
        })?;
        let sha256 = hex::encode(Sha256::digest(&data));
        Ok(BuildSource {
            path: path.to_path_buf(),
            data,
            sha256,
        })
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

pub(super) fn context_tar(root: &Path, source: Option<&BuildSource>) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let err = |e: std::io::Error| OrchestratorError::io(format!("archiving {}", root.display()), e);
    for e in collect(root)? {
        let mut header = tar::Header::new_gnu();
        header.set_mode(e.mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match &e.kind {
            EntryKind::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                b.append_data(&mut header, &e.rel, std::io::empty())
                    .map_err(err)?;
            }
            EntryKind::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                b.append_link(&mut header, &e.rel, target).map_err(err)?;
            }
            EntryKind::File => {
                let data = std::fs::read(&e.path).map_err(err)?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                b.append_data(&mut header, &e.rel, data.as_slice())
                    .map_err(err)?;
            }
        }
    }
    if let Some(src) = source {
        if root.join(SOURCE_IN_CONTEXT).exists() {
            return Err(OrchestratorError::Invalid(format!(
                "{} has a file named {SOURCE_IN_CONTEXT} already, where the given source would go",
                root.display()
            )));
        }
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(src.data.len() as u64);
        b.append_data(&mut header, SOURCE_IN_CONTEXT, src.data.as_slice())
            .map_err(err)?;
    }
    b.into_inner().map_err(err)
}

/// The images a Dockerfile's `FROM` lines name, in order, leaving out `scratch`, earlier stages
/// (`FROM x AS build` ... `FROM build`) and names built from `ARG`s, which cannot be resolved here.
pub fn dockerfile_bases(dockerfile: &str) -> Vec<String> {
    let mut stages: Vec<String> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    // Continuation lines are joined first so a FROM split over lines is still seen.
    let joined = dockerfile.replace("\\\n", " ");
    for line in joined.lines() {
        let mut words = line.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        let rest: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
        let Some(image) = rest.first() else { continue };
        let image = image.to_string();
        let names_a_stage = stages.contains(&image.to_ascii_lowercase());
        if rest.len() >= 3 && rest[1].eq_ignore_ascii_case("AS") {
            stages.push(rest[2].to_ascii_lowercase());
        }
        if image == "scratch" || image.contains('$') || names_a_stage || bases.contains(&image) {
            continue;
        }
        bases.push(image);
    }
    bases
}
