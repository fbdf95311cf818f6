//! Deterministic results records for the tests: every load is built from a real
//! `loadgen::stats::Recorder` fed fixed samples, so the histograms, moments and percentiles in
//! the records are what the load generator itself would store.

#![allow(dead_code)]

use loadgen::json::LoadReport;
use loadgen::stats::{Measurement, Recorder, RunSettings, Sample, ServerInfo};
use report::capacity::*;
use report::record::*;
use std::time::Duration;

/// One load's shape.
pub struct LoadSpec {
    pub software: &'static str,
    pub path: &'static str,
    pub doc_len: u64,
    pub requests: u32,
    /// Typical waiting time, µs; samples vary deterministically around it.
    pub waiting_us: u32,
    pub elapsed_s: f64,
    pub failed_receive: u64,
}

pub fn load_report(spec: &LoadSpec) -> LoadReport {
    let mut rec = Recorder::new(true, false);
    let header_len = 180 + spec.software.len() as u64;
    for i in 0..spec.requests {
        let connect = 80 + (i * 13) % 70;
        // A long tail: every 50th request waits eight times as long.
        let jitter = (i * 37) % (spec.waiting_us / 2 + 1);
        let waiting = if i % 50 == 49 {
            spec.waiting_us * 8
        } else {
            spec.waiting_us / 2 + jitter
        };
        let total = connect + waiting + 40 + (i % 11) * 3;
        rec.record(
            Sample {
                connect,
                waiting,
                total,
            },
            None,
        );
        rec.completed += 1;
        rec.total_bytes += header_len + spec.doc_len;
        rec.body_bytes += spec.doc_len;
        rec.sent_bytes += 90;
    }
    for _ in 0..spec.failed_receive {
        rec.failures.add(loadgen::FailureKind::Receive);
    }
    let m = Measurement {
        server: ServerInfo {
            software: spec.software.to_string(),
            hostname: "127.0.0.1".to_string(),
            port: 8080,
            path: spec.path.to_string(),
            document_length: spec.doc_len,
            tls: None,
        },
        settings: RunSettings {
            concurrency: 10,
            keep_alive: false,
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
        elapsed: Duration::from_secs_f64(spec.elapsed_s),
        rec,
        client_cpu: Duration::from_millis(250),
        stopped_early: None,
        notes: Vec::new(),
    };
    LoadReport::from_measurement(&m)
}

/// How much one server's requests/s is scaled in a variant of the fixture.
#[derive(Clone, Copy)]
pub struct Slowdown {
    pub server: &'static str,
    /// Multiplies the elapsed time (1.43 ≈ a 30% drop in requests/s).
    pub factor: f64,
}

const SCENARIO: &str =
    "name = \"hello\"\nruns = 3\n\n[[server]]\nname = \"apache\"\n\n[[server]]\nname = \"nginx\"\n";

/// The fixture run: apache and nginx serve two documents over `rounds` rounds, tornado could
/// not be built. Rounds differ a little (±1.5%), nginx is about 1.66 times apache on the small
/// page, as in the first reference post.
pub fn fixture(rounds: u32, slow: Option<Slowdown>) -> RunRecord {
    RunRecord {
        schema_version: SCHEMA_VERSION,
        benchctl_version: "0.1.0".into(),
        benchctl_commit: Some("0123456789ab".into()),
        run_id: format!(
            "hello-20240501T120000Z-r{rounds}{}",
            if slow.is_some() { "-slowed" } else { "" }
        ),
        started_at: "2024-05-01T12:00:00Z".into(),
        finished_at: Some("2024-05-01T12:03:10Z".into()),
        status: RunStatus::Complete,
        scenario: ScenarioRecord::new("hello", "scenarios/hello.toml", SCENARIO),
        host: HostFacts {
            cpu_model: "AMD EPYC 7B13 64-Core Processor".into(),
            cores: 2,
            kernel: "6.1.0-26-amd64".into(),
            docker_version: Some("27.3.1".into()),
            system: None,
        },
        engines: Vec::new(),
        servers: fixture_servers(),
        loads: fixture_loads(rounds, slow),
        capacity: Vec::new(),
        overload: Vec::new(),
        against: None,
    }
}

/// The fixture's servers: apache and nginx available, tornado not.
fn fixture_servers() -> Vec<ServerRecord> {
    vec![
        ServerRecord {
            name: "apache".into(),
            kind: "apache".into(),
            image_tag: "benchctl/apache:2.4-3f2a".into(),
            image_id: Some(
                "sha256:3f2a9c1d0e8b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7".into(),
            ),
            server_header: Some("Apache/2.4.62 (Debian)".into()),
            status: ServerStatus::Available { ready_s: 1.25 },
            host: None,
        },
        ServerRecord {
            name: "nginx".into(),
            kind: "nginx".into(),
            image_tag: "benchctl/nginx:1.26-9b1c".into(),
            image_id: Some(
                "sha256:9b1c7d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c".into(),
            ),
            server_header: Some("nginx/1.26.3".into()),
            status: ServerStatus::Available { ready_s: 0.5 },
            host: None,
        },
        ServerRecord {
            name: "tornado".into(),
            kind: "tornado".into(),
            image_tag: "benchctl/tornado:6.4-77aa".into(),
            image_id: None,
            server_header: None,
            status: ServerStatus::Unavailable {
                reason: "image build failed: pip could not reach its index (<offline>)".into(),
            },
            host: None,
        },
    ]
}

/// The fixture's loads: each round, each document, apache then nginx.
fn fixture_loads(rounds: u32, slow: Option<Slowdown>) -> Vec<LoadRecord> {
    // (document, path, length, requests, apache waiting µs, apache elapsed s, nginx elapsed s)
    let docs = [
        ("hello", "/hello.html", 13u64, 300u32, 900u32, 0.30, 0.1807),
        ("robots.txt", "/robots.txt", 204, 200, 1500, 0.40, 0.25),
    ];
    let mut loads = Vec::new();
    for round in 0..rounds {
        // Drift shared by all servers of a round, as interleaving intends.
        let drift = [1.0, 1.015, 0.99, 1.005, 0.985][round as usize % 5];
        for &(doc, path, len, n, wait, apache_s, nginx_s) in &docs {
            for (server, software, elapsed, waiting, cpu, mem) in [
                (
                    "apache",
                    "Apache/2.4.62 (Debian)",
                    apache_s,
                    wait,
                    0.045,
                    41_000_000u64,
                ),
                (
                    "nginx",
                    "nginx/1.26.3",
                    nginx_s,
                    wait * 6 / 10,
                    0.0175,
                    9_500_000,
                ),
            ] {
                let factor = slow
                    .filter(|s| s.server == server)
                    .map_or(1.0, |s| s.factor);
                let report = load_report(&LoadSpec {
                    software,
                    path,
                    doc_len: len,
                    requests: n,
                    waiting_us: waiting,
                    elapsed_s: elapsed * drift * factor,
                    failed_receive: u64::from(
                        server == "apache" && doc == "robots.txt" && round == 1,
                    ),
                });
                loads.push(LoadRecord {
                    server: server.into(),
                    document: doc.into(),
                    url_path: path.into(),
                    round,
                    load: report,
                    server_usage: Some(Usage {
                        cpu_s: cpu * drift * factor,
                        peak_memory_bytes: mem + u64::from(round) * 100_000,
                        peak_connections: Some(100),
                    }),
                    client_bound: server == "nginx" && doc == "hello" && round == 0,
                    server_share: None,
                    protocol: None,
                    streams: None,
                    generators: Vec::new(),
                });
            }
        }
    }
    loads
}

/// Scales a load's elapsed time by `factor`, keeping its requests/s consistent with it.
pub fn stretch(l: &mut LoadRecord, factor: f64) {
    l.load.elapsed_s *= factor;
    l.load.requests_per_second = l.load.complete as f64 / l.load.elapsed_s;
    if let Some(u) = l.server_usage.as_mut() {
        u.cpu_s *= factor;
    }
}

/// An A/B run: the candidate's loads are `candidate`'s, the baseline side's those of the
/// fixture unslowed, each baseline load stretched by a round's `noise` (a few tenths of a
/// percent up to a few percent) so the paired ratios vary from round to round.
pub fn ab_record(rounds: u32, slow: Option<Slowdown>, noise: &[f64]) -> RunRecord {
    let mut candidate = fixture(rounds, slow);
    let mut base = fixture(rounds, None);
    for l in base.loads.iter_mut() {
        let n = noise[(l.round as usize + l.server.len()) % noise.len()];
        stretch(l, n);
    }
    // Judged as records made before the signed-rank interval were (see `signed_rank_ab`).
    let mut against = baseline_side(&base, "results/baseline/hello.json", AgainstStop::Decided);
    against.min_rounds = report::paired::MIN_ROUNDS;
    against.max_rounds = report::paired::DEFAULT_MAX_ROUNDS;
    candidate.against = Some(against);
    candidate
}

/// `base` as the baseline side of an A/B run at 5% with four gated metrics, judged by
/// Student's t (its rounds bounds to be set by the caller).
fn baseline_side(base: &RunRecord, path: &str, stop: AgainstStop) -> AgainstRecord {
    AgainstRecord {
        baseline_run_id: base.run_id.clone(),
        baseline_path: path.into(),
        threshold: 0.05,
        alpha: report::paired::ALPHA,
        min_rounds: 0,
        max_rounds: 0,
        interval: report::Interval::StudentT,
        looks: report::Looks::Growing,
        fresh_containers: true,
        together: false,
        baseline_generator: None,
        gates: 4,
        budget_s: 1200.0,
        slowed: Vec::new(),
        servers: base.servers.clone(),
        loads: base.loads.clone(),
        stop: Some(stop),
    }
}

/// One step of a capacity search, as the runner records it: `latency_us` for the p99,
/// `verdict` as judged.
pub fn capacity_step(rate: f64, latency_us: u64, verdict: StepVerdict) -> CapacityStep {
    let behind = verdict == StepVerdict::Generator;
    let started = if behind { rate * 1.6 } else { rate * 2.0 } as u64;
    CapacityStep {
        rate,
        connections: (4.0 * rate * 0.01).ceil() as u32 + 8,
        connections_capped: false,
        window_s: 2.0,
        started,
        answered: started - 3,
        unanswered: 3,
        errors: 0,
        generator_failures: 0,
        latency_us: Some(latency_us),
        send_lag_us: Some(120),
        read_delay_us: Some(60),
        client_cpu_share: if behind { 0.97 } else { 0.4 },
        verdict,
        wall_s: 2.5,
    }
}

/// The fixture with a capacity search at p99 <= 10ms on its first document: apache found at
/// 1,875 requests/s (1,969 failed), nginx beyond what the generator could send (at least
/// 8,000).
pub fn with_capacity(mut rec: RunRecord) -> RunRecord {
    use StepVerdict::*;
    let criteria = CapacityCriteria {
        percentile: 99.0,
        target_us: 10_000,
        max_error_share: 0.001,
        min_schedule_share: 0.99,
        step_s: 2.0,
        warmup_s: 0.5,
        max_steps: 12,
        budget_s: 40.0,
        precision: 0.05,
    };
    let apache = CapacityRecord {
        server: "apache".into(),
        document: "hello".into(),
        url_path: "/hello.html".into(),
        criteria: criteria.clone(),
        start: 500.0,
        start_from: StartFrom::ClosedLoop,
        steps: vec![
            capacity_step(500.0, 2_100, Pass),
            capacity_step(1000.0, 2_900, Pass),
            capacity_step(2000.0, 48_000, Latency),
            capacity_step(1500.0, 4_400, Pass),
            capacity_step(1750.0, 6_100, Pass),
            capacity_step(1875.0, 8_900, Pass),
            capacity_step(1937.5, 15_300, Latency),
        ],
        result: CapacityResult {
            kind: CapacityKind::Found,
            rate: Some(1875.0),
            failed_at: Some(1937.5),
            stop: StopReason::Converged,
        },
    };
    let nginx = CapacityRecord {
        server: "nginx".into(),
        document: "hello".into(),
        url_path: "/hello.html".into(),
        criteria,
        start: 1000.0,
        start_from: StartFrom::ClosedLoop,
        steps: vec![
            capacity_step(1000.0, 800, Pass),
            capacity_step(2000.0, 900, Pass),
            capacity_step(4000.0, 1_100, Pass),
            capacity_step(8000.0, 1_900, Pass),
            capacity_step(16000.0, 2_600, Generator),
        ],
        result: CapacityResult {
            kind: CapacityKind::AtLeast,
            rate: Some(12800.0),
            failed_at: None,
            stop: StopReason::GeneratorLimit,
        },
    };
    rec.capacity = vec![apache, nginx];
    rec
}

/// One load of `seconds` whole seconds in 1 s intervals, as the engine records it: each
/// second's requests and latencies (µs) from `per_second`, its timeline closed and judged by
/// the load generator's own steady-state test.
pub fn load_over_time(software: &str, per_second: &[(u32, u32)]) -> LoadReport {
    use loadgen::timeline::Timeline;
    use std::time::Instant;
    let origin = Instant::now();
    let mut rec = Recorder::new(false, false);
    rec.timeline = Some(Timeline::new(origin, Duration::from_secs(1)));
    for (s, &(n, latency)) in per_second.iter().enumerate() {
        for i in 0..n {
            // Spread over the second, latencies a little apart.
            let at = origin
                + Duration::from_secs(s as u64)
                + Duration::from_micros(u64::from(i) * 1_000_000 / u64::from(n));
            let total = latency + (i % 7) * latency / 50;
            let sample = Sample {
                connect: 0,
                waiting: total * 9 / 10,
                total,
            };
            rec.record(sample, None);
            rec.completed += 1;
            rec.total_bytes += 250;
            rec.body_bytes += 13;
            rec.sent_bytes += 90;
            rec.interval_response(at, &sample, None, 250, false);
        }
    }
    // Two failures in the third second, counted where they happened.
    for kind in [loadgen::FailureKind::Receive, loadgen::FailureKind::Timeout] {
        rec.failures.add(kind);
        rec.completed += 1;
        rec.interval_failure(origin + Duration::from_millis(2_500), kind, true);
    }
    let elapsed = Duration::from_secs(per_second.len() as u64);
    let notes = loadgen::steady::settle(&mut rec, elapsed)
        .into_iter()
        .collect();
    let m = Measurement {
        server: ServerInfo {
            software: software.to_string(),
            hostname: "127.0.0.1".to_string(),
            port: 8080,
            path: "/hello.html".to_string(),
            document_length: 13,
            tls: None,
        },
        settings: RunSettings {
            concurrency: 10,
            keep_alive: true,
            rate: None,
            threads: 1,
            http11: false,
            streams: None,
            http3: false,
            zero_rtt: false,
            head: false,
            rx_stamps: true,
            coalesce: "auto".into(),
            engine: "epoll".into(),
            repetitions: None,
        },
        elapsed,
        rec,
        client_cpu: Duration::from_millis(2_000),
        stopped_early: None,
        notes,
    };
    LoadReport::from_measurement(&m)
}

/// A run of 8 s loads with timelines: apache and nginx on one document, two rounds; nginx's
/// first round warms up over its first 2 s (fewer requests, slower), the others are steady.
pub fn fixture_over_time() -> RunRecord {
    let mut rec = fixture(1, None);
    rec.run_id = "hello-20240501T120000Z-over-time".into();
    rec.loads.clear();
    for round in 0..2 {
        for (server, software, rate, latency) in [
            ("apache", "Apache/2.4.62 (Debian)", 400u32, 2_000u32),
            ("nginx", "nginx/1.26.3", 700, 1_200),
        ] {
            let per_second: Vec<(u32, u32)> = (0..8)
                .map(|s| {
                    let wobble = [0, 6, 3, 9, 1, 7, 4, 2][s];
                    if server == "nginx" && round == 0 && s < 2 {
                        (rate / 2 + wobble, latency * 2)
                    } else {
                        (rate + wobble, latency)
                    }
                })
                .collect();
            loads_push(
                &mut rec,
                server,
                round,
                load_over_time(software, &per_second),
            );
        }
    }
    rec
}

fn loads_push(rec: &mut RunRecord, server: &str, round: u32, load: LoadReport) {
    rec.loads.push(LoadRecord {
        server: server.into(),
        document: "hello".into(),
        url_path: "/hello.html".into(),
        round,
        load,
        server_usage: Some(Usage {
            cpu_s: 1.5,
            peak_memory_bytes: 10_000_000,
            peak_connections: None,
        }),
        client_bound: false,
        server_share: None,
        protocol: None,
        streams: None,
        generators: Vec::new(),
    });
}

/// A `[[host]]` engine named srv1, as a run records what it said of itself.
pub fn srv1_engine() -> report::record::EngineRecord {
    report::record::EngineRecord {
        name: "srv1".into(),
        url: "tcp://10.0.0.5:2376".into(),
        version: "27.3.1".into(),
        api_version: "1.47".into(),
        cpus: 8,
        memory_bytes: 16 << 30,
        kernel: "6.1.0-26-amd64".into(),
        clock_offset_s: -0.0042,
        clock_uncertainty_s: 0.0011,
    }
}

/// [`ab_record`] judged as a run of today makes it: the signed-rank interval, the first look
/// after [`report::paired::FIRST_LOOK`] rounds.
pub fn signed_rank_ab(rounds: u32, slow: Option<Slowdown>, noise: &[f64]) -> RunRecord {
    let mut rec = ab_record(rounds, slow, noise);
    let ab = rec.against.as_mut().unwrap();
    ab.interval = report::Interval::SignedRank;
    ab.min_rounds = report::paired::first_look(ab.max_rounds);
    rec
}

/// The recorded run of `scenarios/quick.toml` (nginx and Apache, two documents, three rounds)
/// kept in the report crate's fixtures.
pub fn quick_fixture() -> RunRecord {
    use report::RecordIo as _;
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures/quick-3-runs.json");
    RunRecord::load(&p).unwrap()
}

/// Scales how fast a load went by `speed` (0.88: 12% fewer requests/s): its elapsed time, its
/// latencies and the server's CPU time per request with it.
pub fn slow_down(l: &mut LoadRecord, speed: f64) {
    stretch(l, 1.0 / speed);
    l.load.transfer_rate_kbps *= speed;
    let t = &mut l.load.timers.total;
    t.mean_us /= speed;
    for (_, v) in t.percentiles_us.iter_mut() {
        *v = (*v as f64 / speed).round() as u64;
    }
}

/// `nights` records of `scenarios/quick.toml`, a day apart from 2026-11-01, each from the
/// recorded run with every server and document's loads sped up or slowed by a night's noise
/// (within ±`noise`, the same for all rounds of a night), and `server`'s loads from night
/// `step_at` (0-based) on at `speed` times the speed. Night `ab_night`, when given, is an A/B
/// run whose baseline side is the night before's loads, each round off by a little noise.
pub fn nights(
    count: usize,
    noise: f64,
    server: &str,
    step_at: usize,
    speed: f64,
    ab_night: Option<usize>,
) -> Vec<RunRecord> {
    let base = quick_fixture();
    let mut out: Vec<RunRecord> = Vec::new();
    for night in 0..count {
        let mut rec = base.clone();
        rec.schema_version = SCHEMA_VERSION;
        rec.run_id = format!("quick-202611{:02}T031700-{night}", night + 1);
        rec.started_at = format!("2026-11-{:02}T03:17:00Z", night + 1);
        rec.finished_at = Some(format!("2026-11-{:02}T03:19:00Z", night + 1));
        rec.benchctl_commit = Some(format!("c0ffee{night:06}"));
        for (i, l) in rec.loads.iter_mut().enumerate() {
            // Deterministic, spread over ±noise: the same for every round of a night.
            let key = night * 7 + (i / 3) % 4 * 3 + l.server.len() + l.document.len();
            let jitter = ((key * 37 % 19) as f64 / 9.0 - 1.0) * noise;
            let mut speed_of = 1.0 + jitter;
            if l.server == server && night >= step_at {
                speed_of *= speed;
            }
            slow_down(l, speed_of);
        }
        if ab_night == Some(night) && night > 0 {
            let prev = out[night - 1].clone();
            let mut loads = prev.loads.clone();
            for l in loads.iter_mut() {
                stretch(l, 1.0 + 0.004 * (l.round as f64 - 1.0));
            }
            let mut against =
                baseline_side(&prev, "results/baseline/quick.json", AgainstStop::Rounds);
            against.loads = loads;
            against.min_rounds = 3;
            against.max_rounds = 3;
            rec.against = Some(against);
        }
        out.push(rec);
    }
    out
}

/// Ten nights of quick.toml (see [`nights`]) under `dir/<date>/quick.json`, as `just nightly`
/// keeps them: Apache 12% slower from 2026-11-06, an A/B night.
pub fn write_ten_nights(dir: &std::path::Path) {
    use report::RecordIo as _;
    for rec in nights(10, 0.02, "apache", 5, 0.88, Some(5)) {
        let night = dir.join(&rec.started_at[..10]);
        std::fs::create_dir_all(&night).unwrap();
        rec.write_atomic(&night.join("quick.json")).unwrap();
    }
}

/// One step of a staircase: `goodput` of `offered`, p99 `p99_ms`, its intervals' latencies.
fn overload_step(
    multiple: f64,
    capacity: f64,
    goodput: f64,
    p99_ms: u64,
    intervals_ms: &[u64],
) -> report::overload::OverloadStep {
    use report::overload::*;
    let offered = multiple * capacity;
    OverloadStep {
        multiple,
        offered,
        recovery: false,
        connections: 64,
        held_s: intervals_ms.len() as f64 * 0.5,
        window_s: 3.0,
        sent: offered,
        goodput,
        answered: (offered * 3.0) as u64,
        unanswered: 0,
        errors: OverloadErrors {
            status: ((offered - goodput).max(0.0) * 3.0) as u64,
            ..OverloadErrors::default()
        },
        p50_us: Some(p99_ms * 400),
        p99_us: Some(p99_ms * 1000),
        server_cpu_s: Some(1.5 * multiple.min(1.0)),
        peak_memory_bytes: Some(20 << 20),
        peak_connections: Some((p99_ms as f64 * offered / 1000.0).ceil() as u64 + 4),
        generator_limited: false,
        unsettled: false,
        points: intervals_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| TimePoint {
                start_s: i as f64 * 0.5,
                completed: offered,
                error_share: 0.0,
                latency_us: Some(ms * 1000),
            })
            .collect(),
    }
}

