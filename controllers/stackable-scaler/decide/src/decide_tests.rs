//! Every transition and every hook outcome in every stage, plus properties of whole runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_core::conditions::find_condition;
use proptest::prelude::*;

use super::*;
use crate::hooks::{HookError, ScaleDirection};
use jiff::SignedDuration;

fn now() -> Timestamp {
    ebb_testkit::utc("2026-03-01T12:00:00Z")
}

/// A status in `stage` for an operation `previous -> desired` (event 4).
fn status(stage: ScalerStage, replicas: i32, op: Option<(i32, i32)>) -> StackableScalerStatus {
    StackableScalerStatus {
        replicas,
        previous_replicas: op.map(|o| o.0),
        desired_replicas: op.map(|o| o.1),
        scale_event: Some(4),
        attempt: Some(0),
        current_state: Some(ScalerState {
            stage,
            last_transition_time: Some(to_k8s_time(now() - SignedDuration::from_mins(5))),
            ..ScalerState::default()
        }),
        ..StackableScalerStatus::default()
    }
}

fn failed_status(failed_in: ScalerStage, hook: Option<FailureHookState>) -> StackableScalerStatus {
    let mut s = status(ScalerStage::Failed, 3, Some((3, 1)));
    let state = s.current_state.as_mut().unwrap();
    state.failed_in = Some(failed_in);
    state.reason = Some("prescale hook: drain failed".into());
    state.failure_hook = hook;
    s
}

struct Case {
    spec: i32,
    status: Option<StackableScalerStatus>,
    retry: bool,
    workload: Option<WorkloadState>,
    hook: Option<HookResult>,
    abort: bool,
    timeouts: StageTimeouts,
    at: Timestamp,
}

impl Case {
    fn new(spec: i32, status: StackableScalerStatus) -> Self {
        Self {
            spec,
            status: Some(status),
            retry: false,
            workload: Some(WorkloadState::settled(3)),
            hook: None,
            abort: false,
            timeouts: StageTimeouts::default(),
            at: now(),
        }
    }
    fn workload(mut self, w: Option<WorkloadState>) -> Self {
        self.workload = w;
        self
    }
    fn hook(mut self, h: HookResult) -> Self {
        self.hook = Some(h);
        self
    }
    fn retry(mut self) -> Self {
        self.retry = true;
        self
    }
    fn abort(mut self) -> Self {
        self.abort = true;
        self
    }
    fn timeouts(mut self, t: StageTimeouts) -> Self {
        self.timeouts = t;
        self
    }
    fn at(mut self, at: Timestamp) -> Self {
        self.at = at;
        self
    }
    fn decide(&self) -> Step {
        decide_step(&Input {
            name: "nifi-default",
            namespace: "data",
            generation: Some(2),
            spec_replicas: self.spec,
            status: self.status.as_ref(),
            retry_requested: self.retry,
            abort_requested: self.abort,
            timeouts: self.timeouts,
            workload: self.workload.as_ref(),
            hook: self.hook.as_ref(),
            now: self.at,
        })
    }
}

fn done() -> HookResult {
    Ok(HookOutcome::Done)
}
fn in_progress() -> HookResult {
    Ok(HookOutcome::InProgress)
}
fn error() -> HookResult {
    Err(HookError::new("drain failed"))
}

fn current(plan: &Step) -> &ScalerState {
    plan.status.current_state.as_ref().unwrap()
}

fn condition(plan: &Step, type_: &str) -> (String, String) {
    let c = find_condition(&plan.status.conditions, type_).unwrap();
    (c.status.clone(), c.reason.clone())
}

// --- initialization --------------------------------------------------------------------------

#[test]
fn a_fresh_scaler_is_initialized_from_the_workload_not_from_zero() {
    let case = Case {
        spec: 3,
        status: None,
        retry: false,
        workload: Some(WorkloadState::settled(3)),
        hook: None,
        ..Case::new(3, StackableScalerStatus::default())
    };
    let plan = case.decide();
    assert_eq!(plan.action, Action::Continue);
    assert_eq!(plan.status.replicas, 3);
    assert_eq!(plan.stage(), ScalerStage::Idle);
    assert_eq!(plan.note.as_ref().unwrap().reason, "Initialized");
    // And the next step has nothing to do: no operation from 0 to 3.
    let next = Case::new(3, plan.status).decide();
    assert!(
        matches!(next.action, Action::Wait { after: None, .. }),
        "{next:?}"
    );
}

#[test]
fn a_default_status_with_zero_replicas_counts_as_uninitialized() {
    let case = Case {
        spec: 3,
        status: Some(StackableScalerStatus::default()),
        retry: false,
        workload: Some(WorkloadState::settled(3)),
        hook: None,
        ..Case::new(3, StackableScalerStatus::default())
    };
    let plan = case.decide();
    assert_eq!(plan.status.replicas, 3);
    assert_eq!(plan.stage(), ScalerStage::Idle);
}

#[test]
fn initialization_waits_for_the_workload() {
    let case = Case {
        spec: 3,
        status: None,
        retry: false,
        workload: None,
        hook: None,
        ..Case::new(3, StackableScalerStatus::default())
    };
    let plan = case.decide();
    assert!(matches!(
        plan.action,
        Action::Wait {
            after: Some(MISSING_WORKLOAD_POLL),
            ..
        }
    ));
    assert_eq!(
        plan.status,
        StackableScalerStatus::default(),
        "nothing to write"
    );
}

#[test]
fn initialization_keeps_the_counters() {
    let mut s = StackableScalerStatus {
        scale_event: Some(9),
        attempt: Some(2),
        ..Default::default()
    };
    s.replicas = 0;
    let plan = Case::new(3, s).decide();
    assert_eq!(
        (plan.status.scale_event, plan.status.attempt),
        (Some(9), Some(2))
    );
}

