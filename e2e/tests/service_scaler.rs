//! service-scaler as a process against a real API server, with its chart's namespaced RBAC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ebb_e2e::{Controller, Setup, eventually, settle};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::config::Kubeconfig;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

const CHART: &str = "service-scaler";

fn scaler(name: &str, window_from: &str, window_to: &str) -> serde_json::Value {
    json!({
        "apiVersion": "scaler.udaan.io/v1",
        "kind": "ServiceScaler",
        "metadata": {"name": name},
        "spec": {
            // No lead: the window is to reach the HPA at its boundary, not in steps before it.
            "leadTime": "0s",
            "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
            "timeRangeSpec": [{
                "kind": "ZonedDateTime",
                "from": window_from,
                "to": window_to,
                "replicaSpec": {"hpa": {"minReplicas": 5}}
            }]
        }
    })
}

fn min_replicas(hpa: &HorizontalPodAutoscaler) -> Option<i32> {
    hpa.spec.as_ref()?.min_replicas
}

/// A window that opens a few seconds after the controller starts reaches the HPA within 1 s of
/// its boundary; the HPA the controller created is defaulted by the server; fields of another
/// field manager survive the controller's writes; the kill switch holds; deleting the
/// ServiceScaler deletes the HPA ebb created.
#[tokio::test]
async fn window_opens_on_time_and_other_managers_fields_survive() {
    let setup = Setup::new(CHART, "e2e-ss", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);

    // Whole seconds: RFC 3339 in the spec, and the boundary the controller wakes for.
    let boundary =
        ebb_runtime::time::whole_second(Timestamp::now()) + SignedDuration::from_secs(12);
    let until = boundary + SignedDuration::from_hours(1);
    setup
        .apply(scaler("web", &boundary.to_string(), &until.to_string()))
        .await
        .unwrap();

    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "ss-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;

    // Created with the defaults, and defaulted by the API server like any HPA.
    let created = eventually(Duration::from_secs(10), || async {
        hpas.get_opt("web").await.ok().flatten()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}:\n{}", controller.log_tail()));
    let spec = created.spec.clone().unwrap();
    assert_eq!(spec.min_replicas, Some(2));
    assert_eq!(spec.max_replicas, 10);
    assert_eq!(spec.scale_target_ref.kind, "Deployment");
    assert_eq!(spec.scale_target_ref.name, "web");
    let metrics = spec.metrics.clone().unwrap_or_default();
    assert_eq!(metrics.len(), 1, "one CPU metric: {metrics:?}");
    assert_eq!(
        metrics[0]
            .resource
            .as_ref()
            .unwrap()
            .target
            .average_utilization,
        Some(60)
    );

    // Another field manager owns the behavior and a label; ebb must keep its hands off them.
    hpas.patch(
        "web",
        &PatchParams::apply("team-tool"),
        &Patch::Apply(json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "labels": {"team": "shop"}},
            "spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}}
        })),
    )
    .await
    .unwrap();

    // The window opens: watch the HPA and time the change against the boundary.
    let mut changes = watcher(
        hpas.clone(),
        watcher::Config::default().fields("metadata.name=web"),
    )
    .applied_objects()
    .boxed();
    let opened = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(hpa) = changes.try_next().await.unwrap() {
            if min_replicas(&hpa) == Some(5) {
                return (Timestamp::now(), hpa);
            }
        }
        panic!("watch ended")
    })
    .await
    .unwrap_or_else(|_| panic!("window never reached the HPA:\n{}", controller.log_tail()));
    let latency = opened.0.duration_since(boundary);
    println!(
        "figure: service-scaler boundary-to-write latency {} ms",
        latency.as_millis()
    );
    assert!(
        latency >= SignedDuration::ZERO && latency < SignedDuration::from_secs(1),
        "the window reached the HPA {latency} after its boundary"
    );
    let hpa = opened.1;
    assert_eq!(hpa.labels().get("team").map(String::as_str), Some("shop"));
    let behavior = hpa.spec.as_ref().unwrap().behavior.as_ref().unwrap();
    assert_eq!(
        behavior
            .scale_down
            .as_ref()
            .unwrap()
            .stabilization_window_seconds,
        Some(120)
    );

    // Kill switch: with managed=false on the HPA, a spec change reaches it no more.
    hpas.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"service-scaler.kubernetes.io/managed": "false"}}}),
        ),
    )
    .await
    .unwrap();
    let mut changed = scaler("web", &boundary.to_string(), &until.to_string());
    changed["spec"]["timeRangeSpec"][0]["replicaSpec"]["hpa"]["minReplicas"] = json!(7);
    setup.apply(changed).await.unwrap();
    settle(Duration::from_secs(4), || async {
        let hpa = hpas.get("web").await?;
        anyhow::ensure!(
            min_replicas(&hpa) == Some(5),
            "the kill switch did not hold"
        );
        Ok(())
    })
    .await
    .unwrap();

    // Deleting the ServiceScaler deletes the HPA ebb created: it carries the ServiceScaler as
    // its controlling owner, so the garbage collector removes it (the ServiceScaler itself has no
    // finalizer for a created HPA). The collector learns new CRDs on its discovery resync (30 s),
    // which a fresh cluster may not have had yet: allow for it.
    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    let owners = hpas
        .get("web")
        .await
        .unwrap()
        .metadata
        .owner_references
        .unwrap_or_default();
    assert!(
        owners
            .iter()
            .any(|o| o.kind == "ServiceScaler" && o.name == "web" && o.controller == Some(true)),
        "the HPA ebb created is owned by its ServiceScaler: {owners:?}"
    );
    scalers
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(5), || async {
        scalers.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("the ServiceScaler was not deleted at once: {e}"));
    let started = Instant::now();
    eventually(Duration::from_secs(75), || async {
        hpas.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e} after {:?}:\n{}",
            started.elapsed(),
            controller.log_tail()
        )
    });

    controller.stop().await;
}

use jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;

/// An HPA that existed before its ServiceScaler (adopted, not created by ebb) is restored to the
/// ServiceScaler's defaults when the ServiceScaler is deleted, and kept: the finalizer ebb put on
/// the ServiceScaler is removed once the restore is written.
#[tokio::test]
async fn deleting_restores_an_adopted_hpa_to_the_defaults() {
    let setup = Setup::new(CHART, "e2e-ssr", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    setup
        .apply(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "api"},
            "spec": {"minReplicas": 1, "maxReplicas": 4,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                         "target": {"type": "Utilization", "averageUtilization": 50}}}]}
        }))
        .await
        .unwrap();
    let now = ebb_runtime::time::whole_second(Timestamp::now());
    let from = (now - SignedDuration::from_hours(1)).to_string();
    let to = (now + SignedDuration::from_hours(1)).to_string();
    let mut doc = scaler("api", &from, &to);
    doc["spec"]["hpa"] = json!({"minReplicas": 2, "maxReplicas": 6, "targetCPUUtilization": 60});
    setup.apply(doc).await.unwrap();

    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "ssr-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;
    eventually(Duration::from_secs(15), || async {
        let hpa = hpas.get("api").await.ok()?;
        (min_replicas(&hpa) == Some(5)).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the open window never reached the adopted HPA: {e}\n{}",
            controller.log_tail()
        )
    });

    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    scalers
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        scalers.get_opt("api").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the ServiceScaler was never released: {e}\n{}",
            controller.log_tail()
        )
    });
    let hpa = hpas.get("api").await.expect("an adopted HPA is kept");
    let spec = hpa.spec.unwrap();
    assert_eq!(
        (spec.min_replicas, spec.max_replicas),
        (Some(2), 6),
        "restored to the defaults"
    );
    let target = spec.metrics.unwrap_or_default()[0]
        .resource
        .as_ref()
        .unwrap()
        .target
        .average_utilization;
    assert_eq!(target, Some(60));

    controller.stop().await;
}

fn external_metric(name: &str, average_value: &str) -> serde_json::Value {
    json!({"type": "External", "external": {"metric": {"name": name},
        "target": {"type": "AverageValue", "averageValue": average_value}}})
}

fn external_target(hpa: &HorizontalPodAutoscaler, name: &str) -> Option<String> {
    hpa.spec
        .as_ref()?
        .metrics
        .iter()
        .flatten()
        .filter_map(|m| m.external.as_ref())
        .find(|e| e.metric.name == name)
        .and_then(|e| e.target.average_value.as_ref())
        .map(|q| q.0.clone())
}

