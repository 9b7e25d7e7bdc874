//! Job names, Job contents, outcomes, and the tracker against the in-memory API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use ebb_crds::stackable::StackableScalerSpec;
use ebb_runtime::time::to_k8s_time;
use ebb_testkit::{FakeApi, Matcher};
use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
use proptest::prelude::*;
use serde_json::json;

use super::*;
use jiff::SignedDuration;

fn now() -> Timestamp {
    ebb_testkit::utc("2025-01-01T00:00:00Z")
}

fn scaler() -> StackableScaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1",
        "kind": "StackableScaler",
        "metadata": {"name": "nifi-default", "namespace": "data", "uid": "uid-1"},
        "spec": {"replicas": 1, "hooks": {"preScale": {"timeoutSeconds": 900, "template": {
            "metadata": {"labels": {"team": "data"}},
            "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 5, "template": {"spec": {
                "restartPolicy": "Never",
                "initContainers": [{"name": "init", "image": "busybox"}],
                "containers": [{"name": "offload", "image": "tools:1", "env": [{"name": "EBB_DESIRED_REPLICAS", "value": "stale"}, {"name": "KEEP", "value": "1"}]}]
            }}}
        }}}}
    }))
    .unwrap()
}

fn ctx(previous: i32, desired: i32) -> ScalingContext {
    ScalingContext {
        scaler_name: "nifi-default".into(),
        namespace: "data".into(),
        previous_replicas: previous,
        desired_replicas: desired,
        scale_event: 7,
        attempt: 0,
        failure: None,
        starts: true,
    }
}

fn pre_scale_spec() -> HookSpec {
    scaler().spec.hooks.unwrap().pre_scale.unwrap()
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric()
}

#[test]
fn a_short_name_is_readable() {
    assert_eq!(
        job_name("nifi-default", HookKind::PreScale, 7, 0),
        "nifi-default-prescale-7-0"
    );
    assert_eq!(
        job_name("nifi-default", HookKind::OnFailure, 7, 2),
        "nifi-default-onfailure-7-2"
    );
}

#[test]
fn a_long_name_is_shortened_with_a_hash() {
    let long = "a".repeat(70);
    let name = job_name(&long, HookKind::PostScale, 123, 1);
    assert!(is_dns_label(&name), "{name}");
    assert!(name.ends_with("-postscale-123-1"), "{name}");
    assert_ne!(
        name,
        job_name(&format!("{long}b"), HookKind::PostScale, 123, 1)
    );
}

#[test]
fn names_with_dots_are_made_dns_labels_without_colliding() {
    let dotted = job_name("nifi.default", HookKind::PreScale, 1, 0);
    let dashed = job_name("nifi-default", HookKind::PreScale, 1, 0);
    assert!(is_dns_label(&dotted), "{dotted}");
    assert_ne!(dotted, dashed);
}

#[test]
fn successive_scale_events_never_share_a_job_name() {
    let mut seen = HashSet::new();
    for scaler in ["x", "nifi-default", &"n".repeat(253)] {
        for event in 0..50 {
            for attempt in 0..3 {
                for hook in [HookKind::PreScale, HookKind::PostScale, HookKind::OnFailure] {
                    assert!(seen.insert(job_name(scaler, hook, event, attempt)));
                }
            }
        }
    }
}

proptest! {
    /// Every Job name is a DNS label of at most 63 characters and keeps the hook, event and
    /// attempt whole, so names of two operations of one scaler differ.
    #[test]
    fn job_names_are_dns_labels_and_unique_per_operation(
        scaler in "[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?",
        event in 0..i64::MAX,
        attempt in 0..i64::MAX,
        other_event in 0..i64::MAX,
    ) {
        let name = job_name(&scaler, HookKind::OnFailure, event, attempt);
        prop_assert!(is_dns_label(&name), "{}", name);
        let suffix = format!("-onfailure-{event}-{attempt}");
        prop_assert!(name.ends_with(&suffix));
        if other_event != event {
            prop_assert_ne!(name, job_name(&scaler, HookKind::OnFailure, other_event, attempt));
        }
    }
}

