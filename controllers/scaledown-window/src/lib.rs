//! scaledown-window: the cluster may remove nodes only inside time windows.
//!
//! A cluster-scoped `ScaleDownSchedule` (`scaling.ebb.dev/v1alpha1`) lists windows (five-field cron,
//! a duration, an IANA zone) and optionally follows OpenShift maintenance (ClusterVersion upgrades
//! and MachineConfigPool rollouts). While any window is
//! open scale-down is allowed; otherwise it is held off on one target: an OpenShift
//! ClusterAutoscaler (`spec.scaleDown.enabled`), annotated Nodes (upstream cluster-autoscaler),
//! pinned MachineAutoscalers, or a `nodes: "0"` disruption budget on Karpenter NodePools.
//!
//! - [`decide`]: every rule, pure.
//! - [`reconcile`]: observe -> decide -> minimal writes -> status, Events, metrics, as the
//!   pass of [`reconcile::Own`] in the shared reconcile frame (`ebb_runtime::execute::frame`).
//! - [`targets`]: the target kinds as dynamic resources, their views and patch bodies.
//! - [`plan`]: the offline `plan` subcommand.

ebb_runtime::controller_names!("scaledown-window");
/// The scope of the controller's own kind: its ScaleDownSchedules are cluster-scoped: `--namespace` never splits them between installs.
pub const KIND: ebb_runtime::process::app::Kind = ebb_runtime::process::app::Kind::ClusterScoped;

pub use scaledown_window_decide as decide;
pub mod cleanup;
pub mod metrics;
pub mod plan;
pub mod reconcile;
pub use scaledown_window_decide::targets;

use std::future::Future;
use std::sync::Arc;

use clap::builder::BoolishValueParser;
use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::{Wiring, scoped_apis_with, watcher_config};
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::contact::resilient;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::own_writes::OwnWrites;
use ebb_runtime::watch::projected::{Projected, ProjectedFeed, Seen};
use ebb_runtime::watch::queue::Queued;
use ebb_runtime::{ApiContact, CommonArgs};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use crate::decide::{NodeView, TargetKind};
use crate::metrics::Metrics;
use crate::reconcile::{EnabledTargets, Own};

/// Flags of the controller (`scaledown-window` without a subcommand).
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Flags every ebb controller takes. `--namespace` limits the MachineAutoscaler and
    /// MachineSet watches (ScaleDownSchedules are cluster-scoped).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Serve `clusterAutoscaler` targets (OpenShift ClusterAutoscaler `spec.scaleDown.enabled`).
    #[arg(
        long,
        env = "EBB_ENABLE_CLUSTER_AUTOSCALER",
        default_value_t = true,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub enable_cluster_autoscaler: bool,
    /// Serve `nodeAnnotation` targets (annotates Nodes; needs node patch rights).
    #[arg(
        long,
        env = "EBB_ENABLE_NODE_ANNOTATION",
        default_value_t = false,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub enable_node_annotation: bool,
    /// Serve `machineAutoscalers` targets (OpenShift MachineAutoscalers and their MachineSets).
    #[arg(
        long,
        env = "EBB_ENABLE_MACHINE_AUTOSCALERS",
        default_value_t = false,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub enable_machine_autoscalers: bool,
    /// Serve `karpenterNodePools` targets (Karpenter `karpenter.sh/v1` NodePools).
    #[arg(
        long,
        env = "EBB_ENABLE_KARPENTER",
        default_value_t = false,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub enable_karpenter: bool,
    /// Read the OpenShift ClusterVersion and MachineConfigPools for
    /// `maintenance.followClusterUpgrade`; when off, that setting has no effect.
    #[arg(
        long,
        env = "EBB_ENABLE_CLUSTER_VERSION",
        default_value_t = true,
        value_parser = BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub enable_cluster_version: bool,
}

impl AsRef<CommonArgs> for RunArgs {
    fn as_ref(&self) -> &CommonArgs {
        &self.common
    }
}

