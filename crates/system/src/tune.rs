//! What `benchctl system tune` changes, and its exact undo: each change says what it found,
//! so undoing it puts back that value, not a default.

use crate::check::{loopback_exempt, CONNTRACK_MAX, PORT_RANGE, RANDOMIZE_VA_SPACE};
use crate::probe::{Cpus, Probe};
use serde::{Deserialize, Serialize};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The undo file's layout version.
pub const UNDO_VERSION: u32 = 1;

/// Where `system tune` keeps its undo (it needs root, as the changes do).
pub fn undo_path() -> PathBuf {
    PathBuf::from("/var/lib/benchctl/tune-undo.json")
}

/// One change to the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Change {
    /// A file of /proc/sys or /sys given `to`; it held `from`.
    Write {
        path: String,
        from: String,
        to: String,
    },
    /// A rule of the raw table inserted (`iptables -t raw -I CHAIN RULE`) or, not `insert`,
    /// deleted (`-D`).
    Rule {
        v6: bool,
        chain: String,
        rule: Vec<String>,
        insert: bool,
    },
}

impl Change {
    /// The change that puts back what this one changed.
    pub fn undo(&self) -> Change {
        match self {
            Change::Write { path, from, to } => Change::Write {
                path: path.clone(),
                from: to.clone(),
                to: from.clone(),
            },
            Change::Rule {
                v6,
                chain,
                rule,
                insert,
            } => Change::Rule {
                v6: *v6,
                chain: chain.clone(),
                rule: rule.clone(),
                insert: !insert,
            },
        }
    }

    /// The command line this change is ("iptables -t raw -I OUTPUT -o lo -j NOTRACK", or
    /// "/proc/sys/...: 262144 -> 1048576").
    pub fn describe(&self) -> String {
        match self {
            Change::Write { path, from, to } => format!("{path}: {from} -> {to}"),
            Change::Rule { .. } => self.iptables_args().join(" "),
        }
    }

    fn iptables_args(&self) -> Vec<String> {
        let Change::Rule {
            v6,
            chain,
            rule,
            insert,
        } = self
        else {
            return Vec::new();
        };
        let tool = if *v6 { "ip6tables" } else { "iptables" };
        let op = if *insert { "-I" } else { "-D" };
        [tool, "-t", "raw", op, chain]
            .into_iter()
            .map(str::to_string)
            .chain(rule.iter().cloned())
            .collect()
    }
}

/// The kernel settings `system tune` writes (besides each CPU's governor, [`governor_path`]).
const CONNTRACK_MAX_PATH: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
const PORT_RANGE_PATH: &str = "/proc/sys/net/ipv4/ip_local_port_range";
const TW_REUSE_PATH: &str = "/proc/sys/net/ipv4/tcp_tw_reuse";

fn governor_path(cpu: usize) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
}

/// Whether `c` (or its undo) is a change `system tune` makes: one of its settings given a short
/// plain value, or one of its loopback rules. An undo record is run as root, so anything else
/// in it is refused rather than carried out.
fn tune_makes(c: &Change) -> bool {
    match c {
        Change::Write { path, from, to } => {
            let governor = path
                .strip_prefix("/sys/devices/system/cpu/cpu")
                .and_then(|rest| rest.strip_suffix("/cpufreq/scaling_governor"))
                .is_some_and(|n| n.parse::<usize>().is_ok_and(|n| governor_path(n) == *path));
            let plain =
                |v: &str| v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
            (governor
                || [
                    CONNTRACK_MAX_PATH,
                    PORT_RANGE_PATH,
                    TW_REUSE_PATH,
                    RANDOMIZE_VA_SPACE,
                ]
                .contains(&path.as_str()))
                && plain(from)
                && plain(to)
        }
        Change::Rule { v6, chain, rule, .. } => loopback_rules(*v6).iter().any(|r| {
            matches!(r, Change::Rule { chain: c, rule: words, .. } if c == chain && words == rule)
        }),
    }
}

