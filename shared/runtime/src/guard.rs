//! Watching through `DeserializeGuard`, so one object that does not deserialize into ebb's typed
//! view cannot stall a whole watch: it is logged and left alone until it changes, and every other
//! object is served as usual.

use std::future::Future;
use std::sync::Arc;

use kube::Resource;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;

use crate::backoff::object_key;

/// Runs `reconcile` on an object that deserialized; a malformed one is logged and waits for a
/// change (nothing is written to it: ebb cannot know what it asks for).
pub async fn reconcile<K, C, E, Fut>(
    object: Arc<DeserializeGuard<K>>,
    ctx: Arc<C>,
    reconcile: impl FnOnce(Arc<K>, Arc<C>) -> Fut,
) -> Result<Action, E>
where
    K: Resource<DynamicType = ()> + Clone,
    Fut: Future<Output = Result<Action, E>>,
{
    match &object.0 {
        Ok(typed) => reconcile(Arc::new(typed.clone()), ctx).await,
        Err(invalid) => {
            tracing::warn!(
                kind = %K::kind(&()),
                object = %object_key(object.as_ref()),
                error = %invalid,
                "does not deserialize; left alone until it changes"
            );
            Ok(Action::await_change())
        }
    }
}

/// Runs `policy` for an object that deserialized; a malformed one waits for a change.
pub fn error_policy<K, C, E>(
    object: Arc<DeserializeGuard<K>>,
    error: &E,
    ctx: Arc<C>,
    policy: impl FnOnce(Arc<K>, &E, Arc<C>) -> Action,
) -> Action
where
    K: Clone,
{
    match &object.0 {
        Ok(typed) => policy(Arc::new(typed.clone()), error, ctx),
        Err(_) => Action::await_change(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;
    use std::time::Duration;

    fn guard(data: serde_json::Value) -> Arc<DeserializeGuard<ConfigMap>> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "n"}, "data": data,
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn a_good_object_is_reconciled_and_a_malformed_one_waits() {
        let ran = |_: Arc<ConfigMap>, _: Arc<()>| async {
            Ok::<_, ()>(Action::requeue(Duration::from_secs(7)))
        };
        let good = reconcile(guard(json!({"k": "v"})), Arc::new(()), ran).await;
        assert_eq!(good, Ok(Action::requeue(Duration::from_secs(7))));
        let bad = reconcile(guard(json!({"k": [1]})), Arc::new(()), ran).await;
        assert_eq!(bad, Ok(Action::await_change()));
    }

    #[test]
    fn the_error_policy_applies_only_to_good_objects() {
        let policy =
            |_: Arc<ConfigMap>, _: &(), _: Arc<()>| Action::requeue(Duration::from_secs(3));
        assert_eq!(
            error_policy(guard(json!({})), &(), Arc::new(()), policy),
            Action::requeue(Duration::from_secs(3))
        );
        assert_eq!(
            error_policy(guard(json!({"k": 1})), &(), Arc::new(()), policy),
            Action::await_change()
        );
    }
}
