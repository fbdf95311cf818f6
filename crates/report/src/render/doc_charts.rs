//! The HTML report's charts of one document: requests/s and latency per server, and each
//! load's timeline with its steady stretch.

use super::loads::{group_loads, hist_error};
use super::numbers::f;
use crate::charts::{
    self, BarChart, BarInput, LineChart, SeriesInput, ShadeInput, TimeChart, TimeLineInput,
};
use crate::error::ReportError;
use crate::record::{LoadRecord, RunRecord};
use crate::stats::{GroupStats, Metric};
use hdrhistogram::Histogram;
use model::stats::Timer;
use model::steady::{Pattern, Point};
use model::Note;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct DocCharts {
    pub(super) rps: BarChart,
    pub(super) latency: LineChart,
    pub(super) latency_rows: Vec<LatencyRow>,
    /// Server CPU, then memory, each when any round recorded it.
    pub(super) resources: Vec<BarChart>,
    /// The loads over time, when their records have timelines.
    pub(super) timeline: Option<TimelineCharts>,
}

/// Requests/s and latency per interval, one line per server and round, with the steady
/// stretch of a load flagged as not steady shaded, and a row per load under them.
#[derive(Serialize)]
pub(super) struct TimelineCharts {
    /// Requests/s, then latency.
    pub(super) charts: Vec<TimeChart>,
    pub(super) rows: Vec<SteadyRow>,
    /// The interval length ("1 s"; "1 s, 2 s" when loads differed).
    pub(super) interval: String,
    /// Some load ran at a constant rate: its latencies are from the intended send times.
    pub(super) corrected: bool,
}

#[derive(Serialize)]
pub(super) struct SteadyRow {
    pub(super) server: String,
    pub(super) round: String,
    pub(super) intervals: String,
    /// Lowest and highest requests/s of an interval.
    pub(super) rps_range: String,
    /// Lowest and highest median latency of an interval, ms.
    pub(super) p50_range: String,
    /// Highest p99 of an interval, ms.
    pub(super) p99_max: String,
    pub(super) verdict: String,
}

/// Percentiles under the latency chart, ms, from the merged histograms of all rounds.
#[derive(Serialize)]
pub(super) struct LatencyRow {
    pub(super) server: String,
    pub(super) p50: String,
    pub(super) p90: String,
    pub(super) p99: String,
    pub(super) p999: String,
    pub(super) max: String,
}

pub(super) fn doc_charts(
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
pub(super) fn timeline_charts(
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
            rps_lines.push(TimeLineInput {
                title: name.clone(),
                colour,
                dashed: false,
                points: used.iter().map(|p| (mid(p), p.rate())).collect(),
            });
            latency_lines.extend(latency_lines_of(&name, colour, &used));
            let verdict = steady_verdict(l, &used, &name, colour, &mut shades);
            rows.push(steady_row(&g.server, l.round, &used, verdict));
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
pub(super) fn merged_total(
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

/// The middle of an interval, in seconds from the load's start: where its point is drawn.
fn mid(p: &Point) -> f64 {
    p.start_s + p.duration_s / 2.0
}

fn ms(us: u64) -> f64 {
    us as f64 / 1e3
}

/// The p50 (solid) and p99 (dashed) latency lines of one load's intervals.
fn latency_lines_of(name: &str, colour: &'static str, used: &[&Point]) -> Vec<TimeLineInput> {
    let mut lines = Vec::new();
    for (label, dashed, pick) in [
        (
            "p50",
            false,
            (|p: &Point| p.p50_us) as fn(&Point) -> Option<u64>,
        ),
        ("p99", true, |p: &Point| p.p99_us),
    ] {
        lines.push(TimeLineInput {
            title: format!("{name} {label}"),
            colour,
            dashed,
            points: used
                .iter()
                .filter_map(|p| pick(p).map(|v| (mid(p), ms(v))))
                .collect(),
        });
    }
    lines
}

/// Whether one load ran steady, as its notes say; an unsteady load's steady window, if it has
/// one, is shaded on the charts (added to `shades`).
fn steady_verdict(
    l: &LoadRecord,
    used: &[&Point],
    name: &str,
    colour: &'static str,
    shades: &mut Vec<ShadeInput>,
) -> String {
    let note = l
        .load
        .notes
        .iter()
        .find(|n| matches!(n, Note::Unsteady { .. }));
    match note {
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
        _ if used.len() >= model::steady::MIN_INTERVALS => "steady".to_string(),
        _ => format!("not judged: {} intervals", used.len()),
    }
}

/// The lowest and highest of `v`, "-" for none.
fn value_range(v: Vec<f64>, decimals: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".to_string()
    } else {
        format!("{}-{}", f(lo, decimals), f(hi, decimals))
    }
}

/// The steadiness table's row of one load (0-based `round`).
fn steady_row(server: &str, round: u32, used: &[&Point], verdict: String) -> SteadyRow {
    SteadyRow {
        server: server.to_string(),
        round: (round + 1).to_string(),
        intervals: used.len().to_string(),
        rps_range: value_range(used.iter().map(|p| p.rate()).collect(), 0),
        p50_range: value_range(used.iter().filter_map(|p| p.p50_us).map(ms).collect(), 2),
        p99_max: used
            .iter()
            .filter_map(|p| p.p99_us)
            .max()
            .map_or_else(|| "-".to_string(), |v| f(ms(v), 2)),
        verdict,
    }
}
