//! Tests of FleetSchedule: the rules in the module doc, each through the plan a pass returns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_core::plan::{Requeue, Verb};
use ebb_schedule::Calendars;
type Plan<G> = ebb_core::plan::Plan<G>;
use ebb_crds::fleet::FleetSchedule;
use ebb_testkit::utc;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use crate::*;

/// A FleetSchedule `name` in `namespace`, created at `created`, selecting `tier: web`:
/// 08:00-12:00Z minReplicas 5 (leadTime off), plus `extra` merged into its spec.
fn fleet(namespace: &str, name: &str, created: &str, extra: Value) -> FleetSchedule {
    let mut spec = json!({
        "selector": {"matchLabels": {"tier": "web"}},
        "leadTime": "0s",
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
                           "replicaSpec": {"hpa": {"minReplicas": 5}}}],
    });
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                     "generation": 1, "resourceVersion": "7", "creationTimestamp": created},
        "spec": spec,
    }))
    .unwrap()
}

fn office(name: &str) -> FleetSchedule {
    fleet("shop", name, "2026-01-01T00:00:00Z", json!({}))
}

/// HPA `shop/web` labelled `tier: web`, 2..10 with cpu at 60% and a queue metric, carrying
/// `annotations`.
fn hpa(annotations: Value) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "hpa-uid",
                     "resourceVersion": "41", "labels": {"tier": "web"},
                     "annotations": annotations},
        "spec": {
            "minReplicas": 2, "maxReplicas": 10,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "External", "external": {"metric": {"name": "queue"},
                    "target": {"type": "AverageValue", "averageValue": "30"}}},
            ],
        },
    }))
    .unwrap()
}

fn own_record() -> Record {
    Record::of(hpa(json!({})).spec.as_ref().unwrap())
}

fn recorded(record: &Record, fleet: &str) -> Value {
    json!({
        FLEET_ANNOTATION: fleet,
        RECORD_ANNOTATION: serde_json::to_string(record).unwrap(),
    })
}

fn scale(replicas: i32) -> Scale {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "90"},
        "spec": {"replicas": replicas},
    }))
    .unwrap()
}

fn pass(hpa: &HorizontalPodAutoscaler, fleets: &[&FleetSchedule], ss: bool, at: &str) -> Plan<()> {
    pass_with(hpa, fleets, ss, None, at)
}

fn pass_with(
    hpa: &HorizontalPodAutoscaler,
    fleets: &[&FleetSchedule],
    ss: bool,
    scale: Option<&Scale>,
    at: &str,
) -> Plan<()> {
    let claim = claim(&hpa.metadata, fleets.iter().copied(), ss, Reach::default());
    decide_member(
        &MemberObserved {
            calendars: &Calendars::new(),
            hpa,
            claim: &claim,
            scale,
            dry_run: false,
        },
        utc(at),
    )
}

fn merge_patch(plan: &Plan<()>, i: usize) -> Value {
    match &plan.writes[i].verb {
        Verb::Merge(patch) => patch.value(),
        other => panic!("write {i} is {other:?}"),
    }
}

fn patched_record(patch: &Value) -> Option<Record> {
    patch["metadata"]["annotations"][RECORD_ANNOTATION]
        .as_str()
        .map(|t| serde_json::from_str(t).unwrap())
}

#[test]
fn inside_a_range_the_first_write_records_the_own_values_with_the_change() {
    let plan = pass(
        &hpa(json!({})),
        &[&office("hours")],
        false,
        "2026-03-02T09:00:00Z",
    );
    assert_eq!(plan.writes.len(), 1, "{plan:?}");
    let patch = merge_patch(&plan, 0);
    // One write, preconditioned on the version read: the record and the change land together.
    assert_eq!(patch["metadata"]["resourceVersion"], "41");
    assert_eq!(
        patch["metadata"]["annotations"][FLEET_ANNOTATION],
        "shop/hours"
    );
    assert_eq!(patched_record(&patch), Some(own_record()));
    assert_eq!(patch["spec"]["minReplicas"], 5);
    assert_eq!(patch["spec"]["maxReplicas"], 10);
    // cpu and the foreign metric kept as they were: the range does not touch them.
    assert_eq!(
        patch["spec"]["metrics"],
        json!(hpa(json!({})).spec.unwrap().metrics)
    );
    assert_eq!(plan.writes[0].reason, Some("fleet"));
    // Looked at again at the range's end, or within the hour.
    assert_eq!(plan.requeue, Requeue::After(MAX_REQUEUE));
}

