//! TLS for `https://` targets, with rustls (its *ring* provider) driven by hand over the
//! engine's own non-blocking sockets: no runtime, no task, no extra thread. Records are read
//! from the socket with the same stamped `recvmsg` as plaintext ([`crate::sock::recv`]), so a
//! response's arrival is still the kernel's receive stamp of the packet that carried it; the
//! rest of the engine sees only plaintext, through [`TlsConn::send`] and [`TlsConn::recv`].
//!
//! As ab: the handshake is part of the connection (its time counts in Connect), the server's
//! certificate is not verified unless asked ([`TlsOptions::verify`]), every new connection
//! does a full handshake unless resumption is allowed ([`TlsOptions::resume`]), and the
//! server name is sent (SNI) when the host is a name, not an address. ab's `-f` (protocol)
//! and `-Z` (cipher suites) are honoured for what rustls speaks: TLS 1.2 and 1.3 and the nine
//! AEAD suites of its *ring* provider; anything else is refused with the reason.
//!
//! What TLS costs the engine: bodies are decrypted, so none is dropped in the kernel
//! ([`crate::sock::discard`] is for plaintext only), and each connection holds its rustls
//! state (some tens of KiB).

use crate::sock::{self, Recv, Stamp};
use crate::stats::TlsSession;
use rustix::io::Errno;
use rustix::net::{SendAncillaryBuffer, SendFlags};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring as provider, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
    SupportedCipherSuite, SupportedProtocolVersion,
};
use std::io::{self, Read, Write};
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Arc;

mod quic;
pub use quic::Negotiated;

/// How `https://` connections are made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Verify the server's certificate chain and name against the CA certificates in this PEM
    /// file (`--verify`). Without it nothing is verified, as ab does.
    pub verify: Option<PathBuf>,
    /// Let a new connection resume an earlier session with an abbreviated handshake
    /// (`--tls-resume`). Without it every new connection does a full handshake, as ab's does.
    pub resume: bool,
    /// HTTP/3 (`--0rtt`): a new connection that resumes an earlier session sends its
    /// requests in 0-RTT, with the handshake's first flight, where the server allows it (the
    /// server may refuse them, and they are sent again once the handshake is done).
    /// Implies resumption.
    pub zero_rtt: bool,
    /// ab's `-f`: `TLS1.2`, `TLS1.3` or `ALL` (the default: both).
    pub protocol: Option<String>,
    /// ab's `-Z`: the cipher suites to offer, colon-separated, by IANA or OpenSSL name.
    pub ciphers: Option<String>,
}

impl TlsOptions {
    /// True when any option differs from the defaults (they only mean something for https).
    pub fn is_set(&self) -> bool {
        *self != TlsOptions::default()
    }
}

/// The suites of rustls's *ring* provider: OpenSSL's name, IANA's name, the suite.
fn suites() -> [(&'static str, &'static str, SupportedCipherSuite); 9] {
    use provider::cipher_suite as cs;
    [
        (
            "TLS_AES_256_GCM_SHA384",
            "TLS_AES_256_GCM_SHA384",
            cs::TLS13_AES_256_GCM_SHA384,
        ),
        (
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_128_GCM_SHA256",
            cs::TLS13_AES_128_GCM_SHA256,
        ),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_CHACHA20_POLY1305_SHA256",
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-RSA-AES256-GCM-SHA384",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-RSA-AES128-GCM-SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-RSA-CHACHA20-POLY1305",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// The protocol versions ab's `-f` names, as far as rustls speaks them.
fn versions(protocol: Option<&str>) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let p = protocol.unwrap_or("ALL").trim();
    Ok(match p.to_ascii_uppercase().as_str() {
        "ALL" => vec![&rustls::version::TLS13, &rustls::version::TLS12],
        "TLS1.3" => vec![&rustls::version::TLS13],
        "TLS1.2" => vec![&rustls::version::TLS12],
        "SSL2" | "SSL3" | "TLS1" | "TLS1.0" | "TLS1.1" => {
            return Err(format!(
                "-f {p}: rustls speaks TLS 1.2 and TLS 1.3 only ({p} is deprecated, RFC 8996); use TLS1.2, TLS1.3 or ALL"
            ))
        }
        _ => {
            return Err(format!(
                "-f {p}: not a protocol; use TLS1.2, TLS1.3 or ALL"
            ))
        }
    })
}

/// The suites ab's `-Z` names, in its order.
fn cipher_suites(list: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let known = suites();
    let mut out = Vec::new();
    for name in list
        .split([':', ','])
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let found = known.iter().find(|(ossl, iana, s)| {
            name.eq_ignore_ascii_case(ossl)
                || name.eq_ignore_ascii_case(iana)
                || s.suite()
                    .as_str()
                    .is_some_and(|r| name.eq_ignore_ascii_case(r))
        });
        match found {
            Some((_, _, s)) => out.push(*s),
            None => {
                let names: Vec<&str> = known.iter().map(|(o, _, _)| *o).collect();
                return Err(format!(
                    "-Z {name}: not a cipher suite rustls offers; it offers {} (or their IANA names; OpenSSL cipher strings such as HIGH or !aNULL are not understood)",
                    names.join(", ")
                ));
            }
        }
    }
    if out.is_empty() {
        return Err("-Z: no cipher suite given".into());
    }
    Ok(out)
}

