//! The standalone controller as the binary runs it: its `Own` reconciler through the shared
//! frame (`ebb_runtime::execute::frame::reconcile`) against the in-memory API, a manual clock and recorded
//! Events: hook Jobs, the owning StatefulSet, pause, dry run, invalid owners, stage deadlines,
//! abort and retry, conflicts, and no writes when nothing changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use ebb_crds::stackable::{FailureHookState, ScalerStage, StackableScaler};
use ebb_runtime::Leader;
use ebb_runtime::conditions::find_condition;
use ebb_runtime::execute::events::EventKind;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, ReconcileError};
use ebb_runtime::watch::cache::Feed;
use ebb_testkit::{FakeApi, Harness, Matcher};
use jiff::SignedDuration;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use kube::ResourceExt;
use serde_json::{Value, json};
use stackable_scaler::decide::{self, CONDITION_READY};
use stackable_scaler::metrics::Metrics;
use stackable_scaler::reconcile::{CONDITION_DRY_RUN, CONDITION_PAUSED, Context, Error, Own};
use stackable_scaler::{CONTROLLER_NAME, CachedScaler, HookLedger, jobs};

const START: &str = "2025-01-01T00:00:00Z";

struct Env {
    h: Harness,
    ctx: Arc<Context>,
    /// What the controller's Job watch would hold: [`run`] fills it from the fake.
    jobs: std::sync::Mutex<Feed<Job>>,
}

impl Deref for Env {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.h
    }
}

fn env_with(dry_run: bool) -> Env {
    env_with_leader(dry_run, Leader::disabled())
}

fn env_with_leader(dry_run: bool, leader: Leader) -> Env {
    let h = Harness::new(START, CONTROLLER_NAME);
    let mut cache = jobs::job_cache();
    let jobs = std::sync::Mutex::new(cache.scope());
    let own = Own {
        metrics: h.register(Metrics::new),
        ledger: HookLedger::new(),
        hook_accounts: Default::default(),
        jobs: cache,
    };
    let ctx = Arc::new(Context::new(h.shared_with(dry_run, leader), own).without_jitter());
    Env { h, ctx, jobs }
}

fn env() -> Env {
    env_with(false)
}

fn statefulset(fake: &FakeApi, replicas: i32) {
    fake.insert(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "nifi-node-default", "namespace": "data", "uid": "sts-uid", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nifi"}}, "serviceName": "nifi",
                 "template": {"metadata": {"labels": {"app": "nifi"}}, "spec": {"containers": [{"name": "nifi", "image": "nifi"}]}}},
        "status": {"replicas": replicas, "readyReplicas": replicas, "observedGeneration": 1},
    }));
}

fn settle_statefulset(fake: &FakeApi) {
    fake.modify_json("apps/v1", "StatefulSet", "data", "nifi-node-default", |sts: &mut Value| {
        let replicas = sts["spec"]["replicas"].clone();
        let generation = sts["metadata"]["generation"].clone();
        sts["status"] = json!({"replicas": replicas, "readyReplicas": replicas, "observedGeneration": generation});
    });
}

fn scaler_json(spec: i32, hooks: bool) -> Value {
    let mut s = json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "scaler-uid",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "nifi-node-default", "uid": "sts-uid", "controller": true}]},
        "spec": {"replicas": spec},
    });
    if hooks {
        s["spec"]["hooks"] = json!({"preScale": {"timeoutSeconds": 900, "template": {"spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "offload", "image": "tools:1"}]}}}}}});
    }
    s
}

fn scaler(fake: &FakeApi) -> Arc<StackableScaler> {
    Arc::new(fake.get::<StackableScaler>("data", "nifi-default").unwrap())
}

/// Why the scaler failed (`status.currentState`'s reason; empty when none is recorded).
fn failed_reason(fake: &FakeApi) -> String {
    let state = scaler(fake)
        .status
        .clone()
        .unwrap_or_default()
        .current_state;
    state.and_then(|s| s.reason).unwrap_or_default()
}

fn stage(fake: &FakeApi) -> ScalerStage {
    decide::stage_of(scaler(fake).status.as_ref())
}

/// `scaler` as the controller's cache holds it: packed.
fn guard(scaler: Arc<StackableScaler>) -> Arc<CachedScaler> {
    Arc::new(CachedScaler::pack(scaler.as_ref().clone()))
}

/// One reconcile as the controller runs it: through the frame, its Job watch up to date.
async fn run(e: &Env) -> Result<Requeue, frame::Error<Error>> {
    e.jobs.lock().unwrap().fill(e.fake.list::<Job>());
    frame::reconcile(guard(scaler(&e.fake)), e.ctx.clone()).await
}

/// The frame's error policy for `scaler`.
fn error_policy(
    scaler: Arc<StackableScaler>,
    error: &frame::Error<Error>,
    ctx: Arc<Context>,
) -> Requeue {
    frame::error_policy(&*guard(scaler), error, &ctx)
}

fn finish_job(fake: &FakeApi, name: &str, type_: &str) {
    fake.modify::<Job>("data", name, |job| {
        job.status = Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: type_.into(),
                status: "True".into(),
                reason: Some("BackoffLimitExceeded".into()),
                message: Some("Job has reached the specified backoff limit".into()),
                ..JobCondition::default()
            }]),
            ..JobStatus::default()
        });
    });
}

