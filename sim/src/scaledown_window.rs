//! A ScaleDownSchedule over days: scaledown-window itself (its binary's flags, its watches, its
//! reconciler) against a cluster whose autoscaler removes idle nodes only while
//! `spec.scaleDown.enabled` is true, and whose cluster-version operator upgrades it.
//!
//! Every minute the actors look: the cluster-version operator sets `Progressing` on ClusterVersion
//! `version` during an upgrade, and the autoscaler reads the ClusterAutoscaler and adds or removes
//! nodes. What scale-down was allowed at each instant (a window open, or an upgrade running) is
//! set against what the controller wrote, exactly to the second, from the stamped writes.

use ebb_crds::calendar::HolidayCalendar;
use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_schedule::{AnyOpen, Calendars};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Value, json};

use crate::chart::{Chart, Series};
use crate::cluster::{Autoscaler, Upgrades};
use crate::report::Timeline;
use crate::scenario::{Busy, ClusterActors, Scenario};
use crate::world::{SimError, World, alongside, describe};
use crate::{Dice, Outcome};

const CA_API: &str = "autoscaling.openshift.io/v1";
const CV_API: &str = "config.openshift.io/v1";
const STEP: SignedDuration = SignedDuration::from_mins(1);

/// The figures of a schedule simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Node-hours the cluster paid for.
    pub node_hours: f64,
    /// Node-hours had scale-down never been enabled.
    pub node_hours_without_scale_down: f64,
    /// The difference: what the windows saved.
    pub node_hours_saved: f64,
    /// Nodes the autoscaler removed.
    pub nodes_removed: u32,
    /// Minutes scale-down was allowed (a window open or an upgrade running).
    pub allowed_minutes: f64,
    /// Minutes `spec.scaleDown.enabled` was true.
    pub enabled_minutes: f64,
    /// Minutes it was true while nothing allowed it. Must be 0.
    pub enabled_outside_windows_minutes: f64,
    /// The same in seconds, exactly.
    pub enabled_outside_windows_seconds: i64,
    /// The longest a change of what is allowed waited for the controller's write, seconds.
    pub slowest_follow_seconds: i64,
    /// Writes to the ClusterAutoscaler.
    pub target_writes: usize,
}

