//! Reading manifests offline as the API server would: every `plan` reads its objects here.
//!
//! - From a file or standard input (`-f -`), one document or several (`---`), or a `List` (what
//!   `kubectl get -o yaml` prints).
//! - Objects of other kinds are skipped, with one note on stderr, so that a `helm template` or
//!   `kustomize build` stream can be piped in whole; `--strict-kinds` refuses them instead.
//! - No silent typos: a field the kind's schema does not declare is an error naming its path and
//!   the nearest declared name (`spec.timeRangeSpec[0].timeZon: unknown field, did you mean
//!   "timeZone"?`), as `kubectl apply`'s strict field validation says; `--lenient` makes it a
//!   warning. Subtrees with `x-kubernetes-preserve-unknown-fields` take any field, as they do on
//!   the server; `metadata` is held to ObjectMeta's fields.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The flags every `plan` takes to read its input.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// YAML or JSON file with the object(s): one document, several (`---`), or a `List`; `-`
    /// reads standard input.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: PathBuf,
    /// The instant to decide at, RFC 3339 (e.g. 2026-03-27T12:00:00+05:30) [default: now].
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
    /// Report fields the schema does not declare as warnings instead of refusing the manifest.
    #[arg(long)]
    pub lenient: bool,
    /// Refuse objects of other kinds instead of skipping them (with a note on stderr). Without
    /// it, a whole `helm template` or `kustomize build` stream can be piped in.
    #[arg(long)]
    pub strict_kinds: bool,
}

impl Input {
    /// `--at`, or `now` when it is not given.
    ///
    /// # Errors
    /// [`ManifestError::At`] when `--at` is not an RFC 3339 instant.
    pub fn at(&self, now: Timestamp) -> Result<Timestamp, ManifestError> {
        match &self.at {
            None => Ok(now),
            Some(text) => text
                .trim()
                .parse::<Timestamp>()
                .map_err(|e| ManifestError::At {
                    value: text.clone(),
                    reason: e.to_string(),
                }),
        }
    }
}

/// The openAPIV3Schema of a kind, as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema(Value);

impl Schema {
    /// The schema of a CRD's storage version (its first version when none is marked).
    pub fn of_crd(crd: &CustomResourceDefinition) -> Option<Self> {
        let versions = &crd.spec.versions;
        let version = versions
            .iter()
            .find(|v| v.storage)
            .or_else(|| versions.first())?;
        let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
        serde_json::to_value(schema).ok().map(Self)
    }

    /// The schema of `kind` among `crds`; one that takes every field when none is there.
    pub fn for_kind(crds: impl IntoIterator<Item = CustomResourceDefinition>, kind: &str) -> Self {
        crds.into_iter()
            .find(|crd| crd.spec.names.kind == kind)
            .and_then(|crd| Self::of_crd(&crd))
            .unwrap_or(Self(Value::Null))
    }

    /// This schema with the property at `path` (property names from the root) replaced by
    /// `property`: e.g. ebb's `spec.autoScaling` in a Babylon schema that does not declare it.
    #[must_use]
    pub fn with_property(mut self, path: &[&str], property: &Schema) -> Self {
        let mut node = &mut self.0;
        for name in path {
            let Some(next) = node
                .as_object_mut()
                .map(|o| {
                    o.entry("properties")
                        .or_insert_with(|| Value::Object(Map::new()))
                })
                .and_then(Value::as_object_mut)
                .map(|properties| {
                    properties
                        .entry(*name)
                        .or_insert_with(|| Value::Object(Map::new()))
                })
            else {
                return self;
            };
            node = next;
        }
        *node = property.0.clone();
        self
    }

    /// The subschema at `path` (property names from the root), if declared.
    pub fn property(&self, path: &[&str]) -> Option<Schema> {
        let mut node = &self.0;
        for name in path {
            node = node.get("properties")?.get(name)?;
        }
        Some(Self(node.clone()))
    }

