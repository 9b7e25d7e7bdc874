//! [`Guarded`]: an object of a typed kind that may not fit the type. Watched, listed and read
//! through it, one object that does not deserialize into ebb's typed view cannot stall a whole
//! watch or fail a list: it arrives as its metadata and why, and every other object is served as
//! usual. The why names the field (`spec.count: invalid type: string "many", expected i32`), so
//! the log line or status condition that reports it tells the user what to fix.
//!
//! kube's `DeserializeGuard` does the same without the field: serde's errors carry no path, and
//! ebb's malformed objects are the ones a CRD schema let through (a Babylon CRD that keeps unknown
//! fields), where the user has nothing else to go by.

use std::borrow::Cow;
use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::PartialObjectMeta;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_path_to_error::Segment;

pub use kube::core::error_boundary::InvalidObject;

/// An object of kind `K`, or (`Err`) the metadata of one that does not fit `K` and why, the
/// field named.
#[derive(Clone, Debug)]
pub struct Guarded<K>(pub Result<K, InvalidObject>);

impl<'de, K> Deserialize<'de> for Guarded<K>
where
    K: DeserializeOwned + Resource,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::from_value(&value).map_err(D::Error::custom)
    }
}

impl<K: DeserializeOwned + Resource> Guarded<K> {
    /// `value` as a `K`, or its metadata and why it does not fit `K`.
    ///
    /// # Errors
    /// Not even its metadata is readable.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, serde_json::Error> {
        let error = match read::<K>(value, "") {
            Ok(object) => return Ok(Self(Ok(object))),
            Err(error) => error,
        };
        let PartialObjectMeta { metadata, .. } = PartialObjectMeta::<K>::deserialize(value)?;
        Ok(Self(Err(InvalidObject { error, metadata })))
    }
}

/// `value`, the field `at` of an object (`spec`; `""` for the object itself), as a `T`; or why
/// not, naming the field that does not fit: `spec.hpa.minReplicas: invalid type: string "two",
/// expected i32`. The path is tracked only to explain a failure: reading what fits costs nothing
/// more.
///
/// # Errors
/// The message, when `value` does not fit `T`.
pub fn read<T: DeserializeOwned>(value: &serde_json::Value, at: &str) -> Result<T, String> {
    let error = match T::deserialize(value) {
        Ok(read) => return Ok(read),
        Err(error) => error,
    };
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(read) => Ok(read),
        Err(pathed) => {
            let known = pathed
                .path()
                .iter()
                .any(|segment| !matches!(segment, Segment::Unknown));
            let field = match (at, known) {
                (at, false) => at.to_owned(),
                ("", true) => pathed.path().to_string(),
                (at, true) => format!("{at}.{}", pathed.path()),
            };
            Err(match field.as_str() {
                "" => error.to_string(),
                field => format!("{field}: {error}"),
            })
        }
    }
}

/// How a watch holds the objects of a kind a controller reconciles: as decoded ([`Guarded`]) or
/// packed ([`Packed`](crate::watch::packed::Packed)). The frame takes the object from either the same
/// way ([`Stored::typed`]).
pub trait Stored:
    Resource<DynamicType = (), Scope: 'static>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The kind a pass decides on.
    type Object: Object;

    /// The object, typed; or why it does not fit its type (the field named).
    ///
    /// # Errors
    /// The object does not fit its type.
    fn typed(&self) -> Result<Self::Object, Cow<'_, str>>;
}

impl<K: Object> Stored for Guarded<K> {
    type Object = K;

    fn typed(&self) -> Result<K, Cow<'_, str>> {
        match &self.0 {
            Ok(object) => Ok(object.clone()),
            Err(invalid) => Err(Cow::Borrowed(&invalid.error)),
        }
    }
}

impl<K: Resource> Resource for Guarded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    /// As `K`'s: an `Api` of a guarded `PartialObjectMeta` asks the server for metadata only.
    fn metadata_api() -> bool {
        K::metadata_api()
    }

    fn meta(&self) -> &ObjectMeta {
        match &self.0 {
            Ok(object) => object.meta(),
            Err(invalid) => &invalid.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match &mut self.0 {
            Ok(object) => object.meta_mut(),
            Err(invalid) => &mut invalid.metadata,
        }
    }
}

/// A kind of object a controller reconciles (any typed Kubernetes kind).
pub trait Object:
    Resource<DynamicType = (), Scope: 'static>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = (), Scope: 'static>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    fn guarded<K: DeserializeOwned + Resource>(object: serde_json::Value) -> Guarded<K> {
        serde_json::from_value(object).unwrap()
    }

    /// A watch of guarded metadata asks for metadata only, as one of the bare type does (the
    /// server then sends no spec or status to decode and drop).
    #[test]
    fn guarded_metadata_is_asked_for_as_metadata() {
        use kube::core::PartialObjectMeta;
        assert!(Guarded::<PartialObjectMeta<Deployment>>::metadata_api());
        assert!(!Guarded::<Deployment>::metadata_api());
    }

    #[test]
    fn an_object_that_fits_is_the_object() {
        let map: Guarded<ConfigMap> = guarded(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v"},
        }));
        assert_eq!(map.meta().name.as_deref(), Some("a"));
        let data = map.0.unwrap().data.unwrap();
        assert_eq!(data.get("k").map(String::as_str), Some("v"));
    }

    #[test]
    fn a_malformed_object_keeps_its_metadata_and_names_the_field() {
        let deployment: Guarded<Deployment> = guarded(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
            "spec": {
                "replicas": "many",
                "selector": {},
                "template": {"spec": {"containers": []}},
            },
        }));
        assert_eq!(deployment.meta().name.as_deref(), Some("web"));
        assert_eq!(deployment.meta().namespace.as_deref(), Some("shop"));
        assert_eq!(deployment.meta().resource_version.as_deref(), Some("7"));
        let invalid = deployment.0.unwrap_err();
        assert!(
            invalid
                .error
                .starts_with("spec.replicas: invalid type: string \"many\""),
            "{}",
            invalid.error
        );
    }

    #[test]
    fn a_field_in_a_list_is_named_with_its_index() {
        let deployment: Guarded<Deployment> = guarded(json!({
            "metadata": {"name": "web"},
            "spec": {
                "selector": {},
                "template": {"spec": {"containers": [{"name": "a"}, {"name": 7}]}},
            },
        }));
        let invalid = deployment.0.unwrap_err();
        assert!(
            invalid
                .error
                .starts_with("spec.template.spec.containers[1].name: invalid type: integer `7`"),
            "{}",
            invalid.error
        );
    }

    #[test]
    fn a_field_read_alone_is_named_under_its_place() {
        let spec = json!({"replicas": 2, "paused": "no"});
        let error = read::<k8s_openapi::api::apps::v1::DeploymentSpec>(&spec, "spec").unwrap_err();
        assert!(
            error.starts_with("spec.paused: invalid type: string \"no\", expected a boolean"),
            "{error}"
        );
        // Not a map at all: the place itself is named.
        let error = read::<k8s_openapi::api::apps::v1::DeploymentSpec>(&json!(3), "spec");
        assert!(
            error
                .unwrap_err()
                .starts_with("spec: invalid type: integer `3`")
        );
        assert_eq!(
            read::<std::collections::BTreeMap<String, i32>>(&json!({"a": 1}), "spec"),
            Ok([("a".to_owned(), 1)].into())
        );
    }

    #[test]
    fn an_object_without_readable_metadata_is_an_error() {
        let result = serde_json::from_value::<Guarded<ConfigMap>>(json!({"metadata": 3}));
        assert!(result.is_err());
    }
}
