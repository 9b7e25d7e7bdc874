#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_core::find_condition;
use ebb_core::pause::CONDITION_PAUSED;
use ebb_core::plan::Category;
use ebb_testkit::utc;
use jiff::SignedDuration;
use serde_json::{Value, json};
use std::time::Duration;

/// The scaler of the reconciler tests, owned by StatefulSet `nifi-node-default`.
fn scaler_json() -> Value {
    json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "scaler-uid",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                          "name": "nifi-node-default", "uid": "sts-uid",
                                          "controller": true}]},
        "spec": {"replicas": 1},
    })
}

fn start() -> Timestamp {
    utc("2025-01-01T00:00:00Z")
}

#[test]
fn one_pause_rule_serves_the_scaler_and_its_workload() {
    let scaler: StackableScaler = serde_json::from_value(scaler_json()).unwrap();
    let meta = |annotations: Value| -> ObjectMeta {
        serde_json::from_value(json!({"name": "nifi-node-default", "namespace": "data",
            "annotations": annotations}))
        .unwrap()
    };
    let until = json!({"scaling.ebb.dev/paused-until": "2025-01-01T00:30:00Z"});
    // Paused until a future instant: requeued exactly then, with an Event.
    let sts = meta(until.clone());
    let plan = pause_decision(&scaler, Some(("StatefulSet", &sts)), start()).unwrap();
    assert_eq!(plan.requeue, Requeue::After(Duration::from_secs(1800)));
    let paused = find_condition(&plan.status.conditions, CONDITION_PAUSED).unwrap();
    assert_eq!(
        (
            paused.status.as_str(),
            paused.reason.as_str(),
            paused.message.as_str()
        ),
        (
            "True",
            "Paused",
            "StatefulSet data/nifi-node-default: paused until 2025-01-01T00:30:00Z by annotation \
             scaling.ebb.dev/paused-until"
        )
    );
    assert_eq!(
        plan.event
            .as_ref()
            .map(|(kind, reason, _)| (*kind, *reason)),
        Some((EventKind::Normal, "Paused"))
    );
    // Expired at exactly `paused-until`; one second before, still paused.
    let at = utc;
    assert!(
        pause_decision(
            &scaler,
            Some(("StatefulSet", &sts)),
            at("2025-01-01T00:30:00Z")
        )
        .is_none()
    );
    assert_eq!(
        pause_decision(
            &scaler,
            Some(("StatefulSet", &sts)),
            at("2025-01-01T00:29:59Z")
        )
        .unwrap()
        .requeue,
        Requeue::After(Duration::from_secs(1))
    );
    // Indefinite: waits for a change.
    let sts = meta(json!({"scaling.ebb.dev/paused": "true"}));
    let plan = pause_decision(&scaler, Some(("Deployment", &sts)), start()).unwrap();
    assert_eq!(plan.requeue, Requeue::AwaitChange);
    assert_eq!(
        plan.pause.to_string(),
        "Deployment data/nifi-node-default: paused by annotation scaling.ebb.dev/paused"
    );
    // Unreadable `paused-until`: paused (fail-safe), a warning, no end.
    let sts = meta(json!({"scaling.ebb.dev/paused-until": "after the upgrade"}));
    let plan = pause_decision(&scaler, Some(("StatefulSet", &sts)), start()).unwrap();
    assert_eq!(plan.requeue, Requeue::AwaitChange);
    assert_eq!(
        plan.event
            .as_ref()
            .map(|(kind, reason, _)| (*kind, *reason)),
        Some((EventKind::Warning, "InvalidPausedUntil"))
    );
    // Neither paused.
    assert!(pause_decision(&scaler, Some(("StatefulSet", &meta(json!({})))), start()).is_none());
    assert!(pause_decision(&scaler, None, start()).is_none());
    // The scaler's own pause is named first.
    let mut own = scaler.clone();
    own.metadata.annotations = Some([("scaling.ebb.dev/paused".into(), "true".into())].into());
    let plan = pause_decision(&own, Some(("StatefulSet", &meta(until))), start()).unwrap();
    assert_eq!(
        plan.pause.to_string(),
        "StackableScaler data/nifi-default: paused by annotation scaling.ebb.dev/paused"
    );
    // Already reported: same status, no second Event.
    own.status = Some(plan.status.clone());
    let again = pause_decision(&own, None, start() + SignedDuration::from_mins(5)).unwrap();
    assert_eq!((again.status, again.event), (plan.status, None));
}

