//! One pass over a ScaleDownSchedule, in two calls: [`reads`] says what the decision needs read
//! (from the schedule, the process's settings and `now` alone), the reconciler reads it, and
//! [`decide`] returns the whole pass as one plan: the finalizer step, the target's writes, the
//! status, the Events, the gauges and the requeue. [`uninstall`] is the same decision for
//! `scaledown-window cleanup`.

use ebb_core::Plan;
use ebb_core::pause::{pause_report, pause_state};
use ebb_core::plan::Requeue;
use ebb_crds::scaledown::ScaleDownSchedule;
use jiff::Timestamp;
use kube::{Resource, ResourceExt};

use crate::report::{API_MISSING_RETRY, ReportInput, TargetOutcome, report, summarize};
use crate::writes::{FinalizerStep, add_finalizer, apply_plan, change_write, finalizer_step};
use crate::{
    Calendars, Change, Claimant, ClusterMaintenance, ResolvedTarget, SchedulePlan, TargetKind,
    TargetObjects, calendar_names, decide_target, decide_windows, resolve_target,
};

/// Which target kinds this controller serves (feature flags; the chart grants RBAC to match).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnabledTargets {
    /// `--enable-cluster-autoscaler`.
    pub cluster_autoscaler: bool,
    /// `--enable-node-annotation`.
    pub node_annotation: bool,
    /// `--enable-machine-autoscalers`.
    pub machine_autoscalers: bool,
    /// `--enable-karpenter`.
    pub karpenter: bool,
    /// `--enable-cluster-version`: read the ClusterVersion and the MachineConfigPools for
    /// `followClusterUpgrade`.
    pub cluster_version: bool,
}

impl EnabledTargets {
    /// Every kind, and the ClusterVersion and MachineConfigPools.
    pub fn all() -> Self {
        Self {
            cluster_autoscaler: true,
            node_annotation: true,
            machine_autoscalers: true,
            karpenter: true,
            cluster_version: true,
        }
    }

    /// Whether schedules of `kind` are served.
    pub fn allows(&self, kind: TargetKind) -> bool {
        match kind {
            TargetKind::ClusterAutoscaler => self.cluster_autoscaler,
            TargetKind::NodeAnnotation => self.node_annotation,
            TargetKind::MachineAutoscalers => self.machine_autoscalers,
            TargetKind::KarpenterNodePools => self.karpenter,
        }
    }
}

/// Which pass: a reconcile, or `cleanup` before an uninstall.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pass {
    /// The controller's reconcile.
    #[default]
    Reconcile,
    /// `scaledown-window cleanup`: release what the schedule set, whoever else selects it (every
    /// schedule goes), unless `keep_settings` (`--keep-settings`) keeps it in force.
    Uninstall {
        /// `--keep-settings`.
        keep_settings: bool,
    },
}

/// The process's settings a pass weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The target kinds served.
    pub served: EnabledTargets,
    /// `--dry-run`: decide and report, write no target.
    pub dry_run: bool,
    /// Which pass.
    pub pass: Pass,
}

/// What a pass over one schedule must read before [`decide`]: all of it from the schedule, the
/// settings and `now`, so a pass that needs nothing reads nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reads {
    /// The ClusterVersion and the MachineConfigPools (`maintenance.followClusterUpgrade`, with
    /// `--enable-cluster-version`).
    pub maintenance: bool,
    /// The HolidayCalendars the windows name.
    pub calendars: Vec<String>,
    /// The target's objects: every object of its kind (objects the schedule marked earlier may
    /// no longer be selected); `None` when the pass writes no target.
    pub target: Option<ResolvedTarget>,
    /// The other ScaleDownSchedules: who else claims the target's objects.
    pub schedules: bool,
}

/// What the reconciler read for [`Reads::target`].
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TargetRead {
    /// Not asked for.
    #[default]
    NotRead,
    /// The cluster does not serve the target's API.
    ApiMissing,
    /// The objects.
    Read(TargetObjects),
}

/// Everything one pass decides from: the schedule, the settings, and what [`reads`] asked for.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    /// The schedule, as read.
    pub schedule: &'a ScaleDownSchedule,
    /// The process's settings.
    pub settings: Settings,
    /// The cluster's maintenance; none unless [`Reads::maintenance`].
    pub maintenance: ClusterMaintenance,
    /// The HolidayCalendars [`Reads::calendars`] named, as the cluster holds them.
    pub calendars: Calendars,
    /// The target's objects.
    pub target: TargetRead,
    /// Every ScaleDownSchedule that deserializes ([`Reads::schedules`]), this one among them or
    /// not: the claimants are those not being deleted.
    pub schedules: Vec<ScaleDownSchedule>,
}

