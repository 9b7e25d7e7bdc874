//! FleetSchedule: one schedule for every HPA a label selector matches, pure.
//!
//! # Rules
//! - **Reach.** A FleetSchedule selects, by `spec.selector`, the HPAs of its own namespace and
//!   of `spec.namespaces`; those count only for a FleetSchedule in ebb's own namespace and a
//!   cluster-wide install ([`Reach`]), and are otherwise reported in `SpecValid`.
//! - **Claim** ([`claim`]). A ServiceScaler of the HPA's name wins over every FleetSchedule; an
//!   HPA carrying [`OPT_OUT_ANNOTATION`]` = "true"` is left out; of several FleetSchedules
//!   matching the same HPA the oldest (creation time, then namespace and name) schedules it and
//!   both report the conflict (`Conflict` condition, a Warning Event). A FleetSchedule being
//!   deleted claims nothing.
//! - **Own values.** A member keeps its own settings outside the ranges. Before ebb first
//!   changes a member, the HPA's own `minReplicas`, `maxReplicas` and `metrics` are recorded on
//!   the HPA ([`RECORD_ANNOTATION`], with [`FLEET_ANNOTATION`] naming the FleetSchedule), in the
//!   same preconditioned write as the change. The range in force overrides the recorded values
//!   (cpu and memory utilization targets replace those metrics, `metricTargets` retarget others,
//!   every other metric is kept), with the ServiceScaler's lead time ahead of increases.
//! - **Restore.** Outside every range (after the lead), or once the HPA is no longer a member
//!   (it left the selector, opted out, its FleetSchedule is gone), it gets the recorded values
//!   back and the record goes, in one write. When a ServiceScaler claims it, only the record goes
//!   (the ServiceScaler writes the settings).
//! - **Hibernation.** A range with `replicaSpec.hibernate` records the target's replicas in the
//!   record first, then scales it to 0 through `/scale`; at the range's end (led), or when the HPA
//!   leaves the fleet, the target gets them back before the record goes (the shared
//!   [`hibernation`] rule).
//! - The kill switch and the pause annotations on the HPA, and a pause on the FleetSchedule, stop
//!   every write to it. Every write carries the resourceVersion read: a 409 decides again.

use std::collections::BTreeMap;

use ebb_core::pause::pause_state;
use ebb_core::plan::{Category, Plan, Requeue, StatusPatch, Target, Write};
use ebb_core::{ConditionUpdate, Notice, patch::merge_diff, set_condition, to_k8s_time};
use ebb_crds::fleet::{FleetSchedule, FleetScheduleStatus};
use ebb_crds::service_scaler::{HibernationStatus, HpaDefaults, HpaSettings, ServiceScalerSpec};
use ebb_schedule::Calendars;
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{Selector, SelectorExt};
use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::hpa::{is_owned_metric, retargeted};
use super::{
    CONDITION_READY, CONDITION_SPEC_VALID, DEFAULT_MIN_REPLICAS, Hibernation, ScaleRead, Schedule,
    calendar_names, describe_range, hibernation, kill_switch, requeue_after, scale_resource,
};

/// On an HPA: the FleetSchedule (`namespace/name`) whose schedule it follows.
pub const FLEET_ANNOTATION: &str = "scaling.ebb.dev/fleet";
/// On an HPA: its own settings as they were before a FleetSchedule first changed them (a
/// [`Record`] as JSON), and a hibernation's replicas.
pub const RECORD_ANNOTATION: &str = "scaling.ebb.dev/fleet-record";
/// On an HPA, `"true"`: no FleetSchedule schedules it (one that did gives its values back).
pub const OPT_OUT_ANNOTATION: &str = "scaling.ebb.dev/fleet-opt-out";
/// Condition: another FleetSchedule matches some of the same HPAs.
pub const CONDITION_CONFLICT: &str = "Conflict";

/// What an HPA was before a FleetSchedule changed it: restored when it stops being a member.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// `spec.minReplicas` as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// `spec.maxReplicas` as it was.
    pub max_replicas: i32,
    /// `spec.metrics` as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<MetricSpec>>,
    /// While the target hibernates: the replicas it gets back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hibernation: Option<HibernationStatus>,
}

impl Record {
    /// The owned fields of `spec`, as they are.
    pub fn of(spec: &HorizontalPodAutoscalerSpec) -> Self {
        Self {
            min_replicas: spec.min_replicas,
            max_replicas: spec.max_replicas,
            metrics: spec.metrics.clone(),
            hibernation: None,
        }
    }

