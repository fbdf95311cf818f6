//! Server images, built from `docker/<server>/` and tagged by a hash of that folder.
//!
//! The tag is the first 12 hex digits of a SHA-256 over every file's relative path, executable
//! bit and contents, so editing any file in the folder makes a new tag (and a rebuild) while an
//! untouched folder finds its image and skips the build. The build context is sent as a tar with a fixed
//! file order and zeroed timestamps/owners, so the same folder always produces the same bytes.
//!
//! Builds run with host networking (the default bridge cannot reach Debian's mirrors here). A
//! build's failure arrives as a message inside a successful HTTP stream, so the whole stream is
//! drained into the log file and its error turned into [`OrchestratorError::Build`] with the
//! last lines of the log: a build that fails (Cherokee's source download, on these machines) is a
//! value the CLI can print, never a panic or a hang.

mod context;
use context::*;
pub use context::{
    context_hash, context_tag, dockerfile_bases, BuildSource, LABEL_SOURCE, SOURCE_IN_CONTEXT,
};

use crate::client::Orchestrator;
use crate::error::{OrchestratorError, Result};
use crate::labels::{LABEL_OWNER, LABEL_SERVER};
use crate::logtail::{strip_ansi, Tail};
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The outcome of [`Orchestrator::build_image`].
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltImage {
    /// `benchctl/<server>:<12 hex digits of the context hash>`.
    pub tag: String,
    /// The image id (`sha256:...`), recorded in results.
    pub id: String,
    /// False when an image with this tag already existed and the build was skipped.
    pub built: bool,
    /// Wall-clock seconds spent here, including base-image preparation.
    pub seconds: f64,
}

/// The outcome of [`Orchestrator::ship_image`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShippedImage {
    /// The name (or id) it was shipped by.
    pub image: String,
    /// Its id (`sha256:...`), the same on both engines.
    pub id: String,
    /// False when the other engine had it already and nothing was sent.
    pub sent: bool,
    /// Bytes of the archive sent (0 when nothing was).
    pub bytes: u64,
    /// Wall-clock seconds, the check on arrival included.
    pub seconds: f64,
}

/// A reference's repository and tag, for tagging an image by them (`None` for an id or a
/// digest, which name no tag): `benchctl/nginx:0123` and `registry:5000/x` (tag `latest`).
fn split_reference(image: &str) -> Option<(&str, &str)> {
    if image.starts_with("sha256:") || image.contains('@') {
        return None;
    }
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => Some((&image[..name_start + i], &image[name_start + i + 1..])),
        None => Some((image, "latest")),
    }
}

/// The network image builds run on: the engine's default (its bridge).
pub const BUILD_NETWORK: &str = "default";

fn valid_server_name(server: &str) -> bool {
    !server.is_empty()
        && server
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && server.as_bytes()[0].is_ascii_alphanumeric()
}

impl Orchestrator {
    /// Builds `benchctl/<server>:<hash>` from `context_dir` unless that tag already exists,
    /// making missing base images first. Every build message goes to `log_path`.
    pub async fn build_image(
        &self,
        server: &str,
        context_dir: &Path,
        log_path: &Path,
    ) -> Result<BuiltImage> {
        self.build_image_from(server, context_dir, None, log_path)
            .await
    }

