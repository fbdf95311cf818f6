//! `benchctl load URL`: the load generator on its own, with ab's flags and output.

use crate::failure::Failure;
use crate::output::stdout;
use crate::progress::{Progress, Style};
use crate::signals::OnSignals;
use crate::signals::Signal;
use clap::Args;
use loadgen::config::AB_TIMELIMIT_REQUESTS;
use loadgen::{HttpVersion, Job, LoadConfig, LoadError, LoadSpec, Method, Proxy, StopFlag, Target};
use scenario::units::{parse_coalesce, parse_cpuset, parse_duration};
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// http://HOST[:PORT]/PATH or https://HOST[:PORT]/PATH
    #[arg(required_unless_present = "job", conflicts_with = "job")]
    url: Option<String>,
    /// Send the load a job document describes (JSON: the URL, the load, the CPUs and the
    /// start; `-` reads it from standard input) instead of the load's flags, which are then
    /// refused; output and request options still apply.
    #[arg(
        long,
        value_name = "FILE|-",
        conflicts_with_all = [
            "requests", "concurrency", "keep_alive", "time_limit", "timeout", "head",
            "method", "post_file", "put_file", "http11", "h2", "h3", "streams", "duration",
            "warmup", "min_duration", "threads", "cpus", "rate", "coalesce",
            "user_timestamps", "start_at", "engine",
        ]
    )]
    job: Option<String>,
    /// Number of requests to perform (ab's -n; default 1, or unlimited with --duration).
    #[arg(short = 'n', long = "requests")]
    requests: Option<u64>,
    /// Number of requests to make at a time (ab's -c).
    #[arg(short = 'c', long = "concurrency", default_value_t = 1)]
    concurrency: u32,
    /// Use HTTP keep-alive (ab's -k): reuse connections where the server agrees.
    #[arg(short = 'k', long = "keepalive")]
    keep_alive: bool,
    /// Seconds to spend at most (ab's -t; implies -n 50000 unless -n is given).
    #[arg(short = 't', long = "timelimit", value_name = "SECONDS")]
    time_limit: Option<String>,
    /// Extra header, e.g. -H 'Accept-Encoding: gzip' (ab's -H; repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// Per-request timeout in seconds (ab's -s; default 30).
    #[arg(
        short = 's',
        long = "timeout",
        value_name = "SECONDS",
        default_value = "30"
    )]
    timeout: String,
    /// Accept a varying document length (ab's -l): no Length failures.
    #[arg(short = 'l')]
    variable_length: bool,
    /// Send HEAD requests instead of GET (ab's -i).
    #[arg(short = 'i')]
    head: bool,
    /// POST this file's bytes with every request (ab's -p), with their Content-Length.
    #[arg(short = 'p', long = "postfile", value_name = "FILE")]
    post_file: Option<PathBuf>,
    /// PUT this file's bytes with every request (ab's -u).
    #[arg(short = 'u', long = "putfile", value_name = "FILE")]
    put_file: Option<PathBuf>,
    /// Content-Type of the -p/-u body (ab's -T; default text/plain).
    #[arg(short = 'T', long = "content-type", value_name = "TYPE")]
    content_type: Option<String>,
    /// Request method (ab's -m), e.g. -m DELETE; with -p/-u, the method their body goes with.
    #[arg(short = 'm', long = "method", value_name = "METHOD")]
    method: Option<String>,
    /// Cookie to send, e.g. -C 'session=abc' (ab's -C; repeatable: one Cookie header).
    #[arg(short = 'C', long = "cookie", value_name = "NAME=VALUE")]
    cookies: Vec<String>,
    /// Basic authentication to the server (ab's -A).
    #[arg(short = 'A', long = "auth", value_name = "USER:PASSWORD")]
    auth: Option<String>,
    /// Basic authentication to the proxy (ab's -P).
    #[arg(short = 'P', long = "proxy-auth", value_name = "USER:PASSWORD")]
    proxy_auth: Option<String>,
    /// Send every request through this HTTP proxy (ab's -X): connect to it, and name the
    /// whole URL on the request line.
    #[arg(short = 'X', long = "proxy", value_name = "HOST:PORT")]
    proxy: Option<String>,
    /// Size of each connection's socket send and receive buffers, bytes (ab's -b).
    #[arg(short = 'b', long = "window-size", value_name = "BYTES")]
    window_size: Option<u32>,
    /// Local IP address to connect from (ab's -B).
    #[arg(short = 'B', long = "bind", value_name = "ADDRESS")]
    bind: Option<String>,
    /// Write ab's CSV of the time within which each percentage (0-100) was served (ab's -e).
    #[arg(short = 'e', long = "csv", value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write ab's gnuplot table, one line per request (ab's -g; runs bounded by -n or -t).
    #[arg(short = 'g', long = "gnuplot", value_name = "FILE")]
    gnuplot: Option<PathBuf>,
    /// Print the results as ab's HTML table instead of its text (ab's -w).
    #[arg(short = 'w', long = "html")]
    html: bool,
    /// Leave out the table of percentages served (ab's -d).
    #[arg(short = 'd')]
    no_percentiles: bool,
    /// Connection Times with min, avg and max only, no median, deviation or warnings (ab's -S).
    #[arg(short = 'S')]
    no_confidence: bool,
    /// Do not stop on receive errors (ab's -r). benchctl never does: they are counted under
    /// "Receive", so this changes nothing.
    #[arg(short = 'r')]
    receive_errors_ok: bool,
    /// ab's verbosity: 0 and 1 print the results; 2 also prints the request before the run.
    #[arg(
        short = 'v',
        long = "verbosity",
        value_name = "LEVEL",
        default_value_t = 0
    )]
    verbosity: u32,
    /// Speak HTTP/1.1 instead of ab's HTTP/1.0.
    #[arg(long = "http1.1")]
    http11: bool,
    /// https: verify the server's certificate and name against the CA certificates in this
    /// PEM file (by default nothing is verified, as with ab).
    #[arg(long, value_name = "CAFILE")]
    verify: Option<PathBuf>,
    /// https: let new connections resume earlier TLS sessions (by default every connection
    /// does a full handshake, as with ab).
    #[arg(long)]
    tls_resume: bool,
    /// https: the TLS protocol (ab's -f): TLS1.2, TLS1.3 or ALL.
    #[arg(short = 'f', long = "protocol", value_name = "PROTOCOL")]
    protocol: Option<String>,
    /// https: the cipher suites to offer (ab's -Z), colon-separated, e.g.
    /// ECDHE-RSA-AES128-GCM-SHA256 or TLS_AES_128_GCM_SHA256.
    #[arg(short = 'Z', long = "ciphers", value_name = "SUITES")]
    ciphers: Option<String>,
    /// Write N requests back to back on each connection, then read their N responses (HTTP/1.1
    /// pipelining, as wrk's pipeline script; needs -k and --http1.1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pipeline: u32,
    /// Speak HTTP/2: over https by ALPN ("h2"), over http by prior knowledge (h2c). Every
    /// request is a stream; connections are always reused (-k is implied).
    #[arg(long = "h2")]
    h2: bool,
    /// Speak HTTP/3 over QUIC (https URLs only; UDP to the URL's port). Every request is a
    /// stream; with -k connections carry requests until the load ends, without it each
    /// request has a connection and a QUIC handshake of its own.
    #[arg(long = "h3", conflicts_with = "h2")]
    h3: bool,
    /// HTTP/3: a new connection that resumes an earlier session sends its requests in 0-RTT,
    /// with the handshake's first flight, where the server allows it (implies --tls-resume).
    /// Requests the server rejects go again once the handshake is done.
    #[arg(long = "0rtt")]
    zero_rtt: bool,
    /// HTTP/3: write a qlog trace (JSON-SEQ, as qvis reads it) of the run's first QUIC
    /// connections into DIR, one file each; for looking at, not for measuring.
    #[arg(long, value_name = "DIR")]
    qlog: Option<std::path::PathBuf>,
    /// HTTP/2 and HTTP/3: streams open at once on each connection (h2load's -m); needs --h2,
    /// or --h3 with -k.
    #[arg(long, alias = "max-concurrent-streams", value_name = "N")]
    streams: Option<u32>,
    /// Run for this long instead of a request count (e.g. 10s, 2m).
    #[arg(long)]
    duration: Option<String>,
    /// Apply load for this long first, then measure (e.g. 2s).
    #[arg(long)]
    warmup: Option<String>,
    /// Repeat the -n requests back to back until the measurement has lasted this long (e.g.
    /// 5s), counting all of it: ab's parameters, a load long enough to settle.
    #[arg(long, value_name = "DURATION")]
    min_duration: Option<String>,
    /// Worker threads (default: one per CPU allowed, at most one per connection).
    #[arg(long)]
    threads: Option<usize>,
    /// Pin the workers to these CPUs, e.g. 0 or 0-1,3.
    #[arg(long)]
    cpus: Option<String>,
    /// Constant request rate (requests/s): latencies are then measured from each request's
    /// intended send time too (coordinated-omission correction).
    #[arg(long)]
    rate: Option<f64>,
    /// How a worker waits once it has read everything: `auto` sleeps up to 2% of the request
    /// cycle to collect responses in batches (so the server is not made to wake the generator
    /// for each one) when that collects at least one per wake-up; `off` is woken by every
    /// response, as ab and wrk are; a duration (e.g. 50us) sleeps that long whenever idle.
    #[arg(long, value_name = "auto|off|DURATION", default_value = "auto")]
    coalesce: String,
    /// What drives the connections: `uring` submits and reaps them through io_uring in
    /// batches (HTTP/1.x and HTTP/2, plain or over TLS; where the host forbids io_uring the
    /// load runs on epoll and says so), `epoll` makes a system call per send and per receive;
    /// `auto` takes io_uring for HTTP/1.x and HTTP/2 (cheaper with keep-alive and over HTTP/2,
    /// as cheap with a new connection per request, the same latencies) and epoll for HTTP/3.
    #[arg(long, value_name = "auto|epoll|uring", default_value = "auto")]
    engine: loadgen::Engine,
    /// Time responses when the generator reads them, as ab does, instead of by the kernel's
    /// receive stamps (which leave the generator's own delays out). --coalesce auto then
    /// never naps, since a nap would count as server time.
    #[arg(long)]
    user_timestamps: bool,
    /// Length of the intervals the load is counted in over time (the `timeline` of --json,
    /// and the steady-state judgement), e.g. 1s or 250ms; at least 10ms.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    interval: String,
    /// Print the measurement as JSON instead of ab's text.
    #[arg(long)]
    json: bool,
    /// Wait until this instant of this machine's clock, then start (Unix seconds such as
    /// 1796195100.25, or RFC 3339): how generators on several machines start one load
    /// together. An instant already past, or more than 10 minutes ahead, is refused.
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// No progress output.
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// The flags in the load generator's terms; every check the generator makes is made here too,
/// so bad input never reaches the target.
fn config(a: &LoadArgs, job: Option<&Job>) -> Result<LoadConfig, Failure> {
    let url = match job {
        Some(job) => job.url.as_str(),
        None => a.url.as_deref().unwrap_or_default(),
    };
    let mut c = match job {
        Some(job) => LoadConfig::from_job(job).map_err(Failure::usage)?,
        None => {
            let target = Target::parse(url).map_err(Failure::usage)?;
            let mut c = LoadConfig::new(target, load_spec(a)?);
            apply_cpus(&mut c, a)?;
            c
        }
    };
    apply_timing(&mut c, a)?;
    apply_headers(&mut c, a)?;
    apply_request_options(&mut c, a)?;
    check_output_flags(&mut c, a)?;
    c.validate().map_err(Failure::usage)?;
    if c.target.https {
        // The TLS options are checked (and the CA file read) before anything is sent.
        loadgen::tls::Tls::new(&c.target.host, &c.tls).map_err(|e| usage(format!("{url}: {e}")))?;
    }
    Ok(c)
}

