//! What commands print: to standard output, in a table format, and how an image reached a
//! host.

use clap::ValueEnum;

/// The formats of a table printed by `run` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Markdown,
}

impl From<TableFormat> for report::Format {
    fn from(f: TableFormat) -> report::Format {
        match f {
            TableFormat::Text => report::Format::Text,
            TableFormat::Markdown => report::Format::Markdown,
        }
    }
}

/// Writes to standard output; a reader that went away (`benchctl ... | head`) is not an error,
/// and must not turn into a panic in the middle of a run whose containers still need removing.
pub fn stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes `text` to `path`, or to standard output without one. A file is written through a
/// temporary file beside it (created new under a random name, so nothing planted at a
/// predictable name is written through) and renamed over it once complete: no reader sees half
/// of it, and an error leaves the old file as it was. The file keeps the mode of the one it
/// replaces, or gets 0644, as a report meant to be read by others. Says where it wrote.
pub(crate) fn emit(text: &str, path: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let Some(path) = path else {
        return Ok(stdout(text)?);
    };
    let writing = || format!("writing {}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o777);
    let mut tmp = tempfile::Builder::new()
        .prefix(".benchctl-out-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(writing)?;
    tmp.write_all(text.as_bytes()).with_context(writing)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(writing)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(writing)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// How an image reached `host`: sent (its size and time), or found there already.
pub(crate) fn shipment(host: &str, sent: bool, bytes: u64, seconds: f64) -> String {
    if sent {
        format!(
            "sent to {host}: {:.1} MiB in {seconds:.1} s, the same id there",
            bytes as f64 / f64::from(1 << 20)
        )
    } else {
        format!("already there on {host}")
    }
}