#[test]
fn the_job_carries_env_owner_labels_and_deadline() {
    let job = build_job(&scaler(), &pre_scale_spec(), HookKind::PreScale, &ctx(5, 2)).unwrap();
    assert_eq!(
        job.metadata.name.as_deref(),
        Some("nifi-default-prescale-7-0")
    );
    assert_eq!(job.metadata.namespace.as_deref(), Some("data"));
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("StackableScaler", "uid-1", Some(true))
    );
    let labels = job.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["team"], "data");
    assert_eq!(labels[LABEL_SCALER_UID], "uid-1");
    assert_eq!(labels[LABEL_SCALE_EVENT], "7");
    assert_eq!(labels[LABEL_HOOK], "prescale");
    let spec = job.spec.unwrap();
    assert_eq!(spec.active_deadline_seconds, Some(900));
    assert_eq!(
        spec.ttl_seconds_after_finished, None,
        "the tracker cleans up, not the TTL controller"
    );
    let pod = spec.template.spec.unwrap();
    let env: Vec<(String, String)> = pod.containers[0]
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.value.unwrap_or_default()))
        .collect();
    let get = |k: &str| {
        env.iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(get("EBB_SCALE_DIRECTION"), vec!["Down"]);
    assert_eq!(get("EBB_PREVIOUS_REPLICAS"), vec!["5"]);
    assert_eq!(
        get("EBB_DESIRED_REPLICAS"),
        vec!["2"],
        "ours replace a template's value"
    );
    assert_eq!(get("EBB_REMOVED_ORDINALS"), vec!["2,3,4"]);
    assert_eq!(get("EBB_ADDED_ORDINALS"), vec![""]);
    assert_eq!(get("KEEP"), vec!["1"]);
    assert!(
        pod.init_containers.unwrap()[0]
            .env
            .as_ref()
            .unwrap()
            .iter()
            .any(|e| e.name == "EBB_SCALE_DIRECTION")
    );
}

#[test]
fn the_default_deadline_is_600_seconds_and_a_shorter_template_deadline_wins() {
    let mut spec = pre_scale_spec();
    spec.timeout_seconds = None;
    let job = build_job(&scaler(), &spec, HookKind::PreScale, &ctx(1, 2)).unwrap();
    assert_eq!(job.spec.unwrap().active_deadline_seconds, Some(600));
    spec.template.spec.as_mut().unwrap().active_deadline_seconds = Some(30);
    let job = build_job(&scaler(), &spec, HookKind::PreScale, &ctx(1, 2)).unwrap();
    assert_eq!(job.spec.unwrap().active_deadline_seconds, Some(30));
}

#[test]
fn a_pod_template_without_restart_policy_gets_never_and_a_set_one_is_kept() {
    // kube-apiserver answers 422 to a Job whose pod template would restart Always (the pod
    // default); the end-to-end suite creates hooks from such a template.
    let pod_spec = |job: Job| job.spec.unwrap().template.spec.unwrap();
    let mut spec = pre_scale_spec();
    let pod = spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap();
    pod.restart_policy = None;
    let job = build_job(&scaler(), &spec, HookKind::PreScale, &ctx(1, 2)).unwrap();
    assert_eq!(pod_spec(job).restart_policy.as_deref(), Some("Never"));
    let pod = spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap();
    pod.restart_policy = Some("OnFailure".into());
    let job = build_job(&scaler(), &spec, HookKind::PreScale, &ctx(1, 2)).unwrap();
    assert_eq!(pod_spec(job).restart_policy.as_deref(), Some("OnFailure"));
}

