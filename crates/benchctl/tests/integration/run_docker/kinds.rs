//! Server kinds beyond the seed servers: one added as a folder, the modern-static scenario's,
//! and an A/B run whose baseline side is another benchctl binary's.

use super::{
    assert_available_as, assert_no_container, docker_dir_arg, loads_of, scenario, server, Run,
    FULL_RUN_LIMIT,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Copies the files git tracks under `rel` (a folder of the repository) to `to`.
fn copy_tracked(rel: &str, to: &Path) {
    let out = Command::new("git")
        .args(["ls-files", "-z", rel])
        .current_dir(testsupport::repo_root())
        .output()
        .expect("git ls-files");
    assert!(out.status.success());
    for file in out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let file = std::str::from_utf8(file).expect("UTF-8 path");
        let dst = to.join(file);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(testsupport::repo_root().join(file), &dst).unwrap();
    }
}

/// A server kind the project does not ship, written by the contract in docker/README.md:
/// busybox's httpd, from Debian's package.
fn write_busybox_kind(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("Dockerfile"),
        "# busybox httpd from Debian bookworm's package busybox\n\
         FROM debian:bookworm-slim\n\
         LABEL benchctl.server=busybox\n\
         RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox && rm -rf /var/lib/apt/lists/*\n\
         COPY entrypoint.sh /usr/local/bin/entrypoint.sh\n\
         USER 65534:65534\n\
         ENTRYPOINT [\"/usr/local/bin/entrypoint.sh\"]\n",
    )
    .unwrap();
    let entry = dir.join("entrypoint.sh");
    std::fs::write(
        &entry,
        "#!/bin/sh\nset -eu\n[ -n \"${BENCH_PORT:-}\" ] || { echo 'BENCH_PORT is not set' >&2; exit 64; }\n\
         exec busybox httpd -f -p \"${BENCH_ADDR:-127.0.0.1}:$BENCH_PORT\" -h /srv/www\n",
    )
    .unwrap();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("server.toml"),
        "[server]\nname = \"busybox httpd\"\nsource = \"Debian bookworm package busybox\"\n\n\
         [container]\nuser = \"65534:65534\"\ncapabilities = []\npids_limit = 16\n\
         tmpfs = [{ path = \"/tmp\", size = \"1m\" }]\n",
    )
    .unwrap();
}

/// A server kind is a folder: added to a copy of the repository (and one more kept outside it,
/// named with `context`), named in a scenario, built, verified, measured and removed, with no
/// change to benchctl.
#[test]
fn a_server_kind_added_as_a_folder_is_measured() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let copy = tempfile::tempdir().expect("tempdir");
    copy_tracked("docker", copy.path());
    copy_tracked("scenarios", copy.path());
    write_busybox_kind(&copy.path().join("docker/busybox"));
    write_busybox_kind(&copy.path().join("elsewhere/tiny"));
    let scenario = copy.path().join("scenarios/added.toml");
    std::fs::write(
        &scenario,
        r#"
name = "added"
[load]
requests = 200
concurrency = 4
[[server]]
name = "bb"
kind = "busybox"
memory = "64m"
[[server]]
name = "outside"
context = "../elsewhere/tiny"
memory = "64m"
[[document]]
name = "page"
path = "/page.html"
generate = "html"
size = 468
"#,
    )
    .unwrap();
    let servers = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(["servers", "--docker-dir"])
        .arg(copy.path().join("docker"))
        .output()
        .expect("benchctl servers");
    let listed = String::from_utf8_lossy(&servers.stdout);
    assert!(
        listed.contains("busybox: busybox httpd (Debian bookworm package busybox)"),
        "{listed}"
    );
    // The docker folder beside the scenario's is found by itself.
    let mut run = Run::start(&scenario, &[]);
    let f = run.finish(Duration::from_secs(10 * 60));
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let record = run.record(&f);
    for name in ["bb", "outside"] {
        assert_eq!(
            server(&record, name)["status"]["state"],
            "available",
            "{record:#}"
        );
        let loads = loads_of(&record, name);
        assert_eq!(loads.len(), 1, "{record:#}");
        assert_eq!(loads[0]["load"]["complete"], 200);
        assert_eq!(loads[0]["load"]["failed"], 0);
    }
    assert_eq!(server(&record, "outside")["kind"], "tiny");
    assert_no_container(&f);

    // An unknown kind names the kinds there are.
    std::fs::write(
        &scenario,
        std::fs::read_to_string(&scenario)
            .unwrap()
            .replace("kind = \"busybox\"", "kind = \"busybx\""),
    )
    .unwrap();
    let v = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .arg("validate")
        .arg(&scenario)
        .output()
        .expect("benchctl validate");
    let err = String::from_utf8_lossy(&v.stderr);
    assert_eq!(v.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "added.toml:8:8: error: unknown server kind `busybx` (kinds found: apache, busybox,"
        ),
        "{err}"
    );
}