// --- Idle ------------------------------------------------------------------------------------

#[test]
fn idle_in_sync_waits_for_a_change() {
    let plan = Case::new(3, status(ScalerStage::Idle, 3, None)).decide();
    assert!(matches!(plan.action, Action::Wait { after: None, .. }));
    assert_eq!(plan.note, None);
    assert_eq!(
        condition(&plan, CONDITION_READY),
        ("True".into(), "Idle".into())
    );
    assert_eq!(
        condition(&plan, CONDITION_PROGRESSING),
        ("False".into(), "Idle".into())
    );
    assert_eq!(
        condition(&plan, CONDITION_FAILED),
        ("False".into(), "Idle".into())
    );
}

#[test]
fn idle_leaves_when_spec_differs_and_records_the_operation() {
    let plan = Case::new(5, status(ScalerStage::Idle, 3, None)).decide();
    assert_eq!(plan.action, Action::Continue);
    assert_eq!(current(&plan).stage, ScalerStage::PreScaling);
    assert_eq!(
        current(&plan).last_transition_time,
        Some(to_k8s_time(now()))
    );
    assert_eq!(plan.status.previous_replicas, Some(3));
    assert_eq!(plan.status.desired_replicas, Some(5));
    assert_eq!(plan.status.scale_event, Some(5), "a new operation number");
    assert_eq!(
        plan.status.replicas, 3,
        "status.replicas moves only when the workload is stable"
    );
    let note = plan.note.clone().unwrap();
    assert_eq!(
        (note.from, note.to, note.reason),
        (
            Some(ScalerStage::Idle),
            ScalerStage::PreScaling,
            "ScalingStarted"
        )
    );
    assert_eq!(note.message, "scaling up from 3 to 5");
    assert_eq!(
        condition(&Case::new(5, plan.status).decide(), CONDITION_PROGRESSING),
        ("True".into(), "PreScaling".into())
    );
}

#[test]
fn idle_mirrors_the_workload_into_status() {
    let mut w = WorkloadState::settled(4);
    w.selector = Some("app=nifi".into());
    let plan = Case::new(4, status(ScalerStage::Idle, 3, None))
        .workload(Some(w))
        .decide();
    assert_eq!(plan.status.replicas, 4);
    assert_eq!(plan.status.selector.as_deref(), Some("app=nifi"));
    assert!(matches!(plan.action, Action::Wait { after: None, .. }));
}

#[test]
fn idle_undoes_a_change_made_behind_the_scalers_back_through_the_hooks() {
    // Someone scaled the StatefulSet to 6; the HPA still wants 3: a scale-down with hooks.
    let plan = Case::new(3, status(ScalerStage::Idle, 3, None))
        .workload(Some(WorkloadState::settled(6)))
        .decide();
    assert_eq!(current(&plan).stage, ScalerStage::PreScaling);
    assert_eq!(
        (plan.status.previous_replicas, plan.status.desired_replicas),
        (Some(6), Some(3))
    );
}

#[test]
fn idle_without_a_workload_uses_the_recorded_replicas() {
    let plan = Case::new(3, status(ScalerStage::Idle, 3, None))
        .workload(None)
        .decide();
    assert!(matches!(plan.action, Action::Wait { after: None, .. }));
}

#[test]
fn a_hook_answer_in_idle_is_ignored() {
    let plan = Case::new(3, status(ScalerStage::Idle, 3, None))
        .hook(error())
        .decide();
    assert_eq!(plan.stage(), ScalerStage::Idle);
}

// --- PreScaling ------------------------------------------------------------------------------