/// Whether `schedule` may write to its target now: its kind is served, it is not paused, not a
/// dry run.
fn writes_target(schedule: &ScaleDownSchedule, settings: &Settings, now: Timestamp) -> bool {
    let served =
        crate::target_kind(&schedule.spec.target).is_ok_and(|kind| settings.served.allows(kind));
    served && !pause_state(&schedule.metadata, now).is_paused() && !settings.dry_run
}

/// The finalizer rule ([`finalizer_step`]) for this pass.
fn step(schedule: &ScaleDownSchedule, settings: &Settings, now: Timestamp) -> FinalizerStep {
    finalizer_step(schedule, writes_target(schedule, settings, now))
}

/// What a pass over `schedule` must read: nothing while it adds or has no finalizer; its
/// target's objects and the other schedules to release what it set; else the maintenance it
/// follows, the calendars its windows name, and — when its target is valid, served and it is not
/// paused — the target's objects and the other schedules.
pub fn reads(schedule: &ScaleDownSchedule, settings: &Settings, now: Timestamp) -> Reads {
    let spec = &schedule.spec;
    let target = || resolve_target(&spec.target).ok();
    if let Pass::Uninstall { keep_settings } = settings.pass {
        return Reads {
            target: target().filter(|t| !keep_settings && settings.served.allows(t.kind())),
            ..Reads::default()
        };
    }
    match step(schedule, settings, now) {
        FinalizerStep::Add | FinalizerStep::Gone => Reads::default(),
        FinalizerStep::Release => {
            let target = target().filter(|_| writes_target(schedule, settings, now));
            Reads {
                schedules: target.is_some(),
                target,
                ..Reads::default()
            }
        }
        FinalizerStep::Apply => {
            let follows = spec
                .maintenance
                .as_ref()
                .is_some_and(|m| m.follow_cluster_upgrade);
            let paused = pause_state(&schedule.metadata, now).is_paused();
            let target = target().filter(|t| settings.served.allows(t.kind()) && !paused);
            Reads {
                maintenance: follows && settings.served.cluster_version,
                calendars: calendar_names(&spec.windows)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                schedules: target.is_some(),
                target,
            }
        }
    }
}

/// The whole pass over `observed.schedule` at `now`, by the finalizer rule: while the schedule
/// may write to its target (not a dry run, not paused, its kind served) the finalizer is added
/// first, and that write alone is the pass (the watch brings the next); a schedule being deleted
/// releases what it set, unless another schedule takes the objects over, then lets go of the
/// finalizer; otherwise the schedule is applied: its target's changes (none in a dry run), the
/// status and Events [`report`] returns, the gauges, the requeue.
///
/// For [`Pass::Uninstall`], [`uninstall`]'s plan.
pub fn decide(observed: &Observed<'_>, now: Timestamp) -> SchedulePlan {
    let schedule = observed.schedule;
    if let Pass::Uninstall { .. } = observed.settings.pass {
        return uninstall(observed, now).plan;
    }
    match step(schedule, &observed.settings, now) {
        FinalizerStep::Add => add_finalizer(schedule),
        FinalizerStep::Gone => Plan::new(schedule.object_ref(&()), None),
        FinalizerStep::Release => release(observed, now),
        FinalizerStep::Apply => apply(observed, now),
    }
}

/// The schedules competing for target objects: every one not being deleted (whatever this
/// controller's label selector, so shards never fight), with the one reconciled as `mine`
/// (`None` while it is being deleted: it claims nothing). Schedules whose target cannot be
/// resolved claim nothing: they write nothing either.
fn claimants(observed: &Observed<'_>, mine: Option<ResolvedTarget>) -> Vec<Claimant> {
    let me = observed.schedule;
    let my_name = me.name_any();
    let created = |s: &ScaleDownSchedule| {
        s.metadata
            .creation_timestamp
            .as_ref()
            .map(ebb_core::from_k8s_time)
    };
    let mut out: Vec<Claimant> = observed
        .schedules
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none() && s.name_any() != my_name)
        .filter_map(|s| {
            Some(Claimant {
                name: s.name_any(),
                created: created(s),
                target: resolve_target(&s.spec.target).ok()?,
            })
        })
        .collect();
    if let Some(target) = mine {
        out.push(Claimant {
            name: my_name,
            created: created(me),
            target,
        });
    }
    out
}

