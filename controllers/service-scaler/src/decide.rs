//! Every rule of service-scaler, pure: a ServiceScaler, the HPA of the same name and `now` in, a
//! [`Decision`] out. No client, no clock, no I/O.
//!
//! # Rules
//! - **Merge.** The effective settings are `spec.hpa` (the defaults; `minReplicas` defaults to 1)
//!   with the overrides of the first range in list order that contains `now`. An override left out
//!   keeps the default's value; a target utilization of 0 removes that metric. A merged
//!   `minReplicas > maxReplicas` is an invalid spec naming the range; `minReplicas ==
//!   maxReplicas` is a fixed size.
//! - **Ranges** are half-open `[from, to)`; windows come from `ebb-schedule` (DST rules there).
//!   Overlapping ranges are legal: the first in list order wins (the last with
//!   `spec.rangeSelection: Last`, udaan's behaviour), and a condition names them.
//! - **Transitions** are the instants at which the *effective settings* change, not merely the
//!   matched range: two back-to-back ranges with identical settings are no transition.
//! - **Lead time** ([`crate::lead`]). With `spec.leadTime` (default 30m, `0s`: off), an increase
//!   of `minReplicas` or `maxReplicas` at a boundary is stepped up ahead of it in six equal steps,
//!   the last one step before the boundary, so capacity is never below the schedule; then
//!   `minReplicas` is capped at `maxReplicas`. Path-independent: it follows from the spec and `now`.
//! - **Ramp.** With `spec.ramp`, a *decrease* of `minReplicas` at a schedule boundary is spread
//!   linearly over the ramp duration in one-replica steps, the first at the boundary (an increase
//!   spread after its boundary would leave capacity below the schedule: it applies at once, or
//!   ahead of the boundary by the lead time). The ramped and the led value are both lower bounds
//!   of `minReplicas`: the HPA gets the larger, capped at `maxReplicas`. The state
//!   (`status.ramp`: from, to, startedAt) is all that is kept; the current step follows from `now`.
//!   A target change mid-ramp starts a new ramp from the value the old one had reached. A change
//!   that is not a boundary within the last ramp duration (a spec edit, a restart long after the
//!   boundary) applies at once. `maxReplicas` and the targets always change at once, and the
//!   ramped `minReplicas` never exceeds the effective `maxReplicas`.
//! - **Writes.** The HPA gets exactly the owned fields (`minReplicas`, `maxReplicas`, and the cpu
//!   and memory entries of `metrics`; other metrics are sent back as they are, since the list is
//!   applied as a whole, except that `metricTargets` set the target of those named; a write
//!   carrying them is preconditioned on the `resourceVersion` read, [`OwnedFields::precondition`]);
//!   `scaleTargetRef` only when ebb creates the HPA. Nothing is written when they already match.
//! - **Kill switch.** `service-scaler.kubernetes.io/managed: "false"` on the HPA stops every write
//!   to it; apart from the pause annotations below, no other annotation on the HPA matters.
//! - **Pause.** `scaling.ebb.dev/paused` / `paused-until` on the ServiceScaler *or on the HPA*
//!   (DESIGN §3: on every object ebb manages): nothing is written to the HPA and only the `Paused`
//!   condition is written to the ServiceScaler, naming the paused object and the annotation, with
//!   an Event when the pause starts or changes (both from the shared
//!   [`ebb_runtime::pause::pause_report`], worded as by every controller); the ServiceScaler's
//!   annotation is reported when both carry one. A reconcile is requeued at `paused-until`; an unparseable `paused-until` counts as paused
//!   (fail-safe). A paused HPA is not restored on deletion either.
//! - **Adoption and deletion.** An HPA ebb creates is owned by the ServiceScaler (garbage
//!   collected with it); any other is adopted. On deletion `spec.deletionPolicy` decides
//!   ([`deletion_action`]): `Delete`, `Restore` (to `spec.hpa`) or `Orphan` (kept as it is);
//!   unset, HPAs ebb or udaan created (udaan's carry [`MANAGED_ANNOTATION`]) are deleted, as udaan
//!   did, and other adopted ones restored. Whenever that needs more than the garbage collector
//!   ([`needs_finalizer`]: a delete or restore of an adopted HPA, a restore or orphan of an owned
//!   one, which is disowned first), the ServiceScaler carries [`FINALIZER`] until it is done.
//!   udaan's [`UDAAN_FINALIZER`] is honoured the same way, then removed.
//! - **Requeue** at the next transition, ramp step or lead step, computed from `now`, and at most
//!   [`MAX_REQUEUE`] later: a safety net against clock steps and missed watch events.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use ebb_crds::service_scaler::{
    DeletionPolicy, HpaDefaults, HpaOverride, HpaSettings, MetricTargetSpec, RampStatus,
    RangeSelection, ScheduledTransition, ServiceScaler, ServiceScalerSpec, ServiceScalerStatus,
    TimeRange, TimeRangeKind, Weekday,
};
use ebb_runtime::pause::{ObjectPause, PAUSED_CONDITION, PauseReport, first_pause, pause_report};
use ebb_runtime::{ConditionUpdate, EventKind, from_k8s_time, set_condition, to_k8s_time};
use ebb_schedule::{DEFAULT_HORIZON, FirstMatch, ScheduleError, Window, parse_duration};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use kube_quantity::ParsedQuantity;
use serde_json::{Value, json};

/// The kill switch: this annotation on the HPA with the value `"false"` stops all writes to it.
pub const MANAGED_ANNOTATION: &str = "service-scaler.kubernetes.io/managed";
/// Held on a ServiceScaler whose deletion must do something to its HPA that the garbage collector
/// would not (see [`needs_finalizer`]), until it is done.
pub const FINALIZER: &str = "scaling.ebb.dev/service-scaler-restore-hpa";
/// udaan's finalizer: on a ServiceScaler udaan created. ebb does what it stood for (the HPA's
/// clean-up, per [`deletion_action`]) and then removes it, so such ServiceScalers can be deleted.
pub const UDAAN_FINALIZER: &str = "servicescalers.scaler.udaan.io/finalizer";
/// Label on HPAs ebb creates.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`]: the field manager's name.
pub const MANAGED_BY: &str = "ebb-service-scaler";
/// How many coming transitions `status.nextTransitions` previews.
pub const PREVIEW_LEN: usize = 5;
/// The longest a valid ServiceScaler waits before it is reconciled again, boundary or not.
pub const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// `minReplicas` when `spec.hpa` leaves it out (the HPA API's own default).
pub const DEFAULT_MIN_REPLICAS: i32 = 1;

/// Condition: the HPA has the settings the schedule asks for.
pub const READY: &str = "Ready";
/// Condition: the spec is valid (false names the field and the rule).
pub const SPEC_VALID: &str = "SpecValid";
/// Condition: some ranges can be in force at the same instant.
pub const RANGES_OVERLAP: &str = "RangesOverlap";
/// Condition: the ServiceScaler or its HPA carries a pause annotation.
pub const PAUSED: &str = PAUSED_CONDITION;
/// Condition: the HPA carries the kill-switch annotation.
pub const UNMANAGED: &str = "Unmanaged";

/// How many matched-range changes one engine call returns while scanning for settings changes.
const CHUNK: usize = 64;
/// How often the scan jumps past a quiet year to the next one-off or cron boundary.
const MAX_QUIET_JUMPS: usize = 8;
/// The metric the API server puts into an HPA created without metrics (autoscaling/v2 defaults).
const SERVER_DEFAULT_CPU_UTILIZATION: i32 = 80;

// ------------------------------------------------------------------------------------------------
// Spec validation

/// One violated rule, naming the field (`spec.timeRangeSpec[1].from`) and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct SpecError {
    /// The field path, e.g. `spec.timeRangeSpec[1].from`.
    pub field: String,
    /// What is wrong.
    pub rule: String,
}

impl SpecError {
    fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// Every rule a spec breaks, in field order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}

// ------------------------------------------------------------------------------------------------
// The schedule: windows and the settings each brings

/// A coming change of the effective settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// When the settings change.
    pub at: DateTime<Utc>,
    /// The range in force from then on (`None`: the defaults).
    pub matched_range: Option<usize>,
    /// The settings in force from then on.
    pub settings: HpaSettings,
}

/// A validated ServiceScaler spec: the windows of its ranges and the settings each brings.
#[derive(Clone, Debug)]
pub struct Schedule {
    defaults: HpaSettings,
    ranges: Vec<HpaSettings>,
    windows: Ranked,
    /// Indices of one-off and cron ranges: the only ones that can change anything after a year
    /// without change.
    non_daily: Vec<usize>,
    ramp: Option<TimeDelta>,
    /// `spec.leadTime`, parsed (zero: off); see [`crate::lead`].
    lead_time: TimeDelta,
}

