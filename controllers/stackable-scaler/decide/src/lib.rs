//! The state machine of a StackableScaler, as a pure function.
//!
//! `Idle -> PreScaling -> Scaling -> PostScaling -> Idle`, and `Failed`:
//! - `Idle` leaves when `spec.replicas` differs from `status.replicas`; the previous and desired
//!   replicas are recorded at that moment and the operation runs toward the recorded target. A
//!   change of `spec.replicas` while an operation is in flight waits until `Idle`.
//! - `PreScaling` / `PostScaling` ask their hook: `Done` moves on, `InProgress` waits, an error
//!   moves to `Failed`.
//! - `Scaling` sets the workload's replicas and waits until it is stable at the target.
//! - No active stage waits forever: past its deadline ([`StageTimeouts`],
//!   `spec.stageTimeoutSeconds`, default 30 minutes, counted from
//!   `currentState.lastTransitionTime`) it moves to `Failed` with a reason naming what it waited
//!   for. A converged workload or a hook's own answer wins over the deadline when both are due.
//!   The annotation `autoscaling.stackable.tech/abort: "true"` moves an active stage to `Failed` at
//!   once; outside an active stage it is ignored. Either way it is removed.
//! - `Failed` records where and why, then runs the `onFailure` hook once. It is terminal until the
//!   annotation `autoscaling.stackable.tech/retry: "true"`, which resets to `Idle` (desired and
//!   previous replicas cleared) once the `onFailure` hook has finished; the annotation is removed.
//!
//! [`decide_step`] takes plain data and returns a [`Step`]: the status to hold (written before anything
//! else happens) and one action. The step loop (the binary's `steps`) saves, acts, and asks
//! again: a hook's answer comes back in as [`Input::hook`]. Which stages block is [`ScalerStage::is_active`](ebb_crds::stackable::ScalerStage::is_active)'s knowledge.
//!
//! This crate (`stackable-scaler-decide`, the binary's `decide` module; its [`hooks`] the
//! binary's `hooks`) depends on the pure crates only (ebb-core, ebb-crds: no client, no runtime;
//! `make crds-check` checks it).

use std::time::Duration;

use ebb_core::conditions::{ConditionUpdate, set_condition};
use ebb_core::time::{from_k8s_time, to_k8s_time};
use ebb_crds::stackable::{
    FailureHookState, HookSpec, ScalerStage, ScalerState, StackableScalerSpec,
    StackableScalerStatus, StartedHook,
};
use jiff::Timestamp;
use serde::Serialize;

use crate::hooks::{FailureInfo, HookKind, HookOutcome, HookResult, ScalingContext};

pub mod builders;
pub mod hooks;
pub mod jobs;
mod owner;
pub mod pass;
pub mod replicas;
pub mod steps;
mod writes;
use jiff::SignedDuration;
pub use owner::{
    CONDITION_DRY_RUN, PauseDecision, WorkloadKind, dry_run_plan, invalid_owner_plan, notes_plan,
    owning_workload, pause_decision, paused_plan, status_plan,
};
pub use pass::{Observed, Pass, Reads, decide, reads};
pub use writes::{resize_write, resume_write, status_write, step_writes, strip_write};

/// The annotation that takes a scaler out of `Failed`.
pub const RETRY_ANNOTATION: &str = "autoscaling.stackable.tech/retry";
/// The annotation that aborts the operation in flight (moves an active stage to `Failed`).
pub const ABORT_ANNOTATION: &str = "autoscaling.stackable.tech/abort";
/// Condition type: `True` while idle.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: `True` while an operation is in flight.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Condition type: `True` in `Failed`, with the failed stage as reason.
pub const CONDITION_FAILED: &str = "Failed";
/// Default deadline of a hook Job, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 600;

/// How often a hook answering `InProgress` is asked again.
pub const HOOK_POLL: Duration = Duration::from_secs(10);
/// How often a workload that is not yet stable is looked at again when nothing else brings the
/// scaler back: the workload's watch runs a pass on each of its changes (its status too), so
/// this is only a safety net, and the stage's deadline still comes on time. Each look reads the
/// workload: at 5 s, 10 000 scalers waiting on their StatefulSets made 20 reads each per resize
/// (docs/bench.md).
pub const WORKLOAD_POLL: Duration = Duration::from_secs(60);
/// How long to wait when the workload cannot be observed at all.
pub const MISSING_WORKLOAD_POLL: Duration = Duration::from_secs(30);
/// How long an active stage may last without `spec.stageTimeoutSeconds`.
pub const DEFAULT_STAGE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// A hook stage outlives its hook's own `timeoutSeconds` by this much, so the hook's failure (with
/// its Job name and logs hint) is the one reported when the hook is what hangs.
pub const HOOK_TIMEOUT_GRACE: Duration = Duration::from_secs(60);

