//! `FakeApi`: an in-memory Kubernetes API server behind a real `kube::Client`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{Either, Full};
use jiff::Timestamp;
use kube::client::Body;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::path::{self, ApiPath, ResourceType};
use crate::selector;
use crate::store::{ApiError, ObjectKey, Part, PatchKind, ScalePaths, Store};
use crate::watch::{
    DEFAULT_BOOKMARK_INTERVAL, WatchBody, WatchRequest, WatchStream, Watcher, is_true,
    partial_metadata,
};
use ebb_runtime::clock::{Clock, ManualClock};

/// Which requests a fault or hook applies to: an optional method and a substring of the path
/// (without the query), e.g. `Matcher::patch("/deployments/web")` (which also matches
/// `/deployments/web/status`; add `/status` to target only that).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matcher {
    method: Option<Method>,
    path_contains: String,
    /// Only watch requests (GET with `watch=true|1`), not gets or lists of the same path.
    watch_only: bool,
    /// Only requests of this actor's client ([`FakeApi::client_as`]).
    actor: Option<usize>,
}

impl Matcher {
    /// Requests with `method` whose path contains `path_contains`.
    pub fn new(method: Method, path_contains: impl Into<String>) -> Self {
        Self {
            method: Some(method),
            path_contains: path_contains.into(),
            watch_only: false,
            actor: None,
        }
    }

    /// Requests of any method whose path contains `path_contains`.
    pub fn any(path_contains: impl Into<String>) -> Self {
        Self {
            method: None,
            path_contains: path_contains.into(),
            watch_only: false,
            actor: None,
        }
    }

    /// GET (get, list, watch) requests.
    pub fn get(path_contains: impl Into<String>) -> Self {
        Self::new(Method::GET, path_contains)
    }

    /// POST (create) requests.
    pub fn post(path_contains: impl Into<String>) -> Self {
        Self::new(Method::POST, path_contains)
    }

    /// PUT (replace) requests.
    pub fn put(path_contains: impl Into<String>) -> Self {
        Self::new(Method::PUT, path_contains)
    }

    /// Watch requests (GET with `watch=true|1`), and not lists or gets of the same path: to
    /// fail a controller's watch while its list succeeds.
    pub fn watch(path_contains: impl Into<String>) -> Self {
        Self {
            watch_only: true,
            ..Self::get(path_contains)
        }
    }

    /// PATCH requests.
    pub fn patch(path_contains: impl Into<String>) -> Self {
        Self::new(Method::PATCH, path_contains)
    }

    /// DELETE requests.
    pub fn delete(path_contains: impl Into<String>) -> Self {
        Self::new(Method::DELETE, path_contains)
    }

    /// Only the requests of [`FakeApi::client_as`]`(actor)`: to fail one replica's requests
    /// while another's go through.
    #[must_use]
    pub fn of_actor(self, actor: usize) -> Self {
        Self {
            actor: Some(actor),
            ..self
        }
    }

    fn matches(&self, method: &Method, path: &str, watch: bool) -> bool {
        self.method.as_ref().is_none_or(|m| m == method)
            && path.contains(&self.path_contains)
            && (watch || !self.watch_only)
    }

    fn matches_from(&self, method: &Method, path: &str, watch: bool, actor: Option<usize>) -> bool {
        self.matches(method, path, watch) && self.actor.is_none_or(|a| Some(a) == actor)
    }
}

/// A failure to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and a matching `metav1.Status` (409, 429, 500, ...); the
    /// request has no effect. A 429 says when to come back as kube-apiserver's priority and
    /// fairness does: a `Retry-After` header and `details.retryAfterSeconds`, both
    /// [`RETRY_AFTER_SECONDS`].
    Status(u16),
    /// No answer: the client gets a service error; the request has no effect.
    Timeout,
    /// The request takes effect, but the client gets a service error as if the answer was lost:
    /// the case where a retry must not act twice.
    TimeoutAfterApply,
}

/// The `Retry-After` of an injected 429, in seconds (kube-apiserver's priority and fairness says 1;
/// a larger value tells an honoured `Retry-After` from the first step of a backoff).
pub const RETRY_AFTER_SECONDS: u32 = 5;

