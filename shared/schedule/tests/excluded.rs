//! Excluded days (`Window::excluding`): the rule at exact instants, and an oracle that reads only
//! the zone's calendar dates and the window without exclusions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_schedule::{Calendars, ExcludedDays, ScheduleError, Window};
use ebb_testkit::utc;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, civil};
use proptest::prelude::*;

fn local(from: &str, to: &str, tz: &str) -> Window {
    Window::local_time(from, to, Some(tz), None::<&[&str]>).unwrap()
}

fn dates(entries: &[&str]) -> Vec<(civil::Date, civil::Date)> {
    ExcludedDays::parse(entries).unwrap()
}

#[test]
fn a_night_into_an_excluded_day_closes_at_midnight_and_one_out_of_it_opens_at_midnight() {
    let nights = local("22:00", "06:00", "Europe/Zurich").excluding(dates(&["2026-12-25"]));
    // 24 Dec 22:00 CET opens as usual, closes at 25 Dec 00:00 CET (23:00Z).
    assert!(nights.contains(utc("2026-12-24T21:00:00Z")));
    assert_eq!(
        nights.next_boundary_after(utc("2026-12-24T21:00:00Z")),
        Some(utc("2026-12-24T23:00:00Z"))
    );
    // Closed all of the 25th, the night into the 26th included, until 26 Dec 00:00 CET.
    assert!(!nights.contains(utc("2026-12-25T21:30:00Z")));
    assert_eq!(
        nights.next_start_after(utc("2026-12-24T23:00:00Z")),
        Some(utc("2026-12-25T23:00:00Z"))
    );
    let open = nights
        .interval_containing(utc("2026-12-26T01:00:00Z"))
        .unwrap();
    assert_eq!(open.start, Some(utc("2026-12-25T23:00:00Z")));
    assert_eq!(open.end, Some(utc("2026-12-26T05:00:00Z")));
}

#[test]
fn an_excluded_day_in_a_dst_week_is_the_local_day_23_hours_long() {
    // Zurich springs forward on 2026-03-29: that day runs 23:00Z on the 28th to 22:00Z.
    let always = local("00:00", "00:00", "Europe/Zurich").excluding(dates(&["2026-03-29"]));
    assert!(always.contains(utc("2026-03-28T22:59:59Z")));
    assert!(!always.contains(utc("2026-03-28T23:00:00Z")));
    assert!(!always.contains(utc("2026-03-29T21:59:59Z")));
    assert!(always.contains(utc("2026-03-29T22:00:00Z")));
    assert_eq!(
        always.next_boundary_after(utc("2026-03-29T12:00:00Z")),
        Some(utc("2026-03-29T22:00:00Z"))
    );
    // A cron window in New York skips its excluded Sunday (the spring-forward one) only.
    let sundays = Window::cron("0 6 * * 0", "4h", Some("America/New_York"))
        .unwrap()
        .excluding(dates(&["2026-03-08"]));
    assert_eq!(
        sundays.next_start_after(utc("2026-03-07T12:00:00Z")),
        Some(utc("2026-03-15T10:00:00Z"))
    );
}

#[test]
fn ranges_merge_and_bad_entries_are_named() {
    assert_eq!(
        dates(&["2026-12-31", "2026-12-24/2026-12-26", "2026-12-27"]),
        vec![
            ("2026-12-24".parse().unwrap(), "2026-12-27".parse().unwrap()),
            ("2026-12-31".parse().unwrap(), "2026-12-31".parse().unwrap()),
        ]
    );
    for bad in ["2026-13-01", "tomorrow", "2026-12-26/2026-12-24"] {
        let error = ExcludedDays::parse(&[bad]).unwrap_err().to_string();
        assert!(error.contains(bad), "{error}");
    }
    // No dates: the window itself.
    assert_eq!(
        local("08:00", "18:00", "UTC").excluding(Vec::new()),
        local("08:00", "18:00", "UTC")
    );
}

const ZONES: [&str; 4] = [
    "Europe/Zurich",
    "America/New_York",
    "Australia/Lord_Howe",
    "UTC",
];

fn window_strategy() -> impl Strategy<Value = (Window, &'static str)> {
    let zone = prop::sample::select(ZONES.to_vec());
    prop_oneof![
        (zone.clone(), 0u32..24, 0u32..4, 0u32..24, 0u32..4).prop_map(|(tz, h1, q1, h2, q2)| {
            let from = format!("{h1:02}:{:02}", q1 * 15);
            let to = format!("{h2:02}:{:02}", q2 * 15);
            (local(&from, &to, tz), tz)
        }),
        (zone, 0u32..24, 1i64..40).prop_map(|(tz, h, hours)| {
            let cron = format!("30 {h} * * *");
            (
                Window::cron(&cron, &format!("{}m", hours * 45), Some(tz)).unwrap(),
                tz,
            )
        }),
    ]
}

