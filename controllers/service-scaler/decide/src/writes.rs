//! The whole pass as a [`Plan`]: [`decide`] turns the decision of a live ServiceScaler
//! ([`decide_scaling`]) or of one being deleted ([`decide_deletion`]) into the writes in their
//! order, the status, the Events, the gauge and the requeue; [`decide_unreadable`] does the same
//! for one whose spec does not fit the type. The runtime's executor carries the plan out.
//!
//! The writes of a live ServiceScaler, each only when the decision asks for it:
//! 1. adding [`FINALIZER`] (a merge patch naming the resourceVersion read). First, so that an
//!    adopted HPA is never changed while nothing guarantees that deleting the ServiceScaler
//!    restores it (the end-to-end suite caught the other order);
//! 2. the HPA: created with a POST (full spec, `scaleTargetRef`, an owner reference to the
//!    ServiceScaler) when missing, else a server-side apply of exactly the owned fields, naming
//!    the uid and resourceVersion read ([`OwnedFields::precondition`]). Creating with a POST
//!    rather than an apply keeps `scaleTargetRef` out of the apply set: a later apply without it
//!    would otherwise remove the field ebb alone owned, which the API server rejects. Its Event
//!    goes with it;
//! 3. removing [`FINALIZER`] once it is no longer needed (the same merge patch);
//! 4. the status: only what changed.
//!
//! On deletion: drop the HPA's owner reference (a merge patch naming its resourceVersion),
//! restore it (server-side apply; after the disown, on the HPA as the disown left it) or delete
//! it (naming its uid), with the Events of those steps; then remove ebb's and udaan's
//! finalizers.
//!
//! Every write carries absolute values, so a retry after a lost answer finds the HPA in sync
//! and plans nothing: never act twice.

use ebb_core::patch::merge_diff;
use ebb_core::plan::{Category, Requeue, StatusPatch, Target, Write};
use ebb_core::{ConditionUpdate, Notice, set_condition, to_k8s_time};
use ebb_crds::service_scaler::{ServiceScaler, ServiceScalerStatus};
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::{ApiResource, DynamicObject};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::{
    CONDITION_READY, CONDITION_SPEC_VALID, Decision, DeletionDecision, FINALIZER, FinalizerChange,
    Hibernation, HpaChange, ManagedState, Observed, UDAAN_FINALIZER, WriteReason, decide_deletion,
    decide_release, decide_scaling, scale_write_target,
};

/// A pass of service-scaler: the runtime's plan with its [`Gauge`].
pub type Plan = ebb_core::Plan<Gauge>;

/// The managed-objects gauge of one ServiceScaler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gauge {
    /// `namespace/name`.
    pub key: String,
    /// How it is handled; `None`: it is gone (or going), forget it.
    pub state: Option<ManagedState>,
}

/// Everything one pass does for the ServiceScaler and HPA `observed` at `now`.
pub fn decide(observed: &Observed<'_>, now: Timestamp) -> Plan {
    if observed.scaler.metadata.deletion_timestamp.is_some() {
        deletion_plan(observed, decide_deletion(observed, now))
    } else {
        live_plan(observed, decide_scaling(observed, now))
    }
}

/// `namespace/name` of `scaler`.
fn key_of(scaler: &ServiceScaler) -> String {
    format!(
        "{}/{}",
        scaler.namespace().unwrap_or_default(),
        scaler.name_any()
    )
}

/// The HPA of `scaler` (same namespace and name).
fn hpa_target(scaler: &ServiceScaler) -> Target {
    Target::named::<HorizontalPodAutoscaler>(scaler.namespace().as_deref(), &scaler.name_any())
}

/// [`FINALIZER`] added or removed (and, with `drop_udaan`, [`UDAAN_FINALIZER`] removed), naming
/// the resourceVersion read.
fn finalizer_write(scaler: &ServiceScaler, add: bool, drop_udaan: bool) -> Write {
    let remove: &[&str] = match drop_udaan {
        true => &[FINALIZER, UDAAN_FINALIZER],
        false => &[FINALIZER],
    };
    Write::finalizers(scaler, remove, add.then_some(FINALIZER))
}

