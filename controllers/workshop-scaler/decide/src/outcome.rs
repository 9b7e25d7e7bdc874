//! The whole plan of one pass over a WorkshopProvision: which writes, in which order, the
//! conditions they carry, the Events that go with them, the gauges and when to look again. The
//! reconciler reads, [`decide`](crate::decide) calls [`outcome`] once with one `now`, and the plan
//! it makes of it ([`crate::plan_of`]) is executed.
//!
//! Write order (each preconditioned on the resourceVersion the previous one returned):
//! 1. a stale release annotation is removed ([`Outcome::remove_stale_release`]);
//! 2. the status through the status subresource ([`Outcome::status`]): for a scale-up the flag with
//!    from/target, for a release the cleared flag, otherwise the conditions when they changed;
//! 3. the absolute `spec.count` ([`Outcome::count`]);
//! 4. the Events ([`Outcome::notices`]), once the writes succeeded;
//! 5. the release annotation, once it has done its work ([`Outcome::remove_release`]).

use std::time::Duration;

use ebb_core::conditions::{is_condition_true, set_condition};
use ebb_core::pause::{CONDITION_PAUSED, PauseReport};
use ebb_core::{ConditionUpdate, Notice, to_k8s_time};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde_json::{Map, Value, json};

use super::{
    CONDITION_AT_MAX, CONDITION_AUTO_SCALING, Config, Counts, Decision, EarlyRelease, Hold,
    Settings, claims_to_record, conditions, decide_scaling,
};

/// One observation of a provision, the provision gauges (the binary's `Metrics::observe`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// assigned / total of the workshop, when it has seats.
    pub utilization: Option<f64>,
    /// `spec.count`.
    pub count: i32,
    /// The count the provision should have (the target while a scale-up is in flight).
    pub desired_count: i32,
    /// `status.autoScalingActive`.
    pub active: bool,
    /// `spec.count >= maxProvisions`.
    pub at_max: bool,
    /// At `maxProvisions` while utilization is at or above the threshold: attendees may find no
    /// seat and ebb cannot help (what the at-cap alert fires on).
    pub at_max_with_demand: bool,
}

/// What [`outcome`] decides from.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// The effective settings (provision, Workshop, policies).
    pub settings: &'a Settings,
    /// The first pause annotation in force, reported the shared way.
    pub pause: Option<&'a PauseReport>,
    /// The provision, its seats and claims (seats and claims only read when they can matter:
    /// enabled, not paused, and claims only while a scale-up is in flight).
    pub observed: &'a Counts,
    /// `status.conditions` as read.
    pub conditions: &'a [Condition],
    /// [`super::RELEASE_ANNOTATION`] is on the provision, whatever its value.
    pub release_annotation: bool,
    /// `--dry-run`: decide and report, write neither the flag nor the count.
    pub dry_run: bool,
    /// The one instant of this pass.
    pub now: Timestamp,
}

/// What to do with the provision's gauges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gauges {
    /// Leave them as they are (paused, or no valid configuration to measure against).
    Keep,
    /// Auto-scaling is off: remove the provision's series.
    Forget,
    /// Set them.
    Observe(Observation),
}

/// The whole plan of one pass, executed in the order of the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The decision (`None` while paused), for logs.
    pub decision: Option<Decision>,
    /// One human sentence on why.
    pub reason: String,
    /// Remove a release annotation left with nothing in flight: left in place it would release
    /// the next scale-up at once.
    pub remove_stale_release: bool,
    /// The `status` merge patch (without the resourceVersion precondition), if any.
    pub status: Option<Map<String, Value>>,
    /// `spec.count`, written absolute after the status.
    pub count: Option<i32>,
    /// A scale-up is applied by this plan (counted, logged).
    pub scaled_up: bool,
    /// Events to record once the writes succeeded, in order.
    pub notices: Vec<Notice>,
    /// Remove the release annotation once the release is written.
    pub remove_release: bool,
    /// The gauges.
    pub gauges: Gauges,
    /// When to look again; `None`: when something changes.
    pub requeue: Option<Duration>,
}

