//! The results file: atomic writes, round trips, the checked-in JSON Schema, and the errors a
//! person gets for files that are not what `report` and `compare` expect.

use crate::common;
use report::RecordIo;

use report::record::{RunRecord, RunStatus};
use report::{Protocol, ReportError};
use std::path::{Path, PathBuf};

fn schema() -> serde_json::Value {
    let path = testsupport::repo_root().join("results/schema/run-record.v7.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load_err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "results.json", text);
    RunRecord::load(&p).unwrap_err().to_string()
}

#[test]
fn write_atomic_then_load_round_trips_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut rec = common::fixture(3, None);
    rec.write_atomic(&path).unwrap();
    // Rewritten after more work, as the CLI does after each server and round.
    rec.status = RunStatus::Interrupted {
        reason: "Ctrl-C".into(),
    };
    rec.write_atomic(&path).unwrap();
    let back = RunRecord::load(&path).unwrap();
    assert_eq!(back, rec);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["run.json"]);
}

#[test]
fn serialized_records_validate_against_the_checked_in_schema() {
    let validator = jsonschema::validator_for(&schema()).expect("the schema itself is valid");
    let mut partial = common::fixture(1, None);
    partial.status = RunStatus::Failed {
        reason: "nginx stopped answering".into(),
    };
    partial.finished_at = None;
    partial.loads.truncate(1);
    partial.loads[0].server_usage = None;
    // A load that ran into the generator's own limits, with its notes.
    let mut limited = common::fixture(1, None);
    let load = &mut limited.loads[0].load;
    load.failures.generator = 12;
    load.notes = vec![
        loadgen::Note::OutOfFileDescriptors {
            connections: 12,
            limit: 1024,
        },
        loadgen::Note::PortsExhausted { connections: 3 },
        loadgen::Note::Http2Errors {
            connections: 1,
            first: "a header block beyond the generator's limits".into(),
        },
        loadgen::Note::Quic {
            sent_packets: 4000,
            lost_packets: 3,
            udp_drops: 2,
            window_stalls: 1,
        },
        loadgen::Note::GeneratorBound {
            read_delay_mean_us: 900.0,
            total_mean_us: 200.0,
        },
    ];
    load.stopped_early = Some(loadgen::StopReason::TimeLimit);
    let searched = common::with_capacity(common::fixture(1, None));
    let overloaded = common::with_overload(common::with_capacity(common::fixture(1, None)));
    let mut ab = common::signed_rank_ab(4, None, &[1.0, 1.01]);
    if let Some(a) = ab.against.as_mut() {
        a.slowed = vec![report::record::Slowed {
            server: "apache".into(),
            factor: 0.9,
        }];
    }
    // Loads over HTTP/2 with streams, and over TLS in HTTP/1.x.
    let mut h2 = common::fixture(1, None);
    for (l, p) in h2.loads.iter_mut().zip([Protocol::H2c, Protocol::Https]) {
        l.protocol = Some(p);
        l.streams = p.is_http2().then_some(8);
    }
    // Loads over HTTP/3, with streams and without.
    let mut h3 = common::fixture(1, None);
    for (l, streams) in h3.loads.iter_mut().zip([Some(8), None]) {
        l.protocol = Some(Protocol::H3);
        l.streams = streams;
        l.load.settings.http3 = true;
        l.load.settings.streams = streams;
    }
    // A server on another engine, and that engine.
    let mut remote = common::fixture(1, None);
    remote.servers[1].host = Some("srv1".into());
    remote.engines = vec![common::srv1_engine()];
    for rec in [
        common::fixture(3, None),
        partial,
        limited,
        searched,
        overloaded,
        ab,
        h2,
        h3,
        remote,
    ] {
        let value = serde_json::to_value(&rec).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "schema errors: {errors:#?}");
    }
}

