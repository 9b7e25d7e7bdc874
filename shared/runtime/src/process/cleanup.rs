//! `<controller> cleanup`: what uninstalling runs first (by hand, or as the charts' optional Helm
//! pre-delete hook), so that nothing ebb set on others' objects outlives it.
//!
//! The order makes it safe while the controller still runs: scale the controller's Deployment to 0
//! (`--stop-deployment`) and wait until none of its pods is left, terminating ones included (a
//! replica still stopping, or a standby, would take the Lease again once `cleanup` lets go of it,
//! and re-create it after it is deleted); take its leader Lease (so no replica can write again: a
//! replica that is not the leader writes nothing, and a stopping one lets go of the Lease), then
//! let the controller's own `clean` undo what it set and remove its finalizers, and last delete
//! the Lease it let go of (nothing of the controller is left). With `--dry-run` nothing is scaled
//! or waited for, and the `clean` says what it would do and writes nothing.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

use crate::cli::CleanupArgs;
use crate::execute::frame::{MAX_ATTEMPTS, Shared, is_conflict};
use crate::lead::leader::{LEASE_DURATION_SECS, LeaderElection, LeaderError};
use crate::process::args::CommonArgs;
use crate::{ApiContact, ControllerMetrics, EventPublisher, Shutdown, SystemClock};

/// How long `cleanup` waits for the running controller to let go of its Lease: four lease
/// durations (a replica that stops releases it at once; one that dies, within one duration).
pub const LEASE_WAIT: Duration = Duration::from_secs(4 * LEASE_DURATION_SECS);

/// How long, beyond the longest termination grace period of the stopped Deployment's pods,
/// `cleanup` waits for them to be gone: the Deployment and ReplicaSet controllers act on the scale
/// to 0, and the kubelet stops each container (SIGTERM: the controller lets go of its Lease and
/// exits; SIGKILL when the grace period ends) and removes the pod.
pub const PODS_GONE_MARGIN: Duration = Duration::from_secs(30);

/// How often `cleanup` looks whether the stopped Deployment's pods are gone.
const PODS_POLL: Duration = Duration::from_millis(500);

/// A pod's grace period when it names none (the API server defaults it to 30 s).
const DEFAULT_GRACE_SECS: i64 = 30;

/// What `cleanup` leaves on the objects the controller changed ([`CleanupArgs::keep_settings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Leave {
    /// Nothing: every object gets its own values back (the default).
    #[default]
    Nothing,
    /// The settings in force: only the controller's finalizers (and Lease) go.
    Settings,
}

impl Leave {
    /// What `--keep-settings` (`keep`) asks for.
    pub fn of(keep: bool) -> Self {
        match keep {
            true => Leave::Settings,
            false => Leave::Nothing,
        }
    }
}

/// Why `cleanup` stopped.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// No usable cluster configuration.
    #[error("cannot reach the Kubernetes API: {0}")]
    Client(String),
    /// Scaling the controller's Deployment to 0 failed.
    #[error("scaling Deployment {namespace}/{name} to 0: {source}")]
    StopDeployment {
        /// The Deployment's namespace.
        namespace: String,
        /// The Deployment.
        name: String,
        /// The API's answer.
        #[source]
        source: kube::Error,
    },
    /// The Deployment's scale names no pod selector (an `apps/v1` Deployment always has one), so
    /// there is no telling when its pods are gone.
    #[error(
        "Deployment {namespace}/{name} scaled to 0, but its scale names no pod selector: \
         cannot wait for its pods to stop"
    )]
    NoPodSelector {
        /// The Deployment's namespace.
        namespace: String,
        /// The Deployment.
        name: String,
    },
    /// Listing the stopped Deployment's pods failed.
    #[error("listing the pods of Deployment {namespace}/{name}: {source}")]
    ListPods {
        /// The Deployment's namespace.
        namespace: String,
        /// The Deployment.
        name: String,
        /// The API's answer.
        #[source]
        source: kube::Error,
    },
    /// Pods of the Deployment scaled to 0 were still there when the wait ended: one of them could
    /// take the Lease again after `cleanup` lets go of it.
    #[error(
        "Deployment {namespace}/{name} is scaled to 0, yet after {seconds} s its pods are still \
         there: {}; find out what keeps them (kubectl describe pod), then run cleanup again",
        .pods.join(", ")
    )]
    PodsLeft {
        /// The Deployment's namespace.
        namespace: String,
        /// The Deployment.
        name: String,
        /// The pods still there, terminating ones included.
        pods: Vec<String>,
        /// How long `cleanup` waited.
        seconds: u64,
    },
    /// The Lease could not be competed for.
    #[error("leader election: {0}")]
    Leader(#[from] LeaderError),
    /// A running controller kept the Lease.
    #[error(
        "a running controller still holds Lease {lease} after {seconds} s; stop it first \
         (--stop-deployment NAME, or scale its Deployment to 0)"
    )]
    StillRunning {
        /// `namespace/name`.
        lease: String,
        /// How long `cleanup` waited.
        seconds: u64,
    },
    /// The controller's own clean-up failed.
    #[error("{0}")]
    Clean(String),
    /// The cleaned controller's Lease could not be deleted.
    #[error("deleting Lease {lease}: {source}")]
    DeleteLease {
        /// `namespace/name`.
        lease: String,
        /// The API's answer.
        #[source]
        source: kube::Error,
    },
}

