//! Log lines fit the pipe they go to (the shared runtime's rule, run through one binary): no ANSI
//! colours when stderr is not a terminal, and with `--log-format json` every line is JSON, the
//! fatal one included. The binary runs with no cluster to reach, so it logs its start and exits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn run_without_a_cluster(format: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_service-scaler"))
        .args(["--log-format", format, "--metrics-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", "/nonexistent/ebb-tests/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn text_logs_carry_no_colour_codes_into_a_pipe() {
    let (ok, stderr) = run_without_a_cluster("text");
    assert!(!ok);
    assert!(stderr.contains("time-zone data"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI codes in a pipe: {stderr:?}"
    );
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("service-scaler: cannot reach the Kubernetes API"),
        "{last}"
    );
}

#[test]
fn json_logs_are_json_to_the_last_line() {
    let (ok, stderr) = run_without_a_cluster("json");
    assert!(!ok);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    assert!(lines.len() >= 2, "{stderr}");
    assert_eq!(lines[0]["message"], "time-zone data", "{stderr}");
    assert!(
        lines[0]["tzdata"]
            .as_str()
            .is_some_and(|r| r.starts_with("20")),
        "{stderr}"
    );
    let fatal = lines.last().unwrap();
    assert_eq!(fatal["level"], "ERROR", "{stderr}");
    assert_eq!(fatal["target"], "service-scaler", "{stderr}");
    assert!(
        fatal["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot reach the Kubernetes API"),
        "{stderr}"
    );
    assert!(fatal["timestamp"].as_str().is_some(), "{stderr}");
}
