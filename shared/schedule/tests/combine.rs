//! FirstMatch (service-scaler) and AnyOpen (scaledown-window) at exact instants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_schedule::{AnyOpen, DEFAULT_HORIZON, FirstMatch, Window};
use ebb_testkit::utc;
use jiff::{SignedDuration, Timestamp};

fn zoned(from: &str, to: &str) -> Window {
    Window::zoned_time(from, to).unwrap()
}

fn local(from: &str, to: &str, tz: &str) -> Window {
    Window::local_time(from, to, Some(tz), None::<&[&str]>).unwrap()
}

fn one_off(from: &str, to: &str) -> Window {
    Window::zoned_date_time(from, to).unwrap()
}

fn at(pairs: &[(&str, Option<usize>)]) -> Vec<(Timestamp, Option<usize>)> {
    pairs.iter().map(|(t, i)| (utc(t), *i)).collect()
}

#[test]
fn udaan_readme_example() {
    // spec.timeRangeSpec: 16:00-00:00 IST -> minReplicas 3, 00:00-08:00 IST -> minReplicas 2.
    let ranges = FirstMatch::new(vec![
        zoned("16:00+05:30", "00:00+05:30"),
        zoned("00:00+05:30", "08:00+05:30"),
    ]);
    for (instant, matched) in [
        ("2026-06-01T12:00:00+05:30", None),
        ("2026-06-01T15:59:59+05:30", None),
        ("2026-06-01T16:00:00+05:30", Some(0)),
        ("2026-06-01T21:30:00+05:30", Some(0)),
        ("2026-06-01T23:59:59+05:30", Some(0)),
        ("2026-06-02T00:00:00+05:30", Some(1)),
        ("2026-06-02T03:00:00+05:30", Some(1)),
        ("2026-06-02T07:59:59+05:30", Some(1)),
        ("2026-06-02T08:00:00+05:30", None),
    ] {
        assert_eq!(ranges.matched_at(utc(instant)), matched, "{instant}");
    }
    assert_eq!(
        ranges.transitions(utc("2026-06-01T12:00:00+05:30"), 4, DEFAULT_HORIZON),
        at(&[
            ("2026-06-01T16:00:00+05:30", Some(0)),
            ("2026-06-02T00:00:00+05:30", Some(1)),
            ("2026-06-02T08:00:00+05:30", None),
            ("2026-06-02T16:00:00+05:30", Some(0)),
        ])
    );
    assert_eq!(
        ranges.next_transition(utc("2026-06-01T23:00:00+05:30")),
        Some(utc("2026-06-02T00:00:00+05:30"))
    );
    assert!(ranges.overlaps().pairs.is_empty());
}

#[test]
fn first_match_ignores_boundaries_of_shadowed_windows() {
    let wide_first = FirstMatch::new(vec![
        local("08:00", "20:00", "UTC"),
        local("10:00", "12:00", "UTC"),
    ]);
    assert_eq!(
        wide_first.transitions(utc("2026-06-01T07:00:00Z"), 3, DEFAULT_HORIZON),
        at(&[
            ("2026-06-01T08:00:00Z", Some(0)),
            ("2026-06-01T20:00:00Z", None),
            ("2026-06-02T08:00:00Z", Some(0)),
        ])
    );
    let narrow_first = FirstMatch::new(vec![
        local("10:00", "12:00", "UTC"),
        local("08:00", "20:00", "UTC"),
    ]);
    assert_eq!(
        narrow_first.transitions(utc("2026-06-01T07:00:00Z"), 5, DEFAULT_HORIZON),
        at(&[
            ("2026-06-01T08:00:00Z", Some(1)),
            ("2026-06-01T10:00:00Z", Some(0)),
            ("2026-06-01T12:00:00Z", Some(1)),
            ("2026-06-01T20:00:00Z", None),
            ("2026-06-02T08:00:00Z", Some(1)),
        ])
    );
    assert_eq!(wide_first.overlaps().pairs, vec![(0, 1)]);
    assert_eq!(narrow_first.overlaps().pairs, vec![(0, 1)]);
}

#[test]
fn first_match_hands_over_between_touching_windows() {
    let ranges = FirstMatch::new(vec![zoned("08:00Z", "12:00Z"), zoned("12:00Z", "16:00Z")]);
    assert_eq!(
        ranges.transitions(utc("2026-06-01T00:00:00Z"), 3, DEFAULT_HORIZON),
        at(&[
            ("2026-06-01T08:00:00Z", Some(0)),
            ("2026-06-01T12:00:00Z", Some(1)),
            ("2026-06-01T16:00:00Z", None),
        ])
    );
    // Touching is not overlapping: half-open ranges.
    assert!(ranges.overlaps().pairs.is_empty());
}

