//! Single windows at exact instants: midnight wraps, half-open bounds, month ends, leap days, DST
//! gaps and folds in real zones, cron durations across midnight and DST.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_schedule::Weekdays;
use ebb_schedule::{CronSchedule, Interval, ScheduleError, Window, Zone};
use ebb_testkit::utc;
use jiff::civil::Weekday;
use jiff::{SignedDuration, Timestamp};

fn interval(start: &str, end: &str) -> Interval {
    Interval {
        start: Some(utc(start)),
        end: Some(utc(end)),
    }
}

fn local(from: &str, to: &str, tz: &str) -> Window {
    Window::local_time(from, to, Some(tz), None::<&[&str]>).unwrap()
}

/// Asserts `window` is open exactly at the instants marked true.
fn assert_open(window: &Window, cases: &[(&str, bool)]) {
    for (at, open) in cases {
        assert_eq!(window.contains(utc(at)), *open, "{at} in {window:?}");
        assert_eq!(
            window.interval_containing(utc(at)).is_some(),
            *open,
            "{at} interval in {window:?}"
        );
    }
}

#[test]
fn zoned_time_wraps_past_midnight_and_is_half_open() {
    let evening = Window::zoned_time("16:00+05:30", "00:00+05:30").unwrap();
    assert_open(
        &evening,
        &[
            ("2026-06-01T15:59:59+05:30", false),
            ("2026-06-01T16:00:00+05:30", true),
            ("2026-06-01T23:59:59+05:30", true),
            ("2026-06-02T00:00:00+05:30", false),
            ("2026-06-02T08:00:00+05:30", false),
        ],
    );
    assert_eq!(
        evening.interval_containing(utc("2026-06-01T20:00:00+05:30")),
        Some(interval(
            "2026-06-01T16:00:00+05:30",
            "2026-06-02T00:00:00+05:30"
        ))
    );
    let overnight = Window::zoned_time("22:00Z", "06:00Z").unwrap();
    assert_open(
        &overnight,
        &[
            ("2026-06-01T21:59:00Z", false),
            ("2026-06-01T22:00:00Z", true),
            ("2026-06-02T00:00:00Z", true),
            ("2026-06-02T05:59:59Z", true),
            ("2026-06-02T06:00:00Z", false),
        ],
    );
    assert_eq!(
        overnight.next_boundary_after(utc("2026-06-02T01:00:00Z")),
        Some(utc("2026-06-02T06:00:00Z"))
    );
    assert_eq!(
        overnight.next_boundary_after(utc("2026-06-02T06:00:00Z")),
        Some(utc("2026-06-02T22:00:00Z"))
    );
    assert_eq!(
        overnight.next_start_after(utc("2026-06-02T01:00:00Z")),
        Some(utc("2026-06-02T22:00:00Z"))
    );
    // A fixed offset does not move with DST.
    let new_york_offset = Window::zoned_time("09:00-05:00", "17:00-05:00").unwrap();
    assert!(new_york_offset.contains(utc("2026-07-01T14:00:00Z")));
    assert!(!new_york_offset.contains(utc("2026-07-01T13:59:00Z")));
}

#[test]
fn zoned_time_from_equal_to_is_always_open() {
    let all_day = Window::zoned_time("07:00+02:00", "07:00+02:00").unwrap();
    for at in [
        "2026-06-01T05:00:00Z",
        "2026-06-01T04:59:59Z",
        "2030-01-01T00:00:00Z",
    ] {
        assert!(all_day.contains(utc(at)));
        assert_eq!(
            all_day.interval_containing(utc(at)),
            Some(Interval {
                start: None,
                end: None
            })
        );
        assert_eq!(all_day.next_boundary_after(utc(at)), None);
        assert_eq!(all_day.next_start_after(utc(at)), None);
    }
}

