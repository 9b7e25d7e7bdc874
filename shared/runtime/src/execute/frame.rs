//! The reconcile frame every controller runs in: one context, one error contract, one guarded
//! reconcile and one error policy.
//!
//! A controller's own part of the [`Context`] (its metrics, caches, enabled kinds ...) implements
//! [`Reconciler<K>`](Reconciler) for each kind `K` it reconciles: its error type and one
//! `reconcile` pass (read, decide once, hand the plan to [`crate::execute`]). [`run`] runs it on a
//! controller built by [`crate::process::app`] ([`Queued`]). The frame does the rest, the same way for
//! every controller:
//!
//! - a tracing span per object (`controller`, `namespace`, `name`);
//! - the reconcile metrics ([`ControllerMetrics`]: count, duration, errors by category);
//! - followers write nothing and do no per-object work: a replica that does not hold the Lease
//!   sets no timer, and reconciles every object once when it starts to write
//!   ([`Leader::wake_on_writing`]);
//! - an object without `metadata.name` (or, of a namespaced kind, `metadata.namespace`) is never
//!   handed to the controller ([`Error::MissingMetadata`], not retried): a `Reconciler` may take
//!   both as given ([`name_of`], [`namespace_of`]);
//! - a malformed object (one that does not deserialize into the controller's type) goes to
//!   [`Reconciler::malformed`]: by default logged, counted under `malformed`, reported on the
//!   object by a Warning Event `Malformed` naming the field (once per version) and left alone
//!   until it changes, while every other object is served;
//! - a conflict ([`ReconcileError::is_conflict`], a 409) means the object was stale: it is read
//!   again and the pass runs again, at most [`MAX_ATTEMPTS`] times per reconcile;
//! - the error policy: an error that retrying cannot fix waits for a change of the object; any
//!   other backs off per object (about 1 s, 2 s, 4 s ... 5 min with jitter, [`ErrorBackoff`]), reset by a success,
//!   and never comes back sooner than an API server's 429 asked ([`retry_after`]); a failure for
//!   want of the API server also marks it lost, and its return reconciles every object at once
//!   ([`crate::watch::contact`]);
//! - for a while after such a return, a pass reads its object from the server, not the cache
//!   ([`crate::watch::contact::ApiContact::reads_fresh`]);
//! - the queue: each start, requeue and error policy is noted in the controller's [`Queue`],
//!   exported as `ebb_<controller>_queue_depth{kind}` and `_queue_wait_seconds{kind}`;
//! - a pass's `Requeue::After` counts from when the pass started (its `now`), not from when it
//!   ended: a pass that waited seconds on a slow or frozen server before deciding "the window
//!   opens in 2 s" comes back at that edge, not 2 s after it ended.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::watch::guard::Stored;
use futures::{StreamExt, TryFutureExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject};
use kube::core::NamespaceResourceScope;
use kube::runtime::controller::{Action, Error as ControllerError};
use kube::{Api, Client, Resource};
use prometheus_client::metrics::histogram::Histogram;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use crate::watch::queue::{Queue, Queued};
use crate::watch::runner::Runner;
use crate::watch::squeezed::{Squeezed, Unfit};
use crate::{
    ApiContact, Clock, ControllerMetrics, ErrorBackoff, EventKind, EventSink, Leader, object_key,
};
pub use ebb_core::Requeue;

/// How many passes one reconcile makes when each meets a conflict, before it fails (and backs
/// off).
pub const MAX_ATTEMPTS: usize = 4;

/// What every reconcile of a controller shares ([`Shared`], reached through `Deref`: `ctx.client`,
/// `ctx.clock` ...), the per-object backoff, and the controller's own part `T` (its metrics,
/// enabled target kinds, hook ledger ...).
pub struct Context<T> {
    /// The parts every controller has.
    pub shared: Shared,
    /// Retry delays after transient failures, per object.
    pub backoff: ErrorBackoff,
    /// The version of each malformed object last reported by an Event.
    pub malformed: MalformedReports,
    /// The controller's own part.
    pub own: T,
}