#[test]
fn transitions_respect_limit_and_horizon() {
    let ranges = FirstMatch::new(vec![zoned("08:00Z", "12:00Z")]);
    let now = utc("2026-06-01T00:00:00Z");
    assert!(ranges.transitions(now, 0, DEFAULT_HORIZON).is_empty());
    assert_eq!(
        ranges
            .transitions(now, 1000, SignedDuration::from_hours(24 * 2))
            .len(),
        4
    );
    // The horizon is inclusive.
    assert_eq!(
        ranges
            .transitions(now, 1000, SignedDuration::from_hours(8))
            .len(),
        1
    );
    assert_eq!(ranges.transitions(now, 1000, DEFAULT_HORIZON).len(), 734);
    assert!(
        ranges
            .transitions(now, 10, SignedDuration::from_hours(-1))
            .is_empty()
    );
}

#[test]
fn next_transition_finds_one_offs_beyond_a_year() {
    let ranges = FirstMatch::new(vec![
        one_off("2029-03-01T09:00:00Z", "2029-03-01T17:00:00Z"),
        zoned("00:00Z", "00:00Z"),
    ]);
    let now = utc("2026-06-01T00:00:00Z");
    assert_eq!(ranges.matched_at(now), Some(1));
    assert!(ranges.transitions(now, 5, DEFAULT_HORIZON).is_empty());
    assert_eq!(
        ranges.next_transition(now),
        Some(utc("2029-03-01T09:00:00Z"))
    );
    assert_eq!(
        ranges.next_transition(utc("2029-03-01T09:00:00Z")),
        Some(utc("2029-03-01T17:00:00Z"))
    );
    assert_eq!(ranges.next_transition(utc("2029-03-01T17:00:00Z")), None);
    // Shadowed by an always-open first window: nothing ever changes.
    let shadowed = FirstMatch::new(vec![
        zoned("00:00Z", "00:00Z"),
        one_off("2029-03-01T09:00:00Z", "2029-03-01T17:00:00Z"),
        Window::cron("0 0 29 2 *", "1h", None).unwrap(),
    ]);
    assert_eq!(shadowed.next_transition(now), None);
    // A leap-day cron window two years away.
    let leap = AnyOpen::new(vec![Window::cron("0 0 29 2 *", "1h", None).unwrap()]);
    assert_eq!(leap.next_transition(now), Some(utc("2028-02-29T00:00:00Z")));
    // An empty list never changes.
    assert_eq!(FirstMatch::new(vec![]).next_transition(now), None);
    assert_eq!(AnyOpen::new(vec![]).next_transition(now), None);
    assert!(!AnyOpen::new(vec![]).is_open(now));
}

#[test]
fn overlaps_are_exact_for_one_offs_and_daily_windows() {
    let ranges = FirstMatch::new(vec![
        /* 0 */ one_off("2026-06-01T09:00:00Z", "2026-06-01T17:00:00Z"),
        /* 1 */ one_off("2026-06-01T17:00:00Z", "2026-06-01T18:00:00Z"),
        /* 2 */ one_off("2026-06-01T16:59:00Z", "2026-06-01T17:01:00Z"),
        /* 3 */ zoned("20:00Z", "21:00Z"),
        /* 4 */ local("22:30", "23:30", "Europe/Zurich"),
        /* 5 */ Window::cron("0 23 * * 1-5", "30m", Some("UTC")).unwrap(),
        /* 6 */ one_off("2026-06-06T23:00:00Z", "2026-06-07T23:00:00Z"),
    ]);
    // 0-2 and 1-2 meet; 0-1 only touch. 3 (20:00-21:00Z) meets 4 (22:30-23:30 Zurich) in summer,
    // when 4 is 20:30-21:30Z; 5 (23:00-23:30Z on weekdays) meets neither. 6 runs from Saturday
    // 23:00Z to Sunday 23:00Z: 3 and 4 open inside it, 5 does not.
    assert_eq!(
        ranges.overlaps().pairs,
        vec![(0, 2), (1, 2), (3, 4), (3, 6), (4, 6)]
    );
}

