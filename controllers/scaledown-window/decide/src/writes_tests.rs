#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::NodeChange;
use ebb_core::plan::Verb;
use ebb_crds::scaledown::{ScaleDownScheduleSpec, ScaleDownScheduleStatus};
use ebb_testkit::utc;
use std::time::Duration;

fn schedule(finalizers: &[&str], deleting: bool) -> ScaleDownSchedule {
    let spec: ScaleDownScheduleSpec =
        serde_saphyr::from_str("target: {clusterAutoscaler: {}}\nwindows: []\n").unwrap();
    let mut schedule = ScaleDownSchedule::new("s", spec);
    schedule.metadata.resource_version = Some("12".into());
    schedule.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    if deleting {
        schedule.metadata.deletion_timestamp =
            Some(ebb_core::to_k8s_time(utc("2026-03-27T11:00:00Z")));
    }
    schedule
}

fn node_change(name: &str) -> Change {
    Change::Node {
        name: name.into(),
        resource_version: Some("7".into()),
        change: NodeChange::Release,
    }
}

fn report() -> Report {
    Report {
        status: None,
        flipped: false,
        notices: Vec::new(),
        invalid: false,
        conflict: false,
        api_missing: false,
        requeue: None,
    }
}

#[test]
fn the_finalizer_is_added_only_while_the_schedule_writes_its_target() {
    use FinalizerStep::*;
    for (finalizers, deleting, writes_target, step) in [
        (&[][..], false, true, Add),
        (&[][..], false, false, Apply),
        (&[FINALIZER][..], false, true, Apply),
        (&[FINALIZER][..], false, false, Apply),
        (&[FINALIZER][..], true, true, Release),
        (&[FINALIZER][..], true, false, Release),
        (&["other"][..], true, true, Gone),
    ] {
        assert_eq!(
            finalizer_step(&schedule(finalizers, deleting), writes_target),
            step,
            "{finalizers:?} deleting={deleting} writes_target={writes_target}"
        );
    }
}

#[test]
fn adding_the_finalizer_is_the_whole_pass_and_names_the_version_read() {
    let plan = add_finalizer(&schedule(&["other"], false));
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(
        plan.writes[0].verb,
        Verb::Merge(
            json!({"metadata": {"finalizers": ["other", FINALIZER],
                                         "resourceVersion": "12"}})
            .into()
        )
    );
    assert_eq!(plan.writes[0].category, Category::Metadata);
    assert!(plan.status.is_none());
    assert_eq!(plan.gauges, None, "the gauges stay as they are");
}

#[test]
fn target_changes_are_independent_writes_counted_by_kind() {
    let ca = Change::ClusterAutoscaler {
        name: "default".into(),
        uid: Some("u1".into()),
        enabled: false,
    };
    let write = change_write(&ca, "s");
    let Verb::Apply(body) = &write.verb else {
        panic!("{write:?}")
    };
    let body = body.value();
    assert_eq!(
        body["metadata"]["uid"], "u1",
        "never makes a deleted one again"
    );
    assert_eq!(write.target.describe(), "ClusterAutoscaler default");
    assert!(write.independent);
    assert_eq!(
        write.reason.and_then(kind_of_reason),
        Some(TargetKind::ClusterAutoscaler)
    );

    let write = change_write(&node_change("n1"), "s");
    let Verb::Merge(body) = &write.verb else {
        panic!("{write:?}")
    };
    let body = body.value();
    assert_eq!(body["metadata"]["resourceVersion"], "7");
    assert_eq!(write.target.describe(), "Node n1");
    assert_eq!(write.category, Category::Target);
    assert_eq!(
        write.reason.and_then(kind_of_reason),
        Some(TargetKind::NodeAnnotation)
    );
}

#[test]
fn an_applied_pass_writes_the_changes_then_the_status_diff() {
    let mut s = schedule(&[FINALIZER], false);
    s.status = Some(ScaleDownScheduleStatus {
        scale_down_enabled: true,
        ..ScaleDownScheduleStatus::default()
    });
    let mut report = report();
    report.status = Some(ScaleDownScheduleStatus {
        scale_down_enabled: false,
        ..ScaleDownScheduleStatus::default()
    });
    report.flipped = true;
    report.requeue = Some(Duration::from_secs(60));
    let plan = apply_plan(&s, &[node_change("n1"), node_change("n2")], false, report);
    assert_eq!(plan.writes.len(), 2);
    assert_eq!(
        plan.status.as_ref().unwrap().patch,
        json!({"status": {"scaleDownEnabled": false}}),
        "only what changed"
    );
    assert_eq!(plan.requeue, Requeue::After(Duration::from_secs(60)));
    let gauges = plan.gauges.unwrap();
    assert_eq!(gauges.name, "s");
    assert_eq!(
        gauges.values,
        Some(GaugeValues {
            enabled: false,
            invalid: false,
            conflict: false,
            api_missing: false,
            flipped: true,
        })
    );
}

#[test]
fn a_release_records_its_event_after_the_last_change_then_drops_the_finalizer() {
    let s = schedule(&[FINALIZER, "other"], true);
    let plan = release_plan(&s, &[node_change("n1"), node_change("n2")]);
    assert_eq!(plan.writes.len(), 3);
    assert!(plan.writes[0].notices.is_empty());
    assert_eq!(plan.writes[1].notices[0].reason, "Released");
    assert!(plan.writes[1].notices[0].note.contains("n1"));
    let last = &plan.writes[2];
    assert!(!last.independent, "only once every release succeeded");
    assert_eq!(
        last.verb,
        Verb::Merge(json!({"metadata": {"finalizers": ["other"], "resourceVersion": "12"}}).into())
    );
    assert_eq!(plan.gauges.unwrap().values, None, "its series are dropped");

    let nothing = release_plan(&s, &[]);
    assert_eq!(nothing.writes.len(), 1, "the finalizer alone, no Event");
    assert!(nothing.writes[0].notices.is_empty());
}
