//! Each aspect of a machine judged from what a [`Probe`] reads.

use crate::busy::Busy;
use crate::probe::{Cpus, Probe};
use model::cpuset::parse_cpuset;
use model::system::{Aspect, Finding, Level, SystemCheck};

/// The conntrack table size `system tune` sets when it is smaller.
pub(crate) const CONNTRACK_MAX: u64 = 1_048_576;
/// The local port range `system tune` sets when it is narrower.
pub(crate) const PORT_RANGE: (u32, u32) = (1024, 65535);
/// Another process using this share of a chosen CPU biases what is measured there.
const BUSY_SHARE: f64 = 0.10;

/// Every aspect of the machine `p` for a run on `cpus`, with `busy` the processes found on
/// them (see [`crate::busy_processes`]).
pub fn check(p: &dyn Probe, cpus: &Cpus, busy: &[Busy]) -> SystemCheck {
    let mut findings = vec![
        conntrack(p),
        port_range(p),
        time_wait_reuse(p),
        governor(p, &cpus.all()),
        boost(p),
        smt_siblings(p, cpus),
        huge_pages(p),
        swap(p),
    ];
    findings.push(busy_cpus(busy));
    findings.push(address_layout(p));
    SystemCheck { findings }
}

fn finding(aspect: Aspect, level: Level, found: String, effect: &str, tunable: bool) -> Finding {
    Finding {
        aspect,
        level,
        found,
        effect: effect.to_string(),
        tunable,
    }
}

fn number(p: &dyn Probe, path: &str) -> Option<u64> {
    p.read(path)?.trim().parse().ok()
}

/// Whether the raw table exempts loopback from tracking both ways (`-i lo` in PREROUTING and
/// `-o lo` in OUTPUT, by NOTRACK or CT --notrack).
pub(crate) fn loopback_exempt(rules: &str) -> bool {
    let exempts = |chain: &str, iface: &str| {
        rules.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.starts_with(&["-A", chain])
                && words.windows(2).any(|w| w == [iface, "lo"])
                && (l.contains("-j NOTRACK") || l.contains("-j CT --notrack"))
        })
    };
    exempts("PREROUTING", "-i") && exempts("OUTPUT", "-o")
}

fn conntrack(p: &dyn Probe) -> Finding {
    let Some(max) = number(p, "/proc/sys/net/netfilter/nf_conntrack_max") else {
        return finding(
            Aspect::Conntrack,
            Level::Ok,
            "not loaded: no connection is tracked".into(),
            "",
            false,
        );
    };
    let count = number(p, "/proc/sys/net/netfilter/nf_conntrack_count").unwrap_or(0);
    let table = format!("nf_conntrack_max {max}, {count} in use");
    match p.raw_rules(false) {
        Some(rules) if loopback_exempt(&rules) => finding(
            Aspect::Conntrack,
            Level::Ok,
            format!("{table}; loopback exempt (raw table NOTRACK)"),
            "",
            max < CONNTRACK_MAX,
        ),
        rules => finding(
            Aspect::Conntrack,
            Level::Bias,
            format!(
                "{table}; loopback {}",
                if rules.is_some() { "tracked" } else { "tracked, as far as can be told (the raw table could not be read)" }
            ),
            "every new connection is looked up and kept in its table: with a new connection per request on loopback the load generator spends about a tenth more CPU per request (bench/conntrack.sh); entries stay 2 minutes after a connection closed, so the table fills after about an hour of such loads and new connections then wait or fail",
            true,
        ),
    }
}

fn port_range(p: &dyn Probe) -> Finding {
    let text = p
        .read("/proc/sys/net/ipv4/ip_local_port_range")
        .unwrap_or_default();
    let bounds: Vec<u32> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [lo, hi] = bounds[..] else {
        return finding(
            Aspect::PortRange,
            Level::Info,
            "cannot be read".into(),
            "",
            false,
        );
    };
    let span = hi.saturating_sub(lo) + 1;
    let found = format!("{lo}-{hi} ({span} ports)");
    let wide = span > PORT_RANGE.1 - PORT_RANGE.0;
    let (level, effect) = match span {
        s if s < 16_384 => (Level::Bias, "a load without keep-alive runs out of local ports within seconds (each stays in TIME_WAIT for a minute), and the failures are the generator's"),
        _ if !wide => (Level::Info, "enough for loopback loads, whose ports TIME_WAIT reuse frees; a load of more new connections a minute than there are ports to another machine runs out"),
        _ => (Level::Ok, ""),
    };
    finding(Aspect::PortRange, level, found, effect, !wide)
}

/// Where the kernel's layout randomization is set.
pub(crate) const RANDOMIZE_VA_SPACE: &str = "/proc/sys/kernel/randomize_va_space";

/// Layout randomization is no bias of a single measurement, but it makes two starts of one
/// server differ: what A/B regression runs on fresh containers see as noise.
fn address_layout(p: &dyn Probe) -> Finding {
    match number(p, RANDOMIZE_VA_SPACE) {
        Some(0) => finding(Aspect::AddressLayout, Level::Ok, "fixed (randomize_va_space 0)".into(), "", false),
        Some(n) => finding(
            Aspect::AddressLayout,
            Level::Info,
            format!("randomized (randomize_va_space {n})"),
            "each start of a server places its memory anew, so two starts of one image can differ in speed; A/B regression runs, which start fresh containers every round, see it as noise (Apache's rounds more than 8% off fell from about 1 in 6 to 1 in 12 with it fixed, see docs/regression.md). `system tune --fixed-layout` fixes it, a security trade for a machine kept for measuring",
            false,
        ),
        None => finding(Aspect::AddressLayout, Level::Info, "cannot be read".into(), "", false),
    }
}

