//! A capacity search against a server whose latency jumps above a known rate: it serves one
//! request at a time, each taking a fixed service time, so below 1/service requests/s a
//! request waits only for its own service and above it the queue, and with it the latency,
//! grows without end. The search, measuring with the real load generator over loopback, must
//! find that rate within 10%, in a bounded number of steps and within its time budget.

use loadgen::json::LoadReport;
use loadgen::{HttpVersion, LoadConfig, LoadSpec, Target};
use report::capacity::{CapacityKind, StopReason};
use runner::capacity::{self, Search};
use scenario::{CapacitySpec, CapacityTarget, Percentile};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The known rate: one request per millisecond.
const SERVICE: Duration = Duration::from_millis(1);
const KNEE: f64 = 1000.0;

/// A server on 127.0.0.1 (port chosen by the kernel) that answers every request with
/// "Hello, World!" after queueing it behind the ones before it: each leaves [`SERVICE`] after
/// the later of its arrival and the previous one's departure.
struct SerialServer {
    port: u16,
    served: Arc<AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SerialServer {
    fn start() -> SerialServer {
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&served);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
                port_tx
                    .send(listener.local_addr().expect("address").port())
                    .expect("report the port");
                // When the last request queued leaves: the next one leaves SERVICE after the
                // later of this and its own arrival.
                let free_at = Arc::new(Mutex::new(Instant::now()));
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let free_at = Arc::clone(&free_at);
                        let counter = Arc::clone(&counter);
                        tokio::spawn(async move {
                            let _ = serve(stream, &free_at, &counter).await;
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stop => {}
                }
            });
            rt.shutdown_background();
        });
        SerialServer {
            port: port_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the server starts"),
            served,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }
}

impl Drop for SerialServer {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    mut s: tokio::net::TcpStream,
    free_at: &Mutex<Instant>,
    served: &AtomicU64,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        // One request head (the generator sends no bodies).
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        buf.drain(..end);
        let keep_alive = head.starts_with("get / http/1.1") && !head.contains("connection: close");
        let leaves = {
            let mut free = free_at.lock().expect("lock");
            let leaves = (*free).max(Instant::now()) + SERVICE;
            *free = leaves;
            leaves
        };
        tokio::time::sleep_until(leaves.into()).await;
        let connection = if keep_alive { "keep-alive" } else { "close" };
        s.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: {connection}\r\n\r\nHello, World!"
            )
            .as_bytes(),
        )
        .await?;
        served.fetch_add(1, Relaxed);
        if !keep_alive {
            return Ok(());
        }
    }
}

#[test]
fn the_search_finds_the_rate_above_which_the_latency_jumps() {
    let server = SerialServer::start();
    // p90 rather than p99: a moment's stall of this shared machine then does not fail a rate
    // the server keeps up with, while above the knee the queue grows through the whole window.
    let spec = CapacitySpec {
        step: Duration::from_secs(1),
        warmup: Duration::from_millis(300),
        max_steps: 12,
        budget: Duration::from_secs(30),
        start: Some(KNEE / 4.0),
        ..CapacitySpec::new(CapacityTarget {
            percentile: Percentile::P90,
            latency: Duration::from_millis(20),
        })
    };
    let criteria = capacity::criteria(&spec);
    let base = LoadSpec {
        keep_alive: true,
        version: HttpVersion::Http11,
        timeout: Duration::from_secs(5),
        ..LoadSpec::default()
    };
    let url = format!("http://127.0.0.1:{}/", server.port);
    let began = Instant::now();
    let (result, steps) = capacity::search(
        Search::new(spec.start.unwrap(), criteria.clone()),
        |r| capacity::step_cost(&spec, r),
        |rate| {
            let (load, capped) = capacity::step_load(&base, &spec, rate, 10_000);
            let cfg = LoadConfig::new(Target::parse(&url).expect("URL"), load);
            let t = Instant::now();
            let m = loadgen::run(cfg).expect("the step runs");
            let step = capacity::step_from_report(
                &LoadReport::from_measurement(&m),
                rate,
                capped,
                &criteria,
                t.elapsed(),
            )
            .expect("histograms decode");
            println!(
                "{:>7.1} req/s asked, {:>7.1} sent, p90 {:>8.2} ms, {} unanswered: {:?}",
                step.rate,
                step.achieved(),
                step.latency_us.unwrap_or(0) as f64 / 1e3,
                step.unanswered,
                step.verdict
            );
            Some(step)
        },
    )
    .expect("nothing stops the search");
    let found = result.rate.expect("a rate passed");
    println!(
        "{:?} {found:.1} requests/s (failed at {:?}) after {} steps, {:.1} s; the server answered {} requests",
        result.kind,
        result.failed_at,
        steps.len(),
        began.elapsed().as_secs_f64(),
        server.served.load(Relaxed)
    );
    assert_eq!(result.kind, CapacityKind::Found, "{result:?}");
    assert_eq!(result.stop, StopReason::Converged);
    assert!(
        (KNEE * 0.9..=KNEE * 1.1).contains(&found),
        "found {found:.1} requests/s for a knee at {KNEE}"
    );
    // Bounded: within its steps, and the steps' own time within its budget.
    assert!(steps.len() <= spec.max_steps as usize);
    let spent: f64 = steps.iter().map(|s| s.wall_s).sum();
    assert!(
        spent <= spec.budget.as_secs_f64(),
        "the steps took {spent:.1} s of a {:?} budget",
        spec.budget
    );
    // Below the knee the queue stays empty: each passing step's requests were all answered
    // but the last moment's, and above it the latency is the queue's, not the generator's.
    for s in &steps {
        if s.rate > KNEE * 1.1 {
            assert_eq!(s.verdict, report::capacity::StepVerdict::Latency, "{s:?}");
        }
        if s.rate < KNEE * 0.9 {
            assert_eq!(s.verdict, report::capacity::StepVerdict::Pass, "{s:?}");
        }
    }
}
