//! How long the questions a controller asks on every reconcile take.
//!
//! `cargo bench -p ebb-schedule` (a plain timing loop with `std::time::Instant`; prints the median
//! of several rounds per question).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;
use jiff::Timestamp;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ebb_schedule::{AnyOpen, DEFAULT_HORIZON, FirstMatch, Window};

/// Median time per call over a few rounds of `iterations` calls, printed.
fn time<T>(label: &str, iterations: u32, f: impl FnMut() -> T) {
    println!("{label:<72} {:>12.1?}", median(iterations, f));
}

/// Median time per call over seven rounds of `iterations` calls.
fn median<T>(iterations: u32, mut f: impl FnMut() -> T) -> Duration {
    let mut rounds: Vec<Duration> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                black_box(f());
            }
            start.elapsed() / iterations
        })
        .collect();
    rounds.sort();
    rounds[rounds.len() / 2]
}

/// A schedule of either kind, asked the same two questions.
enum Schedule<'a> {
    First(&'a FirstMatch),
    Any(&'a AnyOpen),
}

impl Schedule<'_> {
    fn open_at(&self, t: Timestamp) -> Option<usize> {
        match self {
            Self::First(s) => s.matched_at(t),
            Self::Any(s) => s.open_at(t),
        }
    }

    fn next_transition(&self, t: Timestamp) -> Option<Timestamp> {
        match self {
            Self::First(s) => s.next_transition(t),
            Self::Any(s) => s.next_transition(t),
        }
    }
}

/// [`time`] as a rate, with the verdict against 1 M calls/s.
fn rate<T>(label: &str, iterations: u32, f: impl FnMut() -> T) {
    let per_call = median(iterations, f);
    let per_second = 1.0 / per_call.as_secs_f64();
    let verdict = if per_second >= 1e6 { "yes" } else { "MISSED" };
    println!("{label:<58} {per_call:>10.1?} {per_second:>12.0} {verdict:>8}");
}

