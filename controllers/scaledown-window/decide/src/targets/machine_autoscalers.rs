//! The `machineAutoscalers` target: OpenShift MachineAutoscalers whose `spec.minReplicas` ebb
//! pins to their MachineSet's size outside windows, keeping the configured minimum in an
//! annotation. Its view, plan and patch.

use std::collections::BTreeMap;

use kube::core::{ApiResource, DynamicObject};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{annotation, labels, metadata, name, pause_marks, resource};
use crate::{
    CONFIGURED_MIN_ANNOTATION, Change, Claim, DISABLED_BY_ANNOTATION, ObjectId,
    PINNED_MIN_ANNOTATION, PauseMarks, TargetDecider, TargetKind,
};

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

/// A MachineAutoscaler's `spec.scaleTargetRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScaleTargetRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
}

/// What scaledown-window sees of a MachineAutoscaler.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineAutoscalerView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// `spec.minReplicas`.
    pub min_replicas: Option<i32>,
    /// `spec.maxReplicas`.
    pub max_replicas: Option<i32>,
    /// `spec.scaleTargetRef`.
    pub target: Option<ScaleTargetRef>,
    /// The value of [`CONFIGURED_MIN_ANNOTATION`].
    pub configured_min: Option<String>,
    /// The value of [`PINNED_MIN_ANNOTATION`].
    pub pinned_min: Option<String>,
    /// The value of [`DISABLED_BY_ANNOTATION`].
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

impl MachineAutoscalerView {
    fn has_marks(&self) -> bool {
        self.configured_min.is_some() || self.pinned_min.is_some() || self.disabled_by.is_some()
    }

    /// The name of the MachineSet it scales, when its target is one.
    pub fn machine_set(&self) -> Option<&str> {
        self.target
            .as_ref()
            .filter(|t| t.kind == "MachineSet")
            .map(|t| t.name.as_str())
    }
}

/// A change of one MachineAutoscaler: only the fields that differ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineAutoscalerChange {
    /// New `spec.minReplicas`.
    pub min_replicas: Option<i32>,
    /// Annotations to set (`Some`) or remove (`None`).
    pub annotations: BTreeMap<&'static str, Option<String>>,
}

/// The outcome of planning one MachineAutoscaler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineDecision {
    /// It is as it should be, or not this schedule's to change.
    Nothing,
    /// Write this.
    Change(MachineAutoscalerChange),
    /// It cannot be planned (a message for a condition); nothing is written to it.
    Problem(String),
}

fn parse_replicas(value: &str) -> Option<i32> {
    value.trim().parse::<i32>().ok().filter(|v| *v >= 0)
}

/// The minimum the user configured: `spec.minReplicas` when ebb has not pinned it, else the
/// annotation ebb kept, unless `spec.minReplicas` is no longer what ebb pinned (someone set it
/// since: their value is the configured minimum now).
fn configured_min(ma: &MachineAutoscalerView) -> Result<i32, String> {
    let spec_min = ma
        .min_replicas
        .ok_or_else(|| format!("MachineAutoscaler {} has no spec.minReplicas", ma.name))?;
    let Some(kept) = ma.configured_min.as_deref() else {
        return Ok(spec_min);
    };
    let kept = parse_replicas(kept).ok_or_else(|| {
        format!(
            "MachineAutoscaler {}: annotation {CONFIGURED_MIN_ANNOTATION} is {kept:?}, not a \
             non-negative integer; fix or remove it",
            ma.name
        )
    })?;
    match ma.pinned_min.as_deref().and_then(parse_replicas) {
        Some(pinned) if pinned != spec_min => Ok(spec_min),
        _ => Ok(kept),
    }
}

