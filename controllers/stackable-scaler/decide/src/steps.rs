//! The state machine's pass as a sequence of plans: [`decide_step`](decide::decide_step) on the scaler as
//! it is now, carry out the step's writes ([`decide::step_writes`]: its status when it changed,
//! the retry or abort annotation it removes, each naming the scaler as decided on), then its
//! action (a hook to ask, replicas to set), and decide again, until the plan waits or needs what
//! the world cannot give. A hook's answer decides the next step, so a pass cannot be one plan
//! decided up front. Every pass of stackable-scaler runs this loop; only the world differs:
//!
//! - the cluster (the controller's `engine::scaler_pass`, under the controller and
//!   under `engine::reconcile_scaler`): the writes go through
//!   the runtime's executor, a hook is asked (its answer kept in the
//!   `HookLedger`), the workload is resized; the pass ends at a
//!   wait, after a resize, or at the first error;
//! - nothing ([`preview`], for `--dry-run` and the offline `plan`): the writes change a copy of
//!   the scaler as the API server would ([`apply`]), and the pass ends at the first hook to ask
//!   or resize to make.
//!
//! A stage change is saved before the action that follows it, and a plan's note (an Event) counts
//! only once its writes succeeded.

use std::convert::Infallible;
use std::future::Future;

use ebb_crds::stackable::{ScalerStage, StackableScaler, StackableScalerStatus, StartedHook};
use jiff::Timestamp;
use kube::ResourceExt;

use crate::hooks::{HookKind, HookResult, ScalingContext};
use crate::{
    self as decide, ABORT_ANNOTATION, Action, Input, Note, RETRY_ANNOTATION, StageTimeouts, Step,
    WorkloadState,
};
use ebb_core::plan::{Verb, Write};

/// How many decide/save/act steps one pass may take (a full operation without waits is ~6).
pub const MAX_STEPS: usize = 16;

/// Whether the scaler's annotations ask for a retry.
pub fn retry_requested(scaler: &StackableScaler) -> bool {
    annotation_true(scaler, RETRY_ANNOTATION)
}

/// Whether the scaler's annotations ask to abort the operation in flight.
pub fn abort_requested(scaler: &StackableScaler) -> bool {
    annotation_true(scaler, ABORT_ANNOTATION)
}

fn annotation_true(scaler: &StackableScaler, key: &str) -> bool {
    scaler
        .annotations()
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// What [`decide_step`](decide::decide_step) is given for `scaler` as it is now.
fn input<'a>(
    scaler: &'a StackableScaler,
    workload: Option<&'a WorkloadState>,
    hook: Option<&'a HookResult>,
    now: Timestamp,
) -> Input<'a> {
    Input {
        name: scaler.metadata.name.as_deref().unwrap_or_default(),
        namespace: scaler.metadata.namespace.as_deref().unwrap_or_default(),
        generation: scaler.metadata.generation,
        spec_replicas: scaler.spec.replicas,
        status: scaler.status.as_ref(),
        retry_requested: retry_requested(scaler),
        abort_requested: abort_requested(scaler),
        timeouts: StageTimeouts::of(&scaler.spec),
        workload,
        hook,
        now,
    }
}

/// What the step loop runs against.
pub trait World {
    /// Why a step failed (the pass ends there).
    type Error;

    /// The scaler as last read, saved or changed: what the next step decides on.
    fn scaler(&self) -> &StackableScaler;

    /// The answer `hook` already gave about the scaler's current operation, if known.
    fn answer(&self, hook: HookKind) -> Option<HookResult>;

    /// Carries out a step's `writes` to the scaler, in order ([`decide::step_writes`]).
    fn write(&mut self, writes: &[Write]) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Notes that the next write records the start of a hook (`status.startedHook`): whatever
    /// that write answers (a lost answer may have recorded it), this process may still start
    /// the hook at its next ask.
    fn will_record(&mut self, _record: &StartedHook) {}

    /// Whether this process recorded the start of `hook` for the operation in `context` and
    /// has not asked it since (the note is used up): its ask may start it.
    fn may_start(&mut self, _hook: HookKind, _context: &ScalingContext) -> bool {
        false
    }

