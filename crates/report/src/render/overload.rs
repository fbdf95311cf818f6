//! Staircases past the capacity in words and tables: per document, a row per server (its knee,
//! goodput at 2x and 3x, collapse, recovery, peak memory) and a row per step.

use super::charts::{time_chart, ShadeInput, TimeChart, TimeLineInput};
use super::table::{Column, TextTable};
use crate::capacity::describe_us;
use crate::overload::{OverloadRecord, OverloadStep};
use crate::record::RunRecord;
use serde::Serialize;

/// What a document's staircases show, for the templates.
#[derive(Serialize)]
pub(crate) struct OverloadContext {
    /// "p99 <= 100ms".
    target: String,
    percentile: String,
    rules: String,
    rows: Vec<OverloadRow>,
    table: TextTable,
    steps: Vec<StepRow>,
    steps_table: TextTable,
    /// Per server, its rates and its latency over the staircase (HTML only).
    charts: Vec<TimeChart>,
}

#[derive(Serialize)]
struct OverloadRow {
    server: String,
    capacity: String,
    /// "1.5x", "none".
    knee: String,
    /// Goodput at 2x and 3x as a share of the capacity: "98%".
    goodput_2x: String,
    goodput_3x: String,
    /// "yes", "no", "-".
    collapse: String,
    /// "2.25", "> 10".
    recovery_s: String,
    memory_mib: String,
}

#[derive(Serialize)]
struct StepRow {
    server: String,
    /// "1.5x", "recovery 0.5x".
    step: String,
    offered: String,
    sent: String,
    goodput: String,
    p99_ms: String,
    /// "503: 1200, timeout: 3", "0".
    errors: String,
    cpu_s: String,
    memory_mib: String,
    /// The most connections the server held open, "-" when not read.
    connections: String,
    /// "generator limit", "unsettled", "".
    remark: String,
}

/// The staircases of `document`, in the order they ran.
pub fn of_document<'a>(record: &'a RunRecord, document: &str) -> Vec<&'a OverloadRecord> {
    record
        .overload
        .iter()
        .filter(|o| o.document == document)
        .collect()
}

/// The tables of one document's staircases; `None` when the run climbed none on it.
pub(crate) fn context(record: &RunRecord, document: &str) -> Option<OverloadContext> {
    let stairs = of_document(record, document);
    let first = stairs.first()?;
    let c = &first.criteria;
    let percentile = format!("p{}", crate::capacity::search::trim_number(c.percentile));
    let rows: Vec<OverloadRow> = stairs.iter().map(|o| row(o)).collect();
    let steps: Vec<StepRow> = stairs.iter().flat_map(|o| step_rows(o)).collect();
    Some(OverloadContext {
        target: format!("{percentile} <= {}", describe_us(c.target_us)),
        rules: rules_text(first),
        table: summary_table(&rows),
        steps_table: steps_table(&steps, &format!("{percentile} ms")),
        charts: stairs
            .iter()
            .enumerate()
            .flat_map(|(i, o)| charts_of(o, i))
            .collect(),
        percentile,
        rows,
        steps,
    })
}

/// The cells of a staircase's summary row, in the summary table's order: server, capacity,
/// knee, goodput at 2x and 3x, collapse, recovery seconds, peak memory.
pub(crate) fn summary_cells(o: &OverloadRecord) -> [String; 8] {
    let r = row(o);
    [
        r.server,
        r.capacity,
        r.knee,
        r.goodput_2x,
        r.goodput_3x,
        r.collapse,
        r.recovery_s,
        r.memory_mib,
    ]
}

/// The header of [`summary_cells`].
pub(crate) const SUMMARY_HEADER: [&str; 8] = [
    "server",
    "capacity req/s",
    "knee",
    "goodput 2x",
    "goodput 3x",
    "collapse",
    "recovery s",
    "peak MiB",
];

