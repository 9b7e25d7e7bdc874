//! The object store behind `FakeApi`: API-server semantics (resource versions, generations,
//! subresources, preconditions, finalizers) over JSON objects, with no HTTP in sight.

use std::collections::{BTreeMap, HashMap, HashSet};

use jiff::Timestamp;
use kube::core::{Selector, SelectorExt};
use serde_json::{Map, Value, json};

use crate::path::{ResourceType, split_api_version};
use crate::selector::FieldSelector;
use crate::watch::{ChangeKind, History};

/// Content types of a PATCH request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`, approximated as a merge patch (lists replace).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply), approximated as a merge patch: no field
    /// ownership or conflicts between managers, lists replace instead of merging by key, and fields
    /// a manager stops sending are not removed.
    Apply,
    /// `application/json-patch+json` (RFC 6902).
    Json,
}

impl PatchKind {
    /// The patch kind of a `Content-Type` header value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let mime = content_type.split(';').next().unwrap_or_default().trim();
        match mime {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            "application/json-patch+json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// Where a resource's `/scale` subresource reads and writes, as in a CRD's `scale` stanza.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// Dotted path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// Dotted path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// Dotted path of the label selector (a string, or a `LabelSelector` object), if any.
    pub label_selector: Option<String>,
}

impl Default for ScalePaths {
    fn default() -> Self {
        Self {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        }
    }
}

/// An API error, rendered as a `metav1.Status`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status: set, as by the API server, when the error is about one object.
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason_for(code),
            message: message.into(),
            details: None,
        }
    }

    /// An injected failure; a 429 says when to retry, as the API server's does.
    pub fn injected(code: u16) -> Self {
        Self {
            details: (code == 429)
                .then(|| json!({ "retryAfterSeconds": crate::fake::RETRY_AFTER_SECONDS })),
            ..Self::new(code, format!("injected {} ({code})", reason_for(code)))
        }
    }

    /// A missing object of a served kind: the Status names it in `details`, where a path the
    /// server does not serve at all (a CRD not installed) gets none.
    fn not_found(key: &ObjectKey) -> Self {
        Self {
            details: Some(json!({
                "name": key.name,
                "group": key.resource.group,
                "kind": key.resource.plural,
            })),
            ..Self::new(
                404,
                format!("{} {:?} not found", key.resource.qualified(), key.name),
            )
        }
    }

    fn conflict(key: &ObjectKey) -> Self {
        Self::new(
            409,
            format!(
                "Operation cannot be fulfilled on {} {:?}: the object has been modified; please \
                 apply your changes to the latest version and try again",
                key.resource.qualified(),
                key.name
            ),
        )
    }

    fn already_exists(key: &ObjectKey) -> Self {
        Self {
            reason: "AlreadyExists",
            ..Self::new(
                409,
                format!("{} {:?} already exists", key.resource.qualified(), key.name),
            )
        }
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// The `reason` the API server gives with an HTTP status code.
pub(crate) fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// Identifies one stored object. `namespace` is `None` for cluster-scoped objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ObjectKey {
    pub resource: ResourceType,
    pub namespace: Option<String>,
    pub name: String,
}

/// Which part of an object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// The object, except `.status` when the resource has a status subresource.
    Main,
    /// Only `.status`.
    Status,
}

/// Group and plural: what per-resource settings are keyed by (independent of version).
type GroupPlural = (String, String);

pub(crate) struct Store {
    objects: BTreeMap<ObjectKey, Value>,
    revision: u64,
    /// Every change, for watches: one entry per revision.
    pub history: History,
    created: u64,
    kinds: HashMap<GroupPlural, String>,
    plurals: HashMap<String, String>,
    without_status: HashSet<GroupPlural>,
    /// Resources the server does not serve (their CRD is not installed).
    pub unserved: HashSet<GroupPlural>,
    scale: HashMap<GroupPlural, ScalePaths>,
}

