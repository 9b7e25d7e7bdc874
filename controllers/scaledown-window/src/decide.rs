//! Every rule of scaledown-window, as pure functions: plain data in, decisions out. No client, no
//! clock, no I/O.
//!
//! 1. [`decide`]: from a schedule's windows, `now` and the cluster's maintenance (ClusterVersion
//!    progressing, MachineConfigPools updating: [`ClusterMaintenance`]) -> may the cluster remove
//!    nodes now ([`Decision`]), and when does that change.
//! 2. [`claim`]: which schedule manages a target object when several select it (the oldest, then
//!    the first by name); the others report a conflict and leave it alone.
//! 3. Per target kind, the minimal change that brings one object to the decision, touching only
//!    what ebb set: [`plan_cluster_autoscaler`], [`plan_node`], [`plan_machine_autoscaler`],
//!    [`plan_node_pool`], gathered for a whole target by [`plan_target`].
//! 4. Pause on the managed objects themselves: an object carrying `scaling.ebb.dev/paused` /
//!    `paused-until` ([`PauseMarks`]) gets no change at all from [`plan_target`], whichever way
//!    the decision goes, and is listed in [`TargetPlan::paused`].
//! 5. [`conditions`]: the status conditions that report all of the above, and whether the
//!    ClusterAutoscaler a `machineAutoscalers` target depends on allows scale-down.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use ebb_crds::scaledown::{ScaleDownScheduleSpec, ScaleDownTarget, Window as WindowSpec};
use ebb_runtime::conditions::ConditionUpdate;
use ebb_runtime::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, PauseState, pause_state};
use ebb_schedule::{AnyOpen, DEFAULT_HORIZON, FirstMatch, ScheduleError, Window};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::core::{Selector, SelectorExt};
use serde_json::Value;

/// The upstream cluster-autoscaler's per-node opt-out.
pub const SCALE_DOWN_DISABLED_ANNOTATION: &str =
    "cluster-autoscaler.kubernetes.io/scale-down-disabled";
/// Marks what ebb changed on a target object and for which schedule: on a Node, that ebb set
/// [`SCALE_DOWN_DISABLED_ANNOTATION`]; on a MachineAutoscaler, that ebb pinned `spec.minReplicas`;
/// on a NodePool, that ebb added a `nodes: "0"` budget. Its value is the schedule's name.
pub const DISABLED_BY_ANNOTATION: &str = "scaling.ebb.dev/scale-down-disabled-by";
/// The `spec.minReplicas` a MachineAutoscaler had before ebb pinned it.
pub const CONFIGURED_MIN_ANNOTATION: &str = "scaling.ebb.dev/configured-min-replicas";
/// The `spec.minReplicas` ebb last pinned; a different value means someone else changed it.
pub const PINNED_MIN_ANNOTATION: &str = "scaling.ebb.dev/pinned-min-replicas";
/// How many coming flips `status.nextTransitions` previews.
pub const PREVIEW_LEN: usize = 5;

// ------------------------------------------------------------------------------------------------
// The spec
// ------------------------------------------------------------------------------------------------

/// A field of the spec that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidSpec {
    /// Path of the field, e.g. `spec.windows[1].schedule`.
    pub field: String,
    /// The rule broken, quoting the value.
    pub message: String,
}

impl InvalidSpec {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InvalidSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for InvalidSpec {}

/// Parses the windows (`Window::cron` each), naming the field at fault.
///
/// # Errors
/// The first window that does not parse, as `spec.windows[i].schedule`, `.duration` or `.timeZone`.
pub fn parse_windows(windows: &[WindowSpec]) -> Result<Vec<Window>, InvalidSpec> {
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            Window::cron(&w.schedule, &w.duration, Some(&w.time_zone)).map_err(|error| {
                let field = match error {
                    ScheduleError::Duration { .. } => "duration",
                    ScheduleError::UnknownTimeZone(_) => "timeZone",
                    _ => "schedule",
                };
                InvalidSpec::new(format!("spec.windows[{i}].{field}"), error.to_string())
            })
        })
        .collect()
}

/// The four kinds of target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    /// `spec.target.clusterAutoscaler`.
    ClusterAutoscaler,
    /// `spec.target.nodeAnnotation`.
    NodeAnnotation,
    /// `spec.target.machineAutoscalers`.
    MachineAutoscalers,
    /// `spec.target.karpenterNodePools`.
    KarpenterNodePools,
}

impl TargetKind {
    /// The field of `spec.target` naming this kind.
    pub fn field(self) -> &'static str {
        match self {
            Self::ClusterAutoscaler => "clusterAutoscaler",
            Self::NodeAnnotation => "nodeAnnotation",
            Self::MachineAutoscalers => "machineAutoscalers",
            Self::KarpenterNodePools => "karpenterNodePools",
        }
    }

    /// The controller flag that switches this kind on.
    pub fn flag(self) -> &'static str {
        match self {
            Self::ClusterAutoscaler => "--enable-cluster-autoscaler",
            Self::NodeAnnotation => "--enable-node-annotation",
            Self::MachineAutoscalers => "--enable-machine-autoscalers",
            Self::KarpenterNodePools => "--enable-karpenter",
        }
    }

    /// The kind of the objects written, for messages and metrics.
    pub fn object_kind(self) -> &'static str {
        match self {
            Self::ClusterAutoscaler => "ClusterAutoscaler",
            Self::NodeAnnotation => "Node",
            Self::MachineAutoscalers => "MachineAutoscaler",
            Self::KarpenterNodePools => "NodePool",
        }
    }
}

/// Which objects a target selects, resolved from the spec.
#[derive(Clone, Debug, PartialEq)]
pub enum ResolvedTarget {
    /// The ClusterAutoscaler of this name.
    ClusterAutoscaler {
        /// Its name.
        name: String,
    },
    /// Nodes matching the selector.
    Nodes(Selector),
    /// MachineAutoscalers in the namespace matching the selector (all when `None`).
    MachineAutoscalers {
        /// Their namespace.
        namespace: String,
        /// Which of them.
        selector: Option<Selector>,
    },
    /// NodePools matching the selector (all when `None`).
    NodePools(Option<Selector>),
}

fn selector(field: &str, selector: &LabelSelector) -> Result<Selector, InvalidSpec> {
    Selector::try_from(selector.clone()).map_err(|e| InvalidSpec::new(field, e.to_string()))
}