impl RunArgs {
    /// The target kinds the flags switch on.
    pub fn targets(&self) -> EnabledTargets {
        EnabledTargets {
            cluster_autoscaler: self.enable_cluster_autoscaler,
            node_annotation: self.enable_node_annotation,
            machine_autoscalers: self.enable_machine_autoscalers,
            karpenter: self.enable_karpenter,
            cluster_version: self.enable_cluster_version,
        }
    }
}

/// A watched schedule, or one that does not deserialize.
type GuardedSchedule = Guarded<ScaleDownSchedule>;

/// The schedules in `store` for which `wanted` holds.
fn schedules_where(
    store: &Store<GuardedSchedule>,
    wanted: impl Fn(&ScaleDownSchedule) -> bool,
) -> Vec<ObjectRef<GuardedSchedule>> {
    store
        .state()
        .iter()
        .filter(|g| g.0.as_ref().is_ok_and(&wanted))
        .map(|g| ObjectRef::from_obj(g.as_ref()))
        .collect()
}

fn of_kind(kind: TargetKind) -> impl Fn(&ScaleDownSchedule) -> bool + Clone {
    move |s| decide::target_kind(&s.spec.target) == Ok(kind)
}

/// A Node as the cache keeps it: the view a pass decides on ([`targets::node_view`]): its
/// name, labels, resourceVersion and ebb's four annotations. Real Nodes carry many annotations
/// of their own (CSI, CNI, the kubelet's) that a cache of thousands of Nodes need not hold.
pub fn node_view(node: &PartialObjectMeta<Node>) -> NodeView {
    targets::node_view(&node.metadata)
}

/// Adds the watches that wake schedules when their target objects change: only for enabled
/// kinds, so a cluster without a kind's CRD (and the RBAC for it) never watches it. The dynamic
/// watches have no predicate, so any change, the pause annotations included, wakes them: lifting
/// an object's pause takes effect at once.
fn watch_targets(
    mut controller: Queued<GuardedSchedule>,
    client: &Client,
    args: &RunArgs,
    store: &Store<GuardedSchedule>,
    nodes: Option<ProjectedFeed<PartialObjectMeta<Node>, NodeView>>,
    (contact, own): (&ApiContact, &OwnWrites),
) -> Queued<GuardedSchedule> {
    let targets = args.targets();
    let dynamic =
        |controller: Queued<GuardedSchedule>,
         api: Api<DynamicObject>,
         ar: ApiResource,
         wanted: Box<dyn Fn(&ScaleDownSchedule) -> bool + Send + Sync>| {
            let store = store.clone();
            let events = resilient(
                move || watcher::watcher(api.clone(), watcher::Config::default()),
                contact,
                &ar.kind,
            );
            controller.watches_stream_with(
                events.touched_objects(),
                move |_| schedules_where(&store, &wanted),
                ar,
            )
        };
    if targets.cluster_autoscaler || targets.machine_autoscalers {
        // Its own schedules write it; machineAutoscalers schedules report whether it allows
        // scale-down at all.
        let ar = targets::cluster_autoscaler();
        let api = Api::all_with(client.clone(), &ar);
        let kinds = [
            (targets.cluster_autoscaler, TargetKind::ClusterAutoscaler),
            (targets.machine_autoscalers, TargetKind::MachineAutoscalers),
        ];
        let woken =
            move |s: &ScaleDownSchedule| kinds.iter().any(|(on, kind)| *on && of_kind(*kind)(s));
        controller = dynamic(controller, api, ar, Box::new(woken));
    }
    if targets.machine_autoscalers {
        for ar in [targets::machine_autoscaler(), targets::machine_set()] {
            for api in scoped_apis_with(client, &args.common, &ar) {
                let wanted = Box::new(of_kind(TargetKind::MachineAutoscalers));
                controller = dynamic(controller, api, ar.clone(), wanted);
            }
        }
    }
    if targets.karpenter {
        let ar = targets::node_pool();
        let api = Api::all_with(client.clone(), &ar);
        controller = dynamic(
            controller,
            api,
            ar,
            Box::new(of_kind(TargetKind::KarpenterNodePools)),
        );
    }
    if targets.cluster_version {
        // A pool starting or finishing its rollout flips schedules that follow maintenance as
        // the ClusterVersion does. Where either API is absent its watch only retries (backoff).
        let follows = |s: &ScaleDownSchedule| {
            s.spec
                .maintenance
                .as_ref()
                .is_some_and(|m| m.follow_cluster_upgrade)
        };
        for ar in [targets::cluster_version(), targets::machine_config_pool()] {
            let api = Api::all_with(client.clone(), &ar);
            controller = dynamic(controller, api, ar, Box::new(follows));
        }
    }
    if let Some(feed) = nodes {
        // Nodes join and change labels at any time; a metadata watch filtered to what ebb reads
        // keeps this cheap, and fills the cache a Nodes target reads.
        let node_meta: Api<PartialObjectMeta<Node>> = Api::all(client.clone());
        let nodes = feed.events(
            node_meta,
            watcher::Config::default(),
            contact,
            NodeView::same_marks,
        );
        controller = controller.reconcile_on(node_wakes(nodes, own, store.clone()));
    }
    controller
}