/// The error the fake's service returns for injected timeouts; kube surfaces it as
/// `kube::Error::Service`.
#[derive(Debug, thiserror::Error)]
#[error("injected timeout for {method} {path}")]
pub struct InjectedTimeout {
    /// The request method.
    pub method: Method,
    /// The request path.
    pub path: String,
}

/// One request the fake received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: Method,
    /// Path without the query.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// The patch kind of a PATCH.
    pub patch: Option<PatchKind>,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// The HTTP status the client got; `None` for an injected timeout.
    pub status: Option<u16>,
    /// When the request was served, by the fake's clock (the simulator's timeline).
    pub at: Timestamp,
}

impl RecordedRequest {
    /// The first value of query parameter `name` (e.g. `fieldManager`, `labelSelector`).
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request could change state (anything but GET).
    pub fn is_write(&self) -> bool {
        self.method != Method::GET
    }

    /// Whether the request was a watch (a GET with `watch=true` or `watch=1`).
    pub fn is_watch(&self) -> bool {
        self.method == Method::GET && is_true(self.query_param("watch"))
    }

    /// Whether the client got a 2xx answer.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

type HookFn = Box<dyn FnOnce(&FakeApi) + Send>;

struct Hook {
    matcher: Matcher,
    before: bool,
    run: HookFn,
}

struct FaultRule {
    matcher: Matcher,
    fault: Fault,
    /// Matching requests to let through before the fault applies.
    skip: usize,
    remaining: usize,
}

pub(crate) struct State {
    pub store: Store,
    log: Vec<RecordedRequest>,
    faults: Vec<FaultRule>,
    hooks: Vec<Hook>,
    /// How often open watches that allow bookmarks get one unprompted (`None`: only on
    /// [`FakeApi::send_bookmarks`]).
    bookmark_interval: Option<Duration>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            store: Store::default(),
            log: Vec::new(),
            faults: Vec::new(),
            hooks: Vec::new(),
            bookmark_interval: Some(DEFAULT_BOOKMARK_INTERVAL),
        }
    }
}

/// The body of every response: JSON in one piece, or a watch's stream of events.
/// The body of the fake's answers: whole, or a watch's stream.
pub type ResponseBody = Either<Full<Bytes>, WatchBody>;

/// The fake as a service, for [`FakeApi::client_with`]'s layer to wrap.
pub type FakeService =
    tower::util::BoxService<Request<Body>, Response<ResponseBody>, InjectedTimeout>;

/// What a request produced: a JSON answer, or a watch to stream.
enum Answer {
    Json(u16, Value),
    Watch(Box<Watcher>, watch::Receiver<()>),
}

struct Inner {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// The turn-taking of actors' requests, while an interleaving is explored.
    gate: Mutex<Option<Arc<crate::interleave::Gate>>>,
}

