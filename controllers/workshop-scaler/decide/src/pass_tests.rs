#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::CONDITION_CONFIG_VALID;
use ebb_core::plan::Category;
use ebb_testkit::utc;
use serde_json::json;

const NOW: &str = "2026-03-10T09:00:00Z";

fn provision(auto_scaling: serde_json::Value) -> WorkshopProvision {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
        "metadata": {"name": "p", "namespace": "n", "uid": "u1", "resourceVersion": "4",
                     "generation": 1},
        "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": 10,
                 "workshopName": "w", "autoScaling": auto_scaling}
    }))
    .unwrap()
}

fn workshop(labels: serde_json::Value) -> Workshop {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
        "metadata": {"name": "w", "namespace": "n", "labels": labels},
        "spec": {}
    }))
    .unwrap()
}

fn policy(name: &str, team: &str) -> WorkshopScalingPolicy {
    serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
        "metadata": {"name": name, "namespace": "n"},
        "spec": {"workshopSelector": {"matchLabels": {"team": team}},
                 "autoScaling": {"enabled": true, "maxProvisions": 40}}
    }))
    .unwrap()
}

fn observed<'a>(
    provision: &'a WorkshopProvision,
    workshop: WorkshopRead<'a>,
    policies: &'a [WorkshopScalingPolicy],
    assigned: u32,
) -> Observed<'a> {
    Observed {
        provision,
        workshop,
        policies,
        seats: Seats {
            assigned,
            total: 10,
        },
        claims: Vec::new(),
        dry_run: false,
    }
}

/// The `spec.count` the plan writes, if any.
fn count_written(plan: &Plan<ProvisionGauges>) -> Option<i64> {
    plan.writes
        .iter()
        .filter(|w| w.category == Category::Target)
        .find_map(|w| match &w.verb {
            ebb_core::plan::Verb::Merge(body) => body.value().pointer("/spec/count")?.as_i64(),
            _ => None,
        })
}

/// What the plan's status writes say, as JSON text.
fn status_written(plan: &Plan<ProvisionGauges>) -> String {
    let bodies: Vec<String> = plan
        .writes
        .iter()
        .filter(|w| w.category == Category::Status)
        .map(|w| format!("{:?}", w.verb))
        .collect();
    bodies.join("\n")
}

#[test]
fn the_policy_selecting_the_workshop_configures_the_pass_and_seats_count_only_then() {
    let now = utc(NOW);
    let inherits = provision(json!({}));
    let ops = workshop(json!({"team": "ops"}));
    let policies = [policy("standard", "ops"), policy("dev", "dev")];
    assert_eq!(reads(&inherits).workshop, "w");
    let r = reads(&inherits);
    // Selected by one policy, which enables it: the seats count; nothing in flight, no claims.
    assert_eq!(
        r.counts(&inherits, WorkshopRead::Found(&ops), &policies, now),
        (true, false)
    );
    // No Workshop: no policy applies and scaling is off by default: nothing counts.
    assert_eq!(
        r.counts(&inherits, WorkshopRead::Missing, &policies, now),
        (false, false)
    );
    // 9 of 10 seats taken: 10 -> 15 by the policy's defaults.
    let plan = decide(
        &observed(&inherits, WorkshopRead::Found(&ops), &policies, 9),
        now,
    );
    assert_eq!(count_written(&plan), Some(15));
    // The same without the Workshop: disabled, not one write.
    let plan = decide(
        &observed(&inherits, WorkshopRead::Missing, &policies, 9),
        now,
    );
    assert!(plan.writes.is_empty() && plan.status.is_none());
}

#[test]
fn two_policies_are_ambiguous_and_an_unreadable_workshop_is_invalid() {
    let now = utc(NOW);
    let inherits = provision(json!({}));
    let ops = workshop(json!({"team": "ops"}));
    let both = [policy("a", "ops"), policy("b", "ops")];
    assert_eq!(
        reads(&inherits).counts(&inherits, WorkshopRead::Found(&ops), &both, now),
        (false, false)
    );
    let plan = decide(
        &observed(&inherits, WorkshopRead::Found(&ops), &both, 9),
        now,
    );
    assert_eq!(count_written(&plan), None);
    assert!(
        plan.notes().iter().any(|n| n.contains("a, b")),
        "{:?}",
        plan.notes()
    );

    let enabled = provision(json!({"enabled": true}));
    let plan = decide(
        &observed(
            &enabled,
            WorkshopRead::Unreadable("missing field `spec`"),
            &[],
            9,
        ),
        now,
    );
    assert_eq!(count_written(&plan), None);
    let status = status_written(&plan);
    assert!(status.contains(CONDITION_CONFIG_VALID), "{status}");
    assert!(status.contains("Workshop w cannot be read"), "{status}");
}

#[test]
fn a_paused_provision_reads_no_seats_and_writes_only_its_pause() {
    let now = utc(NOW);
    let mut paused = provision(json!({"enabled": true}));
    paused.metadata.annotations = Some(
        [(
            ebb_core::pause::PAUSED_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]
        .into_iter()
        .collect(),
    );
    let ops = workshop(json!({}));
    assert_eq!(
        reads(&paused).counts(&paused, WorkshopRead::Found(&ops), &[], now),
        (false, false)
    );
    let plan = decide(&observed(&paused, WorkshopRead::Found(&ops), &[], 9), now);
    assert_eq!(count_written(&plan), None);
    let status = status_written(&plan);
    assert!(status.contains("Paused"), "{status}");
}

#[test]
fn claims_count_only_while_a_scale_up_is_in_flight() {
    let now = utc(NOW);
    let mut flying = provision(json!({"enabled": true}));
    flying.status = Some(
        serde_json::from_value(json!({
            "autoScalingActive": true, "autoScalingStartedAt": "2026-03-10T08:59:00Z",
            "autoScalingFromCount": 5, "autoScalingTargetCount": 10
        }))
        .unwrap(),
    );
    let ops = workshop(json!({}));
    assert_eq!(
        reads(&flying).counts(&flying, WorkshopRead::Found(&ops), &[], now),
        (true, true)
    );
    assert_eq!(in_flight_of(&flying).unwrap().target, Some(10));
}

#[test]
fn a_lifespan_end_is_an_rfc3339_instant_or_none() {
    assert_eq!(
        lifespan_end(Some(&json!({"end": "2026-03-10T08:59:00Z"}))),
        Some(utc("2026-03-10T08:59:00Z"))
    );
    assert_eq!(lifespan_end(Some(&json!({"end": "tomorrow"}))), None);
    assert_eq!(lifespan_end(None), None);
}
