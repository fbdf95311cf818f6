//! A record as a results file: written so that a reader never sees half of it, and read back
//! with an error that names the file.

use crate::error::ReportError;
use model::record::{RecordError, RunRecord};
use std::io::Write as _;
use std::path::Path;

/// Reading and writing a [`RunRecord`] as a results file (the record's JSON is its own).
pub trait RecordIo: Sized {
    /// Writes the record to `path` so that a reader never sees a partial file: the JSON goes to
    /// a temporary file in the same directory, is flushed to disk, then renamed over `path`.
    fn write_atomic(&self, path: &Path) -> Result<(), ReportError>;
    /// Reads a results file, telling apart a file that is not JSON, JSON that is not a results
    /// file, and a results file newer than this reader.
    fn load(path: &Path) -> Result<Self, ReportError>;
    /// [`RecordIo::load`] on text already read; `path` only names it in errors.
    fn from_json(text: &str, path: &Path) -> Result<Self, ReportError>;
}

impl RecordIo for RunRecord {
    fn write_atomic(&self, path: &Path) -> Result<(), ReportError> {
        let write_err = |source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        };
        let json = self.to_json().map_err(ReportError::Serialize)?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".benchctl-results-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(write_err)?;
        tmp.write_all(&json).map_err(write_err)?;
        tmp.as_file().sync_all().map_err(write_err)?;
        tmp.persist(path).map_err(|e| write_err(e.error))?;
        // The rename itself is durable only once the directory entry is on disk.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn load(path: &Path) -> Result<RunRecord, ReportError> {
        let text = userfile::read_to_string(path).map_err(|source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        RunRecord::from_json(&text, path)
    }

    fn from_json(text: &str, path: &Path) -> Result<RunRecord, ReportError> {
        RunRecord::parse(text).map_err(|e| ReportError::of_record(path, e))
    }
}

impl ReportError {
    /// `e`, of the text of the file at `path`.
    pub fn of_record(path: &Path, e: RecordError) -> ReportError {
        let path = path.to_path_buf();
        match e {
            RecordError::NotJson {
                line,
                column,
                message,
            } => ReportError::NotJson {
                path,
                line,
                column,
                message,
            },
            RecordError::NotARecord(detail) => ReportError::NotARunRecord { path, detail },
            RecordError::NewerVersion {
                what,
                found,
                supported,
            } => ReportError::NewerVersion {
                path,
                what,
                found,
                supported,
            },
        }
    }
}
