//! The one executor, on FakeApi: every controller's plan is carried out the same way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::Duration;

use ebb_core::plan::{Category, Plan, Requeue, StatusPatch, Target, Write};
use ebb_core::{EventKind, Notice};
use ebb_runtime::execute::frame::{Failure, ReconcileError};
use ebb_runtime::execute::{Hooks, execute};
use ebb_testkit::{Fault, Harness, Matcher};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::Resource;
use serde_json::json;

const MANAGER: &str = "ebb-demo";

fn config_map(name: &str, data: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": {"v": data},
    }))
    .unwrap()
}

fn target(name: &str) -> Target {
    Target::named::<ConfigMap>(Some("ns"), name)
}

fn subject() -> ObjectReference {
    config_map("subject", "").object_ref(&())
}

/// The resourceVersion ConfigMap `ns/name` has now.
fn version(h: &Harness, name: &str) -> String {
    let object = h.fake.get_json("v1", "ConfigMap", "ns", name).unwrap();
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn stored(h: &Harness, name: &str) -> Option<ConfigMap> {
    h.fake.get::<ConfigMap>("ns", name)
}

/// Records what the executor hands the controller.
#[derive(Default)]
struct Recorded {
    written: Mutex<Vec<Option<&'static str>>>,
    gauges: Mutex<Vec<u32>>,
}

impl Hooks<u32> for Recorded {
    fn written(&self, write: &Write) {
        self.written.lock().unwrap().push(write.reason);
    }

    fn gauges(&self, gauges: u32) {
        self.gauges.lock().unwrap().push(gauges);
    }
}

#[tokio::test]
async fn writes_run_in_order_each_event_after_its_write_then_status_events_gauges_requeue() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let rv = version(&h, "a");
    let mut plan = Plan::new(subject(), 7);
    plan.writes.push(
        Write::create(&config_map("b", "2"), Category::Target)
            .reason("create")
            .notice(Notice::normal("Created", "Create", "b")),
    );
    plan.writes.push(
        Write::merge(
            target("a"),
            Some(&rv),
            json!({"data": {"v": "3"}}),
            Category::Target,
        )
        .notice(Notice::normal("Updated", "Update", "a")),
    );
    plan.notices.push(Notice::warning("Done", "Report", "all"));
    plan.requeue = Requeue::After(Duration::from_secs(30));
    let hooks = Recorded::default();

    let action = execute(plan, &h.shared(false), MANAGER, &hooks)
        .await
        .unwrap();

    assert_eq!(action, Requeue::After(Duration::from_secs(30)));
    assert_eq!(stored(&h, "b").unwrap().data.unwrap()["v"], "2");
    assert_eq!(stored(&h, "a").unwrap().data.unwrap()["v"], "3");
    assert_eq!(h.events.reasons(), ["Created", "Updated", "Done"]);
    assert_eq!(h.events.events()[2].kind, EventKind::Warning);
    assert_eq!(*hooks.written.lock().unwrap(), [Some("create"), None]);
    assert_eq!(*hooks.gauges.lock().unwrap(), [7]);
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2);
    assert!(
        writes
            .iter()
            .all(|w| w.query_param("fieldManager") == Some(MANAGER)),
        "every write names the controller's field manager: {writes:#?}"
    );
}

#[tokio::test]
async fn an_empty_plan_sends_nothing() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let action = execute(Plan::new(subject(), ()), &h.shared(false), MANAGER, &())
        .await
        .unwrap();
    assert_eq!(action, Requeue::AwaitChange);
    assert!(h.fake.requests().is_empty());
    assert!(h.events.reasons().is_empty());
}

