//! A pass over a ScaleDownSchedule as the runtime's plan: the finalizer rule ([`finalizer_step`]),
//! the target's changes as writes ([`change_write`]), and the plans of the three paths a pass can
//! take: hold the target ([`add_finalizer`]), apply the schedule ([`apply_plan`]), release on
//! deletion ([`release_plan`]).
//!
//! Writes: the ClusterAutoscaler's `spec.scaleDown.enabled` by server-side apply (naming the uid
//! read, so a deleted ClusterAutoscaler is never made again); Nodes, MachineAutoscalers and
//! NodePools by merge patches naming the resourceVersion they were planned from. The target's
//! writes are [independent](Write::independent): one object's failure does not hold the others
//! back, and the pass fails with the first failure once all were tried (the status, the Events and
//! the finalizer wait for the next pass).

use ebb_core::plan::{Category, Plan, Requeue, StatusPatch, Target, Write};
use ebb_core::{Notice, patch::merge_diff};
use ebb_crds::scaledown::ScaleDownSchedule;
use k8s_openapi::api::core::v1::Node;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::{Change, Report, TargetKind, summarize};
use crate::targets;

/// Held on a ScaleDownSchedule while ebb may have changed its target, so deleting it first
/// releases what ebb set.
pub const FINALIZER: &str = "scaling.ebb.dev/scaledown-window";

/// What the pass does about [`FINALIZER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerStep {
    /// The schedule may write to its target and does not hold the finalizer yet: add it, and
    /// nothing else this pass (the watch brings the next).
    Add,
    /// Being deleted while holding it: release what it set, then remove it.
    Release,
    /// Being deleted without it: nothing of ebb's is left to release.
    Gone,
    /// Apply the schedule (the finalizer stays as it is).
    Apply,
}

/// The finalizer rule. `writes_target`: the schedule may write to its target now (its kind is
/// served, it is not paused, not a dry run); only then is the finalizer added, and one already
/// there stays until the deletion releases the target.
pub fn finalizer_step(schedule: &ScaleDownSchedule, writes_target: bool) -> FinalizerStep {
    let holds = schedule.finalizers().iter().any(|f| f == FINALIZER);
    match (schedule.metadata.deletion_timestamp.is_some(), holds) {
        (true, true) => FinalizerStep::Release,
        (true, false) => FinalizerStep::Gone,
        (false, false) if writes_target => FinalizerStep::Add,
        (false, _) => FinalizerStep::Apply,
    }
}

/// The gauges of one schedule: its series, or `None` to drop them (it is being deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleGauges {
    /// The schedule's name.
    pub name: String,
    /// What they show.
    pub values: Option<GaugeValues>,
}

/// The gauges' values after an applied pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GaugeValues {
    /// The decision: scale-down enabled.
    pub enabled: bool,
    /// The spec or the target is invalid.
    pub invalid: bool,
    /// Another schedule manages some selected objects.
    pub conflict: bool,
    /// The cluster does not serve the target's API.
    pub api_missing: bool,
    /// `scaleDownEnabled` changed since the stored status (counted as a flip).
    pub flipped: bool,
}

/// The object a change goes to.
fn change_target(change: &Change) -> Target {
    let (resource, namespace, name) = match change {
        Change::ClusterAutoscaler { name, .. } => (targets::cluster_autoscaler(), None, name),
        Change::Node { name, .. } => {
            return Target::named::<Node>(None, name);
        }
        Change::MachineAutoscaler {
            namespace, name, ..
        } => (targets::machine_autoscaler(), Some(namespace.clone()), name),
        Change::NodePool { name, .. } => (targets::node_pool(), None, name),
    };
    Target {
        resource,
        namespace,
        name: name.clone(),
    }
}