    /// Every field of `object` that the schema does not declare (the fields of each object in
    /// name order).
    pub fn unknown_fields(&self, object: &Value) -> Vec<UnknownField> {
        let mut found = Vec::new();
        if let Some(fields) = object.as_object() {
            for (key, value) in fields {
                match key.as_str() {
                    "apiVersion" | "kind" => {}
                    "metadata" => metadata_fields(value, &mut found),
                    _ if self.0.is_null() => {}
                    _ => walk(&self.0, key, value, key.clone(), &mut found),
                }
            }
        }
        found
    }
}

/// A field the schema does not declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// Its path (`spec.timeRangeSpec[0].timeZon`).
    pub path: String,
    /// The declared name nearest to it, when one is near.
    pub nearest: Option<String>,
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.nearest {
            Some(name) => write!(f, "{}: unknown field, did you mean {name:?}?", self.path),
            None => write!(f, "{}: unknown field", self.path),
        }
    }
}

/// Looks at `key: value` of an object whose schema is `parent`.
fn walk(parent: &Value, key: &str, value: &Value, path: String, found: &mut Vec<UnknownField>) {
    match child_schema(parent, key) {
        Some(schema) => descend(schema, value, path, found),
        None if preserves_unknown(parent) => {}
        None => found.push(UnknownField {
            nearest: nearest(key, declared(parent)),
            path,
        }),
    }
}

/// Looks inside `value`, declared by `schema`.
fn descend(schema: &Value, value: &Value, path: String, found: &mut Vec<UnknownField>) {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                walk(schema, key, child, format!("{path}.{key}"), found);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    descend(item_schema, item, format!("{path}[{i}]"), found);
                }
            }
        }
        _ => {}
    }
}

/// The schema of property `key` of an object schema: a declared property, or the value schema
/// of a map (`additionalProperties`).
fn child_schema<'s>(parent: &'s Value, key: &str) -> Option<&'s Value> {
    if let Some(schema) = parent.get("properties").and_then(|p| p.get(key)) {
        return Some(schema);
    }
    match parent.get("additionalProperties") {
        Some(Value::Bool(true)) => Some(&ANY),
        Some(schema @ Value::Object(_)) => Some(schema),
        _ => None,
    }
}

/// A schema that takes anything (`additionalProperties: true`).
static ANY: Value = Value::Null;

/// Whether unknown fields are kept here: `x-kubernetes-preserve-unknown-fields`, a schema that
/// takes anything, or an embedded resource's own fields.
fn preserves_unknown(schema: &Value) -> bool {
    schema.is_null()
        || schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

fn declared(schema: &Value) -> Vec<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// ObjectMeta's fields (the API server validates `metadata` itself, whatever the CRD says).
const OBJECT_META: [&str; 16] = [
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
    "clusterName",
];

fn metadata_fields(value: &Value, found: &mut Vec<UnknownField>) {
    for key in value.as_object().into_iter().flat_map(Map::keys) {
        if !OBJECT_META.contains(&key.as_str()) {
            found.push(UnknownField {
                path: format!("metadata.{key}"),
                nearest: nearest(key, OBJECT_META.to_vec()),
            });
        }
    }
}

/// The declared name nearest to `key`: the same but for case, or at most a third of its letters
/// away (at least one, at most three edits).
fn nearest(key: &str, declared: Vec<&str>) -> Option<String> {
    if let Some(same) = declared.iter().find(|d| d.eq_ignore_ascii_case(key)) {
        return Some((*same).to_owned());
    }
    let limit = (key.chars().count() / 3).clamp(1, 3);
    declared
        .into_iter()
        .map(|d| (strsim::damerau_levenshtein(key, d), d))
        .filter(|(distance, _)| *distance <= limit)
        .min()
        .map(|(_, d)| d.to_owned())
}

/// How strictly an input is read: `--lenient` and `--strict-kinds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strictness {
    /// Fields the schema does not declare are warnings, not errors.
    pub lenient: bool,
    /// Objects of other kinds are errors, not skipped.
    pub strict_kinds: bool,
}