#[test]
fn outside_every_range_an_hpa_never_changed_is_left_alone() {
    let plan = pass(
        &hpa(json!({})),
        &[&office("hours")],
        false,
        "2026-03-02T13:00:00Z",
    );
    assert!(plan.writes.is_empty(), "{plan:?}");
    assert!(plan.notices.is_empty());
    // The next boundary: 08:00 tomorrow, beyond the hour's safety net.
    assert_eq!(plan.requeue, Requeue::After(MAX_REQUEUE));
}

#[test]
fn a_member_in_sync_writes_nothing() {
    let mut in_range = hpa(recorded(&own_record(), "shop/hours"));
    in_range.spec.as_mut().unwrap().min_replicas = Some(5);
    let plan = pass(
        &in_range,
        &[&office("hours")],
        false,
        "2026-03-02T09:00:00Z",
    );
    assert!(plan.writes_nothing(), "{plan:?}");
}

#[test]
fn drift_inside_a_range_is_undone_and_the_record_kept() {
    let mut drifted = hpa(recorded(&own_record(), "shop/hours"));
    drifted.spec.as_mut().unwrap().min_replicas = Some(3);
    let plan = pass(&drifted, &[&office("hours")], false, "2026-03-02T09:00:00Z");
    let patch = merge_patch(&plan, 0);
    assert_eq!(patch["spec"]["minReplicas"], 5);
    // The record says what the HPA was before ebb: a drift does not replace it.
    assert!(patch["metadata"].get("annotations").is_none(), "{patch}");
}

#[test]
fn at_the_ranges_end_the_recorded_values_come_back_and_the_record_goes() {
    let mut own = own_record();
    own.min_replicas = Some(3);
    let mut in_range = hpa(recorded(&own, "shop/hours"));
    in_range.spec.as_mut().unwrap().min_replicas = Some(5);
    let plan = pass(
        &in_range,
        &[&office("hours")],
        false,
        "2026-03-02T12:00:00Z",
    );
    let patch = merge_patch(&plan, 0);
    assert_eq!(patch["spec"]["minReplicas"], 3);
    assert_eq!(
        patch["metadata"]["annotations"][FLEET_ANNOTATION],
        Value::Null
    );
    assert_eq!(
        patch["metadata"]["annotations"][RECORD_ANNOTATION],
        Value::Null
    );
    assert_eq!(plan.writes[0].reason, Some("restore"));
    let notice = &plan.writes[0].notices[0];
    assert_eq!(notice.reason, "Restored");
    assert!(
        notice.note.contains("minReplicas 5 -> 3"),
        "{}",
        notice.note
    );
}

#[test]
fn an_hpa_that_leaves_the_selector_opts_out_or_outlives_its_fleet_gets_its_values_back() {
    let mut member = hpa(recorded(&own_record(), "shop/hours"));
    member.spec.as_mut().unwrap().min_replicas = Some(5);
    let at = "2026-03-02T09:00:00Z";
    // Its label changed.
    let mut relabelled = member.clone();
    relabelled.metadata.labels = Some([("tier".into(), "batch".into())].into());
    // It opted out.
    let mut opted = member.clone();
    opted
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(OPT_OUT_ANNOTATION.into(), "true".into());
    for (case, plan) in [
        (
            "left the selector",
            pass(&relabelled, &[&office("hours")], false, at),
        ),
        ("opted out", pass(&opted, &[&office("hours")], false, at)),
        ("fleet deleted", pass(&member, &[], false, at)),
    ] {
        let patch = merge_patch(&plan, 0);
        assert_eq!(patch["spec"]["minReplicas"], 2, "{case}");
        assert_eq!(
            patch["metadata"]["annotations"][RECORD_ANNOTATION],
            Value::Null,
            "{case}"
        );
        assert_eq!(plan.requeue, Requeue::AwaitChange, "{case}");
    }
    // A FleetSchedule being deleted claims nothing either.
    let mut going = office("hours");
    going.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc(at)));
    let plan = pass(&member, &[&going], false, at);
    assert_eq!(merge_patch(&plan, 0)["spec"]["minReplicas"], 2);
}

