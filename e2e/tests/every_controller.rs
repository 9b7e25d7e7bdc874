//! What every controller binary must do, checked on each of the four: `/readyz` turns green and
//! `/metrics` parses with the controller's series; two replicas elect one leader and only it
//! writes; an idle minute after convergence costs no write (Lease renewals aside, counted from
//! the API server's audit log by token); SIGTERM hands the Lease to the standby within 3 s, and
//! the new leader acts; after a SIGKILL (the Lease not released) a change made while nobody
//! leads is acted on by the replica that takes the Lease when it expires.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use ebb_e2e::rbac::{apply, resource};
use ebb_e2e::{Controller, Setup, audit, cluster, eventually};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

/// How long a trigger waits for its effect: long enough for a Lease left by a SIGKILLed leader
/// to expire and the next replica to act.
const EFFECT_WITHIN: Duration = Duration::from_secs(45);

type Step<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One controller's part of the scenario.
struct Subject {
    chart: &'static str,
    binary: &'static str,
    /// Watches only its namespace (`--namespace`), or the cluster.
    namespaced: bool,
    /// Creates what the controller manages and waits until it has converged.
    seed: for<'a> fn(&'a Setup) -> Step<'a>,
    /// Changes something so that the leader must write, and waits for that write's effect;
    /// `round` tells the first trigger from the second.
    trigger: for<'a> fn(&'a Setup, u32) -> Step<'a>,
}

fn metric_name(binary: &str) -> String {
    format!("ebb_{}_reconciles_total", binary.replace('-', "_"))
}

async fn holder(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases.get(name).await.ok()?.spec?.holder_identity
}

/// Starts replica `name` of `binary` with a token of its own (so the audit log tells the
/// replicas apart), not waiting for it to be ready; returns it and its credential id.
async fn start_replica(
    setup: &Setup,
    binary: &str,
    name: &str,
    args: &[&str],
) -> (Controller, String) {
    let (config, credential) = setup
        .identity
        .replica(cluster(), &setup.admin, name)
        .await
        .unwrap();
    let controller = Controller::start_with(binary, &setup.identity, &config, name, args).unwrap();
    (controller, credential)
}