/// `change` as a write by schedule `me` (the body names what was read: [`targets::patch_body`]),
/// counted under its kind.
pub fn change_write(change: &Change, me: &str) -> Write {
    let body = targets::patch_body(change, me);
    let target = change_target(change);
    let write = match change {
        Change::ClusterAutoscaler { .. } => Write::apply(target, body, Category::Target),
        Change::Node {
            resource_version, ..
        }
        | Change::MachineAutoscaler {
            resource_version, ..
        }
        | Change::NodePool {
            resource_version, ..
        } => Write::merge(target, resource_version.as_deref(), body, Category::Target),
    };
    write.reason(change.kind().object_kind()).independent()
}

/// The kind a write's `reason` names ([`TargetKind::object_kind`]), for the writes counter.
pub fn kind_of_reason(reason: &str) -> Option<TargetKind> {
    [
        TargetKind::ClusterAutoscaler,
        TargetKind::NodeAnnotation,
        TargetKind::MachineAutoscalers,
        TargetKind::KarpenterNodePools,
    ]
    .into_iter()
    .find(|kind| kind.object_kind() == reason)
}

/// [`FINALIZER`] added (`add`) or removed, naming the resourceVersion read.
fn finalizer_write(schedule: &ScaleDownSchedule, add: bool) -> Write {
    Write::finalizers(schedule, &[FINALIZER], add.then_some(FINALIZER))
}

/// [`FinalizerStep::Add`]: the finalizer alone; the change of the schedule brings the next pass.
pub fn add_finalizer(schedule: &ScaleDownSchedule) -> Plan<Option<ScheduleGauges>> {
    let mut plan = Plan::new(schedule.object_ref(&()), None);
    plan.writes.push(finalizer_write(schedule, true));
    plan
}

/// An applied pass: the target's `changes` (none in a dry run), then the status and Events of
/// `report`, the gauges, and the requeue.
pub fn apply_plan(
    schedule: &ScaleDownSchedule,
    changes: &[Change],
    enabled: bool,
    report: Report,
) -> Plan<Option<ScheduleGauges>> {
    let name = schedule.name_any();
    let gauges = ScheduleGauges {
        name: name.clone(),
        values: Some(GaugeValues {
            enabled,
            invalid: report.invalid,
            conflict: report.conflict,
            api_missing: report.api_missing,
            flipped: report.flipped,
        }),
    };
    let mut plan = Plan::new(schedule.object_ref(&()), Some(gauges));
    plan.writes
        .extend(changes.iter().map(|change| change_write(change, &name)));
    plan.status = report.status.map(|status| {
        let old =
            serde_json::to_value(schedule.status.clone().unwrap_or_default()).unwrap_or_default();
        let new = serde_json::to_value(status).unwrap_or_default();
        StatusPatch {
            target: Target::of(schedule),
            patch: json!({ "status": merge_diff(&old, &new) }),
        }
    });
    plan.notices = report.notices;
    plan.requeue = report.requeue.map_or(Requeue::AwaitChange, Requeue::After);
    plan
}

/// [`FinalizerStep::Release`]: the `changes` that release what the schedule set (none when it
/// is paused, a dry run or its kind switched off), a `Released` Event once they all succeeded,
/// then the finalizer goes; its gauges are dropped.
pub fn release_plan(
    schedule: &ScaleDownSchedule,
    changes: &[Change],
) -> Plan<Option<ScheduleGauges>> {
    let name = schedule.name_any();
    let gauges = ScheduleGauges {
        name: name.clone(),
        values: None,
    };
    let mut plan = Plan::new(schedule.object_ref(&()), Some(gauges));
    plan.writes
        .extend(changes.iter().map(|change| change_write(change, &name)));
    if let Some(last) = plan.writes.pop() {
        let described: Vec<String> = changes.iter().map(Change::describe).collect();
        let note = format!("deleted: {}", summarize(&described, 5));
        plan.writes
            .push(last.notice(Notice::normal("Released", "Release", note)));
    }
    plan.writes.push(finalizer_write(schedule, false));
    plan
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;
