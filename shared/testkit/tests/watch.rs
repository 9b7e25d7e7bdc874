//! `FakeApi` watches through kube's own client (`Api::watch`), checked against kube-apiserver's
//! semantics: resume from a resourceVersion, start from the current state, selector
//! transitions, 410 expiry, bookmarks, timeouts, faults and closing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_testkit::{FakeApi, Fault, Matcher};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

type Events<K> = BoxStream<'static, kube::Result<WatchEvent<K>>>;

fn config_map(ns: &str, name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name, "namespace": ns, "labels": labels },
        "data": { "v": "0" },
    }))
    .unwrap()
}

async fn watch<K>(api: &Api<K>, wp: &WatchParams, version: &str) -> Events<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    api.watch(wp, version).await.unwrap().boxed()
}

/// The next event, failing the test if none comes within a (paused-time-friendly) while.
async fn next<K>(events: &mut Events<K>) -> WatchEvent<K> {
    tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("no watch event within 5 s")
        .expect("the watch ended")
        .unwrap()
}

/// Asserts no event is ready now (without waiting for time to pass).
async fn quiet<K>(events: &mut Events<K>) {
    tokio::task::yield_now().await;
    assert!(
        futures::FutureExt::now_or_never(events.next()).is_none(),
        "unexpected watch event"
    );
}

/// `(TYPE, name, resourceVersion)` of an object event.
fn summary(event: &WatchEvent<ConfigMap>) -> (&'static str, String, String) {
    let (kind, obj) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        other => panic!("expected an object event, got {other:?}"),
    };
    (kind, obj.name_any(), obj.resource_version().unwrap())
}

fn set_data(fake: &FakeApi, ns: &str, name: &str, value: &str) -> String {
    fake.modify::<ConfigMap>(ns, name, |cm| {
        cm.data = Some([("v".to_owned(), value.to_owned())].into());
    })
    .resource_version()
    .unwrap()
}

fn no_bookmarks() -> WatchParams {
    WatchParams::default().disable_bookmarks()
}

#[tokio::test]
async fn watch_from_a_resource_version_replays_later_changes_then_follows() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let created = api
        .create(&PostParams::default(), &config_map("shop", "a", json!({})))
        .await
        .unwrap();
    let from = created.resource_version().unwrap();

    let rv_modified = set_data(&fake, "shop", "a", "1");
    let b = fake.insert(config_map("shop", "b", json!({})));
    fake.insert(config_map("other", "elsewhere", json!({})));
    api.delete("a", &Default::default()).await.unwrap();
    let rv_deleted = fake.resource_version();

    let mut events = watch(&api, &no_bookmarks(), &from).await;
    assert_eq!(
        summary(&next(&mut events).await),
        ("MODIFIED", "a".into(), rv_modified)
    );
    assert_eq!(
        summary(&next(&mut events).await),
        (
            "ADDED",
            "b".into(),
            b["metadata"]["resourceVersion"].as_str().unwrap().into()
        )
    );
    // A deletion carries the object's last state, stamped with the deletion's version.
    let deleted = next(&mut events).await;
    assert_eq!(summary(&deleted), ("DELETED", "a".into(), rv_deleted));
    let WatchEvent::Deleted(last) = deleted else {
        unreachable!()
    };
    assert_eq!(last.data.unwrap()["v"], "1");
    quiet(&mut events).await;

    // Then it follows new changes, of this namespace only.
    fake.insert(config_map("other", "x", json!({})));
    let c = api
        .create(&PostParams::default(), &config_map("shop", "c", json!({})))
        .await
        .unwrap();
    assert_eq!(
        summary(&next(&mut events).await),
        ("ADDED", "c".into(), c.resource_version().unwrap())
    );
    quiet(&mut events).await;

    // Across namespaces, from the same version, both namespaces show.
    let all: Api<ConfigMap> = Api::all(fake.client());
    let mut everywhere = watch(&all, &no_bookmarks(), &from).await;
    let mut names = Vec::new();
    for _ in 0..6 {
        names.push(summary(&next(&mut everywhere).await).1);
    }
    assert_eq!(names, ["a", "b", "elsewhere", "a", "x", "c"]);
    quiet(&mut everywhere).await;
}

#[tokio::test]
async fn watch_from_zero_or_unset_starts_with_the_current_state() {
    let fake = FakeApi::new();
    fake.insert(config_map("shop", "b", json!({})));
    fake.insert(config_map("shop", "a", json!({})));
    set_data(&fake, "shop", "a", "1");
    fake.insert(config_map("other", "c", json!({})));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    for (version, value) in [("0", "first"), ("", "second")] {
        let mut events = watch(&api, &no_bookmarks(), version).await;
        let a = summary(&next(&mut events).await);
        let b = summary(&next(&mut events).await);
        assert_eq!((a.0, a.1.as_str()), ("ADDED", "a"), "from {version:?}");
        assert_eq!((b.0, b.1.as_str()), ("ADDED", "b"), "from {version:?}");
        quiet(&mut events).await;
        set_data(&fake, "shop", "b", value);
        assert_eq!(summary(&next(&mut events).await).0, "MODIFIED");
    }
}

