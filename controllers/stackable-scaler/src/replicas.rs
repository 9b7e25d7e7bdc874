//! `ReplicasConfig`: how a product operator's role group says how many replicas it wants.
//!
//! One field accepts four shapes, so existing integer configs keep working:
//! ```yaml
//! replicas: 3                      # Fixed(3); 0 is rejected
//! replicas: externallyScaled       # someone else owns the replicas
//! replicas: {hpa: {maxReplicas: 10, minReplicas: 2, metrics: [...]}}   # an HPA targets the scaler
//! replicas: {auto: {minReplicas: 1, maxReplicas: 5}}                   # the operator decides
//! ```
//! Deserialization validates, and errors name the field and the rule broken.

use std::fmt;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The string form of [`ReplicasConfig::ExternallyScaled`].
pub const EXTERNALLY_SCALED: &str = "externallyScaled";

/// How many replicas a role group runs, and who decides.
// Unboxed on purpose: read once per reconcile, and `Hpa(HpaConfig)` is the shape callers match on.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ReplicasConfig {
    /// A fixed number (at least 1).
    Fixed(u16),
    /// An HPA (built by [`crate::builders::build_hpa_from_user_spec`]) scales the StackableScaler.
    Hpa(HpaConfig),
    /// The operator scales between bounds by its own rules.
    Auto(AutoConfig),
    /// Someone else sets the replicas; the operator leaves them alone.
    ExternallyScaled,
}

/// The user's HPA settings: a `HorizontalPodAutoscalerSpec` whose `scaleTargetRef` is ignored (it
/// is always the StackableScaler).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct HpaConfig(pub HorizontalPodAutoscalerSpec);

/// Bounds for [`ReplicasConfig::Auto`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoConfig {
    /// Fewest replicas (at least 1).
    pub min_replicas: u16,
    /// Most replicas (at least `minReplicas`).
    pub max_replicas: u16,
}

/// Why a [`ReplicasConfig`] is invalid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplicasConfigError {
    /// `replicas: 0`.
    #[error("replicas: 0 is not allowed (use at least 1, or `externallyScaled`)")]
    ZeroReplicas,
    /// A negative or too large integer.
    #[error("replicas: {0} is out of range (1..=65535)")]
    OutOfRange(i128),
    /// A string other than `externallyScaled`.
    #[error("replicas: unknown value {0:?} (the only string accepted is \"externallyScaled\")")]
    UnknownString(String),
    /// An object whose key is not `hpa` or `auto`, or with more than one key.
    #[error("replicas: expected exactly one of `hpa` or `auto`, got {0}")]
    UnknownShape(String),
    /// `hpa.maxReplicas` missing or below 1.
    #[error("replicas.hpa.maxReplicas: must be at least 1, got {0}")]
    HpaMaxTooSmall(i32),
    /// `hpa.minReplicas` below 1.
    #[error("replicas.hpa.minReplicas: must be at least 1, got {0}")]
    HpaMinTooSmall(i32),
    /// `hpa.minReplicas > hpa.maxReplicas`.
    #[error("replicas.hpa.minReplicas ({min}) must not exceed replicas.hpa.maxReplicas ({max})")]
    HpaMinAboveMax {
        /// minReplicas
        min: i32,
        /// maxReplicas
        max: i32,
    },
    /// `auto.minReplicas` is 0.
    #[error("replicas.auto.minReplicas: must be at least 1, got 0")]
    AutoMinZero,
    /// `auto.minReplicas > auto.maxReplicas`.
    #[error("replicas.auto.minReplicas ({min}) must not exceed replicas.auto.maxReplicas ({max})")]
    AutoMinAboveMax {
        /// minReplicas
        min: u16,
        /// maxReplicas
        max: u16,
    },
}

impl ReplicasConfig {
    /// Checks the rules the deserializer enforces (for values built in code).
    pub fn validate(&self) -> Result<(), ReplicasConfigError> {
        match self {
            ReplicasConfig::Fixed(0) => Err(ReplicasConfigError::ZeroReplicas),
            ReplicasConfig::Fixed(_) | ReplicasConfig::ExternallyScaled => Ok(()),
            ReplicasConfig::Hpa(hpa) => hpa.validate(),
            ReplicasConfig::Auto(auto) => auto.validate(),
        }
    }

