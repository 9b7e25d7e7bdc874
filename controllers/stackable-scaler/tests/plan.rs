//! The `plan` subcommand as a user runs it: the built binary on files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Output;

use ebb_testkit::plan_cli::{self, PlanCli, TempFile};
use serde_json::{Value, json};

const PLAN: PlanCli = PlanCli(env!("CARGO_BIN_EXE_stackable-scaler"));

fn example() -> PathBuf {
    plan_cli::example("stackable-scaler.yaml")
}

fn run(args: &[&str]) -> Output {
    PLAN.run(args)
}

#[test]
fn the_example_asked_for_5_with_3_running_runs_the_pre_scale_hook() {
    let out = run(&[
        "--file",
        example().to_str().unwrap(),
        "--workload-replicas",
        "3",
        "--output",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!({
            "name": "nifi-default",
            "currentStage": null,
            "nextStage": "PreScaling",
            "action": "runHook",
            "hook": "prescale",
            "setReplicas": null,
            "requeueAfterSeconds": null,
            "specReplicas": 5,
            "statusReplicas": 3,
            "previousReplicas": 3,
            "desiredReplicas": 5,
            "direction": "Up",
            "removedOrdinals": [],
            "addedOrdinals": [3, 4],
            "events": [
                "Initialized: status initialized from the workload: 3 replicas",
                "ScalingStarted: scaling up from 3 to 5"
            ],
            "message": "run the prescale hook for scaling from 3 to 5 replicas"
        })
    );
}

#[test]
fn text_is_the_default() {
    let out = run(&[
        "--file",
        example().to_str().unwrap(),
        "--workload-replicas",
        "3",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("nifi-default: (no status) -> PreScaling\n"),
        "{text}"
    );
}

#[test]
fn a_scaler_in_scaling_sets_the_workload() {
    let path = TempFile::new(
        "scaling.yaml",
        "apiVersion: autoscaling.stackable.tech/v1alpha1\nkind: StackableScaler\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 2}\n\
         status: {replicas: 4, previousReplicas: 4, desiredReplicas: 2, scaleEvent: 3, currentState: {stage: Scaling}}\n",
    );
    let out = run(&[
        "--file",
        path.to_str().unwrap(),
        "--workload-replicas",
        "4",
        "--output",
        "json",
    ]);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["currentStage"], "Scaling");
    assert_eq!(got["action"], "setReplicas");
    assert_eq!(got["setReplicas"], 2);
    assert_eq!(got["removedOrdinals"], json!([2, 3]));
}

#[test]
fn a_failed_scaler_waits_for_the_retry_annotation() {
    let base = "apiVersion: autoscaling.stackable.tech/v1alpha1\nkind: StackableScaler\nmetadata: {name: web, namespace: shop ANNOTATIONS}\nspec: {replicas: 2}\n\
         status: {replicas: 4, previousReplicas: 4, desiredReplicas: 2, scaleEvent: 3, currentState: {stage: Failed, failedIn: PreScaling, reason: boom, failureHook: Done}}\n";
    let path = TempFile::new("failed.yaml", &base.replace(" ANNOTATIONS", ""));
    let got: Value = serde_json::from_slice(
        &run(&["--file", path.to_str().unwrap(), "--output", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(
        (
            got["nextStage"].as_str(),
            got["action"].as_str(),
            got["requeueAfterSeconds"].clone()
        ),
        (Some("Failed"), Some("wait"), Value::Null)
    );
    let path = TempFile::new(
        "retry.yaml",
        &base.replace(
            " ANNOTATIONS",
            ", annotations: {autoscaling.stackable.tech/retry: \"true\"}",
        ),
    );
    let got: Value = serde_json::from_slice(
        &run(&[
            "--file",
            path.to_str().unwrap(),
            "--workload-replicas",
            "4",
            "--output",
            "json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(got["nextStage"], "PreScaling", "{got}");
    assert_eq!(
        got["events"][0],
        "Retried: autoscaling.stackable.tech/retry set: reset to Idle"
    );
}

#[test]
fn invalid_input_exits_non_zero_naming_the_field() {
    let path = TempFile::new(
        "bad.yaml",
        "apiVersion: autoscaling.stackable.tech/v1alpha1\nkind: StackableScaler\nmetadata: {name: web}\nspec: {replicas: -2}\n",
    );
    let out = run(&["--file", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("spec.replicas: must be >= 0, got -2"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let out = run(&["--file", "/nonexistent/scaler.yaml"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot read /nonexistent/scaler.yaml")
    );

    let out = run(&[
        "--file",
        example().to_str().unwrap(),
        "--workload-replicas",
        "-1",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("--workload-replicas: must be >= 0")
    );
}
