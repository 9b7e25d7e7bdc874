//! [`reconcile_scaler`]: the state machine driven against the API, for the standalone controller
//! and for product operators that embed it with their own hooks and their own [`ScaleTarget`].
//!
//! One pass: observe the workload, [`decide`], persist the plan's status (a merge patch carrying
//! the scaler's `resourceVersion`), then act (ask a hook, set replicas, strip the retry or abort
//! annotation) and decide again, until the plan waits. A stage change is always persisted before
//! the next stage's hook is asked, so a hook is never skipped; a 409 re-reads the scaler and decides
//! again. Answers of hooks (`Done` or an error) are kept in a [`HookLedger`], so a status write
//! that fails after a hook answered does not ask the hook a second time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use ebb_crds::stackable::{FailureHookState, ScalerStage, StackableScaler, StackableScalerStatus};
use ebb_runtime::patch::merge_diff;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action as RequeueAction;
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::decide::{
    self, ABORT_ANNOTATION, Action, Input, Note, RETRY_ANNOTATION, StageTimeouts, WorkloadState,
};
use crate::hooks::{HookKind, HookOutcome, HookResult, ScalingHooks, call_hook};

/// Field manager of every write the state machine makes (`ebb-stackable-scaler`).
pub use crate::FIELD_MANAGER;

/// How many decide/persist/act steps one pass may take (a full operation without waits is ~6).
const MAX_STEPS: usize = 16;
/// How many 409s one pass absorbs before it gives up and requeues.
const MAX_CONFLICTS: usize = 3;
/// Requeue after a pass gave up on conflicts.
const CONFLICT_REQUEUE: Duration = Duration::from_secs(1);

/// The workload being scaled, as the embedding operator sees it.
pub trait ScaleTarget: Send + Sync {
    /// The workload now; `Ok(None)` when it does not exist (yet).
    fn observe(&self) -> impl Future<Output = Result<Option<WorkloadState>, TargetError>> + Send;

    /// Sets the workload's replicas (idempotent: called again with the same value until stable).
    fn set_replicas(&self, replicas: i32) -> impl Future<Output = Result<(), TargetError>> + Send;
}

