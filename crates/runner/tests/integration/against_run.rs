//! A/B runs (`RunOptions::against`) in-process against the real Docker daemon:
//! - the baseline record's image runs beside the candidate's, both loaded at the same time, each
//!   under half the servers' CPUs, round by round until the stopping rule ends it, and nothing
//!   is left behind;
//! - a baseline image that is no longer on the machine is named, with how to get it back,
//!   before anything starts;
//! - options that cannot be paired are refused before anything starts (no daemon needed).

use crate::common::*;
use report::RecordIo;
use report::{AgainstStop, RunRecord};
use runner::{Against, Headroom, RunOptions};
use std::sync::Arc;
use std::time::Duration;

const ONE: &str = r#"
name = "one"
runs = 1
[load]
requests = 300
concurrency = 4
timeout = "10s"
[[server]]
name = "nginx"
kind = "nginx"
[[document]]
name = "hello"
path = "/"
generate = "hello"
"#;

fn options(out: &std::path::Path) -> RunOptions {
    RunOptions {
        out: Some(out.to_path_buf()),
        ..RunOptions::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ab_run_loads_the_baselines_image_and_the_candidates_together() {
    if !daemon_or_skip("an_ab_run_loads_the_baselines_image_and_the_candidates_together").await {
        return;
    }
    let _one_at_a_time = exclusive();
    let (dir, path) = scenario(ONE);
    let plan = plan_with(&path, &repo_root().join("docker"));
    // The baseline: an ordinary run, whose record names the image it measured.
    let base_path = dir.path().join("base.json");
    let base = runner::run(&plan, options(&base_path), Arc::new(runner::Quiet))
        .await
        .unwrap();
    assert!(base.succeeded(), "{:?}", base.problems);

    let out = dir.path().join("ab.json");
    let mut against = Against::new(base.record.clone(), base_path.clone());
    against.max_rounds = report::paired::MIN_ROUNDS;
    against.budget = Duration::from_secs(120);
    let opts = RunOptions {
        against: Some(against),
        ..options(&out)
    };
    let rec = Arc::new(Recorder::default());
    let outcome = runner::run(&plan, opts, Arc::clone(&rec) as Arc<_>)
        .await
        .unwrap();
    assert!(
        outcome.succeeded(),
        "{:?}\n{:?}",
        outcome.problems,
        rec.lines()
    );
    let record = RunRecord::load(&out).unwrap();
    assert_eq!(record, outcome.record);
    let ab = record.against.as_ref().unwrap();
    assert_eq!(ab.baseline_run_id, base.record.run_id);
    assert_eq!(ab.servers[0].image_tag, base.record.servers[0].image_tag);
    assert_eq!(ab.servers[0].image_id, base.record.servers[0].image_id);
    // Four rounds at most, and the first look is after the fourth: four pairs.
    assert_eq!(record.loads.len(), 4);
    assert_eq!(ab.loads.len(), 4);
    assert!(matches!(
        ab.stop,
        Some(AgainstStop::Decided | AgainstStop::Rounds)
    ));
    // Each round both sides' loads start before either is done (a pair measured again at a
    // smaller share, when the two loads left the generator no headroom, starts again).
    let course: Vec<String> = rec
        .lines()
        .into_iter()
        .filter(|l| {
            ["done ", "load ", "headroom "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert_eq!(testsupport::assert_pairs_loaded_together(&course), 8);
    // Both sides at one share, at most half the servers' CPUs, so that each gets all of its
    // share while the other runs; the same in every round.
    let half = plan.cpus.servers.len() as f64 / 2.0;
    assert!(ab.together);
    let shares: Vec<Option<f64>> = record
        .loads
        .iter()
        .chain(&ab.loads)
        .map(|l| l.server_share)
        .collect();
    assert!(
        shares
            .iter()
            .all(|s| *s == shares[0] && s.is_some_and(|s| s <= half)),
        "{shares:?}"
    );
    // Rounds 2 to 4 each on two fresh containers, one per side.
    let fresh: Vec<String> = rec
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("against fresh "))
        .collect();
    assert_eq!(
        fresh,
        [
            "against fresh 2 2",
            "against fresh 3 2",
            "against fresh 4 2"
        ],
        "{fresh:?}"
    );
    assert!(ab.fresh_containers);
    let cmp = report::compare_record(&record).unwrap();
    assert_eq!(cmp.groups.len(), 1);
    assert_eq!(cmp.groups[0].rounds, 4);
    assert!(cmp.groups[0].gated().unwrap().estimate.is_some());
    assert!(containers_of_run(&record.run_id).await.is_empty());
    assert!(my_run_folders().is_empty(), "{:?}", my_run_folders());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_image_no_longer_here_is_named_before_anything_starts() {
    if !daemon_or_skip("a_baseline_image_no_longer_here_is_named_before_anything_starts").await {
        return;
    }
    let (dir, path) = scenario(ONE);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let mut base = common_record();
    base.servers[0].image_tag = "benchctl/nginx:000000000000".to_string();
    base.servers[0].image_id = Some(format!("sha256:{}", "0".repeat(64)));
    let out = dir.path().join("ab.json");
    let opts = RunOptions {
        against: Some(Against::new(base, dir.path().join("base.json"))),
        ..options(&out)
    };
    let err = runner::run(&plan, opts, Arc::new(runner::Quiet))
        .await
        .unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("the baseline's image benchctl/nginx:000000000000"),
        "{msg}"
    );
    assert!(msg.contains("benchctl images build nginx"), "{msg}");
    assert!(msg.contains("docker load"), "{msg}");
    assert!(!out.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_that_cannot_be_paired_are_refused_before_anything_starts() {
    let (dir, path) = scenario(ONE);
    let plan = plan_with(&path, &repo_root().join("docker"));
    let out = dir.path().join("ab.json");
    let against = || Against::new(common_record(), dir.path().join("base.json"));
    let refused = |opts: RunOptions, want: &'static str| {
        let plan = plan.clone();
        async move {
            let err = runner::run(&plan, opts, Arc::new(runner::Quiet))
                .await
                .unwrap_err();
            assert!(err.is_bad_input(), "{err}");
            assert!(err.to_string().contains(want), "{err}");
        }
    };
    refused(
        RunOptions {
            against: Some(against()),
            headroom: Headroom::Auto,
            ..options(&out)
        },
        "both sides run at the CPU shares the baseline's loads had",
    )
    .await;
    let mut few = against();
    few.max_rounds = 2;
    refused(
        RunOptions {
            against: Some(few),
            ..options(&out)
        },
        "needs at least 4 rounds",
    )
    .await;
    let mut slowed = against();
    slowed.slowed = vec![("lighttpd".to_string(), 0.9)];
    refused(
        RunOptions {
            against: Some(slowed),
            ..options(&out)
        },
        "--slow-candidate lighttpd=0.9: the scenario has no server of that name",
    )
    .await;
    let mut other = common_record();
    other.servers[0].name = "apache".to_string();
    refused(
        RunOptions {
            against: Some(Against::new(other, dir.path().join("base.json"))),
            ..options(&out)
        },
        "the baseline record has no server `nginx` (it has: apache)",
    )
    .await;
    assert!(!out.exists());
}

/// A baseline record of `ONE` as a run would write it, with nothing measured.
fn common_record() -> RunRecord {
    let json = format!(
        r#"{{
  "schema_version": 3,
  "benchctl_version": "0.1.0",
  "run_id": "one-20261201T000000-1",
  "started_at": "2026-12-01T00:00:00Z",
  "finished_at": "2026-12-01T00:00:10Z",
  "status": {{ "state": "complete" }},
  "scenario": {{ "name": "one", "path": "s.toml", "sha256": "{}", "source": "" }},
  "host": {{ "cpu_model": "x", "cores": 2, "kernel": "6.1", "docker_version": null }},
  "servers": [
    {{ "name": "nginx", "kind": "nginx", "image_tag": "benchctl/nginx:abc", "image_id": null,
       "server_header": "nginx", "status": {{ "state": "available", "ready_s": 0.5 }} }}
  ],
  "loads": []
}}"#,
        "0".repeat(64)
    );
    RunRecord::from_json(&json, std::path::Path::new("base.json")).unwrap()
}