#[test]
fn zoned_time_converts_a_different_offset_of_to() {
    let window = Window::zoned_time("16:00+05:30", "01:00Z").unwrap();
    let Window::ZonedTime { from, to, offset } = window else {
        panic!("not a ZonedTime");
    };
    assert_eq!(from.to_string(), "16:00:00");
    assert_eq!(to.to_string(), "06:30:00");
    assert_eq!(offset.seconds(), 5 * 3600 + 1800);
    let midnight_end = Window::zoned_time("16:00+05:30", "24:00+05:30").unwrap();
    assert_eq!(
        midnight_end,
        Window::zoned_time("16:00+05:30", "00:00+05:30").unwrap()
    );
}

#[test]
fn zoned_time_rejects_malformed_text() {
    for (from, to, bad) in [
        ("16:00", "20:00Z", "16:00"),
        ("16:00+5:30", "20:00Z", "16:00+5:30"),
        ("25:00Z", "20:00Z", "25:00Z"),
        ("16:60Z", "20:00Z", "16:60Z"),
        ("16:00+24:00", "20:00Z", "16:00+24:00"),
        ("16:00 +05:30", "20:00Z", "16:00 +05:30"),
        ("24:00Z", "20:00Z", "24:00Z"),
        ("", "20:00Z", ""),
        ("16:00Z", "1６:00Z", "1６:00Z"),
        ("16:00Z", "20:00+05:30:00", "20:00+05:30:00"),
        ("16:00Z", "20:00UTC", "20:00UTC"),
    ] {
        let err = Window::zoned_time(from, to).unwrap_err();
        assert!(
            matches!(&err, ScheduleError::TimeOfDay { input, .. } if input == bad),
            "{from} {to}: {err}"
        );
        assert!(err.to_string().contains("16:00+05:30"), "{err}");
    }
}

#[test]
fn zoned_date_time_is_one_off_and_half_open() {
    let window =
        Window::zoned_date_time("2026-06-01T09:00:00+02:00", "2026-06-01T17:00:00+02:00").unwrap();
    assert_open(
        &window,
        &[
            ("2026-06-01T06:59:59Z", false),
            ("2026-06-01T07:00:00Z", true),
            ("2026-06-01T14:59:59Z", true),
            ("2026-06-01T15:00:00Z", false),
        ],
    );
    assert_eq!(
        window.next_boundary_after(utc("2026-01-01T00:00:00Z")),
        Some(utc("2026-06-01T07:00:00Z"))
    );
    assert_eq!(
        window.next_boundary_after(utc("2026-06-01T07:00:00Z")),
        Some(utc("2026-06-01T15:00:00Z"))
    );
    assert_eq!(
        window.next_boundary_after(utc("2026-06-01T15:00:00Z")),
        None
    );
    assert_eq!(window.next_start_after(utc("2026-06-01T08:00:00Z")), None);
    // Far in the future still counts.
    let later = Window::zoned_date_time("2031-06-01T09:00:00Z", "2031-06-01T17:00:00Z").unwrap();
    assert_eq!(
        later.next_start_after(utc("2026-01-01T00:00:00Z")),
        Some(utc("2031-06-01T09:00:00Z"))
    );
}

#[test]
fn zoned_date_time_rejects_bad_text_and_empty_windows() {
    let err = Window::zoned_date_time("2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z").unwrap_err();
    assert!(
        matches!(err, ScheduleError::EndNotAfterStart { .. }),
        "{err}"
    );
    let err = Window::zoned_date_time("2026-06-01T09:00:00Z", "2026-06-01T08:00:00Z").unwrap_err();
    assert!(err.to_string().contains("2026-06-01T08:00:00Z"), "{err}");
    for bad in [
        "2026-06-01",
        "2026-06-01 09:00",
        "tomorrow",
        "2026-06-01T09:00:00",
    ] {
        let err = Window::zoned_date_time(bad, "2027-01-01T00:00:00Z").unwrap_err();
        assert!(
            matches!(&err, ScheduleError::DateTime { input, .. } if input == bad),
            "{err}"
        );
    }
}

