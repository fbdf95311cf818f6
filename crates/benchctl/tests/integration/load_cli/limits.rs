//! The generator's own limits: its peak memory with 10,000 keep-alive connections and with
//! 100 MB documents, and running out of file descriptors.

use super::{benchctl, json_of};
use crate::support::TestServer;
use std::time::Duration;

/// Raises this process's open-file limit to its hard limit (children inherit it): the test
/// server and the generator each hold 10,000 sockets in the memory test.
fn raise_nofile() -> u64 {
    // SAFETY: a zeroed rlimit is a valid value; the pointers are to live locals.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        l.rlim_cur = l.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &l), 0);
        l.rlim_cur as u64
    }
}

#[test]
fn ten_thousand_keep_alive_connections_under_64_mb() {
    let nofile = raise_nofile();
    assert!(
        nofile >= 10_100,
        "the open-file limit is {nofile}; 10,000 connections need more"
    );
    for engine in ["epoll", "uring"] {
        ten_thousand_keep_alive_connections(engine);
    }
}

/// Ten requests a connection: with fewer, the first connections may have had their share and
/// closed before the last ones opened, on a busy machine, and fewer than 10,000 are ever open
/// at once.
const REQUESTS: &str = "100000";

fn ten_thousand_keep_alive_connections(engine: &str) {
    let s = TestServer::start();
    let f = benchctl(
        &[
            "load",
            "--json",
            "--engine",
            engine,
            "-c",
            "10000",
            "-k",
            "-n",
            REQUESTS,
            &s.url("/cl"),
        ],
        Duration::from_secs(180),
    );
    let mb = f.peak_rss_kib as f64 / 1024.0;
    assert!(f.peak_rss_kib > 0, "VmHWM was never read");
    let ru_mb = f.ru_maxrss_kib as f64 / 1024.0;
    println!(
        "--engine {engine} -c 10000 -k -n {REQUESTS}: peak RSS {mb:.1} MB (ru_maxrss {ru_mb:.1} MB), {:?}, server accepted {} connections, at most {} open at once",
        f.took,
        s.accepted(),
        s.peak_open()
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    assert_eq!(v["complete"], 100_000, "{}", f.stderr);
    assert_eq!(v["failed"], 0, "{}", v["failures"]);
    assert_eq!(v["keep_alive_requests"], 100_000);
    assert!(
        s.accepted() >= 10_000,
        "{} connections accepted",
        s.accepted()
    );
    assert!(
        s.peak_open() >= 9_500,
        "only {} connections open at once",
        s.peak_open()
    );
    assert!(
        mb < 64.0,
        "--engine {engine}: peak RSS {mb:.1} MB with 10,000 connections"
    );
}

fn big_document(n: &str, limit: Duration) {
    let s = TestServer::start();
    let f = benchctl(
        &["load", "--json", "-c", "20", "-n", n, &s.url("/big")],
        limit,
    );
    let mb = f.peak_rss_kib as f64 / 1024.0;
    assert!(f.peak_rss_kib > 0, "VmHWM was never read");
    let ru_mb = f.ru_maxrss_kib as f64 / 1024.0;
    let n: u64 = n.parse().expect("n");
    let gb = (n * crate::support::BIG_LEN) as f64 / 1e9;
    println!(
        "/big (100 MB) -c 20 -n {n}: peak RSS {mb:.1} MB (ru_maxrss {ru_mb:.1} MB), {gb:.1} GB in {:?} ({:.2} GB/s)",
        f.took,
        gb / f.took.as_secs_f64()
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    assert_eq!(v["complete"], n);
    assert_eq!(v["failed"], 0, "{}", v["failures"]);
    assert_eq!(v["body_bytes"], n * crate::support::BIG_LEN);
    assert_eq!(v["server"]["document_length"], crate::support::BIG_LEN);
    assert!(mb < 32.0, "peak RSS {mb:.1} MB for 100 MB documents");
}

#[test]
fn big_documents_stream_under_32_mb() {
    // 20 GB over loopback: about 15 s on two shared cores with the debug build.
    big_document("200", Duration::from_secs(300));
}

/// Under `ulimit -n 1024`, `-c 2000` cannot open its connections: that is the generator's limit,
/// said plainly with a non-zero exit, and not thousands of "Connect" failures charged to the
/// server (which never hears from it).
#[test]
fn running_out_of_file_descriptors_is_the_generators_failure() {
    let s = TestServer::start();
    // `benchctl load ARGS` under the shell's `limits` (ulimit commands).
    let under = |limits: &str, args: &str| {
        let script = format!(
            "{limits} && exec {} load -q {args} {}",
            env!("CARGO_BIN_EXE_benchctl"),
            s.url("/cl")
        );
        std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run sh")
    };
    let out = under("ulimit -n 1024", "-n 4000 -c 2000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("concurrency 2000 needs about")
            && stderr.contains("file descriptors")
            && stderr.contains("ulimit -n"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Connect:"));
    assert_eq!(s.accepted(), 0, "the server never heard from it");

    // Where only the soft limit is low, the generator raises it to what it needs and runs.
    let out = under("ulimit -Sn 256 && ulimit -Hn 2048", "-n 1000 -c 500");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\nFailed requests:        0\n"), "{stdout}");
}
