//! The seed posts' published figures beside today's, measured with the same parameters:
//! `docs/reproductions.md`.
//!
//! Inputs are a folder such as `results/reproductions/`: `published.toml` (each post's own
//! figures, as it printed them) and, per scenario, two records: `<scenario>.json` (the post's
//! parameters as they are) and `<scenario>.headroom.json` (the same with headroom and a capacity
//! search). The page is a pure function of those files, so it can be checked byte for byte.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::capacity::CapacityRecord;
use crate::error::ReportError;
use crate::record::{HostFacts, RecordIo, RunRecord};
use crate::render::{f, md_escape, share_text, summary_lines};
use crate::stats::{self, GroupStats, Metric};

/// The file of published figures in a reproductions folder.
pub const PUBLISHED_FILE: &str = "published.toml";

/// Every seed post's own figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    #[serde(rename = "post")]
    pub posts: Vec<Post>,
}

/// One post: what it measured, on what, and what it concluded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Post {
    /// The post's file under the seeds folder.
    pub seed: String,
    pub title: String,
    /// The machine, in the post's words.
    pub machine: String,
    /// The post's ab parameters.
    pub load: String,
    /// The post's conclusion, quoted.
    pub conclusion: String,
    /// The scenarios that measure it again, by name.
    pub scenarios: Vec<String>,
    #[serde(rename = "row")]
    pub rows: Vec<PublishedRow>,
}

/// One of a post's ab tables.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedRow {
    pub scenario: String,
    /// The scenario's name for the server.
    pub server: String,
    /// ab's Document Path.
    pub path: String,
    /// ab's Server Software, or what the post says the server was.
    pub software: String,
    pub requests_per_second: f64,
    /// ab's "Time per request (mean)".
    pub time_per_request_ms: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// A record and the file name it was read from.
#[derive(Debug, Clone)]
pub struct Measured {
    pub file: String,
    pub record: RunRecord,
}

/// A scenario's records; any may be missing (not measured yet).
#[derive(Debug, Clone, Default)]
pub struct ScenarioRuns {
    pub as_published: Option<Measured>,
    pub headroom: Option<Measured>,
    /// Each server past its capacity (`<scenario>.overload.json`, measured for some posts).
    pub overload: Option<Measured>,
}

/// A reproductions folder, read.
#[derive(Debug, Clone)]
pub struct Reproductions {
    pub published: Published,
    /// By scenario name.
    pub runs: BTreeMap<String, ScenarioRuns>,
}

impl Reproductions {
    /// Reads `published.toml` and the records of every scenario it names. A record that is
    /// missing is left out (the page says so); one that cannot be read is an error.
    pub fn load(dir: &Path) -> Result<Reproductions, ReportError> {
        let path = dir.join(PUBLISHED_FILE);
        let text = userfile::read_to_string(&path).map_err(|source| ReportError::Read {
            path: path.clone(),
            source,
        })?;
        let published = parse_published(&text, &path)?;
        let mut runs = BTreeMap::new();
        for post in &published.posts {
            for name in &post.scenarios {
                let read = |file: String| -> Result<Option<Measured>, ReportError> {
                    let p = dir.join(&file);
                    if !p.exists() {
                        return Ok(None);
                    }
                    Ok(Some(Measured {
                        record: RunRecord::load(&p)?,
                        file,
                    }))
                };
                runs.insert(
                    name.clone(),
                    ScenarioRuns {
                        as_published: read(format!("{name}.json"))?,
                        headroom: read(format!("{name}.headroom.json"))?,
                        overload: read(format!("{name}.overload.json"))?,
                    },
                );
            }
        }
        Ok(Reproductions { published, runs })
    }
}

/// Parses and checks a `published.toml`: every row's scenario is one its post names.
pub fn parse_published(text: &str, path: &Path) -> Result<Published, ReportError> {
    let invalid = |detail: String| ReportError::Published {
        path: PathBuf::from(path),
        detail,
    };
    let published: Published = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let (line, col) = line_col(text, s.start);
                format!("line {line}, column {col}: ")
            })
            .unwrap_or_default();
        invalid(format!("{at}{}", e.message()))
    })?;
    for post in &published.posts {
        for row in &post.rows {
            if !post.scenarios.contains(&row.scenario) {
                return Err(invalid(format!(
                    "post {}: a row names scenario {:?}, which is not among its scenarios {:?}",
                    post.seed, row.scenario, post.scenarios
                )));
            }
            if row.requests_per_second.is_nan() || row.requests_per_second <= 0.0 {
                return Err(invalid(format!(
                    "post {}: {} {}: requests_per_second must be above 0",
                    post.seed, row.server, row.path
                )));
            }
        }
    }
    Ok(published)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The page: Markdown, a pure function of its inputs.
