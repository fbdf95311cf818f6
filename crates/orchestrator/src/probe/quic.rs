//! HTTP/3 for readiness and verification: quinn's QUIC with the h3 crate's client. It is
//! another implementation than the load generator's (quinn-proto driven by its own loops, and
//! its own HTTP/3 framing), so a server is checked by a client that shares none of the code
//! that will measure it, as reqwest checks the HTTP/1.x and HTTP/2 servers.

use crate::error::{OrchestratorError, Result};
use bytes::Buf;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection may go without hearing from the server.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a response's head said that verification keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    pub status: u16,
    pub server: Option<String>,
    pub via: Option<String>,
}

/// A QUIC endpoint that trusts the run's certificate alone and offers ALPN "h3" only.
pub(super) struct H3Client {
    endpoint: quinn::Endpoint,
}

/// Receives a body chunk by chunk; an error stops the reading with that reason.
pub(super) type OnChunk<'a> = &'a mut (dyn FnMut(&[u8]) -> std::result::Result<(), String> + Send);

impl H3Client {
    /// A client for the server at `addr`: its UDP socket on the same loopback address when
    /// `addr` is one (nothing else may reach it), on the unspecified address of its family
    /// otherwise (another machine's engine).
    pub(super) fn new(cert_pem: &[u8], addr: SocketAddr) -> Result<H3Client> {
        let invalid = OrchestratorError::Invalid;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(cert_pem) {
            let cert =
                cert.map_err(|e| invalid(format!("the run's certificate is not PEM: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| invalid(format!("the run's certificate cannot be trusted: {e}")))?;
        }
        if roots.is_empty() {
            return Err(invalid(
                "the run's certificate holds no certificate".to_string(),
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| invalid(format!("TLS 1.3 for QUIC: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| invalid(format!("QUIC's TLS configuration: {e}")))?;
        let mut endpoint = quinn::Endpoint::client(local_for(addr))
            .map_err(|e| OrchestratorError::io("a UDP socket for HTTP/3".to_string(), e))?;
        // A server that never answers the handshake is given up on after this long, not
        // after QUIC's default of 30 s.
        let mut transport = quinn::TransportConfig::default();
        transport.max_idle_timeout(quinn::IdleTimeout::try_from(IDLE_TIMEOUT).ok());
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport));
        endpoint.set_default_client_config(config);
        Ok(H3Client { endpoint })
    }

    /// GETs `path` from `addr` on a QUIC connection of its own, closed after. With `body`,
    /// a 200 response's body is read to its end and handed to it; without, only the head is
    /// read (readiness). The error says which step failed: the handshake (closed port, wrong
    /// ALPN, a certificate other than the run's), the request, or the body.
    pub(super) async fn get(
        &self,
        addr: SocketAddr,
        path: &str,
        body: Option<OnChunk<'_>>,
    ) -> std::result::Result<Head, String> {
        // The run's certificate names each host by its address.
        let name = addr.ip().to_string();
        let connecting = self
            .endpoint
            .connect(addr, &name)
            .map_err(|e| format!("cannot start a QUIC connection: {e}"))?;
        // quinn's socket is not connected, so the kernel's word that nothing listens there
        // never reaches it, and the handshake would wait for its idle timeout: a connected
        // socket of its own hears it at once.
        let closed = async {
            if refused(addr).await {
                return;
            }
            std::future::pending::<()>().await
        };
        let conn = tokio::select! {
            c = connecting => c.map_err(|e| format!("the QUIC handshake failed: {e}"))?,
            () = closed => return Err(format!(
                "the QUIC handshake failed: nothing listens on UDP {addr} (the kernel refused a datagram sent there)"
            )),
        };
        let result = request(&conn, addr, path, body).await;
        conn.close(quinn::VarInt::from_u32(0), b"done");
        result
    }
}

/// The local address a socket towards `addr` binds: on the same loopback address when `addr`
/// is one (nothing else may reach it), the unspecified address of its family otherwise.
fn local_for(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        ip if ip.is_loopback() => SocketAddr::new(ip, 0),
        IpAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        IpAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    }
}

/// Whether the kernel says no socket listens on UDP `addr`: a one-byte datagram from a
/// connected socket, answered by "port unreachable" (the socket's next receive fails with
/// ECONNREFUSED). A QUIC server drops such a datagram, as it is no packet; then this waits
/// for as long as it is polled (another machine may never say).
async fn refused(addr: SocketAddr) -> bool {
    let Ok(s) = tokio::net::UdpSocket::bind(local_for(addr)).await else {
        return false;
    };
    if s.connect(addr).await.is_err() {
        return false;
    }
    let is_refused = |e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionRefused;
    if let Err(e) = s.send(&[0]).await {
        return is_refused(&e);
    }
    // A server that answers anything is there.
    let mut buf = [0u8; 1];
    s.recv(&mut buf).await.is_err_and(|e| is_refused(&e))
}

impl Drop for H3Client {
    fn drop(&mut self) {
        self.endpoint.close(quinn::VarInt::from_u32(0), b"done");
    }
}

async fn request(
    conn: &quinn::Connection,
    addr: SocketAddr,
    path: &str,
    body: Option<OnChunk<'_>>,
) -> std::result::Result<Head, String> {
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| format!("HTTP/3 did not start on the connection: {e}"))?;
    // The connection's control streams are served while the request runs.
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let exchange = async {
        let req = http::Request::get(format!("https://{addr}{path}"))
            .body(())
            .map_err(|e| format!("no request can be made for {path}: {e}"))?;
        let mut stream = send
            .send_request(req)
            .await
            .map_err(|e| format!("sending the request failed: {e}"))?;
        stream
            .finish()
            .await
            .map_err(|e| format!("ending the request failed: {e}"))?;
        let resp = stream
            .recv_response()
            .await
            .map_err(|e| format!("no response: {e}"))?;
        let header = |name: http::header::HeaderName| {
            resp.headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let head = Head {
            status: resp.status().as_u16(),
            server: header(http::header::SERVER),
            via: header(http::header::VIA),
        };
        if let (Some(each), 200) = (body, head.status) {
            while let Some(mut chunk) = stream
                .recv_data()
                .await
                .map_err(|e| format!("reading the body failed: {e}"))?
            {
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    let n = part.len();
                    each(part)?;
                    chunk.advance(n);
                }
            }
        }
        Ok(head)
    }
    .await;
    drive.abort();
    exchange
}
