//! The numbers ab prints, computed from a measurement with ab's own formulas and already
//! formatted as it formats them.

use hdrhistogram::Histogram;
use model::json::{HistogramDecodeError, LoadReport};
use model::stats::{nth_value, Failures, Measurement, Moments, Sample, ServerInfo, Timers};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The percentiles ab prints, in its order (`percs[]` in ab.c).
pub const AB_PERCENTILES: [u32; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// Options of ab's that change its output but that a [`Measurement`] does not record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbOptions {
    /// ab's `-l`: response lengths were allowed to vary, so "Document Length" reads "Variable".
    pub variable_length: bool,
    /// ab's `-d`: no "Percentage of the requests served" table.
    #[serde(default)]
    pub no_percentiles: bool,
    /// ab's `-S`: min, avg and max only, without the median, the deviation and the verdicts.
    #[serde(default)]
    pub no_confidence: bool,
    /// ab's `-p`/`-u`: every request carried a body, so ab adds what it sent.
    #[serde(default)]
    pub send_body: bool,
}

/// ab's failure breakdown line, `   (Connect: .., Receive: .., Length: .., Exceptions: ..)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBreakdown {
    pub connect: u64,
    pub receive: u64,
    pub length: u64,
    pub exceptions: u64,
    /// Not an ab kind: printed as `, Timeout: N` only when non-zero.
    pub timeout: u64,
    /// HTTP/2 only, not ab kinds: streams the server reset, and streams a GOAWAY refused;
    /// printed as `, Reset: N` and `, GOAWAY: N` only when non-zero.
    #[serde(default)]
    pub reset: u64,
    #[serde(default)]
    pub goaway: u64,
}

/// The four rate lines, printed by ab only when both the time taken and the request count are
/// non-zero. Each is the text ab prints for the number, with ab's precision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rates {
    /// `done / timetaken`, `%.2f`.
    pub requests_per_second: String,
    /// `concurrency * timetaken * 1000 / done`, `%.3f` ms.
    pub time_per_request: String,
    /// `timetaken * 1000 / done`, `%.3f` ms.
    pub time_per_request_all: String,
    /// `totalread / 1024 / timetaken`, `%.2f` Kbytes/s.
    pub transfer_rate: String,
    /// With a body (`-p`/`-u`): `totalposted / 1024 / timetaken`, `%.2f` kb/s sent.
    #[serde(default)]
    pub sent_rate: Option<String>,
    /// With a body: `(totalread + totalposted) / 1024 / timetaken`, `%.2f` kb/s in all.
    #[serde(default)]
    pub total_rate: Option<String>,
}

/// One row of the Connection Times table, in whole milliseconds as ab rounds them
/// (`(µs + 500) / 1000`), except `sd`, which is ab's `%.1f` of the deviation in ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerRow {
    pub min: i64,
    pub mean: i64,
    pub sd: String,
    pub median: i64,
    pub max: i64,
}

/// How far apart ab found a row's mean and median.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SanityLevel {
    /// More than one standard deviation apart.
    Warning,
    /// More than two standard deviations apart.
    Error,
}

/// One of ab's `SANE()` verdicts, printed below the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sanity {
    pub level: SanityLevel,
    /// ab's name for the row: "the initial connection time", "the processing time", ...
    pub what: String,
}

/// ab's "Connection Times (ms)" table and its verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionTimes {
    pub connect: TimerRow,
    pub processing: TimerRow,
    pub waiting: TimerRow,
    pub total: TimerRow,
    /// In ab's order: connect, processing, waiting, total; only rows that failed the check.
    pub sanity: Vec<Sanity>,
}

/// One line of the percentage table: `percent`% of requests took at most `ms` (rounded as ab).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PercentileRow {
    pub percent: u32,
    pub ms: i64,
}

