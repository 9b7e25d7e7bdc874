#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_core::plan::Category;
use ebb_testkit::utc;
use serde_json::{Value, json};

fn scaler(owner_kind: &str, annotations: Value, conditions: Value) -> StackableScaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "scaler-uid",
                     "resourceVersion": "7", "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind,
                                          "name": "nifi-node-default", "uid": "sts-uid",
                                          "controller": true}]},
        "spec": {"replicas": 3},
        "status": {"replicas": 1, "conditions": conditions},
    }))
    .unwrap()
}

fn paused_condition() -> Value {
    json!([{"type": "Paused", "status": "True", "reason": "Paused", "message": "m",
            "lastTransitionTime": "2025-01-01T00:00:00Z"}])
}

fn workload() -> WorkloadState {
    WorkloadState {
        replicas: 1,
        status_replicas: 1,
        ready_replicas: 1,
        generation: Some(1),
        observed_generation: Some(1),
        selector: None,
        reference: Some("StatefulSet/nifi-node-default".into()),
    }
}

fn now() -> Timestamp {
    utc("2025-01-01T01:00:00Z")
}

#[test]
fn the_workload_is_read_only_when_the_scaler_itself_does_not_decide_the_pass() {
    let served = scaler("StatefulSet", json!({}), json!([]));
    assert_eq!(
        reads(&served, now()).workload,
        Some((WorkloadKind::StatefulSet, "nifi-node-default".to_owned()))
    );
    let paused = scaler(
        "StatefulSet",
        json!({"scaling.ebb.dev/paused": "true"}),
        json!([]),
    );
    assert_eq!(reads(&paused, now()), Reads::default());
    let orphan = scaler("ConfigMap", json!({}), json!([]));
    assert_eq!(reads(&orphan, now()), Reads::default());
    let mut leaving = served.clone();
    leaving.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(now()));
    assert_eq!(reads(&leaving, now()), Reads::default());
    let observed = Observed {
        scaler: &leaving,
        workload: None,
        dry_run: false,
    };
    assert_eq!(decide(&observed, now()), Pass::Forget);
}

#[test]
fn a_served_scaler_runs_and_a_paused_workload_stops_it() {
    let served = scaler("StatefulSet", json!({}), json!([]));
    let state = workload();
    let meta = ObjectMeta::default();
    let observed = Observed {
        scaler: &served,
        workload: Some((&meta, &state)),
        dry_run: false,
    };
    assert_eq!(decide(&observed, now()), Pass::Run);
    let paused_meta = ObjectMeta {
        name: Some("nifi-node-default".into()),
        namespace: Some("data".into()),
        annotations: Some(
            [("scaling.ebb.dev/paused".to_owned(), "true".to_owned())]
                .into_iter()
                .collect(),
        ),
        ..ObjectMeta::default()
    };
    let observed = Observed {
        workload: Some((&paused_meta, &state)),
        ..observed
    };
    let Pass::Plan(plan) = decide(&observed, now()) else {
        panic!("a paused workload is a plan");
    };
    assert_eq!(plan.writes.len(), 1);
    assert!(
        plan.notes()
            .iter()
            .any(|n| n.contains("StatefulSet data/nifi-node-default"))
    );
}

#[test]
fn an_owner_that_cannot_be_served_ends_as_invalid_after_the_pause_is_dropped() {
    let orphan = scaler("ConfigMap", json!({}), paused_condition());
    let observed = Observed {
        scaler: &orphan,
        workload: None,
        dry_run: false,
    };
    let Pass::Plan(plan) = decide(&observed, now()) else {
        panic!("an invalid owner is a plan");
    };
    // The resume write, then Ready=False with its Warning; both on the status, in order.
    assert_eq!(plan.writes.len(), 2);
    assert!(plan.writes.iter().all(|w| w.category == Category::Status));
    let second = format!("{:?}", plan.writes[1].verb);
    assert!(
        second.contains("InvalidOwner") && !second.contains("Paused"),
        "{second}"
    );
    assert!(
        plan.invalid
            .as_deref()
            .unwrap()
            .starts_with("invalid StackableScaler: ")
    );
}

#[test]
fn a_dry_run_says_what_the_state_machine_would_do() {
    let served = scaler("StatefulSet", json!({}), json!([]));
    let state = workload();
    let meta = ObjectMeta::default();
    let observed = Observed {
        scaler: &served,
        workload: Some((&meta, &state)),
        dry_run: true,
    };
    let Pass::Plan(plan) = decide(&observed, now()) else {
        panic!("a dry run is a plan");
    };
    let notes = plan.notes();
    assert!(
        notes.iter().any(|n| n.starts_with("dry run: would ")),
        "{notes:?}"
    );
    assert!(plan.writes.iter().all(|w| w.category == Category::Status));
}
