//! scaledown-window as a process against a real API server: its targets are cluster-scoped, so
//! these tests take turns (one lock) and each names its own objects.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use ebb_e2e::rbac::{apply, resource};
use ebb_e2e::{Controller, Setup, audit, cluster, eventually, settle};
use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::{Value, json};
use tokio::sync::Mutex;

const CHART: &str = "scaledown-window";
static CLUSTER_SCOPED: Mutex<()> = Mutex::const_new(());

/// The next whole minute at least `ahead` seconds away: cron windows open on minutes.
fn next_minute(ahead: i64) -> Timestamp {
    ebb_e2e::whole_minute(Timestamp::now() + SignedDuration::from_secs(ahead))
        + SignedDuration::from_mins(1)
}

/// A schedule whose one window opens at `open` (UTC) for one minute.
fn schedule(name: &str, target: Value, open: Timestamp) -> Value {
    json!({
        "apiVersion": "scaling.ebb.dev/v1alpha1",
        "kind": "ScaleDownSchedule",
        "metadata": {"name": name},
        "spec": {
            "target": target,
            "windows": [{
                "schedule": format!("{} * * *", ebb_e2e::cron_minute_hour(open)),
                "duration": "1m",
                "timeZone": "UTC"
            }]
        }
    })
}

async fn dynamic(
    admin: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    Api::all_with(
        admin.clone(),
        &resource(admin, group, version, kind).await.unwrap(),
    )
}

