use super::*;
use scenario::{CapacityTarget, Percentile};

const STEP: Duration = Duration::from_millis(2500);

fn criteria() -> CapacityCriteria {
    criteria_for(&spec())
}

fn criteria_for(s: &CapacitySpec) -> CapacityCriteria {
    super::criteria(s)
}

fn spec() -> CapacitySpec {
    CapacitySpec::new(CapacityTarget {
        percentile: Percentile::P99,
        latency: Duration::from_millis(10),
    })
}

/// A step as a model server measures it: below `knee` requests/s the p99 is 2 ms, above it
/// queueing makes it 200 ms; the generator sends up to `generator_max`, on its whole CPU,
/// falling behind its schedule by as much (which the latency shows too).
fn model(rate: f64, knee: f64, generator_max: f64) -> CapacityStep {
    let sent = rate.min(generator_max);
    let mut s = CapacityStep {
        rate,
        connections: connections_for(rate, Duration::from_millis(10)),
        connections_capped: false,
        window_s: 2.0,
        started: (sent * 2.0) as u64,
        answered: (sent * 2.0) as u64,
        unanswered: 0,
        errors: 0,
        generator_failures: 0,
        latency_us: Some(if rate <= knee && sent == rate {
            2_000
        } else {
            200_000
        }),
        send_lag_us: Some(50),
        read_delay_us: Some(30),
        client_cpu_share: if sent < rate { 1.0 } else { 0.5 },
        verdict: StepVerdict::Pass,
        wall_s: STEP.as_secs_f64(),
    };
    s.verdict = judge(&s, &criteria());
    s
}

fn run(start: f64, knee: f64, generator_max: f64) -> (CapacityResult, Vec<CapacityStep>) {
    search(
        Search::new(start, criteria()),
        |_| STEP,
        |r| Some(model(r, knee, generator_max)),
    )
    .unwrap()
}

fn rates(steps: &[CapacityStep]) -> Vec<f64> {
    steps.iter().map(|s| s.rate).collect()
}

#[test]
fn it_grows_then_bisects_to_within_five_percent_below_the_knee() {
    let (r, steps) = run(1000.0, 5000.0, f64::INFINITY);
    assert_eq!(
        rates(&steps),
        [1000.0, 2000.0, 4000.0, 8000.0, 6000.0, 5000.0, 5500.0, 5250.0]
    );
    assert_eq!(r.kind, CapacityKind::Found);
    assert_eq!(r.stop, StopReason::Converged);
    assert_eq!((r.rate, r.failed_at), (Some(5000.0), Some(5250.0)));
}

#[test]
fn it_always_lands_within_the_precision_below_the_knee() {
    // From a start well below, near, or well above the knee.
    for knee in [137.0, 999.0, 1000.0, 4321.0, 12_345.0, 80_000.0] {
        for start in [knee * 0.15, knee * 0.9, knee * 3.0] {
            let (r, steps) = run(start, knee, f64::INFINITY);
            let found = r.rate.unwrap();
            assert_eq!(r.kind, CapacityKind::Found, "knee {knee} start {start}");
            assert!(
                found <= knee && found >= knee / (1.0 + PRECISION),
                "knee {knee} start {start}: found {found}"
            );
            assert!(steps.len() <= 10, "{} steps", steps.len());
        }
    }
}

#[test]
fn a_first_rate_that_fails_halves_until_one_passes() {
    let (r, steps) = run(8000.0, 700.0, f64::INFINITY);
    assert_eq!(rates(&steps)[..5], [8000.0, 4000.0, 2000.0, 1000.0, 500.0]);
    assert_eq!(r.kind, CapacityKind::Found);
    let found = r.rate.unwrap();
    assert!((700.0 / 1.05..=700.0).contains(&found), "{found}");
}

#[test]
fn a_server_that_never_passes_ends_below_the_lowest_rate_or_out_of_steps() {
    let (r, steps) = run(8.0, 0.0, f64::INFINITY);
    assert_eq!(rates(&steps), [8.0, 4.0, 2.0, 1.0]);
    assert_eq!(r.kind, CapacityKind::NonePassed);
    assert_eq!((r.rate, r.stop), (None, StopReason::MinimumRate));
    assert_eq!(r.failed_at, Some(1.0));
    let (r, steps) = run(100_000.0, 0.0, f64::INFINITY);
    assert_eq!(steps.len(), 12);
    assert_eq!(
        (r.kind, r.stop),
        (CapacityKind::NonePassed, StopReason::MaxSteps)
    );
}

