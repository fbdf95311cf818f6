//! A small HTTP/1.x server for the load generator's tests: it listens on 127.0.0.1 port 0,
//! writes every response by hand so each behaviour is exact, and counts what it saw
//! (connections accepted, connections open at once, requests, bytes written) so tests can check
//! the client's numbers against the server's.
//!
//! Behaviours, chosen by path (the query string is ignored except by `/stall-once`, `/slow`
//! and `/warm`):
//! - `/cl`: "Hello, World!" with Content-Length; keep-alive when HTTP/1.1 (unless the request says
//!   `Connection: close`) or when an HTTP/1.0 request says `Connection: Keep-Alive`;
//! - `/chunked`: the same 13 bytes in several chunks;
//! - `/close`: no Content-Length, the body, then close;
//! - `/nokeepalive`: `Connection: close` and close, whatever the request asked;
//! - `/reset`: Content-Length 1000, 100 bytes of body, then an abortive close (RST);
//! - `/stall`: reads the request, never answers, closes after [`STALL_HOLD`];
//! - `/404`: a 404 with a short body;
//! - `/vary`: a body of 13 then 14 bytes, alternating per request;
//! - `/big`: [`BIG_LEN`] bytes streamed from a small static buffer;
//! - `/big-close`: the same bytes with no Content-Length, ended by closing the connection;
//! - `/stall-once?after=N`: when the server's request count reaches N, every response waits
//!   until one second after that moment (a server that stops once, like a GC pause);
//! - `/slow?ms=N`: the `/cl` response, each one after waiting N milliseconds;
//! - `/warm?ms=N&for=F&then=T`: the `/cl` response after N milliseconds for the first F
//!   milliseconds from the server's first `/warm` request, after T milliseconds from then on
//!   (a server that warms up);
//! - `/garbage`: "NOT HTTP\r\n\r\n" and close;
//! - `/twice?len=N`: on a kept-alive connection, answers every other request with two
//!   responses of N body bytes in one write (the second one for the request still to come) and
//!   the requests between with nothing;
//! - `/short`: Content-Length [`SHORT_DECLARED`], [`SHORT_SENT`] bytes of body, then a clean
//!   close (FIN);
//! - `/tail?ms=M`: [`TAIL_LEN`] bytes of body with Content-Length, the last [`TAIL_LAST`] of
//!   them M milliseconds after the others;
//! - `/big-chunked`: [`big_chunk_sizes`] as chunks, large and small ones mixed.
//!
//! A request with a Content-Length has its body read, and the first [`SEEN_KEPT`] requests are
//! kept whole ([`TestServer::seen`]) so tests can check what arrived byte for byte. A request
//! line with an absolute URL (`GET http://host:port/path`, what a client sends to a proxy) is
//! answered as its path, as a proxy in front of this server would, and kept as it came.
//!
//! The server runs on its own multi-thread runtime and thread; dropping [`TestServer`] stops
//! it and closes every connection it holds.

#![allow(dead_code)]

pub mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;

/// The document most paths serve.
pub const HELLO: &[u8] = b"Hello, World!";
/// Body length of `/big`: 100 MiB.
pub const BIG_LEN: u64 = 100 * 1024 * 1024;
/// How long `/stall` holds a connection without answering.
pub const STALL_HOLD: Duration = Duration::from_secs(5);
/// How long `/stall-once` stops the server.
pub const STALL_ONCE: Duration = Duration::from_secs(1);

/// Body length `/short` announces, and what it sends before closing.
pub const SHORT_DECLARED: u64 = 2 * 1024 * 1024;
pub const SHORT_SENT: u64 = 700_001;
/// Body length of `/tail`, and how many of its last bytes come late.
pub const TAIL_LEN: u64 = 300_007;
pub const TAIL_LAST: u64 = 1_000;

