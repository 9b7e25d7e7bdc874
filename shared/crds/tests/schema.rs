//! The generated CRDs are what the API server accepts: structural, CEL rules bounded and correct,
//! examples valid, and `crds/` up to date with the types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// ebb's own CRDs and the test-only schemas of its Babylon/Poolboy views: what examples and
/// objects are validated against.
fn crd_schemas() -> Vec<(String, String, Value)> {
    ebb_crds::all_crds()
        .into_iter()
        .chain(ebb_crds::third_party_views())
        .map(|crd| {
            let group = crd.spec.group.clone();
            let kind = crd.spec.names.kind.clone();
            let version = &crd.spec.versions[0];
            let schema = serde_json::to_value(
                version
                    .schema
                    .as_ref()
                    .unwrap()
                    .open_api_v3_schema
                    .as_ref()
                    .unwrap(),
            )
            .unwrap();
            (format!("{group}/{}", version.name), kind, schema)
        })
        .collect()
}

fn schema_of(kind: &str) -> Value {
    crd_schemas()
        .into_iter()
        .find(|(_, k, _)| k == kind)
        .map(|(_, _, s)| s)
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Structural schemas (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/
// custom-resource-definitions/#specifying-a-structural-schema).

fn structural_violations(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(node) = schema.as_object() else {
        out.push(format!("{path}: not an object"));
        return;
    };
    let escape = node.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
        || node.get("x-kubernetes-int-or-string") == Some(&json!(true));
    match node.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => {}
        _ if escape => {}
        _ => out.push(format!("{path}: no type")),
    }
    if node.contains_key("$ref") {
        out.push(format!("{path}: $ref is not allowed"));
    }
    if node.contains_key("properties") && node.contains_key("additionalProperties") {
        out.push(format!(
            "{path}: properties and additionalProperties together"
        ));
    }
    for junctor in ["allOf", "anyOf", "oneOf", "not"] {
        if let Some(j) = node.get(junctor) {
            let branches: Vec<&Value> = match j {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for (i, b) in branches.into_iter().enumerate() {
                junctor_violations(b, node, &format!("{path}.{junctor}[{i}]"), out);
            }
        }
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            structural_violations(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        structural_violations(items, &format!("{path}[]"), out);
    }
    if let Some(extra) = node.get("additionalProperties").filter(|v| v.is_object()) {
        structural_violations(extra, &format!("{path}{{}}"), out);
    }
    if node.get("x-kubernetes-list-type") == Some(&json!("map")) {
        let items = node.get("items").cloned().unwrap_or_default();
        let required: Vec<&str> = items["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for key in node["x-kubernetes-list-map-keys"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let key = key.as_str().unwrap_or_default();
            if !required.contains(&key) && items["properties"][key].get("default").is_none() {
                out.push(format!(
                    "{path}: list-map key {key} is neither required nor defaulted"
                ));
            }
        }
    }
}

/// Inside a logical junctor: no type/description/default/additionalProperties/nullable, and
/// every field named must also be specified outside the junctor.
fn junctor_violations(
    branch: &Value,
    outer: &serde_json::Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let Some(b) = branch.as_object() else { return };
    for banned in [
        "type",
        "description",
        "default",
        "additionalProperties",
        "nullable",
    ] {
        if b.contains_key(banned) {
            out.push(format!("{path}: `{banned}` inside a logical junctor"));
        }
    }
    if let Some(props) = b.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            if outer.get("properties").and_then(|p| p.get(name)).is_none() {
                out.push(format!("{path}.{name}: not specified outside the junctor"));
            }
        }
    }
}

#[test]
fn every_crd_schema_is_structural() {
    let mut violations = Vec::new();
    for (api, kind, schema) in crd_schemas() {
        structural_violations(&schema, &format!("{api} {kind}"), &mut violations);
    }
    assert!(
        violations.is_empty(),
        "non-structural schemas:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_structural_check_catches_what_kubernetes_rejects() {
    let mut v = Vec::new();
    structural_violations(
        &json!({"type": "object", "properties": {"a": {}}}),
        "t",
        &mut v,
    );
    structural_violations(
        &json!({"type": "object", "anyOf": [{"type": "string"}], "properties": {}}),
        "t",
        &mut v,
    );
    structural_violations(
        &json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
        "t",
        &mut v,
    );
    assert_eq!(v.len(), 4, "{v:?}");
}

#[test]
fn no_unsigned_formats_reach_the_api_server() {
    for (_, kind, schema) in crd_schemas() {
        let text = schema.to_string();
        assert!(
            !text.contains("\"format\":\"uint"),
            "{kind} has an unsigned format"
        );
    }
}

/// Every string a CEL rule reads is length-bounded and every list item-bounded, or the API server
/// rejects the rule as too expensive.
#[test]
fn cel_rules_only_touch_bounded_fields() {
    fn walk(node: &Value, path: &str, out: &mut Vec<String>) {
        let Some(obj) = node.as_object() else { return };
        if let (Some(rules), Some(props)) =
            (obj.get("x-kubernetes-validations"), obj.get("properties"))
        {
            let text: String = rules
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["rule"].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            for (name, prop) in props.as_object().into_iter().flatten() {
                if !text.contains(&format!("self.{name}")) {
                    continue;
                }
                let unbounded = match prop["type"].as_str() {
                    Some("string") => prop.get("maxLength").is_none() && prop.get("enum").is_none(),
                    Some("array") => prop.get("maxItems").is_none(),
                    _ => false,
                };
                if unbounded {
                    out.push(format!("{path}.{name}"));
                }
            }
        }
        for (name, child) in obj
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            walk(child, &format!("{path}.{name}"), out);
        }
        if let Some(items) = obj.get("items") {
            walk(items, &format!("{path}[]"), out);
        }
    }
    let mut out = Vec::new();
    for (_, kind, schema) in crd_schemas() {
        walk(&schema, &kind, &mut out);
    }
    assert!(out.is_empty(), "CEL reads unbounded fields: {out:?}");
}

// ---------------------------------------------------------------------------------------------
// Validation: OpenAPI (JSON Schema draft 4 keywords) and CEL, as the API server applies them.

fn validate(kind: &str, object: &Value) -> Result<(), String> {
    let schema = schema_of(kind);
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .map_err(|e| format!("schema does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(object)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    kube_cel::Validator::new()
        .validate(&schema, object, None)
        .map_err(|e| e.to_string())
}

/// The YAML files under `examples/`, subfolders included (an example set such as
/// `coder-provisioners/`), as (path below `examples/`, text). Not `scenarios/`: the simulator's
/// scenarios, which ebb-sim's own tests read.
fn example_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        for path in paths {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if rel != "scenarios" {
                    walk(&path, root, out);
                }
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = repo_root().join("examples");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out
}

/// A Helm chart's values beside the manifests of an example set: `<chart>.values.yaml`.
fn is_helm_values(file: &str) -> bool {
    file.ends_with(".values.yaml")
}

/// Every manifest of the examples, as (path below `examples/`, object).
fn examples() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (file, text) in example_files() {
        if is_helm_values(&file) {
            continue;
        }
        for value in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            if !value.is_null() {
                out.push((file.clone(), value));
            }
        }
    }
    out
}

/// The folder of an example file below `examples/` (`""` for the top level): an example set.
fn folder_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The first place where `b` differs from `a`, as a path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys()
                .chain(y.keys())
                .find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => first_difference(u, v, &format!("{path}.{k}")),
                    _ => Some(format!("{path}.{k}")),
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(path.to_owned()),
    }
}