#[test]
fn on_failure_jobs_learn_what_failed() {
    let mut c = ctx(3, 1);
    c.failure = Some(crate::hooks::FailureInfo {
        failed_in: ebb_crds::stackable::ScalerStage::PreScaling,
        reason: "boom".into(),
    });
    let env = hook_env(&c);
    assert!(
        env.iter()
            .any(|e| e.name == "EBB_FAILED_STAGE" && e.value.as_deref() == Some("PreScaling"))
    );
    assert!(
        env.iter()
            .any(|e| e.name == "EBB_FAILURE_REASON" && e.value.as_deref() == Some("boom"))
    );
}

fn job_with(condition: Option<(&str, &str, &str)>, created: Timestamp) -> Job {
    let mut job = build_job(&scaler(), &pre_scale_spec(), HookKind::PreScale, &ctx(5, 2)).unwrap();
    job.metadata.creation_timestamp = Some(to_k8s_time(created));
    job.status = Some(JobStatus {
        conditions: condition.map(|(type_, reason, message)| {
            vec![JobCondition {
                type_: type_.into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some(message.into()),
                ..JobCondition::default()
            }]
        }),
        ..JobStatus::default()
    });
    job
}

#[test]
fn job_outcomes() {
    let running = job_with(None, now());
    assert_eq!(
        job_outcome(&running, 600, now()),
        Ok(HookOutcome::InProgress)
    );
    let complete = job_with(Some(("Complete", "", "")), now());
    assert_eq!(job_outcome(&complete, 600, now()), Ok(HookOutcome::Done));
    let failed = job_with(
        Some((
            "Failed",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )),
        now(),
    );
    let err = job_outcome(&failed, 600, now()).unwrap_err().message;
    assert_eq!(
        err,
        "Job nifi-default-prescale-7-0 failed (BackoffLimitExceeded: Job has reached the specified backoff limit); \
         see `kubectl logs -n data job/nifi-default-prescale-7-0`"
    );
    let late = job_with(None, now() - SignedDuration::from_secs(601));
    let err = job_outcome(&late, 600, now()).unwrap_err().message;
    assert!(
        err.contains("did not finish within its deadline of 600s"),
        "{err}"
    );
    assert!(
        err.contains("kubectl logs -n data job/nifi-default-prescale-7-0"),
        "{err}"
    );
}

// --- against the in-memory API ---------------------------------------------------------------

fn tracker(fake: &FakeApi) -> JobTracker {
    JobTracker::new(
        Api::namespaced(fake.client(), "data"),
        HookAccounts::default(),
    )
}

#[tokio::test]
async fn the_tracker_starts_once_then_adopts_and_reports() {
    let fake = FakeApi::new();
    let t = tracker(&fake);
    let s = scaler();
    let spec = pre_scale_spec();
    let c = ctx(5, 2);
    assert_eq!(
        t.run(&s, &spec, HookKind::PreScale, &c, now()).await,
        Ok(HookOutcome::InProgress)
    );
    assert_eq!(
        t.run(&s, &spec, HookKind::PreScale, &c, now()).await,
        Ok(HookOutcome::InProgress)
    );
    assert_eq!(
        fake.writes_matching(&Matcher::post("/jobs")).len(),
        1,
        "adopted, not recreated"
    );
    fake.modify::<Job>("data", "nifi-default-prescale-7-0", |job| {
        job.status = Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: "Complete".into(),
                status: "True".into(),
                ..JobCondition::default()
            }]),
            ..JobStatus::default()
        });
    });
    assert_eq!(
        t.run(&s, &spec, HookKind::PreScale, &c, now()).await,
        Ok(HookOutcome::Done)
    );
    assert_eq!(fake.write_count(), 1);
}

