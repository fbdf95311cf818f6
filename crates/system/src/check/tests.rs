use super::*;
use crate::fake::Machine;

const EXEMPT: &str = "*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
    -A PREROUTING -i lo -j NOTRACK\n-A OUTPUT -o lo -j CT --notrack\nCOMMIT\n";

/// A machine as a benchmark wants it: no bias anywhere.
fn tuned() -> Machine {
    let mut m = Machine::default()
        .with("/proc/sys/net/netfilter/nf_conntrack_max", "1048576\n")
        .with("/proc/sys/net/netfilter/nf_conntrack_count", "12\n")
        .with("/proc/sys/net/ipv4/ip_local_port_range", "1024\t65535\n")
        .with("/proc/sys/net/ipv4/tcp_tw_reuse", "2\n")
        .with(
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        )
        .with(
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        )
        .with(
            "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
            "0\n",
        )
        .with(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        )
        .with(
            "/proc/meminfo",
            "MemTotal: 8000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
        )
        .with("/proc/sys/kernel/randomize_va_space", "0\n");
    m.raw = Some(EXEMPT.to_string());
    m
}

fn cpus() -> Cpus {
    Cpus {
        client: vec![0],
        server: vec![1],
    }
}

fn of(c: &SystemCheck, a: Aspect) -> &Finding {
    c.findings.iter().find(|f| f.aspect == a).unwrap()
}

#[test]
fn a_tuned_machine_has_no_bias() {
    let c = check(&tuned(), &cpus(), &[]);
    assert_eq!(c.biases().count(), 0, "{c:#?}");
    assert_eq!(c.findings.len(), 10);
    assert!(c.findings.iter().all(|f| !f.tunable), "{c:#?}");
}

#[test]
fn tracked_loopback_is_a_bias_that_tune_removes() {
    let mut m = tuned().with("/proc/sys/net/netfilter/nf_conntrack_max", "262144\n");
    m.raw = Some("*raw\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n".into());
    let f = of(&check(&m, &cpus(), &[]), Aspect::Conntrack).clone();
    assert_eq!((f.level, f.tunable), (Level::Bias, true));
    assert!(
        f.found.contains("262144") && f.found.contains("loopback tracked"),
        "{f:?}"
    );
    // Exempt one way only is not exempt.
    assert!(!loopback_exempt("-A PREROUTING -i lo -j NOTRACK\n"));
    assert!(!loopback_exempt(
        "-A OUTPUT -o lo -j NOTRACK\n-A PREROUTING -i lo2 -j NOTRACK\n"
    ));
    assert!(loopback_exempt(EXEMPT));
    // Unreadable rules (not root): tracked as far as can be told.
    m.raw = None;
    let f = of(&check(&m, &cpus(), &[]), Aspect::Conntrack).clone();
    assert_eq!(f.level, Level::Bias);
    assert!(f.found.contains("could not be read"), "{f:?}");
    // Not loaded at all.
    let mut m = tuned();
    m.files.remove("/proc/sys/net/netfilter/nf_conntrack_max");
    assert_eq!(
        of(&check(&m, &cpus(), &[]), Aspect::Conntrack).level,
        Level::Ok
    );
}

#[test]
fn ports_governors_and_reuse() {
    let m = tuned()
        .with("/proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n")
        .with("/proc/sys/net/ipv4/tcp_tw_reuse", "0\n")
        .with(
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "powersave\n",
        );
    let c = check(&m, &cpus(), &[]);
    let ports = of(&c, Aspect::PortRange);
    assert_eq!((ports.level, ports.tunable), (Level::Info, true));
    assert_eq!(ports.found, "32768-60999 (28232 ports)");
    let narrow = tuned().with("/proc/sys/net/ipv4/ip_local_port_range", "60000 61000");
    assert_eq!(
        of(&check(&narrow, &cpus(), &[]), Aspect::PortRange).level,
        Level::Bias
    );
    assert_eq!(of(&c, Aspect::TimeWaitReuse).level, Level::Info);
    let g = of(&c, Aspect::Governor);
    assert_eq!(
        (g.level, g.found.as_str()),
        (Level::Bias, "cpu0 performance, cpu1 powersave")
    );
    // No cpufreq (a virtual machine): said, not a bias.
    let mut vm = tuned();
    vm.files.retain(|k, _| !k.contains("cpufreq"));
    assert_eq!(
        of(&check(&vm, &cpus(), &[]), Aspect::Governor).level,
        Level::Info
    );
}

#[test]
fn hyper_thread_siblings_across_client_and_server() {
    let m = tuned().with(
        "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
        "0-1\n",
    );
    let f = of(&check(&m, &cpus(), &[]), Aspect::SmtSiblings).clone();
    assert_eq!((f.level, f.tunable), (Level::Bias, false));
    assert!(
        f.found.contains("cpu0 (load generator) and cpu1 (servers)"),
        "{f:?}"
    );
    // Siblings among the client's own CPUs are no bias.
    let both = Cpus {
        client: vec![0, 1],
        server: vec![2],
    };
    assert_eq!(
        of(&check(&m, &both, &[]), Aspect::SmtSiblings).level,
        Level::Ok
    );
}

#[test]
fn boost_huge_pages_swap_and_busy_cpus() {
    let m = tuned()
        .with("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
        .with(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        )
        .with(
            "/proc/meminfo",
            "SwapTotal: 2097152 kB\nSwapFree: 1048576 kB\n",
        );
    let busy = [
        Busy {
            pid: 7,
            comm: "dockerd".into(),
            cpu: 1,
            share: 0.35,
        },
        Busy {
            pid: 8,
            comm: "sshd".into(),
            cpu: 1,
            share: 0.02,
        },
    ];
    let c = check(&m, &cpus(), &busy);
    assert_eq!(of(&c, Aspect::Boost).level, Level::Info);
    assert_eq!(of(&c, Aspect::HugePages).level, Level::Info);
    assert_eq!(of(&c, Aspect::Swap).found, "1024 MiB of 2048 MiB in use");
    let b = of(&c, Aspect::BusyCpus);
    assert_eq!(
        (b.level, b.found.as_str()),
        (Level::Bias, "pid 7 (dockerd) 35% of cpu1")
    );
    assert_eq!(c.biases().count(), 1);
}

#[test]
fn a_randomized_layout_is_worth_knowing_but_no_bias() {
    let m = tuned().with("/proc/sys/kernel/randomize_va_space", "2\n");
    let c = check(&m, &cpus(), &[]);
    let f = of(&c, Aspect::AddressLayout);
    assert_eq!(f.level, Level::Info);
    assert_eq!(f.found, "randomized (randomize_va_space 2)");
    assert!(f.effect.contains("--fixed-layout"), "{}", f.effect);
    assert!(!f.tunable, "plain `system tune` leaves it");
    assert_eq!(c.biases().count(), 0);
}