/// A usage error with `m` as its message.
fn usage(m: String) -> Failure {
    Failure::usage(anyhow::anyhow!(m))
}

/// A duration flag's value: bare seconds as ab takes them (`-t 10`, `-s 30`), or with a unit
/// as the scenario syntax wants it.
fn secs(flag: &str, v: &str) -> Result<Duration, Failure> {
    let v = v.trim();
    let bare = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let with_unit = if bare { format!("{v}s") } else { v.to_string() };
    parse_duration(&with_unit).map_err(|e| usage(format!("{flag}: bad duration {v:?}: {e}")))
}

/// How much load, how it is sent and over which HTTP version.
fn load_spec(a: &LoadArgs) -> Result<LoadSpec, Failure> {
    if a.time_limit.is_some() && a.duration.is_some() {
        return Err(usage("give either -t or --duration, not both".into()));
    }
    let duration = match (&a.time_limit, &a.duration) {
        (Some(t), _) => Some(secs("-t", t)?),
        (_, Some(d)) => Some(secs("--duration", d)?),
        _ => None,
    };
    Ok(LoadSpec {
        requests: match (a.requests, &a.time_limit, &a.duration) {
            (Some(n), _, _) => Some(n),
            (None, Some(_), _) => Some(AB_TIMELIMIT_REQUESTS),
            (None, None, Some(_)) => None,
            (None, None, None) => Some(1),
        },
        duration,
        concurrency: a.concurrency,
        keep_alive: a.keep_alive,
        version: if a.h2 {
            HttpVersion::Http2
        } else if a.h3 {
            HttpVersion::Http3
        } else if a.http11 {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        },
        method: method(a)?,
        timeout: secs("-s", &a.timeout)?,
        warmup: match &a.warmup {
            Some(w) => secs("--warmup", w)?,
            None => Duration::ZERO,
        },
        rate: a.rate,
        rx_stamps: !a.user_timestamps,
        engine: a.engine,
        coalesce: parse_coalesce(&a.coalesce).map_err(|e| usage(format!("--coalesce: {e}")))?,
        min_duration: match &a.min_duration {
            Some(d) => Some(secs("--min-duration", d)?),
            None => None,
        },
        streams: match (a.streams, a.h2 || a.h3) {
            _ if a.h2 && a.http11 => return Err(usage("give one of --h2 and --http1.1".into())),
            _ if a.h3 && a.http11 => return Err(usage("give one of --h3 and --http1.1".into())),
            (Some(_), false) => return Err(usage(
                "--streams needs --h2 or --h3: only HTTP/2 and HTTP/3 run several requests at once on a connection"
                    .into(),
            )),
            (Some(n), true) => n,
            (None, _) => 1,
        },
    })
}