/// `object` read as a `T` and written back is `object` again: every field is one Kubernetes'
/// type knows, with the type it has there. (k8s-openapi's types skip unknown fields when they
/// read, so a misspelt field would pass a plain read; the API server would drop it, or refuse
/// the object with strict field validation.)
fn round_trips<T>(object: &Value) -> Result<(), String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let typed: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    match first_difference(object, &back, "") {
        None => Ok(()),
        Some(at) => Err(format!("{at}: not a field of the type, or not of its type")),
    }
}

/// Kinds the examples hold that are neither ebb's nor a fixture's, each with its check:
/// Kubernetes' own against k8s-openapi's types; the Prometheus Operator's PrometheusRule (no
/// schema of it here) its envelope, while its rules are promtool's: `make rules-test` checks
/// and unit-tests every example PrometheusRule from the example file (e2e/rules/run), and fails
/// on one without tests. `None`: a kind nothing here can check.
fn check_other_kind(api: &str, kind: &str, object: &Value) -> Option<Result<(), String>> {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    match (api, kind) {
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            Some(round_trips::<HorizontalPodAutoscaler>(object))
        }
        ("monitoring.coreos.com/v1", "PrometheusRule") => Some((|| {
            let mut keys: Vec<&str> = object
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().map(String::as_str))
                .collect();
            keys.sort_unstable();
            if keys != ["apiVersion", "kind", "metadata", "spec"] {
                return Err(format!(
                    "fields {keys:?}: expected apiVersion, kind, metadata, spec"
                ));
            }
            round_trips::<ObjectMeta>(&object["metadata"]).map_err(|e| format!("metadata: {e}"))?;
            let spec = object["spec"].as_object().ok_or("spec: not an object")?;
            if spec.keys().ne(["groups"].iter()) || !spec["groups"].is_array() {
                return Err("spec: a rule file holds a list of groups and nothing else".into());
            }
            Ok(())
        })()),
        _ => None,
    }
}

