//! Configuration from WorkshopScalingPolicies (the source that survives Babylon's published CRDs,
//! which prune `spec.autoScaling`), ambiguity, and the early releases of a scale-up in flight,
//! against the in-memory API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use ebb_crds::babylon::WorkshopProvision;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::Health;
use ebb_runtime::Shutdown;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::WarmUp;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::queue::Queued;
use jiff::SignedDuration;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use workshop_scaler::reconcile::{CachedProvision, Feeds};
use workshop_scaler::{Related, WorkshopsSeen, relate};

const P: &str = "ansible-101-rhel";

fn standard() -> Value {
    json!({"enabled": true, "threshold": 0.8, "scaleFactor": 1.5, "maxProvisions": 60})
}

fn team_ops() -> Value {
    json!({"matchLabels": {"team": "ops"}})
}

/// A stock-shaped Workshop labelled team=ops (no spec.autoScaling), one provision of 20 without
/// spec.autoScaling, 17 of 20 seats taken.
fn stock() -> Harness {
    let h = Harness::new();
    h.stock_workshop(json!({"team": "ops"}), json!({}));
    h.provision(P, 20, None);
    h.seats(17, 20);
    h
}

fn in_flight_status(from: i32, to: i32) -> Value {
    json!({"autoScalingActive": true, "autoScalingStartedAt": "2026-03-10T09:00:00Z",
           "autoScalingFromCount": from, "autoScalingTargetCount": to})
}

#[tokio::test]
async fn a_policy_scales_a_provision_of_a_stock_workshop() {
    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    let s = h.status(P);
    assert_eq!(s.auto_scaling_active, Some(true));
    assert_eq!(
        (s.auto_scaling_from_count, s.auto_scaling_target_count),
        (Some(20), Some(30))
    );
    assert_eq!(h.events(), ["ScaledUp"]);
    assert_eq!(h.condition(P, "AutoScalingConfigValid").unwrap().0, "True");
}

/// The policies come from their watch's cache once it has listed; where it never does (the
/// WorkshopScalingPolicy CRD is not installed, or the watch is still listing), they are listed
/// per reconcile, and decide the same.
#[tokio::test]
async fn policies_are_read_from_the_cache_once_it_listed_and_listed_before() {
    let listed = |h: &Harness| {
        h.fake
            .reads()
            .iter()
            .filter(|r| r.path.ends_with("/workshopscalingpolicies"))
            .count()
    };
    for warm in [false, true] {
        let h = stock();
        h.policy("standard", Some(team_ops()), standard());
        let (ctx, mut feeds) = watched_context(&h.fake, &h.clock);
        feeds.workshops.fill(h.fake.list());
        feeds.assignments.fill(h.fake.list());
        feeds.claims.fill(h.fake.list());
        if warm {
            // The cache is what is read: a policy it holds counts even where the API server no
            // longer has it (its deletion's event not yet seen).
            feeds
                .policies
                .fill(h.fake.list::<Guarded<WorkshopScalingPolicy>>());
            assert!(h.fake.remove::<WorkshopScalingPolicy>(NS, "standard"));
        }
        h.fake.clear_requests();
        frame::reconcile(guard(h.get(P)), ctx).await.unwrap();
        assert_eq!(listed(&h), usize::from(!warm), "warm: {warm}");
        assert_eq!(h.count(P), 30, "warm: {warm}");
    }
}

#[tokio::test]
async fn an_empty_selector_selects_every_workshop_of_the_namespace_only() {
    let h = stock();
    // Another namespace's policy never applies.
    h.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
        "metadata": {"name": "elsewhere", "namespace": "other"},
        "spec": {"autoScaling": {"enabled": true}},
    }));
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:?}", h.fake.writes());
    h.policy("everything", Some(json!({})), json!({"enabled": true}));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
}

#[tokio::test]
async fn a_policy_selecting_other_labels_writes_nothing() {
    let h = stock();
    h.policy(
        "gold",
        Some(json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]})),
        standard(),
    );
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:?}", h.fake.writes());
    assert_eq!(h.count(P), 20);
}

