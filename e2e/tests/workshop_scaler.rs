//! workshop-scaler as a process against a real API server, on Babylon CRDs shaped like
//! upstream's (e2e/crds/).
//!
//! Babylon's published CRDs prune `spec.autoScaling`: the first test shows it. The scale-up
//! scenario runs twice: on the variant CRDs that carry `spec.autoScaling` as Babylon's auto-scaling
//! pull request adds it, and on the stock CRDs configured by a WorkshopScalingPolicy (the source
//! that survives them). This test binary has a cluster of its own, so replacing the CRDs here
//! touches no other test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::rbac::resource;
use ebb_e2e::{Controller, Setup, cluster, eventually, settle};
use jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::Mutex;

const CHART: &str = "workshop-scaler";
/// The CRDs differ between the two tests; they take turns.
static CRDS: Mutex<()> = Mutex::const_new(());

fn workshop(name: &str) -> Value {
    json!({
        "apiVersion": "babylon.gpte.redhat.com/v1",
        "kind": "Workshop",
        "metadata": {"name": name},
        "spec": {
            "displayName": "Ansible 101",
            "openRegistration": true,
            "autoScaling": {"enabled": true, "threshold": 0.5, "scaleFactor": 1.5, "maxProvisions": 10}
        }
    })
}

fn provision(name: &str, workshop: &str, count: i64) -> Value {
    json!({
        "apiVersion": "babylon.gpte.redhat.com/v1",
        "kind": "WorkshopProvision",
        "metadata": {"name": name},
        "spec": {
            "catalogItem": {"name": "ansible-rhel.prod", "namespace": "babylon-catalog-prod"},
            "count": count,
            "concurrency": 10,
            "startDelay": 10,
            "workshopName": workshop,
            "parameters": {"purpose": "Training"}
        }
    })
}

fn seat(name: &str, workshop: &str, email: Option<&str>) -> Value {
    let mut spec = json!({"workshopName": workshop, "resourceClaimName": format!("claim-{name}")});
    if let Some(email) = email {
        spec["assignment"] = json!({"email": email});
    }
    json!({
        "apiVersion": "babylon.gpte.redhat.com/v1",
        "kind": "WorkshopUserAssignment",
        "metadata": {"name": name},
        "spec": spec
    })
}

async fn install_crds(admin: &kube::Client, variant: bool) {
    // The new schema is in force once a write is pruned by it; the callers check that.
    ebb_e2e::fixtures::babylon_crds(admin, variant)
        .await
        .unwrap();
}

/// On Babylon's published CRDs the API server drops `spec.autoScaling` of a Workshop and a
/// WorkshopProvision, while the status ebb writes is kept.
#[tokio::test]
async fn stock_babylon_crds_prune_spec_auto_scaling() {
    let _crds = CRDS.lock().await;
    let setup = Setup::new(CHART, "e2e-wsp", true, &[]).await.unwrap();
    install_crds(&setup.admin, false).await;
    let workshops: Api<DynamicObject> = Api::namespaced_with(
        setup.admin.clone(),
        &setup.namespace,
        &resource(&setup.admin, "babylon.gpte.redhat.com", "v1", "Workshop")
            .await
            .unwrap(),
    );
    // A plain create (POST) is pruned silently; a server-side apply of the same manifest is
    // refused outright (`.spec.autoScaling: field not declared in schema`).
    let create = |api: Api<DynamicObject>, doc: Value| async move {
        let obj: DynamicObject = serde_json::from_value(doc).unwrap();
        api.create(&PostParams::default(), &obj).await
    };
    let rejected = setup.apply(workshop("ws")).await.unwrap_err();
    assert!(
        format!("{rejected:#}").contains("field not declared in schema"),
        "{rejected:#}"
    );
    let stored = eventually(Duration::from_secs(10), || async {
        let _ = workshops.delete("ws", &Default::default()).await;
        let mut doc = workshop("ws");
        doc["metadata"]["namespace"] = json!(setup.namespace);
        let w = create(workshops.clone(), doc).await.ok()?;
        w.data["spec"]["autoScaling"].is_null().then_some(w)
    })
    .await
    .unwrap();
    assert_eq!(stored.data["spec"]["displayName"], json!("Ansible 101"));
    let provisions: Api<DynamicObject> = Api::namespaced_with(
        setup.admin.clone(),
        &setup.namespace,
        &resource(
            &setup.admin,
            "babylon.gpte.redhat.com",
            "v1",
            "WorkshopProvision",
        )
        .await
        .unwrap(),
    );
    let mut prov = provision("wp", "ws", 2);
    prov["metadata"]["namespace"] = json!(setup.namespace);
    prov["spec"]["autoScaling"] = json!({"enabled": true});
    let stored = create(provisions, prov).await.unwrap();
    assert!(
        stored.data["spec"]["autoScaling"].is_null(),
        "pruned: {:?}",
        stored.data["spec"]
    );
    assert_eq!(stored.data["spec"]["count"], json!(2));
    // status keeps unknown fields: what ebb writes there survives.
    let status = workshops
        .patch_status(
            "ws",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"autoScalingActive": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["autoScalingActive"], json!(true));
}