/// `rec` with a staircase past the capacity on its first document for Apache (which sheds
/// what it cannot serve, and is back at once) and nginx (whose goodput collapses, and which is
/// back after 1.5 s of the recovery phase).
pub fn with_overload(mut rec: RunRecord) -> RunRecord {
    use report::overload::*;
    let criteria = OverloadCriteria {
        percentile: 99.0,
        target_us: 100_000,
        multiples: vec![0.5, 1.0, 1.5, 2.0, 3.0],
        recovery_multiple: 0.5,
        step_s: 3.0,
        step_max_s: 6.0,
        recovery_s: 3.0,
        interval_s: 0.5,
        knee_share: KNEE_SHARE,
    };
    let calm = [2, 2, 3, 2, 2, 2];
    // A step past the knee does not settle at first: it is held again, to 6 s.
    let climbing = [40, 80, 120, 160, 200, 240, 250, 250, 260, 250, 250, 250];
    let staircase = |server: &str, capacity: f64, goodputs: [f64; 5], recovery: [u64; 6]| {
        let mut steps: Vec<OverloadStep> = criteria
            .multiples
            .iter()
            .zip(goodputs)
            .map(|(&m, g)| {
                let past = g < 0.95 * m * capacity;
                overload_step(
                    m,
                    capacity,
                    g,
                    if past { 250 } else { 3 },
                    if past { &climbing } else { &calm },
                )
            })
            .collect();
        let mut r = overload_step(0.5, capacity, capacity / 2.0, 40, &recovery);
        r.recovery = true;
        steps.push(r);
        OverloadRecord {
            server: server.into(),
            document: "hello".into(),
            url_path: "/hello.html".into(),
            criteria: criteria.clone(),
            capacity,
            capacity_from: CapacityFrom::Searched,
            verdict: verdict(&steps),
            steps,
        }
    };
    rec.overload = vec![
        staircase(
            "apache",
            1875.0,
            [937.0, 1870.0, 1880.0, 1860.0, 1850.0],
            [2, 2, 2, 3, 2, 2],
        ),
        staircase(
            "nginx",
            12800.0,
            [6400.0, 12750.0, 9000.0, 3000.0, 400.0],
            [900, 600, 300, 3, 2, 2],
        ),
    ];
    rec
}
