//! The changes this process made itself, so that a watch passes over the events they cause.
//!
//! A controller's own write comes back to it as a watch event: its status write as an event of
//! its object, its HPA write as an event of the HPA. Each would run a pass that reads again and
//! finds nothing to do (service-scaler read 4 times per transition, 2 of them for its own
//! writes). [`OwnWrites`] remembers the `resourceVersion` each write of the executor answered
//! with, for the kinds a watch asked it to ([`OwnWrites::watch`]), and [`OwnWrites::skip`] drops
//! the event that carries exactly that version. Anyone else's change has a version of its own and
//! passes, as does every event of an object this process never wrote.
//!
//! The event of a write can reach the watch before the write's own answer reaches the writer.
//! So a write is announced before it is sent ([`OwnWrites::begin`]), and an event of an object
//! with a write in flight waits (at most [`IN_FLIGHT_WAIT`]) until that write has answered
//! before it is judged.
//!
//! The one loss: a watch that relists (its history expired) hands over only each object's latest
//! version, so a change someone made just before this process's write, folded into the relist
//! under this process's version, is passed over with it. The hourly safety-net requeue (or the
//! next change) still reaches it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ebb_core::plan::Target;
use futures::{Stream, StreamExt};
use kube::Resource;
use tokio::sync::Notify;

/// How many versions of one object are remembered, awaiting their events (a pass writes an
/// object at most a few times; an event that never comes is forgotten after this many more).
const PER_OBJECT: usize = 8;

/// How long a write's version is remembered: its event comes within milliseconds, or never (the
/// object was deleted, or a watch relisted past it, or the object lies in a namespace only some
/// of the kind's watches cover). Past it the version is forgotten: an event that still comes
/// runs one pass that finds nothing to do, and nothing outlives its object.
pub const REMEMBER: Duration = Duration::from_secs(60);

/// The longest an event of an object waits for the answer of a write to it in flight: past
/// it the event is passed on (and runs a pass), never held back for good.
pub const IN_FLIGHT_WAIT: Duration = Duration::from_secs(2);

/// An object as a write's [`Target`] names it and as a watched object's metadata does: its kind
/// by its place in [`Inner::kinds`] (the group and kind strings once per kind, not per write).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: usize,
    namespace: Option<Box<str>>,
    name: Box<str>,
}

/// One version a write answered with, awaiting its events.
#[derive(Debug)]
struct Version {
    version: Box<str>,
    /// How many watches have yet to see its event.
    watches: usize,
    /// When it was recorded: forgotten [`REMEMBER`] after.
    at: tokio::time::Instant,
}

#[derive(Debug, Default)]
struct Inner {
    /// `(group, kind)` of the kinds a watch passes over own writes of, and how many watches
    /// of each do: the event of one write is passed over by each of them. A [`Key`] names its
    /// kind by its place here.
    kinds: Vec<((String, String), usize)>,
    /// The versions of each object this process's writes answered with, awaiting their events,
    /// oldest first.
    versions: HashMap<Key, Vec<Version>>,
    /// How many writes to each object are sent and not yet answered.
    in_flight: HashMap<Key, usize>,
}

impl Inner {
    /// The place of kind `(group, kind)` in [`Inner::kinds`], if a watch asked for it.
    fn kind(&self, group: &str, kind: &str) -> Option<usize> {
        self.kinds
            .iter()
            .position(|((g, k), _)| g == group && k == kind)
    }

    fn key_of_target(&self, target: &Target) -> Option<Key> {
        Some(Key {
            kind: self.kind(&target.resource.group, &target.resource.kind)?,
            namespace: target.namespace.as_deref().map(Box::from),
            name: target.name.as_str().into(),
        })
    }

    fn key_of_object<K: Resource>(&self, object: &K) -> Option<Key>
    where
        K::DynamicType: Default,
    {
        let dt = K::DynamicType::default();
        let meta = object.meta();
        Some(Key {
            kind: self.kind(&K::group(&dt), &K::kind(&dt))?,
            namespace: meta.namespace.as_deref().map(Box::from),
            name: meta.name.as_deref().unwrap_or_default().into(),
        })
    }

