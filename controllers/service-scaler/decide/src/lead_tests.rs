//! Tests of the lead-time rule: table tests at exact instants and properties.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_schedule::Calendars;
use ebb_testkit::utc;
use proptest::prelude::*;
use serde_json::{Value, json};

fn schedule(value: Value) -> Schedule {
    Schedule::from_spec(&serde_json::from_value(value).unwrap(), &Calendars::new()).unwrap()
}

/// `(minReplicas, maxReplicas)` led at `t`, and the next lead step.
fn led(s: &Schedule, t: &str) -> ((i32, i32), Option<Timestamp>) {
    let lead = lead_at(s, utc(t));
    (
        (lead.settings.min_replicas, lead.settings.max_replicas),
        lead.next_step,
    )
}

/// Defaults 2..10; 08:00-12:00Z 12..16 (both increase at 08:00, both decrease at 12:00).
fn morning(lead_time: Option<&str>) -> Schedule {
    let mut spec = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 16, "targetCPUUtilization": 80}}}]
    });
    if let Some(l) = lead_time {
        spec["leadTime"] = json!(l);
    }
    schedule(spec)
}

#[test]
fn lead_steps_an_increase_up_in_six_equal_steps_before_the_boundary() {
    let s = morning(None);
    let d = "2026-05-04T";
    let at = |t: &str| Some(utc(&format!("{d}{t}Z")));
    // min 2 -> 12: 2 + ceil(10k/6); max 10 -> 16: 10 + k.
    let cases = [
        ("07:29:59", (2, 10), at("07:30:00")),
        // Exactly at b - leadTime: step 1.
        ("07:30:00", (4, 11), at("07:35:00")),
        ("07:34:59", (4, 11), at("07:35:00")),
        ("07:35:00", (6, 12), at("07:40:00")),
        ("07:40:00", (7, 13), at("07:45:00")),
        ("07:45:00", (9, 14), at("07:50:00")),
        ("07:50:00", (11, 15), at("07:55:00")),
        // Step 6 reaches the new values one step before the boundary.
        ("07:55:00", (12, 16), at("08:00:00")),
        // One second before b.
        ("07:59:59", (12, 16), at("08:00:00")),
        // At b: the scheduled values; the next change (12:00) is a decrease: no lead.
        ("08:00:00", (12, 16), None),
        ("11:45:00", (12, 16), None),
        ("11:59:59", (12, 16), None),
        (
            "12:00:00",
            (2, 10),
            at("07:30:00").map(|t| t + SignedDuration::from_hours(24)),
        ),
    ];
    for (t, values, next) in cases {
        assert_eq!(led(&s, &format!("{d}{t}Z")), (values, next), "at {t}");
    }
    // Targets are never led: cpu stays 60 until the boundary.
    let lead = lead_at(&s, utc("2026-05-04T07:59:59Z"));
    assert_eq!(lead.settings.target_cpu_utilization, Some(60));
}

#[test]
fn a_decrease_changes_at_the_boundary_without_lead() {
    // Defaults 12..16, nights 2..10: only decreases at 20:00, increases at 06:00.
    let s = schedule(json!({"hpa": {"minReplicas": 12, "maxReplicas": 16},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 2, "maxReplicas": 10}}}]}));
    // The first change is a decrease: no lead step before it (20:00 is a transition anyway).
    assert_eq!(led(&s, "2026-05-04T19:45:00Z"), ((12, 16), None));
    assert_eq!(led(&s, "2026-05-04T19:59:59Z").0, (12, 16));
    assert_eq!(led(&s, "2026-05-04T20:00:00Z").0, (2, 10));
    // The morning increase is led.
    assert_eq!(led(&s, "2026-05-05T05:59:59Z").0, (12, 16));
}

