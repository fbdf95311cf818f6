//! Chart geometry for the HTML report: the Rust side turns numbers into coordinates (already
//! formatted, so the page is byte-for-byte stable) and the template draws the SVG elements from
//! them. Nothing here writes markup.

use serde::Serialize;

/// Drawing area of every chart, in SVG user units.
pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 300.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 32.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 56.0;

/// Server colours, by the server's position in the scenario, so a server keeps its colour in
/// every chart of the page. Chosen to stay distinguishable for the common colour-vision
/// deficiencies.
const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

pub fn colour(server_index: usize) -> &'static str {
    PALETTE[server_index % PALETTE.len()]
}

/// Coordinates are printed with one decimal: finer than a pixel, and identical on every run.
/// Axis ticks `(value, label)` at their place along the axis.
fn placed(ticks: &[(f64, String)], pos_of: impl Fn(f64) -> f64) -> Vec<Tick> {
    ticks
        .iter()
        .map(|(v, label)| Tick {
            pos: c(pos_of(*v)),
            label: label.clone(),
        })
        .collect()
}

fn c(v: f64) -> String {
    format!("{v:.1}")
}

/// The inner plotting rectangle.
#[derive(Debug, Clone, Serialize)]
pub struct Plot {
    pub width: String,
    pub height: String,
    pub left: String,
    pub right: String,
    pub top: String,
    pub bottom: String,
    /// Where the axis titles go.
    pub x_title_y: String,
    pub y_title_x: String,
    pub mid_x: String,
    pub mid_y: String,
}

fn plot() -> Plot {
    Plot {
        width: c(WIDTH),
        height: c(HEIGHT),
        left: c(LEFT),
        right: c(WIDTH - RIGHT),
        top: c(TOP),
        bottom: c(HEIGHT - BOTTOM),
        x_title_y: c(HEIGHT - 8.0),
        y_title_x: c(16.0),
        mid_x: c((LEFT + WIDTH - RIGHT) / 2.0),
        mid_y: c((TOP + HEIGHT - BOTTOM) / 2.0),
    }
}

/// A tick on an axis: its position along the axis and its label.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    pub pos: String,
    pub label: String,
}

/// The error bar over a bar: a vertical line from `y_low` to `y_high` with caps.
#[derive(Debug, Clone, Serialize)]
pub struct Whisker {
    pub x: String,
    pub y_low: String,
    pub y_high: String,
    pub cap_left: String,
    pub cap_right: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bar {
    pub label: String,
    pub value_label: String,
    pub colour: String,
    pub x: String,
    pub y: String,
    pub width: String,
    pub height: String,
    /// Centre of the bar, for the labels.
    pub centre: String,
    /// Baseline of the value label, above the bar (or its whisker).
    pub value_y: String,
    pub whisker: Option<Whisker>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BarChart {
    pub id: String,
    /// `data-chart` attribute: what the chart shows ("rps", "cpu", "memory").
    pub kind: String,
    pub title: String,
    pub y_title: String,
    pub plot: Plot,
    pub y_ticks: Vec<Tick>,
    pub bars: Vec<Bar>,
    pub label_y: String,
}

/// One bar's input: its height and optional interval.
#[derive(Debug, Clone)]
pub struct BarInput {
    pub label: String,
    pub colour: &'static str,
    pub value: f64,
    pub value_label: String,
    pub interval: Option<(f64, f64)>,
}

/// Lays out a bar chart with a y axis from 0 to a round number above the highest bar or
/// whisker.
pub fn bar_chart(id: &str, kind: &str, title: &str, y_title: &str, bars: &[BarInput]) -> BarChart {
    let top_value = bars
        .iter()
        .map(|b| b.interval.map_or(b.value, |(_, hi)| hi.max(b.value)))
        .fold(0.0_f64, f64::max);
    let (axis_max, ticks) = nice_ticks(top_value);
    let plot_h = HEIGHT - BOTTOM - TOP;
    let base_y = HEIGHT - BOTTOM;
    let y_of = |v: f64| base_y - (v.max(0.0) / axis_max).min(1.0) * plot_h;
    let slot = (WIDTH - LEFT - RIGHT) / bars.len().max(1) as f64;
    let bar_w = (slot * 0.6).min(120.0);
    let laid = bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let centre = LEFT + slot * (i as f64 + 0.5);
            let y = y_of(b.value);
            let whisker = b.interval.map(|(lo, hi)| Whisker {
                x: c(centre),
                y_low: c(y_of(lo)),
                y_high: c(y_of(hi)),
                cap_left: c(centre - bar_w / 6.0),
                cap_right: c(centre + bar_w / 6.0),
            });
            let label_top = b.interval.map_or(y, |(_, hi)| y_of(hi).min(y));
            Bar {
                label: b.label.clone(),
                value_label: b.value_label.clone(),
                colour: b.colour.to_string(),
                x: c(centre - bar_w / 2.0),
                y: c(y),
                width: c(bar_w),
                height: c(base_y - y),
                centre: c(centre),
                value_y: c(label_top - 5.0),
                whisker,
            }
        })
        .collect();
    BarChart {
        id: id.to_string(),
        kind: kind.to_string(),
        title: title.to_string(),
        y_title: y_title.to_string(),
        plot: plot(),
        y_ticks: placed(&ticks, y_of),
        bars: laid,
        label_y: c(base_y + 18.0),
    }
}