/// An in-memory Kubernetes API server for reconciler tests, reachable through a real
/// [`kube::Client`] ([`FakeApi::client`]), so reconcilers run unchanged against it.
///
/// What it does, like an API server: GET, LIST (`labelSelector` with `=`, `==`, `!=`, `in`,
/// `notin`, exists, `!` and comma lists), POST (409 `AlreadyExists`), PUT and PATCH (merge,
/// strategic merge, JSON patch, server-side apply) with optimistic concurrency (a
/// `metadata.resourceVersion` in a PUT body or in the patched result that differs from the stored
/// one is a 409 `Conflict`), DELETE (finalizers hold the object with a `deletionTimestamp`),
/// `/status` and `/scale` subresources, `dryRun`. The resource version is one counter for all
/// objects and moves only when an object actually changes; `metadata.generation` moves when
/// anything but metadata and status changes. Every resource has a status subresource unless
/// [`FakeApi::set_status_subresource`] says otherwise: writes to the object keep `.status`, writes
/// to `/status` change only `.status`, and a create drops `.status`.
///
/// `fieldSelector` works on `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`); other
/// field labels are a 400, as for most resources on a real server. Clients asking for
/// `PartialObjectMetadata` (kube's `metadata_watcher`, `Controller::owns`) get that view.
///
/// Watches (`?watch=true` on a collection, namespaced, across namespaces or cluster-scoped, or on
/// one object by path) behave as kube-apiserver's watch cache, so kube's `watcher`, reflectors and
/// `Controller` run against the fake:
/// - from `resourceVersion` R they replay the changes after R, then follow new ones; from `""` or
///   `"0"` they start with synthetic ADDED events of the current state; with
///   `sendInitialEvents=true` (and `resourceVersionMatch=NotOlderThan`) the initial events end
///   with a bookmark annotated `k8s.io/initial-events-end`;
/// - list responses carry the collection's `resourceVersion` to watch from;
/// - the history keeps the last [`DEFAULT_WATCH_HISTORY`](crate::DEFAULT_WATCH_HISTORY) changes
///   ([`set_watch_history`](Self::set_watch_history)); a watch from an older version, or one that
///   fell that far behind, gets one ERROR event with a 410 `Expired` status and ends;
/// - `labelSelector` and `fieldSelector` apply to the old and new state of each change: an object
///   leaving the selection is DELETED for the watcher, one entering it ADDED;
/// - with `allowWatchBookmarks=true`, a BOOKMARK with the current resource version comes every
///   [`set_bookmark_interval`](Self::set_bookmark_interval) (Tokio time, so paused test time
///   applies) and on [`send_bookmarks`](Self::send_bookmarks);
/// - `timeoutSeconds` ends the stream (default 1800 s); injected faults and hooks apply to watch
///   requests as to any other; a client that drops the stream closes the watch
///   ([`open_watches`](Self::open_watches)).
///
/// Simplifications: strategic merge and server-side apply are merge patches (no field managers, no
/// conflicts, lists replace instead of merging by key); `limit`/`continue` paging is ignored (a
/// list is one page); owner-reference garbage collection, admission and schema validation are not
/// modelled; objects are keyed by group, version and plural, so one object is not visible under
/// two API versions.
///
/// Test helpers ([`insert`](Self::insert), [`modify`](Self::modify), [`get`](Self::get), ...)
/// act directly on the store, are not recorded, and panic on malformed input: that is a bug in
/// the test. Namespaces are `&str`; `""` means cluster-scoped.
#[derive(Clone)]
pub struct FakeApi {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FakeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApi").finish_non_exhaustive()
    }
}

impl Default for FakeApi {
    fn default() -> Self {
        Self::new()
    }
}

/// The instant a fake's default clock stands at: 2025-01-01T00:00:00Z.
pub const FAKE_EPOCH_SECONDS: i64 = 1_735_689_600;

impl FakeApi {
    /// An empty API whose server-set timestamps come from a clock fixed at 2025-01-01T00:00:00Z.
    pub fn new() -> Self {
        let epoch = Timestamp::from_second(FAKE_EPOCH_SECONDS)
            .ok()
            .unwrap_or_default();
        Self::with_clock(ManualClock::new(epoch))
    }

    /// An empty API whose timestamps (`creationTimestamp`, `deletionTimestamp`) come from `clock`;
    /// pass the same `ManualClock` the reconciler under test uses.
    pub fn with_clock(clock: impl Clock) -> Self {
        Self {
            inner: Arc::new(Inner {
                clock: Arc::new(clock),
                state: Mutex::new(State::default()),
                gate: Mutex::new(None),
            }),
        }
    }

    /// A client talking to this fake; its default namespace is `default`. Needs a Tokio runtime
    /// (with time enabled, for watches).
    pub fn client(&self) -> Client {
        self.client_of(None)
    }

    /// A client of actor `actor` (a controller replica) in an interleaving explored by
    /// [`interleave::explore`](crate::interleave::explore): its requests wait for their turn.
    /// Without an exploration under way it is [`Self::client`].
    pub fn client_as(&self, actor: usize) -> Client {
        self.client_of(Some(actor))
    }

    /// A client talking to this fake through `layer` (a client-side limit, say).
    pub fn client_with<L>(&self, layer: &L) -> Client
    where
        L: tower::Layer<FakeService>,
        L::Service: tower::Service<
                Request<Body>,
                Response = Response<ResponseBody>,
                Error = InjectedTimeout,
            > + Send
            + 'static,
        <L::Service as tower::Service<Request<Body>>>::Future: Send + 'static,
    {
        let api = self.clone();
        let service =
            tower::util::BoxService::new(tower::service_fn(move |request: Request<Body>| {
                let api = api.clone();
                async move { api.handle(request, None).await }
            }));
        Client::new(layer.layer(service), "default")
    }