#[test]
fn a_service_scaler_of_the_hpas_name_wins_and_only_the_record_goes() {
    let mut member = hpa(recorded(&own_record(), "shop/hours"));
    member.spec.as_mut().unwrap().min_replicas = Some(5);
    let plan = pass(&member, &[&office("hours")], true, "2026-03-02T09:00:00Z");
    let patch = merge_patch(&plan, 0);
    assert!(
        patch.get("spec").is_none(),
        "the ServiceScaler writes the settings: {patch}"
    );
    assert_eq!(
        patch["metadata"]["annotations"][RECORD_ANNOTATION],
        Value::Null
    );
    // And an HPA it never touched is not even a member.
    let fresh = hpa(json!({}));
    let hours = office("hours");
    let claim = claim(&fresh.metadata, [&hours], true, Reach::default());
    assert_eq!(claim, Claim::ServiceScaler);
    assert!(!needs_pass(&fresh.metadata, &claim));
}

#[test]
fn of_two_fleets_matching_an_hpa_the_older_schedules_it() {
    let older = fleet("shop", "older", "2026-01-01T00:00:00Z", json!({}));
    let newer = fleet(
        "shop",
        "newer",
        "2026-02-01T00:00:00Z",
        json!({"timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
                                  "replicaSpec": {"hpa": {"minReplicas": 7}}}]}),
    );
    let plan = pass(
        &hpa(json!({})),
        &[&newer, &older],
        false,
        "2026-03-02T09:00:00Z",
    );
    let patch = merge_patch(&plan, 0);
    assert_eq!(patch["spec"]["minReplicas"], 5);
    assert_eq!(
        patch["metadata"]["annotations"][FLEET_ANNOTATION],
        "shop/older"
    );
    // Same age: by namespace and name.
    let a = fleet("shop", "a", "2026-01-01T00:00:00Z", json!({}));
    let b = fleet("shop", "b", "2026-01-01T00:00:00Z", json!({}));
    let Claim::Fleet { winner, rivals } =
        claim(&hpa(json!({})).metadata, [&b, &a], false, Reach::default())
    else {
        panic!("no fleet claims it");
    };
    assert_eq!(fleet_key(winner), "shop/a");
    assert_eq!(rivals.len(), 1);
}

#[test]
fn the_kill_switch_and_a_pause_on_the_hpa_or_the_fleet_stop_every_write() {
    let at = "2026-03-02T09:00:00Z";
    let killed = hpa(json!({MANAGED_ANNOTATION: "false"}));
    assert!(pass(&killed, &[&office("hours")], false, at).writes_nothing());
    let paused = hpa(json!({"scaling.ebb.dev/paused": "true"}));
    assert!(pass(&paused, &[&office("hours")], false, at).writes_nothing());
    let mut fleet = office("hours");
    fleet.metadata.annotations = Some(
        [(
            "scaling.ebb.dev/paused-until".into(),
            "2026-03-02T10:00:00Z".into(),
        )]
        .into(),
    );
    let plan = pass(&hpa(json!({})), &[&fleet], false, at);
    assert!(plan.writes_nothing());
    assert_eq!(
        plan.requeue,
        Requeue::After(std::time::Duration::from_secs(3600))
    );
}

