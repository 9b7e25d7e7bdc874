//! The third-party CRD fixtures in `e2e/crds/` are what upstream ships, and ebb reads objects of
//! exactly their shapes.
//!
//! For every fixture: it is a v1 CRD an API server accepts (typed round trip, structural schema,
//! known keywords only, CEL on bounded fields, valid defaults). For every kind ebb works with:
//! realistic objects of the upstream shape, as a user's cluster holds them, validate against the
//! fixture (OpenAPI and CEL), come through the fixture's pruning unchanged, and read correctly
//! through ebb's types (Babylon, Poolboy) or scaledown-window's views (OpenShift, Karpenter), also
//! after ebb's own writes. And the pruning facts ebb's design rests on hold: Babylon's published
//! CRDs prune `spec.autoScaling` and keep unknown `status` fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ebb_crds::babylon::{AutoScaling, Workshop, WorkshopProvision, WorkshopUserAssignment};
use ebb_crds::poolboy::{ClaimSettlement, ResourceClaim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::DynamicObject;
use scaledown_window::decide::{
    self, CONFIGURED_MIN_ANNOTATION, Change, Claim, DISABLED_BY_ANNOTATION, MachineDecision,
    PINNED_MIN_ANNOTATION,
};
use scaledown_window::targets;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Loading

fn crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crds")
}

