//! The reconciler against an in-memory API server (`ebb_testkit::FakeApi`) and a manual
//! clock: the exact writes, zero writes on a no-op, the kill switch, pause, dry run, invalid
//! specs, adoption and restore, and injected faults (409, 500, lost answers) converging without
//! acting twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_crds::calendar::HolidayCalendar;
use ebb_runtime::process::cleanup::Leave;
use ebb_runtime::watch::cache::Feed;
use ebb_runtime::watch::calendars::CalendarCache;
use std::sync::Arc;
use std::time::Duration;

use ebb_crds::service_scaler::ServiceScaler;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, ReconcileError};
use ebb_runtime::find_condition;
use ebb_runtime::watch::guard::{Guarded, Stored};
use ebb_testkit::{Fault, Matcher, utc};
use jiff::SignedDuration;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::DeleteParams;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use service_scaler::CachedScaler;
use service_scaler::decide::{self, FINALIZER, MANAGED_ANNOTATION, UDAAN_FINALIZER};
use service_scaler::fleet::{CachedHpa, HpaCache, HpaCaches};
use service_scaler::ledger::Occasion;
use service_scaler::metrics::Metrics;
use service_scaler::reconcile::{Context, Error, Own};
use std::sync::atomic::AtomicBool;

const NS: &str = "shop";
const NAME: &str = "web";
const HPA_PATH: &str = "/horizontalpodautoscalers/web";
const SCALER_PATH: &str = "/servicescalers/web";

/// Defaults 2..10 at cpu 60; 08:00-12:00Z min 5 with memory 80.
fn office_spec() -> Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5, "targetMemoryUtilization": 80}}}
        ]
    })
}

fn metrics_json(cpu: Option<i32>, memory: Option<i32>) -> Value {
    let mut metrics = Vec::new();
    for (name, target) in [("cpu", cpu), ("memory", memory)] {
        if let Some(t) = target {
            metrics.push(json!({"type": "Resource", "resource": {"name": name,
                "target": {"type": "Utilization", "averageUtilization": t}}}));
        }
    }
    Value::Array(metrics)
}

struct Harness {
    kit: ebb_testkit::Harness,
    ctx: Arc<Context>,
    /// What the HolidayCalendar watch would have put in the context's cache by now: the
    /// calendars the fake holds at each reconcile.
    calendars: std::sync::Mutex<Feed<Guarded<HolidayCalendar>>>,
    /// What the HPA watch would have put in the context's cache by now (`None`: no cache, each
    /// pass reads its HPA by GET, as the cleanup does).
    hpas: Option<std::sync::Mutex<reflector::store::Writer<CachedHpa>>>,
}

impl std::ops::Deref for Harness {
    type Target = ebb_testkit::Harness;

    fn deref(&self) -> &Self::Target {
        &self.kit
    }
}

/// The frame's reconcile of service-scaler, on the ServiceScaler as the watch brought it and the
/// controller's cache keeps it (squeezed).
async fn reconcile(
    scaler: Arc<CachedScaler>,
    ctx: Arc<Context>,
) -> Result<Requeue, frame::Error<Error>> {
    let cached = ebb_runtime::watch::squeezed::Squeezed::squeeze(&scaler);
    frame::reconcile_squeezed(Arc::new(cached), ctx).await
}

/// The frame's error policy for service-scaler.
fn error_policy<S: Stored<Object = ServiceScaler>>(
    scaler: Arc<S>,
    error: &frame::Error<Error>,
    ctx: Arc<Context>,
) -> Requeue {
    frame::error_policy(&*scaler, error, &ctx)
}

impl Harness {
    /// A pass reads its HPA from a cache the harness fills from the fake before each reconcile.
    fn new(now: &str, dry_run: bool) -> Self {
        Self::with_cache(now, dry_run, true)
    }

    /// [`Harness::new`]; without `cached`, every pass reads its HPA by GET.
    fn with_cache(now: &str, dry_run: bool, cached: bool) -> Self {
        let kit = ebb_testkit::Harness::new(now, "service-scaler");
        let metrics = kit.register(Metrics::new);
        let (calendars, feed) = CalendarCache::fed();
        let ledger = Some(decide::ledger::ledger_target(LEDGER_NS, "service-scaler"));
        let (store, writer) = reflector::store();
        let hpas = match cached {
            true => HpaCaches(vec![HpaCache {
                scope: None,
                store,
                listed: Arc::new(AtomicBool::new(true)),
            }]),
            false => HpaCaches::default(),
        };
        let ctx = kit.context(
            dry_run,
            Own {
                metrics,
                calendars,
                ledger,
                hpas,
            },
        );
        Self {
            kit,
            ctx,
            calendars: std::sync::Mutex::new(feed),
            hpas: cached.then(|| std::sync::Mutex::new(writer)),
        }
    }

    /// The HPA cache as a watch would hold it now: every HPA the fake stores, packed without
    /// status.
    fn fill_hpas(&self) {
        let Some(writer) = &self.hpas else { return };
        let mut writer = writer.lock().unwrap();
        writer.apply_watcher_event(&Event::Init);
        for hpa in self.fake.list::<CachedHpa>() {
            writer.apply_watcher_event(&Event::InitApply(hpa));
        }
        writer.apply_watcher_event(&Event::InitDone);
    }

    fn scaler(&self, spec: Value) -> ServiceScaler {
        self.scaler_with(spec, json!({}))
    }

    fn scaler_with(&self, spec: Value, metadata: Value) -> ServiceScaler {
        let mut meta = json!({"name": NAME, "namespace": NS});
        for (k, v) in metadata.as_object().unwrap() {
            meta[k] = v.clone();
        }
        let stored = self.fake.insert(json!({
            "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
            "metadata": meta, "spec": spec,
        }));
        serde_json::from_value(stored).unwrap()
    }

    /// An HPA as a user (or ebb, when `owner` is given) created it.
    fn hpa(
        &self,
        min: i32,
        max: i32,
        cpu: Option<i32>,
        memory: Option<i32>,
        owner: Option<&ServiceScaler>,
        annotations: Value,
    ) {
        let owners: Vec<Value> = owner
            .map(|s| {
                vec![
                    json!({"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
                "name": NAME, "uid": s.uid().unwrap(), "controller": true}),
                ]
            })
            .unwrap_or_default();
        self.fake.insert(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": NAME, "namespace": NS, "annotations": annotations,
                         "ownerReferences": owners},
            "spec": {"minReplicas": min, "maxReplicas": max, "metrics": metrics_json(cpu, memory),
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                     "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}},
        }));
    }

    async fn reconcile(&self) -> Result<Requeue, frame::Error<Error>> {
        self.calendars
            .lock()
            .unwrap()
            .fill(self.fake.list::<Guarded<HolidayCalendar>>());
        self.fill_hpas();
        let stored = self
            .fake
            .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
            .unwrap_or_else(|| {
                json!({
                    "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
                    "metadata": {"name": NAME, "namespace": NS}, "spec": {"hpa": {"maxReplicas": 1}}
                })
            });
        // As the controller's cache holds it: packed, or (a status udaan wrote in its own
        // format) as its metadata and why, which the frame hands to `malformed`.
        let cached: CachedScaler = serde_json::from_value(stored).unwrap();
        reconcile(Arc::new(cached), self.ctx.clone()).await
    }

    fn stored_hpa(&self) -> Option<HorizontalPodAutoscaler> {
        self.fake.get(NS, NAME)
    }

    fn stored_scaler(&self) -> Option<ServiceScaler> {
        self.fake.get(NS, NAME)
    }

    fn hpa_writes(&self) -> Vec<ebb_testkit::RecordedRequest> {
        self.fake
            .writes_matching(&Matcher::any(HPA_PATH))
            .into_iter()
            .chain(
                self.fake
                    .writes_matching(&Matcher::post("/horizontalpodautoscalers")),
            )
            .collect()
    }

    fn successful_hpa_writes(&self) -> usize {
        self.hpa_writes().iter().filter(|r| r.succeeded()).count()
    }

    fn condition(&self, type_: &str) -> (String, String, String) {
        let s = self.stored_scaler().unwrap();
        let c = find_condition(&s.status.as_ref().unwrap().conditions, type_)
            .unwrap()
            .clone();
        (c.status, c.reason, c.message)
    }
}

fn hpa_settings(hpa: &HorizontalPodAutoscaler) -> (i32, i32, Value) {
    let spec = hpa.spec.as_ref().unwrap();
    (
        spec.min_replicas.unwrap(),
        spec.max_replicas,
        serde_json::to_value(spec.metrics.clone().unwrap_or_default()).unwrap(),
    )
}