impl Schedule {
    /// Validates `spec` and builds its schedule; the errors name every field at fault.
    pub fn from_spec(spec: &ServiceScalerSpec) -> Result<Self, SpecErrors> {
        let mut errors = Vec::new();
        let defaults = defaults_settings(&spec.hpa, &mut errors);
        let mut windows = Vec::new();
        let mut ranges = Vec::new();
        let mut non_daily = Vec::new();
        for (i, range) in spec.time_range_spec.iter().enumerate() {
            let path = format!("spec.timeRangeSpec[{i}]");
            match build_window(range, &path) {
                Ok(window) => windows.push(window),
                Err(mut e) => errors.append(&mut e),
            }
            if matches!(
                range.kind,
                TimeRangeKind::ZonedDateTime | TimeRangeKind::Cron
            ) {
                non_daily.push(i);
            }
            let hpa_path = format!("{path}.replicaSpec.hpa");
            check_override(&range.replica_spec.hpa, &hpa_path, &mut errors);
            if let Some(defaults) = &defaults {
                let merged = merge(defaults, &range.replica_spec.hpa);
                if merged.min_replicas > merged.max_replicas {
                    errors.push(SpecError::new(
                        hpa_path,
                        format!(
                            "minReplicas {} exceeds maxReplicas {} after merging with spec.hpa",
                            merged.min_replicas, merged.max_replicas
                        ),
                    ));
                }
                ranges.push(merged);
            }
        }
        let lead_time =
            crate::lead::parse_lead_time(spec.lead_time.as_deref()).unwrap_or_else(|e| {
                errors.push(SpecError::new("spec.leadTime", e.to_string()));
                TimeDelta::zero()
            });
        let ramp = match spec.ramp.as_deref() {
            None => None,
            Some(text) => match parse_duration(text) {
                Ok(d) => Some(d),
                Err(e) => {
                    errors.push(SpecError::new("spec.ramp", e.to_string()));
                    None
                }
            },
        };
        if let Some(target) = &spec.scale_target_ref {
            if target.kind.trim().is_empty() {
                errors.push(SpecError::new(
                    "spec.scaleTargetRef.kind",
                    "must not be empty (e.g. Deployment)",
                ));
            }
            if target.name.trim().is_empty() {
                errors.push(SpecError::new(
                    "spec.scaleTargetRef.name",
                    "must not be empty",
                ));
            }
        }
        match defaults {
            Some(defaults) if errors.is_empty() => Ok(Self {
                defaults,
                ranges,
                windows: Ranked::new(windows, spec.range_selection.unwrap_or_default()),
                non_daily,
                ramp,
                lead_time,
            }),
            _ => Err(SpecErrors(errors)),
        }
    }

    /// The defaults (`spec.hpa` with `minReplicas` filled and zero targets removed).
    pub fn defaults(&self) -> &HpaSettings {
        &self.defaults
    }

    /// `spec.ramp`, parsed.
    pub fn ramp(&self) -> Option<TimeDelta> {
        self.ramp
    }

    /// `spec.leadTime`, parsed: the default 30m when absent, zero when off.
    pub fn lead_time(&self) -> TimeDelta {
        self.lead_time
    }

    /// The settings while range `index` is in force (`None`: the defaults).
    pub fn settings(&self, index: Option<usize>) -> &HpaSettings {
        index
            .and_then(|i| self.ranges.get(i))
            .unwrap_or(&self.defaults)
    }

    /// The range in force at `t`: the first in list order containing it (the last with
    /// `spec.rangeSelection: Last`).
    pub fn matched_at(&self, t: DateTime<Utc>) -> Option<usize> {
        self.windows.matched_at(t)
    }

    /// The effective settings at `t`.
    pub fn effective_at(&self, t: DateTime<Utc>) -> &HpaSettings {
        self.settings(self.matched_at(t))
    }

    /// The next `limit` changes of the effective settings strictly after `now`.
    ///
    /// Looks a year ([`DEFAULT_HORIZON`]) ahead; after a year without a change only a one-off or
    /// cron range can bring one, so it jumps to the next boundary of those and looks again (a few
    /// times at most).
    pub fn transitions(&self, now: DateTime<Utc>, limit: usize) -> Vec<Transition> {
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        let mut current = self.effective_at(now).clone();
        let mut cursor = now;
        for _ in 0..=MAX_QUIET_JUMPS {
            let Some(horizon_end) = cursor.checked_add_signed(DEFAULT_HORIZON) else {
                break;
            };
            let mut swept = cursor;
            loop {
                let changes = self.windows.transitions(swept, CHUNK, horizon_end - swept);
                for (at, matched_range) in &changes {
                    swept = *at;
                    let settings = self.settings(*matched_range);
                    if *settings != current {
                        current = settings.clone();
                        out.push(Transition {
                            at: *at,
                            matched_range: *matched_range,
                            settings: current.clone(),
                        });
                        if out.len() >= limit {
                            return out;
                        }
                    }
                }
                if changes.len() < CHUNK {
                    break;
                }
            }
            // Daily ranges repeat within a year (a week, and the DST dates): what they could
            // change after it, the year has shown. Only one-off and cron boundaries remain.
            let next_boundary = self
                .non_daily
                .iter()
                .filter_map(|i| self.windows.windows().get(*i))
                .filter_map(|w| w.next_boundary_after(horizon_end))
                .min();
            match next_boundary.and_then(|b| b.checked_sub_signed(TimeDelta::nanoseconds(1))) {
                Some(next) => cursor = next,
                None => break,
            }
        }
        out
    }

    /// The next instant strictly after `now` at which the effective settings change, or `None`
    /// when they never change again.
    pub fn next_transition(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.transitions(now, 1).first().map(|t| t.at)
    }

    /// The last instant in `(since, now]` at which the effective `minReplicas` changed.
    pub fn last_min_change(
        &self,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        if now <= since {
            return None;
        }
        let mut min = self.effective_at(since).min_replicas;
        let mut last = None;
        let mut swept = since;
        loop {
            let changes = self.windows.transitions(swept, CHUNK, now - swept);
            for (at, matched_range) in &changes {
                swept = *at;
                let next = self.settings(*matched_range).min_replicas;
                if next != min {
                    min = next;
                    last = Some(*at);
                }
            }
            if changes.len() < CHUNK {
                return last;
            }
        }
    }

    /// Pairs of ranges that can be in force at the same instant.
    pub fn overlaps(&self) -> Vec<(usize, usize)> {
        self.windows.overlaps()
    }

    /// [`overlap_message`] for this schedule's overlaps, naming the range that wins.
    pub fn overlap_message(&self) -> Option<String> {
        let message = overlap_message(&self.overlaps())?;
        Some(if self.windows.last {
            message.replace(
                "the first in list order wins",
                "the last in list order wins",
            )
        } else {
            message
        })
    }
}

/// The ranges' windows with the priority `spec.rangeSelection` gives them, indices always in list
/// order: `Last` is [`FirstMatch`] over the reversed list.
#[derive(Clone, Debug)]
struct Ranked {
    ranked: FirstMatch,
    listed: Vec<Window>,
    last: bool,
}

impl Ranked {
    fn new(windows: Vec<Window>, selection: RangeSelection) -> Self {
        let last = selection == RangeSelection::Last;
        let mut ranked = windows.clone();
        if last {
            ranked.reverse();
        }
        Self {
            ranked: FirstMatch::new(ranked),
            listed: windows,
            last,
        }
    }

    /// The list index of the window at `i` in priority order.
    fn listed_index(&self, i: usize) -> usize {
        if self.last {
            self.listed.len() - 1 - i
        } else {
            i
        }
    }

    /// The windows in list order.
    fn windows(&self) -> &[Window] {
        &self.listed
    }

    fn matched_at(&self, t: DateTime<Utc>) -> Option<usize> {
        self.ranked.matched_at(t).map(|i| self.listed_index(i))
    }

    fn transitions(
        &self,
        now: DateTime<Utc>,
        limit: usize,
        horizon: TimeDelta,
    ) -> Vec<(DateTime<Utc>, Option<usize>)> {
        self.ranked
            .transitions(now, limit, horizon)
            .into_iter()
            .map(|(at, i)| (at, i.map(|i| self.listed_index(i))))
            .collect()
    }

    fn overlaps(&self) -> Vec<(usize, usize)> {
        let mut pairs: Vec<(usize, usize)> = self
            .ranked
            .overlaps()
            .into_iter()
            .map(|(a, b)| {
                let (a, b) = (self.listed_index(a), self.listed_index(b));
                (a.min(b), a.max(b))
            })
            .collect();
        pairs.sort_unstable();
        pairs
    }
}

/// How many overlapping pairs a message names (a condition message has a size limit).
const MAX_NAMED_OVERLAPS: usize = 10;