/// A setting as the kernel shows it, its words joined by single spaces ("32768\t60999\n" is
/// "32768 60999").
fn setting(p: &dyn Probe, path: &str) -> Option<String> {
    p.read(path)
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// What `system tune` would change on the machine `p` for a run on `cpus`: loopback exempt
/// from connection tracking (IPv4, and IPv6 where its raw table can be read) and a table of
/// [`CONNTRACK_MAX`] entries, the widest local port range, TIME_WAIT reuse where it is off,
/// and the `performance` governor on the chosen CPUs where cpufreq is exposed.
pub fn plan(p: &dyn Probe, cpus: &Cpus) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut write = |path: &str, want: &str, keep: &dyn Fn(&str) -> bool| {
        if let Some(now) = setting(p, path).filter(|now| !keep(now)) {
            changes.push(Change::Write {
                path: path.to_string(),
                from: now,
                to: want.to_string(),
            });
        }
    };
    let tracking = p.read(CONNTRACK_MAX_PATH).is_some();
    let at_least = |n: u64| move |now: &str| now.parse::<u64>().is_ok_and(|v| v >= n);
    write(
        CONNTRACK_MAX_PATH,
        &CONNTRACK_MAX.to_string(),
        &at_least(CONNTRACK_MAX),
    );
    let range = format!("{} {}", PORT_RANGE.0, PORT_RANGE.1);
    write(PORT_RANGE_PATH, &range, &|now| {
        let b: Vec<u32> = now.split(' ').filter_map(|w| w.parse().ok()).collect();
        b.len() == 2 && b[0] <= PORT_RANGE.0 && b[1] >= PORT_RANGE.1
    });
    write(TW_REUSE_PATH, "1", &|now| now != "0");
    for c in cpus.all() {
        write(&governor_path(c), "performance", &|now| {
            now == "performance"
        });
    }
    if tracking {
        for v6 in [false, true] {
            match p.raw_rules(v6) {
                Some(rules) if !loopback_exempt(&rules) => {
                    changes.extend(loopback_rules(v6));
                }
                _ => {}
            }
        }
    }
    changes
}

/// The change that fixes every process's memory layout (`kernel.randomize_va_space` 0), unless
/// it is fixed already: asked for apart from [`plan`] (`system tune --fixed-layout`), since it
/// gives up a defence against memory-corruption exploits on the whole machine.
pub fn fixed_layout(p: &dyn Probe) -> Option<Change> {
    let now = setting(p, RANDOMIZE_VA_SPACE).filter(|now| now != "0")?;
    Some(Change::Write {
        path: RANDOMIZE_VA_SPACE.to_string(),
        from: now,
        to: "0".to_string(),
    })
}

/// The two rules that take loopback traffic out of connection tracking.
fn loopback_rules(v6: bool) -> [Change; 2] {
    let rule = |chain: &str, iface: &str| Change::Rule {
        v6,
        chain: chain.to_string(),
        rule: [iface, "lo", "-j", "NOTRACK"].map(str::to_string).to_vec(),
        insert: true,
    };
    [rule("PREROUTING", "-i"), rule("OUTPUT", "-o")]
}

/// How changes reach a machine.
pub trait Apply {
    fn write(&self, path: &str, value: &str) -> io::Result<()>;
    /// Runs iptables (ip6tables) with `args` (the tool's name first).
    fn iptables(&self, args: &[String]) -> io::Result<()>;
}

/// This machine (root needed).
#[derive(Debug, Clone, Copy, Default)]
pub struct HostApply;

impl Apply for HostApply {
    fn write(&self, path: &str, value: &str) -> io::Result<()> {
        std::fs::write(path, value)
    }

    fn iptables(&self, args: &[String]) -> io::Result<()> {
        let out = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .output()?;
        if out.status.success() {
            return Ok(());
        }
        Err(io::Error::other(format!(
            "{} ({})",
            String::from_utf8_lossy(&out.stderr).trim(),
            out.status
        )))
    }
}

