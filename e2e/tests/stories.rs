//! The seed stories end to end on a real node: each controller installed by its chart from the
//! images built here, next to the real HPA, Deployment, StatefulSet and Job controllers, with
//! real pods.
//!
//! - seed 001/004: a ServiceScaler window with `leadTime` raises an HPA's bounds; the HPA
//!   controller scales the Deployment, whose pods run before the window opens and go after it
//!   closes; the kill switch and the pause annotation hold.
//! - seed 002: a ScaleDownSchedule keeps the cluster-autoscaler's scale-down-disabled annotation
//!   on the real Node outside its window and takes it off while the window is open.
//! - seed 003: an HPA drives a StackableScaler through `/scale`; the pre-scale hook runs as a Job
//!   pod before the StatefulSet shrinks from its highest ordinal; the admission webhook, reached
//!   through its Service, refuses a `/scale` write mid-operation; a failing hook ends in Failed
//!   and the retry annotation runs it again.
//! - seed 000: workshop-scaler scales a stock-Babylon WorkshopProvision once.
//! - #31: a hibernating ServiceScaler range takes a Deployment's pods away and brings them back.
//!
//! This binary has a node cluster of its own: the charts here watch their own namespace only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_crds::stackable::ScalerState;
use ebb_e2e::helm::{Release, a_node, busybox, pod_ready};
use ebb_e2e::rbac::{apply, resource};
use ebb_e2e::{Namespace, eventually, node_cluster, settle, tls, unique, work_dir};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// The running (not terminating) pods labelled `app=<app>`, and how many are Ready.
async fn pods(admin: &Client, ns: &str, app: &str) -> Option<(Vec<Pod>, usize)> {
    let api: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let list = api
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .ok()?;
    let live: Vec<Pod> = list
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let ready = live.iter().filter(|p| pod_ready(p)).count();
    Some((live, ready))
}

/// Waits until exactly `n` pods of `app` run and are Ready.
async fn until_ready(admin: &Client, ns: &str, app: &str, n: usize, timeout: Duration) -> Vec<Pod> {
    eventually(timeout, || async {
        pods(admin, ns, app)
            .await
            .filter(|(live, ready)| live.len() == n && *ready == n)
            .map(|(live, _)| live)
    })
    .await
    .unwrap_or_else(|e| panic!("{app}: not {n} Ready pods: {e}"))
}

/// Until `at` (plus `slack`), as a timeout from now.
fn until(at: Timestamp, slack: u64) -> Duration {
    std::time::Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or_default()
        + Duration::from_secs(slack)
}

