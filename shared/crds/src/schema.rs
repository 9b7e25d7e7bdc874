//! Schema helpers shared by the CRD types, and the last clean-up pass over generated CRDs.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

/// Schema for a free-form object whose fields Kubernetes must keep as written
/// (`x-kubernetes-preserve-unknown-fields`), such as Babylon's `parameters` or a provider's `state`.
pub fn free_form(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Like [`free_form`], but wraps an optional value (the API server also accepts `null`).
pub fn optional_free_form(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = free_form(generator);
    schema.insert("nullable".into(), Value::Bool(true));
    schema
}

/// Applies what Kubernetes needs beyond what schemars emits:
/// - drops `format: uint32/uint64/...` (not OpenAPI formats; newer API servers warn about them),
/// - sorts nothing and changes nothing else, so the output stays a faithful view of the types.
pub fn finalize_crd(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            strip_unsigned_formats(schema);
        }
    }
    crd
}

fn strip_unsigned_formats(props: &mut JSONSchemaProps) {
    if props
        .format
        .as_deref()
        .is_some_and(|f| f.starts_with("uint") || f == "uint")
    {
        props.format = None;
    }
    for child in props.properties.iter_mut().flat_map(|p| p.values_mut()) {
        strip_unsigned_formats(child);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(items)) =
        props.items.as_mut()
    {
        strip_unsigned_formats(items);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool::Schema(extra)) =
        props.additional_properties.as_mut()
    {
        strip_unsigned_formats(extra);
    }
    for list in [&mut props.all_of, &mut props.any_of, &mut props.one_of] {
        for child in list.iter_mut().flatten() {
            strip_unsigned_formats(child);
        }
    }
}

/// Schema of a `conditions` list: Kubernetes `Condition`s keyed by `type`
/// (`x-kubernetes-list-type: map`), so server-side apply merges conditions per type.
pub fn conditions(generator: &mut SchemaGenerator) -> Schema {
    let mut schema =
        Vec::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>::json_schema(generator);
    schema.insert("x-kubernetes-list-type".into(), Value::String("map".into()));
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        Value::Array(vec![Value::String("type".into())]),
    );
    schema.insert("maxItems".into(), Value::from(16));
    schema
}

/// `status.currentState.stage` of a StackableScaler: Stackable's PR's tagged object, or the
/// stage's name as earlier ebb releases wrote it. A structural schema cannot say "string or
/// object", so the field keeps what it is given; the controller reads both forms.
pub fn tagged_stage(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "description": "The current stage, as Stackable's PR writes it: {stage: idle} (preScaling, scaling, postScaling), or {stage: failed, details: {failedAt: <stage>, reason: <why>}}. The stage's name alone (Idle), as earlier ebb releases wrote it, is read too.",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A hook's `batch/v1` JobTemplateSpec: free-form, except the path down to the pod spec, which
/// the hook's CEL rules read (an API server's CEL sees only the declared fields of an object that
/// keeps unknown ones): `spec.template.spec.restartPolicy` and `.containers`.
pub fn hook_template(_: &mut SchemaGenerator) -> Schema {
    // An object that keeps unknown fields and declares `properties`.
    fn keeping(properties: Value) -> Value {
        serde_json::json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": properties,
        })
    }
    let pod = keeping(serde_json::json!({
        "restartPolicy": {"type": "string", "maxLength": 16},
        "containers": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    }));
    let job = keeping(serde_json::json!({
        "template": keeping(serde_json::json!({ "spec": pod })),
    }));
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": { "spec": job },
    })
}