#[test]
fn overlaps_that_happen_only_while_dst_differs_are_found() {
    // Zurich 08:00-09:00 and New York 03:00-04:00 touch (09:00 Zurich is 03:00 New York), except in
    // the weeks when the United States already observe DST and Europe does not yet (or no longer):
    // then New York 03:00 is 08:00 in Zurich.
    let ranges = FirstMatch::new(vec![
        local("08:00", "09:00", "Europe/Zurich"),
        local("03:00", "04:00", "America/New_York"),
    ]);
    assert_eq!(ranges.overlaps().pairs, vec![(0, 1)]);
    assert_eq!(ranges.matched_at(utc("2026-06-01T07:00:00Z")), Some(1));
    assert_eq!(ranges.matched_at(utc("2026-06-01T06:30:00Z")), Some(0));
    assert_eq!(ranges.matched_at(utc("2026-03-10T07:30:00Z")), Some(0));
    let apart = FirstMatch::new(vec![
        local("08:00", "09:00", "Europe/Zurich"),
        local("05:00", "06:00", "America/New_York"),
    ]);
    assert!(apart.overlaps().pairs.is_empty());
}

#[test]
fn any_open_merges_overlapping_and_touching_windows() {
    let schedule = AnyOpen::new(vec![
        zoned("08:00Z", "12:00Z"),
        zoned("12:00Z", "16:00Z"),
        zoned("15:00Z", "17:00Z"),
    ]);
    let now = utc("2026-06-01T00:00:00Z");
    assert_eq!(
        schedule.transitions(now, 4, DEFAULT_HORIZON),
        vec![
            (utc("2026-06-01T08:00:00Z"), true),
            (utc("2026-06-01T17:00:00Z"), false),
            (utc("2026-06-02T08:00:00Z"), true),
            (utc("2026-06-02T17:00:00Z"), false),
        ]
    );
    assert_eq!(schedule.open_at(utc("2026-06-01T12:00:00Z")), Some(1));
    assert_eq!(schedule.open_at(utc("2026-06-01T15:30:00Z")), Some(1));
    assert_eq!(schedule.open_at(utc("2026-06-01T16:30:00Z")), Some(2));
    assert_eq!(schedule.open_at(utc("2026-06-01T17:00:00Z")), None);
    // Complementary windows: always open, never flips.
    let always = AnyOpen::new(vec![zoned("08:00Z", "20:00Z"), zoned("20:00Z", "08:00Z")]);
    assert!(always.transitions(now, 4, DEFAULT_HORIZON).is_empty());
    assert_eq!(always.next_transition(now), None);
    assert!(always.is_open(now));
}

#[test]
fn scaledown_window_example_weekday_nights_in_zurich() {
    let schedule = AnyOpen::new(vec![
        Window::cron("0 20 * * 1-5", "11h", Some("Europe/Zurich")).unwrap(),
    ]);
    // From Thursday 2026-03-26 noon, across the spring-forward weekend.
    let flips = schedule.transitions(utc("2026-03-26T12:00:00Z"), 6, DEFAULT_HORIZON);
    assert_eq!(
        flips,
        vec![
            (utc("2026-03-26T19:00:00Z"), true),  // Thu 20:00 CET
            (utc("2026-03-27T06:00:00Z"), false), // Fri 07:00 CET
            (utc("2026-03-27T19:00:00Z"), true),  // Fri 20:00 CET
            (utc("2026-03-28T06:00:00Z"), false), // Sat 07:00 CET
            (utc("2026-03-30T18:00:00Z"), true),  // Mon 20:00 CEST
            (utc("2026-03-31T05:00:00Z"), false), // Tue 07:00 CEST
        ]
    );
    assert_eq!(
        schedule.next_transition(utc("2026-03-28T12:00:00Z")),
        Some(utc("2026-03-30T18:00:00Z"))
    );
    assert_eq!(schedule.open_at(utc("2026-03-27T23:00:00Z")), Some(0));
}

#[test]
fn any_open_with_a_window_that_merges_into_another_from_a_different_kind() {
    let schedule = AnyOpen::new(vec![
        Window::cron("0 20 * * *", "2h", None).unwrap(),
        one_off("2026-06-01T21:00:00Z", "2026-06-02T21:00:00Z"),
    ]);
    let flips = schedule.transitions(utc("2026-06-01T12:00:00Z"), 3, DEFAULT_HORIZON);
    assert_eq!(
        flips,
        vec![
            (utc("2026-06-01T20:00:00Z"), true),
            (utc("2026-06-02T22:00:00Z"), false),
            (utc("2026-06-03T20:00:00Z"), true),
        ]
    );
}