/// Seed 001/004: a window with a lead time scales real pods before it opens and back after it
/// closes; the kill switch and the pause annotation on the HPA hold. Then, by the same release,
/// a hibernating range (#31).
#[tokio::test]
async fn service_scaler_window_runs_pods_before_it_opens_and_removes_them_after() {
    let cluster = node_cluster();
    let admin = cluster.client().await.unwrap();
    let ns = Namespace::create_restricted(&admin, "seed-001")
        .await
        .unwrap();
    let n = ns.name.as_str();
    let release = Release::new(cluster, "service-scaler", &unique("ss"), n);
    release
        // The chart's defaults but the scope: its cleanup hook runs on uninstall.
        .install(&[&format!("watchNamespaces[0]={n}")])
        .expect("helm install service-scaler");

    let app = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": n},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"terminationGracePeriodSeconds": 5,
                                       "containers": [busybox("web", None)]}}}
    });
    apply(&admin, &app).await.unwrap();
    until_ready(&admin, n, "web", 1, Duration::from_secs(60)).await;

    // The window: 3 pods from `edge` for 45 s; 1 outside. Stepped up over the 90 s before the
    // edge (leadTime), so the pods run when the window opens. The HPA has no metrics here (no
    // metrics-server): the controller then keeps the replicas within minReplicas..maxReplicas,
    // which is what the window moves.
    let edge = ebb_runtime::time::whole_second(Timestamp::now()) + SignedDuration::from_secs(100);
    let end = edge + SignedDuration::from_secs(45);
    let scaler = |min: i64, max: i64| {
        json!({
            "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
            "metadata": {"name": "web", "namespace": n},
            "spec": {
                "leadTime": "90s",
                "hpa": {"minReplicas": min, "maxReplicas": max, "targetCPUUtilization": 80},
                "timeRangeSpec": [{"kind": "ZonedDateTime", "from": edge.to_string(), "to": end.to_string(),
                                   "replicaSpec": {"hpa": {"minReplicas": 3, "maxReplicas": 3}}}]
            }
        })
    };
    apply(&admin, &scaler(1, 1)).await.unwrap();

    until_ready(&admin, n, "web", 3, until(edge, 30)).await;
    let running = Timestamp::now();
    println!(
        "figure: seed 001 three pods Running {:.1} s before the window's edge (leadTime 90s, HPA sync 5s)",
        edge.duration_since(running).as_secs_f64()
    );
    // The suite's own kube-controller-manager runs the HPA controller every 5 s (15 s upstream).
    if cluster.local {
        assert!(
            running <= edge,
            "the pods ran only {} after the edge",
            running - edge
        );
    }

    // A `helm upgrade` with a changed value while the window closes: the pod rolls and the
    // Lease moves to the new one across the edge, and the transition is still written once.
    let upgrade_at = end - SignedDuration::from_secs(3);
    tokio::time::sleep(until(upgrade_at, 0)).await;
    let upgraded = tokio::task::spawn_blocking({
        let (chart, name, ns) = (release.chart.clone(), release.name.clone(), n.to_owned());
        move || {
            Release::new(node_cluster(), &chart, &name, &ns)
                .upgrade(&[&format!("watchNamespaces[0]={ns}"), "logLevel=debug"])
        }
    });
    until_ready(&admin, n, "web", 1, until(end, 40)).await;
    let back = Timestamp::now();
    println!(
        "figure: seed 001 back to one pod {:.1} s after the window closed",
        back.duration_since(end).as_secs_f64()
    );
    upgraded
        .await
        .unwrap()
        .expect("helm upgrade across the edge");
    if let Some(log) = &cluster.audit_log {
        let deployment = release.deployment(&admin).await.unwrap();
        let account = deployment
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .service_account_name
            .unwrap();
        let user = format!("system:serviceaccount:{n}:{account}");
        let writes =
            ebb_e2e::audit::writes(log, &user, upgrade_at - SignedDuration::from_secs(2)).unwrap();
        let described: Vec<String> = writes.iter().map(ebb_e2e::audit::Entry::describe).collect();
        let mut per_object = std::collections::BTreeMap::<String, usize>::new();
        for entry in &writes {
            let o = entry.object_ref.clone().unwrap_or_default();
            if o.resource == "events" {
                continue;
            }
            *per_object
                .entry(format!(
                    "{}{:?} {}",
                    o.resource,
                    o.subresource,
                    o.name.unwrap_or_default()
                ))
                .or_default() += 1;
        }
        println!("seed 001: writes across the upgrade and the edge: {described:#?}");
        assert!(
            per_object.values().all(|count| *count == 1),
            "one transition, one write per object, though the leader changed: {described:#?}"
        );
        assert!(
            per_object
                .keys()
                .any(|k| k.starts_with("horizontalpodautoscalers")),
            "the HPA was written for the edge: {described:#?}"
        );
    }

    // Kill switch: with managed=false on the HPA, a changed ServiceScaler reaches it no more.
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(admin.clone(), n);
    let annotate = |key: &'static str, value: Value| {
        let hpas = hpas.clone();
        async move {
            hpas.patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {key: value}}})),
            )
            .await
            .unwrap();
        }
    };
    let bounds = |hpa: &HorizontalPodAutoscaler| {
        let spec = hpa.spec.as_ref().unwrap();
        (spec.min_replicas, spec.max_replicas)
    };
    let held = |why: &'static str| {
        let hpas = hpas.clone();
        let admin = admin.clone();
        async move {
            settle(Duration::from_secs(10), || async {
                let hpa = hpas.get("web").await?;
                anyhow::ensure!(bounds(&hpa) == (Some(1), 1), "{why}: {:?}", bounds(&hpa));
                let (live, _) = pods(&admin, n, "web").await.unwrap_or_default();
                anyhow::ensure!(live.len() == 1, "{why}: {} pods", live.len());
                Ok(())
            })
            .await
            .unwrap();
        }
    };
    annotate("service-scaler.kubernetes.io/managed", json!("false")).await;
    apply(&admin, &scaler(2, 2)).await.unwrap();
    held("the kill switch did not hold").await;

    // Pause: the same with the kill switch off and the pause annotation on.
    annotate("scaling.ebb.dev/paused", json!("true")).await;
    annotate("service-scaler.kubernetes.io/managed", Value::Null).await;
    held("the pause did not hold").await;

    // Unpaused, the change lands and the HPA controller runs a second pod.
    annotate("scaling.ebb.dev/paused", Value::Null).await;
    until_ready(&admin, n, "web", 2, Duration::from_secs(45)).await;

    service_scaler_hibernation_takes_the_pods_away_and_brings_them_back(&admin, n).await;
    let asleep = asleep_at_uninstall(&admin, n).await;

    // Uninstalled with the chart's default cleanup hook: everything ebb put in force is given
    // back (docs/uninstall.md), and ebb's finalizer is off the ServiceScaler.
    release.uninstall().unwrap();
    given_back_after_uninstall(&admin, n, asleep).await;
    let scalers: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(&admin, "scaler.udaan.io", "v1", "ServiceScaler")
            .await
            .unwrap(),
    );
    let left = scalers.get("web").await.unwrap();
    assert!(
        !left
            .finalizers()
            .iter()
            .any(|f| f.starts_with("scaling.ebb.dev/")),
        "ebb's finalizer outlived the uninstall: {:?}",
        left.finalizers()
    );
    assert_eq!(bounds(&hpas.get("web").await.unwrap()), (Some(2), 2));
    ns.delete(&admin).await.unwrap();
}

