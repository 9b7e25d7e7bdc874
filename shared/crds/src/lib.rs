//! Every custom resource ebb reads or writes, as Rust types.
//!
//! ebb's own kinds (`ServiceScaler`, `ScaleDownSchedule`, `StackableScaler`) and typed views of the
//! Babylon and Poolboy kinds that workshop-scaler works with. This crate holds types and their
//! schemas only: no client, no runtime. `crdgen` writes the manifests in `crds/` from [`all_crds`].

// kube-derive expands each `printcolumn(...)` into an attribute of the same name.
#![allow(clippy::duplicated_attributes)]

pub mod babylon;
pub mod poolboy;
pub mod scaledown;
pub mod schema;
pub mod service_scaler;
pub mod stackable;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD ebb ships, with the schema clean-ups Kubernetes needs applied.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    [
        service_scaler::ServiceScaler::crd(),
        scaledown::ScaleDownSchedule::crd(),
        stackable::StackableScaler::crd(),
        babylon::Workshop::crd(),
        babylon::WorkshopProvision::crd(),
        babylon::WorkshopUserAssignment::crd(),
        poolboy::ResourceClaim::crd(),
    ]
    .into_iter()
    .map(schema::finalize_crd)
    .collect()
}

/// The file name crdgen writes a CRD to: `<plural>.<group>.yaml`, as `kubectl` names CRDs.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}
