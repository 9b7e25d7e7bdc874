//! kube's runtime in-process against `FakeApi`: `watcher` (list, then watch from the list's
//! version, relist after a 410), a reflector store that converges, and a `Controller` that
//! `.owns(...)` a second kind and reconciles on changes to either. Paused Tokio time makes the
//! waiting instant and the watch timeouts (290 s in kube's watcher) happen within the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ebb_testkit::FakeApi;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, reflector};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name, "namespace": "shop", "labels": labels },
        "data": { "v": "0" },
    }))
    .unwrap()
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "namespace": "shop" },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "app": name } },
            "template": { "metadata": { "labels": { "app": name } } },
        },
    }))
    .unwrap()
}

/// A ConfigMap whose controller is `owner`.
fn owned_config_map(name: &str, owner: &Deployment) -> ConfigMap {
    let mut cm = config_map(name, json!({}));
    cm.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
    cm
}

/// Waits until `done` holds, checking every 10 ms of (paused) time, for at most 10 minutes.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

fn describe(event: &Event<ConfigMap>) -> String {
    match event {
        Event::Apply(cm) => format!("Apply {}", cm.name_any()),
        Event::Delete(cm) => format!("Delete {}", cm.name_any()),
        Event::Init => "Init".into(),
        Event::InitApply(cm) => format!("InitApply {}", cm.name_any()),
        Event::InitDone => "InitDone".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn the_watcher_lists_then_watches_and_relists_after_a_410() {
    let fake = FakeApi::new();
    fake.insert(config_map("a", json!({})));
    fake.insert(config_map("b", json!({})));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    let mut take = async |n: usize| {
        let mut seen = Vec::new();
        for _ in 0..n {
            seen.push(match events.next().await.unwrap() {
                Ok(event) => describe(&event),
                Err(err) => format!("Err {err}"),
            });
        }
        seen
    };

    assert_eq!(
        take(4).await,
        ["Init", "InitApply a", "InitApply b", "InitDone"]
    );
    api.create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .unwrap();
    fake.modify::<ConfigMap>("shop", "a", |cm| {
        cm.data = Some([("v".to_owned(), "1".to_owned())].into());
    });
    api.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(take(3).await, ["Apply c", "Apply a", "Delete b"]);
    // The watch started exactly at the list's version, with bookmarks allowed.
    let watches: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].query_param("resourceVersion"), Some("2"));
    assert_eq!(watches[0].query_param("allowWatchBookmarks"), Some("true"));

    // Changes the watcher falls too far behind to replay: the fake says 410 and the watcher lists
    // again from scratch, as against a real API server after a compaction.
    fake.set_watch_history(1);
    fake.insert(config_map("d", json!({})));
    fake.insert(config_map("e", json!({})));
    let seen = take(6).await;
    assert_eq!(
        seen[0],
        "Err error returned by apiserver during watch: too old resource version: 5 (6): Expired"
    );
    assert_eq!(
        seen[1..],
        [
            "Init",
            "InitApply a",
            "InitApply c",
            "InitApply d",
            "InitApply e"
        ]
    );
    assert_eq!(take(1).await, ["InitDone"]);
}

#[tokio::test(start_paused = true)]
async fn a_reflector_store_converges_on_the_selected_objects() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    for i in 0..5 {
        fake.insert(config_map(&format!("seed-{i}"), json!({ "app": "web" })));
    }
    fake.insert(config_map("db", json!({ "app": "db" })));

    let (reader, writer) = reflector::store::<ConfigMap>();
    let config = watcher::Config::default().labels("app=web");
    let stream = reflector::reflector(writer, watcher::watcher(api.clone(), config));
    // Errors (the 410 below) are retried by the watcher itself; drain everything.
    let task = tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.state().len(), 5);

    // Churn through the client and behind its back, including more changes in one go than the
    // history keeps (a 410 and a relist for the reflector) and objects moving in and out of the
    // selection.
    fake.set_watch_history(8);
    for i in 0..20 {
        fake.insert(config_map(&format!("burst-{i}"), json!({ "app": "web" })));
    }
    for i in 0..3 {
        api.delete(&format!("seed-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "app": "web" } } })),
    )
    .await
    .unwrap();
    api.patch(
        "burst-0",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "app": "other" } } })),
    )
    .await
    .unwrap();
    fake.modify::<ConfigMap>("shop", "seed-4", |cm| {
        cm.data = Some([("v".to_owned(), "changed".to_owned())].into());
    });

    let expected = || -> BTreeMap<String, String> {
        fake.list::<ConfigMap>()
            .into_iter()
            .filter(|cm| cm.labels().get("app").map(String::as_str) == Some("web"))
            .map(|cm| (cm.name_any(), cm.resource_version().unwrap()))
            .collect()
    };
    let cached = || -> BTreeMap<String, String> {
        reader
            .state()
            .iter()
            .map(|cm| (cm.name_any(), cm.resource_version().unwrap()))
            .collect()
    };
    eventually("the store matches the API", || cached() == expected()).await;
    assert_eq!(cached().len(), 5 - 3 + 20 - 1 + 1);
    assert!(cached().contains_key("db"));
    assert!(!cached().contains_key("burst-0"));
    // The burst did force a relist.
    let lists = fake
        .requests()
        .iter()
        .filter(|r| r.method == http::Method::GET && !r.is_watch())
        .count();
    assert!(
        lists >= 2,
        "expected a relist after the 410, saw {lists} lists"
    );

    task.abort();
    let _ = task.await;
    assert_eq!(
        fake.open_watches(),
        0,
        "an aborted reflector leaves no watch open"
    );
}

