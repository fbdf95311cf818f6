//! Who owns a container or a run's files: a process, named by its pid and its start time.
//!
//! A pid alone is not enough to tell a live owner from a dead one, because pids are reused: a
//! container labelled with the pid of a run that crashed an hour ago could be mistaken for a
//! live run's if some unrelated process has that pid now. The kernel's start time of the
//! process (field 22 of `/proc/<pid>/stat`, in clock ticks since boot) together with the pid
//! names one process for the life of the machine.

use std::path::Path;

/// A process that owns containers or files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Start time in clock ticks since boot; `None` when it could not be read (such an owner is
    /// judged by its pid alone).
    pub start: Option<u64>,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start: start_ticks(pid),
        }
    }

    /// Whether the owner is still running: a process with its pid exists and, when the start
    /// time is known, started at that time.
    pub fn is_alive(&self) -> bool {
        if !Path::new(&format!("/proc/{}", self.pid)).exists() {
            return false;
        }
        match (self.start, start_ticks(self.pid)) {
            (Some(want), Some(now)) => want == now,
            // The process exists but its start time cannot be compared: assume it is the owner,
            // the safe side for a sweep.
            _ => true,
        }
    }

    /// `PID` or `PID:START`, the form labels and owner files keep.
    pub fn to_label(&self) -> String {
        match self.start {
            Some(s) => format!("{}:{s}", self.pid),
            None => self.pid.to_string(),
        }
    }

    /// The inverse of [`to_label`](Self::to_label); `None` for text that names no process.
    pub fn from_label(text: &str) -> Option<Owner> {
        let text = text.trim();
        let (pid, start) = match text.split_once(':') {
            Some((p, s)) => (p, Some(s.parse().ok()?)),
            None => (text, None),
        };
        Some(Owner {
            pid: pid.parse().ok().filter(|&p| p > 0)?,
            start,
        })
    }
}

/// This machine's identity (`/etc/machine-id`, else the kernel's boot id): a pid names a
/// process only on the machine it was read on.
pub fn machine_id() -> Option<String> {
    ["/etc/machine-id", "/proc/sys/kernel/random/boot_id"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks since boot.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses itself:
    // count fields from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards; the start time is field 22.
    after.split_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_round_trips() {
        let me = Owner::current();
        assert!(me.start.is_some());
        assert!(me.is_alive());
        assert_eq!(Owner::from_label(&me.to_label()), Some(me));
    }

    #[test]
    fn a_reused_pid_is_not_the_owner() {
        let me = Owner::current();
        let impostor = Owner {
            pid: me.pid,
            start: me.start.map(|s| s + 1),
        };
        assert!(!impostor.is_alive());
    }

    #[test]
    fn a_finished_process_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!Owner { pid, start: None }.is_alive());
    }

    #[test]
    fn labels_parse_strictly() {
        assert_eq!(
            Owner::from_label("42:7"),
            Some(Owner {
                pid: 42,
                start: Some(7)
            })
        );
        assert_eq!(
            Owner::from_label("42"),
            Some(Owner {
                pid: 42,
                start: None
            })
        );
        assert_eq!(Owner::from_label("x"), None);
        assert_eq!(Owner::from_label("0"), None);
        assert_eq!(Owner::from_label("42:x"), None);
    }
}