/// Before seed 001's uninstall (#45): a Deployment hibernated by a ServiceScaler ("dozing", 2
/// replicas) and one hibernated as a FleetSchedule's member ("napping", 1 replica; its HPA's own
/// bounds 1..3 under the fleet's record), both at 0 when `helm uninstall` runs. Returns when both
/// are asleep, with the time it took.
async fn asleep_at_uninstall(admin: &Client, n: &str) -> Duration {
    let started = std::time::Instant::now();
    let now = Timestamp::now();
    let range = json!([{"kind": "ZonedDateTime",
        "from": (now - SignedDuration::from_mins(1)).to_string(),
        "to": (now + SignedDuration::from_hours(1)).to_string(),
        "replicaSpec": {"hibernate": true}}]);
    for (name, replicas) in [("dozing", 2), ("napping", 1)] {
        let app = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": n},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 5,
                                           "containers": [busybox(name, None)]}}}
        });
        apply(admin, &app).await.unwrap();
    }
    apply(
        admin,
        &json!({
            "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
            "metadata": {"name": "dozing", "namespace": n},
            "spec": {"leadTime": "0s", "hpa": {"minReplicas": 2, "maxReplicas": 2},
                     "timeRangeSpec": range}
        }),
    )
    .await
    .unwrap();
    apply(
        admin,
        &json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "napping", "namespace": n, "labels": {"fleet": "nights"}},
            "spec": {"minReplicas": 1, "maxReplicas": 3,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "napping"}}
        }),
    )
    .await
    .unwrap();
    apply(
        admin,
        &json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
            "metadata": {"name": "nights", "namespace": n},
            "spec": {"selector": {"matchLabels": {"fleet": "nights"}}, "leadTime": "0s",
                     "timeRangeSpec": range}
        }),
    )
    .await
    .unwrap();
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(admin, "apps", "v1", "Deployment").await.unwrap(),
    );
    for name in ["dozing", "napping"] {
        eventually(Duration::from_secs(30), || async {
            let d = deployments.get(name).await.ok()?;
            (d.data.pointer("/spec/replicas") == Some(&json!(0))).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{name} not hibernated: {e}"));
    }
    // The ServiceScaler's count is in the install's hibernation ledger too (the uninstall must
    // take that away as well).
    let key = format!("{n}.dozing");
    let ledgers = hibernation_ledgers(admin, n).await;
    assert!(
        ledgers
            .iter()
            .any(|m| m.data.as_ref().is_some_and(|d| d.contains_key(&key))),
        "no hibernation ledger holds {key}: {ledgers:?}"
    );
    started.elapsed()
}

/// After an uninstall: no Lease is left in the release's namespace `n` (the cleanup hook deletes
/// the controller's).
async fn no_lease_left(admin: &Client, n: &str) {
    let leases: Api<Lease> = Api::namespaced(admin.clone(), n);
    let leases: Vec<String> = leases
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert!(
        leases.is_empty(),
        "Leases outlived the uninstall: {leases:?}"
    );
}

/// The ConfigMaps of namespace `n` that are a service-scaler install's hibernation ledger.
async fn hibernation_ledgers(admin: &Client, n: &str) -> Vec<ConfigMap> {
    let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), n);
    let listed = maps.list(&ListParams::default()).await.unwrap().items;
    listed
        .into_iter()
        .filter(|m| m.name_any().ends_with("-hibernation"))
        .collect()
}

/// After seed 001's uninstall: both workloads have their replicas back, the fleet member's HPA
/// its own bounds without ebb's annotations, the hibernating ServiceScaler's HPA its defaults,
/// no ServiceScaler keeps ebb's finalizer, and nothing of the release is left in its namespace
/// (its Lease, its hibernation ledger).
async fn given_back_after_uninstall(admin: &Client, n: &str, asleep: Duration) {
    no_lease_left(admin, n).await;
    let ledgers = hibernation_ledgers(admin, n).await;
    assert!(
        ledgers.is_empty(),
        "the hibernation ledger outlived the uninstall: {ledgers:?}"
    );
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(admin, "apps", "v1", "Deployment").await.unwrap(),
    );
    for (name, replicas) in [("dozing", 2), ("napping", 1)] {
        let d = deployments.get(name).await.unwrap();
        assert_eq!(
            d.data.pointer("/spec/replicas"),
            Some(&json!(replicas)),
            "{name} was not given its replicas back"
        );
    }
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(admin.clone(), n);
    let member = hpas.get("napping").await.unwrap();
    let spec = member.spec.clone().unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(1), 3));
    assert!(
        !member
            .annotations()
            .keys()
            .any(|k| k.starts_with("scaling.ebb.dev/")),
        "ebb's annotations outlived the uninstall: {:?}",
        member.annotations()
    );
    let dozing = hpas.get("dozing").await.unwrap();
    let spec = dozing.spec.clone().unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 2));
    println!(
        "figure: uninstall give-back: both workloads asleep {:.1} s after their schedules were applied",
        asleep.as_secs_f64()
    );
}

