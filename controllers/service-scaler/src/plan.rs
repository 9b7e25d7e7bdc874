//! `service-scaler plan`: the schedule's decision for one ServiceScaler at one instant, offline
//! (controllers/service-scaler/README.md shows its output).
//!
//! ```text
//! service-scaler plan --file F|- [--at RFC3339] [--lenient] [--tz-data DIR] [--output json]
//! ```
//! Every ServiceScaler in the file (several documents or a `List`) is decided, one answer each;
//! fields its schema does not declare are refused (`ebb_runtime::manifest`). `--at` defaults to
//! now. The text output shows each instant in the zones the object names, beside UTC.
//! JSON output is exactly `{"name", "matchedRange": index|null, "effective": {"minReplicas",
//! "maxReplicas", "targetCPUUtilization", "targetMemoryUtilization", "hibernate"},
//! "nextTransition":
//! RFC3339|null, "tzdata"}`; a removed or unset metric target is `null`, `nextTransition` is the next
//! schedule boundary at which the scheduled settings change. `effective` includes the lead-time
//! step in force at `--at` ([`crate::lead`]: increases of minReplicas/maxReplicas stepped up
//! ahead of their boundary); lead steps are not transitions. A ramp (`spec.ramp`, spreading a
//! decrease after its boundary) depends on the HPA's state, so `plan` does not show it. The text
//! output also names the metric targets (`metricTargets`) in force; the JSON keeps its contract.
//! `tzdata` names the IANA release the zones were read from (`--tz-data`, see
//! `ebb_runtime::tz`).

use std::fmt::Write as _;

use ebb_crds::service_scaler::{HpaSettings, ServiceScaler};
use ebb_runtime::manifest::Schema;
use ebb_runtime::plan::{Output, ZonedArgs, ZonedPlanError, local_times, zones_named};
use ebb_runtime::rfc3339;
use ebb_schedule::Zone;
use jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use crate::decide::{self, Calendars, Schedule, SpecErrors};

/// How many coming transitions the text output lists.
const TEXT_PREVIEW: usize = 5;

/// Flags of `service-scaler plan`: those of every zoned `plan`.
pub type PlanArgs = ZonedArgs;

/// The JSON answer.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// `metadata.name`.
    pub name: String,
    /// Index of the range in force; `null`: the defaults.
    pub matched_range: Option<usize>,
    /// The settings in force, with the lead-time step in force.
    pub effective: Effective,
    /// The next schedule boundary (lead steps are not transitions); `null`: never.
    pub next_transition: Option<String>,
    /// The IANA tzdb release the zones were read from (`2026f`).
    pub tzdata: String,
}

/// Why `plan` cannot answer: its input, the zone data, or a field breaking a rule.
pub type PlanError = ZonedPlanError<SpecErrors>;

/// Effective settings, every key present (`null` for a removed or unset target).
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Effective {
    /// `minReplicas`.
    pub min_replicas: i32,
    /// `maxReplicas`.
    pub max_replicas: i32,
    /// `targetCPUUtilization`.
    #[serde(rename = "targetCPUUtilization")]
    pub target_cpu_utilization: Option<i32>,
    /// `targetMemoryUtilization`.
    pub target_memory_utilization: Option<i32>,
    /// Whether the HPA's target hibernates (0 replicas), the lead applied.
    pub hibernate: bool,
}

impl From<&HpaSettings> for Effective {
    fn from(s: &HpaSettings) -> Self {
        Self {
            min_replicas: s.min_replicas,
            max_replicas: s.max_replicas,
            target_cpu_utilization: s.target_cpu_utilization,
            target_memory_utilization: s.target_memory_utilization,
            hibernate: s.hibernate,
        }
    }
}

/// The schema `plan` holds a ServiceScaler to: the one ebb's CRD has.
pub fn schema() -> Schema {
    Schema::for_kind(ebb_crds::all_crds(), "ServiceScaler")
}

/// The decision for each ServiceScaler of `args`, rendered as text or JSON (with a trailing
/// newline each).
pub fn plan(args: &PlanArgs, now: Timestamp) -> Result<String, PlanError> {
    let (at, objects) =
        args.read::<ServiceScaler, PlanError>("service-scaler plan", ebb_crds::all_crds(), now)?;
    let calendars = args.calendars("service-scaler plan")?;
    let mut answers = args.output.answers();
    for scaler in &objects {
        let invalid = |invalid| PlanError::Invalid {
            path: args.path(),
            invalid,
        };
        let answer = offline(scaler, &calendars, at).map_err(invalid)?;
        let schedule = Schedule::from_spec(&scaler.spec, &calendars).map_err(invalid)?;
        answers.push(answer, |answer| text(scaler, &schedule, answer, at));
    }
    Ok(answers.finish())
}

