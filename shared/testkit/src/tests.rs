#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_runtime::clock::ManualClock;
use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

fn deployment(ns: &str, name: &str, replicas: i32, labels: Value) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "namespace": ns, "labels": labels },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": { "metadata": { "labels": { "app": name } } },
        },
    }))
    .unwrap()
}

fn api_code<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn rv<K: kube::Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

fn deployments(client: &Client, ns: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), ns)
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ebb.dev", "v1", "Widget"), "widgets")
}

#[tokio::test]
async fn create_get_and_server_fields() {
    let clock = ManualClock::new("2025-05-01T10:00:00.7Z".parse::<jiff::Timestamp>().unwrap());
    let fake = FakeApi::with_clock(clock.clone());
    let api = deployments(&fake.client(), "shop");

    let created = api
        .create(
            &PostParams::default(),
            &deployment("shop", "web", 1, json!({})),
        )
        .await
        .unwrap();
    let meta = created.metadata.clone();
    assert!(meta.uid.is_some());
    assert_eq!(meta.generation, Some(1));
    assert_eq!(
        ebb_runtime::time::from_k8s_time(meta.creation_timestamp.as_ref().unwrap()),
        "2025-05-01T10:00:00Z".parse::<jiff::Timestamp>().unwrap()
    );
    assert_eq!(api.get("web").await.unwrap(), created);

    let (code, reason) = api_code(
        api.create(
            &PostParams::default(),
            &deployment("shop", "web", 1, json!({})),
        )
        .await,
    );
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));

    let (code, reason) = api_code(api.get("nope").await);
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    assert_eq!(api.get_opt("nope").await.unwrap(), None);

    // The same name in another namespace is another object.
    deployments(&fake.client(), "other")
        .create(
            &PostParams::default(),
            &deployment("other", "web", 1, json!({})),
        )
        .await
        .unwrap();
    assert_eq!(fake.list::<Deployment>().len(), 2);
}

#[tokio::test]
async fn cluster_scoped_and_core_paths() {
    let fake = FakeApi::new();
    let namespaces: Api<Namespace> = Api::all(fake.client());
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "shop" }
    }))
    .unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(namespaces.get("shop").await.unwrap().name_any(), "shop");
    assert_eq!(
        namespaces
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert!(fake.get::<Namespace>("", "shop").is_some());

    let config_maps: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "cfg" }, "data": { "a": "1" }
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let stored = fake.get::<ConfigMap>("shop", "cfg").unwrap();
    assert_eq!(stored.data.unwrap()["a"], "1");
    assert_eq!(stored.metadata.namespace.as_deref(), Some("shop"));
}

#[tokio::test]
async fn list_with_label_selectors() {
    let fake = FakeApi::new();
    fake.insert(deployment(
        "a",
        "web",
        1,
        json!({ "app": "web", "tier": "front" }),
    ));
    fake.insert(deployment(
        "a",
        "db",
        1,
        json!({ "app": "db", "tier": "back" }),
    ));
    fake.insert(deployment("b", "cache", 1, json!({ "app": "cache" })));
    let client = fake.client();

    let names = |api: Api<Deployment>, selector: &'static str| async move {
        let list = api
            .list(&ListParams::default().labels(selector))
            .await
            .unwrap();
        list.items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>()
    };
    let all: Api<Deployment> = Api::all(client.clone());
    assert_eq!(names(all.clone(), "").await, ["db", "web", "cache"]);
    assert_eq!(names(deployments(&client, "a"), "").await, ["db", "web"]);
    assert_eq!(names(all.clone(), "app=web").await, ["web"]);
    assert_eq!(names(all.clone(), "app!=web").await, ["db", "cache"]);
    assert_eq!(
        names(all.clone(), "app in (web,cache)").await,
        ["web", "cache"]
    );
    assert_eq!(names(all.clone(), "app notin (web,cache)").await, ["db"]);
    assert_eq!(names(all.clone(), "tier").await, ["db", "web"]);
    assert_eq!(names(all.clone(), "!tier").await, ["cache"]);
    assert_eq!(names(all.clone(), "app=web,tier=front").await, ["web"]);
    assert_eq!(
        names(all.clone(), "app=web,tier=back").await,
        Vec::<String>::new()
    );

    let (code, _) = api_code(all.list(&ListParams::default().labels("app in web")).await);
    assert_eq!(code, 400);
    let list = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.types.kind, "DeploymentList");
}