    /// [`build_image`](Self::build_image) with the server's source given (see
    /// [`BuildSource`]). An image of that tag built from other source (or downloaded) is built
    /// again; one built from the same source is kept.
    pub async fn build_image_from(
        &self,
        server: &str,
        context_dir: &Path,
        source: Option<&BuildSource>,
        log_path: &Path,
    ) -> Result<BuiltImage> {
        let started = Instant::now();
        if !valid_server_name(server) {
            return Err(OrchestratorError::Invalid(format!(
                "server name {server:?} cannot name an image: use lowercase letters, digits, '-' or '_'"
            )));
        }
        let dockerfile_path = context_dir.join("Dockerfile");
        let dockerfile = std::fs::read_to_string(&dockerfile_path).map_err(|e| {
            OrchestratorError::io(format!("reading {}", dockerfile_path.display()), e)
        })?;
        let tag = context_tag(server, context_dir)?;

        if let Some((id, labels)) = self.image_labels(&tag).await? {
            let same_source = source
                .is_none_or(|s| labels.get(LABEL_SOURCE).map(String::as_str) == Some(s.sha256()));
            if same_source {
                return Ok(BuiltImage {
                    tag,
                    id,
                    built: false,
                    seconds: started.elapsed().as_secs_f64(),
                });
            }
        }

        for base in dockerfile_bases(&dockerfile) {
            self.ensure_base_image(&base).await?;
        }

        let context = context_tar(context_dir, source)?;
        let (failure, tail) = self
            .stream_build(server, &tag, context, source, log_path)
            .await?;

        let id = match failure {
            None => self.image_id(&tag).await?,
            Some(_) => None,
        };
        match id {
            Some(id) => Ok(BuiltImage {
                tag,
                id,
                built: true,
                seconds: started.elapsed().as_secs_f64(),
            }),
            None => {
                let log_tail = tail.finish();
                let message = match failure {
                    Some(m) => summarize_failure(&m, &log_tail),
                    None => {
                        format!("the build stream ended without an error, yet {tag} does not exist")
                    }
                };
                Err(OrchestratorError::Build {
                    server: server.to_string(),
                    message,
                    log_tail,
                    log_path: log_path.to_path_buf(),
                })
            }
        }
    }