pub fn render_markdown(r: &Reproductions) -> String {
    let mut out = String::new();
    out.push_str("# The seed posts, measured again\n\n");
    out.push_str(
        "Generated by `just reproductions` from `results/reproductions/` (the records written by \
         `just reproduce`, and `published.toml`, the posts' own figures); do not edit it by hand.\n\n",
    );
    out.push_str(
        "Each post is measured twice with its own ab parameters (requests, concurrency, no \
         keep-alive): once as it was, and once with `--headroom auto` and a capacity search. \
         Figures are medians over the rounds; a ratio is a server's figure over the first \
         server's of the same table, as the posts compared them.\n\n",
    );
    out.push_str("- **client-bound**: the load generator, not the server, set the figure (it used 90% of its CPU or more, or read responses later than they were served); its requests/s says as much about the generator as about the server.\n");
    out.push_str("- **share**, **req/s/core**: with `--headroom auto` a server whose load left the generator no headroom is measured again with a smaller CPU quota, until the generator has headroom; requests/s per core of server CPU then compares servers capped differently.\n");
    out.push_str("- **CPU/req**: the server's CPU time per request over the first server's; it holds whether or not the generator was the bottleneck.\n");
    out.push_str("- **capacity**: the highest constant request rate whose latency percentile stayed within the target, with under 0.1% errors and the generator keeping its schedule; \">=\" is a lower bound (the generator's limit was reached first).\n\n");
    machine_section(&mut out, r);
    for post in &r.published.posts {
        post_section(&mut out, post, r);
    }
    out
}

fn machine_section(out: &mut String, r: &Reproductions) {
    let mut machines: Vec<(&HostFacts, Vec<String>)> = Vec::new();
    let mut versions: Vec<&str> = Vec::new();
    let mut first: Option<&str> = None;
    let mut last: Option<&str> = None;
    for m in r
        .runs
        .values()
        .flat_map(|s| [&s.as_published, &s.headroom])
        .flatten()
    {
        let rec = &m.record;
        match machines.iter_mut().find(|(h, _)| **h == rec.host) {
            Some((_, files)) => files.push(m.file.clone()),
            None => machines.push((&rec.host, vec![m.file.clone()])),
        }
        if !versions.contains(&rec.benchctl_version.as_str()) {
            versions.push(&rec.benchctl_version);
        }
        let t = rec.started_at.as_str();
        first = Some(first.map_or(t, |f| f.min(t)));
        last = Some(last.map_or(t, |l| l.max(t)));
    }
    out.push_str("## The machine\n\n");
    if machines.is_empty() {
        out.push_str("Nothing has been measured yet: run `just reproduce`.\n\n");
        return;
    }
    for (host, files) in &machines {
        let _ = write!(
            out,
            "- {}, {} logical CPUs, Linux {}, Docker {}",
            md_escape(&host.cpu_model, true),
            host.cores,
            md_escape(&host.kernel, true),
            md_escape(host.docker_version.as_deref().unwrap_or("unknown"), true)
        );
        if machines.len() > 1 {
            let _ = write!(out, " ({})", files.join(", "));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "- benchctl {}; runs started between {} and {}",
        versions.join(", "),
        first.unwrap_or("-"),
        last.unwrap_or("-")
    );
    out.push_str("- servers and load generator on the same machine, on separate CPUs (the scenarios' `[cpus]`: servers on CPU 1, the generator on CPU 0)\n\n");
}

fn post_section(out: &mut String, post: &Post, r: &Reproductions) {
    let _ = writeln!(out, "## {} ({})\n", md_escape(&post.title, true), post.seed);
    let _ = writeln!(
        out,
        "- The post's machine: {}",
        md_escape(&post.machine, true)
    );
    let _ = writeln!(out, "- The post's load: `{}`", post.load);
    let _ = writeln!(
        out,
        "- The post concluded: \"{}\"\n",
        md_escape(&post.conclusion, true)
    );
    for scenario in &post.scenarios {
        let runs = r.runs.get(scenario).cloned().unwrap_or_default();
        let rows: Vec<&PublishedRow> = post
            .rows
            .iter()
            .filter(|row| &row.scenario == scenario)
            .collect();
        let mut paths: Vec<&str> = Vec::new();
        for row in &rows {
            if !paths.contains(&row.path.as_str()) {
                paths.push(&row.path);
            }
        }
        for path in paths {
            let doc_rows: Vec<&PublishedRow> = rows
                .iter()
                .copied()
                .filter(|row| row.path == path)
                .collect();
            let _ = writeln!(out, "### `{scenario}`: `{path}`\n");
            as_published_table(out, &doc_rows, runs.as_published.as_ref(), path);
            headroom_table(out, &doc_rows, runs.headroom.as_ref(), path);
            rankings(out, &doc_rows, &runs, path);
            overload_table(out, runs.overload.as_ref(), path);
        }
    }
}

/// Groups of a record's loads at a document path, in scenario order.
fn groups_at(record: &RunRecord, path: &str) -> Vec<GroupStats> {
    stats::summarize(record)
        .into_iter()
        .filter(|g| g.url_path == path)
        .collect()
}

fn median(g: &GroupStats, m: Metric) -> Option<f64> {
    g.get(m).map(|s| s.median).filter(|v| v.is_finite())
}

fn ratio_of(v: Option<f64>, reference: Option<f64>) -> String {
    match (v, reference) {
        (Some(v), Some(r)) if r > 0.0 => format!("{}x", f(v / r, 2)),
        _ => "-".to_string(),
    }
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| f(v, decimals))
}