#[test]
fn local_time_across_spring_forward_night_is_seven_hours() {
    // Zurich: 2026-03-29 02:00 CET -> 03:00 CEST.
    let night = local("22:00", "06:00", "Europe/Zurich");
    assert_eq!(
        night.interval_containing(utc("2026-03-29T00:00:00Z")),
        Some(interval("2026-03-28T21:00:00Z", "2026-03-29T04:00:00Z"))
    );
    // And across the fall-back night it is nine.
    assert_eq!(
        night.interval_containing(utc("2026-10-25T00:00:00Z")),
        Some(interval("2026-10-24T20:00:00Z", "2026-10-25T05:00:00Z"))
    );
    // New York: 2026-03-08 and 2026-11-01.
    let night = local("22:00", "06:00", "America/New_York");
    assert_eq!(
        night.interval_containing(utc("2026-03-08T05:00:00Z")),
        Some(interval("2026-03-08T03:00:00Z", "2026-03-08T10:00:00Z"))
    );
    assert_eq!(
        night.interval_containing(utc("2026-11-01T05:00:00Z")),
        Some(interval("2026-11-01T02:00:00Z", "2026-11-01T11:00:00Z"))
    );
    // Sydney, southern hemisphere: falls back 2026-04-05, springs forward 2026-10-04.
    let night = local("22:00", "06:00", "Australia/Sydney");
    assert_eq!(
        night.interval_containing(utc("2026-04-04T15:00:00Z")),
        Some(interval("2026-04-04T11:00:00Z", "2026-04-04T20:00:00Z"))
    );
    assert_eq!(
        night.interval_containing(utc("2026-10-03T15:00:00Z")),
        Some(interval("2026-10-03T12:00:00Z", "2026-10-03T19:00:00Z"))
    );
}

#[test]
fn local_time_start_or_end_in_a_gap_is_the_end_of_the_gap() {
    // Zurich 2026-03-29: the wall clock never shows 02:00-02:59.
    let starts_in_gap = local("02:30", "05:00", "Europe/Zurich");
    assert_eq!(
        starts_in_gap.interval_containing(utc("2026-03-29T02:00:00Z")),
        Some(interval("2026-03-29T01:00:00Z", "2026-03-29T03:00:00Z"))
    );
    assert!(!starts_in_gap.contains(utc("2026-03-29T00:59:59Z")));
    let ends_in_gap = local("01:00", "02:30", "Europe/Zurich");
    assert_eq!(
        ends_in_gap.interval_containing(utc("2026-03-29T00:30:00Z")),
        Some(interval("2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"))
    );
    // Entirely inside the gap: closed that day; the day before and after are normal.
    let inside_gap = local("02:00", "02:45", "Europe/Zurich");
    assert_eq!(
        inside_gap.next_start_after(utc("2026-03-28T02:00:00Z")),
        Some(utc("2026-03-30T00:00:00Z"))
    );
    assert!(!inside_gap.contains(utc("2026-03-29T01:00:00Z")));
    // New York 2026-03-08: 02:00-02:59 never happens.
    let starts_in_gap = local("02:15", "04:00", "America/New_York");
    assert_eq!(
        starts_in_gap.interval_containing(utc("2026-03-08T07:30:00Z")),
        Some(interval("2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"))
    );
    // Lord Howe moves its clocks by half an hour (2026-10-04 02:00 -> 02:30 at 15:30Z).
    let starts_in_gap = local("02:10", "03:00", "Australia/Lord_Howe");
    assert_eq!(
        starts_in_gap.interval_containing(utc("2026-10-03T15:45:00Z")),
        Some(interval("2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z"))
    );
}

#[test]
fn local_time_start_or_end_in_a_fold_is_the_first_occurrence() {
    // Zurich 2026-10-25: 02:00-02:59 happens twice (00:00Z-00:59Z CEST, 01:00Z-01:59Z CET).
    let starts_in_fold = local("02:30", "04:00", "Europe/Zurich");
    assert_eq!(
        starts_in_fold.interval_containing(utc("2026-10-25T01:00:00Z")),
        Some(interval("2026-10-25T00:30:00Z", "2026-10-25T03:00:00Z"))
    );
    let ends_in_fold = local("01:00", "02:30", "Europe/Zurich");
    assert_eq!(
        ends_in_fold.interval_containing(utc("2026-10-25T00:00:00Z")),
        Some(interval("2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"))
    );
    // The wall clock shows 02:15 again at 01:15Z, but the window closed at the first 02:30.
    assert!(!ends_in_fold.contains(utc("2026-10-25T01:15:00Z")));
    // New York 2026-11-01: 01:00-01:59 happens twice (05:00Z EDT, 06:00Z EST).
    let in_fold = local("01:15", "01:45", "America/New_York");
    assert_open(
        &in_fold,
        &[
            ("2026-11-01T05:15:00Z", true),
            ("2026-11-01T05:45:00Z", false),
            ("2026-11-01T06:20:00Z", false),
        ],
    );
    // Sydney 2026-04-05: 02:00-02:59 happens twice (15:00Z AEDT, 16:00Z AEST on the 4th).
    let in_fold = local("02:00", "02:30", "Australia/Sydney");
    assert_eq!(
        in_fold.interval_containing(utc("2026-04-04T15:10:00Z")),
        Some(interval("2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z"))
    );
    assert!(!in_fold.contains(utc("2026-04-04T16:10:00Z")));
}

