//! Typed views of Babylon's `babylon.gpte.redhat.com/v1` kinds, with the fields ebb uses.
//!
//! Babylon owns these kinds and installs their CRDs; ebb only reads (and writes `spec.count` and
//! `status` of) objects through these types and never ships their CRDs. Babylon's published CRDs
//! prune unknown fields under `spec`, so `spec.autoScaling` exists there only where the installed
//! CRD keeps it; [`crate::workshop_policy::WorkshopScalingPolicy`] is the source that survives.
//! Free-form parts stay free-form in the test-only schemas ([`crate::third_party_views`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::service_scaler::DURATION_PATTERN;

/// Label Poolboy ResourceClaims carry with the name of their WorkshopProvision.
pub const WORKSHOP_PROVISION_LABEL: &str = "babylon.gpte.redhat.com/workshop-provision";

/// Demand-driven scaling of a workshop's provisions. On a Workshop these are the defaults of its
/// provisions; on a WorkshopProvision each field set overrides its Workshop's, field by field.
/// Defaults: `enabled` false, `threshold` 0.8, `scaleFactor` 1.5, `maxProvisions` 100,
/// `activeTimeout` 60m.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoScaling {
    /// Scale provisions when utilization reaches the threshold. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Utilization (assigned / total seats) at or above which provisions scale; 0 < t <= 1. Default 0.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0), extend("exclusiveMinimum" = true))]
    pub threshold: Option<f64>,
    /// Growth of `count` per scale-up (> 1); at least +1. Default 1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0), extend("exclusiveMinimum" = true))]
    pub scale_factor: Option<f64>,
    /// `count` never grows past this (>= 1). Default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_provisions: Option<i32>,
    /// How long a scale-up may wait for its ResourceClaims to settle before a condition and an
    /// Event report the stuck claims (the flag stays set). Default 60m.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub active_timeout: Option<String>,
}

/// A Babylon workshop: a shared event whose seats are WorkshopUserAssignments.
// clippy reads kube-derive's repeated `printcolumn(type_ = ...)` arguments as duplicated attributes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "babylon.gpte.redhat.com",
    version = "v1",
    kind = "Workshop",
    plural = "workshops",
    namespaced,
    status = "WorkshopStatus",
    derive = "PartialEq",
    printcolumn(
        name = "Assigned",
        type_ = "integer",
        json_path = ".status.userCount.assigned"
    ),
    printcolumn(
        name = "Total",
        type_ = "integer",
        json_path = ".status.userCount.total"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkshopSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_registration: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiuser_services: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision_disabled: Option<bool>,
    /// `start`/`end` of the workshop (Babylon's free-form shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub lifespan: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub action_schedule: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_user_interface: Option<LabUserInterface>,
    /// Demand-driven scaling of this workshop's provisions (ebb workshop-scaler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling: Option<AutoScaling>,
}

/// Where users are sent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabUserInterface {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Workshop {
    /// Keeps what workshop-scaler reads of a Workshop: its name, namespace and labels (what a
    /// WorkshopScalingPolicy selects), `spec.provisionDisabled`, `spec.lifespan` and
    /// `spec.autoScaling`. The rest (descriptions, the access password, schedules, Babylon's
    /// status) is dropped before a cache of every Workshop holds it.
    pub fn trim(&mut self) {
        let spec = std::mem::take(&mut self.spec);
        self.spec = WorkshopSpec {
            provision_disabled: spec.provision_disabled,
            lifespan: spec.lifespan,
            auto_scaling: spec.auto_scaling,
            ..WorkshopSpec::default()
        };
        self.status = None;
        let meta = &mut self.metadata;
        meta.annotations = None;
        meta.owner_references = None;
        meta.finalizers = None;
    }
}

/// Babylon's own counts; ebb counts WorkshopUserAssignments itself and only reads this.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkshopStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_count: Option<UserCount>,
}

/// Seats of a workshop as Babylon counts them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserCount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i32>,
}

