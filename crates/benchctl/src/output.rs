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

/// Writes `text` to `path`, or to standard output without one; a file is written through a
/// temporary file beside it, renamed over it once complete, so no reader sees half of it and an
/// error leaves the old one as it was. Says where it wrote.
pub(crate) fn emit(text: &str, path: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let Some(path) = path else {
        return Ok(stdout(text)?);
    };
    let name = path
        .file_name()
        .with_context(|| format!("-o {}: not a file name", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))?;
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