fn yaml_files_in(dir: &Path, prefix: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| format!("{prefix}{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    files.sort();
    files
}

/// Every fixture, relative to `e2e/crds/`: the CRDs the e2e suite installs, then the variants.
fn fixture_files() -> Vec<String> {
    let mut files = yaml_files_in(&crds_dir(), "");
    files.extend(yaml_files_in(&crds_dir().join("variants"), "variants/"));
    files
}

struct Fixture {
    file: String,
    text: String,
    crd: Value,
}

impl Fixture {
    fn load(file: &str) -> Fixture {
        let text = std::fs::read_to_string(crds_dir().join(file)).unwrap();
        let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        Fixture {
            file: file.to_owned(),
            text,
            crd,
        }
    }

    fn version(&self) -> &Value {
        &self.crd["spec"]["versions"][0]
    }

    fn schema(&self) -> &Value {
        &self.version()["schema"]["openAPIV3Schema"]
    }

    fn api_version(&self) -> String {
        format!(
            "{}/{}",
            self.crd["spec"]["group"].as_str().unwrap(),
            self.version()["name"].as_str().unwrap()
        )
    }

    fn kind(&self) -> &str {
        self.crd["spec"]["names"]["kind"].as_str().unwrap()
    }

    /// What the API server does with `object` on a write: defaults, then prunes unknown fields.
    fn admit(&self, object: &Value) -> Value {
        prune(self.schema(), &self.default(object))
    }

    /// The API server's structural defaulting. It also defaults inside a value it just defaulted
    /// (a NodePool created without `disruption` gets `disruption: {consolidateAfter: 0s}` and then
    /// that object's own defaults, `budgets: [{nodes: 10%}]` among them); kube-cel 0.8's
    /// `apply_defaults` goes one level per pass, so it runs until nothing changes.
    fn default(&self, object: &Value) -> Value {
        let mut current = object.clone();
        loop {
            let next = kube_cel::apply_defaults(self.schema(), &current);
            if next == current {
                return current;
            }
            current = next;
        }
    }

    /// The API server's validation: the OpenAPI schema, then the CEL rules, on the defaulted object.
    fn validate(&self, object: &Value) -> Result<(), String> {
        let defaulted = self.default(object);
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .build(&draft4(self.schema()))
            .map_err(|e| format!("{}: schema does not compile: {e}", self.file))?;
        let errors: Vec<String> = validator
            .iter_errors(&defaulted)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        kube_cel::Validator::new()
            .validate(self.schema(), &defaulted, None)
            .map_err(|e| e.to_string())
    }

    /// `object` is of exactly the upstream shape: valid, and nothing in it is pruned.
    fn assert_upstream_shape(&self, object: &Value) {
        let name = &object["metadata"]["name"];
        assert_eq!(object["apiVersion"], json!(self.api_version()), "{name}");
        assert_eq!(object["kind"], json!(self.kind()), "{name}");
        self.validate(object)
            .unwrap_or_else(|e| panic!("{} {name}: {e}", self.kind()));
        assert_eq!(
            prune(self.schema(), object),
            *object,
            "{} {name} has fields the upstream schema prunes",
            self.kind()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What the API server does with a schema: pruning, and OpenAPI in JSON Schema (draft 4) terms

/// The object as the API server stores it (structural pruning): a field the schema does not
/// declare is dropped unless its object's schema node has `x-kubernetes-preserve-unknown-fields`.
/// `apiVersion`, `kind` and `metadata` are the API server's own and are kept as they are.
fn prune(root: &Value, object: &Value) -> Value {
    let mut pruned = prune_node(root, object);
    if let (Some(out), Some(fields)) = (pruned.as_object_mut(), object.as_object()) {
        for key in ["apiVersion", "kind", "metadata"] {
            if let Some(value) = fields.get(key) {
                out.insert(key.into(), value.clone());
            }
        }
    }
    pruned
}

fn prune_node(schema: &Value, value: &Value) -> Value {
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            let preserve = preserves_unknown(schema);
            let kept: Map<String, Value> = fields
                .iter()
                .filter_map(|(key, child)| {
                    if let Some(child_schema) = properties.and_then(|p| p.get(key)) {
                        Some((key.clone(), prune_node(child_schema, child)))
                    } else if let Some(child_schema) = additional {
                        Some((key.clone(), prune_node(child_schema, child)))
                    } else {
                        preserve.then(|| (key.clone(), child.clone()))
                    }
                })
                .collect();
            Value::Object(kept)
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => items.iter().map(|i| prune_node(item_schema, i)).collect(),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

fn preserves_unknown(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
}

/// Whether the API server keeps a value written at `path` (field names from the root; `[]` steps
/// into list items).
fn keeps(schema: &Value, path: &[&str]) -> bool {
    let mut node = schema;
    for step in path {
        let next = if *step == "[]" {
            node.get("items")
        } else {
            node.get("properties")
                .and_then(|p| p.get(*step))
                .or_else(|| node.get("additionalProperties").filter(|s| s.is_object()))
        };
        match next {
            Some(child) => node = child,
            // An undeclared field: kept only where its object preserves unknown fields, and then
            // with everything below it.
            None => return preserves_unknown(node),
        }
    }
    true
}

/// OpenAPI v3 as the API server reads it, in JSON Schema draft 4 terms: `nullable: true` admits
/// `null` (draft 4 has no `nullable`). Kubernetes' own `x-kubernetes-*` keys are ignored by
/// jsonschema and handled by the tests that need them.
fn draft4(node: &Value) -> Value {
    let Some(schema) = node.as_object() else {
        return node.clone();
    };
    let mut out = schema.clone();
    if schema.get("nullable") == Some(&json!(true))
        && let Some(t) = schema.get("type").and_then(Value::as_str)
    {
        out.insert("type".into(), json!([t, "null"]));
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let converted: Map<String, Value> = properties
            .iter()
            .map(|(k, v)| (k.clone(), draft4(v)))
            .collect();
        out.insert("properties".into(), Value::Object(converted));
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = schema.get(key).filter(|c| c.is_object()) {
            out.insert(key.into(), draft4(child));
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            out.insert(key.into(), list.iter().map(draft4).collect());
        }
    }
    Value::Object(out)
}

/// Every schema node with its path, depth first.
fn schema_nodes<'a>(node: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.clone(), node));
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            schema_nodes(child, format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        schema_nodes(items, format!("{path}[]"), out);
    }
    if let Some(additional) = node.get("additionalProperties").filter(|a| a.is_object()) {
        schema_nodes(additional, format!("{path}{{}}"), out);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in node
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            schema_nodes(branch, format!("{path}.{junctor}[{i}]"), out);
        }
    }
}

fn merge(object: &Value, patch: &Value) -> Value {
    let mut merged = object.clone();
    json_patch::merge(&mut merged, patch);
    merged
}

// ---------------------------------------------------------------------------------------------
// Every fixture is a CRD a Kubernetes 1.28+ API server accepts

#[test]
fn every_fixture_is_one_v1_crd_named_after_its_file_with_its_source_in_a_header() {
    let files = fixture_files();
    assert!(files.len() >= 12, "{files:?}");
    for file in &files {
        let f = Fixture::load(file);
        let docs = serde_saphyr::from_multiple::<Value>(&f.text).unwrap().len();
        assert_eq!(docs, 1, "{file}: one CRD per file");
        assert_eq!(f.crd["apiVersion"], "apiextensions.k8s.io/v1", "{file}");
        assert_eq!(f.crd["kind"], "CustomResourceDefinition", "{file}");
        let name = f.crd["metadata"]["name"].as_str().unwrap();
        let plural = f.crd["spec"]["names"]["plural"].as_str().unwrap();
        let group = f.crd["spec"]["group"].as_str().unwrap();
        assert_eq!(name, format!("{plural}.{group}"), "{file}");
        let expected_file = match file.strip_prefix("variants/") {
            Some(_) => format!("variants/{name}-autoscaling.yaml"),
            None => format!("{name}.yaml"),
        };
        assert_eq!(*file, expected_file);
        let versions = f.crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "{file}: upstream serves one version");
        assert_eq!(versions[0]["served"], true, "{file}");
        assert_eq!(versions[0]["storage"], true, "{file}");
        assert!(
            versions[0]["subresources"]["status"].is_object(),
            "{file}: every upstream kind here has a status subresource"
        );
        let header: String = f
            .text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        for needed in ["# Source:", "github.com/", "Pruning:"] {
            assert!(header.contains(needed), "{file}: header lacks {needed:?}");
        }
        if !file.starts_with("variants/") {
            assert!(
                header.contains("# Read at:"),
                "{file}: header lacks the commit"
            );
            assert!(
                header.contains("# Trimmed:"),
                "{file}: header lacks what was trimmed"
            );
        }
    }
}

#[test]
fn the_readme_lists_every_fixture() {
    let readme = std::fs::read_to_string(crds_dir().join("README.md")).unwrap();
    for file in fixture_files() {
        assert!(
            readme.contains(&format!("`{file}`")),
            "README.md lacks {file}"
        );
    }
}

/// Numbers compare as numbers (k8s-openapi writes `minimum: 0` back as `0.0`).
fn normalize_numbers(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => items.iter().map(normalize_numbers).collect(),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), normalize_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The e2e suite reads each file into k8s-openapi's `CustomResourceDefinition` and applies that:
/// a key the type does not know (a misspelling, a keyword apiextensions/v1 lacks) would vanish
/// silently. Every key survives the round trip.
#[test]
fn every_fixture_round_trips_through_the_typed_crd_unchanged() {
    for file in fixture_files() {
        let f = Fixture::load(&file);
        let typed: CustomResourceDefinition =
            serde_saphyr::from_str(&f.text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            normalize_numbers(&serde_json::to_value(&typed).unwrap()),
            normalize_numbers(&f.crd),
            "{file}: a key k8s-openapi does not know"
        );
    }
}

/// The JSONSchemaProps keys apiextensions/v1 accepts in a structural schema (no `$ref`,
/// `definitions`, `dependencies`, `additionalItems`, `patternProperties`, `uniqueItems: true`).
const SCHEMA_KEYWORDS: &[&str] = &[
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "nullable",
    "example",
    "externalDocs",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema
fn structural_violations(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut nodes = Vec::new();
    schema_nodes(root, String::new(), &mut nodes);
    // `anyOf: [{type: integer}, {type: string}]` under x-kubernetes-int-or-string is the one place
    // a junctor may carry `type`.
    let int_or_string: Vec<String> = nodes
        .iter()
        .filter(|(_, n)| n.get("x-kubernetes-int-or-string") == Some(&json!(true)))
        .map(|(p, _)| p.clone())
        .collect();
    for (path, node) in &nodes {
        let int_or_string_branch = path
            .rsplit_once(".anyOf[")
            .is_some_and(|(parent, _)| int_or_string.iter().any(|p| p == parent));
        let path = if path.is_empty() {
            "<root>"
        } else {
            path.as_str()
        };
        let Some(schema) = node.as_object() else {
            out.push(format!("{path}: not an object"));
            continue;
        };
        for key in schema.keys() {
            if !SCHEMA_KEYWORDS.contains(&key.as_str()) {
                out.push(format!("{path}: keyword {key} is not allowed"));
            }
        }
        let in_junctor = path.contains("Of[");
        if in_junctor {
            for banned in [
                "type",
                "description",
                "default",
                "additionalProperties",
                "nullable",
            ] {
                if schema.contains_key(banned) && !(banned == "type" && int_or_string_branch) {
                    out.push(format!("{path}: {banned} inside a logical junctor"));
                }
            }
        } else {
            let escape = preserves_unknown(node)
                || schema.get("x-kubernetes-int-or-string") == Some(&json!(true));
            if schema.get("type").and_then(Value::as_str).is_none() && !escape {
                out.push(format!("{path}: no type"));
            }
        }
        if schema.contains_key("properties") && schema.contains_key("additionalProperties") {
            out.push(format!(
                "{path}: properties and additionalProperties together"
            ));
        }
        if schema
            .get("additionalProperties")
            .is_some_and(Value::is_boolean)
        {
            out.push(format!("{path}: additionalProperties must be a schema"));
        }
        if schema.get("uniqueItems") == Some(&json!(true)) {
            out.push(format!("{path}: uniqueItems: true"));
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
            let any_of = schema.get("anyOf").cloned().unwrap_or_default();
            if schema.contains_key("type")
                || (!any_of.is_null() && any_of != json!([{"type": "integer"}, {"type": "string"}]))
            {
                out.push(format!(
                    "{path}: int-or-string must have no type and anyOf integer|string"
                ));
            }
        }
        match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
            None | Some("atomic") => {}
            Some("set") => {
                if !matches!(
                    node["items"]["type"].as_str(),
                    Some("string" | "integer" | "number" | "boolean")
                ) {
                    out.push(format!("{path}: list-type set needs scalar items"));
                }
            }
            Some("map") => {
                let items = &node["items"];
                let keys: Vec<&str> = node["x-kubernetes-list-map-keys"]
                    .as_array()
                    .map(|k| k.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if keys.is_empty() {
                    out.push(format!("{path}: list-type map without list-map-keys"));
                }
                for key in keys {
                    let required = items["required"]
                        .as_array()
                        .is_some_and(|r| r.contains(&json!(key)));
                    if !required && items["properties"][key].get("default").is_none() {
                        out.push(format!(
                            "{path}: list-map key {key} is neither required nor defaulted"
                        ));
                    }
                }
            }
            Some(other) => out.push(format!("{path}: list-type {other}")),
        }
        if let Some(Value::String(map_type)) = schema.get("x-kubernetes-map-type")
            && map_type != "atomic"
            && map_type != "granular"
        {
            out.push(format!("{path}: map-type {map_type}"));
        }
    }
    // Only `metadata.name` and `metadata.generateName` may be restricted, and only at the root.
    let metadata = &root["properties"]["metadata"];
    if metadata["type"] != "object" {
        out.push("metadata: must be type: object".into());
    }
    for (key, _) in metadata.as_object().into_iter().flatten() {
        if !["type", "properties", "description"].contains(&key.as_str()) {
            out.push(format!("metadata: {key} is not allowed"));
        }
    }
    for (name, _) in metadata["properties"].as_object().into_iter().flatten() {
        if name != "name" && name != "generateName" {
            out.push(format!(
                "metadata.{name}: only name and generateName may be restricted"
            ));
        }
    }
    if root["type"] != "object" {
        out.push("<root>: type must be object".into());
    }
    out
}

#[test]
fn every_fixture_schema_is_structural_and_uses_only_v1_keywords() {
    let mut violations = Vec::new();
    for file in fixture_files() {
        let f = Fixture::load(&file);
        for v in structural_violations(f.schema()) {
            violations.push(format!("{file}: {v}"));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_structural_check_catches_what_kubernetes_rejects() {
    let bad = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        "a": {"properties": {}},
        "b": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k"]},
        "c": {"type": "string", "$ref": "#/x"},
        "d": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
        "e": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
    }});
    let v = structural_violations(&bad);
    assert_eq!(v.len(), 6, "{v:#?}");
}

/// Every default is valid at its place (the API server rejects a CRD whose defaults are not).
#[test]
fn every_default_validates_against_its_schema() {
    for file in fixture_files() {
        let f = Fixture::load(&file);
        let mut nodes = Vec::new();
        schema_nodes(f.schema(), String::new(), &mut nodes);
        for (path, node) in nodes {
            let Some(default) = node.get("default") else {
                continue;
            };
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft4)
                .build(&draft4(node))
                .unwrap();
            let errors: Vec<String> = validator
                .iter_errors(default)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{file} {path}: default {default}: {errors:?}"
            );
            assert_eq!(
                prune_node(node, default),
                *default,
                "{file} {path}: default is pruned"
            );
        }
    }
}

/// Each CEL rule compiles, and every field it reads directly is bounded (`maxLength`/`enum` on a
/// string, `maxItems` on a list), so the API server's cost estimate cannot reject it.
#[test]
fn cel_rules_compile_and_read_only_bounded_fields() {
    let bounded = |node: &Value| match node["type"].as_str() {
        Some("string") => node.get("maxLength").is_some() || node.get("enum").is_some(),
        Some("array") => node.get("maxItems").is_some(),
        _ => true,
    };
    let mut unbounded = Vec::new();
    let mut rules_seen = 0;
    for file in fixture_files() {
        let f = Fixture::load(&file);
        let compiled = kube_cel::compile_schema(f.schema());
        assert!(
            !compiled.has_errors(),
            "{file}: {:?}",
            compiled.compilation_errors()
        );
        let mut nodes = Vec::new();
        schema_nodes(f.schema(), String::new(), &mut nodes);
        for (path, node) in nodes {
            let Some(rules) = node
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for rule in rules {
                rules_seen += 1;
                let text = rule["rule"].as_str().unwrap();
                assert!(
                    rule["message"].is_string(),
                    "{file} {path}: {text} has no message"
                );
                if !bounded(node) {
                    unbounded.push(format!("{file} {path}: {text}"));
                }
                for (name, child) in node["properties"].as_object().into_iter().flatten() {
                    let read = text.match_indices(&format!("self.{name}")).any(|(i, m)| {
                        !text[i + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    });
                    if read && !bounded(child) {
                        unbounded.push(format!("{file} {path}.{name}: {text}"));
                    }
                }
            }
        }
    }
    assert!(
        rules_seen >= 10,
        "only {rules_seen} CEL rules: fixtures lost their rules?"
    );
    assert!(
        unbounded.is_empty(),
        "CEL reads unbounded fields:\n{}",
        unbounded.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The pruning facts

const WORKSHOP: &str = "workshops.babylon.gpte.redhat.com.yaml";
const WORKSHOP_VARIANT: &str = "variants/workshops.babylon.gpte.redhat.com-autoscaling.yaml";
const PROVISION: &str = "workshopprovisions.babylon.gpte.redhat.com.yaml";
const PROVISION_VARIANT: &str =
    "variants/workshopprovisions.babylon.gpte.redhat.com-autoscaling.yaml";
const ASSIGNMENT: &str = "workshopuserassignments.babylon.gpte.redhat.com.yaml";
const CLAIM: &str = "resourceclaims.poolboy.gpte.redhat.com.yaml";
const CLUSTER_AUTOSCALER: &str = "clusterautoscalers.autoscaling.openshift.io.yaml";
const MACHINE_AUTOSCALER: &str = "machineautoscalers.autoscaling.openshift.io.yaml";
const MACHINE_SET: &str = "machinesets.machine.openshift.io.yaml";
const MACHINE_CONFIG_POOL: &str = "machineconfigpools.machineconfiguration.openshift.io.yaml";
const CLUSTER_VERSION: &str = "clusterversions.config.openshift.io.yaml";
const NODE_POOL: &str = "nodepools.karpenter.sh.yaml";

const AUTOSCALING_FIELDS: [&str; 4] = ["enabled", "threshold", "scaleFactor", "maxProvisions"];

#[test]
fn stock_babylon_prunes_spec_autoscaling_and_keeps_unknown_status_fields() {
    for file in [WORKSHOP, PROVISION] {
        let schema = Fixture::load(file).schema().clone();
        assert!(!preserves_unknown(&schema["properties"]["spec"]), "{file}");
        assert!(!keeps(&schema, &["spec", "autoScaling"]), "{file}");
        for field in AUTOSCALING_FIELDS {
            assert!(!keeps(&schema, &["spec", "autoScaling", field]), "{file}");
        }
        assert!(!keeps(&schema, &["spec", "anythingElse"]), "{file}");
        assert!(preserves_unknown(&schema["properties"]["status"]), "{file}");
        for field in [
            "autoScalingActive",
            "autoScalingStartedAt",
            "autoScalingFromCount",
            "autoScalingTargetCount",
            "conditions",
        ] {
            assert!(keeps(&schema, &["status", field]), "{file}: status.{field}");
        }
    }
    // Only the provision's free-form parameters keep what they are given.
    let provision = Fixture::load(PROVISION).schema().clone();
    assert!(keeps(&provision, &["spec", "parameters", "any", "thing"]));
}

#[test]
fn the_autoscaling_variants_keep_spec_autoscaling_but_not_active_timeout() {
    for (stock, variant) in [(WORKSHOP, WORKSHOP_VARIANT), (PROVISION, PROVISION_VARIANT)] {
        let stock = Fixture::load(stock);
        let variant = Fixture::load(variant);
        let schema = variant.schema();
        assert!(keeps(schema, &["spec", "autoScaling"]), "{}", variant.file);
        for field in AUTOSCALING_FIELDS {
            assert!(keeps(schema, &["spec", "autoScaling", field]), "{field}");
        }
        // ebb's own `autoScaling.activeTimeout` is not in the pull request's schema.
        assert!(!keeps(schema, &["spec", "autoScaling", "activeTimeout"]));
        assert!(preserves_unknown(&schema["properties"]["status"]));
        // Otherwise the variant is the stock CRD.
        let mut without = variant.crd.clone();
        without["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove("autoScaling")
            .unwrap();
        assert_eq!(without, stock.crd, "{}", variant.file);
    }
}

#[test]
fn the_other_fixtures_prune_as_upstream_does() {
    let schema = |file| Fixture::load(file).schema().clone();
    let assignment = schema(ASSIGNMENT);
    assert!(!keeps(&assignment, &["spec", "seat"]));
    assert!(keeps(&assignment, &["spec", "data", "anything"]));
    assert!(keeps(&assignment, &["status", "anything"]));
    // Upstream's required list for `spec` is lost to a duplicate key: nothing in spec is required.
    assert!(assignment["properties"]["spec"].get("required").is_none());
    assert_eq!(
        assignment["required"],
        json!(["apiVersion", "kind", "metadata", "spec"])
    );

    let claim = schema(CLAIM);
    let state =
        |rest: &[&'static str]| [&["status", "resources", "[]", "state"][..], rest].concat();
    assert!(keeps(&claim, &state(&["spec", "vars", "current_state"])));
    assert!(keeps(
        &claim,
        &state(&["status", "towerJobs", "provision", "completeTimestamp"])
    ));
    assert!(keeps(&claim, &["status", "anything"]));
    assert!(!keeps(&claim, &["status", "resources", "[]", "anything"]));
    assert!(!keeps(&claim, &["spec", "anything"]));

    let autoscaler = schema(CLUSTER_AUTOSCALER);
    assert!(keeps(&autoscaler, &["spec", "scaleDown", "enabled"]));
    assert!(!keeps(&autoscaler, &["spec", "scaleDown", "anything"]));
    assert!(!keeps(&autoscaler, &["status", "anything"]));
    assert_eq!(
        autoscaler["properties"]["spec"]["properties"]["scaleDown"]["required"],
        json!(["enabled"])
    );

    for file in [
        MACHINE_AUTOSCALER,
        MACHINE_SET,
        MACHINE_CONFIG_POOL,
        CLUSTER_VERSION,
        NODE_POOL,
    ] {
        let s = schema(file);
        assert!(!keeps(&s, &["spec", "anything"]), "{file}");
        assert!(!keeps(&s, &["status", "anything"]), "{file}");
    }
    let machine_set = schema(MACHINE_SET);
    let provider_value = [
        "spec",
        "template",
        "spec",
        "providerSpec",
        "value",
        "instanceType",
    ];
    assert!(keeps(&machine_set, &provider_value));
    assert!(!keeps(&machine_set, &["status", "labelSelector"]));
    let pool = schema(NODE_POOL);
    assert!(keeps(
        &pool,
        &["spec", "disruption", "budgets", "[]", "nodes"]
    ));
    assert!(!keeps(
        &pool,
        &["spec", "disruption", "budgets", "[]", "owner"]
    ));
}

#[test]
fn the_pruning_model_matches_the_api_servers_rules() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"known": {"type": "object", "properties": {}}}}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "integer"}}}},
    }});
    let object = json!({
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"a": "b"}},
        "spec": {"a": "1", "b": "2", "free": {"x": {"y": 1}, "known": {"dropped": 1}}},
        "list": [{"k": "v", "z": 1}], "map": {"m": {"v": 1, "w": 2}}, "top": 1,
    });
    assert_eq!(
        prune(&schema, &object),
        json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {"a": "1", "free": {"x": {"y": 1}, "known": {}}},
            "list": [{"k": "v"}], "map": {"m": {"v": 1}},
        })
    );
    assert!(keeps(&schema, &["spec", "free", "x", "y"]));
    assert!(!keeps(&schema, &["spec", "free", "known", "dropped"]));
    assert!(keeps(&schema, &["map", "any", "v"]));
    assert!(!keeps(&schema, &["list", "[]", "z"]));
}