/// The plan of [`decide_scaling`]'s decision.
fn live_plan(observed: &Observed<'_>, decision: Decision) -> Plan {
    let scaler = observed.scaler;
    let gauge = Gauge {
        key: key_of(scaler),
        state: Some(decision.state),
    };
    let mut plan = Plan::new(scaler.object_ref(&()), gauge);
    if decision.finalizer == FinalizerChange::Add {
        plan.writes.push(finalizer_write(scaler, true, false));
    }
    let hpa_write = match decision.hpa {
        HpaChange::Leave => None,
        HpaChange::Create(hpa) => {
            Some(Write::create(&*hpa, Category::Target).reason(WriteReason::Create.as_str()))
        }
        HpaChange::Apply { fields, reason } => {
            let precondition = observed
                .hpa
                .map(|hpa| fields.precondition(hpa))
                .unwrap_or_default();
            let patch = fields.apply_patch_at(&scaler.name_any(), &precondition);
            Some(Write::apply(hpa_target(scaler), patch, Category::Target).reason(reason.as_str()))
        }
    };
    match (hpa_write, decision.hpa_notice) {
        (Some(write), notice) => plan.writes.push(write.notices(notice)),
        (None, Some(notice)) => plan.notices.push(notice),
        (None, None) => {}
    }
    plan.writes.extend(scale_writes(
        observed,
        &decision.hibernation,
        decision.scale_notice,
    ));
    if decision.finalizer == FinalizerChange::Remove {
        plan.writes.push(finalizer_write(scaler, false, false));
    }
    if decision.state == ManagedState::Invalid {
        plan.invalid = Some(spec_valid_message(decision.status.as_ref(), scaler));
    }
    plan.status = decision.status.map(|status| {
        // Only what changed, with `null` for fields now absent (serde skips `None`).
        let old = serde_json::to_value(&scaler.status).unwrap_or_default();
        let new = serde_json::to_value(&status).unwrap_or_default();
        StatusPatch {
            target: Target::of(scaler),
            patch: json!({ "status": merge_diff(&old, &new) }),
        }
    });
    plan.notices.extend(decision.notices);
    plan.requeue = decision
        .requeue_after
        .map_or(Requeue::AwaitChange, Requeue::After);
    plan
}

/// The writes of a hibernation's step: to sleep, the record in the status (naming the
/// resourceVersion read, so after the finalizer's write in this plan, on the object as that
/// left it), the same in the install's ledger ([`super::ledger`]), and then the workload's
/// `/scale` to 0; to wake, its `/scale` back, then the ledger's entry cleared (the status record
/// goes with the plan's closing status); to forget, the ledger's entry cleared. Each scale write
/// names the Scale's resourceVersion read.
fn scale_writes(
    observed: &Observed<'_>,
    hibernation: &Hibernation,
    notice: Option<Notice>,
) -> Vec<Write> {
    let scaler = observed.scaler;
    let forget = || {
        observed.ledger.map(|ledger| {
            super::ledger::forget_write(
                ledger,
                &scaler.namespace().unwrap_or_default(),
                &scaler.name_any(),
            )
        })
    };
    if *hibernation == Hibernation::Forget {
        return forget().into_iter().collect();
    }
    let workload = super::hibernation_target(scaler, observed.hpa);
    let (Some(target), Some(scale)) = (scale_write_target(scaler, &workload), observed.scale)
    else {
        return Vec::new();
    };
    let version = scale.metadata.resource_version.as_deref();
    match hibernation {
        Hibernation::Sleep { record, .. } => {
            let recorded = Write::merge_status(
                Target::of(scaler),
                scaler.metadata.resource_version.as_deref(),
                json!({ "status": { "hibernation": record } }),
                Category::Status,
            );
            let ledger = observed
                .ledger
                .map(|ledger| super::ledger::record_write(ledger, scaler, record));
            let sleep = Write::scale(target, version, 0, Category::Target)
                .reason(WriteReason::Hibernate.as_str())
                .notices(notice);
            [Some(recorded), ledger, Some(sleep)]
                .into_iter()
                .flatten()
                .collect()
        }
        Hibernation::Wake { replicas } => [
            Some(
                Write::scale(target, version, *replicas, Category::Target)
                    .reason(WriteReason::Wake.as_str())
                    .notices(notice),
            ),
            forget(),
        ]
        .into_iter()
        .flatten()
        .collect(),
        _ => Vec::new(),
    }
}

