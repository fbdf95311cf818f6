//! What the checks of every table share: names, positions, sizes and the scenario's HTTP
//! version.

use super::limits::MAX_NAME_LEN;
use crate::error::Diagnostics;
use crate::raw::RawSize;
use crate::units::parse_size;
use model::HttpVersion;
use serde_spanned::Spanned;
use std::ops::Range;
/// A name of the scenario, a server, a document or a host: `[a-z0-9-]+`, at most
/// [`MAX_NAME_LEN`] long.
pub(super) fn check_name(d: &mut Diagnostics, name: &Spanned<String>, what: &str) {
    let n = name.get_ref();
    let valid_chars = n
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if n.is_empty() {
        d.error(
            name.span(),
            format!("{what} name is empty (use letters a-z, digits and -)"),
        );
    } else if !valid_chars {
        let suggestion: String = n
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        d.error(
            name.span(),
            format!(
                "{what} name `{n}` may only use a-z, 0-9 and - (rename it, e.g. `{suggestion}`)"
            ),
        );
    } else if n.len() > MAX_NAME_LEN {
        d.error(
            name.span(),
            format!("{what} name `{n}` is longer than {MAX_NAME_LEN} characters (shorten it)"),
        );
    }
}

pub(super) fn line_of(d: &Diagnostics, span: Range<usize>) -> usize {
    d.line_column(span.start).0
}

/// Parses a size value, reporting at its position. `key` names it in messages.
pub(super) fn size_value(d: &mut Diagnostics, value: &Spanned<RawSize>, key: &str) -> Option<u64> {
    let parsed = match value.get_ref() {
        RawSize::Number(n) => u64::try_from(*n).map_err(|_| {
            format!("{key} cannot be negative ({n}); give a size in bytes such as 468 or \"512m\"")
        }),
        RawSize::Text(t) => parse_size(t).map_err(|msg| format!("bad {key}: {msg}")),
    };
    match parsed {
        Ok(n) => Some(n),
        Err(msg) => {
            d.error(value.span(), msg);
            None
        }
    }
}

/// The scenario's top-level `http`: the HTTP version of every load, or the versions every
/// document is measured over.
#[derive(Default)]
pub(super) struct Protocol {
    /// Some load speaks HTTP/2 (`http = "2"`, or a list with `"2"`), with the line that says so.
    pub(super) http2: Option<usize>,
    /// Some load speaks HTTP/3 (`http = "3"`, or a list with `"3"`), with the line.
    pub(super) http3: Option<usize>,
    /// `http = "1.1"` (true) or `"1.0"` (false): the request line of loads that name none.
    pub(super) http11: Option<bool>,
    /// `http = [...]`: every document is measured over each of these, in the list's order;
    /// empty for a single version.
    pub(super) each: Vec<HttpVersion>,
    /// The key as written, for messages: `http = "2"`, `http = ["1.1", "3"]`.
    pub(super) said: String,
    /// The servers serve TLS (`tls = true`, or HTTP/3 in `http`).
    pub(super) tls: bool,
}

impl Protocol {
    /// What keeps a load off the io_uring engine, which drives HTTP/1.x and HTTP/2 (plain or
    /// over TLS): the scenario's HTTP/3, as a message says it.
    pub(super) fn beyond_uring(&self) -> Option<String> {
        self.http3
            .map(|line| format!("the scenario speaks HTTP/3 ({}, line {line})", self.said))
    }

    /// HTTP/2 or HTTP/3 (`"2"` or `"3"`) where some load speaks it, with what the scenario
    /// says and on which line: requests as streams.
    pub(super) fn multiplexed(&self) -> Option<(&'static str, &str, usize)> {
        match (self.http2, self.http3) {
            (Some(line), _) => Some(("2", &self.said, line)),
            (None, Some(line)) => Some(("3", &self.said, line)),
            (None, None) => None,
        }
    }
}
