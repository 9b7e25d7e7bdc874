//! A Babylon workshop over hours: workshop-scaler itself (its binary's flags, watches and
//! reconcilers) against Babylon and Poolboy as the [`babylon`](crate::babylon) actor models them,
//! and users arriving as the scenario says.
//!
//! Every [`STEP`] the actors look: a higher `spec.count` on the WorkshopProvision creates seats (a
//! ResourceClaim labelled with the provision and a WorkshopUserAssignment each); a seat that
//! finished provisioning gets `status.ready` (or a failed resource state, as Babylon's predicates
//! read it); a user who took a seat gets `spec.assignment`. Waits are exact: the actor seats users
//! at the instant a seat became ready, whatever the step.

use ebb_crds::babylon::WorkshopProvision;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Value, json};

use crate::babylon::{Babylon, ClaimState};
use crate::chart::{Chart, Series};
use crate::report::{Timeline, Waits};
use crate::scenario::Scenario;
use crate::world::{SimError, World, alongside, describe};
use crate::{Dice, Outcome};

const API: &str = "babylon.gpte.redhat.com/v1";
const CLAIM_API: &str = "poolboy.gpte.redhat.com/v1";
const PROVISION_LABEL: &str = "babylon.gpte.redhat.com/workshop-provision";
/// How often the actors look.
pub const STEP: SignedDuration = SignedDuration::from_secs(10);

/// The figures of a workshop simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// How long users waited for a seat.
    pub waits: Waits,
    /// Users still without a seat at the end.
    pub users_never_seated: usize,
    /// Scale-ups (count increases written by the controller).
    pub scale_ups: usize,
    /// Count increases written while an earlier scale-up was still in flight. Must be 0.
    pub overlapping_scale_ups: usize,
    /// `spec.count` at the start and at the end.
    pub count: (i64, i64),
    /// Seats that failed to provision.
    pub failed_seats: usize,
    /// The most seats ready and free at one time.
    pub peak_unused_seats: usize,
    /// Seat-minutes provisioned (ready seats over time): what the workshop paid for.
    pub seat_minutes: i64,
}

/// Runs `scenario` (read from `path`).
///
/// # Errors
/// A scenario without a WorkshopProvision or the Babylon actor, or a controller that stopped.
pub async fn run(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    let fail = Scenario::unfit(path);
    let settings = Scenario::actor(
        path,
        scenario.actors.babylon.as_ref(),
        "babylon",
        "WorkshopProvision",
    )?;
    let provision: WorkshopProvision = scenario.first(path)?;
    let key = Key {
        namespace: provision.metadata.namespace.clone().unwrap_or_default(),
        name: provision.metadata.name.clone().unwrap_or_default(),
        workshop: provision.spec.workshop_name.clone(),
    };
    if key.namespace.is_empty() || key.name.is_empty() {
        return Err(fail(
            "the WorkshopProvision needs a name and a namespace".into(),
        ));
    }

    let mut world = World::new(scenario.start);
    world.apply(path, &scenario.objects)?;
    let mut dice = Dice::seeded(scenario.seed);
    let mut arrivals: Vec<Timestamp> = scenario
        .actors
        .users
        .iter()
        .flat_map(|a| a.instants(scenario.start, &mut dice))
        .collect();
    arrivals.sort();
    let babylon = Babylon::new(scenario.start, &key.name, settings);

    let controllers =
        world.run::<workshop_scaler::WorkshopScalerController>(&["--leader-election=false"])?;
    let mut timeline = Timeline::default();
    let driven = drive(
        &world,
        scenario,
        &key,
        babylon,
        &arrivals,
        &mut dice,
        &mut timeline,
    );
    let (babylon, samples) =
        alongside(workshop_scaler::CONTROLLER_NAME, controllers, driven).await?;

    let writes = world.writes();
    for write in &writes {
        timeline.add(write.at, workshop_scaler::CONTROLLER_NAME, describe(write));
    }
    let (scale_ups, overlapping) = scale_ups(&writes, &key);
    let waits: Vec<SignedDuration> = babylon.seated().iter().map(|s| s.waited).collect();
    let summary = Summary {
        waits: Waits::of(&waits),
        users_never_seated: babylon.waiting().count(),
        scale_ups,
        overlapping_scale_ups: overlapping,
        count: (i64::from(provision.spec.count), samples.final_count),
        failed_seats: babylon.seats().iter().filter(|s| s.failed).count(),
        peak_unused_seats: samples.peak_unused,
        seat_minutes: samples.seat_seconds / 60,
    };
    let chart = Chart {
        title: format!("{}: seats and users", scenario.name),
        y_label: "seats".into(),
        hours: scenario.length().as_secs() as f64 / 3600.0,
        series: samples.series,
    };
    Ok(Outcome {
        name: scenario.name.clone(),
        timeline,
        summary: serde_json::to_value(&summary).unwrap_or(Value::Null),
        charts: vec![chart],
    })
}

