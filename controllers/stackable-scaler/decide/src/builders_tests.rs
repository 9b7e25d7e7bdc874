#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::replicas::ReplicasConfig;

fn identity() -> ScalerIdentity {
    ScalerIdentity {
        product: "nifi".into(),
        cluster: "simple-nifi".into(),
        managed_by: "nifi-operator".into(),
        role: "node".into(),
        role_group: "default".into(),
        namespace: "data".into(),
    }
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "nifi.stackable.tech/v1alpha1".into(),
        kind: "NifiCluster".into(),
        name: "simple-nifi".into(),
        uid: "1234".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[test]
fn build_scaler_names_labels_and_owns() {
    let scaler = build_scaler(&identity(), owner(), 3, None).unwrap();
    assert_eq!(
        scaler.metadata.name.as_deref(),
        Some("simple-nifi-node-default")
    );
    assert_eq!(scaler.metadata.namespace.as_deref(), Some("data"));
    let labels = scaler.metadata.labels.as_ref().unwrap();
    assert_eq!(labels.len(), 5);
    assert_eq!(labels[LABEL_NAME], "nifi");
    assert_eq!(labels[LABEL_INSTANCE], "simple-nifi");
    assert_eq!(labels[LABEL_MANAGED_BY], "nifi-operator");
    assert_eq!(labels[LABEL_COMPONENT], "node");
    assert_eq!(labels[LABEL_ROLE_GROUP], "default");
    assert_eq!(
        scaler.metadata.owner_references.as_ref().unwrap(),
        &vec![owner()]
    );
    assert_eq!(scaler.spec.replicas, 3);
    assert!(
        scaler.status.is_none(),
        "status is seeded by initialize_scaler_status"
    );
    // Deterministic: building twice gives the same object.
    assert_eq!(build_scaler(&identity(), owner(), 3, None).unwrap(), scaler);
}

#[test]
fn invalid_names_and_labels_are_named() {
    let mut id = identity();
    id.role = "Node".into();
    assert_eq!(
        id.scaler_name(),
        Err(BuildError::InvalidName("simple-nifi-Node-default".into()))
    );
    let mut id = identity();
    id.managed_by = "x".repeat(64);
    let err = build_scaler(&id, owner(), 1, None).unwrap_err();
    assert!(
        err.to_string().contains("app.kubernetes.io/managed-by"),
        "{err}"
    );
    let mut id = identity();
    id.role_group = String::new();
    assert!(build_scaler(&id, owner(), 1, None).is_err());
}

#[test]
fn scale_target_ref_points_at_the_scaler() {
    let r = scale_target_ref("simple-nifi-node-default");
    assert_eq!(
        r.api_version.as_deref(),
        Some("autoscaling.stackable.tech/v1alpha1")
    );
    assert_eq!(r.kind, "StackableScaler");
    assert_eq!(r.name, "simple-nifi-node-default");
}

#[test]
fn the_hpa_always_targets_the_scaler() {
    let scaler = build_scaler(&identity(), owner(), 3, None).unwrap();
    let config: ReplicasConfig = serde_json::from_str(
        r#"{"hpa": {"minReplicas": 2, "maxReplicas": 8, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "evil"}}}"#,
    )
    .unwrap();
    let ReplicasConfig::Hpa(mut hpa_config) = config else {
        panic!()
    };
    // Even a value built in code with a target set is overwritten.
    hpa_config.0.scale_target_ref.name = "evil".into();
    let hpa = build_hpa_from_user_spec(&hpa_config, &scaler).unwrap();
    let spec = hpa.spec.unwrap();
    assert_eq!(
        spec.scale_target_ref,
        scale_target_ref("simple-nifi-node-default")
    );
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 8));
    assert_eq!(
        hpa.metadata.name.as_deref(),
        Some("simple-nifi-node-default")
    );
    assert_eq!(hpa.metadata.labels, scaler.metadata.labels);
    assert_eq!(
        hpa.metadata.owner_references,
        scaler.metadata.owner_references
    );
}

#[test]
fn the_hpa_needs_a_named_scaler() {
    let scaler = StackableScaler::new(
        "x",
        StackableScalerSpec {
            replicas: 1,
            hooks: None,
            stage_timeout_seconds: None,
        },
    );
    assert_eq!(
        build_hpa_from_user_spec(&HpaConfig::default(), &scaler).unwrap_err(),
        BuildError::MissingMetadata("namespace")
    );
}