/// The change a MachineAutoscaler needs.
///
/// Outside windows the managing schedule pins `spec.minReplicas` to its MachineSet's current
/// replicas, so the autoscaler cannot remove machines: never below the configured minimum, never
/// raised above `spec.maxReplicas`. The configured minimum is kept in an annotation while it is
/// pinned (so a restart loses nothing); inside windows it is restored and the annotations go. A
/// MachineAutoscaler no live schedule selects any more is restored when this schedule pinned it.
pub fn decide_machine_autoscaler(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    ma: &MachineAutoscalerView,
    machine_set_replicas: Option<i32>,
) -> MachineDecision {
    let pin = match claim {
        Claim::Ours => !desired_enabled,
        Claim::Unclaimed if ma.disabled_by.as_deref() == Some(me) => false,
        Claim::Unclaimed | Claim::LostTo(_) | Claim::Other => return MachineDecision::Nothing,
    };
    if !pin && !ma.has_marks() {
        return MachineDecision::Nothing;
    }
    let configured = match configured_min(ma) {
        Ok(configured) => configured,
        Err(problem) => return MachineDecision::Problem(problem),
    };
    let target_min = if pin {
        let Some(machine_set) = ma.machine_set() else {
            return MachineDecision::Problem(format!(
                "MachineAutoscaler {}: spec.scaleTargetRef is not a MachineSet",
                ma.name
            ));
        };
        let Some(replicas) = machine_set_replicas else {
            return MachineDecision::Problem(format!(
                "MachineAutoscaler {}: MachineSet {machine_set} not found",
                ma.name
            ));
        };
        let ceiling = ma.max_replicas.unwrap_or(i32::MAX);
        configured.max(replicas.min(ceiling))
    } else {
        configured
    };
    let keep_marks = target_min != configured;
    let want = |value: String| keep_marks.then_some(value);
    let desired: [(&'static str, Option<String>); 3] = [
        (CONFIGURED_MIN_ANNOTATION, want(configured.to_string())),
        (PINNED_MIN_ANNOTATION, want(target_min.to_string())),
        (DISABLED_BY_ANNOTATION, want(me.to_owned())),
    ];
    let observed = [&ma.configured_min, &ma.pinned_min, &ma.disabled_by];
    let change = MachineAutoscalerChange {
        min_replicas: (ma.min_replicas != Some(target_min)).then_some(target_min),
        annotations: desired
            .into_iter()
            .zip(observed)
            .filter(|((_, want), have)| want != *have)
            .map(|((key, want), _)| (key, want))
            .collect(),
    };
    if change == MachineAutoscalerChange::default() {
        MachineDecision::Nothing
    } else {
        MachineDecision::Change(change)
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

/// A MachineAutoscaler as [`decide_machine_autoscaler`]
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

/// Plans every MachineAutoscaler of the namespace, with the replicas of their MachineSets.
pub(crate) fn decide(
    decider: &mut TargetDecider<'_>,
    autoscalers: &[MachineAutoscalerView],
    machine_sets: &BTreeMap<String, i32>,
) {
    for ma in autoscalers {
        let id = ObjectId {
            kind: TargetKind::MachineAutoscalers,
            namespace: Some(&ma.namespace),
            name: &ma.name,
            labels: &ma.labels,
        };
        let label = format!("MachineAutoscaler {}/{}", ma.namespace, ma.name);
        let claim = decider.claim(id, &label);
        if decider.paused(&claim, &label, &ma.pause) {
            continue;
        }
        let replicas = ma
            .machine_set()
            .and_then(|ms| machine_sets.get(ms).copied());
        match decide_machine_autoscaler(decider.me, &claim, decider.desired, ma, replicas) {
            MachineDecision::Nothing => {}
            MachineDecision::Change(change) => {
                decider.decision.changes.push(Change::MachineAutoscaler {
                    namespace: ma.namespace.clone(),
                    name: ma.name.clone(),
                    resource_version: ma.resource_version.clone(),
                    change,
                })
            }
            MachineDecision::Problem(problem) => decider.decision.problems.push(problem),
        }
    }
}

/// A merge patch of the annotations and `spec.minReplicas`, guarded by the resourceVersion.
pub fn patch(resource_version: &Option<String>, change: &MachineAutoscalerChange) -> Value {
    let mut annotations = Map::new();
    for (key, value) in &change.annotations {
        annotations.insert(
            (*key).to_owned(),
            value.clone().map_or(Value::Null, Value::String),
        );
    }
    let mut body = json!({ "metadata": metadata(resource_version, annotations) });
    if let Some(min) = change.min_replicas {
        body["spec"] = json!({ "minReplicas": min });
    }
    body
}