impl Input {
    /// How strictly this input is read.
    pub fn strictness(&self) -> Strictness {
        Strictness {
            lenient: self.lenient,
            strict_kinds: self.strict_kinds,
        }
    }
}

/// The objects read, the fields let through because of `--lenient`, and the objects of other
/// kinds passed over.
#[derive(Debug)]
pub struct Manifests<K> {
    /// The objects, in document order.
    pub objects: Vec<K>,
    /// One line per field the schema does not declare (only with `--lenient`).
    pub warnings: Vec<String>,
    /// Each object of another kind, as `Kind name` (without `--strict-kinds`).
    pub skipped: Vec<String>,
    /// The objects of the other kinds asked for beside `K` ([`parse_with`]), held to their
    /// schemas, as JSON, in document order.
    pub companions: Vec<Value>,
}

/// Reads every object of kind `K` from `input.file` (or standard input for `-`), checked against
/// `schema`; what `--lenient` let through is said on stderr as `<program>: warning: ...`.
///
/// # Errors
/// The file or stdin cannot be read; a document is not valid YAML, is another kind, has a field
/// the schema does not declare (unless `--lenient`) or a field of the wrong shape; no object.
pub fn read<K>(program: &str, input: &Input, schema: &Schema) -> Result<Vec<K>, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    read_with(program, input, schema, &[]).map(|read| read.objects)
}

/// [`read`], keeping the objects of the companion kinds `also` names ([`parse_with`]).
///
/// # Errors
/// As [`read`].
pub fn read_with<K>(
    program: &str,
    input: &Input,
    schema: &Schema,
    also: &[(&str, Schema)],
) -> Result<Manifests<K>, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let (source, text) = read_source(&input.file)?;
    let read = parse_with(&source, &text, schema, input.strictness(), also)?;
    for warning in &read.warnings {
        eprintln!("{program}: warning: {warning}");
    }
    if let Some(note) = skipped_note(&read.skipped) {
        eprintln!("{program}: {note}");
    }
    Ok(read)
}

/// A companion object ([`Manifests::companions`]) read as its type `T`; one that does not fit
/// is refused naming the field, as an object of the kind read is.
///
/// # Errors
/// [`ManifestError::Parse`], naming `path`, the object and the field.
pub fn companion<T: DeserializeOwned>(value: &Value, path: &str) -> Result<T, ManifestError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("(no kind)");
        let name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("(no name)");
        ManifestError::Parse {
            path: format!("{path}: {kind} {name}"),
            message: format!("{}: {}", e.path(), e.inner()),
        }
    })
}

/// The one line said of the objects of other kinds an input held, if any: how many, and the
/// first few.
pub fn skipped_note(skipped: &[String]) -> Option<String> {
    const SHOWN: usize = 3;
    let (first, rest) = skipped.split_at(skipped.len().min(SHOWN));
    if first.is_empty() {
        return None;
    }
    let more = match rest.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let objects = match skipped.len() {
        1 => "1 object of another kind".to_owned(),
        n => format!("{n} objects of other kinds"),
    };
    Some(format!(
        "skipped {objects}: {}{more} (--strict-kinds refuses them)",
        first.join(", ")
    ))
}

/// Reads `path`, or standard input for `-`: the name to show in errors, and the text.
///
/// # Errors
/// [`ManifestError::Read`].
pub fn read_source(path: &Path) -> Result<(String, String), ManifestError> {
    if path == Path::new("-") {
        let mut text = String::new();
        return std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| ("<stdin>".to_owned(), text))
            .map_err(|source| ManifestError::Read {
                path: "<stdin>".to_owned(),
                source,
            });
    }
    let shown = path.display().to_string();
    std::fs::read_to_string(path)
        .map(|text| (shown.clone(), text))
        .map_err(|source| ManifestError::Read {
            path: shown,
            source,
        })
}

