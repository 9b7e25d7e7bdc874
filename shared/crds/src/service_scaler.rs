//! `scaler.udaan.io/v1` `ServiceScaler`: time-window overrides of an HPA's settings.
//!
//! The group, kind, spec and status are udaan's, so manifests written for udaan's Service Scaler
//! apply unchanged. ebb adds the `LocalTime` and `Cron` range kinds (DST-correct), `scaleTargetRef`,
//! `ramp`, and the status fields `matchedRange`, `nextTransitions` and `conditions`.

use k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Pattern of a duration: hours, minutes and seconds in that order, each optional (`90m`, `10h`, `1h30m`).
pub const DURATION_PATTERN: &str = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$";

/// Scales the HorizontalPodAutoscaler of the same name by time of day or date.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "scaler.udaan.io",
    version = "v1",
    kind = "ServiceScaler",
    plural = "servicescalers",
    namespaced,
    status = "ServiceScalerStatus",
    shortname = "svcscaler",
    category = "ebb",
    derive = "PartialEq",
    printcolumn(
        name = "Min",
        type_ = "integer",
        json_path = ".status.lastKnownConfig.minReplicas"
    ),
    printcolumn(
        name = "Max",
        type_ = "integer",
        json_path = ".status.lastKnownConfig.maxReplicas"
    ),
    printcolumn(
        name = "Range",
        type_ = "integer",
        json_path = ".status.matchedRange",
        description = "Index of the time range in force; empty when the defaults apply"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ServiceScalerSpec {
    /// Default HPA settings, in force whenever no time range matches.
    pub hpa: HpaDefaults,

    /// Time ranges with overrides of the defaults. The first range in list order that contains the
    /// current instant wins; overlapping ranges are reported in a status condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub time_range_spec: Vec<TimeRange>,

    /// What the HPA scales, when it does not exist yet and ebb creates it.
    /// Default: the `apps/v1` Deployment with the ServiceScaler's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_target_ref: Option<CrossVersionObjectReference>,

    /// Spreads a change of `minReplicas` over this duration in steps (`10m`, `1h`), instead of
    /// applying it at once. Empty: changes apply at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub ramp: Option<String>,
}

/// Default HPA settings.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.minReplicas) || self.minReplicas <= self.maxReplicas").message("hpa.minReplicas must not exceed hpa.maxReplicas"))]
pub struct HpaDefaults {
    /// Lower bound of the HPA. Default 1. `minReplicas == maxReplicas` is a fixed size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,

    /// Upper bound of the HPA.
    #[schemars(range(min = 1))]
    pub max_replicas: i32,

    /// Target average CPU utilization in percent of requests. 0 or unset: no CPU metric.
    #[serde(
        default,
        rename = "targetCPUUtilization",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub target_cpu_utilization: Option<i32>,

    /// Target average memory utilization in percent of requests. 0 or unset: no memory metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub target_memory_utilization: Option<i32>,
}

/// Overrides of the defaults while a time range is in force; a field left out keeps the default's value.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas").message("minReplicas must not exceed maxReplicas"))]
pub struct HpaOverride {
    /// Lower bound while the range is in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,

    /// Upper bound while the range is in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_replicas: Option<i32>,

    /// Target CPU utilization while the range is in force; 0 removes the CPU metric.
    #[serde(
        default,
        rename = "targetCPUUtilization",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub target_cpu_utilization: Option<i32>,

    /// Target memory utilization while the range is in force; 0 removes the memory metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub target_memory_utilization: Option<i32>,
}

/// The settings a time range brings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Overrides of `spec.hpa`.
    #[serde(default)]
    pub hpa: HpaOverride,
}

/// How a time range's boundaries are written.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum TimeRangeKind {
    /// Daily, `from`/`to` as `HH:MM<offset>` (`16:00+05:30`); a fixed offset ignores DST.
    ZonedTime,
    /// Once, `from`/`to` as RFC 3339 instants (`2026-03-12T08:00:00+01:00`).
    ZonedDateTime,
    /// Daily (or on `days`), `from`/`to` as wall-clock `HH:MM` in `timeZone`; DST-correct.
    LocalTime,
    /// Opens at each `schedule` (five-field cron, in `timeZone`) and stays open for `duration`.
    Cron,
}

/// A day of the week, for `LocalTime` ranges.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum Weekday {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

