//! [`Projected`]: a cache that keeps of each watched object only what the rules read (its
//! projection, a value of the controller's own type), and says which events changed it.
//!
//! A [`crate::watch::cache::Cache`] holds each object as kube's reflector store does: keyed by
//! an `ObjectRef` (the name, namespace, resourceVersion and uid again, about 250 bytes), the
//! object's whole `ObjectMeta` behind an `Arc` (424 bytes inline for a metadata-only Node), and
//! a `BTreeMap` of 544 bytes or more for its labels and another for its annotations: about
//! 2 KB a Node, held for a scaledown-window pass that reads its name, labels, resourceVersion
//! and four annotations. A pass then copied all of it out again into the views it decides on.
//! A projected cache holds each object's view once, keyed by its name, and a pass shares the
//! views (`Arc`). Because the cache holds the view an event replaces, it also tells whether the
//! event changed what the rules read, where a predicate filter kept a second table of every
//! object's hash for that (for an hour after the object was deleted).
//!
//! Like a reflector's store, a relist replaces the objects once it is complete, and a read
//! before the first list is complete is [`Cold`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::watch::cache::Cold;

/// One scope's views, and whether its watch has listed in full.
struct Scope<V> {
    views: RwLock<HashMap<Box<str>, Arc<V>>>,
    warm: AtomicBool,
}

/// The views of the objects of one kind across a controller's scopes, as its watches last saw
/// them. Clones share them.
pub struct Projected<V> {
    scopes: Vec<Arc<Scope<V>>>,
    kind: String,
    /// Views its reads have looked at ([`Projected::visited`]); clones share it.
    visited: Arc<AtomicUsize>,
}

impl<V> Clone for Projected<V> {
    fn clone(&self) -> Self {
        Self {
            scopes: self.scopes.clone(),
            kind: self.kind.clone(),
            visited: self.visited.clone(),
        }
    }
}

impl<V> Default for Projected<V> {
    fn default() -> Self {
        Self {
            scopes: Vec::new(),
            kind: String::new(),
            visited: Arc::default(),
        }
    }
}

/// What an event of a [`ProjectedFeed`]'s watch changed.
#[derive(Debug)]
pub enum Seen<K, V> {
    /// An object whose view changed: a new object, one changed in what its view holds, or one
    /// deleted; with its view before (none for a new object) and after (none once deleted), so
    /// that who the change concerns can be told from either.
    Changed {
        /// The object as the event brought it.
        object: K,
        /// Its view before the event.
        before: Option<Arc<V>>,
        /// Its view after the event.
        after: Option<Arc<V>>,
    },
    /// The watch listed every object (the first time, or again after it lost its place): any
    /// view may have changed, deleted objects included; `gone` holds the keys of the objects
    /// held before the list that it did not show (a list reports no deletions).
    Listed {
        /// The keys (`namespace/name`) of the objects the list found gone.
        gone: Vec<Box<str>>,
    },
}

/// An object's key: `namespace/name`, or its name for a cluster-scoped kind.
fn key<K: Resource>(object: &K) -> Box<str> {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match &meta.namespace {
        Some(namespace) => format!("{namespace}/{name}").into_boxed_str(),
        None => name.into(),
    }
}

impl<V> Projected<V> {
    /// Adds one scope of objects of kind `K`, each kept as `project` makes its view: the
    /// returned [`ProjectedFeed`] fills it (a watch, or a test). Add every scope before the
    /// cache is cloned into a reconcile's context.
    pub fn scope<K>(&mut self, project: fn(&K) -> V) -> ProjectedFeed<K, V>
    where
        K: Resource<DynamicType = ()>,
    {
        let scope = Arc::new(Scope {
            views: RwLock::default(),
            warm: AtomicBool::new(false),
        });
        self.kind = K::kind(&()).into_owned();
        self.scopes.push(scope.clone());
        ProjectedFeed {
            scope,
            project,
            listing: None,
        }
    }

