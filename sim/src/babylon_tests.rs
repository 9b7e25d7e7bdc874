#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

fn t(minutes: i64) -> Timestamp {
    utc("2026-03-10T09:00:00Z") + SignedDuration::from_mins(minutes)
}

fn settings(provision: Spread, failure_share: f64) -> Settings {
    Settings {
        provision,
        failure_share,
    }
}

#[test]
fn raising_the_count_creates_seats_that_become_ready_after_provisioning() {
    let mut b = Babylon::new(
        t(0),
        "ws",
        settings(Spread::fixed(SignedDuration::from_mins(10)), 0.0),
    );
    let mut dice = Dice::seeded(1);
    b.set_count(t(0), 2, &mut dice);
    assert_eq!(b.assignments(), (0, 2), "assignments exist from the start");
    b.advance(t(5));
    assert!(b.claims().all(|(_, s)| s == ClaimState::Provisioning));
    b.advance(t(10));
    let names: Vec<&str> = b.claims().map(|(n, _)| n).collect();
    assert_eq!(names, ["ws-0", "ws-1"]);
    assert!(b.claims().all(|(_, s)| s == ClaimState::Ready));
    // Lowering the count takes nothing away.
    b.set_count(t(11), 1, &mut dice);
    assert_eq!(b.seats().len(), 2);
}

#[test]
fn users_take_ready_seats_or_wait_for_the_next_in_arrival_order() {
    let mut b = Babylon::new(
        t(0),
        "ws",
        settings(Spread::fixed(SignedDuration::from_mins(10)), 0.0),
    );
    let mut dice = Dice::seeded(1);
    b.set_count(t(0), 1, &mut dice);
    b.arrive(1, t(12));
    b.arrive(2, t(13));
    b.arrive(3, t(14));
    assert_eq!(b.assignments(), (1, 1));
    b.set_count(t(15), 3, &mut dice);
    b.advance(t(40));
    let waits: Vec<(u64, i64)> = b
        .seated()
        .iter()
        .map(|s| (s.user, s.waited.as_mins()))
        .collect();
    assert_eq!(waits, [(1, 0), (2, 12), (3, 11)]);
    assert_eq!(b.assignments(), (3, 3));
    assert_eq!(b.waiting().count(), 0);
}

#[test]
fn a_share_of_claims_fails_and_failed_seats_hold_nobody() {
    let mut b = Babylon::new(
        t(0),
        "ws",
        settings(
            Spread::between(SignedDuration::from_mins(8), SignedDuration::from_mins(20)),
            0.05,
        ),
    );
    let mut dice = Dice::seeded(42);
    b.set_count(t(0), 1000, &mut dice);
    b.advance(t(20));
    let failed = b.claims().filter(|(_, s)| *s == ClaimState::Failed).count();
    assert!((25..=75).contains(&failed), "{failed} of 1000 at 5 %");
    for user in 0..1000 {
        b.arrive(user, t(21));
    }
    assert_eq!(b.seated().len(), 1000 - failed);
    assert!(
        b.seats()
            .iter()
            .filter(|s| s.failed)
            .all(|s| s.user.is_none())
    );
    assert!(b.seats().iter().all(|s| {
        let d = s.settles_at.duration_since(t(0));
        d >= SignedDuration::from_mins(8) && d <= SignedDuration::from_mins(20)
    }));
}
