//! `benchctl load URL`: the load generator on its own, with ab's flags and output.

use crate::Failure;
use clap::Args;
use loadgen::config::AB_TIMELIMIT_REQUESTS;
use loadgen::{Coalesce, HttpVersion, LoadConfig, LoadError, Method, Progress, StopFlag, Target};
use scenario::units::{parse_coalesce, parse_cpuset, parse_duration};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// http://HOST[:PORT]/PATH
    url: String,
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
    /// Speak HTTP/1.1 instead of ab's HTTP/1.0.
    #[arg(long = "http1.1")]
    http11: bool,
    /// Run for this long instead of a request count (e.g. 10s, 2m).
    #[arg(long)]
    duration: Option<String>,
    /// Apply load for this long first, then measure (e.g. 2s).
    #[arg(long)]
    warmup: Option<String>,
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
    /// Time responses when the generator reads them, as ab does, instead of by the kernel's
    /// receive stamps (which leave the generator's own delays out). --coalesce auto then
    /// never naps, since a nap would count as server time.
    #[arg(long)]
    user_timestamps: bool,
    /// Print the measurement as JSON instead of ab's text.
    #[arg(long)]
    json: bool,
    /// No progress output.
    #[arg(short = 'q', long)]
    quiet: bool,
}

fn config(a: &LoadArgs) -> Result<LoadConfig, Failure> {
    let usage = |m: String| Failure::usage(anyhow::anyhow!(m));
    let target = Target::parse(&a.url).map_err(Failure::usage)?;
    let mut c = LoadConfig::new(target);
    let secs = |flag: &str, v: &str| -> Result<Duration, Failure> {
        // ab takes bare seconds (`-t 10`, `-s 30`); the scenario syntax wants a unit.
        let v = v.trim();
        let bare = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let with_unit = if bare { format!("{v}s") } else { v.to_string() };
        parse_duration(&with_unit).map_err(|e| usage(format!("{flag}: bad duration {v:?}: {e}")))
    };
    c.concurrency = a.concurrency;
    c.keep_alive = a.keep_alive;
    c.variable_length = a.variable_length;
    c.method = if a.head { Method::Head } else { Method::Get };
    c.version = if a.http11 {
        HttpVersion::Http11
    } else {
        HttpVersion::Http10
    };
    c.timeout = secs("-s", &a.timeout)?;
    if a.time_limit.is_some() && a.duration.is_some() {
        return Err(usage("give either -t or --duration, not both".into()));
    }
    c.time_limit = match (&a.time_limit, &a.duration) {
        (Some(t), _) => Some(secs("-t", t)?),
        (_, Some(d)) => Some(secs("--duration", d)?),
        _ => None,
    };
    c.requests = match (a.requests, &a.time_limit, &a.duration) {
        (Some(n), _, _) => Some(n),
        (None, Some(_), _) => Some(AB_TIMELIMIT_REQUESTS),
        (None, None, Some(_)) => None,
        (None, None, None) => Some(1),
    };
    if let Some(w) = &a.warmup {
        c.warmup = secs("--warmup", w)?;
    }
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
    c.rate = a.rate;
    c.rx_stamps = !a.user_timestamps;
    c.coalesce = parse_coalesce(&a.coalesce)
        .map(coalesce)
        .map_err(|e| usage(format!("--coalesce: {e}")))?;
    for h in &a.headers {
        let Some((k, v)) = h.split_once(':') else {
            return Err(usage(format!("-H {h:?}: expected 'Name: value'")));
        };
        c.headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    c.progress = if a.quiet || a.json {
        Progress::Quiet
    } else if std::io::stderr().is_terminal() {
        Progress::Bar
    } else {
        Progress::Lines
    };
    c.validate().map_err(Failure::usage)?;
    Ok(c)
}

/// The scenario's and the command line's wake-up policy in the load generator's terms.
pub(crate) fn coalesce(c: scenario::units::Coalesce) -> Coalesce {
    match c {
        scenario::units::Coalesce::Auto => Coalesce::Auto,
        scenario::units::Coalesce::Off => Coalesce::Off,
        scenario::units::Coalesce::Nap(d) => Coalesce::Nap(d),
    }
}

pub fn main(a: LoadArgs) -> Result<ExitCode, Failure> {
    let cfg = config(&a)?;
    let ab_opts = loadgen::ab::AbOptions {
        variable_length: cfg.variable_length,
    };
    if cfg.progress != Progress::Quiet {
        eprintln!("Benchmarking {} (be patient)", cfg.target.host);
    }
    let stop = StopFlag::new();
    let handler_stop = stop.clone();
    // The first Ctrl-C ends the run and prints what was measured; a second one exits at once.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(rt) = rt {
            rt.block_on(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    handler_stop.stop();
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                }
            });
        }
    });
    let m = match loadgen::run_until(cfg, &stop) {
        Ok(m) => m,
        Err(LoadError::Config(e)) => return Err(Failure::usage(e)),
        Err(e) => return Err(e.into()),
    };
    if a.json {
        let report = loadgen::json::LoadReport::from_measurement(&m);
        crate::stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        crate::stdout(&loadgen::ab::render_text(&loadgen::ab::summarize_with(
            &m, &ab_opts,
        )))?;
    }
    for n in &m.notes {
        eprintln!("note: {n}");
    }
    Ok(if stop.is_stopped() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
