//! The target kinds, one module each holding its view (what ebb reads of the object), its plan
//! (the minimal change that brings one object to the decision, touching only what ebb set) and its
//! patch (the body of the write): [`cluster_autoscaler`], [`nodes`], [`machine_autoscalers`],
//! [`node_pools`]. Pure, like [`decide`](crate), which gathers them into a
//! [`TargetDecision`](crate::TargetDecision). Also here: OpenShift's ClusterVersion and
//! MachineConfigPools, read for `followClusterUpgrade`.
//!
//! The kinds ebb does not ship (OpenShift, Karpenter) are read as `DynamicObject`s: ebb needs a
//! handful of their fields and must not drop the others when it writes, so it never round-trips a
//! whole object through a Rust type.

pub mod cluster_autoscaler;
pub mod machine_autoscalers;
pub mod node_pools;
pub mod nodes;

pub use cluster_autoscaler::{cluster_autoscaler, cluster_autoscaler_enabled};
pub use machine_autoscalers::{
    machine_autoscaler, machine_autoscaler_view, machine_set, machine_set_replicas,
};
pub use node_pools::{node_pool, node_pool_view};
pub use nodes::node_view;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value};

use crate::{Change, PauseMarks};
use ebb_core::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};

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

pub(crate) fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub(crate) fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

/// An object's pause annotations (`scaling.ebb.dev/paused`, `paused-until`), as they are.
pub fn pause_marks(meta: &ObjectMeta) -> PauseMarks {
    PauseMarks {
        paused: annotation(meta, PAUSED_ANNOTATION),
        paused_until: annotation(meta, PAUSED_UNTIL_ANNOTATION),
    }
}

pub(crate) fn labels(meta: &ObjectMeta) -> BTreeMap<String, String> {
    meta.labels.clone().unwrap_or_default()
}

pub(crate) fn name(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
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
    crate::cluster_upgrading(condition_pairs(cv))
}

/// Whether a MachineConfigPool reports `Updating=True`.
pub fn machine_config_pool_updating(pool: &DynamicObject) -> bool {
    crate::pool_updating(condition_pairs(pool))
}

/// The `metadata` of a merge patch: the resourceVersion precondition and the annotations.
pub(crate) fn metadata(
    resource_version: &Option<String>,
    annotations: Map<String, Value>,
) -> Value {
    let mut m = Map::new();
    if let Some(rv) = resource_version {
        m.insert("resourceVersion".into(), Value::String(rv.clone()));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(m)
}

/// The body of one write: a server-side apply of only `spec.scaleDown.enabled` for the
/// ClusterAutoscaler; merge patches guarded by `metadata.resourceVersion` for the others, whose
/// ownership lives in annotations and in a list SSA cannot key.
pub fn patch_body(change: &Change, me: &str) -> Value {
    match change {
        Change::ClusterAutoscaler { name, uid, enabled } => {
            cluster_autoscaler::patch(name, uid.as_deref(), *enabled)
        }
        Change::Node {
            resource_version,
            change,
            ..
        } => nodes::patch(resource_version, change, me),
        Change::MachineAutoscaler {
            resource_version,
            change,
            ..
        } => machine_autoscalers::patch(resource_version, change),
        Change::NodePool {
            resource_version,
            change,
            ..
        } => node_pools::patch(resource_version, change),
    }
}