/// A session as ab prints it: the protocol `version`, the cipher `suite` (by OpenSSL's name)
/// and its key length, the key exchange's `group`, and the name sent by SNI.
fn describe(
    version: rustls::ProtocolVersion,
    suite: rustls::CipherSuite,
    group: Option<rustls::NamedGroup>,
    server_name: Option<&str>,
) -> TlsSession {
    let protocol = match version {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
        other => {
            return TlsSession {
                protocol: format!("{other:?}"),
                cipher: format!("{suite:?}"),
                ..TlsSession::default()
            }
        }
    };
    let cipher = suites()
        .iter()
        .find(|(_, _, s)| s.suite() == suite)
        .map_or_else(|| format!("{suite:?}"), |(ossl, _, _)| ossl.to_string());
    // The suite's name carries its key length: AES_128, AES_256, CHACHA20 (256).
    let cipher_bits = if cipher.contains("AES128") || cipher.contains("AES_128") {
        128
    } else {
        256
    };
    let key_exchange = group.map(|g| match g {
        rustls::NamedGroup::X25519 => ("X25519".to_string(), 253),
        rustls::NamedGroup::secp256r1 => ("ECDH P-256".to_string(), 256),
        rustls::NamedGroup::secp384r1 => ("ECDH P-384".to_string(), 384),
        rustls::NamedGroup::secp521r1 => ("ECDH P-521".to_string(), 521),
        other => (format!("{other:?}"), 0),
    });
    TlsSession {
        protocol: protocol.to_string(),
        cipher,
        cipher_bits,
        key_exchange,
        server_name: server_name.map(str::to_string),
    }
}

/// A client configuration on `provider` for `versions`, verifying against `roots` (nothing
/// verified without), resuming sessions when `resume` says so.
fn build(
    provider: Arc<CryptoProvider>,
    versions: &[&'static SupportedProtocolVersion],
    roots: Option<&RootCertStore>,
    resume: bool,
) -> Result<ClientConfig, String> {
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let mut config = match roots {
        Some(roots) => builder
            .with_root_certificates(roots.clone())
            .with_no_client_auth(),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
    };
    if !resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(config)
}

/// The CA certificates in `--verify`'s PEM file.
fn roots(path: &std::path::Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let pem = userfile::read(path)
        .map_err(|e| format!("--verify {}: cannot read the file: {e}", path.display()))?;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("--verify {}: {e}", path.display()))?;
        roots.add(cert).map_err(|e| {
            format!(
                "--verify {}: a certificate is not usable: {e}",
                path.display()
            )
        })?;
    }
    if roots.is_empty() {
        return Err(format!(
            "--verify {}: no PEM certificate in the file",
            path.display()
        ));
    }
    Ok(roots)
}

/// What every connection of a run shares: the client configuration and the server's name,
/// and what a configuration is made from (for QUIC's, made apart: [`Tls::for_quic`]).
pub struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    provider: Arc<CryptoProvider>,
    versions: Vec<&'static SupportedProtocolVersion>,
    /// `--verify`'s certificates; none: nothing is verified.
    roots: Option<RootCertStore>,
    resume: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("name", &self.name).finish()
    }
}