/// The target's kind, checking that exactly one is set.
///
/// # Errors
/// `spec.target` when none or several are set.
pub fn target_kind(target: &ScaleDownTarget) -> Result<TargetKind, InvalidSpec> {
    let set: Vec<TargetKind> = [
        (
            target.cluster_autoscaler.is_some(),
            TargetKind::ClusterAutoscaler,
        ),
        (target.node_annotation.is_some(), TargetKind::NodeAnnotation),
        (
            target.machine_autoscalers.is_some(),
            TargetKind::MachineAutoscalers,
        ),
        (
            target.karpenter_node_pools.is_some(),
            TargetKind::KarpenterNodePools,
        ),
    ]
    .into_iter()
    .filter_map(|(present, kind)| present.then_some(kind))
    .collect();
    match set.as_slice() {
        [kind] => Ok(*kind),
        _ => Err(InvalidSpec::new(
            "spec.target",
            format!(
                "must set exactly one of clusterAutoscaler, nodeAnnotation, machineAutoscalers, \
                 karpenterNodePools ({} set)",
                set.len()
            ),
        )),
    }
}

/// Resolves the target's selectors.
///
/// # Errors
/// As [`target_kind`], or a label selector with an unknown operator or missing values.
pub fn resolve_target(target: &ScaleDownTarget) -> Result<ResolvedTarget, InvalidSpec> {
    match target_kind(target)? {
        TargetKind::ClusterAutoscaler => Ok(ResolvedTarget::ClusterAutoscaler {
            name: target
                .cluster_autoscaler
                .as_ref()
                .map(|c| c.name.clone())
                .unwrap_or_default(),
        }),
        TargetKind::NodeAnnotation => {
            let spec = target.node_annotation.clone().unwrap_or_default();
            Ok(ResolvedTarget::Nodes(selector(
                "spec.target.nodeAnnotation.nodeSelector",
                &spec.node_selector,
            )?))
        }
        TargetKind::MachineAutoscalers => {
            let Some(spec) = target.machine_autoscalers.as_ref() else {
                return Err(InvalidSpec::new("spec.target", "machineAutoscalers unset"));
            };
            Ok(ResolvedTarget::MachineAutoscalers {
                namespace: spec.namespace.clone(),
                selector: spec
                    .selector
                    .as_ref()
                    .map(|s| selector("spec.target.machineAutoscalers.selector", s))
                    .transpose()?,
            })
        }
        TargetKind::KarpenterNodePools => {
            let spec = target.karpenter_node_pools.clone().unwrap_or_default();
            Ok(ResolvedTarget::NodePools(
                spec.selector
                    .as_ref()
                    .map(|s| selector("spec.target.karpenterNodePools.selector", s))
                    .transpose()?,
            ))
        }
    }
}

/// Identifies one target object for selection.
#[derive(Clone, Copy, Debug)]
pub struct ObjectId<'a> {
    /// Which kind of target it belongs to.
    pub kind: TargetKind,
    /// Its namespace (MachineAutoscalers only).
    pub namespace: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
    /// Its labels.
    pub labels: &'a BTreeMap<String, String>,
}

impl ResolvedTarget {
    /// The kind of target.
    pub fn kind(&self) -> TargetKind {
        match self {
            Self::ClusterAutoscaler { .. } => TargetKind::ClusterAutoscaler,
            Self::Nodes(_) => TargetKind::NodeAnnotation,
            Self::MachineAutoscalers { .. } => TargetKind::MachineAutoscalers,
            Self::NodePools(_) => TargetKind::KarpenterNodePools,
        }
    }

    /// Whether the target selects `object`.
    pub fn selects(&self, object: &ObjectId<'_>) -> bool {
        if object.kind != self.kind() {
            return false;
        }
        let matches = |s: &Option<Selector>| s.as_ref().is_none_or(|s| s.matches(object.labels));
        match self {
            Self::ClusterAutoscaler { name } => name == object.name,
            Self::Nodes(s) => s.matches(object.labels),
            Self::MachineAutoscalers {
                namespace,
                selector,
            } => object.namespace == Some(namespace.as_str()) && matches(selector),
            Self::NodePools(s) => matches(s),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// The schedule
// ------------------------------------------------------------------------------------------------

/// Why scale-down is allowed or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Window `index` (the first open one, in list order) is open.
    WindowOpen(usize),
    /// No window is open, but cluster maintenance is under way (the ClusterVersion progressing, a
    /// MachineConfigPool updating) and `maintenance.followClusterUpgrade` is set;
    /// [`Decision::maintenance`] says which.
    ClusterUpgrade,
    /// No window is open.
    OutsideWindows,
    /// Fail-safe: the windows cannot be evaluated, so scale-down stays disabled.
    InvalidSchedule(InvalidSpec),
}

/// May the cluster remove nodes now, and when does that change?
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Scale-down allowed now.
    pub scale_down_enabled: bool,
    /// Why.
    pub reason: Reason,
    /// The first open window, in list order.
    pub active_window: Option<usize>,
    /// The maintenance that holds scale-down open with `followClusterUpgrade` (empty when none is
    /// under way or the schedule does not follow it), whether or not a window is open too.
    pub maintenance: ClusterMaintenance,
    /// The next instant `scale_down_enabled` flips, assuming the upgrade state stays as it is;
    /// `None` when it never flips again (or only when an upgrade ends, which a watch reports).
    pub next_transition: Option<DateTime<Utc>>,
    /// The next few flips and the value from each on (at most [`PREVIEW_LEN`]).
    pub next_transitions: Vec<(DateTime<Utc>, bool)>,
    /// When anything in this decision changes next (a flip, or the open window handing over to
    /// another): the instant to look again.
    pub requeue_at: Option<DateTime<Utc>>,
}

/// OpenShift maintenance as observed: what `maintenance.followClusterUpgrade` follows.
///
/// An upgrade is over for the cluster-version operator when the ClusterVersion stops progressing,
/// but the machine-config operator then still drains and reboots the nodes of each pool; a
/// MachineConfigPool also updates outside upgrades when a MachineConfig changes. Both count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterMaintenance {
    /// ClusterVersion `version` reports `Progressing=True`.
    pub cluster_version_progressing: bool,
    /// The MachineConfigPools reporting `Updating=True`, by name, sorted. Empty too where the
    /// MachineConfigPool API does not exist (not OpenShift).
    pub updating_pools: Vec<String>,
}

impl ClusterMaintenance {
    /// Only the ClusterVersion, as `--upgrading` assumes offline.
    pub fn cluster_version(progressing: bool) -> Self {
        Self {
            cluster_version_progressing: progressing,
            updating_pools: Vec::new(),
        }
    }

    /// From the ClusterVersion and the pools with [`pool_updating`], in any order.
    pub fn new(cluster_version_progressing: bool, updating_pools: Vec<String>) -> Self {
        let mut updating_pools = updating_pools;
        updating_pools.sort();
        updating_pools.dedup();
        Self {
            cluster_version_progressing,
            updating_pools,
        }
    }

