#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;
use http::Method;
use serde_json::json;

use super::*;

#[derive(clap::Args, Debug)]
struct Run {
    #[command(flatten)]
    common: CommonArgs,
    #[arg(long)]
    enable_thing: bool,
}

#[test]
fn flags_parse_as_the_binary_parses_them() {
    let args: Run = flags(&[
        "--leader-election=false",
        "--enable-thing",
        "--namespace",
        "a",
    ])
    .unwrap();
    assert!(args.enable_thing);
    assert!(!args.common.leader_election);
    assert_eq!(args.common.watched_namespaces(), ["a"]);
    let wrong = flags::<Run>(&["--no-such-flag"]).unwrap_err();
    assert!(wrong.to_string().contains("--no-such-flag"), "{wrong}");
}

#[tokio::test(start_paused = true)]
async fn objects_are_applied_and_a_bad_one_is_named() {
    let world = World::new(utc("2026-03-10T09:00:00Z"));
    world
        .apply(
            "s.yaml",
            &[json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns"}})],
        )
        .unwrap();
    assert!(world.fake.get_json("v1", "ConfigMap", "ns", "cm").is_some());
    let wrong = world
        .apply(
            "s.yaml",
            &[json!({"kind": "ConfigMap", "metadata": {"name": "x"}})],
        )
        .unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "s.yaml: objects[0]: object has no apiVersion"
    );
}

#[tokio::test(start_paused = true)]
async fn the_driver_ends_the_simulation_and_controllers_that_stop_early_are_an_error() {
    let out = alongside("x", std::future::pending(), async { 7 })
        .await
        .unwrap();
    assert_eq!(out, 7);
    let stopped = alongside("x", async {}, std::future::pending::<()>())
        .await
        .unwrap_err();
    assert_eq!(
        stopped.to_string(),
        "x stopped before the end of the simulation"
    );
}

#[test]
fn a_write_is_described_by_its_target_and_the_fields_it_sets() {
    let write = RecordedRequest {
        method: Method::PATCH,
        path: "/apis/autoscaling.openshift.io/v1/clusterautoscalers/default".into(),
        query: vec![],
        patch: None,
        body: Some(
            json!({"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
            "metadata": {"name": "default"}, "spec": {"scaleDown": {"enabled": false}}}),
        ),
        status: Some(200),
        at: utc("2026-03-10T09:00:00Z"),
    };
    assert_eq!(
        describe(&write),
        "PATCH clusterautoscalers/default spec.scaleDown.enabled=false"
    );
    let status = RecordedRequest {
        path: "/apis/scaling.ebb.dev/v1alpha1/scaledownschedules/nights/status".into(),
        body: Some(json!({"status": {"scaleDownEnabled": true, "conditions": [{}, {}]}})),
        status: Some(409),
        ..write
    };
    assert_eq!(
        describe(&status),
        "PATCH scaledownschedules/nights/status status.conditions=[2 items] status.scaleDownEnabled=true -> 409"
    );
}
