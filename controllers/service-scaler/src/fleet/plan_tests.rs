#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_testkit::utc;
use serde_json::json;

/// Office hours 08:00-12:00Z for every HPA labelled `tier: web` in `shop`, minReplicas 5.
fn fleet(name: &str, created: &str) -> FleetSchedule {
    serde_json::from_value(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": created},
        "spec": {"selector": {"matchLabels": {"tier": "web"}}, "leadTime": "0s",
                 "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
                                    "replicaSpec": {"hpa": {"minReplicas": 5}}}]},
    }))
    .unwrap()
}

fn hpa(name: &str, min: i32) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop", "labels": {"tier": "web"}},
        "spec": {"minReplicas": min, "maxReplicas": 10,
                 "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}},
    }))
    .unwrap()
}

#[test]
fn a_fleet_plans_the_hpas_of_the_input_it_schedules_and_no_invented_one() {
    let office = fleet("office", "2026-01-01T00:00:00Z");
    let fleets = [office.clone()];
    let hpas = [hpa("web", 2), hpa("api", 5), hpa("shop-ss", 2)];
    let scalers = ["shop/shop-ss".to_owned()];
    let calendars = Calendars::new();
    let cluster = Cluster {
        fleets: &fleets,
        hpas: &hpas,
        scalers: &scalers,
        calendars: &calendars,
    };
    let at = utc("2026-03-10T09:00:00Z");
    let answer = offline(&office, &cluster, at).unwrap();
    assert_eq!(answer.matched_range, Some(0));
    assert_eq!(
        answer.next_transition.as_deref(),
        Some("2026-03-10T12:00:00Z")
    );
    // The ServiceScaler's HPA is its own; `api` holds 5 already; `web` is raised.
    let members: Vec<(&str, usize)> = answer
        .members
        .iter()
        .map(|m| (m.hpa.as_str(), m.writes.len()))
        .collect();
    assert_eq!(members, [("shop/web", 1), ("shop/api", 0)]);
    assert!(
        answer.members[0].writes[0].contains("minReplicas"),
        "{:?}",
        answer.members
    );
    let text = text(&office, &answer, at);
    assert!(text.contains("HPA shop/api: holds its settings"), "{text}");

    // Alone, it has no members: the input holds no HPA.
    let alone = Cluster {
        hpas: &[],
        ..cluster
    };
    let answer = offline(&office, &alone, at).unwrap();
    assert!(answer.members.is_empty());
    assert!(text_of(&office, &answer).contains("members:    none among the HPAs of the input"));
}

fn text_of(fleet: &FleetSchedule, answer: &FleetPlanOutput) -> String {
    text(fleet, answer, utc("2026-03-10T09:00:00Z"))
}

#[test]
fn of_two_fleets_the_older_schedules_and_both_name_the_conflict() {
    let older = fleet("older", "2025-01-01T00:00:00Z");
    let newer = fleet("newer", "2026-01-01T00:00:00Z");
    let fleets = [older.clone(), newer.clone()];
    let hpas = [hpa("web", 2)];
    let calendars = Calendars::new();
    let cluster = Cluster {
        fleets: &fleets,
        hpas: &hpas,
        scalers: &[],
        calendars: &calendars,
    };
    let at = utc("2026-03-10T09:00:00Z");
    let older = offline(&older, &cluster, at).unwrap();
    let newer = offline(&newer, &cluster, at).unwrap();
    assert_eq!(older.members.len(), 1);
    assert!(newer.members.is_empty());
    assert!(newer.conflict.is_some() && older.conflict.is_some());
}

#[test]
fn a_fleet_naming_a_calendar_the_input_lacks_is_refused() {
    let mut office = fleet("office", "2026-01-01T00:00:00Z");
    office.spec.time_range_spec[0].exclude_calendars = vec!["zurich".into()];
    let fleets = [office.clone()];
    let calendars = Calendars::new();
    let cluster = Cluster {
        fleets: &fleets,
        hpas: &[],
        scalers: &[],
        calendars: &calendars,
    };
    let refused = offline(&office, &cluster, utc("2026-03-10T09:00:00Z")).unwrap_err();
    assert!(refused.contains("zurich"), "{refused}");
}
