//! Building a server's image with its log kept only when it is worth reading: the log is
//! written in a private run folder, and copied out under a unique name only when the build
//! failed, so that the error can point at it. And `benchctl images push`'s work: building
//! images here and shipping them to a `[[host]]`'s engine.

use crate::rundir::RunDir;
use orchestrator::{BuildSource, BuiltImage, Orchestrator, OrchestratorError, ShippedImage};
use scenario::{ImageSource, Kinds, Plan};
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

/// Builds (or finds up to date) the image of `kind` from `context` on `here`, as
/// [`build_image`] does, and ships it to `there` ([`Orchestrator::ship_image`]): sent unless
/// `there` has it already, and checked there by its id.
pub async fn push_image(
    here: &Orchestrator,
    there: &Orchestrator,
    kind: &str,
    context: &Path,
    source: Option<&BuildSource>,
) -> Result<(BuiltImage, ShippedImage), OrchestratorError> {
    let built = build_image(here, kind, context, source).await?;
    let shipped = here.ship_image(there, &built.tag).await?;
    Ok((built, shipped))
}

/// The kinds (name and folder) to push to `plan.hosts[host]`: those `names` says, each the
/// folder the scenario's servers of that kind are built from, else the kind of that name
/// `kinds` has; with no names, the kinds of the scenario's servers on that host that are built
/// from a folder. Each once, in order. Why not, when a name is no kind or there is nothing to
/// push.
pub fn push_targets(
    plan: &Plan,
    kinds: &Kinds,
    host: usize,
    names: &[String],
) -> Result<Vec<(String, PathBuf)>, String> {
    let built_from = |kind: &str| {
        plan.servers.iter().find_map(|s| match &s.image {
            ImageSource::Build { context } if s.kind == kind => Some(context.clone()),
            _ => None,
        })
    };
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    if names.is_empty() {
        for s in plan.servers.iter().filter(|s| s.host == Some(host)) {
            if let ImageSource::Build { context } = &s.image {
                if !out.iter().any(|(k, c)| k == &s.kind && c == context) {
                    out.push((s.kind.clone(), context.clone()));
                }
            }
        }
        if out.is_empty() {
            return Err(format!(
                "no server of {} on host {} is built from a kind's folder: name the kinds to send",
                plan.source.display(),
                plan.hosts[host].name
            ));
        }
        return Ok(out);
    }
    for name in names {
        let dir = built_from(name)
            .or_else(|| kinds.get(name).map(|k| k.dir.clone()))
            .ok_or_else(|| {
                format!(
                    "no server kind {name} (the kinds found: {})",
                    kinds.names().join(", ")
                )
            })?;
        if !out.iter().any(|(k, _)| k == name) {
            out.push((name.clone(), dir));
        }
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_sends_the_named_kinds_or_those_built_for_the_host() {
        let docker = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docker");
        let kinds = Kinds::discover(std::slice::from_ref(&docker));
        let src = "name = \"p\"\n[load]\nrequests = 10\n\
                   [[host]]\nname = \"srv1\"\nurl = \"tcp://10.0.0.5\"\ninsecure = true\nimages = \"ship\"\n\
                   [[host]]\nname = \"srv2\"\nurl = \"tcp://10.0.0.6\"\ninsecure = true\n\
                   [[server]]\nname = \"a\"\nkind = \"nginx\"\nhost = \"srv1\"\n\
                   [[server]]\nname = \"b\"\nkind = \"nginx\"\nhost = \"srv1\"\nport = 8081\n\
                   [[server]]\nname = \"c\"\nkind = \"apache\"\n\
                   [[server]]\nname = \"d\"\nimage = \"web:1\"\nhost = \"srv2\"\n\
                   [[document]]\nname = \"hello\"\npath = \"/\"\ngenerate = \"hello\"\n";
        let plan = scenario::parse_str_with(src, Path::new("p.toml"), &kinds)
            .unwrap_or_else(|e| panic!("{e}"));
        let names = |t: Vec<(String, PathBuf)>| t.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        // The host's own servers' kinds, each once.
        assert_eq!(
            names(push_targets(&plan, &kinds, 0, &[]).unwrap()),
            ["nginx"]
        );
        // Named: any kind the scenario builds, or any the docker folder has.
        let asked = [
            "apache".to_string(),
            "lighttpd".to_string(),
            "apache".to_string(),
        ];
        let t = push_targets(&plan, &kinds, 0, &asked).unwrap();
        assert_eq!(t[1].1, kinds.get("lighttpd").unwrap().dir);
        assert_eq!(names(t), ["apache", "lighttpd"]);
        let e = push_targets(&plan, &kinds, 0, &["nope".to_string()]).unwrap_err();
        assert!(
            e.starts_with("no server kind nope (the kinds found: apache, "),
            "{e}"
        );
        // A host whose servers run images of their own has nothing to be sent by default.
        let e = push_targets(&plan, &kinds, 1, &[]).unwrap_err();
        assert!(
            e.contains("on host srv2 is built from a kind's folder"),
            "{e}"
        );
    }
}