/// `timeRangeSpec[0] and timeRangeSpec[2] overlap; the first in list order wins`, naming the
/// first [`MAX_NAMED_OVERLAPS`] pairs and counting the rest.
pub fn overlap_message(pairs: &[(usize, usize)]) -> Option<String> {
    if pairs.is_empty() {
        return None;
    }
    let list: Vec<String> = pairs
        .iter()
        .take(MAX_NAMED_OVERLAPS)
        .map(|(a, b)| format!("timeRangeSpec[{a}] and timeRangeSpec[{b}] overlap"))
        .collect();
    let more = match pairs.len().saturating_sub(MAX_NAMED_OVERLAPS) {
        0 => String::new(),
        n => format!(" (and {n} more pairs)"),
    };
    Some(format!(
        "{}{more}; the first in list order wins",
        list.join(", ")
    ))
}

fn defaults_settings(hpa: &HpaDefaults, errors: &mut Vec<SpecError>) -> Option<HpaSettings> {
    let before = errors.len();
    let min = hpa.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
    if min < 1 {
        errors.push(SpecError::new(
            "spec.hpa.minReplicas",
            format!("must be at least 1 (got {min})"),
        ));
    }
    if hpa.max_replicas < 1 {
        errors.push(SpecError::new(
            "spec.hpa.maxReplicas",
            format!("must be at least 1 (got {})", hpa.max_replicas),
        ));
    }
    check_target(
        hpa.target_cpu_utilization,
        "spec.hpa.targetCPUUtilization",
        errors,
    );
    check_target(
        hpa.target_memory_utilization,
        "spec.hpa.targetMemoryUtilization",
        errors,
    );
    check_metric_targets(&hpa.metric_targets, "spec.hpa", errors);
    if errors.len() == before && min > hpa.max_replicas {
        errors.push(SpecError::new(
            "spec.hpa",
            format!("minReplicas {min} exceeds maxReplicas {}", hpa.max_replicas),
        ));
    }
    (errors.len() == before).then(|| HpaSettings {
        min_replicas: min,
        max_replicas: hpa.max_replicas,
        target_cpu_utilization: hpa.target_cpu_utilization.filter(|t| *t != 0),
        target_memory_utilization: hpa.target_memory_utilization.filter(|t| *t != 0),
        metric_targets: merge_metric_targets(&[], &hpa.metric_targets),
    })
}

/// `base` with `overrides` replacing the targets of the same name, sorted by name.
fn merge_metric_targets(
    base: &[MetricTargetSpec],
    overrides: &[MetricTargetSpec],
) -> Vec<MetricTargetSpec> {
    let mut merged: Vec<MetricTargetSpec> = base.to_vec();
    for o in overrides {
        // A name given twice: the last one counts.
        merged.retain(|m| m.name != o.name);
        merged.push(o.clone());
    }
    merged.sort();
    merged
}

fn check_metric_targets(targets: &[MetricTargetSpec], path: &str, errors: &mut Vec<SpecError>) {
    for (i, t) in targets.iter().enumerate() {
        let given = [
            t.value.is_some(),
            t.average_value.is_some(),
            t.average_utilization.is_some(),
        ]
        .into_iter()
        .filter(|g| *g)
        .count();
        if given != 1 {
            errors.push(SpecError::new(
                format!("{path}.metricTargets[{i}]"),
                "give exactly one of value, averageValue, averageUtilization",
            ));
        }
        if t.name.trim().is_empty() {
            errors.push(SpecError::new(
                format!("{path}.metricTargets[{i}].name"),
                "must not be empty",
            ));
        }
        for (field, value) in [("value", &t.value), ("averageValue", &t.average_value)] {
            if let Some(v) = value
                && ParsedQuantity::try_from(v.as_str()).is_err()
            {
                errors.push(SpecError::new(
                    format!("{path}.metricTargets[{i}].{field}"),
                    format!("{v:?} is not a quantity (e.g. 100, 500m, 1.5k)"),
                ));
            }
        }
    }
}

fn check_override(hpa: &HpaOverride, path: &str, errors: &mut Vec<SpecError>) {
    if let Some(min) = hpa.min_replicas.filter(|m| *m < 1) {
        errors.push(SpecError::new(
            format!("{path}.minReplicas"),
            format!("must be at least 1 (got {min})"),
        ));
    }
    if let Some(max) = hpa.max_replicas.filter(|m| *m < 1) {
        errors.push(SpecError::new(
            format!("{path}.maxReplicas"),
            format!("must be at least 1 (got {max})"),
        ));
    }
    check_target(
        hpa.target_cpu_utilization,
        &format!("{path}.targetCPUUtilization"),
        errors,
    );
    check_target(
        hpa.target_memory_utilization,
        &format!("{path}.targetMemoryUtilization"),
        errors,
    );
    check_metric_targets(&hpa.metric_targets, path, errors);
}

fn check_target(target: Option<i32>, field: &str, errors: &mut Vec<SpecError>) {
    if let Some(t) = target.filter(|t| *t < 0) {
        errors.push(SpecError::new(
            field,
            format!("must not be negative (got {t}); 0 removes the metric"),
        ));
    }
}

/// The defaults with one range's overrides: a field left out keeps the default's value, a target
/// of 0 removes the metric.
pub fn merge(defaults: &HpaSettings, overrides: &HpaOverride) -> HpaSettings {
    let target = |o: Option<i32>, d: Option<i32>| match o {
        Some(0) => None,
        Some(t) => Some(t),
        None => d,
    };
    HpaSettings {
        min_replicas: overrides.min_replicas.unwrap_or(defaults.min_replicas),
        max_replicas: overrides.max_replicas.unwrap_or(defaults.max_replicas),
        target_cpu_utilization: target(
            overrides.target_cpu_utilization,
            defaults.target_cpu_utilization,
        ),
        target_memory_utilization: target(
            overrides.target_memory_utilization,
            defaults.target_memory_utilization,
        ),
        metric_targets: merge_metric_targets(&defaults.metric_targets, &overrides.metric_targets),
    }
}

fn weekday_name(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "Mon",
        Weekday::Tue => "Tue",
        Weekday::Wed => "Wed",
        Weekday::Thu => "Thu",
        Weekday::Fri => "Fri",
        Weekday::Sat => "Sat",
        Weekday::Sun => "Sun",
    }
}

fn kind_name(kind: TimeRangeKind) -> &'static str {
    match kind {
        TimeRangeKind::ZonedTime => "ZonedTime",
        TimeRangeKind::ZonedDateTime => "ZonedDateTime",
        TimeRangeKind::LocalTime => "LocalTime",
        TimeRangeKind::Cron => "Cron",
    }
}

/// The field of a range an engine error is about.
fn schedule_field(error: &ScheduleError, range: &TimeRange) -> &'static str {
    match error {
        ScheduleError::TimeOfDay { input, .. } | ScheduleError::DateTime { input, .. } => {
            if range.from.as_deref() == Some(input.as_str()) {
                "from"
            } else {
                "to"
            }
        }
        ScheduleError::EndNotAfterStart { .. } => "to",
        ScheduleError::UnknownTimeZone(_) => "timeZone",
        ScheduleError::Weekday(_) | ScheduleError::NoDays => "days",
        ScheduleError::Cron { .. } => "schedule",
        ScheduleError::Duration { .. } => "duration",
    }
}

/// The window of one range, or every rule it breaks.
fn build_window(range: &TimeRange, path: &str) -> Result<Window, Vec<SpecError>> {
    let kind = kind_name(range.kind);
    let mut errors = Vec::new();
    let mut forbid = |present: bool, field: &str, rule: &str| {
        if present {
            errors.push(SpecError::new(format!("{path}.{field}"), rule));
        }
    };
    let is_cron = range.kind == TimeRangeKind::Cron;
    forbid(
        !is_cron && range.schedule.is_some(),
        "schedule",
        "belongs to kind Cron only",
    );
    forbid(
        !is_cron && range.duration.is_some(),
        "duration",
        "belongs to kind Cron only",
    );
    forbid(
        is_cron && range.from.is_some(),
        "from",
        "kind Cron opens at schedule and stays open for duration; from/to do not apply",
    );
    forbid(
        is_cron && range.to.is_some(),
        "to",
        "kind Cron opens at schedule and stays open for duration; from/to do not apply",
    );
    forbid(
        matches!(
            range.kind,
            TimeRangeKind::ZonedTime | TimeRangeKind::ZonedDateTime
        ) && range.time_zone.is_some(),
        "timeZone",
        "belongs to kinds LocalTime and Cron (ZonedTime and ZonedDateTime carry an offset)",
    );
    forbid(
        range.kind != TimeRangeKind::LocalTime && range.days.is_some(),
        "days",
        "belongs to kind LocalTime only",
    );

    let built = if is_cron {
        match (range.schedule.as_deref(), range.duration.as_deref()) {
            (Some(schedule), Some(duration)) => {
                Some(Window::cron(schedule, duration, range.time_zone.as_deref()))
            }
            (schedule, duration) => {
                if schedule.is_none() {
                    errors.push(SpecError::new(
                        format!("{path}.schedule"),
                        "required for kind Cron (five-field cron, e.g. \"0 8 * * 1-5\")",
                    ));
                }
                if duration.is_none() {
                    errors.push(SpecError::new(
                        format!("{path}.duration"),
                        "required for kind Cron (e.g. 90m, 10h, 1h30m)",
                    ));
                }
                None
            }
        }
    } else {
        match (range.from.as_deref(), range.to.as_deref()) {
            (Some(from), Some(to)) => Some(match range.kind {
                TimeRangeKind::ZonedTime => Window::zoned_time(from, to),
                TimeRangeKind::ZonedDateTime => Window::zoned_date_time(from, to),
                _ => {
                    let days = range
                        .days
                        .as_ref()
                        .map(|days| days.iter().map(|d| weekday_name(*d)));
                    Window::local_time(from, to, range.time_zone.as_deref(), days)
                }
            }),
            (None, Some(_)) => {
                errors.push(SpecError::new(
                    format!("{path}.from"),
                    "to is given without from; a range needs both",
                ));
                None
            }
            (Some(_), None) => {
                errors.push(SpecError::new(
                    format!("{path}.to"),
                    "from is given without to; a range needs both",
                ));
                None
            }
            (None, None) => {
                errors.push(SpecError::new(
                    format!("{path}.from"),
                    format!("kind {kind} needs from and to"),
                ));
                None
            }
        }
    };
    match built {
        Some(Ok(window)) if errors.is_empty() => Ok(window),
        Some(Err(e)) => {
            errors.push(SpecError::new(
                format!("{path}.{}", schedule_field(&e, range)),
                e.to_string(),
            ));
            Err(errors)
        }
        _ => Err(errors),
    }
}

