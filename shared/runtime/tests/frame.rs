//! The reconcile frame, on FakeApi: the same guarantees for every controller.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use ebb_runtime::Leader;
use ebb_runtime::execute::frame::Requeue;
use ebb_runtime::execute::frame::{self, Context, MAX_ATTEMPTS, ReconcileError, Reconciler};
use ebb_runtime::watch::guard::Guarded;
use ebb_testkit::{Harness, Matcher};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

ebb_runtime::controller_names!("demo-scaler");

/// The demo's errors are the frame's common [`frame::Failure`]: its categories and transience are
/// what these tests see through the frame.
type DemoError = frame::Failure;

fn conflict() -> DemoError {
    DemoError::stale("ConfigMap ns/cm")
}

fn invalid() -> DemoError {
    DemoError::Invalid {
        object: "ConfigMap ns/cm".into(),
        message: "data.v: must be set".into(),
    }
}

fn server_error(source: kube::Error) -> DemoError {
    frame::WriteError::of("write_data", "writing ConfigMap ns/cm")(source).into()
}

/// A controller that writes `data.seen` = the value of `data.v` it was given, through a patch
/// preconditioned on the resourceVersion it read; its own part scripts failures and records
/// passes.
#[derive(Default)]
struct Own {
    /// Errors the next passes return, in order.
    script: Mutex<Vec<DemoError>>,
    /// The `data.v` each pass saw.
    passes: Mutex<Vec<String>>,
    /// Names of malformed objects reported.
    malformed: Mutex<Vec<String>>,
}

impl Reconciler<ConfigMap> for Own {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(object: Arc<ConfigMap>, ctx: &Context<Own>) -> Result<Requeue, DemoError> {
        let v = object
            .data
            .as_ref()
            .and_then(|d| d.get("v"))
            .cloned()
            .unwrap_or_default();
        ctx.own.passes.lock().unwrap().push(v.clone());
        let scripted = {
            let mut script = ctx.own.script.lock().unwrap();
            (!script.is_empty()).then(|| script.remove(0))
        };
        if let Some(error) = scripted {
            return Err(error);
        }
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), "ns");
        let patch = json!({"metadata": {"resourceVersion": object.metadata.resource_version},
                           "data": {"seen": v}});
        match api
            .patch("cm", &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Err(e) if frame::is_conflict(&e) => Err(conflict()),
            Err(e) => Err(server_error(e)),
            Ok(_) => Ok(Requeue::After(Duration::from_secs(60))),
        }
    }

    async fn malformed(
        meta: &ObjectMeta,
        _error: &str,
        ctx: &Context<Own>,
    ) -> Result<Requeue, DemoError> {
        ctx.own
            .malformed
            .lock()
            .unwrap()
            .push(meta.name.clone().unwrap_or_default());
        Ok(Requeue::AwaitChange)
    }
}

/// The default `malformed`: logged, counted, left alone.
struct Quiet;

impl Reconciler<ConfigMap> for Quiet {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(_: Arc<ConfigMap>, _: &Context<Quiet>) -> Result<Requeue, DemoError> {
        Ok(Requeue::AwaitChange)
    }
}

fn setup() -> (Harness, Arc<Context<Own>>) {
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}, "data": {"v": "1"}}));
    let ctx = h.context(false, Own::default());
    (h, ctx)
}

fn guard(h: &Harness) -> Arc<Guarded<ConfigMap>> {
    let value = h.fake.get_json("v1", "ConfigMap", "ns", "cm").unwrap();
    Arc::new(serde_json::from_value(value).unwrap())
}

fn seen(h: &Harness) -> Option<String> {
    let cm: ConfigMap = h.fake.get("ns", "cm").unwrap();
    cm.data.unwrap().get("seen").cloned()
}

#[test]
fn names_derive_from_the_controller_name() {
    assert_eq!(CONTROLLER_NAME, "demo-scaler");
    assert_eq!(FIELD_MANAGER, "ebb-demo-scaler");
}

#[tokio::test]
async fn a_pass_runs_once_and_is_counted() {
    let (h, ctx) = setup();
    let action = frame::reconcile(guard(&h), ctx.clone()).await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(60)));
    assert_eq!(*ctx.own.passes.lock().unwrap(), ["1"]);
    assert_eq!(seen(&h).as_deref(), Some("1"));
    assert!(
        h.metrics_text()
            .contains("ebb_demo_scaler_reconciles_total{controller=\"demo-scaler\"} 1")
    );
}