#[test]
fn overrides_change_only_what_they_name_and_keep_other_metric_shapes() {
    // cpu as an average value, which no override names: kept as it is.
    let mut average = hpa(json!({}));
    average.spec.as_mut().unwrap().metrics.as_mut().unwrap()[0] =
        serde_json::from_value(json!({"type": "Resource", "resource": {"name": "cpu",
               "target": {"type": "AverageValue", "averageValue": "500m"}}}))
        .unwrap();
    let plan = pass(&average, &[&office("hours")], false, "2026-03-02T09:00:00Z");
    let patch = merge_patch(&plan, 0);
    assert_eq!(
        patch["spec"]["metrics"][0]["resource"]["target"]["averageValue"],
        "500m"
    );
    // A range that sets cpu and a queue target and removes nothing else.
    let retarget = fleet(
        "shop",
        "hours",
        "2026-01-01T00:00:00Z",
        json!({"timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"targetCPUUtilization": 40,
                "metricTargets": [{"name": "queue", "averageValue": "10"}]}}}]}),
    );
    let plan = pass(&hpa(json!({})), &[&retarget], false, "2026-03-02T09:00:00Z");
    let metrics = &merge_patch(&plan, 0)["spec"]["metrics"];
    assert_eq!(metrics[0]["resource"]["target"]["averageUtilization"], 40);
    assert_eq!(metrics[1]["external"]["target"]["averageValue"], "10");
    assert_eq!(merge_patch(&plan, 0)["spec"]["minReplicas"], 2);
}