#[tokio::test]
async fn a_conflict_ends_the_pass_as_stale_before_anything_after_it() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let mut plan = Plan::new(subject(), 1);
    plan.writes.push(
        Write::merge(
            target("a"),
            Some("1"),
            json!({"data": {"v": "3"}}),
            Category::Target,
        )
        .notice(Notice::normal("Updated", "Update", "a")),
    );
    plan.status = Some(StatusPatch {
        target: target("a"),
        patch: json!({"status": {}}),
    });
    plan.notices.push(Notice::normal("Done", "Report", ""));
    let hooks = Recorded::default();
    h.fake.fail_next(Matcher::patch("/configmaps/a"), 409);

    let error = execute(plan, &h.shared(false), MANAGER, &hooks)
        .await
        .unwrap_err();

    assert!(matches!(error, Failure::Conflict(_)), "{error:?}");
    assert!(error.is_conflict());
    assert_eq!(h.fake.write_count(), 1, "nothing after the conflict");
    assert!(h.events.reasons().is_empty());
    assert!(hooks.gauges.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_write_is_counted_under_its_category_and_names_its_object() {
    for (category, label, what) in [
        (Category::Target, "write_target", "writing ConfigMap ns/a"),
        (
            Category::Metadata,
            "write_metadata",
            "updating the metadata of ConfigMap ns/a",
        ),
    ] {
        let h = Harness::new("2026-05-04T09:00:00Z", "demo");
        h.fake.insert(config_map("a", "1"));
        let rv = version(&h, "a");
        let mut plan = Plan::new(subject(), ());
        plan.writes
            .push(Write::merge(target("a"), Some(&rv), json!({}), category));
        h.fake.fail_next(Matcher::patch("/configmaps/a"), 500);
        let error = execute(plan, &h.shared(false), MANAGER, &())
            .await
            .unwrap_err();
        assert_eq!(error.category(), label);
        assert!(error.is_transient());
        assert!(error.to_string().starts_with(what), "{error}");
    }
}

#[tokio::test]
async fn a_merge_names_the_version_read_so_a_change_since_is_a_conflict() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let rv = version(&h, "a");
    h.fake.modify::<ConfigMap>("ns", "a", |cm| {
        cm.data = Some([("v".to_owned(), "someone".to_owned())].into());
    });
    let mut plan = Plan::new(subject(), ());
    plan.writes.push(Write::merge(
        target("a"),
        Some(&rv),
        json!({"data": {"v": "mine"}}),
        Category::Target,
    ));
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
    assert_eq!(stored(&h, "a").unwrap().data.unwrap()["v"], "someone");
}

#[tokio::test]
async fn a_second_write_to_one_object_follows_the_plans_own_first_write() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let rv = version(&h, "a");
    let mut plan = Plan::new(subject(), ());
    plan.writes.push(Write::merge(
        target("a"),
        Some(&rv),
        json!({"data": {"first": "x"}}),
        Category::Target,
    ));
    plan.writes.push(Write::merge(
        target("a"),
        Some(&rv),
        json!({"data": {"second": "y"}}),
        Category::Target,
    ));
    execute(plan, &h.shared(false), MANAGER, &()).await.unwrap();
    let data = stored(&h, "a").unwrap().data.unwrap();
    assert_eq!(
        (data["first"].as_str(), data["second"].as_str()),
        ("x", "y")
    );
}

#[tokio::test]
async fn a_status_then_a_spec_write_each_follow_the_one_before() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let rv = version(&h, "a");
    let mut plan = Plan::new(subject(), ());
    plan.writes.push(Write::merge_status(
        target("a"),
        Some(&rv),
        json!({"status": {"flag": true}}),
        Category::Status,
    ));
    plan.writes.push(Write::merge(
        target("a"),
        Some(&rv),
        json!({"data": {"v": "2"}}),
        Category::Target,
    ));
    execute(plan, &h.shared(false), MANAGER, &()).await.unwrap();
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 2);
    assert!(
        writes[0].path.ends_with("/configmaps/a/status"),
        "{writes:#?}"
    );
    assert_eq!(stored(&h, "a").unwrap().data.unwrap()["v"], "2");

    // Someone else's change before the first write: a conflict, nothing written.
    let rv = version(&h, "a");
    h.fake.modify::<ConfigMap>("ns", "a", |cm| {
        cm.data = Some([("v".to_owned(), "someone".to_owned())].into());
    });
    let mut plan = Plan::new(subject(), ());
    plan.writes.push(Write::merge_status(
        target("a"),
        Some(&rv),
        json!({"status": {"flag": false}}),
        Category::Status,
    ));
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
}

#[tokio::test]
async fn deleting_names_the_uid_read_and_gone_already_is_done() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let read = h.fake.insert(config_map("a", "1"));
    let uid = read["metadata"]["uid"].as_str().unwrap().to_owned();
    // Deleted and made again since the read: the successor is not deleted.
    h.fake.remove::<ConfigMap>("ns", "a");
    h.fake.insert(config_map("a", "2"));
    let mut plan = Plan::new(subject(), ());
    plan.writes
        .push(Write::delete(target("a"), Some(&uid), Category::Target));
    let error = execute(plan.clone(), &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
    assert!(stored(&h, "a").is_some());

    h.fake.remove::<ConfigMap>("ns", "a");
    execute(plan, &h.shared(false), MANAGER, &()).await.unwrap();
}

