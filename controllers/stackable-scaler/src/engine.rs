//! The state machine driven against the API, for the standalone controller and for product
//! operators that embed it with their own hooks and their own [`ScaleTarget`].
//!
//! [`scaler_pass`] is one pass: observe the workload, then the step loop ([`crate::steps`]):
//! [`decide_step`](decide::decide_step), save the plan's status, act (ask a hook, set replicas, strip the retry or abort
//! annotation) and decide again, until the plan waits. Each step's writes are built by decide
//! ([`decide::step_writes`]) and sent by the runtime's executor
//! ([`ebb_runtime::execute::Writer`]), each naming the resourceVersion the step decided on. A
//! stage change is always saved before the next stage's hook is asked, so a hook is never
//! skipped. A conflict (a 409: the scaler changed since) ends the pass with
//! [`ScalerError::Conflict`], which carries what the pass did up to then (the Events of the
//! stages it saved): the caller reads the scaler again and runs another pass, as the shared
//! reconcile frame does for the controller, and as [`reconcile_scaler`] does for an embedding
//! operator. Answers of hooks (`Done` or an error)
//! are kept in a [`HookLedger`], so a status write that fails after a hook answered does not ask
//! the hook a second time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ebb_crds::stackable::{ScalerStage, StackableScaler, StackableScalerStatus, StartedHook};
use ebb_runtime::execute::Writer;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{Failure, MAX_ATTEMPTS, ReconcileError};
use jiff::Timestamp;
use kube::{Api, Client, ResourceExt};

use crate::decide::{self, Action, Note, Step, WorkloadState};
use crate::hooks::{HookKind, HookOutcome, HookResult, ScalingContext, ScalingHooks, call_hook};
use crate::steps::{self, World};
pub use crate::steps::{abort_requested, retry_requested};

/// Field manager of every write the state machine makes (`ebb-stackable-scaler`).
pub use crate::FIELD_MANAGER;