/// A 409 means the object was stale: it is read again and the pass decides again on what is
/// stored now, within the same reconcile.
#[tokio::test]
async fn a_conflict_reads_the_object_again_and_decides_again() {
    let (h, ctx) = setup();
    let cached = guard(&h);
    // Someone changes the object after the cache saw it.
    h.fake.modify::<ConfigMap>("ns", "cm", |cm| {
        cm.data.as_mut().unwrap().insert("v".into(), "2".into());
    });
    let action = frame::reconcile(cached, ctx.clone()).await.unwrap();
    assert_eq!(action, Requeue::After(Duration::from_secs(60)));
    assert_eq!(*ctx.own.passes.lock().unwrap(), ["1", "2"]);
    assert_eq!(
        seen(&h).as_deref(),
        Some("2"),
        "never acted on the stale value"
    );
    let patches = h.fake.writes_matching(&Matcher::patch("/configmaps/cm"));
    let statuses: Vec<_> = patches.iter().map(|w| w.status).collect();
    assert_eq!(statuses, [Some(409), Some(200)]);
}

/// Just after the API server came back, a pass reads its object from the server first: the
/// cache may not have seen a change made while the server was away. Outside that window, the
/// cached object is decided on (and a stale one meets its 409).
#[tokio::test]
async fn after_the_servers_return_a_pass_reads_its_object_first() {
    let (h, ctx) = setup();
    let cached = guard(&h);
    h.fake.modify::<ConfigMap>("ns", "cm", |cm| {
        cm.data.as_mut().unwrap().insert("v".into(), "2".into());
    });
    ctx.contact.failed();
    ctx.contact.server_ready();
    frame::reconcile(cached, ctx.clone()).await.unwrap();
    assert_eq!(
        *ctx.own.passes.lock().unwrap(),
        ["2"],
        "one pass, on the fresh object"
    );
    assert_eq!(seen(&h).as_deref(), Some("2"));
    let patches = h.fake.writes_matching(&Matcher::patch("/configmaps/cm"));
    assert_eq!(
        patches.len(),
        1,
        "no 409: the pass never saw the stale object"
    );
}

#[tokio::test]
async fn conflicts_on_every_pass_fail_and_back_off() {
    let (h, ctx) = setup();
    ctx.own
        .script
        .lock()
        .unwrap()
        .extend((0..MAX_ATTEMPTS).map(|_| conflict()));
    let error = frame::reconcile(guard(&h), ctx.clone()).await.unwrap_err();
    assert!(matches!(error, frame::Error::Conflicts { attempts, .. } if attempts == MAX_ATTEMPTS));
    assert_eq!(error.category(), "conflict");
    assert_eq!(ctx.own.passes.lock().unwrap().len(), MAX_ATTEMPTS);
    assert!(h.metrics_text().contains("category=\"conflict\"} 1"));
    // Transient: backs off per object, 1 s then 2 s; a success resets it.
    let policy = |e: &frame::Error<DemoError>| frame::error_policy(&*guard(&h), e, &ctx);
    assert_eq!(policy(&error), Requeue::After(Duration::from_secs(1)));
    assert_eq!(policy(&error), Requeue::After(Duration::from_secs(2)));
    frame::reconcile(guard(&h), ctx.clone()).await.unwrap();
    assert_eq!(policy(&error), Requeue::After(Duration::from_secs(1)));
}

#[tokio::test]
async fn an_error_retrying_cannot_fix_waits_for_a_change() {
    let (h, ctx) = setup();
    ctx.own.script.lock().unwrap().push(invalid());
    let error = frame::reconcile(guard(&h), ctx.clone()).await.unwrap_err();
    assert!(matches!(error.inner(), Some(DemoError::Invalid { .. })));
    assert_eq!(
        frame::error_policy(&*guard(&h), &error, &ctx),
        Requeue::AwaitChange
    );
    assert!(h.metrics_text().contains("category=\"invalid\"} 1"));
    // A server error is transient, counted under the write's own category.
    h.fake.fail_next(Matcher::patch("/configmaps/cm"), 500);
    let error = frame::reconcile(guard(&h), ctx.clone()).await.unwrap_err();
    assert!(error.to_string().starts_with("writing ConfigMap ns/cm: "));
    assert!(h.metrics_text().contains("category=\"write_data\"} 1"));
    assert_eq!(
        frame::error_policy(&*guard(&h), &error, &ctx),
        Requeue::After(Duration::from_secs(1))
    );
}

