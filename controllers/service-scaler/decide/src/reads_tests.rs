#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use serde_json::json;

use crate::fixtures::*;
use crate::*;

fn ranges(hibernate: bool) -> serde_json::Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
             "excludeCalendars": ["holidays"],
             "replicaSpec": {"hibernate": hibernate, "hpa": {"maxReplicas": 4}}}
        ]
    })
}

fn hpa_targeting(kind: &str, name: &str) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"maxReplicas": 3,
                 "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name}}
    }))
    .unwrap()
}

#[test]
fn a_pass_reads_its_hpa_and_calendars_and_a_scale_only_where_a_hibernation_concerns_it() {
    let awake = scaler(ranges(false));
    let read = reads(&awake);
    assert_eq!(read.hpa, "web");
    assert_eq!(read.calendars, ["holidays"]);
    assert!(!read.hibernation);
    assert_eq!(
        read.scale(&awake, Some(&hpa_targeting("Deployment", "api"))),
        None
    );

    let sleeper = scaler(ranges(true));
    let reads = reads(&sleeper);
    // The HPA's target, once the HPA is read; without an HPA, the one ebb's HPA would get.
    let scale = reads
        .scale(&sleeper, Some(&hpa_targeting("StatefulSet", "db")))
        .unwrap();
    assert_eq!(
        (scale.resource.kind.as_str(), scale.name.as_str()),
        ("StatefulSet", "db")
    );
    assert_eq!(scale.describe, "StatefulSet shop/db");
    assert_eq!(reads.scale(&sleeper, None).unwrap().name, "web");
    // A kind hibernation does not scale is not read.
    let rollout: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"maxReplicas": 3, "scaleTargetRef":
                 {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}}
    }))
    .unwrap();
    assert_eq!(reads.scale(&sleeper, Some(&rollout)), None);
}
