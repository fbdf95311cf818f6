//! Reports rendered from tera templates: ab's text layout with head-to-head tables, Markdown for
//! CI summaries, and one self-contained HTML page with SVG charts.
//!
//! The templates live in the repository's `templates/` and are embedded in the binary; a directory given to
//! [`Renderer::new`] overrides any of them by file name. The Rust side computes every number,
//! already formatted, into a serializable context; templates only lay it out. Nothing depends
//! on the clock or on hash order, so the same record always renders to the same bytes.

pub mod ab;
pub mod abfiles;
pub mod capacity;
pub mod charts;
mod comparison;
mod doc_charts;
mod filters;
mod history;
mod loads;
mod numbers;
pub mod overload;
mod rows;
pub mod system;
pub(crate) mod table;
mod versions;
use comparison::{comparison_context, paired_context};
use doc_charts::{doc_charts, DocCharts};
pub(crate) use filters::md_escape;
use filters::{md_cell_filter, md_code_filter, pad_filter};
use loads::{group_loads, hist_error};
pub(crate) use numbers::f;
use rows::{head_to_head_table, notes, row, Row};
pub(crate) use rows::{share_text, summary_lines};
use table::TextTable;

use crate::analysis::history::History;
use crate::compare::Comparison;
use crate::error::ReportError;
use crate::paired::PairedComparison;
use crate::record::{LoadRecord, RunRecord, ServerStatus};
use crate::stats::{self, GroupStats, Metric};
use ab::{AbOptions, AbSummary};
use serde::Serialize;
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
pub const TEMPLATES: [(&str, &str); 17] = [
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
        "overload.txt.tera",
        include_str!("../../../templates/overload.txt.tera"),
    ),
    (
        "overload.md.tera",
        include_str!("../../../templates/overload.md.tera"),
    ),
    (
        "overload.html.tera",
        include_str!("../../../templates/overload.html.tera"),
    ),
    (
        "time_chart.html.tera",
        include_str!("../../../templates/time_chart.html.tera"),
    ),
    (
        "paired.txt.tera",
        include_str!("../../../templates/paired.txt.tera"),
    ),
    (
        "paired.md.tera",
        include_str!("../../../templates/paired.md.tera"),
    ),
    (
        "history.md.tera",
        include_str!("../../../templates/history.md.tera"),
    ),
    (
        "history.html.tera",
        include_str!("../../../templates/history.html.tera"),
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

    /// Renders the history of many records: Markdown, or one HTML page with a chart per figure
    /// (text gets the Markdown).
    pub fn render_history(&self, h: &History, format: Format) -> Result<String, ReportError> {
        let name = match format {
            Format::Html => "history.html.tera",
            Format::Text | Format::Markdown => "history.md.tera",
        };
        self.render_template(name, &history::history_context(h))
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
                capacity: capacity::context(record, doc),
                overload: overload::context(record, doc),
            });
        }
        Ok(ReportContext {
            versions: versions::versions(record, &groups),
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
// Contexts.

#[derive(Serialize)]
struct ReportContext {
    run: RunInfo,
    /// Each server and path over every HTTP version the run measured it over, when it measured
    /// some over more than one.
    versions: Option<versions::VersionsContext>,
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
    /// What biased measurements on the machine, a line each (none when it was not checked).
    biases: Vec<String>,
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
        biases: r
            .host
            .system
            .as_ref()
            .map(system::bias_lines)
            .unwrap_or_default(),
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
    capacity: Option<capacity::CapacityContext>,
    /// The staircases past the capacity, when the run climbed them on this document.
    overload: Option<overload::OverloadContext>,
}

#[derive(Serialize)]
struct AbBlock {
    server: String,
    round_label: String,
    text: String,
}

// ---------------------------------------------------------------------------------------------
// Text tables: one column model for Rust and templates. The headers and alignments live here
// only; a text template lays out whatever header and rows it is given, padding each cell to the
// width measured here.

// ---------------------------------------------------------------------------------------------
// Charts.

// ---------------------------------------------------------------------------------------------
// The comparison table.

// ---------------------------------------------------------------------------------------------
// Template filters.

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
