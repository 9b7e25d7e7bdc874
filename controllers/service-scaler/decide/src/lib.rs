//! Every rule of service-scaler, pure: a ServiceScaler, the HPA of the same name and `now` in, the
//! whole pass out as a [`Plan`] ([`decide`]). No client, no clock, no I/O.
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
//! - **Hibernation** ([`hibernation`], the module `hibernate`). A range with
//!   `replicaSpec.hibernate` scales the HPA's target to 0 through `/scale`, the replicas it ran
//!   recorded in `status.hibernation` first; at the range's end (led by `spec.leadTime`) it gets
//!   them back (at least `minReplicas`) and the record goes. Deleting the ServiceScaler wakes it
//!   unless `deletionPolicy: Orphan`.
//! - **Kill switch.** `service-scaler.kubernetes.io/managed: "false"` on the HPA stops every write
//!   to it; apart from the pause annotations below, no other annotation on the HPA matters.
//! - **Pause.** `scaling.ebb.dev/paused` / `paused-until` on the ServiceScaler *or on the HPA*
//!   (they count on every object ebb manages): nothing is written to the HPA and only the
//!   `Paused` condition is written to the ServiceScaler, naming the paused object and the annotation, with
//!   an Event when the pause starts or changes (both from the shared
//!   [`ebb_core::pause::pause_report`], worded as by every controller); the ServiceScaler's
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
//!
//! # Layout
//! This crate (`service-scaler-decide`, the binary's `decide` module) depends on the pure crates
//! only (ebb-core, ebb-crds, ebb-schedule: no client, no runtime; `make crds-check` checks it).
//! Its root holds the decision itself ([`decide_scaling`], [`decide_deletion`]) and its types;
//! `writes` makes it the plan ([`decide`], [`decide_unreadable`]: the writes in order, what each
//! names of what was read, where the Events go). The subjects it draws on live in submodules,
//! their public items re-exported here:
//! - `spec`: spec validation ([`SpecError`], [`SpecErrors`], [`merge`]);
//! - `schedule`: the windows of the ranges and the transitions ([`Schedule`], [`Transition`],
//!   [`overlap_message`]);
//! - `ramp`: the `minReplicas` ramp ([`Ramp`], [`resolve_ramp`]);
//! - [`lead`]: the lead time's steps ahead of a boundary;
//! - `hpa`: the owned HPA fields, the HPA ebb creates, the kill switch and ownership
//!   ([`OwnedFields`], [`new_hpa`], [`kill_switch`], [`HpaOrigin`], [`deletion_action`],
//!   [`needs_finalizer`], ...).

use std::time::Duration;

use ebb_core::pause::{CONDITION_PAUSED, ObjectPause, PauseReport, first_pause, pause_report};
use ebb_core::{ConditionUpdate, set_condition, to_k8s_time};
use ebb_crds::service_scaler::{
    DeletionPolicy, HpaSettings, RampStatus, ScheduledTransition, ServiceScaler,
    ServiceScalerStatus,
};
pub use ebb_schedule::Calendars;
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::ResourceExt;

mod fleet;
mod hibernate;
mod hpa;
pub mod lead;
pub mod ledger;
mod ramp;
mod reads;
mod schedule;
mod spec;
mod writes;

#[cfg(test)]
mod fixtures;

pub use fleet::{
    CONDITION_CONFLICT, Claim, FLEET_ANNOTATION, FleetObserved, Fleets, MemberObserved,
    MemberReads, OPT_OUT_ANNOTATION, RECORD_ANNOTATION, Reach, Record, claim, decide_fleet,
    decide_member, fleet_key, fleet_reads, fleet_schedule, member_reads, member_reads_scale,
    member_target, needs_pass, opted_out, record_of, selector_of, selector_parses, selects,
};

/// A FleetSchedule's members, one HPA per pass, in two calls: [`reads`](members::reads) (who
/// schedules the HPA, from the caches, and what else to read), then
/// [`decide`](members::decide) (the HPA's writes).
pub mod members {
    pub use crate::fleet::{
        MemberObserved as Observed, MemberReads as Reads, decide_member as decide,
        member_reads as reads,
    };
}

/// A FleetSchedule's status, in two calls: [`reads`](fleets::reads) (its calendars), then
/// [`decide`](fleets::decide) from the caches.
pub mod fleets {
    pub use crate::fleet::{
        FleetObserved as Observed, decide_fleet as decide, fleet_reads as reads,
    };
}
pub use hibernate::{
    Hibernation, SCALABLE, describe_workload, hibernation, hibernation_target, reads_scale,
    recorded, scale_resource, scale_write_target,
};
pub use hpa::{
    HpaOrigin, OwnedFields, Precondition, deletion_action, describe_range, describe_settings,
    disown_patch, has_finalizer, has_udaan_finalizer, hpa_origin, kill_switch, needs_finalizer,
    new_hpa, owned_by, scale_target,
};
pub use ramp::{Ramp, resolve_ramp};
pub use reads::{Reads, ScaleRead, reads};
pub use schedule::{Coming, SCAN_STEPS, Schedule, Transition, overlap_message};
pub use spec::{SpecError, SpecErrors, calendar_names, merge};
pub use writes::{Gauge, Plan, Uninstall, decide, decide_unreadable, release_plan, uninstall};

