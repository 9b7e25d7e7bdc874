#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use clap::Parser;
use ebb_runtime::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};
use kube::runtime::watcher::Event;
use serde_json::json;

use crate::decide::{DISABLED_BY_ANNOTATION, SCALE_DOWN_DISABLED_ANNOTATION};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn targets(argv: &[&str]) -> EnabledTargets {
    Cli::try_parse_from(std::iter::once("x").chain(argv.iter().copied()))
        .unwrap()
        .run
        .targets()
}

#[test]
fn target_flags_default_to_openshift_and_switch_one_to_one() {
    assert_eq!(
        targets(&[]),
        EnabledTargets {
            cluster_autoscaler: true,
            node_annotation: false,
            machine_autoscalers: false,
            karpenter: false,
            cluster_version: true,
        }
    );
    assert_eq!(
        targets(&[
            "--enable-cluster-autoscaler=false",
            "--enable-node-annotation",
            "--enable-machine-autoscalers=true",
            "--enable-karpenter",
            "true",
            "--enable-cluster-version=false",
        ]),
        EnabledTargets {
            cluster_autoscaler: false,
            node_annotation: true,
            machine_autoscalers: true,
            karpenter: true,
            cluster_version: false,
        }
    );
    assert!(Cli::try_parse_from(["x", "--enable-karpenter=perhaps"]).is_err());
}

/// Whether a Node seen as `before` and then as `after` wakes the schedules: its view
/// ([`node_view`]) changed for the rules.
fn wakes(before: &PartialObjectMeta<Node>, after: &PartialObjectMeta<Node>) -> bool {
    !node_view(before).same_marks(&node_view(after))
}

fn with_annotations(
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
    version: &str,
) -> PartialObjectMeta<Node> {
    let map = |pairs: &[(&str, &str)]| {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    };
    let mut meta = PartialObjectMeta::<Node>::default();
    meta.metadata.name = Some("n1".into());
    meta.metadata.resource_version = Some(version.into());
    meta.metadata.labels = map(labels);
    meta.metadata.annotations = map(annotations);
    meta
}

#[test]
fn node_watch_wakes_only_on_labels_and_ebbs_annotations() {
    let node = |labels: &[(&str, &str)], annotations: &[(&str, &str)], version: &str| {
        with_annotations(labels, annotations, version)
    };
    let base = node(&[("pool", "a")], &[], "1");
    assert!(
        !wakes(&base, &node(&[("pool", "a")], &[], "2")),
        "a heartbeat"
    );
    assert!(!wakes(
        &base,
        &node(&[("pool", "a")], &[("volumes.kubernetes.io/x", "y")], "2")
    ));
    assert!(wakes(&base, &node(&[("pool", "b")], &[], "2")));
    assert!(wakes(
        &base,
        &node(
            &[("pool", "a")],
            &[(SCALE_DOWN_DISABLED_ANNOTATION, "true")],
            "2"
        )
    ));
    assert!(wakes(
        &base,
        &node(&[("pool", "a")], &[(DISABLED_BY_ANNOTATION, "nights")], "2")
    ));
}

#[test]
fn node_watch_wakes_when_a_node_is_paused_or_its_pause_lifted() {
    let node = |annotations: &[(&str, &str)]| with_annotations(&[], annotations, "1");
    let unpaused = node(&[]);
    let paused = node(&[(PAUSED_ANNOTATION, "true")]);
    let until = node(&[(PAUSED_UNTIL_ANNOTATION, "2026-03-27T13:00:00Z")]);
    let later = node(&[(PAUSED_UNTIL_ANNOTATION, "2026-03-27T14:00:00Z")]);
    assert!(wakes(&unpaused, &paused));
    assert!(wakes(&unpaused, &until));
    assert!(wakes(&until, &later));
    assert!(wakes(&paused, &node(&[(PAUSED_ANNOTATION, "false")])));
}

/// A schedule as the controller's store holds it, applied: `target` in JSON.
fn stored(name: &str, target: serde_json::Value) -> GuardedSchedule {
    let spec = serde_json::from_value(serde_json::json!({
        "target": target,
        "windows": [{"schedule": "0 22 * * *", "duration": "8h", "timeZone": "Europe/Zurich"}],
    }))
    .unwrap();
    Guarded(Ok(ScaleDownSchedule::new(name, spec)))
}

