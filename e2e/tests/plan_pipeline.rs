//! `plan` in a pipeline, as users run it: `helm template` of a controller's chart followed by
//! every example of the repository (a stream of many kinds, as `helm template` or `kustomize
//! build` prints) piped into the controller's `plan -f -`. The objects of its kind are planned,
//! every other is skipped with one note on stderr; `--strict-kinds` refuses the stream; the exit
//! status tells an invalid object, a usage error and unreadable input apart. No cluster.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use ebb_e2e::process::bin_dir;
use ebb_e2e::rbac::{chart_dir, helm};
use ebb_e2e::repo_root;
use serde_json::Value;

/// Each controller: its chart (and binary), the kinds its `plan` answers for (in the order of
/// its answers), and the flags it needs. service-scaler plans FleetSchedules too, after its
/// ServiceScalers, with the HPAs and HolidayCalendars of the stream.
const CONTROLLERS: [(&str, &[&str], &[&str]); 4] = [
    ("service-scaler", &["ServiceScaler", "FleetSchedule"], &[]),
    ("scaledown-window", &["ScaleDownSchedule"], &[]),
    (
        "stackable-scaler",
        &["StackableScaler"],
        &["--workload-replicas", "3"],
    ),
    (
        "workshop-scaler",
        &["WorkshopProvision"],
        &["--assigned", "17", "--total", "20"],
    ),
];

const AT: &str = "2026-11-23T12:00:00Z";

/// `helm template` of `chart`, then every `examples/*.yaml`, as one stream.
fn stream(chart: &str) -> String {
    let rendered = Command::new(helm())
        .args(["template", "ebb"])
        .arg(chart_dir(chart).unwrap())
        .args(["-n", "ebb-system"])
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "helm template {chart}: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let mut text = String::from_utf8(rendered.stdout).unwrap();
    for example in examples() {
        text.push_str("\n---\n");
        text.push_str(&std::fs::read_to_string(example).unwrap());
    }
    text
}

fn examples() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    paths
}

/// The names of the examples' objects of `kind`, in stream order.
fn example_names(kind: &str) -> Vec<String> {
    examples()
        .iter()
        .flat_map(|path| {
            serde_saphyr::from_multiple::<Value>(&std::fs::read_to_string(path).unwrap()).unwrap()
        })
        .filter(|object| object["kind"] == kind)
        .map(|object| object["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `<controller> plan <args>` with `stdin` piped in.
fn plan(controller: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(bin_dir().join(controller))
        .arg("plan")
        .args(args)
        .env("TZDIR", "/nonexistent/ebb-tests")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {controller}: {e}"));
    // A `plan` that refuses early may close its end first: what it printed is the answer.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

/// The names a JSON or YAML answer holds: one object's, or each of a `List`'s items'.
fn answered(value: &Value) -> Vec<String> {
    let name = |v: &Value| v["name"].as_str().unwrap().to_owned();
    if value["kind"] == "List" {
        value["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(name)
            .collect()
    } else {
        vec![name(value)]
    }
}

#[test]
fn a_helm_template_stream_with_the_examples_is_planned_for_each_controllers_kind() {
    for (controller, kinds, extra) in CONTROLLERS {
        let stream = stream(controller);
        for kind in kinds {
            assert!(!example_names(kind).is_empty(), "an example of {kind}");
        }
        let expected: Vec<String> = kinds.iter().flat_map(|kind| example_names(kind)).collect();
        for format in ["json", "yaml"] {
            let mut args = vec!["-f", "-", "-o", format, "--at", AT];
            args.extend(extra);
            let out = plan(controller, &args, &stream);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{controller} -o {format}: {stderr}");
            assert!(
                stderr.contains("objects of other kinds: ")
                    && stderr.contains("(--strict-kinds refuses them)"),
                "{controller}: one note names what was skipped: {stderr}"
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let value: Value = match format {
                "json" => serde_json::from_str(&text).unwrap(),
                _ => serde_saphyr::from_str(&text).unwrap(),
            };
            if expected.len() > 1 {
                assert_eq!(value["apiVersion"], "v1", "{controller}: {text}");
            }
            assert_eq!(
                answered(&value),
                expected,
                "{controller} -o {format}: {text}"
            );
        }
        // The same stream, other kinds refused: an invalid input, exit 1, nothing printed.
        let mut args = vec!["-f", "-", "--strict-kinds", "--at", AT];
        args.extend(extra);
        let out = plan(controller, &args, &stream);
        assert_eq!(out.status.code(), Some(1), "{controller} --strict-kinds");
        assert!(out.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("(--strict-kinds)"),
            "{controller}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_exit_status_tells_invalid_input_usage_and_unreadable_input_apart() {
    for (controller, kinds, extra) in CONTROLLERS {
        let kind = kinds[0];
        let run = |args: &[&str], stdin: &str| {
            let mut all = args.to_vec();
            all.extend(extra);
            plan(controller, &all, stdin).status.code()
        };
        // Unreadable: no such file, not YAML, nothing of the kind.
        assert_eq!(
            run(&["-f", "/nonexistent/x.yaml"], ""),
            Some(3),
            "{controller}"
        );
        assert_eq!(run(&["-f", "-"], "a: ["), Some(3), "{controller}");
        let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n";
        assert_eq!(run(&["-f", "-"], deployment), Some(3), "{controller}");
        // Usage: a flag clap refuses, an `--at` that is not an instant.
        assert_eq!(
            run(&["-f", "-", "--no-such-flag"], ""),
            Some(2),
            "{controller}"
        );
        assert_eq!(
            run(&["-f", "-", "--at", "tomorrow"], ""),
            Some(2),
            "{controller}"
        );
        // Invalid: an object of the kind with a field its schema does not declare.
        let misspelt = format!("kind: {kind}\nmetadata: {{name: x}}\nspecc: {{}}\n");
        assert_eq!(
            run(&["-f", "-", "--at", AT], &misspelt),
            Some(1),
            "{controller}"
        );
    }
}
