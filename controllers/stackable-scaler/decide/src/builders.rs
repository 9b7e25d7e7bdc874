//! Builders a product operator uses to create a StackableScaler and the HPA that targets it
//! (the controller's `builders` module adds the write that seeds a new scaler's status).

use std::collections::BTreeMap;

use ebb_crds::stackable::{HooksSpec, StackableScaler, StackableScalerSpec};
use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::replicas::HpaConfig;

/// `app.kubernetes.io/name`: the product (`nifi`).
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// `app.kubernetes.io/instance`: the cluster (`simple-nifi`).
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
/// `app.kubernetes.io/managed-by`: the operator.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `app.kubernetes.io/component`: the role (`node`).
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";
/// `app.kubernetes.io/role-group`: the role group (`default`).
pub const LABEL_ROLE_GROUP: &str = "app.kubernetes.io/role-group";

/// Who a scaler belongs to: the five standard labels and the name derived from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalerIdentity {
    /// The product (`app.kubernetes.io/name`).
    pub product: String,
    /// The cluster object's name (`app.kubernetes.io/instance`).
    pub cluster: String,
    /// The operator (`app.kubernetes.io/managed-by`).
    pub managed_by: String,
    /// The role (`app.kubernetes.io/component`).
    pub role: String,
    /// The role group (`app.kubernetes.io/role-group`).
    pub role_group: String,
    /// Namespace of the cluster object (and of the scaler).
    pub namespace: String,
}

/// Why a scaler or HPA cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A label value is empty, too long or has characters Kubernetes rejects.
    #[error(
        "label {label}={value:?} is not a valid label value (1..=63 of [A-Za-z0-9-_.], alphanumeric at both ends)"
    )]
    InvalidLabel {
        /// The label key.
        label: &'static str,
        /// The value.
        value: String,
    },
    /// `<cluster>-<role>-<rolegroup>` is longer than 253 characters or not a DNS subdomain.
    #[error(
        "scaler name {0:?} is not a valid object name (lower-case DNS subdomain, at most 253 characters)"
    )]
    InvalidName(String),
    /// The scaler has no name or namespace yet.
    #[error("the StackableScaler has no {0}")]
    MissingMetadata(&'static str),
}

fn valid_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    !value.is_empty()
        && value.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn valid_dns_subdomain(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|part| {
            let b = part.as_bytes();
            !part.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b.first().is_some_and(u8::is_ascii_alphanumeric)
                && b.last().is_some_and(u8::is_ascii_alphanumeric)
        })
}

impl ScalerIdentity {
    /// The deterministic scaler name: `<cluster>-<role>-<rolegroup>`.
    pub fn scaler_name(&self) -> Result<String, BuildError> {
        let name = format!("{}-{}-{}", self.cluster, self.role, self.role_group);
        if valid_dns_subdomain(&name) {
            Ok(name)
        } else {
            Err(BuildError::InvalidName(name))
        }
    }

    /// The five `app.kubernetes.io` labels.
    pub fn labels(&self) -> Result<BTreeMap<String, String>, BuildError> {
        let pairs = [
            (LABEL_NAME, &self.product),
            (LABEL_INSTANCE, &self.cluster),
            (LABEL_MANAGED_BY, &self.managed_by),
            (LABEL_COMPONENT, &self.role),
            (LABEL_ROLE_GROUP, &self.role_group),
        ];
        pairs
            .into_iter()
            .map(|(label, value)| {
                if valid_label_value(value) {
                    Ok((label.to_owned(), value.clone()))
                } else {
                    Err(BuildError::InvalidLabel {
                        label,
                        value: value.clone(),
                    })
                }
            })
            .collect()
    }
}

/// A StackableScaler for a role group: deterministic name, the five standard labels, `owner` as
/// its (controller) owner reference, and `replicas` as the starting `spec.replicas` (use the
/// workload's current replicas, so nothing moves until the HPA asks).
pub fn build_scaler(
    identity: &ScalerIdentity,
    owner: OwnerReference,
    replicas: i32,
    hooks: Option<HooksSpec>,
) -> Result<StackableScaler, BuildError> {
    let name = identity.scaler_name()?;
    let mut scaler = StackableScaler::new(
        &name,
        StackableScalerSpec {
            replicas,
            hooks,
            stage_timeout_seconds: None,
        },
    );
    scaler.metadata = ObjectMeta {
        name: Some(name),
        namespace: Some(identity.namespace.clone()),
        labels: Some(identity.labels()?),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    };
    Ok(scaler)
}

/// The HPA `scaleTargetRef` that points at a StackableScaler.
pub fn scale_target_ref(scaler_name: &str) -> CrossVersionObjectReference {
    CrossVersionObjectReference {
        api_version: Some(StackableScaler::api_version(&()).into_owned()),
        kind: StackableScaler::kind(&()).into_owned(),
        name: scaler_name.to_owned(),
    }
}

/// An HPA from the user's settings, named like the scaler, with the scaler's labels and owner
/// references. `scaleTargetRef` is always overwritten to the scaler, whatever the user wrote.
pub fn build_hpa_from_user_spec(
    config: &HpaConfig,
    scaler: &StackableScaler,
) -> Result<HorizontalPodAutoscaler, BuildError> {
    let name = scaler
        .metadata
        .name
        .clone()
        .ok_or(BuildError::MissingMetadata("name"))?;
    let namespace = scaler
        .metadata
        .namespace
        .clone()
        .ok_or(BuildError::MissingMetadata("namespace"))?;
    let mut spec = config.0.clone();
    spec.scale_target_ref = scale_target_ref(&name);
    Ok(HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace),
            labels: scaler.metadata.labels.clone(),
            owner_references: scaler.metadata.owner_references.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

#[cfg(test)]
#[path = "builders_tests.rs"]
mod tests;