use hpa::references;
use spec::defaults_settings;

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
pub const CONDITION_READY: &str = "Ready";
/// Condition: the spec is valid (false names the field and the rule).
pub const CONDITION_SPEC_VALID: &str = "SpecValid";
/// Condition: some ranges can be in force at the same instant.
pub const CONDITION_RANGES_OVERLAP: &str = "RangesOverlap";
/// Condition: the ServiceScaler or its HPA carries a pause annotation.
pub const PAUSED: &str = CONDITION_PAUSED;
/// Condition: the HPA carries the kill-switch annotation.
pub const CONDITION_UNMANAGED: &str = "Unmanaged";

/// What the reconciler observed.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The ServiceScaler (status as read; `None` when unreadable).
    pub scaler: &'a ServiceScaler,
    /// The HPA of the same name, if it exists.
    pub hpa: Option<&'a HorizontalPodAutoscaler>,
    /// The Scale of the workload a hibernation concerns ([`hibernation_target`]), read when
    /// [`reads_scale`]; `None` when not read or the workload does not exist.
    pub scale: Option<&'a Scale>,
    /// The HolidayCalendars its ranges name (`excludeCalendars`), as the cache holds them.
    pub calendars: &'a Calendars,
    /// `--dry-run`: decide and report, write nothing but status.
    pub dry_run: bool,
    /// The install's hibernation ledger ([`ledger`]); `None` keeps none (`plan`, tests).
    pub ledger: Option<&'a ebb_core::plan::Target>,
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
    /// A hibernating range: the workload scaled to 0 (a `/scale` write).
    Hibernate,
    /// A hibernation ended: the workload scaled back (a `/scale` write).
    Wake,
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
            Self::Hibernate => "hibernate",
            Self::Wake => "wake",
        }
    }
}

/// What to do to the HPA.
#[derive(Clone, Debug, PartialEq)]
pub enum HpaChange {
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
pub enum FinalizerChange {
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

/// An Event to record once the writes succeeded (the shape every controller's plan uses).
pub use ebb_core::Notice;

/// The outcome of [`decide`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The HPA write, if any.
    pub hpa: HpaChange,
    /// The finalizer change, if any.
    pub finalizer: FinalizerChange,
    /// What to do to the workload's replicas (hibernation).
    pub hibernation: Hibernation,
    /// The Event of the scale write, recorded as soon as it succeeded.
    pub scale_notice: Option<Notice>,
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
    /// Every rule the spec breaks, when it breaks one ([`ManagedState::Invalid`]).
    pub invalid: Option<SpecErrors>,
    /// What the schedule has in force at `now`, before a ramp or the lead changes it (the HPA
    /// gets the status's `lastKnownConfig`); `None` when the schedule was not evaluated (paused,
    /// invalid, a dry run).
    pub scheduled: Option<HpaSettings>,
    /// The lead's next step up ahead of a coming increase (`spec.leadTime`), if any.
    pub lead_step: Option<Timestamp>,
}

/// How long from `now` until `at`, rounded up to the millisecond (a timer never fires early
/// because of rounding) and capped at [`MAX_REQUEUE`]; [`MAX_REQUEUE`] without `at`.
pub fn requeue_after(now: Timestamp, at: Option<Timestamp>) -> Duration {
    let Some(at) = at else {
        return MAX_REQUEUE;
    };
    let wait = std::time::Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO);
    let millis = wait.as_nanos().div_ceil(1_000_000);
    let wait = Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX));
    wait.clamp(Duration::from_millis(1), MAX_REQUEUE)
}

/// Sets `lastUpdatedTime` when anything changed; `None` when nothing did.
fn finish_status(
    previous: &ServiceScalerStatus,
    mut next: ServiceScalerStatus,
    hpa_written: bool,
    now: Timestamp,
) -> Option<ServiceScalerStatus> {
    next.last_updated_time
        .clone_from(&previous.last_updated_time);
    if next == *previous && !hpa_written {
        return None;
    }
    next.last_updated_time = Some(to_k8s_time(now));
    Some(next)
}

/// The pause in force at `now`: the ServiceScaler's own, else the HPA's (the pause annotations
/// count on every object ebb manages). `None` when neither is paused.
pub fn pause_of(observed: &Observed<'_>, now: Timestamp) -> Option<ObjectPause> {
    let scaler = ("ServiceScaler", &observed.scaler.metadata);
    let hpa = observed
        .hpa
        .map(|hpa| ("HorizontalPodAutoscaler", &hpa.metadata));
    first_pause(std::iter::once(scaler).chain(hpa), now)
}