/// The parts of a [`Context`] every controller has, as its `run` (or a test harness) builds them.
#[derive(Clone)]
pub struct Shared {
    /// The API client.
    pub client: Client,
    /// The source of "now": read once per pass, every decision takes that instant.
    pub clock: Arc<dyn Clock>,
    /// Where Events go.
    pub events: Arc<dyn EventSink>,
    /// Reconcile counters and durations.
    pub metrics: ControllerMetrics,
    /// `--dry-run`: decide and report (status, Events), write nothing else.
    pub dry_run: bool,
    /// Only the leader writes.
    pub leader: Leader,
    /// The link to the API server: a reconcile that failed for want of it is reconciled again
    /// when it answers ([`crate::watch::contact`]).
    pub contact: ApiContact,
    /// The versions the executor's writes answered with, for watches that pass over the events
    /// of their own writes ([`crate::watch::own_writes`]).
    pub own_writes: crate::watch::own_writes::OwnWrites,
}

tokio::task_local! {
    /// Whether the pass running reads what it decides on from the API server rather than from a
    /// cache: it runs again after a conflict, or just after the server came back.
    static READ_FRESH: bool;
}

/// Whether the pass running must read what it decides on from the API server: it runs again
/// after a 409 (what a cache held was stale) or just after the server came back
/// ([`crate::watch::contact::FRESH_READS`]). A pass that reads related objects from a cache reads them by
/// GET then. False outside a frame's pass.
pub fn reads_fresh() -> bool {
    READ_FRESH.try_with(|fresh| *fresh).unwrap_or(false)
}

impl<T> Context<T> {
    /// A context of `shared` and the controller's own part, with no failures recorded.
    pub fn new(shared: Shared, own: T) -> Self {
        Self {
            shared,
            backoff: ErrorBackoff::new(),
            malformed: MalformedReports::default(),
            own,
        }
    }

    /// The same context with retry delays without jitter ([`ErrorBackoff::without_jitter`]),
    /// for tests that assert them and for the simulator.
    #[must_use]
    pub fn without_jitter(mut self) -> Self {
        self.backoff = ErrorBackoff::without_jitter();
        self
    }
}

/// The version of each malformed object (`namespace/name`) that an Event has reported, so that a
/// pass of the same version again (a relist, a return of the API server, a new leader) publishes
/// no Event again. An entry goes when its object is gone or fits its type again.
#[derive(Debug, Default)]
pub struct MalformedReports(Mutex<HashMap<String, String>>);

impl MalformedReports {
    /// Whether `version` of object `key` is yet to be reported; it counts as reported from now on.
    pub fn first_report(&self, key: &str, version: &str) -> bool {
        let mut reported = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if reported.get(key).is_some_and(|v| v == version) {
            return false;
        }
        reported.insert(key.to_owned(), version.to_owned());
        true
    }

    /// Forgets object `key` (gone, or it fits its type again).
    pub fn forget(&self, key: &str) {
        let mut reported = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !reported.is_empty() {
            reported.remove(key);
            if reported.is_empty() {
                reported.shrink_to_fit();
            }
        }
    }

    /// How many objects are remembered.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> std::ops::Deref for Context<T> {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// What the frame needs to know about a controller's error.
pub trait ReconcileError: std::error::Error + Send + Sync + 'static {
    /// The metric label (`reconcile_errors_total{category}`) and log field, snake_case.
    fn category(&self) -> &'static str;
    /// Whether retrying without a change of the object can help. Default: yes.
    fn is_transient(&self) -> bool {
        true
    }
    /// Someone else changed what this pass read (a 409): the frame reads the object again and
    /// runs the pass again. Default: no.
    fn is_conflict(&self) -> bool {
        false
    }
}

/// Whether `error` is the API server's 409 Conflict.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// Whether `error` is the API server's 422 on `metadata.uid`: a write naming the uid it read met
/// an object deleted and made again since (the identity precondition of a server-side apply, which
/// is an upsert: see `scaledown-window`'s ClusterAutoscaler apply). Read again and decide again.
pub fn is_recreated(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 422
            && status
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.field == "metadata.uid")))
}

/// Whether `error` is the API server's 404 for a path it does not serve at all (a resource whose
/// CRD is not installed), as opposed to a missing object of a served kind, whose Status names the
/// object in `details`.
pub fn is_api_missing(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 404 && status.details.as_ref().is_none_or(|d| d.name.is_empty()))
}