/// Runs the scenario `scenario` (read from `path`).
///
/// # Errors
/// A scenario without what this simulation needs, or a controller that stopped.
pub async fn run(path: &str, scenario: &Scenario) -> Result<Outcome, SimError> {
    let fail = Scenario::unfit(path);
    let actors = Scenario::actor(
        path,
        scenario.actors.cluster.as_ref(),
        "cluster",
        "ScaleDownSchedule",
    )?;
    let schedule: ScaleDownSchedule = scenario.first(path)?;
    let target = schedule
        .spec
        .target
        .cluster_autoscaler
        .as_ref()
        .map(|t| t.name.clone())
        .ok_or_else(|| fail("the simulation models a clusterAutoscaler target".into()))?;
    // The HolidayCalendars among the objects, as the controller's watch will hold them.
    let mut calendars = Calendars::new();
    for object in scenario.objects_of("HolidayCalendar") {
        let calendar: HolidayCalendar = serde_json::from_value(object.clone())
            .map_err(|e| fail(format!("a HolidayCalendar: {e}")))?;
        calendars.insert(
            calendar.metadata.name.as_deref().unwrap_or_default(),
            &calendar.spec.dates,
        );
    }
    let windows = scaledown_window::decide::parse_windows(&schedule.spec.windows, &calendars)
        .map(AnyOpen::new)
        .map_err(|e| fail(e.to_string()))?;

    let mut world = World::new(scenario.start);
    world.apply(path, &scenario.objects)?;
    if world
        .fake
        .get_json(CA_API, "ClusterAutoscaler", "", &target)
        .is_none()
    {
        return Err(fail(format!(
            "no ClusterAutoscaler {target} among the objects"
        )));
    }
    let upgrades = upgrades(&actors, &mut Dice::seeded(scenario.seed));
    if !upgrades.runs.is_empty()
        && world
            .fake
            .get_json(CV_API, "ClusterVersion", "", "version")
            .is_none()
    {
        return Err(fail(
            "upgrades need the ClusterVersion version among the objects".into(),
        ));
    }

    let controllers =
        world.run::<scaledown_window::ScaledownWindowController>(&["--leader-election=false"])?;
    let mut timeline = Timeline::default();
    let unneeded = Dice::seeded(scenario.seed).duration(&actors.unneeded_time);
    let driven = drive(
        &world,
        scenario,
        &actors,
        (&windows, &upgrades),
        &target,
        unneeded,
        &mut timeline,
    );
    let samples = alongside(scaledown_window::CONTROLLER_NAME, controllers, driven).await?;

    let writes: Vec<(Timestamp, bool)> = world
        .writes()
        .iter()
        .filter(|w| w.path.ends_with(&format!("/clusterautoscalers/{target}")))
        .filter(|w| w.status.is_some_and(|s| s < 300))
        .filter_map(|w| {
            Some((
                w.at,
                w.body
                    .as_ref()?
                    .pointer("/spec/scaleDown/enabled")?
                    .as_bool()?,
            ))
        })
        .collect();
    for write in world.writes() {
        timeline.add(
            write.at,
            scaledown_window::CONTROLLER_NAME,
            describe(&write),
        );
    }
    let initially = world_initial_enabled(scenario, &target);
    let accounting = account(scenario, &windows, &upgrades, initially, &writes);
    let summary = Summary {
        node_hours: round2(samples.actual.node_hours()),
        node_hours_without_scale_down: round2(samples.baseline.node_hours()),
        node_hours_saved: round2(samples.baseline.node_hours() - samples.actual.node_hours()),
        nodes_removed: samples.actual.removed(),
        allowed_minutes: accounting.allowed_seconds as f64 / 60.0,
        enabled_minutes: accounting.enabled_seconds as f64 / 60.0,
        enabled_outside_windows_minutes: accounting.enabled_outside_seconds as f64 / 60.0,
        enabled_outside_windows_seconds: accounting.enabled_outside_seconds,
        slowest_follow_seconds: accounting.slowest_follow_seconds,
        target_writes: writes.len(),
    };
    let hours = scenario.length().as_secs() as f64 / 3600.0;
    let chart = Chart {
        title: format!(
            "{}: nodes, and scale-down allowed vs enabled",
            scenario.name
        ),
        y_label: "nodes".into(),
        hours,
        series: samples.series,
    };
    Ok(Outcome {
        name: scenario.name.clone(),
        timeline,
        summary: serde_json::to_value(&summary).unwrap_or(Value::Null),
        charts: vec![chart],
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn upgrades(actors: &ClusterActors, dice: &mut Dice) -> Upgrades {
    Upgrades {
        runs: actors
            .upgrades
            .iter()
            .map(|u| (u.at, dice.duration(&u.lasting)))
            .collect(),
    }
}

fn world_initial_enabled(scenario: &Scenario, target: &str) -> bool {
    scenario
        .objects_of("ClusterAutoscaler")
        .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(target))
        .and_then(|o| o.pointer("/spec/scaleDown/enabled")?.as_bool())
        .unwrap_or(false)
}

/// Nodes needed at `t`: the busy hours' count while one runs, else the base.
fn needed(actors: &ClusterActors, t: Timestamp) -> usize {
    let minute = t.strftime("%H:%M").to_string();
    actors
        .busy
        .iter()
        .filter(|b: &&Busy| b.from.as_str() <= minute.as_str() && minute.as_str() < b.to.as_str())
        .map(|b| b.nodes)
        .max()
        .unwrap_or(actors.base_nodes)
}

struct Samples {
    actual: Autoscaler,
    baseline: Autoscaler,
    series: Vec<Series>,
}

/// The actors, minute by minute, until the end of the span.
async fn drive(
    world: &World,
    scenario: &Scenario,
    actors: &ClusterActors,
    (windows, upgrades): (&AnyOpen, &Upgrades),
    target: &str,
    unneeded: SignedDuration,
    timeline: &mut Timeline,
) -> Samples {
    let start = scenario.start;
    let mut actual = Autoscaler::new(start, actors.base_nodes, unneeded);
    let mut baseline = Autoscaler::new(start, actors.base_nodes, unneeded);
    let (mut nodes, mut need) = (Vec::new(), Vec::new());
    let (mut enabled_series, mut allowed_series) = (Vec::new(), Vec::new());
    let mut progressing = false;
    let mut t = start;
    while t < scenario.end() {
        world.clock.sleep_until(t).await;
        let hours = t.duration_since(start).as_secs() as f64 / 3600.0;
        if upgrades.progressing(t) != progressing {
            progressing = !progressing;
            set_progressing(world, progressing, t);
            let what = if progressing {
                "upgrade started"
            } else {
                "upgrade finished"
            };
            timeline.add(t, "cluster-version", what);
        }
        let enabled = world
            .fake
            .get_json(CA_API, "ClusterAutoscaler", "", target)
            .and_then(|ca| ca.pointer("/spec/scaleDown/enabled")?.as_bool())
            .unwrap_or(false);
        let before = actual.nodes();
        let wanted = needed(actors, t);
        actual.step(t, wanted, enabled);
        baseline.step(t, wanted, false);
        if actual.nodes() < before {
            timeline.add(
                t,
                "autoscaler",
                format!("removed {} idle nodes", before - actual.nodes()),
            );
        }
        push_change(&mut nodes, hours, actual.nodes() as f64);
        push_change(&mut need, hours, wanted as f64);
        push_change(&mut enabled_series, hours, if enabled { 1.0 } else { 0.0 });
        let allowed = windows.is_open(t) || upgrades.progressing(t);
        push_change(&mut allowed_series, hours, if allowed { 1.0 } else { 0.0 });
        t += STEP;
    }
    world.clock.sleep_until(scenario.end()).await;
    baseline.step(scenario.end(), 0, false);
    actual.step(scenario.end(), 0, false);
    let peak = nodes.iter().map(|p| p.1).fold(1.0_f64, f64::max);
    // The two on/off series above the nodes, one over the other, so both stay visible.
    let scaled = |points: Vec<(f64, f64)>, high: f64| {
        points.into_iter().map(|(x, y)| (x, y * high)).collect()
    };
    Samples {
        actual,
        baseline,
        // Nodes last, so the nodes kept past the busy hours show above what was needed.
        series: vec![
            Series::new("nodes needed", need),
            Series::new(
                "allowed: a window or an upgrade (high) / not (0)",
                scaled(allowed_series, peak + 2.0),
            ),
            Series::new(
                "spec.scaleDown.enabled (high) / false (0)",
                scaled(enabled_series, peak + 1.0),
            ),
            Series::new("nodes", nodes),
        ],
    }
}

/// Adds `(x, y)` when `y` differs from the last point (a staircase needs only the changes).
fn push_change(points: &mut Vec<(f64, f64)>, x: f64, y: f64) {
    if points.last().is_none_or(|p| p.1 != y) {
        points.push((x, y));
    }
}

fn set_progressing(world: &World, on: bool, at: Timestamp) {
    let status = if on { "True" } else { "False" };
    let time = ebb_runtime::time::rfc3339(at);
    world
        .fake
        .modify_json(CV_API, "ClusterVersion", "", "version", |cv| {
            cv["status"]["conditions"] = json!([{
                "type": "Progressing", "status": status, "lastTransitionTime": time,
                "reason": if on { "Upgrading" } else { "Done" }, "message": ""
            }]);
        });
}

struct Accounting {
    allowed_seconds: i64,
    enabled_seconds: i64,
    enabled_outside_seconds: i64,
    slowest_follow_seconds: i64,
}

/// What was allowed and what was enabled, segment by segment between every instant either
/// changed: exact to the second.
fn account(
    scenario: &Scenario,
    windows: &AnyOpen,
    upgrades: &Upgrades,
    initially: bool,
    writes: &[(Timestamp, bool)],
) -> Accounting {
    let (start, end) = (scenario.start, scenario.end());
    let allowed = |t| windows.is_open(t) || upgrades.progressing(t);
    let mut cuts: Vec<Timestamp> = vec![start, end];
    cuts.extend(
        windows
            .transitions(start, 10_000, end.duration_since(start))
            .into_iter()
            .map(|(t, _)| t),
    );
    for (at, length) in &upgrades.runs {
        cuts.extend([*at, *at + *length]);
    }
    cuts.extend(writes.iter().map(|(t, _)| *t));
    cuts.retain(|t| *t >= start && *t <= end);
    cuts.sort();
    cuts.dedup();
    let enabled_at = |t: Timestamp| {
        writes
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .map_or(initially, |(_, on)| *on)
    };
    let mut out = Accounting {
        allowed_seconds: 0,
        enabled_seconds: 0,
        enabled_outside_seconds: 0,
        slowest_follow_seconds: 0,
    };
    for pair in cuts.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let seconds = to.duration_since(from).as_secs();
        let (may, is) = (allowed(from), enabled_at(from));
        out.allowed_seconds += if may { seconds } else { 0 };
        out.enabled_seconds += if is { seconds } else { 0 };
        if is && !may {
            out.enabled_outside_seconds += seconds;
        }
        if is != may {
            out.slowest_follow_seconds = out.slowest_follow_seconds.max(seconds);
        }
    }
    out
}

#[cfg(test)]
#[path = "scaledown_window_tests.rs"]
mod tests;
