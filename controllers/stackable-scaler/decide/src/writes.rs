//! The writes of a pass of stackable-scaler, as the runtime's executor carries them out: the
//! status each step saves, the retry or abort annotation a step removes, the workload's new
//! replica count, the `Paused` condition dropped on resume. Pure: each names what was read.

use ebb_core::conditions::remove_condition;
use ebb_core::patch::merge_diff;
use ebb_core::pause::CONDITION_PAUSED;
use ebb_core::plan::{Category, Target, Write};
use ebb_crds::stackable::{StackableScaler, StackableScalerStatus};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::ResourceExt;
use serde_json::json;

use super::WorkloadKind;

/// Saves `status` on `scaler`: a merge patch of the status subresource holding what differs
/// from the scaler's status as read, naming its resourceVersion (a concurrent change is a 409,
/// never a lost update). `None` when nothing differs.
pub fn status_write(scaler: &StackableScaler, status: &StackableScalerStatus) -> Option<Write> {
    let old = scaler.status.clone().unwrap_or_default();
    if old == *status {
        return None;
    }
    let old = serde_json::to_value(old).unwrap_or_default();
    let new = serde_json::to_value(status).unwrap_or_default();
    Some(Write::merge_status(
        Target::of(scaler),
        scaler.resource_version().as_deref(),
        json!({ "status": merge_diff(&old, &new) }),
        Category::Status,
    ))
}

/// Removes `annotation` from `scaler`, naming the resourceVersion read: a retry or abort asked
/// for again since the read is a 409, decided on again, not dropped.
pub fn strip_write(scaler: &StackableScaler, annotation: &str) -> Write {
    Write::merge(
        Target::of(scaler),
        scaler.resource_version().as_deref(),
        json!({"metadata": {"annotations": {annotation: null}}}),
        Category::Metadata,
    )
}

/// Sets the replicas of the workload `kind` `namespace`/`name` to `replicas`, naming the
/// resourceVersion read (`resource_version`): a workload changed since is decided on again.
pub fn resize_write(
    kind: WorkloadKind,
    namespace: &str,
    name: &str,
    resource_version: Option<&str>,
    replicas: i32,
) -> Write {
    let target = match kind {
        WorkloadKind::StatefulSet => Target::named::<StatefulSet>(Some(namespace), name),
        WorkloadKind::Deployment => Target::named::<Deployment>(Some(namespace), name),
    };
    Write::scale(target, resource_version, replicas, Category::Target)
}

/// The writes that carry out one step of the state machine on `scaler` as it is now, in order:
/// the plan's status when it differs ([`status_write`]), then, when the step's action is to,
/// the removal of the retry or abort annotation ([`strip_write`]; the executor names the
/// version the status write left). A hook to ask or replicas to set follow them; a note is an
/// Event once they succeeded.
pub fn step_writes(scaler: &StackableScaler, plan: &crate::Step) -> Vec<Write> {
    let strip = match plan.action {
        crate::Action::StripRetryAnnotation => Some(crate::RETRY_ANNOTATION),
        crate::Action::StripAbortAnnotation => Some(crate::ABORT_ANNOTATION),
        _ => None,
    };
    status_write(scaler, &plan.status)
        .into_iter()
        .chain(strip.map(|annotation| strip_write(scaler, annotation)))
        .collect()
}

/// Resuming (or never paused): the status write that drops the `Paused` condition, when the
/// scaler holds one.
pub fn resume_write(scaler: &StackableScaler) -> Option<Write> {
    let mut status = scaler.status.clone()?;
    match remove_condition(&mut status.conditions, CONDITION_PAUSED) {
        true => status_write(scaler, &status),
        false => None,
    }
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;
