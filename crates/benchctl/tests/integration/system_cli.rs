//! `benchctl system check` and `system tune --dry-run` on this machine, as a user runs them:
//! every aspect judged and said, JSON as a record keeps it, bad CPUs refused with status 2, and
//! a dry run that changes nothing.

use crate::scenarios_cli::benchctl;

#[test]
fn check_judges_every_aspect_and_says_how_many_bias() {
    let f = benchctl(&["system", "check"]);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    for aspect in [
        "connection tracking",
        "local port range",
        "TIME_WAIT reuse",
        "CPU frequency governor",
        "CPU boost",
        "SMT siblings",
        "transparent huge pages",
        "swap",
        "busy CPUs",
    ] {
        assert!(
            f.stdout.lines().any(|l| l.starts_with(aspect)),
            "{aspect}\n{}",
            f.describe()
        );
    }
    let last = f.stdout.lines().last().unwrap_or_default();
    assert!(last.contains("measurements here"), "{}", f.describe());
}

#[test]
fn check_as_json_is_what_a_record_keeps() {
    let f = benchctl(&[
        "system",
        "check",
        "--scenario",
        "scenarios/quick.toml",
        "--json",
    ]);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let check: report::record::SystemCheck = serde_json::from_str(&f.stdout).unwrap();
    assert_eq!(check.findings.len(), 10, "{check:?}");
}

#[test]
fn bad_cpus_are_refused_with_status_2() {
    let f = benchctl(&["system", "check", "--loadgen", "zero"]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("--loadgen \"zero\""), "{}", f.describe());
    let f = benchctl(&["system", "check", "--scenario", "no/such.toml"]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("no/such.toml"), "{}", f.describe());
}

#[test]
fn a_dry_run_of_tune_changes_nothing() {
    let before = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok();
    let f = benchctl(&["system", "tune", "--dry-run"]);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stdout.starts_with("would change ") || f.stdout.starts_with("nothing to change"),
        "{}",
        f.describe()
    );
    let after = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok();
    assert_eq!(before, after);
}

#[test]
fn a_dry_run_with_a_fixed_layout_names_the_setting_and_changes_nothing() {
    let path = "/proc/sys/kernel/randomize_va_space";
    let before = std::fs::read_to_string(path).ok();
    let f = benchctl(&["system", "tune", "--dry-run", "--fixed-layout"]);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    if before.as_deref().is_some_and(|v| v.trim() != "0") {
        assert!(
            f.stdout.contains(&format!(
                "would change {path}: {} -> 0",
                before.as_deref().unwrap().trim()
            )),
            "{}",
            f.describe()
        );
    }
    assert_eq!(before, std::fs::read_to_string(path).ok());
    let f = benchctl(&["system", "tune", "--undo", "--fixed-layout"]);
    assert_eq!(f.code, Some(2), "{}", f.describe());
}