/// Hibernation (#31): a range with `replicaSpec.hibernate` takes a Deployment's real pods away
/// through `/scale`; the real HPA controller leaves the target at 0 (it does not scale a target
/// that runs no replicas); at the range's end the pods come back and the HPA resumes.
///
/// Run inside seed 001's story, by its release: the suite's stories share one node cluster, and
/// a second service-scaler release would have to own the same CRD.
async fn service_scaler_hibernation_takes_the_pods_away_and_brings_them_back(
    admin: &Client,
    n: &str,
) {
    let admin = admin.clone();
    let app = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "sleepy", "namespace": n},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "sleepy"}},
                 "template": {"metadata": {"labels": {"app": "sleepy"}},
                              "spec": {"terminationGracePeriodSeconds": 5,
                                       "containers": [busybox("sleepy", None)]}}}
    });
    apply(&admin, &app).await.unwrap();
    until_ready(&admin, n, "sleepy", 2, Duration::from_secs(60)).await;

    // Asleep from `from` for 25 s. The HPA keeps 2 replicas outside (min = max, no metrics).
    let from = ebb_runtime::time::whole_second(Timestamp::now()) + SignedDuration::from_secs(8);
    let to = from + SignedDuration::from_secs(25);
    apply(
        &admin,
        &json!({
            "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
            "metadata": {"name": "sleepy", "namespace": n},
            "spec": {
                "leadTime": "0s",
                "hpa": {"minReplicas": 2, "maxReplicas": 2, "targetCPUUtilization": 80},
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sleepy"},
                "timeRangeSpec": [{"kind": "ZonedDateTime", "from": from.to_string(), "to": to.to_string(),
                                   "replicaSpec": {"hibernate": true}}]
            }
        }),
    )
    .await
    .unwrap();

    until_ready(&admin, n, "sleepy", 0, until(from, 45)).await;
    println!(
        "figure: hibernation: no pod left {:.1} s after the range began",
        Timestamp::now().duration_since(from).as_secs_f64()
    );
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(&admin, "apps", "v1", "Deployment").await.unwrap(),
    );
    // The HPA controller (syncing every 5 s here) leaves the target at 0.
    settle(Duration::from_secs(11), || async {
        let d = deployments.get("sleepy").await?;
        anyhow::ensure!(
            d.data.pointer("/spec/replicas") == Some(&json!(0)),
            "scaled up while hibernating: {:?}",
            d.data.pointer("/spec/replicas")
        );
        Ok(())
    })
    .await
    .unwrap();

    until_ready(&admin, n, "sleepy", 2, until(to, 60)).await;
    println!(
        "figure: hibernation: both pods Ready {:.1} s after the range ended",
        Timestamp::now().duration_since(to).as_secs_f64()
    );
    let scalers: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(&admin, "scaler.udaan.io", "v1", "ServiceScaler")
            .await
            .unwrap(),
    );
    let scaler = scalers.get("sleepy").await.unwrap();
    assert!(
        scaler.data.pointer("/status/hibernation").is_none(),
        "the record outlived the wake: {:?}",
        scaler.data.get("status")
    );
}

