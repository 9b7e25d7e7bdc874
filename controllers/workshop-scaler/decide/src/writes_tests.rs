#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::PolicyReport;
use crate::outcome::tests::{enabled, input, observed};
use ebb_core::plan::Verb;
use ebb_core::{Notice, Requeue};
use ebb_testkit::utc;
use serde_json::Map;
use std::time::Duration;

const NOW: &str = "2026-03-10T09:00:00Z";

fn provision() -> WorkshopProvision {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "41"},
        "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": 2,
                 "workshopName": "w"}
    }))
    .unwrap()
}

fn quiet() -> Outcome {
    Outcome::quiet(None, "because".into(), Gauges::Keep)
}

/// `verb` and the patch's top-level keys besides metadata, per write.
fn shape(plan: &Plan<ProvisionGauges>) -> Vec<String> {
    plan.writes
        .iter()
        .map(|w| {
            let (Verb::Merge(p) | Verb::MergeStatus(p)) = &w.verb else {
                return w.verb.as_str().to_owned();
            };
            let p = p.value();
            let keys: Vec<&str> = p
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "metadata")
                .collect();
            format!("{} {}", w.verb.as_str(), keys.join(","))
        })
        .collect()
}

#[test]
fn a_scale_up_is_the_flag_then_the_count_each_naming_the_version_read() {
    let settings = enabled();
    let observed = observed(2, 9, 10);
    let outcome = crate::outcome(&input(&settings, &observed));
    let plan = plan_of(&provision(), outcome);
    assert_eq!(shape(&plan), ["patch status status", "patch spec"]);
    for write in &plan.writes {
        let (Verb::Merge(patch) | Verb::MergeStatus(patch)) = &write.verb else {
            panic!("{write:?}")
        };
        let patch = patch.value();
        assert_eq!(patch["metadata"]["resourceVersion"], "41", "{write:?}");
    }
    assert_eq!(plan.writes[0].category, Category::Status);
    assert_eq!(plan.writes[1].category, Category::Target);
    assert_eq!(plan.writes[1].verb, {
        Verb::Merge(json!({"spec": {"count": 3}, "metadata": {"resourceVersion": "41"}}).into())
    });
    assert_eq!(
        plan.writes[1].reason,
        Some(SCALE_UP),
        "counted as a scale-up"
    );
    let reasons: Vec<_> = plan.notices.iter().map(|n| n.reason).collect();
    assert_eq!(reasons, ["ScaledUp"], "after the writes");
    assert_eq!(plan.requeue, Requeue::After(Duration::from_secs(3601)));
    assert_eq!(plan.gauges.workshop, "w");
    assert!(matches!(plan.gauges.gauges, Gauges::Observe(_)));
}

#[test]
fn a_release_writes_its_events_before_the_annotation_goes() {
    let mut outcome = quiet();
    outcome.remove_stale_release = false;
    outcome.status = Some(Map::new());
    outcome.notices = vec![Notice::normal("ScaleUpReleased", "Release", "asked")];
    outcome.remove_release = true;
    let plan = plan_of(&provision(), outcome);
    assert_eq!(shape(&plan), ["patch status status", "patch "]);
    assert_eq!(plan.writes[0].notices.len(), 1, "with the status write");
    assert!(plan.notices.is_empty());
    assert_eq!(
        plan.writes[1].verb,
        Verb::Merge(
            json!({"metadata": {
            "annotations": {RELEASE_ANNOTATION: null}, "resourceVersion": "41"}})
            .into()
        )
    );
    assert_eq!(plan.writes[1].category, Category::Metadata);
}

#[test]
fn a_stale_release_annotation_goes_first() {
    let mut outcome = quiet();
    outcome.remove_stale_release = true;
    outcome.status = Some(Map::new());
    let plan = plan_of(&provision(), outcome);
    assert_eq!(shape(&plan), ["patch ", "patch status status"]);
}

#[test]
fn a_quiet_outcome_plans_no_write() {
    let mut outcome = quiet();
    outcome.gauges = Gauges::Forget;
    let plan = plan_of(&provision(), outcome);
    assert!(plan.writes_nothing());
    assert_eq!(plan.requeue, Requeue::AwaitChange);
    assert_eq!(plan.gauges.gauges, Gauges::Forget);
    assert_eq!(plan.gauges.name, "p");
}

fn policy(status: serde_json::Value) -> WorkshopScalingPolicy {
    serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
        "metadata": {"name": "pol", "namespace": "ns"},
        "spec": {"autoScaling": {"enabled": true}},
        "status": status,
    }))
    .unwrap()
}

#[test]
fn a_policy_status_is_written_only_when_it_changed() {
    let report = PolicyReport {
        workshops: vec!["w1".into(), "w2".into()],
        contested: vec![("w2".into(), vec!["other".into()])],
    };
    let plan = policy_status_plan(&policy(json!({})), &report, utc(NOW));
    let status = &plan.status.as_ref().unwrap().patch["status"];
    assert_eq!(status["workshopCount"], 2);
    assert_eq!(status["workshops"], json!(["w1", "w2"]));
    assert!(plan.writes.is_empty());

    let written = policy(status.clone());
    let again = policy_status_plan(&written, &report, utc(NOW));
    assert!(again.writes_nothing(), "{again:?}");
}
