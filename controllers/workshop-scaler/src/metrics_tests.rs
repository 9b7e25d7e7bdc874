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
