//! `[[host]]` engines and `[load] generators`: each host's URL, address and TLS material,
//! how its images get there, and which hosts send load.

use super::common::{check_name, line_of};
use crate::error::Diagnostics;
use crate::plan::{DocumentSpec, HostImages, HostSpec, HostUrl, ServerSpec};
use crate::raw::{RawHost, RawScenario};
use model::authority::Authority;
use serde_spanned::Spanned;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// `[load] generators`: each a `[[host]]`, once; every server on a host (a server on this
/// machine's engine listens on 127.0.0.1, which no other machine reaches); every load big
/// enough to give each generator a share.
pub(super) fn check_generators(
    d: &mut Diagnostics,
    raw: &RawScenario,
    servers: &[ServerSpec],
    documents: &[DocumentSpec],
) -> Vec<usize> {
    for doc in &raw.document {
        if let Some(g) = doc
            .get_ref()
            .load
            .as_ref()
            .and_then(|l| l.get_ref().generators.as_ref())
        {
            d.error(
                g.span(),
                "generators are the scenario's, not a document's: set them in [load]",
            );
        }
    }
    let Some(list) = raw
        .load
        .as_ref()
        .and_then(|l| l.get_ref().generators.as_ref())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let names: Vec<&str> = raw
        .host
        .iter()
        .map(|h| h.get_ref().name.get_ref().as_str())
        .collect();
    for g in list.get_ref() {
        match names.iter().position(|n| *n == g.get_ref()) {
            None => d.error(
                g.span(),
                if names.is_empty() {
                    format!(
                        "generator `{}` is not defined (add a [[host]] table with name = \"{}\" and its url)",
                        g.get_ref(),
                        g.get_ref()
                    )
                } else {
                    format!(
                        "generator `{}` is not a [[host]] of this scenario (name one of: {})",
                        g.get_ref(),
                        names.join(", ")
                    )
                },
            ),
            Some(i) if out.contains(&i) => d.error(
                g.span(),
                format!("generator `{}` is named twice (each host runs one generator)", g.get_ref()),
            ),
            Some(i) => out.push(i),
        }
    }
    if list.get_ref().is_empty() {
        d.error(
            list.span(),
            "generators is empty (name at least one [[host]], or leave generators out to generate the load here)",
        );
    }
    if out.is_empty() {
        return out;
    }
    if let Some(s) = servers.iter().find(|s| s.host.is_none()) {
        d.error(
            list.span(),
            format!(
                "server `{}` runs on this machine's engine and listens on 127.0.0.1, which generators on other hosts cannot reach: give it a host, or leave generators out",
                s.name
            ),
        );
    }
    let n = out.len();
    for doc in documents {
        if doc.load.concurrency < n as u32 {
            d.error(
                list.span(),
                format!(
                    "document `{}`: concurrency {} cannot be shared among {n} generators (each needs at least one connection)",
                    doc.name, doc.load.concurrency
                ),
            );
        }
        if let Some(r) = doc.load.requests.filter(|&r| r < n as u64) {
            d.error(
                list.span(),
                format!(
                    "document `{}`: requests = {r} cannot be shared among {n} generators (each needs at least one)",
                    doc.name
                ),
            );
        }
    }
    out
}

/// Engine ports when the URL gives none, as Docker's own client assumes them.
pub(super) const DOCKER_TLS_PORT: u16 = 2376;

pub(super) const DOCKER_PLAIN_PORT: u16 = 2375;

/// The `[[host]]` tables: names, URLs, TLS folders, the plain-TCP consent and addresses.
pub(super) fn check_hosts(
    d: &mut Diagnostics,
    raw: &RawScenario,
    base_dir: &Path,
) -> Vec<HostSpec> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut hosts = Vec::new();
    for h in &raw.host {
        let h = h.get_ref();
        check_name(d, &h.name, "host");
        let name = h.name.get_ref().as_str();
        if let Some(first) = names.insert(name, line_of(d, h.name.span())) {
            d.error(
                h.name.span(),
                format!("duplicate host name `{name}` (first used on line {first}; rename one)"),
            );
        }
        if let Some(spec) = check_host(d, h, base_dir) {
            hosts.push(spec);
        }
    }
    hosts
}