#[tokio::test]
async fn creates_the_missing_hpa_owned_by_the_scaler_then_a_second_reconcile_writes_nothing() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());

    let action = h.reconcile().await.unwrap();
    // Requeued for the boundary at 12:00Z, capped at the one-hour safety net.
    assert_eq!(action, Requeue::After(Duration::from_secs(3600)));

    let hpa = h.stored_hpa().unwrap();
    assert_eq!(
        hpa_settings(&hpa),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    let spec = hpa.spec.as_ref().unwrap();
    assert_eq!(
        (
            spec.scale_target_ref.kind.as_str(),
            spec.scale_target_ref.name.as_str()
        ),
        ("Deployment", NAME)
    );
    let owner = &hpa.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("ServiceScaler", scaler.uid().unwrap().as_str(), Some(true))
    );

    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert_eq!(writes[0].method.as_str(), "POST");
    assert_eq!(
        writes[0].query_param("fieldManager"),
        Some("ebb-service-scaler")
    );
    assert!(writes[1].path.ends_with("/servicescalers/web/status"));

    let status = h.stored_scaler().unwrap().status.unwrap();
    assert_eq!(status.matched_range, Some(0));
    assert!(status.time_range_match);
    assert_eq!(status.last_known_config.as_ref().unwrap().min_replicas, 5);
    assert_eq!(status.last_observed_generation, Some(1));
    assert_eq!(status.next_transitions.len(), 5);
    assert!(
        h.stored_scaler().unwrap().finalizers().is_empty(),
        "an owned HPA needs no finalizer"
    );
    assert_eq!(h.events.reasons(), ["Created"]);

    // No-op: nothing written, nothing recorded.
    h.fake.clear_requests();
    h.events.clear();
    h.clock.advance(SignedDuration::from_mins(30));
    h.reconcile().await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:#?}", h.fake.writes());
    assert!(h.events.events().is_empty());

    let text = h.metrics_text();
    for line in [
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"active\"} 1",
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"create\"} 1",
        "ebb_service_scaler_reconciles_total{controller=\"service-scaler\"} 2",
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
}

#[tokio::test]
async fn a_boundary_applies_exactly_the_owned_fields_with_server_side_apply() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.reconcile().await.unwrap();
    h.fake.clear_requests();
    h.events.clear();

    // Requeued exactly at the boundary: the window closes at 12:00:00Z.
    h.clock.set(utc("2026-05-04T11:59:59Z"));
    assert_eq!(
        h.reconcile().await.unwrap(),
        Requeue::After(Duration::from_secs(1))
    );
    assert_eq!(h.fake.write_count(), 0);
    h.clock.set(utc("2026-05-04T12:00:00Z"));
    h.reconcile().await.unwrap();

    // Issue 46: the edge reads nothing (the HPA comes from the process's cache of HPAs), writes
    // the HPA once and the status once, and records one Event.
    assert_eq!(h.fake.reads(), [], "the HPA is read from the cache");
    let writes = h.hpa_writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(h.fake.write_count(), 2, "{:#?}", h.fake.writes());
    let apply = &writes[0];
    assert_eq!(apply.method.as_str(), "PATCH");
    assert_eq!(apply.patch, Some(ebb_testkit::PatchKind::Apply));
    assert_eq!(
        apply.query_param("fieldManager"),
        Some("ebb-service-scaler")
    );
    assert_eq!(apply.query_param("force"), Some("true"));
    assert_eq!(
        apply.body.as_ref().unwrap(),
        // The metrics list is atomic under server-side apply: the write is preconditioned on
        // the HPA as read, so a metric someone added meanwhile cannot be dropped; and on its uid,
        // so an HPA deleted meanwhile is not made again by the apply.
        &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": NAME, "resourceVersion": "2",
                             "uid": h.stored_hpa().unwrap().uid()},
                "spec": {"minReplicas": 2, "maxReplicas": 10, "metrics": metrics_json(Some(60), None)}})
    );
    let hpa = h.stored_hpa().unwrap();
    assert_eq!(hpa_settings(&hpa), (2, 10, metrics_json(Some(60), None)));
    // Fields ebb does not own are untouched.
    assert!(hpa.spec.as_ref().unwrap().behavior.is_some());
    let status = h.stored_scaler().unwrap().status.unwrap();
    assert_eq!(
        (status.matched_range, status.time_range_match),
        (None, false)
    );
    assert_eq!(
        ebb_runtime::from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T12:00:00Z")
    );
    assert_eq!(h.events.reasons(), ["Updated"]);
    assert!(
        h.events.events()[0].note.contains("minReplicas 5 -> 2"),
        "{:?}",
        h.events.events()
    );
}

#[tokio::test]
async fn kill_switch_on_the_hpa_means_zero_writes_to_it() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    h.hpa(9, 9, None, None, None, json!({MANAGED_ANNOTATION: "false"}));
    h.reconcile().await.unwrap();
    h.clock.set(utc("2026-05-04T12:00:00Z"));
    h.reconcile().await.unwrap();

    assert!(h.hpa_writes().is_empty(), "{:#?}", h.hpa_writes());
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()), (9, 9, json!([])));
    let (status, reason, message) = h.condition("Unmanaged");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "KillSwitch"));
    assert!(message.contains(MANAGED_ANNOTATION));
    assert_eq!(h.condition("Ready").1, "Unmanaged");
    assert!(h.stored_scaler().unwrap().finalizers().is_empty());

    // Removing the annotation hands the HPA back.
    h.fake.modify_json(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        NS,
        NAME,
        |hpa| {
            hpa["metadata"]["annotations"] = json!({});
        },
    );
    h.reconcile().await.unwrap();
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (2, 10, metrics_json(Some(60), None))
    );
    assert_eq!(h.condition("Unmanaged").0, "False");
}

#[tokio::test]
async fn conflict_on_the_hpa_is_read_again_and_converges_in_one_reconcile() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake.fail_next(Matcher::patch(HPA_PATH), 409);
    h.reconcile().await.unwrap();
    let writes = h.hpa_writes();
    assert_eq!(
        writes.iter().map(|w| w.status).collect::<Vec<_>>(),
        [Some(409), Some(200)]
    );
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
    assert_eq!(h.events.reasons(), ["Updated"]);
}

#[tokio::test]
async fn conflicts_on_every_pass_fail_the_reconcile_and_back_off() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake.inject(
        Matcher::patch(HPA_PATH),
        Fault::Status(409),
        frame::MAX_ATTEMPTS,
    );
    let error = h.reconcile().await.unwrap_err();
    assert!(matches!(error, frame::Error::Conflicts { .. }), "{error}");
    assert_eq!(error.category(), "conflict");
    assert!(error.is_transient());
    assert_eq!(h.hpa_writes().len(), frame::MAX_ATTEMPTS);
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);
    let guard = Arc::new(Guarded(Ok(h.stored_scaler().unwrap())));
    assert_eq!(
        error_policy(guard, &error, h.ctx.clone()),
        Requeue::After(Duration::from_secs(1))
    );

    h.reconcile().await.unwrap();
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
}

#[tokio::test]
async fn a_follower_writes_nothing_and_looks_again() {
    let kit = ebb_testkit::Harness::new("2026-05-04T09:00:00Z", "service-scaler");
    let metrics = kit.register(Metrics::new);
    let (calendars, feed) = CalendarCache::fed();
    let ctx = Arc::new(Context::new(
        kit.shared_with(false, ebb_runtime::Leader::following()),
        Own {
            metrics,
            calendars,
            ledger: None,
            hpas: HpaCaches::default(),
        },
    ));
    let h = Harness {
        kit,
        ctx,
        calendars: std::sync::Mutex::new(feed),
        hpas: None,
    };
    h.scaler(office_spec());
    assert_eq!(
        h.reconcile().await.unwrap(),
        Requeue::AwaitChange,
        "a standby sets no timer: it reconciles everything when it starts to lead"
    );
    assert_eq!(h.fake.write_count(), 0);
    assert!(h.stored_hpa().is_none());
}

#[tokio::test]
async fn server_error_fails_the_reconcile_and_the_retry_converges() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake.fail_next(Matcher::patch(HPA_PATH), 500);
    let error = h.reconcile().await.unwrap_err();
    assert_eq!(error.category(), "write_target");
    assert!(error.is_transient());
    // Backoff, not "wait for a change".
    let guard = Arc::new(Guarded(Ok(h.stored_scaler().unwrap())));
    assert_eq!(
        error_policy(guard.clone(), &error, h.ctx.clone()),
        Requeue::After(Duration::from_secs(1))
    );
    assert_eq!(
        error_policy(guard, &error, h.ctx.clone()),
        Requeue::After(Duration::from_secs(2)),
        "doubles per consecutive failure"
    );
    assert_eq!(
        h.stored_scaler().unwrap().status,
        None,
        "nothing but the failed write happened"
    );

    h.reconcile().await.unwrap();
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
    assert_eq!(h.successful_hpa_writes(), 1);
    assert!(
        h.metrics_text()
            .contains("ebb_service_scaler_reconcile_errors_total{controller=\"service-scaler\",category=\"write_target\"} 1")
    );
}

#[tokio::test]
async fn status_conflict_and_a_lost_answer_never_write_the_hpa_twice() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake
        .fail_next(Matcher::patch("/servicescalers/web/status"), 409);
    h.reconcile().await.unwrap();
    assert_eq!(h.successful_hpa_writes(), 1);
    assert_eq!(
        h.stored_scaler().unwrap().status.unwrap().matched_range,
        Some(0)
    );
    assert_eq!(h.events.reasons(), ["Updated"]);

    // The answer of an apply is lost (it took effect): the retry finds the HPA in sync.
    h.fake.clear_requests();
    h.events.clear();
    h.clock.set(utc("2026-05-04T12:00:00Z"));
    h.fake
        .inject(Matcher::patch(HPA_PATH), Fault::TimeoutAfterApply, 1);
    assert_eq!(h.reconcile().await.unwrap_err().category(), "write_target");
    h.reconcile().await.unwrap();
    assert_eq!(h.hpa_writes().len(), 1, "{:#?}", h.hpa_writes());
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);
    assert_eq!(
        h.stored_scaler().unwrap().status.unwrap().matched_range,
        None
    );
}