/// Where the scenario's auto-scaling configuration comes from.
#[derive(Clone, Copy, Debug)]
enum Config {
    /// `Workshop.spec.autoScaling`, on the CRDs of Babylon's auto-scaling pull request.
    WorkshopSpec,
    /// A `WorkshopScalingPolicy` selecting the Workshop by label, on Babylon's published CRDs.
    Policy,
}

/// Seats filling past the threshold scale the provision up exactly once, through the status
/// flag; a `kill -9` right after the flag is written and a restart lose nothing and repeat
/// nothing; the flag holds further scaling while the claims are unsettled.
#[tokio::test]
async fn seats_filling_scale_up_exactly_once_across_a_kill() {
    scale_up_exactly_once(Config::WorkshopSpec).await;
}

/// The same on a stock Babylon cluster, configured by a WorkshopScalingPolicy.
#[tokio::test]
async fn a_policy_scales_a_stock_babylon_workshop_exactly_once_across_a_kill() {
    scale_up_exactly_once(Config::Policy).await;
}

async fn scale_up_exactly_once(config: Config) {
    let _crds = CRDS.lock().await;
    let setup = Setup::new(CHART, "e2e-ws", true, &[]).await.unwrap();
    install_crds(&setup.admin, matches!(config, Config::WorkshopSpec)).await;
    let ns = setup.namespace.clone();
    let admin = setup.admin.clone();
    let provisions: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &ns,
        &resource(&admin, "babylon.gpte.redhat.com", "v1", "WorkshopProvision")
            .await
            .unwrap(),
    );
    match config {
        Config::WorkshopSpec => {
            eventually(Duration::from_secs(10), || async {
                let w = setup.apply(workshop("ws")).await.ok()?;
                w.data["spec"]["autoScaling"]["enabled"].as_bool()
            })
            .await
            .unwrap();
        }
        Config::Policy => {
            let mut stock = workshop("ws");
            stock["spec"].as_object_mut().unwrap().remove("autoScaling");
            stock["metadata"]["labels"] = json!({"ebb.dev/auto-scaling": "standard"});
            eventually(Duration::from_secs(10), || async {
                setup.apply(stock.clone()).await.ok()
            })
            .await
            .unwrap();
            setup
                .apply(json!({
                    "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
                    "metadata": {"name": "standard"},
                    "spec": {
                        "workshopSelector": {"matchLabels": {"ebb.dev/auto-scaling": "standard"}},
                        "autoScaling": {"enabled": true, "threshold": 0.5, "scaleFactor": 1.5, "maxProvisions": 10}
                    }
                }))
                .await
                .unwrap();
        }
    }
    setup.apply(provision("wp", "ws", 2)).await.unwrap();
    for (i, email) in [Some("ada@example.com"), None, None, None]
        .iter()
        .enumerate()
    {
        setup
            .apply(seat(&format!("seat-{i}"), "ws", *email))
            .await
            .unwrap();
    }

    let args = ["--namespace", ns.as_str(), "--leader-election=false"];
    let mut controller = Controller::ready("workshop-scaler", &setup.identity, "ws-0", &args).await;
    let count = |p: &DynamicObject| p.data["spec"]["count"].as_i64();
    let active = |p: &DynamicObject| p.data["status"]["autoScalingActive"].as_bool() == Some(true);

    // 1 of 4 seats taken: below the threshold, nothing happens.
    settle(Duration::from_secs(3), || async {
        let p = provisions.get("wp").await?;
        anyhow::ensure!(
            count(&p) == Some(2) && !active(&p),
            "scaled below the threshold"
        );
        Ok(())
    })
    .await
    .unwrap();

    // 3 of 4: over 0.5. Kill the controller the moment the flag shows.
    for i in [1, 2] {
        setup
            .apply(seat(
                &format!("seat-{i}"),
                "ws",
                Some(&format!("user{i}@example.com")),
            ))
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(15), || async {
        provisions.get("wp").await.ok().filter(|p| active(p))
    })
    .await
    .unwrap_or_else(|e| panic!("never flagged: {e}\n{}", controller.log_tail()));
    controller.kill().unwrap();

    let restarted = Controller::ready("workshop-scaler", &setup.identity, "ws-1", &args).await;
    let scaled = eventually(Duration::from_secs(15), || async {
        provisions
            .get("wp")
            .await
            .ok()
            .filter(|p| count(p) == Some(3))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", restarted.log_tail()));
    assert!(
        active(&scaled),
        "the flag stays while the new claims are unsettled"
    );

    // All four seats taken now, but the scale-up in flight holds any further one.
    setup
        .apply(seat("seat-3", "ws", Some("user3@example.com")))
        .await
        .unwrap();
    settle(Duration::from_secs(5), || async {
        let p = provisions.get("wp").await?;
        anyhow::ensure!(
            count(&p) == Some(3),
            "scaled twice for one trigger: count {:?}",
            count(&p)
        );
        Ok(())
    })
    .await
    .unwrap();
    if let Some(log) = &cluster().audit_log {
        // The kill can land while the first controller's count write is on the wire: the API
        // server may then commit it and still answer 5xx (the request's context ended). Such a
        // write's effect is unknown from the log, but the count above says one increase landed.
        // What must never show is two count writes that both succeeded.
        let since = Timestamp::MIN;
        let count_writes: Vec<ebb_e2e::audit::Entry> =
            ebb_e2e::audit::writes(log, &setup.identity.username(), since)
                .unwrap()
                .into_iter()
                .filter(|e| {
                    e.object_ref.as_ref().is_some_and(|o| {
                        o.resource == "workshopprovisions" && o.subresource.is_none()
                    })
                })
                .collect();
        let code = |e: &ebb_e2e::audit::Entry| e.response_status.as_ref().map_or(0, |s| s.code);
        let succeeded = count_writes.iter().filter(|e| code(e) < 300).count();
        let cut_by_the_kill = count_writes.iter().filter(|e| code(e) >= 500).count();
        let described: Vec<String> = count_writes
            .iter()
            .map(ebb_e2e::audit::Entry::describe)
            .collect();
        assert!(
            succeeded == 1 || (succeeded == 0 && cut_by_the_kill == 1),
            "exactly one count write took effect: {described:#?}"
        );
    }

    // The scale-up's claims (#45): created and seen unsettled, so recorded; then finalized and
    // removed while workshop-scaler is stopped. Back, it releases the flag from the record,
    // naming them, instead of waiting for claims that no longer exist.
    let claims: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &ns,
        &resource(&admin, "poolboy.gpte.redhat.com", "v1", "ResourceClaim")
            .await
            .unwrap(),
    );
    for i in 0..3 {
        setup
            .apply(json!({
                "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
                "metadata": {"name": format!("claim-{i}"),
                             "labels": {"babylon.gpte.redhat.com/workshop-provision": "wp"}},
                "spec": {"resources": [{"provider": {"name": "lab"}}]}
            }))
            .await
            .unwrap();
    }
    let recorded = eventually(Duration::from_secs(15), || async {
        let p = provisions.get("wp").await.ok()?;
        let names = p.data["status"]["autoScalingClaims"].as_array()?.len();
        (names == 3).then_some(p)
    })
    .await
    .unwrap_or_else(|e| panic!("claims never recorded: {e}\n{}", restarted.log_tail()));
    assert!(
        active(&recorded),
        "still in flight: the claims have not settled"
    );
    restarted.stop().await;
    for i in 0..3 {
        claims
            .delete(&format!("claim-{i}"), &Default::default())
            .await
            .unwrap();
    }
    let again = Controller::ready("workshop-scaler", &setup.identity, "ws-2", &args).await;
    // Released with its reason (an Event naming the claims); with every seat taken, demand then
    // starts the next scale-up from 3 at once.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(admin.clone(), &ns);
    let released = eventually(Duration::from_secs(15), || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("ScaleUpReleased")
                && e.message.as_deref().is_some_and(|m| m.contains("claim-0"))
        })
    })
    .await
    .unwrap_or_else(|e| panic!("the flag stuck on gone claims: {e}\n{}", again.log_tail()));
    let message = released.message.unwrap_or_default();
    assert!(message.contains("are gone"), "{message}");
    // The status (from 3) and the count (4) are two writes: wait for both, then for no third.
    eventually(Duration::from_secs(15), || async {
        let p = provisions.get("wp").await.ok()?;
        (p.data["status"]["autoScalingFromCount"] == json!(3) && count(&p) == Some(4)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("no scale-up after the release: {e}\n{}", again.log_tail()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let settled = provisions.get("wp").await.unwrap();
    assert_eq!(count(&settled), Some(4), "one increase from 3, not two");
    again.stop().await;
}