    /// Asks `hook`: `true` when its answer is known now ([`World::answer`]) and the loop decides
    /// again, `false` when the pass ends at this plan.
    fn ask(
        &mut self,
        hook: HookKind,
        context: &ScalingContext,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Sets the workload's replicas (the pass then ends: the workload takes time).
    fn resize(&mut self, replicas: i32) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// How a run of the step loop went.
pub struct Steps<E> {
    /// The notes of the steps whose status was saved, in order: the Events of the pass.
    pub notes: Vec<Note>,
    /// The plan the pass ended at (`None`: no end within [`MAX_STEPS`], a bug), or why a step
    /// failed.
    pub end: Result<Option<Step>, E>,
}

/// The step loop (see the module docs), as far as `world` lets it go.
pub async fn run<W: World>(
    world: &mut W,
    workload: Option<&WorkloadState>,
    now: Timestamp,
) -> Steps<W::Error> {
    let mut notes = Vec::new();
    let end = steps(world, workload, now, &mut notes).await;
    Steps { notes, end }
}

async fn steps<W: World>(
    world: &mut W,
    workload: Option<&WorkloadState>,
    now: Timestamp,
    notes: &mut Vec<Note>,
) -> Result<Option<Step>, W::Error> {
    for _ in 0..MAX_STEPS {
        let scaler = world.scaler();
        let answer = decide::hook_due(scaler.status.as_ref()).and_then(|hook| world.answer(hook));
        let plan = decide::decide_step(&input(scaler, workload, answer.as_ref(), now));
        let writes = decide::step_writes(scaler, &plan);
        let before = scaler.status.as_ref().and_then(|s| s.started_hook.as_ref());
        // A hook's start recorded by this write: only an ask of this process that follows it may
        // start the hook ([`ScalingContext::starts`]), whatever the write answers.
        if let Some(record) = plan
            .status
            .started_hook
            .as_ref()
            .filter(|r| Some(*r) != before)
        {
            world.will_record(record);
        }
        if !writes.is_empty() {
            world.write(&writes).await?;
        }
        // Only what is saved is reported.
        notes.extend(plan.note.clone());
        let again = match &plan.action {
            Action::Continue | Action::StripRetryAnnotation | Action::StripAbortAnnotation => true,
            Action::RunHook { hook, context } => {
                let starts = world.may_start(*hook, context);
                let context = ScalingContext {
                    starts,
                    ..context.clone()
                };
                world.ask(*hook, &context).await?
            }
            Action::SetReplicas { to } => {
                world.resize(*to).await?;
                false
            }
            Action::Wait { .. } => false,
        };
        if !again {
            return Ok(Some(plan));
        }
    }
    Ok(None)
}

/// Where one pass would get without touching the world: the plan it stops at (a hook to ask, the
/// workload to resize, or a wait), the status it would have saved, and the notes on the way.
#[derive(Clone, Debug)]
pub struct Preview {
    /// The plan the pass stops at (`None`: no decision within [`MAX_STEPS`], a bug).
    pub plan: Option<Step>,
    /// The status after the pass.
    pub status: StackableScalerStatus,
    /// What would be recorded as Events.
    pub notes: Vec<Note>,
}

/// Runs the step loop for `scaler` without hooks or writes ([`Preview`]): the dry run's intent and
/// the offline `plan`'s answer.
pub fn preview(
    scaler: &StackableScaler,
    workload: Option<&WorkloadState>,
    now: Timestamp,
) -> Preview {
    let mut world = Offline {
        scaler: scaler.clone(),
    };
    // No step of the offline world waits: the loop finishes in its first poll.
    let steps = futures::executor::block_on(run(&mut world, workload, now));
    let Ok(plan) = steps.end;
    Preview {
        plan,
        status: world.scaler.status.unwrap_or_default(),
        notes: steps.notes,
    }
}

/// The world of a [`preview`]: a copy of the scaler, no hooks, no workload to resize.
struct Offline {
    scaler: StackableScaler,
}

impl World for Offline {
    type Error = Infallible;

    fn scaler(&self) -> &StackableScaler {
        &self.scaler
    }

    fn answer(&self, _hook: HookKind) -> Option<HookResult> {
        None
    }

    async fn write(&mut self, writes: &[Write]) -> Result<(), Infallible> {
        self.scaler = apply(&self.scaler, writes);
        Ok(())
    }

    async fn ask(
        &mut self,
        _hook: HookKind,
        _context: &ScalingContext,
    ) -> Result<bool, Infallible> {
        Ok(false)
    }

    async fn resize(&mut self, _replicas: i32) -> Result<(), Infallible> {
        Ok(())
    }
}

/// `scaler` after `writes`, as the API server would leave it: each a merge patch of the scaler
/// (its status, its metadata), applied in order; the versions they name are not checked (the
/// copy is what was decided on). The offline worlds' writes.
pub fn apply(scaler: &StackableScaler, writes: &[Write]) -> StackableScaler {
    let Ok(mut object) = serde_json::to_value(scaler) else {
        return scaler.clone();
    };
    for write in writes {
        if let Verb::Merge(patch) | Verb::MergeStatus(patch) = &write.verb {
            let mut patch = patch.value();
            if let Some(metadata) = patch.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                metadata.remove("resourceVersion");
            }
            json_patch::merge(&mut object, &patch);
        }
    }
    serde_json::from_value(object).unwrap_or_else(|_| scaler.clone())
}

/// How a hook answers in a [`walk`] (`plan --hook pre=done`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Its Job succeeded.
    Done,
    /// Its Job still runs: the walk stops there.
    InProgress,
    /// Its Job failed.
    Failed,
}

