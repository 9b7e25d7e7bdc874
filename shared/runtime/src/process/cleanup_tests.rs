#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::{FakeApi, Matcher, RecordedRequest};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::*;

const NS: &str = "ebb-system";
const DEPLOYMENT: &str = "ebb-ctl";

/// The controller's Deployment with two replicas, selecting its pods by the charts' labels.
fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NS},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {
                "app.kubernetes.io/name": "ctl", "app.kubernetes.io/instance": "ebb",
            }},
        },
    })
}

/// A pod of the controller's Deployment, running, with the default grace period.
fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {
            "app.kubernetes.io/name": "ctl", "app.kubernetes.io/instance": "ebb",
            "app.kubernetes.io/component": "controller",
        }},
        "spec": {
            "containers": [{"name": "ctl", "image": "ctl"}],
            "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": "Running"},
    })
}

/// `pod` being deleted: a deletionTimestamp and the grace period it was given.
fn terminating(name: &str, grace: i64) -> Value {
    let mut pod = pod(name);
    pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:30Z");
    pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    pod
}

fn with_deployment(pods: &[Value]) -> FakeApi {
    let fake = FakeApi::new();
    fake.insert(deployment());
    for pod in pods {
        fake.insert(pod);
    }
    fake
}

/// `stop_deployment` as `cleanup` runs it, in a task, so a test can look while it waits.
fn stop(fake: &FakeApi, dry_run: bool) -> JoinHandle<Result<(), CleanupError>> {
    let client = fake.client();
    tokio::spawn(async move { stop_deployment(&client, NS, DEPLOYMENT, dry_run).await })
}

fn pod_lists(fake: &FakeApi) -> Vec<RecordedRequest> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path == format!("/api/v1/namespaces/{NS}/pods"))
        .collect()
}

fn replicas(fake: &FakeApi) -> Option<i32> {
    let deployment: Deployment = fake.get(NS, DEPLOYMENT).unwrap();
    deployment.spec.and_then(|s| s.replicas)
}