    /// Forgets the versions recorded more than [`REMEMBER`] before `now` (a scan of the writes
    /// awaiting their events, not of the cluster), and gives back the room a burst of writes (a
    /// mass change, a churn) grew the tables to once they are mostly empty: a table keeps its
    /// largest size otherwise.
    fn expire(&mut self, now: tokio::time::Instant) {
        self.versions.retain(|_, versions| {
            versions.retain(|v| now.duration_since(v.at) < REMEMBER);
            !versions.is_empty()
        });
        if shrinkable(self.versions.len(), self.versions.capacity()) {
            self.versions.shrink_to(self.versions.len() * 2);
        }
        if shrinkable(self.in_flight.len(), self.in_flight.capacity()) {
            self.in_flight.shrink_to(self.in_flight.len() * 2);
        }
    }
}

/// Whether a table holding `len` entries in room for `capacity` is worth shrinking: it holds
/// under a quarter of its room, and the room is more than a handful.
pub(crate) fn shrinkable(len: usize, capacity: usize) -> bool {
    capacity > 64 && len < capacity / 4
}

/// The versions of this process's own writes, shared by the executor (which records them) and
/// the watches (which pass over their events). Cheap to clone: one shared table.
#[derive(Clone, Debug, Default)]
pub struct OwnWrites {
    inner: Arc<Mutex<Inner>>,
    /// Woken whenever a write in flight has answered.
    answered: Arc<Notify>,
}

/// A write in flight ([`OwnWrites::begin`]): dropped once it has answered (and its version is
/// recorded, when it succeeded).
#[must_use]
pub struct InFlight {
    own: OwnWrites,
    key: Option<Key>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else {
            return;
        };
        {
            let mut inner = self.own.lock();
            if let Some(count) = inner.in_flight.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    inner.in_flight.remove(&key);
                }
            }
        }
        self.own.answered.notify_waiters();
    }
}

impl OwnWrites {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers the writes to kind `K` from now on: a watch of `K` passes over their events
    /// with [`Self::skip`]. Writes to kinds no watch asked for are not remembered.
    pub fn watch<K: Resource>(&self)
    where
        K::DynamicType: Default,
    {
        let dt = K::DynamicType::default();
        let (group, kind) = (K::group(&dt), K::kind(&dt));
        let mut inner = self.lock();
        match inner.kind(&group, &kind) {
            Some(at) => inner.kinds[at].1 += 1,
            None => inner
                .kinds
                .push(((group.into_owned(), kind.into_owned()), 1)),
        }
    }

    /// A write to `target` is about to be sent: until the returned guard is dropped (after the
    /// answer, and [`Self::record`]), an event of `target` waits before it is judged.
    pub fn begin(&self, target: &Target) -> InFlight {
        let mut inner = self.lock();
        let Some(key) = inner.key_of_target(target) else {
            return InFlight {
                own: self.clone(),
                key: None,
            };
        };
        *inner.in_flight.entry(key.clone()).or_default() += 1;
        InFlight {
            own: self.clone(),
            key: Some(key),
        }
    }

    /// A write to `target` succeeded and left it at `version`.
    /// Versions older than [`REMEMBER`] are forgotten by [`Self::forget_old_until`]'s sweep.
    pub fn record(&self, target: &Target, version: &str) {
        let mut inner = self.lock();
        let Some(key) = inner.key_of_target(target) else {
            return;
        };
        let watches = inner.kinds[key.kind].1;
        // Most objects await one version: room for one, not a vector's first four.
        let versions = inner
            .versions
            .entry(key)
            .or_insert_with(|| Vec::with_capacity(1));
        if versions.len() == PER_OBJECT {
            versions.remove(0);
        }
        versions.push(Version {
            version: version.into(),
            watches,
            at: tokio::time::Instant::now(),
        });
    }

