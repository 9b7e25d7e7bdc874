//! The `clusterAutoscaler` target: OpenShift's ClusterAutoscaler, its `spec.scaleDown.enabled`
//! written by server-side apply (the one field ebb owns there). Its view, plan and patch.

use kube::core::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use super::resource;
use crate::{Change, Claim, ObjectId, PauseMarks, TargetDecider, TargetKind};

/// `autoscaling.openshift.io/v1` ClusterAutoscaler (cluster-scoped).
pub fn cluster_autoscaler() -> ApiResource {
    resource(
        "autoscaling.openshift.io",
        "v1",
        "ClusterAutoscaler",
        "clusterautoscalers",
    )
}

/// The one ClusterAutoscaler of an OpenShift cluster, which MachineAutoscalers depend on.
pub const CLUSTER_AUTOSCALER_NAME: &str = "default";

/// Whether the ClusterAutoscaler lets the cluster-autoscaler remove nodes at all. A
/// `machineAutoscalers` target only moves the MachineAutoscalers' minimum: inside windows nodes go
/// only if the ClusterAutoscaler has `spec.scaleDown.enabled: true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterAutoscalerScaleDown {
    /// There is no ClusterAutoscaler [`CLUSTER_AUTOSCALER_NAME`] (or no API for it).
    Missing,
    /// Its `spec.scaleDown.enabled` is not `true`: the value, `None` when unset.
    Off(Option<bool>),
    /// `spec.scaleDown.enabled: true`.
    On,
}

impl ClusterAutoscalerScaleDown {
    /// From a lookup: `None` not found, else its `spec.scaleDown.enabled` if set.
    pub fn from_lookup(found: Option<Option<bool>>) -> Self {
        match found {
            None => Self::Missing,
            Some(Some(true)) => Self::On,
            Some(enabled) => Self::Off(enabled),
        }
    }
}

/// `spec.scaleDown.enabled` of a ClusterAutoscaler, if set.
pub fn cluster_autoscaler_enabled(ca: &DynamicObject) -> Option<bool> {
    ca.data
        .pointer("/spec/scaleDown/enabled")
        .and_then(Value::as_bool)
}

/// `spec.scaleDown.enabled` to apply to a ClusterAutoscaler, if it must change.
///
/// The managing schedule applies its decision. An unclaimed one (only while its last schedule is
/// being deleted) is released to scale-down enabled, the autoscaler's behaviour without ebb.
pub fn decide_cluster_autoscaler(
    claim: &Claim,
    desired_enabled: bool,
    observed_enabled: Option<bool>,
) -> Option<bool> {
    let want = match claim {
        Claim::Ours => desired_enabled,
        Claim::Unclaimed => true,
        Claim::LostTo(_) | Claim::Other => return None,
    };
    (observed_enabled != Some(want)).then_some(want)
}

/// Plans the ClusterAutoscaler `name` (`enabled`: `None` when not found, else its
/// `spec.scaleDown.enabled`; `uid` as read). Not found: nothing is selected, so nothing is claimed
/// either.
pub(crate) fn decide(
    decider: &mut TargetDecider<'_>,
    name: &str,
    enabled: Option<Option<bool>>,
    uid: Option<&str>,
    pause: &PauseMarks,
) {
    let Some(enabled) = enabled else {
        return;
    };
    let no_labels = Default::default();
    let id = ObjectId {
        kind: TargetKind::ClusterAutoscaler,
        namespace: None,
        name,
        labels: &no_labels,
    };
    let label = format!("ClusterAutoscaler {name}");
    let claim = decider.claim(id, &label);
    if !decider.paused(&claim, &label, pause)
        && let Some(set) = decide_cluster_autoscaler(&claim, decider.desired, enabled)
    {
        decider.decision.changes.push(Change::ClusterAutoscaler {
            name: name.to_owned(),
            uid: uid.map(str::to_owned),
            enabled: set,
        });
    }
}

/// A server-side apply of only `spec.scaleDown.enabled`, naming the `uid` read: apply is an
/// upsert, and a ClusterAutoscaler deleted since the read must not come back made by ebb (on
/// OpenShift that would start a cluster-autoscaler). With the uid, kube-apiserver answers 409
/// when the object is gone and 422 (`metadata.uid` is immutable) when it was made again.
pub fn patch(name: &str, uid: Option<&str>, enabled: bool) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(uid) = uid {
        metadata["uid"] = json!(uid);
    }
    json!({
        "apiVersion": "autoscaling.openshift.io/v1",
        "kind": "ClusterAutoscaler",
        "metadata": metadata,
        "spec": { "scaleDown": { "enabled": enabled } },
    })
}
