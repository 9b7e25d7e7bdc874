#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn metrics_are_exposed_with_the_controller_prefix() {
    let mut registry = Registry::default();
    let m = Metrics::new(&mut registry);
    m.observe_stage(ScalerStage::PreScaling, 12.0);
    m.record_failure(ScalerStage::PreScaling);
    m.set_stage("data", "nifi", ScalerStage::Scaling);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("ebb_stackable_scaler_stage_duration_seconds_count{controller=\"stackable-scaler\",stage=\"PreScaling\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("ebb_stackable_scaler_failures_total{controller=\"stackable-scaler\",stage=\"PreScaling\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "ebb_stackable_scaler_stage{controller=\"stackable-scaler\",namespace=\"data\",name=\"nifi\",stage=\"Scaling\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "ebb_stackable_scaler_stage{controller=\"stackable-scaler\",namespace=\"data\",name=\"nifi\",stage=\"Idle\"} 0"
        ),
        "{text}"
    );
    m.forget("data", "nifi");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(!text.contains("name=\"nifi\""));
}