struct Key {
    namespace: String,
    name: String,
    workshop: String,
}

struct Samples {
    final_count: i64,
    peak_unused: usize,
    seat_seconds: i64,
    series: Vec<Series>,
}

/// The actors, step by step, until the end of the span.
async fn drive(
    world: &World,
    scenario: &Scenario,
    key: &Key,
    mut babylon: Babylon,
    arrivals: &[Timestamp],
    dice: &mut Dice,
    timeline: &mut Timeline,
) -> (Babylon, Samples) {
    let start = scenario.start;
    let mut next_user = 0;
    let mut shown: Vec<(ClaimState, bool)> = Vec::new();
    let mut samples = Samples {
        final_count: 0,
        peak_unused: 0,
        seat_seconds: 0,
        series: Vec::new(),
    };
    let (mut count_series, mut ready_series, mut taken_series, mut users_series) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut t = start;
    while t < scenario.end() {
        world.clock.sleep_until(t).await;
        let count = provision_count(world, key);
        if count > babylon.seats().len() as i64 {
            let before = babylon.seats().len();
            babylon.set_count(t, u32::try_from(count).unwrap_or(u32::MAX), dice);
            create_seats(world, key, &babylon, before, t);
            timeline.add(
                t,
                "babylon",
                format!("{} new seats provisioning", babylon.seats().len() - before),
            );
        }
        while next_user < arrivals.len() && arrivals[next_user] <= t {
            babylon.arrive(next_user as u64, arrivals[next_user]);
            next_user += 1;
        }
        babylon.advance(t);
        publish(world, key, &babylon, &mut shown, t);
        let ready = shown
            .iter()
            .filter(|(s, _)| *s == ClaimState::Ready)
            .count();
        let taken = shown.iter().filter(|(_, taken)| *taken).count();
        samples.peak_unused = samples.peak_unused.max(ready - taken.min(ready));
        samples.seat_seconds += ready as i64 * STEP.as_secs();
        samples.final_count = count;
        let hours = t.duration_since(start).as_secs() as f64 / 3600.0;
        push_change(&mut count_series, hours, count as f64);
        push_change(&mut ready_series, hours, ready as f64);
        push_change(&mut taken_series, hours, taken as f64);
        push_change(&mut users_series, hours, next_user as f64);
        t += STEP;
    }
    samples.series = vec![
        Series::new("spec.count", count_series),
        Series::new("seats ready", ready_series),
        Series::new("seats taken", taken_series),
        Series::new("users arrived", users_series),
    ];
    (babylon, samples)
}

fn push_change(points: &mut Vec<(f64, f64)>, x: f64, y: f64) {
    if points.last().is_none_or(|p| p.1 != y) {
        points.push((x, y));
    }
}

fn provision_count(world: &World, key: &Key) -> i64 {
    world
        .fake
        .get_json(API, "WorkshopProvision", &key.namespace, &key.name)
        .and_then(|p| p.pointer("/spec/count")?.as_i64())
        .unwrap_or(0)
}

