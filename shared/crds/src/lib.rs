//! Every custom resource ebb reads or writes, as Rust types.
//!
//! ebb's own kinds (`ServiceScaler`, `FleetSchedule`, `ScaleDownSchedule`, `StackableScaler`,
//! `WorkshopScalingPolicy`, `HolidayCalendar`) and typed views of the Babylon and Poolboy kinds that workshop-scaler
//! works with. This crate holds types and their schemas only: no client, no runtime. `crdgen`
//! writes the manifests in `crds/` from [`all_crds`]: ebb's own kinds only. Babylon and Poolboy
//! install their CRDs; a thinner copy applied by ebb would make the API server prune the fields
//! ebb does not model from users' objects ([`third_party_views`] exists for tests only).

// kube-derive expands each `printcolumn(...)` into an attribute of the same name.
#![allow(clippy::duplicated_attributes)]

pub mod babylon;
pub mod calendar;
pub mod fleet;
pub mod poolboy;
pub mod scaledown;
pub mod schema;
pub mod service_scaler;
pub mod stackable;
pub mod workshop_policy;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD ebb ships (its own kinds), with the schema clean-ups Kubernetes needs applied.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    [
        service_scaler::ServiceScaler::crd(),
        scaledown::ScaleDownSchedule::crd(),
        stackable::StackableScaler::crd(),
        workshop_policy::WorkshopScalingPolicy::crd(),
        fleet::FleetSchedule::crd(),
        calendar::HolidayCalendar::crd(),
    ]
    .into_iter()
    .map(schema::finalize_crd)
    .collect()
}

/// The schemas of ebb's typed views of Babylon's and Poolboy's kinds, for tests (validating
/// examples, the `autoScaling` bounds). Never written to `crds/` nor installed by a chart: those
/// CRDs are Babylon's and Poolboy's (test fixtures shaped like upstream's are in `e2e/crds/`).
pub fn third_party_views() -> Vec<CustomResourceDefinition> {
    [
        babylon::Workshop::crd(),
        babylon::WorkshopProvision::crd(),
        babylon::WorkshopUserAssignment::crd(),
        poolboy::ResourceClaim::crd(),
    ]
    .into_iter()
    .map(schema::finalize_crd)
    .collect()
}

/// Babylon's CRDs as upstream ships them (the fixtures in `e2e/crds/`), for `plan`'s check of
/// the fields a manifest may hold. A file that does not parse is left out (a test reads them all).
pub fn babylon_crds() -> Vec<CustomResourceDefinition> {
    [
        include_str!("../../../e2e/crds/workshops.babylon.gpte.redhat.com.yaml"),
        include_str!("../../../e2e/crds/workshopprovisions.babylon.gpte.redhat.com.yaml"),
    ]
    .into_iter()
    .filter_map(|text| serde_saphyr::from_str(text).ok())
    .collect()
}

/// The file name crdgen writes a CRD to: `<plural>.<group>.yaml`, as `kubectl` names CRDs.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}