#[tokio::test]
async fn create_racing_another_creator_is_read_again() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    // Someone creates the HPA between our read and our create.
    h.fake.before_next(Matcher::post("/horizontalpodautoscalers"), |fake| {
        fake.insert(json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"minReplicas": 1, "maxReplicas": 3,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}},
        }));
    });
    h.reconcile().await.unwrap();
    let hpa = h.stored_hpa().unwrap();
    assert_eq!(
        hpa_settings(&hpa),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    // Adopted, so its target stays and the scaler holds the restore finalizer.
    assert_eq!(hpa.spec.unwrap().scale_target_ref.name, "other");
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);
}

#[tokio::test]
async fn restart_mid_window_writes_the_range_settings_once() {
    // A fresh controller (no status) at 10:17, inside the 08:00-12:00 range, finds the HPA at
    // the defaults.
    let h = Harness::new("2026-05-04T10:17:23Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    h.clock.advance(SignedDuration::from_secs(1));
    h.reconcile().await.unwrap();
    assert_eq!(h.successful_hpa_writes(), 1);
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    let status_writes = h.fake.writes_matching(&Matcher::patch("/status"));
    assert_eq!(status_writes.len(), 1);
}

#[tokio::test]
async fn invalid_spec_is_reported_and_the_hpa_left_as_it_was() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let mut spec = office_spec();
    spec["timeRangeSpec"][0]["to"] = json!("12:60Z");
    h.scaler(spec);
    h.hpa(3, 3, None, None, None, json!({}));
    let error = h.reconcile().await.unwrap_err();
    assert_eq!(error.category(), "invalid");
    assert!(!error.is_transient());
    let guard = Arc::new(Guarded(Ok(h.stored_scaler().unwrap())));
    assert_eq!(
        error_policy(guard, &error, h.ctx.clone()),
        Requeue::AwaitChange
    );

    assert!(h.hpa_writes().is_empty());
    let (status, reason, message) = h.condition("SpecValid");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidSpec"));
    assert!(
        message.starts_with("spec.timeRangeSpec[0].to: invalid time of day \"12:60Z\""),
        "{message}"
    );
    assert_eq!(h.events.reasons(), ["InvalidSpec"]);

    // Again: no write, no second Event.
    h.fake.clear_requests();
    h.reconcile().await.unwrap_err();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events.reasons(), ["InvalidSpec"]);
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"invalid\"} 1"
    ));
}

/// A range naming a HolidayCalendar that does not exist: the HPA is left as it was, `SpecValid`
/// and a Warning Event name the entry. Created later (as the calendars' watch brings it), it
/// takes effect at the next pass: Monday 4 May is a holiday, so the office range is not in force
/// and the HPA gets the defaults; edited to another day, the range is back.
#[tokio::test]
async fn a_missing_holiday_calendar_leaves_the_hpa_until_it_is_created() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let mut spec = office_spec();
    spec["timeRangeSpec"][0]["excludeCalendars"] = json!(["may"]);
    h.scaler(spec);
    h.hpa(3, 3, None, None, None, json!({}));
    let error = h.reconcile().await.unwrap_err();
    assert_eq!(error.category(), "invalid");
    assert!(h.hpa_writes().is_empty());
    let (status, reason, message) = h.condition("SpecValid");
    assert_eq!(
        (status.as_str(), reason.as_str(), message.as_str()),
        (
            "False",
            "InvalidSpec",
            "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"may\" not found"
        )
    );
    assert_eq!(h.events.reasons(), ["InvalidSpec"]);

    h.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "may"}, "spec": {"dates": ["2026-05-04"]},
    }));
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("SpecValid").0, "True");
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);

    h.fake.modify_json(
        "scaling.ebb.dev/v1alpha1",
        "HolidayCalendar",
        "",
        "may",
        |c| c["spec"]["dates"] = json!(["2026-05-05"]),
    );
    h.reconcile().await.unwrap();
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
}

/// One HolidayCalendar that does not decode beside a good one: the scaler naming the good one
/// flips on time (Monday 4 May is a holiday: the office range is out, the HPA gets the
/// defaults); named by the scaler, the bad one is an invalid spec saying which field of it does
/// not fit, and the HPA is left as it was.
#[tokio::test]
async fn a_calendar_that_does_not_decode_stops_only_the_objects_naming_it() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "may"}, "spec": {"dates": ["2026-05-04"]},
    }));
    h.fake.insert(json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
        "metadata": {"name": "broken"}, "spec": {"dates": 20260504},
    }));
    let mut spec = office_spec();
    spec["timeRangeSpec"][0]["excludeCalendars"] = json!(["may"]);
    h.scaler(spec.clone());
    h.hpa(3, 3, None, None, None, json!({}));
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("SpecValid").0, "True");
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);

    spec["timeRangeSpec"][0]["excludeCalendars"] = json!(["broken"]);
    h.scaler(spec);
    h.fake.clear_requests();
    let error = h.reconcile().await.unwrap_err();
    assert_eq!(error.category(), "invalid");
    assert!(h.hpa_writes().is_empty());
    let (status, _, message) = h.condition("SpecValid");
    assert_eq!(status, "False");
    assert!(
        message.starts_with(
            "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"broken\": spec.dates: invalid type"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn paused_scaler_gets_only_the_paused_condition() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler_with(
        office_spec(),
        json!({"annotations": {"scaling.ebb.dev/paused-until": "2026-05-04T09:30:00Z"}}),
    );
    h.hpa(2, 10, Some(60), None, None, json!({}));
    let action = h.reconcile().await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(1800)));
    assert!(h.hpa_writes().is_empty());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        writes[0].body.as_ref().unwrap()["status"]["conditions"][0]["type"],
        "Paused"
    );
    assert_eq!(h.condition("Paused").0, "True");
    assert!(
        h.stored_scaler().unwrap().finalizers().is_empty(),
        "no writes but the condition"
    );

    // The pause expires by itself.
    h.clock.set(utc("2026-05-04T09:30:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
    assert_eq!(h.condition("Paused").0, "False");
}

#[tokio::test]
async fn paused_hpa_gets_no_write_until_its_pause_expires() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    // A user's HPA at the defaults; 09:00 is inside the office range (min 5).
    h.hpa(
        2,
        10,
        Some(60),
        None,
        None,
        json!({"scaling.ebb.dev/paused-until": "2026-05-04T09:30:00Z"}),
    );
    let action = h.reconcile().await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(1800)));
    assert!(h.hpa_writes().is_empty(), "{:?}", h.hpa_writes());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 1, "the Paused condition only: {writes:?}");
    assert!(writes[0].path.ends_with("/servicescalers/web/status"));
    let (status, reason, message) = h.condition("Paused");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Paused"));
    assert_eq!(
        message,
        "HorizontalPodAutoscaler shop/web: paused until 2026-05-04T09:30:00Z by annotation \
         scaling.ebb.dev/paused-until"
    );
    assert_eq!(h.events.reasons(), ["Paused"]);
    assert!(
        h.stored_scaler().unwrap().finalizers().is_empty(),
        "not adopted while paused"
    );
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"paused\"} 1"
    ));

    // Still paused a minute later: nothing written, no second Event.
    h.fake.clear_requests();
    h.clock.set(utc("2026-05-04T09:01:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events.reasons(), ["Paused"]);

    // At paused-until the writes resume.
    h.clock.set(utc("2026-05-04T09:30:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    assert_eq!(h.successful_hpa_writes(), 1);
    assert_eq!(h.condition("Paused").0, "False");
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);
}

#[tokio::test]
async fn hpa_paused_indefinitely_or_with_a_bad_instant_waits_for_the_annotation_to_change() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    h.hpa(
        2,
        10,
        Some(60),
        None,
        None,
        json!({"scaling.ebb.dev/paused-until": "tomorrow"}),
    );
    assert_eq!(h.reconcile().await.unwrap(), Requeue::AwaitChange);
    assert!(h.hpa_writes().is_empty());
    let (status, reason, _) = h.condition("Paused");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InvalidPausedUntil")
    );

    // Fixed to an indefinite pause: the message changes, still no HPA write.
    h.fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
        hpa.metadata.annotations =
            Some([("scaling.ebb.dev/paused".to_owned(), "true".to_owned())].into());
    });
    assert_eq!(h.reconcile().await.unwrap(), Requeue::AwaitChange);
    assert!(h.hpa_writes().is_empty());
    assert_eq!(
        h.condition("Paused").2,
        "HorizontalPodAutoscaler shop/web: paused by annotation scaling.ebb.dev/paused"
    );

    // The annotation removed (the HPA watch brings this reconcile): writes resume.
    h.fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
        hpa.metadata.annotations = None;
    });
    h.reconcile().await.unwrap();
    assert_eq!(h.successful_hpa_writes(), 1);
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 5);
    assert_eq!(h.condition("Paused").0, "False");
}

#[tokio::test]
async fn dry_run_records_the_intended_change_and_writes_only_status() {
    let h = Harness::new("2026-05-04T09:00:00Z", true);
    h.scaler(office_spec());
    h.reconcile().await.unwrap();
    assert!(h.stored_hpa().is_none());
    assert!(h.hpa_writes().is_empty());
    let (status, reason, message) = h.condition("Ready");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "DryRun"));
    assert!(
        message.starts_with("dry run: would have created HPA shop/web for Deployment web"),
        "{message}"
    );
    assert_eq!(h.events.reasons(), ["DryRun"]);
    assert_eq!(h.fake.write_count(), 1, "status only");

    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(h.fake.write_count(), 0);
    assert_eq!(h.events.reasons(), ["DryRun"]);
}

