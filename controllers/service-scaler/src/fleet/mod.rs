//! FleetSchedules: two reconcilers in the shared frame, one scope at a time ([`reconcile`]: the
//! room's reconcilers; here, the watches and caches they decide on).
//!
//! - the members, keyed by HPA ([`FleetOwn`]'s `Reconciler<HpaMeta>`): an HPA's pass finds, in memory,
//!   who schedules it ([`decide::members::reads`]: [`decide::claim`]); only a member, or an HPA
//!   carrying a record to act on ([`decide::needs_pass`]), is decided
//!   ([`decide::members::decide`]) on the HPA as the cache
//!   holds it (after a conflict, as the frame read it again; its target's Scale is read when a
//!   hibernation concerns it) and handed to the executor. Its trigger is the process's one cache
//!   of the HPAs of the scope, which keeps their metadata and, packed, their spec but not their
//!   status ([`CachedHpa`]), and passes on new HPAs and changes of their generation, labels or
//!   annotations (the HPA controller's status writes run nothing, nor do the events of this
//!   process's own writes), plus every change of a FleetSchedule (mapped to the HPAs it matches
//!   or marked) and of a ServiceScaler (mapped to the HPA of its name). Each trigger's cache is
//!   updated before its event runs a pass. The ServiceScalers' passes read their HPAs from the
//!   same cache ([`HpaCache`]).
//! - the fleets, keyed by FleetSchedule ([`FleetOwn`]'s `Reconciler<FleetSchedule>`): its status
//!   (members, the range in force, `SpecValid`, `Conflict`, `Ready`) from the same caches, with no
//!   read; run again when an HPA of a namespace it reaches changes, and at its next transition.
//!
//! No pass acts before every cache it decides on holds its first full list: an empty cache of
//! FleetSchedules would look like "no fleet", and restore every member.

pub mod plan;
pub mod reconcile;

pub use reconcile::{Context, FleetOwn, release_member};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ebb_crds::fleet::FleetSchedule;
use ebb_crds::service_scaler::ServiceScaler;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::{
    OnChanges, Wiring, controller, controller_on_changes, watcher_config,
};
use ebb_runtime::watch::cache::Names;
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::packed::{Packed, Projection};
use futures::{Stream, StreamExt};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use crate::decide::{self, Reach};
use crate::metrics::Metrics;

/// An HPA as a pass decides on it: as cached, its metadata (slimmed) and spec, no status.
pub type HpaMeta = HorizontalPodAutoscaler;

/// An HPA as the process's cache of them holds it: its metadata (slimmed) and, packed, its spec
/// ([`NoStatus`]). Every rule reads the spec (its settings, its target); none reads the status,
/// which the HPA controller rewrites on every change of the metrics.
pub type CachedHpa = Packed<HpaMeta, NoStatus>;

/// What the HPA cache drops: the status.
#[derive(Debug)]
pub enum NoStatus {}

impl Projection<HpaMeta> for NoStatus {
    fn project(hpa: &mut HpaMeta) {
        hpa.status = None;
    }

    fn project_json(hpa: &mut serde_json::Map<String, serde_json::Value>) {
        hpa.remove("status");
    }
}

/// One scope's cache of HPAs ([`CachedHpa`]), and whether it holds its first full list: what a
/// ServiceScaler's pass reads its HPA from.
#[derive(Clone)]
pub struct HpaCache {
    /// The namespace the cache covers, `None` for all.
    pub scope: Option<String>,
    /// The HPAs.
    pub store: Store<CachedHpa>,
    /// Whether it holds its first full list.
    pub listed: Arc<AtomicBool>,
}

/// The process's HPA caches, one per scope ([`HpaCache`]); none where a pass reads by GET (the
/// cleanup, tests).
#[derive(Clone, Default)]
pub struct HpaCaches(pub Vec<HpaCache>);

/// How long a pass waits for the HPA cache of its scope to hold its first full list (a process
/// starting): past it the pass reads its HPA by GET.
const LIST_WAIT: Duration = Duration::from_secs(30);

impl HpaCaches {
    /// HPA `namespace/name` as the cache of its scope holds it, once that cache holds its first
    /// full list (waiting at most [`LIST_WAIT`]): `Some(None)` when it has none; `None` when no
    /// cache covers the namespace, or it was not listed in time (read it by GET).
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Option<HorizontalPodAutoscaler>> {
        let cache = self
            .0
            .iter()
            .find(|c| c.scope.as_deref().is_none_or(|scope| scope == namespace))?;
        let waited = tokio::time::timeout(LIST_WAIT, async {
            while !cache.listed.load(Ordering::Acquire) {
                tokio::time::sleep(NOT_LISTED_YET / 10).await;
            }
        });
        waited.await.ok()?;
        let cached = cache.store.get(&ObjectRef::new(name).within(namespace));
        Some(cached.and_then(|hpa| hpa.unpack().ok()))
    }
}

