//! `--enable-webhook`: a validating admission webhook that rejects changes of `spec.replicas` (on
//! the StackableScaler and on its `/scale` subresource) while an operation is in flight.
//!
//! The stage comes from the live object (read with the client, not from the request, whose
//! `oldObject` may be stale), and any doubt denies: a lookup error, a missing object or an
//! unreadable request (fail closed). Which stages block is [`ScalerStage::is_active`](ebb_crds::stackable::ScalerStage::is_active)'s knowledge.
//! Served over TLS from `tls.crt` / `tls.key` in `--webhook-cert-dir` (a mounted Secret, e.g. from
//! cert-manager); the files are re-read when they change, so a renewed certificate is used
//! without a restart.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use ebb_crds::stackable::StackableScaler;
use ebb_runtime::Shutdown;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::{Api, Client};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

use crate::decide;

/// Path the webhook is served on.
pub const PATH: &str = "/validate";
/// Certificate file in the cert dir.
pub const CERT_FILE: &str = "tls.crt";
/// Key file in the cert dir.
pub const KEY_FILE: &str = "tls.key";

/// What a request asks, before the live object is consulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Nothing to guard (not an update, not a replicas change, not ours): allowed as is.
    Allow(String),
    /// `spec.replicas` changes: allowed only if the live scaler is Idle or Failed.
    ReplicasChange {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Old `spec.replicas` (`None` when unreadable).
        from: Option<i64>,
        /// New `spec.replicas` (`None` when unreadable).
        to: Option<i64>,
    },
}

fn replicas_of(object: Option<&DynamicObject>) -> Option<i64> {
    object?.data.get("spec")?.get("replicas")?.as_i64()
}

/// Classifies a request (pure).
pub fn examine(request: &AdmissionRequest<DynamicObject>) -> Check {
    if request.resource.resource != "stackablescalers" {
        return Check::Allow(format!(
            "not a StackableScaler ({})",
            request.resource.resource
        ));
    }
    if request.operation != Operation::Update {
        return Check::Allow("only updates are checked".into());
    }
    match request.sub_resource.as_deref() {
        None | Some("") | Some("scale") => {}
        Some(other) => return Check::Allow(format!("the {other} subresource is not checked")),
    }
    let from = replicas_of(request.old_object.as_ref());
    let to = replicas_of(request.object.as_ref());
    if from.is_some() && from == to {
        return Check::Allow("spec.replicas unchanged".into());
    }
    Check::ReplicasChange {
        namespace: request.namespace.clone().unwrap_or_default(),
        name: request.name.clone(),
        from,
        to,
    }
}

/// The answer for a request, given what reading the live object gave (pure).
pub fn verdict(
    request: &AdmissionRequest<DynamicObject>,
    check: &Check,
    live: Result<Option<StackableScaler>, String>,
) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Check::ReplicasChange {
        namespace,
        name,
        from,
        to,
    } = check
    else {
        return response;
    };
    let show = |v: &Option<i64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    let change = format!("spec.replicas {} -> {}", show(from), show(to));
    let deny = |message: String| {
        let mut denied = response.clone().deny(message);
        denied.result.code = 403;
        denied.result.reason = "Forbidden".into();
        denied
    };
    match live {
        Err(error) => deny(format!(
            "{change} denied: cannot read StackableScaler {namespace}/{name} to check its stage ({error}); the webhook fails closed"
        )),
        Ok(None) => deny(format!(
            "{change} denied: StackableScaler {namespace}/{name} not found"
        )),
        Ok(Some(scaler)) => {
            let stage = decide::stage_of(scaler.status.as_ref());
            if stage.is_active() {
                deny(format!(
                    "{change} denied: StackableScaler {namespace}/{name} is in {} (an operation is in flight); \
                     spec.replicas can change again when it is Idle or Failed",
                    stage.as_str()
                ))
            } else {
                response
            }
        }
    }
}

/// Reads live StackableScalers.
pub trait LiveScalers: Send + Sync + 'static {
    /// The scaler `namespace/name`, `Ok(None)` if absent, `Err` with a message on any error.
    fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<StackableScaler>, String>> + Send;
}

