//! Typed view of Poolboy's `poolboy.gpte.redhat.com/v1` `ResourceClaim`, with Babylon's predicates
//! for when a claim has settled.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A claim on provider resources. ebb only reads its status.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "poolboy.gpte.redhat.com",
    version = "v1",
    kind = "ResourceClaim",
    plural = "resourceclaims",
    namespaced,
    status = "ResourceClaimStatus",
    derive = "PartialEq",
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ResourceClaimSpec {}

/// Poolboy's status of a claim; ebb reads `ready` and the resources' `state`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ResourceClaimStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ClaimResource>,
}

/// One provider resource of a claim.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ClaimResource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// Free-form copy of the provider object (an AnarchySubject for Babylon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_free_form")]
    pub state: Option<Value>,
}

/// How a claim stands, by Babylon's predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimSettlement {
    /// `status.ready` is true.
    Ready,
    /// A resource's `current_state` ends in `-failed`, or is `provision-error` / `provision-cancelled`.
    Failed,
    /// Every resource has a state, and its provision job completed.
    Complete,
    /// Still provisioning.
    Pending,
}

impl ClaimSettlement {
    /// Settled claims no longer hold a scale-up in flight.
    pub fn is_settled(self) -> bool {
        !matches!(self, ClaimSettlement::Pending)
    }
}

impl ResourceClaim {
    /// Babylon's predicates, in order: ready, failed, complete; otherwise pending.
    pub fn settlement(&self) -> ClaimSettlement {
        let Some(status) = &self.status else {
            return ClaimSettlement::Pending;
        };
        if status.ready == Some(true) {
            return ClaimSettlement::Ready;
        }
        if status.resources.iter().any(ClaimResource::has_failed) {
            return ClaimSettlement::Failed;
        }
        let complete = !status.resources.is_empty()
            && status
                .resources
                .iter()
                .all(|r| r.state.is_some() && (r.has_failed() || r.provision_completed()));
        if complete {
            ClaimSettlement::Complete
        } else {
            ClaimSettlement::Pending
        }
    }
}

impl ClaimResource {
    fn current_state(&self) -> Option<&str> {
        self.state.as_ref()?.pointer("/spec/vars/current_state")?.as_str()
    }

    /// Babylon's failure predicate.
    pub fn has_failed(&self) -> bool {
        self.current_state().is_some_and(|s| {
            s.ends_with("-failed") || s == "provision-error" || s == "provision-cancelled"
        })
    }

    /// `state.status.towerJobs.provision.completeTimestamp` is set.
    pub fn provision_completed(&self) -> bool {
        self.state
            .as_ref()
            .and_then(|s| s.pointer("/status/towerJobs/provision/completeTimestamp"))
            .is_some_and(|v| !v.is_null())
    }
}