// ------------------------------------------------------------------------------------------------
// Ramp

/// A `minReplicas` ramp: from `from` to `to` in one-replica steps spread evenly over `duration`,
/// the first step at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ramp {
    /// `minReplicas` before the ramp.
    pub from: i32,
    /// `minReplicas` at the end of the ramp.
    pub to: i32,
    /// When the ramp started (the boundary), whole seconds.
    pub start: DateTime<Utc>,
    /// How long the ramp lasts (`spec.ramp`).
    pub duration: TimeDelta,
}

impl Ramp {
    fn steps(&self) -> i64 {
        (i64::from(self.to) - i64::from(self.from)).abs()
    }

    /// How many steps are taken at `t`: the first at `start`, step `k + 1` at
    /// `start + k * duration / steps`, all of them from `start + duration` on.
    pub fn steps_done(&self, t: DateTime<Utc>) -> i64 {
        let n = self.steps();
        if n == 0 {
            return 0;
        }
        if t < self.start {
            return 0;
        }
        let d = self.duration.num_milliseconds();
        let e = (t - self.start).num_milliseconds();
        if d <= 0 || e >= d {
            return n;
        }
        let k = i128::from(n) * i128::from(e) / i128::from(d) + 1;
        i64::try_from(k).unwrap_or(n).min(n)
    }

    /// `minReplicas` at `t`.
    pub fn value_at(&self, t: DateTime<Utc>) -> i32 {
        let k = self.steps_done(t);
        let step = i64::from(self.from) + if self.to >= self.from { k } else { -k };
        i32::try_from(step).unwrap_or(self.to)
    }

    /// Whether every step is taken at `t`.
    pub fn is_complete(&self, t: DateTime<Utc>) -> bool {
        self.steps_done(t) >= self.steps()
    }

    /// The instant of the next step after `t`, or `None` when the ramp is complete at `t`.
    pub fn next_step_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let n = self.steps();
        let k = self.steps_done(t);
        if k >= n {
            return None;
        }
        let d = i128::from(self.duration.num_milliseconds());
        // ceil(k * d / n): the first whole millisecond at which step k + 1 is due.
        let offset = (i128::from(k) * d + i128::from(n) - 1) / i128::from(n);
        let offset = TimeDelta::try_milliseconds(i64::try_from(offset).ok()?)?;
        self.start.checked_add_signed(offset)
    }

    /// The ramp as stored in `status.ramp`.
    pub fn to_status(&self) -> RampStatus {
        RampStatus {
            from_min_replicas: self.from,
            to_min_replicas: self.to,
            started_at: to_k8s_time(self.start),
        }
    }

    /// The ramp stored in `status.ramp`, with the current `spec.ramp` duration.
    pub fn from_status(status: &RampStatus, duration: TimeDelta) -> Self {
        Self {
            from: status.from_min_replicas,
            to: status.to_min_replicas,
            start: from_k8s_time(&status.started_at),
            duration,
        }
    }
}

/// `t` truncated to the whole second, as `status` stores it: a ramp computed before and after
/// its start is persisted gives the same steps.
fn whole_second(t: DateTime<Utc>) -> DateTime<Utc> {
    from_k8s_time(&to_k8s_time(t))
}

/// The ramp in force at `now`, if any.
///
/// - `previous`: the ramp in `status.ramp`;
/// - `current_min`: the HPA's `minReplicas` now (`None` when there is no HPA yet);
/// - `boundary`: the last schedule change of `minReplicas` within the ramp duration before `now`.
pub fn resolve_ramp(
    duration: TimeDelta,
    previous: Option<Ramp>,
    current_min: Option<i32>,
    target_min: i32,
    boundary: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Ramp> {
    let ramp = match previous {
        Some(ramp) if ramp.to == target_min => Some(ramp),
        Some(ramp) => {
            // The target moved mid-ramp: a new ramp from wherever the old one had got to.
            let start = whole_second(boundary.filter(|b| *b >= ramp.start).unwrap_or(now));
            Some(Ramp {
                from: ramp.value_at(start),
                to: target_min,
                start,
                duration,
            })
        }
        None => match (current_min, boundary) {
            (Some(from), Some(boundary)) if from > target_min => Some(Ramp {
                from,
                to: target_min,
                start: whole_second(boundary),
                duration,
            }),
            _ => None,
        },
    };
    // Decreases only: an increase spread after its boundary would leave capacity below the
    // schedule (increases are stepped up *ahead* of the boundary by the lead time instead).
    ramp.filter(|r| r.from > r.to && !r.is_complete(now))
}

// ------------------------------------------------------------------------------------------------
// The HPA

/// The HPA fields ebb owns, as they should be.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedFields {
    /// `spec.minReplicas`.
    pub min_replicas: i32,
    /// `spec.maxReplicas`.
    pub max_replicas: i32,
    /// `spec.metrics`: Resource cpu/memory Utilization for every non-zero target.
    pub metrics: Vec<MetricSpec>,
    /// Targets of other metrics already on the HPA, by name ([`Self::keeping_foreign_metrics`]
    /// sets them).
    pub metric_targets: Vec<MetricTargetSpec>,
}

/// The name of an External, Pods or Object metric.
fn metric_name(m: &MetricSpec) -> Option<&str> {
    m.external
        .as_ref()
        .map(|e| e.metric.name.as_str())
        .or_else(|| m.pods.as_ref().map(|p| p.metric.name.as_str()))
        .or_else(|| m.object.as_ref().map(|o| o.metric.name.as_str()))
}

/// The metric target `t` asks for.
fn metric_target(t: &MetricTargetSpec) -> MetricTarget {
    let (type_, value, average_value, average_utilization) =
        match (&t.value, &t.average_value, t.average_utilization) {
            (Some(v), _, _) => ("Value", Some(Quantity(v.clone())), None, None),
            (None, Some(v), _) => ("AverageValue", None, Some(Quantity(v.clone())), None),
            (None, None, u) => ("Utilization", None, None, u),
        };
    MetricTarget {
        type_: type_.into(),
        value,
        average_value,
        average_utilization,
    }
}

/// The target of an External, Pods or Object metric, mutably.
fn target_mut(m: &mut MetricSpec) -> Option<&mut MetricTarget> {
    if let Some(e) = m.external.as_mut() {
        return Some(&mut e.target);
    }
    if let Some(p) = m.pods.as_mut() {
        return Some(&mut p.target);
    }
    m.object.as_mut().map(|o| &mut o.target)
}

/// Whether two quantities are the same amount: the API server stores `2000m` as `2`, so a
/// string comparison would see a change after every write. Unparseable strings compare as text.
fn same_quantity(a: Option<&Quantity>, b: Option<&Quantity>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => match (ParsedQuantity::try_from(a), ParsedQuantity::try_from(b)) {
            (Ok(pa), Ok(pb)) => pa == pb,
            _ => a == b,
        },
        (a, b) => a == b,
    }
}

/// Whether `a` and `b` are the same target, quantities compared by amount.
fn same_target(a: &MetricTarget, b: &MetricTarget) -> bool {
    a.type_ == b.type_
        && a.average_utilization == b.average_utilization
        && same_quantity(a.value.as_ref(), b.value.as_ref())
        && same_quantity(a.average_value.as_ref(), b.average_value.as_ref())
}

