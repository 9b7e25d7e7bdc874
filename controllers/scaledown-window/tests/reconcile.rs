//! Reconciler tests against the in-memory API, per target kind, with a manual clock: the exact
//! fields written, zero writes when nothing changes, injected faults converging without acting
//! twice, what ebb did not set left alone, the fail-safe, conflicts, pause, dry-run, deletion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_crds::calendar::HolidayCalendar;
use ebb_runtime::process::cleanup::Leave;
use ebb_runtime::watch::calendars::CalendarCache;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{MAX_ATTEMPTS, Shared};
use ebb_runtime::watch::cache::Feed;
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::projected::{Projected, ProjectedFeed};
use ebb_runtime::{ControllerMetrics, EventKind, Leader};
use ebb_testkit::{Fault, Harness, Matcher, PatchKind, RecordedRequest, utc};
use http::Method;
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Node;
use kube::core::PartialObjectMeta;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

use ebb_runtime::execute::frame::{self, ReconcileError, Reconciler};
use scaledown_window::cleanup::release_all;
use scaledown_window::decide;
use scaledown_window::decide::{DISABLED_BY_ANNOTATION, NodeView, SCALE_DOWN_DISABLED_ANNOTATION};
use scaledown_window::metrics::Metrics;
use scaledown_window::reconcile::*;
use scaledown_window::{CONTROLLER_NAME, FIELD_MANAGER, node_view};

const FRIDAY_NOON: &str = "2026-03-27T11:00:00Z";
const FRIDAY_NIGHT: &str = "2026-03-27T19:00:00Z";
const SATURDAY_MORNING: &str = "2026-03-28T06:00:00Z";
const ME: &str = "workday-nights";
const MA_NS: &str = "openshift-machine-api";

/// The harness (`fake`, `clock`, `events`, through `Deref`) and the frame's context.
struct Test {
    h: Harness,
    ctx: Arc<Context>,
    /// What the Node watch would have put in the context's cache by now ([`Test::ctx`]).
    nodes: Mutex<ProjectedFeed<PartialObjectMeta<Node>, NodeView>>,
    /// What the HolidayCalendar watch would have put in the context's cache by now.
    calendars: Mutex<Feed<Guarded<HolidayCalendar>>>,
}

impl Deref for Test {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.h
    }
}

impl Test {
    fn new(at: &str) -> Self {
        Self::with(at, EnabledTargets::all(), false)
    }

    fn with(at: &str, targets: EnabledTargets, dry_run: bool) -> Self {
        Self::with_leader(at, targets, dry_run, Leader::disabled())
    }

    fn with_leader(at: &str, targets: EnabledTargets, dry_run: bool, leader: Leader) -> Self {
        let h = Harness::new(at, CONTROLLER_NAME);
        let metrics = h.register(Metrics::new);
        let mut cache = Projected::default();
        let nodes = Mutex::new(cache.scope(node_view));
        let (calendars, calendar_feed) = CalendarCache::fed();
        let ctx = Arc::new(
            Context::new(
                h.shared_with(dry_run, leader),
                Own {
                    metrics,
                    targets,
                    nodes: cache,
                    schedules: None,
                    calendars,
                },
            )
            .without_jitter(),
        );
        Self {
            h,
            ctx,
            nodes,
            calendars: Mutex::new(calendar_feed),
        }
    }

    /// The context for a reconcile, its Node cache holding the Nodes the fake holds now (as if
    /// the watch had caught up).
    fn ctx(&self) -> Arc<Context> {
        self.nodes
            .lock()
            .unwrap()
            .fill(self.fake.list::<PartialObjectMeta<Node>>());
        self.calendars
            .lock()
            .unwrap()
            .fill(self.fake.list::<Guarded<HolidayCalendar>>());
        self.ctx.clone()
    }

    /// A Node cache holding the Nodes the fake holds now, for another context.
    fn node_cache(&self) -> Projected<NodeView> {
        let mut cache = Projected::default();
        cache
            .scope(node_view)
            .fill(self.fake.list::<PartialObjectMeta<Node>>());
        cache
    }

    fn schedule(&self, name: &str) -> ScaleDownSchedule {
        self.fake.get("", name).unwrap()
    }

    /// One reconcile as the controller runs it: through the frame (a conflict re-reads the
    /// schedule and runs the pass again).
    async fn reconcile(&self, name: &str) -> Result<Requeue, frame::Error<Error>> {
        frame::reconcile(self.guard(name), self.ctx()).await
    }

    /// One pass alone, without the frame: what a pass that meets a conflict returns.
    async fn pass(&self, name: &str) -> Result<Requeue, Error> {
        <Own as Reconciler<ScaleDownSchedule>>::reconcile(
            Arc::new(self.schedule(name)),
            &self.ctx(),
        )
        .await
    }

    fn guard(&self, name: &str) -> Arc<Guarded<ScaleDownSchedule>> {
        Arc::new(Guarded(Ok(self.schedule(name))))
    }

    /// Reconciles until a pass succeeds (at most five), as the controller retries.
    async fn converge(&self, name: &str) -> Requeue {
        for _ in 0..5 {
            if let Ok(action) = self.reconcile(name).await {
                return action;
            }
        }
        panic!("{name} did not converge");
    }

    fn set(&self, at: &str) {
        self.clock.set(utc(at));
    }

    /// Writes to anything but ScaleDownSchedules.
    fn target_writes(&self) -> Vec<RecordedRequest> {
        self.fake
            .writes()
            .into_iter()
            .filter(|r| !r.path.contains("/scaledownschedules/"))
            .collect()
    }

    fn status_writes(&self) -> Vec<RecordedRequest> {
        self.fake.writes_matching(&Matcher::patch("/status"))
    }

    fn ca(&self) -> Value {
        self.fake
            .get_json(
                "autoscaling.openshift.io/v1",
                "ClusterAutoscaler",
                "",
                "default",
            )
            .unwrap()
    }

    fn metrics(&self) -> String {
        self.h.metrics_text()
    }

    fn condition(&self, name: &str, type_: &str) -> (String, String, String) {
        let status = self.schedule(name).status.unwrap();
        let c = status.conditions.iter().find(|c| c.type_ == type_).unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }
}

fn nights() -> Value {
    json!([{ "schedule": "0 20 * * 1-5", "duration": "11h", "timeZone": "Europe/Zurich" }])
}

fn schedule(name: &str, target: Value, windows: Value) -> Value {
    json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1",
        "kind": "ScaleDownSchedule",
        "metadata": { "name": name, "finalizers": [FINALIZER] },
        "spec": { "target": target, "windows": windows },
    })
}

fn ca_target() -> Value {
    json!({ "clusterAutoscaler": { "name": "default" } })
}

fn cluster_autoscaler(enabled: bool) -> Value {
    json!({
        "apiVersion": "autoscaling.openshift.io/v1",
        "kind": "ClusterAutoscaler",
        "metadata": { "name": "default" },
        "spec": {
            "scaleDown": { "enabled": enabled, "delayAfterAdd": "10m", "unneededTime": "5m" },
            "resourceLimits": { "maxNodesTotal": 24 },
        },
    })
}

fn secs(d: SignedDuration) -> Requeue {
    Requeue::After(std::time::Duration::try_from(d).unwrap())
}

// ----- ClusterAutoscaler ------------------------------------------------------------------------

#[tokio::test]
async fn cluster_autoscaler_gets_exactly_the_owned_field_by_server_side_apply() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));

    let action = t.reconcile(ME).await.unwrap();
    // Requeued exactly at the window's opening, Friday 20:00 CET.
    assert_eq!(
        action,
        secs(utc(FRIDAY_NIGHT).duration_since(utc(FRIDAY_NOON)))
    );

    let writes = t.target_writes();
    assert_eq!(writes.len(), 1);
    let apply = &writes[0];
    assert_eq!(apply.method, Method::PATCH);
    assert_eq!(
        apply.path,
        "/apis/autoscaling.openshift.io/v1/clusterautoscalers/default"
    );
    assert_eq!(apply.patch, Some(PatchKind::Apply));
    assert_eq!(apply.query_param("fieldManager"), Some(FIELD_MANAGER));
    assert_eq!(apply.query_param("force"), Some("true"));
    // The uid read is the apply's precondition (apply would make a deleted object again).
    assert_eq!(
        apply.body,
        Some(json!({
            "apiVersion": "autoscaling.openshift.io/v1",
            "kind": "ClusterAutoscaler",
            "metadata": { "name": "default", "uid": t.ca()["metadata"]["uid"] },
            "spec": { "scaleDown": { "enabled": false } },
        }))
    );
    // Nothing else in the ClusterAutoscaler changed.
    let mut expected = cluster_autoscaler(false);
    let ca = t.ca();
    expected["metadata"] = ca["metadata"].clone();
    assert_eq!(ca, expected);

    let status = t.schedule(ME).status.unwrap();
    assert!(!status.scale_down_enabled);
    assert_eq!(status.active_window, None);
    assert_eq!(
        status
            .next_transition_time
            .map(|t| ebb_runtime::from_k8s_time(&t)),
        Some(utc(FRIDAY_NIGHT))
    );
    assert_eq!(status.next_transitions.len(), decide::PREVIEW_LEN);
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(
        t.condition(ME, decide::CONDITION_READY),
        (
            "True".into(),
            "ScaleDownDisabled".into(),
            "scale-down disabled: no window is open; applied to 1 ClusterAutoscaler".into()
        )
    );
    let events = t.events.events();
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled"]);
    assert_eq!(
        events[0].note,
        "no window open: set spec.scaleDown.enabled=false on ClusterAutoscaler default"
    );
    assert!(
        t.metrics()
            .contains("ebb_scaledown_window_scale_down_enabled{controller=\"scaledown-window\",name=\"workday-nights\"} 0")
    );
}

#[tokio::test]
async fn an_unchanged_reconcile_writes_nothing() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.reconcile(ME).await.unwrap();
    t.fake.clear_requests();
    t.events.clear();

    // Later, still inside the same closed period.
    t.set("2026-03-27T15:30:00Z");
    let action = t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);
    assert!(t.events.events().is_empty());
    assert_eq!(
        action,
        secs(utc(FRIDAY_NIGHT).duration_since(utc("2026-03-27T15:30:00Z")))
    );
}