/// A Node event wakes the Nodes schedules it concerns when someone else changed what they read
/// (one that selects the Node before or after, or whose mark it carries), and the watch's list
/// wakes every Nodes schedule; the event of this process's own write to a Node wakes none (at an
/// edge, each of thousands of them woke every other Nodes schedule for a pass over every Node),
/// nor does a change of nothing they read, and no Node wakes a schedule of another kind.
#[tokio::test]
async fn node_events_wake_only_the_nodes_schedules_they_concern() {
    let (store, mut writer) = kube::runtime::reflector::store::<GuardedSchedule>();
    for schedule in [
        stored(
            "nights",
            json!({"nodeAnnotation": {"nodeSelector": {"matchLabels": {"pool": "a"}}}}),
        ),
        stored(
            "pool-b",
            json!({"nodeAnnotation": {"nodeSelector": {"matchLabels": {"pool": "b"}}}}),
        ),
        stored(
            "gpu",
            json!({"nodeAnnotation": {"nodeSelector": {"matchLabels": {"pool": "gpu"}}}}),
        ),
        stored(
            "autoscaler",
            json!({"clusterAutoscaler": {"name": "default"}}),
        ),
    ] {
        writer.apply_watcher_event(&Event::Apply(schedule));
    }
    let node = |pool: &str, version: &str, annotations: &[(&str, &str)]| {
        with_annotations(&[("pool", pool)], annotations, version)
    };
    let own = OwnWrites::new();
    let mine = [
        (SCALE_DOWN_DISABLED_ANNOTATION, "true"),
        (DISABLED_BY_ANNOTATION, "nights"),
    ];
    let events = vec![
        // Listed: every Nodes schedule, once, at the list's end.
        Event::Init,
        Event::InitApply(node("a", "1", &[])),
        Event::InitDone,
        // ebb's write (recorded below, before the stream runs): passed over.
        Event::Apply(node("a", "2", &mine)),
        // A heartbeat's annotation: nothing a schedule reads.
        Event::Apply(node(
            "a",
            "3",
            &[mine[0], mine[1], ("node.alpha.kubernetes.io/ttl", "0")],
        )),
        // Someone else removes ebb's annotation: the schedule that selects it.
        Event::Apply(node("a", "4", &[])),
        // Someone marks it as `pool-b`'s (a schedule that took it over, say): `nights` selects
        // it, and `pool-b`'s mark is on it.
        Event::Apply(node(
            "a",
            "5",
            &[mine[0], (DISABLED_BY_ANNOTATION, "pool-b")],
        )),
        // Moved to pool b, unmarked: the schedule it left and the one it joined.
        Event::Apply(node("b", "6", &[])),
        // Deleted: the schedule that selected it.
        Event::Delete(node("b", "7", &[])),
    ];
    let mut cache = Projected::default();
    let mut feed = cache.scope(node_view);
    let seen = futures::stream::iter(events).filter_map(move |event| {
        std::future::ready(feed.take_in(event, NodeView::same_marks).map(Ok))
    });
    let wakes = node_wakes(seen, &own, store);
    own.record(&ebb_core::plan::Target::named::<Node>(None, "n1"), "2");
    let woken: Vec<String> = wakes.map(|r| r.name).collect().await;
    // The store holds no order: compare the list's wakes, and the changes', sorted.
    let sorted = |names: &[String]| {
        let mut names = names.to_vec();
        names.sort();
        names
    };
    assert_eq!(
        sorted(&woken[..3]),
        ["gpu", "nights", "pool-b"],
        "{woken:?}"
    );
    // The unmarking 1 (nights), the marking 2, the move 2, the deletion 1 (pool-b).
    assert_eq!(
        sorted(&woken[3..]),
        ["nights", "nights", "nights", "pool-b", "pool-b", "pool-b"],
        "{woken:?}"
    );
    assert!(cache.all().unwrap().is_empty(), "the Node is gone");
}
