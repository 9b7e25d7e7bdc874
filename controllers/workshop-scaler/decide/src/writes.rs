//! The pass as the runtime's plan: [`plan_of`] turns the [`Outcome`] of a WorkshopProvision into
//! its writes, in the order of the module docs of [`super::outcome`], each a merge patch naming
//! the resourceVersion read (the executor makes each follow the one before it: the plan's own
//! writes are the only change between them); [`policy_status_plan`] does the same for a
//! WorkshopScalingPolicy's status.
//!
//! Race safety: a scale-up is the flag through the status subresource, then the absolute
//! `spec.count`. A 409 on either ends the pass and the frame reads the provision again, so the
//! decision sees the flag another writer set; a crash between the two leaves the flag, and the
//! decision finishes the recorded scale-up only while `spec.count` is still its `from`. So two
//! reconciles racing, a lost answer or a duplicate event all end with exactly one increase.

use ebb_core::plan::{Category, Plan, Target, Write};
use ebb_crds::babylon::WorkshopProvision;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use jiff::Timestamp;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::{Gauges, Outcome, POLICY_STATUS_MAX_LISTED, PolicyReport, RELEASE_ANNOTATION};

/// The `reason` the count write of a scale-up is counted under (`scale_ups_total`).
pub const SCALE_UP: &str = "scale_up";

/// The gauges of one provision, with what names its series.
#[derive(Clone, Debug, PartialEq)]
pub struct ProvisionGauges {
    /// The provision's namespace.
    pub namespace: String,
    /// The provision's name.
    pub name: String,
    /// Its Workshop's name.
    pub workshop: String,
    /// What to do with them.
    pub gauges: Gauges,
}

/// A merge patch of the provision's metadata removing [`RELEASE_ANNOTATION`].
fn remove_release(target: &Target, version: Option<&str>) -> Write {
    Write::merge(
        target.clone(),
        version,
        json!({"metadata": {"annotations": {RELEASE_ANNOTATION: Value::Null}}}),
        Category::Metadata,
    )
}

/// The plan of `outcome` for `provision` (as read).
pub fn plan_of(provision: &WorkshopProvision, outcome: Outcome) -> Plan<ProvisionGauges> {
    let gauges = ProvisionGauges {
        namespace: provision.namespace().unwrap_or_default(),
        name: provision.name_any(),
        workshop: provision.spec.workshop_name.clone(),
        gauges: outcome.gauges,
    };
    let mut plan = Plan::new(provision.object_ref(&()), gauges);
    let target = Target::of(provision);
    let version = provision.resource_version();
    let version = version.as_deref();
    if outcome.remove_stale_release {
        plan.writes.push(remove_release(&target, version));
    }
    if let Some(status) = outcome.status {
        plan.writes.push(Write::merge_status(
            target.clone(),
            version,
            json!({ "status": status }),
            Category::Status,
        ));
    }
    if let Some(count) = outcome.count {
        let write = Write::merge(
            target.clone(),
            version,
            json!({"spec": {"count": count}}),
            Category::Target,
        );
        plan.writes.push(match outcome.scaled_up {
            true => write.reason(SCALE_UP),
            false => write,
        });
    }
    // The Events once the flag and the count are written, before the release annotation goes.
    match (outcome.remove_release, plan.writes.pop()) {
        (true, Some(last)) => plan.writes.push(last.notices(outcome.notices)),
        (_, last) => {
            plan.writes.extend(last);
            plan.notices = outcome.notices;
        }
    }
    if outcome.remove_release {
        plan.writes.push(remove_release(&target, version));
    }
    plan.requeue = outcome
        .requeue
        .map_or(ebb_core::Requeue::AwaitChange, ebb_core::Requeue::After);
    plan
}

/// The status of `policy` given what it selects (`report`): `status.workshopCount`,
/// `status.workshops` (the first [`POLICY_STATUS_MAX_LISTED`]) and the `Ambiguous` condition,
/// written only when they changed (in a dry run too: it is status).
pub fn policy_status_plan(
    policy: &WorkshopScalingPolicy,
    report: &PolicyReport,
    now: Timestamp,
) -> Plan<()> {
    let mut plan = Plan::new(policy.object_ref(&()), ());
    let status = policy.status.clone().unwrap_or_default();
    let mut conditions = status.conditions.clone();
    let mut changed = false;
    for update in super::policy_conditions(report) {
        changed |= ebb_core::set_condition(&mut conditions, update, now);
    }
    let count = i32::try_from(report.workshops.len()).unwrap_or(i32::MAX);
    let listed: Vec<String> = report
        .workshops
        .iter()
        .take(POLICY_STATUS_MAX_LISTED)
        .cloned()
        .collect();
    changed |= status.workshop_count != Some(count) || status.workshops != listed;
    if changed {
        plan.status = Some(ebb_core::StatusPatch {
            target: Target::of(policy),
            patch: json!({"status": {"workshopCount": count, "workshops": listed,
                                     "conditions": conditions}}),
        });
    }
    plan
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;
