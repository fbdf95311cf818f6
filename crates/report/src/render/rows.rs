//! The head-to-head table of one document: a row per server, its flags, and the lines and
//! notes under the table.

use super::numbers::{f, median_or_dash, ratio};
use super::table::{Column, TextTable};
use crate::stats::{GroupStats, Metric};
use serde::Serialize;

/// One server's line of the head-to-head table, every cell already formatted.
#[derive(Serialize)]
pub(super) struct Row {
    pub(super) server: String,
    pub(super) rounds: String,
    pub(super) rps: String,
    /// "±12.34", or "" for one round.
    pub(super) rps_ci: String,
    /// The median and its "±", as one cell.
    pub(super) rps_cell: String,
    pub(super) ratio: String,
    pub(super) mean_ms: String,
    pub(super) p99_ms: String,
    pub(super) transfer: String,
    pub(super) failures: String,
    pub(super) cpu_10k: String,
    pub(super) memory_mb: String,
    /// The CPU share, cores ("0.25", "0.17-0.25"), or "-".
    pub(super) share: String,
    /// Requests/s per core of the share, median, or "-".
    pub(super) rps_core: String,
    /// "noisy", "client-bound", joined by ", ".
    pub(super) flags: String,
}

pub(super) fn row(g: &GroupStats, reference: Option<f64>) -> Row {
    let rps = g.get(Metric::RequestsPerSecond);
    let rps_ci = rps
        .filter(|s| s.n >= 2)
        .map(|s| format!("±{}", f(s.ci_half_width(), 2)))
        .unwrap_or_default();
    let mut flags = Vec::new();
    if g.noisy() {
        flags.push("noisy");
    }
    if g.client_bound {
        flags.push("client-bound");
    }
    if g.too_short_s.is_some() {
        flags.push("too short");
    }
    if !g.unsteady.is_empty() {
        flags.push("unsteady");
    }
    Row {
        server: g.server.clone(),
        rounds: g.rounds.to_string(),
        rps: median_or_dash(rps, 2),
        rps_ci: rps_ci.clone(),
        rps_cell: if rps_ci.is_empty() {
            median_or_dash(rps, 2)
        } else {
            format!("{} {rps_ci}", median_or_dash(rps, 2))
        },
        ratio: rps.map_or_else(|| "-".to_string(), |s| ratio(s.median, reference)),
        mean_ms: median_or_dash(g.get(Metric::MeanLatencyMs), 2),
        p99_ms: median_or_dash(g.get(Metric::P99LatencyMs), 2),
        transfer: median_or_dash(g.get(Metric::TransferRateKBps), 2),
        failures: median_or_dash(g.get(Metric::Failures), 0),
        cpu_10k: median_or_dash(g.get(Metric::ServerCpuSPer10k), 3),
        memory_mb: median_or_dash(g.get(Metric::ServerPeakMemoryMb), 1),
        share: share_text(g.shares),
        rps_core: median_or_dash(g.get(Metric::RequestsPerServerCore), 2),
        flags: flags.join(", "),
    }
}

/// The head-to-head table's columns in the text report.
pub(super) const HEAD_TO_HEAD: [Column; 10] = [
    Column::left("server"),
    Column::right("runs"),
    Column::right("requests/s"),
    Column::right("ratio"),
    Column::right("mean ms"),
    Column::right("p99 ms"),
    Column::right("KB/s"),
    Column::right("failed"),
    Column::right("CPU-s/10k"),
    Column::right("mem MB"),
];

/// The columns a capped run adds after the ratio: the share and requests/s per core of it.
pub(super) const CAPPED: [Column; 2] = [Column::right("share"), Column::right("req/s/core")];

pub(super) fn head_to_head_table(rows: &[Row], capped: bool) -> TextTable {
    let mut columns: Vec<Column> = HEAD_TO_HEAD[..4].to_vec();
    if capped {
        columns.extend(CAPPED);
    }
    columns.extend_from_slice(&HEAD_TO_HEAD[4..]);
    TextTable::new(
        &columns,
        rows.iter()
            .map(|r| {
                let mut cells = vec![&r.server, &r.rounds, &r.rps_cell, &r.ratio];
                if capped {
                    cells.extend([&r.share, &r.rps_core]);
                }
                cells.extend([
                    &r.mean_ms,
                    &r.p99_ms,
                    &r.transfer,
                    &r.failures,
                    &r.cpu_10k,
                    &r.memory_mb,
                ]);
                (cells.into_iter().cloned().collect(), r.flags.clone())
            })
            .collect(),
    )
}