    fn client_of(&self, actor: Option<usize>) -> Client {
        let api = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let api = api.clone();
            async move {
                if let Some(actor) = actor {
                    let method = request.method().clone();
                    let write = !matches!(method, Method::GET | Method::HEAD);
                    let what = format!("{method} {}", request.uri().path());
                    api.wait_turn(actor, write, what).await;
                }
                api.handle(request, actor).await
            }
        });
        Client::new(service, "default")
    }

    pub(crate) fn set_gate(&self, gate: Option<Arc<crate::interleave::Gate>>) {
        *self
            .inner
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = gate;
    }

    async fn wait_turn(&self, actor: usize, write: bool, what: String) {
        let gate = self
            .inner
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(gate) = gate {
            gate.turn(actor, write, &what).await;
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A panicking test hook can poison the lock; the store is still consistent (every
        // operation finishes its mutation before anything can panic), so keep going.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    // ----- configuration -----

    /// Maps `kind` to a plural for [`insert`](Self::insert) and the JSON helpers, where the
    /// derived one (lowercase + `s`/`es`/`ies`) is wrong.
    pub fn register_plural(&self, kind: &str, plural: &str) {
        self.state().store.register_plural(kind, plural);
    }

    /// Turns the status subresource of `group`/`plural` on or off (on by default). `group` is
    /// `""` for the core API.
    pub fn set_status_subresource(&self, group: &str, plural: &str, enabled: bool) {
        self.state()
            .store
            .set_status_subresource(group, plural, enabled);
    }

    /// Whether the server serves `group`/`plural` (default: every resource). `false` is a
    /// cluster without that CRD: every request to it answers 404 "the server could not find the
    /// requested resource", and its watches fail.
    pub fn set_served(&self, group: &str, plural: &str, served: bool) {
        let key = (group.to_owned(), plural.to_owned());
        let unserved = &mut self.state().store.unserved;
        if served {
            unserved.remove(&key);
        } else {
            unserved.insert(key);
        }
    }

    /// Enables `/scale` for `group`/`plural` with the given paths (as in a CRD's `scale` stanza).
    /// Deployments, StatefulSets, ReplicaSets and ReplicationControllers have it already.
    pub fn register_scale(&self, group: &str, plural: &str, paths: ScalePaths) {
        self.state().store.register_scale(group, plural, paths);
    }

    // ----- watches -----

    /// Keeps only the last `limit` changes for watches (default
    /// [`DEFAULT_WATCH_HISTORY`](crate::DEFAULT_WATCH_HISTORY)), dropping older ones now: a
    /// watch from before the kept changes gets a 410, as after an etcd compaction.
    pub fn set_watch_history(&self, limit: usize) {
        self.state().store.history.set_limit(limit);
    }

    /// How often open watches that allow bookmarks get one unprompted (default
    /// [`DEFAULT_BOOKMARK_INTERVAL`](crate::DEFAULT_BOOKMARK_INTERVAL)); `None` sends them only
    /// on [`send_bookmarks`](Self::send_bookmarks). Applies to watches opened afterwards.
    pub fn set_bookmark_interval(&self, interval: Option<Duration>) {
        self.state().bookmark_interval = interval;
    }

    /// Sends every open watch that allows bookmarks one BOOKMARK with the current resource
    /// version, after any events it has yet to send.
    pub fn send_bookmarks(&self) {
        self.state().store.history.request_bookmarks();
    }

    /// How many watch streams are open (a stream closes when its client drops it or it ends).
    pub fn open_watches(&self) -> usize {
        self.state().store.history.open_watches()
    }

    /// The current resource version: that of the latest change to any object, as a list
    /// response would report it.
    pub fn resource_version(&self) -> String {
        self.state().store.revision().to_string()
    }

    // ----- seeding and inspecting objects -----

    /// Stores an object (status included) as another actor created it, reading `apiVersion`,
    /// `kind` and `metadata` from it; missing uid, creationTimestamp and generation are filled,
    /// the resource version is assigned. Replaces an existing object. Returns the stored JSON.
    ///
    /// # Panics
    /// If the object has no `apiVersion`, `kind` or `metadata.name`.
    #[track_caller]
    pub fn insert(&self, obj: impl Serialize) -> Value {
        self.insert_inner(obj, None)
    }

    /// [`insert`](Self::insert) under an explicit plural (for kinds whose plural is irregular).
    ///
    /// # Panics
    /// As [`insert`](Self::insert).
    #[track_caller]
    pub fn insert_with_plural(&self, obj: impl Serialize, plural: &str) -> Value {
        self.insert_inner(obj, Some(plural))
    }

    #[track_caller]
    fn insert_inner(&self, obj: impl Serialize, plural: Option<&str>) -> Value {
        let value = serde_json::to_value(obj)
            .unwrap_or_else(|e| panic!("FakeApi::insert: object does not serialise: {e}"));
        self.try_insert(value, plural)
            .unwrap_or_else(|e| panic!("FakeApi::insert: {e}"))
    }

    /// [`insert`](Self::insert) of an object that may be malformed (a user's manifest, say):
    /// an error saying what is missing instead of a panic.
    ///
    /// # Errors
    /// No `apiVersion`, `kind` or `metadata.name`.
    pub fn try_insert(&self, value: Value, plural: Option<&str>) -> Result<Value, String> {
        let now = self.now();
        self.state().store.insert(value, plural, now)
    }

    /// The stored JSON of `apiVersion`/`kind` `namespace/name`.
    pub fn get_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let state = self.state();
        let key = state.store.key(api_version, kind, namespace, name);
        state.store.get_json(&key)
    }

    /// The stored object `namespace/name` of type `K`.
    ///
    /// # Panics
    /// If the stored JSON does not deserialise into `K`.
    #[track_caller]
    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let value = self
            .state()
            .store
            .get_json(&typed_key::<K>(namespace, name))?;
        Some(from_json(value))
    }

    /// All stored objects of type `K`, in every namespace, ordered by namespace and name.
    ///
    /// # Panics
    /// If a stored object does not deserialise into `K`.
    #[track_caller]
    pub fn list<K>(&self) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let resource = typed_key::<K>("", "").resource;
        let values = self.state().store.objects_of(&resource, None);
        values.into_iter().map(from_json).collect()
    }

    /// Changes a stored object as another actor would (status included): the resource version
    /// and, if needed, the generation move; a change to nothing changes nothing. Returns the
    /// stored object. For replaying races: call it from a hook between the reconciler's read and
    /// its write.
    ///
    /// # Panics
    /// If the object does not exist or does not round-trip through `K`.
    #[track_caller]
    pub fn modify<K>(&self, namespace: &str, name: &str, change: impl FnOnce(&mut K)) -> K
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize,
    {
        let key = typed_key::<K>(namespace, name);
        let stored = self.modify_key(&key, |value| {
            let mut obj: K = from_json(value.clone());
            change(&mut obj);
            *value = serde_json::to_value(&obj)
                .unwrap_or_else(|e| panic!("FakeApi::modify: object does not serialise: {e}"));
        });
        from_json(stored)
    }

    /// [`modify`](Self::modify) on the JSON of `apiVersion`/`kind` `namespace/name`.
    ///
    /// # Panics
    /// If the object does not exist.
    #[track_caller]
    pub fn modify_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Value {
        let key = self.state().store.key(api_version, kind, namespace, name);
        self.modify_key(&key, change)
    }

    #[track_caller]
    fn modify_key(&self, key: &ObjectKey, change: impl FnOnce(&mut Value)) -> Value {
        // Run the change outside the lock: it may call back into the fake.
        let current = self
            .state()
            .store
            .get_json(key)
            .unwrap_or_else(|| panic!("FakeApi::modify: {key:?} does not exist"));
        let mut changed = current;
        change(&mut changed);
        self.state()
            .store
            .modify(key, |v| *v = changed)
            .unwrap_or_else(|e| panic!("FakeApi::modify: {}", e.message))
    }

    /// Deletes the object `namespace/name` of type `K` outright (finalizers ignored); returns
    /// whether it existed.
    pub fn remove<K>(&self, namespace: &str, name: &str) -> bool
    where
        K: Resource<DynamicType = ()>,
    {
        self.state().store.remove(&typed_key::<K>(namespace, name))
    }

    /// [`remove`](Self::remove) by `apiVersion`/`kind`.
    pub fn remove_json(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> bool {
        let mut state = self.state();
        let key = state.store.key(api_version, kind, namespace, name);
        state.store.remove(&key)
    }

    // ----- recorded requests -----

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().log.clone()
    }

    /// The GET (get and list) requests.
    pub fn reads(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_write())
            .collect()
    }

    /// The mutating requests (POST, PUT, PATCH, DELETE), failed ones included.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_write)
            .collect()
    }

    /// The mutating requests matching `matcher`.
    pub fn writes_matching(&self, matcher: &Matcher) -> Vec<RecordedRequest> {
        self.writes()
            .into_iter()
            .filter(|r| matcher.matches(&r.method, &r.path, r.is_watch()))
            .collect()
    }

    /// How many mutating requests were received.
    pub fn write_count(&self) -> usize {
        self.state().log.iter().filter(|r| r.is_write()).count()
    }

    /// How many GET requests were received.
    pub fn read_count(&self) -> usize {
        self.state().log.iter().filter(|r| !r.is_write()).count()
    }

    /// Forgets recorded requests (e.g. after a setup phase).
    pub fn clear_requests(&self) {
        self.state().log.clear();
    }

    // ----- faults and hooks -----

    /// Injects `fault` into the next `times` requests matching `matcher`. Faults are matched in
    /// the order they were injected.
    pub fn inject(&self, matcher: Matcher, fault: Fault, times: usize) {
        self.state().faults.push(FaultRule {
            matcher,
            fault,
            skip: 0,
            remaining: times,
        });
    }

    /// Injects `fault` into request number `n` (counting from 0) of those that arrive from now
    /// on, whatever it is: with the requests of a clean run in hand, a test fails each in turn.
    pub fn inject_nth(&self, n: usize, fault: Fault) {
        self.state().faults.push(FaultRule {
            matcher: Matcher::any(""),
            fault,
            skip: n,
            remaining: 1,
        });
    }

    /// Drops every fault still waiting to be injected: the end of an outage made of
    /// [`FakeApi::inject`] with `usize::MAX`.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// Answers the next request matching `matcher` with HTTP `status` (no effect).
    pub fn fail_next(&self, matcher: Matcher, status: u16) {
        self.inject(matcher, Fault::Status(status), 1);
    }

    /// Lets the next request matching `matcher` time out (no effect).
    pub fn timeout_next(&self, matcher: Matcher) {
        self.inject(matcher, Fault::Timeout, 1);
    }

    /// Runs `hook` once, just before the next request matching `matcher` is handled: another
    /// actor's change that lands between the reconciler's read and its write.
    pub fn before_next(&self, matcher: Matcher, hook: impl FnOnce(&FakeApi) + Send + 'static) {
        self.state().hooks.push(Hook {
            matcher,
            before: true,
            run: Box::new(hook),
        });
    }

    /// Runs `hook` once, just after the next request matching `matcher` is handled (before the
    /// client sees the answer).
    pub fn after_next(&self, matcher: Matcher, hook: impl FnOnce(&FakeApi) + Send + 'static) {
        self.state().hooks.push(Hook {
            matcher,
            before: false,
            run: Box::new(hook),
        });
    }

    fn run_hooks(&self, before: bool, method: &Method, path: &str, watch: bool) {
        let due: Vec<Hook> = {
            let mut state = self.state();
            let (due, rest) = std::mem::take(&mut state.hooks)
                .into_iter()
                .partition(|h| h.before == before && h.matcher.matches(method, path, watch));
            state.hooks = rest;
            due
        };
        for hook in due {
            (hook.run)(self);
        }
    }

    fn take_fault(
        &self,
        method: &Method,
        path: &str,
        watch: bool,
        actor: Option<usize>,
    ) -> Option<Fault> {
        let mut state = self.state();
        let rule = state
            .faults
            .iter_mut()
            .find(|f| f.remaining > 0 && f.matcher.matches_from(method, path, watch, actor))?;
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        rule.remaining -= 1;
        Some(rule.fault)
    }

    // ----- the HTTP side -----

    async fn handle(
        self,
        request: Request<Body>,
        actor: Option<usize>,
    ) -> Result<Response<ResponseBody>, InjectedTimeout> {
        let (parts, body) = request.into_parts();
        let method = parts.method.clone();
        let path = parts.uri.path().to_owned();
        let query: Vec<(String, String)> =
            form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let patch = (method == Method::PATCH)
            .then(|| PatchKind::from_content_type(&content_type))
            .flatten();
        // kube asks for `PartialObjectMetadata` (or its list) this way; both start alike.
        let metadata_only = parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("as=PartialObjectMetadata"));
        let bytes = body.collect_bytes().await.ok();
        let body_json: Option<Value> = bytes
            .as_deref()
            .filter(|b| !b.is_empty())
            .and_then(|b| serde_json::from_slice(b).ok());

        let watch_param = query
            .iter()
            .find(|(k, _)| k == "watch")
            .map(|(_, v)| v.as_str());
        let watch = method == Method::GET && is_true(watch_param);
        self.run_hooks(true, &method, &path, watch);
        let fault = self.take_fault(&method, &path, watch, actor);
        let served_at = self.now();
        let recorded = |status| RecordedRequest {
            at: served_at,
            method: method.clone(),
            path: path.clone(),
            query: query.clone(),
            patch,
            body: body_json.clone(),
            status,
        };
        if fault == Some(Fault::Timeout) {
            self.state().log.push(recorded(None));
            return Err(InjectedTimeout { method, path });
        }
        let timed_out = fault == Some(Fault::TimeoutAfterApply);
        let (answer, bookmark_interval) = {
            // One critical section for effect and record, so the log order is the effect order
            // (and a watch starts exactly at the state its request saw).
            let now = self.now();
            let mut state = self.state();
            let result = match fault {
                Some(Fault::Status(code)) => Err(ApiError::injected(code)),
                _ => dispatch(
                    &mut state.store,
                    &ApiRequest {
                        method: &method,
                        path: &path,
                        query: &query,
                        content_type: &content_type,
                        body: bytes.as_deref().filter(|b| !b.is_empty()),
                        metadata_only,
                    },
                    now,
                ),
            };
            let answer = match result {
                Ok(answer) => answer,
                Err(error) => Answer::Json(error.code, error.to_status()),
            };
            let status = match &answer {
                Answer::Json(status, _) => *status,
                Answer::Watch(..) => 200,
            };
            state.log.push(recorded((!timed_out).then_some(status)));
            (answer, state.bookmark_interval)
        };
        self.run_hooks(false, &method, &path, watch);
        if timed_out {
            return Err(InjectedTimeout { method, path });
        }
        let (status, body) = match answer {
            Answer::Json(status, payload) => {
                let payload = if metadata_only && (200..300).contains(&status) {
                    metadata_view(&payload)
                } else {
                    payload
                };
                (
                    status,
                    Either::Left(Full::new(Bytes::from(payload.to_string()))),
                )
            }
            Answer::Watch(watcher, signal) => {
                let stream = WatchStream::new(self.clone(), *watcher, signal, bookmark_interval);
                (200, Either::Right(stream.into_body()))
            }
        };
        let mut response = Response::new(body);
        *response.status_mut() =
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        if status == 429 {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, RETRY_AFTER_SECONDS.into());
        }
        Ok(response)
    }
}