async fn run(subject: Subject) {
    let setup = Setup::new(
        subject.chart,
        &format!("e2e-{}", &subject.binary[..5]),
        subject.namespaced,
        &[],
    )
    .await
    .unwrap();
    let ns = setup.namespace.clone();
    (subject.seed)(&setup).await;

    let mut args = vec![];
    if subject.namespaced {
        args.extend(["--namespace", ns.as_str()]);
    }
    let cluster = cluster();
    let (mut a, credential_a) = start_replica(&setup, subject.binary, "a", &args).await;
    let (mut b, credential_b) = start_replica(&setup, subject.binary, "b", &args).await;
    let ready_a = a.wait_ready(Duration::from_secs(30)).await.unwrap();
    b.wait_ready(Duration::from_secs(30)).await.unwrap();
    println!(
        "figure: {} ready {} ms after start",
        subject.binary,
        ready_a.as_millis()
    );
    assert_eq!(a.health().unwrap(), (200, 200));
    for replica in [&a, &b] {
        let reconciles = replica.metric(&metric_name(subject.binary), &[]);
        assert!(reconciles.is_ok(), "{}: {reconciles:?}", subject.binary);
    }

    // One leader; the release's name is the Lease's (as the chart passes --lease-name).
    let leases: Api<Lease> = Api::namespaced(setup.admin.clone(), &ns);
    let leader = eventually(Duration::from_secs(20), || async {
        holder(&leases, &setup.identity.release).await
    })
    .await
    .unwrap_or_else(|e| panic!("no leader: {e}\n{}", a.log_tail()));
    let (mut leader_proc, standby, leader_cred, standby_cred) = if leader == "a" {
        (a, b, credential_a, credential_b)
    } else {
        (b, a, credential_b, credential_a)
    };
    // `_leader` says which replica holds the Lease; `_build_info` which release runs, and which
    // tzdb release its zones come from.
    let gauge = format!("ebb_{}_leader", subject.binary.replace('-', "_"));
    let leading = |p: &Controller| p.metric(&gauge, &[]).ok();
    eventually(Duration::from_secs(10), || async {
        (leading(&leader_proc) == Some(1.0) && leading(&standby) == Some(0.0)).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{gauge}: leader {:?}, standby {:?}: {e}",
            leading(&leader_proc),
            leading(&standby)
        )
    });
    let (_, body) = leader_proc.get("/metrics").unwrap();
    let build_info = format!(
        "ebb_{}_build_info{{controller=\"{}\",version=\"{}\",tzdata=\"20",
        subject.binary.replace('-', "_"),
        subject.binary,
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        body.contains(&build_info),
        "{}: no {build_info}...: {body}",
        subject.binary
    );
    // The client's requests, as the API server names them: the Lease renewals (patches) at least;
    // and the process's own series.
    let prefix = format!("ebb_{}", subject.binary.replace('-', "_"));
    // Every series of the controller carries its name as a label too.
    let label = format!("controller=\"{}\"", subject.binary);
    for series in [
        format!(
            "{prefix}_api_requests_total{{{label},verb=\"patch\",resource=\"leases\",code=\"200\"}}"
        ),
        format!("{prefix}_api_requests_total{{{label},verb=\"watch\""),
        format!("{prefix}_api_request_duration_seconds_bucket{{{label},"),
        // The work queue of each kind it reconciles, there from the start.
        format!("{prefix}_queue_depth{{{label},kind=\""),
        format!("{prefix}_queue_wait_seconds_count{{{label},kind=\""),
        // The standard process series, unprefixed.
        "process_resident_memory_bytes ".to_owned(),
        "process_cpu_seconds_total ".to_owned(),
        "process_open_fds ".to_owned(),
        "process_start_time_seconds ".to_owned(),
    ] {
        assert!(
            body.contains(&series),
            "{}: no {series}...: {body}",
            subject.binary
        );
    }

    // Converged: the seed's state reached. An idle minute writes nothing.
    (subject.trigger)(&setup, 0).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = cluster.audit_log.clone();
    let idle_from = Timestamp::now();
    tokio::time::sleep(Duration::from_secs(60)).await;
    if let Some(log) = &log {
        let user = setup.identity.username();
        let writes = audit::writes(log, &user, idle_from).unwrap();
        let all = audit::entries(log, &user, idle_from).unwrap();
        let renewals = all.iter().filter(|e| e.is_write() && e.is_lease()).count();
        let reads = all.iter().filter(|e| !e.is_write()).count();
        println!(
            "figure: {} idle minute: {} writes, {} lease renewals, {} reads (watches included)",
            subject.binary,
            writes.len(),
            renewals,
            reads
        );
        let described: Vec<String> = writes.iter().map(audit::Entry::describe).collect();
        assert!(
            writes.is_empty(),
            "{}: writes in an idle minute: {described:#?}",
            subject.binary
        );
    }
    println!(
        "figure: {} resident memory once converged: leader {} KiB, standby {} KiB",
        subject.binary,
        leader_proc.rss_kib().unwrap(),
        standby.rss_kib().unwrap()
    );

    // A change: only the leader's token writes.
    let since = Timestamp::now();
    (subject.trigger)(&setup, 1).await;
    if let Some(log) = &log {
        let writes = audit::writes(log, &setup.identity.username(), since).unwrap();
        assert!(
            !writes.is_empty(),
            "{}: the change was written",
            subject.binary
        );
        for write in &writes {
            assert_eq!(
                write.credential_id(),
                Some(leader_cred.as_str()),
                "{}: only the leader writes, but the standby did: {}",
                subject.binary,
                write.describe()
            );
        }
    }

    // SIGTERM: the Lease goes to the standby within 3 s, and it acts.
    let stopped = Instant::now();
    leader_proc.terminate().unwrap();
    let new_leader = eventually(Duration::from_secs(20), || async {
        holder(&leases, &setup.identity.release)
            .await
            .filter(|h| *h == standby.pod_name)
    })
    .await
    .unwrap_or_else(|e| panic!("no hand-over: {e}\n{}", standby.log_tail()));
    let handover = stopped.elapsed();
    println!(
        "figure: {} SIGTERM hand-over {} ms",
        subject.binary,
        handover.as_millis()
    );
    assert_eq!(new_leader, standby.pod_name);
    assert!(
        handover < Duration::from_secs(3),
        "{}: hand-over took {handover:?}",
        subject.binary
    );
    let status = leader_proc
        .wait_exit(Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        status.success(),
        "{}: the old leader exits cleanly: {status}",
        subject.binary
    );
    let since = Timestamp::now();
    (subject.trigger)(&setup, 2).await;
    if let Some(log) = &log {
        let writes = audit::writes(log, &setup.identity.username(), since).unwrap();
        assert!(
            writes
                .iter()
                .all(|w| w.credential_id() == Some(standby_cred.as_str()))
        );
    }

    // SIGKILL: the Lease is not released. A change made while nobody leads is acted on, once,
    // by the standby that takes the Lease when it expires.
    let (mut c, credential_c) = start_replica(&setup, subject.binary, "c", &args).await;
    c.wait_ready(Duration::from_secs(30)).await.unwrap();
    let mut second_leader = standby;
    let killed = Instant::now();
    let since = Timestamp::now();
    second_leader.kill().unwrap();
    (subject.trigger)(&setup, 3).await;
    let took = killed.elapsed();
    assert_eq!(
        holder(&leases, &setup.identity.release).await.as_deref(),
        Some("c"),
        "{}: the last replica leads after the kill",
        subject.binary
    );
    println!(
        "figure: {} SIGKILL take-over and the change acted on {} ms",
        subject.binary,
        took.as_millis()
    );
    let bound = Duration::from_secs(ebb_runtime::lead::leader::LEASE_DURATION_SECS + 10);
    assert!(
        took < bound,
        "{}: the take-over took {took:?}",
        subject.binary
    );
    if let Some(log) = &log {
        let writes = audit::writes(log, &setup.identity.username(), since).unwrap();
        let described: Vec<String> = writes.iter().map(audit::Entry::describe).collect();
        assert!(
            !writes.is_empty()
                && writes
                    .iter()
                    .all(|w| w.credential_id() == Some(credential_c.as_str())),
            "{}: after the kill only the new leader writes: {described:#?}",
            subject.binary
        );
    }
    c.stop().await;
}

