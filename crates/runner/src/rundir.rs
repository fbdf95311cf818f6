//! Each run's private folder: every file a run makes outside its results (the documents it
//! serves, its build logs) lives in one folder that only its owner can enter, under a name no
//! one can guess or take first, and that goes away with the run, or with a later run or
//! `benchctl gc` once its owner is gone.
//!
//! `$TMPDIR/benchctl-run-XXXXXX/` (mode 0700, made with `mkdir`, which never follows a symlink
//! nor reuses an existing name) holds an `owner` file naming the process ([`Owner`]) and:
//! - `docs/`: the document root, bind-mounted read-only into every server. Its own modes are
//!   0755/0644 so that the servers' unprivileged users read it inside their containers; on the
//!   host the 0700 folder around it keeps every other user out.
//! - `build-<server>.log`: each image build's log, created exclusively.

use orchestrator::Owner;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const PREFIX: &str = "benchctl-run-";
const OWNER_FILE: &str = "owner";
/// A run folder without an owner file (its run died between making it and writing the file)
/// is taken for stale after this long.
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// A run's private folder, removed when dropped.
#[derive(Debug)]
pub struct RunDir {
    dir: tempfile::TempDir,
}

impl RunDir {
    /// Makes a new private folder in the system's temporary folder.
    pub fn create() -> io::Result<RunDir> {
        RunDir::create_in(&std::env::temp_dir())
    }

    /// Makes a new private folder in `base`.
    pub fn create_in(base: &Path) -> io::Result<RunDir> {
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(base)?;
        let mut owner = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.path().join(OWNER_FILE))?;
        writeln!(owner, "{}", Owner::current().to_label())?;
        let docs = dir.path().join("docs");
        fs::create_dir(&docs)?;
        fs::set_permissions(&docs, fs::Permissions::from_mode(0o755))?;
        Ok(RunDir { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The document root.
    pub fn docroot(&self) -> PathBuf {
        self.dir.path().join("docs")
    }

    /// Where `server`'s image build logs to (the file does not exist yet).
    pub fn build_log(&self, server: &str) -> PathBuf {
        self.dir.path().join(format!("build-{server}.log"))
    }
}

/// Makes the documents readable by the servers' unprivileged users inside their containers:
/// folders 0755, files 0644 (the private folder around them keeps them from other host users).
pub fn open_to_servers(docroot: &Path) -> io::Result<()> {
    let mut stack = vec![docroot.to_path_buf()];
    while let Some(d) = stack.pop() {
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755))?;
        for e in fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                fs::set_permissions(e.path(), fs::Permissions::from_mode(0o644))?;
            }
        }
    }
    Ok(())
}

/// Removes the run folders in `base` whose owning process is gone (a run killed with SIGKILL,
/// a crash); folders of runs still going are left alone, as are folders of other users and
/// anything that is not a plain folder. Returns how many were removed.
pub fn sweep_stale(base: &Path) -> usize {
    let Ok(entries) = fs::read_dir(base) else {
        return 0;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = e.path();
        // symlink_metadata: a symlink named like a run folder is not one, and is never followed.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let stale = match read_owner(&path) {
            Some(owner) => !owner.is_alive(),
            None => meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age > ORPHAN_AGE),
        };
        if stale && fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

fn read_owner(dir: &Path) -> Option<Owner> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(OWNER_FILE))
        .ok()?;
    let mut text = String::new();
    io::Read::read_to_string(&mut f, &mut text).ok()?;
    Owner::from_label(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_is_private_and_goes_with_its_run() {
        let base = tempfile::tempdir().unwrap();
        let rd = RunDir::create_in(base.path()).unwrap();
        let mode = fs::metadata(rd.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(read_owner(rd.path()), Some(Owner::current()));
        let docs = fs::metadata(rd.docroot()).unwrap().permissions().mode() & 0o777;
        assert_eq!(docs, 0o755);
        let path = rd.path().to_path_buf();
        // Its owner is alive: a sweep leaves it alone.
        assert_eq!(sweep_stale(base.path()), 0);
        drop(rd);
        assert!(!path.exists());
    }

    #[test]
    fn the_sweep_removes_only_folders_whose_owner_is_gone() {
        let base = tempfile::tempdir().unwrap();
        let live = RunDir::create_in(base.path()).unwrap();
        let dead = base.path().join("benchctl-run-dead01");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("docs-file"), "x").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        fs::write(dead.join(OWNER_FILE), format!("{pid}:1\n")).unwrap();
        // Not a run folder: a symlink with a run folder's name, and another name altogether.
        let target = base.path().join("precious");
        fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, base.path().join("benchctl-run-link")).unwrap();
        let young_orphan = base.path().join("benchctl-run-young");
        fs::create_dir(&young_orphan).unwrap();

        assert_eq!(sweep_stale(base.path()), 1);
        assert!(!dead.exists());
        assert!(live.path().exists());
        assert!(target.exists());
        assert!(
            young_orphan.exists(),
            "a folder without an owner file is kept for a while"
        );
    }

    #[test]
    fn documents_are_opened_to_the_servers() {
        let base = tempfile::tempdir().unwrap();
        let rd = RunDir::create_in(base.path()).unwrap();
        let sub = rd.docroot().join("a/b");
        fs::create_dir_all(&sub).unwrap();
        let f = sub.join("x.html");
        fs::write(&f, "x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        open_to_servers(&rd.docroot()).unwrap();
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert_eq!(
            fs::metadata(&sub).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
}