/// Seed 002: the node annotation that keeps the cluster-autoscaler from removing a node is on
/// the real Node outside the window and off while it is open.
#[tokio::test]
async fn scaledown_window_annotates_the_real_node_outside_its_window() {
    const DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
    let cluster = node_cluster();
    let admin = cluster.client().await.unwrap();
    let ns = Namespace::create_restricted(&admin, "seed-002")
        .await
        .unwrap();
    let release = Release::new(cluster, "scaledown-window", &unique("sdw"), &ns.name);
    release
        .install(&[
            "targets.clusterAutoscaler.enabled=false",
            "targets.nodeAnnotation.enabled=true",
            "clusterVersion.enabled=false",
        ])
        .expect("helm install scaledown-window");

    let story = unique("pool");
    let node = a_node(&admin).await.unwrap();
    let node = node.as_str();
    let nodes: Api<Node> = Api::all(admin.clone());
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"ebb.dev/story": story}}})),
        )
        .await
        .unwrap();
    // A window of one minute at the next whole minute at least 20 s away (cron's resolution).
    let open = ebb_e2e::whole_minute(Timestamp::now() + SignedDuration::from_secs(20))
        + SignedDuration::from_mins(1);
    let close = open + SignedDuration::from_mins(1);
    let schedule = story.clone();
    apply(
        &admin,
        &json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule",
            "metadata": {"name": schedule},
            "spec": {
                "target": {"nodeAnnotation": {"nodeSelector": {"matchLabels": {"ebb.dev/story": story}}}},
                "windows": [{"schedule": format!("{} * * *", ebb_e2e::cron_minute_hour(open)),
                             "duration": "1m", "timeZone": "UTC"}]
            }
        }),
    )
    .await
    .unwrap();
    let annotated = || async {
        let node = nodes.get(node).await.ok()?;
        Some(node.annotations().get(DISABLED).map(String::as_str) == Some("true"))
    };
    let reach = |want: bool, by: Timestamp, what: &'static str| async move {
        eventually(until(by, 10), || async {
            annotated().await.filter(|a| *a == want)
        })
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        Timestamp::now()
    };
    reach(true, Timestamp::now(), "annotated outside the window").await;
    assert!(
        Timestamp::now() < open,
        "the setup took past the window's start"
    );
    let released = reach(false, open, "released inside the window").await;
    println!(
        "figure: seed 002 the Node's annotation removed {} ms after the window opened",
        released.duration_since(open).as_millis()
    );
    assert!(released >= open, "released before the window opened");
    let kept = reach(true, close, "annotated again after the window").await;
    assert!(kept >= close, "annotated again before the window closed");

    // Uninstalled with the chart's default cleanup hook while the window is closed: the Node is
    // released, the schedule keeps no finalizer of ebb's, and the controller's Lease is gone.
    release.uninstall().unwrap();
    assert_eq!(
        annotated().await,
        Some(false),
        "the Node kept ebb's annotation"
    );
    no_lease_left(&admin, &ns.name).await;
    let schedules: Api<DynamicObject> = Api::all_with(
        admin.clone(),
        &resource(&admin, "scaling.ebb.dev", "v1alpha1", "ScaleDownSchedule")
            .await
            .unwrap(),
    );
    let left = schedules.get(&schedule).await.unwrap();
    assert!(left.finalizers().is_empty(), "{:?}", left.finalizers());

    // The Node is the cluster's: take the story's label and schedule away again.
    schedules
        .delete(&schedule, &Default::default())
        .await
        .unwrap();
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"ebb.dev/story": null}}})),
        )
        .await
        .unwrap();
    ns.delete(&admin).await.unwrap();
}

/// The scaler's stage, read as the controller reads it (both wire forms).
fn stage(scaler: &DynamicObject) -> Option<String> {
    serde_json::from_value::<ScalerState>(scaler.data["status"]["currentState"].clone())
        .ok()
        .map(|s| s.stage.as_str().to_owned())
}

