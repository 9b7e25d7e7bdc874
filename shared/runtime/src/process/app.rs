//! The wiring every controller's `run` shares: telemetry, signals, the Kubernetes client, the
//! metrics/health server, leader election, and an orderly end. A controller's `run` calls [`run`]
//! with a function registering its metrics and one building its `kube::runtime::Controller`s from
//! the [`Wiring`]; [`run`] starts the process's parts and builds the one [`Wiring`] of them
//! (client, clock, leader, shutdown, caches), watches for an overlapping install, and runs the
//! controllers until shutdown.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::StreamExt;
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{Controller, WatchStreamExt};
use serde::de::DeserializeOwned;

use kube::core::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use prometheus_client::registry::Registry;
use thiserror::Error;
use tokio::task::JoinHandle;

use crate::execute::frame::{Context, Shared};
use crate::serve::metrics_auth::KubeAuth;
use crate::serve::server::ServerError;
use crate::serve::telemetry::TelemetryError;
use crate::shutdown::ShutdownError;
use crate::watch::packed::{Packed, Projection};
use crate::watch::queue::{Queue, Queued, object_key};
use crate::watch::runner::{Runner, Watching};
use crate::{
    ApiContact, CommonArgs, ControllerMetrics, EventPublisher, Health, LeaderElection, LeaderError,
    MetricsServer, Shutdown, SystemClock,
};

