//! The standalone controller: every StackableScaler owned by a StatefulSet or Deployment.
//!
//! observe (the owning workload) -> [`reconcile_scaler`] (decide, persist, hooks as Jobs, set the
//! workload's replicas) -> Events, metrics, cleanup of finished hook Jobs. Pause annotations,
//! `--dry-run` and leader election are honoured here, before anything is written.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ebb_crds::stackable::{ScalerStage, StackableScaler, StackableScalerStatus};
use ebb_runtime::conditions::{ConditionUpdate, find_condition, remove_condition, set_condition};
use ebb_runtime::events::{EventKind, EventSink};
use ebb_runtime::guard;
use ebb_runtime::pause::{PauseState, pause_state};
use ebb_runtime::time::from_k8s_time;
use ebb_runtime::{Clock, ErrorBackoff, Leader, object_key};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::Patch;
use kube::core::{DeserializeGuard, Selector};
use kube::runtime::controller::Action;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::decide::{self, Note, WorkloadState};
use crate::engine::{
    HookLedger, ScaleTarget, ScalerError, TargetError, patch_params, reconcile_scaler, write_status,
};
use crate::jobs::{JobHooks, JobTracker};
use crate::metrics::ScalerMetrics;

/// Condition type while paused.
pub const CONDITION_PAUSED: &str = "Paused";
/// Condition type recording what a dry run would do.
pub const CONDITION_DRY_RUN: &str = "DryRun";
/// Requeue while another replica leads.
const FOLLOWER_REQUEUE: Duration = Duration::from_secs(15);

/// What a reconcile needs.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// Now.
    pub clock: Arc<dyn Clock>,
    /// Stage durations, failures, current stages.
    pub metrics: ScalerMetrics,
    /// Where Events go.
    pub events: Arc<dyn EventSink>,
    /// Decide and report, write nothing but the DryRun condition and an Event.
    pub dry_run: bool,
    /// Writes only while leading.
    pub leader: Leader,
    /// Hook answers not yet persisted.
    pub ledger: HookLedger,
    /// Consecutive transient failures per scaler, for the retry delay.
    pub backoff: ErrorBackoff,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scaler cannot be served as it is (no StatefulSet/Deployment owner): waits for a change.
    #[error("invalid StackableScaler: {0}")]
    Invalid(String),
    /// Reading the workload failed.
    #[error("reading the workload: {0}")]
    Observe(#[source] kube::Error),
    /// The state machine failed (transient).
    #[error(transparent)]
    Scaler(#[from] ScalerError),
    /// Writing a pause/dry-run/invalid condition failed.
    #[error("writing status: {0}")]
    WriteStatus(#[source] kube::Error),
}

impl Error {
    /// Label for metrics and Events.
    pub fn category(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::Observe(_) => "observe",
            Error::Scaler(e) => e.category(),
            Error::WriteStatus(_) => "write_status",
        }
    }
}

/// Invalid objects wait for a change (their condition says why); everything else is retried.
pub fn error_policy(scaler: Arc<StackableScaler>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = object_key(scaler.as_ref());
    tracing::warn!(scaler = %key, %error, category = error.category(), "reconcile failed");
    match error {
        Error::Invalid(_) => Action::await_change(),
        _ => Action::requeue(ctx.backoff.failed(&key)),
    }
}

/// The controller's entry point: a StackableScaler that does not deserialize is logged and left
/// alone until it changes, and every other scaler is served as usual.
pub async fn reconcile_guarded(
    scaler: Arc<DeserializeGuard<StackableScaler>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    guard::reconcile(scaler, ctx, |scaler, ctx| async move {
        let key = object_key(scaler.as_ref());
        let action = reconcile(scaler, ctx.clone()).await?;
        ctx.backoff.succeeded(&key);
        Ok(action)
    })
    .await
}

/// [`error_policy`] for the guarded entry point.
pub fn error_policy_guarded(
    scaler: Arc<DeserializeGuard<StackableScaler>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    guard::error_policy(scaler, error, ctx, error_policy)
}

/// The kind of workload that owns a scaler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` Deployment.
    Deployment,
}

/// The workload a scaler belongs to, from its owner references.
pub fn owning_workload(scaler: &StackableScaler) -> Result<(WorkloadKind, String), Error> {
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
        (Some(_), n) => Err(Error::Invalid(format!(
            "{n} apps/v1 StatefulSet/Deployment owner references and none is the controller; mark one `controller: true`"
        ))),
        (None, _) => Err(Error::Invalid(
            "no owner reference to an apps/v1 StatefulSet or Deployment: the standalone controller scales the workload that owns the scaler".into(),
        )),
    }
}

fn selector_string(selector: Option<&LabelSelector>) -> Option<String> {
    let selector = Selector::try_from(selector?.clone()).ok()?;
    Some(selector.to_string())
}

