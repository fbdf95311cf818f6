//! `benchctl load` as users run it, through the built binary, against a test server on
//! 127.0.0.1 port 0: bad input ends with exit status 2 and a one-line error (never a panic),
//! the text output carries every line ab prints, `--json` is JSON with the counters,
//! percentiles and a decodable histogram, and the generator's peak memory stays small with
//! 10,000 keep-alive connections (under 64 MB) and with 100 MB documents (under 32 MB).
//!
//! Every child process runs under a deadline and is killed when it passes it.

#[path = "../../loadgen/tests/support/mod.rs"]
mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::TestServer;

/// What a finished child left behind.
struct Finished {
    /// Exit status, or None when a signal ended it.
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident set size, KiB: the child's VmHWM, polled while it ran.
    peak_rss_kib: u64,
    /// The child's `ru_maxrss` from `wait4`, KiB: an upper bound only, because Linux carries
    /// the spawning process's own high-water mark into it at exec (see [`reap`]).
    ru_maxrss_kib: i64,
    took: Duration,
}

impl Finished {
    fn describe(&self) -> String {
        format!(
            "exit {:?} signal {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.signal, self.took, self.stdout, self.stderr
        )
    }
}

/// Runs `benchctl ARGS`, killing it if it runs past `limit`; reaps it with `wait4` to read its
/// peak RSS.
fn benchctl(args: &[&str], limit: Duration) -> Finished {
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchctl");
    let pid = child.id() as libc::pid_t;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let (status, usage, hwm) = reap(pid, Some(t + limit), &mut child);
    let took = t.elapsed();
    let f = Finished {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        peak_rss_kib: hwm,
        ru_maxrss_kib: usage.ru_maxrss,
        took,
    };
    assert!(
        took < limit,
        "benchctl {args:?} ran past {limit:?} and was killed\n{}",
        f.describe()
    );
    f
}