impl Outcome {
    pub(crate) fn quiet(decision: Option<Decision>, reason: String, gauges: Gauges) -> Self {
        Self {
            decision,
            reason,
            remove_stale_release: false,
            status: None,
            count: None,
            scaled_up: false,
            notices: Vec::new(),
            remove_release: false,
            gauges,
            requeue: None,
        }
    }
}

/// The whole plan for one provision at `input.now`.
pub fn outcome(input: &Input<'_>) -> Outcome {
    let count = input.observed.count;
    if *input.settings == Settings::Disabled {
        // Backward compatible: not one write, not even status.
        let reason = Decision::Disabled.reason(count, None);
        return Outcome::quiet(Some(Decision::Disabled), reason, Gauges::Forget);
    }
    if let Some(report) = input.pause {
        return paused(report, input.conditions, input.now);
    }
    let config = input.settings.config();
    let decision = decide_scaling(input.settings, input.observed, input.now);
    let reason = decision.reason(count, config);
    let gauges = config.map_or(Gauges::Keep, |c| {
        Gauges::Observe(observation(c, &decision, input.observed, input.dry_run))
    });
    let (conditions, changed) = next_conditions(input, &decision, config, &reason);
    let mut plan = Outcome::quiet(None, reason, gauges);
    plan.remove_stale_release =
        input.release_annotation && input.observed.in_flight.is_none() && !input.dry_run;
    if input.dry_run && acts(&decision) {
        // Dry run: the status says what would happen; the flag and the count stay as they are.
        if changed {
            plan.status = Some(status_body(Map::new(), &conditions));
            let note = format!("dry run: {}", plan.reason);
            plan.notices
                .push(Notice::normal("DryRun", action_of(&decision), note));
        }
    } else {
        apply(input, &decision, config, &conditions, changed, &mut plan);
        let reached_max = !is_condition_true(input.conditions, CONDITION_AT_MAX)
            && is_condition_true(&conditions, CONDITION_AT_MAX)
            && decision.scales();
        if reached_max {
            let note = format!(
                "count {} reached maxProvisions {}",
                decision.desired_count(count),
                config.map_or(0, |c| c.max_provisions)
            );
            plan.notices
                .push(Notice::warning("ReachedMaxProvisions", "Scale", note));
        }
    }
    plan.decision = Some(decision);
    plan
}

/// Paused: the shared `Paused` condition (and its Event when it is news), nothing else; look
/// again when the pause ends.
fn paused(report: &PauseReport, old: &[Condition], now: Timestamp) -> Outcome {
    let mut conditions = old.to_vec();
    let mut plan = Outcome::quiet(None, report.pause.to_string(), Gauges::Keep);
    if set_condition(&mut conditions, report.condition.clone(), now) {
        plan.status = Some(status_body(Map::new(), &conditions));
        if let Some((kind, reason, note)) = &report.event {
            plan.notices.push(Notice {
                kind: *kind,
                reason,
                action: "Pause",
                note: note.clone(),
            });
        }
    }
    plan.requeue = report.pause.resume_at().map(|at| requeue_at(at, now));
    plan
}

/// The gauges after `decision`.
fn observation(
    config: &Config,
    decision: &Decision,
    observed: &Counts,
    dry_run: bool,
) -> Observation {
    let desired = match &observed.in_flight {
        Some(f) if !decision.scales() => f.target.unwrap_or(observed.count).max(observed.count),
        _ => decision.desired_count(observed.count),
    };
    let utilization = observed.seats.utilization();
    Observation {
        utilization,
        count: observed.count,
        desired_count: desired,
        active: observed.in_flight.is_some()
            || (matches!(decision, Decision::Start { .. }) && !dry_run),
        at_max: desired >= config.max_provisions,
        at_max_with_demand: desired >= config.max_provisions
            && utilization.is_some_and(|u| u >= config.threshold),
    }
}

