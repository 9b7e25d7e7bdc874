//! Bad input, as users meet it on a real API server: each invalid object is applied; what the user
//! sees is either the server's rejection (the schema or a CEL rule, naming the field) or, for what
//! a schema cannot check (cron, zones, durations, times of day), the status condition the
//! controller writes. A valid object applied after all of them must still be served. The table is
//! `docs/bad-input.md`, checked here (`EBB_BLESS=1` rewrites it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::rbac::apply;
use ebb_e2e::{Controller, Setup, eventually, repo_root};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};

/// One row: the object's kind, what is wrong, and what the user sees.
struct Row {
    kind: &'static str,
    input: &'static str,
    seen: String,
}

/// Applies `doc`: the server's rejection, or `None` when it was stored.
async fn rejection(admin: &kube::Client, doc: &Value, namespace: &str) -> Option<String> {
    let error = apply(admin, doc).await.err()?;
    let message = match error.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => format!("{} {}", status.code, status.message),
        _ => format!("{error:#}"),
    };
    Some(format!("rejected: {}", message.replace(namespace, "<ns>")))
}

/// The condition `type_` once the controller wrote it: its status and message.
async fn condition(api: &Api<DynamicObject>, name: &str, type_: &str) -> String {
    let (status, message) = eventually(Duration::from_secs(60), || async {
        let object = api.get(name).await.ok()?;
        let conditions = object.data["status"]["conditions"].as_array()?.clone();
        let c = conditions.iter().find(|c| c["type"] == type_)?;
        Some((
            c["status"].as_str()?.to_owned(),
            c["message"].as_str()?.to_owned(),
        ))
    })
    .await
    .unwrap_or_else(|e| panic!("{name}: no {type_} condition: {e:#}"));
    format!("status: {type_}={status}, \"{message}\"")
}

fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "# Bad input\n\nWritten by `e2e/tests/bad_input.rs` against kube-apiserver (`EBB_BLESS=1` \
         rewrites it). Each object was applied in turn; a valid object applied after them all was \
         still served (the test waits for its effect).\n\n| kind | input | what the user sees |\n\
         |---|---|---|\n",
    );
    for row in rows {
        let seen = row.seen.replace('|', "\\|").replace('\n', " ");
        out.push_str(&format!("| {} | {} | {} |\n", row.kind, row.input, seen));
    }
    out
}

fn check_doc(rows: &[Row]) {
    let path = repo_root().join("docs/bad-input.md");
    let text = table(rows);
    if std::env::var_os("EBB_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == text,
        "{} is stale; run with EBB_BLESS=1. Now:\n{text}",
        path.display()
    );
}

fn service_scaler(name: &str, change: impl FnOnce(&mut Value)) -> Value {
    let mut doc = json!({
        "apiVersion": "scaler.udaan.io/v1",
        "kind": "ServiceScaler",
        "metadata": {"name": name},
        "spec": {
            "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
            "timeRangeSpec": [{
                "kind": "ZonedTime", "from": "00:00Z", "to": "00:00Z",
                "replicaSpec": {"hpa": {"minReplicas": 5}}
            }]
        }
    });
    change(&mut doc["spec"]);
    doc
}

fn schedule(name: &str, pool: &str, change: impl FnOnce(&mut Value)) -> Value {
    let mut doc = json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1",
        "kind": "ScaleDownSchedule",
        "metadata": {"name": name},
        "spec": {
            "target": {"nodeAnnotation": {"nodeSelector": {"matchLabels": {"bad-input": pool}}}},
            "windows": [{"schedule": "0 20 * * 1-5", "duration": "1m", "timeZone": "UTC"}]
        }
    });
    change(&mut doc["spec"]);
    doc
}

