//! The `karpenterNodePools` target: Karpenter NodePools, to whose `spec.disruption.budgets` ebb
//! adds one `nodes: "0"` budget outside windows (for every disruption reason, or the schedule's
//! `reasons`). Its view, plan and patch.

use std::collections::BTreeMap;

use ebb_crds::scaledown::DisruptionReason;
use kube::core::{ApiResource, DynamicObject};
use serde_json::{Map, Value, json};

use super::{annotation, labels, metadata, name, pause_marks, resource};
use crate::{
    Change, Claim, DISABLED_BY_ANNOTATION, ObjectId, PauseMarks, TargetDecider, TargetKind,
};

/// `karpenter.sh/v1` NodePool (cluster-scoped).
pub fn node_pool() -> ApiResource {
    resource("karpenter.sh", "v1", "NodePool", "nodepools")
}

/// What scaledown-window sees of a Karpenter NodePool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePoolView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// `spec.disruption.budgets`, as they are (absent: `None`).
    pub budgets: Option<Vec<Value>>,
    /// The value of [`DISABLED_BY_ANNOTATION`]: ebb added one [`ebb_budget`] to the list.
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

/// A change of one NodePool.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePoolChange {
    /// The whole new `spec.disruption.budgets` list, when it changes.
    pub budgets: Option<Vec<Value>>,
    /// The new value of [`DISABLED_BY_ANNOTATION`] (`None`: remove it).
    pub disabled_by: Option<String>,
}

/// The disruption budget ebb adds outside windows: no node may be disrupted at any time, for
/// any reason, or (`reasons` not empty) for those reasons.
pub fn ebb_budget(reasons: &[DisruptionReason]) -> Value {
    let mut reasons: Vec<&str> = reasons.iter().map(|r| r.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    match reasons.is_empty() {
        true => json!({ "nodes": "0" }),
        false => json!({ "nodes": "0", "reasons": reasons }),
    }
}

/// Whether a budget has the shape of an [`ebb_budget`], for any reasons: `nodes: "0"` and at
/// most `reasons` besides (never a `schedule`). A user's budget of the same shape is
/// indistinguishable and equivalent; the annotation says that one such budget is ebb's.
pub fn is_ebb_budget(budget: &Value) -> bool {
    budget.as_object().is_some_and(|fields| {
        fields.get("nodes") == Some(&json!("0"))
            && fields.keys().all(|k| k == "nodes" || k == "reasons")
    })
}

/// The change a NodePool needs.
///
/// Outside windows the managing schedule makes sure one [`ebb_budget`] it accounts for is in the
/// list (appended, with [`DISABLED_BY_ANNOTATION`] recording that it did); inside windows it
/// removes one such budget and the annotation. Every other budget, and any budget when the
/// annotation is absent, stays as it is, in order. A NodePool no live schedule selects any more
/// loses the budget when this schedule added it.
///
/// `reasons` are the schedule's (`karpenterNodePools.reasons`): a marked budget of other reasons
/// (the spec changed) is replaced in place.
pub fn decide_node_pool(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    pool: &NodePoolView,
    reasons: &[DisruptionReason],
) -> Option<NodePoolChange> {
    let budgets = pool.budgets.clone().unwrap_or_default();
    let ours = budgets.iter().rposition(is_ebb_budget);
    let release = match claim {
        Claim::Ours if !desired_enabled => {
            let wanted = ebb_budget(reasons);
            let mut budgets = budgets;
            let list = match (&pool.disabled_by, ours) {
                (Some(_), Some(at)) if budgets[at] == wanted => None,
                (Some(_), Some(at)) => {
                    budgets[at] = wanted;
                    Some(budgets)
                }
                _ => {
                    budgets.push(wanted);
                    Some(budgets)
                }
            };
            let mark = pool.disabled_by.as_deref() != Some(me);
            return (list.is_some() || mark).then(|| NodePoolChange {
                budgets: list,
                disabled_by: Some(me.to_owned()),
            });
        }
        Claim::Ours => pool.disabled_by.is_some(),
        Claim::Unclaimed => pool.disabled_by.as_deref() == Some(me),
        Claim::LostTo(_) | Claim::Other => false,
    };
    if !release {
        return None;
    }
    let mut budgets = budgets;
    let removed = ours.map(|i| budgets.remove(i)).is_some();
    Some(NodePoolChange {
        budgets: removed.then_some(budgets),
        disabled_by: None,
    })
}

/// A NodePool as [`decide_node_pool`] sees it.
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

/// Plans every NodePool.
pub(crate) fn decide(
    decider: &mut TargetDecider<'_>,
    pools: &[NodePoolView],
    reasons: &[DisruptionReason],
) {
    for pool in pools {
        let id = ObjectId {
            kind: TargetKind::KarpenterNodePools,
            namespace: None,
            name: &pool.name,
            labels: &pool.labels,
        };
        let label = format!("NodePool {}", pool.name);
        let claim = decider.claim(id, &label);
        if decider.paused(&claim, &label, &pool.pause) {
            continue;
        }
        if let Some(change) = decide_node_pool(decider.me, &claim, decider.desired, pool, reasons) {
            decider.decision.changes.push(Change::NodePool {
                name: pool.name.clone(),
                resource_version: pool.resource_version.clone(),
                change,
            });
        }
    }
}

/// A merge patch of the annotation and the whole budgets list, guarded by the resourceVersion.
pub fn patch(resource_version: &Option<String>, change: &NodePoolChange) -> Value {
    let mut annotations = Map::new();
    annotations.insert(
        DISABLED_BY_ANNOTATION.into(),
        change
            .disabled_by
            .clone()
            .map_or(Value::Null, Value::String),
    );
    let mut body = json!({ "metadata": metadata(resource_version, annotations) });
    if let Some(budgets) = &change.budgets {
        body["spec"] = json!({ "disruption": { "budgets": budgets } });
    }
    body
}