/// What the test controller saw: the name and resourceVersion of each reconciled Deployment.
type Reconciled = Arc<Mutex<Vec<(String, String)>>>;

#[tokio::test(start_paused = true)]
async fn a_controller_reconciles_on_changes_to_owners_and_owned_objects() {
    let fake = FakeApi::new();
    let client = fake.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "shop");
    let reconciled: Reconciled = Arc::default();

    let controller = Controller::new(deployments.clone(), watcher::Config::default())
        .owns(config_maps.clone(), watcher::Config::default())
        .run(
            |web: Arc<Deployment>, seen: Arc<Reconciled>| async move {
                let entry = (web.name_any(), web.resource_version().unwrap_or_default());
                seen.lock().unwrap().push(entry);
                Ok::<_, Infallible>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            Arc::new(reconciled.clone()),
        )
        .try_for_each(|_| async { Ok(()) });
    let task = tokio::spawn(controller);
    let calls = || reconciled.lock().unwrap().clone();
    let count = || calls().len();

    // The owner is created: reconciled at that version.
    let web = deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let created_rv = web.resource_version().unwrap();
    eventually("the new Deployment is reconciled", || {
        calls().contains(&("web".into(), created_rv.clone()))
    })
    .await;

    // The owner changes.
    let scaled = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .unwrap();
    let scaled_rv = scaled.resource_version().unwrap();
    eventually("the updated Deployment is reconciled", || {
        calls().contains(&("web".into(), scaled_rv.clone()))
    })
    .await;

    // An owned object is created, then changed: each time the owner is reconciled again.
    let before = count();
    config_maps
        .create(
            &PostParams::default(),
            &owned_config_map("web-config", &web),
        )
        .await
        .unwrap();
    eventually("creating an owned ConfigMap reconciles its owner", || {
        count() > before
    })
    .await;
    assert_eq!(calls().last().unwrap().0, "web");

    let before = count();
    config_maps
        .patch(
            "web-config",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "v": "1" } })),
        )
        .await
        .unwrap();
    eventually("changing an owned ConfigMap reconciles its owner", || {
        count() > before
    })
    .await;

    // A ConfigMap nobody owns triggers nothing, and ten quiet minutes (watch timeouts, bookmarks,
    // resumed watches) trigger nothing either.
    let before = count();
    fake.insert(config_map("unowned", json!({})));
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(count(), before);

    // After those watch restarts, changes still arrive, and they came through resumed watches:
    // the controller listed each kind once.
    fake.modify::<ConfigMap>("shop", "web-config", |cm| {
        cm.data = Some([("v".to_owned(), "2".to_owned())].into());
    });
    eventually("the resumed owned watch still reconciles", || {
        count() > before
    })
    .await;
    let before = count();
    let relabelled = fake.modify::<Deployment>("shop", "web", |d| {
        d.labels_mut().insert("tier".into(), "front".into());
    });
    eventually("the resumed owner watch still reconciles", || {
        calls().contains(&("web".into(), relabelled.resource_version().unwrap()))
    })
    .await;
    assert!(count() > before);
    let requests = fake.requests();
    let lists = |plural: &str| {
        requests
            .iter()
            .filter(|r| r.path.ends_with(plural) && !r.is_watch() && r.method == http::Method::GET)
            .count()
    };
    let watches = requests.iter().filter(|r| r.is_watch()).count();
    assert_eq!((lists("/deployments"), lists("/configmaps")), (1, 1));
    assert!(
        watches >= 4,
        "watches were resumed after their timeouts: {watches}"
    );

    task.abort();
    let _ = task.await;
    assert_eq!(
        fake.open_watches(),
        0,
        "a stopped controller leaves no watch open"
    );
}

/// `--kube-api-qps 5 --kube-api-burst 2`: two requests go at once, the rest wait their turn at
/// five a second on average; no limit (`--kube-api-qps 0`) holds nothing back.
#[tokio::test(start_paused = true)]
async fn the_client_side_limit_holds_requests_to_its_rate() {
    use ebb_runtime::watch::contact::{ApiRate, rate_layer};
    use k8s_openapi::api::core::v1::ConfigMap;
    let fake = FakeApi::new();
    fake.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}}));
    let rate = ApiRate::new(5, Some(2)).unwrap();
    assert_eq!(rate.window(), std::time::Duration::from_millis(400));
    assert_eq!(ApiRate::new(5, None).unwrap().burst, 10, "twice the QPS");
    assert_eq!(ApiRate::new(0, Some(10)), None, "0: no limit");

    let timed = |client: kube::Client| async move {
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "ns");
        let start = tokio::time::Instant::now();
        for _ in 0..10 {
            api.get("cm").await.unwrap();
        }
        start.elapsed()
    };
    let limited = timed(fake.client_with(&rate_layer(Some(rate)))).await;
    // Ten requests, two a window of 0.4 s: the tenth goes in the fifth window.
    assert!(
        limited >= std::time::Duration::from_millis(1600),
        "ten requests took {limited:?}"
    );
    assert!(
        limited < std::time::Duration::from_millis(2000),
        "{limited:?}"
    );
    let free = timed(fake.client_with(&rate_layer(None))).await;
    assert!(free < std::time::Duration::from_millis(10), "{free:?}");
}