/// Which schedules Node events wake: when a Node's labels, ebb's two annotations or its pause
/// annotations changed (its view, [`NodeView::same_marks`]) by someone else, the Nodes schedules
/// the change concerns ([`concerns`]); when the watch listed (the first time: the passes that
/// found the cache cold go at once), every Nodes schedule. The events of this process's own
/// Node writes wake none: at an edge a schedule writes thousands of Nodes, and each of their
/// events woke every other Nodes schedule for a pass over all Nodes, back to back for the whole
/// edge (20 000 Nodes and two schedules: 19 s of CPU where 10 000 and one took 1.8 s). Nor does a
/// Node wake a schedule of another target kind, whose pass reads its own objects from the API
/// server: a Node joining the cluster cost each of them a pass and its reads.
fn node_wakes(
    nodes: impl Stream<Item = Result<Seen<PartialObjectMeta<Node>, NodeView>, watcher::Error>>
    + Send
    + 'static,
    own: &OwnWrites,
    schedules: Store<GuardedSchedule>,
) -> impl Stream<Item = ObjectRef<GuardedSchedule>> + Send + 'static {
    own.skip_by(nodes, changed_node).flat_map(move |seen| {
        let woken = match seen {
            Ok(Seen::Listed { .. }) => {
                schedules_where(&schedules, of_kind(TargetKind::NodeAnnotation))
            }
            Ok(Seen::Changed { before, after, .. }) => {
                let views = [before, after];
                schedules_where(&schedules, |s| concerns(s, views.iter().flatten()))
            }
            Err(error) => {
                tracing::warn!(%error, "node watch");
                Vec::new()
            }
        };
        futures::stream::iter(woken)
    })
}

/// The Node a watch event brings (a list brings none): how an own write's event is told.
fn changed_node(
    seen: &Result<Seen<PartialObjectMeta<Node>, NodeView>, watcher::Error>,
) -> Option<&PartialObjectMeta<Node>> {
    match seen {
        Ok(Seen::Changed { object, .. }) => Some(object),
        _ => None,
    }
}

/// Whether a Node seen as `views` (before and after a change) concerns `schedule`: its target
/// is Nodes and selects one of them, or one of them carries ebb's mark naming it. Only such a
/// schedule's decision on the Node can differ: a Node neither selected nor marked by a schedule
/// is not its to change, and the one that claims a Node selected by several selects it too.
fn concerns<'v>(
    schedule: &ScaleDownSchedule,
    mut views: impl Iterator<Item = &'v Arc<NodeView>>,
) -> bool {
    let Ok(target) = decide::resolve_target(&schedule.spec.target) else {
        return false;
    };
    let name = schedule.metadata.name.as_deref();
    target.kind() == TargetKind::NodeAnnotation
        && views.any(|view| {
            target.selects(&view.id())
                || name.is_some_and(|name| view.disabled_by.as_deref() == Some(name))
        })
}