fn condition<'a>(obj: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    obj.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `spec.scaleDown.enabled` of ClusterAutoscaler `default` flips when the window opens and when
/// it closes, and the installer's fields stay; a ClusterAutoscaler deleted while the schedule
/// exists is not re-created: the status says the target is missing, and the controller does not
/// retry in a loop.
#[tokio::test]
async fn cluster_autoscaler_follows_the_window_and_is_never_recreated() {
    let _turn = CLUSTER_SCOPED.lock().await;
    let setup = Setup::new(CHART, "e2e-sdw", false, &[]).await.unwrap();
    let admin = setup.admin.clone();
    let autoscalers = dynamic(
        &admin,
        "autoscaling.openshift.io",
        "v1",
        "ClusterAutoscaler",
    )
    .await;
    let schedules = dynamic(&admin, "scaling.ebb.dev", "v1alpha1", "ScaleDownSchedule").await;

    // As the installer leaves it: scale-down off, limits set by another manager.
    apply(
        &admin,
        &json!({
            "apiVersion": "autoscaling.openshift.io/v1",
            "kind": "ClusterAutoscaler",
            "metadata": {"name": "default"},
            "spec": {
                "resourceLimits": {"maxNodesTotal": 24},
                "scaleDown": {"enabled": false, "delayAfterAdd": "10m", "unneededTime": "5m"}
            }
        }),
    )
    .await
    .unwrap();
    let open = next_minute(15);
    let name = setup.namespace.clone();
    apply(
        &admin,
        &schedule(
            &name,
            json!({"clusterAutoscaler": {"name": "default"}}),
            open,
        ),
    )
    .await
    .unwrap();

    let controller = Controller::ready(
        "scaledown-window",
        &setup.identity,
        "sdw-0",
        &["--leader-election=false"],
    )
    .await;

    let enabled = |ca: &DynamicObject| ca.data["spec"]["scaleDown"]["enabled"].as_bool();
    let flip = |want: bool, boundary: Timestamp| {
        let autoscalers = autoscalers.clone();
        async move {
            let wait = std::time::Duration::try_from(boundary.duration_since(Timestamp::now()))
                .unwrap_or_default()
                + Duration::from_secs(10);
            eventually(wait, || async {
                let ca = autoscalers.get("default").await.ok()?;
                (enabled(&ca) == Some(want)).then_some(Timestamp::now())
            })
            .await
        }
    };
    // Closed until the window opens.
    let status = eventually(Duration::from_secs(10), || async {
        let s = schedules.get(&name).await.ok()?;
        s.data["status"]["scaleDownEnabled"].as_bool().map(|_| s)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}:\n{}", controller.log_tail()));
    assert_eq!(status.data["status"]["scaleDownEnabled"], json!(false));
    assert_eq!(
        status.data["status"]["nextTransitionTime"],
        json!(ebb_runtime::time::rfc3339(open))
    );

    let opened = flip(true, open)
        .await
        .unwrap_or_else(|e| panic!("{e}:\n{}", controller.log_tail()));
    let close = open + SignedDuration::from_mins(1);
    let closed = flip(false, close)
        .await
        .unwrap_or_else(|e| panic!("{e}:\n{}", controller.log_tail()));
    println!(
        "figure: scaledown-window boundary-to-write latency open {} ms, close {} ms",
        opened.duration_since(open).as_millis(),
        closed.duration_since(close).as_millis()
    );
    assert!(
        opened >= open && opened.duration_since(open) < SignedDuration::from_secs(1),
        "opened at {opened}, window at {open}"
    );
    assert!(
        closed >= close && closed.duration_since(close) < SignedDuration::from_secs(1),
        "closed at {closed}, window end {close}"
    );
    let ca = autoscalers.get("default").await.unwrap();
    assert_eq!(
        ca.data["spec"]["resourceLimits"]["maxNodesTotal"],
        json!(24)
    );
    assert_eq!(ca.data["spec"]["scaleDown"]["delayAfterAdd"], json!("10m"));

    // The ClusterAutoscaler goes away (OpenShift's operator removed, say): never re-created,
    // even across the next reconciles.
    autoscalers
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    let since = Timestamp::now();
    let schedule_api = schedules.clone();
    let reported = eventually(Duration::from_secs(15), || async {
        let s = schedule_api.get(&name).await.ok()?;
        let missing = condition(&s, "Ready").is_some_and(|c| c["reason"] == "TargetNotFound");
        missing.then_some(s)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "no TargetNotFound condition: {e}:\n{}",
            controller.log_tail()
        )
    });
    println!(
        "ready condition: {}",
        condition(&reported, "Ready").unwrap()
    );
    settle(Duration::from_secs(8), || async {
        anyhow::ensure!(
            autoscalers.get_opt("default").await?.is_none(),
            "the deleted ClusterAutoscaler was re-created"
        );
        Ok(())
    })
    .await
    .unwrap();
    if let Some(log) = &cluster().audit_log {
        let writes = audit::writes(log, &setup.identity.username(), since).unwrap();
        let descriptions: Vec<String> = writes.iter().map(audit::Entry::describe).collect();
        assert!(
            writes.len() <= 3,
            "a missing target must not make the controller write in a loop: {descriptions:#?}"
        );
    }

    schedules
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    controller.stop().await;
}

