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
/// every scrape still answers, with the last-contact series `EbbApiUnreachable` reads growing old,
/// and the chart's rule (its silence cut to 5 s) fires on the series as scraped (promtool); a token
/// never reviewed before gets an error meanwhile, not a verdict. Back, the server is asked again.
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
    let start = jiff::Timestamp::now().as_second();
    let contact = "ebb_service_scaler_api_last_contact_timestamp_seconds";
    // Twice the lifetime and more: every scrape of the known caller answers; one a second is
    // kept, as Prometheus would scrape it.
    let mut scraped = Vec::new();
    while down.elapsed() < Duration::from_secs(8) {
        let (status, body) = scrape(&controller, Some(&scraper));
        assert_eq!(
            status,
            200,
            "{:?} into the outage: {body}\n{}",
            down.elapsed(),
            controller.log_tail()
        );
        let last: f64 = body
            .lines()
            .find_map(|l| {
                l.strip_prefix(contact)?
                    .split_whitespace()
                    .last()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no {contact}: {body}"));
        scraped.push(last - start as f64);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    unreachable_fires_on(&ns, &scraped);
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

/// `EbbApiUnreachable`, as the chart renders it (its silence cut to 5 s and its `for` to 0 for
/// the test), fires on `scraped`: the last-contact series one scrape a second through the
/// outage, seconds from its start (promtool's clock starts at 0). Checked by promtool.
fn unreachable_fires_on(namespace: &str, scraped: &[f64]) {
    use std::process::Command;
    let rendered = Command::new(ebb_e2e::rbac::helm())
        .args(["template", "ebb"])
        .arg(ebb_e2e::rbac::chart_dir("service-scaler").expect("the chart's dependency builds"))
        .args([
            "-n",
            namespace,
            "--show-only",
            "templates/prometheusrule.yaml",
        ])
        .args(["--set", "prometheusRule.enabled=true"])
        .args([
            "--set",
            "prometheusRule.alerts.apiUnreachable.silenceSeconds=5",
        ])
        .args(["--set", "prometheusRule.alerts.apiUnreachable.for=0s"])
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let rule: serde_json::Value =
        serde_saphyr::from_str(&String::from_utf8(rendered.stdout).unwrap()).unwrap();
    let spec = rule["spec"].clone();
    let alert = spec["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["alert"] == "EbbApiUnreachable")
        .unwrap()
        .clone();
    let pod = "mout-0";
    let annotations: serde_json::Map<String, serde_json::Value> = alert["annotations"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                json!(v.as_str().unwrap().replace("{{ $labels.pod }}", pod)),
            )
        })
        .collect();
    let values: Vec<String> = scraped.iter().map(|v| format!("{v}")).collect();
    let end = scraped.len() - 1;
    let test = json!({
        "rule_files": ["rules.json"],
        "evaluation_interval": "1s",
        "tests": [{
            "interval": "1s",
            "input_series": [{
                "series": format!(
                    "ebb_service_scaler_api_last_contact_timestamp_seconds{{namespace=\"{namespace}\", pod=\"{pod}\"}}"
                ),
                "values": values.join(" "),
            }],
            "alert_rule_test": [{
                "eval_time": format!("{end}s"),
                "alertname": "EbbApiUnreachable",
                "exp_alerts": [{
                    "exp_labels": {"severity": "critical", "namespace": namespace, "pod": pod},
                    "exp_annotations": annotations,
                }],
            }],
        }],
    });
    let dir = ebb_e2e::work_dir().join(format!("{namespace}-rules"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rules.json"), spec.to_string()).unwrap();
    std::fs::write(dir.join("test.json"), test.to_string()).unwrap();
    let promtool = Command::new(ebb_e2e::repo_root().join(".ci/install-promtool"))
        .output()
        .unwrap();
    assert!(
        promtool.status.success(),
        "{}",
        String::from_utf8_lossy(&promtool.stderr)
    );
    let promtool = String::from_utf8(promtool.stdout).unwrap();
    let run = Command::new(promtool.trim())
        .args(["test", "rules", "test.json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "EbbApiUnreachable did not fire on the scraped series {scraped:?}:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}
