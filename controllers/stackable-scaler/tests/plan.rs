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
            "message": "run the prescale hook for scaling from 3 to 5 replicas",
            "walk": [
                {"step": "stage", "stage": "Idle"},
                {"step": "stage", "stage": "PreScaling"},
                {"step": "job", "hook": "prescale", "job": "nifi-default-prescale-1-0",
                 "answer": "unanswered"}
            ],
            "finalStage": "PreScaling",
            "jobs": ["nifi-default-prescale-1-0"],
            "scaleWrite": {"allowed": true, "reason": "allowed: the scaler is Idle"}
        })
    );
}

fn walk(extra: &[&str]) -> Value {
    let file = example();
    let mut args = vec![
        "--file",
        file.to_str().unwrap(),
        "--workload-replicas",
        "3",
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    PLAN.json(&args)
}

#[test]
fn a_whole_operation_is_walked_with_the_hooks_answers() {
    // The pre-scale Job succeeds: the StatefulSet goes to 5, there is no post-scale template,
    // and the scaler is Idle again.
    let got = walk(&["--hook", "pre=done"]);
    assert_eq!(
        got["walk"],
        json!([
            {"step": "stage", "stage": "Idle"},
            {"step": "stage", "stage": "PreScaling"},
            {"step": "job", "hook": "prescale", "job": "nifi-default-prescale-1-0", "answer": "done"},
            {"step": "stage", "stage": "Scaling"},
            {"step": "resize", "to": 5},
            {"step": "stage", "stage": "PostScaling"},
            {"step": "noJob", "hook": "postscale"},
            {"step": "stage", "stage": "Idle"}
        ])
    );
    assert_eq!(got["finalStage"], json!("Idle"));
    assert_eq!(got["jobs"], json!(["nifi-default-prescale-1-0"]));

    // It fails: Failed, and the on-failure hook (no template) is done.
    let got = walk(&["--hook", "pre=failed"]);
    assert_eq!(got["finalStage"], json!("Failed"));
    assert_eq!(
        got["walk"].as_array().unwrap().last().unwrap(),
        &json!({"step": "noJob", "hook": "onfailure"})
    );
    // Still running: the walk stops at the Job.
    assert_eq!(
        walk(&["--hook", "pre=in-progress"])["finalStage"],
        json!("PreScaling")
    );
}

#[test]
fn the_webhook_s_answer_to_a_replicas_change_follows_the_stage_given() {
    let text = std::fs::read_to_string(example()).unwrap();
    let in_flight = TempFile::new(
        "prescaling.yaml",
        &format!(
            "{text}status:\n  replicas: 3\n  previousReplicas: 3\n  desiredReplicas: 5\n  scaleEvent: 1\n  currentState: {{stage: PreScaling}}\n"
        ),
    );
    let got = PLAN.json(&[
        "--file",
        in_flight.arg(),
        "--workload-replicas",
        "3",
        "--output",
        "json",
    ]);
    assert_eq!(got["scaleWrite"]["allowed"], json!(false));
    assert!(
        got["scaleWrite"]["reason"]
            .as_str()
            .unwrap()
            .contains("PreScaling"),
        "{got}"
    );
    let out = run(&["--file", in_flight.arg(), "--workload-replicas", "3"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("a spec.replicas change now (webhook): denied"),
        "{text}"
    );
}

#[test]
fn a_hook_answer_that_does_not_parse_is_refused() {
    for bad in ["pre", "middle=done", "pre=maybe"] {
        let out = run(&["--file", example().to_str().unwrap(), "--hook", bad]);
        assert!(!out.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--hook"), "{bad}: {stderr}");
    }
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

#[test]
fn at_is_taken_and_a_bad_one_named() {
    let file = example();
    let base = ["--file", file.to_str().unwrap(), "--workload-replicas", "3"];
    let out = run(&[&base[..], &["--at", "2026-11-26T12:00:00Z"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&[&base[..], &["--at", "noon"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--at \"noon\""));
}
