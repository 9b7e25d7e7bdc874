#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

#[test]
fn the_timeline_is_in_time_order_and_keeps_the_order_of_one_instant() {
    let mut t = Timeline::default();
    t.add(utc("2026-03-10T10:00:00Z"), "hpa", "scaled to 4");
    t.add(
        utc("2026-03-10T09:00:00Z"),
        "service-scaler",
        "minReplicas 2 -> 10",
    );
    t.add(utc("2026-03-10T10:00:00Z"), "users", "12 arrived");
    let whats: Vec<&str> = t.entries().iter().map(|e| e.what.as_str()).collect();
    assert_eq!(whats, ["minReplicas 2 -> 10", "scaled to 4", "12 arrived"]);
    assert!(t.text().starts_with("2026-03-10T09:00:00Z  service-scaler"));
}

#[test]
fn waits_use_nearest_rank_percentiles() {
    let waits: Vec<SignedDuration> = (1..=20)
        .map(SignedDuration::from_secs)
        .chain([SignedDuration::ZERO; 80])
        .collect();
    let w = Waits::of(&waits);
    assert_eq!(w.users, 100);
    assert_eq!(w.waited, 20);
    assert_eq!(w.p50_seconds, 0);
    assert_eq!(w.p95_seconds, 15);
    assert_eq!(w.max_seconds, 20);
    assert_eq!(Waits::of(&[]).p95_seconds, 0);
    assert_eq!(percentile(&[7], 95), 7);
}
