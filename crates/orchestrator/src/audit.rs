//! What a started server container is checked for before it is measured: that none of its
//! processes holds root's identity, and (on this machine's engine) that it listens nowhere but
//! where it was told to. Both refuse the server when they fail, and both refuse it when the
//! check itself cannot be made: a server is measured only once it is known to be confined.

use crate::client::Orchestrator;
use crate::container::ContainerGuard;
use crate::error::{OrchestratorError, Result};
use bollard::query_parameters::TopOptionsBuilder;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The identities `ps` is asked for: real, effective, saved and filesystem ids, and the
/// supplementary groups (docker's top finds the processes' rows by the PID column).
const PS_COLUMNS: &str = "-o pid,ruid,euid,suid,fsuid,rgid,egid,sgid,fsgid,supgid";

/// One process of a container as its engine's `ps` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIds {
    /// Its pid in the engine's process namespace.
    pub pid: u32,
    /// Real, effective, saved and filesystem uid.
    pub uids: [u32; 4],
    /// Real, effective, saved and filesystem gid, then the supplementary groups.
    pub gids: Vec<u32>,
}

/// Reads `ps`'s table for [`PS_COLUMNS`] (as docker's top returns it) into processes.
pub fn parse_process_table(titles: &[String], rows: &[Vec<String>]) -> Result<Vec<ProcessIds>> {
    let col = |name: &str| {
        titles
            .iter()
            .position(|t| t.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                OrchestratorError::Invalid(format!(
                    "the engine's process list has no {name} column (it has {titles:?})"
                ))
            })
    };
    let at = |names: &[&str]| names.iter().map(|n| col(n)).collect::<Result<Vec<usize>>>();
    let pid = col("PID")?;
    let uid_cols = at(&["RUID", "EUID", "SUID", "FSUID"])?;
    let gid_cols = at(&["RGID", "EGID", "SGID", "FSGID"])?;
    let sup = col("SUPGID")?;
    let number = |row: &Vec<String>, i: usize| -> Result<u32> {
        let text = row.get(i).map(|s| s.trim()).unwrap_or("");
        text.parse().map_err(|_| {
            OrchestratorError::Invalid(format!(
                "the engine's process list has {text:?} where a number belongs (row {row:?})"
            ))
        })
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut uids = [0u32; 4];
        for (slot, &i) in uids.iter_mut().zip(&uid_cols) {
            *slot = number(row, i)?;
        }
        let mut gids = gid_cols
            .iter()
            .map(|&i| number(row, i))
            .collect::<Result<Vec<u32>>>()?;
        // ps shows no supplementary group as "-", several as "1,2,3".
        let groups = row.get(sup).map(|s| s.trim()).unwrap_or("-");
        if groups != "-" && !groups.is_empty() {
            for g in groups.split(',') {
                gids.push(g.trim().parse().map_err(|_| {
                    OrchestratorError::Invalid(format!(
                        "the engine's process list has supplementary groups {groups:?}"
                    ))
                })?);
            }
        }
        out.push(ProcessIds {
            pid: number(row, pid)?,
            uids,
            gids,
        });
    }
    Ok(out)
}

/// Why the processes may not run as they are: any uid or gid 0 among them.
pub fn root_among(processes: &[ProcessIds]) -> Option<String> {
    processes.iter().find_map(|p| {
        if p.uids.contains(&0) {
            Some(format!(
                "process {} runs as root (real, effective, saved, filesystem uid: {:?})",
                p.pid, p.uids
            ))
        } else if p.gids.contains(&0) {
            Some(format!(
                "process {} is in group 0, root's (its gids: {:?})",
                p.pid, p.gids
            ))
        } else {
            None
        }
    })
}

/// A socket that waits for others: a TCP socket in LISTEN, or a UDP socket bound and not
/// connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Listener {
    pub udp: bool,
    pub addr: SocketAddr,
    pub inode: u64,
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", if self.udp { "udp" } else { "tcp" }, self.addr)
    }
}

/// Where a server may wait for others: the TCP address it serves on and, when it serves
/// HTTP/3, the UDP socket of the same address and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Socket {
    pub udp: bool,
    pub addr: SocketAddr,
}