/// The ask that starts a hook settles unclear answers itself: a failed read does not hold the
/// create back, and a create refused (503) is sent again within the ask, so the Job exists once
/// when it answers.
#[tokio::test]
async fn the_starting_ask_settles_unclear_answers_itself() {
    let (s, spec, c) = (scaler(), pre_scale_spec(), ctx(5, 2));
    let fake = FakeApi::new();
    let t = tracker(&fake);
    fake.fail_next(Matcher::get("/jobs/"), 500);
    let ask = || t.run(&s, &spec, HookKind::PreScale, &c, now());
    assert_eq!(ask().await, Ok(HookOutcome::InProgress));
    assert_eq!(fake.list::<Job>().len(), 1);

    let fake = FakeApi::new();
    let t = tracker(&fake);
    fake.fail_next(Matcher::post("/jobs"), 503);
    let ask = || t.run(&s, &spec, HookKind::PreScale, &c, now());
    assert_eq!(ask().await, Ok(HookOutcome::InProgress));
    assert_eq!(fake.list::<Job>().len(), 1, "sent again within the ask");
    let posts = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 2);
    // A later ask (not the starting one) with a transient read error keeps it in progress.
    fake.fail_next(Matcher::get("/jobs/"), 500);
    let later = ScalingContext {
        starts: false,
        ..ctx(5, 2)
    };
    assert_eq!(
        t.run(&s, &spec, HookKind::PreScale, &later, now()).await,
        Ok(HookOutcome::InProgress)
    );
}

/// A later ask finds no Job for a start recorded in status: within the grace the replica that
/// recorded it may still create it, so it waits; past it the Job was lost (it may have run), and
/// the hook fails naming it. It never creates the Job. A scaler read before the record (a stale
/// copy) waits too.
#[tokio::test]
async fn a_missing_job_of_a_recorded_start_is_waited_for_then_lost() {
    let fake = FakeApi::new();
    let t = tracker(&fake);
    let mut recorded = scaler();
    recorded.status = Some(ebb_crds::stackable::StackableScalerStatus {
        started_hook: Some(ebb_crds::stackable::StartedHook {
            hook: "prescale".into(),
            scale_event: 7,
            attempt: 0,
            job: Some("nifi-default-prescale-7-0".into()),
            at: Some(to_k8s_time(now())),
        }),
        ..Default::default()
    });
    let later = ScalingContext {
        starts: false,
        ..ctx(5, 2)
    };
    let at = |seconds: i64| now() + SignedDuration::from_secs(seconds);
    let spec = pre_scale_spec();
    let stale = scaler();
    let ask = |s, when| t.run(s, &spec, HookKind::PreScale, &later, when);
    assert_eq!(ask(&recorded, at(29)).await, Ok(HookOutcome::InProgress));
    let lost = ask(&recorded, at(30)).await.unwrap_err();
    assert_eq!(
        lost.message,
        "hook Job nifi-default-prescale-7-0 (scale event 7, attempt 0) was started and is gone \
         before its result was read (deleted, or removed by a TTL); it is not run a second time: \
         set autoscaling.stackable.tech/retry=true to start a new attempt"
    );
    assert_eq!(
        ask(&stale, at(3600)).await,
        Ok(HookOutcome::InProgress),
        "a stale copy"
    );
    assert!(fake.writes().is_empty(), "never created");
}

#[tokio::test]
async fn a_lost_create_answer_is_adopted_not_repeated() {
    let fake = FakeApi::new();
    let t = tracker(&fake);
    fake.inject(
        Matcher::post("/jobs"),
        ebb_testkit::Fault::TimeoutAfterApply,
        1,
    );
    assert_eq!(
        t.run(
            &scaler(),
            &pre_scale_spec(),
            HookKind::PreScale,
            &ctx(5, 2),
            now()
        )
        .await,
        Ok(HookOutcome::InProgress)
    );
    assert_eq!(
        t.run(
            &scaler(),
            &pre_scale_spec(),
            HookKind::PreScale,
            &ctx(5, 2),
            now()
        )
        .await,
        Ok(HookOutcome::InProgress)
    );
    assert_eq!(fake.list::<Job>().len(), 1);
    assert_eq!(fake.writes_matching(&Matcher::post("/jobs")).len(), 1);
}

