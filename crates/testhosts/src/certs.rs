//! The TLS material of a set whose engines ask for client certificates.

use crate::cmd::run;
use crate::layout::Layout;
use std::path::Path;

/// A CA, a server certificate per engine (for its IP address) and one client certificate,
/// with openssl: what `dockerd --tlsverify` and a client's `tls_dir` hold.
pub(crate) fn make_certificates(l: &Layout) -> Result<(), String> {
    let certs = l.run_dir().join("certs");
    let client = l.run_dir().join("client");
    for d in [&certs, &client] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let p = |dir: &Path, f: &str| dir.join(f).display().to_string();
    let key = |path: &str| run(&["openssl", "genrsa", "-out", path, "2048"]);
    key(&p(&certs, "ca-key.pem"))?;
    run(&[
        "openssl",
        "req",
        "-x509",
        "-new",
        "-key",
        &p(&certs, "ca-key.pem"),
        "-days",
        "2",
        "-subj",
        "/CN=benchctl test CA",
        "-out",
        &p(&certs, "ca.pem"),
    ])?;
    // Signs `name`'s key with the CA, with `extensions` (one per line).
    let sign = |dir: &Path, name: &str, cn: &str, extensions: &str| -> Result<(), String> {
        key(&p(dir, &format!("{name}-key.pem")))?;
        run(&[
            "openssl",
            "req",
            "-new",
            "-key",
            &p(dir, &format!("{name}-key.pem")),
            "-subj",
            &format!("/CN={cn}"),
            "-out",
            &p(dir, &format!("{name}.csr")),
        ])?;
        let ext = p(dir, &format!("{name}.ext"));
        std::fs::write(&ext, extensions).map_err(|e| format!("{ext}: {e}"))?;
        run(&[
            "openssl",
            "x509",
            "-req",
            "-in",
            &p(dir, &format!("{name}.csr")),
            "-CA",
            &p(&certs, "ca.pem"),
            "-CAkey",
            &p(&certs, "ca-key.pem"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &p(dir, &format!("{name}-cert.pem")),
        ])
    };
    for i in 0..l.hosts {
        sign(
            &certs,
            &format!("h{i}"),
            &l.address(i).to_string(),
            &format!(
                "subjectAltName = IP:{}\nextendedKeyUsage = serverAuth\nbasicConstraints = CA:FALSE\n",
                l.address(i)
            ),
        )?;
    }
    sign(
        &client,
        "client",
        "benchctl test client",
        "extendedKeyUsage = clientAuth\nbasicConstraints = CA:FALSE\n",
    )?;
    // The names a client's folder has, as docker's own client expects them.
    std::fs::copy(certs.join("ca.pem"), client.join("ca.pem")).map_err(|e| e.to_string())?;
    std::fs::rename(client.join("client-cert.pem"), client.join("cert.pem"))
        .map_err(|e| e.to_string())?;
    std::fs::rename(client.join("client-key.pem"), client.join("key.pem"))
        .map_err(|e| e.to_string())?;
    Ok(())
}