/// Requeue after [`reconcile_scaler`] gave up on conflicts.
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
    /// The API call failed. Not `transparent`: the answer itself stays in the chain of sources,
    /// where the frame finds a 429's `Retry-After`.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// A write the runtime's executor sent failed, or met a conflict (the workload changed since
    /// it was read: the pass ends as at a conflict of the scaler).
    #[error("{0}")]
    Write(#[from] Failure),
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
    /// A write to the scaler (its status, an annotation) failed, as the runtime's executor says.
    #[error(transparent)]
    Write(Failure),
    /// Observing the workload failed.
    #[error("observing the workload: {0}")]
    Observe(#[source] TargetError),
    /// Setting the workload's replicas failed.
    #[error("setting the workload's replicas: {0}")]
    SetReplicas(#[source] TargetError),
    /// The scaler has no name/namespace/uid (not from the API server).
    #[error("the StackableScaler has no {0}")]
    Metadata(&'static str),
    /// A write met a conflict: the scaler (or the workload) changed since it was read. `done`
    /// is what the pass did before (the stages it saved, as notes to record as Events; the hooks
    /// it asked); read the scaler again and run another pass.
    #[error("{source}")]
    Conflict {
        /// What the pass did up to the conflict (its `action` looks again in a second).
        done: Box<ScalingResult>,
        /// The executor's conflict.
        #[source]
        source: Failure,
    },
}

impl ScalerError {
    /// Short label for metrics and Events: the shared vocabulary of every ebb controller
    /// (`ebb_runtime::serve::metrics::ERROR_CATEGORIES`).
    pub fn category(&self) -> &'static str {
        match self {
            ScalerError::Read(_) | ScalerError::Observe(_) => "observe",
            ScalerError::Write(failure) => failure.category(),
            ScalerError::SetReplicas(TargetError::Write(failure)) => failure.category(),
            ScalerError::SetReplicas(_) => ebb_core::Category::Target.as_str(),
            ScalerError::Metadata(_) => "invalid_object",
            ScalerError::Conflict { .. } => "conflict",
        }
    }

    /// Whether the pass ended at a 409 ([`ScalerError::Conflict`]): read the scaler again and run
    /// another pass.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ScalerError::Conflict { .. })
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
    pub action: Requeue,
    /// Where the scaler is now.
    pub condition: ScalingCondition,
    /// What happened, in order (persisted stage changes and notable steps): Events to record.
    pub notes: Vec<Note>,
    /// Hooks asked in this pass, with their answers.
    pub hook_calls: Vec<(HookKind, HookResult)>,
    /// The scaler as last read or written.
    pub scaler: StackableScaler,
}

impl ScalingResult {
    /// The Events of the pass's saved steps, as a plan on `scaler` for the executor to record
    /// (decide says what each one is: [`decide::notes_plan`]).
    pub fn events(&self, scaler: &StackableScaler) -> ebb_core::Plan<()> {
        decide::notes_plan(scaler, &self.notes)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Operation {
    scale_event: i64,
    attempt: i64,
}

/// Answers hooks gave (`Done` or an error), per scaler and operation, so a hook whose answer could
/// not be persisted is not asked again within this process. Keeps only each scaler's current
/// operation, by `namespace/name` (so a scaler's deletion, seen by name, forgets it) and for its
/// uid (a scaler made again under the name starts afresh). Share one ledger across all passes
/// (it is `Sync`).
#[derive(Debug, Default)]
pub struct HookLedger {
    answers: Mutex<HashMap<String, (String, Answers)>>,
    /// Per scaler, the hook whose start this process wrote (or tried to write: the answer may
    /// have been lost) and has not asked since: its next ask may still start it.
    starting: Mutex<HashMap<String, (String, Operation, HookKind)>>,
}

/// One scaler's current operation and the answers its hooks gave.
type Answers = (Operation, HashMap<HookKind, HookResult>);

/// A scaler as the ledger knows it: `namespace/name` and uid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalerId {
    /// `namespace/name`.
    pub key: String,
    /// `metadata.uid`.
    pub uid: String,
}

impl HookLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, id: &ScalerId, op: &Operation, hook: HookKind) -> Option<HookResult> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        answers
            .get(&id.key)
            .filter(|(uid, (o, _))| *uid == id.uid && o == op)
            .and_then(|(_, (_, by_hook))| by_hook.get(&hook).cloned())
    }

    fn put(&self, id: &ScalerId, op: Operation, hook: HookKind, answer: HookResult) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = answers
            .entry(id.key.clone())
            .or_insert_with(|| (id.uid.clone(), (op.clone(), HashMap::new())));
        if entry.0 != id.uid || entry.1.0 != op {
            *entry = (id.uid.clone(), (op, HashMap::new()));
        }
        entry.1.1.insert(hook, answer);
    }

    /// Notes that this process is writing the start of `hook` of operation `op`.
    fn mark_starting(&self, id: &ScalerId, op: Operation, hook: HookKind) {
        self.starting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.key.clone(), (id.uid.clone(), op, hook));
    }

    /// Whether this process wrote the start of `hook` of `op` and has not asked it since; the
    /// note is used up.
    fn take_starting(&self, id: &ScalerId, op: &Operation, hook: HookKind) -> bool {
        let mut starting = self.starting.lock().unwrap_or_else(PoisonError::into_inner);
        match starting.get(&id.key) {
            Some((uid, o, h)) if *uid == id.uid && o == op && *h == hook => {
                starting.remove(&id.key).is_some()
            }
            _ => false,
        }
    }

    /// Forgets the scaler `namespace/name` (call when it is deleted or gone).
    pub fn forget(&self, key: &str) {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        self.starting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// How many scalers it holds anything for (for tests).
    pub fn scalers(&self) -> usize {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let starting = self.starting.lock().unwrap_or_else(PoisonError::into_inner);
        answers
            .keys()
            .chain(starting.keys().filter(|k| !answers.contains_key(*k)))
            .count()
    }
}

fn operation_of(status: Option<&StackableScalerStatus>) -> Operation {
    Operation {
        scale_event: status.and_then(|s| s.scale_event).unwrap_or(0),
        attempt: status.and_then(|s| s.attempt).unwrap_or(0),
    }
}

