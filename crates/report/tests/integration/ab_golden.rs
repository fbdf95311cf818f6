//! Golden tests of ab's text: fixed per-request timings in, the exact text ab 2.4 would print
//! for them out. Every expected number was worked out by hand from ab.c's `output_results()`
//! (the arithmetic is in the comments), so a change in any rule shows up as a diff here.
//!
//! Reminders of ab's rules used below: means are `sum / n` in integer µs; sd is
//! `sqrt(Σ(x - mean)² / (n - 1))` about that integer mean, printed as `%5.1f` of µs/1000;
//! every other cell is `(µs + 500) / 1000` in integers; the median is the mean of elements
//! `n/2` and `n/2+1` (0-based, sorted) when n is odd and above one, else element `n/2`; the
//! percentage table takes element `n * p / 100` of the totals sorted, and the last one for 100%.

use loadgen::stats::{Failures, Measurement, Recorder, RunSettings, Sample, ServerInfo};
use report::ab::{render, render_text, summarize, summarize_with, AbOptions, AbSummary};
use std::time::Duration;

/// (connect, waiting, total) in µs.
type Timing = (u32, u32, u32);

struct Setup {
    timings: &'static [Timing],
    keep_samples: bool,
    concurrency: u32,
    keep_alive: bool,
    elapsed_us: u64,
    completed: u64,
    total_bytes: u64,
    body_bytes: u64,
    document_length: u64,
    failures: Failures,
    non_2xx: u64,
    keep_alive_requests: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            timings: &[],
            keep_samples: true,
            concurrency: 1,
            keep_alive: false,
            elapsed_us: 1_000_000,
            completed: 0,
            total_bytes: 0,
            body_bytes: 0,
            document_length: 13,
            failures: Failures::default(),
            non_2xx: 0,
            keep_alive_requests: 0,
        }
    }
}

fn measurement(s: Setup) -> Measurement {
    let mut rec = Recorder::new(s.keep_samples, false);
    for &(connect, waiting, total) in s.timings {
        rec.record(
            Sample {
                connect,
                waiting,
                total,
            },
            None,
        );
    }
    rec.completed = s.completed;
    rec.total_bytes = s.total_bytes;
    rec.body_bytes = s.body_bytes;
    rec.failures = s.failures;
    rec.non_2xx = s.non_2xx;
    rec.keep_alive_requests = s.keep_alive_requests;
    Measurement {
        server: ServerInfo {
            software: "nginx/1.22.1".into(),
            hostname: "127.0.0.1".into(),
            port: 8080,
            path: "/".into(),
            document_length: s.document_length,
            tls: None,
        },
        settings: RunSettings {
            concurrency: s.concurrency,
            keep_alive: s.keep_alive,
            rate: None,
            threads: 1,
            http11: false,
            streams: None,
            http3: false,
            zero_rtt: false,
            head: false,
            rx_stamps: false,
            coalesce: "off".into(),
            engine: "epoll".into(),
            repetitions: None,
        },
        elapsed: Duration::from_micros(s.elapsed_us),
        rec,
        client_cpu: Duration::ZERO,
        stopped_early: None,
        notes: Vec::new(),
    }
}

/// Line-by-line comparison first, so a failure names the line that differs.
fn assert_text(got: &str, want: &str) {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} differs\n--- got ---\n{got}", i + 1);
    }
    assert_eq!(got, want, "\n--- got ---\n{got}\n--- want ---\n{want}");
}

/// Five requests, recorded out of order.
const FIVE: &[Timing] = &[
    (300, 1400, 2000),
    (100, 900, 1200),
    (400, 7000, 9000),
    (200, 2100, 2600),
    (500, 2600, 3400),
];

fn five(keep_samples: bool) -> Measurement {
    measurement(Setup {
        timings: FIVE,
        keep_samples,
        concurrency: 2,
        elapsed_us: 10_000,
        completed: 5,
        total_bytes: 5 * 238,
        body_bytes: 5 * 13,
        ..Setup::default()
    })
}