#[tokio::test]
async fn transient_errors_back_off_per_scaler_and_success_resets() {
    let e = env();
    let s: Arc<StackableScaler> = Arc::new(serde_json::from_value(scaler_json(3, false)).unwrap());
    let transient = frame::Error::Reconcile(Error::Observe(kube::Error::SerdeError(
        serde_json::from_str::<i32>("not json").unwrap_err(),
    )));
    assert_eq!(
        error_policy(s.clone(), &transient, e.ctx.clone()),
        Requeue::After(Duration::from_secs(1))
    );
    assert_eq!(
        error_policy(s.clone(), &transient, e.ctx.clone()),
        Requeue::After(Duration::from_secs(2))
    );
    assert_eq!(
        error_policy(
            s,
            &frame::Error::Reconcile(Error::Write(frame::Failure::Invalid {
                object: "StackableScaler data/nifi-default".into(),
                message: "no owner".into()
            })),
            e.ctx.clone()
        ),
        Requeue::AwaitChange
    );
}

#[tokio::test]
async fn a_scaler_that_does_not_deserialize_is_left_alone() {
    let e = env();
    let guard: CachedScaler = serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": "broken", "namespace": "data", "resourceVersion": "3"},
        "spec": {"replicas": "three"},
    }))
    .unwrap();
    assert!(!guard.fits());
    let guard = Arc::new(guard);
    let action = frame::reconcile(guard.clone(), e.ctx.clone())
        .await
        .unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    assert_eq!(e.fake.write_count(), 0);
    assert!(
        e.metrics_text()
            .contains("ebb_stackable_scaler_reconcile_errors_total{controller=\"stackable-scaler\",category=\"malformed\"} 1"),
        "{}",
        e.metrics_text()
    );
    // Reported on itself, once per version: a Warning Event naming the field.
    let events = e.events.events();
    assert_eq!(e.events.reasons(), vec!["Malformed"]);
    assert_eq!(events[0].kind, ebb_runtime::EventKind::Warning);
    assert!(
        events[0].note.contains("spec.replicas"),
        "{}",
        events[0].note
    );
    frame::reconcile(guard, e.ctx.clone()).await.unwrap();
    assert_eq!(e.events.reasons(), vec!["Malformed"]);

    // A good StackableScaler beside it is served as ever.
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(3, true));
    run(&e).await.unwrap();
    assert_eq!(e.events.reasons(), vec!["Malformed", "Initialized"]);
}

#[tokio::test]
async fn a_standby_replica_neither_writes_nor_runs_hooks() {
    let e = env_with_leader(false, Leader::following());
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    e.fake.clear_requests();
    let action = run(&e).await.unwrap();
    // A standby sets no timer: it reconciles everything when it starts to lead.
    assert_eq!(action, Requeue::AwaitChange);
    assert_eq!(e.fake.write_count(), 0);
    assert!(e.fake.list::<Job>().is_empty());
}

#[tokio::test]
async fn a_scale_down_runs_the_drain_job_then_resizes_the_statefulset() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(3, true));
    // First sight: status seeded from the StatefulSet, Idle, Ready.
    run(&e).await.unwrap();
    let status = scaler(&e.fake).status.clone().unwrap();
    assert_eq!(
        (status.replicas, status.selector.as_deref()),
        (3, Some("app=nifi"))
    );
    assert_eq!(stage(&e.fake), ScalerStage::Idle);
    assert_eq!(e.events.reasons(), vec!["Initialized"]);

    // The HPA asks for 1.
    e.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| s.spec.replicas = 1);
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
    let jobs = e.fake.list::<Job>();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(
        job.metadata.name.as_deref(),
        Some("nifi-default-prescale-1-0")
    );
    let env: Vec<_> = job
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .env
        .clone()
        .unwrap();
    assert!(
        env.iter()
            .any(|v| v.name == "EBB_REMOVED_ORDINALS" && v.value.as_deref() == Some("1,2"))
    );
    assert_eq!(
        e.fake
            .get::<StatefulSet>("data", "nifi-node-default")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3),
        "not before the drain"
    );

    // The Job runs: nothing changes, nothing is written.
    e.fake.clear_requests();
    run(&e).await.unwrap();
    assert_eq!(e.fake.write_count(), 0);

    // The Job completes: Scaling, the StatefulSet is patched to 1.
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Complete");
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(
        e.fake
            .get::<StatefulSet>("data", "nifi-node-default")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1)
    );
    let sts_patches = e
        .fake
        .writes_matching(&Matcher::patch("/statefulsets/nifi-node-default"));
    assert_eq!(sts_patches.len(), 1);
    // The resize names the StatefulSet's resourceVersion as the pass read it: a change since is
    // a 409, decided on again (the fault matrix's row of this PATCH).
    let body = sts_patches[0].body.clone().unwrap();
    assert_eq!(body["spec"], json!({"replicas": 1}));
    assert!(body["metadata"]["resourceVersion"].is_string(), "{body}");
    assert_eq!(
        sts_patches[0].query_param("fieldManager"),
        Some("ebb-stackable-scaler")
    );

    // The StatefulSet settles: PostScaling (no hook) -> Idle.
    settle_statefulset(&e.fake);
    e.clock.advance(SignedDuration::from_secs(30));
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Idle);
    let s = scaler(&e.fake);
    let status = s.status.as_ref().unwrap();
    assert_eq!(status.replicas, 1);
    let ready = find_condition(&status.conditions, CONDITION_READY).unwrap();
    assert_eq!(ready.status, "True");
    assert_eq!(
        e.events.reasons(),
        vec![
            "Initialized",
            "ScalingStarted",
            "PreScaleDone",
            "WorkloadStable",
            "ScalingDone"
        ]
    );

    // Steady state: a reconcile writes nothing.
    e.fake.clear_requests();
    let action = run(&e).await.unwrap();
    assert_eq!(e.fake.write_count(), 0);
    assert_eq!(action, Requeue::AwaitChange);
}

