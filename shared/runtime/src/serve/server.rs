//! The HTTP servers of a controller: `/metrics` (Prometheus/OpenMetrics text), `/healthz`
//! (liveness) and `/readyz` (readiness, false until the controller says its caches are warm).
//! With `--metrics-auth`, `/metrics` answers only callers the API server vouches for
//! ([`crate::serve::metrics_auth`]); with `--metrics-cert-dir` it is served over TLS ([`crate::serve::tls`]), so
//! the token a scraper sends never crosses the network in clear. With `--health-addr` the probes
//! have a plain-HTTP port of their own, as controller-runtime's `--health-probe-bind-address`;
//! without it they are served beside `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::serve::metrics_auth::{MetricsAuth, Verdict, bearer};
use crate::shutdown::Shutdown;

/// The OpenMetrics text content type that prometheus-client's text encoder produces.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The HTTP server could not start or failed while running.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound (in use, no permission, ...).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The requested address.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with an I/O error.
    #[error("metrics/health server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// Readiness shared between the controller and the server. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct Health {
    ready: Arc<AtomicBool>,
}

impl Health {
    /// Not ready yet: `/readyz` answers 503 until [`Health::set_ready`]`(true)`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the process ready (e.g. caches are warm) or not ready again.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether `/readyz` currently answers 200.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

#[derive(Clone)]
struct AppState {
    registry: Arc<Registry>,
    health: Health,
    auth: Option<Arc<dyn MetricsAuth>>,
    /// The length of the last `/metrics` answer: the next is written into a buffer of about
    /// that size instead of one grown by doubling (with 10 000 objects the answer is megabytes).
    last_len: Arc<AtomicUsize>,
}

/// The routes, for embedding or testing without a socket.
pub fn router(registry: Arc<Registry>, health: Health) -> Router {
    router_with(registry, health, None)
}

/// [`router`], with `/metrics` answering only callers `auth` allows (when given).
pub fn router_with(
    registry: Arc<Registry>,
    health: Health,
    auth: Option<Arc<dyn MetricsAuth>>,
) -> Router {
    router_of(AppState {
        registry,
        health,
        auth,
        last_len: Arc::default(),
    })
}

fn router_of(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

/// Whether the caller of `/metrics` may read it: `None` when it may, else the answer to give.
async fn refusal(auth: &dyn MetricsAuth, headers: &HeaderMap) -> Option<Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    let Some(token) = token else {
        return Some((StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response());
    };
    match auth.check(token).await {
        Ok(Verdict::Allowed) => None,
        Ok(Verdict::Unauthenticated) => {
            Some((StatusCode::UNAUTHORIZED, "the token is not valid\n").into_response())
        }
        Ok(Verdict::Forbidden(user)) => {
            tracing::debug!(%user, "denied /metrics");
            Some(
                (
                    StatusCode::FORBIDDEN,
                    format!("{user} may not get /metrics\n"),
                )
                    .into_response(),
            )
        }
        Ok(Verdict::Throttled) => Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "1")],
                "too many unknown tokens at once; try again\n",
            )
                .into_response(),
        ),
        Err(error) => {
            tracing::warn!(%error, "cannot check a /metrics caller with the API server");
            Some(
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot check the caller\n",
                )
                    .into_response(),
            )
        }
    }
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(auth) = &state.auth
        && let Some(refused) = refusal(auth.as_ref(), &headers).await
    {
        return refused;
    }
    let last = state.last_len.load(Ordering::Relaxed);
    let mut body = String::with_capacity(last + last / 16);
    match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        Ok(()) => {
            state.last_len.store(body.len(), Ordering::Relaxed);
            ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response()
        }
        Err(error) => {
            tracing::warn!(%error, "cannot encode metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response()
        }
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.health.is_ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

/// A bound, not yet serving, server: bind first to learn the address (tests bind `127.0.0.1:0`).
pub struct MetricsServer {
    listener: TcpListener,
    addr: SocketAddr,
    auth: Option<Arc<dyn MetricsAuth>>,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    probes: Option<(TcpListener, SocketAddr)>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .field("auth", &self.auth.is_some())
            .field("tls", &self.tls.is_some())
            .field("probes", &self.probes.as_ref().map(|(_, addr)| addr))
            .finish_non_exhaustive()
    }
}

async fn bind_tcp(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), ServerError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServerError::Bind { addr, source })?;
    Ok((listener, bound))
}

impl MetricsServer {
    /// Binds `addr`.
    pub async fn bind(addr: SocketAddr) -> Result<Self, ServerError> {
        let (listener, addr) = bind_tcp(addr).await?;
        Ok(Self {
            listener,
            addr,
            auth: None,
            tls: None,
            probes: None,
        })
    }

