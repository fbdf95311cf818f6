//! Keeping a run's record through whatever the disk does: written after every load, and when
//! writing fails (a full disk, a folder removed under the run), the run goes on with every
//! measurement in memory, tries again after each load, and at the end saves the record
//! elsewhere or, failing everything, hands it back to be printed.

use crate::events::{Event, Observer};
use report::{RecordFile, RunRecord};
use std::path::PathBuf;

/// Where a run's record ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Where it was asked to go.
    At(PathBuf),
    /// Elsewhere: `wanted` could not be written (`error`); it may hold an earlier, partial
    /// state of the record.
    Rescued {
        wanted: PathBuf,
        at: PathBuf,
        error: String,
    },
    /// Nowhere: the record (`json`) must be shown to the user, or it is lost.
    Unsaved {
        wanted: PathBuf,
        error: String,
        json: Vec<u8>,
    },
}

impl Saved {
    /// The record is where it was asked to go.
    pub fn is_where_wanted(&self) -> bool {
        matches!(self, Saved::At(_))
    }
}

pub(crate) struct Results {
    file: RecordFile,
    /// The last write's failure, while writes fail.
    failing: Option<String>,
    reported: bool,
}

impl Results {
    pub(crate) fn new(file: RecordFile) -> Results {
        Results {
            file,
            failing: None,
            reported: false,
        }
    }

    /// The temporary file the record is written through.
    pub(crate) fn tmp_path(&self) -> &std::path::Path {
        self.file.tmp_path()
    }

    /// Writes the record; a failure is reported once and remembered, never fatal.
    pub(crate) fn save(&mut self, record: &RunRecord, observer: &dyn Observer) {
        match self.file.write(record) {
            Ok(()) => self.failing = None,
            Err(e) => {
                let error = e.to_string();
                if !self.reported {
                    self.reported = true;
                    observer.event(&Event::RecordNotWritten {
                        path: self.file.path(),
                        error: &error,
                    });
                }
                self.failing = Some(error);
            }
        }
    }

    /// The last write: where it was wanted, else a rescue file, else nowhere.
    pub(crate) fn finish(mut self, record: &RunRecord, observer: &dyn Observer) -> Saved {
        self.save(record, observer);
        let Some(error) = self.failing else {
            return Saved::At(self.file.path().to_path_buf());
        };
        let wanted = self.file.path().to_path_buf();
        let name = format!("benchctl-rescued-{}.json", record.run_id);
        let mut places = vec![std::env::temp_dir().join(&name)];
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            places.push(PathBuf::from(home).join(&name));
        }
        for at in places {
            if RecordFile::create(&at, record, &crate::rundir::writer_tag()).is_ok() {
                return Saved::Rescued { wanted, at, error };
            }
        }
        Saved::Unsaved {
            wanted,
            error,
            json: record.to_json().unwrap_or_default(),
        }
    }
}
