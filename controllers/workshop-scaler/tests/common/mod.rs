//! Fixtures for reconciler tests: a FakeApi seeded with Babylon objects, a ManualClock, recorded
//! Events, and helpers that read back what the reconciler did.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use ebb_crds::babylon::{WorkshopProvision, WorkshopProvisionStatus};
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::execute::frame;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::{Leader, ManualClock};
use ebb_testkit::{FakeApi, Matcher, RecordedRequest, RecordingEvents, utc};
use jiff::Timestamp;
use serde_json::{Value, json};
use workshop_scaler::CONTROLLER_NAME;
use workshop_scaler::metrics::Metrics;
use workshop_scaler::reconcile::{
    CachedProvision, CachedSeat, CachedWorkshop, Caches, Context, Feeds, Own,
};

/// What a reconcile through the frame fails with.
pub type Error = frame::Error<workshop_scaler::reconcile::Error>;

pub const NS: &str = "babylon-user-ops";
pub const WORKSHOP: &str = "ansible-101";
pub const API: &str = "babylon.gpte.redhat.com/v1";

const T0: &str = "2026-03-10T09:00:00Z";

pub fn t0() -> Timestamp {
    utc(T0)
}

/// One controller process: its own context, Events and metrics over the shared fake API.
pub struct Replica {
    ctx: Arc<Context>,
    /// What the watches would have put in the context's caches by now: filled from the fake
    /// (unrecorded) whenever the context is handed out.
    feeds: Mutex<Feeds>,
    fake: FakeApi,
    pub events: RecordingEvents,
    process: ebb_testkit::Replica,
}

impl Replica {
    /// The context for a reconcile, its caches holding what the fake holds now (as if the
    /// watches had caught up).
    pub fn ctx(&self) -> Arc<Context> {
        let mut feeds = self.feeds.lock().unwrap();
        feeds.workshops.fill(self.fake.list::<CachedWorkshop>());
        feeds.assignments.fill(self.fake.list::<CachedSeat>());
        feeds
            .claims
            .fill(self.fake.list::<Guarded<ResourceClaim>>());
        feeds
            .policies
            .fill(self.fake.list::<Guarded<WorkshopScalingPolicy>>());
        self.ctx.clone()
    }
}

/// The shared harness (`fake`, `clock`, through `Deref`) and the replica under test.
pub struct Harness {
    kit: ebb_testkit::Harness,
    pub replica: Replica,
    pub dry_run: bool,
}

impl Deref for Harness {
    type Target = ebb_testkit::Harness;

    fn deref(&self) -> &ebb_testkit::Harness {
        &self.kit
    }
}

impl Harness {
    pub fn new() -> Self {
        Self::with_dry_run(false)
    }

    pub fn with_dry_run(dry_run: bool) -> Self {
        let kit = ebb_testkit::Harness::new(T0, CONTROLLER_NAME);
        let replica = replica(&kit.fake, &kit.clock, dry_run);
        Self {
            kit,
            replica,
            dry_run,
        }
    }

    /// A fresh process (after a crash or restart): new context, same cluster.
    pub fn restart(&mut self) {
        self.replica = replica(&self.fake, &self.clock, self.dry_run);
    }

    pub fn events(&self) -> Vec<String> {
        self.replica.events.reasons()
    }

    // --- seeding ---

    pub fn workshop(&self, auto_scaling: Option<Value>) {
        let mut spec = json!({"displayName": "Ansible 101"});
        if let Some(a) = auto_scaling {
            spec["autoScaling"] = a;
        }
        self.fake.insert(json!({
            "apiVersion": API, "kind": "Workshop",
            "metadata": {"name": WORKSHOP, "namespace": NS},
            "spec": spec,
        }));
    }

