//! Tests of every rule in `decide`: table tests and properties named for the rule they guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_crds::service_scaler::{HpaDefaults, HpaOverride, ServiceScalerSpec};
use ebb_runtime::{
    EventKind, PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, find_condition, from_k8s_time,
};
use ebb_testkit::utc;
use jiff::SignedDuration;
use k8s_openapi::api::autoscaling::v2::MetricSpec;
use proptest::prelude::*;
use serde_json::{Value, json};

fn scaler(spec: Value) -> ServiceScaler {
    serde_json::from_value(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-1", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

fn spec(value: Value) -> ServiceScalerSpec {
    serde_json::from_value(value).unwrap()
}

fn udaan() -> ServiceScaler {
    serde_norway::from_str(include_str!(
        "../../../../examples/service-scaler-udaan.yaml"
    ))
    .unwrap()
}

fn schedule(value: Value) -> Schedule {
    Schedule::from_spec(&spec(value)).unwrap()
}

fn settings(min: i32, max: i32, cpu: Option<i32>, memory: Option<i32>) -> HpaSettings {
    HpaSettings {
        min_replicas: min,
        max_replicas: max,
        target_cpu_utilization: cpu,
        target_memory_utilization: memory,
        metric_targets: Vec::new(),
    }
}

fn hpa_with(
    fields: &OwnedFields,
    owner_uid: Option<&str>,
    annotations: Value,
) -> HorizontalPodAutoscaler {
    let owners = owner_uid.map_or_else(Vec::new, |uid| {
        vec![
            json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler", "name": "web",
                   "uid": uid, "controller": true, "blockOwnerDeletion": true}),
        ]
    });
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "ownerReferences": owners,
                     "annotations": annotations},
        "spec": {
            "minReplicas": fields.min_replicas, "maxReplicas": fields.max_replicas,
            "metrics": fields.metrics,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        },
    }))
    .unwrap()
}

fn hpa(s: &HpaSettings, owned: bool) -> HorizontalPodAutoscaler {
    hpa_with(
        &OwnedFields::from_settings(s),
        owned.then_some("uid-1"),
        json!({}),
    )
}

fn errors_of(value: Value) -> Vec<(String, String)> {
    match Schedule::from_spec(&spec(value)) {
        Ok(_) => Vec::new(),
        Err(SpecErrors(errors)) => errors.into_iter().map(|e| (e.field, e.rule)).collect(),
    }
}

/// The ZonedTime spec used by most tests: defaults 2..10 cpu 60; range 0 08:00-12:00Z min 5.
fn office() -> Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5}}}
        ]
    })
}

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
        let result = Schedule::from_spec(&spec);
        let nonzero = |t: Option<i32>| t.filter(|t| *t != 0);
        let expected = HpaSettings {
            min_replicas: o.min_replicas.unwrap_or(dmin),
            max_replicas: o.max_replicas.unwrap_or(dmax),
            target_cpu_utilization: match o.target_cpu_utilization {
                Some(t) => nonzero(Some(t)), None => nonzero(dcpu) },
            target_memory_utilization: match o.target_memory_utilization {
                Some(t) => nonzero(Some(t)), None => nonzero(dmem) },
            metric_targets: Vec::new(),
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
        match Schedule::from_spec(&s.spec) {
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
        let _ = decide(&Observed { scaler: &s, hpa: None, dry_run: false }, now);
    }
}

// ------------------------------------------------------------------------------------------------
// The seed's example (udaan's README), reproduced

#[test]
fn udaan_example_behaves_as_its_readme_describes() {
    let s = Schedule::from_spec(&udaan().spec).unwrap();
    let ist = |t: &str| utc(&format!("2026-03-27T{t}+05:30"));
    let defaults = settings(4, 8, Some(50), Some(75));
    let evening = settings(3, 8, Some(50), None);
    let night = settings(2, 8, Some(50), None);
    let cases = [
        ("12:00:00", None, &defaults),
        ("15:59:59.999", None, &defaults),
        ("16:00:00", Some(0), &evening),
        ("17:00:00", Some(0), &evening),
        ("23:59:59", Some(0), &evening),
        ("00:00:00", Some(1), &night),
        ("03:00:00", Some(1), &night),
        ("07:59:59", Some(1), &night),
        ("08:00:00", None, &defaults),
    ];
    for (t, range, expected) in cases {
        assert_eq!(s.matched_at(ist(t)), range, "{t}");
        assert_eq!(s.effective_at(ist(t)), expected, "{t}");
    }
    // Boundaries exactly at 16:00, 00:00 and 08:00 IST.
    let next: Vec<_> = s
        .transitions(ist("12:00:00"), 3)
        .into_iter()
        .map(|t| (t.at, t.matched_range))
        .collect();
    assert_eq!(
        next,
        [
            (ist("16:00:00"), Some(0)),
            (utc("2026-03-28T00:00:00+05:30"), Some(1)),
            (utc("2026-03-28T08:00:00+05:30"), None),
        ]
    );
    assert_eq!(
        s.next_transition(ist("15:59:59.999")),
        Some(ist("16:00:00"))
    );
    assert_eq!(
        s.next_transition(ist("16:00:00")),
        Some(utc("2026-03-28T00:00:00+05:30"))
    );
    assert!(s.overlaps().is_empty());
}

// ------------------------------------------------------------------------------------------------
// Transitions are changes of the effective settings

#[test]
fn back_to_back_ranges_with_identical_settings_are_no_transition() {
    let s = schedule(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z", "replicaSpec": {"hpa": {"minReplicas": 5}}},
            {"kind": "ZonedTime", "from": "12:00Z", "to": "16:00Z", "replicaSpec": {"hpa": {"minReplicas": 5}}},
        ]
    }));
    let t: Vec<_> = s
        .transitions(utc("2026-05-04T06:00:00Z"), 3)
        .into_iter()
        .map(|t| (t.at, t.matched_range))
        .collect();
    assert_eq!(
        t,
        [
            (utc("2026-05-04T08:00:00Z"), Some(0)),
            (utc("2026-05-04T16:00:00Z"), None),
            (utc("2026-05-05T08:00:00Z"), Some(0)),
        ]
    );
    // Inside the first range: the next change is the end of the second.
    assert_eq!(
        s.next_transition(utc("2026-05-04T10:00:00Z")),
        Some(utc("2026-05-04T16:00:00Z"))
    );
}

#[test]
fn ranges_that_change_nothing_never_transition() {
    let s = schedule(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "LocalTime", "from": "08:00", "to": "12:00", "timeZone": "Europe/Zurich",
             "replicaSpec": {"hpa": {"minReplicas": 2}}},
            {"kind": "Cron", "schedule": "0 1 * * *", "duration": "1h",
             "replicaSpec": {"hpa": {"maxReplicas": 10, "targetCPUUtilization": 0}}},
        ]
    }));
    let now = utc("2026-05-04T09:00:00Z");
    assert_eq!(s.matched_at(now), Some(0));
    assert_eq!(s.next_transition(now), None);
    assert!(s.transitions(now, PREVIEW_LEN).is_empty());
}

#[test]
fn a_past_one_off_range_never_transitions_again_and_a_far_one_is_found() {
    let past = schedule(json!({"hpa": {"maxReplicas": 4}, "timeRangeSpec": [
        {"kind": "ZonedDateTime", "from": "2020-01-01T00:00:00Z", "to": "2020-01-02T00:00:00Z",
         "replicaSpec": {"hpa": {"minReplicas": 3}}}]}));
    assert_eq!(past.next_transition(utc("2026-01-01T00:00:00Z")), None);
    let far = schedule(json!({"hpa": {"maxReplicas": 4}, "timeRangeSpec": [
        {"kind": "ZonedDateTime", "from": "2029-06-01T08:00:00+02:00", "to": "2029-06-01T17:00:00+02:00",
         "replicaSpec": {"hpa": {"minReplicas": 3}}}]}));
    let t = far.transitions(utc("2026-01-01T00:00:00Z"), 5);
    assert_eq!(
        t.iter().map(|t| t.at).collect::<Vec<_>>(),
        [utc("2029-06-01T06:00:00Z"), utc("2029-06-01T15:00:00Z")]
    );
}

#[test]
fn overlapping_ranges_are_named_and_the_first_wins() {
    let s = schedule(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z", "replicaSpec": {"hpa": {"minReplicas": 5}}},
            {"kind": "ZonedTime", "from": "20:00Z", "to": "22:00Z", "replicaSpec": {"hpa": {"minReplicas": 1}}},
            {"kind": "ZonedTime", "from": "11:00Z", "to": "13:00Z", "replicaSpec": {"hpa": {"minReplicas": 7}}},
        ]
    }));
    assert_eq!(s.overlaps(), [(0, 2)]);
    assert_eq!(
        overlap_message(&s.overlaps()).unwrap(),
        "timeRangeSpec[0] and timeRangeSpec[2] overlap; the first in list order wins"
    );
    assert_eq!(s.matched_at(utc("2026-01-01T11:30:00Z")), Some(0));
    assert_eq!(s.effective_at(utc("2026-01-01T12:30:00Z")).min_replicas, 7);
    assert_eq!(
        s.next_transition(utc("2026-01-01T11:30:00Z")),
        Some(utc("2026-01-01T12:00:00Z"))
    );
}

