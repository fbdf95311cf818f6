//! ab's other outputs, as ab.c's `output_results()` and `output_html_results()` write them:
//! the `-e` CSV of percentiles, the `-g` gnuplot table of every request, and the `-w` HTML
//! tables. Like [`crate::ab`], computed from a [`Measurement`] with ab's formulas; the caller
//! decides where the text goes.
//!
//! Deviations from ab, each deliberate:
//! - `-e`: ab picks the request at index `0.5 + n * i / 100`, which is one past the last for a
//!   few percentages of a short run (`n = 1`, `i >= 50`); the pick is kept within the requests.
//!   Without per-request samples (duration-bounded runs) the picks are read from the histogram
//!   (within 0.1%). With no timed request the file has its header line alone.
//! - `-w`: text from the server (its Server header) and the document path are HTML-escaped.

use super::ab::summary::{round_ms, AbOptions};
use model::stats::{nth_value, Measurement, Recorder, Sample};
use std::fmt::Write as _;

/// The `-e` file: `Percentage served,Time in ms`, then one line per percentage 0 to 100 with
/// the total time of the request ab picks for it, in milliseconds with three decimals.
pub fn percentiles_csv(m: &Measurement) -> String {
    let mut out = String::from("Percentage served,Time in ms\n");
    let total = &m.rec.moments.total;
    let n = total.count;
    if n == 0 {
        return out;
    }
    let sorted: Option<Vec<u32>> = m.rec.samples.as_ref().map(|s| {
        let mut v: Vec<u32> = s.iter().map(|s| s.total).collect();
        v.sort_unstable();
        v
    });
    let at = |i: u64| -> u64 {
        match &sorted {
            Some(v) => u64::from(v[i as usize]),
            None if i == 0 => total.min,
            None if i + 1 == n => total.max,
            None => nth_value(&m.rec.hist.total, total, i),
        }
    };
    for i in 0..=100u64 {
        let idx = match i {
            0 => 0,
            100 => n - 1,
            // ab: (unsigned long)(0.5 + (double)count * i / 100.0)
            _ => ((0.5 + n as f64 * i as f64 / 100.0) as u64).min(n - 1),
        };
        let _ = writeln!(out, "{i},{:.3}", at(idx) as f64 / 1000.0);
    }
    out
}

/// Why a `-g` table cannot be written from a measurement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the gnuplot table needs every request's timings and start time, which this run did not keep (a run bounded by a request count, asked for the table before it starts, keeps them)")]
pub struct NoStartTimes;

/// The `-g` file: a header, then one tab-separated line per timed request, sorted by total
/// time as ab leaves them: its start as `ctime` in local time, the start in Unix seconds, and
/// its connect, processing, total and waiting times in rounded milliseconds.
pub fn gnuplot_tsv(m: &Measurement) -> Result<String, NoStartTimes> {
    let (Some(samples), Some(starts)) = (&m.rec.samples, &m.rec.starts) else {
        return Err(NoStartTimes);
    };
    if samples.len() != starts.len() {
        return Err(NoStartTimes);
    }
    let mut rows: Vec<(&Sample, u64)> = samples.iter().zip(starts.iter().copied()).collect();
    rows.sort_by_key(|(s, _)| s.total);
    let mut out = String::from("starttime\tseconds\tctime\tdtime\tttime\twait\n");
    for (s, start_us) in rows {
        let secs = start_us / 1_000_000;
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}",
            apr_ctime(secs as i64),
            secs,
            round_ms(i64::from(s.connect)),
            round_ms(i64::from(s.total) - i64::from(s.connect)),
            round_ms(i64::from(s.total)),
            round_ms(i64::from(s.waiting)),
        );
    }
    Ok(out)
}

/// APR's `apr_ctime`: `Wed Jun 30 21:49:08 1993` in local time.
fn apr_ctime(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t: libc::time_t = secs as libc::time_t;
    // The local time zone is the C library's to know: rustix has no localtime_r.
    // SAFETY: an all-zero tm is valid; localtime_r fills it from `t`, and both pointers are to
    // locals that outlive the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        (!libc::localtime_r(&t, &mut tm).is_null()).then_some(tm)
    };
    let Some(tm) = tm else {
        return secs.to_string();
    };
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        i64::from(tm.tm_year) + 1900
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// ab's `-w` output: its results as one HTML table, with ab's default attributes (none on the
/// table and rows, `bgcolor=white` on the cells), computed as `output_html_results()` does
/// (its Connection Times have min, avg and max of Connect, Processing and Total only, and
/// its Processing row is Total's figure minus Connect's).
pub fn render_html(m: &Measurement, opts: &AbOptions) -> String {
    let timetaken = m.elapsed.as_micros() as f64 / 1_000_000.0;
    let mut o = String::new();
    let _ = write!(o, "\n\n<table {HTML_TABLE}>\n");
    html_server_rows(&mut o, m, opts);
    html_count_rows(&mut o, m, opts, timetaken);
    if timetaken != 0.0 {
        html_rate_rows(&mut o, &m.rec, opts, timetaken);
    }
    html_connection_times(&mut o, &m.rec);
    o.push_str("</table>\n");
    o
}

