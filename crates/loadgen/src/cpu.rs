//! CPU placement and accounting: pinning worker threads (so the generator and the server under
//! test do not fight over a core) and reading its worker threads' own CPU time (so a report can say
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

/// User plus system CPU time used so far by the calling thread.
pub fn current_thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// User plus system CPU time used so far by the thread of `h`; `None` once that thread has
/// ended (or where its CPU clock cannot be read).
pub fn thread_cpu_time<T>(h: &std::thread::JoinHandle<T>) -> Option<Duration> {
    use std::os::unix::thread::JoinHandleExt as _;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `h` is not joined yet, so its pthread_t names a thread whose descriptor is still
    // valid (a joinable thread keeps it until it is joined, even after it ended).
    if unsafe { libc::pthread_getcpuclockid(h.as_pthread_t(), &mut clock) } != 0 {
        return None;
    }
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to; an ended thread's clock gives an error.
    if unsafe { libc::clock_gettime(clock, &mut t) } != 0 {
        return None;
    }
    Some(Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    ))
}