// --- service-scaler: a ServiceScaler without ranges; the trigger changes maxReplicas.

fn service_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        setup.apply(scaler_doc(10)).await.unwrap();
    })
}

fn scaler_doc(max: i64) -> serde_json::Value {
    json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler", "metadata": {"name": "web"},
           "spec": {"hpa": {"minReplicas": 2, "maxReplicas": max, "targetCPUUtilization": 70}}})
}

fn service_trigger(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let max = 10 + i32::try_from(round).unwrap();
        setup.apply(scaler_doc(i64::from(max))).await.unwrap();
        let hpas: Api<HorizontalPodAutoscaler> =
            Api::namespaced(setup.admin.clone(), &setup.namespace);
        eventually(EFFECT_WITHIN, || async {
            let hpa = hpas.get("web").await.ok()?;
            (hpa.spec?.max_replicas == max).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("service-scaler round {round}: {e}"));
    })
}

#[tokio::test]
async fn service_scaler() {
    run(Subject {
        chart: "service-scaler",
        binary: "service-scaler",
        namespaced: true,
        seed: service_seed,
        trigger: service_trigger,
    })
    .await;
}

// --- scaledown-window: a ClusterAutoscaler of the test's own name and a schedule whose one
// window is not open; the trigger turns scale-down on behind ebb's back, which ebb reverts.

async fn autoscalers(admin: &Client) -> Api<DynamicObject> {
    Api::all_with(
        admin.clone(),
        &resource(admin, "autoscaling.openshift.io", "v1", "ClusterAutoscaler")
            .await
            .unwrap(),
    )
}

