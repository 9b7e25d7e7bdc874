//! The library as a product operator uses it: `reconcile_scaler` with its own hooks and its own
//! scale target, against the in-memory API, with injected conflicts and errors. Hooks are counted:
//! none is skipped, none is asked again after it answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ebb_crds::stackable::{FailureHookState, ScalerStage, StackableScaler};
use ebb_testkit::{FakeApi, Fault, Matcher};
use jiff::Timestamp;
use kube::Api;
use serde_json::json;
use stackable_scaler::{
    HookError, HookKind, HookLedger, HookOutcome, HookResult, RETRY_ANNOTATION, ScaleTarget,
    ScalerError, ScalingContext, ScalingHooks, TargetError, WorkloadState, reconcile_scaler,
    scaler_pass,
};

const STATUS_PATH: &str = "/stackablescalers/nifi-default/status";

fn now() -> Timestamp {
    ebb_testkit::utc("2025-01-01T00:00:00Z")
}

/// Hooks that record every call (with the stage stored in the API at that moment) and answer from
/// a script (Done when the script is empty).
#[derive(Clone)]
struct RecordingHooks {
    fake: FakeApi,
    calls: Arc<Mutex<Vec<(HookKind, i64, ScalerStage)>>>,
    script: Arc<Mutex<VecDeque<(HookKind, HookResult)>>>,
}

impl RecordingHooks {
    fn new(fake: &FakeApi) -> Self {
        Self {
            fake: fake.clone(),
            calls: Arc::default(),
            script: Arc::default(),
        }
    }
    fn answer(&self, hook: HookKind, answer: HookResult) {
        self.script.lock().unwrap().push_back((hook, answer));
    }
    fn calls(&self) -> Vec<(HookKind, i64, ScalerStage)> {
        self.calls.lock().unwrap().clone()
    }
    fn kinds(&self) -> Vec<HookKind> {
        self.calls().into_iter().map(|c| c.0).collect()
    }
    fn call(&self, hook: HookKind, ctx: &ScalingContext) -> HookResult {
        let stored = stage(&self.fake);
        self.calls
            .lock()
            .unwrap()
            .push((hook, ctx.scale_event, stored));
        let mut script = self.script.lock().unwrap();
        match script.front() {
            Some((h, _)) if *h == hook => script.pop_front().unwrap().1,
            _ => Ok(HookOutcome::Done),
        }
    }
}

impl ScalingHooks for RecordingHooks {
    async fn pre_scale(&self, ctx: &ScalingContext) -> HookResult {
        self.call(HookKind::PreScale, ctx)
    }
    async fn post_scale(&self, ctx: &ScalingContext) -> HookResult {
        self.call(HookKind::PostScale, ctx)
    }
    async fn on_failure(&self, ctx: &ScalingContext) -> HookResult {
        self.call(HookKind::OnFailure, ctx)
    }
}

/// A workload held in memory; `set_replicas` changes the spec, `settle` makes it ready.
#[derive(Clone, Default)]
struct MemoryTarget {
    state: Arc<Mutex<WorkloadState>>,
    sets: Arc<Mutex<Vec<i32>>>,
}

impl MemoryTarget {
    fn at(replicas: i32) -> Self {
        let t = Self::default();
        *t.state.lock().unwrap() = WorkloadState::settled(replicas);
        t
    }
    fn settle(&self) {
        let mut s = self.state.lock().unwrap();
        *s = WorkloadState::settled(s.replicas);
    }
    fn sets(&self) -> Vec<i32> {
        self.sets.lock().unwrap().clone()
    }
}

impl ScaleTarget for MemoryTarget {
    async fn observe(&self) -> Result<Option<WorkloadState>, TargetError> {
        Ok(Some(self.state.lock().unwrap().clone()))
    }
    async fn set_replicas(&self, replicas: i32) -> Result<(), TargetError> {
        self.sets.lock().unwrap().push(replicas);
        let mut s = self.state.lock().unwrap();
        s.replicas = replicas;
        s.ready_replicas = s.ready_replicas.min(replicas);
        Ok(())
    }
}

fn seed(fake: &FakeApi, spec: i32, status: serde_json::Value) {
    fake.insert(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1",
        "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "uid-1"},
        "spec": {"replicas": spec},
        "status": status,
    }));
}

fn idle_at(replicas: i32) -> serde_json::Value {
    json!({"replicas": replicas, "scaleEvent": 0, "currentState": {"stage": "Idle"}})
}

fn stored(fake: &FakeApi) -> StackableScaler {
    fake.get::<StackableScaler>("data", "nifi-default").unwrap()
}

fn stage(fake: &FakeApi) -> ScalerStage {
    stored(fake)
        .status
        .and_then(|s| s.current_state)
        .map_or(ScalerStage::Idle, |s| s.stage)
}

