//! Base images made locally, for machines that cannot reach a container registry.
//!
//! `FROM debian:bookworm-slim` needs that image; where it cannot be pulled, mmdebstrap builds a
//! minimal Debian root filesystem from the host's own apt sources (so no mirror address is ever
//! written into the repository), and the tarball is imported through the Engine API under the
//! name the Dockerfiles use. For a suite other than the host's, the host's sources file is copied
//! to a temporary file with the suite names substituted.
//!
//! mmdebstrap runs as a child process in its own process group with a deadline; on timeout the
//! whole group is killed, because mmdebstrap runs apt and dpkg beneath it. The tarball (100+ MB)
//! is streamed to the daemon in chunks rather than read into memory.

use crate::client::Orchestrator;
use crate::error::{OrchestratorError, Result};
use crate::logtail::Tail;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures_util::StreamExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncReadExt;

/// What the `-slim` images leave out, as dpkg path filters (the copyright files stay).
const DPKG_EXCLUDES: [&str; 5] = [
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
];

/// Debian suites a `debian:<suite>[-slim]` tag may name.
const SUITES: &[&str] = &["buster", "bullseye", "bookworm", "trixie", "forky", "sid"];

/// The Debian suite a `debian:<suite>` or `debian:<suite>-slim` image name stands for.
pub(crate) fn debian_suite(image: &str) -> Option<&str> {
    let tag = image
        .strip_prefix("debian:")
        .or_else(|| image.strip_prefix("docker.io/library/debian:"))
        .or_else(|| image.strip_prefix("library/debian:"))?;
    let suite = tag.strip_suffix("-slim").unwrap_or(tag);
    SUITES.iter().copied().find(|s| *s == suite)
}

/// Splits `repo[:tag]` at the tag's colon (not a registry port's).
fn split_tag(image: &str) -> (&str, &str) {
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => (&image[..i], &image[i + 1..]),
        _ => (image, "latest"),
    }
}

