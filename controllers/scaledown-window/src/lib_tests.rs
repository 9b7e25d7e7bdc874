#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use clap::Parser;
use ebb_runtime::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};
use kube::runtime::watcher::Event;

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

/// A Node event wakes the schedules when someone else changed what they read, and so does the
/// watch's list; the event of this process's own write to a Node wakes none (at an edge, each
/// of thousands of them woke every other Nodes schedule for a pass over every Node), nor does a
/// change of nothing they read.
#[tokio::test]
async fn own_node_writes_wake_no_schedule() {
    let node = |version: &str, annotations: &[(&str, &str)]| {
        with_annotations(&[("pool", "a")], annotations, version)
    };
    let own = OwnWrites::new();
    let mine = [
        (SCALE_DOWN_DISABLED_ANNOTATION, "true"),
        (DISABLED_BY_ANNOTATION, "nights"),
    ];
    let events = vec![
        // Listed: one wake-up at the list's end.
        Event::Init,
        Event::InitApply(node("1", &[])),
        Event::InitDone,
        // ebb's write (recorded below, before the stream runs): passed over.
        Event::Apply(node("2", &mine)),
        // A heartbeat's annotation: nothing a schedule reads.
        Event::Apply(node(
            "3",
            &[mine[0], mine[1], ("node.alpha.kubernetes.io/ttl", "0")],
        )),
        // Someone else removes ebb's annotation: woken.
        Event::Apply(node("4", &[])),
    ];
    let mut cache = Projected::default();
    let mut feed = cache.scope(node_view);
    let seen = futures::stream::iter(events).filter_map(move |event| {
        std::future::ready(feed.take_in(event, NodeView::same_marks).map(Ok))
    });
    let wakes = node_wakes(seen, &own);
    own.record(&ebb_core::plan::Target::named::<Node>(None, "n1"), "2");
    assert_eq!(wakes.count().await, 2);
    let views = cache.all().unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].resource_version.as_deref(), Some("4"));
    assert_eq!(views[0].disabled_by, None);
}