/// udaan's gradual scaling on a real server: with a 30 s lead the increase 2 -> 8 reaches the
/// HPA in steps before its boundary and is complete one step ahead of it. A metric target given
/// as `2000m` is stored by the server as `2`: ebb sees the same amount and writes nothing more.
/// A pause annotation on the HPA itself stops every write to it.
#[tokio::test]
async fn lead_steps_up_before_the_boundary_and_canonical_quantities_are_in_sync() {
    let setup = Setup::new(CHART, "e2e-ssl", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    // Someone's HPA scaling on queue depth (and CPU).
    setup
        .apply(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "workers"},
            "spec": {"minReplicas": 1, "maxReplicas": 20,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "workers"},
                     "metrics": [external_metric("queue_depth", "10")]}
        }))
        .await
        .unwrap();
    let boundary =
        ebb_runtime::time::whole_second(Timestamp::now()) + SignedDuration::from_secs(45);
    let until = boundary + SignedDuration::from_hours(1);
    let mut doc = scaler("workers", &boundary.to_string(), &until.to_string());
    doc["spec"]["leadTime"] = json!("30s");
    doc["spec"]["hpa"] = json!({"minReplicas": 2, "maxReplicas": 20,
        "metricTargets": [{"name": "queue_depth", "averageValue": "2000m"}]});
    doc["spec"]["timeRangeSpec"][0]["replicaSpec"]["hpa"]["minReplicas"] = json!(8);
    setup.apply(doc.clone()).await.unwrap();

    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "ssl-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;

    // Every minReplicas the HPA takes, with when.
    let mut changes = watcher(
        hpas.clone(),
        watcher::Config::default().fields("metadata.name=workers"),
    )
    .applied_objects()
    .boxed();
    let mut seen: Vec<(Timestamp, i32)> = Vec::new();
    let reached = tokio::time::timeout(Duration::from_secs(70), async {
        while let Some(hpa) = changes.try_next().await.unwrap() {
            let min = min_replicas(&hpa).unwrap_or(1);
            if min == 1 {
                continue; // the user's value, before ebb's first write
            }
            if seen.last().map(|(_, m)| *m) != Some(min) {
                seen.push((Timestamp::now(), min));
            }
            if min == 8 {
                return hpa;
            }
        }
        panic!("watch ended")
    })
    .await
    .unwrap_or_else(|_| panic!("{seen:?}:\n{}", controller.log_tail()));
    let steps: Vec<i32> = seen.iter().map(|(_, m)| *m).collect();
    println!("service-scaler lead steps: {seen:?}");
    // The defaults first (2), then the six steps of one each: 3..=8, increasing, ahead of time.
    assert_eq!(steps.first(), Some(&2), "{seen:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(steps.len() >= 5, "stepped, not one jump: {seen:?}");
    let (at_eight, _) = seen.last().copied().unwrap();
    assert!(
        at_eight < boundary - SignedDuration::from_secs(3),
        "8 reached at {at_eight}, boundary {boundary}"
    );
    // The server stored the target canonically.
    assert_eq!(
        external_target(&reached, "queue_depth").as_deref(),
        Some("2")
    );

    // In sync: a reconcile (triggered by a label on the scaler) writes nothing to the HPA.
    let settled = boundary + SignedDuration::from_secs(2);
    let wait =
        std::time::Duration::try_from(settled.duration_since(Timestamp::now())).unwrap_or_default();
    tokio::time::sleep(wait).await;
    let since = Timestamp::now();
    doc["metadata"]["labels"] = json!({"touched": "yes"});
    setup.apply(doc.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    if let Some(log) = &ebb_e2e::cluster().audit_log {
        let hpa_writes: Vec<_> = ebb_e2e::audit::writes(log, &setup.identity.username(), since)
            .unwrap()
            .into_iter()
            .filter(|w| w.describe().contains("horizontalpodautoscalers"))
            .map(|w| w.describe())
            .collect();
        assert!(hpa_writes.is_empty(), "in sync, yet: {hpa_writes:?}");
    }

    // Paused on the HPA: a change of the schedule does not reach it.
    hpas.patch(
        "workers",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"scaling.ebb.dev/paused": "true"}}})),
    )
    .await
    .unwrap();
    doc["spec"]["timeRangeSpec"][0]["replicaSpec"]["hpa"]["minReplicas"] = json!(9);
    setup.apply(doc.clone()).await.unwrap();
    settle(Duration::from_secs(4), || async {
        let hpa = hpas.get("workers").await?;
        anyhow::ensure!(
            min_replicas(&hpa) == Some(8),
            "the HPA's pause did not hold"
        );
        Ok(())
    })
    .await
    .unwrap();
    controller.stop().await;
}