    /// Maintenance is under way: the ClusterVersion progresses **or** any pool updates.
    pub fn under_way(&self) -> bool {
        self.cluster_version_progressing || !self.updating_pools.is_empty()
    }

    /// What holds maintenance open, for messages and Events ("" when nothing does).
    pub fn describe(&self) -> String {
        let pools = match self.updating_pools.as_slice() {
            [] => None,
            [one] => Some(format!("MachineConfigPool {one} is updating")),
            many => Some(format!(
                "MachineConfigPools {} are updating",
                summarize(many, 5)
            )),
        };
        let upgrading = "the cluster is upgrading (ClusterVersion version Progressing=True)";
        match (self.cluster_version_progressing, pools) {
            (true, None) => upgrading.to_owned(),
            (true, Some(pools)) => format!("{upgrading} and {pools}"),
            (false, Some(pools)) => pools,
            (false, None) => String::new(),
        }
    }
}

/// Decides whether scale-down is allowed at `now`.
///
/// Scale-down is allowed while any window is open (overlapping or touching windows merge into one
/// open period), and, with `maintenance.followClusterUpgrade`, while `maintenance` is
/// [under way](ClusterMaintenance::under_way). When a window cannot be parsed the schedule cannot be
/// decided, and scale-down is disabled (fail-safe), maintenance or not.
pub fn decide(
    spec: &ScaleDownScheduleSpec,
    now: DateTime<Utc>,
    maintenance: &ClusterMaintenance,
) -> Decision {
    let windows = match parse_windows(&spec.windows) {
        Ok(windows) => windows,
        Err(invalid) => {
            return Decision {
                scale_down_enabled: false,
                reason: Reason::InvalidSchedule(invalid),
                active_window: None,
                maintenance: ClusterMaintenance::default(),
                next_transition: None,
                next_transitions: Vec::new(),
                requeue_at: None,
            };
        }
    };
    let followed = spec
        .maintenance
        .as_ref()
        .is_some_and(|m| m.follow_cluster_upgrade);
    let maintenance = if followed && maintenance.under_way() {
        maintenance.clone()
    } else {
        ClusterMaintenance::default()
    };
    let upgrading = maintenance.under_way();
    let first_match = FirstMatch::new(windows.clone());
    let any_open = AnyOpen::new(windows);
    let active_window = any_open.open_at(now);
    // Any flip of the merged state is also a change of the first open window, so this is never
    // later than the next flip.
    let requeue_at = first_match.next_transition(now);
    let reason = match (active_window, upgrading) {
        (Some(index), _) => Reason::WindowOpen(index),
        (None, true) => Reason::ClusterUpgrade,
        (None, false) => Reason::OutsideWindows,
    };
    let (next_transition, next_transitions) = if upgrading {
        // Enabled whatever the windows do, until the upgrade ends (seen by a watch, not a clock).
        (None, Vec::new())
    } else {
        (
            any_open.next_transition(now),
            any_open.transitions(now, PREVIEW_LEN, DEFAULT_HORIZON),
        )
    };
    Decision {
        scale_down_enabled: active_window.is_some() || upgrading,
        reason,
        active_window,
        maintenance,
        next_transition,
        next_transitions,
        requeue_at,
    }
}

/// Whether a ClusterVersion's `status.conditions` say an upgrade is running: `Progressing=True`.
pub fn cluster_upgrading<'a>(conditions: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    conditions
        .into_iter()
        .any(|(type_, status)| type_ == "Progressing" && status == "True")
}

/// Whether a MachineConfigPool's `status.conditions` say it is rolling out a configuration
/// (draining and rebooting its nodes): `Updating=True`. `Degraded` or `Updated=False` alone do
/// not count: a stuck pool is not maintenance under way.
pub fn pool_updating<'a>(conditions: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    conditions
        .into_iter()
        .any(|(type_, status)| type_ == "Updating" && status == "True")
}

// ------------------------------------------------------------------------------------------------
// Who manages an object
// ------------------------------------------------------------------------------------------------

/// A live schedule competing for target objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Claimant {
    /// The schedule's name.
    pub name: String,
    /// Its `creationTimestamp`.
    pub created: Option<DateTime<Utc>>,
    /// What it selects.
    pub target: ResolvedTarget,
}

impl Claimant {
    /// Older first, then by name; a missing timestamp sorts last. The first one manages a shared
    /// object: a schedule created later never takes an object from one that was there before.
    fn rank(&self) -> (bool, Option<DateTime<Utc>>, &str) {
        (self.created.is_none(), self.created, &self.name)
    }
}

/// Who manages one target object, from one schedule's point of view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// This schedule selects it and manages it.
    Ours,
    /// This schedule selects it, but the named schedule (older, or same age and first by name)
    /// selects it too and manages it.
    LostTo(String),
    /// This schedule does not select it; another one does.
    Other,
    /// No live schedule selects it.
    Unclaimed,
}

/// Who manages `object`, seen by schedule `me`. `claimants` are the live schedules (not being
/// deleted), `me` among them unless it is being deleted.
pub fn claim(me: &str, claimants: &[Claimant], object: &ObjectId<'_>) -> Claim {
    let winner = claimants
        .iter()
        .filter(|c| c.target.selects(object))
        .min_by(|a, b| a.rank().cmp(&b.rank()));
    let selected_by_me = claimants
        .iter()
        .any(|c| c.name == me && c.target.selects(object));
    match winner {
        None => Claim::Unclaimed,
        Some(w) if w.name == me => Claim::Ours,
        Some(w) if selected_by_me => Claim::LostTo(w.name.clone()),
        Some(_) => Claim::Other,
    }
}

// ------------------------------------------------------------------------------------------------
// Pause on a managed object
// ------------------------------------------------------------------------------------------------

/// The uniform pause annotations (DESIGN §3) of one target object, as read. Evaluated at the
/// reconcile's `now` by [`PauseMarks::state`], with the same rule as a paused schedule: an
/// unparseable `paused-until` counts as paused (fail-safe).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PauseMarks {
    /// The value of `scaling.ebb.dev/paused`.
    pub paused: Option<String>,
    /// The value of `scaling.ebb.dev/paused-until`.
    pub paused_until: Option<String>,
}

impl PauseMarks {
    /// `scaling.ebb.dev/paused: "true"`.
    pub fn paused() -> Self {
        Self {
            paused: Some("true".into()),
            paused_until: None,
        }
    }

    /// `scaling.ebb.dev/paused-until: <until>` (any text: it may not parse).
    pub fn until(until: &str) -> Self {
        Self {
            paused: None,
            paused_until: Some(until.into()),
        }
    }

