#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::{FINALIZER, NodeView, PauseMarks};
use ebb_core::plan::Category;
use ebb_crds::scaledown::ScaleDownScheduleSpec;
use ebb_testkit::utc;

/// Night windows in Zurich, scale-down closed at noon.
const NOON: &str = "2026-03-27T11:00:00Z";

fn schedule(name: &str, target: &str, finalizers: &[&str]) -> ScaleDownSchedule {
    let spec: ScaleDownScheduleSpec = serde_saphyr::from_str(&format!(
        "target: {target}\nmaintenance: {{followClusterUpgrade: true}}\nwindows:\n- schedule: \
         '0 22 * * *'\n  duration: 8h\n  timeZone: Europe/Zurich\n  excludeCalendars: [holidays]\n"
    ))
    .unwrap();
    let mut schedule = ScaleDownSchedule::new(name, spec);
    schedule.metadata.uid = Some(format!("uid-{name}"));
    schedule.metadata.resource_version = Some("12".into());
    schedule.metadata.generation = Some(1);
    schedule.metadata.creation_timestamp = Some(ebb_core::to_k8s_time(utc("2026-01-01T00:00:00Z")));
    schedule.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    schedule
}

fn nodes(finalizers: &[&str]) -> ScaleDownSchedule {
    schedule("s", "{nodeAnnotation: {nodeSelector: {}}}", finalizers)
}

fn deleting(mut schedule: ScaleDownSchedule) -> ScaleDownSchedule {
    schedule.metadata.deletion_timestamp = Some(ebb_core::to_k8s_time(utc(NOON)));
    schedule
}

fn paused(mut schedule: ScaleDownSchedule) -> ScaleDownSchedule {
    schedule.metadata.annotations = Some(
        [(
            ebb_core::pause::PAUSED_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]
        .into_iter()
        .collect(),
    );
    schedule
}

fn settings() -> Settings {
    Settings {
        served: EnabledTargets::all(),
        dry_run: false,
        pass: Pass::Reconcile,
    }
}

/// A Node this schedule disabled scale-down on (`by`), or one untouched (`None`).
fn node(name: &str, by: Option<&str>) -> NodeView {
    NodeView {
        name: name.into(),
        labels: Default::default(),
        resource_version: Some("3".into()),
        scale_down_disabled: by.map(|_| "true".to_owned()),
        disabled_by: by.map(str::to_owned),
        pause: PauseMarks::default(),
    }
}

fn observed<'a>(schedule: &'a ScaleDownSchedule, settings: Settings) -> Observed<'a> {
    Observed {
        schedule,
        settings,
        maintenance: ClusterMaintenance::default(),
        calendars: Calendars::new(),
        target: TargetRead::NotRead,
        schedules: Vec::new(),
    }
}

#[test]
fn reads_asks_only_for_what_the_finalizer_step_decides_from() {
    let now = utc(NOON);
    let s = settings();
    // Adding the finalizer, or deleted without it: nothing.
    assert_eq!(reads(&nodes(&[]), &s, now), Reads::default());
    assert_eq!(
        reads(&deleting(nodes(&["other"])), &s, now),
        Reads::default()
    );
    // Applied: the maintenance it follows, its calendars, its target and the other schedules.
    let applied = reads(&nodes(&[FINALIZER]), &s, now);
    assert!(applied.maintenance);
    assert_eq!(applied.calendars, ["holidays"]);
    assert!(matches!(applied.target, Some(ResolvedTarget::Nodes(_))));
    assert!(applied.schedules);
    // Without --enable-cluster-version the maintenance is not read.
    let mut no_cv = s;
    no_cv.served.cluster_version = false;
    assert!(!reads(&nodes(&[FINALIZER]), &no_cv, now).maintenance);
    // Paused, or its kind switched off: no target, no other schedules.
    for (schedule, settings) in [
        (paused(nodes(&[FINALIZER])), s),
        (
            nodes(&[FINALIZER]),
            Settings {
                served: EnabledTargets {
                    node_annotation: false,
                    ..EnabledTargets::all()
                },
                ..s
            },
        ),
    ] {
        let r = reads(&schedule, &settings, now);
        assert_eq!((r.target, r.schedules), (None, false), "{settings:?}");
        assert_eq!(r.calendars, ["holidays"]);
    }
    // Released on deletion: the target and the other schedules, no windows.
    let released = reads(&deleting(nodes(&[FINALIZER])), &s, now);
    assert!(released.target.is_some() && released.schedules);
    assert!(!released.maintenance && released.calendars.is_empty());
    // A paused schedule releases nothing, so reads nothing.
    assert_eq!(
        reads(&paused(deleting(nodes(&[FINALIZER]))), &s, now),
        Reads::default()
    );
    // A dry run adds no finalizer and releases nothing.
    let dry = Settings { dry_run: true, ..s };
    assert!(reads(&nodes(&[]), &dry, now).target.is_some());
    assert_eq!(
        reads(&deleting(nodes(&[FINALIZER])), &dry, now),
        Reads::default()
    );
}