struct Harness {
    fake: FakeApi,
    api: Api<StackableScaler>,
    hooks: RecordingHooks,
    target: MemoryTarget,
    ledger: HookLedger,
}

impl Harness {
    fn new(spec: i32, status: serde_json::Value, workload: i32) -> Self {
        let fake = FakeApi::new();
        seed(&fake, spec, status);
        Self {
            api: Api::namespaced(fake.client(), "data"),
            hooks: RecordingHooks::new(&fake),
            target: MemoryTarget::at(workload),
            ledger: HookLedger::new(),
            fake,
        }
    }

    async fn pass(&self) -> Result<stackable_scaler::ScalingResult, stackable_scaler::ScalerError> {
        let scaler = stored(&self.fake);
        reconcile_scaler(
            &self.api,
            &scaler,
            &self.hooks,
            &self.target,
            &self.ledger,
            now(),
        )
        .await
    }
}

#[tokio::test]
async fn a_full_scale_up_runs_each_hook_once_in_order() {
    let h = Harness::new(5, idle_at(3), 3);
    let r = h.pass().await.unwrap();
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale]);
    assert_eq!(h.target.sets(), vec![5]);
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
    assert_eq!(
        h.fake.write_count(),
        2,
        "Idle->PreScaling, PreScaling->Scaling"
    );
    assert!(r.condition.progressing && !r.condition.ready);
    assert_eq!(
        r.notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        vec!["ScalingStarted", "PreScaleDone"]
    );
    // The hook saw its stage persisted before it ran.
    assert_eq!(h.hooks.calls()[0].2, ScalerStage::PreScaling);

    // Not stable yet: wait, no writes, no hooks.
    h.fake.clear_requests();
    h.pass().await.unwrap();
    assert_eq!(h.fake.write_count(), 0);

    h.target.settle();
    let r = h.pass().await.unwrap();
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale, HookKind::PostScale]
    );
    assert_eq!(h.hooks.calls()[1].2, ScalerStage::PostScaling);
    assert_eq!(stage(&h.fake), ScalerStage::Idle);
    assert!(r.condition.ready);
    let status = stored(&h.fake).status.unwrap();
    assert_eq!(
        (
            status.replicas,
            status.previous_replicas,
            status.desired_replicas
        ),
        (5, None, None)
    );

    // Idle and in sync: a no-op pass writes nothing and asks nothing.
    h.fake.clear_requests();
    h.pass().await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.hooks.kinds().len(), 2);
}

#[tokio::test]
async fn a_fresh_scaler_is_initialized_and_never_scales_from_zero() {
    let h = Harness::new(3, json!(null), 3);
    h.pass().await.unwrap();
    let status = stored(&h.fake).status.unwrap();
    assert_eq!(status.replicas, 3);
    assert_eq!(stage(&h.fake), ScalerStage::Idle);
    assert!(h.hooks.calls().is_empty() && h.target.sets().is_empty());
    assert_eq!(h.fake.write_count(), 1);
}

#[tokio::test]
async fn a_conflict_after_a_hook_answered_does_not_ask_it_again() {
    let h = Harness::new(1, idle_at(3), 3);
    // The first status write (Idle -> PreScaling) passes; the next one (-> Scaling) conflicts.
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.fail_next(Matcher::patch(STATUS_PATH), 409)
    });
    h.pass().await.unwrap();
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale],
        "answered once, never asked again"
    );
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
    assert_eq!(h.target.sets(), vec![1]);
    let failed: Vec<_> = h
        .fake
        .writes()
        .into_iter()
        .filter(|w| w.status == Some(409))
        .collect();
    assert_eq!(failed.len(), 1);
}

#[tokio::test]
async fn one_pass_stops_at_a_conflict_with_what_it_saved() {
    let h = Harness::new(1, idle_at(3), 3);
    // Idle -> PreScaling is saved, the prescale hook answers, -> Scaling conflicts.
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.fail_next(Matcher::patch(STATUS_PATH), 409)
    });
    let scaler = stored(&h.fake);
    let err = scaler_pass(&h.api, &scaler, &h.hooks, &h.target, &h.ledger, now())
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(err.category(), "conflict");
    let ScalerError::Conflict { done, .. } = err else {
        unreachable!()
    };
    assert_eq!(
        done.notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        vec!["ScalingStarted"],
        "the saved stage's note, not the refused one's"
    );
    assert_eq!(done.hook_calls.len(), 1);
    assert_eq!(done.condition.stage, ScalerStage::PreScaling);
    assert_eq!(stage(&h.fake), ScalerStage::PreScaling);
    assert!(
        h.target.sets().is_empty(),
        "nothing acted on the refused stage"
    );

    // The next pass, on the scaler read again, does not ask the hook a second time.
    let r = scaler_pass(
        &h.api,
        &stored(&h.fake),
        &h.hooks,
        &h.target,
        &h.ledger,
        now(),
    )
    .await
    .unwrap();
    assert_eq!(
        r.notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        vec!["PreScaleDone"]
    );
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale]);
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
    assert_eq!(h.target.sets(), vec![1]);
}