/// How long each active stage may last, from the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageTimeouts {
    /// `spec.stageTimeoutSeconds`, or [`DEFAULT_STAGE_TIMEOUT`].
    pub stage: Duration,
    /// The pre-scale hook's `timeoutSeconds`, when a template is given.
    pub pre_scale_hook: Option<Duration>,
    /// The post-scale hook's `timeoutSeconds`, when a template is given.
    pub post_scale_hook: Option<Duration>,
}

impl Default for StageTimeouts {
    fn default() -> Self {
        Self {
            stage: DEFAULT_STAGE_TIMEOUT,
            pre_scale_hook: None,
            post_scale_hook: None,
        }
    }
}

impl StageTimeouts {
    /// The timeouts a scaler's spec asks for (hook Jobs without `timeoutSeconds` get the Job
    /// default, [`crate::DEFAULT_TIMEOUT_SECONDS`]).
    pub fn of(spec: &StackableScalerSpec) -> Self {
        let secs = |s: i64| Duration::from_secs(u64::try_from(s.max(1)).unwrap_or(1));
        let hook = |h: Option<&HookSpec>| {
            h.map(|h| {
                secs(
                    h.timeout_seconds
                        .map_or(crate::DEFAULT_TIMEOUT_SECONDS, i64::from),
                )
            })
        };
        let hooks = spec.hooks.as_ref();
        Self {
            stage: spec
                .stage_timeout_seconds
                .map_or(DEFAULT_STAGE_TIMEOUT, |s| secs(i64::from(s))),
            pre_scale_hook: hook(hooks.and_then(|h| h.pre_scale.as_ref())),
            post_scale_hook: hook(hooks.and_then(|h| h.post_scale.as_ref())),
        }
    }

    /// How long `stage` may last: the stage timeout, and for a hook stage at least the hook's own
    /// timeout plus [`HOOK_TIMEOUT_GRACE`]. `None` for `Idle` and `Failed`.
    pub fn limit(&self, stage: ScalerStage) -> Option<Duration> {
        let at_least_hook = |hook: Option<Duration>| {
            hook.map_or(self.stage, |h| self.stage.max(h + HOOK_TIMEOUT_GRACE))
        };
        match stage {
            ScalerStage::PreScaling => Some(at_least_hook(self.pre_scale_hook)),
            ScalerStage::Scaling => Some(self.stage),
            ScalerStage::PostScaling => Some(at_least_hook(self.post_scale_hook)),
            ScalerStage::Idle | ScalerStage::Failed => None,
        }
    }
}

/// When the active stage recorded in `status` must have ended (`None` outside an active stage or
/// without a `lastTransitionTime`).
pub fn stage_deadline(
    status: &StackableScalerStatus,
    timeouts: &StageTimeouts,
) -> Option<Timestamp> {
    let state = status.current_state.as_ref()?;
    let limit = timeouts.limit(state.stage)?;
    let entered = from_k8s_time(state.last_transition_time.as_ref()?);
    Some(entered + SignedDuration::try_from(limit).ok()?)
}