/// Upstream cluster-autoscaler and Karpenter targets: outside the window the selected Nodes carry
/// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` (marked as ebb's) and the
/// selected NodePools an extra `nodes: "0"` budget; inside it both are gone, while a Node and a
/// NodePool that are not selected, and the NodePool's own budgets, are never touched.
#[tokio::test]
async fn node_annotations_and_karpenter_budgets_follow_the_window() {
    let _turn = CLUSTER_SCOPED.lock().await;
    let setup = Setup::new(
        CHART,
        "e2e-sdn",
        false,
        &[
            "targets.clusterAutoscaler.enabled=false",
            "targets.nodeAnnotation.enabled=true",
            "targets.karpenterNodePools.enabled=true",
            "clusterVersion.enabled=false",
        ],
    )
    .await
    .unwrap();
    let admin = setup.admin.clone();
    let pool = setup.namespace.clone();
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(admin.clone());
    let node_pools = dynamic(&admin, "karpenter.sh", "v1", "NodePool").await;
    for (name, selected) in [
        (format!("{pool}-a"), true),
        (format!("{pool}-b"), true),
        (format!("{pool}-x"), false),
    ] {
        let label = if selected {
            pool.clone()
        } else {
            "other".to_owned()
        };
        apply(
            &admin,
            &json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"e2e-pool": label}}}),
        )
        .await
        .unwrap();
        apply(&admin, &json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "labels": {"e2e-pool": label}},
            "spec": {"disruption": {"consolidateAfter": "1m", "budgets": [{"nodes": "20%"}]},
                     "template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                                           "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}}}))
        .await
        .unwrap();
    }
    let open = next_minute(15);
    let selector = json!({"matchLabels": {"e2e-pool": pool}});
    apply(
        &admin,
        &schedule(
            &format!("{pool}-nodes"),
            json!({"nodeAnnotation": {"nodeSelector": selector}}),
            open,
        ),
    )
    .await
    .unwrap();
    apply(
        &admin,
        &schedule(
            &format!("{pool}-pools"),
            json!({"karpenterNodePools": {"selector": selector}}),
            open,
        ),
    )
    .await
    .unwrap();

    let controller = Controller::ready(
        "scaledown-window",
        &setup.identity,
        "sdn-0",
        &[
            "--leader-election=false",
            "--enable-cluster-autoscaler=false",
            "--enable-node-annotation",
            "--enable-karpenter",
            "--enable-cluster-version=false",
        ],
    )
    .await;

    const DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
    // (selected nodes annotated, selected pools with a `nodes: "0"` budget)
    let state = || async {
        let mut annotated = Vec::new();
        let mut blocked = Vec::new();
        for suffix in ["a", "b", "x"] {
            let name = format!("{pool}-{suffix}");
            let node = nodes.get(&name).await.ok()?;
            annotated.push(
                node.metadata
                    .annotations
                    .unwrap_or_default()
                    .get(DISABLED)
                    .cloned()
                    == Some("true".into()),
            );
            let np = node_pools.get(&name).await.ok()?;
            let budgets = np.data["spec"]["disruption"]["budgets"].as_array()?.clone();
            assert!(
                budgets.iter().any(|b| b["nodes"] == json!("20%")),
                "the pool's own budget stays: {budgets:?}"
            );
            blocked.push(budgets.iter().any(|b| b["nodes"] == json!("0")));
        }
        Some((annotated, blocked))
    };
    let closed = (vec![true, true, false], vec![true, true, false]);
    let opened = (vec![false, false, false], vec![false, false, false]);
    let reach = |want: (Vec<bool>, Vec<bool>), by: Timestamp, what: &'static str| {
        let state = &state;
        let log = controller.log_tail();
        async move {
            let wait = std::time::Duration::try_from(by.duration_since(Timestamp::now()))
                .unwrap_or_default()
                + Duration::from_secs(10);
            if let Err(e) =
                eventually(wait, || async { state().await.filter(|s| *s == want) }).await
            {
                panic!("{what}: {e}: {:?}\n{log}", state().await);
            }
            Timestamp::now()
        }
    };
    reach(closed.clone(), Timestamp::now(), "outside the window").await;
    let opened_at = reach(opened, open, "inside the window").await;
    println!(
        "figure: scaledown-window nodes and NodePools released {} ms after the boundary",
        opened_at.duration_since(open).as_millis()
    );
    reach(
        closed.clone(),
        open + SignedDuration::from_mins(1),
        "after the window",
    )
    .await;

    // The schedule now blocks consolidation only: ebb's budget is replaced where it stands, with
    // the reasons (accepted by Karpenter's own NodePool schema), and there is still one.
    let mut only = schedule(
        &format!("{pool}-pools"),
        json!({"karpenterNodePools": {"selector": selector, "reasons": ["Underutilized"]}}),
        open,
    );
    only["spec"]["windows"] = json!([]);
    apply(&admin, &only).await.unwrap();
    let reasoned = || async {
        let mut out = Vec::new();
        for suffix in ["a", "b"] {
            let np = node_pools.get(&format!("{pool}-{suffix}")).await.ok()?;
            let budgets = np.data["spec"]["disruption"]["budgets"].as_array()?.clone();
            out.push(budgets);
        }
        out.iter()
            .all(|b| {
                *b == vec![
                    json!({"nodes": "20%"}),
                    json!({"nodes": "0", "reasons": ["Underutilized"]}),
                ]
            })
            .then_some(())
    };
    eventually(Duration::from_secs(15), reasoned)
        .await
        .unwrap_or_else(|e| panic!("reasons: {e}\n{}", controller.log_tail()));
    controller.stop().await;

    // Uninstall: `cleanup` (the chart's pre-delete hook) releases every node and pool, with the
    // chart's RBAC, and removes the finalizers; the schedules stay (the CRD is kept).
    let cleanup = ebb_e2e::process::run_job(
        "scaledown-window",
        &setup.identity,
        &[
            "cleanup",
            "--leader-election=false",
            "--enable-cluster-autoscaler=false",
            "--enable-node-annotation",
            "--enable-karpenter",
            "--enable-cluster-version=false",
        ],
    )
    .unwrap();
    let said = String::from_utf8_lossy(&cleanup.stdout);
    assert!(
        cleanup.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&cleanup.stderr)
    );
    for name in [format!("{pool}-nodes"), format!("{pool}-pools")] {
        assert!(
            said.contains(&format!("ScaleDownSchedule {name}: released "))
                && said.contains("removed finalizer scaling.ebb.dev/scaledown-window"),
            "{said}"
        );
        let kept = dynamic(&admin, "scaling.ebb.dev", "v1alpha1", "ScaleDownSchedule")
            .await
            .get(&name)
            .await
            .unwrap();
        assert!(
            kept.metadata.finalizers.unwrap_or_default().is_empty(),
            "{name}"
        );
    }
    assert_eq!(
        state().await,
        Some((vec![false, false, false], vec![false, false, false])),
        "released"
    );
}

