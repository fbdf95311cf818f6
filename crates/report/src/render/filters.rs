//! The templates' own filters: padding, and Markdown's cells and code spans.

use std::collections::HashMap;

/// `lpad(width=N)` right-aligns, `rpad(width=N)` left-aligns a value in N columns, so text
/// templates can lay out tables whose widths the Rust side measured.
pub(super) fn pad_filter(
    right_align: bool,
) -> impl Fn(&tera::Value, &HashMap<String, tera::Value>) -> tera::Result<tera::Value> {
    move |v, args| {
        let w = args
            .get("width")
            .and_then(tera::Value::as_u64)
            .ok_or_else(|| tera::Error::msg("lpad and rpad need a width: lpad(width=8)"))?
            as usize;
        let s = match v {
            tera::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let fill = " ".repeat(w.saturating_sub(s.chars().count()));
        Ok(tera::Value::String(if right_align {
            fill + &s
        } else {
            s + &fill
        }))
    }
}

/// Makes a value safe as Markdown text, in a table cell or not: a `|` would end the cell, a line
/// break the row, and `<...>` would be taken for an HTML tag and vanish.
pub(super) fn md_cell_filter(
    v: &tera::Value,
    _: &HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    Ok(tera::Value::String(md_escape(&value_text(v), true)))
}

/// The same for text inside a code span, where entities would show literally: only what would
/// break the table or the span is changed.
pub(super) fn md_code_filter(
    v: &tera::Value,
    _: &HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    Ok(tera::Value::String(md_escape(&value_text(v), false)))
}

pub(super) fn value_text(v: &tera::Value) -> String {
    match v {
        tera::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn md_escape(s: &str, prose: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' => out.push_str("\\|"),
            '\r' | '\n' => out.push(' '),
            '`' if !prose => out.push('\''),
            '\\' if prose => out.push_str("\\\\"),
            '&' if prose => out.push_str("&amp;"),
            '<' if prose => out.push_str("&lt;"),
            '>' if prose => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}