// Odd count (n = 5), so ab's median averages sorted[2] and sorted[3].
//
// Header: timetaken = 10000 / 1e6 = 0.010 s
//   requests/s   = 5 / 0.01                = 500.00
//   time/request = 2 * 0.01 * 1000 / 5     = 4.000
//   across all   = 0.01 * 1000 / 5         = 2.000
//   transfer     = 1190 / 1024 / 0.01      = 116.2109375 -> 116.21
//
// Connect  100 300 200 500 400: sum 1500, mean 300; dev² 40000+0+10000+40000+10000 = 100000,
//   /4 = 25000, sd 158.1 µs -> 0.2; sorted 100 200 300 400 500, median (300+400)/2 = 350
//   -> min 0 (600/1000), mean 0 (800/1000), median 0 (850/1000), max 1 (1000/1000).
// Processing (total - connect) 1100 1700 2400 2900 8600: sum 16700, mean 3340;
//   dev -2240 -1640 -940 -440 5260 -> 5017600+2689600+883600+193600+27667600 = 36452000,
//   /4 = 9113000, sd 3018.8 -> 3.0; median (2400+2900)/2 = 2650
//   -> min 1 (1600/1000), mean 3 (3840/1000), median 3 (3150/1000), max 9 (9100/1000).
// Waiting 900 1400 2100 2600 7000: sum 14000, mean 2800; dev² 3610000+1960000+490000+40000
//   +17640000 = 23740000, /4 = 5935000, sd 2436.2 -> 2.4; median (2100+2600)/2 = 2350
//   -> min 1, mean 3 (3300/1000), median 2 (2850/1000), max 7 (7500/1000).
//   SANE: |3 - 2| = 1, not above 2.4: silent.
// Total 1200 2000 2600 3400 9000: sum 18200, mean 3640; dev² 5953600+2689600+1081600+57600
//   +28729600 = 38512000, /4 = 9628000, sd 3102.9 -> 3.1; median (2600+3400)/2 = 3000
//   -> min 1 (1700/1000), mean 4 (4140/1000), median 3 (3500/1000), max 9 (9500/1000).
// Percentages on sorted totals, index 5*p/100: 50->2 (2600 -> 3), 66->3 (3400 -> 3),
//   75->3, 80->4 (9000 -> 9), 90->4, 95->4, 98->4, 99->4 (495/100), 100 -> last (9).
const FIVE_TEXT: &str = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        13 bytes

