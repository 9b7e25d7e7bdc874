#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_runtime::cli::plan::ManifestError;

/// The one ServiceScaler of `text`, read as `plan` reads it.
fn parse_manifest(source: &str, text: &str) -> Result<ServiceScaler, ManifestError> {
    let read = ebb_runtime::cli::manifest::parse::<ServiceScaler>(
        source,
        text,
        &schema(),
        ebb_runtime::cli::manifest::Strictness::default(),
    )?;
    Ok(read.objects.into_iter().next().unwrap())
}

const UDAAN: &str = include_str!("../../../examples/service-scaler-udaan.yaml");

fn at(s: &str) -> Timestamp {
    s.parse::<jiff::Timestamp>().unwrap()
}

#[test]
fn json_has_exactly_the_contract_keys() {
    let scaler: ServiceScaler = parse_manifest("udaan.yaml", UDAAN).unwrap();
    let json = render(
        &scaler,
        &Calendars::new(),
        at("2026-03-27T17:00:00+05:30"),
        Output::JSON,
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value,
        serde_json::json!({
            "name": "dummy-acorn-service",
            "matchedRange": 0,
            "effective": {"minReplicas": 3, "maxReplicas": 8,
                          "targetCPUUtilization": 50, "targetMemoryUtilization": null,
                          "hibernate": false},
            "nextTransition": "2026-03-27T18:30:00Z",
            "paused": null,
            "tzdata": "2026f"
        })
    );
}

#[test]
fn text_names_the_range_and_the_next_changes() {
    let scaler: ServiceScaler = parse_manifest("udaan.yaml", UDAAN).unwrap();
    let text = render(
        &scaler,
        &Calendars::new(),
        at("2026-03-27T12:00:00+05:30"),
        Output::TEXT,
    )
    .unwrap();
    assert!(text.contains("in force:   defaults"), "{text}");
    assert!(
        text.contains("next:       2026-03-27T10:30:00Z -> timeRangeSpec[0]: minReplicas 3"),
        "{text}"
    );
    assert_eq!(text.matches("then:").count(), 4, "{text}");
}

#[test]
fn text_shows_metric_targets_and_json_keeps_its_contract() {
    let scaler: ServiceScaler = parse_manifest(
        "coder.yaml",
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: provisioners}\nspec:\n  hpa: {minReplicas: 1, maxReplicas: 20, metricTargets: [{name: queue_depth, averageValue: '10'}]}\n  timeRangeSpec:\n  - {kind: ZonedTime, from: '08:00Z', to: '18:00Z', replicaSpec: {hpa: {metricTargets: [{name: queue_depth, averageValue: '2'}]}}}\n",
    )
    .unwrap();
    let text = render(
        &scaler,
        &Calendars::new(),
        at("2026-03-27T09:00:00Z"),
        Output::TEXT,
    )
    .unwrap();
    assert!(
        text.contains("effective:  minReplicas 1, maxReplicas 20, targetCPUUtilization none, targetMemoryUtilization none, queue_depth AverageValue 2"),
        "{text}"
    );
    assert!(
        text.contains("timeRangeSpec[0]") && text.contains("queue_depth AverageValue 10"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &render(
            &scaler,
            &Calendars::new(),
            at("2026-03-27T09:00:00Z"),
            Output::JSON,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        json["effective"].as_object().map(|o| o.len()),
        Some(5),
        "{json}"
    );
}

#[test]
fn invalid_specs_are_named_with_the_file() {
    let scaler: ServiceScaler = parse_manifest(
        "f.yaml",
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: x}\nspec:\n  hpa: {minReplicas: 3, maxReplicas: 2}\n",
    )
    .unwrap();
    let errors = render(
        &scaler,
        &Calendars::new(),
        at("2026-01-01T00:00:00Z"),
        Output::JSON,
    )
    .unwrap_err();
    assert_eq!(
        errors.to_string(),
        "spec.hpa: minReplicas 3 exceeds maxReplicas 2"
    );
}

#[test]
fn a_hibernating_range_shows_in_both_outputs_and_the_lead_wakes_it_ahead() {
    let scaler: ServiceScaler = parse_manifest(
        "nightly.yaml",
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: web}\nspec:\n  hpa: {minReplicas: 2, maxReplicas: 10}\n  leadTime: 30m\n  timeRangeSpec:\n  - {kind: ZonedTime, from: '20:00Z', to: '06:00Z', replicaSpec: {hibernate: true}}\n",
    )
    .unwrap();
    let json = |at_: &str| -> serde_json::Value {
        serde_json::from_str(&render(&scaler, &Calendars::new(), at(at_), Output::JSON).unwrap())
            .unwrap()
    };
    assert_eq!(json("2026-03-27T23:00:00Z")["effective"]["hibernate"], true);
    assert_eq!(
        json("2026-03-28T05:30:00Z")["effective"]["hibernate"],
        false
    );
    assert_eq!(
        json("2026-03-28T12:00:00Z")["effective"]["hibernate"],
        false
    );
    let text = render(
        &scaler,
        &Calendars::new(),
        at("2026-03-27T23:00:00Z"),
        Output::TEXT,
    )
    .unwrap();
    assert!(text.contains("hibernating (0 replicas)"), "{text}");
    let text = render(
        &scaler,
        &Calendars::new(),
        at("2026-03-28T05:45:00Z"),
        Output::TEXT,
    )
    .unwrap();
    assert!(
        text.contains("lead:       awake ahead of the hibernation's end"),
        "{text}"
    );
}

/// A paused ServiceScaler: the controller writes nothing until it resumes, and `plan` says so
/// beside the decision its resume makes (the one an unpaused copy gets).
#[test]
fn a_paused_scaler_is_said_paused_beside_its_resumes_decision() {
    let unpaused: ServiceScaler = parse_manifest("udaan.yaml", UDAAN).unwrap();
    let mut paused = unpaused.clone();
    paused
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            "scaling.ebb.dev/paused-until".into(),
            "2026-03-27T12:00:00Z".into(),
        );
    let now = at("2026-03-27T17:00:00+05:30");
    let answer = offline(&paused, &Calendars::new(), now).unwrap();
    let note = answer.paused.clone().unwrap();
    assert!(note.contains("paused-until"), "{note}");
    let resumed = offline(&unpaused, &Calendars::new(), now).unwrap();
    assert_eq!(resumed.paused, None);
    assert_eq!(
        PlanOutput {
            paused: None,
            ..answer
        },
        resumed
    );
    let text = render(&paused, &Calendars::new(), now, Output::TEXT).unwrap();
    assert!(
        text.contains("  paused:     ") && text.contains("nothing is written until it resumes"),
        "{text}"
    );
}