impl Socket {
    pub fn tcp(addr: SocketAddr) -> Socket {
        Socket { udp: false, addr }
    }

    pub fn udp(addr: SocketAddr) -> Socket {
        Socket { udp: true, addr }
    }
}

impl std::fmt::Display for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", if self.udp { "udp" } else { "tcp" }, self.addr)
    }
}

/// The listeners of one `/proc/net/{tcp,tcp6,udp,udp6}` table.
pub fn parse_net_table(text: &str, udp: bool) -> Vec<Listener> {
    const TCP_LISTEN: &str = "0A";
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Some(local), Some(remote)) = (parse_hex_addr(f[1]), parse_hex_addr(f[2])) else {
            continue;
        };
        let waiting = if udp {
            remote.port() == 0 && remote.ip().is_unspecified()
        } else {
            f[3] == TCP_LISTEN
        };
        if let (true, Ok(inode)) = (waiting, f[9].parse::<u64>()) {
            out.push(Listener {
                udp,
                addr: local,
                inode,
            });
        }
    }
    out
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6), as the kernel prints a socket's
/// address: each 32-bit word in the machine's byte order.
fn parse_hex_addr(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_ne_bytes(),
        )
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            // A socket of the IPv6 family bound to a v4-mapped address (gatling binds
            // ::ffff:127.0.0.1) listens on that IPv4 address alone.
            let v6 = Ipv6Addr::from(bytes);
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The socket inodes the processes hold open, read from `/proc/PID/fd`.
fn socket_inodes(pids: &[u32]) -> std::io::Result<HashSet<u64>> {
    let mut inodes = HashSet::new();
    for pid in pids {
        let entries = match std::fs::read_dir(format!("/proc/{pid}/fd")) {
            Ok(e) => e,
            // A process that ended since the list was made holds nothing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries.flatten() {
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            if let Some(n) = target
                .strip_prefix("socket:[")
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse().ok())
            {
                inodes.insert(n);
            }
        }
    }
    Ok(inodes)
}

/// The listeners the processes hold, from their network namespace's tables.
fn listeners_of(pids: &[u32]) -> std::io::Result<Vec<Listener>> {
    let Some(first) = pids.first() else {
        return Ok(Vec::new());
    };
    let held = socket_inodes(pids)?;
    let mut out = Vec::new();
    for (table, udp) in [
        ("tcp", false),
        ("tcp6", false),
        ("udp", true),
        ("udp6", true),
    ] {
        let text = match std::fs::read_to_string(format!("/proc/{first}/net/{table}")) {
            Ok(t) => t,
            // A kernel without IPv6 has no tcp6 table.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        out.extend(
            parse_net_table(&text, udp)
                .into_iter()
                .filter(|l| held.contains(&l.inode)),
        );
    }
    Ok(out)
}

/// The listeners that are not among `allowed` (a server serves over TCP, and over UDP only
/// where HTTP/3 is asked of it).
pub fn unexpected_listeners(found: &[Listener], allowed: &[Socket]) -> Vec<Listener> {
    let mut out: Vec<Listener> = found
        .iter()
        .filter(|l| {
            !allowed.contains(&Socket {
                udp: l.udp,
                addr: l.addr,
            })
        })
        .copied()
        .collect();
    out.sort_by_key(|l| (l.udp, l.addr));
    out.dedup_by_key(|l| (l.udp, l.addr));
    out
}

