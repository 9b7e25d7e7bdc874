//! [`Packed`]: a cached object held as its metadata and the rest of it as JSON, compressed, read
//! back into its type when a pass needs it.
//!
//! A k8s-openapi or kube-derived value spends most of its bytes on room for fields it does not
//! use: an HPA's one `metrics` entry holds room for all five metric sources inline (830 bytes),
//! a ServiceScaler's two ranges 582 (docs/decisions.md, "Memory per object"). A cache of
//! thousands holds that room thousands of times, for objects a pass reads one at a time. Packed,
//! the same object is its metadata (which the reflector, the triggers and the selectors read on
//! every event) and its spec and status as the JSON they came in, LZ4-compressed (a ServiceScaler's
//! 1.1 KB of spec and status, whose keys repeat in every condition and previewed transition, keeps
//! 0.6 KB), decoded again by [`Packed::unpack`] when a pass takes the object: about a microsecond
//! to decompress and a few to decode, per pass.
//!
//! Like [`Guarded`], an object that does not fit its type is kept as its metadata and why (the
//! field named), and stalls nothing. What no pass reads goes before the object is even read into
//! its type ([`slim_json`], [`Projection::project_json`]): `managedFields`, `kubectl apply`'s
//! copy, and whatever the kind's [`Projection`] drops (an HPA's status); neither decoded nor
//! checked, such a part cannot make an object unfit.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use crate::watch::cache::{slim, slim_json};
use crate::watch::guard::{Guarded, Stored};

/// What a cache of kind `K` drops before packing: the fields no pass reads.
pub trait Projection<K>: Send + Sync + 'static {
    /// Drops from `object` what no pass reads.
    fn project(object: &mut K);

    /// Drops what [`Projection::project`] drops from the object as it arrived, before it is
    /// read into `K`: what is dropped there is neither decoded nor checked (a projection that
    /// drops a field there must drop it in `project` too). By default nothing.
    fn project_json(_object: &mut serde_json::Map<String, serde_json::Value>) {}
}

/// The whole object (what [`slim`] leaves).
#[derive(Debug)]
pub enum Whole {}

impl<K> Projection<K> for Whole {
    fn project(_: &mut K) {}
}

/// The object without its labels: for a kind whose labels no pass reads (a `--label-selector`
/// is the API server's to apply). Labels cost a cached object most of a kilobyte: a `BTreeMap`'s
/// first node has room for eleven entries (544 bytes) before any string.
#[derive(Debug)]
pub enum Unlabelled {}

impl<K: Resource> Projection<K> for Unlabelled {
    fn project(object: &mut K) {
        object.meta_mut().labels = None;
    }

    fn project_json(object: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(serde_json::Value::Object(meta)) = object.get_mut("metadata") {
            meta.remove("labels");
        }
    }
}

/// An object of kind `K`, packed: its metadata, and the rest as JSON, compressed (or, for one
/// that does not fit `K`, why). `P` drops what no pass reads before packing.
pub struct Packed<K, P = Whole> {
    meta: ObjectMeta,
    /// `K` without its metadata, as JSON compressed by LZ4 (its length first); or why the object
    /// does not fit `K`.
    body: Result<Box<[u8]>, Box<str>>,
    kind: PhantomData<fn() -> (K, P)>,
}

impl<K, P> Packed<K, P>
where
    K: Resource + Serialize + DeserializeOwned,
    P: Projection<K>,
{
    /// `object`, slimmed, projected and packed.
    pub fn pack(mut object: K) -> Self {
        slim(&mut object);
        P::project(&mut object);
        let meta = std::mem::take(object.meta_mut());
        let body = serde_json::to_vec(&object)
            .map(|json| lz4_flex::block::compress_prepend_size(&json).into_boxed_slice())
            .map_err(|error| format!("cannot be cached: {error}").into_boxed_str());
        Self {
            meta,
            body,
            kind: PhantomData,
        }
    }

    /// The object again, or why it does not fit `K` (the field named).
    ///
    /// # Errors
    /// The object did not fit `K` when it arrived.
    pub fn unpack(&self) -> Result<K, Cow<'_, str>> {
        let body = match &self.body {
            Ok(body) => body,
            Err(error) => return Err(Cow::Borrowed(error)),
        };
        let unreadable = |error: &dyn fmt::Display| {
            Cow::Owned(format!("cannot be read back from the cache: {error}"))
        };
        let json = json(body).map_err(|e| unreadable(&e))?;
        let mut object: K = serde_json::from_slice(&json).map_err(|e| unreadable(&e))?;
        *object.meta_mut() = self.meta.clone();
        Ok(object)
    }

    /// Whether the object fits `K`.
    pub fn fits(&self) -> bool {
        self.body.is_ok()
    }

    /// Whether some string field of the object, outside its metadata, may be `value`: a search
    /// of the packed JSON for `value` as a JSON string, without decoding the object. `false`
    /// means none is; `true` means one may be ([`Packed::unpack`] to know which). Asking every
    /// cached object costs a decompression and a scan of bytes each (about a microsecond), where
    /// unpacking them all costs a decode each. An object that does not fit `K` holds none.
    pub fn may_hold(&self, value: &JsonString) -> bool {
        let Ok(body) = &self.body else { return false };
        // A body that does not decompress holds nothing to find; `unpack` says why.
        json(body).is_ok_and(|json| value.finder.find(&json).is_some())
    }
}

