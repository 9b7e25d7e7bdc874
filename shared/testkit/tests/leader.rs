//! Leader election (`ebb_runtime::leader`) against the in-memory API server: moved here from
//! `ebb-runtime`'s unit tests when the fake left that crate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use ebb_runtime::leader::{LEASE_DURATION_SECS, WRITE_MARGIN};
use ebb_runtime::{ApiContact, Leader, LeaderElection, LeaderError, Shutdown, SystemClock};
use ebb_testkit::{FakeApi, Fault, Matcher};
use k8s_openapi::api::coordination::v1::Lease;

const PATIENCE: Duration = Duration::from_secs(300);

fn holder(fake: &FakeApi) -> Option<String> {
    fake.get::<Lease>("ebb", "ctl")
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

fn contact() -> ApiContact {
    ApiContact::new(Arc::new(SystemClock))
}

async fn elected(fake: &FakeApi, shutdown: &Shutdown) -> Leader {
    let leader = LeaderElection::start(
        fake.client(),
        "ebb",
        "ctl",
        "pod-a",
        &contact(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    leader
}

/// Lets the election's tasks run for `d` of (paused) time.
async fn pass(d: Duration) {
    tokio::time::sleep(d).await;
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
    tokio::time::timeout(PATIENCE, leader.join()).await.unwrap();
    assert!(!leader.is_leader());
    assert_eq!(
        holder(&fake),
        None,
        "the lease is released for a fast hand-over"
    );
}

/// A replica that finds another holding its Lease stops writing at once, stays in the election
/// (no exit, no restart) and leads again once the Lease is free.
#[tokio::test(start_paused = true)]
async fn losing_the_lease_stops_writing_and_competes_again() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;

    // Another replica takes the lease over (e.g. after we stalled past its expiry).
    fake.modify::<Lease>("ebb", "ctl", |lease| {
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some("pod-b".into());
        }
    });
    pass(Duration::from_millis(100)).await;
    assert!(!leader.is_leader(), "the Lease seen names another replica");
    pass(Duration::from_secs(2 * LEASE_DURATION_SECS)).await;
    assert!(!shutdown.is_triggered(), "losing the lease ends nothing");
    assert_eq!(
        holder(&fake).as_deref(),
        Some("pod-b"),
        "the new holder is left alone while its lease holds"
    );

    // The other replica lets go: this one takes over without a restart.
    fake.modify::<Lease>("ebb", "ctl", |lease| {
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.renew_time = None;
        }
    });
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    assert_eq!(holder(&fake).as_deref(), Some("pod-a"));
}

/// A leader cut off from the API server cannot renew: it stops writing before its Lease could
/// expire (no two writers), keeps competing, and writes again once a renewal goes through.
#[tokio::test(start_paused = true)]
async fn a_leader_cut_off_stops_writing_before_its_lease_could_expire_and_comes_back() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;
    let renewed = fake.get::<Lease>("ebb", "ctl").unwrap().spec.unwrap();
    let renewed_at = renewed.renew_time.unwrap().0;
    let start = tokio::time::Instant::now();
    fake.inject(Matcher::any("leases"), Fault::Status(503), usize::MAX);

    let mut last_writing = start;
    while tokio::time::Instant::now() - start < Duration::from_secs(2 * LEASE_DURATION_SECS) {
        pass(Duration::from_millis(100)).await;
        if leader.is_leader() {
            last_writing = tokio::time::Instant::now();
        }
    }
    let stopped = last_writing - start;
    let lease = Duration::from_secs(LEASE_DURATION_SECS);
    assert!(
        stopped <= lease - WRITE_MARGIN + Duration::from_millis(200),
        "wrote {stopped:?} after its last renewal; the lease lasts {lease:?}"
    );
    assert!(
        stopped >= lease - WRITE_MARGIN - Duration::from_secs(6),
        "stopped only {stopped:?} after its last renewal: too early"
    );
    assert_eq!(
        fake.get::<Lease>("ebb", "ctl")
            .unwrap()
            .spec
            .unwrap()
            .renew_time
            .unwrap()
            .0,
        renewed_at,
        "nothing renewed while cut off"
    );
    assert!(!shutdown.is_triggered(), "an outage ends nothing");

    fake.clear_faults();
    let back = tokio::time::Instant::now();
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    assert!(
        back.elapsed() < Duration::from_secs(2),
        "leads again {:?} after the server answers",
        back.elapsed()
    );
    assert_eq!(holder(&fake).as_deref(), Some("pod-a"));
}

#[tokio::test]
async fn setup_errors_are_reported() {
    let fake = FakeApi::new();
    fake.fail_next(Matcher::get("/leases/ctl"), 403);
    let result = LeaderElection::start(
        fake.client(),
        "ebb",
        "ctl",
        "pod-a",
        &contact(),
        Shutdown::new(),
    )
    .await;
    assert!(
        matches!(result, Err(LeaderError::Setup { .. })),
        "{result:?}"
    );
}