/// The head-to-head verdict, a line per server after the first, against the first. When
/// neither row was client-bound: "nginx served 1.66 times as many requests/s as apache". When
/// either was, its requests/s were the load generator's, so the verdict leads with the servers'
/// own CPU per request and names the requests/s ratio for what it is.
pub(crate) fn summary_lines(groups: &[&GroupStats]) -> Vec<String> {
    let Some((first, rest)) = groups.split_first() else {
        return Vec::new();
    };
    let median = |g: &GroupStats, m: Metric| g.get(m).map(|s| s.median).filter(|v| *v > 0.0);
    rest.iter()
        .filter_map(|g| {
            let rps = median(first, Metric::RequestsPerSecond)
                .zip(median(g, Metric::RequestsPerSecond))
                .map(|(base, m)| m / base);
            if !first.client_bound && !g.client_bound {
                let per_core = median(first, Metric::RequestsPerServerCore)
                    .zip(median(g, Metric::RequestsPerServerCore))
                    .map(|(base, m)| m / base);
                if let Some(r) = per_core {
                    return Some(format!(
                        "{} served {r:.2} times as many requests/s per server core as {} ({} at {} of a core, {} at {})",
                        g.server,
                        first.server,
                        g.server,
                        share_text(g.shares),
                        first.server,
                        share_text(first.shares)
                    ));
                }
                return rps.map(|r| {
                    format!(
                        "{} served {r:.2} times as many requests/s as {}",
                        g.server, first.server
                    )
                });
            }
            let bound = match (first.client_bound, g.client_bound) {
                (true, true) => "both rows were client-bound".to_string(),
                (true, false) => format!("{}'s row was client-bound", first.server),
                _ => format!("{}'s row was client-bound", g.server),
            };
            let rps_part = rps.map_or_else(String::new, |r| {
                format!(", so the requests/s ratio ({r:.2}) measures the load generator as much as the servers")
            });
            let cpu = median(first, Metric::ServerCpuSPer10k)
                .zip(median(g, Metric::ServerCpuSPer10k))
                .map(|(base, m)| m / base);
            Some(match cpu {
                Some(c) => format!(
                    "{} used {c:.2}x {}'s CPU per request ({bound}{rps_part})",
                    g.server, first.server
                ),
                None => format!(
                    "no verdict between {} and {}: {bound}{rps_part}, and the servers' CPU was not measured",
                    g.server, first.server
                ),
            })
        })
        .collect()
}

/// A share range as the tables print it: "0.25", or "0.17-0.25" when rounds differed.
pub(crate) fn share_text(shares: Option<(f64, f64)>) -> String {
    match shares {
        None => "-".to_string(),
        Some((lo, hi)) if lo == hi => format!("{lo}"),
        Some((lo, hi)) => format!("{lo}-{hi}"),
    }
}

pub(super) fn notes(g: &GroupStats) -> Vec<String> {
    let mut out = Vec::new();
    let disagree: Vec<String> = g
        .noisy_headlines()
        .map(|(m, s)| {
            let (half, spread) = if s.median != 0.0 {
                (s.ci_half_width() / s.median.abs(), s.relative_spread)
            } else {
                (0.0, 0.0)
            };
            format!(
                "{}: 95% CI ±{:.1}%, spread {:.1}% of the median",
                m.label(),
                half * 100.0,
                spread * 100.0
            )
        })
        .collect();
    if !disagree.is_empty() {
        out.push(format!(
            "{}: rounds disagree ({}); take its numbers with care",
            g.server,
            disagree.join("; ")
        ));
    }
    if g.client_bound {
        out.push(format!(
            "{}: client-bound: the load generator used a full core per thread or fell behind reading the responses, so {}",
            g.server,
            if g.rx_stamps {
                "requests/s may measure the client rather than the server (the latencies, timed by the kernel's receive stamps, leave the generator's delay out)"
            } else {
                "these numbers may measure the client rather than the server"
            }
        ));
    }
    if let Some(used) = g
        .share_used
        .filter(|u| *u < crate::record::SHARE_USED_FULLY)
    {
        out.push(format!(
            "{}: used {:.0}% of its CPU share (something other than its CPU held it back, or other work on its cores), so its requests/s per server core are over the CPU it used",
            g.server,
            used * 100.0
        ));
    }
    if let Some(s) = g.too_short_s {
        out.push(format!(
            "{}: too short to measure: its loads lasted {:.0} ms at most; `min_duration = \"5s\"` under [load] repeats each load back to back until it lasts that long",
            g.server,
            s * 1000.0,
        ));
    }
    if let Some((round, note)) = g.unsteady.first() {
        let what = crate::notes::describe(note);
        out.push(match (g.unsteady.len(), g.rounds) {
            (_, 1) => format!("{}: not steady: {what}", g.server),
            (1, n) => format!("{}: round {round} of {n} not steady: {what}", g.server),
            (m, n) => format!(
                "{}: {m} of {n} rounds not steady, round {round}: {what}",
                g.server
            ),
        });
    }
    if let Some((lo, hi)) = g.repetitions {
        let times = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo} to {hi}")
        };
        out.push(format!(
            "{}: each round ran the load {times} times back to back to last its min_duration; the figures count all of them",
            g.server
        ));
    }
    out
}
