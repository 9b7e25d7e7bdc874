#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::{ClusterMaintenance, decide_windows, parse_windows};
use ebb_crds::scaledown::ScaleDownScheduleSpec;
use ebb_testkit::utc;

fn decision(now: &str) -> Decision {
    let spec: ScaleDownScheduleSpec = serde_json::from_value(serde_json::json!({
        "target": {"clusterAutoscaler": {"name": "default"}},
        "windows": [{"schedule": "0 1 * * *", "duration": "4h", "timeZone": "UTC"}],
    }))
    .unwrap();
    let none = ebb_schedule::Calendars::new();
    assert!(parse_windows(&spec.windows, &none).is_ok());
    decide_windows(&spec, &none, utc(now), &ClusterMaintenance::default())
}

/// Every reason a Warning can carry is the condition's own.
#[test]
fn every_warning_condition_reason_is_its_event_reason() {
    let invalid = InvalidSpec::new("spec.target", "no kind");
    let decision = decision("2026-03-10T12:00:00Z");
    let outcomes = [
        TargetOutcome::Invalid(invalid),
        TargetOutcome::Planned {
            kind: TargetKind::MachineAutoscalers,
            plan: TargetDecision {
                cluster_autoscaler: Some(ClusterAutoscalerScaleDown::Missing),
                ..TargetDecision::default()
            },
            dry_run: false,
        },
        TargetOutcome::Planned {
            kind: TargetKind::MachineAutoscalers,
            plan: TargetDecision {
                cluster_autoscaler: Some(ClusterAutoscalerScaleDown::Off(None)),
                conflicts: vec![super::super::Conflict {
                    object: "MachineAutoscaler a/b".into(),
                    managed_by: "older".into(),
                }],
                ..TargetDecision::default()
            },
            dry_run: false,
        },
    ];
    let mut seen = Vec::new();
    for outcome in &outcomes {
        for c in conditions(&decision, outcome, None) {
            let warns = matches!(
                (c.type_.as_str(), c.status),
                (CONDITION_SCHEDULE_VALID, false)
                    | (CONDITION_TARGET_CONFLICT, true)
                    | (CONDITION_CLUSTER_AUTOSCALER_READY, false)
            );
            if warns {
                assert_eq!(warning_reason(&c.reason), c.reason);
                seen.push(c.reason);
            }
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
}

#[test]
fn a_first_decision_is_an_event_but_no_flip_and_an_unchanged_status_is_not_written() {
    let decision = decision("2026-03-10T12:00:00Z");
    let outcome = TargetOutcome::Planned {
        kind: TargetKind::ClusterAutoscaler,
        plan: TargetDecision {
            selected: 1,
            managed: 1,
            ..TargetDecision::default()
        },
        dry_run: false,
    };
    let input = ReportInput {
        status: None,
        generation: Some(1),
        decision: &decision,
        outcome: &outcome,
        pause: None,
        dry_run: false,
        now: utc("2026-03-10T12:00:00Z"),
    };
    let first = report(&input);
    assert!(!first.flipped);
    assert_eq!(first.notices[0].reason, "ScaleDownDisabled");
    let stored = first.status.unwrap();
    let again = report(&ReportInput {
        status: Some(&stored),
        ..input
    });
    assert_eq!(again.status, None);
    assert!(again.notices.is_empty());
    // The next window opens at 01:00 tomorrow: 13 hours.
    assert_eq!(again.requeue, Some(Duration::from_secs(13 * 3600)));
}