/// `30m`, `1h`, `90s`: a duration as a person would write it.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s > 0 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s > 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// What the workload (the StatefulSet or Deployment being scaled) looks like now.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadState {
    /// `spec.replicas` of the workload.
    pub replicas: i32,
    /// `status.replicas`: pods that exist.
    pub status_replicas: i32,
    /// `status.readyReplicas`.
    pub ready_replicas: i32,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// The pods' label selector as a string (`app=nifi,role=node`), for the `/scale` selector.
    pub selector: Option<String>,
    /// `Kind/name` of the workload (`StatefulSet/nifi-node-default`), for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl WorkloadState {
    /// A workload at `replicas`, all ready, its controller caught up (test and `plan` helper).
    pub fn settled(replicas: i32) -> Self {
        Self {
            replicas,
            status_replicas: replicas,
            ready_replicas: replicas,
            generation: Some(1),
            observed_generation: Some(1),
            selector: None,
            reference: None,
        }
    }

    /// What keeps it from being stable at `target`, for a failure reason:
    /// `replicas 3, ready 2, observedGeneration 4 < generation 5`.
    pub fn unmet(&self, target: i32) -> String {
        let mut parts = Vec::new();
        if self.replicas != target {
            parts.push(format!("spec.replicas {}", self.replicas));
        }
        parts.push(format!(
            "replicas {}, ready {}",
            self.status_replicas, self.ready_replicas
        ));
        match (self.generation, self.observed_generation) {
            (Some(generation), Some(observed)) if observed < generation => {
                parts.push(format!(
                    "observedGeneration {observed} < generation {generation}"
                ));
            }
            (Some(generation), None) => {
                parts.push(format!("observedGeneration unset, generation {generation}"));
            }
            _ => {}
        }
        parts.join(", ")
    }

    /// Stable at `target`: asked for it, has exactly that many pods, all ready, and its controller
    /// has seen the latest spec.
    pub fn is_stable_at(&self, target: i32) -> bool {
        let caught_up = match (self.generation, self.observed_generation) {
            (Some(generation), Some(observed)) => observed >= generation,
            (Some(_), None) => false,
            (None, _) => true,
        };
        self.replicas == target
            && self.status_replicas == target
            && self.ready_replicas == target
            && caught_up
    }
}

/// Everything [`decide_step`] looks at.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// The scaler's name (for hook contexts).
    pub name: &'a str,
    /// The scaler's namespace.
    pub namespace: &'a str,
    /// The scaler's `metadata.generation`.
    pub generation: Option<i64>,
    /// `spec.replicas`: what the HPA asks for.
    pub spec_replicas: i32,
    /// The current status (`None` before anything was written).
    pub status: Option<&'a StackableScalerStatus>,
    /// Whether the retry annotation is set to `"true"`.
    pub retry_requested: bool,
    /// Whether the abort annotation is set to `"true"`.
    pub abort_requested: bool,
    /// How long each active stage may last ([`StageTimeouts::of`] the spec).
    pub timeouts: StageTimeouts,
    /// The workload, when it could be observed.
    pub workload: Option<&'a WorkloadState>,
    /// The answer of the current stage's hook, when it was asked in this pass.
    pub hook: Option<&'a HookResult>,
    /// Now (stamps transitions and conditions).
    pub now: Timestamp,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Action {
    /// Persist the status and decide again at once.
    Continue,
    /// Ask this hook (after the status is persisted).
    RunHook {
        /// Which hook.
        hook: HookKind,
        /// What to tell it.
        context: ScalingContext,
    },
    /// Set the workload's replicas.
    SetReplicas {
        /// The target.
        to: i32,
    },
    /// Remove the retry annotation (after the status is persisted), then decide again.
    StripRetryAnnotation,
    /// Remove the abort annotation (after the status is persisted), then decide again.
    StripAbortAnnotation,
    /// Nothing to do until something changes, or until `after` has passed.
    Wait {
        /// Poll again after this long; `None` waits for a change of the object.
        #[serde(with = "opt_secs")]
        after: Option<Duration>,
        /// Why.
        reason: String,
    },
}

/// Something worth an Event: a stage change, or a notable step within a stage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// Stage before (`None` for the first status).
    pub from: Option<ScalerStage>,
    /// Stage after.
    pub to: ScalerStage,
    /// CamelCase Event reason.
    pub reason: &'static str,
    /// Human message.
    pub message: String,
    /// Whether this is a warning (failures).
    pub warning: bool,
}

impl Note {
    /// Whether the stage changed.
    pub fn is_transition(&self) -> bool {
        self.from != Some(self.to)
    }

    /// The Event of this note: its reason and message, the stage entered as the action, a
    /// Warning for a failure.
    pub fn notice(&self) -> ebb_core::Notice {
        let kind = match self.warning {
            true => ebb_core::events::EventKind::Warning,
            false => ebb_core::events::EventKind::Normal,
        };
        ebb_core::Notice {
            kind,
            reason: self.reason,
            action: self.to.as_str(),
            note: self.message.clone(),
        }
    }
}