/// Why a reconcile failed: the controller's own error, or the frame's.
#[derive(Debug, thiserror::Error)]
pub enum Error<E: ReconcileError> {
    /// The controller's pass failed.
    #[error(transparent)]
    Reconcile(E),
    /// Reading the object again after a conflict failed.
    #[error("reading {key} again after a conflict: {source}")]
    Reread {
        /// `namespace/name`.
        key: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The object lacks a field every reconcile needs: it can never be reconciled.
    #[error("{kind} without {field}")]
    MissingMetadata {
        /// The object's kind.
        kind: String,
        /// `metadata.name` or `metadata.namespace`.
        field: &'static str,
    },
    /// Every pass met a conflict.
    #[error("{key} kept changing: {attempts} conflicting writes in a row")]
    Conflicts {
        /// `namespace/name`.
        key: String,
        /// How many passes.
        attempts: usize,
    },
}

impl<E: ReconcileError> Error<E> {
    /// The controller's error, when it is one.
    pub fn inner(&self) -> Option<&E> {
        match self {
            Self::Reconcile(e) => Some(e),
            _ => None,
        }
    }
}

impl<E: ReconcileError> ReconcileError for Error<E> {
    fn category(&self) -> &'static str {
        match self {
            Self::Reconcile(e) => e.category(),
            Self::Reread { .. } => "observe",
            Self::MissingMetadata { .. } => "invalid_object",
            Self::Conflicts { .. } => "conflict",
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Reconcile(e) => e.is_transient(),
            Self::MissingMetadata { .. } => false,
            _ => true,
        }
    }

    fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflicts { .. })
    }
}

pub use crate::watch::guard::Object;

/// A controller's own part of the [`Context`] as the reconciler of kind `K`, as the frame runs it.
/// One own part may reconcile several kinds (workshop-scaler's provisions and policies), each with
/// an implementation of its own.
pub trait Reconciler<K: Object>: Sized + Send + Sync + 'static {
    /// Why a pass fails.
    type Error: ReconcileError;

    /// The controller's name (binary, chart, Lease, Event reporter, metric prefix).
    const NAME: &'static str;

    /// One pass: read what the decision needs, decide once with one `now`, execute the plan.
    /// `object` is the cached object on the first pass and a fresh read after a conflict.
    fn reconcile(
        object: Arc<K>,
        ctx: &Context<Self>,
    ) -> impl Future<Output = Result<Requeue, Self::Error>> + Send;

    /// An object of this kind that does not deserialize (`error` says which field and why).
    /// Default: logged, counted under `malformed`, reported on the object by a Warning Event
    /// `Malformed` naming the field (once per version of it: a pass of the same version again
    /// publishes nothing), and left alone until it changes (ebb cannot know what it asks for).
    /// A controller that owns the kind may report it in a status condition instead.
    fn malformed(
        meta: &ObjectMeta,
        error: &str,
        ctx: &Context<Self>,
    ) -> impl Future<Output = Result<Requeue, Self::Error>> + Send {
        async move {
            let key = meta_key(meta);
            tracing::warn!(
                kind = %K::kind(&()),
                object = %key,
                %error,
                "does not deserialize; left alone until it changes"
            );
            ctx.metrics.record_error("malformed");
            let version = meta.resource_version.as_deref().unwrap_or_default();
            if ctx.malformed.first_report(&key, version) {
                let kind = K::kind(&());
                let reference = ObjectReference {
                    api_version: Some(K::api_version(&()).into_owned()),
                    kind: Some(kind.clone().into_owned()),
                    name: meta.name.clone(),
                    namespace: meta.namespace.clone(),
                    uid: meta.uid.clone(),
                    ..ObjectReference::default()
                };
                let note =
                    format!("does not fit the {kind} type, left alone until it changes: {error}");
                ctx.events
                    .record(
                        &reference,
                        EventKind::Warning,
                        "Malformed",
                        "Reconcile",
                        &note,
                    )
                    .await;
            }
            Ok(Requeue::AwaitChange)
        }
    }
}

