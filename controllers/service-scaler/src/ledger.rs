//! The hibernation ledger's upkeep ([`decide::ledger`]): its ConfigMap made when this replica
//! starts to lead, and the workload of every ServiceScaler deleted without ebb's finalizer woken:
//! at each start of leading (those deleted while no replica led), then for each deletion the
//! watch reports.

use std::sync::Arc;
use std::time::Duration;

use crate::decide;
use ebb_core::plan::Target;
use ebb_crds::service_scaler::ServiceScaler;
use ebb_runtime::execute::frame;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, PostParams};
use tokio::sync::mpsc;

use crate::reconcile::{Context, Error};

/// The upkeep's key in the context's backoff: a failed settle waits about 1 s, 2 s, 4 s ... up to
/// five minutes before the next whole settle (with jitter, as an object's retries), and a settled
/// ledger resets it. No object's key (`namespace/name`) has a space.
const BACKOFF_KEY: &str = "(hibernation ledger)";
/// How often a leader checks it still leads between deletions.
const LEADING_CHECK: Duration = Duration::from_secs(1);

/// Runs until shutdown: while this replica leads, settles the whole ledger once, then the entry of
/// each ServiceScaler `gone` names (`namespace/name`).
pub async fn upkeep(ctx: Arc<Context>, mut gone: mpsc::UnboundedReceiver<String>) {
    if ctx.own.ledger.is_none() {
        return;
    }
    loop {
        if !ctx.leader.wait_until_leader().await {
            return;
        }
        if let Err(error) = settle(&ctx, None, Occasion::Leading).await {
            let wait = ctx.backoff.failed(BACKOFF_KEY);
            tracing::warn!(%error, ?wait, "cannot settle the hibernation ledger; trying again");
            tokio::time::sleep(wait).await;
            continue;
        }
        ctx.backoff.succeeded(BACKOFF_KEY);
        while ctx.leader.is_leader() {
            tokio::select! {
                key = gone.recv() => {
                    let Some(key) = key else { return };
                    let key = key.replacen('/', ".", 1);
                    if let Err(error) = settle(&ctx, Some(&key), Occasion::Leading).await {
                        tracing::warn!(%error, %key, "cannot settle a hibernation ledger entry");
                        // Settled with the whole ledger at the next look.
                        tokio::time::sleep(ctx.backoff.failed(BACKOFF_KEY)).await;
                        break;
                    }
                }
                () = tokio::time::sleep(LEADING_CHECK) => {}
            }
        }
    }
}

/// When the ledger is settled, which decides what counts as gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occasion {
    /// A replica leads (at its start, then per deletion): the ledger is made if it is missing,
    /// and the workload of a ServiceScaler that no longer exists (or has another uid) is woken.
    /// A ServiceScaler that exists but does not fit the type is still there (its `SpecValid`
    /// says why): its workload waits for it to be fixed or deleted.
    Leading,
    /// `cleanup`, before an uninstall: the ledger is not made, and a ServiceScaler that does not
    /// fit the type counts as gone too. Nothing will read it after the uninstall, and the ledger
    /// still holds the count its workload returns to.
    Uninstall,
}

/// Wakes the workloads of the ledger's entries (all, or `only`) whose ServiceScaler is gone (as
/// `occasion` counts it), and clears those entries. An entry that cannot be settled (a read or
/// write failed) holds up no other: the others are settled, then the first failure returned.
///
/// # Errors
/// The ledger could not be read or made, or an entry could not be settled.
pub async fn settle(ctx: &Context, only: Option<&str>, occasion: Occasion) -> Result<(), Error> {
    let Some(ledger) = &ctx.own.ledger else {
        return Ok(());
    };
    let namespace = ledger.namespace.as_deref().unwrap_or_default();
    let describe = || format!("ConfigMap {namespace}/{}", ledger.name);
    let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    let Some(map) = maps
        .get_opt(&ledger.name)
        .await
        .map_err(frame::ReadError::of(describe()))?
    else {
        if occasion == Occasion::Leading && !ctx.dry_run {
            make(&maps, &ledger.name)
                .await
                .map_err(frame::WriteError::of("create", describe()))?;
        }
        return Ok(());
    };
    let entries = map.data.unwrap_or_default();
    let mut first_failure = None;
    for (key, value) in entries.iter().filter(|(k, _)| only.is_none_or(|o| o == *k)) {
        if let Err(error) = settle_entry(ctx, ledger, key, value, occasion).await {
            tracing::warn!(%key, %error, "cannot settle a hibernation ledger entry");
            first_failure.get_or_insert(error);
        }
    }
    first_failure.map_or(Ok(()), Err)
}