/// `m` with the target `targets` names for it, if any. A target that is already the same
/// amount is left as the server wrote it.
fn retargeted(m: &MetricSpec, targets: &[MetricTargetSpec]) -> MetricSpec {
    let mut m = m.clone();
    let wanted = metric_name(&m).and_then(|name| targets.iter().find(|t| t.name == name));
    if let (Some(t), Some(target)) = (wanted, target_mut(&mut m)) {
        let desired = metric_target(t);
        if !same_target(target, &desired) {
            *target = desired;
        }
    }
    m
}

fn describe_target(t: &MetricTarget) -> String {
    let value = t
        .value
        .as_ref()
        .or(t.average_value.as_ref())
        .map(|q| q.0.clone())
        .or_else(|| t.average_utilization.map(|u| format!("{u}%")))
        .unwrap_or_default();
    format!("{} {value}", t.type_)
}

fn utilization_metric(resource: &str, utilization: i32) -> MetricSpec {
    MetricSpec {
        type_: "Resource".into(),
        resource: Some(ResourceMetricSource {
            name: resource.into(),
            target: MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(utilization),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }
}

/// Whether ebb decides this metric: a `Resource` metric on cpu or memory. Every other metric
/// (Pods, Object, External, ContainerResource, other resources) belongs to someone else and is
/// kept as it is.
fn is_owned_metric(m: &MetricSpec) -> bool {
    m.type_ == "Resource"
        && m.resource
            .as_ref()
            .is_some_and(|r| r.name == "cpu" || r.name == "memory")
}

/// `(resource, utilization)` of every cpu/memory metric, sorted, or `None` when one of them has
/// another target shape (an average value, say), which ebb's metric replaces.
fn utilization_targets(metrics: &[MetricSpec]) -> Option<Vec<(String, i32)>> {
    let mut out = Vec::new();
    for m in metrics.iter().filter(|m| is_owned_metric(m)) {
        let other = m.container_resource.is_some()
            || m.external.is_some()
            || m.object.is_some()
            || m.pods.is_some();
        let resource = m.resource.as_ref()?;
        let t = &resource.target;
        if other || t.type_ != "Utilization" || t.average_value.is_some() || t.value.is_some() {
            return None;
        }
        out.push((resource.name.clone(), t.average_utilization?));
    }
    out.sort();
    Some(out)
}

impl OwnedFields {
    /// The fields for `settings`.
    pub fn from_settings(settings: &HpaSettings) -> Self {
        let mut metrics = Vec::new();
        if let Some(cpu) = settings.target_cpu_utilization {
            metrics.push(utilization_metric("cpu", cpu));
        }
        if let Some(memory) = settings.target_memory_utilization {
            metrics.push(utilization_metric("memory", memory));
        }
        Self {
            min_replicas: settings.min_replicas,
            max_replicas: settings.max_replicas,
            metrics,
            metric_targets: settings.metric_targets.clone(),
        }
    }

    /// Whether every metric of `metrics` named in [`Self::metric_targets`] has that target.
    fn metric_targets_match(&self, metrics: &[MetricSpec]) -> bool {
        metrics
            .iter()
            .filter(|m| !is_owned_metric(m))
            .all(|m| retargeted(m, &self.metric_targets) == *m)
    }

    /// Whether `spec` already has these values. Metrics other than cpu/memory are not compared.
    /// An HPA left without metrics gets the API server's default (CPU at 80%), which matches
    /// an empty list.
    pub fn matches(&self, spec: &HorizontalPodAutoscalerSpec) -> bool {
        let metrics = spec.metrics.as_deref().unwrap_or_default();
        let foreign = metrics.iter().any(|m| !is_owned_metric(m));
        let metrics_match = match (
            utilization_targets(metrics),
            utilization_targets(&self.metrics),
        ) {
            (Some(actual), Some(desired)) if desired.is_empty() && !foreign => {
                actual.is_empty() || actual == [("cpu".to_owned(), SERVER_DEFAULT_CPU_UTILIZATION)]
            }
            (Some(actual), Some(desired)) => actual == desired,
            _ => false,
        };
        spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS) == self.min_replicas
            && spec.max_replicas == self.max_replicas
            && metrics_match
            && self.metric_targets_match(metrics)
    }

    /// These fields plus the metrics of `current` that are not cpu/memory: `spec.metrics` is one
    /// list to server-side apply (the API treats it as atomic), so metrics someone else added
    /// (queue depth, requests per second) are sent back as they are instead of being dropped.
    pub fn keeping_foreign_metrics(mut self, current: &HorizontalPodAutoscalerSpec) -> Self {
        self.metrics.extend(
            current
                .metrics
                .iter()
                .flatten()
                .filter(|m| !is_owned_metric(m))
                .map(|m| retargeted(m, &self.metric_targets)),
        );
        self
    }

    /// The `resourceVersion` a write of these fields to `current` is preconditioned on. Every
    /// write carries `spec.metrics`, an atomic list under server-side apply: without the
    /// precondition a metric another actor added after the read would be dropped. With it the
    /// write fails with a 409 instead, and ebb reads again and decides again.
    pub fn precondition(&self, current: &HorizontalPodAutoscaler) -> Option<String> {
        current.resource_version()
    }

    /// [`Self::apply_patch`] with `metadata.resourceVersion` set when `resource_version` is given
    /// (see [`Self::precondition`]).
    pub fn apply_patch_at(&self, name: &str, resource_version: Option<&str>) -> Value {
        let mut patch = self.apply_patch(name);
        if let Some(rv) = resource_version {
            patch["metadata"]["resourceVersion"] = json!(rv);
        }
        patch
    }

    /// The server-side apply body: only the owned fields.
    pub fn apply_patch(&self, name: &str) -> Value {
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": { "name": name },
            "spec": {
                "minReplicas": self.min_replicas,
                "maxReplicas": self.max_replicas,
                "metrics": self.metrics,
            },
        })
    }

    /// `minReplicas 3, maxReplicas 8, cpu 50%, memory 75%`.
    pub fn describe(&self) -> String {
        format!(
            "minReplicas {}, maxReplicas {}, metrics {}",
            self.min_replicas,
            self.max_replicas,
            describe_metrics(&self.metrics)
        )
    }

    /// What changes from `spec` to these fields, e.g. `minReplicas 4 -> 3; metrics cpu 50%,
    /// memory 75% -> cpu 50%`.
    pub fn diff(&self, spec: &HorizontalPodAutoscalerSpec) -> String {
        let mut parts = Vec::new();
        let min = spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
        if min != self.min_replicas {
            parts.push(format!("minReplicas {min} -> {}", self.min_replicas));
        }
        if spec.max_replicas != self.max_replicas {
            parts.push(format!(
                "maxReplicas {} -> {}",
                spec.max_replicas, self.max_replicas
            ));
        }
        let before = describe_metrics(spec.metrics.as_deref().unwrap_or_default());
        let after = describe_metrics(&self.metrics);
        if before != after {
            parts.push(format!("metrics {before} -> {after}"));
        }
        for m in spec
            .metrics
            .iter()
            .flatten()
            .filter(|m| !is_owned_metric(m))
        {
            let new = retargeted(m, &self.metric_targets);
            if let (Some(name), Some(old_t), Some(new_t)) = (
                metric_name(m),
                target_mut(&mut m.clone()).map(|t| describe_target(t)),
                target_mut(&mut new.clone()).map(|t| describe_target(t)),
            ) && old_t != new_t
            {
                parts.push(format!("{name} {old_t} -> {new_t}"));
            }
        }
        if parts.is_empty() {
            "no change".into()
        } else {
            parts.join("; ")
        }
    }
}

fn describe_metrics(metrics: &[MetricSpec]) -> String {
    if metrics.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = metrics
        .iter()
        .map(|m| match &m.resource {
            Some(r) if m.type_ == "Resource" => match r.target.average_utilization {
                Some(u) => format!("{} {u}%", r.name),
                None => format!("{} ({})", r.name, r.target.type_),
            },
            _ => m.type_.clone(),
        })
        .collect();
    parts.join(", ")
}

/// `minReplicas 3, maxReplicas 8, targetCPUUtilization 50, targetMemoryUtilization none`, then
/// the metric targets by name when there are any (`, queue_depth AverageValue 100`).
pub fn describe_settings(settings: &HpaSettings) -> String {
    let target = |t: Option<i32>| t.map_or_else(|| "none".to_owned(), |t| t.to_string());
    let mut out = format!(
        "minReplicas {}, maxReplicas {}, targetCPUUtilization {}, targetMemoryUtilization {}",
        settings.min_replicas,
        settings.max_replicas,
        target(settings.target_cpu_utilization),
        target(settings.target_memory_utilization)
    );
    for t in &settings.metric_targets {
        out.push_str(&format!(
            ", {} {}",
            t.name,
            describe_target(&metric_target(t))
        ));
    }
    out
}