/// A write met a 409, or had no resourceVersion to be preconditioned on: what the pass read is
/// stale. Controllers wrap it in their own error (`Conflict(#[from] Stale)`, reporting
/// [`ReconcileError::is_conflict`]); the frame reads the object again and runs the pass again.
#[derive(Debug, thiserror::Error)]
#[error("{object} changed since it was read; deciding again")]
pub struct Stale {
    /// `Kind namespace/name`.
    pub object: String,
}

/// A read from the API server that failed: what was read, and the answer. Controllers wrap it in
/// their own error (`Observe(#[from] ReadError)`), so every failed read says the same thing.
#[derive(Debug, thiserror::Error)]
#[error("reading {what}: {source}")]
pub struct ReadError {
    /// What was read, e.g. `Workshop ns/name`.
    pub what: String,
    /// The API's answer.
    #[source]
    pub source: kube::Error,
}

impl ReadError {
    /// For `map_err`: the failed read of `what`.
    pub fn of(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self { what, source }
    }
}

/// A write to the API server that failed with something other than a conflict: its metric
/// label, what was written, and the answer.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct WriteError {
    /// The metric label (`reconcile_errors_total{category}`), e.g. `write_status`.
    pub category: &'static str,
    /// What was written, e.g. `writing the status of WorkshopProvision ns/name`.
    pub what: String,
    /// The API's answer.
    #[source]
    pub source: kube::Error,
}

impl WriteError {
    /// For `map_err`: the failed write `what`, counted under `category`.
    pub fn of(category: &'static str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self {
            category,
            what,
            source,
        }
    }
}

/// Why a pass failed, for the causes every controller has: a read, a write, a conflict, or an
/// object that breaks a rule. A controller with no causes of its own uses it as its error type;
/// its [`ReconcileError`] answers come from the variant.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A read failed (category `observe`).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A write failed with something other than a conflict (category: the write's own).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// What the pass read is stale (category `conflict`): read again and run the pass again.
    #[error(transparent)]
    Conflict(#[from] Stale),
    /// A cache the pass reads has not listed yet (category `observe`): retried with backoff.
    #[error(transparent)]
    Cold(#[from] crate::watch::cache::Cold),
    /// The object breaks a rule (category `invalid`); its status says which. Not retried until
    /// the object changes.
    #[error("{object} is invalid: {message}")]
    Invalid {
        /// `Kind namespace/name`.
        object: String,
        /// The rule broken, naming the field.
        message: String,
    },
}

impl ReconcileError for Failure {
    fn category(&self) -> &'static str {
        match self {
            Failure::Read(_) | Failure::Cold(_) => "observe",
            Failure::Write(write) => write.category,
            Failure::Conflict(_) => "conflict",
            Failure::Invalid { .. } => "invalid",
        }
    }

    fn is_transient(&self) -> bool {
        !matches!(self, Failure::Invalid { .. })
    }

    fn is_conflict(&self) -> bool {
        matches!(self, Failure::Conflict(_))
    }
}

impl Failure {
    /// The conflict of a pass over `object` (`Kind namespace/name`).
    pub fn stale(object: impl Into<String>) -> Self {
        Failure::Conflict(Stale {
            object: object.into(),
        })
    }
}

/// The name of an object the frame handed to a [`Reconciler`] (checked before: never empty
/// there).
pub fn name_of<K: Resource>(object: &K) -> &str {
    object.meta().name.as_deref().unwrap_or_default()
}

/// The namespace of an object of a namespaced kind the frame handed to a [`Reconciler`]
/// (checked before: never empty there); `""` for a cluster-scoped kind.
pub fn namespace_of<K: Resource>(object: &K) -> &str {
    object.meta().namespace.as_deref().unwrap_or_default()
}

/// The metadata field a reconcile of kind `K` needs and `meta` lacks: `metadata.name`, or
/// `metadata.namespace` for a namespaced kind.
fn missing_metadata<K>(meta: &ObjectMeta) -> Option<&'static str>
where
    K: Resource,
    K::Scope: 'static,
{
    if meta.name.as_deref().is_none_or(str::is_empty) {
        return Some("metadata.name");
    }
    let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
    (namespaced && meta.namespace.as_deref().is_none_or(str::is_empty))
        .then_some("metadata.namespace")
}

