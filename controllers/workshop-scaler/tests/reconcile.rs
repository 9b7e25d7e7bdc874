//! Reconciler tests against the in-memory API: exact writes, zero writes on no-ops, and every
//! interleaving of races, restarts and faults ending with exactly one increase.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use ebb_crds::babylon::WorkshopProvision;
use ebb_runtime::Leader;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, ReconcileError};
use ebb_testkit::interleave::{Gated, explore};
use ebb_testkit::{Fault, Matcher};
use jiff::SignedDuration;
use serde_json::{Value, json};
use workshop_scaler::reconcile;
use workshop_scaler::reconcile::CachedProvision;

const P: &str = "ansible-101-rhel";

fn status_path() -> Matcher {
    Matcher::patch(format!("/workshopprovisions/{P}/status"))
}

/// Matches PATCHes of the provision itself; status PATCHes also contain this path, so hooks and
/// faults on it are set up only once the status write has passed.
fn object_path() -> Matcher {
    Matcher::patch(format!("/workshopprovisions/{P}"))
}

/// A workshop with auto-scaling on, one provision of 20, 17 of 20 seats taken (85%).
fn demand() -> Harness {
    let h = Harness::new();
    h.workshop(Some(
        json!({"enabled": true, "threshold": 0.8, "scaleFactor": 1.5, "maxProvisions": 60}),
    ));
    h.provision(P, 20, Some(json!({"maxProvisions": 40})));
    h.seats(17, 20);
    h.fake.clear_requests();
    h
}

fn in_flight_status(from: i32, to: i32) -> Value {
    json!({"autoScalingActive": true, "autoScalingStartedAt": "2026-03-10T09:00:00Z",
           "autoScalingFromCount": from, "autoScalingTargetCount": to})
}

/// The one invariant of every race test: the count went 20 -> 30 once, and stays there.
fn assert_scaled_once(h: &Harness) {
    assert_eq!(h.count(P), 30);
    let raises: Vec<Value> = h
        .count_writes(P)
        .into_iter()
        .map(|r| r.body.unwrap()["spec"]["count"].clone())
        .collect();
    assert!(
        raises.iter().all(|c| c == &json!(30)),
        "count writes {raises:?}"
    );
    let s = h.status(P);
    assert_eq!(s.auto_scaling_active, Some(true));
    assert_eq!(
        (s.auto_scaling_from_count, s.auto_scaling_target_count),
        (Some(20), Some(30))
    );
}

// ---------------------------------------------------------------- backward compatibility

#[tokio::test]
async fn disabled_or_absent_autoscaling_writes_nothing_at_all() {
    let cases: Vec<(&str, Option<Value>, Option<Value>)> = vec![
        ("no autoScaling anywhere", None, None),
        (
            "workshop enabled false",
            Some(json!({"enabled": false, "threshold": 0.5})),
            None,
        ),
        (
            "workshop block without enabled",
            Some(json!({"threshold": 0.5})),
            None,
        ),
        (
            "provision disables",
            Some(enabled()),
            Some(json!({"enabled": false})),
        ),
        (
            "invalid but disabled",
            Some(json!({"threshold": 7.0})),
            Some(json!({"maxProvisions": 0})),
        ),
    ];
    for (case, workshop, provision) in cases {
        let h = Harness::new();
        h.workshop(workshop);
        // Full demand, and even a stale flag: nothing may be touched.
        h.provision_with_status(P, 20, provision, Some(json!({"autoScalingActive": true})));
        h.seats(20, 20);
        h.fake.clear_requests();
        let action = h.reconcile(P).await.unwrap();
        assert_eq!(action, Requeue::AwaitChange, "{case}");
        assert_eq!(h.fake.write_count(), 0, "{case}: {:?}", h.fake.writes());
        assert!(h.events().is_empty(), "{case}");
        assert_eq!(h.count(P), 20, "{case}");
    }
}

#[tokio::test]
async fn a_missing_workshop_with_no_provision_block_is_disabled() {
    let h = Harness::new();
    h.provision(P, 20, None);
    h.seats(20, 20);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
}

// ---------------------------------------------------------------- plain decisions

#[tokio::test]
async fn below_threshold_writes_conditions_once_then_nothing() {
    let h = demand();
    h.seats(10, 20);
    h.fake.clear_requests();
    assert_eq!(h.reconcile(P).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(h.fake.write_count(), 1, "conditions only");
    assert_eq!(h.status_writes(P).len(), 1);
    assert_eq!(
        h.condition(P, "AutoScaling"),
        Some((
            "False".into(),
            "BelowThreshold".into(),
            "utilization is below the threshold 80%".into()
        ))
    );
    assert_eq!(h.condition(P, "AutoScalingConfigValid").unwrap().0, "True");
    assert_eq!(h.condition(P, "AtMaxProvisions").unwrap().0, "False");
    assert_eq!(h.condition(P, "ClaimsStuck").unwrap().0, "False");
    assert_eq!(
        h.status(P).auto_scaling_active,
        None,
        "the flag is not invented"
    );

    // No-op: the same state again, and seat churn below the threshold.
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    h.seats(11, 20);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:?}", h.fake.writes());
    assert_eq!(h.count(P), 20);
}

