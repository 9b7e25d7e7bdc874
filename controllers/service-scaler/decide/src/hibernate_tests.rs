//! Tests of hibernation: the rules in the module doc, each at exact instants, through the whole
//! plan `decide` returns (the writes in order, the status record, the Events, the requeue).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_schedule::Calendars;
use std::time::Duration;

use ebb_core::plan::Verb;
use ebb_testkit::utc;
use k8s_openapi::api::autoscaling::v1::Scale;
use serde_json::{Value, json};

use crate::fixtures::*;
use crate::*;

/// Defaults 2..10; a range 20:00-06:00Z that hibernates (and lowers maxReplicas to 4, which the
/// HPA gets meanwhile); `leadTime` as given.
fn nightly(lead: &str) -> Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "leadTime": lead,
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
             "replicaSpec": {"hibernate": true, "hpa": {"maxReplicas": 4}}}
        ]
    })
}

fn read_scaler(spec: Value, record: Option<(i32, &str)>, finalizers: &[&str]) -> ServiceScaler {
    let mut s = scaler(spec);
    s.metadata.resource_version = Some("20".into());
    s.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    if let Some((replicas, since)) = record {
        s.status = Some(ServiceScalerStatus {
            hibernation: Some(serde_json::from_value(json!({
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "replicas": replicas, "since": since,
            }))
            .unwrap()),
            ..ServiceScalerStatus::default()
        });
    }
    s
}

fn scale_of(replicas: i32) -> Scale {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "77"},
        "spec": {"replicas": replicas},
    }))
    .unwrap()
}

/// The ebb-owned HPA at the settings in force at `now` (so no HPA write muddles the plan).
fn hpa_in_sync(spec: &Value, now: jiff::Timestamp) -> HorizontalPodAutoscaler {
    let mut settings = schedule(spec.clone()).effective_at(now).clone();
    settings.hibernate = false;
    let mut h = hpa(&settings, true);
    h.metadata.resource_version = Some("5".into());
    h.metadata.uid = Some("hpa-uid".into());
    h
}

fn decide_at(
    s: &ServiceScaler,
    hpa: Option<&HorizontalPodAutoscaler>,
    scale: Option<&Scale>,
    now: &str,
) -> Plan {
    decide(
        &Observed {
            calendars: &Calendars::new(),
            scaler: s,
            hpa,
            scale,
            dry_run: false,
            ledger: None,
        },
        utc(now),
    )
}

/// `verb kind` of each write, in order.
fn shape(plan: &Plan) -> Vec<String> {
    plan.writes
        .iter()
        .map(|w| format!("{} {}", w.verb.as_str(), w.target.resource.kind))
        .collect()
}

fn scale_patch(plan: &Plan) -> Value {
    plan.writes
        .iter()
        .find_map(|w| match &w.verb {
            Verb::MergeScale(patch) => Some(patch.value()),
            _ => None,
        })
        .expect("a scale write")
}

fn status(plan: &Plan) -> &Value {
    &plan.status.as_ref().expect("a status write").patch["status"]
}

#[test]
fn a_hibernating_range_records_the_replicas_first_then_scales_to_zero() {
    let spec = nightly("0s");
    let now = "2026-05-04T21:00:00Z";
    let s = read_scaler(spec.clone(), None, &[FINALIZER]);
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(3)), now);
    assert_eq!(
        shape(&plan),
        ["patch status ServiceScaler", "patch scale Deployment"]
    );
    let Verb::MergeStatus(record) = &plan.writes[0].verb else {
        panic!("{:?}", plan.writes[0])
    };
    let record = record.value();
    assert_eq!(record["metadata"]["resourceVersion"], "20");
    assert_eq!(record["status"]["hibernation"]["replicas"], 3);
    assert_eq!(
        record["status"]["hibernation"]["since"],
        "2026-05-04T21:00:00Z"
    );
    assert_eq!(
        record["status"]["hibernation"]["scaleTargetRef"]["name"],
        "web"
    );
    let patch = scale_patch(&plan);
    assert_eq!(patch["spec"]["replicas"], 0);
    assert_eq!(patch["metadata"]["resourceVersion"], "77");
    let sleep = &plan.writes[1];
    assert_eq!(sleep.category, ebb_core::plan::Category::Target);
    assert_eq!(sleep.reason, Some("hibernate"));
    assert_eq!(sleep.target.resource.plural, "deployments");
    assert_eq!(sleep.target.namespace.as_deref(), Some("shop"));
    assert_eq!(sleep.notices[0].reason, "Hibernated");
    assert!(
        sleep.notices[0]
            .note
            .contains("Deployment shop/web scaled 3 -> 0"),
        "{:?}",
        sleep.notices
    );
    assert_eq!(status(&plan)["hibernation"]["replicas"], 3);
    let ready = status(&plan)["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("hibernating, 3 replicas to return to"),
        "{ready}"
    );
}