#[test]
fn the_schema_rejects_what_the_reader_rejects() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let good = serde_json::to_value(common::fixture(1, None)).unwrap();
    assert!(validator.is_valid(&good));
    for (pointer, bad) in [
        (
            "/schema_version",
            serde_json::json!(report::SCHEMA_VERSION + 1),
        ),
        ("/status", serde_json::json!({"state": "failed"})),
        ("/scenario/sha256", serde_json::json!("not-a-hash")),
        ("/loads/0/round", serde_json::json!(-1)),
        ("/loads/0/load/total/moments/sum_sq", serde_json::json!(12)),
    ] {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = bad;
        assert!(!validator.is_valid(&v), "{pointer} should be rejected");
    }
    // A machine's check, as a run keeps it, and one the reader would refuse.
    let mut checked = common::fixture(1, None);
    checked.host.system = Some(system_check());
    let mut v = serde_json::to_value(&checked).unwrap();
    assert!(validator.is_valid(&v), "{:?}", validator.validate(&v).err());
    v["host"]["system"]["findings"][0]["aspect"] = serde_json::json!("moon");
    assert!(!validator.is_valid(&v));
    assert!(serde_json::from_value::<RunRecord>(v).is_err());
}

fn system_check() -> report::record::SystemCheck {
    use report::record::{Aspect, Finding, Level, SystemCheck};
    SystemCheck {
        findings: vec![Finding {
            aspect: Aspect::Conntrack,
            level: Level::Bias,
            found: "nf_conntrack_max 262144, 12 in use; loopback tracked".into(),
            effect: "costs the load generator CPU".into(),
            tunable: true,
        }],
    }
}

#[test]
fn a_machines_biases_are_kept_and_shown_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut rec = common::fixture(1, None);
    rec.host.system = Some(system_check());
    rec.write_atomic(&path).unwrap();
    let back = RunRecord::load(&path).unwrap();
    assert_eq!(back.host.system, Some(system_check()));
    let r = report::Renderer::new(None).unwrap();
    for format in [
        report::Format::Text,
        report::Format::Markdown,
        report::Format::Html,
    ] {
        let out = r.render(&back, format).unwrap();
        assert!(
            out.contains(
                "connection tracking: nf_conntrack_max 262144, 12 in use; loopback tracked"
            ),
            "{format:?}: {out}"
        );
    }
}

#[test]
fn the_schema_holds_capacity_searches_to_what_a_search_records() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let good = serde_json::to_value(common::with_capacity(common::fixture(1, None))).unwrap();
    assert!(validator.is_valid(&good));
    for (pointer, bad) in [
        ("/capacity/0/criteria/percentile", serde_json::json!(101)),
        ("/capacity/0/steps/0/verdict", serde_json::json!("maybe")),
        ("/capacity/0/result/kind", serde_json::json!("unknown")),
        ("/capacity/0/steps/0/rate", serde_json::json!(-1.0)),
    ] {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = bad;
        assert!(!validator.is_valid(&v), "{pointer} should be rejected");
    }
}

#[test]
fn a_capacity_search_round_trips_and_a_record_of_version_1_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let rec = common::with_capacity(common::fixture(1, None));
    rec.write_atomic(&path).unwrap();
    assert_eq!(RunRecord::load(&path).unwrap(), rec);
    // Written before capacity searches existed: no `capacity`, schema version 1.
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick-3-runs.json");
    let back = RunRecord::load(&old).unwrap();
    assert_eq!(back.schema_version, 1);
    assert!(back.capacity.is_empty());
    // A record without searches is written without the field.
    let json = String::from_utf8(common::fixture(1, None).to_json().unwrap()).unwrap();
    assert!(!json.contains("\"capacity\""));
}

#[test]
fn a_capacity_result_that_contradicts_itself_is_refused() {
    let mut rec = common::with_capacity(common::fixture(1, None));
    rec.capacity[0].result.rate = None;
    let msg = load_err(&String::from_utf8(rec.to_json().unwrap()).unwrap());
    assert!(msg.contains("capacity[0].result.kind"), "{msg}");
    let mut rec = common::with_capacity(common::fixture(1, None));
    rec.capacity[1].steps[0].answered = rec.capacity[1].steps[0].started + 1;
    let msg = load_err(&String::from_utf8(rec.to_json().unwrap()).unwrap());
    assert!(msg.contains("capacity[1].steps[0].answered"), "{msg}");
}