    /// Whether the object is paused at `now` (the shared rule of `ebb_runtime::pause`).
    pub fn state(&self, now: DateTime<Utc>) -> PauseState {
        let annotations = [
            (PAUSED_ANNOTATION, &self.paused),
            (PAUSED_UNTIL_ANNOTATION, &self.paused_until),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), value.clone()?)))
        .collect();
        let meta = ObjectMeta {
            annotations: Some(annotations),
            ..ObjectMeta::default()
        };
        pause_state(&meta, now)
    }
}

/// A managed object left alone because it is paused by its own annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PausedObject {
    /// `Kind name` or `Kind namespace/name`.
    pub object: String,
    /// Its pause, for messages and the requeue.
    pub state: PauseState,
}

// ------------------------------------------------------------------------------------------------
// Per-object plans
// ------------------------------------------------------------------------------------------------

/// `spec.scaleDown.enabled` to apply to a ClusterAutoscaler, if it must change.
///
/// The managing schedule applies its decision. An unclaimed one (only while its last schedule is
/// being deleted) is released to scale-down enabled, the autoscaler's behaviour without ebb.
pub fn plan_cluster_autoscaler(
    claim: &Claim,
    desired_enabled: bool,
    observed_enabled: Option<bool>,
) -> Option<bool> {
    let want = match claim {
        Claim::Ours => desired_enabled,
        Claim::Unclaimed => true,
        Claim::LostTo(_) | Claim::Other => return None,
    };
    (observed_enabled != Some(want)).then_some(want)
}

/// What scaledown-window sees of a Node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// The value of [`SCALE_DOWN_DISABLED_ANNOTATION`].
    pub scale_down_disabled: Option<String>,
    /// The value of [`DISABLED_BY_ANNOTATION`].
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

/// A change of one Node's annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeChange {
    /// Set [`SCALE_DOWN_DISABLED_ANNOTATION`] `"true"` and mark it as ours.
    Disable,
    /// The annotation is ebb's already, set for another schedule: mark it as ours.
    TakeOver,
    /// Remove the annotation and the mark.
    Release,
}

/// The change a Node needs.
///
/// Outside windows the managing schedule sets the annotation, unless it is already `"true"`
/// without ebb's mark (set by someone else: left alone, and kept when windows open). Inside windows
/// it removes the annotation only where ebb's mark says ebb set it. A node that no live schedule
/// selects any more loses the annotation when this schedule set it.
pub fn plan_node(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    node: &NodeView,
) -> Option<NodeChange> {
    let ours = node.disabled_by.as_deref() == Some(me);
    match claim {
        Claim::Ours if !desired_enabled => match (
            node.scale_down_disabled.as_deref(),
            node.disabled_by.as_deref(),
        ) {
            (Some("true"), None) => None,
            (Some("true"), Some(_)) if ours => None,
            (Some("true"), Some(_)) => Some(NodeChange::TakeOver),
            _ => Some(NodeChange::Disable),
        },
        Claim::Ours => node.disabled_by.is_some().then_some(NodeChange::Release),
        Claim::Unclaimed => ours.then_some(NodeChange::Release),
        Claim::LostTo(_) | Claim::Other => None,
    }
}

/// A MachineAutoscaler's `spec.scaleTargetRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScaleTargetRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
}

/// What scaledown-window sees of a MachineAutoscaler.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineAutoscalerView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// `spec.minReplicas`.
    pub min_replicas: Option<i32>,
    /// `spec.maxReplicas`.
    pub max_replicas: Option<i32>,
    /// `spec.scaleTargetRef`.
    pub target: Option<ScaleTargetRef>,
    /// The value of [`CONFIGURED_MIN_ANNOTATION`].
    pub configured_min: Option<String>,
    /// The value of [`PINNED_MIN_ANNOTATION`].
    pub pinned_min: Option<String>,
    /// The value of [`DISABLED_BY_ANNOTATION`].
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

impl MachineAutoscalerView {
    fn has_marks(&self) -> bool {
        self.configured_min.is_some() || self.pinned_min.is_some() || self.disabled_by.is_some()
    }

    /// The name of the MachineSet it scales, when its target is one.
    pub fn machine_set(&self) -> Option<&str> {
        self.target
            .as_ref()
            .filter(|t| t.kind == "MachineSet")
            .map(|t| t.name.as_str())
    }
}

/// A change of one MachineAutoscaler: only the fields that differ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineAutoscalerChange {
    /// New `spec.minReplicas`.
    pub min_replicas: Option<i32>,
    /// Annotations to set (`Some`) or remove (`None`).
    pub annotations: BTreeMap<&'static str, Option<String>>,
}

/// The outcome of planning one MachineAutoscaler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachinePlan {
    /// It is as it should be, or not this schedule's to change.
    Nothing,
    /// Write this.
    Change(MachineAutoscalerChange),
    /// It cannot be planned (a message for a condition); nothing is written to it.
    Problem(String),
}

fn parse_replicas(value: &str) -> Option<i32> {
    value.trim().parse::<i32>().ok().filter(|v| *v >= 0)
}

/// The minimum the user configured: `spec.minReplicas` when ebb has not pinned it, else the
/// annotation ebb kept, unless `spec.minReplicas` is no longer what ebb pinned (someone set it
/// since: their value is the configured minimum now).
fn configured_min(ma: &MachineAutoscalerView) -> Result<i32, String> {
    let spec_min = ma
        .min_replicas
        .ok_or_else(|| format!("MachineAutoscaler {} has no spec.minReplicas", ma.name))?;
    let Some(kept) = ma.configured_min.as_deref() else {
        return Ok(spec_min);
    };
    let kept = parse_replicas(kept).ok_or_else(|| {
        format!(
            "MachineAutoscaler {}: annotation {CONFIGURED_MIN_ANNOTATION} is {kept:?}, not a \
             non-negative integer; fix or remove it",
            ma.name
        )
    })?;
    match ma.pinned_min.as_deref().and_then(parse_replicas) {
        Some(pinned) if pinned != spec_min => Ok(spec_min),
        _ => Ok(kept),
    }
}