#[test]
fn owners_pick_the_workload() {
    let mut s: StackableScaler = serde_json::from_value(scaler_json()).unwrap();
    assert_eq!(
        owning_workload(&s).unwrap(),
        (WorkloadKind::StatefulSet, "nifi-node-default".into())
    );
    s.metadata.owner_references.as_mut().unwrap()[0].kind = "Deployment".into();
    assert_eq!(owning_workload(&s).unwrap().0, WorkloadKind::Deployment);
    s.metadata.owner_references = None;
    assert!(
        owning_workload(&s)
            .unwrap_err()
            .contains("no owner reference")
    );
}

#[test]
fn a_status_only_pass_writes_the_difference_naming_the_version_read_then_its_event() {
    let mut scaler: StackableScaler = serde_json::from_value(scaler_json()).unwrap();
    scaler.metadata.resource_version = Some("9".into());
    let until = json!({"scaling.ebb.dev/paused": "true"});
    let mut paused = scaler.clone();
    paused.metadata.annotations = serde_json::from_value(until).unwrap();
    let pause = pause_decision(&paused, None, start()).unwrap();
    let plan = paused_plan(&paused, pause);
    assert_eq!(plan.writes.len(), 1);
    let write = &plan.writes[0];
    assert_eq!(write.category, Category::Status);
    let ebb_core::plan::Verb::MergeStatus(patch) = &write.verb else {
        panic!("{write:?}")
    };
    let patch = patch.value();
    assert_eq!(patch["metadata"]["resourceVersion"], "9");
    assert_eq!(patch["status"]["conditions"][0]["type"], "Paused");
    assert_eq!(write.notices[0].reason, "Paused");
    assert_eq!(write.notices[0].action, "Pause");
    assert_eq!(plan.requeue, Requeue::AwaitChange);

    // The same status again: nothing written.
    let status = scaler.status.clone().unwrap_or_default();
    let quiet = status_plan(&scaler, status, None, Requeue::AwaitChange);
    assert!(quiet.writes_nothing());
}

/// An owner that cannot be served: `Ready` false naming why, a Warning the first time, and
/// nothing to write once the condition says so.
#[test]
fn an_invalid_owner_is_said_once_and_waits_for_a_change() {
    let scaler: StackableScaler = serde_json::from_value(scaler_json()).unwrap();
    let plan = invalid_owner_plan(&scaler, "owned by a Job", start()).unwrap();
    assert_eq!(plan.requeue, Requeue::AwaitChange);
    let notices: Vec<_> = plan.writes.iter().flat_map(|w| w.notices.iter()).collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].reason, notices[0].action),
        ("InvalidOwner", "Validate")
    );
    // As written: the same reason again writes nothing.
    let mut written = scaler.clone();
    let mut status = scaler.status.clone().unwrap_or_default();
    let update = ConditionUpdate::new(
        crate::CONDITION_READY,
        false,
        "InvalidOwner",
        "owned by a Job",
    );
    set_condition(&mut status.conditions, update, start());
    written.status = Some(status);
    let ready = find_condition(
        &written.status.as_ref().unwrap().conditions,
        crate::CONDITION_READY,
    );
    assert_eq!(ready.unwrap().reason, "InvalidOwner");
    assert!(invalid_owner_plan(&written, "owned by a Job", start()).is_none());
}

/// A dry run's condition says the intent; its Event goes with a new intent only.
#[test]
fn a_dry_run_says_its_intent_with_an_event_when_it_is_new() {
    let scaler: StackableScaler = serde_json::from_value(scaler_json()).unwrap();
    let plan = dry_run_plan(&scaler, Some("set replicas to 2".into()), start());
    assert_eq!(plan.requeue, Requeue::After(Duration::from_secs(60)));
    let notices: Vec<_> = plan.writes.iter().flat_map(|w| w.notices.iter()).collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].note, "dry run: would set replicas to 2");
    let mut status = scaler.status.clone().unwrap_or_default();
    let update = ConditionUpdate::new(
        CONDITION_DRY_RUN,
        true,
        "DryRun",
        "dry run: would do nothing",
    );
    set_condition(&mut status.conditions, update, start());
    let mut settled = scaler.clone();
    settled.status = Some(status);
    let again = dry_run_plan(&settled, None, start());
    assert!(
        again.writes.is_empty() && again.notices.is_empty(),
        "{again:?}"
    );
}
