#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn read(name: &str) -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn the_week_scenario_reads_with_its_objects_and_actors() {
    let s = read("scaledown-week.yaml");
    assert_eq!(s.name, "scaledown-week");
    assert_eq!(s.length(), SignedDuration::from_hours(168));
    assert_eq!(s.objects_of("ScaleDownSchedule").count(), 1);
    let cluster = s.actors.cluster.unwrap();
    assert_eq!(cluster.base_nodes, 4);
    assert_eq!(cluster.upgrades.len(), 1);
}

#[test]
fn a_wrong_field_is_named() {
    let wrong = Scenario::parse(
        "x.yaml",
        "name: x\nstart: 2026-03-09T00:00:00Z\nspan: 1h\nobjects: []\nactors: {clutser: {}}\n",
    )
    .unwrap_err();
    assert!(wrong.to_string().starts_with("x.yaml: "), "{wrong}");
    assert!(wrong.to_string().contains("clutser"), "{wrong}");
}
