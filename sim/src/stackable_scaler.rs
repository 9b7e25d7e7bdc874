//! A StackableScaler through scale operations: stackable-scaler itself (its binary's flags,
//! watches and reconciler, its hook Jobs from `spec.hooks`) against a StatefulSet whose pods come
//! and go at a steady pace, hook Jobs that take time or fail ([`hooks`](crate::hooks)), the HPA
//! asking for new replicas through `/scale` when the scenario says, and an operator who sets the
//! retry annotation some time after a failure.

use std::collections::{BTreeMap, BTreeSet};

use ebb_crds::stackable::{ScalerStage, ScalerState};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use serde::Serialize;
use serde_json::{Value, json};

use crate::chart::{Chart, Series};
use crate::hooks::{HookJobs, Phase};
use crate::report::Timeline;
use crate::scenario::{Scenario, StackableActors};
use crate::world::{SimError, World, alongside, describe};
use crate::{Dice, Outcome};

const API: &str = "autoscaling.stackable.tech/v1alpha1";
const RETRY_ANNOTATION: &str = "autoscaling.stackable.tech/retry";
const HOOK_LABEL: &str = "scaling.ebb.dev/hook";
/// How often the actors look.
pub const STEP: SignedDuration = SignedDuration::from_secs(5);

/// The figures of a stackable simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Replica changes the HPA asked for.
    pub requests: usize,
    /// Operations that ended back in Idle with the workload at the replicas asked for.
    pub completed: usize,
    /// Hook Jobs run, by hook.
    pub hook_runs: BTreeMap<String, usize>,
    /// Hook Jobs that failed.
    pub failed_runs: usize,
    /// Jobs created twice under one name (a hook repeated). Must be 0.
    pub repeated_runs: usize,
    /// Retries the operator asked for.
    pub retries: usize,
    /// Seconds spent in each stage, from the stage changes the controller wrote.
    pub seconds_in_stage: BTreeMap<String, i64>,
    /// The workload's replicas at the end.
    pub final_replicas: i64,
}

/// Runs `scenario` (read from `path`).
///
/// # Errors
/// A scenario without a StackableScaler owned by a StatefulSet, or a controller that stopped.
pub async fn run(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    let fail = Scenario::unfit(path);
    let actors = Scenario::actor(
        path,
        scenario.actors.stackable.as_ref(),
        "stackable",
        "StackableScaler",
    )?;
    let key = Key::of(scenario).ok_or_else(|| {
        fail(
            "a StackableScaler (namespace, name) owned by a StatefulSet of the objects is required"
                .into(),
        )
    })?;
    let mut world = World::new(scenario.start);
    world.apply(path, &scenario.objects)?;
    let jobs = HookJobs::new(scenario.actors.hooks.clone());

    let controllers =
        world.run::<stackable_scaler::StackableScalerController>(&["--leader-election=false"])?;
    let mut timeline = Timeline::default();
    let mut dice = Dice::seeded(scenario.seed);
    let driven = drive(
        &world,
        scenario,
        &actors,
        &key,
        jobs,
        &mut dice,
        &mut timeline,
    );
    let (jobs, samples) = alongside(stackable_scaler::CONTROLLER_NAME, controllers, driven).await?;

    let writes = world.writes();
    for write in &writes {
        timeline.add(write.at, stackable_scaler::CONTROLLER_NAME, describe(write));
    }
    let mut hook_runs = BTreeMap::new();
    for run in jobs.runs().values() {
        *hook_runs.entry(run.hook.clone()).or_insert(0) += 1;
    }
    let summary = Summary {
        requests: actors.requests.len(),
        completed: samples.completed,
        hook_runs,
        failed_runs: jobs.runs().values().filter(|r| !r.succeeds).count(),
        repeated_runs: writes
            .iter()
            .filter(|w| w.method == http::Method::POST && w.path.ends_with("/jobs"))
            .filter(|w| w.status == Some(409))
            .count(),
        retries: samples.retries,
        seconds_in_stage: seconds_in_stage(&writes, &key, scenario),
        final_replicas: samples.final_replicas,
    };
    Ok(Outcome {
        name: scenario.name.clone(),
        timeline,
        summary: serde_json::to_value(&summary).unwrap_or(Value::Null),
        charts: vec![Chart {
            title: format!("{}: replicas and stage", scenario.name),
            y_label: "replicas / stage".into(),
            hours: scenario.length().as_secs() as f64 / 3600.0,
            series: samples.series,
        }],
    })
}

