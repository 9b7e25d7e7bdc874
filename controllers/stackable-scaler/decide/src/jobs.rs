//! Hook Jobs, pure: the Job a hook runs as (its name, labels, environment and deadline), what a
//! Job's state means for its hook, and which finished Jobs a cleanup deletes. The controller's
//! `jobs` module starts, adopts and deletes them against the cluster.

use ebb_core::plan::{Category, Target, Write};
use ebb_core::time::from_k8s_time;
use ebb_crds::stackable::{HookSpec, HooksSpec, StackableScaler};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, EnvVar};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use crate::DEFAULT_TIMEOUT_SECONDS;
use crate::hooks::{HookError, HookKind, HookOutcome, HookResult, ScalingContext, job_name};

/// `app.kubernetes.io/managed-by` of every hook Job: the controller's field manager.
pub const MANAGED_BY: &str = "ebb-stackable-scaler";
/// Label on hook Jobs: uid of the scaler that owns them.
pub const LABEL_SCALER_UID: &str = "scaling.ebb.dev/scaler-uid";
/// Label on hook Jobs: the hook (`prescale`, `postscale`, `onfailure`).
pub const LABEL_HOOK: &str = "scaling.ebb.dev/hook";
/// Label on hook Jobs: the operation number.
pub const LABEL_SCALE_EVENT: &str = "scaling.ebb.dev/scale-event";
/// Label on hook Jobs: the attempt.
pub const LABEL_ATTEMPT: &str = "scaling.ebb.dev/attempt";

/// The environment every hook container gets.
pub fn hook_env(ctx: &ScalingContext) -> Vec<EnvVar> {
    let list = |r: std::ops::Range<i32>| r.map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let mut vars = vec![
        ("EBB_SCALE_DIRECTION", ctx.direction().as_str().to_owned()),
        ("EBB_PREVIOUS_REPLICAS", ctx.previous_replicas.to_string()),
        ("EBB_DESIRED_REPLICAS", ctx.desired_replicas.to_string()),
        ("EBB_REMOVED_ORDINALS", list(ctx.removed_ordinals())),
        ("EBB_ADDED_ORDINALS", list(ctx.added_ordinals())),
        ("EBB_SCALER_NAME", ctx.scaler_name.clone()),
        ("EBB_SCALE_EVENT", ctx.scale_event.to_string()),
    ];
    if let Some(failure) = &ctx.failure {
        vars.push(("EBB_FAILED_STAGE", failure.failed_in.as_str().to_owned()));
        vars.push(("EBB_FAILURE_REASON", failure.reason.clone()));
    }
    vars.into_iter()
        .map(|(name, value)| EnvVar {
            name: name.to_owned(),
            value: Some(value),
            value_from: None,
        })
        .collect()
}

/// The seconds a hook's Job may run: its `timeoutSeconds`, else the default, at least one.
pub fn timeout_of(spec: &HookSpec) -> i64 {
    spec.timeout_seconds
        .map_or(DEFAULT_TIMEOUT_SECONDS, i64::from)
        .max(1)
}

fn add_env(container: &mut Container, env: &[EnvVar]) {
    let list = container.env.get_or_insert_with(Vec::new);
    list.retain(|e| !env.iter().any(|ours| ours.name == e.name));
    list.extend(env.iter().cloned());
}

/// The Job of one hook run, from its template: named by [`job_name`], owned by the scaler,
/// labelled for cleanup, the hook environment in every container, `activeDeadlineSeconds` at most
/// the hook's timeout, and no `ttlSecondsAfterFinished` (a Job removed before its result is read
/// would be started again; the tracker cleans up instead). A pod template without a
/// `restartPolicy` gets `Never`: the API server rejects a Job whose pods would restart `Always`
/// (its default), and the tracker counts attempts itself.
pub fn build_job(
    scaler: &StackableScaler,
    spec: &HookSpec,
    hook: HookKind,
    ctx: &ScalingContext,
) -> Result<Job, HookError> {
    let uid = scaler
        .metadata
        .uid
        .clone()
        .ok_or_else(|| HookError::new("the StackableScaler has no uid"))?;
    let name = job_name(&scaler.name_any(), hook, ctx.scale_event, ctx.attempt);
    let owner = scaler
        .controller_owner_ref(&())
        .ok_or_else(|| HookError::new("cannot reference the StackableScaler as owner"))?;
    let template = &spec.template;
    let mut job_spec = template.spec.clone().unwrap_or_default();
    let timeout = timeout_of(spec);
    job_spec.active_deadline_seconds = Some(
        job_spec
            .active_deadline_seconds
            .map_or(timeout, |t| t.min(timeout)),
    );
    job_spec.ttl_seconds_after_finished = None;
    let env = hook_env(ctx);
    if let Some(pod) = job_spec.template.spec.as_mut() {
        pod.restart_policy.get_or_insert_with(|| "Never".to_owned());
        for container in pod
            .containers
            .iter_mut()
            .chain(pod.init_containers.iter_mut().flatten())
        {
            add_env(container, &env);
        }
    }
    let mut labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(LABEL_SCALER_UID.to_owned(), uid);
    labels.insert(LABEL_HOOK.to_owned(), hook.as_str().to_owned());
    labels.insert(LABEL_SCALE_EVENT.to_owned(), ctx.scale_event.to_string());
    labels.insert(LABEL_ATTEMPT.to_owned(), ctx.attempt.to_string());
    labels.insert(
        "app.kubernetes.io/managed-by".to_owned(),
        MANAGED_BY.to_owned(),
    );
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: scaler.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(job_spec),
        status: None,
    })
}

