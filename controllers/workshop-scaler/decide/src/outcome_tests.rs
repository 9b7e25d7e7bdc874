#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::{InFlight, Seats, resolve};
use ebb_core::EventKind;
use ebb_core::pause::pause_report;
use ebb_crds::babylon::AutoScaling;
use ebb_testkit::utc;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const NOW: &str = "2026-03-10T09:00:00Z";

pub(crate) fn enabled() -> Settings {
    Settings::Enabled(
        resolve(
            Some(&AutoScaling {
                enabled: Some(true),
                max_provisions: Some(4),
                ..AutoScaling::default()
            }),
            None,
        )
        .unwrap(),
    )
}

pub(crate) fn observed(count: i32, assigned: u32, total: u32) -> Counts {
    Counts {
        count,
        seats: Seats { assigned, total },
        ..Counts::default()
    }
}

pub(crate) fn input<'a>(settings: &'a Settings, observed: &'a Counts) -> Input<'a> {
    Input {
        settings,
        pause: None,
        observed,
        conditions: &[],
        release_annotation: false,
        dry_run: false,
        now: utc(NOW),
    }
}

fn reasons(plan: &Outcome) -> Vec<&'static str> {
    plan.notices.iter().map(|n| n.reason).collect()
}

#[test]
fn a_disabled_provision_gets_no_write_and_loses_its_series() {
    let settings = Settings::Disabled;
    let observed = observed(2, 9, 10);
    let plan = outcome(&input(&settings, &observed));
    assert_eq!(plan.status, None);
    assert_eq!(plan.count, None);
    assert!(plan.notices.is_empty());
    assert_eq!(plan.gauges, Gauges::Forget);
    assert_eq!(plan.requeue, None);
}

#[test]
fn a_scale_up_is_the_flag_then_the_count_then_its_events() {
    let settings = enabled();
    let observed = observed(2, 9, 10);
    let plan = outcome(&input(&settings, &observed));
    let status = plan.status.as_ref().unwrap();
    assert_eq!(status["autoScalingActive"], json!(true));
    assert_eq!(status["autoScalingFromCount"], json!(2));
    assert_eq!(status["autoScalingTargetCount"], json!(3));
    assert_eq!(plan.count, Some(3));
    assert!(plan.scaled_up);
    assert_eq!(reasons(&plan), ["ScaledUp"]);
    // The hold-down (60m by default) plus a second of slack.
    assert_eq!(plan.requeue, Some(Duration::from_secs(3601)));
    let Gauges::Observe(gauges) = plan.gauges else {
        panic!("{:?}", plan.gauges)
    };
    assert!(gauges.active);
    assert_eq!(gauges.desired_count, 3);
}

#[test]
fn reaching_max_provisions_adds_a_warning_after_the_scale_up() {
    let settings = enabled();
    let observed = observed(3, 9, 10);
    let plan = outcome(&input(&settings, &observed));
    assert_eq!(plan.count, Some(4));
    assert_eq!(reasons(&plan), ["ScaledUp", "ReachedMaxProvisions"]);
    assert_eq!(plan.notices[1].kind, EventKind::Warning);
}

#[test]
fn a_dry_run_reports_what_it_would_do_and_writes_neither_flag_nor_count() {
    let settings = enabled();
    let observed = observed(2, 9, 10);
    let plan = outcome(&Input {
        dry_run: true,
        ..input(&settings, &observed)
    });
    assert_eq!(plan.count, None);
    let status = plan.status.clone().unwrap();
    assert!(status.get("autoScalingActive").is_none());
    let conditions: Vec<Condition> = serde_json::from_value(status["conditions"].clone()).unwrap();
    let auto = conditions
        .iter()
        .find(|c| c.type_ == CONDITION_AUTO_SCALING)
        .unwrap();
    assert_eq!(auto.reason, "DryRun");
    assert_eq!(reasons(&plan), ["DryRun"]);
    let Gauges::Observe(gauges) = plan.gauges else {
        panic!()
    };
    assert!(!gauges.active, "a dry run starts nothing");
}

#[test]
fn a_requested_release_clears_the_flag_then_removes_the_annotation() {
    let settings = enabled();
    let observed = Counts {
        in_flight: Some(InFlight {
            started_at: Some(utc("2026-03-10T08:30:00Z")),
            from: Some(2),
            target: Some(3),
            claims: Vec::new(),
        }),
        release_requested: true,
        ..observed(3, 9, 10)
    };
    let plan = outcome(&Input {
        release_annotation: true,
        ..input(&settings, &observed)
    });
    let status = plan.status.clone().unwrap();
    assert_eq!(status["autoScalingActive"], json!(false));
    assert_eq!(status["autoScalingFromCount"], Value::Null);
    assert_eq!(status["autoScalingLastFromCount"], json!(2));
    assert!(plan.remove_release);
    assert!(!plan.remove_stale_release);
    assert_eq!(reasons(&plan), ["ScaleUpReleased"]);
    assert_eq!(plan.notices[0].kind, EventKind::Normal);
}

#[test]
fn a_release_annotation_with_nothing_in_flight_is_removed_first_unless_dry_run() {
    let settings = enabled();
    let observed = observed(2, 1, 10);
    let stale = Input {
        release_annotation: true,
        ..input(&settings, &observed)
    };
    assert!(outcome(&stale).remove_stale_release);
    assert!(
        !outcome(&Input {
            dry_run: true,
            ..stale
        })
        .remove_stale_release
    );
}

#[test]
fn a_pause_writes_only_its_condition_once_and_wakes_when_it_ends() {
    let settings = enabled();
    let observed = observed(2, 9, 10);
    let meta = ObjectMeta {
        name: Some("p".into()),
        annotations: Some(
            [(
                ebb_core::pause::PAUSED_UNTIL_ANNOTATION.to_owned(),
                "2026-03-10T10:00:00Z".to_owned(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    };
    let report = pause_report([("WorkshopProvision", &meta)], &[], None, utc(NOW)).unwrap();
    let first = outcome(&Input {
        pause: Some(&report),
        ..input(&settings, &observed)
    });
    assert_eq!(first.count, None);
    assert_eq!(first.gauges, Gauges::Keep);
    assert_eq!(reasons(&first), ["Paused"]);
    assert_eq!(first.requeue, Some(Duration::from_secs(3601)));
    let conditions: Vec<Condition> =
        serde_json::from_value(first.status.unwrap()["conditions"].clone()).unwrap();
    let again = pause_report([("WorkshopProvision", &meta)], &conditions, None, utc(NOW)).unwrap();
    let second = outcome(&Input {
        pause: Some(&again),
        conditions: &conditions,
        ..input(&settings, &observed)
    });
    assert_eq!(second.status, None, "nothing new: no write");
    assert!(second.notices.is_empty());
}

#[test]
fn an_unchanged_hold_writes_nothing() {
    let settings = enabled();
    let observed = observed(2, 1, 10);
    let first = outcome(&input(&settings, &observed));
    let conditions: Vec<Condition> =
        serde_json::from_value(first.status.unwrap()["conditions"].clone()).unwrap();
    let second = outcome(&Input {
        conditions: &conditions,
        ..input(&settings, &observed)
    });
    assert_eq!(second.status, None);
    assert!(second.notices.is_empty());
    assert_eq!(second.requeue, None);
}