#[tokio::test]
async fn the_workshops_own_block_overrides_the_policy_where_the_crd_keeps_it() {
    let h = Harness::new();
    // As with Babylon's CRD variant that keeps spec.autoScaling.
    h.fake.insert(json!({
        "apiVersion": API, "kind": "Workshop",
        "metadata": {"name": WORKSHOP, "namespace": NS, "labels": {"team": "ops"}},
        "spec": {"autoScaling": {"maxProvisions": 25}},
    }));
    h.provision(P, 20, None);
    h.seats(17, 20);
    h.policy("standard", Some(team_ops()), standard());
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 25, "the Workshop's maxProvisions wins");
    assert_eq!(h.events(), ["ScaledUp", "ReachedMaxProvisions"]);
}

#[tokio::test]
async fn two_matching_policies_are_reported_and_nothing_scales() {
    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    h.policy(
        "everything",
        None,
        json!({"enabled": true, "maxProvisions": 100}),
    );
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.count_writes(P).len(), 0);
    let (status, reason, message) = h.condition(P, "AutoScalingConfigValid").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "AmbiguousPolicies")
    );
    assert!(message.contains("everything, standard"), "{message}");
    assert_eq!(h.events(), ["AmbiguousPolicies"]);
    let event = &h.replica.events.events()[0];
    assert!(
        event.note.contains("everything, standard"),
        "{}",
        event.note
    );
    assert_eq!(h.status(P).auto_scaling_active, None);
    // Reported once: the same state again writes nothing and publishes nothing.
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events().len(), 1);
    // Resolving the ambiguity (deleting one policy) scales.
    h.fake.remove_json(
        "scaling.ebb.dev/v1alpha1",
        "WorkshopScalingPolicy",
        NS,
        "everything",
    );
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.condition(P, "AutoScalingConfigValid").unwrap().0, "True");
}

#[tokio::test]
async fn provision_disabled_means_no_scaling() {
    let h = Harness::new();
    h.stock_workshop(json!({"team": "ops"}), json!({"provisionDisabled": true}));
    h.provision(P, 20, None);
    h.seats(20, 20);
    h.policy("standard", Some(team_ops()), standard());
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.count_writes(P).len(), 0);
    assert_eq!(
        h.condition(P, "AutoScaling").unwrap().1,
        "ProvisionDisabled"
    );
}

/// A scale-up 20 -> 30 in flight with 20 ready claims and 10 still provisioning.
fn stuck_in_flight(workshop_spec: Value) -> Harness {
    let h = Harness::new();
    h.stock_workshop(json!({"team": "ops"}), workshop_spec);
    h.provision_with_status(P, 30, None, Some(in_flight_status(20, 30)));
    h.seats(30, 30);
    h.policy("standard", Some(team_ops()), standard());
    h.claims(P, "ready", 20, ready());
    h.claims(P, "new", 10, pending());
    h
}

async fn assert_released(h: &Harness, reason: &str) {
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    let s = h.status(P);
    assert_eq!(s.auto_scaling_active, Some(false), "{reason}");
    assert_eq!(s.auto_scaling_from_count, None, "{reason}");
    assert_eq!(
        s.auto_scaling_last_from_count,
        Some(20),
        "{reason}: the guard"
    );
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, reason);
    assert_eq!(h.events(), ["ScaleUpReleased"], "{reason}");
    let spec_writes: Vec<_> = h
        .count_writes(P)
        .into_iter()
        .filter(|r| r.body.as_ref().is_some_and(|b| b.get("spec").is_some()))
        .collect();
    assert!(spec_writes.is_empty(), "{reason}: a release never scales");
}

#[tokio::test]
async fn provisioning_disabled_releases_the_flag_with_a_reason() {
    let h = stuck_in_flight(json!({}));
    h.fake.modify_json(API, "Workshop", NS, WORKSHOP, |w| {
        w["spec"]["provisionDisabled"] = json!(true);
    });
    assert_released(&h, "ProvisionDisabled").await;
}

#[tokio::test]
async fn an_ended_lifespan_releases_the_flag_with_a_reason() {
    let h = stuck_in_flight(
        json!({"lifespan": {"start": "2026-03-10T08:00:00Z", "end": "2026-03-10T08:59:00Z"}}),
    );
    assert_released(&h, "LifespanEnded").await;
}

#[tokio::test]
async fn a_count_lowered_by_someone_releases_the_flag_with_a_reason() {
    let h = stuck_in_flight(json!({}));
    h.fake
        .modify::<WorkshopProvision>(NS, P, |p| p.spec.count = 25);
    assert_released(&h, "CountLowered").await;
    assert_eq!(h.count(P), 25);
}