pub(super) fn check_host(d: &mut Diagnostics, h: &RawHost, base_dir: &Path) -> Option<HostSpec> {
    let name = h.name.get_ref().as_str();
    // First, so that its mistake is reported beside the URL's.
    let images = check_host_images(d, h);
    let url_text = h.url.get_ref().trim();
    if let Some(c) = &h.ssh_config {
        if !url_text.starts_with("ssh://") {
            d.error(
                c.span(),
                format!("ssh_config applies to ssh:// engines only, and host `{name}` is {url_text} (remove it)"),
            );
        }
    }
    let url = if let Some(path) = url_text.strip_prefix("unix://") {
        unix_url(d, h, path)?
    } else if let Some(rest) = url_text.strip_prefix("tcp://") {
        tcp_url(d, h, rest, base_dir)?
    } else if let Some(rest) = url_text.strip_prefix("ssh://") {
        ssh_url(d, h, rest, base_dir)?
    } else {
        d.error(
            h.url.span(),
            format!("`{url_text}` is not a Docker engine URL (write unix:///var/run/docker.sock, ssh://USER@HOST, tcp://HOST:2376 with tls_dir, or tcp://HOST:2375 with insecure = true)"),
        );
        return None;
    };
    let address = host_address(d, h, &url)?;
    Some(HostSpec {
        name: name.to_string(),
        url,
        address,
        images: images?,
    })
}

/// `tls_dir` and `insecure` are about TCP connections: an error for each on another engine.
fn reject_tcp_keys(d: &mut Diagnostics, h: &RawHost) {
    let name = h.name.get_ref();
    let url_text = h.url.get_ref().trim();
    let spans = [
        h.tls_dir.as_ref().map(|t| ("tls_dir", t.span())),
        h.insecure.as_ref().map(|i| ("insecure", i.span())),
    ];
    for (key, span) in spans.into_iter().flatten() {
        d.error(
            span,
            format!(
                "{key} applies to tcp:// engines only, and host `{name}` is {url_text} (remove it)"
            ),
        );
    }
}

/// `unix://PATH`, the rest of the URL being `path`.
fn unix_url(d: &mut Diagnostics, h: &RawHost, path: &str) -> Option<HostUrl> {
    reject_tcp_keys(d, h);
    if !path.starts_with('/') {
        let url_text = h.url.get_ref().trim();
        d.error(
            h.url.span(),
            format!("`{url_text}` needs an absolute socket path (write it as unix:///var/run/docker.sock)"),
        );
        return None;
    }
    Some(HostUrl::Unix {
        path: PathBuf::from(path),
    })
}

/// `tcp://HOST[:PORT]`, the rest of the URL being `rest`: with a TLS folder, or insecure.
fn tcp_url(d: &mut Diagnostics, h: &RawHost, rest: &str, base_dir: &Path) -> Option<HostUrl> {
    let name = h.name.get_ref();
    let url_text = h.url.get_ref().trim();
    let url_span = h.url.span();
    let tls_dir = h.tls_dir.as_ref().and_then(|t| tls_folder(d, t, base_dir));
    let insecure = h.insecure.as_ref().is_some_and(|i| *i.get_ref());
    match (&h.tls_dir, &h.insecure) {
        (Some(_), Some(i)) if *i.get_ref() => d.error(
            i.span(),
            format!("host `{name}` has both tls_dir and insecure = true (with TLS the connection is not insecure: remove insecure)"),
        ),
        (None, _) if !insecure => d.error(
            url_span.clone(),
            format!(
                "`{url_text}` is plain, unauthenticated TCP: whoever reaches that port controls the engine and its machine (add tls_dir = \"FOLDER\" with ca.pem, cert.pem and key.pem, or insecure = true to accept it on a network you trust)"
            ),
        ),
        _ => {}
    }
    let rest = rest.trim_end_matches('/');
    let Some((host, port)) = split_host_port(rest) else {
        d.error(
            url_span,
            format!("`{url_text}` is not tcp://HOST or tcp://HOST:PORT (a port is 1-65535; an IPv6 address goes in brackets: tcp://[fd00::5]:2376)"),
        );
        return None;
    };
    let port = port.unwrap_or(if h.tls_dir.is_some() {
        DOCKER_TLS_PORT
    } else {
        DOCKER_PLAIN_PORT
    });
    if h.tls_dir.is_some() && tls_dir.is_none() {
        return None;
    }
    Some(HostUrl::Tcp {
        host,
        port,
        tls_dir,
    })
}

/// The folder `tls_dir` names, if it holds the three files a TLS connection needs.
fn tls_folder(d: &mut Diagnostics, t: &Spanned<String>, base_dir: &Path) -> Option<PathBuf> {
    let dir = base_dir.join(t.get_ref());
    let missing: Vec<&str> = ["ca.pem", "cert.pem", "key.pem"]
        .into_iter()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    d.error(
        t.span(),
        format!(
            "tls_dir `{}` ({}) has no {} (a TLS folder holds the engine's CA certificate, ca.pem, and this client's certificate and key, cert.pem and key.pem)",
            t.get_ref(),
            dir.display(),
            missing.join(", ")
        ),
    );
    None
}

