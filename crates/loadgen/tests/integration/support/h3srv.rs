//! An HTTP/3 server for the load generator's tests: the `h3` crate's server over `quinn`, on a
//! tokio runtime of its own, on UDP 127.0.0.1 port 0, TLS 1.3 with a self-signed certificate
//! made by the test. Another implementation than the client's on the other end, so that the
//! tests show the client speaks QUIC and HTTP/3 as others do, not only as it reads itself.
//! Paths:
//! - `/bytes/N`: N bytes of body with content-length, in DATA frames of at most 16 KiB;
//! - `/slow?ms=M`: "Hello, World!" after M milliseconds;
//! - `/stall`: never answers;
//! - `/reset`: the stream is reset (H3_REQUEST_REJECTED) without an answer;
//! - anything else: "Hello, World!".
//!
//! It counts connections (completed handshakes), requests, and the most requests it had in
//! progress at once on one connection. It gives clients session tickets that allow early data
//! (0-RTT); with [`Options::resumes`] false it gives tickets it cannot resume from, so that
//! every 0-RTT attempt is rejected. With [`Options::goaway_after`] it ends each connection
//! gracefully (GOAWAY) after that many requests, so that a client with keep-alive connects
//! again.

use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

#[derive(Default)]
pub struct Counters {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub peak_streams: AtomicU64,
}

/// What the server offers by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// "h3": an HTTP/3 server.
    H3,
    /// Something else ("hq-interop"): a QUIC server that does not speak HTTP/3.
    Other,
}

/// How the server treats sessions and connections.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Its session tickets resume sessions (and so allow 0-RTT); false: every resumption, and
    /// every 0-RTT attempt, fails.
    pub resumes: bool,
    /// Each connection is sent a GOAWAY once it has had this many requests.
    pub goaway_after: Option<usize>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            resumes: true,
            goaway_after: None,
        }
    }
}

pub struct H3Server {
    pub port: u16,
    pub counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const HELLO: &[u8] = b"Hello, World!";

/// A session store that keeps nothing: the tickets it hands out resume no session, and early
/// data sent with them is rejected.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _key: Vec<u8>, _value: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}

fn server_config(alpn: Alpn, max_streams: u32, resumes: bool) -> quinn::ServerConfig {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let der = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .expect("TLS 1.3")
    .with_no_client_auth()
    .with_single_cert(vec![cert.der().clone()], der.into())
    .expect("server config");
    tls.max_early_data_size = u32::MAX;
    if !resumes {
        tls.session_storage = Arc::new(Forgetful);
    }
    tls.alpn_protocols = vec![match alpn {
        Alpn::H3 => b"h3".to_vec(),
        Alpn::Other => b"hq-interop".to_vec(),
    }];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(max_streams.into());
    config.transport_config(Arc::new(transport));
    config
}

impl H3Server {
    /// `max_streams`: the request streams a connection may have open at once.
    pub fn start(alpn: Alpn, max_streams: u32) -> H3Server {
        Self::start_with(alpn, max_streams, Options::default())
    }

    pub fn start_with(alpn: Alpn, max_streams: u32, opts: Options) -> H3Server {
        let Options {
            resumes,
            goaway_after,
        } = opts;
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
                let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
                let endpoint =
                    quinn::Endpoint::server(server_config(alpn, max_streams, resumes), addr)
                        .expect("bind");
                port_tx.send(endpoint.local_addr().unwrap().port()).unwrap();
                let serve = {
                    let endpoint = endpoint.clone();
                    async move {
                        while let Some(incoming) = endpoint.accept().await {
                            let c = c.clone();
                            tokio::spawn(async move {
                                if let Ok(conn) = incoming.await {
                                    c.connections.fetch_add(1, SeqCst);
                                    serve_conn(conn, c, goaway_after).await;
                                }
                            });
                        }
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = rx => {}
                }
                endpoint.close(0u32.into(), b"done");
            });
        });
        let port = port_rx.recv().expect("server port");
        H3Server {
            port,
            counters,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for H3Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve_conn(conn: quinn::Connection, c: Arc<Counters>, goaway_after: Option<usize>) {
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await
    else {
        return;
    };
    let open = Arc::new(AtomicU64::new(0));
    let mut accepted = 0;
    while let Ok(Some(resolver)) = h3.accept().await {
        accepted += 1;
        if goaway_after == Some(accepted) {
            // Room for the requests the client may have sent before the GOAWAY reaches it.
            let _ = h3.shutdown(64).await;
        }
        let (c, open) = (c.clone(), open.clone());
        tokio::spawn(async move {
            let Ok((req, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            c.requests.fetch_add(1, SeqCst);
            let now = open.fetch_add(1, SeqCst) + 1;
            c.peak_streams.fetch_max(now, SeqCst);
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            let body: Vec<u8> = if let Some(n) = path.strip_prefix("/bytes/") {
                vec![b'x'; n.parse().unwrap_or(0)]
            } else if path == "/slow" {
                let ms = query
                    .strip_prefix("ms=")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                HELLO.to_vec()
            } else if path == "/stall" {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            } else if path == "/reset" {
                stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED);
                open.fetch_sub(1, SeqCst);
                return;
            } else {
                HELLO.to_vec()
            };
            let resp = http::Response::builder()
                .status(200)
                .header("server", "h3-test")
                .header("content-length", body.len())
                .body(())
                .unwrap();
            if stream.send_response(resp).await.is_ok() {
                for part in body.chunks(16 << 10) {
                    if stream
                        .send_data(Bytes::copy_from_slice(part))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                let _ = stream.finish().await;
            }
            open.fetch_sub(1, SeqCst);
        });
    }
}