#[test]
fn min_is_capped_at_max_when_max_drops_before_min_rises() {
    // Defaults 2..6; 08:55-09:00Z max 3; from 09:00Z 8..10. At 08:50 min leads towards 8
    // (step 5: 7) while max is 6 and falls at 08:55 (no lead): min is capped at 6.
    let s = schedule(json!({"hpa": {"minReplicas": 2, "maxReplicas": 6},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:55Z", "to": "09:00Z",
             "replicaSpec": {"hpa": {"maxReplicas": 3}}},
            {"kind": "ZonedTime", "from": "09:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 8, "maxReplicas": 10}}}]}));
    assert_eq!(led(&s, "2026-05-04T08:45:00Z").0, (6, 6));
    assert_eq!(led(&s, "2026-05-04T08:50:00Z").0, (6, 6));
    // After 08:55 max (3) leads towards 10 at 09:00 as well: step 6.
    assert_eq!(led(&s, "2026-05-04T08:55:00Z").0, (8, 10));
}

#[test]
fn lead_time_zero_turns_it_off() {
    let s = morning(Some("0s"));
    assert_eq!(s.lead_time(), SignedDuration::ZERO);
    for t in ["07:30:00", "07:55:00", "07:59:59"] {
        assert_eq!(led(&s, &format!("2026-05-04T{t}Z")), ((2, 10), None), "{t}");
    }
    assert_eq!(led(&s, "2026-05-04T08:00:00Z"), ((12, 16), None));
}

#[test]
fn lead_time_parses_with_a_default_and_zero_means_off() {
    assert_eq!(
        parse_lead_time(None).unwrap(),
        SignedDuration::from_mins(30)
    );
    for zero in ["0s", "0m", "0h", "0h0m0s", "00s"] {
        assert_eq!(
            parse_lead_time(Some(zero)).unwrap(),
            SignedDuration::ZERO,
            "{zero}"
        );
    }
    assert_eq!(
        parse_lead_time(Some("7m")).unwrap(),
        SignedDuration::from_mins(7)
    );
    assert_eq!(
        parse_lead_time(Some("1h30m")).unwrap(),
        SignedDuration::from_mins(90)
    );
    for bad in ["", "s", "0", "0x", "-5m", "0s0m", "soon"] {
        assert!(parse_lead_time(Some(bad)).is_err(), "{bad}");
    }
    // An invalid leadTime is a spec error naming the field.
    let errors = Schedule::from_spec(
        &serde_json::from_value(json!({"hpa": {"maxReplicas": 3}, "leadTime": "soon"})).unwrap(),
        &Calendars::new(),
    )
    .unwrap_err();
    assert_eq!(errors.0[0].field, "spec.leadTime");
}

#[test]
fn a_lead_time_not_a_multiple_of_six_steps_every_sixth_of_it() {
    // 7m: steps every 70 s from 07:53:00.
    let s = morning(Some("7m"));
    let d = "2026-05-04T";
    let at = |t: &str| Some(utc(&format!("{d}{t}Z")));
    let cases = [
        ("07:52:59", (2, 10), at("07:53:00")),
        ("07:53:00", (4, 11), at("07:54:10")),
        ("07:54:09", (4, 11), at("07:54:10")),
        ("07:54:10", (6, 12), at("07:55:20")),
        ("07:55:20", (7, 13), at("07:56:30")),
        ("07:56:30", (9, 14), at("07:57:40")),
        ("07:57:40", (11, 15), at("07:58:50")),
        ("07:58:49", (11, 15), at("07:58:50")),
        ("07:58:50", (12, 16), at("08:00:00")),
        ("07:59:59", (12, 16), at("08:00:00")),
    ];
    for (t, values, next) in cases {
        assert_eq!(led(&s, &format!("{d}{t}Z")), (values, next), "at {t}");
    }
    // 100 s: a sixth is 16.667 s; each step starts at the first whole millisecond of it.
    let s = morning(Some("100s"));
    let start = utc("2026-05-04T07:58:20Z");
    assert_eq!(
        lead_at(&s, start).next_step,
        Some(start + SignedDuration::from_millis(16_667))
    );
    let step2 = start + SignedDuration::from_millis(16_667);
    assert_eq!(
        lead_at(&s, step2 - SignedDuration::from_millis(1))
            .settings
            .min_replicas,
        4
    );
    assert_eq!(lead_at(&s, step2).settings.min_replicas, 6);
}

#[test]
fn a_field_changing_only_at_the_boundary_after_next_is_led_towards_that_one() {
    // 07:40 changes only the cpu target; minReplicas rises at 08:00, two boundaries away.
    let s = schedule(
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "07:40Z", "to": "08:00Z",
             "replicaSpec": {"hpa": {"targetCPUUtilization": 80}}},
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 8}}}]}),
    );
    assert_eq!(
        s.next_transition(utc("2026-05-04T07:35:00Z")),
        Some(utc("2026-05-04T07:40:00Z"))
    );
    // k = floor(5 * 6 / 30) + 1 = 2: 2 + ceil(6 * 2 / 6) = 4; maxReplicas never changes.
    assert_eq!(
        led(&s, "2026-05-04T07:35:00Z"),
        ((4, 10), Some(utc("2026-05-04T07:40:00Z")))
    );
    assert_eq!(led(&s, "2026-05-04T07:45:00Z").0, (6, 10));
}

