#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ebb_runtime::Health;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, Context, ReconcileError, Reconciler};
use ebb_runtime::process::app::WarmUp;
use ebb_runtime::watch::guard::Guarded;
use ebb_testkit::{FakeApi, Harness, utc};
use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::watcher;
use serde_json::json;

use super::*;

#[tokio::test(start_paused = true)]
async fn the_clock_follows_paused_tokio_time() {
    let clock = VirtualClock::starting_at(utc("2026-03-10T09:00:00Z"));
    assert_eq!(clock.now(), utc("2026-03-10T09:00:00Z"));
    clock.sleep_until(utc("2026-03-17T09:00:00Z")).await;
    assert_eq!(clock.now(), utc("2026-03-17T09:00:00Z"), "a week, at once");
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

impl ReconcileError for Never {
    fn category(&self) -> &'static str {
        "never"
    }
}

/// Records the instant of each reconcile and comes back an hour later.
#[derive(Default)]
struct Hourly(Mutex<Vec<Timestamp>>);

impl Reconciler<ConfigMap> for Hourly {
    type Error = Never;
    const NAME: &'static str = "hourly";

    async fn reconcile(_: Arc<ConfigMap>, ctx: &Context<Self>) -> Result<Requeue, Never> {
        ctx.own.0.lock().unwrap().push(ctx.clock.now());
        Ok(Requeue::After(Duration::from_secs(3600)))
    }
}

/// The point of the simulator: kube's real Controller, the frame and FakeApi run on virtual
/// time, so a day of hourly requeues takes no wall time and lands on exact instants.
#[tokio::test(start_paused = true)]
async fn a_real_controller_runs_a_virtual_day_on_the_fake() {
    let origin = utc("2026-03-10T09:00:00Z");
    let clock = VirtualClock::starting_at(origin);
    let h = Harness::new("2026-03-10T09:00:00Z", "hourly");
    let fake = FakeApi::with_clock(clock);
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}}));
    let mut shared = h.shared(false);
    shared.client = fake.client();
    shared.clock = Arc::new(clock);
    let ctx = Arc::new(Context::new(shared, Hourly::default()));
    let api: Api<Guarded<ConfigMap>> = Api::all(fake.client());
    let warm_up = WarmUp::new(Health::new(), ctx.contact.clone());
    let controller =
        ebb_runtime::process::app::controller(api, watcher::Config::default(), &warm_up);
    let run = frame::run(controller, ctx.clone(), |_| {});
    let day =
        clock.sleep_until(origin + SignedDuration::from_hours(24) + SignedDuration::from_secs(1));
    futures::select! {
        () = run.fuse() => panic!("the controller ended"),
        () = Box::pin(day).fuse() => {}
    }
    let seen = ctx.own.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 25, "{seen:?}");
    for (i, at) in seen.iter().enumerate() {
        let expected = origin + SignedDuration::from_hours(i as i64);
        assert!(
            at.duration_since(expected).abs() < SignedDuration::from_secs(1),
            "{at} vs {expected}"
        );
    }
}