/// The decision: the status to hold (persist it before acting when it differs from the current
/// one) and what to do then.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The status after this step, conditions included.
    pub status: StackableScalerStatus,
    /// The action.
    pub action: Action,
    /// An Event to record, if any.
    pub note: Option<Note>,
}

impl Step {
    /// The stage this plan holds.
    pub fn stage(&self) -> ScalerStage {
        stage_of(Some(&self.status))
    }

    /// What the plan does next, in a few words ("run the prescale hook for scaling from 3 to 5
    /// replicas"): the intent of a dry run and the `next:` line of `plan`.
    pub fn describe(&self) -> String {
        match &self.action {
            Action::Continue => format!("move to {}", self.stage().as_str()),
            Action::RunHook { hook, context } => format!(
                "run the {} hook for scaling from {} to {} replicas",
                hook.as_str(),
                context.previous_replicas,
                context.desired_replicas
            ),
            Action::SetReplicas { to } => format!("set the workload to {to} replicas"),
            Action::StripRetryAnnotation => format!("remove the {RETRY_ANNOTATION} annotation"),
            Action::StripAbortAnnotation => format!("remove the {ABORT_ANNOTATION} annotation"),
            Action::Wait { reason, .. } => format!("wait ({reason})"),
        }
    }
}

/// The stage recorded in a status (`Idle` when none is).
pub fn stage_of(status: Option<&StackableScalerStatus>) -> ScalerStage {
    status
        .and_then(|s| s.current_state.as_ref())
        .map_or(ScalerStage::Idle, |s| s.stage)
}

/// Whether a status was ever initialized (a fresh scaler's is not: see [`initial_status`]).
pub fn is_initialized(status: Option<&StackableScalerStatus>) -> bool {
    status.is_some_and(|s| s.current_state.is_some())
}

/// The first status of a scaler: the workload's current replicas, `Idle`. Seeding it this way is
/// what keeps a fresh scaler (whose status would default to 0 replicas) from "scaling" from zero.
pub fn initial_status(workload: &WorkloadState, now: Timestamp) -> StackableScalerStatus {
    StackableScalerStatus {
        replicas: workload.replicas,
        selector: workload.selector.clone(),
        current_state: Some(state(ScalerStage::Idle, now)),
        ..StackableScalerStatus::default()
    }
}

fn state(stage: ScalerStage, now: Timestamp) -> ScalerState {
    ScalerState {
        stage,
        last_transition_time: Some(to_k8s_time(now)),
        ..ScalerState::default()
    }
}

/// The next step of the state machine.
pub fn decide_step(input: &Input<'_>) -> Step {
    let plan = step(input);
    finish(input, plan)
}

/// The step without conditions/observedGeneration (added by [`finish`]).
fn step(input: &Input<'_>) -> Step {
    let mut current = input.status.cloned().unwrap_or_default();
    let stage = stage_of(input.status);

    // A retry only means something in Failed; anywhere else it would linger and silently
    // acknowledge a future failure, so it is removed (and reported).
    if input.retry_requested && stage != ScalerStage::Failed {
        return Step {
            status: current,
            action: Action::StripRetryAnnotation,
            note: Some(Note {
                from: Some(stage),
                to: stage,
                reason: "RetryIgnored",
                message: format!(
                    "{RETRY_ANNOTATION} ignored: the scaler is {}, not Failed",
                    stage.as_str()
                ),
                warning: false,
            }),
        };
    }

    // An abort stops the operation in flight like a failure (status first, then `onFailure`);
    // anywhere else it would linger and abort the next operation, so it is removed (and reported).
    if input.abort_requested {
        if stage.is_active() && is_initialized(input.status) {
            let mut plan = fail(
                input,
                current,
                stage,
                format!("aborted by annotation {ABORT_ANNOTATION}"),
            );
            plan.action = Action::StripAbortAnnotation;
            if let Some(note) = plan.note.as_mut() {
                note.reason = "ScalingAborted";
            }
            return plan;
        }
        return Step {
            status: current,
            action: Action::StripAbortAnnotation,
            note: Some(Note {
                from: Some(stage),
                to: stage,
                reason: "AbortIgnored",
                message: format!(
                    "{ABORT_ANNOTATION} ignored: no operation in flight (the scaler is {})",
                    stage.as_str()
                ),
                warning: false,
            }),
        };
    }

    if !is_initialized(input.status) {
        let Some(workload) = input.workload else {
            return wait(
                current,
                MISSING_WORKLOAD_POLL,
                "waiting to observe the workload before initializing status",
            );
        };
        let mut status = initial_status(workload, input.now);
        // Counters survive a lost currentState so Job names stay unique.
        status.scale_event = current.scale_event;
        status.attempt = current.attempt;
        return Step {
            status,
            action: Action::Continue,
            note: Some(Note {
                from: None,
                to: ScalerStage::Idle,
                reason: "Initialized",
                message: format!(
                    "status initialized from the workload: {} replicas",
                    workload.replicas
                ),
                warning: false,
            }),
        };
    }

    // An active stage without an entry time (written by an older version or by hand) starts its
    // clock now, so its deadline exists.
    if stage.is_active()
        && let Some(state) = current.current_state.as_mut()
        && state.last_transition_time.is_none()
    {
        state.last_transition_time = Some(to_k8s_time(input.now));
        return Step {
            status: current,
            action: Action::Continue,
            note: None,
        };
    }

    match stage {
        ScalerStage::Idle => idle(input, current),
        ScalerStage::PreScaling => hook_stage(input, current, HookKind::PreScale),
        ScalerStage::Scaling => scaling(input, current),
        ScalerStage::PostScaling => hook_stage(input, current, HookKind::PostScale),
        ScalerStage::Failed => failed(input, current),
    }
}