/// ab's default attributes of the `-w` table, its rows and its cells.
const HTML_TABLE: &str = "";
const HTML_TR: &str = "";
const HTML_TD: &str = "bgcolor=white";

/// One heading and value row of the `-w` table.
fn html_row(o: &mut String, th: &str, val: &str) {
    let (tr, td) = (HTML_TR, HTML_TD);
    let _ = writeln!(
        o,
        "<tr {tr}><th colspan=2 {td}>{th}</th><td colspan=2 {td}>{val}</td></tr>"
    );
}

/// What was asked of which server: software, host, port, path, length, concurrency.
fn html_server_rows(o: &mut String, m: &Measurement, opts: &AbOptions) {
    html_row(o, "Server Software:", &escape(&m.server.software));
    html_row(o, "Server Hostname:", &escape(&m.server.hostname));
    html_row(o, "Server Port:", &m.server.port.to_string());
    html_row(o, "Document Path:", &escape(&m.server.path));
    if opts.variable_length {
        html_row(o, "Document Length:", "Variable");
    } else {
        html_row(
            o,
            "Document Length:",
            &format!("{} bytes", m.server.document_length),
        );
    }
    html_row(o, "Concurrency Level:", &m.settings.concurrency.to_string());
}

/// The time taken and the counts of requests, failures and bytes.
fn html_count_rows(o: &mut String, m: &Measurement, opts: &AbOptions, timetaken: f64) {
    let (tr, td) = (HTML_TR, HTML_TD);
    let r = &m.rec;
    html_row(
        o,
        "Time taken for tests:",
        &format!("{timetaken:.3} seconds"),
    );
    html_row(o, "Complete requests:", &r.completed.to_string());
    let failed = r.failures.total();
    html_row(o, "Failed requests:", &failed.to_string());
    if failed > 0 {
        let _ = writeln!(
            o,
            "<tr {tr}><td colspan=4 {td} >   (Connect: {}, Length: {}, Exceptions: {})</td></tr>",
            r.failures.connect, r.failures.length, r.failures.exception
        );
    }
    if r.non_2xx > 0 {
        html_row(o, "Non-2xx responses:", &r.non_2xx.to_string());
    }
    if m.settings.keep_alive {
        html_row(
            o,
            "Keep-Alive requests:",
            &r.keep_alive_requests.to_string(),
        );
    }
    html_row(o, "Total transferred:", &format!("{} bytes", r.total_bytes));
    if opts.send_body {
        html_row(o, "Total body sent:", &r.sent_bytes.to_string());
    }
    html_row(o, "HTML transferred:", &format!("{} bytes", r.body_bytes));
}

/// Requests per second and transfer rates, for a run that took any time.
fn html_rate_rows(o: &mut String, r: &Recorder, opts: &AbOptions, timetaken: f64) {
    let (tr, td) = (HTML_TR, HTML_TD);
    html_row(
        o,
        "Requests per second:",
        &format!("{:.2}", r.completed as f64 / timetaken),
    );
    html_row(
        o,
        "Transfer rate:",
        &format!(
            "{:.2} kb/s received",
            r.total_bytes as f64 / 1024.0 / timetaken
        ),
    );
    if opts.send_body {
        for (v, what) in [
            (r.sent_bytes, "sent"),
            (r.total_bytes + r.sent_bytes, "total"),
        ] {
            let _ = writeln!(
                o,
                "<tr {tr}><td colspan=2 {td}>&nbsp;</td><td colspan=2 {td}>{:.2} kb/s {what}</td></tr>",
                v as f64 / 1024.0 / timetaken
            );
        }
    }
}