    /// Whether `object` is as one of this process's writes left it (and then forgets that
    /// write: its event has come).
    pub fn is_own<K: Resource>(&self, object: &K) -> bool
    where
        K::DynamicType: Default,
    {
        let Some(version) = object.meta().resource_version.as_deref() else {
            return false;
        };
        let Some(key) = self.lock().key_of_object(object) else {
            return false;
        };
        self.take(&key, version)
    }

    fn take(&self, key: &Key, version: &str) -> bool {
        let mut inner = self.lock();
        let Some(versions) = inner.versions.get_mut(key) else {
            return false;
        };
        let Some(at) = versions.iter().position(|v| &*v.version == version) else {
            return false;
        };
        // Another watch of the kind has yet to see it.
        if versions[at].watches > 1 {
            versions[at].watches -= 1;
            return true;
        }
        // Events come in order: the versions before this one will not come any more.
        versions.drain(..=at);
        if versions.is_empty() {
            inner.versions.remove(key);
        }
        true
    }

    /// Whether `object`'s event is of an own write, once every write to it in flight has
    /// answered (at most [`IN_FLIGHT_WAIT`]).
    async fn is_own_once_answered(&self, key: Key, version: Option<String>) -> bool {
        let Some(version) = version else {
            return false;
        };
        let deadline = tokio::time::Instant::now() + IN_FLIGHT_WAIT;
        loop {
            // Registered before the check, so an answer between the two is not missed.
            let answered = self.answered.notified();
            if self.take(&key, &version) {
                return true;
            }
            if !self.lock().in_flight.contains_key(&key) {
                return false;
            }
            if tokio::time::timeout_at(deadline, answered).await.is_err() {
                return self.take(&key, &version);
            }
        }
    }

    /// `events` without the objects as this process's own writes left them ([`Self::is_own`],
    /// waiting for a write in flight to answer first). Remembers writes to `K` from now on
    /// ([`Self::watch`]).
    pub fn skip<K, E, S>(&self, events: S) -> impl Stream<Item = Result<K, E>> + Send + use<K, E, S>
    where
        K: Resource + Send + 'static,
        K::DynamicType: Default,
        E: Send + 'static,
        S: Stream<Item = Result<K, E>> + Send,
    {
        self.skip_by(events, |event| event.as_ref().ok())
    }

    /// [`Self::skip`] for events that carry an object beside more: `object` finds it in an
    /// event (an event without one is kept).
    pub fn skip_by<T, K, S>(
        &self,
        events: S,
        object: fn(&T) -> Option<&K>,
    ) -> impl Stream<Item = T> + Send + use<T, K, S>
    where
        T: Send + 'static,
        K: Resource + 'static,
        K::DynamicType: Default,
        S: Stream<Item = T> + Send,
    {
        self.watch::<K>();
        let own = self.clone();
        events.filter(move |event| {
            let judged = object(event).and_then(|object| {
                own.lock()
                    .key_of_object(object)
                    .map(|key| (key, object.meta().resource_version.clone()))
            });
            let own = own.clone();
            async move {
                let Some((key, version)) = judged else {
                    return true;
                };
                let skip = own.is_own_once_answered(key, version).await;
                if skip {
                    tracing::trace!("passed over the event of an own write");
                }
                !skip
            }
        })
    }

    /// Forgets the versions older than [`REMEMBER`] every [`REMEMBER`] until `shutdown`: on a
    /// quiet cluster no write comes to do it, and the versions of a churn's deleted objects
    /// would stay until the next one.
    pub async fn forget_old_until(self, shutdown: crate::Shutdown) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(REMEMBER) => {}
            }
            self.lock().expire(tokio::time::Instant::now());
        }
    }

    /// How many objects have writes awaiting their events (for tests), once those older than
    /// [`REMEMBER`] are forgotten.
    pub fn pending(&self) -> usize {
        let mut inner = self.lock();
        inner.expire(tokio::time::Instant::now());
        inner.versions.len()
    }
}

#[cfg(test)]
#[path = "own_writes_tests.rs"]
mod tests;
