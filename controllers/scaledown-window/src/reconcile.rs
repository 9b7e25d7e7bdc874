//! One ScaleDownSchedule, as one pass of [`Own`] in the shared reconcile frame
//! (`ebb_runtime::frame`: span, metrics, leader gate, malformed objects, re-read and re-run on a
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

use ebb_runtime::cleanup::Leave;
use std::sync::Arc;

use ebb_core::plan::Write;
use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::cache::{Cache, Cold};
use ebb_runtime::calendars::CalendarCache;
use ebb_runtime::execute::Hooks;
use ebb_runtime::frame::Requeue;
use ebb_runtime::frame::{self, ReconcileError, Reconciler};
use ebb_runtime::guard::Guarded;
use ebb_runtime::pause::{pause_report, pause_state};
use ebb_runtime::time::from_k8s_time;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::ListParams;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};

use crate::decide::writes::{FinalizerStep, ScheduleGauges};
use crate::decide::{
    self, Change, Claimant, ClusterAutoscalerScaleDown, ClusterMaintenance, Observed, ReportInput,
    ResolvedTarget, TargetKind, TargetOutcome,
};
use crate::metrics::Metrics;
use crate::targets;
use crate::{CONTROLLER_NAME, FIELD_MANAGER};

pub use crate::decide::{FINALIZER, RESYNC, requeue_after};

/// Which target kinds this controller serves (feature flags; the chart grants RBAC to match).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnabledTargets {
    /// `--enable-cluster-autoscaler`.
    pub cluster_autoscaler: bool,
    /// `--enable-node-annotation`.
    pub node_annotation: bool,
    /// `--enable-machine-autoscalers`.
    pub machine_autoscalers: bool,
    /// `--enable-karpenter`.
    pub karpenter: bool,
    /// `--enable-cluster-version`: read the ClusterVersion and the MachineConfigPools for
    /// `followClusterUpgrade`.
    pub cluster_version: bool,
}

impl EnabledTargets {
    /// Every kind, and the ClusterVersion and MachineConfigPools.
    pub fn all() -> Self {
        Self {
            cluster_autoscaler: true,
            node_annotation: true,
            machine_autoscalers: true,
            karpenter: true,
            cluster_version: true,
        }
    }

    /// Whether schedules of `kind` are served.
    pub fn allows(&self, kind: TargetKind) -> bool {
        match kind {
            TargetKind::ClusterAutoscaler => self.cluster_autoscaler,
            TargetKind::NodeAnnotation => self.node_annotation,
            TargetKind::MachineAutoscalers => self.machine_autoscalers,
            TargetKind::KarpenterNodePools => self.karpenter,
        }
    }
}

/// scaledown-window's own part of the frame's context.
pub struct Own {
    /// This controller's metrics.
    pub metrics: Metrics,
    /// The target kinds served.
    pub targets: EnabledTargets,
    /// The Nodes' metadata as the Node watch last saw it: what a Nodes target reads, instead of
    /// listing every Node on every reconcile (101 MiB and a 10 s p99 with 10 000 Nodes).
    pub nodes: Cache<PartialObjectMeta<Node>>,
    /// The controller's own cache of ScaleDownSchedules, where it holds every one (no
    /// `--label-selector`): the claimants a reconcile weighs are read from it. `None`: they are
    /// listed (a label-selected cache holds only this shard's).
    pub schedules: Option<Store<Guarded<ScaleDownSchedule>>>,
    /// The HolidayCalendars windows name, as the process's one watch of them holds them.
    pub calendars: CalendarCache,
}

/// What a reconcile needs: the frame's context around [`Own`].
pub type Context = ebb_runtime::frame::Context<Own>;

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

    /// Reconciles one ScaleDownSchedule, by the finalizer rule ([`decide::finalizer_step`]):
    /// while the schedule may write to its target (not dry-run, not paused, target kind
    /// enabled), the finalizer is added first (that write alone ends the pass; the watch brings
    /// the next); a schedule being deleted releases what it set, then lets go of the finalizer.
    async fn reconcile(schedule: Arc<ScaleDownSchedule>, ctx: &Context) -> Result<Requeue, Error> {
        let now = ctx.clock.now();
        let paused = pause_state(&schedule.metadata, now).is_paused();
        let kind_served = decide::target_kind(&schedule.spec.target)
            .is_ok_and(|kind| ctx.own.targets.allows(kind));
        let writes_target = kind_served && !paused && !ctx.dry_run;
        match decide::finalizer_step(&schedule, writes_target) {
            FinalizerStep::Add => execute(ctx, decide::add_finalizer(&schedule)).await,
            FinalizerStep::Release => release(&schedule, ctx, writes_target, now).await,
            FinalizerStep::Gone => Ok(Requeue::AwaitChange),
            FinalizerStep::Apply => apply(&schedule, ctx, now).await,
        }
    }
}

/// Hands `plan` to the runtime's executor.
async fn execute(ctx: &Context, plan: decide::SchedulePlan) -> Result<Requeue, Error> {
    Ok(ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await?)
}

