//! What every HTTP/3 connection of a run is made from: the QUIC client configuration (TLS 1.3
//! by rustls, the transport's limits) and the request's bytes, encoded once.
//!
//! QUIC itself is quinn-proto's: a state machine with no I/O and no clock of its own, which
//! the generator's workers drive from their own loops (see `engine::h3`). HTTP/3's framing and
//! QPACK are the `h3wire` crate's.
//!
//! Limits a server cannot raise: a response head (field section) of at most
//! [`MAX_FIELD_SECTION`] bytes, each name or value at most [`MAX_FIELD`]; no stream the server
//! opens towards the client beyond its control and QPACK streams (and a few it may add for
//! extensions, which are read and dropped): [`MAX_SERVER_UNI_STREAMS`] at once.

use crate::config::LoadConfig;
use crate::tls::Negotiated;
use quinn_proto::{ClientConfig, EndpointConfig, QlogConfig, TransportConfig, VarInt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest response head the client accepts (its SETTINGS_MAX_FIELD_SECTION_SIZE).
pub const MAX_FIELD_SECTION: u64 = 64 << 10;
/// The largest name or value in a response head.
pub const MAX_FIELD: usize = 16 << 10;
/// Unidirectional streams the server may have open towards the client at once: its control
/// stream, QPACK's two, and room for the ones an extension or grease adds.
pub const MAX_SERVER_UNI_STREAMS: u32 = 16;
/// What one stream may have unread, and so what a response sends per round trip before the
/// client reads: large enough that no body waits for the client on a fast link.
const STREAM_WINDOW: u32 = 16 << 20;

/// The run's QUIC client configuration and request.
#[derive(Debug, Clone)]
pub struct Setup {
    pub endpoint: Arc<EndpointConfig>,
    pub client: ClientConfig,
    /// The name the handshake checks the certificate against and sends by SNI.
    pub server_name: String,
    /// The request: its HEADERS frame, and with a body its DATA frame.
    pub request: Box<[u8]>,
    /// The per-request timeout, which sets the idle timeout.
    timeout: Duration,
    /// `--qlog DIR`, and how many connections of the run have taken a trace file there.
    qlog: Option<PathBuf>,
    qlogs: Arc<AtomicU32>,
    /// What the handshakes settled on (ab's TLS lines).
    pub negotiated: Arc<Negotiated>,
    /// `--0rtt`: a new connection that resumes a session sends its requests in 0-RTT.
    pub zero_rtt: bool,
}

/// The connections of a run that `--qlog` traces at most: the first ones, each into a file of
/// its own (a trace costs a write per packet, and a load of a handshake per request would
/// otherwise leave one per request).
pub const QLOG_CONNECTIONS: u32 = 8;

/// The transport every connection of a run has: the client opens no bidirectional streams
/// the server could, accepts the server's control and QPACK streams, lets each response send
/// [`STREAM_WINDOW`] before reading, and gives up a connection idle longer than `timeout`.
fn transport(timeout: Duration) -> TransportConfig {
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(0))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_SERVER_UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        // Many small streams: no point sharing the send path fairly between them.
        .send_fairness(false)
        // A connection idle longer than a request may take is over; never shorter than the
        // time a slow handshake may need.
        .max_idle_timeout(Some(
            VarInt::from_u64(
                timeout
                    .max(Duration::from_secs(5))
                    .as_millis()
                    .min(u128::from(u32::MAX)) as u64,
            )
            .expect("a u32 fits a varint")
            .into(),
        ));
    transport
}

impl Setup {
    /// The setup of a run of `cfg` over `tls` (its options and certificate checks); an error
    /// says which option QUIC cannot work with.
    pub fn new(cfg: &LoadConfig, tls: &crate::tls::Tls) -> Result<Setup, String> {
        let (crypto, negotiated) = tls.for_quic(cfg.tls.zero_rtt)?;
        let timeout = cfg.load.timeout;
        if let Some(dir) = &cfg.qlog {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--qlog {}: cannot make the folder: {e}", dir.display()))?;
        }
        let mut client = ClientConfig::new(Arc::new(crypto));
        client.transport_config(Arc::new(transport(timeout)));
        Ok(Setup {
            endpoint: Arc::new(EndpointConfig::default()),
            client,
            timeout,
            qlog: cfg.qlog.clone(),
            qlogs: Arc::new(AtomicU32::new(0)),
            negotiated,
            zero_rtt: cfg.tls.zero_rtt,
            server_name: cfg.target.host.clone(),
            request: request(cfg).into_boxed_slice(),
        })
    }
}