/// The chunk sizes of `/big-chunked`, in order: chunks larger than a read buffer (which the
/// generator skips), small ones (which it reads), sizes on either side of 64 KiB.
pub fn big_chunk_sizes() -> Vec<u64> {
    [
        1,
        300_000,
        70_000,
        5,
        1 << 20,
        65_536,
        65_535,
        17,
        2_000_003,
    ]
    .into_iter()
    .cycle()
    .take(27)
    .collect()
}

static BIG_CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// How many requests [`TestServer::seen`] keeps.
pub const SEEN_KEPT: usize = 1000;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request line, as sent.
    pub line: String,
    /// The header lines, as sent, in order.
    pub headers: Vec<String>,
    /// The body (Content-Length bytes; empty without one).
    pub body: Vec<u8>,
}

impl Seen {
    /// The values of every header named `name` (case-insensitively), in order.
    pub fn header(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .collect()
    }
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    open: AtomicU64,
    peak_open: AtomicU64,
    requests: AtomicU64,
    bytes_sent: AtomicU64,
    vary: AtomicU64,
    /// When `/stall-once` triggered: responses wait until this instant plus [`STALL_ONCE`].
    stalled_at: Mutex<Option<Instant>>,
    /// The first `/warm` request.
    warm_from: Mutex<Option<Instant>>,
    seen: Mutex<Vec<Seen>>,
}

/// `cfg` made a constant-rate load of `rate` requests/s for `run_for` (no request count).
pub fn paced(mut cfg: loadgen::LoadConfig, rate: f64, run_for: Duration) -> loadgen::LoadConfig {
    cfg.load.requests = None;
    cfg.load.duration = Some(run_for);
    cfg.load.rate = Some(rate);
    cfg.load.timeout = Duration::from_secs(10);
    cfg
}

/// A constant-rate run held its `rate` within 10%, without a failure, with one latency from
/// the due send time per response.
pub fn assert_rate_held(m: &loadgen::Measurement, rate: f64) {
    assert_eq!(m.failed(), 0, "{:?}", m.rec.failures);
    let achieved = m.complete() as f64 / m.elapsed.as_secs_f64();
    assert!(
        (rate * 0.9..=rate * 1.1).contains(&achieved),
        "{achieved:.0} requests/s where {rate} were asked ({} in {:?})",
        m.complete(),
        m.elapsed
    );
    let corrected = m.rec.corrected.as_ref().expect("a corrected histogram");
    assert_eq!(corrected.len(), m.rec.hist.total.len());
    assert_eq!(m.settings.rate, Some(rate));
}

/// A run at a rate its server (200 ms a request) could not keep: its requests waited for a
/// stream, so their latency from the send time they were due grew past a second at p99 while
/// the server's own stayed under 400 ms, and the requests still waiting at the end are counted.
pub fn assert_waiting_counted_from_due(m: &loadgen::Measurement) {
    assert_eq!(m.failed(), 0, "{:?}", m.rec.failures);
    let corrected = m.rec.corrected.as_ref().expect("a corrected histogram");
    let (c99, u99) = (
        corrected.value_at_quantile(0.99),
        m.rec.hist.total.value_at_quantile(0.99),
    );
    assert!(u99 < 400_000, "uncorrected p99 {u99} µs");
    assert!(c99 > 1_000_000, "corrected p99 {c99} µs");
    let unfinished = m
        .rec
        .unfinished
        .as_ref()
        .expect("unfinished requests counted");
    assert!(!unfinished.is_empty());
}

/// `n` requests to `url` over `c` connections with a 5 s timeout, the rest as `LoadSpec`'s
/// defaults.
pub fn config(url: &str, n: u64, c: u32) -> loadgen::LoadConfig {
    let mut cfg = loadgen::LoadConfig::new(
        loadgen::Target::parse(url).expect("test URL parses"),
        loadgen::LoadSpec::default(),
    );
    cfg.load.requests = Some(n);
    cfg.load.concurrency = c;
    cfg.load.timeout = Duration::from_secs(5);
    cfg
}

