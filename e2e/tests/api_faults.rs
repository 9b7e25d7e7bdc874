//! The `api_faults` tier: each controller runs as its chart would (its RBAC, leader election on)
//! but talks only to a second kube-apiserver on the suite's etcd ([`ApiServer`]), which the test
//! freezes, kills and starts again, and makes expire every watch (410 at resume); the test makes
//! its changes and checks through the main server, as an operator's cluster behaves during a
//! control-plane upgrade.
//!
//! Counted from the first 200 of the returning server's `/readyz`, every controller acts within
//! [`BOUND`] on: a change made while the server was frozen, a change made while it was down
//! (killed longer than the Lease lasts, so the leader has stood down and must come back without a
//! restart), a change made shortly after it came back (counted from the change), and a change
//! made while it was down and its watches expired. service-scaler and scaledown-window also act
//! within [`BOUND`] on a window edge that passed while the server was frozen, and one that passed
//! while it was down. Each transition is one write of the target (the server's audit log); the
//! process stays up and ready throughout, and uses under 2 % of one core while the server is away.
//! Two replicas across a restart: exactly one leads within the Lease duration plus 2 s of the
//! return.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use ebb_e2e::apiserver::ApiServer;
use ebb_e2e::rbac::{apply, resource};
use ebb_e2e::{Controller, Setup, audit, cluster, eventually};
use ebb_runtime::lead::leader::LEASE_DURATION_SECS;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

/// How soon after the server's return (or after a change made once it is back) the effect
/// must be visible.
const BOUND: Duration = Duration::from_secs(2);
/// How long the server stays down in the restart scenarios: longer than the Lease, so a leader
/// that cannot renew steps down and must come back on its own.
const DOWN: Duration = Duration::from_secs(LEASE_DURATION_SECS + 2);
/// How long a frozen server stays frozen.
const FROZEN: Duration = Duration::from_secs(6);
/// The most CPU a controller may use while its server is away, as a share of one core.
const CPU_SHARE: f64 = 0.02;
/// How long after an effect the test looks for more writes (a loop would show).
const SETTLE: Duration = Duration::from_secs(3);

type Step<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
type Check<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// One controller's part.
struct Subject {
    chart: &'static str,
    binary: &'static str,
    namespaced: bool,
    /// The resource whose writes count as the transition's (no subresource).
    target: &'static str,
    /// Creates what the controller manages (before it starts).
    seed: for<'a> fn(&'a Setup) -> Step<'a>,
    /// Before round `round`'s change, while the server is up: whatever must exist and have
    /// converged for the change to have one effect.
    prepare: for<'a> fn(&'a Setup, u32) -> Step<'a>,
    /// Makes round `round`'s change through the main server; does not wait.
    change: for<'a> fn(&'a Setup, u32) -> Step<'a>,
    /// Whether round `round`'s effect is visible (one look, through the main server).
    done: for<'a> fn(&'a Setup, u32) -> Check<'a>,
    /// Called once the round's effect was seen, before the next round.
    after: for<'a> fn(&'a Setup, u32) -> Step<'a>,
}

fn nothing(_: &Setup, _: u32) -> Step<'_> {
    Box::pin(async {})
}