/// Whether `decision` writes the flag or the count.
fn acts(decision: &Decision) -> bool {
    matches!(
        decision,
        Decision::Start { .. }
            | Decision::Finish { .. }
            | Decision::Release { .. }
            | Decision::Cancel { .. }
            | Decision::ReleaseEarly { .. }
    )
}

/// The conditions after `decision` (a dry run that would act says so instead of the
/// `AutoScaling` one), and whether any changed. No observedGeneration: the conditions follow
/// seats and claims as much as the spec, and stamping it would rewrite the status after every
/// scale-up (the count write bumps it).
fn next_conditions(
    input: &Input<'_>,
    decision: &Decision,
    config: Option<&Config>,
    reason: &str,
) -> (Vec<Condition>, bool) {
    let in_flight = input.observed.in_flight.as_ref();
    let mut updates = conditions(decision, config, input.observed.count, in_flight);
    if input.dry_run && acts(decision) {
        updates.retain(|u| u.type_ != CONDITION_AUTO_SCALING);
        updates.push(ConditionUpdate::new(
            CONDITION_AUTO_SCALING,
            in_flight.is_some(),
            "DryRun",
            format!("dry run, nothing written: {reason}"),
        ));
    }
    if is_condition_true(input.conditions, CONDITION_PAUSED) {
        updates.push(ConditionUpdate::new(
            CONDITION_PAUSED,
            false,
            "Resumed",
            "no pause annotation is in force",
        ));
    }
    let mut conditions = input.conditions.to_vec();
    let mut changed = false;
    for update in updates {
        changed |= set_condition(&mut conditions, update, input.now);
    }
    (conditions, changed)
}

/// The writes, Events and requeue of a decision that is carried out.
fn apply(
    input: &Input<'_>,
    decision: &Decision,
    config: Option<&Config>,
    conditions: &[Condition],
    changed: bool,
    plan: &mut Outcome,
) {
    let now = input.now;
    let in_flight = input.observed.in_flight.as_ref();
    match decision {
        Decision::Start { from, to, .. } => {
            let mut fields = Map::new();
            fields.insert("autoScalingActive".into(), json!(true));
            fields.insert("autoScalingStartedAt".into(), json!(to_k8s_time(now)));
            fields.insert("autoScalingFromCount".into(), json!(from));
            fields.insert("autoScalingTargetCount".into(), json!(to));
            // The flag first; then the count, preconditioned on the version the flag write
            // produced. A conflict in between leaves the flag set with from/target: the next
            // pass finishes the scale-up (or sees it already applied).
            plan.status = Some(status_body(fields, conditions));
            scale(plan, *to);
            plan.requeue = deadline(config, now, now);
        }
        Decision::Finish { to, .. } => {
            // The conditions were written with the flag; a later pass catches up if not.
            let started = in_flight.and_then(|f| f.started_at).unwrap_or(now);
            scale(plan, *to);
            plan.requeue = deadline(config, started, now);
        }
        Decision::Release { .. } | Decision::Cancel { .. } | Decision::ReleaseEarly { .. } => {
            let mut fields = Map::new();
            fields.insert("autoScalingActive".into(), json!(false));
            // Merge-patch nulls remove the fields: they only mean something while in flight.
            fields.insert("autoScalingStartedAt".into(), Value::Null);
            fields.insert("autoScalingFromCount".into(), Value::Null);
            fields.insert("autoScalingTargetCount".into(), Value::Null);
            fields.insert("autoScalingClaims".into(), Value::Null);
            // The from-count guard outlives the scale-up: no second one from the same count.
            if let Some(from) = in_flight.and_then(|f| f.from) {
                fields.insert("autoScalingLastFromCount".into(), json!(from));
            }
            plan.status = Some(status_body(fields, conditions));
            let note = plan.reason.clone();
            plan.notices.push(match decision {
                Decision::Release { .. } => Notice::normal("ScaleUpComplete", "Release", note),
                Decision::ReleaseEarly {
                    cause: EarlyRelease::Requested,
                } => Notice::normal("ScaleUpReleased", "Release", note),
                Decision::ReleaseEarly { .. } => {
                    Notice::warning("ScaleUpReleased", "Release", note)
                }
                _ => Notice::warning("ScaleUpCancelled", "Release", note),
            });
            // The annotation has done its work; a conflict removing it re-reads, finds nothing
            // in flight, and removes it as stale.
            plan.remove_release = input.release_annotation;
        }
        Decision::Wait { deadline, .. } => {
            let fields = recorded_claims(input);
            if changed || !fields.is_empty() {
                plan.status = Some(status_body(fields, conditions));
            }
            plan.requeue = deadline.map(|at| requeue_at(at, now));
        }
        Decision::Stuck { .. }
        | Decision::Hold(_)
        | Decision::Invalid(_)
        | Decision::Ambiguous { .. } => {
            let fields = recorded_claims(input);
            if changed || !fields.is_empty() {
                plan.status = Some(status_body(fields, conditions));
                plan.notices
                    .extend(report(decision, input.conditions, conditions, &plan.reason));
            }
        }
        // Handled before anything is decided.
        Decision::Disabled => {}
    }
}

