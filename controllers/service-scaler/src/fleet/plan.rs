//! `service-scaler plan` for a FleetSchedule: the room's own two decisions, offline, with the
//! input standing for the cluster. The FleetSchedule's status is [`decide::fleets::decide`]'s on
//! the FleetSchedules, ServiceScalers and HPAs of the input; each HPA of the input it schedules is
//! decided by [`decide::members::decide`], as its pass would be, and says what it would write.
//! HPAs the input lacks are absent: a FleetSchedule planned alone has no members.
//!
//! `spec.namespaces` counts only for a FleetSchedule in ebb's own namespace of a cluster-wide
//! install, which a file cannot say: `plan` honours it, and the cluster's `SpecValid` says when
//! an install does not.
//!
//! JSON output: `{"kind": "FleetSchedule", "name", "namespace", "members": [{"hpa":
//! "namespace/name", "writes": [...]}], "matchedRange": index|null, "nextTransition":
//! RFC3339|null, "conflict": message|null, "paused": message|null, "tzdata"}`; a member's
//! `writes` are the Events its pass would record (none: it holds its settings already).

use std::fmt::Write as _;

use ebb_core::find_condition;
use ebb_crds::fleet::{FleetSchedule, FleetScheduleStatus};
use ebb_runtime::cli::plan::{local_times, zones_named};
use ebb_runtime::rfc3339;
use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use serde::Serialize;

use crate::decide::{self, CONDITION_CONFLICT, Calendars, Claim, PAUSED, Reach};

/// The JSON answer for one FleetSchedule.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FleetPlanOutput {
    /// Always `FleetSchedule`: a `plan` answer names its kind where the input holds several.
    pub kind: &'static str,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// The HPAs of the input it schedules, and what each one's pass would write.
    pub members: Vec<MemberPlan>,
    /// Index of the range in force; `null` outside every range.
    pub matched_range: Option<i32>,
    /// When the range in force next changes; `null`: never.
    pub next_transition: Option<String>,
    /// Another FleetSchedule of the input matches some of the same HPAs (the older schedules
    /// them); `null`: none.
    pub conflict: Option<String>,
    /// Why nothing is written while it is paused; `null`: not paused.
    pub paused: Option<String>,
    /// The IANA tzdb release the zones were read from.
    pub tzdata: String,
}

/// One member's pass.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MemberPlan {
    /// `namespace/name`.
    pub hpa: String,
    /// The Events its pass would record, one per change; none when it holds its settings.
    pub writes: Vec<String>,
}

/// What the input holds besides the FleetSchedule: every FleetSchedule, the HPAs, and the names
/// (`namespace/name`) of the ServiceScalers, which take their HPAs over.
pub struct Cluster<'a> {
    /// Every FleetSchedule of the input.
    pub fleets: &'a [FleetSchedule],
    /// Every HPA of the input.
    pub hpas: &'a [HorizontalPodAutoscaler],
    /// The ServiceScalers of the input, as `namespace/name`.
    pub scalers: &'a [String],
    /// The HolidayCalendars of `--calendars`.
    pub calendars: &'a Calendars,
}

/// Where `plan` places ebb: cluster-wide, in `fleet`'s namespace (see the module docs).
fn reach(fleet: &FleetSchedule) -> Reach<'_> {
    Reach {
        home: fleet.metadata.namespace.as_deref(),
        cluster_wide: true,
    }
}

