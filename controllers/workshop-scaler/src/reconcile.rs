//! The reconciler: reads what [`decide::reads`] names — the provision's Workshop, its
//! namespace's policies, then the seats and claims where they count (from the watches' caches;
//! the policies by a list until their cache has listed) — calls [`decide::decide`] once with one
//! `now`, and hands the plan (the flag, the count, the Events, the gauges) to the runtime's
//! executor (`ebb_runtime::execute`). Nothing here writes to the API server itself.
//!
//! Race safety is the plan's (see `decide::writes`): the flag through the status subresource,
//! then the absolute `spec.count`, each naming the resourceVersion before it. A 409 on either
//! ends the pass with [`frame::Failure::Conflict`], and the frame reads the provision again and
//! runs the pass again; the write is never retried blindly.

use std::sync::Arc;

use ebb_core::plan::Write;
use ebb_crds::babylon::{
    WORKSHOP_PROVISION_LABEL, Workshop, WorkshopProvision, WorkshopUserAssignment,
};
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::execute::Hooks;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, Reconciler};
use ebb_runtime::watch::cache::{Cache, Feed};
use ebb_runtime::watch::guard::Guarded;
use ebb_runtime::watch::packed::{Packed, Projection, Unlabelled};
use kube::api::ListParams;
use kube::{Api, Resource, ResourceExt};

use crate::FIELD_MANAGER;
use crate::decide::writes::SCALE_UP;
use crate::decide::{self, Claim, Gauges, Observed, ProvisionGauges, Seats, WorkshopRead};

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
/// The policies are read from their cache once it has listed; their CRD is optional, and a cache
/// of a kind that is not served never answers, so until then they are listed per reconcile
/// ([`policies_in`]).
///
/// Seats are looked up by workshop and claims by provision ([`Cache::by_key`]): a reconcile costs
/// the seats and claims of its own provision, not a scan of every one of the namespace.
#[derive(Clone)]
pub struct Caches {
    pub workshops: Cache<CachedWorkshop>,
    pub assignments: Cache<CachedSeat>,
    pub claims: Cache<Guarded<ResourceClaim>>,
    pub policies: Cache<Guarded<WorkshopScalingPolicy>>,
}

impl Default for Caches {
    fn default() -> Self {
        Self {
            workshops: Cache::default(),
            assignments: Cache::indexed(seat_keys),
            claims: Cache::indexed(claim_keys),
            policies: Cache::default(),
        }
    }
}

/// The key seats and provisions are looked up by: `namespace/workshop`.
pub fn workshop_key(namespace: &str, workshop: &str) -> String {
    format!("{namespace}/{workshop}")
}

/// A WorkshopProvision as the controller's cache holds it: its metadata but its labels (no rule
/// reads them; `--label-selector` is the API server's to apply) and, packed, the rest.
pub type CachedProvision = Packed<WorkshopProvision, Unlabelled>;

/// A Workshop as the cache holds it: what scaling reads of it ([`Trimmed`]), packed.
pub type CachedWorkshop = Packed<Workshop, Trimmed>;

/// A seat (WorkshopUserAssignment) as the cache holds it: packed, without its labels (no rule
/// reads them).
pub type CachedSeat = Packed<WorkshopUserAssignment, Unlabelled>;

/// What the Workshop cache keeps: [`Workshop::trim`].
#[derive(Debug)]
pub enum Trimmed {}

impl Projection<Workshop> for Trimmed {
    fn project(workshop: &mut Workshop) {
        workshop.trim();
    }
}

/// [`workshop_key`] of a seat that deserializes (a malformed seat is not counted).
fn seat_keys(seat: &CachedSeat) -> Vec<String> {
    match seat.unpack() {
        Ok(seat) => vec![workshop_key(
            &seat.namespace().unwrap_or_default(),
            &seat.spec.workshop_name,
        )],
        Err(_) => Vec::new(),
    }
}