#[tokio::test]
async fn scale_up_writes_the_flag_through_status_then_the_count() {
    let h = demand();
    h.foreign_seat("other-1", false);
    h.foreign_seat("other-2", false);
    let before = h.get(P).metadata.resource_version.unwrap();
    // Capture the version the status write produces: the count write must carry it.
    let after_flag = Arc::new(Mutex::new(String::new()));
    let capture = after_flag.clone();
    h.fake.after_next(status_path(), move |fake| {
        let stored = fake.get::<WorkshopProvision>(NS, P).unwrap();
        *capture.lock().unwrap() = stored.metadata.resource_version.unwrap();
    });

    let action = h.reconcile(P).await.unwrap();

    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    // 1. status subresource, preconditioned on the observed version.
    assert!(
        writes[0]
            .path
            .ends_with(&format!("/workshopprovisions/{P}/status"))
    );
    let mut body = writes[0].body.clone().unwrap();
    let conditions = body["status"]
        .as_object_mut()
        .unwrap()
        .remove("conditions")
        .unwrap();
    assert_eq!(
        body,
        json!({"metadata": {"resourceVersion": before},
               "status": {"autoScalingActive": true, "autoScalingStartedAt": "2026-03-10T09:00:00Z",
                          "autoScalingFromCount": 20, "autoScalingTargetCount": 30}})
    );
    let types: Vec<&str> = conditions
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "AutoScalingConfigValid",
            "AutoScaling",
            "AtMaxProvisions",
            "ClaimsStuck"
        ]
    );
    assert_eq!(conditions[1]["status"], "True");
    assert_eq!(
        conditions[1]["message"],
        "scaling count from 20 to 30; waiting for the provision's ResourceClaims to settle"
    );
    assert_eq!(
        writes[0].query_param("fieldManager"),
        Some("ebb-workshop-scaler")
    );
    // 2. the count, preconditioned on the version the flag write returned.
    assert_eq!(
        writes[1].path,
        format!("/apis/babylon.gpte.redhat.com/v1/namespaces/{NS}/workshopprovisions/{P}")
    );
    assert_eq!(
        writes[1].body,
        Some(
            json!({"metadata": {"resourceVersion": *after_flag.lock().unwrap()}, "spec": {"count": 30}})
        )
    );
    assert!(writes.iter().all(|w| w.succeeded()));

    assert_scaled_once(&h);
    // The only timer: the hold-down deadline (60m, plus a second of slack).
    assert_eq!(action, Requeue::After(Duration::from_secs(3601)));
    assert_eq!(h.events(), ["ScaledUp"]);
    let event = &h.replica.events.events()[0];
    assert_eq!(
        event.note,
        "utilization 85% reached the threshold 80%: scale from 20 to 30"
    );

    let metrics = h.metrics_text();
    for line in [
        "ebb_workshop_scaler_workshop_utilization_ratio{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101\"} 0.85",
        "ebb_workshop_scaler_provision_size{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 20",
        "ebb_workshop_scaler_provision_desired_size{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 30",
        "ebb_workshop_scaler_provision_active{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 1",
        "ebb_workshop_scaler_scale_ups_total{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 1",
        "ebb_workshop_scaler_reconciles_total{controller=\"workshop-scaler\"} 1",
    ] {
        assert!(metrics.contains(line), "missing {line}\n{metrics}");
    }
}

#[tokio::test]
async fn duplicate_deliveries_after_a_scale_up_write_nothing() {
    let h = demand();
    h.reconcile(P).await.unwrap();
    h.fake.clear_requests();
    h.replica.events.clear();
    for _ in 0..3 {
        let action = h.reconcile(P).await.unwrap();
        assert_eq!(action, Requeue::After(Duration::from_secs(3601)));
    }
    // Even more demand changes nothing while the flag is set.
    h.seats(30, 30);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:?}", h.fake.writes());
    assert!(h.events().is_empty());
    assert_scaled_once(&h);
}

#[tokio::test]
async fn at_the_cap_without_demand_the_alert_series_stays_down() {
    let h = demand();
    h.provision(P, 40, Some(json!({"maxProvisions": 40})));
    h.seats(10, 20);
    h.reconcile(P).await.unwrap();
    let text = h.metrics_text();
    assert!(text.contains("ebb_workshop_scaler_provision_at_max{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 1"), "{text}");
    assert!(text.contains("ebb_workshop_scaler_provision_at_max_with_demand{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 0"), "{text}");
}

#[tokio::test]
async fn each_provision_of_the_workshop_scales_independently() {
    let h = demand();
    h.provision("second", 4, None);
    h.reconcile(P).await.unwrap();
    h.reconcile("second").await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.count("second"), 6);
    assert_eq!(h.status("second").auto_scaling_target_count, Some(6));
}

#[tokio::test]
async fn at_the_cap_a_condition_and_an_event_say_so() {
    let h = demand();
    h.provision(P, 40, Some(json!({"maxProvisions": 40})));
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count_writes(P).len(), 0);
    assert_eq!(h.fake.write_count(), 1);
    assert_eq!(h.condition(P, "AtMaxProvisions").unwrap().0, "True");
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, "AtMaxProvisions");
    assert_eq!(h.events(), ["AtMaxProvisions"]);
    assert!(h.metrics_text().contains("ebb_workshop_scaler_provision_at_max{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 1"));
    // 85% of seats taken at the cap: the at-cap alert's series is up.
    assert!(h.metrics_text().contains("ebb_workshop_scaler_provision_at_max_with_demand{controller=\"workshop-scaler\",namespace=\"babylon-user-ops\",name=\"ansible-101-rhel\"} 1"));
    // Nothing more while nothing changes.
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events().len(), 1);
}

#[tokio::test]
async fn a_scale_up_that_reaches_the_cap_reports_it() {
    let h = demand();
    h.provision(P, 30, Some(json!({"maxProvisions": 40})));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 40);
    assert_eq!(h.events(), ["ScaledUp", "ReachedMaxProvisions"]);
    assert_eq!(h.condition(P, "AtMaxProvisions").unwrap().0, "True");
}

#[tokio::test]
async fn an_invalid_block_is_reported_once_and_nothing_else_happens() {
    let h = demand();
    h.provision(P, 20, Some(json!({"threshold": 1.5})));
    h.fake.clear_requests();
    assert_eq!(h.reconcile(P).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(h.fake.write_count(), 1);
    assert_eq!(
        h.condition(P, "AutoScalingConfigValid"),
        Some((
            "False".into(),
            "InvalidConfig".into(),
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5".into()
        ))
    );
    assert_eq!(h.events(), ["InvalidConfig"]);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.count(P), 20);
}