/// Drives one scaler as far as it can go now, absorbing conflicts: passes of [`scaler_pass`],
/// reading the scaler again after each 409, at most [`MAX_ATTEMPTS`] passes (then it gives up and
/// asks to be requeued in a second). The result holds the notes and hook calls of every pass, in
/// order. This is the call for an operator that embeds the library; a controller that itself reads
/// the object again and re-runs on a conflict (as ebb's reconcile frame does) calls
/// [`scaler_pass`] instead.
pub async fn reconcile_scaler<H: ScalingHooks, T: ScaleTarget>(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    hooks: &H,
    target: &T,
    ledger: &HookLedger,
    now: Timestamp,
) -> Result<ScalingResult, ScalerError> {
    let mut current = scaler.clone();
    let mut notes = Vec::new();
    let mut hook_calls = Vec::new();
    let mut attempt = 1;
    loop {
        match scaler_pass(api, &current, hooks, target, ledger, now).await {
            Ok(mut result) => {
                notes.append(&mut result.notes);
                hook_calls.append(&mut result.hook_calls);
                return Ok(ScalingResult {
                    notes,
                    hook_calls,
                    ..result
                });
            }
            Err(ScalerError::Conflict { mut done, .. }) => {
                notes.append(&mut done.notes);
                hook_calls.append(&mut done.hook_calls);
                if attempt == MAX_ATTEMPTS {
                    return Ok(ScalingResult {
                        notes,
                        hook_calls,
                        ..*done
                    });
                }
                current = api
                    .get(&done.scaler.name_any())
                    .await
                    .map_err(ScalerError::Read)?;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// One pass of one scaler (see the module docs); a 409 on a status write ends it with
/// [`ScalerError::Conflict`], holding what the pass did up to then. Any other error ends it too
/// (retry later: hook answers are in the ledger).
pub async fn scaler_pass<H: ScalingHooks, T: ScaleTarget>(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    hooks: &H,
    target: &T,
    ledger: &HookLedger,
    now: Timestamp,
) -> Result<ScalingResult, ScalerError> {
    let uid = scaler
        .metadata
        .uid
        .clone()
        .ok_or(ScalerError::Metadata("uid"))?;
    let Some(name) = scaler.metadata.name.as_deref() else {
        return Err(ScalerError::Metadata("name"));
    };
    let id = ScalerId {
        key: format!(
            "{}/{name}",
            scaler.metadata.namespace.as_deref().unwrap_or_default()
        ),
        uid,
    };
    let workload = target.observe().await.map_err(ScalerError::Observe)?;
    let client: Client = api.clone().into();
    let mut cluster = Cluster {
        writer: Writer::new(&client, FIELD_MANAGER),
        hooks,
        target,
        ledger,
        id,
        current: scaler.clone(),
        fresh: None,
        hook_calls: Vec::new(),
    };
    let steps = steps::run(&mut cluster, workload.as_ref(), now).await;
    let (action, waiting, conflict) = match steps.end {
        Ok(plan) => {
            let (action, waiting) = requeue_after(plan);
            (action, waiting, None)
        }
        Err(Halt::Conflict(source)) => (Requeue::After(CONFLICT_REQUEUE), None, Some(source)),
        Err(Halt::Failed(error)) => return Err(error),
    };
    let done = result(
        cluster.current,
        action,
        waiting.as_deref(),
        steps.notes,
        cluster.hook_calls,
    );
    match conflict {
        None => Ok(done),
        Some(source) => Err(ScalerError::Conflict {
            done: Box::new(done),
            source,
        }),
    }
}

/// When to look again after a pass that ended at `plan`, and what it waits for.
fn requeue_after(plan: Option<Step>) -> (Requeue, Option<String>) {
    match plan.map(|plan| plan.action) {
        Some(Action::Wait { after, reason }) => (
            after.map_or(Requeue::AwaitChange, Requeue::After),
            Some(reason),
        ),
        // The workload was resized: its watch usually brings us back sooner.
        Some(Action::SetReplicas { .. }) => (Requeue::After(decide::WORKLOAD_POLL), None),
        // Out of steps: go on at once.
        _ => (Requeue::After(Duration::ZERO), None),
    }
}

/// Why a step against the cluster ended the pass.
enum Halt {
    /// A write met a conflict.
    Conflict(Failure),
    /// Anything else.
    Failed(ScalerError),
}

impl Halt {
    /// A failed write to the scaler.
    fn of(failure: Failure) -> Self {
        match failure.is_conflict() {
            true => Self::Conflict(failure),
            false => Self::Failed(ScalerError::Write(failure)),
        }
    }
}

/// The world of a [`scaler_pass`]: status writes, the hooks (their answers kept in the ledger), the
/// workload.
struct Cluster<'a, H, T> {
    writer: Writer<'a>,
    hooks: &'a H,
    target: &'a T,
    ledger: &'a HookLedger,
    id: ScalerId,
    /// The scaler as last read or written.
    current: StackableScaler,
    /// An InProgress answer is not kept in the ledger (the hook is polled), but it is the answer
    /// for the rest of this pass.
    fresh: Option<(Operation, HookKind, HookResult)>,
    /// Hooks asked in this pass, with their answers.
    hook_calls: Vec<(HookKind, HookResult)>,
}

impl<H: ScalingHooks, T: ScaleTarget> World for Cluster<'_, H, T> {
    type Error = Halt;

    fn scaler(&self) -> &StackableScaler {
        &self.current
    }

    fn answer(&self, hook: HookKind) -> Option<HookResult> {
        let op = operation_of(self.current.status.as_ref());
        self.ledger.get(&self.id, &op, hook).or_else(|| {
            self.fresh
                .as_ref()
                .filter(|(o, h, _)| *o == op && *h == hook)
                .map(|(_, _, answer)| answer.clone())
        })
    }

    fn will_record(&mut self, record: &StartedHook) {
        if let Some(hook) = HookKind::parse(&record.hook) {
            let op = Operation {
                scale_event: record.scale_event,
                attempt: record.attempt,
            };
            self.ledger.mark_starting(&self.id, op, hook);
        }
    }

    fn may_start(&mut self, hook: HookKind, context: &ScalingContext) -> bool {
        let op = Operation {
            scale_event: context.scale_event,
            attempt: context.attempt,
        };
        self.ledger.take_starting(&self.id, &op, hook)
    }

    async fn write(&mut self, writes: &[ebb_core::Write]) -> Result<(), Halt> {
        for write in writes {
            self.send(write).await?;
        }
        Ok(())
    }

    async fn ask(&mut self, hook: HookKind, context: &ScalingContext) -> Result<bool, Halt> {
        let op = operation_of(self.current.status.as_ref());
        let answer = call_hook(self.hooks, hook, context).await;
        self.hook_calls.push((hook, answer.clone()));
        if answer != Ok(HookOutcome::InProgress) {
            self.ledger.put(&self.id, op.clone(), hook, answer.clone());
        }
        self.fresh = Some((op, hook, answer));
        Ok(true)
    }

    async fn resize(&mut self, replicas: i32) -> Result<(), Halt> {
        match self.target.set_replicas(replicas).await {
            Ok(()) => Ok(()),
            Err(TargetError::Write(failure)) if failure.is_conflict() => {
                Err(Halt::Conflict(failure))
            }
            Err(error) => Err(Halt::Failed(ScalerError::SetReplicas(error))),
        }
    }
}

impl<H, T> Cluster<'_, H, T> {
    /// Sends a write to the scaler; the scaler as written is what the next step decides on.
    async fn send(&mut self, write: &ebb_core::Write) -> Result<(), Halt> {
        match self.writer.write_as::<StackableScaler>(write).await {
            Ok(Some(written)) => {
                self.current = written;
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(failure) => Err(Halt::of(failure)),
        }
    }
}

fn result(
    scaler: StackableScaler,
    action: Requeue,
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

/// Resuming (or never paused): drops the `Paused` condition ([`decide::resume_write`]),
/// returning the scaler as written.
///
/// # Errors
/// The write's [`Failure`] (a 409 sends the frame to read again).
pub async fn resume(
    client: &Client,
    scaler: Arc<StackableScaler>,
) -> Result<Arc<StackableScaler>, Failure> {
    let Some(write) = decide::resume_write(&scaler) else {
        return Ok(scaler);
    };
    let written = Writer::new(client, FIELD_MANAGER)
        .write_as::<StackableScaler>(&write)
        .await?;
    Ok(written.map_or(scaler, Arc::new))
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