#[test]
fn pre_scaling_asks_the_pre_scale_hook_with_the_recorded_operation() {
    let plan = Case::new(1, status(ScalerStage::PreScaling, 3, Some((3, 1)))).decide();
    let Action::RunHook { hook, context } = plan.action else {
        panic!("{plan:?}")
    };
    assert_eq!(hook, HookKind::PreScale);
    assert_eq!(context.direction(), ScaleDirection::Down);
    assert_eq!(context.removed_ordinals().collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(
        (context.scale_event, context.attempt, context.failure),
        (4, 0, None)
    );
}

#[test]
fn pre_scaling_done_moves_to_scaling() {
    let plan = Case::new(1, status(ScalerStage::PreScaling, 3, Some((3, 1))))
        .hook(done())
        .decide();
    assert_eq!(plan.action, Action::Continue);
    assert_eq!(current(&plan).stage, ScalerStage::Scaling);
    assert_eq!(plan.note.clone().unwrap().reason, "PreScaleDone");
}

#[test]
fn pre_scaling_in_progress_polls() {
    let before = status(ScalerStage::PreScaling, 3, Some((3, 1)));
    let plan = Case::new(1, before.clone()).hook(in_progress()).decide();
    assert!(matches!(
        plan.action,
        Action::Wait {
            after: Some(HOOK_POLL),
            ..
        }
    ));
    assert_eq!(
        plan.status.current_state, before.current_state,
        "the stage does not move"
    );
}

#[test]
fn pre_scaling_error_fails_with_the_stage_and_reason() {
    let plan = Case::new(1, status(ScalerStage::PreScaling, 3, Some((3, 1))))
        .hook(error())
        .decide();
    assert_eq!(
        plan.action,
        Action::Continue,
        "persist Failed before on_failure runs"
    );
    let state = current(&plan);
    assert_eq!(state.stage, ScalerStage::Failed);
    assert_eq!(state.failed_in, Some(ScalerStage::PreScaling));
    assert_eq!(state.reason.as_deref(), Some("prescale hook: drain failed"));
    assert_eq!(state.failure_hook, Some(FailureHookState::Pending));
    assert!(plan.note.clone().unwrap().warning);
    assert_eq!(
        condition(&plan, CONDITION_FAILED),
        ("True".into(), "PreScaling".into())
    );
    assert_eq!(condition(&plan, CONDITION_READY).0, "False");
    assert_eq!(condition(&plan, CONDITION_PROGRESSING).0, "False");
}

#[test]
fn a_lost_operation_record_fails_instead_of_guessing() {
    let plan = Case::new(1, status(ScalerStage::PreScaling, 3, None)).decide();
    assert_eq!(current(&plan).stage, ScalerStage::Failed);
    let plan = Case::new(1, status(ScalerStage::Scaling, 3, None)).decide();
    assert_eq!(current(&plan).failed_in, Some(ScalerStage::Scaling));
}

// --- Scaling ---------------------------------------------------------------------------------

#[test]
fn scaling_sets_the_workload_replicas() {
    let plan = Case::new(1, status(ScalerStage::Scaling, 3, Some((3, 1)))).decide();
    assert_eq!(plan.action, Action::SetReplicas { to: 1 });
}

#[test]
fn scaling_waits_until_the_workload_is_stable() {
    let mut w = WorkloadState::settled(5);
    w.ready_replicas = 4;
    let plan = Case::new(5, status(ScalerStage::Scaling, 3, Some((3, 5))))
        .workload(Some(w.clone()))
        .decide();
    assert!(
        matches!(
            plan.action,
            Action::Wait {
                after: Some(WORKLOAD_POLL),
                ..
            }
        ),
        "{plan:?}"
    );
    w.ready_replicas = 5;
    w.generation = Some(3);
    w.observed_generation = Some(2);
    let plan = Case::new(5, status(ScalerStage::Scaling, 3, Some((3, 5))))
        .workload(Some(w.clone()))
        .decide();
    assert!(
        matches!(plan.action, Action::Wait { .. }),
        "the workload controller has not seen the change"
    );
    w.observed_generation = Some(3);
    let plan = Case::new(5, status(ScalerStage::Scaling, 3, Some((3, 5))))
        .workload(Some(w))
        .decide();
    assert_eq!(current(&plan).stage, ScalerStage::PostScaling);
    assert_eq!(plan.status.replicas, 5);
}

#[test]
fn scaling_waits_for_a_missing_workload() {
    let plan = Case::new(5, status(ScalerStage::Scaling, 3, Some((3, 5))))
        .workload(None)
        .decide();
    assert!(matches!(
        plan.action,
        Action::Wait {
            after: Some(MISSING_WORKLOAD_POLL),
            ..
        }
    ));
}

#[test]
fn a_hook_answer_in_scaling_is_ignored() {
    for answer in [done(), in_progress(), error()] {
        let plan = Case::new(1, status(ScalerStage::Scaling, 3, Some((3, 1))))
            .hook(answer)
            .decide();
        assert_eq!(plan.action, Action::SetReplicas { to: 1 });
    }
}

// --- PostScaling -----------------------------------------------------------------------------

#[test]
fn post_scaling_asks_the_post_scale_hook() {
    let plan = Case::new(5, status(ScalerStage::PostScaling, 5, Some((3, 5)))).decide();
    let Action::RunHook { hook, context } = plan.action else {
        panic!()
    };
    assert_eq!(hook, HookKind::PostScale);
    assert_eq!(context.added_ordinals().collect::<Vec<_>>(), vec![3, 4]);
}

#[test]
fn post_scaling_done_returns_to_idle_and_clears_the_operation() {
    let plan = Case::new(5, status(ScalerStage::PostScaling, 5, Some((3, 5))))
        .hook(done())
        .decide();
    assert_eq!(current(&plan).stage, ScalerStage::Idle);
    assert_eq!(
        (plan.status.previous_replicas, plan.status.desired_replicas),
        (None, None)
    );
    assert_eq!(plan.status.replicas, 5);
    assert_eq!(plan.note.clone().unwrap().reason, "ScalingDone");
    assert_eq!(condition(&plan, CONDITION_READY).0, "True");
}

#[test]
fn post_scaling_in_progress_polls() {
    let plan = Case::new(5, status(ScalerStage::PostScaling, 5, Some((3, 5))))
        .hook(in_progress())
        .decide();
    assert!(matches!(
        plan.action,
        Action::Wait {
            after: Some(HOOK_POLL),
            ..
        }
    ));
}

#[test]
fn post_scaling_error_fails_in_post_scaling() {
    let plan = Case::new(5, status(ScalerStage::PostScaling, 5, Some((3, 5))))
        .hook(error())
        .decide();
    assert_eq!(current(&plan).failed_in, Some(ScalerStage::PostScaling));
    assert_eq!(
        condition(&plan, CONDITION_FAILED),
        ("True".into(), "PostScaling".into())
    );
}

// --- Failed ----------------------------------------------------------------------------------

#[test]
fn failed_runs_on_failure_with_what_failed() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::PreScaling, Some(FailureHookState::Pending)),
    )
    .decide();
    let Action::RunHook { hook, context } = plan.action else {
        panic!()
    };
    assert_eq!(hook, HookKind::OnFailure);
    let failure = context.failure.unwrap();
    assert_eq!(failure.failed_in, ScalerStage::PreScaling);
    assert_eq!(failure.reason, "prescale hook: drain failed");
}

