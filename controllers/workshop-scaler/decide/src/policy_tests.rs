#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use serde_json::{Value, json};

fn workshop(namespace: &str, name: &str, labels: Value) -> Workshop {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "Workshop",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {},
    }))
    .unwrap()
}

fn policy(name: &str, selector: Value) -> WorkshopScalingPolicy {
    let mut spec = json!({"autoScaling": {"enabled": true}});
    if !selector.is_null() {
        spec["workshopSelector"] = selector;
    }
    serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }))
    .unwrap()
}

#[test]
fn a_policy_selects_workshops_of_its_namespace_by_labels() {
    let labs = workshop("ns", "w", json!({"team": "labs"}));
    let everything = policy("all", Value::Null);
    assert_eq!(
        policy_selects(&everything, &labs),
        Ok(true),
        "no selector: all"
    );
    let empty = policy("empty", json!({}));
    assert_eq!(policy_selects(&empty, &labs), Ok(true), "empty: all");
    let team = policy("team", json!({"matchLabels": {"team": "labs"}}));
    assert_eq!(policy_selects(&team, &labs), Ok(true));
    let other = policy("other", json!({"matchLabels": {"team": "ops"}}));
    assert_eq!(policy_selects(&other, &labs), Ok(false));
    let elsewhere = workshop("other-ns", "w", json!({"team": "labs"}));
    assert_eq!(
        policy_selects(&everything, &elsewhere),
        Ok(false),
        "another namespace"
    );
}

#[test]
fn a_selector_that_cannot_be_evaluated_selects_nothing_and_says_why() {
    let broken = policy(
        "broken",
        json!({"matchExpressions": [{"key": "team", "operator": "Bogus", "values": ["x"]}]}),
    );
    let error = policy_selects(&broken, &workshop("ns", "w", json!({}))).unwrap_err();
    assert!(error.contains("WorkshopScalingPolicy broken"), "{error}");
    let (report, unreadable) = policy_report(&broken, &[&workshop("ns", "w", json!({}))], &[]);
    assert!(report.workshops.is_empty());
    assert_eq!(unreadable.len(), 1);
}

#[test]
fn the_report_names_each_workshop_and_the_other_policies_selecting_it() {
    let a = workshop("ns", "a", json!({"team": "labs"}));
    let b = workshop("ns", "b", json!({"team": "ops"}));
    let mine = policy("mine", Value::Null);
    let others = [
        policy("mine", Value::Null),
        policy("z-labs", json!({"matchLabels": {"team": "labs"}})),
        policy("a-labs", json!({"matchLabels": {"team": "labs"}})),
    ];
    let (report, unreadable) = policy_report(&mine, &[&b, &a], &others);
    assert_eq!(report.workshops, ["a", "b"]);
    assert_eq!(
        report.contested,
        [(
            "a".to_owned(),
            vec!["a-labs".to_owned(), "z-labs".to_owned()]
        )],
        "itself is never among the others"
    );
    assert!(unreadable.is_empty());
}
