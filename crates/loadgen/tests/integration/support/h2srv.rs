//! HTTP/2 servers for the load generator's tests, on 127.0.0.1 port 0.
//!
//! [`H2Server`] is the `h2` crate's server on a tokio runtime of its own, in cleartext (h2c,
//! prior knowledge) or over TLS with ALPN (rustls, a self-signed certificate made by the
//! test). Paths:
//! - `/bytes/N`: N bytes of body with Content-Length;
//! - `/slow?ms=M`: "Hello, World!" after M milliseconds;
//! - `/stall`: never answers;
//! - anything else: "Hello, World!".
//!
//! It counts connections, requests, the request body bytes it read, and the most streams it
//! had in progress at once on one connection.
//!
//! [`RudeServer`] is hand-written and misbehaves on purpose (h2c only): it answers streams
//! with a fixed header block and "hello", and either resets every third stream it sees
//! (RST_STREAM) or, after answering a number of streams on a connection, sends GOAWAY naming
//! the last one it answered and closes that connection.
//!
//! [`FloodServer`] is hand-written and hostile (h2c only): on every connection it sends frames
//! without end, CONTINUATION frames for a header block it never ends, or PINGs while never
//! reading the answers, until the client closes the connection or the flood reaches its bound
//! ([`FLOOD_BYTES`], [`FLOOD_TIME`]).

use bytes::Bytes;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub body_bytes: AtomicU64,
    pub peak_streams: AtomicU64,
}

pub struct H2Server {
    pub port: u16,
    pub counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Cleartext, prior knowledge.
    H2c,
    /// TLS, selecting "h2" by ALPN.
    Tls,
    /// TLS that offers only "http/1.1" by ALPN: not an HTTP/2 server (rustls then refuses
    /// the handshake of a client that offers only "h2").
    TlsHttp1Only,
    /// TLS without ALPN: the handshake completes with no protocol chosen.
    TlsNoAlpn,
}

fn tls_config(alpn: &[&[u8]]) -> rustls::ServerConfig {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let der = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert.der().clone()], der.into())
    .expect("server config");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

impl H2Server {
    /// `max_streams`: the SETTINGS_MAX_CONCURRENT_STREAMS the server advertises.
    pub fn start(mode: Mode, max_streams: u32) -> H2Server {
        H2Server::start_with_window(mode, max_streams, None)
    }

    /// `window`: the flow-control window the server gives each stream and the connection
    /// (the `h2` crate's default, 65,535, when `None`).
    pub fn start_with_window(mode: Mode, max_streams: u32, window: Option<u32>) -> H2Server {
        let counters = Arc::new(Counters::default());
        let (tx, rx) = oneshot::channel::<()>();
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let c = counters.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                port_tx.send(l.local_addr().unwrap().port()).unwrap();
                let acceptor = match mode {
                    Mode::H2c => None,
                    Mode::Tls => Some(tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&[
                        b"h2",
                    ])))),
                    Mode::TlsHttp1Only => {
                        Some(tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&[
                            b"http/1.1",
                        ]))))
                    }
                    Mode::TlsNoAlpn => {
                        Some(tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&[]))))
                    }
                };
                let serve = async move {
                    loop {
                        let Ok((s, _)) = l.accept().await else {
                            continue;
                        };
                        c.accepted.fetch_add(1, SeqCst);
                        let c = c.clone();
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            match acceptor {
                                None => serve_conn(s, c, max_streams, window).await,
                                Some(a) => {
                                    if let Ok(t) = a.accept(s).await {
                                        if t.get_ref().1.alpn_protocol() == Some(b"h2") {
                                            serve_conn(t, c, max_streams, window).await
                                        }
                                    }
                                }
                            }
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = rx => {}
                }
            });
        });
        let port = port_rx.recv().expect("server port");
        H2Server {
            port,
            counters,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve_conn<T>(io: T, c: Arc<Counters>, max_streams: u32, window: Option<u32>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut b = h2::server::Builder::new();
    b.max_concurrent_streams(max_streams);
    if let Some(w) = window {
        b.initial_window_size(w).initial_connection_window_size(w);
    }
    let Ok(mut conn) = b.handshake::<_, Bytes>(io).await else {
        return;
    };
    let in_flight = Arc::new(AtomicU64::new(0));
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        c.requests.fetch_add(1, SeqCst);
        let now = in_flight.fetch_add(1, SeqCst) + 1;
        c.peak_streams.fetch_max(now, SeqCst);
        let c = c.clone();
        let in_flight = in_flight.clone();
        tokio::spawn(async move {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            let mut body = req.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                c.body_bytes.fetch_add(chunk.len() as u64, SeqCst);
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            let payload: Bytes = if let Some(n) = path.strip_prefix("/bytes/") {
                Bytes::from(vec![b'x'; n.parse().unwrap_or(0)])
            } else if path == "/stall" {
                tokio::time::sleep(Duration::from_secs(30)).await;
                return;
            } else {
                if path == "/slow" {
                    let ms = query
                        .strip_prefix("ms=")
                        .and_then(|m| m.parse().ok())
                        .unwrap_or(10);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Bytes::from_static(b"Hello, World!")
            };
            in_flight.fetch_sub(1, SeqCst);
            let resp = http::Response::builder()
                .status(200)
                .header("content-length", payload.len())
                .header("server", "h2-test")
                .body(())
                .unwrap();
            if let Ok(mut send) = respond.send_response(resp, false) {
                let _ = send.send_data(payload, true);
            }
        });
    }
}

/// How [`RudeServer`] misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rude {
    /// RST_STREAM (INTERNAL_ERROR) on every third stream it sees, in order of arrival.
    ResetEveryThird,
    /// GOAWAY after answering this many streams on a connection, then close it.
    GoAwayAfter(u32),
}