/// The shared pause report ([`pause_report`]): the ServiceScaler's own pause, else the HPA's,
/// as every ebb controller words it. `None` when neither is paused.
pub fn pause_report_of(observed: &Observed<'_>, now: Timestamp) -> Option<PauseReport> {
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

/// Decides everything for a ServiceScaler that is not being deleted ([`decide`] makes it the
/// plan).
///
/// One step per rule, in this order: a pause ends the decision there; then the kill switch and
/// the finalizer; an invalid spec ends it; then the overlaps and the schedule at `now`; a
/// kill-switched HPA ends it; then what the HPA gets now, the write it needs and the requeue;
/// last the dry run or the write.
pub fn decide_scaling(observed: &Observed<'_>, now: Timestamp) -> Decision {
    let mut draft = Draft::new(*observed, now);
    // Pause, on the ServiceScaler or on the HPA: the Paused condition and nothing else.
    if let Some(report) = pause_report_of(observed, now) {
        return draft.paused(report);
    }
    draft.condition(PAUSED, false, "NotPaused", "");
    draft.status.last_observed_generation = draft.generation;

    // The kill switch is read whatever the spec says.
    let unmanaged = draft.kill_switch();
    let recorded = recorded(observed.scaler);
    let schedule = match Schedule::from_spec(&observed.scaler.spec, observed.calendars) {
        Ok(schedule) => schedule,
        Err(errors) => return draft.invalid(&errors),
    };
    draft.condition(CONDITION_SPEC_VALID, true, "Valid", "");
    draft.overlaps(&schedule);
    // The coming transitions, swept once: the status previews the first few, the lead (when
    // there is one) searches further.
    let scan = match schedule.lead_time() > jiff::SignedDuration::ZERO {
        true => crate::lead::MAX_SCAN.max(PREVIEW_LEN),
        false => PREVIEW_LEN,
    };
    let coming = schedule.coming(now, scan);
    let (matched, next_transition) = draft.schedule_at_now(&schedule, &coming);
    let coming = coming.changes;
    if unmanaged {
        let finalizer = finalizer_change(observed, true, recorded.is_some());
        return draft.unmanaged(finalizer, next_transition);
    }

    let target = Target::at(
        (&schedule, &coming),
        matched,
        observed.hpa,
        draft.status.ramp.as_ref(),
        now,
    );
    let (hpa, note) = draft.hpa_change(&target);
    let workload = hibernation_target(observed.scaler, observed.hpa);
    let hibernation = hibernation(
        target.applied.hibernate,
        recorded,
        &workload,
        observed.scale,
        &target.applied,
        now,
    );
    let hibernating = hibernation.record_after(recorded).is_some();
    let finalizer = finalizer_change(observed, false, hibernating);
    let scale_note = scale_note(&hibernation, &describe_workload(observed.scaler, &workload));
    let next_step = target.ramp.and_then(|r| r.next_step_after(now));
    let wake = [next_transition, next_step, target.lead_step]
        .into_iter()
        .flatten()
        .min();
    let requeue = Some(requeue_after(now, wake));
    if observed.dry_run {
        let note = match (note, scale_note) {
            (Some(note), Some(scale)) => Some(format!("{note}; {scale}")),
            (note, scale) => note.or(scale),
        };
        return draft.dry_run(&hpa, note, &target.in_force, requeue);
    }
    let mut decision = draft.applied(hpa, note, finalizer, &target, requeue, &hibernation);
    decision.scale_notice = scale_note.map(|note| match hibernation {
        Hibernation::Sleep { .. } => Notice::normal("Hibernated", "ScaleWorkload", note),
        _ => Notice::normal("Woke", "ScaleWorkload", note),
    });
    decision.hibernation = hibernation;
    decision
}

/// What a scale write of `hibernation` does to `workload` (`Deployment shop/web scaled 3 -> 0`):
/// `None` when it writes nothing.
fn scale_note(hibernation: &Hibernation, workload: &str) -> Option<String> {
    match hibernation {
        Hibernation::Sleep { record, from } => Some(format!(
            "{workload} scaled {from} -> 0 to hibernate; {} replicas to return to",
            record.replicas
        )),
        Hibernation::Wake { replicas } => Some(format!(
            "{workload} scaled 0 -> {replicas}: hibernation over"
        )),
        _ => None,
    }
}

/// **Adoption**: [`FINALIZER`] is added while the deletion of the ServiceScaler will need to act
/// on the HPA ([`needs_finalizer`]) or wake a hibernating workload (`hibernating`: a
/// hibernation recorded once this pass is done, and a deletion that wakes it,
/// [`wakes_on_deletion`]), and removed once it no longer will (a kill-switched HPA needs
/// nothing); a dry run leaves it as it is.
fn finalizer_change(
    observed: &Observed<'_>,
    unmanaged: bool,
    hibernating: bool,
) -> FinalizerChange {
    let scaler = observed.scaler;
    let adopted = observed
        .hpa
        .is_some_and(|hpa| !unmanaged && needs_finalizer(scaler.spec.deletion_policy, hpa, scaler));
    let wakes = hibernating && wakes_on_deletion(scaler, observed.hpa);
    match (adopted || wakes, has_finalizer(scaler)) {
        _ if observed.dry_run => FinalizerChange::Keep,
        (true, false) => FinalizerChange::Add,
        (false, true) => FinalizerChange::Remove,
        _ => FinalizerChange::Keep,
    }
}

/// Whether deleting `scaler` wakes its hibernating workload: unless the deletion keeps things
/// as they are (`deletionPolicy: Orphan`, [`deletion_action`]).
pub fn wakes_on_deletion(scaler: &ServiceScaler, hpa: Option<&HorizontalPodAutoscaler>) -> bool {
    let action = match hpa {
        Some(hpa) => deletion_action(scaler.spec.deletion_policy, hpa_origin(hpa, scaler)),
        None => scaler
            .spec
            .deletion_policy
            .unwrap_or(DeletionPolicy::Delete),
    };
    action != DeletionPolicy::Orphan
}

/// One [`decide`] in the making: the status as it is rewritten and the Events so far.
struct Draft<'a> {
    observed: Observed<'a>,
    now: Timestamp,
    /// The ServiceScaler's `metadata.generation`: the conditions' `observedGeneration`.
    generation: Option<i64>,
    /// The status as read.
    previous: ServiceScalerStatus,
    /// The status to write.
    status: ServiceScalerStatus,
    /// Events to record after the status write.
    notices: Vec<Notice>,
    /// `namespace/name` of the HPA (the ServiceScaler's), for messages.
    hpa_name: String,
}