#[tokio::test]
async fn merge_patch_with_stale_resource_version_conflicts() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let read = api.get("web").await.unwrap();

    // Someone else changes the object after our read.
    fake.modify::<Deployment>("shop", "web", |d| {
        d.spec.as_mut().unwrap().replicas = Some(5);
    });

    let stale = json!({ "metadata": { "resourceVersion": read.resource_version() }, "spec": { "replicas": 2 } });
    let (code, reason) = api_code(
        api.patch("web", &PatchParams::default(), &Patch::Merge(&stale))
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        fake.get::<Deployment>("shop", "web")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(5)
    );

    let fresh = api.get("web").await.unwrap();
    let current = json!({ "metadata": { "resourceVersion": fresh.resource_version() }, "spec": { "replicas": 2 } });
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&current))
        .await
        .unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(2));
    assert!(rv(&patched) > rv(&fresh));

    // Without a resourceVersion the patch is unconditional.
    let blind = json!({ "spec": { "replicas": 3 } });
    api.patch("web", &PatchParams::default(), &Patch::Merge(&blind))
        .await
        .unwrap();
}

#[tokio::test]
async fn replace_checks_resource_version() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let mut read = api.get("web").await.unwrap();
    fake.modify::<Deployment>("shop", "web", |d| {
        d.metadata.labels = Some([("x".to_owned(), "y".to_owned())].into());
    });
    read.spec.as_mut().unwrap().replicas = Some(4);
    let (code, _) = api_code(api.replace("web", &PostParams::default(), &read).await);
    assert_eq!(code, 409);

    let mut fresh = api.get("web").await.unwrap();
    fresh.spec.as_mut().unwrap().replicas = Some(4);
    let replaced = api
        .replace("web", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(replaced.spec.unwrap().replicas, Some(4));
    assert_eq!(replaced.metadata.uid, fresh.metadata.uid);
}

#[tokio::test]
async fn status_subresource_isolation() {
    let fake = FakeApi::new();
    let api = deployments(&fake.client(), "shop");
    let mut with_status = deployment("shop", "web", 1, json!({}));
    with_status.status = Some(serde_json::from_value(json!({ "replicas": 7 })).unwrap());

    // A create drops status.
    let created = api
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(created.status, None);

    // A write to the main resource leaves status alone.
    let main = json!({ "spec": { "replicas": 2 }, "status": { "replicas": 9 } });
    let after = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&main))
        .await
        .unwrap();
    assert_eq!(after.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(after.status, None);

    // A write to /status changes only status.
    let status = json!({ "spec": { "replicas": 3 }, "metadata": { "labels": { "a": "b" } }, "status": { "replicas": 2 } });
    let after = api
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(after.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(after.metadata.labels, Some(Default::default()));
    assert_eq!(after.status.as_ref().unwrap().replicas, Some(2));
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "status writes do not move the generation"
    );

    // PUT /status likewise.
    let mut put = after.clone();
    put.spec.as_mut().unwrap().replicas = Some(10);
    put.status.as_mut().unwrap().replicas = Some(4);
    let after = api
        .replace_status("web", &PostParams::default(), &put)
        .await
        .unwrap();
    assert_eq!(after.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(after.status.as_ref().unwrap().replicas, Some(4));
    assert_eq!(api.get_status("web").await.unwrap(), after);
}

#[tokio::test]
async fn status_subresource_can_be_switched_off() {
    let fake = FakeApi::new();
    fake.set_status_subresource("ebb.dev", "widgets", false);
    let api: Api<DynamicObject> = Api::namespaced_with(fake.client(), "shop", &widget_resource());
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ebb.dev/v1", "kind": "Widget",
        "metadata": { "name": "w" }, "spec": { "size": 1 }, "status": { "ok": true }
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(created.data["status"], json!({ "ok": true }));
    let patch = json!({ "status": { "ok": false } });
    let after = api
        .patch("w", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(after.data["status"], json!({ "ok": false }));
    let (code, _) = api_code(
        api.patch_status("w", &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    );
    assert_eq!(code, 404);
}

#[tokio::test]
async fn generation_and_resource_version_rules() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let start = api.get("web").await.unwrap();
    assert_eq!(start.metadata.generation, Some(1));

    let labels = json!({ "metadata": { "labels": { "a": "b" } } });
    let labelled = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "metadata changes keep the generation"
    );
    assert!(rv(&labelled) > rv(&start));

    let spec = json!({ "spec": { "replicas": 4 } });
    let scaled = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));

    // A write that changes nothing keeps the resource version (and is still recorded).
    let again = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(rv(&again), rv(&scaled));
    assert_eq!(again, scaled);
    let apply = PatchParams::apply("ebb-test").force();
    let same = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "spec": { "replicas": 4 } });
    let applied = api
        .patch("web", &apply, &Patch::Apply(&same))
        .await
        .unwrap();
    assert_eq!(rv(&applied), rv(&scaled));
    let replaced = api
        .replace("web", &PostParams::default(), &scaled)
        .await
        .unwrap();
    assert_eq!(rv(&replaced), rv(&scaled));
    assert_eq!(fake.write_count(), 5);
}

