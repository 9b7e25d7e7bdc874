//! The reconciler: observe (the ServiceScaler and the HPA of the same name) -> [`decide`] ->
//! apply (the minimum of writes) -> status, Events, metrics.
//!
//! Writes, in this order, each only when the decision asks for it:
//! 1. adding the finalizer (when the deletion will need to act on the HPA, [`needs_finalizer`]):
//!    a merge patch carrying `metadata.resourceVersion`. First, so an adopted HPA is never
//!    changed while nothing guarantees that deleting the ServiceScaler restores it;
//! 2. the HPA: created with a POST (full spec, `scaleTargetRef`, an owner reference to the
//!    ServiceScaler) when missing, else server-side apply (field manager `ebb-service-scaler`,
//!    forced, preconditioned on the resourceVersion read) of exactly `spec.minReplicas`,
//!    `spec.maxReplicas` and `spec.metrics`. Creating with a POST rather than an apply keeps
//!    `scaleTargetRef` out of the apply set: a later apply without it would otherwise remove the
//!    field ebb alone owned, which the API server rejects;
//! 3. removing the finalizer when it is no longer needed (same merge patch);
//! 4. the status: a merge patch of `.status` through the status subresource.
//!
//! On deletion ([`decide_deletion`]): drop the HPA's owner reference (a merge patch with its
//! `resourceVersion`), restore it (server-side apply), or delete it (`uid` precondition), then
//! remove ebb's and udaan's finalizers.
//!
//! The pass runs in the shared reconcile frame ([`Reconcile`], `ebb_runtime::frame`): a 409 at
//! any step ends the pass with [`frame::Failure::Conflict`], and the frame runs it again, which re-reads
//! both objects and decides again. Every write carries absolute values, so a retry after a lost answer finds the HPA in
//! sync and writes nothing: never act twice.
//!
//! [`decide`]: crate::decide::decide
//! [`decide_deletion`]: crate::decide::decide_deletion
//! [`needs_finalizer`]: crate::decide::needs_finalizer

use std::sync::Arc;

use ebb_crds::service_scaler::{ServiceScaler, ServiceScalerSpec, ServiceScalerStatus};
use ebb_runtime::frame::{self, WriteError, is_conflict};
use ebb_runtime::guard;
use ebb_runtime::patch::merge_diff;
use ebb_runtime::{ConditionUpdate, set_condition, to_k8s_time};
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::controller::Action;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::decide::{
    self, CONDITION_READY, CONDITION_SPEC_VALID, FINALIZER, FinalizerPlan, HpaPlan, ManagedState,
    Notice, Observed, OwnedFields, Precondition, UDAAN_FINALIZER, WriteReason,
};
use crate::metrics::Metrics;
use crate::{CONTROLLER_NAME, FIELD_MANAGER};

/// service-scaler's own part of the frame's [`Context`].
pub struct Own {
    /// service-scaler's own gauges and counters.
    pub metrics: Metrics,
}

/// What a reconcile needs: the frame's context around [`Own`].
pub type Context = frame::Context<Own>;

/// Why a reconcile failed: the frame's common causes. A write that fails with something other
/// than a conflict is counted under `write_hpa`, `write_finalizer` or `write_status`; a spec that
/// breaks a rule (reported in the `SpecValid` condition, the HPA left as it was) under `invalid`,
/// and waits for the object to change.
pub type Error = frame::Failure;

fn conflict(key: &str) -> Error {
    Error::stale(format!("ServiceScaler {key}"))
}

/// The failed status write of ServiceScaler `key`.
fn write_status_failed(key: &str) -> impl FnOnce(kube::Error) -> Error {
    let write = WriteError::of(
        "write_status",
        format!("writing the status of ServiceScaler {key}"),
    );
    move |source| write(source).into()
}

/// The failed write of the HPA of ServiceScaler `key`.
fn write_hpa_failed(key: &str) -> impl FnOnce(kube::Error) -> Error {
    let write = WriteError::of("write_hpa", format!("writing HPA {key}"));
    move |source| write(source).into()
}

/// service-scaler in the reconcile frame ([`frame::reconcile`]`::<Reconcile>`).
pub struct Reconcile;

impl frame::Reconciler for Reconcile {
    type Object = ServiceScaler;
    type Own = Own;
    type Error = Error;
    const NAME: &'static str = CONTROLLER_NAME;

    /// One pass. The ServiceScaler is read again by GET (its spec strictly, its status
    /// leniently: udaan's own timestamp format counts as no status and is rewritten).
    async fn reconcile(scaler: Arc<ServiceScaler>, ctx: &Context) -> Result<Action, Error> {
        pass_of(&scaler.metadata, ctx).await
    }