pub struct RudeServer {
    pub port: u16,
    pub accepted: Arc<AtomicU64>,
    pub answered: Arc<AtomicU64>,
    pub reset: Arc<AtomicU64>,
    pub goaways: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let n = payload.len() as u32;
    out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

impl RudeServer {
    pub fn start(how: Rude) -> RudeServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let s = RudeServer {
            port,
            accepted: Arc::default(),
            answered: Arc::default(),
            reset: Arc::default(),
            goaways: Arc::default(),
            stop: Arc::default(),
        };
        let (accepted, answered, reset, goaways, stop) = (
            s.accepted.clone(),
            s.answered.clone(),
            s.reset.clone(),
            s.goaways.clone(),
            s.stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                match l.accept() {
                    Ok((conn, _)) => {
                        accepted.fetch_add(1, SeqCst);
                        let (answered, reset, goaways) =
                            (answered.clone(), reset.clone(), goaways.clone());
                        std::thread::spawn(move || {
                            let _ = rude_conn(conn, how, &answered, &reset, &goaways);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        s
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RudeServer {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

fn rude_conn(
    mut s: std::net::TcpStream,
    how: Rude,
    answered: &AtomicU64,
    reset: &AtomicU64,
    goaways: &AtomicU64,
) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface)?;
    let mut out = Vec::new();
    frame(&mut out, 0x4, 0, 0, &[]); // SETTINGS
    s.write_all(&out)?;
    let mut seen = 0u32;
    let mut answered_here = 0u32;
    let mut last_answered = 0u32;
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head)?;
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload)?;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut out = Vec::new();
        match kind {
            0x4 if flags & 1 == 0 => frame(&mut out, 0x4, 1, 0, &[]), // SETTINGS ACK
            0x1 => {
                seen += 1;
                match how {
                    Rude::ResetEveryThird if seen % 3 == 0 => {
                        frame(&mut out, 0x3, 0, stream, &2u32.to_be_bytes());
                        reset.fetch_add(1, SeqCst);
                    }
                    Rude::GoAwayAfter(n) if answered_here >= n => {
                        let mut p = last_answered.to_be_bytes().to_vec();
                        p.extend_from_slice(&0u32.to_be_bytes());
                        frame(&mut out, 0x7, 0, 0, &p);
                        goaways.fetch_add(1, SeqCst);
                        s.write_all(&out)?;
                        // Close the sending side, then read what the client still sends
                        // until it closes too, so that nothing unread turns the close into
                        // a reset that could overtake the GOAWAY.
                        s.shutdown(std::net::Shutdown::Write)?;
                        s.set_read_timeout(Some(Duration::from_secs(2)))?;
                        let mut sink = [0u8; 4096];
                        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
                        return Ok(());
                    }
                    _ => {
                        // :status 200 (static index 8), then "hello".
                        frame(&mut out, 0x1, 0x4, stream, &[0x88]);
                        frame(&mut out, 0x0, 0x1, stream, b"hello");
                        answered.fetch_add(1, SeqCst);
                        answered_here += 1;
                        last_answered = stream;
                    }
                }
            }
            _ => {}
        }
        if !out.is_empty() {
            s.write_all(&out)?;
        }
    }
}

/// What [`FloodServer`] sends without end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// Once the client's first HEADERS arrived: HEADERS without END_HEADERS on its stream,
    /// then CONTINUATION frames of this many bytes, none with END_HEADERS. What the client
    /// sends meanwhile is read (GOAWAY's code kept).
    Continuation(usize),
    /// PING after PING once the preface arrived, never reading anything after it.
    Ping,
}

/// The most a flood writes on one connection.
pub const FLOOD_BYTES: u64 = 64 << 20;
/// The longest a flood lasts on one connection.
pub const FLOOD_TIME: Duration = Duration::from_secs(10);

pub struct FloodServer {
    pub port: u16,
    pub accepted: Arc<AtomicU64>,
    /// Connections the client closed during the flood (a write failed).
    pub closed_by_client: Arc<AtomicU64>,
    /// Frames of the flood written, on every connection.
    pub sent: Arc<AtomicU64>,
    /// The error code of the last GOAWAY the client sent; [`NO_GOAWAY`] for none.
    pub goaway_code: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

pub const NO_GOAWAY: u64 = u64::MAX;

impl FloodServer {
    pub fn start(how: Flood) -> FloodServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).unwrap();
        let s = FloodServer {
            port: l.local_addr().unwrap().port(),
            accepted: Arc::default(),
            closed_by_client: Arc::default(),
            sent: Arc::default(),
            goaway_code: Arc::new(AtomicU64::new(NO_GOAWAY)),
            stop: Arc::default(),
        };
        let (accepted, closed, sent, goaway, stop) = (
            s.accepted.clone(),
            s.closed_by_client.clone(),
            s.sent.clone(),
            s.goaway_code.clone(),
            s.stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                match l.accept() {
                    Ok((conn, _)) => {
                        accepted.fetch_add(1, SeqCst);
                        let (closed, sent, goaway, stop) =
                            (closed.clone(), sent.clone(), goaway.clone(), stop.clone());
                        std::thread::spawn(move || {
                            if let Ok(true) = flood_conn(conn, how, &sent, &goaway, &stop) {
                                closed.fetch_add(1, SeqCst);
                            }
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        s
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for FloodServer {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

/// Reads one frame: its type, flags, stream and payload.
fn read_frame(s: &mut std::net::TcpStream) -> std::io::Result<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head)?;
    let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload)?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Ok((head[3], head[4], stream, payload))
}

/// Floods one connection; true when the client closed it first.
fn flood_conn(
    mut s: std::net::TcpStream,
    how: Flood,
    sent: &AtomicU64,
    goaway: &Arc<AtomicU64>,
    stop: &AtomicBool,
) -> std::io::Result<bool> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(FLOOD_TIME))?;
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface)?;
    let mut out = Vec::new();
    frame(&mut out, 0x4, 0, 0, &[]); // SETTINGS
    s.write_all(&out)?;
    // Each write is a batch of frames; one that does not go through in a second is tried again
    // until the flood's time is up.
    s.set_write_timeout(Some(Duration::from_secs(1)))?;
    let (batch, frames) = match how {
        Flood::Continuation(len) => {
            let stream = loop {
                let (kind, _, stream, _) = read_frame(&mut s)?;
                if kind == 0x1 {
                    break stream;
                }
            };
            let mut reader = s.try_clone()?;
            let goaway = goaway.clone();
            std::thread::spawn(move || {
                while let Ok((kind, _, _, payload)) = read_frame(&mut reader) {
                    if kind == 0x7 && payload.len() >= 8 {
                        let code =
                            u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                        goaway.store(u64::from(code), SeqCst);
                    }
                }
            });
            // :status 200, then a block that never ends.
            out.clear();
            frame(&mut out, 0x1, 0, stream, &[0x88]);
            s.write_all(&out)?;
            let mut b = Vec::new();
            for _ in 0..16 {
                frame(&mut b, 0x9, 0, stream, &vec![0u8; len]);
            }
            (b, 16)
        }
        Flood::Ping => {
            let mut b = Vec::new();
            for i in 0..1024u64 {
                frame(&mut b, 0x6, 0, 0, &i.to_be_bytes());
            }
            (b, 1024)
        }
    };
    let started = Instant::now();
    let (mut written, mut at) = (0u64, 0usize);
    while written < FLOOD_BYTES && started.elapsed() < FLOOD_TIME && !stop.load(SeqCst) {
        match s.write(&batch[at..]) {
            Ok(0) => return Ok(true),
            Ok(n) => {
                written += n as u64;
                at += n;
                if at == batch.len() {
                    at = 0;
                    sent.fetch_add(frames, SeqCst);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(true)
            }
            Err(e) => return Err(e),
        }
    }
    // Bound reached: hold the connection, unread, until the client closes it or time is up.
    while started.elapsed() < FLOOD_TIME && !stop.load(SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(false)
}