/// Why a controller could not start or did not end cleanly.
#[derive(Debug, Error)]
pub enum AppError {
    #[error("logging: {0}")]
    Telemetry(#[from] TelemetryError),
    #[error("signal handlers: {0}")]
    Signals(#[from] ShutdownError),
    /// No usable cluster configuration. Said once (kube's error repeats its cause at each
    /// level of its chain), with what to do.
    #[error("cannot reach the Kubernetes API: {0}")]
    Client(String),
    #[error("metrics/health server: {0}")]
    Server(#[from] ServerError),
    #[error("metrics server: {0}")]
    MetricsTls(#[from] crate::serve::tls::TlsError),
    #[error("leader election: {0}")]
    Leader(#[from] LeaderError),
    #[error("time-zone data: {0}")]
    TzData(#[from] crate::cli::tz::TzError),
    #[error("metrics/health server task: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// What a controller's watches and reconcilers run on: a process's ([`run`]) or a simulation's
/// (the same code on an in-memory API and a virtual clock). A controller's `controllers`
/// function takes one and returns the future that drives all its `Controller`s. It is the
/// frame's [`Shared`] (what every reconcile shares, reached through `Deref`: `wiring.client`,
/// `wiring.clock` ...) and what only the wiring needs.
#[derive(Clone)]
pub struct Wiring {
    /// What every reconcile shares: client, clock, Events, reconcile metrics, leadership,
    /// `--dry-run`, the link to the API server, the own writes.
    pub shared: Shared,
    /// The flags that scope the watches (namespaces, label selector) and `--dry-run`.
    pub common: CommonArgs,
    /// The caches `/readyz` waits for.
    pub warm_up: WarmUp,
    /// Ends the watches gracefully.
    pub shutdown: Shutdown,
    /// Retry delays after failures have jitter ([`crate::ErrorBackoff`]); the simulator, whose
    /// runs must repeat exactly, turns it off.
    pub retry_jitter: bool,
}

impl std::ops::Deref for Wiring {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Wiring {
    /// The frame's shared parts of a reconcile context.
    pub fn shared(&self) -> Shared {
        self.shared.clone()
    }

    /// One `Api` of kind `K` per scope the common flags watch ([`scoped_apis`]).
    pub fn scoped<K>(&self) -> Vec<Api<K>>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        scoped_apis(&self.client, &self.common)
    }

    /// A reconcile context of the shared parts and the controller's own part `own`.
    pub fn context<T>(&self, own: T) -> Arc<Context<T>> {
        let context = Context::new(self.shared(), own);
        Arc::new(if self.retry_jitter {
            context
        } else {
            context.without_jitter()
        })
    }
}

/// Runs controller `name` as a process with its flags `args` (the common ones among them): registers
/// the reconcile metrics and the controller's own (`register`), starts the process's parts
/// (`start`), then drives what `controllers` builds from `args` on its [`Wiring`] until shutdown.
/// A controller's `run` is this one call:
///
/// ```ignore
/// app::run(CONTROLLER_NAME, KIND, args, Metrics::new, controllers).await
/// ```
///
/// # Errors
/// Logging, the zone data, the signal handlers, the client, the metrics server or leader
/// election cannot start; the metrics server fails.
pub async fn run<A, M, F, Fut>(
    name: &str,
    kind: Kind,
    args: A,
    register: impl FnOnce(&mut Registry) -> M,
    controllers: F,
) -> Result<(), AppError>
where
    A: AsRef<CommonArgs>,
    F: FnOnce(A, Wiring, M) -> Fut,
    Fut: Future<Output = ()>,
{
    let common = args.as_ref().clone();
    crate::serve::telemetry::init(common.log_format)?;
    let tzdata = crate::cli::tz::load(&common.tz)?.log();
    let mut registry = Registry::default();
    let metrics = ControllerMetrics::new(&mut registry, name);
    let process = crate::serve::metrics::register_process(&mut registry, name, tzdata.release());
    crate::serve::process_metrics::register(&mut registry);
    let contact = ApiContact::new(Arc::new(SystemClock));
    contact.register(crate::serve::metrics::controller_registry(
        &mut registry,
        name,
    ));
    let own = register(&mut registry);
    let (wiring, server) = start(name, common, registry, metrics, contact).await?;
    process.leader.fill(&wiring.leader);
    if wiring.common.leader_election {
        // Another install whose scope overlaps this one's: the newer stands down.
        let watcher = crate::lead::overlap::Watcher {
            client: wiring.client.clone(),
            controller: name.to_owned(),
            lease_namespace: wiring.common.lease_namespace.clone(),
            lease_name: wiring.common.lease_name_or(name),
            scope: wiring.common.scope(kind == Kind::Namespaced),
            leader: wiring.leader.clone(),
            overlapping: process.overlapping,
            clock: wiring.clock.clone(),
            shutdown: wiring.shutdown.clone(),
        };
        tokio::spawn(watcher.run());
    }
    let health = wiring.warm_up.health.clone();
    let shutdown = wiring.shutdown.clone();
    let leader = wiring.leader.clone();
    tokio::select! {
        () = controllers(args, wiring, own) => {}
        () = shutdown.cancelled() => {}
    }
    health.set_ready(false);
    shutdown.trigger();
    server.await??;
    leader.join().await;
    tracing::info!("stopped");
    Ok(())
}

/// Starts everything a controller needs before its first watch (logging is set up before, by
/// [`run`]): SIGTERM/SIGINT handling, the client, `/metrics` `/healthz` `/readyz` on
/// `--metrics-addr` (serving `registry`, where the controller has registered its metrics), and
/// leader election on the Lease named after `controller` unless `--leader-election=false`.
/// Returns the wiring of it all and the metrics/health server's task.
async fn start(
    controller: &str,
    common: CommonArgs,
    registry: Registry,
    metrics: ControllerMetrics,
    contact: ApiContact,
) -> Result<(Wiring, JoinHandle<Result<(), ServerError>>), AppError> {
    let shutdown = Shutdown::on_signals()?;
    let config = common
        .cluster
        .config_for(controller)
        .await
        .map_err(|e| AppError::Client(e.to_string()))?;
    // The Lease, the probe and /metrics' reviews go around the client-side limit: a renewal
    // that waits behind a mass change would cost the Lease.
    let unlimited = crate::watch::contact::client(config.clone(), &contact, None)
        .map_err(|e| AppError::Client(crate::process::kubeconfig::innermost_summary(&e)))?;
    let client = crate::watch::contact::client(config, &contact, common.api_rate())
        .map_err(|e| AppError::Client(crate::process::kubeconfig::innermost_summary(&e)))?;
    let health = Health::new();
    let mut server = MetricsServer::bind(common.metrics_addr).await?;
    if common.metrics_auth {
        server = server.with_auth(Arc::new(KubeAuth::new(
            unlimited.clone(),
            std::time::Duration::from_secs(common.metrics_auth_cache_ttl),
        )));
    }
    if let Some(dir) = &common.metrics_cert_dir {
        server = server.with_tls(crate::serve::tls::server_config(dir, "metrics")?);
    }
    if let Some(addr) = common.health_addr {
        server = server.with_probes_on(addr).await?;
    }
    let server = tokio::spawn(server.run(Arc::new(registry), health.clone(), shutdown.clone()));
    tokio::spawn(contact.clone().probe(unlimited.clone(), shutdown.clone()));
    let leader = LeaderElection::elect(
        common.lease(controller).as_ref(),
        unlimited,
        &contact,
        shutdown.clone(),
    )
    .await?;
    tracing::info!(
        controller,
        namespaces = ?common.watched_namespaces(),
        label_selector = common.label_selector(),
        dry_run = common.dry_run,
        "started"
    );
    let own_writes = crate::watch::own_writes::OwnWrites::new();
    tokio::spawn(own_writes.clone().forget_old_until(shutdown.clone()));
    let wiring = Wiring {
        shared: Shared {
            contact: contact.clone(),
            events: Arc::new(EventPublisher::new(client.clone(), controller)),
            client,
            clock: Arc::new(SystemClock),
            metrics,
            dry_run: common.dry_run,
            leader,
            own_writes,
        },
        warm_up: WarmUp::new(health, contact).with_concurrency(common.concurrent_reconciles),
        shutdown,
        common,
        retry_jitter: true,
    };
    Ok((wiring, server))
}

/// Whether a controller's own kind is namespaced (`--namespace` limits which of its objects it
/// manages) or cluster-scoped (it manages them all, whatever `--namespace` says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A namespaced kind.
    Namespaced,
    /// A cluster-scoped kind.
    ClusterScoped,
}

pub use crate::process::args::CONCURRENT_RECONCILES;
pub use crate::watch::cache::slim;

/// Watch configuration from the common flags: `--label-selector` limits what is watched.
pub fn watcher_config(args: &CommonArgs) -> watcher::Config {
    let config = watcher::Config::default().any_semantic();
    match args.label_selector() {
        Some(selector) => config.labels(selector),
        None => config,
    }
}

/// The process's watches: it counts the caches that have not yet listed in full (`/readyz`
/// turns green at zero) and holds the [`ApiContact`] every watch reports to.
#[derive(Clone)]
pub struct WarmUp {
    health: Health,
    pending: Arc<AtomicUsize>,
    contact: ApiContact,
    concurrency: u16,
}

impl WarmUp {
    /// Nothing registered yet; `health` turns ready when every registered cache is warm.
    /// Controllers run [`CONCURRENT_RECONCILES`] reconciles at once.
    pub fn new(health: Health, contact: ApiContact) -> Self {
        Self {
            health,
            pending: Arc::new(AtomicUsize::new(0)),
            contact,
            concurrency: CONCURRENT_RECONCILES,
        }
    }

    /// Controllers built from here run at most `concurrency` reconciles at once
    /// (`--concurrent-reconciles`; at least 1).
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// The link to the API server every watch reports to and waits through
    /// ([`crate::watch::contact::resilient`]).
    pub fn contact(&self) -> &ApiContact {
        &self.contact
    }

    /// Registers one more cache that must list in full before the process is ready. Register
    /// every cache before any watch runs (as building the controllers does).
    pub fn cache(&self) -> CacheWarm {
        self.pending.fetch_add(1, Ordering::AcqRel);
        CacheWarm {
            warm_up: self.clone(),
            done: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// One cache of a [`WarmUp`]; [`CacheWarm::warm`] reports its first full list (later relists
/// after a desync count nothing).
#[derive(Clone)]
pub struct CacheWarm {
    warm_up: WarmUp,
    done: Arc<AtomicBool>,
}

impl CacheWarm {
    pub fn warm(&self) {
        if !self.done.swap(true, Ordering::AcqRel)
            && self.warm_up.pending.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.warm_up.health.set_ready(true);
        }
    }
}

/// A `Controller` for `api`'s kind whose first full list marks its cache warm in `warm_up`.
///
/// kube-runtime 5's `Store::wait_until_ready` wakes only the last task that polled it (its
/// one-shot receiver keeps a single waker). A second task awaiting a controller's store, as
/// `/readyz` did, either never wakes or keeps the controller's own runner from ever starting,
/// whichever polled first (found by the end-to-end suite: `/readyz` stayed 503 for good). So
/// readiness comes from the watch's own `InitDone` event, and only the controller awaits the
/// store.
pub fn controller<K>(api: Api<K>, config: watcher::Config, warm_up: &WarmUp) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    let cache = warm_up.cache();
    built(api, config, warm_up, None, move || cache.warm())
}

/// [`controller`] that keeps a [`Lookup`](crate::watch::cache::Lookup) of its objects by the keys
/// `keys` gives each: related objects map onto the objects of their key without scanning the
/// cache.
pub fn controller_with_lookup<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
    keys: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
) -> (Queued<K>, crate::watch::cache::Lookup<K>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    let cache = warm_up.cache();
    let lookup = crate::watch::cache::Lookup::new(keys);
    let controller = built_with(
        api,
        config,
        warm_up,
        None,
        move || cache.warm(),
        None,
        Some(lookup.clone()),
    );
    (controller, lookup)
}

/// [`controller`] that passes over the events of this process's own writes to its objects
/// ([`OwnWrites::skip`](crate::watch::own_writes::OwnWrites::skip)): its own status write does not run
/// the pass again. For a controller whose pass never waits on its own write's event (every rule
/// decided on the object as the pass leaves it; the requeue it returns is the next look).
pub fn controller_skipping_own<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
    own: &crate::watch::own_writes::OwnWrites,
) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    let cache = warm_up.cache();
    built(api, config, warm_up, Some(own), move || cache.warm())
}

/// A controller of `api`'s kind on ebb's own cache and queue ([`Runner`]): each object kept
/// [`Squeezed`](crate::watch::squeezed::Squeezed), about half what kube's `Store` holds; the
/// events of this process's own writes run no reconcile ([`controller_skipping_own`]); its first
/// full list marks its cache warm; the server's return and this replica starting to lead run
/// every object once, as with [`controller`].
pub fn squeezed_controller<K, P>(
    api: Api<Packed<K, P>>,
    config: watcher::Config,
    warm_up: &WarmUp,
    own: &crate::watch::own_writes::OwnWrites,
) -> Runner<K>
where
    K: crate::watch::guard::Object + serde::Serialize,
    P: Projection<K>,
{
    let cache = warm_up.cache();
    let contact = warm_up.contact();
    Runner::watching(
        api,
        Watching {
            config,
            contact,
            own: Some(own),
            listed: Box::new(move || cache.warm()),
            concurrency: usize::from(warm_up.concurrency),
        },
    )
    .reconcile_all_on(contact.wake_ups())
}

/// What a changes-only controller ([`controller_on_changes`]) does beside its own queue.
pub struct OnChanges<K> {
    /// Called, beside readiness, whenever the cache holds a full list.
    pub listed: Box<dyn Fn() + Send>,
    /// Sees each object that triggers a reconcile, the events of this process's own writes
    /// included (to feed another controller's trigger).
    pub changed: Box<dyn Fn(&K) + Send + Sync>,
    /// Sees each object that triggers a reconcile and is not as one of this process's own
    /// writes left it (to feed the trigger of another controller that writes the same kind).
    pub changed_by_others: Box<dyn Fn(&K) + Send + Sync>,
}

/// [`controller`] whose objects trigger a reconcile only when they are new, deleted, or changed
/// in generation, labels or annotations ([`crate::watch::triggers::spec_changes_of`]): a change of
/// their status alone, which another controller writes all the time (an HPA's), runs nothing.
/// `on` says what else sees the changes and what the cache keeps ([`OnChanges`]). The events of
/// this process's own writes run no reconcile ([`controller_skipping_own`]).
pub fn controller_on_changes<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
    own: &crate::watch::own_writes::OwnWrites,
    on: OnChanges<K>,
) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    let cache = warm_up.cache();
    let OnChanges {
        listed,
        changed,
        changed_by_others,
    } = on;
    let listed = move || {
        cache.warm();
        listed();
    };
    built_with(
        api,
        config,
        warm_up,
        Some(own),
        listed,
        Some((changed, changed_by_others)),
        None,
    )
}

/// A `Controller` for `api`'s kind that readiness does not wait for (a kind whose CRD may be
/// missing, say): its watch retries and the server's returns wake it like any other.
pub fn controller_outside_readiness<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    built(api, config, warm_up, None, || {})
}

fn built<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
    own: Option<&crate::watch::own_writes::OwnWrites>,
    listed: impl Fn() + Send + 'static,
) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    built_with(api, config, warm_up, own, listed, None, None)
}