#[tokio::test]
async fn server_side_apply_merges_and_creates() {
    let fake = FakeApi::new();
    let api: Api<DynamicObject> = Api::namespaced_with(fake.client(), "shop", &widget_resource());
    let params = PatchParams::apply("ebb-widget").force();

    let first = json!({
        "apiVersion": "ebb.dev/v1", "kind": "Widget", "metadata": { "name": "w" },
        "spec": { "size": 1, "color": { "r": 1, "g": 2 } }
    });
    let created = api
        .patch("w", &params, &Patch::Apply(&first))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.metadata.namespace.as_deref(), Some("shop"));

    let second = json!({
        "apiVersion": "ebb.dev/v1", "kind": "Widget", "spec": { "color": { "g": 5 } }
    });
    let merged = api
        .patch("w", &params, &Patch::Apply(&second))
        .await
        .unwrap();
    assert_eq!(
        merged.data["spec"],
        json!({ "size": 1, "color": { "r": 1, "g": 5 } })
    );
    assert_eq!(merged.metadata.generation, Some(2));

    let apply_status =
        json!({ "apiVersion": "ebb.dev/v1", "kind": "Widget", "status": { "phase": "Ready" } });
    let after = api
        .patch_status("w", &params, &Patch::Apply(&apply_status))
        .await
        .unwrap();
    assert_eq!(after.data["status"], json!({ "phase": "Ready" }));

    let write = fake.writes().pop().unwrap();
    assert_eq!(write.patch, Some(PatchKind::Apply));
    assert_eq!(write.query_param("fieldManager"), Some("ebb-widget"));
    assert_eq!(write.query_param("force"), Some("true"));
    assert!(write.path.ends_with("/widgets/w/status"));
    assert_eq!(write.body, Some(apply_status));
}

#[tokio::test]
async fn strategic_merge_and_json_patches() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({ "a": "1", "b": "2" })));
    let api = deployments(&fake.client(), "shop");

    let remove_label = json!({ "metadata": { "labels": { "a": null } } });
    let after = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(&remove_label),
        )
        .await
        .unwrap();
    assert_eq!(after.labels().len(), 1);

    // kube's Patch::Json needs kube's `jsonpatch` feature; send the raw request instead.
    let client = fake.client();
    let json_patch = |ops: Value| {
        http::Request::builder()
            .method(Method::PATCH)
            .uri("/apis/apps/v1/namespaces/shop/deployments/web")
            .header(http::header::CONTENT_TYPE, "application/json-patch+json")
            .body(serde_json::to_vec(&ops).unwrap())
            .unwrap()
    };
    let after: Deployment = client
        .request(json_patch(
            json!([{ "op": "replace", "path": "/spec/replicas", "value": 6 }]),
        ))
        .await
        .unwrap();
    assert_eq!(after.spec.unwrap().replicas, Some(6));

    let failing = json!([{ "op": "test", "path": "/spec/replicas", "value": 1 }]);
    let (code, reason) = api_code(client.request::<Deployment>(json_patch(failing)).await);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));

    let unsupported = http::Request::builder()
        .method(Method::PATCH)
        .uri("/apis/apps/v1/namespaces/shop/deployments/web")
        .header(http::header::CONTENT_TYPE, "text/plain")
        .body(b"{}".to_vec())
        .unwrap();
    let (code, _) = api_code(client.request::<Deployment>(unsupported).await);
    assert_eq!(code, 415);
}