// ---------------------------------------------------------------------------------------------
// Babylon

const NS: &str = "babylon-workshops";
const BABYLON: &str = "babylon.gpte.redhat.com/v1";

fn workshop() -> Value {
    json!({
        "apiVersion": BABYLON, "kind": "Workshop",
        "metadata": {
            "name": "summit-ansible-lab", "namespace": NS,
            "uid": "3b7a5e0e-2b9c-4b58-8f4a-0d3f6f6c1a11", "resourceVersion": "88124511",
            "generation": 3, "creationTimestamp": "2026-05-04T07:12:44Z",
            "labels": {
                "babylon.gpte.redhat.com/catalogItemName": "ansible-rhel.prod",
                "babylon.gpte.redhat.com/catalogItemNamespace": "babylon-catalog-prod"
            },
            "annotations": {"demo.redhat.com/requester": "jdoe@example.com"},
            "finalizers": ["babylon.gpte.redhat.com/workshop-manager"]
        },
        "spec": {
            "accessPassword": "summit2026",
            "actionSchedule": {"start": "2026-05-05T08:00:00Z", "stop": "2026-05-05T18:00:00Z"},
            "description": "<p>Hands-on Ansible Automation Platform lab.</p>",
            "displayName": "Ansible Automation Platform Lab",
            "labUserInterface": {"redirect": true},
            "lifespan": {"start": "2026-05-05T06:00:00Z", "end": "2026-05-06T06:00:00Z"},
            "multiuserServices": false,
            "openRegistration": true,
            "provisionDisabled": false
        },
        "status": {
            "diffBase": "{\"spec\":{}}",
            "kopf": {"progress": {}},
            "provisionCount": {"ordered": 20, "provisioning": 2, "failed": 1, "completed": 17},
            "userAssignments": {
                "claim-1a2b3.1": {"assignment": {"email": "alice@example.com"},
                                   "resourceClaimName": "claim-1a2b3", "userName": "user1"}
            },
            "userCount": {"assigned": 17, "available": 3, "total": 20}
        }
    })
}