    /// A ServiceScaler that does not deserialize: one whose status only is unreadable (udaan's)
    /// is reconciled as usual; one whose spec is unreadable is reported in `SpecValid`.
    async fn malformed(meta: &ObjectMeta, _error: &str, ctx: &Context) -> Result<Action, Error> {
        pass_of(meta, ctx).await
    }
}

async fn pass_of(meta: &ObjectMeta, ctx: &Context) -> Result<Action, Error> {
    // The frame has checked both before either path.
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let name = meta.name.as_deref().unwrap_or_default();
    pass(namespace, name, ctx).await
}

/// The ServiceScaler as read.
enum Read {
    /// It no longer exists.
    Gone,
    /// Its spec is readable (an unreadable status, e.g. udaan's own timestamp format, counts as
    /// none and is rewritten).
    Scaler(Box<ServiceScaler>),
    /// Its spec does not fit the type.
    Unreadable(Box<DynamicObject>, String),
}

fn scaler_api(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::erase::<ServiceScaler>(&()),
    )
}

async fn read_scaler(api: &Api<DynamicObject>, key: &str, name: &str) -> Result<Read, Error> {
    let object = api
        .get_opt(name)
        .await
        .map_err(frame::ReadError::of(format!("ServiceScaler {key}")))?;
    let Some(object) = object else {
        return Ok(Read::Gone);
    };
    let spec = object.data.get("spec").unwrap_or(&Value::Null);
    let spec: ServiceScalerSpec = match guard::read(spec, "spec") {
        Ok(spec) => spec,
        Err(error) => return Ok(Read::Unreadable(Box::new(object), error)),
    };
    let status = match object.data.get("status").filter(|s| !s.is_null()) {
        None => None,
        Some(raw) => match serde_json::from_value::<ServiceScalerStatus>(raw.clone()) {
            Ok(status) => Some(status),
            Err(error) => {
                tracing::warn!(scaler = key, %error, "status unreadable; it will be rewritten");
                None
            }
        },
    };
    Ok(Read::Scaler(Box::new(ServiceScaler {
        metadata: object.metadata,
        spec,
        status,
    })))
}

/// One observe -> decide -> apply pass.
async fn pass(namespace: &str, name: &str, ctx: &Context) -> Result<Action, Error> {
    let now = ctx.clock.now();
    let key = format!("{namespace}/{name}");

    // --- observe ---
    let scalers = scaler_api(&ctx.client, namespace);
    let scaler = match read_scaler(&scalers, &key, name).await? {
        Read::Gone => {
            ctx.own.metrics.forget(&key);
            return Ok(Action::await_change());
        }
        Read::Unreadable(object, error) => {
            return report_unreadable(&scalers, &object, &error, ctx, now).await;
        }
        Read::Scaler(scaler) => scaler,
    };
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), namespace);
    let hpa = hpas
        .get_opt(name)
        .await
        .map_err(frame::ReadError::of(format!(
            "HorizontalPodAutoscaler {key}"
        )))?;
    let observed = Observed {
        scaler: &scaler,
        hpa: hpa.as_ref(),
        dry_run: ctx.dry_run,
    };
    let reference = scaler.object_ref(&());

    if scaler.metadata.deletion_timestamp.is_some() {
        let plan = decide::decide_deletion(&observed, now);
        let mut current = hpa.clone();
        if plan.disown
            && let Some(hpa) = &hpa
        {
            match disown_hpa(&hpas, hpa, &scaler, &key).await? {
                Some(disowned) => current = Some(disowned),
                None => return Err(conflict(&key)),
            }
        }
        if let Some(fields) = &plan.restore {
            let precondition = current.as_ref().map(|h| fields.precondition(h));
            if !apply_hpa(&hpas, name, fields, precondition, &key).await? {
                return Err(conflict(&key));
            }
            ctx.own.metrics.count_write(WriteReason::Restore);
        }
        if plan.delete
            && let Some(hpa) = &hpa
            && !delete_hpa(&hpas, hpa, &key).await?
        {
            return Err(conflict(&key));
        }
        record(ctx, &reference, &plan.notices).await;
        if plan.remove_finalizer && write_finalizer(&scalers, &scaler, false, true, &key).await? {
            return Err(conflict(&key));
        }
        ctx.own.metrics.forget(&key);
        return Ok(Action::await_change());
    }

    // --- decide ---
    let decision = decide::decide(&observed, now);

    // --- apply ---
    // The finalizer first: an adopted HPA is never changed while nothing guarantees that a
    // deletion of the ServiceScaler restores it (deleting it between the two writes would leave
    // the HPA at the range's settings for good; the end-to-end suite caught that order).
    if matches!(decision.finalizer, FinalizerPlan::Add)
        && write_finalizer(&scalers, &scaler, true, false, &key).await?
    {
        return Err(conflict(&key));
    }
    write_hpa(ctx, &hpas, &decision.hpa, hpa.as_ref(), name, &key).await?;
    if let Some(notice) = &decision.hpa_notice {
        record(ctx, &reference, std::slice::from_ref(notice)).await;
    }
    let met_conflict = match decision.finalizer {
        FinalizerPlan::Keep | FinalizerPlan::Add => false,
        FinalizerPlan::Remove => write_finalizer(&scalers, &scaler, false, false, &key).await?,
    };
    if met_conflict {
        return Err(conflict(&key));
    }
    if let Some(status) = &decision.status
        && write_status(&scalers, name, scaler.status.as_ref(), status, &key).await?
    {
        return Err(conflict(&key));
    }
    record(ctx, &reference, &decision.notices).await;
    ctx.own.metrics.observe(&key, decision.state);

    if decision.state == ManagedState::Invalid {
        let message = scaler_condition_message(decision.status.as_ref(), &scaler);
        return Err(Error::Invalid {
            object: format!("ServiceScaler {key}"),
            message,
        });
    }
    Ok(decision
        .requeue_after
        .map_or_else(Action::await_change, Action::requeue))
}

