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

/// A namespaced setup of service-scaler with authenticated metrics (the chart's RBAC for them)
/// and a scraper, bound to the chart's metrics-reader ClusterRole as a Prometheus would be:
/// the setup, the scraper's token and the controller's own (valid, but not allowed /metrics).
async fn with_scraper(prefix: &str) -> (Setup, String, String) {
    let setup = Setup::new(
        CHART,
        prefix,
        true,
        // The chart asks for a certificate with authenticated metrics; these tests run the binary
        // with their own flags and only need the chart's RBAC, so the Secret never has to exist.
        &[
            "metrics.authenticated=true",
            "metrics.tls.secretName=unused",
        ],
    )
    .await
    .unwrap();
    let ns = setup.namespace.clone();
    let release = setup.identity.release.clone();
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
    (setup, scraper, controller_token)
}

#[tokio::test]
async fn metrics_answer_only_callers_the_api_server_allows() {
    let (setup, scraper, controller_token) = with_scraper("e2e-mauth").await;
    let ns = setup.namespace.clone();
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

/// Authenticated metrics through an API outage (#45): the scraper's verdict outlives its
/// lifetime (3 s here, `--metrics-auth-cache-ttl`) while the API server is down for longer, so
/// every scrape still answers, with the last-contact series `EbbApiUnreachable` reads growing old;
/// a token never reviewed before gets an error meanwhile, not a verdict. Back, the server is asked
/// again.
#[tokio::test]
async fn authenticated_metrics_stay_readable_through_an_api_outage() {
    use ebb_e2e::apiserver::ApiServer;
    use std::time::Duration;

    let (setup, scraper, stranger) = with_scraper("e2e-mout").await;
    let ns = setup.namespace.clone();

    // The controller talks to an API server of its own, which the test can stop.
    let mut server = ApiServer::start(ebb_e2e::cluster()).await.unwrap();
    let kubeconfig = server.retarget(&setup.identity.kubeconfig).unwrap();
    let watch = format!("--namespace={ns}");
    let mut controller = Controller::start_with(
        "service-scaler",
        &setup.identity,
        &kubeconfig,
        "mout-0",
        &[
            "--leader-election=false",
            "--metrics-auth",
            "--metrics-auth-cache-ttl=3",
            &watch,
        ],
    )
    .unwrap();
    controller
        .wait_ready(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(scrape(&controller, Some(&scraper)).0, 200);

    server.kill().unwrap();
    let down = std::time::Instant::now();
    let contact = "ebb_service_scaler_api_last_contact_timestamp_seconds";
    // Twice the lifetime and more: every scrape of the known caller answers.
    while down.elapsed() < Duration::from_secs(8) {
        let (status, body) = scrape(&controller, Some(&scraper));
        assert_eq!(
            status,
            200,
            "{:?} into the outage: {body}\n{}",
            down.elapsed(),
            controller.log_tail()
        );
        assert!(body.contains(contact), "{body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (_, body) = scrape(&controller, Some(&scraper));
    let last: f64 = body
        .lines()
        .find_map(|l| {
            l.strip_prefix(contact)?
                .split_whitespace()
                .last()?
                .parse()
                .ok()
        })
        .unwrap();
    let age = jiff::Timestamp::now().as_second() as f64 - last;
    assert!(
        age >= 7.0,
        "the last contact is {age} s old, after 8 s of outage"
    );
    let (status, _) = scrape(&controller, Some(&stranger));
    assert_eq!(
        status, 500,
        "a token never reviewed cannot be checked meanwhile"
    );

    server.start_again().await.unwrap();
    let (status, body) = scrape(&controller, Some(&stranger));
    assert_eq!(
        status, 403,
        "reviewed again once the server is back: {body}"
    );
    assert_eq!(scrape(&controller, Some(&scraper)).0, 200);
    controller.stop().await;
}