#[test]
fn local_time_days_filter_applies_to_the_day_from_falls_on() {
    let friday_nights =
        Window::local_time("22:00", "06:00", Some("Europe/Zurich"), Some(["Fri"])).unwrap();
    // 2026-06-05 is a Friday; Zurich is at +02:00.
    assert_open(
        &friday_nights,
        &[
            ("2026-06-05T19:59:00Z", false),
            ("2026-06-05T20:00:00Z", true),
            ("2026-06-06T03:59:00Z", true),
            ("2026-06-06T04:00:00Z", false),
            ("2026-06-06T21:00:00Z", false),
            ("2026-06-04T21:00:00Z", false),
        ],
    );
    assert_eq!(
        friday_nights.next_start_after(utc("2026-06-06T00:00:00Z")),
        Some(utc("2026-06-12T20:00:00Z"))
    );
    // 24-hour periods on consecutive days merge into one.
    let monday_and_tuesday = Window::local_time(
        "08:00",
        "08:00",
        None,
        Some(&vec!["monday".to_owned(), "TUE".to_owned()]),
    )
    .unwrap();
    assert_eq!(
        monday_and_tuesday.interval_containing(utc("2026-06-02T12:00:00Z")),
        Some(interval("2026-06-01T08:00:00Z", "2026-06-03T08:00:00Z"))
    );
    assert!(!monday_and_tuesday.contains(utc("2026-06-03T08:00:00Z")));
    let Window::LocalTime { days, tz, .. } = &monday_and_tuesday else {
        panic!("not LocalTime");
    };
    assert_eq!(*tz, Zone::utc());
    assert_eq!(
        *days,
        Some(
            [Weekday::Monday, Weekday::Tuesday]
                .into_iter()
                .collect::<ebb_schedule::Weekdays>()
        )
    );
}

#[test]
fn local_time_midnight_wrap_and_full_day() {
    let evening = local("16:00", "00:00", "UTC");
    assert_open(
        &evening,
        &[
            ("2026-02-28T15:59:59Z", false),
            ("2026-02-28T16:00:00Z", true),
            ("2026-02-28T23:59:59Z", true),
            ("2026-03-01T00:00:00Z", false),
        ],
    );
    assert_eq!(local("16:00", "24:00", "UTC"), evening);
    let all_day = local("06:00", "06:00", "Europe/Zurich");
    assert!(all_day.contains(utc("2026-03-29T01:30:00Z")));
    assert_eq!(
        all_day.next_boundary_after(utc("2026-03-29T01:30:00Z")),
        None
    );
    // Leap day.
    let leap = local("23:00", "01:00", "UTC");
    assert_eq!(
        leap.interval_containing(utc("2028-02-29T23:30:00Z")),
        Some(interval("2028-02-29T23:00:00Z", "2028-03-01T01:00:00Z"))
    );
}

