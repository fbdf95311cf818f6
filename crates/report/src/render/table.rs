//! Text tables: one column model for Rust and templates. The headers and alignments live here
//! only; a text template lays out whatever header and rows it is given, padding each cell to
//! the width measured here.

use serde::Serialize;

/// A column of a text table.
#[derive(Clone, Copy)]
pub(crate) struct Column<'a> {
    header: &'a str,
    right: bool,
    /// Pad the column to its widest cell (false for a last column, which is never padded).
    pad: bool,
}

impl<'a> Column<'a> {
    pub(crate) const fn left(header: &'a str) -> Column<'a> {
        Column {
            header,
            right: false,
            pad: true,
        }
    }
    pub(crate) const fn right(header: &'a str) -> Column<'a> {
        Column {
            header,
            right: true,
            pad: true,
        }
    }
    pub(crate) const fn last(header: &'a str) -> Column<'a> {
        Column {
            header,
            right: false,
            pad: false,
        }
    }
}

/// One cell as a template lays it out: `text` padded to `width`, on the left when `right`.
#[derive(Serialize)]
pub(super) struct Cell {
    pub(super) text: String,
    pub(super) width: usize,
    pub(super) right: bool,
}

#[derive(Serialize)]
pub(super) struct TextRow {
    pub(super) cells: Vec<Cell>,
    /// What the template prints after the last cell, if anything (flags, a note).
    pub(super) extra: String,
}

#[derive(Serialize)]
pub(crate) struct TextTable {
    pub(super) header: Vec<Cell>,
    pub(super) rows: Vec<TextRow>,
}

impl TextTable {
    /// `rows`: each row's cells in column order and its extra text.
    pub(crate) fn new(columns: &[Column<'_>], rows: Vec<(Vec<String>, String)>) -> TextTable {
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if !c.pad {
                    return 0;
                }
                rows.iter()
                    .map(|(cells, _)| cells[i].chars().count())
                    .chain([c.header.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let cell = |i: usize, text: String| Cell {
            text,
            width: widths[i],
            right: columns[i].right,
        };
        TextTable {
            header: columns
                .iter()
                .enumerate()
                .map(|(i, c)| cell(i, c.header.to_string()))
                .collect(),
            rows: rows
                .into_iter()
                .map(|(cells, extra)| TextRow {
                    cells: cells
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| cell(i, t))
                        .collect(),
                    extra,
                })
                .collect(),
        }
    }
}