#[tokio::test]
async fn an_invalid_workshop_block_names_its_origin() {
    let h = Harness::new();
    h.workshop(Some(json!({"enabled": true, "scaleFactor": 0.5})));
    h.provision(P, 20, None);
    h.seats(20, 20);
    h.reconcile(P).await.unwrap();
    assert_eq!(
        h.condition(P, "AutoScalingConfigValid").unwrap().2,
        "spec.autoScaling.scaleFactor: must be a finite number > 1, got 0.5 (inherited from the Workshop)"
    );
    assert_eq!(h.count(P), 20);
}

#[tokio::test]
async fn no_seats_no_scaling() {
    let h = Harness::new();
    h.workshop(Some(enabled()));
    h.provision(P, 20, None);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, "NoSeats");
}

// ---------------------------------------------------------------- race safety

#[tokio::test]
async fn conflict_on_the_flag_write_rereads_and_scales_once() {
    let h = demand();
    h.fake.fail_next(status_path(), 409);
    h.reconcile(P).await.unwrap();
    assert_scaled_once(&h);
    assert_eq!(h.count_writes(P).len(), 1);
    assert_eq!(h.status_writes(P).len(), 2, "one 409, one success");
    assert_eq!(h.events(), ["ScaledUp"]);
}

#[tokio::test]
async fn another_reconcile_that_scaled_first_makes_ours_a_no_op() {
    // Replica B completes a whole scale-up between replica A's read and A's flag write.
    let h = demand();
    let stale = h.get(P);
    h.fake.before_next(status_path(), |fake| {
        fake.modify::<WorkshopProvision>(NS, P, |p| {
            p.spec.count = 30;
            let s = p.status.get_or_insert_with(Default::default);
            s.auto_scaling_active = Some(true);
            s.auto_scaling_from_count = Some(20);
            s.auto_scaling_target_count = Some(30);
            s.auto_scaling_started_at = Some(ebb_runtime::to_k8s_time(t0()));
        });
    });
    h.reconcile_copy(stale).await.unwrap();
    assert_eq!(h.count_writes(P).len(), 0, "A never writes the count");
    assert_scaled_once(&h);
    assert!(h.events().is_empty());
}

/// Runs a complete reconcile of a second replica synchronously, from inside a FakeApi hook.
fn run_other_replica(
    fake: &ebb_testkit::FakeApi,
    clock: &ebb_runtime::ManualClock,
) -> Result<Requeue, String> {
    let fake = fake.clone();
    let clock = clock.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let other = replica(&fake, &clock, false);
            let p = fake.get::<WorkshopProvision>(NS, P).unwrap();
            frame::reconcile(guard(p), other.ctx())
                .await
                .map_err(|e| e.to_string())
        })
    })
    .join()
    .unwrap()
}

#[tokio::test]
async fn two_replicas_interleaved_before_the_flag_write_scale_once() {
    let h = demand();
    let (fake, clock) = (h.fake.clone(), h.clock.clone());
    let other = Arc::new(Mutex::new(None));
    let seen = other.clone();
    // B runs in full between A's read and A's flag write.
    h.fake.before_next(status_path(), move |_| {
        *seen.lock().unwrap() = Some(run_other_replica(&fake, &clock));
    });
    let stale = h.get(P);
    h.reconcile_copy(stale).await.unwrap();
    assert!(other.lock().unwrap().as_ref().unwrap().is_ok());
    assert_eq!(h.count_writes(P).len(), 1, "only B raised the count");
    assert_scaled_once(&h);
}

#[tokio::test]
async fn two_replicas_interleaved_between_the_flag_and_the_count_scale_once() {
    let h = demand();
    let (fake, clock) = (h.fake.clone(), h.clock.clone());
    let other = Arc::new(Mutex::new(None));
    let seen = other.clone();
    // B runs in full after A's flag write and before A's count write: B finds the flag with
    // count == from and finishes the scale-up; A's count write then conflicts, A re-reads and
    // finds it applied.
    h.fake.after_next(status_path(), move |_| {
        *seen.lock().unwrap() = Some(run_other_replica(&fake, &clock));
    });
    h.reconcile(P).await.unwrap();
    assert!(other.lock().unwrap().as_ref().unwrap().is_ok());
    assert_eq!(h.count_writes(P).len(), 1);
    let failed: Vec<_> = h
        .fake
        .writes_matching(&object_path())
        .into_iter()
        .filter(|r| !r.path.ends_with("/status") && r.status == Some(409))
        .collect();
    assert_eq!(failed.len(), 1, "A's count write met B's");
    assert_scaled_once(&h);
}

/// Replicas acting on the same stale copy of the provision (each its own process and Events),
/// every way their requests can interleave: each ends with one increase 20 -> 30, and as many
/// `ScaledUp`-style Events as count writes. Two replicas with every request taking turns, so the
/// other replica's whole reconcile lands at every point of one's, its re-read of the flag
/// included; three with their writes taking turns.
async fn replicas_in_every_interleaving(actors: usize, gated: Gated) -> usize {
    let runs = explore(
        actors,
        gated,
        async || {
            let h = demand();
            let stale = h.get(P);
            let fake = h.fake.clone();
            ((h, stale, Mutex::new(Vec::new())), fake)
        },
        async |(h, stale, events): &(Harness, WorkshopProvision, Mutex<Vec<String>>),
               _actor,
               client| {
            let me = replica_with_client(&h.fake, &h.clock, client);
            frame::reconcile(guard(stale.clone()), me.ctx())
                .await
                .unwrap();
            events.lock().unwrap().extend(me.events.reasons());
        },
        |(h, _, events), schedule| {
            assert_eq!(h.count(P), 30, "in\n{schedule}");
            assert_scaled_once(h);
            assert_eq!(
                events.lock().unwrap().len(),
                h.count_writes(P).len(),
                "in\n{schedule}"
            );
        },
    )
    .await;
    eprintln!("{actors} replicas ({gated:?} requests take turns): {runs} interleavings");
    runs
}