impl<'a> Draft<'a> {
    fn new(observed: Observed<'a>, now: Timestamp) -> Self {
        let scaler = observed.scaler;
        let previous = scaler.status.clone().unwrap_or_default();
        Self {
            observed,
            now,
            generation: scaler.metadata.generation,
            status: previous.clone(),
            previous,
            notices: Vec::new(),
            hpa_name: format!(
                "{}/{}",
                scaler.namespace().unwrap_or_default(),
                scaler.name_any()
            ),
        }
    }

    /// Sets one condition at this generation; whether it changed.
    fn condition(
        &mut self,
        type_: &str,
        status: bool,
        reason: &str,
        message: impl Into<String>,
    ) -> bool {
        set_condition(
            &mut self.status.conditions,
            ConditionUpdate::new(type_, status, reason, message)
                .observed_generation(self.generation),
            self.now,
        )
    }

    /// The decision, with the status only when something in it changed or the HPA is written
    /// ([`finish_status`]).
    fn finish(
        self,
        hpa: HpaChange,
        finalizer: FinalizerChange,
        requeue_after: Option<Duration>,
        state: ManagedState,
        hpa_notice: Option<Notice>,
    ) -> Decision {
        let written = !matches!(hpa, HpaChange::Leave);
        Decision {
            status: finish_status(&self.previous, self.status, written, self.now),
            hpa,
            finalizer,
            hibernation: Hibernation::Leave,
            scale_notice: None,
            requeue_after,
            state,
            hpa_notice,
            notices: self.notices,
            invalid: None,
            scheduled: None,
            lead_step: None,
        }
    }

    /// **Pause**: the `Paused` condition of the shared report (with its Event when the pause
    /// starts or changes) and nothing else; nothing is written to the HPA, the finalizer stays as
    /// it is, and the ServiceScaler is looked at again at `paused-until`.
    fn paused(mut self, report: PauseReport) -> Decision {
        set_condition(&mut self.status.conditions, report.condition, self.now);
        if let Some((kind, reason, note)) = report.event {
            self.notices.push(Notice {
                kind,
                reason,
                action: "Pause",
                note,
            });
        }
        let requeue = report
            .pause
            .resume_at()
            .map(|at| requeue_after(self.now, Some(at)));
        self.finish(
            HpaChange::Leave,
            FinalizerChange::Keep,
            requeue,
            ManagedState::Paused,
            None,
        )
    }

    /// `HPA shop/web has annotation service-scaler.kubernetes.io/managed: "false"; ...`.
    fn unmanaged_message(&self) -> String {
        format!(
            "HPA {} has annotation {MANAGED_ANNOTATION}: \"false\"; ebb does not write it",
            self.hpa_name
        )
    }

    /// **Kill switch**: whether the HPA carries it, into the `Unmanaged` condition (a Normal
    /// Event when it appears).
    fn kill_switch(&mut self) -> bool {
        let unmanaged = self.observed.hpa.is_some_and(kill_switch);
        if unmanaged {
            let message = self.unmanaged_message();
            if self.condition(CONDITION_UNMANAGED, true, "KillSwitch", &message) {
                self.notices
                    .push(Notice::normal("Unmanaged", "Skip", &message));
            }
        } else {
            self.condition(CONDITION_UNMANAGED, false, "Managed", "");
        }
        unmanaged
    }

