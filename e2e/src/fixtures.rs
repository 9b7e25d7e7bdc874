//! What several test files set up the same way: Babylon's CRDs (stock or with `spec.autoScaling`),
//! an auto-scaled Workshop with its provision, and stackable-scaler's StatefulSet `db` with its
//! scaler.

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::{Setup, eventually, repo_root};

/// Applies Babylon's Workshop and WorkshopProvision CRDs: the auto-scaling PR's (`variant`, with
/// `spec.autoScaling`) or the published ones. The new schema is in force once a write is pruned
/// by it; callers check that.
///
/// # Errors
/// A file is missing or the API server refuses it.
pub async fn babylon_crds(admin: &Client, variant: bool) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for plural in ["workshops", "workshopprovisions"] {
        let file = if variant {
            format!("e2e/crds/variants/{plural}.babylon.gpte.redhat.com-autoscaling.yaml")
        } else {
            format!("e2e/crds/{plural}.babylon.gpte.redhat.com.yaml")
        };
        let crd: CustomResourceDefinition =
            serde_saphyr::from_str(&std::fs::read_to_string(repo_root().join(&file))?)
                .with_context(|| format!("parse {file}"))?;
        let name = crd.metadata.name.clone().context("CRD without a name")?;
        api.patch(
            &name,
            &PatchParams::apply("ebb-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("apply {file}"))?;
    }
    Ok(())
}

/// Workshop `workshop` with `spec.autoScaling` (threshold 0.5, factor 2, at most 50), applied
/// until the schema in force keeps it (just after [`babylon_crds`] it may still prune it), and
/// its WorkshopProvision `provision` of count 1.
///
/// # Errors
/// The API server refuses a write, or keeps pruning `spec.autoScaling` for 10 s.
pub async fn autoscaled_workshop(setup: &Setup, workshop: &str, provision: &str) -> Result<()> {
    eventually(std::time::Duration::from_secs(10), || async {
        let w = setup.apply(json!({
            "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop", "metadata": {"name": workshop},
            "spec": {"autoScaling": {"enabled": true, "threshold": 0.5, "scaleFactor": 2.0, "maxProvisions": 50}}
        })).await.ok()?;
        w.data["spec"]["autoScaling"]["enabled"].as_bool()
    })
    .await?;
    setup
        .apply(json!({
            "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
            "metadata": {"name": provision},
            "spec": {"catalogItem": {"name": "lab", "namespace": "catalog"}, "count": 1,
                     "workshopName": workshop}
        }))
        .await?;
    Ok(())
}

/// The StatefulSet `db` (2 replicas, settled) and its StackableScaler without hooks, owned by it.
///
/// # Errors
/// The API server refuses a write.
pub async fn stackable_db(setup: &Setup) -> Result<()> {
    let sts = setup
        .apply(json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "db", "image": "db:1"}]}}}
        }))
        .await?;
    settle_db(setup, 2).await?;
    setup
        .apply(json!({
            "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
            "metadata": {"name": "db", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                "name": "db", "uid": sts.uid().context("StatefulSet without uid")?, "controller": true}]},
            "spec": {"replicas": 2}
        }))
        .await?;
    Ok(())
}

/// Settles StatefulSet `db` at `replicas`, as its controller would (the suite's control plane
/// runs none).
///
/// # Errors
/// The API server refuses the read or the write.
pub async fn settle_db(setup: &Setup, replicas: i32) -> Result<()> {
    let sets: Api<StatefulSet> = Api::namespaced(setup.admin.clone(), &setup.namespace);
    let generation = sets
        .get("db")
        .await?
        .metadata
        .generation
        .context("StatefulSet without generation")?;
    sets.patch_status("db", &PatchParams::default(), &Patch::Merge(json!({"status": {
        "replicas": replicas, "readyReplicas": replicas, "currentReplicas": replicas,
        "updatedReplicas": replicas, "availableReplicas": replicas, "observedGeneration": generation}})))
        .await?;
    Ok(())
}
