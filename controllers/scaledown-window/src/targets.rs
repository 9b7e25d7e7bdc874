//! The target kinds ebb does not ship (OpenShift, Karpenter) as `ApiResource`s, the views
//! [`decide`](crate::decide) reads from their JSON, and the patch bodies of every write.
//!
//! These kinds are read as `DynamicObject`s: ebb needs a handful of their fields and must not drop
//! the others when it writes, so it never round-trips a whole object through a Rust type.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::decide::{
    CONFIGURED_MIN_ANNOTATION, Change, DISABLED_BY_ANNOTATION, MachineAutoscalerView, NodeChange,
    NodePoolView, NodeView, PINNED_MIN_ANNOTATION, PauseMarks, SCALE_DOWN_DISABLED_ANNOTATION,
    ScaleTargetRef,
};
use ebb_runtime::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};

/// `autoscaling.openshift.io/v1` ClusterAutoscaler (cluster-scoped).
pub fn cluster_autoscaler() -> ApiResource {
    resource(
        "autoscaling.openshift.io",
        "v1",
        "ClusterAutoscaler",
        "clusterautoscalers",
    )
}

/// `autoscaling.openshift.io/v1beta1` MachineAutoscaler (namespaced).
pub fn machine_autoscaler() -> ApiResource {
    resource(
        "autoscaling.openshift.io",
        "v1beta1",
        "MachineAutoscaler",
        "machineautoscalers",
    )
}

/// `machine.openshift.io/v1beta1` MachineSet (namespaced).
pub fn machine_set() -> ApiResource {
    resource(
        "machine.openshift.io",
        "v1beta1",
        "MachineSet",
        "machinesets",
    )
}

/// `config.openshift.io/v1` ClusterVersion (cluster-scoped; the one object is `version`).
pub fn cluster_version() -> ApiResource {
    resource(
        "config.openshift.io",
        "v1",
        "ClusterVersion",
        "clusterversions",
    )
}

/// The name of OpenShift's one ClusterVersion.
pub const CLUSTER_VERSION_NAME: &str = "version";

/// `machineconfiguration.openshift.io/v1` MachineConfigPool (cluster-scoped).
pub fn machine_config_pool() -> ApiResource {
    resource(
        "machineconfiguration.openshift.io",
        "v1",
        "MachineConfigPool",
        "machineconfigpools",
    )
}

/// `karpenter.sh/v1` NodePool (cluster-scoped).
pub fn node_pool() -> ApiResource {
    resource("karpenter.sh", "v1", "NodePool", "nodepools")
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

/// An object's pause annotations (`scaling.ebb.dev/paused`, `paused-until`), as they are.
pub fn pause_marks(meta: &ObjectMeta) -> PauseMarks {
    PauseMarks {
        paused: annotation(meta, PAUSED_ANNOTATION),
        paused_until: annotation(meta, PAUSED_UNTIL_ANNOTATION),
    }
}

fn labels(meta: &ObjectMeta) -> BTreeMap<String, String> {
    meta.labels.clone().unwrap_or_default()
}

fn name(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

/// `spec.scaleDown.enabled` of a ClusterAutoscaler, if set.
pub fn cluster_autoscaler_enabled(ca: &DynamicObject) -> Option<bool> {
    ca.data
        .pointer("/spec/scaleDown/enabled")
        .and_then(Value::as_bool)
}

/// `status.conditions` as `(type, status)` pairs; entries missing either are skipped (OpenShift's
/// conditions are not metav1.Conditions: every field is optional).
fn condition_pairs(obj: &DynamicObject) -> impl Iterator<Item = (&str, &str)> {
    obj.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            Some((
                c.get("type").and_then(Value::as_str)?,
                c.get("status").and_then(Value::as_str)?,
            ))
        })
}

/// Whether a ClusterVersion reports `Progressing=True`.
pub fn cluster_version_progressing(cv: &DynamicObject) -> bool {
    crate::decide::cluster_upgrading(condition_pairs(cv))
}

/// Whether a MachineConfigPool reports `Updating=True`.
pub fn machine_config_pool_updating(pool: &DynamicObject) -> bool {
    crate::decide::pool_updating(condition_pairs(pool))
}

