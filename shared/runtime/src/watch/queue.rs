//! A controller's queue: objects whose reconcile is due, and when, handed to kube's `Controller`
//! a few at a time.
//!
//! kube-runtime's `Controller` keeps a scheduler of its own: one entry per object, the earliest
//! time asked for, each a `ReconcileRequest` held twice (a map key and a delay-queue slot) with
//! the object's name, namespace, resourceVersion and uid copied, about 550 bytes an object (a
//! heap profile, docs/decisions.md), and a table that keeps the size of its largest burst (every
//! object at startup, at an edge, at a server's return). So ebb's [`Queue`] is the queue: a
//! [`Queued`] controller is kube's `Controller` whose every trigger (the watch of its own kind,
//! the watches of related kinds, `reconcile_on`, `reconcile_all_on`) and every requeue a pass or
//! the error policy asks for ([`crate::execute::frame::run`] notes them) enters the queue, not
//! kube's scheduler; the queue hands kube the entries that are due, earliest first, no more than
//! a few beyond the reconciles that run ([`Queue::due`]), and an entry leaves the queue when its
//! reconcile starts or its object is gone. kube runs what it is handed with its concurrency, and
//! its scheduler never holds more than those few.
//!
//! The queue keeps kube's rules: one entry per object, the earliest due time kept; an object
//! asked for again while its reconcile runs waits beside the queue until that reconcile ends.
//! [`Queue::depth`] is what controller-runtime calls a work queue's depth: entries due now that
//! no reconcile has taken yet because every slot of the controller's concurrency is busy; a
//! requeue waiting for its time is not counted until it is due. [`Queue::started`] says how long
//! the entry waited in the queue (the queue latency).

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

use crate::watch::own_writes::shrinkable;

/// How many entries the queue hands the controller beyond the reconciles that run, by default
/// ([`Queue::handing`]).
const HANDED: usize = 16;

/// The queue of one controller: per object (`namespace/name`), when its reconcile is due.
///
/// Time is tokio's monotonic clock, the one kube's runner runs on (paused in the simulator): a
/// queue's timing, not a decision input, so it does not go through the `Clock`.
#[derive(Clone, Debug)]
pub struct Queue {
    ledger: Arc<Mutex<Ledger>>,
    deleted: Deleted,
    /// Woken when an entry may be handed over: one came due sooner, a reconcile started or
    /// ended, an entry went ([`Queue::due`] sleeps until the earliest otherwise).
    wake: Arc<Notify>,
}

impl Default for Queue {
    fn default() -> Self {
        Self::handing(HANDED)
    }
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

#[derive(Debug)]
struct Ledger {
    /// Each object's entry.
    due: HashMap<Arc<str>, Due>,
    /// The objects whose reconcile runs now.
    running: HashSet<String>,
    /// The entries not handed over yet, earliest first.
    waiting: BTreeSet<(Instant, Arc<str>)>,
    /// How many entries are handed over and have not started.
    handed: usize,
    /// At most this many are handed over at once.
    hand_at_most: usize,
}

/// An object's entry: when its reconcile is due, and whether it is handed to the controller.
#[derive(Debug, Clone, Copy)]
struct Due {
    at: Instant,
    handed: bool,
}

impl Ledger {
    /// `key` due at `at`, or when its entry is due if that is sooner (or it is handed over).
    fn ask(&mut self, key: String, at: Instant) {
        let Some((shared, due)) = self.due.get_key_value(key.as_str()) else {
            let key: Arc<str> = key.into();
            self.waiting.insert((at, key.clone()));
            self.due.insert(key, Due { at, handed: false });
            return;
        };
        if due.handed || due.at <= at {
            return;
        }
        let (shared, before) = (shared.clone(), due.at);
        self.move_to(shared, before, at);
    }

    /// Moves the waiting entry of `key` from `before` to `at`.
    fn move_to(&mut self, key: Arc<str>, before: Instant, at: Instant) {
        self.waiting.remove(&(before, key.clone()));
        if let Some(due) = self.due.get_mut(&key) {
            due.at = at;
        }
        self.waiting.insert((at, key));
    }