#[test]
fn a_workload_scaled_up_mid_hibernation_goes_back_to_zero_and_keeps_the_first_count() {
    let spec = nightly("0s");
    let now = "2026-05-04T23:00:00Z";
    let s = read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    );
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(7)), now);
    assert_eq!(scale_patch(&plan)["spec"]["replicas"], 0);
    let Verb::MergeStatus(record) = &plan.writes[0].verb else {
        panic!("{:?}", plan.writes)
    };
    let record = record.value();
    assert_eq!(record["status"]["hibernation"]["replicas"], 3);
    assert_eq!(
        record["status"]["hibernation"]["since"],
        "2026-05-04T20:00:00Z"
    );
}

#[test]
fn a_hibernating_workload_at_zero_is_left_and_the_pass_writes_nothing() {
    let spec = nightly("0s");
    let now = "2026-05-04T23:00:00Z";
    let mut s = read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    );
    let h = hpa_in_sync(&spec, utc(now));
    let first = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert!(first.writes.is_empty(), "{:?}", first.writes);
    // The status as that pass left it.
    let observed = Observed {
        calendars: &Calendars::new(),
        scaler: &s,
        hpa: Some(&h),
        scale: Some(&scale_of(0)),
        dry_run: false,
        ledger: None,
    };
    if let Some(status) = decide_scaling(&observed, utc(now)).status {
        s.status = Some(status);
    }
    let again = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert!(again.writes_nothing(), "{again:?}");
}

#[test]
fn a_workload_already_at_zero_without_a_record_is_not_ebbs_hibernation() {
    let spec = nightly("0s");
    let now = "2026-05-04T21:00:00Z";
    let s = read_scaler(spec.clone(), None, &[]);
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert!(
        shape(&plan).iter().all(|w| !w.starts_with("patch scale")),
        "{plan:?}"
    );
    assert!(status(&plan).get("hibernation").is_none());
}

#[test]
fn at_the_ranges_end_the_workload_gets_its_replicas_back_and_the_record_goes() {
    let spec = nightly("0s");
    // 06:00Z: the defaults (2..10) are in force again.
    let now = "2026-05-05T06:00:00Z";
    let s = read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    );
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert_eq!(shape(&plan)[0], "patch scale Deployment");
    let wake = &plan.writes[0];
    assert_eq!(wake.reason, Some("wake"));
    assert_eq!(scale_patch(&plan)["spec"]["replicas"], 3);
    assert_eq!(wake.notices[0].reason, "Woke");
    assert_eq!(status(&plan)["hibernation"], Value::Null);
    // The finalizer, held only for the hibernation of an HPA ebb owns, goes after the wake.
    assert_eq!(shape(&plan).last().unwrap(), "patch ServiceScaler");
}

#[test]
fn a_wake_gives_at_least_min_replicas_and_at_most_max_replicas() {
    let spec = nightly("0s");
    let now = "2026-05-05T07:00:00Z";
    let h = hpa_in_sync(&spec, utc(now));
    for (recorded, expected) in [(0, 2), (1, 2), (5, 5), (40, 10)] {
        let s = read_scaler(spec.clone(), Some((recorded, "2026-05-04T20:00:00Z")), &[]);
        let plan = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
        assert_eq!(
            scale_patch(&plan)["spec"]["replicas"],
            expected,
            "recorded {recorded}"
        );
    }
}