    /// A Workshop as a stock Babylon cluster stores it: Babylon's CRD prunes `spec.autoScaling`,
    /// so there is none; `labels` select it for policies; `spec` fields merged in (e.g.
    /// `provisionDisabled`, `lifespan`).
    pub fn stock_workshop(&self, labels: Value, spec: Value) {
        let mut full = json!({"displayName": "Ansible 101"});
        for (k, v) in spec.as_object().into_iter().flatten() {
            full[k] = v.clone();
        }
        self.fake.insert(json!({
            "apiVersion": API, "kind": "Workshop",
            "metadata": {"name": WORKSHOP, "namespace": NS, "labels": labels},
            "spec": full,
        }));
    }

    /// A WorkshopScalingPolicy in the namespace.
    pub fn policy(&self, name: &str, selector: Option<Value>, auto_scaling: Value) {
        let mut spec = json!({"autoScaling": auto_scaling});
        if let Some(s) = selector {
            spec["workshopSelector"] = s;
        }
        self.fake.insert(json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }));
    }

    pub fn provision(&self, name: &str, count: i32, auto_scaling: Option<Value>) {
        self.provision_with_status(name, count, auto_scaling, None);
    }

    pub fn provision_with_status(
        &self,
        name: &str,
        count: i32,
        auto_scaling: Option<Value>,
        status: Option<Value>,
    ) {
        let mut spec = json!({
            "catalogItem": {"name": "ansible-rhel.prod", "namespace": "babylon-catalog-prod"},
            "count": count, "workshopName": WORKSHOP,
        });
        if let Some(a) = auto_scaling {
            spec["autoScaling"] = a;
        }
        let mut obj = json!({
            "apiVersion": API, "kind": "WorkshopProvision",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        });
        if let Some(s) = status {
            obj["status"] = s;
        }
        self.fake.insert(obj);
    }

    /// `total` seats of the workshop, the first `assigned` of them held by users. Replaces
    /// earlier seats with the same names.
    pub fn seats(&self, assigned: u32, total: u32) {
        for i in 0..total {
            let mut spec =
                json!({"workshopName": WORKSHOP, "resourceClaimName": format!("claim-{i}")});
            if i < assigned {
                spec["assignment"] = json!({"email": format!("user{i}@example.com")});
            }
            self.fake.insert(json!({
                "apiVersion": API, "kind": "WorkshopUserAssignment",
                "metadata": {"name": format!("seat-{i:03}"), "namespace": NS},
                "spec": spec,
            }));
        }
    }

    /// A seat of another workshop (must not count).
    pub fn foreign_seat(&self, name: &str, assigned: bool) {
        let mut spec = json!({"workshopName": "other-workshop", "resourceClaimName": "x"});
        if assigned {
            spec["assignment"] = json!({"email": "x@example.com"});
        }
        self.fake.insert(json!({
            "apiVersion": API, "kind": "WorkshopUserAssignment",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }));
    }

    /// A ResourceClaim of `provision` with the given status.
    pub fn claim(&self, provision: &str, name: &str, status: Value) {
        self.fake.insert(json!({
            "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {"babylon.gpte.redhat.com/workshop-provision": provision}},
            "spec": {},
            "status": status,
        }));
    }

    /// `n` claims `prefix-0..n` of `provision`, all in the same state.
    pub fn claims(&self, provision: &str, prefix: &str, n: usize, status: Value) {
        for i in 0..n {
            self.claim(provision, &format!("{prefix}-{i:02}"), status.clone());
        }
    }

    // --- running ---

    /// One reconcile of `name`, as the controller would run it on a fresh cache.
    pub async fn reconcile(&self, name: &str) -> Result<Requeue, Error> {
        let provision = self.get(name);
        frame::reconcile(guard(provision), self.replica.ctx()).await
    }

    /// One reconcile on a given (possibly stale) copy of the provision.
    pub async fn reconcile_copy(&self, provision: WorkshopProvision) -> Result<Requeue, Error> {
        frame::reconcile(guard(provision), self.replica.ctx()).await
    }

    // --- reading back ---

    pub fn get(&self, name: &str) -> WorkshopProvision {
        self.fake.get::<WorkshopProvision>(NS, name).unwrap()
    }

    pub fn count(&self, name: &str) -> i32 {
        self.get(name).spec.count
    }

    pub fn status(&self, name: &str) -> WorkshopProvisionStatus {
        self.get(name).status.unwrap_or_default()
    }

    pub fn condition(&self, name: &str, type_: &str) -> Option<(String, String, String)> {
        self.status(name)
            .conditions
            .into_iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status, c.reason, c.message))
    }

    /// Successful writes of `spec` (count) of `name`: PATCHes of the object, not of `/status`.
    pub fn count_writes(&self, name: &str) -> Vec<RecordedRequest> {
        self.fake
            .writes_matching(&Matcher::patch(format!("/workshopprovisions/{name}")))
            .into_iter()
            .filter(|r| !r.path.ends_with("/status") && r.succeeded())
            .collect()
    }

    /// Writes of `/status` of `name`, failed ones included.
    pub fn status_writes(&self, name: &str) -> Vec<RecordedRequest> {
        self.fake.writes_matching(&Matcher::patch(format!(
            "/workshopprovisions/{name}/status"
        )))
    }

    pub fn metrics_text(&self) -> String {
        self.replica.process.metrics_text()
    }
}

