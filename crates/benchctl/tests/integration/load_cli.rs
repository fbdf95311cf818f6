//! `benchctl load` as users run it, through the built binary, against a test server on
//! 127.0.0.1 port 0: bad input ends with exit status 2 and a one-line error (never a panic),
//! the text output carries every line ab prints, `--json` is JSON with the counters,
//! percentiles and a decodable histogram, and the generator's peak memory stays small with
//! 10,000 keep-alive connections (under 64 MB) and with 100 MB documents (under 32 MB).
//!
//! Every child process runs under a deadline and is killed when it passes it.

use crate::support::TestServer;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod files;
mod http3;
mod job;
mod limits;
mod requests;
mod seccomp;

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
    assert!(
        !f.stderr.contains("Benchmarking"),
        "refused before the load is announced for {args:?}\n{}",
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
            &["load", "--engine", "kqueue", &url],
            "unknown engine \"kqueue\": auto, epoll or uring",
        ),
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
    let engine = v["settings"]["engine"]
        .as_str()
        .expect("the engine that ran");
    assert!(engine == "io_uring" || engine == "epoll", "{engine}");
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