    /// Every view the cache holds, in no particular order.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn all(&self) -> Result<Vec<Arc<V>>, Cold> {
        if !self.scopes.iter().all(|s| s.warm.load(Ordering::Acquire)) {
            return Err(Cold {
                kind: self.kind.clone(),
            });
        }
        let mut all = Vec::new();
        for scope in &self.scopes {
            let views = scope.views.read().unwrap_or_else(PoisonError::into_inner);
            all.extend(views.values().cloned());
        }
        self.visited.fetch_add(all.len(), Ordering::Relaxed);
        Ok(all)
    }

    /// The view of the object `key` (`namespace/name`, or its name for a cluster-scoped kind).
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        self.scopes.iter().find_map(|scope| {
            let views = scope.views.read().unwrap_or_else(PoisonError::into_inner);
            views.get(key).cloned()
        })
    }

    /// The keys of every object the cache holds (none of a scope not listed yet).
    pub fn keys(&self) -> Vec<Box<str>> {
        let mut keys = Vec::new();
        for scope in &self.scopes {
            let views = scope.views.read().unwrap_or_else(PoisonError::into_inner);
            keys.extend(views.keys().cloned());
        }
        keys
    }

    /// How many views this cache's reads (and its clones') have looked at so far.
    pub fn visited(&self) -> usize {
        self.visited.load(Ordering::Relaxed)
    }
}

/// What fills one scope of a [`Projected`] cache with views of objects of kind `K`.
pub struct ProjectedFeed<K, V> {
    scope: Arc<Scope<V>>,
    project: fn(&K) -> V,
    /// A list in progress: replaces the views once it is complete.
    listing: Option<HashMap<Box<str>, Arc<V>>>,
}