/// Exactly what ab's `output_results()` prints, value by value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbSummary {
    pub server_software: String,
    pub server_hostname: String,
    pub server_port: u16,
    /// Over TLS, ab's "SSL/TLS Protocol" line: version, cipher suite (OpenSSL's name), and its
    /// key length twice ("TLSv1.3,TLS_AES_256_GCM_SHA384,256,256").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_protocol: Option<String>,
    /// Over TLS, ab's "Server Temp Key" line ("X25519 253 bits").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_temp_key: Option<String>,
    /// Over TLS, ab's "TLS Server Name" line: the name sent by SNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// Not an ab line: how the load reached the server when not in plain HTTP/1.x ("HTTP/2 by
    /// ALPN (h2), 8 streams per connection"), printed after the port; absent for HTTP/1.x in
    /// cleartext, so that ab's own output is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    pub document_path: String,
    /// Body length of the first good response, bytes.
    pub document_length: u64,
    /// ab's `-l`: prints "Variable" instead of the length.
    pub variable_length: bool,
    pub concurrency: u32,
    /// Time taken for tests, `%.3f` seconds.
    pub time_taken: String,
    pub complete: u64,
    pub failed: u64,
    /// The breakdown ab prints when `failed > 0`.
    pub failures: FailureBreakdown,
    /// Printed only when non-zero.
    pub write_errors: u64,
    /// Not an ab line: requests the generator could not send for want of its own file
    /// descriptors or local ports; printed only when non-zero, never among the failures.
    pub generator_errors: u64,
    /// Printed only when non-zero.
    pub non_2xx: u64,
    /// ab's `-k`: the Keep-Alive line is printed only then.
    pub keep_alive: bool,
    pub keep_alive_requests: u64,
    /// Bytes read, headers included.
    pub total_transferred: u64,
    /// Body bytes read.
    pub html_transferred: u64,
    /// With a body (`-p`/`-u`): request bytes written, heads and bodies (ab's "Total body
    /// sent", its `totalposted`).
    #[serde(default)]
    pub body_sent: Option<u64>,
    /// ab's default; `-S` turns it off: the table then has min, avg and max only.
    #[serde(default = "yes")]
    pub confidence: bool,
    /// None when the time taken or the request count is zero (ab prints no rates then).
    pub rates: Option<Rates>,
    /// None when no request was timed.
    pub times: Option<ConnectionTimes>,
    /// Empty unless more than one request was timed.
    pub percentiles: Vec<PercentileRow>,
    /// Medians and percentiles were read from histograms rather than exact samples.
    pub from_histograms: bool,
}

fn yes() -> bool {
    true
}

/// ab's `ap_round_ms`: microseconds to milliseconds, rounding halves up, truncating in integers.
pub fn round_ms(us: i64) -> i64 {
    (us + 500) / 1000
}

/// ab's `ap_double_ms`.
fn double_ms(us: f64) -> f64 {
    us / 1000.0
}

/// ab's median rule, as ab.c writes it: with an odd count above one it averages the elements at
/// `n/2` and `n/2 + 1` (0-based, so the middle one and the one above it), otherwise it takes
/// `n/2`. `at(i)` is the i-th smallest value. Integer division, as ab's `apr_time_t` arithmetic.
pub fn ab_median(n: u64, at: impl Fn(u64) -> i64) -> i64 {
    if n > 1 && n % 2 == 1 {
        (at(n / 2) + at(n / 2 + 1)) / 2
    } else {
        at(n / 2)
    }
}

/// ab's percentile pick: the 0-based index `n * perc / 100` of the sorted totals, except 100%,
/// which is the last one.
pub fn ab_percentile_index(n: u64, perc: u32) -> u64 {
    if perc >= 100 {
        n - 1
    } else {
        n * u64::from(perc) / 100
    }
}

/// Computes what ab would print for `m`, as ab without `-l`.
pub fn summarize(m: &Measurement) -> AbSummary {
    summarize_with(m, &AbOptions::default())
}

