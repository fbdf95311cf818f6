//! Capacity at a latency target: the `[capacity]` table of a scenario and the `p99=10ms` form
//! the command line's `--capacity` takes. A search (in the runner) looks, per server and
//! document, for the highest constant request rate at which the named percentile of the
//! latency stays within the limit; this is what it is asked.

use crate::error::Diagnostics;
use crate::units::parse_duration;
use serde::Deserialize;
use serde_spanned::Spanned;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The measured window of each step when `step` is not given.
pub const DEFAULT_STEP: Duration = Duration::from_secs(2);
/// Load sent before each step's window and not counted, when `warmup` is not given.
pub const DEFAULT_WARMUP: Duration = Duration::from_millis(500);
/// Steps a search may take per server and document, when `max_steps` is not given.
pub const DEFAULT_MAX_STEPS: u32 = 12;
/// Time a search may take per server and document, when `budget` is not given.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(40);
/// Shortest step window accepted: shorter ones measure too few requests to say anything.
pub const MIN_STEP: Duration = Duration::from_millis(100);
/// Most steps a scenario may allow per search.
pub const MAX_STEPS: u32 = 100;

/// A latency percentile a server can be held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Percentile {
    P50,
    P90,
    P99,
    P999,
}

impl Percentile {
    pub const ALL: [Percentile; 4] = [
        Percentile::P50,
        Percentile::P90,
        Percentile::P99,
        Percentile::P999,
    ];

    /// Per mille, as the load generator's reports list percentiles: 990 for p99.
    pub fn permille(self) -> u32 {
        match self {
            Percentile::P50 => 500,
            Percentile::P90 => 900,
            Percentile::P99 => 990,
            Percentile::P999 => 999,
        }
    }

    /// As a percentage: 99.9 for p99.9.
    pub fn percent(self) -> f64 {
        f64::from(self.permille()) / 10.0
    }

    /// Its name: `p99`, `p99.9`; also its key in a `[capacity]` table.
    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }

    /// The percentile named `text` (`p99`, `P99.9`).
    pub fn from_name(text: &str) -> Option<Percentile> {
        Percentile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of the percentiles, for messages: "p50, p90, p99 or p99.9".
fn percentile_names() -> String {
    let names: Vec<&str> = Percentile::ALL.iter().map(|p| p.name()).collect();
    format!(
        "{} or {}",
        names[..names.len() - 1].join(", "),
        names[names.len() - 1]
    )
}

/// Why `text` names no percentile: a message for a key or an argument that looked like one.
pub fn not_a_percentile(text: &str) -> String {
    format!(
        "`{text}` is not a percentile a capacity search can hold a server to (use {})",
        percentile_names()
    )
}

/// One percentile of the latency and its limit: `p99=10ms` reads "99% of the requests within
/// 10 ms".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityTarget {
    pub percentile: Percentile,
    pub latency: Duration,
}

impl CapacityTarget {
    /// Parses `PERCENTILE=LATENCY`, e.g. `p99=10ms` or `p99.9=2.5ms`.
    pub fn parse(text: &str) -> Result<CapacityTarget, String> {
        let Some((p, latency)) = text.split_once('=') else {
            return Err(format!(
                "`{text}` is not a latency target (write PERCENTILE=LATENCY, e.g. p99=10ms)"
            ));
        };
        let percentile = Percentile::from_name(p).ok_or_else(|| not_a_percentile(p.trim()))?;
        let latency = parse_latency(latency.trim())?;
        Ok(CapacityTarget {
            percentile,
            latency,
        })
    }
}

impl FromStr for CapacityTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CapacityTarget::parse(s)
    }
}

impl fmt::Display for CapacityTarget {
    /// `p99 <= 10ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} <= {}",
            self.percentile,
            describe_duration(self.latency)
        )
    }
}

/// A latency limit: a duration longer than zero.
fn parse_latency(text: &str) -> Result<Duration, String> {
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "`{text}` is not a latency (write it as 10ms, 500us or 1.5s)"
        ));
    }
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!(
            "a latency limit of `{text}` cannot be met (give one longer than 0, e.g. 10ms)"
        ));
    }
    Ok(d)
}

/// A duration as the shortest of `250us`, `10ms`, `2.5s`.
pub fn describe_duration(d: Duration) -> String {
    let us = d.as_micros();
    if us < 1_000 {
        format!("{us}us")
    } else if us < 1_000_000 {
        trim_decimal(us as f64 / 1e3, "ms")
    } else {
        trim_decimal(us as f64 / 1e6, "s")
    }
}

