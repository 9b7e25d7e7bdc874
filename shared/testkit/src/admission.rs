//! What kube-apiserver's defaulting and validation do to the built-in kinds ebb writes, where a
//! reconciler test would otherwise pass on the fake and fail on a cluster. Each rule here was
//! found by the end-to-end suite, which checks the fake against the real server
//! (`e2e/tests/fake_and_real.rs`).

use serde_json::{Value, json};

use crate::path::ResourceType;
use crate::store::ApiError;

/// Defaults and validates `obj` (the whole object about to be stored) as the API server would.
pub(crate) fn admit(resource: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    match (
        resource.group.as_str(),
        resource.version.as_str(),
        resource.plural.as_str(),
    ) {
        ("autoscaling", "v2", "horizontalpodautoscalers") => {
            default_hpa(obj);
            Ok(())
        }
        ("batch", "v1", "jobs") => validate_job(obj),
        _ => Ok(()),
    }
}

/// `autoscaling/v2` defaulting: `minReplicas` 1, and an HPA without metrics scales on 80 % CPU.
fn default_hpa(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("minReplicas").or_insert(json!(1));
    let no_metrics = spec
        .get("metrics")
        .is_none_or(|m| m.is_null() || m.as_array().is_some_and(Vec::is_empty));
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
}

/// A Job's pods may only restart `Never` or `OnFailure`; the pod default (`Always`) is refused.
fn validate_job(obj: &Value) -> Result<(), ApiError> {
    let policy = obj
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str);
    match policy {
        Some("Never" | "OnFailure") => Ok(()),
        None => Err(invalid(
            obj,
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        )),
        Some(other) => Err(invalid(
            obj,
            &format!(
                "spec.template.spec.restartPolicy: Unsupported value: \"{other}\": supported values: \"OnFailure\", \"Never\""
            ),
        )),
    }
}

fn invalid(obj: &Value, detail: &str) -> ApiError {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ApiError::new(422, format!("Job.batch \"{name}\" is invalid: {detail}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn resource(group: &str, version: &str, plural: &str) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
        }
    }

    #[test]
    fn an_hpa_without_metrics_scales_on_cpu_80_and_from_one_replica() {
        let mut hpa = json!({"spec": {"maxReplicas": 3}});
        admit(
            &resource("autoscaling", "v2", "horizontalpodautoscalers"),
            &mut hpa,
        )
        .unwrap();
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        let mut set =
            json!({"spec": {"minReplicas": 2, "maxReplicas": 3, "metrics": [{"type": "Pods"}]}});
        admit(
            &resource("autoscaling", "v2", "horizontalpodautoscalers"),
            &mut set,
        )
        .unwrap();
        assert_eq!(set["spec"]["minReplicas"], 2);
        assert_eq!(set["spec"]["metrics"], json!([{"type": "Pods"}]));
    }

    #[test]
    fn a_job_whose_pods_would_restart_always_is_refused() {
        let jobs = resource("batch", "v1", "jobs");
        let job = |policy: Option<&str>| {
            let mut pod = json!({"containers": [{"name": "c", "image": "i"}]});
            if let Some(p) = policy {
                pod["restartPolicy"] = json!(p);
            }
            json!({"metadata": {"name": "hook"}, "spec": {"template": {"spec": pod}}})
        };
        for ok in ["Never", "OnFailure"] {
            assert!(admit(&jobs, &mut job(Some(ok))).is_ok());
        }
        for bad in [None, Some("Always")] {
            let error = admit(&jobs, &mut job(bad)).unwrap_err();
            assert_eq!(error.code, 422);
            assert!(
                error.message.contains("spec.template.spec.restartPolicy"),
                "{}",
                error.message
            );
        }
    }
}
