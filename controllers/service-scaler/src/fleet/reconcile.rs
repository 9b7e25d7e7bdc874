//! FleetSchedule's room: its two reconcilers, in the shared frame, on the caches of one scope
//! (`super`: the watches and caches). Each reads what its decide entry names and hands the plan
//! on: the members ([`decide::members`]) and the FleetSchedules' status ([`decide::fleets`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ebb_core::plan::Write;
use ebb_crds::fleet::FleetSchedule;
use ebb_runtime::execute::Hooks;
use ebb_runtime::execute::frame;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::watch::cache::Names;
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::guard::Guarded;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use super::{CachedHpa, Caches, HpaMeta, NOT_LISTED_YET};
use crate::decide::{self, Reach};
use crate::metrics::Metrics;
use crate::{CONTROLLER_NAME, FIELD_MANAGER};

/// What both FleetSchedule reconcilers share: the caches they decide on, and where ebb runs.
pub struct FleetOwn {
    /// service-scaler's gauges and counters (writes are counted by reason).
    pub metrics: Metrics,
    /// The FleetSchedules of the scope.
    pub fleets: Store<Guarded<FleetSchedule>>,
    /// The HPAs of the scope, without their status.
    pub hpas: Store<CachedHpa>,
    /// The names of the ServiceScalers of the scope.
    pub scalers: Names,
    /// Whether each of the three caches holds its first full list.
    listed: [Arc<AtomicBool>; 3],
    /// ebb's own namespace (the Lease's).
    home: String,
    /// Whether the install watches every namespace.
    cluster_wide: bool,
    /// The HolidayCalendars ranges name.
    calendars: CalendarCache,
}

impl FleetOwn {
    /// The caches of one scope, each with whether it holds its first full list (FleetSchedules,
    /// ServiceScalers, HPAs), ebb's own namespace, whether the install is cluster-wide, and the
    /// HolidayCalendars.
    pub fn new(
        metrics: Metrics,
        (fleets, scalers, hpas): Caches,
        listed: [Arc<AtomicBool>; 3],
        (home, cluster_wide): (String, bool),
        calendars: CalendarCache,
    ) -> Self {
        Self {
            metrics,
            fleets,
            hpas,
            scalers,
            listed,
            home,
            cluster_wide,
            calendars,
        }
    }

    fn listed(&self) -> bool {
        self.listed.iter().all(|l| l.load(Ordering::Acquire))
    }

    pub(super) fn reach(&self) -> Reach<'_> {
        Reach {
            home: Some(&self.home),
            cluster_wide: self.cluster_wide,
        }
    }

    fn typed_fleets(&self) -> Vec<Arc<Guarded<FleetSchedule>>> {
        self.fleets.state()
    }

    fn has_scaler(&self, meta: &ObjectMeta) -> bool {
        let (Some(name), Some(namespace)) = (&meta.name, &meta.namespace) else {
            return false;
        };
        self.scalers.contains(namespace, name)
    }
}

impl Hooks<()> for FleetOwn {
    fn written(&self, write: &Write) {
        if let Some(reason) = write.reason {
            self.metrics.count_reason(reason);
        }
    }
}

/// A reconcile's context.
pub type Context = frame::Context<FleetOwn>;

/// The FleetSchedules of `all` that deserialize.
fn fleets_of(all: &[Arc<Guarded<FleetSchedule>>]) -> impl Iterator<Item = &FleetSchedule> {
    all.iter().filter_map(|g| g.0.as_ref().ok())
}