    /// Drops `key`'s entry, handed over or waiting; when it was due.
    fn remove(&mut self, key: &str) -> Option<Instant> {
        let (key, due) = self.due.remove_entry(key)?;
        if due.handed {
            self.handed -= 1;
        } else {
            self.waiting.remove(&(due.at, key));
        }
        if shrinkable(self.due.len(), self.due.capacity()) {
            self.due.shrink_to(self.due.len() * 2);
        }
        Some(due.at)
    }

    /// Hands over the entries due at `now`, earliest first, as many as there is room for, past
    /// those whose reconcile runs (they wait until it ends); or when the next one comes due.
    fn hand_over(&mut self, now: Instant) -> (Vec<String>, Option<Instant>) {
        let room = self.hand_at_most.saturating_sub(self.handed);
        let mut taken = Vec::new();
        let mut next = None;
        for (at, key) in &self.waiting {
            if taken.len() == room {
                break;
            }
            if self.running.contains(&**key) {
                continue;
            }
            if *at > now {
                next = Some(*at);
                break;
            }
            taken.push((*at, key.clone()));
        }
        self.handed += taken.len();
        let keys = taken
            .into_iter()
            .map(|(at, key)| {
                self.waiting.remove(&(at, key.clone()));
                if let Some(due) = self.due.get_mut(&key) {
                    due.handed = true;
                }
                key.to_string()
            })
            .collect();
        (keys, next)
    }
}

impl Queue {
    /// A queue that hands the controller at most `at_most` entries beyond the reconciles that
    /// run (enough to keep every slot busy: a slot that frees takes one at once, and the queue
    /// hands over another).
    pub fn handing(at_most: usize) -> Self {
        Self {
            ledger: Arc::new(Mutex::new(Ledger {
                due: HashMap::new(),
                running: HashSet::new(),
                waiting: BTreeSet::new(),
                handed: 0,
                hand_at_most: at_most.max(1),
            })),
            deleted: Deleted::default(),
            wake: Arc::default(),
        }
    }

    /// `key`'s reconcile is asked for now (a trigger).
    pub fn asked(&self, key: String) {
        self.lock().ask(key, Instant::now());
        self.wake.notify_one();
    }

    /// `key`'s reconcile is asked for after `wait` (a requeue). One entry per object, the
    /// earliest kept (an object asked for sooner runs then, and that pass decides its next look).
    pub fn requeued(&self, key: String, wait: Duration) {
        self.lock().ask(key, Instant::now() + wait);
        self.wake.notify_one();
    }

    /// The keys to reconcile, as their entries come due: what the controller is handed as its
    /// triggers, earliest first, several at once when several are due, and at most as many
    /// handed over and not started as [`Queue::handing`] says. Each entry is handed over once;
    /// one that started or went first is not.
    pub fn due(&self) -> impl Stream<Item = Vec<String>> + Send + 'static {
        let queue = self.clone();
        futures::stream::unfold(queue, |queue| async move {
            loop {
                let (keys, next) = queue.lock().hand_over(Instant::now());
                if !keys.is_empty() {
                    return Some((keys, queue));
                }
                let wake = queue.wake.notified();
                match next {
                    Some(at) => {
                        tokio::select! {
                            () = tokio::time::sleep_until(at) => {}
                            () = wake => {}
                        }
                    }
                    None => wake.await,
                }
            }
        })
    }

    /// `key`'s reconcile started: its entry leaves the queue. How long it waited in the queue
    /// (`None` when it had no entry due).
    pub fn started(&self, key: &str) -> Option<Duration> {
        let due = {
            let mut ledger = self.lock();
            ledger.running.insert(key.to_owned());
            ledger.remove(key)
        };
        self.wake.notify_one();
        Instant::now().checked_duration_since(due?)
    }

    /// `key`'s reconcile ended (before its requeue is noted). Asked for again while it ran, the
    /// object enters the queue now.
    pub fn finished(&self, key: &str) {
        {
            let mut ledger = self.lock();
            ledger.running.remove(key);
            let now = Instant::now();
            if let Some((shared, due)) = ledger.due.get_key_value(key)
                && !due.handed
                && due.at < now
            {
                let (shared, before) = (shared.clone(), due.at);
                ledger.move_to(shared, before, now);
            }
        }
        self.wake.notify_one();
    }