/// The host's apt sources file: the deb822 file of Debian 12+, else the classic list.
fn host_sources() -> Option<PathBuf> {
    [
        "/etc/apt/sources.list.d/debian.sources",
        "/etc/apt/sources.list",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
}

/// The host's Debian codename, from /etc/os-release.
fn host_codename() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// Replaces `from` with `to` in every suite name of a sources file (`bookworm`,
/// `bookworm-updates`, `bookworm-security`), in deb822 `Suites:` fields and in one-line
/// `deb URI SUITE COMPONENTS` entries, and nowhere else (URIs and comments stay as they are).
pub(crate) fn substitute_suite(sources: &str, from: &str, to: &str) -> String {
    let swap = |word: &str| -> String {
        if word == from {
            to.to_string()
        } else if let Some(rest) = word
            .strip_prefix(from)
            .filter(|r| r.starts_with(['-', '/']))
        {
            format!("{to}{rest}")
        } else {
            word.to_string()
        }
    };
    let mut out = String::with_capacity(sources.len());
    for line in sources.lines() {
        let trimmed = line.trim_start();
        if let Some(value) = trimmed.strip_prefix("Suites:") {
            let suites: Vec<String> = value.split_whitespace().map(swap).collect();
            out.push_str(&format!("Suites: {}", suites.join(" ")));
        } else if trimmed.starts_with("deb ") || trimmed.starts_with("deb-src ") {
            // deb [options] URI SUITE COMPONENTS...: the suite is the second word after the options.
            let mut words: Vec<String> = Vec::new();
            let mut in_options = false;
            let mut positional = 0;
            for w in trimmed.split_whitespace() {
                if words.is_empty() {
                    words.push(w.to_string());
                    continue;
                }
                if positional == 0 && (in_options || w.starts_with('[')) {
                    in_options = !w.ends_with(']');
                    words.push(w.to_string());
                    continue;
                }
                positional += 1;
                words.push(if positional == 2 {
                    swap(w)
                } else {
                    w.to_string()
                });
            }
            out.push_str(&words.join(" "));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

impl Orchestrator {
    /// Makes sure `image` exists locally: present, or pulled, or (for `debian:<suite>` names)
    /// made with mmdebstrap. Returns whether anything had to be done.
    pub async fn ensure_base_image(&self, image: &str) -> Result<bool> {
        if self.image_id(image).await?.is_some() {
            return Ok(false);
        }
        let pull_error = match self.try_pull(image).await {
            Ok(()) if self.image_id(image).await?.is_some() => return Ok(true),
            Ok(()) => "the pull reported success but the image is not there".to_string(),
            Err(reason) => reason,
        };
        if debian_suite(image).is_none() {
            return Err(OrchestratorError::BaseImage {
                image: image.to_string(),
                reason: format!("not present locally and the pull failed ({pull_error})"),
            });
        }
        self.bootstrap_base_image(image).await?;
        Ok(true)
    }

    async fn try_pull(&self, image: &str) -> std::result::Result<(), String> {
        let options = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let pull = async {
            let docker = self.patient();
            let mut stream = docker.create_image(Some(options), None, None);
            let mut failure = None;
            while let Some(item) = stream.next().await {
                if let Err(e) = item {
                    failure.get_or_insert(e.to_string());
                }
            }
            failure.map_or(Ok(()), Err)
        };
        match tokio::time::timeout(self.pull_timeout, pull).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no answer from the registry within {:?}",
                self.pull_timeout
            )),
        }
    }

    /// Makes `image` (`debian:<suite>` or `debian:<suite>-slim`) locally with mmdebstrap from the
    /// host's apt sources and imports it under that name. Replaces an existing image of that name.
    pub async fn bootstrap_base_image(&self, image: &str) -> Result<()> {
        let suite = debian_suite(image).ok_or_else(|| OrchestratorError::BaseImage {
            image: image.to_string(),
            reason: "only debian:<suite> and debian:<suite>-slim images can be made locally"
                .to_string(),
        })?;
        self.bootstrap_debian(suite, image).await
    }

    /// Makes a minimal Debian `suite` root filesystem with mmdebstrap and imports it as `image`
    /// (any name: tests use their own so they never race with the real base images).
    pub async fn bootstrap_debian(&self, suite: &str, image: &str) -> Result<()> {
        let fail = |message: String, stderr_tail: Vec<String>| OrchestratorError::Bootstrap {
            image: image.to_string(),
            message,
            stderr_tail,
        };
        if !SUITES.contains(&suite) {
            return Err(fail(format!("unknown Debian suite {suite:?}"), vec![]));
        }
        let sources = host_sources().ok_or_else(|| {
            fail(
                "no apt sources file on this host (looked for /etc/apt/sources.list.d/debian.sources and /etc/apt/sources.list)".to_string(),
                vec![],
            )
        })?;
        let work = tempfile::Builder::new()
            .prefix("benchctl-bootstrap-")
            .tempdir()
            .map_err(|e| OrchestratorError::io("creating a temporary directory", e))?;

        // mmdebstrap tells deb822 from one-line sources by the file name's ending: keep it.
        let sources_arg = match host_codename() {
            Some(host) if host != suite => {
                let text = std::fs::read_to_string(&sources).map_err(|e| {
                    OrchestratorError::io(format!("reading {}", sources.display()), e)
                })?;
                let name = sources.file_name().expect("a file path has a name");
                let copy = work.path().join(name);
                std::fs::write(&copy, substitute_suite(&text, &host, suite))
                    .map_err(|e| OrchestratorError::io(format!("writing {}", copy.display()), e))?;
                copy
            }
            _ => sources,
        };
        let rootfs = work.path().join("rootfs.tar");
        self.run_mmdebstrap(image, suite, &rootfs, &sources_arg)
            .await?;
        self.import_rootfs(image, &rootfs).await
    }

    async fn run_mmdebstrap(
        &self,
        image: &str,
        suite: &str,
        out: &Path,
        sources: &Path,
    ) -> Result<()> {
        let mut cmd = tokio::process::Command::new("mmdebstrap");
        // minbase: the essential packages plus apt, the set Debian's `-slim` images start from;
        // man pages, documentation and locales are left out as there (nothing a server needs
        // lives in them).
        cmd.arg("--variant=minbase")
            .arg("--include=ca-certificates")
            .args(DPKG_EXCLUDES.iter().map(|o| format!("--dpkgopt={o}")))
            .arg(suite)
            .arg(out)
            .arg(sources)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(OrchestratorError::MmdebstrapMissing {
                    image: image.to_string(),
                })
            }
            Err(e) => return Err(OrchestratorError::io("starting mmdebstrap", e)),
        };
        let pgid = child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32));
        let mut stderr = child.stderr.take().expect("stderr was piped");
        // Read stderr while waiting, or a chatty mmdebstrap would block on a full pipe.
        let run = async {
            let mut tail = Tail::new();
            let mut buf = vec![0u8; 8192];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => tail.push(&String::from_utf8_lossy(&buf[..n])),
                }
            }
            (child.wait().await, tail)
        };
        match tokio::time::timeout(self.bootstrap_timeout, run).await {
            Ok((Ok(status), tail)) if status.success() => {
                let _ = tail;
                Ok(())
            }
            Ok((Ok(status), tail)) => Err(OrchestratorError::Bootstrap {
                image: image.to_string(),
                message: format!("mmdebstrap {suite} failed ({status})"),
                stderr_tail: tail.finish(),
            }),
            Ok((Err(e), _)) => Err(OrchestratorError::io("waiting for mmdebstrap", e)),
            Err(_) => {
                if let Some(pgid) = pgid {
                    // The process group mmdebstrap was started in, its own.
                    let _ =
                        rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
                }
                Err(OrchestratorError::Bootstrap {
                    image: image.to_string(),
                    message: format!(
                        "mmdebstrap {suite} did not finish within {:?}; is the host's apt mirror reachable?",
                        self.bootstrap_timeout
                    ),
                    stderr_tail: vec![],
                })
            }
        }
    }

    /// `POST /images/create?fromSrc=-&repo=..&tag=..` with the tarball streamed as the body.
    async fn import_rootfs(&self, image: &str, rootfs: &Path) -> Result<()> {
        let (repo, tag) = split_tag(image);
        let file = tokio::fs::File::open(rootfs)
            .await
            .map_err(|e| OrchestratorError::io(format!("opening {}", rootfs.display()), e))?;
        let chunks = futures_util::stream::try_unfold(file, |mut file| async move {
            let mut buf = bytes::BytesMut::with_capacity(256 * 1024);
            let n = file.read_buf(&mut buf).await?;
            Ok::<_, std::io::Error>((n > 0).then(|| (buf.freeze(), file)))
        });
        let options = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(repo)
            .tag(tag)
            .build();
        let docker = self.patient();
        let mut stream =
            docker.create_image(Some(options), Some(bollard::body_try_stream(chunks)), None);
        let mut failure = None;
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                failure.get_or_insert(e.to_string());
            }
        }
        if let Some(message) = failure {
            return Err(OrchestratorError::Bootstrap {
                image: image.to_string(),
                message: format!("importing the root filesystem failed: {message}"),
                stderr_tail: vec![],
            });
        }
        match self.image_id(image).await? {
            Some(_) => Ok(()),
            None => Err(OrchestratorError::Bootstrap {
                image: image.to_string(),
                message: "the import reported success but the image is not there".to_string(),
                stderr_tail: vec![],
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_from_names() {
        assert_eq!(debian_suite("debian:bookworm-slim"), Some("bookworm"));
        assert_eq!(debian_suite("debian:bullseye"), Some("bullseye"));
        assert_eq!(debian_suite("debian:12"), None);
        assert_eq!(debian_suite("nginx:latest"), None);
        assert_eq!(
            split_tag("debian:bookworm-slim"),
            ("debian", "bookworm-slim")
        );
        assert_eq!(
            split_tag("localhost:5000/x"),
            ("localhost:5000/x", "latest")
        );
        assert_eq!(
            split_tag("benchctl-test/bookworm:base"),
            ("benchctl-test/bookworm", "base")
        );
    }

    #[test]
    fn suite_substitution_touches_only_suites() {
        let deb822 =
            "Types: deb\n# http://example.invalid/bookworm/\nURIs: http://example.invalid/debian\n\
                      Suites: bookworm bookworm-updates\nComponents: main\n\n\
                      URIs: http://example.invalid/debian-security\nSuites: bookworm-security\n";
        let got = substitute_suite(deb822, "bookworm", "bullseye");
        assert!(got.contains("Suites: bullseye bullseye-updates\n"));
        assert!(got.contains("Suites: bullseye-security\n"));
        assert!(got.contains("# http://example.invalid/bookworm/"));

        let list = "deb http://example.invalid/debian bookworm main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://example.invalid/bookworm bookworm-security main\n";
        let got = substitute_suite(list, "bookworm", "bullseye");
        assert_eq!(
            got,
            "deb http://example.invalid/debian bullseye main\n\
             deb [arch=amd64 signed-by=/k.gpg] http://example.invalid/bookworm bullseye-security main\n"
        );
    }
}
