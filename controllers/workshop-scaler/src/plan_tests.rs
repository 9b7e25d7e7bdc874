#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use serde_json::json;

const NOW: Timestamp = Timestamp::UNIX_EPOCH;

fn provision(auto: serde_json::Value, count: i32) -> WorkshopProvision {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
        "metadata": {"name": "p", "namespace": "n"},
        "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": count, "workshopName": "w",
                 "autoScaling": auto}
    }))
    .unwrap()
}

fn args(assigned: u32, total: u32, active: bool) -> PlanArgs {
    PlanArgs {
        input: Input {
            file: "p.yaml".into(),
            ..Input::default()
        },
        workshop: None,
        assigned,
        total,
        active,
        output: Output::JSON,
    }
}

#[test]
fn scales_at_the_threshold() {
    let out = offline(
        &provision(json!({"enabled": true}), 20),
        None,
        &args(16, 20, false),
        NOW,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&out).unwrap(),
        json!({"name": "p", "scale": true, "currentCount": 20, "desiredCount": 30,
               "reason": "utilization 80% reached the threshold 80%: scale from 20 to 30"})
    );
}

#[test]
fn active_never_scales() {
    let out = offline(
        &provision(json!({"enabled": true}), 20),
        None,
        &args(20, 20, true),
        NOW,
    )
    .unwrap();
    assert!(!out.scale);
    assert_eq!(out.desired_count, 20);
    assert!(out.reason.contains("in flight"), "{}", out.reason);
}

#[test]
fn disabled_never_scales() {
    let out = offline(&provision(json!({}), 20), None, &args(20, 20, false), NOW).unwrap();
    assert!(!out.scale);
    assert_eq!(
        out.reason,
        "auto-scaling is disabled (spec.autoScaling.enabled is not true)"
    );
}

#[test]
fn the_workshop_block_is_merged_under_the_provisions() {
    let workshop: Workshop = serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": {"autoScaling": {"enabled": true, "scaleFactor": 3.0, "maxProvisions": 50}}
    }))
    .unwrap();
    let out = offline(
        &provision(json!({"maxProvisions": 40}), 10),
        Some(&workshop),
        &args(9, 10, false),
        NOW,
    )
    .unwrap();
    assert_eq!((out.scale, out.desired_count), (true, 30));
    let out = offline(
        &provision(json!({"maxProvisions": 25}), 10),
        Some(&workshop),
        &args(9, 10, false),
        NOW,
    )
    .unwrap();
    assert_eq!((out.scale, out.desired_count), (true, 25));
}

#[test]
fn contradictory_flags_and_invalid_blocks_are_errors() {
    let p = provision(json!({"enabled": true}), 20);
    let e = offline(&p, None, &args(21, 20, false), NOW).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--assigned (21) must not be greater than --total (20)"
    );
    let bad = provision(json!({"threshold": 1.5}), 20);
    let e = offline(&bad, None, &args(1, 2, false), NOW).unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.yaml: spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5"
    );
    let negative = provision(json!({"enabled": true}), -3);
    let e = offline(&negative, None, &args(1, 2, false), NOW).unwrap_err();
    assert_eq!(e.to_string(), "p.yaml: spec.count: must be >= 0, got -3");
}

#[test]
fn text_output() {
    let out = PlanOutput {
        name: "p".into(),
        scale: true,
        current_count: 20,
        desired_count: 30,
        reason: "why".into(),
    };
    assert_eq!(
        text(&out),
        "WorkshopProvision p: scale count 20 -> 30\n  why\n"
    );
    let same = PlanOutput {
        scale: false,
        desired_count: 20,
        ..out
    };
    assert_eq!(
        text(&same),
        "WorkshopProvision p: no change (count 20)\n  why\n"
    );
}