#[test]
fn a_range_the_hpas_own_values_cannot_take_is_reported_and_nothing_written() {
    // maxReplicas 4 under an HPA whose own minReplicas is 6.
    let narrow = fleet(
        "shop",
        "hours",
        "2026-01-01T00:00:00Z",
        json!({"timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"maxReplicas": 4}}}]}),
    );
    let mut big = hpa(json!({}));
    big.spec.as_mut().unwrap().min_replicas = Some(6);
    let plan = pass(&big, &[&narrow], false, "2026-03-02T09:00:00Z");
    assert!(plan.writes.is_empty());
    assert_eq!(plan.notices[0].reason, "FleetInvalid");
    assert!(
        plan.notices[0].note.contains("shop/hours"),
        "{}",
        plan.notices[0].note
    );
}

/// A FleetSchedule naming a HolidayCalendar: missing, its members are left as they are and its
/// status says which entry; held, a holiday is outside the range for every member.
#[test]
fn a_fleet_naming_a_holiday_calendar_skips_its_dates_and_a_missing_one_holds_its_members() {
    let hours = fleet(
        "shop",
        "hours",
        "2026-01-01T00:00:00Z",
        json!({"timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "excludeCalendars": ["ch"], "replicaSpec": {"hpa": {"minReplicas": 5}}}]}),
    );
    let web = hpa(json!({}));
    let claim = claim(&web.metadata, [&hours], false, Reach::default());
    let member = |calendars: &Calendars, at: &str| {
        decide_member(
            &MemberObserved {
                calendars,
                hpa: &web,
                claim: &claim,
                scale: None,
                dry_run: false,
            },
            utc(at),
        )
    };
    let missing = member(&Calendars::new(), "2026-12-23T09:00:00Z");
    assert!(missing.writes.is_empty());
    assert_eq!(missing.notices[0].reason, "FleetInvalid");
    let no_scalers = |_: &ObjectMeta| false;
    let status = |calendars: &Calendars| {
        let plan = decide_fleet(
            &FleetObserved {
                calendars,
                fleet: &hours,
                fleets: &[&hours],
                hpas: &[&web.metadata],
                service_scaler: &no_scalers,
                reach: Reach::default(),
            },
            utc("2026-12-23T09:00:00Z"),
        );
        plan.status.unwrap().patch["status"].clone()
    };
    let invalid = status(&Calendars::new());
    assert_eq!(condition(&invalid, "SpecValid")["status"], "False");
    assert!(
        condition(&invalid, "SpecValid")["message"]
            .as_str()
            .unwrap()
            .contains(
                "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"ch\" not found"
            ),
        "{invalid}"
    );

    let mut ch = Calendars::new();
    ch.insert("ch", &["2026-12-25"]);
    assert_eq!(condition(&status(&ch), "SpecValid")["status"], "True");
    // The day before: in force, the first write; on the holiday: nothing to do.
    assert_eq!(member(&ch, "2026-12-24T09:00:00Z").writes.len(), 1);
    assert!(member(&ch, "2026-12-25T09:00:00Z").writes.is_empty());
}

#[test]
fn an_unreadable_record_holds_the_hpa_with_a_warning() {
    let broken = hpa(json!({RECORD_ANNOTATION: "{not json"}));
    let plan = pass(&broken, &[&office("hours")], false, "2026-03-02T09:00:00Z");
    assert!(plan.writes.is_empty());
    assert_eq!(plan.notices[0].reason, "FleetRecordUnreadable");
    assert!(plan.notices[0].note.contains(RECORD_ANNOTATION));
}

fn nightly() -> FleetSchedule {
    fleet(
        "shop",
        "nights",
        "2026-01-01T00:00:00Z",
        json!({"timeRangeSpec": [{"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
            "replicaSpec": {"hibernate": true}}]}),
    )
}

#[test]
fn a_hibernating_range_records_the_replicas_before_scaling_to_zero() {
    let hpa = hpa(json!({}));
    let nights = nightly();
    let claim = claim(&hpa.metadata, [&nights], false, Reach::default());
    assert!(member_reads_scale(&hpa, &claim));
    let plan = pass_with(
        &hpa,
        &[&nightly()],
        false,
        Some(&scale(3)),
        "2026-03-02T21:00:00Z",
    );
    assert_eq!(plan.writes.len(), 2, "{plan:?}");
    let record = patched_record(&merge_patch(&plan, 0)).unwrap();
    assert_eq!(record.hibernation.as_ref().unwrap().replicas, 3);
    assert_eq!(record.min_replicas, Some(2));
    match &plan.writes[1].verb {
        Verb::MergeScale(patch) => {
            let patch = patch.value();
            assert_eq!(patch["spec"]["replicas"], 0);
            assert_eq!(patch["metadata"]["resourceVersion"], "90");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(plan.writes[1].target.name, "web");
    assert_eq!(plan.writes[1].reason, Some("hibernate"));
}

#[test]
fn at_the_hibernations_end_the_target_wakes_before_the_record_goes() {
    let mut own = own_record();
    own.hibernation = Some(
        serde_json::from_value(json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "replicas": 3, "since": "2026-03-02T20:00:00Z"}))
        .unwrap(),
    );
    let sleeping = hpa(recorded(&own, "shop/nights"));
    // Still night: nothing to do.
    let plan = pass_with(
        &sleeping,
        &[&nightly()],
        false,
        Some(&scale(0)),
        "2026-03-03T05:00:00Z",
    );
    assert!(plan.writes_nothing(), "{plan:?}");
    // Morning: scale back to 3, then drop the record (the settings never changed).
    let plan = pass_with(
        &sleeping,
        &[&nightly()],
        false,
        Some(&scale(0)),
        "2026-03-03T06:00:00Z",
    );
    assert!(
        matches!(&plan.writes[0].verb, Verb::MergeScale(p) if p.value()["spec"]["replicas"] == 3)
    );
    let patch = merge_patch(&plan, 1);
    assert_eq!(
        patch["metadata"]["annotations"][RECORD_ANNOTATION],
        Value::Null
    );
    // Leaving the fleet mid-hibernation wakes it too.
    let plan = pass_with(
        &sleeping,
        &[],
        false,
        Some(&scale(0)),
        "2026-03-03T01:00:00Z",
    );
    assert!(
        matches!(&plan.writes[0].verb, Verb::MergeScale(p) if p.value()["spec"]["replicas"] == 3)
    );
}

#[test]
fn namespaces_are_reached_only_from_ebbs_own_namespace_in_a_cluster_wide_install() {
    let wide = fleet(
        "ebb-system",
        "all",
        "2026-01-01T00:00:00Z",
        json!({"namespaces": ["shop"]}),
    );
    let meta = hpa(json!({})).metadata;
    let home = Reach {
        home: Some("ebb-system"),
        cluster_wide: true,
    };
    assert!(selects(&wide, &meta, home));
    assert!(!selects(
        &wide,
        &meta,
        Reach {
            cluster_wide: false,
            ..home
        }
    ));
    assert!(!selects(
        &wide,
        &meta,
        Reach {
            home: Some("elsewhere"),
            ..home
        }
    ));
    let refusal = Reach {
        home: Some("elsewhere"),
        ..home
    }
    .refusal(&wide)
    .unwrap();
    assert!(refusal.contains("spec.namespaces"), "{refusal}");
    // Its own namespace needs no permission.
    assert!(selects(&office("hours"), &meta, Reach::default()));
}

fn status_of(
    fleet: &FleetSchedule,
    fleets: &[&FleetSchedule],
    hpas: &[&ObjectMeta],
    at: &str,
) -> (Plan<()>, Value) {
    let no_scalers = |_: &ObjectMeta| false;
    let plan = decide_fleet(
        &FleetObserved {
            calendars: &Calendars::new(),
            fleet,
            fleets,
            hpas,
            service_scaler: &no_scalers,
            reach: Reach::default(),
        },
        utc(at),
    );
    let status = plan
        .status
        .as_ref()
        .map(|s| s.patch["status"].clone())
        .unwrap_or_default();
    (plan, status)
}

fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == type_)
        .unwrap()
}

#[test]
fn the_status_counts_members_and_names_the_range_in_force() {
    let web = hpa(json!({})).metadata;
    let mut other = web.clone();
    other.name = Some("api".into());
    let mut batch = web.clone();
    batch.name = Some("batch".into());
    batch.labels = Some([("tier".into(), "batch".into())].into());
    let hours = office("hours");
    let (plan, status) = status_of(
        &hours,
        &[&hours],
        &[&web, &other, &batch],
        "2026-03-02T09:00:00Z",
    );
    assert_eq!(status["members"], 2);
    assert_eq!(status["matchedRange"], 0);
    assert_eq!(status["nextTransition"], "2026-03-02T12:00:00Z");
    assert_eq!(condition(&status, "Ready")["status"], "True");
    assert_eq!(condition(&status, CONDITION_CONFLICT)["status"], "False");
    assert_eq!(plan.requeue, Requeue::After(MAX_REQUEUE));
    // Written as it is, the next pass writes nothing.
    let mut written = hours.clone();
    written.status = Some(serde_json::from_value(status).unwrap());
    let (plan, _) = status_of(
        &written,
        &[&written],
        &[&web, &other, &batch],
        "2026-03-02T09:30:00Z",
    );
    assert!(plan.writes_nothing(), "{plan:?}");
}

#[test]
fn a_conflict_is_reported_on_both_fleets_naming_the_winner() {
    let web = hpa(json!({})).metadata;
    let older = fleet("shop", "older", "2026-01-01T00:00:00Z", json!({}));
    let newer = fleet("shop", "newer", "2026-02-01T00:00:00Z", json!({}));
    let fleets = [&older, &newer];
    let (old_plan, old_status) = status_of(&older, &fleets, &[&web], "2026-03-02T09:00:00Z");
    let (new_plan, new_status) = status_of(&newer, &fleets, &[&web], "2026-03-02T09:00:00Z");
    assert_eq!(old_status["members"], 1);
    assert_eq!(new_status["members"], 0);
    for (plan, status) in [(&old_plan, &old_status), (&new_plan, &new_status)] {
        let conflict = condition(status, CONDITION_CONFLICT);
        assert_eq!(conflict["status"], "True");
        let message = conflict["message"].as_str().unwrap();
        assert!(
            message.contains("shop/older, the older, schedules them"),
            "{message}"
        );
        assert!(message.contains("shop/web"), "{message}");
        assert_eq!(plan.notices[0].reason, "Conflict");
    }
}

#[test]
fn an_invalid_selector_or_reach_is_reported_in_spec_valid() {
    let bad = fleet(
        "shop",
        "bad",
        "2026-01-01T00:00:00Z",
        json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Near"}]},
               "namespaces": ["other"]}),
    );
    let (plan, status) = status_of(&bad, &[&bad], &[], "2026-03-02T09:00:00Z");
    let valid = condition(&status, CONDITION_SPEC_VALID);
    assert_eq!(valid["status"], "False");
    let message = valid["message"].as_str().unwrap();
    assert!(message.contains("spec.selector"), "{message}");
    assert!(message.contains("spec.namespaces"), "{message}");
    assert_eq!(condition(&status, "Ready")["status"], "False");
    assert_eq!(plan.notices[0].reason, "InvalidSpec");
}

