//! Fixtures the decide tests share.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::*;
use ebb_crds::service_scaler::ServiceScalerSpec;
use ebb_schedule::Calendars;
use serde_json::{Value, json};

pub(crate) fn scaler(spec: Value) -> ServiceScaler {
    serde_json::from_value(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-1", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

pub(crate) fn spec(value: Value) -> ServiceScalerSpec {
    serde_json::from_value(value).unwrap()
}

pub(crate) fn udaan() -> ServiceScaler {
    serde_saphyr::from_str(include_str!(
        "../../../../examples/service-scaler-udaan.yaml"
    ))
    .unwrap()
}

pub(crate) fn schedule(value: Value) -> Schedule {
    Schedule::from_spec(&spec(value), &Calendars::new()).unwrap()
}

pub(crate) fn settings(min: i32, max: i32, cpu: Option<i32>, memory: Option<i32>) -> HpaSettings {
    HpaSettings {
        min_replicas: min,
        max_replicas: max,
        target_cpu_utilization: cpu,
        target_memory_utilization: memory,
        metric_targets: Vec::new(),
        hibernate: false,
    }
}

pub(crate) fn hpa_with(
    fields: &OwnedFields,
    owner_uid: Option<&str>,
    annotations: Value,
) -> HorizontalPodAutoscaler {
    let owners = owner_uid.map_or_else(Vec::new, |uid| {
        vec![
            json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler", "name": "web",
                   "uid": uid, "controller": true, "blockOwnerDeletion": true}),
        ]
    });
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop", "ownerReferences": owners,
                     "annotations": annotations},
        "spec": {
            "minReplicas": fields.min_replicas, "maxReplicas": fields.max_replicas,
            "metrics": fields.metrics,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        },
    }))
    .unwrap()
}

pub(crate) fn hpa(s: &HpaSettings, owned: bool) -> HorizontalPodAutoscaler {
    hpa_with(
        &OwnedFields::from_settings(s),
        owned.then_some("uid-1"),
        json!({}),
    )
}

pub(crate) fn errors_of(value: Value) -> Vec<(String, String)> {
    match Schedule::from_spec(&spec(value), &Calendars::new()) {
        Ok(_) => Vec::new(),
        Err(SpecErrors(errors)) => errors.into_iter().map(|e| (e.field, e.rule)).collect(),
    }
}

/// The ZonedTime spec used by most tests: defaults 2..10 cpu 60; range 0 08:00-12:00Z min 5.
pub(crate) fn office() -> Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5}}}
        ]
    })
}

/// A LocalTime range in `tz` (defaults 2..10, min 6 inside).
pub(crate) fn local_range(from: &str, to: &str, tz: &str) -> Schedule {
    schedule(
        json!({"hpa": {"minReplicas": 2, "maxReplicas": 10}, "timeRangeSpec": [
        {"kind": "LocalTime", "from": from, "to": to, "timeZone": tz,
         "replicaSpec": {"hpa": {"minReplicas": 6}}}]}),
    )
}