#[tokio::test]
async fn window_opening_and_closing_flip_the_field() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.reconcile(ME).await.unwrap();

    t.set(FRIDAY_NIGHT);
    let action = t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    assert_eq!(
        action,
        secs(utc(SATURDAY_MORNING).duration_since(utc(FRIDAY_NIGHT)))
    );
    let status = t.schedule(ME).status.unwrap();
    assert!(status.scale_down_enabled);
    assert_eq!(status.active_window, Some(0));

    t.set(SATURDAY_MORNING);
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    // A field that is now empty is removed from the stored status, not left stale.
    assert_eq!(t.schedule(ME).status.unwrap().active_window, None);
    assert_eq!(
        t.events.reasons(),
        ["ScaleDownDisabled", "ScaleDownEnabled", "ScaleDownDisabled"]
    );
    let metrics = t.metrics();
    assert!(metrics.contains("ebb_scaledown_window_flips_total{controller=\"scaledown-window\",name=\"workday-nights\",scale_down_enabled=\"true\"} 1"), "{metrics}");
    assert!(metrics.contains("ebb_scaledown_window_flips_total{controller=\"scaledown-window\",name=\"workday-nights\",scale_down_enabled=\"false\"} 1"), "{metrics}");
    assert!(
        metrics.contains("ebb_scaledown_window_target_writes_total{controller=\"scaledown-window\",kind=\"ClusterAutoscaler\"} 3"),
        "{metrics}"
    );
}

#[tokio::test]
async fn injected_faults_on_the_target_converge_without_acting_twice() {
    for fault in [
        Fault::Status(409),
        Fault::Status(500),
        Fault::Timeout,
        Fault::TimeoutAfterApply,
    ] {
        let t = Test::new(FRIDAY_NOON);
        t.fake.insert(cluster_autoscaler(true));
        t.fake.insert(schedule(ME, ca_target(), nights()));
        t.fake
            .inject(Matcher::patch("/clusterautoscalers/default"), fault, 1);

        // One pass alone: the frame re-runs a pass that met a conflict (see
        // `a_conflict_on_the_target_is_read_again_and_decided_again_within_one_reconcile`).
        let error = t.pass(ME).await.unwrap_err();
        let expected = if fault == Fault::Status(409) {
            "conflict"
        } else {
            "write_target"
        };
        assert_eq!(error.category(), expected, "{fault:?}");
        // A failed pass writes no status (it would claim what did not happen).
        assert!(t.status_writes().is_empty(), "{fault:?}");

        t.converge(ME).await;
        assert_eq!(
            t.ca()["spec"]["scaleDown"]["enabled"],
            json!(false),
            "{fault:?}"
        );
        let ca_writes = t
            .fake
            .writes_matching(&Matcher::patch("/clusterautoscalers/"));
        // One failed attempt and one success, except when the failed one took effect: then the
        // retry sees the field already false and does not write again.
        let expected_writes = if fault == Fault::TimeoutAfterApply {
            1
        } else {
            2
        };
        assert_eq!(ca_writes.len(), expected_writes, "{fault:?}");
        assert_eq!(t.status_writes().len(), 1, "{fault:?}");
        assert_eq!(t.events.reasons(), ["ScaleDownDisabled"], "{fault:?}");
    }
}

#[tokio::test]
async fn status_write_failures_retry_without_writing_the_target_again() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake.fail_next(Matcher::patch("/status"), 500);
    assert_eq!(
        t.reconcile(ME).await.unwrap_err().category(),
        "write_status"
    );
    t.converge(ME).await;
    assert_eq!(
        t.fake
            .writes_matching(&Matcher::patch("/clusterautoscalers/"))
            .len(),
        1
    );
    assert_eq!(t.status_writes().len(), 2);
    // The retry found the target already right; the flip is announced once the status holds it.
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled"]);
}

/// The frame's error policy: transient errors back off per schedule (1 s, 2 s ...); a conflict
/// is no longer retried after a fixed 500 ms: the frame reads the schedule again and runs the
/// pass again within the reconcile, and conflicts on every pass back off like any failure.
#[tokio::test]
async fn error_policy_backs_off_and_conflicts_rerun_then_back_off() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(schedule(ME, ca_target(), nights()));
    let obj = t.guard(ME);
    let apply = || {
        frame::Error::Reconcile(Error::Write(
            frame::WriteError::of("write_status", "writing the status")(
                kube::Error::LinesCodecMaxLineLengthExceeded,
            )
            .into(),
        ))
    };
    let policy = |e: &frame::Error<Error>| frame::error_policy(&*obj, e, &t.ctx());
    assert_eq!(policy(&apply()), Requeue::After(Duration::from_secs(1)));
    assert_eq!(policy(&apply()), Requeue::After(Duration::from_secs(2)));
    let conflict = Error::Write(frame::Failure::stale("x"));
    assert!(conflict.is_conflict());
    let conflicts = frame::Error::<Error>::Conflicts {
        key: ME.into(),
        attempts: MAX_ATTEMPTS,
    };
    assert_eq!(conflicts.category(), "conflict");
    assert_eq!(policy(&conflicts), Requeue::After(Duration::from_secs(4)));
    // A success resets the backoff.
    t.reconcile(ME).await.unwrap();
    assert_eq!(policy(&apply()), Requeue::After(Duration::from_secs(1)));
}

/// A 409 on the target: the frame reads the schedule again and decides again in the same
/// reconcile, so one reconcile converges and writes the status once.
#[tokio::test]
async fn a_conflict_on_the_target_is_read_again_and_decided_again_within_one_reconcile() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake.inject(
        Matcher::patch("/clusterautoscalers/default"),
        Fault::Status(409),
        1,
    );
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    let statuses: Vec<_> = t
        .fake
        .writes_matching(&Matcher::patch("/clusterautoscalers/"))
        .iter()
        .map(|w| w.status)
        .collect();
    assert_eq!(statuses, [Some(409), Some(200)]);
    assert_eq!(t.status_writes().len(), 1);
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled"]);
    assert!(
        t.metrics().contains(
            "reconcile_errors_total{controller=\"scaledown-window\",category=\"conflict\"} 0"
        ),
        "the conflict was absorbed, not counted: {}",
        t.metrics()
    );
}

/// A ClusterAutoscaler deleted between the read and the apply is not made again by the apply
/// (an upsert): the apply names the uid read, the server refuses it, the schedule reads again and
/// reports the ClusterAutoscaler missing. Made again by someone else meanwhile, the new one is
/// written once.
#[tokio::test]
async fn a_cluster_autoscaler_deleted_between_read_and_apply_is_not_recreated() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake
        .before_next(Matcher::patch("/clusterautoscalers/default"), |fake| {
            fake.remove_json(
                "autoscaling.openshift.io/v1",
                "ClusterAutoscaler",
                "",
                "default",
            );
        });
    t.converge(ME).await;
    assert!(
        t.fake
            .get_json(
                "autoscaling.openshift.io/v1",
                "ClusterAutoscaler",
                "",
                "default"
            )
            .is_none(),
        "made again by the apply"
    );
    let applies = t
        .fake
        .writes_matching(&Matcher::patch("/clusterautoscalers/default"));
    assert_eq!(applies.len(), 1);
    assert_eq!(applies[0].status, Some(409));
    let (_, _, message) = t.condition(ME, decide::CONDITION_READY);
    assert!(
        message.contains("selects no ClusterAutoscaler"),
        "{message}"
    );

    // Deleted and made again (a new uid) between the read and the apply: 422 on metadata.uid,
    // read again, applied to the new one.
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake
        .before_next(Matcher::patch("/clusterautoscalers/default"), |fake| {
            fake.remove_json(
                "autoscaling.openshift.io/v1",
                "ClusterAutoscaler",
                "",
                "default",
            );
            fake.insert(cluster_autoscaler(true));
        });
    t.reconcile(ME).await.unwrap();
    let statuses: Vec<Option<u16>> = t
        .fake
        .writes_matching(&Matcher::patch("/clusterautoscalers/default"))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [Some(422), Some(200)]);
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
}

#[tokio::test]
async fn following_cluster_upgrades_enables_while_progressing() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(false));
    let mut s = schedule(ME, ca_target(), nights());
    s["spec"]["maintenance"] = json!({ "followClusterUpgrade": true });
    t.fake.insert(s);
    t.fake.insert(json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": { "name": "version" },
        "status": { "conditions": [
            { "type": "Available", "status": "True" },
            { "type": "Progressing", "status": "True" },
        ] },
    }));
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    assert!(
        t.condition(ME, decide::CONDITION_READY)
            .2
            .contains("the cluster is upgrading")
    );

    t.fake.modify_json(
        "config.openshift.io/v1",
        "ClusterVersion",
        "",
        "version",
        |cv| {
            cv["status"]["conditions"][1]["status"] = json!("False");
        },
    );
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));

    // With the ClusterVersion switched off, followClusterUpgrade has no effect (and it is not read).
    let off = Test::with(
        FRIDAY_NOON,
        EnabledTargets {
            cluster_version: false,
            ..EnabledTargets::all()
        },
        false,
    );
    off.fake.insert(cluster_autoscaler(true));
    let mut s = schedule(ME, ca_target(), nights());
    s["spec"]["maintenance"] = json!({ "followClusterUpgrade": true });
    off.fake.insert(s);
    off.reconcile(ME).await.unwrap();
    assert!(
        off.fake
            .reads()
            .iter()
            .all(|r| !r.path.contains("clusterversions"))
    );
}

fn cluster_version(progressing: bool) -> Value {
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": { "name": "version" },
        "status": { "conditions": [
            { "type": "Available", "status": "True" },
            { "type": "Progressing", "status": if progressing { "True" } else { "False" } },
        ] },
    })
}

