//! What a pass reports: the schedule's status (decision, next transitions, conditions), the
//! Events that go with it, and when to look again. Pure: the reconciler writes the status this
//! returns (when it differs from the stored one) and records the Events once it is written.

use std::time::Duration;

use ebb_core::conditions::{ConditionUpdate, set_condition};
use ebb_core::pause::PauseReport;
use ebb_core::{Notice, to_k8s_time};
use ebb_crds::scaledown::{ScaleDownScheduleStatus, ScaleDownTransition};
use jiff::Timestamp;

use super::{
    CLUSTER_AUTOSCALER_NAME, Change, ClusterAutoscalerScaleDown, Decision, InvalidSpec, Reason,
    TargetDecision, TargetKind,
};

/// Look again at least this often, and never schedule further ahead (the work queue has a limit).
pub const RESYNC: Duration = Duration::from_secs(24 * 3600);

/// How soon a schedule whose target API is missing looks again.
pub const API_MISSING_RETRY: Duration = Duration::from_secs(300);

/// The delay from `now` until `at`, at most [`RESYNC`].
pub fn requeue_after(now: Timestamp, at: Timestamp) -> Duration {
    std::time::Duration::try_from(at.duration_since(now))
        .unwrap_or(Duration::ZERO)
        .min(RESYNC)
}

/// What [`report`] reports on.
#[derive(Clone, Copy, Debug)]
pub struct ReportInput<'a> {
    /// The stored status, if any.
    pub status: Option<&'a ScaleDownScheduleStatus>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The decision.
    pub decision: &'a Decision,
    /// What became of the target.
    pub outcome: &'a TargetOutcome,
    /// The schedule's own pause, reported the shared way.
    pub pause: Option<&'a PauseReport>,
    /// `--dry-run`.
    pub dry_run: bool,
    /// The one instant of this pass.
    pub now: Timestamp,
}

/// The status, Events, gauges and wake-up of one pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The status to write, when it differs from the stored one.
    pub status: Option<ScaleDownScheduleStatus>,
    /// `scaleDownEnabled` differs from the stored status (a first decision is no flip).
    pub flipped: bool,
    /// Events to record once the status is written.
    pub notices: Vec<Notice>,
    /// The spec or the target is invalid.
    pub invalid: bool,
    /// Another schedule manages some selected objects.
    pub conflict: bool,
    /// The cluster does not serve the target's API.
    pub api_missing: bool,
    /// When to look again; `None`: when something changes.
    pub requeue: Option<Duration>,
}

/// The report of one pass.
pub fn report(input: &ReportInput<'_>) -> Report {
    let decision = input.decision;
    let old = input.status;
    let (status, changed) = next_status(input);
    let previous_enabled = old.map(|s| s.scale_down_enabled);
    let invalid = matches!(decision.reason, Reason::InvalidSchedule(_))
        || matches!(input.outcome, TargetOutcome::Invalid(_));
    let conflict =
        matches!(input.outcome, TargetOutcome::Planned { plan, .. } if !plan.conflicts.is_empty());
    // The schedule's own pause and its objects' pauses end by themselves: look again then.
    let objects_resume = match input.outcome {
        TargetOutcome::Planned { plan, .. } => plan.resume_at(),
        _ => None,
    };
    let schedule_resume = input.pause.and_then(|p| p.pause.resume_at());
    let wake = [decision.requeue_at, schedule_resume, objects_resume]
        .into_iter()
        .flatten()
        .min();
    let api_missing = matches!(input.outcome, TargetOutcome::ApiMissing(_));
    let requeue = match wake {
        // The API's own watch wakes the schedule once it is installed; looking again every few
        // minutes does not depend on it.
        _ if api_missing => Some(
            wake.map_or(API_MISSING_RETRY, |at| requeue_after(input.now, at))
                .min(API_MISSING_RETRY),
        ),
        Some(at) => Some(requeue_after(input.now, at)),
        // Nothing will change by the clock: an invalid spec waits for an edit, a valid one is
        // looked at again once a day in case a watch event was missed.
        None if invalid => None,
        None => Some(RESYNC),
    };
    Report {
        notices: notices(input, previous_enabled, &changed),
        status: (old != Some(&status)).then_some(status),
        flipped: previous_enabled.is_some_and(|p| p != decision.scale_down_enabled),
        invalid,
        conflict,
        api_missing,
        requeue,
    }
}