    /// Sends the build of `tag` to the engine and follows it to its end or the build timeout,
    /// every message written to `log_path`: the first error (none when it succeeded) and the
    /// log's last lines.
    async fn stream_build(
        &self,
        server: &str,
        tag: &str,
        context: Vec<u8>,
        source: Option<&BuildSource>,
        log_path: &Path,
    ) -> Result<(Option<String>, Tail)> {
        let log_file = create_log(log_path)?;
        let mut log = std::io::BufWriter::new(log_file);
        let mut tail = Tail::new();
        let write_err = |e| OrchestratorError::io(format!("writing {}", log_path.display()), e);

        let mut labels = HashMap::from([
            (LABEL_OWNER.to_string(), "1".to_string()),
            (LABEL_SERVER.to_string(), server.to_string()),
        ]);
        if let Some(src) = source {
            labels.insert(LABEL_SOURCE.to_string(), src.sha256().to_string());
        }
        let options = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .t(tag)
            // The engine's own default network (its bridge, behind NAT), never the host's: a
            // build runs as root with the default capabilities (NET_RAW among them), and in the
            // host's network namespace a RUN step could reach services on its loopback and
            // capture its traffic. On the bridge it reaches package mirrors as any client
            // does, and nothing of the host but what the network routes to it.
            .networkmode(BUILD_NETWORK)
            .rm(true)
            .forcerm(true)
            .labels(&labels)
            .build();
        let docker = self.patient();
        let mut stream =
            docker.build_image(options, None, Some(bollard::body_full(context.into())));

        let mut failure: Option<String> = None;
        let deadline = tokio::time::sleep(self.build_timeout);
        tokio::pin!(deadline);
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = &mut deadline => {
                    failure = Some(format!("the build did not finish within {:?} and was abandoned", self.build_timeout));
                    break;
                }
            };
            let Some(item) = item else { break };
            let text = build_output_text(item, &mut failure);
            // The legacy builder colours a step's stderr red with ANSI escapes; the log is for reading.
            let text = strip_ansi(&text);
            log.write_all(text.as_bytes()).map_err(write_err)?;
            tail.push(&text);
        }
        log.flush().map_err(write_err)?;
        Ok((failure, tail))
    }

    /// The id and labels of a local image, or `None` if there is none by that name.
    pub async fn image_labels(
        &self,
        image: &str,
    ) -> Result<Option<(String, HashMap<String, String>)>> {
        match self.docker.inspect_image(image).await {
            Ok(info) => Ok(info.id.map(|id| {
                let labels = info.config.and_then(|c| c.labels).unwrap_or_default();
                (id, labels)
            })),
            Err(e) if crate::error::is_not_found(&e) => Ok(None),
            Err(e) => Err(OrchestratorError::docker(
                format!("inspect image {image}"),
                e,
            )),
        }
    }

    /// The user a local image runs as (its `USER`; empty for root by default).
    pub async fn image_user(&self, image: &str) -> Result<String> {
        let info = self
            .docker
            .inspect_image(image)
            .await
            .map_err(|e| OrchestratorError::docker(format!("inspect image {image}"), e))?;
        Ok(info.config.and_then(|c| c.user).unwrap_or_default())
    }

    /// Sends `image` (a name or an id) from this engine to `to`'s, as `docker save | docker
    /// load` would, through both Engine APIs: for an engine that cannot build or pull it itself
    /// (no registry, no package mirror). The archive streams from one engine to the other and
    /// is never held whole here. Nothing is sent when `to` has an image of the same id already
    /// (under another name it is only tagged). On arrival the image's id there (the SHA-256 of
    /// its configuration, which names every layer's content) must be the one it has here, or
    /// the shipment fails.
    pub async fn ship_image(&self, to: &Orchestrator, image: &str) -> Result<ShippedImage> {
        let started = Instant::now();
        let url = to.endpoint.url();
        let failed = |message: String| OrchestratorError::Ship {
            image: image.to_string(),
            url: url.clone(),
            message,
        };
        let here = self
            .docker
            .inspect_image(image)
            .await
            .map_err(|e| match e {
                e if crate::error::is_not_found(&e) => failed(format!(
                    "there is no image {image} on this machine's engine ({})",
                    self.endpoint.url()
                )),
                e => OrchestratorError::docker(format!("inspect image {image}"), e),
            })?;
        let id = here
            .id
            .ok_or_else(|| failed("this engine gave the image no id".to_string()))?;
        let shipped = |sent: bool, bytes: u64| ShippedImage {
            image: image.to_string(),
            id: id.clone(),
            sent,
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        };
        if to.image_id(image).await?.as_deref() == Some(id.as_str()) {
            return Ok(shipped(false, 0));
        }
        if to.image_id(&id).await?.is_some() && to.tag_as(&id, image).await? {
            return Ok(shipped(false, 0));
        }
        // An image made for another processor would arrive intact and not run there.
        let arch = to
            .docker
            .version()
            .await
            .map_err(|e| OrchestratorError::docker("version", e))?
            .arch
            .unwrap_or_default();
        let image_arch = here.architecture.unwrap_or_default();
        if !arch.is_empty() && !image_arch.is_empty() && arch != image_arch {
            return Err(failed(format!(
                "the image is made for {image_arch} and that engine runs on {arch}: an image built here runs only on machines like this one (let that host build it: images = \"build\")"
            )));
        }

        let (bytes, export_error, load_error) = self.transfer_image(to, image).await;
        if let Some(e) = export_error {
            return Err(failed(format!(
                "reading it from this machine's engine failed after {bytes} bytes: {e}"
            )));
        }
        if let Some(e) = load_error {
            return Err(failed(format!(
                "that engine did not load it ({bytes} bytes sent): {e}"
            )));
        }
        match to.image_id(image).await? {
            Some(there) if there == id => Ok(shipped(true, bytes)),
            Some(there) => Err(failed(format!(
                "it arrived as {there}, not as {id}, its id here: what was loaded is not this image, and it is not used"
            ))),
            None => Err(failed(format!(
                "that engine loaded {bytes} bytes but has no image {image} after it"
            ))),
        }
    }

    /// Tags the image `id` of this engine as `image`; whether `image` names it after.
    async fn tag_as(&self, id: &str, image: &str) -> Result<bool> {
        let Some((repo, tag)) = split_reference(image) else {
            return Ok(false);
        };
        let options = bollard::query_parameters::TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.docker
            .tag_image(id, Some(options))
            .await
            .map_err(|e| OrchestratorError::docker(format!("tag {id} as {image}"), e))?;
        Ok(self.image_id(image).await?.as_deref() == Some(id))
    }

    /// Streams `image` from this engine's export into `to`'s import: the bytes sent, and the
    /// first error of each side.
    async fn transfer_image(
        &self,
        to: &Orchestrator,
        image: &str,
    ) -> (u64, Option<String>, Option<String>) {
        // The export is read as the load sends it: what is in flight is a few chunks. Its
        // error, if any, ends the upload early and is the cause reported.
        let sent = Arc::new(AtomicU64::new(0));
        let export_error: Arc<Mutex<Option<String>>> = Arc::default();
        let body = {
            let (sent, export_error) = (sent.clone(), export_error.clone());
            self.patient()
                .export_image(image)
                .map(move |chunk| match chunk {
                    Ok(bytes) => {
                        sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                        Ok(bytes)
                    }
                    Err(e) => {
                        let text = e.to_string();
                        *export_error.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(text.clone());
                        Err(std::io::Error::other(text))
                    }
                })
        };
        let options = bollard::query_parameters::ImportImageOptionsBuilder::default()
            .quiet(true)
            .build();
        let mut load = to
            .patient()
            .import_image(options, bollard::body_try_stream(body), None);
        let mut load_error = None;
        while let Some(item) = load.next().await {
            let message = match item {
                Ok(info) => info.error_detail.and_then(|d| d.message),
                Err(e) => Some(e.to_string()),
            };
            if let Some(m) = message {
                load_error.get_or_insert(m);
            }
        }
        let export_error = export_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        (sent.load(Ordering::Relaxed), export_error, load_error)
    }

    /// Removes every tag of `benchctl/<server>` but `keep` (a whole tag, `benchctl/x:hash`),
    /// with its image once no tag is left: the images of earlier contexts (a generator's of an
    /// earlier benchctl binary). An image a container still uses is left alone. Returns how
    /// many tags were removed.
    pub async fn remove_older_images(&self, server: &str, keep: &str) -> Result<usize> {
        let repo = format!("benchctl/{server}");
        let filters = HashMap::from([("reference".to_string(), vec![repo.clone()])]);
        let images = self
            .docker
            .list_images(Some(
                bollard::query_parameters::ListImagesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| OrchestratorError::docker(format!("list the images of {repo}"), e))?;
        let mut removed = 0;
        for tag in images.iter().flat_map(|i| i.repo_tags.iter()) {
            if tag == keep || !tag.starts_with(&format!("{repo}:")) {
                continue;
            }
            match self
                .docker
                .remove_image(
                    tag,
                    None::<bollard::query_parameters::RemoveImageOptions>,
                    None,
                )
                .await
            {
                Ok(_) => removed += 1,
                Err(e) if crate::error::is_conflict(&e) || crate::error::is_not_found(&e) => {}
                Err(e) => return Err(OrchestratorError::docker(format!("remove image {tag}"), e)),
            }
        }
        Ok(removed)
    }

    /// The id of an image on this engine, or `None` if there is none by that name.
    pub async fn image_id(&self, image: &str) -> Result<Option<String>> {
        match self.docker.inspect_image(image).await {
            Ok(info) => Ok(info.id),
            Err(e) if crate::error::is_not_found(&e) => Ok(None),
            Err(e) => Err(OrchestratorError::docker(
                format!("inspect image {image}"),
                e,
            )),
        }
    }
}

