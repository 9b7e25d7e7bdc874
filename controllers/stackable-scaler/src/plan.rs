//! `stackable-scaler plan --file F [--workload-replicas N] [--output json]`: the state machine's
//! next step for a StackableScaler manifest, offline.
//!
//! The pass runs the controller's step loop without the world ([`steps::preview`]), up to the
//! first step that needs it: a hook to ask, the workload to resize, or nothing to do. Without
//! `--workload-replicas` the workload is unknown (a scaler without status then waits to observe
//! it). This module is the CLI only: flags, reading and checking the file, [`offline`] (the pure
//! call behind `plan`) and rendering.

use ebb_crds::stackable::{HookSpec, StackableScaler};
use ebb_runtime::cli::manifest::{self, Input, Schema};
use ebb_runtime::cli::plan::{Failure, ManifestError, Output, PlanFailure};
use jiff::Timestamp;
use serde::Serialize;

use crate::decide::{self, Action, WorkloadState};
use crate::hooks::{HookKind, ScaleDirection};
use crate::steps::{self, Answer, WalkStep};

/// The `plan` subcommand's flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PlanArgs {
    /// `--file` (StackableScalers), `--at`, `--lenient`.
    #[command(flatten)]
    pub input: Input,
    /// The workload's current replicas (as if ready and settled).
    #[arg(long, allow_hyphen_values = true)]
    pub workload_replicas: Option<i32>,
    /// How a hook's Job answers, to walk the operation past it: `pre`, `post` or `on-failure`,
    /// `=done`, `=in-progress` or `=failed` (repeatable). A hook with a template and no answer
    /// stops the walk there, as the controller would wait for its Job.
    #[arg(long = "hook", value_name = "HOOK=ANSWER", value_parser = parse_hook_answer)]
    pub hooks: Vec<(HookKind, Answer)>,
    /// `--output`.
    #[command(flatten)]
    pub output: Output,
}

/// The answer, rendered as text or JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanOutput {
    /// The scaler.
    pub name: String,
    /// Stage recorded in the manifest's status (`null` when not initialized).
    pub current_stage: Option<&'static str>,
    /// Stage after this pass.
    pub next_stage: &'static str,
    /// `runHook`, `setReplicas`, `wait` or `none`.
    pub action: &'static str,
    /// For `runHook`: `prescale`, `postscale`, `onfailure`.
    pub hook: Option<&'static str>,
    /// For `setReplicas`: the target.
    pub set_replicas: Option<i32>,
    /// For `wait`: seconds until the next look (`null`: until the object changes).
    pub requeue_after_seconds: Option<u64>,
    /// `spec.replicas`.
    pub spec_replicas: i32,
    /// `status.replicas` after this pass.
    pub status_replicas: i32,
    /// The operation in flight: replicas before.
    pub previous_replicas: Option<i32>,
    /// The operation in flight: target.
    pub desired_replicas: Option<i32>,
    /// `Up`, `Down`, `None`, or `null` without an operation.
    pub direction: Option<ScaleDirection>,
    /// Ordinals removed by the operation.
    pub removed_ordinals: Vec<i32>,
    /// Ordinals added by the operation.
    pub added_ordinals: Vec<i32>,
    /// Events this pass would record, in order.
    pub events: Vec<String>,
    /// One sentence.
    pub message: String,
    /// The whole operation as far as the `--hook` answers let it go, step by step.
    pub walk: Vec<WalkStep>,
    /// The stage the walk ends in.
    pub final_stage: &'static str,
    /// The hook Jobs the walk creates (or reads), by name.
    pub jobs: Vec<String>,
    /// Whether the admission webhook (`--enable-webhook`) would let a `spec.replicas` change
    /// through (`/scale` or the object) in the state given.
    pub scale_write: ScaleWrite,
}

/// The admission webhook's answer to a `spec.replicas` change in the state given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScaleWrite {
    /// Allowed (the stage is Idle or Failed) or denied (an operation is in flight).
    pub allowed: bool,
    /// Why.
    pub reason: String,
}

/// `pre=done` and the like (`--hook`).
fn parse_hook_answer(text: &str) -> Result<(HookKind, Answer), String> {
    let (hook, answer) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected HOOK=ANSWER, e.g. pre=done"))?;
    let hook = match hook.trim().to_ascii_lowercase().as_str() {
        "pre" | "prescale" => HookKind::PreScale,
        "post" | "postscale" => HookKind::PostScale,
        "on-failure" | "onfailure" => HookKind::OnFailure,
        other => return Err(format!("hook {other:?}: expected pre, post or on-failure")),
    };
    let answer = match answer.trim().to_ascii_lowercase().as_str() {
        "done" => Answer::Done,
        "in-progress" | "inprogress" => Answer::InProgress,
        "failed" => Answer::Failed,
        other => {
            return Err(format!(
                "answer {other:?}: expected done, in-progress or failed"
            ));
        }
    };
    Ok((hook, answer))
}

