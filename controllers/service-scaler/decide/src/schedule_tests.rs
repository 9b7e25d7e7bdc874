//! Tests of the schedule: the seed's example, transitions, DST in real zones (`schedule.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fixtures::*;
use crate::*;
use ebb_schedule::{Calendars, Overlaps};
use ebb_testkit::utc;
use jiff::SignedDuration;
use proptest::prelude::*;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------------
// The seed's example (udaan's README), reproduced

#[test]
fn udaan_example_behaves_as_its_readme_describes() {
    let s = Schedule::from_spec(&udaan().spec, &Calendars::new()).unwrap();
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
    assert_eq!(s.overlaps(), Overlaps::default());
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
    // Nothing ever changes: the scan looks years ahead until its steps run out (SCAN_STEPS),
    // and a pass would look again from there.
    let coming = s.coming(now, PREVIEW_LEN);
    assert!(coming.changes.is_empty());
    assert!(
        coming
            .cut
            .is_none_or(|cut| cut > now + SignedDuration::from_hours(5 * 365 * 24)),
        "{coming:?}"
    );
    assert_eq!(s.next_transition(now), coming.cut);
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
    assert_eq!(s.overlaps().pairs, [(0, 2)]);
    assert_eq!(
        overlap_message(&s.overlaps().pairs, &[]).unwrap(),
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

    /// The last change of minReplicas within a ramp is the last instant before which it was
    /// different (found by probing every 15 minutes, the ranges' grain), however far back in
    /// the ramp it lies.
    #[test]
    fn the_last_min_change_is_the_latest_boundary_where_min_moved(
        ranges in zoned_ranges(), start in 0i64..(366 * 96), offset_s in 0i64..900,
        ramp_q in 1i64..(3 * 96),
    ) {
        let s = schedule(zoned_spec(&ranges));
        let now = utc("2026-01-01T00:00:00Z") + SignedDuration::from_mins(start * 15) + SignedDuration::from_secs(offset_s);
        let since = now - SignedDuration::from_mins(ramp_q * 15);
        let min_at = |t: Timestamp| s.effective_at(t).min_replicas;
        // Boundaries fall on quarter hours: the latest one in (since, now] where min moved.
        let mut expected = None;
        let mut q = now.as_second().div_euclid(900) * 900;
        while let Ok(t) = Timestamp::from_second(q) {
            if t <= since {
                break;
            }
            if min_at(t) != min_at(t - SignedDuration::from_millis(1)) {
                expected = Some(t);
                break;
            }
            q -= 900;
        }
        prop_assert_eq!(s.last_min_change(since, now), expected);
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