fn main() {
    let now = utc("2026-03-20T10:17:00Z");
    let udaan = FirstMatch::new(vec![
        Window::zoned_time("16:00+05:30", "00:00+05:30").unwrap(),
        Window::zoned_time("00:00+05:30", "08:00+05:30").unwrap(),
    ]);
    let mixed = FirstMatch::new(vec![
        Window::zoned_date_time("2026-04-01T06:00:00Z", "2026-04-03T18:00:00Z").unwrap(),
        Window::local_time(
            "08:00",
            "18:00",
            Some("Europe/Zurich"),
            Some(["Mon", "Tue", "Wed", "Thu", "Fri"]),
        )
        .unwrap(),
        Window::local_time("22:00", "06:00", Some("America/New_York"), None::<&[&str]>).unwrap(),
        Window::cron("30 7 * * 1-5", "90m", Some("Australia/Sydney")).unwrap(),
        Window::zoned_time("12:00+05:30", "14:00+05:30").unwrap(),
    ]);
    let nights = AnyOpen::new(vec![
        Window::cron("0 20 * * 1-5", "11h", Some("Europe/Zurich")).unwrap(),
        Window::cron("0 8 * * 0,6", "12h", Some("Europe/Zurich")).unwrap(),
        Window::local_time("12:00", "13:00", Some("Europe/Zurich"), None::<&[&str]>).unwrap(),
    ]);
    let dense = AnyOpen::new(vec![
        Window::cron("*/15 * * * *", "5m", Some("Europe/Zurich")).unwrap(),
    ]);
    let always = AnyOpen::new(vec![
        Window::zoned_time("08:00Z", "20:00Z").unwrap(),
        Window::zoned_time("20:00Z", "08:00Z").unwrap(),
    ]);

    // The two questions every reconcile asks, per schedule, against the target of 1 M calls/s
    // per core (1 µs a call).
    println!(
        "{:<58} {:>10} {:>12} {:>8}",
        "every reconcile (one core)", "per call", "calls/s", "≥ 1 M/s"
    );
    let schedules: [(&str, Schedule); 5] = [
        ("udaan: 2 ZonedTime (FirstMatch)", Schedule::First(&udaan)),
        ("5 mixed windows (FirstMatch)", Schedule::First(&mixed)),
        (
            "Zurich nights + weekends + noon (AnyOpen)",
            Schedule::Any(&nights),
        ),
        ("*/15 5m cron (AnyOpen)", Schedule::Any(&dense)),
        (
            "two complementary windows, never flips (AnyOpen)",
            Schedule::Any(&always),
        ),
    ];
    for (name, schedule) in &schedules {
        rate(&format!("{name}: open at now"), 20_000, || {
            schedule.open_at(now)
        });
        let iterations = if name.contains("never flips") {
            20
        } else {
            5_000
        };
        rate(&format!("{name}: next_transition"), iterations, || {
            schedule.next_transition(now)
        });
    }
    println!();
    println!(
        "{:<72} {:>12}",
        "question (now = 2026-03-20, horizon 367 days)", "per call"
    );
    time(
        "parse: Window::cron(\"0 20 * * 1-5\", \"11h\", Europe/Zurich)",
        2_000,
        || Window::cron("0 20 * * 1-5", "11h", Some("Europe/Zurich")).unwrap(),
    );
    time(
        "FirstMatch udaan (2 ZonedTime): next_transition",
        20_000,
        || udaan.next_transition(now),
    );
    time("FirstMatch udaan: transitions(limit 10)", 20_000, || {
        udaan.transitions(now, 10, DEFAULT_HORIZON)
    });
    time(
        "FirstMatch udaan: transitions(whole year, 734 changes)",
        100,
        || udaan.transitions(now, usize::MAX, DEFAULT_HORIZON),
    );
    time("FirstMatch 5 mixed windows: matched_at", 20_000, || {
        mixed.matched_at(now)
    });
    time("FirstMatch 5 mixed windows: next_transition", 5_000, || {
        mixed.next_transition(now)
    });
    time(
        "FirstMatch 5 mixed windows: transitions(limit 10)",
        2_000,
        || mixed.transitions(now, 10, DEFAULT_HORIZON),
    );
    time(
        "FirstMatch 5 mixed windows: transitions(whole year)",
        20,
        || mixed.transitions(now, usize::MAX, DEFAULT_HORIZON),
    );
    time(
        "FirstMatch 5 mixed windows: overlaps (reference year sweep)",
        20,
        || mixed.overlaps().pairs,
    );
    time(
        "AnyOpen weekday nights + weekends + noon (Zurich): next_transition",
        5_000,
        || nights.next_transition(now),
    );
    time(
        "AnyOpen weekday nights + weekends + noon: transitions(limit 10)",
        2_000,
        || nights.transitions(now, 10, DEFAULT_HORIZON),
    );
    time(
        "AnyOpen weekday nights + weekends + noon: transitions(whole year)",
        20,
        || nights.transitions(now, usize::MAX, DEFAULT_HORIZON),
    );
    time("AnyOpen */15 5m cron: transitions(limit 10)", 2_000, || {
        dense.transitions(now, 10, DEFAULT_HORIZON)
    });
    time(
        "AnyOpen */15 5m cron: transitions(whole year, 70k flips)",
        3,
        || dense.transitions(now, usize::MAX, DEFAULT_HORIZON),
    );
    time(
        "AnyOpen two complementary windows (never flips): next_transition",
        20,
        || always.next_transition(now),
    );

    adversarial(now);
}

/// The specs the CRDs admit that cost the most (issue 46): each question a pass asks, and the
/// overlap check once per generation. Targets: 10 ms a question, 100 ms the overlap check.
fn adversarial(now: Timestamp) {
    println!();
    println!(
        "{:<72} {:>12}",
        "adversarial specs (targets: 10 ms a question, 100 ms overlaps)", "per call"
    );
    for (name, schedule) in ebb_testkit::adversarial::first_matches() {
        time(&format!("{name}: matched_at"), 20, || {
            schedule.matched_at(now)
        });
        time(&format!("{name}: next_transition"), 5, || {
            schedule.next_transition(now)
        });
        time(&format!("{name}: transitions(limit 10)"), 5, || {
            schedule.transitions(now, 10, DEFAULT_HORIZON)
        });
        time(&format!("{name}: overlaps"), 1, || schedule.overlaps());
        let (overlaps, steps) = ebb_schedule::work::counted(|| schedule.overlaps());
        println!(
            "{:<72} {:>12}",
            format!(
                "  {} pairs overlap, {} unsettled, in {steps} steps",
                overlaps.pairs.len(),
                overlaps.unsettled.len()
            ),
            ""
        );
    }
}