#[tokio::test]
async fn delete_with_and_without_finalizers() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "plain", 1, json!({})));
    let mut held = deployment("shop", "held", 1, json!({}));
    held.metadata.finalizers = Some(vec!["ebb.dev/cleanup".into()]);
    fake.insert(held);
    let api = deployments(&fake.client(), "shop");

    api.delete("plain", &DeleteParams::default()).await.unwrap();
    assert!(fake.get::<Deployment>("shop", "plain").is_none());
    let (code, _) = api_code(api.delete("plain", &DeleteParams::default()).await);
    assert_eq!(code, 404);

    api.delete("held", &DeleteParams::default()).await.unwrap();
    let deleting = fake.get::<Deployment>("shop", "held").unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());

    let release = json!({ "metadata": { "finalizers": null } });
    api.patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert!(fake.get::<Deployment>("shop", "held").is_none());
}

#[tokio::test]
async fn scale_subresource() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 2, json!({})));
    fake.modify::<Deployment>("shop", "web", |d| {
        d.status = Some(serde_json::from_value(json!({ "replicas": 2 })).unwrap());
    });
    let api = deployments(&fake.client(), "shop");
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let status = scale.status.unwrap();
    assert_eq!(
        (status.replicas, status.selector.as_deref()),
        (2, Some("app=web"))
    );

    let patch = json!({ "spec": { "replicas": 5 } });
    let scaled = api
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(5));
    let stored = fake.get::<Deployment>("shop", "web").unwrap();
    assert_eq!(stored.spec.unwrap().replicas, Some(5));
    assert_eq!(stored.metadata.generation, Some(2));

    // A custom resource with a registered scale stanza.
    fake.register_scale(
        "ebb.dev",
        "widgets",
        ScalePaths {
            spec_replicas: ".spec.size".into(),
            status_replicas: ".status.size".into(),
            label_selector: Some(".status.selector".into()),
        },
    );
    fake.insert(json!({
        "apiVersion": "ebb.dev/v1", "kind": "Widget", "metadata": { "name": "w", "namespace": "shop" },
        "spec": { "size": 1 }, "status": { "size": 1, "selector": "app=w" }
    }));
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(fake.client(), "shop", &widget_resource());
    let scale = widgets.get_scale("w").await.unwrap();
    assert_eq!(
        scale.status.as_ref().unwrap().selector.as_deref(),
        Some("app=w")
    );
    let mut put = scale.clone();
    put.spec.as_mut().unwrap().replicas = Some(3);
    widgets
        .replace_scale("w", &PostParams::default(), &put)
        .await
        .unwrap();
    assert_eq!(
        fake.get_json("ebb.dev/v1", "Widget", "shop", "w").unwrap()["spec"]["size"],
        3
    );
    // The Scale carried the old resourceVersion: a second PUT of it is stale.
    let (code, _) = api_code(
        widgets
            .replace_scale("w", &PostParams::default(), &put)
            .await,
    );
    assert_eq!(code, 409);

    let (code, _) = api_code(
        Api::<ConfigMap>::namespaced(fake.client(), "shop")
            .get_scale("cfg")
            .await,
    );
    assert_eq!(code, 404);
}