/// A MachineConfigPool as the machine-config operator reports it (its conditions are not
/// metav1.Conditions: `lastTransitionTime` may be null, `reason` and `message` empty).
fn machine_config_pool(name: &str, updating: bool, degraded: bool) -> Value {
    let s = |b: bool| if b { "True" } else { "False" };
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": { "name": name },
        "spec": {
            "machineConfigSelector": { "matchLabels": { "machineconfiguration.openshift.io/role": name } },
            "nodeSelector": { "matchLabels": { format!("node-role.kubernetes.io/{name}"): "" } },
            "paused": false,
        },
        "status": {
            "machineCount": 3,
            "updatedMachineCount": if updating { 1 } else { 3 },
            "readyMachineCount": if updating { 2 } else { 3 },
            "unavailableMachineCount": if updating { 1 } else { 0 },
            "degradedMachineCount": if degraded { 1 } else { 0 },
            "observedGeneration": 4,
            "conditions": [
                { "type": "Updated", "status": s(!updating), "lastTransitionTime": "2026-03-27T10:00:00Z", "reason": "", "message": "" },
                { "type": "Updating", "status": s(updating), "lastTransitionTime": "2026-03-27T10:00:00Z", "reason": "", "message": "" },
                { "type": "Degraded", "status": s(degraded), "lastTransitionTime": null, "reason": "", "message": "" },
                { "type": "NodeDegraded", "status": s(degraded), "lastTransitionTime": null },
            ],
        },
    })
}

fn set_pool_updating(t: &Test, name: &str, updating: bool) {
    let s = |b: bool| if b { "True" } else { "False" };
    t.fake.modify_json(
        "machineconfiguration.openshift.io/v1",
        "MachineConfigPool",
        "",
        name,
        |pool| {
            pool["status"]["conditions"][0]["status"] = json!(s(!updating));
            pool["status"]["conditions"][1]["status"] = json!(s(updating));
        },
    );
}

fn following(name: &str) -> Value {
    let mut s = schedule(name, ca_target(), nights());
    s["spec"]["maintenance"] = json!({ "followClusterUpgrade": true });
    s
}

#[tokio::test]
async fn a_pool_updating_after_the_upgrade_keeps_scale_down_enabled_until_it_finishes() {
    // Friday noon, outside the window: the cluster-version operator is done, the worker pool
    // still drains and reboots its nodes; a degraded master pool that is not updating does not
    // count.
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(false));
    t.fake.insert(following(ME));
    t.fake.insert(cluster_version(false));
    t.fake.insert(machine_config_pool("master", false, true));
    t.fake.insert(machine_config_pool("worker", true, false));

    let action = t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    let status = t.schedule(ME).status.unwrap();
    assert!(status.scale_down_enabled);
    assert_eq!(status.active_window, None);
    assert_eq!(
        status.next_transition_time, None,
        "the flip waits for the pool"
    );
    let (ready, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(
        (ready.as_str(), reason.as_str()),
        ("True", "ScaleDownEnabled")
    );
    assert_eq!(
        message,
        "scale-down enabled: MachineConfigPool worker is updating; applied to 1 ClusterAutoscaler"
    );
    let events = t.events.events();
    assert_eq!(events[0].reason, "ScaleDownEnabled");
    assert!(
        events[0]
            .note
            .contains("MachineConfigPool worker is updating"),
        "{}",
        events[0].note
    );
    // The window still changes by the clock: looked at again when it opens.
    assert_eq!(
        action,
        secs(utc(FRIDAY_NIGHT).duration_since(utc(FRIDAY_NOON)))
    );

    // Unchanged: nothing written.
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);

    // The pool finishes: scale-down is held off again, outside the window.
    set_pool_updating(&t, "worker", false);
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    let (_, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(reason, "ScaleDownDisabled");
    assert!(message.starts_with("scale-down disabled: no window is open"));
    assert_eq!(
        t.schedule(ME).status.unwrap().next_transition_time,
        Some(ebb_runtime::time::to_k8s_time(utc(FRIDAY_NIGHT)))
    );

    // ClusterVersion and pool both at work: both are named.
    t.fake.modify_json(
        "config.openshift.io/v1",
        "ClusterVersion",
        "",
        "version",
        |cv| {
            cv["status"]["conditions"][1]["status"] = json!("True");
        },
    );
    set_pool_updating(&t, "master", true);
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    assert!(t.condition(ME, decide::CONDITION_READY).2.starts_with(
        "scale-down enabled: the cluster is upgrading (ClusterVersion version \
         Progressing=True) and MachineConfigPool master is updating"
    ));
}

#[tokio::test]
async fn pools_are_read_only_for_schedules_that_follow_maintenance() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(false));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake.insert(machine_config_pool("worker", true, false));
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert!(
        t.fake
            .reads()
            .iter()
            .all(|r| !r.path.contains("machineconfigpools"))
    );

    // Switched off with the ClusterVersion: a following schedule reads neither.
    let off = Test::with(
        FRIDAY_NOON,
        EnabledTargets {
            cluster_version: false,
            ..EnabledTargets::all()
        },
        false,
    );
    off.fake.insert(cluster_autoscaler(true));
    off.fake.insert(following(ME));
    off.fake.insert(machine_config_pool("worker", true, false));
    off.reconcile(ME).await.unwrap();
    assert_eq!(off.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert!(
        off.fake
            .reads()
            .iter()
            .all(|r| !r.path.contains("machineconfigpools"))
    );
}

#[tokio::test]
async fn a_missing_pool_api_reads_as_no_pools_and_other_failures_change_nothing() {
    // Not OpenShift: neither the ClusterVersion nor the MachineConfigPool API exists.
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(following(ME));
    t.fake.fail_next(Matcher::get("/machineconfigpools"), 404);
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert_eq!(
        t.condition(ME, decide::CONDITION_READY).1,
        "ScaleDownDisabled"
    );

    // Any other failure fails the pass before anything is written (the target keeps its
    // state), and is retried.
    t.fake.insert(machine_config_pool("worker", true, false));
    t.fake.clear_requests();
    t.fake.fail_next(Matcher::get("/machineconfigpools"), 500);
    let error = t.reconcile(ME).await.unwrap_err();
    assert_eq!(error.category(), "observe");
    assert!(
        matches!(error.inner(), Some(Error::MachineConfigPools(_))),
        "{error}"
    );
    assert_eq!(t.fake.write_count(), 0);
    t.converge(ME).await;
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
}

#[tokio::test]
async fn missing_cluster_autoscaler_is_reported_not_created() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.reconcile(ME).await.unwrap();
    assert!(t.target_writes().is_empty());
    assert_eq!(
        t.condition(ME, decide::CONDITION_TARGET_NOT_FOUND).0,
        "True"
    );
    assert_eq!(t.condition(ME, decide::CONDITION_READY).1, "TargetNotFound");
}

#[tokio::test]
async fn a_target_api_the_cluster_does_not_serve_is_a_warning_a_condition_and_a_metric() {
    for (target, group, plural, api) in [
        (
            ca_target(),
            "autoscaling.openshift.io",
            "clusterautoscalers",
            "autoscaling.openshift.io/v1 ClusterAutoscaler",
        ),
        (
            json!({ "karpenterNodePools": {} }),
            "karpenter.sh",
            "nodepools",
            "karpenter.sh/v1 NodePool",
        ),
    ] {
        let t = Test::new(FRIDAY_NOON);
        t.fake.set_served(group, plural, false);
        t.fake.insert(schedule(ME, target, nights()));
        // Not an error to retry: an outcome, reported, looked at again in 5 minutes.
        assert_eq!(
            t.reconcile(ME).await.unwrap(),
            Requeue::After(decide::API_MISSING_RETRY)
        );
        assert!(t.target_writes().is_empty());
        let (status, reason, message) = t.condition(ME, decide::CONDITION_READY);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "TargetApiMissing")
        );
        assert!(message.contains(api), "{message}");
        assert_eq!(
            t.condition(ME, decide::CONDITION_TARGET_NOT_FOUND).1,
            "TargetApiMissing"
        );
        let warnings: Vec<_> = t
            .events
            .events()
            .into_iter()
            .filter(|e| e.reason == "TargetApiMissing")
            .collect();
        assert_eq!(warnings.len(), 1, "{:?}", t.events.reasons());
        assert_eq!(warnings[0].kind, EventKind::Warning);
        assert!(
            t.metrics()
                .contains("ebb_scaledown_window_target_api_missing{controller=\"scaledown-window\",name=\"workday-nights\"} 1"),
            "{}",
            t.metrics()
        );
        // Said once: the same state again records no second Warning.
        t.reconcile(ME).await.unwrap();
        assert_eq!(
            t.events
                .reasons()
                .iter()
                .filter(|r| *r == "TargetApiMissing")
                .count(),
            1
        );
        // Installed: the schedule goes on as usual and the gauge drops.
        t.fake.set_served(group, plural, true);
        t.reconcile(ME).await.unwrap();
        assert_ne!(
            t.condition(ME, decide::CONDITION_READY).1,
            "TargetApiMissing"
        );
        assert!(
            t.metrics()
                .contains("ebb_scaledown_window_target_api_missing{controller=\"scaledown-window\",name=\"workday-nights\"} 0")
        );
    }
}

// ----- fail-safe, conflicts, pause, dry-run, switched-off kinds -----------------------------------

/// A window naming a HolidayCalendar that does not exist: scale-down held off, the condition and
/// a Warning Event name the entry. The calendar created later (as its watch brings it) takes
/// effect on the next pass: Friday 27 March is a holiday, so the open window stays closed;
/// edited to another day, the window opens.
#[tokio::test]
async fn a_missing_holiday_calendar_fails_safe_until_it_is_created() {
    let t = Test::new(FRIDAY_NIGHT);
    t.fake.insert(cluster_autoscaler(true));
    let windows = json!([{ "schedule": "0 20 * * 1-5", "duration": "11h",
                           "timeZone": "Europe/Zurich", "excludeCalendars": ["swiss"] }]);
    t.fake.insert(schedule(ME, ca_target(), windows));
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    let (status, reason, message) = t.condition(ME, decide::CONDITION_SCHEDULE_VALID);
    assert_eq!(
        (status.as_str(), reason.as_str(), message.as_str()),
        (
            "False",
            "InvalidSchedule",
            "spec.windows[0].excludeCalendars[0]: HolidayCalendar \"swiss\" not found"
        )
    );
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled", "InvalidSchedule"]);
    assert_eq!(t.events.events()[1].kind, EventKind::Warning);

    // Created, naming Friday 27 March: still closed tonight, the schedule valid again.
    t.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "swiss"}, "spec": {"dates": ["2026-03-27"]},
    }));
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.condition(ME, decide::CONDITION_SCHEDULE_VALID).0, "True");
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    // The night out of the holiday opens at Saturday's midnight (23:00Z).
    assert_eq!(
        t.schedule(ME).status.unwrap().next_transition_time,
        Some(ebb_runtime::time::to_k8s_time(utc("2026-03-27T23:00:00Z")))
    );

    // Edited to another day: tonight's window opens.
    t.fake.modify_json(
        "scaling.ebb.dev/v1alpha1",
        "HolidayCalendar",
        "",
        "swiss",
        |c| c["spec"]["dates"] = json!(["2026-04-03"]),
    );
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
}