    /// **Invalid spec**: `SpecValid` false naming every rule broken (a Warning Event when that
    /// changes) and `Ready` false; the HPA and the finalizer are left as they are, and there is
    /// no requeue (only an edit of the spec helps).
    fn invalid(mut self, errors: &SpecErrors) -> Decision {
        let message = errors.to_string();
        if self.condition(CONDITION_SPEC_VALID, false, "InvalidSpec", &message) {
            self.notices
                .push(Notice::warning("InvalidSpec", "Validate", &message));
        }
        self.condition(
            CONDITION_READY,
            false,
            "InvalidSpec",
            format!("the spec is invalid; the HPA is left as it was: {message}"),
        );
        let decision = self.finish(
            HpaChange::Leave,
            // Adopted or not, an invalid spec changes nothing about the HPA's fate.
            FinalizerChange::Keep,
            None,
            ManagedState::Invalid,
            None,
        );
        Decision {
            invalid: Some(errors.clone()),
            ..decision
        }
    }

    /// **Ranges** that overlap: the `RangesOverlap` condition naming them (a Warning Event when
    /// it turns true). Overlaps depend on the spec alone, and finding them may sweep a year per
    /// pair of ranges: computed once per generation, within a budget of steps (reason
    /// `MayOverlap` when only pairs it could not settle remain).
    fn overlaps(&mut self, schedule: &Schedule) {
        let overlaps_known = self.generation.is_some()
            && ebb_core::find_condition(&self.status.conditions, CONDITION_RANGES_OVERLAP)
                .is_some_and(|c| c.observed_generation == self.generation);
        if overlaps_known {
            return;
        }
        let overlaps = schedule.overlaps();
        let message = schedule.overlap_message(&overlaps);
        let (overlap, reason) = match &message {
            None => (false, "NoOverlap"),
            Some(_) if overlaps.pairs.is_empty() => (true, "MayOverlap"),
            Some(_) => (true, "Overlap"),
        };
        let message = message.unwrap_or_default();
        let changed = self.condition(CONDITION_RANGES_OVERLAP, overlap, reason, &message);
        if changed && overlap {
            self.notices
                .push(Notice::warning("RangesOverlap", "Validate", message));
        }
    }

    /// **Transitions**: the schedule at `now` into the status (the range in force and the next
    /// [`PREVIEW_LEN`] of the `coming` transitions); returns the range in force and the next
    /// transition.
    fn schedule_at_now(
        &mut self,
        schedule: &Schedule,
        coming: &Coming,
    ) -> (Option<usize>, Option<Timestamp>) {
        let matched = schedule.matched_at(self.now);
        let preview = &coming.changes[..coming.changes.len().min(PREVIEW_LEN)];
        // Where the scan stopped short, the pass looks again.
        let next_transition = coming.next_look();
        self.status.time_range_match = matched.is_some();
        self.status.matched_range = matched.and_then(|i| i32::try_from(i).ok());
        self.status.next_transitions = preview
            .iter()
            .map(|t| ScheduledTransition {
                at: to_k8s_time(t.at),
                matched_range: t.matched_range.and_then(|i| i32::try_from(i).ok()),
                settings: t.settings.clone(),
            })
            .collect();
        (matched, next_transition)
    }

    /// **Kill switch**, the HPA's side: `Ready` false and no ramp kept; nothing is written to the
    /// HPA, but the finalizer follows its fate and the schedule still wakes the ServiceScaler.
    fn unmanaged(
        mut self,
        finalizer: FinalizerChange,
        next_transition: Option<Timestamp>,
    ) -> Decision {
        let message = self.unmanaged_message();
        self.condition(CONDITION_READY, false, "Unmanaged", &message);
        self.status.ramp = None;
        let requeue = Some(requeue_after(self.now, next_transition));
        self.finish(
            HpaChange::Leave,
            finalizer,
            requeue,
            ManagedState::Unmanaged,
            None,
        )
    }

    /// **Writes**: create the HPA when it is missing (with the Event's note), else apply the
    /// owned fields when they differ, for the reason the metrics count: a ramp step, drift
    /// (someone changed what was last applied), a lead step or a transition. Nothing when the
    /// HPA is in sync.
    fn hpa_change(&self, target: &Target) -> (HpaChange, Option<String>) {
        let scaler = self.observed.scaler;
        let hpa_name = &self.hpa_name;
        let in_force = &target.in_force;
        let fields = &target.fields;
        match self.observed.hpa {
            None => {
                let hpa = new_hpa(scaler, fields);
                let target_ref = scale_target(&scaler.spec, &scaler.name_any());
                let note = format!(
                    "created HPA {hpa_name} for {} {}: {} ({in_force})",
                    target_ref.kind,
                    target_ref.name,
                    fields.describe()
                );
                (HpaChange::Create(Box::new(hpa)), Some(note))
            }
            Some(current) => {
                let spec = current.spec.clone().unwrap_or_default();
                if fields.matches(&spec) {
                    return (HpaChange::Leave, None);
                }
                let reason = if target.ramp.is_some() {
                    WriteReason::Ramp
                } else if self.previous.last_known_config.as_ref() == Some(&target.applied) {
                    WriteReason::Drift
                } else if target.leading {
                    WriteReason::Lead
                } else {
                    WriteReason::Transition
                };
                let fields = fields.clone().keeping_foreign_metrics(&spec);
                let note = format!("HPA {hpa_name}: {} ({in_force})", fields.diff(&spec));
                (HpaChange::Apply { fields, reason }, Some(note))
            }
        }
    }