/// Computes what ab would print for `m` with the given options.
pub fn summarize_with(m: &Measurement, opts: &AbOptions) -> AbSummary {
    let mut s = header(
        &HeaderInput {
            server: &m.server,
            concurrency: m.settings.concurrency,
            keep_alive: m.settings.keep_alive,
            elapsed_us: elapsed_us(m.elapsed),
            complete: m.rec.completed,
            failures: &m.rec.failures,
            non_2xx: m.rec.non_2xx,
            keep_alive_requests: m.rec.keep_alive_requests,
            total_bytes: m.rec.total_bytes,
            body_bytes: m.rec.body_bytes,
            sent_bytes: m.rec.sent_bytes,
        },
        opts,
    );
    s.protocol = m.settings.protocol_line();
    match &m.rec.samples {
        Some(samples) => {
            let (times, percentiles) = from_samples(samples);
            s.times = times;
            s.percentiles = percentiles;
        }
        None => {
            let hists = m.rec.hist.map(|_, h| h);
            let (times, percentiles) = from_histograms(&m.rec.moments, &hists);
            s.times = times;
            s.percentiles = percentiles;
            s.from_histograms = true;
        }
    }
    if opts.no_percentiles {
        s.percentiles.clear();
    }
    s
}

/// Computes ab's text from a stored [`LoadReport`] (a results file), which keeps exact moments
/// and the histograms but no samples: medians and percentiles come from the histograms.
pub fn summarize_report(
    r: &LoadReport,
    opts: &AbOptions,
) -> Result<AbSummary, HistogramDecodeError> {
    let mut s = header(
        &HeaderInput {
            server: &r.server,
            concurrency: r.settings.concurrency,
            keep_alive: r.settings.keep_alive,
            elapsed_us: (r.elapsed_s * 1e6).round() as i64,
            complete: r.complete,
            failures: &r.failures,
            non_2xx: r.non_2xx,
            keep_alive_requests: r.keep_alive_requests,
            total_bytes: r.total_bytes,
            body_bytes: r.body_bytes,
            sent_bytes: r.sent_bytes,
        },
        opts,
    );
    s.protocol = r.settings.protocol_line();
    let hists = r.timers.try_map(|_, t| t.decode_histogram())?;
    let moments = r.timers.map(|_, t| t.moments);
    let (times, percentiles) = from_histograms(&moments, &hists.map(|_, h| h));
    s.times = times;
    s.percentiles = percentiles;
    s.from_histograms = true;
    if opts.no_percentiles {
        s.percentiles.clear();
    }
    Ok(s)
}

/// ab measures time in whole microseconds (`apr_time_t`).
fn elapsed_us(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

pub(crate) struct HeaderInput<'a> {
    pub(crate) server: &'a ServerInfo,
    pub(crate) concurrency: u32,
    pub(crate) keep_alive: bool,
    pub(crate) elapsed_us: i64,
    pub(crate) complete: u64,
    pub(crate) failures: &'a Failures,
    pub(crate) non_2xx: u64,
    pub(crate) keep_alive_requests: u64,
    pub(crate) total_bytes: u64,
    pub(crate) body_bytes: u64,
    pub(crate) sent_bytes: u64,
}