#[test]
fn a_dry_run_writes_nothing_and_says_what_it_would_have_done() {
    let hpa = hpa(json!({}));
    let hours = office("hours");
    let claim = claim(&hpa.metadata, [&hours], false, Reach::default());
    let plan = decide_member(
        &MemberObserved {
            calendars: &Calendars::new(),
            hpa: &hpa,
            claim: &claim,
            scale: None,
            dry_run: true,
        },
        utc("2026-03-02T09:00:00Z"),
    );
    assert!(plan.writes.is_empty());
    assert!(
        plan.notices[0].note.contains("minReplicas 2 -> 5"),
        "{}",
        plan.notices[0].note
    );
}

/// A FleetSchedule's pass over N HPAs parses each fleet's selector once, and builds its
/// schedule once: the work per HPA is a match, not a parse (issue 46's quadratic path).
#[test]
fn a_fleet_pass_parses_each_selector_once_whatever_the_number_of_hpas() {
    let web = office("web");
    let older = fleet("shop", "older", "2025-01-01T00:00:00Z", json!({}));
    let no_scalers = |_: &ObjectMeta| false;
    let parses_for = |n: usize| {
        let metas: Vec<ObjectMeta> = (0..n)
            .map(|i| {
                let mut meta = hpa(json!({})).metadata;
                meta.name = Some(format!("web-{i}"));
                meta
            })
            .collect();
        let hpas: Vec<&ObjectMeta> = metas.iter().collect();
        let before = selector_parses();
        let plan = decide_fleet(
            &FleetObserved {
                calendars: &Calendars::new(),
                fleet: &web,
                fleets: &[&web, &older],
                hpas: &hpas,
                service_scaler: &no_scalers,
                reach: Reach::default(),
            },
            utc("2026-12-23T09:00:00Z"),
        );
        let status = plan.status.unwrap().patch["status"].clone();
        assert_eq!(condition(&status, "Conflict")["status"], "True", "{n} HPAs");
        selector_parses() - before
    };
    let (at_n, at_2n) = (parses_for(100), parses_for(200));
    assert_eq!(
        at_n, at_2n,
        "parses grow with the HPAs: {at_n} at 100, {at_2n} at 200"
    );
    assert!(at_n <= 3, "{at_n} parses for two fleets");
}

