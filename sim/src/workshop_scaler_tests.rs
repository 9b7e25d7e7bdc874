#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn rush() -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/workshop-rush.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// workshop-scaler's documented behaviour in a rush: it scales up as seats fill, never starts a
/// second scale-up while one is in flight, and stops at maxProvisions.
#[tokio::test(start_paused = true)]
async fn a_rush_scales_up_one_step_at_a_time_until_everyone_is_seated() {
    let outcome = run("workshop-rush.yaml", &rush()).await.unwrap();
    let s = &outcome.summary;
    assert_eq!(s["overlappingScaleUps"], 0, "{s:#}");
    assert!(s["scaleUps"].as_u64().unwrap() >= 2, "{s:#}");
    let count = s["count"].as_array().unwrap();
    assert_eq!(count[0], 20);
    assert!(
        count[1].as_i64().unwrap() <= 70,
        "never past maxProvisions: {s:#}"
    );
    assert!(count[1].as_i64().unwrap() >= 60, "{s:#}");
    assert_eq!(
        s["waits"]["users"],
        60 - s["usersNeverSeated"].as_u64().unwrap(),
        "{s:#}"
    );
    assert!(
        s["waits"]["waited"].as_u64().unwrap() > 0,
        "a rush makes someone wait: {s:#}"
    );
}
