//! ApacheBench's results text, reproduced byte for byte from a [`Measurement`].
//!
//! The tables benchctl re-runs come from `ab` (httpd 2.4's `support/ab.c`, `output_results()`),
//! so the same numbers must come out the same way: ab's integer-microsecond means, its sample
//! standard deviation about that integer mean, its rounding to milliseconds, its median rule
//! (which averages the two elements *above* the middle when the count is odd, a quirk kept on
//! purpose), its percentile index rule and its printf widths.
//!
//! The work is split in two so that other reports can reuse the numbers without the layout:
//! [`summarize`] computes an [`AbSummary`] holding exactly the values ab prints, already rounded
//! and formatted as ab would, and [`render_text`] lays it out through the tera template
//! `templates/ab.txt.tera` (overridable like every other template, see [`crate::Renderer`]).
//!
//! Deviations from ab, each deliberate:
//! - ab knows no timeouts; a non-zero timeout count is appended to the failure breakdown line as
//!   `, Timeout: N` before its closing parenthesis.
//! - The timing tables use the requests that have timings (those that got a whole response);
//!   ab also times requests that failed after connecting.
//! - When the run kept no per-request samples (duration-bounded runs), min, mean, sd and max are
//!   still exact (from running moments) but medians and percentiles are read from the
//!   HdrHistograms, and a note line at the end says so.

pub(crate) mod summary;

use model::stats::Measurement;
pub use summary::{
    ab_median, ab_percentile_index, round_ms, summarize, summarize_report, summarize_with,
    AbOptions, AbSummary, ConnectionTimes, FailureBreakdown, PercentileRow, Rates, Sanity,
    SanityLevel, TimerRow, AB_PERCENTILES,
};

/// Renders `s` as ab prints it, through the embedded template, from the line break ab prints
/// before "Server Software:" to the end of its output.
pub fn render_text(s: &AbSummary) -> String {
    // The embedded template is covered by the golden tests and a summary always serializes, so
    // a failure here is a bug in this crate, not a condition a caller could handle.
    crate::Renderer::embedded()
        .ab_text(s)
        .expect("the embedded ab template renders every AbSummary")
}

/// `render_text(&summarize(m))`.
pub fn render(m: &Measurement) -> String {
    render_text(&summarize(m))
}

#[cfg(test)]
mod tests {
    use super::summary::{header, HeaderInput};
    use super::*;
    use model::stats::{Failures, ServerInfo};

    #[test]
    fn templates_can_be_overridden() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ab.txt.tera"),
            "{{ complete | lpad(width=6) }}|{{ server_port }}",
        )
        .unwrap();
        let mut s = empty_summary();
        s.complete = 1234;
        let r = crate::Renderer::new(Some(dir.path())).unwrap();
        assert_eq!(r.ab_text(&s).unwrap(), "  1234|8080");
        std::fs::write(dir.path().join("ab.txt.tera"), "{{ complete | lpad }}").unwrap();
        let r = crate::Renderer::new(Some(dir.path())).unwrap();
        assert!(r.ab_text(&s).is_err());
        std::fs::write(dir.path().join("ab.txt.tera"), "{% if %}").unwrap();
        assert!(crate::Renderer::new(Some(dir.path())).is_err());
    }

    fn empty_summary() -> AbSummary {
        let h = HeaderInput {
            server: &ServerInfo {
                port: 8080,
                ..ServerInfo::default()
            },
            concurrency: 1,
            keep_alive: false,
            elapsed_us: 0,
            complete: 0,
            failures: &Failures::default(),
            non_2xx: 0,
            keep_alive_requests: 0,
            total_bytes: 0,
            body_bytes: 0,
            sent_bytes: 0,
        };
        let s = header(&h, &AbOptions::default());
        // ab prints no rates when no time passed, rather than dividing by zero.
        assert!(s.rates.is_none());
        s
    }
}