impl<K, V> ProjectedFeed<K, V>
where
    K: Resource,
{
    /// Takes in one event of the watch: what it changed, if it changed a view (by `same`,
    /// which tells whether two views of one object hold the same for the rules).
    pub fn take_in(&mut self, event: Event<K>, same: fn(&V, &V) -> bool) -> Option<Seen<K, V>> {
        match event {
            Event::Apply(object) => {
                let view = Arc::new((self.project)(&object));
                let key = key(&object);
                let mut views = self.views();
                let before = views.insert(key, view.clone());
                drop(views);
                if before.as_ref().is_some_and(|before| same(before, &view)) {
                    return None;
                }
                Some(Seen::Changed {
                    object,
                    before,
                    after: Some(view),
                })
            }
            Event::Delete(object) => {
                let key = key(&object);
                let gone = self.views().remove(&key);
                gone.map(|before| Seen::Changed {
                    object,
                    before: Some(before),
                    after: None,
                })
            }
            Event::Init => {
                self.listing = Some(HashMap::new());
                None
            }
            Event::InitApply(object) => {
                let view = Arc::new((self.project)(&object));
                let key = key(&object);
                self.listing.get_or_insert_default().insert(key, view);
                None
            }
            Event::InitDone => {
                let mut listed = self.listing.take().unwrap_or_default();
                listed.shrink_to_fit();
                let before = std::mem::replace(&mut *self.views(), listed);
                let views = self
                    .scope
                    .views
                    .read()
                    .unwrap_or_else(PoisonError::into_inner);
                let gone = before
                    .into_keys()
                    .filter(|key| !views.contains_key(key))
                    .collect();
                drop(views);
                self.scope.warm.store(true, Ordering::Release);
                Some(Seen::Listed { gone })
            }
        }
    }

    /// Replaces what this scope holds with the views of `objects` at once, as a list does, and
    /// marks it warm: for tests and anything else that holds the objects already.
    pub fn fill(&mut self, objects: impl IntoIterator<Item = K>) {
        self.take_in(Event::Init, |_, _| true);
        for object in objects {
            self.take_in(Event::InitApply(object), |_, _| true);
        }
        self.take_in(Event::InitDone, |_, _| true);
    }

    fn views(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Box<str>, Arc<V>>> {
        self.scope
            .views
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K, V> ProjectedFeed<K, V>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    V: Send + Sync + 'static,
{
    /// The watch of `api` that fills this scope: what its events changed ([`Self::take_in`]).
    /// The cache is filled only while the stream is polled; failures wait as
    /// [`crate::watch::contact::resilient`] says, and pass through for logging.
    pub fn events(
        mut self,
        api: Api<K>,
        config: watcher::Config,
        contact: &crate::ApiContact,
        same: fn(&V, &V) -> bool,
    ) -> impl Stream<Item = Result<Seen<K, V>, watcher::Error>> + Send + 'static {
        let kind = K::kind(&()).into_owned();
        crate::watch::contact::resilient(
            move || watcher::watcher(api.clone(), config.clone()),
            contact,
            &kind,
        )
        .filter_map(move |event| {
            let seen = match event {
                Ok(event) => self.take_in(event, same).map(Ok),
                Err(error) => Some(Err(error)),
            };
            std::future::ready(seen)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// A view: the `v` of a ConfigMap's data and its resourceVersion, which no rule reads.
    #[derive(Debug, PartialEq)]
    struct View {
        v: Option<String>,
        version: Option<String>,
    }

    fn view(object: &ConfigMap) -> View {
        View {
            v: object.data.as_ref().and_then(|d| d.get("v").cloned()),
            version: object.metadata.resource_version.clone(),
        }
    }

    fn same(a: &View, b: &View) -> bool {
        a.v == b.v
    }

    fn config_map(name: &str, v: &str, version: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": version},
            "data": {"v": v},
        }))
        .unwrap()
    }

    fn values(cache: &Projected<View>) -> Vec<(String, String)> {
        let mut all: Vec<_> = cache
            .all()
            .unwrap()
            .iter()
            .map(|v| (v.v.clone().unwrap(), v.version.clone().unwrap()))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn cold_until_every_scope_listed_then_the_views_of_all() {
        let mut cache = Projected::default();
        let mut a = cache.scope(view);
        let mut b = cache.scope(view);
        a.fill([config_map("a", "1", "10")]);
        let cold = cache.all().unwrap_err();
        assert_eq!(cold.kind, "ConfigMap");
        b.fill([config_map("b", "2", "11")]);
        assert_eq!(
            values(&cache),
            [("1".into(), "10".into()), ("2".into(), "11".into())]
        );
        assert_eq!(cache.visited(), 2);
    }

    #[test]
    fn an_event_is_a_change_only_when_the_view_changed_for_the_rules() {
        let mut cache = Projected::default();
        let mut feed = cache.scope(view);
        let listed = [Event::Init, Event::InitApply(config_map("a", "1", "10"))]
            .into_iter()
            .map(|e| feed.take_in(e, same))
            .collect::<Vec<_>>();
        assert!(
            listed.iter().all(Option::is_none),
            "a list wakes once, at its end"
        );
        assert!(matches!(
            feed.take_in(Event::InitDone, same),
            Some(Seen::Listed { gone }) if gone.is_empty()
        ));

        // Another version, the same for the rules: kept, no change.
        let seen = feed.take_in(Event::Apply(config_map("a", "1", "12")), same);
        assert!(seen.is_none(), "{seen:?}");
        assert_eq!(values(&cache), [("1".into(), "12".into())]);

        // What the change concerns can be told from the view before and after.
        let v = |view: &Option<Arc<View>>| view.as_ref().map(|view| view.v.clone().unwrap());
        let seen = feed.take_in(Event::Apply(config_map("a", "2", "13")), same);
        let Some(Seen::Changed {
            object,
            before,
            after,
        }) = seen
        else {
            panic!("{seen:?}");
        };
        assert_eq!(object.metadata.name.as_deref(), Some("a"));
        assert_eq!(
            (v(&before), v(&after)),
            (Some("1".into()), Some("2".into()))
        );
        let seen = feed.take_in(Event::Apply(config_map("b", "1", "14")), same);
        assert!(
            matches!(
                &seen,
                Some(Seen::Changed {
                    before: None,
                    after: Some(_),
                    ..
                })
            ),
            "a new object: {seen:?}"
        );

        let seen = feed.take_in(Event::Delete(config_map("a", "2", "15")), same);
        assert!(
            matches!(&seen, Some(Seen::Changed { before: Some(b), after: None, .. }) if b.v.as_deref() == Some("2")),
            "a deleted object: {seen:?}"
        );
        assert_eq!(values(&cache), [("1".into(), "14".into())]);
        let seen = feed.take_in(Event::Delete(config_map("a", "2", "15")), same);
        assert!(seen.is_none(), "nothing held: nothing changed");
    }

    #[test]
    fn a_relist_replaces_the_views_once_complete() {
        let mut cache = Projected::default();
        let mut feed = cache.scope(view);
        feed.fill([config_map("a", "1", "10"), config_map("b", "1", "11")]);

        feed.take_in(Event::Init, same);
        feed.take_in(Event::InitApply(config_map("b", "2", "20")), same);
        assert_eq!(
            values(&cache).len(),
            2,
            "the old views until the list is complete"
        );
        assert!(matches!(
            feed.take_in(Event::InitDone, same),
            Some(Seen::Listed { gone }) if gone == [Box::from("ns/a")]
        ));
        assert_eq!(values(&cache), [("2".into(), "20".into())], "a is gone");
        assert!(cache.get("ns/a").is_none());
        assert_eq!(cache.get("ns/b").unwrap().v.as_deref(), Some("2"));
        assert_eq!(cache.keys(), [Box::from("ns/b")]);
    }
}
