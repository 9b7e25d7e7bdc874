//! `workshop-scaler plan`, run as a user runs it: the built binary on files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use ebb_testkit::plan_cli::{PlanCli, TempFile, example, json_of};
use serde_json::json;

const PLAN: PlanCli = PlanCli(env!("CARGO_BIN_EXE_workshop-scaler"));

fn plan(args: &[&str]) -> Output {
    PLAN.run(args)
}

fn provision_yaml(auto_scaling: &str, count: i32) -> String {
    format!(
        "apiVersion: babylon.gpte.redhat.com/v1\nkind: WorkshopProvision\nmetadata:\n  name: p\n  namespace: n\n\
         spec:\n  catalogItem: {{name: c, namespace: n}}\n  count: {count}\n  workshopName: w\n  autoScaling: {auto_scaling}\n"
    )
}

#[test]
fn example_at_85_percent_scales_20_to_30() {
    let file = example("workshop-provision.yaml");
    let out = plan(&[
        "--file",
        file.to_str().unwrap(),
        "--assigned",
        "17",
        "--total",
        "20",
        "--output",
        "json",
    ]);
    assert_eq!(
        json_of(&out),
        json!({"name": "ansible-101-rhel", "scale": true, "currentCount": 20, "desiredCount": 30,
               "reason": "utilization 85% reached the threshold 80%: scale from 20 to 30"})
    );
    // Exactly these keys, in the documented order.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"name\":\"ansible-101-rhel\",\"scale\":true,\"currentCount\":20,\"desiredCount\":30,\
         \"reason\":\"utilization 85% reached the threshold 80%: scale from 20 to 30\"}\n"
    );
}

#[test]
fn example_with_a_scale_up_in_flight_does_not_scale() {
    let file = example("workshop-provision.yaml");
    let out = plan(&[
        "--file",
        file.to_str().unwrap(),
        "--assigned",
        "17",
        "--total",
        "20",
        "--active",
        "--output",
        "json",
    ]);
    assert_eq!(
        json_of(&out),
        json!({"name": "ansible-101-rhel", "scale": false, "currentCount": 20, "desiredCount": 20,
               "reason": "a scale-up is in flight (status.autoScalingActive is true): no further scaling until the provision's ResourceClaims settle"})
    );
}

#[test]
fn example_below_the_threshold_does_not_scale() {
    let file = example("workshop-provision.yaml");
    let out = plan(&[
        "--file",
        file.to_str().unwrap(),
        "--assigned",
        "15",
        "--total",
        "20",
        "--output",
        "json",
    ]);
    assert_eq!(
        json_of(&out),
        json!({"name": "ansible-101-rhel", "scale": false, "currentCount": 20, "desiredCount": 20,
               "reason": "utilization 75% is below the threshold 80%"})
    );
}

#[test]
fn example_with_its_workshop_merges_the_blocks() {
    // The Workshop's maxProvisions 60 is overridden by the provision's 40; a provision of 30 at
    // full demand would grow to 45, capped at 40.
    let text = std::fs::read_to_string(example("workshop-provision.yaml"))
        .unwrap()
        .replace("count: 20", "count: 30");
    let file = TempFile::new("provision-30.yaml", &text);
    let workshop = example("workshop.yaml");
    let out = plan(&[
        "--file",
        file.arg(),
        "--workshop",
        workshop.to_str().unwrap(),
        "--assigned",
        "20",
        "--total",
        "20",
        "--output",
        "json",
    ]);
    assert_eq!(json_of(&out)["desiredCount"], json!(40));
}

#[test]
fn no_seats_and_the_cap() {
    let file = TempFile::new(
        "capped.yaml",
        &provision_yaml("{enabled: true, maxProvisions: 5}", 5),
    );
    let out = plan(&[
        "--file",
        file.arg(),
        "--assigned",
        "9",
        "--total",
        "10",
        "--output",
        "json",
    ]);
    assert_eq!(
        json_of(&out),
        json!({"name": "p", "scale": false, "currentCount": 5, "desiredCount": 5,
               "reason": "utilization 90% reached the threshold 80%, but count 5 is at maxProvisions 5"})
    );
    let out = plan(&[
        "--file",
        file.arg(),
        "--assigned",
        "0",
        "--total",
        "0",
        "--output",
        "json",
    ]);
    assert_eq!(json_of(&out)["scale"], json!(false));
}

#[test]
fn awkward_factors_round_like_the_decimal_the_user_wrote() {
    let file = TempFile::new(
        "factor.yaml",
        &provision_yaml(
            "{enabled: true, scaleFactor: 1.15, maxProvisions: 500}",
            100,
        ),
    );
    let out = plan(&[
        "--file",
        file.arg(),
        "--assigned",
        "1",
        "--total",
        "1",
        "--output",
        "json",
    ]);
    assert_eq!(json_of(&out)["desiredCount"], json!(115));
}

#[test]
fn text_output_is_the_default() {
    let file = example("workshop-provision.yaml");
    let out = plan(&[
        "--file",
        file.to_str().unwrap(),
        "--assigned",
        "17",
        "--total",
        "20",
    ]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "WorkshopProvision ansible-101-rhel: scale count 20 -> 30\n  utilization 85% reached the threshold 80%: scale from 20 to 30\n"
    );
}

