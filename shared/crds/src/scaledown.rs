//! `scaling.ebb.dev/v1alpha1` `ScaleDownSchedule`: cluster scale-down allowed only inside time windows.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::service_scaler::{DURATION_PATTERN, EXCLUDED_DATE_PATTERN};

/// Decides from time windows whether the cluster may remove nodes now, and applies that to one target.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "scaling.ebb.dev",
    version = "v1alpha1",
    kind = "ScaleDownSchedule",
    doc = "ScaleDownSchedule lets the cluster remove nodes only inside its windows (and during cluster upgrades when asked): outside them ebb's scaledown-window holds scale-down disabled on the target (a ClusterAutoscaler, node annotations, MachineAutoscaler minimums or Karpenter NodePool budgets).",
    plural = "scaledownschedules",
    status = "ScaleDownScheduleStatus",
    shortname = "sds",
    category = "ebb",
    derive = "PartialEq",
    printcolumn(
        name = "Scale-Down",
        type_ = "boolean",
        json_path = ".status.scaleDownEnabled"
    ),
    printcolumn(name = "Window", type_ = "integer", json_path = ".status.activeWindow"),
    printcolumn(
        name = "Next",
        type_ = "date",
        json_path = ".status.nextTransitionTime"
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
pub struct ScaleDownScheduleSpec {
    /// What scale-down is switched on and off for. Exactly one target.
    pub target: ScaleDownTarget,

    /// Scale-down is allowed while any window is open; overlapping windows merge.
    #[serde(default)]
    #[schemars(length(max = 32))]
    pub windows: Vec<Window>,

    /// Windows that follow cluster maintenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<Maintenance>,
}

/// Exactly one of the four ways to switch scale-down.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("[has(self.clusterAutoscaler), has(self.nodeAnnotation), has(self.machineAutoscalers), has(self.karpenterNodePools)].filter(x, x).size() == 1").message("target must set exactly one of clusterAutoscaler, nodeAnnotation, machineAutoscalers, karpenterNodePools"))]
pub struct ScaleDownTarget {
    /// OpenShift `autoscaling.openshift.io/v1` ClusterAutoscaler: ebb owns `spec.scaleDown.enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_autoscaler: Option<ClusterAutoscalerTarget>,

    /// Upstream cluster-autoscaler: outside windows the selected nodes carry
    /// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_annotation: Option<NodeAnnotationTarget>,

    /// OpenShift MachineAutoscalers: outside windows `spec.minReplicas` is pinned to the
    /// MachineSet's current size; inside windows the configured minimum is restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_autoscalers: Option<MachineAutoscalersTarget>,

    /// Karpenter `karpenter.sh/v1` NodePools: outside windows a `nodes: "0"` disruption budget
    /// owned by ebb is present (for every disruption reason, or those in `reasons`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karpenter_node_pools: Option<KarpenterNodePoolsTarget>,
}

/// An OpenShift ClusterAutoscaler (cluster-scoped).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAutoscalerTarget {
    /// Name of the ClusterAutoscaler. OpenShift allows only `default`.
    #[serde(default = "default_cluster_autoscaler_name")]
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

fn default_cluster_autoscaler_name() -> String {
    "default".into()
}

impl Default for ClusterAutoscalerTarget {
    fn default() -> Self {
        Self {
            name: default_cluster_autoscaler_name(),
        }
    }
}

/// Nodes whose scale-down the upstream cluster-autoscaler honours per node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeAnnotationTarget {
    /// Which nodes. An empty selector selects every node.
    #[serde(default)]
    pub node_selector: LabelSelector,
}

/// OpenShift MachineAutoscalers (`autoscaling.openshift.io/v1beta1`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineAutoscalersTarget {
    /// Namespace of the MachineAutoscalers and their MachineSets.
    #[serde(default = "default_machine_api_namespace")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// Which MachineAutoscalers. Unset: all in the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

fn default_machine_api_namespace() -> String {
    "openshift-machine-api".into()
}

/// Karpenter NodePools (cluster-scoped).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KarpenterNodePoolsTarget {
    /// Which NodePools. Unset: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// The disruption reasons the budget ebb adds outside windows blocks (Karpenter's budget
    /// `reasons`). Empty (the default): every reason, so no node is disrupted outside windows.
    /// Naming some lets the others through outside windows: `[Underutilized]` still lets
    /// Karpenter remove empty nodes (`Empty`) and replace drifted ones (`Drifted`: an AMI or
    /// NodeClass change), and blocks only consolidation of nodes that run pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 3))]
    pub reasons: Vec<DisruptionReason>,
}