/// The servers people compare today, each verified byte for byte and measured with keep-alive.
#[test]
fn modern_static_measures_every_server() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let mut run = Run::start(
        &testsupport::repo_root().join("scenarios/modern-static.toml"),
        &["--runs", "1"],
    );
    let f = run.finish(FULL_RUN_LIMIT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let record = run.record(&f);
    for (name, header) in [
        ("nginx", "nginx/"),
        ("apache", "Apache/"),
        ("lighttpd", "lighttpd/"),
        ("caddy", "Caddy"),
        ("h2o", "h2o/"),
    ] {
        assert_available_as(&record, name, header);
        let loads = loads_of(&record, name);
        assert_eq!(loads.len(), 2, "{name}: both documents");
        for l in loads {
            assert_eq!(l["load"]["failed"], 0, "{name}: {l:#}");
            assert_eq!(l["load"]["complete"], 2000, "{name}: {l:#}");
        }
    }
    assert_no_container(&f);
}

/// scenarios/http3.toml as the README's command runs it (one round): nginx 1.26 and Caddy
/// measured over HTTP/1.1 with TLS, HTTP/2 and HTTP/3, every load whole, the report's table of
/// versions side by side, nothing left behind.
#[test]
fn http3_measures_nginx_and_caddy_over_every_version() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let mut run = Run::start(
        &testsupport::repo_root().join("scenarios/http3.toml"),
        &["--runs", "1"],
    );
    let f = run.finish(FULL_RUN_LIMIT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let record = run.record(&f);
    for (name, header) in [("nginx", "nginx/1.26"), ("caddy", "Caddy")] {
        assert_available_as(&record, name, header);
        let mut seen: Vec<(String, String)> = loads_of(&record, name)
            .iter()
            .map(|l| {
                assert_eq!(l["load"]["failed"], 0, "{name}: {l:#}");
                (
                    l["document"].as_str().unwrap().to_string(),
                    l["protocol"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        seen.sort();
        let want: Vec<(String, String)> = ["html", "png"]
            .iter()
            .flat_map(|d| {
                [("h1", "https"), ("h2", "h2"), ("h3", "h3")]
                    .map(|(v, p)| (format!("{d}-{v}"), p.to_string()))
            })
            .collect();
        assert_eq!(seen, want, "{name}");
    }
    assert!(
        f.stdout.contains("By HTTP version") && f.stdout.contains("HTTP/3 req/s"),
        "{}",
        f.stdout
    );
    assert_no_container(&f);
}

const SMALL_NGINX: &str = r#"
name = "small"
runs = 1

[load]
requests = 500
concurrency = 10

[[server]]
name = "nginx"
kind = "nginx"

[[document]]
name = "hello"
path = "/"
generate = "hello"
"#;

/// An A/B run of the load generator itself: another benchctl binary (here the same build, as
/// the last good one would be) sends the baseline side's loads, this one the candidate's, and
/// the record says which sent what. A binary that is not benchctl is refused before anything
/// starts.
#[test]
fn another_benchctl_binary_sends_the_baseline_sides_loads() {
    if !testsupport::docker_or_skip() {
        return;
    }
    let _lock = testsupport::exclusive();
    let (_dir, path) = scenario(SMALL_NGINX);
    let docker_dir = docker_dir_arg();
    let mut base = Run::start(&path, &["--docker-dir", &docker_dir]);
    let f = base.finish(Duration::from_secs(5 * 60));
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let base_record = base.out.to_str().unwrap().to_string();

    let binary = env!("CARGO_BIN_EXE_benchctl");
    let mut ab = Run::start(
        &path,
        &[
            "--docker-dir",
            &docker_dir,
            "--against",
            &base_record,
            "--baseline-generator",
            binary,
            "--runs",
            "4",
            "--budget",
            "3m",
        ],
    );
    let f = ab.finish(Duration::from_secs(6 * 60));
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let record = ab.record(&f);
    let against = &record["against"];
    let named = against["baseline_generator"].as_str().expect("named");
    assert!(named.starts_with(binary), "{named}");
    assert!(named.contains("(benchctl "), "{named}");
    let base_loads = against["loads"].as_array().unwrap();
    assert_eq!(base_loads.len(), 4, "{against:#}");
    for l in base_loads.iter().chain(loads_of(&record, "nginx")) {
        assert_eq!(l["load"]["complete"], 500, "{l:#}");
        assert_eq!(l["load"]["failed"], 0, "{l:#}");
    }
    assert!(
        f.stdout.contains("sent by ")
            && f.stdout.contains("the candidate's by this run's benchctl"),
        "{}",
        f.describe()
    );
    assert_no_container(&f);

    // Not a benchctl: refused before any work, no record written.
    let mut bad = Run::start(
        &path,
        &[
            "--docker-dir",
            &docker_dir,
            "--against",
            &base_record,
            "--baseline-generator",
            "/bin/true",
        ],
    );
    let f = bad.finish(Duration::from_secs(60));
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(
        f.stderr.contains("--baseline-generator /bin/true:"),
        "{}",
        f.describe()
    );
    assert!(!bad.out.exists());
    assert_no_container(&f);
}