#[tokio::test]
async fn injected_status_faults() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let patch = json!({ "spec": { "replicas": 2 } });
    let pp = PatchParams::default();

    fake.fail_next(Matcher::patch("/deployments/web"), 409);
    fake.inject(Matcher::patch("/deployments/web"), Fault::Status(500), 2);
    fake.fail_next(Matcher::any("/deployments/web"), 429);

    let codes: Vec<(u16, String)> = vec![
        api_code(api.patch("web", &pp, &Patch::Merge(&patch)).await),
        api_code(api.patch("web", &pp, &Patch::Merge(&patch)).await),
        api_code(api.patch("web", &pp, &Patch::Merge(&patch)).await),
        api_code(api.get("web").await),
    ];
    let codes: Vec<(u16, &str)> = codes.iter().map(|(c, r)| (*c, r.as_str())).collect();
    assert_eq!(
        codes,
        [
            (409, "Conflict"),
            (500, "InternalError"),
            (500, "InternalError"),
            (429, "TooManyRequests")
        ]
    );
    assert_eq!(
        fake.get::<Deployment>("shop", "web")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1)
    );

    // Faults are used up; the next write goes through.
    api.patch("web", &pp, &Patch::Merge(&patch)).await.unwrap();
    let statuses: Vec<Option<u16>> = fake.writes().iter().map(|w| w.status).collect();
    assert_eq!(statuses, [Some(409), Some(500), Some(500), Some(200)]);
    assert_eq!(fake.write_count(), 4);
    assert_eq!(fake.read_count(), 1);
}

#[tokio::test]
async fn injected_timeouts() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let pp = PatchParams::default();

    fake.timeout_next(Matcher::patch("/deployments/web"));
    let err = api
        .patch(
            "web",
            &pp,
            &Patch::Merge(&json!({ "spec": { "replicas": 2 } })),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Service(_)), "{err:?}");
    assert_eq!(
        fake.get::<Deployment>("shop", "web")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1)
    );

    // The write lands but the answer is lost: a retry must cope with the change already made.
    fake.inject(
        Matcher::patch("/deployments/web"),
        Fault::TimeoutAfterApply,
        1,
    );
    let err = api
        .patch(
            "web",
            &pp,
            &Patch::Merge(&json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Service(_)), "{err:?}");
    assert_eq!(
        fake.get::<Deployment>("shop", "web")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3)
    );
    assert_eq!(
        fake.writes().iter().map(|w| w.status).collect::<Vec<_>>(),
        [None, None]
    );
}

#[tokio::test]
async fn hooks_replay_races() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");

    // Another actor scales right after our read.
    fake.after_next(Matcher::get("/deployments/web"), |fake| {
        fake.modify::<Deployment>("shop", "web", |d| {
            d.spec.as_mut().unwrap().replicas = Some(9)
        });
    });
    let read = api.get("web").await.unwrap();
    assert_eq!(read.spec.as_ref().unwrap().replicas, Some(1));
    let ours = json!({ "metadata": { "resourceVersion": read.resource_version() }, "spec": { "replicas": 2 } });
    let (code, _) = api_code(
        api.patch("web", &PatchParams::default(), &Patch::Merge(&ours))
            .await,
    );
    assert_eq!(code, 409);

    // Or just before our write.
    let read = api.get("web").await.unwrap();
    fake.before_next(Matcher::patch("/deployments/web"), |fake| {
        fake.modify_json("apps/v1", "Deployment", "shop", "web", |v| {
            v["metadata"]["labels"] = json!({ "x": "y" })
        });
    });
    let ours = json!({ "metadata": { "resourceVersion": read.resource_version() }, "spec": { "replicas": 2 } });
    let (code, _) = api_code(
        api.patch("web", &PatchParams::default(), &Patch::Merge(&ours))
            .await,
    );
    assert_eq!(code, 409);

    // Hooks run once.
    let read = api.get("web").await.unwrap();
    let ours = json!({ "metadata": { "resourceVersion": read.resource_version() }, "spec": { "replicas": 2 } });
    api.patch("web", &PatchParams::default(), &Patch::Merge(&ours))
        .await
        .unwrap();
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let fake = FakeApi::new();
    fake.insert(deployment("shop", "web", 1, json!({})));
    let api = deployments(&fake.client(), "shop");
    let before = fake.get::<Deployment>("shop", "web").unwrap();
    let pp = PatchParams::default().dry_run();
    let result = api
        .patch(
            "web",
            &pp,
            &Patch::Merge(&json!({ "spec": { "replicas": 8 } })),
        )
        .await
        .unwrap();
    assert_eq!(result.spec.unwrap().replicas, Some(8));
    assert_eq!(fake.get::<Deployment>("shop", "web").unwrap(), before);
    let created = api
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &deployment("shop", "new", 1, json!({})),
        )
        .await
        .unwrap();
    assert_eq!(created.name_any(), "new");
    assert!(fake.get::<Deployment>("shop", "new").is_none());
}