/// The change a MachineAutoscaler needs.
///
/// Outside windows the managing schedule pins `spec.minReplicas` to its MachineSet's current
/// replicas, so the autoscaler cannot remove machines: never below the configured minimum, never
/// raised above `spec.maxReplicas`. The configured minimum is kept in an annotation while it is
/// pinned (so a restart loses nothing); inside windows it is restored and the annotations go. A
/// MachineAutoscaler no live schedule selects any more is restored when this schedule pinned it.
pub fn plan_machine_autoscaler(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    ma: &MachineAutoscalerView,
    machine_set_replicas: Option<i32>,
) -> MachinePlan {
    let pin = match claim {
        Claim::Ours => !desired_enabled,
        Claim::Unclaimed if ma.disabled_by.as_deref() == Some(me) => false,
        Claim::Unclaimed | Claim::LostTo(_) | Claim::Other => return MachinePlan::Nothing,
    };
    if !pin && !ma.has_marks() {
        return MachinePlan::Nothing;
    }
    let configured = match configured_min(ma) {
        Ok(configured) => configured,
        Err(problem) => return MachinePlan::Problem(problem),
    };
    let target_min = if pin {
        let Some(machine_set) = ma.machine_set() else {
            return MachinePlan::Problem(format!(
                "MachineAutoscaler {}: spec.scaleTargetRef is not a MachineSet",
                ma.name
            ));
        };
        let Some(replicas) = machine_set_replicas else {
            return MachinePlan::Problem(format!(
                "MachineAutoscaler {}: MachineSet {machine_set} not found",
                ma.name
            ));
        };
        let ceiling = ma.max_replicas.unwrap_or(i32::MAX);
        configured.max(replicas.min(ceiling))
    } else {
        configured
    };
    let keep_marks = target_min != configured;
    let want = |value: String| keep_marks.then_some(value);
    let desired: [(&'static str, Option<String>); 3] = [
        (CONFIGURED_MIN_ANNOTATION, want(configured.to_string())),
        (PINNED_MIN_ANNOTATION, want(target_min.to_string())),
        (DISABLED_BY_ANNOTATION, want(me.to_owned())),
    ];
    let observed = [&ma.configured_min, &ma.pinned_min, &ma.disabled_by];
    let change = MachineAutoscalerChange {
        min_replicas: (ma.min_replicas != Some(target_min)).then_some(target_min),
        annotations: desired
            .into_iter()
            .zip(observed)
            .filter(|((_, want), have)| want != *have)
            .map(|((key, want), _)| (key, want))
            .collect(),
    };
    if change == MachineAutoscalerChange::default() {
        MachinePlan::Nothing
    } else {
        MachinePlan::Change(change)
    }
}

/// What scaledown-window sees of a Karpenter NodePool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePoolView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// `spec.disruption.budgets`, as they are (absent: `None`).
    pub budgets: Option<Vec<Value>>,
    /// The value of [`DISABLED_BY_ANNOTATION`]: ebb added one [`ebb_budget`] to the list.
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

/// A change of one NodePool.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePoolChange {
    /// The whole new `spec.disruption.budgets` list, when it changes.
    pub budgets: Option<Vec<Value>>,
    /// The new value of [`DISABLED_BY_ANNOTATION`] (`None`: remove it).
    pub disabled_by: Option<String>,
}

/// The disruption budget ebb adds outside windows: no node may be disrupted, for any reason, at
/// any time.
pub fn ebb_budget() -> Value {
    serde_json::json!({ "nodes": "0" })
}

/// Whether a budget has exactly the shape of [`ebb_budget`]. A user's budget of the same shape is
/// indistinguishable and equivalent; the annotation says that one such budget is ebb's.
pub fn is_ebb_budget(budget: &Value) -> bool {
    *budget == ebb_budget()
}

/// The change a NodePool needs.
///
/// Outside windows the managing schedule makes sure one [`ebb_budget`] it accounts for is in the
/// list (appended, with [`DISABLED_BY_ANNOTATION`] recording that it did); inside windows it
/// removes one such budget and the annotation. Every other budget, and any budget when the
/// annotation is absent, stays as it is, in order. A NodePool no live schedule selects any more
/// loses the budget when this schedule added it.
pub fn plan_node_pool(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    pool: &NodePoolView,
) -> Option<NodePoolChange> {
    let budgets = pool.budgets.clone().unwrap_or_default();
    let has_ebb_budget = budgets.iter().any(is_ebb_budget);
    let release = match claim {
        Claim::Ours if !desired_enabled => {
            return match (&pool.disabled_by, has_ebb_budget) {
                (Some(by), true) if by == me => None,
                (Some(_), true) => Some(NodePoolChange {
                    budgets: None,
                    disabled_by: Some(me.to_owned()),
                }),
                _ => {
                    let mut budgets = budgets;
                    budgets.push(ebb_budget());
                    Some(NodePoolChange {
                        budgets: Some(budgets),
                        disabled_by: Some(me.to_owned()),
                    })
                }
            };
        }
        Claim::Ours => pool.disabled_by.is_some(),
        Claim::Unclaimed => pool.disabled_by.as_deref() == Some(me),
        Claim::LostTo(_) | Claim::Other => false,
    };
    if !release {
        return None;
    }
    let mut budgets = budgets;
    let removed = budgets
        .iter()
        .rposition(is_ebb_budget)
        .map(|i| budgets.remove(i))
        .is_some();
    Some(NodePoolChange {
        budgets: removed.then_some(budgets),
        disabled_by: None,
    })
}

// ------------------------------------------------------------------------------------------------
// A whole target
// ------------------------------------------------------------------------------------------------

/// The observed objects of one target kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// The ClusterAutoscaler named by the target, and its `spec.scaleDown.enabled` if found.
    ClusterAutoscaler {
        /// The name looked up.
        name: String,
        /// `None`: not found; `Some(None)`: found without `spec.scaleDown.enabled`.
        enabled: Option<Option<bool>>,
        /// Its pause annotations (none when not found).
        pause: PauseMarks,
    },
    /// Every node.
    Nodes(Vec<NodeView>),
    /// Every MachineAutoscaler of the target's namespace and the replicas of its MachineSets.
    MachineAutoscalers {
        /// The MachineAutoscalers.
        autoscalers: Vec<MachineAutoscalerView>,
        /// MachineSet name -> current replicas.
        machine_sets: BTreeMap<String, i32>,
        /// The ClusterAutoscaler [`CLUSTER_AUTOSCALER_NAME`] they depend on.
        cluster_autoscaler: ClusterAutoscalerScaleDown,
    },
    /// Every NodePool.
    NodePools(Vec<NodePoolView>),
}

/// The one ClusterAutoscaler of an OpenShift cluster, which MachineAutoscalers depend on.
pub const CLUSTER_AUTOSCALER_NAME: &str = "default";