fn zoned_ranges() -> impl Strategy<Value = Vec<(u32, u32, i32)>> {
    proptest::collection::vec((0u32..96, 0u32..96, 1..4i32), 0..4)
}

fn zoned_spec(ranges: &[(u32, u32, i32)]) -> Value {
    let hhmm = |q: u32| format!("{:02}:{:02}", q / 4, (q % 4) * 15);
    let ranges: Vec<Value> = ranges
        .iter()
        .map(|(from, to, min)| {
            json!({"kind": "ZonedTime", "from": format!("{}+01:00", hhmm(*from)),
            "to": format!("{}+01:00", hhmm(*to)), "replicaSpec": {"hpa": {"minReplicas": min}}})
        })
        .collect();
    json!({"hpa": {"minReplicas": 2, "maxReplicas": 4}, "timeRangeSpec": ranges})
}

proptest! {
    /// The next transition is the first instant the effective settings differ: nothing changes
    /// before it (checked every 15 minutes and just before it), and they differ at it.
    #[test]
    fn next_transition_is_the_first_change_of_the_effective_settings(
        ranges in zoned_ranges(), start in 0i64..(366 * 96), offset_s in 0i64..900,
    ) {
        let s = schedule(zoned_spec(&ranges));
        let now = utc("2026-01-01T00:00:00Z") + SignedDuration::from_mins(start * 15) + SignedDuration::from_secs(offset_s);
        let current = s.effective_at(now).clone();
        match s.next_transition(now) {
            None => {
                for q in 0..(2 * 96) {
                    prop_assert_eq!(s.effective_at(now + SignedDuration::from_mins(15 * q)), &current);
                }
            }
            Some(t) => {
                prop_assert!(t > now && t <= now + SignedDuration::from_hours(24));
                prop_assert_ne!(s.effective_at(t), &current);
                prop_assert_eq!(s.effective_at(t - SignedDuration::from_millis(1)), &current);
                let mut probe = now;
                while probe < t {
                    prop_assert_eq!(s.effective_at(probe), &current);
                    probe += SignedDuration::from_mins(15);
                }
                // The preview agrees and alternates settings.
                let preview = s.transitions(now, PREVIEW_LEN);
                prop_assert_eq!(preview[0].at, t);
                for pair in preview.windows(2) {
                    prop_assert!(pair[0].at < pair[1].at);
                    prop_assert_ne!(&pair[0].settings, &pair[1].settings);
                }
            }
        }
    }

    /// Midnight wrap: a ZonedTime range whose `to` is at or before `from` is open from `from`
    /// until `to` the next day (`to == from`: all day); every range is half-open.
    #[test]
    fn zoned_time_wraps_past_midnight_and_is_half_open(
        from in 0u32..96, to in 0u32..96, t in 0i64..(7 * 24 * 60),
    ) {
        let s = schedule(zoned_spec(&[(from, to, 3)]));
        // Wall clock at +01:00.
        let instant = utc("2026-03-02T00:00:00+01:00") + SignedDuration::from_mins(t);
        let minute_of_day = u32::try_from(t.rem_euclid(24 * 60)).unwrap();
        let (f, e) = (from * 15, to * 15);
        let open = if f < e {
            f <= minute_of_day && minute_of_day < e
        } else {
            minute_of_day >= f || minute_of_day < e
        };
        prop_assert_eq!(s.matched_at(instant).is_some(), open, "{}..{} at minute {}", f, e, minute_of_day);
    }
}

// ------------------------------------------------------------------------------------------------
// DST in real zones, through the controller's schedule

fn local_range(from: &str, to: &str, tz: &str) -> Schedule {
    schedule(
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 10}, "timeRangeSpec": [
        {"kind": "LocalTime", "from": from, "to": to, "timeZone": tz,
         "replicaSpec": {"hpa": {"minReplicas": 6}}}]}),
    )
}

fn opens_and_closes(s: &Schedule, from: &str) -> (Timestamp, Timestamp) {
    let t = s.transitions(utc(from), 2);
    assert_eq!(t[0].matched_range, Some(0), "{t:?}");
    assert_eq!(t[1].matched_range, None, "{t:?}");
    (t[0].at, t[1].at)
}

#[test]
fn dst_zurich_gap_starts_at_the_end_of_the_gap_and_fold_means_the_first_occurrence() {
    // 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z. 02:30 does not exist: it means 03:00.
    let s = local_range("02:30", "03:30", "Europe/Zurich");
    assert_eq!(
        opens_and_closes(&s, "2026-03-28T12:00:00Z"),
        (utc("2026-03-29T01:00:00Z"), utc("2026-03-29T01:30:00Z"))
    );
    // 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z. 02:30 happens twice: the first (CEST).
    assert_eq!(
        opens_and_closes(&s, "2026-10-24T12:00:00Z"),
        (utc("2026-10-25T00:30:00Z"), utc("2026-10-25T02:30:00Z"))
    );
    // An overnight range follows the wall clock: 7 real hours across spring forward, 9 across
    // fall back.
    let nights = local_range("22:00", "06:00", "Europe/Zurich");
    let (open, close) = opens_and_closes(&nights, "2026-03-28T12:00:00Z");
    assert_eq!(
        (open, close.duration_since(open)),
        (utc("2026-03-28T21:00:00Z"), SignedDuration::from_hours(7))
    );
    let (open, close) = opens_and_closes(&nights, "2026-10-24T12:00:00Z");
    assert_eq!(
        (open, close.duration_since(open)),
        (utc("2026-10-24T20:00:00Z"), SignedDuration::from_hours(9))
    );
}

#[test]
fn dst_new_york_gap_and_fold() {
    // 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z.
    let s = local_range("02:30", "03:30", "America/New_York");
    assert_eq!(
        opens_and_closes(&s, "2026-03-07T12:00:00Z"),
        (utc("2026-03-08T07:00:00Z"), utc("2026-03-08T07:30:00Z"))
    );
    // 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z; 01:30 means 01:30 EDT (05:30Z).
    let s = local_range("01:30", "02:30", "America/New_York");
    assert_eq!(
        opens_and_closes(&s, "2026-10-31T12:00:00Z"),
        (utc("2026-11-01T05:30:00Z"), utc("2026-11-01T07:30:00Z"))
    );
    // A 09:00-17:00 office day keeps its wall-clock hours on both sides of the change.
    let office = local_range("09:00", "17:00", "America/New_York");
    assert_eq!(
        opens_and_closes(&office, "2026-03-07T00:00:00Z"),
        (utc("2026-03-07T14:00:00Z"), utc("2026-03-07T22:00:00Z"))
    );
    assert_eq!(
        opens_and_closes(&office, "2026-03-08T22:00:00Z"),
        (utc("2026-03-09T13:00:00Z"), utc("2026-03-09T21:00:00Z"))
    );
}

#[test]
fn dst_cron_fires_once_in_the_fold_and_at_the_end_of_the_gap() {
    let s = schedule(
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 10}, "timeRangeSpec": [
        {"kind": "Cron", "schedule": "30 2 * * *", "duration": "1h", "timeZone": "Europe/Zurich",
         "replicaSpec": {"hpa": {"minReplicas": 6}}}]}),
    );
    assert_eq!(
        opens_and_closes(&s, "2026-03-28T12:00:00Z"),
        (utc("2026-03-29T01:00:00Z"), utc("2026-03-29T02:00:00Z"))
    );
    let t: Vec<_> = s
        .transitions(utc("2026-10-24T12:00:00Z"), 4)
        .into_iter()
        .map(|t| t.at)
        .collect();
    // Once on the 25th (the first 02:30, CEST), then 02:30 CET on the 26th.
    assert_eq!(
        t,
        [
            utc("2026-10-25T00:30:00Z"),
            utc("2026-10-25T01:30:00Z"),
            utc("2026-10-26T01:30:00Z"),
            utc("2026-10-26T02:30:00Z"),
        ]
    );
}

#[test]
fn local_time_days_pick_the_day_the_range_opens() {
    let s = schedule(
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 10}, "timeRangeSpec": [
        {"kind": "LocalTime", "from": "22:00", "to": "06:00", "timeZone": "Europe/Zurich",
         "days": ["Fri"], "replicaSpec": {"hpa": {"minReplicas": 1}}}]}),
    );
    // Friday 2026-06-05 22:00 CEST into Saturday.
    assert_eq!(
        opens_and_closes(&s, "2026-06-01T00:00:00Z"),
        (utc("2026-06-05T20:00:00Z"), utc("2026-06-06T04:00:00Z"))
    );
}