fn workshop_provision() -> Value {
    json!({
        "apiVersion": BABYLON, "kind": "WorkshopProvision",
        "metadata": {
            "name": "summit-ansible-lab", "namespace": NS,
            "uid": "c1f0e8a2-6d1e-4a55-9a40-77e3d3b4a002", "resourceVersion": "88124512",
            "generation": 5, "creationTimestamp": "2026-05-04T07:12:45Z",
            "labels": {"babylon.gpte.redhat.com/workshop": "summit-ansible-lab"},
            "ownerReferences": [{
                "apiVersion": BABYLON, "kind": "Workshop", "name": "summit-ansible-lab",
                "uid": "3b7a5e0e-2b9c-4b58-8f4a-0d3f6f6c1a11", "controller": true
            }]
        },
        "spec": {
            "actionSchedule": {"start": "2026-05-05T08:00:00Z", "stop": "2026-05-05T18:00:00Z"},
            "autoDetach": {"when": "status.summary.state == 'provision-failed'"},
            "catalogItem": {"name": "ansible-rhel.prod", "namespace": "babylon-catalog-prod"},
            "concurrency": 10,
            "count": 20,
            "lifespan": {"start": "2026-05-05T06:00:00Z", "end": "2026-05-06T06:00:00Z"},
            "parameters": {
                "purpose": "Practice / Enablement",
                "purpose_activity": "Conduct internal training",
                "salesforce_id": "701Hp000001abcd",
                "num_users": 1,
                "workshop_extra_vars": {"aap_version": "2.5", "controller_count": 1}
            },
            "resourcePool": "disabled",
            "startDelay": 10,
            "workshopName": "summit-ansible-lab"
        },
        "status": {
            "diffBase": "{\"spec\":{}}",
            "kopf": {"progress": {"workshopprovision_event/spec": {"started": "2026-05-04T07:12:45Z"}}},
            "autoScalingActive": true,
            "autoScalingStartedAt": "2026-05-05T09:41:07Z",
            "autoScalingFromCount": 20,
            "autoScalingTargetCount": 30,
            "conditions": [{
                "type": "AutoScaling", "status": "True", "reason": "UtilizationAboveThreshold",
                "message": "17 of 20 seats assigned (85% >= 80%): count 20 -> 30",
                "lastTransitionTime": "2026-05-05T09:41:07Z", "observedGeneration": 5
            }]
        }
    })
}

fn assignment(seat: u32, email: Option<&str>) -> Value {
    let mut spec = json!({
        "workshopName": "summit-ansible-lab",
        "resourceClaimName": format!("ansible-rhel.prod-{seat:05}"),
        "userName": format!("user{seat}"),
        "labUserInterface": {"redirect": true, "url": format!("https://showroom-user{seat}.apps.example.com")},
        "messages": "Your lab is ready. Log in with the credentials below.",
        "data": {"bastion_public_hostname": format!("bastion.user{seat}.example.com"),
                 "bastion_ssh_user_name": "lab-user", "aap_controller_web_url": "https://controller.example.com"}
    });
    if let Some(email) = email {
        spec["assignment"] = json!({"email": email});
    }
    json!({
        "apiVersion": BABYLON, "kind": "WorkshopUserAssignment",
        "metadata": {
            "name": format!("summit-ansible-lab-{seat:05}"), "namespace": NS,
            "labels": {"babylon.gpte.redhat.com/workshop": "summit-ansible-lab"},
            "ownerReferences": [{"apiVersion": BABYLON, "kind": "Workshop", "name": "summit-ansible-lab",
                                 "uid": "3b7a5e0e-2b9c-4b58-8f4a-0d3f6f6c1a11"}]
        },
        "spec": spec,
        "status": {"diffBase": "{}"}
    })
}

#[test]
fn a_babylon_workshop_reads_through_ebbs_type() {
    let f = Fixture::load(WORKSHOP);
    let object = workshop();
    f.assert_upstream_shape(&object);
    let w: Workshop = serde_json::from_value(object).unwrap();
    assert_eq!(
        w.spec.display_name.as_deref(),
        Some("Ansible Automation Platform Lab")
    );
    assert_eq!(w.spec.provision_disabled, Some(false));
    assert_eq!(w.spec.open_registration, Some(true));
    assert_eq!(w.spec.lab_user_interface.unwrap().redirect, Some(true));
    assert_eq!(w.spec.lifespan.unwrap()["end"], "2026-05-06T06:00:00Z");
    assert_eq!(w.spec.auto_scaling, None);
    let count = w.status.unwrap().user_count.unwrap();
    assert_eq!(
        (count.assigned, count.available, count.total),
        (Some(17), Some(3), Some(20))
    );
}

#[test]
fn a_babylon_workshop_provision_with_ebbs_status_reads_through_ebbs_type() {
    let f = Fixture::load(PROVISION);
    let object = workshop_provision();
    f.assert_upstream_shape(&object);
    let p: WorkshopProvision = serde_json::from_value(object).unwrap();
    assert_eq!(p.spec.count, 20);
    assert_eq!(p.spec.workshop_name, "summit-ansible-lab");
    assert_eq!(p.spec.catalog_item.name, "ansible-rhel.prod");
    assert_eq!(p.spec.catalog_item.namespace, "babylon-catalog-prod");
    assert_eq!(p.spec.concurrency, Some(10));
    assert_eq!(p.spec.start_delay, Some(10));
    assert_eq!(p.spec.resource_pool.as_deref(), Some("disabled"));
    assert_eq!(
        p.spec.parameters.unwrap()["salesforce_id"],
        "701Hp000001abcd"
    );
    assert_eq!(p.spec.auto_scaling, None);
    let status = p.status.unwrap();
    assert_eq!(status.auto_scaling_active, Some(true));
    assert!(status.auto_scaling_started_at.is_some());
    assert_eq!(status.auto_scaling_from_count, Some(20));
    assert_eq!(status.auto_scaling_target_count, Some(30));
    assert_eq!(status.conditions.len(), 1);
    assert_eq!(status.conditions[0].type_, "AutoScaling");

    // A provision Babylon just created: no status yet, no optional fields.
    let bare = json!({
        "apiVersion": BABYLON, "kind": "WorkshopProvision",
        "metadata": {"name": "bare", "namespace": NS},
        "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": 1, "workshopName": "w"}
    });
    f.assert_upstream_shape(&bare);
    let p: WorkshopProvision = serde_json::from_value(bare).unwrap();
    assert_eq!(p.status, None);
}