#[tokio::test]
async fn conflicts_on_every_pass_give_up_and_look_again_in_a_second() {
    let h = Harness::new(1, idle_at(3), 3);
    h.fake.inject(
        Matcher::patch(STATUS_PATH),
        Fault::Status(409),
        ebb_runtime::execute::frame::MAX_ATTEMPTS,
    );
    let r = h.pass().await.unwrap();
    assert_eq!(
        r.action,
        ebb_runtime::execute::frame::Requeue::After(std::time::Duration::from_secs(1))
    );
    assert_eq!(
        h.fake.write_count(),
        ebb_runtime::execute::frame::MAX_ATTEMPTS,
        "one refused write per pass"
    );
    assert!(r.notes.is_empty());
    assert_eq!(stage(&h.fake), ScalerStage::Idle);
    // The next call gets through.
    h.pass().await.unwrap();
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale]);
}

#[tokio::test]
async fn a_server_error_after_a_hook_answered_is_retried_without_the_hook() {
    let h = Harness::new(1, idle_at(3), 3);
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.fail_next(Matcher::patch(STATUS_PATH), 500)
    });
    let err = h.pass().await.unwrap_err();
    assert_eq!(err.category(), "write_status");
    assert_eq!(stage(&h.fake), ScalerStage::PreScaling);
    assert!(
        h.target.sets().is_empty(),
        "never resized before Scaling is recorded"
    );
    h.pass().await.unwrap();
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale]);
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
    assert_eq!(h.target.sets(), vec![1]);
}

#[tokio::test]
async fn a_lost_write_answer_is_not_acted_on_twice() {
    let h = Harness::new(1, idle_at(3), 3);
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.inject(Matcher::patch(STATUS_PATH), Fault::TimeoutAfterApply, 1)
    });
    assert!(h.pass().await.is_err());
    assert_eq!(
        stage(&h.fake),
        ScalerStage::Scaling,
        "the write took effect"
    );
    h.pass().await.unwrap();
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale]);
    assert_eq!(h.target.sets(), vec![1]);
}

#[tokio::test]
async fn after_a_restart_the_hook_is_asked_again_about_the_same_operation() {
    let h = Harness::new(1, idle_at(3), 3);
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.fail_next(Matcher::patch(STATUS_PATH), 500)
    });
    assert!(h.pass().await.is_err());
    let restarted = HookLedger::new();
    let scaler = stored(&h.fake);
    reconcile_scaler(&h.api, &scaler, &h.hooks, &h.target, &restarted, now())
        .await
        .unwrap();
    let calls = h.hooks.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].1, calls[1].1,
        "same scale event: the hook can tell it is a repeat question"
    );
}

#[tokio::test]
async fn in_progress_is_polled_and_the_stage_holds() {
    let h = Harness::new(1, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Ok(HookOutcome::InProgress));
    let r = h.pass().await.unwrap();
    assert_eq!(stage(&h.fake), ScalerStage::PreScaling);
    assert_eq!(
        r.action,
        ebb_runtime::execute::frame::Requeue::After(std::time::Duration::from_secs(10))
    );
    h.fake.clear_requests();
    h.hooks
        .answer(HookKind::PreScale, Ok(HookOutcome::InProgress));
    h.pass().await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "polling writes nothing");
    h.pass().await.unwrap();
    assert_eq!(h.hooks.kinds(), vec![HookKind::PreScale; 3]);
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
}

#[tokio::test]
async fn a_hook_error_records_failed_before_on_failure_runs() {
    let h = Harness::new(1, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Err(HookError::new("drain failed")));
    let r = h.pass().await.unwrap();
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale, HookKind::OnFailure]
    );
    assert_eq!(
        h.hooks.calls()[1].2,
        ScalerStage::Failed,
        "Failed was stored when on_failure ran"
    );
    let state = stored(&h.fake).status.unwrap().current_state.unwrap();
    assert_eq!(state.failed_in, Some(ScalerStage::PreScaling));
    assert_eq!(state.reason.as_deref(), Some("prescale hook: drain failed"));
    assert_eq!(state.failure_hook, Some(FailureHookState::Done));
    assert!(r.condition.failed);
    assert_eq!(r.condition.reason, "PreScaling");
    assert!(h.target.sets().is_empty());
    // Terminal: further passes do nothing.
    h.fake.clear_requests();
    h.pass().await.unwrap();
    assert_eq!((h.fake.write_count(), h.hooks.kinds().len()), (0, 2));
}