    /// The recorded values as HPA settings (cpu and memory: their utilization targets, if any).
    fn settings(&self) -> HpaSettings {
        let metrics = self.metrics.as_deref().unwrap_or_default();
        HpaSettings {
            min_replicas: self.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS),
            max_replicas: self.max_replicas,
            target_cpu_utilization: utilization_of(metrics, "cpu"),
            target_memory_utilization: utilization_of(metrics, "memory"),
            ..HpaSettings::default()
        }
    }
}

/// The record on `meta`: `Ok(None)` without one, `Err` naming why one does not parse.
pub fn record_of(meta: &ObjectMeta) -> Result<Option<Record>, String> {
    let Some(text) = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(RECORD_ANNOTATION))
    else {
        return Ok(None);
    };
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| format!("annotation {RECORD_ANNOTATION} does not parse: {e}"))
}

fn utilization_of(metrics: &[MetricSpec], resource: &str) -> Option<i32> {
    metrics
        .iter()
        .filter(|m| m.type_ == "Resource")
        .filter_map(|m| m.resource.as_ref())
        .find(|r| r.name == resource && r.target.type_ == "Utilization")
        .and_then(|r| r.target.average_utilization)
}

/// Where ebb runs: which namespaces a FleetSchedule may reach beyond its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reach<'a> {
    /// ebb's own namespace (the Lease's): only a FleetSchedule there reaches `spec.namespaces`.
    pub home: Option<&'a str>,
    /// Whether this install watches every namespace.
    pub cluster_wide: bool,
}

impl Reach<'_> {
    /// Why `fleet`'s `spec.namespaces` is not honoured, if it names any and is not.
    pub fn refusal(&self, fleet: &FleetSchedule) -> Option<String> {
        if fleet.spec.namespaces.is_empty() {
            return None;
        }
        let namespace = fleet.namespace().unwrap_or_default();
        if !self.cluster_wide {
            return Some("spec.namespaces needs a cluster-wide install of service-scaler".into());
        }
        match self.home {
            Some(home) if home == namespace => None,
            Some(home) => Some(format!(
                "spec.namespaces is honoured only for a FleetSchedule in ebb's own namespace {home}"
            )),
            None => Some("spec.namespaces: ebb's own namespace is unknown (POD_NAMESPACE)".into()),
        }
    }

    /// Whether `fleet` reaches the HPAs of `namespace`.
    pub fn reaches(&self, fleet: &FleetSchedule, namespace: &str) -> bool {
        fleet.metadata.namespace.as_deref() == Some(namespace)
            || (self.refusal(fleet).is_none()
                && fleet.spec.namespaces.iter().any(|n| n == namespace))
    }
}

