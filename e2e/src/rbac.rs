//! A controller's identity as its chart defines it: the ServiceAccount and RBAC objects of
//! `helm template`, applied as they are, and a token kubeconfig for that ServiceAccount.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, Kubeconfig, NamedAuthInfo, NamedContext};
use kube::discovery::{ApiResource, Scope};
use kube::{Client, ResourceExt};

use crate::cluster::{Cluster, MANAGER};
use crate::{repo_root, work_dir};

/// The kinds the suite takes from a rendered chart: who the controller is and what it may do.
const IDENTITY_KINDS: [&str; 5] = [
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// A controller's identity in the cluster, as its chart made it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Release (and full) name: the ServiceAccount's, the RBAC objects' and the Lease's owner.
    pub release: String,
    /// The release namespace: the ServiceAccount and the Lease live here.
    pub namespace: String,
    /// The kubeconfig holding a token of the ServiceAccount.
    pub kubeconfig: PathBuf,
}

impl Identity {
    /// `system:serviceaccount:<namespace>:<name>`, as the audit log names the controller.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.release)
    }

    /// A client with this identity's token: the API server classifies its requests (API
    /// Priority and Fairness) and authorizes them as the controller's.
    pub async fn client(&self) -> Result<Client> {
        crate::cluster::client_of(&self.kubeconfig).await
    }
}

/// The helm binary: `HELM`, else what `.ci/install-helm` provides, else `helm`.
pub fn helm() -> String {
    if let Some(helm) = std::env::var("HELM").ok().filter(|h| !h.is_empty()) {
        return helm;
    }
    Command::new(repo_root().join(".ci/install-helm"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "helm".into())
}

/// `charts/<chart>`, ready to render: its copy of the library chart the charts share
/// (charts/ebb-common) made by `helm dependency build`, once per chart and process, so a change
/// to the library is what the suite renders even when it runs without `make chart-deps`.
///
/// # Errors
/// Helm could not build the dependency.
pub fn chart_dir(chart: &str) -> Result<PathBuf> {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let dir = repo_root().join("charts").join(chart);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|c| c == chart) {
        let out = Command::new(helm())
            .args(["dependency", "build", "--skip-refresh"])
            .arg(&dir)
            .output()
            .context("run helm dependency build")?;
        if !out.status.success() {
            bail!(
                "helm dependency build {chart}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        built.push(chart.to_owned());
    }
    Ok(dir)
}

/// `helm template` of `charts/<chart>` as release `release` in `namespace`, with `sets`
/// (`key=value`, as `--set`), as parsed documents.
pub fn render(
    chart: &str,
    release: &str,
    namespace: &str,
    sets: &[&str],
) -> Result<Vec<serde_json::Value>> {
    let mut cmd = Command::new(helm());
    cmd.arg("template")
        .arg(release)
        .arg(chart_dir(chart)?)
        .args(["--namespace", namespace])
        .args(["--set", &format!("fullnameOverride={release}")])
        .args(["--set", "crds.install=false"]);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.output().context("run helm template")?;
    if !out.status.success() {
        bail!(
            "helm template {chart}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    let mut docs = Vec::new();
    for value in serde_saphyr::from_multiple::<serde_json::Value>(&text)? {
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// Renders `chart` and applies its ServiceAccount and RBAC, then writes a kubeconfig holding a
/// token of that ServiceAccount (TokenRequest, valid for an hour).
pub async fn install(
    cluster: &Cluster,
    admin: &Client,
    chart: &str,
    release: &str,
    namespace: &str,
    sets: &[&str],
) -> Result<Identity> {
    for doc in render(chart, release, namespace, sets)? {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if IDENTITY_KINDS.contains(&kind) {
            apply(admin, &doc).await?;
        }
    }
    let token = token(admin, namespace, release).await?;
    let kubeconfig = write_token_kubeconfig(cluster, release, release, &token)?;
    Ok(Identity {
        release: release.into(),
        namespace: namespace.into(),
        kubeconfig,
    })
}

impl Identity {
    /// A kubeconfig with a token of its own for one replica, and the token's credential id as
    /// the audit log shows it (`JTI=<jti>`): two replicas of one ServiceAccount tell apart there.
    pub async fn replica(
        &self,
        cluster: &Cluster,
        admin: &Client,
        replica: &str,
    ) -> Result<(PathBuf, String)> {
        let token = token(admin, &self.namespace, &self.release).await?;
        let path = write_token_kubeconfig(
            cluster,
            &self.release,
            &format!("{}-{replica}", self.release),
            &token,
        )?;
        Ok((path, format!("JTI={}", jti(&token)?)))
    }
}

/// The `jti` claim of a JWT.
fn jti(token: &str) -> Result<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1).context("not a JWT")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload)?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes)?;
    claims["jti"]
        .as_str()
        .map(str::to_owned)
        .context("token without jti")
}

/// Server-side applies one manifest (any kind the cluster serves) as the harness.
pub async fn apply(admin: &Client, doc: &serde_json::Value) -> Result<DynamicObject> {
    let obj: DynamicObject = serde_json::from_value(doc.clone())?;
    let types = obj
        .types
        .clone()
        .context("manifest without apiVersion/kind")?;
    let (group, version) = match types.api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), types.api_version.clone()),
    };
    let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &types.kind);
    let (resource, caps) = kube::discovery::pinned_kind(admin, &gvk)
        .await
        .with_context(|| format!("discover {}", types.kind))?;
    let api: Api<DynamicObject> = match (caps.scope, obj.namespace()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(admin.clone(), &ns, &resource),
        (Scope::Namespaced, None) => bail!("{} {} needs a namespace", types.kind, obj.name_any()),
        (Scope::Cluster, _) => Api::all_with(admin.clone(), &resource),
    };
    api.patch(
        &obj.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&obj),
    )
    .await
    .with_context(|| format!("apply {} {}", types.kind, obj.name_any()))
}

