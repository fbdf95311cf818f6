//! `benchctl history DIR`: the records under a folder, night by night, as one page.

use crate::args::parse_threshold;
use crate::failure::Failure;
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use report::Format;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// The folder of records: a night's folder per night (`results/nightly`, as `just nightly`
    /// keeps them), or records side by side; A/B and plain runs alike.
    dir: PathBuf,
    #[arg(long, short = 'f', value_enum, default_value_t = HistoryFormat::Markdown)]
    format: HistoryFormat,
    /// Write the page to this file (replaced whole, never left half-written) instead of
    /// standard output.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// The smallest change of a figure's level named as a change point, e.g. 5% or 0.05.
    #[arg(long, default_value = "5%")]
    threshold: String,
}

/// The formats `benchctl history` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    Markdown,
    Html,
}

pub fn main(a: HistoryArgs) -> Result<ExitCode, Failure> {
    let threshold = parse_threshold(&a.threshold).map_err(Failure::usage)?;
    let report::record::FolderRecords { records, skipped } =
        report::record::read_records(&a.dir).map_err(Failure::usage)?;
    for s in &skipped {
        eprintln!("benchctl: warning: not read: {}: {}", s.path, s.reason);
    }
    if records.is_empty() {
        return Err(Failure::usage(anyhow!(
            "{}: no benchctl results records in it (looked for *.json down to 4 folders deep{})",
            a.dir.display(),
            if skipped.is_empty() {
                String::new()
            } else {
                format!("; {} file(s) were not records", skipped.len())
            }
        )));
    }
    let h = report::analysis::history::history(
        &a.dir.display().to_string(),
        records,
        skipped,
        threshold,
    );
    let format = match a.format {
        HistoryFormat::Markdown => Format::Markdown,
        HistoryFormat::Html => Format::Html,
    };
    let text = report::Renderer::embedded().render_history(&h, format)?;
    crate::output::emit(&text, a.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