#[test]
fn a_workload_running_again_or_gone_only_loses_the_record() {
    let spec = nightly("0s");
    let now = "2026-05-05T07:00:00Z";
    let s = read_scaler(spec.clone(), Some((3, "2026-05-04T20:00:00Z")), &[]);
    let h = hpa_in_sync(&spec, utc(now));
    for scale in [Some(scale_of(4)), None] {
        let plan = decide_at(&s, Some(&h), scale.as_ref(), now);
        assert!(plan.writes.is_empty(), "{:?}", plan.writes);
        assert_eq!(status(&plan)["hibernation"], Value::Null);
    }
}

#[test]
fn the_lead_time_wakes_the_workload_ahead_of_the_ranges_end() {
    let spec = nightly("30m");
    let s = read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    );
    let before = "2026-05-05T05:29:59Z";
    let h = hpa_in_sync(&spec, utc(before));
    let asleep = decide_at(&s, Some(&h), Some(&scale_of(0)), before);
    assert!(asleep.writes.is_empty(), "{:?}", asleep.writes);
    // Looked at again exactly when the lead opens.
    assert_eq!(
        asleep.requeue,
        ebb_core::plan::Requeue::After(Duration::from_secs(1))
    );
    let at = "2026-05-05T05:30:00Z";
    let awake = decide_at(&s, Some(&h), Some(&scale_of(0)), at);
    assert_eq!(scale_patch(&awake)["spec"]["replicas"], 3);
    let plan_led = lead::lead_at(&schedule(spec), utc(at));
    assert!(!plan_led.settings.hibernate);
}

#[test]
fn entering_a_hibernating_range_is_a_transition_even_with_the_same_hpa_settings() {
    let spec = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
                           "replicaSpec": {"hibernate": true}}]
    });
    let coming = schedule(spec).transitions(utc("2026-05-04T12:00:00Z"), 2);
    assert_eq!(coming[0].at, utc("2026-05-04T20:00:00Z"));
    assert!(coming[0].settings.hibernate);
    assert_eq!(coming[1].at, utc("2026-05-05T06:00:00Z"));
    assert!(!coming[1].settings.hibernate);
}

#[test]
fn pause_and_the_kill_switch_hold_a_hibernation() {
    let spec = nightly("0s");
    let now = "2026-05-04T21:00:00Z";
    let mut paused = read_scaler(spec.clone(), None, &[FINALIZER]);
    paused.metadata.annotations = Some(
        [(
            ebb_core::pause::PAUSED_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]
        .into(),
    );
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&paused, Some(&h), Some(&scale_of(3)), now);
    assert!(plan.writes.is_empty(), "{:?}", plan.writes);

    let s = read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    );
    let mut off = h.clone();
    off.metadata.annotations = Some([(MANAGED_ANNOTATION.to_owned(), "false".to_owned())].into());
    for now in ["2026-05-04T21:00:00Z", "2026-05-05T07:00:00Z"] {
        let plan = decide_at(&s, Some(&off), Some(&scale_of(3)), now);
        assert!(plan.writes.is_empty(), "{now}: {:?}", plan.writes);
        let plan = decide_at(&s, Some(&off), Some(&scale_of(0)), now);
        assert!(plan.writes.is_empty(), "{now}: {:?}", plan.writes);
    }
}

#[test]
fn a_kind_hibernation_does_not_scale_is_reported_and_left_alone() {
    let mut spec = nightly("0s");
    spec["scaleTargetRef"] =
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"});
    let now = "2026-05-04T21:00:00Z";
    let s = read_scaler(spec, None, &[]);
    let plan = decide_at(&s, None, None, now);
    assert!(
        shape(&plan).iter().all(|w| !w.starts_with("patch scale")),
        "{plan:?}"
    );
    let ready = status(&plan)["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "CannotHibernate");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("cannot hibernate argoproj.io/v1alpha1 Rollout web"),
        "{ready}"
    );
    assert!(reads_scale(&s));
    assert_eq!(scale_resource(&hibernation_target(&s, None)), None);
}