/// See each object a changes-only trigger passes on ([`controller_on_changes`]): all, and those
/// not of this process's own writes.
type Changed<K> = (Box<dyn Fn(&K) + Send + Sync>, Box<dyn Fn(&K) + Send + Sync>);

fn built_with<K>(
    api: Api<K>,
    config: watcher::Config,
    warm_up: &WarmUp,
    own: Option<&crate::watch::own_writes::OwnWrites>,
    listed: impl Fn() + Send + 'static,
    changes_only: Option<Changed<K>>,
    lookup: Option<crate::watch::cache::Lookup<K>>,
) -> Queued<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    let contact = warm_up.contact();
    let (reader, writer) = reflector::store();
    let slimmed = crate::watch::contact::resilient(
        move || watcher(api.clone(), config.clone()),
        contact,
        &K::kind(&K::DynamicType::default()),
    )
    .modify(slim::<K>)
    .inspect(move |event| {
        // Before the store: a reconcile the event triggers finds the object by its keys.
        if let (Ok(event), Some(lookup)) = (event, &lookup) {
            lookup.take_in(event);
        }
    });
    // Beside the reconciles that run, as many handed over as can run: a slot that frees takes
    // the next at once.
    let queue = Queue::handing(usize::from(warm_up.concurrency));
    let deletions = queue.clone();
    let cached = reader.clone();
    // A relist reports no deletions: the objects cached when it began (the store swaps at its
    // end) that it has not shown are gone by its end, and told so as a deletion is: nothing
    // waits for its object's next pass (which may be a week away, or never) to be forgotten.
    let mut unshown: Option<HashSet<String>> = None;
    let events = reflector(writer, slimmed).inspect(move |event| match event {
        Ok(watcher::Event::Init) => {
            unshown = Some(
                cached
                    .state()
                    .iter()
                    .map(|object| object_key(object.as_ref()))
                    .collect(),
            );
        }
        Ok(watcher::Event::InitApply(object)) => {
            if let Some(unshown) = unshown.as_mut() {
                unshown.remove(&object_key(object));
            }
        }
        Ok(watcher::Event::InitDone) => {
            for key in unshown.take().into_iter().flatten() {
                deletions.deleted(&key);
            }
            listed();
        }
        Ok(watcher::Event::Delete(object)) => deletions.deleted(&object_key(object)),
        _ => {}
    });
    let (trigger, by_others) = match changes_only {
        Some((changed, by_others)) => (
            crate::watch::triggers::spec_changes_of(events)
                .inspect(move |object| {
                    if let Ok(object) = object {
                        changed(object);
                    }
                })
                .boxed(),
            Some(by_others),
        ),
        None => (events.applied_objects().boxed(), None),
    };
    let trigger = match own {
        Some(own) => own.skip(trigger).boxed(),
        None => trigger.boxed(),
    };
    let trigger = match by_others {
        Some(by_others) => trigger
            .inspect(move |object| {
                if let Ok(object) = object {
                    by_others(object);
                }
            })
            .boxed(),
        None => trigger,
    };
    let controller = Controller::for_stream(Queued::note(&queue, trigger), reader)
        .with_config(controller_config(warm_up.concurrency))
        .trigger_backoff(crate::watch::contact::NoPause);
    // The server's return, and this replica starting to lead, reconcile everything once: an edge
    // that passed while the server was away, or a reconcile that failed on the outage or ran as
    // a follower, is acted on at once (see crate::watch::contact).
    Queued::new(controller, queue).reconcile_all_on(contact.wake_ups())
}

