//! Several generators' reports of one load merged into one (what a run with `[load]
//! generators` stores): against a real server started in the test (127.0.0.1, port 0), two
//! loads measured apart and merged keep every count in its bucket, sum every counter, and read
//! their percentiles from the summed histograms; histograms of another precision are refused
//! rather than re-binned.
//!
//! Every run is bounded in requests and time, and wrapped in a deadline.

use crate::support::{config, run_within, TestServer};
use hdrhistogram::Histogram;
use loadgen::json::{decode_histogram, encode_histogram, LoadReport, MergeError};
use loadgen::Timer;
use std::time::Duration;

const HANG: Duration = Duration::from_secs(30);

fn one_load(server: &TestServer, n: u64, c: u32, rate: Option<f64>) -> LoadReport {
    let mut cfg = config(&server.url("/"), n, c);
    cfg.load.rate = rate;
    cfg.interval = Duration::from_millis(100);
    let m = run_within(HANG, cfg).expect("the load runs");
    assert_eq!(m.complete(), n);
    LoadReport::from_measurement(&m)
}

/// A timeline's intervals count `complete` responses, in their counters and their histograms.
fn assert_timeline_counts(tl: &loadgen::timeline::TimelineReport, complete: u64) {
    let completed: u64 = tl.intervals.iter().map(|i| i.completed).sum();
    assert_eq!(completed, complete);
    let in_histograms: u64 = tl
        .intervals
        .iter()
        .filter_map(|i| i.total.as_deref())
        .map(|h| decode_histogram(h).unwrap().len())
        .sum();
    assert_eq!(in_histograms, complete);
}

fn counts(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[test]
fn two_generators_reports_merge_without_losing_a_count() {
    let server = TestServer::start();
    let a = one_load(&server, 300, 2, None);
    let b = one_load(&server, 500, 3, Some(2000.0));
    let m = LoadReport::merge(&[a.clone(), b.clone()]).expect("merges");

    assert_eq!(m.complete, 800);
    assert_eq!(m.complete, a.complete + b.complete);
    assert_eq!(m.total_bytes, a.total_bytes + b.total_bytes);
    assert_eq!(m.body_bytes, a.body_bytes + b.body_bytes);
    assert_eq!(m.failed, 0);
    assert_eq!(m.settings.concurrency, 5);
    // One part had no rate: the merged load had no single target rate.
    assert_eq!(m.settings.rate, None);
    assert_eq!(m.elapsed_s, a.elapsed_s.max(b.elapsed_s));
    assert!((m.client_cpu_s - (a.client_cpu_s + b.client_cpu_s)).abs() < 1e-9);

    for t in Timer::ALL {
        let (ha, hb, hm) = (
            a.histogram(t).unwrap(),
            b.histogram(t).unwrap(),
            m.histogram(t).unwrap(),
        );
        assert_eq!(hm.len(), m.complete, "{t:?}");
        assert_eq!(hm.sigfig(), ha.sigfig());
        // Every bucket holds exactly the two parts' counts.
        for (v, n) in counts(&hm) {
            assert_eq!(n, ha.count_at(v) + hb.count_at(v), "{t:?} at {v} µs");
        }
        let (ma, mb, mm) = (a.timer(t).moments, b.timer(t).moments, m.timer(t).moments);
        assert_eq!(mm.count, ma.count + mb.count);
        assert_eq!(mm.sum, ma.sum + mb.sum);
        assert_eq!(mm.sum_sq, ma.sum_sq + mb.sum_sq);
        assert_eq!(mm.min, ma.min.min(mb.min));
        assert_eq!(mm.max, ma.max.max(mb.max));
        assert_eq!(m.timer(t).percentile(100.0), Some(mm.max));
        // The median is read from the summed histogram: between the parts' medians.
        let (pa, pb, pm) = (
            a.timer(t).percentile(50.0).unwrap(),
            b.timer(t).percentile(50.0).unwrap(),
            m.timer(t).percentile(50.0).unwrap(),
        );
        let (lo, hi) = (pa.min(pb), pa.max(pb));
        assert!(
            pm as f64 >= lo as f64 * 0.999 - 1.0 && pm as f64 <= hi as f64 * 1.001 + 1.0,
            "{t:?}: median {pm} outside [{lo}, {hi}]"
        );
    }
    // Only the constant-rate part had a corrected timer: the merged one is that part's.
    let corrected = m.corrected_histogram().unwrap().unwrap();
    assert_eq!(
        corrected.len(),
        b.corrected_histogram().unwrap().unwrap().len()
    );

    // The timelines add up interval by interval to the merged totals.
    assert_timeline_counts(m.timeline.as_ref().expect("a timeline"), m.complete);

    // Merging is a sum: the same report twice doubles every count and keeps the percentiles.
    let twice = LoadReport::merge(&[a.clone(), a.clone()]).unwrap();
    assert_eq!(twice.complete, 2 * a.complete);
    let (h1, h2) = (
        a.histogram(Timer::Total).unwrap(),
        twice.histogram(Timer::Total).unwrap(),
    );
    for (v, n) in counts(&h2) {
        assert_eq!(n, 2 * h1.count_at(v));
    }
    assert_eq!(
        twice.timer(Timer::Total).percentile(100.0),
        a.timer(Timer::Total).percentile(100.0)
    );

    // A rate that every part had adds up.
    let c = one_load(&server, 200, 2, Some(1000.0));
    let both = LoadReport::merge(&[b, c]).unwrap();
    assert_eq!(both.settings.rate, Some(3000.0));
}

#[test]
fn histograms_of_another_precision_are_refused_not_rebinned() {
    let server = TestServer::start();
    let a = one_load(&server, 100, 1, None);
    let mut b = a.clone();
    let mut coarse = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 2).unwrap();
    coarse.record(1000).unwrap();
    b.timers.total.histogram = encode_histogram(&coarse);
    match LoadReport::merge(&[a, b]) {
        Err(MergeError::Precision { a, b, .. }) => assert_ne!(a, b),
        other => panic!(
            "expected a precision error, got {:?}",
            other.map(|r| r.complete)
        ),
    }
    assert!(matches!(LoadReport::merge(&[]), Err(MergeError::Empty)));
}

