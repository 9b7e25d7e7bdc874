//! Watches: the change history behind `?watch=1` and the stream that serves it.
//!
//! Modelled on kube-apiserver's watch cache. Every change is kept (up to a limit) with the
//! revision it created. A watch from resourceVersion R replays the retained changes after R and
//! then follows new ones; a watch from `""` or `"0"` starts with synthetic ADDED events for the
//! current state; a watch from a revision the history no longer holds gets one ERROR event
//! carrying a 410 `Expired` status, and the stream ends (the client must list again). Each
//! change is filtered on its new and its previous state, so an object that leaves a watcher's
//! selection is DELETED for that watcher and one that enters it is ADDED (as the API server's
//! `cache_watcher.go` `convertToWatchEvent` does).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body::Frame;
use http_body_util::StreamBody;
use kube::core::{Selector, SelectorExt};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::{Instant, Interval, MissedTickBehavior, Sleep};

use crate::fake::FakeApi;
use crate::path::{ApiPath, ResourceType};
use crate::selector::{self, FieldSelector};
use crate::store::{ApiError, ObjectKey, Store, labels_of, stamped};

/// How many changes a fake keeps for watches unless told otherwise
/// ([`FakeApi::set_watch_history`]). The API server's watch cache holds at least 100 and grows
/// with load; a generous fixed size keeps tests of ordinary length clear of expiry.
pub const DEFAULT_WATCH_HISTORY: usize = 1000;

/// How long a watch runs without `timeoutSeconds`: the API server picks between its minimum
/// request timeout (1800 s by default) and twice that; the fake takes the minimum, for
/// determinism.
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// How often a watch that allows bookmarks gets one unprompted, unless told otherwise
/// ([`FakeApi::set_bookmark_interval`]); the API server sends them about once a minute.
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// The annotation on the bookmark that ends the initial events of a `sendInitialEvents` watch.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What a change did to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One change to one object, as of the revision it created.
#[derive(Clone, Debug)]
struct Change {
    revision: u64,
    kind: ChangeKind,
    key: ObjectKey,
    /// The new state; for a deletion, the last state stamped with the deletion's revision.
    object: Value,
    /// The state before the change, for modifications and deletions.
    previous: Option<Value>,
}

/// The retained changes, oldest first, and the signal that wakes open watches.
pub(crate) struct History {
    changes: VecDeque<Change>,
    limit: usize,
    /// The latest revision no longer retained (0 while nothing was dropped): a watch can resume
    /// after any revision at or past it.
    compacted: u64,
    /// Counts [`FakeApi::send_bookmarks`] calls, so each watch sends one bookmark per call.
    bookmark_requests: u64,
    /// Notified on every change and bookmark request; its receivers are the open watches.
    signal: watch::Sender<()>,
}

impl Default for History {
    fn default() -> Self {
        Self {
            changes: VecDeque::new(),
            limit: DEFAULT_WATCH_HISTORY,
            compacted: 0,
            bookmark_requests: 0,
            signal: watch::Sender::new(()),
        }
    }
}

impl History {
    /// Records the change that created `revision` and wakes the watches.
    pub fn record(
        &mut self,
        revision: u64,
        kind: ChangeKind,
        key: ObjectKey,
        object: Value,
        previous: Option<Value>,
    ) {
        self.changes.push_back(Change {
            revision,
            kind,
            key,
            object,
            previous,
        });
        self.trim();
        self.signal.send_replace(());
    }

