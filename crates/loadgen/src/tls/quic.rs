//! TLS for QUIC connections, and what their handshakes settled on.
//!
//! quinn-proto drives rustls's QUIC session itself and says nothing of the cipher suite or
//! the key exchange group a handshake settled on, which ab's TLS lines need. The client
//! learns them from its own offer: each suite it offers makes its QUIC packet keys through a
//! wrapper that notes the suite (a suite's keys are made only once the handshake has chosen
//! it, for the handshake, 0-RTT and 1-RTT packets; the Initial packets' keys come from a
//! suite of their own, outside the offer), and each key exchange it starts notes its group
//! when it completes (only the group the server chose completes). The wrappers hand every
//! call on to rustls's own: the handshake is the same one.
//!
//! rustls takes suites and groups as `&'static`: each QUIC configuration leaks its few
//! wrappers (under a kilobyte, once per HTTP/3 run).

use super::{describe, Tls};
use crate::stats::TlsSession;
use quinn_proto::crypto::rustls::QuicClientConfig;
use rustls::crypto::cipher::{AeadKey, Iv};
use rustls::crypto::{
    ActiveKeyExchange, CompletedKeyExchange, CryptoProvider, SharedSecret, SupportedKxGroup,
};
use rustls::ffdhe_groups::FfdheGroup;
use rustls::{
    quic, CipherSuite, CipherSuiteCommon, NamedGroup, ProtocolVersion, SupportedCipherSuite,
    SupportedProtocolVersion, Tls13CipherSuite,
};
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};
use std::sync::Arc;

/// The cipher suite and key exchange group QUIC handshakes of a run settled on, as the
/// wrappers noted them (the latest handshake's, 0 before any).
#[derive(Debug, Default)]
pub struct Negotiated {
    suite: AtomicU16,
    group: AtomicU16,
}

impl Negotiated {
    /// The session as ab prints it, once a handshake has chosen a suite; `server_name` is the
    /// name sent by SNI.
    pub fn session(&self, server_name: Option<&str>) -> Option<TlsSession> {
        let suite = self.suite.load(Relaxed);
        if suite == 0 {
            return None;
        }
        let group = self.group.load(Relaxed);
        Some(describe(
            ProtocolVersion::TLSv1_3,
            CipherSuite::from(suite),
            (group != 0).then(|| NamedGroup::from(group)),
            server_name,
        ))
    }
}

impl Tls {
    /// The configuration QUIC connections' handshakes run on: this run's options, TLS 1.3
    /// only, HTTP/3 offered by ALPN ("h3" alone), requests allowed in 0-RTT when
    /// `early_data` says so; with what its handshakes settle on. An error says which option
    /// leaves QUIC nothing to offer.
    pub fn for_quic(
        &self,
        early_data: bool,
    ) -> Result<(QuicClientConfig, Arc<Negotiated>), String> {
        let no_tls13 =
            || "QUIC carries TLS 1.3 only: -f and -Z leave it no TLS 1.3 cipher suite".to_string();
        let tls13: &[&'static SupportedProtocolVersion] = &[&rustls::version::TLS13];
        if !self.versions.contains(&tls13[0]) {
            return Err(no_tls13());
        }
        let seen = Arc::new(Negotiated::default());
        let mut provider = CryptoProvider::clone(&self.provider);
        provider.cipher_suites = provider
            .cipher_suites
            .iter()
            .filter_map(|s| match s {
                SupportedCipherSuite::Tls13(t) => t.quic.map(|q| noting_suite(t, q, &seen)),
                SupportedCipherSuite::Tls12(_) => None,
            })
            .collect();
        if provider.cipher_suites.is_empty() {
            return Err(no_tls13());
        }
        provider.kx_groups = provider
            .kx_groups
            .iter()
            .map(|&g| -> &'static dyn SupportedKxGroup {
                Box::leak(Box::new(NotingGroup {
                    inner: g,
                    seen: seen.clone(),
                }))
            })
            .collect();
        let mut config = super::build(
            Arc::new(provider),
            tls13,
            self.roots.as_ref(),
            self.resume || early_data,
        )?;
        config.alpn_protocols = vec![b"h3".to_vec()];
        config.enable_early_data = early_data;
        // QUIC's Initial packets are protected with this suite whatever the offer (RFC 9001,
        // section 5.2): rustls's own, so that it notes nothing.
        let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
            .tls13()
            .and_then(Tls13CipherSuite::quic_suite)
            .expect("ring's TLS_AES_128_GCM_SHA256 serves QUIC");
        let quic = QuicClientConfig::with_initial(Arc::new(config), initial)
            .map_err(|e| format!("cannot set up QUIC's TLS: {e}"))?;
        Ok((quic, seen))
    }
}