#[test]
fn a_member_pass_reads_what_its_fleet_needs_and_an_unclaimed_hpa_nothing() {
    // Not selected, no record: no pass, nothing read, nothing written.
    let stranger = hpa(json!({}));
    let mut other = stranger.clone();
    other.metadata.labels = None;
    let hours = office("hours");
    let reads = members::reads(&other, [&hours], false, Reach::default());
    assert_eq!(reads.claim, Claim::Nobody);
    assert!(reads.calendars.is_empty() && reads.scale.is_none());
    let plan = members::decide(
        &members::Observed {
            calendars: &Calendars::new(),
            hpa: &other,
            claim: &reads.claim,
            scale: None,
            dry_run: false,
        },
        utc("2026-03-10T09:00:00Z"),
    );
    assert!(plan.writes.is_empty() && plan.notices.is_empty());
    // A member of a hibernating fleet naming a calendar: both are read, the Scale of its target.
    let mut nights = nightly();
    nights.spec.time_range_spec[0].exclude_calendars = vec!["ch".into()];
    let reads = members::reads(&stranger, [&nights], false, Reach::default());
    assert!(matches!(reads.claim, Claim::Fleet { .. }));
    assert_eq!(reads.calendars, ["ch"]);
    let scale = reads.scale.unwrap();
    assert_eq!(
        (scale.name.as_str(), scale.describe.as_str()),
        ("web", "Deployment shop/web")
    );
    assert_eq!(fleets::reads(&nights), ["ch"]);
}