/// Migrating from udaan: a ServiceScaler still carrying udaan's finalizer, whose HPA udaan
/// created (it carries udaan's annotation), is deleted as udaan did: the HPA goes with it, and
/// the finalizer is removed so the ServiceScaler does not hang in deletion.
#[tokio::test]
async fn a_scaler_with_udaans_finalizer_deletes_udaans_hpa_and_is_released() {
    let setup = Setup::new(CHART, "e2e-ssu", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    setup
        .apply(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "legacy",
                         "annotations": {"service-scaler.kubernetes.io/managed": "true"}},
            "spec": {"minReplicas": 2, "maxReplicas": 10,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "legacy"}}
        }))
        .await
        .unwrap();
    let now = ebb_runtime::time::whole_second(Timestamp::now());
    let mut doc = scaler(
        "legacy",
        &(now - SignedDuration::from_hours(1)).to_string(),
        &(now + SignedDuration::from_hours(1)).to_string(),
    );
    doc["metadata"]["finalizers"] = json!(["servicescalers.scaler.udaan.io/finalizer"]);
    setup.apply(doc).await.unwrap();

    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "ssu-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;
    eventually(Duration::from_secs(15), || async {
        (min_replicas(&hpas.get("legacy").await.ok()?) == Some(5)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}:\n{}", controller.log_tail()));

    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    scalers
        .delete("legacy", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        let scaler_gone = scalers.get_opt("legacy").await.ok()?.is_none();
        let hpa_gone = hpas.get_opt("legacy").await.ok()?.is_none();
        (scaler_gone && hpa_gone).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "udaan's HPA and its ServiceScaler should both be gone: {e}\n{}",
            controller.log_tail()
        )
    });
    controller.stop().await;
}

/// From a laptop: `--kubeconfig` names the file and `--context` the context in it. Here
/// KUBECONFIG names no file and the file's current context points where nothing listens, so the
/// controller gets ready (its watches listed) only if both flags are honoured.
#[tokio::test]
async fn kubeconfig_and_context_flags_choose_the_cluster() {
    let setup = Setup::new(CHART, "e2e-kc", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let mut file = Kubeconfig::read_from(&setup.identity.kubeconfig).unwrap();
    let mut nowhere = file.clusters[0].clone();
    nowhere.name = "nowhere".into();
    if let Some(cluster) = nowhere.cluster.as_mut() {
        cluster.server = Some("https://127.0.0.1:9".into());
    }
    let mut real = file.contexts[0].clone();
    real.name = "real".into();
    let mut broken = file.contexts[0].clone();
    broken.name = "broken".into();
    if let Some(context) = broken.context.as_mut() {
        context.cluster = "nowhere".into();
    }
    file.clusters.push(nowhere);
    file.contexts = vec![broken, real];
    file.current_context = Some("broken".into());
    let path = ebb_e2e::work_dir().join(format!("{ns}-laptop.kubeconfig"));
    std::fs::write(&path, serde_saphyr::to_string(&file).unwrap()).unwrap();
    let missing = ebb_e2e::work_dir().join(format!("{ns}-missing.kubeconfig"));

    let mut controller = Controller::start_with(
        "service-scaler",
        &setup.identity,
        &missing,
        "laptop",
        &[
            "--kubeconfig",
            path.to_str().unwrap(),
            "--context",
            "real",
            "--namespace",
            &ns,
            "--leader-elect=false",
        ],
    )
    .unwrap();
    if let Err(e) = controller.wait_ready(Duration::from_secs(30)).await {
        panic!("never ready: {e:#}\n{}", controller.log_tail());
    }
    controller.stop().await;
}

/// A Deployment of `replicas` in the test's namespace (the API server keeps it; its `/scale`
/// subresource is what hibernation writes).
fn deployment(name: &str, replicas: i32) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "registry.invalid/app"}]}}
        }
    })
}