/// `namespace/name` of a FleetSchedule, as [`FLEET_ANNOTATION`] names it.
pub fn fleet_key(fleet: &FleetSchedule) -> String {
    format!(
        "{}/{}",
        fleet.metadata.namespace.as_deref().unwrap_or_default(),
        fleet.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether `a` and `b` are the same FleetSchedule (namespace and name): [`fleet_key`]'s
/// equality, without building the keys (a status pass asks it for every member).
fn same_fleet(a: &FleetSchedule, b: &FleetSchedule) -> bool {
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}

/// `fleet`'s selector, or why it is not one.
pub fn selector_of(fleet: &FleetSchedule) -> Result<Selector, String> {
    SELECTOR_PARSES.with(|n| n.set(n.get().wrapping_add(1)));
    Selector::try_from(fleet.spec.selector.clone()).map_err(|e| format!("spec.selector: {e}"))
}

thread_local! {
    static SELECTOR_PARSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many selectors [`selector_of`] parsed on this thread so far: tests hold a pass's parses
/// to the number of FleetSchedules, whatever the number of HPAs.
pub fn selector_parses() -> u64 {
    SELECTOR_PARSES.with(std::cell::Cell::get)
}

/// Whether `fleet` matches the HPA of `meta` (its namespace reached, its labels selected). A
/// FleetSchedule being deleted matches nothing.
pub fn selects(fleet: &FleetSchedule, meta: &ObjectMeta, reach: Reach<'_>) -> bool {
    selects_with(fleet, selector_of(fleet).ok().as_ref(), meta, reach)
}

/// [`selects`] with `fleet`'s selector parsed already (`None`: it does not parse).
fn selects_with(
    fleet: &FleetSchedule,
    selector: Option<&Selector>,
    meta: &ObjectMeta,
    reach: Reach<'_>,
) -> bool {
    if fleet.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    if !reach.reaches(fleet, namespace) {
        return false;
    }
    let empty = BTreeMap::new();
    selector.is_some_and(|s| s.matches(meta.labels.as_ref().unwrap_or(&empty)))
}

/// FleetSchedules with their selectors parsed once, to match many HPAs against.
#[derive(Debug)]
pub struct Fleets<'a> {
    parsed: Vec<(&'a FleetSchedule, Option<Selector>)>,
}

impl<'a> Fleets<'a> {
    /// `fleets`, each selector parsed.
    pub fn new(fleets: impl IntoIterator<Item = &'a FleetSchedule>) -> Self {
        Self {
            parsed: fleets
                .into_iter()
                .map(|fleet| (fleet, selector_of(fleet).ok()))
                .collect(),
        }
    }

    /// Who schedules the HPA of `meta` (see [`claim`]).
    pub fn claim(&self, meta: &ObjectMeta, service_scaler: bool, reach: Reach<'_>) -> Claim<'a> {
        let mut matching: Vec<&'a FleetSchedule> = self
            .parsed
            .iter()
            .filter(|(fleet, selector)| selects_with(fleet, selector.as_ref(), meta, reach))
            .map(|(fleet, _)| *fleet)
            .collect();
        if matching.is_empty() {
            return Claim::Nobody;
        }
        if service_scaler {
            return Claim::ServiceScaler;
        }
        if opted_out(meta) {
            return Claim::OptedOut;
        }
        matching.sort_by_key(|f| seniority(f));
        let winner = matching.remove(0);
        Claim::Fleet {
            winner,
            rivals: matching,
        }
    }
}

/// Whether the HPA of `meta` carries [`OPT_OUT_ANNOTATION`]` = "true"`.
pub fn opted_out(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(OPT_OUT_ANNOTATION))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Who schedules an HPA.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim<'a> {
    /// No FleetSchedule matches it.
    Nobody,
    /// It carries [`OPT_OUT_ANNOTATION`].
    OptedOut,
    /// A ServiceScaler of its name.
    ServiceScaler,
    /// `winner`, the oldest of the FleetSchedules matching it; `rivals` the others.
    Fleet {
        /// The FleetSchedule that schedules it.
        winner: &'a FleetSchedule,
        /// The other FleetSchedules matching it.
        rivals: Vec<&'a FleetSchedule>,
    },
}

/// The order FleetSchedules win in: the oldest first, then by namespace and name.
fn seniority(fleet: &FleetSchedule) -> (Option<Timestamp>, String) {
    (
        fleet.metadata.creation_timestamp.as_ref().map(|t| t.0),
        fleet_key(fleet),
    )
}

/// Who schedules the HPA of `meta`, given every FleetSchedule ebb sees and whether a
/// ServiceScaler of its name exists.
pub fn claim<'a>(
    meta: &ObjectMeta,
    fleets: impl IntoIterator<Item = &'a FleetSchedule>,
    service_scaler: bool,
    reach: Reach<'_>,
) -> Claim<'a> {
    Fleets::new(fleets).claim(meta, service_scaler, reach)
}

/// Whether a pass over the HPA of `meta` needs the HPA itself: it is a member, or carries a
/// record to act on. Otherwise the pass reads and writes nothing.
pub fn needs_pass(meta: &ObjectMeta, claim: &Claim<'_>) -> bool {
    let annotations = meta.annotations.as_ref();
    matches!(claim, Claim::Fleet { .. })
        || annotations
            .is_some_and(|a| a.contains_key(RECORD_ANNOTATION) || a.contains_key(FLEET_ANNOTATION))
}

/// Whether the pass reads the Scale of the HPA's target: a record holds a hibernation, or the
/// winning FleetSchedule has a hibernating range.
pub fn member_reads_scale(hpa: &HorizontalPodAutoscaler, claim: &Claim<'_>) -> bool {
    let recorded = record_of(&hpa.metadata).ok().flatten();
    recorded.is_some_and(|r| r.hibernation.is_some())
        || matches!(claim, Claim::Fleet { winner, .. }
            if winner.spec.time_range_spec.iter().any(|r| r.replica_spec.hibernate))
}

/// The workload an HPA scales (`spec.scaleTargetRef`).
pub fn member_target(hpa: &HorizontalPodAutoscaler) -> CrossVersionObjectReference {
    hpa.spec
        .as_ref()
        .map(|s| s.scale_target_ref.clone())
        .unwrap_or_default()
}

/// What a member's pass reads besides the HPA (as cached), once who schedules it is known from
/// the caches: the first of its two calls ([`members`](crate::members)).
#[derive(Clone, Debug)]
pub struct MemberReads<'a> {
    /// Who schedules the HPA ([`claim`]): what [`decide_member`] decides with.
    pub claim: Claim<'a>,
    /// The HolidayCalendars the winning FleetSchedule's ranges name.
    pub calendars: Vec<String>,
    /// The Scale of its target, where a hibernation concerns it ([`member_reads_scale`]) and
    /// the target's kind is one hibernation scales.
    pub scale: Option<ScaleRead>,
}

