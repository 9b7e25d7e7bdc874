#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;

fn yaml(text: &str) -> Result<ReplicasConfig, String> {
    serde_saphyr::from_str(text).map_err(|e| e.to_string())
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
    let config = json(
        r#"{"hpa": {"maxReplicas": 3, "scaleTargetRef": {"kind": "StatefulSet", "name": "x"}}}"#,
    )
    .unwrap();
    let ReplicasConfig::Hpa(hpa) = config else {
        panic!()
    };
    assert_eq!(hpa.0.scale_target_ref, Default::default());
}

#[test]
fn hpa_validation_names_the_field() {
    let err = json(r#"{"hpa": {"minReplicas": 5, "maxReplicas": 3}}"#).unwrap_err();
    assert!(
        err.contains("replicas.hpa.minReplicas (5) must not exceed replicas.hpa.maxReplicas (3)"),
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
        err.contains("replicas.auto.minReplicas (6) must not exceed replicas.auto.maxReplicas (5)"),
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
        json(r#"{"fixd": 3}"#)
            .unwrap_err()
            .contains("got the key `fixd`")
    );
    assert!(json("{}").unwrap_err().contains("an empty object"));
    let err = json(r#"{"auto": {"minReplicas": 1, "maxReplicas": 2}, "hpa": {"maxReplicas": 2}}"#)
        .unwrap_err();
    assert!(err.contains("`auto` together with `hpa`"), "{err}");
    assert!(json("[3]").is_err());
    assert!(json("null").is_err());
    assert!(json("true").is_err());
}

#[test]
fn serialization_uses_shapes_both_read() {
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
        r#"{"hpa":{"spec":{"maxReplicas":4}}}"#
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
        let text = serde_saphyr::to_string(&c).unwrap();
        prop_assert_eq!(&serde_saphyr::from_str::<ReplicasConfig>(&text).unwrap(), &c);
    }

    /// Deserializing never panics, whatever the input.
    #[test]
    fn arbitrary_json_never_panics(text in ".{0,40}") {
        let _ = serde_json::from_str::<ReplicasConfig>(&text);
    }
}

/// Every input of the PR's `replicas_config.rs` tests (stackabletech/operator-rs, branch
/// `feat/autoscale` @ 5a46dec), with the same meaning.
#[test]
fn every_input_of_the_seed_pr_s_tests_means_the_same() {
    assert_eq!(json("3").unwrap(), ReplicasConfig::Fixed(3));
    assert_eq!(json(r#"{"fixed": 5}"#).unwrap(), ReplicasConfig::Fixed(5));
    assert_eq!(
        json(r#""externallyScaled""#).unwrap(),
        ReplicasConfig::ExternallyScaled
    );
    let ReplicasConfig::Hpa(hpa) = json(r#"{"hpa": {"spec": {"maxReplicas": 10}}}"#).unwrap()
    else {
        panic!("not hpa")
    };
    assert_eq!(hpa.0.max_replicas, 10);
    assert_eq!(
        json(r#"{"auto": {"minReplicas": 2, "maxReplicas": 10}}"#).unwrap(),
        ReplicasConfig::Auto(AutoConfig {
            min_replicas: 2,
            max_replicas: 10
        })
    );
    assert_eq!(
        serde_json::from_str::<Option<ReplicasConfig>>("null").unwrap(),
        None
    );
    // What the PR's validate() refuses is refused here when read.
    for (input, message) in [
        ("0", "replicas: 0 is not allowed"),
        (r#"{"fixed": 0}"#, "replicas: 0 is not allowed"),
        (
            r#"{"auto": {"minReplicas": 0, "maxReplicas": 5}}"#,
            "replicas.auto.minReplicas: must be at least 1",
        ),
        (
            r#"{"auto": {"minReplicas": 5, "maxReplicas": 2}}"#,
            "replicas.auto.minReplicas (5) must not exceed replicas.auto.maxReplicas (2)",
        ),
    ] {
        let err = json(input).unwrap_err();
        assert!(err.contains(message), "{input}: {err}");
    }
    // As the PR: PascalCase and numeric strings are not accepted.
    assert!(json(r#""ExternallyScaled""#).is_err());
    assert!(json(r#""3""#).is_err());
}

#[test]
fn ebb_s_flat_hpa_form_is_still_read_and_the_pr_s_form_is_written() {
    let flat = json(r#"{"hpa": {"minReplicas": 2, "maxReplicas": 10}}"#).unwrap();
    let nested = json(r#"{"hpa": {"spec": {"minReplicas": 2, "maxReplicas": 10}}}"#).unwrap();
    assert_eq!(flat, nested);
    assert_eq!(
        serde_json::to_value(&flat).unwrap(),
        serde_json::json!({"hpa": {"spec": {"minReplicas": 2, "maxReplicas": 10}}})
    );
    // A fixed count stays a bare integer, which both read.
    assert_eq!(
        serde_json::to_value(ReplicasConfig::Fixed(3)).unwrap(),
        serde_json::json!(3)
    );
    let err = json(r#"{"hpa": {"spec": {"maxReplicas": 3}, "maxReplicas": 3}}"#).unwrap_err();
    assert!(
        err.contains("`hpa.spec` together with `hpa.maxReplicas`"),
        "{err}"
    );
    let err = json(r#"{"hpa": {"spec": {"minReplicas": 4, "maxReplicas": 3}}}"#).unwrap_err();
    assert!(
        err.contains("replicas.hpa.minReplicas (4) must not exceed"),
        "{err}"
    );
}