// ------------------------------------------------------------------------------------------------
// Ramp

#[test]
fn ramp_steps_one_replica_at_a_time_from_the_boundary() {
    let start = utc("2026-12-03T07:30:00Z");
    let up = Ramp {
        from: 2,
        to: 12,
        start,
        duration: SignedDuration::from_mins(10),
    };
    let at = |m: i64, s: i64| start + SignedDuration::from_mins(m) + SignedDuration::from_secs(s);
    assert_eq!(up.value_at(at(0, 0) - SignedDuration::from_secs(1)), 2);
    assert_eq!(up.value_at(at(0, 0)), 3);
    assert_eq!(up.value_at(at(0, 59)), 3);
    assert_eq!(up.value_at(at(1, 0)), 4);
    assert_eq!(up.value_at(at(8, 59)), 11);
    assert_eq!(up.value_at(at(9, 0)), 12);
    assert!(up.is_complete(at(9, 0)));
    assert_eq!(up.next_step_after(at(0, 0)), Some(at(1, 0)));
    assert_eq!(up.next_step_after(at(8, 59)), Some(at(9, 0)));
    assert_eq!(up.next_step_after(at(9, 0)), None);

    let down = Ramp {
        from: 12,
        to: 1,
        start,
        duration: SignedDuration::from_mins(11),
    };
    assert_eq!(down.value_at(at(0, 0)), 11);
    assert_eq!(down.value_at(at(5, 30)), 6);
    assert_eq!(down.value_at(at(11, 0)), 1);
}

proptest! {
    /// A ramp moves monotonically from `from` to `to`, one replica per step, and every step is
    /// announced by `next_step_after`.
    #[test]
    fn ramp_is_monotone_in_unit_steps_and_ends_within_its_duration(
        from in 1..40i32, to in 1..40i32, minutes in 1i64..120, probes in proptest::collection::vec(0i64..8_000_000, 1..20),
    ) {
        let start = utc("2026-01-01T00:00:00Z");
        let ramp = Ramp { from, to, start, duration: SignedDuration::from_mins(minutes) };
        prop_assert_eq!(ramp.value_at(start + SignedDuration::from_mins(minutes)), to);
        let mut probes = probes;
        probes.sort_unstable();
        let mut last = from;
        for ms in probes {
            let t = start + SignedDuration::from_millis(ms);
            let v = ramp.value_at(t);
            prop_assert!(v >= from.min(to) && v <= from.max(to));
            let monotone = if to >= from { v >= last } else { v <= last };
            prop_assert!(monotone, "{} after {}", v, last);
            last = v;
            if let Some(next) = ramp.next_step_after(t) {
                prop_assert!(next > t && next < start + SignedDuration::from_mins(minutes));
                prop_assert_eq!(ramp.value_at(next - SignedDuration::from_millis(1)), v);
                prop_assert_eq!((ramp.value_at(next) - v).abs(), 1);
            } else {
                prop_assert_eq!(v, to);
            }
        }
    }
}

#[test]
fn resolve_ramp_starts_at_the_boundary_and_restarts_from_the_current_value() {
    let d = SignedDuration::from_mins(10);
    let b = utc("2026-12-03T07:30:00Z");
    let now = b + SignedDuration::from_mins(3);
    // A fresh boundary lowering minReplicas: from the HPA's value.
    let r = resolve_ramp(d, None, Some(12), 2, Some(b), now).unwrap();
    assert_eq!((r.from, r.to, r.start), (12, 2, b));
    // No boundary within the ramp: at once.
    assert_eq!(resolve_ramp(d, None, Some(12), 2, None, now), None);
    // No HPA yet: at once.
    assert_eq!(resolve_ramp(d, None, None, 2, Some(b), now), None);
    // Continue the stored ramp.
    assert_eq!(resolve_ramp(d, Some(r), Some(9), 2, Some(b), now), Some(r));
    // Target moved lower mid-ramp (at b2): a new ramp from where the old one was then.
    let b2 = b + SignedDuration::from_mins(4);
    let r2 = resolve_ramp(d, Some(r), Some(7), 1, Some(b2), b2).unwrap();
    assert_eq!((r2.from, r2.to, r2.start), (r.value_at(b2), 1, b2));
    // Target moved above the value reached: an increase, never ramped.
    assert_eq!(resolve_ramp(d, Some(r), Some(7), 11, Some(b2), b2), None);
    // Done: nothing.
    assert_eq!(resolve_ramp(d, Some(r), Some(2), 2, Some(b), b + d), None);
}

#[test]
fn ramp_spreads_decreases_only() {
    let d = SignedDuration::from_mins(10);
    let b = utc("2026-12-03T07:30:00Z");
    // An increase spread after its boundary would leave capacity below the schedule.
    assert_eq!(resolve_ramp(d, None, Some(2), 12, Some(b), b), None);
    assert_eq!(
        resolve_ramp(
            d,
            None,
            Some(2),
            12,
            Some(b),
            b + SignedDuration::from_mins(3)
        ),
        None
    );
    assert!(resolve_ramp(d, None, Some(12), 2, Some(b), b).is_some());
}

// ------------------------------------------------------------------------------------------------
// Decisions

fn decide_at(s: &ServiceScaler, hpa: Option<&HorizontalPodAutoscaler>, now: &str) -> Decision {
    decide(
        &Observed {
            scaler: s,
            hpa,
            dry_run: false,
        },
        utc(now),
    )
}

/// The scaler with the status a decision wrote.
fn with_status(s: &ServiceScaler, d: &Decision) -> ServiceScaler {
    let mut next = s.clone();
    if let Some(status) = &d.status {
        next.status = Some(status.clone());
    }
    next
}

fn condition_of<'a>(status: &'a ServiceScalerStatus, type_: &str) -> (&'a str, &'a str, &'a str) {
    let c = find_condition(&status.conditions, type_).unwrap();
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

#[test]
fn missing_hpa_is_created_owned_with_exactly_the_effective_settings() {
    let s = scaler(office());
    let d = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let HpaPlan::Create(hpa) = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(
        serde_json::to_value(hpa.as_ref()).unwrap(),
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "web", "namespace": "shop",
                "labels": {"app.kubernetes.io/managed-by": "ebb-service-scaler"},
                "ownerReferences": [{"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
                    "name": "web", "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {
                "minReplicas": 5, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}],
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            },
        })
    );
    assert_eq!(d.finalizer, FinalizerPlan::Keep);
    assert_eq!(d.state, ManagedState::Active);
    assert_eq!(d.hpa_notice.as_ref().unwrap().reason, "Created");
    // Requeue exactly at the boundary, 12:00Z.
    assert_eq!(
        d.requeue_after,
        Some(Duration::from_secs(3 * 3600).min(MAX_REQUEUE))
    );
    let status = d.status.unwrap();
    assert_eq!(
        status.last_known_config,
        Some(settings(5, 10, Some(60), None))
    );
    assert!(status.time_range_match);
    assert_eq!(status.matched_range, Some(0));
    assert_eq!(status.last_observed_generation, Some(1));
    assert_eq!(status.next_transitions.len(), PREVIEW_LEN);
    assert_eq!(
        from_k8s_time(&status.next_transitions[0].at),
        utc("2026-05-04T12:00:00Z")
    );
    assert_eq!(status.next_transitions[0].matched_range, None);
    assert_eq!(
        from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T09:00:00Z")
    );
    assert_eq!(condition_of(&status, CONDITION_READY).0, "True");
    assert_eq!(condition_of(&status, CONDITION_SPEC_VALID).0, "True");
    assert_eq!(condition_of(&status, CONDITION_RANGES_OVERLAP).0, "False");
    assert_eq!(condition_of(&status, PAUSED).0, "False");
    assert_eq!(condition_of(&status, CONDITION_UNMANAGED).0, "False");
}

#[test]
fn scale_target_ref_from_the_spec_is_used_on_create() {
    let mut value = office();
    value["scaleTargetRef"] = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"});
    let d = decide_at(&scaler(value), None, "2026-05-04T09:00:00Z");
    let HpaPlan::Create(hpa) = d.hpa else {
        panic!()
    };
    let target = hpa.spec.unwrap().scale_target_ref;
    assert_eq!(
        (target.kind.as_str(), target.name.as_str()),
        ("StatefulSet", "db")
    );
}

#[test]
fn second_decision_at_the_same_instant_changes_nothing() {
    let s = scaler(office());
    let now = "2026-05-04T09:00:00Z";
    let d = decide_at(&s, None, now);
    let s = with_status(&s, &d);
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let again = decide_at(&s, Some(&h), now);
    assert_eq!(again.hpa, HpaPlan::Leave);
    assert_eq!(again.status, None);
    assert_eq!(again.finalizer, FinalizerPlan::Keep);
    assert!(again.notices.is_empty() && again.hpa_notice.is_none());
    // Later, inside the same range: still nothing.
    let later = decide_at(&s, Some(&h), "2026-05-04T11:59:59Z");
    assert_eq!((later.hpa, later.status), (HpaPlan::Leave, None));
    assert_eq!(later.requeue_after, Some(Duration::from_secs(1)));
}