#[tokio::test]
async fn adopted_hpa_is_restored_to_the_defaults_when_its_scaler_is_deleted() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    // A user's HPA with settings of its own.
    h.hpa(7, 12, Some(90), None, None, json!({}));
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    assert!(
        h.stored_hpa().unwrap().owner_references().is_empty(),
        "adopted, not owned"
    );

    let scalers: Api<ServiceScaler> = Api::namespaced(h.fake.client(), NS);
    scalers
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        h.stored_scaler()
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    h.fake.clear_requests();
    h.events.clear();
    assert_eq!(h.reconcile().await.unwrap(), Requeue::AwaitChange);

    // Restored to spec.hpa (not the user's old values: ebb does not keep those), finalizer gone,
    // object gone.
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (2, 10, metrics_json(Some(60), None))
    );
    assert!(h.stored_scaler().is_none());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert!(writes[0].path.ends_with(HPA_PATH));
    assert!(writes[1].path.ends_with(SCALER_PATH));
    assert_eq!(h.events.reasons(), ["Restored"]);
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"restore\"} 1"
    ));
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_managed_objects{controller=\"service-scaler\",state=\"active\"} 0"
    ));
}

/// The finalizer is what guarantees an adopted HPA is restored: it is on the scaler before the
/// first write to the HPA, and when it cannot be written the HPA is not touched. (Found by the
/// end-to-end suite: a scaler deleted between the two writes left the HPA at the range's values.)
#[tokio::test]
async fn finalizer_is_written_before_the_first_write_to_an_adopted_hpa() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    h.hpa(7, 12, Some(90), None, None, json!({}));
    h.fake.fail_next(Matcher::patch(SCALER_PATH), 500);
    assert!(h.reconcile().await.is_err());
    assert_eq!(h.successful_hpa_writes(), 0, "{:#?}", h.fake.writes());
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 7);

    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    let order: Vec<String> = h
        .fake
        .writes()
        .into_iter()
        .filter(|w| w.succeeded() && !w.path.ends_with("/status"))
        .map(|w| w.path)
        .collect();
    assert_eq!(order.len(), 2, "{order:#?}");
    assert!(order[0].ends_with(SCALER_PATH), "{order:#?}");
    assert!(order[1].ends_with(HPA_PATH), "{order:#?}");
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);
}

#[tokio::test]
async fn a_created_hpa_needs_no_finalizer_and_a_stale_one_is_removed() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler_with(office_spec(), json!({"finalizers": [FINALIZER]}));
    h.reconcile().await.unwrap();
    assert!(h.stored_hpa().is_some());
    assert!(h.stored_scaler().unwrap().finalizers().is_empty());
}

#[tokio::test]
async fn finalizer_conflict_is_read_again() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    h.hpa(5, 10, Some(60), Some(80), None, json!({}));
    // Another actor changes the scaler's labels between our read and our finalizer patch.
    h.fake.before_next(Matcher::patch(SCALER_PATH), |fake| {
        fake.modify_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME, |s| {
            s["metadata"]["labels"] = json!({"team": "a"});
        });
    });
    h.reconcile().await.unwrap();
    let finalizer_writes: Vec<_> = h
        .fake
        .writes_matching(&Matcher::patch(SCALER_PATH))
        .into_iter()
        .filter(|w| !w.path.ends_with("/status"))
        .map(|w| w.status)
        .collect();
    assert_eq!(finalizer_writes, [Some(409), Some(200)]);
    let stored = h.stored_scaler().unwrap();
    assert_eq!(stored.finalizers(), [FINALIZER]);
    assert_eq!(stored.labels().get("team").map(String::as_str), Some("a"));
}

#[tokio::test]
async fn udaans_unreadable_status_is_rewritten() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.fake.insert(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": office_spec(),
        "status": {"lastKnownConfig": {"minReplicas": 4, "maxReplicas": 8},
                   "lastObservedGeneration": 1, "lastUpdatedTime": "2024-01-19T11:40Z+0530",
                   "timeRangeMatch": false},
    }));
    // The controller's watch delivers it as an invalid object (its metadata and why).
    let raw = h
        .fake
        .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
        .unwrap();
    let guard: CachedScaler = serde_json::from_value(raw).unwrap();
    assert!(!guard.fits());
    reconcile(Arc::new(guard), h.ctx.clone()).await.unwrap();
    let status = h.stored_scaler().unwrap().status.unwrap();
    assert_eq!(status.last_known_config.unwrap().min_replicas, 5);
    assert_eq!(
        ebb_runtime::from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T09:00:00Z")
    );
}

#[tokio::test]
async fn unreadable_spec_is_reported_without_touching_anything_else() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.fake.insert(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {"hpa": {"minReplicas": "four", "maxReplicas": 8}},
    }));
    h.hpa(3, 3, None, None, None, json!({}));
    let raw = h
        .fake
        .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
        .unwrap();
    let guard: CachedScaler = serde_json::from_value(raw).unwrap();
    let error = reconcile(Arc::new(guard), h.ctx.clone()).await.unwrap_err();
    assert_eq!(error.category(), "invalid");
    assert!(h.hpa_writes().is_empty());
    let stored = h
        .fake
        .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
        .unwrap();
    let conditions = &stored["status"]["conditions"];
    assert_eq!(conditions[0]["type"], "SpecValid");
    let message = conditions[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("spec.hpa.minReplicas: invalid type: string \"four\""),
        "{message}"
    );
}

#[tokio::test]
async fn ramp_steps_are_written_one_per_requeue() {
    // The workshop ends at 16:00Z: minReplicas 12 -> 2 is ramped down over 10m.
    let h = Harness::new("2026-12-03T15:30:00Z", false);
    let scaler = h.scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    h.hpa(12, 40, Some(70), None, Some(&scaler), json!({}));
    assert_eq!(
        h.reconcile().await.unwrap(),
        Requeue::After(Duration::from_secs(1800))
    );
    let boundary = utc("2026-12-03T16:00:00Z");
    let mut mins = Vec::new();
    for minute in 0..10 {
        h.clock.set(boundary + SignedDuration::from_mins(minute));
        let action = h.reconcile().await.unwrap();
        if minute < 9 {
            assert_eq!(
                action,
                Requeue::After(Duration::from_secs(60)),
                "minute {minute}"
            );
        }
        let hpa = h.stored_hpa().unwrap();
        assert_eq!(
            hpa.spec.as_ref().unwrap().max_replicas,
            20,
            "max changes at once"
        );
        mins.push(hpa_settings(&hpa).0);
    }
    assert_eq!(mins, (2..=11).rev().collect::<Vec<_>>());
    assert_eq!(h.successful_hpa_writes(), 10);
    let status = h.stored_scaler().unwrap().status.unwrap();
    assert_eq!(status.ramp, None);
    assert_eq!(status.last_known_config.unwrap().min_replicas, 2);
}

#[tokio::test]
async fn lead_steps_the_hpa_up_before_the_boundary_and_requeues_at_each_step() {
    // The workshop starts at 07:30Z: 2..20 -> 12..40, stepped up from 07:00 (default 30m lead).
    let h = Harness::new("2026-12-03T06:50:00Z", false);
    let scaler = h.scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    h.hpa(2, 20, Some(70), None, Some(&scaler), json!({}));
    // In sync; woken when the lead opens, before the boundary.
    assert_eq!(
        h.reconcile().await.unwrap(),
        Requeue::After(Duration::from_secs(600))
    );
    assert_eq!(h.successful_hpa_writes(), 0);
    let mut seen = Vec::new();
    let mut now = utc("2026-12-03T07:00:00Z");
    while now < utc("2026-12-03T07:30:00Z") {
        h.clock.set(now);
        let action = h.reconcile().await.unwrap();
        // The next lead step (the last one wakes at the boundary).
        assert_eq!(action, Requeue::After(Duration::from_secs(300)), "at {now}");
        let (min, max, _) = hpa_settings(&h.stored_hpa().unwrap());
        seen.push((min, max));
        now += SignedDuration::from_mins(5);
    }
    assert_eq!(
        seen,
        [(4, 24), (6, 27), (7, 30), (9, 34), (11, 37), (12, 40)]
    );
    assert_eq!(h.successful_hpa_writes(), 6);
    let first = &h.hpa_writes()[0];
    assert_eq!(
        first.body.as_ref().unwrap()["spec"],
        json!({"minReplicas": 4, "maxReplicas": 24, "metrics": metrics_json(Some(70), None)})
    );
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"lead\"} 6"
    ));
    // At the boundary the HPA already has the new values: no write, no ramp.
    h.clock.set(utc("2026-12-03T07:30:00Z"));
    assert_eq!(
        h.reconcile().await.unwrap(),
        Requeue::After(Duration::from_secs(3600))
    );
    assert_eq!(h.successful_hpa_writes(), 6);
    let status = h.stored_scaler().unwrap().status.unwrap();
    assert_eq!((status.matched_range, status.ramp), (Some(0), None));
    assert_eq!(
        ebb_runtime::from_k8s_time(&status.next_transitions[0].at),
        utc("2026-12-03T16:00:00Z")
    );
}

// ------------------------------------------------------------------------------------------------
// Deletion policy and udaan's finalizer

/// `office_spec()` with `deletionPolicy`.
fn office_with_policy(policy: &str) -> Value {
    let mut spec = office_spec();
    spec["deletionPolicy"] = json!(policy);
    spec
}

