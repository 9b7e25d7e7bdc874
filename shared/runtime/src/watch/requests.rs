//! The requests a controller's client makes, as operators look for them first:
//! `ebb_<controller>_api_requests_total{verb,resource,code}` and, for every request but watches
//! (which stay open), `ebb_<controller>_api_request_duration_seconds{verb}`, the time to the
//! answer's head.
//!
//! Verbs and resources are named as kube-apiserver's audit log and its own
//! `apiserver_request_total` name them (`list`, `watch`, `patch`; `horizontalpodautoscalers`,
//! `statefulsets/scale`), so a panel of ebb's requests reads like one of the server's. `code` is
//! the answer's HTTP status, or `error` when there was none (the server unreachable).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds (seconds) of the request-duration buckets: a GET answers in milliseconds, a
/// list of thousands of objects in seconds.
const BUCKETS: [f64; 12] = [
    0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    resource: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabels {
    verb: &'static str,
}

type Durations = Family<VerbLabels, Histogram, fn() -> Histogram>;

/// The request counter and duration histogram of one process's client.
#[derive(Clone, Debug)]
pub struct RequestMetrics {
    requests: Family<RequestLabels, Counter>,
    durations: Durations,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestMetrics {
    /// Nothing counted yet.
    pub fn new() -> Self {
        Self {
            requests: Family::default(),
            durations: Family::new_with_constructor(|| Histogram::new(BUCKETS)),
        }
    }

    /// Registers `api_requests_total` and `api_request_duration_seconds` into `registry` (a
    /// controller's part of it, so they are `ebb_<controller>_...`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "api_requests",
            "Requests to the API server, by verb, resource and HTTP status (code=\"error\": no answer)",
            self.requests.clone(),
        );
        registry.register_with_unit(
            "api_request_duration",
            "Time from a request to the head of its answer, by verb (watches left out)",
            Unit::Seconds,
            self.durations.clone(),
        );
    }

    /// A layer for kube's `ClientBuilder` that counts and times every request through it.
    pub fn layer(&self) -> RequestMetricsLayer {
        RequestMetricsLayer(self.clone())
    }

    fn record(&self, request: &RequestInfo, status: Option<u16>, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                verb: request.verb,
                resource: request.resource.clone(),
                code: status.map_or_else(|| "error".to_owned(), |s| s.to_string()),
            })
            .inc();
        if request.verb != "watch" {
            self.durations
                .get_or_create(&VerbLabels { verb: request.verb })
                .observe(took.as_secs_f64());
        }
    }
}

/// What a request asks, by kube-apiserver's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; for a
    /// path that is not a resource's (`/version`, `/readyz`), the method in lower case.
    pub(crate) verb: &'static str,
    /// The resource's plural, with `/subresource` when there is one (`pods/status`); `""` for a
    /// path that is not a resource's.
    pub(crate) resource: String,
}

/// Reads a request as kube-apiserver's request-info parser does: `/api/v1/...` and
/// `/apis/<group>/<version>/...`, then `namespaces/<ns>/` skipped, then `<resource>[/<name>
/// [/<subresource>]]`.
pub(crate) fn request_info(method: &http::Method, uri: &http::Uri) -> RequestInfo {
    let parts: Vec<&str> = uri.path().split('/').filter(|p| !p.is_empty()).collect();
    let rest = match parts.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return non_resource(method),
    };
    let rest = match rest {
        // `namespaces/<ns>/<resource>...`; `namespaces` and `namespaces/<ns>[/status|/finalize]`
        // are the Namespace resource itself (kube-apiserver's namespace subresources).
        ["namespaces", _namespace, tail @ ..]
            if !tail.is_empty() && !matches!(tail[0], "status" | "finalize") =>
        {
            tail
        }
        _ => rest,
    };
    let (resource, name, subresource) = match rest {
        [] => return non_resource(method),
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some(*name), None),
        [resource, name, subresource, ..] => (*resource, Some(*name), Some(*subresource)),
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if name.is_none() => "list",
        http::Method::GET | http::Method::HEAD => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if name.is_none() => "deletecollection",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    RequestInfo {
        verb,
        resource: match subresource {
            Some(sub) => format!("{resource}/{sub}"),
            None => resource.to_owned(),
        },
    }
}

