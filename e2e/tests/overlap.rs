//! Two installs of one controller whose scopes overlap, against kube-apiserver with the chart's
//! RBAC: the newer stands down (writes nothing, its `leader` gauge reads 0, its
//! `overlapping_installs` gauge 1) while the older runs, and takes over once the older stops.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::rbac;
use ebb_e2e::{Controller, Setup, cluster, eventually};

const CHART: &str = "service-scaler";
const LEADER: &str = "ebb_service_scaler_leader";
const OVERLAPPING: &str = "ebb_service_scaler_overlapping_installs";

fn gauge(controller: &Controller, name: &str) -> Option<f64> {
    controller.metric(name, &[]).ok()
}

async fn reaches(controller: &Controller, name: &str, want: f64, within: Duration) {
    let got = eventually(within, || async {
        gauge(controller, name).filter(|v| *v == want)
    })
    .await;
    if let Err(e) = got {
        panic!(
            "{} {name} never read {want}: {e}\n{}",
            controller.pod_name,
            controller.log_tail()
        );
    }
}

#[tokio::test]
async fn the_newer_of_two_overlapping_installs_stands_down_until_the_older_stops() {
    // Install A watches its namespace; install B (another release, another Lease) the same one.
    let a = Setup::new(CHART, "e2e-ovl", true, &[]).await.unwrap();
    let ns = a.namespace.clone();
    let b_release = format!("{}-b", a.identity.release);
    let watch = format!("watchNamespaces[0]={ns}");
    let b = rbac::install(
        cluster(),
        &a.admin,
        CHART,
        &b_release,
        &ns,
        &[watch.as_str()],
    )
    .await
    .unwrap();
    let scope = format!("--namespace={ns}");
    let lease_a = format!("--lease-name={}", a.identity.release);
    let lease_b = format!("--lease-name={b_release}");

    let older = Controller::ready(CHART, &a.identity, "ovl-a", &[&scope, &lease_a]).await;
    reaches(&older, LEADER, 1.0, Duration::from_secs(30)).await;
    let newer = Controller::ready(CHART, &b, "ovl-b", &[&scope, &lease_b]).await;
    // B holds its own Lease, but an older install manages the same namespace: B writes nothing.
    reaches(&newer, OVERLAPPING, 1.0, Duration::from_secs(40)).await;
    reaches(&newer, LEADER, 0.0, Duration::from_secs(5)).await;
    // Each Lease carries its install's scope, under the controller's label.
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(a.admin.clone(), &ns);
    let lease = leases.get(&a.identity.release).await.unwrap();
    let labels = lease.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("scaling.ebb.dev/controller").map(String::as_str),
        Some(CHART)
    );
    let published = lease.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        published.get("scaling.ebb.dev/scope"),
        Some(&format!("{{\"namespaces\":[\"{ns}\"]}}")),
        "{published:?}"
    );
    // A sees B at its next look, and goes on writing.
    reaches(&older, OVERLAPPING, 1.0, Duration::from_secs(40)).await;
    assert_eq!(gauge(&older, LEADER), Some(1.0));

    // A stops (its Lease released): B takes over at its next look.
    older.stop().await;
    reaches(&newer, LEADER, 1.0, Duration::from_secs(40)).await;
    assert_eq!(gauge(&newer, OVERLAPPING), Some(0.0));
    newer.stop().await;
}