/// The owning StatefulSet or Deployment as a [`ScaleTarget`].
pub struct WorkloadTarget {
    client: Client,
    namespace: String,
    kind: WorkloadKind,
    name: String,
}

impl WorkloadTarget {
    /// The workload `kind`/`name` in `namespace`.
    pub fn new(client: Client, namespace: &str, kind: WorkloadKind, name: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            kind,
            name: name.to_owned(),
        }
    }

    async fn observe_workload(&self) -> Result<Option<WorkloadState>, kube::Error> {
        Ok(match self.kind {
            WorkloadKind::StatefulSet => {
                let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(&self.name).await?.map(|s| {
                    let spec = s.spec.unwrap_or_default();
                    let status = s.status.unwrap_or_default();
                    WorkloadState {
                        replicas: spec.replicas.unwrap_or(1),
                        status_replicas: status.replicas,
                        ready_replicas: status.ready_replicas.unwrap_or(0),
                        generation: s.metadata.generation,
                        observed_generation: status.observed_generation,
                        selector: selector_string(Some(&spec.selector)),
                        reference: Some(format!("StatefulSet/{}", self.name)),
                    }
                })
            }
            WorkloadKind::Deployment => {
                let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(&self.name).await?.map(|d| {
                    let spec = d.spec.unwrap_or_default();
                    let status = d.status.unwrap_or_default();
                    WorkloadState {
                        replicas: spec.replicas.unwrap_or(1),
                        status_replicas: status.replicas.unwrap_or(0),
                        ready_replicas: status.ready_replicas.unwrap_or(0),
                        generation: d.metadata.generation,
                        observed_generation: status.observed_generation,
                        selector: selector_string(Some(&spec.selector)),
                        reference: Some(format!("Deployment/{}", self.name)),
                    }
                })
            }
        })
    }
}

impl ScaleTarget for WorkloadTarget {
    async fn observe(&self) -> Result<Option<WorkloadState>, TargetError> {
        Ok(self.observe_workload().await?)
    }

    async fn set_replicas(&self, replicas: i32) -> Result<(), TargetError> {
        let patch = json!({"spec": {"replicas": replicas}});
        match self.kind {
            WorkloadKind::StatefulSet => {
                let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &self.namespace);
                api.patch(&self.name, &patch_params(), &Patch::Merge(&patch))
                    .await?;
            }
            WorkloadKind::Deployment => {
                let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
                api.patch(&self.name, &patch_params(), &Patch::Merge(&patch))
                    .await?;
            }
        }
        tracing::info!(workload = %self.name, replicas, "set workload replicas");
        Ok(())
    }
}

/// Writes `status` if it differs from the scaler's (compare before writing).
async fn write_if_changed(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    status: StackableScalerStatus,
) -> Result<(), Error> {
    if scaler.status.clone().unwrap_or_default() == status {
        return Ok(());
    }
    write_status(api, scaler, &status)
        .await
        .map_err(Error::WriteStatus)?;
    Ok(())
}

async fn record(
    ctx: &Context,
    scaler: &StackableScaler,
    kind: EventKind,
    reason: &str,
    action: &str,
    note: &str,
) {
    let reference = scaler.object_ref(&());
    ctx.events
        .record(&reference, kind, reason, action, note)
        .await;
}

/// One reconcile of one scaler.
pub async fn reconcile(scaler: Arc<StackableScaler>, ctx: Arc<Context>) -> Result<Action, Error> {
    let now = ctx.clock.now();
    let namespace = scaler.namespace().unwrap_or_default();
    let name = scaler.name_any();
    let api: Api<StackableScaler> = Api::namespaced(ctx.client.clone(), &namespace);
    if scaler.metadata.deletion_timestamp.is_some() {
        ctx.metrics.forget(&namespace, &name);
        if let Some(uid) = scaler.uid() {
            ctx.ledger.forget(&uid);
        }
        return Ok(Action::await_change());
    }
    if !ctx.leader.is_leader() {
        return Ok(Action::requeue(FOLLOWER_REQUEUE));
    }

    let pause = pause_state(&scaler.metadata, now);
    if pause.is_paused() {
        return paused(&api, &scaler, &pause, now).await;
    }
    // Resuming: drop the Paused condition, then carry on with the written object.
    let scaler = match &scaler.status {
        Some(status) if find_condition(&status.conditions, CONDITION_PAUSED).is_some() => {
            let mut status = status.clone();
            remove_condition(&mut status.conditions, CONDITION_PAUSED);
            Arc::new(
                write_status(&api, &scaler, &status)
                    .await
                    .map_err(Error::WriteStatus)?,
            )
        }
        _ => scaler,
    };

    let (kind, workload_name) = match owning_workload(&scaler) {
        Ok(found) => found,
        Err(error) => {
            invalid(&ctx, &api, &scaler, &error, now).await?;
            return Err(error);
        }
    };
    let target = WorkloadTarget::new(ctx.client.clone(), &namespace, kind, &workload_name);

    if ctx.dry_run {
        let workload = target.observe_workload().await.map_err(Error::Observe)?;
        return dry_run(&ctx, &api, &scaler, workload.as_ref(), now).await;
    }

    let tracker = JobTracker::new(Api::<Job>::namespaced(ctx.client.clone(), &namespace));
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
    let result = reconcile_scaler(&api, &scaler, &hooks, &target, &ctx.ledger, now).await?;

    let mut stage_entered = entered.unwrap_or(now);
    for note in &result.notes {
        report(&ctx, &scaler, note, stage_entered, now).await;
        if note.is_transition() {
            stage_entered = now;
        }
    }
    ctx.metrics
        .set_stage(&namespace, &name, result.condition.stage);
    if result.notes.iter().any(Note::is_transition) {
        // A new operation (or a retry) makes older hook Jobs history.
        match tracker.cleanup(&result.scaler).await {
            Ok(deleted) if !deleted.is_empty() => {
                tracing::info!(?deleted, "deleted finished hook Jobs")
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "cleaning up hook Jobs failed; trying after the next transition")
            }
        }
    }
    Ok(result.action)
}

