//! Tests of the plan `decide` returns: the writes in their order, what each names of what was
//! read, where the Events go, the gauge and the end of the pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::fixtures::*;
use crate::{DeletionPolicy, HpaSettings, MAX_REQUEUE};
use ebb_core::plan::Verb;
use ebb_schedule::Calendars;

static NO_CALENDARS: Calendars = Calendars::new();
use ebb_testkit::utc;
use serde_json::Value;

fn observed<'a>(
    scaler: &'a ServiceScaler,
    hpa: Option<&'a HorizontalPodAutoscaler>,
) -> Observed<'a> {
    Observed {
        calendars: &NO_CALENDARS,
        scaler,
        hpa,
        scale: None,
        dry_run: false,
        ledger: None,
    }
}

fn with_meta(mut scaler: ServiceScaler, rv: &str, finalizers: &[&str]) -> ServiceScaler {
    scaler.metadata.resource_version = Some(rv.into());
    scaler.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    scaler
}

fn read_hpa(settings: &HpaSettings, owned: bool, rv: &str) -> HorizontalPodAutoscaler {
    let mut hpa = hpa(settings, owned);
    hpa.metadata.resource_version = Some(rv.into());
    hpa.metadata.uid = Some("hpa-uid".into());
    hpa
}

/// `verb kind` of each write, in order.
fn shape(plan: &Plan) -> Vec<String> {
    plan.writes
        .iter()
        .map(|w| format!("{} {}", w.verb.as_str(), w.target.resource.kind))
        .collect()
}

#[test]
fn a_missing_hpa_is_created_then_the_status_written_and_the_gauge_set() {
    let s = with_meta(scaler(office()), "10", &[]);
    let plan = decide(&observed(&s, None), utc("2026-05-04T09:00:00Z"));
    assert_eq!(shape(&plan), ["create HorizontalPodAutoscaler"]);
    let create = &plan.writes[0];
    assert_eq!(create.category, Category::Target);
    assert_eq!(create.reason, Some("create"));
    let Verb::Create(body) = &create.verb else {
        panic!("{create:?}")
    };
    let body = body.value();
    assert_eq!(body["spec"]["minReplicas"], 5);
    assert_eq!(body["spec"]["scaleTargetRef"]["name"], "web");
    let status = plan.status.as_ref().unwrap();
    assert_eq!(status.target.resource.kind, "ServiceScaler");
    assert_eq!(status.patch["status"]["matchedRange"], json!(0));
    assert_eq!(
        plan.gauges,
        Gauge {
            key: "shop/web".into(),
            state: Some(ManagedState::Active)
        }
    );
    assert_eq!(plan.invalid, None);
    assert!(
        matches!(plan.requeue, Requeue::After(wait) if wait == MAX_REQUEUE),
        "{:?}",
        plan.requeue
    );
    assert_eq!(plan.subject.name.as_deref(), Some("web"));
}

#[test]
fn an_adopted_hpa_gets_the_finalizer_first_and_an_apply_naming_what_was_read() {
    let s = with_meta(scaler(office()), "10", &["other"]);
    let hpa = read_hpa(&settings(2, 10, Some(60), None), false, "77");
    let plan = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        shape(&plan),
        ["patch ServiceScaler", "apply HorizontalPodAutoscaler"],
        "the finalizer before the HPA: deleting the scaler in between must restore the HPA"
    );
    assert_eq!(
        plan.writes[0].verb,
        Verb::Merge(
            json!({"metadata": {
            "finalizers": ["other", FINALIZER], "resourceVersion": "10"}})
            .into()
        )
    );
    assert_eq!(plan.writes[0].category, Category::Metadata);
    let apply = &plan.writes[1];
    let Verb::Apply(patch) = &apply.verb else {
        panic!("{apply:?}")
    };
    let patch = patch.value();
    assert_eq!(patch["metadata"]["resourceVersion"], "77");
    assert_eq!(patch["metadata"]["uid"], "hpa-uid");
    assert_eq!(patch["spec"]["minReplicas"], 5);
    assert_eq!(apply.reason, Some("transition"));
    assert_eq!(
        apply.notices.len(),
        1,
        "the HPA's Event goes with its write, before anything after it can fail"
    );
}

