//! `scaledown-window plan --file F --at RFC3339 [--output json] [--upgrading]
//! [--updating-pool NAME]...`: whether a ScaleDownSchedule allows scale-down at an instant, and
//! when that flips next, offline.
//!
//! Whether cluster maintenance is under way (`maintenance.followClusterUpgrade`) cannot be known
//! offline: none is assumed unless `--upgrading` or `--updating-pool` is given.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::plan::{ManifestError, Output, read_manifest};
use ebb_runtime::tz::{TzArgs, TzError};
use serde::Serialize;

use crate::decide::{self, ClusterMaintenance, Decision, InvalidSpec, Reason};

/// The `plan` subcommand's flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PlanArgs {
    /// YAML (or JSON) file holding one ScaleDownSchedule.
    #[arg(long)]
    pub file: std::path::PathBuf,
    /// The instant to decide at, RFC 3339 (`2026-03-27T11:00:00Z`) [default: now].
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
    /// `--output`.
    #[command(flatten)]
    pub output: Output,
    /// Assume the cluster is upgrading (ClusterVersion Progressing=True); without it, it is not.
    #[arg(long)]
    pub upgrading: bool,
    /// Assume this MachineConfigPool is updating (Updating=True); repeatable.
    #[arg(long = "updating-pool", value_name = "NAME")]
    pub updating_pools: Vec<String>,
    /// `--tz-data`.
    #[command(flatten)]
    pub tz: TzArgs,
}

impl PlanArgs {
    /// The maintenance the flags assume.
    pub fn maintenance(&self) -> ClusterMaintenance {
        ClusterMaintenance::new(self.upgrading, self.updating_pools.clone())
    }
}

/// Why `plan` cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file cannot be read, or is not one valid ScaleDownSchedule.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `--at` is not an RFC 3339 instant.
    #[error("--at {value:?}: not an RFC 3339 instant such as 2026-03-27T11:00:00Z ({reason})")]
    At {
        /// The text given.
        value: String,
        /// The parser's complaint.
        reason: String,
    },
    /// `--tz-data` cannot be used.
    #[error(transparent)]
    TzData(#[from] TzError),
    /// A field breaks a rule.
    #[error("{path}: {invalid}")]
    Invalid {
        /// The file.
        path: String,
        /// The field and the rule.
        invalid: InvalidSpec,
    },
}

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
    at: DateTime<Utc>,
    maintenance: &ClusterMaintenance,
) -> Result<(PlanOutput, Decision), InvalidSpec> {
    decide::resolve_target(&schedule.spec.target)?;
    let decision = decide::decide(&schedule.spec, at, maintenance);
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

/// Runs `plan` as the CLI would, deciding at `--at` or else at `now`; returns the output.
///
/// # Errors
/// An unreadable file, a wrong kind, a bad `--at`, or an invalid field.
pub fn plan(args: &PlanArgs, now: DateTime<Utc>) -> Result<String, PlanError> {
    ebb_runtime::tz::load(&args.tz)?.warn("scaledown-window plan");
    let schedule: ScaleDownSchedule = read_manifest(&args.file)?;
    let at = match &args.at {
        Some(text) => DateTime::parse_from_rfc3339(text.trim())
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| PlanError::At {
                value: text.clone(),
                reason: e.to_string(),
            })?,
        None => now,
    };
    let (report, decision) =
        offline(&schedule, at, &args.maintenance()).map_err(|invalid| PlanError::Invalid {
            path: args.file.display().to_string(),
            invalid,
        })?;
    Ok(args
        .output
        .render(&report, |report| text(report, &decision, at)))
}

fn text(report: &PlanOutput, decision: &Decision, at: DateTime<Utc>) -> String {
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
        "ScaleDownSchedule {} at {}",
        report.name,
        ebb_runtime::rfc3339(at)
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
            let _ = writeln!(out, "  next transition: {next}");
        }
        (None, false) => {
            let _ = writeln!(out, "  next transition: never");
        }
    }
    if !decision.next_transitions.is_empty() {
        let _ = writeln!(out, "  coming flips:");
        for (when, enabled) in &decision.next_transitions {
            let to = if *enabled { "enabled" } else { "disabled" };
            let _ = writeln!(out, "    {}  scale-down {to}", ebb_runtime::rfc3339(*when));
        }
    }
    let tzdata = ebb_schedule::tzdata();
    let _ = writeln!(out, "  tzdata: {} ({})", tzdata.release(), tzdata.source());
    out
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
