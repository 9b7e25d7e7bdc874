//! The API server's audit log (local cluster only): what a controller's ServiceAccount did.

use std::path::Path;

use anyhow::Result;
use jiff::Timestamp;
use serde::Deserialize;

/// One audited request (the fields the suite looks at).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub verb: String,
    pub user: User,
    #[serde(default)]
    pub object_ref: Option<ObjectRef>,
    #[serde(default)]
    pub response_status: Option<ResponseStatus>,
    pub stage: String,
    pub request_received_timestamp: Timestamp,
    /// When the stage was reached: for `ResponseComplete`, when the response was sent.
    #[serde(default)]
    pub stage_timestamp: Option<Timestamp>,
    /// The client's `User-Agent`: ebb's names the pod (`ebb-<controller>/<version> (<pod>)`).
    #[serde(default)]
    pub user_agent: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Entry {
    /// Which token made the request (`JTI=<jti>` for ServiceAccount tokens).
    pub fn credential_id(&self) -> Option<&str> {
        self.user
            .extra
            .get("authentication.kubernetes.io/credential-id")
            .and_then(|ids| ids.first())
            .map(String::as_str)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub subresource: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResponseStatus {
    #[serde(default)]
    pub code: u16,
}

impl Entry {
    /// How long the API server took over the request: received to response sent.
    pub fn in_server(&self) -> Option<std::time::Duration> {
        let sent = self.stage_timestamp?;
        std::time::Duration::try_from(sent.duration_since(self.request_received_timestamp)).ok()
    }

    /// Whether the request came from pod `pod` (its `User-Agent` names it).
    pub fn from_pod(&self, pod: &str) -> bool {
        self.user_agent.ends_with(&format!(" ({pod})"))
    }

    /// A request that changes state (reads and watches are not).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// A write to a coordination.k8s.io Lease (leader election's renewals).
    pub fn is_lease(&self) -> bool {
        self.object_ref
            .as_ref()
            .is_some_and(|o| o.resource == "leases")
    }

    /// `resource[/subresource] namespace/name`, for messages.
    pub fn describe(&self) -> String {
        let o = self.object_ref.clone().unwrap_or_default();
        format!(
            "{} {}{} {}/{} -> {}",
            self.verb,
            o.resource,
            o.subresource.map(|s| format!("/{s}")).unwrap_or_default(),
            o.namespace.unwrap_or_default(),
            o.name.unwrap_or_default(),
            self.response_status.as_ref().map_or(0, |s| s.code)
        )
    }
}

/// `log` and the files kube-apiserver rotated it into (`audit-<time>.log` beside it, every
/// 100 MB), oldest first.
fn log_files(log: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut rotated = Vec::new();
    if let (Some(dir), Some(stem)) = (log.parent(), log.file_stem().and_then(|s| s.to_str())) {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name.starts_with(&format!("{stem}-")) && name.ends_with(".log") {
                rotated.push(path);
            }
        }
    }
    rotated.sort();
    rotated.push(log.to_path_buf());
    Ok(rotated)
}

/// The completed requests of `username` received at or after `since` (rotated logs included).
/// A rotated file last written before `since` holds none, and is not read: a bench's log grows
/// past a gigabyte, and waiting for a quiet controller reads it every few seconds.
pub fn entries(log: &Path, username: &str, since: Timestamp) -> Result<Vec<Entry>> {
    let mut text = String::new();
    for file in log_files(log)? {
        let written = Timestamp::try_from(std::fs::metadata(&file)?.modified()?)?;
        if written < since && file != log {
            continue;
        }
        text.push_str(&std::fs::read_to_string(file)?);
    }
    Ok(text
        .lines()
        .filter(|line| line.contains(username))
        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
        .filter(|e| {
            e.stage == "ResponseComplete"
                && e.user.username == username
                && e.request_received_timestamp >= since
        })
        .collect())
}

/// The writes of `username` since `since`, Lease renewals left out.
pub fn writes(log: &Path, username: &str, since: Timestamp) -> Result<Vec<Entry>> {
    Ok(entries(log, username, since)?
        .into_iter()
        .filter(|e| e.is_write() && !e.is_lease())
        .collect())
}