/// The caches of one scope: FleetSchedules, ServiceScalers (their names), HPAs (no status).
pub type Caches = (Store<Guarded<FleetSchedule>>, Names, Store<CachedHpa>);

/// How long a FleetSchedule's status waits for more of its members' changes before its pass,
/// which reads every member: at a range's edge each member's write asks for one (at 10 000
/// members the passes ran back to back, half a core, beside the members' writes), gathered it is
/// one pass a second at most, and a status at most a second late.
const STATUS_GATHERS: Duration = Duration::from_secs(1);

/// How soon a pass that found a cache not yet listed looks again.
pub(crate) const NOT_LISTED_YET: Duration = Duration::from_secs(1);

/// A watch of `api` kept in a cache (`Store`) and passed on as the objects whose generation,
/// labels or annotations changed (deleted ones included), each after the cache holds it;
/// `listed` is set once the first full list is in.
fn cached_changes<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    listed: Arc<AtomicBool>,
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: kube::Resource + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    // What no pass reads (managedFields, kubectl's last-applied copy) stays out of the cache.
    let events = reflector::reflector(writer, events.modify(ebb_runtime::process::app::slim))
        .inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                listed.store(true, Ordering::Release);
            }
        });
    (
        reader,
        ebb_runtime::watch::triggers::spec_changes_of(events),
    )
}

/// The FleetSchedules of `fleets` whose ranges name HolidayCalendar `name`.
fn fleets_naming(fleets: &Store<Guarded<FleetSchedule>>, name: &str) -> Vec<FleetSchedule> {
    fleets
        .state()
        .iter()
        .filter_map(|g| g.0.as_ref().ok())
        .filter(|fleet| decide::calendar_names(&fleet.spec.time_range_spec).contains(&name))
        .cloned()
        .collect()
}

/// The HPAs (of `hpas`) a change of `fleet` concerns: those it may match now, and those marked
/// as scheduled by it.
fn hpas_of(
    fleet: &FleetSchedule,
    hpas: &Store<CachedHpa>,
    reach: Reach<'_>,
) -> Vec<ObjectRef<CachedHpa>> {
    let key = decide::fleet_key(fleet);
    // A deleted FleetSchedule still names what it matched: those are passed too.
    let mut alive = fleet.clone();
    alive.metadata.deletion_timestamp = None;
    hpas.state()
        .iter()
        .filter(|hpa| hpa.fits())
        .filter(|hpa| {
            let marked = hpa.annotations().get(decide::FLEET_ANNOTATION) == Some(&key);
            marked || decide::selects(&alive, kube::Resource::meta(hpa.as_ref()), reach)
        })
        .map(|hpa| ObjectRef::from_obj(hpa.as_ref()))
        .collect()
}