/// A part whose timeline counts in longer intervals (a generator that ran long enough to
/// coarsen its timeline, which doubles its interval past 600 of them) sets the merged length:
/// the other parts' intervals are added in runs to it, and nothing is lost. Lengths that are not
/// a power-of-two multiple apart cannot be aligned.
#[test]
fn timelines_of_different_interval_lengths_merge_at_the_coarser() {
    let server = TestServer::start();
    let a = one_load(&server, 400, 2, Some(2000.0));
    let mut cfg = config(&server.url("/"), 400, 2);
    cfg.load.rate = Some(2000.0);
    cfg.interval = Duration::from_millis(400);
    let m = run_within(HANG, cfg).expect("the load runs");
    let b = LoadReport::from_measurement(&m);
    assert_eq!(b.timeline.as_ref().unwrap().interval_s, 0.4);

    let merged = LoadReport::merge(&[a.clone(), b.clone()]).expect("merges");
    let tl = merged.timeline.as_ref().unwrap();
    assert_eq!(tl.interval_s, 0.4);
    assert_timeline_counts(tl, 800);
    // a's first four 100 ms intervals make the merged first one, with b's first.
    let a_tl = a.timeline.as_ref().unwrap();
    let b_tl = b.timeline.as_ref().unwrap();
    let a_first: u64 = a_tl.intervals.iter().take(4).map(|i| i.completed).sum();
    assert_eq!(
        tl.intervals[0].completed,
        a_first + b_tl.intervals[0].completed
    );
    // Either order gives the same timeline.
    assert_eq!(
        LoadReport::merge(&[b.clone(), a.clone()])
            .unwrap()
            .timeline
            .unwrap()
            .intervals
            .iter()
            .map(|i| i.completed)
            .collect::<Vec<_>>(),
        tl.intervals.iter().map(|i| i.completed).collect::<Vec<_>>()
    );

    let mut cfg = config(&server.url("/"), 100, 1);
    cfg.interval = Duration::from_millis(300);
    let c = LoadReport::from_measurement(&run_within(HANG, cfg).expect("the load runs"));
    let err = LoadReport::merge(&[a, c]).unwrap_err();
    assert!(matches!(err, MergeError::Interval(..)), "{err}");
}