/// What a pass over `hpa` reads, given every FleetSchedule ebb sees and whether a ServiceScaler
/// of its name exists: nothing for an HPA that needs no pass ([`needs_pass`]).
pub fn member_reads<'a>(
    hpa: &HorizontalPodAutoscaler,
    fleets: impl IntoIterator<Item = &'a FleetSchedule>,
    service_scaler: bool,
    reach: Reach<'_>,
) -> MemberReads<'a> {
    let claim = claim(&hpa.metadata, fleets, service_scaler, reach);
    if !needs_pass(&hpa.metadata, &claim) {
        return MemberReads {
            claim,
            calendars: Vec::new(),
            scale: None,
        };
    }
    let calendars = match &claim {
        Claim::Fleet { winner, .. } => calendar_names(&winner.spec.time_range_spec)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let scale = member_reads_scale(hpa, &claim)
        .then(|| ScaleRead::of(member_target(hpa), &hpa.namespace().unwrap_or_default()))
        .flatten();
    MemberReads {
        claim,
        calendars,
        scale,
    }
}

/// What a FleetSchedule's status pass reads besides the caches: the HolidayCalendars its ranges
/// name ([`fleets`](crate::fleets)).
pub fn fleet_reads(fleet: &FleetSchedule) -> Vec<String> {
    calendar_names(&fleet.spec.time_range_spec)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// A ServiceScaler spec with `own` as its defaults and `fleet`'s ranges: the shared schedule
/// rules (ranges, overlaps, lead time) decide a member as they decide a ServiceScaler.
fn member_spec(fleet: &FleetSchedule, own: &HpaSettings) -> ServiceScalerSpec {
    ServiceScalerSpec {
        hpa: HpaDefaults {
            min_replicas: Some(own.min_replicas),
            max_replicas: own.max_replicas,
            target_cpu_utilization: own.target_cpu_utilization,
            target_memory_utilization: own.target_memory_utilization,
            metric_targets: Vec::new(),
        },
        time_range_spec: fleet.spec.time_range_spec.clone(),
        scale_target_ref: None,
        ramp: None,
        lead_time: fleet.spec.lead_time.clone(),
        deletion_policy: None,
        range_selection: fleet.spec.range_selection,
    }
}

/// The schedule of `fleet` alone (its ranges' own rules), with neutral defaults: what the
/// FleetSchedule's status reports, whatever its members' own values are.
pub fn fleet_schedule(fleet: &FleetSchedule, calendars: &Calendars) -> Result<Schedule, String> {
    let neutral = HpaSettings {
        min_replicas: 1,
        max_replicas: i32::MAX,
        ..HpaSettings::default()
    };
    Schedule::from_spec(&member_spec(fleet, &neutral), calendars).map_err(|e| e.to_string())
}

/// `metrics` with the cpu or memory utilization target `resource` set to `target` (`None`:
/// that metric removed), in place of whatever target it had.
fn with_utilization(metrics: &mut Vec<MetricSpec>, resource: &str, target: Option<i32>) {
    let at = metrics.iter().position(|m| {
        is_owned_metric(m) && m.resource.as_ref().is_some_and(|r| r.name == resource)
    });
    let metric = target.map(|u| MetricSpec {
        type_: "Resource".into(),
        resource: Some(ResourceMetricSource {
            name: resource.into(),
            target: MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(u),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    });
    match (at, metric) {
        (Some(i), Some(m)) => metrics[i] = m,
        (Some(i), None) => {
            metrics.remove(i);
        }
        (None, Some(m)) => metrics.push(m),
        (None, None) => {}
    }
}

/// The owned fields an HPA whose own values are `own` gets under `settings`: the recorded
/// metrics with cpu and memory changed only where `settings` changes them (so an average-value
/// target nobody overrides is kept as it was), others retargeted by `metricTargets`.
fn fields_under(own: &Record, settings: &HpaSettings) -> Record {
    let own_settings = own.settings();
    let mut metrics = own.metrics.clone().unwrap_or_default();
    if settings.target_cpu_utilization != own_settings.target_cpu_utilization {
        with_utilization(&mut metrics, "cpu", settings.target_cpu_utilization);
    }
    if settings.target_memory_utilization != own_settings.target_memory_utilization {
        with_utilization(&mut metrics, "memory", settings.target_memory_utilization);
    }
    let metrics: Vec<MetricSpec> = metrics
        .iter()
        .map(|m| match is_owned_metric(m) {
            true => m.clone(),
            false => retargeted(m, &settings.metric_targets),
        })
        .collect();
    Record {
        min_replicas: Some(settings.min_replicas),
        max_replicas: settings.max_replicas,
        metrics: (!metrics.is_empty() || own.metrics.is_some()).then_some(metrics),
        hibernation: None,
    }
}

/// Whether `spec` holds the owned fields of `fields` (the metrics as lists, `None` as empty). An
/// HPA written without metrics gets the API server's default (cpu at 80%), which matches none.
fn spec_holds(spec: &HorizontalPodAutoscalerSpec, fields: &Record) -> bool {
    let actual = spec.metrics.as_deref().unwrap_or_default();
    let wanted = fields.metrics.as_deref().unwrap_or_default();
    let server_default = || {
        let mut default = Vec::new();
        with_utilization(&mut default, "cpu", Some(80));
        actual == default.as_slice()
    };
    spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS)
        == fields.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS)
        && spec.max_replicas == fields.max_replicas
        && (actual == wanted || (wanted.is_empty() && server_default()))
}

/// What a member pass observed.
#[derive(Clone, Copy, Debug)]
pub struct MemberObserved<'a> {
    /// The HPA, as read.
    pub hpa: &'a HorizontalPodAutoscaler,
    /// Who schedules it ([`claim`]).
    pub claim: &'a Claim<'a>,
    /// The Scale of its target, read when [`member_reads_scale`]; `None` otherwise or when the
    /// target does not exist.
    pub scale: Option<&'a Scale>,
    /// The HolidayCalendars the winning FleetSchedule's ranges name.
    pub calendars: &'a Calendars,
    /// `--dry-run`: decide and report, write nothing.
    pub dry_run: bool,
}

