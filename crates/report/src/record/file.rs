//! Where a record is kept: claimed once, written whole through a temporary file that names its
//! writer, never overwriting another run's.

use crate::error::ReportError;
use model::record::RunRecord;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A results file claimed by one run: created exclusively, then replaced atomically.
///
/// Every write goes to a temporary file beside it whose name derives from the record's own and
/// from its writer's (`.<name>.<writer>.tmp`), so it is known before it exists: whoever must
/// clean up after a run that could not (a second Ctrl-C) can remove it without searching, and a
/// temporary file a killed writer left behind says whose it was ([`RecordFile::writer_of`]), so
/// a sweep can tell it from a live writer's.
#[derive(Debug)]
pub struct RecordFile {
    path: PathBuf,
    tmp: PathBuf,
}

impl RecordFile {
    /// Claims `path` for `record`: fails when the file exists (a run never overwrites another
    /// run's record) or cannot be written (a missing folder, no permission, a full disk), and
    /// otherwise leaves `record` there, complete. Two runs claiming the same path at once: one
    /// wins, the other gets [`ReportError::Exists`].
    ///
    /// `writer` names the process writing in the temporary file's name: digits and '-', such
    /// as its pid and start time (`1234-5678`); any other character is replaced by '-'.
    pub fn create(
        path: &Path,
        record: &RunRecord,
        writer: &str,
    ) -> Result<RecordFile, ReportError> {
        let file = RecordFile {
            path: path.to_path_buf(),
            tmp: tmp_path(path, writer),
        };
        if path.exists() {
            return Err(ReportError::Exists {
                path: path.to_path_buf(),
            });
        }
        let tmp = file.write_tmp(record)?;
        // Exactly one claimant gets the name (a rename that refuses to replace, or a hard link
        // where the file system has none), and the name appears with its whole content.
        match tmp.persist_noclobber(path) {
            Ok(_) => {
                sync_dir(path);
                Ok(file)
            }
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(ReportError::Exists {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => Err(ReportError::Write {
                path: path.to_path_buf(),
                source: e.error,
            }),
        }
    }

    /// Replaces the file's content with `record`, atomically.
    pub fn write(&self, record: &RunRecord) -> Result<(), ReportError> {
        let tmp = self.write_tmp(record)?;
        tmp.persist(&self.path).map_err(|e| ReportError::Write {
            path: self.path.clone(),
            source: e.error,
        })?;
        sync_dir(&self.path);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where writes are staged; it exists only during a write.
    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// Writes `record` to the temporary file and flushes it to disk; the file is removed when
    /// the returned handle is dropped without being persisted (and on failure).
    fn write_tmp(&self, record: &RunRecord) -> Result<tempfile::NamedTempFile, ReportError> {
        use std::os::unix::fs::PermissionsExt;
        let json = record.to_json().map_err(ReportError::Serialize)?;
        let write = || -> std::io::Result<tempfile::NamedTempFile> {
            // A leftover of an earlier write of this same record (a crash between write and
            // rename) is ours to replace; anything else is never followed or truncated (the
            // file is created exclusively, by its exact name).
            match std::fs::symlink_metadata(&self.tmp) {
                Ok(m) if m.is_file() => std::fs::remove_file(&self.tmp)?,
                _ => {}
            }
            let name = self.tmp.file_name().unwrap_or_default();
            let mut f = tempfile::Builder::new()
                .prefix(name)
                .suffix("")
                .rand_bytes(0)
                .permissions(std::fs::Permissions::from_mode(0o644))
                .tempfile_in(folder_of(&self.tmp))?;
            f.write_all(&json)?;
            f.as_file().sync_all()?;
            Ok(f)
        };
        write().map_err(|source| ReportError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

impl RecordFile {
    /// The writer named in a record's temporary file name (`.<name>.<writer>.tmp`), or `None`
    /// for any other name (including an older writer's `.<name>.tmp`, which names no one).
    pub fn writer_of(file_name: &str) -> Option<&str> {
        let inner = file_name.strip_prefix('.')?.strip_suffix(TMP_SUFFIX)?;
        let (name, writer) = inner.rsplit_once('.')?;
        let is_tag = |w: &str| {
            w.starts_with(|c: char| c.is_ascii_digit())
                && w.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        };
        (!name.is_empty() && is_tag(writer)).then_some(writer)
    }
}

pub(super) const TMP_SUFFIX: &str = ".tmp";

/// `.<name>.<writer>.tmp` beside `path`.
pub(super) fn tmp_path(path: &Path, writer: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".to_string());
    let writer: String = writer
        .chars()
        .map(|c| if c.is_ascii_digit() { c } else { '-' })
        .collect();
    let writer = if writer.is_empty() { "-" } else { &writer };
    path.with_file_name(format!(".{name}.{writer}{TMP_SUFFIX}"))
}

/// The folder `path` is in ("." for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename or link in `path`'s folder durable.
pub(super) fn sync_dir(path: &Path) {
    if let Ok(d) = std::fs::File::open(folder_of(path)) {
        let _ = d.sync_all();
    }
}