impl Tls {
    /// Builds the client configuration for `host` (a name or an address, as in the URL);
    /// every mistake in the options is an error saying which.
    pub fn new(host: &str, opts: &TlsOptions) -> Result<Tls, String> {
        let mut provider = provider::default_provider();
        if let Some(list) = &opts.ciphers {
            provider.cipher_suites = cipher_suites(list)?;
        }
        let mut versions = versions(opts.protocol.as_deref())?;
        // Offer a version only with a suite for it: `-Z` with TLS 1.2 suites alone means 1.2.
        versions.retain(|v| {
            provider
                .cipher_suites
                .iter()
                .any(|s| s.version().version == v.version)
        });
        if versions.is_empty() {
            return Err(
                "-Z and -f leave no protocol version with a cipher suite for it (TLS 1.3 suites are TLS_AES_*/TLS_CHACHA20_*, the others are TLS 1.2's)"
                    .into(),
            );
        }
        let roots = opts.verify.as_deref().map(roots).transpose()?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("{host:?} is not a name TLS can send: {e}"))?;
        let provider = Arc::new(provider);
        let config = build(provider.clone(), &versions, roots.as_ref(), opts.resume)?;
        Ok(Tls {
            config: Arc::new(config),
            name,
            provider,
            versions,
            roots,
            resume: opts.resume,
        })
    }

    /// Offers HTTP/2 by ALPN ("h2" alone): a server that does not select it is told apart
    /// after the handshake ([`TlsConn::alpn_h2`]).
    pub fn offer_h2(&mut self) {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        self.config = Arc::new(config);
    }

    /// The name sent by SNI: the host when it is a name, none for an address.
    pub fn sni(&self) -> Option<&str> {
        match &self.name {
            ServerName::DnsName(n) => Some(n.as_ref()),
            _ => None,
        }
    }

    /// A new connection's TLS state, before its handshake.
    pub fn connect(&self) -> io::Result<Box<TlsConn>> {
        let conn = ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| io::Error::other(HandshakeError(e.to_string())))?;
        Ok(Box::new(TlsConn {
            conn,
            eof_pending: false,
            last_stamp: None,
        }))
    }
}

/// Accepts any certificate, as ab does without verification; signatures are still checked,
/// so the handshake is the one a verifying client does, minus the chain and name checks.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// A failed TLS handshake (a certificate that did not verify, no common protocol or suite,
/// an alert from the server), carried inside the `io::Error` the engine gets, so that a run
/// whose every connection failed it says so rather than that the server refused them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeError(pub String);

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TLS handshake failed: {}", self.0)
    }
}

impl std::error::Error for HandshakeError {}

/// The `HandshakeError` inside `e`, if it carries one.
pub fn handshake_error(e: &io::Error) -> Option<&HandshakeError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<HandshakeError>())
}

/// Reads TLS records off the socket with the engine's stamped reads, keeping the newest stamp.
struct SocketReader<'fd> {
    fd: BorrowedFd<'fd>,
    stamped: bool,
    stamp: Option<Stamp>,
    /// A read returned less than it asked for: the socket is empty.
    emptied: bool,
}

impl Read for SocketReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match sock::recv(self.fd, buf, self.stamped) {
            Recv::Data { len, stamp } => {
                if stamp.is_some() {
                    self.stamp = stamp;
                }
                self.emptied = len < buf.len();
                Ok(len)
            }
            Recv::Eof => Ok(0),
            Recv::Again => Err(io::ErrorKind::WouldBlock.into()),
            Recv::Failed => Err(io::ErrorKind::ConnectionReset.into()),
        }
    }
}

/// Writes TLS records to the socket, as many queued records as there are in one `sendmsg`.
struct SocketWriter<'fd>(BorrowedFd<'fd>);

