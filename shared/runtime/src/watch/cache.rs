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

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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
    index: Option<Arc<Index<K>>>,
    /// Objects its reads have looked at ([`Cache::visited`]); clones share it.
    visited: Arc<AtomicUsize>,
}

impl<K> Default for Cache<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Hash + Eq,
{
    fn default() -> Self {
        Self {
            scopes: Vec::new(),
            index: None,
            visited: Arc::default(),
        }
    }
}

/// The keys (`namespace/name`) of the objects a watch holds, and nothing else of them: what a rule
/// that asks only whether an object of a name exists needs (a ServiceScaler of an HPA's name takes
/// the HPA over from its FleetSchedule). An entry costs its key, where a cached object costs its
/// whole metadata. Clones share it.
#[derive(Clone, Default)]
pub struct Names {
    inner: Arc<Mutex<NamesInner>>,
}

#[derive(Default)]
struct NamesInner {
    /// The keys as of the last full list and the events since.
    current: HashSet<String>,
    /// A relist in progress: replaces `current` when it is complete.
    listing: Option<HashSet<String>>,
}

impl Names {
    fn key<K: Resource>(object: &K) -> String {
        format!(
            "{}/{}",
            object.meta().namespace.as_deref().unwrap_or_default(),
            object.name_any()
        )
    }

