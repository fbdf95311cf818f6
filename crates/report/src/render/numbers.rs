//! Number formatting: fixed decimals, so output never depends on float printing subtleties.

use crate::stats::Summary;

pub(crate) fn f(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".to_string()
    }
}

pub(super) fn median_or_dash(s: Option<&Summary>, decimals: usize) -> String {
    s.map_or_else(|| "-".to_string(), |s| f(s.median, decimals))
}

/// The posts' "1.66x".
pub(super) fn ratio(v: f64, reference: Option<f64>) -> String {
    match reference {
        Some(r) if r > 0.0 => format!("{:.2}x", v / r),
        _ => "-".to_string(),
    }
}