/// Whether the ClusterAutoscaler lets the cluster-autoscaler remove nodes at all. A
/// `machineAutoscalers` target only moves the MachineAutoscalers' minimum: inside windows nodes go
/// only if the ClusterAutoscaler has `spec.scaleDown.enabled: true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterAutoscalerScaleDown {
    /// There is no ClusterAutoscaler [`CLUSTER_AUTOSCALER_NAME`] (or no API for it).
    Missing,
    /// Its `spec.scaleDown.enabled` is not `true`: the value, `None` when unset.
    Off(Option<bool>),
    /// `spec.scaleDown.enabled: true`.
    On,
}

impl ClusterAutoscalerScaleDown {
    /// From a lookup: `None` not found, else its `spec.scaleDown.enabled` if set.
    pub fn from_lookup(found: Option<Option<bool>>) -> Self {
        match found {
            None => Self::Missing,
            Some(Some(true)) => Self::On,
            Some(enabled) => Self::Off(enabled),
        }
    }
}

/// One write to a target object.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Apply `spec.scaleDown.enabled`.
    ClusterAutoscaler {
        /// Its name.
        name: String,
        /// The value.
        enabled: bool,
    },
    /// Change a node's annotations.
    Node {
        /// Its name.
        name: String,
        /// The precondition.
        resource_version: Option<String>,
        /// What to do.
        change: NodeChange,
    },
    /// Change a MachineAutoscaler.
    MachineAutoscaler {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The precondition.
        resource_version: Option<String>,
        /// What to do.
        change: MachineAutoscalerChange,
    },
    /// Change a NodePool.
    NodePool {
        /// Its name.
        name: String,
        /// The precondition.
        resource_version: Option<String>,
        /// What to do.
        change: NodePoolChange,
    },
}

impl Change {
    /// The target kind written.
    pub fn kind(&self) -> TargetKind {
        match self {
            Self::ClusterAutoscaler { .. } => TargetKind::ClusterAutoscaler,
            Self::Node { .. } => TargetKind::NodeAnnotation,
            Self::MachineAutoscaler { .. } => TargetKind::MachineAutoscalers,
            Self::NodePool { .. } => TargetKind::KarpenterNodePools,
        }
    }

    /// A short description for Events and messages.
    pub fn describe(&self) -> String {
        match self {
            Self::ClusterAutoscaler { name, enabled } => {
                format!("set spec.scaleDown.enabled={enabled} on ClusterAutoscaler {name}")
            }
            Self::Node { name, change, .. } => match change {
                NodeChange::Disable => {
                    format!("annotate Node {name} {SCALE_DOWN_DISABLED_ANNOTATION}=true")
                }
                NodeChange::TakeOver => format!("take over the annotation of Node {name}"),
                NodeChange::Release => {
                    format!("remove {SCALE_DOWN_DISABLED_ANNOTATION} from Node {name}")
                }
            },
            Self::MachineAutoscaler {
                namespace,
                name,
                change,
                ..
            } => match change.min_replicas {
                Some(min) => {
                    format!("set spec.minReplicas={min} on MachineAutoscaler {namespace}/{name}")
                }
                None => format!("update the annotations of MachineAutoscaler {namespace}/{name}"),
            },
            Self::NodePool { name, change, .. } => match (&change.budgets, &change.disabled_by) {
                (Some(_), Some(_)) => format!("add the nodes: \"0\" budget to NodePool {name}"),
                (Some(_), None) => format!("remove the nodes: \"0\" budget from NodePool {name}"),
                (None, _) => format!("update the annotation of NodePool {name}"),
            },
        }
    }
}

/// A target object another schedule manages although this one selects it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// `Kind name` or `Kind namespace/name`.
    pub object: String,
    /// The schedule that manages it.
    pub managed_by: String,
}

/// Everything one schedule does to its target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetPlan {
    /// The writes, in a stable order.
    pub changes: Vec<Change>,
    /// How many objects this schedule selects.
    pub selected: usize,
    /// How many of them it manages.
    pub managed: usize,
    /// The selected objects it leaves to an older schedule.
    pub conflicts: Vec<Conflict>,
    /// Objects that cannot be planned, with why.
    pub problems: Vec<String>,
    /// For a target that depends on the ClusterAutoscaler (`machineAutoscalers`): what it allows.
    pub cluster_autoscaler: Option<ClusterAutoscalerScaleDown>,
    /// The objects it manages but leaves exactly as they are because they carry a pause
    /// annotation (counted in `managed`).
    pub paused: Vec<PausedObject>,
}

impl TargetPlan {
    /// The earliest instant a managed object's `paused-until` expires: the reconcile looks again
    /// then, so the pause ends on time.
    pub fn resume_at(&self) -> Option<DateTime<Utc>> {
        self.paused.iter().filter_map(|p| p.state.resume_at()).min()
    }
}