/// Waits until `done` and says how long after `from` it was first seen (polled every 20 ms).
async fn seen_after(
    setup: &Setup,
    subject: &Subject,
    round: u32,
    from: Instant,
    controller: &Controller,
) -> Duration {
    let deadline = from + Duration::from_secs(60);
    loop {
        if (subject.done)(setup, round).await {
            return from.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "{} round {round}: no effect a minute after the server's return\n{}",
            subject.binary,
            controller.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The writes of `resource` (itself or its `/scale`) by `setup`'s identity since `since`.
fn target_writes(
    server: &ApiServer,
    setup: &Setup,
    resource: &str,
    since: Timestamp,
) -> Vec<String> {
    audit::writes(&server.audit_log(), &setup.identity.username(), since)
        .unwrap()
        .iter()
        .filter(|w| {
            w.object_ref.as_ref().is_some_and(|o| {
                o.resource == resource && o.subresource.as_deref().is_none_or(|s| s == "scale")
            })
        })
        .map(audit::Entry::describe)
        .collect()
}

/// One round: the effect seen within [`BOUND`] of `from`, one write of the target.
#[allow(clippy::too_many_arguments)]
async fn judge(
    what: &str,
    setup: &Setup,
    subject: &Subject,
    round: u32,
    from: Instant,
    since: Timestamp,
    server: &ApiServer,
    controller: &mut Controller,
) {
    let took = seen_after(setup, subject, round, from, controller).await;
    println!(
        "figure: {} {what}: acted on {} ms after the server's return",
        subject.binary,
        took.as_millis()
    );
    assert!(
        took <= BOUND,
        "{} {what}: acted on {took:?} after the server's return\n{}",
        subject.binary,
        controller.log_tail()
    );
    tokio::time::sleep(SETTLE).await;
    let writes = target_writes(server, setup, subject.target, since);
    assert_eq!(
        writes.len(),
        1,
        "{} {what}: one write per transition, got {writes:#?}",
        subject.binary
    );
    assert!(
        controller.running(),
        "{} {what}: the process exited",
        subject.binary
    );
    assert_eq!(
        controller.health().unwrap(),
        (200, 200),
        "{} {what}: healthy and ready",
        subject.binary
    );
    (subject.after)(setup, round).await;
}

/// The CPU share of one core `controller` used while `during` passed.
async fn cpu_share_over(controller: &Controller, during: Duration) -> f64 {
    let before = controller.cpu_time().unwrap();
    let start = Instant::now();
    tokio::time::sleep(during).await;
    let used = controller.cpu_time().unwrap() - before;
    used.as_secs_f64() / start.elapsed().as_secs_f64()
}

async fn leads_within(controller: &Controller, from: Instant, binary: &str) -> Duration {
    let gauge = format!("ebb_{}_leader", binary.replace('-', "_"));
    let bound = Duration::from_secs(LEASE_DURATION_SECS) + Duration::from_secs(2);
    loop {
        if controller.metric(&gauge, &[]).ok() == Some(1.0) {
            return from.elapsed();
        }
        assert!(
            from.elapsed() < bound,
            "{binary}: not leading {bound:?} after the server's return\n{}",
            controller.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The scenarios every controller goes through, one replica on `server`.
async fn faults(
    subject: &Subject,
    setup: &Setup,
    server: &mut ApiServer,
    controller: &mut Controller,
) {
    let binary = subject.binary;

    // Frozen across a change.
    (subject.prepare)(setup, 1).await;
    let since = Timestamp::now();
    server.freeze().unwrap();
    (subject.change)(setup, 1).await;
    tokio::time::sleep(FROZEN).await;
    let back = server.thaw().await.unwrap();
    judge(
        "change while frozen",
        setup,
        subject,
        1,
        back,
        since,
        server,
        controller,
    )
    .await;

    // Down across a change, longer than the Lease: the leader stands down and comes back.
    (subject.prepare)(setup, 2).await;
    let since = Timestamp::now();
    server.kill().unwrap();
    (subject.change)(setup, 2).await;
    let share = cpu_share_over(controller, DOWN).await;
    println!(
        "figure: {binary} CPU while the server was down: {:.2} % of one core",
        share * 100.0
    );
    assert!(
        share < CPU_SHARE,
        "{binary}: {:.2} % of one core while the server was down",
        share * 100.0
    );
    let back = server.start_again().await.unwrap();
    let leading = leads_within(controller, back, binary).await;
    println!(
        "figure: {binary} leads again {} ms after the server's return (one replica)",
        leading.as_millis()
    );
    judge(
        "change while down",
        setup,
        subject,
        2,
        back,
        since,
        server,
        controller,
    )
    .await;

    // A change shortly after the server came back.
    (subject.prepare)(setup, 3).await;
    server.kill().unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.start_again().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let since = Timestamp::now();
    let changed = Instant::now();
    (subject.change)(setup, 3).await;
    judge(
        "change after the return",
        setup,
        subject,
        3,
        changed,
        since,
        server,
        controller,
    )
    .await;

    // Down, a change, etcd compacted: every watch meets 410 when it resumes.
    (subject.prepare)(setup, 4).await;
    let since = Timestamp::now();
    let (_, back) = server
        .expire_watches(cluster(), || async {
            (subject.change)(setup, 4).await;
            Ok(())
        })
        .await
        .unwrap();
    judge(
        "change while watches expired",
        setup,
        subject,
        4,
        back,
        since,
        server,
        controller,
    )
    .await;
}

/// Replica `name` of `subject` as its chart runs it, but through `server` (`kubeconfig`
/// retargeted), scoped to `setup`'s objects: its namespace, or for a cluster-scoped kind the
/// test's own label (two cluster-wide installs of one controller overlap, and the newer stands
/// down); once ready.
async fn replica_on(
    server: &ApiServer,
    subject: &Subject,
    setup: &Setup,
    kubeconfig: &std::path::Path,
    name: &str,
) -> Controller {
    let kubeconfig = server.retarget(kubeconfig).unwrap();
    let selector = format!("e2e={}", setup.namespace);
    let args = if subject.namespaced {
        ["--namespace", setup.namespace.as_str()]
    } else {
        ["--label-selector", selector.as_str()]
    };
    let mut replica =
        Controller::start_with(subject.binary, &setup.identity, &kubeconfig, name, &args).unwrap();
    replica.wait_ready(Duration::from_secs(30)).await.unwrap();
    replica
}

async fn run(subject: Subject) {
    let setup = Setup::new(
        subject.chart,
        &format!("e2e-af-{}", &subject.binary[..5]),
        subject.namespaced,
        &[],
    )
    .await
    .unwrap();
    (subject.seed)(&setup).await;
    let mut server = ApiServer::start(cluster()).await.unwrap();
    let mut controller =
        replica_on(&server, &subject, &setup, &setup.identity.kubeconfig, "a").await;
    leads_within(&controller, Instant::now(), subject.binary).await;
    (subject.prepare)(&setup, 0).await;
    faults(&subject, &setup, &mut server, &mut controller).await;
    let gauge = |name: &str| {
        controller
            .metric(
                &format!("ebb_{}_{name}", subject.binary.replace('-', "_")),
                &[],
            )
            .unwrap()
    };
    assert!(gauge("watches") >= 1.0);
    assert_eq!(gauge("watches_connected"), gauge("watches"));
    assert!(
        gauge("api_last_contact_timestamp_seconds") > (Timestamp::now().as_second() - 60) as f64
    );
    controller.stop().await;
}

// --- service-scaler: the change moves maxReplicas; the edges are a window's two boundaries.

fn scaler_doc(max: i64, window: Option<(Timestamp, Timestamp)>) -> serde_json::Value {
    let ranges: Vec<serde_json::Value> = window
        .into_iter()
        .map(|(from, to)| {
            json!({"kind": "ZonedDateTime", "from": from.to_string(), "to": to.to_string(),
                   "replicaSpec": {"hpa": {"minReplicas": 5}}})
        })
        .collect();
    json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler", "metadata": {"name": "web"},
           "spec": {"leadTime": "0s",
                    "hpa": {"minReplicas": 2, "maxReplicas": max, "targetCPUUtilization": 70},
                    "timeRangeSpec": ranges}})
}

async fn hpa(setup: &Setup) -> Option<HorizontalPodAutoscaler> {
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &setup.namespace);
    hpas.get_opt("web").await.ok().flatten()
}

fn service_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        setup.apply(scaler_doc(10, None)).await.unwrap();
    })
}