/// The servers of a table: the scenario's, in its order, then any only the post had.
fn server_order(rows: &[&PublishedRow], groups: &[GroupStats]) -> Vec<String> {
    let mut names: Vec<String> = groups.iter().map(|g| g.server.clone()).collect();
    for r in rows {
        if !names.contains(&r.server) {
            names.push(r.server.clone());
        }
    }
    names
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&line(header.iter().map(|h| h.to_string()).collect()));
    out.push_str(&line(
        header
            .iter()
            .enumerate()
            .map(|(i, _)| {
                if i == 0 || i + 1 == header.len() {
                    "---"
                } else {
                    "---:"
                }
                .to_string()
            })
            .collect(),
    ));
    for r in rows {
        out.push_str(&line(r.iter().map(|c| cell_escape(c)).collect()));
    }
    out.push('\n');
}

/// A table cell's text: a `|` would end the cell, a line break the row.
fn cell_escape(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn unavailable_reason(record: &RunRecord, server: &str) -> Option<String> {
    stats::unavailable(record)
        .into_iter()
        .find(|(s, _)| s == server)
        .map(|(_, why)| why.lines().next().unwrap_or_default().to_string())
}

fn as_published_table(
    out: &mut String,
    published: &[&PublishedRow],
    measured: Option<&Measured>,
    path: &str,
) {
    let Some(m) = measured else {
        out.push_str("As published: not measured yet.\n\n");
        return;
    };
    let record = &m.record;
    let groups = groups_at(record, path);
    let rounds = groups.iter().map(|g| g.rounds).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "**As published** (`{}`, {} round{}, {}):\n",
        m.file,
        rounds,
        if rounds == 1 { "" } else { "s" },
        record.started_at
    );
    // Both ratios are to the same server: the first of the table.
    let order = server_order(published, &groups);
    let then_ref = order.first().and_then(|name| {
        published
            .iter()
            .find(|r| &r.server == name)
            .map(|r| r.requests_per_second)
    });
    let now_first = groups.first();
    let now_ref = now_first.and_then(|g| median(g, Metric::RequestsPerSecond));
    let cpu_ref = now_first.and_then(|g| median(g, Metric::ServerCpuSPer10k));
    let mut rows = Vec::new();
    for name in order {
        let then = published.iter().find(|r| r.server == name);
        let now = groups.iter().find(|g| g.server == name);
        let software_now = record
            .servers
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.server_header.clone())
            .unwrap_or_else(|| "-".to_string());
        let flags = match now {
            None => unavailable_reason(record, &name).map_or_else(
                || "not measured".to_string(),
                |why| format!("unavailable: {why}"),
            ),
            Some(g) => {
                let mut flags = Vec::new();
                if g.client_bound {
                    flags.push("client-bound".to_string());
                }
                if let Some(s) = g.too_short_s {
                    flags.push(format!("too short ({} ms)", f(s * 1e3, 0)));
                }
                if let Some((lo, hi)) = g.repetitions {
                    flags.push(if lo == hi {
                        format!("ab load x{lo}")
                    } else {
                        format!("ab load x{lo}-{hi}")
                    });
                }
                flags.join(", ")
            }
        };
        let rps_now = now.and_then(|g| median(g, Metric::RequestsPerSecond));
        rows.push(vec![
            name.clone(),
            then.map_or_else(|| "(not in the post)".to_string(), |r| r.software.clone()),
            software_now,
            then.map_or_else(|| "-".to_string(), |r| f(r.requests_per_second, 0)),
            cell(rps_now, 0),
            ratio_of(then.map(|r| r.requests_per_second), then_ref),
            ratio_of(rps_now, now_ref),
            format!(
                "{} / {}",
                cell(then.and_then(|r| r.p50_ms), 0),
                cell(now.and_then(|g| p50_ms(record, &g.server, path)), 1)
            ),
            ratio_of(
                now.and_then(|g| median(g, Metric::ServerCpuSPer10k)),
                cpu_ref,
            ),
            flags,
        ]);
    }
    table(
        out,
        &[
            "server",
            "software then",
            "software now",
            "req/s then",
            "req/s now",
            "ratio then",
            "ratio now",
            "p50 ms then / now",
            "CPU/req now",
            "now",
        ],
        &rows,
    );
    let refs: Vec<&GroupStats> = groups.iter().collect();
    verdict_lines(out, &summary_lines(&refs));
}