#[tokio::test]
async fn two_replicas_in_every_interleaving_of_their_requests_scale_once() {
    // Every ordering of two reconciles of 2-4 requests each (the flag, the count; a conflict
    // adds a re-read and a decision): 8. Workshops, seats, claims and policies come from the
    // caches, so they make no request to interleave (the policies' list made it 32).
    let runs = replicas_in_every_interleaving(2, Gated::All).await;
    assert!(runs >= 8, "{runs}");
}

#[tokio::test]
async fn three_replicas_in_every_interleaving_of_their_writes_scale_once() {
    // Every ordering of three replicas' flag and count writes: 66 (a lost race ends a replica's
    // writing early).
    let runs = replicas_in_every_interleaving(3, Gated::Writes).await;
    assert!(runs > 50, "{runs}");
}

#[tokio::test]
async fn a_conflict_between_the_flag_and_the_scale_finishes_once() {
    // Babylon writes its own status between our flag write and our count write.
    let h = demand();
    h.fake.after_next(status_path(), |fake| {
        fake.modify_json(API, "WorkshopProvision", NS, P, |v| {
            v["status"]["provisionCount"] = json!({"active": 20});
        });
    });
    h.reconcile(P).await.unwrap();
    assert_scaled_once(&h);
    assert_eq!(h.count_writes(P).len(), 1);
    let conflicted = h
        .fake
        .writes()
        .iter()
        .filter(|w| !w.path.ends_with("/status") && w.status == Some(409))
        .count();
    assert_eq!(conflicted, 1, "the first count write met Babylon's change");
    // Babylon's field survived our writes.
    let raw = h.fake.get_json(API, "WorkshopProvision", NS, P).unwrap();
    assert_eq!(raw["status"]["provisionCount"], json!({"active": 20}));
}

#[tokio::test]
async fn a_human_changing_the_count_after_the_flag_is_respected() {
    let h = demand();
    h.fake.after_next(status_path(), |fake| {
        fake.modify::<WorkshopProvision>(NS, P, |p| p.spec.count = 25);
    });
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 25, "never overruled, never scaled on top");
    assert_eq!(h.count_writes(P).len(), 0);
}

#[tokio::test]
async fn a_restart_between_the_flag_and_the_count_finishes_once() {
    let mut h = demand();
    // The process dies after the flag write: model it as the count write never arriving.
    h.fake.after_next(status_path(), |fake| {
        fake.inject(
            Matcher::patch(format!("/workshopprovisions/{P}")),
            Fault::Timeout,
            1,
        )
    });
    let err = h.reconcile(P).await.unwrap_err();
    assert_eq!(err.category(), "write_target");
    assert_eq!(h.count(P), 20);
    assert_eq!(h.status(P).auto_scaling_active, Some(true));

    h.restart();
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(
        h.fake.write_count(),
        1,
        "just the count: {:?}",
        h.fake.writes()
    );
    assert_eq!(
        h.fake.writes()[0].body.as_ref().unwrap()["spec"],
        json!({"count": 30})
    );
    assert_scaled_once(&h);
    assert_eq!(h.events(), ["ScaledUp"]);

    // And again: nothing.
    h.restart();
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
}

#[tokio::test]
async fn a_lost_answer_to_the_count_write_does_not_scale_twice() {
    let mut h = demand();
    h.fake.after_next(status_path(), |fake| {
        fake.inject(
            Matcher::patch(format!("/workshopprovisions/{P}")),
            Fault::TimeoutAfterApply,
            1,
        );
    });
    assert!(h.reconcile(P).await.is_err());
    assert_eq!(h.count(P), 30, "the write landed");
    h.restart();
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_scaled_once(&h);
}

#[tokio::test]
async fn a_lost_answer_to_the_flag_write_finishes_once() {
    let h = demand();
    h.fake.inject(status_path(), Fault::TimeoutAfterApply, 1);
    assert_eq!(h.reconcile(P).await.unwrap_err().category(), "write_status");
    assert_eq!(h.count(P), 20);
    h.reconcile(P).await.unwrap();
    assert_scaled_once(&h);
    assert_eq!(h.count_writes(P).len(), 1);
}

#[tokio::test]
async fn a_500_on_the_flag_write_retries_and_scales_once() {
    let h = demand();
    h.fake.fail_next(status_path(), 500);
    let err = h.reconcile(P).await.unwrap_err();
    assert!(
        matches!(err.inner(), Some(reconcile::Error::Write(w)) if w.category == "write_status"),
        "{err}"
    );
    assert_eq!(h.count(P), 20);
    assert_eq!(h.status(P).auto_scaling_active, None);
    h.reconcile(P).await.unwrap();
    assert_scaled_once(&h);
    assert_eq!(h.count_writes(P).len(), 1);
    assert!(
        h.metrics_text()
            .contains("ebb_workshop_scaler_reconcile_errors_total{controller=\"workshop-scaler\",category=\"write_status\"} 1")
    );
}

#[tokio::test]
async fn a_500_on_the_count_write_retries_and_scales_once() {
    let h = demand();
    h.fake.after_next(status_path(), |fake| {
        fake.fail_next(Matcher::patch(format!("/workshopprovisions/{P}")), 500)
    });
    let err = h.reconcile(P).await.unwrap_err();
    assert!(
        matches!(err.inner(), Some(reconcile::Error::Write(w)) if w.category == "write_target"),
        "{err}"
    );
    h.reconcile(P).await.unwrap();
    h.reconcile(P).await.unwrap();
    assert_scaled_once(&h);
    assert_eq!(h.count_writes(P).len(), 1);
}

