//! The paired comparison of A/B runs as stored: a slowed server is a regression on its gated
//! metric, the same images on both sides are judged within the threshold, client-bound rows
//! are gated on CPU per request, and the rendered verdict names its method and MDE.

use crate::common;

use common::Slowdown;
use report::paired::{compare_record, PairedVerdict};
use report::{Format, Metric, Renderer};

/// Round-to-round noise of the baseline side: within ±1.5%.
const NOISE: [f64; 5] = [1.0, 1.012, 0.991, 1.006, 0.985];

#[test]
fn an_ordinary_run_has_no_paired_comparison() {
    assert!(compare_record(&common::fixture(3, None)).is_none());
}

#[test]
fn a_twenty_percent_slower_server_is_a_regression_on_its_gated_metric() {
    // Apache's loads take 1.25 times as long: 0.8 times the requests/s.
    let slow = Slowdown {
        server: "apache",
        factor: 1.25,
    };
    let rec = common::ab_record(8, Some(slow), &NOISE);
    let cmp = compare_record(&rec).unwrap();
    assert_eq!(cmp.groups.len(), 4);
    assert_eq!(cmp.rounds, 8);
    let apache = cmp
        .groups
        .iter()
        .find(|g| g.server == "apache" && g.document == "hello")
        .unwrap();
    assert_eq!(apache.gate, Some(Metric::RequestsPerSecond));
    let gated = apache.gated().unwrap();
    let e = gated.estimate.unwrap();
    assert_eq!(gated.verdict, PairedVerdict::Worse);
    assert!(e.ratio > 0.76 && e.ratio < 0.84, "ratio {}", e.ratio);
    assert!(e.low < e.ratio && e.ratio < e.high && e.high < 0.95);
    assert!(e.mde > 0.0 && e.mde < 0.05, "mde {}", e.mde);
    assert!(cmp.has_regression());
    assert_eq!(cmp.regressions().count(), 2, "apache on both documents");
    // Apache's CPU per request did not change (its CPU time grew with its elapsed time):
    // reported, not gated.
    let cpu = apache
        .metrics
        .iter()
        .find(|m| m.metric == Metric::ServerCpuSPer10k)
        .unwrap();
    assert!(!cpu.gated);
}

#[test]
fn the_same_images_on_both_sides_are_within_the_threshold() {
    let rec = common::ab_record(8, None, &NOISE);
    let cmp = compare_record(&rec).unwrap();
    assert!(!cmp.has_regression());
    assert!(cmp.settled(), "every gated metric judged");
    for g in &cmp.groups {
        let m = g.gated().unwrap();
        assert_eq!(
            m.verdict,
            PairedVerdict::Within,
            "{} {}: {:?}",
            g.server,
            g.document,
            m
        );
    }
}

#[test]
fn a_client_bound_row_is_gated_on_cpu_per_request_and_its_latency_is_not() {
    let rec = common::ab_record(6, None, &NOISE);
    let cmp = compare_record(&rec).unwrap();
    // The fixture's nginx was client-bound on hello in round 0.
    let nginx = cmp
        .groups
        .iter()
        .find(|g| g.server == "nginx" && g.document == "hello")
        .unwrap();
    assert!(nginx.client_bound);
    assert_eq!(nginx.gate, Some(Metric::ServerCpuSPer10k));
    assert!(
        nginx
            .gate_reason
            .starts_with("gated on the server's CPU per request, exact from its cgroup: the generator set the pace in"),
        "{}",
        nginx.gate_reason
    );
    for m in &nginx.metrics {
        if matches!(m.metric, Metric::MeanLatencyMs | Metric::P99LatencyMs) {
            assert!(!m.gated);
            assert!(m.note.as_deref().unwrap().starts_with("client-bound"));
        }
    }
}

#[test]
fn pairs_loaded_together_keep_the_requests_per_second_gate_while_few_were_client_bound() {
    let mut rec = common::ab_record(6, None, &NOISE);
    rec.against.as_mut().unwrap().together = true;
    let gate = |rec: &report::RunRecord| {
        let cmp = compare_record(rec).unwrap();
        let g = cmp
            .groups
            .iter()
            .find(|g| g.server == "nginx" && g.document == "hello")
            .unwrap()
            .clone();
        (g.gate, g.gate_reason, cmp.method)
    };
    // Two client-bound loads of twelve (round 0): a pair the generator paced can only pull the ratio
    // towards 1, so requests/s stays the gate.
    let (g, why, method) = gate(&rec);
    assert_eq!(g, Some(Metric::RequestsPerSecond), "{why}");
    assert!(why.contains("set the pace in only 2 of 12 loads"), "{why}");
    assert!(method.contains("both sides at once"), "{method}");
    // Five of twelve: more than a quarter, and CPU per request is gated.
    let a = rec.against.as_mut().unwrap();
    for l in a
        .loads
        .iter_mut()
        .filter(|l| l.server == "nginx" && l.document == "hello")
    {
        if l.round < 4 {
            l.client_bound = true;
        }
    }
    assert_eq!(gate(&rec).0, Some(Metric::ServerCpuSPer10k));
}