/// A packed body's JSON.
fn json(body: &[u8]) -> Result<Vec<u8>, lz4_flex::block::DecompressError> {
    lz4_flex::block::decompress_size_prepended(body)
}

/// A string as serde_json writes it inside a packed body (quoted, escaped), prepared once to be
/// searched for in many ([`Packed::may_hold`]).
#[derive(Clone, Debug)]
pub struct JsonString {
    finder: memchr::memmem::Finder<'static>,
}

impl JsonString {
    /// Whether `json` holds the string.
    pub(crate) fn is_in(&self, json: &[u8]) -> bool {
        self.finder.find(json).is_some()
    }

    /// `value`, quoted and escaped as serde_json wrote every packed body.
    pub fn new(value: &str) -> Self {
        // Writing a `&str` cannot fail; were it to, the empty needle would match every object,
        // which a decode then sorts out.
        let quoted = serde_json::to_vec(value).unwrap_or_default();
        Self {
            finder: memchr::memmem::Finder::new(&quoted).into_owned(),
        }
    }
}

impl<K, P> Clone for Packed<K, P> {
    fn clone(&self) -> Self {
        Self {
            meta: self.meta.clone(),
            body: self.body.clone(),
            kind: PhantomData,
        }
    }
}

impl<K, P> fmt::Debug for Packed<K, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = match &self.body {
            Ok(body) => Ok(json(body).map(|json| String::from_utf8_lossy(&json).into_owned())),
            Err(error) => Err(error),
        };
        f.debug_struct("Packed")
            .field("meta", &self.meta)
            .field("body", &body)
            .finish()
    }
}

impl<'de, K, P> Deserialize<'de> for Packed<K, P>
where
    K: Resource + Serialize + DeserializeOwned,
    P: Projection<K>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // What the cache drops goes before the object is read into `K`: an object's
        // managedFields (rewritten by every write) and an HPA's status are most of what a watch
        // event brings, and reading them into `K` only to drop them was most of its decoding.
        let mut value = serde_json::Value::deserialize(deserializer)?;
        if let serde_json::Value::Object(object) = &mut value {
            slim_json(object);
            P::project_json(object);
        }
        let Guarded(object) = Guarded::<K>::from_value(&value).map_err(D::Error::custom)?;
        Ok(match object {
            Ok(object) => Self::pack(object),
            Err(invalid) => {
                let mut unfit = Self {
                    meta: invalid.metadata,
                    body: Err(invalid.error.into_boxed_str()),
                    kind: PhantomData,
                };
                slim(&mut unfit);
                unfit
            }
        })
    }
}