impl Hooks<Option<ScheduleGauges>> for Own {
    fn written(&self, write: &Write) {
        if let Some(kind) = write.reason.and_then(decide::kind_of_reason) {
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

/// Reads, decides, writes the target's changes, then the status and Events [`decide::report`]
/// returns.
async fn apply(
    schedule: &ScaleDownSchedule,
    ctx: &Context,
    now: Timestamp,
) -> Result<Requeue, Error> {
    let name = schedule.name_any();
    let spec = &schedule.spec;
    let follows_upgrades = spec
        .maintenance
        .as_ref()
        .is_some_and(|m| m.follow_cluster_upgrade);
    let maintenance = if follows_upgrades && ctx.own.targets.cluster_version {
        cluster_maintenance(ctx).await?
    } else {
        ClusterMaintenance::default()
    };
    let calendars = ctx
        .own
        .calendars
        .resolve(decide::calendar_names(&spec.windows))?;
    let decision = decide::decide(spec, &calendars, now, &maintenance);
    // The schedule's own pause, reported the shared way (condition, Event, wake-up).
    let pause = pause_report(
        [("ScaleDownSchedule", &schedule.metadata)],
        schedule
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default(),
        schedule.metadata.generation,
        now,
    );

    let outcome = match decide::resolve_target(&spec.target) {
        Err(invalid) => TargetOutcome::Invalid(invalid),
        Ok(target) if !ctx.own.targets.allows(target.kind()) => {
            TargetOutcome::Disabled(target.kind())
        }
        Ok(_) if let Some(report) = &pause => TargetOutcome::Paused(report.pause.to_string()),
        Ok(target) => match observe(ctx, &target).await {
            Err(Error::Observe(e)) if frame::is_api_missing(&e) => {
                TargetOutcome::ApiMissing(target.kind())
            }
            Err(e) => return Err(e),
            Ok(observed) => {
                let claimants = claimants(ctx, schedule, Some(target.clone())).await?;
                TargetOutcome::Planned {
                    kind: target.kind(),
                    plan: decide::decide_target(
                        &name,
                        &claimants,
                        Some(decision.scale_down_enabled),
                        &observed,
                        now,
                    ),
                    dry_run: ctx.dry_run,
                }
            }
        },
    };
    let changes = match &outcome {
        TargetOutcome::Planned {
            plan,
            dry_run: false,
            ..
        } => plan.changes.clone(),
        _ => Vec::new(),
    };
    let report = decide::report::report(&ReportInput {
        status: schedule.status.as_ref(),
        generation: schedule.metadata.generation,
        decision: &decision,
        outcome: &outcome,
        pause: pause.as_ref(),
        dry_run: ctx.dry_run,
        now,
    });
    let plan = decide::apply_plan(schedule, &changes, decision.scale_down_enabled, report);
    execute(ctx, plan).await
}

/// Releases what this schedule set, unless another schedule takes the objects over, then lets
/// go of the finalizer. A paused schedule, a dry run or a switched-off target kind
/// (`writes_target` false) releases nothing; objects paused by their own annotation are not
/// released either.
async fn release(
    schedule: &ScaleDownSchedule,
    ctx: &Context,
    writes_target: bool,
    now: Timestamp,
) -> Result<Requeue, Error> {
    let changes = match decide::resolve_target(&schedule.spec.target) {
        Ok(target) if writes_target => {
            let observed = observe(ctx, &target).await?;
            let claimants = claimants(ctx, schedule, None).await?;
            decide::decide_target(&schedule.name_any(), &claimants, None, &observed, now).changes
        }
        _ => Vec::new(),
    };
    execute(ctx, decide::release_plan(schedule, &changes)).await
}

/// `scaledown-window cleanup`, before an uninstall: for every ScaleDownSchedule, releases what it
/// set on its target, as its deletion would but with no other schedule taking over (all of them
/// go), and removes its finalizer. A schedule's pause does not hold this back (ebb is leaving);
/// an object paused by its own annotation is still left as it is. Target kinds switched off, or
/// whose API the cluster does not serve, have nothing of ebb's to release. Dry run: reports,
/// writes nothing. Only the schedules `label_selector` selects (`--label-selector`: this
/// install's). One line per schedule.
pub async fn release_all(
    ctx: &Context,
    label_selector: Option<&str>,
    leave: Leave,
) -> Result<Vec<String>, Error> {
    let now = ctx.clock.now();
    let guarded: Api<Guarded<ScaleDownSchedule>> = Api::all(ctx.client.clone());
    let selected = match label_selector {
        Some(selector) => ListParams::default().labels(selector),
        None => ListParams::default(),
    };
    let schedules = guarded.list(&selected).await.map_err(Error::Schedules)?;
    let dynamic: Api<DynamicObject> = Api::all_with(
        ctx.client.clone(),
        &ApiResource::erase::<ScaleDownSchedule>(&()),
    );
    let mut lines = Vec::new();
    for guard in schedules.items {
        let (name, changes) = match guard.0 {
            // `--keep-settings`: what the schedule set stays; only its finalizer goes.
            Ok(schedule) if leave == Leave::Settings => (schedule.name_any(), Vec::new()),
            Ok(schedule) => {
                let name = schedule.name_any();
                (
                    name.clone(),
                    release_plan(ctx, &name, &schedule, now).await?,
                )
            }
            // Nothing of it can be read, so nothing it set can be found; its finalizer still goes.
            Err(invalid) => (invalid.metadata.name.unwrap_or_default(), Vec::new()),
        };
        let described: Vec<String> = changes.iter().map(Change::describe).collect();
        let released = if leave == Leave::Settings {
            "kept its target's settings in force".to_owned()
        } else if described.is_empty() {
            "nothing to release".to_owned()
        } else {
            format!("released {}", decide::summarize(&described, 20))
        };
        if ctx.dry_run {
            lines.push(format!("ScaleDownSchedule {name}: dry run: would have {released}, and removed finalizer {FINALIZER}"));
            continue;
        }
        let mut plan = decide::SchedulePlan::new(subject(&name), None);
        plan.writes.extend(
            changes
                .iter()
                .map(|change| decide::change_write(change, &name)),
        );
        execute(ctx, plan).await?;
        let finalizer = ebb_runtime::cleanup::remove_finalizer(&dynamic, &name, FINALIZER)
            .await
            .map_err(Error::Finalizer)?;
        let finalizer = if finalizer {
            format!("removed finalizer {FINALIZER}")
        } else {
            "no finalizer".to_owned()
        };
        lines.push(format!("ScaleDownSchedule {name}: {released}; {finalizer}"));
    }
    Ok(lines)
}

/// What releasing `schedule`'s target changes, with no schedule taking it over.
async fn release_plan(
    ctx: &Context,
    name: &str,
    schedule: &ScaleDownSchedule,
    now: Timestamp,
) -> Result<Vec<Change>, Error> {
    let Ok(target) = decide::resolve_target(&schedule.spec.target) else {
        return Ok(Vec::new());
    };
    if !ctx.own.targets.allows(target.kind()) {
        return Ok(Vec::new());
    }
    match observe(ctx, &target).await {
        Err(Error::Observe(e)) if frame::is_api_missing(&e) => Ok(Vec::new()),
        Err(e) => Err(e),
        Ok(observed) => Ok(decide::decide_target(name, &[], None, &observed, now).changes),
    }
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
async fn observe(ctx: &Context, target: &ResolvedTarget) -> Result<Observed, Error> {
    let client = ctx.client.clone();
    let lp = ListParams::default();
    Ok(match target {
        ResolvedTarget::ClusterAutoscaler { name } => {
            let api: Api<DynamicObject> = Api::all_with(client, &targets::cluster_autoscaler());
            let found = get_served(&api, name).await.map_err(Error::Observe)?;
            Observed::ClusterAutoscaler {
                name: name.clone(),
                enabled: found.as_ref().map(targets::cluster_autoscaler_enabled),
                uid: found.as_ref().and_then(|ca| ca.metadata.uid.clone()),
                pause: found
                    .map(|ca| targets::pause_marks(&ca.metadata))
                    .unwrap_or_default(),
            }
        }
        ResolvedTarget::Nodes(_) => {
            // Metadata only: labels and annotations are all that matter, and nodes are large.
            let mut nodes: Vec<_> = ctx
                .own
                .nodes
                .all()?
                .iter()
                .map(|n| targets::node_view(&n.metadata))
                .collect();
            // The cache holds no order; a list came sorted by name.
            nodes.sort_by(|a, b| a.name.cmp(&b.name));
            Observed::Nodes(nodes)
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
            Observed::MachineAutoscalers {
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
            Observed::NodePools(
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

/// The live schedules competing for target objects: every ScaleDownSchedule not being deleted
/// (whatever this controller's label selector, so shards never fight), with `me` as reconciled
/// (`my_target`; `None` while it is being deleted, so it claims nothing). Schedules that do not
/// parse or whose target cannot be resolved claim nothing: they write nothing either.
async fn claimants(
    ctx: &Context,
    me: &ScaleDownSchedule,
    my_target: Option<ResolvedTarget>,
) -> Result<Vec<Claimant>, Error> {
    let all = every_schedule(ctx).await?;
    let my_name = me.name_any();
    let created = |s: &ScaleDownSchedule| s.metadata.creation_timestamp.as_ref().map(from_k8s_time);
    let mut out: Vec<Claimant> = all
        .into_iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none() && s.name_any() != my_name)
        .filter_map(|s| {
            Some(Claimant {
                name: s.name_any(),
                created: created(&s),
                target: decide::resolve_target(&s.spec.target).ok()?,
            })
        })
        .collect();
    if let Some(target) = my_target {
        out.push(Claimant {
            name: my_name,
            created: created(me),
            target,
        });
    }
    Ok(out)
}

/// A reference to ScaleDownSchedule `name` (cluster-scoped), for Events.
fn subject(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(ScaleDownSchedule::api_version(&()).into_owned()),
        kind: Some(ScaleDownSchedule::kind(&()).into_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}