fn service_prepare(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        // The previous round's state reached (or the seed's).
        let max = 10 + i32::try_from(round).unwrap() - i32::from(round > 0);
        eventually(Duration::from_secs(30), || async {
            (hpa(setup).await?.spec?.max_replicas == max).then_some(())
        })
        .await
        .unwrap();
    })
}

fn service_change(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        setup
            .apply(scaler_doc(10 + i64::from(round), None))
            .await
            .unwrap();
    })
}

fn service_done(setup: &Setup, round: u32) -> Check<'_> {
    Box::pin(async move {
        let max = 10 + i32::try_from(round).unwrap();
        hpa(setup)
            .await
            .and_then(|h| h.spec)
            .is_some_and(|s| s.max_replicas == max)
    })
}

fn service_scaler() -> Subject {
    Subject {
        chart: "service-scaler",
        binary: "service-scaler",
        namespaced: true,
        target: "horizontalpodautoscalers",
        seed: service_seed,
        prepare: service_prepare,
        change: service_change,
        done: service_done,
        after: nothing,
    }
}

#[tokio::test]
async fn service_scaler_through_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    run(service_scaler()).await;
}

/// A window that opens while the server is frozen and closes while it is down: each edge
/// reaches the HPA within [`BOUND`] of the server's return, in one write.
#[tokio::test]
async fn service_scaler_window_edges_during_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let subject = service_scaler();
    let setup = Setup::new(subject.chart, "e2e-af-edge", true, &[])
        .await
        .unwrap();
    let opens = ebb_runtime::time::whole_second(Timestamp::now()) + SignedDuration::from_secs(20);
    let closes = opens + SignedDuration::from_secs(30);
    setup
        .apply(scaler_doc(10, Some((opens, closes))))
        .await
        .unwrap();
    let mut server = ApiServer::start(cluster()).await.unwrap();
    let controller = replica_on(&server, &subject, &setup, &setup.identity.kubeconfig, "a").await;
    let min = |want: i32| {
        let setup = &setup;
        async move {
            hpa(setup)
                .await
                .and_then(|h| h.spec)
                .is_some_and(|s| s.min_replicas == Some(want))
        }
    };
    eventually(Duration::from_secs(15), || async {
        min(2).await.then_some(())
    })
    .await
    .unwrap();
    across_edges(
        &subject,
        &setup,
        &mut server,
        controller,
        (opens, closes),
        |open| min(if open { 5 } else { 2 }),
    )
    .await;
}