/// One server's latency curve.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub name: String,
    pub colour: String,
    /// SVG `points` attribute: "x,y x,y ...".
    pub points: String,
    /// Legend position.
    pub legend_x: String,
    pub legend_y: String,
    /// Top of the legend's colour square, level with the text.
    pub legend_rect_y: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LineChart {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub plot: Plot,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub series: Vec<Series>,
    pub tick_label_y: String,
}

/// One curve's input: (nines, value) points, where nines = log10(1 / (1 − quantile)).
#[derive(Debug, Clone)]
pub struct SeriesInput {
    pub name: String,
    pub colour: &'static str,
    pub points: Vec<(f64, f64)>,
}

/// The percentile axis ends at 99.99%: four nines.
pub const MAX_NINES: f64 = 4.0;

/// Lays out latency-by-percentile curves: x is the percentile on a log scale of 1/(1−q), so
/// the tail (99%, 99.9%) gets as much room as the body; y is linear from 0.
pub fn percentile_chart(id: &str, title: &str, series: &[SeriesInput]) -> LineChart {
    let top_value = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let (axis_max, ticks) = nice_ticks(top_value);
    let plot_h = HEIGHT - BOTTOM - TOP;
    let plot_w = WIDTH - LEFT - RIGHT;
    let x_of = |n: f64| LEFT + n / MAX_NINES * plot_w;
    let y_of = |v: f64| HEIGHT - BOTTOM - (v.max(0.0) / axis_max).min(1.0) * plot_h;
    let x_ticks = [
        (0.0, "0%"),
        (1.0, "90%"),
        (2.0, "99%"),
        (3.0, "99.9%"),
        (4.0, "99.99%"),
    ]
    .iter()
    .map(|&(n, l)| Tick {
        pos: c(x_of(n)),
        label: l.to_string(),
    })
    .collect();
    let series = series
        .iter()
        .enumerate()
        .map(|(i, s)| Series {
            name: s.name.clone(),
            colour: s.colour.to_string(),
            points: s
                .points
                .iter()
                .map(|&(n, v)| format!("{},{}", c(x_of(n)), c(y_of(v))))
                .collect::<Vec<_>>()
                .join(" "),
            legend_x: c(LEFT + 12.0),
            legend_y: c(TOP + 14.0 + 16.0 * i as f64),
            legend_rect_y: c(TOP + 5.0 + 16.0 * i as f64),
        })
        .collect();
    LineChart {
        id: id.to_string(),
        kind: "latency".to_string(),
        title: title.to_string(),
        x_title: "percentile of requests (log scale)".to_string(),
        y_title: "latency (ms)".to_string(),
        plot: plot(),
        x_ticks,
        y_ticks: placed(&ticks, y_of),
        series,
        tick_label_y: c(HEIGHT - BOTTOM + 18.0),
    }
}