#[tokio::test]
async fn deleted_claims_release_the_flag_with_a_reason() {
    let h = stuck_in_flight(json!({}));
    for i in 0..10 {
        h.fake.modify_json(
            "poolboy.gpte.redhat.com/v1",
            "ResourceClaim",
            NS,
            &format!("new-{i:02}"),
            |c| {
                c["metadata"]["deletionTimestamp"] = json!("2026-03-10T09:00:00Z");
                c["metadata"]["finalizers"] = json!(["poolboy.gpte.redhat.com"]);
            },
        );
    }
    assert_released(&h, "ClaimsDeleted").await;
}

#[tokio::test]
async fn the_release_annotation_releases_and_is_removed() {
    let h = stuck_in_flight(json!({}));
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.annotations_mut()
            .insert("scaling.ebb.dev/release-scale-up".into(), "true".into());
    });
    assert_released(&h, "ReleaseRequested").await;
    assert!(
        !h.get(P)
            .annotations()
            .contains_key("scaling.ebb.dev/release-scale-up"),
        "the annotation is removed once acted on"
    );
}

#[tokio::test]
async fn a_stale_release_annotation_is_removed_before_a_scale_up() {
    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.annotations_mut()
            .insert("scaling.ebb.dev/release-scale-up".into(), "true".into());
    });
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert!(
        !h.get(P)
            .annotations()
            .contains_key("scaling.ebb.dev/release-scale-up")
    );
    // The scale-up just started is not released by the stale annotation.
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(true));
}

#[tokio::test]
async fn after_activetimeout_stuck_claims_are_reported_not_released() {
    let h = stuck_in_flight(json!({}));
    h.clock.advance(SignedDuration::from_hours(5));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(true));
    let (status, _, message) = h.condition(P, "ClaimsStuck").unwrap();
    assert_eq!(status, "True");
    assert!(message.contains("new-00"), "{message}");
    assert_eq!(h.events(), ["ClaimsStuck"]);
}

#[tokio::test]
async fn a_release_never_allows_a_second_increase_from_the_same_count() {
    // Someone set the count back to where the scale-up started, then it was released by hand:
    // demand is still there, but no second 20 -> 30.
    let h = stuck_in_flight(json!({}));
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.annotations_mut()
            .insert("scaling.ebb.dev/release-scale-up".into(), "true".into());
    });
    h.reconcile(P).await.unwrap();
    h.fake
        .modify::<WorkshopProvision>(NS, P, |p| p.spec.count = 20);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.count_writes(P).len(), 0);
    assert_eq!(
        h.condition(P, "AutoScaling").unwrap().1,
        "AlreadyScaledFrom"
    );
}

/// The provisions' controller of namespace `NS` on the in-memory API, its related watches
/// filling `feeds` (and telling `seen` of the Workshops taken in).
fn provisions_controller(
    h: &Harness,
    feeds: Feeds,
    seen: Option<WorkshopsSeen>,
    shutdown: &Shutdown,
) -> Queued<CachedProvision> {
    let client = h.fake.client();
    let contact = ebb_runtime::ApiContact::new(std::sync::Arc::new(h.clock.clone()));
    let warm_up = WarmUp::new(Health::new(), contact);
    let (controller, lookup) = ebb_runtime::process::app::controller_with_lookup(
        Api::namespaced(client.clone(), NS),
        watcher::Config::default(),
        &warm_up,
        workshop_scaler::provision_keys,
    );
    relate(
        controller,
        &lookup,
        Related {
            assignments: Api::namespaced(client.clone(), NS),
            workshops: Api::namespaced(client.clone(), NS),
            claims: Api::namespaced(client.clone(), NS),
            policies: Api::namespaced(client, NS),
            feeds,
            seen,
        },
        shutdown,
        &ebb_runtime::ApiContact::new(std::sync::Arc::new(h.clock.clone())),
    )
}