impl Harness {
    /// Deletes the ServiceScaler (it stays, with a deletionTimestamp, while it has finalizers)
    /// and forgets the requests and Events so far.
    async fn delete_scaler(&self) {
        let scalers: Api<ServiceScaler> = Api::namespaced(self.fake.client(), NS);
        scalers
            .delete(NAME, &DeleteParams::default())
            .await
            .unwrap();
        self.fake.clear_requests();
        self.events.clear();
    }
}

#[tokio::test]
async fn deletion_policy_delete_deletes_an_adopted_hpa() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Delete"));
    h.hpa(7, 12, Some(90), None, None, json!({}));
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);
    let uid = h.stored_hpa().unwrap().uid().unwrap();

    h.delete_scaler().await;
    assert_eq!(h.reconcile().await.unwrap(), Requeue::AwaitChange);
    assert!(h.stored_hpa().is_none());
    assert!(h.stored_scaler().is_none());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert_eq!(writes[0].method.as_str(), "DELETE");
    assert!(writes[0].path.ends_with(HPA_PATH));
    // Never a successor of the same name: the uid read is a precondition.
    assert_eq!(
        writes[0].body.as_ref().unwrap()["preconditions"]["uid"],
        json!(uid)
    );
    assert!(writes[1].path.ends_with(SCALER_PATH));
    assert_eq!(h.events.reasons(), ["Deleted"]);
}

#[tokio::test]
async fn default_policy_deletes_an_hpa_udaan_created() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_spec());
    h.hpa(
        7,
        12,
        Some(90),
        None,
        None,
        json!({MANAGED_ANNOTATION: "true"}),
    );
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);

    h.delete_scaler().await;
    h.reconcile().await.unwrap();
    assert!(h.stored_hpa().is_none());
    assert!(h.stored_scaler().is_none());
    assert_eq!(h.events.reasons(), ["Deleted"]);
}

#[tokio::test]
async fn deletion_policy_restore_disowns_and_restores_an_hpa_ebb_created() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Restore"));
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_hpa().unwrap().owner_references().len(), 1);
    // Seeing the HPA it owns, with a policy the garbage collector cannot carry out: finalizer.
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);

    h.delete_scaler().await;
    h.reconcile().await.unwrap();
    let hpa = h.stored_hpa().unwrap();
    assert!(hpa.owner_references().is_empty(), "disowned, so kept");
    assert_eq!(hpa_settings(&hpa), (2, 10, metrics_json(Some(60), None)));
    assert!(h.stored_scaler().is_none());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 3, "{writes:#?}");
    // The owner reference goes first, with the HPA's resourceVersion as precondition.
    assert!(writes[0].path.ends_with(HPA_PATH));
    let disown = &writes[0].body.as_ref().unwrap()["metadata"];
    assert_eq!(disown["ownerReferences"], Value::Null);
    assert!(disown["resourceVersion"].is_string());
    assert!(writes[1].path.ends_with(HPA_PATH));
    assert!(writes[2].path.ends_with(SCALER_PATH));
    assert_eq!(h.events.reasons(), ["Restored"]);
}

#[tokio::test]
async fn deletion_policy_orphan_drops_the_owner_reference_and_keeps_the_settings() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Orphan"));
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    assert_eq!(h.stored_scaler().unwrap().finalizers(), [FINALIZER]);

    h.delete_scaler().await;
    h.reconcile().await.unwrap();
    let hpa = h.stored_hpa().unwrap();
    assert!(hpa.owner_references().is_empty());
    assert_eq!(
        hpa_settings(&hpa),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
    assert!(h.stored_scaler().is_none());
    assert_eq!(h.fake.writes().len(), 2);
    assert_eq!(h.events.reasons(), ["Orphaned"]);
}

#[tokio::test]
async fn deletion_policy_orphan_leaves_an_adopted_hpa_without_a_finalizer() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Orphan"));
    h.hpa(7, 12, Some(90), None, None, json!({}));
    h.reconcile().await.unwrap();
    assert!(h.stored_scaler().unwrap().finalizers().is_empty());
    h.delete_scaler().await;
    assert!(h.stored_scaler().is_none(), "nothing held it");
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
}

#[tokio::test]
async fn a_scaler_stuck_on_udaans_finalizer_is_cleaned_up_and_released() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    // Left by udaan: its finalizer, its HPA; deleted after udaan was stopped.
    h.scaler_with(office_spec(), json!({"finalizers": [UDAAN_FINALIZER]}));
    h.hpa(
        4,
        8,
        Some(50),
        None,
        None,
        json!({MANAGED_ANNOTATION: "true"}),
    );
    h.delete_scaler().await;
    assert!(
        h.stored_scaler()
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    h.reconcile().await.unwrap();
    // What udaan's finalizer stood for: the HPA udaan created goes, then the finalizer.
    assert!(h.stored_hpa().is_none());
    assert!(h.stored_scaler().is_none());
    assert_eq!(h.events.reasons(), ["Deleted"]);

    // With deletionPolicy Restore the HPA stays, at the defaults.
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler_with(
        office_with_policy("Restore"),
        json!({"finalizers": [UDAAN_FINALIZER, "example.com/other"]}),
    );
    h.hpa(
        4,
        8,
        Some(50),
        None,
        None,
        json!({MANAGED_ANNOTATION: "true"}),
    );
    h.delete_scaler().await;
    h.reconcile().await.unwrap();
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()),
        (2, 10, metrics_json(Some(60), None))
    );
    // Someone else's finalizer stays.
    assert_eq!(
        h.stored_scaler().unwrap().finalizers(),
        ["example.com/other"]
    );
}

#[tokio::test]
async fn deletion_conflicts_and_lost_answers_converge_without_acting_twice() {
    // A 409 on dropping the owner reference: read again, then disown and restore once.
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Restore"));
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    h.delete_scaler().await;
    h.fake.fail_next(Matcher::patch(HPA_PATH), 409);
    h.reconcile().await.unwrap();
    let statuses: Vec<_> = h.hpa_writes().iter().map(|w| w.status).collect();
    assert_eq!(statuses, [Some(409), Some(200), Some(200)]);
    let hpa = h.stored_hpa().unwrap();
    assert!(hpa.owner_references().is_empty());
    assert_eq!(hpa_settings(&hpa), (2, 10, metrics_json(Some(60), None)));
    assert!(h.stored_scaler().is_none());
    assert_eq!(h.events.reasons(), ["Restored"]);

    // The answer to the delete is lost: the retry finds the HPA gone and only lets go.
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    h.scaler(office_with_policy("Delete"));
    h.hpa(7, 12, Some(90), None, None, json!({}));
    h.reconcile().await.unwrap();
    h.delete_scaler().await;
    h.fake
        .inject(Matcher::delete(HPA_PATH), Fault::TimeoutAfterApply, 1);
    assert!(h.reconcile().await.is_err());
    assert!(h.stored_hpa().is_none());
    assert!(h.stored_scaler().is_some(), "still held by the finalizer");
    h.reconcile().await.unwrap();
    assert!(h.stored_scaler().is_none());
    let deletes = h.fake.writes_matching(&Matcher::delete(HPA_PATH));
    assert_eq!(deletes.len(), 1, "{deletes:#?}");
}

#[tokio::test]
async fn a_write_carrying_an_external_metric_is_preconditioned_and_keeps_it() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
        hpa.spec.as_mut().unwrap().metrics.as_mut().unwrap().push(
            serde_json::from_value(json!({"type": "External", "external": {
                    "metric": {"name": "queue_depth"},
                    "target": {"type": "AverageValue", "averageValue": "30"}}}))
            .unwrap(),
        );
    });
    h.reconcile().await.unwrap();
    h.fake.clear_requests();
    let read = h.stored_hpa().unwrap().resource_version().unwrap();
    h.clock.set(utc("2026-05-04T12:00:00Z"));
    h.reconcile().await.unwrap();
    let writes = h.hpa_writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    let body = writes[0].body.as_ref().unwrap();
    assert_eq!(body["metadata"]["resourceVersion"], json!(read));
    let metrics = &hpa_settings(&h.stored_hpa().unwrap()).2;
    assert_eq!(metrics.as_array().unwrap().len(), 2, "{metrics}");
    assert_eq!(metrics[1]["external"]["metric"]["name"], "queue_depth");

    // A version that moved meanwhile is a 409: read again, decide again, nothing dropped.
    h.fake.fail_next(Matcher::patch(HPA_PATH), 409);
    h.clock.set(utc("2026-05-05T08:00:00Z"));
    h.reconcile().await.unwrap();
    let statuses: Vec<_> = h.hpa_writes().iter().map(|w| w.status).collect();
    assert_eq!(statuses.last(), Some(&Some(200)));
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap())
            .2
            .as_array()
            .unwrap()
            .len(),
        3,
        "cpu, memory and queue_depth"
    );
}

