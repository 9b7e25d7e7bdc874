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
//! [`frame::Failure::Conflict`], and ebb-runtime's reconcile frame reads the provision again and runs the
//! pass again (see [`Reconcile`]); the write is never retried blindly. The decision then sees the flag (so it never starts a
//! second scale-up) and finishes the recorded one only while `spec.count` is still exactly
//! `autoScalingFromCount`; `spec.count` is always written as the absolute target, never as an
//! increment. So two reconciles racing, a crash between the writes, a lost answer, a 500 or a
//! duplicate event all end with exactly one increase.

use std::sync::Arc;

use ebb_crds::babylon::{
    WORKSHOP_PROVISION_LABEL, Workshop, WorkshopProvision, WorkshopUserAssignment,
};
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::cache::{Cache, Feed};
use ebb_runtime::frame::{self, Reconciler, WriteError};
use ebb_runtime::from_k8s_time;
use ebb_runtime::guard::Guarded;
use ebb_runtime::pause::pause_report;
use jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Map, Value, json};

use crate::FIELD_MANAGER;
use crate::decide::{
    self, Claim, Gauges, InFlight, Input, Observed, Plan, Seats, Settings, Sources,
};
use crate::metrics::{Metrics, ProvisionLabels, WorkshopLabels};

/// workshop-scaler's own part of the frame's [`Context`]: shared by the provisions' and the
/// policies' reconcilers.
pub struct Own {
    /// workshop-scaler's own gauges and counters.
    pub metrics: Metrics,
    /// What a provision's reconcile reads besides the provision and the policies.
    pub caches: Caches,
}

/// The Workshops, seats and claims a provision's reconcile reads, as the watches that map them
/// onto provisions last saw them: a reconcile reads memory, not the API server (which answered
/// 35 reads per provision to converge when every reconcile listed them). Claims are held
/// trimmed to what their settlement needs ([`ResourceClaim::trim`]), Workshops to what
/// configuration and policy selection read ([`Workshop::trim`]).
///
/// The policies are still listed per reconcile: their CRD is optional, and a cache of a kind
/// that is not served never answers.
#[derive(Clone, Default)]
pub struct Caches {
    pub workshops: Cache<Guarded<Workshop>>,
    pub assignments: Cache<Guarded<WorkshopUserAssignment>>,
    pub claims: Cache<Guarded<ResourceClaim>>,
}

/// What fills one scope of the [`Caches`].
pub struct Feeds {
    pub workshops: Feed<Guarded<Workshop>>,
    pub assignments: Feed<Guarded<WorkshopUserAssignment>>,
    pub claims: Feed<Guarded<ResourceClaim>>,
}

impl Caches {
    /// Adds one scope (a watched namespace, or the whole cluster) to every cache.
    pub fn scope(&mut self) -> Feeds {
        Feeds {
            workshops: self.workshops.scope(),
            assignments: self.assignments.scope(),
            claims: self.claims.scope(),
        }
    }
}

/// What a reconcile needs: the frame's context around [`Own`]. `dry_run`: decide and report, but
/// write neither the flag nor the count.
pub type Context = frame::Context<Own>;

/// Why a reconcile failed: the frame's common causes. A write that fails with something other
/// than a conflict is counted under `write_status` (a provision's flag and conditions),
/// `write_count` (`spec.count` or the release annotation) or `write_policy_status`.
pub type Error = frame::Failure;

/// The reconciler of WorkshopProvisions, run by the frame ([`frame::reconcile`]`::<Reconcile>`):
/// one observe -> decide -> apply pass per call. A 409 on any write ends the pass with
/// [`frame::Failure::Conflict`]; the frame then reads the provision again (a GET) and runs the pass again,
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
        // The frame has checked both.
        let namespace = frame::namespace_of(provision.as_ref());
        let name = frame::name_of(provision.as_ref());
        pass(&provision, namespace, name, ctx).await
    }
}