/// `suite` with its QUIC packet keys made by a wrapper of `quic` that notes it in `seen`.
fn noting_suite(
    suite: &'static Tls13CipherSuite,
    quic: &'static dyn quic::Algorithm,
    seen: &Arc<Negotiated>,
) -> SupportedCipherSuite {
    let noting: &'static dyn quic::Algorithm = Box::leak(Box::new(NotingAlgorithm {
        inner: quic,
        suite: suite.common.suite,
        seen: seen.clone(),
    }));
    SupportedCipherSuite::Tls13(Box::leak(Box::new(Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: suite.common.suite,
            hash_provider: suite.common.hash_provider,
            confidentiality_limit: suite.common.confidentiality_limit,
        },
        hkdf_provider: suite.hkdf_provider,
        aead_alg: suite.aead_alg,
        quic: Some(noting),
    })))
}

struct NotingAlgorithm {
    inner: &'static dyn quic::Algorithm,
    suite: CipherSuite,
    seen: Arc<Negotiated>,
}

impl quic::Algorithm for NotingAlgorithm {
    fn packet_key(&self, key: AeadKey, iv: Iv) -> Box<dyn quic::PacketKey> {
        self.seen.suite.store(u16::from(self.suite), Relaxed);
        self.inner.packet_key(key, iv)
    }

    fn header_protection_key(&self, key: AeadKey) -> Box<dyn quic::HeaderProtectionKey> {
        self.inner.header_protection_key(key)
    }

    fn aead_key_len(&self) -> usize {
        self.inner.aead_key_len()
    }

    fn fips(&self) -> bool {
        self.inner.fips()
    }
}

#[derive(Debug)]
struct NotingGroup {
    inner: &'static dyn SupportedKxGroup,
    seen: Arc<Negotiated>,
}

impl SupportedKxGroup for NotingGroup {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        Ok(Box::new(NotingExchange {
            inner: self.inner.start()?,
            seen: self.seen.clone(),
        }))
    }

    fn start_and_complete(&self, peer: &[u8]) -> Result<CompletedKeyExchange, rustls::Error> {
        self.seen.group.store(u16::from(self.inner.name()), Relaxed);
        self.inner.start_and_complete(peer)
    }

    fn ffdhe_group(&self) -> Option<FfdheGroup<'static>> {
        self.inner.ffdhe_group()
    }

    fn name(&self) -> NamedGroup {
        self.inner.name()
    }

    fn fips(&self) -> bool {
        self.inner.fips()
    }

    fn usable_for_version(&self, version: ProtocolVersion) -> bool {
        self.inner.usable_for_version(version)
    }
}

struct NotingExchange {
    inner: Box<dyn ActiveKeyExchange>,
    seen: Arc<Negotiated>,
}

impl NotingExchange {
    fn note(&self, group: NamedGroup) {
        self.seen.group.store(u16::from(group), Relaxed);
    }
}

impl ActiveKeyExchange for NotingExchange {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, rustls::Error> {
        self.note(self.inner.group());
        self.inner.complete(peer)
    }

    fn complete_for_tls_version(
        self: Box<Self>,
        peer: &[u8],
        version: &SupportedProtocolVersion,
    ) -> Result<SharedSecret, rustls::Error> {
        self.note(self.inner.group());
        self.inner.complete_for_tls_version(peer, version)
    }

    fn hybrid_component(&self) -> Option<(NamedGroup, &[u8])> {
        self.inner.hybrid_component()
    }

    fn complete_hybrid_component(
        self: Box<Self>,
        peer: &[u8],
    ) -> Result<SharedSecret, rustls::Error> {
        if let Some((group, _)) = self.inner.hybrid_component() {
            self.note(group);
        }
        self.inner.complete_hybrid_component(peer)
    }

    fn pub_key(&self) -> &[u8] {
        self.inner.pub_key()
    }

    fn ffdhe_group(&self) -> Option<FfdheGroup<'static>> {
        self.inner.ffdhe_group()
    }

    fn group(&self) -> NamedGroup {
        self.inner.group()
    }
}