#[test]
fn a_generator_that_cannot_keep_up_makes_the_result_a_lower_bound() {
    // The server would pass up to 50,000 requests/s; the generator sends 10,000 at most.
    // The search closes in on the generator's limit, from below.
    let (r, steps) = run(2500.0, 50_000.0, 10_000.0);
    assert_eq!(rates(&steps)[..4], [2500.0, 5000.0, 10_000.0, 20_000.0]);
    assert_eq!(steps[3].verdict, StepVerdict::Generator);
    assert_eq!(r.kind, CapacityKind::AtLeast);
    assert_eq!(r.stop, StopReason::GeneratorLimit);
    assert_eq!(r.rate, Some(10_000.0));
    assert_eq!(r.failed_at, None);
    // Where the generator's limit lies between two doublings, the bound rises to it.
    let (r, steps) = run(2500.0, 50_000.0, 7000.0);
    assert_eq!(
        (r.kind, r.stop),
        (CapacityKind::AtLeast, StopReason::GeneratorLimit)
    );
    let bound = r.rate.unwrap();
    assert!(
        (7000.0 / 1.05..=7000.0).contains(&bound),
        "{bound}: {:?}",
        rates(&steps)
    );
}

#[test]
fn at_a_generator_limit_the_rate_it_reached_counts_when_the_server_passed_there() {
    let c = criteria();
    let mut s = Search::new(4000.0, c.clone());
    assert_eq!(s.next(|_| STEP), Next::Measure(4000.0));
    s.record(model(4000.0, 1e9, 1e9));
    assert_eq!(s.next(|_| STEP), Next::Measure(8000.0));
    // The generator sent 6,800 of the 8,000 asked, and the server met the target at them.
    let mut step = model(8000.0, 1e9, 6800.0);
    step.client_cpu_share = 0.5;
    step.latency_us = Some(2_000);
    step.verdict = judge(&step, &c);
    assert_eq!(step.verdict, StepVerdict::Generator);
    s.record(step);
    // 6,800 passed; 8,000 is beyond the generator: halfway between them next.
    assert_eq!(s.next(|_| STEP), Next::Measure(7400.0));
    s.record(model(7400.0, 1e9, 6800.0));
    // 7,100 is within 5% of 6,800 and the generator cannot keep 7,400.
    assert_eq!(s.next(|_| STEP), Next::Measure(7100.0));
    s.record(model(7100.0, 1e9, 6800.0));
    let Next::Done(r) = s.next(|_| STEP) else {
        panic!("the search has closed in")
    };
    assert_eq!(
        (r.kind, r.rate, r.stop),
        (
            CapacityKind::AtLeast,
            Some(6800.0),
            StopReason::GeneratorLimit
        )
    );
    // Asking again gives the same answer.
    assert_eq!(s.next(|_| STEP), Next::Done(r));
}

#[test]
fn a_first_rate_the_generator_cannot_keep_halves_until_it_can() {
    // The generator keeps up to 3,000 requests/s; the server would pass up to 50,000.
    let (r, steps) = run(16_000.0, 50_000.0, 3000.0);
    assert_eq!(rates(&steps)[..4], [16_000.0, 8000.0, 4000.0, 2000.0]);
    assert_eq!(
        steps[..4].iter().map(|s| s.verdict).collect::<Vec<_>>(),
        [
            StepVerdict::Generator,
            StepVerdict::Generator,
            StepVerdict::Generator,
            StepVerdict::Pass
        ]
    );
    // Then it closes in on the generator's limit from below.
    assert_eq!(
        (r.kind, r.stop),
        (CapacityKind::AtLeast, StopReason::GeneratorLimit)
    );
    let bound = r.rate.unwrap();
    assert!(
        (3000.0 / 1.05..=3000.0).contains(&bound),
        "{bound}: {:?}",
        rates(&steps)
    );
    // A failure below the generator's limit is the server's, and the search goes on.
    let (r, _) = run(16_000.0, 1200.0, 3000.0);
    assert_eq!(
        (r.kind, r.stop),
        (CapacityKind::Found, StopReason::Converged)
    );
    let found = r.rate.unwrap();
    assert!((1200.0 / 1.05..=1200.0).contains(&found), "{found}");
}