#[test]
fn every_example_is_valid_against_its_crd() {
    let schemas = crd_schemas();
    let examples = examples();
    let mut kinds_seen = std::collections::BTreeSet::new();
    for (file, example) in &examples {
        let api = example["apiVersion"].as_str().unwrap();
        let kind = example["kind"].as_str().unwrap();
        if let Some(checked) = check_other_kind(api, kind, example) {
            checked.unwrap_or_else(|e| panic!("{file}: {api} {kind}: {e}"));
            continue;
        }
        assert!(
            schemas.iter().any(|(a, k, _)| a == api && k == kind),
            "{file}: no CRD for {api} {kind}"
        );
        validate(kind, example).unwrap_or_else(|e| panic!("{file}: {e}"));
        kinds_seen.insert(kind.to_string());
    }
    for (_, kind, _) in &schemas {
        assert!(kinds_seen.contains(kind), "no example for {kind}");
    }
}

/// The objects README.md shows (its ```yaml blocks), each valid against its CRD (schema and CEL
/// rules, as the API server checks them): what a newcomer copies first must apply as it is.
#[test]
fn every_object_the_readme_shows_is_valid_against_its_crd() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(block, _)| block))
        .collect();
    let mut kinds = std::collections::BTreeSet::new();
    for block in &blocks {
        let object: Value =
            serde_saphyr::from_str(block).unwrap_or_else(|e| panic!("{block}\n{e}"));
        let kind = object["kind"].as_str().unwrap().to_owned();
        validate(&kind, &object).unwrap_or_else(|e| panic!("README's {kind}: {e}"));
        kinds.insert(kind);
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "ScaleDownSchedule",
            "ServiceScaler",
            "StackableScaler",
            "WorkshopScalingPolicy"
        ],
        "one object per controller"
    );
}

