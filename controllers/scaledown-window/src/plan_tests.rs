#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_crds::scaledown::ScaleDownScheduleSpec;
use ebb_runtime::cli::plan::json_line;
use ebb_testkit::utc;

fn none() -> ClusterMaintenance {
    ClusterMaintenance::default()
}

fn upgrading() -> ClusterMaintenance {
    ClusterMaintenance::cluster_version(true)
}

fn schedule(yaml_spec: &str) -> ScaleDownSchedule {
    let spec: ScaleDownScheduleSpec = serde_saphyr::from_str(yaml_spec).unwrap();
    ScaleDownSchedule::new("s", spec)
}

#[test]
fn report_has_exactly_its_fields() {
    let s = schedule(
        "target: {clusterAutoscaler: {}}\nwindows:\n- {schedule: '0 20 * * 1-5', duration: 11h, timeZone: Europe/Zurich}\n",
    );
    let (report, _) = offline(&s, &Calendars::new(), utc("2026-03-27T11:00:00Z"), &none()).unwrap();
    assert_eq!(
        json_line(&report),
        "{\"name\":\"s\",\"scaleDownEnabled\":false,\"activeWindow\":null,\"nextTransition\":\"2026-03-27T19:00:00Z\",\"tzdata\":\"2026f\"}\n"
    );
}

#[test]
fn upgrading_counts_only_when_followed() {
    let follow = schedule(
        "target: {clusterAutoscaler: {}}\nwindows: []\nmaintenance: {followClusterUpgrade: true}\n",
    );
    let (report, _) = offline(
        &follow,
        &Calendars::new(),
        utc("2026-03-27T11:00:00Z"),
        &upgrading(),
    )
    .unwrap();
    assert!(report.scale_down_enabled);
    assert_eq!(report.next_transition, None);
    let ignore = schedule("target: {clusterAutoscaler: {}}\nwindows: []\n");
    let (report, _) = offline(
        &ignore,
        &Calendars::new(),
        utc("2026-03-27T11:00:00Z"),
        &upgrading(),
    )
    .unwrap();
    assert!(!report.scale_down_enabled);
}

#[test]
fn invalid_fields_are_named() {
    let s = schedule(
        "target: {clusterAutoscaler: {}}\nwindows:\n- {schedule: '0 20 * * 1-5', duration: 1h}\n- {schedule: '0 25 * * *', duration: 1h}\n",
    );
    let err = offline(&s, &Calendars::new(), utc("2026-03-27T11:00:00Z"), &none()).unwrap_err();
    assert_eq!(err.field, "spec.windows[1].schedule");
    let s = schedule("target: {}\nwindows: []\n");
    let err = offline(&s, &Calendars::new(), utc("2026-03-27T11:00:00Z"), &none()).unwrap_err();
    assert_eq!(err.field, "spec.target");
}

#[test]
fn text_lists_the_coming_flips() {
    let s = schedule(
        "target: {clusterAutoscaler: {}}\nwindows:\n- {schedule: '0 20 * * 1-5', duration: 11h, timeZone: Europe/Zurich}\n",
    );
    let at = utc("2026-03-27T11:00:00Z");
    let (report, decision) = offline(&s, &Calendars::new(), at, &none()).unwrap();
    let out = text(&report, &decision, at, &[]);
    assert!(
        out.starts_with(
            "ScaleDownSchedule s at 2026-03-27T11:00:00Z\n  scale-down: disabled (no window is open)\n  next transition: 2026-03-27T19:00:00Z\n  coming flips:\n    2026-03-27T19:00:00Z  scale-down enabled\n    2026-03-28T06:00:00Z  scale-down disabled\n"
        ),
        "{out}"
    );
    assert!(out.ends_with("  tzdata: 2026f (bundled)\n"), "{out}");
}

#[test]
fn text_shows_instants_in_the_windows_zones_beside_utc() {
    let s = schedule(
        "target: {clusterAutoscaler: {}}\nwindows:\n- {schedule: '0 20 * * 1-5', duration: 11h, timeZone: Europe/Zurich}\n- {schedule: '0 8 * * *', duration: 1h}\n",
    );
    let at = utc("2026-03-27T11:00:00Z");
    let (report, decision) = offline(&s, &Calendars::new(), at, &none()).unwrap();
    let zones = zones(&s);
    assert_eq!(zones.len(), 1, "UTC is not shown twice");
    let out = text(&report, &decision, at, &zones);
    assert!(
        out.starts_with(
            "ScaleDownSchedule s at 2026-03-27T11:00:00Z (2026-03-27T12:00:00+01:00 Europe/Zurich)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "next transition: 2026-03-27T19:00:00Z (2026-03-27T20:00:00+01:00 Europe/Zurich)"
        ),
        "{out}"
    );
}

/// A one-off window spanning Zurich's spring-forward night, as `plan` reports it: open from its
/// first instant, its end the next transition (22 h elapsed later), then closed for good.
#[test]
fn a_one_off_window_spanning_a_dst_change() {
    let s = schedule(
        "target: {clusterAutoscaler: {}}\nwindows:\n- {from: '2026-03-28T20:00:00+01:00', to: '2026-03-29T18:00:00+02:00'}\n",
    );
    let (before, _) = offline(&s, &Calendars::new(), utc("2026-03-28T18:00:00Z"), &none()).unwrap();
    assert!(!before.scale_down_enabled);
    assert_eq!(
        before.next_transition.as_deref(),
        Some("2026-03-28T19:00:00Z")
    );
    let (open, _) = offline(&s, &Calendars::new(), utc("2026-03-29T01:30:00Z"), &none()).unwrap();
    assert!(open.scale_down_enabled);
    assert_eq!(open.active_window, Some(0));
    assert_eq!(
        open.next_transition.as_deref(),
        Some("2026-03-29T16:00:00Z")
    );
    let (after, _) = offline(&s, &Calendars::new(), utc("2026-03-29T16:00:00Z"), &none()).unwrap();
    assert!(!after.scale_down_enabled);
    assert_eq!(after.next_transition, None);
}
