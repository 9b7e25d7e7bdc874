#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn scenario(name: &str) -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn a_field_is_named_by_the_end_of_its_path_and_its_range_is_spread_evenly() {
    let rush = scenario("workshop-rush.yaml");
    let a = axis(&rush, "threshold=0.6..0.9").unwrap();
    assert_eq!(a.pointer, "/spec/autoScaling/threshold");
    assert_eq!(
        a.values,
        [0.6, 0.7, 0.8, 0.9].map(|v| Number::from_f64(v).unwrap())
    );
    let b = axis(&rush, "maxProvisions=60..80:3").unwrap();
    assert_eq!(b.values, [60, 70, 80].map(Number::from));
    let seed = scenario("seed-001-provisioners.yaml");
    let c = axis(
        &seed,
        "timeRangeSpec[2].replicaSpec.hpa.minReplicas=40..100:4",
    )
    .unwrap();
    assert_eq!(
        c.pointer,
        "/spec/timeRangeSpec/2/replicaSpec/hpa/minReplicas"
    );
}

#[test]
fn a_name_that_matches_no_field_or_several_says_so() {
    let seed = scenario("seed-001-provisioners.yaml");
    let none = axis(&seed, "nope=1..2").unwrap_err();
    assert!(none.contains("no numeric field"), "{none}");
    let many = axis(&seed, "minReplicas=1..2").unwrap_err();
    assert!(many.contains("several fields"), "{many}");
    assert!(
        many.contains("ServiceScaler: spec.timeRangeSpec[0].replicaSpec.hpa.minReplicas"),
        "{many}"
    );
    assert!(axis(&seed, "leadTime").is_err());
    assert!(axis(&seed, "ramp=2..1").is_err());
}

/// The workshop question: which threshold and scale factor keep every attendee's wait within a
/// bound for the fewest seat-minutes. A lower threshold and a larger factor scale sooner.
#[test]
fn the_sweep_names_the_cheapest_setting_within_the_bound() {
    let rush = scenario("workshop-rush.yaml");
    let axes = vec![
        axis(&rush, "threshold=0.5..0.8:2").unwrap(),
        axis(&rush, "scaleFactor=1.5..3:2").unwrap(),
    ];
    let sweep = run_grid(
        "rush",
        &rush,
        &axes,
        "seatMinutes",
        "waits.maxSeconds",
        SignedDuration::from_hours(2),
    )
    .unwrap();
    assert_eq!(sweep.rows.len(), 4);
    let cheapest = sweep.cheapest.clone().unwrap();
    assert!(
        sweep
            .rows
            .iter()
            .filter(|r| r.within)
            .all(|r| r.cost >= cheapest.cost)
    );
    let waits: Vec<f64> = sweep.rows.iter().map(|r| r.wait_seconds).collect();
    // Sooner and bigger steps: the most eager setting makes the shortest longest wait.
    let eager = sweep
        .rows
        .iter()
        .find(|r| r.setting[0].1 == 0.5 && r.setting[1].1 == 3.0)
        .unwrap();
    assert_eq!(
        eager.wait_seconds,
        waits.iter().copied().fold(f64::MAX, f64::min),
        "{sweep:#?}"
    );
    let text = render(&sweep, OutputFormat::Text);
    assert!(text.contains("cheapest within 7200s: threshold="), "{text}");
}
