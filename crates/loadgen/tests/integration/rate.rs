//! Constant-rate runs (`--rate`) against a server started in the test: the generator holds the
//! asked rate, and its coordinated-omission correction works — when the server stops for one
//! second mid-run, the latency measured from each request's intended send time shows the stop
//! (a p99 in the hundreds of milliseconds) while the latency measured from the actual send time
//! does not (it stays low, which is exactly the blind spot the correction exists for).

use crate::support;

use loadgen::{HttpVersion, LoadConfig, LoadSpec, Measurement, Target};
use std::time::Duration;
use support::TestServer;

fn rate_config(url: &str, rate: f64, c: u32, run_for: Duration) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.requests = None;
    cfg.load.duration = Some(run_for);
    cfg.load.rate = Some(rate);
    cfg.load.concurrency = c;
    cfg.load.keep_alive = true;
    cfg.load.version = HttpVersion::Http11;
    cfg.load.timeout = Duration::from_secs(5);
    cfg
}

fn run_within(limit: Duration, cfg: LoadConfig) -> Measurement {
    support::run_within(limit, cfg).expect("the load run succeeds")
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

#[test]
fn one_second_stall_shows_in_corrected_p99_only() {
    let s = TestServer::start();
    // 400 requests/s for 3 s: the 400th request arrives about one second in, so the server
    // stops from about 1 s to about 2 s and the run ends a second after it resumes.
    let cfg = rate_config(
        &s.url("/stall-once?after=400"),
        400.0,
        4,
        Duration::from_secs(3),
    );
    let m = run_within(Duration::from_secs(15), cfg);
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert!(
        s.requests() >= 400,
        "the stall never triggered: {} requests",
        s.requests()
    );
    let corrected = m
        .rec
        .corrected
        .as_ref()
        .expect("a --rate run keeps a corrected histogram");
    let total = &m.rec.hist.total;
    let (c99, u99) = (
        corrected.value_at_quantile(0.99),
        total.value_at_quantile(0.99),
    );
    println!(
        "{} responses: uncorrected p50 {:.2} ms p99 {:.2} ms max {:.2} ms; corrected p50 {:.2} ms \
         p99 {:.2} ms max {:.2} ms",
        m.complete(),
        ms(total.value_at_quantile(0.5)),
        ms(u99),
        ms(total.max()),
        ms(corrected.value_at_quantile(0.5)),
        ms(c99),
        ms(corrected.max()),
    );
    assert_eq!(
        corrected.len(),
        total.len(),
        "one corrected value per response"
    );
    assert!(
        c99 > 300_000,
        "corrected p99 {:.2} ms should show the 1 s stall",
        ms(c99)
    );
    assert!(
        c99 <= 1_200_000,
        "corrected p99 {:.2} ms exceeds the stall itself",
        ms(c99)
    );
    assert!(
        u99 < 100_000,
        "uncorrected p99 {:.2} ms should stay low",
        ms(u99)
    );
    // The few requests in flight when the server stopped did wait for it, in both views.
    assert!(
        total.max() >= 800_000,
        "uncorrected max {:.2} ms",
        ms(total.max())
    );
    // No request's corrected latency is below its uncorrected one.
    assert!(corrected.value_at_quantile(0.5) >= total.value_at_quantile(0.5));
}

#[test]
fn achieved_rate_matches_the_target() {
    let s = TestServer::start();
    let cfg = rate_config(&s.url("/cl"), 400.0, 4, Duration::from_secs(2));
    let m = run_within(Duration::from_secs(15), cfg);
    let rps = m.requests_per_second();
    println!(
        "asked 400/s, got {rps:.1}/s ({} responses in {:?})",
        m.complete(),
        m.elapsed
    );
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert!(
        (360.0..=440.0).contains(&rps),
        "achieved {rps:.1} requests/s for a target of 400"
    );
    let corrected = m.rec.corrected.as_ref().expect("corrected histogram");
    // Without a stall, the correction has nothing to add.
    assert!(
        corrected.value_at_quantile(0.99) < 100_000,
        "corrected p99 {:.2} ms with no stall",
        ms(corrected.value_at_quantile(0.99))
    );
}

#[test]
fn closed_model_runs_have_no_corrected_histogram() {
    let s = TestServer::start();
    let mut cfg = LoadConfig::new(
        Target::parse(&s.url("/cl")).expect("URL"),
        LoadSpec::default(),
    );
    cfg.load.requests = Some(20);
    cfg.load.concurrency = 2;
    cfg.load.timeout = Duration::from_secs(5);
    let m = run_within(Duration::from_secs(15), cfg);
    assert_eq!(m.complete(), 20);
    assert!(m.rec.corrected.is_none());
}

#[test]
fn requests_leave_at_their_send_time_not_at_the_next_millisecond() {
    // With nothing in the way, the corrected and the uncorrected latency differ only by how
    // late each request left: a worker woken on the poller's millisecond timeout sends half a
    // millisecond late on average, which the correction would charge to the server.
    let s = TestServer::start();
    let cfg = rate_config(&s.url("/cl"), 500.0, 4, Duration::from_secs(2));
    let m = run_within(Duration::from_secs(15), cfg);
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    let corrected = m.rec.corrected.as_ref().expect("corrected histogram");
    let total = &m.rec.hist.total;
    let (c50, u50) = (
        corrected.value_at_quantile(0.5),
        total.value_at_quantile(0.5),
    );
    println!(
        "{} responses: p50 {u50} µs from the actual send, {c50} µs from the intended send time",
        m.complete()
    );
    assert!(c50 >= u50);
    assert!(
        c50 - u50 < 300,
        "requests left {} µs late (median)",
        c50 - u50
    );
}

#[test]
fn requests_unanswered_when_the_window_closes_count_with_their_wait() {
    // A server that reads every request and never answers: not one response comes back within
    // the window, and each request sent is still waiting when it closes. They count, at how
    // long they had waited, so the corrected percentiles see the server's silence.
    let s = TestServer::start();
    let mut cfg = rate_config(&s.url("/stall"), 100.0, 150, Duration::from_secs(1));
    cfg.load.timeout = Duration::from_secs(10);
    let m = run_within(Duration::from_secs(15), cfg);
    let unfinished = m
        .rec
        .unfinished
        .as_ref()
        .expect("a duration-bounded --rate run counts unfinished requests");
    println!(
        "{} started, {} complete, {} unfinished (waited {:.1} to {:.1} ms)",
        m.rec.started,
        m.complete(),
        unfinished.len(),
        ms(unfinished.min()),
        ms(unfinished.max())
    );
    assert_eq!(m.complete(), 0);
    assert!(
        (80..=110).contains(&m.rec.started),
        "100 requests/s for 1 s started {}",
        m.rec.started
    );
    assert_eq!(
        unfinished.len(),
        m.rec.started,
        "every request sent is unanswered"
    );
    assert!(
        unfinished.max() >= 900_000 && unfinished.max() <= 1_100_000,
        "the first request waited {:.1} ms by the end of a 1 s window",
        ms(unfinished.max())
    );
    let report = loadgen::json::LoadReport::from_measurement(&m);
    assert_eq!(report.started, m.rec.started);
    let p99 = report
        .corrected_percentile_counting_unfinished(990)
        .expect("histograms decode")
        .expect("requests were measured");
    assert!(
        p99 >= 900_000,
        "p99 counting the unanswered: {:.1} ms",
        ms(p99)
    );
}

#[test]
fn a_server_that_keeps_up_leaves_only_the_last_moments_requests_unanswered() {
    let s = TestServer::start();
    let cfg = rate_config(&s.url("/cl"), 400.0, 4, Duration::from_secs(1));
    let m = run_within(Duration::from_secs(15), cfg);
    let unfinished = m.rec.unfinished.as_ref().map_or(0, |h| h.len());
    println!(
        "{} started, {} complete, {unfinished} unfinished",
        m.rec.started,
        m.complete()
    );
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    assert_eq!(m.rec.started, m.complete() + unfinished);
    // At most one request per connection can be in flight when the window closes.
    assert!(unfinished <= 4, "{unfinished} unfinished");
}

#[test]
fn the_generators_own_lateness_is_kept_apart_from_waiting_for_a_connection() {
    // One connection to a server that takes 10 ms per request, asked for 200 requests/s: the
    // connection is busy when each send time comes, so requests leave late because the server
    // holds it, and none of that is the generator's own lateness.
    let s = TestServer::start();
    let cfg = rate_config(&s.url("/slow?ms=10"), 200.0, 1, Duration::from_secs(1));
    let m = run_within(Duration::from_secs(15), cfg);
    let corrected = m.rec.corrected.as_ref().expect("corrected histogram");
    let lag = m
        .rec
        .send_lag
        .as_ref()
        .expect("a --rate run measures its send lag");
    println!(
        "{} complete, corrected p50 {:.1} ms; {} requests left on a free connection",
        m.complete(),
        ms(corrected.value_at_quantile(0.5)),
        lag.len()
    );
    assert!(
        corrected.value_at_quantile(0.5) > 100_000,
        "the queue shows"
    );
    assert!(
        lag.len() <= 2,
        "{} requests counted as the generator's lateness",
        lag.len()
    );

    // With connections to spare, every request leaves from a free connection, on time.
    let cfg = rate_config(&s.url("/cl"), 200.0, 8, Duration::from_secs(1));
    let m = run_within(Duration::from_secs(15), cfg);
    let lag = m.rec.send_lag.as_ref().expect("send lag");
    println!(
        "{} started, {} left on a free connection, p50 lag {} µs",
        m.rec.started,
        lag.len(),
        lag.value_at_quantile(0.5)
    );
    // A machine busy with other work can delay a few responses past the next send time, so
    // that all eight connections are briefly taken: at most one request in twenty.
    assert!(
        (lag.len() + 2) * 20 >= m.rec.started * 19,
        "{} of {}",
        lag.len(),
        m.rec.started
    );
    let report = loadgen::json::LoadReport::from_measurement(&m);
    assert_eq!(
        report.send_lag.as_ref().map(|t| t.moments.count),
        Some(lag.len())
    );
}