/// Sets MachineConfigPool `pool`'s Updating condition, as the machine-config operator does.
async fn set_pool_updating(pools: &Api<DynamicObject>, pool: &str, updating: bool) {
    let now = ebb_runtime::time::rfc3339(Timestamp::now());
    let status = |b: bool| if b { "True" } else { "False" };
    pools
        .patch_status(
            pool,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"conditions": [
                {"type": "Updating", "status": status(updating), "lastTransitionTime": now,
                 "reason": "", "message": ""},
                {"type": "Updated", "status": status(!updating), "lastTransitionTime": now,
                 "reason": "", "message": ""}
            ]}})),
        )
        .await
        .unwrap();
}

/// OpenShift maintenance, the way OpenShift does it: with `followClusterUpgrade`, a
/// MachineConfigPool that is `Updating` (worker drains after the cluster-version operator is done)
/// keeps scale-down enabled outside every window, and its end disables it again. A schedule with
/// a MachineAutoscalers target reports whether the ClusterAutoscaler it depends on allows
/// scale-down (`ClusterAutoscalerReady`), following the ClusterAutoscaler. The pause annotation
/// on the ClusterAutoscaler stops every write to it.
#[tokio::test]
async fn machine_config_pool_updates_keep_scale_down_open_and_a_paused_autoscaler_is_left_alone() {
    let _turn = CLUSTER_SCOPED.lock().await;
    let setup = Setup::new(
        CHART,
        "e2e-sdm",
        true,
        &["targets.machineAutoscalers.enabled=true"],
    )
    .await
    .unwrap();
    let admin = setup.admin.clone();
    let ns = setup.namespace.clone();
    let autoscalers = dynamic(
        &admin,
        "autoscaling.openshift.io",
        "v1",
        "ClusterAutoscaler",
    )
    .await;
    let schedules = dynamic(&admin, "scaling.ebb.dev", "v1alpha1", "ScaleDownSchedule").await;
    let pools = dynamic(
        &admin,
        "machineconfiguration.openshift.io",
        "v1",
        "MachineConfigPool",
    )
    .await;
    apply(
        &admin,
        &json!({"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
                "metadata": {"name": "default"}, "spec": {"scaleDown": {"enabled": false}}}),
    )
    .await
    .unwrap();
    let pool = format!("{ns}-worker");
    apply(
        &admin,
        &json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                "metadata": {"name": pool}, "spec": {}}),
    )
    .await
    .unwrap();
    set_pool_updating(&pools, &pool, false).await;
    // A MachineSet and its MachineAutoscaler in the test's namespace.
    apply(
        &admin,
        &json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                "metadata": {"name": "worker-a", "namespace": ns}, "spec": {"replicas": 3}}),
    )
    .await
    .unwrap();
    apply(
        &admin,
        &json!({"apiVersion": "autoscaling.openshift.io/v1beta1", "kind": "MachineAutoscaler",
                "metadata": {"name": "worker-a", "namespace": ns},
                "spec": {"minReplicas": 1, "maxReplicas": 6, "scaleTargetRef": {
                    "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                    "name": "worker-a"}}}),
    )
    .await
    .unwrap();
    // Windows far from now: only maintenance can open scale-down.
    let far = Timestamp::now() + SignedDuration::from_hours(12);
    let mut ca_schedule = schedule(
        &format!("{ns}-ca"),
        json!({"clusterAutoscaler": {"name": "default"}}),
        far,
    );
    ca_schedule["spec"]["maintenance"] = json!({"followClusterUpgrade": true});
    apply(&admin, &ca_schedule).await.unwrap();
    let ma_name = format!("{ns}-ma");
    apply(
        &admin,
        &schedule(
            &ma_name,
            json!({"machineAutoscalers": {"namespace": ns}}),
            far,
        ),
    )
    .await
    .unwrap();

    let controller = Controller::ready(
        "scaledown-window",
        &setup.identity,
        "sdm-0",
        &[
            "--leader-election=false",
            "--enable-machine-autoscalers",
            "--namespace",
            &ns,
        ],
    )
    .await;
    let enabled = || async {
        let ca = autoscalers.get("default").await.ok()?;
        ca.data["spec"]["scaleDown"]["enabled"].as_bool()
    };
    let ca_ready = || async {
        let s = schedules.get(&ma_name).await.ok()?;
        condition(&s, "ClusterAutoscalerReady").map(|c| c["status"] == "True")
    };
    let reach = |want: bool, what: &'static str| {
        let log = controller.log_tail();
        async move {
            if let Err(e) = eventually(Duration::from_secs(15), || async {
                (enabled().await == Some(want) && ca_ready().await == Some(want)).then_some(())
            })
            .await
            {
                panic!(
                    "{what}: {e}: enabled {:?}, ClusterAutoscalerReady {:?}\n{log}",
                    enabled().await,
                    ca_ready().await
                );
            }
        }
    };
    reach(false, "no window, no maintenance").await;
    set_pool_updating(&pools, &pool, true).await;
    reach(true, "a MachineConfigPool is updating").await;
    let s = schedules.get(&format!("{ns}-ca")).await.unwrap();
    let message = condition(&s, "ScaleDownEnabled")
        .or_else(|| condition(&s, "Ready"))
        .map(|c| c["message"].to_string())
        .unwrap_or_default();
    println!("while the pool updates: {message}");
    set_pool_updating(&pools, &pool, false).await;
    reach(false, "the pool finished").await;

    // Paused on the ClusterAutoscaler itself: the next update is not written to it.
    autoscalers
        .patch(
            "default",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"annotations": {"scaling.ebb.dev/paused": "true"}}}),
            ),
        )
        .await
        .unwrap();
    set_pool_updating(&pools, &pool, true).await;
    settle(Duration::from_secs(4), || async {
        anyhow::ensure!(
            enabled().await == Some(false),
            "the ClusterAutoscaler's pause did not hold"
        );
        Ok(())
    })
    .await
    .unwrap();

    for name in [format!("{ns}-ca"), ma_name] {
        schedules
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();
    }
    autoscalers
        .delete("default", &DeleteParams::default())
        .await
        .unwrap();
    pools.delete(&pool, &DeleteParams::default()).await.unwrap();
    controller.stop().await;
}

