//! service-scaler: time-window overrides of HorizontalPodAutoscaler settings, a drop-in for
//! udaan's Service Scaler (`scaler.udaan.io/v1` `ServiceScaler`).
//!
//! The HPA with the ServiceScaler's name gets `spec.hpa` (the defaults), overridden while a
//! time range of `spec.timeRangeSpec` is in force; the controller wakes at the next boundary
//! instead of polling.
//!
//! - [`decide`]: every rule, pure.
//! - [`lead`]: the lead-time rule (stepping increases up ahead of their boundary), pure.
//! - [`reconcile`]: observe -> decide -> apply, with server-side apply of the owned HPA fields,
//!   as a [`Reconciler`](ebb_runtime::execute::frame::Reconciler) run by the shared reconcile frame
//!   (followers, conflicts, malformed objects, metrics and the error policy are the frame's).
//! - [`plan`]: the offline `plan` subcommand.
//! - [`metrics`]: the controller's own gauges and counters.
//!
//! See `controllers/service-scaler/README.md` for users.

ebb_runtime::controller_names!("service-scaler");
/// The scope of the controller's own kind: its objects are namespaced.
pub const KIND: ebb_runtime::process::app::Kind = ebb_runtime::process::app::Kind::Namespaced;

pub use service_scaler_decide as decide;
pub use service_scaler_decide::lead;
pub mod fleet;
pub mod ledger;
pub mod metrics;
pub mod plan;
pub mod reconcile;

use std::future::Future;

use ebb_crds::service_scaler::ServiceScaler;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::{Wiring, watcher_config};
use ebb_runtime::process::cleanup::Leave;
use ebb_runtime::watch::calendars::CalendarCache;
use ebb_runtime::watch::packed::{JsonString, Packed, Unlabelled};
use ebb_runtime::watch::projected::Projected;
use ebb_runtime::watch::squeezed::Squeezed;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::{Api, Resource, ResourceExt};

use crate::metrics::Metrics;
use crate::reconcile::Own;

/// Flags of the controller (`service-scaler` without a subcommand): the common ones (for
/// service-scaler, `--label-selector` / `LABEL_SELECTOR` limits the objects managed).
pub type RunArgs = ebb_runtime::process::args::CommonOnly;

/// A ServiceScaler as the controller's watch brings it: its metadata but its labels (no rule
/// reads them; `--label-selector` is the API server's to apply) and, packed, the rest. The cache
/// keeps it [`Squeezed`].
pub type CachedScaler = Packed<ServiceScaler, Unlabelled>;

/// The controller's cache of ServiceScalers (one scope's).
pub type Scalers = Projected<Squeezed<ServiceScaler>>;

/// The ServiceScaler a HPA belongs to: the one of the same name, if the cache holds it (its
/// `namespace/name`).
pub fn scaler_of<K: Resource>(store: &Scalers, hpa: &K) -> Option<String> {
    let key = format!("{}/{}", hpa.namespace()?, hpa.name_any());
    store.get(&key).map(|_| key)
}

/// The ServiceScalers of `store` whose ranges name HolidayCalendar `name` (their
/// `namespace/name`). Only those whose squeezed JSON holds the string `name` are decoded
/// ([`Squeezed::may_hold`]): a calendar's change costs a byte scan of the cache, not a decode
/// of every ServiceScaler in it. None before the cache's first list (which runs every one).
pub fn scalers_naming(store: &Scalers, name: &str) -> Vec<String> {
    let quoted = JsonString::new(name);
    store
        .all()
        .unwrap_or_default()
        .iter()
        .filter(|cached| cached.may_hold(&quoted))
        .filter_map(|cached| cached.unsqueeze().ok())
        .filter(|scaler| decide::calendar_names(&scaler.spec.time_range_spec).contains(&name))
        .map(|scaler| ebb_runtime::watch::queue::object_key(&scaler))
        .collect()
}

