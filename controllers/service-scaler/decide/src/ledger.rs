//! The hibernation ledger: a ConfigMap of the install (`<lease name>-hibernation` in the release
//! namespace) holding, for every ServiceScaler that hibernates its workload, the workload and the
//! replicas it ran. The entry is written before the scale to 0 and cleared with the wake; it
//! outlives the ServiceScaler, so one deleted without ebb's finalizer (removed by hand, or the
//! ServiceScaler deleted by a tool that strips finalizers) still gets its workload back: the
//! controller wakes the workload of every entry whose ServiceScaler is gone ([`orphan_plan`]).

use ebb_core::Notice;
use ebb_core::plan::{Category, Requeue, Target, Write};
use ebb_crds::service_scaler::{HibernationStatus, ServiceScaler};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Gauge, Plan, WriteReason, scale_resource};

/// What the ledger's name adds to the Lease's.
pub const LEDGER_SUFFIX: &str = "-hibernation";

/// The ledger of the install whose Lease is `lease_namespace/lease_name`.
pub fn ledger_target(lease_namespace: &str, lease_name: &str) -> Target {
    Target::named::<ConfigMap>(
        Some(lease_namespace),
        &format!("{lease_name}{LEDGER_SUFFIX}"),
    )
}

/// One hibernation, as the ledger keeps it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// The ServiceScaler's uid: a new one of the same name is another ServiceScaler.
    pub uid: String,
    /// The workload scaled to 0.
    pub scale_target_ref: CrossVersionObjectReference,
    /// The replicas it ran.
    pub replicas: i32,
}

impl LedgerEntry {
    /// The entry of `scaler`'s hibernation `record`.
    pub fn of(scaler: &ServiceScaler, record: &HibernationStatus) -> Self {
        Self {
            uid: scaler.uid().unwrap_or_default(),
            scale_target_ref: record.scale_target_ref.clone(),
            replicas: record.replicas,
        }
    }
}

/// The ledger's key of the ServiceScaler `namespace/name` (a ConfigMap key cannot hold `/`; a
/// namespace cannot hold `.`).
pub fn ledger_key(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// The `(namespace, name)` of a ledger key.
pub fn key_parts(key: &str) -> Option<(&str, &str)> {
    key.split_once('.')
}

/// The ledger write that records `scaler`'s hibernation `record` (before the scale to 0).
pub fn record_write(ledger: &Target, scaler: &ServiceScaler, record: &HibernationStatus) -> Write {
    let key = ledger_key(&scaler.namespace().unwrap_or_default(), &scaler.name_any());
    let value = serde_json::to_string(&LedgerEntry::of(scaler, record)).unwrap_or_default();
    Write::merge_any(
        ledger.clone(),
        json!({"data": {key: value}}),
        Category::Status,
    )
}

/// The ledger write that clears the entry of the ServiceScaler `namespace/name`.
pub fn forget_write(ledger: &Target, namespace: &str, name: &str) -> Write {
    Write::merge_any(
        ledger.clone(),
        json!({"data": {ledger_key(namespace, name): null}}),
        Category::Status,
    )
}

/// Why a ledger entry's ServiceScaler will not wake its workload itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orphaned {
    /// It was deleted without ebb's finalizer (or another of its name replaced it).
    Deleted,
    /// Its spec does not fit the type, and ebb is being uninstalled: nothing will read it.
    Unreadable,
}

impl Orphaned {
    /// What the Event says of the ServiceScaler.
    fn said(self) -> &'static str {
        match self {
            Self::Deleted => "was deleted without waking it",
            Self::Unreadable => "cannot be read and ebb is being uninstalled",
        }
    }
}