#[tokio::test]
async fn an_off_hours_queue_depth_target_is_written_to_the_metric_already_on_the_hpa() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let mut spec = office_spec();
    spec["hpa"]["metricTargets"] = json!([{"name": "queue_depth", "averageValue": "100"}]);
    spec["timeRangeSpec"][0]["replicaSpec"]["hpa"]["metricTargets"] =
        json!([{"name": "queue_depth", "averageValue": "30"}]);
    let scaler = h.scaler(spec);
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
        hpa.spec.as_mut().unwrap().metrics.as_mut().unwrap().push(
            serde_json::from_value(json!({"type": "External", "external": {
                    "metric": {"name": "queue_depth"},
                    "target": {"type": "AverageValue", "averageValue": "100"}}}))
            .unwrap(),
        );
    });
    // By day: 30.
    h.reconcile().await.unwrap();
    let queue = |h: &Harness| {
        let metrics = hpa_settings(&h.stored_hpa().unwrap()).2;
        let external = metrics
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["type"] == "External");
        external.unwrap()["external"]["target"].clone()
    };
    assert_eq!(
        queue(&h),
        json!({"type": "AverageValue", "averageValue": "30"})
    );
    let writes = h.hpa_writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert!(writes[0].body.as_ref().unwrap()["metadata"]["resourceVersion"].is_string());
    // Off-hours: 100 again.
    h.clock.set(utc("2026-05-04T12:00:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(
        queue(&h),
        json!({"type": "AverageValue", "averageValue": "100"})
    );
    assert!(
        h.events.events().iter().any(|e| e
            .note
            .contains("queue_depth AverageValue 30 -> AverageValue 100")),
        "{:?}",
        h.events.events()
    );
}

/// The flags of `service-scaler cleanup` (after the subcommand), as the binary parses them.
fn cleanup_flags(argv: &[&str]) -> service_scaler::RunArgs {
    let about = ebb_runtime::cli::About {
        name: "service-scaler",
        about: "",
        plan: "",
    };
    let argv = ["service-scaler", "cleanup"].iter().chain(argv);
    match about
        .parse_from::<service_scaler::RunArgs, service_scaler::plan::PlanArgs, _, _>(argv)
        .unwrap()
        .command
    {
        Some(ebb_runtime::cli::Command::Cleanup(args)) => args.run,
        other => panic!("not cleanup: {other:?}"),
    }
}

/// `service-scaler cleanup --keep-settings`: only the finalizers go (ebb's and udaan's, which
/// ebb stands in for), from the ServiceScalers this install manages; the HPA keeps the range in
/// force, other installs' scalers are untouched; a dry run and a second run write nothing.
#[tokio::test]
async fn cleanup_keeping_the_settings_removes_only_the_finalizers() {
    let h = Harness::new("2026-03-27T10:00:00Z", false);
    let scaler = h.scaler_with(
        office_spec(),
        json!({"finalizers": [FINALIZER, UDAAN_FINALIZER], "labels": {"install": "a"}}),
    );
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.fake.insert(json!({
        "apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
        "metadata": {"name": "other", "namespace": NS, "finalizers": [FINALIZER],
                     "labels": {"install": "b"}},
        "spec": office_spec(),
    }));
    let flags = || cleanup_flags(&["--label-selector", "install=a"]);
    let before = h.fake.writes().len();

    let said = service_scaler::clean(h.shared(true), flags(), Leave::Settings)
        .await
        .unwrap();
    assert_eq!(
        said,
        [format!(
            "ServiceScaler {NS}/{NAME}: settings kept in force; dry run: would have removed its finalizers"
        )]
    );
    assert_eq!(h.fake.writes().len(), before);

    let done = service_scaler::clean(h.shared(false), flags(), Leave::Settings)
        .await
        .unwrap();
    assert_eq!(
        done,
        [format!(
            "ServiceScaler {NS}/{NAME}: settings kept in force; removed its finalizers"
        )]
    );
    assert!(h.stored_scaler().unwrap().finalizers().is_empty());
    assert_eq!(
        hpa_settings(&h.stored_hpa().unwrap()).0,
        5,
        "the range's minimum stays"
    );
    let other: ServiceScaler = h.fake.get(NS, "other").unwrap();
    assert_eq!(other.finalizers(), [FINALIZER]);
    assert_eq!(
        h.fake.writes().len(),
        before + 1,
        "one write: the finalizers"
    );

    let again = service_scaler::clean(h.shared(false), flags(), Leave::Settings)
        .await
        .unwrap();
    assert_eq!(
        again,
        [format!("ServiceScaler {NS}/{NAME}: nothing to give back")]
    );
    assert_eq!(h.fake.writes().len(), before + 1);
}

/// `service-scaler cleanup` (the default, as `helm uninstall` runs it): what ebb put in force
/// is given back. A workload hibernated at 0 gets its recorded replicas, the HPA its defaults
/// (not the range in force), a fleet member its own values (the record goes), and the
/// finalizers go; the ServiceScaler stays. A second run gives back nothing more.
#[tokio::test]
async fn cleanup_gives_back_the_hibernated_workload_the_hpa_defaults_and_fleet_members() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(3);
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0, "hibernating");
    assert!(
        h.stored_scaler()
            .unwrap()
            .finalizers()
            .contains(&FINALIZER.to_owned())
    );
    // A fleet member whose FleetSchedule set 4..8 over its own 1..3 (gone since).
    let record = json!({"minReplicas": 1, "maxReplicas": 3, "metrics": []}).to_string();
    h.fake.insert(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "member", "namespace": NS, "annotations": {
            "scaling.ebb.dev/fleet": format!("{NS}/nightly"),
            "scaling.ebb.dev/fleet-record": record}},
        "spec": {"minReplicas": 4, "maxReplicas": 8,
                 "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "member"}},
    }));

    let done = service_scaler::clean(h.shared(false), cleanup_flags(&[]), Leave::Nothing)
        .await
        .unwrap();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(
        done[0].starts_with(&format!("ServiceScaler {NS}/{NAME}: Deployment {NS}/{NAME} scaled 0 -> 3: service-scaler is uninstalled")),
        "{done:?}"
    );
    assert!(done[0].ends_with("removed its finalizers"), "{done:?}");
    assert!(
        done[1].starts_with(&format!(
            "HorizontalPodAutoscaler {NS}/member (fleet member): "
        )),
        "{done:?}"
    );
    assert_eq!(h.replicas(), 3);
    let scaler = h.stored_scaler().unwrap();
    assert!(scaler.finalizers().is_empty());
    let hpa = h.stored_hpa().unwrap();
    assert_eq!(hpa_settings(&hpa).0, 2, "the defaults' minimum");
    let member: HorizontalPodAutoscaler = h.fake.get(NS, "member").unwrap();
    let spec = member.spec.clone().unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(1), 3));
    assert!(
        !member
            .annotations()
            .keys()
            .any(|k| k.starts_with("scaling.ebb.dev/")),
        "{:?}",
        member.annotations()
    );

    let writes = h.fake.writes().len();
    let again = service_scaler::clean(h.shared(false), cleanup_flags(&[]), Leave::Nothing)
        .await
        .unwrap();
    assert_eq!(
        again,
        [format!("ServiceScaler {NS}/{NAME}: nothing to give back")]
    );
    assert_eq!(h.fake.writes().len(), writes, "nothing more to give back");
}

/// Another actor adds a metric to the HPA between ebb's read and its write: the write, carrying
/// the resourceVersion read, is refused; ebb reads again and writes once more, keeping the metric.
#[tokio::test]
async fn a_metric_added_between_read_and_write_is_kept() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake.before_next(Matcher::patch(HPA_PATH), |fake| {
        fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
            let metrics = hpa.spec.as_mut().unwrap().metrics.get_or_insert_default();
            metrics.push(
                serde_json::from_value(json!({"type": "External", "external": {
                    "metric": {"name": "queue_depth"},
                    "target": {"type": "AverageValue", "averageValue": "30"}}}))
                .unwrap(),
            );
        });
    });
    h.reconcile().await.unwrap();
    let statuses: Vec<Option<u16>> = h.hpa_writes().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(409), Some(200)]);
    let (min, max, metrics) = hpa_settings(&h.stored_hpa().unwrap());
    assert_eq!((min, max), (5, 10));
    let types: Vec<&str> = metrics
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Resource", "Resource", "External"], "{metrics}");
}

/// Without a cache of HPAs (the cleanup's passes), the same edge reads the HPA by GET; with one,
/// a cache that lags the server (the HPA changed since) costs a 409 and one GET, never a write
/// decided on the stale copy.
#[tokio::test]
async fn the_hpa_is_read_by_get_without_a_cache_and_after_a_stale_one() {
    let h = Harness::with_cache("2026-05-04T12:00:00Z", false, false);
    let scaler = h.scaler(office_spec());
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.reconcile().await.unwrap();
    let gets: Vec<String> = h.fake.reads().iter().map(|r| r.path.clone()).collect();
    assert!(gets.iter().any(|p| p.ends_with(HPA_PATH)), "{gets:?}");
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);

    let h = Harness::new("2026-05-04T12:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(5, 10, Some(60), Some(80), Some(&scaler), json!({}));
    h.fill_hpas();
    // Someone raises maxReplicas after the cache saw the HPA; the cache has not seen it yet.
    h.fake.modify::<HorizontalPodAutoscaler>(NS, NAME, |hpa| {
        hpa.spec.as_mut().unwrap().max_replicas = 12;
    });
    let cached: CachedScaler = serde_json::from_value(
        h.fake
            .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
            .unwrap(),
    )
    .unwrap();
    reconcile(Arc::new(cached), h.ctx.clone()).await.unwrap();
    let statuses: Vec<Option<u16>> = h.hpa_writes().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [Some(409), Some(200)],
        "decided again on the HPA as read"
    );
    let gets: Vec<String> = h.fake.reads().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        gets.iter().filter(|p| p.ends_with(HPA_PATH)).count(),
        1,
        "{gets:?}"
    );
    assert_eq!(hpa_settings(&h.stored_hpa().unwrap()).0, 2);
}

