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

/// The gauges move by one per observation (no scan of every object per pass) and always equal
/// the count of objects in each state.
#[test]
fn gauges_equal_the_counts_through_any_sequence() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let mut truth: HashMap<String, ManagedState> = HashMap::new();
    for step in 0..2_000usize {
        let key = format!("ns/s{}", (step * 7919) % 97);
        let state = STATES[(step * 31) % STATES.len()];
        if step % 5 == 0 {
            metrics.forget(&key);
            truth.remove(&key);
        } else {
            metrics.observe(&key, state);
            truth.insert(key, state);
        }
    }
    for state in STATES {
        let want = truth.values().filter(|s| **s == state).count() as i64;
        let got = metrics
            .managed
            .get_or_create(&StateLabels {
                state: state.as_str(),
            })
            .get();
        assert_eq!(got, want, "{}", state.as_str());
    }
}