#[tokio::test]
async fn invalid_schedule_fails_safe_with_scale_down_disabled() {
    let t = Test::new(FRIDAY_NIGHT);
    t.fake.insert(cluster_autoscaler(true));
    let windows = json!([
        { "schedule": "0 20 * * 1-5", "duration": "11h", "timeZone": "Europe/Zurich" },
        { "schedule": "0 20 * * 1-5", "duration": "11h", "timeZone": "Europe/Zurch" },
    ]);
    t.fake.insert(schedule(ME, ca_target(), windows));
    let action = t.reconcile(ME).await.unwrap();
    // Window 0 is open, but window 1 cannot be read: scale-down held off.
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert_eq!(action, Requeue::AwaitChange);
    let (status, reason, message) = t.condition(ME, decide::CONDITION_SCHEDULE_VALID);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidSchedule")
    );
    assert!(
        message.starts_with("spec.windows[1].timeZone: unknown time zone \"Europe/Zurch\""),
        "{message}"
    );
    assert_eq!(
        t.condition(ME, decide::CONDITION_READY).1,
        "InvalidSchedule"
    );
    let s = t.schedule(ME).status.unwrap();
    assert!(!s.scale_down_enabled);
    assert_eq!((s.active_window, s.next_transition_time), (None, None));
    let events = t.events.events();
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled", "InvalidSchedule"]);
    assert_eq!(events[1].kind, EventKind::Warning);
    assert!(
        t.metrics()
            .contains("ebb_scaledown_window_schedule_invalid{controller=\"scaledown-window\",name=\"workday-nights\"} 1")
    );

    // Fixed: the schedule decides again.
    t.fake.modify::<ScaleDownSchedule>("", ME, |s| {
        s.spec.windows[1].time_zone = "Europe/Zurich".into()
    });
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    assert_eq!(t.condition(ME, decide::CONDITION_SCHEDULE_VALID).0, "True");
}

/// Without a label selector the controller's own cache holds every schedule: the claimants are
/// read there, not listed, and decide the same (the cache is what is read: a schedule it still
/// holds claims, even where the API server no longer has it).
#[tokio::test]
async fn the_claimants_come_from_the_cache_where_it_holds_every_schedule() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule("a-nights", ca_target(), nights()));
    let always = json!([{ "schedule": "* * * * *", "duration": "1h" }]);
    t.fake.insert(schedule("b-always", ca_target(), always));
    let (store, mut writer) = kube::runtime::reflector::store::<Guarded<ScaleDownSchedule>>();
    writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
    for cached in t.fake.list::<Guarded<ScaleDownSchedule>>() {
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitApply(cached));
    }
    writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
    assert!(t.fake.remove::<ScaleDownSchedule>("", "a-nights"));
    let ctx = Arc::new(
        Context::new(
            t.h.shared(false),
            Own {
                metrics: Metrics::default(),
                targets: EnabledTargets::all(),
                nodes: t.node_cache(),
                schedules: Some(store),
                calendars: CalendarCache::default(),
            },
        )
        .without_jitter(),
    );
    t.fake.clear_requests();
    frame::reconcile(t.guard("b-always"), ctx).await.unwrap();
    assert!(
        !t.fake
            .reads()
            .iter()
            .any(|r| r.path.ends_with("/scaledownschedules")),
        "{:?}",
        t.fake.reads()
    );
    let (status, _, message) = t.condition("b-always", decide::CONDITION_TARGET_CONFLICT);
    assert_eq!(status, "True");
    assert!(message.contains("managed by a-nights"), "{message}");
    assert!(
        t.fake
            .writes_matching(&Matcher::patch("/clusterautoscalers/"))
            .is_empty()
    );
}

#[tokio::test]
async fn two_schedules_on_one_cluster_autoscaler_are_reported_not_fought_over() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    // Same creation instant (the fake's clock): the first by name manages it.
    t.fake.insert(schedule("a-nights", ca_target(), nights()));
    let always = json!([{ "schedule": "* * * * *", "duration": "1h" }]);
    t.fake.insert(schedule("b-always", ca_target(), always));
    for _ in 0..3 {
        t.reconcile("b-always").await.unwrap();
        t.reconcile("a-nights").await.unwrap();
    }
    let ca_writes = t
        .fake
        .writes_matching(&Matcher::patch("/clusterautoscalers/"));
    assert_eq!(
        ca_writes.len(),
        1,
        "only the managing schedule writes, once"
    );
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    let (status, _, message) = t.condition("b-always", decide::CONDITION_TARGET_CONFLICT);
    assert_eq!(status, "True");
    assert!(
        message.contains("ClusterAutoscaler default (managed by a-nights)"),
        "{message}"
    );
    assert_eq!(
        t.condition("b-always", decide::CONDITION_READY).1,
        "TargetConflict"
    );
    assert_eq!(
        t.condition("a-nights", decide::CONDITION_TARGET_CONFLICT).0,
        "False"
    );
    assert!(t.events.reasons().contains(&"TargetConflict".to_owned()));
    assert!(t.metrics().contains(
        "ebb_scaledown_window_target_conflict{controller=\"scaledown-window\",name=\"b-always\"} 1"
    ));

    // The manager is deleted: the other takes over (and the deleted one does not release it).
    t.fake.modify::<ScaleDownSchedule>("", "a-nights", |s| {
        s.metadata.deletion_timestamp = Some(ebb_runtime::to_k8s_time(utc(FRIDAY_NOON)));
    });
    t.reconcile("a-nights").await.unwrap();
    assert!(t.fake.get::<ScaleDownSchedule>("", "a-nights").is_none());
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    t.reconcile("b-always").await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    assert_eq!(
        t.condition("b-always", decide::CONDITION_TARGET_CONFLICT).0,
        "False"
    );
}

#[tokio::test]
async fn paused_schedules_write_nothing_but_status_and_wake_at_expiry() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    let mut s = schedule(ME, ca_target(), nights());
    s["metadata"]["annotations"] =
        json!({ "scaling.ebb.dev/paused-until": "2026-03-27T13:00:00Z" });
    t.fake.insert(s);
    let action = t.reconcile(ME).await.unwrap();
    assert!(t.target_writes().is_empty());
    assert_eq!(
        t.fake.read_count(),
        0,
        "a paused schedule does not even read its target"
    );
    assert_eq!(action, secs(SignedDuration::from_hours(2)));
    assert_eq!(t.condition(ME, decide::CONDITION_PAUSED).0, "True");
    assert_eq!(t.condition(ME, decide::CONDITION_READY).1, "Paused");
    // Reported the shared way (`ebb_runtime::pause::pause_report`): the condition names the
    // schedule and the annotation, and an Event says the pause started.
    assert_eq!(
        t.condition(ME, decide::CONDITION_PAUSED),
        (
            "True".to_owned(),
            "Paused".to_owned(),
            "ScaleDownSchedule workday-nights: paused until 2026-03-27T13:00:00Z by annotation \
             scaling.ebb.dev/paused-until"
                .to_owned()
        )
    );
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled", "Paused"]);
    // Again: nothing new to say.
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.events.reasons(), ["ScaleDownDisabled", "Paused"]);

    t.set("2026-03-27T13:00:00Z");
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert_eq!(t.condition(ME, decide::CONDITION_PAUSED).0, "False");
}

#[tokio::test]
async fn dry_run_records_the_intent_and_writes_nothing_else() {
    let t = Test::with(FRIDAY_NOON, EnabledTargets::all(), true);
    t.fake.insert(cluster_autoscaler(true));
    let mut s = schedule(ME, ca_target(), nights());
    s["metadata"].as_object_mut().unwrap().remove("finalizers");
    t.fake.insert(s);
    t.reconcile(ME).await.unwrap();
    let writes = t.fake.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(
        writes[0]
            .path
            .ends_with("/scaledownschedules/workday-nights/status")
    );
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    let (status, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "DryRun"));
    assert!(
        message.ends_with(
            "dry-run, would set spec.scaleDown.enabled=false on ClusterAutoscaler default"
        )
    );
    assert_eq!(
        t.events.events()[0].note,
        "no window open: dry-run, would set spec.scaleDown.enabled=false on ClusterAutoscaler default"
    );
    // Again: nothing new to say, nothing written.
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);
    assert_eq!(t.events.events().len(), 1);
}

