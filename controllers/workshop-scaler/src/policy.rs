//! The status of WorkshopScalingPolicies: which Workshops each selects, and which of those other
//! policies also select (ambiguous: they do not scale). Status only; the provisions' reconciler
//! reads policies itself ([`crate::reconcile::policies_in`]).

use std::sync::Arc;
use std::time::Duration;

use ebb_crds::babylon::Workshop;
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, Reconciler};

use crate::FIELD_MANAGER;
use crate::decide;
use crate::reconcile::{Context, Error, Own};

/// How soon a policy is looked at again while the Workshop cache has not listed yet.
pub const COLD_RETRY: Duration = Duration::from_secs(5);

/// The reconciler of WorkshopScalingPolicy statuses, run by the frame
/// ([`ebb_runtime::execute::frame::run`]): followers write nothing, a policy
/// that does not deserialize is logged and waits for a change, API trouble backs off per policy.
impl Reconciler<WorkshopScalingPolicy> for Own {
    type Error = Error;
    const NAME: &'static str = crate::CONTROLLER_NAME;

    async fn reconcile(
        policy: Arc<WorkshopScalingPolicy>,
        ctx: &Context,
    ) -> Result<Requeue, Error> {
        reconcile_policy(&policy, ctx).await
    }
}

/// Writes `status.workshopCount`, `status.workshops` and the `Ambiguous` condition of `policy`,
/// when they changed.
async fn reconcile_policy(policy: &WorkshopScalingPolicy, ctx: &Context) -> Result<Requeue, Error> {
    // The frame has checked both.
    let namespace = frame::namespace_of(policy).to_owned();
    let name = frame::name_of(policy).to_owned();
    // From the cache the provisions' Workshop watch fills (that watch triggers this reconcile):
    // listing them would hold every Workshop of the namespace per reconcile.
    // At startup that watch triggers this reconcile while it is still listing: look again
    // shortly, without an error (a Workshop CRD that is not served shows in the provisions').
    let workshops = match ctx.own.caches.workshops.in_namespace(&namespace) {
        Ok(workshops) => workshops,
        Err(cold) => {
            tracing::debug!(%namespace, policy = %name, %cold, "waiting for the Workshops");
            return Ok(Requeue::After(COLD_RETRY));
        }
    };
    let others: Vec<WorkshopScalingPolicy> = crate::reconcile::policies_in(ctx, &namespace)
        .await?
        .into_iter()
        .filter_map(|p| p.0.ok())
        .collect();

    let workshops: Vec<Workshop> = workshops.iter().filter_map(|w| w.unpack().ok()).collect();
    let workshops: Vec<&Workshop> = workshops.iter().collect();
    let (report, unreadable) = decide::policy_report(policy, &workshops, &others);
    for message in unreadable {
        tracing::warn!(%namespace, "{message}");
    }
    let plan = decide::policy_status_plan(policy, &report, ctx.clock.now());
    ebb_runtime::execute::execute(plan, &ctx.shared, FIELD_MANAGER, &()).await
}
