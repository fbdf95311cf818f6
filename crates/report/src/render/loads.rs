//! The loads of one server and document, and the error that names one whose histogram is
//! broken.

use crate::error::ReportError;
use crate::record::{LoadRecord, RunRecord};

/// The error for load `l`'s histogram that cannot be read (`detail` says why).
pub(super) fn hist_error(l: &LoadRecord, detail: &str) -> ReportError {
    ReportError::Histogram {
        server: l.server.clone(),
        document: l.document.clone(),
        round: l.round,
        detail: detail.to_string(),
    }
}

/// The loads of `server` on `doc`, in round order.
pub(super) fn group_loads<'a>(
    record: &'a RunRecord,
    server: &str,
    doc: &str,
) -> Vec<&'a LoadRecord> {
    let mut v: Vec<&LoadRecord> = record
        .loads
        .iter()
        .filter(|l| l.server == server && l.document == doc)
        .collect();
    v.sort_by_key(|l| l.round);
    v
}