#[test]
fn the_checks_of_other_kinds_catch_what_the_api_server_would_not_take() {
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "p", "namespace": "n"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "p"},
                 "maxReplicas": 3,
                 "metrics": [{"type": "External", "external": {"metric": {"name": "q"},
                     "target": {"type": "AverageValue", "averageValue": "1"}}}]}});
    check_other_kind("autoscaling/v2", "HorizontalPodAutoscaler", &hpa)
        .unwrap()
        .unwrap();
    let mut misspelt = hpa.clone();
    misspelt["spec"]["metrics"][0]["external"]["metric"]["selecter"] = json!({});
    let mut mistyped = hpa.clone();
    mistyped["spec"]["maxReplicas"] = json!("3");
    for bad in [misspelt, mistyped] {
        let err = check_other_kind("autoscaling/v2", "HorizontalPodAutoscaler", &bad).unwrap();
        assert!(err.is_err(), "{bad} accepted");
    }
    let rule = json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "r", "namespace": "n", "labels": {"release": "x"}},
        "spec": {"groups": [{"name": "g", "rules": []}]}});
    check_other_kind("monitoring.coreos.com/v1", "PrometheusRule", &rule)
        .unwrap()
        .unwrap();
    let mut extra = rule.clone();
    extra["spec"]["rules"] = json!([]);
    let mut meta = rule.clone();
    meta["metadata"]["label"] = json!({});
    for bad in [extra, meta] {
        let err = check_other_kind("monitoring.coreos.com/v1", "PrometheusRule", &bad).unwrap();
        assert!(err.is_err(), "{bad} accepted");
    }
    assert!(check_other_kind("v1", "ConfigMap", &json!({})).is_none());
}

