//! FleetSchedule members against an in-memory API server (`ebb_testkit::FakeApi`): a conflict
//! and a lost answer on the member's first write record the HPA's own values once, never the
//! values ebb wrote (the HPA read by GET only after the 409: before, as cached); an HPA left
//! without metrics (the server defaults cpu to 80%) is in sync; a pass over an HPA no
//! FleetSchedule concerns reads nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_runtime::watch::calendars::CalendarCache;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ebb_crds::fleet::FleetSchedule;
use ebb_runtime::execute::frame::{self, ReconcileError};
use ebb_runtime::watch::guard::Guarded;
use ebb_testkit::{Fault, Matcher};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use service_scaler::decide::{RECORD_ANNOTATION, Record};
use service_scaler::fleet::{CachedHpa, Context, FleetOwn};
use service_scaler::metrics::Metrics;

const HPA_PATH: &str = "/horizontalpodautoscalers/web";

struct Harness {
    kit: ebb_testkit::Harness,
    ctx: Arc<Context>,
}

/// A store holding `objects`, listed.
fn store<K>(objects: Vec<K>) -> Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let (reader, mut writer) = reflector::store();
    writer.apply_watcher_event(&Event::Init);
    for object in objects {
        writer.apply_watcher_event(&Event::InitApply(object));
    }
    writer.apply_watcher_event(&Event::InitDone);
    reader
}

impl Harness {
    /// HPA `shop/web` (tier web, 2..10) and, when `with_fleet`, FleetSchedule `shop/hours`
    /// whose range (08:00-12:00Z) sets minReplicas 5.
    fn new(now: &str, with_fleet: bool) -> Self {
        Self::with_others(now, with_fleet, Vec::new())
    }

    /// [`Harness::new`] with `others` in the FleetSchedules' cache beside it (stored as the
    /// fake stores them, read as the watch reads them: [`Guarded`]).
    fn with_others(now: &str, with_fleet: bool, others: Vec<Value>) -> Self {
        let kit = ebb_testkit::Harness::new(now, "service-scaler");
        let hpa = kit.fake.insert(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"tier": "web"}},
            "spec": {"minReplicas": 2, "maxReplicas": 10,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
        }));
        let fleets: Vec<Guarded<FleetSchedule>> = with_fleet
            .then(|| {
                let fleet = kit.fake.insert(json!({
                    "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
                    "metadata": {"name": "hours", "namespace": "shop",
                                 "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "spec": {"selector": {"matchLabels": {"tier": "web"}}, "leadTime": "0s",
                             "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
                                                "replicaSpec": {"hpa": {"minReplicas": 5}}}]},
                }));
                serde_json::from_value(fleet).unwrap()
            })
            .into_iter()
            .chain(others.into_iter().map(|other| {
                serde_json::from_value(kit.fake.insert(other)).unwrap()
            }))
            .collect();
        let hpas: Vec<CachedHpa> = vec![serde_json::from_value(hpa).unwrap()];
        let metrics = kit.register(Metrics::new);
        let listed = [(); 3].map(|()| Arc::new(AtomicBool::new(true)));
        let own = FleetOwn::new(
            metrics,
            (
                store(fleets),
                ebb_runtime::watch::cache::Names::default(),
                store(hpas),
            ),
            listed,
            ("ebb-system".into(), true),
            CalendarCache::default(),
        );
        let ctx = kit.context(false, own);
        Self { kit, ctx }
    }

    async fn reconcile(&self) -> Result<(), frame::Error<frame::Failure>> {
        let stored = self
            .kit
            .fake
            .get_json("autoscaling/v2", "HorizontalPodAutoscaler", "shop", "web")
            .unwrap();
        let cached: CachedHpa = serde_json::from_value(stored).unwrap();
        frame::reconcile(Arc::new(cached), self.ctx.clone())
            .await
            .map(drop)
    }

    fn hpa(&self) -> HorizontalPodAutoscaler {
        self.kit.fake.get("shop", "web").unwrap()
    }

    fn record(&self) -> Option<Record> {
        let hpa = self.hpa();
        let text = hpa.metadata.annotations?.get(RECORD_ANNOTATION)?.clone();
        Some(serde_json::from_str(&text).unwrap())
    }

    fn hpa_writes(&self) -> Vec<Option<u16>> {
        self.kit
            .fake
            .writes_matching(&Matcher::any(HPA_PATH))
            .iter()
            .map(|w| w.status)
            .collect()
    }
}