/// A hibernating range: the Deployment's replicas are recorded in the status and it is scaled
/// to 0 through `/scale` with the chart's RBAC; the controller is killed (`kill -9`) in the
/// middle of the hibernation; a new process wakes the Deployment to the recorded count at the
/// range's end, and the record goes. Then deleting the ServiceScaler mid-hibernation wakes it;
/// so does deleting one whose finalizer was removed by hand, while the controller runs and while
/// it is down (the install's hibernation ledger keeps the count).
#[tokio::test]
async fn hibernation_survives_a_kill_and_wakes_the_deployment_at_the_ranges_end() {
    use k8s_openapi::api::apps::v1::Deployment;
    let setup = Setup::new(CHART, "e2e-ssh", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let deployments: Api<Deployment> = Api::namespaced(setup.admin.clone(), &ns);
    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    let replicas = || async {
        deployments
            .get("web")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas)
    };
    let recorded = || async {
        scalers.get("web").await.ok().and_then(|s| {
            s.data
                .pointer("/status/hibernation/replicas")
                .and_then(serde_json::Value::as_i64)
        })
    };

    setup.apply(deployment("web", 3)).await.unwrap();
    let now = ebb_runtime::time::whole_second(Timestamp::now());
    let end = now + SignedDuration::from_secs(30);
    let mut hibernating = scaler(
        "web",
        &(now - SignedDuration::from_hours(1)).to_string(),
        &end.to_string(),
    );
    hibernating["spec"]["timeRangeSpec"][0]["replicaSpec"] = json!({"hibernate": true});
    setup.apply(hibernating.clone()).await.unwrap();

    let args = ["--namespace", &ns, "--leader-election=false"];
    let mut first = Controller::ready("service-scaler", &setup.identity, "ssh-0", &args).await;
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(0) && recorded().await == Some(3)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not hibernated:\n{}", first.log_tail()));

    // kill -9 mid-hibernation; the Deployment is scaled up by hand meanwhile.
    first.kill().unwrap();
    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let second = Controller::ready("service-scaler", &setup.identity, "ssh-1", &args).await;
    // Held at 0 while the range is in force; the first count kept.
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(0) && recorded().await == Some(3)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not held at 0:\n{}", second.log_tail()));
    assert!(
        Timestamp::now() < end,
        "the test was too slow for its range"
    );

    // The range ends: 3 replicas again, within a second of the boundary, the record gone.
    let woke = eventually(Duration::from_secs(45), || async {
        (replicas().await == Some(3) && recorded().await.is_none()).then(Timestamp::now)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not woken:\n{}", second.log_tail()));
    let late = woke.duration_since(end);
    println!(
        "figure: service-scaler hibernation end to wake {} ms",
        late.as_millis()
    );
    assert!(
        late >= SignedDuration::ZERO && late < SignedDuration::from_secs(2),
        "woken {late} after the range's end"
    );

    // Hibernating again (a range in force), then the ServiceScaler is deleted: woken first.
    let mut again = hibernating.clone();
    again["spec"]["timeRangeSpec"][0]["to"] =
        json!((Timestamp::now() + SignedDuration::from_hours(1)).to_string());
    setup.apply(again.clone()).await.unwrap();
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(0) && recorded().await == Some(3)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not hibernated again:\n{}", second.log_tail()));
    scalers
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(3) && scalers.get_opt("web").await.ok()?.is_none()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not woken on deletion:\n{}", second.log_tail()));

    // Deleted without ebb's finalizer (removed by hand), while ebb runs and while it is down: the
    // count is in the install's hibernation ledger, a ConfigMap beside the Lease, and the
    // Deployment gets it back.
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(setup.admin.clone(), &setup.identity.namespace);
    let ledger_name = format!("{}-hibernation", setup.identity.release);
    let key = format!("{ns}.web");
    let in_ledger = || async {
        maps.get(&ledger_name)
            .await
            .ok()
            .and_then(|m| m.data?.get(&key).cloned())
    };
    let mut running = second;
    for down in [false, true] {
        setup.apply(again.clone()).await.unwrap();
        eventually(Duration::from_secs(15), || async {
            (replicas().await == Some(0) && recorded().await == Some(3)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: not hibernated:\n{}", running.log_tail()));
        let entry = in_ledger().await.expect("the hibernation is in the ledger");
        assert!(entry.contains("\"replicas\":3"), "{entry}");
        if down {
            running.kill().unwrap();
        }
        scalers
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await
            .unwrap();
        scalers
            .delete("web", &DeleteParams::default())
            .await
            .unwrap();
        eventually(Duration::from_secs(10), || async {
            scalers.get_opt("web").await.ok()?.is_none().then_some(())
        })
        .await
        .unwrap();
        if down {
            running = Controller::ready("service-scaler", &setup.identity, "ssh-2", &args).await;
        }
        let woken = eventually(Duration::from_secs(15), || async {
            (replicas().await == Some(3) && in_ledger().await.is_none()).then_some(())
        })
        .await;
        if woken.is_err() {
            println!(
                "not woken: replicas {:?}, entry {:?}",
                replicas().await,
                in_ledger().await
            );
        }
        woken.unwrap_or_else(|e| {
            panic!(
                "{e}: not woken from the ledger (ebb down: {down}):\n{}",
                running.log_tail()
            )
        });
    }
    running.stop().await;
}

/// An HPA labelled `tier`, 2..10 with cpu at 60%, scaling the Deployment of its name.
fn fleet_hpa(name: &str, tier: &str, annotations: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": {"tier": tier}, "annotations": annotations},
        "spec": {
            "minReplicas": 2, "maxReplicas": 10,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60}}}],
        }
    })
}