/// The status after this pass, and the condition types whose content changed, with their new
/// value.
fn next_status(input: &ReportInput<'_>) -> (ScaleDownScheduleStatus, Vec<(String, bool)>) {
    let decision = input.decision;
    let mut status = input.status.cloned().unwrap_or_default();
    status.scale_down_enabled = decision.scale_down_enabled;
    status.active_window = decision.active_window.and_then(|i| i32::try_from(i).ok());
    status.next_transition_time = decision.next_transition.map(to_k8s_time);
    status.next_transitions = decision
        .next_transitions
        .iter()
        .map(|(at, enabled)| ScaleDownTransition {
            at: to_k8s_time(*at),
            scale_down_enabled: *enabled,
        })
        .collect();
    status.observed_generation = input.generation;
    let mut changed = Vec::new();
    for mut update in conditions(decision, input.outcome, input.generation) {
        // The schedule's own pause: the shared `Paused` condition (reason `Paused` or
        // `InvalidPausedUntil`, the message naming the schedule and the annotation).
        if let Some(report) = input.pause
            && update.type_ == CONDITION_PAUSED
        {
            update = report.condition.clone();
        }
        let (type_, value) = (update.type_.clone(), update.status);
        if set_condition(&mut status.conditions, update, input.now) {
            changed.push((type_, value));
        }
    }
    (status, changed)
}

/// Events: every flip of `scaleDownEnabled` (the first decision too), target writes without a
/// flip, the schedule's or its objects' pause starting, and a spec that becomes invalid, a
/// conflict that appears or a ClusterAutoscaler that stops allowing scale-down.
fn notices(
    input: &ReportInput<'_>,
    previous_enabled: Option<bool>,
    changed: &[(String, bool)],
) -> Vec<Notice> {
    let decision = input.decision;
    let mut out = Vec::new();
    let changes: Vec<String> = match input.outcome {
        TargetOutcome::Planned { plan, .. } => plan.changes.iter().map(Change::describe).collect(),
        _ => Vec::new(),
    };
    let enabled = decision.scale_down_enabled;
    if previous_enabled != Some(enabled) {
        let (reason, action) = if enabled {
            ("ScaleDownEnabled", "EnableScaleDown")
        } else {
            ("ScaleDownDisabled", "DisableScaleDown")
        };
        let why = match &decision.reason {
            Reason::WindowOpen(i) => format!("window {i} open"),
            Reason::ClusterUpgrade => decision.maintenance.describe(),
            Reason::OutsideWindows => "no window open".to_owned(),
            Reason::InvalidSchedule(invalid) => format!("fail-safe, {invalid}"),
        };
        let what = outcome_summary(input.outcome, &changes);
        out.push(Notice::normal(reason, action, format!("{why}: {what}")));
    } else if !changes.is_empty() && !input.dry_run {
        let what = outcome_summary(input.outcome, &changes);
        out.push(Notice::normal("TargetUpdated", "Apply", what));
    }
    let became = |type_: &str, value: bool| changed.iter().any(|(t, v)| t == type_ && *v == value);
    let updates = conditions(decision, input.outcome, None);
    // The schedule's own pause starting or changing.
    if let Some((kind, reason, note)) = input.pause.and_then(|p| p.event.as_ref()) {
        out.push(Notice {
            kind: *kind,
            reason,
            action: "Pause",
            note: note.clone(),
        });
    }
    // A managed object's own pause starting (or the set of paused objects changing).
    if became(CONDITION_PAUSED, true)
        && let Some(c) = updates
            .iter()
            .find(|c| c.type_ == CONDITION_PAUSED && c.reason == REASON_OBJECTS_PAUSED)
    {
        out.push(Notice::normal(
            REASON_OBJECTS_PAUSED,
            "Pause",
            c.message.clone(),
        ));
    }
    let warnings = [
        (CONDITION_SCHEDULE_VALID, false, "Validate"),
        (CONDITION_TARGET_CONFLICT, true, "Yield"),
        (CONDITION_CLUSTER_AUTOSCALER_READY, false, "CheckDependency"),
    ];
    // The target's API not served (a CRD not installed), newly.
    if let TargetOutcome::ApiMissing(_) = input.outcome
        && became(CONDITION_TARGET_NOT_FOUND, true)
        && let Some(c) = updates
            .iter()
            .find(|c| c.type_ == CONDITION_TARGET_NOT_FOUND)
    {
        out.push(Notice::warning(
            "TargetApiMissing",
            "CheckDependency",
            c.message.clone(),
        ));
    }
    for (type_, value, action) in warnings {
        if became(type_, value)
            && let Some(c) = updates.iter().find(|c| c.type_ == type_)
        {
            out.push(Notice {
                kind: ebb_core::EventKind::Warning,
                reason: warning_reason(&c.reason),
                action,
                note: c.message.clone(),
            });
        }
    }
    out
}

