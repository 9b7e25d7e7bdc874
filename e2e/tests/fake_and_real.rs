//! The same scenarios on `FakeApi` and on kube-apiserver, with the same answers expected. Where
//! they disagreed, the real server was right and the fake was fixed (ebb-testkit's admission.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::{Namespace, cluster};
use ebb_testkit::FakeApi;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt};
use serde_json::json;

fn code(result: Result<impl Sized, kube::Error>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(kube::Error::Api(status)) => status.code.to_string(),
        Err(other) => format!("error: {other}"),
    }
}

/// What a client sees of one scenario, as lines to compare.
/// A 404's shape: a missing object of a served kind names the object in `details`; a kind the
/// server does not serve at all names nothing (what `frame::is_api_missing` tells apart).
fn not_found(result: Result<impl Sized, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => format!(
            "{} details.name={:?}",
            status.code,
            status.details.map(|d| d.name).unwrap_or_default()
        ),
        Ok(_) => "ok".into(),
        Err(other) => format!("error: {other}"),
    }
}

async fn transcript(client: Client, ns: &str) -> Vec<String> {
    let mut out = Vec::new();

    // A kind no CRD serves, and a missing object of a served kind.
    let unserved = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.invalid", "v1", "Thing"),
        "things",
    );
    let things: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &unserved);
    out.push(format!(
        "unserved kind: {}",
        not_found(things.get("x").await)
    ));
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    out.push(format!(
        "missing object: {}",
        not_found(maps.get("nope").await)
    ));

    // An HPA created without metrics or minReplicas: the server's defaults.
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"maxReplicas": 4, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
    }))
    .unwrap();
    let created = hpas.create(&PostParams::default(), &hpa).await.unwrap();
    let spec = created.spec.unwrap();
    out.push(format!(
        "hpa defaults: minReplicas {:?}, metrics {}",
        spec.min_replicas,
        serde_json::to_string(&spec.metrics).unwrap()
    ));

    // A Job whose pod template says nothing of restartPolicy.
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "hook"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    out.push(format!(
        "job without restartPolicy: {}",
        code(jobs.create(&PostParams::default(), &job).await)
    ));

    // A write carrying a stale resourceVersion.
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "cfg"}, "data": {"a": "1"}})).unwrap();
    let first = maps.create(&PostParams::default(), &map).await.unwrap();
    maps.patch(
        "cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2"}})),
    )
    .await
    .unwrap();
    let mut stale = first.clone();
    stale.data = Some([("a".to_owned(), "3".to_owned())].into());
    out.push(format!(
        "replace with a stale resourceVersion: {}",
        code(maps.replace("cfg", &PostParams::default(), &stale).await)
    ));
    let stale_patch =
        json!({"metadata": {"resourceVersion": first.resource_version()}, "data": {"a": "4"}});
    out.push(format!(
        "merge patch with a stale resourceVersion: {}",
        code(
            maps.patch("cfg", &PatchParams::default(), &Patch::Merge(stale_patch))
                .await
        )
    ));
    let unchanged = maps.get("cfg").await.unwrap();
    let again = maps
        .patch(
            "cfg",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .unwrap();
    out.push(format!(
        "a no-op patch keeps the resourceVersion: {}",
        unchanged.resource_version() == again.resource_version()
    ));

    // Server-side apply is an upsert: an object deleted between a controller's read and its
    // apply comes back, even with the read's resourceVersion in the body. Only the read's
    // `metadata.uid` stops it: 409 when the object is gone, 422 (metadata.uid is immutable) when
    // it was recreated.
    let apply = |name: &str, meta: serde_json::Value| {
        let mut body = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"owned": "yes"},
                              "metadata": meta});
        body["metadata"]["name"] = json!(name);
        body
    };
    let ssa = PatchParams::apply("ebb-probe").force();
    for (n, (case, meta)) in [
        ("nothing", json!({})),
        ("its resourceVersion", json!({"resourceVersion": "RV"})),
        ("its uid", json!({"uid": "UID"})),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("gone-{n}");
        let read = maps
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!(
            {"metadata": {"name": name}, "data": {"a": "1"}}))
                .unwrap(),
            )
            .await
            .unwrap();
        let meta = serde_json::from_str(
            &meta
                .to_string()
                .replace("RV", &read.resource_version().unwrap())
                .replace("UID", &read.uid().unwrap()),
        )
        .unwrap();
        maps.delete(&name, &DeleteParams::default()).await.unwrap();
        let answer = code(
            maps.patch(&name, &ssa, &Patch::Apply(apply(&name, meta)))
                .await,
        );
        let back = maps.get_opt(&name).await.unwrap().is_some();
        out.push(format!(
            "apply to a deleted object carrying {case}: {answer}, recreated {back}"
        ));
    }
    let old = maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!(
        {"metadata": {"name": "reborn"}, "data": {"a": "1"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    maps.delete("reborn", &DeleteParams::default())
        .await
        .unwrap();
    maps.create(
        &PostParams::default(),
        &serde_json::from_value(json!(
        {"metadata": {"name": "reborn"}, "data": {"a": "1"}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let answer = match maps
        .patch(
            "reborn",
            &ssa,
            &Patch::Apply(apply("reborn", json!({"uid": old.uid()}))),
        )
        .await
    {
        Err(kube::Error::Api(status)) => format!(
            "{} on {:?}",
            status.code,
            // The fields named (kube-apiserver names metadata.uid twice).
            status.details.map(|d| d
                .causes
                .into_iter()
                .map(|c| c.field)
                .collect::<std::collections::BTreeSet<_>>())
        ),
        other => code(other),
    };
    out.push(format!(
        "apply carrying the uid of an object since recreated: {answer}"
    ));

    // A label-selected watch sees objects move in and out of the selection.
    let selected = ListParams::default().labels("team=a");
    let rv = maps
        .list(&selected)
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = maps
        .watch(&WatchParams::default().labels("team=a"), &rv)
        .await
        .unwrap()
        .boxed();
    let labelled = |team: &str| json!({"metadata": {"labels": {"team": team}}});
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "w", "labels": {"team": "a"}}}))
            .unwrap();
    maps.create(&PostParams::default(), &cm).await.unwrap();
    maps.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    maps.patch("w", &PatchParams::default(), &Patch::Merge(labelled("b")))
        .await
        .unwrap();
    maps.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "2"}})),
    )
    .await
    .unwrap();
    maps.patch("w", &PatchParams::default(), &Patch::Merge(labelled("a")))
        .await
        .unwrap();
    maps.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("watch event in time")
            .unwrap()
            .expect("watch open");
        match event {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.name_any())),
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o.name_any())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.name_any())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => seen.push(format!("ERROR {}", e.code)),
        }
    }
    out.push(format!("label-selected watch: {}", seen.join(", ")));
    out
}

#[tokio::test]
async fn the_fake_answers_as_kube_apiserver_does() {
    let admin = cluster().client().await.unwrap();
    let ns = Namespace::create(&admin, "e2e-fake").await.unwrap();
    let real = transcript(admin, &ns.name).await;
    let fake = FakeApi::new();
    fake.set_served("example.invalid", "things", false);
    let faked = transcript(fake.client(), &ns.name).await;
    println!("kube-apiserver:\n  {}", real.join("\n  "));
    assert_eq!(
        faked, real,
        "FakeApi and kube-apiserver disagree; the real server is right"
    );
}