/// The `SpecValid` message of the status to write (or already there).
fn spec_valid_message(written: Option<&ServiceScalerStatus>, scaler: &ServiceScaler) -> String {
    written
        .or(scaler.status.as_ref())
        .and_then(|s| ebb_core::find_condition(&s.conditions, CONDITION_SPEC_VALID))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// The plan of [`decide_release`]: what `cleanup` gives back of `observed.scaler` before an
/// uninstall (nothing but the finalizers with `keep_settings`).
pub fn release_plan(observed: &Observed<'_>, now: Timestamp, keep_settings: bool) -> Plan {
    deletion_plan(observed, decide_release(observed, now, keep_settings))
}

/// What `cleanup` does to one ServiceScaler before an uninstall.
#[derive(Clone, Debug)]
pub struct Uninstall {
    /// The writes: the workload woken, the HPA at the defaults (nothing with `keep_settings`),
    /// the finalizers removed; in a dry run no finalizer goes and the rest is said in Events.
    pub plan: Plan,
    /// What was done (or in a dry run would have been), one phrase each.
    pub done: Vec<String>,
}

/// `cleanup`'s give-back of `observed.scaler` ([`release_plan`]), with what it says.
pub fn uninstall(observed: &Observed<'_>, now: Timestamp, keep_settings: bool) -> Uninstall {
    let mut plan = release_plan(observed, now, keep_settings);
    // A dry run decides the rest as an Event says (no write); the finalizers stay too.
    if observed.dry_run {
        plan.writes.retain(|w| w.category != Category::Metadata);
    }
    let mut done = plan.notes();
    let scaler = observed.scaler;
    if super::has_finalizer(scaler) || super::has_udaan_finalizer(scaler) {
        done.push(match observed.dry_run {
            true => "dry run: would have removed its finalizers".to_owned(),
            false => "removed its finalizers".to_owned(),
        });
    }
    Uninstall { plan, done }
}

/// The plan of [`decide_deletion`]'s decision: the HPA's steps with their Events, then the
/// finalizers.
fn deletion_plan(observed: &Observed<'_>, deletion: DeletionDecision) -> Plan {
    let scaler = observed.scaler;
    let gauge = Gauge {
        key: key_of(scaler),
        state: None,
    };
    let mut plan = Plan::new(scaler.object_ref(&()), gauge);
    let wake = match deletion.wake {
        Some(replicas) => Hibernation::Wake { replicas },
        None => Hibernation::Leave,
    };
    plan.writes
        .extend(scale_writes(observed, &wake, deletion.wake_notice));
    // Not woken (`deletionPolicy: Orphan`, a pause): the ledger's entry goes all the same, or
    // the deletion would wake the workload after all.
    if deletion.wake.is_none()
        && scaler
            .status
            .as_ref()
            .is_some_and(|s| s.hibernation.is_some())
    {
        plan.writes
            .extend(scale_writes(observed, &Hibernation::Forget, None));
    }
    let target = hpa_target(scaler);
    let mut hpa_writes = Vec::new();
    if let Some(hpa) = observed.hpa {
        if deletion.disown {
            let patch = super::disown_patch(hpa, scaler);
            let version = hpa.resource_version();
            hpa_writes.push(Write::merge(
                target.clone(),
                version.as_deref(),
                patch,
                Category::Target,
            ));
        }
        if let Some(fields) = &deletion.restore {
            let patch = fields.apply_patch_at(&scaler.name_any(), &fields.precondition(hpa));
            hpa_writes.push(
                Write::apply(target.clone(), patch, Category::Target)
                    .reason(WriteReason::Restore.as_str()),
            );
        }
        if deletion.delete {
            hpa_writes.push(Write::delete(
                target,
                hpa.uid().as_deref(),
                Category::Target,
            ));
        }
    }
    // The Events go with the last HPA write (recorded before the finalizers go); without one,
    // after the plan's writes.
    match hpa_writes.pop() {
        Some(last) => {
            plan.writes.extend(hpa_writes);
            plan.writes.push(last.notices(deletion.notices));
        }
        None => plan.notices = deletion.notices,
    }
    if deletion.remove_finalizer {
        plan.writes.push(finalizer_write(scaler, false, true));
    }
    plan
}

/// A ServiceScaler whose spec does not fit the type (stored before the CRD schema changed, read
/// as `object` with serde's `error`): `SpecValid` and `Ready` say so (with a Warning Event when
/// they change), nothing else is touched, and the pass ends as invalid.
pub fn decide_unreadable(object: &DynamicObject, error: &str, now: Timestamp) -> Plan {
    let resource = ApiResource::erase::<ServiceScaler>(&());
    let key = format!(
        "{}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    );
    let gauge = Gauge {
        key,
        state: Some(ManagedState::Invalid),
    };
    let mut plan = Plan::new(object.object_ref(&resource), gauge);
    let message = error.to_owned();
    let generation = object.metadata.generation;
    let mut conditions: Vec<Condition> = object
        .data
        .pointer("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let mut update = |type_: &str, message: String| {
        set_condition(
            &mut conditions,
            ConditionUpdate::new(type_, false, "InvalidSpec", message)
                .observed_generation(generation),
            now,
        )
    };
    let changed = update(CONDITION_SPEC_VALID, message.clone())
        | update(
            CONDITION_READY,
            format!("the spec is invalid; the HPA is left as it was: {message}"),
        );
    if changed {
        plan.status = Some(StatusPatch {
            target: Target {
                resource,
                namespace: object.namespace(),
                name: object.name_any(),
            },
            patch: json!({ "status": {
                "conditions": conditions,
                "lastObservedGeneration": generation,
                "lastUpdatedTime": to_k8s_time(now),
            }}),
        });
        plan.notices
            .push(Notice::warning("InvalidSpec", "Validate", message.clone()));
    }
    plan.invalid = Some(message);
    plan
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;