#[test]
fn autoscaling_written_to_stock_babylon_is_pruned_and_survives_the_variant() {
    let auto = json!({"enabled": true, "threshold": 0.9, "scaleFactor": 2.0,
                      "maxProvisions": 40, "activeTimeout": "30m"});
    let from_variant = AutoScaling {
        enabled: Some(true),
        threshold: Some(0.9),
        scale_factor: Some(2.0),
        max_provisions: Some(40),
        active_timeout: None,
    };
    for (stock, variant, mut object) in [
        (WORKSHOP, WORKSHOP_VARIANT, workshop()),
        (PROVISION, PROVISION_VARIANT, workshop_provision()),
    ] {
        object["spec"]["autoScaling"] = auto.clone();
        let stock = Fixture::load(stock);
        let variant = Fixture::load(variant);
        stock.validate(&object).unwrap();
        variant.validate(&object).unwrap();

        let stored = stock.admit(&object);
        assert!(
            stored["spec"].get("autoScaling").is_none(),
            "{}",
            stock.file
        );
        let stored_variant = variant.admit(&object);
        assert_eq!(
            stored_variant["spec"]["autoScaling"],
            json!({"enabled": true, "threshold": 0.9, "scaleFactor": 2.0, "maxProvisions": 40})
        );
        // ebb's status fields survive either way.
        assert_eq!(stored["status"], object["status"], "{}", stock.file);

        match stock.kind() {
            "Workshop" => {
                let w: Workshop = serde_json::from_value(stored).unwrap();
                assert_eq!(w.spec.auto_scaling, None);
                let w: Workshop = serde_json::from_value(stored_variant).unwrap();
                assert_eq!(w.spec.auto_scaling, Some(from_variant.clone()));
            }
            _ => {
                let p: WorkshopProvision = serde_json::from_value(stored).unwrap();
                assert_eq!(p.spec.auto_scaling, None);
                assert_eq!(p.status.unwrap().auto_scaling_active, Some(true));
                let p: WorkshopProvision = serde_json::from_value(stored_variant).unwrap();
                assert_eq!(p.spec.auto_scaling, Some(from_variant.clone()));
            }
        }
    }
}

#[test]
fn babylon_seats_read_through_ebbs_type() {
    let f = Fixture::load(ASSIGNMENT);
    let held = assignment(7, Some("alice@example.com"));
    let free = assignment(8, None);
    for seat in [&held, &free] {
        f.assert_upstream_shape(seat);
    }
    let held: WorkshopUserAssignment = serde_json::from_value(held).unwrap();
    assert_eq!(held.spec.workshop_name, "summit-ansible-lab");
    assert_eq!(held.spec.resource_claim_name, "ansible-rhel.prod-00007");
    assert_eq!(
        held.spec.assignment.unwrap().email.as_deref(),
        Some("alice@example.com")
    );
    assert_eq!(held.spec.user_name.as_deref(), Some("user7"));
    assert!(held.spec.data.unwrap()["bastion_public_hostname"].is_string());
    let ui = held.spec.lab_user_interface.unwrap();
    assert_eq!(ui.redirect, Some(true));
    assert_eq!(
        ui.url.as_deref(),
        Some("https://showroom-user7.apps.example.com")
    );
    let free: WorkshopUserAssignment = serde_json::from_value(free).unwrap();
    assert_eq!(free.spec.assignment, None);

    // The published schema requires nothing inside `spec` (see the fixture's header), so the API
    // server accepts a seat without `resourceClaimName`; ebb's type requires it.
    let mut without_claim = assignment(9, Some("bob@example.com"));
    without_claim["spec"]
        .as_object_mut()
        .unwrap()
        .remove("resourceClaimName");
    f.assert_upstream_shape(&without_claim);
    assert!(serde_json::from_value::<WorkshopUserAssignment>(without_claim).is_err());
}

// ---------------------------------------------------------------------------------------------
// Poolboy

fn anarchy_state(current_state: &str, provision_complete: bool) -> Value {
    let mut tower_jobs = json!({"provision": {"deployerJob": 1_234_567, "jobId": "5f1e",
                                              "launchTimestamp": "2026-05-05T06:03:10Z"}});
    if provision_complete {
        tower_jobs["provision"]["completeTimestamp"] = json!("2026-05-05T06:41:52Z");
    }
    json!({
        "apiVersion": "anarchy.gpte.redhat.com/v1", "kind": "AnarchySubject",
        "metadata": {"name": "ansible-rhel.prod-00007-a1b2c", "namespace": "babylon-anarchy-3",
                     "labels": {"babylon.gpte.redhat.com/catalogItemName": "ansible-rhel.prod"}},
        "spec": {
            "governor": "ansible-rhel.prod",
            "vars": {
                "action_schedule": {"start": "2026-05-05T08:00:00Z", "stop": "2026-05-05T18:00:00Z"},
                "current_state": current_state,
                "desired_state": "started",
                "healthy": true,
                "job_vars": {"guid": "a1b2c", "cloud_provider": "ec2", "uuid": "0b6e2d4c"},
                "provision_data": {"bastion_public_hostname": "bastion.a1b2c.example.com"}
            }
        },
        "status": {"towerJobs": tower_jobs, "diffBase": "{}"}
    })
}

fn resource_claim(name: &str, ready: bool, states: &[Value]) -> Value {
    let resources: Vec<Value> = states
        .iter()
        .enumerate()
        .map(|(i, state)| {
            json!({
                "name": format!("resource-{i}"),
                "healthy": true,
                "ready": ready,
                "provider": {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceProvider",
                             "name": "babylon", "namespace": "poolboy"},
                "reference": {"apiVersion": "anarchy.gpte.redhat.com/v1", "kind": "AnarchySubject",
                              "name": format!("{name}-{i}"), "namespace": "babylon-anarchy-3"},
                "state": state
            })
        })
        .collect();
    json!({
        "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
        "metadata": {
            "name": name, "namespace": NS,
            "labels": {
                "babylon.gpte.redhat.com/workshop-provision": "summit-ansible-lab",
                "babylon.gpte.redhat.com/workshop": "summit-ansible-lab",
                "babylon.gpte.redhat.com/catalogItemName": "ansible-rhel.prod"
            },
            "annotations": {"poolboy.gpte.redhat.com/resource-pool-name": "disabled"},
            "ownerReferences": [{"apiVersion": BABYLON, "kind": "WorkshopProvision",
                                 "name": "summit-ansible-lab",
                                 "uid": "c1f0e8a2-6d1e-4a55-9a40-77e3d3b4a002", "controller": true}]
        },
        "spec": {
            "autoDetach": {"when": "status.summary.state == 'provision-failed'"},
            "lifespan": {"start": "2026-05-05T06:00:00Z", "end": "2026-05-06T06:00:00Z"},
            "provider": {"name": "babylon-ansible-rhel.prod",
                         "parameterValues": {"purpose": "Practice / Enablement", "num_users": 1}}
        },
        "status": {
            "approval": {"state": "approved"},
            "diffBase": "{}",
            "healthy": true,
            "kopf": {"progress": {}},
            "lifespan": {"start": "2026-05-05T06:00:00Z", "end": "2026-05-06T06:00:00Z",
                         "firstReady": "2026-05-05T06:42:10Z", "maximum": "14d", "relativeMaximum": "5d"},
            "provider": {"name": "babylon-ansible-rhel.prod",
                         "parameterValues": {"purpose": "Practice / Enablement", "num_users": 1},
                         "validationErrors": []},
            "ready": ready,
            "resourceHandle": {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceHandle",
                               "name": format!("guid-{name}"), "namespace": "poolboy", "detached": false},
            "resources": resources,
            "summary": {"state": "started", "runtime_default": "4h", "provision_data": {"users": {}}}
        }
    })
}

#[test]
fn poolboy_resource_claims_read_through_ebbs_type_with_babylons_predicates() {
    let f = Fixture::load(CLAIM);
    let cases = [
        (
            resource_claim("ready", true, &[anarchy_state("started", true)]),
            ClaimSettlement::Ready,
        ),
        (
            resource_claim(
                "failed",
                false,
                &[
                    anarchy_state("started", true),
                    anarchy_state("provision-failed", false),
                ],
            ),
            ClaimSettlement::Failed,
        ),
        (
            resource_claim(
                "cancelled",
                false,
                &[anarchy_state("provision-cancelled", false)],
            ),
            ClaimSettlement::Failed,
        ),
        (
            resource_claim("complete", false, &[anarchy_state("stopped", true)]),
            ClaimSettlement::Complete,
        ),
        (
            resource_claim("pending", false, &[anarchy_state("provisioning", false)]),
            ClaimSettlement::Pending,
        ),
    ];
    for (object, expected) in cases {
        f.assert_upstream_shape(&object);
        let claim: ResourceClaim = serde_json::from_value(object.clone()).unwrap();
        assert_eq!(
            claim.settlement(),
            expected,
            "{}",
            object["metadata"]["name"]
        );
        let status = claim.status.unwrap();
        assert_eq!(status.healthy, Some(true));
        assert_eq!(status.resources[0].name.as_deref(), Some("resource-0"));
        assert_eq!(status.resources[0].healthy, Some(true));
    }

    // A claim Poolboy has not reconciled yet, with the older `spec.resources` form.
    let fresh = json!({
        "apiVersion": "poolboy.gpte.redhat.com/v1", "kind": "ResourceClaim",
        "metadata": {"name": "fresh", "namespace": NS,
                     "labels": {"babylon.gpte.redhat.com/workshop-provision": "summit-ansible-lab"}},
        "spec": {"resources": [{"name": "lab", "provider": {"name": "babylon"},
                                "template": {"spec": {"vars": {"job_vars": {"guid": "x1y2z"}}}}}]}
    });
    f.assert_upstream_shape(&fresh);
    let claim: ResourceClaim = serde_json::from_value(fresh).unwrap();
    assert_eq!(claim.settlement(), ClaimSettlement::Pending);
}