/// The median over rounds of each round's p50 Total time, ms.
fn p50_ms(record: &RunRecord, server: &str, path: &str) -> Option<f64> {
    let v: Vec<f64> = record
        .loads
        .iter()
        .filter(|l| l.server == server && l.url_path == path)
        .filter(|l| l.load.timers.total.moments.count > 0)
        .filter_map(|l| {
            l.load
                .timers
                .total
                .percentiles_us
                .iter()
                .find(|(p, _)| (*p - 50.0).abs() < 1e-9)
                .map(|&(_, us)| us as f64 / 1e3)
        })
        .collect();
    (!v.is_empty()).then(|| stats::Summary::of(&v).median)
}

fn verdict_lines(out: &mut String, lines: &[String]) {
    for l in lines {
        let _ = writeln!(out, "- {}", cell_escape(l));
    }
    if !lines.is_empty() {
        out.push('\n');
    }
}

/// The servers past their capacity at `path`, when the scenario's staircase was measured.
fn overload_table(out: &mut String, measured: Option<&Measured>, path: &str) {
    let Some(m) = measured else {
        return;
    };
    let stairs: Vec<_> = m
        .record
        .overload
        .iter()
        .filter(|o| o.url_path == path)
        .collect();
    let Some(first) = stairs.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "Past the knee (`{}`, goodput: 2xx within p{} <= {}; `benchctl run --overload`):\n",
        m.file,
        crate::capacity::search::trim_number(first.criteria.percentile),
        crate::capacity::describe_us(first.criteria.target_us)
    );
    let rows: Vec<Vec<String>> = stairs
        .iter()
        .map(|o| {
            crate::render::overload::summary_cells(o)
                .into_iter()
                .collect()
        })
        .collect();
    table(out, &crate::render::overload::SUMMARY_HEADER, &rows);
    let _ = writeln!(
        out,
        "{}.\n",
        md_escape(&crate::render::overload::rules_text(first), true)
    );
}