#[tokio::test]
async fn a_conflict_on_the_failed_write_runs_neither_hook_twice() {
    let h = Harness::new(1, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Err(HookError::new("drain failed")));
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.fail_next(Matcher::patch(STATUS_PATH), 409)
    });
    h.pass().await.unwrap();
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale, HookKind::OnFailure]
    );
    assert_eq!(h.hooks.calls()[1].2, ScalerStage::Failed);
}

#[tokio::test]
async fn a_server_error_after_on_failure_answered_does_not_run_it_again() {
    let h = Harness::new(1, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Err(HookError::new("drain failed")));
    // Writes: Idle->PreScaling, ->Failed, then the on_failure result: fail the third.
    h.fake.after_next(Matcher::patch(STATUS_PATH), |f| {
        f.after_next(Matcher::patch(STATUS_PATH), |f| {
            f.fail_next(Matcher::patch(STATUS_PATH), 500)
        });
    });
    assert!(h.pass().await.is_err());
    h.pass().await.unwrap();
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale, HookKind::OnFailure]
    );
    let state = stored(&h.fake).status.unwrap().current_state.unwrap();
    assert_eq!(state.failure_hook, Some(FailureHookState::Done));
}

#[tokio::test]
async fn retry_strips_the_annotation_resets_and_starts_a_new_operation() {
    let h = Harness::new(1, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Err(HookError::new("drain failed")));
    h.pass().await.unwrap();
    let failed_event = stored(&h.fake).status.unwrap().scale_event.unwrap();
    h.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| {
            s.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(RETRY_ANNOTATION.into(), "true".into());
        });
    let r = h.pass().await.unwrap();
    let scaler = stored(&h.fake);
    assert!(
        !scaler
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(RETRY_ANNOTATION),
        "stripped"
    );
    let status = scaler.status.unwrap();
    assert_eq!(
        status.scale_event,
        Some(failed_event + 1),
        "a new operation"
    );
    assert_eq!(status.attempt, Some(1));
    assert!(r.notes.iter().any(|n| n.reason == "Retried"));
    assert_eq!(
        h.hooks.kinds(),
        vec![HookKind::PreScale, HookKind::OnFailure, HookKind::PreScale]
    );
    assert_eq!(stage(&h.fake), ScalerStage::Scaling);
}

#[tokio::test]
async fn a_spec_change_mid_flight_is_held_until_idle() {
    let h = Harness::new(5, idle_at(3), 3);
    h.hooks
        .answer(HookKind::PreScale, Ok(HookOutcome::InProgress));
    h.pass().await.unwrap();
    // The HPA changes its mind while the pre-scale hook runs.
    h.fake
        .modify::<StackableScaler>("data", "nifi-default", |s| s.spec.replicas = 7);
    h.pass().await.unwrap();
    assert_eq!(
        h.target.sets(),
        vec![5],
        "the operation in flight completes toward 5"
    );
    h.target.settle();
    h.pass().await.unwrap();
    // Back in Idle, the held request starts its own operation: 5 -> 7.
    let status = stored(&h.fake).status.unwrap();
    assert_eq!(
        (status.previous_replicas, status.desired_replicas),
        (Some(5), Some(7))
    );
    assert_eq!(h.target.sets(), vec![5, 7]);
    let events: Vec<i64> = h.hooks.calls().into_iter().map(|c| c.1).collect();
    assert_eq!(
        events,
        vec![1, 1, 1, 2],
        "prescale polled, postscale, then the next operation's prescale"
    );
}

#[tokio::test]
async fn a_scale_down_reports_the_removed_ordinals() {
    #[derive(Clone, Default)]
    struct Ordinals(Arc<Mutex<Vec<Vec<i32>>>>);
    impl ScalingHooks for Ordinals {
        async fn pre_scale(&self, ctx: &ScalingContext) -> HookResult {
            self.0
                .lock()
                .unwrap()
                .push(ctx.removed_ordinals().collect());
            Ok(HookOutcome::Done)
        }
    }
    let fake = FakeApi::new();
    seed(&fake, 2, idle_at(5));
    let hooks = Ordinals::default();
    let target = MemoryTarget::at(5);
    let api = Api::namespaced(fake.client(), "data");
    reconcile_scaler(
        &api,
        &stored(&fake),
        &hooks,
        &target,
        &HookLedger::new(),
        now(),
    )
    .await
    .unwrap();
    assert_eq!(hooks.0.lock().unwrap().clone(), vec![vec![2, 3, 4]]);
    assert_eq!(target.sets(), vec![2]);
}