/// `status.autoScalingClaims` when claims are seen unsettled for the first time in flight
/// ([`claims_to_record`]), else nothing.
fn recorded_claims(input: &Input<'_>) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(claims) = claims_to_record(input.observed) {
        fields.insert("autoScalingClaims".into(), json!(claims));
    }
    fields
}

/// A scale-up to `to` applied now: the count write, the counter and the Event.
fn scale(plan: &mut Outcome, to: i32) {
    plan.count = Some(to);
    plan.scaled_up = true;
    plan.notices
        .push(Notice::normal("ScaledUp", "Scale", plan.reason.clone()));
}

/// The Warning that goes with a decision that only reports, when its condition changed.
fn report(
    decision: &Decision,
    old: &[Condition],
    new: &[Condition],
    reason: &str,
) -> Option<Notice> {
    let warning = |event, action| Some(Notice::warning(event, action, reason));
    match decision {
        Decision::Stuck { .. } => warning("ClaimsStuck", "Wait"),
        Decision::Invalid(_) => warning("InvalidConfig", "Validate"),
        Decision::Ambiguous { .. } => warning("AmbiguousPolicies", "Validate"),
        Decision::Hold(Hold::AtMaxProvisions { .. })
            if reason_changed(old, new, CONDITION_AUTO_SCALING) =>
        {
            warning("AtMaxProvisions", "Scale")
        }
        _ => None,
    }
}

fn action_of(decision: &Decision) -> &'static str {
    match decision {
        Decision::Start { .. } | Decision::Finish { .. } => "Scale",
        _ => "Release",
    }
}

fn reason_changed(old: &[Condition], new: &[Condition], type_: &str) -> bool {
    let reason = |list: &[Condition]| {
        list.iter()
            .find(|c| c.type_ == type_)
            .map(|c| c.reason.clone())
    };
    reason(old) != reason(new)
}

/// While in flight: come back when the hold-down expires (the only timer of this controller).
fn deadline(config: Option<&Config>, started: Timestamp, now: Timestamp) -> Option<Duration> {
    config.map(|c| {
        let at = started.checked_add(c.active_timeout).unwrap_or(started);
        requeue_at(at, now)
    })
}

/// From `now` until `at`, with a second of slack so the deadline has passed when we look.
fn requeue_at(at: Timestamp, now: Timestamp) -> Duration {
    std::time::Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)
        + Duration::from_secs(1)
}

/// A `status` merge patch: `fields` and the whole conditions list.
fn status_body(mut fields: Map<String, Value>, conditions: &[Condition]) -> Map<String, Value> {
    fields.insert(
        "conditions".into(),
        serde_json::to_value(conditions).unwrap_or(Value::Array(Vec::new())),
    );
    fields
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
pub(crate) mod tests;
