//! `scaledown-window plan --file F|- [--at RFC3339] [--lenient] [--tz-data DIR] [--output json]
//! [--upgrading] [--updating-pool NAME]...`: whether each ScaleDownSchedule of the file allows
//! scale-down at an instant (default now), and when that flips next, offline. Fields the schema
//! does not declare are refused (`ebb_runtime::cli::manifest`); the text output shows each instant in
//! the zones the windows name, beside UTC.
//!
//! Whether cluster maintenance is under way (`maintenance.followClusterUpgrade`) cannot be known
//! offline: none is assumed unless `--upgrading` or `--updating-pool` is given.

use std::fmt::Write as _;

use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::cli::plan::{ZonedArgs, ZonedPlanError, local_times, zones_named};
use ebb_schedule::Zone;
use jiff::Timestamp;
use serde::Serialize;

use crate::decide::{self, Calendars, ClusterMaintenance, Decision, InvalidSpec, Reason};

/// The `plan` subcommand's flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PlanArgs {
    /// `--file`, `--at`, `--lenient`, `--tz-data`, `--output`.
    #[command(flatten)]
    pub zoned: ZonedArgs,
    /// Assume the cluster is upgrading (ClusterVersion Progressing=True); without it, it is not.
    #[arg(long)]
    pub upgrading: bool,
    /// Assume this MachineConfigPool is updating (Updating=True); repeatable.
    #[arg(long = "updating-pool", value_name = "NAME")]
    pub updating_pools: Vec<String>,
}

impl PlanArgs {
    /// The maintenance the flags assume.
    pub fn maintenance(&self) -> ClusterMaintenance {
        ClusterMaintenance::new(self.upgrading, self.updating_pools.clone())
    }
}

/// Why `plan` cannot answer: its input, the zone data, or a field breaking a rule.
pub type PlanError = ZonedPlanError<InvalidSpec>;

/// The answer, as JSON: exactly these fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// `metadata.name`.
    pub name: String,
    /// Whether scale-down is allowed at the instant.
    pub scale_down_enabled: bool,
    /// The first open window, in list order.
    pub active_window: Option<usize>,
    /// The next instant `scaleDownEnabled` flips (RFC 3339, UTC), `null` when it never does.
    pub next_transition: Option<String>,
    /// The IANA tzdb release the zones were read from (`2026f`).
    pub tzdata: String,
}

/// Decides `schedule` at `at`. Unlike the controller, which holds scale-down disabled on an
/// invalid schedule (fail-safe), `plan` reports the field and the rule broken.
///
/// # Errors
/// The first invalid field: the target (exactly one kind, valid selectors) or a window.
pub fn offline(
    schedule: &ScaleDownSchedule,
    calendars: &Calendars,
    at: Timestamp,
    maintenance: &ClusterMaintenance,
) -> Result<(PlanOutput, Decision), InvalidSpec> {
    decide::resolve_target(&schedule.spec.target)?;
    let decision = decide::decide_windows(&schedule.spec, calendars, at, maintenance);
    if let Reason::InvalidSchedule(invalid) = &decision.reason {
        return Err(invalid.clone());
    }
    let report = PlanOutput {
        name: schedule.metadata.name.clone().unwrap_or_default(),
        scale_down_enabled: decision.scale_down_enabled,
        active_window: decision.active_window,
        next_transition: decision.next_transition.map(ebb_runtime::rfc3339),
        tzdata: ebb_schedule::tzdata().release().to_owned(),
    };
    Ok((report, decision))
}

/// Runs `plan` as the CLI would, deciding each ScaleDownSchedule of the file at `--at` or else
/// at `now`; returns the output.
///
/// # Errors
/// An unreadable file, a wrong kind, an undeclared field, a bad `--at`, or an invalid field.
pub fn plan(args: &PlanArgs, now: Timestamp) -> Result<String, PlanError> {
    let (at, objects) = args.zoned.read::<ScaleDownSchedule, PlanError>(
        "scaledown-window plan",
        ebb_crds::all_crds(),
        now,
    )?;
    let calendars = args.zoned.calendars("scaledown-window plan")?;
    let mut answers = args.zoned.output.answers();
    for schedule in &objects {
        let (report, decision) =
            offline(schedule, &calendars, at, &args.maintenance()).map_err(|invalid| {
                PlanError::Invalid {
                    path: args.zoned.path(),
                    invalid,
                }
            })?;
        let zones = zones(schedule);
        answers.push(report, |report| text(report, &decision, at, &zones));
    }
    Ok(answers.finish())
}

/// The zones the windows name, in which the text output shows instants.
fn zones(schedule: &ScaleDownSchedule) -> Vec<Zone> {
    zones_named(schedule.spec.windows.iter().map(|w| w.time_zone.as_str()))
}

fn text(report: &PlanOutput, decision: &Decision, at: Timestamp, zones: &[Zone]) -> String {
    let mut out = String::new();
    let state = if report.scale_down_enabled {
        "enabled"
    } else {
        "disabled"
    };
    let why = match &decision.reason {
        Reason::WindowOpen(i) => format!("window {i} is open"),
        Reason::ClusterUpgrade => decision.maintenance.describe(),
        Reason::OutsideWindows => "no window is open".to_owned(),
        Reason::InvalidSchedule(invalid) => invalid.to_string(),
    };
    let _ = writeln!(
        out,
        "ScaleDownSchedule {} at {}{}",
        report.name,
        ebb_runtime::rfc3339(at),
        local_times(at, zones)
    );
    let _ = writeln!(out, "  scale-down: {state} ({why})");
    match (
        &report.next_transition,
        decision.reason == Reason::ClusterUpgrade,
    ) {
        (_, true) => {
            let _ = writeln!(out, "  next transition: when the maintenance ends");
        }
        (Some(next), false) => {
            let local = decision
                .next_transition
                .map(|t| local_times(t, zones))
                .unwrap_or_default();
            let _ = writeln!(out, "  next transition: {next}{local}");
        }
        (None, false) => {
            let _ = writeln!(out, "  next transition: never");
        }
    }
    if !decision.next_transitions.is_empty() {
        let _ = writeln!(out, "  coming flips:");
        for (when, enabled) in &decision.next_transitions {
            let to = if *enabled { "enabled" } else { "disabled" };
            let _ = writeln!(
                out,
                "    {}{}  scale-down {to}",
                ebb_runtime::rfc3339(*when),
                local_times(*when, zones)
            );
        }
    }
    let tzdata = ebb_schedule::tzdata();
    let _ = writeln!(out, "  tzdata: {} ({})", tzdata.release(), tzdata.source());
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
