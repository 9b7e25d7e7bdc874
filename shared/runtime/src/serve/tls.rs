//! TLS serving from a certificate directory, for every ebb server that speaks TLS: `/metrics`
//! (`--metrics-cert-dir`) and stackable-scaler's admission webhook (`--webhook-cert-dir`).
//!
//! The directory holds `tls.crt` and `tls.key`, as a mounted `kubernetes.io/tls` Secret does
//! (cert-manager's, or one the chart's user provides). The files are re-read when they change, so
//! a renewed certificate is served without a restart (a Secret update arrives as new files
//! behind the mount's symlinks); a broken update keeps the last good pair. Handshakes run off the
//! accept loop, so one slow client cannot hold up others.
//!
//! Hand-written on tokio-rustls rather than taken from a crate: axum-server's rustls support
//! reloads only when told to (the watching would still be ours) and pins its own axum and
//! rustls versions; tls-listener does not reload. What is here is the resolver and an accept
//! loop, about a hundred lines, tested by the webhook's and the metrics server's tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

/// Certificate file in the cert dir.
pub const CERT_FILE: &str = "tls.crt";
/// Key file in the cert dir.
pub const KEY_FILE: &str = "tls.key";

/// Why a TLS server cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate or key cannot be loaded.
    #[error("loading the {what} certificate from {dir}: {message}")]
    Certificate {
        /// What the certificate serves (`metrics`, `webhook`).
        what: &'static str,
        /// The cert dir.
        dir: String,
        /// Why.
        message: String,
    },
    /// Binding the address failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

fn load_key(dir: &Path) -> Result<Arc<CertifiedKey>, String> {
    let certs = CertificateDer::pem_file_iter(dir.join(CERT_FILE))
        .map_err(|e| format!("{CERT_FILE}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{CERT_FILE}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{CERT_FILE}: no certificate"));
    }
    let key =
        PrivateKeyDer::from_pem_file(dir.join(KEY_FILE)).map_err(|e| format!("{KEY_FILE}: {e}"))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("{KEY_FILE}: {e}"))?;
    Ok(Arc::new(CertifiedKey::new(certs, signer)))
}

fn modified(dir: &Path) -> Option<(SystemTime, SystemTime)> {
    let time = |f: &str| {
        std::fs::metadata(dir.join(f))
            .and_then(|m| m.modified())
            .ok()
    };
    Some((time(CERT_FILE)?, time(KEY_FILE)?))
}

/// Serves the certificate in a directory, re-reading it when the files change. A broken update
/// keeps the last good pair.
#[derive(Debug)]
pub struct ReloadingCert {
    what: &'static str,
    dir: PathBuf,
    current: RwLock<Loaded>,
}

/// The files' modification times when loaded, and what was loaded.
type Loaded = (Option<(SystemTime, SystemTime)>, Arc<CertifiedKey>);

impl ReloadingCert {
    /// Loads the pair in `dir` for `what` (an error if it cannot be loaded now).
    ///
    /// # Errors
    /// [`TlsError::Certificate`] naming the file at fault.
    pub fn load(dir: &Path, what: &'static str) -> Result<Self, TlsError> {
        let key = load_key(dir).map_err(|message| TlsError::Certificate {
            what,
            dir: dir.display().to_string(),
            message,
        })?;
        Ok(Self {
            what,
            dir: dir.to_owned(),
            current: RwLock::new((modified(dir), key)),
        })
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let stamp = modified(&self.dir);
        if let Ok(current) = self.current.read()
            && current.0 == stamp
        {
            return Some(current.1.clone());
        }
        let mut current = self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match load_key(&self.dir) {
            Ok(key) => {
                tracing::info!(what = self.what, dir = %self.dir.display(), "reloaded the certificate");
                *current = (stamp, key);
            }
            Err(error) => {
                tracing::warn!(what = self.what, %error, "the changed certificate cannot be loaded; keeping the previous one");
            }
        }
        Some(current.1.clone())
    }
}