// Collection watches are supported now (see `tests/watch.rs`); a watch of a subresource is
// still refused, as the API server refuses it.
#[tokio::test]
async fn unknown_paths_and_subresource_watches_are_errors() {
    let fake = FakeApi::new();
    let client = fake.client();
    let (code, _) = api_code(
        client
            .request_text(http::Request::get("/version").body(vec![]).unwrap())
            .await,
    );
    assert_eq!(code, 404);
    let watch =
        http::Request::get("/apis/apps/v1/namespaces/shop/deployments/web/status?watch=true")
            .body(vec![])
            .unwrap();
    let (code, _) = api_code(client.request_text(watch).await);
    assert_eq!(code, 405);
}

#[tokio::test]
async fn seeding_helpers() {
    let fake = FakeApi::new();
    let stored = fake.insert(deployment("shop", "web", 1, json!({})));
    assert_eq!(stored["metadata"]["generation"], 1);
    let first_rv = stored["metadata"]["resourceVersion"].clone();

    // A modify that changes nothing changes nothing.
    let same = fake.modify::<Deployment>("shop", "web", |_| {});
    assert_eq!(json!(same.metadata.resource_version), first_rv);
    let scaled = fake.modify::<Deployment>("shop", "web", |d| {
        d.spec.as_mut().unwrap().replicas = Some(2)
    });
    assert_eq!(scaled.metadata.generation, Some(2));

    // Irregular plurals.
    fake.register_plural("Gadget", "gadgetry");
    fake.insert(
        json!({ "apiVersion": "ebb.dev/v1", "kind": "Gadget", "metadata": { "name": "g" } }),
    );
    assert!(fake.get_json("ebb.dev/v1", "Gadget", "", "g").is_some());
    fake.insert_with_plural(
        json!({ "apiVersion": "ebb.dev/v1", "kind": "Mouse", "metadata": { "name": "m", "namespace": "x" } }),
        "mice",
    );
    let mice =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ebb.dev", "v1", "Mouse"), "mice");
    let api: Api<DynamicObject> = Api::namespaced_with(fake.client(), "x", &mice);
    assert_eq!(api.get("m").await.unwrap().name_any(), "m");

    assert!(fake.remove::<Deployment>("shop", "web"));
    assert!(!fake.remove::<Deployment>("shop", "web"));
    assert!(fake.remove_json("ebb.dev/v1", "Gadget", "", "g"));
    assert_eq!(fake.read_count(), 1);
    fake.clear_requests();
    assert!(fake.requests().is_empty());
}

#[test]
#[should_panic(expected = "no kind")]
fn insert_without_kind_is_a_test_bug() {
    FakeApi::new().insert(json!({ "apiVersion": "v1", "metadata": { "name": "x" } }));
}

#[tokio::test]
async fn generate_name() {
    let fake = FakeApi::new();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "shop");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "generateName": "cfg-" }
    }))
    .unwrap();
    let a = api.create(&PostParams::default(), &cm).await.unwrap();
    let b = api.create(&PostParams::default(), &cm).await.unwrap();
    assert!(a.name_any().starts_with("cfg-"));
    assert_ne!(a.name_any(), b.name_any());
}

mod events {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ebb_runtime::execute::events::{EventKind, EventPublisher, EventSink};
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event;
    use kube::Resource;
    use std::sync::Arc;

    fn reference() -> ObjectReference {
        deployment("shop", "web", 1, json!({})).object_ref(&())
    }

    #[tokio::test]
    async fn publisher_creates_events() {
        let fake = FakeApi::new();
        let publisher = EventPublisher::new(fake.client(), "ebb-test");
        publisher
            .publish(&reference(), EventKind::Normal, "Scaled", "Scale", "1 -> 3")
            .await
            .unwrap();
        let events = fake.list::<Event>();
        assert_eq!(events.len(), 1);
        let event = &events[0];
        assert_eq!(event.reason.as_deref(), Some("Scaled"));
        assert_eq!(event.note.as_deref(), Some("1 -> 3"));
        assert_eq!(event.type_.as_deref(), Some("Normal"));
        assert_eq!(event.reporting_controller.as_deref(), Some("ebb-test"));
        assert_eq!(event.metadata.namespace.as_deref(), Some("shop"));
    }