/// What the webhook says to a replicas change of a scaler in `stage` (its rule:
/// [`ScalerStage::is_active`](ebb_crds::stackable::ScalerStage::is_active)).
fn scale_write(stage: ebb_crds::stackable::ScalerStage) -> ScaleWrite {
    if stage.is_active() {
        ScaleWrite {
            allowed: false,
            reason: format!(
                "denied: the scaler is in {} (an operation is in flight); spec.replicas can change again when it is Idle or Failed",
                stage.as_str()
            ),
        }
    } else {
        ScaleWrite {
            allowed: true,
            reason: format!("allowed: the scaler is {}", stage.as_str()),
        }
    }
}

/// Why `plan` cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file cannot be read, or is not one valid StackableScaler.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A field breaks a rule.
    #[error("{path}: {field}: {rule}")]
    Invalid {
        /// The file.
        path: String,
        /// The field.
        field: String,
        /// The rule broken.
        rule: String,
    },
}

impl PlanFailure for PlanError {
    fn failure(&self) -> Failure {
        match self {
            Self::Manifest(error) => error.failure(),
            // A flag (`--workload-replicas`) is the command line's.
            Self::Invalid { field, .. } if field.starts_with("--") => Failure::Usage,
            Self::Invalid { .. } => Failure::Invalid,
        }
    }
}

