#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_crds::stackable::StackableScalerStatus;
use serde_json::json;

fn scaler() -> StackableScaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "nifi", "namespace": "data", "resourceVersion": "5",
                     "annotations": {"autoscaling.stackable.tech/retry": "true", "keep": "me"}},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "scaleEvent": 1},
    }))
    .unwrap()
}

/// The offline worlds change their copy as the API server would: the status merged, the
/// annotation removed, everything else kept, the versions named not checked.
#[test]
fn offline_writes_change_the_copy_as_the_api_server_would() {
    let s = scaler();
    let status = StackableScalerStatus {
        replicas: 3,
        ..s.status.clone().unwrap()
    };
    let plan = decide::Step {
        status: status.clone(),
        action: Action::StripRetryAnnotation,
        note: None,
    };
    let after = apply(&s, &decide::step_writes(&s, &plan));
    assert_eq!(after.status, Some(status));
    assert!(!retry_requested(&after));
    assert_eq!(
        after.annotations().get("keep").map(String::as_str),
        Some("me")
    );
    assert_eq!(after.spec, s.spec);
    assert_eq!(after.resource_version(), s.resource_version());
}