    /// Keeps at most `limit` changes from now on, dropping the oldest beyond it at once.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.trim();
    }

    fn trim(&mut self) {
        while self.changes.len() > self.limit {
            if let Some(dropped) = self.changes.pop_front() {
                self.compacted = dropped.revision;
            }
        }
    }

    /// The retained changes after revision `after`, or `Err(compacted)` when some of them are
    /// gone.
    fn since(&self, after: u64) -> Result<impl Iterator<Item = &Change>, u64> {
        if after < self.compacted {
            return Err(self.compacted);
        }
        Ok(self.changes.iter().skip_while(move |c| c.revision <= after))
    }

    /// Asks every open watch that allows bookmarks for one.
    pub fn request_bookmarks(&mut self) {
        self.bookmark_requests += 1;
        self.signal.send_replace(());
    }

    /// A receiver for a new watch; it counts as open until dropped.
    pub fn subscribe(&self) -> watch::Receiver<()> {
        self.signal.subscribe()
    }

    /// How many watch streams are open.
    pub fn open_watches(&self) -> usize {
        self.signal.receiver_count()
    }
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// Synthetic ADDED events for the current state, then changes (resourceVersion `""`/`"0"`,
    /// or `sendInitialEvents=true`).
    Current,
    /// The retained changes after this revision, then new ones.
    After(u64),
}

/// A parsed watch request.
pub(crate) struct WatchRequest {
    resource: ResourceType,
    namespace: Option<String>,
    labels: Selector,
    fields: FieldSelector,
    start: Start,
    bookmarks: bool,
    initial_events: bool,
    timeout: Option<Duration>,
    metadata_only: bool,
}

/// Whether a boolean query value is true, as Go's `strconv.ParseBool` reads it.
pub(crate) fn is_true(value: Option<&str>) -> bool {
    matches!(value, Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
}

impl WatchRequest {
    /// Reads a watch of the collection at `path` (of the one object `name`, if given) from its
    /// query parameters; `metadata_only` when the client asked for `PartialObjectMetadata`.
    pub fn parse<'q>(
        path: &ApiPath,
        name: Option<&str>,
        param: impl Fn(&str) -> Option<&'q str>,
        metadata_only: bool,
    ) -> Result<Self, ApiError> {
        let bad = |message: String| ApiError::new(400, message);
        let labels = selector::parse(param("labelSelector").unwrap_or_default()).map_err(bad)?;
        let mut fields =
            selector::parse_fields(param("fieldSelector").unwrap_or_default()).map_err(bad)?;
        if let Some(name) = name {
            // A watch of one object by path is a collection watch selecting it by name.
            fields = fields.and(FieldSelector::name(name));
        }
        let bookmarks = is_true(param("allowWatchBookmarks"));
        let initial_events = is_true(param("sendInitialEvents"));
        let version_match = param("resourceVersionMatch").filter(|v| !v.is_empty());
        match (initial_events, version_match) {
            (true, Some("NotOlderThan")) | (false, None) => {}
            (true, _) => {
                return Err(bad(
                    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting \
                     resourceVersionMatch to NotOlderThan"
                        .into(),
                ));
            }
            (false, Some(_)) => {
                return Err(bad(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for \
                     watch unless sendInitialEvents is provided"
                        .into(),
                ));
            }
        }
        if initial_events && !bookmarks {
            return Err(bad(
                "allowWatchBookmarks: Forbidden: allowWatchBookmarks must be true when \
                 sendInitialEvents is set"
                    .into(),
            ));
        }
        let start = match param("resourceVersion").unwrap_or_default() {
            _ if initial_events => Start::Current,
            "" | "0" => Start::Current,
            rv => Start::After(
                rv.parse()
                    .map_err(|_| bad(format!("invalid resource version: {rv:?}")))?,
            ),
        };
        let timeout = match param("timeoutSeconds") {
            None | Some("" | "0") => None,
            Some(s) => {
                Some(Duration::from_secs(s.parse().map_err(|_| {
                    bad(format!("timeoutSeconds: invalid value {s:?}"))
                })?))
            }
        };
        Ok(Self {
            resource: path.resource.clone(),
            namespace: path.namespace.clone(),
            labels,
            fields,
            start,
            bookmarks,
            initial_events,
            timeout,
            metadata_only,
        })
    }

    /// How long the stream runs (`timeoutSeconds`, or the server default).
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_WATCH_TIMEOUT)
    }

    fn passes(&self, obj: &Value) -> bool {
        self.labels.matches(&labels_of(obj)) && self.fields.matches(obj)
    }

    fn watches(&self, key: &ObjectKey) -> bool {
        key.resource == self.resource
            && (self.namespace.is_none() || key.namespace == self.namespace)
    }
}

