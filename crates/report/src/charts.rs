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
        y_ticks: ticks
            .iter()
            .map(|&(v, ref label)| Tick {
                pos: c(y_of(v)),
                label: label.clone(),
            })
            .collect(),
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
        y_ticks: ticks
            .iter()
            .map(|&(v, ref label)| Tick {
                pos: c(y_of(v)),
                label: label.clone(),
            })
            .collect(),
        series,
        tick_label_y: c(HEIGHT - BOTTOM + 18.0),
    }
}

/// An axis from 0 to a round number at or above `max`, with 1-2-5 steps and at most 6 ticks.
/// Returns the axis maximum and (value, label) ticks.
pub fn nice_ticks(max: f64) -> (f64, Vec<(f64, String)>) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let rough = max / 5.0;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * mag);
    let count = (max / step - 1e-9).ceil().max(1.0) as usize;
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
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
}