    /// Publishes `reason` about Deployment shop/web (note and action fixed).
    async fn publish(publisher: &EventPublisher, reason: &str) {
        publisher
            .publish(&reference(), EventKind::Normal, reason, "Scale", "")
            .await
            .unwrap();
    }

    fn series_of(fake: &FakeApi, reason: &str) -> Vec<i32> {
        fake.list::<Event>()
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.series.as_ref().map_or(1, |s| s.count))
            .collect()
    }

    #[tokio::test]
    async fn a_repeat_joins_its_series() {
        let fake = FakeApi::new();
        let publisher = EventPublisher::new(fake.client(), "ebb-test");
        publish(&publisher, "Scaled").await;
        publish(&publisher, "Scaled").await;
        publish(&publisher.clone(), "Scaled").await;
        assert_eq!(series_of(&fake, "Scaled"), [3]);
    }

    /// The publisher remembers a bounded number of Events (kube's Recorder alone would keep
    /// every Event of the last six minutes): a repeat after that many others starts a new Event.
    #[tokio::test]
    async fn the_events_remembered_are_bounded() {
        use ebb_runtime::execute::events::EVENTS_REMEMBERED;
        let fake = FakeApi::new();
        let publisher = EventPublisher::new(fake.client(), "ebb-test");
        publish(&publisher, "First").await;
        for i in 1..EVENTS_REMEMBERED - 1 {
            publish(&publisher, &format!("Other{i}")).await;
        }
        // The last of EVENTS_REMEMBERED, and still remembered: the repeat joins the series.
        publish(&publisher, "First").await;
        assert_eq!(series_of(&fake, "First"), [2]);
        // The next ones go to a recorder that starts afresh.
        publish(&publisher, "First").await;
        let mut first = series_of(&fake, "First");
        first.sort_unstable();
        assert_eq!(first, [1, 2], "a new Event once forgotten");
        publish(&publisher, "First").await;
        let mut first = series_of(&fake, "First");
        first.sort_unstable();
        assert_eq!(first, [2, 2], "and its own series from there");
    }

    #[tokio::test]
    async fn publish_failures_do_not_fail_record() {
        let fake = FakeApi::new();
        let publisher = EventPublisher::new(fake.client(), "ebb-test");
        fake.fail_next(Matcher::post("/events"), 500);
        let err = publisher
            .publish(&reference(), EventKind::Warning, "Failed", "Scale", "")
            .await;
        assert!(err.is_err());
        fake.fail_next(Matcher::post("/events"), 403);
        let sink: Arc<dyn EventSink> = Arc::new(publisher);
        sink.record(&reference(), EventKind::Warning, "Failed", "Scale", "")
            .await;
        assert!(fake.list::<Event>().is_empty());
    }

    #[tokio::test]
    async fn recording_events_keeps_everything() {
        let events = RecordingEvents::new();
        let sink: Arc<dyn EventSink> = Arc::new(events.clone());
        sink.record(&reference(), EventKind::Normal, "Scaled", "Scale", "1 -> 3")
            .await;
        sink.record(&reference(), EventKind::Warning, "Invalid", "Validate", "")
            .await;
        assert_eq!(events.reasons(), ["Scaled", "Invalid"]);
        let first = &events.events()[0];
        assert_eq!(first.kind, EventKind::Normal);
        assert_eq!(first.note, "1 -> 3");
        assert_eq!(first.reference.name.as_deref(), Some("web"));
        events.clear();
        assert!(events.events().is_empty());
    }
}

#[test]
fn a_json_patch_null_test_of_a_missing_path_passes_as_on_the_api_server() {
    let mut target = json!({"metadata": {"name": "a"}});
    let patch = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}
    ]);
    crate::store::apply_patch(&mut target, PatchKind::Json, &patch).unwrap();
    assert_eq!(target["metadata"]["finalizers"], json!(["x"]));
    // A null test of a path that exists still fails, as it does there.
    let again = json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]);
    assert!(crate::store::apply_patch(&mut target, PatchKind::Json, &again).is_err());
}