#[tokio::test]
async fn a_failed_drain_job_fails_with_its_name_and_a_logs_hint() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Failed");
    run(&e).await.unwrap();
    let state = scaler(&e.fake)
        .status
        .clone()
        .unwrap()
        .current_state
        .unwrap();
    assert_eq!(state.stage, ScalerStage::Failed);
    assert_eq!(state.failed_in, Some(ScalerStage::PreScaling));
    let reason = state.reason.unwrap();
    assert!(
        reason.contains("Job nifi-default-prescale-1-0 failed (BackoffLimitExceeded"),
        "{reason}"
    );
    assert!(
        reason.contains("kubectl logs -n data job/nifi-default-prescale-1-0"),
        "{reason}"
    );
    assert_eq!(
        state.failure_hook,
        Some(FailureHookState::Done),
        "no onFailure template: done at once"
    );
    assert_eq!(
        e.fake
            .get::<StatefulSet>("data", "nifi-node-default")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3)
    );
    let warnings: Vec<_> = e
        .events
        .events()
        .into_iter()
        .filter(|ev| ev.kind == EventKind::Warning)
        .map(|ev| ev.reason)
        .collect();
    assert_eq!(warnings, vec!["ScalingFailed"]);
}

#[tokio::test]
async fn a_drain_job_past_its_deadline_fails() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    run(&e).await.unwrap();
    e.clock.advance(SignedDuration::from_secs(901));
    run(&e).await.unwrap();
    let reason = failed_reason(&e.fake);
    assert!(reason.contains("deadline of 900s"), "{reason}");
}

#[tokio::test]
async fn retry_cleans_up_the_failed_operations_job() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    run(&e).await.unwrap();
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Failed");
    run(&e).await.unwrap();
    e.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| {
            s.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(decide::RETRY_ANNOTATION.into(), "true".into());
        });
    run(&e).await.unwrap();
    let names: Vec<String> = e
        .fake
        .list::<Job>()
        .into_iter()
        .map(|j| j.name_any())
        .collect();
    assert_eq!(
        names,
        vec!["nifi-default-prescale-2-1".to_owned()],
        "old Job deleted, new operation started"
    );
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
}

#[tokio::test]
async fn a_paused_scaler_gets_a_condition_and_nothing_else() {
    let e = env();
    statefulset(&e.fake, 3);
    let mut s = scaler_json(1, true);
    s["metadata"]["annotations"] = json!({"scaling.ebb.dev/paused-until": "2025-01-01T01:00:00Z"});
    e.fake.insert(s);
    let action = run(&e).await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(3600)));
    let status = scaler(&e.fake).status.clone().unwrap();
    assert_eq!(
        find_condition(&status.conditions, CONDITION_PAUSED)
            .unwrap()
            .status,
        "True"
    );
    assert!(status.current_state.is_none());
    assert_eq!(e.fake.write_count(), 1);
    assert!(e.fake.list::<Job>().is_empty());
    e.fake.clear_requests();
    run(&e).await.unwrap();
    assert_eq!(e.fake.write_count(), 0, "paused and already reported");
    // The pause expires: the condition goes, the state machine starts.
    e.clock.advance(SignedDuration::from_hours(1));
    run(&e).await.unwrap();
    let status = scaler(&e.fake).status.clone().unwrap();
    assert!(find_condition(&status.conditions, CONDITION_PAUSED).is_none());
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
}

#[tokio::test]
async fn a_conflicting_pause_write_is_read_again_and_written_once() {
    let e = env();
    statefulset(&e.fake, 3);
    let mut s = scaler_json(1, true);
    s["metadata"]["annotations"] = json!({"scaling.ebb.dev/paused": "true"});
    e.fake.insert(s);
    e.fake.clear_requests();
    // Someone else wrote the scaler meanwhile: the Paused condition's write meets a 409, the
    // frame reads the scaler again and runs the pass again.
    e.fake
        .fail_next(Matcher::patch("/stackablescalers/nifi-default/status"), 409);
    assert_eq!(run(&e).await.unwrap(), Requeue::AwaitChange);
    assert_eq!(
        paused_condition(&e.fake).map(|(status, reason, _)| (status, reason)),
        Some(("True".into(), "Paused".into()))
    );
    let ok_writes = e
        .fake
        .writes()
        .into_iter()
        .filter(|w| w.succeeded())
        .count();
    assert_eq!(
        (e.fake.writes().len(), ok_writes),
        (2, 1),
        "one refused, one written"
    );
    assert_eq!(e.events.reasons(), vec!["Paused"]);
    assert!(e.fake.list::<Job>().is_empty());
}

#[tokio::test]
async fn a_conflict_after_a_saved_stage_keeps_its_event_and_the_frame_runs_the_pass_again() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, false));
    e.fake.clear_requests();
    // The pass saves Initialized and Idle -> PreScaling; someone else writes the scaler before
    // PreScaling -> Scaling is saved: that write meets a 409.
    let status = || Matcher::patch("/stackablescalers/nifi-default/status");
    e.fake.after_next(status(), move |f| {
        f.after_next(status(), move |f| f.fail_next(status(), 409));
    });
    assert_eq!(
        run(&e).await.unwrap(),
        Requeue::After(decide::WORKLOAD_POLL),
        "the frame read the scaler again and the second pass scaled"
    );
    // The stages saved before the conflict keep their Events, each recorded once.
    assert_eq!(
        e.events.reasons(),
        vec!["Initialized", "ScalingStarted", "PreScaleDone"]
    );
    let status_writes: Vec<Option<u16>> = e
        .fake
        .writes_matching(&status())
        .into_iter()
        .map(|w| w.status)
        .collect();
    assert_eq!(status_writes.len(), 4, "{status_writes:?}");
    assert_eq!(
        status_writes.iter().filter(|s| **s == Some(409)).count(),
        1,
        "{status_writes:?}"
    );
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(sts_replicas(&e.fake), Some(1));
    let sts_patches = e
        .fake
        .writes_matching(&Matcher::patch("/statefulsets/nifi-node-default"));
    assert_eq!(sts_patches.len(), 1, "resized once");
}