fn min(h: &Harness) -> Option<i32> {
    h.hpa().spec.unwrap().min_replicas
}

#[tokio::test]
async fn a_conflict_on_the_first_write_is_read_again_and_records_the_own_values_once() {
    let h = Harness::new("2026-05-04T09:00:00Z", true);
    h.kit.fake.fail_next(Matcher::patch(HPA_PATH), 409);
    h.reconcile().await.unwrap();
    assert_eq!(h.hpa_writes(), [Some(409), Some(200)]);
    // The first decision is on the HPA as cached; only the 409 makes the pass read it.
    let reads: Vec<String> = h.kit.fake.reads().iter().map(|r| r.path.clone()).collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert!(reads[0].ends_with(HPA_PATH), "{reads:?}");
    assert_eq!(min(&h), Some(5));
    assert_eq!(h.record().unwrap().min_replicas, Some(2));
    // In sync: the next pass writes nothing.
    h.kit.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(h.hpa_writes(), Vec::<Option<u16>>::new());
}

#[tokio::test]
async fn a_lost_answer_never_records_ebbs_own_values_as_the_hpas() {
    let h = Harness::new("2026-05-04T09:00:00Z", true);
    h.kit
        .fake
        .inject(Matcher::patch(HPA_PATH), Fault::TimeoutAfterApply, 1);
    assert_eq!(h.reconcile().await.unwrap_err().category(), "write_target");
    // The write took effect; the retry reads it, finds the record, writes nothing.
    h.kit.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(h.hpa_writes(), Vec::<Option<u16>>::new());
    assert_eq!(min(&h), Some(5));
    assert_eq!(h.record().unwrap().min_replicas, Some(2));
    // At the range's end: back to 2, the record gone, in one write.
    h.kit.clock.set(ebb_testkit::utc("2026-05-04T12:00:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(h.hpa_writes(), [Some(200)]);
    assert_eq!(min(&h), Some(2));
    assert_eq!(h.record(), None);
}

#[tokio::test]
async fn an_hpa_no_fleet_concerns_costs_no_request() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.kit.fake.clear_requests();
    h.reconcile().await.unwrap();
    let requests: Vec<Value> = h
        .kit
        .fake
        .requests()
        .iter()
        .map(|r| json!(format!("{} {}", r.method, r.path)))
        .collect();
    assert_eq!(requests, Vec::<Value>::new());
}

/// One FleetSchedule that does not decode (its selector a string, as a CRD of another ebb
/// release might store it) beside a good one: the member of the good one is scheduled all the
/// same; the bad one claims nothing.
#[tokio::test]
async fn a_fleet_schedule_that_does_not_decode_stops_no_other() {
    let bad = json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "FleetSchedule",
        "metadata": {"name": "broken", "namespace": "shop",
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"selector": "tier=web", "timeRangeSpec": "always"},
    });
    let h = Harness::with_others("2026-05-04T09:00:00Z", true, vec![bad]);
    let cached = h.ctx.own.fleets.state();
    assert_eq!(cached.len(), 2);
    assert!(
        cached.iter().any(|f| f.0.is_err()),
        "the bad one is cached as invalid"
    );
    h.reconcile().await.unwrap();
    assert_eq!(
        min(&h),
        Some(5),
        "the good FleetSchedule's range is in force"
    );
    // Its own pass (the FleetSchedules' status controller) reports it on itself, once per
    // version: a Warning Event naming the field.
    let bad = cached.iter().find(|f| f.0.is_err()).unwrap().clone();
    frame::reconcile(bad.clone(), h.ctx.clone()).await.unwrap();
    frame::reconcile(bad, h.ctx.clone()).await.unwrap();
    let events = h.kit.events.events();
    let malformed: Vec<_> = events.iter().filter(|e| e.reason == "Malformed").collect();
    assert_eq!(malformed.len(), 1, "{events:?}");
    assert_eq!(malformed[0].reference.name.as_deref(), Some("broken"));
    assert!(
        malformed[0].note.contains("spec.selector"),
        "{}",
        malformed[0].note
    );
}