#[test]
fn boundary_applies_only_the_owned_fields_and_moves_last_updated_time() {
    let s = scaler(office());
    let inside = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &inside);
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    let HpaPlan::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(*reason, WriteReason::Transition);
    assert_eq!(
        fields.apply_patch("web"),
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web"},
               "spec": {"minReplicas": 2, "maxReplicas": 10, "metrics": [{"type": "Resource",
                   "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}})
    );
    assert_eq!(
        d.hpa_notice.as_ref().unwrap().note,
        "HPA shop/web: minReplicas 5 -> 2 (defaults in force)"
    );
    let status = d.status.unwrap();
    assert_eq!(status.matched_range, None);
    assert!(!status.time_range_match);
    assert_eq!(
        from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T12:00:00Z")
    );
    // Next boundary tomorrow 08:00Z, capped by the safety net.
    assert_eq!(d.requeue_after, Some(MAX_REQUEUE));
}

#[test]
fn drift_of_an_owned_field_is_corrected_and_other_fields_do_not_matter() {
    let s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let mut h = hpa(&settings(7, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T09:30:00Z");
    assert!(
        matches!(
            d.hpa,
            HpaPlan::Apply {
                reason: WriteReason::Drift,
                ..
            }
        ),
        "{:?}",
        d.hpa
    );
    // Fields ebb does not own (behavior, scaleTargetRef, labels) are not compared.
    h.spec.as_mut().unwrap().min_replicas = Some(5);
    h.spec.as_mut().unwrap().scale_target_ref.name = "other".into();
    h.spec.as_mut().unwrap().behavior = Some(Default::default());
    h.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T09:30:00Z").hpa,
        HpaPlan::Leave
    );
}

#[test]
fn no_metrics_matches_the_api_servers_default_cpu_metric() {
    let fields = OwnedFields::from_settings(&settings(2, 4, None, None));
    assert!(fields.metrics.is_empty());
    let defaulted = hpa(&settings(2, 4, Some(80), None), true);
    assert!(fields.matches(defaulted.spec.as_ref().unwrap()));
    let other = hpa(&settings(2, 4, Some(70), None), true);
    assert!(!fields.matches(other.spec.as_ref().unwrap()));
    // A metric of another shape is replaced.
    let mut custom = hpa(&settings(2, 4, Some(60), None), true);
    custom.spec.as_mut().unwrap().metrics.as_mut().unwrap()[0].type_ = "Pods".into();
    let want = OwnedFields::from_settings(&settings(2, 4, Some(60), None));
    assert!(!want.matches(custom.spec.as_ref().unwrap()));
    // Order of cpu and memory does not matter.
    let both = OwnedFields::from_settings(&settings(2, 4, Some(60), Some(70)));
    let mut reversed = hpa(&settings(2, 4, Some(60), Some(70)), true);
    reversed
        .spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .reverse();
    assert!(both.matches(reversed.spec.as_ref().unwrap()));
}

#[test]
fn kill_switch_leaves_the_hpa_and_says_so() {
    let s = scaler(office());
    let h = hpa_with(
        &OwnedFields::from_settings(&settings(9, 9, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.state, ManagedState::Unmanaged);
    assert_eq!(d.finalizer, FinalizerPlan::Keep);
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, CONDITION_UNMANAGED).0, "True");
    assert!(
        condition_of(&status, CONDITION_UNMANAGED)
            .2
            .contains("service-scaler.kubernetes.io/managed: \"false\"")
    );
    assert_eq!(condition_of(&status, CONDITION_READY).1, "Unmanaged");
    assert_eq!(status.last_known_config, None);
    // Only that annotation counts: "true" or another annotation manages as usual.
    for annotations in [
        json!({MANAGED_ANNOTATION: "true"}),
        json!({"other/managed": "false"}),
    ] {
        let h = hpa_with(
            &OwnedFields::from_settings(&settings(9, 9, None, None)),
            Some("uid-1"),
            annotations,
        );
        assert!(matches!(
            decide_at(&s, Some(&h), "2026-05-04T09:00:00Z").hpa,
            HpaPlan::Apply { .. }
        ));
    }
}

#[test]
fn pause_writes_only_the_paused_condition_and_requeues_at_its_end() {
    let mut s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    s = with_status(&s, &first);
    let before = s.status.clone().unwrap();
    s.metadata.annotations = Some(
        [(
            PAUSED_UNTIL_ANNOTATION.to_owned(),
            "2026-05-04T12:30:00Z".to_owned(),
        )]
        .into(),
    );
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1800)));
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, PAUSED).0, "True");
    let mut without_paused = status.clone();
    without_paused.conditions.retain(|c| c.type_ != PAUSED);
    let mut before_without = before.clone();
    before_without.conditions.retain(|c| c.type_ != PAUSED);
    without_paused.last_updated_time = before.last_updated_time.clone();
    assert_eq!(without_paused, before_without);
    // Paused indefinitely: wait for a change.
    s.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), "true".to_owned())].into());
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T12:00:00Z").requeue_after,
        None
    );
}

/// An HPA at the defaults (2..10 cpu 60, so 09:00 inside the office range wants min 5), adopted,
/// carrying `annotations`.
fn paused_hpa(annotations: Value) -> HorizontalPodAutoscaler {
    hpa_with(
        &OwnedFields::from_settings(&settings(2, 10, Some(60), None)),
        None,
        annotations,
    )
}

#[test]
fn hpa_paused_by_annotation_is_left_alone_until_the_annotation_goes() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.finalizer, FinalizerPlan::Keep);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.hpa_notice, None);
    // No end: only a change (the HPA watch) brings it back.
    assert_eq!(d.requeue_after, None);
    let status = d.status.clone().unwrap();
    assert_eq!(
        condition_of(&status, PAUSED),
        (
            "True",
            "Paused",
            "HorizontalPodAutoscaler shop/web: paused by annotation scaling.ebb.dev/paused"
        )
    );
    assert_eq!(status.last_known_config, None, "nothing else is written");
    assert_eq!(d.notices.len(), 1);
    assert_eq!(
        (d.notices[0].kind, d.notices[0].reason, d.notices[0].action),
        (EventKind::Normal, "Paused", "Pause")
    );
    // Reported once: the next reconcile writes nothing and records nothing.
    let again = decide_at(&with_status(&s, &d), Some(&h), "2026-05-04T09:05:00Z");
    assert_eq!(
        (again.hpa, again.status, again.notices),
        (HpaPlan::Leave, None, vec![])
    );
    // `paused: "false"` is no pause.
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "false"}));
    assert!(matches!(
        decide_at(&s, Some(&h), "2026-05-04T09:00:00Z").hpa,
        HpaPlan::Apply { .. }
    ));
}

#[test]
fn hpa_paused_until_a_future_instant_requeues_exactly_then() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    // 90 minutes away: requeued at the safety cap, then exactly at the end.
    assert_eq!(d.requeue_after, Some(MAX_REQUEUE));
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T10:00:00Z").requeue_after,
        Some(Duration::from_secs(1800))
    );
    let status = d.status.unwrap();
    assert_eq!(
        condition_of(&status, PAUSED),
        (
            "True",
            "Paused",
            "HorizontalPodAutoscaler shop/web: paused until 2026-05-04T10:30:00Z by annotation \
             scaling.ebb.dev/paused-until"
        )
    );
    // One second before the end: still paused, requeued in one second.
    let d = decide_at(&s, Some(&h), "2026-05-04T10:29:59Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1)));
}

#[test]
fn hpa_pause_that_has_expired_writes_again_and_clears_the_condition() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let paused = decide_at(&s, Some(&h), "2026-05-04T10:29:59Z");
    let s = with_status(&s, &paused);
    // At exactly `paused-until` the pause is over.
    let d = decide_at(&s, Some(&h), "2026-05-04T10:30:00Z");
    assert_eq!(d.state, ManagedState::Active);
    let HpaPlan::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (5, 10));
    assert_eq!(*reason, WriteReason::Transition);
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, PAUSED).0, "False");
    assert_eq!(condition_of(&status, CONDITION_READY).0, "True");
}

#[test]
fn hpa_with_an_invalid_paused_until_counts_as_paused() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "after the sale"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.requeue_after, None, "no end known: wait for a fix");
    let status = d.status.unwrap();
    let (st, reason, message) = condition_of(&status, PAUSED);
    assert_eq!((st, reason), ("True", "InvalidPausedUntil"));
    assert!(
        message.starts_with(
            "HorizontalPodAutoscaler shop/web: annotation scaling.ebb.dev/paused-until is not an \
             RFC 3339 instant (\"after the sale\")"
        ),
        "{message}"
    );
    assert_eq!(
        (d.notices[0].kind, d.notices[0].reason),
        (EventKind::Warning, "InvalidPausedUntil")
    );
}

