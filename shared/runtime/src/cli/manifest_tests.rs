#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use super::*;
use crate::cli::plan::{Failure, PlanFailure};

const LENIENT: Strictness = Strictness {
    lenient: true,
    strict_kinds: false,
};

/// A schema shaped as ebb's CRDs are: declared fields, a map, a list of objects, a free-form
/// subtree.
fn schema() -> Schema {
    Schema(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "timeRangeSpec": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"from": {"type": "string"}, "to": {"type": "string"},
                                       "timeZone": {"type": "string"}}
                    }},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "selectors": {"type": "object", "additionalProperties": {
                        "type": "object", "properties": {"app": {"type": "string"}}
                    }},
                    "parameters": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                   "properties": {"known": {"type": "object",
                                       "properties": {"a": {"type": "string"}}}}}
                }
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    }))
}

fn unknown(object: serde_json::Value) -> Vec<String> {
    schema()
        .unknown_fields(&object)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_misspelt_field_is_named_with_the_nearest_declared_one() {
    assert_eq!(
        unknown(
            json!({"apiVersion": "v1", "kind": "X", "spec": {"timeRangeSpec": [
                {"from": "08:00", "to": "09:00", "timeZone": "UTC"},
                {"from": "08:00", "to": "09:00", "timeZon": "Europe/Berlin"}
            ]}})
        ),
        ["spec.timeRangeSpec[1].timeZon: unknown field, did you mean \"timeZone\"?"]
    );
    // Case alone, and far from anything declared.
    assert_eq!(
        unknown(json!({"spec": {"TimeRangeSpec": [], "replicasWanted": 3}})),
        [
            "spec.TimeRangeSpec: unknown field, did you mean \"timeRangeSpec\"?",
            "spec.replicasWanted: unknown field",
        ]
    );
    assert_eq!(
        unknown(json!({"spex": {}})),
        ["spex: unknown field, did you mean \"spec\"?"]
    );
}

#[test]
fn maps_and_preserved_subtrees_take_any_key_but_what_they_declare_is_checked() {
    assert!(
        unknown(json!({"spec": {
            "labels": {"anything": "goes"},
            "parameters": {"free": {"form": 1}, "known": {"a": "x"}},
        }, "status": {"whatever": true}}))
        .is_empty()
    );
    assert_eq!(
        unknown(json!({"spec": {
            "selectors": {"one": {"ap": "x"}},
            "parameters": {"known": {"b": "x"}},
        }})),
        [
            "spec.parameters.known.b: unknown field, did you mean \"a\"?",
            "spec.selectors.one.ap: unknown field, did you mean \"app\"?",
        ]
    );
}

#[test]
fn metadata_is_held_to_object_meta() {
    assert_eq!(
        unknown(json!({"metadata": {"name": "a", "lables": {"x": "y"}, "namespace": "n"}})),
        ["metadata.lables: unknown field, did you mean \"labels\"?"]
    );
}

fn config_map_schema() -> Schema {
    Schema(json!({"type": "object", "properties": {
        "data": {"type": "object", "additionalProperties": {"type": "string"}}
    }}))
}

/// The names of the objects read, in order.
fn names_of(read: &Manifests<ConfigMap>) -> Vec<String> {
    read.objects
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

#[test]
fn several_documents_and_lists_are_read_in_order() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n\
                apiVersion: v1\nkind: List\nitems:\n\
                - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n\
                - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}\n";
    let read: Manifests<ConfigMap> =
        parse("f.yaml", text, &config_map_schema(), Strictness::default()).unwrap();
    let names = names_of(&read);
    assert_eq!(names, ["a", "b", "c"]);

    let err =
        parse::<ConfigMap>("f.yaml", "", &config_map_schema(), Strictness::default()).unwrap_err();
    assert_eq!(err.to_string(), "f.yaml: no ConfigMap in it");
    assert_eq!(err.failure(), Failure::Unreadable);
}

/// A stream of several kinds (what `helm template` or `kustomize build` prints) is read for the
/// kind asked; the others are passed over and named, or, with `--strict-kinds`, refused with
/// their document.
#[test]
fn other_kinds_are_skipped_and_named_unless_strict() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n\
                ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
                apiVersion: v1\nkind: List\nitems:\n\
                - {apiVersion: v1, kind: Secret, metadata: {name: s}}\n\
                - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n\
                - {apiVersion: v1, kind: Service, metadata: {name: web}}\n\
                - {apiVersion: v1, kind: Service, metadata: {name: api}}\n";
    let read: Manifests<ConfigMap> =
        parse("f.yaml", text, &config_map_schema(), Strictness::default()).unwrap();
    let names = names_of(&read);
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        read.skipped,
        ["Deployment web", "Secret s", "Service web", "Service api"]
    );
    assert_eq!(
        skipped_note(&read.skipped).unwrap(),
        "skipped 4 objects of other kinds: Deployment web, Secret s, Service web and 1 more \
         (--strict-kinds refuses them)"
    );
    assert_eq!(skipped_note(&[]), None);

    let strict = Strictness {
        strict_kinds: true,
        ..Strictness::default()
    };
    let err = parse::<ConfigMap>("f.yaml", text, &config_map_schema(), strict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: document 1: kind: expected ConfigMap, got \"Deployment\" (--strict-kinds)"
    );
    assert_eq!(err.failure(), Failure::Invalid);

    // Nothing of the kind: said with how many others there were, as unreadable input.
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
    let err = parse::<ConfigMap>("f.yaml", text, &config_map_schema(), Strictness::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: no ConfigMap in it (1 object of another kind)"
    );
    assert_eq!(err.failure(), Failure::Unreadable);
    let err = parse::<ConfigMap>(
        "f.yaml",
        "a: [",
        &config_map_schema(),
        Strictness::default(),
    )
    .unwrap_err();
    assert_eq!(err.failure(), Failure::Unreadable);
}