impl LiveScalers for Client {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<StackableScaler>, String> {
        let api: Api<StackableScaler> = Api::namespaced(self.clone(), namespace);
        api.get_opt(name).await.map_err(|e| e.to_string())
    }
}

/// Answers one AdmissionReview.
pub async fn review<L: LiveScalers>(
    live: &L,
    review: AdmissionReview<DynamicObject>,
) -> AdmissionReview<DynamicObject> {
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(_) => {
            return AdmissionResponse::invalid("no request in the AdmissionReview").into_review();
        }
    };
    let check = examine(&request);
    let response = match &check {
        Check::Allow(_) => AdmissionResponse::from(&request),
        Check::ReplicasChange {
            namespace, name, ..
        } => {
            let found = live.get(namespace, name).await;
            verdict(&request, &check, found)
        }
    };
    if !response.allowed {
        tracing::info!(name = %request.name, message = %response.result.message, "denied");
    }
    response.into_review()
}

async fn handle<L: LiveScalers>(
    State(live): State<Arc<L>>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let answer = match serde_json::from_slice::<AdmissionReview<DynamicObject>>(&body) {
        Ok(parsed) => review(live.as_ref(), parsed).await,
        Err(error) => {
            AdmissionResponse::invalid(format!("cannot parse the AdmissionReview: {error}"))
                .into_review()
        }
    };
    match serde_json::to_vec(&answer) {
        Ok(json) => ([(http::header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => (http::StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// The webhook's HTTP routes (`POST /validate`).
pub fn router<L: LiveScalers>(live: Arc<L>) -> Router {
    Router::new()
        .route(PATH, post(handle::<L>))
        .with_state(live)
}

/// Why the webhook cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The certificate or key cannot be loaded.
    #[error("loading the webhook certificate from {dir}: {message}")]
    Certificate {
        /// The cert dir.
        dir: String,
        /// Why.
        message: String,
    },
    /// Binding or serving failed.
    #[error("serving the webhook on {addr}: {source}")]
    Serve {
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

/// Serves the certificate in a directory, re-reading it when the files change (Secret updates
/// arrive as new files behind the mount's symlinks). A broken update keeps the last good pair.
#[derive(Debug)]
pub struct ReloadingCert {
    dir: PathBuf,
    current: RwLock<Loaded>,
}

/// The files' modification times when loaded, and what was loaded.
type Loaded = (Option<(SystemTime, SystemTime)>, Arc<CertifiedKey>);

impl ReloadingCert {
    /// Loads the pair in `dir` (an error if it cannot be loaded now).
    pub fn load(dir: &Path) -> Result<Self, WebhookError> {
        let key = load_key(dir).map_err(|message| WebhookError::Certificate {
            dir: dir.display().to_string(),
            message,
        })?;
        Ok(Self {
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
                tracing::info!(dir = %self.dir.display(), "reloaded the webhook certificate");
                *current = (stamp, key);
            }
            Err(error) => {
                tracing::warn!(%error, "the changed webhook certificate cannot be loaded; keeping the previous one")
            }
        }
        Some(current.1.clone())
    }
}

/// A TCP listener whose connections are TLS; handshakes run concurrently, off the accept loop, so
/// one slow client cannot hold up others.
pub struct TlsListener {
    incoming: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

impl TlsListener {
    /// Binds `addr` and starts accepting with `config`.
    pub async fn bind(addr: SocketAddr, config: Arc<ServerConfig>) -> Result<Self, WebhookError> {
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|source| WebhookError::Serve { addr, source })?;
        let local = tcp
            .local_addr()
            .map_err(|source| WebhookError::Serve { addr, source })?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, incoming) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a webhook connection failed");
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

/// The TLS server config for the certificate in `cert_dir`.
pub fn tls_config(cert_dir: &Path) -> Result<Arc<ServerConfig>, WebhookError> {
    let resolver = ReloadingCert::load(cert_dir)?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves the webhook over TLS on `listener` until `shutdown`.
pub async fn serve<L: LiveScalers>(
    listener: TlsListener,
    live: Arc<L>,
    shutdown: Shutdown,
) -> Result<(), WebhookError> {
    let addr = listener.local;
    tracing::info!(%addr, path = PATH, "serving the admission webhook");
    axum::serve(listener, router(live))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|source| WebhookError::Serve { addr, source })
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