#[test]
fn corrupt_json_names_line_and_column() {
    let msg = load_err("{\n  \"schema_version\": 1,\n  \"run_id\": \n}");
    assert!(msg.contains("is not JSON"), "{msg}");
    assert!(msg.contains("line 4, column 1"), "{msg}");
}

#[test]
fn a_file_cut_short_is_not_json() {
    let full = serde_json::to_string(&common::fixture(1, None)).unwrap();
    let msg = load_err(&full[..full.len() / 2]);
    assert!(msg.contains("is not JSON"), "{msg}");
    assert!(msg.contains("EOF"), "{msg}");
}

#[test]
fn foreign_json_is_named_as_such() {
    let msg = load_err(r#"{"name": "left-pad", "version": "1.3.0"}"#);
    assert!(msg.contains("not a benchctl results file"), "{msg}");
    assert!(msg.contains("\"schema_version\""), "{msg}");

    let msg = load_err("[1, 2, 3]");
    assert!(msg.contains("the top level is an array"), "{msg}");

    let msg = load_err(r#"{"schema_version": "one"}"#);
    assert!(msg.contains("\"schema_version\" is a string"), "{msg}");
}

#[test]
fn a_record_missing_a_field_names_the_field() {
    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v.as_object_mut().unwrap().remove("loads");
    let msg = load_err(&v.to_string());
    assert!(msg.contains("not a benchctl results file"), "{msg}");
    assert!(msg.contains("missing field `loads`"), "{msg}");
}

#[test]
fn version_0_was_never_written_and_is_refused() {
    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v["schema_version"] = serde_json::json!(0);
    let msg = load_err(&v.to_string());
    assert!(msg.contains("not a benchctl results file"), "{msg}");
    assert!(
        msg.contains("\"schema_version\" is 0, a version no benchctl ever wrote"),
        "{msg}"
    );
    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v["loads"][0]["load"]["version"] = serde_json::json!(0);
    let msg = load_err(&v.to_string());
    assert!(
        msg.contains("a load's \"version\" is 0, a version no benchctl ever wrote"),
        "{msg}"
    );
}

#[test]
fn a_newer_schema_asks_for_a_newer_benchctl() {
    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v["schema_version"] = serde_json::json!(report::SCHEMA_VERSION + 1);
    // Newer files may have fields this reader does not know: the version is what to report.
    v["new_field"] = serde_json::json!(true);
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "new.json", &v.to_string());
    let err = RunRecord::load(&p).unwrap_err();
    assert!(matches!(
        err,
        ReportError::NewerVersion {
            found,
            supported,
            ..
        } if found == u64::from(report::SCHEMA_VERSION) + 1 && supported == u64::from(report::SCHEMA_VERSION)
    ));
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("schema version {}", report::SCHEMA_VERSION + 1)),
        "{msg}"
    );
    assert!(msg.contains("upgrade benchctl"), "{msg}");

    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v["loads"][0]["load"]["version"] = serde_json::json!(9);
    let msg = load_err(&v.to_string());
    assert!(msg.contains("load report version 9"), "{msg}");
}

#[test]
fn a_missing_file_says_which() {
    let err = RunRecord::load(Path::new("/nonexistent/benchctl/run.json")).unwrap_err();
    assert!(err
        .to_string()
        .contains("cannot read /nonexistent/benchctl/run.json"));
}