/// A node as [`decide::plan_node`](crate::decide::plan_node) sees it.
pub fn node_view(meta: &ObjectMeta) -> NodeView {
    NodeView {
        name: name(meta),
        labels: labels(meta),
        resource_version: meta.resource_version.clone(),
        scale_down_disabled: annotation(meta, SCALE_DOWN_DISABLED_ANNOTATION),
        disabled_by: annotation(meta, DISABLED_BY_ANNOTATION),
        pause: pause_marks(meta),
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MachineAutoscalerSpec {
    min_replicas: Option<i32>,
    max_replicas: Option<i32>,
    scale_target_ref: Option<ScaleTargetRefSpec>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ScaleTargetRefSpec {
    api_version: String,
    kind: String,
    name: String,
}

/// A MachineAutoscaler as [`decide::plan_machine_autoscaler`](crate::decide::plan_machine_autoscaler)
/// sees it. A spec of the wrong shape reads as empty (the plan then reports it).
pub fn machine_autoscaler_view(ma: &DynamicObject) -> MachineAutoscalerView {
    let meta = &ma.metadata;
    let spec: MachineAutoscalerSpec = ma
        .data
        .get("spec")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default();
    MachineAutoscalerView {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: name(meta),
        labels: labels(meta),
        resource_version: meta.resource_version.clone(),
        min_replicas: spec.min_replicas,
        max_replicas: spec.max_replicas,
        target: spec.scale_target_ref.map(|t| ScaleTargetRef {
            api_version: t.api_version,
            kind: t.kind,
            name: t.name,
        }),
        configured_min: annotation(meta, CONFIGURED_MIN_ANNOTATION),
        pinned_min: annotation(meta, PINNED_MIN_ANNOTATION),
        disabled_by: annotation(meta, DISABLED_BY_ANNOTATION),
        pause: pause_marks(meta),
    }
}

/// A MachineSet's current size: `spec.replicas` (what the autoscaler last asked for), else
/// `status.replicas`.
pub fn machine_set_replicas(ms: &DynamicObject) -> Option<i32> {
    ["/spec/replicas", "/status/replicas"]
        .iter()
        .find_map(|p| ms.data.pointer(p).and_then(Value::as_i64))
        .and_then(|r| i32::try_from(r).ok())
}

/// A NodePool as [`decide::plan_node_pool`](crate::decide::plan_node_pool) sees it.
pub fn node_pool_view(pool: &DynamicObject) -> NodePoolView {
    let meta = &pool.metadata;
    NodePoolView {
        name: name(meta),
        labels: labels(meta),
        resource_version: meta.resource_version.clone(),
        budgets: pool
            .data
            .pointer("/spec/disruption/budgets")
            .and_then(Value::as_array)
            .cloned(),
        disabled_by: annotation(meta, DISABLED_BY_ANNOTATION),
        pause: pause_marks(meta),
    }
}

/// The body of one write: a server-side apply of only `spec.scaleDown.enabled` for the
/// ClusterAutoscaler; merge patches guarded by `metadata.resourceVersion` for the others, whose
/// ownership lives in annotations and in a list SSA cannot key.
pub fn patch_body(change: &Change, me: &str) -> Value {
    let mut annotations = Map::new();
    let meta = |resource_version: &Option<String>, annotations: Map<String, Value>| {
        let mut m = Map::new();
        if let Some(rv) = resource_version {
            m.insert("resourceVersion".into(), Value::String(rv.clone()));
        }
        if !annotations.is_empty() {
            m.insert("annotations".into(), Value::Object(annotations));
        }
        Value::Object(m)
    };
    match change {
        Change::ClusterAutoscaler { name, enabled } => json!({
            "apiVersion": "autoscaling.openshift.io/v1",
            "kind": "ClusterAutoscaler",
            "metadata": { "name": name },
            "spec": { "scaleDown": { "enabled": enabled } },
        }),
        Change::Node {
            resource_version,
            change,
            ..
        } => {
            let me = Value::String(me.to_owned());
            match change {
                NodeChange::Disable => {
                    annotations.insert(SCALE_DOWN_DISABLED_ANNOTATION.into(), json!("true"));
                    annotations.insert(DISABLED_BY_ANNOTATION.into(), me);
                }
                NodeChange::TakeOver => {
                    annotations.insert(DISABLED_BY_ANNOTATION.into(), me);
                }
                NodeChange::Release => {
                    annotations.insert(SCALE_DOWN_DISABLED_ANNOTATION.into(), Value::Null);
                    annotations.insert(DISABLED_BY_ANNOTATION.into(), Value::Null);
                }
            }
            json!({ "metadata": meta(resource_version, annotations) })
        }
        Change::MachineAutoscaler {
            resource_version,
            change,
            ..
        } => {
            for (key, value) in &change.annotations {
                annotations.insert(
                    (*key).to_owned(),
                    value.clone().map_or(Value::Null, Value::String),
                );
            }
            let mut body = json!({ "metadata": meta(resource_version, annotations) });
            if let Some(min) = change.min_replicas {
                body["spec"] = json!({ "minReplicas": min });
            }
            body
        }
        Change::NodePool {
            resource_version,
            change,
            ..
        } => {
            annotations.insert(
                DISABLED_BY_ANNOTATION.into(),
                change
                    .disabled_by
                    .clone()
                    .map_or(Value::Null, Value::String),
            );
            let mut body = json!({ "metadata": meta(resource_version, annotations) });
            if let Some(budgets) = &change.budgets {
                body["spec"] = json!({ "disruption": { "budgets": budgets } });
            }
            body
        }
    }
}