/// One line of a chart over time.
#[derive(Debug, Clone)]
pub struct TimeLineInput {
    /// What the line is ("nginx round 2 p99"), shown when pointed at.
    pub title: String,
    pub colour: &'static str,
    pub dashed: bool,
    /// (seconds from the start of measurement, value) points.
    pub points: Vec<(f64, f64)>,
}

/// A stretch of time shaded behind the lines: where a load was steady.
#[derive(Debug, Clone)]
pub struct ShadeInput {
    pub title: String,
    pub colour: &'static str,
    pub from_s: f64,
    pub to_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimeLine {
    pub title: String,
    pub colour: String,
    pub dashed: bool,
    /// SVG `points` attribute.
    pub points: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Shade {
    pub title: String,
    pub colour: String,
    pub x: String,
    pub y: String,
    pub width: String,
    pub height: String,
}

/// A legend entry: a colour square and a name, in a row along the top of the plot.
#[derive(Debug, Clone, Serialize)]
pub struct Legend {
    pub name: String,
    pub colour: String,
    pub x: String,
    pub y: String,
    pub rect_y: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimeChart {
    pub id: String,
    /// `data-chart` attribute ("timeline-rps", "timeline-latency").
    pub kind: String,
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub plot: Plot,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub shades: Vec<Shade>,
    pub lines: Vec<TimeLine>,
    pub legend: Vec<Legend>,
    pub tick_label_y: String,
}

/// Room above the highest value for the legend row, as a share of the plot's height.
const LEGEND_ROOM: f64 = 0.15;

/// Lays out lines over time: x linear in seconds from 0, y linear from 0 to a round number
/// above the highest point (with room at the top for the legend), `shades` behind the lines.
pub fn time_chart(
    id: &str,
    kind: &str,
    title: &str,
    y_title: &str,
    lines: &[TimeLineInput],
    shades: &[ShadeInput],
    legend: &[(String, &'static str)],
) -> TimeChart {
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let x_max = all()
        .map(|p| p.0)
        .chain(shades.iter().map(|s| s.to_s))
        .fold(0.0_f64, f64::max);
    let y_max = all().map(|p| p.1).fold(0.0_f64, f64::max);
    let (x_axis, x_ticks) = nice_ticks(x_max);
    let (y_axis, y_ticks) = nice_ticks(y_max / (1.0 - LEGEND_ROOM));
    let plot_h = HEIGHT - BOTTOM - TOP;
    let plot_w = WIDTH - LEFT - RIGHT;
    let x_of = |t: f64| LEFT + (t.max(0.0) / x_axis).min(1.0) * plot_w;
    let y_of = |v: f64| HEIGHT - BOTTOM - (v.max(0.0) / y_axis).min(1.0) * plot_h;
    TimeChart {
        id: id.to_string(),
        kind: kind.to_string(),
        title: title.to_string(),
        x_title: "seconds from the start of measurement".to_string(),
        y_title: y_title.to_string(),
        plot: plot(),
        x_ticks: placed(&x_ticks, x_of),
        y_ticks: placed(&y_ticks, y_of),
        shades: shades
            .iter()
            .map(|s| Shade {
                title: s.title.clone(),
                colour: s.colour.to_string(),
                x: c(x_of(s.from_s)),
                y: c(TOP),
                width: c(x_of(s.to_s) - x_of(s.from_s)),
                height: c(plot_h),
            })
            .collect(),
        lines: lines
            .iter()
            .map(|l| TimeLine {
                title: l.title.clone(),
                colour: l.colour.to_string(),
                dashed: l.dashed,
                points: l
                    .points
                    .iter()
                    .map(|&(t, v)| format!("{},{}", c(x_of(t)), c(y_of(v))))
                    .collect::<Vec<_>>()
                    .join(" "),
            })
            .collect(),
        legend: legend_row(legend.iter().cloned()),
        tick_label_y: c(HEIGHT - BOTTOM + 18.0),
    }
}

/// One server's line on a trend chart: a value per night, `None` where the night has none.
#[derive(Debug, Clone)]
pub struct TrendInput {
    pub name: String,
    pub colour: &'static str,
    pub values: Vec<Option<f64>>,
    /// Per night, what pointing at its point shows.
    pub titles: Vec<String>,
    /// Per night, a mark drawn around its point ("worse", "better", "within", "not-judged"
    /// for an A/B verdict), or `None`.
    pub marks: Vec<Option<&'static str>>,
}

/// A vertical line before night `night`: a change point, or a change of setup.
#[derive(Debug, Clone)]
pub struct RuleInput {
    pub night: usize,
    /// Its `class` ("rule" for a change point, "setup" for a change of setup).
    pub class: &'static str,
    pub title: String,
    pub colour: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrendDot {
    pub x: String,
    pub y: String,
    pub title: String,
    pub mark: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrendLine {
    pub name: String,
    pub colour: String,
    /// SVG `points` of each run of consecutive nights with a value (a night without one breaks
    /// the line).
    pub pieces: Vec<String>,
    pub dots: Vec<TrendDot>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rule {
    pub class: &'static str,
    pub x: String,
    pub title: String,
    pub colour: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrendChart {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub y_title: String,
    pub plot: Plot,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub lines: Vec<TrendLine>,
    pub rules: Vec<Rule>,
    pub legend: Vec<Legend>,
    pub tick_label_y: String,
}

/// Lays out figures night by night: nights evenly spaced along x (labelled by `nights`, every
/// k-th label where they would not all fit), y over the values' own range (a trend is read as
/// changes, so the axis need not start at 0), change points as vertical rules halfway before
/// their night.
pub fn trend_chart(
    id: &str,
    kind: &str,
    title: &str,
    y_title: &str,
    nights: &[String],
    lines: &[TrendInput],
    rules: &[RuleInput],
) -> TrendChart {
    let values = || {
        lines
            .iter()
            .flat_map(|l| l.values.iter().flatten().copied())
    };
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(f64::NEG_INFINITY, f64::max);
    let (y_lo, y_hi, ticks) = range_ticks(
        lo,
        hi + (hi - lo).max(hi.abs() * 0.02) * LEGEND_ROOM / (1.0 - LEGEND_ROOM),
    );
    let plot_h = HEIGHT - BOTTOM - TOP;
    let plot_w = WIDTH - LEFT - RIGHT;
    let n = nights.len();
    // Half a step of room at either end, so the first and last points are off the axes.
    let step = plot_w / n.max(1) as f64;
    let x_of = |i: f64| LEFT + step * (i + 0.5);
    let y_of = |v: f64| HEIGHT - BOTTOM - ((v - y_lo) / (y_hi - y_lo)).clamp(0.0, 1.0) * plot_h;
    // About 60 units per label of a date, more for a date with a time.
    let widest = nights.iter().map(|l| l.len()).max().unwrap_or(0) as f64;
    let room = (plot_w / (widest * 7.0 + 12.0)).floor().max(1.0) as usize;
    let every = n.div_ceil(room).max(1);
    let x_ticks = nights
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, label)| Tick {
            pos: c(x_of(i as f64)),
            label: label.clone(),
        })
        .collect();
    let legend = legend_row(lines.iter().map(|l| (l.name.clone(), l.colour)));
    let lines = lines
        .iter()
        .map(|l| {
            let mut pieces = Vec::new();
            let mut piece: Vec<String> = Vec::new();
            let mut dots = Vec::new();
            for (i, v) in l.values.iter().enumerate() {
                match v {
                    Some(v) => {
                        let (x, y) = (c(x_of(i as f64)), c(y_of(*v)));
                        piece.push(format!("{x},{y}"));
                        dots.push(TrendDot {
                            x,
                            y,
                            title: l.titles.get(i).cloned().unwrap_or_default(),
                            mark: l.marks.get(i).copied().flatten(),
                        });
                    }
                    None if !piece.is_empty() => pieces.push(std::mem::take(&mut piece).join(" ")),
                    None => {}
                }
            }
            if !piece.is_empty() {
                pieces.push(piece.join(" "));
            }
            TrendLine {
                name: l.name.clone(),
                colour: l.colour.to_string(),
                pieces,
                dots,
            }
        })
        .collect();
    TrendChart {
        id: id.to_string(),
        kind: kind.to_string(),
        title: title.to_string(),
        y_title: y_title.to_string(),
        plot: plot(),
        x_ticks,
        y_ticks: placed(&ticks, y_of),
        lines,
        rules: rules
            .iter()
            .map(|r| Rule {
                class: r.class,
                x: c(x_of(r.night as f64 - 0.5)),
                title: r.title.clone(),
                colour: r.colour.to_string(),
            })
            .collect(),
        legend,
        tick_label_y: c(HEIGHT - BOTTOM + 18.0),
    }
}

/// The legend row along the top of a plot.
fn legend_row(entries: impl IntoIterator<Item = (String, &'static str)>) -> Vec<Legend> {
    entries
        .into_iter()
        .enumerate()
        .map(|(i, (name, colour))| Legend {
            name,
            colour: colour.to_string(),
            x: c(LEFT + 12.0 + 110.0 * i as f64),
            y: c(TOP + 14.0),
            rect_y: c(TOP + 5.0),
        })
        .collect()
}

/// An axis over `lo..hi` from a round number at or below `lo` to one at or above `hi`, with
/// 1-2-5 steps and at most 7 ticks. Returns its ends and (value, label) ticks.
pub fn range_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<(f64, String)>) {
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) if hi > lo => (lo, hi),
        (true, true) => (lo - lo.abs().max(1.0) * 0.05, lo + lo.abs().max(1.0) * 0.05),
        _ => (0.0, 1.0),
    };
    let (step, decimals) = round_step((hi - lo) / 5.0);
    let first = (lo / step + 1e-9).floor();
    let last = (hi / step - 1e-9).ceil();
    let ticks = (first as i64..=last as i64)
        .map(|k| {
            let v = step * k as f64;
            (v, format!("{v:.decimals$}"))
        })
        .collect();
    (first * step, last * step, ticks)
}

/// The 1-2-5 step at or above `rough`, and the decimals its labels need.
fn round_step(rough: f64) -> (f64, usize) {
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * mag);
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    (step, decimals)
}

/// An axis from 0 to a round number at or above `max`, with 1-2-5 steps and at most 6 ticks.
/// Returns the axis maximum and (value, label) ticks.
pub fn nice_ticks(max: f64) -> (f64, Vec<(f64, String)>) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let (step, decimals) = round_step(max / 5.0);
    let count = (max / step - 1e-9).ceil().max(1.0) as usize;
    let ticks = (0..=count)
        .map(|i| {
            let v = step * i as f64;
            (v, format!("{v:.decimals$}"))
        })
        .collect();
    (step * count as f64, ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        let (top, t) = nice_ticks(9722.0);
        assert_eq!(top, 10_000.0);
        let labels: Vec<&str> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["0", "2000", "4000", "6000", "8000", "10000"]);
        let (top, t) = nice_ticks(0.37);
        assert!((top - 0.4).abs() < 1e-12);
        assert_eq!(t.last().unwrap().1, "0.4");
        let (top, _) = nice_ticks(0.0);
        assert_eq!(top, 1.0);
    }

    #[test]
    fn bars_scale_to_the_axis() {
        let bars = [
            BarInput {
                label: "a".into(),
                colour: colour(0),
                value: 50.0,
                value_label: "50".into(),
                interval: Some((40.0, 60.0)),
            },
            BarInput {
                label: "b".into(),
                colour: colour(1),
                value: 100.0,
                value_label: "100".into(),
                interval: None,
            },
        ];
        let ch = bar_chart("rps-0", "rps", "t", "y", &bars);
        // Axis 0..100 over 228 units of height, baseline at y = 244.
        assert_eq!(ch.bars[1].y, "16.0");
        assert_eq!(ch.bars[1].height, "228.0");
        assert_eq!(ch.bars[0].height, "114.0");
        let w = ch.bars[0].whisker.as_ref().unwrap();
        assert_eq!((w.y_low.as_str(), w.y_high.as_str()), ("152.8", "107.2"));
        assert!(ch.bars[1].whisker.is_none());
    }

    #[test]
    fn a_trend_breaks_where_a_night_has_no_value_and_thins_its_labels() {
        let nights: Vec<String> = (1..=40).map(|d| format!("11-{d:02}")).collect();
        let values: Vec<Option<f64>> = (0..40)
            .map(|i| (!(10..13).contains(&i)).then_some(100.0 + f64::from(i % 5)))
            .collect();
        let line = TrendInput {
            name: "apache".into(),
            colour: colour(1),
            values,
            titles: vec![String::new(); 40],
            marks: (0..40).map(|i| (i == 20).then_some("worse")).collect(),
        };
        let rule = RuleInput {
            night: 20,
            class: "rule",
            title: "change".into(),
            colour: colour(1),
        };
        let ch = trend_chart("t", "rps", "t", "y", &nights, &[line], &[rule]);
        let l = &ch.lines[0];
        // Nights 11-13 have no value: two pieces, 37 points.
        assert_eq!(l.pieces.len(), 2);
        assert_eq!(l.dots.len(), 37);
        assert_eq!(l.dots.iter().filter(|d| d.mark == Some("worse")).count(), 1);
        // Forty five-character labels do not fit 536 units: every other one or fewer.
        assert!(
            ch.x_ticks.len() <= 20 && ch.x_ticks.len() >= 8,
            "{}",
            ch.x_ticks.len()
        );
        assert_eq!(ch.x_ticks[0].label, "11-01");
        // The axis covers the values, not from 0: 100 to 104 on round ticks.
        let first: f64 = ch.y_ticks[0].label.parse().unwrap();
        let last: f64 = ch.y_ticks.last().unwrap().label.parse().unwrap();
        assert!(
            first <= 100.0 && first > 90.0 && last >= 104.0,
            "{first} {last}"
        );
        // The rule stands halfway between nights 20 and 21 (0-based 19 and 20).
        let x: f64 = ch.rules[0].x.parse().unwrap();
        let (a, b): (f64, f64) = (l.dots[16].x.parse().unwrap(), l.dots[17].x.parse().unwrap());
        assert!((x - (a + b) / 2.0).abs() < 0.1, "{x} {a} {b}");
    }

    #[test]
    fn range_ticks_cover_flat_and_empty_series() {
        let (lo, hi, t) = range_ticks(5.0, 5.0);
        assert!(lo < 5.0 && hi > 5.0 && t.len() >= 2);
        let (lo, hi, _) = range_ticks(f64::INFINITY, f64::NEG_INFINITY);
        assert_eq!((lo, hi), (0.0, 1.0));
        let (lo, hi, t) = range_ticks(1371.5, 1590.0);
        assert_eq!((lo, hi), (1350.0, 1600.0));
        assert_eq!(t.first().unwrap().1, "1350");
    }

    #[test]
    fn a_time_chart_scales_both_axes_and_shades_behind_the_lines() {
        let line = TimeLineInput {
            title: "a round 1".into(),
            colour: colour(0),
            dashed: false,
            points: vec![(0.5, 0.0), (1.5, 85.0), (9.5, 85.0)],
        };
        let shade = ShadeInput {
            title: "steady".into(),
            colour: colour(0),
            from_s: 2.0,
            to_s: 10.0,
        };
        let ch = time_chart(
            "t",
            "timeline-rps",
            "t",
            "y",
            &[line],
            &[shade],
            &[("a".to_string(), colour(0))],
        );
        // x: 0..10 s over 536 units from 72; y: 85 / 0.85 = 100 at the top.
        assert_eq!(ch.lines[0].points, "98.8,244.0 152.4,50.2 581.2,50.2");
        assert_eq!(ch.x_ticks.last().unwrap().label, "10");
        assert_eq!(ch.y_ticks.last().unwrap().label, "100");
        assert_eq!(
            (ch.shades[0].x.as_str(), ch.shades[0].width.as_str()),
            ("179.2", "428.8")
        );
        assert_eq!(ch.legend[0].x, "84.0");
    }
}