/// `timeRangeSpec[1]` or `defaults`.
pub fn describe_range(index: Option<usize>) -> String {
    index.map_or_else(|| "defaults".to_owned(), |i| format!("timeRangeSpec[{i}]"))
}

/// What the HPA targets when ebb creates it: `spec.scaleTargetRef`, else the `apps/v1`
/// Deployment of the ServiceScaler's name.
pub fn scale_target(spec: &ServiceScalerSpec, name: &str) -> CrossVersionObjectReference {
    spec.scale_target_ref
        .clone()
        .unwrap_or_else(|| CrossVersionObjectReference {
            api_version: Some("apps/v1".into()),
            kind: "Deployment".into(),
            name: name.into(),
        })
}

/// The HPA ebb creates: owned by the ServiceScaler (garbage collected with it), targeting
/// [`scale_target`], with `fields`.
pub fn new_hpa(scaler: &ServiceScaler, fields: &OwnedFields) -> HorizontalPodAutoscaler {
    let name = scaler.name_any();
    HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: scaler.namespace(),
            labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned())].into()),
            // blockOwnerDeletion: a foreground deletion of the ServiceScaler waits for the HPA.
            owner_references: scaler.controller_owner_ref(&()).map(|r| {
                vec![OwnerReference {
                    block_owner_deletion: Some(true),
                    ..r
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(HorizontalPodAutoscalerSpec {
            min_replicas: Some(fields.min_replicas),
            max_replicas: fields.max_replicas,
            metrics: Some(fields.metrics.clone()),
            scale_target_ref: scale_target(&scaler.spec, &name),
            behavior: None,
        }),
        status: None,
    }
}

/// Whether the HPA carries the kill switch (`service-scaler.kubernetes.io/managed: "false"`).
pub fn kill_switch(hpa: &HorizontalPodAutoscaler) -> bool {
    hpa.annotations()
        .get(MANAGED_ANNOTATION)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}

/// Whether the HPA is controlled by this ServiceScaler (ebb created it).
pub fn owned_by(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> bool {
    let Some(uid) = scaler.uid() else {
        return false;
    };
    hpa.owner_references()
        .iter()
        .any(|r| r.uid == uid && r.controller == Some(true))
}

fn has_finalizer(scaler: &ServiceScaler) -> bool {
    scaler.finalizers().iter().any(|f| f == FINALIZER)
}

/// Whether the ServiceScaler still carries udaan's finalizer ([`UDAAN_FINALIZER`]).
pub fn has_udaan_finalizer(scaler: &ServiceScaler) -> bool {
    scaler.finalizers().iter().any(|f| f == UDAAN_FINALIZER)
}

/// Whether the HPA has any owner reference to this ServiceScaler (controller or not).
fn references(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> bool {
    scaler
        .uid()
        .is_some_and(|uid| hpa.owner_references().iter().any(|r| r.uid == uid))
}

/// Who created the HPA, as far as its fate on deletion goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HpaOrigin {
    /// ebb: it carries ebb's controller owner reference.
    Ebb,
    /// udaan: it carries [`MANAGED_ANNOTATION`] (udaan set it on every HPA it created or took
    /// over, and deleted those with the ServiceScaler).
    Udaan,
    /// Someone else; ebb adopted it.
    Adopted,
}

/// Who created `hpa` (see [`HpaOrigin`]).
pub fn hpa_origin(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> HpaOrigin {
    if owned_by(hpa, scaler) {
        HpaOrigin::Ebb
    } else if hpa.annotations().contains_key(MANAGED_ANNOTATION) {
        HpaOrigin::Udaan
    } else {
        HpaOrigin::Adopted
    }
}

/// What the deletion of the ServiceScaler does to an HPA of `origin`: `spec.deletionPolicy`, or
/// when unset what udaan did to the HPAs it created (delete them, and ebb's with them) and a
/// restore of any other.
pub fn deletion_action(policy: Option<DeletionPolicy>, origin: HpaOrigin) -> DeletionPolicy {
    policy.unwrap_or(match origin {
        HpaOrigin::Ebb | HpaOrigin::Udaan => DeletionPolicy::Delete,
        HpaOrigin::Adopted => DeletionPolicy::Restore,
    })
}

/// Whether the ServiceScaler must hold [`FINALIZER`] while it manages `hpa`: whenever its
/// deletion must do something the garbage collector would not do (or would do wrongly).
pub fn needs_finalizer(
    policy: Option<DeletionPolicy>,
    hpa: &HorizontalPodAutoscaler,
    scaler: &ServiceScaler,
) -> bool {
    let origin = hpa_origin(hpa, scaler);
    match deletion_action(policy, origin) {
        // The garbage collector deletes what ebb owns.
        DeletionPolicy::Delete => origin != HpaOrigin::Ebb,
        DeletionPolicy::Restore => true,
        // Only an owner reference has to go, so that the garbage collector keeps the HPA.
        DeletionPolicy::Orphan => references(hpa, scaler),
    }
}

/// The merge patch that drops every owner reference to `scaler` from `hpa`, preconditioned on
/// the HPA's `resourceVersion` (the list is replaced as a whole).
pub fn disown_patch(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> Value {
    let uid = scaler.uid().unwrap_or_default();
    let kept: Vec<&OwnerReference> = hpa
        .owner_references()
        .iter()
        .filter(|r| r.uid != uid)
        .collect();
    let kept = if kept.is_empty() {
        Value::Null
    } else {
        json!(kept)
    };
    json!({
        "metadata": {
            "resourceVersion": hpa.resource_version(),
            "ownerReferences": kept,
        }
    })
}

// ------------------------------------------------------------------------------------------------
// The decision

/// What the reconciler observed.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The ServiceScaler (status as read; `None` when unreadable).
    pub scaler: &'a ServiceScaler,
    /// The HPA of the same name, if it exists.
    pub hpa: Option<&'a HorizontalPodAutoscaler>,
    /// `--dry-run`: decide and report, write nothing but status.
    pub dry_run: bool,
}

/// Why the HPA is written (the `reason` label of the transitions counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteReason {
    /// The HPA did not exist.
    Create,
    /// The effective settings changed (a boundary, or a spec edit).
    Transition,
    /// A ramp step.
    Ramp,
    /// A lead step ahead of a boundary that raises minReplicas or maxReplicas.
    Lead,
    /// Someone else changed an owned field.
    Drift,
    /// The ServiceScaler is deleted: an adopted HPA gets the defaults back.
    Restore,
}

impl WriteReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Transition => "transition",
            Self::Ramp => "ramp",
            Self::Lead => "lead",
            Self::Drift => "drift",
            Self::Restore => "restore",
        }
    }
}

/// What to do to the HPA.
#[derive(Clone, Debug, PartialEq)]
pub enum HpaPlan {
    /// Nothing: in sync, paused, unmanaged, invalid spec or dry run.
    Leave,
    /// Create it (it does not exist).
    Create(Box<HorizontalPodAutoscaler>),
    /// Server-side apply the owned fields.
    Apply {
        /// The fields.
        fields: OwnedFields,
        /// Why.
        reason: WriteReason,
    },
}

/// What to do to [`FINALIZER`] on the ServiceScaler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerPlan {
    /// Leave as is.
    Keep,
    /// Add it (the deletion will need to act on the HPA: [`needs_finalizer`]).
    Add,
    /// Remove it (no longer needed).
    Remove,
}

/// How the ServiceScaler is being handled, for the managed-objects gauge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ManagedState {
    /// Schedule applied to the HPA.
    Active,
    /// Pause annotation.
    Paused,
    /// Kill switch on the HPA.
    Unmanaged,
    /// Invalid spec.
    Invalid,
    /// `--dry-run`.
    DryRun,
}

impl ManagedState {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Unmanaged => "unmanaged",
            Self::Invalid => "invalid",
            Self::DryRun => "dry_run",
        }
    }
}

/// An Event to record once the writes succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Normal or Warning.
    pub kind: EventKind,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What ebb did (or would do).
    pub action: &'static str,
    /// For humans.
    pub note: String,
}

impl Notice {
    fn normal(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            kind: EventKind::Normal,
            reason,
            action,
            note: note.into(),
        }
    }

    fn warning(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            kind: EventKind::Warning,
            reason,
            action,
            note: note.into(),
        }
    }
}

/// The outcome of [`decide`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The HPA write, if any.
    pub hpa: HpaPlan,
    /// The finalizer change, if any.
    pub finalizer: FinalizerPlan,
    /// The status to write; `None` when it is unchanged.
    pub status: Option<ServiceScalerStatus>,
    /// When to look again; `None`: only when something changes.
    pub requeue_after: Option<Duration>,
    /// For the managed-objects gauge.
    pub state: ManagedState,
    /// The Event of the HPA write, recorded as soon as it succeeded.
    pub hpa_notice: Option<Notice>,
    /// Events to record after the status write.
    pub notices: Vec<Notice>,
}