/// A Karpenter disruption reason (`karpenter.sh/v1` NodePool `spec.disruption.budgets[].reasons`).
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum DisruptionReason {
    /// Consolidation of nodes whose pods fit elsewhere.
    Underutilized,
    /// Removal of nodes that run no pods (besides DaemonSets).
    Empty,
    /// Replacement of nodes that no longer match their NodePool or NodeClass.
    Drifted,
}

impl DisruptionReason {
    /// The name Karpenter uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Underutilized => "Underutilized",
            Self::Empty => "Empty",
            Self::Drifted => "Drifted",
        }
    }
}

/// A window: recurring (opens at each `schedule`, stays open for `duration`), or once (`from`
/// to `to`, as a ServiceScaler's `ZonedDateTime` range: a freeze period, a one-off maintenance
/// night).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.schedule) == has(self.duration)").message("schedule and duration must be given together"),
    validation = Rule::new("has(self.from) == has(self.to)").message("from and to must be given together"),
    validation = Rule::new("has(self.schedule) != has(self.from)").message("a window is either recurring (schedule and duration) or once (from and to)"),
    validation = Rule::new("!has(self.from) || (self.from.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$') && self.to.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$'))").message("from/to must be RFC 3339, e.g. 2026-12-24T18:00:00+01:00"),
)]
pub struct Window {
    /// When the window opens: standard five-field cron, as in a Kubernetes CronJob (`0 20 * * 1-5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 9, max = 128))]
    pub schedule: Option<String>,
    /// How long it stays open, in elapsed time (`11h`, `30m`, `1h30m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 32), regex(pattern = DURATION_PATTERN))]
    pub duration: Option<String>,
    /// Once: opens at this instant (RFC 3339 with an offset, `2026-12-24T18:00:00+01:00`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub from: Option<String>,
    /// Once: closes at this instant (exclusive), after `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub to: Option<String>,
    /// IANA time zone the schedule is read in (`Europe/Zurich`). `from` and `to` carry their own
    /// offsets and ignore it.
    #[serde(default = "default_time_zone")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: String,
    /// Local dates on which the window stays closed: `2026-12-25`, or an inclusive range
    /// `2026-12-24/2027-01-01`, whole days in `timeZone` (UTC for a window given by `from` and
    /// `to`), DST included; a window crossing midnight into or out of an excluded day is cut at
    /// midnight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 366), inner(regex(pattern = EXCLUDED_DATE_PATTERN)))]
    pub exclude_dates: Vec<String>,
    /// HolidayCalendars (cluster-scoped, by name) whose dates the window excludes as it does
    /// `excludeDates`. A calendar that is missing or holds an invalid date makes the spec
    /// invalid (`SpecValid=False` naming it): scale-down is not enabled until it is fixed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 253), regex(pattern = crate::calendar::CALENDAR_NAME_PATTERN)))]
    pub exclude_calendars: Vec<String>,
}

fn default_time_zone() -> String {
    "UTC".into()
}

/// Windows that follow cluster maintenance.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Maintenance {
    /// Also allow scale-down while OpenShift maintenance runs: the `config.openshift.io/v1`
    /// ClusterVersion `version` reports `Progressing=True` (an upgrade is running), or any
    /// `machineconfiguration.openshift.io/v1` MachineConfigPool reports `Updating=True` (its
    /// nodes are still being drained and rebooted after the upgrade).
    #[serde(default)]
    pub follow_cluster_upgrade: bool,
}

/// A coming flip of `scaleDownEnabled`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownTransition {
    /// When it flips.
    pub at: Time,
    /// The value from then on.
    pub scale_down_enabled: bool,
}

/// What the controller decided and applied.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownScheduleStatus {
    /// Whether scale-down is allowed now (and applied to the target, unless paused or dry-run).
    #[serde(default)]
    pub scale_down_enabled: bool,
    /// Index of the window that is open; absent outside windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_window: Option<i32>,
    /// When `scaleDownEnabled` flips next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_transition_time: Option<Time>,
    /// The next few flips: a preview of the schedule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_transitions: Vec<ScaleDownTransition>,
    /// `metadata.generation` last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `ScheduleValid`, `TargetConflict`, `Paused`...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