fn typed_key<K: Resource<DynamicType = ()>>(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        resource: ResourceType {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
        },
        namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
        name: name.to_owned(),
    }
}

#[track_caller]
fn from_json<K: DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value)
        .unwrap_or_else(|e| panic!("FakeApi: stored object does not deserialise: {e}"))
}

/// The `PartialObjectMetadata` view of a JSON answer: an object, or a list of them.
fn metadata_view(payload: &Value) -> Value {
    match payload.get("items").and_then(Value::as_array) {
        Some(items) => json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": payload.get("metadata").cloned().unwrap_or_else(|| json!({})),
            "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
        }),
        None => partial_metadata(payload),
    }
}

/// The parts of a request the store needs.
struct ApiRequest<'a> {
    method: &'a Method,
    path: &'a str,
    query: &'a [(String, String)],
    content_type: &'a str,
    body: Option<&'a [u8]>,
    metadata_only: bool,
}

/// Starts a watch on `store` (a collection, or the one object `name`).
fn start_watch<'q>(
    store: &Store,
    parsed: &ApiPath,
    name: Option<&str>,
    param: impl Fn(&str) -> Option<&'q str>,
    metadata_only: bool,
) -> Result<Answer, ApiError> {
    let request = WatchRequest::parse(parsed, name, param, metadata_only)?;
    // Subscribe under the same lock the watcher starts under: no change can slip between.
    let signal = store.history.subscribe();
    Ok(Answer::Watch(
        Box::new(Watcher::start(request, store)),
        signal,
    ))
}