/// An `ApiResource` for a kind the cluster serves.
pub async fn resource(
    admin: &Client,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<ApiResource> {
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    Ok(kube::discovery::pinned_kind(admin, &gvk).await?.0)
}

/// A token (TokenRequest, an hour) of ServiceAccount `namespace/name`.
pub async fn token(admin: &Client, namespace: &str, name: &str) -> Result<String> {
    let api: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": [], "expirationSeconds": 3600}
    }))?;
    let answer: TokenRequest = api
        .create_subresource("token", name, &PostParams::default(), &request)
        .await
        .map_err(|e| anyhow::anyhow!("TokenRequest for {namespace}/{name}: {e:?}"))?;
    answer
        .status
        .map(|s| s.token)
        .context("TokenRequest answered without a token")
}

/// A copy of the admin kubeconfig's current cluster, with the ServiceAccount token as the user.
fn write_token_kubeconfig(
    cluster: &Cluster,
    release: &str,
    file: &str,
    token: &str,
) -> Result<PathBuf> {
    let admin = Kubeconfig::read_from(&cluster.kubeconfig)?;
    let context_name = admin
        .current_context
        .clone()
        .context("no current context")?;
    let context = admin
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .context("current context missing")?;
    let named_cluster = admin
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .cloned()
        .context("cluster of the current context missing")?;
    let mut ctx = context.clone();
    ctx.user = Some(release.to_owned());
    ctx.namespace = None;
    let config = Kubeconfig {
        clusters: vec![named_cluster],
        auth_infos: vec![NamedAuthInfo {
            name: release.to_owned(),
            auth_info: Some(AuthInfo {
                token: Some(token.to_owned().into()),
                ..AuthInfo::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: "e2e".into(),
            context: Some(ctx),
            other: Default::default(),
        }],
        current_context: Some("e2e".into()),
        ..Kubeconfig::default()
    };
    let path = work_dir().join(format!("{file}.kubeconfig"));
    std::fs::write(&path, serde_saphyr::to_string(&config)?)?;
    Ok(path)
}