impl Write for SocketWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut control = SendAncillaryBuffer::default();
        loop {
            match rustix::net::sendmsg(self.0, bufs, &mut control, SendFlags::NOSIGNAL) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One connection's TLS state.
pub struct TlsConn {
    conn: ClientConnection,
    /// The end of the stream was seen while plaintext before it was returned: the next
    /// [`TlsConn::recv`] returns `Eof`.
    eof_pending: bool,
    /// The stamp of the newest record read from the socket: plaintext that an earlier
    /// [`TlsConn::recv`] decrypted but had no room for arrived by then.
    last_stamp: Option<Stamp>,
}

impl TlsConn {
    /// TLS records are waiting to be written to the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// The last [`TlsConn::recv`] returned data that the end of the stream followed: the
    /// server has closed, and the next [`TlsConn::recv`] returns `Eof` (the socket's own
    /// end-of-stream event may already have been spent on that data).
    pub fn eof_pending(&self) -> bool {
        self.eof_pending
    }

    /// The server selected HTTP/2 by ALPN in the handshake.
    pub fn alpn_h2(&self) -> bool {
        self.conn.alpn_protocol() == Some(b"h2")
    }

    /// What the handshake settled on, as ab prints it; `None` before it is complete.
    /// `server_name` is the name sent by SNI (none for an address).
    pub fn session(&self, server_name: Option<&str>) -> Option<TlsSession> {
        if self.conn.is_handshaking() {
            return None;
        }
        let suite = self.conn.negotiated_cipher_suite()?;
        Some(describe(
            self.conn.protocol_version()?,
            suite.suite(),
            self.conn.negotiated_key_exchange_group().map(|g| g.name()),
            server_name,
        ))
    }

    /// Writes pending records to the socket, all of them or until it would block.
    fn flush(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut SocketWriter(fd))?;
        }
        Ok(())
    }

    /// Takes the connection's handshake as far as the socket allows, then `data` (plaintext),
    /// and writes the records out. Returns how much of `data` was taken, which is `Ok` only
    /// once the handshake is complete: the engine's first successful write is then the end of
    /// the handshake, so it counts in Connect as ab counts it. `WouldBlock` while the
    /// handshake waits for the server or the socket; an empty `data` only writes what is
    /// pending (call again while [`TlsConn::wants_write`]).
    pub fn send(&mut self, fd: BorrowedFd<'_>, data: &[u8]) -> io::Result<usize> {
        while self.conn.is_handshaking() {
            self.flush(fd)?;
            let mut rd = SocketReader {
                fd,
                stamped: false,
                stamp: None,
                emptied: false,
            };
            match self.conn.read_tls(&mut rd)? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        HandshakeError("the server closed the connection".into()),
                    ))
                }
                _ => {
                    if let Err(e) = self.conn.process_new_packets() {
                        // Send the alert that says why, then give up.
                        let _ = self.flush(fd);
                        return Err(io::Error::other(HandshakeError(e.to_string())));
                    }
                }
            }
        }
        // The handshake's last flight, still queued, leaves in the same write as the request:
        // a second small write would wait for the first one's ACK (Nagle).
        let n = if data.is_empty() {
            0
        } else {
            self.conn.writer().write(data)?
        };
        match self.flush(fd) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && n > 0 => Ok(n),
            r => r.map(|()| n),
        }
    }

    /// The handshake is still under way.
    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// The session for an engine that writes the records itself (io_uring), which writes
    /// every record out before it queues more: what it queues is taken whole, with no limit.
    pub fn unbounded(mut self) -> TlsConn {
        self.conn.set_buffer_limit(None);
        self
    }

    /// Queues `data` (plaintext) to be sent, whole (on a session made [`TlsConn::unbounded`]):
    /// its records are ready for [`TlsConn::take_records`] at once, or, while the handshake
    /// is under way, as soon as it completes (with the handshake's last flight).
    /// [`TlsConn::send`] is the socket-writing way.
    pub fn queue_plaintext(&mut self, data: &[u8]) -> io::Result<()> {
        self.conn.writer().write_all(data)
    }

    /// Appends the records waiting to be written to `out`.
    pub fn take_records(&mut self, out: &mut Vec<u8>) {
        while self.conn.wants_write() {
            // Writing into a `Vec` cannot fail.
            if self.conn.write_tls(out).is_err() {
                break;
            }
        }
    }

    /// Takes records that came from the socket, read by the engine itself (io_uring's
    /// receive buffers), and appends the plaintext they carry to `plain`. `Ok(true)`: the
    /// server ended the stream (its close_notify). An error says the records do not decrypt,
    /// or, while handshaking, why the handshake failed (a [`HandshakeError`]).
    pub fn absorb(&mut self, mut records: &[u8], plain: &mut Vec<u8>) -> io::Result<bool> {
        let mut eof = false;
        while !records.is_empty() {
            if self.conn.read_tls(&mut records)? == 0 {
                break;
            }
            let handshaking = self.conn.is_handshaking();
            if let Err(e) = self.conn.process_new_packets() {
                return Err(if handshaking {
                    io::Error::other(HandshakeError(e.to_string()))
                } else {
                    io::Error::new(io::ErrorKind::InvalidData, e)
                });
            }
            match self.conn.reader().read_to_end(plain) {
                // The session ended (close_notify): nothing may follow.
                Ok(_) => eof = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(eof)
    }

    /// Reads plaintext into `buf` as [`sock::recv`] reads a plain socket: `Data` with the
    /// stamp of the newest record read from the socket (by an earlier call, for plaintext
    /// left from its records), `Again` when the socket is empty and
    /// no plaintext is left, `Eof` at the end of the stream (with or without the server's
    /// close_notify), `Failed` on a reset or a record that does not decrypt. A `Data` shorter
    /// than `buf` means the socket was emptied, as for a plain read.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, buf: &mut [u8], stamped: bool) -> Recv {
        let mut filled = 0;
        let mut stamp = None;
        let mut read_socket = false;
        let mut eof = false;
        // The last read from the socket emptied it: once the plaintext is taken, asking
        // again would only be told so (a system call per response for nothing).
        let mut emptied = false;
        while filled < buf.len() {
            match self.conn.reader().read(&mut buf[filled..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    filled += n;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    eof = true;
                    break;
                }
                Err(_) => return failed(filled, stamp),
            }
            if emptied {
                break;
            }
            // No plaintext left: more records from the socket.
            let mut rd = SocketReader {
                fd,
                stamped,
                stamp: None,
                emptied: false,
            };
            match self.conn.read_tls(&mut rd) {
                Ok(_) => {
                    emptied = rd.emptied;
                    read_socket = true;
                    self.last_stamp = rd.stamp;
                    if rd.stamp.is_some() {
                        stamp = rd.stamp;
                    }
                    if self.conn.process_new_packets().is_err() {
                        return failed(filled, stamp);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return failed(filled, stamp),
            }
        }
        if !read_socket {
            // Plaintext left from records read before: they arrived by the newest of them.
            stamp = self.last_stamp;
        }
        if filled > 0 {
            self.eof_pending = eof;
            Recv::Data { len: filled, stamp }
        } else if eof {
            Recv::Eof
        } else {
            Recv::Again
        }
    }
}

/// A read that failed after `filled` bytes: those are returned first, the failure on the
/// next read.
fn failed(filled: usize, stamp: Option<Stamp>) -> Recv {
    if filled > 0 {
        Recv::Data { len: filled, stamp }
    } else {
        Recv::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_and_suites_map_to_what_rustls_speaks() {
        let names = |p: Option<&str>| -> Vec<rustls::ProtocolVersion> {
            versions(p).unwrap().iter().map(|v| v.version).collect()
        };
        assert_eq!(
            names(None),
            [
                rustls::ProtocolVersion::TLSv1_3,
                rustls::ProtocolVersion::TLSv1_2
            ]
        );
        assert_eq!(names(Some("tls1.2")), [rustls::ProtocolVersion::TLSv1_2]);
        assert_eq!(names(Some("TLS1.3")), [rustls::ProtocolVersion::TLSv1_3]);
        let e = versions(Some("TLS1.1")).unwrap_err();
        assert!(e.contains("TLS 1.2 and TLS 1.3 only"), "{e}");
        assert!(versions(Some("QUIC"))
            .unwrap_err()
            .contains("not a protocol"));
        let s = cipher_suites("ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_256_GCM_SHA384").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].suite(),
            rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        );
        let e = cipher_suites("AES128-SHA").unwrap_err();
        assert!(e.contains("-Z AES128-SHA: not a cipher suite"), "{e}");
        // TLS 1.3 asked for, with TLS 1.2 suites alone: nothing left to speak.
        let e = Tls::new(
            "localhost",
            &TlsOptions {
                protocol: Some("TLS1.3".into()),
                ciphers: Some("ECDHE-RSA-AES128-GCM-SHA256".into()),
                ..TlsOptions::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("no protocol version"), "{e}");
        assert!(Tls::new("127.0.0.1", &TlsOptions::default()).is_ok());
        let e = Tls::new(
            "localhost",
            &TlsOptions {
                verify: Some("/nonexistent/ca.pem".into()),
                ..TlsOptions::default()
            },
        )
        .unwrap_err();
        assert!(e.starts_with("--verify /nonexistent/ca.pem"), "{e}");
    }
}