/// [`read`] on text already read from `source`.
///
/// Each document is read into JSON, as `kubectl` converts YAML before the API server sees it; a
/// number JSON cannot hold (`.inf`, `.nan`) is refused there, naming its field, as `kubectl
/// apply` would refuse it. Then the object is held to the schema and read from that JSON, with the
/// field path of anything of the wrong shape.
///
/// # Errors
/// As [`read`].
pub fn parse<K>(
    source: &str,
    text: &str,
    schema: &Schema,
    strictness: Strictness,
) -> Result<Manifests<K>, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    parse_with(source, text, schema, strictness, &[])
}

/// [`parse`], keeping beside the objects of kind `K` those of the kinds `also` names (each held
/// to its schema as `K`'s is) in [`Manifests::companions`]: what a `plan` reads when the input
/// stands for more of the cluster than one kind (FleetSchedules and the HPAs they select). An
/// input without an object of `K` is refused only when it holds no companion either.
///
/// # Errors
/// As [`read`].
pub fn parse_with<K>(
    source: &str,
    text: &str,
    schema: &Schema,
    strictness: Strictness,
    also: &[(&str, Schema)],
) -> Result<Manifests<K>, ManifestError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    // serde-saphyr's message says where (line and column); empty documents are left out.
    let values: Vec<Value> = serde_saphyr::from_multiple_with_options::<Json>(text, yaml_options())
        .map_err(|e| ManifestError::NotYaml {
            path: source.to_owned(),
            message: e.to_string(),
        })?
        .into_iter()
        .map(|json| json.0)
        .filter(|value| !value.is_null())
        .collect();
    let several = values.len() > 1;
    let mut reader = Reader {
        expected: K::kind(&()).into_owned(),
        schema,
        also,
        strictness,
        manifests: Manifests {
            objects: Vec::new(),
            warnings: Vec::new(),
            skipped: Vec::new(),
            companions: Vec::new(),
        },
    };
    for (index, value) in values.iter().enumerate() {
        let at = if several {
            format!("{source}: document {}", index + 1)
        } else {
            source.to_owned()
        };
        let objects: Vec<(String, &Value)> = match list_items(value) {
            Some(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| (format!("{at}: items[{i}]"), item))
                .collect(),
            None => vec![(at, value)],
        };
        for (at, object) in objects {
            if !reader.check(&at, object)? {
                continue;
            }
            let read = serde_path_to_error::deserialize(object)
                .map_err(|e| format!("{}: {}", e.path(), e.inner()));
            reader.push(&at, read)?;
        }
    }
    if reader.manifests.objects.is_empty() && reader.manifests.companions.is_empty() {
        return Err(ManifestError::Nothing {
            path: source.to_owned(),
            kind: reader.expected,
            skipped: reader.manifests.skipped.len(),
        });
    }
    Ok(reader.manifests)
}

/// How ebb reads YAML that users write (manifests, scenarios): YAML 1.2's booleans only (`n`,
/// `no`, `off` stay strings, as `namespace: no` must), and `.inf` or `.nan` passed on to
/// [`parse`]'s reader, which names the field JSON cannot carry it in.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
    }
}

/// A YAML document as the JSON `kubectl` would send: every number finite.
struct Json(Value);

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(Field(String::new()), deserializer).map(Json)
    }
}

/// The JSON value at a field path (`spec.autoScaling.scaleFactor`), for the message that names
/// a number JSON cannot hold.
struct Field(String);

