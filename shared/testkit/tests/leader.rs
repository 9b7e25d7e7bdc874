//! Leader election (`ebb_runtime::lead::leader`) against the in-memory API server: moved here from
//! `ebb-runtime`'s unit tests when the fake left that crate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use ebb_runtime::lead::leader::{LEASE_DURATION_SECS, RENEW_EVERY, WRITE_MARGIN};
use ebb_runtime::{
    ApiContact, Leader, LeaderElection, LeaderError, ManualClock, Shutdown, SystemClock,
};
use ebb_testkit::{FakeApi, Fault, Matcher};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

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
    elected_with(fake, &contact(), shutdown).await
}

/// `pod-a` elected on `fake`, its election reporting to `contact`.
async fn elected_with(fake: &FakeApi, contact: &ApiContact, shutdown: &Shutdown) -> Leader {
    let leader = LeaderElection::start(
        fake.client(),
        "ebb",
        "ctl",
        "pod-a",
        contact,
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

// Paused time: the election sleeps until its renewal is due; Tokio skips the wait.
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

/// A replica shown another holder stops writing at once, stays in the election (no exit, no
/// restart), leaves the Lease alone while its holder renews it, and takes it over only once it
/// has seen it unchanged for the Lease's duration, whatever its `renewTime` says.
#[tokio::test(start_paused = true)]
async fn losing_the_lease_stops_writing_and_competes_again() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;

    // Another replica takes the lease over (e.g. after we stalled past its expiry), and renews it.
    let take_over = |fake: &FakeApi, renewal: i64| {
        fake.modify::<Lease>("ebb", "ctl", |lease| {
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = Some("pod-b".into());
                // Renewals long ago, by pod-a's wall clock: no replica goes by them.
                let at = jiff::Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_secs(renewal);
                spec.renew_time = Some(MicroTime(at));
            }
        });
    };
    take_over(&fake, 0);
    pass(Duration::from_millis(100)).await;
    assert!(!leader.is_leader(), "the Lease seen names another replica");
    for renewal in 1..8 {
        pass(Duration::from_secs(LEASE_DURATION_SECS / 3)).await;
        assert!(!leader.is_leader());
        take_over(&fake, renewal);
    }
    assert!(!shutdown.is_triggered(), "losing the lease ends nothing");
    assert_eq!(
        holder(&fake).as_deref(),
        Some("pod-b"),
        "the new holder is left alone while it renews"
    );

    // pod-b stops renewing: this replica takes over without a restart, a Lease's duration after
    // the last change it saw.
    let last_change = tokio::time::Instant::now();
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    let waited = last_change.elapsed();
    assert!(
        waited >= Duration::from_secs(LEASE_DURATION_SECS)
            && waited < Duration::from_secs(LEASE_DURATION_SECS + 1),
        "took over {waited:?} after the last renewal it saw"
    );
    assert_eq!(holder(&fake).as_deref(), Some("pod-a"));
}

/// A take-over the leader's watch does not show (its watch of the Lease fails): its next
/// renewal, conditional on the version it holds, meets a 409 and stops its writing; it never
/// overwrites the new holder's claim.
#[tokio::test(start_paused = true)]
async fn a_renewal_never_overwrites_a_take_over() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let leader = elected(&fake, &shutdown).await;
    fake.inject(Matcher::watch("leases"), Fault::Status(500), usize::MAX);
    pass(Duration::from_secs(1)).await;
    let taken = fake.modify::<Lease>("ebb", "ctl", |lease| {
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some("pod-b".into());
        }
    });
    let start = tokio::time::Instant::now();
    while leader.is_leader() {
        pass(Duration::from_millis(50)).await;
    }
    assert!(
        start.elapsed() <= RENEW_EVERY + Duration::from_millis(100),
        "wrote {:?} after the take-over",
        start.elapsed()
    );
    let lease = fake.get::<Lease>("ebb", "ctl").unwrap();
    assert_eq!(
        lease.spec, taken.spec,
        "the take-over stands as pod-b wrote it"
    );
}

