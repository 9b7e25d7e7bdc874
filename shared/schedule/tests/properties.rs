//! Properties over random windows and instants, and parsers fed arbitrary text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_schedule::Weekdays;
use ebb_schedule::{
    AnyOpen, CronSchedule, FirstMatch, Window, Zone, parse_duration, parse_time_zone,
};
use jiff::civil::Weekday;
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use ebb_testkit::zones::{DST_CHANGES, DST_ZONES as ZONES};

/// 2026-01-01T00:00:00Z.
const BASE: i64 = 1_767_225_600;

fn instant(seconds_after_base: i64) -> Timestamp {
    Timestamp::from_second(BASE + seconds_after_base)
        .ok()
        .unwrap()
}

/// Instants over two years, sometimes on a quarter hour (where boundaries fall), sometimes within
/// a day and a half of a DST change.
fn any_instant() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        (0i64..2 * 366 * 24 * 3600).prop_map(instant),
        (0i64..2 * 366 * 96).prop_map(|q| instant(q * 900)),
        (
            prop::sample::select(DST_CHANGES.to_vec()),
            -36 * 12..36 * 12i64
        )
            .prop_map(|(change, steps)| change.parse::<Timestamp>().unwrap()
                + SignedDuration::from_mins(5 * steps)),
    ]
}

fn quarter_hour() -> impl Strategy<Value = jiff::civil::Time> {
    (0i8..96).prop_map(|q| jiff::civil::Time::new(q / 4, (q % 4) * 15, 0, 0).unwrap())
}

fn any_window() -> impl Strategy<Value = Window> {
    let zoned_time = (
        quarter_hour(),
        quarter_hour(),
        prop::sample::select(vec![-5 * 3600, 0, 5 * 3600 + 1800, 14 * 3600]),
    )
        .prop_map(|(from, to, offset)| Window::ZonedTime {
            from,
            to,
            offset: jiff::tz::Offset::from_seconds(offset).unwrap(),
        });
    let one_off =
        (0i64..2 * 366 * 96, 1i64..60 * 96).prop_map(|(start, length)| Window::ZonedDateTime {
            from: instant(start * 900),
            to: instant((start + length) * 900),
        });
    let local_time = (
        quarter_hour(),
        quarter_hour(),
        prop::sample::select(ZONES.to_vec()),
        prop::option::of(1u8..128),
    )
        .prop_map(|(from, to, zone, days)| Window::LocalTime {
            from,
            to,
            tz: parse_time_zone(zone).unwrap(),
            days: days.map(|bits| {
                let mut set = Weekdays::EMPTY;
                for (i, day) in [
                    Weekday::Monday,
                    Weekday::Tuesday,
                    Weekday::Wednesday,
                    Weekday::Thursday,
                    Weekday::Friday,
                    Weekday::Saturday,
                    Weekday::Sunday,
                ]
                .into_iter()
                .enumerate()
                {
                    if bits & (1 << i) != 0 {
                        set.insert(day);
                    }
                }
                set
            }),
        });
    let cron = (
        0u32..60,
        0u32..24,
        prop::sample::select(vec![
            "{m} {h} * * *",
            "{m} {h} * * 1-5",
            "{m} {h} * * 0,6",
            "*/20 {h} * * *",
            "{m} */3 * * *",
            "{m} 1-3 * * *",
            "0 {h} 13 * 5",
            "{m} {h} 1,15,31 * *",
            "{m} {h} * 3,10 0",
        ]),
        prop::sample::select(ZONES.to_vec()),
        prop::sample::select(vec![5i64, 30, 60, 90, 180, 11 * 60, 24 * 60, 36 * 60]),
    )
        .prop_map(|(minute, hour, template, zone, minutes)| {
            let expression = template
                .replace("{m}", &minute.to_string())
                .replace("{h}", &hour.to_string());
            Window::Cron {
                schedule: CronSchedule::parse(&expression, parse_time_zone(zone).unwrap()).unwrap(),
                duration: SignedDuration::from_mins(minutes),
            }
        });
    prop_oneof![zoned_time, one_off, local_time, cron]
}

/// Instants strictly between `a` and `b` to sample.
fn samples_between(a: Timestamp, b: Timestamp, picks: &[u16]) -> Vec<Timestamp> {
    let span = b.duration_since(a).as_secs();
    if span < 2 {
        return Vec::new();
    }
    picks
        .iter()
        .map(|p| {
            a + SignedDuration::from_secs(1 + i64::from(*p) * (span - 2) / i64::from(u16::MAX))
        })
        .collect()
}