fn annotate_statefulset(fake: &FakeApi, annotations: Value) {
    fake.modify_json(
        "apps/v1",
        "StatefulSet",
        "data",
        "nifi-node-default",
        |sts: &mut Value| {
            sts["metadata"]["annotations"] = annotations;
        },
    );
}

fn sts_replicas(fake: &FakeApi) -> Option<i32> {
    fake.get::<StatefulSet>("data", "nifi-node-default")
        .unwrap()
        .spec
        .unwrap()
        .replicas
}

fn paused_condition(fake: &FakeApi) -> Option<(String, String, String)> {
    let status = scaler(fake).status.clone().unwrap_or_default();
    find_condition(&status.conditions, CONDITION_PAUSED)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_paused_workload_gets_no_write_until_the_pause_expires() {
    let e = env();
    statefulset(&e.fake, 3);
    annotate_statefulset(
        &e.fake,
        json!({"scaling.ebb.dev/paused-until": "2025-01-01T01:00:00Z"}),
    );
    e.fake.insert(scaler_json(1, false));
    e.fake.clear_requests();
    let action = run(&e).await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(3600)));
    let writes = e.fake.writes();
    assert_eq!(writes.len(), 1, "the Paused condition only: {writes:?}");
    assert!(
        writes[0]
            .path
            .ends_with("/stackablescalers/nifi-default/status")
    );
    assert!(
        e.fake
            .writes_matching(&Matcher::any("/statefulsets/nifi-node-default"))
            .is_empty()
    );
    assert_eq!(
        paused_condition(&e.fake),
        Some((
            "True".into(),
            "Paused".into(),
            "StatefulSet data/nifi-node-default: paused until 2025-01-01T01:00:00Z by annotation \
             scaling.ebb.dev/paused-until"
                .into()
        ))
    );
    assert_eq!(e.events.reasons(), vec!["Paused"]);
    assert!(
        scaler(&e.fake)
            .status
            .clone()
            .unwrap()
            .current_state
            .is_none()
    );

    // Still paused: nothing at all.
    e.fake.clear_requests();
    e.clock.advance(SignedDuration::from_mins(59));
    run(&e).await.unwrap();
    assert_eq!(e.fake.write_count(), 0);
    assert_eq!(e.events.reasons(), vec!["Paused"]);
    assert_eq!(sts_replicas(&e.fake), Some(3));

    // At paused-until: the condition goes and the state machine scales the StatefulSet.
    e.clock.advance(SignedDuration::from_mins(1));
    run(&e).await.unwrap();
    assert_eq!(paused_condition(&e.fake), None);
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(sts_replicas(&e.fake), Some(1));
}

#[tokio::test]
async fn a_workload_paused_mid_operation_holds_the_stage_and_the_deadline_waits() {
    let (e, _) = drain_world().await;
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
    assert_eq!(e.fake.list::<Job>().len(), 1);

    // Paused indefinitely; the drain Job completes meanwhile and the stage deadline passes.
    annotate_statefulset(&e.fake, json!({"scaling.ebb.dev/paused": "true"}));
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Complete");
    e.events.clear();
    e.fake.clear_requests();
    assert_eq!(run(&e).await.unwrap(), Requeue::AwaitChange);
    e.clock.advance(SignedDuration::from_hours(2));
    assert_eq!(run(&e).await.unwrap(), Requeue::AwaitChange);
    // The Paused condition is the only write: no StatefulSet patch, no Job created or deleted,
    // the stage did not move (not even to Failed past its deadline).
    let writes = e.fake.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(
        writes[0]
            .path
            .ends_with("/stackablescalers/nifi-default/status")
    );
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
    assert_eq!(e.fake.list::<Job>().len(), 1);
    assert_eq!(sts_replicas(&e.fake), Some(3));
    assert_eq!(e.events.reasons(), vec!["Paused"]);

    // The annotation removed (the StatefulSet watch brings this reconcile): the Job's answer wins
    // over the passed deadline, and the StatefulSet is scaled.
    annotate_statefulset(&e.fake, Value::Null);
    run(&e).await.unwrap();
    assert_eq!(paused_condition(&e.fake), None);
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(sts_replicas(&e.fake), Some(1));
}

#[tokio::test]
async fn dry_run_records_the_intent_and_writes_nothing_else() {
    let e = env_with(true);
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    run(&e).await.unwrap();
    let writes = e.fake.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(
        writes[0]
            .path
            .ends_with("/stackablescalers/nifi-default/status")
    );
    let status = scaler(&e.fake).status.clone().unwrap();
    let dry = find_condition(&status.conditions, CONDITION_DRY_RUN).unwrap();
    assert_eq!(
        dry.message,
        "dry run: would run the prescale hook for scaling from 3 to 1 replicas"
    );
    assert!(
        status.current_state.is_none(),
        "the state machine did not move"
    );
    assert!(e.fake.list::<Job>().is_empty());
    assert_eq!(e.events.reasons(), vec!["DryRun"]);
    e.fake.clear_requests();
    run(&e).await.unwrap();
    assert_eq!(e.fake.write_count(), 0);
}

#[tokio::test]
async fn a_scaler_without_a_workload_owner_is_invalid_until_it_changes() {
    let e = env();
    let mut s = scaler_json(1, false);
    s["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}]);
    e.fake.insert(s);
    let err = run(&e).await.unwrap_err();
    assert_eq!(err.category(), "invalid");
    assert_eq!(
        error_policy(scaler(&e.fake), &err, e.ctx.clone()),
        Requeue::AwaitChange
    );
    let status = scaler(&e.fake).status.clone().unwrap();
    let ready = find_condition(&status.conditions, CONDITION_READY).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "InvalidOwner")
    );
    e.fake.clear_requests();
    assert!(run(&e).await.is_err());
    assert_eq!(e.fake.write_count(), 0, "reported once");
}