    /// `--dry-run`: nothing is written but the status, whose `Ready` says what would have been
    /// written (false, with a Normal Event when that changes) or that the HPA is in sync (true).
    fn dry_run(
        mut self,
        hpa: &HpaChange,
        note: Option<String>,
        in_force: &str,
        requeue: Option<Duration>,
    ) -> Decision {
        let (ready, message) = match (&note, hpa) {
            (Some(note), HpaChange::Create(_)) => (false, format!("dry run: would have {note}")),
            (Some(note), _) => (false, format!("dry run: would update {note}")),
            (None, _) => (true, format!("dry run: the HPA is in sync ({in_force})")),
        };
        if self.condition(CONDITION_READY, ready, "DryRun", &message) && note.is_some() {
            let action = match hpa {
                HpaChange::Create(_) => "CreateHPA",
                _ => "UpdateHPA",
            };
            self.notices.push(Notice::normal("DryRun", action, message));
        }
        self.finish(
            HpaChange::Leave,
            FinalizerChange::Keep,
            requeue,
            ManagedState::DryRun,
            None,
        )
    }

    /// The schedule applied: the settings become `status.lastKnownConfig` and the ramp
    /// `status.ramp`; `Ready` true (`Ramping` while a ramp runs) names them; the HPA write's
    /// Event is recorded as soon as the write succeeded.
    fn applied(
        mut self,
        hpa: HpaChange,
        note: Option<String>,
        finalizer: FinalizerChange,
        target: &Target,
        requeue: Option<Duration>,
        hibernation: &Hibernation,
    ) -> Decision {
        self.status.last_known_config = Some(target.applied.clone());
        self.status.ramp = target.ramp.map(|r| r.to_status());
        self.status.hibernation = hibernation.record_after(self.previous.hibernation.as_ref());
        let mut message = format!(
            "HPA {}: {} ({})",
            self.hpa_name,
            describe_settings(&target.applied),
            target.in_force
        );
        if let Some(record) = &self.status.hibernation {
            let workload = describe_workload(self.observed.scaler, &record.scale_target_ref);
            message.push_str(&format!(
                "; {workload} hibernating, {} replicas to return to",
                record.replicas
            ));
        }
        if let Hibernation::Unsupported(why) = hibernation {
            if self.condition(CONDITION_READY, false, "CannotHibernate", why) {
                self.notices
                    .push(Notice::warning("CannotHibernate", "ScaleWorkload", why));
            }
        } else {
            let reason = if target.ramp.is_some() {
                "Ramping"
            } else {
                "Applied"
            };
            self.condition(CONDITION_READY, true, reason, message);
        }
        let hpa_notice = note.map(|note| {
            let (reason, action) = match hpa {
                HpaChange::Create(_) => ("Created", "CreateHPA"),
                _ => ("Updated", "UpdateHPA"),
            };
            Notice::normal(reason, action, note)
        });
        let decision = self.finish(hpa, finalizer, requeue, ManagedState::Active, hpa_notice);
        Decision {
            scheduled: Some(target.scheduled.clone()),
            lead_step: target.lead_step,
            ..decision
        }
    }
}

/// What the HPA gets at `now`: the settings in force, stepped up ahead of a coming increase by
/// the lead time ([`crate::lead`]) and held above a decrease by the ramp.
struct Target {
    /// What the schedule has in force, before the ramp and the lead.
    scheduled: HpaSettings,
    /// The ramp in force, if any.
    ramp: Option<Ramp>,
    /// Whether the lead steps the settings up ahead of a coming increase.
    leading: bool,
    /// The lead's next step, if any.
    lead_step: Option<Timestamp>,
    /// The settings the HPA gets.
    applied: HpaSettings,
    /// The owned fields for them.
    fields: OwnedFields,
    /// `timeRangeSpec[1] in force; minReplicas ramping 5 -> 2 from ...`, for messages.
    in_force: String,
}