#[test]
fn too_few_rounds_to_judge_are_not_judged_never_same() {
    // Two rounds with 10% noise between them: no interval can be within 5%.
    let rec = common::ab_record(2, None, &[1.0, 1.10]);
    let cmp = compare_record(&rec).unwrap();
    assert!(!cmp.has_regression());
    assert!(!cmp.settled());
    let g = &cmp.groups[0];
    let m = g.gated().unwrap();
    assert_eq!(m.verdict, PairedVerdict::NotJudged);
    assert!(m.note.as_deref().unwrap().contains("too noisy"), "{m:?}");
}

#[test]
fn the_rendered_verdict_names_its_method_and_each_metrics_mde() {
    let slow = Slowdown {
        server: "apache",
        factor: 1.25,
    };
    let rec = common::ab_record(8, Some(slow), &NOISE);
    let cmp = compare_record(&rec).unwrap();
    let text = Renderer::embedded()
        .render_paired(&cmp, Format::Text)
        .unwrap();
    assert!(
        text.contains("Student's t-interval on the mean log ratio"),
        "{text}"
    );
    assert!(text.contains("Bonferroni"), "{text}");
    assert!(text.contains("MDE"), "{text}");
    assert!(text.contains("WORSE beyond 5.0%"), "{text}");
    assert!(
        text.contains("REGRESSION beyond 5.0%: apache / hello requests/s"),
        "{text}"
    );
    let md = Renderer::embedded()
        .render_paired(&cmp, Format::Markdown)
        .unwrap();
    assert!(md.contains("| server | document | metric | gate |"), "{md}");
    assert!(md.contains("**WORSE beyond 5.0%**"), "{md}");
    // Which metric each server and document is gated on, and why.
    assert!(
        text.contains(
            "Gate: apache / hello: gated on requests/s: the generator kept up in every load."
        ),
        "{text}"
    );
    assert!(
        md.contains("- **Gate:** apache / hello: gated on requests/s"),
        "{md}"
    );
    let json = serde_json::to_value(&cmp).unwrap();
    assert_eq!(json["groups"][0]["metrics"][0]["verdict"], "worse");
    assert!(json["groups"][0]["metrics"][0]["estimate"]["mde"].is_number());
}

#[test]
fn a_run_of_today_is_judged_by_the_signed_rank_interval() {
    let slow = Slowdown {
        server: "apache",
        factor: 1.25,
    };
    let rec = common::signed_rank_ab(12, Some(slow), &NOISE);
    let cmp = compare_record(&rec).unwrap();
    assert_eq!(cmp.interval, report::Interval::SignedRank);
    let apache = cmp
        .groups
        .iter()
        .find(|g| g.server == "apache" && g.document == "hello")
        .unwrap();
    let gated = apache.gated().unwrap();
    let e = gated.estimate.unwrap();
    assert_eq!(gated.verdict, PairedVerdict::Worse, "{gated:?}");
    assert!(e.ratio > 0.76 && e.ratio < 0.84, "ratio {}", e.ratio);
    assert!(
        e.low < e.ratio && e.ratio < e.high && e.high < 0.95,
        "{e:?}"
    );
    assert!(e.mde.is_finite() && e.mde > 0.0, "{e:?}");
    assert_eq!(cmp.regressions().count(), 2, "apache on both documents");
    let text = Renderer::embedded()
        .render_paired(&cmp, Format::Text)
        .unwrap();
    assert!(text.contains("Hodges-Lehmann"), "{text}");
    assert!(text.contains("signed-rank"), "{text}");

    // Eight rounds cannot reach the level of a run with eight looks and four gated metrics:
    // not judged, and the note says how many rounds it takes.
    let few = common::signed_rank_ab(8, Some(slow), &NOISE);
    let cmp = compare_record(&few).unwrap();
    assert!(!cmp.has_regression());
    let m = cmp.groups[0].gated().unwrap();
    assert_eq!(m.verdict, PairedVerdict::NotJudged);
    let note = m.note.as_deref().unwrap();
    assert!(
        note.starts_with("8 rounds cannot make a signed-rank interval at")
            && note.contains("it needs at least"),
        "{note}"
    );
    // The table shows no interval and no MDE rather than 0 to infinity.
    let text = Renderer::embedded()
        .render_paired(&cmp, Format::Text)
        .unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("nginx ") && l.contains("requests/s"))
        .unwrap();
    assert!(!row.contains("inf") && !row.contains("0.000-"), "{row}");
}