#[tokio::test]
async fn a_stale_cache_after_the_scale_up_cannot_scale_again() {
    let h = demand();
    let stale = h.get(P);
    h.reconcile(P).await.unwrap();
    // The watch delivers the old object late: its version precondition fails, we re-read.
    h.fake.clear_requests();
    h.reconcile_copy(stale.clone()).await.unwrap();
    assert_eq!(h.count_writes(P).len(), 0);
    assert_scaled_once(&h);
    // Even after the release, the stale copy cannot start a scale-up from 20.
    h.claims(P, "c", 30, ready());
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(false));
    h.seats(17, 40);
    h.fake.clear_requests();
    h.reconcile_copy(stale).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.count_writes(P).len(), 0);
}

#[tokio::test]
async fn a_standby_replica_decides_nothing_and_writes_nothing() {
    let h = demand();
    let standby = common::replica_with_leader(&h.fake, &h.clock, false, Leader::following());
    let action = frame::reconcile(guard(h.get(P)), standby.ctx())
        .await
        .unwrap();
    assert_eq!(h.fake.write_count(), 0);
    // A standby sets no timer: it reconciles everything when it starts to lead.
    assert_eq!(action, Requeue::AwaitChange);
    assert_eq!(h.count(P), 20);
}

#[tokio::test]
async fn conflicts_that_never_end_give_up_with_an_error() {
    let h = demand();
    h.fake.inject(status_path(), Fault::Status(409), 100);
    let err = h.reconcile(P).await.unwrap_err();
    assert_eq!(err.category(), "conflict");
    assert_eq!(h.count(P), 20);
    let action = frame::error_policy(&*guard(h.get(P)), &err, &h.replica.ctx());
    assert_eq!(action, Requeue::After(Duration::from_secs(1)));
    let action = frame::error_policy(&*guard(h.get(P)), &err, &h.replica.ctx());
    assert_eq!(action, Requeue::After(Duration::from_secs(2)));
}

#[tokio::test]
async fn an_object_without_a_namespace_is_invalid_not_retried() {
    let h = demand();
    let mut p = h.get(P);
    p.metadata.namespace = None;
    let err = h.reconcile_copy(p.clone()).await.unwrap_err();
    // The frame refuses it before the pass: nothing to reconcile without a namespace.
    assert_eq!(err.category(), "invalid_object");
    assert!(matches!(
        err,
        frame::Error::MissingMetadata {
            field: "metadata.namespace",
            ..
        }
    ));
    assert_eq!(
        frame::error_policy(&*guard(p), &err, &h.replica.ctx()),
        Requeue::AwaitChange
    );
}

#[tokio::test]
async fn a_deleted_provision_during_conflicts_ends_quietly() {
    let h = demand();
    h.fake.fail_next(status_path(), 409);
    h.fake.after_next(status_path(), |fake| {
        fake.remove::<WorkshopProvision>(NS, P);
    });
    assert_eq!(h.reconcile(P).await.unwrap(), Requeue::AwaitChange);
}

// ---------------------------------------------------------------- completion-based release

async fn in_flight_with_claims(claims: &[(&str, Value)]) -> Harness {
    let h = Harness::new();
    h.workshop(Some(enabled()));
    h.provision_with_status(P, 3, None, Some(in_flight_status(2, 3)));
    h.seats(3, 3);
    for (name, status) in claims {
        h.claim(P, name, status.clone());
    }
    h.fake.clear_requests();
    h
}

#[tokio::test]
async fn release_when_every_claim_is_ready_complete_failed_or_cancelled() {
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        (
            "ready",
            vec![("a", ready()), ("b", ready()), ("c", ready())],
        ),
        (
            "complete",
            vec![("a", complete()), ("b", complete()), ("c", ready())],
        ),
        (
            "failed",
            vec![
                ("a", in_state("provision-failed")),
                ("b", ready()),
                ("c", complete()),
            ],
        ),
        (
            "provision-error",
            vec![
                ("a", in_state("provision-error")),
                ("b", ready()),
                ("c", ready()),
            ],
        ),
        (
            "cancelled",
            vec![
                ("a", in_state("provision-cancelled")),
                ("b", ready()),
                ("c", ready()),
            ],
        ),
    ];
    for (case, claims) in cases {
        let h = in_flight_with_claims(&claims).await;
        assert_eq!(
            h.reconcile(P).await.unwrap(),
            Requeue::AwaitChange,
            "{case}"
        );
        let writes = h.fake.writes();
        assert_eq!(writes.len(), 1, "{case}: {writes:?}");
        let status = &writes[0].body.as_ref().unwrap()["status"];
        assert_eq!(status["autoScalingActive"], json!(false), "{case}");
        for cleared in [
            "autoScalingStartedAt",
            "autoScalingFromCount",
            "autoScalingTargetCount",
        ] {
            assert_eq!(status[cleared], Value::Null, "{case}: {cleared}");
        }
        let s = h.status(P);
        assert_eq!(s.auto_scaling_active, Some(false), "{case}");
        assert_eq!(
            (s.auto_scaling_started_at, s.auto_scaling_from_count),
            (None, None),
            "{case}"
        );
        assert_eq!(
            h.condition(P, "AutoScaling").unwrap().1,
            "ClaimsSettled",
            "{case}"
        );
        assert_eq!(h.events(), ["ScaleUpComplete"], "{case}");
        assert_eq!(h.count(P), 3, "{case}: a release never scales");
    }
}

