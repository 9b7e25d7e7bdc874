//! The reconciler: observe (reads) -> [`decide`](crate::decide) -> apply (the minimum of writes)
//! -> status, Events, metrics.
//!
//! Race safety. A scale-up is two writes, in this order, each with a resourceVersion
//! precondition (a merge patch carrying `metadata.resourceVersion`):
//! 1. through the **status subresource**: `autoScalingActive: true`, `autoScalingStartedAt`,
//!    `autoScalingFromCount` (the count now) and `autoScalingTargetCount` (the count to reach);
//! 2. `spec.count = target`, preconditioned on the resourceVersion the status write returned.
//!
//! A 409 on either write means "someone else changed the provision": the pass ends with
//! [`Error::Conflict`], and ebb-runtime's reconcile frame reads the provision again and runs the
//! pass again (see [`Reconcile`]); the write is never retried blindly. The decision then sees the flag (so it never starts a
//! second scale-up) and finishes the recorded one only while `spec.count` is still exactly
//! `autoScalingFromCount`; `spec.count` is always written as the absolute target, never as an
//! increment. So two reconciles racing, a crash between the writes, a lost answer, a 500 or a
//! duplicate event all end with exactly one increase.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ebb_crds::babylon::{
    WORKSHOP_PROVISION_LABEL, Workshop, WorkshopProvision, WorkshopUserAssignment,
};
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::conditions::{is_condition_true, set_condition};
use ebb_runtime::events::EventKind;
use ebb_runtime::frame::{self, ReconcileError, Reconciler};
use ebb_runtime::pause::{PAUSED_CONDITION, pause_report};
use ebb_runtime::{ConditionUpdate, from_k8s_time, to_k8s_time};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{DeserializeGuard, Selector, SelectorExt};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Map, Value, json};

use crate::FIELD_MANAGER;
use crate::decide::{
    self, Claim, Config, Decision, EarlyRelease, Hold, InFlight, Observed, Seats, Settings, Sources,
};
use crate::metrics::{Metrics, Observation, ProvisionLabels, WorkshopLabels};

/// workshop-scaler's own part of the frame's [`Context`]: shared by the provisions' and the
/// policies' reconcilers.
pub struct Own {
    /// workshop-scaler's own gauges and counters.
    pub metrics: Metrics,
}

/// What a reconcile needs: the frame's context around [`Own`]. `dry_run`: decide and report, but
/// write neither the flag nor the count.
pub type Context = frame::Context<Own>;