/// Routes one request to the store.
fn dispatch(
    store: &mut Store,
    request: &ApiRequest<'_>,
    now: Timestamp,
) -> Result<Answer, ApiError> {
    let ApiRequest {
        method,
        path,
        query,
        content_type,
        body,
        metadata_only,
    } = *request;
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let not_found = || ApiError::new(404, "the server could not find the requested resource");
    let parsed = path::parse(path).ok_or_else(not_found)?;
    if store
        .unserved
        .contains(&crate::store::group_plural(&parsed.resource))
    {
        return Err(not_found());
    }
    let dry_run = param("dryRun").is_some_and(|v| !v.is_empty());
    let json_body = || -> Result<Value, ApiError> {
        let bytes = body.ok_or_else(|| ApiError::new(400, "request body is required"))?;
        // kube sends apply patches as JSON (a subset of YAML), so JSON parsing is enough.
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::new(400, format!("request body is not JSON: {e}")))
    };
    let key = |name: &str| ObjectKey {
        resource: parsed.resource.clone(),
        namespace: parsed.namespace.clone(),
        name: name.to_owned(),
    };
    let part = |sub: Option<&str>| match sub {
        None => Ok(Part::Main),
        Some("status") => Ok(Part::Status),
        Some(_) => Err(not_found()),
    };
    let name = parsed.name.as_deref();
    let sub = parsed.subresource.as_deref();
    if *method == Method::GET && is_true(param("watch")) {
        return match sub {
            None => start_watch(store, &parsed, name, param, metadata_only),
            Some(_) => Err(ApiError::new(
                405,
                format!("watch is not supported on {path}"),
            )),
        };
    }

    let (status, value) = match (method.clone(), name, sub) {
        (Method::GET, None, None) => {
            let selector = selector::parse(param("labelSelector").unwrap_or_default())
                .map_err(|e| ApiError::new(400, e))?;
            let fields = selector::parse_fields(param("fieldSelector").unwrap_or_default())
                .map_err(|e| ApiError::new(400, e))?;
            Ok((
                200,
                store.list(
                    &parsed.resource,
                    parsed.namespace.as_deref(),
                    &selector,
                    &fields,
                ),
            ))
        }
        (Method::GET, Some(name), Some("scale")) => Ok((200, store.get_scale(&key(name))?)),
        (Method::GET, Some(name), sub) => {
            part(sub)?;
            Ok((200, store.get(&key(name), sub)?))
        }
        (Method::POST, None, None) => {
            let created = store.create(
                &parsed.resource,
                parsed.namespace.as_deref(),
                json_body()?,
                now,
                dry_run,
            )?;
            Ok((201, created))
        }
        (Method::PUT, Some(name), Some("scale")) => Ok((
            200,
            store.write_scale(&key(name), &json_body()?, None, dry_run)?,
        )),
        (Method::PUT, Some(name), sub) => Ok((
            200,
            store.replace(&key(name), json_body()?, part(sub)?, dry_run)?,
        )),
        (Method::PATCH, Some(name), sub) => {
            let kind = PatchKind::from_content_type(content_type).ok_or_else(|| {
                ApiError::new(
                    415,
                    format!("the body of the request was in an unknown format: {content_type}"),
                )
            })?;
            if sub == Some("scale") {
                let scale = store.write_scale(&key(name), &json_body()?, Some(kind), dry_run)?;
                return Ok(Answer::Json(200, scale));
            }
            Ok((
                200,
                store.patch(&key(name), kind, &json_body()?, part(sub)?, now, dry_run)?,
            ))
        }
        (Method::DELETE, Some(name), None) => {
            // DeleteOptions' preconditions, as kube-apiserver checks them (409 on a mismatch).
            let options = body
                .filter(|b| !b.is_empty())
                .map(|_| json_body())
                .transpose()?
                .unwrap_or(Value::Null);
            let preconditions = &options["preconditions"];
            Ok((200, store.delete(&key(name), preconditions, now, dry_run)?))
        }
        _ => Err(ApiError::new(
            405,
            format!("{method} is not supported on {path}"),
        )),
    }?;
    Ok(Answer::Json(status, value))
}