/// The server frozen from 3 s before `opens` to 3 s after, then down from 5 s before `closes`
/// to 5 s after: `open(true)` must hold within [`BOUND`] of the first return, `open(false)`
/// within [`BOUND`] of the second, each in one write of the target.
async fn across_edges<F, Fut>(
    subject: &Subject,
    setup: &Setup,
    server: &mut ApiServer,
    mut controller: Controller,
    (opens, closes): (Timestamp, Timestamp),
    open: F,
) where
    F: Fn(bool) -> Fut,
    Fut: Future<Output = bool>,
{
    let until = |at: Timestamp| {
        std::time::Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or_default()
    };
    tokio::time::sleep(until(opens) - Duration::from_secs(3)).await;
    let since = Timestamp::now();
    server.freeze().unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let back = server.thaw().await.unwrap();
    let took = wait_for(|| open(true), back).await;
    report(subject, "window opened while frozen", took, &controller);
    tokio::time::sleep(SETTLE).await;
    assert_eq!(target_writes(server, setup, subject.target, since).len(), 1);

    tokio::time::sleep(until(closes) - Duration::from_secs(5)).await;
    let since = Timestamp::now();
    server.kill().unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let back = server.start_again().await.unwrap();
    let took = wait_for(|| open(false), back).await;
    report(subject, "window closed while down", took, &controller);
    tokio::time::sleep(SETTLE).await;
    assert_eq!(target_writes(server, setup, subject.target, since).len(), 1);
    assert!(controller.running());
    controller.stop().await;
}

