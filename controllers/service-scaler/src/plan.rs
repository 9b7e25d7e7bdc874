//! `service-scaler plan`: the schedule's decision for one ServiceScaler at one instant, offline
//! (controllers/service-scaler/README.md shows its output).
//!
//! ```text
//! service-scaler plan --file F|- [--at RFC3339] [--lenient] [--tz-data DIR] [--output json]
//! ```
//! Every ServiceScaler and every FleetSchedule in the file (several documents or a `List`) is
//! decided, one answer each (a FleetSchedule's: [`crate::fleet::plan`]); fields their schemas do
//! not declare are refused (`ebb_runtime::cli::manifest`). The HPAs and HolidayCalendars of the input
//! stand for the cluster's, beside those of `--calendars`; other kinds are skipped. `--at`
//! defaults to now. The text output shows each instant in the zones the object names, beside
//! UTC.
//! The answer is the controller's own decision ([`decide::decide_scaling`], the entry every
//! pass calls) on the object as given: the input stands for the cluster, so the HPA it would
//! manage is the input's HPA of its name, or absent (the decision creates it), and no workload
//! is read. A paused ServiceScaler is decided as it will be on its resume,
//! and `paused` says why nothing is written until then.
//!
//! JSON output is exactly `{"name", "matchedRange": index|null, "effective": {"minReplicas",
//! "maxReplicas", "targetCPUUtilization", "targetMemoryUtilization", "hibernate"},
//! "nextTransition": RFC3339|null, "paused": message|null, "tzdata"}`: the status the decision
//! writes. A removed or unset metric target is `null`; `nextTransition` is the first of the
//! status's `nextTransitions`, the next schedule boundary at which the scheduled settings
//! change. `effective` is the HPA's settings (`lastKnownConfig`), the lead-time step in force at
//! `--at` included ([`crate::lead`]: increases of minReplicas/maxReplicas stepped up ahead of
//! their boundary); lead steps are not transitions. A ramp (`spec.ramp`, spreading a decrease
//! after its boundary) starts from the HPA's state, which the input lacks, so `plan` does not
//! show it. The text output also names the metric targets (`metricTargets`) in force; the JSON
//! keeps its contract.
//! `tzdata` names the IANA release the zones were read from (`--tz-data`, see
//! `ebb_runtime::cli::tz`).

use std::fmt::Write as _;

use ebb_core::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};
use ebb_core::time::from_k8s_time;
use ebb_crds::service_scaler::{HpaSettings, ServiceScaler, ServiceScalerStatus};
use ebb_runtime::cli::manifest::Schema;
use ebb_runtime::cli::plan::{Output, ZonedArgs, ZonedPlanError, local_times, zones_named};
use ebb_runtime::rfc3339;
use ebb_schedule::Zone;
use jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use crate::decide::{
    self, CONDITION_RANGES_OVERLAP, Calendars, Decision, ManagedState, Observed, PAUSED, SpecError,
    SpecErrors,
};
use crate::fleet::plan::{self as fleet_plan, Cluster, FleetPlanOutput};
use ebb_crds::calendar::HolidayCalendar;
use ebb_crds::fleet::FleetSchedule;
use ebb_runtime::cli::manifest::{self, ManifestError};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

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
    /// Why nothing is written while the ServiceScaler is paused (the decision is its resume's);
    /// `null`: not paused.
    pub paused: Option<String>,
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

/// One answer of `plan`: a ServiceScaler's, or a FleetSchedule's.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum Answer {
    /// A ServiceScaler's (its JSON as it always was).
    ServiceScaler(PlanOutput),
    /// A FleetSchedule's ([`crate::fleet::plan`]).
    FleetSchedule(FleetPlanOutput),
}

