//! Hibernation (`replicaSpec.hibernate`), pure: while a hibernating range is in force the HPA's
//! target runs 0 replicas, and when it ends the target gets back what it ran before.
//!
//! # Rules
//! - **Which workload.** The one a hibernation in progress recorded
//!   (`status.hibernation.scaleTargetRef`), else the HPA's `scaleTargetRef`, else
//!   [`scale_target`] (the HPA ebb would create). Only the kinds of [`SCALABLE`] are scaled (the
//!   chart grants `/scale` on exactly those); another kind leaves the workload alone and says so
//!   in `Ready`.
//! - **Sleep.** A hibernating range in force (after the lead: [`crate::lead`] wakes it
//!   `spec.leadTime` ahead of its end) and the workload runs `n > 0` replicas: the status records
//!   `n` first (a status write of its own, before the scale write), then `/scale` gets 0. A
//!   record already there is kept: a workload scaled up again mid-hibernation (by a person, by
//!   Argo CD) goes back to 0 and still returns to the count recorded first. A workload already at
//!   0 with no record is not ebb's hibernation: nothing is recorded.
//! - **Wake.** No hibernating range in force and a recorded hibernation: a workload still at 0
//!   gets `max(recorded, minReplicas)` (capped at `maxReplicas`) of the settings then in force,
//!   and the record goes with the same pass's status. A workload already running again (woken by
//!   an earlier pass whose status write was lost, or by hand) or gone only loses the record.
//! - **Never act twice.** Both writes carry absolute values and the Scale's `resourceVersion`
//!   as read (a 409 reads again and decides again); the record is written before the workload
//!   is touched and cleared after, so a restart, a `kill -9` or a new leader between any two
//!   writes finds what it needs in the status.
//! - Pause and the kill switch hold: nothing is scaled (see [`crate::decide_scaling`]). Deleting
//!   the ServiceScaler wakes the workload unless the deletion keeps things as they are
//!   (`deletionPolicy: Orphan`), see [`crate::decide_deletion`].

use ebb_core::plan::Target as WriteTarget;
use ebb_core::to_k8s_time;
use ebb_crds::service_scaler::{HibernationStatus, HpaSettings, ServiceScaler};
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler};
use kube::ResourceExt;
use kube::core::{ApiResource, GroupVersionKind};

use crate::hpa::scale_target;

/// The workload kinds hibernation scales through `/scale`: `(apiVersion, kind, plural)`.
pub const SCALABLE: [(&str, &str, &str); 3] = [
    ("apps/v1", "Deployment", "deployments"),
    ("apps/v1", "StatefulSet", "statefulsets"),
    ("apps/v1", "ReplicaSet", "replicasets"),
];

/// The API resource of `target`'s kind, when hibernation scales it ([`SCALABLE`]).
pub fn scale_resource(target: &CrossVersionObjectReference) -> Option<ApiResource> {
    let api_version = target.api_version.as_deref().unwrap_or("apps/v1");
    let (_, kind, plural) = SCALABLE
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == target.kind)?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Some(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    ))
}

/// Whether any range of `scaler` hibernates, or a hibernation is recorded: then a pass reads
/// the workload's Scale ([`hibernation_target`]).
pub fn reads_scale(scaler: &ServiceScaler) -> bool {
    recorded(scaler).is_some()
        || scaler
            .spec
            .time_range_spec
            .iter()
            .any(|r| r.replica_spec.hibernate)
}

/// The hibernation `scaler`'s status records.
pub fn recorded(scaler: &ServiceScaler) -> Option<&HibernationStatus> {
    scaler.status.as_ref()?.hibernation.as_ref()
}

