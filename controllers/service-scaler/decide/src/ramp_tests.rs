//! Tests of the ramp (`ramp.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::*;
use ebb_testkit::utc;
use jiff::SignedDuration;
use proptest::prelude::*;

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
