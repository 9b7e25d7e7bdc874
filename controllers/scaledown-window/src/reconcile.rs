//! One ScaleDownSchedule, as one pass of [`Own`] in the shared reconcile frame
//! (`ebb_runtime::execute::frame`: span, metrics, leader gate, malformed objects, re-read and re-run on a
//! conflict, backoff): observe (ClusterVersion and MachineConfigPools, the target's objects, the
//! other schedules) -> [`decide`] -> apply (the minimal writes, only what ebb owns) -> status,
//! Events, metrics -> requeue at the next boundary.
//!
//! Writes: the ClusterAutoscaler's `spec.scaleDown.enabled` by server-side apply under field
//! manager [`FIELD_MANAGER`] (`ebb-scaledown-window`, the name the Argo CD
//! `managedFieldsManagers` entry uses); Nodes, MachineAutoscalers and NodePools by merge patches
//! carrying the `metadata.resourceVersion` they were planned from, so a concurrent change is a 409
//! (read again, decide again: the frame re-runs the pass on the schedule read afresh), never a
//! lost update. A reconcile that changes nothing writes nothing. Pause annotations on the schedule
//! and `--dry-run` stop every target write; pause annotations on a target object stop the writes
//! to that object (decided in [`decide::decide_target`]), and the reconcile wakes when the earliest
//! `paused-until` expires. The schedule's own pause is reported with
//! `ebb_runtime::pause::pause_report` (the shared `Paused` condition and Event). Leader election
//! (in the frame) gates all writes.

use std::sync::Arc;

use ebb_core::plan::{Category, Write};
use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::execute::Hooks;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, ReconcileError, Reconciler};
use ebb_runtime::watch::cache::Cold;
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::projected::Projected;
use kube::api::ListParams;
use kube::core::DynamicObject;
use kube::runtime::reflector::Store;
use kube::{Api, ResourceExt};

use crate::decide::writes::ScheduleGauges;
use crate::decide::{
    self, ClusterAutoscalerScaleDown, ClusterMaintenance, NodeView, Observed, Pass, Reads,
    ResolvedTarget, Settings, TargetObjects, TargetRead,
};
use crate::metrics::Metrics;
use crate::targets;
use crate::{CONTROLLER_NAME, FIELD_MANAGER};

pub use crate::decide::{EnabledTargets, FINALIZER, RESYNC, requeue_after};

/// scaledown-window's own part of the frame's context.
pub struct Own {
    /// This controller's metrics.
    pub metrics: Metrics,
    /// The target kinds served.
    pub targets: EnabledTargets,
    /// The Nodes' metadata as the Node watch last saw it: what a Nodes target reads, instead of
    /// listing every Node on every reconcile (101 MiB and a 10 s p99 with 10 000 Nodes).
    pub nodes: Projected<NodeView>,
    /// The controller's own cache of ScaleDownSchedules, where it holds every one (no
    /// `--label-selector`): the claimants a reconcile weighs are read from it. `None`: they are
    /// listed (a label-selected cache holds only this shard's).
    pub schedules: Option<Store<Guarded<ScaleDownSchedule>>>,
    /// The HolidayCalendars windows name, as the process's one watch of them holds them.
    pub calendars: CalendarCache,
}