/// A [`ScaleTarget`] failed.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The API call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Why a pass failed (transient: retry with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ScalerError {
    /// Reading the scaler again after a conflict failed.
    #[error("re-reading the StackableScaler: {0}")]
    Read(#[source] kube::Error),
    /// Writing status failed.
    #[error("writing StackableScaler status: {0}")]
    WriteStatus(#[source] kube::Error),
    /// Removing the retry or abort annotation failed.
    #[error("removing the {annotation} annotation: {source}")]
    StripAnnotation {
        /// Which annotation.
        annotation: &'static str,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Observing the workload failed.
    #[error("observing the workload: {0}")]
    Observe(#[source] TargetError),
    /// Setting the workload's replicas failed.
    #[error("setting the workload's replicas: {0}")]
    SetReplicas(#[source] TargetError),
    /// The scaler has no name/namespace/uid (not from the API server).
    #[error("the StackableScaler has no {0}")]
    Metadata(&'static str),
    /// Serializing a patch failed (a bug).
    #[error("serializing a patch: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl ScalerError {
    /// Short label for metrics and Events.
    pub fn category(&self) -> &'static str {
        match self {
            ScalerError::Read(_) => "read",
            ScalerError::WriteStatus(_) => "write_status",
            ScalerError::StripAnnotation { .. } => "strip_annotation",
            ScalerError::Observe(_) => "observe",
            ScalerError::SetReplicas(_) => "set_replicas",
            ScalerError::Metadata(_) => "invalid",
            ScalerError::Serialize(_) => "internal",
        }
    }
}

/// A summary of where a scaler is, for the embedding operator's own status (one condition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalingCondition {
    /// The stage.
    pub stage: ScalerStage,
    /// Idle.
    pub ready: bool,
    /// An operation is in flight.
    pub progressing: bool,
    /// Failed (until retried).
    pub failed: bool,
    /// CamelCase reason (the stage, or the failed stage).
    pub reason: String,
    /// Human message.
    pub message: String,
}

impl ScalingCondition {
    fn of(status: &StackableScalerStatus, waiting: Option<&str>) -> Self {
        let stage = decide::stage_of(Some(status));
        let state = status.current_state.clone().unwrap_or_default();
        let (reason, message) = match stage {
            ScalerStage::Failed => (
                state
                    .failed_in
                    .unwrap_or(ScalerStage::Failed)
                    .as_str()
                    .to_owned(),
                state.reason.unwrap_or_default(),
            ),
            _ => (
                stage.as_str().to_owned(),
                waiting.unwrap_or_default().to_owned(),
            ),
        };
        Self {
            stage,
            ready: stage == ScalerStage::Idle,
            progressing: stage.is_active(),
            failed: stage == ScalerStage::Failed,
            reason,
            message,
        }
    }
}

/// What one pass did.
#[derive(Clone, Debug)]
pub struct ScalingResult {
    /// When to look again.
    pub action: RequeueAction,
    /// Where the scaler is now.
    pub condition: ScalingCondition,
    /// What happened, in order (persisted stage changes and notable steps): Events to record.
    pub notes: Vec<Note>,
    /// Hooks asked in this pass, with their answers.
    pub hook_calls: Vec<(HookKind, HookResult)>,
    /// The scaler as last read or written.
    pub scaler: StackableScaler,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Operation {
    scale_event: i64,
    attempt: i64,
}

/// Answers hooks gave (`Done` or an error), per scaler and operation, so a hook whose answer could
/// not be persisted is not asked again within this process. Keeps only each scaler's current
/// operation. Share one ledger across all passes (it is `Sync`).
#[derive(Debug, Default)]
pub struct HookLedger {
    answers: Mutex<HashMap<String, Answers>>,
}

/// One scaler's current operation and the answers its hooks gave.
type Answers = (Operation, HashMap<HookKind, HookResult>);

impl HookLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, uid: &str, op: &Operation, hook: HookKind) -> Option<HookResult> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        answers
            .get(uid)
            .filter(|(o, _)| o == op)
            .and_then(|(_, by_hook)| by_hook.get(&hook).cloned())
    }

    fn put(&self, uid: &str, op: Operation, hook: HookKind, answer: HookResult) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = answers
            .entry(uid.to_owned())
            .or_insert_with(|| (op.clone(), HashMap::new()));
        if entry.0 != op {
            *entry = (op, HashMap::new());
        }
        entry.1.insert(hook, answer);
    }

    /// Forgets a scaler (call when it is deleted).
    pub fn forget(&self, uid: &str) {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uid);
    }
}

