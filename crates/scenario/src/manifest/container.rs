//! A manifest's `[container]` table: the user a server runs as (never root, however it is
//! spelled), the capabilities it gets back, its writable tmpfs mounts and its task limit.

use super::{ContainerNeeds, RawContainer, RawTmpfs, TmpfsNeed, DEFAULT_PIDS_LIMIT};
use crate::error::Diagnostics;
use crate::units::parse_size;
use serde_spanned::Spanned;
use std::path::Path;

/// The default writable mounts of a server container.
const DEFAULT_TMPFS: [(&str, u64); 2] = [("/tmp", 64 << 20), ("/run", 16 << 20)];
/// The bounds of `pids_limit`.
const PIDS_RANGE: std::ops::RangeInclusive<i64> = 16..=65_536;

/// Capabilities a manifest may name (the others would let a server reach beyond itself:
/// `NET_RAW` reads the host's traffic on a host-network container, `SYS_ADMIN` is root).
const ALLOWED_CAPABILITIES: [&str; 9] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "NET_BIND_SERVICE",
    "SETGID",
    "SETUID",
    "SYS_NICE",
];

/// The `[container]` table: what the server's container is allowed.
pub(super) fn check_container(d: &mut Diagnostics, c: &RawContainer) -> ContainerNeeds {
    let user = match parse_user(c.user.get_ref().trim()) {
        Ok(user) => user,
        Err(why) => {
            d.error(c.user.span(), why);
            String::new()
        }
    };
    ContainerNeeds {
        user,
        capabilities: check_capabilities(d, &c.capabilities),
        tmpfs: c
            .tmpfs
            .as_ref()
            .map_or_else(default_tmpfs, |list| check_tmpfs(d, list)),
        pids_limit: check_pids_limit(d, c.pids_limit.as_ref()),
    }
}

/// `capabilities`: only [`ALLOWED_CAPABILITIES`], written without `CAP_`.
fn check_capabilities(d: &mut Diagnostics, caps: &[Spanned<String>]) -> Vec<String> {
    let mut capabilities = Vec::new();
    for cap in caps {
        let name = cap.get_ref().trim().to_ascii_uppercase();
        let name = name.strip_prefix("CAP_").unwrap_or(&name).to_string();
        if ALLOWED_CAPABILITIES.contains(&name.as_str()) {
            capabilities.push(name);
        } else {
            d.error(
                cap.span(),
                format!(
                    "capability `{}` is not one a server container may have (allowed: {})",
                    cap.get_ref(),
                    ALLOWED_CAPABILITIES.join(", ")
                ),
            );
        }
    }
    capabilities
}

/// The writable mounts of a manifest that names none.
fn default_tmpfs() -> Vec<TmpfsNeed> {
    DEFAULT_TMPFS
        .iter()
        .map(|&(path, size)| TmpfsNeed {
            path: path.to_string(),
            size,
            exec: false,
        })
        .collect()
}

/// `tmpfs`: each an absolute path, once, away from the documents and the kernel's file
/// systems, with a size.
fn check_tmpfs(d: &mut Diagnostics, list: &[Spanned<RawTmpfs>]) -> Vec<TmpfsNeed> {
    let mut out: Vec<TmpfsNeed> = Vec::new();
    for t in list {
        let t = t.get_ref();
        let given = t.path.get_ref();
        let p = &normalize_abs(given);
        let good_path = given.starts_with('/')
            && p.len() > 1
            && !given.split('/').any(|seg| seg == ".." || seg == ".")
            && !protected_mount(p);
        if !good_path {
            d.error(
                t.path.span(),
                format!("tmpfs path `{given}` must be an absolute path in the image without `.` or `..`, not / nor /srv, nor /srv/www, /proc, /sys, /dev or anything beneath them"),
            );
        } else if out.iter().any(|o| &o.path == p) {
            d.error(t.path.span(), format!("tmpfs path `{p}` is listed twice"));
        }
        let size = match parse_size(t.size.get_ref()) {
            Ok(0) => {
                d.error(
                    t.size.span(),
                    "a tmpfs of size 0 holds nothing (give e.g. \"16m\")",
                );
                0
            }
            Ok(n) => n,
            Err(e) => {
                d.error(t.size.span(), format!("bad tmpfs size: {e}"));
                0
            }
        };
        out.push(TmpfsNeed {
            path: p.clone(),
            size,
            exec: t.exec,
        });
    }
    out
}

/// `pids_limit`, within [`PIDS_RANGE`].
fn check_pids_limit(d: &mut Diagnostics, pids_limit: Option<&Spanned<i64>>) -> u32 {
    match pids_limit {
        None => DEFAULT_PIDS_LIMIT,
        Some(p) if PIDS_RANGE.contains(p.get_ref()) => *p.get_ref() as u32,
        Some(p) => {
            d.error(
                p.span(),
                format!(
                    "pids_limit {} is outside {}..={} (count the server's processes and threads)",
                    p.get_ref(),
                    PIDS_RANGE.start(),
                    PIDS_RANGE.end()
                ),
            );
            DEFAULT_PIDS_LIMIT
        }
    }
}

/// Where no tmpfs may go: it would hide the documents (`/srv/www`, and `/srv` above them) or
/// the kernel's own file systems.
fn protected_mount(path: &str) -> bool {
    let path = Path::new(path);
    path == Path::new("/srv")
        || ["/srv/www", "/proc", "/sys", "/dev"]
            .iter()
            .any(|top| path.starts_with(top))
}

/// An absolute path with repeated and trailing slashes dropped (`"/srv/www/"` is `"/srv/www"`),
/// so that the rules above see one spelling of each folder.
fn normalize_abs(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|seg| !seg.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// The `user` a server's container runs as: numeric `UID:GID`, neither of them 0, returned in
/// canonical decimal. Names are refused because an image's `/etc/passwd` decides what they
/// mean (a name can be uid 0 there), and the runtime reads `00`, `0000` or `+0` as uid 0, so
/// only digits are taken and compared as numbers. The GID is required: without one the
/// runtime takes the image's group for the uid, or group 0 where the image has none.
pub fn parse_user(text: &str) -> Result<String, String> {
    const EXAMPLE: &str = "(name a numeric, non-root UID:GID, e.g. \"65534:65534\")";
    let shown = text.escape_debug();
    let number = |part: &str, what: &str| -> Result<u32, String> {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "user `{shown}` is not numeric UID:GID: its {what} `{}` is not a decimal number {EXAMPLE}",
                part.escape_debug()
            ));
        }
        match part.parse::<u32>() {
            Ok(n) if n < u32::MAX => Ok(n),
            _ => Err(format!(
                "user `{shown}`: {what} {part} is out of range (at most {}) {EXAMPLE}",
                u32::MAX - 1
            )),
        }
    };
    if text.trim().is_empty() {
        return Err(format!("user is empty {EXAMPLE}"));
    }
    let Some((uid, gid)) = text.split_once(':') else {
        return Err(format!(
            "user `{shown}` names no group: write UID:GID (without a GID the runtime takes the image's group for the uid, or group 0, root's) {EXAMPLE}"
        ));
    };
    let (uid, gid) = (number(uid, "UID")?, number(gid, "GID")?);
    if uid == 0 {
        return Err(format!(
            "user `{shown}` is root (uid 0, however it is written); server containers never run as root {EXAMPLE}"
        ));
    }
    if gid == 0 {
        return Err(format!(
            "user `{shown}` is in group 0 (root's group, which owns much of an image's files); server containers never run in it {EXAMPLE}"
        ));
    }
    Ok(format!("{uid}:{gid}"))
}