/// Writes the HPA as `plan` says: a POST when it is to be created, else a server-side apply
/// preconditioned on the resourceVersion of `current` (the HPA as read); counts the write. A
/// conflict ends the pass with [`frame::Failure::Conflict`].
async fn write_hpa(
    ctx: &Context,
    hpas: &Api<HorizontalPodAutoscaler>,
    plan: &HpaPlan,
    current: Option<&HorizontalPodAutoscaler>,
    name: &str,
    key: &str,
) -> Result<(), Error> {
    match plan {
        HpaPlan::Leave => {}
        HpaPlan::Create(hpa) => {
            let params = PostParams {
                dry_run: false,
                field_manager: Some(FIELD_MANAGER.into()),
            };
            if let Err(source) = hpas.create(&params, hpa).await {
                // AlreadyExists: someone created it since we looked; decide again with it.
                if is_conflict(&source) {
                    return Err(conflict(key));
                }
                return Err(write_hpa_failed(key)(source));
            }
            ctx.own.metrics.count_write(WriteReason::Create);
        }
        HpaPlan::Apply { fields, reason } => {
            let precondition = current.map(|h| fields.precondition(h));
            if !apply_hpa(hpas, name, fields, precondition, key).await? {
                return Err(conflict(key));
            }
            ctx.own.metrics.count_write(*reason);
        }
    }
    Ok(())
}

/// The `SpecValid` message of the status just written (or already there).
fn scaler_condition_message(
    written: Option<&ServiceScalerStatus>,
    scaler: &ServiceScaler,
) -> String {
    written
        .or(scaler.status.as_ref())
        .and_then(|s| ebb_runtime::find_condition(&s.conditions, CONDITION_SPEC_VALID))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

async fn record(
    ctx: &Context,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    notices: &[Notice],
) {
    for notice in notices {
        notice.record(&*ctx.events, reference).await;
    }
}

/// Server-side applies the fields ebb owns on the HPA, preconditioned on the HPA as read when
/// given ([`OwnedFields::precondition`]). `Ok(false)` on a conflict, or when the HPA was deleted
/// (and perhaps made again) since the read: re-read and decide again.
async fn apply_hpa(
    hpas: &Api<HorizontalPodAutoscaler>,
    name: &str,
    fields: &OwnedFields,
    precondition: Option<Precondition>,
    key: &str,
) -> Result<bool, Error> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let patch = fields.apply_patch_at(name, &precondition.unwrap_or_default());
    match hpas.patch(name, &params, &Patch::Apply(&patch)).await {
        Ok(_) => Ok(true),
        Err(source) if is_conflict(&source) || frame::is_recreated(&source) => Ok(false),
        Err(source) => Err(write_hpa_failed(key)(source)),
    }
}

/// Drops the HPA's owner references to the ServiceScaler (so the garbage collector keeps it),
/// preconditioned on the HPA's resourceVersion. The HPA as written, or `None` on a conflict.
async fn disown_hpa(
    hpas: &Api<HorizontalPodAutoscaler>,
    hpa: &HorizontalPodAutoscaler,
    scaler: &ServiceScaler,
    key: &str,
) -> Result<Option<HorizontalPodAutoscaler>, Error> {
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    let patch = decide::disown_patch(hpa, scaler);
    match hpas
        .patch(&hpa.name_any(), &params, &Patch::Merge(&patch))
        .await
    {
        Ok(written) => Ok(Some(written)),
        Err(source) if is_conflict(&source) => Ok(None),
        Err(source) => Err(write_hpa_failed(key)(source)),
    }
}