/// Plans one schedule's target: `desired_enabled` is its decision, `None` while it is being
/// deleted (then `me` is not among `claimants`, and what it set is released unless another
/// schedule takes over).
///
/// An object paused at `now` by its own `scaling.ebb.dev/paused` / `paused-until` gets no change
/// at all, neither enabling nor disabling scale-down, nor a release on deletion: the user's
/// explicit exception, above the fail-safe. The ones this schedule manages are listed in
/// [`TargetPlan::paused`].
pub fn plan_target(
    me: &str,
    claimants: &[Claimant],
    desired_enabled: Option<bool>,
    observed: &Observed,
    now: DateTime<Utc>,
) -> TargetPlan {
    let mut plan = TargetPlan::default();
    // Whether the object is paused (then it is left alone), recording it when it is ours.
    let paused = |plan: &mut TargetPlan, claim: &Claim, object: &str, marks: &PauseMarks| {
        let state = marks.state(now);
        if !state.is_paused() {
            return false;
        }
        if *claim == Claim::Ours {
            plan.paused.push(PausedObject {
                object: object.to_owned(),
                state,
            });
        }
        true
    };
    let desired = desired_enabled.unwrap_or(true);
    let no_labels = BTreeMap::new();
    let claim_of = |plan: &mut TargetPlan, id: ObjectId<'_>, label: String| {
        let claim = claim(me, claimants, &id);
        match &claim {
            Claim::Ours => {
                plan.selected += 1;
                plan.managed += 1;
            }
            Claim::LostTo(winner) => {
                plan.selected += 1;
                plan.conflicts.push(Conflict {
                    object: label,
                    managed_by: winner.clone(),
                });
            }
            Claim::Other | Claim::Unclaimed => {}
        }
        claim
    };
    match observed {
        Observed::ClusterAutoscaler {
            name,
            enabled,
            pause,
        } => {
            // Not found: nothing is selected, so nothing is claimed either.
            if let Some(enabled) = enabled {
                let id = ObjectId {
                    kind: TargetKind::ClusterAutoscaler,
                    namespace: None,
                    name,
                    labels: &no_labels,
                };
                let label = format!("ClusterAutoscaler {name}");
                let claim = claim_of(&mut plan, id, label.clone());
                if !paused(&mut plan, &claim, &label, pause)
                    && let Some(set) = plan_cluster_autoscaler(&claim, desired, *enabled)
                {
                    plan.changes.push(Change::ClusterAutoscaler {
                        name: name.clone(),
                        enabled: set,
                    });
                }
            }
        }
        Observed::Nodes(nodes) => {
            for node in nodes {
                let id = ObjectId {
                    kind: TargetKind::NodeAnnotation,
                    namespace: None,
                    name: &node.name,
                    labels: &node.labels,
                };
                let label = format!("Node {}", node.name);
                let claim = claim_of(&mut plan, id, label.clone());
                if paused(&mut plan, &claim, &label, &node.pause) {
                    continue;
                }
                if let Some(change) = plan_node(me, &claim, desired, node) {
                    plan.changes.push(Change::Node {
                        name: node.name.clone(),
                        resource_version: node.resource_version.clone(),
                        change,
                    });
                }
            }
        }
        Observed::MachineAutoscalers {
            autoscalers,
            machine_sets,
            cluster_autoscaler,
        } => {
            plan.cluster_autoscaler = Some(*cluster_autoscaler);
            for ma in autoscalers {
                let id = ObjectId {
                    kind: TargetKind::MachineAutoscalers,
                    namespace: Some(&ma.namespace),
                    name: &ma.name,
                    labels: &ma.labels,
                };
                let label = format!("MachineAutoscaler {}/{}", ma.namespace, ma.name);
                let claim = claim_of(&mut plan, id, label.clone());
                if paused(&mut plan, &claim, &label, &ma.pause) {
                    continue;
                }
                let replicas = ma
                    .machine_set()
                    .and_then(|ms| machine_sets.get(ms).copied());
                match plan_machine_autoscaler(me, &claim, desired, ma, replicas) {
                    MachinePlan::Nothing => {}
                    MachinePlan::Change(change) => plan.changes.push(Change::MachineAutoscaler {
                        namespace: ma.namespace.clone(),
                        name: ma.name.clone(),
                        resource_version: ma.resource_version.clone(),
                        change,
                    }),
                    MachinePlan::Problem(problem) => plan.problems.push(problem),
                }
            }
        }
        Observed::NodePools(pools) => {
            for pool in pools {
                let id = ObjectId {
                    kind: TargetKind::KarpenterNodePools,
                    namespace: None,
                    name: &pool.name,
                    labels: &pool.labels,
                };
                let label = format!("NodePool {}", pool.name);
                let claim = claim_of(&mut plan, id, label.clone());
                if paused(&mut plan, &claim, &label, &pool.pause) {
                    continue;
                }
                if let Some(change) = plan_node_pool(me, &claim, desired, pool) {
                    plan.changes.push(Change::NodePool {
                        name: pool.name.clone(),
                        resource_version: pool.resource_version.clone(),
                        change,
                    });
                }
            }
        }
    }
    plan
}

// ------------------------------------------------------------------------------------------------
// Conditions
// ------------------------------------------------------------------------------------------------

/// Condition type: the target is as the decision wants.
pub const READY: &str = "Ready";
/// Condition type: the spec can be evaluated.
pub const SCHEDULE_VALID: &str = "ScheduleValid";
/// Condition type: another schedule manages some of the selected objects.
pub const TARGET_CONFLICT: &str = "TargetConflict";
/// Condition type: the schedule is paused by annotation (reason `Paused`), or some of the objects
/// it manages are, and are left as they are (reason [`OBJECTS_PAUSED`]).
pub const PAUSED: &str = "Paused";
/// `Paused` reason (and Event reason): managed objects carry their own pause annotation.
pub const OBJECTS_PAUSED: &str = "TargetObjectsPaused";
/// Condition type: the target selects nothing.
pub const TARGET_NOT_FOUND: &str = "TargetNotFound";
/// Condition type: the ClusterAutoscaler a `machineAutoscalers` target depends on allows
/// scale-down (`spec.scaleDown.enabled: true`). Reported only for such targets.
pub const CLUSTER_AUTOSCALER_READY: &str = "ClusterAutoscalerReady";

/// What happened to the target in this reconcile.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetOutcome {
    /// `spec.target` cannot be resolved.
    Invalid(InvalidSpec),
    /// The target's kind is switched off by a controller flag.
    Disabled(TargetKind),
    /// Paused: the target was not looked at.
    Paused(String),
    /// Planned, and applied unless `dry_run` (then the changes are only intended).
    Planned {
        /// The target kind.
        kind: TargetKind,
        /// The plan.
        plan: TargetPlan,
        /// `--dry-run`: nothing was written.
        dry_run: bool,
    },
}

/// At most `limit` items, then "and N more".
pub fn summarize(items: &[String], limit: usize) -> String {
    let shown = items
        .iter()
        .take(limit)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > limit {
        format!("{shown} and {} more", items.len() - limit)
    } else {
        shown
    }
}

fn decision_message(decision: &Decision) -> String {
    match &decision.reason {
        Reason::WindowOpen(i) => format!("scale-down enabled: window {i} is open"),
        Reason::ClusterUpgrade => {
            format!("scale-down enabled: {}", decision.maintenance.describe())
        }
        Reason::OutsideWindows => "scale-down disabled: no window is open".to_owned(),
        Reason::InvalidSchedule(invalid) => {
            format!("scale-down disabled (fail-safe: the schedule cannot be decided): {invalid}")
        }
    }
}

