//! Charts installed by Helm onto the node cluster ([`crate::node_cluster`]), as users install
//! them, and what the node reports about their pods.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Client;
use kube::api::{Api, ListParams};

use crate::rbac::helm;
use crate::{Cluster, repo_root};

/// What every install on the test node sets: the images `.ci/images` built and the node
/// imported (tag `dev`), never pulled.
pub const LOCAL_IMAGES: [&str; 2] = ["image.tag=dev", "image.pullPolicy=Never"];

/// How long `helm --wait` may take for one release.
const TIMEOUT: &str = "180s";

/// Held while a chart carrying shared CRDs installs or upgrades (see `Release::run_timed`).
static SHARED_CRDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One Helm release of `charts/<chart>`.
pub struct Release<'a> {
    cluster: &'a Cluster,
    pub chart: String,
    pub name: String,
    pub namespace: String,
}

impl<'a> Release<'a> {
    pub fn new(cluster: &'a Cluster, chart: &str, name: &str, namespace: &str) -> Self {
        Release {
            cluster,
            chart: chart.into(),
            name: name.into(),
            namespace: namespace.into(),
        }
    }

    /// `helm install --wait` with the local images and `sets`: how long until Helm saw every
    /// resource ready (the pods through their own probes).
    pub fn install(&self, sets: &[&str]) -> Result<Duration> {
        self.run_timed("install", sets)
    }

    /// `helm upgrade --wait` with exactly `sets` (and the local images): values not given go
    /// back to the chart's defaults.
    pub fn upgrade(&self, sets: &[&str]) -> Result<Duration> {
        self.run_timed("upgrade", sets)
    }

    /// `helm uninstall --wait`: Helm's output (pre-delete hooks run first).
    pub fn uninstall(&self) -> Result<String> {
        self.helm(&["uninstall", &self.name, "--wait", "--timeout", TIMEOUT])
    }

    fn run_timed(&self, verb: &str, sets: &[&str]) -> Result<Duration> {
        let chart = crate::rbac::chart_dir(&self.chart)?;
        let chart = chart.to_str().context("chart path is not UTF-8")?;
        let mut args = vec![verb, &self.name, chart, "--wait", "--timeout", TIMEOUT];
        for set in LOCAL_IMAGES.iter().chain(sets) {
            args.extend(["--set", set]);
        }
        // A given cluster has ebb's CRDs from the node-less tests, not owned by any release.
        if !self.cluster.local {
            args.extend(["--set", "crds.install=false"]);
        }
        // A chart carrying shared CRDs (files/crds-shared/) installs one only when the cluster
        // has none yet (Helm's `lookup`): two such releases installed at once would both render
        // it, and the second would fail on the first's ownership. One at a time, as a user does.
        let shared = repo_root()
            .join("charts")
            .join(&self.chart)
            .join("files/crds-shared")
            .is_dir();
        let _one_at_a_time = shared.then(|| {
            SHARED_CRDS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        let start = Instant::now();
        self.helm(&args)?;
        Ok(start.elapsed())
    }

    fn helm(&self, args: &[&str]) -> Result<String> {
        let out = Command::new(helm())
            .args(args)
            .args(["--namespace", &self.namespace])
            .arg("--kubeconfig")
            .arg(&self.cluster.kubeconfig)
            .output()
            .context("run helm")?;
        if !out.status.success() {
            bail!(
                "helm {}: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The chart's full name (`ebb-<chart>` unless `fullnameOverride`): the Deployment's, the
    /// Service's and the cluster-wide RBAC objects' names start with it.
    pub fn fullname(&self) -> String {
        format!("ebb-{}", self.chart)
    }

    /// The release's controller Deployment.
    pub async fn deployment(&self, client: &Client) -> Result<Deployment> {
        let api: Api<Deployment> = Api::namespaced(client.clone(), &self.namespace);
        let list = api.list(&self.selector()).await?;
        list.items
            .into_iter()
            .next()
            .with_context(|| format!("no Deployment of release {}", self.name))
    }

    /// The release's running pods, by name.
    pub async fn pods(&self, client: &Client) -> Result<Vec<Pod>> {
        let api: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let mut pods: Vec<Pod> = api
            .list(&self.selector())
            .await?
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(pods)
    }

    /// The release's metrics Service.
    pub async fn metrics_service(&self, client: &Client) -> Result<Service> {
        let api: Api<Service> = Api::namespaced(client.clone(), &self.namespace);
        let list = api.list(&self.selector()).await?;
        list.items
            .into_iter()
            .find(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.ends_with("-metrics"))
            })
            .with_context(|| format!("no metrics Service of release {}", self.name))
    }

    /// Every release of this chart carries the instance label.
    pub fn selector(&self) -> ListParams {
        ListParams::default().labels(&format!("app.kubernetes.io/instance={}", self.name))
    }
}

/// Whether a pod is Ready (its readiness probe, or its containers running where it has none).
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A container of the test workload image (`ebb.dev/busybox:dev`, built by `.ci/images`) that
/// runs `script` with `sh -c` (none: waits for SIGTERM), shaped for a namespace that enforces
/// the `restricted` Pod Security Standard.
pub fn busybox(name: &str, script: Option<&str>) -> serde_json::Value {
    let mut container = serde_json::json!({
        "name": name,
        "image": "ebb.dev/busybox:dev",
        "imagePullPolicy": "Never",
        "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}},
        "securityContext": {
            "runAsNonRoot": true,
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}
        }
    });
    if let Some(script) = script {
        container["command"] = serde_json::json!(["/bin/sh", "-c", script]);
    }
    container
}

/// GET `http://<address>:<port><path>` (a Service's ClusterIP: the suite runs in the node's
/// network namespace, where kube-proxy's rules send it to a pod), with a bearer token if given.
pub fn get(address: &str, port: i32, path: &str, bearer: Option<&str>) -> Result<(u16, String)> {
    crate::http_get(&format!("http://{address}:{port}{path}"), bearer)
}

/// The name of a node of the cluster (`ebb-node` on the suite's own).
pub async fn a_node(client: &Client) -> Result<String> {
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let list = nodes.list(&ListParams::default()).await?;
    list.items
        .into_iter()
        .find_map(|n| n.metadata.name)
        .context("the cluster has no node")
}

/// A pod's memory working set as the kubelet reports it (its Summary API, through the API
/// server's node proxy), in bytes.
pub async fn pod_memory(client: &Client, node: &str, namespace: &str, pod: &str) -> Result<u64> {
    let request =
        http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary")).body(Vec::new())?;
    let summary: serde_json::Value = client.request(request).await?;
    let pods = summary["pods"].as_array().context("summary without pods")?;
    pods.iter()
        .find(|p| p["podRef"]["name"] == pod && p["podRef"]["namespace"] == namespace)
        .and_then(|p| p["memory"]["workingSetBytes"].as_u64())
        .with_context(|| format!("the kubelet reports no memory for pod {namespace}/{pod} yet"))
}