fn trim_decimal(v: f64, unit: &str) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

/// What a capacity search is asked, every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySpec {
    pub target: CapacityTarget,
    /// The measured window of each step.
    pub step: Duration,
    /// Load sent before each step's window, not counted.
    pub warmup: Duration,
    /// Most steps per server and document.
    pub max_steps: u32,
    /// Most time per server and document: no step starts that would end beyond it.
    pub budget: Duration,
    /// The first rate tried, requests/s; `None` for half the closed-loop requests/s the
    /// scenario's own load measured.
    pub start: Option<f64>,
}

impl CapacitySpec {
    /// A search for `target` with every other setting at its default.
    pub fn new(target: CapacityTarget) -> CapacitySpec {
        CapacitySpec {
            target,
            step: DEFAULT_STEP,
            warmup: DEFAULT_WARMUP,
            max_steps: DEFAULT_MAX_STEPS,
            budget: DEFAULT_BUDGET,
            start: None,
        }
    }

    /// This search with another latency target (the command line's `--capacity`).
    pub fn with_target(self, target: CapacityTarget) -> CapacitySpec {
        CapacitySpec { target, ..self }
    }
}

/// `[capacity]`: one latency target (exactly one of the percentile keys) and the search's
/// bounds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCapacity {
    /// Latency limits, e.g. `"10ms"`; exactly one of them.
    pub p50: Option<Spanned<String>>,
    pub p90: Option<Spanned<String>>,
    pub p99: Option<Spanned<String>>,
    #[serde(rename = "p99.9")]
    pub p99_9: Option<Spanned<String>>,
    /// Each step's measured window (default `"2s"`).
    pub step: Option<Spanned<String>>,
    /// Load before each step's window, not counted (default `"500ms"`).
    pub warmup: Option<Spanned<String>>,
    /// Most steps per server and document (default 12).
    pub max_steps: Option<Spanned<i64>>,
    /// Most time per server and document (default `"40s"`).
    pub budget: Option<Spanned<String>>,
    /// First rate tried, requests/s (default: half the closed-loop requests/s).
    pub start: Option<Spanned<f64>>,
}

/// Checks a `[capacity]` table, reporting every mistake at its position; `None` when it has
/// any.
pub(crate) fn check(d: &mut Diagnostics, table: &Spanned<RawCapacity>) -> Option<CapacitySpec> {
    let raw = table.get_ref();
    let target = check_target(d, table);
    let mut ok = true;
    let (step, warmup, budget) = check_durations(d, raw, &mut ok);
    let max_steps = check_max_steps(d, raw, &mut ok);
    if let Some(v) = &raw.budget {
        if budget < warmup + step {
            d.error(
                v.span(),
                format!(
                    "a budget of {} leaves no room for one step ({} of warm-up and {} measured; raise budget)",
                    describe_duration(budget),
                    describe_duration(warmup),
                    describe_duration(step)
                ),
            );
            ok = false;
        }
    }
    let start = check_start(d, raw, &mut ok);
    let target = target?;
    ok.then_some(CapacitySpec {
        target,
        step,
        warmup,
        max_steps,
        budget,
        start,
    })
}

/// The table's one latency target: exactly one percentile key, with a latency as its value.
fn check_target(d: &mut Diagnostics, table: &Spanned<RawCapacity>) -> Option<CapacityTarget> {
    let raw = table.get_ref();
    let given: Vec<(Percentile, &Spanned<String>)> = [
        (Percentile::P50, &raw.p50),
        (Percentile::P90, &raw.p90),
        (Percentile::P99, &raw.p99),
        (Percentile::P999, &raw.p99_9),
    ]
    .into_iter()
    .filter_map(|(p, v)| v.as_ref().map(|v| (p, v)))
    .collect();
    match given.as_slice() {
        [] => {
            d.error(
                table.span(),
                "[capacity] names no latency target (add one percentile and its limit, e.g. p99 = \"10ms\")",
            );
            None
        }
        [(p, v)] => match parse_latency(v.get_ref()) {
            Ok(latency) => Some(CapacityTarget {
                percentile: *p,
                latency,
            }),
            Err(msg) => {
                d.error(v.span(), format!("bad {p}: {msg}"));
                None
            }
        },
        [(first, _), rest @ ..] => {
            for (p, v) in rest {
                d.error(
                    v.span(),
                    format!("[capacity] has a second latency target, {p}, besides {first} (keep one: a search holds a server to one percentile)"),
                );
            }
            None
        }
    }
}