#[tokio::test]
async fn label_selector_transitions_are_added_and_deleted() {
    let fake = FakeApi::new();
    fake.insert(config_map("shop", "web", json!({ "app": "web" })));
    fake.insert(config_map("shop", "db", json!({ "app": "db" })));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let from = fake.resource_version();
    let mut events = watch(&api, &no_bookmarks().labels("app=web"), &from).await;

    // A change to a selected object: MODIFIED.
    set_data(&fake, "shop", "web", "1");
    assert_eq!(summary(&next(&mut events).await).0, "MODIFIED");

    // Leaving the selection: DELETED, with the last state the watcher could see.
    let left = fake
        .modify::<ConfigMap>("shop", "web", |cm| {
            cm.labels_mut().insert("app".into(), "gone".into());
        })
        .resource_version()
        .unwrap();
    let event = next(&mut events).await;
    assert_eq!(summary(&event), ("DELETED", "web".into(), left));
    let WatchEvent::Deleted(last) = event else {
        unreachable!()
    };
    assert_eq!(last.labels()["app"], "web");

    // Changes outside the selection are not seen.
    set_data(&fake, "shop", "web", "2");
    set_data(&fake, "shop", "db", "2");
    quiet(&mut events).await;

    // Entering it: ADDED.
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "app": "web" } } })),
    )
    .await
    .unwrap();
    let event = next(&mut events).await;
    assert_eq!(summary(&event).0, "ADDED");
    assert_eq!(summary(&event).1, "db");

    // Deleting a selected object: DELETED.
    api.delete("db", &Default::default()).await.unwrap();
    assert_eq!(summary(&next(&mut events).await).0, "DELETED");
    quiet(&mut events).await;
}

