//! The end-to-end harness: a real control plane, each controller's chart RBAC, and the
//! controller binaries as child processes.
//!
//! - [`cluster()`] starts `ebb-cluster` (etcd + kube-apiserver + kube-controller-manager built
//!   from the official Kubernetes modules, see `e2e/cluster/`) once per test binary, or uses the
//!   cluster `EBB_E2E_KUBECONFIG` names, and installs `crds/` and `e2e/crds/` into it.
//! - [`Namespace`] gives each test its own namespace.
//! - [`rbac::install`] renders a chart with `helm template` and applies its ServiceAccount and
//!   RBAC objects, so the controller runs with exactly the rights the chart grants.
//! - [`process::Controller`] runs a controller binary with a ServiceAccount-token kubeconfig.
//! - [`audit`] reads the API server's audit log: what a ServiceAccount wrote, when.
//! - [`apiserver`] runs another API server on the cluster's etcd to freeze, kill and restart,
//!   restarts the main one, and compacts etcd (watches meet 410 Expired).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test harness: a failed step fails the test

pub mod apiserver;
pub mod audit;
pub mod cluster;
pub mod fixtures;
pub mod helm;
pub mod process;
pub mod proxy;
pub mod rbac;
pub mod tls;
pub mod wait;

pub use cluster::{Cluster, Namespace, cluster, node_cluster};
pub use process::Controller;
pub use wait::{eventually, eventually_every, settle};

use std::path::PathBuf;

/// The repository root (the workspace this crate is part of).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ has a parent")
        .to_path_buf()
}

/// Where the suite keeps its files (cluster state, logs, kubeconfigs): `target/e2e/`.
pub fn work_dir() -> PathBuf {
    let dir = repo_root().join("target").join("e2e");
    std::fs::create_dir_all(&dir).expect("create target/e2e");
    dir
}

/// GET `url` (plain HTTP, 5 s), with `Authorization: Bearer <token>` when a token is given:
/// status and body, whatever the status.
pub fn http_get(url: &str, bearer: Option<&str>) -> anyhow::Result<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(url);
    if let Some(token) = bearer {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    let mut resp = request.call()?;
    let status = resp.status().as_u16();
    // ureq stops reading at 10 MB by default; a scrape of 100 000 objects' series is more.
    let body = resp
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_string()?;
    Ok((status, body))
}

/// `GET https://<address>:<port><path>` trusting only `ca_pem` and verifying the certificate
/// for `server_name` (a Service's DNS name while connecting to its cluster IP, as Prometheus's
/// `tlsConfig.serverName` does), with `Authorization: Bearer <bearer>` when given: status and body.
pub async fn https_get(
    (address, port): (&str, i32),
    path: &str,
    bearer: Option<&str>,
    (ca_pem, server_name): (&str, &str),
) -> anyhow::Result<(u16, String)> {
    use anyhow::Context as _;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tls = tls_connect((address, port), (ca_pem, server_name)).await?;
    let authorization = bearer
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {server_name}\r\n{authorization}Connection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tls.read_to_end(&mut response),
    )
    .await??;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n").context("no HTTP head")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status")?;
    Ok((status, body.to_owned()))
}

/// A TLS connection to `<address>:<port>` trusting only `ca_pem` and verifying the certificate
/// for `server_name`.
async fn tls_connect(
    (address, port): (&str, i32),
    (ca_pem, server_name): (&str, &str),
) -> anyhow::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let config = tokio_rustls::rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect(format!("{address}:{port}")),
    )
    .await??;
    Ok(
        tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
            .connect(ServerName::try_from(server_name.to_owned())?, tcp)
            .await?,
    )
}

/// The certificate `<address>:<port>` serves (DER), once a handshake trusting only `ca_pem` and
/// verifying it for `server_name` has succeeded.
pub async fn served_certificate(
    (address, port): (&str, i32),
    (ca_pem, server_name): (&str, &str),
) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context as _;
    let tls = tls_connect((address, port), (ca_pem, server_name)).await?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .context("no certificate served")?;
    Ok(leaf.to_vec())
}