impl Target {
    /// **Ramp** and **lead time**: the ramp in force (from `previous_ramp`, `status.ramp`, and
    /// the HPA's `minReplicas`) and the lead are both lower bounds on `minReplicas`: the HPA gets
    /// the larger, capped at `maxReplicas`.
    fn at(
        (schedule, coming): (&Schedule, &[Transition]),
        matched: Option<usize>,
        hpa: Option<&HorizontalPodAutoscaler>,
        previous_ramp: Option<&RampStatus>,
        now: Timestamp,
    ) -> Self {
        let target = schedule.settings(matched);
        let current_min = hpa.map(|hpa| {
            hpa.spec
                .as_ref()
                .and_then(|s| s.min_replicas)
                .unwrap_or(DEFAULT_MIN_REPLICAS)
        });
        let ramp = schedule.ramp().and_then(|duration| {
            let since = now.checked_sub(duration).ok()?;
            let previous_ramp = previous_ramp.map(|r| Ramp::from_status(r, duration));
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
        let lead = crate::lead::lead_with(schedule, coming, now);
        let leading = lead.settings != *target;
        let mut applied = lead.settings;
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
                ebb_core::rfc3339(r.start)
            )),
            match (target.hibernate, applied.hibernate, leading) {
                (_, true, _) => "; hibernating (replicaSpec.hibernate)",
                (true, false, _) => "; awake ahead of the hibernation's end (spec.leadTime)",
                (false, false, true) => "; stepping up ahead of a coming increase (spec.leadTime)",
                (false, false, false) => "",
            }
        );
        Self {
            scheduled: target.clone(),
            ramp,
            leading,
            lead_step: lead.next_step,
            applied,
            fields,
            in_force,
        }
    }
}

/// What to do when a ServiceScaler is being deleted, in this order.
#[derive(Clone, Debug, PartialEq)]
pub struct DeletionDecision {
    /// Drop the HPA's owner references to the ServiceScaler ([`disown_patch`]), so that the
    /// garbage collector keeps it.
    pub disown: bool,
    /// Owned fields to give the HPA back (the defaults); `None`: no HPA write.
    pub restore: Option<OwnedFields>,
    /// Delete the HPA.
    pub delete: bool,
    /// Remove [`FINALIZER`] and [`UDAAN_FINALIZER`] (after the HPA writes).
    pub remove_finalizer: bool,
    /// Wake the hibernating workload to this many replicas (first of all).
    pub wake: Option<i32>,
    /// The Event of the wake, recorded as soon as it succeeded.
    pub wake_notice: Option<Notice>,
    /// Events to record.
    pub notices: Vec<Notice>,
}

impl DeletionDecision {
    /// A plan that only removes `scaler`'s finalizers (ebb's and udaan's), if it holds any.
    fn finalizers_of(scaler: &ServiceScaler) -> Self {
        Self {
            disown: false,
            restore: None,
            delete: false,
            remove_finalizer: has_finalizer(scaler) || has_udaan_finalizer(scaler),
            wake: None,
            wake_notice: None,
            notices: Vec::new(),
        }
    }
}

/// Decides the deletion of a ServiceScaler holding [`FINALIZER`] or [`UDAAN_FINALIZER`]: the HPA
/// is deleted, restored to the defaults or kept as it is per [`deletion_action`] (unless paused,
/// dry run, or kill-switched, which leave it alone), then the finalizers go. An HPA ebb created
/// that is to be deleted is left to the garbage collector; one to be kept is disowned first.
pub fn decide_deletion(observed: &Observed<'_>, now: Timestamp) -> DeletionDecision {
    let scaler = observed.scaler;
    let mut plan = DeletionDecision::finalizers_of(scaler);
    if !plan.remove_finalizer {
        return plan;
    }
    wake_on_deletion(&mut plan, observed, now, Ending::Deletion);
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
    match action {
        DeletionPolicy::Delete => {
            let note = format!(
                "HPA {name} deleted with its ServiceScaler (deletionPolicy Delete; {})",
                match origin {
                    HpaOrigin::Udaan => "udaan created it",
                    _ => "adopted",
                }
            );
            plan.delete = announce(&mut plan, observed.dry_run, "Deleted", verb, note);
        }
        DeletionPolicy::Orphan => {
            if disown {
                let note = format!("HPA {name} kept as it is (deletionPolicy Orphan)");
                plan.disown = announce(&mut plan, observed.dry_run, "Orphaned", verb, note);
            }
        }
        DeletionPolicy::Restore => restore(&mut plan, observed, hpa, &name, disown),
    }
    plan
}

/// Gives back what `observed.scaler` put in force before its controller is uninstalled
/// (`cleanup`; the ServiceScaler stays): a workload its hibernation left at 0 wakes to the
/// replicas it ran before, and the HPA gets the defaults (`spec.hpa`) back, each unless a pause
/// or the kill switch holds it (as at a deletion), whatever `deletionPolicy` says (that is for
/// the ServiceScaler's own deletion); the HPA stays owned as it was. Then ebb's and udaan's
/// finalizers go. With `keep_settings` (`cleanup --keep-settings`) only the finalizers go.
pub fn decide_release(
    observed: &Observed<'_>,
    now: Timestamp,
    keep_settings: bool,
) -> DeletionDecision {
    let scaler = observed.scaler;
    let mut plan = DeletionDecision::finalizers_of(scaler);
    if keep_settings {
        return plan;
    }
    wake_on_deletion(&mut plan, observed, now, Ending::Uninstall);
    let Some(hpa) = observed.hpa else {
        return plan;
    };
    let name = format!(
        "{}/{}",
        scaler.namespace().unwrap_or_default(),
        scaler.name_any()
    );
    let mut skip = |why: String| {
        plan.notices
            .push(Notice::normal("NotRestored", "RestoreHPA", why));
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
    restore(&mut plan, observed, hpa, &name, false);
    plan
}

/// Why a ServiceScaler gives back what it set: it is deleted, or its controller is uninstalled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Its deletion: `deletionPolicy` decides.
    Deletion,
    /// `cleanup` before an uninstall: always given back.
    Uninstall,
}

