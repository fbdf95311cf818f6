//! Other processes on the chosen CPUs: every thread's CPU time read twice from /proc, a moment
//! apart, and charged to the CPU it last ran on.

use crate::probe::Probe;
use std::collections::BTreeMap;
use std::time::Duration;

/// One thread's CPU time at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcSample {
    pub pid: u32,
    pub tid: u32,
    /// The process's command name.
    pub comm: String,
    /// The CPU the thread last ran on.
    pub cpu: usize,
    /// User and system time, clock ticks.
    pub ticks: u64,
}

/// A process that ran on a chosen CPU between two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    pub pid: u32,
    pub comm: String,
    pub cpu: usize,
    /// The part of that CPU's time it used (1.0: all of it).
    pub share: f64,
}

/// Every thread of every process, now.
pub fn sample_processes(p: &dyn Probe) -> Vec<ProcSample> {
    let mut out = Vec::new();
    for pid in p.list("/proc").iter().filter_map(|n| n.parse::<u32>().ok()) {
        for tid in p
            .list(&format!("/proc/{pid}/task"))
            .iter()
            .filter_map(|n| n.parse::<u32>().ok())
        {
            if let Some(s) = p
                .read(&format!("/proc/{pid}/task/{tid}/stat"))
                .and_then(|t| parse_stat(pid, tid, &t))
            {
                out.push(s);
            }
        }
    }
    out
}

/// A `stat` line of /proc: the command name is in parentheses (and may hold spaces and
/// parentheses itself), the fields after it are numbered from 3 (the state).
fn parse_stat(pid: u32, tid: u32, text: &str) -> Option<ProcSample> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    Some(ProcSample {
        pid,
        tid,
        comm,
        cpu: usize::try_from(field(39)?).ok()?,
        ticks: field(14)? + field(15)?,
    })
}

/// The processes other than `own_pid` that used the CPUs `cpus` between `before` and `after`,
/// `elapsed` apart, most first: each thread's ticks in between, charged to the CPU it ran on
/// last.
pub fn busy_processes(
    before: &[ProcSample],
    after: &[ProcSample],
    elapsed: Duration,
    ticks_per_s: u64,
    cpus: &[usize],
    own_pid: u32,
) -> Vec<Busy> {
    let then: BTreeMap<(u32, u32), u64> =
        before.iter().map(|s| ((s.pid, s.tid), s.ticks)).collect();
    let mut used: BTreeMap<(u32, usize), (String, u64)> = BTreeMap::new();
    for s in after
        .iter()
        .filter(|s| s.pid != own_pid && cpus.contains(&s.cpu))
    {
        let delta = s
            .ticks
            .saturating_sub(then.get(&(s.pid, s.tid)).copied().unwrap_or(s.ticks));
        if delta > 0 {
            let e = used.entry((s.pid, s.cpu)).or_insert((s.comm.clone(), 0));
            e.1 += delta;
        }
    }
    let available = elapsed.as_secs_f64() * ticks_per_s as f64;
    let mut busy: Vec<Busy> = used
        .into_iter()
        .map(|((pid, cpu), (comm, ticks))| Busy {
            pid,
            comm,
            cpu,
            share: if available > 0.0 {
                ticks as f64 / available
            } else {
                0.0
            },
        })
        .collect();
    busy.sort_by(|a, b| b.share.total_cmp(&a.share));
    busy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::Machine;

    fn stat(comm: &str, utime: u64, stime: u64, cpu: usize) -> String {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime ... processor is field 39.
        let mut fields = vec!["0".to_string(); 37];
        fields[0] = "S".into();
        fields[11] = utime.to_string();
        fields[12] = stime.to_string();
        fields[36] = cpu.to_string();
        format!("42 ({comm}) {}\n", fields.join(" "))
    }

    #[test]
    fn a_stat_line_with_a_name_in_parentheses() {
        let s = parse_stat(42, 43, &stat("a (b) c", 7, 3, 1)).unwrap();
        assert_eq!((s.comm.as_str(), s.ticks, s.cpu), ("a (b) c", 10, 1));
        assert_eq!(parse_stat(1, 1, "garbage"), None);
    }

    #[test]
    fn threads_are_sampled_from_every_process() {
        let m = Machine::default()
            .with("/proc/42/task/42/stat", &stat("nginx", 5, 5, 1))
            .with("/proc/42/task/44/stat", &stat("nginx", 1, 0, 0))
            .with("/proc/self/status", "x");
        let mut got = sample_processes(&m);
        got.sort_by_key(|s| s.tid);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].tid, got[0].ticks, got[0].cpu), (42, 10, 1));
    }

    #[test]
    fn time_is_charged_to_the_cpu_a_thread_ran_on() {
        let s = |pid, tid, cpu, ticks| ProcSample {
            pid,
            tid,
            comm: format!("p{pid}"),
            cpu,
            ticks,
        };
        let before = [
            s(1, 1, 1, 100),
            s(1, 2, 0, 100),
            s(2, 2, 1, 5),
            s(9, 9, 1, 0),
        ];
        let after = [
            s(1, 1, 1, 130), // 30 ticks on cpu 1
            s(1, 2, 0, 150), // cpu 0 is not chosen
            s(2, 2, 1, 5),   // idle
            s(9, 9, 1, 50),  // this process
            s(3, 3, 1, 4),   // new since: counted from now on
        ];
        let busy = busy_processes(&before, &after, Duration::from_millis(500), 100, &[1], 9);
        assert_eq!(busy.len(), 1, "{busy:?}");
        assert_eq!((busy[0].pid, busy[0].cpu), (1, 1));
        assert!((busy[0].share - 0.6).abs() < 1e-9);
    }
}