impl Orchestrator {
    /// Checks a running server container before it is measured: no process with uid or gid 0,
    /// however the image or manifest spelled its user; and, on this machine's engine, no
    /// socket listening anywhere but at `allowed` (with host networking, a server listening on
    /// 0.0.0.0 would be served to the network). `Err(Refused)` says why.
    pub async fn audit(&self, guard: &ContainerGuard, allowed: &[Socket]) -> Result<()> {
        let refused = |why: String| OrchestratorError::Refused {
            name: guard.name().to_string(),
            why,
        };
        let top = self
            .docker
            .top_processes(
                guard.id(),
                Some(TopOptionsBuilder::default().ps_args(PS_COLUMNS).build()),
            )
            .await
            .map_err(|e| {
                refused(format!(
                    "its processes' users could not be read from the engine ({}), so it cannot be shown not to run as root",
                    crate::error::explain_docker(&e)
                ))
            })?;
        let processes = parse_process_table(
            top.titles.as_deref().unwrap_or_default(),
            top.processes.as_deref().unwrap_or_default(),
        )
        .map_err(|e| refused(format!("its processes' users could not be read: {e}")))?;
        if processes.is_empty() {
            return Err(refused("the engine lists no process in it".to_string()));
        }
        if let Some(why) = root_among(&processes) {
            return Err(refused(format!(
                "{why}; a server never runs as root: give its image or server.toml a numeric, non-root UID:GID"
            )));
        }
        if !self.endpoint.is_local() {
            return Ok(());
        }
        let pids: Vec<u32> = processes.iter().map(|p| p.pid).collect();
        let found = tokio::task::spawn_blocking(move || listeners_of(&pids))
            .await
            .map_err(|e| refused(format!("reading its sockets failed: {e}")))?
            .map_err(|e| {
                refused(format!(
                    "its sockets could not be read from /proc ({e}; the check needs root), so it cannot be shown to listen only where it was told to"
                ))
            })?;
        let extra = unexpected_listeners(&found, allowed);
        if !extra.is_empty() {
            let list: Vec<String> = extra.iter().map(|l| l.to_string()).collect();
            let want: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            return Err(refused(format!(
                "it listens on {} beyond {} (with host networking, a socket on another address or port is served to whatever reaches this machine): make it listen only on $BENCH_ADDR:$BENCH_PORT",
                list.join(", "),
                want.join(" and ")
            )));
        }
        Ok(())
    }
}

/// The volumes an image declares that no mount of the container covers: each would be a
/// writable disk of unbounded size beside the read-only root.
pub fn uncovered_volumes<'a>(declared: &'a [String], covered: &[&str]) -> Vec<&'a str> {
    let norm = |p: &str| {
        p.split('/')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    };
    let covered: Vec<String> = covered.iter().map(|c| norm(c)).collect();
    declared
        .iter()
        .map(String::as_str)
        .filter(|v| !covered.contains(&norm(v)))
        .collect()
}