/// Why a reconcile failed, one variant per pipeline stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object lacks a namespace or name: it can never be reconciled.
    #[error("WorkshopProvision without {0}")]
    MissingMetadata(&'static str),
    /// A read failed.
    #[error("reading {what}: {source}")]
    Observe {
        /// What was read.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing `status` (flag, conditions) failed with something other than a conflict.
    #[error("writing the status of WorkshopProvision {name}: {source}")]
    WriteStatus {
        /// `namespace/name`.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing `spec.count` failed with something other than a conflict.
    #[error("scaling spec.count of WorkshopProvision {name}: {source}")]
    WriteCount {
        /// `namespace/name`.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing the status of a WorkshopScalingPolicy failed.
    #[error("writing the status of WorkshopScalingPolicy {name}: {source}")]
    WritePolicyStatus {
        /// `namespace/name`.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A preconditioned write met a 409 (or had no resourceVersion to be preconditioned on): the
    /// provision was stale. The frame reads it again and runs the pass again.
    #[error("WorkshopProvision {name} changed since it was read")]
    Conflict {
        /// `namespace/name`.
        name: String,
    },
}

impl ReconcileError for Error {
    /// The metric label and log field of this error's kind.
    fn category(&self) -> &'static str {
        match self {
            Error::MissingMetadata(_) => "invalid",
            Error::Observe { .. } => "observe",
            Error::WriteStatus { .. } => "write_status",
            Error::WriteCount { .. } => "write_count",
            Error::WritePolicyStatus { .. } => "write_policy_status",
            Error::Conflict { .. } => "conflict",
        }
    }

    /// Whether retrying can help (everything but an object that can never be reconciled).
    fn is_transient(&self) -> bool {
        !matches!(self, Error::MissingMetadata(_))
    }

    fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }
}

/// The reconciler of WorkshopProvisions, run by the frame ([`frame::reconcile`]`::<Reconcile>`):
/// one observe -> decide -> apply pass per call. A 409 on any write ends the pass with
/// [`Error::Conflict`]; the frame then reads the provision again (a GET) and runs the pass again,
/// so the decision always sees the flag another writer set. A provision that does not deserialize
/// (Babylon owns the kind; ebb's typed view needs `count`, `workshopName`, `catalogItem`) is
/// logged, counted under `malformed` and left alone until it changes (the frame's default):
/// whether auto-scaling is enabled on it cannot be known.
pub struct Reconcile;

impl Reconciler for Reconcile {
    type Object = WorkshopProvision;
    type Own = Own;
    type Error = Error;
    const NAME: &'static str = crate::CONTROLLER_NAME;

    async fn reconcile(provision: Arc<WorkshopProvision>, ctx: &Context) -> Result<Action, Error> {
        let namespace = provision
            .namespace()
            .ok_or(Error::MissingMetadata("metadata.namespace"))?;
        let name = provision
            .metadata
            .name
            .clone()
            .ok_or(Error::MissingMetadata("metadata.name"))?;
        pass(&provision, &namespace, &name, ctx).await
    }
}

fn forget(ctx: &Context, namespace: &str, name: &str) {
    ctx.own.metrics.forget(&ProvisionLabels {
        namespace: namespace.to_owned(),
        provision: name.to_owned(),
    });
}

/// One observe -> decide -> apply pass.
async fn pass(
    provision: &WorkshopProvision,
    namespace: &str,
    name: &str,
    ctx: &Context,
) -> Result<Action, Error> {
    let now = ctx.clock.now();

    // --- observe: configuration first; a disabled provision needs nothing else. ---
    let workshops: Api<Workshop> = Api::namespaced(ctx.client.clone(), namespace);
    let workshop_name = &provision.spec.workshop_name;
    let workshop = workshops
        .get_opt(workshop_name)
        .await
        .map_err(|source| Error::Observe {
            what: format!("Workshop {namespace}/{workshop_name}"),
            source,
        })?;
    // Policies select Workshops: without the Workshop none applies.
    let policies = match &workshop {
        Some(w) => observe_policies(ctx, namespace, w).await?,
        None => Vec::new(),
    };
    let settings = decide::settings_of(&Sources {
        provision: provision.spec.auto_scaling.as_ref(),
        workshop: workshop.as_ref().and_then(|w| w.spec.auto_scaling.as_ref()),
        policies: &policies,
    });
    if settings == Settings::Disabled {
        // Backward compatible: not one write, not even status.
        forget(ctx, namespace, name);
        return Ok(Action::await_change());
    }

    let status = provision.status.clone().unwrap_or_default();
    let old_conditions = status.conditions.clone();

    // --- pause: a Paused condition and nothing else (the frame's one way to report it). ---
    if let Some(report) = pause_report(
        [("WorkshopProvision", &provision.metadata)],
        &old_conditions,
        provision.metadata.generation,
        now,
    ) {
        let mut conditions = old_conditions.clone();
        if set_condition(&mut conditions, report.condition, now) {
            let body = status_body(Map::new(), &conditions);
            write_status(ctx, namespace, name, provision, body).await?;
            if let Some((kind, reason, note)) = report.event {
                record(ctx, provision, kind, reason, "Pause", &note).await;
            }
        }
        // A second of slack past `paused-until`, as for every timer of this controller.
        return Ok(match report.pause.resume_at() {
            Some(at) => requeue_at(at, now),
            None => Action::await_change(),
        });
    }

    let config = match &settings {
        Settings::Enabled(config) => Some(config),
        _ => None,
    };
    let in_flight = in_flight_of(provision);
    let release_annotation = provision
        .annotations()
        .get(decide::RELEASE_ANNOTATION)
        .cloned();
    // A release annotation with nothing in flight is stale: left in place it would release the
    // next scale-up at once. Removed (and otherwise ignored) before anything else is decided.
    let fresh;
    let provision = if release_annotation.is_some() && in_flight.is_none() && !ctx.dry_run {
        fresh = remove_release_annotation(ctx, namespace, name, provision).await?;
        fresh.as_ref()
    } else {
        provision
    };
    let seats = match config {
        Some(_) => observe_seats(ctx, namespace, workshop_name).await?,
        None => Seats::default(),
    };
    // Claims only matter while a scale-up is in flight.
    let claims = match (&config, &in_flight) {
        (Some(_), Some(_)) => observe_claims(ctx, namespace, provision).await?,
        _ => Vec::new(),
    };
    let observed = Observed {
        count: provision.spec.count,
        seats,
        in_flight: in_flight.clone(),
        claims,
        provision_disabled: workshop
            .as_ref()
            .is_some_and(|w| w.spec.provision_disabled == Some(true)),
        lifespan_end: [
            workshop
                .as_ref()
                .and_then(|w| lifespan_end(w.spec.lifespan.as_ref())),
            lifespan_end(provision.spec.lifespan.as_ref()),
        ]
        .into_iter()
        .flatten()
        .min(),
        last_from: status.auto_scaling_last_from_count,
        release_requested: in_flight.is_some() && release_annotation.as_deref() == Some("true"),
    };

    // --- decide ---
    let decision = decide::decide(&settings, &observed, now);
    tracing::debug!(%namespace, %name, ?decision, "decided");

    if let Some(config) = config {
        let desired = match &in_flight {
            Some(f) if !decision.scales() => f.target.unwrap_or(observed.count).max(observed.count),
            _ => decision.desired_count(observed.count),
        };
        ctx.own.metrics.observe(
            &WorkshopLabels {
                namespace: namespace.to_owned(),
                workshop: workshop_name.clone(),
            },
            &ProvisionLabels {
                namespace: namespace.to_owned(),
                provision: name.to_owned(),
            },
            Observation {
                utilization: seats.utilization(),
                count: observed.count,
                desired_count: desired,
                active: in_flight.is_some()
                    || (matches!(decision, Decision::Start { .. }) && !ctx.dry_run),
                at_max: desired >= config.max_provisions,
                at_max_with_demand: desired >= config.max_provisions
                    && seats.utilization().is_some_and(|u| u >= config.threshold),
            },
        );
    }

    // --- the conditions this decision leads to ---
    let mut conditions = old_conditions.clone();
    let mut changed = false;
    let mut updates = decide::conditions(&decision, config, observed.count, in_flight.as_ref());
    let acts = matches!(
        decision,
        Decision::Start { .. }
            | Decision::Finish { .. }
            | Decision::Release { .. }
            | Decision::Cancel { .. }
            | Decision::ReleaseEarly { .. }
    );
    if ctx.dry_run && acts {
        // Dry run: the status says what would happen; the flag and the count stay as they are.
        updates.retain(|u| u.type_ != decide::CONDITION_AUTO_SCALING);
        updates.push(ConditionUpdate::new(
            decide::CONDITION_AUTO_SCALING,
            in_flight.is_some(),
            "DryRun",
            format!(
                "dry run, nothing written: {}",
                decision.reason(observed.count, config)
            ),
        ));
    }
    // No observedGeneration: the conditions follow seats and claims as much as the spec, and
    // stamping it would rewrite the status after every scale-up (the count write bumps it).
    for update in updates {
        changed |= set_condition(&mut conditions, update, now);
    }
    if is_condition_true(&conditions, PAUSED_CONDITION) {
        changed |= set_condition(
            &mut conditions,
            ConditionUpdate::new(
                PAUSED_CONDITION,
                false,
                "Resumed",
                "no pause annotation is in force",
            ),
            now,
        );
    }

    if ctx.dry_run && acts {
        if changed {
            let body = status_body(Map::new(), &conditions);
            write_status(ctx, namespace, name, provision, body).await?;
            let note = format!("dry run: {}", decision.reason(observed.count, config));
            record(
                ctx,
                provision,
                EventKind::Normal,
                "DryRun",
                action_of(&decision),
                &note,
            )
            .await;
        }
        return Ok(Action::await_change());
    }

    // --- apply ---
    let reason = decision.reason(observed.count, config);
    let action = match &decision {
        Decision::Start { from, to, .. } => {
            let mut fields = Map::new();
            fields.insert("autoScalingActive".into(), json!(true));
            fields.insert("autoScalingStartedAt".into(), json!(to_k8s_time(now)));
            fields.insert("autoScalingFromCount".into(), json!(from));
            fields.insert("autoScalingTargetCount".into(), json!(to));
            // 1. The flag, through the status subresource, preconditioned.
            let flagged = write_status(
                ctx,
                namespace,
                name,
                provision,
                status_body(fields, &conditions),
            )
            .await?;
            // 2. The count, preconditioned on the version the flag write produced. A conflict
            //    here leaves the flag set with from/target: the next pass finishes the scale-up
            //    (or sees it already applied).
            write_count(ctx, namespace, name, &flagged, *to).await?;
            scaled_up(ctx, provision, namespace, name, &reason).await;
            deadline_action(config, now, now)
        }
        Decision::Finish { to, .. } => {
            write_count(ctx, namespace, name, provision, *to).await?;
            scaled_up(ctx, provision, namespace, name, &reason).await;
            // The conditions were written with the flag; a later pass catches up if not.
            deadline_action(
                config,
                in_flight.as_ref().and_then(|f| f.started_at).unwrap_or(now),
                now,
            )
        }
        Decision::Release { .. } | Decision::Cancel { .. } | Decision::ReleaseEarly { .. } => {
            let mut fields = Map::new();
            fields.insert("autoScalingActive".into(), json!(false));
            // Merge-patch nulls remove the fields: they only mean something while in flight.
            fields.insert("autoScalingStartedAt".into(), Value::Null);
            fields.insert("autoScalingFromCount".into(), Value::Null);
            fields.insert("autoScalingTargetCount".into(), Value::Null);
            // The from-count guard outlives the scale-up: no second one from the same count.
            if let Some(from) = in_flight.as_ref().and_then(|f| f.from) {
                fields.insert("autoScalingLastFromCount".into(), json!(from));
            }
            let released = write_status(
                ctx,
                namespace,
                name,
                provision,
                status_body(fields, &conditions),
            )
            .await?;
            let (event_reason, kind) = match &decision {
                Decision::Release { .. } => ("ScaleUpComplete", EventKind::Normal),
                Decision::ReleaseEarly {
                    cause: EarlyRelease::Requested,
                } => ("ScaleUpReleased", EventKind::Normal),
                Decision::ReleaseEarly { .. } => ("ScaleUpReleased", EventKind::Warning),
                _ => ("ScaleUpCancelled", EventKind::Warning),
            };
            record(ctx, provision, kind, event_reason, "Release", &reason).await;
            // The annotation has done its work; a conflict here re-reads, finds nothing in
            // flight, and removes it as stale.
            if release_annotation.is_some() {
                remove_release_annotation(ctx, namespace, name, &released).await?;
            }
            Action::await_change()
        }
        Decision::Wait { deadline, .. } => {
            if changed {
                write_conditions(ctx, namespace, name, provision, &conditions).await?;
            }
            match deadline {
                Some(at) => requeue_at(*at, now),
                None => Action::await_change(),
            }
        }
        Decision::Stuck { .. }
        | Decision::Hold(_)
        | Decision::Invalid(_)
        | Decision::Ambiguous { .. } => {
            if changed {
                write_conditions(ctx, namespace, name, provision, &conditions).await?;
                match &decision {
                    Decision::Stuck { .. } => {
                        record(
                            ctx,
                            provision,
                            EventKind::Warning,
                            "ClaimsStuck",
                            "Wait",
                            &reason,
                        )
                        .await;
                    }
                    Decision::Invalid(_) => {
                        record(
                            ctx,
                            provision,
                            EventKind::Warning,
                            "InvalidConfig",
                            "Validate",
                            &reason,
                        )
                        .await;
                    }
                    Decision::Ambiguous { .. } => {
                        record(
                            ctx,
                            provision,
                            EventKind::Warning,
                            "AmbiguousPolicies",
                            "Validate",
                            &reason,
                        )
                        .await;
                    }
                    Decision::Hold(Hold::AtMaxProvisions { .. })
                        if reason_changed(
                            &old_conditions,
                            &conditions,
                            decide::CONDITION_AUTO_SCALING,
                        ) =>
                    {
                        record(
                            ctx,
                            provision,
                            EventKind::Warning,
                            "AtMaxProvisions",
                            "Scale",
                            &reason,
                        )
                        .await;
                    }
                    _ => {}
                }
            }
            Action::await_change()
        }
        // Handled before any write.
        Decision::Disabled => Action::await_change(),
    };

    if !is_condition_true(&old_conditions, decide::CONDITION_AT_MAX)
        && is_condition_true(&conditions, decide::CONDITION_AT_MAX)
        && decision.scales()
    {
        let note = format!(
            "count {} reached maxProvisions {}",
            decision.desired_count(observed.count),
            config.map_or(0, |c| c.max_provisions)
        );
        record(
            ctx,
            provision,
            EventKind::Warning,
            "ReachedMaxProvisions",
            "Scale",
            &note,
        )
        .await;
    }
    Ok(action)
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

async fn scaled_up(
    ctx: &Context,
    provision: &WorkshopProvision,
    namespace: &str,
    name: &str,
    reason: &str,
) {
    ctx.own.metrics.scaled_up(&ProvisionLabels {
        namespace: namespace.to_owned(),
        provision: name.to_owned(),
    });
    tracing::info!(%namespace, %name, %reason, "scaled up");
    record(
        ctx,
        provision,
        EventKind::Normal,
        "ScaledUp",
        "Scale",
        reason,
    )
    .await;
}

async fn record(
    ctx: &Context,
    provision: &WorkshopProvision,
    kind: EventKind,
    reason: &str,
    action: &str,
    note: &str,
) {
    let reference = provision.object_ref(&());
    ctx.events
        .record(&reference, kind, reason, action, note)
        .await;
}

/// While in flight: come back when the hold-down expires (the only timer of this controller).
fn deadline_action(config: Option<&Config>, started: DateTime<Utc>, now: DateTime<Utc>) -> Action {
    match config {
        Some(c) => requeue_at(
            started
                .checked_add_signed(c.active_timeout)
                .unwrap_or(started),
            now,
        ),
        None => Action::await_change(),
    }
}

fn requeue_at(at: DateTime<Utc>, now: DateTime<Utc>) -> Action {
    let wait = (at - now).to_std().unwrap_or(Duration::ZERO);
    // A second of slack so the deadline has passed when we look.
    Action::requeue(wait + Duration::from_secs(1))
}

/// The scale-up in flight recorded in the status, if the flag is set.
pub fn in_flight_of(provision: &WorkshopProvision) -> Option<InFlight> {
    let status = provision.status.as_ref()?;
    (status.auto_scaling_active == Some(true)).then(|| InFlight {
        started_at: status.auto_scaling_started_at.as_ref().map(from_k8s_time),
        from: status.auto_scaling_from_count,
        target: status.auto_scaling_target_count,
    })
}

/// The `spec.autoScaling` of every WorkshopScalingPolicy of the namespace whose
/// `workshopSelector` selects `workshop`, by name. A policy that does not deserialize or whose
/// selector cannot be evaluated selects nothing (the API server's schema rejects most such
/// selectors). Without the CRD installed there are no policies.
pub async fn observe_policies(
    ctx: &Context,
    namespace: &str,
    workshop: &Workshop,
) -> Result<Vec<(String, ebb_crds::babylon::AutoScaling)>, Error> {
    let api: Api<DeserializeGuard<WorkshopScalingPolicy>> =
        Api::namespaced(ctx.client.clone(), namespace);
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.is_not_found() => Vec::new(),
        Err(source) => {
            return Err(Error::Observe {
                what: format!("WorkshopScalingPolicies in {namespace}"),
                source,
            });
        }
    };
    let mut out: Vec<(String, ebb_crds::babylon::AutoScaling)> = list
        .into_iter()
        .filter_map(|p| {
            let name = p.name_any();
            match p.0 {
                Ok(policy) if policy_selects(&policy, workshop) => {
                    Some((name, policy.spec.auto_scaling))
                }
                Ok(_) => None,
                Err(invalid) => {
                    tracing::warn!(policy = %name, %namespace, error = %invalid,
                        "WorkshopScalingPolicy does not deserialize; it selects nothing");
                    None
                }
            }
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Whether `policy` selects `workshop`: same namespace, and its `workshopSelector` (absent or
/// empty: everything) matches the Workshop's labels.
pub fn policy_selects(policy: &WorkshopScalingPolicy, workshop: &Workshop) -> bool {
    if policy.namespace() != workshop.namespace() {
        return false;
    }
    let Some(selector) = policy.spec.workshop_selector.clone() else {
        return true;
    };
    match Selector::try_from(selector) {
        Ok(selector) => selector.matches(workshop.labels()),
        Err(error) => {
            tracing::warn!(policy = %policy.name_any(), %error,
                "WorkshopScalingPolicy selector cannot be evaluated; it selects nothing");
            false
        }
    }
}

/// `spec.lifespan.end` (Babylon's free-form `{start, end}`), when it is an RFC 3339 instant.
pub fn lifespan_end(lifespan: Option<&Value>) -> Option<DateTime<Utc>> {
    let end = lifespan?.get("end")?.as_str()?;
    DateTime::parse_from_rfc3339(end)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

async fn observe_seats(ctx: &Context, namespace: &str, workshop: &str) -> Result<Seats, Error> {
    let api: Api<DeserializeGuard<WorkshopUserAssignment>> =
        Api::namespaced(ctx.client.clone(), namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::Observe {
            what: format!("WorkshopUserAssignments in {namespace}"),
            source,
        })?;
    let mut seats = Seats::default();
    for assignment in &list.items {
        // A seat that does not deserialize cannot be counted; it must not stop the others.
        let assignment = match &assignment.0 {
            Ok(a) => a,
            Err(invalid) => {
                tracing::warn!(
                    assignment = %assignment.name_any(), %namespace, error = %invalid,
                    "WorkshopUserAssignment does not deserialize; not counted"
                );
                continue;
            }
        };
        if assignment.spec.workshop_name != workshop {
            continue;
        }
        seats.total = seats.total.saturating_add(1);
        if assignment.spec.assignment.is_some() {
            seats.assigned = seats.assigned.saturating_add(1);
        }
    }
    Ok(seats)
}

/// Whether `claim` belongs to `provision`: by Babylon's label, or by owner reference.
pub fn claim_belongs_to<K: Resource>(claim: &K, provision: &WorkshopProvision) -> bool {
    let name = provision.metadata.name.as_deref().unwrap_or_default();
    let labelled = claim
        .labels()
        .get(WORKSHOP_PROVISION_LABEL)
        .is_some_and(|v| v == name);
    let owned = claim.owner_references().iter().any(|o| {
        o.kind == "WorkshopProvision"
            && match provision.metadata.uid.as_deref() {
                Some(uid) => o.uid == uid,
                None => o.name == name,
            }
    });
    labelled || owned
}

async fn observe_claims(
    ctx: &Context,
    namespace: &str,
    provision: &WorkshopProvision,
) -> Result<Vec<Claim>, Error> {
    let api: Api<DeserializeGuard<ResourceClaim>> = Api::namespaced(ctx.client.clone(), namespace);
    // Not a label-selected list: claims linked only by owner reference count too.
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::Observe {
            what: format!("ResourceClaims in {namespace}"),
            source,
        })?;
    Ok(list
        .items
        .iter()
        .filter(|c| claim_belongs_to(*c, provision))
        .map(|c| Claim {
            name: c.name_any(),
            deleting: c.meta().deletion_timestamp.is_some(),
            // A claim whose status cannot be read has not visibly settled: it holds the flag
            // (fail-safe), and the hold-down reports it by name if it stays so.
            settled: c.0.as_ref().is_ok_and(|c| c.settlement().is_settled()),
        })
        .collect())
}

/// A preconditioned write's answer: the object as the API server returned it, or
/// [`Error::Conflict`] on a 409.
type Written = Result<Box<WorkshopProvision>, Error>;

fn status_body(mut fields: Map<String, Value>, conditions: &[Condition]) -> Map<String, Value> {
    fields.insert(
        "conditions".into(),
        serde_json::to_value(conditions).unwrap_or(Value::Array(Vec::new())),
    );
    fields
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

async fn write_conditions(
    ctx: &Context,
    namespace: &str,
    name: &str,
    base: &WorkshopProvision,
    conditions: &[Condition],
) -> Written {
    write_status(
        ctx,
        namespace,
        name,
        base,
        status_body(Map::new(), conditions),
    )
    .await
}

/// A merge patch of `status` through the status subresource, preconditioned on `base`'s
/// resourceVersion.
async fn write_status(
    ctx: &Context,
    namespace: &str,
    name: &str,
    base: &WorkshopProvision,
    status: Map<String, Value>,
) -> Written {
    let Some(rv) = base.resource_version() else {
        // Never write without a precondition: re-read to get one.
        return Err(Error::Conflict {
            name: format!("{namespace}/{name}"),
        });
    };
    let body = json!({"metadata": {"resourceVersion": rv}, "status": status});
    let api: Api<WorkshopProvision> = Api::namespaced(ctx.client.clone(), namespace);
    match api
        .patch_status(name, &patch_params(), &Patch::Merge(&body))
        .await
    {
        Ok(p) => Ok(Box::new(p)),
        Err(e) if frame::is_conflict(&e) => Err(Error::Conflict {
            name: format!("{namespace}/{name}"),
        }),
        Err(source) => Err(Error::WriteStatus {
            name: format!("{namespace}/{name}"),
            source,
        }),
    }
}

/// Removes [`decide::RELEASE_ANNOTATION`] from the provision, preconditioned on `base`'s
/// resourceVersion.
async fn remove_release_annotation(
    ctx: &Context,
    namespace: &str,
    name: &str,
    base: &WorkshopProvision,
) -> Written {
    let body = json!({"metadata": {"annotations": {decide::RELEASE_ANNOTATION: null}}});
    patch_provision(ctx, namespace, name, base, body).await
}

/// `spec.count = to` as a merge patch preconditioned on `base`'s resourceVersion. Absolute, never
/// an increment: repeating it cannot scale twice.
async fn write_count(
    ctx: &Context,
    namespace: &str,
    name: &str,
    base: &WorkshopProvision,
    to: i32,
) -> Written {
    patch_provision(ctx, namespace, name, base, json!({"spec": {"count": to}})).await
}

/// A merge patch of the provision's main resource carrying `base`'s resourceVersion: a 409 means
/// someone else wrote in between, and the caller re-reads and decides again.
async fn patch_provision(
    ctx: &Context,
    namespace: &str,
    name: &str,
    base: &WorkshopProvision,
    mut body: serde_json::Value,
) -> Written {
    let Some(rv) = base.resource_version() else {
        return Err(Error::Conflict {
            name: format!("{namespace}/{name}"),
        });
    };
    body["metadata"]["resourceVersion"] = json!(rv);
    let api: Api<WorkshopProvision> = Api::namespaced(ctx.client.clone(), namespace);
    match api.patch(name, &patch_params(), &Patch::Merge(&body)).await {
        Ok(p) => Ok(Box::new(p)),
        Err(e) if frame::is_conflict(&e) => Err(Error::Conflict {
            name: format!("{namespace}/{name}"),
        }),
        Err(source) => Err(Error::WriteCount {
            name: format!("{namespace}/{name}"),
            source,
        }),
    }
}