/// The TLS server config (HTTP/1.1) for the certificate in `cert_dir`, reloaded as it changes.
///
/// # Errors
/// [`TlsError::Certificate`] when the pair cannot be loaded now.
pub fn server_config(cert_dir: &Path, what: &'static str) -> Result<Arc<ServerConfig>, TlsError> {
    let resolver = ReloadingCert::load(cert_dir, what)?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener whose connections are TLS.
pub struct TlsListener {
    incoming: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

impl TlsListener {
    /// Binds `addr` and starts accepting with `config`.
    ///
    /// # Errors
    /// [`TlsError::Bind`].
    pub async fn bind(addr: SocketAddr, config: Arc<ServerConfig>) -> Result<Self, TlsError> {
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|source| TlsError::Bind { addr, source })?;
        Self::on(tcp, config).map_err(|source| TlsError::Bind { addr, source })
    }

    /// Starts accepting on a bound `tcp` with `config`.
    ///
    /// # Errors
    /// The socket's address cannot be read.
    pub fn on(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, incoming) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a TLS connection failed");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    break;
                }
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(
                        std::time::Duration::from_secs(10),
                        acceptor.accept(stream),
                    )
                    .await;
                    match handshake {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { incoming, local })
    }

    /// The bound address.
    pub fn local(&self) -> SocketAddr {
        self.local
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The accept task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::{Duration, SystemTime};

    use tokio_rustls::rustls::RootCertStore;
    use tokio_rustls::rustls::pki_types::ServerName;

    use super::*;

    /// A new self-signed certificate for `localhost`, written into `dir` with the modification
    /// time `at` (as a Secret update brings new files); returns its DER.
    fn write_pair(dir: &Path, at: SystemTime) -> CertificateDer<'static> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        for (file, text) in [
            (CERT_FILE, made.cert.pem()),
            (KEY_FILE, made.signing_key.serialize_pem()),
        ] {
            std::fs::write(dir.join(file), text).unwrap();
            std::fs::File::options()
                .write(true)
                .open(dir.join(file))
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
        made.cert.der().clone()
    }

    /// The certificate the server at `addr` presents, trusting `trusted`.
    async fn served(
        addr: SocketAddr,
        trusted: &[CertificateDer<'static>],
    ) -> CertificateDer<'static> {
        let mut roots = RootCertStore::empty();
        for cert in trusted {
            roots.add(cert.clone()).unwrap();
        }
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        tls.get_ref().1.peer_certificates().unwrap()[0].clone()
    }

    /// A renewed certificate (new files in the directory) is served from the next handshake on,
    /// without a restart; a broken update keeps the last good pair; a directory without one is
    /// refused at start, naming it.
    #[tokio::test]
    async fn a_renewed_certificate_is_served_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let start = SystemTime::now();
        let first = write_pair(dir.path(), start);
        let config = server_config(dir.path(), "metrics").unwrap();
        let mut listener = TlsListener::bind("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let addr = listener.local();
        // Accept and drop connections, as a server would after its handshake.
        tokio::spawn(async move {
            loop {
                drop(axum::serve::Listener::accept(&mut listener).await);
            }
        });
        let trusted = |certs: &[&CertificateDer<'static>]| {
            certs.iter().map(|c| (*c).clone()).collect::<Vec<_>>()
        };
        assert_eq!(served(addr, &trusted(&[&first])).await, first);

        let second = write_pair(dir.path(), start + Duration::from_secs(60));
        assert_eq!(served(addr, &trusted(&[&first, &second])).await, second);

        std::fs::write(dir.path().join(CERT_FILE), "not a certificate").unwrap();
        assert_eq!(served(addr, &trusted(&[&first, &second])).await, second);

        let empty = tempfile::tempdir().unwrap();
        let refused = server_config(empty.path(), "metrics").unwrap_err();
        assert!(
            refused.to_string().starts_with(&format!(
                "loading the metrics certificate from {}: tls.crt",
                empty.path().display()
            )),
            "{refused}"
        );
    }
}
