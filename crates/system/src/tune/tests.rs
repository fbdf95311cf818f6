use super::*;
use crate::fake::Machine;
use std::cell::RefCell;

fn untuned() -> Machine {
    let mut m = Machine::default()
        .with("/proc/sys/net/netfilter/nf_conntrack_max", "262144\n")
        .with("/proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n")
        .with("/proc/sys/net/ipv4/tcp_tw_reuse", "2\n")
        .with(
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "powersave\n",
        );
    m.raw = Some("*raw\nCOMMIT\n".into());
    m
}

fn cpus() -> Cpus {
    Cpus {
        client: vec![0],
        server: vec![1],
    }
}

/// Records what it is asked to do; fails call number `fail_at` (from 0).
#[derive(Default)]
struct Recording {
    done: RefCell<Vec<String>>,
    calls: RefCell<usize>,
    fail_at: Option<usize>,
}

impl Apply for Recording {
    fn write(&self, path: &str, value: &str) -> io::Result<()> {
        self.call(format!("write {path} {value}"))
    }
    fn iptables(&self, args: &[String]) -> io::Result<()> {
        self.call(args.join(" "))
    }
}

impl Recording {
    fn call(&self, what: String) -> io::Result<()> {
        let call = self.calls.replace_with(|n| *n + 1);
        if Some(call) == self.fail_at {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        self.done.borrow_mut().push(what);
        Ok(())
    }
}

#[test]
fn the_plan_changes_what_biases_and_nothing_else() {
    let changes = plan(&untuned(), &cpus());
    let lines: Vec<String> = changes.iter().map(Change::describe).collect();
    assert_eq!(
        lines,
        [
            "/proc/sys/net/netfilter/nf_conntrack_max: 262144 -> 1048576",
            "/proc/sys/net/ipv4/ip_local_port_range: 32768 60999 -> 1024 65535",
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor: powersave -> performance",
            "iptables -t raw -I PREROUTING -i lo -j NOTRACK",
            "iptables -t raw -I OUTPUT -o lo -j NOTRACK",
            "ip6tables -t raw -I PREROUTING -i lo -j NOTRACK",
            "ip6tables -t raw -I OUTPUT -o lo -j NOTRACK",
        ]
    );
    // Once made, nothing is left to change.
    let mut tuned = Machine::default()
        .with("/proc/sys/net/netfilter/nf_conntrack_max", "1048576")
        .with("/proc/sys/net/ipv4/ip_local_port_range", "1024 65535")
        .with("/proc/sys/net/ipv4/tcp_tw_reuse", "2")
        .with(
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance",
        );
    tuned.raw = Some("-A PREROUTING -i lo -j NOTRACK\n-A OUTPUT -o lo -j NOTRACK\n".into());
    assert_eq!(plan(&tuned, &cpus()), []);
    // Without connection tracking, no rule is added.
    let mut bare = untuned();
    bare.files
        .remove("/proc/sys/net/netfilter/nf_conntrack_max");
    assert!(plan(&bare, &cpus())
        .iter()
        .all(|c| matches!(c, Change::Write { .. })));
}

#[test]
fn undo_puts_back_what_was_found_last_change_first() {
    let changes = plan(&untuned(), &cpus());
    let applied = Recording::default();
    apply(&changes, &applied).unwrap();
    let mut tuned = Tuned::default();
    tuned.add(&changes);
    let undone = Recording::default();
    apply(&tuned.undo(), &undone).unwrap();
    let undo = undone.done.into_inner();
    assert_eq!(undo[0], "ip6tables -t raw -D OUTPUT -o lo -j NOTRACK");
    assert_eq!(
        undo.last().unwrap(),
        "write /proc/sys/net/netfilter/nf_conntrack_max 262144"
    );
    assert!(undo.contains(&"write /proc/sys/net/ipv4/ip_local_port_range 32768 60999".to_string()));
    assert_eq!(undo.len(), applied.done.into_inner().len());
}

#[test]
fn a_failed_change_undoes_the_ones_before_it() {
    let changes = plan(&untuned(), &cpus());
    let a = Recording {
        fail_at: Some(2),
        ..Recording::default()
    };
    let e = apply(&changes, &a).unwrap_err();
    assert!(e.needs_root() && e.undone, "{e}");
    assert!(e.to_string().contains("scaling_governor"), "{e}");
    assert_eq!(
        a.done.into_inner(),
        [
            "write /proc/sys/net/netfilter/nf_conntrack_max 1048576",
            "write /proc/sys/net/ipv4/ip_local_port_range 1024 65535",
            "write /proc/sys/net/ipv4/ip_local_port_range 32768 60999",
            "write /proc/sys/net/netfilter/nf_conntrack_max 262144",
        ]
    );
}

#[test]
fn the_undo_record_survives_a_round_trip_and_refuses_another_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/tune-undo.json");
    assert_eq!(Tuned::load(&path).unwrap().changes, []);
    let mut t = Tuned::default();
    t.add(&plan(&untuned(), &cpus()));
    t.save(&path).unwrap();
    assert_eq!(Tuned::load(&path).unwrap(), t);
    std::fs::write(&path, r#"{"version": 9, "changes": []}"#).unwrap();
    let e = Tuned::load(&path).unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
}

#[test]
fn only_what_is_still_in_effect_is_undone() {
    let changes = plan(&untuned(), &cpus());
    let mut tuned = Tuned::default();
    tuned.add(&changes);
    // As tune left it: everything is undone.
    let mut now = Machine::default()
        .with("/proc/sys/net/netfilter/nf_conntrack_max", "1048576\n")
        .with("/proc/sys/net/ipv4/ip_local_port_range", "1024\t65535\n")
        .with(
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        );
    now.raw = Some("-A PREROUTING -i lo -j NOTRACK\n-A OUTPUT -o lo -j NOTRACK\n".into());
    assert_eq!(tuned.undo_in_effect(&now), tuned.undo());
    // After a reboot: the defaults are back and the rules gone; nothing is left to undo.
    let mut rebooted = untuned();
    rebooted.raw = Some(String::new());
    assert_eq!(tuned.undo_in_effect(&rebooted), []);
}

#[test]
fn an_undo_record_with_a_change_tune_never_makes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune-undo.json");
    let mut t = Tuned::default();
    t.add(&plan(&untuned(), &cpus()));
    t.save(&path).unwrap();
    assert!(Tuned::load(&path).is_ok());
    for (bad, what) in [
        (
            r#"{"kind": "write", "path": "/etc/shadow", "from": "x", "to": "y"}"#,
            "/etc/shadow",
        ),
        (
            r#"{"kind": "write", "path": "/sys/devices/system/cpu/cpu0/../../../../etc/passwd/cpufreq/scaling_governor", "from": "a", "to": "b"}"#,
            "etc/passwd",
        ),
        (
            r#"{"kind": "write", "path": "/proc/sys/net/ipv4/tcp_tw_reuse", "from": "2", "to": "1\n0"}"#,
            "tcp_tw_reuse",
        ),
        (
            r#"{"kind": "rule", "v6": false, "chain": "INPUT", "rule": ["-j", "DROP"], "insert": true}"#,
            "INPUT -j DROP",
        ),
    ] {
        let text = format!(r#"{{"version": 1, "changes": [{bad}]}}"#);
        std::fs::write(&path, text).unwrap();
        let e = Tuned::load(&path).unwrap_err().to_string();
        assert!(e.contains("never makes") && e.contains(what), "{e}");
    }
}

#[test]
fn saving_never_writes_through_a_planted_name() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    // The names an earlier version wrote through, planted as links to the victim.
    let path = dir.path().join("tune-undo.json");
    std::os::unix::fs::symlink(&victim, dir.path().join("tune-undo.json.tmp")).unwrap();
    let mut t = Tuned::default();
    t.add(&plan(&untuned(), &cpus()));
    t.save(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(Tuned::load(&path).unwrap(), t);
}

#[test]
fn a_fixed_layout_is_asked_for_apart_and_undone_like_the_rest() {
    let m = untuned().with("/proc/sys/kernel/randomize_va_space", "2\n");
    assert!(
        !plan(&m, &cpus())
            .iter()
            .any(|c| c.describe().contains("randomize_va_space")),
        "not in the plain plan"
    );
    let c = fixed_layout(&m).expect("a change");
    assert_eq!(c.describe(), "/proc/sys/kernel/randomize_va_space: 2 -> 0");
    assert!(tune_makes(&c) && tune_makes(&c.undo()));
    let fixed = m.with("/proc/sys/kernel/randomize_va_space", "0\n");
    assert_eq!(fixed_layout(&fixed), None);
}