/// Deletes the HPA that was read (a `uid` precondition: never a successor of the same name).
/// Already gone counts as done. `Ok(false)` on a conflict.
async fn delete_hpa(
    hpas: &Api<HorizontalPodAutoscaler>,
    hpa: &HorizontalPodAutoscaler,
    key: &str,
) -> Result<bool, Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: hpa.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match hpas.delete(&hpa.name_any(), &params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(true),
        Err(source) if is_conflict(&source) => Ok(false),
        Err(source) => Err(write_hpa_failed(key)(source)),
    }
}

/// Adds or removes [`FINALIZER`] (and, with `drop_udaan`, udaan's [`UDAAN_FINALIZER`]),
/// preconditioned on the resourceVersion read. Returns whether the write met a conflict.
async fn write_finalizer(
    api: &Api<DynamicObject>,
    scaler: &ServiceScaler,
    add: bool,
    drop_udaan: bool,
    key: &str,
) -> Result<bool, Error> {
    let mut finalizers: Vec<String> = scaler
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER && !(drop_udaan && *f == UDAAN_FINALIZER))
        .cloned()
        .collect();
    if add {
        finalizers.push(FINALIZER.to_owned());
    }
    let finalizers = if finalizers.is_empty() {
        Value::Null
    } else {
        json!(finalizers)
    };
    let patch = json!({
        "metadata": {
            "resourceVersion": scaler.resource_version(),
            "finalizers": finalizers,
        }
    });
    match api
        .patch(
            &scaler.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(false),
        Err(source) if is_conflict(&source) => Ok(true),
        Err(source) => Err(WriteError::of(
            "write_finalizer",
            format!("updating the finalizer of ServiceScaler {key}"),
        )(source)
        .into()),
    }
}

/// Writes the status. Returns whether the write met a conflict.
async fn write_status(
    api: &Api<DynamicObject>,
    name: &str,
    previous: Option<&ServiceScalerStatus>,
    status: &ServiceScalerStatus,
    key: &str,
) -> Result<bool, Error> {
    // Only what changed, with `null` for fields now absent (serde skips `None`).
    let old = serde_json::to_value(previous).unwrap_or_default();
    let new = serde_json::to_value(status).unwrap_or_default();
    let patch = json!({ "status": merge_diff(&old, &new) });
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    match api.patch_status(name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => Ok(false),
        Err(source) if is_conflict(&source) => Ok(true),
        Err(source) => Err(write_status_failed(key)(source)),
    }
}

/// A ServiceScaler whose spec does not fit the type (stored before the CRD schema changed):
/// `SpecValid` and `Ready` say so, nothing else is touched.
async fn report_unreadable(
    api: &Api<DynamicObject>,
    object: &DynamicObject,
    error: &str,
    ctx: &Context,
    now: Timestamp,
) -> Result<Action, Error> {
    let key = format!(
        "{}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    );
    let message = error.to_owned();
    let generation = object.metadata.generation;
    let mut conditions: Vec<Condition> = object
        .data
        .pointer("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let mut update = |type_: &str, message: String| {
        set_condition(
            &mut conditions,
            ConditionUpdate::new(type_, false, "InvalidSpec", message)
                .observed_generation(generation),
            now,
        )
    };
    let changed = update(CONDITION_SPEC_VALID, message.clone())
        | update(
            CONDITION_READY,
            format!("the spec is invalid; the HPA is left as it was: {message}"),
        );
    if changed {
        let patch = json!({ "status": {
            "conditions": conditions,
            "lastObservedGeneration": generation,
            "lastUpdatedTime": to_k8s_time(now),
        }});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match api
            .patch_status(&object.name_any(), &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(source) if is_conflict(&source) => return Err(conflict(&key)),
            Err(source) => return Err(write_status_failed(&key)(source)),
        }
        let reference = object.object_ref(&ApiResource::erase::<ServiceScaler>(&()));
        let notice = Notice {
            kind: ebb_runtime::EventKind::Warning,
            reason: "InvalidSpec",
            action: "Validate",
            note: message.clone(),
        };
        record(ctx, &reference, std::slice::from_ref(&notice)).await;
    }
    ctx.own.metrics.observe(&key, ManagedState::Invalid);
    Err(Error::Invalid {
        object: format!("ServiceScaler {key}"),
        message,
    })
}
