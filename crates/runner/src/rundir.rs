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
//! - `record-tmp`: the absolute path of the temporary file the run's results record is written
//!   through (`.<name>.<pid>-<start>.tmp` beside the record, [`report::RecordFile`]), so that
//!   whoever sweeps the folder of a run killed mid-write (`kill -9`) finds and removes that file
//!   too, wherever `-o` put the record.

use orchestrator::Owner;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const PREFIX: &str = "benchctl-run-";
const OWNER_FILE: &str = "owner";
const RECORD_NOTE: &str = "record-tmp";
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

    /// Notes where the run's results record is written through ([`report::RecordFile`]'s
    /// temporary file), for a sweep after this run is killed.
    pub fn note_record_tmp(&self, tmp: &Path) -> io::Result<()> {
        let tmp = std::path::absolute(tmp)?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.path().join(RECORD_NOTE))?;
        f.write_all(tmp.as_os_str().as_encoded_bytes())
    }
}

/// This process as the writer a results record's temporary file names
/// ([`report::RecordFile::create`]): its pid and start time, `PID-START`.
pub fn writer_tag() -> String {
    Owner::current().to_label().replace(':', "-")
}

/// The owner a [`writer_tag`] names.
fn owner_of_tag(tag: &str) -> Option<Owner> {
    Owner::from_label(&tag.replacen('-', ":", 1))
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

/// What a sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Run folders.
    pub folders: usize,
    /// Temporary results records (`.<name>.<pid>-<start>.tmp`) of writers that are gone.
    pub records: usize,
}

/// Removes the run folders in `base` whose owning process is gone (a run killed with SIGKILL,
/// a crash), with the temporary results record each one notes (a run killed while writing its
/// record leaves it beside the record); folders of runs still going are left alone, as are
/// folders of other users and anything that is not a plain folder.
pub fn sweep_stale(base: &Path) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = fs::read_dir(base) else {
        return swept;
    };
    let me = euid();
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
        let owner = read_owner(&path);
        let stale = match owner {
            Some(owner) => !owner.is_alive(),
            None => meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age > ORPHAN_AGE),
        };
        if !stale {
            continue;
        }
        if let (Some(owner), Some(tmp)) = (owner, read_small(&path.join(RECORD_NOTE))) {
            if remove_stale_record(Path::new(&tmp), Some(owner)) {
                swept.records += 1;
            }
        }
        if fs::remove_dir_all(&path).is_ok() {
            swept.folders += 1;
        }
    }
    swept
}

/// Removes from `dir` the temporary results records (`.<name>.<pid>-<start>.tmp`) whose writer
/// is gone; a live writer's, another user's, an older writer's `.<name>.tmp` (which names no
/// one) and anything that is not a plain file are left alone. Returns how many were removed.
pub fn sweep_stale_records(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| remove_stale_record(&e.path(), None))
        .count()
}

/// Removes `path` when it is a temporary results record of this user whose writer is gone
/// (and is `expected`, when given).
fn remove_stale_record(path: &Path, expected: Option<Owner>) -> bool {
    let Some(writer) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(report::RecordFile::writer_of)
        .and_then(owner_of_tag)
    else {
        return false;
    };
    if expected.is_some_and(|o| o != writer) || writer.is_alive() {
        return false;
    }
    // symlink_metadata: a symlink with such a name is not a record, and is never followed.
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    meta.is_file() && meta.uid() == euid() && fs::remove_file(path).is_ok()
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn read_owner(dir: &Path) -> Option<Owner> {
    Owner::from_label(&read_small(&dir.join(OWNER_FILE))?)
}

/// A small file of the run folder, never through a symlink.
fn read_small(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut text = String::new();
    io::Read::read_to_string(&mut io::Read::take(f, 4096), &mut text).ok()?;
    Some(text)
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
        assert_eq!(sweep_stale(base.path()).folders, 0);
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

        assert_eq!(sweep_stale(base.path()).folders, 1);
        assert!(!dead.exists());
        assert!(live.path().exists());
        assert!(target.exists());
        assert!(
            young_orphan.exists(),
            "a folder without an owner file is kept for a while"
        );
    }

    /// A process that has ended, as the owner of what it left.
    fn dead_owner() -> Owner {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        Owner {
            pid,
            start: Some(1),
        }
    }

    fn tag(o: Owner) -> String {
        o.to_label().replace(':', "-")
    }

    #[test]
    fn a_killed_runs_temporary_record_goes_with_its_folder() {
        let base = tempfile::tempdir().unwrap();
        // The record is elsewhere (-o), named in the run folder.
        let results = tempfile::tempdir().unwrap();
        let dead = dead_owner();
        let folder = base.path().join("benchctl-run-dead02");
        fs::create_dir(&folder).unwrap();
        fs::write(folder.join(OWNER_FILE), format!("{}\n", dead.to_label())).unwrap();
        let tmp = results.path().join(format!(".x.json.{}.tmp", tag(dead)));
        fs::write(&tmp, "{\"partial").unwrap();
        fs::write(folder.join(RECORD_NOTE), tmp.to_str().unwrap()).unwrap();
        // A live run's folder noting its own temporary record: both stay.
        let live = RunDir::create_in(base.path()).unwrap();
        let live_tmp = results.path().join(format!(".y.json.{}.tmp", writer_tag()));
        fs::write(&live_tmp, "{").unwrap();
        live.note_record_tmp(&live_tmp).unwrap();
        // A dead run's folder noting a file that is not its own: the file stays.
        let other = base.path().join("benchctl-run-dead03");
        fs::create_dir(&other).unwrap();
        fs::write(other.join(OWNER_FILE), format!("{}\n", dead.to_label())).unwrap();
        let precious = results.path().join("precious.json");
        fs::write(&precious, "{}").unwrap();
        fs::write(other.join(RECORD_NOTE), precious.to_str().unwrap()).unwrap();

        assert_eq!(
            sweep_stale(base.path()),
            Swept {
                folders: 2,
                records: 1
            }
        );
        assert!(!tmp.exists() && !folder.exists() && !other.exists());
        assert!(live_tmp.exists() && live.path().exists());
        assert!(precious.exists());
    }

    #[test]
    fn the_results_folder_sweep_removes_only_dead_writers_temporary_records() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir
            .path()
            .join(format!(".a.json.{}.tmp", tag(dead_owner())));
        let live = dir.path().join(format!(".b.json.{}.tmp", writer_tag()));
        // An older writer's name names no one; a record itself; a symlink named like a dead
        // writer's temporary record.
        let unnamed = dir.path().join(".c.json.tmp");
        let record = dir.path().join("a.json");
        let target = dir.path().join("target");
        let link = dir
            .path()
            .join(format!(".d.json.{}.tmp", tag(dead_owner())));
        for f in [&dead, &live, &unnamed, &record, &target] {
            fs::write(f, "{").unwrap();
        }
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(sweep_stale_records(dir.path()), 1);
        assert!(!dead.exists());
        for kept in [&live, &unnamed, &record, &target, &link] {
            assert!(fs::symlink_metadata(kept).is_ok(), "{}", kept.display());
        }
        assert_eq!(sweep_stale_records(&dir.path().join("missing")), 0);
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