#[tokio::test]
async fn switched_off_target_kinds_are_reported_and_untouched() {
    let t = Test::with(
        FRIDAY_NOON,
        EnabledTargets {
            karpenter: false,
            ..EnabledTargets::all()
        },
        false,
    );
    let mut s = schedule(ME, json!({ "karpenterNodePools": {} }), nights());
    s["metadata"].as_object_mut().unwrap().remove("finalizers");
    t.fake.insert(s);
    t.reconcile(ME).await.unwrap();
    assert!(t.fake.reads().iter().all(|r| !r.path.contains("nodepools")));
    assert_eq!(t.fake.write_count(), 1, "status only, no finalizer");
    let (_, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(reason, "TargetDisabled");
    assert!(message.contains("--enable-karpenter"));
}

#[tokio::test]
async fn the_finalizer_comes_first_then_the_work() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    let mut s = schedule(ME, ca_target(), nights());
    s["metadata"].as_object_mut().unwrap().remove("finalizers");
    t.fake.insert(s);
    assert_eq!(t.reconcile(ME).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(t.fake.write_count(), 1);
    assert_eq!(
        t.schedule(ME).metadata.finalizers,
        Some(vec![FINALIZER.to_owned()])
    );
    assert_eq!(
        t.ca()["spec"]["scaleDown"]["enabled"],
        json!(true),
        "nothing before the finalizer"
    );
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
}

#[tokio::test]
async fn a_standby_replica_writes_nothing() {
    let t = Test::with_leader(
        FRIDAY_NOON,
        EnabledTargets::all(),
        false,
        Leader::following(),
    );
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    t.fake.clear_requests();
    let action = t.reconcile(ME).await.unwrap();
    // A standby sets no timer: it reconciles everything when it starts to lead.
    assert_eq!(action, Requeue::AwaitChange);
    assert_eq!(t.fake.write_count(), 0);
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
}

#[tokio::test]
async fn another_controllers_finalizer_is_kept_beside_ours() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    let mut s = schedule(ME, ca_target(), nights());
    s["metadata"]["finalizers"] = json!(["example.com/other"]);
    t.fake.insert(s);
    assert_eq!(t.reconcile(ME).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(
        t.schedule(ME).metadata.finalizers,
        Some(vec!["example.com/other".to_owned(), FINALIZER.to_owned()])
    );
}

/// One ScaleDownSchedule that does not fit the type is reported on itself (a Warning Event naming
/// the field, once per version), counted and left alone; the schedule beside it is served.
#[tokio::test]
async fn malformed_objects_wait_for_a_change() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), nights()));
    let guard: Guarded<ScaleDownSchedule> = serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1",
        "kind": "ScaleDownSchedule",
        "metadata": { "name": "broken", "uid": "u-broken", "resourceVersion": "7" },
        "spec": { "target": "everything", "windows": 3 },
    }))
    .unwrap();
    let guard = Arc::new(guard);
    // The frame's default: logged, counted under `malformed`, reported by an Event, left alone
    // until it changes.
    let ctx = t.ctx();
    let action = frame::reconcile(guard.clone(), ctx.clone()).await.unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    assert!(
        t.metrics()
            .contains("ebb_scaledown_window_reconcile_errors_total{controller=\"scaledown-window\",category=\"malformed\"} 1"),
        "{}",
        t.metrics()
    );
    assert_eq!(t.fake.write_count(), 0);
    let events = t.events.events();
    assert_eq!(t.events.reasons(), ["Malformed"]);
    assert_eq!(events[0].kind, ebb_runtime::EventKind::Warning);
    assert_eq!(events[0].reference.name.as_deref(), Some("broken"));
    assert!(events[0].note.contains("spec.target"), "{}", events[0].note);
    // The same version again (a relist, a new leader): no second Event.
    frame::reconcile(guard, ctx).await.unwrap();
    assert_eq!(t.events.reasons(), ["Malformed"]);

    // The good schedule beside it is served as ever.
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
}

// ----- Nodes -------------------------------------------------------------------------------------

fn node(name: &str, pool: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": { "pool": pool }, "annotations": annotations },
        "status": { "capacity": { "cpu": "4" } },
    })
}

fn node_annotations(t: &Test, name: &str) -> Value {
    t.fake.get_json("v1", "Node", "", name).unwrap()["metadata"]["annotations"].clone()
}

fn node_target() -> Value {
    json!({ "nodeAnnotation": { "nodeSelector": { "matchLabels": { "pool": "workers" } } } })
}

#[tokio::test]
async fn nodes_are_annotated_outside_windows_and_only_ebbs_annotations_removed_inside() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(node("w1", "workers", json!({ "kept": "yes" })));
    t.fake.insert(node(
        "w2",
        "workers",
        json!({ SCALE_DOWN_DISABLED_ANNOTATION: "true" }),
    ));
    t.fake.insert(node("infra", "infra", json!({})));
    t.fake.insert(schedule(ME, node_target(), nights()));
    t.reconcile(ME).await.unwrap();

    let writes = t.target_writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].path, "/api/v1/nodes/w1");
    assert_eq!(writes[0].patch, Some(PatchKind::Merge));
    assert_eq!(writes[0].query_param("fieldManager"), Some(FIELD_MANAGER));
    let rv = writes[0].body.as_ref().unwrap()["metadata"]["resourceVersion"].clone();
    assert!(rv.is_string());
    assert_eq!(
        writes[0].body,
        Some(json!({ "metadata": {
            "resourceVersion": rv,
            "annotations": { SCALE_DOWN_DISABLED_ANNOTATION: "true", DISABLED_BY_ANNOTATION: ME },
        } }))
    );
    assert_eq!(
        node_annotations(&t, "w1"),
        json!({ "kept": "yes", SCALE_DOWN_DISABLED_ANNOTATION: "true", DISABLED_BY_ANNOTATION: ME })
    );
    assert_eq!(node_annotations(&t, "infra"), json!({}));

    // No change: no write.
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);

    // A node that joins later is covered.
    t.fake.insert(node("w3", "workers", json!({})));
    t.reconcile(ME).await.unwrap();
    let writes = t.target_writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].path, "/api/v1/nodes/w3");
    assert!(t.events.reasons().contains(&"TargetUpdated".to_owned()));

    // Inside the window: ebb's annotations go, the one set by someone else stays.
    t.set(FRIDAY_NIGHT);
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/nodes/w1", "/api/v1/nodes/w3"]);
    assert_eq!(node_annotations(&t, "w1"), json!({ "kept": "yes" }));
    assert_eq!(
        node_annotations(&t, "w2"),
        json!({ SCALE_DOWN_DISABLED_ANNOTATION: "true" })
    );
    assert_eq!(node_annotations(&t, "w3"), json!({}));
    assert!(
        t.condition(ME, decide::CONDITION_READY)
            .2
            .ends_with("applied to 3 Nodes")
    );
}

#[tokio::test]
async fn node_writes_race_and_faults_converge() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(node("w1", "workers", json!({})));
    t.fake.insert(node("w2", "workers", json!({})));
    t.fake.insert(schedule(ME, node_target(), nights()));
    // Someone changes w1 between our read and our write: the stale resourceVersion is a 409.
    t.fake.before_next(Matcher::patch("/nodes/w1"), |fake| {
        fake.modify_json("v1", "Node", "", "w1", |n| {
            n["metadata"]["labels"]["zone"] = json!("b");
        });
    });
    t.fake.fail_next(Matcher::patch("/nodes/w2"), 500);
    // One pass alone (through the frame, the conflict is read again and decided again at once).
    let error = t.pass(ME).await.unwrap_err();
    assert_eq!(error.category(), "conflict");
    t.converge(ME).await;
    for n in ["w1", "w2"] {
        assert_eq!(
            node_annotations(&t, n)[SCALE_DOWN_DISABLED_ANNOTATION],
            json!("true")
        );
    }
    assert_eq!(
        t.fake.get_json("v1", "Node", "", "w1").unwrap()["metadata"]["labels"]["zone"],
        json!("b")
    );
    let succeeded = t.target_writes().iter().filter(|r| r.succeeded()).count();
    assert_eq!(succeeded, 2, "each node written once");
}

#[tokio::test]
async fn deleting_a_node_schedule_releases_what_it_set() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(node("w1", "workers", json!({})));
    t.fake.insert(node(
        "w2",
        "workers",
        json!({ SCALE_DOWN_DISABLED_ANNOTATION: "true" }),
    ));
    t.fake.insert(schedule(ME, node_target(), nights()));
    t.reconcile(ME).await.unwrap();
    // The window opens at 20:00 Zurich and closes at 07:00: two flips, counted.
    t.set("2026-03-27T19:30:00Z");
    t.reconcile(ME).await.unwrap();
    t.set("2026-03-28T06:30:00Z");
    t.reconcile(ME).await.unwrap();
    assert!(
        t.metrics()
            .contains("flips_total{controller=\"scaledown-window\",name=\"workday-nights\""),
        "{}",
        t.metrics()
    );
    t.fake.modify::<ScaleDownSchedule>("", ME, |s| {
        s.metadata.deletion_timestamp = Some(ebb_runtime::to_k8s_time(utc(FRIDAY_NOON)));
    });
    t.reconcile(ME).await.unwrap();
    assert_eq!(node_annotations(&t, "w1"), json!({}));
    assert_eq!(
        node_annotations(&t, "w2"),
        json!({ SCALE_DOWN_DISABLED_ANNOTATION: "true" })
    );
    assert!(
        t.fake.get::<ScaleDownSchedule>("", ME).is_none(),
        "finalizer removed"
    );
    assert!(t.events.reasons().contains(&"Released".to_owned()));
    // Every series of the schedule dropped, its flip counts too.
    assert!(
        !t.metrics().contains("name=\"workday-nights\""),
        "series dropped: {}",
        t.metrics()
    );
}

// ----- MachineAutoscalers ------------------------------------------------------------------------

fn machine_autoscaler(name: &str, min: i32, max: i32, labels: Value) -> Value {
    json!({
        "apiVersion": "autoscaling.openshift.io/v1beta1",
        "kind": "MachineAutoscaler",
        "metadata": { "name": name, "namespace": MA_NS, "labels": labels },
        "spec": {
            "minReplicas": min,
            "maxReplicas": max,
            "scaleTargetRef": { "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": name },
        },
    })
}

fn machine_set(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": { "name": name, "namespace": MA_NS },
        "spec": { "replicas": replicas },
        "status": { "replicas": replicas },
    })
}

fn ma_json(t: &Test, name: &str) -> Value {
    t.fake
        .get_json(
            "autoscaling.openshift.io/v1beta1",
            "MachineAutoscaler",
            MA_NS,
            name,
        )
        .unwrap()
}

