//! The fixture every reconciler test starts from: a [`FakeApi`] whose clock is a [`ManualClock`]
//! set to the test's instant, [`RecordingEvents`], a metrics [`Registry`], and the frame's
//! [`Context`] built from them around the controller's own part.
//!
//! ```no_run
//! # use ebb_testkit::{Harness, utc};
//! let h = Harness::new("2026-05-04T09:00:00Z", "service-scaler");
//! let ctx = h.context(false, ());
//! h.clock.advance(jiff::SignedDuration::from_mins(5));
//! # let _ = ctx;
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use ebb_runtime::execute::frame::{Context, Shared};
use ebb_runtime::{ApiContact, ControllerMetrics, Leader, ManualClock};
use jiff::Timestamp;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::{FakeApi, RecordingEvents};

/// `text` (RFC 3339) as a UTC instant; panics on a malformed literal (tests only).
pub fn utc(text: &str) -> Timestamp {
    match text.parse() {
        Ok(t) => t,
        Err(e) => panic!("{text:?} is not RFC 3339: {e}"),
    }
}

/// A fake API server, a manual clock, recorded Events and a metrics registry for one test.
pub struct Harness {
    /// The in-memory API server (its clock is [`Self::clock`]).
    pub fake: FakeApi,
    /// "Now" for the controller and the fake; move it with `set`/`advance`.
    pub clock: ManualClock,
    /// Every Event the controller recorded.
    pub events: RecordingEvents,
    /// The controller's name, for its metrics.
    pub controller: &'static str,
    registry: Arc<Mutex<Registry>>,
}

impl Harness {
    /// A harness standing at `now` (RFC 3339) for `controller`.
    pub fn new(now: &str, controller: &'static str) -> Self {
        let clock = ManualClock::new(utc(now));
        Self {
            fake: FakeApi::with_clock(clock.clone()),
            clock,
            events: RecordingEvents::new(),
            controller,
            registry: Arc::new(Mutex::new(Registry::default())),
        }
    }

    /// Registers metrics into the harness's registry (a controller's own metrics type).
    pub fn register<M>(&self, register: impl FnOnce(&mut Registry) -> M) -> M {
        register(&mut self.registry.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The shared parts of a context: the fake's client, the clock, the Events, the reconcile
    /// metrics (registered here), `dry_run`, and a replica that leads.
    pub fn shared(&self, dry_run: bool) -> Shared {
        self.shared_with(dry_run, Leader::disabled())
    }

    /// [`Self::shared`] for a given leader state (e.g. `Leader::following()`).
    pub fn shared_with(&self, dry_run: bool, leader: Leader) -> Shared {
        Shared {
            contact: ApiContact::new(Arc::new(self.clock.clone())),
            client: self.fake.client(),
            clock: Arc::new(self.clock.clone()),
            events: Arc::new(self.events.clone()),
            metrics: self.register(|r| ControllerMetrics::new(r, self.controller)),
            dry_run,
            leader,
            own_writes: ebb_runtime::watch::own_writes::OwnWrites::new(),
        }
    }

    /// The frame's context around `own`, for a leading replica.
    pub fn context<T>(&self, dry_run: bool, own: T) -> Arc<Context<T>> {
        Arc::new(Context::new(self.shared(dry_run), own).without_jitter())
    }

    /// The registry in Prometheus' text format.
    pub fn metrics_text(&self) -> String {
        text(&self.registry)
    }

    /// Another controller process over the same fake API and clock (a second replica, or the
    /// same one after a restart): its own Events, metrics registry and leader state.
    pub fn replica(&self, dry_run: bool, leader: Leader) -> Replica {
        Replica::new(&self.fake, &self.clock, self.controller, dry_run, leader)
    }
}

/// One controller process over a fake API: its own Events, metrics registry and leader state
/// ([`Harness::replica`] makes one over the harness's fake and clock).
pub struct Replica {
    client: kube::Client,
    clock: ManualClock,
    /// The Events this process recorded.
    pub events: RecordingEvents,
    registry: Arc<Mutex<Registry>>,
    metrics: ControllerMetrics,
    dry_run: bool,
    leader: Leader,
}

impl Replica {
    /// A process of `controller` talking to `fake`, reading `clock`.
    pub fn new(
        fake: &FakeApi,
        clock: &ManualClock,
        controller: &'static str,
        dry_run: bool,
        leader: Leader,
    ) -> Self {
        let mut registry = Registry::default();
        let metrics = ControllerMetrics::new(&mut registry, controller);
        Self {
            client: fake.client(),
            clock: clock.clone(),
            events: RecordingEvents::new(),
            registry: Arc::new(Mutex::new(registry)),
            metrics,
            dry_run,
            leader,
        }
    }

    /// This process, talking through `client` instead (e.g. [`FakeApi::client_as`], an actor of an
    /// explored interleaving).
    pub fn with_client(mut self, client: kube::Client) -> Self {
        self.client = client;
        self
    }

    /// Registers metrics into this process's registry (a controller's own metrics type).
    pub fn register<M>(&self, register: impl FnOnce(&mut Registry) -> M) -> M {
        register(&mut self.registry.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The frame's context of this process around `own`.
    pub fn context<T>(&self, own: T) -> Arc<Context<T>> {
        let shared = Shared {
            contact: ApiContact::new(Arc::new(self.clock.clone())),
            client: self.client.clone(),
            clock: Arc::new(self.clock.clone()),
            events: Arc::new(self.events.clone()),
            metrics: self.metrics.clone(),
            dry_run: self.dry_run,
            leader: self.leader.clone(),
            own_writes: ebb_runtime::watch::own_writes::OwnWrites::new(),
        };
        Arc::new(Context::new(shared, own).without_jitter())
    }

    /// This process's registry in Prometheus' text format.
    pub fn metrics_text(&self) -> String {
        text(&self.registry)
    }
}

fn text(registry: &Mutex<Registry>) -> String {
    let mut out = String::new();
    let registry = registry.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = encode(&mut out, &registry) {
        panic!("encoding metrics: {e}");
    }
    out
}