fn condition_true<'a>(
    job: &'a Job,
    type_: &str,
) -> Option<&'a k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

pub fn owned_by(job: &Job, uid: &str) -> bool {
    job.owner_references()
        .iter()
        .any(|o: &OwnerReference| o.uid == uid)
}

/// Whether a Job has finished (completed or failed).
pub fn is_finished(job: &Job) -> bool {
    condition_true(job, "Complete").is_some() || condition_true(job, "Failed").is_some()
}

/// What a Job's state means for its hook, at `now`.
pub fn job_outcome(job: &Job, timeout_seconds: i64, now: Timestamp) -> HookResult {
    let name = job.name_any();
    let namespace = job.namespace().unwrap_or_default();
    let hint = format!("see `kubectl logs -n {namespace} job/{name}`");
    if condition_true(job, "Complete").is_some() {
        return Ok(HookOutcome::Done);
    }
    if let Some(failed) = condition_true(job, "Failed") {
        return Err(HookError::new(format!(
            "Job {name} failed ({}: {}); {hint}",
            failed.reason.as_deref().unwrap_or("Failed"),
            failed.message.as_deref().unwrap_or("no message"),
        )));
    }
    // activeDeadlineSeconds normally fails the Job first; this catches a Job that never started.
    let started = job
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .map(from_k8s_time);
    if let Some(started) = started
        && now.duration_since(started).as_secs() > timeout_seconds
    {
        return Err(HookError::new(format!(
            "Job {name} did not finish within its deadline of {timeout_seconds}s; {hint}"
        )));
    }
    Ok(HookOutcome::InProgress)
}

/// How long after its start was recorded a hook Job may still be missing: the replica that
/// recorded it creates it right after (a 429 is sent again, with pauses, within that pass).
pub const LOST_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The hook Job of a start recorded in an earlier pass is not there. Within [`LOST_GRACE`] of the
/// record (or when the scaler as read does not hold the record yet: a stale copy) it may still be
/// created by the replica that recorded it: look again. Past it, the Job was started and is gone
/// before its result was read (deleted, or removed by a TTL): the hook may have run, so it never
/// runs again for this attempt, and the operation fails naming the Job.
pub fn missing(
    scaler: &StackableScaler,
    hook: HookKind,
    ctx: &ScalingContext,
    name: &str,
    now: Timestamp,
) -> HookResult {
    let recorded = scaler
        .status
        .as_ref()
        .and_then(|s| s.started_hook.as_ref())
        .filter(|r| {
            r.hook == hook.as_str() && (r.scale_event, r.attempt) == (ctx.scale_event, ctx.attempt)
        })
        .and_then(|r| r.at.as_ref())
        .map(from_k8s_time);
    let lost = recorded
        .is_some_and(|at| now.duration_since(at).unsigned_abs().ge(&LOST_GRACE) && now >= at);
    if !lost {
        return Ok(HookOutcome::InProgress);
    }
    Err(HookError::new(format!(
        "hook Job {name} (scale event {}, attempt {}) was started and is gone before its result \
         was read (deleted, or removed by a TTL); it is not run a second time: set {}=true to \
         start a new attempt",
        ctx.scale_event,
        ctx.attempt,
        crate::RETRY_ANNOTATION,
    )))
}

/// The deletes of a cleanup (the controller's `JobTracker::cleanup`) among `jobs` (the scaler's, as listed):
/// each finished Job the scaler owns of an operation other than its current one, by the uid
/// listed, with its name.
pub fn cleanup_writes<'a>(
    scaler: &StackableScaler,
    jobs: impl IntoIterator<Item = &'a Job>,
) -> Vec<(String, Write)> {
    let Some(uid) = scaler.metadata.uid.as_deref() else {
        return Vec::new();
    };
    let status = scaler.status.clone().unwrap_or_default();
    let current = (
        status.scale_event.unwrap_or(0).to_string(),
        status.attempt.unwrap_or(0).to_string(),
    );
    jobs.into_iter()
        .filter(|job| {
            let labels = job.labels();
            let op = (
                labels.get(LABEL_SCALE_EVENT).cloned().unwrap_or_default(),
                labels.get(LABEL_ATTEMPT).cloned().unwrap_or_default(),
            );
            op != current && is_finished(job) && owned_by(job, uid)
        })
        .map(|job| {
            let write = Write::delete(Target::of(job), job.uid().as_deref(), Category::Target);
            (job.name_any(), write)
        })
        .collect()
}

/// The Job template of `hook` among `hooks`, if the scaler has one (without one the hook is
/// `Done` at once, and no Job runs).
pub fn hook_spec(hooks: Option<&HooksSpec>, hook: HookKind) -> Option<&HookSpec> {
    let hooks = hooks?;
    match hook {
        HookKind::PreScale => hooks.pre_scale.as_ref(),
        HookKind::PostScale => hooks.post_scale.as_ref(),
        HookKind::OnFailure => hooks.on_failure.as_ref(),
    }
}