#[test]
fn local_time_rejects_malformed_input() {
    let none = None::<&[&str]>;
    for (from, to) in [
        ("8:00", "09:00"),
        ("08:00", "9"),
        ("24:00", "08:00"),
        ("08:00", "24:01"),
    ] {
        let err = Window::local_time(from, to, None, none).unwrap_err();
        assert!(matches!(err, ScheduleError::TimeOfDay { .. }), "{err}");
    }
    assert_eq!(
        Window::local_time("08:00", "09:00", Some("Europe/Zürich"), none).unwrap_err(),
        ScheduleError::UnknownTimeZone("Europe/Zürich".into())
    );
    assert_eq!(
        Window::local_time("08:00", "09:00", None, Some(["Mon", "Funday"])).unwrap_err(),
        ScheduleError::Weekday("Funday".into())
    );
    assert_eq!(
        Window::local_time("08:00", "09:00", None, Some(Vec::<String>::new())).unwrap_err(),
        ScheduleError::NoDays
    );
}

#[test]
fn cron_window_closes_after_elapsed_duration() {
    // scaledown-window's example: weekday evenings in Zurich, eleven hours.
    let nights = Window::cron("0 20 * * 1-5", "11h", Some("Europe/Zurich")).unwrap();
    // Friday 2026-06-05 20:00 CEST = 18:00Z, closes Saturday 05:00Z.
    assert_eq!(
        nights.interval_containing(utc("2026-06-05T23:00:00Z")),
        Some(interval("2026-06-05T18:00:00Z", "2026-06-06T05:00:00Z"))
    );
    assert_open(
        &nights,
        &[
            ("2026-06-06T18:30:00Z", false),
            ("2026-06-07T18:30:00Z", false),
            ("2026-06-08T18:30:00Z", true),
        ],
    );
    // Across the spring-forward night: 11 real hours, so 08:00 CEST on the wall clock.
    let every_night = Window::cron("0 20 * * *", "11h", Some("Europe/Zurich")).unwrap();
    assert_eq!(
        every_night.interval_containing(utc("2026-03-29T00:00:00Z")),
        Some(interval("2026-03-28T19:00:00Z", "2026-03-29T06:00:00Z"))
    );
    // Across the fall-back night: 06:00 CET on the wall clock.
    assert_eq!(
        every_night.interval_containing(utc("2026-10-25T00:00:00Z")),
        Some(interval("2026-10-24T18:00:00Z", "2026-10-25T05:00:00Z"))
    );
    // New York, across its spring-forward night.
    let every_night = Window::cron("0 22 * * *", "8h", Some("America/New_York")).unwrap();
    assert_eq!(
        every_night.interval_containing(utc("2026-03-08T05:00:00Z")),
        Some(interval("2026-03-08T03:00:00Z", "2026-03-08T11:00:00Z"))
    );
}

#[test]
fn cron_window_across_midnight_month_end_and_leap_day() {
    let late = Window::cron("0 22 * * *", "4h", None).unwrap();
    assert_open(
        &late,
        &[
            ("2026-01-31T21:59:59Z", false),
            ("2026-01-31T22:00:00Z", true),
            ("2026-02-01T01:59:59Z", true),
            ("2026-02-01T02:00:00Z", false),
        ],
    );
    let month_end = Window::cron("0 0 31 * *", "24h", None).unwrap();
    assert!(month_end.contains(utc("2026-01-31T12:00:00Z")));
    assert_eq!(
        month_end.next_start_after(utc("2026-02-01T00:00:00Z")),
        Some(utc("2026-03-31T00:00:00Z"))
    );
    let leap_day = Window::cron("0 0 29 2 *", "1h", None).unwrap();
    assert_eq!(
        leap_day.next_start_after(utc("2026-01-01T00:00:00Z")),
        Some(utc("2028-02-29T00:00:00Z"))
    );
    assert_eq!(
        leap_day.next_boundary_after(utc("2028-02-29T00:30:00Z")),
        Some(utc("2028-02-29T01:00:00Z"))
    );
}

#[test]
fn cron_window_sunday_is_zero_or_seven() {
    for expression in ["0 0 * * 0", "0 0 * * 7", "0 0 * * SUN"] {
        let sunday = Window::cron(expression, "24h", None).unwrap();
        assert_open(
            &sunday,
            &[
                ("2026-06-06T23:59:59Z", false),
                ("2026-06-07T00:00:00Z", true),
                ("2026-06-07T23:59:59Z", true),
                ("2026-06-08T00:00:00Z", false),
            ],
        );
    }
}