/// The engine a test's load runs on when it does not name one: `LOADGEN_TEST_ENGINE`
/// (`epoll` or `uring`), so that the whole suite can run on each (`./x test` runs it on both:
/// unset, the generator's own choice; then epoll). io_uring only where it drives the load:
/// HTTP/1.x and HTTP/2.
pub fn test_engine(cfg: &loadgen::LoadConfig) -> loadgen::Engine {
    let engine = match std::env::var("LOADGEN_TEST_ENGINE") {
        Ok(e) => e
            .parse()
            .expect("LOADGEN_TEST_ENGINE is auto, epoll or uring"),
        Err(_) => loadgen::Engine::Auto,
    };
    if engine == loadgen::Engine::Uring && cfg.load.version == loadgen::HttpVersion::Http3 {
        return loadgen::Engine::Auto;
    }
    engine
}

/// Runs the load on a thread of its own and fails the test if it does not return in `limit`.
pub fn run_within(
    limit: Duration,
    mut cfg: loadgen::LoadConfig,
) -> Result<loadgen::Measurement, loadgen::LoadError> {
    if cfg.load.engine == loadgen::Engine::Auto {
        cfg.load.engine = test_engine(&cfg);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(loadgen::run(cfg));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the load run did not finish within {limit:?}"))
}

/// A running test server.
pub struct TestServer {
    pub port: u16,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 with an ephemeral port.
    pub fn start() -> TestServer {
        let counters = Arc::new(Counters::default());
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("test-server".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("test server runtime");
                rt.block_on(async move {
                    let socket = TcpSocket::new_v4().expect("socket");
                    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
                    socket
                        .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                        .expect("bind 127.0.0.1:0");
                    // A deep backlog so that 10,000 simultaneous connects are not dropped and
                    // retried a second later (the kernel caps it at somaxconn).
                    let listener = socket.listen(65_535).expect("listen");
                    port_tx
                        .send(listener.local_addr().expect("local addr").port())
                        .expect("report port");
                    let accept = async {
                        loop {
                            match listener.accept().await {
                                Ok((stream, _)) => {
                                    let c = c.clone();
                                    c.accepted.fetch_add(1, SeqCst);
                                    let open = c.open.fetch_add(1, SeqCst) + 1;
                                    c.peak_open.fetch_max(open, SeqCst);
                                    tokio::spawn(async move {
                                        let _ = serve(stream, &c).await;
                                        c.open.fetch_sub(1, SeqCst);
                                    });
                                }
                                // Out of descriptors or similar: back off instead of spinning.
                                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                            }
                        }
                    };
                    tokio::select! {
                        _ = accept => {}
                        _ = shutdown_rx => {}
                    }
                });
                // Drops every connection task, stalled ones included.
                rt.shutdown_background();
            })
            .expect("spawn test server thread");
        let port = port_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("test server did not start");
        TestServer {
            port,
            counters,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.counters.accepted.load(SeqCst)
    }

    /// Most connections open at the same time so far.
    pub fn peak_open(&self) -> u64 {
        self.counters.peak_open.load(SeqCst)
    }

    /// Requests whose head was read so far.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(SeqCst)
    }

    /// Bytes written to clients so far (heads and bodies).
    pub fn bytes_sent(&self) -> u64 {
        self.counters.bytes_sent.load(SeqCst)
    }

    /// The first [`SEEN_KEPT`] requests, whole, in the order their heads were read.
    pub fn seen(&self) -> Vec<Seen> {
        self.counters
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One parsed request head.
struct Request {
    head_only: bool,
    path: String,
    query: String,
    keep_alive: bool,
    content_length: usize,
}

/// Reads one request (its head, and its body when it has a Content-Length) into `buf`
/// (which may already hold bytes), keeping it in `seen`; None at a clean EOF.
async fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    c: &Counters,
) -> std::io::Result<Option<Request>> {
    let Some(req) = read_head(s, buf).await? else {
        return Ok(None);
    };
    let (head, req) = req;
    while buf.len() < req.content_length {
        let mut chunk = [0u8; 16 * 1024];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("the body was cut short"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Vec<u8> = buf.drain(..req.content_length).collect();
    let mut seen = c.seen.lock().unwrap_or_else(|p| p.into_inner());
    if seen.len() < SEEN_KEPT {
        let mut lines = head.split("\r\n");
        seen.push(Seen {
            line: lines.next().unwrap_or("").to_string(),
            headers: lines.map(str::to_string).collect(),
            body,
        });
    }
    Ok(Some(req))
}

/// Reads one request head; None at a clean EOF.
async fn read_head(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(String, Request)>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let req = parse_request(&head);
            return Ok(Some((head, req)));
        }
        if buf.len() > 64 * 1024 {
            return Err(std::io::Error::other("request head too long"));
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_request(head: &str) -> Request {
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("/");
    let version = parts.next().unwrap_or("HTTP/1.0");
    // An absolute URL, as sent to a proxy: answered as its path.
    let target = match target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.to_string(), String::new()),
    };
    let mut conn_close = false;
    let mut conn_keep = false;
    let mut content_length = 0;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                content_length = v.trim().parse().unwrap_or(0);
            }
            if k.trim().eq_ignore_ascii_case("connection") {
                for t in v.split(',') {
                    let t = t.trim();
                    conn_close |= t.eq_ignore_ascii_case("close");
                    conn_keep |= t.eq_ignore_ascii_case("keep-alive");
                }
            }
        }
    }
    let keep_alive = if version == "HTTP/1.1" {
        !conn_close
    } else {
        conn_keep && !conn_close
    };
    Request {
        head_only: method == "HEAD",
        path,
        query,
        keep_alive,
        content_length,
    }
}