/// `namespace/name` of `meta` (or `name` when cluster-scoped).
pub fn meta_key(meta: &ObjectMeta) -> String {
    let name = meta.name.clone().unwrap_or_default();
    match &meta.namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    }
}

/// The object as last seen: typed, or malformed (its metadata and why).
enum Seen<K> {
    Typed(Arc<K>),
    Malformed(Box<ObjectMeta>, String),
}

impl<K> Seen<K> {
    fn of<S: Stored<Object = K>>(stored: &S) -> Self {
        match stored.typed() {
            Ok(typed) => Self::Typed(Arc::new(typed)),
            Err(error) => Self::Malformed(Box::new(stored.meta().clone()), error.into_owned()),
        }
    }
}

/// The frame's reconcile for controller `R`, as [`run`] runs it (see the module docs).
pub async fn reconcile<S: Stored, R: Reconciler<S::Object>>(
    object: Arc<S>,
    ctx: Arc<Context<R>>,
) -> Result<Requeue, Error<R::Error>> {
    reconcile_seen(Seen::of(object.as_ref()), object.meta().clone(), ctx).await
}

/// The frame's reconcile for controller `R` of an object a [`Runner`] holds ([`run_squeezed`]).
pub async fn reconcile_squeezed<K, R>(
    object: Arc<Squeezed<K>>,
    ctx: Arc<Context<R>>,
) -> Result<Requeue, Error<R::Error>>
where
    K: Object + serde::Serialize,
    R: Reconciler<K>,
{
    let (seen, meta) = match object.unsqueeze() {
        Ok(typed) => {
            let meta = typed.meta().clone();
            (Seen::Typed(Arc::new(typed)), meta)
        }
        Err(unfit) => {
            let Unfit { meta, error } = *unfit;
            (Seen::Malformed(Box::new(meta.clone()), error), meta)
        }
    };
    reconcile_seen(seen, meta, ctx).await
}

async fn reconcile_seen<K: Object, R: Reconciler<K>>(
    seen: Seen<K>,
    meta: ObjectMeta,
    ctx: Arc<Context<R>>,
) -> Result<Requeue, Error<R::Error>> {
    let span = tracing::info_span!(
        "reconcile",
        controller = R::NAME,
        namespace = meta.namespace.as_deref().unwrap_or_default(),
        name = meta.name.as_deref().unwrap_or_default(),
    );
    let key = meta_key(&meta);
    let passes = passes::<K, R>(seen, meta, &ctx);
    let result = ControllerMetrics::instrument(&ctx.metrics, passes, ReconcileError::category)
        .instrument(span)
        .await;
    if result.is_ok() {
        ctx.backoff.succeeded(&key);
    }
    result
}

async fn passes<K: Object, R: Reconciler<K>>(
    mut seen: Seen<K>,
    meta: ObjectMeta,
    ctx: &Context<R>,
) -> Result<Requeue, Error<R::Error>> {
    if !ctx.leader.is_leader() {
        // Followers keep their caches warm, write nothing and set no timer: when this replica
        // starts to write, every object is reconciled at once (Leader::wake_on_writing).
        return Ok(Requeue::AwaitChange);
    }
    if let Some(field) = missing_metadata::<K>(&meta) {
        return Err(Error::MissingMetadata {
            kind: K::kind(&()).into_owned(),
            field,
        });
    }
    let key = meta_key(&meta);
    // Just after the server came back, the cache may not have seen a change made while it was
    // away (crate::watch::contact::FRESH_READS): the object is read before the first pass too.
    let mut read_first = ctx.contact.reads_fresh();
    for attempt in 1..=MAX_ATTEMPTS {
        if read_first {
            match reread::<K>(&ctx.client, &meta)
                .await
                .map_err(|source| Error::Reread {
                    key: key.clone(),
                    source,
                })? {
                Some(fresh) => seen = fresh,
                None => return Ok(Requeue::AwaitChange),
            }
        }
        let pass = async {
            match &seen {
                Seen::Typed(object) => {
                    ctx.malformed.forget(&key);
                    R::reconcile(object.clone(), ctx).await
                }
                Seen::Malformed(meta, error) => R::malformed(meta, error, ctx).await,
            }
        };
        let result = READ_FRESH.scope(read_first, pass).await;
        match result {
            Err(e) if e.is_conflict() => {
                tracing::debug!(attempt, error = %e, "conflict; reading again");
                if attempt == MAX_ATTEMPTS {
                    break;
                }
                read_first = true;
            }
            other => return other.map_err(Error::Reconcile),
        }
    }
    Err(Error::Conflicts {
        key,
        attempts: MAX_ATTEMPTS,
    })
}