/// A FleetSchedule over `tier: web` with one range in force for the next hour, of `min`.
fn fleet_schedule(name: &str, min: i32) -> serde_json::Value {
    let now = Timestamp::now();
    json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"tier": "web"}},
            "leadTime": "0s",
            "timeRangeSpec": [{"kind": "ZonedDateTime",
                "from": (now - SignedDuration::from_hours(1)).to_string(),
                "to": (now + SignedDuration::from_hours(1)).to_string(),
                "replicaSpec": {"hpa": {"minReplicas": min}}}],
        }
    })
}

/// FleetSchedules on kube-apiserver, with the chart's RBAC: every HPA the selector matches gets
/// the range's settings, its own values recorded on it; the opted-out one, the one of another
/// tier and the one a ServiceScaler names are left alone; a second FleetSchedule matching the
/// same HPAs is a conflict on both (condition and Event), the older winning. An HPA that leaves
/// the selector gets its values back, one created later is picked up by the watch, a `kill -9`
/// loses nothing (the record is on the HPA), and deleting the FleetSchedule restores every
/// member.
#[tokio::test]
async fn a_fleet_schedules_every_matching_hpa_and_gives_back_their_own_values() {
    use k8s_openapi::api::events::v1::Event;
    let setup = Setup::new(CHART, "e2e-fleet", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    let fleets = setup
        .dynamic("scaling.ebb.dev", "v1alpha1", "FleetSchedule")
        .await
        .unwrap();
    let min_of = |name: &'static str| {
        let hpas = hpas.clone();
        async move { hpas.get(name).await.ok().and_then(|h| min_replicas(&h)) }
    };
    let recorded = |name: &'static str| {
        let hpas = hpas.clone();
        async move {
            hpas.get(name)
                .await
                .ok()
                .is_some_and(|h| h.annotations().contains_key("scaling.ebb.dev/fleet-record"))
        }
    };
    let status = |name: &'static str, pointer: &'static str| {
        let fleets = fleets.clone();
        async move {
            fleets
                .get(name)
                .await
                .ok()
                .and_then(|f| f.data.pointer(pointer).cloned())
        }
    };

    setup
        .apply(fleet_hpa("web", "web", json!({})))
        .await
        .unwrap();
    setup
        .apply(fleet_hpa(
            "out",
            "web",
            json!({"scaling.ebb.dev/fleet-opt-out": "true"}),
        ))
        .await
        .unwrap();
    setup
        .apply(fleet_hpa("batch", "batch", json!({})))
        .await
        .unwrap();
    setup
        .apply(fleet_hpa("claimed", "web", json!({})))
        .await
        .unwrap();
    let mut claimed = scaler("claimed", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00Z");
    claimed["spec"]["hpa"] =
        json!({"minReplicas": 3, "maxReplicas": 10, "targetCPUUtilization": 60});
    setup.apply(claimed).await.unwrap();
    setup.apply(fleet_schedule("hours", 5)).await.unwrap();
    // Created a second later: the younger of the two.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    setup.apply(fleet_schedule("rival", 7)).await.unwrap();

    let args = ["--namespace", &ns, "--leader-election=false"];
    let mut first = Controller::ready("service-scaler", &setup.identity, "fleet-0", &args).await;
    eventually(Duration::from_secs(15), || async {
        (min_of("web").await == Some(5) && recorded("web").await).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}: web not scheduled by the older fleet:\n{}",
            first.log_tail()
        )
    });
    // Both report the conflict; the older schedules web (claimed is the ServiceScaler's).
    eventually(Duration::from_secs(15), || async {
        let conflict = "/status/conditions";
        let both = [
            status("hours", conflict).await,
            status("rival", conflict).await,
        ];
        let conflicted = both.iter().all(|c| {
            c.as_ref().and_then(|c| c.as_array()).is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Conflict" && c["status"] == "True")
            })
        });
        (conflicted
            && status("hours", "/status/members").await == Some(json!(1))
            && status("rival", "/status/members").await == Some(json!(0)))
        .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: no conflict reported:\n{}", first.log_tail()));
    let events: Api<Event> = Api::namespaced(setup.admin.clone(), &ns);
    eventually(Duration::from_secs(10), || async {
        let listed = events.list(&Default::default()).await.ok()?;
        let warned = |name: &str| {
            listed.items.iter().any(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                    && e.reason.as_deref() == Some("Conflict")
            })
        };
        (warned("hours") && warned("rival")).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: no Conflict Event on both:\n{}", first.log_tail()));
    for (name, min) in [("out", 2), ("batch", 2), ("claimed", 3)] {
        assert_eq!(min_of(name).await, Some(min), "{name}");
        assert!(!recorded(name).await, "{name} carries a record");
    }

    // web leaves the selector: its own values back, the record gone.
    hpas.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "batch"}}})),
    )
    .await
    .unwrap();
    eventually(Duration::from_secs(15), || async {
        (min_of("web").await == Some(2) && !recorded("web").await).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: web not restored:\n{}", first.log_tail()));

    // The rival goes; web comes back, and an HPA made later is picked up by the watch.
    fleets
        .delete("rival", &DeleteParams::default())
        .await
        .unwrap();
    hpas.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "web"}}})),
    )
    .await
    .unwrap();
    setup
        .apply(fleet_hpa("late", "web", json!({})))
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        (min_of("web").await == Some(5) && min_of("late").await == Some(5)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not scheduled again:\n{}", first.log_tail()));

    // kill -9; an HPA's own value changed meanwhile by hand is the drift the next process undoes,
    // and the record (on the HPA) still says what to give back.
    first.kill().unwrap();
    hpas.patch(
        "late",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"minReplicas": 4}})),
    )
    .await
    .unwrap();
    let second = Controller::ready("service-scaler", &setup.identity, "fleet-1", &args).await;
    eventually(Duration::from_secs(15), || async {
        (min_of("late").await == Some(5)
            && status("hours", "/status/members").await == Some(json!(2)))
        .then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}: drift not undone after the kill:\n{}",
            second.log_tail()
        )
    });

    // The FleetSchedule is deleted: every member gets its own values back.
    fleets
        .delete("hours", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        let restored = min_of("web").await == Some(2) && min_of("late").await == Some(2);
        (restored && !recorded("web").await && !recorded("late").await).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not restored on deletion:\n{}", second.log_tail()));
    second.stop().await;
}