/// `namespace/provision` for each provision a claim may belong to ([`claim_belongs_to`]): its
/// Babylon label, and each WorkshopProvision owner reference by name.
fn claim_keys(claim: &Guarded<ResourceClaim>) -> Vec<String> {
    let namespace = claim.namespace().unwrap_or_default();
    let mut names: Vec<&str> = claim
        .labels()
        .get(WORKSHOP_PROVISION_LABEL)
        .map(String::as_str)
        .into_iter()
        .chain(
            claim
                .owner_references()
                .iter()
                .filter(|o| o.kind == "WorkshopProvision")
                .map(|o| o.name.as_str()),
        )
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| format!("{namespace}/{name}"))
        .collect()
}

/// What fills one scope of the [`Caches`].
pub struct Feeds {
    pub workshops: Feed<CachedWorkshop>,
    pub assignments: Feed<CachedSeat>,
    pub claims: Feed<Guarded<ResourceClaim>>,
    pub policies: Feed<Guarded<WorkshopScalingPolicy>>,
}

impl Caches {
    /// Adds one scope (a watched namespace, or the whole cluster) to every cache.
    pub fn scope(&mut self) -> Feeds {
        Feeds {
            workshops: self.workshops.scope(),
            assignments: self.assignments.scope(),
            claims: self.claims.scope(),
            policies: self.policies.scope(),
        }
    }
}

/// What a reconcile needs: the frame's context around [`Own`]. `dry_run`: decide and report, but
/// write neither the flag nor the count.
pub type Context = frame::Context<Own>;

/// Why a reconcile failed: the frame's common causes. A write that fails with something other
/// than a conflict is counted under `write_status` (a provision's flag and conditions, a
/// policy's status), `write_target` (`spec.count`) or `write_metadata` (the release
/// annotation).
pub type Error = frame::Failure;

/// The reconciler of WorkshopProvisions, run by the frame ([`frame::run`]):
/// one observe -> decide -> apply pass per call. A 409 on any write ends the pass with
/// [`frame::Failure::Conflict`]; the frame then reads the provision again (a GET) and runs the pass
/// again, so the decision always sees the flag another writer set. A provision that does not
/// deserialize (Babylon owns the kind; ebb's typed view needs `count`, `workshopName`,
/// `catalogItem`) is logged, counted under `malformed` and left alone until it changes (the frame's
/// default): whether auto-scaling is enabled on it cannot be known.
impl Reconciler<WorkshopProvision> for Own {
    type Error = Error;
    const NAME: &'static str = crate::CONTROLLER_NAME;

    async fn reconcile(provision: Arc<WorkshopProvision>, ctx: &Context) -> Result<Requeue, Error> {
        // The frame has checked both.
        let namespace = frame::namespace_of(provision.as_ref());
        let name = frame::name_of(provision.as_ref());
        pass(&provision, namespace, name, ctx).await
    }
}

/// One pass: read what [`decide::reads`] asks for (the Workshop and the policies, then the seats
/// and claims where they count), hand [`decide::decide`]'s plan to the runtime's executor.
async fn pass(
    provision: &WorkshopProvision,
    namespace: &str,
    name: &str,
    ctx: &Context,
) -> Result<Requeue, Error> {
    let now = ctx.clock.now();
    let reads = decide::reads(provision);
    let cached = ctx.own.caches.workshops.get(namespace, &reads.workshop)?;
    let unpacked = cached.as_ref().map(|cached| cached.unpack());
    let workshop = match &unpacked {
        None => WorkshopRead::Missing,
        Some(Ok(workshop)) => WorkshopRead::Found(workshop),
        // Reported in the provision's status; its watch maps a fixed Workshop onto this
        // provision, which is reconciled then.
        Some(Err(error)) => WorkshopRead::Unreadable(error),
    };
    // Policies select Workshops: without the Workshop none applies.
    let policies = match workshop {
        WorkshopRead::Found(_) => policies_of(ctx, namespace).await?,
        _ => Vec::new(),
    };
    let (seats, claims) = reads.counts(provision, workshop, &policies, now);
    let observed = Observed {
        provision,
        workshop,
        policies: &policies,
        seats: match seats {
            true => observe_seats(ctx, namespace, &reads.workshop)?,
            false => Seats::default(),
        },
        claims: match claims {
            true => observe_claims(ctx, namespace, provision)?,
            false => Vec::new(),
        },
        dry_run: ctx.dry_run,
    };
    let plan = decide::decide(&observed, now);
    tracing::debug!(%namespace, %name, writes = plan.writes.len(), "decided");
    ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &ctx.own).await
}