/// Creates a build log that did not exist: never follows a symlink planted at the path, never
/// truncates another file (or another run's log), and is readable by its owner only.
fn create_log(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::AlreadyExists {
                "it exists already (a build log is never overwritten)".to_string()
            } else {
                e.to_string()
            };
            OrchestratorError::Io {
                context: format!("creating the build log {}", path.display()),
                source: std::io::Error::new(e.kind(), why),
            }
        })
}

/// Docker's message for a failed RUN quotes the whole command, which the log tail shows anyway;
/// a reader wants the exit code and what the step itself said last (the line before Docker's
/// own "ERROR").
fn summarize_failure(message: &str, log_tail: &[String]) -> String {
    const CODE: &str = "' returned a non-zero code: ";
    let short = match (message.starts_with("The command '"), message.rfind(CODE)) {
        (true, Some(i)) => format!(
            "a RUN step exited with code {}",
            message[i + CODE.len()..].trim()
        ),
        _ => return message.to_string(),
    };
    // Lines Docker itself writes around a step, as opposed to the step's own output.
    const DOCKER: [&str; 4] = ["ERROR", "Step ", "--->", "Removing intermediate container"];
    let said = log_tail
        .iter()
        .map(|l| l.trim())
        .rev()
        .find(|l| !l.is_empty() && !DOCKER.iter().any(|p| l.starts_with(p)));
    match said {
        Some(line) => format!("{short}: {line}"),
        None => short,
    }
}

