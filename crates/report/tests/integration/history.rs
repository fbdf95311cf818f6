//! The history of many nights: ten records of `scenarios/quick.toml` made from the recorded run
//! with a known step in one server's figures, read back from a folder laid out as `just nightly`
//! keeps them, and the change point found where the step is.

use crate::common;
use report::analysis::history::{history, History};
use report::paired::PairedVerdict;
use report::stats::Metric;
use report::{Format, RecordIo as _, Renderer};
use std::path::Path;

fn read(dir: &Path) -> History {
    let found = report::record::read_records(dir).unwrap();
    history(
        &dir.display().to_string(),
        found.records,
        found.skipped,
        0.05,
    )
}

#[test]
fn the_step_is_named_at_its_night_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    common::write_ten_nights(dir.path());
    // Things a nightly folder also holds: not records, listed as not read.
    std::fs::write(dir.path().join("2026-11-03/summary.md"), "# night\n").unwrap();
    std::fs::write(dir.path().join("2026-11-03/bencher.json"), "{\"a\": 1}").unwrap();
    let h = read(dir.path());
    assert_eq!(h.scenarios.len(), 1);
    let s = &h.scenarios[0];
    assert_eq!(s.name, "quick");
    assert_eq!(s.nights.len(), 10);
    assert_eq!(s.nights[5].commit.as_deref(), Some("c0ffee000005"));
    assert_eq!(h.skipped.len(), 1, "{:?}", h.skipped);
    assert!(h.skipped[0].path.ends_with("bencher.json"));

    // Apache's requests/s of both documents changed at night 6, for the worse, by about 12%;
    // nothing of nginx's changed.
    for doc in ["hello", "html"] {
        let c = s
            .changes
            .iter()
            .find(|c| {
                c.server == "apache" && c.document == doc && c.metric == Metric::RequestsPerSecond
            })
            .unwrap_or_else(|| panic!("no change of apache/{doc} requests/s: {:?}", s.changes));
        assert_eq!(c.change.night, 5, "{c:?}");
        assert!(c.change.worse);
        assert!((c.change.change + 0.12).abs() < 0.03, "{c:?}");
    }
    for c in &s.changes {
        assert_eq!(c.server, "apache", "{c:?}");
        assert_eq!(c.change.night, 5, "{c:?}");
    }

    // Night 6 is an A/B run: a regression, Apache's gated figure worse.
    assert!(s.nights[5].ab && s.nights[5].regression);
    assert!(!s.nights[4].ab);
    let doc = &s.documents[0];
    let apache_rps = doc
        .series
        .iter()
        .find(|x| x.server == "apache" && x.metric == Metric::RequestsPerSecond)
        .unwrap();
    let mark = apache_rps.points[5]
        .as_ref()
        .unwrap()
        .verdict
        .as_ref()
        .unwrap();
    assert_eq!(mark.verdict, PairedVerdict::Worse);
    assert!(mark.gated);
    assert!(apache_rps.points[4].as_ref().unwrap().verdict.is_none());
}

#[test]
fn a_flat_history_names_no_change_and_partial_records_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    for mut rec in common::nights(8, 0.03, "apache", 99, 1.0, None) {
        if rec.started_at.starts_with("2026-11-08") {
            rec.status = report::RunStatus::Running;
        }
        rec.write_atomic(&dir.path().join(format!("{}.json", rec.run_id)))
            .unwrap();
    }
    // The same run twice (a copy under another name) counts once.
    std::fs::copy(
        dir.path().join("quick-20261101T031700-0.json"),
        dir.path().join("zz-copy.json"),
    )
    .unwrap();
    let h = read(dir.path());
    let s = &h.scenarios[0];
    assert_eq!(s.nights.len(), 7);
    assert!(s.changes.is_empty(), "{:?}", s.changes);
    let reasons: Vec<&str> = h.skipped.iter().map(|k| k.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("still going")));
    assert!(reasons.iter().any(|r| r.contains("the same run as")));
}

#[test]
fn markdown_names_the_night_its_commits_and_the_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    common::write_ten_nights(dir.path());
    let md = Renderer::embedded()
        .render_history(&read(dir.path()), Format::Markdown)
        .unwrap();
    assert!(
        md.contains("## quick: 10 nights, 2026-11-01 to 2026-11-10"),
        "{md}"
    );
    assert!(
        md.contains("- **2026-11-06** (c0ffee000004..c0ffee000005): apache / hello, requests/s -1"),
        "{md}"
    );
    assert!(
        md.contains("| 6 | 2026-11-06 | `c0ffee000005` | A/B | complete | **REGRESSION** |"),
        "{md}"
    );
    assert!(md.contains("(A/B: WORSE x0."), "{md}");
    assert!(md.contains("#### server CPU-s per 10k requests"), "{md}");
    assert!(!md.contains("nginx / hello, requests/s"), "{md}");
}

#[test]
fn nights_of_another_setup_are_not_compared_with_those_before() {
    let dir = tempfile::tempdir().unwrap();
    // Apache 15% slower from the fifth night, which ran on another machine: the step is the
    // machine's, not a change point. From the ninth, nginx got a CPU share.
    for (i, mut rec) in common::nights(12, 0.02, "apache", 4, 0.85, None)
        .into_iter()
        .enumerate()
    {
        if i >= 4 {
            rec.host.cpu_model = "Intel Xeon".into();
            rec.host.cores = 4;
        }
        if i >= 8 {
            for l in rec.loads.iter_mut().filter(|l| l.server == "nginx") {
                l.server_share = Some(1.0);
            }
        }
        rec.write_atomic(&dir.path().join(format!("{i}.json")))
            .unwrap();
    }
    let h = read(dir.path());
    let s = &h.scenarios[0];
    assert_eq!(s.nights[4].setup_changes, ["another host"]);
    assert_eq!(
        s.nights[8].setup_changes,
        ["nginx's CPU share its whole cpuset to 1.00 cores"]
    );
    assert!(s
        .nights
        .iter()
        .enumerate()
        .all(|(i, n)| (i == 4 || i == 8) != n.setup_changes.is_empty()));
    assert!(s.changes.is_empty(), "{:?}", s.changes);

    let md = Renderer::embedded()
        .render_history(&h, Format::Markdown)
        .unwrap();
    assert!(
        md.contains("(**another host**: not compared with the nights before)"),
        "{md}"
    );
    let html = Renderer::embedded()
        .render_history(&h, Format::Html)
        .unwrap();
    assert_eq!(
        html.matches("<line class=\"setup\"").count(),
        2 * 8,
        "two per chart"
    );
}