/// The FleetSchedule controllers of one scope (`scope`: a namespace, or `None` for all): the
/// members' and the FleetSchedules' status, until the shutdown; and the scope's HPA cache they
/// keep. `changed` sees each HPA whose generation, labels or annotations someone else changed
/// (not this process's own writes): the ServiceScalers' trigger.
pub fn controllers(
    wiring: &Wiring,
    scope: Option<&str>,
    (metrics, calendars): (Metrics, &CalendarCache),
    changed: impl Fn(&CachedHpa) + Send + Sync + 'static,
) -> (
    impl std::future::Future<Output = ()> + Send + 'static,
    HpaCache,
) {
    let client = wiring.client.clone();
    let contact = wiring.warm_up.contact().clone();
    let listed: [Arc<AtomicBool>; 3] = Default::default();

    // FleetSchedules, for the members' trigger and cache.
    // Selected as the ServiceScalers are (`--label-selector`).
    let fleet_config = watcher_config(&wiring.common);
    let fleet_api: Api<Guarded<FleetSchedule>> =
        ebb_runtime::process::app::scoped_api(&client, scope);
    let fleet_events = ebb_runtime::watch::contact::resilient(
        move || watcher(fleet_api.clone(), fleet_config.clone()),
        &contact,
        "FleetSchedule",
    );
    let (fleets, fleet_changes) = cached_changes(fleet_events, listed[0].clone());
    // ServiceScalers, by name only (their metadata is all the server sends; the names are all
    // that is kept): one of an HPA's name takes it over.
    let scaler_api: Api<PartialObjectMeta<ServiceScaler>> =
        ebb_runtime::process::app::scoped_api(&client, scope);
    let scaler_events = ebb_runtime::watch::contact::resilient(
        move || {
            watcher(
                scaler_api.clone(),
                watcher::Config::default().any_semantic(),
            )
        },
        &contact,
        "ServiceScaler",
    );
    let scalers = Names::default();
    let (names, scalers_listed) = (scalers.clone(), listed[1].clone());
    let scaler_changes =
        ebb_runtime::watch::triggers::spec_changes_of(scaler_events.inspect(move |event| {
            if let Ok(event) = event {
                names.take_in(event);
                if matches!(event, watcher::Event::InitDone) {
                    scalers_listed.store(true, Ordering::Release);
                }
            }
        }));

    // The members: a changed HPA also runs the status of the FleetSchedules of its namespace.
    let (namespaces, changed_namespaces) = futures::channel::mpsc::unbounded::<String>();
    let hpa_listed = listed[2].clone();
    let members = controller_on_changes(
        ebb_runtime::process::app::scoped_api::<CachedHpa>(&client, scope),
        watcher::Config::default().any_semantic(),
        &wiring.warm_up,
        &wiring.own_writes,
        OnChanges {
            listed: Box::new(move || hpa_listed.store(true, Ordering::Release)),
            changed: Box::new(move |hpa: &CachedHpa| {
                let _ = namespaces.unbounded_send(
                    kube::Resource::meta(hpa)
                        .namespace
                        .clone()
                        .unwrap_or_default(),
                );
            }),
            changed_by_others: Box::new(changed),
        },
    );
    let hpas = members.store();
    let cache = HpaCache {
        scope: scope.map(str::to_owned),
        store: hpas.clone(),
        listed: listed[2].clone(),
    };
    let status = controller(
        ebb_runtime::process::app::scoped_api::<Guarded<FleetSchedule>>(&client, scope),
        watcher_config(&wiring.common),
        &wiring.warm_up,
    );
    let status_store = status.store();
    let own = FleetOwn::new(
        metrics,
        (fleets.clone(), scalers, hpas.clone()),
        listed,
        (wiring.common.lease_namespace.clone(), scope.is_none()),
        calendars.clone(),
    );
    let ctx = wiring.context(own);

    let reach_ctx = ctx.clone();
    let token = wiring.shutdown.token();
    let hpas_for_fleets = hpas.clone();
    // A calendar's change: the HPAs of the fleets naming it, and those fleets' status.
    let fleets_for_calendars = fleets.clone();
    let hpas_for_calendars = hpas.clone();
    let calendar_ctx = ctx.clone();
    let members = members
        .reconcile_on(calendars.changes().flat_map(move |name| {
            let due: Vec<_> = fleets_naming(&fleets_for_calendars, &name)
                .iter()
                .flat_map(|fleet| hpas_of(fleet, &hpas_for_calendars, calendar_ctx.own.reach()))
                .collect();
            futures::stream::iter(due)
        }))
        .watches_stream(
            fleet_changes,
            move |fleet: Guarded<FleetSchedule>| match &fleet.0 {
                Ok(fleet) => hpas_of(fleet, &hpas_for_fleets, reach_ctx.own.reach()),
                Err(_) => Vec::new(),
            },
        )
        .watches_stream(
            scaler_changes,
            |scaler: PartialObjectMeta<ServiceScaler>| {
                Some(
                    ObjectRef::new(&scaler.name_any())
                        .within(&scaler.namespace().unwrap_or_default()),
                )
            },
        )
        .graceful_shutdown_on(async move { token.cancelled().await });
    let token = wiring.shutdown.token();
    let reach_ctx = ctx.clone();
    let fleets_for_status = fleets.clone();
    let status = status
        .reconcile_on(calendars.changes().flat_map(move |name| {
            let due: Vec<ObjectRef<Guarded<FleetSchedule>>> =
                fleets_naming(&fleets_for_status, &name)
                    .iter()
                    .map(|fleet| {
                        ObjectRef::new(&fleet.name_any())
                            .within(&fleet.namespace().unwrap_or_default())
                    })
                    .collect();
            futures::stream::iter(due)
        }))
        .reconcile_on(
            ebb_runtime::watch::triggers::coalesced(changed_namespaces, STATUS_GATHERS).flat_map(
                move |namespace| {
                    let due: Vec<ObjectRef<Guarded<FleetSchedule>>> = status_store
                        .state()
                        .iter()
                        .filter(|g| match &g.0 {
                            Ok(fleet) => reach_ctx.own.reach().reaches(fleet, &namespace),
                            Err(_) => false,
                        })
                        .map(|g| ObjectRef::from_obj(g.as_ref()))
                        .collect();
                    futures::stream::iter(due)
                },
            ),
        )
        .graceful_shutdown_on(async move { token.cancelled().await });
    let members = frame::run(members, ctx.clone(), |_| {});
    let status = frame::run(status, ctx, |_| {});
    let run = async move {
        futures::join!(members, status);
    };
    (run, cache)
}