struct Key {
    namespace: String,
    scaler: String,
    workload: String,
}

impl Key {
    fn of(scenario: &Scenario) -> Option<Self> {
        let scaler = scenario.objects_of("StackableScaler").next()?;
        let owner = scaler
            .pointer("/metadata/ownerReferences")?
            .as_array()?
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some("StatefulSet"))?;
        Some(Self {
            namespace: scaler.pointer("/metadata/namespace")?.as_str()?.to_owned(),
            scaler: scaler.pointer("/metadata/name")?.as_str()?.to_owned(),
            workload: owner.get("name")?.as_str()?.to_owned(),
        })
    }
}

struct Samples {
    completed: usize,
    retries: usize,
    final_replicas: i64,
    series: Vec<Series>,
}

fn stage_of(world: &World, key: &Key) -> Option<ScalerStage> {
    let scaler = world
        .fake
        .get_json(API, "StackableScaler", &key.namespace, &key.scaler)?;
    state_stage(&scaler)
}

/// The stage in `object`'s `status.currentState`, in either form the controller reads.
fn state_stage(object: &serde_json::Value) -> Option<ScalerStage> {
    let state = object.pointer("/status/currentState")?.clone();
    serde_json::from_value::<ScalerState>(state)
        .ok()
        .map(|state| state.stage)
}

fn stage_number(stage: ScalerStage) -> f64 {
    match stage {
        ScalerStage::Idle => 0.0,
        ScalerStage::PreScaling => 1.0,
        ScalerStage::Scaling => 2.0,
        ScalerStage::PostScaling => 3.0,
        ScalerStage::Failed => 4.0,
    }
}

/// The actors, step by step, until the end of the span.
async fn drive(
    world: &World,
    scenario: &Scenario,
    actors: &StackableActors,
    key: &Key,
    mut jobs: HookJobs,
    dice: &mut Dice,
    timeline: &mut Timeline,
) -> (HookJobs, Samples) {
    let start = scenario.start;
    let requests: Vec<(Timestamp, i64)> = actors
        .requests
        .iter()
        .map(|r| (start + dice.duration(&r.after), r.replicas))
        .collect();
    let pace = dice.duration(&actors.pod_pace);
    let retry_after = dice.duration(&actors.retry_after);
    let (mut next_request, mut asked) = (0, None::<i64>);
    let mut published: BTreeSet<String> = BTreeSet::new();
    let mut failed_since: Option<Timestamp> = None;
    let mut last_pod_change = start;
    let mut samples = Samples {
        completed: 0,
        retries: 0,
        final_replicas: 0,
        series: Vec::new(),
    };
    let (mut wanted, mut pods, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_stage = None;
    let mut t = start;
    while t < scenario.end() {
        world.clock.sleep_until(t).await;
        // The HPA, through /scale.
        while next_request < requests.len() && requests[next_request].0 <= t {
            let replicas = requests[next_request].1;
            world
                .fake
                .modify_json(API, "StackableScaler", &key.namespace, &key.scaler, |s| {
                    s["spec"]["replicas"] = json!(replicas);
                });
            timeline.add(t, "hpa", format!("asks for {replicas} replicas"));
            asked = Some(replicas);
            next_request += 1;
        }
        run_jobs(world, key, &mut jobs, &mut published, dice, t, timeline);
        let current = roll_pods(world, key, t, pace, &mut last_pod_change);
        let stage = stage_of(world, key);
        if let Some(stage) = &stage {
            if *stage == ScalerStage::Failed {
                let since = *failed_since.get_or_insert(t);
                if t.duration_since(since) >= retry_after {
                    world.fake.modify_json(
                        API,
                        "StackableScaler",
                        &key.namespace,
                        &key.scaler,
                        |s| {
                            s["metadata"]["annotations"][RETRY_ANNOTATION] = json!("true");
                        },
                    );
                    timeline.add(t, "operator", "sets the retry annotation");
                    samples.retries += 1;
                    failed_since = None;
                }
            } else {
                failed_since = None;
            }
            if last_stage.as_ref() != Some(stage) {
                if *stage == ScalerStage::Idle && asked == Some(current) && last_stage.is_some() {
                    samples.completed += 1;
                }
                last_stage = Some(*stage);
            }
            push_change(&mut stages, hours(t, start), stage_number(*stage));
        }
        if let Some(asked) = asked {
            push_change(&mut wanted, hours(t, start), asked as f64);
        }
        push_change(&mut pods, hours(t, start), current as f64);
        samples.final_replicas = current;
        t += STEP;
    }
    samples.series = vec![
        Series::new("replicas asked (spec.replicas)", wanted),
        Series::new("pods ready", pods),
        Series::new("stage (0 Idle, 1 Pre, 2 Scaling, 3 Post, 4 Failed)", stages),
    ];
    (jobs, samples)
}

fn hours(t: Timestamp, start: Timestamp) -> f64 {
    t.duration_since(start).as_secs() as f64 / 3600.0
}

fn push_change(points: &mut Vec<(f64, f64)>, x: f64, y: f64) {
    if points.last().is_none_or(|p| p.1 != y) {
        points.push((x, y));
    }
}

/// New hook Jobs start; finished ones get the condition the Job controller sets.
fn run_jobs(
    world: &World,
    key: &Key,
    jobs: &mut HookJobs,
    published: &mut BTreeSet<String>,
    dice: &mut Dice,
    t: Timestamp,
    timeline: &mut Timeline,
) {
    let mut listed: Vec<Job> = world.fake.list::<Job>();
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for job in listed {
        let Some(name) = job.metadata.name.clone() else {
            continue;
        };
        if job.metadata.namespace.as_deref() != Some(key.namespace.as_str()) {
            continue;
        }
        let hook = job
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HOOK_LABEL).cloned())
            .unwrap_or_default();
        if jobs.create(&name, &hook, t, dice) {
            timeline.add(t, "job", format!("{name} ({hook}) started"));
        }
        let done = match jobs.phase(&name, t) {
            Some(Phase::Succeeded) => "Complete",
            Some(Phase::Failed) => "Failed",
            _ => continue,
        };
        if published.insert(name.clone()) {
            world
                .fake
                .modify_json("batch/v1", "Job", &key.namespace, &name, |j| {
                    j["status"] = json!({
                        "conditions": [{"type": done, "status": "True"}],
                        "succeeded": if done == "Complete" { 1 } else { 0 },
                        "failed": if done == "Failed" { 1 } else { 0 },
                    });
                });
            timeline.add(t, "job", format!("{name} {}", done.to_lowercase()));
        }
    }
}