/// Settles one entry of the ledger: wakes its workload and clears it if its ServiceScaler is gone.
async fn settle_entry(
    ctx: &Context,
    ledger: &Target,
    key: &str,
    value: &str,
    occasion: Occasion,
) -> Result<(), Error> {
    let Some((scaler_namespace, name)) = decide::ledger::key_parts(key) else {
        return Ok(());
    };
    let entry: decide::ledger::LedgerEntry = match serde_json::from_str(value) {
        Ok(entry) => entry,
        Err(error) => {
            tracing::warn!(%key, %error, "an entry of the hibernation ledger does not read; left as it is");
            return Ok(());
        }
    };
    // Read as any object: a ServiceScaler whose spec does not fit the type still has a uid.
    let scalers: Api<DynamicObject> = Api::namespaced_with(
        ctx.client.clone(),
        scaler_namespace,
        &ApiResource::erase::<ServiceScaler>(&()),
    );
    let described = format!("ServiceScaler {scaler_namespace}/{name}");
    let present = scalers
        .get_opt(name)
        .await
        .map_err(frame::ReadError::of(described.clone()))?
        .filter(|s| s.uid().as_deref() == Some(entry.uid.as_str()));
    let why = match present {
        None => decide::ledger::Orphaned::Deleted,
        // At an uninstall, one that does not fit the type counts as gone; it is read as such
        // only then.
        Some(scaler) if occasion == Occasion::Uninstall => {
            if crate::reconcile::typed(scaler, &described).is_ok() {
                return Ok(());
            }
            decide::ledger::Orphaned::Unreadable
        }
        // Still there (while a replica leads, an unreadable one waits to be fixed).
        Some(_) => return Ok(()),
    };
    let scale = workload_scale(ctx, scaler_namespace, &entry).await?;
    let plan = decide::ledger::orphan_plan(ledger, (key, &entry), why, scale.as_ref());
    for note in plan.notes() {
        tracing::info!(%key, "ServiceScaler will not wake its workload: {note}");
    }
    ebb_runtime::execute::execute(plan, &ctx.shared, crate::FIELD_MANAGER, &ctx.own).await?;
    Ok(())
}

/// Deletes the ledger (`cleanup`, once every workload is given back); says so, or what a dry run
/// would have done. `None` when there was none.
///
/// # Errors
/// The delete failed.
pub async fn remove(ctx: &Context) -> Result<Option<String>, Error> {
    let Some(ledger) = &ctx.own.ledger else {
        return Ok(None);
    };
    let namespace = ledger.namespace.as_deref().unwrap_or_default();
    let described = format!("ConfigMap {namespace}/{} (hibernation ledger)", ledger.name);
    if ctx.dry_run {
        return Ok(Some(format!("{described}: dry run: would have deleted it")));
    }
    let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    match maps.delete(&ledger.name, &Default::default()).await {
        Ok(_) => Ok(Some(format!("{described}: deleted"))),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(frame::WriteError::of("delete", described)(error).into()),
    }
}

/// `ledger` if it exists.
///
/// # Errors
/// It cannot be read.
pub async fn existing(
    client: &kube::Client,
    ledger: Target,
) -> Result<Option<Target>, frame::Failure> {
    let namespace = ledger.namespace.clone().unwrap_or_default();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let found = maps
        .get_opt(&ledger.name)
        .await
        .map_err(frame::ReadError::of(format!(
            "ConfigMap {namespace}/{}",
            ledger.name
        )))?;
    Ok(found.map(|_| ledger))
}

/// The ledger, empty (another replica may have made it first).
async fn make(maps: &Api<ConfigMap>, name: &str) -> Result<(), kube::Error> {
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                [(
                    "app.kubernetes.io/managed-by".to_owned(),
                    "ebb-service-scaler".to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    match maps.create(&PostParams::default(), &map).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The Scale of the workload `entry` names, `None` when it is gone or of a kind not scaled.
async fn workload_scale(
    ctx: &Context,
    namespace: &str,
    entry: &decide::ledger::LedgerEntry,
) -> Result<Option<Scale>, Error> {
    let workload = &entry.scale_target_ref;
    let Some(resource) = decide::scale_resource(workload) else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &resource);
    match api.get_scale(&workload.name).await {
        Ok(scale) => Ok(Some(scale)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(frame::ReadError::of(format!(
            "the scale of {} {namespace}/{}",
            workload.kind, workload.name
        ))(error)
        .into()),
    }
}