#[test]
fn on_failure_done_is_recorded_once() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::PreScaling, Some(FailureHookState::Pending)),
    )
    .hook(done())
    .decide();
    assert_eq!(current(&plan).failure_hook, Some(FailureHookState::Done));
    assert_eq!(plan.action, Action::Continue);
    let next = Case::new(1, plan.status).decide();
    assert!(
        matches!(next.action, Action::Wait { after: None, .. }),
        "terminal, no second on_failure"
    );
}

#[test]
fn on_failure_in_progress_polls() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::Scaling, Some(FailureHookState::Pending)),
    )
    .hook(in_progress())
    .decide();
    assert!(matches!(
        plan.action,
        Action::Wait {
            after: Some(HOOK_POLL),
            ..
        }
    ));
}

#[test]
fn on_failure_error_is_recorded_and_the_original_reason_kept() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::PostScaling, Some(FailureHookState::Pending)),
    )
    .hook(error())
    .decide();
    let state = current(&plan);
    assert_eq!(state.failure_hook, Some(FailureHookState::Failed));
    assert_eq!(state.reason.as_deref(), Some("prescale hook: drain failed"));
    assert!(plan.note.clone().unwrap().warning);
}

#[test]
fn failed_is_terminal_without_the_retry_annotation() {
    for spec in [0, 1, 3, 10] {
        let s = failed_status(ScalerStage::PreScaling, Some(FailureHookState::Done));
        let plan = Case::new(spec, s.clone()).decide();
        assert!(matches!(plan.action, Action::Wait { after: None, .. }));
        assert_eq!(plan.status.current_state, s.current_state);
    }
}

#[test]
fn retry_resets_to_idle_clears_the_operation_and_strips_the_annotation() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::PreScaling, Some(FailureHookState::Done)),
    )
    .retry()
    .decide();
    assert_eq!(plan.action, Action::StripRetryAnnotation);
    let state = current(&plan);
    assert_eq!(state.stage, ScalerStage::Idle);
    assert_eq!(
        (state.failed_in, state.reason.as_ref(), state.failure_hook),
        (None, None, None)
    );
    assert_eq!(
        (plan.status.previous_replicas, plan.status.desired_replicas),
        (None, None)
    );
    assert_eq!(plan.status.attempt, Some(1));
    assert_eq!(plan.note.as_ref().unwrap().reason, "Retried");
    // The next pass (annotation gone) starts a fresh operation with a new number.
    let next = Case::new(1, plan.status).decide();
    assert_eq!(next.stage(), ScalerStage::PreScaling);
    assert_eq!(next.status.scale_event, Some(5));
    assert_eq!(next.status.attempt, Some(1));
}

#[test]
fn retry_after_a_failed_on_failure_hook_is_allowed() {
    let plan = Case::new(
        1,
        failed_status(ScalerStage::PreScaling, Some(FailureHookState::Failed)),
    )
    .retry()
    .decide();
    assert_eq!(plan.stage(), ScalerStage::Idle);
}

#[test]
fn retry_waits_for_a_pending_on_failure_hook() {
    let s = failed_status(ScalerStage::PreScaling, Some(FailureHookState::Pending));
    let plan = Case::new(1, s.clone()).retry().decide();
    assert!(matches!(
        plan.action,
        Action::RunHook {
            hook: HookKind::OnFailure,
            ..
        }
    ));
    let plan = Case::new(1, s).retry().hook(in_progress()).decide();
    let Action::Wait { reason, .. } = plan.action else {
        panic!()
    };
    assert!(reason.contains("retry requested"), "{reason}");
}

#[test]
fn a_retry_annotation_outside_failed_is_stripped_and_changes_nothing() {
    for (stage, op) in [
        (ScalerStage::Idle, None),
        (ScalerStage::PreScaling, Some((3, 5))),
        (ScalerStage::Scaling, Some((3, 5))),
        (ScalerStage::PostScaling, Some((3, 5))),
    ] {
        let s = status(stage, 3, op);
        let plan = Case::new(5, s.clone()).retry().decide();
        assert_eq!(plan.action, Action::StripRetryAnnotation, "{stage:?}");
        assert_eq!(plan.status.current_state, s.current_state);
        assert_eq!(plan.note.clone().unwrap().reason, "RetryIgnored");
    }
}

// --- stage deadline --------------------------------------------------------------------------