type Case = (&'static str, fn(&mut Value));

#[tokio::test]
async fn bad_input_is_named_and_every_other_object_is_served() {
    let mut rows = Vec::new();

    // service-scaler.
    let setup = Setup::new("service-scaler", "e2e-bad-ss", true, &[])
        .await
        .unwrap();
    let ns = setup.namespace.clone();
    let scalers = setup
        .dynamic("scaler.udaan.io", "v1", "ServiceScaler")
        .await
        .unwrap();
    let controller = Controller::ready(
        "service-scaler",
        &setup.identity,
        "bad-0",
        &["--namespace", &ns, "--leader-election=false"],
    )
    .await;
    let cases: [Case; 8] = [
        ("`hpa.maxReplicas` missing", |s| {
            s["hpa"].as_object_mut().unwrap().remove("maxReplicas");
        }),
        ("`hpa.minReplicas: \"two\"`", |s| {
            s["hpa"]["minReplicas"] = json!("two")
        }),
        ("`timeRangeSpec[0].kind: Weekly`", |s| {
            s["timeRangeSpec"][0]["kind"] = json!("Weekly")
        }),
        ("`timeRangeSpec[0].to: 12:60Z`", |s| {
            s["timeRangeSpec"][0]["to"] = json!("12:60Z")
        }),
        ("a LocalTime range in `Mars/Olympus`", |s| {
            s["timeRangeSpec"][0] = json!({"kind": "LocalTime", "from": "08:00", "to": "18:00",
                "timeZone": "Mars/Olympus", "replicaSpec": {"hpa": {"minReplicas": 5}}});
        }),
        ("`leadTime: soon`", |s| s["leadTime"] = json!("soon")),
        ("`hpa.minReplicas` 12 above `maxReplicas` 10", |s| {
            s["hpa"]["minReplicas"] = json!(12)
        }),
        ("`timeRangeSpec[0].replicaSpec.hpa.maxReplicas: 0`", |s| {
            s["timeRangeSpec"][0]["replicaSpec"]["hpa"]["maxReplicas"] = json!(0)
        }),
    ];
    for (i, (input, change)) in cases.into_iter().enumerate() {
        let name = format!("bad-{i}");
        let mut doc = service_scaler(&name, change);
        doc["metadata"]["namespace"] = json!(ns);
        let seen = match rejection(&setup.admin, &doc, &ns).await {
            Some(rejected) => rejected,
            None => condition(&scalers, &name, "SpecValid").await,
        };
        rows.push(Row {
            kind: "ServiceScaler",
            input,
            seen,
        });
    }
    // Served after all of them: a valid scaler gets its HPA, at the open range's minimum.
    let mut good = service_scaler("good", |_| {});
    good["metadata"]["namespace"] = json!(ns);
    apply(&setup.admin, &good).await.unwrap();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &ns);
    eventually(Duration::from_secs(30), || async {
        let hpa = hpas.get_opt("good").await.ok()??;
        (hpa.spec?.min_replicas == Some(5)).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the valid scaler was not served: {e:#}\n{}",
            controller.log_tail()
        )
    });
    controller.stop().await;

    // scaledown-window.
    let setup = Setup::new(
        "scaledown-window",
        "e2e-bad-sdw",
        false,
        &[
            "targets.clusterAutoscaler.enabled=false",
            "targets.nodeAnnotation.enabled=true",
            "clusterVersion.enabled=false",
        ],
    )
    .await
    .unwrap();
    let pool = setup.namespace.clone();
    let resource = ebb_e2e::rbac::resource(
        &setup.admin,
        "scaling.ebb.dev",
        "v1alpha1",
        "ScaleDownSchedule",
    )
    .await
    .unwrap();
    let schedules: Api<DynamicObject> = Api::all_with(setup.admin.clone(), &resource);
    let controller = Controller::ready(
        "scaledown-window",
        &setup.identity,
        "bad-0",
        &[
            "--leader-election=false",
            "--enable-cluster-autoscaler=false",
            "--enable-node-annotation",
            "--enable-cluster-version=false",
        ],
    )
    .await;
    let cases: [Case; 7] = [
        ("`windows: []`", |s| s["windows"] = json!([])),
        ("two targets in one `target`", |s| {
            s["target"]["clusterAutoscaler"] = json!({"name": "default"})
        }),
        ("`windows[0].schedule: 0 25 * * *`", |s| {
            s["windows"][0]["schedule"] = json!("0 25 * * *")
        }),
        ("`windows[0].schedule: every evening`", |s| {
            s["windows"][0]["schedule"] = json!("every evening")
        }),
        ("`windows[0].duration: 11 hours`", |s| {
            s["windows"][0]["duration"] = json!("11 hours")
        }),
        ("`windows[0].duration: -1h`", |s| {
            s["windows"][0]["duration"] = json!("-1h")
        }),
        ("`windows[0].timeZone: Europe/Zurch`", |s| {
            s["windows"][0]["timeZone"] = json!("Europe/Zurch")
        }),
    ];
    for (i, (input, change)) in cases.into_iter().enumerate() {
        let name = format!("{pool}-bad-{i}");
        let doc = schedule(&name, &format!("{pool}-none"), change);
        let seen = match rejection(&setup.admin, &doc, &pool).await {
            Some(rejected) => rejected.replace(&name, "<name>"),
            None => condition(&schedules, &name, "ScheduleValid").await,
        };
        rows.push(Row {
            kind: "ScaleDownSchedule",
            input,
            seen,
        });
    }
    // Served after all of them: a valid schedule (its window closed) annotates its node.
    let node = format!("{pool}-node");
    apply(
        &setup.admin,
        &json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node, "labels": {"bad-input": pool}}}),
    )
    .await
    .unwrap();
    apply(
        &setup.admin,
        &schedule(&format!("{pool}-good"), &pool, |_| {}),
    )
    .await
    .unwrap();
    let nodes: Api<Node> = Api::all(setup.admin.clone());
    eventually(Duration::from_secs(30), || async {
        let n = nodes.get(&node).await.ok()?;
        n.metadata
            .annotations?
            .contains_key("cluster-autoscaler.kubernetes.io/scale-down-disabled")
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "the valid schedule was not served: {e:#}\n{}",
            controller.log_tail()
        )
    });
    controller.stop().await;
    // The schemas of the other two kinds (their controllers' handling of what a schema cannot
    // check is in their reconcile tests: `an_invalid_block_is_reported_once_and_nothing_else_happens`,
    // `a_scaler_without_a_workload_owner_is_invalid_until_it_changes`).
    let setup = Setup::new("stackable-scaler", "e2e-bad-st", true, &[])
        .await
        .unwrap();
    let ns = setup.namespace.clone();
    let stackable: [(&str, Value); 3] = [
        ("`replicas: -1`", json!({"replicas": -1})),
        (
            "`hooks.preScale` without `template`",
            json!({"replicas": 1, "hooks": {"preScale": {"timeoutSeconds": 60}}}),
        ),
        (
            "`stageTimeoutSeconds: 0`",
            json!({"replicas": 1, "stageTimeoutSeconds": 0}),
        ),
    ];
    for (i, (input, spec)) in stackable.into_iter().enumerate() {
        let doc = json!({"apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
            "metadata": {"name": format!("bad-{i}"), "namespace": ns}, "spec": spec});
        let seen = rejection(&setup.admin, &doc, &ns)
            .await
            .unwrap_or_else(|| "stored (the controller reports it)".into());
        rows.push(Row {
            kind: "StackableScaler",
            input,
            seen,
        });
    }
    let policies: [(&str, Value); 3] = [
        (
            "`autoScaling.threshold: 1.5`",
            json!({"autoScaling": {"enabled": true, "threshold": 1.5}}),
        ),
        (
            "`autoScaling.scaleFactor: 0.5`",
            json!({"autoScaling": {"enabled": true, "scaleFactor": 0.5}}),
        ),
        (
            "`autoScaling.maxProvisions: -3`",
            json!({"autoScaling": {"enabled": true, "maxProvisions": -3}}),
        ),
    ];
    for (i, (input, spec)) in policies.into_iter().enumerate() {
        let doc = json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
            "metadata": {"name": format!("bad-{i}"), "namespace": ns}, "spec": spec});
        let seen = rejection(&setup.admin, &doc, &ns)
            .await
            .unwrap_or_else(|| "stored (the controller reports it)".into());
        rows.push(Row {
            kind: "WorkshopScalingPolicy",
            input,
            seen,
        });
    }
    check_doc(&rows);
}