/// Writes `data`, counting it first: counted after the write, the client could read the bytes,
/// finish its run and compare totals before this thread got to count them.
async fn send(s: &mut TcpStream, c: &Counters, data: &[u8]) -> std::io::Result<()> {
    c.bytes_sent.fetch_add(data.len() as u64, SeqCst);
    s.write_all(data).await
}

/// Writes the [`BIG_LEN`]-byte body of `/big` and `/big-close` from the small static buffer.
async fn send_big_body(s: &mut TcpStream, c: &Counters) -> std::io::Result<()> {
    send_filler(s, c, BIG_LEN).await
}

/// Writes `len` filler bytes from the small static buffer.
async fn send_filler(s: &mut TcpStream, c: &Counters, len: u64) -> std::io::Result<()> {
    let mut left = len;
    while left > 0 {
        let n = left.min(BIG_CHUNK.len() as u64) as usize;
        send(s, c, &BIG_CHUNK[..n]).await?;
        left -= n as u64;
    }
    Ok(())
}

/// The number a query string gives `key` (`a=1&key=42` → 42).
fn query_number(query: &str, key: &str) -> Option<u64> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// The `/cl` response: [`HELLO`] with Content-Length.
async fn send_hello(
    s: &mut TcpStream,
    c: &Counters,
    keep: bool,
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
        HELLO.len(),
        conn_header(keep)
    );
    let body: &[u8] = if head_only { b"" } else { HELLO };
    send(s, c, &[head.as_bytes(), body].concat()).await
}

/// The `Connection` header line for a response that honours the request's wish.
fn conn_header(keep: bool) -> &'static str {
    if keep {
        "Connection: keep-alive\r\n"
    } else {
        "Connection: close\r\n"
    }
}