/// `scaledown-window cleanup`: releases what every ScaleDownSchedule set on its target (the
/// target kinds `args` enables) and removes the finalizers ([`cleanup::release_all`]); with
/// `--keep-settings` (`leave`) only the finalizers go.
///
/// # Errors
/// The first read or write that failed.
pub async fn clean(
    shared: frame::Shared,
    args: RunArgs,
    leave: ebb_runtime::process::cleanup::Leave,
) -> Result<Vec<String>, reconcile::Error> {
    let mut nodes = Projected::default();
    if args.targets().node_annotation {
        // No watch runs here: one list fills the Node cache a Nodes target reads.
        let api: Api<Node> = Api::all(shared.client.clone());
        let listed = api
            .list_metadata(&Default::default())
            .await
            .map_err(reconcile::Error::Observe)?;
        nodes.scope(node_view).fill(listed.items);
    }
    let own = Own {
        metrics: Metrics::new(&mut prometheus_client::registry::Registry::default()),
        targets: args.targets(),
        nodes,
        schedules: None,
        // Releasing reads no window.
        calendars: CalendarCache::default(),
    };
    let selector = args.common.label_selector();
    cleanup::release_all(&frame::Context::new(shared, own), selector, leave).await
}

/// The controller's watches and reconciles on `wiring`, until its shutdown: what the binary runs
/// after its process edges are up, and what the simulator runs on virtual time.
pub fn controllers(
    args: RunArgs,
    wiring: Wiring,
    metrics: Metrics,
) -> impl Future<Output = ()> + Send + 'static {
    let client = wiring.client.clone();
    tracing::info!(targets = ?args.targets(), "target kinds");
    let mut nodes = Projected::default();
    let feed = args
        .targets()
        .node_annotation
        .then(|| nodes.scope(node_view));
    let schedules: Api<GuardedSchedule> = Api::all(client.clone());
    // /readyz turns green once the schedule cache holds its first full list.
    let controller = ebb_runtime::process::app::controller(
        schedules,
        watcher_config(&args.common),
        &wiring.warm_up,
    );
    let store = controller.store();
    // HolidayCalendars: a change runs the schedules naming it.
    let (calendars, watch_calendars) = CalendarCache::watch(
        &client,
        wiring.warm_up.contact(),
        &wiring.shutdown,
        wiring.metrics.undecodable(CalendarCache::KIND),
    );
    let naming = store.clone();
    let controller = controller.reconcile_on(
        calendars
            .changes()
            .flat_map(move |name| futures::stream::iter(schedules_naming(&naming, &name))),
    );
    let ctx = wiring.context(Own {
        metrics,
        targets: args.targets(),
        nodes,
        calendars,
        // Without a label selector the cache holds every schedule: the claimants are read there.
        schedules: args
            .common
            .label_selector()
            .is_none()
            .then(|| store.clone()),
    });
    let controller = watch_targets(
        controller,
        &client,
        &args,
        &store,
        feed,
        (wiring.warm_up.contact(), &wiring.own_writes),
    );
    let shutdown = wiring.shutdown.clone();
    let controller = controller.graceful_shutdown_on(async move { shutdown.cancelled().await });
    // A schedule deleted before its reconcile ran drops its gauges here.
    let gauges = ctx.own.metrics.clone();
    let run = frame::run(controller, ctx, move |name| gauges.forget(name));
    async move {
        futures::join!(run, watch_calendars);
    }
}

/// The ScaleDownSchedules of `store` whose windows name HolidayCalendar `name`.
fn schedules_naming(store: &Store<GuardedSchedule>, name: &str) -> Vec<ObjectRef<GuardedSchedule>> {
    store
        .state()
        .iter()
        .filter(|g| {
            g.0.as_ref()
                .is_ok_and(|s| decide::calendar_names(&s.spec.windows).contains(&name))
        })
        .map(|g| ObjectRef::from_obj(g.as_ref()))
        .collect()
}

ebb_runtime::controller! {
    /// scaledown-window as ebb runs it: the binary's one `main` and the simulator's `World::run`.
    pub struct ScaledownWindowController;
    about: "Cluster scale-down only inside time windows (ScaleDownSchedule)",
    plan: "Whether a ScaleDownSchedule file allows scale-down at an instant, offline (no cluster)",
    clean: clean => reconcile::Error,
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