/// Polls `check` every 20 ms until it holds; how long after `from`.
async fn wait_for<F, Fut>(check: F, from: Instant) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = from + Duration::from_secs(60);
    while !check().await {
        assert!(
            Instant::now() < deadline,
            "no effect a minute after the return"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    from.elapsed()
}

fn report(subject: &Subject, what: &str, took: Duration, controller: &Controller) {
    println!(
        "figure: {} {what}: acted on {} ms after the server's return",
        subject.binary,
        took.as_millis()
    );
    assert!(
        took <= BOUND,
        "{} {what}: {took:?} after the return\n{}",
        subject.binary,
        controller.log_tail()
    );
}

/// Two replicas on a server that restarts for longer than the Lease: within the Lease duration
/// plus 2 s of its return exactly one leads, and the change made meanwhile is written once, by
/// that one.
#[tokio::test]
async fn two_replicas_across_a_restart_one_leads() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let subject = service_scaler();
    let setup = Setup::new(subject.chart, "e2e-af-two", true, &[])
        .await
        .unwrap();
    (subject.seed)(&setup).await;
    let mut server = ApiServer::start(cluster()).await.unwrap();
    let mut replicas = Vec::new();
    for name in ["a", "b"] {
        let (config, _) = setup
            .identity
            .replica(cluster(), &setup.admin, name)
            .await
            .unwrap();
        replicas.push(replica_on(&server, &subject, &setup, &config, name).await);
    }
    (subject.prepare)(&setup, 0).await;
    let gauge = "ebb_service_scaler_leader";
    let leaders = |replicas: &[Controller]| {
        replicas
            .iter()
            .filter(|r| r.metric(gauge, &[]).ok() == Some(1.0))
            .count()
    };
    assert_eq!(leaders(&replicas), 1);

    let since = Timestamp::now();
    server.kill().unwrap();
    (subject.change)(&setup, 1).await;
    // Never two writers: sampled through the outage.
    let down = Instant::now();
    while down.elapsed() < DOWN {
        assert!(leaders(&replicas) <= 1, "two replicas lead at once");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back = server.start_again().await.unwrap();
    let bound = Duration::from_secs(LEASE_DURATION_SECS + 2);
    loop {
        let n = leaders(&replicas);
        assert!(n <= 1, "two replicas lead at once");
        if n == 1 {
            break;
        }
        assert!(
            back.elapsed() < bound,
            "no replica leads {bound:?} after the return\n{}\n{}",
            replicas[0].log_tail(),
            replicas[1].log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "figure: service-scaler two replicas: one leads {} ms after the server's return",
        back.elapsed().as_millis()
    );
    let took = wait_for(|| service_done(&setup, 1), back).await;
    report(
        &subject,
        "two replicas, change while down",
        took,
        &replicas[0],
    );
    tokio::time::sleep(SETTLE).await;
    assert_eq!(leaders(&replicas), 1);
    let writes = target_writes(&server, &setup, subject.target, since);
    assert_eq!(writes.len(), 1, "{writes:#?}");
    for replica in &mut replicas {
        assert!(replica.running(), "a replica exited");
    }
    for replica in replicas {
        replica.stop().await;
    }
}

// --- scaledown-window: a ClusterAutoscaler of the test's name; each change swaps the
// schedule's windows between one open now and one that never opens.

async fn autoscalers(admin: &Client) -> Api<DynamicObject> {
    Api::all_with(
        admin.clone(),
        &resource(admin, "autoscaling.openshift.io", "v1", "ClusterAutoscaler")
            .await
            .unwrap(),
    )
}

/// A daily window that opened a minute ago (and lasts two hours), or one that opens in twelve
/// hours: open and closed now, each with one occurrence a day to reckon with.
fn daily_window(open: bool) -> (String, &'static str) {
    let at = if open {
        Timestamp::now() - SignedDuration::from_mins(1)
    } else {
        Timestamp::now() + SignedDuration::from_hours(12)
    };
    let duration = if open { "2h" } else { "1m" };
    (format!("{} * * *", ebb_e2e::cron_minute_hour(at)), duration)
}

fn schedule_doc(name: &str, windows: &[(String, &str)]) -> serde_json::Value {
    let windows: Vec<serde_json::Value> = windows
        .iter()
        .map(|(cron, duration)| json!({"schedule": cron, "duration": duration, "timeZone": "UTC"}))
        .collect();
    json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule",
           "metadata": {"name": name, "labels": {"e2e": name}},
           "spec": {"target": {"clusterAutoscaler": {"name": name}}, "windows": windows}})
}