#[tokio::test]
async fn transient_errors_are_retried_and_converge_without_acting_twice() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(5, false));
    // The StatefulSet patch fails once.
    e.fake
        .fail_next(Matcher::patch("/statefulsets/nifi-node-default"), 500);
    let err = run(&e).await.unwrap_err();
    assert_eq!(err.category(), "write_target");
    assert_eq!(
        error_policy(scaler(&e.fake), &err, e.ctx.clone()),
        Requeue::After(Duration::from_secs(1)),
        "the first retry of this scaler comes after a second"
    );
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    run(&e).await.unwrap();
    assert_eq!(
        e.fake
            .get::<StatefulSet>("data", "nifi-node-default")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(5)
    );
    settle_statefulset(&e.fake);
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Idle);
    let ok_patches = e
        .fake
        .writes_matching(&Matcher::patch("/statefulsets/nifi-node-default"))
        .into_iter()
        .filter(|w| w.succeeded())
        .count();
    assert_eq!(ok_patches, 1);
}

#[tokio::test]
async fn a_deployment_is_served_too() {
    let e = env();
    e.fake.insert(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "data", "uid": "d-uid", "generation": 1},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "w", "image": "w"}]}}},
        "status": {"replicas": 2, "readyReplicas": 2, "observedGeneration": 1},
    }));
    let mut s = scaler_json(4, false);
    s["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid", "controller": true}]);
    e.fake.insert(s);
    run(&e).await.unwrap();
    run(&e).await.unwrap();
    assert_eq!(
        e.fake
            .get::<Deployment>("data", "web")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(4)
    );
}

fn annotate(fake: &FakeApi, key: &str) {
    fake.modify::<StackableScaler>("data", "nifi-default", |s| {
        s.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), "true".into());
    });
}

fn has_annotation(fake: &FakeApi, key: &str) -> bool {
    scaler(fake)
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

#[tokio::test]
async fn a_workload_that_never_settles_fails_at_the_stage_deadline_and_can_be_retried() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, false));
    run(&e).await.unwrap();
    assert_eq!(
        stage(&e.fake),
        ScalerStage::Scaling,
        "no hooks: straight to Scaling"
    );
    // The StatefulSet is asked for 1 and never gets there (its controller is stuck).

    // Two seconds before the 30-minute default deadline: the requeue lands on the deadline.
    e.clock
        .advance(SignedDuration::from_mins(30) - SignedDuration::from_secs(2));
    e.fake.clear_requests();
    let action = run(&e).await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(2)));
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(e.fake.write_count(), 0);

    // At the deadline, with no change of any object: Failed, saying what it waited for.
    e.clock.advance(SignedDuration::from_secs(2));
    let action = run(&e).await.unwrap();
    assert_eq!(action, Requeue::AwaitChange, "Failed waits for a retry");
    let s = scaler(&e.fake);
    let status = s.status.clone().unwrap();
    let state = status.current_state.clone().unwrap();
    assert_eq!(
        (state.stage, state.failed_in),
        (ScalerStage::Failed, Some(ScalerStage::Scaling))
    );
    let reason = "workload StatefulSet/nifi-node-default not stable at 1 replicas after 30m: \
                  replicas 3, ready 3, observedGeneration 1 < generation 2";
    assert_eq!(state.reason.as_deref(), Some(reason));
    let failed = find_condition(&status.conditions, decide::CONDITION_FAILED).unwrap();
    assert_eq!(
        (
            failed.status.as_str(),
            failed.reason.as_str(),
            failed.message.as_str()
        ),
        ("True", "Scaling", reason)
    );
    let warnings: Vec<_> = e
        .events
        .events()
        .into_iter()
        .filter(|ev| ev.kind == EventKind::Warning)
        .map(|ev| (ev.reason, ev.note))
        .collect();
    assert_eq!(
        warnings,
        vec![(
            "ScalingFailed".to_owned(),
            format!("Scaling failed: {reason}")
        )]
    );

    // Retry works as after any failure.
    annotate(&e.fake, decide::RETRY_ANNOTATION);
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Idle);
    assert!(!has_annotation(&e.fake, decide::RETRY_ANNOTATION));
    assert_eq!(scaler(&e.fake).status.clone().unwrap().attempt, Some(1));
}

#[tokio::test]
async fn a_custom_stage_timeout_is_read_from_the_spec() {
    let e = env();
    statefulset(&e.fake, 3);
    let mut s = scaler_json(1, false);
    s["spec"]["stageTimeoutSeconds"] = json!(120);
    e.fake.insert(s);
    run(&e).await.unwrap();
    e.clock.advance(SignedDuration::from_secs(115));
    assert_eq!(
        run(&e).await.unwrap(),
        Requeue::After(Duration::from_secs(5))
    );
    e.clock.advance(SignedDuration::from_secs(5));
    run(&e).await.unwrap();
    let state = scaler(&e.fake)
        .status
        .clone()
        .unwrap()
        .current_state
        .unwrap();
    assert_eq!(state.stage, ScalerStage::Failed);
    assert!(state.reason.unwrap().contains("after 2m:"));
}

