#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use serde_json::json;

/// A cache of ServiceScalers holding `objects` as the controller's watch brings them.
fn cache(objects: Vec<serde_json::Value>) -> Scalers {
    let mut store = Scalers::default();
    let mut feed = store.scope::<CachedScaler>(Squeezed::squeeze);
    feed.fill(
        objects
            .into_iter()
            .map(|object| serde_json::from_value(object).unwrap()),
    );
    store
}

#[test]
fn an_hpa_maps_to_the_cached_scaler_of_its_name() {
    let store = cache(vec![json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "web", "namespace": "a"}, "spec": {"hpa": {"maxReplicas": 2}}
    })]);
    let hpa = |ns: &str, name: &str| -> HorizontalPodAutoscaler {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns},
            "spec": {"maxReplicas": 1, "scaleTargetRef": {"kind": "Deployment", "name": name}}}))
        .unwrap()
    };
    assert_eq!(
        scaler_of(&store, &hpa("a", "web")).as_deref(),
        Some("a/web")
    );
    // Not selected (another namespace, another name, or outside --label-selector): ignored.
    assert_eq!(scaler_of(&store, &hpa("b", "web")), None);
    assert_eq!(scaler_of(&store, &hpa("a", "api")), None);
}

/// A HolidayCalendar's change runs the ServiceScalers whose ranges exclude it, and no other: not
/// one whose other fields hold its name (here a time zone), nor one that does not fit its
/// type.
#[test]
fn a_calendar_maps_to_the_scalers_whose_ranges_exclude_it() {
    let mut scalers = Vec::new();
    let mut add = |name: &str, range: serde_json::Value| {
        scalers.push(json!({
            "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
            "metadata": {"name": name, "namespace": "a"},
            "spec": {"hpa": {"maxReplicas": 2}, "timeRangeSpec": [range]}
        }));
    };
    let range = |calendars: &[&str], zone: &str| {
        json!({"kind": "LocalTime", "from": "09:00", "to": "17:00", "timeZone": zone,
               "excludeCalendars": calendars})
    };
    add("excludes", range(&["zurich", "ch"], "Europe/Zurich"));
    add("also", range(&["zurich"], "UTC"));
    add("zone-only", range(&["ch"], "zurich"));
    add(
        "unfit",
        json!({"kind": "LocalTime", "from": 9, "excludeCalendars": ["zurich"]}),
    );
    let store = cache(scalers);
    let mut naming = scalers_naming(&store, "zurich");
    naming.sort();
    assert_eq!(naming, ["a/also", "a/excludes"]);
    assert!(scalers_naming(&store, "zur").is_empty());
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

/// A pass finds its HPA in the cache of its namespace's scope, once that cache has listed; where
/// no cache covers the namespace, or the cache has not listed within `LIST_WAIT` (30 s), it is
/// told to read by GET.
#[tokio::test(start_paused = true)]
async fn a_pass_takes_its_hpa_from_the_cache_of_its_scope_once_listed() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (store, mut writer) = reflector::store::<fleet::CachedHpa>();
    let hpa: fleet::CachedHpa = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}
    }))
    .unwrap();
    writer.apply_watcher_event(&Event::Apply(hpa));
    let listed = Arc::new(AtomicBool::new(false));
    let caches = fleet::HpaCaches(vec![fleet::HpaCache {
        scope: Some("a".into()),
        store,
        listed: listed.clone(),
    }]);
    assert_eq!(caches.get("b", "web").await, None, "no cache covers b");
    let started = tokio::time::Instant::now();
    assert_eq!(caches.get("a", "web").await, None, "not listed in time");
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(30));

    listed.store(true, Ordering::Release);
    let cached = caches.get("a", "web").await.unwrap().unwrap();
    assert_eq!(cached.spec.unwrap().max_replicas, 3);
    assert_eq!(
        caches.get("a", "api").await,
        Some(None),
        "listed, and none of that name"
    );
}