fn validate(path: &str, scaler: &StackableScaler) -> Result<(), PlanError> {
    let invalid = |field: &str, rule: String| PlanError::Invalid {
        path: path.to_owned(),
        field: field.to_owned(),
        rule,
    };
    if scaler.spec.replicas < 0 {
        return Err(invalid(
            "spec.replicas",
            format!("must be >= 0, got {}", scaler.spec.replicas),
        ));
    }
    if let Some(t) = scaler.spec.stage_timeout_seconds
        && !(1..=604_800).contains(&t)
    {
        return Err(invalid(
            "spec.stageTimeoutSeconds",
            format!("must be within 1..=604800, got {t}"),
        ));
    }
    if let Some(hooks) = &scaler.spec.hooks {
        let all: [(&str, &Option<HookSpec>); 3] = [
            ("spec.hooks.preScale", &hooks.pre_scale),
            ("spec.hooks.postScale", &hooks.post_scale),
            ("spec.hooks.onFailure", &hooks.on_failure),
        ];
        for (field, hook) in all {
            if let Some(t) = hook.as_ref().and_then(|h| h.timeout_seconds)
                && !(1..=86400).contains(&t)
            {
                return Err(invalid(
                    &format!("{field}.timeoutSeconds"),
                    format!("must be within 1..=86400, got {t}"),
                ));
            }
            let Some(hook) = hook else { continue };
            let Some(pod) = hook
                .template
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
            else {
                return Err(invalid(
                    &format!("{field}.template.spec.template.spec"),
                    "a hook needs a pod spec".into(),
                ));
            };
            if pod.containers.is_empty() {
                return Err(invalid(
                    &format!("{field}.template.spec.template.spec.containers"),
                    "a hook's pod needs at least one container".into(),
                ));
            }
            if let Some(policy) = pod
                .restart_policy
                .as_deref()
                .filter(|p| !matches!(*p, "Never" | "OnFailure"))
            {
                return Err(invalid(
                    &format!("{field}.template.spec.template.spec.restartPolicy"),
                    format!(
                        "must be Never or OnFailure (a Job's pods cannot restart {policy}); unset means Never"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The schema `plan` holds a StackableScaler to: the one ebb's CRD has.
pub fn schema() -> Schema {
    Schema::for_kind(ebb_crds::all_crds(), "StackableScaler")
}

/// Parses a manifest (read from `path`), strictly, and checks what the schema cannot.
pub fn parse(path: &str, text: &str) -> Result<StackableScaler, PlanError> {
    let read =
        manifest::parse::<StackableScaler>(path, text, &schema(), manifest::Strictness::default())?;
    let mut objects = read.objects.into_iter();
    match (objects.next(), objects.next()) {
        (Some(scaler), None) => {
            validate(path, &scaler)?;
            Ok(scaler)
        }
        _ => Err(PlanError::Invalid {
            path: path.to_owned(),
            field: "(file)".into(),
            rule: "holds several StackableScalers, give one".into(),
        }),
    }
}

/// The answer for a scaler and an optional workload size (settled at that many replicas), at
/// `now`: the pure call behind `plan`.
pub fn offline(
    scaler: &StackableScaler,
    workload_replicas: Option<i32>,
    answers: &[(HookKind, Answer)],
    now: Timestamp,
) -> PlanOutput {
    let workload = workload_replicas.map(WorkloadState::settled);
    let preview = steps::preview(scaler, workload.as_ref(), now);
    let walk = steps::walk(scaler, workload.as_ref(), answers, now);
    let name = scaler.metadata.name.clone().unwrap_or_default();
    let namespace = scaler.metadata.namespace.clone().unwrap_or_default();
    let events = preview
        .notes
        .iter()
        .map(|n| format!("{}: {}", n.reason, n.message))
        .collect();
    let last = preview.plan;
    let status = preview.status;
    let current_stage = decide::is_initialized(scaler.status.as_ref())
        .then(|| decide::stage_of(scaler.status.as_ref()).as_str());
    let context = decide::context_of(&name, &namespace, &status).ok();
    let (action, hook, set_replicas, requeue, message) = match &last {
        Some(plan) => {
            let message = plan.describe();
            match &plan.action {
                Action::RunHook { hook, .. } => {
                    ("runHook", Some(hook.as_str()), None, None, message)
                }
                Action::SetReplicas { to } => ("setReplicas", None, Some(*to), None, message),
                Action::Wait { after, .. } => {
                    ("wait", None, None, after.map(|d| d.as_secs()), message)
                }
                _ => ("none", None, None, None, message),
            }
        }
        None => (
            "none",
            None,
            None,
            None,
            format!("no decision within {} steps", steps::MAX_STEPS),
        ),
    };
    PlanOutput {
        name,
        current_stage,
        next_stage: decide::stage_of(Some(&status)).as_str(),
        action,
        hook,
        set_replicas,
        requeue_after_seconds: requeue,
        spec_replicas: scaler.spec.replicas,
        status_replicas: status.replicas,
        previous_replicas: status.previous_replicas,
        desired_replicas: status.desired_replicas,
        direction: context.as_ref().map(|c| c.direction()),
        removed_ordinals: context
            .as_ref()
            .map(|c| c.removed_ordinals().collect())
            .unwrap_or_default(),
        added_ordinals: context
            .as_ref()
            .map(|c| c.added_ordinals().collect())
            .unwrap_or_default(),
        events,
        message,
        jobs: walk
            .steps
            .iter()
            .filter_map(|step| match step {
                WalkStep::Job { job, .. } => Some(job.clone()),
                _ => None,
            })
            .collect(),
        final_stage: decide::stage_of(Some(&walk.status)).as_str(),
        walk: walk.steps,
        scale_write: scale_write(decide::stage_of(scaler.status.as_ref())),
    }
}

fn render_text(output: &PlanOutput) -> String {
    let list = |v: &[i32]| {
        if v.is_empty() {
            "-".to_owned()
        } else {
            v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
        }
    };
    let mut out = format!(
        "{}: {} -> {}\n  spec.replicas {}, status.replicas {}\n",
        output.name,
        output.current_stage.unwrap_or("(no status)"),
        output.next_stage,
        output.spec_replicas,
        output.status_replicas,
    );
    if let (Some(previous), Some(desired), Some(direction)) = (
        output.previous_replicas,
        output.desired_replicas,
        output.direction,
    ) {
        out.push_str(&format!(
            "  operation: {} from {previous} to {desired} (removed ordinals {}, added ordinals {})\n",
            direction.as_str(),
            list(&output.removed_ordinals),
            list(&output.added_ordinals)
        ));
    }
    for event in &output.events {
        out.push_str(&format!("  event {event}\n"));
    }
    out.push_str(&format!("  next: {}\n", output.message));
    out.push_str(&format!(
        "  a spec.replicas change now (webhook): {}\n",
        output.scale_write.reason
    ));
    if output.walk.len() > 1 || !output.jobs.is_empty() {
        out.push_str("  walk:\n");
        for step in &output.walk {
            let line = match step {
                WalkStep::Stage { stage } => format!("stage {stage}"),
                WalkStep::Job { hook, job, answer } => format!("{hook} hook: Job {job} ({answer})"),
                WalkStep::NoJob { hook } => format!("{hook} hook: no template, done"),
                WalkStep::Resize { to } => format!("set the workload's replicas to {to}"),
                WalkStep::Strip { annotation } => format!("remove the annotation {annotation}"),
            };
            out.push_str(&format!("    {line}\n"));
        }
        out.push_str(&format!("  ends in: {}\n", output.final_stage));
    }
    out
}

/// Runs `plan` on a file: the rendered output, or an error naming the field and rule.
pub fn plan(args: &PlanArgs, now: Timestamp) -> Result<String, PlanError> {
    let path = args.input.file.display().to_string();
    let now = args.input.at(now)?;
    if let Some(n) = args.workload_replicas
        && n < 0
    {
        return Err(PlanError::Invalid {
            path,
            field: "--workload-replicas".into(),
            rule: format!("must be >= 0, got {n}"),
        });
    }
    let scalers =
        manifest::read::<StackableScaler>("stackable-scaler plan", &args.input, &schema())?;
    let mut answers = args.output.answers();
    for scaler in &scalers {
        validate(&path, scaler)?;
        let output = offline(scaler, args.workload_replicas, &args.hooks, now);
        answers.push(output, render_text);
    }
    Ok(answers.finish())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