/// Two replicas, the leader cut off from renewing and from its watch of the Lease, the standby's
/// wall clock an hour ahead: never do both write, and the standby takes over at least
/// `WRITE_MARGIN` after the old leader stopped.
#[tokio::test(start_paused = true)]
async fn two_replicas_never_write_at_once_whatever_their_clocks_say() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let a = LeaderElection::start(
        fake.client_as(0),
        "ebb",
        "ctl",
        "pod-a",
        &contact(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    assert!(
        tokio::time::timeout(PATIENCE, a.wait_until_leader())
            .await
            .unwrap()
    );
    let ahead = ManualClock::new(jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1));
    let b = LeaderElection::start(
        fake.client_as(1),
        "ebb",
        "ctl",
        "pod-b",
        &ApiContact::new(Arc::new(ahead)),
        shutdown.clone(),
    )
    .await
    .unwrap();
    pass(Duration::from_secs(2 * LEASE_DURATION_SECS)).await;
    assert!(
        a.is_leader() && !b.is_leader(),
        "pod-b waits while pod-a renews"
    );

    fake.inject(
        Matcher::put("leases").of_actor(0),
        Fault::Status(503),
        usize::MAX,
    );
    fake.inject(
        Matcher::watch("leases").of_actor(0),
        Fault::Status(500),
        usize::MAX,
    );
    let start = tokio::time::Instant::now();
    let (mut a_last, mut b_first) = (None, None);
    while start.elapsed() < Duration::from_secs(3 * LEASE_DURATION_SECS) {
        pass(Duration::from_millis(50)).await;
        let now = tokio::time::Instant::now();
        assert!(
            !(a.is_leader() && b.is_leader()),
            "two writers at {:?}",
            now - start
        );
        if a.is_leader() {
            a_last = Some(now);
        }
        if b.is_leader() && b_first.is_none() {
            b_first = Some(now);
        }
    }
    let (a_last, b_first) = (a_last.unwrap(), b_first.expect("pod-b took over"));
    assert!(
        b_first - a_last >= WRITE_MARGIN,
        "pod-b began {:?} after pod-a stopped",
        b_first - a_last
    );
    assert_eq!(holder(&fake).as_deref(), Some("pod-b"));
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

/// While the server is lost the election does not knock on its own: it tries again on the
/// process's return (which its one probe announces), or every `LOST_RETRY` at most.
#[tokio::test(start_paused = true)]
async fn while_the_server_is_lost_the_election_waits_for_its_return() {
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let contact = contact();
    let leader = elected_with(&fake, &contact, &shutdown).await;
    fake.inject(Matcher::put("/leases/ctl"), Fault::Timeout, usize::MAX);
    contact.failed();
    fake.clear_requests();
    let away = Duration::from_secs(30);
    pass(away).await;
    let knocks = fake
        .requests()
        .iter()
        .filter(|r| r.path.contains("/leases/ctl") && r.method == http::Method::PUT)
        .count();
    let most = (away.as_secs() / ebb_runtime::watch::contact::LOST_RETRY.as_secs()) as usize + 1;
    assert!(
        (1..=most).contains(&knocks),
        "{knocks} renewals tried in {away:?} while the server was lost (at most {most})"
    );
    assert!(!leader.is_leader(), "no renewal went through");

    fake.clear_faults();
    let back = tokio::time::Instant::now();
    contact.server_ready();
    assert!(
        tokio::time::timeout(PATIENCE, leader.wait_until_leader())
            .await
            .unwrap()
    );
    assert!(
        back.elapsed() < Duration::from_millis(100),
        "leads again {:?} after the return",
        back.elapsed()
    );
}

/// A replica that starts to write asks every controller to reconcile everything, once: after
/// taking the Lease, and after an overlapping install it stood down for went away. A follower's
/// passes set no timer, so this is what brings them back.
#[tokio::test(start_paused = true)]
async fn starting_to_write_wakes_every_controller_once() {
    use futures::StreamExt;
    let fake = FakeApi::new();
    let shutdown = Shutdown::new();
    let contact = contact();
    let mut wakes = Box::pin(contact.wake_ups());
    let leader = elected_with(&fake, &contact, &shutdown).await;
    let woken = tokio::time::timeout(Duration::from_secs(1), wakes.next()).await;
    assert!(woken.is_ok(), "taking the Lease wakes the controllers");
    pass(RENEW_EVERY * 3).await;
    let again = tokio::time::timeout(Duration::from_millis(10), wakes.next()).await;
    assert!(again.is_err(), "renewals wake nothing");

    leader.stand_down(true);
    pass(Duration::from_millis(10)).await;
    leader.stand_down(false);
    let woken = tokio::time::timeout(Duration::from_secs(1), wakes.next()).await;
    assert!(
        woken.is_ok(),
        "resuming after a stand-down wakes the controllers"
    );
}