/// `service-scaler cleanup`: gives back what this install put in force, before an uninstall.
/// Every ServiceScaler it manages (`--label-selector`) has its hibernated workload woken and its
/// HPA set to the defaults ([`reconcile::release`]); every fleet member of its FleetSchedules
/// (or of one that is gone) gets its recorded values, and its hibernated target its replicas,
/// back, and the record goes ([`fleet::release_member`]); then ebb's and udaan's finalizers go.
/// With `--keep-settings` (`leave`) only the finalizers go. One line per object.
///
/// # Errors
/// The first read or write that failed.
pub async fn clean(
    shared: frame::Shared,
    args: RunArgs,
    leave: Leave,
) -> Result<Vec<String>, frame::Failure> {
    let keep = leave == Leave::Settings;
    let resource = kube::api::ApiResource::erase::<ServiceScaler>(&());
    let selected = match args.common.label_selector() {
        Some(selector) => kube::api::ListParams::default().labels(selector),
        None => kube::api::ListParams::default(),
    };
    let own = Own {
        metrics: Metrics::new(&mut prometheus_client::registry::Registry::default()),
        calendars: CalendarCache::default(),
        // No cache: each HPA is read by GET.
        hpas: fleet::HpaCaches::default(),
        // Only an existing ledger is written (an install from before it has none).
        ledger: ledger::existing(&shared.client, ledger_of(&args.common)).await?,
    };
    let ctx = frame::Context::new(shared.clone(), own);
    let mut lines = Vec::new();
    for api in ebb_runtime::process::app::scoped_apis_with(&shared.client, &args.common, &resource)
    {
        let listed = api
            .list(&selected)
            .await
            .map_err(frame::ReadError::of("the ServiceScalers".to_owned()))?;
        for object in listed {
            let key = format!(
                "{}/{}",
                object.namespace().unwrap_or_default(),
                object.name_any()
            );
            let done = match reconcile::typed(object, &key) {
                Ok(scaler) => reconcile::release(&scaler, &ctx, keep).await?,
                // Nothing of it can be read, so nothing it set can be found; the finalizer goes.
                Err((object, _)) => remove_finalizer(&shared, &object).await?,
            };
            lines.push(format!("ServiceScaler {key}: {}", said(done, keep)));
        }
    }
    if keep {
        return Ok(lines);
    }
    // The fleet members this install's FleetSchedules scheduled (or a gone one's), not those of
    // another install's (its own cleanup gives them back).
    let mut others = std::collections::HashSet::new();
    let fleet_resource = kube::api::ApiResource::erase::<ebb_crds::fleet::FleetSchedule>(&());
    for api in
        ebb_runtime::process::app::scoped_apis_with(&shared.client, &args.common, &fleet_resource)
    {
        let key = |m: &PartialObjectMeta<DynamicObject>| {
            format!("{}/{}", m.namespace().unwrap_or_default(), m.name_any())
        };
        let all = api
            .list_metadata(&Default::default())
            .await
            .map_err(frame::ReadError::of("the FleetSchedules".to_owned()))?;
        let mine = api
            .list_metadata(&selected)
            .await
            .map_err(frame::ReadError::of("the FleetSchedules".to_owned()))?;
        let mine: Vec<String> = mine.items.iter().map(key).collect();
        others.extend(all.items.iter().map(key).filter(|k| !mine.contains(k)));
    }
    for api in ebb_runtime::process::app::scoped_apis::<HorizontalPodAutoscaler>(
        &shared.client,
        &args.common,
    ) {
        let hpas = api
            .list(&Default::default())
            .await
            .map_err(frame::ReadError::of(
                "the HorizontalPodAutoscalers".to_owned(),
            ))?;
        for hpa in hpas {
            let annotations = hpa.annotations();
            let fleet = match (
                annotations.get(decide::FLEET_ANNOTATION),
                annotations.contains_key(decide::RECORD_ANNOTATION),
            ) {
                (Some(fleet), _) => fleet.clone(),
                (None, true) => String::new(),
                (None, false) => continue,
            };
            if others.contains(&fleet) {
                continue;
            }
            let key = format!("{}/{}", hpa.namespace().unwrap_or_default(), hpa.name_any());
            let done = fleet::release_member(&hpa, &shared).await?;
            lines.push(format!(
                "HorizontalPodAutoscaler {key} (fleet member): {}",
                said(done, false)
            ));
        }
    }
    // The hibernation ledger: the workloads of ServiceScalers deleted without ebb's finalizer,
    // or whose spec does not fit the type (only their finalizer went above), woken; then the
    // ledger deleted.
    ledger::settle(&ctx, None, ledger::Occasion::Uninstall).await?;
    if let Some(gone) = ledger::remove(&ctx).await? {
        lines.push(gone);
    }
    Ok(lines)
}

/// One cleanup line's phrases.
fn said(done: Vec<String>, keep: bool) -> String {
    match (done.is_empty(), keep) {
        (true, _) => "nothing to give back".to_owned(),
        (false, true) => format!("settings kept in force; {}", done.join("; ")),
        (false, false) => done.join("; "),
    }
}

/// Removes ebb's and udaan's finalizers from a ServiceScaler whose spec cannot be read.
async fn remove_finalizer(
    shared: &frame::Shared,
    object: &DynamicObject,
) -> Result<Vec<String>, frame::Failure> {
    let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
    let ours = object
        .finalizers()
        .iter()
        .any(|f| f == decide::FINALIZER || f == decide::UDAAN_FINALIZER);
    if !ours {
        return Ok(Vec::new());
    }
    if shared.dry_run {
        return Ok(vec![
            "dry run: would have removed its finalizers".to_owned(),
        ]);
    }
    let resource = kube::api::ApiResource::erase::<ServiceScaler>(&());
    let api = Api::namespaced_with(shared.client.clone(), &namespace, &resource);
    for finalizer in [decide::FINALIZER, decide::UDAAN_FINALIZER] {
        ebb_runtime::process::cleanup::remove_finalizer(&api, &name, finalizer)
            .await
            .map_err(frame::WriteError::of(
                "remove_finalizer",
                format!("ServiceScaler {namespace}/{name}"),
            ))?;
    }
    Ok(vec!["removed its finalizers".to_owned()])
}