/// The hook the recorded stage waits for, if any.
fn pending_hook(status: Option<&StackableScalerStatus>) -> Option<HookKind> {
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

fn operation_of(status: Option<&StackableScalerStatus>) -> Operation {
    Operation {
        scale_event: status.and_then(|s| s.scale_event).unwrap_or(0),
        attempt: status.and_then(|s| s.attempt).unwrap_or(0),
    }
}

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

/// Drives one scaler as far as it can go now. See the module docs.
pub async fn reconcile_scaler<H: ScalingHooks, T: ScaleTarget>(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    hooks: &H,
    target: &T,
    ledger: &HookLedger,
    now: DateTime<Utc>,
) -> Result<ScalingResult, ScalerError> {
    let uid = scaler
        .metadata
        .uid
        .clone()
        .ok_or(ScalerError::Metadata("uid"))?;
    let name = scaler
        .metadata
        .name
        .clone()
        .ok_or(ScalerError::Metadata("name"))?;
    let mut current = scaler.clone();
    let workload = target.observe().await.map_err(ScalerError::Observe)?;
    let mut notes = Vec::new();
    let mut hook_calls = Vec::new();
    let mut conflicts = 0;
    // An InProgress answer is not kept in the ledger (the hook is polled), but it is the answer
    // for the rest of this pass.
    let mut fresh: Option<(Operation, HookKind, HookResult)> = None;

    for _ in 0..MAX_STEPS {
        let op = operation_of(current.status.as_ref());
        let hook_answer = pending_hook(current.status.as_ref()).and_then(|hook| {
            ledger.get(&uid, &op, hook).or_else(|| {
                fresh
                    .as_ref()
                    .filter(|(o, h, _)| *o == op && *h == hook)
                    .map(|(_, _, answer)| answer.clone())
            })
        });
        let plan = decide::decide(&Input {
            name: &name,
            namespace: current.metadata.namespace.as_deref().unwrap_or_default(),
            generation: current.metadata.generation,
            spec_replicas: current.spec.replicas,
            status: current.status.as_ref(),
            retry_requested: retry_requested(&current),
            abort_requested: abort_requested(&current),
            timeouts: StageTimeouts::of(&current.spec),
            workload: workload.as_ref(),
            hook: hook_answer.as_ref(),
            now,
        });

        if current.status.clone().unwrap_or_default() != plan.status {
            match write_status(api, &current, &plan.status).await {
                Ok(written) => current = written,
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    conflicts += 1;
                    if conflicts > MAX_CONFLICTS {
                        return Ok(result(
                            current,
                            RequeueAction::requeue(CONFLICT_REQUEUE),
                            None,
                            notes,
                            hook_calls,
                        ));
                    }
                    current = api.get(&name).await.map_err(ScalerError::Read)?;
                    continue;
                }
                Err(e) => return Err(ScalerError::WriteStatus(e)),
            }
        }
        // Only what is persisted is reported.
        notes.extend(plan.note);

        match plan.action {
            Action::Continue => {}
            Action::StripRetryAnnotation => {
                current = strip_annotation(api, &name, RETRY_ANNOTATION).await?;
            }
            Action::StripAbortAnnotation => {
                current = strip_annotation(api, &name, ABORT_ANNOTATION).await?;
            }
            Action::RunHook { hook, context } => {
                let answer = call_hook(hooks, hook, &context).await;
                hook_calls.push((hook, answer.clone()));
                if answer != Ok(HookOutcome::InProgress) {
                    ledger.put(&uid, op.clone(), hook, answer.clone());
                }
                fresh = Some((op, hook, answer));
            }
            Action::SetReplicas { to } => {
                target
                    .set_replicas(to)
                    .await
                    .map_err(ScalerError::SetReplicas)?;
                // The workload's watch usually brings us back sooner.
                return Ok(result(
                    current,
                    RequeueAction::requeue(decide::WORKLOAD_POLL),
                    None,
                    notes,
                    hook_calls,
                ));
            }
            Action::Wait { after, reason } => {
                let action = after.map_or_else(RequeueAction::await_change, RequeueAction::requeue);
                return Ok(result(current, action, Some(&reason), notes, hook_calls));
            }
        }
    }
    Ok(result(
        current,
        RequeueAction::requeue(Duration::ZERO),
        None,
        notes,
        hook_calls,
    ))
}

async fn strip_annotation(
    api: &Api<StackableScaler>,
    name: &str,
    annotation: &'static str,
) -> Result<StackableScaler, ScalerError> {
    let patch = json!({"metadata": {"annotations": {annotation: null}}});
    api.patch(name, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(|source| ScalerError::StripAnnotation { annotation, source })
}

fn result(
    scaler: StackableScaler,
    action: RequeueAction,
    waiting: Option<&str>,
    notes: Vec<Note>,
    hook_calls: Vec<(HookKind, HookResult)>,
) -> ScalingResult {
    let status = scaler.status.clone().unwrap_or_default();
    ScalingResult {
        action,
        condition: ScalingCondition::of(&status, waiting),
        notes,
        hook_calls,
        scaler,
    }
}

/// Writes `status` as a merge patch against what `scaler` holds, with its resourceVersion as a
/// precondition (a concurrent change is a 409, never a lost update).
pub async fn write_status(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    status: &StackableScalerStatus,
) -> Result<StackableScaler, kube::Error> {
    let old = serde_json::to_value(scaler.status.clone().unwrap_or_default())
        .map_err(kube::Error::SerdeError)?;
    let new = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    let patch = json!({
        "metadata": {"resourceVersion": scaler.resource_version()},
        "status": merge_diff(&old, &new),
    });
    api.patch_status(&scaler.name_any(), &patch_params(), &Patch::Merge(&patch))
        .await
}

/// Merge patches carry the field manager (only apply patches may set `force`).
pub fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