#[test]
fn scaler_pause_is_reported_before_an_hpa_pause() {
    let mut s = scaler(office());
    s.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), "true".to_owned())].into());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    let status = d.status.unwrap();
    assert_eq!(
        condition_of(&status, PAUSED).2,
        "ServiceScaler shop/web: paused by annotation scaling.ebb.dev/paused"
    );
}

#[test]
fn hpa_pause_beats_the_kill_switch_and_dry_run_alike_no_write() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true", MANAGED_ANNOTATION: "false"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!((d.hpa, d.state), (HpaPlan::Leave, ManagedState::Paused));
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true"}));
    let d = decide(
        &Observed {
            scaler: &s,
            hpa: Some(&h),
            dry_run: true,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((d.hpa, d.state), (HpaPlan::Leave, ManagedState::Paused));
}

#[test]
fn deletion_leaves_a_paused_hpa_as_it_is() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    let adopted = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, Some(60), None)),
        None,
        json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}),
    );
    let observed = Observed {
        scaler: &s,
        hpa: Some(&adopted),
        dry_run: false,
    };
    let plan = decide_deletion(&observed, utc("2026-05-04T09:00:00Z"));
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    assert_eq!(plan.notices[0].reason, "NotRestored");
    assert!(
        plan.notices[0]
            .note
            .contains("HorizontalPodAutoscaler shop/web: paused until 2026-05-04T10:30:00Z"),
        "{}",
        plan.notices[0].note
    );
    // Once the pause has expired, the defaults are restored.
    let plan = decide_deletion(&observed, utc("2026-05-04T10:30:00Z"));
    assert_eq!(
        plan.restore,
        Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
    );
}

#[test]
fn invalid_spec_leaves_the_hpa_and_reports_field_and_rule() {
    let mut value = office();
    value["timeRangeSpec"][0]["timeZone"] = json!("Europe/Nowhere");
    value["timeRangeSpec"][0]["kind"] = json!("LocalTime");
    value["timeRangeSpec"][0]["from"] = json!("08:00");
    value["timeRangeSpec"][0]["to"] = json!("12:00");
    let s = scaler(value);
    let h = hpa(&settings(3, 3, None, None), false);
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(
        (d.hpa.clone(), d.finalizer, d.state, d.requeue_after),
        (
            HpaPlan::Leave,
            FinalizerPlan::Keep,
            ManagedState::Invalid,
            None
        )
    );
    let status = d.status.unwrap();
    let (st, reason, message) = condition_of(&status, CONDITION_SPEC_VALID);
    assert_eq!((st, reason), ("False", "InvalidSpec"));
    assert!(
        message.starts_with("spec.timeRangeSpec[0].timeZone: unknown time zone \"Europe/Nowhere\""),
        "{message}"
    );
    assert_eq!(condition_of(&status, CONDITION_READY).0, "False");
    assert_eq!(d.notices[0].kind, EventKind::Warning);
}

#[test]
fn dry_run_records_the_intended_change_and_writes_nothing_else() {
    let s = scaler(office());
    let h = hpa(&settings(2, 10, Some(60), None), false);
    let d = decide(
        &Observed {
            scaler: &s,
            hpa: Some(&h),
            dry_run: true,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(
        (d.hpa.clone(), d.finalizer, d.state),
        (HpaPlan::Leave, FinalizerPlan::Keep, ManagedState::DryRun)
    );
    let status = d.status.clone().unwrap();
    let (st, reason, message) = condition_of(&status, CONDITION_READY);
    assert_eq!((st, reason), ("False", "DryRun"));
    assert_eq!(
        message,
        "dry run: would update HPA shop/web: minReplicas 2 -> 5 (timeRangeSpec[0] in force)"
    );
    assert_eq!(status.last_known_config, None);
    assert_eq!(
        d.notices.iter().map(|n| n.reason).collect::<Vec<_>>(),
        ["DryRun"]
    );
    // Again: no new status, no new Event.
    let s = with_status(&s, &d);
    let again = decide(
        &Observed {
            scaler: &s,
            hpa: Some(&h),
            dry_run: true,
        },
        utc("2026-05-04T09:10:00Z"),
    );
    assert_eq!(again.status, None);
    assert!(again.notices.is_empty());
}

#[test]
fn adopted_hpa_gets_the_finalizer_and_an_owned_one_does_not() {
    let s = scaler(office());
    let adopted = hpa(&settings(5, 10, Some(60), None), false);
    assert_eq!(
        decide_at(&s, Some(&adopted), "2026-05-04T09:00:00Z").finalizer,
        FinalizerPlan::Add
    );
    let mut with_finalizer = s.clone();
    with_finalizer.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    assert_eq!(
        decide_at(&with_finalizer, Some(&adopted), "2026-05-04T09:00:00Z").finalizer,
        FinalizerPlan::Keep
    );
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    assert_eq!(
        decide_at(&with_finalizer, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerPlan::Remove
    );
    assert_eq!(
        decide_at(&s, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerPlan::Keep
    );
}

#[test]
fn deletion_restores_an_adopted_hpa_to_the_defaults_then_drops_the_finalizer() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    let adopted = hpa(&settings(5, 10, Some(60), None), false);
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&adopted),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(
        plan.restore,
        Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
    );
    assert!(plan.remove_finalizer);
    assert_eq!(plan.notices[0].reason, "Restored");
    // Already at the defaults: no write.
    let restored = hpa(&settings(2, 10, Some(60), None), false);
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&restored),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    // Owned: the garbage collector's job. Kill switch, dry run: left alone.
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&owned),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    let killed = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&killed),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&adopted),
            dry_run: true,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    assert_eq!(plan.notices[0].reason, "DryRun");
    // Without our finalizer: nothing at all.
    s.metadata.finalizers = None;
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&adopted),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, false));
}

#[test]
fn ramp_spreads_a_min_replicas_decrease_from_the_boundary_and_requeues_at_each_step() {
    // The workshop ends at 16:00Z: 12..40 -> 2..20, ramped over 10m.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    let before = decide_at(&s, None, "2026-12-03T15:00:00Z");
    let mut s = with_status(&s, &before);
    let mut h = hpa(&settings(12, 40, Some(70), None), true);
    let mut seen = Vec::new();
    let mut now = utc("2026-12-03T16:00:00Z");
    for _ in 0..12 {
        let d = decide(
            &Observed {
                scaler: &s,
                hpa: Some(&h),
                dry_run: false,
            },
            now,
        );
        if let HpaPlan::Apply { fields, reason } = &d.hpa {
            assert_eq!(fields.max_replicas, 20, "max changes at once");
            seen.push((now, fields.min_replicas, *reason));
            h = hpa_with(fields, Some("uid-1"), json!({}));
        }
        s = with_status(&s, &d);
        let Some(wait) = d.requeue_after else { break };
        now += SignedDuration::try_from(wait).unwrap();
        if now >= utc("2026-12-03T16:30:00Z") {
            break;
        }
    }
    let start = utc("2026-12-03T16:00:00Z");
    let expected: Vec<_> = (0..10)
        .map(|k| {
            (
                start + SignedDuration::from_mins(k),
                11 - i32::try_from(k).unwrap(),
                if k < 9 {
                    WriteReason::Ramp
                } else {
                    WriteReason::Transition
                },
            )
        })
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(s.status.as_ref().unwrap().ramp, None);
    assert_eq!(
        s.status
            .as_ref()
            .unwrap()
            .last_known_config
            .as_ref()
            .unwrap()
            .min_replicas,
        2
    );
}

#[test]
fn lead_steps_the_hpa_up_before_the_boundary_and_requeues_at_each_step() {
    // The workshop starts at 07:30Z: 2..20 -> 12..40, led over the default 30m; the ramp (10m)
    // does not spread this increase after the boundary.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    let before = decide_at(&s, None, "2026-12-03T06:00:00Z");
    let mut s = with_status(&s, &before);
    let mut h = hpa(&settings(2, 20, Some(70), None), true);
    let mut seen = Vec::new();
    let mut wakes = Vec::new();
    let mut now = utc("2026-12-03T06:50:00Z");
    while now <= utc("2026-12-03T07:45:00Z") {
        let d = decide(
            &Observed {
                scaler: &s,
                hpa: Some(&h),
                dry_run: false,
            },
            now,
        );
        if let HpaPlan::Apply { fields, reason } = &d.hpa {
            seen.push((now, fields.min_replicas, fields.max_replicas, *reason));
            h = hpa_with(fields, Some("uid-1"), json!({}));
        }
        s = with_status(&s, &d);
        let wait = d.requeue_after.unwrap();
        now += SignedDuration::try_from(wait).unwrap();
        wakes.push(now);
    }
    let at = |t: &str| utc(&format!("2026-12-03T{t}Z"));
    assert_eq!(
        seen,
        [
            (at("07:00:00"), 4, 24, WriteReason::Lead),
            (at("07:05:00"), 6, 27, WriteReason::Lead),
            (at("07:10:00"), 7, 30, WriteReason::Lead),
            (at("07:15:00"), 9, 34, WriteReason::Lead),
            (at("07:20:00"), 11, 37, WriteReason::Lead),
            (at("07:25:00"), 12, 40, WriteReason::Lead),
        ]
    );
    // Woken at each step, then at the boundary (no write: already there, and no ramp up).
    assert_eq!(
        wakes[..8],
        [
            at("07:00:00"),
            at("07:05:00"),
            at("07:10:00"),
            at("07:15:00"),
            at("07:20:00"),
            at("07:25:00"),
            at("07:30:00"),
            at("08:30:00"),
        ]
    );
    let status = s.status.unwrap();
    assert_eq!(status.ramp, None);
    assert_eq!(status.matched_range, Some(0));
    // The preview names schedule boundaries only: lead steps are not transitions.
    assert_eq!(
        from_k8s_time(&before.status.unwrap().next_transitions[0].at),
        at("07:30:00")
    );
}

