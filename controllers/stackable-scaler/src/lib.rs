//! stackable-scaler: a `StackableScaler` (`autoscaling.stackable.tech/v1alpha1`) is the `/scale`
//! target of an HPA; this crate moves the workload behind it through
//! `Idle -> PreScaling -> Scaling -> PostScaling -> Idle` (and `Failed`), running hooks before and
//! after its replicas change, so data is moved off a node before the node is removed.
//!
//! As a library, a product operator embeds it: implement [`hooks::ScalingHooks`] and
//! [`engine::ScaleTarget`], build the scaler and HPA with [`builders`], and call
//! [`engine::reconcile_scaler`] (or [`engine::scaler_pass`], one pass that stops at a conflict,
//! under a controller that re-runs on conflicts itself). As a binary, it serves any StatefulSet or
//! Deployment that owns a StackableScaler, running hooks as Jobs from `spec.hooks` ([`jobs`]).
//!
//! Every rule lives in [`decide`]; [`steps`] is the one loop that steps it (decide, save, act,
//! decide again), run against the cluster by [`engine`] and without it by `--dry-run` and `plan`;
//! [`reconcile`] is the standalone controller (run in the shared reconcile frame,
//! [`ebb_runtime::execute::frame`]), [`webhook`] the optional admission webhook, [`plan`] the offline
//! `plan` subcommand.

ebb_runtime::controller_names!("stackable-scaler");
/// The scope of the controller's own kind: StackableScalers are namespaced.
pub const KIND: ebb_runtime::process::app::Kind = ebb_runtime::process::app::Kind::Namespaced;

pub mod builders;
pub use stackable_scaler_decide as decide;
pub mod engine;
pub use stackable_scaler_decide::hooks;
pub mod jobs;
pub use stackable_scaler_decide::{replicas, steps};

pub use builders::{
    ScalerIdentity, build_hpa_from_user_spec, build_scaler, initialize_scaler_status,
    scale_target_ref,
};
pub use decide::{ABORT_ANNOTATION, RETRY_ANNOTATION, StageTimeouts, WorkloadState};
pub use engine::{
    HookLedger, ScaleTarget, ScalerError, ScalingCondition, ScalingResult, TargetError,
    reconcile_scaler, scaler_pass,
};
pub use hooks::{
    HookError, HookKind, HookOutcome, HookResult, NoHooks, ScaleDirection, ScalingContext,
    ScalingHooks,
};
pub use replicas::{AutoConfig, HpaConfig, ReplicasConfig, ReplicasConfigError};
pub mod metrics;
pub mod plan;
pub mod reconcile;
pub mod webhook;
pub mod workload;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ebb_crds::stackable::StackableScaler;
use ebb_runtime::CommonArgs;
use ebb_runtime::execute::frame;
use ebb_runtime::process::app::{Wiring, scoped_api, scopes, watcher_config};
use ebb_runtime::watch::contact::resilient;
use ebb_runtime::watch::packed::Packed;
use futures::FutureExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};

/// Flags of the controller (`stackable-scaler` without a subcommand).
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Flags every ebb controller takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Serve the validating admission webhook that rejects `spec.replicas` changes while an
    /// operation is in flight.
    #[arg(long, env = "EBB_ENABLE_WEBHOOK")]
    pub enable_webhook: bool,
    /// Address of the webhook's TLS server.
    #[arg(long, env = "EBB_WEBHOOK_ADDR", default_value = "0.0.0.0:8443")]
    pub webhook_addr: SocketAddr,
    /// Directory holding `tls.crt` and `tls.key` (a mounted Secret).
    #[arg(
        long,
        env = "EBB_WEBHOOK_CERT_DIR",
        default_value = "/etc/ebb/webhook-certs"
    )]
    pub webhook_cert_dir: PathBuf,
    /// The ServiceAccounts hook Jobs may run as (comma-separated). A hook whose Job template
    /// names another (or, naming none, when `default` is not listed) is not started, and its
    /// operation fails naming the account: whoever may create a StackableScaler cannot get a Job
    /// running as any ServiceAccount of the namespace.
    #[arg(
        long,
        env = "EBB_HOOK_SERVICE_ACCOUNTS",
        value_delimiter = ',',
        default_value = "default"
    )]
    pub hook_service_accounts: Vec<String>,
}

impl AsRef<CommonArgs> for RunArgs {
    fn as_ref(&self) -> &CommonArgs {
        &self.common
    }
}

/// Runs the controller (and, with `--enable-webhook`, the admission webhook) until SIGTERM.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    // The webhook's certificate and port are checked before anything starts.
    let listener = if args.enable_webhook {
        let config = webhook::tls_config(&args.webhook_cert_dir)?;
        Some(webhook::TlsListener::bind(args.webhook_addr, config).await?)
    } else {
        None
    };
    ebb_runtime::process::app::run(
        CONTROLLER_NAME,
        KIND,
        args,
        metrics::Metrics::new,
        |args, wiring, metrics| {
            if let Some(listener) = listener {
                let live = Arc::new(wiring.client.clone());
                let stop = wiring.shutdown.clone();
                tokio::spawn(async move {
                    if let Err(error) = webhook::serve(listener, live, stop.clone()).await {
                        tracing::error!(%error, "webhook stopped; shutting down");
                        stop.trigger();
                    }
                });
            }
            controllers(args, wiring, metrics)
        },
    )
    .await?;
    Ok(())
}