/// The object as stored now, typed or malformed; `None` when it is gone.
async fn reread<K>(client: &Client, meta: &ObjectMeta) -> Result<Option<Seen<K>>, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match &meta.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let Some(found) = api
        .get_opt(meta.name.as_deref().unwrap_or_default())
        .await?
    else {
        return Ok(None);
    };
    let value = serde_json::to_value(&found).map_err(kube::Error::SerdeError)?;
    Ok(Some(match crate::watch::guard::read::<K>(&value, "") {
        Ok(typed) => Seen::Typed(Arc::new(typed)),
        Err(error) => Seen::Malformed(Box::new(found.metadata), error),
    }))
}

/// How long the API server asked the client to wait, when an API answer in `error`'s chain of
/// sources is a 429 Too Many Requests with `details.retryAfterSeconds` (what kube-apiserver's
/// priority and fairness sends beside its `Retry-After` header).
pub fn retry_after(error: &(dyn std::error::Error + 'static)) -> Option<Duration> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.code == 429
        {
            return status
                .details
                .as_ref()
                .map(|d| Duration::from_secs(d.retry_after_seconds.into()))
                .filter(|d| !d.is_zero());
        }
        next = error.source();
    }
    None
}

/// The frame's error policy for controller `R`: an error retrying cannot fix waits for a change
/// of the object; any other retries after the object's backoff delay, or after the server's
/// `Retry-After` when a 429 asked for longer.
pub fn error_policy<S: Stored, R: Reconciler<S::Object>>(
    object: &S,
    error: &Error<R::Error>,
    ctx: &Context<R>,
) -> Requeue {
    error_policy_of::<S::Object, R>(&object_key(object), error, ctx)
}

/// [`error_policy`] for the object `key` (`namespace/name`).
pub fn error_policy_of<K: Object, R: Reconciler<K>>(
    key: &str,
    error: &Error<R::Error>,
    ctx: &Context<R>,
) -> Requeue {
    let key = key.to_owned();
    if !error.is_transient() {
        tracing::info!(controller = R::NAME, object = %key, category = error.category(), %error,
            "waiting for the object to change");
        return Requeue::AwaitChange;
    }
    tracing::warn!(controller = R::NAME, object = %key, category = error.category(), %error,
        "reconcile failed");
    // For want of the server: its return reconciles every object at once (crate::watch::contact), so
    // the backoff below only spaces the attempts while it is away.
    ctx.contact.failed_if_unreachable(error);
    let backoff = ctx.backoff.failed(&key);
    Requeue::After(retry_after(error).map_or(backoff, |asked| asked.max(backoff)))
}

/// When a pass that took `took` and asked to come back `after` its start is due, counted from
/// its end (the queue's timer counts from there): at once if that time has passed.
fn due_in(after: Duration, took: Duration) -> Duration {
    after.saturating_sub(took)
}

/// kube's `Action` for `requeue`, at the end of `key`'s reconcile, which took `took`: noted in
/// `queue`. A requeue waits in `queue`'s timer, which hands the object to the controller when it
/// is due ([`Queue::due`]), so kube is told to await a change: its scheduler holds no entry for
/// an object that waits for its next transition.
fn noted(queue: &Queue, key: String, requeue: Requeue, took: Duration) -> Action {
    queue.finished(&key);
    if let Requeue::After(after) = requeue {
        queue.requeued(key, due_in(after, took));
    }
    Action::await_change()
}

/// Told the `namespace/name` of each object that is gone.
type Gone = Arc<dyn Fn(&str) + Send + Sync>;