#[test]
fn negative_or_inconsistent_figures_are_refused_by_name() {
    let good = serde_json::to_value(common::fixture(1, None)).unwrap();
    for (pointer, bad, says) in [
        (
            "/loads/0/load/requests_per_second",
            serde_json::json!(-5.0),
            "loads[0].load.requests_per_second is -5",
        ),
        (
            "/loads/0/load/requests_per_second",
            serde_json::json!(1e12),
            "but complete / elapsed_s is",
        ),
        (
            "/loads/0/load/elapsed_s",
            serde_json::json!(-1.0),
            "loads[0].load.elapsed_s is -1",
        ),
        (
            "/loads/0/load/failed",
            serde_json::json!(7),
            "the failures by kind add up to 0",
        ),
        (
            "/loads/0/load/total/mean_us",
            serde_json::json!(-3.5),
            "loads[0].load.total.mean_us is -3.5",
        ),
        (
            "/loads/0/server_usage/cpu_s",
            serde_json::json!(-0.1),
            "loads[0].server_usage.cpu_s is -0.1",
        ),
        (
            "/servers/0/status/ready_s",
            serde_json::json!(-2.0),
            "servers[0].status.ready_s is -2",
        ),
    ] {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = bad;
        let msg = load_err(&v.to_string());
        assert!(msg.contains(says), "{pointer}: {msg}");
        assert!(msg.contains("was the file edited?"), "{pointer}: {msg}");
    }
    // Percentiles that go down.
    let mut v = good.clone();
    let p = v.pointer_mut("/loads/0/load/total/percentiles_us").unwrap();
    p[1][1] = serde_json::json!(0);
    p[0][1] = serde_json::json!(999_999);
    let msg = load_err(&v.to_string());
    assert!(msg.contains("is below an earlier one"), "{msg}");
}

#[test]
fn a_load_is_client_bound_by_its_generators_cpu_or_by_responses_waiting_to_be_read() {
    let mut load = common::fixture(1, None).loads[0].load.clone();
    load.client_cpu_s = 0.5 * load.elapsed_s;
    load.notes.clear();
    assert!(!report::record::is_client_bound(&load));
    load.notes.push(loadgen::Note::GeneratorBound {
        read_delay_mean_us: 23_640.0,
        total_mean_us: 2_290.0,
    });
    assert!(report::record::is_client_bound(&load));
    load.notes.clear();
    load.client_cpu_s = 0.95 * load.elapsed_s;
    assert!(report::record::is_client_bound(&load));
}

#[test]
fn timelines_validate_round_trip_and_must_add_up() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let rec = common::fixture_over_time();
    let value = serde_json::to_value(&rec).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    assert_eq!(
        value.pointer("/loads/1/load/notes/0/kind"),
        Some(&serde_json::json!("unsteady"))
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    rec.write_atomic(&path).unwrap();
    assert_eq!(RunRecord::load(&path).unwrap(), rec);
    // The intervals add up to the load's counts, and their histograms to its histogram.
    for l in &rec.loads {
        let t = l.load.timeline.as_ref().unwrap();
        let done: u64 = t.intervals.iter().map(|i| i.completed).sum();
        assert_eq!(done, l.load.complete);
        let failed: u64 = t.intervals.iter().map(|i| i.failures.total()).sum();
        assert_eq!(failed, l.load.failed);
        let bytes: u64 = t.intervals.iter().map(|i| i.total_bytes).sum();
        assert_eq!(bytes, l.load.total_bytes);
        let timed: u64 = t
            .intervals
            .iter()
            .filter_map(|i| i.total.as_deref())
            .map(|h| loadgen::json::decode_histogram(h).unwrap().len())
            .sum();
        assert_eq!(timed, l.load.timers.total.moments.count);
    }
    let mut v = value.clone();
    *v.pointer_mut("/loads/0/load/timeline/intervals/3/completed")
        .unwrap() = serde_json::json!(0);
    let msg = load_err(&v.to_string());
    assert!(
        msg.contains("loads[0].load.timeline.intervals add up to"),
        "{msg}"
    );
    let mut v = value;
    *v.pointer_mut("/loads/0/load/timeline/intervals/0/duration_s")
        .unwrap() = serde_json::json!(-1.0);
    assert!(!validator.is_valid(&v));
}

