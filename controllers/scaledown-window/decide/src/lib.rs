//! Every rule of scaledown-window, as pure functions: plain data in, decisions out. No client, no
//! clock, no I/O.
//!
//! 0. [`reads`] and [`decide`]: one pass over a schedule, in two calls: what to read, then the
//!    whole plan (finalizer, target writes, status, Events, gauges, requeue) from what was read
//!    ([`pass`]); [`uninstall`] is the same for `cleanup`. The rules below are its parts.
//! 1. [`decide_windows`]: from a schedule's windows, `now` and the cluster's maintenance (ClusterVersion
//!    progressing, MachineConfigPools updating: [`ClusterMaintenance`]) -> may the cluster remove
//!    nodes now ([`Decision`]), and when does that change.
//! 2. [`claim`]: which schedule manages a target object when several select it (the oldest, then
//!    the first by name); the others report a conflict and leave it alone.
//! 3. Per target kind, the minimal change that brings one object to the decision, touching only
//!    what ebb set: [`decide_cluster_autoscaler`], [`decide_node`], [`decide_machine_autoscaler`],
//!    [`decide_node_pool`] (each in its kind's module of [`targets`](crate::targets), with its view
//!    and patch), gathered for a whole target by [`decide_target`].
//! 4. Pause on the managed objects themselves: an object carrying `scaling.ebb.dev/paused` /
//!    `paused-until` ([`PauseMarks`]) gets no change at all from [`decide_target`], whichever way
//!    the decision goes, and is listed in [`TargetDecision::paused`].
//! 5. [`report`]: the status, conditions and Events that report all of the above (whether the
//!    ClusterAutoscaler a `machineAutoscalers` target depends on allows scale-down too), and when
//!    to look again ([`report::report`]).
//!
//! This crate (`scaledown-window-decide`, the binary's `decide` module; its [`targets`] the
//! binary's `targets`) depends on the pure crates only (ebb-core, ebb-crds, ebb-schedule: no
//! client, no runtime; `make crds-check` checks it).

pub mod pass;
pub mod report;
pub mod targets;
pub mod writes;

pub use pass::{
    EnabledTargets, Observed, Pass, Reads, Settings, TargetRead, Uninstall, decide, reads,
    uninstall,
};

pub use writes::{
    FINALIZER, FinalizerStep, add_finalizer, apply_plan, change_write, finalizer_step,
    kind_of_reason, release_plan,
};
/// A pass of scaledown-window: the runtime's plan with the schedule's gauges.
pub type SchedulePlan = ebb_core::Plan<Option<writes::ScheduleGauges>>;
pub use report::{
    API_MISSING_RETRY, CONDITION_CLUSTER_AUTOSCALER_READY, CONDITION_PAUSED, CONDITION_READY,
    CONDITION_SCHEDULE_VALID, CONDITION_TARGET_CONFLICT, CONDITION_TARGET_NOT_FOUND,
    REASON_OBJECTS_PAUSED, RESYNC, Report, ReportInput, TargetOutcome, conditions, requeue_after,
    summarize,
};

use std::collections::BTreeMap;
use std::fmt;

use ebb_core::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION, PauseState, pause_state};
use ebb_crds::scaledown::{ScaleDownScheduleSpec, ScaleDownTarget, Window as WindowSpec};
pub use ebb_schedule::Calendars;
use ebb_schedule::{AnyOpen, DEFAULT_HORIZON, FirstMatch, ScheduleError, Window};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::core::{Selector, SelectorExt};

pub use crate::targets::cluster_autoscaler::{
    CLUSTER_AUTOSCALER_NAME, ClusterAutoscalerScaleDown, decide_cluster_autoscaler,
};
pub use crate::targets::machine_autoscalers::{
    MachineAutoscalerChange, MachineAutoscalerView, MachineDecision, ScaleTargetRef,
    decide_machine_autoscaler,
};
pub use crate::targets::node_pools::{
    NodePoolChange, NodePoolView, decide_node_pool, ebb_budget, is_ebb_budget,
};
pub use crate::targets::nodes::{NodeChange, NodeView, decide_node};
use crate::targets::{cluster_autoscaler, machine_autoscalers, node_pools, nodes};

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
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
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

/// Parses the windows (`Window::cron` each recurring one, `Window::zoned_date_time` each one
/// given by `from` and `to`), naming the field at fault.
///
/// # Errors
/// The first window that does not parse, as `spec.windows[i].schedule`, `.duration`,
/// `.timeZone`, `.from` or `.to`, or `spec.windows[i]` when it is neither recurring nor once.
/// `calendars` holds the HolidayCalendars the windows name: one missing or invalid is an error
/// of the window's `excludeCalendars[j]`.
pub fn parse_windows(
    windows: &[WindowSpec],
    calendars: &Calendars,
) -> Result<Vec<Window>, InvalidSpec> {
    windows
        .iter()
        .enumerate()
        .map(|(i, w)| parse_window(i, w, calendars))
        .collect()
}