/// `step`, `warmup` and `budget`, each its default when not given or not readable.
fn check_durations(
    d: &mut Diagnostics,
    raw: &RawCapacity,
    ok: &mut bool,
) -> (Duration, Duration, Duration) {
    let mut duration = |value: &Option<Spanned<String>>, key: &str, default: Duration| {
        let Some(v) = value else {
            return default;
        };
        match parse_duration(v.get_ref()) {
            Ok(t) => t,
            Err(msg) => {
                d.error(v.span(), format!("bad {key}: {msg}"));
                *ok = false;
                default
            }
        }
    };
    let step = duration(&raw.step, "step", DEFAULT_STEP);
    let warmup = duration(&raw.warmup, "warmup", DEFAULT_WARMUP);
    let budget = duration(&raw.budget, "budget", DEFAULT_BUDGET);
    if let Some(v) = &raw.step {
        if step < MIN_STEP {
            d.error(
                v.span(),
                format!(
                    "step must be at least {} (a shorter window measures too few requests to judge a percentile)",
                    describe_duration(MIN_STEP)
                ),
            );
            *ok = false;
        }
    }
    (step, warmup, budget)
}

/// `max_steps`: 1 to [`MAX_STEPS`].
fn check_max_steps(d: &mut Diagnostics, raw: &RawCapacity, ok: &mut bool) -> u32 {
    let Some(v) = &raw.max_steps else {
        return DEFAULT_MAX_STEPS;
    };
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (1..=MAX_STEPS).contains(&n) => n,
        _ => {
            d.error(
                v.span(),
                format!(
                    "max_steps must be a whole number from 1 to {MAX_STEPS}, not {}",
                    v.get_ref()
                ),
            );
            *ok = false;
            DEFAULT_MAX_STEPS
        }
    }
}

/// `start`: a positive rate, if given.
fn check_start(d: &mut Diagnostics, raw: &RawCapacity, ok: &mut bool) -> Option<f64> {
    let v = raw.start.as_ref()?;
    let r = *v.get_ref();
    if r.is_finite() && r > 0.0 {
        return Some(r);
    }
    d.error(
        v.span(),
        format!("start must be a positive number of requests per second, not {r} (remove it to start from half the closed-loop requests/s)"),
    );
    *ok = false;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_in_the_command_lines_form() {
        let t = CapacityTarget::parse("p99=10ms").unwrap();
        assert_eq!(t.percentile, Percentile::P99);
        assert_eq!(t.latency, Duration::from_millis(10));
        assert_eq!(t.to_string(), "p99 <= 10ms");
        let t = CapacityTarget::parse(" P99.9 = 2.5ms ").unwrap();
        assert_eq!(t.percentile, Percentile::P999);
        assert_eq!(t.latency, Duration::from_micros(2500));
        assert_eq!(t.to_string(), "p99.9 <= 2.5ms");
        assert_eq!(
            CapacityTarget::parse("p50=1s").unwrap().to_string(),
            "p50 <= 1s"
        );
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        let e = |t: &str| CapacityTarget::parse(t).unwrap_err();
        assert_eq!(
            e("p99=abc"),
            "`abc` is not a latency (write it as 10ms, 500us or 1.5s)"
        );
        assert_eq!(
            e("p101=1ms"),
            "`p101` is not a percentile a capacity search can hold a server to (use p50, p90, p99 or p99.9)"
        );
        assert_eq!(
            e("p99"),
            "`p99` is not a latency target (write PERCENTILE=LATENCY, e.g. p99=10ms)"
        );
        assert!(e("p99=10").contains("has no unit"), "{}", e("p99=10"));
        assert!(e("p99=0ms").contains("cannot be met"), "{}", e("p99=0ms"));
    }

    #[test]
    fn durations_are_described_in_their_shortest_unit() {
        assert_eq!(describe_duration(Duration::from_micros(250)), "250us");
        assert_eq!(describe_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(describe_duration(Duration::from_micros(2500)), "2.5ms");
        assert_eq!(describe_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(describe_duration(Duration::from_secs(40)), "40s");
        assert_eq!(describe_duration(Duration::from_millis(1500)), "1.5s");
    }
}
