//! The reconciler: takes the ServiceScaler from the watch's cache, the HPA of the same name from
//! the process's cache of HPAs (read by GET only when the pass runs again after a conflict) and
//! the HolidayCalendars its ranges name (from the calendars' cache), calls [`decide`] with the
//! pass's one `now`, and
//! hands the plan (the writes in order, the status, the Events, the gauge: see `decide::writes`)
//! to the runtime's executor (`ebb_runtime::execute`). Nothing here writes to the API server
//! itself.
//!
//! The pass runs in the shared reconcile frame ([`Own`]'s `Reconciler<ServiceScaler>`, `ebb_runtime::execute::frame`): a 409 at
//! any write ends the pass with [`frame::Failure::Conflict`], and the frame reads the
//! ServiceScaler again and runs it again, which reads the HPA by GET and decides again. A
//! ServiceScaler whose status does not deserialize (udaan's own timestamp format) reaches
//! the reconciler's `malformed` and is read by GET, its status leniently.
//!
//! [`decide`]: crate::decide::decide

use std::sync::Arc;

use ebb_core::plan::Write;
use ebb_crds::service_scaler::{ServiceScaler, ServiceScalerSpec, ServiceScalerStatus};
use ebb_runtime::execute::Hooks;
use ebb_runtime::execute::frame;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::guard;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::Value;

use crate::decide::{self, Gauge, Observed, Reads, ScaleRead};
use crate::fleet::HpaCaches;
use crate::metrics::Metrics;
use crate::{CONTROLLER_NAME, FIELD_MANAGER};

/// service-scaler's own part of the frame's [`Context`].
pub struct Own {
    /// service-scaler's own gauges and counters.
    pub metrics: Metrics,
    /// The HolidayCalendars ranges name, as the process's one watch of them holds them.
    pub calendars: CalendarCache,
    /// The install's hibernation ledger ([`decide::ledger`]); `None` keeps none.
    pub ledger: Option<ebb_core::plan::Target>,
    /// The HPAs, as the process's one cache of them per scope holds them: a pass reads its HPA
    /// there, and by GET only where no cache covers it or the pass runs again after a conflict.
    pub hpas: HpaCaches,
}

/// What a reconcile needs: the frame's context around [`Own`].
pub type Context = frame::Context<Own>;

/// Why a reconcile failed: the frame's common causes. A write that fails with something other
/// than a conflict is counted under `write_target` (the HPA), `write_metadata` (the finalizer)
/// or `write_status`; a spec that breaks a rule (reported in the `SpecValid` condition, the HPA
/// left as it was) under `invalid`, and waits for the object to change.
pub type Error = frame::Failure;

/// service-scaler in the reconcile frame ([`frame::run`]).
impl frame::Reconciler<ServiceScaler> for Own {
    type Error = Error;
    const NAME: &'static str = CONTROLLER_NAME;

    /// One pass, on the ServiceScaler as the cache holds it (or as the frame read it again).
    async fn reconcile(scaler: Arc<ServiceScaler>, ctx: &Context) -> Result<Requeue, Error> {
        pass(&scaler, ctx).await
    }

    /// A ServiceScaler that does not deserialize, read by GET: one whose status only is
    /// unreadable (udaan's own timestamp format counts as no status and is rewritten) is
    /// reconciled as usual; one whose spec is unreadable is reported in `SpecValid`.
    async fn malformed(meta: &ObjectMeta, _error: &str, ctx: &Context) -> Result<Requeue, Error> {
        // The frame has checked both before this path.
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let key = format!("{namespace}/{name}");
        match read_scaler(&scaler_api(&ctx.client, namespace), &key, name).await? {
            Read::Gone => {
                ctx.own.metrics.forget(&key);
                Ok(Requeue::AwaitChange)
            }
            Read::Unreadable(object, error) => {
                let now = ctx.clock.now();
                execute(decide::decide_unreadable(&object, &error, now), ctx).await
            }
            Read::Scaler(scaler) => pass(&scaler, ctx).await,
        }
    }
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
    Ok(match typed(object, key) {
        Ok(scaler) => Read::Scaler(scaler),
        Err((object, error)) => Read::Unreadable(object, error),
    })
}

