//! `scaling.ebb.dev/v1alpha1` `FleetSchedule`: one schedule for every HorizontalPodAutoscaler a
//! label selector matches, in its namespace (or, from ebb's own namespace, in the namespaces it
//! names). Served by service-scaler beside `ServiceScaler`, whose time ranges it shares.
//!
//! Outside its ranges a member HPA keeps its own settings; while a range is in force, the range's
//! overrides apply on top of them. The HPA's own values are recorded on the HPA itself (an
//! annotation) before ebb's first write, so an HPA that leaves the selector, opts out, or
//! outlives the FleetSchedule gets them back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::service_scaler::{DURATION_PATTERN, RangeSelection, TimeRange};

/// Gives every HPA `spec.selector` matches a schedule.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "scaling.ebb.dev",
    version = "v1alpha1",
    kind = "FleetSchedule",
    doc = "FleetSchedule gives every HorizontalPodAutoscaler its selector matches the overrides of the time range in force (ebb's service-scaler); outside its ranges each keeps its own settings.",
    plural = "fleetschedules",
    namespaced,
    status = "FleetScheduleStatus",
    shortname = "fleet",
    category = "ebb",
    derive = "PartialEq",
    printcolumn(
        name = "Members",
        type_ = "integer",
        json_path = ".status.members",
        description = "HPAs this FleetSchedule schedules"
    ),
    printcolumn(
        name = "Range",
        type_ = "integer",
        json_path = ".status.matchedRange",
        description = "Index of the time range in force; empty outside every range"
    ),
    printcolumn(
        name = "Conflict",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Conflict\")].status"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Paused",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Paused\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FleetScheduleSpec {
    /// The HPAs scheduled: those whose labels match, in this namespace and in `namespaces`.
    /// `{}` matches every HPA. An HPA is left out when it carries
    /// `scaling.ebb.dev/fleet-opt-out: "true"`, or when a ServiceScaler of its name schedules it.
    pub selector: LabelSelector,

    /// Further namespaces whose HPAs the selector picks from. Honoured only for a FleetSchedule in
    /// ebb's own namespace (where the chart installs it), so that nobody reaches into a namespace
    /// they cannot write to, and only by a cluster-wide install.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub namespaces: Vec<String>,

    /// The time ranges, as in a ServiceScaler: the first in list order that contains the current
    /// instant is in force (the last with `rangeSelection: Last`). Its `replicaSpec.hpa` overrides
    /// each member's own settings; a field left out keeps the member's value.
    /// `replicaSpec.hibernate` scales each member's target to 0 for the range.
    #[schemars(length(min = 1, max = 64))]
    pub time_range_spec: Vec<TimeRange>,

    /// How long before a boundary that raises `minReplicas` or `maxReplicas` the members start
    /// stepping up to it, as in a ServiceScaler. Default `30m`; `0s` turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub lead_time: Option<String>,

    /// Which range is in force when several contain the instant: `First` (default) or `Last`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_selection: Option<RangeSelection>,
}

/// What ebb observed of a FleetSchedule.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetScheduleStatus {
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// How many HPAs this FleetSchedule schedules (matched, not opted out, not claimed by a
    /// ServiceScaler or by an older FleetSchedule).
    #[serde(default)]
    pub members: i32,

    /// Index of the time range in force; unset outside every range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_range: Option<i32>,

    /// When the range in force next changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_transition: Option<Time>,

    /// `SpecValid`, `Conflict` (another FleetSchedule matches some of the same HPAs; the older
    /// schedules them), `Paused` and `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
