//! Errors a scenario file can have, each pinned to a file, line and column so that a
//! user fixes every mistake in one pass instead of discovering them one container at a time.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a scenario file.
///
/// Displays as `path/to/file.toml:12:5: error: <what is wrong> (<what to do>)`, the form
/// editors and CI log viewers turn into links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The scenario file as it was named to [`crate::load_file`] or [`crate::parse_str`].
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters (not bytes) as editors count them.
    pub column: usize,
    /// What is wrong, followed by what to do about it in parentheses.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// Control characters of the file's name or of text quoted from the file are shown
    /// escaped (`\u{1b}`, `\t`): printed raw, an escape sequence would restyle the terminal
    /// and a line break would split the diagnostic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            escape_controls(&self.file.display().to_string()),
            self.line,
            self.column,
            escape_controls(&self.message)
        )
    }
}

/// `text` with each control character written as Rust writes it in a literal (`\u{1b}`,
/// `\n`, `\t`); other characters as they are.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Why a scenario could not become a [`crate::Plan`].
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read at all.
    #[error("{}: error: cannot read the scenario file: {source} (check the path and its permissions)", escape_controls(&path.display().to_string()))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read and has one or more errors, all of them listed in file order.
    #[error("{}", DiagnosticList(errors))]
    Invalid { errors: Vec<Diagnostic> },
}

impl ScenarioError {
    /// Every positioned error; empty for [`ScenarioError::Read`].
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ScenarioError::Read { .. } => &[],
            ScenarioError::Invalid { errors } => errors,
        }
    }
}

struct DiagnosticList<'a>(&'a [Diagnostic]);

impl fmt::Display for DiagnosticList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Collects diagnostics for one source text, turning byte offsets into line and column.
pub(crate) struct Diagnostics<'a> {
    src: &'a str,
    file: &'a Path,
    list: Vec<(usize, Diagnostic)>,
    /// Byte offset of each line's start, so that a position costs a binary search rather than
    /// a scan from the top of the file (a scenario with 20,000 documents asks for 20,000).
    line_starts: Vec<usize>,
}

impl<'a> Diagnostics<'a> {
    pub(crate) fn new(src: &'a str, file: &'a Path) -> Self {
        let line_starts = std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Diagnostics {
            src,
            file,
            list: Vec::new(),
            line_starts,
        }
    }

    /// Records an error at the start of `span`.
    pub(crate) fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        let (line, column) = self.line_column(span.start);
        self.list.push((
            span.start,
            Diagnostic {
                file: self.file.to_path_buf(),
                line,
                column,
                message: message.into(),
            },
        ));
    }

    /// 1-based line and column of a byte offset in this source.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let start = self.line_starts[line - 1];
        (line, self.src[start..offset].chars().count() + 1)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sorted by position so the output reads top to bottom; the same error reached
    /// through several documents sharing one `[load]` value is reported once.
    pub(crate) fn finish(mut self) -> Result<(), ScenarioError> {
        if self.list.is_empty() {
            return Ok(());
        }
        self.list.sort_by_key(|(offset, _)| *offset);
        self.list
            .dedup_by(|a, b| a.0 == b.0 && a.1.message == b.1.message);
        Err(ScenarioError::Invalid {
            errors: self.list.into_iter().map(|(_, d)| d).collect(),
        })
    }
}

/// 1-based line and character column of a byte offset; offsets past the end or inside a
/// multi-byte character are clamped so a bad span can never panic.
#[cfg(test)]
fn line_column(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_index_agrees_with_a_scan() {
        let src = "a = 1\nbé = 2\n\n[x]\ny = \"ü\"";
        let d = Diagnostics::new(src, Path::new("x.toml"));
        for offset in 0..=src.len() + 3 {
            assert_eq!(d.line_column(offset), line_column(src, offset), "{offset}");
        }
    }

    #[test]
    fn offsets_become_one_based_line_and_character_column() {
        let src = "a = 1\nbé = 2\n";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 4), (1, 5));
        assert_eq!(line_column(src, 6), (2, 1));
        // "é" is two bytes but one column.
        assert_eq!(line_column(src, 9), (2, 3));
        assert_eq!(line_column(src, 8), (2, 2));
        assert_eq!(line_column(src, 1000), (3, 1));
    }

    #[test]
    fn diagnostics_display_in_compiler_form() {
        let d = Diagnostic {
            file: PathBuf::from("scenarios/x.toml"),
            line: 12,
            column: 5,
            message: "bad (fix it)".into(),
        };
        assert_eq!(d.to_string(), "scenarios/x.toml:12:5: error: bad (fix it)");
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        let d = Diagnostic {
            file: PathBuf::from("x\u{1b}[2J.toml"),
            line: 1,
            column: 1,
            message: "`\u{1b}[31mred` is\tnot\nknown (é stays)".into(),
        };
        assert_eq!(
            d.to_string(),
            r"x\u{1b}[2J.toml:1:1: error: `\u{1b}[31mred` is\tnot\nknown (é stays)"
        );
    }
}
