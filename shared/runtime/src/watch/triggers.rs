//! Watches of related kinds that trigger reconciles only when what a controller reads of them
//! changed.
//!
//! A related object whose status another controller writes (a WorkshopScalingPolicy's status, say,
//! which changes whenever a Workshop of its namespace does) would otherwise reconcile every
//! object it maps to on each of those writes. [`spec_changes`] passes an object on when it is
//! new, when its `generation`, labels or annotations changed, and when it is deleted; a change of
//! its status alone is dropped. Hand the stream to `Controller::watches_stream`.
//!
//! [`coalesced`] gathers a burst of triggers into one: for a pass that reads many objects (a
//! FleetSchedule's status reads every member) asked for by each of them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// What of an object's metadata a change must touch to count: generation, labels, annotations.
fn fingerprint<K: Resource>(object: &K) -> u64 {
    let meta = object.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.owner_references
        .iter()
        .flatten()
        .for_each(|o| (&o.uid, &o.controller).hash(&mut hasher));
    meta.deletion_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .hash(&mut hasher);
    hasher.finish()
}

/// The objects of `api` (as `watcher::Config` selects them) that are new, changed in generation,
/// labels or annotations, or deleted. A relist passes on only what changed meanwhile. Failures
/// wait as [`crate::watch::contact::resilient`] says.
pub fn spec_changes<K>(
    api: Api<K>,
    config: watcher::Config,
    contact: &crate::ApiContact,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).into_owned();
    spec_changes_of(crate::watch::contact::resilient(
        move || watcher::watcher(api.clone(), config.clone()),
        contact,
        &kind,
    ))
}

/// [`spec_changes`] of any watch's events: a `metadata_watcher`'s, say, when what is mapped is
/// only the name (the generation moves with the spec, so metadata is enough to see it change).
pub fn spec_changes_of<K, S>(events: S) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: Resource + Send + 'static,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    // By `namespace/name/uid`: an object deleted and made again is new.
    let mut seen: HashMap<String, u64> = HashMap::new();
    // The objects a (re)list has shown so far: at its end, what it did not show is gone (a
    // relist after a watch's history expired reports no deletions).
    let mut listed: Option<HashSet<String>> = None;
    events.filter_map(move |event| {
        let key = |o: &K| {
            let m = o.meta();
            let part = |p: &Option<String>| p.clone().unwrap_or_default();
            format!("{}/{}/{}", part(&m.namespace), part(&m.name), part(&m.uid))
        };
        let passed = match event {
            Ok(Event::Apply(object)) => {
                let print = fingerprint(&object);
                (seen.insert(key(&object), print) != Some(print)).then_some(Ok(object))
            }
            Ok(Event::InitApply(object)) => {
                let key = key(&object);
                let print = fingerprint(&object);
                if let Some(listed) = listed.as_mut() {
                    listed.insert(key.clone());
                }
                (seen.insert(key, print) != Some(print)).then_some(Ok(object))
            }
            Ok(Event::Delete(object)) => {
                seen.remove(&key(&object));
                Some(Ok(object))
            }
            Ok(Event::Init) => {
                listed = Some(HashSet::new());
                None
            }
            Ok(Event::InitDone) => {
                if let Some(listed) = listed.take() {
                    seen.retain(|key, _| listed.contains(key));
                }
                None
            }
            Err(error) => Some(Err(error)),
        };
        std::future::ready(passed)
    })
}

/// `items`, each burst gathered: from an item on, what else comes within `period` joins it, and
/// then each distinct item of the burst is passed on once, in the order it first came. A pass
/// whose cost grows with the cluster (a FleetSchedule's status reads every member), asked for
/// by every member's change, then runs once per `period` of a mass change (at 10 000 members,
/// once per write otherwise, back to back) and at most `period` late.
pub fn coalesced<S>(items: S, period: Duration) -> impl Stream<Item = S::Item> + Send
where
    S: Stream + Send,
    S::Item: Eq + Hash + Clone + Send,
{
    let items = Box::pin(items.fuse());
    futures::stream::unfold(
        (items, VecDeque::new()),
        move |(mut items, mut ready)| async move {
            if ready.is_empty() {
                let first = items.next().await?;
                let mut seen = HashSet::from([first.clone()]);
                ready.push_back(first);
                let window = tokio::time::sleep(period);
                tokio::pin!(window);
                loop {
                    tokio::select! {
                        () = &mut window => break,
                        next = items.next() => match next {
                            Some(item) => {
                                if seen.insert(item.clone()) {
                                    ready.push_back(item);
                                }
                            }
                            None => break,
                        },
                    }
                }
            }
            let item = ready.pop_front()?;
            Some((item, (items, ready)))
        },
    )
}