/// A change that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{change}: {error}{}", if *.undone { " (the changes before it were undone)" } else { "" })]
pub struct TuneError {
    pub change: String,
    #[source]
    pub error: io::Error,
    /// The changes made before this one were put back.
    pub undone: bool,
}

impl TuneError {
    /// The change failed for want of permission: `system tune` must run as root.
    pub fn needs_root(&self) -> bool {
        self.error.kind() == io::ErrorKind::PermissionDenied
            || self.error.to_string().contains("Permission denied")
    }
}

/// Makes `changes` in order. On a failure, puts back the ones already made (in reverse) and
/// says which failed; the machine is then as it was (as far as putting back succeeded).
pub fn apply(changes: &[Change], a: &dyn Apply) -> Result<(), TuneError> {
    for (i, c) in changes.iter().enumerate() {
        if let Err(error) = make(c, a) {
            let undone = changes[..i]
                .iter()
                .rev()
                .all(|d| make(&d.undo(), a).is_ok());
            return Err(TuneError {
                change: c.describe(),
                error,
                undone,
            });
        }
    }
    Ok(())
}

fn make(c: &Change, a: &dyn Apply) -> io::Result<()> {
    match c {
        Change::Write { path, to, .. } => a.write(path, to),
        Change::Rule { .. } => a.iptables(&c.iptables_args()),
    }
}

/// The changes `system tune` made, in the order it made them, kept so `--undo` can put back
/// what was there before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tuned {
    pub version: u32,
    pub changes: Vec<Change>,
}

impl Tuned {
    /// The record at `path`; an empty one when there is none.
    pub fn load(path: &Path) -> io::Result<Tuned> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let t: Tuned = serde_json::from_str(&text).map_err(|e| {
                    io::Error::other(format!("{} is not an undo record: {e}", path.display()))
                })?;
                if t.version != UNDO_VERSION {
                    return Err(io::Error::other(format!(
                        "{} is of version {}; this benchctl reads {UNDO_VERSION}",
                        path.display(),
                        t.version
                    )));
                }
                if let Some(c) = t.changes.iter().find(|c| !tune_makes(c)) {
                    return Err(io::Error::other(format!(
                        "{} holds a change system tune never makes ({}); it is not carried out",
                        path.display(),
                        c.describe()
                    )));
                }
                Ok(t)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Tuned {
                version: UNDO_VERSION,
                changes: Vec::new(),
            }),
            Err(e) => Err(e),
        }
    }

    /// `made` added after what is kept already.
    pub fn add(&mut self, made: &[Change]) {
        self.version = UNDO_VERSION;
        self.changes.extend(made.iter().cloned());
    }

    /// The changes that put the machine back as it was before the first `system tune`: the
    /// undo of each, last first.
    pub fn undo(&self) -> Vec<Change> {
        self.changes.iter().rev().map(Change::undo).collect()
    }

    /// [`Tuned::undo`] less what is no longer in effect on the machine `p` (a reboot puts
    /// sysctls back and drops the rules): a setting is put back only while it holds the value
    /// tune gave it, a rule deleted only while it is there.
    pub fn undo_in_effect(&self, p: &dyn Probe) -> Vec<Change> {
        self.undo()
            .into_iter()
            .filter(|u| match u {
                Change::Write { path, from, .. } => setting(p, path).as_ref() == Some(from),
                Change::Rule {
                    v6, chain, rule, ..
                } => {
                    let line = format!("-A {chain} {}", rule.join(" "));
                    p.raw_rules(*v6)
                        .is_some_and(|rules| rules.lines().any(|l| l.trim() == line))
                }
            })
            .collect()
    }

    /// Writes the record to `path` (its folder made if missing), whole or not at all. The
    /// temporary file is created afresh under a random name in that folder (never through
    /// a name someone planted there) and renamed over `path`.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".tune-undo-")
            .tempfile_in(dir)?;
        tmp.write_all(text.as_bytes())?;
        tmp.write_all(b"\n")?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map(drop).map_err(|e| e.error)
    }
}

#[cfg(test)]
mod tests;