#[test]
fn a_record_of_version_2_still_reads() {
    let mut v = serde_json::to_value(common::fixture(1, None)).unwrap();
    v["schema_version"] = serde_json::json!(2);
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "v2.json", &v.to_string());
    let back = RunRecord::load(&p).unwrap();
    assert_eq!(back.schema_version, 2);
    assert!(back.loads.iter().all(|l| l.load.timeline.is_none()));
}

#[test]
fn an_ab_run_round_trips_and_its_baseline_side_is_checked_like_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ab.json");
    let rec = common::ab_record(4, None, &[1.0, 1.01]);
    rec.write_atomic(&path).unwrap();
    assert_eq!(RunRecord::load(&path).unwrap(), rec);
    // A baseline-side figure no measurement can give is named by its place.
    let mut bad = rec.clone();
    bad.against.as_mut().unwrap().loads[1].load.elapsed_s = -1.0;
    let p = write(
        dir.path(),
        "bad.json",
        &String::from_utf8(bad.to_json().unwrap()).unwrap(),
    );
    let msg = RunRecord::load(&p).unwrap_err().to_string();
    assert!(
        msg.contains("against.loads[1].load.elapsed_s is -1"),
        "{msg}"
    );
}

#[test]
fn a_load_from_several_generators_keeps_each_part_and_validates() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let mut rec = common::fixture(1, None);
    let part = |host: &str, error: Option<&str>| report::GeneratorRecord {
        host: host.to_string(),
        requests: Some(500),
        concurrency: 2,
        rate: Some(100.0),
        clock_offset_s: -0.004,
        clock_uncertainty_s: 0.007,
        complete: error.is_none().then_some(500),
        failed: error.is_none().then_some(0),
        elapsed_s: error.is_none().then_some(5.0),
        requests_per_second: error.is_none().then_some(100.0),
        client_cpu_s: error.is_none().then_some(0.4),
        client_bound: false,
        error: error.map(str::to_string),
    };
    rec.loads[0].generators = vec![part("cli1", None), part("cli2", Some("lost contact"))];
    assert!(rec.loads[0].is_partial());
    assert!(!rec.loads[1].is_partial(), "a load made here has no parts");
    let json = serde_json::to_value(&rec).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Loads made here carry no `generators` key: records from before generators read alike.
    assert!(json["loads"][1].get("generators").is_none());
    let back: RunRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, rec);
    let line = rec.loads[0].generators[0].summary_line();
    assert!(
        line.contains(
            "cli1: 500 requests over 2 connections, 100.0 req/s of 100.0 target (100.0%)"
        ),
        "{line}"
    );
    assert!(rec.loads[0].generators[1]
        .summary_line()
        .contains("cli2: FAILED: lost contact"));
}

#[test]
fn a_claimed_file_is_never_taken_twice_and_is_rewritten_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut rec = common::fixture(1, None);
    // Two runs claim the same name at once: one wins, the other is told it exists.
    let claims: Vec<_> = std::thread::scope(|s| {
        let a = s.spawn(|| report::RecordFile::create(&path, &rec, "1-1"));
        let b = s.spawn(|| report::RecordFile::create(&path, &rec, "2-2"));
        [a.join().unwrap(), b.join().unwrap()].into_iter().collect()
    });
    let won: Vec<_> = claims.iter().filter_map(|c| c.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{claims:?}");
    assert!(claims
        .iter()
        .any(|c| matches!(c, Err(ReportError::Exists { .. }))));
    rec.status = RunStatus::Interrupted {
        reason: "Ctrl-C".into(),
    };
    won[0].write(&rec).unwrap();
    assert_eq!(RunRecord::load(&path).unwrap(), rec);
    // Nothing but the record is left in the folder.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.json"]);
}

#[test]
fn a_symlink_planted_at_the_temporary_name_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join(".run.json.7-7.tmp")).unwrap();
    let err = report::RecordFile::create(&path, &common::fixture(1, None), "7-7").unwrap_err();
    assert!(matches!(err, ReportError::Write { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(!path.exists());
}
