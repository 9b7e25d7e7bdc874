//! [`Runner`]: a controller on ebb's own cache and queue, without kube's `Controller`.
//!
//! kube's `Controller` reads its objects from kube's reflector `Store`, which holds each as the
//! kind's whole type behind an `ObjectRef` key: the `ObjectMeta` alone is 360 bytes inline,
//! and the key copies the name, namespace, resourceVersion and uid again. A runner's objects are
//! [`Squeezed`] in a [`Projected`] cache keyed by `namespace/name`, and its triggers (its own
//! watch, [`Runner::reconcile_on`], [`Runner::reconcile_all_on`]) enter the [`Queue`], which
//! already decided what kube's `Controller` was handed; the runner takes the queue's due entries
//! as slots free and runs them, at most `concurrency` at once, an object never twice at once (the
//! queue holds back one whose reconcile runs). [`crate::execute::frame::run_squeezed`] runs one
//! with the reconcile frame.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ebb_core::plan::Requeue;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesUnordered};
use futures::{FutureExt, Stream, StreamExt};
use kube::Api;
use kube::runtime::watcher;
use serde::Serialize;

use crate::watch::guard::Object;
use crate::watch::own_writes::OwnWrites;
use crate::watch::packed::{Packed, Projection};
use crate::watch::projected::{Projected, Seen};
use crate::watch::queue::Queue;
use crate::watch::squeezed::Squeezed;

/// A controller of kind `K` on ebb's own cache and queue: built with its watch, given more
/// triggers, then run ([`Runner::run`], or the frame's `run_squeezed`).
pub struct Runner<K> {
    cache: Projected<Squeezed<K>>,
    queue: Queue,
    triggers: Vec<BoxStream<'static, ()>>,
    shutdown: BoxFuture<'static, ()>,
    concurrency: usize,
}

/// What a runner's own watch brings: a changed object, or a list.
type Watched<K, P> = Result<Seen<Packed<K, P>, Squeezed<K>>, watcher::Error>;

/// The object an event of a runner's watch brought, if it is one the cache still holds (a
/// deletion is never this process's own write to pass over).
fn applied<K, P>(event: &Watched<K, P>) -> Option<&Packed<K, P>> {
    match event {
        Ok(Seen::Changed {
            object,
            after: Some(_),
            ..
        }) => Some(object),
        _ => None,
    }
}

/// Two squeezed versions of one object: the same when at the same resourceVersion.
fn same<K>(a: &Squeezed<K>, b: &Squeezed<K>) -> bool {
    a.version() == b.version()
}

/// What a runner is built with besides its API: the watch's configuration, the link to the API
/// server, the writes to pass over, and what its first full list reports.
pub struct Watching<'a> {
    /// The watch's configuration (label selector, page size).
    pub config: watcher::Config,
    /// The link to the API server the watch reports to and waits through.
    pub contact: &'a crate::ApiContact,
    /// This process's own writes, whose events run no reconcile; `None` runs every event.
    pub own: Option<&'a OwnWrites>,
    /// Called at every full list (the first marks the cache warm).
    pub listed: Box<dyn Fn() + Send>,
    /// At most this many reconciles at once.
    pub concurrency: usize,
}

impl<K> Runner<K>
where
    K: Object + Serialize,
{
    /// A runner of the objects of `api`, each kept [`Squeezed`] once `P` dropped what no pass
    /// reads. Every event that changes an object (a new resourceVersion) asks for its reconcile
    /// unless it is of this process's own write; a deletion drops its queue entry and is told
    /// ([`Queue::on_deleted`]); a full list asks for every object and tells of the objects it
    /// found gone.
    pub fn watching<P: Projection<K>>(api: Api<Packed<K, P>>, watching: Watching<'_>) -> Self {
        let Watching {
            config,
            contact,
            own,
            listed,
            concurrency,
        } = watching;
        let mut cache = Projected::default();
        let feed = cache.scope::<Packed<K, P>>(Squeezed::squeeze);
        let events = feed.events(api, config, contact, same).boxed();
        let events = match own {
            Some(own) => own.skip_by(events, applied).boxed(),
            None => events,
        };
        let queue = Queue::handing(concurrency);
        let (asked, held) = (queue.clone(), cache.clone());
        let watch = events
            .map(move |event| match event {
                Ok(Seen::Changed {
                    after: Some(_),
                    object,
                    ..
                }) => {
                    asked.asked(crate::watch::queue::object_key(&object));
                }
                Ok(Seen::Changed {
                    after: None,
                    object,
                    ..
                }) => {
                    asked.deleted(&crate::watch::queue::object_key(&object));
                }
                Ok(Seen::Listed { gone }) => {
                    for key in gone {
                        asked.deleted(&key);
                    }
                    for key in held.keys() {
                        asked.asked(key.into());
                    }
                    listed();
                }
                Err(error) => tracing::debug!(%error, "watch event"),
            })
            .boxed();
        Self {
            cache,
            queue,
            triggers: vec![watch],
            shutdown: futures::future::pending().boxed(),
            concurrency: concurrency.max(1),
        }
    }
}

