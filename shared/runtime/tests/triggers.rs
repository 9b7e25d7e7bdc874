//! `triggers::spec_changes` against FakeApi's watches: a status write passes nothing on; a change
//! of data (generation), of annotations, and a deletion each pass the object on once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_runtime::watch::triggers::spec_changes;
use ebb_testkit::FakeApi;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

async fn next_name(
    stream: &mut (impl Stream<Item = Result<ConfigMap, watcher::Error>> + Unpin),
) -> Option<String> {
    match tokio::time::timeout(Duration::from_millis(300), stream.next()).await {
        Ok(Some(Ok(cm))) => Some(format!(
            "{} g{}",
            cm.metadata.name.unwrap(),
            cm.metadata.generation.unwrap_or_default()
        )),
        Ok(other) => panic!("{other:?}"),
        Err(_) => None,
    }
}

#[tokio::test]
async fn only_new_spec_metadata_and_deleted_objects_pass() {
    let fake = FakeApi::new();
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "policy", "namespace": "ns"}, "data": {"v": "1"}}));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "ns");
    let mut stream = Box::pin(spec_changes(
        api.clone(),
        watcher::Config::default(),
        &ebb_runtime::ApiContact::new(std::sync::Arc::new(ebb_runtime::SystemClock)),
    ));
    assert_eq!(next_name(&mut stream).await.as_deref(), Some("policy g1"));

    let params = PatchParams::default();
    api.patch_status(
        "policy",
        &params,
        &Patch::Merge(json!({"status": {"seen": 1}})),
    )
    .await
    .unwrap();
    assert_eq!(next_name(&mut stream).await, None, "a status write");

    api.patch(
        "policy",
        &params,
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    assert_eq!(next_name(&mut stream).await.as_deref(), Some("policy g2"));

    api.patch(
        "policy",
        &params,
        &Patch::Merge(json!({"metadata": {"annotations": {"paused": "true"}}})),
    )
    .await
    .unwrap();
    assert_eq!(next_name(&mut stream).await.as_deref(), Some("policy g2"));

    api.delete("policy", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(next_name(&mut stream).await.as_deref(), Some("policy g2"));
    assert_eq!(next_name(&mut stream).await, None);
}

/// A relist reports no deletions: what it did not show is forgotten at its end (nothing
/// outlives its object), so the same object shown again later passes as new.
#[tokio::test]
async fn a_relist_forgets_what_it_did_not_show() {
    use kube::runtime::watcher::Event;
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns",
            "uid": format!("uid-{name}"), "generation": 1}}))
        .unwrap()
    };
    let events = vec![
        Event::Init,
        Event::InitApply(cm("a")),
        Event::InitApply(cm("b")),
        Event::InitDone,
        // The watch's history expired and b was deleted meanwhile: the relist shows a alone.
        Event::Init,
        Event::InitApply(cm("a")),
        Event::InitDone,
        Event::Apply(cm("a")),
        Event::Apply(cm("b")),
    ];
    let passed: Vec<String> = ebb_runtime::watch::triggers::spec_changes_of(futures::stream::iter(
        events.into_iter().map(Ok::<_, watcher::Error>),
    ))
    .map(|cm| cm.unwrap().metadata.name.unwrap())
    .collect()
    .await;
    assert_eq!(
        passed,
        ["a", "b", "b"],
        "a unchanged passes once; b, forgotten, again"
    );
}

/// A burst of triggers becomes one of each, passed on a period after the burst's first; a
/// trigger after the burst starts one of its own.
#[tokio::test(start_paused = true)]
async fn a_burst_of_triggers_passes_on_each_once_a_period_after_its_first() {
    let (tx, rx) = futures::channel::mpsc::unbounded::<&str>();
    let mut out = Box::pin(ebb_runtime::watch::triggers::coalesced(
        rx,
        Duration::from_secs(1),
    ));
    let start = tokio::time::Instant::now();
    for namespace in ["shop", "web", "shop", "shop", "web"] {
        tx.unbounded_send(namespace).unwrap();
    }
    assert_eq!(out.next().await, Some("shop"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(out.next().await, Some("web"));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), out.next())
            .await
            .is_err(),
        "each once per burst"
    );
    tx.unbounded_send("shop").unwrap();
    assert_eq!(out.next().await, Some("shop"));
    drop(tx);
    assert_eq!(out.next().await, None);
}