/// How long from `now` until `at`, rounded up to the millisecond (a timer never fires early
/// because of rounding) and capped at [`MAX_REQUEUE`]; [`MAX_REQUEUE`] without `at`.
pub fn requeue_after(now: DateTime<Utc>, at: Option<DateTime<Utc>>) -> Duration {
    let Some(at) = at else {
        return MAX_REQUEUE;
    };
    let wait = (at - now).to_std().unwrap_or(Duration::ZERO);
    let millis = wait.as_nanos().div_ceil(1_000_000);
    let wait = Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX));
    wait.clamp(Duration::from_millis(1), MAX_REQUEUE)
}

fn condition(
    conditions: &mut Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
    now: DateTime<Utc>,
) -> bool {
    set_condition(
        conditions,
        ConditionUpdate::new(type_, status, reason, message).observed_generation(generation),
        now,
    )
}

/// Sets `lastUpdatedTime` when anything changed; `None` when nothing did.
fn finish_status(
    previous: &ServiceScalerStatus,
    mut next: ServiceScalerStatus,
    hpa_written: bool,
    now: DateTime<Utc>,
) -> Option<ServiceScalerStatus> {
    next.last_updated_time
        .clone_from(&previous.last_updated_time);
    if next == *previous && !hpa_written {
        return None;
    }
    next.last_updated_time = Some(to_k8s_time(now));
    Some(next)
}

/// The pause in force at `now`: the ServiceScaler's own, else the HPA's (DESIGN §3: the pause
/// annotations count on every object ebb manages). `None` when neither is paused.
pub fn pause_of(observed: &Observed<'_>, now: DateTime<Utc>) -> Option<ObjectPause> {
    let scaler = ("ServiceScaler", &observed.scaler.metadata);
    let hpa = observed
        .hpa
        .map(|hpa| ("HorizontalPodAutoscaler", &hpa.metadata));
    first_pause(std::iter::once(scaler).chain(hpa), now)
}

/// The shared pause report ([`pause_report`]): the ServiceScaler's own pause, else the HPA's,
/// as every ebb controller words it. `None` when neither is paused.
pub fn pause_report_of(observed: &Observed<'_>, now: DateTime<Utc>) -> Option<PauseReport> {
    let scaler = observed.scaler;
    let hpa = observed
        .hpa
        .map(|hpa| ("HorizontalPodAutoscaler", &hpa.metadata));
    let conditions = scaler
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    pause_report(
        std::iter::once(("ServiceScaler", &scaler.metadata)).chain(hpa),
        conditions,
        scaler.metadata.generation,
        now,
    )
}

/// Decides everything for a ServiceScaler that is not being deleted.
pub fn decide(observed: &Observed<'_>, now: DateTime<Utc>) -> Decision {
    let scaler = observed.scaler;
    let generation = scaler.metadata.generation;
    let previous = scaler.status.clone().unwrap_or_default();
    let mut status = previous.clone();
    let mut notices = Vec::new();
    let hpa_name = format!(
        "{}/{}",
        scaler.namespace().unwrap_or_default(),
        scaler.name_any()
    );

    // Pause, on the ServiceScaler or on the HPA: the Paused condition and nothing else.
    if let Some(report) = pause_report_of(observed, now) {
        set_condition(&mut status.conditions, report.condition, now);
        if let Some((kind, reason, note)) = report.event {
            notices.push(Notice {
                kind,
                reason,
                action: "Pause",
                note,
            });
        }
        let pause = report.pause;
        return Decision {
            hpa: HpaPlan::Leave,
            finalizer: FinalizerPlan::Keep,
            status: finish_status(&previous, status, false, now),
            requeue_after: pause.resume_at().map(|at| requeue_after(now, Some(at))),
            state: ManagedState::Paused,
            hpa_notice: None,
            notices,
        };
    }
    condition(
        &mut status.conditions,
        PAUSED,
        false,
        "NotPaused",
        "",
        generation,
        now,
    );
    status.last_observed_generation = generation;

    // The kill switch is read whatever the spec says.
    let unmanaged = observed.hpa.is_some_and(kill_switch);
    let adopted = observed
        .hpa
        .is_some_and(|hpa| !unmanaged && needs_finalizer(scaler.spec.deletion_policy, hpa, scaler));
    let finalizer = match (adopted, has_finalizer(scaler)) {
        _ if observed.dry_run => FinalizerPlan::Keep,
        (true, false) => FinalizerPlan::Add,
        (false, true) => FinalizerPlan::Remove,
        _ => FinalizerPlan::Keep,
    };
    let unmanaged_message = format!(
        "HPA {hpa_name} has annotation {MANAGED_ANNOTATION}: \"false\"; ebb does not write it"
    );
    if unmanaged {
        if condition(
            &mut status.conditions,
            UNMANAGED,
            true,
            "KillSwitch",
            &unmanaged_message,
            generation,
            now,
        ) {
            notices.push(Notice::normal("Unmanaged", "Skip", &unmanaged_message));
        }
    } else {
        condition(
            &mut status.conditions,
            UNMANAGED,
            false,
            "Managed",
            "",
            generation,
            now,
        );
    }

    let schedule = match Schedule::from_spec(&scaler.spec) {
        Ok(schedule) => schedule,
        Err(errors) => {
            let message = errors.to_string();
            if condition(
                &mut status.conditions,
                SPEC_VALID,
                false,
                "InvalidSpec",
                &message,
                generation,
                now,
            ) {
                notices.push(Notice::warning("InvalidSpec", "Validate", &message));
            }
            condition(
                &mut status.conditions,
                READY,
                false,
                "InvalidSpec",
                format!("the spec is invalid; the HPA is left as it was: {message}"),
                generation,
                now,
            );
            return Decision {
                hpa: HpaPlan::Leave,
                // Adopted or not, an invalid spec changes nothing about the HPA's fate.
                finalizer: FinalizerPlan::Keep,
                status: finish_status(&previous, status, false, now),
                requeue_after: None,
                state: ManagedState::Invalid,
                hpa_notice: None,
                notices,
            };
        }
    };
    condition(
        &mut status.conditions,
        SPEC_VALID,
        true,
        "Valid",
        "",
        generation,
        now,
    );
    // Overlaps depend on the spec alone, and finding them sweeps a year per pair of ranges:
    // computed once per generation.
    let overlaps_known = generation.is_some()
        && ebb_runtime::find_condition(&status.conditions, RANGES_OVERLAP)
            .is_some_and(|c| c.observed_generation == generation);
    if !overlaps_known {
        let message = schedule.overlap_message();
        let (overlap, reason) = match &message {
            Some(_) => (true, "Overlap"),
            None => (false, "NoOverlap"),
        };
        let message = message.unwrap_or_default();
        let changed = condition(
            &mut status.conditions,
            RANGES_OVERLAP,
            overlap,
            reason,
            &message,
            generation,
            now,
        );
        if changed && overlap {
            notices.push(Notice::warning("RangesOverlap", "Validate", message));
        }
    }

    // The schedule at `now`.
    let matched = schedule.matched_at(now);
    let target = schedule.settings(matched).clone();
    let preview = schedule.transitions(now, PREVIEW_LEN);
    let next_transition = preview.first().map(|t| t.at);
    status.time_range_match = matched.is_some();
    status.matched_range = matched.and_then(|i| i32::try_from(i).ok());
    status.next_transitions = preview
        .iter()
        .map(|t| ScheduledTransition {
            at: to_k8s_time(t.at),
            matched_range: t.matched_range.and_then(|i| i32::try_from(i).ok()),
            settings: t.settings.clone(),
        })
        .collect();

    if unmanaged {
        condition(
            &mut status.conditions,
            READY,
            false,
            "Unmanaged",
            &unmanaged_message,
            generation,
            now,
        );
        status.ramp = None;
        return Decision {
            hpa: HpaPlan::Leave,
            finalizer,
            status: finish_status(&previous, status, false, now),
            requeue_after: Some(requeue_after(now, next_transition)),
            state: ManagedState::Unmanaged,
            hpa_notice: None,
            notices,
        };
    }

    // The ramp, if any, and what the HPA gets now.
    let current_min = observed.hpa.map(|hpa| {
        hpa.spec
            .as_ref()
            .and_then(|s| s.min_replicas)
            .unwrap_or(DEFAULT_MIN_REPLICAS)
    });
    let ramp = schedule.ramp().and_then(|duration| {
        let since = now.checked_sub_signed(duration)?;
        let previous_ramp = status.ramp.as_ref().map(|r| Ramp::from_status(r, duration));
        resolve_ramp(
            duration,
            previous_ramp,
            current_min,
            target.min_replicas,
            schedule.last_min_change(since, now),
            now,
        )
    });
    // The lead steps increases up ahead of their boundary (crate::lead); a ramp keeps a
    // decrease above it: both are lower bounds on minReplicas, capped at maxReplicas.
    let lead = crate::lead::lead_at(&schedule, now);
    let leading = lead.settings != target;
    let mut applied = lead.settings.clone();
    if let Some(ramp) = &ramp {
        applied.min_replicas = ramp
            .value_at(now)
            .max(applied.min_replicas)
            .clamp(1, applied.max_replicas);
    }
    let fields = OwnedFields::from_settings(&applied);
    let in_force = format!(
        "{} in force{}{}",
        describe_range(matched),
        ramp.map_or_else(String::new, |r| format!(
            "; minReplicas ramping {} -> {} from {}",
            r.from,
            r.to,
            r.start.to_rfc3339_opts(SecondsFormat::Secs, true)
        )),
        if leading {
            "; stepping up ahead of a coming increase (spec.leadTime)"
        } else {
            ""
        }
    );

    let (hpa, note) = match observed.hpa {
        None => {
            let hpa = new_hpa(scaler, &fields);
            let target_ref = scale_target(&scaler.spec, &scaler.name_any());
            let note = format!(
                "created HPA {hpa_name} for {} {}: {} ({in_force})",
                target_ref.kind,
                target_ref.name,
                fields.describe()
            );
            (HpaPlan::Create(Box::new(hpa)), Some(note))
        }
        Some(current) => {
            let spec = current.spec.clone().unwrap_or_default();
            if fields.matches(&spec) {
                (HpaPlan::Leave, None)
            } else {
                let reason = if ramp.is_some() {
                    WriteReason::Ramp
                } else if previous.last_known_config.as_ref() == Some(&applied) {
                    WriteReason::Drift
                } else if leading {
                    WriteReason::Lead
                } else {
                    WriteReason::Transition
                };
                let fields = fields.keeping_foreign_metrics(&spec);
                let note = format!("HPA {hpa_name}: {} ({in_force})", fields.diff(&spec));
                (HpaPlan::Apply { fields, reason }, Some(note))
            }
        }
    };

    let next_step = ramp.and_then(|r| r.next_step_after(now));
    let wake = [next_transition, next_step, lead.next_step]
        .into_iter()
        .flatten()
        .min();
    let requeue = Some(requeue_after(now, wake));

    if observed.dry_run {
        let (ready, message) = match (&note, &hpa) {
            (Some(note), HpaPlan::Create(_)) => (false, format!("dry run: would have {note}")),
            (Some(note), _) => (false, format!("dry run: would update {note}")),
            (None, _) => (true, format!("dry run: the HPA is in sync ({in_force})")),
        };
        if condition(
            &mut status.conditions,
            READY,
            ready,
            "DryRun",
            &message,
            generation,
            now,
        ) && note.is_some()
        {
            let action = match hpa {
                HpaPlan::Create(_) => "CreateHPA",
                _ => "UpdateHPA",
            };
            notices.push(Notice::normal("DryRun", action, message));
        }
        return Decision {
            hpa: HpaPlan::Leave,
            finalizer: FinalizerPlan::Keep,
            status: finish_status(&previous, status, false, now),
            requeue_after: requeue,
            state: ManagedState::DryRun,
            hpa_notice: None,
            notices,
        };
    }

    status.last_known_config = Some(applied.clone());
    status.ramp = ramp.map(|r| r.to_status());
    condition(
        &mut status.conditions,
        READY,
        true,
        if ramp.is_some() { "Ramping" } else { "Applied" },
        format!(
            "HPA {hpa_name}: {} ({in_force})",
            describe_settings(&applied)
        ),
        generation,
        now,
    );
    let hpa_notice = note.map(|note| {
        let (reason, action) = match hpa {
            HpaPlan::Create(_) => ("Created", "CreateHPA"),
            _ => ("Updated", "UpdateHPA"),
        };
        Notice::normal(reason, action, note)
    });
    let written = !matches!(hpa, HpaPlan::Leave);
    Decision {
        hpa,
        finalizer,
        status: finish_status(&previous, status, written, now),
        requeue_after: requeue,
        state: ManagedState::Active,
        hpa_notice,
        notices,
    }
}