/// The decision for each ServiceScaler and FleetSchedule of `args`, rendered as text or JSON
/// (with a trailing newline each). The HPAs of the input stand for the cluster's: a
/// ServiceScaler is decided on the HPA of its name, a FleetSchedule's members are those it
/// schedules.
pub fn plan(args: &PlanArgs, now: Timestamp) -> Result<String, PlanError> {
    const PROGRAM: &str = "service-scaler plan";
    let (at, read) = args.read_with::<ServiceScaler, PlanError>(
        PROGRAM,
        ebb_crds::all_crds(),
        now,
        &[
            "FleetSchedule",
            "HorizontalPodAutoscaler",
            "HolidayCalendar",
        ],
    )?;
    let mut calendars = args.calendars(PROGRAM)?;
    let (fleets, hpas) = companions(&read.companions, &args.path(), &mut calendars)?;
    if read.objects.is_empty() && fleets.is_empty() {
        return Err(ManifestError::Nothing {
            path: args.path(),
            kind: "ServiceScaler or FleetSchedule".to_owned(),
            skipped: read.skipped.len(),
        }
        .into());
    }
    let invalid = |invalid| PlanError::Invalid {
        path: args.path(),
        invalid,
    };
    let mut answers = args.output.answers();
    for scaler in &read.objects {
        let hpa = hpas.iter().find(|hpa| {
            hpa.namespace() == scaler.namespace() && hpa.name_any() == scaler.name_any()
        });
        let decided = Decided::of_with(scaler, hpa, &calendars, at).map_err(invalid)?;
        answers.push(
            Answer::ServiceScaler(decided.output(scaler)),
            |answer| match answer {
                Answer::ServiceScaler(answer) => text(scaler, &decided, answer, at),
                Answer::FleetSchedule(_) => String::new(),
            },
        );
    }
    let scalers: Vec<String> = read
        .objects
        .iter()
        .map(|s| format!("{}/{}", s.namespace().unwrap_or_default(), s.name_any()))
        .collect();
    let cluster = Cluster {
        fleets: &fleets,
        hpas: &hpas,
        scalers: &scalers,
        calendars: &calendars,
    };
    for fleet in &fleets {
        let answer = fleet_plan::offline(fleet, &cluster, at).map_err(|message| {
            invalid(SpecErrors(vec![SpecError {
                field: format!("FleetSchedule {}", fleet.name_any()),
                rule: message,
            }]))
        })?;
        answers.push(Answer::FleetSchedule(answer), |answer| match answer {
            Answer::FleetSchedule(answer) => fleet_plan::text(fleet, answer, at),
            Answer::ServiceScaler(_) => String::new(),
        });
    }
    Ok(answers.finish())
}