/// Serves requests on one connection until either side ends it.
async fn serve(mut s: TcpStream, c: &Counters) -> std::io::Result<()> {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::with_capacity(1024);
    // `/twice` sent the response to this connection's next request already.
    let mut answered_ahead = false;
    while let Some(req) = read_request(&mut s, &mut buf, c).await? {
        let nth = c.requests.fetch_add(1, SeqCst) + 1;
        match req.path.as_str() {
            "/cl" | "/slow" | "/warm" | "/stall-once" => {
                send_hello_late(&mut s, c, &req, nth).await?
            }
            "/chunked" | "/404" | "/vary" => send_small(&mut s, c, &req).await?,
            "/twice" => send_twice(&mut s, c, &req, &mut answered_ahead).await?,
            "/big" | "/tail" | "/big-chunked" => send_large(&mut s, c, &req).await?,
            // Dropped on return, the connection closes.
            _ => return send_and_end(&mut s, c, &req).await,
        }
        if !req.keep_alive {
            let _ = s.shutdown().await;
            return Ok(());
        }
    }
    Ok(())
}

/// `b`, or nothing in answer to HEAD.
fn body_of(req: &Request, b: &[u8]) -> Vec<u8> {
    if req.head_only {
        Vec::new()
    } else {
        b.to_vec()
    }
}

/// `/cl`, `/slow`, `/warm` and `/stall-once`: the `/cl` response, after the wait the path
/// asks for (the `nth` request the server has seen).
async fn send_hello_late(
    s: &mut TcpStream,
    c: &Counters,
    req: &Request,
    nth: u64,
) -> std::io::Result<()> {
    match req.path.as_str() {
        "/slow" => {
            let ms = query_number(&req.query, "ms").unwrap_or(1);
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        "/warm" => {
            let ms = |key: &str| Duration::from_millis(query_number(&req.query, key).unwrap_or(0));
            let from = *c
                .warm_from
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert_with(Instant::now);
            let wait = if from.elapsed() < ms("for") {
                ms("ms")
            } else {
                ms("then")
            };
            tokio::time::sleep(wait).await;
        }
        "/stall-once" => {
            let after = query_number(&req.query, "after").unwrap_or(u64::MAX);
            let until = {
                let mut at = c.stalled_at.lock().unwrap_or_else(|p| p.into_inner());
                if nth == after {
                    *at = Some(Instant::now());
                }
                at.map(|t| t + STALL_ONCE)
            };
            if let Some(u) = until {
                tokio::time::sleep_until(u.into()).await;
            }
        }
        _ => {}
    }
    send_hello(s, c, req.keep_alive, req.head_only).await
}

/// `/chunked`, `/404` and `/vary`: a short body of their own.
async fn send_small(s: &mut TcpStream, c: &Counters, req: &Request) -> std::io::Result<()> {
    let keep = req.keep_alive;
    match req.path.as_str() {
        "/chunked" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nTransfer-Encoding: chunked\r\n{}\r\n",
                conn_header(keep)
            );
            let mut out = head.into_bytes();
            if !req.head_only {
                // "Hello, World!" as 5 + 2 + 6 bytes, with a chunk extension on one.
                out.extend_from_slice(b"5\r\nHello\r\n2;ext=1\r\n, \r\n6\r\nWorld!\r\n0\r\n\r\n");
            }
            send(s, c, &out).await
        }
        "/404" => {
            let head = format!(
                "HTTP/1.1 404 Not Found\r\nServer: testserver/1.0\r\nContent-Length: 9\r\n{}\r\n",
                conn_header(keep)
            );
            send(
                s,
                c,
                &[head.as_bytes(), &body_of(req, b"Not Found")].concat(),
            )
            .await
        }
        _ => {
            let k = c.vary.fetch_add(1, SeqCst);
            let doc: &[u8] = if k % 2 == 0 { HELLO } else { b"Hello, World!!" };
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {}\r\n{}\r\n",
                doc.len(),
                conn_header(keep)
            );
            send(s, c, &[head.as_bytes(), &body_of(req, doc)].concat()).await
        }
    }
}

