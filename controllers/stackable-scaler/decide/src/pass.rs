//! One reconcile of a StackableScaler, in two calls: [`reads`] says what the decision needs read
//! (the owning workload, unless the scaler's own state makes it moot), the reconciler reads it,
//! and [`decide`] says what the pass is: nothing (being deleted), a plan that is the whole pass
//! (paused, an owner that cannot be served, a dry run), or the state machine's run.

use ebb_core::Plan;
use ebb_core::conditions::remove_condition;
use ebb_core::pause::CONDITION_PAUSED;
use ebb_crds::stackable::StackableScaler;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::steps::preview;
use crate::{
    Step, WorkloadKind, WorkloadState, dry_run_plan, invalid_owner_plan, owning_workload,
    pause_decision, paused_plan, resume_write,
};

/// What a reconcile of one scaler must read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// The StatefulSet or Deployment that owns it; `None` when nothing needs it (the scaler is
    /// being deleted or paused itself, or has no such owner).
    pub workload: Option<(WorkloadKind, String)>,
}

/// What a reconcile of `scaler` reads at `now`.
pub fn reads(scaler: &StackableScaler, now: Timestamp) -> Reads {
    if scaler.metadata.deletion_timestamp.is_some() || pause_decision(scaler, None, now).is_some() {
        return Reads::default();
    }
    Reads {
        workload: owning_workload(scaler).ok(),
    }
}

/// Everything one reconcile decides from.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The scaler, as read.
    pub scaler: &'a StackableScaler,
    /// The owning workload's metadata and state, when [`Reads::workload`] asked and it exists.
    pub workload: Option<(&'a ObjectMeta, &'a WorkloadState)>,
    /// `--dry-run`: say what the pass would do, write nothing else.
    pub dry_run: bool,
}

/// What one reconcile is.
#[derive(Clone, Debug, PartialEq)]
pub enum Pass {
    /// The scaler is being deleted: its series and hook answers go, nothing is written.
    Forget,
    /// This plan is the whole pass: a pause (the `Paused` condition), an owner that cannot be
    /// served (`Ready=False`, the pass ends as invalid), or a dry run (`DryRun` says what the
    /// pass would do).
    Plan(Box<Plan<()>>),
    /// The state machine runs ([`crate::steps`]), once the `Paused` condition of an ended pause
    /// is dropped ([`resume_write`]).
    Run,
}

/// The reconcile of `observed.scaler` at `now`. The scaler's own pause needs no workload (nor a
/// valid owner), so it is first; then an owner that cannot be served; then the workload's pause;
/// then a dry run; else the state machine. Leaving a pause drops its condition first, in the
/// same plan.
pub fn decide(observed: &Observed<'_>, now: Timestamp) -> Pass {
    let scaler = observed.scaler;
    if scaler.metadata.deletion_timestamp.is_some() {
        return Pass::Forget;
    }
    if let Some(pause) = pause_decision(scaler, None, now) {
        return Pass::Plan(Box::new(paused_plan(scaler, pause)));
    }
    let kind = match owning_workload(scaler) {
        Ok((kind, _)) => kind,
        Err(why) => {
            let why = format!("invalid StackableScaler: {why}");
            return Pass::Plan(Box::new(resumed(scaler, |scaler| {
                let mut plan = invalid_owner_plan(scaler, &why, now)
                    .unwrap_or_else(|| Plan::new(scaler.object_ref(&()), ()));
                plan.invalid = Some(why.clone());
                plan
            })));
        }
    };
    let workload_meta = observed.workload.map(|(meta, _)| (kind.as_str(), meta));
    if let Some(pause) = pause_decision(scaler, workload_meta, now) {
        return Pass::Plan(Box::new(paused_plan(scaler, pause)));
    }
    if observed.dry_run {
        let state = observed.workload.map(|(_, state)| state);
        let intent = preview(scaler, state, now)
            .plan
            .as_ref()
            .map(Step::describe);
        return Pass::Plan(Box::new(resumed(scaler, |scaler| {
            dry_run_plan(scaler, intent, now)
        })));
    }
    Pass::Run
}

/// `plan_of` the scaler with its `Paused` condition dropped, after the write that drops it (the
/// executor names the resourceVersion that write answered with).
fn resumed(
    scaler: &StackableScaler,
    plan_of: impl FnOnce(&StackableScaler) -> Plan<()>,
) -> Plan<()> {
    let Some(resume) = resume_write(scaler) else {
        return plan_of(scaler);
    };
    let mut resumed = scaler.clone();
    if let Some(status) = resumed.status.as_mut() {
        remove_condition(&mut status.conditions, CONDITION_PAUSED);
    }
    let mut plan = plan_of(&resumed);
    plan.writes.insert(0, resume);
    plan
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod tests;