/// The configuration of every controller ebb runs: at most `concurrency` reconciles at once
/// (`--concurrent-reconciles`, default [`CONCURRENT_RECONCILES`]).
pub fn controller_config(concurrency: u16) -> kube::runtime::controller::Config {
    kube::runtime::controller::Config::default().concurrency(concurrency)
}

/// The scopes a controller watches: one per `--namespace`, or `None` (cluster-wide) when unset.
/// Controllers that watch several kinds build one `Controller` per scope with [`scoped_api`].
pub fn scopes(args: &CommonArgs) -> Vec<Option<String>> {
    let namespaces = args.watched_namespaces();
    if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.into_iter().map(Some).collect()
    }
}

/// The `Api` of a namespaced kind in one scope of [`scopes`].
pub fn scoped_api<K>(client: &Client, scope: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match scope {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// [`scoped_apis`] for a kind known only at run time (`DynamicObject`s of `resource`).
pub fn scoped_apis_with(
    client: &Client,
    args: &CommonArgs,
    resource: &ApiResource,
) -> Vec<Api<DynamicObject>> {
    scopes(args)
        .iter()
        .map(|scope| match scope {
            Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        })
        .collect()
}

/// One `Api` per watched namespace, or a single cluster-wide `Api` when `--namespace` is not set.
pub fn scoped_apis<K>(client: &Client, args: &CommonArgs) -> Vec<Api<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    scopes(args)
        .iter()
        .map(|scope| scoped_api(client, scope.as_deref()))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    #[test]
    fn label_selector_flag_limits_the_watch() {
        let cli = Cli::try_parse_from(["x", "--label-selector", "team=a"]).unwrap();
        assert_eq!(
            watcher_config(&cli.common).label_selector.as_deref(),
            Some("team=a")
        );
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(watcher_config(&cli.common).label_selector, None);
    }

    /// kube's error chain repeats its cause at every level; the process says it once.
    #[test]
    fn a_missing_cluster_is_said_once_with_what_to_do() {
        #[derive(Debug, thiserror::Error)]
        #[error("Failed to infer configuration: {0}")]
        struct Outer(#[source] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("failed to infer config: kubeconfig: (no such file)")]
        struct Inner;
        let error = AppError::Client(
            crate::process::kubeconfig::ClusterConfigError::Infer(
                crate::process::kubeconfig::innermost_summary(&Outer(Inner)),
            )
            .to_string(),
        );
        // No source: `{:#}` at the binary's edge prints this one line and nothing after it.
        assert!(std::error::Error::source(&error).is_none());
        assert_eq!(
            error.to_string(),
            "cannot reach the Kubernetes API: failed to infer config: kubeconfig: (no such file); \
             run in a pod with a service account, or name a kubeconfig file (--kubeconfig or \
             KUBECONFIG)"
        );
    }

    #[test]
    fn no_namespace_flag_means_one_cluster_wide_scope() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(scopes(&cli.common), vec![None]);
        let cli = Cli::try_parse_from(["x", "--namespace", "a,b"]).unwrap();
        assert_eq!(
            scopes(&cli.common),
            vec![Some("a".into()), Some("b".into())]
        );
    }
}
