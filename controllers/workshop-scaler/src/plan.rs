//! `workshop-scaler plan`: the scaling decision for one WorkshopProvision, offline (README,
//! "Seeing it work", of this controller).
//!
//! ```text
//! workshop-scaler plan --file F|- --assigned N --total M [--active] [--workshop W] [--at T]
//!   [--lenient] [--output json]
//! ```
//! `F` holds WorkshopProvisions (one answer each) whose `spec.autoScaling` is the effective block
//! (as if inherited from its Workshop); with `--workshop W` the Workshop's block is merged under
//! it, as the controller does. `--active` means `status.autoScalingActive` is true (set at the
//! instant decided at, `--at`, default now). JSON output is exactly `{"name", "scale",
//! "currentCount", "desiredCount", "reason"}`. Both files are held to Babylon's published schema
//! plus ebb's `spec.autoScaling` (`ebb_runtime::cli::manifest`): a field neither declares is refused.

use std::path::PathBuf;

use ebb_crds::babylon::{Workshop, WorkshopProvision};
use ebb_runtime::cli::manifest::{self, Input, Schema};
use ebb_runtime::cli::plan::{Failure, ManifestError, Output, PlanFailure};
use jiff::Timestamp;
use serde::Serialize;

use crate::decide::{self, ConfigError, Counts, InFlight, Seats, Settings};

/// Flags of `workshop-scaler plan`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct PlanArgs {
    /// `--file` (WorkshopProvisions), `--at`, `--lenient`.
    #[command(flatten)]
    pub input: Input,
    /// YAML file holding its Workshop, whose `spec.autoScaling` the provision's overrides.
    #[arg(long, value_name = "FILE")]
    pub workshop: Option<PathBuf>,
    /// WorkshopUserAssignments of the workshop with `spec.assignment` set.
    #[arg(long, value_name = "N")]
    pub assigned: u32,
    /// All WorkshopUserAssignments of the workshop.
    #[arg(long, value_name = "M")]
    pub total: u32,
    /// A scale-up is in flight (`status.autoScalingActive` is true).
    #[arg(long)]
    pub active: bool,
    /// `--output`.
    #[command(flatten)]
    pub output: Output,
}

/// The answer of `plan`, as JSON (field order as this controller's README shows it).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// `metadata.name` of the provision.
    pub name: String,
    /// Whether the provision scales now.
    pub scale: bool,
    /// `spec.count`.
    pub current_count: i32,
    /// The count after this decision (equal to `currentCount` unless `scale`).
    pub desired_count: i32,
    /// One sentence on why.
    pub reason: String,
}

/// Why `plan` cannot answer. Each message names the file or field and the rule broken.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A file cannot be read, or is not one valid object of the expected kind.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The flags contradict each other.
    #[error("{0}")]
    Flags(String),
    /// The effective `autoScaling` block (or `spec.count`) is invalid.
    #[error("{path}: {error}")]
    Config {
        /// The file.
        path: String,
        /// The field and rule.
        error: ConfigError,
    },
}

impl PlanFailure for PlanError {
    fn failure(&self) -> Failure {
        match self {
            Self::Manifest(error) => error.failure(),
            Self::Flags(_) => Failure::Usage,
            Self::Config { .. } => Failure::Invalid,
        }
    }
}

/// The schema `plan` holds a `kind` of Babylon's to: upstream's, with ebb's `spec.autoScaling`.
pub fn schema(kind: &str) -> Schema {
    let auto_scaling =
        Schema::for_kind(ebb_crds::third_party_views(), kind).property(&["spec", "autoScaling"]);
    let upstream = Schema::for_kind(ebb_crds::babylon_crds(), kind);
    match auto_scaling {
        Some(block) => upstream.with_property(&["spec", "autoScaling"], &block),
        None => upstream,
    }
}

/// Runs `plan` and renders its output: one answer per WorkshopProvision of `--file`.
pub fn plan(args: &PlanArgs, now: Timestamp) -> Result<String, PlanError> {
    let program = "workshop-scaler plan";
    let at = args.input.at(now)?;
    let provisions =
        manifest::read::<WorkshopProvision>(program, &args.input, &schema("WorkshopProvision"))?;
    let workshop: Option<Workshop> = match &args.workshop {
        Some(path) => {
            let input = Input {
                file: path.clone(),
                ..args.input.clone()
            };
            let workshops = manifest::read::<Workshop>(program, &input, &schema("Workshop"))?;
            match <[Workshop; 1]>::try_from(workshops) {
                Ok([workshop]) => Some(workshop),
                Err(_) => {
                    return Err(PlanError::Flags(format!(
                        "--workshop {}: holds several Workshops, give one",
                        path.display()
                    )));
                }
            }
        }
        None => None,
    };
    let mut answers = args.output.answers();
    for provision in &provisions {
        let output = offline(provision, workshop.as_ref(), args, at)?;
        answers.push(output, text);
    }
    Ok(answers.finish())
}

/// The decision for a parsed provision (and optional Workshop).
pub fn offline(
    provision: &WorkshopProvision,
    workshop: Option<&Workshop>,
    args: &PlanArgs,
    now: Timestamp,
) -> Result<PlanOutput, PlanError> {
    if args.assigned > args.total {
        return Err(PlanError::Flags(format!(
            "--assigned ({}) must not be greater than --total ({})",
            args.assigned, args.total
        )));
    }
    let path = args.input.file.display().to_string();
    let workshop_block = workshop.and_then(|w| w.spec.auto_scaling.as_ref());
    let provision_block = provision.spec.auto_scaling.as_ref();
    // Unlike the controller, plan reports a broken block even when disabled: the user asked.
    let config =
        decide::resolve(workshop_block, provision_block).map_err(|error| PlanError::Config {
            path: path.clone(),
            error,
        })?;
    let settings = if config.enabled {
        Settings::Enabled(config.clone())
    } else {
        Settings::Disabled
    };
    // Offline there are no claims: an active flag counts as just set, so the decision is
    // "wait", whatever the instant.
    let observed = Counts {
        count: provision.spec.count,
        seats: Seats {
            assigned: args.assigned,
            total: args.total,
        },
        in_flight: args.active.then_some(InFlight {
            started_at: Some(now),
            from: None,
            target: None,
            claims: Vec::new(),
        }),
        claims: Vec::new(),
        ..Counts::default()
    };
    let decision = decide::decide_scaling(&settings, &observed, now);
    if let decide::Decision::Invalid(error) = decision {
        return Err(PlanError::Config { path, error });
    }
    Ok(PlanOutput {
        name: provision.metadata.name.clone().unwrap_or_default(),
        scale: decision.scales(),
        current_count: observed.count,
        desired_count: decision.desired_count(observed.count),
        reason: decision.reason(observed.count, Some(&config)),
    })
}

/// The text output: the decision and why.
pub fn text(output: &PlanOutput) -> String {
    let head = if output.scale {
        format!(
            "WorkshopProvision {}: scale count {} -> {}",
            output.name, output.current_count, output.desired_count
        )
    } else {
        format!(
            "WorkshopProvision {}: no change (count {})",
            output.name, output.current_count
        )
    };
    format!("{head}\n  {}\n", output.reason)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