#[tokio::test]
async fn a_claim_whose_status_cannot_be_read_holds_the_flag() {
    let h = in_flight_with_claims(&[
        ("a", ready()),
        ("b", json!({"ready": "yes"})),
        ("c", ready()),
    ])
    .await;
    h.reconcile(P).await.unwrap();
    assert_eq!(
        h.status(P).auto_scaling_active,
        Some(true),
        "fail-safe: not released"
    );
    assert_eq!(h.count(P), 3);
}

#[tokio::test]
async fn a_malformed_seat_is_not_counted_and_does_not_stop_scaling() {
    let h = demand();
    // No resourceClaimName: Babylon's schema would refuse it, but an older object may hold it.
    h.fake.insert(json!({
        "apiVersion": API, "kind": "WorkshopUserAssignment",
        "metadata": {"name": "broken", "namespace": NS},
        "spec": {"workshopName": WORKSHOP, "assignment": {"email": "x@example.com"}},
    }));
    h.reconcile(P).await.unwrap();
    assert_eq!(
        h.count(P),
        30,
        "17 of 20 readable seats: scaled as without it"
    );
}

#[tokio::test]
async fn a_provision_that_does_not_deserialize_is_left_alone_and_the_others_served() {
    let h = demand();
    let broken = json!({
        "apiVersion": API, "kind": "WorkshopProvision",
        "metadata": {"name": "broken", "namespace": NS},
        "spec": {"workshopName": WORKSHOP, "count": "many"},
    });
    h.fake.insert(broken.clone());
    h.fake.clear_requests();
    let broken: CachedProvision = serde_json::from_value(broken).unwrap();
    assert!(!broken.fits());
    let action = frame::reconcile(Arc::new(broken), h.replica.ctx())
        .await
        .unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    assert_eq!(h.fake.write_count(), 0);

    let healthy = CachedProvision::pack(h.get(P));
    frame::reconcile(Arc::new(healthy), h.replica.ctx())
        .await
        .unwrap();
    assert_eq!(h.count(P), 30);
}

#[tokio::test]
async fn pending_claims_hold_the_flag_until_the_deadline() {
    let h = in_flight_with_claims(&[("a", ready()), ("b", pending()), ("c", ready())]).await;
    h.clock.set(t0() + SignedDuration::from_mins(20));
    let action = h.reconcile(P).await.unwrap();
    // Requeue at the hold-down deadline: 40 minutes left.
    assert_eq!(action, Requeue::After(Duration::from_secs(40 * 60 + 1)));
    assert_eq!(h.status(P).auto_scaling_active, Some(true));
    assert_eq!(h.condition(P, "ClaimsStuck").unwrap().0, "False");
}

#[tokio::test]
async fn claims_not_yet_created_hold_the_flag() {
    // All existing claims settled, but the provision asks for 3 and only 2 exist.
    let h = in_flight_with_claims(&[("a", ready()), ("b", ready())]).await;
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(true));
}

/// The claims a scale-up waits for are recorded when first seen; claims finalized and removed
/// while workshop-scaler was not running (nothing saw them settle or go) then release the flag
/// from the record, naming them. Before, the provision waited forever for claims that no longer
/// existed.
#[tokio::test]
async fn claims_finalized_while_nobody_looked_release_the_flag_from_the_record() {
    let h = in_flight_with_claims(&[("a", ready()), ("b", pending()), ("c", pending())]).await;
    h.reconcile(P).await.unwrap();
    let status = h.status(P);
    assert_eq!(status.auto_scaling_active, Some(true));
    assert_eq!(status.auto_scaling_claims, ["a", "b", "c"]);
    // Nothing new: the next pass writes nothing.
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert!(h.fake.writes().is_empty(), "{:?}", h.fake.writes());

    // b and c settle and are finalized away while the controller is scaled to 0.
    for name in ["b", "c"] {
        assert!(
            h.fake
                .remove_json("poolboy.gpte.redhat.com/v1", "ResourceClaim", NS, name)
        );
    }
    h.reconcile(P).await.unwrap();
    let status = h.status(P);
    assert_eq!(status.auto_scaling_active, Some(false));
    assert!(status.auto_scaling_claims.is_empty());
    let (state, reason, _) = h.condition(P, "AutoScaling").unwrap();
    assert_eq!((state.as_str(), reason.as_str()), ("False", "ClaimsGone"));
    assert_eq!(h.events(), ["ScaleUpReleased"]);
    assert_eq!(h.count(P), 3, "a release never scales");
}

#[tokio::test]
async fn claims_owned_by_reference_count_too() {
    let h = in_flight_with_claims(&[("a", ready()), ("b", ready())]).await;
    let uid = h.get(P).metadata.uid.unwrap();
    h.fake.insert(json!({
        "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
        "metadata": {"name": "owned", "namespace": NS, "ownerReferences": [
            {"apiVersion": API, "kind": "WorkshopProvision", "name": P, "uid": uid}]},
        "spec": {}, "status": {"ready": false},
    }));
    // Another provision's claim does not count.
    h.claim("someone-else", "foreign", pending());
    h.clock.set(t0() + SignedDuration::from_hours(2));
    h.reconcile(P).await.unwrap();
    assert_eq!(
        h.condition(P, "ClaimsStuck").unwrap().2,
        "claims have not settled within activeTimeout: unsettled: owned"
    );
    h.fake.modify_json(
        "poolboy.gpte.redhat.com/v1",
        "ResourceClaim",
        NS,
        "owned",
        |v| v["status"]["ready"] = json!(true),
    );
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(false));
}