fn horizon() -> SignedDuration {
    SignedDuration::from_hours(24 * 21)
}

proptest! {
    // 256 cases by default; set PROPTEST_CASES for a longer hunt.
    #[test]
    fn contains_agrees_with_interval_containing(window in any_window(), t in any_instant()) {
        let interval = window.interval_containing(t);
        prop_assert_eq!(window.contains(t), interval.is_some());
        if let Some(interval) = interval {
            prop_assert!(interval.contains(t));
            if let Some(start) = interval.start {
                prop_assert!(window.contains(start));
                prop_assert!(!window.contains(start - SignedDuration::from_secs(1)));
            }
            if let Some(end) = interval.end {
                prop_assert!(!window.contains(end));
                prop_assert!(window.contains(end - SignedDuration::from_secs(1)));
            }
        }
    }

    #[test]
    fn next_boundary_is_the_first_change(
        window in any_window(),
        t in any_instant(),
        picks in prop::collection::vec(any::<u16>(), 8),
    ) {
        let open = window.contains(t);
        if let Some(boundary) = window.next_boundary_after(t) {
            prop_assert!(boundary > t);
            prop_assert_ne!(window.contains(boundary), open);
            for sample in samples_between(t, boundary, &picks) {
                prop_assert_eq!(window.contains(sample), open, "at {}", sample);
            }
            if !open {
                prop_assert_eq!(window.next_start_after(t), Some(boundary));
            }
        }
    }

    #[test]
    fn first_match_transitions_are_changes_and_nothing_changes_between(
        windows in prop::collection::vec(any_window(), 1..4),
        now in any_instant(),
        picks in prop::collection::vec(any::<u16>(), 6),
    ) {
        let ranges = FirstMatch::new(windows);
        let transitions = ranges.transitions(now, 12, horizon());
        let mut previous = (now, ranges.matched_at(now));
        for (t, matched) in &transitions {
            prop_assert!(*t > previous.0);
            prop_assert!(*t <= now + horizon());
            prop_assert_eq!(ranges.matched_at(*t), *matched);
            prop_assert_ne!(ranges.matched_at(*t - SignedDuration::from_secs(1)), *matched);
            prop_assert_ne!(*matched, previous.1);
            for sample in samples_between(previous.0, *t, &picks) {
                prop_assert_eq!(ranges.matched_at(sample), previous.1, "at {}", sample);
            }
            previous = (*t, *matched);
        }
        if transitions.len() < 12 {
            for sample in samples_between(previous.0, now + horizon(), &picks) {
                prop_assert_eq!(ranges.matched_at(sample), previous.1, "after, at {}", sample);
            }
        }
        prop_assert_eq!(
            ranges.next_transition(now).filter(|t| *t <= now + horizon()),
            transitions.first().map(|(t, _)| *t)
        );
    }

    #[test]
    fn any_open_transitions_alternate_and_nothing_flips_between(
        windows in prop::collection::vec(any_window(), 1..4),
        now in any_instant(),
        picks in prop::collection::vec(any::<u16>(), 6),
    ) {
        let schedule = AnyOpen::new(windows);
        let transitions = schedule.transitions(now, 12, horizon());
        let mut previous = (now, schedule.is_open(now));
        for (t, open) in &transitions {
            prop_assert!(*t > previous.0);
            prop_assert!(*t <= now + horizon());
            prop_assert_ne!(*open, previous.1, "a flip to the same value at {}", t);
            prop_assert_eq!(schedule.is_open(*t), *open);
            prop_assert_ne!(schedule.is_open(*t - SignedDuration::from_secs(1)), *open);
            for sample in samples_between(previous.0, *t, &picks) {
                prop_assert_eq!(schedule.is_open(sample), previous.1, "at {}", sample);
            }
            previous = (*t, *open);
        }
        if transitions.len() < 12 {
            for sample in samples_between(previous.0, now + horizon(), &picks) {
                prop_assert_eq!(schedule.is_open(sample), previous.1, "after, at {}", sample);
            }
        }
        prop_assert_eq!(schedule.open_at(now).is_some(), schedule.is_open(now));
        prop_assert_eq!(
            schedule.next_transition(now).filter(|t| *t <= now + horizon()),
            transitions.first().map(|(t, _)| *t)
        );
    }

    #[test]
    fn overlapping_windows_are_reported(
        windows in prop::collection::vec(any_window(), 2..4),
        t in any_instant(),
    ) {
        // Two windows open at the same random instant must be reported as overlapping.
        let ranges = FirstMatch::new(windows);
        let open: Vec<usize> = (0..ranges.windows().len())
            .filter(|i| ranges.windows()[*i].contains(t))
            .collect();
        let overlaps = ranges.overlaps().pairs;
        for (a, i) in open.iter().enumerate() {
            for j in &open[a + 1..] {
                let in_reference_year = matches!(ranges.windows()[*i], Window::ZonedDateTime { .. })
                    || matches!(ranges.windows()[*j], Window::ZonedDateTime { .. })
                    || !(matches!(ranges.windows()[*i], Window::Cron { .. })
                        || matches!(ranges.windows()[*j], Window::Cron { .. }));
                if in_reference_year {
                    prop_assert!(overlaps.contains(&(*i, *j)), "{} and {} at {}", i, j, t);
                }
            }
        }
    }

    #[test]
    fn cron_fires_are_strictly_after_and_last_fire_is_the_latest(
        minute in 0u32..60,
        hour in 0u32..24,
        zone in prop::sample::select(ZONES.to_vec()),
        t in any_instant(),
    ) {
        for expression in [
            format!("{minute} {hour} * * *"),
            format!("*/{} * * * *", minute.max(1)),
            format!("{minute} {hour} 29 2 *"),
        ] {
            let schedule = CronSchedule::parse(&expression, parse_time_zone(zone).unwrap()).unwrap();
            let fires: Vec<_> = schedule.fire_times_after(t).take(5).collect();
            prop_assert!(fires.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(fires.iter().all(|f| *f > t));
            let last = schedule.last_fire_at_or_before(t);
            if let Some(last) = last {
                prop_assert!(last <= t);
                prop_assert!(schedule.fire_times_after(last).next().is_none_or(|f| f > t));
                prop_assert_eq!(schedule.first_fire_at_or_after(last), Some(last));
            }
            if let Some(first) = fires.first() {
                prop_assert_eq!(schedule.last_fire_at_or_before(*first), Some(*first));
                let before = schedule.last_fire_at_or_before(*first - SignedDuration::from_secs(1));
                prop_assert_eq!(before, last);
            }
        }
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_text(text in any::<String>(), other in any::<String>()) {
        let _ = parse_duration(&text);
        let _ = parse_time_zone(&text);
        let _ = CronSchedule::parse(&text, Zone::utc());
        let _ = Window::zoned_time(&text, &other);
        let _ = Window::zoned_date_time(&text, &other);
        let _ = Window::local_time(&text, &other, Some(&text), Some([&other]));
        let _ = Window::cron(&text, &other, None);
    }

    #[test]
    fn parsers_never_panic_on_near_misses(
        cron in "[0-9*/,?LW#@a-zA-Z -]{0,30}",
        duration in "[0-9hms+ .-]{0,12}",
        clock in "[0-9:+Zz-]{0,12}",
        t in any_instant(),
    ) {
        let _ = parse_duration(&duration);
        let _ = Window::zoned_time(&clock, &clock);
        let _ = Window::local_time(&clock, &clock, None, None::<&[&str]>);
        if let Ok(schedule) = CronSchedule::parse(&cron, "Europe/Zurich".parse::<Zone>().unwrap()) {
            let _ = schedule.fire_times_after(t).take(3).count();
            let _ = schedule.last_fire_at_or_before(t);
        }
        if let Ok(window) = Window::cron(&cron, &duration, Some("America/New_York")) {
            let _ = window.contains(t);
            let _ = window.next_boundary_after(t);
        }
    }

    #[test]
    fn parse_duration_accepts_what_it_documents(h in 0u32..1000, m in 0u32..1000, s in 0u32..1000) {
        let text = format!("{h}h{m}m{s}s");
        let parsed = parse_duration(&text);
        if h == 0 && m == 0 && s == 0 {
            prop_assert!(parsed.is_err());
        } else {
            prop_assert_eq!(
                parsed.unwrap(),
                SignedDuration::from_secs(i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s))
            );
        }
    }
}