/// When the stages built by [`status`] were entered.
fn entered() -> Timestamp {
    now() - SignedDuration::from_mins(5)
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

/// A StatefulSet asked for 2 that still has 3 pods, 2 ready, and has not seen its latest spec.
fn lagging_statefulset() -> WorkloadState {
    WorkloadState {
        replicas: 2,
        status_replicas: 3,
        ready_replicas: 2,
        generation: Some(5),
        observed_generation: Some(4),
        selector: None,
        reference: Some("StatefulSet/nifi-node-default".into()),
    }
}

fn spec(stage_timeout: Option<i32>, pre_scale_timeout: Option<i32>) -> StackableScalerSpec {
    let hooks = pre_scale_timeout.map(|t| ebb_crds::stackable::HooksSpec {
        pre_scale: Some(ebb_crds::stackable::HookSpec {
            template: Default::default(),
            timeout_seconds: Some(t),
        }),
        ..Default::default()
    });
    StackableScalerSpec {
        replicas: 2,
        hooks,
        stage_timeout_seconds: stage_timeout,
    }
}

#[test]
fn stage_timeouts_default_to_30_minutes_for_every_active_stage() {
    let t = StageTimeouts::of(&spec(None, None));
    assert_eq!(t, StageTimeouts::default());
    for stage in [
        ScalerStage::PreScaling,
        ScalerStage::Scaling,
        ScalerStage::PostScaling,
    ] {
        assert_eq!(t.limit(stage), Some(Duration::from_secs(1800)), "{stage:?}");
    }
    assert_eq!(t.limit(ScalerStage::Idle), None);
    assert_eq!(t.limit(ScalerStage::Failed), None);
    // A pre-scale Job with the default timeout (600s) fits in the default stage deadline.
    let mut with_hook = spec(None, Some(600));
    with_hook
        .hooks
        .as_mut()
        .unwrap()
        .pre_scale
        .as_mut()
        .unwrap()
        .timeout_seconds = None;
    let t = StageTimeouts::of(&with_hook);
    assert_eq!(t.pre_scale_hook, Some(Duration::from_secs(600)));
    assert_eq!(
        t.limit(ScalerStage::PreScaling),
        Some(Duration::from_secs(1800))
    );
}

#[test]
fn a_hook_stage_never_ends_before_its_hooks_own_timeout() {
    let t = StageTimeouts::of(&spec(Some(600), Some(3600)));
    assert_eq!(
        t.limit(ScalerStage::Scaling),
        Some(Duration::from_secs(600))
    );
    assert_eq!(
        t.limit(ScalerStage::PreScaling),
        Some(Duration::from_secs(3660)),
        "the hook's timeout plus a minute of grace"
    );
    assert_eq!(
        t.limit(ScalerStage::PostScaling),
        Some(Duration::from_secs(600)),
        "no post-scale template"
    );
    let s = status(ScalerStage::PreScaling, 3, Some((3, 2)));
    let still = Case::new(2, s.clone())
        .timeouts(t)
        .hook(in_progress())
        .at(entered() + secs(3659))
        .decide();
    assert!(
        matches!(still.action, Action::Wait { after: Some(d), .. } if d == Duration::from_secs(1)),
        "{still:?}"
    );
    let over = Case::new(2, s)
        .timeouts(t)
        .hook(in_progress())
        .at(entered() + secs(3660))
        .decide();
    assert_eq!(over.stage(), ScalerStage::Failed);
    assert_eq!(
        current(&over).reason.as_deref(),
        Some("prescale hook not done after 61m (stage deadline): it still answered InProgress")
    );
}

#[test]
fn scaling_fails_at_the_default_deadline_naming_what_it_waited_for() {
    let s = status(ScalerStage::Scaling, 3, Some((3, 2)));
    let case = |at| {
        Case::new(2, s.clone())
            .workload(Some(lagging_statefulset()))
            .at(at)
            .decide()
    };
    // Just before: waits, and looks again exactly at the deadline.
    let before = case(entered() + secs(1799));
    assert_eq!(before.stage(), ScalerStage::Scaling);
    assert!(
        matches!(before.action, Action::Wait { after: Some(d), .. } if d == Duration::from_secs(1)),
        "{before:?}"
    );
    // At and after: Failed, the reason names the workload and the numbers it waited for.
    for at in [entered() + secs(1800), entered() + secs(7200)] {
        let plan = case(at);
        let state = current(&plan);
        assert_eq!(state.stage, ScalerStage::Failed, "{at}");
        assert_eq!(state.failed_in, Some(ScalerStage::Scaling));
        assert_eq!(
            state.reason.as_deref(),
            Some(
                "workload StatefulSet/nifi-node-default not stable at 2 replicas after 30m: \
                 replicas 3, ready 2, observedGeneration 4 < generation 5"
            )
        );
        assert_eq!(state.failure_hook, Some(FailureHookState::Pending));
        assert_eq!(state.last_transition_time, Some(to_k8s_time(at)));
        assert_eq!(plan.action, Action::Continue, "then onFailure runs");
        let note = plan.note.clone().unwrap();
        assert_eq!((note.reason, note.warning), ("ScalingFailed", true));
        assert_eq!(
            condition(&plan, CONDITION_FAILED),
            ("True".into(), "Scaling".into())
        );
        assert_eq!(
            condition(&plan, CONDITION_PROGRESSING),
            ("False".into(), "Failed".into())
        );
    }
}

#[test]
fn a_custom_stage_timeout_moves_the_deadline() {
    let t = StageTimeouts::of(&spec(Some(600), None));
    let s = status(ScalerStage::Scaling, 3, Some((3, 2)));
    let case = |at| {
        Case::new(2, s.clone())
            .timeouts(t)
            .workload(Some(lagging_statefulset()))
            .at(at)
            .decide()
    };
    assert_eq!(case(entered() + secs(599)).stage(), ScalerStage::Scaling);
    let plan = case(entered() + secs(600));
    assert_eq!(plan.stage(), ScalerStage::Failed);
    assert!(
        current(&plan)
            .reason
            .as_deref()
            .unwrap()
            .contains("after 10m:"),
        "{plan:?}"
    );
    // The default deadline would still be 20 minutes away.
    assert_eq!(
        Case::new(2, s.clone())
            .workload(Some(lagging_statefulset()))
            .at(entered() + secs(600))
            .decide()
            .stage(),
        ScalerStage::Scaling
    );
}

#[test]
fn a_workload_that_converged_at_the_deadline_moves_on() {
    let plan = Case::new(2, status(ScalerStage::Scaling, 3, Some((3, 2))))
        .workload(Some(WorkloadState::settled(2)))
        .at(entered() + secs(1800))
        .decide();
    assert_eq!(plan.stage(), ScalerStage::PostScaling);
}

#[test]
fn a_workload_whose_replicas_were_never_set_fails_at_the_deadline() {
    let plan = Case::new(2, status(ScalerStage::Scaling, 3, Some((3, 2))))
        .workload(Some(WorkloadState::settled(3)))
        .at(entered() + secs(1800))
        .decide();
    assert_eq!(
        current(&plan).reason.as_deref(),
        Some(
            "the workload not stable at 2 replicas after 30m: spec.replicas 3, replicas 3, ready 3"
        )
    );
}

#[test]
fn a_missing_workload_fails_at_the_deadline() {
    let s = status(ScalerStage::Scaling, 3, Some((3, 2)));
    let before = Case::new(2, s.clone())
        .workload(None)
        .at(entered() + secs(1790))
        .decide();
    assert!(
        matches!(before.action, Action::Wait { after: Some(d), .. } if d == Duration::from_secs(10)),
        "{before:?}"
    );
    let plan = Case::new(2, s)
        .workload(None)
        .at(entered() + secs(1800))
        .decide();
    assert_eq!(
        current(&plan).reason.as_deref(),
        Some(
            "workload not observed within 30m (stage deadline): it was to be scaled to 2 replicas"
        )
    );
}

#[test]
fn the_deadline_caps_every_poll_of_an_active_stage() {
    let at = entered() + secs(1797);
    let three = Duration::from_secs(3);
    for (stage, hook) in [
        (ScalerStage::PreScaling, Some(in_progress())),
        (ScalerStage::Scaling, None),
        (ScalerStage::PostScaling, Some(in_progress())),
    ] {
        let mut case = Case::new(2, status(stage, 3, Some((3, 2))))
            .workload(Some(lagging_statefulset()))
            .at(at);
        case.hook = hook;
        let plan = case.decide();
        assert!(
            matches!(plan.action, Action::Wait { after: Some(d), .. } if d == three),
            "{stage:?}: {plan:?}"
        );
    }
    // Far from the deadline the usual polls stay.
    let plan = Case::new(2, status(ScalerStage::PreScaling, 3, Some((3, 2))))
        .hook(in_progress())
        .decide();
    assert!(matches!(plan.action, Action::Wait { after: Some(d), .. } if d == HOOK_POLL));
}

#[test]
fn hook_stages_fail_at_the_deadline_only_while_the_hook_still_runs() {
    for (stage, name) in [
        (ScalerStage::PreScaling, "prescale"),
        (ScalerStage::PostScaling, "postscale"),
    ] {
        let s = status(stage, 3, Some((3, 2)));
        let at = entered() + secs(1800);
        // The hook is asked first, even past the deadline.
        let ask = Case::new(2, s.clone()).at(at).decide();
        assert!(matches!(ask.action, Action::RunHook { .. }), "{ask:?}");
        // Its own answer wins: Done moves on, an error is reported as the hook's.
        let done_plan = Case::new(2, s.clone()).hook(done()).at(at).decide();
        assert_ne!(done_plan.stage(), ScalerStage::Failed, "{stage:?}");
        let err = Case::new(2, s.clone()).hook(error()).at(at).decide();
        assert_eq!(
            current(&err).reason.as_deref(),
            Some(format!("{name} hook: drain failed").as_str())
        );
        // Still running at the deadline: Failed.
        let plan = Case::new(2, s.clone()).hook(in_progress()).at(at).decide();
        assert_eq!(current(&plan).failed_in, Some(stage));
        assert_eq!(
            current(&plan).reason.as_deref(),
            Some(
                format!(
                    "{name} hook not done after 30m (stage deadline): it still answered InProgress"
                )
                .as_str()
            )
        );
        // A second before: still waiting.
        let before = Case::new(2, s)
            .hook(in_progress())
            .at(at - secs(1))
            .decide();
        assert_eq!(before.stage(), stage);
    }
}

#[test]
fn an_active_stage_without_an_entry_time_starts_its_clock() {
    let mut s = status(ScalerStage::Scaling, 3, Some((3, 2)));
    s.current_state.as_mut().unwrap().last_transition_time = None;
    let plan = Case::new(2, s)
        .workload(Some(lagging_statefulset()))
        .at(now() + SignedDuration::from_hours(24))
        .decide();
    assert_eq!(plan.stage(), ScalerStage::Scaling);
    assert_eq!(
        current(&plan).last_transition_time,
        Some(to_k8s_time(now() + SignedDuration::from_hours(24)))
    );
    assert_eq!(plan.action, Action::Continue);
}

#[test]
fn a_timed_out_operation_is_retried_like_any_failure() {
    let failed = Case::new(2, status(ScalerStage::Scaling, 3, Some((3, 2))))
        .workload(Some(lagging_statefulset()))
        .at(entered() + secs(1800))
        .decide()
        .status;
    // onFailure (none configured: Done) is recorded, then the retry resets to Idle.
    let recorded = Case::new(2, failed).hook(done()).decide().status;
    let plan = Case::new(2, recorded).retry().decide();
    assert_eq!(plan.stage(), ScalerStage::Idle);
    assert_eq!(plan.action, Action::StripRetryAnnotation);
    assert_eq!(plan.status.desired_replicas, None);
}

// --- abort annotation ------------------------------------------------------------------------

#[test]
fn abort_fails_every_active_stage_and_strips_the_annotation() {
    for stage in [
        ScalerStage::PreScaling,
        ScalerStage::Scaling,
        ScalerStage::PostScaling,
    ] {
        let s = status(stage, 3, Some((3, 2)));
        // Whatever the hook said in this pass, the abort wins.
        let plan = Case::new(2, s).hook(in_progress()).abort().decide();
        let state = current(&plan);
        assert_eq!(state.stage, ScalerStage::Failed, "{stage:?}");
        assert_eq!(state.failed_in, Some(stage));
        assert_eq!(
            state.reason.as_deref(),
            Some("aborted by annotation autoscaling.stackable.tech/abort")
        );
        assert_eq!(state.failure_hook, Some(FailureHookState::Pending));
        assert_eq!(plan.action, Action::StripAbortAnnotation);
        let note = plan.note.clone().unwrap();
        assert_eq!(
            (note.from, note.to, note.reason, note.warning),
            (Some(stage), ScalerStage::Failed, "ScalingAborted", true)
        );
        assert_eq!(
            condition(&plan, CONDITION_FAILED),
            ("True".into(), stage.as_str().into())
        );
        // The annotation gone, the failure runs its course: onFailure is asked once.
        let next = Case::new(2, plan.status).decide();
        assert!(
            matches!(
                next.action,
                Action::RunHook {
                    hook: HookKind::OnFailure,
                    ..
                }
            ),
            "{next:?}"
        );
    }
}

#[test]
fn abort_outside_an_active_stage_is_stripped_and_changes_nothing() {
    for s in [
        status(ScalerStage::Idle, 3, None),
        failed_status(ScalerStage::Scaling, Some(FailureHookState::Done)),
        failed_status(ScalerStage::Scaling, Some(FailureHookState::Pending)),
    ] {
        let stage = s.current_state.as_ref().unwrap().stage;
        let plan = Case::new(5, s.clone()).abort().decide();
        assert_eq!(plan.action, Action::StripAbortAnnotation, "{stage:?}");
        assert_eq!(plan.status.current_state, s.current_state);
        assert_eq!(plan.note.clone().unwrap().reason, "AbortIgnored");
    }
    // A scaler without status yet: ignored too (nothing to abort).
    let plan = Case {
        status: None,
        ..Case::new(3, StackableScalerStatus::default())
    }
    .abort()
    .decide();
    assert_eq!(plan.action, Action::StripAbortAnnotation);
    assert!(plan.status.current_state.is_none());
}

// --- mid-flight changes ----------------------------------------------------------------------

#[test]
fn a_scale_request_arriving_mid_flight_is_held_until_idle() {
    // The operation 3 -> 5 is in flight; the HPA now asks for 7.
    let mut s = status(ScalerStage::PreScaling, 3, Some((3, 5)));
    let plan = Case::new(7, s.clone()).decide();
    let Action::RunHook { context, .. } = plan.action else {
        panic!()
    };
    assert_eq!(context.desired_replicas, 5);
    s = Case::new(7, s).hook(done()).decide().status;
    let plan = Case::new(7, s.clone()).decide();
    assert_eq!(plan.action, Action::SetReplicas { to: 5 });
    let plan = Case::new(7, s)
        .workload(Some(WorkloadState::settled(5)))
        .decide();
    assert_eq!(plan.stage(), ScalerStage::PostScaling);
    let s = Case::new(7, plan.status).hook(done()).decide().status;
    assert_eq!(s.replicas, 5);
    // Only now, in Idle, does the held request start its own operation.
    let plan = Case::new(7, s)
        .workload(Some(WorkloadState::settled(5)))
        .decide();
    assert_eq!(plan.stage(), ScalerStage::PreScaling);
    assert_eq!(
        (plan.status.previous_replicas, plan.status.desired_replicas),
        (Some(5), Some(7))
    );
}

#[test]
fn conditions_mirror_every_stage() {
    for (stage, ready, progressing, failed) in [
        (ScalerStage::Idle, "True", "False", "False"),
        (ScalerStage::PreScaling, "False", "True", "False"),
        (ScalerStage::Scaling, "False", "True", "False"),
        (ScalerStage::PostScaling, "False", "True", "False"),
        (ScalerStage::Failed, "False", "False", "True"),
    ] {
        let s = if stage == ScalerStage::Failed {
            failed_status(ScalerStage::Scaling, Some(FailureHookState::Done))
        } else {
            status(stage, 3, Some((3, 5)))
        };
        let updates = stage_conditions(&s, Some(2));
        let got: Vec<(&str, bool)> = updates
            .iter()
            .map(|u| (u.type_.as_str(), u.status))
            .collect();
        assert_eq!(
            got,
            vec![
                (CONDITION_READY, ready == "True"),
                (CONDITION_PROGRESSING, progressing == "True"),
                (CONDITION_FAILED, failed == "True")
            ],
            "{stage:?}"
        );
        assert_eq!(
            updates[1].status,
            stage.is_active(),
            "Progressing is is_active()"
        );
        assert!(updates.iter().all(|u| u.observed_generation == Some(2)));
    }
}

#[test]
fn a_steady_state_plan_equals_its_input_so_nothing_is_written() {
    let first = Case::new(3, status(ScalerStage::Idle, 3, None)).decide();
    let again = Case::new(3, first.status.clone()).decide();
    assert_eq!(again.status, first.status);
}

#[test]
fn a_very_long_failure_reason_is_bounded() {
    let long = "x".repeat(10_000);
    let plan = Case::new(1, status(ScalerStage::PreScaling, 3, Some((3, 1))))
        .hook(Err(HookError::new(long)))
        .decide();
    assert!(current(&plan).reason.as_ref().unwrap().len() <= 4096);
}

// --- properties of whole runs ----------------------------------------------------------------

#[derive(Clone, Debug)]
enum Event {
    SpecChange(i32),
    Answer(u8),
    Stabilize,
    Retry,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (0..8i32).prop_map(Event::SpecChange),
        (0..3u8).prop_map(Event::Answer),
        Just(Event::Stabilize),
        Just(Event::Retry),
    ]
}