pub fn replica(fake: &FakeApi, clock: &ManualClock, dry_run: bool) -> Replica {
    replica_with_leader(fake, clock, dry_run, Leader::disabled())
}

/// A replica whose view of leadership is `leader` (e.g. a standby: `Leader::following()`).
pub fn replica_with_leader(
    fake: &FakeApi,
    clock: &ManualClock,
    dry_run: bool,
    leader: Leader,
) -> Replica {
    // Each replica (a restart too) has its own registry and Events.
    let process = ebb_testkit::Replica::new(fake, clock, CONTROLLER_NAME, dry_run, leader);
    replica_of(fake, process)
}

/// A replica talking through `client` (an actor of an explored interleaving).
pub fn replica_with_client(fake: &FakeApi, clock: &ManualClock, client: kube::Client) -> Replica {
    let process =
        ebb_testkit::Replica::new(fake, clock, CONTROLLER_NAME, false, Leader::disabled())
            .with_client(client);
    replica_of(fake, process)
}

/// A process's context whose caches only the returned feeds fill (a controller's watches).
pub fn watched_context(fake: &FakeApi, clock: &ManualClock) -> (Arc<Context>, Feeds) {
    let process =
        ebb_testkit::Replica::new(fake, clock, CONTROLLER_NAME, false, Leader::disabled());
    let mut caches = Caches::default();
    let feeds = caches.scope();
    let ctx = process.context(Own {
        metrics: process.register(Metrics::new),
        caches,
    });
    (ctx, feeds)
}

fn replica_of(fake: &FakeApi, process: ebb_testkit::Replica) -> Replica {
    let mut caches = Caches::default();
    let feeds = Mutex::new(caches.scope());
    let ctx = process.context(Own {
        metrics: process.register(Metrics::new),
        caches,
    });
    Replica {
        ctx,
        feeds,
        fake: fake.clone(),
        events: process.events.clone(),
        process,
    }
}

/// `provision` as the controller's watch hands it over: packed.
pub fn guard(provision: WorkshopProvision) -> Arc<CachedProvision> {
    Arc::new(CachedProvision::pack(provision))
}

/// `status` of a claim that is ready.
pub fn ready() -> Value {
    json!({"ready": true})
}

/// `status` of a claim whose provision job completed (not ready).
pub fn complete() -> Value {
    json!({"ready": false, "resources": [{"name": "r", "state": {
        "spec": {"vars": {"current_state": "started"}},
        "status": {"towerJobs": {"provision": {"completeTimestamp": "2026-03-10T09:20:00Z"}}}}}]})
}

/// `status` of a claim whose resource is in `current_state`.
pub fn in_state(current_state: &str) -> Value {
    json!({"ready": false, "resources": [{"name": "r", "state": {"spec": {"vars": {"current_state": current_state}}}}]})
}

/// `status` of a claim still provisioning.
pub fn pending() -> Value {
    in_state("provisioning")
}

pub fn enabled() -> Value {
    json!({"enabled": true})
}
