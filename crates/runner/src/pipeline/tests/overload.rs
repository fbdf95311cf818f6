//! Past the knee against servers of known behaviour (the fake fleet's [`Behaviour`]), each
//! with a capacity of 400 requests/s: one sheds what it cannot serve with a quick 503, one
//! queues it without bound, one sheds and then stays slow for 2 s. The staircase finds each
//! knee, tells collapse from shedding, and times the recovery; a step that has not settled is
//! held again, up to the longest a step may be.

use super::*;
use crate::fleet::fake::Behaviour;
use std::time::Duration;

const RATE: f64 = 400.0;
const SLOW_FOR: Duration = Duration::from_secs(2);

const KNOWN: &str = r#"
name = "overload"
runs = 1
[load]
requests = 100
concurrency = 2
keep_alive = true
http = "1.1"
timeout = "5s"
[[server]]
name = "shed"
kind = "web"
[[server]]
name = "queue"
kind = "web"
[[server]]
name = "slow"
kind = "web"
[[document]]
name = "hello"
path = "/"
generate = "hello"
[overload]
capacity = 400
step = "1s"
step_max = "2s"
recovery = "4s"
interval = "100ms"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_staircase_tells_shedding_from_collapse_and_times_the_recovery() {
    let setup = Setup::new(KNOWN);
    let script = Script {
        behaviour: [
            ("shed", Behaviour::Sheds { rate: RATE }),
            ("queue", Behaviour::Queues { rate: RATE }),
            (
                "slow",
                Behaviour::SlowAfter {
                    rate: RATE,
                    slow: Duration::from_millis(300),
                    slow_for: SLOW_FOR,
                },
            ),
        ]
        .into_iter()
        .map(|(n, b)| (n.to_string(), b))
        .collect(),
        ..Script::new()
    };
    let ran = run(&setup, script).await;
    assert!(complete(&ran), "{:?}", ran.record().status);
    ran.left_nothing();
    ran.saved_whole(&setup);
    let stairs = &ran.record().overload;
    assert_eq!(stairs.len(), 3, "{:?}", ran.events);
    let of = |name: &str| stairs.iter().find(|o| o.server == name).unwrap();
    let describe = |name: &str| {
        let o = of(name);
        let steps: Vec<String> = o
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{}x: held {:.1} s, offered {:.0} sent {:.0} goodput {:.0} p99 {:?} errors {:?}{}",
                    s.multiple,
                    s.held_s,
                    s.offered,
                    s.sent,
                    s.goodput,
                    s.p99_us,
                    s.errors,
                    if s.unsettled { ", unsettled" } else { "" }
                )
            })
            .collect();
        format!("{name}: {:?}\n{}", o.verdict, steps.join("\n"))
    };
    for name in ["shed", "queue", "slow"] {
        let o = of(name);
        assert_eq!(o.steps.len(), 6, "{}", describe(name));
        assert!(o.steps[5].recovery);
        // The knee is past the capacity, at the first step above it, and the most the server
        // gave is its known rate, within 10%.
        assert_eq!(o.verdict.knee, Some(1.5), "{}", describe(name));
        let peak = o.verdict.peak_goodput;
        assert!(
            (peak - RATE).abs() <= 0.1 * RATE,
            "peak goodput {peak:.0}: {}",
            describe(name)
        );
        assert!(!o.verdict.generator_limited, "{}", describe(name));
        // Held once (1 s), or twice when the first second had not settled, never longer; a
        // step still unsettled was held as long as it may be.
        for s in &o.steps[..5] {
            assert!(
                (0.9..=2.2).contains(&s.held_s) && s.window_s <= 1.1,
                "{}",
                describe(name)
            );
            assert!(!s.unsettled || s.held_s >= 1.9, "{}", describe(name));
        }
    }
    // A queue growing without bound never settles: its top step is held to the longest.
    assert!(of("queue").steps[4].held_s >= 1.9, "{}", describe("queue"));
    // Shedding keeps giving what it can; a queue without bound gives less the more it is asked.
    assert_eq!(
        of("shed").verdict.collapse,
        Some(false),
        "{}",
        describe("shed")
    );
    assert!(of("shed").steps[4].errors.status > 0);
    assert_eq!(
        of("queue").verdict.collapse,
        Some(true),
        "{}",
        describe("queue")
    );
    // Recovery: the shedding server at once; the slow one after the 2 s it stays slow.
    let shed = of("shed").verdict.recovery_s.expect("recovered");
    assert!(shed <= 0.5, "{shed} s: {}", describe("shed"));
    let slow = of("slow").verdict.recovery_s.expect("recovered");
    assert!(
        (slow - SLOW_FOR.as_secs_f64()).abs() <= 1.0,
        "{slow} s: {}",
        describe("slow")
    );
    assert_eq!(ran.lines("overload done").len(), 3, "{:?}", ran.events);
}