/// Runs `<controller> cleanup` for controller `name`: stops the Deployment (and waits for its pods
/// to be gone), takes the Lease, then runs `clean` on the frame's shared parts (the client,
/// `--dry-run`, an Event recorder), the controller's flags and what to leave (`--keep-settings`). Returns what `clean` reports, one
/// line per object it looked at.
///
/// # Errors
/// [`CleanupError`]: the cluster is unreachable, the Deployment cannot be stopped or its pods stay,
/// the Lease stays held, or `clean` fails (its message).
pub async fn run<R, F, Fut, E>(
    name: &str,
    args: CleanupArgs<R>,
    clean: F,
) -> Result<String, CleanupError>
where
    R: clap::Args + AsRef<CommonArgs>,
    F: FnOnce(Shared, R, Leave) -> Fut,
    Fut: Future<Output = Result<Vec<String>, E>>,
    E: Display,
{
    let common = args.run.as_ref().clone();
    let config = common
        .cluster
        .config_for(&format!("{name}-cleanup"))
        .await
        .map_err(|e| CleanupError::Client(e.to_string()))?;
    let client = Client::try_from(config)
        .map_err(|e| CleanupError::Client(crate::process::kubeconfig::innermost_summary(&e)))?;
    let namespace = &common.lease_namespace;
    if let Some(deployment) = &args.stop_deployment {
        stop_deployment(&client, namespace, deployment, common.dry_run).await?;
    }
    let shutdown = Shutdown::new();
    let contact = ApiContact::new(Arc::new(SystemClock));
    let lease = common.lease(name);
    let leader =
        LeaderElection::elect(lease.as_ref(), client.clone(), &contact, shutdown.clone()).await?;
    let leading = tokio::time::timeout(LEASE_WAIT, leader.wait_until_leader()).await;
    if !matches!(leading, Ok(true)) {
        shutdown.trigger();
        return Err(CleanupError::StillRunning {
            lease: format!("{namespace}/{}", common.lease_name_or(name)),
            seconds: LEASE_WAIT.as_secs(),
        });
    }
    let shared = Shared {
        contact,
        client: client.clone(),
        clock: Arc::new(SystemClock),
        events: Arc::new(EventPublisher::new(client.clone(), name)),
        metrics: ControllerMetrics::new(&mut Registry::default(), name),
        dry_run: common.dry_run,
        leader: leader.clone(),
        own_writes: crate::watch::own_writes::OwnWrites::new(),
    };
    let cleaned = clean(shared, args.run, Leave::of(args.keep_settings)).await;
    shutdown.trigger();
    // Lets go of the Lease.
    leader.join().await;
    let mut lines = cleaned.map_err(|e| CleanupError::Clean(e.to_string()))?;
    if let Some(lease) = lease.filter(|_| !common.dry_run) {
        delete_lease(&client, &lease.namespace, &lease.name).await?;
        lines.push(format!("Lease {lease}: deleted"));
    }
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

/// Deletes the cleaned controller's Lease (gone already: fine).
async fn delete_lease(client: &Client, namespace: &str, name: &str) -> Result<(), CleanupError> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    match leases.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(CleanupError::DeleteLease {
            lease: format!("{namespace}/{name}"),
            source,
        }),
    }
}