/// Seed 003: the HPA controller drives a StackableScaler through `/scale`; the pre-scale hook
/// runs as a real Job pod, then the StatefulSet shrinks from its highest ordinal. The webhook,
/// reached through its Service, refuses `/scale` writes while the hook runs. A hook that exits 1
/// ends in Failed; the retry annotation runs it again.
#[tokio::test]
async fn stackable_scaler_runs_its_hook_as_a_pod_before_the_statefulset_shrinks() {
    let cluster = node_cluster();
    let admin = cluster.client().await.unwrap();
    let ns = Namespace::create_restricted(&admin, "seed-003")
        .await
        .unwrap();
    let n = ns.name.as_str();
    let release = Release::new(cluster, "stackable-scaler", &unique("sk"), n);
    let service = format!("{}-webhook", release.fullname());
    // The webhook's serving certificate in a Secret, as cert-manager would leave it.
    let cert = tls::serving_cert(
        &[
            format!("{service}.{n}.svc"),
            format!("{service}.{n}.svc.cluster.local"),
        ],
        &work_dir().join(format!("{n}-webhook-certs")),
    )
    .unwrap();
    let pem = |file: &str| std::fs::read_to_string(cert.dir.join(file)).unwrap();
    apply(
        &admin,
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "webhook-certs", "namespace": n},
                "stringData": {"tls.crt": pem("tls.crt"), "tls.key": pem("tls.key")}}),
    )
    .await
    .unwrap();
    release
        .install(&[
            &format!("watchNamespaces[0]={n}"),
            "webhook.enabled=true",
            "webhook.failurePolicy=Fail",
            "webhook.tls.secretName=webhook-certs",
            &format!("webhook.tls.caBundle={}", cert.ca_bundle()),
        ])
        .expect("helm install stackable-scaler with its webhook");

    // The workload: a real StatefulSet of three pods, and its scaler (owned by it, as
    // Stackable's operators create them), whose pre-scale hook is a script.
    let sts = apply(
        &admin,
        &json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "nifi-node-default", "namespace": n},
            "spec": {"replicas": 3, "serviceName": "nifi", "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "nifi"}},
                     "template": {"metadata": {"labels": {"app": "nifi"}},
                                  "spec": {"terminationGracePeriodSeconds": 5,
                                           "containers": [busybox("nifi", None)]}}}
        }),
    )
    .await
    .unwrap();
    until_ready(&admin, n, "nifi", 3, Duration::from_secs(60)).await;
    let scaler = |hook: &str| {
        json!({
            "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
            "metadata": {"name": "nifi", "namespace": n, "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "nifi-node-default",
                "uid": sts.uid().unwrap(), "controller": true}]},
            "spec": {"replicas": 3, "hooks": {"preScale": {"timeoutSeconds": 120, "template": {
                "spec": {"backoffLimit": 0, "template": {"spec": {"containers": [busybox("offload", Some(hook))]}}}}}}}
        })
    };
    apply(&admin, &scaler("echo offloading; sleep 4; echo done"))
        .await
        .unwrap();
    let scalers: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(
            &admin,
            "autoscaling.stackable.tech",
            "v1alpha1",
            "StackableScaler",
        )
        .await
        .unwrap(),
    );
    let wait_stage = |want: &'static str, timeout: u64| {
        let scalers = scalers.clone();
        async move {
            eventually(Duration::from_secs(timeout), || async {
                let s = scalers.get("nifi").await.ok()?;
                (stage(&s).as_deref() == Some(want)).then_some(s)
            })
            .await
            .unwrap_or_else(|e| panic!("never {want}: {e}"))
        }
    };
    wait_stage("Idle", 30).await;
    let jobs: Api<Job> = Api::namespaced(admin.clone(), n);

    // The HPA: 2 replicas at most. The HPA controller writes the scaler's /scale.
    let hpa = |replicas: i64| {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "nifi", "namespace": n},
            "spec": {"minReplicas": replicas, "maxReplicas": replicas,
                     "scaleTargetRef": {"apiVersion": "autoscaling.stackable.tech/v1alpha1",
                                        "kind": "StackableScaler", "name": "nifi"}}
        })
    };
    apply(&admin, &hpa(2)).await.unwrap();
    wait_stage("PreScaling", 30).await;

    // Mid-operation the API server asks the webhook, through its Service, and it refuses.
    let refused = scalers
        .patch_scale(
            "nifi",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect_err("a /scale write while the hook runs must be refused");
    let message = refused.to_string();
    assert!(
        message.contains("admission webhook") && message.contains("denied"),
        "refused by the webhook: {message}"
    );

    // The hook ran as a pod and succeeded; then the StatefulSet shrank from its highest ordinal.
    wait_stage("Idle", 90).await;
    let ran = jobs.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(ran.len(), 1, "one hook Job");
    assert_eq!(
        ran[0].status.as_ref().unwrap().succeeded,
        Some(1),
        "{:?}",
        ran[0].status
    );
    let left = until_ready(&admin, n, "nifi", 2, Duration::from_secs(60)).await;
    let mut names: Vec<String> = left.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["nifi-node-default-0", "nifi-node-default-1"]);

    // A hook that exits 1: Failed, and the StatefulSet keeps its pods.
    apply(&admin, &scaler("echo cannot offload; exit 1"))
        .await
        .unwrap();
    apply(&admin, &hpa(1)).await.unwrap();
    let failed = wait_stage("Failed", 90).await;
    println!(
        "seed 003: failed as expected: {}",
        failed.data["status"]["currentState"]
    );
    let job_names = || async {
        let list = jobs.list(&ListParams::default()).await.unwrap();
        list.items
            .into_iter()
            .map(|j| (j.name_any(), j.status.and_then(|s| s.succeeded)))
            .collect::<Vec<_>>()
    };
    let before_retry: Vec<String> = job_names()
        .await
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    settle(Duration::from_secs(5), || async {
        let (live, _) = pods(&admin, n, "nifi").await.unwrap_or_default();
        anyhow::ensure!(
            live.len() == 2,
            "a failed hook still scaled: {} pods",
            live.len()
        );
        Ok(())
    })
    .await
    .unwrap();

    // Fixed, and retried: the hook runs again (a new Job), and the scale-down goes through.
    apply(&admin, &scaler("echo offloading; exit 0"))
        .await
        .unwrap();
    scalers
        .patch(
            "nifi",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"autoscaling.stackable.tech/retry": "true"}}}),
            ),
        )
        .await
        .unwrap();
    wait_stage("Idle", 90).await;
    let left = until_ready(&admin, n, "nifi", 1, Duration::from_secs(60)).await;
    assert_eq!(left[0].name_any(), "nifi-node-default-0");
    let after_retry = job_names().await;
    assert!(
        after_retry
            .iter()
            .any(|(name, succeeded)| !before_retry.contains(name) && *succeeded == Some(1)),
        "the retry ran the hook again, as a new Job that succeeded: {before_retry:?} -> {after_retry:?}"
    );

    // A hook runs at most once (#45): the controller is scaled to 0 while the hook's Job runs;
    // the Job finishes and is deleted meanwhile. Back, the controller finds the start recorded
    // and the Job gone: it never creates it again, and the operation fails naming it.
    let known: Vec<String> = after_retry.into_iter().map(|(name, _)| name).collect();
    apply(&admin, &hpa(2)).await.unwrap();
    let lost = eventually(Duration::from_secs(30), || async {
        let (names, _): (Vec<String>, Vec<_>) = job_names().await.into_iter().unzip();
        names.into_iter().find(|name| !known.contains(name))
    })
    .await
    .expect("the scale-up's hook Job starts");
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(admin.clone(), n);
    let scale_controller = |replicas: i32| {
        let deployments = deployments.clone();
        let name = release.fullname();
        async move {
            deployments
                .patch_scale(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": replicas}})),
                )
                .await
                .unwrap();
        }
    };
    scale_controller(0).await;
    eventually(Duration::from_secs(60), || async {
        release.pods(&admin).await.ok().filter(Vec::is_empty)
    })
    .await
    .expect("the controller's pods are gone");
    eventually(Duration::from_secs(60), || async {
        let job = jobs.get(&lost).await.ok()?;
        (job.status?.succeeded == Some(1)).then_some(())
    })
    .await
    .expect("the hook's Job finishes while the controller is down");
    jobs.delete(&lost, &kube::api::DeleteParams::background())
        .await
        .unwrap();
    let recorded = scalers.get("nifi").await.unwrap().data["status"]["startedHook"].clone();
    assert_eq!(recorded["job"], json!(lost), "{recorded}");
    let at: Timestamp = recorded["at"].as_str().unwrap().parse().unwrap();
    // Past the grace a replica that recorded a start has to create its Job.
    tokio::time::sleep(until(at + SignedDuration::from_secs(31), 0)).await;
    scale_controller(2).await;
    let failed = wait_stage("Failed", 90).await;
    let reason = state_reason(&failed);
    assert!(
        reason.contains(&format!("hook Job {lost}")) && reason.contains("was started and is gone"),
        "{reason}"
    );
    settle(Duration::from_secs(5), || async {
        let (names, _): (Vec<String>, Vec<_>) = job_names().await.into_iter().unzip();
        anyhow::ensure!(
            !names.contains(&lost),
            "the lost hook Job was created again"
        );
        Ok(())
    })
    .await
    .unwrap();
    println!("seed 003: a lost hook Job fails its operation: {reason}");

    webhook_leaf_renewed_in_its_secret((&admin, n), &release, &cert, &scalers).await;
    release.uninstall().unwrap();
    ns.delete(&admin).await.unwrap();
}