/// What to do when a ServiceScaler is being deleted, in this order.
#[derive(Clone, Debug, PartialEq)]
pub struct DeletionPlan {
    /// Drop the HPA's owner references to the ServiceScaler ([`disown_patch`]), so that the
    /// garbage collector keeps it.
    pub disown: bool,
    /// Owned fields to give the HPA back (the defaults); `None`: no HPA write.
    pub restore: Option<OwnedFields>,
    /// Delete the HPA.
    pub delete: bool,
    /// Remove [`FINALIZER`] and [`UDAAN_FINALIZER`] (after the HPA writes).
    pub remove_finalizer: bool,
    /// Events to record.
    pub notices: Vec<Notice>,
}

/// Decides the deletion of a ServiceScaler holding [`FINALIZER`] or [`UDAAN_FINALIZER`]: the HPA
/// is deleted, restored to the defaults or kept as it is per [`deletion_action`] (unless paused,
/// dry run, or kill-switched, which leave it alone), then the finalizers go. An HPA ebb created
/// that is to be deleted is left to the garbage collector; one to be kept is disowned first.
pub fn decide_deletion(observed: &Observed<'_>, now: DateTime<Utc>) -> DeletionPlan {
    let scaler = observed.scaler;
    let mut plan = DeletionPlan {
        disown: false,
        restore: None,
        delete: false,
        remove_finalizer: has_finalizer(scaler) || has_udaan_finalizer(scaler),
        notices: Vec::new(),
    };
    if !plan.remove_finalizer {
        return plan;
    }
    let Some(hpa) = observed.hpa else {
        return plan;
    };
    let name = format!(
        "{}/{}",
        scaler.namespace().unwrap_or_default(),
        scaler.name_any()
    );
    let origin = hpa_origin(hpa, scaler);
    let action = deletion_action(scaler.spec.deletion_policy, origin);
    if action == DeletionPolicy::Delete && origin == HpaOrigin::Ebb {
        return plan;
    }
    let (reason, verb) = match action {
        DeletionPolicy::Delete => ("NotDeleted", "DeleteHPA"),
        DeletionPolicy::Restore => ("NotRestored", "RestoreHPA"),
        DeletionPolicy::Orphan => ("NotOrphaned", "OrphanHPA"),
    };
    let mut skip = |why: String| {
        plan.notices.push(Notice::normal(reason, verb, why));
    };
    if let Some(pause) = pause_of(observed, now) {
        skip(format!("HPA {name} left as it is: {pause}"));
        return plan;
    }
    if kill_switch(hpa) {
        skip(format!(
            "HPA {name} left as it is: it has annotation {MANAGED_ANNOTATION}: \"false\""
        ));
        return plan;
    }
    let disown = action != DeletionPolicy::Delete && references(hpa, scaler);
    let dry_run = |plan: &mut DeletionPlan, note: String| {
        plan.notices.push(Notice::normal(
            "DryRun",
            verb,
            format!("dry run: would have {note}"),
        ));
    };
    match action {
        DeletionPolicy::Delete => {
            let note = format!(
                "HPA {name} deleted with its ServiceScaler (deletionPolicy Delete; {})",
                match origin {
                    HpaOrigin::Udaan => "udaan created it",
                    _ => "adopted",
                }
            );
            if observed.dry_run {
                dry_run(&mut plan, note);
                return plan;
            }
            plan.notices.push(Notice::normal("Deleted", verb, note));
            plan.delete = true;
        }
        DeletionPolicy::Orphan => {
            if !disown {
                return plan;
            }
            let note = format!("HPA {name} kept as it is (deletionPolicy Orphan)");
            if observed.dry_run {
                dry_run(&mut plan, note);
                return plan;
            }
            plan.notices.push(Notice::normal("Orphaned", verb, note));
            plan.disown = true;
        }
        DeletionPolicy::Restore => {
            let mut errors = Vec::new();
            let Some(defaults) = defaults_settings(&scaler.spec.hpa, &mut errors) else {
                plan.notices.push(Notice::warning(
                    "NotRestored",
                    "RestoreHPA",
                    format!(
                        "HPA {name} left as it is: spec.hpa is invalid: {}",
                        SpecErrors(errors)
                    ),
                ));
                // Kept all the same: without the owner reference the garbage collector leaves it.
                plan.disown = disown && !observed.dry_run;
                return plan;
            };
            let spec = hpa.spec.clone().unwrap_or_default();
            let fields = OwnedFields::from_settings(&defaults).keeping_foreign_metrics(&spec);
            if fields.matches(&spec) {
                plan.disown = disown && !observed.dry_run;
                return plan;
            }
            let note = format!(
                "HPA {name} restored to the defaults: {}",
                fields.diff(&spec)
            );
            if observed.dry_run {
                dry_run(&mut plan, note);
                return plan;
            }
            plan.notices
                .push(Notice::normal("Restored", "RestoreHPA", note));
            plan.disown = disown;
            plan.restore = Some(fields);
        }
    }
    plan
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