/// The measurement's intervals.
fn apply_timing(c: &mut LoadConfig, a: &LoadArgs) -> Result<(), Failure> {
    c.variable_length = a.variable_length;
    c.interval = secs("--interval", &a.interval)?;
    if c.interval < loadgen::timeline::MIN_INTERVAL {
        return Err(usage(format!(
            "--interval: {:?} is shorter than 10ms; intervals that short hold too few requests to say anything",
            a.interval.trim()
        )));
    }
    Ok(())
}

/// The CPUs and threads the generator runs on.
fn apply_cpus(c: &mut LoadConfig, a: &LoadArgs) -> Result<(), Failure> {
    if let Some(cpus) = &a.cpus {
        c.cpus = Some(parse_cpuset(cpus).map_err(|e| usage(format!("--cpus: {e}")))?);
    }
    c.threads = match a.threads {
        Some(t) => t,
        None => match &c.cpus {
            Some(list) => list.len(),
            None => loadgen::cpu::allowed_cpus().len().max(1),
        },
    };
    Ok(())
}

/// -H: each `Name: value` on one line.
fn apply_headers(c: &mut LoadConfig, a: &LoadArgs) -> Result<(), Failure> {
    for h in &a.headers {
        // Before any trimming: a line break at either end is still a second line on the wire
        // in ab, and never what the user meant.
        if h.contains(['\r', '\n']) {
            return Err(usage(format!(
                "-H {h:?}: a header may not contain a line break (CR or LF); it would end the header there and send the rest as another header"
            )));
        }
        let Some((k, v)) = h.split_once(':') else {
            return Err(usage(format!("-H {h:?}: expected 'Name: value'")));
        };
        c.headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(())
}

/// What each request carries (TLS, cookies, credentials, a body) and how it gets there
/// (pipelining, a proxy, the socket's buffer and local address).
fn apply_request_options(c: &mut LoadConfig, a: &LoadArgs) -> Result<(), Failure> {
    // -r: a receive error never ends a run (it is counted under "Receive"); nothing to set.
    let _ = a.receive_errors_ok;
    c.pipeline = a.pipeline;
    c.qlog = a.qlog.clone();
    c.tls = loadgen::tls::TlsOptions {
        verify: a.verify.clone(),
        resume: a.tls_resume,
        zero_rtt: a.zero_rtt,
        protocol: a.protocol.clone(),
        ciphers: a.ciphers.clone(),
    };
    c.cookies = a.cookies.clone();
    c.basic_auth = a.auth.as_deref().map(|s| s.trim_start().to_string());
    c.proxy_auth = a.proxy_auth.as_deref().map(|s| s.trim_start().to_string());
    c.content_type = a.content_type.clone();
    if let Some(path) = a.post_file.as_ref().or(a.put_file.as_ref()) {
        let flag = if a.post_file.is_some() { "-p" } else { "-u" };
        c.body = Some(userfile::read(path).map_err(|e| {
            usage(format!(
                "{flag} {}: cannot read the file: {e}",
                path.display()
            ))
        })?);
    }
    if let Some(p) = &a.proxy {
        c.proxy = Some(Proxy::parse(p).map_err(Failure::usage)?);
    }
    c.socket.buffer = a.window_size.filter(|&b| b > 0);
    if let Some(b) = &a.bind {
        c.socket.bind = Some(b.trim().parse().map_err(|_| {
            usage(format!(
                "-B {b:?}: not an IP address (give the local address to connect from, e.g. 127.0.0.1)"
            ))
        })?);
    }
    Ok(())
}

/// The output flags, which some loads cannot give: -v 3 and above, -w with --json, -g.
fn check_output_flags(c: &mut LoadConfig, a: &LoadArgs) -> Result<(), Failure> {
    if a.verbosity >= 3 {
        return Err(usage(format!(
            "-v {}: ab prints every response's status and head from level 3 up; benchctl does not print from inside the measurement (the terminal would be timed with the server). Use -v 2 to see the request, and count the statuses in the results (Non-2xx responses)",
            a.verbosity
        )));
    }
    if a.html && a.json {
        return Err(usage("give either -w (HTML) or --json, not both".into()));
    }
    if a.gnuplot.is_some() {
        if c.load.requests.is_none() {
            return Err(usage(
                "-g writes one line per request, and only a run bounded by a request count (-n or -t) keeps them; add -n".into(),
            ));
        }
        c.keep_start_times = true;
    }
    Ok(())
}

/// The method from -i, -p, -u and -m, as ab combines them: -m names the method a -p/-u body
/// goes with; HEAD has no body; one file at most.
fn method(a: &LoadArgs) -> Result<Method, Failure> {
    let usage = |m: &str| Err(Failure::usage(anyhow::anyhow!(m.to_string())));
    if a.post_file.is_some() && a.put_file.is_some() {
        return usage("give either -p (POST) or -u (PUT), not both");
    }
    let body = a.post_file.is_some() || a.put_file.is_some();
    if a.head && body {
        return usage("-i sends HEAD requests, which have no body; -p/-u send one");
    }
    if a.head && a.method.is_some() {
        return usage("give either -i or -m, not both");
    }
    Ok(match &a.method {
        Some(m) => Method::parse(m),
        None if a.head => Method::Head,
        None if a.post_file.is_some() => Method::Post,
        None if a.put_file.is_some() => Method::Put,
        None => Method::Get,
    })
}

/// The files -e and -g write after the run, created before it: a path that cannot be created
/// is bad input, found before any request is sent.
struct OutputFiles {
    csv: Option<(PathBuf, File)>,
    gnuplot: Option<(PathBuf, File)>,
}

impl OutputFiles {
    /// Creates each file exclusively, as build logs are: an existing file is never truncated
    /// and a symlink is never followed (unlike ab, which overwrites).
    fn open(a: &LoadArgs) -> Result<OutputFiles, Failure> {
        use std::os::unix::fs::OpenOptionsExt;
        let open = |flag: &str, p: &Option<PathBuf>| -> Result<Option<(PathBuf, File)>, Failure> {
            p.as_ref()
                .map(|p| {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(p)
                        .map(|f| (p.clone(), f))
                        .map_err(|e| {
                            Failure::usage(if e.kind() == std::io::ErrorKind::AlreadyExists {
                                anyhow::anyhow!(
                                    "{flag} {}: the file exists already; benchctl does not overwrite it (choose another name, or remove that one)",
                                    p.display()
                                )
                            } else {
                                anyhow::anyhow!("{flag} {}: cannot create the file: {e}", p.display())
                            })
                        })
                })
                .transpose()
        };
        let csv = open("-e", &a.csv)?;
        let gnuplot = open("-g", &a.gnuplot).inspect_err(|_| {
            // The run does not happen: the CSV file just made goes too.
            if let Some((p, _)) = &csv {
                let _ = std::fs::remove_file(p);
            }
        })?;
        Ok(OutputFiles { csv, gnuplot })
    }

    fn write(self, m: &loadgen::Measurement) -> Result<(), Failure> {
        let put = |what: &str, (path, mut f): (PathBuf, File), text: &str| {
            f.write_all(text.as_bytes())
                .and_then(|()| f.flush())
                .map_err(|e| anyhow::anyhow!("cannot write the {what} to {}: {e}", path.display()))
        };
        if let Some(out) = self.csv {
            put("CSV", out, &report::abfiles::percentiles_csv(m))?;
        }
        if let Some(out) = self.gnuplot {
            let text = report::abfiles::gnuplot_tsv(m)?;
            put("gnuplot table", out, &text)?;
        }
        Ok(())
    }
}

/// The longest `--start-at` waits: a start further ahead is a mistake (a clock or a unit),
/// not a plan.
const START_AT_MAX_AHEAD: Duration = Duration::from_secs(600);

/// `--start-at`'s instant, as how long to wait from now.
fn start_delay(text: &str) -> Result<Duration, Failure> {
    let usage = |m: String| Failure::usage(anyhow::anyhow!(m));
    let t = text.trim();
    let at = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() => secs,
        _ => orchestrator::parse_rfc3339(t).ok_or_else(|| {
            usage(format!(
                "--start-at {t:?}: not an instant (give Unix seconds, e.g. 1796195100.25, or RFC 3339, e.g. 2026-12-02T03:05:00Z)"
            ))
        })?,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let ahead = at - now;
    if ahead < 0.0 {
        return Err(usage(format!(
            "--start-at {t}: that instant passed {:.3} s ago by this machine's clock",
            -ahead
        )));
    }
    if ahead > START_AT_MAX_AHEAD.as_secs_f64() {
        return Err(usage(format!(
            "--start-at {t}: that is {ahead:.0} s from now by this machine's clock; at most {} s ahead is accepted (is the clock or the unit wrong?)",
            START_AT_MAX_AHEAD.as_secs()
        )));
    }
    Ok(Duration::from_secs_f64(ahead))
}

/// Sleeps `delay` (measured from `from`), waking early when `stop` is set.
fn wait_for_start(from: std::time::Instant, delay: Duration, stop: &StopFlag) {
    let until = from + delay;
    while !stop.is_stopped() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// The job `--job` names: read from the file, or from standard input for `-`.
fn read_job(from: &str) -> Result<Job, Failure> {
    let text = if from == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| usage(format!("--job -: reading standard input: {e}")))?;
        text
    } else {
        userfile::read_to_string(std::path::Path::new(from))
            .map_err(|e| usage(format!("--job {from}: {e}")))?
    };
    serde_json::from_str(&text).map_err(|e| usage(format!("--job {from}: {e}")))
}