/// The HPA is deleted between ebb's read and its write: server-side apply would make it again
/// from the owned fields alone. The write names the uid read, so it is refused; ebb reads again
/// and creates a whole HPA, owned by the scaler, once.
#[tokio::test]
async fn an_hpa_deleted_between_read_and_write_is_created_whole_once() {
    let h = Harness::new("2026-05-04T09:00:00Z", false);
    let scaler = h.scaler(office_spec());
    h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
    h.fake.before_next(Matcher::patch(HPA_PATH), |fake| {
        fake.remove::<HorizontalPodAutoscaler>(NS, NAME);
    });
    h.reconcile().await.unwrap();
    let writes: Vec<(String, Option<u16>)> = h
        .hpa_writes()
        .iter()
        .map(|r| (r.method.to_string(), r.status))
        .collect();
    assert_eq!(
        writes,
        [("PATCH".into(), Some(409)), ("POST".into(), Some(201))]
    );
    let hpa = h.stored_hpa().unwrap();
    assert_eq!(hpa.spec.as_ref().unwrap().scale_target_ref.name, NAME);
    assert_eq!(hpa.owner_references()[0].uid, scaler.uid().unwrap());
    assert_eq!(
        hpa_settings(&hpa),
        (5, 10, metrics_json(Some(60), Some(80)))
    );
}

// ----- the fault matrix -------------------------------------------------------------------------

/// Every API call of a scaler meeting its trigger fails in turn with each fault of
/// `ebb_testkit::matrix::FAULTS`; the run must end where the clean one did (the HPA written once
/// to the same settings, the scaler's status and finalizers alike), and the table of what happened
/// is `docs/faults/<file>.md`. `setup` prepares the world before the trigger (unrecorded).
async fn fault_matrix(file: &str, scenario: &str, setup: impl AsyncFn(&Harness)) {
    fault_matrix_of(
        file,
        scenario,
        "2026-05-04T09:00:00Z",
        &[
            ("autoscaling/v2", "HorizontalPodAutoscaler", NS, NAME),
            ("scaler.udaan.io/v1", "ServiceScaler", NS, NAME),
        ],
        setup,
    )
    .await;
}

/// [`fault_matrix`] at `now`, comparing `objects`.
async fn fault_matrix_of(
    file: &str,
    scenario: &str,
    now: &str,
    objects: &[(&str, &str, &str, &str)],
    setup: impl AsyncFn(&Harness),
) {
    use ebb_testkit::matrix;
    let rows = matrix::fault_matrix(
        scenario,
        async || {
            // Every read is a GET here, so the table shows each read's faults too.
            let h = Harness::with_cache(now, false, false);
            setup(&h).await;
            let fake = h.fake.clone();
            (h, fake)
        },
        async |h: &Harness, trace: &mut matrix::Trace| {
            let read = || h.stored_scaler();
            matrix::settle(&h.fake, &h.ctx, read, trace).await;
        },
        |h: &Harness| matrix::snapshot(&h.fake, objects),
    )
    .await;
    matrix::check_doc(file, scenario, &rows);
}

#[tokio::test]
async fn fault_matrix_a_range_starting_on_an_owned_hpa() {
    fault_matrix(
        "service-scaler-boundary",
        "service-scaler: a time range starts, its settings are applied to the HPA ebb created",
        async |h: &Harness| {
            let scaler = h.scaler(office_spec());
            h.hpa(2, 10, Some(60), None, Some(&scaler), json!({}));
        },
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_creating_the_missing_hpa() {
    fault_matrix(
        "service-scaler-create",
        "service-scaler: a new scaler without an HPA creates one, owned by the scaler",
        async |h: &Harness| {
            h.scaler(office_spec());
        },
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_adopting_a_users_hpa() {
    fault_matrix(
        "service-scaler-adopt",
        "service-scaler: a user's HPA is adopted: the finalizer first, then the range's settings",
        async |h: &Harness| {
            h.scaler(office_spec());
            h.hpa(7, 12, Some(90), None, None, json!({}));
        },
    )
    .await;
}

#[tokio::test]
async fn fault_matrix_deleting_a_scaler_restores_its_adopted_hpa() {
    fault_matrix(
        "service-scaler-delete",
        "service-scaler: a scaler that adopted an HPA is deleted: the HPA is restored to \
         `spec.hpa`, then the finalizer removed",
        async |h: &Harness| {
            h.scaler(office_spec());
            h.hpa(7, 12, Some(90), None, None, json!({}));
            h.reconcile().await.unwrap();
            let scalers: Api<ServiceScaler> = Api::namespaced(h.fake.client(), NS);
            scalers
                .delete(NAME, &DeleteParams::default())
                .await
                .unwrap();
        },
    )
    .await;
}

// ----- hibernation ------------------------------------------------------------------------------

const DEPLOYMENT_PATH: &str = "/deployments/web";
/// The release namespace: the hibernation ledger's.
const LEDGER_NS: &str = "ebb";

/// Defaults 2..10; 20:00-06:00Z hibernates; `leadTime` 30m.
fn nightly_spec() -> Value {
    json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "leadTime": "30m",
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
             "replicaSpec": {"hibernate": true}}
        ]
    })
}

impl Harness {
    /// The Deployment `web` hibernation scales, and the install's (empty) hibernation ledger.
    fn deployment(&self, replicas: i32) {
        if self
            .fake
            .get_json("v1", "ConfigMap", LEDGER_NS, "service-scaler-hibernation")
            .is_none()
        {
            self.fake.insert(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "service-scaler-hibernation", "namespace": LEDGER_NS},
            }));
        }
        self.fake.insert(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"app": NAME}},
                     "template": {"metadata": {"labels": {"app": NAME}},
                                  "spec": {"containers": [{"name": "app", "image": "app"}]}}},
        }));
    }

    fn replicas(&self) -> i64 {
        self.fake
            .get_json("apps/v1", "Deployment", NS, NAME)
            .unwrap()["spec"]["replicas"]
            .as_i64()
            .unwrap()
    }

    fn recorded(&self) -> Option<i32> {
        self.stored_scaler()?
            .status?
            .hibernation
            .map(|h| h.replicas)
    }

    /// Someone else sets the Deployment's replicas.
    fn scale_by_hand(&self, replicas: i32) {
        let mut deployment = self
            .fake
            .get_json("apps/v1", "Deployment", NS, NAME)
            .unwrap();
        deployment["spec"]["replicas"] = json!(replicas);
        self.fake.insert(deployment);
    }
}

#[tokio::test]
async fn a_hibernating_range_records_then_scales_to_zero_and_the_lead_wakes_it() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(3);

    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    assert_eq!(h.recorded(), Some(3));
    // The finalizer (deleting the scaler must wake the Deployment), then the HPA, the record,
    // the scale write; the closing status last.
    let writes: Vec<String> = h
        .fake
        .writes()
        .iter()
        .map(|w| format!("{} {}", w.method, w.path.rsplit("/shop/").next().unwrap()))
        .collect();
    assert_eq!(
        writes,
        [
            "PATCH servicescalers/web",
            "POST horizontalpodautoscalers",
            "PATCH servicescalers/web/status",
            "PATCH /api/v1/namespaces/ebb/configmaps/service-scaler-hibernation",
            "PATCH deployments/web/scale",
            "PATCH servicescalers/web/status",
        ],
    );
    assert!(
        h.stored_scaler()
            .unwrap()
            .finalizers()
            .contains(&FINALIZER.to_owned())
    );
    assert_eq!(h.events.reasons(), ["Created", "Hibernated"]);
    let (ready, _, message) = h.condition("Ready");
    assert_eq!(ready, "True");
    assert!(
        message.contains("Deployment shop/web hibernating, 3 replicas to return to"),
        "{message}"
    );
    assert!(h.metrics_text().contains(
        "ebb_service_scaler_transitions_total{controller=\"service-scaler\",reason=\"hibernate\"} 1"
    ));

    // A no-op pass writes nothing.
    h.fake.clear_requests();
    h.clock.advance(SignedDuration::from_mins(30));
    h.reconcile().await.unwrap();
    assert_eq!(h.fake.write_count(), 0, "{:#?}", h.fake.writes());

    // Scaled up by hand mid-hibernation: back to 0, the first count kept.
    h.scale_by_hand(5);
    h.reconcile().await.unwrap();
    assert_eq!((h.replicas(), h.recorded()), (0, Some(3)));

    // 05:30Z, leadTime ahead of the range's end: awake with its 3 replicas, the record gone.
    h.clock.set(utc("2026-05-05T05:29:59Z"));
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    h.clock.set(utc("2026-05-05T05:30:00Z"));
    h.events.clear();
    h.reconcile().await.unwrap();
    assert_eq!((h.replicas(), h.recorded()), (3, None));
    assert_eq!(h.events.reasons(), ["Woke"]);
    assert!(
        h.stored_scaler().unwrap().finalizers().is_empty(),
        "the finalizer went with the hibernation"
    );
}

