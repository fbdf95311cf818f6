//! Past the knee: the `[overload]` table of a scenario (and `benchctl run --overload`, which
//! asks for it with every setting at its default). After the capacity searches, each server
//! and document is held at an open-model staircase of rates, multiples of its capacity, then
//! at a lower rate for the recovery phase; the runner says what it did at each.

use crate::error::Diagnostics;
use crate::units::parse_duration;
use serde::Deserialize;
use serde_spanned::Spanned;
use std::time::Duration;

/// The staircase's rates as multiples of the capacity, when `multiples` is not given.
pub const DEFAULT_MULTIPLES: [f64; 5] = [0.5, 1.0, 1.5, 2.0, 3.0];
/// Each step's shortest measured length, when `step` is not given.
pub const DEFAULT_STEP: Duration = Duration::from_secs(3);
/// The longest a step is held while it has not settled, when `step_max` is not given (or
/// `step`, when that is longer).
pub const DEFAULT_STEP_MAX: Duration = Duration::from_secs(12);
/// The recovery phase's length and rate, when `recovery` and `recovery_rate` are not given.
pub const DEFAULT_RECOVERY: Duration = Duration::from_secs(10);
pub const DEFAULT_RECOVERY_MULTIPLE: f64 = 0.5;
/// The intervals each step is followed over, when `interval` is not given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);
/// What a good response is when neither `[capacity]` nor `--capacity` names a target: its
/// 99th percentile within 100 ms.
pub const DEFAULT_TARGET: crate::CapacityTarget = crate::CapacityTarget {
    percentile: crate::Percentile::P99,
    latency: Duration::from_millis(100),
};
/// The highest multiple a staircase may ask for.
pub const MAX_MULTIPLE: f64 = 20.0;
/// The most steps a staircase may have.
pub const MAX_STEPS: usize = 20;

/// What a staircase is asked, every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct OverloadSpec {
    /// In increasing order, each above 0.
    pub multiples: Vec<f64>,
    /// A step is held for `step`, then again for `step` while the load's steadiness check
    /// finds it still changing, up to `step_max` in all.
    pub step: Duration,
    pub step_max: Duration,
    pub recovery: Duration,
    pub recovery_multiple: f64,
    pub interval: Duration,
    /// The rate the multiples are of, requests/s; `None`: the capacity search finds it.
    pub capacity: Option<f64>,
}

impl Default for OverloadSpec {
    fn default() -> OverloadSpec {
        OverloadSpec {
            multiples: DEFAULT_MULTIPLES.to_vec(),
            step: DEFAULT_STEP,
            step_max: DEFAULT_STEP_MAX,
            recovery: DEFAULT_RECOVERY,
            recovery_multiple: DEFAULT_RECOVERY_MULTIPLE,
            interval: DEFAULT_INTERVAL,
            capacity: None,
        }
    }
}

/// `[overload]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOverload {
    /// The staircase's rates as multiples of the capacity (default [0.5, 1, 1.5, 2, 3]).
    pub multiples: Option<Spanned<Vec<Spanned<f64>>>>,
    /// Each step's shortest measured length (default `"3s"`), and the longest it is held while
    /// it has not settled (default `"12s"`, or `step` when that is longer).
    pub step: Option<Spanned<String>>,
    pub step_max: Option<Spanned<String>>,
    /// The recovery phase's length (default `"10s"`) and rate as a multiple of the capacity
    /// (default 0.5).
    pub recovery: Option<Spanned<String>>,
    pub recovery_rate: Option<Spanned<f64>>,
    /// The intervals each step is followed over (default `"250ms"`).
    pub interval: Option<Spanned<String>>,
    /// The capacity, requests/s (default: searched at the `[capacity]` target).
    pub capacity: Option<Spanned<f64>>,
}

/// Checks an `[overload]` table, reporting every mistake at its position; `None` when it has
/// any.
pub(crate) fn check(d: &mut Diagnostics, table: &Spanned<RawOverload>) -> Option<OverloadSpec> {
    let raw = table.get_ref();
    let mut ok = true;
    let mut spec = OverloadSpec::default();
    if let Some(list) = &raw.multiples {
        spec.multiples = list.get_ref().iter().map(|m| *m.get_ref()).collect();
        if spec.multiples.is_empty() || spec.multiples.len() > MAX_STEPS {
            d.error(
                list.span(),
                format!("multiples must list 1 to {MAX_STEPS} rates (e.g. [0.5, 1, 1.5, 2, 3])"),
            );
            ok = false;
        }
        for (i, m) in list.get_ref().iter().enumerate() {
            let v = *m.get_ref();
            if !(v > 0.0 && v <= MAX_MULTIPLE) {
                d.error(
                    m.span(),
                    format!("a multiple must be above 0 and at most {MAX_MULTIPLE}, got {v}"),
                );
                ok = false;
            } else if i > 0 && v <= *list.get_ref()[i - 1].get_ref() {
                d.error(
                    m.span(),
                    "multiples must increase: the staircase climbs one step after another",
                );
                ok = false;
            }
        }
    }
    let mut duration = |value: &Option<Spanned<String>>, key: &str, least: Duration| {
        let v = value.as_ref()?;
        match parse_duration(v.get_ref()) {
            Ok(t) if t >= least => Some(t),
            Ok(_) => {
                d.error(
                    v.span(),
                    format!("{key} must be at least {}ms", least.as_millis()),
                );
                ok = false;
                None
            }
            Err(msg) => {
                d.error(v.span(), format!("bad {key}: {msg}"));
                ok = false;
                None
            }
        }
    };
    if let Some(t) = duration(&raw.step, "step", Duration::from_millis(500)) {
        spec.step = t;
    }
    let step_max = duration(&raw.step_max, "step_max", Duration::from_millis(500));
    if let Some(t) = duration(&raw.recovery, "recovery", Duration::from_secs(1)) {
        spec.recovery = t;
    }
    if let Some(t) = duration(&raw.interval, "interval", Duration::from_millis(50)) {
        spec.interval = t;
    }
    spec.step_max = step_max.unwrap_or(spec.step_max.max(spec.step));
    if let (Some(v), Some(t)) = (&raw.step_max, step_max) {
        if t < spec.step {
            d.error(
                v.span(),
                format!(
                    "step_max must be at least step ({}ms): a step is held at least that long",
                    spec.step.as_millis()
                ),
            );
            ok = false;
        }
    }
    if let Some(v) = &raw.interval {
        if spec.interval * 2 > spec.step.min(spec.recovery) {
            d.error(
                v.span(),
                "interval must fit twice in a step and in the recovery phase",
            );
            ok = false;
        }
    }
    let mut positive = |value: &Option<Spanned<f64>>, key: &str, most: f64| {
        let v = value.as_ref()?;
        let x = *v.get_ref();
        if x > 0.0 && x <= most {
            Some(x)
        } else {
            d.error(
                v.span(),
                format!("{key} must be above 0 and at most {most}, got {x}"),
            );
            ok = false;
            None
        }
    };
    if let Some(m) = positive(&raw.recovery_rate, "recovery_rate", MAX_MULTIPLE) {
        spec.recovery_multiple = m;
    }
    spec.capacity = positive(&raw.capacity, "capacity", 1e9);
    ok.then_some(spec)
}
