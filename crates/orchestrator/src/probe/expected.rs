//! What a server must serve, how it is reached, and what verifying it learned.

use crate::error::{OrchestratorError, Result};
use std::time::Duration;

/// A document the server must serve exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedDoc {
    /// Path and query, starting with '/'.
    pub url_path: String,
    /// Body length in bytes.
    pub length: u64,
    /// SHA-256 of the body, lowercase hex.
    pub sha256_hex: String,
}

/// What verification learned about the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verified {
    /// The `Server` response header, if the server sends one.
    pub server_header: Option<String>,
    /// The `Via` response header: a caching proxy (Varnish) names itself and its version there,
    /// while passing its backend's Server header on.
    pub via: Option<String>,
}

/// How a server is reached: plain HTTP, or HTTPS trusting only the run's own certificate (so
/// verification also proves the server presents the certificate it was given); in HTTP/1.x,
/// or with `http2` in HTTP/2 (by ALPN over TLS, by prior knowledge in cleartext, h2c), which
/// every response must then be in; or HTTP/3 over QUIC, on UDP at the server's port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    Http {
        /// HTTP/2 by prior knowledge (h2c).
        http2: bool,
    },
    Https {
        /// The run's certificate, PEM: the one root the client trusts.
        cert_pem: Vec<u8>,
        /// HTTP/2 by ALPN (h2); HTTP/1.1 is offered beside it, so a server that picks it is
        /// told apart from one that does not answer.
        http2: bool,
    },
    /// HTTP/3 over QUIC v1 (ALPN h3, TLS 1.3) on UDP at the server's address and port number,
    /// trusting only the run's certificate.
    H3 {
        /// The run's certificate, PEM.
        cert_pem: Vec<u8>,
    },
}

impl Default for Scheme {
    fn default() -> Scheme {
        Scheme::HTTP
    }
}

impl Scheme {
    /// Plain HTTP/1.x.
    pub const HTTP: Scheme = Scheme::Http { http2: false };

    /// `"http"` or `"https"`.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Http { .. } => "http",
            Scheme::Https { .. } | Scheme::H3 { .. } => "https",
        }
    }

    /// Whether every response must be HTTP/2.
    pub fn http2(&self) -> bool {
        match self {
            Scheme::Http { http2 } | Scheme::Https { http2, .. } => *http2,
            Scheme::H3 { .. } => false,
        }
    }

    /// Whether the server is reached over QUIC (and so also listens on UDP).
    pub fn http3(&self) -> bool {
        matches!(self, Scheme::H3 { .. })
    }

    /// The run's certificate, over TLS or QUIC.
    pub fn cert_pem(&self) -> Option<&[u8]> {
        match self {
            Scheme::Http { .. } => None,
            Scheme::Https { cert_pem, .. } | Scheme::H3 { cert_pem } => Some(cert_pem.as_slice()),
        }
    }

    /// The protocol asked for, for messages (`"HTTP/2 by ALPN (h2)"`, ...).
    pub fn protocol(&self) -> &'static str {
        match self {
            Scheme::Http { http2: false } => "HTTP/1.x",
            Scheme::Https { http2: false, .. } => "HTTP/1.x over TLS",
            Scheme::Http { http2: true } => "HTTP/2 by prior knowledge (h2c)",
            Scheme::Https { http2: true, .. } => "HTTP/2 by ALPN (h2)",
            Scheme::H3 { .. } => "HTTP/3 over QUIC (h3)",
        }
    }

    /// An HTTP client for it over TCP: never through a proxy, nothing kept between requests,
    /// over TLS trusting the run's certificate alone; HTTP/1.x only unless HTTP/2 is asked
    /// for. HTTP/3 has a client of its own (`super::h3`).
    pub(super) fn client(&self, timeout: Duration) -> Result<reqwest::Client> {
        if self.http3() {
            return Err(OrchestratorError::Invalid(
                "HTTP/3 is not spoken over TCP: its client is the QUIC one".to_string(),
            ));
        }
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .timeout(timeout);
        b = match self {
            Scheme::Http { http2: true } => b.http2_prior_knowledge(),
            // Over TLS ALPN offers h2 and http/1.1, and the response says which was chosen.
            Scheme::Https { http2: true, .. } => b,
            _ => b.http1_only(),
        };
        if let Some(cert_pem) = self.cert_pem() {
            let cert = reqwest::Certificate::from_pem(cert_pem).map_err(|e| {
                OrchestratorError::Invalid(format!("the run's certificate is not PEM: {e}"))
            })?;
            b = b
                .use_rustls_tls()
                .tls_built_in_root_certs(false)
                .add_root_certificate(cert)
                .https_only(true);
        }
        b.build()
            .map_err(|e| OrchestratorError::Invalid(format!("cannot make an HTTP client: {e}")))
    }
}