fn headroom_table(
    out: &mut String,
    published: &[&PublishedRow],
    measured: Option<&Measured>,
    path: &str,
) {
    let Some(m) = measured else {
        out.push_str("With headroom and capacity: not measured yet.\n\n");
        return;
    };
    let record = &m.record;
    let groups = groups_at(record, path);
    let searches: Vec<&CapacityRecord> = record
        .capacity
        .iter()
        .filter(|c| c.url_path == path)
        .collect();
    let target = searches
        .first()
        .map(|c| c.criteria.target_text())
        .unwrap_or_else(|| "-".to_string());
    let _ = writeln!(
        out,
        "**With `--headroom auto` and capacity at {target}** (`{}`, {}):\n",
        m.file, record.started_at
    );
    let first = groups.first();
    let core_ref = first.and_then(|g| median(g, Metric::RequestsPerServerCore));
    let cpu_ref = first.and_then(|g| median(g, Metric::ServerCpuSPer10k));
    let cap_ref = searches.first().map(|c| &c.result);
    let mut rows = Vec::new();
    for name in server_order(published, &groups) {
        let g = groups.iter().find(|g| g.server == name);
        let search = searches.iter().find(|c| c.server == name);
        if g.is_none() && search.is_none() {
            let why = unavailable_reason(record, &name).map_or_else(
                || "not measured".to_string(),
                |w| format!("unavailable: {w}"),
            );
            rows.push(vec![
                name.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                why,
            ]);
            continue;
        }
        let per_core = g.and_then(|g| median(g, Metric::RequestsPerServerCore));
        rows.push(vec![
            name.clone(),
            g.map_or_else(|| "-".to_string(), |g| share_text(g.shares)),
            cell(g.and_then(|g| median(g, Metric::RequestsPerSecond)), 0),
            cell(per_core, 0),
            ratio_of(per_core, core_ref),
            ratio_of(g.and_then(|g| median(g, Metric::ServerCpuSPer10k)), cpu_ref),
            search.map_or_else(
                || "-".to_string(),
                |c| crate::render::capacity::rate_text(&c.result),
            ),
            match (search, cap_ref) {
                (Some(c), Some(r)) => crate::render::capacity::ratio_text(&c.result, r),
                _ => "-".to_string(),
            },
            g.map_or_else(String::new, |g| {
                if g.client_bound {
                    "client-bound".to_string()
                } else {
                    String::new()
                }
            }),
        ]);
    }
    table(
        out,
        &[
            "server",
            "share",
            "req/s",
            "req/s/core",
            "ratio/core",
            "CPU/req",
            "capacity req/s",
            "capacity ratio",
            "now",
        ],
        &rows,
    );
    let refs: Vec<&GroupStats> = groups.iter().collect();
    verdict_lines(out, &summary_lines(&refs));
}

/// The servers from best to worst by each kind of figure, beside the post's.
fn rankings(out: &mut String, published: &[&PublishedRow], runs: &ScenarioRuns, path: &str) {
    let mut lines: Vec<String> = Vec::new();
    let then: Vec<(String, f64)> = published
        .iter()
        .map(|r| (r.server.clone(), r.requests_per_second))
        .collect();
    lines.push(format!(
        "the post, by requests/s: {}",
        order_text(&then, true)
    ));
    if let Some(m) = &runs.as_published {
        let groups = groups_at(&m.record, path);
        let by = |metric: Metric| -> Vec<(String, f64)> {
            groups
                .iter()
                .filter_map(|g| Some((g.server.clone(), median(g, metric)?)))
                .collect()
        };
        let mut line = format!(
            "today, by requests/s: {}",
            order_text(&by(Metric::RequestsPerSecond), true)
        );
        if groups.iter().any(|g| g.client_bound) {
            line.push_str(" (client-bound rows among them)");
        }
        lines.push(line);
        let cpu = by(Metric::ServerCpuSPer10k);
        if cpu.len() > 1 {
            lines.push(format!(
                "today, by server CPU per request (least first): {}",
                order_text(&cpu, false)
            ));
        }
    }
    if let Some(m) = &runs.headroom {
        let groups = groups_at(&m.record, path);
        let per_core: Vec<(String, f64)> = groups
            .iter()
            .filter_map(|g| Some((g.server.clone(), median(g, Metric::RequestsPerServerCore)?)))
            .collect();
        if per_core.len() > 1 {
            let mut line = format!(
                "with headroom, by requests/s per server core: {}",
                order_text(&per_core, true)
            );
            if groups.iter().any(|g| g.client_bound) {
                line.push_str(" (client-bound rows among them)");
            }
            lines.push(line);
        }
        let caps: Vec<(String, f64)> = m
            .record
            .capacity
            .iter()
            .filter(|c| c.url_path == path)
            .filter_map(|c| Some((c.server.clone(), c.result.rate?)))
            .collect();
        if caps.len() > 1 {
            let mut line = format!("by capacity: {}", order_text(&caps, true));
            if m.record
                .capacity
                .iter()
                .any(|c| c.url_path == path && c.result.is_lower_bound())
            {
                line.push_str(" (lower bounds among them)");
            }
            lines.push(line);
        }
    }
    out.push_str("Rankings, best first:\n\n");
    verdict_lines(out, &lines);
}

/// "nginx > tornado > apache", best first.
fn order_text(values: &[(String, f64)], higher_is_better: bool) -> String {
    let mut v: Vec<&(String, f64)> = values.iter().collect();
    v.sort_by(|a, b| {
        let o = a.1.total_cmp(&b.1);
        if higher_is_better {
            o.reverse()
        } else {
            o
        }
    });
    let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
    if names.is_empty() {
        "-".to_string()
    } else {
        names.join(if higher_is_better { " > " } else { " < " })
    }
}
