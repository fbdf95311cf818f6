//! The JSON load report: what a results file keeps must decode back to the same histograms and
//! render the same ab text, or later reports and comparisons would not be exact.

use loadgen::json::{decode_histogram, HistogramDecodeError, LoadReport, LOAD_REPORT_VERSION};
use loadgen::stats::{Failures, Measurement, Recorder, RunSettings, Sample, ServerInfo, Timer};
use report::ab::{render_text, summarize, summarize_report, AbOptions};
use std::time::Duration;

/// 100 requests, total k ms, waiting k/2 ms, connect k µs, for k = 100..1: distinct values in
/// every timer, recorded in descending order.
fn measurement(keep_samples: bool, corrected: bool) -> Measurement {
    let mut rec = Recorder::new(keep_samples, corrected);
    for k in (1..=100u32).rev() {
        let s = Sample {
            connect: k,
            waiting: k * 500,
            total: k * 1000,
        };
        // A constant-rate run would have meant to send each request a little earlier.
        rec.record(s, corrected.then_some(u64::from(k) * 1000 + 250));
        // Each response read 3k µs after it arrived.
        rec.read_delay.saturating_record(u64::from(k) * 3);
    }
    rec.naps = 7;
    rec.completed = 100;
    rec.total_bytes = 102_400;
    rec.body_bytes = 51_200;
    rec.sent_bytes = 7_800;
    rec.non_2xx = 2;
    rec.failures = Failures {
        receive: 3,
        timeout: 1,
        ..Failures::default()
    };
    Measurement {
        server: ServerInfo {
            software: "nginx/1.22.1".into(),
            hostname: "127.0.0.1".into(),
            port: 8080,
            path: "/".into(),
            document_length: 512,
            tls: None,
        },
        settings: RunSettings {
            concurrency: 10,
            keep_alive: false,
            rate: corrected.then_some(1000.0),
            threads: 2,
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
        elapsed: Duration::from_millis(2500),
        rec,
        client_cpu: Duration::from_millis(300),
        stopped_early: None,
        notes: Vec::new(),
    }
}

fn recorded(h: &hdrhistogram::Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[test]
fn json_round_trip_keeps_every_field_and_histogram() {
    let m = measurement(true, true);
    let r = LoadReport::from_measurement(&m);
    let text = serde_json::to_string_pretty(&r).unwrap();
    let mut back: LoadReport = serde_json::from_str(&text).unwrap();
    // serde_json prints the shortest exact form of an f64 but, without its `float_roundtrip`
    // feature, may parse it back one unit in the last place off; every float here is derived
    // from exact integers that do round-trip, so allow that ulp and compare the rest exactly.
    fn close(a: &mut f64, b: f64) {
        assert!((*a - b).abs() <= b.abs() * 4.0 * f64::EPSILON, "{a} vs {b}");
        *a = b;
    }
    close(&mut back.elapsed_s, r.elapsed_s);
    close(&mut back.requests_per_second, r.requests_per_second);
    close(&mut back.transfer_rate_kbps, r.transfer_rate_kbps);
    close(&mut back.client_cpu_s, r.client_cpu_s);
    let pairs = [
        (&mut back.timers.connect, &r.timers.connect),
        (&mut back.timers.processing, &r.timers.processing),
        (&mut back.timers.waiting, &r.timers.waiting),
        (&mut back.timers.total, &r.timers.total),
        (
            back.corrected_total.as_mut().unwrap(),
            r.corrected_total.as_ref().unwrap(),
        ),
        (
            back.read_delay.as_mut().unwrap(),
            r.read_delay.as_ref().unwrap(),
        ),
    ];
    for (b, o) in pairs {
        close(&mut b.mean_us, o.mean_us);
        close(&mut b.sd_us, o.sd_us);
    }
    assert_eq!(back, r);

    let hs = &m.rec.hist;
    for t in [
        Timer::Connect,
        Timer::Processing,
        Timer::Waiting,
        Timer::Total,
    ] {
        let h = back.histogram(t).unwrap();
        assert_eq!(h.len(), 100, "{t:?}");
        assert_eq!(recorded(&h), recorded(hs.get(t)), "{t:?}");
    }
    let c = back.corrected_histogram().expect("corrected kept").unwrap();
    assert_eq!(recorded(&c), recorded(m.rec.corrected.as_ref().unwrap()));
}

#[test]
fn read_delay_and_naps_are_reported() {
    let r = LoadReport::from_measurement(&measurement(true, false));
    assert_eq!(r.stamped, 100);
    assert_eq!(r.naps, 7);
    let d = r
        .read_delay
        .as_ref()
        .expect("stamped responses have a read delay");
    assert_eq!(d.moments.count, 100);
    assert_eq!(d.percentiles_us.last(), Some(&(100.0, 300)));
    assert!((d.mean_us - 151.5).abs() < 0.5, "mean {}", d.mean_us);
}

#[test]
fn reports_from_before_receive_stamps_still_read() {
    let r = LoadReport::from_measurement(&measurement(true, false));
    let mut v = serde_json::to_value(&r).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["stamped", "read_delay", "naps"] {
        o.remove(k);
    }
    let settings = o["settings"].as_object_mut().unwrap();
    settings.remove("rx_stamps");
    settings.remove("coalesce");
    let old: LoadReport = serde_json::from_value(v).unwrap();
    assert_eq!((old.stamped, old.naps), (0, 0));
    assert!(old.read_delay.is_none());
    assert!(
        !old.settings.rx_stamps,
        "timed when read, as everything was then"
    );
    assert_eq!(old.settings.coalesce, "off");
}

#[test]
fn counters_and_rates_are_copied() {
    let r = LoadReport::from_measurement(&measurement(true, false));
    assert_eq!(r.version, LOAD_REPORT_VERSION);
    assert_eq!(r.complete, 100);
    assert_eq!(r.failed, 4);
    assert_eq!(r.failures.timeout, 1);
    assert_eq!(r.non_2xx, 2);
    assert_eq!(r.sent_bytes, 7_800);
    assert_eq!(r.elapsed_s, 2.5);
    assert_eq!(r.requests_per_second, 40.0);
    // 102400 bytes / 1024 / 2.5 s.
    assert_eq!(r.transfer_rate_kbps, 40.0);
    assert_eq!(r.client_cpu_s, 0.3);
    assert!(r.corrected_total.is_none());
    assert_eq!(r.server.document_length, 512);
}

#[test]
fn percentiles_are_exact_with_samples() {
    let r = LoadReport::from_measurement(&measurement(true, false));
    let t = &r.timers.total;
    // ab's index rule, n * p / 1000 per mille: 50% -> sorted[50] = 51 ms, 66% -> sorted[66],
    // 99.9% -> sorted[99], 100% -> the last.
    assert_eq!(t.percentile(50.0), Some(51_000));
    assert_eq!(t.percentile(66.0), Some(67_000));
    assert_eq!(t.percentile(99.0), Some(100_000));
    assert_eq!(t.percentile(99.9), Some(100_000));
    assert_eq!(t.percentile(100.0), Some(100_000));
    assert_eq!(t.percentiles_us.len(), 10);
    // Processing is total - connect: k * 1000 - k, so 50% -> k = 51 -> 50949.
    assert_eq!(r.timers.processing.percentile(50.0), Some(51 * 999));
    // Mean 50500 µs exactly; sd about it: sqrt(10^6 * 100 * (100² - 1) / 12 / 99).
    assert_eq!(t.mean_us, 50_500.0);
    let sd = (1e6 * 100.0 * 9999.0 / 12.0 / 99.0f64).sqrt();
    assert!((t.sd_us - sd).abs() < 1e-6, "{} vs {sd}", t.sd_us);
    assert_eq!(t.moments.min, 1000);
    assert_eq!(t.moments.max, 100_000);
}

#[test]
fn percentiles_come_from_histograms_without_samples() {
    let exact = LoadReport::from_measurement(&measurement(true, false));
    let approx = LoadReport::from_measurement(&measurement(false, false));
    for ((p, a), (q, e)) in approx
        .timers
        .total
        .percentiles_us
        .iter()
        .zip(&exact.timers.total.percentiles_us)
    {
        assert_eq!(p, q);
        let err = (*a as f64 - *e as f64).abs() / *e as f64;
        assert!(err <= 0.001, "{p}%: {a} vs exact {e}");
    }
    // 51000 µs lies in a 32 µs wide bucket, reported by its highest value.
    assert_eq!(approx.timers.total.percentile(50.0), Some(51_007));
    // The maximum is the exact one, not its bucket's top.
    assert_eq!(approx.timers.total.percentile(100.0), Some(100_000));
    // Moments never depend on samples.
    assert_eq!(approx.timers.total.moments, exact.timers.total.moments);
    assert_eq!(approx.timers.total.sd_us, exact.timers.total.sd_us);
}

#[test]
fn corrected_timer_is_reported_from_its_histogram() {
    let r = LoadReport::from_measurement(&measurement(true, true));
    let c = r.corrected_total.as_ref().unwrap();
    assert_eq!(c.moments.count, 100);
    // Values k * 1000 + 250: the smallest, 1250, is exact in the histogram.
    assert_eq!(c.moments.min, 1250);
    // 100250 µs sits in a 64 µs bucket [100224, 100287].
    assert_eq!(c.moments.max, 100_287);
    assert!((c.mean_us - 50_750.0).abs() / 50_750.0 < 0.001);
}

#[test]
fn ab_text_from_a_report_equals_the_histogram_path_of_the_measurement() {
    let m = measurement(false, false);
    let r = LoadReport::from_measurement(&m);
    let back: LoadReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    let from_report = summarize_report(&back, &AbOptions::default()).unwrap();
    let direct = summarize(&m);
    assert_eq!(from_report, direct);
    assert_eq!(render_text(&from_report), render_text(&direct));
    assert!(render_text(&direct).contains("Timeout: 1)"));
}

#[test]
fn damaged_histograms_are_reported() {
    assert!(matches!(
        decode_histogram("not base64!"),
        Err(HistogramDecodeError::Base64(_))
    ));
    assert!(matches!(
        decode_histogram("AAAAAAAAAAA="),
        Err(HistogramDecodeError::Deserialize(_))
    ));
    let mut r = LoadReport::from_measurement(&measurement(true, false));
    r.timers.waiting.histogram.truncate(8);
    assert!(r.histogram(Timer::Waiting).is_err());
    assert!(r.histogram(Timer::Total).is_ok());
}