/// `fleet` at `at`, as its two reconcilers would decide it on `cluster`.
///
/// # Errors
/// A rule its spec breaks (the `SpecValid` message), as the controller would report it.
pub fn offline(
    fleet: &FleetSchedule,
    cluster: &Cluster<'_>,
    at: Timestamp,
) -> Result<FleetPlanOutput, String> {
    let fleets: Vec<&FleetSchedule> = cluster.fleets.iter().collect();
    let metas: Vec<&ObjectMeta> = cluster.hpas.iter().map(|h| &h.metadata).collect();
    let has_scaler = |meta: &ObjectMeta| {
        let key = format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        );
        cluster.scalers.contains(&key)
    };
    // Decided as the cluster would first decide it: no status yet, so the patch is the status.
    let mut fresh = fleet.clone();
    fresh.status = None;
    let plan = decide::fleets::decide(
        &decide::fleets::Observed {
            fleet: &fresh,
            fleets: &fleets,
            hpas: &metas,
            service_scaler: &has_scaler,
            reach: reach(fleet),
            calendars: cluster.calendars,
        },
        at,
    );
    let status: FleetScheduleStatus = plan
        .status
        .as_ref()
        .and_then(|s| s.patch.get("status"))
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default();
    let condition = |type_: &str| {
        find_condition(&status.conditions, type_)
            .filter(|c| c.status == "True")
            .map(|c| c.message.clone())
    };
    if let Some(invalid) = find_condition(&status.conditions, decide::CONDITION_SPEC_VALID)
        .filter(|c| c.status == "False")
    {
        return Err(invalid.message.clone());
    }
    let key = decide::fleet_key(fleet);
    let members = cluster
        .hpas
        .iter()
        .filter_map(|hpa| {
            let reads = decide::members::reads(
                hpa,
                fleets.iter().copied(),
                has_scaler(&hpa.metadata),
                reach(fleet),
            );
            let ours = matches!(&reads.claim, Claim::Fleet { winner, .. }
                if decide::fleet_key(winner) == key);
            ours.then(|| {
                let plan = decide::members::decide(
                    &decide::members::Observed {
                        hpa,
                        claim: &reads.claim,
                        scale: None,
                        calendars: cluster.calendars,
                        dry_run: false,
                    },
                    at,
                );
                MemberPlan {
                    hpa: format!("{}/{}", hpa.namespace().unwrap_or_default(), hpa.name_any()),
                    writes: plan.notes(),
                }
            })
        })
        .collect();
    Ok(FleetPlanOutput {
        kind: "FleetSchedule",
        name: fleet.name_any(),
        namespace: fleet.namespace().unwrap_or_default(),
        members,
        matched_range: status.matched_range,
        next_transition: status
            .next_transition
            .as_ref()
            .map(|t| rfc3339(ebb_core::from_k8s_time(t))),
        conflict: condition(CONDITION_CONFLICT),
        paused: condition(PAUSED),
        tzdata: ebb_schedule::tzdata().release().to_owned(),
    })
}

/// The text output.
pub fn text(fleet: &FleetSchedule, answer: &FleetPlanOutput, at: Timestamp) -> String {
    let mut out = String::new();
    let zones = zones_named(
        fleet
            .spec
            .time_range_spec
            .iter()
            .filter_map(|range| range.time_zone.as_deref()),
    );
    let _ = writeln!(
        out,
        "FleetSchedule {}/{} at {}{}",
        answer.namespace,
        answer.name,
        rfc3339(at),
        local_times(at, &zones)
    );
    if let Some(paused) = &answer.paused {
        let _ = writeln!(
            out,
            "  paused:     {paused}; nothing is written until it resumes"
        );
    }
    let matched = answer.matched_range.and_then(|i| usize::try_from(i).ok());
    let _ = writeln!(out, "  in force:   {}", decide::describe_range(matched));
    let _ = writeln!(
        out,
        "  next:       {}",
        answer.next_transition.as_deref().unwrap_or("none")
    );
    if let Some(conflict) = &answer.conflict {
        let _ = writeln!(out, "  conflict:   {conflict}");
    }
    if answer.members.is_empty() {
        let _ = writeln!(out, "  members:    none among the HPAs of the input");
    }
    for member in &answer.members {
        match member.writes.as_slice() {
            [] => {
                let _ = writeln!(out, "  member:     HPA {}: holds its settings", member.hpa);
            }
            writes => {
                for write in writes {
                    let _ = writeln!(out, "  member:     HPA {}: {write}", member.hpa);
                }
            }
        }
    }
    let _ = writeln!(out, "  tzdata:     {}", answer.tzdata);
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
