//! The history page's context: every number of [`History`] formatted, and its charts laid out.

use super::charts::{self, RuleInput, TrendChart, TrendInput};
use super::numbers::f;
use crate::analysis::changepoint::{MIN_SEGMENT, PERMUTATIONS};
use crate::analysis::history::{
    Change, DocumentHistory, History, Night, Point, ScenarioHistory, Series, Skipped,
};
use crate::paired::PairedVerdict;
use crate::stats::Metric;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct HistoryContext {
    source: String,
    threshold: String,
    alpha: String,
    permutations: u32,
    min_segment: usize,
    scenarios: Vec<ScenarioContext>,
    skipped: Vec<Skipped>,
}

#[derive(Serialize)]
struct ScenarioContext {
    name: String,
    /// "2026-11-02 to 2026-12-03".
    span: String,
    nights: Vec<NightContext>,
    changes: Vec<ChangeContext>,
    documents: Vec<DocumentContext>,
}

#[derive(Serialize)]
struct NightContext {
    /// 1-based.
    n: usize,
    label: String,
    started_at: String,
    commit: String,
    kind: &'static str,
    status: String,
    verdict: &'static str,
    regression: bool,
    host: String,
    /// How the setup differs from the night before's ("another host; the scenario changed").
    setup_changed: String,
    path: String,
}

#[derive(Serialize)]
struct ChangeContext {
    night: String,
    /// The commits between the last night at the old level and the first at the new.
    commits: String,
    server: String,
    document: String,
    metric: &'static str,
    before: String,
    after: String,
    change: String,
    worse: bool,
    p: String,
}

#[derive(Serialize)]
struct DocumentContext {
    document: String,
    charts: Vec<TrendChart>,
    tables: Vec<MetricTable>,
}

#[derive(Serialize)]
struct MetricTable {
    metric: &'static str,
    chart_id: String,
    servers: Vec<String>,
    rows: Vec<TableRow>,
}

#[derive(Serialize)]
struct TableRow {
    night: String,
    cells: Vec<String>,
}

pub(super) fn history_context(h: &History) -> HistoryContext {
    HistoryContext {
        source: h.source.clone(),
        threshold: format!("{}%", f(h.threshold * 100.0, 1).trim_end_matches(".0")),
        alpha: f(h.alpha, 2),
        permutations: PERMUTATIONS,
        min_segment: MIN_SEGMENT,
        scenarios: h
            .scenarios
            .iter()
            .enumerate()
            .map(|(si, s)| scenario_context(si, s))
            .collect(),
        skipped: h.skipped.clone(),
    }
}

/// A night's label: its date, with the time where two nights share a date.
fn labels(nights: &[Night]) -> Vec<String> {
    let date = |n: &Night| n.started_at.get(..10).unwrap_or(&n.started_at).to_string();
    nights
        .iter()
        .map(|n| {
            let same_day = nights.iter().filter(|o| date(o) == date(n)).count() > 1;
            if same_day {
                let time = n.started_at.get(11..16).unwrap_or("");
                format!("{} {time}", date(n))
            } else {
                date(n)
            }
        })
        .collect()
}

fn scenario_context(si: usize, s: &ScenarioHistory) -> ScenarioContext {
    let labels = labels(&s.nights);
    // Along a chart's axis the year goes: "11-06", "11-06 15:04".
    let axis_labels: Vec<String> = labels
        .iter()
        .map(|l| l.get(5..).unwrap_or(l).to_string())
        .collect();
    let nights = s
        .nights
        .iter()
        .enumerate()
        .map(|(i, n)| NightContext {
            n: i + 1,
            label: labels[i].clone(),
            started_at: n.started_at.clone(),
            commit: n.commit.clone().unwrap_or_else(|| "-".into()),
            kind: if n.ab { "A/B" } else { "plain" },
            status: n.status.clone(),
            verdict: match (n.ab, n.regression) {
                (false, _) => "",
                (true, true) => "REGRESSION",
                (true, false) => "no regression",
            },
            regression: n.regression,
            host: n.host.clone(),
            setup_changed: n.setup_changes.join("; "),
            path: n.path.clone(),
        })
        .collect();
    let commit = |i: usize| s.nights[i].commit.clone().unwrap_or_else(|| "?".into());
    let changes = s
        .changes
        .iter()
        .map(|c| {
            let k = c.change.night;
            ChangeContext {
                night: labels[k].clone(),
                commits: if k > 0 {
                    format!("{}..{}", commit(k - 1), commit(k))
                } else {
                    commit(k)
                },
                server: c.server.clone(),
                document: c.document.clone(),
                metric: c.metric.label(),
                before: value(c.metric, c.change.before),
                after: value(c.metric, c.change.after),
                change: format!("{:+.1}%", c.change.change * 100.0),
                worse: c.change.worse,
                p: p_value(&c.change),
            }
        })
        .collect();
    let span = match (labels.first(), labels.last()) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b}"),
        (Some(a), _) => a.clone(),
        _ => String::new(),
    };
    let labels = Labels {
        long: labels,
        axis: axis_labels,
    };
    let setups: Vec<RuleInput> = s
        .nights
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.setup_changes.is_empty())
        .map(|(i, n)| RuleInput {
            night: i,
            class: "setup",
            title: format!(
                "from {}: {} (not compared with the nights before)",
                labels.long[i],
                n.setup_changes.join("; ")
            ),
            colour: "#777777",
        })
        .collect();
    let documents = s
        .documents
        .iter()
        .enumerate()
        .map(|(di, d)| document_context(&format!("trend-{si}-{di}"), d, &labels, &setups))
        .collect();
    ScenarioContext {
        name: s.name.clone(),
        span,
        nights,
        changes,
        documents,
    }
}