/// The StatefulSet controller: one pod more or less every `pace` until `status` matches `spec`.
/// Returns the ready pods now.
fn roll_pods(
    world: &World,
    key: &Key,
    t: Timestamp,
    pace: SignedDuration,
    last_change: &mut Timestamp,
) -> i64 {
    let Some(sts) = world
        .fake
        .get_json("apps/v1", "StatefulSet", &key.namespace, &key.workload)
    else {
        return 0;
    };
    let spec = sts
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ready = sts
        .pointer("/status/readyReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let generation = sts
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let observed = sts.pointer("/status/observedGeneration").cloned();
    if ready == spec && observed.as_ref() == Some(&generation) {
        return ready;
    }
    if ready != spec && t.duration_since(*last_change) < pace {
        return ready;
    }
    let next = if ready < spec {
        ready + 1
    } else if ready > spec {
        ready - 1
    } else {
        ready
    };
    *last_change = t;
    world.fake.modify_json(
        "apps/v1",
        "StatefulSet",
        &key.namespace,
        &key.workload,
        |s| {
            s["status"] = json!({
                "replicas": next, "readyReplicas": next, "currentReplicas": next,
                "updatedReplicas": next, "availableReplicas": next,
                "observedGeneration": generation,
            });
        },
    );
    next
}

/// Seconds in each stage, from the stage each status write recorded, to the end of the span.
fn seconds_in_stage(
    writes: &[ebb_testkit::RecordedRequest],
    key: &Key,
    scenario: &Scenario,
) -> BTreeMap<String, i64> {
    let status_path = format!("/stackablescalers/{}/status", key.scaler);
    let changes: Vec<(Timestamp, String)> = writes
        .iter()
        .filter(|w| w.path.ends_with(&status_path) && w.status.is_some_and(|s| s < 300))
        .filter_map(|w| {
            let stage = state_stage(w.body.as_ref()?)?;
            Some((w.at, stage.as_str().to_owned()))
        })
        .collect();
    let mut out = BTreeMap::new();
    for (i, (at, stage)) in changes.iter().enumerate() {
        let until = changes.get(i + 1).map_or(scenario.end(), |(next, _)| *next);
        *out.entry(stage.clone()).or_insert(0) += until.duration_since(*at).as_secs();
    }
    out
}

#[cfg(test)]
#[path = "stackable_scaler_tests.rs"]
mod tests;