/// The VmHWM line of /proc/PID/status, KiB (None once the process has exited).
fn vm_hwm_kib(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits for `pid` (polling, so a deadline can kill it) and returns its status, its rusage and
/// the highest VmHWM seen while it ran.
///
/// The peak RSS comes from VmHWM, polled every few milliseconds (it is itself a high-water
/// mark, so only the last few milliseconds before exit can go unseen). `ru_maxrss` would be
/// simpler but is wrong here: the child is spawned with vfork semantics, and at exec Linux
/// folds the old address space's high-water mark — this test process's — into the child's
/// `ru_maxrss`, so it reads as the test process's peak whenever that is the larger.
fn reap(
    pid: libc::pid_t,
    deadline: Option<Instant>,
    child: &mut std::process::Child,
) -> (i32, libc::rusage, u64) {
    let mut killed = false;
    let mut hwm = 0;
    loop {
        if let Some(h) = vm_hwm_kib(pid) {
            hwm = hwm.max(h);
        }
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value of a plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live locals; pid is our own unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            return (status, usage, hwm);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if !killed && deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

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

const SHORT: Duration = Duration::from_secs(30);

fn assert_usage_error(args: &[&str], names: &str) {
    let f = benchctl(args, SHORT);
    assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
    assert!(
        !f.stderr.contains("panicked"),
        "panic for {args:?}\n{}",
        f.describe()
    );
    assert!(
        f.stdout.is_empty(),
        "nothing on stdout for {args:?}\n{}",
        f.describe()
    );
    let errors: Vec<&str> = f.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(
        errors.len(),
        1,
        "one error line for {args:?}\n{}",
        f.describe()
    );
    assert!(
        errors[0].contains(names),
        "the error for {args:?} should name {names:?}: {:?}",
        errors[0]
    );
}

#[test]
fn bad_input_is_a_one_line_error_with_status_2() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let port_url = format!("http://127.0.0.1:{}/cl", s.port);
    let cases: &[(&[&str], &str)] = &[
        (&["load", "127.0.0.1:8080/"], "no scheme"),
        (&["load", "http://127.0.0.1:99999/"], "bad port"),
        (&["load", "http://127.0.0.1:http/"], "bad port"),
        (&["load", "gopher://127.0.0.1/"], "unsupported scheme"),
        (
            &["load", "-f", "TLS1.1", "https://127.0.0.1/"],
            "TLS 1.2 and TLS 1.3 only",
        ),
        (
            &[
                "load",
                "--verify",
                "/nonexistent/ca.pem",
                "https://127.0.0.1/",
            ],
            "--verify /nonexistent/ca.pem",
        ),
        (&["load", "--tls-resume", &url], "apply to https:// URLs"),
        (&["load", "-c", "0", &url], "concurrency must be at least 1"),
        (
            &["load", "-n", "2", "-c", "5", &url],
            "concurrency 5 > requests 2",
        ),
        (
            &["load", "-n", "0", &url],
            "request count must be at least 1",
        ),
        (&["load", "-s", "soon", &port_url], "bad duration"),
        (
            &["load", "--coalesce", "sometimes", &url],
            "--coalesce: `sometimes` is not auto, off or a duration",
        ),
        (&["load", "--coalesce", "50", &url], "has no unit"),
        (
            &["load", "--coalesce", "2s", &url],
            "longer than a second: a nap that long would stall",
        ),
        (
            &["load", "--interval", "5ms", &url],
            "--interval: \"5ms\" is shorter than 10ms",
        ),
        (
            &["load", "--interval", "often", &url],
            "--interval: bad duration",
        ),
        (&["load", "--streams", "4", &url], "--streams needs --h2"),
        (
            &["load", "--max-concurrent-streams", "4", &url],
            "--streams needs --h2",
        ),
        (
            &["load", "--h2", "--http1.1", &url],
            "one of --h2 and --http1.1",
        ),
        (
            &["load", "--h2", "-k", "--pipeline", "4", &url],
            "--pipeline is HTTP/1.1's",
        ),
        (
            &["load", "--h2", "--streams", "0", &url],
            "0 streams per connection is out of range",
        ),
    ];
    for (args, names) in cases {
        assert_usage_error(args, names);
        // Our own checks print exactly one line and nothing else.
        let f = benchctl(args, SHORT);
        assert_eq!(
            f.stderr.trim_end().lines().count(),
            1,
            "{args:?}\n{}",
            f.describe()
        );
        assert!(
            f.stderr.starts_with("benchctl: error: "),
            "{args:?}\n{}",
            f.describe()
        );
    }
    // Flags the parser rejects: one error line naming the flag (the usage hint may follow).
    assert_usage_error(&["load", "--bogus", &url], "--bogus");
    assert_usage_error(&["load", "-n", "many", &url], "many");
    assert_eq!(s.accepted(), 0, "bad input never reaches the server");
}

#[test]
fn text_output_has_every_line_ab_prints() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let f = benchctl(&["load", "-q", "-n", "20", "-c", "2", "-k", &url], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let lines: Vec<&str> = f.stdout.lines().collect();
    let want_prefixes = [
        "Server Software:        testserver/1.0".to_string(),
        "Server Hostname:        127.0.0.1".to_string(),
        format!("Server Port:            {}", s.port),
        "Document Path:          /cl".to_string(),
        "Document Length:        13 bytes".to_string(),
        "Concurrency Level:      2".to_string(),
        "Time taken for tests:   ".to_string(),
        "Complete requests:      20".to_string(),
        "Failed requests:        0".to_string(),
        "Keep-Alive requests:    20".to_string(),
        format!("Total transferred:      {} bytes", s.bytes_sent()),
        "HTML transferred:       260 bytes".to_string(),
        "Requests per second:    ".to_string(),
        "Time per request:       ".to_string(),
        "Time per request:       ".to_string(),
        "Transfer rate:          ".to_string(),
        "Connection Times (ms)".to_string(),
        "              min  mean[+/-sd] median   max".to_string(),
        "Connect:    ".to_string(),
        "Processing: ".to_string(),
        "Waiting:    ".to_string(),
        "Total:      ".to_string(),
        "Percentage of the requests served within a certain time (ms)".to_string(),
        "  50%  ".to_string(),
        "  66%  ".to_string(),
        "  75%  ".to_string(),
        "  80%  ".to_string(),
        "  90%  ".to_string(),
        "  95%  ".to_string(),
        "  98%  ".to_string(),
        "  99%  ".to_string(),
        " 100%  ".to_string(),
    ];
    // Each line in ab's order (blank lines between the blocks are allowed).
    let mut at = 0;
    for want in &want_prefixes {
        let found = lines[at..]
            .iter()
            .position(|l| l.starts_with(want.as_str()));
        let Some(i) = found else {
            panic!("no line starting {want:?} after line {at}\n{}", f.stdout);
        };
        at += i + 1;
    }
    let last = lines[at - 1];
    assert!(last.ends_with("(longest request)"), "{last:?}");
    assert!(lines.iter().any(|l| l.ends_with("[#/sec] (mean)")));
    assert!(lines
        .iter()
        .any(|l| l.ends_with("[ms] (mean, across all concurrent requests)")));
    assert!(lines.iter().any(|l| l.ends_with("[Kbytes/sec] received")));
    assert!(!f.stdout.contains("Non-2xx"), "{}", f.stdout);
}

#[test]
fn text_output_breaks_down_failures_and_non_2xx() {
    let s = TestServer::start();
    let f = benchctl(
        &["load", "-q", "-n", "6", "-c", "2", &s.url("/vary")],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stdout.contains("\nFailed requests:        3\n"),
        "{}",
        f.stdout
    );
    assert!(
        f.stdout
            .contains("\n   (Connect: 0, Receive: 0, Length: 3, Exceptions: 0)\n"),
        "{}",
        f.stdout
    );
    assert!(
        !f.stdout.contains("Keep-Alive requests"),
        "printed only with -k\n{}",
        f.stdout
    );

    let s = TestServer::start();
    let f = benchctl(&["load", "-q", "-n", "4", "-c", "2", &s.url("/404")], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stdout.contains("\nFailed requests:        0\n"),
        "{}",
        f.stdout
    );
    assert!(
        f.stdout.contains("\nNon-2xx responses:      4\n"),
        "{}",
        f.stdout
    );
}

#[test]
fn json_output_parses_with_counters_percentiles_and_histogram() {
    let s = TestServer::start();
    let f = benchctl(
        &["load", "--json", "-n", "20", "-c", "2", &s.url("/cl")],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v: serde_json::Value = serde_json::from_str(&f.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", f.stdout));
    assert!(
        v["requests_per_second"].as_f64().is_some_and(|r| r > 0.0),
        "{v}"
    );
    assert_eq!(v["complete"], 20);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["server"]["document_length"], 13);
    assert_eq!(v["body_bytes"], 260);
    assert_eq!(v["total_bytes"], s.bytes_sent());
    let total = &v["total"];
    let pcts = total["percentiles_us"]
        .as_array()
        .expect("percentiles_us array");
    let picked: Vec<f64> = pcts.iter().filter_map(|p| p[0].as_f64()).collect();
    for p in [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0] {
        assert!(
            picked.contains(&p),
            "percentile {p} missing from {picked:?}"
        );
    }
    let b64 = total["histogram"].as_str().expect("histogram string");
    let h = loadgen::json::decode_histogram(b64).expect("the histogram decodes");
    assert_eq!(h.len(), 20, "one value per response");
    // How the times were taken: receive stamps by default, with the generator's own delay
    // kept apart.
    assert_eq!(v["settings"]["rx_stamps"], true, "{v}");
    assert_eq!(v["settings"]["coalesce"], "auto");
    assert_eq!(v["stamped"], 20);
    assert_eq!(v["read_delay"]["moments"]["count"], 20);
    assert!(v["naps"].is_u64());
    let p100 = pcts
        .last()
        .and_then(|p| p[1].as_u64())
        .expect("a 100% value");
    let diff = h.max().abs_diff(p100) as f64;
    assert!(
        diff <= 1.0 + p100 as f64 * 0.002,
        "histogram max {} vs 100% {p100}",
        h.max()
    );
}

#[test]
fn json_output_has_the_load_over_time() {
    let s = TestServer::start();
    let f = benchctl(
        &[
            "load",
            "--json",
            "-k",
            "--rate",
            "200",
            "--duration",
            "1s",
            "-c",
            "4",
            "--interval",
            "250ms",
            &s.url("/cl"),
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    let t = &v["timeline"];
    assert_eq!(t["interval_s"], 0.25, "{t}");
    let intervals = t["intervals"].as_array().expect("intervals");
    assert_eq!(intervals.len(), 4, "{t}");
    let done: u64 = intervals
        .iter()
        .map(|i| i["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(v["complete"].as_u64(), Some(done));
    // A constant-rate load keeps the latency from the intended send times per interval too.
    let corrected: u64 = intervals
        .iter()
        .filter_map(|i| i["corrected"].as_str())
        .map(|h| loadgen::json::decode_histogram(h).unwrap().len())
        .sum();
    assert_eq!(corrected, done);
}

#[test]
fn user_timestamps_time_responses_when_read_and_never_nap() {
    let s = TestServer::start();
    let f = benchctl(
        &[
            "load",
            "--json",
            "--user-timestamps",
            "-n",
            "20",
            "-c",
            "2",
            &s.url("/cl"),
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    assert_eq!(v["complete"], 20);
    assert_eq!(v["settings"]["rx_stamps"], false, "{v}");
    assert_eq!(v["settings"]["coalesce"], "off");
    assert_eq!(v["stamped"], 0);
    assert!(v["read_delay"].is_null());
    assert_eq!(v["naps"], 0);
}

#[test]
fn closed_stdout_is_not_a_panic() {
    // `benchctl load ... | head -1`: the reader goes away before the results are printed.
    let s = TestServer::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchctl"))
        .args(["load", "-q", "-n", "20", "-c", "2", &s.url("/cl")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start benchctl");
    drop(child.stdout.take());
    let mut stderr = String::new();
    let mut e = child.stderr.take().expect("stderr");
    let pid = child.id() as libc::pid_t;
    let (status, _, _) = reap(pid, Some(Instant::now() + SHORT), &mut child);
    let _ = e.read_to_string(&mut stderr);
    assert!(
        !stderr.contains("panicked"),
        "a closed stdout made benchctl panic:\n{stderr}"
    );
    assert!(
        !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 101),
        "exit status 101 is a panic's\n{stderr}"
    );
}

fn json_of(f: &Finished) -> serde_json::Value {
    serde_json::from_str(&f.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{}", f.describe()))
}

#[test]
fn ten_thousand_keep_alive_connections_under_64_mb() {
    let nofile = raise_nofile();
    assert!(
        nofile >= 10_100,
        "the open-file limit is {nofile}; 10,000 connections need more"
    );
    let s = TestServer::start();
    let f = benchctl(
        &[
            "load",
            "--json",
            "-c",
            "10000",
            "-k",
            "-n",
            "40000",
            &s.url("/cl"),
        ],
        Duration::from_secs(180),
    );
    let mb = f.peak_rss_kib as f64 / 1024.0;
    assert!(f.peak_rss_kib > 0, "VmHWM was never read");
    let ru_mb = f.ru_maxrss_kib as f64 / 1024.0;
    println!(
        "-c 10000 -k -n 40000: peak RSS {mb:.1} MB (ru_maxrss {ru_mb:.1} MB), {:?}, server accepted {} connections, at most {} open at once",
        f.took,
        s.accepted(),
        s.peak_open()
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    assert_eq!(v["complete"], 40000, "{}", f.stderr);
    assert_eq!(v["failed"], 0, "{}", v["failures"]);
    assert_eq!(v["keep_alive_requests"], 40000);
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
    assert!(mb < 64.0, "peak RSS {mb:.1} MB with 10,000 connections");
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
    let gb = (n * support::BIG_LEN) as f64 / 1e9;
    println!(
        "/big (100 MB) -c 20 -n {n}: peak RSS {mb:.1} MB (ru_maxrss {ru_mb:.1} MB), {gb:.1} GB in {:?} ({:.2} GB/s)",
        f.took,
        gb / f.took.as_secs_f64()
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    let v = json_of(&f);
    assert_eq!(v["complete"], n);
    assert_eq!(v["failed"], 0, "{}", v["failures"]);
    assert_eq!(v["body_bytes"], n * support::BIG_LEN);
    assert_eq!(v["server"]["document_length"], support::BIG_LEN);
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

#[test]
fn ab_request_flags_reach_the_server_as_ab_sends_them() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("body.bin");
    let body: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&post, &body).unwrap();
    let url = s.url("/cl");
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "6",
            "-c",
            "2",
            "-p",
            post.to_str().unwrap(),
            "-T",
            "application/x-www-form-urlencoded",
            "-C",
            "session=abc",
            "-C",
            "theme=dark",
            "-A",
            "user:secret",
            "-H",
            "X-Test: yes",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    // ab's lines for a run with a body.
    assert!(
        f.stdout.contains(&format!(
            "Total body sent:        {}\n",
            6 * (body.len() as u64 + request_head_len(&s))
        )),
        "{}",
        f.describe()
    );
    assert!(f.stdout.contains(" kb/s sent\n") && f.stdout.contains(" kb/s total\n"));
    let seen = s.seen();
    assert_eq!(seen.len(), 6);
    for r in &seen {
        assert_eq!(r.line, "POST /cl HTTP/1.0");
        assert_eq!(r.header("content-length"), [body.len().to_string()]);
        assert_eq!(
            r.header("content-type"),
            ["application/x-www-form-urlencoded"]
        );
        assert_eq!(r.header("cookie"), ["session=abc; theme=dark"]);
        assert_eq!(r.header("authorization"), ["Basic dXNlcjpzZWNyZXQ="]);
        assert_eq!(r.header("x-test"), ["yes"]);
        assert!(r.body == body, "the body arrives byte for byte");
    }
}

/// The length of the head of the last request the server saw, as it came.
fn request_head_len(s: &TestServer) -> u64 {
    let r = s.seen().pop().expect("a request");
    let lines: u64 = r.headers.iter().map(|h| h.len() as u64 + 2).sum();
    r.line.len() as u64 + 2 + lines + 2
}

#[test]
fn ab_flags_that_would_break_the_request_are_refused() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("body.txt");
    std::fs::write(&post, "a=1").unwrap();
    let post = post.to_str().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["load", "-H", "X-A: 1\r\nX-Injected: yes", &url],
            "line break",
        ),
        (
            &["load", "-H", "X-A: 1\nX-Injected: yes", &url],
            "line break",
        ),
        (&["load", "-H", "X-A: 1\r\n", &url], "line break"),
        (&["load", "-H", "X-A\r\nX-B: 1", &url], "line break"),
        (
            &["load", "-C", "a=1\r\nX-Injected: yes", &url],
            "line break",
        ),
        (&["load", "-A", "user:pw\r\nX: y", &url], "line break"),
        (&["load", "-A", "nocolon", &url], "USER:PASSWORD"),
        (
            &["load", "-p", post, "-T", "text/plain\nX: y", &url],
            "line break",
        ),
        (&["load", "-m", "GET /x HTTP/1.0\r\n", &url], "bad method"),
        (&["load", "-T", "text/plain", &url], "-p or -u"),
        (&["load", "-p", post, "-u", post, &url], "either -p"),
        (&["load", "-i", "-p", post, &url], "no body"),
        (&["load", "-i", "-m", "GET", &url], "either -i or -m"),
        (&["load", "-m", "HEAD", "-p", post, &url], "no body"),
        (&["load", "-p", missing, &url], "cannot read the file"),
        (
            &["load", "-H", "Content-Length: 3", &url],
            "frames each request",
        ),
        (&["load", "-X", "127.0.0.1", &url], "HOST:PORT"),
        (&["load", "-B", "localhost", &url], "not an IP address"),
        (&["load", "-B", "::1", &url], "IPv6"),
        (&["load", "-v", "3", &url], "-v 3"),
        (&["load", "-w", "--json", &url], "either -w"),
        (&["load", "--duration", "1s", "-g", missing, &url], "-g"),
        (&["load", "-e", "/nonexistent-dir/x.csv", &url], "-e"),
    ];
    for (args, names) in cases {
        assert_usage_error(args, names);
    }
    assert_eq!(s.accepted(), 0, "bad input never reaches the server");
}

#[test]
fn ab_output_flags_write_its_files_and_tables() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let tsv = dir.path().join("g.tsv");
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "40",
            "-c",
            "4",
            "-k",
            "-e",
            csv.to_str().unwrap(),
            "-g",
            tsv.to_str().unwrap(),
            "-S",
            "-d",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    // -S: min, avg and max only; -d: no percentage table.
    assert!(f.stdout.contains("              min   avg   max\n"));
    assert!(!f.stdout.contains("mean[+/-sd]"));
    assert!(!f.stdout.contains("Percentage of the requests"));
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 102, "{csv}");
    assert_eq!(lines[0], "Percentage served,Time in ms");
    let mut last = 0.0f64;
    for (i, l) in lines[1..].iter().enumerate() {
        let (p, ms) = l.split_once(',').unwrap();
        assert_eq!(p, i.to_string());
        assert_eq!(ms.split_once('.').map(|(_, d)| d.len()), Some(3), "{l}");
        let ms: f64 = ms.parse().unwrap();
        assert!(ms >= last, "percentages served in order: {csv}");
        last = ms;
    }
    let tsv = std::fs::read_to_string(&tsv).unwrap();
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 41, "{tsv}");
    assert_eq!(
        rows[0],
        ["starttime", "seconds", "ctime", "dtime", "ttime", "wait"]
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut last_total = 0;
    for r in &rows[1..] {
        assert_eq!(r.len(), 6, "{r:?}");
        // "Wed Dec 02 00:00:00 2026"
        assert_eq!(r[0].len(), 24, "{r:?}");
        let secs: u64 = r[1].parse().unwrap();
        assert!(secs <= now && now - secs < 120, "{r:?}");
        let [c, d, t, w]: [i64; 4] = std::array::from_fn(|i| r[i + 2].parse().unwrap());
        assert!(c >= 0 && d >= 0 && w >= 0 && t >= last_total, "{r:?}");
        last_total = t;
    }

    // -w: ab's HTML table instead of its text.
    let f = benchctl(&["load", "-q", "-n", "10", "-w", &url], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(f.stdout.starts_with("\n\n<table >\n"), "{}", f.stdout);
    assert!(f.stdout.contains(
        "<tr ><th colspan=2 bgcolor=white>Complete requests:</th><td colspan=2 bgcolor=white>10</td></tr>"
    ));
    assert!(f.stdout.contains("<th bgcolor=white>Processing:</th>"));
    assert!(f.stdout.ends_with("</table>\n"));
    assert!(!f.stdout.contains("Server Software:        "));

    // -v 2: the request, before the run.
    let f = benchctl(
        &["load", "-q", "-n", "1", "-v", "2", "-m", "DELETE", &url],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        f.stderr
            .contains("INFO: DELETE header == \n---\nDELETE /cl HTTP/1.0\r\n"),
        "{}",
        f.describe()
    );
    assert_eq!(s.seen().last().unwrap().line, "DELETE /cl HTTP/1.0");
}

#[test]
fn https_keep_alive_and_verify_from_the_command_line() {
    use support::tls::{Cert, TlsServer};
    let good = TlsServer::start(Cert::Good);
    let ca = good.ca_file.to_str().unwrap().to_string();
    let f = benchctl(
        &[
            "load",
            "-q",
            "-n",
            "40",
            "-c",
            "2",
            "-k",
            "--verify",
            &ca,
            &good.url("/"),
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(f.stdout.contains("Complete requests:      40\n"));
    assert!(f.stdout.contains("Keep-Alive requests:    40\n"));
    assert!(f.stdout.contains("Failed requests:        0\n"));
    assert_eq!(good.accepted(), 2);

    let expired = TlsServer::start(Cert::Expired);
    let ca = expired.ca_file.to_str().unwrap().to_string();
    let f = benchctl(
        &["load", "-q", "-n", "4", "--verify", &ca, &expired.url("/")],
        SHORT,
    );
    assert_eq!(f.code, Some(1), "{}", f.describe());
    assert!(
        f.stderr.contains("no TLS connection to 127.0.0.1:")
            && f.stderr.contains("certificate expired"),
        "{}",
        f.describe()
    );
    assert_eq!(expired.requests(), 0);
    // Without --verify, as ab: measured.
    let f = benchctl(&["load", "-q", "-n", "4", &expired.url("/")], SHORT);
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert_eq!(expired.requests(), 4);
}

#[test]
fn start_at_waits_for_its_instant_and_refuses_one_past_or_far_ahead() {
    let s = TestServer::start();
    let url = s.url("/start");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    assert_usage_error(&["load", "-n", "1", "--start-at", "1000", &url], "passed");
    let far = format!("{:.3}", now() + 3600.0);
    assert_usage_error(
        &["load", "-n", "1", "--start-at", &far, &url],
        "at most 600 s ahead",
    );
    assert_usage_error(
        &["load", "-n", "1", "--start-at", "soon", &url],
        "--start-at",
    );
    assert_eq!(s.requests(), 0, "bad input sends nothing");

    // Five requests take milliseconds: a run that ends after the instant waited for it.
    let at = now() + 1.5;
    let f = benchctl(
        &[
            "load",
            "-n",
            "5",
            "-q",
            "--start-at",
            &format!("{at:.6}"),
            &url,
        ],
        SHORT,
    );
    let ended = now();
    assert_eq!(f.code, Some(0), "{}", f.describe());
    assert!(
        ended >= at,
        "ended {:.3} s before its start instant",
        at - ended
    );
    assert_eq!(s.requests(), 5);
    // RFC 3339 is read too.
    let f = benchctl(
        &[
            "load",
            "-n",
            "1",
            "-q",
            "--start-at",
            "2000-01-01T00:00:00Z",
            &url,
        ],
        SHORT,
    );
    assert_eq!(f.code, Some(2), "{}", f.describe());
    assert!(f.stderr.contains("passed"), "{}", f.describe());
}

/// A FIFO at `path`, with no writer.
fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

#[test]
fn body_and_ca_files_that_are_not_regular_files_are_refused_at_once() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let (fifo, folder) = (fifo.to_str().unwrap(), dir.path().to_str().unwrap());
    let https = format!("https://127.0.0.1:{}/", s.port);
    let cases: &[(&[&str], String)] = &[
        // /dev/zero never ends, and a FIFO without a writer blocks its open and its read.
        (
            &["load", "-p", "/dev/zero", &url],
            "-p /dev/zero: cannot read the file: it is a character device, not a regular file"
                .into(),
        ),
        (
            &["load", "-u", fifo, &url],
            format!(
                "-u {fifo}: cannot read the file: it is a FIFO (named pipe), not a regular file"
            ),
        ),
        (
            &["load", "-p", folder, &url],
            format!("-p {folder}: cannot read the file: it is a directory"),
        ),
        (
            &["load", "--verify", fifo, &https],
            format!("--verify {fifo}: cannot read the file: it is a FIFO (named pipe)"),
        ),
        (
            &["load", "--verify", "/dev/zero", &https],
            "--verify /dev/zero: cannot read the file: it is a character device".into(),
        ),
    ];
    for (args, names) in cases {
        let f = benchctl(args, Duration::from_secs(5));
        assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
        assert_eq!(
            f.stderr.trim_end().lines().count(),
            1,
            "{args:?}\n{}",
            f.describe()
        );
        assert!(
            f.stderr.starts_with("benchctl: error: ") && f.stderr.contains(names.as_str()),
            "the error for {args:?} should say {names:?}\n{}",
            f.describe()
        );
    }
    assert_eq!(s.accepted(), 0, "bad input never reaches the server");
}

#[test]
fn csv_and_gnuplot_files_are_created_new_never_through_a_symlink() {
    let s = TestServer::start();
    let url = s.url("/cl");
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("existing.csv");
    std::fs::write(&existing, "keep me\n").unwrap();
    let precious = dir.path().join("precious");
    std::fs::write(&precious, "keep me too\n").unwrap();
    let link = dir.path().join("link.tsv");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let dangling = dir.path().join("dangling.csv");
    let target = dir.path().join("made-through-a-link");
    std::os::unix::fs::symlink(&target, &dangling).unwrap();
    let fresh = dir.path().join("fresh.csv");
    let p = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["-e".into(), p(&existing)],
            format!("-e {}: the file exists already", existing.display()),
        ),
        (
            vec!["-g".into(), p(&link)],
            format!("-g {}: the file exists already", link.display()),
        ),
        (
            vec!["-e".into(), p(&dangling)],
            format!("-e {}: the file exists already", dangling.display()),
        ),
        // The first file is made, the second cannot be: neither stays.
        (
            vec!["-e".into(), p(&fresh), "-g".into(), p(&existing)],
            format!("-g {}: the file exists already", existing.display()),
        ),
    ];
    for (flags, says) in cases {
        let mut args = vec!["load", "-q", "-n", "2"];
        args.extend(flags.iter().map(String::as_str));
        args.push(&url);
        let f = benchctl(&args, SHORT);
        assert_eq!(f.code, Some(2), "benchctl {args:?}\n{}", f.describe());
        assert!(
            f.stderr.starts_with("benchctl: error: ") && f.stderr.contains(&says),
            "benchctl {args:?}: should say {says:?}\n{}",
            f.describe()
        );
        assert_eq!(f.stderr.trim_end().lines().count(), 1, "{}", f.describe());
        assert!(f.stdout.is_empty(), "{}", f.describe());
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me\n");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me too\n");
    assert!(
        !target.exists(),
        "a file was made through a dangling symlink"
    );
    assert!(!fresh.exists(), "the -e file of a refused run was left");
    assert_eq!(
        s.accepted(),
        0,
        "nothing is sent when an output cannot be created"
    );
}