#[tokio::test]
async fn a_429_comes_back_no_sooner_than_the_server_asked() {
    let (h, ctx) = setup();
    let policy = |e: &frame::Error<DemoError>| frame::error_policy(&*guard(&h), e, &ctx);
    h.fake.fail_next(Matcher::patch("/configmaps/cm"), 429);
    let error = frame::reconcile(guard(&h), ctx.clone()).await.unwrap_err();
    let asked = Duration::from_secs(ebb_testkit::RETRY_AFTER_SECONDS.into());
    assert_eq!(frame::retry_after(&error), Some(asked));
    // The server's 5 s, not the backoff's first 1 s; then the backoff once it is longer.
    let delays: Vec<Requeue> = (0..5).map(|_| policy(&error)).collect();
    let secs = |s| Requeue::After(Duration::from_secs(s));
    assert_eq!(delays, [secs(5), secs(5), secs(5), secs(8), secs(16)]);
    // Other failures keep the plain backoff.
    h.fake.fail_next(Matcher::patch("/configmaps/cm"), 500);
    let error = frame::reconcile(guard(&h), ctx.clone()).await.unwrap_err();
    assert_eq!(frame::retry_after(&error), None);
    assert_eq!(policy(&error), secs(32));
}

#[tokio::test]
async fn a_follower_writes_nothing_and_sets_no_timer() {
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}, "data": {"v": "1"}}));
    let ctx = Arc::new(Context::new(
        h.shared_with(false, Leader::following()),
        Own::default(),
    ));
    h.fake.clear_requests();
    let action = frame::reconcile(guard(&h), ctx.clone()).await.unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    assert!(ctx.own.passes.lock().unwrap().is_empty());
    assert_eq!(h.fake.write_count(), 0);
}

/// A malformed object goes to `malformed`, not to the pass; by default it is counted and left
/// alone, with no request at all.
#[tokio::test]
async fn a_malformed_object_is_reported_and_every_other_is_served() {
    let (h, ctx) = setup();
    let bad: Arc<Guarded<ConfigMap>> = Arc::new(
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad", "namespace": "ns"}, "data": {"v": [1]}}))
        .unwrap(),
    );
    assert_eq!(
        frame::reconcile(bad.clone(), ctx.clone()).await.unwrap(),
        Requeue::AwaitChange
    );
    assert_eq!(*ctx.own.malformed.lock().unwrap(), ["bad"]);
    assert!(ctx.own.passes.lock().unwrap().is_empty());
    frame::reconcile(guard(&h), ctx.clone()).await.unwrap();
    assert_eq!(*ctx.own.passes.lock().unwrap(), ["1"]);

    // The default: counted, and reported on the object by a Warning Event naming the field,
    // once per version of it; forgotten once the object fits its type again.
    let quiet = h.context(false, Quiet);
    h.fake.clear_requests();
    assert_eq!(
        frame::reconcile(bad.clone(), quiet.clone()).await.unwrap(),
        Requeue::AwaitChange
    );
    assert_eq!(h.fake.requests().len(), 0);
    assert!(h.metrics_text().contains("category=\"malformed\"} 1"));
    assert_eq!(h.events.reasons(), ["Malformed"]);
    let event = &h.events.events()[0];
    assert_eq!(event.kind, ebb_runtime::EventKind::Warning);
    assert_eq!(event.reference.name.as_deref(), Some("bad"));
    assert!(event.note.contains("data.v"), "{}", event.note);
    frame::reconcile(bad, quiet.clone()).await.unwrap();
    assert_eq!(
        h.events.reasons(),
        ["Malformed"],
        "the same version: no second Event"
    );
    assert_eq!(quiet.malformed.len(), 1);
    let fixed: Arc<Guarded<ConfigMap>> = Arc::new(
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad", "namespace": "ns"}, "data": {"v": "1"}}))
        .unwrap(),
    );
    frame::reconcile(fixed, quiet.clone()).await.unwrap();
    assert!(
        quiet.malformed.is_empty(),
        "no entry outlives its malformed version"
    );
}

/// After a conflict the object is gone: nothing left to do.
#[tokio::test]
async fn an_object_deleted_during_a_conflict_ends_the_reconcile() {
    let (h, ctx) = setup();
    ctx.own.script.lock().unwrap().push(conflict());
    let cached = guard(&h);
    h.fake.remove::<ConfigMap>("ns", "cm");
    assert_eq!(
        frame::reconcile(cached, ctx.clone()).await.unwrap(),
        Requeue::AwaitChange
    );
    assert_eq!(ctx.own.passes.lock().unwrap().len(), 1);
}