#[test]
fn an_hpa_in_sync_plans_no_write_at_all() {
    let s = with_meta(scaler(office()), "10", &[]);
    let hpa = read_hpa(&settings(5, 10, Some(60), None), true, "77");
    let first = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    let mut again = s.clone();
    again.status = first
        .status
        .as_ref()
        .map(|p| serde_json::from_value(p.patch["status"].clone()).unwrap());
    let plan = decide(&observed(&again, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert!(plan.writes_nothing(), "{plan:?}");
    assert!(plan.notices.is_empty());
}

#[test]
fn an_invalid_spec_writes_its_status_and_ends_the_pass_as_invalid() {
    let s = with_meta(
        scaler(json!({"hpa": {"minReplicas": 5, "maxReplicas": 2}})),
        "10",
        &[],
    );
    let plan = decide(&observed(&s, None), utc("2026-05-04T09:00:00Z"));
    assert!(plan.writes.is_empty());
    assert!(plan.status.is_some());
    let message = plan.invalid.clone().unwrap();
    assert!(message.contains("spec.hpa"), "{message}");
    assert_eq!(plan.gauges.state, Some(ManagedState::Invalid));
}

#[test]
fn deleting_restores_an_adopted_hpa_then_drops_the_finalizers() {
    let mut s = with_meta(
        scaler(office()),
        "10",
        &[FINALIZER, UDAAN_FINALIZER, "other"],
    );
    s.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc("2026-05-04T09:00:00Z")));
    s.spec.deletion_policy = Some(DeletionPolicy::Restore);
    let hpa = read_hpa(&settings(5, 10, Some(60), None), false, "77");
    let plan = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        shape(&plan),
        ["apply HorizontalPodAutoscaler", "patch ServiceScaler"]
    );
    let Verb::Apply(patch) = &plan.writes[0].verb else {
        panic!()
    };
    let patch = patch.value();
    assert_eq!(patch["spec"]["minReplicas"], 2, "the defaults back");
    assert_eq!(patch["metadata"]["resourceVersion"], "77");
    assert_eq!(plan.writes[0].reason, Some("restore"));
    assert_eq!(
        plan.writes[0].notices[0].reason, "Restored",
        "the Event goes with the HPA's write, before the finalizers"
    );
    assert_eq!(
        plan.writes[1].verb,
        Verb::Merge(json!({"metadata": {"finalizers": ["other"], "resourceVersion": "10"}}).into())
    );
    assert_eq!(plan.gauges.state, None, "a deleted scaler leaves the gauge");
    assert!(plan.status.is_none());
}

#[test]
fn deleting_disowns_an_owned_hpa_before_restoring_it() {
    let mut s = with_meta(scaler(office()), "10", &[FINALIZER]);
    s.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc("2026-05-04T09:00:00Z")));
    s.spec.deletion_policy = Some(DeletionPolicy::Restore);
    let hpa = read_hpa(&settings(5, 10, Some(60), None), true, "77");
    let plan = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        shape(&plan),
        [
            "patch HorizontalPodAutoscaler",
            "apply HorizontalPodAutoscaler",
            "patch ServiceScaler"
        ]
    );
    let Verb::Merge(disown) = &plan.writes[0].verb else {
        panic!()
    };
    let disown = disown.value();
    assert_eq!(disown["metadata"]["ownerReferences"], Value::Null);
    assert_eq!(disown["metadata"]["resourceVersion"], "77");
    assert!(plan.writes[0].notices.is_empty());
    assert_eq!(plan.writes[1].notices[0].reason, "Restored");
}

#[test]
fn deleting_an_hpa_names_its_uid() {
    let mut s = with_meta(scaler(office()), "10", &[FINALIZER]);
    s.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc("2026-05-04T09:00:00Z")));
    s.spec.deletion_policy = Some(DeletionPolicy::Delete);
    let hpa = read_hpa(&settings(5, 10, Some(60), None), false, "77");
    let plan = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        shape(&plan),
        ["delete HorizontalPodAutoscaler", "patch ServiceScaler"]
    );
    assert_eq!(
        plan.writes[0].verb,
        Verb::Delete {
            uid: Some("hpa-uid".into())
        }
    );
}

#[test]
fn a_deleted_scaler_without_finalizers_plans_nothing() {
    let mut s = with_meta(scaler(office()), "10", &[]);
    s.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc("2026-05-04T09:00:00Z")));
    let hpa = read_hpa(&settings(5, 10, Some(60), None), false, "77");
    let plan = decide(&observed(&s, Some(&hpa)), utc("2026-05-04T09:00:00Z"));
    assert!(plan.writes_nothing());
    assert!(plan.notices.is_empty());
}

#[test]
fn an_unreadable_spec_is_reported_once_and_ends_the_pass_as_invalid() {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "web", "namespace": "shop", "generation": 3},
        "spec": {"hpa": "many"},
    }))
    .unwrap();
    let now = utc("2026-05-04T09:00:00Z");
    let plan = decide_unreadable(&object, "spec.hpa: invalid type", now);
    assert!(plan.writes.is_empty());
    let status = &plan.status.as_ref().unwrap().patch["status"];
    assert_eq!(status["lastObservedGeneration"], 3);
    assert_eq!(status["conditions"].as_array().unwrap().len(), 2);
    assert_eq!(plan.notices.len(), 1);
    assert_eq!(plan.invalid.as_deref(), Some("spec.hpa: invalid type"));
    assert_eq!(plan.gauges.state, Some(ManagedState::Invalid));
    assert_eq!(plan.describe_subject(), "ServiceScaler shop/web");

    // Reported already: nothing is written again.
    let mut reported = object.clone();
    reported.data["status"] = status.clone();
    let again = decide_unreadable(&reported, "spec.hpa: invalid type", now);
    assert!(again.writes_nothing());
    assert!(again.notices.is_empty());
    assert!(again.invalid.is_some());
}
