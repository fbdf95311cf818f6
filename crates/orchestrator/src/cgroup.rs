//! A container's CPU and memory counters read straight from its cgroup, when its engine runs on
//! this machine.
//!
//! Docker's stats endpoint answers from a collector that samples every container once a
//! second, so even a one-shot reading waits up to a second for the next tick, and it is
//! stamped at that tick rather than when it was asked for. Around a load of a few hundred
//! milliseconds that cost more than the load, twice, and blurred where the load began and
//! ended. The kernel's own counters (`cpu.stat`'s `usage_usec` on cgroup v2, `cpuacct.usage` on
//! v1) are exact and read in microseconds, so a sampler uses them whenever it can find the
//! container's cgroup here, and falls back to the API otherwise (an engine on another
//! machine, a benchctl inside a container with its own cgroup namespace).
//!
//! The cgroup is found from the container's main process: `/proc/PID/cgroup` names its path in
//! each hierarchy, and `/proc/self/mountinfo` says where each hierarchy is mounted. The path
//! must contain the container's id, so a pid of another machine's engine that happens to exist
//! here, or one reused since, is never taken for the container.

use std::path::PathBuf;

/// Where one container's counters are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cgroup {
    cpu: CpuCounter,
    memory: Option<MemoryFiles>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CpuCounter {
    /// cgroup v2 `cpu.stat`, whose `usage_usec` line is the CPU time in microseconds.
    Stat(PathBuf),
    /// cgroup v1 `cpuacct.usage`: nanoseconds.
    Usage(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct MemoryFiles {
    /// `memory.current` (v2) or `memory.usage_in_bytes` (v1).
    usage: PathBuf,
    /// `memory.stat`, for the page cache left out as `docker stats` leaves it out.
    stat: PathBuf,
    /// The page cache's key in `memory.stat`: `inactive_file` (v2) or `cache` (v1), the keys
    /// Docker's own figure subtracts.
    cache_key: &'static str,
}

/// One line of `/proc/PID/cgroup`: the hierarchy's controllers (empty for v2's unified one)
/// and the process's path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Membership {
    controllers: Vec<String>,
    path: String,
}

/// A cgroup hierarchy mounted here: its root within the hierarchy, where it is mounted, v2 or
/// not, and (v1) its controllers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    root: String,
    point: PathBuf,
    v2: bool,
    controllers: Vec<String>,
}

impl Cgroup {
    /// The cgroup of the container `id` whose main process is `pid` in this machine's process
    /// namespace; `None` when it cannot be found or its CPU counter cannot be read.
    pub(crate) fn of(pid: u32, id: &str) -> Option<Cgroup> {
        if pid == 0 || id.len() < 12 {
            return None;
        }
        let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let cg = locate(&parse_memberships(&cgroups), &parse_mounts(&mounts), id)?;
        cg.cpu_ns().is_some().then_some(cg)
    }

    /// CPU time the cgroup's processes used so far, in nanoseconds.
    pub(crate) fn cpu_ns(&self) -> Option<u64> {
        match &self.cpu {
            CpuCounter::Stat(p) => {
                let text = std::fs::read_to_string(p).ok()?;
                stat_value(&text, "usage_usec")?.checked_mul(1000)
            }
            CpuCounter::Usage(p) => std::fs::read_to_string(p).ok()?.trim().parse().ok(),
        }
    }

    /// Memory in use now, page cache excluded, in bytes.
    pub(crate) fn memory_bytes(&self) -> Option<u64> {
        let m = self.memory.as_ref()?;
        let usage: u64 = std::fs::read_to_string(&m.usage)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let cache = std::fs::read_to_string(&m.stat)
            .ok()
            .and_then(|t| stat_value(&t, m.cache_key))
            .unwrap_or(0);
        Some(usage.saturating_sub(cache))
    }
}

/// The value of `key` in a flat-keyed cgroup file (`key value` per line).
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The lines of `/proc/PID/cgroup` (`ID:CONTROLLERS:PATH`).
fn parse_memberships(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect(),
                path: path.to_string(),
            })
        })
        .collect()
}

