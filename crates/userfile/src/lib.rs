//! Opening a file a user named as input (a results record, a scenario, a request body, a CA
//! file, a source tarball, a template): only a regular file is read.
//!
//! A path can name something that is not a file: `/dev/zero` never ends, a FIFO blocks the
//! open until a writer comes and the read until it closes, a directory cannot be read. Every
//! input is opened with `O_NONBLOCK`, so opening a FIFO returns at once, and then the opened
//! descriptor itself is examined (`fstat`, not the path, which could be replaced in between):
//! anything but a regular file is refused with an error that says what it is. Errors are
//! [`std::io::Error`]s, so callers name the path in their own words around them.

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading, refusing anything that is not a regular file (symlinks to one
/// are followed, as any reader would).
pub fn open(path: &Path) -> io::Result<File> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        // A socket cannot be opened at all (ENXIO, "No such device or address"): say what the
        // path names instead.
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => not_regular(m.file_type()),
                _ => e,
            })
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    // Reads of a regular file never block anyway; the flag goes so the descriptor behaves as an
    // ordinary one wherever it is handed.
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(file)
}

/// The whole content of the regular file `path` ([`open`]).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = open(path)?;
    let mut data = Vec::new();
    f.read_to_end(&mut data)?;
    Ok(data)
}

/// The content of the regular file `path` ([`open`]) as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let mut f = open(path)?;
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

/// What a file type is, in words: "a directory", "a FIFO (named pipe)", ...
pub fn describe(t: FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

fn not_regular(t: FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file", describe(t)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn refusal(path: &Path) -> String {
        let t = Instant::now();
        let e = read(path).expect_err("refused");
        assert!(t.elapsed() < Duration::from_secs(5), "refused at once");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        e.to_string()
    }

    #[test]
    fn a_regular_file_and_a_symlink_to_one_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(&f, "text").unwrap();
        assert_eq!(read(&f).unwrap(), b"text");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_to_string(&link).unwrap(), "text");
        assert_eq!(
            read(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn devices_folders_fifos_and_sockets_are_refused_at_once() {
        assert_eq!(
            refusal(Path::new("/dev/zero")),
            "it is a character device, not a regular file"
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(refusal(dir.path()), "it is a directory, not a regular file");
        // A FIFO without a writer: a blocking open would wait for one forever.
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        assert_eq!(
            refusal(&fifo),
            "it is a FIFO (named pipe), not a regular file"
        );
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert_eq!(refusal(&sock), "it is a socket, not a regular file");
    }
}