/// A set of `count` ResourceClaims of one catalog item, provisioned for a workshop.
// clippy reads kube-derive's repeated `printcolumn(type_ = ...)` arguments as duplicated attributes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "babylon.gpte.redhat.com",
    version = "v1",
    kind = "WorkshopProvision",
    plural = "workshopprovisions",
    namespaced,
    status = "WorkshopProvisionStatus",
    derive = "PartialEq",
    printcolumn(name = "Workshop", type_ = "string", json_path = ".spec.workshopName"),
    printcolumn(name = "Count", type_ = "integer", json_path = ".spec.count"),
    printcolumn(
        name = "Scaling",
        type_ = "boolean",
        json_path = ".status.autoScalingActive"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkshopProvisionSpec {
    /// The catalog item provisioned.
    pub catalog_item: CatalogItemRef,
    /// How many ResourceClaims to provision: the field workshop-scaler raises.
    #[schemars(range(min = 0))]
    pub count: i32,
    /// The Workshop these provisions serve.
    #[schemars(length(min = 1, max = 253))]
    pub workshop_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_delay: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub parameters: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub lifespan: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub action_schedule: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_pool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub auto_detach: Option<Value>,
    /// Overrides of the Workshop's `autoScaling`, field by field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling: Option<AutoScaling>,
}

/// Reference to a Babylon CatalogItem.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogItemRef {
    pub name: String,
    pub namespace: String,
}

/// Status of a WorkshopProvision. Babylon writes fields of its own here; ebb writes only these.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkshopProvisionStatus {
    /// A scale-up is in flight: no further scale-up until its ResourceClaims have settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling_active: Option<bool>,
    /// When the scale-up in flight started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling_started_at: Option<Time>,
    /// `spec.count` when the scale-up in flight started. Written with the flag, before the count,
    /// so a scale-up interrupted between the two writes is finished exactly once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub auto_scaling_from_count: Option<i32>,
    /// The `spec.count` the scale-up in flight raises the provision to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub auto_scaling_target_count: Option<i32>,
    /// The claims the scale-up in flight waits for, each recorded when first seen: one
    /// finalized or deleted while workshop-scaler was not looking still counts as done, so the
    /// flag is released from what was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub auto_scaling_claims: Vec<String>,
    /// `spec.count` when the last released scale-up started. Kept after it ends: no new
    /// scale-up starts from this count again (a release never allows a second increase from the
    /// same starting count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub auto_scaling_last_from_count: Option<i32>,
    /// `AutoScaling`, `AtMaxProvisions`, `ClaimsStuck`, `AutoScalingConfigValid`, `Paused`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// A seat of a workshop; `assignment` is present when a user holds it.
// clippy reads kube-derive's repeated `printcolumn(type_ = ...)` arguments as duplicated attributes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "babylon.gpte.redhat.com",
    version = "v1",
    kind = "WorkshopUserAssignment",
    plural = "workshopuserassignments",
    namespaced,
    status = "WorkshopUserAssignmentStatus",
    derive = "PartialEq",
    printcolumn(name = "Workshop", type_ = "string", json_path = ".spec.workshopName"),
    printcolumn(name = "User", type_ = "string", json_path = ".spec.assignment.email"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkshopUserAssignmentSpec {
    pub workshop_name: String,
    pub resource_claim_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment: Option<Assignment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_user_interface: Option<LabUserInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub data: Option<Value>,
}

/// Who holds a seat.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Babylon's status of a seat; free-form.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkshopUserAssignmentStatus {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn trimming_a_workshop_keeps_what_scaling_reads() {
        let mut workshop: Workshop = serde_json::from_value(json!({
            "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
            "metadata": {"name": "lab", "namespace": "ops", "labels": {"team": "ops"},
                         "annotations": {"note": "x"}},
            "spec": {"displayName": "Lab", "description": "<p>long</p>", "accessPassword": "s3cret",
                     "provisionDisabled": true, "lifespan": {"end": "2026-03-10T12:00:00Z"},
                     "autoScaling": {"enabled": true, "threshold": 0.8}},
            "status": {"userCount": {"assigned": 3}},
        }))
        .unwrap();
        workshop.trim();
        let kept = serde_json::to_value(&workshop).unwrap();
        assert_eq!(
            kept,
            json!({
                "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
                "metadata": {"name": "lab", "namespace": "ops", "labels": {"team": "ops"}},
                "spec": {"provisionDisabled": true, "lifespan": {"end": "2026-03-10T12:00:00Z"},
                         "autoScaling": {"enabled": true, "threshold": 0.8}},
            })
        );
    }
}
