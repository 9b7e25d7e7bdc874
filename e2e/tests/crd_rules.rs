//! ebb's own CRDs as kube-apiserver applies them: each CEL rule admits what it should and rejects
//! what it should with its message, on the real server (a server-side dry-run create, so nothing
//! is stored) and in the offline validator the unit tests use (kube-cel), which must agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_e2e::{Namespace, cluster};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

/// What should happen to an object: stored, or refused with a message holding the text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Admitted,
    Refused(&'static str),
}

fn stackable(pod_spec: Option<Value>) -> Value {
    let mut template = json!({"spec": {"template": {}}});
    if let Some(pod_spec) = pod_spec {
        template["spec"]["template"]["spec"] = pod_spec;
    }
    json!({"apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
           "metadata": {"name": "nifi"},
           "spec": {"replicas": 3, "hooks": {"preScale": {"template": template}}}})
}

fn schedule(target: Value) -> Value {
    json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule",
           "metadata": {"name": "nights"},
           "spec": {"target": target, "windows": [{"schedule": "0 20 * * 1-5", "duration": "11h"}]}})
}

fn windows(windows: Value) -> Value {
    let mut schedule = schedule(json!({"clusterAutoscaler": {}}));
    schedule["spec"]["windows"] = windows;
    schedule
}

fn service_scaler(min: i64, max: i64) -> Value {
    json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler", "metadata": {"name": "web"},
           "spec": {"hpa": {"minReplicas": 1, "maxReplicas": 5}, "timeRangeSpec": [
               {"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z",
                "replicaSpec": {"hpa": {"minReplicas": min, "maxReplicas": max}}}]}})
}

fn cases() -> Vec<(&'static str, Value, Expect)> {
    let container = json!([{"name": "drain", "image": "busybox"}]);
    vec![
        (
            "hook with a pod spec",
            stackable(Some(json!({"containers": container}))),
            Expect::Admitted,
        ),
        (
            "hook restarting OnFailure",
            stackable(Some(
                json!({"containers": container, "restartPolicy": "OnFailure"}),
            )),
            Expect::Admitted,
        ),
        (
            "hook without a pod spec",
            stackable(None),
            Expect::Refused("template.spec.template.spec is required"),
        ),
        (
            "hook without containers",
            stackable(Some(json!({"containers": []}))),
            Expect::Refused("needs at least one container"),
        ),
        (
            "hook restarting Always",
            stackable(Some(
                json!({"containers": container, "restartPolicy": "Always"}),
            )),
            Expect::Refused("restartPolicy must be Never or OnFailure"),
        ),
        (
            "schedule with one target",
            schedule(json!({"clusterAutoscaler": {}})),
            Expect::Admitted,
        ),
        (
            "schedule with a one-off window",
            windows(
                json!([{"from": "2026-12-24T18:00:00+01:00", "to": "2027-01-04T06:00:00+01:00"}]),
            ),
            Expect::Admitted,
        ),
        (
            "window both recurring and once",
            windows(json!([{"schedule": "0 20 * * 1-5", "duration": "11h",
                            "from": "2026-12-24T18:00:00+01:00", "to": "2027-01-04T06:00:00+01:00"}])),
            Expect::Refused("either recurring (schedule and duration) or once (from and to)"),
        ),
        (
            "window with from only",
            windows(json!([{"from": "2026-12-24T18:00:00+01:00"}])),
            Expect::Refused("from and to must be given together"),
        ),
        (
            "window with a local from",
            windows(json!([{"from": "2026-12-24T18:00:00", "to": "2027-01-04T06:00:00+01:00"}])),
            Expect::Refused("from/to must be RFC 3339"),
        ),
        (
            "schedule with two targets",
            schedule(json!({"clusterAutoscaler": {}, "nodeAnnotation": {}})),
            Expect::Refused("exactly one of"),
        ),
        (
            "service scaler min <= max",
            service_scaler(2, 4),
            Expect::Admitted,
        ),
        (
            "service scaler min > max",
            service_scaler(5, 4),
            Expect::Refused("minReplicas must not exceed maxReplicas"),
        ),
    ]
}

fn resource_of(object: &Value) -> ApiResource {
    let (group, version) = object["apiVersion"]
        .as_str()
        .unwrap()
        .split_once('/')
        .unwrap();
    let kind = object["kind"].as_str().unwrap();
    let crd = ebb_crds::all_crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap();
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        &crd.spec.names.plural,
    )
}

/// The offline verdict: the CRD's CEL rules through kube-cel.
fn offline(object: &Value) -> Result<(), String> {
    let kind = object["kind"].as_str().unwrap();
    let crd = ebb_crds::all_crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap();
    let schema = serde_json::to_value(
        crd.spec.versions[0]
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    kube_cel::Validator::new()
        .validate(&schema, object, None)
        .map_err(|e| e.to_string())
}

fn verdict(result: &Result<(), String>, expect: Expect) -> bool {
    match (result, expect) {
        (Ok(()), Expect::Admitted) => true,
        (Err(message), Expect::Refused(says)) => message.contains(says),
        _ => false,
    }
}

#[tokio::test]
async fn ebbs_cel_rules_hold_on_kube_apiserver_as_offline() {
    let admin = cluster().client().await.unwrap();
    let ns = Namespace::create(&admin, "e2e-rules").await.unwrap();
    let dry_run = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let mut wrong = Vec::new();
    for (name, object, expect) in cases() {
        let resource = resource_of(&object);
        let namespaced = ebb_crds::all_crds()
            .iter()
            .any(|c| c.spec.names.kind == resource.kind && c.spec.scope == "Namespaced");
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(admin.clone(), &ns.name, &resource)
        } else {
            Api::all_with(admin.clone(), &resource)
        };
        let typed: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        let real = api
            .create(&dry_run, &typed)
            .await
            .map(drop)
            .map_err(|e| match e {
                kube::Error::Api(status) => status.message,
                other => other.to_string(),
            });
        let local = offline(&object);
        println!("{name}: kube-apiserver {real:?}; offline {local:?}");
        if !verdict(&real, expect) {
            wrong.push(format!(
                "{name}: kube-apiserver said {real:?}, expected {expect:?}"
            ));
        }
        if !verdict(&local, expect) {
            wrong.push(format!(
                "{name}: offline said {local:?}, expected {expect:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
