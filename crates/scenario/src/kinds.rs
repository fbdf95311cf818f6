//! The server kinds a scenario may name, found on disk: every folder with a `Dockerfile` and a
//! `server.toml` manifest is a kind, named after the folder. Adding a server to benchctl is
//! adding such a folder (see `docker/README.md`); nothing about a kind is compiled in.
//!
//! Kinds are looked up in order, the first folder of a name winning: the scenario's own folder
//! (its subfolders), then the docker folder (`--docker-dir`, else `docker/` beside the
//! scenario's folder, else `./docker`). A `[[server]]` may also name a folder outside both with
//! `context = "PATH"`.

use crate::error::Diagnostic;
use crate::manifest::{Manifest, MANIFEST_FILE};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a kind's name may be, as [`names_an_image`] checks it.
pub const IMAGE_NAME_RULE: &str = "a kind's name is lowercase letters and digits, in runs joined by one `.`, one or two `_`, or any number of `-` (e.g. `my-server`, `h2o`, `nginx_1.25`), at most 128 characters";

/// Whether `name` can be a component of an image's name as the Docker engine reads one
/// (`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`), so that `benchctl/<name>:<hash>` is an image tag.
pub fn names_an_image(name: &str) -> bool {
    if name.is_empty() || name.len() > 128 {
        return false;
    }
    let b = name.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        // A run of letters and digits...
        let start = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == b.len() {
            return true;
        }
        // ...then one separator before the next run.
        let sep = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        match &name[sep..i] {
            "." | "_" | "__" => {}
            s if s.bytes().all(|c| c == b'-') => {}
            _ => return false,
        }
    }
}

/// One kind: its folder and what its manifest says (or why it cannot be read).
#[derive(Debug, Clone)]
pub struct Kind {
    pub name: String,
    /// The build context: the folder with the Dockerfile.
    pub dir: PathBuf,
    pub manifest: Result<Manifest, Vec<Diagnostic>>,
}

impl Kind {
    /// The kind in `dir`, if it is one (a Dockerfile and a manifest).
    pub fn at(dir: &Path) -> Option<Kind> {
        if !dir.join("Dockerfile").is_file() || !dir.join(MANIFEST_FILE).is_file() {
            return None;
        }
        let name = dir.file_name()?.to_string_lossy().into_owned();
        let manifest = Manifest::load(dir).map_err(|e| match e.diagnostics() {
            [] => vec![Diagnostic {
                file: dir.join(MANIFEST_FILE),
                line: 1,
                column: 1,
                message: e.to_string(),
            }],
            d => d.to_vec(),
        });
        Some(Kind {
            name,
            dir: dir.to_path_buf(),
            manifest,
        })
    }
}

/// The kinds found.
#[derive(Debug, Clone, Default)]
pub struct Kinds {
    kinds: BTreeMap<String, Kind>,
    searched: Vec<PathBuf>,
}

impl Kinds {
    /// The kinds in the subfolders of `dirs`, the first of a name winning.
    pub fn discover(dirs: &[PathBuf]) -> Kinds {
        let mut kinds = BTreeMap::new();
        for dir in dirs {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut sub: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            sub.sort();
            for s in sub {
                if let Some(k) = Kind::at(&s) {
                    kinds.entry(k.name.clone()).or_insert(k);
                }
            }
        }
        Kinds {
            kinds,
            searched: dirs.to_vec(),
        }
    }

    /// The kinds a scenario at `scenario` sees: its own folder's, then those of `docker_dir`
    /// (or, without one, of `docker/` beside the scenario's folder and of `./docker`).
    pub fn around(scenario: &Path, docker_dir: Option<&Path>) -> Kinds {
        let own = match scenario.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut dirs = vec![own.clone()];
        match docker_dir {
            Some(d) => dirs.push(d.to_path_buf()),
            None => {
                if let Some(parent) = own
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                {
                    dirs.push(parent.join("docker"));
                }
                dirs.push(PathBuf::from("docker"));
            }
        }
        Kinds::discover(&dirs)
    }

    pub fn get(&self, name: &str) -> Option<&Kind> {
        self.kinds.get(name)
    }

    /// Every kind, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.values()
    }

    pub fn names(&self) -> Vec<&str> {
        self.kinds.keys().map(String::as_str).collect()
    }

    /// The folders looked in, in order.
    pub fn searched(&self) -> &[PathBuf] {
        &self.searched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_those_an_image_name_takes() {
        for good in [
            "nginx",
            "h2o",
            "my-server",
            "a--b",
            "nginx_1.25",
            "a__b",
            "x",
            "0",
        ] {
            assert!(names_an_image(good), "{good}");
        }
        for bad in [
            "", "UPPER", "Nginx", "a..b", "_under", "under_", "a___b", "sp ace", "-a", "a-", ".a",
            "a.", "a._b", "tab\t", "é",
        ] {
            assert!(!names_an_image(bad), "{bad:?}");
        }
        assert!(!names_an_image(&"a".repeat(129)));
    }
}