/// Scales Deployment `namespace/name` to 0 through its `scale` subresource, then waits until no
/// pod of it is left (nothing of either in a dry run).
async fn stop_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    dry_run: bool,
) -> Result<(), CleanupError> {
    if dry_run {
        tracing::info!(
            %namespace,
            deployment = name,
            "dry run: would scale to 0 and wait for its pods"
        );
        return Ok(());
    }
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"spec": {"replicas": 0}});
    let scale = api
        .patch_scale(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| CleanupError::StopDeployment {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })?;
    tracing::info!(%namespace, deployment = name, "scaled to 0");
    // The API server writes the Deployment's selector (matchLabels and matchExpressions) into
    // its Scale in label-selector syntax, as an HPA reads it; empty would select every pod.
    let selector = scale
        .status
        .and_then(|status| status.selector)
        .filter(|selector| !selector.trim().is_empty())
        .ok_or_else(|| CleanupError::NoPodSelector {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
    wait_for_pods(client, namespace, name, &selector).await
}

/// Waits until no pod matching `selector` in `namespace` (the pods of Deployment `name`, just
/// scaled to 0) is left, terminating ones included: a pod with a deletionTimestamp still runs until
/// it is gone, and could take the Lease again. Looks every [`PODS_POLL`] for up to the longest
/// grace period of the pods seen plus [`PODS_GONE_MARGIN`].
async fn wait_for_pods(
    client: &Client,
    namespace: &str,
    name: &str,
    selector: &str,
) -> Result<(), CleanupError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(selector);
    let start = tokio::time::Instant::now();
    let mut bound = PODS_GONE_MARGIN;
    loop {
        let listed = pods
            .list(&params)
            .await
            .map_err(|source| CleanupError::ListPods {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?;
        let left = still_running(&listed.items);
        if left.is_empty() {
            tracing::info!(%namespace, deployment = name, "no pod left");
            return Ok(());
        }
        bound = bound.max(wait_bound(&left));
        let waited = start.elapsed();
        if waited >= bound {
            return Err(CleanupError::PodsLeft {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                pods: left.iter().map(|pod| pod.name_any()).collect(),
                seconds: waited.as_secs(),
            });
        }
        tracing::debug!(
            %namespace,
            deployment = name,
            pods = left.len(),
            "waiting for the pods to stop"
        );
        tokio::time::sleep(PODS_POLL).await;
    }
}

/// The pods that may still run a replica: all but those whose containers have ended for good
/// (phase `Succeeded` or `Failed`, e.g. evicted: such a pod object can stay for long, yet runs
/// nothing).
fn still_running(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|pod| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .collect()
}

/// How long to wait for `pods` to stop: the longest grace period among them (a terminating pod's
/// own, else its spec's, else the default) plus [`PODS_GONE_MARGIN`].
fn wait_bound(pods: &[&Pod]) -> Duration {
    let longest = pods
        .iter()
        .map(|pod| {
            pod.metadata
                .deletion_grace_period_seconds
                .or_else(|| {
                    pod.spec
                        .as_ref()
                        .and_then(|s| s.termination_grace_period_seconds)
                })
                .unwrap_or(DEFAULT_GRACE_SECS)
        })
        .max()
        .unwrap_or(0);
    PODS_GONE_MARGIN + Duration::from_secs(u64::try_from(longest).unwrap_or(0))
}

/// The `clean` of a controller that sets nothing on others' objects and keeps no finalizer: it
/// says so (`why`), and `cleanup` only stops the controller.
pub fn nothing<R>(
    why: &'static str,
) -> impl FnOnce(Shared, R, Leave) -> std::future::Ready<Result<Vec<String>, std::convert::Infallible>>
{
    move |_, _, _| std::future::ready(Ok(vec![format!("nothing to clean: {why}")]))
}

/// Removes `finalizer` from object `name` of `api` (namespaced for a namespaced kind; a merge patch
/// of `metadata.finalizers` preconditioned on the resourceVersion read; a conflict reads again).
/// Works on objects that do not deserialize into their type. `Ok(false)` when the object is gone or
/// never had it.
///
/// # Errors
/// The API's answer to the read or the write; a conflict on every one of [`MAX_ATTEMPTS`] tries.
pub async fn remove_finalizer(
    api: &Api<DynamicObject>,
    name: &str,
    finalizer: &str,
) -> Result<bool, kube::Error> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(object) = api.get_opt(name).await? else {
            return Ok(false);
        };
        let finalizers = object.meta().finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == finalizer) {
            return Ok(false);
        }
        let keep: Vec<String> = finalizers.into_iter().filter(|f| f != finalizer).collect();
        let keep = if keep.is_empty() {
            Value::Null
        } else {
            json!(keep)
        };
        let patch = json!({"metadata": {
            "resourceVersion": object.meta().resource_version,
            "finalizers": keep,
        }});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(true),
            Err(error) if is_conflict(&error) && attempt < MAX_ATTEMPTS => {}
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;
