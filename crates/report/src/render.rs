//! Reports rendered from tera templates: ab's text layout with head-to-head tables, Markdown for
//! CI summaries, and one self-contained HTML page with SVG charts.
//!
//! The templates live in the repository's `templates/` and are embedded in the binary; a directory given to
//! [`Renderer::new`] overrides any of them by file name. The Rust side computes every number,
//! already formatted, into a serializable context; templates only lay it out. Nothing depends
//! on the clock or on hash order, so the same record always renders to the same bytes.

use crate::ab::{self, AbOptions, AbSummary};
use crate::charts::{
    self, BarChart, BarInput, LineChart, SeriesInput, ShadeInput, TimeChart, TimeLineInput,
};
use crate::compare::{Comparison, Verdict};
use crate::error::ReportError;
use crate::paired::{PairedComparison, PairedVerdict};
use crate::record::{LoadRecord, RunRecord, ServerStatus};
use crate::stats::{self, GroupStats, Metric, Summary};
use hdrhistogram::Histogram;
use loadgen::stats::Timer;
use loadgen::steady::{Pattern, Point};
use loadgen::Note;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::OnceLock;

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Html,
}

impl FromStr for Format {
    type Err = ReportError;
    fn from_str(s: &str) -> Result<Format, ReportError> {
        match s.to_ascii_lowercase().as_str() {
            "text" | "txt" => Ok(Format::Text),
            "markdown" | "md" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            _ => Err(ReportError::UnknownFormat(s.to_string())),
        }
    }
}

/// Template file names, each with its embedded text.
pub const TEMPLATES: [(&str, &str); 11] = [
    (
        "report.txt.tera",
        include_str!("../../../templates/report.txt.tera"),
    ),
    (
        "report.md.tera",
        include_str!("../../../templates/report.md.tera"),
    ),
    (
        "report.html.tera",
        include_str!("../../../templates/report.html.tera"),
    ),
    (
        "compare.txt.tera",
        include_str!("../../../templates/compare.txt.tera"),
    ),
    (
        "compare.md.tera",
        include_str!("../../../templates/compare.md.tera"),
    ),
    (AB_TEMPLATE, include_str!("../../../templates/ab.txt.tera")),
    (
        "capacity.txt.tera",
        include_str!("../../../templates/capacity.txt.tera"),
    ),
    (
        "capacity.md.tera",
        include_str!("../../../templates/capacity.md.tera"),
    ),
    (
        "capacity.html.tera",
        include_str!("../../../templates/capacity.html.tera"),
    ),
    (
        "paired.txt.tera",
        include_str!("../../../templates/paired.txt.tera"),
    ),
    (
        "paired.md.tera",
        include_str!("../../../templates/paired.md.tera"),
    ),
];

/// ab's own layout of one load, which the text report embeds per server and `benchctl load`
/// prints.
const AB_TEMPLATE: &str = "ab.txt.tera";

/// A loaded set of templates.
pub struct Renderer {
    tera: tera::Tera,
}

impl Renderer {
    /// The embedded templates, each replaced by the same-named file of `template_dir` when that
    /// file exists.
    pub fn new(template_dir: Option<&Path>) -> Result<Renderer, ReportError> {
        let mut tera = tera::Tera::default();
        // Only the HTML page is escaped; text and Markdown print names as they are (Markdown
        // cells get their own filter), and ab's text prints a Server header holding '<' or '&'
        // as it was sent.
        tera.autoescape_on(vec![".html.tera"]);
        tera.register_filter("lpad", pad_filter(true));
        tera.register_filter("rpad", pad_filter(false));
        tera.register_filter("md_cell", md_cell_filter);
        tera.register_filter("md_code", md_code_filter);
        let read = |name: &str| -> Result<Option<String>, ReportError> {
            let Some(dir) = template_dir else {
                return Ok(None);
            };
            let path = dir.join(name);
            match userfile::read_to_string(&path) {
                Ok(s) => Ok(Some(s)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(source) => Err(ReportError::TemplateRead { path, source }),
            }
        };
        for (name, embedded) in TEMPLATES {
            let text = read(name)?.unwrap_or_else(|| embedded.to_string());
            tera.add_raw_template(name, &text)
                .map_err(|e| ReportError::template(name, &e))?;
        }
        Ok(Renderer { tera })
    }

    /// The embedded templates alone, loaded once.
    pub fn embedded() -> &'static Renderer {
        static EMBEDDED: OnceLock<Renderer> = OnceLock::new();
        EMBEDDED.get_or_init(|| {
            // The embedded templates are covered by the snapshot and golden tests: failing to
            // load them is a bug in this crate, not a condition a caller could handle.
            Renderer::new(None).expect("the embedded templates load")
        })
    }

    /// Renders a run.
    pub fn render(&self, record: &RunRecord, format: Format) -> Result<String, ReportError> {
        let name = match format {
            Format::Text => "report.txt.tera",
            Format::Markdown => "report.md.tera",
            Format::Html => "report.html.tera",
        };
        let ctx = self.report_context(record, format == Format::Html)?;
        self.render_template(name, &ctx)
    }

    /// Renders a comparison as a text or Markdown table; HTML gets the Markdown table, which is
    /// what CI summaries and pull request comments display.
    pub fn render_comparison(
        &self,
        cmp: &Comparison,
        format: Format,
    ) -> Result<String, ReportError> {
        let name = match format {
            Format::Text => "compare.txt.tera",
            Format::Markdown | Format::Html => "compare.md.tera",
        };
        self.render_template(name, &comparison_context(cmp))
    }