/// **Hibernation** at the end (a deletion, an uninstall): a workload still at 0 from a recorded
/// hibernation gets the replicas it ran before (at least the defaults' `minReplicas`), unless
/// the deletion keeps things as they are ([`wakes_on_deletion`]), a pause or the kill switch
/// holds, or it is a dry run (an Event says what it would have done).
fn wake_on_deletion(
    plan: &mut DeletionDecision,
    observed: &Observed<'_>,
    now: Timestamp,
    ending: Ending,
) {
    let scaler = observed.scaler;
    let Some(record) = recorded(scaler) else {
        return;
    };
    let workload = describe_workload(scaler, &record.scale_target_ref);
    let mut defaults_errors = Vec::new();
    let settings =
        defaults_settings(&scaler.spec.hpa, &mut defaults_errors).unwrap_or_else(|| HpaSettings {
            min_replicas: DEFAULT_MIN_REPLICAS,
            max_replicas: record.replicas.max(DEFAULT_MIN_REPLICAS),
            ..HpaSettings::default()
        });
    let Hibernation::Wake { replicas } = hibernation(
        false,
        Some(record),
        &record.scale_target_ref,
        observed.scale,
        &settings,
        now,
    ) else {
        return;
    };
    let mut skip = |why: String| {
        plan.notices
            .push(Notice::normal("NotWoken", "ScaleWorkload", why));
    };
    if ending == Ending::Deletion && !wakes_on_deletion(scaler, observed.hpa) {
        skip(format!(
            "{workload} left at 0 replicas (deletionPolicy Orphan); it ran {} before it hibernated",
            record.replicas
        ));
        return;
    }
    if let Some(pause) = pause_of(observed, now) {
        skip(format!("{workload} left at 0 replicas: {pause}"));
        return;
    }
    if observed.hpa.is_some_and(kill_switch) {
        skip(format!(
            "{workload} left at 0 replicas: the HPA has annotation {MANAGED_ANNOTATION}: \"false\""
        ));
        return;
    }
    let note = match ending {
        Ending::Deletion => {
            format!("{workload} scaled 0 -> {replicas}: its ServiceScaler is deleted")
        }
        Ending::Uninstall => {
            format!("{workload} scaled 0 -> {replicas}: service-scaler is uninstalled")
        }
    };
    if observed.dry_run {
        plan.notices.push(Notice::normal(
            "DryRun",
            "ScaleWorkload",
            format!("dry run: would have {note}"),
        ));
        return;
    }
    plan.wake = Some(replicas);
    plan.wake_notice = Some(Notice::normal("Woke", "ScaleWorkload", note));
}

/// Records the Event of a deletion step: under `--dry-run` what it would have done (and `false`:
/// do nothing), else what it does (`true`: do it).
fn announce(
    plan: &mut DeletionDecision,
    dry_run: bool,
    reason: &'static str,
    verb: &'static str,
    note: String,
) -> bool {
    if dry_run {
        plan.notices.push(Notice::normal(
            "DryRun",
            verb,
            format!("dry run: would have {note}"),
        ));
        return false;
    }
    plan.notices.push(Notice::normal(reason, verb, note));
    true
}

/// `Restore` on deletion: the HPA gets the defaults back (the metrics ebb does not own kept),
/// disowned first when it references the ServiceScaler (`disown`). An invalid `spec.hpa`
/// restores nothing (a Warning Event says so) and an HPA already at the defaults needs no write:
/// either is only disowned, so that the garbage collector keeps it.
fn restore(
    plan: &mut DeletionDecision,
    observed: &Observed<'_>,
    hpa: &HorizontalPodAutoscaler,
    name: &str,
    disown: bool,
) {
    let mut errors = Vec::new();
    let Some(defaults) = defaults_settings(&observed.scaler.spec.hpa, &mut errors) else {
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
        return;
    };
    let spec = hpa.spec.clone().unwrap_or_default();
    let fields = OwnedFields::from_settings(&defaults).keeping_foreign_metrics(&spec);
    if fields.matches(&spec) {
        plan.disown = disown && !observed.dry_run;
        return;
    }
    let note = format!(
        "HPA {name} restored to the defaults: {}",
        fields.diff(&spec)
    );
    if announce(plan, observed.dry_run, "Restored", "RestoreHPA", note) {
        plan.disown = disown;
        plan.restore = Some(fields);
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