/// `ssh://[USER@]HOST[:PORT][/SOCKET]`, the rest of the URL being `rest`.
fn ssh_url(d: &mut Diagnostics, h: &RawHost, rest: &str, base_dir: &Path) -> Option<HostUrl> {
    reject_tcp_keys(d, h);
    let url_text = h.url.get_ref().trim();
    let url_span = h.url.span();
    let (authority, socket) = match rest.find('/') {
        Some(i) => (&rest[..i], PathBuf::from(&rest[i..])),
        None => (rest, PathBuf::from("/var/run/docker.sock")),
    };
    let (user, host_port) = match authority.rsplit_once('@') {
        Some((u, hp)) => (Some(u), hp),
        None => (None, authority),
    };
    let user_ok = user.is_none_or(|u| {
        !u.is_empty()
            && !u.starts_with('-')
            && u.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    });
    let Some((host, port)) = split_host_port(host_port).filter(|(h, _)| !h.starts_with('-')) else {
        d.error(
            url_span,
            format!("`{url_text}` is not ssh://[USER@]HOST[:PORT][/SOCKET] (an IPv6 address goes in brackets: ssh://bench@[fd00::5])"),
        );
        return None;
    };
    if !user_ok {
        d.error(
            url_span,
            format!("`{url_text}`: the user name may hold letters, digits, -, _ and . only"),
        );
        return None;
    }
    let config = h.ssh_config.as_ref().and_then(|c| {
        let file = base_dir.join(c.get_ref());
        if file.is_file() {
            Some(file)
        } else {
            d.error(
                c.span(),
                format!(
                    "ssh_config `{}` ({}) is not a file",
                    c.get_ref(),
                    file.display()
                ),
            );
            None
        }
    });
    if h.ssh_config.is_some() && config.is_none() {
        return None;
    }
    Some(HostUrl::Ssh {
        destination: match user {
            Some(u) => format!("{u}@{host}"),
            None => host,
        },
        port,
        socket,
        config,
    })
}

/// The IP address the host's servers listen on: `address`, or the URL's host if it is one.
fn host_address(d: &mut Diagnostics, h: &RawHost, url: &HostUrl) -> Option<IpAddr> {
    if let Some(a) = &h.address {
        let parsed = a.get_ref().trim().parse::<IpAddr>().ok();
        if parsed.is_none() {
            d.error(
                a.span(),
                format!("address `{}` is not an IP address (servers listen on an address such as 10.0.0.5 or fd00::5)", a.get_ref()),
            );
        }
        return parsed;
    }
    match url {
        HostUrl::Unix { .. } => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        HostUrl::Ssh {
            destination: host, ..
        }
        | HostUrl::Tcp { host, .. } => {
            let parsed = host
                .rsplit_once('@')
                .map_or(host.as_str(), |(_, h)| h)
                .parse::<IpAddr>()
                .ok();
            if parsed.is_none() {
                let name = h.name.get_ref();
                d.error(
                    h.url.span(),
                    format!("host `{name}` is named `{host}`, not by an IP address: add address = \"<its IP>\" (its servers listen on that address and the load is sent there)"),
                );
            }
            parsed
        }
    }
}

/// `images`: one of [`HostImages::ALL`]; `None` (an error recorded) for any other word.
pub(super) fn check_host_images(d: &mut Diagnostics, h: &RawHost) -> Option<HostImages> {
    let Some(i) = &h.images else {
        return Some(HostImages::default());
    };
    let found = HostImages::ALL
        .into_iter()
        .find(|m| m.as_str() == i.get_ref().trim());
    if found.is_none() {
        d.error(
            i.span(),
            format!(
                "images `{}` is not a way to give host `{}` its images (write \"build\": its engine builds them, or \"ship\": they are built here and sent to it, for a host that reaches no package mirror)",
                i.get_ref(),
                h.name.get_ref()
            ),
        );
    }
    found
}

/// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`.
pub(super) fn split_host_port(text: &str) -> Option<(String, Option<u16>)> {
    let a = Authority::split(text).ok().filter(|a| !a.bare_colon())?;
    let port = match a.port_number() {
        None => None,
        Some(p) => Some(p.ok()?),
    };
    let valid = !a.host.is_empty()
        && a.host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
    valid.then(|| (a.host.to_string(), port))
}