/// The `PartialObjectMetadata` view of an object, which clients get when they ask for it
/// (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, as kube's
/// `metadata_watcher` and `Controller::owns` do).
pub(crate) fn partial_metadata(obj: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// One open watch, without the I/O: its position in the history and the lines it has yet to
/// send. Every method runs under the fake's lock, so the watch sees the store consistently.
pub(crate) struct Watcher {
    request: WatchRequest,
    /// Every change up to this revision has been considered.
    cursor: u64,
    seen_bookmark_requests: u64,
    pending: VecDeque<Bytes>,
    finished: bool,
}

impl Watcher {
    /// Starts a watch on `store`, queueing its first events (or its 410 error).
    pub fn start(request: WatchRequest, store: &Store) -> Self {
        let mut watcher = Self {
            cursor: 0,
            seen_bookmark_requests: store.history.bookmark_requests,
            pending: VecDeque::new(),
            finished: false,
            request,
        };
        match watcher.request.start {
            Start::Current => {
                let current: Vec<Value> = store
                    .objects_of(
                        &watcher.request.resource,
                        watcher.request.namespace.as_deref(),
                    )
                    .into_iter()
                    .filter(|obj| watcher.request.passes(obj))
                    .collect();
                for obj in &current {
                    watcher.push_event("ADDED", obj);
                }
                watcher.cursor = store.revision();
                if watcher.request.initial_events {
                    watcher.push_bookmark(store, true);
                }
            }
            Start::After(rv) => {
                watcher.cursor = rv;
                watcher.catch_up(store, false);
            }
        }
        watcher
    }

    /// Queues the events of every change since the last call, then a bookmark if one is due
    /// (`periodic`) or was requested. Ends the watch with a 410 when the history moved past it.
    fn catch_up(&mut self, store: &Store, periodic: bool) {
        if self.finished {
            return;
        }
        match store.history.since(self.cursor) {
            Err(compacted) => {
                let expired = ApiError::new(
                    410,
                    format!("too old resource version: {} ({compacted})", self.cursor),
                );
                self.push_line(&json!({ "type": "ERROR", "object": expired.to_status() }));
                self.finished = true;
                return;
            }
            Ok(changes) => {
                let events: Vec<(&'static str, Value)> =
                    changes.filter_map(|change| self.view(change)).collect();
                for (kind, obj) in &events {
                    self.push_event(kind, obj);
                }
            }
        }
        // A watch from a future revision waits for it.
        self.cursor = self.cursor.max(store.revision());
        let requested = store.history.bookmark_requests != self.seen_bookmark_requests;
        self.seen_bookmark_requests = store.history.bookmark_requests;
        if self.request.bookmarks && (periodic || requested) {
            self.push_bookmark(store, false);
        }
    }

    /// What this watcher sees of `change`, if anything.
    fn view(&self, change: &Change) -> Option<(&'static str, Value)> {
        if !self.request.watches(&change.key) {
            return None;
        }
        let now_passes = change.kind != ChangeKind::Deleted && self.request.passes(&change.object);
        let before_passed = change
            .previous
            .as_ref()
            .is_some_and(|obj| self.request.passes(obj));
        match (now_passes, before_passed) {
            (true, false) => Some(("ADDED", change.object.clone())),
            (true, true) => Some(("MODIFIED", change.object.clone())),
            (false, true) if change.kind == ChangeKind::Deleted => {
                Some(("DELETED", change.object.clone()))
            }
            // Left the selection: gone for this watcher, as its last state it could see.
            (false, true) => change
                .previous
                .as_ref()
                .map(|obj| ("DELETED", stamped(obj, change.revision))),
            (false, false) => None,
        }
    }

    fn push_event(&mut self, kind: &str, obj: &Value) {
        let object = if self.request.metadata_only {
            partial_metadata(obj)
        } else {
            obj.clone()
        };
        self.push_line(&json!({ "type": kind, "object": object }));
    }

    fn push_bookmark(&mut self, store: &Store, initial_events_end: bool) {
        let (api_version, kind) = if self.request.metadata_only {
            ("meta.k8s.io/v1".to_owned(), "PartialObjectMetadata")
        } else {
            (
                self.request.resource.api_version(),
                store.kind_of(&self.request.resource).unwrap_or_default(),
            )
        };
        let mut metadata = json!({ "resourceVersion": self.cursor.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ INITIAL_EVENTS_END: "true" });
        }
        let object = json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata });
        self.push_line(&json!({ "type": "BOOKMARK", "object": object }));
    }

    fn push_line(&mut self, event: &Value) {
        let mut line = event.to_string().into_bytes();
        line.push(b'\n');
        self.pending.push_back(Bytes::from(line));
    }
}