impl<K: Send + Sync + 'static> Runner<K> {
    /// The cache the runner reads its objects from.
    pub fn store(&self) -> Projected<Squeezed<K>> {
        self.cache.clone()
    }

    /// The runner's queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Reconciles each object `trigger` names (by `namespace/name`).
    #[must_use]
    pub fn reconcile_on(mut self, trigger: impl Stream<Item = String> + Send + 'static) -> Self {
        let queue = self.queue.clone();
        self.triggers
            .push(trigger.map(move |key| queue.asked(key)).boxed());
        self
    }

    /// Reconciles every object in the cache whenever `trigger` yields.
    #[must_use]
    pub fn reconcile_all_on(mut self, trigger: impl Stream<Item = ()> + Send + 'static) -> Self {
        let (queue, cache) = (self.queue.clone(), self.cache.clone());
        self.triggers.push(
            trigger
                .map(move |()| {
                    for key in cache.keys() {
                        queue.asked(key.into());
                    }
                })
                .boxed(),
        );
        self
    }

    /// Stops starting reconciles once `trigger` completes (those running finish).
    #[must_use]
    pub fn graceful_shutdown_on(
        mut self,
        trigger: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = trigger.boxed();
        self
    }

    /// Runs until the shutdown: each due object whose entry the queue hands over is
    /// reconciled by `reconcile` (its `Err` turned into a requeue by `policy`), at most the
    /// runner's concurrency at once; the requeue each asks for enters the queue, counted from
    /// the reconcile's start. An object gone when its turn comes is dropped and told to `gone`.
    /// `started` sees how long each entry waited in the queue.
    pub async fn run<E, F>(
        self,
        reconcile: impl Fn(Arc<Squeezed<K>>) -> F,
        policy: impl Fn(&str, &E) -> Requeue,
        gone: impl Fn(&str),
        started: impl Fn(Duration),
    ) where
        F: Future<Output = Result<Requeue, E>>,
    {
        let Self {
            cache,
            queue,
            triggers,
            shutdown,
            concurrency,
        } = self;
        let mut triggers = futures::stream::select_all(triggers);
        let mut due = Box::pin(queue.due());
        let mut shutdown = shutdown.fuse();
        let mut handed: VecDeque<String> = VecDeque::new();
        let mut running = FuturesUnordered::new();
        let mut stopping = false;
        loop {
            while !stopping && running.len() < concurrency {
                let Some(key) = handed.pop_front() else { break };
                let Some(object) = cache.get(&key) else {
                    queue.gone(&key);
                    gone(&key);
                    continue;
                };
                if let Some(waited) = queue.started(&key) {
                    started(waited);
                }
                let pass = reconcile(object);
                running.push(async move {
                    let start = tokio::time::Instant::now();
                    let result = pass.await;
                    (key, result, start.elapsed())
                });
            }
            if stopping && running.is_empty() {
                return;
            }
            // In this order, not at random: the simulator's runs repeat exactly.
            tokio::select! {
                biased;
                Some((key, result, took)) = running.next(), if !running.is_empty() => {
                    let (requeue, took) = match result {
                        Ok(requeue) => (requeue, took),
                        // A backoff counts from the failure.
                        Err(error) => (policy(&key, &error), Duration::ZERO),
                    };
                    queue.finished(&key);
                    if let Requeue::After(after) = requeue {
                        queue.requeued(key, after.saturating_sub(took));
                    }
                }
                Some(keys) = due.next(), if !stopping => handed.extend(keys),
                Some(()) = triggers.next(), if !stopping => {}
                () = &mut shutdown, if !stopping => stopping = true,
                else => return,
            }
        }
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
