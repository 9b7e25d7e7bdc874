#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use prometheus_client::encoding::text::encode;

#[test]
fn series_are_named_and_labelled() {
    let mut registry = Registry::default();
    let m = Metrics::new(&mut registry);
    let w = WorkshopLabels {
        namespace: "ops".into(),
        name: "ansible-101".into(),
    };
    let p = ProvisionLabels {
        namespace: "ops".into(),
        name: "rhel".into(),
    };
    m.observe(
        &w,
        &p,
        Observation {
            utilization: Some(0.85),
            count: 20,
            desired_count: 30,
            active: true,
            at_max: false,
            at_max_with_demand: false,
        },
    );
    m.scaled_up(&p);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        "ebb_workshop_scaler_workshop_utilization_ratio{controller=\"workshop-scaler\",namespace=\"ops\",name=\"ansible-101\"} 0.85",
        "ebb_workshop_scaler_provision_size{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 20",
        "ebb_workshop_scaler_provision_desired_size{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 30",
        "ebb_workshop_scaler_provision_active{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 1",
        "ebb_workshop_scaler_provision_at_max{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 0",
        "ebb_workshop_scaler_provision_at_max_with_demand{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 0",
        "ebb_workshop_scaler_scale_ups_total{controller=\"workshop-scaler\",namespace=\"ops\",name=\"rhel\"} 1",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    // `_count` is the suffix of a histogram's or summary's sample count: no gauge ends in it.
    for family in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        assert!(
            !(family.ends_with(" gauge") && family.split(' ').next().unwrap().ends_with("_count")),
            "{family}"
        );
    }
    m.forget(&p);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    assert!(!text.contains("provision_size{"), "{text}");
    // Counters survive: a scale-up happened, whatever became of the provision since.
    assert!(text.contains("scale_ups_total{"), "{text}");
}

/// A deleted provision leaves no series: its gauges and counter go, and its workshop's
/// utilization once no other provision observes that workshop.
#[test]
fn nothing_outlives_a_deleted_provision() {
    let mut registry = Registry::default();
    let m = Metrics::new(&mut registry);
    let w = |name: &str| WorkshopLabels {
        namespace: "ops".into(),
        name: name.into(),
    };
    let p = |name: &str| ProvisionLabels {
        namespace: "ops".into(),
        name: name.into(),
    };
    let seen = Observation {
        utilization: Some(0.5),
        count: 2,
        desired_count: 2,
        active: false,
        at_max: false,
        at_max_with_demand: false,
    };
    m.observe(&w("shared"), &p("a"), seen);
    m.observe(&w("shared"), &p("b"), seen);
    m.scaled_up(&p("a"));
    m.observe(&w("own"), &p("c"), seen);
    // c moves to the shared workshop: its old one has no provision left.
    m.observe(&w("shared"), &p("c"), seen);
    assert_eq!(m.rows(), (1, 3));
    m.gone(&p("a"));
    assert_eq!(
        m.rows(),
        (1, 2),
        "b and c still observe the shared workshop"
    );
    m.gone(&p("b"));
    m.gone(&p("c"));
    assert_eq!(m.rows(), (0, 0));
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    assert!(!text.contains("name=\""), "{text}");
}