fn row(o: &OverloadRecord) -> OverloadRow {
    let v = &o.verdict;
    let share =
        |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| format!("{:.0}%", s * 100.0));
    let mut knee = v
        .knee
        .map_or_else(|| "none".to_string(), |k| format!("{}x", trim(k)));
    if v.generator_limited {
        knee.push_str(" (generator limit)");
    }
    OverloadRow {
        server: o.server.clone(),
        capacity: format!("{:.0}", o.capacity),
        knee,
        goodput_2x: share(v.goodput_2x),
        goodput_3x: share(v.goodput_3x),
        collapse: match v.collapse {
            Some(true) => "yes".to_string(),
            Some(false) => "no".to_string(),
            None => "-".to_string(),
        },
        recovery_s: match v.recovery_s {
            Some(s) => format!("{s:.2}"),
            None => format!("> {}", trim(o.criteria.recovery_s)),
        },
        memory_mib: mib(v.peak_memory_bytes),
    }
}

fn step_rows(o: &OverloadRecord) -> Vec<StepRow> {
    o.steps
        .iter()
        .map(|s| StepRow {
            server: o.server.clone(),
            step: if s.recovery {
                format!("recovery {}x", trim(s.multiple))
            } else {
                format!("{}x", trim(s.multiple))
            },
            offered: format!("{:.0}", s.offered),
            sent: format!("{:.0}", s.sent),
            goodput: format!("{:.0}", s.goodput),
            p99_ms: s
                .p99_us
                .map_or_else(|| "-".to_string(), |us| format!("{:.2}", us as f64 / 1e3)),
            errors: errors_text(s),
            cpu_s: s
                .server_cpu_s
                .map_or_else(|| "-".to_string(), |c| format!("{c:.2}")),
            memory_mib: mib(s.peak_memory_bytes),
            connections: s
                .peak_connections
                .map_or_else(|| "-".to_string(), |n| n.to_string()),
            remark: remark(s),
        })
        .collect()
}

