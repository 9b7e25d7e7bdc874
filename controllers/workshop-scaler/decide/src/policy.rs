//! Which Workshops a WorkshopScalingPolicy selects, and which of those other policies select too:
//! the rules behind a policy's status ([`policy_report`]) and the provisions' policy choice
//! ([`policy_selects`]).

use ebb_crds::babylon::Workshop;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use super::PolicyReport;

/// Whether `policy` selects `workshop`: same namespace, and its `workshopSelector` (absent or
/// empty: everything) matches the Workshop's labels. `Err` names why the selector cannot be
/// evaluated (such a policy selects nothing; the API server's schema rejects most of them).
pub fn policy_selects(policy: &WorkshopScalingPolicy, workshop: &Workshop) -> Result<bool, String> {
    if policy.namespace() != workshop.namespace() {
        return Ok(false);
    }
    let Some(selector) = policy.spec.workshop_selector.clone() else {
        return Ok(true);
    };
    match Selector::try_from(selector) {
        Ok(selector) => Ok(selector.matches(workshop.labels())),
        Err(error) => Err(format!(
            "WorkshopScalingPolicy {}: its workshopSelector cannot be evaluated, so it selects \
             nothing: {error}",
            policy.name_any()
        )),
    }
}

/// What `policy`'s status reports among `workshops`, given the `others` policies of its
/// namespace: the Workshops it selects, and for each the other policies that select it too
/// (sorted). Also the messages of selectors that cannot be evaluated, once each, to log.
pub fn policy_report(
    policy: &WorkshopScalingPolicy,
    workshops: &[&Workshop],
    others: &[WorkshopScalingPolicy],
) -> (PolicyReport, Vec<String>) {
    let mut unreadable = Vec::new();
    let mut selects = |p: &WorkshopScalingPolicy, w: &Workshop| match policy_selects(p, w) {
        Ok(selected) => selected,
        Err(message) => {
            if !unreadable.contains(&message) {
                unreadable.push(message);
            }
            false
        }
    };
    let mut report = PolicyReport::default();
    for workshop in workshops {
        if !selects(policy, workshop) {
            continue;
        }
        let name = workshop.name_any();
        let mut also: Vec<String> = others
            .iter()
            .filter(|p| p.name_any() != policy.name_any())
            .filter(|p| selects(p, workshop))
            .map(ResourceExt::name_any)
            .collect();
        also.sort();
        if !also.is_empty() {
            report.contested.push((name.clone(), also));
        }
        report.workshops.push(name);
    }
    report.workshops.sort();
    report.contested.sort();
    (report, unreadable)
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