Concurrency Level:      2
Time taken for tests:   0.010 seconds
Complete requests:      5
Failed requests:        0
Total transferred:      1190 bytes
HTML transferred:       65 bytes
Requests per second:    500.00 [#/sec] (mean)
Time per request:       4.000 [ms] (mean)
Time per request:       2.000 [ms] (mean, across all concurrent requests)
Transfer rate:          116.21 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.2      0       1
Processing:     1    3   3.0      3       9
Waiting:        1    3   2.4      2       7
Total:          1    4   3.1      3       9

Percentage of the requests served within a certain time (ms)
  50%      3
  66%      3
  75%      3
  80%      9
  90%      9
  95%      9
  98%      9
  99%      9
 100%      9 (longest request)
";

#[test]
fn odd_count_uses_abs_median_of_the_two_upper_middle_elements() {
    assert_text(&render(&five(true)), FIVE_TEXT);
}

#[test]
fn histogram_only_path_matches_exact_path_and_says_so() {
    // Without samples: min, mean, sd and max come from the exact moments, the medians and
    // percentiles from the histograms, which here land on the same milliseconds. Histogram
    // buckets are 2 µs wide from 2048 µs and 8 µs wide from 8192 µs, so e.g. the total median
    // reads (2601 + 3401) / 2 = 3001 µs -> 3 ms, and the 80% pick reads 9007 µs, kept within
    // the exact max 9000 -> 9 ms.
    let m = five(false);
    assert!(m.rec.samples.is_none());
    let s = summarize(&m);
    assert!(s.from_histograms);
    let exact = summarize(&five(true));
    assert_eq!(s.times, exact.times);
    assert_eq!(s.percentiles, exact.percentiles);
    let want = format!(
        "{FIVE_TEXT}\nNote: medians and percentiles are read from HdrHistograms (accurate to \
         0.1%); min, mean, sd and max are exact.\n"
    );
    assert_text(&render_text(&s), &want);
}

// Even count (n = 4), keep-alive on, one non-2xx answer; made so that ab's SANE() fires an
// ERROR for connect and total and a WARNING for waiting, in ab's order.
//
// Header: timetaken = 0.025 s; 4 / 0.025 = 160.00; 4 * 0.025 * 1000 / 4 = 25.000;
//   0.025 * 1000 / 4 = 6.250; 1000 / 1024 / 0.025 = 39.0625 -> 39.06.
// Connect 1503 1499 1499 1499: sum 6000, mean 1500; dev 3 -1 -1 -1 -> 12, /3 = 4, sd 2 µs
//   -> 0.0; sorted 1499 1499 1499 1503, even: median sorted[2] = 1499
//   -> min 1 (1999/1000), mean 2 (2000/1000), median 1, max 2 (2003/1000).
//   SANE: |2 - 1| = 1 > 2 * 0.002: ERROR.
// Processing 10000 each: 10 10 0.0 10 10, silent.
// Waiting 2600 1400 1400 1400: sum 6800, mean 1700; dev 900 -300 -300 -300 -> 810000 +
//   3 * 90000 = 1080000, /3 = 360000, sd 600 µs -> 0.6; median sorted[2] = 1400
//   -> min 1 (1900/1000), mean 2 (2200/1000), median 1, max 3 (3100/1000).
//   SANE: d = 1, not above 1.2 but above 0.6: WARNING.
// Total 11503 11499 11499 11499: mean 11500, sd 2 µs -> 0.0; median 11499
//   -> min 11 (11999/1000), mean 12 (12000/1000), median 11, max 12 (12003/1000): ERROR.
// Percentages, index 4*p/100: 50->2, 66->2 (11499 -> 11); 75->3, 80..99->3 (11503 -> 12);
//   100 -> last (12).
const FOUR: &[Timing] = &[
    (1503, 2600, 11503),
    (1499, 1400, 11499),
    (1499, 1400, 11499),
    (1499, 1400, 11499),
];

const FOUR_TEXT: &str = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        13 bytes

Concurrency Level:      4
Time taken for tests:   0.025 seconds
Complete requests:      4
Failed requests:        0
Non-2xx responses:      1
Keep-Alive requests:    3
Total transferred:      1000 bytes
HTML transferred:       52 bytes
Requests per second:    160.00 [#/sec] (mean)
Time per request:       25.000 [ms] (mean)
Time per request:       6.250 [ms] (mean, across all concurrent requests)
Transfer rate:          39.06 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        1    2   0.0      1       2
Processing:    10   10   0.0     10      10
Waiting:        1    2   0.6      1       3
Total:         11   12   0.0     11      12
ERROR: The median and mean for the initial connection time are more than twice the standard
       deviation apart. These results are NOT reliable.
WARNING: The median and mean for the waiting time are not within a normal deviation
        These results are probably not that reliable.
ERROR: The median and mean for the total time are more than twice the standard
       deviation apart. These results are NOT reliable.

Percentage of the requests served within a certain time (ms)
  50%     11
  66%     11
  75%     12
  80%     12
  90%     12
  95%     12
  98%     12
  99%     12
 100%     12 (longest request)
";

#[test]
fn even_count_keep_alive_non_2xx_warning_and_error() {
    let m = measurement(Setup {
        timings: FOUR,
        concurrency: 4,
        keep_alive: true,
        elapsed_us: 25_000,
        completed: 4,
        total_bytes: 1000,
        body_bytes: 52,
        non_2xx: 1,
        keep_alive_requests: 3,
        ..Setup::default()
    });
    assert_text(&render(&m), FOUR_TEXT);
}

// One request, ab's -l, a failed connect and two write errors.
//
// Header: timetaken = 0.0018 s -> 0.002; 1 / 0.0018 = 555.555.. -> 555.56;
//   1 * 0.0018 * 1000 / 1 = 1.800 (twice); 238 / 1024 / 0.0018 = 129.1232.. -> 129.12.
//   Failed = connect 1 (write errors are not failures in ab); Write errors printed as non-zero.
// Table, n = 1: every sd is 0 (ab divides by n - 1 only when n > 1) and the median is
//   sorted[0]; connect 250 -> 0 (750/1000), processing 1500 -> 2, waiting 700 -> 1,
//   total 1750 -> 2 (2250/1000). No percentage table: ab prints it only when n > 1.
const ONE_TEXT: &str = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        Variable

Concurrency Level:      1
Time taken for tests:   0.002 seconds
Complete requests:      1
Failed requests:        1
   (Connect: 1, Receive: 0, Length: 0, Exceptions: 0)
Write errors:           2
Total transferred:      238 bytes
HTML transferred:       13 bytes
Requests per second:    555.56 [#/sec] (mean)
Time per request:       1.800 [ms] (mean)
Time per request:       1.800 [ms] (mean, across all concurrent requests)
Transfer rate:          129.12 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.0      0       0
Processing:     2    2   0.0      2       2
Waiting:        1    1   0.0      1       1
Total:          2    2   0.0      2       2
";

#[test]
fn single_request_variable_length_failures_and_write_errors() {
    let m = measurement(Setup {
        timings: &[(250, 700, 1750)],
        elapsed_us: 1800,
        completed: 1,
        total_bytes: 238,
        body_bytes: 13,
        failures: Failures {
            connect: 1,
            write: 2,
            ..Failures::default()
        },
        ..Setup::default()
    });
    let s = summarize_with(
        &m,
        &AbOptions {
            variable_length: true,
            ..AbOptions::default()
        },
    );
    assert_text(&render_text(&s), ONE_TEXT);
}

// 100 requests with totals 1, 2, .., 100 ms: ab's index rule picks sorted[n * p / 100], one
// above the "p-th" request, so 50% reads 51 ms and 99% reads 100 ms.
//
// Header: timetaken 2.5 s; 100 / 2.5 = 40.00; 10 * 2.5 * 1000 / 100 = 250.000;
//   2.5 * 1000 / 100 = 25.000; 102400 / 1024 / 2.5 = 40.00.
//   Failed = 1 + 2 + 3 + 4 + 5 (timeouts count) = 15; timeouts appear as ", Timeout: 5".
// Connect all 0.
// Total = Processing (connect is 0): k ms, k = 1..100; sum 5050000 µs, mean 50500 -> 51
//   (51000/1000); Σ(x - mean)² = 10^6 * 100 * (100² - 1) / 12 = 8.3325e10, /99 = 841666666.7,
//   sd 29011.5 µs -> 29.0; even n: median sorted[50] = 51000 -> 51; min 1, max 100.
// Waiting = total / 2: mean 25250 -> 25 (25750/1000); sd 14505.7 -> 14.5;
//   median sorted[50] = 25500 -> 26; min 500 -> 1; max 50000 -> 50. |25 - 26| = 1: silent.
// Percentages: 50->sorted[50] = 51, 66->67, 75->76, 80->81, 90->91, 95->96, 98->99,
//   99->sorted[99] = 100, 100 -> last = 100.
const HUNDRED_TEXT: &str = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        512 bytes

Concurrency Level:      10
Time taken for tests:   2.500 seconds
Complete requests:      100
Failed requests:        15
   (Connect: 1, Receive: 2, Length: 3, Exceptions: 4, Timeout: 5)
Total transferred:      102400 bytes
HTML transferred:       51200 bytes
Requests per second:    40.00 [#/sec] (mean)
Time per request:       250.000 [ms] (mean)
Time per request:       25.000 [ms] (mean, across all concurrent requests)
Transfer rate:          40.00 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.0      0       0
Processing:     1   51  29.0     51     100
Waiting:        1   25  14.5     26      50
Total:          1   51  29.0     51     100

Percentage of the requests served within a certain time (ms)
  50%     51
  66%     67
  75%     76
  80%     81
  90%     91
  95%     96
  98%     99
  99%    100
 100%    100 (longest request)
";

fn hundred_timings() -> &'static [Timing] {
    // Recorded in descending order, so only sorting puts them right.
    let v: Vec<Timing> = (1..=100u32).rev().map(|k| (0, k * 500, k * 1000)).collect();
    Box::leak(v.into_boxed_slice())
}

#[test]
fn percentile_picks_at_boundaries_and_timeouts_in_breakdown() {
    let m = measurement(Setup {
        timings: hundred_timings(),
        concurrency: 10,
        elapsed_us: 2_500_000,
        completed: 100,
        total_bytes: 102_400,
        body_bytes: 51_200,
        document_length: 512,
        failures: Failures {
            connect: 1,
            receive: 2,
            length: 3,
            exception: 4,
            timeout: 5,
            write: 0,
            generator: 0,
            reset: 0,
            goaway: 0,
        },
        ..Setup::default()
    });
    assert_text(&render(&m), HUNDRED_TEXT);
}

#[test]
fn nothing_completed_prints_only_the_header() {
    // ab guards the rates with `timetaken && done` and the tables with `done > 0`.
    let m = measurement(Setup {
        elapsed_us: 3_000_000,
        failures: Failures {
            connect: 7,
            ..Failures::default()
        },
        ..Setup::default()
    });
    let want = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        13 bytes

Concurrency Level:      1
Time taken for tests:   3.000 seconds
Complete requests:      0
Failed requests:        7
   (Connect: 7, Receive: 0, Length: 0, Exceptions: 0)
Total transferred:      0 bytes
HTML transferred:       0 bytes
";
    assert_text(&render(&m), want);
}

#[test]
fn tls_lines_follow_the_port_as_ab_prints_them() {
    // ab 2.3 against nginx 1.22 over TLS, its header as printed (SNI sent: a host name).
    let mut m = measurement(Setup {
        elapsed_us: 3_000_000,
        failures: Failures {
            connect: 7,
            ..Failures::default()
        },
        ..Setup::default()
    });
    m.server.tls = Some(loadgen::TlsSession {
        protocol: "TLSv1.2".into(),
        cipher: "ECDHE-ECDSA-AES256-GCM-SHA384".into(),
        cipher_bits: 256,
        key_exchange: Some(("X25519".into(), 253)),
        server_name: Some("localhost".into()),
    });
    let want = r"

Server Software:        nginx/1.22.1
Server Hostname:        127.0.0.1
Server Port:            8080
SSL/TLS Protocol:       TLSv1.2,ECDHE-ECDSA-AES256-GCM-SHA384,256,256
Server Temp Key:        X25519 253 bits
TLS Server Name:        localhost

Document Path:          /
Document Length:        13 bytes
";
    let got = render(&m);
    assert_text(&got[..got.find("\nConcurrency Level").unwrap()], want);
}

/// The nginx run of the first reference post (ab 2.3, `-n 10000 -c 300`), as printed there.
/// The post dropped the "Server Hostname" line; ab 2.4 prints "Write errors" only when there
/// are some, so that line is the one expected difference.
const SEED_NGINX: &str = "

Server Software:        nginx/0.6.13
Server Port:            8000

Document Path:          /
Document Length:        13 bytes

Concurrency Level:      300
Time taken for tests:   3.172 seconds
Complete requests:      10000
Failed requests:        0
Write errors:           0
Total transferred:      2230000 bytes
HTML transferred:       130000 bytes
Requests per second:    3152.12 [#/sec] (mean)
Time per request:       95.174 [ms] (mean)
Time per request:       0.317 [ms] (mean, across all concurrent requests)
Transfer rate:          686.45 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    2  68.3      0    3057
Processing:     0   70 359.1     27    3164
Waiting:        0   70 359.1     26    3164
Total:         10   72 365.6     27    3169

Percentage of the requests served within a certain time (ms)
  50%     27
  66%     27
  75%     27
  80%     27
  90%     28
  95%     29
  98%     32
  99%   3157
 100%   3169 (longest request)
";

#[test]
fn layout_matches_a_reference_post() {
    use report::ab::{ConnectionTimes, PercentileRow, TimerRow};
    // The seed file holds this block verbatim (with blog text around it).
    let seed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/seeds/000_bc26a0abf24b7d32.txt"
    ));
    if let Ok(seed) = seed {
        let block = SEED_NGINX.trim_start_matches('\n');
        assert!(seed.contains(block), "the quoted block is not the post's");
    }

    // The header numbers come out of the formulas: 10000 requests in 3.172470 s give
    // 10000 / 3.17247 = 3152.118 -> 3152.12; 300 * 3.17247 * 1000 / 10000 = 95.174;
    // 3.17247 * 1000 / 10000 = 0.317; 2230000 / 1024 / 3.17247 = 686.448 -> 686.45.
    let m = measurement(Setup {
        concurrency: 300,
        elapsed_us: 3_172_470,
        completed: 10_000,
        total_bytes: 2_230_000,
        body_bytes: 130_000,
        ..Setup::default()
    });
    let mut s: AbSummary = summarize(&m);
    s.server_software = "nginx/0.6.13".into();
    s.server_port = 8000;
    // The table's cells as the post printed them (its samples are gone).
    let row = |min, mean, sd: &str, median, max| TimerRow {
        min,
        mean,
        sd: sd.into(),
        median,
        max,
    };
    s.times = Some(ConnectionTimes {
        connect: row(0, 2, "68.3", 0, 3057),
        processing: row(0, 70, "359.1", 27, 3164),
        waiting: row(0, 70, "359.1", 26, 3164),
        total: row(10, 72, "365.6", 27, 3169),
        sanity: Vec::new(),
    });
    s.percentiles = [27, 27, 27, 27, 28, 29, 32, 3157, 3169]
        .iter()
        .zip(report::ab::AB_PERCENTILES)
        .map(|(&ms, percent)| PercentileRow { percent, ms })
        .collect();
    let want = SEED_NGINX
        .replace(
            "Server Port:",
            "Server Hostname:        127.0.0.1\nServer Port:",
        )
        .replace("Write errors:           0\n", "");
    assert_text(&render_text(&s), &want);
}

#[test]
fn http2_stream_failures_join_the_breakdown() {
    let m = measurement(Setup {
        timings: hundred_timings(),
        concurrency: 10,
        elapsed_us: 2_500_000,
        completed: 100,
        failures: Failures {
            reset: 6,
            goaway: 7,
            ..Failures::default()
        },
        ..Setup::default()
    });
    let text = render(&m);
    assert!(
        text.contains("Failed requests:        13\n"),
        "reset and refused streams are failed requests:\n{text}"
    );
    assert!(
        text.contains(
            "   (Connect: 0, Receive: 0, Length: 0, Exceptions: 0, Reset: 6, GOAWAY: 7)\n"
        ),
        "{text}"
    );
}