#[tokio::test]
async fn a_pass_that_dies_after_the_record_resumes_from_it_without_counting_zero() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(4);
    // The process dies (or loses its answer) at the scale write, after the record.
    h.fake
        .inject(Matcher::patch(DEPLOYMENT_PATH), Fault::Timeout, 1);
    assert!(h.reconcile().await.is_err());
    assert_eq!((h.replicas(), h.recorded()), (4, Some(4)));
    // A new pass (or a new process: everything it needs is in the API) finishes the job.
    h.reconcile().await.unwrap();
    assert_eq!((h.replicas(), h.recorded()), (0, Some(4)));
    // The scale write took effect but its answer was lost: the next pass finds it at 0 and
    // keeps the count it recorded.
    h.scale_by_hand(6);
    h.fake
        .inject(Matcher::patch(DEPLOYMENT_PATH), Fault::TimeoutAfterApply, 1);
    assert!(h.reconcile().await.is_err());
    h.reconcile().await.unwrap();
    assert_eq!((h.replicas(), h.recorded()), (0, Some(4)));
    // Waking: the scale write's answer is lost; the next pass finds it awake, drops the record
    // and writes the Deployment no more.
    h.clock.set(utc("2026-05-05T06:00:00Z"));
    h.fake
        .inject(Matcher::patch(DEPLOYMENT_PATH), Fault::TimeoutAfterApply, 1);
    assert!(h.reconcile().await.is_err());
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!((h.replicas(), h.recorded()), (4, None));
    assert!(
        h.fake
            .writes_matching(&Matcher::any(DEPLOYMENT_PATH))
            .is_empty()
    );
}

#[tokio::test]
async fn deleting_the_scaler_mid_hibernation_wakes_the_deployment() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(3);
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    let api: Api<ServiceScaler> = Api::namespaced(h.fake.client(), NS);
    api.delete(NAME, &DeleteParams::default()).await.unwrap();
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 3);
    assert!(
        h.stored_scaler().is_none(),
        "the finalizer went after the wake"
    );
}

impl Harness {
    /// The hibernation ledger's entry of the test's ServiceScaler.
    fn ledger_entry(&self) -> Option<decide::ledger::LedgerEntry> {
        let map = self
            .fake
            .get_json("v1", "ConfigMap", LEDGER_NS, "service-scaler-hibernation")
            .unwrap();
        let text = map["data"][format!("{NS}.{NAME}")].as_str()?.to_owned();
        Some(serde_json::from_str(&text).unwrap())
    }
}

/// The count to return to is kept where deletion cannot lose it: the install's hibernation
/// ledger holds it from before the scale to 0 until the wake. A ServiceScaler deleted without
/// ebb's finalizer (removed by hand) still gets its workload back, with an Event on it, and its
/// entry goes; one that wakes by itself clears its entry.
#[tokio::test]
async fn a_scaler_deleted_without_its_finalizer_still_gives_its_workload_back() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(3);
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    let entry = h.ledger_entry().expect("the hibernation is in the ledger");
    assert_eq!(
        (entry.replicas, entry.scale_target_ref.name.as_str()),
        (3, NAME)
    );
    assert_eq!(
        Some(entry.uid.clone()),
        h.stored_scaler().unwrap().metadata.uid
    );

    // The finalizer removed by hand, then the ServiceScaler deleted: status and all are gone.
    h.fake
        .modify_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME, |s| {
            s["metadata"]["finalizers"] = json!([]);
        });
    assert!(
        h.fake
            .remove_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
    );
    service_scaler::ledger::settle(&h.ctx, Some(&format!("{NS}.{NAME}")), Occasion::Leading)
        .await
        .unwrap();
    assert_eq!(h.replicas(), 3, "woken from the ledger");
    assert_eq!(h.ledger_entry(), None, "the entry went with the wake");
    assert!(
        h.events.events().iter().any(|e| e.reason == "Woken"
            && e.note
                .contains("ServiceScaler shop/web, which hibernated it, was deleted")),
        "{:?}",
        h.events.events()
    );
    // Settled once: nothing more to do, nothing written.
    h.fake.clear_requests();
    service_scaler::ledger::settle(&h.ctx, None, Occasion::Leading)
        .await
        .unwrap();
    assert_eq!(h.fake.write_count(), 0);

    // A ServiceScaler of the same name but another uid is another one: the entry of the old one
    // is settled even though a ServiceScaler of that name exists.
    h.scaler(nightly_spec());
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    h.clock.set(ebb_testkit::utc("2026-05-05T06:00:00Z"));
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 3, "the morning wakes it");
    assert_eq!(h.ledger_entry(), None, "the wake clears the entry");
}

/// One ServiceScaler in the ledger that does not fit the type holds up no other entry: while a
/// replica leads it is still there (its workload waits for it to be fixed), the entry of a
/// deleted one beside it is settled; `cleanup` counts it gone too, wakes its workload from the
/// ledger (only its finalizer could go before), and deletes the ledger.
#[tokio::test]
async fn an_unreadable_scaler_in_the_ledger_stops_no_other_and_cleanup_wakes_its_workload() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    h.scaler(nightly_spec());
    h.deployment(3);
    h.reconcile().await.unwrap();
    assert_eq!(h.replicas(), 0);
    // Its spec edited past what the type reads (the API server of an older CRD let it in).
    h.fake
        .modify_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME, |s| {
            s["spec"]["hpa"]["minReplicas"] = json!("four");
        });
    // Beside it, the entry of a ServiceScaler deleted without its finalizer, whose Deployment
    // `other` stands at 0.
    h.fake.insert(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "other", "namespace": NS},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "other"}},
                 "template": {"metadata": {"labels": {"app": "other"}},
                              "spec": {"containers": [{"name": "app", "image": "app"}]}}},
    }));
    let other = json!({"uid": "gone-uid", "replicas": 2,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}});
    h.fake.modify_json(
        "v1",
        "ConfigMap",
        LEDGER_NS,
        "service-scaler-hibernation",
        |m| {
            m["data"][format!("{NS}.other")] = json!(other.to_string());
        },
    );
    let other_replicas = || {
        h.fake
            .get_json("apps/v1", "Deployment", NS, "other")
            .unwrap()["spec"]["replicas"]
            .as_i64()
            .unwrap()
    };

    service_scaler::ledger::settle(&h.ctx, None, Occasion::Leading)
        .await
        .unwrap();
    assert_eq!(other_replicas(), 2, "the deleted one's workload is woken");
    assert_eq!(
        h.replicas(),
        0,
        "the unreadable one is still there: it waits"
    );
    assert!(h.ledger_entry().is_some());

    let flags = cleanup_flags(&["--lease-namespace", LEDGER_NS]);
    let done = service_scaler::clean(h.shared(false), flags, Leave::Nothing)
        .await
        .unwrap();
    assert_eq!(h.replicas(), 3, "woken from the ledger at the uninstall");
    let stored = h
        .fake
        .get_json("scaler.udaan.io/v1", "ServiceScaler", NS, NAME)
        .unwrap();
    assert!(
        stored["metadata"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{stored}"
    );
    assert!(
        h.fake
            .get_json("v1", "ConfigMap", LEDGER_NS, "service-scaler-hibernation")
            .is_none(),
        "the ledger goes with the uninstall"
    );
    assert!(
        done.iter()
            .any(|l| l.contains("(hibernation ledger): deleted")),
        "{done:?}"
    );
    assert!(
        h.events.events().iter().any(|e| e.reason == "Woken"
            && e.note
                .contains("cannot be read and ebb is being uninstalled")),
        "{:?}",
        h.events.events()
    );
}

/// A ledger that cannot be settled is looked at again after 1 s, 2 s, 4 s ... up to five minutes
/// (the context's backoff, here without jitter), not every few seconds without end: at cluster
/// scale each look reads every entry's ServiceScaler. A settled ledger starts the schedule over.
#[tokio::test(start_paused = true)]
async fn a_ledger_that_cannot_be_settled_is_looked_at_again_with_backoff() {
    let h = Harness::new("2026-05-04T21:00:00Z", false);
    let ledger = Matcher::get("/configmaps/service-scaler-hibernation");
    let looks = || {
        h.fake
            .reads()
            .iter()
            .filter(|r| r.path.ends_with("/configmaps/service-scaler-hibernation"))
            .count()
    };
    h.fake
        .inject(ledger.clone(), Fault::Status(500), usize::MAX);
    let (deleted, gone) = tokio::sync::mpsc::unbounded_channel();
    let upkeep = tokio::spawn(service_scaler::ledger::upkeep(h.ctx.clone(), gone));
    tokio::time::sleep(Duration::from_millis(60_500)).await;
    assert_eq!(looks(), 6, "at 0, 1, 3, 7, 15 and 31 s (every 5 s: 13)");

    // The server answers again: the look at 63 s settles it (the ledger is made).
    h.fake.clear_faults();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(looks(), 7);
    assert!(
        h.fake
            .get_json("v1", "ConfigMap", LEDGER_NS, "service-scaler-hibernation")
            .is_some()
    );

    // One failure after that waits 1 s again, not the 64 s the schedule had reached.
    h.fake.fail_next(ledger, 500);
    deleted.send(format!("{NS}/gone")).unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        looks(),
        9,
        "the failed entry's look, then the whole ledger 1 s later"
    );
    upkeep.abort();
}

#[tokio::test]
async fn fault_matrix_a_hibernating_range_starting() {
    fault_matrix_of(
        "service-scaler-hibernate",
        "service-scaler: a hibernating range starts on a Deployment of 3 replicas",
        "2026-05-04T21:00:00Z",
        &[
            ("autoscaling/v2", "HorizontalPodAutoscaler", NS, NAME),
            ("scaler.udaan.io/v1", "ServiceScaler", NS, NAME),
            ("apps/v1", "Deployment", NS, NAME),
        ],
        async |h: &Harness| {
            h.scaler(nightly_spec());
            h.deployment(3);
        },
    )
    .await;
}