#[tokio::test]
async fn machine_autoscalers_are_pinned_outside_windows_and_restored_inside() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(machine_autoscaler(
        "worker-a",
        1,
        6,
        json!({ "scaling": "nightly" }),
    ));
    t.fake.insert(machine_autoscaler("gpu", 0, 2, json!({})));
    t.fake.insert(machine_set("worker-a", 3));
    t.fake.insert(machine_set("gpu", 2));
    let target = json!({ "machineAutoscalers": { "selector": { "matchLabels": { "scaling": "nightly" } } } });
    t.fake.insert(schedule(ME, target, nights()));
    t.reconcile(ME).await.unwrap();

    let writes = t.target_writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(
        writes[0].path,
        "/apis/autoscaling.openshift.io/v1beta1/namespaces/openshift-machine-api/machineautoscalers/worker-a"
    );
    let body = writes[0].body.clone().unwrap();
    assert_eq!(
        body,
        json!({
            "metadata": {
                "resourceVersion": body["metadata"]["resourceVersion"],
                "annotations": {
                    "scaling.ebb.dev/configured-min-replicas": "1",
                    "scaling.ebb.dev/pinned-min-replicas": "3",
                    DISABLED_BY_ANNOTATION: ME,
                },
            },
            "spec": { "minReplicas": 3 },
        })
    );
    assert_eq!(
        ma_json(&t, "gpu")["spec"]["minReplicas"],
        json!(0),
        "not selected"
    );

    // The autoscaler grows the MachineSet: the pin follows.
    t.fake.modify_json(
        "machine.openshift.io/v1beta1",
        "MachineSet",
        MA_NS,
        "worker-a",
        |ms| {
            ms["spec"]["replicas"] = json!(5);
        },
    );
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.target_writes().len(), 1);
    let ma = ma_json(&t, "worker-a");
    assert_eq!(ma["spec"]["minReplicas"], json!(5));
    assert_eq!(
        ma["metadata"]["annotations"]["scaling.ebb.dev/configured-min-replicas"],
        json!("1")
    );

    // Unchanged: nothing written.
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);

    // A restart loses nothing: a fresh context restores the configured minimum inside the window.
    let restarted = Context::new(
        Shared {
            contact: ebb_runtime::ApiContact::new(Arc::new(t.clock.clone())),
            client: t.fake.client(),
            clock: Arc::new(t.clock.clone()),
            events: Arc::new(t.events.clone()),
            metrics: ControllerMetrics::new(&mut Registry::default(), CONTROLLER_NAME),
            dry_run: false,
            leader: Leader::disabled(),
            own_writes: ebb_runtime::watch::own_writes::OwnWrites::new(),
        },
        Own {
            metrics: Metrics::default(),
            targets: EnabledTargets::all(),
            nodes: t.node_cache(),
            schedules: None,
            calendars: CalendarCache::default(),
        },
    );
    t.set(FRIDAY_NIGHT);
    frame::reconcile(t.guard(ME), Arc::new(restarted))
        .await
        .unwrap();
    let ma = ma_json(&t, "worker-a");
    assert_eq!(ma["spec"]["minReplicas"], json!(1));
    assert_eq!(ma["spec"]["maxReplicas"], json!(6));
    assert_eq!(ma["metadata"].get("annotations"), Some(&json!({})));
}

#[tokio::test]
async fn machine_autoscaler_faults_converge_without_losing_the_configured_minimum() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(machine_autoscaler("worker-a", 2, 6, json!({})));
    t.fake.insert(machine_set("worker-a", 4));
    t.fake
        .insert(schedule(ME, json!({ "machineAutoscalers": {} }), nights()));
    t.fake.inject(
        Matcher::patch("/machineautoscalers/worker-a"),
        Fault::TimeoutAfterApply,
        1,
    );
    assert!(t.reconcile(ME).await.is_err());
    t.fake.fail_next(Matcher::get("/machinesets"), 500);
    assert_eq!(t.reconcile(ME).await.unwrap_err().category(), "observe");
    t.converge(ME).await;
    let ma = ma_json(&t, "worker-a");
    assert_eq!(ma["spec"]["minReplicas"], json!(4));
    assert_eq!(
        ma["metadata"]["annotations"]["scaling.ebb.dev/configured-min-replicas"],
        json!("2")
    );
    assert_eq!(
        t.fake
            .writes_matching(&Matcher::patch("/machineautoscalers/"))
            .len(),
        1
    );
}

#[tokio::test]
async fn machine_autoscaler_without_its_machine_set_is_reported() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(machine_autoscaler("worker-a", 2, 6, json!({})));
    t.fake
        .insert(schedule(ME, json!({ "machineAutoscalers": {} }), nights()));
    t.reconcile(ME).await.unwrap();
    assert!(t.target_writes().is_empty());
    let (status, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "TargetInvalid")
    );
    assert!(message.contains("MachineSet worker-a not found"));
}

#[tokio::test]
async fn machine_autoscaler_schedules_report_whether_the_cluster_autoscaler_allows_scale_down() {
    let t = Test::new(FRIDAY_NIGHT);
    t.fake
        .insert(machine_autoscaler("worker-a", 2, 6, json!({})));
    t.fake.insert(machine_set("worker-a", 4));
    t.fake
        .insert(schedule(ME, json!({ "machineAutoscalers": {} }), nights()));

    // No ClusterAutoscaler: reported, and the MachineAutoscalers are handled all the same.
    t.reconcile(ME).await.unwrap();
    let (status, reason, message) = t.condition(ME, decide::CONDITION_CLUSTER_AUTOSCALER_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ClusterAutoscalerNotFound")
    );
    assert!(
        message.starts_with(
            "machineAutoscalers targets depend on ClusterAutoscaler default with \
             spec.scaleDown.enabled: true; there is none"
        ),
        "{message}"
    );
    assert_eq!(t.condition(ME, decide::CONDITION_READY).0, "True");
    let warning = t
        .events
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::Warning)
        .unwrap();
    assert_eq!(warning.reason, "ClusterAutoscalerNotFound");
    assert_eq!(warning.note, message);

    // Scale-down off in the ClusterAutoscaler: the windows cannot take effect.
    t.fake.insert(cluster_autoscaler(false));
    t.reconcile(ME).await.unwrap();
    let (status, reason, message) = t.condition(ME, decide::CONDITION_CLUSTER_AUTOSCALER_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ClusterAutoscalerScaleDownDisabled")
    );
    assert!(
        message.contains("it has spec.scaleDown.enabled: false"),
        "{message}"
    );

    // On: ready. ebb only reads it in this mode, never writes it.
    t.fake.modify_json(
        "autoscaling.openshift.io/v1",
        "ClusterAutoscaler",
        "",
        "default",
        |ca| {
            ca["spec"]["scaleDown"]["enabled"] = json!(true);
        },
    );
    t.reconcile(ME).await.unwrap();
    let (status, reason, _) = t.condition(ME, decide::CONDITION_CLUSTER_AUTOSCALER_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ClusterAutoscalerScaleDownEnabled")
    );
    assert!(
        t.target_writes()
            .iter()
            .all(|w| !w.path.contains("clusterautoscalers"))
    );

    // A clusterAutoscaler schedule does not get the condition.
    let other = Test::new(FRIDAY_NOON);
    other.fake.insert(cluster_autoscaler(true));
    other.fake.insert(schedule(ME, ca_target(), nights()));
    other.reconcile(ME).await.unwrap();
    let status = other.schedule(ME).status.unwrap();
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.type_ != decide::CONDITION_CLUSTER_AUTOSCALER_READY)
    );
}

// ----- Karpenter NodePools -----------------------------------------------------------------------

fn node_pool(name: &str, budgets: Value) -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": { "name": name, "labels": { "team": "batch" } },
        "spec": {
            "template": { "spec": { "nodeClassRef": { "name": "default" } } },
            "disruption": { "consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": budgets },
        },
    })
}

fn budgets(t: &Test, name: &str) -> Value {
    t.fake
        .get_json("karpenter.sh/v1", "NodePool", "", name)
        .unwrap()["spec"]["disruption"]["budgets"]
        .clone()
}

#[tokio::test]
async fn node_pools_get_ebbs_budget_outside_windows_and_keep_every_other() {
    let t = Test::new(FRIDAY_NOON);
    let users = json!([
        { "nodes": "10%" },
        { "nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h" },
        { "nodes": "0" },
    ]);
    t.fake.insert(node_pool("batch", users.clone()));
    let target =
        json!({ "karpenterNodePools": { "selector": { "matchLabels": { "team": "batch" } } } });
    t.fake.insert(schedule(ME, target, nights()));
    t.reconcile(ME).await.unwrap();

    let writes = t.target_writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].path, "/apis/karpenter.sh/v1/nodepools/batch");
    assert_eq!(writes[0].patch, Some(PatchKind::Merge));
    let body = writes[0].body.clone().unwrap();
    let mut with_ours = users.as_array().unwrap().clone();
    with_ours.push(json!({ "nodes": "0" }));
    assert_eq!(
        body,
        json!({
            "metadata": {
                "resourceVersion": body["metadata"]["resourceVersion"],
                "annotations": { DISABLED_BY_ANNOTATION: ME },
            },
            "spec": { "disruption": { "budgets": with_ours } },
        })
    );
    assert_eq!(budgets(&t, "batch"), json!(with_ours));
    let pool = t
        .fake
        .get_json("karpenter.sh/v1", "NodePool", "", "batch")
        .unwrap();
    assert_eq!(
        pool["spec"]["disruption"]["consolidationPolicy"],
        json!("WhenEmptyOrUnderutilized")
    );

    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.fake.write_count(), 0);

    t.set(FRIDAY_NIGHT);
    t.reconcile(ME).await.unwrap();
    // Exactly ebb's budget is gone; the user's own {nodes: "0"} and the rest stay, in order.
    assert_eq!(budgets(&t, "batch"), users);
    let pool = t
        .fake
        .get_json("karpenter.sh/v1", "NodePool", "", "batch")
        .unwrap();
    assert_eq!(pool["metadata"]["annotations"], json!({}));
}

#[tokio::test]
async fn a_budget_added_concurrently_survives_the_conflict() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(node_pool("batch", json!([{ "nodes": "10%" }])));
    t.fake
        .insert(schedule(ME, json!({ "karpenterNodePools": {} }), nights()));
    // Someone adds a budget between our read and our write.
    t.fake
        .before_next(Matcher::patch("/nodepools/batch"), |fake| {
            fake.modify_json("karpenter.sh/v1", "NodePool", "", "batch", |p| {
                p["spec"]["disruption"]["budgets"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({ "nodes": "1", "reasons": ["Drifted"] }));
            });
        });
    // One pass alone (through the frame, the conflict is read again and decided again at once).
    assert_eq!(t.pass(ME).await.unwrap_err().category(), "conflict");
    t.converge(ME).await;
    assert_eq!(
        budgets(&t, "batch"),
        json!([{ "nodes": "10%" }, { "nodes": "1", "reasons": ["Drifted"] }, { "nodes": "0" }])
    );
    t.fake.fail_next(Matcher::patch("/nodepools/batch"), 500);
    t.set(FRIDAY_NIGHT);
    assert_eq!(
        t.reconcile(ME).await.unwrap_err().category(),
        "write_target"
    );
    t.converge(ME).await;
    assert_eq!(
        budgets(&t, "batch"),
        json!([{ "nodes": "10%" }, { "nodes": "1", "reasons": ["Drifted"] }])
    );
}