// ---------------------------------------------------------------------------------------------
// OpenShift, through scaledown-window's views

const ME: &str = "workday-nights";

fn dynamic(object: &Value) -> DynamicObject {
    serde_json::from_value(object.clone()).unwrap()
}

fn cluster_autoscaler(scale_down: Option<Value>) -> Value {
    let mut spec = json!({
        "balanceSimilarNodeGroups": true,
        "balancingIgnoredLabels": ["topology.ebs.csi.aws.com/zone"],
        "ignoreDaemonsetsUtilization": false,
        "logVerbosity": 1,
        "maxNodeProvisionTime": "15m",
        "maxPodGracePeriod": 600,
        "podPriorityThreshold": -10,
        "resourceLimits": {
            "maxNodesTotal": 24,
            "cores": {"min": 8, "max": 128},
            "memory": {"min": 4, "max": 256},
            "gpus": [{"type": "nvidia.com/gpu", "min": 0, "max": 16}]
        },
        "skipNodesWithLocalStorage": true
    });
    if let Some(scale_down) = scale_down {
        spec["scaleDown"] = scale_down;
    }
    json!({
        "apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
        "metadata": {"name": "default", "uid": "0f9e4c1a-7d5b-4e3a-9a61-2c8b7d6e5f40",
                     "resourceVersion": "512233", "generation": 2,
                     "creationTimestamp": "2026-01-12T10:00:00Z"},
        "spec": spec
    })
}

#[test]
fn an_openshift_cluster_autoscaler_reads_and_takes_ebbs_apply() {
    let f = Fixture::load(CLUSTER_AUTOSCALER);
    let on = cluster_autoscaler(Some(json!({
        "enabled": true, "delayAfterAdd": "10m", "delayAfterDelete": "5m",
        "delayAfterFailure": "30s", "unneededTime": "5m", "utilizationThreshold": "0.4"
    })));
    f.assert_upstream_shape(&on);
    assert_eq!(
        targets::cluster_autoscaler_enabled(&dynamic(&on)),
        Some(true)
    );

    let without = cluster_autoscaler(None);
    f.assert_upstream_shape(&without);
    assert_eq!(
        targets::cluster_autoscaler_enabled(&dynamic(&without)),
        None
    );

    // `scaleDown` without `enabled` is refused: a stored scaleDown always says.
    let incomplete = cluster_autoscaler(Some(json!({"unneededTime": "5m"})));
    assert!(f.validate(&incomplete).is_err());

    // scaledown-window's server-side apply of `spec.scaleDown.enabled`, merged into each.
    let body = targets::patch_body(
        &Change::ClusterAutoscaler {
            name: "default".into(),
            uid: Some("6f3c1a2e-0000-4000-8000-000000000001".into()),
            enabled: false,
        },
        ME,
    );
    for object in [&on, &without, &incomplete] {
        let written = merge(object, &body);
        f.validate(&written).unwrap();
        let stored = f.admit(&written);
        assert_eq!(
            targets::cluster_autoscaler_enabled(&dynamic(&stored)),
            Some(false)
        );
        assert_eq!(
            stored["spec"]["resourceLimits"],
            object["spec"]["resourceLimits"]
        );
    }
    // Whatever ebb might write into the status is gone: the status schema declares nothing.
    let with_status = merge(&on, &json!({"status": {"scaleDownDisabledBy": ME}}));
    assert_eq!(f.admit(&with_status)["status"], json!({}));
}

fn machine_autoscaler(annotations: Value) -> Value {
    json!({
        "apiVersion": "autoscaling.openshift.io/v1beta1", "kind": "MachineAutoscaler",
        "metadata": {"name": "worker-us-east-1a", "namespace": "openshift-machine-api",
                     "resourceVersion": "731004", "labels": {"pool": "batch"},
                     "annotations": annotations},
        "spec": {
            "minReplicas": 1,
            "maxReplicas": 12,
            "scaleTargetRef": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                               "name": "ci-ln-7x2k9-worker-us-east-1a"}
        },
        "status": {"lastTargetRef": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                                     "name": "ci-ln-7x2k9-worker-us-east-1a"}}
    })
}