/// The cgroup mounts of `/proc/self/mountinfo`: `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`.
fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let root = unescape(fields.get(3)?);
            let point = PathBuf::from(unescape(fields.get(4)?));
            let mut rest = after.split(' ');
            let fstype = rest.next()?;
            let _source = rest.next()?;
            let options = rest.next().unwrap_or("");
            match fstype {
                "cgroup2" => Some(Mount {
                    root,
                    point,
                    v2: true,
                    controllers: Vec::new(),
                }),
                "cgroup" => Some(Mount {
                    root,
                    point,
                    v2: false,
                    controllers: options.split(',').map(str::to_string).collect(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| {
                let v = d.iter().fold(0u16, |v, c| v * 8 + u16::from(c - b'0'));
                u8::try_from(v).ok()
            });
        match octal {
            Some(v) => {
                out.push(v);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of the process's cgroup in `mount`, when the mount holds it.
fn dir_in(mount: &Mount, path: &str) -> Option<PathBuf> {
    let rel = if mount.root == "/" {
        path
    } else {
        let rest = path.strip_prefix(mount.root.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    let dir = mount.point.join(rel.trim_start_matches('/'));
    // `..` in a path would leave the mount: never follow one.
    dir.components()
        .all(|c| !matches!(c, std::path::Component::ParentDir))
        .then_some(dir)
}

/// The counters of container `id` from its process's memberships and the mounts here.
fn locate(memberships: &[Membership], mounts: &[Mount], id: &str) -> Option<Cgroup> {
    let ours = |path: &str| path.contains(id);
    let v1 = |controller: &str| -> Option<PathBuf> {
        let m = memberships
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == controller) && ours(&m.path))?;
        mounts
            .iter()
            .filter(|mount| !mount.v2 && mount.controllers.iter().any(|c| c == controller))
            .find_map(|mount| dir_in(mount, &m.path))
    };
    if let Some(dir) = v1("cpuacct") {
        let memory = v1("memory").map(|d| MemoryFiles {
            usage: d.join("memory.usage_in_bytes"),
            stat: d.join("memory.stat"),
            cache_key: "cache",
        });
        return Some(Cgroup {
            cpu: CpuCounter::Usage(dir.join("cpuacct.usage")),
            memory,
        });
    }
    // v2: the unified hierarchy's line has no controllers.
    let m = memberships
        .iter()
        .find(|m| m.controllers.is_empty() && ours(&m.path))?;
    let dir = mounts
        .iter()
        .filter(|mount| mount.v2)
        .find_map(|mount| dir_in(mount, &m.path))?;
    Some(Cgroup {
        cpu: CpuCounter::Stat(dir.join("cpu.stat")),
        memory: Some(MemoryFiles {
            usage: dir.join("memory.current"),
            stat: dir.join("memory.stat"),
            cache_key: "inactive_file",
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "6ae31a1b223aabbc894ad69ffc4958e5a0ac4265cf7da01cbe0582b5030c7f13";

    fn v1_cgroup() -> String {
        format!(
            "9:name=systemd:/docker/{ID}\n4:memory:/docker/{ID}\n2:cpuacct:/docker/{ID}\n1:cpu:/docker/{ID}\n0::/docker/{ID}\n"
        )
    }

    const V1_MOUNTS: &str = "\
25 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
33 25 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:9 - tmpfs tmpfs rw,mode=755
40 33 0:35 / /sys/fs/cgroup/cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpuacct
41 33 0:36 / /sys/fs/cgroup/cpu rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu
42 33 0:37 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,memory
43 33 0:38 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:18 - cgroup2 cgroup2 rw
";

    #[test]
    fn cgroup_v1_uses_cpuacct_and_the_memory_controller() {
        let cg = locate(
            &parse_memberships(&v1_cgroup()),
            &parse_mounts(V1_MOUNTS),
            ID,
        )
        .unwrap();
        assert_eq!(
            cg.cpu,
            CpuCounter::Usage(PathBuf::from(format!(
                "/sys/fs/cgroup/cpuacct/docker/{ID}/cpuacct.usage"
            )))
        );
        let m = cg.memory.unwrap();
        assert_eq!(
            m.usage,
            PathBuf::from(format!(
                "/sys/fs/cgroup/memory/docker/{ID}/memory.usage_in_bytes"
            ))
        );
        assert_eq!(m.cache_key, "cache");
    }

    #[test]
    fn cgroup_v1_with_cpu_and_cpuacct_mounted_together() {
        let mounts = "40 33 0:35 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct\n";
        let cgroups = format!("3:cpu,cpuacct:/system.slice/docker-{ID}.scope\n");
        let cg = locate(&parse_memberships(&cgroups), &parse_mounts(mounts), ID).unwrap();
        assert_eq!(
            cg.cpu,
            CpuCounter::Usage(PathBuf::from(format!(
                "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-{ID}.scope/cpuacct.usage"
            )))
        );
        assert_eq!(cg.memory, None);
    }

    #[test]
    fn cgroup_v2_uses_the_unified_hierarchy() {
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        let cgroups = format!("0::/system.slice/docker-{ID}.scope\n");
        let cg = locate(&parse_memberships(&cgroups), &parse_mounts(mounts), ID).unwrap();
        let dir = format!("/sys/fs/cgroup/system.slice/docker-{ID}.scope");
        assert_eq!(
            cg.cpu,
            CpuCounter::Stat(PathBuf::from(format!("{dir}/cpu.stat")))
        );
        let m = cg.memory.unwrap();
        assert_eq!(m.usage, PathBuf::from(format!("{dir}/memory.current")));
        assert_eq!(m.cache_key, "inactive_file");
    }

    #[test]
    fn a_path_without_the_container_id_is_not_the_container() {
        let cgroups = "0::/user.slice/user-0.slice/session-1.scope\n";
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            locate(&parse_memberships(cgroups), &parse_mounts(mounts), ID),
            None
        );
    }

    #[test]
    fn a_mount_of_a_subtree_maps_paths_below_its_root_only() {
        // Inside a cgroup namespace or a bind mount of part of the hierarchy.
        let mounts = "30 25 0:26 /docker /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let inside = format!("0::/docker/{ID}\n");
        let cg = locate(&parse_memberships(&inside), &parse_mounts(mounts), ID).unwrap();
        assert_eq!(
            cg.cpu,
            CpuCounter::Stat(PathBuf::from(format!("/sys/fs/cgroup/{ID}/cpu.stat")))
        );
        let outside = format!("0::/dockerd/{ID}\n");
        assert_eq!(
            locate(&parse_memberships(&outside), &parse_mounts(mounts), ID),
            None
        );
        let up = format!("0::/docker/../x/{ID}\n");
        assert_eq!(
            locate(&parse_memberships(&up), &parse_mounts(mounts), ID),
            None
        );
    }

    #[test]
    fn flat_keyed_files_and_escaped_mount_points() {
        let stat = "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n";
        assert_eq!(stat_value(stat, "usage_usec"), Some(1_234_567));
        assert_eq!(stat_value(stat, "user"), None);
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain\\"), "/plain\\");
        assert_eq!(unescape("/odd\\777"), "/odd\\777");
    }

    #[test]
    fn this_process_has_no_container_cgroup() {
        // Its own cgroup does not contain a made-up container id.
        assert_eq!(Cgroup::of(std::process::id(), ID), None);
        assert_eq!(Cgroup::of(0, ID), None);
    }
}