#[tokio::test]
async fn stuck_claims_are_reported_without_clearing_or_scaling() {
    let h = in_flight_with_claims(&[
        ("a", ready()),
        ("stuck-2", pending()),
        ("stuck-1", in_state("new")),
    ])
    .await;
    h.seats(3, 3);
    h.clock.set(t0() + SignedDuration::from_mins(61));
    let action = h.reconcile(P).await.unwrap();
    assert_eq!(
        action,
        Requeue::AwaitChange,
        "event-driven from here: no timer"
    );
    assert_eq!(h.fake.write_count(), 1, "{:?}", h.fake.writes());
    assert_eq!(
        h.condition(P, "ClaimsStuck"),
        Some((
            "True".into(),
            "ActiveTimeoutExceeded".into(),
            "claims have not settled within activeTimeout: unsettled: stuck-1, stuck-2".into()
        ))
    );
    assert_eq!(
        h.status(P).auto_scaling_active,
        Some(true),
        "the flag stays"
    );
    assert_eq!(h.count(P), 3, "no scaling on its own");
    assert_eq!(h.events(), ["ClaimsStuck"]);
    assert_eq!(
        h.replica.events.events()[0].kind,
        ebb_runtime::EventKind::Warning
    );
    // Reported once.
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    // They settle: released, ClaimsStuck back to False.
    h.claim(P, "stuck-1", ready());
    h.claim(P, "stuck-2", in_state("provision-failed"));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(false));
    assert_eq!(h.condition(P, "ClaimsStuck").unwrap().0, "False");
}

#[tokio::test]
async fn a_custom_active_timeout_moves_the_deadline() {
    let h = Harness::new();
    h.workshop(Some(json!({"enabled": true, "activeTimeout": "10m"})));
    h.provision_with_status(P, 3, None, Some(in_flight_status(2, 3)));
    h.claims(P, "c", 3, pending());
    h.clock.set(t0() + SignedDuration::from_mins(9));
    assert_eq!(
        h.reconcile(P).await.unwrap(),
        Requeue::After(Duration::from_secs(61))
    );
    h.clock.set(t0() + SignedDuration::from_mins(10));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.condition(P, "ClaimsStuck").unwrap().0, "True");
}

#[tokio::test]
async fn a_flag_set_by_someone_else_is_reported_when_claims_hang() {
    let h = Harness::new();
    h.workshop(Some(enabled()));
    h.provision_with_status(P, 2, None, Some(json!({"autoScalingActive": true})));
    h.claims(P, "c", 2, pending());
    h.reconcile(P).await.unwrap();
    assert!(
        h.condition(P, "ClaimsStuck")
            .unwrap()
            .2
            .starts_with("the flag was set without autoScalingStartedAt")
    );
    assert_eq!(h.count_writes(P).len(), 0);
}

#[tokio::test]
async fn a_lowered_cap_cancels_an_unapplied_scale_up() {
    let h = Harness::new();
    h.workshop(Some(json!({"enabled": true, "maxProvisions": 20})));
    h.provision_with_status(P, 20, None, Some(in_flight_status(20, 30)));
    h.seats(20, 20);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.status(P).auto_scaling_active, Some(false));
    assert_eq!(h.events(), ["ScaleUpCancelled"]);
}

// ---------------------------------------------------------------- pause and dry run

#[tokio::test]
async fn paused_provisions_get_a_condition_and_nothing_else() {
    let h = demand();
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.metadata.annotations = Some(
            [(
                "scaling.ebb.dev/paused-until".to_owned(),
                "2026-03-10T10:00:00Z".to_owned(),
            )]
            .into(),
        );
    });
    h.fake.clear_requests();
    let action = h.reconcile(P).await.unwrap();
    assert_eq!(
        action,
        Requeue::After(Duration::from_secs(3601)),
        "requeued at the expiry"
    );
    assert_eq!(h.fake.write_count(), 1);
    // The frame's reason: `Paused` for every readable pause, `paused-until` too.
    assert_eq!(h.condition(P, "Paused").unwrap().1, "Paused");
    assert_eq!(h.count(P), 20);
    assert_eq!(h.events(), ["Paused"]);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);

    // Expired: scales, and the Paused condition turns False.
    h.clock.set(t0() + SignedDuration::from_hours(1));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.condition(P, "Paused").unwrap().0, "False");
}

/// An unreadable `paused-until` pauses too (fail-safe), reported as the frame reports it: a
/// Warning and a condition naming the provision and the annotation, until the annotation changes.
#[tokio::test]
async fn an_unreadable_paused_until_pauses_and_warns() {
    let h = demand();
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.metadata.annotations =
            Some([("scaling.ebb.dev/paused-until".to_owned(), "soon".to_owned())].into());
    });
    h.fake.clear_requests();
    assert_eq!(h.reconcile(P).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(h.count(P), 20);
    assert_eq!(h.fake.write_count(), 1, "the condition only");
    let (status, reason, message) = h.condition(P, "Paused").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InvalidPausedUntil")
    );
    assert!(
        message.starts_with(&format!("WorkshopProvision {NS}/{P}: "))
            && message.contains("scaling.ebb.dev/paused-until"),
        "{message}"
    );
    assert_eq!(h.events(), ["InvalidPausedUntil"]);
    assert_eq!(
        h.replica.events.events()[0].kind,
        ebb_runtime::EventKind::Warning
    );
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events().len(), 1);
}

#[tokio::test]
async fn a_paused_provision_with_auto_scaling_disabled_is_not_touched() {
    let h = Harness::new();
    h.provision(P, 20, None);
    h.fake.modify::<WorkshopProvision>(NS, P, |p| {
        p.metadata.annotations =
            Some([("scaling.ebb.dev/paused".to_owned(), "true".to_owned())].into());
    });
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
}

