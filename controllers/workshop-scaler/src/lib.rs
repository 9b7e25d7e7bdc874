//! workshop-scaler: demand-driven, race-free scaling of Babylon WorkshopProvisions.
//!
//! When the share of a workshop's seats (WorkshopUserAssignments) that users hold reaches
//! `autoScaling.threshold`, each WorkshopProvision of the workshop raises its `spec.count` to
//! `min(maxProvisions, max(count + 1, floor(count * scaleFactor)))`, one scale-up in flight at a
//! time, released only when every ResourceClaim of the provision has settled (or, with a reason,
//! when those claims provably can no longer appear).
//!
//! Configuration comes from the provision's and the Workshop's `spec.autoScaling` where Babylon's
//! installed CRDs keep it, and from ebb's own namespaced `WorkshopScalingPolicy`, which survives
//! Babylon's published CRDs (they prune unknown `spec` fields).
//!
//! - [`decide`]: every rule, pure.
//! - [`reconcile`]: observe -> decide -> apply, with resourceVersion preconditions, as a
//!   [`Reconciler`](ebb_runtime::execute::frame::Reconciler) run by ebb-runtime's reconcile frame.
//! - [`plan`]: the offline `plan` subcommand.
//! - [`metrics`]: the controller's own gauges and counters.
//! - [`policy`]: the status of WorkshopScalingPolicies (selected and contested Workshops).
//!
//! See `controllers/workshop-scaler/README.md` for users.

ebb_runtime::controller_names!("workshop-scaler");
/// The scope of the controller's own kind: its objects are namespaced.
pub const KIND: ebb_runtime::process::app::Kind = ebb_runtime::process::app::Kind::Namespaced;

pub use workshop_scaler_decide as decide;
pub mod metrics;
pub mod plan;
pub mod policy;
pub mod reconcile;

use std::future::Future;

use ebb_crds::babylon::{WORKSHOP_PROVISION_LABEL, Workshop};
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::{WarmUp, Wiring, watcher_config};
use ebb_runtime::watch::cache::Lookup;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::queue::Queued;
use ebb_runtime::watch::triggers::spec_changes_of;
use ebb_runtime::{ApiContact, Shutdown};
use futures::channel::mpsc::UnboundedSender;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};

use crate::metrics::{Metrics, ProvisionLabels};
use crate::reconcile::{CachedProvision, CachedSeat, CachedWorkshop, Caches, Feeds, Own};

/// Flags of the controller (`workshop-scaler` without a subcommand): the common ones (for
/// service-scaler, `--label-selector` / `LABEL_SELECTOR` limits the objects managed).
pub type RunArgs = ebb_runtime::process::args::CommonOnly;

/// WorkshopProvisions and WorkshopScalingPolicies reconciled, with the kinds they depend on
/// watched, in every scope of `wiring.common` (the common flags are all of `RunArgs`), until the
/// shutdown: what the binary runs once its process edges are up, and what the simulator runs on
/// virtual time.
pub fn controllers(
    _: RunArgs,
    wiring: Wiring,
    metrics: Metrics,
) -> impl Future<Output = ()> + Send + 'static {
    // Provisions and policies each get their own context (so their error backoffs are their
    // own), over the same metrics.
    // One controller per watched namespace (kube's Controller takes one Api); the related kinds
    // are watched in the same scope. `Wiring::scoped` orders every kind's list alike.
    let scopes: Vec<_> = wiring
        .scoped::<CachedProvision>()
        .into_iter()
        .zip(wiring.scoped::<CachedSeat>())
        .zip(wiring.scoped::<CachedWorkshop>())
        .zip(wiring.scoped::<Guarded<ResourceClaim>>())
        .zip(wiring.scoped::<Guarded<WorkshopScalingPolicy>>())
        .zip(wiring.scoped::<Guarded<WorkshopScalingPolicy>>())
        .collect();
    // The related kinds' watches fill the caches the reconciles read, one feed per scope.
    let mut caches = Caches::default();
    let feeds: Vec<Feeds> = scopes.iter().map(|_| caches.scope()).collect();
    let policy_ctx = wiring.context(Own {
        metrics: metrics.clone(),
        caches: caches.clone(),
    });
    let ctx = wiring.context(Own { metrics, caches });
    let mut controllers = Vec::new();
    for ((((((provisions, assignments), workshops), claims), policies), own_policies), feeds) in
        scopes.into_iter().zip(feeds)
    {
        // The policies' statuses follow the Workshops the cache has taken in, so a status is
        // never computed from a cache that has not seen the change that triggered it.
        let (seen, workshops_seen) = futures::channel::mpsc::unbounded();
        let statuses = policy_controller(
            own_policies,
            workshops_seen,
            &wiring.shutdown,
            &wiring.warm_up,
        );
        controllers.push(frame::run(statuses, policy_ctx.clone(), |_| {}).boxed());
        let controller = controller(
            provisions,
            Related {
                assignments,
                workshops,
                claims,
                policies,
                feeds,
                seen: Some(seen),
            },
            watcher_config(&wiring.common),
            &wiring.shutdown,
            &wiring.warm_up,
        );
        // A deleted provision's series go with it.
        let gone = {
            let ctx = ctx.clone();
            move |key: &str| {
                if let Some((namespace, provision)) = key.split_once('/') {
                    ctx.own.metrics.gone(&ProvisionLabels {
                        namespace: namespace.to_owned(),
                        name: provision.to_owned(),
                    });
                }
            }
        };
        controllers.push(frame::run(controller, ctx.clone(), gone).boxed());
    }
    futures::future::join_all(controllers).map(drop)
}