    /// The replicas to start a workload with: the fixed number, the lower bound of a range, or
    /// `None` when someone else decides.
    pub fn initial_replicas(&self) -> Option<i32> {
        match self {
            ReplicasConfig::Fixed(n) => Some(i32::from(*n)),
            ReplicasConfig::Hpa(hpa) => Some(hpa.0.min_replicas.unwrap_or(1)),
            ReplicasConfig::Auto(auto) => Some(i32::from(auto.min_replicas)),
            ReplicasConfig::ExternallyScaled => None,
        }
    }

    /// Whether this config needs a StackableScaler (an HPA or the operator itself scales).
    pub fn needs_scaler(&self) -> bool {
        matches!(self, ReplicasConfig::Hpa(_) | ReplicasConfig::Auto(_))
    }
}

impl HpaConfig {
    /// `maxReplicas >= 1`, `minReplicas >= 1` when set, `minReplicas <= maxReplicas`.
    pub fn validate(&self) -> Result<(), ReplicasConfigError> {
        let spec = &self.0;
        if spec.max_replicas < 1 {
            return Err(ReplicasConfigError::HpaMaxTooSmall(spec.max_replicas));
        }
        if let Some(min) = spec.min_replicas {
            if min < 1 {
                return Err(ReplicasConfigError::HpaMinTooSmall(min));
            }
            if min > spec.max_replicas {
                return Err(ReplicasConfigError::HpaMinAboveMax {
                    min,
                    max: spec.max_replicas,
                });
            }
        }
        Ok(())
    }
}

impl AutoConfig {
    /// `1 <= minReplicas <= maxReplicas`.
    pub fn validate(&self) -> Result<(), ReplicasConfigError> {
        if self.min_replicas == 0 {
            return Err(ReplicasConfigError::AutoMinZero);
        }
        if self.min_replicas > self.max_replicas {
            return Err(ReplicasConfigError::AutoMinAboveMax {
                min: self.min_replicas,
                max: self.max_replicas,
            });
        }
        Ok(())
    }
}

impl Serialize for HpaConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `scaleTargetRef` is not the user's to set: leave it out so the value round-trips.
        let mut value = serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?;
        if let Some(map) = value.as_object_mut() {
            map.remove("scaleTargetRef");
        }
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HpaConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut spec = HorizontalPodAutoscalerSpec::deserialize(deserializer)?;
        spec.scale_target_ref = Default::default();
        Ok(HpaConfig(spec))
    }
}

impl Serialize for ReplicasConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ReplicasConfig::Fixed(n) => serializer.serialize_u16(*n),
            ReplicasConfig::ExternallyScaled => serializer.serialize_str(EXTERNALLY_SCALED),
            ReplicasConfig::Hpa(hpa) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("hpa", hpa)?;
                map.end()
            }
            ReplicasConfig::Auto(auto) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("auto", auto)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ReplicasConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ReplicasVisitor)
    }
}

struct ReplicasVisitor;

impl ReplicasVisitor {
    fn integer<E: de::Error>(value: i128) -> Result<ReplicasConfig, E> {
        match value {
            0 => Err(E::custom(ReplicasConfigError::ZeroReplicas)),
            1..=65535 => Ok(ReplicasConfig::Fixed(
                u16::try_from(value).map_err(E::custom)?,
            )),
            other => Err(E::custom(ReplicasConfigError::OutOfRange(other))),
        }
    }
}

