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
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use ebb_crds::stackable::StackableScaler;
use ebb_runtime::Shutdown;
pub use ebb_runtime::serve::tls::{CERT_FILE, KEY_FILE, ReloadingCert, TlsListener};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::{Api, Client};
use tokio_rustls::rustls::ServerConfig;

use crate::decide;

/// Path the webhook is served on.
pub const PATH: &str = "/validate";

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
    /// The certificate cannot be loaded, or the address bound.
    #[error(transparent)]
    Tls(#[from] ebb_runtime::serve::tls::TlsError),
    /// Binding or serving failed.
    #[error("serving the webhook on {addr}: {source}")]
    Serve {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// The TLS server config for the certificate in `cert_dir` ([`ebb_runtime::serve::tls`]: re-read as
/// it changes).
pub fn tls_config(cert_dir: &Path) -> Result<Arc<ServerConfig>, WebhookError> {
    Ok(ebb_runtime::serve::tls::server_config(cert_dir, "webhook")?)
}

/// Serves the webhook over TLS on `listener` until `shutdown`.
pub async fn serve<L: LiveScalers>(
    listener: TlsListener,
    live: Arc<L>,
    shutdown: Shutdown,
) -> Result<(), WebhookError> {
    let addr = listener.local();
    tracing::info!(%addr, path = PATH, "serving the admission webhook");
    axum::serve(listener, router(live))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|source| WebhookError::Serve { addr, source })
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