/// The APIs of one scope whose objects are mapped onto the reconciled WorkshopProvisions.
pub struct Related {
    /// Seats: mapped to the provisions of their workshop.
    pub assignments: Api<CachedSeat>,
    /// Workshops: mapped to their provisions.
    pub workshops: Api<CachedWorkshop>,
    /// ResourceClaims: mapped to their provision.
    pub claims: Api<Guarded<ResourceClaim>>,
    /// WorkshopScalingPolicies: mapped to every provision of their namespace.
    pub policies: Api<Guarded<WorkshopScalingPolicy>>,
    /// Where the watches of seats, Workshops and claims put what they see.
    pub feeds: Feeds,
    /// Told of each Workshop the cache has taken in (changed or deleted): the policy
    /// controller's trigger ([`policy_controller`]).
    pub seen: Option<WorkshopsSeen>,
}

/// The Workshops the cache has taken in, by name and namespace: what the policy controller
/// maps onto policies.
pub type WorkshopsSeen = UnboundedSender<PartialObjectMeta<Workshop>>;

/// The controller for one scope: WorkshopProvisions (selected by `--label-selector`) reconciled;
/// assignments, Workshops, claims and policies mapped to the provisions they affect.
pub fn controller(
    provisions: Api<CachedProvision>,
    related: Related,
    provisions_wc: watcher::Config,
    shutdown: &Shutdown,
    warm_up: &WarmUp,
) -> Queued<CachedProvision> {
    // /readyz turns green once every provision cache holds its first full list.
    let (controller, lookup) = ebb_runtime::process::app::controller_with_lookup(
        provisions,
        provisions_wc,
        warm_up,
        provision_keys,
    );
    relate(controller, &lookup, related, shutdown, warm_up.contact())
}

/// [`reconcile::workshop_key`] of a provision that deserializes: what seat and Workshop events
/// are mapped by ([`provisions_of`]).
pub fn provision_keys(provision: &CachedProvision) -> Vec<String> {
    match provision.unpack() {
        Ok(p) => vec![reconcile::workshop_key(
            &p.namespace().unwrap_or_default(),
            &p.spec.workshop_name,
        )],
        Err(_) => Vec::new(),
    }
}

/// Adds to `controller` (over WorkshopProvisions) the watches of the related kinds and graceful
/// shutdown.
pub fn relate(
    controller: Queued<CachedProvision>,
    lookup: &Lookup<CachedProvision>,
    related: Related,
    shutdown: &Shutdown,
    contact: &ApiContact,
) -> Queued<CachedProvision> {
    let Related {
        assignments,
        workshops,
        claims,
        policies,
        feeds,
        seen,
    } = related;
    let by_policy = controller.store();
    let by_assignment = lookup.clone();
    let by_workshop = lookup.clone();
    let token = shutdown.token();
    // The related kinds are not label-selected: the selector is about the provisions. Every
    // watch is guarded, so one object that does not deserialize cannot stall a whole watch.
    let all = || watcher::Config::default().any_semantic();
    let assignments = feeds.assignments.watch(assignments, all(), contact, |_| {});
    // Trimmed as they are packed (`reconcile::Trimmed`).
    let workshops = feeds
        .workshops
        .watch(workshops, all(), contact, |_| {})
        .inspect(move |workshop| {
            if let (Some(seen), Ok(workshop)) = (&seen, workshop) {
                let meta = ObjectMeta {
                    name: workshop.meta().name.clone(),
                    namespace: workshop.meta().namespace.clone(),
                    ..ObjectMeta::default()
                };
                // Closed only when the policy controller has stopped (shutdown).
                let _ = seen.unbounded_send(meta.into_response_partial());
            }
        });
    let claims = feeds.claims.watch(
        claims,
        all(),
        contact,
        |claim: &mut Guarded<ResourceClaim>| {
            if let Ok(claim) = claim.0.as_mut() {
                claim.trim();
            }
        },
    );
    controller
        .watches_stream(assignments, move |assignment| {
            // A malformed seat is not counted, so its changes concern no provision.
            let Ok(assignment) = assignment.unpack() else {
                return Vec::new();
            };
            let ns = assignment.namespace().unwrap_or_default();
            provisions_of(&by_assignment, &ns, &assignment.spec.workshop_name)
        })
        .watches_stream(workshops, move |workshop| {
            let ns = workshop.namespace().unwrap_or_default();
            provisions_of(&by_workshop, &ns, &workshop.name_any())
        })
        .watches_stream(claims, |claim| provision_of_claim(&claim))
        // Not the policy's status, which the policy controller writes on every Workshop change:
        // with a thousand provisions in a namespace, each of those writes reconciled them all.
        // The watch fills the policies' cache the reconciles read.
        .watches_stream(
            spec_changes_of(feeds.policies.events(policies, all(), contact, |_| {})),
            move |policy| {
                // Every provision of the namespace, not only those of the Workshops the policy now
                // selects: a changed or deleted policy also concerns the Workshops it used to select
                // (and makes or ends an ambiguity there), which the new object cannot name. Metadata
                // is enough, so a malformed policy maps too.
                let ns = policy.namespace().unwrap_or_default();
                provisions_in(&by_policy, &ns)
            },
        )
        .graceful_shutdown_on(async move { token.cancelled().await })
}

