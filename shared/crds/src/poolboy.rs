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
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
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
    /// Trims every resource's `state` to what [`ResourceClaim::settlement`] reads
    /// ([`ClaimResource::trim_state`]); the settlement stays the same.
    pub fn trim(&mut self) {
        if let Some(status) = self.status.as_mut() {
            status
                .resources
                .iter_mut()
                .for_each(ClaimResource::trim_state);
        }
    }

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
        self.state
            .as_ref()?
            .pointer("/spec/vars/current_state")?
            .as_str()
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

    /// Keeps of `state` only what [`ResourceClaim::settlement`] reads. `state` is a whole copy
    /// of the provider object (an AnarchySubject with its job history, often tens of KiB), and
    /// a controller caching every claim of a namespace needs two strings of it.
    pub fn trim_state(&mut self) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        let mut kept = Value::Object(serde_json::Map::new());
        for path in [
            ["spec", "vars", "current_state"].as_slice(),
            ["status", "towerJobs", "provision", "completeTimestamp"].as_slice(),
        ] {
            let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
            if let Some(value) = state.pointer(&pointer) {
                let mut at = &mut kept;
                for part in path {
                    at = &mut at[*part];
                }
                *at = value.clone();
            }
        }
        *state = kept;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn claim(status: Value) -> ResourceClaim {
        serde_json::from_value(json!({
            "apiVersion": "poolboy.gpte.redhat.com/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "n"},
            "spec": {},
            "status": status,
        }))
        .unwrap()
    }

    fn resource_in_state(current_state: &str) -> Value {
        json!({"name": "r", "state": {"spec": {"vars": {"current_state": current_state}}}})
    }

    fn resource_completed() -> Value {
        json!({"name": "r", "state": {"spec": {"vars": {"current_state": "started"}},
               "status": {"towerJobs": {"provision": {"completeTimestamp": "2026-01-01T00:00:00Z"}}}}})
    }

    /// A trimmed claim settles as the whole one did, in every state the predicates know.
    #[test]
    fn trimming_a_claim_keeps_its_settlement() {
        let mut bulky = resource_completed();
        bulky["state"]["status"]["towerJobs"]["provision"]["log"] = json!("x".repeat(10_000));
        bulky["state"]["spec"]["vars"]["job_vars"] = json!({"big": "y".repeat(10_000)});
        let statuses = [
            json!({"ready": true, "resources": [resource_in_state("provisioning")]}),
            json!({"resources": [resource_completed(), resource_in_state("start-failed")]}),
            json!({"resources": [resource_completed(), bulky.clone()]}),
            json!({"resources": [resource_in_state("provision-error")]}),
            json!({"resources": [{"name": "r", "state": {}}]}),
            json!({"resources": [{"name": "r"}]}),
            json!({"resources": [{"name": "r", "state": {"spec": {"vars": {"current_state": null}},
                   "status": {"towerJobs": {"provision": {"completeTimestamp": null}}}}}]}),
            json!({}),
        ];
        for status in statuses {
            let whole = claim(status.clone());
            let mut trimmed = whole.clone();
            trimmed.trim();
            assert_eq!(trimmed.settlement(), whole.settlement(), "{status}");
        }
        let mut trimmed = claim(json!({"resources": [bulky]}));
        trimmed.trim();
        assert_eq!(
            serde_json::to_value(&trimmed.status.unwrap().resources[0].state).unwrap(),
            json!({"spec": {"vars": {"current_state": "started"}},
                   "status": {"towerJobs": {"provision": {"completeTimestamp": "2026-01-01T00:00:00Z"}}}})
        );
    }

    #[test]
    fn ready_claims_are_settled() {
        let c = claim(json!({"ready": true, "resources": [resource_in_state("provisioning")]}));
        assert_eq!(c.settlement(), ClaimSettlement::Ready);
        assert!(c.settlement().is_settled());
    }

    #[test]
    fn ready_wins_over_a_failed_resource() {
        let c = claim(json!({"ready": true, "resources": [resource_in_state("provision-failed")]}));
        assert_eq!(c.settlement(), ClaimSettlement::Ready);
    }

    #[test]
    fn complete_claims_are_settled() {
        let c = claim(
            json!({"ready": false, "resources": [resource_completed(), resource_completed()]}),
        );
        assert_eq!(c.settlement(), ClaimSettlement::Complete);
        assert!(c.settlement().is_settled());
    }

    #[test]
    fn a_complete_claim_may_mix_completed_and_failed_resources() {
        let c =
            claim(json!({"resources": [resource_completed(), resource_in_state("start-failed")]}));
        // Any failed resource makes the whole claim failed (the failure predicate comes first).
        assert_eq!(c.settlement(), ClaimSettlement::Failed);
    }

    #[test]
    fn a_failed_suffix_means_failed() {
        for state in [
            "provision-failed",
            "start-failed",
            "stop-failed",
            "destroy-failed",
        ] {
            let c = claim(json!({"ready": false, "resources": [resource_in_state(state)]}));
            assert_eq!(c.settlement(), ClaimSettlement::Failed, "{state}");
            assert!(c.settlement().is_settled());
        }
    }

    #[test]
    fn provision_error_means_failed() {
        let c = claim(json!({"resources": [resource_in_state("provision-error")]}));
        assert_eq!(c.settlement(), ClaimSettlement::Failed);
    }

    #[test]
    fn provision_cancelled_means_failed() {
        let c = claim(
            json!({"resources": [resource_completed(), resource_in_state("provision-cancelled")]}),
        );
        assert_eq!(c.settlement(), ClaimSettlement::Failed);
    }

    #[test]
    fn states_that_merely_contain_failed_or_error_are_pending() {
        for state in [
            "failed-over",
            "provisioning",
            "provision-errors",
            "new",
            "started",
        ] {
            let c = claim(json!({"resources": [resource_in_state(state)]}));
            assert_eq!(c.settlement(), ClaimSettlement::Pending, "{state}");
        }
    }

    #[test]
    fn pending_claims_are_not_settled() {
        let c = claim(json!({"ready": false, "resources": [resource_in_state("provisioning")]}));
        assert_eq!(c.settlement(), ClaimSettlement::Pending);
        assert!(!c.settlement().is_settled());
    }

    #[test]
    fn one_resource_without_state_keeps_the_claim_pending() {
        let c = claim(json!({"resources": [resource_completed(), {"name": "late"}]}));
        assert_eq!(c.settlement(), ClaimSettlement::Pending);
    }

    #[test]
    fn a_null_complete_timestamp_is_not_completion() {
        let c = claim(
            json!({"resources": [{"name": "r", "state": {"status": {"towerJobs": {"provision": {"completeTimestamp": null}}}}}]}),
        );
        assert_eq!(c.settlement(), ClaimSettlement::Pending);
    }

    #[test]
    fn a_claim_with_no_resources_yet_is_pending() {
        assert_eq!(
            claim(json!({"ready": false})).settlement(),
            ClaimSettlement::Pending
        );
        assert_eq!(claim(json!({})).settlement(), ClaimSettlement::Pending);
    }

    #[test]
    fn a_claim_without_status_is_pending() {
        let mut c = claim(json!({}));
        c.status = None;
        assert_eq!(c.settlement(), ClaimSettlement::Pending);
        assert!(!c.settlement().is_settled());
    }

    #[test]
    fn the_example_claim_is_still_provisioning() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/resource-claim.yaml");
        let text = std::fs::read_to_string(root).unwrap();
        let c: ResourceClaim = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(c.settlement(), ClaimSettlement::Pending);
    }
}