/// What a controller's run tells of each object that is gone: `gone`, once the frame has
/// forgotten the object's backoff and malformed report (an object that is gone leaves nothing
/// behind), and told of each deletion `queue` sees; with the histogram of `queue`'s waits,
/// under `kind`.
fn watched<R, F>(queue: &Queue, kind: &str, ctx: &Arc<Context<R>>, gone: F) -> (Gone, Histogram)
where
    R: Send + Sync + 'static,
    F: Fn(&str) + Send + Sync + 'static,
{
    let forget = ctx.clone();
    let gone: Gone = Arc::new(move |key: &str| {
        forget.backoff.forget(key);
        forget.malformed.forget(key);
        gone(key);
    });
    let told = gone.clone();
    queue.on_deleted(move |key| told(key));
    (gone, ctx.metrics.watch_queue(kind, queue))
}

/// Runs `controller` with the frame until it ends (shutdown), calling `gone` with the
/// `namespace/name` of each object that is gone: deleted as the watch reports it, missing from a
/// relist (which reports no deletions) at its end, or before its reconcile ran (to drop its
/// gauges, say; it may be told twice).
pub async fn run<S, R, F>(controller: Queued<S>, ctx: Arc<Context<R>>, gone: F)
where
    S: Stored,
    R: Reconciler<S::Object>,
    F: Fn(&str) + Send + Sync + 'static,
{
    let (controller, queue) = controller.into_parts();
    let (gone, wait) = watched(&queue, &S::kind(&()), &ctx, gone);
    let started = queue.clone();
    let failed = queue.clone();
    controller
        .run(
            move |object, ctx| {
                let key = object_key(object.as_ref());
                if let Some(waited) = started.started(&key) {
                    wait.observe(waited.as_secs_f64());
                }
                let queue = started.clone();
                let start = tokio::time::Instant::now();
                reconcile(object, ctx)
                    .map_ok(move |requeue| noted(&queue, key, requeue, start.elapsed()))
            },
            move |object, error, ctx| {
                // A backoff counts from the failure.
                let requeue = error_policy(object.as_ref(), error, &ctx);
                noted(
                    &failed,
                    object_key(object.as_ref()),
                    requeue,
                    Duration::ZERO,
                )
            },
            ctx,
        )
        .for_each(|result| {
            match result {
                Err(ControllerError::ObjectNotFound(reference)) => {
                    let key = crate::watch::queue::ref_key(reference.as_ref());
                    queue.gone(&key);
                    gone(&key);
                }
                Err(error) => tracing::debug!(controller = R::NAME, %error, "controller event"),
                Ok(_) => {}
            }
            futures::future::ready(())
        })
        .await;
}

/// Runs `runner` with the frame until it ends (shutdown), as [`run`] runs kube's `Controller`:
/// `gone` is called with the `namespace/name` of each object that is gone (deleted as the watch
/// reports it, missing from a relist at its end, or before its reconcile ran).
pub async fn run_squeezed<K, R, F>(runner: Runner<K>, ctx: Arc<Context<R>>, gone: F)
where
    K: Object + serde::Serialize,
    R: Reconciler<K>,
    F: Fn(&str) + Send + Sync + 'static,
{
    let (gone, wait) = watched(runner.queue(), &K::kind(&()), &ctx, gone);
    let policy_ctx = ctx.clone();
    runner
        .run(
            move |object| reconcile_squeezed(object, ctx.clone()),
            move |key, error| error_policy_of(key, error, &policy_ctx),
            move |key| gone(key),
            move |waited| wait.observe(waited.as_secs_f64()),
        )
        .await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A pass's requeue waits in the queue's timer, counted from the pass's start; kube is told
    /// to await a change, so its scheduler keeps nothing for the object meanwhile.
    #[tokio::test(start_paused = true)]
    async fn a_requeue_waits_in_the_queue_not_in_kubes_scheduler() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        let requeue = Requeue::After(Duration::from_secs(60));
        let action = noted(&queue, "ns/a".into(), requeue, Duration::from_secs(1));
        assert_eq!(action, Action::await_change());
        let not_yet = tokio::time::timeout(Duration::from_secs(58), due.next()).await;
        assert!(not_yet.is_err(), "not due before its time");
        let fired = tokio::time::timeout(Duration::from_secs(2), due.next()).await;
        assert_eq!(fired.unwrap(), Some(vec!["ns/a".to_owned()]));
        let action = noted(&queue, "ns/a".into(), Requeue::AwaitChange, Duration::ZERO);
        assert_eq!(action, Action::await_change());
    }
}