/// A step's errors by kind: "non-2xx 1200, timeout 3"; "0" when none.
pub fn errors_text(s: &OverloadStep) -> String {
    let e = &s.errors;
    let parts: Vec<String> = [
        ("refused", e.refused),
        ("reset", e.reset),
        ("timeout", e.timeout),
        ("non-2xx", e.status),
        ("bad bytes", e.bad_bytes),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {n}"))
    .collect();
    if parts.is_empty() {
        "0".to_string()
    } else {
        parts.join(", ")
    }
}

fn remark(s: &OverloadStep) -> String {
    let mut r = Vec::new();
    if s.generator_limited {
        r.push("generator limit".to_string());
    }
    if s.held_s > s.window_s * 1.5 {
        // Held again while it had not settled: the figures are its last stretch's.
        r.push(format!("held {} s", trim((s.held_s * 10.0).round() / 10.0)));
    }
    if s.unsettled {
        r.push("unsettled".to_string());
    }
    r.join(", ")
}

/// How a staircase was climbed and read, in a sentence.
pub(crate) fn rules_text(o: &OverloadRecord) -> String {
    let c = &o.criteria;
    format!(
        "Steps of {} at {} times each server's capacity, then {} s at {}x to recover. Goodput counts 2xx responses within the target from each request's intended send time; the knee is the first step whose goodput is below {:.0}% of the rate offered; collapse: goodput at the last step below {:.0}% of the most given up to the knee; recovery: seconds until the {} ms intervals' latency and errors are back within the first step's (one interval out of line between two within is noise)",
        held_text(c.step_s, c.step_max_s),
        c.multiples.iter().map(|m| format!("{}x", trim(*m))).collect::<Vec<_>>().join(", "),
        trim(c.recovery_s),
        trim(c.recovery_multiple),
        c.knee_share * 100.0,
        crate::overload::COLLAPSE_SHARE * 100.0,
        trim(c.interval_s * 1000.0),
    )
}

/// How long each step was held: "3 s", or "3 s (again while unsettled, to 12 s)".
fn held_text(step_s: f64, max_s: f64) -> String {
    if max_s > step_s {
        format!(
            "{} s (held again while unsettled, up to {} s; a step held longer has its last {0} s' figures)",
            trim(step_s),
            trim(max_s)
        )
    } else {
        format!("{} s", trim(step_s))
    }
}

fn summary_table(rows: &[OverloadRow]) -> TextTable {
    let [server, capacity, knee, g2, g3, collapse, recovery, memory] = SUMMARY_HEADER;
    TextTable::new(
        &[
            Column::left(server),
            Column::right(capacity),
            Column::right(knee),
            Column::right(g2),
            Column::right(g3),
            Column::right(collapse),
            Column::right(recovery),
            Column::last(memory),
        ],
        rows.iter()
            .map(|r| {
                let cells = [
                    &r.server,
                    &r.capacity,
                    &r.knee,
                    &r.goodput_2x,
                    &r.goodput_3x,
                    &r.collapse,
                    &r.recovery_s,
                    &r.memory_mib,
                ];
                (cells.map(String::clone).to_vec(), String::new())
            })
            .collect(),
    )
}

fn steps_table(steps: &[StepRow], latency_header: &str) -> TextTable {
    TextTable::new(
        &[
            Column::left("server"),
            Column::right("step"),
            Column::right("offered req/s"),
            Column::right("sent req/s"),
            Column::right("goodput req/s"),
            Column::right(latency_header),
            Column::right("server CPU s"),
            Column::right("peak MiB"),
            Column::right("open conns"),
            Column::left("errors"),
            Column::last(""),
        ],
        steps
            .iter()
            .map(|s| {
                let cells = [
                    &s.server,
                    &s.step,
                    &s.offered,
                    &s.sent,
                    &s.goodput,
                    &s.p99_ms,
                    &s.cpu_s,
                    &s.memory_mib,
                    &s.connections,
                    &s.errors,
                    &s.remark,
                ];
                (cells.map(String::clone).to_vec(), String::new())
            })
            .collect(),
    )
}

/// A staircase's charts: the rate offered and the goodput of each step, the responses per
/// interval, and the latency per interval, the steps laid end to end and shaded.
fn charts_of(o: &OverloadRecord, index: usize) -> Vec<TimeChart> {
    let mut t0 = 0.0;
    let (mut shades, mut offered, mut goodput, mut completed, mut latency) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (k, s) in o.steps.iter().enumerate() {
        let t1 = t0 + s.held_s.max(s.window_s);
        let label = if s.recovery {
            format!("recovery at {}x", trim(s.multiple))
        } else {
            format!("{}x: {:.0} req/s offered", trim(s.multiple), s.offered)
        };
        shades.push(ShadeInput {
            title: label,
            colour: if k % 2 == 0 { "#ececec" } else { "#f7f7f7" },
            from_s: t0,
            to_s: t1,
        });
        offered.extend([(t0, s.offered), (t1, s.offered)]);
        // The step's goodput is its last stretch's (the settled one).
        goodput.extend([((t1 - s.window_s).max(t0), s.goodput), (t1, s.goodput)]);
        for p in &s.points {
            completed.push((t0 + p.start_s, p.completed));
            if let Some(us) = p.latency_us {
                latency.push((t0 + p.start_s, us as f64 / 1e3));
            }
        }
        t0 = t1;
    }
    let colour = super::charts::colour(index);
    let line = |title: &str, colour: &'static str, dashed: bool, points| TimeLineInput {
        title: format!("{} {title}", o.server),
        colour,
        dashed,
        points,
    };
    let p = format!(
        "p{}",
        crate::capacity::search::trim_number(o.criteria.percentile)
    );
    let id = format!("overload-{}-{index}", o.document);
    vec![
        time_chart(
            &format!("{id}-rate"),
            "overload-rate",
            &format!(
                "{}: rate offered (dashed), goodput (solid), responses per interval (grey)",
                o.server
            ),
            "requests/s",
            &[
                line("offered", colour, true, offered),
                line("goodput", colour, false, goodput),
                line("responses", GREY, false, completed),
            ],
            &shades,
            &[(o.server.clone(), colour)],
        ),
        time_chart(
            &format!("{id}-latency"),
            "overload-latency",
            &format!(
                "{}: {p} per interval, from the intended send time",
                o.server
            ),
            &format!("{p} ms"),
            &[line(&p, colour, false, latency)],
            &shades,
            &[(o.server.clone(), colour)],
        ),
    ]
}

/// The responses line, behind the server's own.
const GREY: &str = "#999999";

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "-".to_string(),
        |b| format!("{:.1}", b as f64 / 1048576.0),
    )
}

/// A multiple or a number of seconds without trailing zeros: "1.5", "3", "0.25".
fn trim(v: f64) -> String {
    crate::capacity::search::trim_number(v)
}