async fn scale_down_enabled(setup: &Setup) -> Option<bool> {
    let ca = autoscalers(&setup.admin)
        .await
        .get(&setup.namespace)
        .await
        .ok()?;
    ca.data["spec"]["scaleDown"]["enabled"].as_bool()
}

fn scaledown_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        let name = &setup.namespace;
        apply(
            &setup.admin,
            &json!({"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
                    "metadata": {"name": name}, "spec": {"scaleDown": {"enabled": true}}}),
        )
        .await
        .unwrap();
        apply(&setup.admin, &schedule_doc(name, &[daily_window(false)]))
            .await
            .unwrap();
    })
}

/// Round `round` opens scale-down when odd, closes it when even; before it, the previous
/// round's state (the seed's, closed, before round 1).
fn scaledown_prepare(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let before = round > 0 && round.is_multiple_of(2);
        eventually(Duration::from_secs(30), || async {
            (scale_down_enabled(setup).await? == before).then_some(())
        })
        .await
        .unwrap();
    })
}

fn scaledown_change(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let window = daily_window(!round.is_multiple_of(2));
        apply(&setup.admin, &schedule_doc(&setup.namespace, &[window]))
            .await
            .unwrap();
    })
}

fn scaledown_done(setup: &Setup, round: u32) -> Check<'_> {
    Box::pin(async move { scale_down_enabled(setup).await == Some(!round.is_multiple_of(2)) })
}

fn scaledown_window() -> Subject {
    Subject {
        chart: "scaledown-window",
        binary: "scaledown-window",
        namespaced: false,
        target: "clusterautoscalers",
        seed: scaledown_seed,
        prepare: scaledown_prepare,
        change: scaledown_change,
        done: scaledown_done,
        after: nothing,
    }
}

#[tokio::test]
async fn scaledown_window_through_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    run(scaledown_window()).await;
}

/// A one-minute window that opens while the server is frozen and closes while it is down.
#[tokio::test]
async fn scaledown_window_edges_during_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    let subject = scaledown_window();
    let setup = Setup::new(subject.chart, "e2e-af-sdedge", false, &[])
        .await
        .unwrap();
    // The next minute boundary at least 15 s away.
    let mut opens = ebb_e2e::whole_minute(Timestamp::now()) + SignedDuration::from_mins(1);
    if opens.duration_since(Timestamp::now()).as_secs() < 15 {
        opens += SignedDuration::from_mins(1);
    }
    let closes = opens + SignedDuration::from_mins(1);
    let name = setup.namespace.clone();
    apply(
        &setup.admin,
        &json!({"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
                "metadata": {"name": name}, "spec": {"scaleDown": {"enabled": true}}}),
    )
    .await
    .unwrap();
    let cron = format!("{} * * *", ebb_e2e::cron_minute_hour(opens));
    apply(&setup.admin, &schedule_doc(&name, &[(cron, "1m")]))
        .await
        .unwrap();
    let mut server = ApiServer::start(cluster()).await.unwrap();
    let controller = replica_on(&server, &subject, &setup, &setup.identity.kubeconfig, "a").await;
    let enabled = |want: bool| {
        let setup = &setup;
        async move { scale_down_enabled(setup).await == Some(want) }
    };
    eventually(Duration::from_secs(15), || async {
        enabled(false).await.then_some(())
    })
    .await
    .unwrap();
    across_edges(
        &subject,
        &setup,
        &mut server,
        controller,
        (opens, closes),
        enabled,
    )
    .await;
}

// --- stackable-scaler: a StatefulSet and its scaler without hooks; the change is a /scale
// write, the effect the workload's replicas; the test settles the workload after each.

fn stackable_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::stackable_db(setup).await.unwrap();
    })
}

async fn stackable_scalers(setup: &Setup) -> Api<DynamicObject> {
    setup
        .dynamic("autoscaling.stackable.tech", "v1alpha1", "StackableScaler")
        .await
        .unwrap()
}

