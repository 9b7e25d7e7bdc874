#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn mins(m: i64) -> SignedDuration {
    SignedDuration::from_mins(m)
}

#[test]
fn the_same_seed_draws_the_same_sequence() {
    let spread = Spread::between(mins(8), mins(20));
    let draw = |seed| {
        let mut dice = Dice::seeded(seed);
        (0..50)
            .map(|_| (dice.duration(&spread), dice.chance(0.05)))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8), "another seed, another sequence");
}

#[test]
fn durations_stay_within_their_spread_and_cover_it() {
    let spread = Spread::between(mins(8), mins(20));
    let mut dice = Dice::seeded(1);
    let drawn: Vec<SignedDuration> = (0..2000).map(|_| dice.duration(&spread)).collect();
    assert!(drawn.iter().all(|d| *d >= mins(8) && *d <= mins(20)));
    assert!(drawn.iter().any(|d| *d < mins(9)), "the low end is reached");
    assert!(
        drawn.iter().any(|d| *d > mins(19)),
        "the high end is reached"
    );
    assert_eq!(dice.duration(&Spread::fixed(mins(3))), mins(3));
}

#[test]
fn chance_follows_its_share() {
    let mut dice = Dice::seeded(3);
    let hits = (0..10_000).filter(|_| dice.chance(0.05)).count();
    assert!((400..=600).contains(&hits), "{hits} of 10000 at 5 %");
    assert!(!dice.chance(0.0));
    assert!(dice.chance(1.0));
}

#[test]
fn spreads_read_as_a_scenario_writes_them() {
    let fixed: Spread = serde_saphyr::from_str("3m").unwrap();
    assert_eq!(fixed, Spread::fixed(mins(3)));
    let between: Spread = serde_saphyr::from_str("{min: 8m, max: 20m}").unwrap();
    assert_eq!(between, Spread::between(mins(8), mins(20)));
    let wrong = serde_saphyr::from_str::<Spread>("{min: 20m, max: 8m}").unwrap_err();
    assert!(
        wrong
            .to_string()
            .contains("min (20m) is longer than max (8m)"),
        "{wrong}"
    );
    let wrong = serde_saphyr::from_str::<Spread>("soon").unwrap_err();
    assert!(
        wrong.to_string().contains("\"soon\" is not a duration"),
        "{wrong}"
    );
}
