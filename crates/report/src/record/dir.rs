//! Every record under a folder, for the history of many nights.

use super::json::RecordIo;
use crate::analysis::history::Skipped;
use crate::error::ReportError;
use model::record::RunRecord;
use std::path::{Path, PathBuf};

/// How deep below the folder records are looked for (`results/nightly/<date>/<scenario>.json`
/// is one level down).
const MAX_DEPTH: usize = 4;

/// What a folder holds: its records, each with its path, and the files that are not records.
#[derive(Debug, Default)]
pub struct FolderRecords {
    pub records: Vec<(String, RunRecord)>,
    pub skipped: Vec<Skipped>,
}

/// The records of every `*.json` file under `dir` (down to a few levels; folders and files whose
/// names start with '.' and symbolic links to folders are not entered), each with its path, in
/// path order; the files that are not records, each with why. Fails only when `dir` cannot be
/// read.
pub fn read_records(dir: &Path) -> Result<FolderRecords, ReportError> {
    let mut files = Vec::new();
    walk(dir, 0, &mut files)?;
    files.sort();
    let mut found = FolderRecords::default();
    for f in files {
        let shown = f.display().to_string();
        match RunRecord::load(&f) {
            Ok(r) => found.records.push((shown, r)),
            Err(e) => found.skipped.push(Skipped {
                path: shown,
                reason: e.to_string(),
            }),
        }
    }
    Ok(found)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        // Below the top, a folder that vanished or cannot be read is left out.
        Err(_) if depth > 0 => return Ok(()),
        Err(source) => {
            return Err(ReportError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                walk(&path, depth + 1, out)?;
            }
        } else if path.extension().is_some_and(|x| x == "json") && path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}