#[tokio::test]
async fn field_selectors_on_name_and_namespace() {
    let fake = FakeApi::new();
    let all: Api<ConfigMap> = Api::all(fake.client());
    let mut by_name = watch(&all, &no_bookmarks().fields("metadata.name=web"), "").await;
    let mut by_namespace =
        watch(&all, &no_bookmarks().fields("metadata.namespace!=shop"), "").await;

    fake.insert(config_map("shop", "web", json!({})));
    fake.insert(config_map("shop", "db", json!({})));
    fake.insert(config_map("other", "web", json!({})));

    let first = next(&mut by_name).await;
    let second = next(&mut by_name).await;
    let namespaces: Vec<_> = [first, second]
        .iter()
        .map(|e| match e {
            WatchEvent::Added(cm) => (cm.name_any(), cm.namespace().unwrap()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        namespaces,
        [
            ("web".into(), "shop".into()),
            ("web".into(), "other".into())
        ]
    );
    quiet(&mut by_name).await;
    let event = next(&mut by_namespace).await;
    assert_eq!(summary(&event).1, "web");
    quiet(&mut by_namespace).await;

    // Lists take field selectors too.
    let listed = all
        .list(&ListParams::default().fields("metadata.namespace=shop,metadata.name!=web"))
        .await
        .unwrap();
    assert_eq!(
        listed
            .items
            .iter()
            .map(|c| c.name_any())
            .collect::<Vec<_>>(),
        ["db"]
    );

    // A field the fake does not model is refused, as the API server refuses unknown labels.
    let err = all
        .watch(&no_bookmarks().fields("data.v=0"), "0")
        .await
        .err()
        .unwrap();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(status.message, "field label not supported: data.v");

    // A watch of one object by path is a watch selecting it by name.
    let client = fake.client();
    let request =
        http::Request::get("/api/v1/namespaces/shop/configmaps/db?watch=1&resourceVersion=0")
            .body(vec![])
            .unwrap();
    let mut one = client
        .request_events::<ConfigMap>(request)
        .await
        .unwrap()
        .boxed();
    assert_eq!(summary(&next(&mut one).await).1, "db");
    set_data(&fake, "shop", "web", "1");
    quiet(&mut one).await;
    set_data(&fake, "shop", "db", "1");
    assert_eq!(summary(&next(&mut one).await), {
        let rv = fake.resource_version();
        ("MODIFIED", "db".to_owned(), rv)
    });
}

#[tokio::test]
async fn a_too_old_resource_version_ends_the_stream_with_410() {
    let fake = FakeApi::new();
    fake.set_watch_history(2);
    for name in ["a", "b", "c", "d", "e"] {
        fake.insert(config_map("shop", name, json!({})));
    }
    // Revisions 1..=5 were made; 4 and 5 are kept, so watches may resume from 3 on.
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let mut events = watch(&api, &no_bookmarks(), "1").await;
    match next(&mut events).await {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert_eq!(
                status.status,
                Some(kube::core::response::StatusSummary::Failure)
            );
            assert_eq!(status.message, "too old resource version: 1 (3)");
        }
        other => panic!("expected a 410 ERROR, got {other:?}"),
    }
    assert!(events.next().await.is_none(), "the stream ends after a 410");
    assert_eq!(fake.requests().last().unwrap().status, Some(200));

    let mut events = watch(&api, &no_bookmarks(), "3").await;
    assert_eq!(summary(&next(&mut events).await).1, "d");
    assert_eq!(summary(&next(&mut events).await).1, "e");

    // A watcher that falls further behind than the history reaches is expired too.
    let mut slow = watch(&api, &no_bookmarks(), &fake.resource_version()).await;
    for name in ["f", "g", "h"] {
        fake.insert(config_map("shop", name, json!({})));
    }
    assert!(matches!(next(&mut slow).await, WatchEvent::Error(s) if s.code == 410));
    assert!(slow.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn bookmarks_on_request_and_on_an_interval() {
    let fake = FakeApi::new();
    fake.set_bookmark_interval(None);
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let mut with = watch(&api, &WatchParams::default(), "0").await;
    let mut without = watch(&api, &no_bookmarks(), "0").await;

    fake.insert(config_map("shop", "a", json!({})));
    fake.insert(config_map("other", "b", json!({})));
    fake.send_bookmarks();
    assert_eq!(summary(&next(&mut with).await).1, "a");
    // The bookmark comes after the events, with the version of the latest change anywhere.
    match next(&mut with).await {
        WatchEvent::Bookmark(bookmark) => {
            assert_eq!(bookmark.metadata.resource_version, fake.resource_version());
            assert_eq!(
                (
                    bookmark.types.api_version.as_str(),
                    bookmark.types.kind.as_str()
                ),
                ("v1", "ConfigMap")
            );
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    quiet(&mut with).await;
    assert_eq!(summary(&next(&mut without).await).1, "a");
    quiet(&mut without).await;

    // Periodic bookmarks, on Tokio's (here paused) clock.
    fake.set_bookmark_interval(Some(Duration::from_secs(30)));
    let mut periodic = watch(&api, &WatchParams::default(), &fake.resource_version()).await;
    quiet(&mut periodic).await;
    tokio::time::advance(Duration::from_secs(29)).await;
    quiet(&mut periodic).await;
    // Paused time jumps straight to each due bookmark.
    let before = tokio::time::Instant::now();
    let bookmark = periodic.next().await.unwrap().unwrap();
    assert!(matches!(bookmark, WatchEvent::Bookmark(_)), "{bookmark:?}");
    assert_eq!(before.elapsed(), Duration::from_secs(1));
    let bookmark = periodic.next().await.unwrap().unwrap();
    assert!(matches!(bookmark, WatchEvent::Bookmark(_)), "{bookmark:?}");
    assert_eq!(before.elapsed(), Duration::from_secs(31));
}

#[tokio::test(start_paused = true)]
async fn timeout_seconds_ends_the_stream() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let start = tokio::time::Instant::now();
    let mut events = watch(&api, &no_bookmarks().timeout(7), "0").await;
    assert_eq!(fake.open_watches(), 1);
    assert!(events.next().await.is_none());
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    assert_eq!(fake.open_watches(), 0);
    let request = &fake.requests()[0];
    assert!(request.is_watch());
    assert_eq!(request.query_param("timeoutSeconds"), Some("7"));

    // Without timeoutSeconds, the server's default applies.
    let request = http::Request::get("/api/v1/namespaces/shop/configmaps?watch=true")
        .body(vec![])
        .unwrap();
    let start = tokio::time::Instant::now();
    let mut events = fake
        .client()
        .request_events::<ConfigMap>(request)
        .await
        .unwrap()
        .boxed();
    assert!(events.next().await.is_none());
    assert_eq!(start.elapsed(), ebb_testkit::DEFAULT_WATCH_TIMEOUT);
}

#[tokio::test]
async fn injected_faults_apply_to_watch_requests() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    fake.fail_next(Matcher::get("/configmaps"), 500);
    fake.inject(Matcher::get("/configmaps"), Fault::Timeout, 1);
    let failed = api.watch(&no_bookmarks(), "0").await.err().unwrap();
    assert!(
        matches!(&failed, kube::Error::Api(s) if s.code == 500),
        "{failed:?}"
    );
    let timed_out = api.watch(&no_bookmarks(), "0").await.err().unwrap();
    assert!(
        matches!(timed_out, kube::Error::Service(_)),
        "{timed_out:?}"
    );
    assert_eq!(fake.open_watches(), 0);

    // Faults used up, the next watch works; every attempt was recorded as a watch.
    let mut events = watch(&api, &no_bookmarks(), "0").await;
    fake.insert(config_map("shop", "a", json!({})));
    assert_eq!(summary(&next(&mut events).await).1, "a");
    let statuses: Vec<_> = fake
        .requests()
        .iter()
        .filter(|r| r.is_watch())
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [Some(500), None, Some(200)]);

    // `Matcher::watch` fails the watch but not a list of the same path.
    fake.fail_next(Matcher::watch("/configmaps"), 503);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let failed = api.watch(&no_bookmarks(), "0").await.err().unwrap();
    assert!(
        matches!(&failed, kube::Error::Api(s) if s.code == 503),
        "{failed:?}"
    );

    // Hooks run around watch requests as around any other.
    fake.before_next(Matcher::get("/configmaps"), |fake| {
        fake.insert(config_map("shop", "raced", json!({})));
    });
    let mut events = watch(&api, &no_bookmarks(), "0").await;
    let names: Vec<_> = [next(&mut events).await, next(&mut events).await]
        .iter()
        .map(|e| summary(e).1)
        .collect();
    assert_eq!(names, ["a", "raced"]);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_watch() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let first = watch(&api, &no_bookmarks(), "0").await;
    let mut second = watch(&api, &no_bookmarks(), "0").await;
    assert_eq!(fake.open_watches(), 2);
    drop(first);
    assert_eq!(fake.open_watches(), 1);
    // The remaining watch is unaffected.
    fake.insert(config_map("shop", "a", json!({})));
    assert_eq!(summary(&next(&mut second).await).1, "a");
    drop(second);
    assert_eq!(fake.open_watches(), 0);
}

#[tokio::test]
async fn metadata_watches_and_lists_get_partial_objects() {
    let fake = FakeApi::new();
    fake.insert(config_map("shop", "a", json!({ "app": "web" })));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");

    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(
        list.metadata.resource_version,
        Some(fake.resource_version())
    );
    let item = &list.items[0];
    assert_eq!(item.metadata.name.as_deref(), Some("a"));
    let types = item.types.as_ref().unwrap();
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );

    let mut events = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        WatchEvent::Added(meta) => {
            assert_eq!(meta.metadata.labels.unwrap()["app"], "web");
            assert_eq!(meta.types.unwrap().kind, "PartialObjectMetadata");
        }
        other => panic!("{other:?}"),
    }

    // The raw line has no data: only the metadata view is sent.
    let request = http::Request::get("/api/v1/namespaces/shop/configmaps/a")
        .header(
            http::header::ACCEPT,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .body(vec![])
        .unwrap();
    let text = fake.client().request_text(request).await.unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(raw.get("data"), None);
    assert_eq!(raw["metadata"]["name"], "a");
}

#[tokio::test]
async fn cluster_scoped_watches_and_send_initial_events() {
    let fake = FakeApi::new();
    let namespaces: Api<Namespace> = Api::all(fake.client());
    fake.insert(json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "shop" } }));
    let mut events = namespaces
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap().unwrap().unwrap(),
        WatchEvent::Added(ns) if ns.name_any() == "shop"
    ));
    // The initial events end with an annotated bookmark, as with the WatchList feature.
    match events.next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(bookmark) => {
            assert_eq!(
                bookmark.metadata.annotations["k8s.io/initial-events-end"],
                "true"
            );
            assert_eq!(bookmark.metadata.resource_version, fake.resource_version());
        }
        other => panic!("{other:?}"),
    }
    fake.insert(json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "web" } }));
    assert!(matches!(
        events.next().await.unwrap().unwrap(),
        WatchEvent::Added(ns) if ns.name_any() == "web"
    ));

    // Without resourceVersionMatch=NotOlderThan it is refused, as on the API server.
    let request = http::Request::get(
        "/api/v1/namespaces?watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
    )
    .body(vec![])
    .unwrap();
    let err = fake
        .client()
        .request_events::<Namespace>(request)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 400));
}

#[tokio::test]
async fn bad_resource_versions_are_rejected() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let err = api.watch(&no_bookmarks(), "abc").await.err().unwrap();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 400));
    // A version from the future waits for it: only later changes are sent.
    let ahead = (fake.resource_version().parse::<u64>().unwrap() + 2).to_string();
    let mut events = watch(&api, &no_bookmarks(), &ahead).await;
    fake.insert(config_map("shop", "a", json!({})));
    fake.insert(config_map("shop", "b", json!({})));
    quiet(&mut events).await;
    fake.insert(config_map("shop", "c", json!({})));
    assert_eq!(summary(&next(&mut events).await).1, "c");
}
