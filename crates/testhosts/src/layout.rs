//! The names and paths of a fixture set, written down before anything is made so that the
//! next set can take apart one whose process was killed.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Where the engines' exec roots, sockets and pid files live (short paths: containerd's
/// sockets must fit in 108 bytes).
pub(crate) const RUN_ROOT: &str = "/run/benchctl-testhosts";
/// Where their images and containers live (a disk filesystem, which overlay2 needs).
pub(crate) const DATA_ROOT: &str = "/var/lib/benchctl-testhosts";

/// Every name and path a fixture set uses, written down before anything is made so that a
/// set whose process was killed can be taken apart by the next one.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) id: String,
    /// Third octet of the set's subnet, 10.213.N.0/24.
    pub(crate) net: u8,
    pub(crate) bridge: String,
    pub(crate) hosts: usize,
}

impl Layout {
    pub(crate) fn netns(&self, i: usize) -> String {
        format!("bc{}h{i}", self.id)
    }
    pub(crate) fn veth_outside(&self, i: usize) -> String {
        format!("bc{}o{i}", self.id)
    }
    pub(crate) fn veth_inside(&self, i: usize) -> String {
        format!("bc{}i{i}", self.id)
    }
    pub(crate) fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.net, 1)
    }
    pub(crate) fn address(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.net, 10 + i as u8)
    }
    pub(crate) fn run_dir(&self) -> PathBuf {
        Path::new(RUN_ROOT).join(&self.id)
    }
    pub(crate) fn data_dir(&self) -> PathBuf {
        Path::new(DATA_ROOT).join(&self.id)
    }
    pub(crate) fn rule(&self) -> Vec<String> {
        [
            "FORWARD",
            "-i",
            &self.bridge,
            "-o",
            &self.bridge,
            "-j",
            "ACCEPT",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
    pub(crate) fn to_text(&self) -> String {
        format!(
            "id={}\nnet={}\nbridge={}\nhosts={}\n",
            self.id, self.net, self.bridge, self.hosts
        )
    }
    pub(crate) fn from_text(text: &str) -> Option<Layout> {
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .map(str::to_string)
        };
        Some(Layout {
            id: get("id")?,
            net: get("net")?.parse().ok()?,
            bridge: get("bridge")?,
            hosts: get("hosts")?.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_survives_being_written_down() {
        let l = Layout {
            id: "ab12".to_string(),
            net: 57,
            bridge: "bcab12br".to_string(),
            hosts: 3,
        };
        let back = Layout::from_text(&l.to_text()).unwrap();
        assert_eq!(back.id, "ab12");
        assert_eq!(back.net, 57);
        assert_eq!(back.bridge, "bcab12br");
        assert_eq!(back.hosts, 3);
        // Interface names must fit the kernel's 15 bytes.
        for name in [
            &l.bridge,
            &l.veth_outside(7),
            &l.veth_inside(7),
            &l.netns(7),
        ] {
            assert!(name.len() <= 15, "{name}");
        }
        assert_eq!(l.address(2), Ipv4Addr::new(10, 213, 57, 12));
    }
}