/// One message of a build's stream as the log shows it; the first error it carries is kept in
/// `failure`.
fn build_output_text(
    item: std::result::Result<bollard::models::BuildInfo, bollard::errors::Error>,
    failure: &mut Option<String>,
) -> String {
    match item {
        Ok(info) => {
            let mut text = String::new();
            if let Some(s) = info.stream {
                text.push_str(&s);
            }
            if let Some(s) = info.status {
                text.push_str(&s);
                if let Some(p) = info.progress_detail.and_then(|p| p.current.zip(p.total)) {
                    text.push_str(&format!(" {}/{}", p.0, p.1));
                }
                text.push('\n');
            }
            if let Some(msg) = info.error_detail.and_then(|d| d.message) {
                text.push_str(&format!("ERROR: {msg}\n"));
                failure.get_or_insert(msg);
            }
            text
        }
        Err(bollard::errors::Error::DockerStreamError { error }) => {
            let text = format!("ERROR: {error}\n");
            failure.get_or_insert(error);
            text
        }
        Err(e) => {
            let text = format!("ERROR: {e}\n");
            failure.get_or_insert(e.to_string());
            text
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failed_run_step_is_summarized_by_its_code_and_last_words() {
        let tail: Vec<String> = [
            "Step 8/20 : RUN curl -o x.tgz $URL",
            " ---> Running in 0123",
            "curl: (6) Could not resolve host: example.invalid",
            "cannot download the release tarball",
            "",
            "ERROR: The command '/bin/sh -c curl -o x.tgz $URL' returned a non-zero code: 1",
        ]
        .map(String::from)
        .to_vec();
        let m = super::summarize_failure(
            "The command '/bin/sh -c curl -o x.tgz $URL' returned a non-zero code: 1",
            &tail,
        );
        assert_eq!(
            m,
            "a RUN step exited with code 1: cannot download the release tarball"
        );
        assert_eq!(
            super::summarize_failure("no such file", &tail),
            "no such file"
        );
    }

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_reference_splits_into_repository_and_tag() {
        assert_eq!(
            split_reference("benchctl/nginx:0123456789ab"),
            Some(("benchctl/nginx", "0123456789ab"))
        );
        assert_eq!(split_reference("busybox"), Some(("busybox", "latest")));
        assert_eq!(
            split_reference("registry:5000/team/web"),
            Some(("registry:5000/team/web", "latest"))
        );
        assert_eq!(
            split_reference("registry:5000/web:1.2"),
            Some(("registry:5000/web", "1.2"))
        );
        assert_eq!(split_reference("sha256:4b9dc110"), None);
        assert_eq!(split_reference("web@sha256:4b9dc110"), None);
    }

    #[test]
    fn from_lines() {
        let df = "# comment\nFROM --platform=linux/amd64 debian:bookworm-slim AS build\nRUN x\n\
                  FROM build\nFROM scratch\nfrom debian:bullseye-slim\nARG B=x\nFROM $B\n\
                  FROM debian:bookworm-slim\n";
        assert_eq!(
            dockerfile_bases(df),
            vec!["debian:bookworm-slim", "debian:bullseye-slim"]
        );
    }

    #[test]
    fn hash_and_tar_are_deterministic_and_sensitive() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Dockerfile"), "FROM x\n").unwrap();
        std::fs::create_dir(dir.path().join("conf")).unwrap();
        std::fs::write(dir.path().join("conf/a.conf"), "a").unwrap();
        let h1 = context_hash(dir.path()).unwrap();
        assert_eq!(h1, context_hash(dir.path()).unwrap());
        assert_eq!(
            context_tar(dir.path(), None).unwrap(),
            context_tar(dir.path(), None).unwrap()
        );

        std::fs::write(dir.path().join("conf/a.conf"), "b").unwrap();
        let h2 = context_hash(dir.path()).unwrap();
        assert_ne!(h1, h2);

        let p = dir.path().join("conf/a.conf");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
        assert_eq!(
            h2,
            context_hash(dir.path()).unwrap(),
            "group-writable is not a change"
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_ne!(h2, context_hash(dir.path()).unwrap(), "executable is");

        // Moving content between file names must change the hash too.
        std::fs::rename(&p, dir.path().join("conf/b.conf")).unwrap();
        assert_ne!(h2, context_hash(dir.path()).unwrap());
    }

    /// Unpacks a context archive into (path, mode, type, content) rows.
    fn entries(tar: &[u8]) -> Vec<(String, u32, tar::EntryType, Vec<u8>)> {
        let mut a = tar::Archive::new(tar);
        a.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let path = e.path().unwrap().to_string_lossy().into_owned();
                let (mode, kind) = (e.header().mode().unwrap(), e.header().entry_type());
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).unwrap();
                (path, mode, kind, data)
            })
            .collect()
    }

    #[test]
    fn a_symlink_to_another_kinds_file_enters_as_that_file_and_any_other_stays_a_link() {
        let kinds = tempfile::tempdir().unwrap();
        let (base, child) = (kinds.path().join("base"), kinds.path().join("child"));
        for d in [&base, &child, &kinds.path().join("notakind")] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(base.join("Dockerfile"), "FROM x\n").unwrap();
        std::fs::write(base.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(base.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(kinds.path().join("notakind/secret"), "x").unwrap();
        std::fs::write(child.join("Dockerfile"), "FROM y\n").unwrap();
        std::fs::write(child.join("own.conf"), "own").unwrap();
        let link = |to: &str, at: &str| std::os::unix::fs::symlink(to, child.join(at)).unwrap();
        link("../base/run.sh", "run.sh");
        link("own.conf", "same.conf");
        link("../notakind/secret", "secret");
        link("/etc/hostname", "host");
        link("../base", "dir");

        let rows = entries(&context_tar(&child, None).unwrap());
        let row = |p: &str| rows.iter().find(|r| r.0 == p).unwrap().clone();
        assert_eq!(
            row("run.sh"),
            (
                "run.sh".into(),
                0o755,
                tar::EntryType::Regular,
                b"#!/bin/sh\n".to_vec()
            )
        );
        for p in ["same.conf", "secret", "host", "dir"] {
            assert_eq!(row(p).2, tar::EntryType::Symlink, "{p}");
        }
        // The shared file's content is part of the child's identity.
        let before = context_hash(&child).unwrap();
        std::fs::write(base.join("run.sh"), "#!/bin/sh\nexit 0\n").unwrap();
        assert_ne!(before, context_hash(&child).unwrap());
    }
}
