//! `scaling.ebb.dev/v1alpha1` `WorkshopScalingPolicy`: auto-scaling settings for the Babylon
//! Workshops of a namespace, chosen by label.
//!
//! Babylon's published CRDs prune unknown fields under `Workshop.spec` and
//! `WorkshopProvision.spec`, so `spec.autoScaling` written there never reaches workshop-scaler on a
//! stock Babylon cluster. A policy is ebb's own object: it survives any Babylon CRD, and one policy
//! serves every workshop a platform team runs in a namespace. Precedence (field by field): a
//! WorkshopProvision's own `spec.autoScaling` (where its CRD keeps it) > the Workshop's
//! `spec.autoScaling` (where kept) > the one policy selecting the Workshop > the defaults. Two or
//! more policies selecting one Workshop is ambiguous: its provisions do not scale, and a condition
//! and a Warning Event name the policies.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::babylon::AutoScaling;

/// Auto-scaling settings for the Workshops of this namespace that `workshopSelector` selects.
// clippy reads kube-derive's repeated `printcolumn(type_ = ...)` arguments as duplicated attributes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "scaling.ebb.dev",
    version = "v1alpha1",
    kind = "WorkshopScalingPolicy",
    doc = "WorkshopScalingPolicy sets the autoScaling of the Babylon Workshops it selects in its namespace, for clusters whose Babylon CRDs prune spec.autoScaling; ebb's workshop-scaler applies it to their WorkshopProvisions.",
    plural = "workshopscalingpolicies",
    namespaced,
    status = "WorkshopScalingPolicyStatus",
    shortname = "wsp",
    category = "ebb",
    derive = "PartialEq",
    printcolumn(
        name = "Enabled",
        type_ = "boolean",
        json_path = ".spec.autoScaling.enabled"
    ),
    printcolumn(
        name = "Workshops",
        type_ = "integer",
        json_path = ".status.workshopCount"
    ),
    printcolumn(
        name = "Ambiguous",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ambiguous\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkshopScalingPolicySpec {
    /// The Workshops (`babylon.gpte.redhat.com/v1`) of this namespace the policy applies to, by
    /// their labels. Absent or empty (`{}`): every Workshop in the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workshop_selector: Option<LabelSelector>,
    /// The settings, as in `Workshop.spec.autoScaling`: `enabled` (default false), `threshold`
    /// (default 0.8), `scaleFactor` (default 1.5), `maxProvisions` (default 100), `activeTimeout`
    /// (default 60m). A field set on the Workshop or the WorkshopProvision, where Babylon's CRD keeps
    /// it, overrides the policy's.
    pub auto_scaling: AutoScaling,
}

/// What workshop-scaler observed about the policy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkshopScalingPolicyStatus {
    /// How many Workshops of the namespace the selector selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub workshop_count: Option<i32>,
    /// The selected Workshops by name, sorted; at most 100 are listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub workshops: Vec<String>,
    /// `Ambiguous`: True when another policy also selects one of these Workshops (neither
    /// applies to it; the message names them). `SelectorValid`: False when the selector cannot
    /// be evaluated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
