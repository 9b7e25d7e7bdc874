//! `scaler.udaan.io/v1` `ServiceScaler`: time-window overrides of an HPA's settings.
//!
//! The group, kind, spec and status are udaan's, so manifests written for udaan's Service Scaler
//! apply unchanged (short name `ss` as udaan's, and its `status.lastAction`). ebb adds the
//! `LocalTime` and `Cron` range kinds (DST-correct), `scaleTargetRef`, `ramp`, `deletionPolicy`,
//! `rangeSelection`, `metricTargets`, and the status fields `matchedRange`, `nextTransitions` and
//! `conditions`.

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
    doc = "ServiceScaler gives the HorizontalPodAutoscaler of the same name the settings in spec.hpa, overridden while one of the time ranges in spec.timeRangeSpec is in force (udaan's Service Scaler, served by ebb's service-scaler).",
    plural = "servicescalers",
    namespaced,
    status = "ServiceScalerStatus",
    shortname = "ss",
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
        name = "Hibernating",
        type_ = "integer",
        json_path = ".status.hibernation.replicas",
        description = "The replicas a hibernating target gets back; empty when it is awake",
        priority = 1
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
pub struct ServiceScalerSpec {
    /// Default HPA settings, in force whenever no time range matches.
    pub hpa: HpaDefaults,

    /// Time ranges with overrides of the defaults. The first range in list order that contains the
    /// current instant wins (the last with `rangeSelection: Last`); overlapping ranges are
    /// reported in a status condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub time_range_spec: Vec<TimeRange>,

    /// What the HPA scales, when it does not exist yet and ebb creates it.
    /// Default: the `apps/v1` Deployment with the ServiceScaler's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_target_ref: Option<CrossVersionObjectReference>,

    /// Spreads a decrease of `minReplicas` over this duration in steps after its boundary
    /// (`10m`, `1h`), instead of applying it at once; increases are never spread after their
    /// boundary (`leadTime` steps them up ahead of it). Empty: decreases apply at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub ramp: Option<String>,

    /// How long before a boundary that raises `minReplicas` or `maxReplicas` the HPA starts
    /// stepping up to the new value, in six equal steps (the last one step before the boundary),
    /// so capacity is never below the schedule (`30m`, `1h`). Default `30m`; `0s` turns it off.
    /// Decreases and utilization targets change at the boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub lead_time: Option<String>,

    /// What happens to the HPA when the ServiceScaler is deleted. Unset: HPAs ebb created, and
    /// HPAs udaan created (they carry the annotation `service-scaler.kubernetes.io/managed`), are
    /// deleted as udaan did; other adopted HPAs are restored to `spec.hpa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,

    /// Which range is in force when several contain the instant: `First` (default) in list
    /// order, or `Last`, as udaan's code did. Overlaps are reported in a condition either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_selection: Option<RangeSelection>,
}

/// What happens to the HPA when its ServiceScaler is deleted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete the HPA, whoever created it.
    Delete,
    /// Give the HPA the defaults (`spec.hpa`) back and keep it, whoever created it.
    Restore,
    /// Keep the HPA with the settings it has; ebb only drops its owner reference.
    Orphan,
}

/// Which of several ranges containing the same instant is in force.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub enum RangeSelection {
    /// The first in list order (ebb's default).
    #[default]
    First,
    /// The last in list order (what udaan's code did).
    Last,
}

/// Default HPA settings.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.minReplicas) || self.minReplicas <= self.maxReplicas").message("hpa.minReplicas must not exceed hpa.maxReplicas"))]
#[x_kube(validation = Rule::new("!has(self.metricTargets) || self.metricTargets.all(t, (has(t.value) ? 1 : 0) + (has(t.averageValue) ? 1 : 0) + (has(t.averageUtilization) ? 1 : 0) == 1)").message("each of metricTargets gives exactly one of value, averageValue, averageUtilization"))]
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

    /// Targets of metrics already on the HPA (External, Pods, Object), by metric name. A target
    /// naming no metric on the HPA does nothing: ebb sets targets, it does not add metrics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub metric_targets: Vec<MetricTargetSpec>,
}

