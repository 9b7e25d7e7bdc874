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
//! The one loss: a watch that relists (its history expired) hands over only each object's latest
//! version, so a change someone made just before this process's write, folded into the relist
//! under this process's version, is passed over with it. The hourly safety-net requeue (or the
//! next change) still reaches it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use ebb_core::plan::Target;
use futures::{Stream, StreamExt};
use kube::Resource;

/// How many versions of one object are remembered, awaiting their events (a pass writes an
/// object at most a few times; an event that never comes is forgotten after this many more).
const PER_OBJECT: usize = 8;

/// An object as a write's [`Target`] names it and as a watched object's metadata does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    group: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

#[derive(Debug, Default)]
struct Inner {
    /// `(group, kind)` of the kinds a watch passes over own writes of.
    kinds: HashSet<(String, String)>,
    /// The versions of each object this process's writes answered with, awaiting their events.
    versions: HashMap<Key, VecDeque<String>>,
}

/// The versions of this process's own writes, shared by the executor (which records them) and
/// the watches (which pass over their events). Cheap to clone: one shared table.
#[derive(Clone, Debug, Default)]
pub struct OwnWrites {
    inner: Arc<Mutex<Inner>>,
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
        self.lock()
            .kinds
            .insert((K::group(&dt).into_owned(), K::kind(&dt).into_owned()));
    }

    /// A write to `target` succeeded and left it at `version`.
    pub fn record(&self, target: &Target, version: &str) {
        let kind = (target.resource.group.clone(), target.resource.kind.clone());
        let mut inner = self.lock();
        if !inner.kinds.contains(&kind) {
            return;
        }
        let key = Key {
            group: kind.0,
            kind: kind.1,
            namespace: target.namespace.clone(),
            name: target.name.clone(),
        };
        let versions = inner.versions.entry(key).or_default();
        if versions.len() == PER_OBJECT {
            versions.pop_front();
        }
        versions.push_back(version.to_owned());
    }

    /// Whether `object` is as one of this process's writes left it (and then forgets that
    /// write: its event has come).
    pub fn is_own<K: Resource>(&self, object: &K) -> bool
    where
        K::DynamicType: Default,
    {
        let meta = object.meta();
        let Some(version) = meta.resource_version.as_deref() else {
            return false;
        };
        let dt = K::DynamicType::default();
        let key = Key {
            group: K::group(&dt).into_owned(),
            kind: K::kind(&dt).into_owned(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        };
        let mut inner = self.lock();
        let Some(versions) = inner.versions.get_mut(&key) else {
            return false;
        };
        let Some(at) = versions.iter().position(|v| v == version) else {
            return false;
        };
        // Events come in order: the versions before this one will not come any more.
        versions.drain(..=at);
        if versions.is_empty() {
            inner.versions.remove(&key);
        }
        true
    }

    /// `events` without the objects as this process's own writes left them ([`Self::is_own`]).
    /// Remembers writes to `K` from now on ([`Self::watch`]).
    pub fn skip<K, E, S>(&self, events: S) -> impl Stream<Item = Result<K, E>> + Send + use<K, E, S>
    where
        K: Resource + Send + 'static,
        K::DynamicType: Default,
        E: Send + 'static,
        S: Stream<Item = Result<K, E>> + Send,
    {
        self.watch::<K>();
        let own = self.clone();
        events.filter(move |event| {
            let skip = matches!(event, Ok(object) if own.is_own(object));
            if skip {
                tracing::trace!("passed over the event of an own write");
            }
            std::future::ready(!skip)
        })
    }

    /// How many objects have writes awaiting their events (for tests).
    pub fn pending(&self) -> usize {
        self.lock().versions.len()
    }
}

#[cfg(test)]
#[path = "own_writes_tests.rs"]
mod tests;