/// A one-off window open now naming a HolidayCalendar: missing, scale-down stays off and the
/// schedule names the entry; created excluding tomorrow (UTC, the zone of a `from`/`to` window),
/// scale-down is on; edited to exclude today, it goes off again at once, with no restart.
#[tokio::test]
async fn a_holiday_calendar_edited_under_a_running_controller_takes_effect() {
    let _turn = CLUSTER_SCOPED.lock().await;
    let (now, today, midnight) = ebb_e2e::utc_day().await;

    let setup = Setup::new(CHART, "e2e-sdw-cal", false, &[]).await.unwrap();
    let admin = setup.admin.clone();
    let name = setup.namespace.clone();
    let autoscalers = dynamic(
        &admin,
        "autoscaling.openshift.io",
        "v1",
        "ClusterAutoscaler",
    )
    .await;
    let schedules = dynamic(&admin, "scaling.ebb.dev", "v1alpha1", "ScaleDownSchedule").await;
    let calendars = dynamic(&admin, "scaling.ebb.dev", "v1alpha1", "HolidayCalendar").await;
    apply(
        &admin,
        &json!({
            "apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
            "metadata": {"name": name}, "spec": {"scaleDown": {"enabled": false}},
        }),
    )
    .await
    .unwrap();
    let calendar = format!("{name}-freeze");
    apply(
        &admin,
        &json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "ScaleDownSchedule",
            "metadata": {"name": name},
            "spec": {
                "target": {"clusterAutoscaler": {"name": name}},
                "windows": [{
                    "from": (now - SignedDuration::from_hours(48)).to_string(),
                    "to": (now + SignedDuration::from_hours(96)).to_string(),
                    "excludeCalendars": [calendar],
                }],
            },
        }),
    )
    .await
    .unwrap();
    let controller = Controller::ready(
        "scaledown-window",
        &setup.identity,
        "sdw-cal-0",
        &["--leader-election=false"],
    )
    .await;
    let valid = || async {
        let s = schedules.get(&name).await.ok()?;
        condition(&s, "ScheduleValid").map(|c| (c["status"].clone(), c["message"].clone()))
    };
    let enabled = || async {
        let ca = autoscalers.get(&name).await.ok()?;
        ca.data["spec"]["scaleDown"]["enabled"].as_bool()
    };

    let missing = json!(format!(
        "spec.windows[0].excludeCalendars[0]: HolidayCalendar \"{calendar}\" not found"
    ));
    eventually(Duration::from_secs(15), || async {
        (valid().await == Some((json!("False"), missing.clone()))).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not named as missing\n{}", controller.log_tail()));
    assert_eq!(enabled().await, Some(false));

    let holiday = |date: jiff::civil::Date| {
        json!({
            "apiVersion": "scaling.ebb.dev/v1alpha1", "kind": "HolidayCalendar",
            "metadata": {"name": calendar}, "spec": {"dates": [date.to_string()]},
        })
    };
    apply(&admin, &holiday(today.tomorrow().unwrap()))
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        (enabled().await == Some(true)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: not enabled once valid\n{}", controller.log_tail()));
    let status = schedules.get(&name).await.unwrap();
    assert_eq!(
        status.data["status"]["nextTransitionTime"],
        json!(ebb_runtime::time::rfc3339(midnight)),
        "closes at the holiday's midnight"
    );

    let edited = std::time::Instant::now();
    apply(&admin, &holiday(today)).await.unwrap();
    eventually(Duration::from_secs(10), || async {
        (enabled().await == Some(false)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: the edit not acted on\n{}", controller.log_tail()));
    assert!(
        edited.elapsed() < Duration::from_secs(5),
        "{:?}",
        edited.elapsed()
    );

    // Tidy what is cluster-scoped.
    schedules
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(15), || async {
        schedules.get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    calendars
        .delete(&calendar, &DeleteParams::default())
        .await
        .unwrap();
    autoscalers
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}