/// `/twice`: every other request gets two responses in one write, the one between none.
async fn send_twice(
    s: &mut TcpStream,
    c: &Counters,
    req: &Request,
    answered_ahead: &mut bool,
) -> std::io::Result<()> {
    if *answered_ahead {
        *answered_ahead = false;
        return Ok(());
    }
    let len = query_number(&req.query, "len").unwrap_or(13) as usize;
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {len}\r\n{}\r\n",
        conn_header(req.keep_alive)
    );
    // Body bytes taken for the second head, or the reverse, would not parse.
    let one = [head.as_bytes(), &vec![b'1'; len]].concat();
    let two = [head.as_bytes(), &vec![b'2'; len]].concat();
    send(s, c, &[one, two].concat()).await?;
    *answered_ahead = true;
    Ok(())
}

/// `/big`, `/tail` and `/big-chunked`: long bodies, on a connection that may be kept.
async fn send_large(s: &mut TcpStream, c: &Counters, req: &Request) -> std::io::Result<()> {
    let keep = req.keep_alive;
    match req.path.as_str() {
        "/big" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {BIG_LEN}\r\n{}\r\n",
                conn_header(keep)
            );
            send(s, c, head.as_bytes()).await?;
            if !req.head_only {
                send_big_body(s, c).await?;
            }
        }
        "/tail" => {
            let ms = query_number(&req.query, "ms").unwrap_or(1);
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {TAIL_LEN}\r\n{}\r\n",
                conn_header(keep)
            );
            send(s, c, head.as_bytes()).await?;
            send_filler(s, c, TAIL_LEN - TAIL_LAST).await?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            send_filler(s, c, TAIL_LAST).await?;
        }
        _ => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nTransfer-Encoding: chunked\r\n{}\r\n",
                conn_header(keep)
            );
            send(s, c, head.as_bytes()).await?;
            for size in big_chunk_sizes() {
                send(s, c, format!("{size:x}\r\n").as_bytes()).await?;
                send_filler(s, c, size).await?;
                send(s, c, b"\r\n").await?;
            }
            send(s, c, b"0\r\n\r\n").await?;
        }
    }
    Ok(())
}

/// The paths after which the connection ends, whatever the request asked: `/close`,
/// `/nokeepalive`, `/big-close`, `/short` and `/garbage` shut it down after their answer,
/// `/reset` aborts it, `/stall` holds it without answering, any other path gets a 400. The
/// caller drops the connection.
async fn send_and_end(s: &mut TcpStream, c: &Counters, req: &Request) -> std::io::Result<()> {
    match req.path.as_str() {
        "/close" => {
            let mut out = b"HTTP/1.0 200 OK\r\nServer: testserver/1.0\r\n\r\n".to_vec();
            out.extend_from_slice(&body_of(req, HELLO));
            send(s, c, &out).await?;
        }
        "/nokeepalive" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                HELLO.len()
            );
            send(s, c, &[head.as_bytes(), &body_of(req, HELLO)].concat()).await?;
        }
        "/big-close" => {
            send(s, c, b"HTTP/1.0 200 OK\r\nServer: testserver/1.0\r\n\r\n").await?;
            if !req.head_only {
                send_big_body(s, c).await?;
            }
        }
        "/short" => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nServer: testserver/1.0\r\nContent-Length: {SHORT_DECLARED}\r\n\r\n"
            );
            send(s, c, head.as_bytes()).await?;
            send_filler(s, c, SHORT_SENT).await?;
        }
        "/garbage" => send(s, c, b"NOT HTTP\r\n\r\n").await?,
        "/reset" => {
            send(s, c, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n").await?;
            send(s, c, &[b'r'; 100]).await?;
            // Linger 0 makes the close abortive (RST) and never blocks, so the warning about
            // blocking drops does not apply.
            #[allow(deprecated)]
            s.set_linger(Some(Duration::ZERO))?;
            return Ok(());
        }
        "/stall" => {
            tokio::time::sleep(STALL_HOLD).await;
            return Ok(());
        }
        _ => {
            return send(
                s,
                c,
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await
        }
    }
    let _ = s.shutdown().await;
    Ok(())
}
