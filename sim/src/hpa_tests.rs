#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

fn bounds(min: i32, max: i32) -> Bounds {
    Bounds {
        min,
        max,
        target_utilization: 50.0,
    }
}

fn at(seconds: i64) -> Timestamp {
    utc("2026-03-10T09:00:00Z") + SignedDuration::from_secs(seconds)
}

#[test]
fn the_formula_rounds_up_and_ignores_changes_within_the_tolerance() {
    assert_eq!(recommendation(4, Some(100.0), 50.0), 8);
    assert_eq!(recommendation(3, Some(60.0), 50.0), 4, "ceil(3.6)");
    assert_eq!(
        recommendation(10, Some(54.0), 50.0),
        10,
        "8 % off: within 10 %"
    );
    assert_eq!(recommendation(10, Some(46.0), 50.0), 10);
    assert_eq!(
        recommendation(10, Some(56.0), 50.0),
        12,
        "12 % off: ceil(11.2)"
    );
    assert_eq!(recommendation(10, Some(20.0), 50.0), 4);
    assert_eq!(recommendation(10, None, 50.0), 10, "no metrics, no change");
}

#[test]
fn scale_up_is_limited_to_double_or_four_pods_per_period() {
    let mut hpa = Hpa::new();
    // 1 pod at 1000 %: wants 20; +4 beats +100 % from 1.
    assert_eq!(hpa.sync(at(0), &bounds(1, 100), 1, Some(1000.0)), 5);
    // A period later, from 5: +100 % (10) beats +4 (9).
    assert_eq!(hpa.sync(at(15), &bounds(1, 100), 5, Some(1000.0)), 10);
    assert_eq!(hpa.sync(at(30), &bounds(1, 100), 10, Some(1000.0)), 20);
    assert_eq!(hpa.sync(at(45), &bounds(1, 100), 20, Some(1000.0)), 40);
}

#[test]
fn scale_ups_within_one_period_share_its_limit() {
    let mut hpa = Hpa::new();
    assert_eq!(hpa.sync(at(0), &bounds(1, 100), 2, Some(1000.0)), 6);
    // Five seconds later, still in the period that started from 2: at most 6.
    assert_eq!(hpa.sync(at(5), &bounds(1, 100), 6, Some(1000.0)), 6);
}

#[test]
fn scale_down_waits_for_the_stabilization_window() {
    let mut hpa = Hpa::new();
    let b = bounds(1, 100);
    assert_eq!(hpa.sync(at(0), &b, 10, Some(50.0)), 10);
    // Load drops: the recommendation is 2, but 10 was recommended within five minutes.
    for s in (15..300).step_by(15) {
        assert_eq!(hpa.sync(at(s), &b, 10, Some(10.0)), 10, "at {s}s");
    }
    // Five minutes after the last recommendation of 10, the drop takes effect.
    assert_eq!(hpa.sync(at(300), &b, 10, Some(10.0)), 2);
}

#[test]
fn bounds_clamp_and_move_an_out_of_range_target_at_once() {
    let mut hpa = Hpa::new();
    assert_eq!(hpa.sync(at(0), &bounds(1, 8), 4, Some(1000.0)), 8, "max");
    assert_eq!(
        hpa.sync(at(15), &bounds(12, 20), 8, Some(50.0)),
        12,
        "raised min"
    );
    assert_eq!(
        hpa.sync(at(30), &bounds(1, 5), 12, Some(50.0)),
        5,
        "lowered max"
    );
    assert_eq!(
        hpa.sync(at(45), &bounds(3, 5), 5, Some(1.0)),
        5,
        "stabilized"
    );
    let mut fresh = Hpa::new();
    assert_eq!(fresh.sync(at(0), &bounds(3, 5), 4, Some(1.0)), 3, "min");
}

#[test]
fn a_target_scaled_to_zero_is_left_alone() {
    let mut hpa = Hpa::new();
    assert_eq!(hpa.sync(at(0), &bounds(1, 10), 0, Some(500.0)), 0);
}