#[test]
fn cron_window_in_gap_and_fold() {
    let window = Window::cron("30 2 * * *", "1h", Some("Europe/Zurich")).unwrap();
    // Gap: 02:30 does not exist on 2026-03-29, so it opens at 03:00 CEST (01:00Z).
    assert_eq!(
        window.interval_containing(utc("2026-03-29T01:30:00Z")),
        Some(interval("2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"))
    );
    // Fold: 02:30 happens twice on 2026-10-25; it opens once, at the first (00:30Z).
    assert_eq!(
        window.interval_containing(utc("2026-10-25T01:00:00Z")),
        Some(interval("2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"))
    );
    assert!(!window.contains(utc("2026-10-25T01:45:00Z")));
}

#[test]
fn cron_occurrences_that_overlap_or_touch_merge() {
    let hourly = Window::cron("0 * * * *", "90m", None).unwrap();
    let at = utc("2026-06-01T10:10:00Z");
    assert!(hourly.contains(at));
    // Never closes in UTC: no end within reach, and none found back a year either.
    assert_eq!(
        hourly.interval_containing(at),
        Some(Interval {
            start: None,
            end: None
        })
    );
    assert_eq!(hourly.next_boundary_after(at), None);
    let touching = Window::cron("0 8,9 * * *", "1h", None).unwrap();
    assert_eq!(
        touching.interval_containing(utc("2026-06-01T08:30:00Z")),
        Some(interval("2026-06-01T08:00:00Z", "2026-06-01T10:00:00Z"))
    );
    assert_eq!(
        touching.next_boundary_after(utc("2026-06-01T08:30:00Z")),
        Some(utc("2026-06-01T10:00:00Z"))
    );
    // In Zurich the repeated hour of the fall-back night has no fires (rule 2), so an hourly
    // 90-minute window closes for half an hour then.
    let hourly = Window::cron("0 * * * *", "90m", Some("Europe/Zurich")).unwrap();
    assert_open(
        &hourly,
        &[
            ("2026-10-25T01:29:59Z", true),
            ("2026-10-25T01:30:00Z", false),
            ("2026-10-25T01:59:59Z", false),
            ("2026-10-25T02:00:00Z", true),
        ],
    );
    assert_eq!(
        hourly.next_boundary_after(utc("2026-10-24T12:00:00Z")),
        Some(utc("2026-10-25T01:30:00Z"))
    );
    assert_eq!(
        hourly.interval_containing(utc("2027-06-01T00:00:00Z")),
        Some(interval("2026-10-25T02:00:00Z", "2027-10-31T01:30:00Z"))
    );
    // Right after the fold the next break is 371 days away, beyond the horizon: no end known.
    assert_eq!(
        hourly.interval_containing(utc("2026-10-25T03:00:00Z")),
        Some(Interval {
            start: Some(utc("2026-10-25T02:00:00Z")),
            end: None,
        })
    );
}

#[test]
fn windows_built_by_hand_with_odd_fields_never_panic() {
    let at = utc("2026-06-01T10:00:00Z");
    let never = [
        Window::ZonedDateTime {
            from: at,
            to: at - SignedDuration::from_hours(1),
        },
        Window::LocalTime {
            from: jiff::civil::Time::midnight(),
            to: jiff::civil::Time::midnight(),
            tz: Zone::utc(),
            days: Some(Weekdays::EMPTY),
        },
        Window::Cron {
            schedule: CronSchedule::parse("* * * * *", Zone::utc()).unwrap(),
            duration: SignedDuration::ZERO,
        },
    ];
    for window in never {
        assert!(!window.contains(at));
        assert_eq!(window.interval_containing(at), None);
        assert_eq!(window.next_boundary_after(at), None);
        assert_eq!(window.next_start_after(at), None);
    }
}

