//! `benchctl load URL`: the load generator on its own, with ab's flags and output.

use crate::progress::{Progress, Style};
use crate::signals::Signal;
use crate::{Failure, OnSignals};
use clap::Args;
use loadgen::config::AB_TIMELIMIT_REQUESTS;
use loadgen::{HttpVersion, LoadConfig, LoadError, LoadSpec, Method, StopFlag, Target};
use scenario::units::{parse_coalesce, parse_cpuset, parse_duration};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
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
    /// No progress output.
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// The flags in the load generator's terms; every check the generator makes is made here too,
/// so bad input never reaches the target.
fn config(a: &LoadArgs) -> Result<LoadConfig, Failure> {
    let usage = |m: String| Failure::usage(anyhow::anyhow!(m));
    let target = Target::parse(&a.url).map_err(Failure::usage)?;
    let secs = |flag: &str, v: &str| -> Result<Duration, Failure> {
        // ab takes bare seconds (`-t 10`, `-s 30`); the scenario syntax wants a unit.
        let v = v.trim();
        let bare = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let with_unit = if bare { format!("{v}s") } else { v.to_string() };
        parse_duration(&with_unit).map_err(|e| usage(format!("{flag}: bad duration {v:?}: {e}")))
    };
    if a.time_limit.is_some() && a.duration.is_some() {
        return Err(usage("give either -t or --duration, not both".into()));
    }
    let duration = match (&a.time_limit, &a.duration) {
        (Some(t), _) => Some(secs("-t", t)?),
        (_, Some(d)) => Some(secs("--duration", d)?),
        _ => None,
    };
    let load = LoadSpec {
        requests: match (a.requests, &a.time_limit, &a.duration) {
            (Some(n), _, _) => Some(n),
            (None, Some(_), _) => Some(AB_TIMELIMIT_REQUESTS),
            (None, None, Some(_)) => None,
            (None, None, None) => Some(1),
        },
        duration,
        concurrency: a.concurrency,
        keep_alive: a.keep_alive,
        version: if a.http11 {
            HttpVersion::Http11
        } else {
            HttpVersion::Http10
        },
        method: if a.head { Method::Head } else { Method::Get },
        timeout: secs("-s", &a.timeout)?,
        warmup: match &a.warmup {
            Some(w) => secs("--warmup", w)?,
            None => Duration::ZERO,
        },
        rate: a.rate,
        rx_stamps: !a.user_timestamps,
        coalesce: parse_coalesce(&a.coalesce).map_err(|e| usage(format!("--coalesce: {e}")))?,
        min_duration: match &a.min_duration {
            Some(d) => Some(secs("--min-duration", d)?),
            None => None,
        },
    };
    let mut c = LoadConfig::new(target, load);
    c.variable_length = a.variable_length;
    c.interval = secs("--interval", &a.interval)?;
    if c.interval < loadgen::timeline::MIN_INTERVAL {
        return Err(usage(format!(
            "--interval: {:?} is shorter than 10ms; intervals that short hold too few requests to say anything",
            a.interval.trim()
        )));
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
    for h in &a.headers {
        let Some((k, v)) = h.split_once(':') else {
            return Err(usage(format!("-H {h:?}: expected 'Name: value'")));
        };
        c.headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    c.validate().map_err(Failure::usage)?;
    Ok(c)
}

pub fn main(a: LoadArgs, on_signals: OnSignals) -> Result<ExitCode, Failure> {
    let cfg = config(&a)?;
    let style = if a.quiet || a.json {
        Style::Quiet
    } else {
        Style::bar_or(Style::Lines)
    };
    if style != Style::Quiet {
        eprintln!("Benchmarking {} (be patient)", cfg.target.host);
    }
    let ab_opts = report::ab::AbOptions {
        variable_length: cfg.variable_length,
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
    let mut progress = Progress::new(style, cfg.load.requests);
    let m = match loadgen::run_observed(cfg, &stop, &mut |n| progress.update(n)) {
        Ok(m) => m,
        Err(LoadError::Config(e)) => return Err(Failure::usage(e)),
        Err(e) => return Err(e.into()),
    };
    progress.finish(m.complete());
    if a.json {
        let report = loadgen::json::LoadReport::from_measurement(&m);
        crate::stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        crate::stdout(&report::ab::render_text(&report::ab::summarize_with(
            &m, &ab_opts,
        )))?;
    }
    for n in &m.notes {
        eprintln!("note: {}", report::notes::describe(n));
    }
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