/// The active stage's limit, when its deadline has been reached at `input.now`.
fn overdue(input: &Input<'_>, status: &StackableScalerStatus) -> Option<Duration> {
    let deadline = stage_deadline(status, &input.timeouts)?;
    (input.now >= deadline)
        .then(|| input.timeouts.limit(stage_of(Some(status))))
        .flatten()
}

/// A wait in an active stage: polls after `poll`, or at the stage's deadline if that comes first,
/// so the deadline is acted on even when nothing else changes.
fn wait_active(
    status: StackableScalerStatus,
    input: &Input<'_>,
    poll: Duration,
    reason: impl Into<String>,
) -> Step {
    let left = stage_deadline(&status, &input.timeouts).and_then(|deadline| {
        std::time::Duration::try_from(deadline.duration_since(input.now)).ok()
    });
    let after = left.map_or(poll, |left| poll.min(left));
    wait(status, after, reason)
}

fn wait(status: StackableScalerStatus, after: Duration, reason: impl Into<String>) -> Step {
    Step {
        status,
        action: Action::Wait {
            after: Some(after),
            reason: reason.into(),
        },
        note: None,
    }
}

fn idle(input: &Input<'_>, mut status: StackableScalerStatus) -> Step {
    // In Idle, `/scale` status mirrors the workload, so the HPA sees the truth (and a change made
    // behind the scaler's back is undone through the hooks like any other).
    if let Some(workload) = input.workload {
        status.replicas = workload.replicas;
        if workload.selector.is_some() {
            status.selector.clone_from(&workload.selector);
        }
    }
    if input.spec_replicas == status.replicas {
        return Step {
            status,
            action: Action::Wait {
                after: None,
                reason: "idle: spec.replicas equals status.replicas".into(),
            },
            note: None,
        };
    }
    let previous = status.replicas;
    let desired = input.spec_replicas;
    status.previous_replicas = Some(previous);
    status.desired_replicas = Some(desired);
    status.scale_event = Some(status.scale_event.unwrap_or(0).saturating_add(1));
    status.current_state = Some(state(ScalerStage::PreScaling, input.now));
    let direction = if desired > previous { "up" } else { "down" };
    Step {
        status,
        action: Action::Continue,
        note: Some(Note {
            from: Some(ScalerStage::Idle),
            to: ScalerStage::PreScaling,
            reason: "ScalingStarted",
            message: format!("scaling {direction} from {previous} to {desired}"),
            warning: false,
        }),
    }
}

/// The hook context of the operation recorded in `status`, or why there is none.
pub fn context_of(
    name: &str,
    namespace: &str,
    status: &StackableScalerStatus,
) -> Result<ScalingContext, String> {
    let (Some(previous), Some(desired)) = (status.previous_replicas, status.desired_replicas)
    else {
        return Err("status lost the operation's previousReplicas/desiredReplicas".into());
    };
    let failure = status.current_state.as_ref().and_then(|s| {
        s.failed_in.map(|failed_in| FailureInfo {
            failed_in,
            reason: s.reason.clone().unwrap_or_default(),
        })
    });
    Ok(ScalingContext {
        scaler_name: name.to_owned(),
        namespace: namespace.to_owned(),
        previous_replicas: previous,
        desired_replicas: desired,
        scale_event: status.scale_event.unwrap_or(0),
        attempt: status.attempt.unwrap_or(0),
        failure,
        starts: false,
    })
}