fn scaledown_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        let name = &setup.namespace;
        apply(
            &setup.admin,
            &json!({
                "apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
                "metadata": {"name": name}, "spec": {"scaleDown": {"enabled": true}}
            }),
        )
        .await
        .unwrap();
        apply(&setup.admin, &json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule",
            "metadata": {"name": name},
            "spec": {"target": {"clusterAutoscaler": {"name": name}},
                     "windows": [{"schedule": "0 3 29 2 *", "duration": "1h", "timeZone": "UTC"}]}
        }))
        .await
        .unwrap();
    })
}

fn scaledown_trigger(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let api = autoscalers(&setup.admin).await;
        let name = setup.namespace.clone();
        if round > 0 {
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"scaleDown": {"enabled": true}}})),
            )
            .await
            .unwrap();
        }
        eventually(EFFECT_WITHIN, || async {
            let ca = api.get(&name).await.ok()?;
            (ca.data["spec"]["scaleDown"]["enabled"] == json!(false)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("scaledown-window round {round}: {e}"));
    })
}

#[tokio::test]
async fn scaledown_window() {
    run(Subject {
        chart: "scaledown-window",
        binary: "scaledown-window",
        namespaced: false,
        seed: scaledown_seed,
        trigger: scaledown_trigger,
    })
    .await;
}

// --- stackable-scaler: a StatefulSet and its scaler without hooks; the trigger scales through
// /scale and settles the workload as its controller would.

fn stackable_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::stackable_db(setup).await.unwrap();
    })
}

async fn settle(setup: &Setup, replicas: i32) {
    ebb_e2e::fixtures::settle_db(setup, replicas).await.unwrap();
}

fn stackable_trigger(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let admin = &setup.admin;
        let scalers: Api<DynamicObject> = Api::namespaced_with(
            admin.clone(),
            &setup.namespace,
            &resource(
                admin,
                "autoscaling.stackable.tech",
                "v1alpha1",
                "StackableScaler",
            )
            .await
            .unwrap(),
        );
        let target = 2 + i32::try_from(round).unwrap();
        let idle_at = |want: i32| {
            let scalers = scalers.clone();
            async move {
                eventually(EFFECT_WITHIN, || async {
                    let s = scalers.get("db").await.ok()?;
                    let idle =
                        s.data["status"]["currentState"]["stage"] == json!({"stage": "idle"});
                    (idle && s.data["status"]["replicas"] == json!(want)).then_some(())
                })
                .await
                .unwrap_or_else(|e| panic!("stackable-scaler round {round}: {e}"));
            }
        };
        if round == 0 {
            idle_at(2).await;
            return;
        }
        scalers
            .patch_scale(
                "db",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": target}})),
            )
            .await
            .unwrap();
        let sets: Api<StatefulSet> = Api::namespaced(admin.clone(), &setup.namespace);
        eventually(EFFECT_WITHIN, || async {
            (sets.get("db").await.ok()?.spec?.replicas == Some(target)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("stackable-scaler round {round}: workload not scaled: {e}"));
        settle(setup, target).await;
        idle_at(target).await;
    })
}

#[tokio::test]
async fn stackable_scaler() {
    run(Subject {
        chart: "stackable-scaler",
        binary: "stackable-scaler",
        namespaced: true,
        seed: stackable_seed,
        trigger: stackable_trigger,
    })
    .await;
}

// --- workshop-scaler: on Babylon's CRDs with `spec.autoScaling` (the auto-scaling PR's; this
// test binary's cluster is its own), a workshop whose seats fill in rounds. Each trigger takes
// more seats and releases the previous scale-up by settling its claims.

fn workshop_seed(setup: &Setup) -> Step<'_> {
    Box::pin(async move {
        ebb_e2e::fixtures::babylon_crds(&setup.admin, true)
            .await
            .unwrap();
        ebb_e2e::fixtures::autoscaled_workshop(setup, "ws", "wp")
            .await
            .unwrap();
        for i in 0..8 {
            setup.apply(seat(i, false)).await.unwrap();
        }
    })
}