/// The zones `scaler`'s ranges name, in which the text output shows instants.
fn zones(scaler: &ServiceScaler) -> Vec<Zone> {
    zones_named(
        scaler
            .spec
            .time_range_spec
            .iter()
            .filter_map(|range| range.time_zone.as_deref()),
    )
}

/// The decision for `scaler` at `at`, the HolidayCalendars its ranges name read from
/// `calendars`.
pub fn offline(
    scaler: &ServiceScaler,
    calendars: &Calendars,
    at: Timestamp,
) -> Result<PlanOutput, SpecErrors> {
    let schedule = Schedule::from_spec(&scaler.spec, calendars)?;
    let matched = schedule.matched_at(at);
    Ok(PlanOutput {
        name: scaler.name_any(),
        matched_range: matched,
        effective: (&crate::lead::lead_at(&schedule, at).settings).into(),
        next_transition: schedule.next_transition(at).map(rfc3339),
        tzdata: ebb_schedule::tzdata().release().to_owned(),
    })
}

/// Renders the decision for `scaler` at `at`.
pub fn render(
    scaler: &ServiceScaler,
    calendars: &Calendars,
    at: Timestamp,
    output: Output,
) -> Result<String, SpecErrors> {
    let answer = offline(scaler, calendars, at)?;
    let schedule = Schedule::from_spec(&scaler.spec, calendars)?;
    Ok(output.render(&answer, |answer| text(scaler, &schedule, answer, at)))
}

/// The text output: the decision, the coming transitions, overlaps and the ramp.
fn text(scaler: &ServiceScaler, schedule: &Schedule, answer: &PlanOutput, at: Timestamp) -> String {
    let mut out = String::new();
    let name = match scaler.namespace() {
        Some(ns) => format!("{ns}/{}", answer.name),
        None => answer.name.clone(),
    };
    let matched = answer.matched_range;
    let zones = zones(scaler);
    let _ = writeln!(
        out,
        "ServiceScaler {name} at {}{}",
        rfc3339(at),
        local_times(at, &zones)
    );
    let _ = writeln!(out, "  in force:   {}", decide::describe_range(matched));
    let lead = crate::lead::lead_at(schedule, at);
    let _ = writeln!(
        out,
        "  effective:  {}",
        decide::describe_settings(&lead.settings)
    );
    let scheduled = schedule.settings(matched);
    if scheduled.hibernate && !lead.settings.hibernate {
        let _ = writeln!(
            out,
            "  lead:       awake ahead of the hibernation's end (spec.leadTime)"
        );
    } else if lead.settings != *scheduled {
        let _ = writeln!(
            out,
            "  lead:       stepping up ahead of a coming increase (scheduled now: {}); next step {}",
            decide::describe_settings(schedule.settings(matched)),
            lead.next_step.map_or_else(|| "none".to_owned(), rfc3339)
        );
    }
    let coming = schedule.transitions(at, TEXT_PREVIEW);
    if coming.is_empty() {
        let _ = writeln!(out, "  next:       none (the settings never change again)");
    }
    for (i, t) in coming.iter().enumerate() {
        let label = if i == 0 { "next:" } else { "then:" };
        let _ = writeln!(
            out,
            "  {label:<11} {}{} -> {}: {}",
            rfc3339(t.at),
            local_times(t.at, &zones),
            decide::describe_range(t.matched_range),
            decide::describe_settings(&t.settings)
        );
    }
    for (i, range) in scaler.spec.time_range_spec.iter().enumerate() {
        let mut excluded: Vec<String> = range.exclude_dates.clone();
        excluded.extend(
            range
                .exclude_calendars
                .iter()
                .map(|name| format!("HolidayCalendar {name}")),
        );
        if !excluded.is_empty() {
            let _ = writeln!(
                out,
                "  excludes:   range {i}: {} (whole local days)",
                excluded.join(", ")
            );
        }
    }
    if let Some(message) = schedule.overlap_message(&schedule.overlaps()) {
        let _ = writeln!(out, "  overlaps:   {message}");
    }
    let tzdata = ebb_schedule::tzdata();
    let _ = writeln!(
        out,
        "  tzdata:     {} ({})",
        tzdata.release(),
        tzdata.source()
    );
    if let Some(ramp) = &scaler.spec.ramp {
        let _ = writeln!(
            out,
            "  ramp:       {ramp}: a minReplicas decrease is spread over {ramp} from its boundary (not shown)"
        );
    }
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
