//! Provisioner capacity for workshops (seed 001): service-scaler itself sets the HPA of a
//! provisioner Deployment by time of day; the HPA controller ([`hpa`](crate::hpa)) scales the
//! Deployment on CPU; the provisioner pool ([`provisioners`](crate::provisioners)) runs one
//! workspace build per pod, and the users of each workshop each start one.
//!
//! The scenario runs twice: as written (with the ServiceScaler's pre-scaling windows) and with the
//! ServiceScalers taken out (the HPA alone, as the seed had it). The difference is the point.

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Value, json};

use crate::chart::{Chart, Series};
use crate::hpa::{self, Bounds, Hpa};
use crate::provisioners::{Job, Pool};
use crate::report::{Timeline, Waits};
use crate::scenario::{ProvisionerActors, Scenario};
use crate::world::{SimError, World, alongside, describe};
use crate::{Dice, Outcome};

const HPA_API: &str = "autoscaling/v2";
/// Job ids are `workshop * JOBS_PER_WORKSHOP + n`.
const JOBS_PER_WORKSHOP: usize = 100_000;

fn workshop_of(job: u64) -> usize {
    usize::try_from(job).unwrap_or(usize::MAX) / JOBS_PER_WORKSHOP
}

/// The figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// How long users waited for a provisioner.
    pub waits: Waits,
    /// The same, per workshop, in the scenario's order.
    pub waits_by_workshop: Vec<Waits>,
    /// Jobs still queued at the end.
    pub jobs_never_started: usize,
    /// Times the HPA raised the replicas.
    pub scale_ups: usize,
    /// The most pods ready and idle at one time.
    pub peak_idle_pods: usize,
    /// The most pods at one time.
    pub peak_pods: usize,
    /// Pod-minutes paid for.
    pub replica_minutes: i64,
}

/// Both runs of the scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// With the ServiceScaler's windows.
    pub with_service_scaler: Summary,
    /// The HPA alone.
    pub hpa_alone: Summary,
}

/// Runs `scenario` (read from `path`) with and without its ServiceScalers.
///
/// # Errors
/// A scenario without the provisioner actors or the HPA, or a controller that stopped.
pub async fn run(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    let fail = Scenario::unfit(path);
    let actors =
        scenario.actors.provisioners.clone().ok_or_else(|| {
            fail("actors.provisioners is required for provisioner capacity".into())
        })?;
    let target = Target::of(scenario).ok_or_else(|| {
        fail(
            "the provisioners need a HorizontalPodAutoscaler (namespace, name) among the objects"
                .into(),
        )
    })?;

    let mut timeline = Timeline::default();
    let with = once(path, scenario, &actors, &target, true, &mut timeline).await?;
    let mut unused = Timeline::default();
    let alone = once(path, scenario, &actors, &target, false, &mut unused).await?;
    let comparison = Comparison {
        with_service_scaler: with.summary,
        hpa_alone: alone.summary,
    };
    // The minimum first and the pre-scaled pods last, so neither hides the other.
    let mut series = vec![Series::new("pods, HPA alone", alone.pods)];
    series.extend(with.series);
    Ok(Outcome {
        name: scenario.name.clone(),
        timeline,
        summary: serde_json::to_value(&comparison).unwrap_or(Value::Null),
        charts: vec![Chart {
            title: format!("{}: provisioner pods and demand", scenario.name),
            y_label: "pods / jobs".into(),
            hours: scenario.length().as_secs() as f64 / 3600.0,
            series,
        }],
    })
}

/// The HPA the actors act on.
struct Target {
    namespace: String,
    name: String,
}

impl Target {
    fn of(scenario: &Scenario) -> Option<Self> {
        let hpa = scenario.objects_of("HorizontalPodAutoscaler").next()?;
        Some(Self {
            namespace: hpa.pointer("/metadata/namespace")?.as_str()?.to_owned(),
            name: hpa.pointer("/metadata/name")?.as_str()?.to_owned(),
        })
    }
}

struct Run {
    summary: Summary,
    series: Vec<Series>,
    pods: Vec<(f64, f64)>,
}

async fn once(
    path: &str,
    scenario: &Scenario,
    actors: &ProvisionerActors,
    target: &Target,
    with_scaler: bool,
    timeline: &mut Timeline,
) -> Result<Run, SimError> {
    let objects: Vec<Value> = scenario
        .objects
        .iter()
        .filter(|o| with_scaler || o.get("kind").and_then(Value::as_str) != Some("ServiceScaler"))
        .cloned()
        .collect();
    let mut world = World::new(scenario.start);
    world.apply(path, &objects)?;
    let mut dice = Dice::seeded(scenario.seed);
    let mut jobs: Vec<Job> = Vec::new();
    for (group, arrivals) in actors.workshops.iter().enumerate() {
        for at in arrivals.instants(scenario.start, &mut dice) {
            let duration = dice.duration(&actors.job_duration);
            jobs.push(Job {
                id: (group * JOBS_PER_WORKSHOP + jobs.len()) as u64,
                arrived: at,
                duration,
            });
        }
    }
    jobs.sort_by_key(|j| (j.arrived, j.id));
    let replicas = bounds(&world, target).map_or(1, |b| b.min.max(1));
    let pool = Pool::new(
        scenario.start,
        usize::try_from(replicas).unwrap_or(1),
        dice.duration(&actors.pod_start),
    );

    let controllers =
        world.run::<service_scaler::ServiceScalerController>(&["--leader-election=false"])?;
    let driven = drive(&world, scenario, target, pool, &jobs, timeline);
    let run = alongside(service_scaler::CONTROLLER_NAME, controllers, driven).await?;
    if with_scaler {
        for write in world.writes() {
            timeline.add(write.at, service_scaler::CONTROLLER_NAME, describe(&write));
        }
    }
    Ok(run)
}