#[tokio::test(start_paused = true)]
async fn stopping_waits_until_the_last_pod_is_gone() {
    let fake = with_deployment(&[pod("ebb-ctl-a"), terminating("ebb-ctl-b", 30)]);
    let stopping = stop(&fake, false);

    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(replicas(&fake), Some(0), "scaled to 0 first");
    assert!(!stopping.is_finished(), "two pods are left");
    fake.remove::<Pod>(NS, "ebb-ctl-a");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !stopping.is_finished(),
        "a terminating pod still runs a replica that could take the Lease"
    );

    fake.remove::<Pod>(NS, "ebb-ctl-b");
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), stopping)
        .await
        .expect("done once no pod is left")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() <= PODS_POLL, "at the next look");
    let lists = pod_lists(&fake);
    assert!(
        lists.len() > 10,
        "it looked again and again: {}",
        lists.len()
    );
    assert!(lists.iter().all(|r| !r.is_watch()));
    for list in &lists {
        let mut selector: Vec<&str> = list
            .query_param("labelSelector")
            .unwrap_or_default()
            .split(',')
            .collect();
        selector.sort_unstable();
        assert_eq!(
            selector,
            [
                "app.kubernetes.io/instance=ebb",
                "app.kubernetes.io/name=ctl"
            ],
            "the Deployment's selector, from its scale"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn stopping_a_deployment_without_pods_returns_at_once() {
    let fake = with_deployment(&[]);
    stop(&fake, false).await.unwrap().unwrap();
    assert_eq!(replicas(&fake), Some(0));
    assert_eq!(pod_lists(&fake).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn only_the_deployments_running_pods_are_waited_for() {
    let mut other = pod("web-1");
    other["metadata"]["labels"] = json!({"app.kubernetes.io/name": "web"});
    let mut elsewhere = pod("ebb-ctl-x");
    elsewhere["metadata"]["namespace"] = json!("other");
    let mut evicted = pod("ebb-ctl-evicted");
    evicted["status"] = json!({"phase": "Failed", "reason": "Evicted"});
    let mut done = pod("ebb-ctl-done");
    done["status"] = json!({"phase": "Succeeded"});
    let fake = with_deployment(&[other, elsewhere, evicted, done]);
    tokio::time::timeout(Duration::from_secs(1), stop(&fake, false))
        .await
        .expect("no pod of the Deployment runs")
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn pods_still_there_after_the_bound_are_named_in_the_error() {
    // The longest grace period of the pods seen (here 90 s, given at deletion) plus the margin.
    let fake = with_deployment(&[pod("ebb-ctl-a"), terminating("ebb-ctl-b", 90)]);
    let started = Instant::now();
    let stopping = stop(&fake, false);
    tokio::time::sleep(Duration::from_secs(90) + PODS_GONE_MARGIN - Duration::from_secs(1)).await;
    assert!(!stopping.is_finished(), "still within the bound");
    let error = stopping.await.unwrap().unwrap_err();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(90) + PODS_GONE_MARGIN
            && waited <= Duration::from_secs(90) + PODS_GONE_MARGIN + PODS_POLL,
        "{waited:?}"
    );
    let CleanupError::PodsLeft {
        namespace,
        name,
        pods,
        seconds,
    } = &error
    else {
        panic!("not PodsLeft: {error}");
    };
    assert_eq!((namespace.as_str(), name.as_str()), (NS, DEPLOYMENT));
    assert_eq!(pods, &["ebb-ctl-a", "ebb-ctl-b"]);
    assert_eq!(*seconds, 120);
    let message = error.to_string();
    assert!(
        message.contains("Deployment ebb-system/ebb-ctl")
            && message.contains("ebb-ctl-a, ebb-ctl-b"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_neither_scales_nor_waits() {
    let fake = with_deployment(&[pod("ebb-ctl-a")]);
    stop(&fake, true).await.unwrap().unwrap();
    assert_eq!(replicas(&fake), Some(2));
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
}

#[tokio::test(start_paused = true)]
async fn a_failed_list_stops_cleanup_with_the_deployment_named() {
    let fake = with_deployment(&[pod("ebb-ctl-a")]);
    fake.fail_next(Matcher::get("/pods"), 403);
    let error = stop(&fake, false).await.unwrap().unwrap_err();
    assert!(
        matches!(&error, CleanupError::ListPods { name, .. } if name == DEPLOYMENT),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_scale_without_a_selector_is_an_error_not_a_wait_for_every_pod() {
    let fake = FakeApi::new();
    let mut no_selector = deployment();
    no_selector["spec"]
        .as_object_mut()
        .unwrap()
        .remove("selector");
    fake.insert(no_selector);
    fake.insert(pod("unrelated"));
    let error = stop(&fake, false).await.unwrap().unwrap_err();
    assert!(
        matches!(error, CleanupError::NoPodSelector { .. }),
        "{error}"
    );
    assert!(pod_lists(&fake).is_empty());
}

#[test]
fn the_bound_is_the_longest_grace_period_plus_the_margin() {
    let parse = |v: Value| serde_json::from_value::<Pod>(v).unwrap();
    let mut unset = pod("a");
    unset["spec"]
        .as_object_mut()
        .unwrap()
        .remove("terminationGracePeriodSeconds");
    let mut long = pod("b");
    long["spec"]["terminationGracePeriodSeconds"] = json!(120);
    let (unset, long, quick) = (parse(unset), parse(long), parse(terminating("c", 5)));
    let secs = |s| PODS_GONE_MARGIN + Duration::from_secs(s);
    assert_eq!(wait_bound(&[&unset]), secs(30), "the API server's default");
    assert_eq!(wait_bound(&[&unset, &long, &quick]), secs(120));
    assert_eq!(
        wait_bound(&[&quick]),
        secs(5),
        "a terminating pod's own grace period wins over its spec's"
    );
    let mut negative = parse(pod("d"));
    negative.metadata.deletion_grace_period_seconds = Some(-1);
    assert_eq!(wait_bound(&[&negative]), secs(0));
}