impl Default for Store {
    fn default() -> Self {
        let builtin_scale = ScalePaths {
            label_selector: Some(".spec.selector".into()),
            ..ScalePaths::default()
        };
        let scale = [
            ("apps", "deployments"),
            ("apps", "statefulsets"),
            ("apps", "replicasets"),
            ("", "replicationcontrollers"),
        ]
        .into_iter()
        .map(|(g, p)| ((g.to_owned(), p.to_owned()), builtin_scale.clone()))
        .collect();
        let plurals = [("Endpoints", "endpoints")]
            .into_iter()
            .map(|(k, p)| (k.to_owned(), p.to_owned()))
            .collect();
        Self {
            objects: BTreeMap::new(),
            revision: 0,
            history: History::default(),
            created: 0,
            kinds: HashMap::new(),
            plurals,
            without_status: HashSet::new(),
            unserved: HashSet::new(),
            scale,
        }
    }
}

pub(crate) fn group_plural(resource: &ResourceType) -> GroupPlural {
    (resource.group.clone(), resource.plural.clone())
}

fn timestamp(now: Timestamp) -> Value {
    Value::String(ebb_runtime::time::rfc3339(now))
}

fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata.labels` of an object (none when absent or malformed).
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default()
}

/// `obj` with `metadata.resourceVersion` set to `revision`: how a deleted object is reported,
/// its last state stamped with the revision of its deletion.
pub(crate) fn stamped(obj: &Value, revision: u64) -> Value {
    let mut obj = obj.clone();
    meta_mut(&mut obj).insert(
        "resourceVersion".into(),
        Value::String(revision.to_string()),
    );
    obj
}

/// `v` as a JSON object, replacing it with an empty one if it is anything else.
fn as_object(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("just made it an object"),
    }
}

/// `obj.metadata`, created if missing.
fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    as_object(as_object(obj).entry("metadata").or_insert(Value::Null))
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

/// Everything but metadata, status and type fields: what `metadata.generation` tracks.
fn spec_part(obj: &Value) -> Map<String, Value> {
    obj.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `Kind` -> `kinds`: lowercase plus `s`, `es` after s/x/ch/sh, `ies` after a consonant + y.
pub(crate) fn derive_plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// Value at a dotted path such as `.spec.replicas`.
fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|s| !s.is_empty())
        .try_fold(obj, |v, key| v.get(key))
}

/// Sets the value at a dotted path, creating objects on the way.
fn set_path(obj: &mut Value, path: &str, value: Value) {
    let keys: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in parents {
        cur = as_object(cur).entry(*key).or_insert(Value::Null);
    }
    as_object(cur).insert((*last).to_owned(), value);
}

/// A label selector's string form: as is when a string, `k=v,...` from `matchLabels` otherwise.
fn selector_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => {
            let labels = o.get("matchLabels")?.as_object()?;
            Some(
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
        _ => None,
    }
}

/// Applies a patch body to `target`.
pub(crate) fn apply_patch(
    target: &mut Value,
    kind: PatchKind,
    patch: &Value,
) -> Result<(), ApiError> {
    match kind {
        PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
            if !patch.is_object() {
                return Err(ApiError::new(400, "patch body must be a JSON object"));
            }
            json_patch::merge(target, patch);
            Ok(())
        }
        PatchKind::Json => {
            let ops: json_patch::Patch =
                serde_json::from_value(without_null_tests_of_missing_paths(target, patch))
                    .map_err(|e| ApiError::new(400, format!("invalid JSON patch: {e}")))?;
            json_patch::patch(target, &ops)
                .map_err(|e| ApiError::new(422, format!("JSON patch failed: {e}")))
        }
    }
}

/// The API server's JSON patch (evanphx/json-patch) passes `{"op": "test", "value": null}` on a
/// path that does not exist, which kube's `finalizer()` relies on for objects without finalizers;
/// the json-patch crate fails it. Such tests are dropped before applying, so both agree.
fn without_null_tests_of_missing_paths(target: &Value, patch: &Value) -> Value {
    let Some(ops) = patch.as_array() else {
        return patch.clone();
    };
    let kept = ops
        .iter()
        .filter(|op| {
            let null_test = op["op"] == "test" && op.get("value").is_some_and(Value::is_null);
            let missing = op["path"]
                .as_str()
                .is_some_and(|path| target.pointer(path).is_none());
            !(null_test && missing)
        })
        .cloned()
        .collect();
    Value::Array(kept)
}

impl Store {
    pub fn register_plural(&mut self, kind: &str, plural: &str) {
        self.plurals.insert(kind.to_owned(), plural.to_owned());
    }

    pub fn plural_for(&self, kind: &str) -> String {
        self.plurals
            .get(kind)
            .cloned()
            .unwrap_or_else(|| derive_plural(kind))
    }

    pub fn set_status_subresource(&mut self, group: &str, plural: &str, enabled: bool) {
        let key = (group.to_owned(), plural.to_owned());
        if enabled {
            self.without_status.remove(&key);
        } else {
            self.without_status.insert(key);
        }
    }

    pub fn register_scale(&mut self, group: &str, plural: &str, paths: ScalePaths) {
        self.scale
            .insert((group.to_owned(), plural.to_owned()), paths);
    }

    fn has_status(&self, resource: &ResourceType) -> bool {
        !self.without_status.contains(&group_plural(resource))
    }

    /// The key of `apiVersion`/`kind` `namespace/name`; `namespace` "" means cluster-scoped.
    pub fn key(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        let (group, version) = split_api_version(api_version);
        ObjectKey {
            resource: ResourceType {
                group,
                version,
                plural: self.plural_for(kind),
            },
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            name: name.to_owned(),
        }
    }

    fn next_revision(&mut self, dry_run: bool) -> String {
        if dry_run {
            return (self.revision + 1).to_string();
        }
        self.revision += 1;
        self.revision.to_string()
    }

    fn current(&self, key: &ObjectKey) -> Result<&Value, ApiError> {
        self.objects
            .get(key)
            .ok_or_else(|| ApiError::not_found(key))
    }

    pub fn get(&self, key: &ObjectKey, part: Option<&str>) -> Result<Value, ApiError> {
        if part == Some("status") && !self.has_status(&key.resource) {
            return Err(ApiError::new(
                404,
                "the server could not find the requested resource",
            ));
        }
        self.current(key).cloned()
    }

    pub fn get_json(&self, key: &ObjectKey) -> Option<Value> {
        self.objects.get(key).cloned()
    }

    pub fn objects_of(&self, resource: &ResourceType, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| &k.resource == resource)
            .filter(|(k, _)| namespace.is_none() || k.namespace.as_deref() == namespace)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The current revision: the resource version of the latest change to any object.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The `kind` of objects of `resource`, once one was stored.
    pub fn kind_of(&self, resource: &ResourceType) -> Option<&str> {
        self.kinds.get(&group_plural(resource)).map(String::as_str)
    }

    pub fn list(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        selector: &Selector,
        fields: &FieldSelector,
    ) -> Value {
        let items: Vec<Value> = self
            .objects_of(resource, namespace)
            .into_iter()
            .filter(|obj| selector.matches(&labels_of(obj)) && fields.matches(obj))
            .collect();
        let kind = self
            .kind_of(resource)
            .map_or_else(|| "List".to_owned(), |k| format!("{k}List"));
        json!({
            "apiVersion": resource.api_version(),
            "kind": kind,
            "metadata": { "resourceVersion": self.revision.to_string() },
            "items": items,
        })
    }

    /// Fills server-set fields of a new object and stores it (unless `dry_run`).
    fn store_new(
        &mut self,
        key: ObjectKey,
        mut obj: Value,
        now: Timestamp,
        dry_run: bool,
    ) -> Value {
        let type_key = group_plural(&key.resource);
        let o = as_object(&mut obj);
        o.entry("apiVersion")
            .or_insert_with(|| Value::String(key.resource.api_version()));
        match o.get("kind").and_then(Value::as_str) {
            Some(kind) => {
                self.kinds.insert(type_key, kind.to_owned());
            }
            None => {
                if let Some(kind) = self.kinds.get(&type_key) {
                    o.insert("kind".into(), Value::String(kind.clone()));
                }
            }
        }
        let revision = self.next_revision(dry_run);
        if !dry_run {
            self.created += 1;
        }
        let created = self.created;
        let m = meta_mut(&mut obj);
        m.insert("name".into(), Value::String(key.name.clone()));
        match &key.namespace {
            Some(ns) => m.insert("namespace".into(), Value::String(ns.clone())),
            None => m.remove("namespace"),
        };
        if !m.get("uid").is_some_and(Value::is_string) {
            m.insert(
                "uid".into(),
                json!(format!("00000000-0000-4000-8000-{created:012}")),
            );
        }
        if !m.get("creationTimestamp").is_some_and(Value::is_string) {
            m.insert("creationTimestamp".into(), timestamp(now));
        }
        if !m.get("generation").is_some_and(Value::is_i64) {
            m.insert("generation".into(), json!(1));
        }
        m.insert("resourceVersion".into(), Value::String(revision));
        if !dry_run {
            let previous = self.objects.insert(key.clone(), obj.clone());
            let kind = match previous {
                Some(_) => ChangeKind::Modified,
                None => ChangeKind::Added,
            };
            self.history
                .record(self.revision, kind, key, obj.clone(), previous);
        }
        obj
    }

    /// POST: creates an object in `namespace` (None: cluster-scoped).
    pub fn create(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        mut body: Value,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::new(400, "request body must be a JSON object"));
        }
        if let (Some(sent), Some(ns)) = (meta_str(&body, "namespace"), namespace)
            && sent != ns
        {
            return Err(ApiError::new(
                400,
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let name = match (meta_str(&body, "name"), meta_str(&body, "generateName")) {
            (Some(name), _) => name.to_owned(),
            (None, Some(prefix)) => format!("{prefix}{:05}", self.created + 1),
            (None, None) => {
                return Err(ApiError::new(
                    422,
                    "metadata.name or metadata.generateName is required",
                ));
            }
        };
        let key = ObjectKey {
            resource: resource.clone(),
            namespace: namespace.map(str::to_owned),
            name,
        };
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&key));
        }
        // With a status subresource, status is set through /status only, never on create.
        if self.has_status(resource)
            && let Some(o) = body.as_object_mut()
        {
            o.remove("status");
        }
        let m = meta_mut(&mut body);
        for server_field in [
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
        ] {
            m.remove(server_field);
        }
        crate::admission::admit(resource, &mut body)?;
        Ok(self.store_new(key, body, now, dry_run))
    }

    /// Rejects a write whose `metadata.resourceVersion` is set and differs from the stored one.
    fn check_precondition(
        key: &ObjectKey,
        candidate: &Value,
        current: &Value,
    ) -> Result<(), ApiError> {
        if let Some(uid) = meta_str(candidate, "uid")
            && Some(uid) != meta_str(current, "uid")
        {
            // The object was deleted and made again since the writer read it.
            return Err(ApiError {
                reason: "Invalid",
                details: Some(json!({
                    "name": key.name,
                    "kind": key.resource.plural,
                    "causes": [{
                        "reason": "FieldValueInvalid",
                        "field": "metadata.uid",
                        "message": format!("Invalid value: {uid:?}: field is immutable"),
                    }],
                })),
                ..ApiError::new(
                    422,
                    format!(
                        "{} {:?} is invalid: metadata.uid: field is immutable",
                        key.resource.qualified(),
                        key.name
                    ),
                )
            });
        }
        match resource_version(candidate) {
            Some(rv) if Some(rv) != resource_version(current) => Err(ApiError::conflict(key)),
            _ => Ok(()),
        }
    }

    /// Restricts a candidate to what a write to `part` may change.
    fn scoped(
        &self,
        key: &ObjectKey,
        old: &Value,
        candidate: Value,
        part: Part,
    ) -> Result<Value, ApiError> {
        if !candidate.is_object() {
            return Err(ApiError::new(400, "request body must be a JSON object"));
        }
        let take_status = |mut target: Value, from: &Value| {
            if let Some(o) = target.as_object_mut() {
                match from.get("status") {
                    Some(status) => o.insert("status".into(), status.clone()),
                    None => o.remove("status"),
                };
            }
            target
        };
        match part {
            Part::Status => {
                if !self.has_status(&key.resource) {
                    return Err(ApiError::new(
                        404,
                        "the server could not find the requested resource",
                    ));
                }
                Ok(take_status(old.clone(), &candidate))
            }
            Part::Main => {
                let mut new = if self.has_status(&key.resource) {
                    take_status(candidate, old)
                } else {
                    candidate
                };
                for field in ["apiVersion", "kind"] {
                    if let Some(v) = old.get(field) {
                        as_object(&mut new)
                            .entry(field)
                            .or_insert_with(|| v.clone());
                    }
                }
                let old_meta = meta(old).cloned().unwrap_or_default();
                let m = meta_mut(&mut new);
                for field in [
                    "name",
                    "namespace",
                    "uid",
                    "creationTimestamp",
                    "generation",
                    "deletionTimestamp",
                ] {
                    match old_meta.get(field) {
                        Some(v) => m.insert(field.into(), v.clone()),
                        None => m.remove(field),
                    };
                }
                crate::admission::admit(&key.resource, &mut new)?;
                Ok(new)
            }
        }
    }

    /// Stores `new` in place of `old`: no-op writes change nothing (not even the resource
    /// version); otherwise the resource version moves and, if more than metadata and status
    /// changed, the generation. A deleting object whose finalizers are gone is removed.
    fn commit(&mut self, key: &ObjectKey, old: &Value, mut new: Value, dry_run: bool) -> Value {
        let old_rv = resource_version(old).map(str::to_owned);
        let generation = meta(old)
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64);
        {
            let m = meta_mut(&mut new);
            match &old_rv {
                Some(rv) => m.insert("resourceVersion".into(), Value::String(rv.clone())),
                None => m.remove("resourceVersion"),
            };
        }
        if &new == old {
            return new;
        }
        let bump = spec_part(old) != spec_part(&new);
        let revision = self.next_revision(dry_run);
        let m = meta_mut(&mut new);
        m.insert("resourceVersion".into(), Value::String(revision));
        if let Some(generation) = generation {
            m.insert("generation".into(), json!(generation + i64::from(bump)));
        }
        let deleting = m.get("deletionTimestamp").is_some_and(|v| !v.is_null());
        let finalizers = m
            .get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if !dry_run {
            if deleting && !finalizers {
                // As on the API server, the update that empties the finalizers deletes the
                // object; watchers see one DELETED with the last stored state.
                self.objects.remove(key);
                let last = stamped(old, self.revision);
                self.history.record(
                    self.revision,
                    ChangeKind::Deleted,
                    key.clone(),
                    last,
                    Some(old.clone()),
                );
            } else {
                self.objects.insert(key.clone(), new.clone());
                self.history.record(
                    self.revision,
                    ChangeKind::Modified,
                    key.clone(),
                    new.clone(),
                    Some(old.clone()),
                );
            }
        }
        new
    }

    /// PUT.
    pub fn replace(
        &mut self,
        key: &ObjectKey,
        body: Value,
        part: Part,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let old = self.current(key)?.clone();
        Self::check_precondition(key, &body, &old)?;
        let new = self.scoped(key, &old, body, part)?;
        Ok(self.commit(key, &old, new, dry_run))
    }

    /// PATCH. Server-side apply to a missing object creates it.
    pub fn patch(
        &mut self,
        key: &ObjectKey,
        kind: PatchKind,
        patch: &Value,
        part: Part,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        if kind == PatchKind::Apply && part == Part::Main && !self.objects.contains_key(key) {
            let mut body = patch.clone();
            if !body.is_object() {
                return Err(ApiError::new(400, "patch body must be a JSON object"));
            }
            // An upsert, as on kube-apiserver: a resourceVersion in the body does not stop it,
            // a uid does (the object it names is gone).
            if let Some(uid) = meta_str(&body, "uid") {
                return Err(ApiError::new(
                    409,
                    format!(
                        "Operation cannot be fulfilled on {} {:?}: uid mismatch: the provided \
                         object specified uid {uid}, and no existing object was found",
                        key.resource.qualified(),
                        key.name
                    ),
                ));
            }
            meta_mut(&mut body).insert("name".into(), Value::String(key.name.clone()));
            meta_mut(&mut body).remove("resourceVersion");
            return self.create(&key.resource, key.namespace.as_deref(), body, now, dry_run);
        }
        let old = self.current(key)?.clone();
        let mut patched = old.clone();
        apply_patch(&mut patched, kind, patch)?;
        Self::check_precondition(key, &patched, &old)?;
        let new = self.scoped(key, &old, patched, part)?;
        Ok(self.commit(key, &old, new, dry_run))
    }

    /// DELETE: removes the object, or marks it deleting while finalizers remain. `preconditions`
    /// (DeleteOptions' `uid`, `resourceVersion`; `null` for none) that the object does not meet
    /// answer 409, as kube-apiserver does.
    pub fn delete(
        &mut self,
        key: &ObjectKey,
        preconditions: &Value,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let old = self.current(key)?.clone();
        for field in ["uid", "resourceVersion"] {
            if let Some(wanted) = preconditions.get(field).and_then(Value::as_str)
                && Some(wanted) != meta_str(&old, field)
            {
                return Err(ApiError {
                    reason: "Conflict",
                    ..ApiError::new(
                        409,
                        format!(
                            "Precondition failed: {field} in precondition: {wanted}, {field} in \
                             object meta: {}",
                            meta_str(&old, field).unwrap_or_default()
                        ),
                    )
                });
            }
        }
        let has_finalizers = meta(&old)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if !has_finalizers {
            if !dry_run {
                self.remove(key);
            }
            return Ok(old);
        }
        let mut new = old.clone();
        let m = meta_mut(&mut new);
        if !m.contains_key("deletionTimestamp") {
            m.insert("deletionTimestamp".into(), timestamp(now));
        }
        Ok(self.commit(key, &old, new, dry_run))
    }

    fn scale_paths(&self, resource: &ResourceType) -> Result<ScalePaths, ApiError> {
        self.scale
            .get(&group_plural(resource))
            .cloned()
            .ok_or_else(|| ApiError::new(404, "the server could not find the requested resource"))
    }

    /// The `autoscaling/v1` Scale view of an object.
    fn scale_view(obj: &Value, paths: &ScalePaths) -> Value {
        let m = meta(obj).cloned().unwrap_or_default();
        let mut scale_meta = Map::new();
        for field in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = m.get(field) {
                scale_meta.insert(field.into(), v.clone());
            }
        }
        let replicas = |path: &str| get_path(obj, path).and_then(Value::as_i64).unwrap_or(0);
        let mut status = json!({ "replicas": replicas(&paths.status_replicas) });
        if let Some(selector) = paths
            .label_selector
            .as_deref()
            .and_then(|p| get_path(obj, p))
            .and_then(selector_string)
        {
            status["selector"] = Value::String(selector);
        }
        json!({
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": scale_meta,
            "spec": { "replicas": replicas(&paths.spec_replicas) },
            "status": status,
        })
    }

    pub fn get_scale(&self, key: &ObjectKey) -> Result<Value, ApiError> {
        let paths = self.scale_paths(&key.resource)?;
        Ok(Self::scale_view(self.current(key)?, &paths))
    }

    /// PUT or PATCH of `/scale`: `patch` is `None` for PUT (then `body` is the whole Scale).
    pub fn write_scale(
        &mut self,
        key: &ObjectKey,
        body: &Value,
        patch: Option<PatchKind>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let paths = self.scale_paths(&key.resource)?;
        let old = self.current(key)?.clone();
        let scale = match patch {
            None => body.clone(),
            Some(kind) => {
                let mut view = Self::scale_view(&old, &paths);
                apply_patch(&mut view, kind, body)?;
                view
            }
        };
        Self::check_precondition(key, &scale, &old)?;
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .filter(|r| *r >= 0)
            .ok_or_else(|| ApiError::new(422, "spec.replicas must be a non-negative integer"))?;
        let mut new = old.clone();
        set_path(&mut new, &paths.spec_replicas, json!(replicas));
        let committed = self.commit(key, &old, new, dry_run);
        Ok(Self::scale_view(&committed, &paths))
    }

    /// Seeds an object as is (status included), filling server fields that are missing.
    pub fn insert(
        &mut self,
        obj: Value,
        plural: Option<&str>,
        now: Timestamp,
    ) -> Result<Value, String> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or("object has no apiVersion")?;
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("object has no kind")?;
        let name = meta_str(&obj, "name").ok_or("object has no metadata.name")?;
        let namespace = meta_str(&obj, "namespace").unwrap_or_default();
        let mut key = self.key(api_version, kind, namespace, name);
        if let Some(plural) = plural {
            key.resource.plural = plural.to_owned();
        }
        // A re-insert replaces the object as a new version (store_new sets the resource version).
        Ok(self.store_new(key, obj, now, false))
    }

    /// Changes a stored object as another actor would, with no subresource restrictions.
    pub fn modify(
        &mut self,
        key: &ObjectKey,
        change: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        let old = self.current(key)?.clone();
        let mut new = old.clone();
        change(&mut new);
        Ok(self.commit(key, &old, new, false))
    }

    /// Deletes an object outright; watchers see DELETED with its last state.
    pub fn remove(&mut self, key: &ObjectKey) -> bool {
        let Some(old) = self.objects.remove(key) else {
            return false;
        };
        self.revision += 1;
        let last = stamped(&old, self.revision);
        self.history.record(
            self.revision,
            ChangeKind::Deleted,
            key.clone(),
            last,
            Some(old),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn plurals() {
        for (kind, plural) in [
            ("Deployment", "deployments"),
            ("WorkshopProvision", "workshopprovisions"),
            ("NetworkPolicy", "networkpolicies"),
            ("Gateway", "gateways"),
            ("Ingress", "ingresses"),
            ("Namespace", "namespaces"),
            ("HorizontalPodAutoscaler", "horizontalpodautoscalers"),
        ] {
            assert_eq!(derive_plural(kind), plural);
        }
        let store = Store::default();
        assert_eq!(store.plural_for("Endpoints"), "endpoints");
    }

    #[test]
    fn dotted_paths() {
        let mut v = json!({});
        set_path(&mut v, ".spec.scale.replicas", json!(3));
        assert_eq!(get_path(&v, ".spec.scale.replicas"), Some(&json!(3)));
        assert_eq!(get_path(&v, ".spec.nope"), None);
        assert_eq!(
            selector_string(&json!({"matchLabels": {"a": "b", "c": "d"}})),
            Some("a=b,c=d".into())
        );
        assert_eq!(selector_string(&json!("x=y")), Some("x=y".into()));
    }
}