impl Orchestrator {
    /// Refuses an image that declares a `VOLUME` the container's own mounts (`covered`: its
    /// tmpfs mounts, the documents, the certificate) do not cover: the engine would give it a
    /// writable volume of unbounded size, read-only root or not.
    pub(crate) async fn check_volumes(&self, image: &str, covered: &[&str]) -> Result<()> {
        let info = self
            .docker
            .inspect_image(image)
            .await
            .map_err(|e| OrchestratorError::docker(format!("inspect image {image}"), e))?;
        let declared = info.config.and_then(|c| c.volumes).unwrap_or_default();
        let extra = uncovered_volumes(&declared, covered);
        if extra.is_empty() {
            return Ok(());
        }
        Err(OrchestratorError::Invalid(format!(
            "image {image} declares VOLUME {}: a volume is a writable disk of unbounded size beside the read-only root; declare a sized tmpfs at each in the kind's server.toml ([container] tmpfs = [{{ path = \"{}\", size = \"16m\" }}]) or remove the VOLUME from the image",
            extra.join(", "),
            extra[0]
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_process_table_reads_every_identity() {
        let titles = strings(&[
            "PID", "RUID", "EUID", "SUID", "FSUID", "RGID", "EGID", "SGID", "FSGID", "SUPGID",
        ]);
        let rows = vec![
            strings(&["101", "33", "33", "33", "33", "33", "33", "33", "33", "-"]),
            strings(&[
                "102", "33", "33", "33", "33", "33", "33", "33", "33", "4,27",
            ]),
        ];
        let p = parse_process_table(&titles, &rows).unwrap();
        assert_eq!(p[0].pid, 101);
        assert_eq!(p[1].gids, [33, 33, 33, 33, 4, 27]);
        assert_eq!(root_among(&p), None);
        for (col, what) in [
            (2, "runs as root"),
            (4, "runs as root"),
            (8, "group 0"),
            (9, "group 0"),
        ] {
            let mut rows = rows.clone();
            rows[1][col] = if col == 9 { "4,0".into() } else { "0".into() };
            let p = parse_process_table(&titles, &rows).unwrap();
            let why = root_among(&p).unwrap();
            assert!(
                why.starts_with("process 102") && why.contains(what),
                "{col}: {why}"
            );
        }
        assert!(parse_process_table(&strings(&["UID", "PID"]), &[]).is_err());
        let mut bad = rows.clone();
        bad[0][1] = "root".into();
        assert!(parse_process_table(&titles, &bad).is_err());
    }

    #[test]
    fn net_tables_give_listeners_only() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 1111 1 0 100 0 0 10 0\n\
   1: 00000000:0051 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 2222 1 0 100 0 0 10 0\n\
   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000    33        0 3333 1 0 100 0 0 10 0\n";
        let l = parse_net_table(tcp, false);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(l[1].addr, "0.0.0.0:81".parse().unwrap());
        assert_eq!(l[1].inode, 2222);
        let tcp6 = "  sl  local_address                         remote_address                        st\n\
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 4444 1\n";
        let l = parse_net_table(tcp6, false);
        assert_eq!(l[0].addr, "[::1]:8080".parse().unwrap());
        let mapped = tcp6.replace(
            "00000000000000000000000001000000",
            "0000000000000000FFFF00000100007F",
        );
        let l = parse_net_table(&mapped, false);
        assert_eq!(l[0].addr, "127.0.0.1:8080".parse().unwrap());
        let udp = "  sl  local_address rem_address   st\n\
   5: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000    33        0 5555 2\n\
   6: 0100007F:A000 0100007F:0035 01 00000000:00000000 00:00000000 00000000    33        0 6666 2\n";
        let l = parse_net_table(udp, true);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].addr, "0.0.0.0:5353".parse().unwrap());
    }

    #[test]
    fn a_volume_is_covered_by_a_mount_at_its_path() {
        let declared = vec![
            "/data".to_string(),
            "/var/cache/x/".to_string(),
            "/srv/www".to_string(),
        ];
        assert_eq!(
            uncovered_volumes(&declared, &["/tmp", "/srv/www"]),
            ["/data", "/var/cache/x/"]
        );
        assert!(uncovered_volumes(&declared, &["/data/", "/var/cache/x", "/srv/www"]).is_empty());
        assert!(uncovered_volumes(&[], &[]).is_empty());
    }

    #[test]
    fn only_the_allowed_tcp_sockets_pass() {
        let at = |udp, a: &str| Listener {
            udp,
            addr: a.parse().unwrap(),
            inode: 1,
        };
        let allowed = vec![Socket::tcp("127.0.0.1:8080".parse().unwrap())];
        assert!(unexpected_listeners(&[at(false, "127.0.0.1:8080")], &allowed).is_empty());
        let extra = unexpected_listeners(
            &[
                at(false, "127.0.0.1:8080"),
                at(false, "0.0.0.0:8080"),
                at(false, "0.0.0.0:8080"),
                at(true, "127.0.0.1:8080"),
                at(false, "127.0.0.1:2019"),
            ],
            &allowed,
        );
        let shown: Vec<String> = extra.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            shown,
            [
                "tcp 0.0.0.0:8080",
                "tcp 127.0.0.1:2019",
                "udp 127.0.0.1:8080"
            ]
        );
        // A server of HTTP/3 also waits on UDP at its own address and port, and nowhere else.
        let allowed = vec![
            Socket::tcp("127.0.0.1:8080".parse().unwrap()),
            Socket::udp("127.0.0.1:8080".parse().unwrap()),
        ];
        let extra = unexpected_listeners(
            &[
                at(false, "127.0.0.1:8080"),
                at(true, "127.0.0.1:8080"),
                at(true, "0.0.0.0:8080"),
                at(true, "127.0.0.1:8443"),
            ],
            &allowed,
        );
        let shown: Vec<String> = extra.iter().map(|l| l.to_string()).collect();
        assert_eq!(shown, ["udp 0.0.0.0:8080", "udp 127.0.0.1:8443"]);
    }
}