/// HPAs in the frame, keyed by HPA: who schedules it and what else to read
/// ([`decide::members::reads`], from the caches), then the HPA's plan
/// ([`decide::members::decide`]).
impl frame::Reconciler<HpaMeta> for FleetOwn {
    type Error = frame::Failure;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(meta: Arc<HpaMeta>, ctx: &Context) -> Result<Requeue, frame::Failure> {
        if !ctx.own.listed() {
            return Ok(Requeue::After(NOT_LISTED_YET));
        }
        let all = ctx.own.typed_fleets();
        // Decided on the HPA as cached; after a 409 the frame has read it again (it is this
        // reconciler's own object).
        let hpa = meta.as_ref();
        let reads = decide::members::reads(
            hpa,
            fleets_of(&all),
            ctx.own.has_scaler(&hpa.metadata),
            ctx.own.reach(),
        );
        let scale = read_scale(&ctx.client, hpa, reads.scale.as_ref()).await?;
        let calendars = ctx
            .own
            .calendars
            .resolve(reads.calendars.iter().map(String::as_str))?;
        let observed = decide::members::Observed {
            hpa,
            claim: &reads.claim,
            scale: scale.as_ref(),
            calendars: &calendars,
            dry_run: ctx.dry_run,
        };
        let plan = decide::members::decide(&observed, ctx.clock.now());
        ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await
    }
}

/// `cleanup`'s give-back of a fleet member before an uninstall: `hpa` (read whole) as if no
/// FleetSchedule claimed it any more, so it gets its recorded values back, a hibernated target
/// its replicas, and the record goes ([`decide::members::decide`] with no FleetSchedule).
/// Returns what was done (or would have been, in a dry run).
///
/// # Errors
/// Reading the target's Scale, or a write, failed.
pub async fn release_member(
    hpa: &HorizontalPodAutoscaler,
    shared: &frame::Shared,
) -> Result<Vec<String>, frame::Failure> {
    let reach = decide::Reach {
        home: None,
        cluster_wide: false,
    };
    let reads = decide::members::reads(hpa, [], false, reach);
    let scale = read_scale(&shared.client, hpa, reads.scale.as_ref()).await?;
    let calendars = ebb_schedule::Calendars::new();
    let observed = decide::members::Observed {
        hpa,
        claim: &reads.claim,
        scale: scale.as_ref(),
        calendars: &calendars,
        dry_run: shared.dry_run,
    };
    let plan = decide::members::decide(&observed, shared.clock.now());
    let done = plan.notes();
    ebb_runtime::execute::execute(plan, shared, FIELD_MANAGER, &()).await?;
    Ok(done)
}

/// The Scale `workload` names in `hpa`'s namespace, the read ServiceScalers make too
/// ([`crate::reconcile::read_scale`]); `None` when nothing is to be read.
async fn read_scale(
    client: &kube::Client,
    hpa: &HorizontalPodAutoscaler,
    workload: Option<&decide::ScaleRead>,
) -> Result<Option<Scale>, frame::Failure> {
    match workload {
        Some(workload) => {
            let namespace = hpa.namespace().unwrap_or_default();
            crate::reconcile::read_scale(client, &namespace, workload).await
        }
        None => Ok(None),
    }
}

/// FleetSchedules' status in the frame, keyed by FleetSchedule: its calendars
/// ([`decide::fleets::reads`]), then its status from the caches ([`decide::fleets::decide`]).
impl frame::Reconciler<FleetSchedule> for FleetOwn {
    type Error = frame::Failure;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(
        fleet: Arc<FleetSchedule>,
        ctx: &Context,
    ) -> Result<Requeue, frame::Failure> {
        if !ctx.own.listed() {
            return Ok(Requeue::After(NOT_LISTED_YET));
        }
        let names = decide::fleets::reads(&fleet);
        let calendars = ctx
            .own
            .calendars
            .resolve(names.iter().map(String::as_str))?;
        let plan = {
            let all = ctx.own.typed_fleets();
            let fleets: Vec<&FleetSchedule> = fleets_of(&all).collect();
            let hpas = ctx.own.hpas.state();
            let metas: Vec<&ObjectMeta> = hpas
                .iter()
                .filter(|hpa| hpa.fits())
                .map(|hpa| kube::Resource::meta(hpa.as_ref()))
                .collect();
            let has_scaler = |meta: &ObjectMeta| ctx.own.has_scaler(meta);
            let observed = decide::fleets::Observed {
                fleet: &fleet,
                fleets: &fleets,
                hpas: &metas,
                service_scaler: &has_scaler,
                reach: ctx.own.reach(),
                calendars: &calendars,
            };
            decide::fleets::decide(&observed, ctx.clock.now())
        };
        ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await
    }
}