/// Where the HPA should be after this pass.
struct Goal {
    /// The owned fields to hold (`None`: leave the spec as it is).
    fields: Option<Record>,
    /// The record to keep (`None`: none).
    record: Option<Record>,
    /// [`FLEET_ANNOTATION`]'s value.
    fleet: Option<String>,
    /// The hibernation step.
    hibernation: Hibernation,
    /// Why, for the Event: `FleetSchedule shop/office-hours: timeRangeSpec[0] in force`.
    why: String,
    /// Counted under this reason.
    reason: &'static str,
    /// When to look again.
    wake: Option<Timestamp>,
}

/// One pass over a HPA a FleetSchedule schedules or scheduled: the plan that brings it to its
/// fleet's settings at `now`, or back to its own (see the module's rules). Events go to the HPA.
///
/// An HPA that is no member and carries no record to act on ([`needs_pass`]) gets nothing.
pub fn decide_member(observed: &MemberObserved<'_>, now: Timestamp) -> Plan<()> {
    let hpa = observed.hpa;
    let mut plan = Plan::new(hpa.object_ref(&()), ());
    if !needs_pass(&hpa.metadata, observed.claim) {
        return plan;
    }
    // The kill switch and the pause annotations stop every write to the HPA.
    if kill_switch(hpa) {
        return plan;
    }
    let mut pauses = vec![pause_state(&hpa.metadata, now)];
    if let Claim::Fleet { winner, .. } = observed.claim {
        pauses.push(pause_state(&winner.metadata, now));
    }
    if let Some(pause) = pauses.iter().find(|p| p.is_paused()) {
        plan.requeue = pause.resume_at().map_or(Requeue::AwaitChange, |at| {
            Requeue::After(requeue_after(now, Some(at)))
        });
        return plan;
    }
    let Some(spec) = hpa.spec.as_ref() else {
        return plan;
    };
    let recorded = match record_of(&hpa.metadata) {
        Ok(recorded) => recorded,
        Err(why) => {
            plan.notices.push(Notice::warning(
                "FleetRecordUnreadable",
                "ScheduleHPA",
                format!("{why}; the HPA is left as it is until the annotation is fixed or removed"),
            ));
            return plan;
        }
    };
    let goal = match goal(observed, spec, recorded.as_ref(), now) {
        Ok(goal) => goal,
        Err(why) => {
            plan.notices
                .push(Notice::warning("FleetInvalid", "ScheduleHPA", why));
            return plan;
        }
    };
    // A member is looked at again at its next boundary, and at least every MAX_REQUEUE.
    plan.requeue = match observed.claim {
        Claim::Fleet { .. } => Requeue::After(requeue_after(now, goal.wake)),
        _ => Requeue::AwaitChange,
    };
    let writes = member_writes(hpa, spec, recorded.as_ref(), observed.scale, &goal);
    if writes.is_empty() {
        return plan;
    }
    let note = format!("{}: {}", goal.why, describe_change(spec, &goal));
    if observed.dry_run {
        plan.notices.push(Notice::normal(
            "DryRun",
            "ScheduleHPA",
            format!("dry run: would have written {note}"),
        ));
        return plan;
    }
    let reason = goal.reason;
    plan.writes = writes.into_iter().map(|w| w.reason(reason)).collect();
    if let Some(last) = plan.writes.last_mut() {
        let event = match reason {
            "restore" => "Restored",
            "hibernate" => "Hibernated",
            "wake" => "Woke",
            _ => "Scheduled",
        };
        last.notices
            .push(Notice::normal(event, "ScheduleHPA", note));
    }
    plan
}

