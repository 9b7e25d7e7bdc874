#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn week() -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/scaledown-week.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The documented behaviour over a week: scale-down is never enabled outside a window or the
/// upgrade, every window opens and closes on the second, and the windows save node-hours.
#[tokio::test(start_paused = true)]
async fn a_week_of_nights_never_enables_scale_down_outside_a_window() {
    let outcome = run("scaledown-week.yaml", &week()).await.unwrap();
    let s = &outcome.summary;
    assert_eq!(s["enabledOutsideWindowsSeconds"], 0, "{s:#}");
    assert_eq!(s["enabledOutsideWindowsMinutes"], 0.0, "{s:#}");
    assert!(s["slowestFollowSeconds"].as_i64().unwrap() <= 1, "{s:#}");
    // Monday to Thursday nights (4 x 11 h); Friday 20:00 runs into the weekend window until
    // Monday 00:00 Zurich (52 h merged); and the 2 h upgrade on Wednesday morning.
    assert_eq!(
        s["allowedMinutes"].as_f64().unwrap(),
        (4.0 * 11.0 + 52.0 + 2.0) * 60.0,
        "{s:#}"
    );
    assert_eq!(
        s["enabledMinutes"], s["allowedMinutes"],
        "enabled exactly while allowed"
    );
    assert!(s["nodeHoursSaved"].as_f64().unwrap() > 0.0, "{s:#}");
    assert!(s["nodesRemoved"].as_u64().unwrap() >= 8, "{s:#}");
    let timeline = outcome.timeline.text();
    assert!(timeline.contains("upgrade started"), "{timeline}");
}