/// ab's `-v 2`: the request's head, once, before the run (a body is not shown); in HTTP/2 the
/// fields its header block carries.
fn show_request(cfg: &LoadConfig) {
    if matches!(cfg.load.version, HttpVersion::Http2 | HttpVersion::Http3) {
        // The request's fields, as its header block (HTTP/2) or field section (HTTP/3)
        // carries them.
        let fields = loadgen::h2::request_fields(cfg);
        let text: Vec<String> = fields
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}: {}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                )
            })
            .collect();
        eprintln!(
            "INFO: {} header == \n---\n{}\n---",
            cfg.load.method.as_str(),
            text.join("\n")
        );
    } else {
        // ab's -v 2: the request's head, once, before the run (a body is not shown).
        let request = loadgen::http::build_request(cfg);
        let head_len = request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(request.len(), |i| i + 2);
        eprintln!(
            "INFO: {} header == \n---\n{}\n---",
            cfg.load.method.as_str(),
            String::from_utf8_lossy(&request[..head_len])
        );
    }
}

pub fn main(a: LoadArgs, on_signals: OnSignals) -> Result<ExitCode, Failure> {
    let job = a.job.as_deref().map(read_job).transpose()?;
    let mut cfg = config(&a, job.as_ref())?;
    let asked_at = std::time::Instant::now();
    let start_at = match &job {
        Some(job) => job.start_at.map(|t| t.to_string()),
        None => a.start_at.clone(),
    };
    let start_delay = start_at.as_deref().map(start_delay).transpose()?;
    let files = OutputFiles::open(&a)?;
    if a.verbosity >= 2 {
        show_request(&cfg);
    }
    let style = if a.quiet || a.json {
        Style::Quiet
    } else {
        Style::bar_or(Style::Lines)
    };
    match loadgen::preflight(&mut cfg) {
        Err(LoadError::Config(e)) => return Err(Failure::usage(e)),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    if style != Style::Quiet {
        eprintln!("Benchmarking {} (be patient)", cfg.target.host);
    }
    let ab_opts = report::ab::AbOptions {
        variable_length: cfg.variable_length,
        no_percentiles: a.no_percentiles,
        no_confidence: a.no_confidence,
        send_body: cfg.body.is_some(),
    };
    // The first signal ends the run and prints what was measured; a second one exits at once
    // (there is nothing of ours to clean up).
    let stop = StopFlag::new();
    let stopped_by: Arc<Mutex<Option<Signal>>> = Arc::default();
    {
        let stop = stop.clone();
        let stopped_by = Arc::clone(&stopped_by);
        on_signals(
            Box::new(move |sig| {
                *stopped_by.lock().unwrap_or_else(|p| p.into_inner()) = Some(sig);
                stop.stop();
            }),
            Box::new(|| {}),
        )?;
    }
    if let Some(delay) = start_delay {
        wait_for_start(asked_at, delay, &stop);
        if let Some(sig) = *stopped_by.lock().unwrap_or_else(|p| p.into_inner()) {
            return Ok(ExitCode::from(sig.exit_code()));
        }
    }
    let mut progress = Progress::new(style, cfg.load.requests);
    let m = match loadgen::run_observed(cfg, &stop, &mut |n| progress.update(n)) {
        Ok(m) => m,
        Err(LoadError::Config(e)) => return Err(Failure::usage(e)),
        Err(e) => return Err(e.into()),
    };
    progress.finish(m.complete());
    if a.json {
        let report = loadgen::json::LoadReport::from_measurement(&m);
        stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else if a.html {
        stdout(&report::abfiles::render_html(&m, &ab_opts))?;
    } else {
        stdout(&report::ab::render_text(&report::ab::summarize_with(
            &m, &ab_opts,
        )))?;
    }
    for n in &m.notes {
        eprintln!("note: {}", report::notes::describe(n));
    }
    files.write(&m)?;
    if let Some(sig) = *stopped_by.lock().unwrap_or_else(|p| p.into_inner()) {
        return Ok(ExitCode::from(sig.exit_code()));
    }
    let generator = m.rec.failures.generator;
    if generator > 0 {
        eprintln!(
            "benchctl: error: {generator} requests could not be sent because the load generator ran out of its own resources (see the note above); the figures are not the server's"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