    /// Whether an object `namespace/name` exists, as the watch last saw.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.lock().current.contains(&format!("{namespace}/{name}"))
    }

    /// How many objects the watch holds.
    pub fn len(&self) -> usize {
        self.lock().current.len()
    }

    /// Whether the watch holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes in one of its watch's events; a relist replaces the keys once it is complete, as a
    /// reflector's store does.
    pub fn take_in<K: Resource>(&self, event: &Event<K>) {
        let mut inner = self.lock();
        match event {
            Event::Apply(object) => {
                inner.current.insert(Self::key(object));
            }
            Event::Delete(object) => {
                inner.current.remove(&Self::key(object));
            }
            Event::Init => inner.listing = Some(HashSet::new()),
            Event::InitApply(object) => {
                let key = Self::key(object);
                inner.listing.get_or_insert_default().insert(key);
            }
            Event::InitDone => {
                let mut listed = inner.listing.take().unwrap_or_default();
                listed.shrink_to_fit();
                inner.current = listed;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, NamesInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which objects of a controller's own watch each key names ([`crate::process::app::controller_with_lookup`]):
/// mapping a related object onto the objects of its key costs those objects, not a scan of the
/// controller's cache. Clones share it.
pub struct Lookup<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    index: Arc<Index<K>>,
}

impl<K: Resource + 'static> Clone for Lookup<K>
where
    K::DynamicType: Hash + Eq,
{
    fn clone(&self) -> Self {
        Self {
            index: self.index.clone(),
        }
    }
}

impl<K> Lookup<K>
where
    K: Resource + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    /// Empty; `keys` gives each object's keys.
    pub fn new(keys: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self {
        Self {
            index: Arc::new(Index::new(Box::new(keys))),
        }
    }

    /// The objects whose keys include `key`, as the watch last showed them.
    pub fn refs(&self, key: &str) -> Vec<ObjectRef<K>> {
        self.index
            .lock()
            .by_key
            .get(key)
            .map(|named| named.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Takes in one event of the watch.
    pub fn take_in(&self, event: &Event<K>) {
        self.index.take_in(0, event);
    }
}

/// The keys an object is looked up by ([`Cache::indexed`]): its workshop, say.
pub type Keys<K> = Box<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Which objects each key names, kept as the watches see them: a lookup costs the objects it
/// finds, not a scan of the cache.
struct Index<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    keys: Keys<K>,
    state: Mutex<IndexState<K>>,
}

struct IndexState<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    by_key: HashMap<String, HashSet<ObjectRef<K>>>,
    /// Each object's scope and keys.
    of: HashMap<ObjectRef<K>, (usize, Vec<String>)>,
    /// Per scope, the objects its relist has shown so far (while one runs).
    relisted: HashMap<usize, HashSet<ObjectRef<K>>>,
}

impl<K> Index<K>
where
    K: Resource + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    fn new(keys: Keys<K>) -> Self {
        Self {
            keys,
            state: Mutex::new(IndexState {
                by_key: HashMap::new(),
                of: HashMap::new(),
                relisted: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IndexState<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes in one event of scope `scope`'s watch.
    fn take_in(&self, scope: usize, event: &Event<K>) {
        let mut state = self.lock();
        match event {
            Event::Init => {
                state.relisted.insert(scope, HashSet::new());
            }
            Event::InitApply(object) => {
                let reference = ObjectRef::from_obj(object);
                if let Some(seen) = state.relisted.get_mut(&scope) {
                    seen.insert(reference.clone());
                }
                state.put(scope, reference, (self.keys)(object));
            }
            Event::Apply(object) => {
                state.put(scope, ObjectRef::from_obj(object), (self.keys)(object));
            }
            Event::Delete(object) => state.remove(&ObjectRef::from_obj(object)),
            Event::InitDone => {
                // What the relist did not show is gone (a relist reports no deletions).
                let Some(seen) = state.relisted.remove(&scope) else {
                    return;
                };
                let gone: Vec<ObjectRef<K>> = state
                    .of
                    .iter()
                    .filter(|(r, (s, _))| *s == scope && !seen.contains(*r))
                    .map(|(r, _)| r.clone())
                    .collect();
                for reference in gone {
                    state.remove(&reference);
                }
            }
        }
    }
}

impl<K> IndexState<K>
where
    K: Resource + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    fn put(&mut self, scope: usize, reference: ObjectRef<K>, keys: Vec<String>) {
        self.remove(&reference);
        for key in &keys {
            self.by_key
                .entry(key.clone())
                .or_default()
                .insert(reference.clone());
        }
        self.of.insert(reference, (scope, keys));
    }

    fn remove(&mut self, reference: &ObjectRef<K>) {
        let Some((_, keys)) = self.of.remove(reference) else {
            return;
        };
        for key in keys {
            if let Some(named) = self.by_key.get_mut(&key) {
                named.remove(reference);
                if named.is_empty() {
                    self.by_key.remove(&key);
                }
            }
        }
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
        let scope = self.scopes.len();
        self.scopes.push(Scope {
            store,
            warm: warm.clone(),
        });
        Feed {
            writer,
            warm,
            index: self.index.clone().map(|index| (scope, index)),
        }
    }

    /// An empty cache whose objects can be looked up by the keys `keys` gives each
    /// ([`Cache::by_key`]).
    pub fn indexed(keys: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self {
        Self {
            index: Some(Arc::new(Index::new(Box::new(keys)))),
            ..Self::default()
        }
    }

    /// How many objects this cache's reads (and its clones') have looked at so far: a scan
    /// counts every object it passed over, a lookup only what it found. Tests hold a pass's
    /// reads to the objects it concerns with it, whatever else the cache holds.
    pub fn visited(&self) -> usize {
        self.visited.load(Ordering::Relaxed)
    }

    fn visit(&self, objects: usize) {
        self.visited.fetch_add(objects, Ordering::Relaxed);
    }

    /// The objects whose keys include `key`, in no particular order: as many as there are, not
    /// a scan of the cache. Empty for a cache made without keys ([`Cache::indexed`]).
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn by_key(&self, key: &str) -> Result<Vec<Arc<K>>, Cold> {
        let scopes = self.warm()?;
        let Some(index) = &self.index else {
            return Ok(Vec::new());
        };
        let state = index.lock();
        let Some(named) = state.by_key.get(key) else {
            return Ok(Vec::new());
        };
        self.visit(named.len());
        Ok(named
            .iter()
            .filter_map(|reference| {
                let (scope, _) = state.of.get(reference)?;
                scopes.get(*scope)?.store.get(reference)
            })
            .collect())
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
        let found = self.warm()?.iter().find_map(|s| s.store.get(&key));
        self.visit(usize::from(found.is_some()));
        Ok(found)
    }

    /// Every object the cache holds (of a cluster-scoped kind, say), in no particular order.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn all(&self) -> Result<Vec<Arc<K>>, Cold> {
        let all: Vec<Arc<K>> = self.warm()?.iter().flat_map(|s| s.store.state()).collect();
        self.visit(all.len());
        Ok(all)
    }

    /// Every object of `namespace` the cache holds, in no particular order.
    ///
    /// # Errors
    /// [`Cold`] until every scope's watch has listed in full.
    pub fn in_namespace(&self, namespace: &str) -> Result<Vec<Arc<K>>, Cold> {
        let scopes = self.warm()?;
        // A store has no index by namespace: the filter passes over every object.
        self.visit(scopes.iter().map(|s| s.store.len()).sum());
        Ok(scopes
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
    /// The cache's index and this scope's place in it.
    index: Option<(usize, Arc<Index<K>>)>,
}

impl<K> Feed<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone,
{
    /// The watch of `api` that fills this scope, each object trimmed by `trim` (after
    /// [`crate::process::app::slim`]) before it is stored: the objects it saw change, deleted ones too,
    /// for `Controller::watches_stream`. The cache is filled only while the stream is polled;
    /// failures wait as [`crate::watch::contact::resilient`] says.
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
    /// [`crate::watch::triggers::spec_changes_of`]).
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
        let trimmed = crate::watch::contact::resilient(
            move || watcher::watcher(api.clone(), config.clone()),
            contact,
            &kind,
        )
        .modify(move |object| {
            slim(object);
            trim(object);
        });
        // The index takes each event in before the store does, so a reconcile the event
        // triggers finds the object by its keys.
        let index = self.index;
        let indexed = trimmed.inspect(move |event| {
            if let (Ok(event), Some((scope, index))) = (event, &index) {
                index.take_in(*scope, event);
            }
        });
        reflector(self.writer, indexed).inspect(move |event| {
            if matches!(event, Ok(Event::InitDone)) {
                warm.store(true, Ordering::Release);
            }
        })
    }

    /// Replaces what this scope holds with `objects` at once, as a relist does, and marks it
    /// warm: for tests and anything else that holds the objects already.
    pub fn fill(&mut self, objects: impl IntoIterator<Item = K>) {
        let events = std::iter::once(Event::Init)
            .chain(objects.into_iter().map(Event::InitApply))
            .chain(std::iter::once(Event::InitDone));
        for event in events {
            if let Some((scope, index)) = &self.index {
                index.take_in(*scope, &event);
            }
            self.writer.apply_watcher_event(&event);
        }
        self.warm.store(true, Ordering::Release);
    }
}

/// The annotation `kubectl apply` keeps a whole copy of the object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no reconcile reads from an object before the cache holds it: `managedFields` and
/// `kubectl apply`'s copy of the object, which together are often larger than the rest of it.
/// Nothing ebb writes is built from a cached object (every write is a patch of its own fields),
/// so neither is ever written back without them.
pub fn slim<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// [`slim`] on an object as it arrived, before it is read into its type: what goes is not
/// decoded.
pub fn slim_json(object: &mut serde_json::Map<String, serde_json::Value>) {
    let Some(serde_json::Value::Object(meta)) = object.get_mut("metadata") else {
        return;
    };
    meta.remove("managedFields");
    if let Some(serde_json::Value::Object(annotations)) = meta.get_mut("annotations") {
        annotations.remove(LAST_APPLIED);
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

    /// The cache keeps what reconciles read and drops the two largest parts nothing reads.
    #[test]
    fn the_cache_holds_objects_without_managed_fields_or_kubectls_copy() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let mut object = ConfigMap::default();
        object.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        object.metadata.annotations = Some(
            [(LAST_APPLIED, "{...}"), ("scaling.ebb.dev/paused", "true")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        );
        slim(&mut object);
        // `None`, not an empty list: an empty list written back would clear the server's copy.
        assert_eq!(object.metadata.managed_fields, None);
        assert_eq!(
            object
                .metadata
                .annotations
                .unwrap()
                .into_keys()
                .collect::<Vec<_>>(),
            ["scaling.ebb.dev/paused"]
        );
    }

    /// A set of names follows its watch: objects come and go, and a relist replaces the set once
    /// it is complete (until then the old one answers).
    #[test]
    fn names_follow_their_watch_and_a_relist_replaces_them_whole() {
        let names = Names::default();
        names.take_in(&Event::<ConfigMap>::Init);
        names.take_in(&Event::InitApply(map("a", "one")));
        names.take_in(&Event::InitApply(map("b", "two")));
        assert!(names.is_empty(), "not before the list is complete");
        names.take_in(&Event::<ConfigMap>::InitDone);
        assert!(names.contains("a", "one") && names.contains("b", "two"));
        assert!(!names.contains("a", "two"));
        names.take_in(&Event::Apply(map("a", "three")));
        names.take_in(&Event::Delete(map("a", "one")));
        assert!(names.contains("a", "three") && !names.contains("a", "one"));
        names.take_in(&Event::<ConfigMap>::Init);
        names.take_in(&Event::InitApply(map("c", "four")));
        assert_eq!(names.len(), 2, "the old set answers during a relist");
        names.take_in(&Event::<ConfigMap>::InitDone);
        assert_eq!(names.len(), 1);
        assert!(names.contains("c", "four"));
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

    /// A lookup by key finds the objects with that key, kept as objects come, change, go and
    /// are relisted, across scopes.
    #[test]
    fn objects_are_found_by_their_keys() {
        let mut cache = Cache::<ConfigMap>::indexed(|o| {
            o.data
                .as_ref()
                .and_then(|d| d.get("group"))
                .map(|g| vec![format!("{}/{g}", o.namespace().unwrap_or_default())])
                .unwrap_or_default()
        });
        let grouped = |namespace: &str, name: &str, group: &str| {
            let mut o = map(namespace, name);
            o.data = Some([("group".to_owned(), group.to_owned())].into());
            o
        };
        let names = |cache: &Cache<ConfigMap>, key: &str| {
            let mut names: Vec<String> = cache
                .by_key(key)
                .unwrap()
                .iter()
                .map(|o| o.name_any())
                .collect();
            names.sort();
            names
        };
        let mut a = cache.scope();
        let mut b = cache.scope();
        a.fill([
            grouped("a", "one", "x"),
            grouped("a", "two", "y"),
            map("a", "three"),
        ]);
        b.fill([grouped("b", "four", "x")]);
        assert_eq!(names(&cache, "a/x"), ["one"]);
        assert_eq!(names(&cache, "b/x"), ["four"]);
        // A change of key moves the object; a deletion drops it.
        let index = a.index.clone().unwrap();
        index
            .1
            .take_in(index.0, &Event::Apply(grouped("a", "two", "x")));
        a.writer
            .apply_watcher_event(&Event::Apply(grouped("a", "two", "x")));
        assert_eq!(names(&cache, "a/x"), ["one", "two"]);
        assert!(names(&cache, "a/y").is_empty());
        index
            .1
            .take_in(index.0, &Event::Delete(grouped("a", "one", "x")));
        a.writer
            .apply_watcher_event(&Event::Delete(grouped("a", "one", "x")));
        assert_eq!(names(&cache, "a/x"), ["two"]);
        // A relist of one scope drops what it no longer shows there, not elsewhere.
        a.fill([grouped("a", "five", "x")]);
        assert_eq!(names(&cache, "a/x"), ["five"]);
        assert_eq!(names(&cache, "b/x"), ["four"]);
        assert_eq!(index.1.lock().of.len(), 2, "nothing outlives its object");
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