#[test]
fn assigned_above_total_is_rejected() {
    let file = example("workshop-provision.yaml");
    let out = plan(&[
        "--file",
        file.to_str().unwrap(),
        "--assigned",
        "21",
        "--total",
        "20",
    ]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "workshop-scaler plan: --assigned (21) must not be greater than --total (20)\n"
    );
}

#[test]
fn invalid_autoscaling_blocks_are_rejected_naming_the_field() {
    let cases = [
        (
            "{enabled: true, threshold: 1.5}",
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5",
        ),
        (
            "{enabled: true, threshold: 0}",
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 0",
        ),
        (
            "{enabled: true, scaleFactor: 1}",
            "spec.autoScaling.scaleFactor: must be a finite number > 1, got 1",
        ),
        (
            "{enabled: true, maxProvisions: 0}",
            "spec.autoScaling.maxProvisions: must be >= 1, got 0",
        ),
        (
            "{threshold: 2}",
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 2",
        ),
        (
            "{enabled: true, activeTimeout: soon}",
            "spec.autoScaling.activeTimeout: must be a positive duration like 60m or 1h30m (h, m, s), got \"soon\"",
        ),
    ];
    for (block, message) in cases {
        let file = TempFile::new("bad.yaml", &provision_yaml(block, 10));
        let out = plan(&[
            "--file",
            file.arg(),
            "--assigned",
            "1",
            "--total",
            "2",
            "--output",
            "json",
        ]);
        assert!(!out.status.success(), "{block}");
        assert!(out.stdout.is_empty(), "{block}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            stderr,
            format!("workshop-scaler plan: {}: {message}\n", file.arg()),
            "{block}"
        );
    }
}

/// A number JSON cannot carry (`.inf`) never reaches an API server (`kubectl` cannot send it):
/// `plan` refuses it where YAML becomes JSON, naming the field and the line.
#[test]
fn an_infinite_factor_is_refused_naming_the_field_and_the_line() {
    let file = TempFile::new(
        "inf.yaml",
        &provision_yaml("{enabled: true, scaleFactor: .inf}", 10),
    );
    let out = plan(&["--file", file.arg(), "--assigned", "1", "--total", "2"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("spec.autoScaling.scaleFactor: inf is not a number")
            && stderr.contains("at line 10, column 45"),
        "{stderr}"
    );
}

#[test]
fn files_that_are_not_a_workshop_provision_are_rejected() {
    let out = plan(&[
        "--file",
        example("workshop.yaml").to_str().unwrap(),
        "--assigned",
        "1",
        "--total",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("no WorkshopProvision in it (1 object of another kind)")
    );

    let missing = TempFile::new(
        "missing-count.yaml",
        &provision_yaml("{enabled: true}", 1).replace("  count: 1\n", ""),
    );
    let out = plan(&["--file", missing.arg(), "--assigned", "1", "--total", "2"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr).unwrap().contains("count"),
        "names the missing field"
    );

    let out = plan(&[
        "--file",
        "/nonexistent/p.yaml",
        "--assigned",
        "1",
        "--total",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot read /nonexistent/p.yaml")
    );
}

#[test]
fn negative_counts_are_rejected() {
    let out = plan(&["--file", "x.yaml", "--assigned", "-1", "--total", "2"]);
    assert!(!out.status.success(), "clap rejects a negative seat count");
}

#[test]
fn misspelt_fields_are_refused_by_babylon_s_schema_and_ebb_s_block() {
    let run = |yaml: &str| {
        let file = TempFile::new("typo.yaml", yaml);
        let out = plan(&["--file", file.arg(), "--assigned", "1", "--total", "2"]);
        assert!(!out.status.success(), "{yaml}");
        String::from_utf8(out.stderr).unwrap()
    };
    let stderr = run(&provision_yaml("{enabled: true, treshold: 0.5}", 10));
    assert!(
        stderr.contains("spec.autoScaling.treshold: unknown field, did you mean \"threshold\"?"),
        "{stderr}"
    );
    // A field of Babylon's own (upstream's schema), misspelt.
    let stderr =
        run(&provision_yaml("{enabled: true}", 10).replace("workshopName", "workshopNmae"));
    assert!(
        stderr.contains("spec.workshopNmae: unknown field, did you mean \"workshopName\"?"),
        "{stderr}"
    );
    // Upstream's free-form subtree (`spec.parameters`) and status take anything.
    let file = TempFile::new(
        "free.yaml",
        &format!(
            "{}  parameters: {{any: thing}}\nstatus: {{whatever: 1}}\n",
            provision_yaml("{enabled: true}", 10)
        ),
    );
    let out = plan(&["--file", file.arg(), "--assigned", "1", "--total", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn at_is_taken_and_a_bad_one_named() {
    let file = example("workshop-provision.yaml");
    let file = file.to_str().unwrap();
    let base = ["--file", file, "--assigned", "17", "--total", "20"];
    let out = plan(&[&base[..], &["--at", "2026-11-26T12:00:00-07:00"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = plan(&[&base[..], &["--at", "noon"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--at \"noon\""));
}