#[tokio::test]
async fn dry_run_records_the_intent_and_writes_neither_flag_nor_count() {
    let h = Harness::with_dry_run(true);
    h.workshop(Some(enabled()));
    h.provision(P, 20, None);
    h.seats(17, 20);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 20);
    assert_eq!(h.status(P).auto_scaling_active, None);
    assert_eq!(h.fake.write_count(), 1, "conditions only");
    assert_eq!(
        h.condition(P, "AutoScaling"),
        Some((
            "False".into(),
            "DryRun".into(),
            "dry run, nothing written: utilization 85% reached the threshold 80%: scale from 20 to 30".into()
        ))
    );
    assert_eq!(h.events(), ["DryRun"]);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events().len(), 1);
}

// ---------------------------------------------------------------- the fault matrix

/// Every API call of a provision meeting its trigger fails in turn with each fault of
/// `ebb_testkit::matrix::FAULTS`; the run must end where the clean one did (one increase from the
/// same count, the flag set or released once), and the table of what happened is
/// `docs/faults/<file>.md`. `setup` seeds the world (unrecorded).
async fn fault_matrix(file: &str, scenario: &str, setup: impl AsyncFn(&Harness)) {
    use ebb_testkit::matrix;
    let rows = matrix::fault_matrix(
        scenario,
        async || {
            let h = Harness::new();
            setup(&h).await;
            let fake = h.fake.clone();
            (h, fake)
        },
        async |h: &Harness, trace: &mut matrix::Trace| {
            let read = || h.fake.get::<WorkshopProvision>(NS, P);
            matrix::settle_with(&h.fake, || h.replica.ctx(), read, trace).await;
        },
        |h: &Harness| matrix::snapshot(&h.fake, &[(API, "WorkshopProvision", NS, P)]),
    )
    .await;
    matrix::check_doc(file, scenario, &rows);
}

#[tokio::test]
async fn fault_matrix_a_scale_up() {
    fault_matrix(
        "workshop-scaler-scale-up",
        "workshop-scaler: 17 of 20 seats taken, the provision scales 20 -> 30: the flag through \
         status, then the count",
        async |h: &Harness| {
            h.workshop(Some(
                json!({"enabled": true, "threshold": 0.8, "scaleFactor": 1.5, "maxProvisions": 60}),
            ));
            h.provision(P, 20, Some(json!({"maxProvisions": 40})));
            h.seats(17, 20);
        },
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_a_release() {
    fault_matrix(
        "workshop-scaler-release",
        "workshop-scaler: every claim of a scale-up is ready, the flag is released",
        async |h: &Harness| {
            h.workshop(Some(enabled()));
            h.provision_with_status(P, 3, None, Some(in_flight_status(2, 3)));
            h.seats(1, 3);
            for name in ["a", "b", "c"] {
                h.claim(P, name, ready());
            }
        },
    )
    .await;
}

/// Before the watches of Workshops, seats and claims have listed, a reconcile would decide on
/// no Workshop and no seats: it fails as a read does (retried with backoff) and writes nothing.
#[tokio::test]
async fn a_reconcile_before_the_caches_listed_writes_nothing() {
    let h = demand();
    let (ctx, _feeds) = watched_context(&h.fake, &h.clock);
    let err = frame::reconcile(guard(h.get(P)), ctx).await.unwrap_err();
    assert_eq!(err.category(), "observe");
    assert!(
        err.to_string()
            .contains("the cache of Workshop has not listed yet"),
        "{err}"
    );
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.count(P), 20);
}

/// A Workshop that does not fit ebb's typed view is named in the provision's status
/// (`ConfigValid` false, with the field that does not fit), nothing scales, and the next pass
/// writes nothing more; the Workshop's watch maps its fix onto the provision. A provision that says `enabled: false` needs nothing
/// from its Workshop and is left alone.
#[tokio::test]
async fn a_malformed_workshop_is_reported_in_the_status_and_nothing_scales() {
    let h = demand();
    h.fake.modify_json(API, "Workshop", NS, WORKSHOP, |w| {
        w["spec"]["provisionDisabled"] = json!("yes")
    });
    h.reconcile(P).await.unwrap();
    let (status, reason, message) = h.condition(P, "AutoScalingConfigValid").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidConfig")
    );
    assert!(
        message.ends_with(&format!(
            "Workshop {WORKSHOP} cannot be read: spec.provisionDisabled: \
             invalid type: string \"yes\", expected a boolean"
        )),
        "{message}"
    );
    assert_eq!(h.count(P), 20);
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "reported once");

    let h = demand();
    h.fake.modify_json(API, "WorkshopProvision", NS, P, |p| {
        p["spec"]["autoScaling"]["enabled"] = json!(false)
    });
    h.fake.modify_json(API, "Workshop", NS, WORKSHOP, |w| {
        w["spec"]["provisionDisabled"] = json!("yes")
    });
    h.fake.clear_requests();
    h.reconcile(P).await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "disabled: nothing written");
}

/// A reconcile looks at the seats and claims of its own provision only: the cached objects it
/// passes over stay the same with N and 2N seats and claims of other workshops and provisions.
#[tokio::test]
async fn a_reconcile_looks_at_its_own_seats_and_claims_only() {
    async fn visited_with(others: usize) -> usize {
        let h = demand();
        h.claims(P, "mine", 2, ready());
        for i in 0..others {
            h.foreign_seat(&format!("other-seat-{i:04}"), true);
            h.claim("other-provision", &format!("other-claim-{i:04}"), ready());
        }
        let ctx = h.replica.ctx();
        let caches = &ctx.own.caches;
        let visited = || {
            caches.workshops.visited()
                + caches.assignments.visited()
                + caches.claims.visited()
                + caches.policies.visited()
        };
        let before = visited();
        h.reconcile(P).await.unwrap();
        visited() - before
    }
    let (n, twice) = (visited_with(200).await, visited_with(400).await);
    assert!(n >= 20, "the provision's own 20 seats are read: {n}");
    assert_eq!(n, twice, "200 others: {n} visited; 400 others: {twice}");
}