/// Seed 003's webhook leaf renewed in its Secret by the same CA (as cert-manager renews a leaf
/// of the chart's own CA, #45): the kubelet brings the new files into the controller's pods,
/// every replica serves the new leaf, and the caBundle stays as it was. `/scale` writes (at the count
/// the scaler has: the API server asks the webhook all the same) go on throughout, and none is
/// refused: with `failurePolicy: Fail` a write that could not reach the webhook, or one whose
/// certificate the caBundle did not trust, would be.
async fn webhook_leaf_renewed_in_its_secret(
    (admin, n): (&Client, &str),
    release: &Release<'_>,
    cert: &tls::ServingCert,
    scalers: &Api<DynamicObject>,
) {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), n);
    // Each replica's name, and where it serves the webhook.
    let replicas: Vec<(String, String, i32)> = release
        .pods(admin)
        .await
        .unwrap()
        .iter()
        .map(|pod| {
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
            let port = pod.spec.as_ref().and_then(|s| {
                s.containers[0]
                    .ports
                    .iter()
                    .flatten()
                    .find(|p| p.name.as_deref() == Some("webhook"))
                    .map(|p| p.container_port)
            });
            (pod.name_any(), ip.unwrap(), port.unwrap())
        })
        .collect();
    let server_name = format!("{}-webhook.{n}.svc", release.fullname());
    let served = async |ip: &str, port: i32| {
        ebb_e2e::served_certificate((ip, port), (&cert.ca_pem, &server_name)).await
    };
    cert.renew().unwrap();
    let pem = |file: &str| std::fs::read_to_string(cert.dir.join(file)).unwrap();
    let leaf = ebb_e2e::pem_certificate(&pem("tls.crt")).unwrap();
    for (pod, ip, port) in &replicas {
        let before = served(ip, *port).await.unwrap();
        assert_ne!(
            before, leaf,
            "{pod} serves the renewed leaf before its Secret has it"
        );
    }
    apply(
        admin,
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "webhook-certs", "namespace": n},
                "stringData": {"tls.crt": pem("tls.crt"), "tls.key": pem("tls.key")}}),
    )
    .await
    .unwrap();
    let renewed = std::time::Instant::now();
    // An update of a pod makes the kubelet sync it, Secret volumes included, before its
    // periodic sync would.
    for (pod, _, _) in &replicas {
        let touched = json!({"metadata": {"annotations": {"e2e.ebb.dev/leaf-renewed": "1"}}});
        pods.patch(pod, &PatchParams::default(), &Patch::Merge(touched))
            .await
            .unwrap();
    }
    let count = scalers.get("nifi").await.unwrap().data["spec"]["replicas"].clone();
    let write = |i: usize| {
        let scalers = scalers.clone();
        let count = count.clone();
        async move {
            scalers
                .patch_scale(
                    "nifi",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": count}})),
                )
                .await
                .unwrap_or_else(|e| panic!("/scale write {i} across the renewal refused: {e}"));
        }
    };
    let mut writes = 0;
    let reloaded = loop {
        write(writes).await;
        writes += 1;
        let mut reloaded = 0;
        for (pod, ip, port) in &replicas {
            // A handshake of our own, trusting the caBundle as the API server does (a replica
            // looks at its certificate's files at each handshake; the API server's connections
            // may stay open for long): which leaf does it serve?
            let now = served(ip, *port)
                .await
                .unwrap_or_else(|e| panic!("{pod} is not trusted by the caBundle: {e}"));
            reloaded += usize::from(now == leaf);
        }
        if reloaded == replicas.len() {
            break renewed.elapsed();
        }
        assert!(
            renewed.elapsed() < Duration::from_secs(150),
            "{reloaded} of {} replicas serve the renewed certificate 150 s after it was put in its Secret",
            replicas.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // And on the renewed certificate alone.
    for i in writes..writes + 10 {
        write(i).await;
    }
    println!(
        "figure: seed 003 the webhook's leaf renewed in its Secret: every replica ({}) serving it {:.1} s later, {} /scale writes across it, none refused",
        replicas.len(),
        reloaded.as_secs_f64(),
        writes + 10
    );
}

/// Why a failed scaler failed (`status.currentState`, both wire forms).
fn state_reason(scaler: &DynamicObject) -> String {
    serde_json::from_value::<ScalerState>(scaler.data["status"]["currentState"].clone())
        .ok()
        .and_then(|s| s.reason)
        .unwrap_or_default()
}

/// Seed 000: workshop-scaler, installed by its chart, scales a stock-Babylon WorkshopProvision
/// once when its seats fill past the threshold of a WorkshopScalingPolicy.
#[tokio::test]
async fn workshop_scaler_scales_a_provision_once() {
    let cluster = node_cluster();
    let admin = cluster.client().await.unwrap();
    let ns = Namespace::create_restricted(&admin, "seed-000")
        .await
        .unwrap();
    let n = ns.name.as_str();
    let release = Release::new(cluster, "workshop-scaler", &unique("ws"), n);
    release
        .install(&[&format!("watchNamespaces[0]={n}")])
        .expect("helm install workshop-scaler");
    apply(
        &admin,
        &json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
                "metadata": {"name": "ws", "namespace": n, "labels": {"ebb.dev/auto-scaling": "standard"}},
                "spec": {"displayName": "Ansible 101", "openRegistration": true}}),
    )
    .await
    .unwrap();
    apply(
        &admin,
        &json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
                "metadata": {"name": "standard", "namespace": n},
                "spec": {"workshopSelector": {"matchLabels": {"ebb.dev/auto-scaling": "standard"}},
                         "autoScaling": {"enabled": true, "threshold": 0.5, "scaleFactor": 1.5, "maxProvisions": 10}}}),
    )
    .await
    .unwrap();
    apply(
        &admin,
        &json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
                "metadata": {"name": "wp", "namespace": n},
                "spec": {"catalogItem": {"name": "ansible-rhel.prod", "namespace": "babylon-catalog-prod"},
                         "count": 2, "concurrency": 10, "startDelay": 10, "workshopName": "ws",
                         "parameters": {"purpose": "Training"}}}),
    )
    .await
    .unwrap();
    for (i, email) in ["ada@example.com", "bob@example.com", "eve@example.com", ""]
        .iter()
        .enumerate()
    {
        let mut spec = json!({"workshopName": "ws", "resourceClaimName": format!("claim-{i}")});
        if !email.is_empty() {
            spec["assignment"] = json!({"email": email});
        }
        apply(
            &admin,
            &json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopUserAssignment",
                    "metadata": {"name": format!("seat-{i}"), "namespace": n}, "spec": spec}),
        )
        .await
        .unwrap();
    }
    let provisions: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        n,
        &resource(&admin, "babylon.gpte.redhat.com", "v1", "WorkshopProvision")
            .await
            .unwrap(),
    );
    let count = |p: &DynamicObject| p.data["spec"]["count"].as_i64();
    // 3 of 4 seats taken, over the 0.5 threshold: 2 * 1.5 = 3 provisions, once.
    eventually(Duration::from_secs(60), || async {
        provisions
            .get("wp")
            .await
            .ok()
            .filter(|p| count(p) == Some(3))
    })
    .await
    .expect("the chart-installed controller scaled the provision");
    settle(Duration::from_secs(10), || async {
        let p = provisions.get("wp").await?;
        anyhow::ensure!(count(&p) == Some(3), "scaled again: {:?}", count(&p));
        Ok(())
    })
    .await
    .unwrap();
    release.uninstall().unwrap();
    ns.delete(&admin).await.unwrap();
}