impl Answer {
    /// `done`, `in-progress`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Done => "done",
            Answer::InProgress => "in-progress",
            Answer::Failed => "failed",
        }
    }
}

/// One thing a [`walk`] did, in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "step")]
pub enum WalkStep {
    /// The status was saved, at this stage.
    Stage {
        /// The stage saved.
        stage: &'static str,
    },
    /// A hook's Job would be created (or read), and how it answered.
    Job {
        /// `prescale`, `postscale`, `onfailure`.
        hook: &'static str,
        /// The Job's name.
        job: String,
        /// `done`, `in-progress`, `failed`, or `unanswered` (no `--hook` for it: the walk stops).
        answer: &'static str,
    },
    /// A hook without a Job template: done at once.
    NoJob {
        /// The hook.
        hook: &'static str,
    },
    /// The workload's replicas would be set (the walk takes it as settled there).
    Resize {
        /// The new size.
        to: i32,
    },
    /// An annotation would be removed.
    Strip {
        /// The annotation.
        annotation: &'static str,
    },
}

/// Where a whole operation goes offline ([`walk`]).
#[derive(Clone, Debug)]
pub struct Walk {
    /// What was done, in order.
    pub steps: Vec<WalkStep>,
    /// The status at the end.
    pub status: StackableScalerStatus,
    /// The Events of the walk, in order.
    pub notes: Vec<Note>,
    /// The plan the walk stopped at.
    pub end: Option<Step>,
}

/// How many passes a [`walk`] may take (an operation is four: to PreScaling, the resize, the
/// workload settled, PostScaling to Idle).
pub const MAX_PASSES: usize = 8;

/// Runs the step loop pass after pass for `scaler` without a cluster, as far as `answers` (how
/// each hook's Job answers) let it: each hook with a template is a Job whose answer is looked up
/// (none: the walk stops there, as the controller would wait), a hook without one is done, and a
/// resize leaves the workload settled at the new size for the next pass. The offline `plan`'s walk.
pub fn walk(
    scaler: &StackableScaler,
    workload: Option<&WorkloadState>,
    answers: &[(HookKind, Answer)],
    now: Timestamp,
) -> Walk {
    let mut world = Walking {
        scaler: scaler.clone(),
        answers,
        steps: Vec::new(),
    };
    let mut workload = workload.cloned();
    let mut notes = Vec::new();
    let mut end = None;
    for _ in 0..MAX_PASSES {
        // No step of this world waits: each pass finishes in its first poll.
        let steps = futures::executor::block_on(run(&mut world, workload.as_ref(), now));
        notes.extend(steps.notes);
        let Ok(plan) = steps.end;
        end = plan;
        match end.as_ref().map(|plan| &plan.action) {
            Some(Action::SetReplicas { to }) => workload = Some(WorkloadState::settled(*to)),
            _ => break,
        }
    }
    Walk {
        steps: world.steps,
        status: world.scaler.status.unwrap_or_default(),
        notes,
        end,
    }
}

