#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

fn start() -> Timestamp {
    utc("2026-03-10T09:00:00Z")
}

#[test]
fn a_burst_lands_within_its_span_sorted_and_the_same_for_a_seed() {
    let burst: Arrivals =
        serde_saphyr::from_str("burst: {count: 60, after: 5m, within: 10m}").unwrap();
    let instants = burst.instants(start(), &mut Dice::seeded(9));
    assert_eq!(instants.len(), 60);
    assert!(instants.windows(2).all(|w| w[0] <= w[1]), "sorted");
    let (first, last) = (instants[0], instants[59]);
    assert!(first >= start() + SignedDuration::from_mins(5));
    assert!(last <= start() + SignedDuration::from_mins(15));
    assert!(
        last.duration_since(first) > SignedDuration::from_mins(8),
        "spread over the span"
    );
    assert_eq!(instants, burst.instants(start(), &mut Dice::seeded(9)));
}

#[test]
fn a_ramp_is_evenly_spaced_and_draws_nothing_when_fixed() {
    let ramp: Arrivals = serde_saphyr::from_str("ramp: {count: 4, over: 1h}").unwrap();
    let instants = ramp.instants(start(), &mut Dice::seeded(1));
    let minutes: Vec<i64> = instants
        .iter()
        .map(|t| t.duration_since(start()).as_mins())
        .collect();
    assert_eq!(minutes, [0, 15, 30, 45]);
}

#[test]
fn a_list_is_the_scenarios_own_instants() {
    let list: Arrivals = serde_saphyr::from_str("at: [1h, 0, 30m]").unwrap();
    let minutes: Vec<i64> = list
        .instants(start(), &mut Dice::seeded(1))
        .iter()
        .map(|t| t.duration_since(start()).as_mins())
        .collect();
    assert_eq!(minutes, [0, 30, 60]);
}