/// One time range: `[from, to)` (half-open), and the overrides in force inside it.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.from) == has(self.to)").message("from and to must be given together"),
    validation = Rule::new("self.kind == 'Cron' ? (has(self.schedule) && has(self.duration)) : (has(self.from) && has(self.to))").message("kind Cron needs schedule and duration; ZonedTime, ZonedDateTime and LocalTime need from and to"),
    validation = Rule::new("self.kind == 'Cron' || (!has(self.schedule) && !has(self.duration))").message("schedule and duration belong to kind Cron"),
    validation = Rule::new("self.kind == 'LocalTime' || self.kind == 'Cron' || !has(self.timeZone)").message("timeZone belongs to kinds LocalTime and Cron"),
    validation = Rule::new("self.kind == 'LocalTime' || !has(self.days)").message("days belongs to kind LocalTime"),
    validation = Rule::new("self.kind != 'ZonedTime' || !has(self.from) || (self.from.matches('^([01][0-9]|2[0-3]):[0-5][0-9](Z|[+-][0-9]{2}:[0-9]{2})$') && self.to.matches('^([01][0-9]|2[0-3]):[0-5][0-9](Z|[+-][0-9]{2}:[0-9]{2})$'))").message("ZonedTime from/to must be HH:MM followed by an offset, e.g. 16:00+05:30"),
    validation = Rule::new("self.kind != 'LocalTime' || !has(self.from) || (self.from.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$') && self.to.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$'))").message("LocalTime from/to must be HH:MM, e.g. 08:30"),
    validation = Rule::new("self.kind != 'ZonedDateTime' || !has(self.from) || (self.from.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$') && self.to.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$'))").message("ZonedDateTime from/to must be RFC 3339, e.g. 2026-03-12T08:00:00+01:00"),
)]
pub struct TimeRange {
    /// How `from` and `to` (or `schedule`) are written.
    pub kind: TimeRangeKind,

    /// Start of the range (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub from: Option<String>,

    /// End of the range (exclusive). For daily kinds, a `to` at or before `from` wraps past midnight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub to: Option<String>,

    /// IANA time zone (`Europe/Zurich`) of `LocalTime` and `Cron` ranges. Default UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: Option<String>,

    /// Days on which a `LocalTime` range opens (the day `from` falls on). Default: every day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 7))]
    pub days: Option<Vec<Weekday>>,

    /// When a `Cron` range opens: standard five-field cron as in a Kubernetes CronJob (`0 8 * * 1-5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 9, max = 128))]
    pub schedule: Option<String>,

    /// How long a `Cron` range stays open (`90m`, `10h`, `1h30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub duration: Option<String>,

    /// Overrides in force inside the range.
    #[serde(default)]
    pub replica_spec: ReplicaSpec,
}

/// HPA settings as applied: the defaults merged with the range in force.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HpaSettings {
    /// Lower bound.
    pub min_replicas: i32,
    /// Upper bound.
    pub max_replicas: i32,
    /// CPU target in percent; absent when the metric is removed.
    #[serde(
        default,
        rename = "targetCPUUtilization",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_cpu_utilization: Option<i32>,
    /// Memory target in percent; absent when the metric is removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_memory_utilization: Option<i32>,
}

/// A coming boundary and the settings it brings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTransition {
    /// When the settings change.
    pub at: Time,
    /// Index of the range in force from then on; absent when the defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_range: Option<i32>,
    /// The settings in force from then on.
    pub settings: HpaSettings,
}

/// A `minReplicas` change being spread over `spec.ramp`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RampStatus {
    /// `minReplicas` when the ramp started.
    pub from_min_replicas: i32,
    /// `minReplicas` the ramp ends at.
    pub to_min_replicas: i32,
    /// When the ramp started.
    pub started_at: Time,
}

/// What the controller last observed and applied.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceScalerStatus {
    /// The HPA settings last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_config: Option<HpaSettings>,
    /// `metadata.generation` of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_generation: Option<i64>,
    /// When the controller last changed the HPA or this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_time: Option<Time>,
    /// Whether a time range is in force.
    #[serde(default)]
    pub time_range_match: bool,
    /// Index of the range in force; absent when the defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_range: Option<i32>,
    /// The next boundaries and the settings each brings: a preview of the schedule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_transitions: Vec<ScheduledTransition>,
    /// A `minReplicas` ramp in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<RampStatus>,
    /// `Ready`, `SpecValid`, `RangesOverlap`, `Paused`...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
