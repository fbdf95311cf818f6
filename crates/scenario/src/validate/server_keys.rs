//! The keys of `[[server]]` tables beyond those every server has: a kind's own options, with
//! their positions, and what to say of one its kind does not declare.

use crate::kinds::Kinds;
use crate::manifest::Manifest;
use std::ops::Range;
/// What to say of a server key that neither every server nor its kind has.
pub(super) fn unknown_server_key(
    key: &str,
    server: &str,
    kind: &str,
    manifest: Option<&Manifest>,
) -> String {
    let known: Vec<String> = crate::raw::keys::SERVER
        .iter()
        .map(|k| format!("`{k}`"))
        .chain(
            manifest
                .into_iter()
                .flat_map(|m| m.options.keys().map(|k| format!("`{k}`"))),
        )
        .collect();
    let of = if kind.is_empty() {
        String::new()
    } else {
        format!(" of kind {kind}")
    };
    format!(
        "unknown field `{key}` for server `{server}`{of}, expected one of {} (remove it or correct its spelling; a kind's own keys are in its server.toml)",
        known.join(", ")
    )
}

/// A server table's keys other than the ones every server has: (key, its position, its
/// value's position).
pub(super) type KeyPositions = Vec<(String, Range<usize>, Range<usize>)>;

/// Each server table's keys that are not the ones every server has, with the positions of the
/// key and of its value, by the table's index.
pub(super) fn server_key_positions(src: &str) -> Vec<KeyPositions> {
    let Ok(top) = toml::de::DeTable::parse(src) else {
        return Vec::new();
    };
    server_tables(&top).map_or_else(Vec::new, key_positions)
}

/// The `[[server]]` array of a parsed scenario, if it has one.
pub(super) fn server_tables<'a>(
    top: &'a serde_spanned::Spanned<toml::de::DeTable<'_>>,
) -> Option<&'a toml::de::DeArray<'a>> {
    let (_, servers) = top
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "server")?;
    match servers.get_ref() {
        toml::de::DeValue::Array(list) => Some(list),
        _ => None,
    }
}

/// [`server_key_positions`] of an already parsed `[[server]]` array.
fn key_positions(list: &toml::de::DeArray<'_>) -> Vec<KeyPositions> {
    list.iter()
        .map(|t| match t.get_ref() {
            toml::de::DeValue::Table(t) => t
                .iter()
                .filter(|(k, _)| !crate::raw::keys::SERVER.contains(&k.get_ref().as_ref()))
                .map(|(k, v)| (k.get_ref().to_string(), k.span(), v.span()))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The server keys of `src` that neither every server nor the server's kind has, for a
/// scenario whose other unknown keys stop it before its servers are checked.
pub(crate) fn unknown_server_keys(src: &str, kinds: &Kinds) -> Vec<(Range<usize>, String)> {
    use toml::de::{DeTable, DeValue};
    let Ok(top) = DeTable::parse(src) else {
        return Vec::new();
    };
    let Some(list) = server_tables(&top) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (t, keys) in list.iter().zip(key_positions(list)) {
        let DeValue::Table(t) = t.get_ref() else {
            continue;
        };
        let text = |key: &str| {
            t.iter()
                .find(|(k, _)| k.get_ref().as_ref() == key)
                .and_then(|(_, v)| match v.get_ref() {
                    DeValue::String(s) => Some(s.to_string()),
                    _ => None,
                })
        };
        let name = text("name").unwrap_or_default();
        let kind = text("kind").unwrap_or_default();
        let manifest = kinds.get(&kind).and_then(|k| k.manifest.as_ref().ok());
        if manifest.is_none() && !kind.is_empty() {
            continue; // an unknown kind or a broken manifest: said when its servers are checked
        }
        for (key, span, _) in keys {
            if !manifest.is_some_and(|m| m.options.contains_key(&key)) {
                out.push((span, unknown_server_key(&key, &name, &kind, manifest)));
            }
        }
    }
    out
}