fn non_resource(method: &http::Method) -> RequestInfo {
    let verb = match *method {
        http::Method::GET => "get",
        http::Method::POST => "post",
        http::Method::PUT => "put",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    RequestInfo {
        verb,
        resource: String::new(),
    }
}

/// See [`RequestMetrics::layer`].
#[derive(Clone, Debug)]
pub struct RequestMetricsLayer(RequestMetrics);

impl<S> tower::Layer<S> for RequestMetricsLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// A client service whose requests [`RequestMetrics`] counts and times.
#[derive(Clone, Debug)]
pub struct Measured<S> {
    inner: S,
    metrics: RequestMetrics,
}

impl<S, B, R> tower::Service<http::Request<B>> for Measured<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let info = request_info(request.method(), request.uri());
        let metrics = self.metrics.clone();
        // A duration for a metric is a monotonic measurement, not a decision input: no Clock.
        let start = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let status = result.as_ref().ok().map(|r| r.status().as_u16());
            metrics.record(&info, status, start.elapsed());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use prometheus_client::encoding::text::encode;
    use tower::{Layer as _, ServiceExt as _};

    fn info(method: http::Method, uri: &str) -> (String, String) {
        let info = request_info(&method, &uri.parse().unwrap());
        (info.verb.to_owned(), info.resource)
    }

    #[test]
    fn requests_are_named_as_the_api_server_names_them() {
        use http::Method as M;
        let cases = [
            (M::GET, "/api/v1/namespaces/shop/pods", "list", "pods"),
            (
                M::GET,
                "/api/v1/pods?watch=true&resourceVersion=5",
                "watch",
                "pods",
            ),
            (M::GET, "/api/v1/namespaces/shop/pods/web-0", "get", "pods"),
            (
                M::PATCH,
                "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web?fieldManager=ebb",
                "patch",
                "horizontalpodautoscalers",
            ),
            (
                M::PUT,
                "/apis/apps/v1/namespaces/db/statefulsets/pg/scale",
                "update",
                "statefulsets/scale",
            ),
            (
                M::PATCH,
                "/apis/scaler.udaan.io/v1/namespaces/shop/servicescalers/web/status",
                "patch",
                "servicescalers/status",
            ),
            (
                M::POST,
                "/api/v1/namespaces/shop/events",
                "create",
                "events",
            ),
            (
                M::DELETE,
                "/apis/batch/v1/namespaces/db/jobs/hook-1",
                "delete",
                "jobs",
            ),
            (
                M::DELETE,
                "/apis/batch/v1/namespaces/db/jobs",
                "deletecollection",
                "jobs",
            ),
            (M::GET, "/api/v1/nodes/w1", "get", "nodes"),
            (M::GET, "/api/v1/namespaces", "list", "namespaces"),
            (M::GET, "/api/v1/namespaces/shop", "get", "namespaces"),
            (
                M::PUT,
                "/api/v1/namespaces/shop/status",
                "update",
                "namespaces/status",
            ),
            (
                M::PUT,
                "/api/v1/namespaces/shop/finalize",
                "update",
                "namespaces/finalize",
            ),
            (
                M::POST,
                "/apis/authentication.k8s.io/v1/tokenreviews",
                "create",
                "tokenreviews",
            ),
            (M::GET, "/version", "get", ""),
            (M::GET, "/readyz", "get", ""),
            (M::GET, "/apis/apps/v1", "get", ""),
        ];
        for (method, uri, verb, resource) in cases {
            assert_eq!(
                info(method, uri),
                (verb.to_owned(), resource.to_owned()),
                "{uri}"
            );
        }
    }

    #[tokio::test]
    async fn every_request_is_counted_and_all_but_watches_are_timed() {
        let metrics = RequestMetrics::new();
        let mut registry = Registry::default();
        metrics.register(registry.sub_registry_with_prefix("ebb_test"));
        let server = tower::service_fn(|request: http::Request<()>| async move {
            if request.uri().path() == "/api/v1/nodes/gone" {
                return Err("connection refused");
            }
            let status = if request.uri().path().ends_with("/missing") {
                404
            } else {
                200
            };
            Ok(http::Response::builder().status(status).body(()).unwrap())
        });
        let client = metrics.layer().layer(server);
        for uri in [
            "/api/v1/nodes",
            "/api/v1/nodes?watch=true",
            "/api/v1/nodes/missing",
            "/api/v1/nodes/gone",
        ] {
            let request = http::Request::get(uri).body(()).unwrap();
            let _ = client.clone().oneshot(request).await;
        }
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            r#"ebb_test_api_requests_total{verb="list",resource="nodes",code="200"} 1"#,
            r#"ebb_test_api_requests_total{verb="watch",resource="nodes",code="200"} 1"#,
            r#"ebb_test_api_requests_total{verb="get",resource="nodes",code="404"} 1"#,
            r#"ebb_test_api_requests_total{verb="get",resource="nodes",code="error"} 1"#,
            r#"ebb_test_api_request_duration_seconds_count{verb="list"} 1"#,
            r#"ebb_test_api_request_duration_seconds_count{verb="get"} 2"#,
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        assert!(
            !text.contains(r#"duration_seconds_count{verb="watch"}"#),
            "{text}"
        );
    }
}