/// `object` as a ServiceScaler (its status, when it does not fit, as none: it is rewritten), or
/// why its spec does not fit, with the object.
#[allow(clippy::result_large_err)]
pub fn typed(
    object: DynamicObject,
    key: &str,
) -> Result<Box<ServiceScaler>, (Box<DynamicObject>, String)> {
    let spec = object.data.get("spec").unwrap_or(&Value::Null);
    let spec: ServiceScalerSpec = match guard::read(spec, "spec") {
        Ok(spec) => spec,
        Err(error) => return Err((Box::new(object), error)),
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
    Ok(Box::new(ServiceScaler {
        metadata: object.metadata,
        spec,
        status,
    }))
}

/// Reads what `reads` asks for (I/O only): the HPA (from the cache, or read: [`HpaCaches`])
/// and, when a hibernation concerns it, its workload's Scale.
async fn read_targets(
    scaler: &ServiceScaler,
    reads: &Reads,
    ctx: &Context,
) -> Result<(Option<HorizontalPodAutoscaler>, Option<Scale>), Error> {
    // The frame (or the cleanup's list) has checked it.
    let namespace = scaler.metadata.namespace.as_deref().unwrap_or_default();
    let name = reads.hpa.as_str();
    let cached = match frame::reads_fresh() {
        true => None,
        false => ctx.own.hpas.get(namespace, name).await,
    };
    let hpa = match cached {
        Some(cached) => cached,
        None => {
            let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), namespace);
            hpas.get_opt(name)
                .await
                .map_err(frame::ReadError::of(format!(
                    "HorizontalPodAutoscaler {namespace}/{name}"
                )))?
        }
    };
    let scale = match reads.scale(scaler, hpa.as_ref()) {
        Some(workload) => read_scale(&ctx.client, namespace, &workload).await?,
        None => None,
    };
    Ok((hpa, scale))
}

/// One pass: read what [`decide::reads`] asks for, hand [`decide::decide`]'s plan to the
/// executor.
async fn pass(scaler: &ServiceScaler, ctx: &Context) -> Result<Requeue, Error> {
    let now = ctx.clock.now();
    let reads = decide::reads(scaler);
    let (hpa, scale) = read_targets(scaler, &reads, ctx).await?;
    let calendars = ctx
        .own
        .calendars
        .resolve(reads.calendars.iter().map(String::as_str))?;
    let observed = Observed {
        scaler,
        hpa: hpa.as_ref(),
        scale: scale.as_ref(),
        calendars: &calendars,
        dry_run: ctx.dry_run,
        ledger: ctx.own.ledger.as_ref(),
    };
    execute(decide::decide(&observed, now), ctx).await
}

/// `cleanup`'s give-back of `scaler` before an uninstall ([`decide::uninstall`]): its
/// hibernated workload woken, its HPA at the defaults (nothing with `keep_settings`), then its
/// finalizers removed. Returns what was done (or, in a dry run, would have been), one phrase each.
///
/// # Errors
/// A read or write failed (the executor's failure).
pub async fn release(
    scaler: &ServiceScaler,
    ctx: &Context,
    keep_settings: bool,
) -> Result<Vec<String>, Error> {
    let now = ctx.clock.now();
    let reads = decide::reads(scaler);
    let (hpa, scale) = read_targets(scaler, &reads, ctx).await?;
    // Giving back reads no window.
    let calendars = ebb_schedule::Calendars::new();
    let observed = Observed {
        scaler,
        hpa: hpa.as_ref(),
        scale: scale.as_ref(),
        calendars: &calendars,
        dry_run: ctx.dry_run,
        ledger: ctx.own.ledger.as_ref(),
    };
    let uninstall = decide::uninstall(&observed, now, keep_settings);
    execute(uninstall.plan, ctx).await?;
    Ok(uninstall.done)
}

/// The Scale of `workload` in `namespace`; `None` when the workload does not exist. The read of
/// a hibernation's workload, for ServiceScalers and FleetSchedule members alike.
pub(crate) async fn read_scale(
    client: &Client,
    namespace: &str,
    workload: &ScaleRead,
) -> Result<Option<Scale>, Error> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &workload.resource);
    match api.get_scale(&workload.name).await {
        Ok(scale) => Ok(Some(scale)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => {
            Err(frame::ReadError::of(format!("the scale of {}", workload.describe))(error).into())
        }
    }
}

/// Hands `plan` to the runtime's executor.
async fn execute(plan: decide::Plan, ctx: &Context) -> Result<Requeue, Error> {
    ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await
}

impl Hooks<Gauge> for Own {
    fn written(&self, write: &Write) {
        if let Some(reason) = write.reason {
            self.metrics.count_reason(reason);
        }
    }

    fn gauges(&self, gauge: Gauge) {
        match gauge.state {
            Some(state) => self.metrics.observe(&gauge.key, state),
            None => self.metrics.forget(&gauge.key),
        }
    }
}
