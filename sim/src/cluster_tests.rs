#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

fn t(minutes: i64) -> Timestamp {
    utc("2026-03-11T02:00:00Z") + SignedDuration::from_mins(minutes)
}

#[test]
fn an_upgrade_is_progressing_from_its_start_until_its_end() {
    let upgrades = Upgrades {
        runs: vec![(t(0), SignedDuration::from_hours(2))],
    };
    assert!(!upgrades.progressing(t(-1)));
    assert!(upgrades.progressing(t(0)));
    assert!(upgrades.progressing(t(119)));
    assert!(!upgrades.progressing(t(120)));
}

#[test]
fn idle_nodes_go_only_while_scale_down_is_enabled_and_after_the_unneeded_time() {
    let mut ca = Autoscaler::new(t(0), 5, SignedDuration::from_mins(10));
    ca.step(t(0), 2, false);
    ca.step(t(30), 2, false);
    assert_eq!(ca.nodes(), 5, "disabled: nothing goes, however long idle");
    ca.step(t(31), 2, true);
    assert_eq!(ca.nodes(), 2, "enabled: the three idle nodes go");
    assert_eq!(ca.removed(), 3);
    // 5 nodes for 31 minutes.
    assert!((ca.node_hours() - 5.0 * 31.0 / 60.0).abs() < 1e-9);
}

#[test]
fn a_node_must_be_unneeded_for_the_whole_unneeded_time() {
    let mut ca = Autoscaler::new(t(0), 3, SignedDuration::from_mins(10));
    ca.step(t(0), 2, true);
    ca.step(t(9), 2, true);
    assert_eq!(ca.nodes(), 3);
    ca.step(t(10), 2, true);
    assert_eq!(ca.nodes(), 2);
    // Demand comes back: nodes are added at once, whatever scale-down says.
    ca.step(t(11), 4, false);
    assert_eq!(ca.nodes(), 4);
    // Needed again resets the unneeded clock.
    ca.step(t(12), 2, false);
    ca.step(t(13), 4, false);
    ca.step(t(20), 2, true);
    assert_eq!(ca.nodes(), 4, "unneeded since 20 only");
}