/// Applies the schedule: its decision, its pause, what its target needs.
fn apply(observed: &Observed<'_>, now: Timestamp) -> SchedulePlan {
    let schedule = observed.schedule;
    let spec = &schedule.spec;
    let settings = &observed.settings;
    let decision = decide_windows(spec, &observed.calendars, now, &observed.maintenance);
    // The schedule's own pause, reported the shared way (condition, Event, wake-up).
    let pause = pause_report(
        [("ScaleDownSchedule", &schedule.metadata)],
        schedule
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default(),
        schedule.metadata.generation,
        now,
    );
    let outcome = match resolve_target(&spec.target) {
        Err(invalid) => TargetOutcome::Invalid(invalid),
        Ok(target) if !settings.served.allows(target.kind()) => {
            TargetOutcome::Disabled(target.kind())
        }
        Ok(_) if let Some(report) = &pause => TargetOutcome::Paused(report.pause.to_string()),
        Ok(target) => match &observed.target {
            TargetRead::ApiMissing => TargetOutcome::ApiMissing(target.kind()),
            // What `reads` asks for is read before this: a target not read is one the
            // reconciler skipped; nothing is decided for it now, and the pass looks again.
            TargetRead::NotRead => return not_read(schedule),
            TargetRead::Read(objects) => TargetOutcome::Planned {
                kind: target.kind(),
                plan: decide_target(
                    &schedule.name_any(),
                    &claimants(observed, Some(target.clone())),
                    Some(decision.scale_down_enabled),
                    objects,
                    now,
                ),
                dry_run: settings.dry_run,
            },
        },
    };
    let changes = match &outcome {
        TargetOutcome::Planned {
            plan,
            dry_run: false,
            ..
        } => plan.changes.clone(),
        _ => Vec::new(),
    };
    let report = report(&ReportInput {
        status: schedule.status.as_ref(),
        generation: schedule.metadata.generation,
        decision: &decision,
        outcome: &outcome,
        pause: pause.as_ref(),
        dry_run: settings.dry_run,
        now,
    });
    apply_plan(schedule, &changes, decision.scale_down_enabled, report)
}

/// A pass whose target was not read though [`reads`] asked for it: nothing, and again at
/// [`API_MISSING_RETRY`].
fn not_read(schedule: &ScaleDownSchedule) -> SchedulePlan {
    let mut plan = Plan::new(schedule.object_ref(&()), None);
    plan.requeue = Requeue::After(API_MISSING_RETRY);
    plan
}

/// Releases what the schedule set, unless another schedule takes the objects over, then lets go
/// of the finalizer ([`crate::release_plan`]). A paused schedule, a dry run or a switched-off
/// target kind releases nothing; objects paused by their own annotation are not released either.
/// Where the cluster no longer serves the target's API, the finalizer stays and the pass looks
/// again: what ebb set cannot be seen, so it cannot be said to be released.
fn release(observed: &Observed<'_>, now: Timestamp) -> SchedulePlan {
    let schedule = observed.schedule;
    let changes = if writes_target(schedule, &observed.settings, now)
        && resolve_target(&schedule.spec.target).is_ok()
    {
        match &observed.target {
            TargetRead::Read(objects) => {
                decide_target(
                    &schedule.name_any(),
                    &claimants(observed, None),
                    None,
                    objects,
                    now,
                )
                .changes
            }
            TargetRead::ApiMissing | TargetRead::NotRead => return not_read(schedule),
        }
    } else {
        Vec::new()
    };
    crate::release_plan(schedule, &changes)
}

/// What `cleanup` does to one schedule's target before an uninstall.
#[derive(Clone, Debug)]
pub struct Uninstall {
    /// The target's writes (none in a dry run, with `--keep-settings`, or when nothing is
    /// ebb's); the finalizer is cleanup's own step, after them.
    pub plan: SchedulePlan,
    /// What happens to the target, for cleanup's line: "released …", "nothing to release",
    /// "kept its target's settings in force".
    pub released: String,
}

/// `cleanup` for one schedule: what it set on its target goes back, as its deletion would but
/// with no other schedule taking over (all of them go). A schedule's pause does not hold this
/// back (ebb is leaving); an object paused by its own annotation is still left as it is. Target
/// kinds switched off, or whose API the cluster does not serve, have nothing of ebb's to
/// release. In a dry run the plan writes nothing.
pub fn uninstall(observed: &Observed<'_>, now: Timestamp) -> Uninstall {
    let schedule = observed.schedule;
    let name = schedule.name_any();
    let keep_settings = matches!(
        observed.settings.pass,
        Pass::Uninstall {
            keep_settings: true
        }
    );
    let changes = match &observed.target {
        TargetRead::Read(objects) if !keep_settings => {
            decide_target(&name, &[], None, objects, now).changes
        }
        _ => Vec::new(),
    };
    let described: Vec<String> = changes.iter().map(Change::describe).collect();
    let released = if keep_settings {
        "kept its target's settings in force".to_owned()
    } else if described.is_empty() {
        "nothing to release".to_owned()
    } else {
        format!("released {}", summarize(&described, 20))
    };
    let mut plan = Plan::new(schedule.object_ref(&()), None);
    if !observed.settings.dry_run {
        plan.writes
            .extend(changes.iter().map(|change| change_write(change, &name)));
    }
    Uninstall { plan, released }
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod tests;