/// Overrides of the defaults while a time range is in force; a field left out keeps the default's value.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas").message("minReplicas must not exceed maxReplicas"))]
#[x_kube(validation = Rule::new("!has(self.metricTargets) || self.metricTargets.all(t, (has(t.value) ? 1 : 0) + (has(t.averageValue) ? 1 : 0) + (has(t.averageUtilization) ? 1 : 0) == 1)").message("each of metricTargets gives exactly one of value, averageValue, averageUtilization"))]
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

    /// Metric targets while the range is in force, replacing the defaults' target of the same
    /// name (e.g. a higher queue-depth target off-hours); other names keep the defaults'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub metric_targets: Vec<MetricTargetSpec>,
}

/// The target of a metric already on the HPA, found by name: `external.metric.name`,
/// `pods.metric.name` or `object.metric.name`. Exactly one of `value`, `averageValue`,
/// `averageUtilization`.
///
/// The rule is checked on the lists in `spec` (bounded there); the status repeats targets unchecked.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricTargetSpec {
    /// The metric's name on the HPA.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Target `Value` (a quantity, `100`, `500m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub value: Option<String>,
    /// Target `AverageValue` (a quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub average_value: Option<String>,
    /// Target `Utilization` in percent (Resource-like Pods metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub average_utilization: Option<i32>,
}

/// The settings a time range brings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Overrides of `spec.hpa`.
    #[serde(default)]
    pub hpa: HpaOverride,

    /// Hibernate the HPA's target while the range is in force: ebb records the replicas it runs
    /// (`status.hibernation`), then scales it to 0 through its `/scale` subresource (the HPA
    /// leaves a target at 0 alone). At the range's end, stepped ahead by `spec.leadTime`, the
    /// target gets those replicas back (at least the `minReplicas` then in force) and the HPA
    /// resumes. Targets: `apps/v1` Deployment, StatefulSet and ReplicaSet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hibernate: bool,
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

    /// Local dates on which the range is not in force: `2026-12-25`, or an inclusive range
    /// `2026-12-24/2027-01-01`. A date closes the range for the whole local day in the range's
    /// own zone (`timeZone`, the `from` offset of a ZonedTime range, UTC for ZonedDateTime), DST
    /// included; a range crossing midnight into or out of an excluded day is cut at midnight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 366), inner(regex(pattern = EXCLUDED_DATE_PATTERN)))]
    pub exclude_dates: Vec<String>,

    /// HolidayCalendars (cluster-scoped, by name) whose dates the range excludes as it does
    /// `excludeDates`. A calendar that is missing or holds an invalid date makes the spec
    /// invalid (`SpecValid=False` naming it): the HPA is left as it is until it is fixed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 253), regex(pattern = crate::calendar::CALENDAR_NAME_PATTERN)))]
    pub exclude_calendars: Vec<String>,
}

/// Pattern of an excluded date: `YYYY-MM-DD`, or an inclusive range `YYYY-MM-DD/YYYY-MM-DD`.
pub const EXCLUDED_DATE_PATTERN: &str =
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(/[0-9]{4}-[0-9]{2}-[0-9]{2})?$";

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
    /// Targets of metrics on the HPA by name, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub metric_targets: Vec<MetricTargetSpec>,
    /// The HPA's target hibernates: it runs 0 replicas (a range with `replicaSpec.hibernate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hibernate: bool,
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

