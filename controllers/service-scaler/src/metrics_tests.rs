#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use prometheus_client::encoding::text::encode;

#[test]
fn gauge_follows_observations_and_counter_counts_writes() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    metrics.observe("a/x", ManagedState::Active);
    metrics.observe("a/y", ManagedState::Active);
    metrics.observe("a/y", ManagedState::Paused);
    metrics.forget("a/x");
    metrics.forget("a/unknown");
    metrics.count_write(WriteReason::Transition);
    metrics.count_write(WriteReason::Transition);
    metrics.count_write(WriteReason::Create);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"active\"} 0",
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"paused\"} 1",
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"transition\"} 2",
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"create\"} 1",
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
}
