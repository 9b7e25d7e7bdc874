//! Which workload a scaler scales, and the pause rule of the standalone controller: pure, beside
//! the state machine they feed.

use ebb_core::conditions::{ConditionUpdate, set_condition};
use ebb_core::events::EventKind;
use ebb_core::pause::{ObjectPause, pause_report};
use ebb_core::plan::Plan;
use ebb_core::{Notice, Requeue};
use ebb_crds::stackable::{StackableScaler, StackableScalerStatus};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

/// The kind of workload that owns a scaler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` Deployment.
    Deployment,
}

impl WorkloadKind {
    /// The API kind (`StatefulSet`), for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StatefulSet => "StatefulSet",
            Self::Deployment => "Deployment",
        }
    }
}

/// The workload a scaler belongs to, from its owner references: the one `apps/v1` StatefulSet
/// or Deployment, or the one of several marked `controller: true`. Otherwise the message of the
/// `Ready` condition that says why none is.
pub fn owning_workload(scaler: &StackableScaler) -> Result<(WorkloadKind, String), String> {
    let owners = scaler.owner_references();
    let candidates: Vec<_> = owners
        .iter()
        .filter(|o| o.api_version == "apps/v1")
        .filter_map(|o| match o.kind.as_str() {
            "StatefulSet" => Some((
                WorkloadKind::StatefulSet,
                o.name.clone(),
                o.controller == Some(true),
            )),
            "Deployment" => Some((
                WorkloadKind::Deployment,
                o.name.clone(),
                o.controller == Some(true),
            )),
            _ => None,
        })
        .collect();
    let chosen = candidates
        .iter()
        .find(|c| c.2)
        .or_else(|| candidates.first());
    match (chosen, candidates.len()) {
        (Some((kind, name, _)), 1) => Ok((*kind, name.clone())),
        (Some((kind, name, true)), _) => Ok((*kind, name.clone())),
        (Some(_), n) => Err(format!(
            "{n} apps/v1 StatefulSet/Deployment owner references and none is the controller; mark one `controller: true`"
        )),
        (None, _) => Err(
            "no owner reference to an apps/v1 StatefulSet or Deployment: the standalone controller scales the workload that owns the scaler".into(),
        ),
    }
}

/// What a pause asks for: the scaler's status with the `Paused` condition, the Event when the
/// pause starts or changes, and when to look again. Nothing else is written.
#[derive(Clone, Debug, PartialEq)]
pub struct PauseDecision {
    /// The paused object and why.
    pub pause: ObjectPause,
    /// The scaler's status to hold (written only when it differs).
    pub status: StackableScalerStatus,
    /// The Event to record: `(kind, reason, note)`; `None` when the condition was already there.
    pub event: Option<(EventKind, &'static str, String)>,
    /// At `paused-until`; an indefinite (or unreadable) pause waits for a change.
    pub requeue: Requeue,
}

/// The pause rule, pure, for the scaler and its workload alike: the scaler's own pause first,
/// then the workload's (`kind` and metadata, when it was read). `None` when neither is paused.
pub fn pause_decision(
    scaler: &StackableScaler,
    workload: Option<(&str, &ObjectMeta)>,
    now: Timestamp,
) -> Option<PauseDecision> {
    let own = ("StackableScaler", &scaler.metadata);
    let mut status = scaler.status.clone().unwrap_or_default();
    let report = pause_report(
        std::iter::once(own).chain(workload),
        &status.conditions,
        scaler.metadata.generation,
        now,
    )?;
    set_condition(&mut status.conditions, report.condition, now);
    Some(PauseDecision {
        pause: report.pause,
        status,
        event: report.event,
        requeue: report.requeue,
    })
}

/// A pass of the standalone controller that writes the scaler's status alone (paused, dry run,
/// an invalid owner): `status` when it differs from the scaler's (a merge patch of the
/// difference naming the resourceVersion read), with `notice` once it is written, then
/// `requeue`.
pub fn status_plan(
    scaler: &StackableScaler,
    status: StackableScalerStatus,
    notice: Option<Notice>,
    requeue: Requeue,
) -> Plan<()> {
    let mut plan = Plan::new(scaler.object_ref(&()), ());
    plan.requeue = requeue;
    match super::status_write(scaler, &status) {
        Some(write) => plan.writes.push(write.notices(notice)),
        None => plan.notices.extend(notice),
    }
    plan
}

/// The pass of a paused scaler ([`pause_decision`]): its `Paused` condition, with the Event when
/// the pause starts or changes, and a look again at `paused-until`.
pub fn paused_plan(scaler: &StackableScaler, pause: PauseDecision) -> Plan<()> {
    let notice = pause.event.map(|(kind, reason, note)| Notice {
        kind,
        reason,
        action: "Pause",
        note,
    });
    status_plan(scaler, pause.status, notice, pause.requeue)
}

/// The Events of a pass's saved steps (`notes`, in order), on the scaler: the executor records
/// them, as it records every plan's.
pub fn notes_plan(scaler: &StackableScaler, notes: &[super::Note]) -> Plan<()> {
    let mut plan = Plan::new(scaler.object_ref(&()), ());
    plan.notices = notes.iter().map(super::Note::notice).collect();
    plan
}

/// Condition type recording what a dry run would do.
pub const CONDITION_DRY_RUN: &str = "DryRun";

/// The pass of a scaler whose owner cannot be served (`why`, naming it): `Ready` false with
/// reason `InvalidOwner`, a Warning Event when that is new, and no look again until the scaler
/// changes. `None` when the condition already says so: nothing to write.
pub fn invalid_owner_plan(scaler: &StackableScaler, why: &str, now: Timestamp) -> Option<Plan<()>> {
    let mut status = scaler.status.clone().unwrap_or_default();
    let update = ConditionUpdate::new(super::CONDITION_READY, false, "InvalidOwner", why)
        .observed_generation(scaler.metadata.generation);
    set_condition(&mut status.conditions, update, now).then(|| {
        let notice = Notice::warning("InvalidOwner", "Validate", why);
        status_plan(scaler, status, Some(notice), Requeue::AwaitChange)
    })
}

/// The pass of `--dry-run`: the `DryRun` condition says what the pass would do (`intent`, as
/// [`super::Step::describe`] says it; `None`: nothing), with an Event when it is new; nothing
/// else is written, and the scaler is looked at again after a minute (or a hook's poll, if
/// longer).
pub fn dry_run_plan(scaler: &StackableScaler, intent: Option<String>, now: Timestamp) -> Plan<()> {
    let mut status = scaler.status.clone().unwrap_or_default();
    let note = format!(
        "dry run: would {}",
        intent.as_deref().unwrap_or("do nothing")
    );
    let update = ConditionUpdate::new(CONDITION_DRY_RUN, true, "DryRun", note.clone());
    let requeue = Requeue::After(super::HOOK_POLL.max(std::time::Duration::from_secs(60)));
    match set_condition(&mut status.conditions, update, now) {
        true => status_plan(
            scaler,
            status,
            Some(Notice::normal("DryRun", "Plan", note)),
            requeue,
        ),
        false => status_plan(
            scaler,
            scaler.status.clone().unwrap_or_default(),
            None,
            requeue,
        ),
    }
}

#[cfg(test)]
#[path = "owner_tests.rs"]
mod tests;