impl<K: Resource, P> Resource for Packed<K, P> {
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

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

impl<K, P> Stored for Packed<K, P>
where
    K: crate::watch::guard::Object + Serialize,
    P: Projection<K>,
{
    type Object = K;

    fn typed(&self) -> Result<K, Cow<'_, str>> {
        self.unpack()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use serde_json::{Value, json};

    enum NoStatus {}

    impl Projection<HorizontalPodAutoscaler> for NoStatus {
        fn project(hpa: &mut HorizontalPodAutoscaler) {
            hpa.status = None;
        }

        fn project_json(hpa: &mut serde_json::Map<String, Value>) {
            hpa.remove("status");
        }
    }

    fn hpa(min: Value) -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "web", "namespace": "shop", "resourceVersion": "7", "generation": 2,
                "labels": {"team": "payments"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                                "keep": "me"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            },
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": min, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}],
            },
            "status": {"currentReplicas": 3, "desiredReplicas": 3},
        })
    }

    /// Packed and read back, an object is what the API server sent, less what the cache drops:
    /// managedFields, kubectl's copy, and what the projection drops (here the status).
    #[test]
    fn an_object_reads_back_as_it_came_less_what_is_dropped() {
        let packed: Packed<HorizontalPodAutoscaler, NoStatus> =
            serde_json::from_value(hpa(json!(2))).unwrap();
        assert!(packed.fits());
        let mut expected: HorizontalPodAutoscaler = serde_json::from_value(hpa(json!(2))).unwrap();
        slim(&mut expected);
        expected.status = None;
        assert_eq!(packed.unpack().unwrap(), expected);
        // The metadata is at hand without unpacking, as the reflector and selectors read it.
        assert_eq!(packed.meta().name.as_deref(), Some("web"));
        assert_eq!(packed.meta().labels.as_ref().unwrap()["team"], "payments");
        assert!(packed.meta().managed_fields.is_none());
        let annotations = packed.meta().annotations.as_ref().unwrap();
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["keep"]);
        // The whole object, unprojected, keeps its status.
        let whole: Packed<HorizontalPodAutoscaler> = serde_json::from_value(hpa(json!(2))).unwrap();
        assert!(whole.unpack().unwrap().status.is_some());
        let unlabelled: Packed<HorizontalPodAutoscaler, Unlabelled> =
            serde_json::from_value(hpa(json!(2))).unwrap();
        assert!(unlabelled.meta().labels.is_none());
        assert!(unlabelled.unpack().unwrap().metadata.labels.is_none());
    }

    /// A string search of the packed JSON finds every string field's value outside the metadata,
    /// whole and escaped as it was written, and nothing a decode would not find.
    #[test]
    fn a_string_search_finds_a_fields_whole_value_outside_the_metadata() {
        let mut object = hpa(json!(2));
        object["spec"]["scaleTargetRef"]["name"] = json!("say \"hi\"");
        let packed: Packed<HorizontalPodAutoscaler, NoStatus> =
            serde_json::from_value(object).unwrap();
        let holds = |value: &str| packed.may_hold(&JsonString::new(value));
        assert!(holds("cpu"));
        assert!(holds("Deployment"));
        assert!(holds("say \"hi\""));
        // Part of a value, a value the object does not hold, the metadata's, a dropped status's.
        assert!(!holds("cp"));
        assert!(!holds("memory"));
        assert!(!holds("shop"));
        assert!(!holds("payments"));
        // One that does not fit holds none.
        let unfit: Packed<HorizontalPodAutoscaler, NoStatus> =
            serde_json::from_value(hpa(json!("two"))).unwrap();
        assert!(!unfit.may_hold(&JsonString::new("cpu")));
    }

    /// What the cache drops is dropped before the object is read into its type: neither
    /// decoded nor checked, so a part no pass reads cannot make an object unfit.
    #[test]
    fn what_the_cache_drops_is_not_read() {
        let mut object = hpa(json!(2));
        object["status"] = json!({"currentReplicas": "three"});
        object["metadata"]["managedFields"] = json!(3);
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!(4);
        let packed: Packed<HorizontalPodAutoscaler, NoStatus> =
            serde_json::from_value(object.clone()).unwrap();
        assert!(packed.fits(), "{packed:?}");
        assert_eq!(packed.unpack().unwrap().spec.unwrap().max_replicas, 10);
        // Kept whole, the status is read and its field named.
        let whole: Packed<HorizontalPodAutoscaler> = serde_json::from_value(object).unwrap();
        let error = whole.unpack().unwrap_err();
        assert!(error.starts_with("status.currentReplicas"), "{error}");
        // Labels dropped unread too.
        let mut object = hpa(json!(2));
        object["metadata"]["labels"] = json!({"team": 7});
        let unlabelled: Packed<HorizontalPodAutoscaler, Unlabelled> =
            serde_json::from_value(object).unwrap();
        assert!(unlabelled.fits());
    }

    /// One that does not fit is its metadata and why, the field named, as [`Guarded`] keeps it.
    #[test]
    fn an_object_that_does_not_fit_is_its_metadata_and_why() {
        let packed: Packed<HorizontalPodAutoscaler, NoStatus> =
            serde_json::from_value(hpa(json!("two"))).unwrap();
        assert!(!packed.fits());
        assert_eq!(packed.meta().resource_version.as_deref(), Some("7"));
        assert!(packed.meta().managed_fields.is_none());
        let error = packed.unpack().unwrap_err();
        assert!(
            error.starts_with("spec.minReplicas: invalid type: string \"two\""),
            "{error}"
        );
        assert_eq!(packed.typed().unwrap_err(), error);
    }
}
