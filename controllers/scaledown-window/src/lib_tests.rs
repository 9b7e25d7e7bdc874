#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use clap::Parser;

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

#[test]
fn node_watch_wakes_only_on_labels_and_ebbs_annotations() {
    let node = |labels: &[(&str, &str)], annotations: &[(&str, &str)]| {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            )
        };
        let mut meta = PartialObjectMeta::<Node>::default();
        meta.metadata.labels = map(labels);
        meta.metadata.annotations = map(annotations);
        meta
    };
    let base = node_marks(&node(&[("pool", "a")], &[]));
    assert_eq!(
        base,
        node_marks(&node(&[("pool", "a")], &[("volumes.kubernetes.io/x", "y")]))
    );
    assert_ne!(base, node_marks(&node(&[("pool", "b")], &[])));
    assert_ne!(
        base,
        node_marks(&node(
            &[("pool", "a")],
            &[(SCALE_DOWN_DISABLED_ANNOTATION, "true")]
        ))
    );
}

#[test]
fn node_watch_wakes_when_a_node_is_paused_or_its_pause_lifted() {
    let node = |annotations: &[(&str, &str)]| {
        let mut meta = PartialObjectMeta::<Node>::default();
        meta.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        meta
    };
    let unpaused = node_marks(&node(&[]));
    let paused = node_marks(&node(&[(PAUSED_ANNOTATION, "true")]));
    let until = node_marks(&node(&[(PAUSED_UNTIL_ANNOTATION, "2026-03-27T13:00:00Z")]));
    let later = node_marks(&node(&[(PAUSED_UNTIL_ANNOTATION, "2026-03-27T14:00:00Z")]));
    assert_ne!(unpaused, paused);
    assert_ne!(unpaused, until);
    assert_ne!(until, later);
    assert_ne!(paused, node_marks(&node(&[(PAUSED_ANNOTATION, "false")])));
}

/// A Node event wakes the schedules when someone else changed what they read; the event of this
/// process's own write to a Node wakes none (at an edge, each of thousands of them woke every
/// other Nodes schedule for a pass over every Node), nor does a change of nothing they read.
#[tokio::test]
async fn own_node_writes_wake_no_schedule() {
    let node = |version: &str, annotations: &[(&str, &str)]| {
        let mut meta = PartialObjectMeta::<Node>::default();
        meta.metadata.name = Some("n1".into());
        meta.metadata.resource_version = Some(version.into());
        meta.metadata.labels = Some([("pool".to_owned(), "a".to_owned())].into());
        meta.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        Ok(meta)
    };
    let own = OwnWrites::new();
    let mine = [
        (SCALE_DOWN_DISABLED_ANNOTATION, "true"),
        (DISABLED_BY_ANNOTATION, "nights"),
    ];
    let events = vec![
        // Listed: new to the wake-ups.
        node("1", &[]),
        // ebb's write (recorded below, before the stream runs): passed over.
        node("2", &mine),
        // A heartbeat's annotation: nothing a schedule reads.
        node(
            "3",
            &[mine[0], mine[1], ("node.alpha.kubernetes.io/ttl", "0")],
        ),
        // Someone else removes ebb's annotation: woken.
        node("4", &[]),
    ];
    let wakes = node_wakes(futures::stream::iter(events), &own);
    own.record(&ebb_core::plan::Target::named::<Node>(None, "n1"), "2");
    assert_eq!(wakes.count().await, 2);
}