/// What a reconcile needs: the frame's context around [`Own`].
pub type Context = ebb_runtime::execute::frame::Context<Own>;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the ClusterVersion failed.
    #[error("reading ClusterVersion version: {0}")]
    ClusterVersion(#[source] kube::Error),
    /// Listing the MachineConfigPools failed (other than their API being absent).
    #[error("listing MachineConfigPools: {0}")]
    MachineConfigPools(#[source] kube::Error),
    /// Listing the ScaleDownSchedules (for conflicts) failed.
    #[error("listing ScaleDownSchedules: {0}")]
    Schedules(#[source] kube::Error),
    /// Reading the target's objects failed.
    #[error("reading the target: {0}")]
    Observe(#[source] kube::Error),
    /// The Node cache has not listed yet.
    #[error(transparent)]
    Cold(#[from] Cold),
    /// Carrying out the plan failed: a conflict (read and decide again) or a failed write
    /// (`write_target`, `write_metadata`, `write_status`), as the runtime's executor says.
    #[error(transparent)]
    Write(#[from] frame::Failure),
    /// `cleanup` could not remove the finalizer.
    #[error("finalizer: {0}")]
    Finalizer(#[source] kube::Error),
}

impl ReconcileError for Error {
    fn category(&self) -> &'static str {
        match self {
            Self::ClusterVersion(_)
            | Self::MachineConfigPools(_)
            | Self::Schedules(_)
            | Self::Observe(_)
            | Self::Cold(_) => "observe",
            Self::Write(failure) => failure.category(),
            Self::Finalizer(_) => "write_metadata",
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Write(failure) => failure.is_transient(),
            _ => true,
        }
    }

    /// A target object, the status or the finalizer list changed under this pass: the frame
    /// reads the schedule again and decides again.
    fn is_conflict(&self) -> bool {
        match self {
            Self::Write(failure) => failure.is_conflict(),
            Self::Finalizer(e) => frame::is_conflict(e),
            _ => false,
        }
    }
}

/// scaledown-window in the reconcile frame: the frame runs [`Own`]'s `reconcile` per
/// ScaleDownSchedule (span, metrics, leader gate, malformed objects, re-read and re-run on a
/// conflict, backoff).
impl Reconciler<ScaleDownSchedule> for Own {
    type Error = Error;
    const NAME: &'static str = CONTROLLER_NAME;

    /// Reconciles one ScaleDownSchedule: reads what [`decide::reads`] asks for, and hands
    /// [`decide::decide`]'s plan to the runtime's executor.
    async fn reconcile(schedule: Arc<ScaleDownSchedule>, ctx: &Context) -> Result<Requeue, Error> {
        let now = ctx.clock.now();
        let settings = settings(ctx, Pass::Reconcile);
        let reads = decide::reads(&schedule, &settings, now);
        let observed = read(ctx, &schedule, settings, &reads).await?;
        execute(ctx, decide::decide(&observed, now)).await
    }
}

/// The process's settings for a `pass`.
pub(crate) fn settings(ctx: &Context, pass: Pass) -> Settings {
    Settings {
        served: ctx.own.targets,
        dry_run: ctx.dry_run,
        pass,
    }
}

/// Hands `plan` to the runtime's executor.
pub(crate) async fn execute(ctx: &Context, plan: decide::SchedulePlan) -> Result<Requeue, Error> {
    Ok(ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await?)
}

impl Hooks<Option<ScheduleGauges>> for Own {
    fn written(&self, write: &Write) {
        // Only a target's writes name a reason: the kind of the object written.
        if let (Category::Target, Some(kind)) = (write.category, write.reason) {
            self.metrics.write(kind);
            tracing::info!(object = %write.target.describe(), verb = write.verb.as_str(), "applied");
        }
    }

    fn gauges(&self, gauges: Option<ScheduleGauges>) {
        match gauges {
            None => {}
            Some(ScheduleGauges { name, values: None }) => self.metrics.forget(&name),
            Some(ScheduleGauges {
                name,
                values: Some(values),
            }) => self.metrics.observe(&name, &values),
        }
    }
}

/// Reads what `reads` asks for (I/O only): the maintenance, the calendars, the target's objects
/// (its API missing read as [`TargetRead::ApiMissing`]) and the other schedules.
pub(crate) async fn read<'a>(
    ctx: &Context,
    schedule: &'a ScaleDownSchedule,
    settings: Settings,
    reads: &Reads,
) -> Result<Observed<'a>, Error> {
    let maintenance = if reads.maintenance {
        cluster_maintenance(ctx).await?
    } else {
        ClusterMaintenance::default()
    };
    let calendars = ctx
        .own
        .calendars
        .resolve(reads.calendars.iter().map(String::as_str))?;
    let target = match &reads.target {
        None => TargetRead::NotRead,
        Some(target) => match observe(ctx, target).await {
            Err(Error::Observe(e)) if frame::is_api_missing(&e) => TargetRead::ApiMissing,
            Err(e) => return Err(e),
            Ok(objects) => TargetRead::Read(objects),
        },
    };
    let schedules = if reads.schedules && target != TargetRead::ApiMissing {
        every_schedule(ctx).await?
    } else {
        Vec::new()
    };
    Ok(Observed {
        schedule,
        settings,
        maintenance,
        calendars,
        target,
        schedules,
    })
}

/// The ClusterVersion's `Progressing` and the MachineConfigPools that are `Updating`. Where
/// either API does not exist (not OpenShift) it reads as "no upgrade" / "no pools"; any other
/// failure fails the pass, leaving the target as it is.
async fn cluster_maintenance(ctx: &Context) -> Result<ClusterMaintenance, Error> {
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &targets::cluster_version());
    let version = api
        .get_opt(targets::CLUSTER_VERSION_NAME)
        .await
        .map_err(Error::ClusterVersion)?;
    let progressing = version.is_some_and(|v| targets::cluster_version_progressing(&v));
    let api: Api<DynamicObject> =
        Api::all_with(ctx.client.clone(), &targets::machine_config_pool());
    let pools = match api.list(&ListParams::default()).await {
        Ok(pools) => pools.items,
        Err(kube::Error::Api(status)) if status.is_not_found() => Vec::new(),
        Err(error) => return Err(Error::MachineConfigPools(error)),
    };
    let updating = pools
        .iter()
        .filter(|p| targets::machine_config_pool_updating(p))
        .map(ResourceExt::name_any)
        .collect();
    Ok(ClusterMaintenance::new(progressing, updating))
}

/// Reads every object the target may concern: all of its kind (in its namespace), because
/// objects this schedule marked earlier may no longer be selected.
async fn observe(ctx: &Context, target: &ResolvedTarget) -> Result<TargetObjects, Error> {
    let client = ctx.client.clone();
    let lp = ListParams::default();
    Ok(match target {
        ResolvedTarget::ClusterAutoscaler { name } => {
            let api: Api<DynamicObject> = Api::all_with(client, &targets::cluster_autoscaler());
            let found = get_served(&api, name).await.map_err(Error::Observe)?;
            TargetObjects::ClusterAutoscaler {
                name: name.clone(),
                enabled: found.as_ref().map(targets::cluster_autoscaler_enabled),
                uid: found.as_ref().and_then(|ca| ca.metadata.uid.clone()),
                pause: found
                    .map(|ca| targets::pause_marks(&ca.metadata))
                    .unwrap_or_default(),
            }
        }
        ResolvedTarget::Nodes(_) => {
            // The views the cache holds, shared: a pass copies none.
            let mut nodes = ctx.own.nodes.all()?;
            // The cache holds no order; a list came sorted by name.
            nodes.sort_by(|a, b| a.name.cmp(&b.name));
            TargetObjects::Nodes(nodes)
        }
        ResolvedTarget::MachineAutoscalers { namespace, .. } => {
            let autoscalers: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &targets::machine_autoscaler());
            let machine_sets: Api<DynamicObject> =
                Api::namespaced_with(client, namespace, &targets::machine_set());
            let cluster_autoscaler: Api<DynamicObject> =
                Api::all_with(ctx.client.clone(), &targets::cluster_autoscaler());
            let autoscalers = autoscalers.list(&lp).await.map_err(Error::Observe)?;
            let machine_sets = machine_sets.list(&lp).await.map_err(Error::Observe)?;
            // What they depend on, reported beside them; its API missing reads as not found.
            let cluster_autoscaler = cluster_autoscaler
                .get_opt(decide::CLUSTER_AUTOSCALER_NAME)
                .await
                .map_err(Error::Observe)?;
            TargetObjects::MachineAutoscalers {
                autoscalers: autoscalers
                    .items
                    .iter()
                    .map(targets::machine_autoscaler_view)
                    .collect(),
                machine_sets: machine_sets
                    .items
                    .iter()
                    .filter_map(|ms| Some((ms.name_any(), targets::machine_set_replicas(ms)?)))
                    .collect(),
                cluster_autoscaler: ClusterAutoscalerScaleDown::from_lookup(
                    cluster_autoscaler.map(|ca| targets::cluster_autoscaler_enabled(&ca)),
                ),
            }
        }
        ResolvedTarget::NodePools(_, reasons) => {
            let api: Api<DynamicObject> = Api::all_with(client, &targets::node_pool());
            let pools = api.list(&lp).await.map_err(Error::Observe)?;
            TargetObjects::NodePools(
                pools.items.iter().map(targets::node_pool_view).collect(),
                reasons.clone(),
            )
        }
    })
}

/// `name`, `None` when the kind is served but the object does not exist; a kind the cluster does
/// not serve at all is the error ([`frame::is_api_missing`]), unlike with `get_opt`.
async fn get_served(
    api: &Api<DynamicObject>,
    name: &str,
) -> Result<Option<DynamicObject>, kube::Error> {
    match api.get(name).await {
        Ok(found) => Ok(Some(found)),
        Err(e) if frame::is_api_missing(&e) => Err(e),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every ScaleDownSchedule that deserializes: from the controller's cache where it holds them
/// all, once it has listed; else listed.
async fn every_schedule(ctx: &Context) -> Result<Vec<ScaleDownSchedule>, Error> {
    if let Some(store) = &ctx.own.schedules
        && store.wait_until_ready().await.is_ok()
    {
        return Ok(store
            .state()
            .iter()
            .filter_map(|guard| guard.0.as_ref().ok().cloned())
            .collect());
    }
    let api: Api<Guarded<ScaleDownSchedule>> = Api::all(ctx.client.clone());
    let listed = api
        .list(&ListParams::default())
        .await
        .map_err(Error::Schedules)?;
    Ok(listed
        .items
        .into_iter()
        .filter_map(|guard| guard.0.ok())
        .collect())
}
