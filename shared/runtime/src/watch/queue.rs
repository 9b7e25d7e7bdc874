//! What waits in a controller's queue: objects whose reconcile is due but has not started.
//!
//! kube-runtime's `Controller` keeps its queue (a scheduler, one entry per object, the earliest
//! time asked for) private, so ebb keeps a ledger of the same entries beside it. A [`Queued`]
//! controller is kube's `Controller` whose every trigger is noted as it passes on to kube: the
//! watch of its own kind, the watches of related kinds, `reconcile_on`, `reconcile_all_on`.
//! [`crate::execute::frame::run`] notes the rest: a reconcile starting (the entry leaves the queue), the
//! requeue a pass or the error policy asks for (an entry due later), an object gone before its
//! reconcile ran. Both sides merge as kube's scheduler does: one entry per object, the earliest
//! due time kept.
//!
//! [`Queue::depth`] is what controller-runtime calls a work queue's depth: entries due now that no
//! reconcile has taken yet because every slot of the controller's concurrency is busy. As there,
//! an object asked for again while its reconcile runs waits beside the queue, not in it, until
//! that reconcile ends (kube holds it); a requeue waiting for its time is not counted until it is
//! due. [`Queue::started`] says how long the entry waited in the queue (the queue latency).
//!
//! A requeue (a pass's "come back at the next transition", an error's backoff) waits here, not in
//! kube's scheduler: [`Queue::requeued`] sets a timer, and when it is due the object is handed to
//! the controller as a trigger ([`Queue::due`]) while the pass told kube to await a change. kube's
//! scheduler holds an entry only between a trigger and its reconcile's start. Why: its entry of an
//! object due in an hour is a `ReconcileRequest` kept twice (a map key and a delay queue slot),
//! each with the object's name, namespace, resource version and uid copied, about 550 bytes a
//! ServiceScaler (a heap profile, docs/decisions.md); a timer here is the key the ledger already
//! holds and an instant.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The ledger of one controller's queue: per object (`namespace/name`), when its reconcile is due.
///
/// Time is tokio's monotonic clock, the one kube's scheduler runs on (paused in the simulator):
/// a measurement of the queue, not a decision input, so it does not go through the `Clock`.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    ledger: Arc<Mutex<Ledger>>,
    deleted: Deleted,
    /// Woken when a timer is set earlier than every other ([`Queue::due`] sleeps until the
    /// earliest).
    earlier: Arc<Notify>,
}

/// What is told the `namespace/name` of an object the watch reports deleted.
type Tell = Arc<dyn Fn(&str) + Send + Sync>;

/// Who is told of each object the watch reports deleted ([`Queue::on_deleted`]).
#[derive(Clone, Default)]
struct Deleted(Arc<Mutex<Option<Tell>>>);

impl Debug for Deleted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deleted")
    }
}

#[derive(Debug, Default)]
struct Ledger {
    /// When each object's next reconcile is due.
    due: HashMap<Arc<str>, Due>,
    /// The objects whose reconcile runs now.
    running: HashSet<String>,
    /// The timers of the requeues waiting for their time, earliest first.
    timers: BTreeSet<(Instant, Arc<str>)>,
}

/// An object's entry: when its reconcile is due, and the timer of its requeue, if one waits.
#[derive(Debug, Clone, Copy)]
struct Due {
    at: Instant,
    timer: Option<Instant>,
}

impl Ledger {
    /// Drops `key`'s entry and its timer.
    fn remove(&mut self, key: &str) -> Option<Instant> {
        let (key, due) = self.due.remove_entry(key)?;
        if let Some(timer) = due.timer {
            self.timers.remove(&(timer, key));
        }
        Some(due.at)
    }
}

impl Queue {
    /// `key`'s reconcile is asked for now (a trigger).
    pub fn asked(&self, key: String) {
        self.due_at(key, Instant::now());
    }