    /// `/metrics` answers only callers `auth` allows.
    pub fn with_auth(mut self, auth: Arc<dyn MetricsAuth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// `/metrics` is served over TLS with `config` ([`crate::serve::tls::server_config`]).
    pub fn with_tls(mut self, config: Arc<tokio_rustls::rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// `/healthz` and `/readyz` are served on `addr` (plain HTTP), and only there.
    pub async fn with_probes_on(mut self, addr: SocketAddr) -> Result<Self, ServerError> {
        self.probes = Some(bind_tcp(addr).await?);
        Ok(self)
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The probes' own bound address, when they have one.
    pub fn probes_addr(&self) -> Option<SocketAddr> {
        self.probes.as_ref().map(|(_, addr)| *addr)
    }

    /// Serves until `shutdown` triggers, then finishes in-flight requests and returns.
    pub async fn run(
        self,
        registry: Arc<Registry>,
        health: Health,
        shutdown: Shutdown,
    ) -> Result<(), ServerError> {
        let state = AppState {
            registry,
            health: health.clone(),
            auth: self.auth,
            last_len: Arc::default(),
        };
        let main = match &self.probes {
            Some(_) => Router::new()
                .route("/metrics", get(metrics))
                .with_state(state),
            None => router_of(state),
        };
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let served = match &self.probes {
            Some((_, probes)) => format!("/metrics ({scheme}); /healthz, /readyz on {probes}"),
            None => format!("/metrics ({scheme}), /healthz and /readyz"),
        };
        tracing::info!(addr = %self.addr, "serving {served}");
        let graceful = |shutdown: Shutdown| async move { shutdown.cancelled().await };
        let metrics = async {
            match self.tls {
                Some(config) => {
                    let listener = crate::serve::tls::TlsListener::on(self.listener, config)
                        .map_err(ServerError::Serve)?;
                    axum::serve(listener, main)
                        .with_graceful_shutdown(graceful(shutdown.clone()))
                        .await
                }
                None => {
                    axum::serve(self.listener, main)
                        .with_graceful_shutdown(graceful(shutdown.clone()))
                        .await
                }
            }
            .map_err(ServerError::Serve)
        };
        let probes = async {
            match self.probes {
                Some((listener, _)) => axum::serve(listener, probes_router(health))
                    .with_graceful_shutdown(graceful(shutdown.clone()))
                    .await
                    .map_err(ServerError::Serve),
                None => Ok(()),
            }
        };
        tokio::try_join!(metrics, probes).map(drop)
    }
}

/// `/healthz` and `/readyz` alone.
fn probes_router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            registry: Arc::new(Registry::default()),
            health,
            auth: None,
            last_len: Arc::default(),
        })
}