#[test]
fn lead_is_path_independent_a_fresh_controller_writes_the_step_in_force() {
    let spec = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "07:30Z", "to": "16:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    });
    let h = hpa(&settings(2, 20, None, None), true);
    // No status, 07:17: step 4 (k = floor(17 * 6 / 30) + 1), whatever happened before.
    let d = decide_at(&scaler(spec.clone()), Some(&h), "2026-05-04T07:17:00Z");
    let HpaPlan::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (9, 34));
    assert_eq!(*reason, WriteReason::Lead);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(180)));
    let status = d.status.unwrap();
    assert!(
        condition_of(&status, CONDITION_READY)
            .2
            .contains("stepping up ahead of a coming increase"),
        "{:?}",
        condition_of(&status, CONDITION_READY)
    );
    assert_eq!(status.last_known_config, Some(settings(9, 34, None, None)));
    // leadTime 0s: the schedule alone, woken at the boundary.
    let mut off = spec;
    off["leadTime"] = json!("0s");
    let d = decide_at(&scaler(off), Some(&h), "2026-05-04T07:17:00Z");
    assert_eq!(d.hpa, HpaPlan::Leave);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(13 * 60)));
}

#[test]
fn ramp_state_is_in_status_and_a_restart_continues_it() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20}, "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 12}}}]
    }));
    let h = hpa(&settings(12, 20, None, None), true);
    // A fresh controller 3 minutes after the 12:00 boundary (no status): ramp down from the
    // HPA's value.
    let d = decide_at(&s, Some(&h), "2026-05-04T12:03:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!(fields.min_replicas, 8);
    let ramp = d.status.as_ref().unwrap().ramp.clone().unwrap();
    assert_eq!((ramp.from_min_replicas, ramp.to_min_replicas), (12, 2));
    assert_eq!(from_k8s_time(&ramp.started_at), utc("2026-05-04T12:00:00Z"));
    assert_eq!(
        condition_of(d.status.as_ref().unwrap(), CONDITION_READY).1,
        "Ramping"
    );
    // Long after the boundary: at once.
    let d = decide_at(&s, Some(&h), "2026-05-04T13:00:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!(fields.min_replicas, 2);
    assert_eq!(d.status.unwrap().ramp, None);
}

#[test]
fn ramped_min_never_exceeds_the_new_max() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 12, "maxReplicas": 40}, "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 1, "maxReplicas": 4}}}]
    }));
    let h = hpa(&settings(12, 40, None, None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T20:00:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (4, 4));
}

#[test]
fn requeue_rounds_up_and_is_capped() {
    let now = utc("2026-01-01T00:00:00Z");
    assert_eq!(requeue_after(now, None), MAX_REQUEUE);
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_nanos(1))),
        Duration::from_millis(1)
    );
    assert_eq!(
        requeue_after(now, Some(now - SignedDuration::from_secs(5))),
        Duration::from_millis(1)
    );
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_secs(90))),
        Duration::from_secs(90)
    );
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_hours(24 * 3))),
        MAX_REQUEUE
    );
}

#[test]
fn overlapping_ranges_get_a_condition_naming_them_once_per_generation() {
    let mut value = office();
    value["timeRangeSpec"].as_array_mut().unwrap().push(
        json!({"kind": "ZonedTime", "from": "11:00Z", "to": "13:00Z",
                     "replicaSpec": {"hpa": {"minReplicas": 7}}}),
    );
    let s = scaler(value);
    let d = decide_at(&s, None, "2026-05-04T11:30:00Z");
    let status = d.status.clone().unwrap();
    assert_eq!(
        condition_of(&status, CONDITION_RANGES_OVERLAP),
        (
            "True",
            "Overlap",
            "timeRangeSpec[0] and timeRangeSpec[1] overlap; the first in list order wins"
        )
    );
    assert!(
        d.notices
            .iter()
            .any(|n| n.reason == "RangesOverlap" && n.kind == EventKind::Warning)
    );
    // The first range wins inside the overlap.
    assert_eq!(status.matched_range, Some(0));
    let again = decide_at(&with_status(&s, &d), None, "2026-05-04T11:31:00Z");
    assert!(again.notices.is_empty());
}

#[test]
fn overlap_messages_stay_short() {
    let pairs: Vec<(usize, usize)> = (1..30).map(|j| (0, j)).collect();
    let message = overlap_message(&pairs).unwrap();
    assert!(message.ends_with("timeRangeSpec[0] and timeRangeSpec[10] overlap (and 19 more pairs); the first in list order wins"), "{message}");
    assert_eq!(overlap_message(&[]), None);
}

#[test]
fn metrics_other_than_cpu_and_memory_are_kept_and_not_compared() {
    let s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let queue_depth = json!({"type": "External", "external": {
        "metric": {"name": "provisioner_queue_depth"},
        "target": {"type": "AverageValue", "averageValue": "2"}}});
    let mut h = hpa(&settings(5, 10, Some(60), None), true);
    let foreign: MetricSpec = serde_json::from_value(queue_depth.clone()).unwrap();
    h.spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .push(foreign);
    // In sync apart from the foreign metric: nothing to write.
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T09:30:00Z").hpa,
        HpaPlan::Leave
    );
    // At the boundary the cpu/memory part changes and the foreign metric is sent back as it is.
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(
        fields.apply_patch("web")["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
                 "target": {"type": "Utilization", "averageUtilization": 60}}}, queue_depth])
    );
    // Only a foreign metric and no cpu/memory target: no server default is implied.
    let none = OwnedFields::from_settings(&settings(2, 10, None, None));
    let mut only_foreign = hpa(&settings(2, 10, Some(80), None), true);
    assert!(none.matches(only_foreign.spec.as_ref().unwrap()));
    only_foreign
        .spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .push(
            serde_json::from_value(json!({"type": "Pods", "pods": {"metric": {"name": "rps"},
            "target": {"type": "AverageValue", "averageValue": "10"}}}))
            .unwrap(),
        );
    assert!(!none.matches(only_foreign.spec.as_ref().unwrap()));
}

#[test]
fn dst_boundaries_drive_the_hpa_writes_and_requeues() {
    // Nights in Zurich at minReplicas 1; across the spring-forward night the range closes at
    // 06:00 CEST (04:00Z), across the fall-back night at 06:00 CET (05:00Z).
    let s = scaler(
        json!({"hpa": {"minReplicas": 4, "maxReplicas": 8}, "leadTime": "0s", "timeRangeSpec": [
        {"kind": "LocalTime", "from": "22:00", "to": "06:00", "timeZone": "Europe/Zurich",
         "replicaSpec": {"hpa": {"minReplicas": 1}}}]}),
    );
    for (just_before, close) in [
        ("2026-03-29T03:59:59Z", "2026-03-29T04:00:00Z"),
        ("2026-10-25T04:59:59Z", "2026-10-25T05:00:00Z"),
    ] {
        let night = hpa(&settings(1, 8, None, None), true);
        let inside = decide_at(&s, Some(&night), just_before);
        assert_eq!(inside.hpa, HpaPlan::Leave, "{just_before}");
        assert_eq!(
            inside.requeue_after,
            Some(Duration::from_secs(1)),
            "{just_before}"
        );
        let d = decide_at(&s, Some(&night), close);
        let HpaPlan::Apply { fields, .. } = &d.hpa else {
            panic!("{close}: {:?}", d.hpa)
        };
        assert_eq!(fields.min_replicas, 4, "{close}");
    }
}