/// Why a waiting watch woke up.
enum Wake {
    Changed,
    BookmarkDue,
    TimedOut,
    Closed,
}

/// The server side of one watch: a [`Watcher`] fed from the fake's history, ended by
/// `timeoutSeconds`. It lives inside the response body, so the client dropping the body drops
/// it (and its history subscription): nothing runs on after the client has gone.
pub(crate) struct WatchStream {
    api: FakeApi,
    watcher: Watcher,
    signal: watch::Receiver<()>,
    bookmarks: Option<Interval>,
    deadline: Pin<Box<Sleep>>,
}

/// The body of a watch response: newline-delimited JSON events.
pub(crate) type WatchBody =
    StreamBody<futures::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

impl WatchStream {
    /// Serves `watcher` (started under the lock that also produced `signal`). Needs a Tokio
    /// runtime with time enabled; paused test time applies to the timeout and bookmarks.
    pub fn new(
        api: FakeApi,
        watcher: Watcher,
        signal: watch::Receiver<()>,
        bookmark_interval: Option<Duration>,
    ) -> Self {
        let now = Instant::now();
        let bookmarks = bookmark_interval
            .filter(|period| watcher.request.bookmarks && !period.is_zero())
            .map(|period| {
                let mut interval = tokio::time::interval_at(now + period, period);
                interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
                interval
            });
        let deadline = Box::pin(tokio::time::sleep_until(now + watcher.request.timeout()));
        Self {
            api,
            watcher,
            signal,
            bookmarks,
            deadline,
        }
    }

    /// The next line to send, or `None` when the watch is over.
    async fn next_line(&mut self) -> Option<Bytes> {
        loop {
            if let Some(line) = self.watcher.pending.pop_front() {
                return Some(line);
            }
            if self.watcher.finished {
                return None;
            }
            let bookmark_due = async {
                match self.bookmarks.as_mut() {
                    Some(interval) => {
                        interval.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            // Changes first: a change and the deadline at the same instant still get through.
            let wake = tokio::select! {
                biased;
                changed = self.signal.changed() => match changed {
                    Ok(()) => Wake::Changed,
                    Err(_) => Wake::Closed,
                },
                () = bookmark_due => Wake::BookmarkDue,
                () = self.deadline.as_mut() => Wake::TimedOut,
            };
            match wake {
                Wake::Changed | Wake::BookmarkDue => {
                    let state = self.api.state();
                    self.watcher
                        .catch_up(&state.store, matches!(wake, Wake::BookmarkDue));
                }
                Wake::TimedOut | Wake::Closed => self.watcher.finished = true,
            }
        }
    }

    /// The response body streaming this watch.
    pub fn into_body(self) -> WatchBody {
        let lines = futures::stream::unfold(self, |mut stream| async move {
            let line = stream.next_line().await?;
            Some((Ok(Frame::data(line)), stream))
        });
        // Fused: a reader may poll again after the end, which a bare `unfold` forbids.
        StreamBody::new(lines.fuse().boxed())
    }
}