impl<'de> Visitor<'de> for ReplicasVisitor {
    type Value = ReplicasConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a number of replicas (>= 1), \"externallyScaled\", or {hpa: {...}} / {auto: {...}}",
        )
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Self::integer(i128::from(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Self::integer(i128::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Err(E::custom(format!(
            "replicas: {value} is not a whole number"
        )))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        if value == EXTERNALLY_SCALED {
            Ok(ReplicasConfig::ExternallyScaled)
        } else {
            Err(E::custom(ReplicasConfigError::UnknownString(
                value.to_owned(),
            )))
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Err(de::Error::custom(ReplicasConfigError::UnknownShape(
                "an empty object".into(),
            )));
        };
        let config = match key.as_str() {
            "hpa" => {
                let hpa: HpaConfig = map.next_value()?;
                hpa.validate().map_err(de::Error::custom)?;
                ReplicasConfig::Hpa(hpa)
            }
            "auto" => {
                let auto: AutoConfig = map.next_value()?;
                auto.validate().map_err(de::Error::custom)?;
                ReplicasConfig::Auto(auto)
            }
            other => {
                return Err(de::Error::custom(ReplicasConfigError::UnknownShape(
                    format!("the key `{other}`"),
                )));
            }
        };
        if let Some(extra) = map.next_key::<String>()? {
            return Err(de::Error::custom(ReplicasConfigError::UnknownShape(
                format!("`{key}` together with `{extra}`"),
            )));
        }
        Ok(config)
    }
}

impl JsonSchema for ReplicasConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReplicasConfig".into()
    }

    /// An integer, a string or an object cannot be written as a structural schema; the API server
    /// keeps the value as given and the operator validates it on read (errors name the field).
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Replicas: a number (>= 1), \"externallyScaled\", {hpa: HorizontalPodAutoscalerSpec without scaleTargetRef} or {auto: {minReplicas, maxReplicas}}.",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn yaml(text: &str) -> Result<ReplicasConfig, String> {
        serde_norway::from_str(text).map_err(|e| e.to_string())
    }

    fn json(text: &str) -> Result<ReplicasConfig, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_bare_integer_is_fixed() {
        assert_eq!(yaml("3").unwrap(), ReplicasConfig::Fixed(3));
        assert_eq!(json("65535").unwrap(), ReplicasConfig::Fixed(65535));
    }

    #[test]
    fn zero_is_rejected_with_a_reason() {
        let err = yaml("0").unwrap_err();
        assert!(err.contains("replicas: 0 is not allowed"), "{err}");
        assert_eq!(
            ReplicasConfig::Fixed(0).validate(),
            Err(ReplicasConfigError::ZeroReplicas)
        );
    }

    #[test]
    fn out_of_range_and_fractional_numbers_are_rejected() {
        assert!(json("-1").unwrap_err().contains("-1 is out of range"));
        assert!(json("70000").unwrap_err().contains("70000 is out of range"));
        assert!(json("2.5").unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn the_string_externally_scaled() {
        assert_eq!(
            yaml("externallyScaled").unwrap(),
            ReplicasConfig::ExternallyScaled
        );
        let err = yaml("\"auto\"").unwrap_err();
        assert!(err.contains("unknown value \"auto\""), "{err}");
    }

    #[test]
    fn a_tagged_hpa_object() {
        let config = yaml(
            "hpa:\n  minReplicas: 2\n  maxReplicas: 10\n  metrics:\n  - type: Resource\n    resource:\n      name: cpu\n      target: {type: Utilization, averageUtilization: 70}\n",
        )
        .unwrap();
        let ReplicasConfig::Hpa(hpa) = &config else {
            panic!()
        };
        assert_eq!((hpa.0.min_replicas, hpa.0.max_replicas), (Some(2), 10));
        assert_eq!(hpa.0.metrics.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn a_user_scale_target_ref_is_dropped() {
        let config = json(r#"{"hpa": {"maxReplicas": 3, "scaleTargetRef": {"kind": "StatefulSet", "name": "x"}}}"#).unwrap();
        let ReplicasConfig::Hpa(hpa) = config else {
            panic!()
        };
        assert_eq!(hpa.0.scale_target_ref, Default::default());
    }

    #[test]
    fn hpa_validation_names_the_field() {
        let err = json(r#"{"hpa": {"minReplicas": 5, "maxReplicas": 3}}"#).unwrap_err();
        assert!(
            err.contains(
                "replicas.hpa.minReplicas (5) must not exceed replicas.hpa.maxReplicas (3)"
            ),
            "{err}"
        );
        let err = json(r#"{"hpa": {"minReplicas": 1}}"#).unwrap_err();
        assert!(
            err.contains("replicas.hpa.maxReplicas: must be at least 1, got 0"),
            "{err}"
        );
        let err = json(r#"{"hpa": {"minReplicas": 0, "maxReplicas": 3}}"#).unwrap_err();
        assert!(
            err.contains("replicas.hpa.minReplicas: must be at least 1"),
            "{err}"
        );
    }

    #[test]
    fn a_tagged_auto_object() {
        assert_eq!(
            yaml("auto: {minReplicas: 1, maxReplicas: 5}").unwrap(),
            ReplicasConfig::Auto(AutoConfig {
                min_replicas: 1,
                max_replicas: 5
            })
        );
        let err = yaml("auto: {minReplicas: 6, maxReplicas: 5}").unwrap_err();
        assert!(
            err.contains(
                "replicas.auto.minReplicas (6) must not exceed replicas.auto.maxReplicas (5)"
            ),
            "{err}"
        );
        assert!(
            yaml("auto: {minReplicas: 0, maxReplicas: 5}")
                .unwrap_err()
                .contains("replicas.auto.minReplicas")
        );
        assert!(
            yaml("auto: {minReplicas: 1, maxReplicas: 5, step: 2}")
                .unwrap_err()
                .contains("unknown field `step`")
        );
        assert!(
            yaml("auto: {maxReplicas: 5}")
                .unwrap_err()
                .contains("minReplicas")
        );
    }

    #[test]
    fn unknown_or_ambiguous_objects_are_rejected() {
        assert!(
            json(r#"{"fixed": 3}"#)
                .unwrap_err()
                .contains("got the key `fixed`")
        );
        assert!(json("{}").unwrap_err().contains("an empty object"));
        let err =
            json(r#"{"auto": {"minReplicas": 1, "maxReplicas": 2}, "hpa": {"maxReplicas": 2}}"#)
                .unwrap_err();
        assert!(err.contains("`auto` together with `hpa`"), "{err}");
        assert!(json("[3]").is_err());
        assert!(json("null").is_err());
        assert!(json("true").is_err());
    }

    #[test]
    fn serialization_uses_the_same_shapes() {
        assert_eq!(
            serde_json::to_string(&ReplicasConfig::Fixed(3)).unwrap(),
            "3"
        );
        assert_eq!(
            serde_json::to_string(&ReplicasConfig::ExternallyScaled).unwrap(),
            "\"externallyScaled\""
        );
        assert_eq!(
            serde_json::to_string(&ReplicasConfig::Auto(AutoConfig {
                min_replicas: 1,
                max_replicas: 4
            }))
            .unwrap(),
            r#"{"auto":{"minReplicas":1,"maxReplicas":4}}"#
        );
        let hpa = json(r#"{"hpa": {"maxReplicas": 4}}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&hpa).unwrap(),
            r#"{"hpa":{"maxReplicas":4}}"#
        );
    }

    #[test]
    fn initial_replicas_and_scaler_need() {
        assert_eq!(ReplicasConfig::Fixed(2).initial_replicas(), Some(2));
        assert_eq!(
            json(r#"{"hpa": {"maxReplicas": 4}}"#)
                .unwrap()
                .initial_replicas(),
            Some(1)
        );
        assert_eq!(ReplicasConfig::ExternallyScaled.initial_replicas(), None);
        assert!(
            ReplicasConfig::Auto(AutoConfig {
                min_replicas: 2,
                max_replicas: 3
            })
            .needs_scaler()
        );
        assert!(!ReplicasConfig::Fixed(2).needs_scaler());
    }

    fn config() -> impl Strategy<Value = ReplicasConfig> {
        prop_oneof![
            (1..=u16::MAX).prop_map(ReplicasConfig::Fixed),
            Just(ReplicasConfig::ExternallyScaled),
            (1..100u16, 0..100u16).prop_map(|(min, extra)| ReplicasConfig::Auto(AutoConfig {
                min_replicas: min,
                max_replicas: min.saturating_add(extra)
            })),
            (proptest::option::of(1..50i32), 0..50i32).prop_map(|(min, extra)| {
                let max = min.unwrap_or(1) + extra;
                ReplicasConfig::Hpa(HpaConfig(HorizontalPodAutoscalerSpec {
                    min_replicas: min,
                    max_replicas: max,
                    ..Default::default()
                }))
            }),
        ]
    }

    proptest! {
        /// Every valid config survives JSON and YAML round trips unchanged.
        #[test]
        fn valid_configs_round_trip(c in config()) {
            prop_assert_eq!(c.validate(), Ok(()));
            let text = serde_json::to_string(&c).unwrap();
            prop_assert_eq!(&serde_json::from_str::<ReplicasConfig>(&text).unwrap(), &c);
            let text = serde_norway::to_string(&c).unwrap();
            prop_assert_eq!(&serde_norway::from_str::<ReplicasConfig>(&text).unwrap(), &c);
        }

        /// Deserializing never panics, whatever the input.
        #[test]
        fn arbitrary_json_never_panics(text in ".{0,40}") {
            let _ = serde_json::from_str::<ReplicasConfig>(&text);
        }
    }
}