/// The real controller on the in-memory API: creating a policy reconciles the provisions of its
/// namespace, which then scale.
#[tokio::test]
async fn a_policy_change_triggers_a_reconcile() {
    let h = stock();
    let shutdown = Shutdown::new();
    let (ctx, feeds) = watched_context(&h.fake, &h.clock);
    let controller = provisions_controller(&h, feeds, None, &shutdown);
    let run = tokio::spawn(frame::run(controller, ctx, |_| {}));
    // Without a policy the provision is reconciled (the policies read) and left alone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !h
        .fake
        .reads()
        .iter()
        .any(|r| r.path.ends_with("/workshopscalingpolicies"))
    {
        assert!(tokio::time::Instant::now() < deadline, "no first reconcile");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(h.count(P), 20);
    assert_eq!(h.fake.write_count(), 0);

    h.policy("standard", Some(team_ops()), standard());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while h.count(P) != 30 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the policy did not trigger a reconcile"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the controller stops on shutdown")
        .unwrap();
}

#[tokio::test]
async fn a_policy_status_lists_its_workshops_and_the_contested_ones() {
    use ebb_crds::workshop_policy::WorkshopScalingPolicy;
    let reconcile_policy =
        |policy: WorkshopScalingPolicy, ctx| frame::reconcile(Arc::new(Guarded(Ok(policy))), ctx);

    let h = stock();
    h.fake.insert(json!({
        "apiVersion": API, "kind": "Workshop",
        "metadata": {"name": "other-workshop", "namespace": NS, "labels": {"team": "dev"}},
        "spec": {},
    }));
    h.policy("standard", Some(team_ops()), standard());
    h.policy("everything", None, json!({"enabled": true}));
    let get = |name: &str| h.fake.get::<WorkshopScalingPolicy>(NS, name).unwrap();
    h.fake.clear_requests();
    for name in ["standard", "everything"] {
        reconcile_policy(get(name), h.replica.ctx()).await.unwrap();
    }
    let everything = get("everything").status.unwrap();
    assert_eq!(everything.workshop_count, Some(2));
    assert_eq!(everything.workshops, [WORKSHOP, "other-workshop"]);
    let ambiguous = &everything.conditions[0];
    assert_eq!(
        (ambiguous.type_.as_str(), ambiguous.status.as_str()),
        ("Ambiguous", "True")
    );
    assert!(
        ambiguous.message.ends_with("ansible-101 (also standard)"),
        "{}",
        ambiguous.message
    );
    let standard = get("standard").status.unwrap();
    assert_eq!(standard.workshops, [WORKSHOP]);
    assert_eq!(standard.conditions[0].status, "True");
    assert_eq!(h.fake.write_count(), 2);
    // Nothing changed: nothing written.
    h.fake.clear_requests();
    reconcile_policy(get("standard"), h.replica.ctx())
        .await
        .unwrap();
    assert_eq!(h.fake.write_count(), 0);
    // The overlap resolved: Ambiguous turns False.
    h.fake.remove_json(
        "scaling.ebb.dev/v1alpha1",
        "WorkshopScalingPolicy",
        NS,
        "everything",
    );
    reconcile_policy(get("standard"), h.replica.ctx())
        .await
        .unwrap();
    let standard = get("standard").status.unwrap();
    assert_eq!(
        (
            standard.conditions[0].status.as_str(),
            standard.conditions[0].reason.as_str()
        ),
        ("False", "Unique")
    );
}