/// The workload a hibernation of `scaler` concerns: the recorded one, else `hpa`'s target,
/// else the one ebb's HPA would get.
pub fn hibernation_target(
    scaler: &ServiceScaler,
    hpa: Option<&HorizontalPodAutoscaler>,
) -> CrossVersionObjectReference {
    if let Some(record) = recorded(scaler) {
        return record.scale_target_ref.clone();
    }
    hpa.and_then(|h| h.spec.as_ref())
        .map(|s| s.scale_target_ref.clone())
        .unwrap_or_else(|| scale_target(&scaler.spec, &scaler.name_any()))
}

/// `Deployment shop/web`, for messages.
pub fn describe_workload(scaler: &ServiceScaler, target: &CrossVersionObjectReference) -> String {
    format!(
        "{} {}/{}",
        target.kind,
        scaler.namespace().unwrap_or_default(),
        target.name
    )
}

/// What to do to the workload's replicas.
#[derive(Clone, Debug, PartialEq)]
pub enum Hibernation {
    /// Nothing (no hibernation, or one in force on a workload already at 0).
    Leave,
    /// Record `record`, then scale from `from` to 0.
    Sleep {
        /// The status record (the one already there, or a new one).
        record: HibernationStatus,
        /// The replicas it runs now.
        from: i32,
    },
    /// Scale from 0 to `replicas`, then drop the record.
    Wake {
        /// The replicas it gets back.
        replicas: i32,
    },
    /// Drop the record only (the workload runs again, or is gone).
    Forget,
    /// A hibernating range is in force on a workload hibernation does not scale.
    Unsupported(String),
}

impl Hibernation {
    /// The record the status keeps after this pass, given the one read.
    pub fn record_after(&self, read: Option<&HibernationStatus>) -> Option<HibernationStatus> {
        match self {
            Self::Sleep { record, .. } => Some(record.clone()),
            Self::Wake { .. } | Self::Forget => None,
            Self::Leave | Self::Unsupported(_) => read.cloned(),
        }
    }
}

/// The hibernation rule at one pass: `hibernate` whether a hibernating range is in force (after
/// the lead), `recorded` the status's record, `target` the workload ([`hibernation_target`]),
/// `scale` its Scale as read (`None`: the workload does not exist), `settings` those in force.
pub fn hibernation(
    hibernate: bool,
    recorded: Option<&HibernationStatus>,
    target: &CrossVersionObjectReference,
    scale: Option<&Scale>,
    settings: &HpaSettings,
    now: Timestamp,
) -> Hibernation {
    let replicas = scale.map(|s| s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if hibernate {
        if scale_resource(target).is_none() {
            let kinds: Vec<String> = SCALABLE
                .iter()
                .map(|(v, k, _)| format!("{v} {k}"))
                .collect();
            return Hibernation::Unsupported(format!(
                "cannot hibernate {} {} {}: only {} are scaled",
                target.api_version.as_deref().unwrap_or_default(),
                target.kind,
                target.name,
                kinds.join(", ")
            ));
        }
        return match replicas {
            Some(from) if from > 0 => Hibernation::Sleep {
                record: recorded.cloned().unwrap_or_else(|| HibernationStatus {
                    scale_target_ref: target.clone(),
                    replicas: from,
                    since: to_k8s_time(now),
                }),
                from,
            },
            _ => Hibernation::Leave,
        };
    }
    match (recorded, replicas) {
        (None, _) => Hibernation::Leave,
        (Some(record), Some(0)) => Hibernation::Wake {
            replicas: record
                .replicas
                .max(settings.min_replicas)
                .min(settings.max_replicas),
        },
        (Some(_), _) => Hibernation::Forget,
    }
}

/// Where the scale write goes: the `/scale` of `target` in `scaler`'s namespace.
pub fn scale_write_target(
    scaler: &ServiceScaler,
    target: &CrossVersionObjectReference,
) -> Option<WriteTarget> {
    Some(WriteTarget {
        resource: scale_resource(target)?,
        namespace: scaler.namespace(),
        name: target.name.clone(),
    })
}

#[cfg(test)]
#[path = "hibernate_tests.rs"]
mod tests;