fn time_wait_reuse(p: &dyn Probe) -> Finding {
    match number(p, "/proc/sys/net/ipv4/tcp_tw_reuse") {
        Some(0) => finding(Aspect::TimeWaitReuse, Level::Info, "off (tcp_tw_reuse 0)".into(), "a new connection cannot take a port still in TIME_WAIT, so the local port range is all a minute of connections the generator closes may use", true),
        Some(1) => finding(Aspect::TimeWaitReuse, Level::Ok, "on (tcp_tw_reuse 1)".into(), "", false),
        Some(2) => finding(Aspect::TimeWaitReuse, Level::Ok, "on for loopback (tcp_tw_reuse 2)".into(), "", false),
        _ => finding(Aspect::TimeWaitReuse, Level::Info, "cannot be read".into(), "", false),
    }
}

fn governor(p: &dyn Probe, cpus: &[usize]) -> Finding {
    let read = |c: usize| {
        p.read(&format!(
            "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
        ))
        .map(|g| g.trim().to_string())
    };
    let governors: Vec<(usize, String)> =
        cpus.iter().filter_map(|&c| Some((c, read(c)?))).collect();
    if governors.is_empty() {
        return finding(Aspect::Governor, Level::Info, "not exposed (a virtual machine's CPUs, or no cpufreq driver): the host sets the clocks".into(), "", false);
    }
    let found = governors
        .iter()
        .map(|(c, g)| format!("cpu{c} {g}"))
        .collect::<Vec<_>>()
        .join(", ");
    if governors.iter().all(|(_, g)| g == "performance") {
        finding(Aspect::Governor, Level::Ok, found, "", false)
    } else {
        finding(Aspect::Governor, Level::Bias, found, "the clock follows the load, so a light load and a heavy one run at different speeds and a ratio between them is partly the governor's", true)
    }
}

fn boost(p: &dyn Probe) -> Finding {
    let on = match (
        number(p, "/sys/devices/system/cpu/cpufreq/boost"),
        number(p, "/sys/devices/system/cpu/intel_pstate/no_turbo"),
    ) {
        (Some(b), _) => b == 1,
        (None, Some(no_turbo)) => no_turbo == 0,
        (None, None) => return finding(Aspect::Boost, Level::Ok, "not exposed".into(), "", false),
    };
    if on {
        finding(Aspect::Boost, Level::Info, "on".into(), "clocks above the base one depend on temperature and on how busy the other cores are, so repeated runs vary more; it is left on (turning it off slows every server alike)", false)
    } else {
        finding(Aspect::Boost, Level::Ok, "off".into(), "", false)
    }
}

fn smt_siblings(p: &dyn Probe, cpus: &Cpus) -> Finding {
    let mut shared = Vec::new();
    for &c in &cpus.client {
        let siblings = p
            .read(&format!(
                "/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
            ))
            .and_then(|t| parse_cpuset(&t).ok())
            .unwrap_or_default();
        for s in siblings
            .into_iter()
            .filter(|s| *s != c && cpus.server.contains(s))
        {
            shared.push(format!("cpu{c} (load generator) and cpu{s} (servers)"));
        }
    }
    if shared.is_empty() {
        finding(
            Aspect::SmtSiblings,
            Level::Ok,
            "the load generator's CPUs share no core with the servers'".into(),
            "",
            false,
        )
    } else {
        finding(Aspect::SmtSiblings, Level::Bias, format!("{} are hyper-threads of one core", shared.join(", ")), "the generator and the server share the core's execution units and caches, so each slows the other; choose CPUs of different cores (the scenario's [cpus])", false)
    }
}

fn huge_pages(p: &dyn Probe) -> Finding {
    let text = p
        .read("/sys/kernel/mm/transparent_hugepage/enabled")
        .unwrap_or_default();
    let chosen = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    match chosen {
        Some("always") => finding(Aspect::HugePages, Level::Info, "always".into(), "the kernel may stop a process to compact memory for a huge page: a rare latency spike in the slowest percentiles", false),
        Some(mode) => finding(Aspect::HugePages, Level::Ok, mode.to_string(), "", false),
        None => finding(Aspect::HugePages, Level::Ok, "not exposed".into(), "", false),
    }
}

fn swap(p: &dyn Probe) -> Finding {
    let meminfo = p.read("/proc/meminfo").unwrap_or_default();
    let kib = |key: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let (total, free) = (kib("SwapTotal"), kib("SwapFree"));
    let used = total.saturating_sub(free);
    match (total, used) {
        (0, _) => finding(Aspect::Swap, Level::Ok, "none".into(), "", false),
        (_, 0) => finding(
            Aspect::Swap,
            Level::Ok,
            format!("{} MiB, none in use", total / 1024),
            "",
            false,
        ),
        _ => finding(
            Aspect::Swap,
            Level::Info,
            format!("{} MiB of {} MiB in use", used / 1024, total / 1024),
            "memory is short: a server's page that was swapped out costs a disk read when touched",
            false,
        ),
    }
}

fn busy_cpus(busy: &[Busy]) -> Finding {
    let heavy: Vec<String> = busy
        .iter()
        .filter(|b| b.share >= BUSY_SHARE)
        .map(|b| {
            format!(
                "pid {} ({}) {:.0}% of cpu{}",
                b.pid,
                b.comm,
                b.share * 100.0,
                b.cpu
            )
        })
        .collect();
    if heavy.is_empty() {
        finding(
            Aspect::BusyCpus,
            Level::Ok,
            "no other process used a tenth of a chosen CPU".into(),
            "",
            false,
        )
    } else {
        finding(
            Aspect::BusyCpus,
            Level::Bias,
            heavy.join(", "),
            "it takes CPU time from the load generator or the servers there",
            false,
        )
    }
}

#[cfg(test)]
mod tests;
