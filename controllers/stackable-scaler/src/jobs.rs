//! Hooks as Kubernetes Jobs: the standalone controller's [`ScalingHooks`], from the scaler's
//! `spec.hooks` templates.
//!
//! The [`JobTracker`] makes a hook idempotent: the Job of a hook has a name fixed by the scaler,
//! the hook, the operation number and the attempt ([`job_name`]), so asking again finds (adopts)
//! the same Job instead of starting a second one. A Job is created only in the ask that recorded
//! the hook's start in status ([`ScalingContext::starts`]); on any later ask a Job that is not
//! there was lost after it started (deleted, a TTL), and the hook fails naming it rather than
//! running twice. It reports `InProgress` while the Job runs,
//! `Done` when it completed, and an error naming the Job, its condition and a `kubectl logs` hint
//! when it failed or outlived its deadline. Transient API errors answer `InProgress` (asked again
//! later): an API hiccup must not fail a scaling operation.

use std::sync::Arc;

use ebb_core::plan::{Category, Write};
use ebb_crds::stackable::{HookSpec, StackableScaler};
use ebb_runtime::execute::Writer;
use ebb_runtime::execute::frame::Failure;
use ebb_runtime::watch::cache::Cache;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use kube::{Api, ResourceExt};

use crate::FIELD_MANAGER;
use crate::hooks::{
    HookAccounts, HookError, HookKind, HookOutcome, HookResult, ScalingContext, ScalingHooks,
};

pub use crate::decide::DEFAULT_TIMEOUT_SECONDS;
pub use crate::decide::hooks::{MAX_JOB_NAME, job_name};
pub use crate::decide::jobs::{
    LABEL_ATTEMPT, LABEL_HOOK, LABEL_SCALE_EVENT, LABEL_SCALER_UID, LOST_GRACE, build_job,
    cleanup_writes, hook_env, hook_spec, is_finished, job_outcome,
};
use crate::decide::jobs::{missing, owned_by, timeout_of};

fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(e) => e.code >= 500 || e.code == 429 || e.code == 409,
        _ => true,
    }
}

/// The hook Jobs of every scaler, as the controller's Job watch (labelled
/// [`LABEL_SCALER_UID`]) holds them, found by that label's value: the uid of the scaler that
/// started them. A cleanup reads them here instead of listing them.
pub fn job_cache() -> Cache<Job> {
    Cache::indexed(|job: &Job| {
        job.labels()
            .get(LABEL_SCALER_UID)
            .cloned()
            .into_iter()
            .collect()
    })
}

/// What the cache keeps of a hook Job: what a cleanup reads (its name, uid, labels, owners and
/// whether it finished). The Job's spec, its Pod template included, goes.
pub fn trim_cached(job: &mut Job) {
    job.spec = None;
    if let Some(status) = job.status.as_mut() {
        *status = k8s_openapi::api::batch::v1::JobStatus {
            conditions: status.conditions.take(),
            ..Default::default()
        };
    }
}

/// How many times a hook Job's create is sent within its first ask ([`JobTracker::create`]).
const CREATE_ATTEMPTS: u32 = 4;
/// The pause before looking and sending it again, times the attempt.
const CREATE_RETRY: std::time::Duration = std::time::Duration::from_millis(100);

/// A failed create worth asking again about: a conflict (the Job exists: adopted on the next
/// look) or a transient answer.
fn failure_transient(failure: &Failure) -> bool {
    match failure {
        Failure::Conflict(_) => true,
        Failure::Write(write) => transient(&write.source),
        _ => true,
    }
}

/// Starts, adopts and watches hook Jobs; cleans up finished ones.
#[derive(Clone)]
pub struct JobTracker {
    api: Api<Job>,
    accounts: HookAccounts,
}

impl JobTracker {
    /// A tracker for Jobs in the scaler's namespace, starting Jobs only as `accounts`.
    pub fn new(api: Api<Job>, accounts: HookAccounts) -> Self {
        Self { api, accounts }
    }

    /// Runs (or keeps watching) the Job of `hook` for the operation in `ctx`.
    pub async fn run(
        &self,
        scaler: &StackableScaler,
        spec: &HookSpec,
        hook: HookKind,
        ctx: &ScalingContext,
        now: Timestamp,
    ) -> HookResult {
        let job = build_job(scaler, spec, hook, ctx)?;
        let name = job.name_any();
        let uid = scaler.metadata.uid.clone().unwrap_or_default();
        let existing = match self.api.get_opt(&name).await {
            Ok(existing) => existing,
            // The one ask that may start it: an unclear read does not hold the create back (a
            // Job already there refuses a second one).
            Err(e) if transient(&e) && ctx.starts => None,
            Err(e) if transient(&e) => {
                tracing::warn!(job = %name, error = %e, "reading hook Job failed; asking again later");
                return Ok(HookOutcome::InProgress);
            }
            Err(e) => return Err(HookError::new(format!("reading Job {name}: {e}"))),
        };
        match existing {
            Some(existing) if !owned_by(&existing, &uid) => Err(HookError::new(format!(
                "a Job named {name} exists that this StackableScaler does not own; delete it and retry"
            ))),
            Some(existing) => job_outcome(&existing, timeout_of(spec), now),
            // Whatever the webhook does: a Job is never started as an account not allowed.
            None if ctx.starts => match self.accounts.refusal(&spec.template) {
                Some(refused) => Err(HookError::new(format!("not started: {refused}"))),
                None => self.create(&job, hook).await,
            },
            None => {
                let outcome = missing(scaler, hook, ctx, &name, now);
                if outcome == Ok(HookOutcome::InProgress) {
                    tracing::info!(job = %name, "hook Job not there yet; its start is recorded, looking again");
                }
                outcome
            }
        }
    }