/// The world of a [`walk`]: a copy of the scaler, and hooks answering as told.
struct Walking<'a> {
    scaler: StackableScaler,
    answers: &'a [(HookKind, Answer)],
    steps: Vec<WalkStep>,
}

impl Walking<'_> {
    /// Records a status saved over `before`'s: the stage when it changed (or first), and the Job
    /// of a hook stage entered.
    fn saved(&mut self, before: &StackableScaler, status: &StackableScalerStatus) {
        let stage = status
            .current_state
            .as_ref()
            .map_or(ScalerStage::Idle, |state| state.stage);
        let stage_before = decide::stage_of(before.status.as_ref());
        let hook_before = decide::hook_due(before.status.as_ref());
        if stage_before != stage || self.steps.is_empty() {
            self.steps.push(WalkStep::Stage {
                stage: stage.as_str(),
            });
        }
        // A hook stage entered: its Job starts (the answer may be known before it is asked).
        if let Some(hook) = decide::hook_due(Some(status)).filter(|h| Some(*h) != hook_before) {
            self.record_job(
                hook,
                status.scale_event.unwrap_or(0),
                status.attempt.unwrap_or(0),
            );
        }
    }

    /// Records the Job `hook` runs for operation `scale_event` (attempt `attempt`), once.
    fn record_job(&mut self, hook: HookKind, scale_event: i64, attempt: i64) {
        let step = if crate::jobs::hook_spec(self.scaler.spec.hooks.as_ref(), hook).is_none() {
            WalkStep::NoJob {
                hook: hook.as_str(),
            }
        } else {
            WalkStep::Job {
                hook: hook.as_str(),
                job: crate::hooks::job_name(&self.scaler.name_any(), hook, scale_event, attempt),
                answer: self.told(hook).map_or("unanswered", Answer::as_str),
            }
        };
        if self.steps.last() != Some(&step) {
            self.steps.push(step);
        }
    }

    /// The answer of `hook` for the scaler's operation: done without a template, else as told.
    fn told(&self, hook: HookKind) -> Option<Answer> {
        if crate::jobs::hook_spec(self.scaler.spec.hooks.as_ref(), hook).is_none() {
            return Some(Answer::Done);
        }
        self.answers
            .iter()
            .find(|(kind, _)| *kind == hook)
            .map(|(_, answer)| *answer)
    }
}

impl World for Walking<'_> {
    type Error = Infallible;

    fn scaler(&self) -> &StackableScaler {
        &self.scaler
    }

    fn answer(&self, hook: HookKind) -> Option<HookResult> {
        match self.told(hook)? {
            Answer::Done => Some(Ok(crate::hooks::HookOutcome::Done)),
            Answer::InProgress => None,
            Answer::Failed => Some(Err(crate::hooks::HookError::new(format!(
                "the {} hook's Job failed",
                hook.as_str()
            )))),
        }
    }

    async fn write(&mut self, writes: &[Write]) -> Result<(), Infallible> {
        let before = self.scaler.clone();
        self.scaler = apply(&before, writes);
        let status = self.scaler.status.clone().unwrap_or_default();
        if before.status.clone().unwrap_or_default() != status {
            self.saved(&before, &status);
        }
        for annotation in [RETRY_ANNOTATION, ABORT_ANNOTATION] {
            let had = |s: &StackableScaler| s.annotations().contains_key(annotation);
            if had(&before) && !had(&self.scaler) {
                self.steps.push(WalkStep::Strip { annotation });
            }
        }
        Ok(())
    }

    async fn ask(&mut self, hook: HookKind, context: &ScalingContext) -> Result<bool, Infallible> {
        self.record_job(hook, context.scale_event, context.attempt);
        Ok(matches!(
            self.told(hook),
            Some(Answer::Done | Answer::Failed)
        ))
    }

    async fn resize(&mut self, replicas: i32) -> Result<(), Infallible> {
        self.steps.push(WalkStep::Resize { to: replicas });
        Ok(())
    }
}

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
