//! The load over time against real servers started in the test (127.0.0.1, port 0): the
//! intervals add up exactly to the load's totals (requests, failures by kind, bytes, and the
//! histograms' counts, corrected ones included), and a server that warms up is flagged with
//! the stretch where it was steady.
//!
//! Every run is bounded in requests and time, and wrapped in a deadline.

use crate::support::{run_within, TestServer};
use loadgen::json::{decode_histogram, LoadReport};
use loadgen::steady::Pattern;
use loadgen::{LoadConfig, LoadSpec, Measurement, Note, Target};
use std::time::Duration;

const HANG: Duration = Duration::from_secs(30);

fn config(url: &str, c: u32, interval: Duration) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.concurrency = c;
    cfg.load.timeout = Duration::from_secs(5);
    cfg.interval = interval;
    cfg
}

/// Every count of the timeline against the load's, through the report a results file stores.
fn assert_adds_up(m: &Measurement) -> LoadReport {
    let r = LoadReport::from_measurement(m);
    let t = r.timeline.as_ref().expect("a timeline");
    let sum = |f: &dyn Fn(&loadgen::timeline::IntervalReport) -> u64| -> u64 {
        t.intervals.iter().map(f).sum()
    };
    assert_eq!(sum(&|i| i.completed), r.complete, "completed");
    assert_eq!(sum(&|i| i.total_bytes), r.total_bytes, "bytes");
    assert_eq!(
        sum(&|i| i.failures.length),
        r.failures.length,
        "length failures"
    );
    assert_eq!(
        sum(&|i| i.failures.receive),
        r.failures.receive,
        "receive failures"
    );
    assert_eq!(
        sum(&|i| i.failures.connect),
        r.failures.connect,
        "connect failures"
    );
    assert_eq!(sum(&|i| i.failures.timeout), r.failures.timeout, "timeouts");
    assert_eq!(sum(&|i| i.failures.total()), r.failed, "failures");
    let count = |pick: &dyn Fn(&loadgen::timeline::IntervalReport) -> Option<&String>| -> u64 {
        t.intervals
            .iter()
            .filter_map(pick)
            .map(|h| {
                decode_histogram(h)
                    .expect("an interval's histogram decodes")
                    .len()
            })
            .sum()
    };
    let main = r.histogram(loadgen::Timer::Total).unwrap().len();
    assert_eq!(count(&|i| i.total.as_ref()), main, "Total histogram counts");
    if let Some(c) = r.corrected_histogram() {
        assert_eq!(
            count(&|i| i.corrected.as_ref()),
            c.unwrap().len(),
            "corrected counts"
        );
    }
    // The intervals cover the measured part, in order, only the last one shorter.
    let n = t.intervals.len();
    for (k, i) in t.intervals.iter().enumerate() {
        assert!(
            (i.start_s - k as f64 * t.interval_s).abs() < 1e-9,
            "{k}: {i:?}"
        );
        if k + 1 < n {
            assert!((i.duration_s - t.interval_s).abs() < 1e-9, "{k}: {i:?}");
        }
    }
    let end = t.intervals.last().map_or(0.0, |i| i.start_s + i.duration_s);
    assert!((end - r.elapsed_s).abs() < 1e-6, "{end} vs {}", r.elapsed_s);
    r
}

#[test]
fn a_constant_rate_load_adds_up_interval_by_interval() {
    let s = TestServer::start();
    let mut cfg = config(&s.url("/cl"), 8, Duration::from_millis(100));
    cfg.threads = 2;
    cfg.load.keep_alive = true;
    cfg.load.rate = Some(400.0);
    cfg.load.duration = Some(Duration::from_secs(2));
    cfg.load.requests = Some(2_000);
    let m = run_within(HANG, cfg).expect("the load runs");
    let r = assert_adds_up(&m);
    let t = r.timeline.unwrap();
    assert_eq!(t.interval_s, 0.1);
    assert_eq!(t.intervals.len(), 20);
    assert!(r.complete > 600, "{} requests", r.complete);
    // Every interval of a constant rate had requests in it.
    assert!(t.intervals.iter().all(|i| i.completed > 0), "{t:?}");
}

#[test]
fn failures_count_in_the_interval_they_happened() {
    // Every other response is a byte longer: a Length failure each, spread over the load.
    let s = TestServer::start();
    let mut cfg = config(&s.url("/vary"), 4, Duration::from_millis(10));
    cfg.threads = 2;
    cfg.load.requests = Some(400);
    let m = run_within(HANG, cfg).expect("the load runs");
    assert!(m.rec.failures.length > 0);
    assert_adds_up(&m);
}

#[test]
fn a_server_that_warms_up_is_flagged_with_its_steady_stretch() {
    // 20 ms a response for the first second, then 2 ms: about a tenth of the throughput at
    // first over 4 keep-alive connections. How steady the rest is depends on what else the
    // machine does: the stretch, when one is named, starts after the slow second.
    let s = TestServer::start();
    let mut cfg = config(
        &s.url("/warm?ms=20&for=1000&then=2"),
        4,
        Duration::from_millis(250),
    );
    cfg.load.keep_alive = true;
    cfg.load.duration = Some(Duration::from_secs(3));
    cfg.load.requests = Some(50_000);
    let m = run_within(HANG, cfg).expect("the load runs");
    let r = assert_adds_up(&m);
    let points = r.timeline.as_ref().unwrap().points(false).unwrap();
    let series: Vec<(u64, Option<u64>)> = points.iter().map(|p| (p.requests, p.p50_us)).collect();
    let note = m.notes.iter().find(|n| matches!(n, Note::Unsteady { .. }));
    println!("{note:?}\nintervals (requests, p50 µs): {series:?}");
    let Some(Note::Unsteady {
        pattern,
        requests_per_s,
        steady,
        ..
    }) = note
    else {
        panic!("not flagged: {:?}, intervals {series:?}", m.notes);
    };
    assert_eq!(*pattern, Pattern::WarmUp, "intervals {series:?}");
    if let Some(w) = steady {
        assert!(
            (0.75..=1.5).contains(&w.from_s),
            "{w:?}, intervals {series:?}"
        );
        assert!((w.to_s - 3.0).abs() < 1e-6, "{w:?}");
    }
    let r = requests_per_s.expect("throughput moved");
    assert!(r.after > 1.5 * r.before, "{r:?}, intervals {series:?}");
}