#[test]
fn extreme_instants_do_not_panic() {
    let windows = [
        Window::zoned_time("16:00+14:00", "02:00-12:00").unwrap(),
        Window::zoned_date_time("2026-06-01T09:00:00Z", "2026-06-02T09:00:00Z").unwrap(),
        local("22:00", "06:00", "Pacific/Kiritimati"),
        local("22:00", "06:00", "Etc/GMT+12"),
        Window::cron("*/5 * * * *", "1h", Some("Pacific/Apia")).unwrap(),
        Window::cron("0 0 29 2 *", "1h", None).unwrap(),
    ];
    for window in &windows {
        for at in [
            Timestamp::MIN,
            Timestamp::MAX,
            Timestamp::MIN + SignedDuration::from_hours(24),
            Timestamp::MAX - SignedDuration::from_hours(24),
            Timestamp::UNIX_EPOCH,
        ] {
            let _ = window.contains(at);
            let _ = window.interval_containing(at);
            let _ = window.next_boundary_after(at);
            let _ = window.next_start_after(at);
        }
    }
}

#[test]
fn a_daily_window_stays_open_when_the_clock_goes_back_past_midnight() {
    // Antarctica/Casey, 2010-03-04T15:00Z: 02:00 +11 back to 23:00 +08 on the day before. The
    // window that opened at 01:45 (+11, 14:45Z) is open while the clock shows the day before, and
    // closes when it shows 02:15 again (+08, 18:15Z).
    let window =
        Window::local_time("01:45", "02:15", Some("Antarctica/Casey"), None::<&[&str]>).unwrap();
    for open in [
        "2010-03-04T14:45:00Z",
        "2010-03-04T15:00:00Z",
        "2010-03-04T18:14:59Z",
    ] {
        assert!(window.contains(utc(open)), "{open}");
    }
    for closed in ["2010-03-04T14:44:59Z", "2010-03-04T18:15:00Z"] {
        assert!(!window.contains(utc(closed)), "{closed}");
    }
}

/// Found by the oracle: a window on one weekday whose occurrence lies inside that week's
/// spring-forward gap is empty that week, and the next one is two weeks on, not missed.
#[test]
fn a_weekly_window_lost_to_a_gap_opens_again_the_week_after() {
    // New York, Sundays 02:30-02:45; 2024-03-10 02:00 EST -> 03:00 EDT swallows it.
    let sundays =
        Window::local_time("02:30", "02:45", Some("America/New_York"), Some(["Sun"])).unwrap();
    let open = utc("2024-03-03T07:30:00Z");
    assert!(sundays.contains(open));
    assert_eq!(
        sundays.next_start_after(open),
        Some(utc("2024-03-17T06:30:00Z"))
    );
    assert_eq!(
        sundays.next_boundary_after(utc("2024-03-03T07:45:00Z")),
        Some(utc("2024-03-17T06:30:00Z"))
    );
}

/// A window open without end between DST changes (minutely, three minutes long) closes only
/// where a fall-back stretches the wait between two fire times to an hour: in Zurich after the
/// first pass of 02:59 on 2026-10-25 (fired 00:59Z, closed 01:02Z), open again at 03:00 CET
/// (02:00Z). Across the spring-forward gap (a one-minute wait in elapsed time) it stays open. In
/// UTC it never closes within the horizon. Each answer is quick: the walk jumps between offset
/// changes instead of stepping through half a million fire times.
#[test]
fn a_minutely_window_closes_only_at_the_fall_back() {
    let started = std::time::Instant::now();
    let zurich = Window::cron("* * * * *", "3m", Some("Europe/Zurich")).unwrap();
    let t = utc("2026-03-01T12:00:00Z");
    assert!(zurich.contains(t));
    assert_eq!(
        zurich.next_boundary_after(t),
        Some(utc("2026-10-25T01:02:00Z"))
    );
    assert!(
        zurich.contains(utc("2026-03-29T01:00:30Z")),
        "across the gap"
    );
    assert!(!zurich.contains(utc("2026-10-25T01:30:00Z")));
    assert_eq!(
        zurich.next_start_after(utc("2026-10-25T01:30:00Z")),
        Some(utc("2026-10-25T02:00:00Z"))
    );
    let everywhere = Window::cron("* * * * *", "3m", None).unwrap();
    assert_eq!(everywhere.next_boundary_after(t), None);
    assert!(
        everywhere
            .interval_containing(t)
            .is_some_and(|i| i.end.is_none())
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