/// Beside the kind read, the companion kinds asked for are kept as JSON, held to their own
/// schemas; they are neither skipped nor "nothing", and a companion read as its type names the
/// field that does not fit.
#[test]
fn companions_are_kept_held_to_their_schemas() {
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n\
                apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    let also = [("Secret", Schema(Value::Null))];
    let read: Manifests<ConfigMap> = parse_with(
        "f.yaml",
        text,
        &config_map_schema(),
        Strictness::default(),
        &also,
    )
    .unwrap();
    assert_eq!(names_of(&read), ["a"]);
    assert_eq!(read.skipped, ["Service web"]);
    assert_eq!(read.companions.len(), 1);
    assert_eq!(read.companions[0]["metadata"]["name"], "s");
    // A companion alone is an answer; nothing at all is not.
    let alone = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
    let read: Manifests<ConfigMap> = parse_with(
        "f.yaml",
        alone,
        &config_map_schema(),
        Strictness::default(),
        &also,
    )
    .unwrap();
    assert!(read.objects.is_empty() && read.companions.len() == 1);
    // A companion's field its schema does not declare is refused as the kind's own would be.
    let strict = [("Secret", config_map_schema())];
    let misspelt = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndatta: {}\n";
    let err = parse_with::<ConfigMap>(
        "f.yaml",
        misspelt,
        &config_map_schema(),
        Strictness::default(),
        &strict,
    )
    .unwrap_err();
    assert!(err.to_string().contains("datta"), "{err}");
    // Read as its type, a field of the wrong shape is named with the object.
    let wrong = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"},
                       "data": {"k": 1}});
    let err = companion::<ConfigMap>(&wrong, "f.yaml").unwrap_err();
    assert!(
        err.to_string().starts_with("f.yaml: ConfigMap m: data.k"),
        "{err}"
    );
}

#[test]
fn unknown_fields_refuse_the_manifest_unless_lenient() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatta: {k: v}\n";
    let err = parse::<ConfigMap>("f.yaml", text, &config_map_schema(), Strictness::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.yaml: datta: unknown field, did you mean \"data\"? (fields the ConfigMap schema does \
         not declare; --lenient reads on)"
    );
    let read: Manifests<ConfigMap> = parse("f.yaml", text, &config_map_schema(), LENIENT).unwrap();
    assert_eq!(read.objects.len(), 1);
    assert_eq!(
        read.warnings,
        ["f.yaml: datta: unknown field, did you mean \"data\"?"]
    );
}

#[test]
fn a_field_of_the_wrong_shape_is_named() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: [1]}\n";
    let err = parse::<ConfigMap>("f.yaml", text, &config_map_schema(), Strictness::default())
        .unwrap_err();
    assert!(
        err.to_string().starts_with("f.yaml: data.k: invalid type"),
        "{err}"
    );
}

#[test]
fn a_schema_can_take_a_property_from_another() {
    let extra = Schema(json!({"type": "object", "properties": {"enabled": {"type": "boolean"}}}));
    let merged = schema().with_property(&["spec", "autoScaling"], &extra);
    assert_eq!(merged.property(&["spec", "autoScaling"]), Some(extra));
    assert_eq!(
        merged
            .unknown_fields(&json!({"spec": {"autoScaling": {"enabeld": true}}}))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["spec.autoScaling.enabeld: unknown field, did you mean \"enabled\"?"]
    );
}

#[test]
fn at_defaults_to_now() {
    let now: Timestamp = "2026-11-26T12:00:00Z".parse().unwrap();
    let mut input = Input::default();
    assert_eq!(input.at(now).unwrap(), now);
    input.at = Some("2026-11-26T08:00:00-07:00".into());
    assert_eq!(
        input.at(now).unwrap(),
        "2026-11-26T15:00:00Z".parse::<Timestamp>().unwrap()
    );
    input.at = Some("tomorrow".into());
    assert!(
        input
            .at(now)
            .unwrap_err()
            .to_string()
            .starts_with("--at \"tomorrow\"")
    );
}

#[test]
fn a_file_is_read_and_an_unreadable_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cm.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
    )
    .unwrap();
    let input = Input {
        file: path.clone(),
        ..Input::default()
    };
    let got: Vec<ConfigMap> = read("test", &input, &config_map_schema()).unwrap();
    assert_eq!(got[0].metadata.name.as_deref(), Some("a"));
    let input = Input {
        file: "/nonexistent/x.yaml".into(),
        ..Input::default()
    };
    let err = read::<ConfigMap>("test", &input, &config_map_schema()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read /nonexistent/x.yaml"),
        "{err}"
    );
}

/// YAML is read as JSON: `no` and `n` stay strings (YAML 1.2's booleans only, as a namespace
/// named `no` needs), and a number JSON cannot carry is refused where it stands, in a `List` too.
#[test]
fn yaml_becomes_json_with_strings_kept_and_no_infinity() {
    let text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: no}\ndata: {k: n}\n";
    let read: Manifests<ConfigMap> =
        parse("f.yaml", text, &config_map_schema(), Strictness::default()).unwrap();
    assert_eq!(read.objects[0].metadata.namespace.as_deref(), Some("no"));
    assert_eq!(read.objects[0].data.as_ref().unwrap()["k"], "n");
    let text = "apiVersion: v1\nkind: List\nitems:\n\
                - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {k: .nan}}\n";
    let err = parse::<ConfigMap>("f.yaml", text, &config_map_schema(), Strictness::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("items[0].data.k: NaN is not a number a Kubernetes object can hold"),
        "{err}"
    );
}
