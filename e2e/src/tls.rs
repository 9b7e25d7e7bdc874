//! A certificate authority and serving certificate for a webhook served by a local process, the
//! way cert-manager would make them for `<service>.<namespace>.svc`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A serving certificate written as `tls.crt` / `tls.key` into `dir`, and its CA.
pub struct ServingCert {
    /// PEM of the CA: the webhook configuration's `caBundle` (base64 of this).
    pub ca_pem: String,
    /// The directory holding `tls.crt` and `tls.key`.
    pub dir: PathBuf,
    /// The CA, to renew the serving certificate from.
    ca: CertifiedIssuer<'static, KeyPair>,
    /// The names the serving certificate is for.
    dns_names: Vec<String>,
}

impl ServingCert {
    /// `caBundle` as a webhook configuration carries it: base64 of the CA's PEM.
    pub fn ca_bundle(&self) -> String {
        let bytes = k8s_openapi::ByteString(self.ca_pem.as_bytes().to_vec());
        serde_json::to_value(bytes)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Renews the serving certificate as cert-manager renews a leaf of a CA Issuer: a new key and
    /// certificate from the same CA, replacing `tls.crt` and `tls.key` (each written aside, then
    /// renamed into place, as a Secret volume's files change).
    ///
    /// # Errors
    /// The certificate cannot be made or written.
    pub fn renew(&self) -> Result<()> {
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(self.dns_names.clone())?.signed_by(&key, &self.ca)?;
        for (file, text) in [("tls.key", key.serialize_pem()), ("tls.crt", cert.pem())] {
            let aside = self.dir.join(format!(".{file}.new"));
            std::fs::write(&aside, text)?;
            std::fs::rename(&aside, self.dir.join(file))?;
        }
        Ok(())
    }
}

/// Issues a CA and a serving certificate for `dns_names` into `dir`.
pub fn serving_cert(dns_names: &[String], dir: &Path) -> Result<ServingCert> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(dns_names.to_vec())?.signed_by(&key, &ca)?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("tls.crt"), cert.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    Ok(ServingCert {
        ca_pem: ca.pem(),
        dir: dir.to_path_buf(),
        ca,
        dns_names: dns_names.to_vec(),
    })
}
