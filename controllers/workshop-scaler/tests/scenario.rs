//! The seed's "Testing" steps, end to end on the in-memory API, with the repository's example
//! manifests:
//! 1. apply the example configuration with `autoScaling.enabled: true`;
//! 2. create user assignments until utilization reaches the threshold;
//! 3. verify the WorkshopProvision count increases automatically (once);
//! 4. monitor the `autoScalingActive` flag: set while claims provision, cleared when they settle;
//!    then more assignments scale again, up to the cap.
//!
//! Each step reconciles after every change, as the watches would trigger it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;
use jiff::SignedDuration;
use serde_json::{Value, json};

const P: &str = "ansible-101-rhel";

fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assign(h: &Harness, seat: u32) {
    h.fake.modify_json(
        API,
        "WorkshopUserAssignment",
        NS,
        &format!("seat-{seat:03}"),
        |v| {
            v["spec"]["assignment"] = json!({"email": format!("user{seat}@example.com")});
        },
    );
}

#[tokio::test]
async fn seed_testing_steps_end_to_end() {
    let h = Harness::new();

    // 1. The example Workshop (enabled, threshold 0.8, scaleFactor 1.5, maxProvisions 60) and its
    //    provision (count 20, its own maxProvisions 40).
    let workshop = example("workshop.yaml");
    assert_eq!(workshop["spec"]["autoScaling"]["enabled"], json!(true));
    h.fake.insert(workshop);
    h.fake.insert(example("workshop-provision.yaml"));
    assert_eq!(h.count(P), 20);
    // Babylon created a seat per provisioned environment: 20 seats, none taken yet.
    h.seats(0, 20);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, "BelowThreshold");

    // 2. Users arrive one by one; every assignment change triggers a reconcile.
    for seat in 0..15 {
        assign(&h, seat);
        h.reconcile(P).await.unwrap();
        assert_eq!(h.count(P), 20, "{} of 20 seats must not scale", seat + 1);
    }
    assert!(h.count_writes(P).is_empty());

    // 3. The 16th seat is 80%: the provision scales to floor(20 * 1.5) = 30, once.
    assign(&h, 15);
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.count_writes(P).len(), 1);

    // 4. The flag is set through the status subresource ...
    let status = h.status(P);
    assert_eq!(status.auto_scaling_active, Some(true));
    assert_eq!(
        (
            status.auto_scaling_from_count,
            status.auto_scaling_target_count
        ),
        (Some(20), Some(30))
    );
    assert_eq!(h.condition(P, "AutoScaling").unwrap().0, "True");
    // ... and while it is, more users change nothing.
    for seat in 16..20 {
        assign(&h, seat);
        h.reconcile(P).await.unwrap();
    }
    assert_eq!(h.count(P), 30);
    assert_eq!(h.count_writes(P).len(), 1);

    // Poolboy provisions the 30 claims (the old 20 are ready, 10 new are provisioning).
    h.claims(P, "old", 20, ready());
    h.claims(P, "new", 10, pending());
    h.clock.advance(SignedDuration::from_mins(5));
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(true));

    // The new claims settle one by one (one fails, Babylon's predicates count it as settled);
    // the flag clears only with the last.
    for i in 0..10 {
        let status = if i == 3 {
            in_state("provision-failed")
        } else {
            complete()
        };
        h.claim(P, &format!("new-{i:02}"), status);
        h.clock.advance(SignedDuration::from_mins(2));
        h.reconcile(P).await.unwrap();
        let active = h.status(P).auto_scaling_active;
        if i < 9 {
            assert_eq!(active, Some(true), "claim {i} settled, others pending");
        } else {
            assert_eq!(active, Some(false), "all settled");
        }
    }
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, "ClaimsSettled");
    // The release is not a scale: still 30.
    assert_eq!(h.count(P), 30);

    // Babylon adds seats for the new environments: 20 of 30 taken, 67%, nothing happens.
    for seat in 20..30 {
        h.fake.insert(json!({
            "apiVersion": API, "kind": "WorkshopUserAssignment",
            "metadata": {"name": format!("seat-{seat:03}"), "namespace": NS},
            "spec": {"workshopName": WORKSHOP, "resourceClaimName": format!("new-{:02}", seat - 20)},
        }));
    }
    h.reconcile(P).await.unwrap();
    assert_eq!(h.count(P), 30);
    assert_eq!(h.condition(P, "AutoScaling").unwrap().1, "BelowThreshold");

    // More users: at 24 of 30 it scales again, to min(40, floor(30 * 1.5) = 45) = 40.
    for seat in 20..24 {
        assign(&h, seat);
        h.reconcile(P).await.unwrap();
    }
    assert_eq!(h.count(P), 40);
    assert_eq!(h.count_writes(P).len(), 2);
    assert_eq!(h.status(P).auto_scaling_target_count, Some(40));
    assert_eq!(h.condition(P, "AtMaxProvisions").unwrap().0, "True");

    // Those claims settle too; then the cap holds however full the workshop gets.
    h.claims(P, "third", 10, ready());
    h.reconcile(P).await.unwrap();
    assert_eq!(h.status(P).auto_scaling_active, Some(false));
    for seat in 24..30 {
        assign(&h, seat);
        h.reconcile(P).await.unwrap();
    }
    assert_eq!(h.count(P), 40);
    assert_eq!(h.count_writes(P).len(), 2);

    assert_eq!(
        h.events(),
        [
            "ScaledUp",
            "ScaleUpComplete",
            "ScaledUp",
            "ReachedMaxProvisions",
            "ScaleUpComplete",
            "AtMaxProvisions",
        ]
    );
}