#[tokio::test]
async fn a_job_of_someone_else_is_not_adopted() {
    let fake = FakeApi::new();
    let mut job = build_job(&scaler(), &pre_scale_spec(), HookKind::PreScale, &ctx(5, 2)).unwrap();
    job.metadata.owner_references.as_mut().unwrap()[0].uid = "another".into();
    fake.insert(job);
    let err = tracker(&fake)
        .run(
            &scaler(),
            &pre_scale_spec(),
            HookKind::PreScale,
            &ctx(5, 2),
            now(),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("does not own"), "{}", err.message);
}

#[tokio::test]
async fn missing_hooks_are_done_without_a_job() {
    let fake = FakeApi::new();
    let t = tracker(&fake);
    let s = StackableScaler::new(
        "x",
        StackableScalerSpec {
            replicas: 1,
            hooks: None,
            stage_timeout_seconds: None,
        },
    );
    let hooks = JobHooks {
        tracker: &t,
        scaler: &s,
        now: now(),
    };
    assert_eq!(hooks.pre_scale(&ctx(1, 2)).await, Ok(HookOutcome::Done));
    assert_eq!(hooks.post_scale(&ctx(1, 2)).await, Ok(HookOutcome::Done));
    assert_eq!(hooks.on_failure(&ctx(1, 2)).await, Ok(HookOutcome::Done));
    assert_eq!(fake.requests().len(), 0);
}

#[tokio::test]
async fn cleanup_deletes_finished_jobs_of_other_operations_only() {
    let fake = FakeApi::new();
    let mut s = scaler();
    s.status = Some(ebb_crds::stackable::StackableScalerStatus {
        scale_event: Some(7),
        attempt: Some(0),
        ..Default::default()
    });
    let finished = |event: i64, complete: bool| {
        let mut c = ctx(5, 2);
        c.scale_event = event;
        let mut job = build_job(&s, &pre_scale_spec(), HookKind::PreScale, &c).unwrap();
        if complete {
            job.status = Some(JobStatus {
                conditions: Some(vec![JobCondition {
                    type_: "Failed".into(),
                    status: "True".into(),
                    ..JobCondition::default()
                }]),
                ..JobStatus::default()
            });
        }
        job
    };
    for job in [finished(5, true), finished(6, false), finished(7, true)] {
        fake.insert(job);
    }
    // The Jobs as the controller's watch holds them: trimmed, found by the scaler's uid.
    let mut cache = job_cache();
    let mut feed = cache.scope();
    feed.fill(fake.list::<Job>().into_iter().map(|mut job| {
        trim_cached(&mut job);
        job
    }));
    let jobs = cache.by_key(s.metadata.uid.as_deref().unwrap()).unwrap();
    assert_eq!(jobs.len(), 3);
    let deleted = tracker(&fake).cleanup(&s, &jobs).await.unwrap();
    assert_eq!(deleted, vec!["nifi-default-prescale-5-0".to_owned()]);
    // Read from the cache: the API server was asked for nothing but the delete.
    assert!(
        fake.requests().iter().all(|r| r.method == "DELETE"),
        "{:?}",
        fake.requests()
    );
    // The Job listed, by its uid (a successor of the same name is not this cleanup's), and its
    // Pods with it (a Job's own default would orphan them).
    let deletes = fake.writes_matching(&Matcher::delete("/jobs/nifi-default-prescale-5-0"));
    let body = deletes[0].body.clone().unwrap_or_default();
    assert!(body["preconditions"]["uid"].is_string(), "{body}");
    assert_eq!(body["propagationPolicy"], "Background");
    let left: Vec<String> = fake
        .list::<Job>()
        .into_iter()
        .map(|j| j.name_any())
        .collect();
    assert_eq!(
        left.len(),
        2,
        "the running one and the current operation's stay: {left:?}"
    );
}