#[test]
fn the_finalizer_is_held_while_a_hibernation_of_an_owned_hpa_would_otherwise_be_lost() {
    let spec = nightly("0s");
    let now = "2026-05-04T21:00:00Z";
    let s = read_scaler(spec.clone(), None, &[]);
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(3)), now);
    assert_eq!(
        shape(&plan),
        [
            "patch ServiceScaler",
            "patch status ServiceScaler",
            "patch scale Deployment"
        ]
    );
    let Verb::Merge(finalizer) = &plan.writes[0].verb else {
        panic!("{:?}", plan.writes[0])
    };
    let finalizer = finalizer.value();
    assert_eq!(finalizer["metadata"]["finalizers"], json!([FINALIZER]));
}

fn deleting(mut s: ServiceScaler) -> ServiceScaler {
    s.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc("2026-05-04T22:00:00Z")));
    s
}

#[test]
fn deleting_the_scaler_mid_hibernation_wakes_the_workload_before_the_finalizer_goes() {
    let spec = nightly("0s");
    let now = "2026-05-04T22:00:00Z";
    let h = hpa_in_sync(&spec, utc(now));
    let s = deleting(read_scaler(
        spec.clone(),
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    ));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert_eq!(
        shape(&plan),
        ["patch scale Deployment", "patch ServiceScaler"]
    );
    assert_eq!(scale_patch(&plan)["spec"]["replicas"], 3);
    assert!(
        plan.writes[0].notices[0]
            .note
            .contains("its ServiceScaler is deleted")
    );

    // Already awake: nothing to scale.
    let plan = decide_at(&s, Some(&h), Some(&scale_of(3)), now);
    assert_eq!(shape(&plan), ["patch ServiceScaler"]);

    // Orphan: left at 0, an Event says so.
    let mut orphan = spec.clone();
    orphan["deletionPolicy"] = json!("Orphan");
    let s = deleting(read_scaler(
        orphan,
        Some((3, "2026-05-04T20:00:00Z")),
        &[FINALIZER],
    ));
    let plan = decide_at(&s, Some(&h), Some(&scale_of(0)), now);
    assert!(
        shape(&plan).iter().all(|w| !w.starts_with("patch scale")),
        "{plan:?}"
    );
    let notices: Vec<&Notice> = plan
        .writes
        .iter()
        .flat_map(|w| &w.notices)
        .chain(&plan.notices)
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.reason == "NotWoken" && n.note.contains("deletionPolicy Orphan")),
        "{notices:?}"
    );
    // ... and its entry leaves the install's hibernation ledger, so that nothing wakes it later.
    let ledger = crate::ledger::ledger_target("ebb", "service-scaler");
    let plan = decide(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&h),
            scale: Some(&scale_of(0)),
            dry_run: false,
            ledger: Some(&ledger),
        },
        utc(now),
    );
    assert!(
        plan.writes.iter().any(|w| w.target == ledger
            && matches!(&w.verb, Verb::Merge(p) if p.value()["data"][format!("{}.web", s.namespace().unwrap())].is_null())),
        "{plan:?}"
    );
    assert!(shape(&plan).iter().all(|w| !w.starts_with("patch scale")));
}

#[test]
fn a_dry_run_scales_nothing_and_says_what_it_would_have_done() {
    let spec = nightly("0s");
    let now = "2026-05-04T21:00:00Z";
    let s = read_scaler(spec.clone(), None, &[]);
    let h = hpa_in_sync(&spec, utc(now));
    let plan = decide(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&h),
            scale: Some(&scale_of(3)),
            dry_run: true,
            ledger: None,
        },
        utc(now),
    );
    assert!(plan.writes.is_empty(), "{:?}", plan.writes);
    assert!(status(&plan).get("hibernation").is_none());
    assert!(
        plan.notices
            .iter()
            .any(|n| n.reason == "DryRun" && n.note.contains("scaled 3 -> 0")),
        "{:?}",
        plan.notices
    );
}
