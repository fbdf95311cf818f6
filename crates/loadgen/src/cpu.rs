//! CPU placement and accounting: pinning worker threads (so the generator and the server under
//! test do not fight over a core) and reading the process's own CPU time (so a report can say
//! when the client, not the server, was the bottleneck).

use rustix::thread::CpuSet;
use std::time::Duration;

/// CPUs the kernel has online.
pub fn online_cpus() -> usize {
    // The kernel's own list, as glibc's sysconf reads it; where it cannot be read, the CPUs
    // this process may use.
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| model::cpuset::parse_cpuset(list.trim()).ok())
        .map(|cpus| cpus.len())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => (0..online_cpus()).collect(),
    }
}

/// Pins the calling thread to the given CPUs.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    // No pid: the calling thread.
    rustix::thread::sched_setaffinity(None, &set)?;
    Ok(())
}

/// User plus system CPU time used so far by the whole process.
pub fn process_cpu_time() -> Duration {
    // The process's CPU clock counts what getrusage's user and system times add up to, for
    // every thread, to the nanosecond.
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}