/// One pass: read what the decision needs, call [`decide::plan`] once with one `now`, execute
/// the plan.
async fn pass(
    provision: &WorkshopProvision,
    namespace: &str,
    name: &str,
    ctx: &Context,
) -> Result<Action, Error> {
    let now = ctx.clock.now();

    // Configuration first; a disabled provision needs nothing else.
    let workshop_name = &provision.spec.workshop_name;
    let (workshop, unreadable) = match ctx.own.caches.workshops.get(namespace, workshop_name)? {
        None => (None, None),
        Some(guarded) => match &guarded.0 {
            Ok(workshop) => (Some(workshop.clone()), None),
            // Reported in the provision's status; its watch maps a fixed Workshop onto this
            // provision, which is reconciled then.
            Err(invalid) => (None, Some(invalid.error.clone())),
        },
    };
    // Policies select Workshops: without the Workshop none applies.
    let policies = match &workshop {
        Some(w) => observe_policies(ctx, namespace, w).await?,
        None => Vec::new(),
    };
    let sources = Sources {
        provision: provision.spec.auto_scaling.as_ref(),
        workshop: workshop.as_ref().and_then(|w| w.spec.auto_scaling.as_ref()),
        policies: &policies,
    };
    let settings = match unreadable {
        None => decide::settings_of(&sources),
        Some(error) => decide::settings_with_unreadable_workshop(&sources, workshop_name, &error),
    };
    let status = provision.status.clone().unwrap_or_default();
    let pause = match settings {
        Settings::Disabled => None,
        _ => pause_report(
            [("WorkshopProvision", &provision.metadata)],
            &status.conditions,
            provision.metadata.generation,
            now,
        ),
    };
    let in_flight = in_flight_of(provision);
    let release_annotation = provision
        .annotations()
        .get(decide::RELEASE_ANNOTATION)
        .cloned();
    // Seats only matter to a valid, unpaused configuration; claims only while in flight.
    let reads = pause.is_none() && settings.config().is_some();
    let seats = match reads {
        true => observe_seats(ctx, namespace, workshop_name)?,
        false => Seats::default(),
    };
    let claims = match reads && in_flight.is_some() {
        true => observe_claims(ctx, namespace, provision)?,
        false => Vec::new(),
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
    let plan = decide::plan(&Input {
        settings: &settings,
        pause: pause.as_ref(),
        observed: &observed,
        conditions: &status.conditions,
        release_annotation: release_annotation.is_some(),
        dry_run: ctx.dry_run,
        now,
    });
    tracing::debug!(%namespace, %name, decision = ?plan.decision, "decided");
    execute(ctx, provision, workshop_name, plan).await
}

/// Carries out `plan` in its order: gauges, the stale annotation, status, count, Events, the
/// used release annotation. Each write is preconditioned on the version the previous returned.
async fn execute(
    ctx: &Context,
    provision: &WorkshopProvision,
    workshop: &str,
    plan: Plan,
) -> Result<Action, Error> {
    let namespace = frame::namespace_of(provision);
    let name = frame::name_of(provision);
    let labels = ProvisionLabels {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    };
    match plan.gauges {
        Gauges::Keep => {}
        Gauges::Forget => ctx.own.metrics.forget(&labels),
        Gauges::Observe(observation) => {
            let workshop = WorkshopLabels {
                namespace: namespace.to_owned(),
                name: workshop.to_owned(),
            };
            ctx.own.metrics.observe(&workshop, &labels, observation);
        }
    }
    let mut latest: Option<Box<WorkshopProvision>> = None;
    if plan.remove_stale_release {
        latest = Some(remove_release_annotation(ctx, namespace, name, provision).await?);
    }
    if let Some(status) = plan.status {
        let base = latest.as_deref().unwrap_or(provision);
        latest = Some(write_status(ctx, namespace, name, base, status).await?);
    }
    if let Some(count) = plan.count {
        let base = latest.as_deref().unwrap_or(provision);
        latest = Some(write_count(ctx, namespace, name, base, count).await?);
    }
    if plan.scaled_up {
        ctx.own.metrics.scaled_up(&labels);
        tracing::info!(%namespace, %name, reason = %plan.reason, "scaled up");
    }
    let reference = provision.object_ref(&());
    for notice in &plan.notices {
        ctx.events.notify(&reference, notice).await;
    }
    if plan.remove_release {
        let base = latest.as_deref().unwrap_or(provision);
        remove_release_annotation(ctx, namespace, name, base).await?;
    }
    Ok(plan
        .requeue
        .map_or_else(Action::await_change, Action::requeue))
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
    let api: Api<Guarded<WorkshopScalingPolicy>> = Api::namespaced(ctx.client.clone(), namespace);
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.is_not_found() => Vec::new(),
        Err(source) => {
            let what = format!("WorkshopScalingPolicies in {namespace}");
            return Err(frame::ReadError::of(what)(source).into());
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
pub fn lifespan_end(lifespan: Option<&Value>) -> Option<Timestamp> {
    let end = lifespan?.get("end")?.as_str()?;
    end.parse().ok()
}

fn observe_seats(ctx: &Context, namespace: &str, workshop: &str) -> Result<Seats, Error> {
    let mut seats = Seats::default();
    for assignment in ctx.own.caches.assignments.in_namespace(namespace)? {
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

fn observe_claims(
    ctx: &Context,
    namespace: &str,
    provision: &WorkshopProvision,
) -> Result<Vec<Claim>, Error> {
    // Every claim of the namespace: claims linked only by owner reference count too.
    let mut claims = ctx.own.caches.claims.in_namespace(namespace)?;
    // The cache holds no order; the decision reports claims by name.
    claims.sort_by_key(|c| c.name_any());
    Ok(claims
        .iter()
        .filter(|c| claim_belongs_to(c.as_ref(), provision))
        .map(|c| Claim {
            name: c.name_any(),
            deleting: c.meta().deletion_timestamp.is_some(),
            // A claim whose status cannot be read has not visibly settled: it holds the flag
            // (fail-safe), and the hold-down reports it by name if it stays so.
            settled: c.0.as_ref().is_ok_and(|c| c.settlement().is_settled()),
        })
        .collect())
}

fn stale(namespace: &str, name: &str) -> Error {
    Error::stale(format!("WorkshopProvision {namespace}/{name}"))
}

/// A preconditioned write's answer: the object as the API server returned it, or
/// [`frame::Failure::Conflict`] on a 409.
type Written = Result<Box<WorkshopProvision>, Error>;

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
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
        return Err(stale(namespace, name));
    };
    let body = json!({"metadata": {"resourceVersion": rv}, "status": status});
    let api: Api<WorkshopProvision> = Api::namespaced(ctx.client.clone(), namespace);
    match api
        .patch_status(name, &patch_params(), &Patch::Merge(&body))
        .await
    {
        Ok(p) => Ok(Box::new(p)),
        Err(e) if frame::is_conflict(&e) => Err(stale(namespace, name)),
        Err(source) => Err(WriteError::of(
            "write_status",
            format!("writing the status of WorkshopProvision {namespace}/{name}"),
        )(source)
        .into()),
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
        return Err(stale(namespace, name));
    };
    body["metadata"]["resourceVersion"] = json!(rv);
    let api: Api<WorkshopProvision> = Api::namespaced(ctx.client.clone(), namespace);
    match api.patch(name, &patch_params(), &Patch::Merge(&body)).await {
        Ok(p) => Ok(Box::new(p)),
        Err(e) if frame::is_conflict(&e) => Err(stale(namespace, name)),
        Err(source) => Err(WriteError::of(
            "write_count",
            format!("writing WorkshopProvision {namespace}/{name}"),
        )(source)
        .into()),
    }
}