/// The scaler idle at the previous round's size.
fn stackable_prepare(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let want = 2 + i64::from(round) - i64::from(round > 0);
        let scalers = stackable_scalers(setup).await;
        eventually(Duration::from_secs(30), || async {
            let s = scalers.get("db").await.ok()?;
            let idle = s.data["status"]["currentState"]["stage"] == json!({"stage": "idle"});
            (idle && s.data["status"]["replicas"] == json!(want)).then_some(())
        })
        .await
        .unwrap();
    })
}

fn stackable_change(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        stackable_scalers(setup)
            .await
            .patch_scale(
                "db",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 2 + round}})),
            )
            .await
            .unwrap();
    })
}

fn stackable_done(setup: &Setup, round: u32) -> Check<'_> {
    Box::pin(async move {
        let sets: Api<StatefulSet> = Api::namespaced(setup.admin.clone(), &setup.namespace);
        let want = 2 + i32::try_from(round).unwrap();
        sets.get("db")
            .await
            .ok()
            .and_then(|s| s.spec)
            .is_some_and(|s| s.replicas == Some(want))
    })
}

fn stackable_after(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::settle_db(setup, 2 + i32::try_from(round).unwrap())
            .await
            .unwrap();
    })
}

#[tokio::test]
async fn stackable_scaler_through_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    run(Subject {
        chart: "stackable-scaler",
        binary: "stackable-scaler",
        namespaced: true,
        target: "statefulsets",
        seed: stackable_seed,
        prepare: stackable_prepare,
        change: stackable_change,
        done: stackable_done,
        after: stackable_after,
    })
    .await;
}

// --- workshop-scaler: on Babylon's CRDs with `spec.autoScaling`, each round has a Workshop of
// its own with one provision and four free seats; the change takes three of them, and the
// provision doubles.

fn workshop_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::babylon_crds(&setup.admin, true)
            .await
            .unwrap();
    })
}

fn seat(round: u32, i: u32, taken: bool) -> serde_json::Value {
    let mut spec = json!({"workshopName": format!("ws-{round}"),
                          "resourceClaimName": format!("claim-{round}-{i}")});
    if taken {
        spec["assignment"] = json!({"email": format!("user{i}@example.com")});
    }
    json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopUserAssignment",
           "metadata": {"name": format!("seat-{round}-{i}")}, "spec": spec})
}

async fn provision(setup: &Setup, round: u32) -> Option<DynamicObject> {
    setup
        .dynamic("babylon.gpte.redhat.com", "v1", "WorkshopProvision")
        .await
        .ok()?
        .get(&format!("wp-{round}"))
        .await
        .ok()
}

fn workshop_prepare(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::autoscaled_workshop(
            setup,
            &format!("ws-{round}"),
            &format!("wp-{round}"),
        )
        .await
        .unwrap();
        for i in 0..4 {
            setup.apply(seat(round, i, false)).await.unwrap();
        }
        // Converged: the provision's status reports the decision.
        eventually(Duration::from_secs(30), || async {
            let p = provision(setup, round).await?;
            p.data["status"]["conditions"].as_array().map(|_| ())
        })
        .await
        .unwrap();
    })
}

fn workshop_change(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        for i in 0..3 {
            setup.apply(seat(round, i, true)).await.unwrap();
        }
    })
}

fn workshop_done(setup: &Setup, round: u32) -> Check<'_> {
    Box::pin(async move {
        provision(setup, round)
            .await
            .and_then(|p| p.data["spec"]["count"].as_i64())
            .is_some_and(|count| count > 1)
    })
}

#[tokio::test]
async fn workshop_scaler_through_faults() {
    if !ebb_e2e::apiserver::restartable() {
        return;
    }
    run(Subject {
        chart: "workshop-scaler",
        binary: "workshop-scaler",
        namespaced: true,
        target: "workshopprovisions",
        seed: workshop_seed,
        prepare: workshop_prepare,
        change: workshop_change,
        done: workshop_done,
        after: nothing,
    })
    .await;
}