#[tokio::test]
async fn requeue_is_capped_and_a_schedule_without_flips_resyncs_daily() {
    let now = utc(FRIDAY_NOON);
    assert_eq!(
        requeue_after(now, now + SignedDuration::from_hours(24 * 400)),
        RESYNC
    );
    assert_eq!(
        requeue_after(now, now - SignedDuration::from_secs(5)),
        Duration::ZERO
    );
    assert_eq!(
        requeue_after(now, now + SignedDuration::from_millis(1500)),
        Duration::from_millis(1500)
    );
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(cluster_autoscaler(true));
    t.fake.insert(schedule(ME, ca_target(), json!([])));
    assert_eq!(t.reconcile(ME).await.unwrap(), Requeue::After(RESYNC));
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
}

// ----- pause on the managed objects --------------------------------------------------------------

const PAUSED: &str = "scaling.ebb.dev/paused";
const PAUSED_UNTIL: &str = "scaling.ebb.dev/paused-until";

#[tokio::test]
async fn a_paused_cluster_autoscaler_gets_no_write_until_its_pause_expires() {
    let t = Test::new(FRIDAY_NOON);
    let mut ca = cluster_autoscaler(true);
    ca["metadata"]["annotations"] = json!({ PAUSED_UNTIL: "2026-03-27T13:00:00Z" });
    t.fake.insert(ca);
    t.fake.insert(schedule(ME, ca_target(), nights()));

    let action = t.reconcile(ME).await.unwrap();
    assert!(t.target_writes().is_empty(), "{:?}", t.target_writes());
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(true));
    // Woken when the pause ends (13:00), before the window opens (19:00).
    assert_eq!(action, secs(SignedDuration::from_hours(2)));
    let (status, reason, message) = t.condition(ME, decide::CONDITION_PAUSED);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "TargetObjectsPaused")
    );
    assert_eq!(
        message,
        "the schedule is not paused; paused by their own annotation, left as they are: \
         ClusterAutoscaler default (paused until 2026-03-27T13:00:00Z by annotation \
         scaling.ebb.dev/paused-until)"
    );
    let (status, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "TargetPaused")
    );
    assert!(
        message.starts_with(
            "scale-down disabled: no window is open; nothing written: every managed \
             ClusterAutoscaler is paused"
        ),
        "{message}"
    );
    let paused_event = t
        .events
        .events()
        .into_iter()
        .find(|e| e.reason == "TargetObjectsPaused")
        .unwrap();
    assert_eq!(paused_event.kind, EventKind::Normal);
    assert!(paused_event.note.contains("ClusterAutoscaler default"));

    // Again before expiry: nothing written, nothing new said.
    t.set("2026-03-27T12:00:00Z");
    t.fake.clear_requests();
    t.events.clear();
    assert_eq!(
        t.reconcile(ME).await.unwrap(),
        secs(SignedDuration::from_hours(1))
    );
    assert_eq!(t.fake.write_count(), 0);
    assert!(t.events.events().is_empty());

    // At the instant it expires, writes resume.
    t.set("2026-03-27T13:00:00Z");
    t.reconcile(ME).await.unwrap();
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    assert_eq!(
        t.fake
            .writes_matching(&Matcher::patch("/clusterautoscalers/"))
            .len(),
        1
    );
    assert_eq!(t.condition(ME, decide::CONDITION_PAUSED).0, "False");
    assert_eq!(
        t.condition(ME, decide::CONDITION_READY).1,
        "ScaleDownDisabled"
    );
}

#[tokio::test]
async fn a_cluster_autoscaler_with_an_invalid_paused_until_counts_as_paused() {
    let t = Test::new(FRIDAY_NIGHT);
    let mut ca = cluster_autoscaler(false);
    ca["metadata"]["annotations"] = json!({ PAUSED_UNTIL: "after the release" });
    t.fake.insert(ca);
    t.fake.insert(schedule(ME, ca_target(), nights()));
    let action = t.reconcile(ME).await.unwrap();
    assert!(t.target_writes().is_empty());
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    // No expiry to wait for: the window's end is the next instant to look.
    assert_eq!(
        action,
        secs(utc(SATURDAY_MORNING).duration_since(utc(FRIDAY_NIGHT)))
    );
    assert!(
        t.condition(ME, decide::CONDITION_PAUSED)
            .2
            .contains("is not an RFC 3339 instant (\"after the release\")")
    );
}

#[tokio::test]
async fn a_paused_node_gets_no_write_while_the_others_do_and_lifting_the_pause_resumes() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(node("w1", "workers", json!({ PAUSED: "true" })));
    t.fake.insert(node("w2", "workers", json!({})));
    t.fake
        .insert(node("w3", "workers", json!({ PAUSED_UNTIL: "never" })));
    t.fake.insert(schedule(ME, node_target(), nights()));
    t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/nodes/w2"]);
    assert_eq!(node_annotations(&t, "w1"), json!({ PAUSED: "true" }));
    assert_eq!(node_annotations(&t, "w3"), json!({ PAUSED_UNTIL: "never" }));
    let (status, reason, message) = t.condition(ME, decide::CONDITION_READY);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ScaleDownDisabled")
    );
    assert!(
        message.starts_with(
            "scale-down disabled: no window is open; applied to 1 Node; 2 of 3 paused by \
             annotation, left as they are: Node w1 (paused by annotation scaling.ebb.dev/paused), \
             Node w3 (annotation scaling.ebb.dev/paused-until is not an RFC 3339 instant"
        ),
        "{message}"
    );
    assert_eq!(
        t.condition(ME, decide::CONDITION_PAUSED).1,
        "TargetObjectsPaused"
    );

    // Lifting w1's pause (the node watch wakes the schedule on it): w1 is annotated at once.
    t.fake.modify_json("v1", "Node", "", "w1", |n| {
        n["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(PAUSED);
    });
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/nodes/w1"]);
    assert_eq!(
        node_annotations(&t, "w1")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );

    // Pausing w2 (annotated by ebb) before the window opens: its annotation stays inside it.
    t.fake.modify_json("v1", "Node", "", "w2", |n| {
        n["metadata"]["annotations"][PAUSED_UNTIL] = json!("2026-03-27T21:00:00+01:00");
    });
    t.set(FRIDAY_NIGHT);
    t.fake.clear_requests();
    let action = t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/nodes/w1"], "only w1 released");
    assert_eq!(
        node_annotations(&t, "w2")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );
    // Woken when w2's pause ends, 21:00 CET, an hour after the window opened.
    assert_eq!(action, secs(SignedDuration::from_hours(1)));

    // Then w2 is released.
    t.set("2026-03-27T20:00:00Z");
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/nodes/w2"]);
    assert_eq!(
        node_annotations(&t, "w2"),
        json!({ PAUSED_UNTIL: "2026-03-27T21:00:00+01:00" })
    );
}

#[tokio::test]
async fn deleting_a_schedule_does_not_release_a_paused_node() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(node("w1", "workers", json!({})));
    t.fake.insert(node("w2", "workers", json!({})));
    t.fake.insert(schedule(ME, node_target(), nights()));
    t.reconcile(ME).await.unwrap();
    t.fake.modify_json("v1", "Node", "", "w1", |n| {
        n["metadata"]["annotations"][PAUSED] = json!("true");
    });
    t.fake.modify::<ScaleDownSchedule>("", ME, |s| {
        s.metadata.deletion_timestamp = Some(ebb_runtime::to_k8s_time(utc(FRIDAY_NOON)));
    });
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    let node_writes: Vec<String> = t
        .target_writes()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/v1/nodes/"))
        .map(|r| r.path)
        .collect();
    assert_eq!(node_writes, ["/api/v1/nodes/w2"]);
    assert_eq!(
        node_annotations(&t, "w1")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );
}

#[tokio::test]
async fn a_paused_node_pool_gets_no_write_until_its_pause_expires() {
    let t = Test::new(FRIDAY_NOON);
    let mut batch = node_pool("batch", json!([{ "nodes": "10%" }]));
    batch["metadata"]["annotations"] = json!({ PAUSED_UNTIL: "2026-03-27T14:00:00+01:00" });
    t.fake.insert(batch);
    t.fake.insert(node_pool("gpu", json!([])));
    t.fake
        .insert(schedule(ME, json!({ "karpenterNodePools": {} }), nights()));
    let action = t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/apis/karpenter.sh/v1/nodepools/gpu"]);
    assert_eq!(budgets(&t, "batch"), json!([{ "nodes": "10%" }]));
    assert_eq!(action, secs(SignedDuration::from_hours(2)));
    assert!(
        t.condition(ME, decide::CONDITION_READY)
            .2
            .contains("1 of 2 paused by annotation, left as they are: NodePool batch (paused until 2026-03-27T13:00:00Z")
    );

    t.set("2026-03-27T13:00:00Z");
    t.fake.clear_requests();
    t.reconcile(ME).await.unwrap();
    let paths: Vec<String> = t.target_writes().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/apis/karpenter.sh/v1/nodepools/batch"]);
    assert_eq!(
        budgets(&t, "batch"),
        json!([{ "nodes": "10%" }, { "nodes": "0" }])
    );
    assert_eq!(t.condition(ME, decide::CONDITION_PAUSED).0, "False");
}

#[tokio::test]
async fn a_paused_machine_autoscaler_is_not_pinned() {
    let t = Test::new(FRIDAY_NOON);
    let mut a = machine_autoscaler("worker-a", 1, 6, json!({}));
    a["metadata"]["annotations"] = json!({ PAUSED: "TRUE" });
    t.fake.insert(a);
    t.fake
        .insert(machine_autoscaler("worker-b", 1, 6, json!({})));
    t.fake.insert(machine_set("worker-a", 3));
    t.fake.insert(machine_set("worker-b", 3));
    t.fake
        .insert(schedule(ME, json!({ "machineAutoscalers": {} }), nights()));
    t.reconcile(ME).await.unwrap();
    let writes = t.target_writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(writes[0].path.ends_with("/machineautoscalers/worker-b"));
    assert_eq!(ma_json(&t, "worker-a")["spec"]["minReplicas"], json!(1));
    assert!(
        t.condition(ME, decide::CONDITION_PAUSED)
            .2
            .contains("MachineAutoscaler openshift-machine-api/worker-a (paused by annotation")
    );
}

// ----- cleanup (before an uninstall) -------------------------------------------------------------