/// The reasons of the conditions that raise a Warning when they turn bad, as Event reasons.
const WARNING_REASONS: [&str; 5] = [
    "InvalidTarget",
    "InvalidSchedule",
    "TargetConflict",
    "ClusterAutoscalerScaleDownDisabled",
    "ClusterAutoscalerNotFound",
];

/// The Event reason of a Warning: the condition's own reason (every one [`conditions`] can give
/// is in [`WARNING_REASONS`]).
fn warning_reason(reason: &str) -> &'static str {
    WARNING_REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or("ConditionChanged")
}

/// What became of the target, for an Event.
fn outcome_summary(outcome: &TargetOutcome, changes: &[String]) -> String {
    match outcome {
        TargetOutcome::Planned { dry_run: true, .. } if !changes.is_empty() => {
            format!("dry-run, would {}", summarize(changes, 5))
        }
        TargetOutcome::Planned { .. } if !changes.is_empty() => summarize(changes, 5),
        TargetOutcome::Planned { .. } => "the target was already so".to_owned(),
        TargetOutcome::Paused(why) => format!("not applied: {why}"),
        TargetOutcome::Disabled(kind) => {
            format!("not applied: target kind switched off ({})", kind.flag())
        }
        TargetOutcome::Invalid(invalid) => format!("not applied: {invalid}"),
        TargetOutcome::ApiMissing(kind) => {
            format!("not applied: the cluster does not serve {}", kind.api())
        }
    }
}

/// Condition type: the target is as the decision wants.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the spec can be evaluated.
pub const CONDITION_SCHEDULE_VALID: &str = "ScheduleValid";
/// Condition type: another schedule manages some of the selected objects.
pub const CONDITION_TARGET_CONFLICT: &str = "TargetConflict";
/// Condition type: the schedule is paused by annotation (reason `Paused`), or some of the objects
/// it manages are, and are left as they are (reason [`REASON_OBJECTS_PAUSED`]).
pub const CONDITION_PAUSED: &str = "Paused";
/// `Paused` reason (and Event reason): managed objects carry their own pause annotation.
pub const REASON_OBJECTS_PAUSED: &str = "TargetObjectsPaused";
/// Condition type: the target selects nothing.
pub const CONDITION_TARGET_NOT_FOUND: &str = "TargetNotFound";
/// Condition type: the ClusterAutoscaler a `machineAutoscalers` target depends on allows
/// scale-down (`spec.scaleDown.enabled: true`). Reported only for such targets.
pub const CONDITION_CLUSTER_AUTOSCALER_READY: &str = "ClusterAutoscalerReady";