impl Field {
    fn child(&self, name: &str) -> Self {
        match self.0.is_empty() {
            true => Self(name.to_owned()),
            false => Self(format!("{}.{name}", self.0)),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Field {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Field {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a YAML value JSON can hold")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            E::custom(format!(
                "{}: {v} is not a number a Kubernetes object can hold (JSON has no infinity or NaN)",
                self.0
            ))
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) =
            seq.next_element_seed(Self(format!("{}[{}]", self.0, items.len())))?
        {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.child(&key))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The items of a `List` (`kind: List` or `<Kind>List`, as `kubectl get -o yaml` prints).
fn list_items(value: &Value) -> Option<&Vec<Value>> {
    let kind = value.get("kind")?.as_str()?;
    if kind.ends_with("List") {
        value.get("items")?.as_array()
    } else {
        None
    }
}

struct Reader<'s, K> {
    expected: String,
    schema: &'s Schema,
    also: &'s [(&'s str, Schema)],
    strictness: Strictness,
    manifests: Manifests<K>,
}

impl<K> Reader<'_, K> {
    /// Whether `value` is of the kind read (another is skipped, or refused with
    /// `--strict-kinds`), and the fields the schema does not declare.
    fn check(&mut self, at: &str, value: &Value) -> Result<bool, ManifestError> {
        let error = |message: String| ManifestError::Parse {
            path: at.to_owned(),
            message,
        };
        let found = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let companion = self.also.iter().find(|(kind, _)| *kind == found);
        let (expected, schema) = match companion {
            Some((kind, schema)) => (*kind, schema),
            None => (self.expected.as_str(), self.schema),
        };
        if found != expected {
            if self.strictness.strict_kinds {
                return Err(error(format!(
                    "kind: expected {expected}, got {found:?} (--strict-kinds)"
                )));
            }
            let name = value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("(no name)");
            let found = if found.is_empty() { "(no kind)" } else { found };
            self.manifests.skipped.push(format!("{found} {name}"));
            return Ok(false);
        }
        let unknown = schema.unknown_fields(value);
        if !unknown.is_empty() && !self.strictness.lenient {
            let lines: Vec<String> = unknown.iter().map(ToString::to_string).collect();
            return Err(error(format!(
                "{} (fields the {expected} schema does not declare; --lenient reads on)",
                lines.join("; ")
            )));
        }
        self.manifests
            .warnings
            .extend(unknown.iter().map(|field| format!("{at}: {field}")));
        if companion.is_some() {
            self.manifests.companions.push(value.clone());
            return Ok(false);
        }
        Ok(true)
    }

    fn push(&mut self, at: &str, read: Result<K, String>) -> Result<(), ManifestError> {
        let object = read.map_err(|message| ManifestError::Parse {
            path: at.to_owned(),
            message,
        })?;
        self.manifests.objects.push(object);
        Ok(())
    }
}

/// Why a manifest file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML (or JSON).
    #[error("{path}: not valid YAML: {message}")]
    NotYaml {
        /// The file.
        path: String,
        /// The parser's message, with the line and column.
        message: String,
    },
    /// No object of the kind is in the input.
    #[error("{path}: no {kind} in it{}", skipped_count(*.skipped))]
    Nothing {
        /// The file.
        path: String,
        /// The kind looked for.
        kind: String,
        /// How many objects of other kinds it holds.
        skipped: usize,
    },
    /// `--at` is not an RFC 3339 instant.
    #[error("--at {value:?}: not an RFC 3339 instant such as 2026-03-27T11:00:00Z ({reason})")]
    At {
        /// The text given.
        value: String,
        /// The parser's complaint.
        reason: String,
    },
    /// An object of the input is not a valid object of the expected kind.
    #[error("{path}: {message}")]
    Parse {
        /// The file (and document, or `List` item).
        path: String,
        /// What is wrong, with the field where known.
        message: String,
    },
}

/// `Nothing`'s note of the objects of other kinds the input held: how many.
fn skipped_count(skipped: usize) -> String {
    match skipped {
        0 => String::new(),
        1 => " (1 object of another kind)".to_owned(),
        n => format!(" ({n} objects of other kinds)"),
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