    /// Creates the Job of a hook whose start was just recorded. The start is asked for once
    /// ([`ScalingContext::starts`]); on a later pass a Job that is not there counts as lost. So
    /// an unclear answer (a conflict, throttling, a server error, no answer) is settled here: the
    /// Job is looked for, and the create sent again if it is not there, a few times within this
    /// ask (a Job cannot have run and been removed in between).
    async fn create(&self, job: &Job, hook: HookKind) -> HookResult {
        let name = job.name_any();
        let client = self.api.clone().into_client();
        let create = Write::create(job, Category::Target);
        let mut last = None;
        for attempt in 1..=CREATE_ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(CREATE_RETRY * (attempt - 1)).await;
                match self.api.get_opt(&name).await {
                    Ok(Some(_)) => return Ok(HookOutcome::InProgress),
                    Ok(None) => {}
                    // Not known: the create is sent again (a second one is refused as there).
                    Err(e) => {
                        tracing::debug!(job = %name, error = %e, "looking for the hook Job failed")
                    }
                }
            }
            match Writer::new(&client, FIELD_MANAGER).write(&create).await {
                Ok(_) => {
                    tracing::info!(job = %name, hook = hook.as_str(), "started hook Job");
                    return Ok(HookOutcome::InProgress);
                }
                Err(e) if failure_transient(&e) => {
                    tracing::debug!(job = %name, error = %e, "creating hook Job: unclear answer; looking");
                    last = Some(e);
                }
                Err(e) => return Err(HookError::new(format!("creating Job {name}: {e}"))),
            }
        }
        // Still unclear: the next look adopts the Job, or finds it lost once the grace is over.
        if let Some(e) = last {
            tracing::warn!(job = %name, error = %e, "creating hook Job failed; looking again later");
        }
        Ok(HookOutcome::InProgress)
    }

    /// Deletes finished hook Jobs of this scaler that belong to other operations than the current
    /// one (the current one's stay for inspection), among `jobs`: the scaler's hook Jobs as the
    /// controller's Job watch holds them ([`job_cache`]), so a cleanup reads nothing. A Job the
    /// watch has not shown yet waits for the next cleanup; one deleted or made again since is
    /// not deleted (the delete names the uid seen). Returns the names deleted.
    pub async fn cleanup(
        &self,
        scaler: &StackableScaler,
        jobs: &[Arc<Job>],
    ) -> Result<Vec<String>, Failure> {
        let client = self.api.clone().into_client();
        let mut writer = Writer::new(&client, FIELD_MANAGER);
        let mut deleted = Vec::new();
        for (name, write) in cleanup_writes(scaler, jobs.iter().map(AsRef::as_ref)) {
            match writer.write(&write).await {
                Ok(_) => deleted.push(name),
                // Gone or made again since the list: not this cleanup's to delete.
                Err(Failure::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// [`ScalingHooks`] that run a scaler's `spec.hooks` as Jobs. A hook without a template is `Done`.
pub struct JobHooks<'a> {
    /// The tracker.
    pub tracker: &'a JobTracker,
    /// The scaler (owner of the Jobs).
    pub scaler: &'a StackableScaler,
    /// Now, for deadlines.
    pub now: Timestamp,
}

impl JobHooks<'_> {
    async fn run(&self, hook: HookKind, ctx: &ScalingContext) -> HookResult {
        match hook_spec(self.scaler.spec.hooks.as_ref(), hook) {
            Some(spec) => {
                self.tracker
                    .run(self.scaler, spec, hook, ctx, self.now)
                    .await
            }
            None => Ok(HookOutcome::Done),
        }
    }
}

impl ScalingHooks for JobHooks<'_> {
    async fn pre_scale(&self, ctx: &ScalingContext) -> HookResult {
        self.run(HookKind::PreScale, ctx).await
    }

    async fn post_scale(&self, ctx: &ScalingContext) -> HookResult {
        self.run(HookKind::PostScale, ctx).await
    }

    async fn on_failure(&self, ctx: &ScalingContext) -> HookResult {
        self.run(HookKind::OnFailure, ctx).await
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