/// The plan that asks `hook` about the operation in `context` (its start recorded: see
/// [`hook_due`]).
fn ask(status: StackableScalerStatus, hook: HookKind, context: ScalingContext) -> Step {
    Step {
        status,
        action: Action::RunHook { hook, context },
        note: None,
    }
}

/// The hook a status waits for, if any: `PreScaling`'s and `PostScaling`'s, and `onFailure`
/// while `Failed` says it is pending.
pub fn hook_due(status: Option<&StackableScalerStatus>) -> Option<HookKind> {
    let state = status?.current_state.as_ref()?;
    match state.stage {
        ScalerStage::PreScaling => Some(HookKind::PreScale),
        ScalerStage::PostScaling => Some(HookKind::PostScale),
        ScalerStage::Failed if state.failure_hook == Some(FailureHookState::Pending) => {
            Some(HookKind::OnFailure)
        }
        _ => None,
    }
}

/// The record of `status`'s due hook ([`hook_due`]) for its operation and attempt, as
/// `status.startedHook` holds it once the hook may start: the record `status` holds when it is
/// that one, else a new one made at `now`.
pub fn hook_record(
    name: &str,
    status: &StackableScalerStatus,
    now: Timestamp,
) -> Option<StartedHook> {
    let hook = hook_due(Some(status))?;
    let (scale_event, attempt) = (status.scale_event.unwrap_or(0), status.attempt.unwrap_or(0));
    if let Some(held) = &status.started_hook
        && held.hook == hook.as_str()
        && (held.scale_event, held.attempt) == (scale_event, attempt)
    {
        return Some(held.clone());
    }
    Some(StartedHook {
        hook: hook.as_str().to_owned(),
        scale_event,
        attempt,
        job: Some(hooks::job_name(name, hook, scale_event, attempt)),
        at: Some(to_k8s_time(now)),
    })
}