proptest! {
    /// DST, as a person at the wall clock expects: on a day with a gap or a fold, a `LocalTime`
    /// range `[from, to)` is open exactly from the first instant the zone's wall clock shows
    /// `from` or later until the first instant it shows `to` or later (a time in a gap means
    /// the end of the gap, a time in a fold its first occurrence). Checked minute by minute
    /// against the zone's clock, on both changes of three real zones (two hemispheres).
    #[test]
    fn dst_local_time_follows_the_wall_clock_through_gaps_and_folds(
        day in prop::sample::select(vec![
            ("Europe/Zurich", "2026-03-29"), ("Europe/Zurich", "2026-10-25"),
            ("America/New_York", "2026-03-08"), ("America/New_York", "2026-11-01"),
            ("Australia/Sydney", "2026-10-04"), ("Australia/Sydney", "2026-04-05"),
        ]),
        from in 0u32..95, span in 1u32..96,
    ) {
        let (zone, date) = day;
        let to = (from + span).min(95);
        prop_assume!(to > from);
        let hhmm = |q: u32| format!("{:02}:{:02}", q / 4, (q % 4) * 15);
        let s = local_range(&hhmm(from), &hhmm(to), zone);
        let tz: ebb_schedule::Zone = zone.parse().unwrap();
        let date: jiff::civil::Date = date.parse().unwrap();
        let quarter = |q: u32| {
            let q = i8::try_from(q).unwrap();
            jiff::civil::Time::new(q / 4, (q % 4) * 15, 0, 0).unwrap()
        };
        let (from_t, to_t) = (quarter(from), quarter(to));
        let wall = |u: Timestamp| tz.wall_clock(u);
        let start = date.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp()
            - SignedDuration::from_hours(16);
        let minutes: Vec<Timestamp> = (0..(56 * 60)).map(|m| start + SignedDuration::from_mins(m)).collect();
        let opening = minutes
            .iter()
            .find(|u| wall(**u).date() == date && wall(**u).time() >= from_t)
            .copied()
            .unwrap();
        let closing = minutes
            .iter()
            .filter(|u| **u >= opening)
            .find(|u| wall(**u).date() > date || (wall(**u).date() == date && wall(**u).time() >= to_t))
            .copied()
            .unwrap();
        for u in minutes.iter().filter(|u| wall(**u).date() == date) {
            let expected = opening <= *u && *u < closing;
            prop_assert_eq!(s.matched_at(*u).is_some(), expected, "{} {} at {} (wall {})", zone, date, u, wall(*u));
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Deletion policy, udaan's finalizer, range selection

/// What a deletion plan does, in short: (disown, restore, delete, remove_finalizer).
fn deletion_summary(plan: &DeletionPlan) -> (bool, bool, bool, bool) {
    (
        plan.disown,
        plan.restore.is_some(),
        plan.delete,
        plan.remove_finalizer,
    )
}

fn hpa_of(origin: HpaOrigin) -> HorizontalPodAutoscaler {
    let fields = OwnedFields::from_settings(&settings(5, 10, Some(60), None));
    match origin {
        HpaOrigin::Ebb => hpa_with(&fields, Some("uid-1"), json!({})),
        HpaOrigin::Udaan => hpa_with(&fields, None, json!({MANAGED_ANNOTATION: "true"})),
        HpaOrigin::Adopted => hpa_with(&fields, None, json!({})),
    }
}

#[test]
fn deletion_policy_decides_delete_restore_or_orphan_for_each_origin() {
    use DeletionPolicy::{Delete, Orphan, Restore};
    use HpaOrigin::{Adopted, Ebb, Udaan};
    // (policy, origin, needs the finalizer, (disown, restore, delete, remove_finalizer))
    let table = [
        // Unset: as udaan did for the HPAs it (or ebb) created, a restore for adopted ones.
        (None, Ebb, false, (false, false, false, true)),
        (None, Udaan, true, (false, false, true, true)),
        (None, Adopted, true, (false, true, false, true)),
        // Delete: the garbage collector deletes what ebb owns; ebb deletes the rest.
        (Some(Delete), Ebb, false, (false, false, false, true)),
        (Some(Delete), Udaan, true, (false, false, true, true)),
        (Some(Delete), Adopted, true, (false, false, true, true)),
        // Restore: even an HPA ebb created, disowned first so the garbage collector keeps it.
        (Some(Restore), Ebb, true, (true, true, false, true)),
        (Some(Restore), Udaan, true, (false, true, false, true)),
        (Some(Restore), Adopted, true, (false, true, false, true)),
        // Orphan: only ebb's owner reference goes.
        (Some(Orphan), Ebb, true, (true, false, false, true)),
        (Some(Orphan), Udaan, false, (false, false, false, true)),
        (Some(Orphan), Adopted, false, (false, false, false, true)),
    ];
    for (policy, origin, needs, expected) in table {
        let mut s = scaler(office());
        s.spec.deletion_policy = policy;
        let hpa = hpa_of(origin);
        assert_eq!(hpa_origin(&hpa, &s), origin);
        assert_eq!(
            needs_finalizer(policy, &hpa, &s),
            needs,
            "{policy:?} {origin:?}"
        );
        // The live reconcile adds the finalizer exactly when it is needed.
        let live = decide_at(&s, Some(&hpa), "2026-05-04T09:00:00Z");
        let want = if needs {
            FinalizerPlan::Add
        } else {
            FinalizerPlan::Keep
        };
        assert_eq!(live.finalizer, want, "{policy:?} {origin:?}");
        s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
        let plan = decide_deletion(
            &Observed {
                scaler: &s,
                hpa: Some(&hpa),
                dry_run: false,
            },
            utc("2026-05-04T09:00:00Z"),
        );
        assert_eq!(deletion_summary(&plan), expected, "{policy:?} {origin:?}");
        if plan.restore.is_some() {
            assert_eq!(
                plan.restore,
                Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
            );
        }
        // A dry run only says what it would do.
        let dry = decide_deletion(
            &Observed {
                scaler: &s,
                hpa: Some(&hpa),
                dry_run: true,
            },
            utc("2026-05-04T09:00:00Z"),
        );
        assert_eq!(
            deletion_summary(&dry),
            (false, false, false, true),
            "{policy:?} {origin:?}"
        );
    }
}

#[test]
fn deletion_notices_name_what_was_done_and_skipped() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    s.spec.deletion_policy = Some(DeletionPolicy::Delete);
    let observed = |s: &ServiceScaler, hpa: &HorizontalPodAutoscaler| {
        decide_deletion(
            &Observed {
                scaler: s,
                hpa: Some(hpa),
                dry_run: false,
            },
            utc("2026-05-04T09:00:00Z"),
        )
    };
    let plan = observed(&s, &hpa_of(HpaOrigin::Adopted));
    assert_eq!(plan.notices[0].reason, "Deleted");
    // The kill switch wins over every policy: the HPA is left as it is.
    let killed = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let plan = observed(&s, &killed);
    assert_eq!(deletion_summary(&plan), (false, false, false, true));
    assert_eq!(plan.notices[0].reason, "NotDeleted");
    s.spec.deletion_policy = Some(DeletionPolicy::Orphan);
    let plan = observed(&s, &hpa_of(HpaOrigin::Ebb));
    assert_eq!(plan.notices[0].reason, "Orphaned");
}

#[test]
fn deletion_keeps_other_owner_references_of_a_disowned_hpa() {
    let s = scaler(office());
    let mut hpa = hpa_of(HpaOrigin::Ebb);
    hpa.metadata.resource_version = Some("42".into());
    let patch = disown_patch(&hpa, &s);
    assert_eq!(
        patch,
        json!({"metadata": {"resourceVersion": "42", "ownerReferences": null}})
    );
    hpa.metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-9",
            }))
            .unwrap(),
        );
    let patch = disown_patch(&hpa, &s);
    assert_eq!(patch["metadata"]["ownerReferences"][0]["uid"], "uid-9");
    assert_eq!(
        patch["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn udaans_finalizer_is_honoured_then_removed_on_deletion() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![UDAAN_FINALIZER.to_owned()]);
    // udaan's HPA: deleted, as udaan's finalizer stood for; then the finalizer goes.
    let udaans = hpa_of(HpaOrigin::Udaan);
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: Some(&udaans),
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(deletion_summary(&plan), (false, false, true, true));
    // No HPA left: the finalizer goes all the same.
    let plan = decide_deletion(
        &Observed {
            scaler: &s,
            hpa: None,
            dry_run: false,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(deletion_summary(&plan), (false, false, false, true));
    // While the ServiceScaler lives, udaan's finalizer is no business of the live reconcile.
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    assert_eq!(
        decide_at(&s, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerPlan::Keep
    );
    assert!(has_udaan_finalizer(&s));
}

fn overlapping(selection: Option<&str>) -> Schedule {
    let mut value = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "18:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 3}}},
            {"kind": "ZonedTime", "from": "12:00Z", "to": "14:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5}}},
        ]
    });
    if let Some(selection) = selection {
        value["rangeSelection"] = json!(selection);
    }
    schedule(value)
}

#[test]
fn range_selection_first_takes_the_first_overlapping_range_and_last_the_last() {
    let first = overlapping(None);
    assert_eq!(first.matched_at(utc("2026-05-04T13:00:00Z")), Some(0));
    assert_eq!(
        overlapping(Some("First")).matched_at(utc("2026-05-04T13:00:00Z")),
        Some(0)
    );
    let last = overlapping(Some("Last"));
    assert_eq!(last.matched_at(utc("2026-05-04T10:00:00Z")), Some(0));
    assert_eq!(last.matched_at(utc("2026-05-04T13:00:00Z")), Some(1));
    assert_eq!(
        last.effective_at(utc("2026-05-04T13:00:00Z")).min_replicas,
        5
    );
    assert_eq!(last.matched_at(utc("2026-05-04T19:00:00Z")), None);
    // Transitions name ranges by list index either way.
    let at = |s: &Schedule| {
        s.transitions(utc("2026-05-04T09:00:00Z"), 3)
            .into_iter()
            .map(|t| (t.at, t.matched_range))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        at(&last),
        vec![
            (utc("2026-05-04T12:00:00Z"), Some(1)),
            (utc("2026-05-04T14:00:00Z"), Some(0)),
            (utc("2026-05-04T18:00:00Z"), None),
        ]
    );
    assert_eq!(
        at(&first),
        vec![
            (utc("2026-05-04T18:00:00Z"), None),
            (utc("2026-05-05T08:00:00Z"), Some(0)),
            (utc("2026-05-05T18:00:00Z"), None),
        ]
    );
    // The overlap is reported either way, naming the winner.
    assert_eq!(first.overlaps(), vec![(0, 1)]);
    assert_eq!(last.overlaps(), vec![(0, 1)]);
    assert!(
        first
            .overlap_message()
            .unwrap()
            .ends_with("the first in list order wins")
    );
    assert!(
        last.overlap_message()
            .unwrap()
            .ends_with("the last in list order wins")
    );
}

#[test]
fn a_write_carrying_someone_elses_metrics_is_preconditioned_on_the_version_read() {
    let mut h = hpa(&settings(5, 10, Some(60), None), true);
    h.metadata.resource_version = Some("7".into());
    let fields = OwnedFields::from_settings(&settings(2, 10, Some(60), None));
    // Only cpu/memory as read: still preconditioned, since a metric someone adds after the read
    // would be dropped by the atomic list.
    let own = fields
        .clone()
        .keeping_foreign_metrics(h.spec.as_ref().unwrap());
    h.metadata.uid = Some("hpa-uid".into());
    let read = Precondition {
        resource_version: Some("7".into()),
        uid: Some("hpa-uid".into()),
    };
    assert_eq!(own.precondition(&h), read);
    assert_eq!(
        own.apply_patch_at("web", &Precondition::default()),
        own.apply_patch("web")
    );
    h.spec.as_mut().unwrap().metrics.as_mut().unwrap().push(
        serde_json::from_value(json!({"type": "External", "external": {
                "metric": {"name": "queue_depth"},
                "target": {"type": "AverageValue", "averageValue": "30"}}}))
        .unwrap(),
    );
    let carrying = fields.keeping_foreign_metrics(h.spec.as_ref().unwrap());
    assert_eq!(carrying.precondition(&h), read);
    let patch = carrying.apply_patch_at("web", &read);
    assert_eq!(
        patch["metadata"],
        json!({"name": "web", "resourceVersion": "7", "uid": "hpa-uid"})
    );
    assert_eq!(patch["spec"]["metrics"][1]["type"], "External");
}

#[test]
fn ranges_set_targets_of_metrics_already_on_the_hpa_by_name() {
    // Queue depth 30 by day, 100 off-hours (outside 08:00-12:00Z); rps only named by day.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60,
                "metricTargets": [{"name": "queue_depth", "averageValue": "100"}]},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5, "metricTargets": [
                 {"name": "queue_depth", "averageValue": "30"},
                 {"name": "missing", "value": "1"}]}}}
        ]
    }));
    let schedule = Schedule::from_spec(&s.spec).unwrap();
    let day = schedule.effective_at(utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        day.metric_targets
            .iter()
            .map(|t| (
                t.name.as_str(),
                t.average_value.as_deref(),
                t.value.as_deref()
            ))
            .collect::<Vec<_>>(),
        [
            ("missing", None, Some("1")),
            ("queue_depth", Some("30"), None)
        ]
    );
    let queue = |value: &str| {
        serde_json::from_value::<MetricSpec>(json!({"type": "External", "external": {
            "metric": {"name": "queue_depth"},
            "target": {"type": "AverageValue", "averageValue": value}}}))
        .unwrap()
    };
    let rps: MetricSpec = serde_json::from_value(json!({"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}))
    .unwrap();
    let with = |min: i32, q: &str| {
        let mut h = hpa(&settings(min, 10, Some(60), None), true);
        let metrics = h.spec.as_mut().unwrap().metrics.as_mut().unwrap();
        metrics.push(queue(q));
        metrics.push(rps.clone());
        h
    };
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    // In sync by day: nothing to write; a name not on the HPA adds nothing.
    assert_eq!(
        decide_at(&s, Some(&with(5, "30")), "2026-05-04T09:30:00Z").hpa,
        HpaPlan::Leave
    );
    // Off-hours: queue depth back to 100, rps untouched, the whole list sent.
    let d = decide_at(&s, Some(&with(5, "30")), "2026-05-04T12:00:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    let metrics = &fields.apply_patch("web")["spec"]["metrics"];
    assert_eq!(metrics[1], serde_json::to_value(queue("100")).unwrap());
    assert_eq!(metrics[2], serde_json::to_value(&rps).unwrap());
    assert_eq!(metrics.as_array().map(Vec::len), Some(3));
    let note = &d.hpa_notice.as_ref().unwrap().note;
    assert!(
        note.contains("queue_depth AverageValue 30 -> AverageValue 100"),
        "{note}"
    );
    // Only the named target drifted: written back.
    assert!(matches!(
        decide_at(&s, Some(&with(5, "31")), "2026-05-04T09:30:00Z").hpa,
        HpaPlan::Apply { .. }
    ));
    // A target must say exactly one thing.
    let errors = errors_of(json!({
        "hpa": {"maxReplicas": 3, "metricTargets": [{"name": "q", "value": "1", "averageValue": "2"}]}
    }));
    assert!(
        errors.iter().any(|(f, _)| f == "spec.hpa.metricTargets[0]"),
        "{errors:?}"
    );
}

/// The API server stores quantities canonically (`2000m` comes back as `2`, `0.5` as `500m`):
/// a target of the same amount is in sync, so a non-canonical spec never loops on writes.
#[test]
fn metric_targets_compare_quantities_by_amount() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60,
                "metricTargets": [{"name": "queue_depth", "averageValue": "2000m"},
                                  {"name": "rps", "value": "0.5"}]}
    }));
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let with = |queue: &str, rps: &str| {
        let mut h = hpa(&settings(2, 10, Some(60), None), true);
        let metrics = h.spec.as_mut().unwrap().metrics.as_mut().unwrap();
        metrics.push(
            serde_json::from_value(json!({"type": "External", "external": {
                "metric": {"name": "queue_depth"},
                "target": {"type": "AverageValue", "averageValue": queue}}}))
            .unwrap(),
        );
        metrics.push(
            serde_json::from_value(json!({"type": "Object", "object": {
                "metric": {"name": "rps"},
                "describedObject": {"kind": "Service", "name": "web", "apiVersion": "v1"},
                "target": {"type": "Value", "value": rps}}}))
            .unwrap(),
        );
        h
    };
    // What the server stored after ebb wrote `2000m` and `0.5`.
    assert_eq!(
        decide_at(&s, Some(&with("2", "500m")), "2026-05-04T09:30:00Z").hpa,
        HpaPlan::Leave
    );
    // A different amount is still a change, and the note shows only that metric.
    let d = decide_at(&s, Some(&with("3", "500m")), "2026-05-04T09:30:00Z");
    let HpaPlan::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    let metrics = &fields.apply_patch("web")["spec"]["metrics"];
    assert_eq!(metrics[1]["external"]["target"]["averageValue"], "2000m");
    // The rps target already has the amount: sent back exactly as the server wrote it.
    assert_eq!(metrics[2]["object"]["target"]["value"], "500m");
    let note = &d.hpa_notice.as_ref().unwrap().note;
    assert!(
        note.contains("queue_depth AverageValue 3 -> AverageValue 2000m"),
        "{note}"
    );
    assert!(!note.contains("rps"), "{note}");
}

#[test]
fn metric_target_quantities_must_parse() {
    let errors = errors_of(json!({
        "hpa": {"maxReplicas": 3, "metricTargets": [{"name": "q", "averageValue": "ten"}]},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"metricTargets": [{"name": "q", "value": "1.5.0"}]}}}]
    }));
    let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
    assert!(
        fields.contains(&"spec.hpa.metricTargets[0].averageValue"),
        "{errors:?}"
    );
    assert!(
        fields.contains(&"spec.timeRangeSpec[0].replicaSpec.hpa.metricTargets[0].value"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|(_, m)| m.contains("\"ten\" is not a quantity")),
        "{errors:?}"
    );
}
