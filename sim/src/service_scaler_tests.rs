#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn seed_001() -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/seed-001-provisioners.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Seed 001's point: pre-scaling before a workshop cuts what users wait for a provisioner, and
/// every job is served either way.
#[tokio::test(start_paused = true)]
async fn pre_scaling_cuts_the_wait_for_a_provisioner() {
    let outcome = run("seed-001-provisioners.yaml", &seed_001())
        .await
        .unwrap();
    let (with, alone) = (
        &outcome.summary["withServiceScaler"],
        &outcome.summary["hpaAlone"],
    );
    assert_eq!(with["jobsNeverStarted"], 0, "{:#}", outcome.summary);
    assert_eq!(alone["jobsNeverStarted"], 0, "{:#}", outcome.summary);
    assert_eq!(with["waits"]["users"], 460);
    let p95 = |s: &Value| s["waits"]["p95Seconds"].as_i64().unwrap();
    assert!(p95(with) < p95(alone), "{:#}", outcome.summary);
    let timeline = outcome.timeline.text();
    assert!(timeline.contains("service-scaler"), "{timeline}");
}
