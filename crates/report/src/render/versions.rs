//! HTTP versions side by side: where a run measured the same server and path over several
//! versions (`http = ["1.1", "2", "3"]` in a scenario), one row per server and path with each
//! version's requests/s (and its ratio to the first version's) and server CPU per request.

use super::loads::group_loads;
use super::numbers::{median_or_dash, ratio};
use super::table::{Column, TextTable};
use crate::record::{Protocol, RunRecord};
use crate::stats::{GroupStats, Metric};
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct VersionsContext {
    /// The versions' labels, in the order the run measured them.
    pub(super) versions: Vec<&'static str>,
    pub(super) rows: Vec<VersionRow>,
    pub(super) table: TextTable,
}

#[derive(Serialize)]
pub(super) struct VersionRow {
    pub(super) server: String,
    pub(super) url_path: String,
    /// One per version, "-" where this server has none.
    pub(super) cells: Vec<VersionCell>,
}

#[derive(Serialize)]
pub(super) struct VersionCell {
    pub(super) rps: String,
    /// To the row's first version: "1.22x".
    pub(super) ratio: String,
    pub(super) cpu_10k: String,
}

/// What a load over `p` is called in the table.
fn label(p: Option<Protocol>) -> &'static str {
    match p {
        None => "HTTP/1",
        Some(Protocol::Https) => "HTTP/1 TLS",
        Some(Protocol::H2) => "HTTP/2",
        Some(Protocol::H2c) => "h2c",
        Some(Protocol::H3) => "HTTP/3",
    }
}

/// One server and path's groups, each with its version's label.
type ByVersion<'a> = Vec<(&'static str, &'a GroupStats)>;

/// The table, when some server and path were measured over more than one version.
pub(super) fn versions(record: &RunRecord, groups: &[GroupStats]) -> Option<VersionsContext> {
    let mut versions: Vec<&'static str> = Vec::new();
    // (server, url_path) in the order first met, with its groups by version.
    let mut keyed: Vec<((&str, &str), ByVersion)> = Vec::new();
    for g in groups {
        let Some(first) = group_loads(record, &g.server, &g.document)
            .into_iter()
            .next()
        else {
            continue;
        };
        let v = label(first.protocol);
        if !versions.contains(&v) {
            versions.push(v);
        }
        let key = (g.server.as_str(), g.url_path.as_str());
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, by)) => by.push((v, g)),
            None => keyed.push((key, vec![(v, g)])),
        }
    }
    keyed.retain(|(_, by)| by.len() > 1);
    if keyed.is_empty() {
        return None;
    }
    let rows: Vec<VersionRow> = keyed
        .iter()
        .map(|((server, path), by)| {
            let reference = by
                .first()
                .and_then(|(_, g)| g.get(Metric::RequestsPerSecond))
                .map(|s| s.median);
            let cells = versions
                .iter()
                .map(|v| {
                    let g = by.iter().find(|(w, _)| w == v).map(|(_, g)| *g);
                    let rps = g.and_then(|g| g.get(Metric::RequestsPerSecond));
                    VersionCell {
                        rps: median_or_dash(rps, 2),
                        ratio: rps.map_or_else(|| "-".to_string(), |s| ratio(s.median, reference)),
                        cpu_10k: median_or_dash(g.and_then(|g| g.get(Metric::ServerCpuSPer10k)), 3),
                    }
                })
                .collect();
            VersionRow {
                server: server.to_string(),
                url_path: path.to_string(),
                cells,
            }
        })
        .collect();
    let headers: Vec<String> = versions
        .iter()
        .map(|v| format!("{v} req/s"))
        .chain(versions.iter().map(|v| format!("{v} CPU-s/10k")))
        .collect();
    let mut columns = vec![Column::left("server"), Column::left("path")];
    columns.extend(headers.iter().map(|h| Column::right(h)));
    let text_rows = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.server.clone(), r.url_path.clone()];
            cells.extend(r.cells.iter().map(|c| match c.rps.as_str() {
                "-" => "-".to_string(),
                rps => format!("{rps} ({})", c.ratio),
            }));
            cells.extend(r.cells.iter().map(|c| c.cpu_10k.clone()));
            (cells, String::new())
        })
        .collect();
    Some(VersionsContext {
        table: TextTable::new(&columns, text_rows),
        versions,
        rows,
    })
}