#[tokio::test]
async fn the_abort_annotation_fails_the_operation_strips_itself_and_retry_starts_over() {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(1, true));
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);

    annotate(&e.fake, decide::ABORT_ANNOTATION);
    e.fake.clear_requests();
    let action = run(&e).await.unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    let s = scaler(&e.fake);
    let status = s.status.clone().unwrap();
    let state = status.current_state.clone().unwrap();
    assert_eq!(
        (state.stage, state.failed_in, state.reason.as_deref()),
        (
            ScalerStage::Failed,
            Some(ScalerStage::PreScaling),
            Some("aborted by annotation autoscaling.stackable.tech/abort")
        )
    );
    let failed = find_condition(&status.conditions, decide::CONDITION_FAILED).unwrap();
    assert_eq!(
        (failed.status.as_str(), failed.reason.as_str()),
        ("True", "PreScaling")
    );
    assert!(!has_annotation(&e.fake, decide::ABORT_ANNOTATION));
    // Failed is written before the annotation goes (a crash in between aborts, not loses, it).
    let writes: Vec<String> = e
        .fake
        .writes()
        .into_iter()
        .filter(|w| w.path.contains("/stackablescalers/"))
        .map(|w| w.path)
        .collect();
    assert_eq!(
        writes.first().map(String::as_str),
        Some(
            "/apis/autoscaling.stackable.tech/v1alpha1/namespaces/data/stackablescalers/nifi-default/status"
        )
    );
    assert_eq!(
        writes.get(1).map(String::as_str),
        Some(
            "/apis/autoscaling.stackable.tech/v1alpha1/namespaces/data/stackablescalers/nifi-default"
        )
    );
    assert!(e.events.reasons().contains(&"ScalingAborted".to_owned()));
    assert_eq!(
        e.fake
            .get::<StatefulSet>("data", "nifi-node-default")
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3),
        "nothing was resized"
    );

    // Aborting again in Failed changes nothing; the annotation is removed.
    annotate(&e.fake, decide::ABORT_ANNOTATION);
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Failed);
    assert!(!has_annotation(&e.fake, decide::ABORT_ANNOTATION));

    // Retry starts a fresh operation with a fresh Job.
    annotate(&e.fake, decide::RETRY_ANNOTATION);
    run(&e).await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling);
    assert!(
        e.fake
            .get::<Job>("data", "nifi-default-prescale-2-1")
            .is_some()
    );
}

// ----- the fault matrix -------------------------------------------------------------------------

const DRAIN_SCENARIO: &str = "stackable-scaler: the HPA asks for 1 of 3: the drain Job runs, \
                              completes, the StatefulSet is resized, it settles";

/// A scaler at 3 replicas with a drain hook, just asked for 1 (unrecorded).
async fn drain_world() -> (Env, FakeApi) {
    let e = env();
    statefulset(&e.fake, 3);
    e.fake.insert(scaler_json(3, true));
    run(&e).await.unwrap();
    e.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| s.spec.replicas = 1);
    let fake = e.fake.clone();
    (e, fake)
}

/// The scale-down to its end as the controller drives it, each reconcile in the context
/// `process` gives: the Job started, then completed, the StatefulSet settled 30 s later.
async fn drain_act(
    e: &Env,
    process: impl Fn() -> Arc<Context>,
    trace: &mut ebb_testkit::matrix::Trace,
) {
    use ebb_testkit::matrix::settle_with;
    let read = || e.fake.get::<StackableScaler>("data", "nifi-default");
    settle_with(&e.fake, &process, read, trace).await;
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Complete");
    settle_with(&e.fake, &process, read, trace).await;
    settle_statefulset(&e.fake);
    e.clock.advance(SignedDuration::from_secs(30));
    settle_with(&e.fake, &process, read, trace).await;
}

/// The hook Jobs that exist, the StatefulSet and the scaler.
fn drain_outcome(e: &Env) -> Value {
    let jobs: Vec<String> = e.fake.list::<Job>().iter().map(|j| j.name_any()).collect();
    json!({
        "jobs": jobs,
        "objects": ebb_testkit::matrix::snapshot(&e.fake, &[
            ("apps/v1", "StatefulSet", "data", "nifi-node-default"),
            ("autoscaling.stackable.tech/v1alpha1", "StackableScaler", "data", "nifi-default"),
        ]),
    })
}

/// Every API call of a scale-down with a drain hook fails in turn with each fault of
/// `ebb_testkit::matrix::FAULTS`: the run must end where the clean one did, with the one hook Job
/// (never skipped, never a second), the StatefulSet resized once, the scaler Idle. The table of
/// what happened is `docs/faults/stackable-scaler-scale-down.md`.
#[tokio::test]
async fn fault_matrix_a_scale_down_with_a_drain_hook() {
    use ebb_testkit::matrix;
    let rows = matrix::fault_matrix(
        DRAIN_SCENARIO,
        drain_world,
        async |e: &Env, trace: &mut matrix::Trace| drain_act(e, || e.ctx.clone(), trace).await,
        drain_outcome,
    )
    .await;
    matrix::check_doc("stackable-scaler-scale-down", DRAIN_SCENARIO, &rows);
}

/// Whoever may create StackableScalers cannot get a Job to run as another ServiceAccount: a
/// hook whose template names one the install does not allow (`--hook-service-accounts`, by
/// default only `default`) is never started, and the operation fails naming the account; the
/// StatefulSet is not touched. Naming none (the namespace's `default`) runs as usual.
#[tokio::test]
async fn a_hook_never_runs_as_a_service_account_the_install_does_not_allow() {
    let e = env();
    statefulset(&e.fake, 3);
    let mut s = scaler_json(3, true);
    s["spec"]["hooks"]["preScale"]["template"]["spec"]["template"]["spec"]["serviceAccountName"] =
        json!("cluster-admin-sa");
    e.fake.insert(s);
    run(&e).await.unwrap();
    e.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| s.spec.replicas = 1);
    for _ in 0..3 {
        let _ = run(&e).await;
    }
    assert!(e.fake.list::<Job>().is_empty(), "no Job was created");
    assert_eq!(stage(&e.fake), ScalerStage::Failed);
    let reason = failed_reason(&e.fake);
    assert!(
        reason.contains(
            "its Job would run as ServiceAccount \"cluster-admin-sa\", which this install does not allow"
        ),
        "{reason}"
    );
    assert_eq!(sts_replicas(&e.fake), Some(3), "never resized");
    let failed = find_condition(
        &scaler(&e.fake).status.clone().unwrap().conditions,
        "Failed",
    )
    .cloned()
    .unwrap();
    assert!(
        failed.message.contains("cluster-admin-sa"),
        "{}",
        failed.message
    );
}