/// The conditions reporting a decision and what became of it. Conditions about the target
/// (`TargetConflict`, `TargetNotFound`, and `ClusterAutoscalerReady` for a target that depends on
/// the ClusterAutoscaler) are only reported when the target was looked at.
pub fn conditions(
    decision: &Decision,
    outcome: &TargetOutcome,
    generation: Option<i64>,
) -> Vec<ConditionUpdate> {
    let cond = |type_: &str, status: bool, reason: &str, message: String| {
        ConditionUpdate::new(type_, status, reason, message).observed_generation(generation)
    };
    let mut out = Vec::new();
    let summary = decision_message(decision);

    let schedule_valid = match (&decision.reason, outcome) {
        (_, TargetOutcome::Invalid(invalid)) => {
            cond(SCHEDULE_VALID, false, "InvalidTarget", invalid.to_string())
        }
        (Reason::InvalidSchedule(invalid), _) => cond(
            SCHEDULE_VALID,
            false,
            "InvalidSchedule",
            invalid.to_string(),
        ),
        _ => cond(
            SCHEDULE_VALID,
            true,
            "Valid",
            "the windows and the target are valid".into(),
        ),
    };
    out.push(schedule_valid);

    out.push(match outcome {
        TargetOutcome::Paused(why) => cond(PAUSED, true, "Paused", why.clone()),
        TargetOutcome::Planned { plan, .. } if !plan.paused.is_empty() => cond(
            PAUSED,
            true,
            OBJECTS_PAUSED,
            format!(
                "the schedule is not paused; paused by their own annotation, left as they are: {}",
                paused_list(plan)
            ),
        ),
        _ => cond(PAUSED, false, "NotPaused", "not paused".into()),
    });

    let ready = match outcome {
        TargetOutcome::Invalid(invalid) => cond(
            READY,
            false,
            "InvalidTarget",
            format!("{summary}; nothing written: {invalid}"),
        ),
        TargetOutcome::Disabled(kind) => cond(
            READY,
            false,
            "TargetDisabled",
            format!(
                "{summary}; nothing written: target {} is switched off in this controller \
                 (flag {})",
                kind.field(),
                kind.flag()
            ),
        ),
        TargetOutcome::Paused(why) => cond(
            READY,
            false,
            "Paused",
            format!("{summary}; nothing written: {why}"),
        ),
        TargetOutcome::Planned {
            kind,
            plan,
            dry_run,
        } => {
            let (conflict, not_found) = target_conditions(*kind, plan, &cond);
            out.push(conflict);
            out.push(not_found);
            if let Some(found) = plan.cluster_autoscaler {
                out.push(cluster_autoscaler_condition(*kind, found, &cond));
            }
            let written = plan.managed.saturating_sub(plan.paused.len());
            let objects = format!(
                "{written} {}{}",
                kind.object_kind(),
                if written == 1 { "" } else { "s" }
            );
            // Partly paused: said in every message below (the Paused condition says it too).
            let note = if plan.paused.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} of {} paused by annotation, left as they are: {}",
                    plan.paused.len(),
                    plan.managed,
                    paused_list(plan)
                )
            };
            let changes: Vec<String> = plan.changes.iter().map(Change::describe).collect();
            if plan.selected == 0 {
                cond(
                    READY,
                    false,
                    "TargetNotFound",
                    format!("{summary}; the target selects no {}", kind.object_kind()),
                )
            } else if plan.managed == 0 {
                cond(
                    READY,
                    false,
                    "TargetConflict",
                    format!("{summary}; every selected object is managed by another schedule"),
                )
            } else if plan.paused.len() == plan.managed {
                cond(
                    READY,
                    false,
                    "TargetPaused",
                    format!(
                        "{summary}; nothing written: every managed {} is paused by its own \
                         annotation: {}",
                        kind.object_kind(),
                        paused_list(plan)
                    ),
                )
            } else if !plan.problems.is_empty() {
                cond(
                    READY,
                    false,
                    "TargetInvalid",
                    format!("{summary}; {}{note}", summarize(&plan.problems, 3)),
                )
            } else if *dry_run && !changes.is_empty() {
                cond(
                    READY,
                    false,
                    "DryRun",
                    format!("{summary}; dry-run, would {}{note}", summarize(&changes, 3)),
                )
            } else if let Reason::InvalidSchedule(_) = decision.reason {
                cond(
                    READY,
                    false,
                    "InvalidSchedule",
                    format!("{summary}; applied to {objects}{note}"),
                )
            } else {
                let reason = if decision.scale_down_enabled {
                    "ScaleDownEnabled"
                } else {
                    "ScaleDownDisabled"
                };
                cond(
                    READY,
                    true,
                    reason,
                    format!("{summary}; applied to {objects}{note}"),
                )
            }
        }
    };
    out.push(ready);
    out
}

/// The first few paused objects and why, e.g. `Node w1 (paused by annotation ...)`.
fn paused_list(plan: &TargetPlan) -> String {
    let paused: Vec<String> = plan
        .paused
        .iter()
        .map(|p| format!("{} ({})", p.object, p.state))
        .collect();
    summarize(&paused, 3)
}

fn cluster_autoscaler_condition(
    kind: TargetKind,
    found: ClusterAutoscalerScaleDown,
    cond: &dyn Fn(&str, bool, &str, String) -> ConditionUpdate,
) -> ConditionUpdate {
    let depends = format!(
        "{} targets depend on ClusterAutoscaler {CLUSTER_AUTOSCALER_NAME} with \
         spec.scaleDown.enabled: true",
        kind.field()
    );
    let effect = "inside windows ebb restores the configured minimum, but the autoscaler removes no \
                  node";
    match found {
        ClusterAutoscalerScaleDown::On => cond(
            CLUSTER_AUTOSCALER_READY,
            true,
            "ClusterAutoscalerScaleDownEnabled",
            format!("{depends}, and it has"),
        ),
        ClusterAutoscalerScaleDown::Off(enabled) => cond(
            CLUSTER_AUTOSCALER_READY,
            false,
            "ClusterAutoscalerScaleDownDisabled",
            format!(
                "{depends}; it has {}: {effect}",
                enabled.map_or_else(
                    || "spec.scaleDown.enabled unset".to_owned(),
                    |e| format!("spec.scaleDown.enabled: {e}")
                )
            ),
        ),
        ClusterAutoscalerScaleDown::Missing => cond(
            CLUSTER_AUTOSCALER_READY,
            false,
            "ClusterAutoscalerNotFound",
            format!("{depends}; there is none, so no MachineAutoscaler takes effect"),
        ),
    }
}

fn target_conditions(
    kind: TargetKind,
    plan: &TargetPlan,
    cond: &dyn Fn(&str, bool, &str, String) -> ConditionUpdate,
) -> (ConditionUpdate, ConditionUpdate) {
    let conflict = if plan.conflicts.is_empty() {
        cond(
            TARGET_CONFLICT,
            false,
            "NoConflict",
            "no other schedule selects these objects".into(),
        )
    } else {
        let by: Vec<String> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (managed by {})", c.object, c.managed_by))
            .collect();
        cond(
            TARGET_CONFLICT,
            true,
            "TargetConflict",
            format!(
                "an older schedule (or one first by name) also selects {}; this schedule leaves \
                 them alone",
                summarize(&by, 3)
            ),
        )
    };
    let not_found = if plan.selected == 0 {
        cond(
            TARGET_NOT_FOUND,
            true,
            "TargetNotFound",
            format!(
                "spec.target.{} selects no {}",
                kind.field(),
                kind.object_kind()
            ),
        )
    } else {
        cond(
            TARGET_NOT_FOUND,
            false,
            "TargetFound",
            format!("{} selected", plan.selected),
        )
    };
    (conflict, not_found)
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
