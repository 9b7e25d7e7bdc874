#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_crds::babylon::WorkshopProvision;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use serde_json::json;

fn provision(ns: &str, name: &str, workshop: &str) -> WorkshopProvision {
    serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": 1, "workshopName": workshop}
    }))
    .unwrap()
}

fn claim(metadata: serde_json::Value) -> ResourceClaim {
    serde_json::from_value(json!({
        "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
        "metadata": metadata, "spec": {}
    }))
    .unwrap()
}

#[test]
fn assignments_and_workshops_map_to_the_provisions_of_their_workshop() {
    let (store, mut writer) = reflector::store::<CachedProvision>();
    let lookup = Lookup::new(provision_keys);
    let mut apply = |event: Event<CachedProvision>| {
        lookup.take_in(&event);
        writer.apply_watcher_event(&event);
    };
    for p in [
        provision("a", "p1", "w"),
        provision("a", "p2", "w"),
        provision("a", "p3", "other"),
        provision("b", "p4", "w"),
    ] {
        apply(Event::Apply(CachedProvision::pack(p)));
    }
    // A provision that does not deserialize belongs to no workshop we can know of.
    let malformed: CachedProvision = serde_json::from_value(json!({
        "apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
        "metadata": {"name": "broken", "namespace": "a"}, "spec": {"count": "many"}
    }))
    .unwrap();
    assert!(!malformed.fits());
    apply(Event::Apply(malformed));
    let mut names: Vec<String> = provisions_of(&lookup, "a", "w")
        .into_iter()
        .map(|r| r.name)
        .collect();
    names.sort();
    assert_eq!(names, ["p1", "p2"]);
    assert!(provisions_of(&lookup, "c", "w").is_empty());
    // A policy maps to every provision of its namespace, malformed ones included.
    let mut in_a: Vec<String> = provisions_in(&store, "a")
        .into_iter()
        .map(|r| r.name)
        .collect();
    in_a.sort();
    assert_eq!(in_a, ["broken", "p1", "p2", "p3"]);
    assert!(provisions_in(&store, "c").is_empty());
    // A provision moved to another workshop, and one deleted, map no more.
    apply(Event::Apply(CachedProvision::pack(provision(
        "a", "p2", "other",
    ))));
    apply(Event::Delete(CachedProvision::pack(provision(
        "a", "p1", "w",
    ))));
    assert!(provisions_of(&lookup, "a", "w").is_empty());
    assert_eq!(provisions_of(&lookup, "a", "other").len(), 2);
}

#[test]
fn claims_map_by_label_or_owner_reference() {
    let labelled = claim(json!({"name": "c1", "namespace": "a",
        "labels": {"babylon.gpte.redhat.com/workshop-provision": "p1"}}));
    assert_eq!(
        provision_of_claim(&labelled),
        Some(ObjectRef::new("p1").within("a"))
    );
    let owned = claim(json!({"name": "c2", "namespace": "a", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"},
        {"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision", "name": "p2", "uid": "2"}]}));
    assert_eq!(
        provision_of_claim(&owned),
        Some(ObjectRef::new("p2").within("a"))
    );
    let unrelated = claim(json!({"name": "c3", "namespace": "a"}));
    assert_eq!(provision_of_claim(&unrelated), None);
}