#[test]
fn the_budget_and_the_step_count_bound_the_search() {
    let mut sp = spec();
    sp.budget = Duration::from_secs(10);
    let c = criteria_for(&sp);
    // Four steps of 2.5 s fit in 10 s; the fifth would not.
    let (r, steps) = search(
        Search::new(1000.0, c.clone()),
        |_| STEP,
        |rate| Some(model(rate, 1e9, 1e9)),
    )
    .unwrap();
    assert_eq!(steps.len(), 4);
    assert_eq!(
        (r.kind, r.stop),
        (CapacityKind::AtLeast, StopReason::Budget)
    );
    assert_eq!(r.rate, Some(8000.0));
    // A step that overran counts at what it took.
    let mut s = Search::new(1000.0, c);
    let mut slow = model(1000.0, 1e9, 1e9);
    slow.wall_s = 9.0;
    s.record(slow);
    assert_eq!(
        s.next(|_| STEP),
        Next::Done(CapacityResult {
            kind: CapacityKind::AtLeast,
            rate: Some(1000.0),
            failed_at: None,
            stop: StopReason::Budget
        })
    );
    // Unbounded growth stops at max_steps.
    let mut sp = spec();
    sp.max_steps = 3;
    let (r, steps) = search(
        Search::new(1000.0, criteria_for(&sp)),
        |_| STEP,
        |rate| Some(model(rate, 1e9, 1e9)),
    )
    .unwrap();
    assert_eq!(rates(&steps), [1000.0, 2000.0, 4000.0]);
    assert_eq!(
        (r.kind, r.stop, r.rate),
        (CapacityKind::AtLeast, StopReason::MaxSteps, Some(4000.0))
    );
    // Bisection cut short keeps what it knew.
    let mut sp = spec();
    sp.max_steps = 5;
    let (r, _) = search(
        Search::new(1000.0, criteria_for(&sp)),
        |_| STEP,
        |rate| Some(model(rate, 5000.0, 1e9)),
    )
    .unwrap();
    assert_eq!(
        (r.kind, r.rate, r.failed_at),
        (CapacityKind::AtLeast, Some(4000.0), Some(6000.0))
    );
}

#[test]
fn a_search_abandoned_by_its_measure_returns_nothing() {
    let mut n = 0;
    let out = search(
        Search::new(1000.0, criteria()),
        |_| STEP,
        |r| {
            n += 1;
            (n < 3).then(|| model(r, 1e9, 1e9))
        },
    );
    assert!(out.is_none());
}

fn observed() -> CapacityStep {
    CapacityStep {
        rate: 1000.0,
        connections: 48,
        connections_capped: false,
        window_s: 2.0,
        started: 2000,
        answered: 1998,
        unanswered: 2,
        errors: 0,
        generator_failures: 0,
        latency_us: Some(4_000),
        send_lag_us: Some(80),
        read_delay_us: Some(40),
        client_cpu_share: 0.3,
        verdict: StepVerdict::Pass,
        wall_s: 2.5,
    }
}