    /// `key`'s reconcile is asked for after `wait` (a requeue): a timer is set, which
    /// [`Queue::due`] hands to the controller when it is due. One timer per object, the earliest
    /// kept (an object asked for sooner runs then, and its start drops the timer).
    pub fn requeued(&self, key: String, wait: Duration) {
        let at = Instant::now() + wait;
        let mut ledger = self.lock();
        let key: Arc<str> = match ledger.due.get_key_value(key.as_str()) {
            Some((shared, _)) => shared.clone(),
            None => key.into(),
        };
        let earliest = ledger.timers.first().map(|(first, _)| *first);
        let due = ledger
            .due
            .entry(key.clone())
            .or_insert(Due { at, timer: None });
        due.at = due.at.min(at);
        let replaced = match due.timer {
            Some(timer) if timer <= at => return,
            replaced => replaced,
        };
        due.timer = Some(at);
        if let Some(timer) = replaced {
            ledger.timers.remove(&(timer, key.clone()));
        }
        ledger.timers.insert((at, key));
        drop(ledger);
        if earliest.is_none_or(|earliest| at < earliest) {
            self.earlier.notify_one();
        }
    }

    /// The keys whose requeue is due, as their timers come due (several at once when they come
    /// due together): what the controller is handed as triggers. Each timer yields once; an
    /// object that started or went before its timer came due is not yielded.
    pub fn due(&self) -> impl Stream<Item = Vec<String>> + Send + 'static {
        let queue = self.clone();
        futures::stream::unfold(queue, |queue| async move {
            loop {
                let next = {
                    let mut ledger = queue.lock();
                    let now = Instant::now();
                    let mut fired = Vec::new();
                    while let Some((at, _)) = ledger.timers.first() {
                        if *at > now {
                            break;
                        }
                        let Some((_, key)) = ledger.timers.pop_first() else {
                            break;
                        };
                        if let Some(due) = ledger.due.get_mut(&key) {
                            due.timer = None;
                        }
                        fired.push(key.to_string());
                    }
                    if !fired.is_empty() {
                        return Some((fired, queue.clone()));
                    }
                    ledger.timers.first().map(|(at, _)| *at)
                };
                let earlier = queue.earlier.notified();
                match next {
                    Some(at) => {
                        tokio::select! {
                            () = tokio::time::sleep_until(at) => {}
                            () = earlier => {}
                        }
                    }
                    None => earlier.await,
                }
            }
        })
    }

    /// `key`'s reconcile started: its entry leaves the queue. How long it waited in the queue
    /// (`None` when it had no entry due).
    pub fn started(&self, key: &str) -> Option<Duration> {
        let mut ledger = self.lock();
        ledger.running.insert(key.to_owned());
        let due = ledger.remove(key)?;
        Instant::now().checked_duration_since(due)
    }

    /// `key`'s reconcile ended (before its requeue is noted). Asked for again while it ran, the
    /// object enters the queue now.
    pub fn finished(&self, key: &str) {
        let mut ledger = self.lock();
        ledger.running.remove(key);
        let now = Instant::now();
        if let Some(due) = ledger.due.get_mut(key) {
            due.at = due.at.max(now);
        }
    }

    /// `key` was gone when its turn came: the entry is dropped unreconciled.
    pub fn gone(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Calls `tell` with the `namespace/name` of each object the watch reports deleted (kube's
    /// controller runs no reconcile for a deletion: the object is no longer there to pass).
    pub fn on_deleted(&self, tell: impl Fn(&str) + Send + Sync + 'static) {
        *self
            .deleted
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(tell));
    }

    /// The watch reported `key` deleted.
    pub fn deleted(&self, key: &str) {
        self.gone(key);
        let tell = self
            .deleted
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(tell) = tell {
            tell(key);
        }
    }

    /// The entries due now that no reconcile has taken yet (those of objects whose reconcile runs
    /// wait beside the queue).
    pub fn depth(&self) -> usize {
        let now = Instant::now();
        let ledger = self.lock();
        ledger
            .due
            .iter()
            .filter(|(key, due)| due.at <= now && !ledger.running.contains(&***key))
            .count()
    }

    fn due_at(&self, key: String, at: Instant) {
        let mut ledger = self.lock();
        match ledger.due.get_mut(key.as_str()) {
            Some(due) => due.at = due.at.min(at),
            None => {
                ledger.due.insert(key.into(), Due { at, timer: None });
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // The ledger holds no invariant a panic could break halfway.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `namespace/name` (or `name` for cluster-scoped objects): the key of an object in logs and backoff.
pub fn object_key<K: Resource>(object: &K) -> String {
    match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// The ledger key of an object reference: `namespace/name`, or `name` (as [`object_key`]
/// names objects).
pub fn ref_key<K: kube::runtime::reflector::Lookup>(reference: &ObjectRef<K>) -> String {
    match &reference.namespace {
        Some(ns) => format!("{ns}/{}", reference.name),
        None => reference.name.clone(),
    }
}

/// The reference of the object a ledger key names (the inverse of [`ref_key`]).
fn key_ref<K>(key: &str) -> ObjectRef<K>
where
    K: kube::runtime::reflector::Lookup,
    K::DynamicType: Default,
{
    match key.split_once('/') {
        Some((namespace, name)) => ObjectRef::new(name).within(namespace),
        None => ObjectRef::new(key),
    }
}

/// kube's `Controller` with its triggers noted in a [`Queue`]: the same builder methods, each
/// noting what its stream asks for as it passes on. Built by [`crate::process::app`]'s constructors,
/// run by [`crate::execute::frame::run`].
pub struct Queued<K>
where
    K: Clone + Resource + Debug + 'static,
    K::DynamicType: Eq + Hash,
{
    controller: Controller<K>,
    queue: Queue,
}

impl<K> Queued<K>
where
    K: Clone + Resource + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin,
{
    /// `controller`, whose own trigger went through [`Queued::note`] with `queue`; the
    /// requeues' timers ([`Queue::due`]) are its triggers too.
    pub(crate) fn new(controller: Controller<K>, queue: Queue) -> Self {
        let due = queue
            .due()
            .flat_map(|keys| futures::stream::iter(keys.into_iter().map(|key| key_ref(&key))));
        Self {
            controller: controller.reconcile_on(due),
            queue,
        }
    }

    /// A trigger of objects of `K` noted in `queue` as it passes (for the controller's own watch).
    pub(crate) fn note<E>(
        queue: &Queue,
        trigger: impl Stream<Item = Result<K, E>> + Send + 'static,
    ) -> impl Stream<Item = Result<K, E>> + Send + 'static {
        let queue = queue.clone();
        trigger.inspect(move |object| {
            if let Ok(object) = object {
                queue.asked(object_key(object));
            }
        })
    }

    /// The cache the controller reads its objects from.
    pub fn store(&self) -> Store<K> {
        self.controller.store()
    }

    /// Reconciles the objects `mapper` names whenever `trigger` yields an object of another kind.
    #[must_use]
    pub fn watches_stream<Other, I>(
        self,
        trigger: impl Stream<Item = Result<Other, watcher::Error>> + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Default + Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        self.watches_stream_with(trigger, mapper, Default::default())
    }

    /// [`Queued::watches_stream`] for a kind known at run time (`dyntype`).
    #[must_use]
    pub fn watches_stream_with<Other, I>(
        self,
        trigger: impl Stream<Item = Result<Other, watcher::Error>> + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
        dyntype: Other::DynamicType,
    ) -> Self
    where
        Other: Clone + Resource + DeserializeOwned + Debug + Send + 'static,
        Other::DynamicType: Debug + Clone,
        I: 'static + IntoIterator<Item = ObjectRef<K>>,
        I::IntoIter: Send,
    {
        let queue = self.queue.clone();
        let noted = move |other: Other| {
            let refs: Vec<ObjectRef<K>> = mapper(other).into_iter().collect();
            for reference in &refs {
                queue.asked(ref_key(reference));
            }
            refs
        };
        Self {
            controller: self.controller.watches_stream_with(trigger, noted, dyntype),
            queue: self.queue,
        }
    }

    /// Reconciles the owners (of kind `K`) of each object `trigger` yields.
    #[must_use]
    pub fn owns_stream<Child>(
        self,
        trigger: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    ) -> Self
    where
        Child: Clone + Resource<DynamicType = ()> + DeserializeOwned + Debug + Send + 'static,
    {
        self.watches_stream(trigger, |child: Child| {
            let meta = child.meta();
            meta.owner_references
                .iter()
                .flatten()
                .filter_map(|owner| {
                    ObjectRef::from_owner_ref(meta.namespace.as_deref(), owner, Default::default())
                })
                .collect::<Vec<_>>()
        })
    }

    /// Reconciles each object `trigger` names.
    #[must_use]
    pub fn reconcile_on(self, trigger: impl Stream<Item = ObjectRef<K>> + Send + 'static) -> Self {
        let queue = self.queue.clone();
        let noted = trigger.inspect(move |reference| queue.asked(ref_key(reference)));
        Self {
            controller: self.controller.reconcile_on(noted),
            queue: self.queue,
        }
    }

    /// Reconciles every object in the cache whenever `trigger` yields.
    #[must_use]
    pub fn reconcile_all_on(self, trigger: impl Stream<Item = ()> + Send + 'static) -> Self {
        let queue = self.queue.clone();
        let store = self.controller.store();
        let noted = trigger.inspect(move |()| {
            for object in store.state() {
                queue.asked(object_key(object.as_ref()));
            }
        });
        Self {
            controller: self.controller.reconcile_all_on(noted),
            queue: self.queue,
        }
    }

    /// Stops starting reconciles once `trigger` completes (those running finish).
    #[must_use]
    pub fn graceful_shutdown_on(
        self,
        trigger: impl Future<Output = ()> + Send + Sync + 'static,
    ) -> Self {
        Self {
            controller: self.controller.graceful_shutdown_on(trigger),
            queue: self.queue,
        }
    }

    /// kube's `Controller` and the ledger of its queue, to run.
    pub fn into_parts(self) -> (Controller<K>, Queue) {
        (self.controller, self.queue)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn key(name: &str) -> String {
        format!("ns/{name}")
    }

    #[tokio::test(start_paused = true)]
    async fn a_deletion_drops_the_entry_and_is_told() {
        let queue = Queue::default();
        queue.deleted(&key("early"));
        let told = Arc::new(Mutex::new(Vec::new()));
        let record = told.clone();
        queue.on_deleted(move |key| record.lock().unwrap().push(key.to_owned()));
        queue.asked(key("web"));
        assert_eq!(queue.depth(), 1);
        queue.deleted(&key("web"));
        assert_eq!(queue.depth(), 0);
        assert_eq!(*told.lock().unwrap(), [key("web")]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_counts_while_due_and_leaves_when_its_reconcile_starts() {
        let queue = Queue::default();
        queue.asked(key("a"));
        queue.asked(key("b"));
        queue.asked(key("a"));
        assert_eq!(queue.depth(), 2, "one entry per object");
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(queue.started(&key("a")), Some(Duration::from_millis(250)));
        assert_eq!(queue.depth(), 1);
        queue.gone(&key("b"));
        assert_eq!(queue.depth(), 0);
        assert_eq!(
            queue.started(&key("b")),
            None,
            "a gone entry waited for nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_requeue_counts_only_once_due() {
        let queue = Queue::default();
        queue.requeued(key("a"), Duration::from_secs(60));
        assert_eq!(
            queue.depth(),
            0,
            "waiting for its time is not waiting in the queue"
        );
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(queue.depth(), 0);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(queue.depth(), 1);
        assert_eq!(queue.started(&key("a")), Some(Duration::from_secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_asked_for_while_it_runs_waits_beside_the_queue_until_it_ends() {
        let queue = Queue::default();
        queue.asked(key("a"));
        assert_eq!(queue.started(&key("a")), Some(Duration::ZERO));
        queue.asked(key("a"));
        assert_eq!(queue.depth(), 0, "kube holds it while its reconcile runs");
        tokio::time::advance(Duration::from_secs(3)).await;
        queue.finished(&key("a"));
        assert_eq!(queue.depth(), 1);
        tokio::time::advance(Duration::from_millis(5)).await;
        assert_eq!(
            queue.started(&key("a")),
            Some(Duration::from_millis(5)),
            "the wait counts from the end of the run it waited for"
        );
        queue.finished(&key("a"));
        assert_eq!(queue.depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_earliest_request_wins_as_in_kubes_scheduler() {
        let queue = Queue::default();
        // A trigger while the reconcile runs, then the pass asks for a requeue later: the trigger
        // stands (kube's scheduler keeps the earlier).
        queue.asked(key("a"));
        queue.requeued(key("a"), Duration::from_secs(300));
        assert_eq!(queue.depth(), 1);
        // A requeue, then a trigger: due now.
        queue.requeued(key("b"), Duration::from_secs(300));
        queue.asked(key("b"));
        assert_eq!(queue.depth(), 2);
    }

    /// The next batch [`Queue::due`] yields within `within` of (paused) time, if any.
    async fn next_due(
        due: &mut (impl Stream<Item = Vec<String>> + Unpin),
        within: Duration,
    ) -> Option<Vec<String>> {
        tokio::time::timeout(within, due.next())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn a_requeue_is_handed_over_when_due_and_not_before() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        queue.requeued(key("a"), Duration::from_secs(60));
        queue.requeued(key("b"), Duration::from_secs(60));
        assert_eq!(next_due(&mut due, Duration::from_secs(59)).await, None);
        assert_eq!(
            next_due(&mut due, Duration::from_secs(2)).await,
            Some(vec![key("a"), key("b")]),
            "timers due together come together"
        );
        assert_eq!(
            next_due(&mut due, Duration::from_secs(3600)).await,
            None,
            "each timer once"
        );
        assert_eq!(
            queue.depth(),
            2,
            "handed over, due until their reconcile starts"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_sooner_requeue_wakes_the_timer_that_sleeps_for_a_later_one() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        queue.requeued(key("late"), Duration::from_secs(3600));
        assert_eq!(next_due(&mut due, Duration::from_secs(1)).await, None);
        queue.requeued(key("soon"), Duration::from_secs(10));
        assert_eq!(
            next_due(&mut due, Duration::from_secs(11)).await,
            Some(vec![key("soon")])
        );
    }

    #[tokio::test(start_paused = true)]
    async fn one_timer_per_object_the_earliest_kept() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        queue.requeued(key("a"), Duration::from_secs(300));
        queue.requeued(key("a"), Duration::from_secs(60));
        queue.requeued(key("b"), Duration::from_secs(60));
        queue.requeued(key("b"), Duration::from_secs(300));
        assert_eq!(
            next_due(&mut due, Duration::from_secs(61)).await,
            Some(vec![key("a"), key("b")])
        );
        assert_eq!(next_due(&mut due, Duration::from_secs(3600)).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_or_a_deletion_drops_the_timer() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        queue.requeued(key("started"), Duration::from_secs(60));
        queue.requeued(key("deleted"), Duration::from_secs(60));
        queue.requeued(key("gone"), Duration::from_secs(60));
        queue.requeued(key("kept"), Duration::from_secs(60));
        // A trigger ran the object sooner: the pass it starts decides its next look.
        queue.asked(key("started"));
        assert!(queue.started(&key("started")).is_some());
        queue.finished(&key("started"));
        queue.deleted(&key("deleted"));
        queue.gone(&key("gone"));
        assert_eq!(
            next_due(&mut due, Duration::from_secs(3600)).await,
            Some(vec![key("kept")])
        );
        assert_eq!(queue.lock().timers.len(), 0, "no timer outlives its object");
    }

    #[test]
    fn a_key_names_the_object_it_was_made_from() {
        use k8s_openapi::api::core::v1::{ConfigMap, Node};
        let namespaced = ObjectRef::<ConfigMap>::new("web").within("shop");
        assert_eq!(key_ref::<ConfigMap>(&ref_key(&namespaced)), namespaced);
        let cluster = ObjectRef::<Node>::new("node-1");
        assert_eq!(key_ref::<Node>(&ref_key(&cluster)), cluster);
    }

    #[test]
    fn a_reference_is_keyed_as_objects_are() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let namespaced = ObjectRef::<ConfigMap>::new("web").within("shop");
        assert_eq!(ref_key(&namespaced), "shop/web");
        assert_eq!(ref_key(&ObjectRef::<ConfigMap>::new("web")), "web");
    }
}