impl Hooks<ProvisionGauges> for Own {
    fn written(&self, write: &Write) {
        if write.reason == Some(SCALE_UP) {
            let labels = ProvisionLabels {
                namespace: write.target.namespace.clone().unwrap_or_default(),
                name: write.target.name.clone(),
            };
            tracing::info!(namespace = %labels.namespace, name = %labels.name, "scaled up");
            self.metrics.scaled_up(&labels);
        }
    }

    fn gauges(&self, gauges: ProvisionGauges) {
        let labels = ProvisionLabels {
            namespace: gauges.namespace.clone(),
            name: gauges.name,
        };
        match gauges.gauges {
            Gauges::Keep => {}
            Gauges::Forget => self.metrics.forget(&labels),
            Gauges::Observe(observation) => {
                let workshop = WorkshopLabels {
                    namespace: gauges.namespace,
                    name: gauges.workshop,
                };
                self.metrics.observe(&workshop, &labels, observation);
            }
        }
    }
}

/// Every WorkshopScalingPolicy of `namespace`: from the cache once its watch has listed, else
/// (its CRD not installed, or the watch still listing) by a list; without the CRD there are none.
///
/// # Errors
/// The list failed.
pub async fn policies_in(
    ctx: &Context,
    namespace: &str,
) -> Result<Vec<Guarded<WorkshopScalingPolicy>>, frame::ReadError> {
    if let Ok(cached) = ctx.own.caches.policies.in_namespace(namespace) {
        return Ok(cached.iter().map(|p| p.as_ref().clone()).collect());
    }
    let api: Api<Guarded<WorkshopScalingPolicy>> = Api::namespaced(ctx.client.clone(), namespace);
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(Vec::new()),
        Err(source) => Err(frame::ReadError::of(format!(
            "WorkshopScalingPolicies in {namespace}"
        ))(source)),
    }
}

/// The WorkshopScalingPolicies of `namespace` that deserialize ([`policies_in`]); one that does
/// not is logged and selects nothing.
async fn policies_of(ctx: &Context, namespace: &str) -> Result<Vec<WorkshopScalingPolicy>, Error> {
    Ok(policies_in(ctx, namespace)
        .await?
        .into_iter()
        .filter_map(|p| {
            let name = p.name_any();
            p.0.map_err(|invalid| {
                tracing::warn!(policy = %name, %namespace, error = %invalid,
                    "WorkshopScalingPolicy does not deserialize; it selects nothing");
            })
            .ok()
        })
        .collect())
}

fn observe_seats(ctx: &Context, namespace: &str, workshop: &str) -> Result<Seats, Error> {
    let mut seats = Seats::default();
    // The seats of this workshop alone (a seat that does not deserialize has no key: it is not
    // counted, and does not stop the others).
    let key = workshop_key(namespace, workshop);
    for assignment in ctx.own.caches.assignments.by_key(&key)? {
        let Ok(assignment) = assignment.unpack() else {
            continue;
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
    // The claims linked to this provision by label or by owner reference (the name; the uid is
    // checked below).
    let name = provision.metadata.name.as_deref().unwrap_or_default();
    let mut claims = ctx
        .own
        .caches
        .claims
        .by_key(&format!("{namespace}/{name}"))?;
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