fn machine_set(replicas: Option<i64>) -> Value {
    let mut object = json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
        "metadata": {"name": "ci-ln-7x2k9-worker-us-east-1a", "namespace": "openshift-machine-api",
                     "labels": {"machine.openshift.io/cluster-api-cluster": "ci-ln-7x2k9"},
                     "annotations": {"machine.openshift.io/memoryMb": "16384", "machine.openshift.io/vCPU": "4"}},
        "spec": {
            "deletePolicy": "Oldest",
            "minReadySeconds": 0,
            "selector": {"matchLabels": {
                "machine.openshift.io/cluster-api-cluster": "ci-ln-7x2k9",
                "machine.openshift.io/cluster-api-machineset": "ci-ln-7x2k9-worker-us-east-1a"}},
            "template": {
                "metadata": {"labels": {
                    "machine.openshift.io/cluster-api-cluster": "ci-ln-7x2k9",
                    "machine.openshift.io/cluster-api-machine-role": "worker",
                    "machine.openshift.io/cluster-api-machine-type": "worker",
                    "machine.openshift.io/cluster-api-machineset": "ci-ln-7x2k9-worker-us-east-1a"}},
                "spec": {
                    "lifecycleHooks": {"preDrain": [{"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}]},
                    "metadata": {"labels": {"node-role.kubernetes.io/worker": ""}},
                    "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
                    "providerSpec": {"value": {
                        "apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
                        "ami": {"id": "ami-0c1d2e3f4a5b6c7d8"}, "instanceType": "m6i.xlarge",
                        "blockDevices": [{"ebs": {"encrypted": true, "volumeSize": 120, "volumeType": "gp3"}}],
                        "credentialsSecret": {"name": "aws-cloud-credentials"},
                        "iamInstanceProfile": {"id": "ci-ln-7x2k9-worker-profile"},
                        "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
                        "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["ci-ln-7x2k9-node"]}]}],
                        "subnet": {"filters": [{"name": "tag:Name", "values": ["ci-ln-7x2k9-subnet-private-us-east-1a"]}]},
                        "tags": [{"name": "kubernetes.io/cluster/ci-ln-7x2k9", "value": "owned"}],
                        "userDataSecret": {"name": "worker-user-data"}
                    }}
                }
            }
        },
        "status": {"availableReplicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 4,
                   "readyReplicas": 3, "replicas": 3}
    });
    if let Some(replicas) = replicas {
        object["spec"]["replicas"] = json!(replicas);
    }
    object
}

#[test]
fn an_openshift_machine_autoscaler_reads_and_takes_ebbs_pin_and_release() {
    let f = Fixture::load(MACHINE_AUTOSCALER);
    let object = machine_autoscaler(json!({}));
    f.assert_upstream_shape(&object);
    let view = targets::machine_autoscaler_view(&dynamic(&object));
    assert_eq!(view.namespace, "openshift-machine-api");
    assert_eq!(view.name, "worker-us-east-1a");
    assert_eq!(view.labels.get("pool").map(String::as_str), Some("batch"));
    assert_eq!(view.resource_version.as_deref(), Some("731004"));
    assert_eq!((view.min_replicas, view.max_replicas), (Some(1), Some(12)));
    let target = view.target.clone().unwrap();
    assert_eq!(target.api_version, "machine.openshift.io/v1beta1");
    assert_eq!(view.machine_set(), Some("ci-ln-7x2k9-worker-us-east-1a"));
    assert_eq!(view.configured_min, None);

    // Outside windows: pin spec.minReplicas to the MachineSet's size (3), keep the minimum.
    let MachineDecision::Change(pin) =
        decide::decide_machine_autoscaler(ME, &Claim::Ours, false, &view, Some(3))
    else {
        panic!("no pin planned")
    };
    let pinned = merge(
        &object,
        &targets::patch_body(
            &Change::MachineAutoscaler {
                namespace: view.namespace.clone(),
                name: view.name.clone(),
                resource_version: view.resource_version.clone(),
                change: pin,
            },
            ME,
        ),
    );
    f.assert_upstream_shape(&pinned);
    let pinned_view = targets::machine_autoscaler_view(&dynamic(&pinned));
    assert_eq!(pinned_view.min_replicas, Some(3));
    assert_eq!(pinned_view.configured_min.as_deref(), Some("1"));
    assert_eq!(pinned_view.pinned_min.as_deref(), Some("3"));
    assert_eq!(pinned_view.disabled_by.as_deref(), Some(ME));
    let annotations = &pinned["metadata"]["annotations"];
    for key in [
        CONFIGURED_MIN_ANNOTATION,
        PINNED_MIN_ANNOTATION,
        DISABLED_BY_ANNOTATION,
    ] {
        assert!(annotations[key].is_string(), "{key}");
    }

    // Inside windows: restore the configured minimum and drop the marks.
    let MachineDecision::Change(release) =
        decide::decide_machine_autoscaler(ME, &Claim::Ours, true, &pinned_view, Some(3))
    else {
        panic!("no release planned")
    };
    let released = merge(
        &pinned,
        &targets::patch_body(
            &Change::MachineAutoscaler {
                namespace: pinned_view.namespace.clone(),
                name: pinned_view.name.clone(),
                resource_version: pinned_view.resource_version.clone(),
                change: release,
            },
            ME,
        ),
    );
    f.assert_upstream_shape(&released);
    assert_eq!(released["spec"], object["spec"]);
    assert_eq!(released["metadata"]["annotations"], json!({}));
}

#[test]
fn an_openshift_machine_set_reports_its_size() {
    let f = Fixture::load(MACHINE_SET);
    let object = machine_set(Some(3));
    f.assert_upstream_shape(&object);
    assert_eq!(targets::machine_set_replicas(&dynamic(&object)), Some(3));
    // Created without `spec.replicas`: the API server stores the default, 1.
    let stored = f.admit(&machine_set(None));
    assert_eq!(stored["spec"]["replicas"], 1);
    assert_eq!(targets::machine_set_replicas(&dynamic(&stored)), Some(1));
}

#[test]
fn an_openshift_machine_config_pool_mid_update_has_upstreams_shape() {
    let f = Fixture::load(MACHINE_CONFIG_POOL);
    let pool = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker", "labels": {
            "machineconfiguration.openshift.io/mco-built-in": "",
            "pools.operator.machineconfiguration.openshift.io/worker": ""}},
        "spec": {
            "configuration": {"name": "rendered-worker-5b0c1d2e3f", "source": [
                {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": "00-worker"},
                {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": "99-worker-ssh"}]},
            "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
            "maxUnavailable": "10%",
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
            "paused": false
        },
        "status": {
            "certExpirys": [{"bundle": "KubeAPIServerServingCAData", "subject": "CN=admin-kubeconfig-signer,OU=openshift",
                             "expiry": "2036-01-10T10:00:00Z"}],
            "conditions": [
                {"type": "RenderDegraded", "status": "False", "reason": "", "message": "", "lastTransitionTime": "2026-01-12T10:20:00Z"},
                {"type": "Updated", "status": "False", "reason": "", "message": "", "lastTransitionTime": "2026-05-05T01:02:03Z"},
                {"type": "Updating", "status": "True", "reason": "",
                 "message": "All nodes are updating to MachineConfig rendered-worker-5b0c1d2e3f",
                 "lastTransitionTime": "2026-05-05T01:02:03Z"},
                {"type": "NodeDegraded", "status": "False", "reason": "", "message": "", "lastTransitionTime": null},
                {"type": "Degraded", "status": "False", "reason": "", "message": "", "lastTransitionTime": "2026-01-12T10:20:00Z"}
            ],
            "configuration": {"name": "rendered-worker-0a1b2c3d4e"},
            "degradedMachineCount": 0, "machineCount": 6, "observedGeneration": 7,
            "readyMachineCount": 2, "unavailableMachineCount": 1, "updatedMachineCount": 2
        }
    });
    f.assert_upstream_shape(&pool);
    // Not metav1.Conditions: every field optional, a null time allowed, an atomic list.
    let conditions = &f.schema()["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "atomic");
    assert!(conditions["items"].get("required").is_none());
    // The pool synchronizer rules are live.
    let mut bad = pool.clone();
    bad["status"]["poolSynchronizersStatus"] = json!([{"poolSynchronizerType": "PinnedImageSets",
        "machineCount": 1, "availableMachineCount": 2, "readyMachineCount": 0,
        "unavailableMachineCount": 0, "updatedMachineCount": 0}]);
    assert!(f.validate(&bad).is_err());
}

fn cluster_version(progressing: &str) -> Value {
    let (message, partial) = if progressing == "True" {
        (
            "Working towards 4.16.9: 521 of 894 done (58% complete), waiting on machine-config",
            true,
        )
    } else {
        ("Cluster version is 4.16.9", false)
    };
    let mut history = vec![json!({
        "state": if partial { "Partial" } else { "Completed" },
        "startedTime": "2026-05-05T01:00:00Z",
        "completionTime": if partial { Value::Null } else { json!("2026-05-05T02:10:00Z") },
        "version": "4.16.9",
        "image": "quay.io/openshift-release-dev/ocp-release@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "verified": true,
        "acceptedRisks": "Precondition \"ClusterVersionUpgradeable\" failed because of \"AdminAckRequired\""
    })];
    history.push(json!({
        "state": "Completed", "startedTime": "2026-03-02T09:00:00Z", "completionTime": "2026-03-02T10:05:00Z",
        "version": "4.16.4", "verified": false,
        "image": "quay.io/openshift-release-dev/ocp-release@sha256:aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44"
    }));
    let capabilities = json!([
        "openshift-samples",
        "baremetal",
        "marketplace",
        "Console",
        "Insights",
        "Storage",
        "CSISnapshot",
        "NodeTuning",
        "MachineAPI",
        "Build",
        "DeploymentConfig",
        "ImageRegistry",
        "OperatorLifecycleManager",
        "CloudCredential",
        "Ingress",
        "CloudControllerManager"
    ]);
    let release = json!({"version": "4.16.9", "channels": ["eus-4.16", "fast-4.16", "stable-4.16"],
        "url": "https://access.redhat.com/errata/RHSA-2026:1234",
        "image": "quay.io/openshift-release-dev/ocp-release@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"});
    json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version", "generation": 4, "resourceVersion": "99120031"},
        "spec": {
            "channel": "stable-4.16",
            "clusterID": "6b5b7f8e-1c2d-4e3f-9a0b-1c2d3e4f5a6b",
            "desiredUpdate": {"version": "4.16.9", "force": false,
                              "image": "quay.io/openshift-release-dev/ocp-release@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
            "overrides": [{"kind": "Deployment", "group": "apps", "namespace": "openshift-monitoring",
                           "name": "cluster-monitoring-operator", "unmanaged": false}],
            "upstream": "https://api.openshift.com/api/upgrades_info/v1/graph"
        },
        "status": {
            "availableUpdates": null,
            "capabilities": {"enabledCapabilities": capabilities, "knownCapabilities": capabilities},
            "conditionalUpdates": [{
                "release": {"version": "4.16.10", "image": "quay.io/openshift-release-dev/ocp-release@sha256:bb",
                            "channels": ["stable-4.16"]},
                "risks": [{"name": "AzureRegistryImagePreservation", "message": "Image registry storage may be lost.",
                           "url": "https://issues.redhat.com/browse/IR-461",
                           "matchingRules": [{"type": "PromQL", "promql": {"promql": "group(cluster_infrastructure_provider{type=\"Azure\"})"}}]}],
                "conditions": [{"type": "Recommended", "status": "False", "reason": "AzureRegistryImagePreservation",
                                "message": "Image registry storage may be lost.", "lastTransitionTime": "2026-05-01T00:00:00Z"}]
            }],
            "conditions": [
                {"type": "RetrievedUpdates", "status": "True", "lastTransitionTime": "2026-01-12T10:30:00Z"},
                {"type": "Upgradeable", "status": "False", "reason": "AdminAckRequired",
                 "message": "Kubernetes 1.30 and therefore OpenShift 4.17 remove several APIs", "lastTransitionTime": "2026-04-01T00:00:00Z"},
                {"type": "ReleaseAccepted", "status": "True", "reason": "PayloadLoaded",
                 "message": "Payload loaded version=\"4.16.9\"", "lastTransitionTime": "2026-05-05T01:00:05Z"},
                {"type": "ImplicitlyEnabledCapabilities", "status": "False", "reason": "AsExpected",
                 "message": "Capabilities match configured spec", "lastTransitionTime": "2026-01-12T10:00:00Z"},
                {"type": "Available", "status": "True", "message": "Done applying 4.16.4", "lastTransitionTime": "2026-03-02T10:05:00Z"},
                {"type": "Failing", "status": "False", "lastTransitionTime": "2026-05-05T01:40:00Z"},
                {"type": "Progressing", "status": progressing, "message": message, "lastTransitionTime": "2026-05-05T01:00:05Z"}
            ],
            "desired": release,
            "history": history,
            "observedGeneration": 4,
            "versionHash": "x9uTQ8RmH2c="
        }
    })
}

#[test]
fn an_openshift_cluster_version_says_when_an_upgrade_runs() {
    let f = Fixture::load(CLUSTER_VERSION);
    let upgrading = cluster_version("True");
    f.assert_upstream_shape(&upgrading);
    assert!(targets::cluster_version_progressing(&dynamic(&upgrading)));
    let settled = cluster_version("False");
    f.assert_upstream_shape(&settled);
    assert!(!targets::cluster_version_progressing(&dynamic(&settled)));
    // Each condition requires type, status and lastTransitionTime.
    let mut no_time = settled.clone();
    no_time["status"]["conditions"][6]
        .as_object_mut()
        .unwrap()
        .remove("lastTransitionTime");
    assert!(f.validate(&no_time).is_err());
}

// ---------------------------------------------------------------------------------------------
// Karpenter, through scaledown-window's view

fn node_pool(budgets: Option<Value>) -> Value {
    let mut disruption =
        json!({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"});
    if let Some(budgets) = budgets {
        disruption["budgets"] = budgets;
    }
    json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "general-purpose", "resourceVersion": "4411902", "generation": 6,
                     "labels": {"team": "platform", "tier": "general"},
                     "annotations": {"karpenter.sh/nodepool-hash": "6821555240594823858",
                                     "karpenter.sh/nodepool-hash-version": "v3"}},
        "spec": {
            "disruption": disruption,
            "limits": {"cpu": "1000", "memory": "1000Gi", "nvidia.com/gpu": 4},
            "template": {
                "metadata": {"labels": {"billing-team": "platform"}, "annotations": {"example.com/owner": "platform"}},
                "spec": {
                    "expireAfter": "720h",
                    "terminationGracePeriod": "48h",
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "minValues": 2,
                         "values": ["m6i.xlarge", "m6i.2xlarge", "m7i.xlarge"]}
                    ],
                    "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}],
                    "taints": [{"key": "example.com/special-taint", "effect": "NoSchedule"}]
                }
            },
            "weight": 10
        },
        "status": {
            "conditions": [
                {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded", "message": "",
                 "lastTransitionTime": "2026-02-01T00:00:00Z", "observedGeneration": 6},
                {"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady", "message": "",
                 "lastTransitionTime": "2026-02-01T00:00:00Z", "observedGeneration": 6},
                {"type": "NodeRegistrationHealthy", "status": "True", "reason": "NodeRegistrationHealthy", "message": "",
                 "lastTransitionTime": "2026-02-01T00:05:00Z", "observedGeneration": 6},
                {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                 "lastTransitionTime": "2026-02-01T00:05:00Z", "observedGeneration": 6}
            ],
            "nodeClassObservedGeneration": 1,
            "nodes": 6,
            "resources": {"cpu": "24", "ephemeral-storage": "120Gi", "memory": "96Gi", "nodes": "6", "pods": "330"}
        }
    })
}