    /// `key` was gone when its turn came: the entry is dropped unreconciled.
    pub fn gone(&self, key: &str) {
        self.lock().remove(key);
        self.wake.notify_one();
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
    /// wait beside the queue): those handed over, and those due that wait for room.
    pub fn depth(&self) -> usize {
        let now = Instant::now();
        let ledger = self.lock();
        let waiting = ledger
            .waiting
            .iter()
            .take_while(|(at, _)| *at <= now)
            .filter(|(_, key)| !ledger.running.contains(&**key))
            .count();
        ledger.handed + waiting
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
    /// `controller`, whose own trigger went through [`Queued::note`] with `queue`: what `queue`
    /// hands over ([`Queue::due`]) is all it is given to reconcile.
    pub(crate) fn new(controller: Controller<K>, queue: Queue) -> Self {
        let due = queue
            .due()
            .flat_map(|keys| futures::stream::iter(keys.into_iter().map(|key| key_ref(&key))));
        Self {
            controller: controller.reconcile_on(due),
            queue,
        }
    }

    /// A trigger of objects of `K` whose objects enter `queue` (for the controller's own
    /// watch): kube is given its errors alone, and polls it (which runs the watch).
    pub(crate) fn note<E: Send + 'static>(
        queue: &Queue,
        trigger: impl Stream<Item = Result<K, E>> + Send + 'static,
    ) -> impl Stream<Item = Result<K, E>> + Send + 'static {
        let queue = queue.clone();
        trigger.filter(move |object| {
            if let Ok(object) = object {
                queue.asked(object_key(object));
            }
            futures::future::ready(object.is_err())
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
            for reference in mapper(other) {
                queue.asked(ref_key(&reference));
            }
            std::iter::empty::<ObjectRef<K>>()
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
        let noted = trigger.filter_map(move |reference| {
            queue.asked(ref_key(&reference));
            futures::future::ready(None)
        });
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
        let noted = trigger.filter_map(move |()| {
            for object in store.state() {
                queue.asked(object_key(object.as_ref()));
            }
            futures::future::ready(None)
        });
        Self {
            controller: self.controller.reconcile_on(noted),
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

    /// kube's `Controller` and its queue, to run. Whoever runs it tells the queue of each
    /// reconcile's start ([`Queue::started`], as [`crate::execute::frame::run`] does): the queue
    /// hands over no more than its room ([`Queue::handing`]) until some start.
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
        assert_eq!(
            queue.lock().waiting.len(),
            0,
            "no entry outlives its object"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_is_handed_over_than_there_is_room_for_until_one_starts() {
        let queue = Queue::handing(2);
        let mut due = Box::pin(queue.due());
        for name in ["a", "b", "c"] {
            queue.asked(key(name));
        }
        let soon = Duration::from_millis(1);
        assert_eq!(
            next_due(&mut due, soon).await,
            Some(vec![key("a"), key("b")])
        );
        assert_eq!(next_due(&mut due, soon).await, None, "no room");
        assert_eq!(queue.depth(), 3, "handed over or waiting, all are due");
        assert!(queue.started(&key("a")).is_some());
        assert_eq!(next_due(&mut due, soon).await, Some(vec![key("c")]));
        // A handed-over object gone before its turn frees its room too.
        queue.gone(&key("b"));
        queue.asked(key("d"));
        assert_eq!(next_due(&mut due, soon).await, Some(vec![key("d")]));
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_asked_for_while_it_runs_is_handed_over_when_it_ends() {
        let queue = Queue::default();
        let mut due = Box::pin(queue.due());
        queue.asked(key("a"));
        let soon = Duration::from_millis(1);
        assert_eq!(next_due(&mut due, soon).await, Some(vec![key("a")]));
        assert!(queue.started(&key("a")).is_some());
        queue.asked(key("a"));
        queue.asked(key("b"));
        assert_eq!(
            next_due(&mut due, soon).await,
            Some(vec![key("b")]),
            "kube runs an object once at a time: it waits"
        );
        queue.finished(&key("a"));
        assert_eq!(next_due(&mut due, soon).await, Some(vec![key("a")]));
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
