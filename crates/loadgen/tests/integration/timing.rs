//! Where response times come from, and how workers wait, against servers started in the test
//! (127.0.0.1, port 0): receive stamps time the server and leave the generator's own delays
//! out, the automatic wake-up policy naps only when it can collect responses in batches, and a
//! napping run counts every response exactly as a blocking one does.

use crate::support::{run_within, TestServer};
use loadgen::{Coalesce, LoadConfig, LoadSpec, Measurement, Target};
use std::time::Duration;

const HANG: Duration = Duration::from_secs(30);

fn keep_alive(url: &str, n: u64, c: u32) -> LoadConfig {
    let mut cfg = LoadConfig::new(
        Target::parse(url).expect("test URL parses"),
        LoadSpec::default(),
    );
    cfg.load.requests = Some(n);
    cfg.load.concurrency = c;
    cfg.load.keep_alive = true;
    cfg.load.timeout = Duration::from_secs(5);
    cfg
}

fn run_ok(cfg: LoadConfig) -> Measurement {
    let m = run_within(HANG, cfg).expect("the load run succeeds");
    assert_eq!(m.failed(), 0, "failures: {:?}", m.rec.failures);
    m
}

fn mean_ms(m: &Measurement) -> f64 {
    m.rec.moments.total.mean() / 1000.0
}

fn read_delay_mean_ms(m: &Measurement) -> f64 {
    let h = &m.rec.read_delay;
    h.mean() / 1000.0
}

/// Every response read well after it arrived (a fixed 20 ms nap at `-c 1`, a server that
/// answers after 2 ms): timed by its receive stamp it takes what the server took; timed when
/// read, as ab times it, it takes the nap too.
#[test]
fn receive_stamps_time_the_server_not_the_generators_sleep() {
    let s = TestServer::start();
    let nap = Coalesce::Nap(Duration::from_millis(20));

    let url = s.url("/slow?ms=2");
    let mut cfg = keep_alive(&url, 20, 1);
    cfg.load.coalesce = nap;
    let stamped = run_ok(cfg);
    assert_eq!(stamped.complete(), 20);
    assert!(stamped.settings.rx_stamps, "this host stamps received data");
    assert_eq!(
        stamped.rec.stamped(),
        20,
        "every response timed by its stamp"
    );
    assert!(stamped.rec.naps >= 10, "naps: {}", stamped.rec.naps);
    assert!(
        mean_ms(&stamped) < 10.0,
        "stamped mean Total {:.2} ms includes the generator's naps ({})",
        mean_ms(&stamped),
        stamped.rec.naps
    );
    assert!(
        read_delay_mean_ms(&stamped) > 10.0,
        "responses waited {:.2} ms on average for a 20 ms nap",
        read_delay_mean_ms(&stamped)
    );

    let mut cfg = keep_alive(&url, 20, 1);
    cfg.load.coalesce = nap;
    cfg.load.rx_stamps = false;
    let read_time = run_ok(cfg);
    assert!(!read_time.settings.rx_stamps);
    assert_eq!(read_time.rec.stamped(), 0);
    assert!(
        mean_ms(&read_time) > 10.0,
        "timed when read, Total {:.2} ms should include the 20 ms naps ({})",
        mean_ms(&read_time),
        read_time.rec.naps
    );
}

/// Stamps in every framing and with a new connection per request (each socket asks for them).
#[test]
fn every_framing_is_stamped_with_or_without_keep_alive() {
    let s = TestServer::start();
    for path in ["/cl", "/chunked", "/close"] {
        for keep in [false, true] {
            let mut cfg = keep_alive(&s.url(path), 50, 5);
            cfg.load.keep_alive = keep;
            let m = run_ok(cfg);
            assert_eq!(m.complete(), 50, "{path} keep-alive {keep}");
            assert_eq!(m.rec.stamped(), 50, "{path} keep-alive {keep}");
            assert_eq!(m.rec.read_delay.len(), 50, "{path} keep-alive {keep}");
        }
    }
}

/// One connection never naps under the automatic policy: a nap would hold back the only
/// request in flight.
#[test]
fn auto_blocks_with_one_connection() {
    let s = TestServer::start();
    let m = run_ok(keep_alive(&s.url("/cl"), 300, 1));
    assert_eq!(m.complete(), 300);
    assert_eq!(m.settings.coalesce, "auto");
    assert_eq!(m.rec.naps, 0);
}

/// 100 connections to a server that takes 2 ms per response: the automatic policy naps (a
/// 2 ms cycle allows 40 µs, and a response arrives every 20 µs or so), every response is
/// counted and stamped, and the run is not measurably slower than one woken by each response.
#[test]
fn auto_naps_with_many_responses_in_flight_and_loses_none() {
    let s = TestServer::start();
    let url = s.url("/slow?ms=2");
    let mut cfg = keep_alive(&url, 10_000, 100);
    cfg.threads = 1;
    let auto = run_ok(cfg);
    assert_eq!(auto.complete(), 10_000);
    assert_eq!(auto.rec.stamped(), 10_000);
    assert_eq!(auto.rec.keep_alive_requests, 10_000);
    assert!(auto.rec.naps > 0, "no nap in a 100-connection run");
    let p50 = auto.rec.hist.total.value_at_quantile(0.5);
    assert!(
        p50 >= 2_000,
        "median Total {p50} µs below the server's 2 ms"
    );

    let mut cfg = keep_alive(&url, 10_000, 100);
    cfg.threads = 1;
    cfg.load.coalesce = Coalesce::Off;
    let off = run_ok(cfg);
    assert_eq!(off.rec.naps, 0);
    assert!(
        auto.requests_per_second() > 0.75 * off.requests_per_second(),
        "napping: {:.0} requests/s, woken by each response: {:.0}",
        auto.requests_per_second(),
        off.requests_per_second()
    );
}