/// The controller's watches and reconciles on `wiring`, until its shutdown: what the binary runs
/// after its process edges are up, and what the simulator runs on virtual time.
pub fn controllers(
    args: RunArgs,
    wiring: Wiring,
    metrics: metrics::Metrics,
) -> impl Future<Output = ()> + Send + 'static {
    let common = &args.common;
    let client = wiring.client.clone();
    let scopes = scopes(common);
    // The hook Jobs' watch of each scope fills one cache, which every scope's scalers read.
    let mut jobs = jobs::job_cache();
    let job_feeds: Vec<_> = scopes.iter().map(|_| jobs.scope()).collect();
    let ctx = wiring.context(reconcile::Own {
        metrics,
        ledger: engine::HookLedger::new(),
        hook_accounts: hooks::HookAccounts::new(&args.hook_service_accounts),
        jobs,
    });

    let config = watcher_config(common);
    let mut controllers = Vec::new();
    // /readyz turns green once every scaler cache holds its first full list.
    let warm_up = wiring.warm_up.clone();
    for (scope, job_feed) in scopes.iter().zip(job_feeds) {
        let scope = scope.as_deref();
        // Packed (as `Guarded`, one scaler that does not deserialize cannot stall the watch;
        // its hook templates are held as compressed JSON, decoded once per pass). The workload
        // owns the scaler, not the other way round: the scalers are looked up by the uids their
        // owner references name, so a workload maps to its scalers without a scan of them all.
        let (controller, owned) = ebb_runtime::process::app::controller_with_lookup(
            scoped_api::<CachedScaler>(&client, scope),
            config.clone(),
            &warm_up,
            owner_uids,
        );
        // Every change of the workload counts (no predicate), so its pause annotations reach
        // the scaler as soon as they are set or removed.
        let by_owner = move |uid: Option<String>| {
            let owned = owned.clone();
            move || -> Vec<ObjectRef<CachedScaler>> {
                uid.as_deref()
                    .map(|uid| owned.refs(uid))
                    .unwrap_or_default()
            }
        };
        let sts_map = by_owner.clone();
        let deploy_map = by_owner;
        // Every watch waits through `resilient` (the controller's merged triggers do not).
        let contact = warm_up.contact();
        let jobs = job_feed.watch(
            scoped_api::<Job>(&client, scope),
            watcher::Config::default().labels(jobs::LABEL_SCALER_UID),
            contact,
            jobs::trim_cached,
        );
        // Metadata only: the mapping needs the uid, and a metadata watch still sees every
        // change (its resourceVersion moves with the status too).
        let sets = resilient(
            {
                let api = scoped_api::<PartialObjectMeta<StatefulSet>>(&client, scope);
                move || watcher::watcher(api.clone(), watcher::Config::default())
            },
            contact,
            "StatefulSet",
        );
        let deployments = resilient(
            {
                let api = scoped_api::<PartialObjectMeta<Deployment>>(&client, scope);
                move || watcher::watcher(api.clone(), watcher::Config::default())
            },
            contact,
            "Deployment",
        );
        let controller = controller
            .owns_stream(jobs)
            .watches_stream(
                sets.touched_objects(),
                move |s: PartialObjectMeta<StatefulSet>| sts_map(s.uid())(),
            )
            .watches_stream(
                deployments.touched_objects(),
                move |d: PartialObjectMeta<Deployment>| deploy_map(d.uid())(),
            )
            .graceful_shutdown_on({
                let stop = wiring.shutdown.clone();
                async move { stop.cancelled().await }
            });
        // A scaler deleted (without its reconcile seeing it go): drop its stage series and
        // the hook answers kept for it.
        let gone = {
            let ctx = ctx.clone();
            move |key: &str| {
                if let Some((namespace, name)) = key.split_once('/') {
                    ctx.own.metrics.forget(namespace, name);
                }
                ctx.own.ledger.forget(key);
            }
        };
        controllers.push(frame::run(controller, ctx.clone(), gone).boxed());
    }
    futures::future::join_all(controllers).map(|_| ())
}

/// A StackableScaler as the controller's cache holds it: its metadata and, packed, the rest.
pub type CachedScaler = Packed<StackableScaler>;

/// The uids a scaler's owner references name: the workloads whose events run it.
pub fn owner_uids(scaler: &CachedScaler) -> Vec<String> {
    scaler
        .owner_references()
        .iter()
        .map(|o| o.uid.clone())
        .collect()
}

ebb_runtime::controller! {
    /// stackable-scaler as ebb runs it: the binary's one `main` and the simulator's `World::run`.
    pub struct StackableScalerController;
    about: "StackableScaler: a /scale target for an HPA that runs hooks before and after the \
            workload's replicas change",
    plan: "Print the state machine's next step for a StackableScaler manifest (no cluster needed)",
    // Nothing of ebb's outlives it: cleanup only stops the controller.
    clean: ebb_runtime::process::cleanup::nothing(
        "stackable-scaler keeps no finalizers, and its hook Jobs belong to their StackableScalers",
    ) => std::convert::Infallible,
    // Its webhook's port is bound (and its certificate read) before anything starts.
    run: run,
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