/// The hibernation ledger of the install the common flags describe: beside its Lease.
fn ledger_of(common: &ebb_runtime::CommonArgs) -> ebb_core::plan::Target {
    decide::ledger::ledger_target(
        &common.lease_namespace,
        &common.lease_name_or(CONTROLLER_NAME),
    )
}

/// ServiceScalers reconciled and their HPAs watched, in every scope of `wiring.common`, until
/// the shutdown: what the binary runs once its process edges are up, and what the simulator runs
/// on virtual time. The flags (`RunArgs`) are the common ones, which `wiring` holds.
pub fn controllers(
    _: RunArgs,
    wiring: Wiring,
    metrics: Metrics,
) -> impl Future<Output = ()> + Send + 'static {
    // HolidayCalendars: one watch for every scope; a change runs the objects naming it.
    let (calendars, watch_calendars) = CalendarCache::watch(
        &wiring.client,
        wiring.warm_up.contact(),
        &wiring.shutdown,
        wiring.metrics.undecodable(CalendarCache::KIND),
    );
    // The HPAs: one cache per scope, kept by the FleetSchedule members' controller of that scope;
    // a change someone else made to an HPA (its generation, labels or annotations: drift, the
    // kill-switch, the pause annotations) runs the ServiceScaler of the same name too. The
    // events of this process's own writes run nothing.
    let mut controllers = Vec::new();
    let mut hpa_caches = Vec::new();
    let mut hpa_changes = Vec::new();
    for scope in ebb_runtime::process::app::scopes(&wiring.common) {
        let (changed, changes) = futures::channel::mpsc::unbounded();
        let (fleets, cache) = fleet::controllers(
            &wiring,
            scope.as_deref(),
            (metrics.clone(), &calendars),
            move |hpa: &fleet::CachedHpa| {
                let _ = changed.unbounded_send(hpa.clone());
            },
        );
        controllers.push(fleets.boxed());
        hpa_caches.push(cache);
        hpa_changes.push(changes);
    }
    let ctx = wiring.context(Own {
        metrics: metrics.clone(),
        calendars: calendars.clone(),
        ledger: Some(ledger_of(&wiring.common)),
        hpas: fleet::HpaCaches(hpa_caches),
    });
    // ServiceScalers deleted without ebb's finalizer: their hibernated workloads woken.
    let (gone, deleted) = tokio::sync::mpsc::unbounded_channel();

    // One controller per watched namespace (kube's Controller takes one Api).
    let scopes = wiring.scoped::<CachedScaler>().into_iter().zip(hpa_changes);
    for (scalers, hpa_changes) in scopes {
        // `--label-selector` selects ServiceScalers; every HPA is watched, so drift (its
        // generation moves), the kill-switch and the pause annotations reach the ServiceScaler of
        // the same name. Neither watch runs a pass for the event of the pass's own write (its
        // status, its HPA write): the pass decided on what it wrote, and its requeue is the next
        // look.
        // /readyz turns green once every ServiceScaler cache holds its first full list.
        let controller = ebb_runtime::process::app::squeezed_controller(
            scalers,
            watcher_config(&wiring.common),
            &wiring.warm_up,
            &wiring.own_writes,
        );
        let store = controller.store();
        let token = wiring.shutdown.token();
        let metrics = metrics.clone();
        let gone = gone.clone();
        let naming = store.clone();
        let controller = controller
            .reconcile_on(
                calendars
                    .changes()
                    .flat_map(move |name| futures::stream::iter(scalers_naming(&naming, &name))),
            )
            .reconcile_on(
                hpa_changes.filter_map(move |hpa| futures::future::ready(scaler_of(&store, &hpa))),
            )
            .graceful_shutdown_on(async move { token.cancelled().await });
        controllers.push(
            frame::run_squeezed(controller, ctx.clone(), move |key| {
                metrics.forget(key);
                let _ = gone.send(key.to_owned());
            })
            .boxed(),
        );
    }
    controllers.push(watch_calendars.boxed());
    controllers.push(ledger::upkeep(ctx, deleted).boxed());
    futures::future::join_all(controllers).map(drop)
}

ebb_runtime::controller! {
    /// service-scaler as ebb runs it: the binary's one `main` and the simulator's `World::run`.
    pub struct ServiceScalerController;
    about: "Time-window overrides of HorizontalPodAutoscaler settings (udaan's ServiceScaler)",
    plan: "Decide for one ServiceScaler file at one instant, offline (no cluster)",
    clean: clean => frame::Failure,
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