fn user_budgets() -> Value {
    json!([
        {"nodes": "10%"},
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted", "Underutilized"]},
        {"nodes": "5", "reasons": ["Empty"]}
    ])
}

fn node_pool_change(pool: &Value, desired_enabled: bool) -> Option<Value> {
    let view = targets::node_pool_view(&dynamic(pool));
    let change = decide::decide_node_pool(ME, &Claim::Ours, desired_enabled, &view, &[])?;
    Some(targets::patch_body(
        &Change::NodePool {
            name: view.name,
            resource_version: view.resource_version,
            change,
        },
        ME,
    ))
}

#[test]
fn a_karpenter_node_pool_reads_and_takes_ebbs_budget_and_its_removal() {
    let f = Fixture::load(NODE_POOL);
    let object = node_pool(Some(user_budgets()));
    f.assert_upstream_shape(&object);
    let view = targets::node_pool_view(&dynamic(&object));
    assert_eq!(view.name, "general-purpose");
    assert_eq!(
        view.labels.get("team").map(String::as_str),
        Some("platform")
    );
    assert_eq!(view.resource_version.as_deref(), Some("4411902"));
    assert_eq!(
        view.budgets,
        Some(user_budgets().as_array().unwrap().clone())
    );
    assert_eq!(view.disabled_by, None);

    // Outside windows: ebb's `nodes: "0"` budget is appended, the user's stay as they are.
    let closed = merge(&object, &node_pool_change(&object, false).unwrap());
    f.assert_upstream_shape(&closed);
    let closed_view = targets::node_pool_view(&dynamic(&closed));
    let budgets = closed_view.budgets.clone().unwrap();
    assert_eq!(budgets.len(), 4);
    assert_eq!(budgets[..3], user_budgets().as_array().unwrap()[..]);
    assert!(decide::is_ebb_budget(&budgets[3]));
    assert_eq!(closed_view.disabled_by.as_deref(), Some(ME));
    assert_eq!(node_pool_change(&closed, false), None, "already closed");

    // Inside windows: exactly ebb's budget goes again.
    let open = merge(&closed, &node_pool_change(&closed, true).unwrap());
    f.assert_upstream_shape(&open);
    assert_eq!(open["spec"], object["spec"]);
    assert_eq!(targets::node_pool_view(&dynamic(&open)).disabled_by, None);
}

#[test]
fn a_node_pool_without_budgets_gets_karpenters_default_and_then_ebbs() {
    let f = Fixture::load(NODE_POOL);
    // Created without `budgets` (or without `disruption` at all): the API server fills them in.
    let mut no_disruption = node_pool(None);
    no_disruption["spec"]
        .as_object_mut()
        .unwrap()
        .remove("disruption");
    for created in [node_pool(None), no_disruption] {
        let stored = f.admit(&created);
        f.assert_upstream_shape(&stored);
        let view = targets::node_pool_view(&dynamic(&stored));
        assert_eq!(view.budgets, Some(vec![json!({"nodes": "10%"})]));
        let closed = merge(&stored, &node_pool_change(&stored, false).unwrap());
        f.assert_upstream_shape(&closed);
        assert_eq!(
            closed["spec"]["disruption"]["budgets"],
            json!([{"nodes": "10%"}, {"nodes": "0"}])
        );
    }
}

#[test]
fn node_pool_budget_rules_are_enforced() {
    let f = Fixture::load(NODE_POOL);
    let with = |budgets: Value| node_pool(Some(budgets));
    for (budgets, why) in [
        (
            json!([{"nodes": "0", "schedule": "0 9 * * *"}]),
            "schedule without duration",
        ),
        (
            json!([{"nodes": "0", "duration": "8h"}]),
            "duration without schedule",
        ),
        (json!([{"nodes": "zero"}]), "nodes pattern"),
        (json!([{"nodes": "101%"}]), "nodes over 100%"),
        (
            json!([{"nodes": "1", "reasons": ["Expired"]}]),
            "reasons enum",
        ),
        (
            json!([{"nodes": "1", "schedule": "0 9 * * *", "duration": "30s"}]),
            "duration pattern",
        ),
        (
            json!([{"schedule": "0 9 * * *", "duration": "1h"}]),
            "nodes required (defaulted)",
        ),
    ] {
        let result = f.validate(&with(budgets.clone()));
        if why == "nodes required (defaulted)" {
            // `nodes` defaults to 10%, so a budget without it is accepted as "10%".
            result.unwrap();
            assert_eq!(
                f.admit(&with(budgets))["spec"]["disruption"]["budgets"][0]["nodes"],
                "10%"
            );
        } else {
            assert!(result.is_err(), "{why}: {budgets} accepted");
        }
    }
    // 50 budgets is the most a NodePool holds: ebb's write onto a full list is refused.
    let full = with(Value::Array(vec![json!({"nodes": "10%"}); 50]));
    f.assert_upstream_shape(&full);
    let overfull = merge(&full, &node_pool_change(&full, false).unwrap());
    let err = f.validate(&overfull).unwrap_err();
    assert!(err.contains("budgets"), "{err}");
}