/// An object without a name, or of a namespaced kind without a namespace, never reaches the
/// controller: it can never be reconciled, so the frame reports it once and waits for a change.
#[tokio::test]
async fn an_object_without_name_or_namespace_never_reaches_the_controller() {
    let (h, ctx) = setup();
    for (meta, field) in [
        (json!({"namespace": "ns"}), "metadata.name"),
        (json!({"name": "cm"}), "metadata.namespace"),
        (json!({"name": "", "namespace": "ns"}), "metadata.name"),
    ] {
        let object: Arc<Guarded<ConfigMap>> = Arc::new(
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": meta, "data": {"v": "1"}}))
            .unwrap(),
        );
        let error = frame::reconcile(object.clone(), ctx.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, frame::Error::MissingMetadata { field: f, .. } if *f == field),
            "{error}"
        );
        assert_eq!(error.to_string(), format!("ConfigMap without {field}"));
        assert!(!error.is_transient());
        assert_eq!(
            frame::error_policy(&*object, &error, &ctx),
            Requeue::AwaitChange
        );
    }
    assert!(
        ctx.own.passes.lock().unwrap().is_empty(),
        "never reconciled"
    );
    assert!(h.fake.writes().is_empty());
    assert!(h.metrics_text().contains("category=\"invalid_object\"} 3"));
}

/// A controller whose passes wait for the gate to open, counting those started.
struct Gate {
    open: tokio::sync::watch::Receiver<bool>,
    started: std::sync::atomic::AtomicUsize,
}

impl Reconciler<ConfigMap> for Gate {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(_: Arc<ConfigMap>, ctx: &Context<Gate>) -> Result<Requeue, DemoError> {
        ctx.own
            .started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut open = ctx.own.open.clone();
        let _ = open.wait_for(|open| *open).await;
        // Looked at again in an hour: not due, so not in the queue meanwhile.
        Ok(Requeue::After(Duration::from_secs(3600)))
    }
}

/// Waits (up to 10 s) until `done`.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The value of the series starting with `series` in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(series))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// Runs controller `R` in the frame over the ConfigMaps of namespace `ns` on `h`'s fake, as
/// `app` wires a controller; abort the task to stop it.
fn spawn_controller<R>(h: &Harness, ctx: &Arc<Context<R>>) -> tokio::task::JoinHandle<()>
where
    R: Reconciler<ConfigMap> + Send + Sync + 'static,
{
    spawn_controller_telling(h, ctx, |_| {})
}

/// [`spawn_controller`], telling `gone` the key of each object the frame reports gone.
fn spawn_controller_telling<R>(
    h: &Harness,
    ctx: &Arc<Context<R>>,
    gone: impl Fn(&str) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()>
where
    R: Reconciler<ConfigMap> + Send + Sync + 'static,
{
    let warm_up =
        ebb_runtime::process::app::WarmUp::new(ebb_runtime::Health::new(), ctx.contact.clone());
    let api: Api<Guarded<ConfigMap>> = Api::namespaced(h.fake.client(), "ns");
    let controller = ebb_runtime::process::app::controller(
        api,
        kube::runtime::watcher::Config::default(),
        &warm_up,
    );
    tokio::spawn(frame::run(controller, ctx.clone(), gone))
}

#[tokio::test]
async fn the_queue_depth_counts_the_objects_due_that_wait_for_a_free_slot() {
    use ebb_runtime::process::app::CONCURRENT_RECONCILES;
    use std::sync::atomic::Ordering;
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    let objects = 3 * usize::from(CONCURRENT_RECONCILES);
    for i in 0..objects {
        h.fake
            .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": "ns"}}));
    }
    let (gate, open) = tokio::sync::watch::channel(false);
    let ctx = h.context(
        false,
        Gate {
            open,
            started: Default::default(),
        },
    );
    let depth = "ebb_demo_scaler_queue_depth{controller=\"demo-scaler\",kind=\"ConfigMap\"}";
    let waited =
        "ebb_demo_scaler_queue_wait_seconds_count{controller=\"demo-scaler\",kind=\"ConfigMap\"}";
    let run = spawn_controller(&h, &ctx);
    let started = || ctx.own.started.load(Ordering::SeqCst);
    let concurrent = usize::from(CONCURRENT_RECONCILES);
    eventually("every slot busy", || started() == concurrent).await;
    // Every object was listed at once: the rest wait for a slot.
    let waiting = (objects - concurrent) as f64;
    eventually("the rest counted as waiting", || {
        sample(&h.metrics_text(), depth) == Some(waiting)
    })
    .await;
    assert_eq!(started(), concurrent, "no more than the slots run at once");
    gate.send(true).unwrap();
    eventually("every object reconciled", || started() == objects).await;
    eventually("the queue empty", || {
        sample(&h.metrics_text(), depth) == Some(0.0)
    })
    .await;
    let text = h.metrics_text();
    assert_eq!(sample(&text, waited), Some(objects as f64), "{text}");
    run.abort();
}

/// A controller whose first pass decides at once that it is due again in 1 s, then takes 2 s to
/// finish (a server frozen under its reads); it records when each pass starts.
struct Slow {
    starts: Mutex<Vec<tokio::time::Instant>>,
}

impl Reconciler<ConfigMap> for Slow {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(_: Arc<ConfigMap>, ctx: &Context<Slow>) -> Result<Requeue, DemoError> {
        let first = {
            let mut starts = ctx.own.starts.lock().unwrap();
            starts.push(tokio::time::Instant::now());
            starts.len() == 1
        };
        if first {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Ok(Requeue::After(Duration::from_secs(1)))
        } else {
            Ok(Requeue::AwaitChange)
        }
    }
}

/// An edge a pass decided on counts from the pass's start: the pass that took 2 s to learn its
/// object is due 1 s after it started runs again as soon as it ends, not 1 s later.
#[tokio::test]
async fn a_requeue_counts_from_the_start_of_a_slow_pass() {
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}}));
    let ctx = h.context(
        false,
        Slow {
            starts: Mutex::default(),
        },
    );
    let run = spawn_controller(&h, &ctx);
    eventually("a second pass", || {
        ctx.own.starts.lock().unwrap().len() == 2
    })
    .await;
    let starts = ctx.own.starts.lock().unwrap().clone();
    let apart = starts[1] - starts[0];
    assert!(
        apart < Duration::from_millis(2500),
        "the second pass started {apart:?} after the first, which ended after 2 s"
    );
    run.abort();
}