/// `scaledown-window cleanup`: every schedule's target released as at its deletion, with nobody
/// taking over, paused schedules included; finalizers removed, schedules kept; a dry run and a
/// second run write nothing.
#[tokio::test]
async fn cleanup_releases_every_target_and_removes_the_finalizers() {
    let t = Test::new(FRIDAY_NOON);
    t.fake
        .insert(node("w1", "workers", json!({ "kept": "yes" })));
    let users = json!([{ "nodes": "10%" }]);
    t.fake.insert(node_pool("batch", users.clone()));
    t.fake.insert(machine_autoscaler(
        "worker-a",
        1,
        6,
        json!({ "scaling": "nightly" }),
    ));
    t.fake.insert(machine_set("worker-a", 3));
    let pools =
        json!({ "karpenterNodePools": { "selector": { "matchLabels": { "team": "batch" } } } });
    let machines = json!({ "machineAutoscalers": { "selector": { "matchLabels": { "scaling": "nightly" } } } });
    t.fake.insert(cluster_autoscaler(true));
    for (name, target) in [
        ("nodes", node_target()),
        ("pools", pools),
        ("machines", machines),
        ("cluster", ca_target()),
    ] {
        t.fake.insert(schedule(name, target, nights()));
        t.converge(name).await;
        t.converge(name).await;
    }
    // Outside a window: all three targets carry ebb's hold; one schedule is paused since.
    assert_eq!(
        node_annotations(&t, "w1")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );
    assert_ne!(budgets(&t, "batch"), users);
    assert_eq!(ma_json(&t, "worker-a")["spec"]["minReplicas"], json!(3));
    assert_eq!(t.ca()["spec"]["scaleDown"]["enabled"], json!(false));
    t.fake.modify::<ScaleDownSchedule>("", "pools", |s| {
        s.metadata
            .annotations
            .get_or_insert_default()
            .insert(ebb_runtime::PAUSED_ANNOTATION.into(), "true".into());
    });
    let writes_before = t.fake.writes().len();

    // A dry run says what it would do and writes nothing.
    let dry = Context::new(
        t.h.shared_with(true, Leader::disabled()),
        Own {
            metrics: Metrics::default(),
            targets: EnabledTargets::all(),
            nodes: t.node_cache(),
            schedules: None,
            calendars: CalendarCache::default(),
        },
    );
    let said = release_all(&dry, None, Leave::Nothing).await.unwrap();
    assert_eq!(said.len(), 4, "{said:?}");
    assert!(
        said.iter()
            .all(|l| l.contains("dry run: would have released")),
        "{said:?}"
    );
    assert_eq!(t.fake.writes().len(), writes_before);

    let done = release_all(&t.ctx(), None, Leave::Nothing).await.unwrap();
    assert_eq!(done.len(), 4, "{done:?}");
    assert!(
        done.iter()
            .all(|l| l.ends_with(&format!("removed finalizer {FINALIZER}"))),
        "{done:?}"
    );
    assert_eq!(node_annotations(&t, "w1"), json!({ "kept": "yes" }));
    assert_eq!(budgets(&t, "batch"), users);
    let ma = ma_json(&t, "worker-a");
    assert_eq!(ma["spec"]["minReplicas"], json!(1));
    assert!(
        !ma["metadata"]["annotations"]
            .as_object()
            .is_some_and(|a| a.keys().any(|k| k.starts_with("scaling.ebb.dev/"))),
        "{ma}"
    );
    // The ClusterAutoscaler as it was before ebb: scale-down on, nothing else moved.
    let mut before = cluster_autoscaler(true);
    before["metadata"] = t.ca()["metadata"].clone();
    assert_eq!(t.ca(), before);
    for name in ["nodes", "pools", "machines", "cluster"] {
        let kept = t.schedule(name);
        assert!(
            kept.metadata.finalizers.unwrap_or_default().is_empty(),
            "{name}"
        );
    }

    // Nothing left: a second run writes nothing.
    let writes_after = t.fake.writes().len();
    let again = release_all(&t.ctx(), None, Leave::Nothing).await.unwrap();
    assert!(
        again
            .iter()
            .all(|l| l.ends_with("nothing to release; no finalizer")),
        "{again:?}"
    );
    assert_eq!(t.fake.writes().len(), writes_after);
}

/// `cleanup --keep-settings`: the schedule's hold stays on its target (scale-down stays
/// disabled, as the user chose), and only the finalizer goes.
#[tokio::test]
async fn cleanup_keeping_the_settings_removes_only_the_finalizers() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(node("w1", "workers", json!({})));
    t.fake.insert(schedule("nodes", node_target(), nights()));
    t.converge("nodes").await;
    t.converge("nodes").await;
    let done = release_all(&t.ctx(), None, Leave::Settings).await.unwrap();
    assert_eq!(
        done,
        [format!(
            "ScaleDownSchedule nodes: kept its target's settings in force; removed finalizer {FINALIZER}"
        )]
    );
    assert_eq!(
        node_annotations(&t, "w1")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );
    assert!(
        t.schedule("nodes")
            .metadata
            .finalizers
            .unwrap_or_default()
            .is_empty()
    );
}

/// Only the schedules of this install (`--label-selector`) are cleaned.
#[tokio::test]
async fn cleanup_keeps_to_the_label_selector() {
    let t = Test::new(FRIDAY_NOON);
    t.fake.insert(node("w1", "workers", json!({})));
    let mut other = schedule("other-install", node_target(), nights());
    other["metadata"]["labels"] = json!({ "install": "b" });
    t.fake.insert(other);
    t.converge("other-install").await;
    t.converge("other-install").await;
    let done = release_all(&t.ctx(), Some("install=a"), Leave::Nothing)
        .await
        .unwrap();
    assert!(done.is_empty(), "{done:?}");
    assert_eq!(
        node_annotations(&t, "w1")[SCALE_DOWN_DISABLED_ANNOTATION],
        json!("true")
    );
    assert!(
        !t.schedule("other-install")
            .metadata
            .finalizers
            .unwrap_or_default()
            .is_empty()
    );
}

// ----- the fault matrix -------------------------------------------------------------------------

/// The ClusterAutoscaler the matrix scenarios watch: `(apiVersion, kind, namespace, name)`.
const CLUSTER_AUTOSCALER: (&str, &str, &str, &str) = (
    "autoscaling.openshift.io/v1",
    "ClusterAutoscaler",
    "",
    "default",
);

/// Every API call of a schedule meeting its trigger fails in turn with each fault of
/// `ebb_testkit::matrix::FAULTS`; the run must end where the clean one did (the target flipped
/// once, the status written), and the table of what happened is `docs/faults/<file>.md`.
async fn fault_matrix(
    file: &str,
    scenario: &str,
    at: &str,
    objects: fn() -> Vec<Value>,
    watched: &[(&str, &str, &str, &str)],
) {
    use ebb_testkit::matrix;
    let rows = matrix::fault_matrix(
        scenario,
        async || {
            let t = Test::new(at);
            for object in objects() {
                t.fake.insert(object);
            }
            let fake = t.fake.clone();
            (t, fake)
        },
        async |t: &Test, trace: &mut matrix::Trace| {
            let read = || t.fake.get::<ScaleDownSchedule>("", ME);
            matrix::settle_with(&t.fake, || t.ctx(), read, trace).await;
        },
        |t: &Test| {
            let mut all = watched.to_vec();
            all.push(("scaling.ebb.dev/v1alpha1", "ScaleDownSchedule", "", ME));
            matrix::snapshot(&t.fake, &all)
        },
    )
    .await;
    matrix::check_doc(file, scenario, &rows);
}

#[tokio::test]
async fn fault_matrix_window_closing_on_a_cluster_autoscaler() {
    fault_matrix(
        "scaledown-window-cluster-autoscaler",
        "scaledown-window: no window open, scale-down is disabled on ClusterAutoscaler `default`",
        FRIDAY_NOON,
        || {
            vec![
                cluster_autoscaler(true),
                schedule(ME, ca_target(), nights()),
            ]
        },
        &[CLUSTER_AUTOSCALER],
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_window_opening_on_a_cluster_autoscaler() {
    fault_matrix(
        "scaledown-window-cluster-autoscaler-open",
        "scaledown-window: a window opens, scale-down is enabled on ClusterAutoscaler `default`",
        FRIDAY_NIGHT,
        || {
            vec![
                cluster_autoscaler(false),
                schedule(ME, ca_target(), nights()),
            ]
        },
        &[CLUSTER_AUTOSCALER],
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_window_closing_on_machine_autoscalers() {
    fault_matrix(
        "scaledown-window-machine-autoscalers",
        "scaledown-window: no window open, MachineAutoscaler `worker-a` is pinned to its MachineSet",
        FRIDAY_NOON,
        || {
            let target = json!({ "machineAutoscalers": { "selector": { "matchLabels": { "scaling": "nightly" } } } });
            vec![
                machine_autoscaler("worker-a", 1, 6, json!({ "scaling": "nightly" })),
                machine_set("worker-a", 3),
                schedule(ME, target, nights()),
            ]
        },
        &[(
            "autoscaling.openshift.io/v1beta1",
            "MachineAutoscaler",
            MA_NS,
            "worker-a",
        )],
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_window_closing_on_nodes() {
    fault_matrix(
        "scaledown-window-nodes",
        "scaledown-window: no window open, Nodes `w1` and `w2` get the scale-down-disabled annotation",
        FRIDAY_NOON,
        || {
            vec![
                node("w1", "workers", json!({ "kept": "yes" })),
                node("w2", "workers", json!({})),
                schedule(ME, node_target(), nights()),
            ]
        },
        &[("v1", "Node", "", "w1"), ("v1", "Node", "", "w2")],
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_window_closing_on_a_node_pool() {
    fault_matrix(
        "scaledown-window-node-pool",
        "scaledown-window: no window open, NodePool `batch` gets ebb's zero budget beside its own",
        FRIDAY_NOON,
        || {
            let target = json!({ "karpenterNodePools": { "selector": { "matchLabels": { "team": "batch" } } } });
            vec![
                node_pool("batch", json!([{ "nodes": "10%" }])),
                schedule(ME, target, nights()),
            ]
        },
        &[("karpenter.sh/v1", "NodePool", "", "batch")],
    )
    .await;
}
