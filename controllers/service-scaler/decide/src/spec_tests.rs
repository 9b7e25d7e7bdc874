//! Tests of the merge and validation rules (`spec.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fixtures::*;
use crate::*;
use ebb_crds::service_scaler::{HpaDefaults, HpaOverride, ServiceScalerSpec};
use ebb_schedule::Calendars;
use ebb_testkit::utc;
use proptest::prelude::*;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------------
// Merge rules

#[test]
fn merge_keeps_defaults_for_fields_left_out_and_zero_removes_a_metric() {
    let defaults = settings(4, 8, Some(50), Some(75));
    let cases = [
        (json!({}), settings(4, 8, Some(50), Some(75))),
        (
            json!({"minReplicas": 3}),
            settings(3, 8, Some(50), Some(75)),
        ),
        (
            json!({"minReplicas": 3, "targetMemoryUtilization": 0}),
            settings(3, 8, Some(50), None),
        ),
        (
            json!({"targetCPUUtilization": 0, "targetMemoryUtilization": 0}),
            settings(4, 8, None, None),
        ),
        (
            json!({"maxReplicas": 20, "targetCPUUtilization": 90}),
            settings(4, 20, Some(90), Some(75)),
        ),
        (
            json!({"minReplicas": 8}),
            settings(8, 8, Some(50), Some(75)),
        ),
    ];
    for (overrides, expected) in cases {
        let o: HpaOverride = serde_json::from_value(overrides.clone()).unwrap();
        assert_eq!(merge(&defaults, &o), expected, "{overrides}");
    }
}

#[test]
fn defaults_fill_min_replicas_with_one_and_drop_zero_targets() {
    let s = schedule(json!({"hpa": {"maxReplicas": 5, "targetCPUUtilization": 0,
                                    "targetMemoryUtilization": 70}}));
    assert_eq!(*s.defaults(), settings(1, 5, None, Some(70)));
    assert_eq!(s.next_transition(utc("2026-01-01T00:00:00Z")), None);
}

#[test]
fn min_equal_max_is_a_fixed_size() {
    let s = schedule(json!({"hpa": {"minReplicas": 3, "maxReplicas": 3},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "00:00Z", "to": "06:00Z",
                           "replicaSpec": {"hpa": {"minReplicas": 1, "maxReplicas": 1}}}]}));
    assert_eq!(
        *s.effective_at(utc("2026-01-01T03:00:00Z")),
        settings(1, 1, None, None)
    );
    assert_eq!(
        *s.effective_at(utc("2026-01-01T12:00:00Z")),
        settings(3, 3, None, None)
    );
}

fn override_strategy() -> impl Strategy<Value = HpaOverride> {
    (
        proptest::option::of(1..50i32),
        proptest::option::of(1..50i32),
        proptest::option::of(0..120i32),
        proptest::option::of(0..120i32),
    )
        .prop_map(|(min, max, cpu, mem)| HpaOverride {
            min_replicas: min,
            max_replicas: max,
            target_cpu_utilization: cpu,
            target_memory_utilization: mem,
            metric_targets: Vec::new(),
        })
}