/// Connection Times: min, avg and max of Connect, Processing and Total, as ab computes them.
fn html_connection_times(o: &mut String, r: &Recorder) {
    let (tr, td) = (HTML_TR, HTML_TD);
    let (con, tot) = (&r.moments.connect, &r.moments.total);
    let count = tot.count as i64;
    if count > 0 {
        let mincon = round_ms(con.min as i64);
        let mintot = round_ms(tot.min as i64);
        let maxcon = round_ms(con.max as i64);
        let maxtot = round_ms(tot.max as i64);
        let totalcon = round_ms(con.sum as i64);
        let total = round_ms(tot.sum as i64);
        let _ = writeln!(
            o,
            "<tr {tr}><th {td} colspan=4>Connection Times (ms)</th></tr>"
        );
        let _ = writeln!(
            o,
            "<tr {tr}><th {td}>&nbsp;</th> <th {td}>min</th>   <th {td}>avg</th>   <th {td}>max</th></tr>"
        );
        for (name, min, avg, max) in [
            ("Connect:", mincon, totalcon / count, maxcon),
            (
                "Processing:",
                mintot - mincon,
                total / count - totalcon / count,
                maxtot - maxcon,
            ),
            ("Total:", mintot, total / count, maxtot),
        ] {
            let _ = writeln!(
                o,
                "<tr {tr}><th {td}>{name}</th><td {td}>{min:5}</td><td {td}>{avg:5}</td><td {td}>{max:5}</td></tr>"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::stats::{Recorder, RunSettings, ServerInfo};
    use std::time::Duration;

    /// Ten requests of 1..10 ms in all (connect 100 µs each), recorded in a shuffled order.
    fn ten(keep_samples: bool) -> Measurement {
        let mut rec = Recorder::new(keep_samples, false);
        rec.starts = keep_samples.then(Vec::new);
        for k in [3u32, 9, 1, 7, 5, 10, 2, 8, 4, 6] {
            rec.record(
                Sample {
                    connect: 100,
                    waiting: k * 1000 - 300,
                    total: k * 1000,
                },
                None,
            );
            rec.record_start(|| 1_700_000_000_000_000 + u64::from(k) * 1_000_000);
            rec.completed += 1;
        }
        Measurement {
            server: ServerInfo {
                software: "srv<1>".into(),
                hostname: "127.0.0.1".into(),
                port: 8080,
                path: "/".into(),
                document_length: 13,
                tls: None,
            },
            settings: RunSettings {
                concurrency: 2,
                keep_alive: false,
                rate: None,
                threads: 1,
                http11: false,
                streams: None,
                http3: false,
                zero_rtt: false,
                head: false,
                rx_stamps: true,
                coalesce: "off".into(),
                engine: "epoll".into(),
                repetitions: None,
            },
            elapsed: Duration::from_millis(500),
            rec,
            client_cpu: Duration::ZERO,
            stopped_early: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn csv_picks_the_requests_ab_picks() {
        let csv = percentiles_csv(&ten(true));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 102);
        assert_eq!(lines[0], "Percentage served,Time in ms");
        // 0: the fastest; 1: index (0.5 + 0.1) = 0; 50: index 5.5 -> 5, the sixth fastest;
        // 95: index 10 is past the end and is kept at the last; 100: the slowest.
        assert_eq!(lines[1], "0,1.000");
        assert_eq!(lines[2], "1,1.000");
        assert_eq!(lines[51], "50,6.000");
        assert_eq!(lines[96], "95,10.000");
        assert_eq!(lines[101], "100,10.000");
        // From the histograms, the same picks within their precision (0.1%); the slowest is
        // exact (the running maximum).
        let from_hist = percentiles_csv(&ten(false));
        let ms = |line: &str| -> f64 { line.split_once(',').unwrap().1.parse().unwrap() };
        let fifty = ms(from_hist.lines().nth(51).unwrap());
        assert!((fifty - 6.0).abs() <= 0.006, "{fifty}");
        assert_eq!(from_hist.lines().nth(101), Some("100,10.000"));
    }

    #[test]
    fn gnuplot_rows_are_sorted_by_total_with_their_own_start() {
        let tsv = gnuplot_tsv(&ten(true)).unwrap();
        let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(rows.len(), 11);
        for (i, r) in rows[1..].iter().enumerate() {
            let k = (i + 1).to_string();
            assert_eq!(r[1], (1_700_000_000 + i + 1).to_string(), "{r:?}");
            // Connect 100 µs rounds to 0; processing, total and waiting round to k ms.
            assert_eq!(r[2..], ["0", k.as_str(), k.as_str(), k.as_str()], "{r:?}");
            assert_eq!(r[0].len(), 24, "{r:?}");
        }
        assert_eq!(gnuplot_tsv(&ten(false)), Err(NoStartTimes));
    }

    #[test]
    fn html_is_abs_table_with_its_arithmetic() {
        let html = render_html(&ten(true), &AbOptions::default());
        assert!(html.starts_with("\n\n<table >\n"));
        assert!(html.contains(
            "<tr ><th colspan=2 bgcolor=white>Server Software:</th><td colspan=2 bgcolor=white>srv&lt;1&gt;</td></tr>\n"
        ));
        assert!(html.contains("<td colspan=2 bgcolor=white>20.00</td>"));
        // Connect: 0 ms each (100 µs rounds down; the sum, 1 ms, over 10 is 0).
        assert!(html.contains(
            "<tr ><th bgcolor=white>Connect:</th><td bgcolor=white>    0</td><td bgcolor=white>    0</td><td bgcolor=white>    0</td></tr>\n"
        ));
        // Total: 1, 55/10 = 5 and 10 ms.
        assert!(html.contains(
            "<tr ><th bgcolor=white>Total:</th><td bgcolor=white>    1</td><td bgcolor=white>    5</td><td bgcolor=white>   10</td></tr>\n"
        ));
        assert!(html.ends_with("</table>\n"));
    }
}