/// A hibernation ebb began: what the target ran before ebb scaled it to 0. Written before that
/// write, so that a restart, a `kill -9` or a new leader mid-hibernation still knows the count
/// to return to; cleared once the target runs again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HibernationStatus {
    /// The workload scaled to 0 (the HPA's `scaleTargetRef` when the hibernation began).
    pub scale_target_ref: CrossVersionObjectReference,
    /// The replicas it ran before; it gets them back when it wakes (at least `minReplicas`).
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// When ebb began it.
    pub since: Time,
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
    /// udaan's record of its last action, kept so a status udaan wrote stays readable; ebb does
    /// not write it (`conditions` and Events say what ebb did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<String>,
    /// Index of the range in force; absent when the defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_range: Option<i32>,
    /// The next boundaries and the settings each brings: a preview of the schedule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_transitions: Vec<ScheduledTransition>,
    /// A `minReplicas` ramp in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<RampStatus>,
    /// A hibernation in progress (`replicaSpec.hibernate`): the replicas to return to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hibernation: Option<HibernationStatus>,
    /// `Ready`, `SpecValid`, `RangesOverlap`, `Paused`...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use kube::CustomResourceExt;
    use serde_json::{Value, json};

    use super::*;

    /// Every name and field of udaan's `servicescalers.scaler.udaan.io`, so that a live migration
    /// keeps every stored object readable.
    #[test]
    fn keeps_every_name_and_field_of_udaans_crd() {
        let crd = serde_json::to_value(ServiceScaler::crd()).unwrap();
        let names = &crd["spec"]["names"];
        assert_eq!(names["plural"], "servicescalers");
        assert_eq!(names["singular"], "servicescaler");
        assert_eq!(names["kind"], "ServiceScaler");
        assert!(
            names["shortNames"]
                .as_array()
                .unwrap()
                .contains(&json!("ss")),
            "{names}"
        );
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1");
        assert!(version["subresources"]["status"].is_object());
        let root = &version["schema"]["openAPIV3Schema"];
        let hpa_fields = [
            "minReplicas",
            "maxReplicas",
            "targetCPUUtilization",
            "targetMemoryUtilization",
        ];
        let mut paths: Vec<Vec<&str>> = Vec::new();
        for field in hpa_fields {
            paths.push(vec!["spec", "hpa", field]);
            paths.push(vec!["status", "lastKnownConfig", field]);
        }
        for field in ["kind", "from", "to"] {
            paths.push(vec!["spec", "timeRangeSpec", "[]", field]);
        }
        for field in hpa_fields {
            paths.push(vec![
                "spec",
                "timeRangeSpec",
                "[]",
                "replicaSpec",
                "hpa",
                field,
            ]);
        }
        for field in [
            "timeRangeMatch",
            "lastAction",
            "lastObservedGeneration",
            "lastUpdatedTime",
        ] {
            paths.push(vec!["status", field]);
        }
        for path in paths {
            let mut node: &Value = root;
            for step in &path {
                node = if *step == "[]" {
                    &node["items"]
                } else {
                    &node["properties"][*step]
                };
            }
            assert!(!node.is_null(), "{} missing", path.join("."));
        }
    }

    /// The CEL rule on `metricTargets`, as the API server applies it.
    #[test]
    fn metric_targets_need_exactly_one_target_each() {
        let crd = serde_json::to_value(ServiceScaler::crd()).unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let object = |targets: Value| {
            json!({
                "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
                "metadata": {"name": "web"},
                "spec": {"hpa": {"maxReplicas": 3, "metricTargets": targets},
                         "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
                             "replicaSpec": {"hpa": {"metricTargets": targets}}}]},
            })
        };
        let validate = |targets: Value| {
            kube_cel::Validator::new()
                .validate(schema, &object(targets), None)
                .map_err(|e| e.to_string())
        };
        validate(json!([{"name": "queue_depth", "averageValue": "30"}])).unwrap();
        let err = validate(json!([{"name": "q", "value": "1", "averageValue": "2"}])).unwrap_err();
        assert!(err.contains("exactly one"), "{err}");
        let err = validate(json!([{"name": "q"}])).unwrap_err();
        assert!(err.contains("exactly one"), "{err}");
    }

    #[test]
    fn deletion_policy_and_range_selection_are_optional_with_udaans_spelling() {
        let spec: ServiceScalerSpec = serde_json::from_value(json!({
            "hpa": {"minReplicas": 1, "maxReplicas": 2},
            "deletionPolicy": "Orphan", "rangeSelection": "Last",
        }))
        .unwrap();
        assert_eq!(spec.deletion_policy, Some(DeletionPolicy::Orphan));
        assert_eq!(spec.range_selection, Some(RangeSelection::Last));
        let spec: ServiceScalerSpec =
            serde_json::from_value(json!({"hpa": {"maxReplicas": 2}})).unwrap();
        assert_eq!((spec.deletion_policy, spec.range_selection), (None, None));
        assert_eq!(RangeSelection::default(), RangeSelection::First);
    }
}
