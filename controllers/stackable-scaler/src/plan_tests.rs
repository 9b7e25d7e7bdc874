#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn now() -> Timestamp {
    ebb_testkit::utc("2026-03-01T12:00:00Z")
}

const MANIFEST: &str = "apiVersion: autoscaling.stackable.tech/v1alpha1\nkind: StackableScaler\nmetadata: {name: s, namespace: ns}\nspec: {replicas: 5}\n";

#[test]
fn a_fresh_scaler_asked_to_grow_runs_the_pre_scale_hook() {
    let r = offline(&parse("f", MANIFEST).unwrap(), Some(3), &[], now());
    assert_eq!(
        (r.current_stage, r.next_stage, r.action, r.hook),
        (None, "PreScaling", "runHook", Some("prescale"))
    );
    assert_eq!(
        (r.previous_replicas, r.desired_replicas, r.direction),
        (Some(3), Some(5), Some(ScaleDirection::Up))
    );
    assert_eq!(r.added_ordinals, vec![3, 4]);
    assert_eq!(r.events.len(), 2);
}

#[test]
fn without_the_workload_a_fresh_scaler_waits() {
    let r = offline(&parse("f", MANIFEST).unwrap(), None, &[], now());
    assert_eq!(
        (r.next_stage, r.action, r.requeue_after_seconds),
        ("Idle", "wait", Some(30))
    );
}

#[test]
fn scaling_sets_replicas() {
    let text = format!(
        "{MANIFEST}status: {{replicas: 3, previousReplicas: 3, desiredReplicas: 5, scaleEvent: 1, currentState: {{stage: Scaling}}}}\n"
    );
    let r = offline(&parse("f", &text).unwrap(), Some(3), &[], now());
    assert_eq!(
        (r.current_stage, r.action, r.set_replicas),
        (Some("Scaling"), "setReplicas", Some(5))
    );
}

#[test]
fn invalid_input_names_the_field() {
    let err = parse("f.yaml", &MANIFEST.replace("replicas: 5", "replicas: -1")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: spec.replicas: must be >= 0, got -1"
    );
    let err = parse("f.yaml", &MANIFEST.replace("StackableScaler", "Deployment")).unwrap_err();
    assert!(
        err.to_string()
            .contains("no StackableScaler in it (1 object of another kind)"),
        "{err}"
    );
    let err = parse("f.yaml", "spec: [").unwrap_err();
    assert!(
        err.to_string().starts_with("f.yaml: not valid YAML"),
        "{err}"
    );
    let bad_hook = MANIFEST.replace(
        "spec: {replicas: 5}",
        "spec: {replicas: 5, hooks: {preScale: {timeoutSeconds: 0, template: {spec: {template: {spec: {containers: []}}}}}}}",
    );
    let err = parse("f.yaml", &bad_hook).unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: spec.hooks.preScale.timeoutSeconds: must be within 1..=86400, got 0"
    );
    let bad_timeout = MANIFEST.replace(
        "spec: {replicas: 5}",
        "spec: {replicas: 5, stageTimeoutSeconds: 0}",
    );
    let err = parse("f.yaml", &bad_timeout).unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: spec.stageTimeoutSeconds: must be within 1..=604800, got 0"
    );
}

#[test]
fn text_output_tells_the_story() {
    let text = render_text(&offline(
        &parse("f", MANIFEST).unwrap(),
        Some(3),
        &[],
        now(),
    ));
    assert!(text.starts_with("s: (no status) -> PreScaling\n"), "{text}");
    assert!(
        text.contains("operation: Up from 3 to 5 (removed ordinals -, added ordinals 3,4)"),
        "{text}"
    );
    assert!(
        text.contains("next: run the prescale hook for scaling from 3 to 5 replicas"),
        "{text}"
    );
}

/// `plan` refuses a hook the CRD's CEL rules refuse, naming the field.
#[test]
fn a_hook_the_api_server_would_refuse_is_named() {
    let with_pod = |pod: &str| {
        format!(
            "{}\n  hooks: {{preScale: {{template: {{spec: {{template: {{spec: {pod}}}}}}}}}}}\n",
            MANIFEST
                .trim_end()
                .replace("spec: {replicas: 5}", "spec:\n  replicas: 5")
        )
    };
    let ok = with_pod("{containers: [{name: a, image: b}], restartPolicy: OnFailure}");
    parse("f.yaml", &ok).unwrap();
    for (pod, says) in [
        (
            "{containers: []}",
            "f.yaml: spec.hooks.preScale.template.spec.template.spec.containers: a hook's pod needs at least one container",
        ),
        (
            "{containers: [{name: a, image: b}], restartPolicy: Always}",
            "f.yaml: spec.hooks.preScale.template.spec.template.spec.restartPolicy: must be Never or OnFailure (a Job's pods cannot restart Always); unset means Never",
        ),
    ] {
        let err = parse("f.yaml", &with_pod(pod)).unwrap_err();
        assert_eq!(err.to_string(), says);
    }
}
