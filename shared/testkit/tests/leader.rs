//! Leader election (`ebb_runtime::leader`) against the in-memory API server: moved here from
//! `ebb-runtime`'s unit tests when the fake left that crate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_runtime::{Leader, LeaderElection, LeaderError, Shutdown};
use ebb_testkit::{FakeApi, Matcher};
use k8s_openapi::api::coordination::v1::Lease;

const PATIENCE: Duration = Duration::from_secs(300);

fn holder(fake: &FakeApi) -> Option<String> {
    fake.get::<Lease>("ebb", "ctl")
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

async fn elected(fake: &FakeApi, shutdown: &Shutdown) -> Leader {
    let leader = LeaderElection::start(fake.client(), "ebb", "ctl", "pod-a", shutdown.clone())
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    leader
}

// Paused time: kube-lease-manager sleeps until its renewal is due; Tokio skips the wait.
#[tokio::test(start_paused = true)]
async fn acquires_then_releases_on_shutdown() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;
    assert!(leader.is_leader());
    assert_eq!(holder(&fake).as_deref(), Some("pod-a"));

    shutdown.trigger();
    tokio::time::timeout(PATIENCE, leader.join())
        .await
        .unwrap()
        .unwrap();
    assert!(!leader.is_leader());
    assert!(!leader.lost_lease());
    assert_eq!(
        holder(&fake),
        None,
        "the lease is released for a fast hand-over"
    );
}

#[tokio::test(start_paused = true)]
async fn losing_the_lease_ends_the_process() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;

    // Another replica takes the lease over (e.g. after we stalled past its expiry).
    fake.modify::<Lease>("ebb", "ctl", |lease| {
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some("pod-b".into());
        }
    });

    let result = tokio::time::timeout(PATIENCE, leader.join()).await.unwrap();
    assert!(matches!(result, Err(LeaderError::LostLease)), "{result:?}");
    assert!(leader.lost_lease());
    assert!(!leader.is_leader());
    assert!(shutdown.is_triggered());
    assert!(!leader.wait_until_leader().await);
    assert_eq!(
        holder(&fake).as_deref(),
        Some("pod-b"),
        "the new holder is left alone"
    );
}

#[tokio::test]
async fn setup_errors_are_reported() {
    let fake = FakeApi::new();
    fake.fail_next(Matcher::get("/leases/ctl"), 403);
    let result = LeaderElection::start(fake.client(), "ebb", "ctl", "pod-a", Shutdown::new()).await;
    assert!(
        matches!(result, Err(LeaderError::Setup { .. })),
        "{result:?}"
    );
}