/// Binds `addr` and serves `/metrics`, `/healthz` and `/readyz` until `shutdown` triggers.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    health: Health,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    MetricsServer::bind(addr)
        .await?
        .run(registry, health, shutdown)
        .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A raw HTTP/1.1 GET: returns the status code and body.
    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    #[tokio::test]
    async fn serves_health_readiness_and_metrics_then_stops() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        registry.register("ebb_test_things", "Things", counter.clone());
        counter.inc();
        let registry = Arc::new(registry);
        let health = Health::new();
        let shutdown = Shutdown::new();

        // A port below the ephemeral range: other tests binding port 0 never get it, so after
        // the shutdown nothing but this server could have answered on it.
        let mut server = None;
        for port in (20_000 + std::process::id() % 5_000..30_000).step_by(7) {
            if let Ok(s) =
                MetricsServer::bind(SocketAddr::from(([127, 0, 0, 1], port as u16))).await
            {
                server = Some(s);
                break;
            }
        }
        let server = server.expect("a free port below the ephemeral range");
        let addr = server.local_addr();
        let task = tokio::spawn(server.run(registry, health.clone(), shutdown.clone()));

        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 503);
        health.set_ready(true);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        let (status, body) = get(addr, "/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("ebb_test_things_total 1"), "{body}");
        assert_eq!(get(addr, "/nope").await.0, 404);

        shutdown.trigger();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        // The listener is gone: its address can be bound again (within a second: the last
        // connection's socket may still be closing on a loaded machine).
        let mut rebound = false;
        for _ in 0..20 {
            if MetricsServer::bind(addr).await.is_ok() {
                rebound = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(rebound, "{addr} still taken after the server stopped");
    }

    #[tokio::test]
    async fn bind_failure_is_reported() {
        let first = MetricsServer::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let err = MetricsServer::bind(first.local_addr()).await.unwrap_err();
        assert!(matches!(err, ServerError::Bind { .. }), "{err}");
    }

    /// A GET with an `Authorization` header.
    async fn get_as(addr: SocketAddr, path: &str, authorization: &str) -> u16 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: {authorization}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap()
    }

    /// Tokens as an API server would judge them: "reader" may, "stranger" is valid but may not,
    /// "down" cannot be checked; anything else is not a token.
    struct Judge;

    impl MetricsAuth for Judge {
        fn check<'a>(
            &'a self,
            token: &'a str,
        ) -> futures::future::BoxFuture<'a, Result<Verdict, String>> {
            Box::pin(async move {
                match token {
                    "reader" => Ok(Verdict::Allowed),
                    "stranger" => Ok(Verdict::Forbidden("system:serviceaccount:x:y".into())),
                    "down" => Err("connection refused".into()),
                    _ => Ok(Verdict::Unauthenticated),
                }
            })
        }
    }

    #[tokio::test]
    async fn authenticated_metrics_answer_only_allowed_callers_and_probes_stay_open() {
        let server = MetricsServer::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap()
            .with_auth(Arc::new(Judge));
        let addr = server.local_addr();
        let health = Health::new();
        health.set_ready(true);
        let shutdown = Shutdown::new();
        let task =
            tokio::spawn(server.run(Arc::new(Registry::default()), health, shutdown.clone()));
        assert_eq!(get(addr, "/metrics").await.0, 401, "no token");
        assert_eq!(get_as(addr, "/metrics", "Basic abc").await, 401);
        assert_eq!(get_as(addr, "/metrics", "Bearer forged").await, 401);
        assert_eq!(get_as(addr, "/metrics", "Bearer stranger").await, 403);
        assert_eq!(get_as(addr, "/metrics", "Bearer down").await, 500);
        assert_eq!(get_as(addr, "/metrics", "bearer reader").await, 200);
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        shutdown.trigger();
        task.await.unwrap().unwrap();
    }

    /// `fixtures/tls`' test CA as a rustls client config.
    fn client_trusting_the_test_ca() -> tokio_rustls::TlsConnector {
        use tokio_rustls::rustls::pki_types::CertificateDer;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
        let mut roots = tokio_rustls::rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(dir.join("ca.crt")).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = tokio_rustls::rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }

    /// A GET over TLS to `localhost` at `addr`, with `Authorization: Bearer <token>`.
    async fn get_tls(addr: SocketAddr, path: &str, token: &str) -> String {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = client_trusting_the_test_ca()
            .connect(name, tcp)
            .await
            .unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        let _ = tls.read_to_string(&mut response).await;
        response
    }

    /// `--metrics-cert-dir` and `--health-addr`: /metrics over TLS only (a plain-HTTP request
    /// gets no HTTP answer), still behind the token check; the probes on their own plain port,
    /// which serves nothing else.
    #[tokio::test]
    async fn metrics_over_tls_and_probes_on_their_own_port() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = MetricsServer::bind(local)
            .await
            .unwrap()
            .with_auth(Arc::new(Judge))
            .with_tls(crate::serve::tls::server_config(&dir, "metrics").unwrap())
            .with_probes_on(local)
            .await
            .unwrap();
        let (addr, probes) = (server.local_addr(), server.probes_addr().unwrap());
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        registry.register("ebb_test_things", "Things", counter.clone());
        let health = Health::new();
        let shutdown = Shutdown::new();
        let task = tokio::spawn(server.run(Arc::new(registry), health.clone(), shutdown.clone()));

        let answer = get_tls(addr, "/metrics", "reader").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("ebb_test_things_total 0"), "{answer}");
        assert!(
            get_tls(addr, "/metrics", "stranger")
                .await
                .starts_with("HTTP/1.1 403")
        );
        assert!(
            get_tls(addr, "/healthz", "reader")
                .await
                .starts_with("HTTP/1.1 404")
        );
        // Plain HTTP on the TLS port: no HTTP answer at all.
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), plain.read_to_end(&mut raw)).await;
        assert!(
            !raw.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&raw)
        );

        assert_eq!(get(probes, "/healthz").await.0, 200);
        assert_eq!(get(probes, "/readyz").await.0, 503);
        health.set_ready(true);
        assert_eq!(get(probes, "/readyz").await.0, 200);
        assert_eq!(get(probes, "/metrics").await.0, 404);
        shutdown.trigger();
        task.await.unwrap().unwrap();
    }
}
