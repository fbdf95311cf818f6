//! A small HTTPS/1.x server for the TLS tests: rustls over blocking sockets, a thread per
//! connection, on 127.0.0.1 port 0, with certificates made by the test (a CA of its own and a
//! server certificate it signed: one for 127.0.0.1, one for another name, or one that has
//! expired). Every path gets "Hello, World!" with Content-Length, except `/bytes/N`, which
//! gets N bytes, kept alive as the request asks; and `/close`, which gets "Hello, World!"
//! without a length, ended by close_notify and the close, all in one write; and `/linger`,
//! which gets "Hello, World!" with its length and close_notify, but keeps the connection open
//! until the client closes it (as lighttpd does). It counts connections, requests and resumed
//! handshakes, so tests can check the client's numbers against it.

use rcgen::{date_time_ymd, BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{HandshakeKind, ServerConfig, ServerConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// Which certificate the server presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cert {
    /// Valid now, for 127.0.0.1.
    Good,
    /// Valid now, for `wrong.example` only.
    WrongName,
    /// For 127.0.0.1, but it expired in 2021.
    Expired,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    requests: AtomicU64,
    resumed: AtomicU64,
    handshakes: AtomicU64,
    tls12: AtomicU64,
}

/// A running HTTPS test server; dropping it stops accepting and removes its CA file.
pub struct TlsServer {
    pub port: u16,
    /// The PEM file of the CA that signed the server's certificate (for `--verify`).
    pub ca_file: PathBuf,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn certificate(kind: Cert) -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "benchctl test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let name = match kind {
        Cert::Good | Cert::Expired => "127.0.0.1",
        Cert::WrongName => "wrong.example",
    };
    let mut leaf = CertificateParams::new(vec![name.to_string()]).expect("leaf params");
    if kind == Cert::Expired {
        leaf.not_before = date_time_ymd(2020, 1, 1);
        leaf.not_after = date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().expect("server key");
    let cert = leaf.signed_by(&key, &issuer).expect("server certificate");
    (
        ca_cert.pem(),
        cert.der().clone(),
        PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
    )
}

impl TlsServer {
    pub fn start(kind: Cert) -> TlsServer {
        let (ca_pem, cert, key) = certificate(kind);
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .expect("server certificate and key");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let port = listener.local_addr().expect("local addr").port();
        let ca_file = std::env::temp_dir().join(format!(
            "benchctl-test-ca-{}-{port}.pem",
            std::process::id()
        ));
        std::fs::write(&ca_file, ca_pem).expect("write the CA file");
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (counters, stop) = (counters.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(SeqCst) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            counters.accepted.fetch_add(1, SeqCst);
                            let (config, counters) = (config.clone(), counters.clone());
                            std::thread::spawn(move || {
                                let _ = serve(s, config, &counters);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
            })
        };
        TlsServer {
            port,
            ca_file,
            counters,
            stop,
            thread: Some(thread),
        }
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// TCP connections accepted.
    pub fn accepted(&self) -> u64 {
        self.counters.accepted.load(SeqCst)
    }

    /// Handshakes completed.
    pub fn handshakes(&self) -> u64 {
        self.counters.handshakes.load(SeqCst)
    }

    /// Handshakes that resumed an earlier session.
    pub fn resumed(&self) -> u64 {
        self.counters.resumed.load(SeqCst)
    }

    /// Handshakes that settled on TLS 1.2.
    pub fn tls12(&self) -> u64 {
        self.counters.tls12.load(SeqCst)
    }

    /// Requests answered.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.ca_file);
    }
}

/// Serves one connection's requests until either side ends it.
fn serve(s: TcpStream, config: Arc<ServerConfig>, c: &Counters) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let _ = s.set_nodelay(true);
    let conn = ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = StreamOwned::new(conn, s);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut counted = false;
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            let n = tls.read(&mut chunk)?;
            if !counted && !tls.conn.is_handshaking() {
                counted = true;
                c.handshakes.fetch_add(1, SeqCst);
                if tls.conn.handshake_kind() == Some(HandshakeKind::Resumed) {
                    c.resumed.fetch_add(1, SeqCst);
                }
                if tls.conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_2) {
                    c.tls12.fetch_add(1, SeqCst);
                }
            }
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        c.requests.fetch_add(1, SeqCst);
        let http11 = head.lines().next().is_some_and(|l| l.ends_with("HTTP/1.1"));
        let lower = head.to_ascii_lowercase();
        let keep = if http11 {
            !lower.contains("connection: close")
        } else {
            lower.contains("connection: keep-alive")
        };
        let path = head.split(' ').nth(1).unwrap_or("/");
        if path == "/close" {
            tls.conn
                .writer()
                .write_all(b"HTTP/1.0 200 OK\r\nServer: tlstest/1.0\r\n\r\nHello, World!")?;
            tls.conn.send_close_notify();
            let _ = tls.flush();
            return Ok(());
        }
        if path == "/linger" {
            tls.write_all(
                b"HTTP/1.0 200 OK\r\nServer: tlstest/1.0\r\nContent-Length: 13\r\n\r\nHello, World!",
            )?;
            tls.flush()?;
            // close_notify comes once the response has been read, in a readiness event of its
            // own; then no FIN until the client has gone (its FIN, or the read timeout).
            std::thread::sleep(Duration::from_millis(20));
            tls.conn.send_close_notify();
            tls.flush()?;
            let mut rest = [0u8; 256];
            while matches!(tls.sock.read(&mut rest), Ok(n) if n > 0) {}
            return Ok(());
        }
        let body = match path.strip_prefix("/bytes/").and_then(|n| n.parse().ok()) {
            Some(n) => vec![b'x'; n],
            None => b"Hello, World!".to_vec(),
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\nServer: tlstest/1.0\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
            body.len(),
            if keep { "keep-alive" } else { "close" }
        );
        tls.write_all(&[response.as_bytes(), &body].concat())?;
        tls.flush()?;
        if !keep {
            tls.conn.send_close_notify();
            let _ = tls.flush();
            return Ok(());
        }
    }
}
