//! The caches and the controller configuration against FakeApi's watches: a cache fills from its
//! watch (slimmed), answers only once listed and follows deletions; a controller runs at most
//! `CONCURRENT_RECONCILES` reconciles at once and still reconciles every object.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ebb_runtime::process::app::{self, CONCURRENT_RECONCILES, WarmUp};
use ebb_runtime::watch::cache::Cache;
use ebb_runtime::{ApiContact, Health, SystemClock};
use ebb_testkit::FakeApi;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use serde_json::json;

fn contact() -> ApiContact {
    ApiContact::new(Arc::new(SystemClock))
}

fn config_map(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"a whole copy\": true}",
            "team": "web",
        }},
        "data": {"v": "0"},
    })
}

/// Polls `done` every 10 ms for up to 10 s.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never: {what}");
}

#[tokio::test]
async fn a_cache_fills_from_its_watch_slimmed_and_follows_deletions() {
    let fake = FakeApi::new();
    fake.insert(config_map("one"));
    fake.insert(config_map("two"));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let mut cache = Cache::<ConfigMap>::default();
    let stream = cache
        .scope()
        .watch(api.clone(), watcher::Config::default(), &contact(), |cm| {
            cm.data = None;
        });
    assert!(
        cache.get("shop", "one").is_err(),
        "cold before the watch runs"
    );
    let task = tokio::spawn(stream.for_each(|_| async {}));

    eventually("the cache lists", || cache.in_namespace("shop").is_ok()).await;
    let one = cache.get("shop", "one").unwrap().unwrap();
    assert_eq!(one.metadata.managed_fields, None);
    assert_eq!(
        one.metadata
            .annotations
            .as_ref()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["team"],
        "kubectl's copy is dropped, the rest kept"
    );
    assert_eq!(one.data, None, "trimmed as asked");
    assert_eq!(cache.in_namespace("shop").unwrap().len(), 2);
    assert!(cache.in_namespace("other").unwrap().is_empty());

    api.delete("one", &DeleteParams::default()).await.unwrap();
    eventually("the deletion reaches the cache", || {
        cache.get("shop", "one").unwrap().is_none()
    })
    .await;
    assert_eq!(cache.all().unwrap().len(), 1);
    task.abort();
}

/// What the test reconciler counts: running now, the most at once, finished.
#[derive(Default)]
struct Counters {
    running: AtomicUsize,
    most: AtomicUsize,
    done: AtomicUsize,
}

#[tokio::test]
async fn a_controller_runs_a_bounded_number_of_reconciles_at_once() {
    let fake = FakeApi::new();
    let objects = 4 * usize::from(CONCURRENT_RECONCILES);
    for i in 0..objects {
        fake.insert(config_map(&format!("cm-{i}")));
    }
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let warm_up = WarmUp::new(Health::new(), contact());
    let counters = Arc::new(Counters::default());
    let (controller, queue) =
        app::controller(api, watcher::Config::default(), &warm_up).into_parts();
    let controller = controller
        .run(
            move |cm: Arc<ConfigMap>, c: Arc<Counters>| {
                // The queue hands over the next once one starts (as the frame tells it).
                queue.started(&ebb_runtime::object_key(cm.as_ref()));
                async move {
                    let now = c.running.fetch_add(1, Ordering::SeqCst) + 1;
                    c.most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    c.running.fetch_sub(1, Ordering::SeqCst);
                    c.done.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Infallible>(Action::await_change())
                }
            },
            |_, _, _| Action::await_change(),
            counters.clone(),
        )
        .try_for_each(|_| async { Ok(()) });
    let task = tokio::spawn(controller);
    eventually("every object is reconciled", || {
        counters.done.load(Ordering::SeqCst) >= objects
    })
    .await;
    assert_eq!(
        counters.most.load(Ordering::SeqCst),
        usize::from(CONCURRENT_RECONCILES),
        "as many at once as allowed, and no more"
    );
    task.abort();
}

/// A HolidayCalendar that does not decode (its dates a string, as an older or newer CRD than the
/// controller's might store) beside a good one: the calendar watch still lists, the good one is
/// served, and the bad one is invalid by name with the field that does not fit, for the objects
/// naming it to report. A typed watch failed its whole list at the bad one and stayed cold.
#[tokio::test]
async fn one_calendar_that_does_not_decode_stops_no_other() {
    use ebb_runtime::watch::calendars::CalendarCache;
    use ebb_schedule::ScheduleError;

    let fake = FakeApi::new();
    fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "ch"}, "spec": {"dates": ["2026-12-25"]},
    }));
    fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "broken"}, "spec": {"dates": "2026-12-24"},
    }));
    let shutdown = ebb_runtime::Shutdown::new();
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ebb_runtime::ControllerMetrics::new(&mut registry, "demo");
    let (cache, watch) = CalendarCache::watch(
        &fake.client(),
        &contact(),
        &shutdown,
        metrics.undecodable(CalendarCache::KIND),
    );
    let running = tokio::spawn(watch);
    eventually("the calendar cache lists", || cache.resolve(["ch"]).is_ok()).await;
    let calendars = cache.resolve(["ch", "broken"]).unwrap();
    assert_eq!(calendars.dates("ch").unwrap().len(), 1);
    match calendars.dates("broken") {
        Err(ScheduleError::CalendarInvalid { name, reason }) => {
            assert_eq!(name, "broken");
            assert!(reason.starts_with("spec.dates: invalid type"), "{reason}");
        }
        other => panic!("broken calendar read as {other:?}"),
    }
    // It has no status to say so in: a gauge counts it (and a log line names it).
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(
            "ebb_demo_undecodable_objects{controller=\"demo\",kind=\"HolidayCalendar\"} 1"
        ),
        "{text}"
    );
    shutdown.trigger();
    running.await.unwrap();
}