/// Drives `decide` like the reconciler does, recording every call it makes.
#[derive(Default)]
struct World {
    spec: i32,
    status: Option<StackableScalerStatus>,
    workload: WorkloadState,
    retry: bool,
    /// (event, hook, answer index)
    calls: Vec<(i64, HookKind, u8)>,
    /// (event, to)
    set_replicas: Vec<(i64, i32)>,
}

impl World {
    fn run(&mut self, answer: u8) {
        let mut hook: Option<HookResult> = None;
        for _ in 0..20 {
            let plan = decide_step(&Input {
                name: "s",
                namespace: "ns",
                generation: Some(1),
                spec_replicas: self.spec,
                status: self.status.as_ref(),
                retry_requested: self.retry,
                abort_requested: false,
                timeouts: StageTimeouts::default(),
                workload: Some(&self.workload),
                hook: hook.as_ref(),
                now: now(),
            });
            let event = plan.status.scale_event.unwrap_or(0);
            // Invariant: an active stage always works toward the recorded desired replicas,
            // which were recorded from a spec the user gave (never invented).
            if plan.stage().is_active() {
                assert!(
                    plan.status.desired_replicas.is_some()
                        && plan.status.previous_replicas.is_some()
                );
            }
            self.status = Some(plan.status);
            hook = None;
            match plan.action {
                Action::Continue => {}
                Action::StripRetryAnnotation => self.retry = false,
                Action::StripAbortAnnotation => {}
                Action::RunHook {
                    hook: kind,
                    context,
                } => {
                    assert_eq!(context.scale_event, event);
                    self.calls.push((event, kind, answer));
                    hook = Some(match answer {
                        0 => Ok(HookOutcome::Done),
                        1 => Ok(HookOutcome::InProgress),
                        _ => Err(HookError::new("boom")),
                    });
                }
                Action::SetReplicas { to } => {
                    self.set_replicas.push((event, to));
                    self.workload.replicas = to;
                    return;
                }
                Action::Wait { .. } => return,
            }
        }
        panic!("decide did not settle within 20 steps");
    }
}

