//! `ReplicasConfig`: how a product operator's role group says how many replicas it wants.
//!
//! One field accepts every shape of Stackable's PR, so existing integer configs keep working:
//! ```yaml
//! replicas: 3                      # Fixed(3); 0 is rejected
//! replicas: {fixed: 3}             # the same, tagged (the PR writes this)
//! replicas: externallyScaled       # someone else owns the replicas
//! replicas: {hpa: {spec: {maxReplicas: 10, minReplicas: 2, metrics: [...]}}}  # an HPA targets the scaler
//! replicas: {hpa: {maxReplicas: 10, minReplicas: 2}}                        # ebb's earlier form of it
//! replicas: {auto: {minReplicas: 1, maxReplicas: 5}}                        # the operator decides
//! ```
//! Deserialization validates, and errors name the field and the rule broken. A fixed count is
//! written as a bare integer (both read it) and an HPA in the PR's `{hpa: {spec: ...}}` form.

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
    /// An HPA (built by the controller's `builders::build_hpa_from_user_spec`) scales the StackableScaler.
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
    /// An object whose key is not `fixed`, `hpa` or `auto`, or with more than one key.
    #[error("replicas: expected exactly one of `fixed`, `hpa` or `auto`, got {0}")]
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
                map.serialize_entry("hpa", &HpaSpec { spec: hpa })?;
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

/// `{spec: ...}`: the PR's `HpaConfig`.
#[derive(Serialize)]
struct HpaSpec<'a> {
    spec: &'a HpaConfig,
}

/// The HPA spec under `hpa`: the PR's `{spec: {...}}`, or ebb's earlier flat form (an HPA spec
/// has no field `spec`, so the two cannot be confused).
fn hpa_spec<E: de::Error>(value: serde_json::Value) -> Result<HpaConfig, E> {
    let spec = match value {
        serde_json::Value::Object(mut fields) if fields.contains_key("spec") => {
            if let Some(other) = fields.keys().find(|k| *k != "spec") {
                return Err(E::custom(ReplicasConfigError::UnknownShape(format!(
                    "`hpa.spec` together with `hpa.{other}`"
                ))));
            }
            fields.remove("spec").unwrap_or_default()
        }
        flat => flat,
    };
    serde_json::from_value(spec).map_err(|e| E::custom(format!("replicas.hpa: {e}")))
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
            "a number of replicas (>= 1), \"externallyScaled\", or {fixed: n} / {hpa: {...}} / {auto: {...}}",
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
            "fixed" => {
                let n: i64 = map.next_value()?;
                Self::integer(i128::from(n))?
            }
            "hpa" => {
                let hpa = hpa_spec(map.next_value()?)?;
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
            "description": "Replicas: a number (>= 1) or {fixed: n}, \"externallyScaled\", {hpa: {spec: HorizontalPodAutoscalerSpec without scaleTargetRef}} (or the spec directly under hpa) or {auto: {minReplicas, maxReplicas}}.",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

#[cfg(test)]
#[path = "replicas_tests.rs"]
mod tests;