/// The FleetSchedules and the HPAs of the input, each read as its type, and its
/// HolidayCalendars added to `calendars`; an object that does not fit its type is refused,
/// naming the field.
fn companions(
    values: &[serde_json::Value],
    path: &str,
    calendars: &mut Calendars,
) -> Result<(Vec<FleetSchedule>, Vec<HorizontalPodAutoscaler>), ManifestError> {
    let mut fleets = Vec::new();
    let mut hpas = Vec::new();
    for value in values {
        match value.get("kind").and_then(serde_json::Value::as_str) {
            Some("FleetSchedule") => fleets.push(manifest::companion(value, path)?),
            Some("HolidayCalendar") => {
                let calendar: HolidayCalendar = manifest::companion(value, path)?;
                calendars.insert(&calendar.name_any(), &calendar.spec.dates);
            }
            _ => hpas.push(manifest::companion(value, path)?),
        }
    }
    Ok((fleets, hpas))
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

/// The controller's decision for one ServiceScaler, offline (see the module docs).
struct Decided {
    /// The decision: what the pass writes, and what it decided from.
    decision: Decision,
    /// The status the decision leaves: the one it writes, or the input's when it writes none.
    status: ServiceScalerStatus,
    /// The `Paused` condition's message, when the ServiceScaler is paused.
    paused: Option<String>,
}

impl Decided {
    /// The decision for `scaler` at `at`, or every rule its spec breaks.
    fn of(
        scaler: &ServiceScaler,
        calendars: &Calendars,
        at: Timestamp,
    ) -> Result<Self, SpecErrors> {
        Self::of_with(scaler, None, calendars, at)
    }

    /// [`Decided::of`] with the HPA of its name, as the input holds it.
    fn of_with(
        scaler: &ServiceScaler,
        hpa: Option<&HorizontalPodAutoscaler>,
        calendars: &Calendars,
        at: Timestamp,
    ) -> Result<Self, SpecErrors> {
        let decide = |scaler: &ServiceScaler| {
            decide::decide_scaling(
                &Observed {
                    scaler,
                    hpa,
                    scale: None,
                    calendars,
                    dry_run: false,
                    ledger: None,
                },
                at,
            )
        };
        let mut decision = decide(scaler);
        let mut paused = None;
        if decision.state == ManagedState::Paused {
            paused = ebb_core::find_condition(&status_of(&decision, scaler).conditions, PAUSED)
                .map(|condition| condition.message.clone());
            let mut resumed = scaler.clone();
            if let Some(annotations) = resumed.metadata.annotations.as_mut() {
                annotations.remove(PAUSED_ANNOTATION);
                annotations.remove(PAUSED_UNTIL_ANNOTATION);
            }
            decision = decide(&resumed);
        }
        if let Some(errors) = decision.invalid.take() {
            return Err(errors);
        }
        Ok(Self {
            status: status_of(&decision, scaler),
            decision,
            paused,
        })
    }

    /// The JSON answer.
    fn output(&self, scaler: &ServiceScaler) -> PlanOutput {
        PlanOutput {
            name: scaler.name_any(),
            matched_range: self.matched_range(),
            effective: (&self.effective()).into(),
            next_transition: self
                .status
                .next_transitions
                .first()
                .map(|t| rfc3339(from_k8s_time(&t.at))),
            paused: self.paused.clone(),
            tzdata: ebb_schedule::tzdata().release().to_owned(),
        }
    }

    fn matched_range(&self) -> Option<usize> {
        self.status
            .matched_range
            .and_then(|i| usize::try_from(i).ok())
    }

    /// The settings the HPA gets.
    fn effective(&self) -> HpaSettings {
        self.status.last_known_config.clone().unwrap_or_default()
    }
}

/// The status `decision` leaves on `scaler`.
fn status_of(decision: &Decision, scaler: &ServiceScaler) -> ServiceScalerStatus {
    decision
        .status
        .clone()
        .or_else(|| scaler.status.clone())
        .unwrap_or_default()
}

/// The decision for `scaler` at `at`, the HolidayCalendars its ranges name read from
/// `calendars`.
pub fn offline(
    scaler: &ServiceScaler,
    calendars: &Calendars,
    at: Timestamp,
) -> Result<PlanOutput, SpecErrors> {
    Ok(Decided::of(scaler, calendars, at)?.output(scaler))
}

/// Renders the decision for `scaler` at `at`.
pub fn render(
    scaler: &ServiceScaler,
    calendars: &Calendars,
    at: Timestamp,
    output: Output,
) -> Result<String, SpecErrors> {
    let decided = Decided::of(scaler, calendars, at)?;
    let answer = decided.output(scaler);
    Ok(output.render(&answer, |answer| text(scaler, &decided, answer, at)))
}

/// The text output: the decision, the coming transitions, overlaps and the ramp.
fn text(scaler: &ServiceScaler, decided: &Decided, answer: &PlanOutput, at: Timestamp) -> String {
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
    if let Some(paused) = &decided.paused {
        let _ = writeln!(
            out,
            "  paused:     {paused}; nothing is written until it resumes, as below"
        );
    }
    let _ = writeln!(out, "  in force:   {}", decide::describe_range(matched));
    let effective = decided.effective();
    let _ = writeln!(
        out,
        "  effective:  {}",
        decide::describe_settings(&effective)
    );
    if let Some(scheduled) = &decided.decision.scheduled {
        if scheduled.hibernate && !effective.hibernate {
            let _ = writeln!(
                out,
                "  lead:       awake ahead of the hibernation's end (spec.leadTime)"
            );
        } else if effective != *scheduled {
            let _ = writeln!(
                out,
                "  lead:       stepping up ahead of a coming increase (scheduled now: {}); next step {}",
                decide::describe_settings(scheduled),
                decided
                    .decision
                    .lead_step
                    .map_or_else(|| "none".to_owned(), rfc3339)
            );
        }
    }
    let coming = &decided.status.next_transitions;
    if coming.is_empty() {
        let _ = writeln!(out, "  next:       none (the settings never change again)");
    }
    for (i, t) in coming.iter().enumerate() {
        let label = if i == 0 { "next:" } else { "then:" };
        let at = from_k8s_time(&t.at);
        let _ = writeln!(
            out,
            "  {label:<11} {}{} -> {}: {}",
            rfc3339(at),
            local_times(at, &zones),
            decide::describe_range(t.matched_range.and_then(|i| usize::try_from(i).ok())),
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
    let overlaps = ebb_core::find_condition(&decided.status.conditions, CONDITION_RANGES_OVERLAP);
    if let Some(overlap) = overlaps.filter(|c| c.status == "True") {
        let _ = writeln!(out, "  overlaps:   {}", overlap.message);
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
