#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use serde_json::json;

#[test]
fn an_hpa_maps_to_the_cached_scaler_of_its_name() {
    let (store, mut writer) = reflector::store::<Guarded<ServiceScaler>>();
    let scaler: Guarded<ServiceScaler> = serde_json::from_value(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "web", "namespace": "a"}, "spec": {"hpa": {"maxReplicas": 2}}
    }))
    .unwrap();
    writer.apply_watcher_event(&Event::Apply(scaler));
    let hpa = |ns: &str, name: &str| -> HorizontalPodAutoscaler {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns},
            "spec": {"maxReplicas": 1, "scaleTargetRef": {"kind": "Deployment", "name": name}}}))
        .unwrap()
    };
    assert_eq!(
        scaler_of(&store, &hpa("a", "web")),
        Some(ObjectRef::new("web").within("a"))
    );
    // Not selected (another namespace, another name, or outside --label-selector): ignored.
    assert_eq!(scaler_of(&store, &hpa("b", "web")), None);
    assert_eq!(scaler_of(&store, &hpa("a", "api")), None);
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

#[test]
fn label_selector_limits_the_scalers_watched() {
    use clap::Parser;
    let cli = Cli::try_parse_from(["service-scaler", "--label-selector", "team=payments"]).unwrap();
    assert_eq!(
        watcher_config(&cli.run.common).label_selector.as_deref(),
        Some("team=payments")
    );
    let cli = Cli::try_parse_from(["service-scaler", "--dry-run"]).unwrap();
    assert!(cli.run.common.dry_run);
}