/// The first certificate of a PEM text, as DER.
pub fn pem_certificate(pem: &str) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context as _;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let first = CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .context("no certificate in the PEM")??;
    Ok(first.to_vec())
}

/// Today's UTC date as a test of whole UTC days sees it (a one-off window's excluded days are
/// UTC days): `(now, today, the next midnight)`, waiting past a midnight less than three minutes
/// away, so that "today" stays today for the test's minute.
pub async fn utc_day() -> (jiff::Timestamp, jiff::civil::Date, jiff::Timestamp) {
    let utc = jiff::tz::TimeZone::UTC;
    let midnight_after = |t: jiff::Timestamp| {
        let tomorrow = t.to_zoned(utc.clone()).date().tomorrow().ok()?;
        Some(tomorrow.to_zoned(utc.clone()).ok()?.timestamp())
    };
    let mut now = jiff::Timestamp::now();
    if let Some(midnight) = midnight_after(now)
        && midnight.duration_since(now) < jiff::SignedDuration::from_mins(3)
    {
        let wait = midnight.duration_since(now) + jiff::SignedDuration::from_secs(5);
        tokio::time::sleep(wait.unsigned_abs()).await;
        now = jiff::Timestamp::now();
    }
    let midnight = midnight_after(now).unwrap_or(jiff::Timestamp::MAX);
    (now, now.to_zoned(utc).date(), midnight)
}

/// A name unique within this run, for namespaces and releases (`prefix-<pid>-<n>`).
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id() % 100_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// What most tests start from: an admin client, a fresh namespace, and a controller identity
/// rendered from `charts/<chart>` into it (release = namespace name).
pub struct Setup {
    pub admin: kube::Client,
    pub namespace: String,
    pub identity: rbac::Identity,
}

impl Setup {
    /// A namespace and the chart's identity; `namespaced` charts watch only that namespace
    /// (`watchNamespaces`), so the test also proves the namespaced RBAC is enough.
    pub async fn new(
        chart: &str,
        prefix: &str,
        namespaced: bool,
        sets: &[&str],
    ) -> anyhow::Result<Setup> {
        let cluster = cluster();
        let admin = cluster.client().await?;
        let ns = Namespace::create(&admin, prefix).await?;
        let watch = format!("watchNamespaces[0]={}", ns.name);
        let mut all: Vec<&str> = sets.to_vec();
        if namespaced {
            all.push(&watch);
        }
        let identity = rbac::install(cluster, &admin, chart, &ns.name, &ns.name, &all).await?;
        Ok(Setup {
            admin,
            namespace: ns.name,
            identity,
        })
    }

    /// The `Api` of a custom kind (found by discovery) in this namespace.
    pub async fn dynamic(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> anyhow::Result<kube::Api<kube::api::DynamicObject>> {
        let resource = rbac::resource(&self.admin, group, version, kind).await?;
        Ok(kube::Api::namespaced_with(
            self.admin.clone(),
            &self.namespace,
            &resource,
        ))
    }

    /// Applies a manifest (JSON) in this namespace unless it names its own.
    pub async fn apply(
        &self,
        mut doc: serde_json::Value,
    ) -> anyhow::Result<kube::api::DynamicObject> {
        if doc["metadata"].get("namespace").is_none() {
            doc["metadata"]["namespace"] = self.namespace.clone().into();
        }
        rbac::apply(&self.admin, &doc).await
    }
}

/// `t` truncated to the whole minute (cron windows open on minutes; the suite's instants are
/// all after 1970, where `as_second` truncates towards the past).
pub fn whole_minute(t: jiff::Timestamp) -> jiff::Timestamp {
    let second = t.as_second();
    jiff::Timestamp::from_second(second - second.rem_euclid(60)).unwrap_or(t)
}

/// The minute and hour fields of a daily cron line that fires at `t` (UTC): `"30 14"`.
pub fn cron_minute_hour(t: jiff::Timestamp) -> String {
    let utc = t.to_zoned(jiff::tz::TimeZone::UTC);
    format!("{} {}", utc.minute(), utc.hour())
}