/// The provisions of workshop `namespace/workshop`, from the controller's lookup: as many as
/// there are, not a scan of every provision.
pub fn provisions_of(
    lookup: &Lookup<CachedProvision>,
    namespace: &str,
    workshop: &str,
) -> Vec<ObjectRef<CachedProvision>> {
    lookup.refs(&reconcile::workshop_key(namespace, workshop))
}

/// The controller of WorkshopScalingPolicy statuses for one scope: a Workshop the cache has
/// taken in (`workshops_seen`, fed by [`relate`]) maps to every policy of its namespace (any of
/// them may select it, or have selected it); the reconcile reads the Workshops from that cache.
/// Not part of readiness: where the WorkshopScalingPolicy CRD is not installed this watch keeps
/// retrying while provisions are served from `spec.autoScaling` alone.
pub fn policy_controller(
    policies: Api<Guarded<WorkshopScalingPolicy>>,
    workshops_seen: impl Stream<Item = PartialObjectMeta<Workshop>> + Send + 'static,
    shutdown: &Shutdown,
    warm_up: &WarmUp,
) -> Queued<Guarded<WorkshopScalingPolicy>> {
    let controller = ebb_runtime::process::app::controller_outside_readiness(
        policies,
        watcher::Config::default().any_semantic(),
        warm_up,
    );
    let store = controller.store();
    let token = shutdown.token();
    controller
        .watches_stream(workshops_seen.map(Ok), move |workshop| {
            let ns = workshop.namespace().unwrap_or_default();
            store
                .state()
                .iter()
                .filter(|p| p.namespace().as_deref() == Some(ns.as_str()))
                .map(|p| ObjectRef::from_obj(p.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(async move { token.cancelled().await })
}

/// Every provision of `namespace`, from the controller's cache (malformed ones too: their
/// reconcile reports them).
pub fn provisions_in(
    store: &Store<CachedProvision>,
    namespace: &str,
) -> Vec<ObjectRef<CachedProvision>> {
    store
        .state()
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace))
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

/// The provision a claim belongs to: Babylon's label, else a WorkshopProvision owner reference.
/// Metadata is enough, so this also maps a claim that does not deserialize.
pub fn provision_of_claim<K: Resource>(claim: &K) -> Option<ObjectRef<CachedProvision>> {
    let ns = claim.namespace()?;
    let name = claim
        .labels()
        .get(WORKSHOP_PROVISION_LABEL)
        .cloned()
        .or_else(|| {
            claim
                .owner_references()
                .iter()
                .find(|o| o.kind == "WorkshopProvision")
                .map(|o| o.name.clone())
        })?;
    Some(ObjectRef::new(&name).within(&ns))
}

ebb_runtime::controller! {
    /// workshop-scaler as ebb runs it: the binary's one `main` and the simulator's `World::run`.
    pub struct WorkshopScalerController;
    about: "Demand-driven, race-free scaling of Babylon WorkshopProvisions",
    plan: "Decide for one WorkshopProvision file, offline (no cluster)",
    // Nothing of ebb's outlives it: cleanup only stops the controller.
    clean: ebb_runtime::process::cleanup::nothing(
        "workshop-scaler keeps no finalizers, and what it writes on WorkshopProvisions \
         (spec.count, its status fields) is theirs to keep",
    ) => std::convert::Infallible,
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