    /// Renders the paired comparison of an A/B run as a text or Markdown table (HTML gets the
    /// Markdown).
    pub fn render_paired(
        &self,
        cmp: &PairedComparison,
        format: Format,
    ) -> Result<String, ReportError> {
        let name = match format {
            Format::Text => "paired.txt.tera",
            Format::Markdown | Format::Html => "paired.md.tera",
        };
        self.render_template(name, &paired_context(cmp))
    }

    /// ab's text for one load, from the line break ab prints before "Server Software:" to the
    /// end of its output.
    pub fn ab_text(&self, summary: &AbSummary) -> Result<String, ReportError> {
        self.render_template(AB_TEMPLATE, summary)
    }

    fn render_template(&self, name: &str, ctx: &impl Serialize) -> Result<String, ReportError> {
        let ctx =
            tera::Context::from_serialize(ctx).map_err(|e| ReportError::template(name, &e))?;
        self.tera
            .render(name, &ctx)
            .map_err(|e| ReportError::template(name, &e))
    }

    fn stored_ab_text(&self, l: &LoadRecord) -> Result<String, ReportError> {
        let mut summary = ab::summarize_report(&l.load, &AbOptions::default())
            .map_err(|e| hist_error(l, &e.to_string()))?;
        summary.protocol = l.protocol_line();
        self.ab_text(&summary)
    }

    fn report_context(&self, record: &RunRecord, html: bool) -> Result<ReportContext, ReportError> {
        let groups = stats::summarize(record);
        let server_names = stats::servers(record);
        let colour_of =
            |name: &str| charts::colour(server_names.iter().position(|s| s == name).unwrap_or(0));
        let unavailable = stats::unavailable(record);
        let mut documents = Vec::new();
        for (di, doc) in stats::documents(record).iter().enumerate() {
            let doc_groups: Vec<&GroupStats> =
                groups.iter().filter(|g| &g.document == doc).collect();
            let reference = doc_groups
                .first()
                .and_then(|g| g.get(Metric::RequestsPerSecond))
                .map(|s| s.median);
            let rows: Vec<Row> = doc_groups.iter().map(|g| row(g, reference)).collect();
            // Any server of this document capped at a CPU share: the tables show the shares
            // and requests/s per server core.
            let capped = doc_groups.iter().any(|g| g.shares.is_some());
            let mut ab_blocks = Vec::new();
            for g in &doc_groups {
                let loads = group_loads(record, &g.server, doc);
                let (pick, label) = median_round(&loads);
                let mut text = self.stored_ab_text(pick)?;
                // A load sent from several hosts: the tables are their merge; a line each.
                if !pick.generators.is_empty() {
                    text.push_str(&format!(
                        "\nGenerators ({} of {} merged above):\n",
                        pick.generators.iter().filter(|g| g.error.is_none()).count(),
                        pick.generators.len()
                    ));
                    for g in &pick.generators {
                        text.push_str(&format!("  {}\n", g.summary_line()));
                    }
                }
                ab_blocks.push(AbBlock {
                    server: g.server.clone(),
                    round_label: label,
                    text,
                });
            }
            let notes = doc_groups.iter().flat_map(|g| notes(g)).collect();
            let charts = if html {
                Some(doc_charts(record, di, doc, &doc_groups, &colour_of)?)
            } else {
                None
            };
            documents.push(DocumentContext {
                name: doc.clone(),
                url_path: doc_groups
                    .first()
                    .map(|g| g.url_path.clone())
                    .unwrap_or_default(),
                table: head_to_head_table(&rows, capped),
                summary: summary_lines(&doc_groups),
                capped,
                rows,
                ab_blocks,
                notes,
                charts,
                capacity: crate::capacity::context(record, doc),
            });
        }
        Ok(ReportContext {
            run: run_info(record),
            servers: record
                .servers
                .iter()
                .map(|s| ServerContext {
                    name: s.name.clone(),
                    kind: s.kind.clone(),
                    // A server whose image was never made (a kind that cannot serve what the
                    // scenario asks) has none to name.
                    image_tag: if s.image_tag.is_empty() {
                        "-".to_string()
                    } else {
                        s.image_tag.clone()
                    },
                    image_id: s
                        .image_id
                        .as_deref()
                        .map(short_id)
                        .unwrap_or("-")
                        .to_string(),
                    server_header: s.server_header.clone().unwrap_or_else(|| "-".to_string()),
                    host: s.host.clone(),
                    colour: colour_of(&s.name).to_string(),
                    state: match &s.status {
                        ServerStatus::Available { ready_s } => format!("ready in {ready_s:.1} s"),
                        // Why is said once, in the list of unavailable servers.
                        ServerStatus::Unavailable { .. } => "unavailable (see below)".to_string(),
                    },
                })
                .collect(),
            unavailable: unavailable
                .into_iter()
                .map(|(server, reason)| Unavailable {
                    server,
                    // Records before one-line reasons carried the log's last lines in it.
                    reason: reason.lines().next().unwrap_or_default().to_string(),
                })
                .collect(),
            any_host: record.servers.iter().any(|s| s.host.is_some()),
            engines: record.engines.iter().map(engine_context).collect(),
            documents,
        })
    }
}

/// One `[[host]]` engine as reports show it: what it said of itself when the run started.
fn engine_context(e: &crate::record::EngineRecord) -> EngineContext {
    EngineContext {
        name: e.name.clone(),
        url: e.url.clone(),
        facts: format!(
            "Docker {} (API {}), {} CPUs, {:.1} GiB, kernel {}, clock {:+.3} s (±{:.3})",
            e.version,
            e.api_version,
            e.cpus,
            e.memory_bytes as f64 / (1u64 << 30) as f64,
            e.kernel,
            e.clock_offset_s,
            e.clock_uncertainty_s
        ),
    }
}