#[test]
fn the_pure_formula_at_exact_instants() {
    let b = utc("2026-05-04T08:00:00Z");
    let l = SignedDuration::from_mins(30);
    let up = Some(FieldChange { at: b, to: 9 });
    let m = |min: i64| b - SignedDuration::from_mins(min);
    // 3 -> 9: one replica per step.
    let values: Vec<i32> = [30, 25, 20, 15, 10, 5]
        .iter()
        .map(|x| led_value(3, up, l, m(*x)))
        .collect();
    assert_eq!(values, [4, 5, 6, 7, 8, 9]);
    assert_eq!(step_at(b, l, m(30)), Some(1));
    assert_eq!(step_at(b, l, b - SignedDuration::from_secs(1)), Some(6));
    assert_eq!(step_at(b, l, b), None);
    assert_eq!(step_at(b, l, m(31)), None);
    // Not an increase, no change, or no lead: the scheduled value.
    assert_eq!(led_value(9, Some(FieldChange { at: b, to: 3 }), l, m(1)), 9);
    assert_eq!(led_value(3, None, l, m(1)), 3);
    assert_eq!(led_value(3, up, SignedDuration::ZERO, m(1)), 3);
    assert_eq!(
        next_step_after(9, Some(FieldChange { at: b, to: 3 }), l, m(1)),
        None
    );
    assert_eq!(next_step_after(3, up, SignedDuration::ZERO, m(1)), None);
    assert_eq!(next_step_after(3, up, l, m(45)), Some(m(30)));
    assert_eq!(next_step_after(3, up, l, m(3)), Some(b));
}

fn zoned_spec(ranges: &[(u32, u32, i32, i32)], lead_time: &str) -> Value {
    let hhmm = |q: u32| format!("{:02}:{:02}", q / 4, (q % 4) * 15);
    let ranges: Vec<Value> = ranges
        .iter()
        .map(|(from, to, min, max)| {
            json!({"kind": "ZonedTime", "from": format!("{}Z", hhmm(*from)),
            "to": format!("{}Z", hhmm(*to)),
            "replicaSpec": {"hpa": {"minReplicas": min, "maxReplicas": max}}})
        })
        .collect();
    json!({"hpa": {"minReplicas": 2, "maxReplicas": 6}, "leadTime": lead_time,
           "timeRangeSpec": ranges})
}

proptest! {
    /// Capacity is never below the schedule and never above what comes next: each led field is
    /// at least its scheduled value at `t` and at most the larger of that and its value at its
    /// next change; minReplicas never exceeds maxReplicas; the last step reaches the new value
    /// before the boundary.
    #[test]
    fn led_values_lie_between_the_scheduled_and_the_next_value(
        ranges in proptest::collection::vec((0u32..96, 0u32..96, 1..6i32, 6..12i32), 0..4),
        lead_time in prop::sample::select(vec!["0s", "100s", "7m", "30m", "1h", "2h"]),
        minute in 0i64..(3 * 24 * 60), second in 0i64..60,
    ) {
        let s = schedule(zoned_spec(&ranges, lead_time));
        let t = utc("2026-05-04T00:00:00Z") + SignedDuration::from_mins(minute) + SignedDuration::from_secs(second);
        let scheduled = s.effective_at(t).clone();
        let coming = s.transitions(t, MAX_SCAN);
        let lead = lead_at(&s, t);
        let got = &lead.settings;
        prop_assert!(got.min_replicas <= got.max_replicas);
        for (field, value) in [
            ((|x: &HpaSettings| x.min_replicas) as fn(&HpaSettings) -> i32, got.min_replicas),
            (|x: &HpaSettings| x.max_replicas, got.max_replicas),
        ] {
            let v0 = field(&scheduled);
            let next = first_change(v0, &coming, field);
            prop_assert!(value >= v0, "{} below scheduled {}", value, v0);
            let ceiling = next.map_or(v0, |n| n.to.max(v0));
            prop_assert!(value <= ceiling, "{} above next {}", value, ceiling);
            if let Some(n) = next.filter(|n| n.to > v0 && s.lead_time() > SignedDuration::ZERO) {
                let sixth = s.lead_time() / 6;
                if n.at.duration_since(t) <= sixth && n.at > t {
                    // Within the last step: the new value (maxReplicas; minReplicas may be capped).
                    prop_assert!(field(&lead.settings) == n.to || value == got.max_replicas);
                }
            }
        }
        prop_assert_eq!(&got.target_cpu_utilization, &scheduled.target_cpu_utilization);
        if let Some(step) = lead.next_step {
            prop_assert!(step > t);
        }
    }
}

/// A pass sweeps the coming transitions once and hands them to the lead: the same lead as the
/// lead's own sweep, at every instant of a morning's steps (a preview-length sweep would miss
/// none of them here, but a longer one is what the pass hands over).
#[test]
fn the_lead_from_the_passes_sweep_is_the_leads_own() {
    let s = morning(None);
    for t in [
        "2026-03-10T07:00:00Z",
        "2026-03-10T07:40:00Z",
        "2026-03-10T07:59:00Z",
        "2026-03-10T08:00:00Z",
    ] {
        let t = utc(t);
        let coming = s.transitions(t, MAX_SCAN);
        assert_eq!(lead_with(&s, &coming, t), lead_at(&s, t), "at {t}");
    }
}