impl Setup {
    /// The client configuration for a new connection: the run's, or with `--qlog` for one of
    /// its first [`QLOG_CONNECTIONS`] connections the same with a trace into a file of its
    /// own, `DIR/benchctl-PID-N.sqlog`, whose events are timed from `start`; `Err` when that
    /// file cannot be made.
    pub fn client_for_connection(&self, start: Instant) -> Result<ClientConfig, String> {
        let Some(dir) = &self.qlog else {
            return Ok(self.client.clone());
        };
        let n = self.qlogs.fetch_add(1, Relaxed);
        if n >= QLOG_CONNECTIONS {
            return Ok(self.client.clone());
        }
        let path = dir.join(format!("benchctl-{}-{n}.sqlog", std::process::id()));
        let file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) => return Err(format!("--qlog: cannot create {}: {e}", path.display())),
        };
        let mut qlog = QlogConfig::default();
        qlog.writer(Box::new(std::io::BufWriter::new(file)))
            .title(Some(format!("benchctl connection {n}")))
            .start_time(start);
        let mut transport = transport(self.timeout);
        transport.qlog_stream(qlog.into_stream());
        let mut client = self.client.clone();
        client.transport_config(Arc::new(transport));
        Ok(client)
    }
}

/// The request's bytes on its stream: a HEADERS frame with the fields HTTP/2 sends (QPACK
/// without a dynamic table), then with a body its DATA frame.
pub fn request(cfg: &LoadConfig) -> Vec<u8> {
    let fields = crate::h2::request_fields(cfg);
    let refs: Vec<(&[u8], &[u8])> = fields
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let (mut block, mut out) = (Vec::new(), Vec::new());
    h3wire::qpack::encode(&refs, &mut block);
    h3wire::frame::put_headers(&block, &mut out);
    if let Some(body) = cfg.body.as_deref().filter(|b| !b.is_empty()) {
        h3wire::frame::put_header(h3wire::frame::kind::DATA, body.len() as u64, &mut out);
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3wire::frame::{FrameReader, Piece};

    fn config(url: &str) -> LoadConfig {
        LoadConfig::new(
            crate::Target::parse(url).unwrap(),
            crate::LoadSpec::default(),
        )
    }

    #[test]
    fn the_request_is_a_headers_frame_then_its_body_in_one_data_frame() {
        let mut cfg = config("https://example.test:8443/a?b");
        cfg.load.method = crate::Method::Post;
        cfg.body = Some(b"hello".to_vec());
        let bytes = request(&cfg);
        let mut input = bytes.as_slice();
        let mut frames = FrameReader::new(MAX_FIELD_SECTION);
        let mut fields = Vec::new();
        let Some(Piece::Headers(block)) = frames.next(&mut input).unwrap() else {
            panic!("HEADERS first");
        };
        h3wire::qpack::decode(&block, MAX_FIELD, |k, v| {
            fields.push(format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ))
        })
        .unwrap();
        assert_eq!(
            &fields[..4],
            [
                ":method=POST",
                ":scheme=https",
                ":authority=example.test:8443",
                ":path=/a?b"
            ]
        );
        assert!(
            fields.contains(&"content-length=5".to_string()),
            "{fields:?}"
        );
        let Some(Piece::Data(body)) = frames.next(&mut input).unwrap() else {
            panic!("then DATA");
        };
        assert_eq!(body, b"hello");
        assert!(input.is_empty() && frames.at_boundary());
    }

    #[test]
    fn quic_needs_a_tls_13_suite_to_offer() {
        let mut cfg = config("https://127.0.0.1:8443/");
        let setup = |cfg: &LoadConfig| {
            let tls = crate::tls::Tls::new("127.0.0.1", &cfg.tls).unwrap();
            Setup::new(cfg, &tls)
        };
        cfg.tls.ciphers = Some("ECDHE-RSA-AES128-GCM-SHA256".into());
        let e = setup(&cfg).unwrap_err();
        assert!(e.contains("TLS 1.3 only"), "{e}");
        cfg.tls.ciphers = Some("TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256".into());
        cfg.tls.protocol = Some("TLS1.2".into());
        let e = setup(&cfg).unwrap_err();
        assert!(e.contains("TLS 1.3 only"), "{e}");
        cfg.tls.protocol = None;
        assert!(setup(&cfg).is_ok());
        // QUIC's Initial packets have a suite of their own: an offer without it is fine.
        cfg.tls.ciphers = Some("TLS_CHACHA20_POLY1305_SHA256".into());
        assert!(setup(&cfg).is_ok());
        cfg.tls.ciphers = None;
        assert!(setup(&cfg).is_ok());
    }
}