/// Renders a run with the embedded templates, or those of `templates` where it has them.
pub fn render(
    record: &RunRecord,
    format: Format,
    templates: Option<&Path>,
) -> Result<String, ReportError> {
    Renderer::new(templates)?.render(record, format)
}

/// Renders a comparison with the embedded templates, or those of `templates` where it has them.
pub fn render_comparison(
    cmp: &Comparison,
    format: Format,
    templates: Option<&Path>,
) -> Result<String, ReportError> {
    Renderer::new(templates)?.render_comparison(cmp, format)
}

fn hist_error(l: &LoadRecord, detail: &str) -> ReportError {
    ReportError::Histogram {
        server: l.server.clone(),
        document: l.document.clone(),
        round: l.round,
        detail: detail.to_string(),
    }
}

fn group_loads<'a>(record: &'a RunRecord, server: &str, doc: &str) -> Vec<&'a LoadRecord> {
    let mut v: Vec<&LoadRecord> = record
        .loads
        .iter()
        .filter(|l| l.server == server && l.document == doc)
        .collect();
    v.sort_by_key(|l| l.round);
    v
}

/// The round whose requests/s is the median (the lower middle one for an even count), so the
/// ab block shown is a typical round rather than the first or the best.
fn median_round<'a>(loads: &[&'a LoadRecord]) -> (&'a LoadRecord, String) {
    let mut by_rps = loads.to_vec();
    by_rps.sort_by(|a, b| {
        a.load
            .requests_per_second
            .total_cmp(&b.load.requests_per_second)
            .then(a.round.cmp(&b.round))
    });
    let pick = by_rps[(by_rps.len() - 1) / 2];
    let label = if loads.len() == 1 {
        "1 round".to_string()
    } else {
        format!(
            "round {} of {}, the median by requests/s",
            pick.round + 1,
            loads.len()
        )
    };
    (pick, label)
}

fn short_id(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    &hex[..hex.len().min(12)]
}

// ---------------------------------------------------------------------------------------------
// Number formatting: fixed decimals, so output never depends on float printing subtleties.

pub(crate) fn f(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".to_string()
    }
}

fn median_or_dash(s: Option<&Summary>, decimals: usize) -> String {
    s.map_or_else(|| "-".to_string(), |s| f(s.median, decimals))
}