proptest! {
    #[test]
    fn merge_rule_each_field_is_the_override_else_the_default(
        dmin in 1..50i32, dmax in 1..50i32,
        dcpu in proptest::option::of(0..120i32), dmem in proptest::option::of(0..120i32),
        o in override_strategy(),
    ) {
        let defaults = HpaDefaults {
            min_replicas: Some(dmin), max_replicas: dmax,
            target_cpu_utilization: dcpu, target_memory_utilization: dmem,
            metric_targets: Vec::new(),
        };
        let spec = ServiceScalerSpec {
            hpa: defaults,
            time_range_spec: vec![serde_json::from_value(json!({
                "kind": "ZonedTime", "from": "00:00Z", "to": "12:00Z",
                "replicaSpec": {"hpa": o},
            })).unwrap()],
            scale_target_ref: None,
            ramp: None,
            lead_time: None,
            deletion_policy: None,
            range_selection: None,
        };
        let result = Schedule::from_spec(&spec, &Calendars::new());
        let nonzero = |t: Option<i32>| t.filter(|t| *t != 0);
        let expected = HpaSettings {
            min_replicas: o.min_replicas.unwrap_or(dmin),
            max_replicas: o.max_replicas.unwrap_or(dmax),
            target_cpu_utilization: match o.target_cpu_utilization {
                Some(t) => nonzero(Some(t)), None => nonzero(dcpu) },
            target_memory_utilization: match o.target_memory_utilization {
                Some(t) => nonzero(Some(t)), None => nonzero(dmem) },
            metric_targets: Vec::new(),
            hibernate: false,
        };
        if dmin > dmax {
            let errors = result.unwrap_err().0;
            prop_assert_eq!(errors[0].field.as_str(), "spec.hpa");
        } else if expected.min_replicas > expected.max_replicas {
            let errors = result.unwrap_err().0;
            prop_assert_eq!(errors.len(), 1);
            prop_assert_eq!(errors[0].field.as_str(), "spec.timeRangeSpec[0].replicaSpec.hpa");
            prop_assert!(errors[0].rule.contains("exceeds maxReplicas"));
        } else {
            let s = result.unwrap();
            prop_assert_eq!(s.effective_at(utc("2026-01-01T06:00:00Z")), &expected);
            prop_assert_eq!(s.effective_at(utc("2026-01-01T18:00:00Z")).min_replicas, dmin);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Validation: the field and the rule

#[test]
fn invalid_specs_name_the_field_and_the_rule() {
    let range = |r: Value| {
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 5}, "timeRangeSpec": [
        {"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z"}, r]})
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            range(json!({"kind": "ZonedTime", "from": "8am", "to": "09:00Z"})),
            "spec.timeRangeSpec[1].from",
            "invalid time of day \"8am\"",
        ),
        (
            range(json!({"kind": "ZonedTime", "from": "08:00Z", "to": "25:00Z"})),
            "spec.timeRangeSpec[1].to",
            "invalid time of day \"25:00Z\"",
        ),
        (
            range(
                json!({"kind": "ZonedDateTime", "from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}),
            ),
            "spec.timeRangeSpec[1].to",
            "ends before it starts",
        ),
        (
            range(
                json!({"kind": "ZonedDateTime", "from": "tomorrow", "to": "2026-01-01T00:00:00Z"}),
            ),
            "spec.timeRangeSpec[1].from",
            "invalid date-time",
        ),
        (
            range(
                json!({"kind": "LocalTime", "from": "08:00", "to": "09:00", "timeZone": "Mars/Olympus"}),
            ),
            "spec.timeRangeSpec[1].timeZone",
            "unknown time zone \"Mars/Olympus\"",
        ),
        (
            range(json!({"kind": "LocalTime", "from": "08:00", "to": "09:00", "days": []})),
            "spec.timeRangeSpec[1].days",
            "empty",
        ),
        (
            range(json!({"kind": "ZonedTime", "to": "09:00Z"})),
            "spec.timeRangeSpec[1].from",
            "to is given without from",
        ),
        (
            range(json!({"kind": "LocalTime", "from": "09:00"})),
            "spec.timeRangeSpec[1].to",
            "from is given without to",
        ),
        (
            range(json!({"kind": "Cron", "schedule": "0 8 * * *"})),
            "spec.timeRangeSpec[1].duration",
            "required for kind Cron",
        ),
        (
            range(json!({"kind": "Cron", "schedule": "0 8 * *", "duration": "1h"})),
            "spec.timeRangeSpec[1].schedule",
            "invalid cron expression",
        ),
        (
            range(json!({"kind": "Cron", "schedule": "0 8 * * *", "duration": "1d"})),
            "spec.timeRangeSpec[1].duration",
            "unknown unit",
        ),
        (
            range(
                json!({"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z", "timeZone": "UTC"}),
            ),
            "spec.timeRangeSpec[1].timeZone",
            "belongs to kinds LocalTime and Cron",
        ),
        (
            range(
                json!({"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z",
                      "replicaSpec": {"hpa": {"minReplicas": -1}}}),
            ),
            "spec.timeRangeSpec[1].replicaSpec.hpa.minReplicas",
            "at least 1",
        ),
        (
            range(
                json!({"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z",
                      "replicaSpec": {"hpa": {"minReplicas": 6}}}),
            ),
            "spec.timeRangeSpec[1].replicaSpec.hpa",
            "minReplicas 6 exceeds maxReplicas 5",
        ),
        (
            range(
                json!({"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z",
                      "replicaSpec": {"hpa": {"targetCPUUtilization": -5}}}),
            ),
            "spec.timeRangeSpec[1].replicaSpec.hpa.targetCPUUtilization",
            "must not be negative",
        ),
        (
            json!({"hpa": {"minReplicas": 6, "maxReplicas": 5}}),
            "spec.hpa",
            "minReplicas 6 exceeds maxReplicas 5",
        ),
        (
            json!({"hpa": {"maxReplicas": -3}}),
            "spec.hpa.maxReplicas",
            "at least 1",
        ),
        (
            json!({"hpa": {"maxReplicas": 3}, "ramp": "soon"}),
            "spec.ramp",
            "invalid duration",
        ),
        (
            json!({"hpa": {"maxReplicas": 3}, "scaleTargetRef": {"kind": "Deployment", "name": ""}}),
            "spec.scaleTargetRef.name",
            "must not be empty",
        ),
    ];
    for (value, field, rule) in cases {
        let errors = errors_of(value.clone());
        assert!(
            errors.iter().any(|(f, r)| f == field && r.contains(rule)),
            "{value}: expected {field}: ...{rule}... in {errors:?}"
        );
    }
}

proptest! {
    /// Nothing panics on any input: arbitrary texts in every free-form field are accepted or
    /// rejected with errors that each name a field under `spec.`.
    #[test]
    fn any_input_is_decided_or_rejected_without_panicking(
        kind in prop::sample::select(vec!["ZonedTime", "ZonedDateTime", "LocalTime", "Cron"]),
        from in proptest::option::of("[0-9:+TZ-]{0,12}|.{0,8}"),
        to in proptest::option::of("[0-9:+TZ-]{0,12}|.{0,8}"),
        schedule in proptest::option::of("[0-9*/,-]{1,4}( [0-9*/,-]{1,4}){0,5}|.{0,10}"),
        duration in proptest::option::of("[0-9hms]{0,6}"),
        tz in proptest::option::of(prop::sample::select(vec!["UTC", "Europe/Zurich", "Nowhere", ""])),
        min in -3..5i32, max in -3..5i32, ramp in proptest::option::of("[0-9hms]{0,4}"),
        at in 0i64..4_000_000_000,
    ) {
        let value = json!({
            "hpa": {"minReplicas": min, "maxReplicas": max},
            "ramp": ramp,
            "timeRangeSpec": [{"kind": kind, "from": from, "to": to, "schedule": schedule,
                               "duration": duration, "timeZone": tz}],
        });
        let now = Timestamp::from_second(at).ok().unwrap();
        let s = scaler(value);
        match Schedule::from_spec(&s.spec, &Calendars::new()) {
            Ok(schedule) => {
                let _ = schedule.transitions(now, PREVIEW_LEN);
                let _ = schedule.overlaps();
            }
            Err(SpecErrors(errors)) => {
                prop_assert!(!errors.is_empty());
                for e in errors {
                    prop_assert!(e.field.starts_with("spec."), "{}", e);
                }
            }
        }
        let _ = decide_scaling(&Observed { scaler: &s, hpa: None, scale: None, calendars: &Calendars::new(), dry_run: false, ledger: None }, now);
    }
}
