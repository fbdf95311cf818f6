//! CPU placement and accounting: pinning worker threads (so the generator and the server under
//! test do not fight over a core) and reading the process's own CPU time (so a report can say
//! when the client, not the server, was the bottleneck).

use rustix::thread::CpuSet;
use std::time::Duration;

/// CPUs the kernel has online.
pub fn online_cpus() -> usize {
    // rustix has no sysconf; glibc's reads the kernel's list of online CPUs.
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
    // rustix has no getrusage.
    // SAFETY: getrusage writes into the zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