#[test]
fn decide_adds_the_finalizer_alone_and_a_gone_schedule_writes_nothing() {
    let now = utc(NOON);
    let fresh = nodes(&[]);
    let plan = decide(&observed(&fresh, settings()), now);
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(plan.writes[0].category, Category::Metadata);
    assert!(plan.status.is_none() && plan.notices.is_empty());

    let gone = deleting(nodes(&["other"]));
    let plan = decide(&observed(&gone, settings()), now);
    assert!(plan.writes.is_empty() && plan.status.is_none() && plan.gauges.is_none());
}

#[test]
fn decide_applies_through_the_target_and_the_other_schedules_claims() {
    let now = utc(NOON);
    let mine = nodes(&[FINALIZER]);
    let mut seen = observed(&mine, settings());
    seen.target = TargetRead::Read(TargetObjects::nodes(vec![node("n1", None)]));
    // Closed at noon: the node gets scale-down disabled, by this schedule.
    let plan = decide(&seen, now);
    let targets: Vec<_> = plan.writes.iter().map(|w| w.target.name.clone()).collect();
    assert_eq!(targets, ["n1"]);
    assert!(plan.status.is_some());
    // An older schedule selecting every Node takes it over: no write, a conflict reported.
    let mut older = schedule(
        "older",
        "{nodeAnnotation: {nodeSelector: {}}}",
        &[FINALIZER],
    );
    older.metadata.creation_timestamp = Some(ebb_core::to_k8s_time(utc("2025-01-01T00:00:00Z")));
    seen.schedules = vec![older, mine.clone()];
    let plan = decide(&seen, now);
    assert!(plan.writes.is_empty(), "{:?}", plan.writes);
    let status = serde_json::to_string(&plan.status.unwrap().patch).unwrap();
    assert!(status.contains("older"), "{status}");
    // The API missing: no write, reported.
    seen.target = TargetRead::ApiMissing;
    let plan = decide(&seen, now);
    assert!(plan.writes.is_empty());
    assert!(plan.gauges.unwrap().values.unwrap().api_missing);
}

#[test]
fn a_release_waits_while_the_target_cannot_be_seen() {
    let now = utc(NOON);
    let leaving = deleting(nodes(&[FINALIZER]));
    let mut seen = observed(&leaving, settings());
    seen.target = TargetRead::Read(TargetObjects::nodes(vec![
        node("n1", Some("s")),
        node("n2", None),
    ]));
    let plan = decide(&seen, now);
    let writes: Vec<_> = plan
        .writes
        .iter()
        .map(|w| (w.target.name.as_str(), w.category))
        .collect();
    assert_eq!(
        writes,
        [("n1", Category::Target), ("s", Category::Metadata)],
        "n1 released, then the finalizer"
    );
    seen.target = TargetRead::ApiMissing;
    let plan = decide(&seen, now);
    assert!(plan.writes.is_empty(), "the finalizer stays");
    assert_eq!(plan.requeue, Requeue::After(API_MISSING_RETRY));
}

#[test]
fn uninstall_releases_whoever_else_selects_and_keeps_settings_when_asked() {
    let now = utc(NOON);
    let mine = paused(nodes(&[FINALIZER]));
    let release = Settings {
        pass: Pass::Uninstall {
            keep_settings: false,
        },
        ..settings()
    };
    // The schedule's own pause does not hold the uninstall back.
    let r = reads(&mine, &release, now);
    assert!(r.target.is_some() && !r.schedules && r.calendars.is_empty());
    let mut seen = observed(&mine, release);
    seen.target = TargetRead::Read(TargetObjects::nodes(vec![node("n1", Some("s"))]));
    let done = uninstall(&seen, now);
    assert_eq!(done.plan.writes.len(), 1);
    assert!(
        done.released.starts_with("released remove"),
        "{}",
        done.released
    );
    assert_eq!(
        decide(&seen, now).writes.len(),
        1,
        "decide is uninstall's plan"
    );
    // A dry run says the same and writes nothing.
    seen.settings.dry_run = true;
    let dry = uninstall(&seen, now);
    assert!(dry.plan.writes.is_empty());
    assert_eq!(dry.released, done.released);
    // --keep-settings reads nothing and releases nothing.
    let keep = Settings {
        pass: Pass::Uninstall {
            keep_settings: true,
        },
        ..settings()
    };
    assert_eq!(reads(&mine, &keep, now), Reads::default());
    let kept = uninstall(&observed(&mine, keep), now);
    assert!(kept.plan.writes.is_empty());
    assert_eq!(kept.released, "kept its target's settings in force");
}