/// The nights' names: in tables and titles, and along a chart's axis.
struct Labels {
    long: Vec<String>,
    axis: Vec<String>,
}

/// One document: a chart and a table per figure. Chart ids start with `id`.
fn document_context(
    id: &str,
    d: &DocumentHistory,
    labels: &Labels,
    setups: &[RuleInput],
) -> DocumentContext {
    let mut charts_out = Vec::new();
    let mut tables = Vec::new();
    for metric in crate::analysis::history::METRICS {
        let series: Vec<&Series> = d.series.iter().filter(|x| x.metric == metric).collect();
        if series.is_empty() {
            continue;
        }
        let id = format!("{id}-{}", metric.slug());
        charts_out.push(metric_chart(&id, d, metric, &series, labels, setups));
        tables.push(MetricTable {
            metric: metric.label(),
            chart_id: id,
            servers: series.iter().map(|x| x.server.clone()).collect(),
            rows: labels
                .long
                .iter()
                .enumerate()
                .map(|(i, night)| TableRow {
                    night: night.clone(),
                    cells: series
                        .iter()
                        .map(|x| {
                            x.points[i]
                                .as_ref()
                                .map_or_else(|| "-".into(), |p| cell(metric, p))
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    DocumentContext {
        document: d.document.clone(),
        charts: charts_out,
        tables,
    }
}

/// One figure of a document, a line per server, its change points as rules.
fn metric_chart(
    id: &str,
    d: &DocumentHistory,
    metric: Metric,
    series: &[&Series],
    labels: &Labels,
    setups: &[RuleInput],
) -> TrendChart {
    let colour =
        |server: &str| charts::colour(d.servers.iter().position(|x| x == server).unwrap_or(0));
    let lines: Vec<TrendInput> = series
        .iter()
        .map(|x| TrendInput {
            name: x.server.clone(),
            colour: colour(&x.server),
            values: x
                .points
                .iter()
                .map(|p| p.as_ref().map(|p| p.value))
                .collect(),
            titles: x
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let cell = p.as_ref().map_or_else(|| "-".into(), |p| cell(metric, p));
                    format!("{} {}: {cell}", x.server, labels.long[i])
                })
                .collect(),
            marks: x
                .points
                .iter()
                .map(|p| {
                    let v = p.as_ref()?.verdict.as_ref().filter(|v| v.gated)?;
                    Some(mark(v.verdict))
                })
                .collect(),
        })
        .collect();
    let rules: Vec<RuleInput> = setups
        .iter()
        .cloned()
        .chain(series.iter().flat_map(|x| {
            x.changes.iter().map(|c| RuleInput {
                night: c.night,
                class: "rule",
                title: format!(
                    "{}: {} {:+.1}% from {} ({} to {}, p = {})",
                    x.server,
                    metric.label(),
                    c.change * 100.0,
                    labels.long[c.night],
                    value(metric, c.before),
                    value(metric, c.after),
                    p_value(c)
                ),
                colour: colour(&x.server),
            })
        }))
        .collect();
    let title = format!("{} of {}, night by night", metric.label(), d.document);
    charts::trend_chart(
        id,
        metric.slug(),
        &title,
        metric.label(),
        &labels.axis,
        &lines,
        &rules,
    )
}

fn decimals(metric: Metric) -> usize {
    match metric {
        Metric::RequestsPerSecond | Metric::RequestsPerServerCore => 1,
        _ => 3,
    }
}

fn value(metric: Metric, v: f64) -> String {
    f(v, decimals(metric))
}

fn p_value(c: &Change) -> String {
    f(c.p, 3)
}

/// A night's figure with its A/B verdict, when it had one: "6926.5 (A/B: WORSE x0.883, gate)".
fn cell(metric: Metric, p: &Point) -> String {
    let mut s = value(metric, p.value);
    if let Some(v) = &p.verdict {
        let ratio = v.ratio.map(|r| format!(" x{r:.3}")).unwrap_or_default();
        let gate = if v.gated { ", gate" } else { "" };
        s.push_str(&format!(" (A/B: {}{ratio}{gate})", v.verdict.label()));
    }
    s
}

/// The chart's mark for a gated A/B verdict.
fn mark(v: PairedVerdict) -> &'static str {
    match v {
        PairedVerdict::Worse => "worse",
        PairedVerdict::Better => "better",
        PairedVerdict::Within => "within",
        PairedVerdict::NotJudged => "not-judged",
    }
}