/// What happened to the target in this reconcile.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetOutcome {
    /// `spec.target` cannot be resolved.
    Invalid(InvalidSpec),
    /// The target's kind is switched off by a controller flag.
    Disabled(TargetKind),
    /// Paused: the target was not looked at.
    Paused(String),
    /// The cluster does not serve the target kind's API (its CRD is not installed): nothing
    /// could be read or written.
    ApiMissing(TargetKind),
    /// Planned, and applied unless `dry_run` (then the changes are only intended).
    Planned {
        /// The target kind.
        kind: TargetKind,
        /// The plan.
        plan: TargetDecision,
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

pub(crate) fn decision_message(decision: &Decision) -> String {
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
        (_, TargetOutcome::Invalid(invalid)) => cond(
            CONDITION_SCHEDULE_VALID,
            false,
            "InvalidTarget",
            invalid.to_string(),
        ),
        (Reason::InvalidSchedule(invalid), _) => cond(
            CONDITION_SCHEDULE_VALID,
            false,
            "InvalidSchedule",
            invalid.to_string(),
        ),
        _ => cond(
            CONDITION_SCHEDULE_VALID,
            true,
            "Valid",
            "the windows and the target are valid".into(),
        ),
    };
    out.push(schedule_valid);

    out.push(match outcome {
        TargetOutcome::Paused(why) => cond(CONDITION_PAUSED, true, "Paused", why.clone()),
        TargetOutcome::Planned { plan, .. } if !plan.paused.is_empty() => cond(
            CONDITION_PAUSED,
            true,
            REASON_OBJECTS_PAUSED,
            format!(
                "the schedule is not paused; paused by their own annotation, left as they are: {}",
                paused_list(plan)
            ),
        ),
        _ => cond(CONDITION_PAUSED, false, "NotPaused", "not paused".into()),
    });

    let ready = match outcome {
        TargetOutcome::Invalid(invalid) => cond(
            CONDITION_READY,
            false,
            "InvalidTarget",
            format!("{summary}; nothing written: {invalid}"),
        ),
        TargetOutcome::Disabled(kind) => cond(
            CONDITION_READY,
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
            CONDITION_READY,
            false,
            "Paused",
            format!("{summary}; nothing written: {why}"),
        ),
        TargetOutcome::ApiMissing(kind) => {
            out.push(cond(
                CONDITION_TARGET_NOT_FOUND,
                true,
                "TargetApiMissing",
                format!(
                    "spec.target.{}: this cluster does not serve {} (is its CRD installed?)",
                    kind.field(),
                    kind.api()
                ),
            ));
            cond(
                CONDITION_READY,
                false,
                "TargetApiMissing",
                format!(
                    "{summary}; nothing written: this cluster does not serve {}; install its CRD, \
                     or switch the target kind off ({})",
                    kind.api(),
                    kind.flag()
                ),
            )
        }
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
            planned_ready(decision, *kind, plan, *dry_run, &summary, &cond)
        }
    };
    out.push(ready);
    out
}

/// `Ready` for a target that was looked at: found, managed, paused, planned, applied.
fn planned_ready(
    decision: &Decision,
    kind: TargetKind,
    plan: &TargetDecision,
    dry_run: bool,
    summary: &str,
    cond: &dyn Fn(&str, bool, &str, String) -> ConditionUpdate,
) -> ConditionUpdate {
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
            CONDITION_READY,
            false,
            "TargetNotFound",
            format!("{summary}; the target selects no {}", kind.object_kind()),
        )
    } else if plan.managed == 0 {
        cond(
            CONDITION_READY,
            false,
            "TargetConflict",
            format!("{summary}; every selected object is managed by another schedule"),
        )
    } else if plan.paused.len() == plan.managed {
        cond(
            CONDITION_READY,
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
            CONDITION_READY,
            false,
            "TargetInvalid",
            format!("{summary}; {}{note}", summarize(&plan.problems, 3)),
        )
    } else if dry_run && !changes.is_empty() {
        cond(
            CONDITION_READY,
            false,
            "DryRun",
            format!("{summary}; dry-run, would {}{note}", summarize(&changes, 3)),
        )
    } else if let Reason::InvalidSchedule(_) = decision.reason {
        cond(
            CONDITION_READY,
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
            CONDITION_READY,
            true,
            reason,
            format!("{summary}; applied to {objects}{note}"),
        )
    }
}

/// The first few paused objects and why, e.g. `Node w1 (paused by annotation ...)`.
fn paused_list(plan: &TargetDecision) -> String {
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
            CONDITION_CLUSTER_AUTOSCALER_READY,
            true,
            "ClusterAutoscalerScaleDownEnabled",
            format!("{depends}, and it has"),
        ),
        ClusterAutoscalerScaleDown::Off(enabled) => cond(
            CONDITION_CLUSTER_AUTOSCALER_READY,
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
            CONDITION_CLUSTER_AUTOSCALER_READY,
            false,
            "ClusterAutoscalerNotFound",
            format!("{depends}; there is none, so no MachineAutoscaler takes effect"),
        ),
    }
}

fn target_conditions(
    kind: TargetKind,
    plan: &TargetDecision,
    cond: &dyn Fn(&str, bool, &str, String) -> ConditionUpdate,
) -> (ConditionUpdate, ConditionUpdate) {
    let conflict = if plan.conflicts.is_empty() {
        cond(
            CONDITION_TARGET_CONFLICT,
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
            CONDITION_TARGET_CONFLICT,
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
            CONDITION_TARGET_NOT_FOUND,
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
            CONDITION_TARGET_NOT_FOUND,
            false,
            "TargetFound",
            format!("{} selected", plan.selected),
        )
    };
    (conflict, not_found)
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
