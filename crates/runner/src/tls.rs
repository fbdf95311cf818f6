//! The run's certificate, for scenarios with `tls = true`: a certificate authority made for the
//! run alone and a server certificate it signs for `localhost`, `127.0.0.1` and `::1`, and the
//! address of every other machine the run's servers listen on. The
//! authority's key is ECDSA P-256; the server's is ECDSA P-256 or, with `tls_key = "rsa-2048"`,
//! RSA 2048, both signing with SHA-256 (the server's key is the one every full handshake
//! uses). Servers get the certificate and key read-only; the client that checks them trusts
//! that authority and nothing else, so a server presenting any other certificate fails
//! verification. The key never leaves the run's private folder.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use scenario::TlsKey;

/// What a TLS run hands to its servers and to the client that checks them.
#[derive(Debug, Clone)]
pub struct RunCertificate {
    /// Holds `cert.pem` (the server certificate) and `key.pem` (its key), mounted into each
    /// server's container.
    pub dir: PathBuf,
    /// The run's certificate authority, PEM: the one root a client of the run trusts.
    pub ca_pem: Vec<u8>,
}

/// The names the server certificate is valid for on this machine; a run adds the addresses of
/// its hosts.
pub const NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl RunCertificate {
    /// Makes the authority and the server certificate, valid for [`NAMES`] and `addresses`
    /// (the hosts' servers listen there), and writes them into `dir`, a new folder. The folder
    /// and files are readable by every user (a server runs as its own non-root user inside its
    /// container), so `dir` must lie inside the run's private folder.
    pub fn create(
        dir: &Path,
        key_type: TlsKey,
        addresses: &[std::net::IpAddr],
    ) -> io::Result<RunCertificate> {
        let err = |what: &str, e: rcgen::Error| {
            io::Error::other(format!("cannot make the run's {what}: {e}"))
        };
        let ca_key = KeyPair::generate().map_err(|e| err("authority key", e))?;
        let mut ca =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| err("authority", e))?;
        ca.distinguished_name
            .push(DnType::CommonName, "benchctl run authority");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca, ca_key).map_err(|e| err("authority", e))?;

        let key = server_key(key_type)?;
        let mut names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        for a in addresses {
            let a = a.to_string();
            if !names.contains(&a) {
                names.push(a);
            }
        }
        let mut leaf = CertificateParams::new(names).map_err(|e| err("server certificate", e))?;
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        let cert = leaf
            .signed_by(&key, &ca)
            .map_err(|e| err("server certificate", e))?;

        fs::DirBuilder::new().mode(0o755).create(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
        write_new(&dir.join("cert.pem"), cert.pem().as_bytes())?;
        write_new(&dir.join("key.pem"), key.serialize_pem().as_bytes())?;
        Ok(RunCertificate {
            dir: dir.to_path_buf(),
            ca_pem: ca.pem().into_bytes(),
        })
    }
}

/// The server certificate's key. ring signs with RSA keys but cannot make them, so an RSA key
/// is made by the `rsa` crate from the operating system's random source and handed over as
/// PKCS #8.
fn server_key(key_type: TlsKey) -> io::Result<KeyPair> {
    let made = match key_type {
        TlsKey::EcdsaP256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        TlsKey::Rsa2048 => {
            use rsa::pkcs8::EncodePrivateKey;
            let rsa_key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048)
                .map_err(|e| io::Error::other(format!("cannot make the run's RSA key: {e}")))?;
            let der = rsa_key
                .to_pkcs8_der()
                .map_err(|e| io::Error::other(format!("cannot encode the run's RSA key: {e}")))?;
            KeyPair::from_pkcs8_der_and_sign_algo(&der.as_bytes().into(), &rcgen::PKCS_RSA_SHA256)
        }
    };
    made.map_err(|e| io::Error::other(format!("cannot make the run's server key: {e}")))
}

/// Writes a new file readable by all (never through a link left in its place).
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_names_every_address_and_is_readable_by_servers() {
        let tmp = tempfile::tempdir().unwrap();
        let c = RunCertificate::create(&tmp.path().join("tls"), TlsKey::EcdsaP256, &[]).unwrap();
        let cert = fs::read_to_string(c.dir.join("cert.pem")).unwrap();
        let key = fs::read_to_string(c.dir.join("key.pem")).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
        assert!(String::from_utf8(c.ca_pem.clone())
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----"));
        assert_ne!(
            c.ca_pem,
            cert.as_bytes(),
            "the server's is not the authority's"
        );
        for f in ["cert.pem", "key.pem"] {
            let mode = fs::metadata(c.dir.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "{f}");
        }
        // Made once: a second run's certificate is never written over this one.
        assert!(RunCertificate::create(&c.dir, TlsKey::EcdsaP256, &[]).is_err());
    }

    #[test]
    fn an_rsa_certificate_has_a_2048_bit_key_and_the_ecdsa_one_a_p256_key() {
        use rsa::pkcs8::DecodePrivateKey;
        use rsa::traits::PublicKeyParts;
        let tmp = tempfile::tempdir().unwrap();
        let rsa_cert =
            RunCertificate::create(&tmp.path().join("rsa"), TlsKey::Rsa2048, &[]).unwrap();
        let pem = fs::read_to_string(rsa_cert.dir.join("key.pem")).unwrap();
        let key = rsa::PrivateKey::from_pkcs8_pem(&pem).unwrap();
        assert_eq!(key.n().bit_width(), 2048);
        let leaf = KeyPair::from_pem(&pem).unwrap();
        assert!(leaf.is_compatible(&rcgen::PKCS_RSA_SHA256));
        chain_holds(&rsa_cert);

        let ec = RunCertificate::create(&tmp.path().join("ec"), TlsKey::EcdsaP256, &[]).unwrap();
        let pem = fs::read_to_string(ec.dir.join("key.pem")).unwrap();
        assert!(rsa::PrivateKey::from_pkcs8_pem(&pem).is_err());
        let leaf = KeyPair::from_pem(&pem).unwrap();
        assert!(leaf.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256));
        chain_holds(&ec);
    }

    #[test]
    fn the_hosts_addresses_are_names_of_the_certificate_too() {
        let tmp = tempfile::tempdir().unwrap();
        let hosts: Vec<std::net::IpAddr> =
            vec!["10.213.7.10".parse().unwrap(), "fd00::5".parse().unwrap()];
        let c = RunCertificate::create(&tmp.path().join("tls"), TlsKey::EcdsaP256, &hosts).unwrap();
        chain_holds(&c);
        for a in &hosts {
            valid_for(&c, &a.to_string()).unwrap_or_else(|e| panic!("{a}: {e}"));
        }
        assert!(
            valid_for(&c, "10.213.7.11").is_err(),
            "only the hosts' addresses"
        );
    }

    /// Whether the server certificate is signed by the run's authority and valid now for
    /// `name`, as a client trusting that authority alone checks it.
    fn valid_for(c: &RunCertificate, name: &str) -> Result<(), rustls::Error> {
        use rustls::client::danger::ServerCertVerifier;
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(&c.ca_pem).unwrap())
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .unwrap();
        let leaf = CertificateDer::from_pem_file(c.dir.join("cert.pem")).unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        verifier
            .verify_server_cert(&leaf, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    /// The certificate holds for every name in [`NAMES`].
    fn chain_holds(c: &RunCertificate) {
        for name in NAMES {
            valid_for(c, name).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        }
    }
}
