//! Building a server's image with its log kept only when it is worth reading: the log is
//! written in a private run folder, and copied out under a unique name only when the build
//! failed, so that the error can point at it.

use crate::rundir::RunDir;
use orchestrator::{BuildSource, BuiltImage, Orchestrator, OrchestratorError};
use std::path::{Path, PathBuf};

/// Builds (or finds up to date) the image of `kind` from `context`, from the server's own
/// `source` when one is given (see [`BuildSource`]). A failed build's error names a copy of its
/// whole log in the system's temporary folder, which is kept.
pub async fn build_image(
    orch: &Orchestrator,
    kind: &str,
    context: &Path,
    source: Option<&BuildSource>,
) -> Result<BuiltImage, OrchestratorError> {
    let dir = RunDir::create()
        .map_err(|e| OrchestratorError::Invalid(format!("cannot make a private folder: {e}")))?;
    let log = dir.build_log(kind);
    orch.build_image_from(kind, context, source, &log)
        .await
        .map_err(|e| {
            keep_log(e, &log, |_| {
                tempfile::Builder::new()
                    .prefix(&format!("benchctl-build-{kind}-"))
                    .suffix(".log")
                    .tempfile()
                    .ok()
                    .and_then(|f| f.keep().ok())
                    .map(|(_, path)| path)
            })
        })
}

/// Points a build error at a kept copy of its log, made by `place` (which returns a new,
/// empty file's path); other errors pass unchanged.
pub(crate) fn keep_log(
    mut e: OrchestratorError,
    log: &Path,
    place: impl FnOnce(&Path) -> Option<PathBuf>,
) -> OrchestratorError {
    if let OrchestratorError::Build { log_path, .. } = &mut e {
        if let Some(kept) = place(log).filter(|kept| copy_into(log, kept).is_ok()) {
            *log_path = kept;
        }
    }
    e
}

/// Copies `src` into the existing file `dst`, never following a symlink there.
fn copy_into(src: &Path, dst: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut from = std::fs::File::open(src)?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dst)?;
    std::io::copy(&mut from, &mut to).map(drop)
}