pub(crate) fn header(h: &HeaderInput<'_>, opts: &AbOptions) -> AbSummary {
    // ab: timetaken = (double)(lasttime - start) / APR_USEC_PER_SEC
    let timetaken = h.elapsed_us as f64 / 1_000_000.0;
    let done = h.complete;
    let rates = (timetaken != 0.0 && done != 0).then(|| {
        let d = done as f64;
        // Each expression keeps ab's order of operations so the doubles round identically.
        Rates {
            requests_per_second: format!("{:.2}", d / timetaken),
            time_per_request: format!("{:.3}", f64::from(h.concurrency) * timetaken * 1000.0 / d),
            time_per_request_all: format!("{:.3}", timetaken * 1000.0 / d),
            transfer_rate: format!("{:.2}", h.total_bytes as f64 / 1024.0 / timetaken),
            sent_rate: opts
                .send_body
                .then(|| format!("{:.2}", h.sent_bytes as f64 / 1024.0 / timetaken)),
            total_rate: opts.send_body.then(|| {
                format!(
                    "{:.2}",
                    (h.total_bytes + h.sent_bytes) as f64 / 1024.0 / timetaken
                )
            }),
        }
    });
    AbSummary {
        server_software: h.server.software.clone(),
        server_hostname: h.server.hostname.clone(),
        server_port: h.server.port,
        ssl_protocol: h.server.tls.as_ref().map(|t| {
            format!(
                "{},{},{},{}",
                t.protocol, t.cipher, t.cipher_bits, t.cipher_bits
            )
        }),
        server_temp_key: h
            .server
            .tls
            .as_ref()
            .and_then(|t| t.key_exchange.as_ref())
            .map(|(group, bits)| format!("{group} {bits} bits")),
        tls_server_name: h.server.tls.as_ref().and_then(|t| t.server_name.clone()),
        protocol: None,
        document_path: h.server.path.clone(),
        document_length: h.server.document_length,
        variable_length: opts.variable_length,
        concurrency: h.concurrency,
        time_taken: format!("{timetaken:.3}"),
        complete: done,
        failed: h.failures.total(),
        failures: FailureBreakdown {
            connect: h.failures.connect,
            receive: h.failures.receive,
            length: h.failures.length,
            exceptions: h.failures.exception,
            timeout: h.failures.timeout,
            reset: h.failures.reset,
            goaway: h.failures.goaway,
        },
        write_errors: h.failures.write,
        generator_errors: h.failures.generator,
        non_2xx: h.non_2xx,
        keep_alive: h.keep_alive,
        keep_alive_requests: h.keep_alive_requests,
        total_transferred: h.total_bytes,
        html_transferred: h.body_bytes,
        body_sent: opts.send_body.then_some(h.sent_bytes),
        confidence: !opts.no_confidence,
        rates,
        times: None,
        percentiles: Vec::new(),
        from_histograms: false,
    }
}

/// One timer's statistics in microseconds, before ab rounds them to milliseconds.
struct RawRow {
    min: i64,
    mean: i64,
    sd_us: f64,
    median: i64,
    max: i64,
}

impl RawRow {
    fn rounded(&self) -> (TimerRow, f64) {
        let sd_ms = double_ms(self.sd_us);
        let row = TimerRow {
            min: round_ms(self.min),
            mean: round_ms(self.mean),
            sd: format!("{sd_ms:.1}"),
            median: round_ms(self.median),
            max: round_ms(self.max),
        };
        (row, sd_ms)
    }
}

/// ab's name for each timer in its sanity verdicts.
const SANITY_NAMES: Timers<&str> = Timers {
    connect: "the initial connection time",
    processing: "the processing time",
    waiting: "the waiting time",
    total: "the total time",
};

fn table(raw: Timers<RawRow>) -> ConnectionTimes {
    let mut sanity = Vec::new();
    let rows = raw.map(|t, r| {
        let what = *SANITY_NAMES.get(t);
        let (row, sd) = r.rounded();
        // ab's SANE(): compares the rounded millisecond mean and median against the sd in ms.
        let d = (row.mean as f64 - row.median as f64).abs();
        let level = if d > 2.0 * sd {
            Some(SanityLevel::Error)
        } else if d > sd {
            Some(SanityLevel::Warning)
        } else {
            None
        };
        if let Some(level) = level {
            sanity.push(Sanity {
                level,
                what: what.to_string(),
            });
        }
        row
    });
    ConnectionTimes {
        connect: rows.connect,
        processing: rows.processing,
        waiting: rows.waiting,
        total: rows.total,
        sanity,
    }
}