/// A controller whose every pass fails, as for want of the server.
struct Failing;

impl Reconciler<ConfigMap> for Failing {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(_: Arc<ConfigMap>, _: &Context<Failing>) -> Result<Requeue, DemoError> {
        Err(server_error(kube::Error::Service(
            std::io::Error::other("the server is away").into(),
        )))
    }
}

/// Nothing outlives its object: the backoff of an object that kept failing goes when it is
/// deleted.
#[tokio::test]
async fn a_deleted_object_leaves_no_backoff_behind() {
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}}));
    let ctx = h.context(false, Failing);
    let run = spawn_controller(&h, &ctx);
    eventually("a failure on record", || ctx.backoff.tracked() == 1).await;
    assert!(h.fake.remove::<ConfigMap>("ns", "cm"));
    eventually("the failures forgotten", || ctx.backoff.tracked() == 0).await;
    run.abort();
}

/// Looks again in an hour, and counts its passes.
#[derive(Default)]
struct Hourly {
    passes: std::sync::atomic::AtomicUsize,
}

impl Reconciler<ConfigMap> for Hourly {
    type Error = DemoError;
    const NAME: &'static str = CONTROLLER_NAME;

    async fn reconcile(_: Arc<ConfigMap>, ctx: &Context<Hourly>) -> Result<Requeue, DemoError> {
        ctx.own
            .passes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Requeue::After(Duration::from_secs(3600)))
    }
}

/// Nothing outlives its object, even one deleted while the watch had fallen behind: the relist
/// that follows the 410 reports no deletion, so what it does not show is told gone at its end
/// (its queue entry, backoff and series go), not when its next pass comes due an hour later.
#[tokio::test]
async fn an_object_a_relist_does_not_show_is_told_gone_at_its_end() {
    let h = Harness::new("2026-05-04T09:00:00Z", CONTROLLER_NAME);
    for name in ["cm", "other"] {
        h.fake
            .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"}}));
    }
    let ctx = h.context(false, Hourly::default());
    let told = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = told.clone();
    let run = spawn_controller_telling(&h, &ctx, move |key| {
        record.lock().unwrap().push(key.to_owned());
    });
    let passes = || ctx.own.passes.load(std::sync::atomic::Ordering::SeqCst);
    eventually("both passed", || passes() == 2).await;
    // Without yielding to the watch: cm is deleted and two later changes push its deletion out
    // of a history of one, so the watch gets a 410 and lists again.
    h.fake.set_watch_history(1);
    assert!(h.fake.remove::<ConfigMap>("ns", "cm"));
    for v in ["1", "2"] {
        h.fake.modify::<ConfigMap>("ns", "other", |cm| {
            cm.data = Some([("v".to_owned(), v.to_owned())].into());
        });
    }
    eventually("cm told gone", || !told.lock().unwrap().is_empty()).await;
    assert_eq!(
        *told.lock().unwrap(),
        ["ns/cm"],
        "only what the relist did not show"
    );
    run.abort();
}