#[tokio::test]
async fn an_object_made_since_the_read_makes_a_create_decide_again() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("b", "theirs"));
    let mut plan = Plan::new(subject(), ());
    plan.writes
        .push(Write::create(&config_map("b", "mine"), Category::Target));
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
    assert_eq!(stored(&h, "b").unwrap().data.unwrap()["v"], "theirs");
}

#[tokio::test]
async fn a_lost_answer_is_a_transient_failure_and_the_write_took_effect() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let mut plan = Plan::new(subject(), ());
    plan.writes
        .push(Write::create(&config_map("b", "mine"), Category::Target));
    h.fake
        .inject(Matcher::post("/configmaps"), Fault::TimeoutAfterApply, 1);
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert_eq!(error.category(), "write_target");
    assert!(stored(&h, "b").is_some());
}

#[tokio::test]
async fn a_dry_run_writes_only_the_status_and_the_plans_events() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    h.fake.insert(config_map("a", "1"));
    let mut plan = Plan::new(subject(), 3);
    plan.writes.push(
        Write::create(&config_map("b", "2"), Category::Target)
            .notice(Notice::normal("Created", "Create", "b")),
    );
    plan.writes.push(Write::merge_status(
        target("a"),
        None,
        json!({"status": {"dryRun": true}}),
        Category::Status,
    ));
    plan.notices
        .push(Notice::normal("DryRun", "Create", "would have created b"));
    let hooks = Recorded::default();
    execute(plan, &h.shared(true), MANAGER, &hooks)
        .await
        .unwrap();
    assert!(stored(&h, "b").is_none());
    let writes = h.fake.writes();
    assert_eq!(writes.len(), 1, "the status alone: {writes:#?}");
    assert!(writes[0].path.ends_with("/configmaps/a/status"));
    assert_eq!(
        h.events.reasons(),
        ["DryRun"],
        "a write not made has no Event"
    );
    assert_eq!(
        *hooks.written.lock().unwrap(),
        [None],
        "the status write alone"
    );
    assert_eq!(*hooks.gauges.lock().unwrap(), [3]);
}

#[tokio::test]
async fn an_invalid_plan_writes_its_status_then_ends_as_invalid() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let mut plan = Plan::new(subject(), ());
    plan.notices
        .push(Notice::warning("InvalidSpec", "Validate", "spec.v: bad"));
    plan.invalid = Some("spec.v: bad".into());
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert_eq!(error.category(), "invalid");
    assert!(!error.is_transient());
    assert_eq!(
        error.to_string(),
        "ConfigMap ns/subject is invalid: spec.v: bad"
    );
    assert_eq!(h.events.reasons(), ["InvalidSpec"]);
}

/// ConfigMaps `names` at `v: 1`, and a plan of one independent write each setting `v: 2`, an
/// Event noting the name with it.
fn independent_updates(h: &Harness, names: &[impl AsRef<str>]) -> Plan<u32> {
    let mut plan = Plan::new(subject(), 0);
    for name in names.iter().map(AsRef::as_ref) {
        h.fake.insert(config_map(name, "1"));
        plan.writes.push(
            Write::merge(
                target(name),
                Some(&version(h, name)),
                json!({"data": {"v": "2"}}),
                Category::Target,
            )
            .independent()
            .notice(Notice::normal("Updated", "Update", name)),
        );
    }
    plan
}