/// A hook Job that finished and was removed before ebb read its result (deleted by hand, a TTL
/// a cluster policy adds) while the controller was down: its start is recorded, so the new
/// process never creates it again. It waits out the grace for a create still to come, then the
/// operation fails naming the lost Job; the StatefulSet is not touched. The retry annotation
/// starts a new attempt, which runs the hook afresh (operation 2, attempt 1: a Job of its own).
#[tokio::test]
async fn a_hook_job_lost_after_its_start_is_never_run_again_for_that_attempt() {
    let (e, _) = drain_world().await;
    run(&e).await.unwrap();
    let started = scaler(&e.fake)
        .status
        .clone()
        .unwrap()
        .started_hook
        .unwrap();
    assert_eq!(
        (
            started.hook.as_str(),
            started.scale_event,
            started.attempt,
            started.job.as_deref()
        ),
        ("prescale", 1, 0, Some("nifi-default-prescale-1-0"))
    );
    finish_job(&e.fake, "nifi-default-prescale-1-0", "Complete");
    assert!(e.fake.remove::<Job>("data", "nifi-default-prescale-1-0"));
    // A new process: nothing in memory says what the old one did.
    let restarted = Arc::new(Context::new(
        e.h.shared(false),
        Own {
            metrics: Metrics::default(),
            ledger: HookLedger::new(),
            hook_accounts: Default::default(),
            jobs: jobs::job_cache(),
        },
    ));
    let pass = || frame::reconcile(guard(scaler(&e.fake)), restarted.clone());
    pass().await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::PreScaling, "within the grace");
    e.clock
        .advance(SignedDuration::try_from(jobs::LOST_GRACE).unwrap());
    pass().await.unwrap();
    assert_eq!(stage(&e.fake), ScalerStage::Failed);
    let state = scaler(&e.fake)
        .status
        .clone()
        .unwrap()
        .current_state
        .unwrap();
    assert_eq!(state.failed_in, Some(ScalerStage::PreScaling));
    assert!(
        state.reason.as_deref().unwrap_or_default().starts_with(
            "prescale hook: hook Job nifi-default-prescale-1-0 (scale event 1, attempt 0) was \
             started and is gone"
        ),
        "{:?}",
        state.reason
    );
    for _ in 0..3 {
        pass().await.unwrap();
    }
    assert!(e.fake.list::<Job>().is_empty(), "never created again");
    assert_eq!(sts_replicas(&e.fake), Some(3), "never resized");

    annotate(&e.fake, decide::RETRY_ANNOTATION);
    for _ in 0..3 {
        pass().await.unwrap();
    }
    let jobs: Vec<String> = e.fake.list::<Job>().iter().map(|j| j.name_any()).collect();
    assert_eq!(
        jobs,
        ["nifi-default-prescale-2-1"],
        "the hook of the retried operation"
    );
}

/// The standalone controller restarts with a fresh (empty) hook ledger after each call of the
/// scale-down in turn: the call took effect, the process died before it saw the answer, and a new
/// process (new context, new ledger, new backoff) carries on from what the cluster says. It must
/// end exactly as without the crash: one drain Job, never a second attempt, one resize. Except
/// for the one crash between the two writes of a hook's start (its record in status, then its
/// Job): the new process cannot tell a Job never created from one that ran and was removed, so
/// it never creates it; once the grace for the old process's create is over, the operation fails
/// naming the Job, and nothing else happens (no Job, no resize).
#[tokio::test]
async fn a_restart_with_a_fresh_ledger_after_any_call_runs_the_hook_once() {
    use ebb_testkit::matrix::Trace;
    let (clean, fake) = drain_world().await;
    fake.clear_requests();
    drain_act(&clean, || clean.ctx.clone(), &mut Trace::default()).await;
    let expected = drain_outcome(&clean);
    assert_eq!(expected["jobs"], json!(["nifi-default-prescale-1-0"]));
    let requests = fake.requests();
    let mut lost = Vec::new();
    for n in 0..requests.len() {
        let (e, fake) = drain_world().await;
        fake.clear_requests();
        fake.inject_nth(n, ebb_testkit::Fault::TimeoutAfterApply);
        let restarted = Arc::new(Context::new(
            e.h.shared(false),
            Own {
                metrics: Metrics::default(),
                ledger: HookLedger::new(),
                hook_accounts: Default::default(),
                jobs: jobs::job_cache(),
            },
        ));
        // The old process until its crash; the new one from then on.
        let process = || {
            let crashed = fake.requests().iter().any(|r| r.status.is_none());
            if crashed {
                restarted.clone()
            } else {
                e.ctx.clone()
            }
        };
        let read = || e.fake.get::<StackableScaler>("data", "nifi-default");
        ebb_testkit::matrix::settle_with(&e.fake, &process, read, &mut Trace::default()).await;
        if e.fake.list::<Job>().is_empty() {
            // Recorded, never created: waited for through the grace, then failed.
            assert_eq!(
                stage(&e.fake),
                ScalerStage::PreScaling,
                "a crash after call {n}"
            );
            e.clock
                .advance(SignedDuration::try_from(jobs::LOST_GRACE).unwrap());
            ebb_testkit::matrix::settle_with(&e.fake, &process, read, &mut Trace::default()).await;
            assert_eq!(
                stage(&e.fake),
                ScalerStage::Failed,
                "a crash after call {n}"
            );
            let reason = scaler(&e.fake)
                .status
                .clone()
                .unwrap()
                .current_state
                .unwrap()
                .reason;
            assert!(
                reason.as_deref().unwrap_or_default().contains(
                    "hook Job nifi-default-prescale-1-0 (scale event 1, attempt 0) was started and is gone"
                ),
                "{reason:?}"
            );
            assert!(
                e.fake.list::<Job>().is_empty(),
                "never created after the crash"
            );
            assert_eq!(sts_replicas(&e.fake), Some(3), "never resized");
            lost.push(n);
            continue;
        }
        finish_job(&e.fake, "nifi-default-prescale-1-0", "Complete");
        ebb_testkit::matrix::settle_with(&e.fake, &process, read, &mut Trace::default()).await;
        settle_statefulset(&e.fake);
        e.clock.advance(SignedDuration::from_secs(30));
        ebb_testkit::matrix::settle_with(&e.fake, &process, read, &mut Trace::default()).await;
        assert_eq!(drain_outcome(&e), expected, "a crash after call {n}");
    }
    // Only the crash right after the status write that recorded the start.
    assert_eq!(lost.len(), 1, "{lost:?}");
    let recorded = &requests[lost[0]];
    assert!(
        recorded.method == "PATCH"
            && recorded
                .path
                .ends_with("/stackablescalers/nifi-default/status"),
        "{recorded:?}"
    );
}