fn from_samples(samples: &[Sample]) -> (Option<ConnectionTimes>, Vec<PercentileRow>) {
    let n = samples.len() as u64;
    if n == 0 {
        return (None, Vec::new());
    }
    let raw = Timers::from_fn(|t| {
        let f = |s: &Sample| *s.timers().get(t) as i64;
        let (mut min, mut max, mut sum) = (i64::MAX, 0i64, 0i64);
        for s in samples {
            let v = f(s);
            min = min.min(v);
            max = max.max(v);
            sum += v;
        }
        let mean = sum / n as i64;
        // ab sums squared deviations from the integer mean in doubles, then divides by n - 1.
        let sd_us = if n > 1 {
            let ss: f64 = samples
                .iter()
                .map(|s| {
                    let a = f(s) as f64 - mean as f64;
                    a * a
                })
                .sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mut sorted: Vec<i64> = samples.iter().map(f).collect();
        sorted.sort_unstable();
        let median = ab_median(n, |i| sorted[i as usize]);
        RawRow {
            min,
            mean,
            sd_us,
            median,
            max,
        }
    });
    let mut totals: Vec<i64> = samples.iter().map(|s| i64::from(s.total)).collect();
    totals.sort_unstable();
    let percentiles = if n > 1 {
        AB_PERCENTILES
            .iter()
            .map(|&p| PercentileRow {
                percent: p,
                ms: round_ms(totals[ab_percentile_index(n, p) as usize]),
            })
            .collect()
    } else {
        Vec::new()
    };
    (Some(table(raw)), percentiles)
}

fn from_histograms(
    moments: &Timers<Moments>,
    hists: &Timers<&Histogram<u64>>,
) -> (Option<ConnectionTimes>, Vec<PercentileRow>) {
    let n = moments.total.count;
    if n == 0 {
        return (None, Vec::new());
    }
    let raw = moments.map(|t, m| {
        let h = *hists.get(t);
        RawRow {
            min: m.min as i64,
            mean: m.mean_int() as i64,
            sd_us: m.sd_about_int_mean(),
            median: ab_median(m.count, |i| nth_value(h, m, i) as i64),
            max: m.max as i64,
        }
    });
    let percentiles = if n > 1 {
        AB_PERCENTILES
            .iter()
            .map(|&p| {
                let us = if p >= 100 {
                    moments.total.max
                } else {
                    nth_value(hists.total, &moments.total, ab_percentile_index(n, p))
                };
                PercentileRow {
                    percent: p,
                    ms: round_ms(us as i64),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    (Some(table(raw)), percentiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_ms_rounds_halves_up() {
        assert_eq!(round_ms(0), 0);
        assert_eq!(round_ms(499), 0);
        assert_eq!(round_ms(500), 1);
        assert_eq!(round_ms(1499), 1);
        assert_eq!(round_ms(1500), 2);
    }

    #[test]
    fn median_rule_keeps_abs_quirk() {
        let v = [10i64, 20, 30, 40, 50];
        // Odd: ab averages v[2] and v[3], not the middle element alone.
        assert_eq!(ab_median(5, |i| v[i as usize]), 35);
        // Even: ab takes v[n/2], the upper of the two middle elements.
        assert_eq!(ab_median(4, |i| v[i as usize]), 30);
        assert_eq!(ab_median(1, |i| v[i as usize]), 10);
        // Integer division of the sum.
        let w = [1i64, 2, 3];
        assert_eq!(ab_median(3, |i| w[i as usize]), 2);
    }

    #[test]
    fn percentile_index_matches_ab() {
        assert_eq!(ab_percentile_index(10, 50), 5);
        assert_eq!(ab_percentile_index(10, 66), 6);
        assert_eq!(ab_percentile_index(10, 99), 9);
        assert_eq!(ab_percentile_index(10, 100), 9);
        assert_eq!(ab_percentile_index(2, 50), 1);
        assert_eq!(ab_percentile_index(2, 49), 0);
    }
}