fn seat(i: u32, taken: bool) -> serde_json::Value {
    let mut spec = json!({"workshopName": "ws", "resourceClaimName": format!("claim-{i}")});
    if taken {
        spec["assignment"] = json!({"email": format!("user{i}@example.com")});
    }
    json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopUserAssignment",
           "metadata": {"name": format!("seat-{i}")}, "spec": spec})
}

fn workshop_trigger(setup: &Setup, round: u32) -> Step<'_> {
    Box::pin(async move {
        let admin = &setup.admin;
        let provisions: Api<DynamicObject> = Api::namespaced_with(
            admin.clone(),
            &setup.namespace,
            &resource(admin, "babylon.gpte.redhat.com", "v1", "WorkshopProvision")
                .await
                .unwrap(),
        );
        if round == 0 {
            // Converged: the provision's status reports the decision.
            eventually(EFFECT_WITHIN, || async {
                let p = provisions.get("wp").await.ok()?;
                p.data["status"]["conditions"].as_array().map(|_| ())
            })
            .await
            .unwrap_or_else(|e| panic!("workshop-scaler never reported: {e}"));
            return;
        }
        // The claims of the last scale-up are ready: the flag is released, then seats fill past
        // the threshold again and the provision doubles.
        let before = provisions.get("wp").await.unwrap().data["spec"]["count"]
            .as_i64()
            .unwrap();
        for i in 0..before {
            setup
                .apply(json!({
                    "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
                    "metadata": {"name": format!("claim-{round}-{i}"),
                                 "labels": {"babylon.gpte.redhat.com/workshop-provision": "wp"}},
                    "spec": {"resources": [{"provider": {"name": "lab"}}]}
                }))
                .await
                .unwrap();
            let claims: Api<DynamicObject> = Api::namespaced_with(
                admin.clone(),
                &setup.namespace,
                &resource(admin, "poolboy.gpte.redhat.com", "v1", "ResourceClaim")
                    .await
                    .unwrap(),
            );
            claims
                .patch_status(
                    &format!("claim-{round}-{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"ready": true, "healthy": true}})),
                )
                .await
                .unwrap();
        }
        for i in 0..(4 * round) {
            setup.apply(seat(i, true)).await.unwrap();
        }
        eventually(EFFECT_WITHIN, || async {
            let p = provisions.get("wp").await.ok()?;
            (p.data["spec"]["count"].as_i64()? > before).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("workshop-scaler round {round}: no scale-up: {e}"));
    })
}

#[tokio::test]
async fn workshop_scaler() {
    run(Subject {
        chart: "workshop-scaler",
        binary: "workshop-scaler",
        namespaced: true,
        seed: workshop_seed,
        trigger: workshop_trigger,
    })
    .await;
}

// --- Two leaders: the old one cut off from its Lease and shown it late, the new one's wall clock
// ahead. The audit log (requests told apart by User-Agent) shows who wrote when.

/// libfaketime's library for threaded programs (Debian's `libfaketime`), wherever the
/// architecture puts it.
fn libfaketime() -> std::path::PathBuf {
    std::fs::read_dir("/usr/lib")
        .unwrap()
        .filter_map(Result::ok)
        .map(|dir| dir.path().join("faketime/libfaketimeMT.so.1"))
        .find(|path| path.exists())
        .expect("libfaketime is missing: apt-get install libfaketime (.ci/run does)")
}

/// Replica `a` leads service-scaler; then a proxy refuses its Lease writes and holds back its
/// watch of the Lease by [`WATCH_DELAY`], and replica `b` starts with its wall clock
/// [`CLOCK_AHEAD`] ahead. While the ServiceScaler changes every 400 ms, `b` takes over, and no
/// write of `a` succeeds after `b`'s first: `a` stops at its own fence ([`WRITE_MARGIN`] before
/// its last renewal could expire) and `b` waits until it has seen the Lease unchanged for its
/// whole duration, whatever its clock says.
#[tokio::test]
async fn two_leaders_never_write_at_once() {
    const WATCH_DELAY: Duration = Duration::from_secs(40);
    const CLOCK_AHEAD: &str = "+20s";
    const CHANGES_FOR: Duration = Duration::from_secs(35);
    let setup = Setup::new("service-scaler", "e2e-leaders", true, &[])
        .await
        .unwrap();
    let Some(log) = cluster().audit_log.clone() else {
        println!("skipped: the audit log is the local cluster's only");
        return;
    };
    service_seed(&setup).await;
    let args = ["--namespace", setup.namespace.as_str()];
    let leases: Api<Lease> = Api::namespaced(setup.admin.clone(), &setup.namespace);

    let (config_a, credential_a) = setup
        .identity
        .replica(cluster(), &setup.admin, "a")
        .await
        .unwrap();
    let proxy = ebb_e2e::proxy::LeaseProxy::start(&config_a, WATCH_DELAY)
        .await
        .unwrap();
    let proxied = proxy.kubeconfig(&config_a).unwrap();
    let mut a =
        Controller::start_with("service-scaler", &setup.identity, &proxied, "a", &args).unwrap();
    a.wait_ready(Duration::from_secs(30)).await.unwrap();
    eventually(Duration::from_secs(20), || async {
        holder(&leases, &setup.identity.release)
            .await
            .filter(|h| h == "a")
    })
    .await
    .unwrap_or_else(|e| panic!("a does not lead: {e}\n{}", a.log_tail()));

    let since = Timestamp::now();
    proxy.cut();
    let (config_b, credential_b) = setup
        .identity
        .replica(cluster(), &setup.admin, "b")
        .await
        .unwrap();
    let preload = libfaketime();
    let b = Controller::start_env(
        "service-scaler",
        &setup.identity,
        &config_b,
        "b",
        &args,
        &[
            ("LD_PRELOAD", preload.to_str().unwrap()),
            ("FAKETIME", CLOCK_AHEAD),
        ],
    )
    .unwrap();
    let started = Instant::now();
    let mut max = 10;
    while started.elapsed() < CHANGES_FOR {
        max += 1;
        setup.apply(scaler_doc(max)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(setup.admin.clone(), &setup.namespace);
    let last = i32::try_from(max).unwrap();
    eventually(Duration::from_secs(20), || async {
        let hpa = hpas.get("web").await.ok()?;
        (hpa.spec?.max_replicas == last).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("the new leader does not act: {e}\n{}", b.log_tail()));
    assert_eq!(
        holder(&leases, &setup.identity.release).await.as_deref(),
        Some("b")
    );

    let writes: Vec<_> = audit::writes(&log, &setup.identity.username(), since)
        .unwrap()
        .into_iter()
        .filter(|w| {
            !w.is_lease()
                && w.object_ref
                    .as_ref()
                    .is_some_and(|o| o.resource != "events")
                && w.response_status
                    .as_ref()
                    .is_some_and(|s| (200..300).contains(&s.code))
        })
        .collect();
    let at = |w: &audit::Entry| w.request_received_timestamp;
    let of = |w: &audit::Entry, credential: &str| w.credential_id() == Some(credential);
    let a_last = writes.iter().filter(|w| of(w, &credential_a)).map(at).max();
    let b_first = writes
        .iter()
        .filter(|w| of(w, &credential_b))
        .map(at)
        .min()
        .expect("b wrote");
    let a_last = a_last.expect("a wrote after it was cut off: the test shows a leader cut off");
    println!(
        "figure: service-scaler two leaders: the new one's first write {} ms after the old one's last",
        b_first.as_millisecond() - a_last.as_millisecond()
    );
    let late: Vec<_> = writes
        .iter()
        .filter(|w| of(w, &credential_a) && at(w) >= b_first)
        .map(audit::Entry::describe)
        .collect();
    assert!(
        late.is_empty(),
        "the old leader wrote after the new leader's first write at {b_first}: {late:#?}"
    );
    // Each replica's requests carry its own User-Agent.
    for write in &writes {
        let pod = if of(write, &credential_a) { "a" } else { "b" };
        assert!(
            write.from_pod(pod),
            "a write of {pod} without its User-Agent: {:?} {}",
            write.user_agent,
            write.describe()
        );
    }
    a.stop().await;
    b.stop().await;
}