proptest! {
    /// Hooks are never skipped: the workload is only resized for an operation whose pre-scale hook
    /// answered Done, only to that operation's recorded target, and post-scale only runs after.
    #[test]
    fn hooks_are_never_skipped_and_replicas_only_move_to_the_recorded_target(
        start in 1..6i32,
        events in proptest::collection::vec(event(), 1..60),
    ) {
        let mut world = World { spec: start, workload: WorkloadState::settled(start), ..Default::default() };
        world.run(0);
        let mut answer = 0;
        let mut desired_of_event = std::collections::HashMap::new();
        for e in events {
            match e {
                Event::SpecChange(n) => world.spec = n,
                Event::Answer(a) => answer = a,
                Event::Stabilize => world.workload = WorkloadState { selector: None, ..WorkloadState::settled(world.workload.replicas) },
                Event::Retry => world.retry = true,
            }
            world.run(answer);
            if let Some(s) = &world.status
                && let (Some(d), Some(ev)) = (s.desired_replicas, s.scale_event)
            {
                let recorded = *desired_of_event.entry(ev).or_insert(d);
                prop_assert_eq!(recorded, d, "the target of an operation never changes");
            }
        }
        for (event, to) in &world.set_replicas {
            let pre_done = world.calls.iter().any(|(e, k, a)| e == event && *k == HookKind::PreScale && *a == 0);
            prop_assert!(pre_done, "event {} resized without a Done pre-scale hook", event);
            prop_assert_eq!(Some(to), desired_of_event.get(event));
        }
        for (i, (event, kind, _)) in world.calls.iter().enumerate() {
            if *kind == HookKind::PostScale {
                let pre_done_before = world.calls[..i].iter().any(|(e, k, a)| e == event && *k == HookKind::PreScale && *a == 0);
                prop_assert!(pre_done_before, "event {} asked post-scale before pre-scale was done", event);
            }
        }
    }

    /// A fresh scaler never scales to zero: initialization takes the workload's replicas.
    #[test]
    fn a_fresh_scaler_never_scales_to_zero(replicas in 1..100i32) {
        let mut world = World { spec: replicas, workload: WorkloadState::settled(replicas), ..Default::default() };
        world.run(0);
        prop_assert!(world.set_replicas.is_empty());
        prop_assert!(world.calls.is_empty());
        prop_assert_eq!(world.status.map(|s| s.replicas), Some(replicas));
    }

    /// Failed is terminal: without the retry annotation no input moves it, nothing is resized and
    /// no hook runs again once on_failure finished.
    #[test]
    fn failed_is_terminal_without_retry(specs in proptest::collection::vec(0..8i32, 1..10), answer in 0..3u8) {
        let mut world = World {
            spec: 3,
            status: Some(failed_status(ScalerStage::PreScaling, Some(FailureHookState::Done))),
            workload: WorkloadState::settled(3),
            ..Default::default()
        };
        for spec in specs {
            world.spec = spec;
            world.run(answer);
        }
        prop_assert!(world.calls.is_empty() && world.set_replicas.is_empty());
        prop_assert_eq!(stage_of(world.status.as_ref()), ScalerStage::Failed);
    }

    /// on_failure runs until it answers, then never again for that failure.
    #[test]
    fn on_failure_is_never_repeated_after_it_answered(answers in proptest::collection::vec(0..3u8, 1..10)) {
        let mut world = World {
            spec: 1,
            status: Some(failed_status(ScalerStage::PreScaling, Some(FailureHookState::Pending))),
            workload: WorkloadState::settled(3),
            ..Default::default()
        };
        for a in answers {
            world.run(a);
        }
        let finished = world.calls.iter().position(|(_, _, a)| *a != 1);
        if let Some(i) = finished {
            prop_assert_eq!(i + 1, world.calls.len(), "called again after it answered");
        }
    }
}
