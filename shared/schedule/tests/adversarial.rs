//! No schedule the CRDs admit can stall a controller: every question a pass asks about the
//! costliest specs ([`ebb_testkit::adversarial`]) stays within a step budget, and the overlap
//! check within its own. Steps, not wall time: debug builds on shared cores make time useless
//! here; `cargo bench -p ebb-schedule` times the same questions in a release build.

#![allow(clippy::unwrap_used)]

use ebb_schedule::work::counted;
use ebb_schedule::{DEFAULT_HORIZON, OVERLAP_STEPS};
use ebb_testkit::adversarial::first_matches;
use ebb_testkit::utc;

/// The most steps one question of a pass may take (well under 10 ms in a release build).
const QUESTION_STEPS: u64 = 20_000;
/// What one step of the overlap check may run past its budget: the open period it was
/// computing when the budget ran out.
const OVERSHOOT: u64 = 5_000;

#[test]
fn every_question_on_the_costliest_specs_stays_within_its_budget() {
    for now in [
        utc("2026-03-20T10:17:00Z"),
        // New York and Berlin spring forward; a leap day.
        utc("2026-03-08T06:59:00Z"),
        utc("2026-03-29T00:59:30Z"),
        utc("2028-02-29T23:59:00Z"),
    ] {
        for (name, schedule) in first_matches() {
            within_budget(&format!("{name}: matched_at"), || schedule.matched_at(now));
            within_budget(&format!("{name}: next_transition"), || {
                schedule.next_transition(now)
            });
            within_budget(&format!("{name}: 10 transitions"), || {
                schedule.transitions(now, 10, DEFAULT_HORIZON)
            });
            // One window's questions, as the fuzzer asks them (the open period around `now`
            // of a window that chains: found by the fuzzer, a year walked back minute by minute).
            for (i, window) in schedule.windows().iter().enumerate() {
                within_budget(&format!("{name}: window {i}: interval_containing"), || {
                    window.interval_containing(now)
                });
                within_budget(&format!("{name}: window {i}: next_boundary_after"), || {
                    window.next_boundary_after(now)
                });
            }
        }
    }
}

/// Asks `question` and fails, naming it `what`, if it took more than [`QUESTION_STEPS`].
fn within_budget<T>(what: &str, question: impl FnOnce() -> T) {
    let (_, steps) = counted(question);
    assert!(steps <= QUESTION_STEPS, "{what} took {steps} steps");
}

#[test]
fn the_overlap_check_stays_within_its_budget_and_says_what_it_left() {
    for (name, schedule) in first_matches() {
        let (overlaps, steps) = counted(|| schedule.overlaps());
        assert!(
            steps <= OVERLAP_STEPS + OVERSHOOT,
            "{name}: the overlap check took {steps} steps"
        );
        let n = schedule.windows().len();
        let settled = overlaps.pairs.len() + overlaps.unsettled.len();
        assert!(settled <= n * (n - 1) / 2, "{name}");
        match name {
            // Apart on the wall clock: settled exactly near New York's changes, within the
            // budget. Ranges 60-63 repeat ranges 0-3, and `0/59` fires at minutes 0
            // and 59, as `59/59` (range 59) does.
            "64 weekday minute crons (New York)" => {
                assert!(overlaps.unsettled.is_empty(), "{name}: {overlaps:?}");
                assert_eq!(
                    overlaps.pairs,
                    [(0, 59), (0, 60), (1, 61), (2, 62), (3, 63), (59, 60)],
                    "{name}"
                );
                assert!(steps < OVERLAP_STEPS, "{name}: {steps} steps");
            }
            // Only a year's sweep settles a pair on two weekdays: the budget runs out, and the
            // pairs left are said to be unsettled, not reported apart.
            "64 minute crons, one weekday each" => {
                assert!(!overlaps.unsettled.is_empty(), "{name}");
                assert!(overlaps.pairs.contains(&(0, 7)), "{name}: same weekday");
            }
            _ => assert!(overlaps.unsettled.is_empty(), "{name}: {overlaps:?}"),
        }
    }
}