/// What changes, for the Event.
fn describe_change(spec: &HorizontalPodAutoscalerSpec, goal: &Goal) -> String {
    let mut parts = Vec::new();
    if let Some(fields) = &goal.fields {
        let min = spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
        let new_min = fields.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
        if min != new_min {
            parts.push(format!("minReplicas {min} -> {new_min}"));
        }
        if spec.max_replicas != fields.max_replicas {
            parts.push(format!(
                "maxReplicas {} -> {}",
                spec.max_replicas, fields.max_replicas
            ));
        }
        if spec.metrics.as_deref().unwrap_or_default()
            != fields.metrics.as_deref().unwrap_or_default()
        {
            parts.push("metrics changed".into());
        }
    }
    match &goal.hibernation {
        Hibernation::Sleep { from, .. } => parts.push(format!("target scaled {from} -> 0")),
        Hibernation::Wake { replicas } => parts.push(format!("target scaled 0 -> {replicas}")),
        _ => {}
    }
    if parts.is_empty() {
        parts.push("record updated".into());
    }
    parts.join("; ")
}

fn goal(
    observed: &MemberObserved<'_>,
    spec: &HorizontalPodAutoscalerSpec,
    recorded: Option<&Record>,
    now: Timestamp,
) -> Result<Goal, String> {
    let own = recorded.cloned().unwrap_or_else(|| Record::of(spec));
    let own_settings = own.settings();
    let target = member_target(observed.hpa);
    let slept = recorded.and_then(|r| r.hibernation.as_ref());
    // Not (or no longer) a member: the own values back, a hibernating target awake.
    let leave = |why: String, restore: bool| {
        let hibernation = hibernation(false, slept, &target, observed.scale, &own_settings, now);
        Goal {
            fields: (restore && recorded.is_some()).then(|| own.clone()),
            record: None,
            fleet: None,
            hibernation,
            why,
            reason: "restore",
            wake: None,
        }
    };
    let (winner, _) = match observed.claim {
        Claim::Fleet { winner, rivals } => (*winner, rivals),
        Claim::Nobody => return Ok(leave("no FleetSchedule matches it".into(), true)),
        Claim::OptedOut => return Ok(leave(format!("it carries {OPT_OUT_ANNOTATION}"), true)),
        Claim::ServiceScaler => {
            return Ok(leave(
                "a ServiceScaler of its name schedules it".into(),
                false,
            ));
        }
    };
    let key = fleet_key(winner);
    let schedule = Schedule::from_spec(&member_spec(winner, &own_settings), observed.calendars)
        .map_err(|e| {
            format!(
                "FleetSchedule {key} cannot schedule it with its own values; left as it is: {e}"
            )
        })?;
    let lead = crate::lead::lead_at(&schedule, now);
    let matched = schedule.matched_at(now);
    let settings = lead.settings;
    let wake = [schedule.next_transition(now), lead.next_step]
        .into_iter()
        .flatten()
        .min();
    let why = format!("FleetSchedule {key}: {} in force", describe_range(matched));
    let step = hibernation(
        settings.hibernate,
        slept,
        &target,
        observed.scale,
        &settings,
        now,
    );
    if let Hibernation::Unsupported(why) = &step {
        return Err(format!("FleetSchedule {key}: {why}"));
    }
    let hibernating = step.record_after(slept);
    let in_schedule = settings != own_settings || hibernating.is_some();
    if !in_schedule {
        // Outside every range: the own values, and no record.
        let mut goal = leave(why, true);
        goal.wake = wake;
        return Ok(goal);
    }
    let mut record = own.clone();
    record.hibernation = hibernating;
    let reason = match (&step, recorded) {
        (Hibernation::Sleep { .. }, _) => "hibernate",
        (Hibernation::Wake { .. }, _) => "wake",
        _ => "fleet",
    };
    Ok(Goal {
        fields: Some(fields_under(&own, &settings)),
        record: Some(record),
        fleet: Some(key),
        hibernation: step,
        why,
        reason,
        wake,
    })
}