/// A FleetSchedule's hibernating range on kube-apiserver: the member's replicas are recorded on
/// the HPA before its Deployment goes to 0 through `/scale`; a `kill -9` in the middle loses
/// nothing; when the HPA leaves the selector the Deployment gets its replicas back and the record
/// goes.
#[tokio::test]
async fn a_fleet_member_hibernates_through_a_kill_and_wakes_when_it_leaves() {
    use k8s_openapi::api::apps::v1::Deployment;
    let setup = Setup::new(CHART, "e2e-fleeth", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(setup.admin.clone(), &ns);
    let replicas = || async {
        deployments
            .get("nap")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas)
    };
    let slept = || async {
        let hpa = hpas.get("nap").await.ok()?;
        let record = hpa
            .annotations()
            .get("scaling.ebb.dev/fleet-record")?
            .clone();
        let record: serde_json::Value = serde_json::from_str(&record).ok()?;
        record.pointer("/hibernation/replicas")?.as_i64()
    };
    setup.apply(deployment("nap", 3)).await.unwrap();
    setup
        .apply(fleet_hpa("nap", "night", json!({})))
        .await
        .unwrap();
    let mut nights = fleet_schedule("nights", 2);
    nights["spec"]["selector"] = json!({"matchLabels": {"tier": "night"}});
    nights["spec"]["timeRangeSpec"][0]["replicaSpec"] = json!({"hibernate": true});
    setup.apply(nights).await.unwrap();

    let args = ["--namespace", &ns, "--leader-election=false"];
    let mut first = Controller::ready("service-scaler", &setup.identity, "fleeth-0", &args).await;
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(0) && slept().await == Some(3)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not hibernated:\n{}", first.log_tail()));

    // kill -9 mid-hibernation; scaled up by hand meanwhile: held at 0, the first count kept.
    first.kill().unwrap();
    deployments
        .patch_scale(
            "nap",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let second = Controller::ready("service-scaler", &setup.identity, "fleeth-1", &args).await;
    eventually(Duration::from_secs(15), || async {
        (replicas().await == Some(0) && slept().await == Some(3)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not held at 0:\n{}", second.log_tail()));

    // The HPA leaves the selector: 3 replicas again, the record gone.
    hpas.patch(
        "nap",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "day"}}})),
    )
    .await
    .unwrap();
    eventually(Duration::from_secs(15), || async {
        let gone = hpas
            .get("nap")
            .await
            .ok()
            .is_some_and(|h| !h.annotations().contains_key("scaling.ebb.dev/fleet-record"));
        (replicas().await == Some(3) && gone).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not woken on leaving:\n{}", second.log_tail()));
    second.stop().await;
}

/// A range naming a HolidayCalendar, on a namespaced install (the calendars' ClusterRole is the
/// chart's): missing, the ServiceScaler is invalid and names it (condition and Warning Event) and
/// no HPA is made; created, excluding tomorrow (UTC, the zone of a ZonedDateTime range), the
/// range is in force and its end previewed at tomorrow's midnight; edited to exclude today, the
/// HPA gets the defaults back at once, without a restart; deleted, the spec is invalid again and
/// the HPA is left as it was.
#[tokio::test]
async fn a_holiday_calendar_takes_effect_as_it_is_created_edited_and_deleted() {
    use ebb_crds::calendar::HolidayCalendar;
    use k8s_openapi::api::events::v1::Event;
    let (now, today, midnight) = ebb_e2e::utc_day().await;
    let tomorrow = today.tomorrow().unwrap();

    let setup = Setup::new(CHART, "e2e-cal", true, &[]).await.unwrap();
    let ns = setup.namespace.clone();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    let calendars: Api<HolidayCalendar> = Api::all(setup.admin.clone());
    // Cluster-scoped: named after the test's namespace, so parallel tests do not meet.
    let name = format!("{ns}-days");
    let mut spec = scaler(
        "web",
        &(now - SignedDuration::from_hours(48)).to_string(),
        &(now + SignedDuration::from_hours(96)).to_string(),
    );
    spec["spec"]["timeRangeSpec"][0]["excludeCalendars"] = json!([name]);
    setup.apply(spec).await.unwrap();
    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "cal-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;
    let spec_valid = || async {
        let scaler = scalers.get("web").await.ok()?;
        let conditions = scaler
            .data
            .pointer("/status/conditions")?
            .as_array()?
            .clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == "SpecValid")
            .map(|c| (c["status"].clone(), c["message"].clone()))
    };

    // Missing: invalid, named, no HPA.
    let missing = json!(format!(
        "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"{name}\" not found"
    ));
    eventually(Duration::from_secs(15), || async {
        (spec_valid().await == Some((json!("False"), missing.clone()))).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}: SpecValid not the missing calendar\n{}",
            controller.log_tail()
        )
    });
    let events: Api<Event> = Api::namespaced(setup.admin.clone(), &ns);
    eventually(Duration::from_secs(10), || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("InvalidSpec")
                    && e.note.as_deref().is_some_and(|n| n.contains(&name))
            })
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: no InvalidSpec Event naming {name}"));
    assert!(hpas.get_opt("web").await.unwrap().is_none());

    // Created, excluding tomorrow: in force now, closing at tomorrow's midnight (UTC).
    let calendar = |dates: Vec<String>| {
        json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
            "metadata": {"name": name}, "spec": {"dates": dates},
        })
    };
    let apply = PatchParams::apply("e2e").force();
    calendars
        .patch(
            &name,
            &apply,
            &Patch::Apply(calendar(vec![tomorrow.to_string()])),
        )
        .await
        .unwrap();
    // The HPA is written before the status in the same pass: wait for both.
    eventually(Duration::from_secs(15), || async {
        let hpa = hpas.get_opt("web").await.ok().flatten()?;
        let valid = spec_valid().await?.0;
        (min_replicas(&hpa) == Some(5) && valid == json!("True")).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: the range not in force\n{}", controller.log_tail()));
    let next = scalers.get("web").await.unwrap().data["status"]["nextTransitions"][0]["at"].clone();
    assert_eq!(
        next,
        json!(midnight.to_string()),
        "the range closes at the holiday"
    );

    // Edited to today: the defaults at once, no restart.
    let edited = Instant::now();
    calendars
        .patch(
            &name,
            &apply,
            &Patch::Apply(calendar(vec![today.to_string()])),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(10), || async {
        let hpa = hpas.get("web").await.ok()?;
        (min_replicas(&hpa) == Some(2)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: the edit not acted on\n{}", controller.log_tail()));
    assert!(
        edited.elapsed() < Duration::from_secs(5),
        "{:?}",
        edited.elapsed()
    );

    // Deleted: invalid again, the HPA left as it was.
    calendars
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(10), || async {
        (spec_valid().await == Some((json!("False"), missing.clone()))).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: SpecValid not the missing calendar again"));
    assert_eq!(min_replicas(&hpas.get("web").await.unwrap()), Some(2));
}