#[test]
fn every_example_deserializes_into_its_rust_type() {
    use ebb_crds::{
        babylon, calendar, fleet, poolboy, scaledown, service_scaler, stackable, workshop_policy,
    };
    for (file, example) in examples() {
        let kind = example["kind"].as_str().unwrap().to_string();
        let result = match kind.as_str() {
            "ServiceScaler" => {
                serde_json::from_value::<service_scaler::ServiceScaler>(example).map(drop)
            }
            "ScaleDownSchedule" => {
                serde_json::from_value::<scaledown::ScaleDownSchedule>(example).map(drop)
            }
            "StackableScaler" => {
                serde_json::from_value::<stackable::StackableScaler>(example).map(drop)
            }
            "FleetSchedule" => serde_json::from_value::<fleet::FleetSchedule>(example).map(drop),
            "HolidayCalendar" => {
                serde_json::from_value::<calendar::HolidayCalendar>(example).map(drop)
            }
            "Workshop" => serde_json::from_value::<babylon::Workshop>(example).map(drop),
            "WorkshopProvision" => {
                serde_json::from_value::<babylon::WorkshopProvision>(example).map(drop)
            }
            "WorkshopUserAssignment" => {
                serde_json::from_value::<babylon::WorkshopUserAssignment>(example).map(drop)
            }
            "ResourceClaim" => serde_json::from_value::<poolboy::ResourceClaim>(example).map(drop),
            "WorkshopScalingPolicy" => {
                serde_json::from_value::<workshop_policy::WorkshopScalingPolicy>(example).map(drop)
            }
            "HorizontalPodAutoscaler" => serde_json::from_value::<
                k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
            >(example)
            .map(drop),
            // No Rust type: its envelope is checked above, its rules by promtool.
            "PrometheusRule" => continue,
            other => panic!("{file}: unknown kind {other}"),
        };
        result.unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Example sets: a folder of examples/ whose files work together (examples/coder-provisioners/).

/// prometheus-adapter's rule for a metric (kubernetes-sigs/prometheus-adapter,
/// `pkg/config/config.go` `DiscoveryRule`, and `namespaced` from docs/externalmetrics.md), as the
/// prometheus-adapter chart takes it under `rules.external`: any other field is one the adapter
/// does not have.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // read to check the fields' names and types
struct AdapterRule {
    series_query: String,
    #[serde(default)]
    series_filters: Vec<AdapterRegexFilter>,
    #[serde(default)]
    resources: AdapterResources,
    name: AdapterName,
    metrics_query: String,
    #[serde(default)]
    label_value_replacements: Vec<AdapterReplacement>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct AdapterRegexFilter {
    is: Option<String>,
    is_not: Option<String>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AdapterResources {
    template: Option<String>,
    #[serde(default)]
    overrides: std::collections::BTreeMap<String, AdapterGroupResource>,
    namespaced: Option<bool>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AdapterGroupResource {
    group: Option<String>,
    resource: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AdapterName {
    #[serde(default)]
    matches: String,
    #[serde(rename = "as")]
    as_name: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AdapterReplacement {
    find: Option<String>,
    replace: Option<String>,
}

/// The example sets' values for the prometheus-adapter chart: only `rules.external`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AdapterValues {
    rules: AdapterValuesRules,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AdapterValuesRules {
    external: Vec<AdapterRule>,
}

/// The external rules of each folder's `prometheus-adapter.values.yaml`, by folder.
fn adapter_rules() -> std::collections::BTreeMap<String, Vec<AdapterRule>> {
    let mut out = std::collections::BTreeMap::new();
    for (file, text) in example_files()
        .into_iter()
        .filter(|(f, _)| is_helm_values(f))
    {
        let chart = file
            .rsplit('/')
            .next()
            .unwrap()
            .trim_end_matches(".values.yaml");
        assert_eq!(
            chart, "prometheus-adapter",
            "{file}: no check for the values of {chart}"
        );
        let values: AdapterValues =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            !values.rules.external.is_empty(),
            "{file}: no external rule"
        );
        out.insert(folder_of(&file).to_owned(), values.rules.external);
    }
    out
}

/// An example set's files agree: each HPA's External metric is one its folder's
/// prometheus-adapter rules serve, from a series its folder's PrometheusRule records; a
/// ServiceScaler of an HPA in the folder has the HPA's target and, as its defaults, the HPA's
/// bounds and CPU target (adopting the HPA changes nothing on a normal day).
#[test]
fn example_sets_agree_with_themselves() {
    let examples = examples();
    let adapter = adapter_rules();
    let of_kind = |folder: &str, kind: &str| -> Vec<&Value> {
        examples
            .iter()
            .filter(|(f, v)| folder_of(f) == folder && v["kind"] == kind)
            .map(|(_, v)| v)
            .collect()
    };
    let mut externals = 0;
    for (file, hpa) in examples
        .iter()
        .filter(|(_, v)| v["kind"] == "HorizontalPodAutoscaler")
    {
        let folder = folder_of(file);
        let records: Vec<&str> = of_kind(folder, "PrometheusRule")
            .into_iter()
            .flat_map(|r| r["spec"]["groups"].as_array().unwrap())
            .flat_map(|g| g["rules"].as_array().unwrap())
            .filter_map(|r| r["record"].as_str())
            .collect();
        for metric in hpa["spec"]["metrics"].as_array().into_iter().flatten() {
            if metric["type"] != "External" {
                continue;
            }
            externals += 1;
            let name = metric["external"]["metric"]["name"].as_str().unwrap();
            let rule = adapter
                .get(folder)
                .into_iter()
                .flatten()
                .find(|r| r.name.as_name == name)
                .unwrap_or_else(|| panic!("{file}: no prometheus-adapter rule serves {name}"));
            let series = rule.series_query.split('{').next().unwrap().trim();
            assert!(
                records.contains(&series),
                "{file}: {name} reads {series}, which no PrometheusRule of {folder}/ records"
            );
            let pattern = format!("^{}$", regex_escape(series));
            assert!(
                rule.name.matches.is_empty() || rule.name.matches == pattern,
                "{file}: the rule for {name} matches {:?}, not {pattern:?}",
                rule.name.matches
            );
        }
        for scaler in of_kind(folder, "ServiceScaler") {
            if scaler["metadata"]["name"] != hpa["metadata"]["name"]
                || scaler["metadata"]["namespace"] != hpa["metadata"]["namespace"]
            {
                continue;
            }
            let (defaults, spec) = (&scaler["spec"]["hpa"], &hpa["spec"]);
            assert_eq!(
                scaler["spec"]["scaleTargetRef"], spec["scaleTargetRef"],
                "{file}"
            );
            assert_eq!(defaults["minReplicas"], spec["minReplicas"], "{file}");
            assert_eq!(defaults["maxReplicas"], spec["maxReplicas"], "{file}");
            let cpu = spec["metrics"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|m| m["type"] == "Resource" && m["resource"]["name"] == "cpu")
                .map_or(Value::Null, |m| {
                    m["resource"]["target"]["averageUtilization"].clone()
                });
            assert_eq!(defaults["targetCPUUtilization"], cpu, "{file}: CPU target");
        }
    }
    assert!(externals > 0, "no example HPA reads an External metric");
}

/// The regular expression that matches `text` and nothing else (metric names: letters, digits,
/// `_` and `:`, none of them special).
fn regex_escape(text: &str) -> String {
    assert!(
        text.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "{text}: not a metric name"
    );
    text.to_owned()
}

fn service_scaler(ranges: Value) -> Value {
    json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {"hpa": {"minReplicas": 2, "maxReplicas": 5}, "timeRangeSpec": ranges}
    })
}

#[test]
fn service_scaler_schema_rejects_what_the_contract_forbids() {
    let cases = [
        (
            json!([{"kind": "ZonedTime", "to": "08:00+05:30"}]),
            "from and to must be given together",
        ),
        (
            json!([{"kind": "ZonedTime", "from": "8am", "to": "09:00Z"}]),
            "HH:MM followed by an offset",
        ),
        (
            json!([{"kind": "LocalTime", "from": "25:00", "to": "06:00"}]),
            "LocalTime from/to must be HH:MM",
        ),
        (
            json!([{"kind": "ZonedDateTime", "from": "tomorrow", "to": "2026-01-01T00:00:00Z"}]),
            "RFC 3339",
        ),
        (
            json!([{"kind": "Cron", "schedule": "0 8 * * *"}]),
            "kind Cron needs schedule and duration",
        ),
        (
            json!([{"kind": "Cron", "schedule": "0 8 * * *", "duration": "ten minutes"}]),
            "does not match",
        ),
        (
            json!([{"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z", "timeZone": "UTC"}]),
            "timeZone belongs",
        ),
        (
            json!([{"kind": "Weekly", "from": "08:00Z", "to": "09:00Z"}]),
            "is not one of",
        ),
        (
            json!([{"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z", "replicaSpec": {"hpa": {"minReplicas": 5, "maxReplicas": 2}}}]),
            "minReplicas must not exceed maxReplicas",
        ),
        (
            json!([{"kind": "ZonedTime", "from": "08:00Z", "to": "09:00Z", "replicaSpec": {"hpa": {"minReplicas": -1}}}]),
            "minimum",
        ),
    ];
    for (ranges, expected) in cases {
        let err = validate("ServiceScaler", &service_scaler(ranges.clone()))
            .expect_err(&ranges.to_string());
        assert!(
            err.contains(expected),
            "{ranges}: expected {expected:?} in {err:?}"
        );
    }
    let mut bad_defaults = service_scaler(json!([]));
    bad_defaults["spec"]["hpa"] = json!({"minReplicas": 6, "maxReplicas": 5});
    assert!(
        validate("ServiceScaler", &bad_defaults)
            .unwrap_err()
            .contains("hpa.minReplicas must not exceed")
    );

    let fixed = service_scaler(
        json!([{"kind": "LocalTime", "from": "22:00", "to": "06:00", "timeZone": "Europe/Zurich",
        "replicaSpec": {"hpa": {"minReplicas": 3, "maxReplicas": 3}}}]),
    );
    validate("ServiceScaler", &fixed).unwrap();
}

#[test]
fn scaledown_schedule_needs_exactly_one_target() {
    let schedule = |target: Value| {
        json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule", "metadata": {"name": "x"},
               "spec": {"target": target, "windows": [{"schedule": "0 20 * * 1-5", "duration": "11h"}]}})
    };
    validate(
        "ScaleDownSchedule",
        &schedule(json!({"clusterAutoscaler": {}})),
    )
    .unwrap();
    for target in [
        json!({}),
        json!({"clusterAutoscaler": {}, "nodeAnnotation": {}}),
    ] {
        let err = validate("ScaleDownSchedule", &schedule(target)).unwrap_err();
        assert!(err.contains("exactly one of"), "{err}");
    }
}

/// A StackableScaler whose `preScale` hook has `pod_spec` as its pod spec (`None`: no pod spec).
fn stackable_scaler_with_hook(pod_spec: Option<Value>) -> Value {
    let mut template = json!({"spec": {"template": {}}});
    if let Some(pod_spec) = pod_spec {
        template["spec"]["template"]["spec"] = pod_spec;
    }
    json!({"apiVersion": "autoscaling.stackable.tech/v1alpha1", "kind": "StackableScaler",
           "metadata": {"name": "nifi"},
           "spec": {"replicas": 3, "hooks": {"preScale": {"template": template}}}})
}

#[test]
fn stackable_scaler_hooks_need_a_pod_spec_jobs_accept() {
    let container = json!([{"name": "drain", "image": "busybox"}]);
    for ok in [
        json!({"containers": container}),
        json!({"containers": container, "restartPolicy": "OnFailure"}),
        json!({"containers": container, "restartPolicy": "Never"}),
    ] {
        validate("StackableScaler", &stackable_scaler_with_hook(Some(ok))).unwrap();
    }
    for (bad, says) in [
        (None, "template.spec.template.spec is required"),
        (Some(json!({})), "needs at least one container"),
        (
            Some(json!({"containers": []})),
            "needs at least one container",
        ),
        (
            Some(json!({"containers": container, "restartPolicy": "Always"})),
            "restartPolicy must be Never or OnFailure",
        ),
    ] {
        let err =
            validate("StackableScaler", &stackable_scaler_with_hook(bad.clone())).unwrap_err();
        assert!(err.contains(says), "{bad:?}: {err}");
    }
    // Everything else in the template is kept as written.
    let full =
        json!({"containers": container, "nodeSelector": {"a": "b"}, "serviceAccountName": "x"});
    validate("StackableScaler", &stackable_scaler_with_hook(Some(full))).unwrap();
}

#[test]
fn autoscaling_bounds_are_enforced_by_the_schema() {
    let provision = |auto: Value| {
        json!({"apiVersion": "babylon.gpte.redhat.com/v1", "kind": "WorkshopProvision",
               "metadata": {"name": "p", "namespace": "n"},
               "spec": {"catalogItem": {"name": "c", "namespace": "n"}, "count": 1, "workshopName": "w", "autoScaling": auto}})
    };
    validate(
        "WorkshopProvision",
        &provision(json!({"threshold": 1.0, "scaleFactor": 1.01, "maxProvisions": 1})),
    )
    .unwrap();
    for bad in [
        json!({"threshold": 0.0}),
        json!({"threshold": 1.2}),
        json!({"scaleFactor": 1.0}),
        json!({"scaleFactor": 0.5}),
        json!({"maxProvisions": 0}),
    ] {
        assert!(
            validate("WorkshopProvision", &provision(bad.clone())).is_err(),
            "{bad} accepted"
        );
    }
}

#[test]
fn workshop_scaling_policy_validates_like_auto_scaling() {
    let policy = |spec: Value| {
        json!({"apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "WorkshopScalingPolicy",
               "metadata": {"name": "p", "namespace": "n"}, "spec": spec})
    };
    validate(
        "WorkshopScalingPolicy",
        &policy(
            json!({"autoScaling": {"enabled": true, "threshold": 1.0, "scaleFactor": 1.01,
                                        "maxProvisions": 1, "activeTimeout": "1h30m"}}),
        ),
    )
    .unwrap();
    validate(
        "WorkshopScalingPolicy",
        &policy(json!({"workshopSelector": {"matchLabels": {"team": "ops"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]},
            "autoScaling": {}})),
    )
    .unwrap();
    for bad in [
        json!({}),
        json!({"autoScaling": {"threshold": 0.0}}),
        json!({"autoScaling": {"threshold": 1.2}}),
        json!({"autoScaling": {"scaleFactor": 1.0}}),
        json!({"autoScaling": {"maxProvisions": 0}}),
        json!({"autoScaling": {"activeTimeout": "soon"}}),
        json!({"autoScaling": {}, "workshopSelector": {"matchLabels": "team=ops"}}),
    ] {
        assert!(
            validate("WorkshopScalingPolicy", &policy(bad.clone())).is_err(),
            "{bad} accepted"
        );
    }
}

/// `crds/` holds ebb's own CRDs and nothing else: never Babylon's or Poolboy's, whose thinner
/// copies would prune users' fields if a GitOps tool applied the folder.
#[test]
fn crds_holds_only_ebbs_own_kinds() {
    let mut expected: Vec<String> = ebb_crds::all_crds()
        .iter()
        .map(ebb_crds::crd_file_name)
        .collect();
    expected.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(repo_root().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, expected);
    for crd in ebb_crds::all_crds() {
        assert!(
            !crd.spec.group.ends_with(".gpte.redhat.com"),
            "{} is Babylon's or Poolboy's to install",
            crd.spec.group
        );
    }
}

#[test]
fn stackable_scaler_has_scale_and_status_subresources() {
    let crd = ebb_crds::all_crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "StackableScaler")
        .unwrap();
    let sub = crd.spec.versions[0].subresources.as_ref().unwrap();
    assert!(sub.status.is_some());
    let scale = sub.scale.as_ref().unwrap();
    assert_eq!(scale.spec_replicas_path, ".spec.replicas");
    assert_eq!(scale.status_replicas_path, ".status.replicas");
    assert_eq!(
        scale.label_selector_path.as_deref(),
        Some(".status.selector")
    );
}

#[test]
fn every_crd_has_a_status_subresource_and_printer_columns() {
    for crd in ebb_crds::all_crds() {
        let v = &crd.spec.versions[0];
        let kind = &crd.spec.names.kind;
        if kind == "HolidayCalendar" {
            // Data that windows read, like a ConfigMap: nothing writes its status, nothing
            // pauses it.
            assert!(v.subresources.is_none(), "{kind}: a status nobody writes");
            continue;
        }
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{kind}: no status subresource"
        );
        assert!(
            v.additional_printer_columns
                .as_ref()
                .is_some_and(|c| !c.is_empty()),
            "{kind}: no printer columns"
        );
        // In KEDA's manner: the object's own state first, then Ready and Paused from its
        // conditions, Age last.
        let names: Vec<&str> = v
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names.last(), Some(&"Age"), "{kind}: {names:?}");
        if kind != "WorkshopScalingPolicy" {
            assert_eq!(
                names[names.len() - 3..names.len() - 1],
                ["Ready", "Paused"],
                "{kind}: {names:?}"
            );
        }
    }
}

/// `kubectl explain <kind>` prints the root description: written for people, not kube's
/// "Auto-generated derived type" placeholder.
#[test]
fn every_crd_root_is_described_by_hand() {
    for crd in ebb_crds::all_crds() {
        let kind = &crd.spec.names.kind;
        let description = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| s.description.clone())
            .unwrap_or_default();
        assert!(
            description.starts_with(kind.as_str()) && !description.contains("Auto-generated"),
            "{kind}: {description:?}"
        );
    }
}

#[test]
fn checked_in_crds_match_the_types() {
    let dir = repo_root().join("crds");
    for crd in ebb_crds::all_crds() {
        let path = dir.join(ebb_crds::crd_file_name(&crd));
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        let on_disk: Value = serde_saphyr::from_str(&on_disk).unwrap_or_default();
        assert_eq!(
            on_disk,
            serde_json::to_value(&crd).unwrap(),
            "{} is stale: run `make crds`",
            path.display()
        );
    }
}