/// The HPA's bounds and CPU target as stored now.
fn bounds(world: &World, target: &Target) -> Option<Bounds> {
    let hpa = world.fake.get_json(
        HPA_API,
        "HorizontalPodAutoscaler",
        &target.namespace,
        &target.name,
    )?;
    let cpu = hpa
        .pointer("/spec/metrics")?
        .as_array()?
        .iter()
        .find(|m| m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu"))?
        .pointer("/resource/target/averageUtilization")?
        .as_f64()?;
    Some(Bounds {
        min: i32::try_from(
            hpa.pointer("/spec/minReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(1),
        )
        .unwrap_or(1),
        max: i32::try_from(hpa.pointer("/spec/maxReplicas")?.as_i64()?).unwrap_or(i32::MAX),
        target_utilization: cpu,
    })
}

/// The HPA controller, every sync period, and the jobs as they arrive.
async fn drive(
    world: &World,
    scenario: &Scenario,
    target: &Target,
    mut pool: Pool,
    jobs: &[Job],
    timeline: &mut Timeline,
) -> Run {
    let start = scenario.start;
    let mut hpa = Hpa::new();
    let mut next_job = 0;
    let (mut pods, mut queued, mut running) = (Vec::new(), Vec::new(), Vec::new());
    let (mut min_series, mut max_series) = (Vec::new(), Vec::new());
    let (mut scale_ups, mut peak_idle, mut peak_pods, mut pod_seconds) = (0, 0, 0, 0_i64);
    let mut t = start;
    while t < scenario.end() {
        world.clock.sleep_until(t).await;
        while next_job < jobs.len() && jobs[next_job].arrived <= t {
            pool.submit(jobs[next_job]);
            next_job += 1;
        }
        pool.advance(t);
        let current = i32::try_from(pool.replicas()).unwrap_or(i32::MAX);
        if let Some(b) = bounds(world, target) {
            let desired = hpa.sync(t, &b, current, pool.utilization());
            if desired != current {
                if desired > current {
                    scale_ups += 1;
                }
                pool.scale(t, usize::try_from(desired).unwrap_or(0));
                publish(world, target, current, desired);
                timeline.add(t, "hpa", format!("replicas {current} -> {desired}"));
            }
            push_change(&mut min_series, hours(t, start), f64::from(b.min));
            push_change(&mut max_series, hours(t, start), f64::from(b.max));
        }
        peak_idle = peak_idle.max(pool.idle());
        peak_pods = peak_pods.max(pool.replicas());
        pod_seconds += pool.replicas() as i64 * hpa::SYNC_PERIOD.as_secs();
        push_change(&mut pods, hours(t, start), pool.replicas() as f64);
        push_change(&mut queued, hours(t, start), pool.queued() as f64);
        push_change(&mut running, hours(t, start), pool.busy() as f64);
        t += hpa::SYNC_PERIOD;
    }
    pool.advance(scenario.end());
    let waits: Vec<SignedDuration> = pool.started().iter().map(|s| s.waited).collect();
    let groups = jobs
        .iter()
        .map(|j| workshop_of(j.id))
        .max()
        .map_or(0, |g| g + 1);
    let waits_by_workshop = (0..groups)
        .map(|g| {
            let of_group: Vec<SignedDuration> = pool
                .started()
                .iter()
                .filter(|s| workshop_of(s.id) == g)
                .map(|s| s.waited)
                .collect();
            Waits::of(&of_group)
        })
        .collect();
    Run {
        summary: Summary {
            waits: Waits::of(&waits),
            waits_by_workshop,
            jobs_never_started: pool.queued(),
            scale_ups,
            peak_idle_pods: peak_idle,
            peak_pods,
            replica_minutes: pod_seconds / 60,
        },
        series: vec![
            Series::new("HPA maxReplicas", max_series),
            Series::new("HPA minReplicas (ServiceScaler)", min_series),
            Series::new("builds running (demand)", running),
            Series::new("builds waiting", queued),
            Series::new("pods, with the ServiceScaler", pods.clone()),
        ],
        pods,
    }
}

fn hours(t: Timestamp, start: Timestamp) -> f64 {
    t.duration_since(start).as_secs() as f64 / 3600.0
}

fn push_change(points: &mut Vec<(f64, f64)>, x: f64, y: f64) {
    if points.last().is_none_or(|p| p.1 != y) {
        points.push((x, y));
    }
}

/// The HPA's status, as the HPA controller writes it.
fn publish(world: &World, target: &Target, current: i32, desired: i32) {
    world.fake.modify_json(
        HPA_API,
        "HorizontalPodAutoscaler",
        &target.namespace,
        &target.name,
        |hpa| {
            hpa["status"] = json!({"currentReplicas": current, "desiredReplicas": desired});
        },
    );
}

#[cfg(test)]
#[path = "service_scaler_tests.rs"]
mod tests;
