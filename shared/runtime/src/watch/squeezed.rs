//! [`Squeezed`]: a cached object held as its resourceVersion and the whole of it, metadata
//! included, as compressed JSON: what a [`crate::watch::runner`] controller keeps of each of its
//! own objects.
//!
//! [`Packed`] keeps an object's `ObjectMeta` apart because kube's reflector `Store` and its
//! `Controller` read it: 360 bytes inline however few of its fields are set, each string a heap
//! block, a label map's first node 544 bytes, and the store's `ObjectRef` key copies the name,
//! namespace, resourceVersion and uid again. A controller whose cache is ebb's own
//! ([`crate::watch::projected::Projected`], keyed by `namespace/name`) needs none of it between
//! passes: the name is the key, and the rest goes into the compressed JSON with the spec and
//! status. Measured on the same fixtures as `tests/memory.rs`: a ServiceScaler 895 bytes against
//! 1 378 packed, an HPA without status 520 against 1 572.
//!
//! An object that does not fit `K` keeps its metadata and why (the field named), as [`Packed`]
//! does.

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::watch::packed::{JsonString, Packed, Projection};

/// An object of kind `K`, squeezed: its resourceVersion, and the object as JSON, compressed; or
/// the metadata of one that does not fit `K` and why.
pub struct Squeezed<K> {
    version: Box<str>,
    body: Result<Box<[u8]>, Box<Unfit>>,
    kind: PhantomData<fn() -> K>,
}

/// An object that does not fit its type: its metadata, and why.
#[derive(Clone, Debug)]
pub struct Unfit {
    /// Its metadata (slimmed).
    pub meta: ObjectMeta,
    /// Why it does not fit (the field named).
    pub error: String,
}

impl<K> Squeezed<K>
where
    K: Resource + Serialize + DeserializeOwned,
{
    /// `packed` (as a watch brought it: slimmed, projected), squeezed.
    pub fn squeeze<P: Projection<K>>(packed: &Packed<K, P>) -> Self {
        let meta = kube::Resource::meta(packed);
        let version = meta.resource_version.clone().unwrap_or_default().into();
        let body = packed
            .unpack()
            .map_err(|error| error.into_owned())
            .and_then(|object| {
                serde_json::to_vec(&object).map_err(|error| format!("cannot be cached: {error}"))
            })
            .map(|json| lz4_flex::block::compress_prepend_size(&json).into_boxed_slice())
            .map_err(|error| {
                Box::new(Unfit {
                    meta: meta.clone(),
                    error,
                })
            });
        Self {
            version,
            body,
            kind: PhantomData,
        }
    }

    /// The object again (its metadata included), or its metadata and why it does not fit `K`.
    ///
    /// # Errors
    /// The object did not fit `K` when it arrived.
    pub fn unsqueeze(&self) -> Result<K, Box<Unfit>> {
        let body = match &self.body {
            Ok(body) => body,
            Err(unfit) => return Err(unfit.clone()),
        };
        let json = lz4_flex::block::decompress_size_prepended(body).map_err(|e| e.to_string());
        json.and_then(|json| serde_json::from_slice(&json).map_err(|e| e.to_string()))
            .map_err(|error| {
                Box::new(Unfit {
                    meta: ObjectMeta::default(),
                    error: format!("cannot be read back from the cache: {error}"),
                })
            })
    }
}

impl<K> Squeezed<K> {
    /// The resourceVersion it was cached at.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether the object fits `K`.
    pub fn fits(&self) -> bool {
        self.body.is_ok()
    }

    /// Whether some string of the object may be `value` ([`Packed::may_hold`]; here the
    /// metadata is searched too).
    pub fn may_hold(&self, value: &JsonString) -> bool {
        let Ok(body) = &self.body else { return false };
        lz4_flex::block::decompress_size_prepended(body).is_ok_and(|json| value.is_in(&json))
    }
}

impl<K> fmt::Debug for Squeezed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Squeezed")
            .field("version", &self.version)
            .field("fits", &self.body.is_ok())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;
    use crate::watch::packed::Whole;

    #[test]
    fn the_object_comes_back_whole_with_its_metadata() {
        let map: Packed<ConfigMap, Whole> = serde_json::from_value(json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                "labels": {"tier": "web"}, "annotations": {"x": "y"},
                "managedFields": [{"manager": "kubectl"}]},
            "data": {"v": "1"},
        }))
        .unwrap();
        let squeezed = Squeezed::squeeze(&map);
        assert_eq!(squeezed.version(), "7");
        assert!(squeezed.fits());
        let back = squeezed.unsqueeze().unwrap();
        assert_eq!(back.metadata.labels.unwrap()["tier"], "web");
        assert_eq!(back.metadata.annotations.unwrap()["x"], "y");
        assert!(back.metadata.managed_fields.is_none(), "slimmed");
        assert_eq!(back.data.unwrap()["v"], "1");
        assert!(squeezed.may_hold(&JsonString::new("web")));
        assert!(!squeezed.may_hold(&JsonString::new("db")));
    }

    #[test]
    fn an_object_that_does_not_fit_keeps_its_metadata_and_why() {
        let map: Packed<ConfigMap, Whole> = serde_json::from_value(json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
            "data": {"v": 1},
        }))
        .unwrap();
        let squeezed = Squeezed::squeeze(&map);
        assert!(!squeezed.fits());
        let unfit = squeezed.unsqueeze().unwrap_err();
        assert_eq!(unfit.meta.name.as_deref(), Some("a"));
        assert!(unfit.error.contains("data.v"), "{}", unfit.error);
    }
}
