//! The standalone controller: every StackableScaler owned by a StatefulSet or Deployment.
//!
//! [`decide::reads`] (the owning workload, unless the scaler's own state decides the pass) ->
//! read -> [`decide::decide`]: the pass is nothing (being deleted), a plan the executor carries
//! out (a pause, an owner that cannot be served, `--dry-run`'s intent from
//! [`crate::steps::preview`]), or the state machine's run -> [`scaler_pass`] (the step loop:
//! decide, persist, hooks as Jobs, set the workload's replicas) -> Events, metrics, cleanup of
//! finished hook Jobs.
//!
//! [`Own`]'s `Reconciler<StackableScaler>` runs in the shared frame ([`ebb_runtime::execute::frame`]):
//! the frame gives the span and reconcile metrics, keeps followers from writing, leaves a scaler
//! that does not deserialize alone, retries with per-scaler backoff (a scaler whose owner cannot be served
//! waits for a change), and reads the scaler again and re-runs the pass when any status write of
//! the pass meets a 409: the
//! pause, dry-run and invalid-owner conditions of this module, and the state machine's own writes
//! ([`scaler_pass`] ends at the conflict). The Events of stages the pass saved before the conflict
//! are recorded first; the [`HookLedger`] in [`Own`] keeps hook answers across passes, so a hook
//! that answered is not asked again.
//!
//! # Pause
//! `scaling.ebb.dev/paused: "true"` / `scaling.ebb.dev/paused-until: <RFC 3339>` count on the
//! StackableScaler *and* on the StatefulSet or Deployment that owns it (the pause annotations count
//! on every object ebb manages); one rule, [`decide::pause_decision`] (decide's, on the shared `pause_report`
//! of every ebb controller, applied to the scaler's status), serves both. While either is paused:
//! - nothing is written to the workload and no hook Job is created or deleted: the state machine
//!   does not run, so the stage does not advance, whatever it is (an operation in flight stays
//!   where it is; `spec.replicas` changes wait);
//! - only the scaler's `Paused` condition is written, naming the paused object and the annotation
//!   (the scaler's own pause is named when both are paused), with an Event when the pause starts
//!   or changes; an unparseable `paused-until` counts as paused (fail-safe);
//! - the reconcile is requeued at `paused-until`; an indefinite pause waits for a change (the
//!   scaler and workload watches bring it);
//! - a hook Job already running keeps running, and the stage deadline keeps counting wall-clock
//!   time from the stage's entry, but it is not acted on while paused. On resume the state
//!   machine runs as usual: a hook's answer or a converged workload wins, and only a stage still
//!   unfinished past its deadline fails (then `autoscaling.stackable.tech/retry` as for any
//!   failure). Pausing longer than a stage may last is a reason to raise
//!   `spec.stageTimeoutSeconds` first.

use std::sync::Arc;

use ebb_core::Requeue;
use ebb_crds::stackable::{ScalerStage, StackableScaler};
use ebb_runtime::execute::frame::{self, ReconcileError, Reconciler};
use ebb_runtime::time::from_k8s_time;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, ResourceExt};

pub use crate::decide::WorkloadKind;
use crate::decide::{self, Note, Observed, Pass, WorkloadState};
use crate::engine::{HookLedger, ScalerError, ScalingResult, resume, scaler_pass};
use crate::jobs::{JobHooks, JobTracker};
use crate::metrics::Metrics;
pub use crate::workload::WorkloadTarget;

/// Condition type recording what a dry run would do.
pub use crate::decide::CONDITION_DRY_RUN;
/// Condition type while paused (every controller's).
pub use ebb_runtime::pause::CONDITION_PAUSED;

/// The controller's own part of the frame's [`Context`].
pub struct Own {
    /// Stage durations, failures, current stages.
    pub metrics: Metrics,
    /// Hook answers not yet persisted.
    pub ledger: HookLedger,
    /// The ServiceAccounts hook Jobs may run as (`--hook-service-accounts`).
    pub hook_accounts: crate::hooks::HookAccounts,
    /// The hook Jobs as the Job watch holds them ([`crate::jobs::job_cache`]).
    pub jobs: ebb_runtime::watch::cache::Cache<Job>,
}