#[test]
fn a_calendar_is_looked_up_by_name_and_a_bad_one_says_which_date() {
    let mut calendars = Calendars::new();
    calendars.insert("ch", &["2026-12-26", "2026-12-24/2026-12-25", "2026-08-01"]);
    calendars.insert("broken", &["2026-12-24", "2026-02-30"]);
    // Sorted and merged, as excludeDates are.
    assert_eq!(
        calendars.dates("ch").unwrap(),
        dates(&["2026-08-01", "2026-12-24/2026-12-26"])
    );
    let broken = calendars.dates("broken").unwrap_err();
    assert!(matches!(broken, ScheduleError::CalendarInvalid { .. }));
    assert!(
        broken
            .to_string()
            .starts_with("HolidayCalendar \"broken\": invalid excluded date \"2026-02-30\""),
        "{broken}"
    );
    assert_eq!(
        calendars.dates("us").unwrap_err().to_string(),
        "HolidayCalendar \"us\" not found"
    );
    // Replaced by a later version of itself.
    calendars.insert("broken", &["2026-12-24"]);
    assert_eq!(calendars.dates("broken").unwrap(), dates(&["2026-12-24"]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Against the oracle, minute by minute over four days around DST changes: open exactly
    /// when the window without exclusions is and the local date is not excluded; every boundary
    /// the window reports is the next minute its state flips, and the open period's start is
    /// where it last flipped. The excluded dates come partly inline (`excludeDates`) and partly
    /// from a HolidayCalendar (`excludeCalendars`), in any order and overlapping.
    #[test]
    fn excluding_agrees_with_the_calendar(
        (window, tz) in window_strategy(),
        start_day in 0i64..12,
        excluded in prop::collection::vec((0i64..16, 0i64..3), 1..4),
        inline in 0usize..4,
    ) {
        let base: civil::Date = "2026-03-02".parse().unwrap();
        let entries: Vec<String> = excluded
            .iter()
            .map(|(d, len)| {
                let first = base.checked_add(SignedDuration::from_hours(24 * d)).unwrap();
                let last = first.checked_add(SignedDuration::from_hours(24 * len)).unwrap();
                format!("{first}/{last}")
            })
            .collect();
        let days = ExcludedDays::parse(&entries).unwrap();
        // As a window naming a calendar gathers them: its own dates, then the calendar's.
        let (own, named) = entries.split_at(inline.min(entries.len()));
        let mut calendars = Calendars::new();
        calendars.insert("holidays", named);
        let mut gathered = ExcludedDays::parse(own).unwrap();
        gathered.extend_from_slice(calendars.dates("holidays").unwrap());
        let cut = window.clone().excluding(gathered);
        let zone = TimeZone::get(tz).unwrap();
        let excluded_at = |t: Timestamp| {
            let date = zone.to_datetime(t).date();
            days.iter().any(|(first, last)| *first <= date && date <= *last)
        };
        let oracle = |t: Timestamp| window.contains(t) && !excluded_at(t);
        let first = base.checked_add(SignedDuration::from_hours(24 * start_day)).unwrap();
        let t0 = zone.to_zoned(first.to_datetime(civil::Time::midnight())).unwrap().timestamp();
        let minute = SignedDuration::from_mins(1);
        let mut t = t0;
        let mut state = oracle(t);
        let mut last_flip: Option<Timestamp> = None;
        let mut boundary = cut.next_boundary_after(t);
        for _ in 0..(4 * 24 * 60) {
            prop_assert_eq!(cut.contains(t), state, "contains at {}", t);
            if let (true, Some(flip), Some(interval)) = (state, last_flip, cut.interval_containing(t)) {
                prop_assert_eq!(interval.start, Some(flip), "start of the period at {}", t);
            }
            let next = t.checked_add(minute).unwrap();
            let next_state = oracle(next);
            if next_state != state {
                prop_assert_eq!(boundary, Some(next), "boundary after {}", t);
                last_flip = Some(next);
                boundary = cut.next_boundary_after(next);
            } else {
                prop_assert!(boundary.is_none_or(|b| b > next), "no flip at {:?}", boundary);
            }
            t = next;
            state = next_state;
        }
    }
}