/// The writes from the HPA as read to `goal`, in order: a wake first (the target runs before
/// the record of its replicas goes), then the HPA (its fields, the record and the fleet's name
/// in one merge patch naming the resourceVersion read), a sleep last (the record is on the HPA
/// before the target goes to 0).
fn member_writes(
    hpa: &HorizontalPodAutoscaler,
    spec: &HorizontalPodAutoscalerSpec,
    recorded: Option<&Record>,
    scale: Option<&Scale>,
    goal: &Goal,
) -> Vec<Write> {
    let mut writes = Vec::new();
    let target = member_target(hpa);
    let scale_version = scale.and_then(|s| s.metadata.resource_version.as_deref());
    let scale_target = scale_resource(&target).map(|resource| Target {
        resource,
        namespace: hpa.namespace(),
        name: target.name.clone(),
    });
    if let (Hibernation::Wake { replicas }, Some(scale)) = (&goal.hibernation, &scale_target) {
        writes.push(Write::scale(
            scale.clone(),
            scale_version,
            *replicas,
            Category::Target,
        ));
    }
    let mut patch = json!({});
    if let Some(fields) = goal.fields.as_ref().filter(|f| !spec_holds(spec, f)) {
        patch["spec"] = json!({
            "minReplicas": fields.min_replicas,
            "maxReplicas": fields.max_replicas,
            "metrics": fields.metrics,
        });
    }
    let annotations = hpa.annotations();
    let fleet_now = annotations.get(FLEET_ANNOTATION);
    if fleet_now != goal.fleet.as_ref() {
        patch["metadata"]["annotations"][FLEET_ANNOTATION] = json!(goal.fleet);
    }
    if recorded != goal.record.as_ref() {
        let text = goal
            .record
            .as_ref()
            .and_then(|r| serde_json::to_string(r).ok());
        patch["metadata"]["annotations"][RECORD_ANNOTATION] = json!(text);
    }
    if patch != json!({}) {
        writes.push(Write::merge(
            Target::of(hpa),
            hpa.resource_version().as_deref(),
            patch,
            Category::Target,
        ));
    }
    if let (Hibernation::Sleep { .. }, Some(scale)) = (&goal.hibernation, &scale_target) {
        writes.push(Write::scale(
            scale.clone(),
            scale_version,
            0,
            Category::Target,
        ));
    }
    writes
}

/// What the FleetSchedule's status pass observed: the FleetSchedule, every FleetSchedule ebb
/// sees (itself included), the HPAs it may reach (metadata), and which have a ServiceScaler.
pub struct FleetObserved<'a> {
    /// The FleetSchedule.
    pub fleet: &'a FleetSchedule,
    /// Every FleetSchedule ebb sees.
    pub fleets: &'a [&'a FleetSchedule],
    /// The HPAs of the namespaces ebb watches (their metadata).
    pub hpas: &'a [&'a ObjectMeta],
    /// Whether a ServiceScaler of an HPA's name exists.
    pub service_scaler: &'a dyn Fn(&ObjectMeta) -> bool,
    /// Where ebb runs.
    pub reach: Reach<'a>,
    /// The HolidayCalendars its ranges name.
    pub calendars: &'a Calendars,
}

