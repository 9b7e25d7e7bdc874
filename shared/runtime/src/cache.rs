//! Caches of the kinds a reconcile reads besides its own object, so a reconcile reads memory
//! instead of the API server.
//!
//! A controller whose reconciles list related objects (every seat of a namespace, say) makes the
//! API server answer the same list once per reconcile, and holds each answer in memory while it
//! runs; with a thousand objects that was 35 reads per object to converge. A [`Cache`] is filled
//! by the watch the controller already runs to map those objects onto its own, so the reads cost
//! nothing. A cache answers only once every watch feeding it has listed in full: before that it
//! says [`Cold`], and the reconcile fails (and is retried with backoff) instead of deciding on
//! half a picture.
//!
//! One cache spans every scope (`--namespace`) of a controller: each scope's watch feeds its own
//! store through a [`Feed`], and the cache reads them all.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{Stream, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// A cache read before any of its watches listed in full (or while its kind is not served).
#[derive(Debug, thiserror::Error)]
#[error("the cache of {kind} has not listed yet (is its CRD installed and readable?)")]
pub struct Cold {
    /// The kind, e.g. `Workshop`.
    pub kind: String,
}

/// One scope's store and whether its watch has listed in full.
#[derive(Clone)]
struct Scope<K: Resource + Clone + 'static>
where
    K::DynamicType: Hash + Eq,
{
    store: Store<K>,
    warm: Arc<AtomicBool>,
}

/// The objects of one kind across a controller's scopes, as its watches last saw them.
#[derive(Clone)]
pub struct Cache<K: Resource + Clone + 'static>
where
    K::DynamicType: Hash + Eq,
{
    scopes: Vec<Scope<K>>,
}

impl<K> Default for Cache<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Hash + Eq,
{
    fn default() -> Self {
        Self { scopes: Vec::new() }
    }
}

impl<K> Cache<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    /// Adds one scope: the returned [`Feed`] fills it (a watch, or a test). Add every scope
    /// before the cache is cloned into a reconcile's context.
    pub fn scope(&mut self) -> Feed<K> {
        let (store, writer) = reflector::store();
        let warm = Arc::new(AtomicBool::new(false));
        self.scopes.push(Scope {
            store,
            warm: warm.clone(),
        });
        Feed { writer, warm }
    }

    fn warm(&self) -> Result<&[Scope<K>], Cold> {
        match self.scopes.iter().all(|s| s.warm.load(Ordering::Acquire)) {
            true => Ok(&self.scopes),
            false => Err(Cold {
                kind: K::kind(&K::DynamicType::default()).into_owned(),
            }),
        }
    }

    /// The object `namespace/name`, if the cache holds it.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Option<Arc<K>>, Cold> {
        let key = ObjectRef::new(name).within(namespace);
        Ok(self.warm()?.iter().find_map(|s| s.store.get(&key)))
    }

    /// Every object the cache holds (of a cluster-scoped kind, say), in no particular order.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn all(&self) -> Result<Vec<Arc<K>>, Cold> {
        Ok(self.warm()?.iter().flat_map(|s| s.store.state()).collect())
    }

    /// Every object of `namespace` the cache holds, in no particular order.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn in_namespace(&self, namespace: &str) -> Result<Vec<Arc<K>>, Cold> {
        Ok(self
            .warm()?
            .iter()
            .flat_map(|s| {
                s.store
                    .state_filter(|o| o.namespace().as_deref() == Some(namespace))
            })
            .collect())
    }
}

/// What fills one scope of a [`Cache`].
pub struct Feed<K: Resource + Clone + 'static>
where
    K::DynamicType: Hash + Eq + Clone,
{
    writer: reflector::store::Writer<K>,
    warm: Arc<AtomicBool>,
}

impl<K> Feed<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    /// The watch of `api` that fills this scope, each object trimmed by `trim` (after
    /// [`crate::app::slim`]) before it is stored: the objects it saw change, deleted ones too,
    /// for `Controller::watches_stream`. The cache is filled only while the stream is polled;
    /// failures wait as [`crate::contact::resilient`] says.
    pub fn watch(
        self,
        api: Api<K>,
        config: watcher::Config,
        contact: &crate::ApiContact,
        trim: impl FnMut(&mut K) + Send + 'static,
    ) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.events(api, config, contact, trim).touched_objects()
    }

    /// [`Self::watch`] as the watch's events, for a filter that needs them (such as
    /// [`crate::triggers::spec_changes_of`]).
    pub fn events(
        self,
        api: Api<K>,
        config: watcher::Config,
        contact: &crate::ApiContact,
        mut trim: impl FnMut(&mut K) + Send + 'static,
    ) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static {
        let warm = self.warm;
        let kind = K::kind(&K::DynamicType::default()).into_owned();
        // Retried here, so the stream can go anywhere (a trigger, a reconcile-all).
        let trimmed = crate::contact::resilient(
            move || watcher::watcher(api.clone(), config.clone()),
            contact,
            &kind,
        )
        .modify(move |object| {
            crate::app::slim(object);
            trim(object);
        });
        reflector(self.writer, trimmed).inspect(move |event| {
            if matches!(event, Ok(Event::InitDone)) {
                warm.store(true, Ordering::Release);
            }
        })
    }

    /// Replaces what this scope holds with `objects` at once, as a relist does, and marks it
    /// warm: for tests and anything else that holds the objects already.
    pub fn fill(&mut self, objects: impl IntoIterator<Item = K>) {
        self.writer.apply_watcher_event(&Event::Init);
        for object in objects {
            self.writer.apply_watcher_event(&Event::InitApply(object));
        }
        self.writer.apply_watcher_event(&Event::InitDone);
        self.warm.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn map(namespace: &str, name: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.namespace = Some(namespace.into());
        object.metadata.name = Some(name.into());
        object
    }

    /// Deciding on a cache that has not listed would see no seats, no Workshop: it says so.
    #[test]
    fn a_cache_answers_only_once_every_scope_listed() {
        let mut cache = Cache::<ConfigMap>::default();
        let mut a = cache.scope();
        let mut b = cache.scope();
        let error = cache.get("a", "one").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the cache of ConfigMap has not listed yet (is its CRD installed and readable?)"
        );
        a.fill([map("a", "one")]);
        assert!(cache.in_namespace("a").is_err());
        b.fill([map("b", "two"), map("b", "three")]);
        assert!(cache.get("a", "one").unwrap().is_some());
        assert!(cache.get("b", "one").unwrap().is_none());
        assert_eq!(cache.in_namespace("b").unwrap().len(), 2);
    }

    /// A refill is a relist: what is gone from it is gone from the cache.
    #[test]
    fn a_refill_replaces_what_the_scope_held() {
        let mut cache = Cache::<ConfigMap>::default();
        let mut feed = cache.scope();
        feed.fill([map("a", "one"), map("a", "two")]);
        feed.fill([map("a", "two")]);
        let names: Vec<String> = cache
            .in_namespace("a")
            .unwrap()
            .iter()
            .map(|o| o.name_any())
            .collect();
        assert_eq!(names, ["two"]);
    }
}