/// What the ledger entry `key` (`entry`) of a ServiceScaler that will not wake its workload
/// (`why`) asks: its workload, if it still stands at 0 (`scale`; `None`: the workload is gone
/// too), gets its replicas back (naming the Scale's resourceVersion read), with an Event on it;
/// then the entry is cleared.
pub fn orphan_plan(
    ledger: &Target,
    (key, entry): (&str, &LedgerEntry),
    why: Orphaned,
    scale: Option<&Scale>,
) -> Plan {
    let (namespace, name) = key_parts(key).unwrap_or(("", key));
    let workload = &entry.scale_target_ref;
    let subject = ObjectReference {
        api_version: workload.api_version.clone(),
        kind: Some(workload.kind.clone()),
        namespace: Some(namespace.to_owned()),
        name: Some(workload.name.clone()),
        ..ObjectReference::default()
    };
    let mut plan = Plan::new(
        subject,
        Gauge {
            key: format!("{namespace}/{name}"),
            state: None,
        },
    );
    // The API server leaves out a Scale's `spec.replicas` of 0 (omitempty).
    let at_zero = scale.map(|s| s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)) == Some(0);
    if let (true, Some(resource)) = (at_zero, scale_resource(workload)) {
        let target = Target {
            resource,
            namespace: Some(namespace.to_owned()),
            name: workload.name.clone(),
        };
        let version = scale.and_then(|s| s.metadata.resource_version.as_deref());
        plan.writes.push(
            Write::scale(target, version, entry.replicas, Category::Target)
                .reason(WriteReason::Wake.as_str())
                .notice(Notice::normal(
                    "Woken",
                    "Wake",
                    format!(
                        "{} {} scaled from 0 back to {} replicas: ServiceScaler {namespace}/{name}, \
                         which hibernated it, {}",
                        workload.kind,
                        workload.name,
                        entry.replicas,
                        why.said()
                    ),
                )),
        );
    }
    plan.writes.push(forget_write(ledger, namespace, name));
    plan.requeue = Requeue::AwaitChange;
    plan
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ebb_core::plan::Verb;

    fn entry() -> LedgerEntry {
        LedgerEntry {
            uid: "u-1".into(),
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            replicas: 3,
        }
    }

    fn scale(replicas: i32) -> Scale {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
            "spec": {"replicas": replicas}
        }))
        .unwrap()
    }

    #[test]
    fn keys_name_the_service_scaler() {
        assert_eq!(ledger_key("shop", "web.v2"), "shop.web.v2");
        assert_eq!(key_parts("shop.web.v2"), Some(("shop", "web.v2")));
        let ledger = ledger_target("ebb", "ebb-service-scaler");
        assert_eq!(
            (ledger.namespace.as_deref(), ledger.name.as_str()),
            (Some("ebb"), "ebb-service-scaler-hibernation")
        );
    }

    #[test]
    fn an_orphan_at_zero_wakes_then_its_entry_goes() {
        let ledger = ledger_target("ebb", "ss");
        let plan = orphan_plan(
            &ledger,
            ("shop.web", &entry()),
            Orphaned::Deleted,
            Some(&scale(0)),
        );
        assert_eq!(plan.writes.len(), 2);
        assert_eq!(plan.writes[0].target.name, "web");
        assert!(
            matches!(&plan.writes[0].verb, Verb::MergeScale(p)
                if p.value()["spec"]["replicas"] == json!(3)
                    && p.value()["metadata"]["resourceVersion"] == json!("7")),
            "{:?}",
            plan.writes[0].verb
        );
        assert!(
            matches!(&plan.writes[1].verb, Verb::Merge(p) if p.value()["data"]["shop.web"].is_null()),
            "{:?}",
            plan.writes[1].verb
        );
        assert_eq!(plan.writes[1].target, ledger);
    }

    #[test]
    fn a_scale_of_zero_as_the_api_server_sends_it_counts_as_zero() {
        let ledger = ledger_target("ebb", "ss");
        let omitted: Scale = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
            "spec": {}
        }))
        .unwrap();
        let plan = orphan_plan(
            &ledger,
            ("shop.web", &entry()),
            Orphaned::Deleted,
            Some(&omitted),
        );
        assert_eq!(plan.writes.len(), 2, "woken, then forgotten");
    }

    #[test]
    fn an_orphan_running_again_or_gone_is_only_forgotten() {
        let ledger = ledger_target("ebb", "ss");
        for scale in [Some(scale(2)), None] {
            let plan = orphan_plan(
                &ledger,
                ("shop.web", &entry()),
                Orphaned::Unreadable,
                scale.as_ref(),
            );
            assert_eq!(plan.writes.len(), 1, "{:?}", plan.writes);
            assert_eq!(plan.writes[0].target, ledger);
        }
    }
}