/// The FleetSchedule's status at `now`: its members, the range in force, its conditions
/// (`SpecValid`, `Conflict`, `Ready`), with a Warning Event when a conflict starts or changes.
/// Requeued at the next transition.
pub fn decide_fleet(observed: &FleetObserved<'_>, now: Timestamp) -> Plan<()> {
    let fleet = observed.fleet;
    let mut plan = Plan::new(fleet.object_ref(&()), ());
    let generation = fleet.metadata.generation;
    let old = fleet.status.clone().unwrap_or_default();
    let mut status = FleetScheduleStatus {
        observed_generation: generation,
        ..old.clone()
    };
    let mut notices = Vec::new();
    let mut condition = |type_: &str, ok: bool, reason: &str, message: String| {
        set_condition(
            &mut status.conditions,
            ConditionUpdate::new(type_, ok, reason, message).observed_generation(generation),
            now,
        )
    };
    // Each selector is parsed once and the schedule built once, whatever the number of HPAs.
    let own_selector = selector_of(fleet);
    let schedule = fleet_schedule(fleet, observed.calendars);
    let invalid = [
        own_selector.as_ref().err().cloned(),
        observed.reach.refusal(fleet),
        schedule.as_ref().err().cloned(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    let own_selector = own_selector.ok();
    let all = Fleets::new(observed.fleets.iter().copied());
    let key = fleet_key(fleet);
    let mut members = 0;
    // Per rival: the older of the two, how many HPAs both match, one of them.
    let mut rivals: BTreeMap<String, (bool, usize, String)> = BTreeMap::new();
    for meta in observed.hpas {
        if !selects_with(fleet, own_selector.as_ref(), meta, observed.reach) {
            continue;
        }
        if let Claim::Fleet {
            winner,
            rivals: others,
        } = all.claim(meta, (observed.service_scaler)(meta), observed.reach)
        {
            members += usize::from(same_fleet(winner, fleet));
            for other in std::iter::once(winner).chain(others) {
                if same_fleet(other, fleet) {
                    continue;
                }
                let older = seniority(other) < seniority(fleet);
                let entry = rivals.entry(fleet_key(other)).or_insert_with(|| {
                    let hpa_key = format!(
                        "{}/{}",
                        meta.namespace.as_deref().unwrap_or_default(),
                        meta.name.as_deref().unwrap_or_default()
                    );
                    (older, 0, hpa_key)
                });
                entry.1 += 1;
            }
        }
    }
    status.members = i32::try_from(members).unwrap_or(i32::MAX);
    let schedule = schedule.ok();
    status.matched_range = schedule
        .as_ref()
        .and_then(|s| s.matched_at(now))
        .and_then(|i| i32::try_from(i).ok());
    let next = schedule.as_ref().and_then(|s| s.next_transition(now));
    status.next_transition = next.map(to_k8s_time);
    if invalid.is_empty() {
        condition(CONDITION_SPEC_VALID, true, "Valid", String::new());
    } else {
        let message = invalid.join("; ");
        if condition(CONDITION_SPEC_VALID, false, "Invalid", message.clone()) {
            notices.push(Notice::warning("InvalidSpec", "ScheduleHPAs", message));
        }
    }
    if rivals.is_empty() {
        condition(CONDITION_CONFLICT, false, "NoConflict", String::new());
    } else {
        let message = rivals
            .iter()
            .map(|(other, (older, count, example))| {
                let (winner, loser) = match older {
                    true => (other.as_str(), key.as_str()),
                    false => (key.as_str(), other.as_str()),
                };
                format!(
                    "FleetSchedule {other} also matches {count} of these HPAs (e.g. {example}); \
                     {winner}, the older, schedules them, not {loser}"
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        if condition(
            CONDITION_CONFLICT,
            true,
            "MatchedByAnother",
            message.clone(),
        ) {
            notices.push(Notice::warning("Conflict", "ScheduleHPAs", message));
        }
    }
    let pause = pause_state(&fleet.metadata, now);
    match pause.is_paused() {
        true => condition(
            super::PAUSED,
            true,
            "Paused",
            "a pause annotation is on the FleetSchedule: its members are not written".into(),
        ),
        false => condition(super::PAUSED, false, "NotPaused", String::new()),
    };
    let (ready, reason, message) = match invalid.is_empty() {
        true => (
            true,
            "Scheduling",
            format!(
                "{members} HPAs scheduled; {} in force",
                describe_range(schedule.as_ref().and_then(|s| s.matched_at(now)))
            ),
        ),
        false => (
            false,
            "InvalidSpec",
            "the spec is invalid; see SpecValid".into(),
        ),
    };
    condition(CONDITION_READY, ready, reason, message);
    if status != old {
        let before = serde_json::to_value(&fleet.status).unwrap_or(Value::Null);
        let after = serde_json::to_value(&status).unwrap_or(Value::Null);
        plan.status = Some(StatusPatch {
            target: Target::of(fleet),
            patch: json!({ "status": merge_diff(&before, &after) }),
        });
    }
    plan.notices = notices;
    plan.requeue = match next {
        Some(at) => Requeue::After(requeue_after(now, Some(at))),
        None => Requeue::AwaitChange,
    };
    plan
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
