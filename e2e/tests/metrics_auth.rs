//! `--metrics-auth` against kube-apiserver: `/metrics` answers only a caller whose token the API
//! server authenticates and allows `get /metrics`, with the chart's RBAC (the controller's
//! TokenReview/SubjectAccessReview rights, and the `-metrics-reader` ClusterRole a scraper is
//! bound to). The probes stay open.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_e2e::rbac::{apply, token};
use ebb_e2e::{Controller, Setup};
use serde_json::json;

const CHART: &str = "service-scaler";

fn scrape(controller: &Controller, bearer: Option<&str>) -> (u16, String) {
    controller.get_as("/metrics", bearer).unwrap()
}

#[tokio::test]
async fn metrics_answer_only_callers_the_api_server_allows() {
    let setup = Setup::new(
        CHART,
        "e2e-mauth",
        true,
        // The chart asks for a certificate with authenticated metrics; this test runs the binary
        // with its own flags and only needs the chart's RBAC, so the Secret never has to exist.
        &[
            "metrics.authenticated=true",
            "metrics.tls.secretName=unused",
        ],
    )
    .await
    .unwrap();
    let ns = setup.namespace.clone();
    let release = setup.identity.release.clone();
    // A scraper, bound to the chart's metrics-reader ClusterRole as a Prometheus would be.
    apply(
        &setup.admin,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "prometheus", "namespace": ns}}),
    )
    .await
    .unwrap();
    apply(
        &setup.admin,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("{release}-prometheus")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": format!("{release}-metrics-reader")},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": ns}]}),
    )
    .await
    .unwrap();
    let scraper = token(&setup.admin, &ns, "prometheus").await.unwrap();
    let controller_token = token(&setup.admin, &ns, &release).await.unwrap();

    let watch = format!("--namespace={ns}");
    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "mauth-0",
        &["--leader-election=false", "--metrics-auth", &watch],
    )
    .await;
    assert_eq!(scrape(&controller, None).0, 401, "no token");
    assert_eq!(scrape(&controller, Some("not-a-token")).0, 401);
    let (status, body) = scrape(&controller, Some(&controller_token));
    assert_eq!(status, 403, "valid, but not allowed /metrics: {body}");
    let (status, body) = scrape(&controller, Some(&scraper));
    assert_eq!(status, 200, "{body}\n{}", controller.log_tail());
    assert!(body.contains("ebb_service_scaler_build_info"), "{body}");
    assert_eq!(controller.health().unwrap(), (200, 200), "probes stay open");
    controller.stop().await;
}
