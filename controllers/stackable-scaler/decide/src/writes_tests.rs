#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_core::plan::Verb;
use serde_json::{Value, json};

fn scaler(status: Value) -> StackableScaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "scaler-uid",
                     "resourceVersion": "41",
                     "annotations": {"autoscaling.stackable.tech/retry": "true"}},
        "spec": {"replicas": 3},
        "status": status,
    }))
    .unwrap()
}

fn patch_of(write: &Write) -> Value {
    match &write.verb {
        Verb::Merge(patch) | Verb::MergeStatus(patch) | Verb::MergeScale(patch) => patch.value(),
        other => panic!("not a merge patch: {other:?}"),
    }
}

#[test]
fn a_saved_status_is_the_difference_naming_the_version_read() {
    let s = scaler(json!({"replicas": 2, "scaleEvent": 4}));
    let mut status = s.status.clone().unwrap();
    assert_eq!(status_write(&s, &status), None, "nothing differs: no write");
    status.replicas = 3;
    let write = status_write(&s, &status).unwrap();
    assert!(matches!(write.verb, Verb::MergeStatus(_)));
    assert_eq!(write.category, Category::Status);
    assert_eq!(write.target.describe(), "StackableScaler data/nifi-default");
    assert_eq!(
        patch_of(&write),
        json!({"metadata": {"resourceVersion": "41"}, "status": {"replicas": 3}})
    );
}

#[test]
fn an_annotation_is_removed_on_the_scaler_as_read() {
    let s = scaler(json!({}));
    let write = strip_write(&s, "autoscaling.stackable.tech/retry");
    assert!(matches!(write.verb, Verb::Merge(_)));
    assert_eq!(write.category, Category::Metadata);
    assert_eq!(
        patch_of(&write),
        json!({"metadata": {"resourceVersion": "41",
                             "annotations": {"autoscaling.stackable.tech/retry": null}}})
    );
}

#[test]
fn a_resize_sets_the_replicas_of_the_workload_as_read() {
    let write = resize_write(WorkloadKind::StatefulSet, "data", "nifi", Some("7"), 5);
    // Through /scale: the controller may change the replicas and nothing else of the workload.
    assert!(
        matches!(write.verb, Verb::MergeScale(_)),
        "{:?}",
        write.verb
    );
    assert_eq!(write.category, Category::Target);
    assert_eq!(write.target.describe(), "StatefulSet data/nifi");
    assert_eq!(write.target.resource.group, "apps");
    assert_eq!(
        patch_of(&write),
        json!({"metadata": {"resourceVersion": "7"}, "spec": {"replicas": 5}})
    );
    let write = resize_write(WorkloadKind::Deployment, "data", "web", Some("8"), 0);
    assert_eq!(write.target.describe(), "Deployment data/web");
}

#[test]
fn resuming_drops_the_paused_condition_and_only_it() {
    let paused = json!({"type": "Paused", "status": "True", "reason": "Annotated",
                        "message": "paused", "lastTransitionTime": "2025-01-01T00:00:00Z"});
    let ready = json!({"type": "Ready", "status": "True", "reason": "Idle",
                       "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"});
    let s = scaler(json!({"conditions": [ready.clone(), paused]}));
    let write = resume_write(&s).unwrap();
    assert_eq!(write.category, Category::Status);
    assert_eq!(
        patch_of(&write),
        json!({"metadata": {"resourceVersion": "41"}, "status": {"conditions": [ready]}})
    );
    let never_paused = scaler(json!({"conditions": [ready]}));
    assert_eq!(resume_write(&never_paused), None);
    assert_eq!(resume_write(&scaler(Value::Null)), None);
}

#[test]
fn a_step_saves_its_status_then_strips_the_annotation_it_acted_on() {
    let s = scaler(json!({"replicas": 2}));
    let mut status = s.status.clone().unwrap();
    let plan = |status: StackableScalerStatus, action: crate::Action| crate::Step {
        status,
        action,
        note: None,
    };
    // Nothing changed, nothing to strip: no write.
    assert!(step_writes(&s, &plan(status.clone(), crate::Action::Continue)).is_empty());
    status.replicas = 3;
    let writes = step_writes(
        &s,
        &plan(status.clone(), crate::Action::StripRetryAnnotation),
    );
    let categories: Vec<_> = writes.iter().map(|w| w.category).collect();
    assert_eq!(categories, [Category::Status, Category::Metadata]);
    assert_eq!(
        patch_of(&writes[1])["metadata"]["annotations"],
        json!({"autoscaling.stackable.tech/retry": null})
    );
    let writes = step_writes(
        &s,
        &plan(
            s.status.clone().unwrap(),
            crate::Action::StripAbortAnnotation,
        ),
    );
    assert_eq!(writes.len(), 1);
    assert_eq!(
        patch_of(&writes[0])["metadata"]["annotations"],
        json!({"autoscaling.stackable.tech/abort": null})
    );
}