/// What a reconcile needs: the frame's context around [`Own`].
pub type Context = frame::Context<Own>;

/// The standalone controller, as the frame runs it ([`frame::run`]).
impl Reconciler<StackableScaler> for Own {
    type Error = Error;

    const NAME: &'static str = crate::CONTROLLER_NAME;

    async fn reconcile(scaler: Arc<StackableScaler>, ctx: &Context) -> Result<Requeue, Error> {
        // Boxed: the pass (state machine, hooks, writes) is a large future; on the heap it does
        // not overflow a small (test) thread's stack inside the frame's layers.
        Box::pin(reconcile(scaler, ctx)).await
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the workload failed.
    #[error("reading the workload: {0}")]
    Observe(#[source] kube::Error),
    /// The state machine failed (transient).
    #[error(transparent)]
    Scaler(#[from] ScalerError),
    /// A status-only plan (pause, dry run, invalid owner) or the resume met a conflict or
    /// failed, as the runtime's executor says; an owner that cannot be served ends the pass as
    /// [`frame::Failure::Invalid`], which waits for a change.
    #[error(transparent)]
    Write(#[from] frame::Failure),
}

impl ReconcileError for Error {
    /// Label for metrics and Events.
    fn category(&self) -> &'static str {
        match self {
            Error::Observe(_) => "observe",
            Error::Scaler(e) => e.category(),
            Error::Write(failure) => failure.category(),
        }
    }

    /// Invalid objects wait for a change (their condition says why); everything else is retried.
    fn is_transient(&self) -> bool {
        match self {
            Error::Write(failure) => failure.is_transient(),
            _ => true,
        }
    }

    /// A status write met a 409, of this module (pause, resume, dry run, invalid owner) or of the
    /// state machine ([`ScalerError::Conflict`]): the frame reads the scaler again and runs the
    /// pass again. Hook answers are in the ledger, so no hook is asked twice.
    fn is_conflict(&self) -> bool {
        match self {
            Error::Scaler(e) => e.is_conflict(),
            Error::Write(failure) => failure.is_conflict(),
            _ => false,
        }
    }
}

/// One reconcile of one scaler (the frame has checked leadership and routed malformed objects):
/// reads what [`decide::reads`] asks for, then does what [`decide::decide`] says the pass is.
pub async fn reconcile(scaler: Arc<StackableScaler>, ctx: &Context) -> Result<Requeue, Error> {
    let now = ctx.clock.now();
    let namespace = scaler.namespace().unwrap_or_default();
    let name = scaler.name_any();
    let reads = decide::reads(&scaler, now);
    let target = reads.workload.as_ref().map(|(kind, workload)| {
        WorkloadTarget::new(ctx.client.clone(), &namespace, *kind, workload)
    });
    let workload = match &target {
        Some(target) => target.read_workload().await.map_err(Error::Observe)?,
        None => None,
    };
    let observed = Observed {
        scaler: &scaler,
        workload: workload.as_ref().map(|(meta, state)| (meta, state)),
        dry_run: ctx.dry_run,
    };
    match decide::decide(&observed, now) {
        Pass::Forget => {
            ctx.own.metrics.forget(&namespace, &name);
            ctx.own.ledger.forget(&format!("{namespace}/{name}"));
            Ok(Requeue::AwaitChange)
        }
        Pass::Plan(plan) => execute(ctx, *plan).await,
        Pass::Run => match target {
            Some(target) => run(ctx, scaler, target, workload, now).await,
            // `Run` follows a read owner; without one the pass has nothing to drive.
            None => Ok(Requeue::AwaitChange),
        },
    }
}

/// The state machine's pass ([`scaler_pass`]) on the scaler, once resumed, then what follows it.
async fn run(
    ctx: &Context,
    scaler: Arc<StackableScaler>,
    target: WorkloadTarget,
    workload: Option<(ObjectMeta, WorkloadState)>,
    now: Timestamp,
) -> Result<Requeue, Error> {
    let namespace = scaler.namespace().unwrap_or_default();
    let api: Api<StackableScaler> = Api::namespaced(ctx.client.clone(), &namespace);
    let scaler = resume(&ctx.client, scaler).await?;
    target.remember(workload.map(|(_, state)| state));
    let tracker = JobTracker::new(
        Api::<Job>::namespaced(ctx.client.clone(), &namespace),
        ctx.own.hook_accounts.clone(),
    );
    let hooks = JobHooks {
        tracker: &tracker,
        scaler: &scaler,
        now,
    };
    let entered = scaler
        .status
        .as_ref()
        .and_then(|s| s.current_state.as_ref())
        .and_then(|s| s.last_transition_time.as_ref())
        .map(from_k8s_time);
    let pass = scaler_pass(&api, &scaler, &hooks, &target, &ctx.own.ledger, now).await;
    let (done, conflict) = match pass {
        Ok(done) => (done, None),
        Err(ScalerError::Conflict { done, source }) => (*done, Some(source)),
        Err(error) => return Err(error.into()),
    };
    // A pass that met a conflict still saved its earlier stages: their Events count.
    after_pass(ctx, &scaler, &tracker, &done, entered.unwrap_or(now), now).await;
    match conflict {
        None => Ok(done.action),
        Some(source) => Err(ScalerError::Conflict {
            done: Box::new(done),
            source,
        }
        .into()),
    }
}

/// What follows the state machine's pass (`done`): its Events, stage metrics and, after a
/// transition, the cleanup of older hook Jobs.
async fn after_pass(
    ctx: &Context,
    scaler: &StackableScaler,
    tracker: &JobTracker,
    done: &ScalingResult,
    entered: Timestamp,
    now: Timestamp,
) {
    // The saved steps' Events, recorded by the executor (decide says what each one is).
    if let Err(error) = execute(ctx, done.events(scaler)).await {
        tracing::warn!(%error, "recording the pass's Events failed");
    }
    let mut stage_entered = entered;
    for note in &done.notes {
        report(ctx, note, stage_entered, now);
        if note.is_transition() {
            stage_entered = now;
        }
    }
    ctx.own.metrics.set_stage(
        &scaler.namespace().unwrap_or_default(),
        &scaler.name_any(),
        done.condition.stage,
    );
    if done.notes.iter().any(Note::is_transition) {
        // A new operation (or a retry) makes older hook Jobs history.
        let uid = done.scaler.metadata.uid.as_deref().unwrap_or_default();
        let cleaned = match ctx.own.jobs.by_key(uid) {
            Ok(jobs) => tracker.cleanup(&done.scaler, &jobs).await,
            Err(cold) => Err(frame::Failure::from(cold)),
        };
        match cleaned {
            Ok(deleted) if !deleted.is_empty() => {
                tracing::info!(?deleted, "deleted finished hook Jobs")
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "cleaning up hook Jobs failed; trying after the next transition")
            }
        }
    }
}

/// A saved step's stage metrics and log line (its Event is the executor's).
fn report(ctx: &Context, note: &Note, stage_entered: Timestamp, now: Timestamp) {
    if let (Some(from), true) = (note.from, note.is_transition()) {
        let seconds = now.duration_since(stage_entered).as_secs_f64();
        ctx.own.metrics.observe_stage(from, seconds);
        if note.to == ScalerStage::Failed {
            ctx.own.metrics.record_failure(from);
        }
    }
    tracing::info!(reason = note.reason, from = ?note.from, to = ?note.to, "{}", note.message);
}

/// Hands a status-only plan to the runtime's executor.
async fn execute(ctx: &Context, plan: ebb_core::Plan<()>) -> Result<Requeue, Error> {
    Ok(ebb_runtime::execute::execute(plan, &ctx.shared, crate::FIELD_MANAGER, &()).await?)
}