#[tokio::test]
async fn independent_writes_are_each_tried_and_the_first_failure_ends_the_pass_after_them() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let mut plan = independent_updates(&h, &["a", "b", "c"]);
    plan.writes.push(Write::merge(
        target("a"),
        Some(&version(&h, "a")),
        json!({"metadata": {"finalizers": null}}),
        Category::Metadata,
    ));
    plan.notices.push(Notice::normal("Done", "Report", ""));
    let hooks = Recorded::default();
    h.fake.fail_next(Matcher::patch("/configmaps/b"), 500);

    let error = execute(plan, &h.shared(false), MANAGER, &hooks)
        .await
        .unwrap_err();

    assert_eq!(error.category(), "write_target");
    assert!(error.to_string().contains("ConfigMap ns/b"), "{error}");
    let v = |name: &str| stored(&h, name).unwrap().data.unwrap()["v"].clone();
    assert_eq!(
        (v("a"), v("b"), v("c")),
        ("2".into(), "1".into(), "2".into())
    );
    assert_eq!(
        h.fake.write_count(),
        3,
        "a, b (failed), c; the write after the run is not tried"
    );
    assert_eq!(
        h.events.reasons(),
        ["Updated"],
        "the Events of writes after a failure are not recorded"
    );
    assert_eq!(hooks.written.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_write_to_an_object_gone_since_the_read_decides_again() {
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let mut plan = Plan::new(subject(), ());
    plan.writes.push(Write::merge(
        target("gone"),
        Some("5"),
        json!({"data": {"v": "2"}}),
        Category::Target,
    ));
    let error = execute(plan, &h.shared(false), MANAGER, &())
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
}

/// A service in front of the fake that answers each request late (by `late` of its path),
/// counts how many are in flight at once, and notes the paths in the order they are answered.
struct Slow {
    inner: ebb_testkit::FakeService,
    now: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    late: fn(&str) -> Duration,
    answered: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl tower::Service<http::Request<kube::client::Body>> for Slow {
    type Response = http::Response<ebb_testkit::ResponseBody>;
    type Error = ebb_testkit::InjectedTimeout;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        use std::sync::atomic::Ordering;
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let path = request.uri().path().to_owned();
        let late = (self.late)(&path);
        let answer = self.inner.call(request);
        let in_flight = self.now.clone();
        let answered = self.answered.clone();
        Box::pin(async move {
            tokio::time::sleep(late).await;
            let answer = answer.await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            answered.lock().unwrap().push(path);
            answer
        })
    }
}

#[tokio::test]
async fn a_run_of_independent_writes_is_sent_several_at_a_time_in_the_plans_order() {
    use ebb_runtime::execute::IN_FLIGHT;
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let names: Vec<String> = (0..3 * IN_FLIGHT).map(|i| format!("node-{i:02}")).collect();
    let plan = independent_updates(&h, &names);
    let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let layer = {
        let most = most.clone();
        tower::layer::layer_fn(move |inner| Slow {
            inner,
            now: Default::default(),
            most: most.clone(),
            late: |_| Duration::from_millis(20),
            answered: Default::default(),
        })
    };
    let mut shared = h.shared(false);
    shared.client = h.fake.client_with(&layer);
    let hooks = Recorded::default();

    execute(plan, &shared, MANAGER, &hooks).await.unwrap();

    assert_eq!(
        most.load(std::sync::atomic::Ordering::SeqCst),
        IN_FLIGHT,
        "as many in flight as allowed, no more"
    );
    let v = |name: &str| stored(&h, name).unwrap().data.unwrap()["v"].clone();
    assert!(names.iter().all(|name| v(name) == "2"));
    assert_eq!(hooks.written.lock().unwrap().len(), names.len());
    let noted: Vec<String> = h.events.events().into_iter().map(|e| e.note).collect();
    assert_eq!(noted, names, "outcomes taken in the plan's order");
}

/// One slow answer in a run holds up no other write: the next is sent as soon as any one in
/// flight is answered, not once the oldest is (at 10 000 Nodes, the run's pace was its slowest
/// answers'). The outcomes are still taken in the plan's order.
#[tokio::test]
async fn a_slow_answer_in_a_run_holds_up_no_other_write() {
    use ebb_runtime::execute::IN_FLIGHT;
    let h = Harness::new("2026-05-04T09:00:00Z", "demo");
    let names: Vec<String> = (0..3 * IN_FLIGHT).map(|i| format!("node-{i:02}")).collect();
    let plan = independent_updates(&h, &names);
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let layer = {
        let answered = answered.clone();
        tower::layer::layer_fn(move |inner| Slow {
            inner,
            now: Default::default(),
            most: Default::default(),
            late: |path| Duration::from_millis(if path.ends_with("/node-00") { 300 } else { 5 }),
            answered: answered.clone(),
        })
    };
    let mut shared = h.shared(false);
    shared.client = h.fake.client_with(&layer);

    execute(plan, &shared, MANAGER, &()).await.unwrap();

    let answered = answered.lock().unwrap().clone();
    assert_eq!(answered.len(), names.len());
    assert!(
        answered
            .last()
            .is_some_and(|path| path.ends_with("/node-00")),
        "every other write answered before the slow one: {answered:?}"
    );
    let noted: Vec<String> = h.events.events().into_iter().map(|e| e.note).collect();
    assert_eq!(noted, names, "outcomes taken in the plan's order");
}