// ----- replicas racing ----------------------------------------------------------------------------

/// Two replicas, each its own process with an empty hook ledger (an old leader that has not yet
/// seen its Lease go, and the new one), reconcile the same stale copy of a scaler just asked for 1
/// of 3, every way their requests can interleave (reads included). Whatever the order: one drain
/// Job, started once (a second create is refused by the API server as already there); the scaler
/// waits in PreScaling for that Job; the StatefulSet is not touched before the hook ran; and as
/// one `ScalingStarted` Event between them.
#[tokio::test]
async fn two_replicas_in_every_interleaving_start_one_drain_job() {
    use ebb_testkit::interleave::{Gated, explore};
    use std::sync::Mutex;
    type World = (Env, Arc<StackableScaler>, Mutex<Vec<String>>);
    let runs = explore(
        2,
        Gated::All,
        async || {
            let (e, fake) = drain_world().await;
            let stale = scaler(&fake);
            fake.clear_requests();
            ((e, stale, Mutex::new(Vec::new())), fake)
        },
        async |(e, stale, events): &World, _actor, client| {
            let process = ebb_testkit::Replica::new(
                &e.fake,
                &e.clock,
                CONTROLLER_NAME,
                false,
                Leader::disabled(),
            )
            .with_client(client);
            let ctx = process.context(Own {
                metrics: process.register(Metrics::new),
                ledger: HookLedger::new(),
                hook_accounts: Default::default(),
                jobs: jobs::job_cache(),
            });
            // A replica that lost a race may end its pass with an error; the error policy
            // would run it again, which the check below does not need.
            let _ = frame::reconcile(guard(stale.clone()), ctx).await;
            events.lock().unwrap().extend(process.events.reasons());
        },
        |(e, _, events): &World, schedule| {
            let jobs: Vec<String> = e.fake.list::<Job>().iter().map(|j| j.name_any()).collect();
            assert_eq!(jobs, ["nifi-default-prescale-1-0"], "in\n{schedule}");
            assert_eq!(stage(&e.fake), ScalerStage::PreScaling, "in\n{schedule}");
            assert_eq!(sts_replicas(&e.fake), Some(3), "in\n{schedule}");
            let created = e
                .fake
                .requests()
                .iter()
                .filter(|r| r.method == "POST" && r.path.contains("/jobs") && r.status == Some(201))
                .count();
            assert_eq!(created, 1, "in\n{schedule}");
            let events = events.lock().unwrap();
            let started = events.iter().filter(|r| *r == "ScalingStarted").count();
            assert_eq!(
                started, 1,
                "one operation started: {events:?}\nin\n{schedule}"
            );
        },
    )
    .await;
    eprintln!("2 replicas (every request takes turns): {runs} interleavings");
    assert!(runs >= 20, "{runs}");
}

/// What one step per pass would cost (docs/decisions.md, "stackable-scaler: several steps per
/// pass"), counted: a resize without hooks makes four stage changes in two passes, each pass
/// reading the scaler's workload once (the StatefulSet GET a pass makes on purpose, so a pass
/// right after its own resize does not resize again from a stale copy). One step per pass would
/// be four passes and four reads of the StatefulSet, for the same writes.
#[tokio::test]
async fn a_resize_without_hooks_is_four_steps_in_two_passes_of_one_workload_read_each() {
    let e = env();
    statefulset(&e.fake, 1);
    e.fake.insert(scaler_json(1, false));
    run(&e).await.unwrap();
    e.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| s.spec.replicas = 3);
    let workload_reads = |e: &Env| {
        e.fake
            .reads()
            .iter()
            .filter(|r| r.path.ends_with("/statefulsets/nifi-node-default"))
            .count()
    };
    let before = e.events.reasons().len();
    let mut passes = 0;
    e.fake.clear_requests();
    // Idle -> PreScaling (no hook) -> Scaling, and the resize.
    run(&e).await.unwrap();
    passes += 1;
    assert_eq!(stage(&e.fake), ScalerStage::Scaling);
    assert_eq!(sts_replicas(&e.fake), Some(3));
    assert_eq!(workload_reads(&e), 1);
    // The StatefulSet settles: Scaling -> PostScaling (no hook) -> Idle.
    settle_statefulset(&e.fake);
    e.clock.advance(SignedDuration::from_secs(30));
    e.fake.clear_requests();
    run(&e).await.unwrap();
    passes += 1;
    assert_eq!(stage(&e.fake), ScalerStage::Idle);
    assert_eq!(workload_reads(&e), 1);
    let steps = &e.events.reasons()[before..];
    assert_eq!(
        steps,
        [
            "ScalingStarted",
            "PreScaleDone",
            "WorkloadStable",
            "ScalingDone"
        ],
        "four stage changes"
    );
    assert_eq!(passes, 2);
}