/// The real policy controller on the in-memory API, triggered by the Workshops the provisions'
/// cache takes in: a new Workshop the policy selects appears in its status, read from that cache
/// (the Workshops are watched once, never listed per policy reconcile).
#[tokio::test]
async fn a_new_workshop_reaches_the_policy_status_through_the_cache() {
    use ebb_crds::workshop_policy::WorkshopScalingPolicy;
    use workshop_scaler::policy_controller;

    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    let shutdown = Shutdown::new();
    let (ctx, feeds) = watched_context(&h.fake, &h.clock);
    let (seen, workshops_seen) = futures::channel::mpsc::unbounded();
    let provisions = provisions_controller(&h, feeds, Some(seen), &shutdown);
    let statuses = policy_controller(
        Api::namespaced(h.fake.client(), NS),
        workshops_seen,
        &shutdown,
        &WarmUp::new(
            Health::new(),
            ebb_runtime::ApiContact::new(std::sync::Arc::new(h.clock.clone())),
        ),
    );
    let runs = [
        tokio::spawn(frame::run(provisions, ctx.clone(), |_| {})),
        tokio::spawn(frame::run(statuses, ctx, |_| {})),
    ];
    let listed = || {
        h.fake
            .get::<WorkshopScalingPolicy>(NS, "standard")
            .unwrap()
            .status
            .map(|s| s.workshops)
            .unwrap_or_default()
    };
    let wait_for = |want: Vec<&'static str>| async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while listed() != want {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the policy lists {:?}, not {want:?}",
                listed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    wait_for(vec![WORKSHOP]).await;

    h.fake.insert(json!({
        "apiVersion": API, "kind": "Workshop",
        "metadata": {"name": "zz-late", "namespace": NS, "labels": {"team": "ops"}},
        "spec": {},
    }));
    wait_for(vec![WORKSHOP, "zz-late"]).await;
    // Workshops are only ever watched: no list of them without `watch`, but the watches' own
    // initial lists (one per watch: the cache's).
    let lists = h
        .fake
        .reads()
        .into_iter()
        .filter(|r| r.path.ends_with("/workshops") && !r.query.iter().any(|(k, _)| k == "watch"))
        .count();
    assert_eq!(lists, 1, "Workshops listed by the policy reconcile");
    shutdown.trigger();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the controllers stop on shutdown")
            .unwrap();
    }
}

/// Before the Workshop cache has listed (at startup its watch triggers the policy reconcile
/// while still listing), a policy is looked at again shortly: no error, nothing written.
#[tokio::test]
async fn a_policy_waits_quietly_for_the_workshops_to_be_listed() {
    use ebb_crds::workshop_policy::WorkshopScalingPolicy;
    use ebb_runtime::execute::frame::Requeue;
    use workshop_scaler::policy::COLD_RETRY;

    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    let (ctx, mut feeds) = watched_context(&h.fake, &h.clock);
    let policy = || {
        let policy = h.fake.get::<WorkshopScalingPolicy>(NS, "standard").unwrap();
        Arc::new(Guarded(Ok(policy)))
    };
    h.fake.clear_requests();
    let action = frame::reconcile(policy(), ctx.clone()).await;
    assert_eq!(action.unwrap(), Requeue::After(COLD_RETRY));
    assert_eq!(h.fake.write_count(), 0);

    feeds.workshops.fill(h.fake.list());
    frame::reconcile(policy(), ctx).await.unwrap();
    let status = h
        .fake
        .get::<WorkshopScalingPolicy>(NS, "standard")
        .unwrap()
        .status;
    assert_eq!(status.unwrap().workshops, [WORKSHOP]);
}

/// One WorkshopScalingPolicy that does not decode (its selector a string, as a CRD of another
/// ebb release might store it) beside a good one: the provision scales by the good one as if the
/// bad one were not there.
#[tokio::test]
async fn a_policy_that_does_not_decode_stops_no_other() {
    let h = stock();
    h.policy("standard", Some(team_ops()), standard());
    h.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
        "metadata": {"name": "broken", "namespace": NS},
        "spec": {"workshopSelector": "team=ops", "autoScaling": {"threshold": "high"}},
    }));
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.events(), ["ScaledUp"]);

    // Its own pass (the policies' status controller) reports it on itself, once per version: a
    // Warning Event naming the field; the good policy's status is written as ever.
    let bad: Guarded<WorkshopScalingPolicy> = h.fake.get(NS, "broken").unwrap();
    let bad = Arc::new(bad);
    frame::reconcile(bad.clone(), h.replica.ctx())
        .await
        .unwrap();
    frame::reconcile(bad, h.replica.ctx()).await.unwrap();
    assert_eq!(h.events(), ["ScaledUp", "Malformed"]);
    let event = h.replica.events.events().pop().unwrap();
    assert_eq!(event.reference.name.as_deref(), Some("broken"));
    assert!(
        event.note.contains("spec.autoScaling.threshold"),
        "{}",
        event.note
    );
    let good: Guarded<WorkshopScalingPolicy> = h.fake.get(NS, "standard").unwrap();
    frame::reconcile(Arc::new(good), h.replica.ctx())
        .await
        .unwrap();
    let status = h.fake.get::<WorkshopScalingPolicy>(NS, "standard").unwrap();
    assert_eq!(status.status.unwrap().workshops, [WORKSHOP]);
}