/// A ResourceClaim (labelled with the provision) and a WorkshopUserAssignment per new seat.
fn create_seats(world: &World, key: &Key, babylon: &Babylon, from: usize, at: Timestamp) {
    for seat in &babylon.seats()[from..] {
        let created = ebb_runtime::time::rfc3339(at);
        let _ = world.fake.try_insert(
            json!({"apiVersion": CLAIM_API, "kind": "ResourceClaim",
                "metadata": {"name": seat.name, "namespace": key.namespace,
                    "creationTimestamp": created,
                    "labels": {PROVISION_LABEL: key.name}},
                "spec": {"resources": [{"provider": {"name": key.workshop}}]},
                "status": {"ready": false}}),
            None,
        );
        let _ = world.fake.try_insert(
            json!({"apiVersion": API, "kind": "WorkshopUserAssignment",
                "metadata": {"name": seat.name, "namespace": key.namespace},
                "spec": {"workshopName": key.workshop, "resourceClaimName": seat.name}}),
            None,
        );
    }
}

/// Writes what changed since the last look: claims that settled, seats a user took.
fn publish(
    world: &World,
    key: &Key,
    babylon: &Babylon,
    shown: &mut Vec<(ClaimState, bool)>,
    at: Timestamp,
) {
    for (i, seat) in babylon.seats().iter().enumerate() {
        if shown.len() <= i {
            shown.push((ClaimState::Provisioning, false));
        }
        let state = if seat.settles_at <= at {
            if seat.failed {
                ClaimState::Failed
            } else {
                ClaimState::Ready
            }
        } else {
            ClaimState::Provisioning
        };
        let taken = seat.user.is_some();
        if shown[i].0 != state {
            let status = match state {
                ClaimState::Ready => json!({"ready": true, "healthy": true}),
                ClaimState::Failed => json!({"ready": false, "resources": [{"name": "lab",
                    "state": {"spec": {"vars": {"current_state": "provision-failed"}}}}]}),
                ClaimState::Provisioning => json!({"ready": false}),
            };
            if world
                .fake
                .get_json(CLAIM_API, "ResourceClaim", &key.namespace, &seat.name)
                .is_some()
            {
                world.fake.modify_json(
                    CLAIM_API,
                    "ResourceClaim",
                    &key.namespace,
                    &seat.name,
                    |c| {
                        c["status"] = status;
                    },
                );
            }
        }
        if taken && !shown[i].1 {
            let user = seat.user.unwrap_or_default();
            if world
                .fake
                .get_json(API, "WorkshopUserAssignment", &key.namespace, &seat.name)
                .is_some()
            {
                world.fake.modify_json(
                    API,
                    "WorkshopUserAssignment",
                    &key.namespace,
                    &seat.name,
                    |a| {
                        a["spec"]["assignment"] =
                            json!({"email": format!("user{user}@example.com")});
                    },
                );
            }
        }
        shown[i] = (state, taken);
    }
}

/// Scale-ups the controller wrote (increases of `spec.count`), and how many came while an
/// earlier one was still flagged in flight (`status.autoScalingActive`).
fn scale_ups(writes: &[ebb_testkit::RecordedRequest], key: &Key) -> (usize, usize) {
    let path = format!("/workshopprovisions/{}", key.name);
    let (mut ups, mut overlapping, mut in_flight, mut counted_in_flight) = (0, 0, false, false);
    for w in writes.iter().filter(|w| w.status.is_some_and(|s| s < 300)) {
        let Some(body) = &w.body else { continue };
        if w.path.ends_with(&format!("{path}/status")) {
            match body
                .pointer("/status/autoScalingActive")
                .and_then(Value::as_bool)
            {
                Some(true) => {
                    in_flight = true;
                    counted_in_flight = false;
                }
                Some(false) => in_flight = false,
                None => {}
            }
        } else if w.path.ends_with(&path) && body.pointer("/spec/count").is_some() {
            ups += 1;
            if in_flight && counted_in_flight {
                overlapping += 1;
            }
            counted_in_flight = true;
        }
    }
    (ups, overlapping)
}

#[cfg(test)]
#[path = "workshop_scaler_tests.rs"]
mod tests;