async fn report(
    ctx: &Context,
    scaler: &StackableScaler,
    note: &Note,
    stage_entered: DateTime<Utc>,
    now: DateTime<Utc>,
) {
    let kind = if note.warning {
        EventKind::Warning
    } else {
        EventKind::Normal
    };
    record(
        ctx,
        scaler,
        kind,
        note.reason,
        note.to.as_str(),
        &note.message,
    )
    .await;
    if let (Some(from), true) = (note.from, note.is_transition()) {
        let seconds = now.signed_duration_since(stage_entered).num_milliseconds() as f64 / 1000.0;
        ctx.metrics.observe_stage(from, seconds);
        if note.to == ScalerStage::Failed {
            ctx.metrics.record_failure(from);
        }
    }
    tracing::info!(reason = note.reason, from = ?note.from, to = ?note.to, "{}", note.message);
}

async fn paused(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    pause: &PauseState,
    now: DateTime<Utc>,
) -> Result<Action, Error> {
    let message = match pause {
        PauseState::PausedUntil(until) => format!("paused until {}", until.to_rfc3339()),
        PauseState::InvalidPausedUntil(raw) => {
            format!(
                "paused: {} is not an RFC 3339 instant ({raw:?}); remove or fix it",
                ebb_runtime::PAUSED_UNTIL_ANNOTATION
            )
        }
        _ => format!("paused by {}", ebb_runtime::PAUSED_ANNOTATION),
    };
    let mut status = scaler.status.clone().unwrap_or_default();
    set_condition(
        &mut status.conditions,
        ConditionUpdate::new(CONDITION_PAUSED, true, "Paused", message),
        now,
    );
    write_if_changed(api, scaler, status).await?;
    Ok(match pause.resume_at() {
        Some(at) => Action::requeue(at.signed_duration_since(now).to_std().unwrap_or_default()),
        None => Action::await_change(),
    })
}

async fn invalid(
    ctx: &Context,
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    error: &Error,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let mut status = scaler.status.clone().unwrap_or_default();
    let message = error.to_string();
    let update = ConditionUpdate::new(
        decide::CONDITION_READY,
        false,
        "InvalidOwner",
        message.clone(),
    )
    .observed_generation(scaler.metadata.generation);
    if set_condition(&mut status.conditions, update, now) {
        record(
            ctx,
            scaler,
            EventKind::Warning,
            "InvalidOwner",
            "Validate",
            &message,
        )
        .await;
        write_if_changed(api, scaler, status).await?;
    }
    Ok(())
}

async fn dry_run(
    ctx: &Context,
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    workload: Option<&WorkloadState>,
    now: DateTime<Utc>,
) -> Result<Action, Error> {
    let simulation = crate::plan::simulate(scaler, workload, now);
    let intent = simulation
        .plan
        .as_ref()
        .map_or_else(|| "do nothing".to_owned(), crate::plan::describe);
    let mut status = scaler.status.clone().unwrap_or_default();
    let update = ConditionUpdate::new(
        CONDITION_DRY_RUN,
        true,
        "DryRun",
        format!("dry run: would {intent}"),
    );
    if set_condition(&mut status.conditions, update, now) {
        record(
            ctx,
            scaler,
            EventKind::Normal,
            "DryRun",
            "Plan",
            &format!("dry run: would {intent}"),
        )
        .await;
        write_if_changed(api, scaler, status).await?;
    }
    Ok(Action::requeue(
        decide::HOOK_POLL.max(Duration::from_secs(60)),
    ))
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
