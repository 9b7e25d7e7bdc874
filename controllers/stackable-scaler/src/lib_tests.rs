use ebb_runtime::watch::cache::Lookup;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;
use serde_json::json;

use super::{CachedScaler, owner_uids};

fn scaler(name: &str, owner_uid: &str) -> CachedScaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
        "metadata": {"name": name, "namespace": "db", "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "uid": owner_uid,
            "controller": true}]},
        "spec": {"replicas": 1},
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A workload's event maps to the scalers it owns by lookup: with N and 2N other scalers
/// cached, the answer is its own scaler alone.
#[test]
fn a_workload_maps_to_its_own_scalers_without_a_scan() {
    for n in [1_000, 2_000] {
        let owned = Lookup::new(owner_uids);
        for i in 0..n {
            owned.take_in(&Event::Apply(scaler(
                &format!("db-{i}"),
                &format!("uid-{i}"),
            )));
        }
        assert_eq!(
            owned.refs("uid-7"),
            vec![ObjectRef::new("db-7").within("db")],
            "{n} scalers cached"
        );
        assert!(owned.refs("uid-of-nothing").is_empty());
    }
}

/// Hook Jobs say who manages them with the name every write of the controller carries.
#[test]
fn hook_jobs_are_managed_by_the_field_manager() {
    assert_eq!(crate::decide::jobs::MANAGED_BY, crate::FIELD_MANAGER);
}