fn parse_window(i: usize, w: &WindowSpec, calendars: &Calendars) -> Result<Window, InvalidSpec> {
    let at = |field: &str| format!("spec.windows[{i}].{field}");
    let mut excluded = ebb_schedule::ExcludedDays::parse(&w.exclude_dates)
        .map_err(|error| InvalidSpec::new(at("excludeDates"), error.to_string()))?;
    for (j, name) in w.exclude_calendars.iter().enumerate() {
        let dates = calendars.dates(name).map_err(|error| {
            InvalidSpec::new(at(&format!("excludeCalendars[{j}]")), error.to_string())
        })?;
        excluded.extend_from_slice(dates);
    }
    parse_window_rule(i, w).map(|window| window.excluding(excluded))
}

/// The HolidayCalendars `windows` name (`excludeCalendars`), each once.
pub fn calendar_names(windows: &[WindowSpec]) -> Vec<&str> {
    Calendars::names_in(windows.iter().flat_map(|w| &w.exclude_calendars))
}

fn parse_window_rule(i: usize, w: &WindowSpec) -> Result<Window, InvalidSpec> {
    let at = |field: &str| format!("spec.windows[{i}].{field}");
    match (&w.schedule, &w.duration, &w.from, &w.to) {
        (Some(schedule), Some(duration), None, None) => {
            Window::cron(schedule, duration, Some(&w.time_zone)).map_err(|error| {
                let field = match error {
                    ScheduleError::Duration { .. } => "duration",
                    ScheduleError::UnknownTimeZone(_)
                    | ScheduleError::UnreadableTimeZone { .. } => "timeZone",
                    _ => "schedule",
                };
                InvalidSpec::new(at(field), error.to_string())
            })
        }
        (None, None, Some(from), Some(to)) => Window::zoned_date_time(from, to).map_err(|error| {
            let field = match &error {
                ScheduleError::DateTime { input, .. } if input == from => "from",
                _ => "to",
            };
            InvalidSpec::new(at(field), error.to_string())
        }),
        _ => Err(InvalidSpec::new(
            format!("spec.windows[{i}]"),
            "a window is either recurring (schedule and duration) or once (from and to)",
        )),
    }
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

    /// The API(s) a target of this kind reads and writes, for messages.
    pub fn api(self) -> &'static str {
        match self {
            Self::ClusterAutoscaler => "autoscaling.openshift.io/v1 ClusterAutoscaler",
            Self::NodeAnnotation => "v1 Node",
            Self::MachineAutoscalers => {
                "autoscaling.openshift.io/v1beta1 MachineAutoscaler and machine.openshift.io/v1beta1 \
                 MachineSet"
            }
            Self::KarpenterNodePools => "karpenter.sh/v1 NodePool",
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
    /// NodePools matching the selector (all when `None`), and the disruption reasons ebb's
    /// budget blocks (empty: all).
    NodePools(Option<Selector>, Vec<ebb_crds::scaledown::DisruptionReason>),
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
                spec.reasons,
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
            Self::NodePools(..) => TargetKind::KarpenterNodePools,
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
            Self::NodePools(s, _) => matches(s),
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
    pub next_transition: Option<Timestamp>,
    /// The next few flips and the value from each on (at most [`PREVIEW_LEN`]).
    pub next_transitions: Vec<(Timestamp, bool)>,
    /// When anything in this decision changes next (a flip, or the open window handing over to
    /// another): the instant to look again.
    pub requeue_at: Option<Timestamp>,
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
/// decided, and scale-down is disabled (fail-safe), maintenance or not: so it is when a window
/// names a HolidayCalendar `calendars` does not hold, or one that holds an invalid date.
pub fn decide_windows(
    spec: &ScaleDownScheduleSpec,
    calendars: &Calendars,
    now: Timestamp,
    maintenance: &ClusterMaintenance,
) -> Decision {
    let windows = match parse_windows(&spec.windows, calendars) {
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
    pub created: Option<Timestamp>,
    /// What it selects.
    pub target: ResolvedTarget,
}

impl Claimant {
    /// Older first, then by name; a missing timestamp sorts last. The first one manages a shared
    /// object: a schedule created later never takes an object from one that was there before.
    fn rank(&self) -> (bool, Option<Timestamp>, &str) {
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

/// The uniform pause annotations (`scaling.ebb.dev/paused`, `paused-until`) of one target
/// object, as read. Evaluated at the
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

    /// Whether the object is paused at `now` (the shared rule of `ebb_core::pause`).
    pub fn state(&self, now: Timestamp) -> PauseState {
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
// A whole target
// ------------------------------------------------------------------------------------------------

/// The observed objects of one target kind.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetObjects {
    /// The ClusterAutoscaler named by the target, and its `spec.scaleDown.enabled` if found.
    ClusterAutoscaler {
        /// The name looked up.
        name: String,
        /// `None`: not found; `Some(None)`: found without `spec.scaleDown.enabled`.
        enabled: Option<Option<bool>>,
        /// Its `metadata.uid` when found: the apply names it, so an object deleted since is
        /// not made again (server-side apply is an upsert).
        uid: Option<String>,
        /// Its pause annotations (none when not found).
        pause: PauseMarks,
    },
    /// Every node: the views the controller's cache holds, shared rather than copied.
    Nodes(Vec<std::sync::Arc<NodeView>>),
    /// Every MachineAutoscaler of the target's namespace and the replicas of its MachineSets.
    MachineAutoscalers {
        /// The MachineAutoscalers.
        autoscalers: Vec<MachineAutoscalerView>,
        /// MachineSet name -> current replicas.
        machine_sets: BTreeMap<String, i32>,
        /// The ClusterAutoscaler [`CLUSTER_AUTOSCALER_NAME`] they depend on.
        cluster_autoscaler: ClusterAutoscalerScaleDown,
    },
    /// Every NodePool, and the disruption reasons ebb's budget blocks (empty: all).
    NodePools(
        Vec<NodePoolView>,
        Vec<ebb_crds::scaledown::DisruptionReason>,
    ),
}

impl TargetObjects {
    /// Every node, from their views (tests and `plan`; the controller's cache shares its own).
    pub fn nodes(views: impl IntoIterator<Item = NodeView>) -> Self {
        Self::Nodes(views.into_iter().map(std::sync::Arc::new).collect())
    }
}

/// One write to a target object.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Apply `spec.scaleDown.enabled`.
    ClusterAutoscaler {
        /// Its name.
        name: String,
        /// The `metadata.uid` read: the precondition that keeps the apply from creating it
        /// again after a deletion.
        uid: Option<String>,
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
            Self::ClusterAutoscaler { name, enabled, .. } => {
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
pub struct TargetDecision {
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

impl TargetDecision {
    /// The earliest instant a managed object's `paused-until` expires: the reconcile looks again
    /// then, so the pause ends on time.
    pub fn resume_at(&self) -> Option<Timestamp> {
        self.paused.iter().filter_map(|p| p.state.resume_at()).min()
    }
}

/// One schedule deciding for its target, object by object: the kind modules of
/// [`targets`](crate::targets) call [`TargetDecider::claim`] and [`TargetDecider::paused`] for each
/// object and add their changes to [`TargetDecider::decision`].
pub struct TargetDecider<'a> {
    /// The schedule's name.
    pub me: &'a str,
    claimants: &'a [Claimant],
    /// Its decision (scale-down enabled), `true` while it is being deleted (a release).
    pub desired: bool,
    now: Timestamp,
    /// The decision so far.
    pub decision: TargetDecision,
}

impl TargetDecider<'_> {
    /// Who manages the object `id` (`label` names it in messages), counted in the plan:
    /// selected, managed, or a conflict with the schedule that manages it.
    pub fn claim(&mut self, id: ObjectId<'_>, label: &str) -> Claim {
        let claim = claim(self.me, self.claimants, &id);
        match &claim {
            Claim::Ours => {
                self.decision.selected += 1;
                self.decision.managed += 1;
            }
            Claim::LostTo(winner) => {
                self.decision.selected += 1;
                self.decision.conflicts.push(Conflict {
                    object: label.to_owned(),
                    managed_by: winner.clone(),
                });
            }
            Claim::Other | Claim::Unclaimed => {}
        }
        claim
    }

    /// Whether the object is paused at `now` (then it is left alone), recording it when it is
    /// ours.
    pub fn paused(&mut self, claim: &Claim, label: &str, marks: &PauseMarks) -> bool {
        let state = marks.state(self.now);
        if !state.is_paused() {
            return false;
        }
        if *claim == Claim::Ours {
            self.decision.paused.push(PausedObject {
                object: label.to_owned(),
                state,
            });
        }
        true
    }
}

/// Decides for one schedule's target: `desired_enabled` is its decision, `None` while it is being
/// deleted (then `me` is not among `claimants`, and what it set is released unless another
/// schedule takes over).
///
/// An object paused at `now` by its own `scaling.ebb.dev/paused` / `paused-until` gets no change
/// at all, neither enabling nor disabling scale-down, nor a release on deletion: the user's
/// explicit exception, above the fail-safe. The ones this schedule manages are listed in
/// [`TargetDecision::paused`].
pub fn decide_target(
    me: &str,
    claimants: &[Claimant],
    desired_enabled: Option<bool>,
    observed: &TargetObjects,
    now: Timestamp,
) -> TargetDecision {
    let mut decider = TargetDecider {
        me,
        claimants,
        desired: desired_enabled.unwrap_or(true),
        now,
        decision: TargetDecision::default(),
    };
    match observed {
        TargetObjects::ClusterAutoscaler {
            name,
            enabled,
            uid,
            pause,
        } => cluster_autoscaler::decide(&mut decider, name, *enabled, uid.as_deref(), pause),
        TargetObjects::Nodes(nodes) => nodes::decide(&mut decider, nodes),
        TargetObjects::MachineAutoscalers {
            autoscalers,
            machine_sets,
            cluster_autoscaler,
        } => {
            decider.decision.cluster_autoscaler = Some(*cluster_autoscaler);
            machine_autoscalers::decide(&mut decider, autoscalers, machine_sets);
        }
        TargetObjects::NodePools(pools, reasons) => {
            node_pools::decide(&mut decider, pools, reasons)
        }
    }
    decider.decision
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