#[test]
fn judging_a_step() {
    let c = criteria();
    let s = observed();
    assert_eq!(judge(&s, &c), StepVerdict::Pass);
    // At the target exactly still passes; a microsecond over does not.
    let at = CapacityStep {
        latency_us: Some(10_000),
        ..s.clone()
    };
    assert_eq!(judge(&at, &c), StepVerdict::Pass);
    let over = CapacityStep {
        latency_us: Some(10_001),
        ..s.clone()
    };
    assert_eq!(judge(&over, &c), StepVerdict::Latency);
    let silent = CapacityStep {
        latency_us: None,
        ..s.clone()
    };
    assert_eq!(judge(&silent, &c), StepVerdict::Latency);
    // 0.1% of 2000 requests is 2: one error passes, two fail.
    let one = CapacityStep {
        errors: 1,
        ..s.clone()
    };
    assert_eq!(judge(&one, &c), StepVerdict::Pass);
    let two = CapacityStep {
        errors: 2,
        ..s.clone()
    };
    assert_eq!(judge(&two, &c), StepVerdict::Errors);
    // The generator sent 98.5% of the rate: the server's answer is unknown at the rate.
    let behind = CapacityStep {
        started: 1970,
        ..s.clone()
    };
    assert_eq!(judge(&behind, &c), StepVerdict::Generator);
    // Requests the generator could not open a connection for were not sent.
    let no_ports = CapacityStep {
        generator_failures: 40,
        ..s.clone()
    };
    assert_eq!(judge(&no_ports, &c), StepVerdict::Generator);
    // Slow, and behind with means to spare: it waited for connections the server held.
    let queued = CapacityStep {
        started: 1500,
        latency_us: Some(400_000),
        ..s.clone()
    };
    assert_eq!(judge(&queued, &c), StepVerdict::Latency);
    // Slow, and behind on its whole CPU: its own lateness is in the latency.
    let saturated = CapacityStep {
        client_cpu_share: 0.98,
        ..queued.clone()
    };
    assert_eq!(judge(&saturated, &c), StepVerdict::Generator);
    let capped = CapacityStep {
        connections_capped: true,
        ..queued
    };
    assert_eq!(judge(&capped, &c), StepVerdict::Generator);
    // Sending on time but late by itself, 6 ms at p99 of a 10 ms target: the server's
    // miss cannot be told from the generator's.
    let late = CapacityStep {
        latency_us: Some(14_000),
        send_lag_us: Some(6_000),
        ..s.clone()
    };
    assert_eq!(judge(&late, &c), StepVerdict::Generator);
    let a_little_late = CapacityStep {
        send_lag_us: Some(5_000),
        ..late.clone()
    };
    assert_eq!(judge(&a_little_late, &c), StepVerdict::Latency);
    // Late reading responses that had arrived: the connections it kept busy delayed the
    // requests after them.
    let slow_reader = CapacityStep {
        send_lag_us: None,
        read_delay_us: Some(9_000),
        ..late
    };
    assert_eq!(judge(&slow_reader, &c), StepVerdict::Generator);
    // Late, or on its whole CPU, but within the target and on schedule: a pass is a pass.
    let busy = CapacityStep {
        client_cpu_share: 0.97,
        send_lag_us: Some(6_000),
        ..s
    };
    assert_eq!(judge(&busy, &c), StepVerdict::Pass);
}

#[test]
fn steps_hold_the_documents_load_at_the_rate_with_connections_to_spare() {
    let sp = spec();
    let base = LoadSpec {
        requests: Some(2000),
        concurrency: 20,
        keep_alive: true,
        min_duration: Some(Duration::from_secs(3)),
        ..LoadSpec::default()
    };
    let (load, capped) = step_load(&base, &sp, 5000.0, 10_000);
    assert!(!capped);
    // 5,000 requests/s at 10 ms: 50 in flight, four times that and 8 spare.
    assert_eq!(load.concurrency, 208);
    assert_eq!(
        (load.requests, load.duration, load.warmup, load.rate),
        (None, Some(sp.step), sp.warmup, Some(5000.0))
    );
    // The posts' `-n 1000` repeated for 3 s does not carry over to a step held for a time.
    assert_eq!(load.min_duration, None);
    let target = loadgen::Target::parse("http://127.0.0.1:8080/").unwrap();
    loadgen::LoadConfig::new(target, load.clone())
        .validate()
        .expect("a step's load is one the generator takes");
    assert!(load.keep_alive && load.timeout == base.timeout);
    let (load, capped) = step_load(&base, &sp, 5000.0, 100);
    assert!(capped);
    assert_eq!(load.concurrency, 100);
    // Too low a rate for 100 requests in 2 s: the window grows.
    assert_eq!(window(&sp, 20.0), Duration::from_secs(5));
    assert_eq!(step_cost(&sp, 20.0), Duration::from_millis(5500));
    assert_eq!(window(&sp, 1000.0), sp.step);
}