fn fail(
    input: &Input<'_>,
    mut status: StackableScalerStatus,
    failed_in: ScalerStage,
    reason: String,
) -> Step {
    status.current_state = Some(ScalerState {
        stage: ScalerStage::Failed,
        last_transition_time: Some(to_k8s_time(input.now)),
        failed_in: Some(failed_in),
        reason: Some(truncate(&reason, 4000)),
        failure_hook: Some(FailureHookState::Pending),
    });
    Step {
        status,
        action: Action::Continue,
        note: Some(Note {
            from: Some(failed_in),
            to: ScalerStage::Failed,
            reason: "ScalingFailed",
            message: format!("{} failed: {reason}", failed_in.as_str()),
            warning: true,
        }),
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn advance(
    input: &Input<'_>,
    mut status: StackableScalerStatus,
    from: ScalerStage,
    to: ScalerStage,
    reason: &'static str,
    message: String,
) -> Step {
    status.current_state = Some(state(to, input.now));
    Step {
        status,
        action: Action::Continue,
        note: Some(Note {
            from: Some(from),
            to,
            reason,
            message,
            warning: false,
        }),
    }
}

fn hook_stage(input: &Input<'_>, mut status: StackableScalerStatus, hook: HookKind) -> Step {
    let stage = hook.stage();
    let context = match context_of(input.name, input.namespace, &status) {
        Ok(context) => context,
        Err(why) => return fail(input, status, stage, why),
    };
    match input.hook {
        None => ask(status, hook, context),
        Some(Ok(HookOutcome::InProgress)) => match overdue(input, &status) {
            Some(limit) => fail(
                input,
                status,
                stage,
                format!(
                    "{} hook not done after {} (stage deadline): it still answered InProgress",
                    hook.as_str(),
                    human(limit)
                ),
            ),
            None => wait_active(
                status,
                input,
                HOOK_POLL,
                format!("{} hook in progress", hook.as_str()),
            ),
        },
        Some(Err(error)) => fail(
            input,
            status,
            stage,
            format!("{} hook: {error}", hook.as_str()),
        ),
        Some(Ok(HookOutcome::Done)) => match hook {
            HookKind::PreScale => advance(
                input,
                status,
                stage,
                ScalerStage::Scaling,
                "PreScaleDone",
                format!(
                    "pre-scale hook done; setting the workload to {} replicas",
                    context.desired_replicas
                ),
            ),
            _ => {
                status.replicas = context.desired_replicas;
                status.previous_replicas = None;
                status.desired_replicas = None;
                advance(
                    input,
                    status,
                    stage,
                    ScalerStage::Idle,
                    "ScalingDone",
                    format!(
                        "scaled from {} to {}",
                        context.previous_replicas, context.desired_replicas
                    ),
                )
            }
        },
    }
}

fn scaling(input: &Input<'_>, mut status: StackableScalerStatus) -> Step {
    let Some(desired) = status.desired_replicas else {
        return fail(
            input,
            status,
            ScalerStage::Scaling,
            "status lost the operation's desiredReplicas".into(),
        );
    };
    let Some(workload) = input.workload else {
        if let Some(limit) = overdue(input, &status) {
            return fail(
                input,
                status,
                ScalerStage::Scaling,
                format!(
                    "workload not observed within {} (stage deadline): it was to be scaled to {desired} replicas",
                    human(limit)
                ),
            );
        }
        return wait_active(
            status,
            input,
            MISSING_WORKLOAD_POLL,
            "the workload cannot be observed",
        );
    };
    // A workload that converged wins over a deadline reached in the same instant.
    if !workload.is_stable_at(desired)
        && let Some(limit) = overdue(input, &status)
    {
        let name = workload
            .reference
            .as_ref()
            .map_or_else(|| "the workload".to_owned(), |r| format!("workload {r}"));
        return fail(
            input,
            status,
            ScalerStage::Scaling,
            format!(
                "{name} not stable at {desired} replicas after {}: {}",
                human(limit),
                workload.unmet(desired)
            ),
        );
    }
    if workload.replicas != desired {
        return Step {
            status,
            action: Action::SetReplicas { to: desired },
            note: None,
        };
    }
    if !workload.is_stable_at(desired) {
        return wait_active(
            status,
            input,
            WORKLOAD_POLL,
            format!(
                "waiting for the workload: {} of {desired} pods ready, {} exist",
                workload.ready_replicas, workload.status_replicas
            ),
        );
    }
    status.replicas = desired;
    advance(
        input,
        status,
        ScalerStage::Scaling,
        ScalerStage::PostScaling,
        "WorkloadStable",
        format!("the workload is stable at {desired} replicas"),
    )
}

fn failed(input: &Input<'_>, mut status: StackableScalerStatus) -> Step {
    let hook_state = status.current_state.as_ref().and_then(|s| s.failure_hook);
    if hook_state == Some(FailureHookState::Pending) {
        let context = match context_of(input.name, input.namespace, &status) {
            Ok(context) => context,
            // Nothing to tell the hook about: there is no operation to clean up after.
            Err(_) => {
                set_failure_hook(&mut status, FailureHookState::Done);
                return Step {
                    status,
                    action: Action::Continue,
                    note: None,
                };
            }
        };
        return match input.hook {
            None => ask(status, HookKind::OnFailure, context),
            Some(Ok(HookOutcome::InProgress)) => wait(
                status,
                HOOK_POLL,
                if input.retry_requested {
                    "retry requested; waiting for the onfailure hook to finish first"
                } else {
                    "onfailure hook in progress"
                },
            ),
            Some(Ok(HookOutcome::Done)) => {
                set_failure_hook(&mut status, FailureHookState::Done);
                Step {
                    status,
                    action: Action::Continue,
                    note: Some(Note {
                        from: Some(ScalerStage::Failed),
                        to: ScalerStage::Failed,
                        reason: "FailureHookDone",
                        message: "onfailure hook done".into(),
                        warning: false,
                    }),
                }
            }
            Some(Err(error)) => {
                set_failure_hook(&mut status, FailureHookState::Failed);
                Step {
                    status,
                    action: Action::Continue,
                    note: Some(Note {
                        from: Some(ScalerStage::Failed),
                        to: ScalerStage::Failed,
                        reason: "FailureHookFailed",
                        message: format!("onfailure hook: {error}"),
                        warning: true,
                    }),
                }
            }
        };
    }
    if input.retry_requested {
        if let Some(workload) = input.workload {
            status.replicas = workload.replicas;
        }
        status.previous_replicas = None;
        status.desired_replicas = None;
        status.attempt = Some(status.attempt.unwrap_or(0).saturating_add(1));
        status.current_state = Some(state(ScalerStage::Idle, input.now));
        return Step {
            status,
            action: Action::StripRetryAnnotation,
            note: Some(Note {
                from: Some(ScalerStage::Failed),
                to: ScalerStage::Idle,
                reason: "Retried",
                message: format!("{RETRY_ANNOTATION} set: reset to Idle"),
                warning: false,
            }),
        };
    }
    Step {
        status,
        action: Action::Wait {
            after: None,
            reason: format!("failed; set the annotation {RETRY_ANNOTATION}=true to retry"),
        },
        note: None,
    }
}

fn set_failure_hook(status: &mut StackableScalerStatus, value: FailureHookState) {
    if let Some(state) = status.current_state.as_mut() {
        state.failure_hook = Some(value);
    }
}

/// Stamps the plan's status with conditions that mirror its stage and the observed generation.
fn finish(input: &Input<'_>, mut plan: Step) -> Step {
    if !is_initialized(Some(&plan.status)) {
        return plan;
    }
    // A hook's start is recorded with the status that makes it due (the stage change, saved
    // before the hook is first asked): a hook recorded is never started again for the same
    // operation and attempt, and the record costs no write of its own.
    if let Some(record) = hook_record(input.name, &plan.status, input.now) {
        plan.status.started_hook = Some(record);
    }
    for update in stage_conditions(&plan.status, input.generation) {
        set_condition(&mut plan.status.conditions, update, input.now);
    }
    plan.status.observed_generation = input.generation.or(plan.status.observed_generation);
    plan
}

/// The `Ready` / `Progressing` / `Failed` conditions for a status: `kubectl wait
/// --for=condition=Ready` waits for the end of an operation, `Failed=True` carries the failed stage
/// as its reason.
pub fn stage_conditions(
    status: &StackableScalerStatus,
    generation: Option<i64>,
) -> [ConditionUpdate; 3] {
    let state = status.current_state.clone().unwrap_or_default();
    let stage = state.stage;
    let operation = match (status.previous_replicas, status.desired_replicas) {
        (Some(previous), Some(desired)) => format!("from {previous} to {desired} replicas"),
        _ => "operation".to_owned(),
    };
    let (ready, progressing, failed) = match stage {
        ScalerStage::Idle => (
            ConditionUpdate::new(
                CONDITION_READY,
                true,
                "Idle",
                format!("idle at {} replicas", status.replicas),
            ),
            ConditionUpdate::new(
                CONDITION_PROGRESSING,
                false,
                "Idle",
                "no scaling operation in flight",
            ),
            ConditionUpdate::new(CONDITION_FAILED, false, "Idle", "no failure"),
        ),
        ScalerStage::PreScaling | ScalerStage::Scaling | ScalerStage::PostScaling => (
            ConditionUpdate::new(
                CONDITION_READY,
                false,
                stage.as_str(),
                format!("scaling {operation}"),
            ),
            ConditionUpdate::new(
                CONDITION_PROGRESSING,
                true,
                stage.as_str(),
                format!("{}: scaling {operation}", stage.as_str()),
            ),
            ConditionUpdate::new(CONDITION_FAILED, false, stage.as_str(), "no failure"),
        ),
        ScalerStage::Failed => {
            let failed_in = state.failed_in.unwrap_or(ScalerStage::Failed);
            let reason = state.reason.unwrap_or_default();
            (
                ConditionUpdate::new(
                    CONDITION_READY,
                    false,
                    "Failed",
                    format!(
                        "failed in {}; retry with {RETRY_ANNOTATION}=true",
                        failed_in.as_str()
                    ),
                ),
                ConditionUpdate::new(
                    CONDITION_PROGRESSING,
                    false,
                    "Failed",
                    format!("stopped: scaling {operation} failed"),
                ),
                ConditionUpdate::new(CONDITION_FAILED, true, failed_in.as_str(), reason),
            )
        }
    };
    [ready, progressing, failed].map(|c| c.observed_generation(generation))
}

mod opt_secs {
    use std::time::Duration;

    use serde::Serializer;

    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_some(&d.as_secs()),
            None => serializer.serialize_none(),
        }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
