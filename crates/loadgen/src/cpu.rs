//! CPU placement and accounting: pinning worker threads (so the generator and the server under
//! test do not fight over a core) and reading the process's own CPU time (so a report can say
//! when the client, not the server, was the bottleneck).

use std::time::Duration;

/// CPUs the kernel has online.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 {
        1
    } else {
        n as usize
    }
}

/// CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..online_cpus()).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to the given CPUs.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: the set is built locally and passed with its size; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// User plus system CPU time used so far by the whole process.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Interrupt and total time of some CPUs since boot, in the kernel's ticks, from
/// `/proc/stat`: the hard and soft interrupts (network receive, TCP handshakes on loopback) the
/// kernel runs on those CPUs for whatever process, which [`process_cpu_time`] does not see.
/// Other tenants of a shared machine add user time, little interrupt time, so this stays the
/// generator's own cost where a CPU's whole busy time would not. Two readings give the share
/// of the time in between ([`CpuTicks::interrupts_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    pub interrupts: u64,
    pub total: u64,
}

impl CpuTicks {
    /// `None` where `/proc/stat` cannot be read.
    pub fn read(cpus: &[usize]) -> Option<CpuTicks> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        Some(parse_proc_stat(&text, cpus))
    }

    /// The share of the time since `earlier` the CPUs spent in interrupts (0 to 1).
    pub fn interrupts_since(&self, earlier: &CpuTicks) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let irq = self.interrupts.checked_sub(earlier.interrupts)?;
        (total > 0).then(|| irq as f64 / total as f64)
    }
}

fn parse_proc_stat(text: &str, cpus: &[usize]) -> CpuTicks {
    let mut sum = CpuTicks {
        interrupts: 0,
        total: 0,
    };
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(n) = fields
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !cpus.contains(&n) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let v: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        sum.total += v.iter().sum::<u64>();
        sum.interrupts += v.get(5).copied().unwrap_or(0) + v.get(6).copied().unwrap_or(0);
    }
    sum
}

#[cfg(test)]
mod proc_stat_tests {
    use super::*;

    #[test]
    fn interrupts_are_hard_and_soft_irqs_over_all_time() {
        let a = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                 cpu0 100 1 50 1000 10 5 20 0 0 0\n\
                 cpu1 7 0 3 2000 0 0 0 0 0 0\n";
        let b = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                 cpu0 130 1 60 1010 10 5 50 0 0 0\n\
                 cpu1 8 0 3 2099 0 0 0 0 0 0\n";
        let (a0, b0) = (parse_proc_stat(a, &[0]), parse_proc_stat(b, &[0]));
        assert_eq!(
            a0,
            CpuTicks {
                interrupts: 25,
                total: 1186
            }
        );
        // 30 ticks of softirq out of 80.
        assert_eq!(b0.interrupts_since(&a0), Some(30.0 / 80.0));
        let both = parse_proc_stat(b, &[0, 1]).interrupts_since(&parse_proc_stat(a, &[0, 1]));
        assert_eq!(both, Some(30.0 / 180.0));
        assert_eq!(a0.interrupts_since(&b0), None);
        assert_eq!(CpuTicks::read(&[0]).map(|t| t.total > 0), Some(true));
    }
}