/// The posts' "1.66x".
fn ratio(v: f64, reference: Option<f64>) -> String {
    match reference {
        Some(r) if r > 0.0 => format!("{:.2}x", v / r),
        _ => "-".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Contexts.

#[derive(Serialize)]
struct ReportContext {
    run: RunInfo,
    servers: Vec<ServerContext>,
    /// Some server ran on a `[[host]]`: the servers' list says where each ran.
    any_host: bool,
    /// The `[[host]]` engines the run used, servers' and generators'.
    engines: Vec<EngineContext>,
    unavailable: Vec<Unavailable>,
    documents: Vec<DocumentContext>,
}

#[derive(Serialize)]
struct EngineContext {
    name: String,
    url: String,
    facts: String,
}

#[derive(Serialize)]
struct RunInfo {
    run_id: String,
    benchctl_version: String,
    started_at: String,
    finished_at: String,
    status: String,
    status_reason: Option<String>,
    /// Not every planned load ran: reports say the tables are partial.
    partial: bool,
    scenario_name: String,
    scenario_path: String,
    scenario_sha256: String,
    cpu_model: String,
    cores: u32,
    kernel: String,
    docker_version: String,
    loads: usize,
}

fn run_info(r: &RunRecord) -> RunInfo {
    RunInfo {
        run_id: r.run_id.clone(),
        benchctl_version: r.benchctl_version.clone(),
        started_at: r.started_at.clone(),
        finished_at: r.finished_at.clone().unwrap_or_else(|| "-".to_string()),
        status: r.status.label().to_string(),
        status_reason: r.status.reason().map(str::to_string),
        partial: r.status != crate::record::RunStatus::Complete,
        scenario_name: r.scenario.name.clone(),
        scenario_path: r.scenario.path.clone(),
        scenario_sha256: r.scenario.sha256.clone(),
        cpu_model: r.host.cpu_model.clone(),
        cores: r.host.cores,
        kernel: r.host.kernel.clone(),
        docker_version: r
            .host
            .docker_version
            .clone()
            .unwrap_or_else(|| "-".to_string()),
        loads: r.loads.len(),
    }
}

#[derive(Serialize)]
struct ServerContext {
    name: String,
    kind: String,
    image_tag: String,
    image_id: String,
    server_header: String,
    /// The `[[host]]` it ran on; `None` for the run's own machine.
    host: Option<String>,
    colour: String,
    state: String,
}

#[derive(Serialize)]
struct Unavailable {
    server: String,
    reason: String,
}

#[derive(Serialize)]
struct DocumentContext {
    name: String,
    url_path: String,
    rows: Vec<Row>,
    /// Some server had a CPU share: the share and requests/s per core columns are shown.
    capped: bool,
    /// The head-to-head table as the text report lays it out.
    table: TextTable,
    summary: Vec<String>,
    ab_blocks: Vec<AbBlock>,
    notes: Vec<String>,
    charts: Option<DocCharts>,
    /// The capacity head-to-head, when the run searched this document.
    capacity: Option<crate::capacity::CapacityContext>,
}

#[derive(Serialize)]
struct AbBlock {
    server: String,
    round_label: String,
    text: String,
}

/// One server's line of the head-to-head table, every cell already formatted.
#[derive(Serialize)]
struct Row {
    server: String,
    rounds: String,
    rps: String,
    /// "±12.34", or "" for one round.
    rps_ci: String,
    /// The median and its "±", as one cell.
    rps_cell: String,
    ratio: String,
    mean_ms: String,
    p99_ms: String,
    transfer: String,
    failures: String,
    cpu_10k: String,
    memory_mb: String,
    /// The CPU share, cores ("0.25", "0.17-0.25"), or "-".
    share: String,
    /// Requests/s per core of the share, median, or "-".
    rps_core: String,
    /// "noisy", "client-bound", joined by ", ".
    flags: String,
}

fn row(g: &GroupStats, reference: Option<f64>) -> Row {
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
const HEAD_TO_HEAD: [Column; 10] = [
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
const CAPPED: [Column; 2] = [Column::right("share"), Column::right("req/s/core")];

fn head_to_head_table(rows: &[Row], capped: bool) -> TextTable {
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

// ---------------------------------------------------------------------------------------------
// Text tables: one column model for Rust and templates. The headers and alignments live here
// only; a text template lays out whatever header and rows it is given, padding each cell to the
// width measured here.

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
struct Cell {
    text: String,
    width: usize,
    right: bool,
}

#[derive(Serialize)]
struct TextRow {
    cells: Vec<Cell>,
    /// What the template prints after the last cell, if anything (flags, a note).
    extra: String,
}

#[derive(Serialize)]
pub(crate) struct TextTable {
    header: Vec<Cell>,
    rows: Vec<TextRow>,
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

fn notes(g: &GroupStats) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------------
// Charts.

#[derive(Serialize)]
struct DocCharts {
    rps: BarChart,
    latency: LineChart,
    latency_rows: Vec<LatencyRow>,
    /// Server CPU, then memory, each when any round recorded it.
    resources: Vec<BarChart>,
    /// The loads over time, when their records have timelines.
    timeline: Option<TimelineCharts>,
}

/// Requests/s and latency per interval, one line per server and round, with the steady
/// stretch of a load flagged as not steady shaded, and a row per load under them.
#[derive(Serialize)]
struct TimelineCharts {
    /// Requests/s, then latency.
    charts: Vec<TimeChart>,
    rows: Vec<SteadyRow>,
    /// The interval length ("1 s"; "1 s, 2 s" when loads differed).
    interval: String,
    /// Some load ran at a constant rate: its latencies are from the intended send times.
    corrected: bool,
}

#[derive(Serialize)]
struct SteadyRow {
    server: String,
    round: String,
    intervals: String,
    /// Lowest and highest requests/s of an interval.
    rps_range: String,
    /// Lowest and highest median latency of an interval, ms.
    p50_range: String,
    /// Highest p99 of an interval, ms.
    p99_max: String,
    verdict: String,
}

/// Percentiles under the latency chart, ms, from the merged histograms of all rounds.
#[derive(Serialize)]
struct LatencyRow {
    server: String,
    p50: String,
    p90: String,
    p99: String,
    p999: String,
    max: String,
}

fn doc_charts(
    record: &RunRecord,
    di: usize,
    doc: &str,
    groups: &[&GroupStats],
    colour_of: &dyn Fn(&str) -> &'static str,
) -> Result<DocCharts, ReportError> {
    let bars_of = |metric: Metric, decimals: usize| -> Vec<BarInput> {
        groups
            .iter()
            .filter_map(|g| {
                let s = g.get(metric)?;
                Some(BarInput {
                    label: g.server.clone(),
                    colour: colour_of(&g.server),
                    value: s.median,
                    value_label: f(s.median, decimals),
                    interval: (s.n >= 2).then_some((s.ci_low, s.ci_high)),
                })
            })
            .collect()
    };
    let rps = charts::bar_chart(
        &format!("rps-{di}"),
        "rps",
        &format!("Requests per second: {doc}"),
        "requests/s (median, 95% CI)",
        &bars_of(Metric::RequestsPerSecond, 0),
    );
    let optional = |kind: &str, metric: Metric, title: &str, y: &str, decimals: usize| {
        let bars = bars_of(metric, decimals);
        (!bars.is_empty())
            .then(|| charts::bar_chart(&format!("{kind}-{di}"), kind, title, y, &bars))
    };
    let cpu = optional(
        "cpu",
        Metric::ServerCpuSPer10k,
        &format!("Server CPU per 10k requests: {doc}"),
        "CPU-s per 10k requests",
        3,
    );
    let memory = optional(
        "memory",
        Metric::ServerPeakMemoryMb,
        &format!("Server peak memory: {doc}"),
        "MB",
        1,
    );

    let mut series = Vec::new();
    let mut latency_rows = Vec::new();
    for g in groups {
        let Some(h) = merged_total(record, &g.server, doc)? else {
            continue;
        };
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        // The percentile axis stops where the samples run out: 1000 requests say nothing about
        // the 99.99th percentile.
        let limit = (h.len() as f64).log10().min(charts::MAX_NINES);
        let steps = (limit * 10.0).floor() as usize;
        let points = (0..=steps)
            .map(|i| {
                let nines = i as f64 / 10.0;
                (nines, ms(1.0 - 10f64.powf(-nines)))
            })
            .collect();
        series.push(SeriesInput {
            name: g.server.clone(),
            colour: colour_of(&g.server),
            points,
        });
        latency_rows.push(LatencyRow {
            server: g.server.clone(),
            p50: f(ms(0.5), 2),
            p90: f(ms(0.9), 2),
            p99: f(ms(0.99), 2),
            p999: f(ms(0.999), 2),
            max: f(h.max() as f64 / 1e3, 2),
        });
    }
    let latency = charts::percentile_chart(
        &format!("latency-{di}"),
        &format!("Latency by percentile: {doc}"),
        &series,
    );
    Ok(DocCharts {
        rps,
        latency,
        latency_rows,
        resources: cpu.into_iter().chain(memory).collect(),
        timeline: timeline_charts(record, di, doc, groups, colour_of)?,
    })
}

/// The timeline charts of one document; `None` when no load of it has a timeline (records
/// made before they were kept).
fn timeline_charts(
    record: &RunRecord,
    di: usize,
    doc: &str,
    groups: &[&GroupStats],
    colour_of: &dyn Fn(&str) -> &'static str,
) -> Result<Option<TimelineCharts>, ReportError> {
    let mut rps_lines = Vec::new();
    let mut latency_lines = Vec::new();
    let mut shades = Vec::new();
    let mut rows = Vec::new();
    let mut legend = Vec::new();
    let mut intervals: Vec<String> = Vec::new();
    let mut corrected_any = false;
    for g in groups {
        let colour = colour_of(&g.server);
        let mut drawn = false;
        for l in group_loads(record, &g.server, doc) {
            let Some(t) = &l.load.timeline else {
                continue;
            };
            let corrected = l.load.corrected_total.is_some();
            corrected_any |= corrected;
            let points = t
                .points(corrected)
                .map_err(|e| hist_error(l, &e.to_string()))?;
            let used: Vec<&Point> = points.iter().filter(|p| p.counts(t.interval_s)).collect();
            let name = format!("{} round {}", g.server, l.round + 1);
            let mid = |p: &Point| p.start_s + p.duration_s / 2.0;
            let ms = |us: u64| us as f64 / 1e3;
            rps_lines.push(TimeLineInput {
                title: name.clone(),
                colour,
                dashed: false,
                points: used.iter().map(|p| (mid(p), p.rate())).collect(),
            });
            for (label, dashed, pick) in [
                (
                    "p50",
                    false,
                    (|p: &Point| p.p50_us) as fn(&Point) -> Option<u64>,
                ),
                ("p99", true, |p: &Point| p.p99_us),
            ] {
                latency_lines.push(TimeLineInput {
                    title: format!("{name} {label}"),
                    colour,
                    dashed,
                    points: used
                        .iter()
                        .filter_map(|p| pick(p).map(|v| (mid(p), ms(v))))
                        .collect(),
                });
            }
            let note = l
                .load
                .notes
                .iter()
                .find(|n| matches!(n, Note::Unsteady { .. }));
            let verdict = match note {
                Some(Note::Unsteady {
                    pattern, steady, ..
                }) => {
                    let kind = match pattern {
                        Pattern::WarmUp => "warm-up",
                        Pattern::Drift => "drift",
                    };
                    match steady {
                        Some(w) => {
                            let window = format!(
                                "steady from {} to {}",
                                crate::notes::seconds(w.from_s, " "),
                                crate::notes::seconds(w.to_s, " ")
                            );
                            shades.push(ShadeInput {
                                title: format!("{name}: {window}"),
                                colour,
                                from_s: w.from_s,
                                to_s: w.to_s,
                            });
                            format!("{kind}: {window}")
                        }
                        None => format!("{kind}: steady in neither half"),
                    }
                }
                _ if used.len() >= loadgen::steady::MIN_INTERVALS => "steady".to_string(),
                _ => format!("not judged: {} intervals", used.len()),
            };
            let range = |v: Vec<f64>, decimals: usize| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if v.is_empty() {
                    "-".to_string()
                } else {
                    format!("{}-{}", f(lo, decimals), f(hi, decimals))
                }
            };
            rows.push(SteadyRow {
                server: g.server.clone(),
                round: (l.round + 1).to_string(),
                intervals: used.len().to_string(),
                rps_range: range(used.iter().map(|p| p.rate()).collect(), 0),
                p50_range: range(used.iter().filter_map(|p| p.p50_us).map(ms).collect(), 2),
                p99_max: used
                    .iter()
                    .filter_map(|p| p.p99_us)
                    .max()
                    .map_or_else(|| "-".to_string(), |v| f(ms(v), 2)),
                verdict,
            });
            let interval = crate::notes::seconds(t.interval_s, " ");
            if !intervals.contains(&interval) {
                intervals.push(interval);
            }
            drawn = true;
        }
        if drawn {
            legend.push((g.server.clone(), colour));
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(TimelineCharts {
        charts: vec![
            charts::time_chart(
                &format!("timeline-rps-{di}"),
                "timeline-rps",
                &format!("Requests per second over time: {doc}"),
                "requests/s per interval",
                &rps_lines,
                &shades,
                &legend,
            ),
            charts::time_chart(
                &format!("timeline-latency-{di}"),
                "timeline-latency",
                &format!("Latency over time: {doc}"),
                "latency per interval (ms)",
                &latency_lines,
                &shades,
                &legend,
            ),
        ],
        rows,
        interval: intervals.join(", "),
        corrected: corrected_any,
    }))
}

/// The Total-time histograms of every round merged; `None` when no request was timed.
fn merged_total(
    record: &RunRecord,
    server: &str,
    doc: &str,
) -> Result<Option<Histogram<u64>>, ReportError> {
    let mut merged: Option<Histogram<u64>> = None;
    for l in group_loads(record, server, doc) {
        let h = l
            .load
            .histogram(Timer::Total)
            .map_err(|e| hist_error(l, &e.to_string()))?;
        match merged.as_mut() {
            None => merged = Some(h),
            Some(m) => m
                .add(&h)
                .map_err(|e| hist_error(l, &format!("cannot merge rounds: {e:?}")))?,
        }
    }
    Ok(merged.filter(|h| !h.is_empty()))
}

// ---------------------------------------------------------------------------------------------
// The comparison table.

#[derive(Serialize)]
struct ComparisonContext {
    baseline_run_id: String,
    current_run_id: String,
    threshold: String,
    scenario_changed: bool,
    regression: bool,
    regressions: usize,
    /// Metrics beyond the threshold that no test could judge ("not tested").
    untested: usize,
    rows: Vec<ComparisonRow>,
    /// The rows as the text template lays them out.
    table: TextTable,
    missing_in_current: Vec<String>,
    new_in_current: Vec<String>,
}

#[derive(Serialize)]
struct ComparisonRow {
    server: String,
    document: String,
    metric: String,
    baseline: String,
    current: String,
    change: String,
    p_value: String,
    verdict: String,
    note: String,
}

/// The comparison table's columns in the text report.
const COMPARISON: [Column; 8] = [
    Column::left("server"),
    Column::left("document"),
    Column::left("metric"),
    Column::right("baseline"),
    Column::right("current"),
    Column::right("change"),
    Column::right("p"),
    Column::last("verdict"),
];

fn comparison_context(cmp: &Comparison) -> ComparisonContext {
    let decimals = |m: Metric| match m {
        Metric::Failures | Metric::Capacity => 0,
        Metric::ServerCpuSPer10k => 3,
        Metric::ServerPeakMemoryMb => 1,
        _ => 2,
    };
    let rows: Vec<ComparisonRow> = cmp
        .groups
        .iter()
        .flat_map(|g| {
            g.metrics.iter().map(move |m| {
                let d = decimals(m.metric);
                ComparisonRow {
                    server: g.server.clone(),
                    document: g.document.clone(),
                    metric: m.metric.label().to_string(),
                    baseline: f(m.baseline.median, d),
                    current: f(m.current.median, d),
                    change: if m.change.is_finite() {
                        format!("{:+.1}%", m.change * 100.0)
                    } else {
                        "new".to_string()
                    },
                    p_value: match m.p_value {
                        None => "-".to_string(),
                        Some(p) if p < 0.001 => "<0.001".to_string(),
                        Some(p) => f(p, 3),
                    },
                    verdict: match m.verdict {
                        Verdict::Worse => "WORSE".to_string(),
                        v => v.label().to_string(),
                    },
                    note: m.note.clone().unwrap_or_default(),
                }
            })
        })
        .collect();
    let table = TextTable::new(
        &COMPARISON,
        rows.iter()
            .map(|r| {
                let cells = [
                    &r.server,
                    &r.document,
                    &r.metric,
                    &r.baseline,
                    &r.current,
                    &r.change,
                    &r.p_value,
                    &r.verdict,
                ];
                (cells.map(String::clone).to_vec(), r.note.clone())
            })
            .collect(),
    );
    let pair = |(s, d): &(String, String)| format!("{s} / {d}");
    ComparisonContext {
        baseline_run_id: cmp.baseline_run_id.clone(),
        current_run_id: cmp.current_run_id.clone(),
        threshold: format!("{}%", f(cmp.threshold * 100.0, 1)),
        scenario_changed: cmp.scenario_changed,
        regression: cmp.has_regression(),
        regressions: cmp.regressions().count(),
        untested: cmp.untested().count(),
        rows,
        table,
        missing_in_current: cmp.missing_in_current.iter().map(pair).collect(),
        new_in_current: cmp.new_in_current.iter().map(pair).collect(),
    }
}

#[derive(Serialize)]
struct PairedContext {
    baseline_run_id: String,
    baseline_path: String,
    candidate_run_id: String,
    threshold: String,
    /// How the verdicts were reached, a sentence each.
    method: Vec<String>,
    /// Why the rounds stopped.
    stop: String,
    slowed: Vec<String>,
    rows: Vec<PairedRow>,
    table: TextTable,
    missing_in_candidate: Vec<String>,
    regression: bool,
    /// The closing line: the regressions, or that none was found, and whether every gated
    /// metric was judged.
    conclusion: String,
}

#[derive(Serialize)]
struct PairedRow {
    server: String,
    document: String,
    metric: String,
    gated: bool,
    rounds: String,
    ratio: String,
    interval: String,
    change: String,
    mde: String,
    verdict: String,
    note: String,
}

const PAIRED: [Column; 10] = [
    Column::left("server"),
    Column::left("document"),
    Column::left("metric"),
    Column::left("gate"),
    Column::right("rounds"),
    Column::right("ratio"),
    Column::right("interval"),
    Column::right("change"),
    Column::right("MDE"),
    Column::last("verdict"),
];

fn paired_context(cmp: &PairedComparison) -> PairedContext {
    let pct = |v: f64| format!("{}%", f(v * 100.0, 1));
    let threshold = pct(cmp.threshold);
    let rows: Vec<PairedRow> = cmp
        .groups
        .iter()
        .flat_map(|g| {
            let threshold = threshold.clone();
            g.metrics.iter().map(move |m| {
                let e = m.estimate.as_ref();
                PairedRow {
                    server: g.server.clone(),
                    document: g.document.clone(),
                    metric: m.metric.label().to_string(),
                    gated: m.gated,
                    rounds: e.map_or_else(|| g.rounds.to_string(), |e| e.n.to_string()),
                    ratio: e.map_or_else(|| "-".to_string(), |e| f(e.ratio, 3)),
                    interval: e.map_or_else(
                        || "-".to_string(),
                        |e| format!("{}-{}", f(e.low, 3), f(e.high, 3)),
                    ),
                    change: e.map_or_else(
                        || "-".to_string(),
                        |e| format!("{:+.1}%", (e.ratio - 1.0) * 100.0),
                    ),
                    mde: e.map_or_else(|| "-".to_string(), |e| format!("±{}", pct(e.mde))),
                    verdict: match m.verdict {
                        PairedVerdict::Within => format!("within ±{threshold}"),
                        PairedVerdict::Worse => format!("WORSE beyond {threshold}"),
                        PairedVerdict::Better => format!("better beyond {threshold}"),
                        PairedVerdict::NotJudged => "not judged".to_string(),
                    },
                    note: m.note.clone().unwrap_or_default(),
                }
            })
        })
        .collect();
    let table = TextTable::new(
        &PAIRED,
        rows.iter()
            .map(|r| {
                let cells = vec![
                    r.server.clone(),
                    r.document.clone(),
                    r.metric.clone(),
                    if r.gated { "gate" } else { "-" }.to_string(),
                    r.rounds.clone(),
                    r.ratio.clone(),
                    r.interval.clone(),
                    r.change.clone(),
                    r.mde.clone(),
                    r.verdict.clone(),
                ];
                (cells, r.note.clone())
            })
            .collect(),
    );
    // A confidence level with enough decimals to tell 99.85% from 100%: "95%", "99.853%".
    let confidence = |a: f64| {
        let d = ((-a.log10()).ceil() as usize).saturating_sub(1).min(6);
        let text = f((1.0 - a) * 100.0, d);
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        };
        format!("{text}%")
    };
    let rounds_list = cmp
        .look_rounds
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let looks = if cmp.looks as usize > cmp.look_rounds.len() {
        format!(
            "{} looks (after rounds {rounds_list}, and where a budget stops the rounds)",
            cmp.looks
        )
    } else {
        format!("{} looks (after rounds {rounds_list})", cmp.looks)
    };
    let fresh = if cmp.fresh_containers {
        ", each round on fresh containers of both sides"
    } else {
        ", one container per server and side all run long"
    };
    let generator = match &cmp.baseline_generator {
        Some(g) => format!(
            " The baseline side's loads were sent by {g}, the candidate's by this run's benchctl."
        ),
        None => String::new(),
    };
    let method = vec![
        format!("Both sides measured in this sitting, each server and document back to back in ABBA order{fresh}; round i gives the ratio candidate/baseline, and the estimate is their geometric mean.{generator}"),
        format!(
            "Interval: Student's t-interval on the mean log ratio at {} each, so that all {} x {} gated metric{} hold together at {} (Bonferroni).",
            confidence(cmp.interval_alpha),
            looks,
            cmp.gates,
            if cmp.gates == 1 { "" } else { "s" },
            confidence(cmp.alpha)
        ),
        format!(
            "MDE: the smallest change these rounds could show with power {:.0}% at that level, (t(1-a/2) + t(power)) * s / sqrt(n) on the log ratios.",
            crate::paired::POWER * 100.0
        ),
        format!(
            "Verdict: worse or better when the interval excludes 1 and the ratio is beyond ±{threshold}; within when the whole interval is inside ±{threshold}; else not judged. Only the gated metric of each server and document (requests/s, or server CPU per request when the generator was the bottleneck) can fail the run."
        ),
    ];
    let stop = match cmp.stop {
        Some(s) => format!(
            "{} round{} ({} at most, {} first): {}",
            cmp.rounds,
            if cmp.rounds == 1 { "" } else { "s" },
            cmp.max_rounds,
            cmp.min_rounds,
            s.text()
        ),
        None => format!(
            "{} round{} (the run ended before its stopping rule did)",
            cmp.rounds,
            if cmp.rounds == 1 { "" } else { "s" }
        ),
    };
    let regressions: Vec<String> = cmp
        .regressions()
        .map(|(g, m)| {
            let e = m.estimate.as_ref();
            format!(
                "{} / {} {} {}",
                g.server,
                g.document,
                m.metric.label(),
                e.map_or_else(String::new, |e| format!(
                    "x{} ({}-{})",
                    f(e.ratio, 3),
                    f(e.low, 3),
                    f(e.high, 3)
                ))
            )
        })
        .chain(
            cmp.missing_in_candidate
                .iter()
                .map(|s| format!("{s} measured on the baseline side only")),
        )
        .collect();
    let undecided = cmp.undecided();
    let conclusion = if !regressions.is_empty() {
        format!("REGRESSION beyond {threshold}: {}.", regressions.join("; "))
    } else if undecided == 0 && !cmp.groups.is_empty() {
        format!("No regression: every gated metric was judged, none worse beyond {threshold}.")
    } else {
        format!(
            "No regression shown, but {undecided} gated metric{} could not be judged at ±{threshold} within the budget (see their MDE: more rounds, a larger threshold or a quieter machine).",
            if undecided == 1 { "" } else { "s" }
        )
    };
    PairedContext {
        baseline_run_id: cmp.baseline_run_id.clone(),
        baseline_path: cmp.baseline_path.clone(),
        candidate_run_id: cmp.candidate_run_id.clone(),
        threshold,
        method,
        stop,
        slowed: cmp
            .slowed
            .iter()
            .map(|s| {
                format!(
                    "{} given {} of the baseline side's CPU on purpose",
                    s.server, s.factor
                )
            })
            .collect(),
        rows,
        table,
        missing_in_candidate: cmp.missing_in_candidate.clone(),
        regression: cmp.has_regression(),
        conclusion,
    }
}

// ---------------------------------------------------------------------------------------------
// Template filters.

/// `lpad(width=N)` right-aligns, `rpad(width=N)` left-aligns a value in N columns, so text
/// templates can lay out tables whose widths the Rust side measured.
fn pad_filter(
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
fn md_cell_filter(v: &tera::Value, _: &HashMap<String, tera::Value>) -> tera::Result<tera::Value> {
    Ok(tera::Value::String(md_escape(&value_text(v), true)))
}

/// The same for text inside a code span, where entities would show literally: only what would
/// break the table or the span is changed.
fn md_code_filter(v: &tera::Value, _: &HashMap<String, tera::Value>) -> tera::Result<tera::Value> {
    Ok(tera::Value::String(md_escape(&value_text(v), false)))
}

fn value_text(v: &tera::Value) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{MetricSummary, Summary};

    fn group(rps: &[f64], mean_ms: &[f64]) -> GroupStats {
        GroupStats {
            server: "nginx".into(),
            document: "hello".into(),
            url_path: "/".into(),
            rounds: rps.len(),
            client_bound: false,
            too_short_s: None,
            repetitions: None,
            shares: None,
            share_used: None,
            rx_stamps: true,
            unsteady: Vec::new(),
            metrics: vec![
                MetricSummary {
                    metric: Metric::RequestsPerSecond,
                    summary: Summary::of(rps),
                },
                MetricSummary {
                    metric: Metric::MeanLatencyMs,
                    summary: Summary::of(mean_ms),
                },
            ],
        }
    }

    #[test]
    fn the_noisy_note_names_the_metrics_whose_rounds_disagree() {
        let steady = [1000.0, 1001.0, 999.0];
        let latency_only = notes(&group(&steady, &[0.1, 0.2, 0.3]));
        assert_eq!(
            latency_only,
            ["nginx: rounds disagree (mean latency (ms): 95% CI ±124.2%, spread 100.0% of the median); take its numbers with care"]
        );

        let both = notes(&group(&[800.0, 1000.0, 1200.0], &[0.1, 0.2, 0.3]));
        assert_eq!(
            both,
            ["nginx: rounds disagree (requests/s: 95% CI ±49.7%, spread 40.0% of the median; mean latency (ms): 95% CI ±124.2%, spread 100.0% of the median); take its numbers with care"]
        );

        assert!(notes(&group(&steady, &[0.2, 0.2, 0.2])).is_empty());
    }

    #[test]
    fn the_client_bound_note_says_whether_the_latencies_include_the_clients_delay() {
        let mut g = group(&[1000.0; 3], &[0.2; 3]);
        g.client_bound = true;
        let stamped = notes(&g);
        assert!(
            stamped[0].ends_with("so requests/s may measure the client rather than the server (the latencies, timed by the kernel's receive stamps, leave the generator's delay out)"),
            "{stamped:?}"
        );
        g.rx_stamps = false;
        let read = notes(&g);
        assert!(
            read[0].ends_with("so these numbers may measure the client rather than the server"),
            "{read:?}"
        );
    }

    #[test]
    fn a_client_bound_verdict_never_states_requests_per_second_as_the_servers() {
        let mut apache = group(&[1000.0; 3], &[0.2; 3]);
        apache.server = "apache".into();
        let mut nginx = group(&[1500.0; 3], &[0.2; 3]);
        nginx.client_bound = true;
        assert_eq!(
            summary_lines(&[&apache, &nginx]),
            ["no verdict between nginx and apache: nginx's row was client-bound, so the requests/s ratio (1.50) measures the load generator as much as the servers, and the servers' CPU was not measured"]
        );
        let cpu = |g: &mut GroupStats, v: f64| {
            g.metrics.push(MetricSummary {
                metric: Metric::ServerCpuSPer10k,
                summary: Summary::of(&[v; 3]),
            })
        };
        cpu(&mut apache, 2.0);
        cpu(&mut nginx, 0.5);
        apache.client_bound = true;
        assert_eq!(
            summary_lines(&[&apache, &nginx]),
            ["nginx used 0.25x apache's CPU per request (both rows were client-bound, so the requests/s ratio (1.50) measures the load generator as much as the servers)"]
        );
        apache.client_bound = false;
        nginx.client_bound = false;
        assert_eq!(
            summary_lines(&[&apache, &nginx]),
            ["nginx served 1.50 times as many requests/s as apache"]
        );
    }

    #[test]
    fn capped_servers_are_compared_per_core_of_their_share() {
        let per_core = |g: &mut GroupStats, share: f64| {
            let rps = g.get(Metric::RequestsPerSecond).unwrap().median;
            g.shares = Some((share, share));
            g.metrics.push(MetricSummary {
                metric: Metric::RequestsPerServerCore,
                summary: Summary::of(&[rps / share; 3]),
            });
        };
        let mut apache = group(&[4000.0; 3], &[0.2; 3]);
        apache.server = "apache".into();
        per_core(&mut apache, 1.0);
        // nginx capped at a quarter of a core still serves 3000/s: 12,000 per core.
        let mut nginx = group(&[3000.0; 3], &[0.2; 3]);
        per_core(&mut nginx, 0.25);
        assert_eq!(
            summary_lines(&[&apache, &nginx]),
            ["nginx served 3.00 times as many requests/s per server core as apache (nginx at 0.25 of a core, apache at 1)"]
        );
        let row = row(&nginx, Some(4000.0));
        assert_eq!(
            (row.share.as_str(), row.rps_core.as_str()),
            ("0.25", "12000.00")
        );
        let table = head_to_head_table(&[row], true);
        let header: Vec<&str> = table.header.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(&header[3..6], ["ratio", "share", "req/s/core"]);

        assert!(notes(&nginx).is_empty());
        nginx.share_used = Some(0.5);
        assert_eq!(
            notes(&nginx),
            ["nginx: used 50% of its CPU share (something other than its CPU held it back, or other work on its cores), so its requests/s per server core are over the CPU it used"]
        );
    }
}
