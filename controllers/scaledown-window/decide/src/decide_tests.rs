//! Tests of every rule in `decide`: table tests and properties named for the rule they guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use ebb_core::ConditionUpdate;
use ebb_crds::scaledown::{
    ClusterAutoscalerTarget, KarpenterNodePoolsTarget, MachineAutoscalersTarget, Maintenance,
    NodeAnnotationTarget, ScaleDownScheduleSpec, ScaleDownTarget, Window as WindowSpec,
};
use ebb_schedule::Zone;
use ebb_testkit::utc;
use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::report::decision_message;

/// [`crate::decide`] with no HolidayCalendar.
fn decide(spec: &ScaleDownScheduleSpec, now: Timestamp, m: &ClusterMaintenance) -> Decision {
    crate::decide_windows(spec, &Calendars::new(), now, m)
}

/// [`parse_windows`] with no HolidayCalendar.
fn parse_windows_alone(windows: &[WindowSpec]) -> Result<Vec<Window>, InvalidSpec> {
    parse_windows(windows, &Calendars::new())
}
use super::*;

/// An instant for plans whose objects carry no pause: any would do.
const T0: Timestamp = Timestamp::UNIX_EPOCH;

/// Maintenance seen through the ClusterVersion only: `Progressing` or not, no pool updating.
fn cv(progressing: bool) -> ClusterMaintenance {
    ClusterMaintenance::cluster_version(progressing)
}

fn window(schedule: &str, duration: &str, tz: &str) -> WindowSpec {
    WindowSpec {
        schedule: Some(schedule.into()),
        duration: Some(duration.into()),
        time_zone: tz.into(),
        ..WindowSpec::default()
    }
}

fn once(from: &str, to: &str) -> WindowSpec {
    WindowSpec {
        from: Some(from.into()),
        to: Some(to.into()),
        time_zone: "UTC".into(),
        ..WindowSpec::default()
    }
}

/// `excludeDates`: a weekend window stays closed on an excluded Saturday (whole local day in its
/// zone, so the window opens at Sunday's midnight), and a bad entry is named.
#[test]
fn excluded_dates_keep_a_window_closed_on_those_local_days() {
    let mut weekend = window("0 0 * * 6", "48h", "Europe/Zurich");
    weekend.exclude_dates = vec!["2026-03-28".into()];
    let spec = spec(vec![weekend.clone()], false);
    let at = |t: &str| decide(&spec, utc(t), &ClusterMaintenance::default());
    // Saturday 28 March in Zurich (CET): closed; it opens at Sunday 00:00 CET (23:00Z).
    assert!(!at("2026-03-28T12:00:00Z").scale_down_enabled);
    assert_eq!(
        at("2026-03-28T12:00:00Z").next_transition,
        Some(utc("2026-03-28T23:00:00Z"))
    );
    // Sunday (spring-forward): open until Monday 00:00 CET + 48h elapsed = 01:00 CEST (23:00Z).
    let sunday = at("2026-03-29T12:00:00Z");
    assert!(sunday.scale_down_enabled);
    assert_eq!(sunday.next_transition, Some(utc("2026-03-29T23:00:00Z")));
    // The next weekend is not excluded.
    assert!(at("2026-04-04T12:00:00Z").scale_down_enabled);
    weekend.exclude_dates = vec!["2026-02-30".into()];
    assert_eq!(
        parse_windows_alone(&[weekend]).unwrap_err().field,
        "spec.windows[0].excludeDates"
    );
}

/// `excludeCalendars`: the same Saturday from a HolidayCalendar closes the window as
/// `excludeDates` does; a calendar missing or holding a date that is none disables scale-down
/// (fail safe) and names the entry.
#[test]
fn a_holiday_calendar_keeps_a_window_closed_and_a_missing_one_disables_scale_down() {
    let mut weekend = window("0 0 * * 6", "48h", "Europe/Zurich");
    weekend.exclude_calendars = vec!["freeze".into()];
    let spec = spec(vec![weekend], false);
    let mut freeze = Calendars::new();
    freeze.insert("freeze", &["2026-03-28"]);
    let at = |calendars: &Calendars, t: &str| {
        crate::decide_windows(&spec, calendars, utc(t), &ClusterMaintenance::default())
    };
    assert!(!at(&freeze, "2026-03-28T12:00:00Z").scale_down_enabled);
    assert_eq!(
        at(&freeze, "2026-03-28T12:00:00Z").next_transition,
        Some(utc("2026-03-28T23:00:00Z"))
    );
    assert!(at(&freeze, "2026-03-29T12:00:00Z").scale_down_enabled);
    assert!(at(&freeze, "2026-04-04T12:00:00Z").scale_down_enabled);
    // Missing: closed even inside the window, and the entry is named.
    let missing = at(&Calendars::new(), "2026-04-04T12:00:00Z");
    assert!(!missing.scale_down_enabled);
    match &missing.reason {
        Reason::InvalidSchedule(invalid) => {
            assert_eq!(invalid.field, "spec.windows[0].excludeCalendars[0]");
            assert_eq!(invalid.message, "HolidayCalendar \"freeze\" not found");
        }
        other => panic!("{other:?}"),
    }
    let mut broken = Calendars::new();
    broken.insert("freeze", &["2026-02-30"]);
    let invalid = at(&broken, "2026-04-04T12:00:00Z");
    assert!(!invalid.scale_down_enabled);
    assert!(matches!(invalid.reason, Reason::InvalidSchedule(_)));
}

/// A one-off window (`from`/`to`, RFC 3339 with offsets) beside a recurring one: open exactly
/// over `[from, to)` across a DST change (Europe/Zurich springs forward 2026-03-29 02:00 local;
/// the window is given in the offsets before and after, so its length is 23 h of wall clock and
/// 22 h elapsed), then never again; a window that is neither kind names itself.
#[test]
fn a_one_off_window_opens_once_across_a_dst_change() {
    let nights = window("0 22 * * 1-5", "1h", "Europe/Zurich");
    let freeze = once("2026-03-28T20:00:00+01:00", "2026-03-29T18:00:00+02:00");
    let spec = spec(vec![nights, freeze], false);
    let at = |t: &str| decide(&spec, utc(t), &ClusterMaintenance::default());
    assert!(!at("2026-03-28T18:59:59Z").scale_down_enabled);
    let open = at("2026-03-28T19:00:00Z");
    assert!(open.scale_down_enabled);
    assert_eq!(open.active_window, Some(1));
    assert_eq!(open.next_transition, Some(utc("2026-03-29T16:00:00Z")));
    assert!(at("2026-03-29T15:59:59Z").scale_down_enabled);
    assert!(!at("2026-03-29T16:00:00Z").scale_down_enabled);
    // The recurring window still opens on weekdays; the one-off one never again.
    assert_eq!(at("2026-03-30T20:00:00Z").active_window, Some(0));
    assert_eq!(at("2027-03-28T19:30:00Z").active_window, None);
    // Neither recurring nor once, and a one-off end before its start: named.
    let mut both = once("2026-03-28T20:00:00+01:00", "2026-03-29T18:00:00+02:00");
    both.schedule = Some("0 22 * * *".into());
    both.duration = Some("1h".into());
    assert_eq!(
        parse_windows_alone(&[both]).unwrap_err().field,
        "spec.windows[0]"
    );
    let backwards = once("2026-03-29T18:00:00+02:00", "2026-03-28T20:00:00+01:00");
    assert!(
        parse_windows_alone(&[backwards])
            .unwrap_err()
            .field
            .starts_with("spec.windows[0].")
    );
    let garbled = once("yesterday", "2026-03-28T20:00:00+01:00");
    assert_eq!(
        parse_windows_alone(&[garbled]).unwrap_err().field,
        "spec.windows[0].from"
    );
}

fn spec(windows: Vec<WindowSpec>, follow_upgrades: bool) -> ScaleDownScheduleSpec {
    ScaleDownScheduleSpec {
        target: ScaleDownTarget {
            cluster_autoscaler: Some(ClusterAutoscalerTarget::default()),
            ..ScaleDownTarget::default()
        },
        windows,
        maintenance: follow_upgrades.then_some(Maintenance {
            follow_cluster_upgrade: true,
        }),
    }
}

/// The example of examples/scaledown-schedule.yaml.
fn workday_nights() -> ScaleDownScheduleSpec {
    spec(
        vec![
            window("0 20 * * 1-5", "11h", "Europe/Zurich"),
            window("0 0 * * 6", "48h", "Europe/Zurich"),
        ],
        true,
    )
}

fn enabled(spec: &ScaleDownScheduleSpec, t: Timestamp) -> bool {
    decide(spec, t, &cv(false)).scale_down_enabled
}

// ----- the schedule: table tests -----------------------------------------------------------------

#[test]
fn workday_nights_example_across_the_spring_forward_weekend() {
    let s = workday_nights();
    type Case<'a> = (&'a str, bool, Option<usize>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        // Friday noon CET: closed until Friday 20:00 CET.
        (
            "2026-03-27T11:00:00Z",
            false,
            None,
            Some("2026-03-27T19:00:00Z"),
        ),
        // Friday 20:00 CET: window 0 opens; the Saturday window (from Sat 00:00 CET) overlaps and
        // runs 48 elapsed hours, to Monday 01:00 CEST (the clocks sprang forward on Sunday).
        (
            "2026-03-27T19:00:00Z",
            true,
            Some(0),
            Some("2026-03-29T23:00:00Z"),
        ),
        (
            "2026-03-27T22:59:59Z",
            true,
            Some(0),
            Some("2026-03-29T23:00:00Z"),
        ),
        (
            "2026-03-28T03:00:00Z",
            true,
            Some(0),
            Some("2026-03-29T23:00:00Z"),
        ),
        // Saturday 07:00 CET: window 0 closed, window 1 still open: no flip.
        (
            "2026-03-28T06:00:00Z",
            true,
            Some(1),
            Some("2026-03-29T23:00:00Z"),
        ),
        (
            "2026-03-29T22:59:59Z",
            true,
            Some(1),
            Some("2026-03-29T23:00:00Z"),
        ),
        // Monday 01:00 CEST: closed until Monday 20:00 CEST.
        (
            "2026-03-29T23:00:00Z",
            false,
            None,
            Some("2026-03-30T18:00:00Z"),
        ),
        (
            "2026-03-30T18:00:00Z",
            true,
            Some(0),
            Some("2026-03-31T05:00:00Z"),
        ),
    ];
    for (at, on, active, next) in cases {
        let d = decide(&s, utc(at), &cv(false));
        assert_eq!(
            (d.scale_down_enabled, d.active_window, d.next_transition),
            (on, active, next.map(utc)),
            "at {at}"
        );
    }
    // The open window hands over at Saturday 07:00 CET without a flip: look again then.
    assert_eq!(
        decide(&s, utc("2026-03-28T03:00:00Z"), &cv(false)).requeue_at,
        Some(utc("2026-03-28T06:00:00Z"))
    );
}

#[test]
fn preview_lists_alternating_flips() {
    let d = decide(&workday_nights(), utc("2026-03-27T11:00:00Z"), &cv(false));
    assert_eq!(
        d.next_transitions,
        vec![
            (utc("2026-03-27T19:00:00Z"), true),
            (utc("2026-03-29T23:00:00Z"), false),
            (utc("2026-03-30T18:00:00Z"), true),
            (utc("2026-03-31T05:00:00Z"), false),
            (utc("2026-03-31T18:00:00Z"), true),
        ]
    );
    assert_eq!(d.next_transitions.len(), PREVIEW_LEN);
}

#[test]
fn new_york_nights_across_both_dst_changes() {
    let s = spec(vec![window("0 22 * * *", "8h", "America/New_York")], false);
    // Sat 2026-03-07 22:00 EST = 03:00Z; eight elapsed hours later it is 07:00 EDT.
    assert_eq!(
        decide(&s, utc("2026-03-08T02:59:59Z"), &cv(false)).next_transition,
        Some(utc("2026-03-08T03:00:00Z"))
    );
    assert_eq!(
        decide(&s, utc("2026-03-08T03:00:00Z"), &cv(false)).next_transition,
        Some(utc("2026-03-08T11:00:00Z"))
    );
    // Sat 2026-10-31 22:00 EDT = 02:00Z; eight elapsed hours later it is 05:00 EST.
    let d = decide(&s, utc("2026-11-01T02:00:00Z"), &cv(false));
    assert!(d.scale_down_enabled);
    assert_eq!(d.next_transition, Some(utc("2026-11-01T10:00:00Z")));
}

#[test]
fn cron_time_in_a_gap_fires_when_the_gap_ends_and_in_a_fold_once() {
    let s = spec(vec![window("30 2 * * *", "1h", "Europe/Zurich")], false);
    // 2026-03-29: 02:30 does not exist in Zurich; the window opens at 03:00 CEST = 01:00Z.
    assert_eq!(
        decide(&s, utc("2026-03-29T00:00:00Z"), &cv(false)).next_transition,
        Some(utc("2026-03-29T01:00:00Z"))
    );
    // 2026-10-25: 02:30 happens twice; the first (CEST, 00:30Z) opens for one elapsed hour, and
    // the repeated 02:30 CET does not open it again.
    let d = decide(&s, utc("2026-10-25T00:30:00Z"), &cv(false));
    assert!(d.scale_down_enabled);
    assert_eq!(
        d.next_transitions[..2],
        [
            (utc("2026-10-25T01:30:00Z"), false),
            (utc("2026-10-26T01:30:00Z"), true)
        ]
    );
}

#[test]
fn no_windows_means_never_enabled() {
    let d = decide(
        &spec(vec![], false),
        utc("2026-01-01T00:00:00Z"),
        &cv(false),
    );
    assert!(!d.scale_down_enabled);
    assert_eq!(d.reason, Reason::OutsideWindows);
    assert_eq!((d.next_transition, d.requeue_at), (None, None));
    assert!(d.next_transitions.is_empty());
}

#[test]
fn invalid_windows_fail_safe_naming_the_field() {
    let cases = [
        (
            window("0 25 * * *", "1h", "UTC"),
            "spec.windows[1].schedule",
        ),
        (
            window("0 20 * * 1-5", "11 hours", "UTC"),
            "spec.windows[1].duration",
        ),
        (
            window("0 20 * * 1-5", "0m", "UTC"),
            "spec.windows[1].duration",
        ),
        (
            window("0 20 * * 1-5", "1h", "Europe/Zürich"),
            "spec.windows[1].timeZone",
        ),
        (
            window("0 0 20 * * 1-5", "1h", "UTC"),
            "spec.windows[1].schedule",
        ),
    ];
    for (bad, field) in cases {
        // Window 0 is open at the instant: an invalid sibling still disables scale-down.
        let s = spec(vec![window("* * * * *", "1h", "UTC"), bad.clone()], true);
        let d = decide(&s, utc("2026-01-01T12:00:00Z"), &cv(true));
        assert!(!d.scale_down_enabled, "{bad:?}");
        let Reason::InvalidSchedule(invalid) = &d.reason else {
            panic!("{bad:?}: {:?}", d.reason)
        };
        assert_eq!(invalid.field, field, "{bad:?}");
        assert!(
            invalid
                .message
                .contains(bad.schedule.as_deref().unwrap_or_default())
                || invalid
                    .message
                    .contains(bad.duration.as_deref().unwrap_or_default())
                || invalid.message.contains(&bad.time_zone),
            "{invalid}"
        );
        assert_eq!(
            (d.active_window, d.next_transition, d.requeue_at),
            (None, None, None)
        );
    }
}

#[test]
fn cluster_upgrade_enables_only_when_followed() {
    let at = utc("2026-03-27T11:00:00Z");
    let followed = decide(&workday_nights(), at, &cv(true));
    assert!(followed.scale_down_enabled);
    assert_eq!(followed.reason, Reason::ClusterUpgrade);
    // The flip depends on the upgrade ending (a watch event), not on the clock...
    assert_eq!(followed.next_transition, None);
    assert!(followed.next_transitions.is_empty());
    // ...but the active window still changes by the clock.
    assert_eq!(followed.requeue_at, Some(utc("2026-03-27T19:00:00Z")));
    let mut not_followed = workday_nights();
    not_followed.maintenance = None;
    assert!(!decide(&not_followed, at, &cv(true)).scale_down_enabled);
    // An open window keeps its reason while upgrading.
    let d = decide(&workday_nights(), utc("2026-03-27T20:00:00Z"), &cv(true));
    assert_eq!(
        (d.reason, d.active_window),
        (Reason::WindowOpen(0), Some(0))
    );
}

#[test]
fn progressing_true_means_upgrading() {
    assert!(cluster_upgrading([
        ("Available", "True"),
        ("Progressing", "True")
    ]));
    assert!(!cluster_upgrading([("Progressing", "False")]));
    assert!(!cluster_upgrading([("Progressing", "Unknown")]));
    assert!(!cluster_upgrading(Vec::<(&str, &str)>::new()));
}

fn pools(names: &[&str]) -> ClusterMaintenance {
    ClusterMaintenance::new(false, names.iter().map(|n| (*n).to_owned()).collect())
}

#[test]
fn maintenance_is_open_while_the_cluster_version_progresses_or_any_pool_updates() {
    // Friday noon: no window open.
    let at = utc("2026-03-27T11:00:00Z");
    let both = ClusterMaintenance::new(true, vec!["worker".into(), "master".into()]);
    let cases = [
        (
            "ClusterVersion progressing only",
            cv(true),
            Some("the cluster is upgrading (ClusterVersion version Progressing=True)"),
        ),
        (
            "a pool updating only",
            pools(&["worker"]),
            Some("MachineConfigPool worker is updating"),
        ),
        (
            "both",
            both.clone(),
            Some(
                "the cluster is upgrading (ClusterVersion version Progressing=True) and \
                 MachineConfigPools master, worker are updating",
            ),
        ),
        ("neither", cv(false), None),
        // Where the MachineConfigPool API is absent the reconciler observes no pools.
        ("no pool API", ClusterMaintenance::default(), None),
    ];
    for (case, maintenance, held_open_by) in cases {
        let d = decide(&workday_nights(), at, &maintenance);
        assert_eq!(d.scale_down_enabled, held_open_by.is_some(), "{case}");
        assert_eq!(d.active_window, None, "{case}");
        match held_open_by {
            Some(why) => {
                assert_eq!(d.reason, Reason::ClusterUpgrade, "{case}");
                assert_eq!(d.maintenance, maintenance, "{case}");
                assert_eq!(d.maintenance.describe(), why, "{case}");
                assert_eq!(
                    d.next_transition, None,
                    "{case}: flips when maintenance ends"
                );
                assert_eq!(
                    decision_message(&d),
                    format!("scale-down enabled: {why}"),
                    "{case}"
                );
            }
            None => {
                assert_eq!(d.reason, Reason::OutsideWindows, "{case}");
                assert_eq!(d.maintenance, ClusterMaintenance::default(), "{case}");
                assert_eq!(
                    d.next_transition,
                    Some(utc("2026-03-27T19:00:00Z")),
                    "{case}"
                );
            }
        }
        // The active window still changes by the clock.
        assert_eq!(d.requeue_at, Some(utc("2026-03-27T19:00:00Z")), "{case}");
    }
}

#[test]
fn pool_maintenance_counts_only_when_followed_and_never_overrides_the_fail_safe() {
    let at = utc("2026-03-27T11:00:00Z");
    let mut not_followed = workday_nights();
    not_followed.maintenance = None;
    let d = decide(&not_followed, at, &pools(&["worker"]));
    assert!(!d.scale_down_enabled);
    assert_eq!(d.maintenance, ClusterMaintenance::default());

    let mut broken = workday_nights();
    broken.windows[0].schedule = Some("0 25 * * *".into());
    let d = decide(
        &broken,
        at,
        &ClusterMaintenance::new(true, vec!["worker".into()]),
    );
    assert!(!d.scale_down_enabled);
    assert!(matches!(d.reason, Reason::InvalidSchedule(_)));

    // Inside a window the window is the reason; the maintenance is still recorded.
    let d = decide(
        &workday_nights(),
        utc("2026-03-27T20:00:00Z"),
        &pools(&["worker"]),
    );
    assert_eq!(d.reason, Reason::WindowOpen(0));
    assert_eq!(d.maintenance, pools(&["worker"]));
}

#[test]
fn only_updating_true_means_a_pool_is_updating() {
    assert!(pool_updating([
        ("Updated", "False"),
        ("Updating", "True"),
        ("Degraded", "False"),
    ]));
    // Degraded (or stuck, not updated) but not updating: not maintenance under way.
    assert!(!pool_updating([
        ("Updated", "False"),
        ("Updating", "False"),
        ("Degraded", "True"),
        ("NodeDegraded", "True"),
    ]));
    assert!(!pool_updating([("Degraded", "True")]));
    assert!(!pool_updating([("Updating", "Unknown")]));
    assert!(!pool_updating([("Progressing", "True")]));
    assert!(!pool_updating(Vec::<(&str, &str)>::new()));
}

#[test]
fn maintenance_names_are_sorted_and_unique() {
    let m = ClusterMaintenance::new(
        false,
        vec!["worker".into(), "infra".into(), "worker".into()],
    );
    assert_eq!(m.updating_pools, ["infra", "worker"]);
    assert!(m.under_way());
    assert!(!ClusterMaintenance::default().under_way());
    assert_eq!(ClusterMaintenance::default().describe(), "");
}

// ----- the schedule: properties ------------------------------------------------------------------

const ZONES: [&str; 2] = ["Europe/Zurich", "America/New_York"];

/// 2026's DST changes of the two zones.
const DST_CHANGES: [&str; 4] = [
    "2026-03-29T01:00:00Z",
    "2026-10-25T01:00:00Z",
    "2026-03-08T07:00:00Z",
    "2026-11-01T06:00:00Z",
];

fn any_instant() -> impl Strategy<Value = Timestamp> {
    let base = utc("2026-01-01T00:00:00Z");
    prop_oneof![
        (0i64..366 * 24 * 3600).prop_map(move |s| base + SignedDuration::from_secs(s)),
        // Within three days of a DST change, on five-minute steps (where boundaries fall).
        (
            prop::sample::select(DST_CHANGES.to_vec()),
            -72 * 12..72 * 12i64
        )
            .prop_map(|(c, steps)| utc(c) + SignedDuration::from_mins(5 * steps)),
    ]
}

/// A daily window: hour, minute (quarter hours), duration in minutes (up to 36 hours, so it
/// crosses midnight and DST nights), zone.
fn daily() -> impl Strategy<Value = (u32, u32, i64, &'static str)> {
    (
        0u32..24,
        prop::sample::select(vec![0u32, 15, 30, 45]),
        1i64..=36 * 4,
        prop::sample::select(ZONES.to_vec()),
    )
        .prop_map(|(h, m, quarters, tz)| (h, m, quarters * 15, tz))
}

fn daily_spec((h, m, minutes, tz): (u32, u32, i64, &str)) -> WindowSpec {
    window(&format!("{m} {h} * * *"), &format!("{minutes}m"), tz)
}

/// Oracle, independent of ebb-schedule's rules (it reads only the zone's offsets): the instant a
/// wall time means by the DST rules (a time in a gap means the end of the gap, a time in a fold
/// its first occurrence). A wall time happens at `local - o` for each offset `o` in force near it
/// whose wall clock then shows `local`; none means a gap, so try a minute later.
fn wall_to_instant(tz: &Zone, date: Date, time: Time) -> Timestamp {
    let mut local = date.to_datetime(time);
    loop {
        // The wall time read as if it were UTC.
        let as_utc = local.to_zoned(TimeZone::UTC).unwrap().timestamp();
        let offsets = (-30..=30).map(|h| tz.offset_seconds(as_utc + SignedDuration::from_hours(h)));
        let instants = offsets
            .map(|o| as_utc - SignedDuration::from_secs(o.into()))
            .filter(|t| tz.wall_clock(*t) == local);
        match instants.min() {
            Some(t) => return t,
            None => local += SignedDuration::from_mins(1),
        }
    }
}

/// Oracle: is the daily window open at `t`? Some fire `f` (one per local day) has `f <= t < f + d`.
fn oracle_open((h, m, minutes, tz): (u32, u32, i64, &str), t: Timestamp) -> bool {
    let tz: Zone = tz.parse().unwrap();
    let today = tz.wall_clock(t).date();
    let time = Time::new(h.try_into().unwrap(), m.try_into().unwrap(), 0, 0).unwrap();
    (-3..=1).any(|offset| {
        let fire = wall_to_instant(&tz, today + SignedDuration::from_hours(24 * offset), time);
        fire <= t && t < fire + SignedDuration::from_mins(minutes)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A cron window is open from each fire time (wall clock, by the DST rules) for its duration
    /// in elapsed time, across midnight and DST changes.
    #[test]
    fn cron_window_is_open_for_its_duration_after_each_fire(w in daily(), t in any_instant()) {
        let s = spec(vec![daily_spec(w)], false);
        prop_assert_eq!(enabled(&s, t), oracle_open(w, t));
    }

    /// Overlapping windows merge: scale-down is enabled exactly when any window is open, and the
    /// active window is the first open one.
    #[test]
    fn overlapping_windows_merge(a in daily(), b in daily(), t in any_instant()) {
        let s = spec(vec![daily_spec(a), daily_spec(b)], false);
        let d = decide(&s, t, &cv(false));
        let (open_a, open_b) = (oracle_open(a, t), oracle_open(b, t));
        prop_assert_eq!(d.scale_down_enabled, open_a || open_b);
        let expected = if open_a { Some(0) } else if open_b { Some(1) } else { None };
        prop_assert_eq!(d.active_window, expected);
    }

    /// `nextTransition` is a flip, and nothing flips before it; the preview starts with it and
    /// alternates.
    #[test]
    fn next_transition_is_the_first_flip(a in daily(), b in daily(), two in any::<bool>(), t in any_instant()) {
        let windows = if two { vec![daily_spec(a), daily_spec(b)] } else { vec![daily_spec(a)] };
        let s = spec(windows, false);
        let d = decide(&s, t, &cv(false));
        match d.next_transition {
            Some(next) => {
                prop_assert!(next > t);
                prop_assert_ne!(enabled(&s, next), d.scale_down_enabled);
                for k in 1..8 {
                    let between = t + next.duration_since(t) * k / 8;
                    prop_assert_eq!(enabled(&s, between), d.scale_down_enabled);
                }
                // The preview looks a year ahead (a 24h window that only closes for the extra
                // hour of a fall-back night flips again after 371 days).
                let previewed =
                    (next.duration_since(t) <= ebb_schedule::DEFAULT_HORIZON).then_some(next);
                prop_assert_eq!(d.next_transitions.first().map(|x| x.0), previewed);
                prop_assert!(d.next_transitions.windows(2).all(|p| p[0].1 != p[1].1 && p[0].0 < p[1].0));
                // The first requeue is never after the first flip.
                prop_assert!(d.requeue_at.is_some_and(|r| r <= next));
            }
            None => {
                for days in [1, 3, 7, 30] {
                    prop_assert_eq!(enabled(&s, t + SignedDuration::from_hours(24 * days)), d.scale_down_enabled);
                }
            }
        }
    }

    /// With `followClusterUpgrade`, an upgrade enables scale-down whatever the windows say.
    #[test]
    fn upgrade_enables_when_followed(w in daily(), t in any_instant(), follow in any::<bool>()) {
        let s = spec(vec![daily_spec(w)], follow);
        prop_assert_eq!(decide(&s, t, &cv(true)).scale_down_enabled, follow || oracle_open(w, t));
        prop_assert_eq!(decide(&s, t, &cv(false)).scale_down_enabled, oracle_open(w, t));
    }

    /// With `followClusterUpgrade`, any pool updating enables scale-down like an upgrade; without
    /// it, pools change nothing.
    #[test]
    fn pool_updates_enable_when_followed(
        w in daily(),
        t in any_instant(),
        follow in any::<bool>(),
        progressing in any::<bool>(),
        updating in proptest::collection::vec("[a-z]{1,8}", 0..3),
    ) {
        let s = spec(vec![daily_spec(w)], follow);
        let m = ClusterMaintenance::new(progressing, updating.clone());
        let held = progressing || !updating.is_empty();
        let d = decide(&s, t, &m);
        prop_assert_eq!(d.scale_down_enabled, (follow && held) || oracle_open(w, t));
        prop_assert_eq!(d.maintenance.under_way(), follow && held);
    }

    /// Nothing decides on arbitrary text: no panic, and an unparseable window disables.
    #[test]
    fn arbitrary_windows_never_panic(schedule in ".{0,40}", duration in ".{0,12}", tz in ".{0,20}", t in any_instant()) {
        let s = spec(vec![window(&schedule, &duration, &tz)], true);
        let d = decide(&s, t, &cv(true));
        if let Reason::InvalidSchedule(_) = d.reason {
            prop_assert!(!d.scale_down_enabled);
        }
    }
}

// ----- targets -----------------------------------------------------------------------------------

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn match_labels(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels(pairs)),
        match_expressions: None,
    }
}

#[test]
fn target_must_set_exactly_one_kind() {
    let none = ScaleDownTarget::default();
    assert_eq!(target_kind(&none).unwrap_err().field, "spec.target");
    let two = ScaleDownTarget {
        cluster_autoscaler: Some(ClusterAutoscalerTarget::default()),
        karpenter_node_pools: Some(KarpenterNodePoolsTarget::default()),
        ..ScaleDownTarget::default()
    };
    assert!(target_kind(&two).unwrap_err().message.contains("2 set"));
}

#[test]
fn invalid_selectors_name_the_field() {
    let target = ScaleDownTarget {
        node_annotation: Some(NodeAnnotationTarget {
            node_selector: LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "a".into(),
                    operator: "Like".into(),
                    values: None,
                }]),
            },
        }),
        ..ScaleDownTarget::default()
    };
    assert_eq!(
        resolve_target(&target).unwrap_err().field,
        "spec.target.nodeAnnotation.nodeSelector"
    );
}

#[test]
fn selection_by_kind_namespace_and_labels() {
    let gpu = labels(&[("pool", "gpu")]);
    let none = BTreeMap::new();
    let id = |kind, namespace, name, labels| ObjectId {
        kind,
        namespace,
        name,
        labels,
    };
    let nodes = resolve_target(&ScaleDownTarget {
        node_annotation: Some(NodeAnnotationTarget {
            node_selector: match_labels(&[("pool", "gpu")]),
        }),
        ..ScaleDownTarget::default()
    })
    .unwrap();
    assert!(nodes.selects(&id(TargetKind::NodeAnnotation, None, "n", &gpu)));
    assert!(!nodes.selects(&id(TargetKind::NodeAnnotation, None, "n", &none)));
    assert!(!nodes.selects(&id(TargetKind::KarpenterNodePools, None, "n", &gpu)));
    let every_node = resolve_target(&ScaleDownTarget {
        node_annotation: Some(NodeAnnotationTarget::default()),
        ..ScaleDownTarget::default()
    })
    .unwrap();
    assert!(every_node.selects(&id(TargetKind::NodeAnnotation, None, "n", &none)));
    let machines = resolve_target(&ScaleDownTarget {
        machine_autoscalers: Some(MachineAutoscalersTarget {
            namespace: "openshift-machine-api".into(),
            selector: None,
        }),
        ..ScaleDownTarget::default()
    })
    .unwrap();
    let ns = Some("openshift-machine-api");
    assert!(machines.selects(&id(TargetKind::MachineAutoscalers, ns, "m", &none)));
    assert!(!machines.selects(&id(TargetKind::MachineAutoscalers, Some("x"), "m", &none)));
    let ca = resolve_target(&spec(vec![], false).target).unwrap();
    assert!(ca.selects(&id(TargetKind::ClusterAutoscaler, None, "default", &none)));
    assert!(!ca.selects(&id(TargetKind::ClusterAutoscaler, None, "other", &none)));
}

// ----- claims ------------------------------------------------------------------------------------

fn ca_claimant(name: &str, created: Option<&str>) -> Claimant {
    Claimant {
        name: name.into(),
        created: created.map(utc),
        target: ResolvedTarget::ClusterAutoscaler {
            name: "default".into(),
        },
    }
}

fn ca_id(labels: &BTreeMap<String, String>) -> ObjectId<'_> {
    ObjectId {
        kind: TargetKind::ClusterAutoscaler,
        namespace: None,
        name: "default",
        labels,
    }
}

#[test]
fn the_oldest_schedule_manages_a_shared_object_then_the_first_by_name() {
    let none = BTreeMap::new();
    let claimants = vec![
        ca_claimant("a-new", Some("2026-02-01T00:00:00Z")),
        ca_claimant("z-old", Some("2026-01-01T00:00:00Z")),
    ];
    assert_eq!(claim("z-old", &claimants, &ca_id(&none)), Claim::Ours);
    assert_eq!(
        claim("a-new", &claimants, &ca_id(&none)),
        Claim::LostTo("z-old".into())
    );
    let same_age = vec![
        ca_claimant("b", Some("2026-01-01T00:00:00Z")),
        ca_claimant("a", Some("2026-01-01T00:00:00Z")),
    ];
    assert_eq!(claim("a", &same_age, &ca_id(&none)), Claim::Ours);
    assert_eq!(
        claim("b", &same_age, &ca_id(&none)),
        Claim::LostTo("a".into())
    );
    // Deleting "a" (not a claimant any more) hands the object to "b"; "a" sees it as another's.
    let without_a = vec![ca_claimant("b", Some("2026-01-01T00:00:00Z"))];
    assert_eq!(claim("a", &without_a, &ca_id(&none)), Claim::Other);
    assert_eq!(claim("a", &[], &ca_id(&none)), Claim::Unclaimed);
}

proptest! {
    /// Exactly one of the schedules selecting an object manages it, whatever order they are
    /// listed in; every other selecting schedule names that one.
    #[test]
    fn exactly_one_schedule_manages_each_object(
        ages in prop::collection::vec(prop::option::of(0i64..5), 1..6),
        shuffle in any::<u64>(),
    ) {
        let none = BTreeMap::new();
        let base = utc("2026-01-01T00:00:00Z");
        let mut claimants: Vec<Claimant> = ages.iter().enumerate().map(|(i, age)| Claimant {
            name: format!("s{}", (i * 7) % 10),
            created: age.map(|d| base + SignedDuration::from_hours(24 * d)),
            target: ResolvedTarget::ClusterAutoscaler { name: "default".into() },
        }).collect();
        claimants.dedup_by(|a, b| a.name == b.name);
        let names: Vec<String> = claimants.iter().map(|c| c.name.clone()).collect();
        let verdicts = |list: &[Claimant]| -> Vec<Claim> {
            names.iter().map(|n| claim(n, list, &ca_id(&none))).collect()
        };
        let before = verdicts(&claimants);
        let n = claimants.len();
        claimants.rotate_left(usize::try_from(shuffle % n as u64).unwrap());
        prop_assert_eq!(&verdicts(&claimants), &before);
        let owners: Vec<&String> = names.iter().zip(&before).filter(|(_, c)| **c == Claim::Ours).map(|(n, _)| n).collect();
        prop_assert_eq!(owners.len(), 1);
        for c in &before {
            prop_assert!(*c == Claim::Ours || *c == Claim::LostTo(owners[0].clone()));
        }
    }
}

// ----- ClusterAutoscaler -------------------------------------------------------------------------

#[test]
fn cluster_autoscaler_field_follows_the_decision_and_only_when_different() {
    let lost = Claim::LostTo("x".into());
    let cases = [
        (Claim::Ours, false, Some(true), Some(false)),
        (Claim::Ours, false, Some(false), None),
        (Claim::Ours, true, Some(false), Some(true)),
        (Claim::Ours, true, Some(true), None),
        (Claim::Ours, true, None, Some(true)),
        (Claim::Ours, false, None, Some(false)),
        (lost.clone(), false, Some(true), None),
        (Claim::Other, false, Some(true), None),
        // Released when its last schedule is deleted: scale-down as without ebb.
        (Claim::Unclaimed, false, Some(false), Some(true)),
        (Claim::Unclaimed, false, Some(true), None),
    ];
    for (claim, desired, observed, expected) in cases {
        assert_eq!(
            decide_cluster_autoscaler(&claim, desired, observed),
            expected,
            "{claim:?} desired {desired} observed {observed:?}"
        );
    }
}

// ----- Nodes -------------------------------------------------------------------------------------

fn node(disabled: Option<&str>, by: Option<&str>) -> NodeView {
    NodeView {
        name: "n".into(),
        scale_down_disabled: disabled.map(Into::into),
        disabled_by: by.map(Into::into),
        ..NodeView::default()
    }
}

fn apply_node(mut node: NodeView, change: &NodeChange, me: &str) -> NodeView {
    match change {
        NodeChange::Disable => {
            node.scale_down_disabled = Some("true".into());
            node.disabled_by = Some(me.into());
        }
        NodeChange::TakeOver => node.disabled_by = Some(me.into()),
        NodeChange::Release => {
            node.scale_down_disabled = None;
            node.disabled_by = None;
        }
    }
    node
}

#[test]
fn node_annotation_rules() {
    let me = "me";
    let ours = Claim::Ours;
    let cases = [
        // Outside windows: annotate, unless already "true".
        (&ours, false, node(None, None), Some(NodeChange::Disable)),
        (
            &ours,
            false,
            node(Some("false"), None),
            Some(NodeChange::Disable),
        ),
        (&ours, false, node(Some("true"), Some("me")), None),
        // Someone else's annotation: left alone.
        (&ours, false, node(Some("true"), None), None),
        // Another schedule's mark on an object this one manages now: taken over.
        (
            &ours,
            false,
            node(Some("true"), Some("old")),
            Some(NodeChange::TakeOver),
        ),
        // Inside windows: removed only where ebb set it.
        (
            &ours,
            true,
            node(Some("true"), Some("me")),
            Some(NodeChange::Release),
        ),
        (
            &ours,
            true,
            node(Some("true"), Some("old")),
            Some(NodeChange::Release),
        ),
        (&ours, true, node(Some("true"), None), None),
        (&ours, true, node(None, None), None),
        // Lost to another schedule: untouched, even our own mark (the other takes it over).
        (&Claim::LostTo("x".into()), false, node(None, None), None),
        (
            &Claim::LostTo("x".into()),
            true,
            node(Some("true"), Some("me")),
            None,
        ),
        // No longer selected by anyone: our mark released, others' kept.
        (
            &Claim::Unclaimed,
            false,
            node(Some("true"), Some("me")),
            Some(NodeChange::Release),
        ),
        (
            &Claim::Unclaimed,
            false,
            node(Some("true"), Some("x")),
            None,
        ),
        (&Claim::Unclaimed, false, node(Some("true"), None), None),
        (&Claim::Other, true, node(Some("true"), Some("me")), None),
    ];
    for (claim, desired, n, expected) in cases {
        assert_eq!(
            decide_node(me, claim, desired, &n),
            expected,
            "{claim:?} {desired} {n:?}"
        );
    }
}

fn any_claim() -> impl Strategy<Value = Claim> {
    prop_oneof![
        Just(Claim::Ours),
        Just(Claim::LostTo("x".into())),
        Just(Claim::Other),
        Just(Claim::Unclaimed),
    ]
}

fn any_mark() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop::sample::select(vec![
        "me".to_owned(),
        "x".to_owned(),
        "true".to_owned(),
    ]))
}

proptest! {
    /// An annotation ebb did not set (no mark) is never removed or rewritten.
    #[test]
    fn node_annotations_ebb_did_not_set_are_kept(claim in any_claim(), desired in any::<bool>(), value in any_mark()) {
        let n = node(value.as_deref(), None);
        let change = decide_node("me", &claim, desired, &n);
        if value.as_deref() == Some("true") {
            prop_assert_eq!(change, None);
        }
        prop_assert_ne!(decide_node("me", &claim, desired, &n), Some(NodeChange::Release));
    }

    /// One change brings a node to the decision: planning again finds nothing to do.
    #[test]
    fn node_plans_converge_in_one_write(claim in any_claim(), desired in any::<bool>(), value in any_mark(), by in any_mark()) {
        let n = node(value.as_deref(), by.as_deref());
        if let Some(change) = decide_node("me", &claim, desired, &n) {
            let after = apply_node(n, &change, "me");
            prop_assert_eq!(decide_node("me", &claim, desired, &after), None);
        }
    }
}

// ----- MachineAutoscalers ------------------------------------------------------------------------

fn ma(min: i32, max: i32) -> MachineAutoscalerView {
    MachineAutoscalerView {
        namespace: "openshift-machine-api".into(),
        name: "worker-a".into(),
        min_replicas: Some(min),
        max_replicas: Some(max),
        target: Some(ScaleTargetRef {
            api_version: "machine.openshift.io/v1beta1".into(),
            kind: "MachineSet".into(),
            name: "worker-a".into(),
        }),
        ..MachineAutoscalerView::default()
    }
}

fn pinned(
    mut m: MachineAutoscalerView,
    configured: &str,
    pin: &str,
    by: &str,
) -> MachineAutoscalerView {
    m.configured_min = Some(configured.into());
    m.pinned_min = Some(pin.into());
    m.disabled_by = Some(by.into());
    m
}

fn apply_ma(
    mut m: MachineAutoscalerView,
    change: &MachineAutoscalerChange,
) -> MachineAutoscalerView {
    if let Some(min) = change.min_replicas {
        m.min_replicas = Some(min);
    }
    for (key, value) in &change.annotations {
        let slot = match *key {
            CONFIGURED_MIN_ANNOTATION => &mut m.configured_min,
            PINNED_MIN_ANNOTATION => &mut m.pinned_min,
            DISABLED_BY_ANNOTATION => &mut m.disabled_by,
            other => panic!("unexpected annotation {other}"),
        };
        *slot = value.clone();
    }
    m
}

fn change(min: Option<i32>, annotations: &[(&'static str, Option<&str>)]) -> MachineDecision {
    MachineDecision::Change(MachineAutoscalerChange {
        min_replicas: min,
        annotations: annotations
            .iter()
            .map(|(k, v)| (*k, v.map(Into::into)))
            .collect(),
    })
}

#[test]
fn machine_autoscaler_pins_to_the_machine_set_outside_windows() {
    fn pin_all(
        configured: &'static str,
        pin: &'static str,
    ) -> [(&'static str, Option<&'static str>); 3] {
        [
            (CONFIGURED_MIN_ANNOTATION, Some(configured)),
            (PINNED_MIN_ANNOTATION, Some(pin)),
            (DISABLED_BY_ANNOTATION, Some("me")),
        ]
    }
    let o = Claim::Ours;
    // MachineSet grew to 5: pin min 2 -> 5, keeping 2.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &ma(2, 10), Some(5)),
        change(Some(5), &pin_all("2", "5"))
    );
    // Never above maxReplicas.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &ma(2, 4), Some(7)),
        change(Some(4), &pin_all("2", "4"))
    );
    // At (or below) its minimum: nothing to pin, nothing written.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &ma(2, 10), Some(2)),
        MachineDecision::Nothing
    );
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &ma(2, 10), Some(1)),
        MachineDecision::Nothing
    );
    // Already pinned, MachineSet grew again: raise the pin, keep the configured minimum.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &pinned(ma(5, 10), "2", "5", "me"), Some(6)),
        change(Some(6), &[(PINNED_MIN_ANNOTATION, Some("6"))])
    );
    // Pinned and unchanged: nothing.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &pinned(ma(5, 10), "2", "5", "me"), Some(5)),
        MachineDecision::Nothing
    );
    // MachineSet shrank back to the minimum while pinned (by hand): the pin goes.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &pinned(ma(5, 10), "2", "5", "me"), Some(2)),
        change(
            Some(2),
            &[
                (CONFIGURED_MIN_ANNOTATION, None),
                (PINNED_MIN_ANNOTATION, None),
                (DISABLED_BY_ANNOTATION, None)
            ]
        )
    );
}

#[test]
fn machine_autoscaler_restores_the_configured_minimum_inside_windows() {
    let o = Claim::Ours;
    let released = [
        (CONFIGURED_MIN_ANNOTATION, None),
        (PINNED_MIN_ANNOTATION, None),
        (DISABLED_BY_ANNOTATION, None),
    ];
    assert_eq!(
        decide_machine_autoscaler("me", &o, true, &pinned(ma(5, 10), "2", "5", "me"), Some(5)),
        change(Some(2), &released)
    );
    // Never pinned: nothing (no MachineSet needed).
    assert_eq!(
        decide_machine_autoscaler("me", &o, true, &ma(2, 10), None),
        MachineDecision::Nothing
    );
    // Someone set minReplicas to 3 while it was pinned at 5: 3 is the configured minimum now.
    assert_eq!(
        decide_machine_autoscaler("me", &o, true, &pinned(ma(3, 10), "2", "5", "me"), None),
        change(None, &released)
    );
    // ... and outside windows it is pinned from 3.
    assert_eq!(
        decide_machine_autoscaler("me", &o, false, &pinned(ma(3, 10), "2", "5", "me"), Some(5)),
        change(Some(5), &[(CONFIGURED_MIN_ANNOTATION, Some("3"))])
    );
    // Released when no schedule selects it any more, only if this schedule pinned it.
    assert_eq!(
        decide_machine_autoscaler(
            "me",
            &Claim::Unclaimed,
            false,
            &pinned(ma(5, 10), "2", "5", "me"),
            None
        ),
        change(Some(2), &released)
    );
    assert_eq!(
        decide_machine_autoscaler(
            "me",
            &Claim::Unclaimed,
            false,
            &pinned(ma(5, 10), "2", "5", "x"),
            None
        ),
        MachineDecision::Nothing
    );
    assert_eq!(
        decide_machine_autoscaler(
            "me",
            &Claim::LostTo("x".into()),
            true,
            &pinned(ma(5, 10), "2", "5", "me"),
            None
        ),
        MachineDecision::Nothing
    );
}

#[test]
fn machine_autoscaler_problems_write_nothing() {
    let o = Claim::Ours;
    let bad = pinned(ma(5, 10), "two", "5", "me");
    assert!(matches!(
        decide_machine_autoscaler("me", &o, true, &bad, Some(5)),
        MachineDecision::Problem(p) if p.contains(CONFIGURED_MIN_ANNOTATION)
    ));
    assert!(matches!(
        decide_machine_autoscaler("me", &o, false, &ma(2, 10), None),
        MachineDecision::Problem(p) if p.contains("MachineSet worker-a not found")
    ));
    let mut not_a_machine_set = ma(2, 10);
    not_a_machine_set.target = None;
    assert!(matches!(
        decide_machine_autoscaler("me", &o, false, &not_a_machine_set, Some(3)),
        MachineDecision::Problem(_)
    ));
    let mut no_min = ma(2, 10);
    no_min.min_replicas = None;
    assert!(matches!(
        decide_machine_autoscaler("me", &o, false, &no_min, Some(3)),
        MachineDecision::Problem(_)
    ));
}

proptest! {
    /// Outside windows minReplicas is pinned to the MachineSet's size: never below the configured
    /// minimum, never raised above maxReplicas; inside windows the configured minimum comes back
    /// and no annotation is left, so a full day restores the object exactly.
    #[test]
    fn machine_autoscaler_pin_and_restore_round_trip(min in 0i32..6, extra in 0i32..6, sizes in prop::collection::vec(0i32..15, 1..5)) {
        let original = ma(min, min + extra);
        let mut m = original.clone();
        for size in &sizes {
            if let MachineDecision::Change(c) = decide_machine_autoscaler("me", &Claim::Ours, false, &m, Some(*size)) {
                m = apply_ma(m, &c);
            }
            let spec_min = m.min_replicas.unwrap();
            prop_assert!(spec_min >= min);
            prop_assert!(spec_min <= (min + extra).max(min));
            prop_assert_eq!(spec_min, min.max((*size).min(min + extra)));
            prop_assert_eq!(decide_machine_autoscaler("me", &Claim::Ours, false, &m, Some(*size)), MachineDecision::Nothing);
        }
        if let MachineDecision::Change(c) = decide_machine_autoscaler("me", &Claim::Ours, true, &m, None) {
            m = apply_ma(m, &c);
        }
        prop_assert_eq!(m, original);
    }
}

// ----- NodePools ---------------------------------------------------------------------------------

fn pool(budgets: Vec<Value>, by: Option<&str>) -> NodePoolView {
    NodePoolView {
        name: "p".into(),
        budgets: Some(budgets),
        disabled_by: by.map(Into::into),
        ..NodePoolView::default()
    }
}

fn apply_pool(mut p: NodePoolView, change: &NodePoolChange) -> NodePoolView {
    if let Some(budgets) = &change.budgets {
        p.budgets = Some(budgets.clone());
    }
    p.disabled_by = change.disabled_by.clone();
    p
}

/// `karpenterNodePools.reasons`: the budget outside windows names them (sorted, once); a marked
/// budget of other reasons (the spec changed) is replaced where it stands; inside windows it goes
/// whatever its reasons; a user's budget with a `schedule` is never taken for ebb's.
#[test]
fn node_pool_budget_reasons() {
    use ebb_crds::scaledown::DisruptionReason::{Drifted, Underutilized};
    let o = Claim::Ours;
    let user = json!({"nodes": "10%"});
    let reasons = [Underutilized, Drifted, Underutilized];
    let ours = json!({"nodes": "0", "reasons": ["Drifted", "Underutilized"]});
    assert_eq!(ebb_budget(&reasons), ours);
    assert_eq!(ebb_budget(&[]), json!({"nodes": "0"}));
    let change = decide_node_pool("me", &o, false, &pool(vec![user.clone()], None), &reasons);
    assert_eq!(
        change.unwrap().budgets,
        Some(vec![user.clone(), ours.clone()])
    );
    // In sync: nothing.
    let held = pool(vec![user.clone(), ours.clone()], Some("me"));
    assert_eq!(decide_node_pool("me", &o, false, &held, &reasons), None);
    // The schedule now blocks every reason: the same budget, replaced in place.
    assert_eq!(
        decide_node_pool("me", &o, false, &held, &[]),
        Some(NodePoolChange {
            budgets: Some(vec![user.clone(), json!({"nodes": "0"})]),
            disabled_by: Some("me".into()),
        })
    );
    // Inside a window: removed, reasons and all.
    assert_eq!(
        decide_node_pool("me", &o, true, &held, &reasons)
            .unwrap()
            .budgets,
        Some(vec![user.clone()])
    );
    // A maintenance budget of the user's with nodes "0" and a schedule is not ebb's shape.
    let nightly = json!({"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"});
    assert!(!is_ebb_budget(&nightly));
    assert!(is_ebb_budget(&ours));
}

#[test]
fn node_pool_budget_rules() {
    let user = json!({"nodes": "10%"});
    let nightly = json!({"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"});
    let o = Claim::Ours;
    // Outside windows: ebb's budget appended, user budgets kept in order.
    assert_eq!(
        decide_node_pool(
            "me",
            &o,
            false,
            &pool(vec![user.clone(), nightly.clone()], None),
            &[]
        ),
        Some(NodePoolChange {
            budgets: Some(vec![user.clone(), nightly.clone(), ebb_budget(&[])]),
            disabled_by: Some("me".into()),
        })
    );
    // Present and ours: nothing.
    let with_ours = pool(vec![user.clone(), ebb_budget(&[])], Some("me"));
    assert_eq!(decide_node_pool("me", &o, false, &with_ours, &[]), None);
    // Inside windows: exactly ebb's budget goes.
    assert_eq!(
        decide_node_pool("me", &o, true, &with_ours, &[]),
        Some(NodePoolChange {
            budgets: Some(vec![user.clone()]),
            disabled_by: None,
        })
    );
    // A user's own {nodes: "0"} is indistinguishable; without ebb's mark it is never removed,
    // and with it exactly one copy goes.
    let users_zero = pool(vec![ebb_budget(&[])], None);
    assert_eq!(decide_node_pool("me", &o, true, &users_zero, &[]), None);
    let both = pool(
        vec![ebb_budget(&[]), user.clone(), ebb_budget(&[])],
        Some("me"),
    );
    assert_eq!(
        decide_node_pool("me", &o, true, &both, &[])
            .unwrap()
            .budgets,
        Some(vec![ebb_budget(&[]), user.clone()])
    );
    // Mark present but budget removed (GitOps reverted the list): added again.
    assert_eq!(
        decide_node_pool("me", &o, false, &pool(vec![user.clone()], Some("me")), &[]),
        Some(NodePoolChange {
            budgets: Some(vec![user.clone(), ebb_budget(&[])]),
            disabled_by: Some("me".into()),
        })
    );
    // Another schedule's budget on a pool this one manages now: taken over, list untouched.
    assert_eq!(
        decide_node_pool(
            "me",
            &o,
            false,
            &pool(vec![ebb_budget(&[])], Some("old")),
            &[]
        ),
        Some(NodePoolChange {
            budgets: None,
            disabled_by: Some("me".into()),
        })
    );
    // Lost, or another's: untouched.
    assert_eq!(
        decide_node_pool(
            "me",
            &Claim::LostTo("x".into()),
            false,
            &pool(vec![], None),
            &[]
        ),
        None
    );
    assert_eq!(
        decide_node_pool(
            "me",
            &Claim::Unclaimed,
            false,
            &pool(vec![ebb_budget(&[])], Some("x")),
            &[]
        ),
        None
    );
    // Absent budgets read as an empty list.
    let mut absent = pool(vec![], None);
    absent.budgets = None;
    assert_eq!(
        decide_node_pool("me", &o, false, &absent, &[])
            .unwrap()
            .budgets,
        Some(vec![ebb_budget(&[])])
    );
}

fn any_budget() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(ebb_budget(&[])),
        Just(json!({"nodes": "10%"})),
        Just(json!({"nodes": "0", "reasons": ["Drifted"]})),
        Just(json!({"nodes": "0", "schedule": "@daily", "duration": "10m"})),
        Just(json!({"nodes": 0})),
    ]
}

proptest! {
    /// Budgets ebb did not add are never touched: every budget that is not ebb's shape survives
    /// every plan, in order, and ebb's shape is added or removed at most once.
    #[test]
    fn budgets_ebb_did_not_add_are_never_touched(
        budgets in prop::collection::vec(any_budget(), 0..5),
        by in any_mark(),
        claim in any_claim(),
        desired in any::<bool>(),
    ) {
        let p = pool(budgets.clone(), by.as_deref());
        let foreign = |list: &[Value]| list.iter().filter(|b| !is_ebb_budget(b)).cloned().collect::<Vec<_>>();
        let ours = |list: &[Value]| list.iter().filter(|b| is_ebb_budget(b)).count();
        if let Some(change) = decide_node_pool("me", &claim, desired, &p, &[]) {
            let after = apply_pool(p.clone(), &change);
            let new = after.budgets.clone().unwrap();
            prop_assert_eq!(foreign(&new), foreign(&budgets));
            prop_assert!(ours(&new).abs_diff(ours(&budgets)) <= 1);
            // One write converges.
            prop_assert_eq!(decide_node_pool("me", &claim, desired, &after, &[]), None);
            if by.is_none() {
                prop_assert!(ours(&new) >= ours(&budgets));
            }
        }
    }

    /// A night outside windows then a day inside them leaves the list exactly as it was.
    #[test]
    fn budget_added_then_removed_restores_the_list(budgets in prop::collection::vec(any_budget(), 0..5)) {
        let original = pool(budgets, None);
        let mut p = original.clone();
        for desired in [false, false, true, true] {
            if let Some(change) = decide_node_pool("me", &Claim::Ours, desired, &p, &[]) {
                p = apply_pool(p, &change);
            }
        }
        prop_assert_eq!(p, original);
    }
}

// ----- a whole target and the conditions ---------------------------------------------------------

fn node_claimant(name: &str, created: &str, selector: &[(&str, &str)]) -> Claimant {
    Claimant {
        name: name.into(),
        created: Some(utc(created)),
        target: ResolvedTarget::Nodes(Selector::try_from(match_labels(selector)).unwrap()),
    }
}

fn node_named(name: &str, pairs: &[(&str, &str)], by: Option<&str>) -> NodeView {
    NodeView {
        name: name.into(),
        labels: labels(pairs),
        resource_version: Some("7".into()),
        scale_down_disabled: by.map(|_| "true".into()),
        disabled_by: by.map(Into::into),
        pause: PauseMarks::default(),
    }
}

#[test]
fn overlapping_node_selectors_split_the_nodes_and_report_the_conflict() {
    let claimants = vec![
        node_claimant("all-nodes", "2026-01-02T00:00:00Z", &[]),
        node_claimant("gpu", "2026-01-01T00:00:00Z", &[("pool", "gpu")]),
    ];
    let observed = TargetObjects::nodes(vec![
        node_named("cpu-1", &[("pool", "cpu")], None),
        node_named("gpu-1", &[("pool", "gpu")], None),
    ]);
    let all = decide_target("all-nodes", &claimants, Some(false), &observed, T0);
    assert_eq!(
        all.changes,
        vec![Change::Node {
            name: "cpu-1".into(),
            resource_version: Some("7".into()),
            change: NodeChange::Disable,
        }]
    );
    assert_eq!((all.selected, all.managed), (2, 1));
    assert_eq!(
        all.conflicts,
        vec![Conflict {
            object: "Node gpu-1".into(),
            managed_by: "gpu".into(),
        }]
    );
    let gpu = decide_target("gpu", &claimants, Some(false), &observed, T0);
    assert_eq!(gpu.changes.len(), 1);
    assert!(gpu.conflicts.is_empty());
}

#[test]
fn deleting_a_schedule_releases_only_what_it_set() {
    // "me" is being deleted (not a claimant); "other" still selects gpu nodes.
    let claimants = vec![node_claimant(
        "other",
        "2026-01-01T00:00:00Z",
        &[("pool", "gpu")],
    )];
    let observed = TargetObjects::nodes(vec![
        node_named("cpu-1", &[("pool", "cpu")], Some("me")),
        node_named("gpu-1", &[("pool", "gpu")], Some("me")),
        node_named("cpu-2", &[("pool", "cpu")], Some("someone")),
        node_named("cpu-3", &[("pool", "cpu")], None),
    ]);
    let plan = decide_target("me", &claimants, None, &observed, T0);
    assert_eq!(
        plan.changes,
        vec![Change::Node {
            name: "cpu-1".into(),
            resource_version: Some("7".into()),
            change: NodeChange::Release,
        }]
    );
}

#[test]
fn missing_cluster_autoscaler_selects_nothing() {
    let claimants = vec![ca_claimant("me", None)];
    let plan = decide_target(
        "me",
        &claimants,
        Some(false),
        &TargetObjects::ClusterAutoscaler {
            name: "default".into(),
            uid: None,
            enabled: None,
            pause: PauseMarks::default(),
        },
        T0,
    );
    assert_eq!(plan, TargetDecision::default());
}

fn find<'a>(updates: &'a [ConditionUpdate], type_: &str) -> &'a ConditionUpdate {
    updates.iter().find(|c| c.type_ == type_).unwrap()
}

#[test]
fn conditions_report_the_outcome() {
    let at = utc("2026-03-27T11:00:00Z");
    let ok = decide(&workday_nights(), at, &cv(false));
    let planned = |plan: TargetDecision, dry_run| TargetOutcome::Planned {
        kind: TargetKind::ClusterAutoscaler,
        plan,
        dry_run,
    };
    let managed = TargetDecision {
        selected: 1,
        managed: 1,
        ..TargetDecision::default()
    };
    let c = conditions(&ok, &planned(managed.clone(), false), Some(3));
    assert_eq!(c.len(), 5);
    let ready = find(&c, CONDITION_READY);
    assert!(ready.status);
    assert_eq!(ready.reason, "ScaleDownDisabled");
    assert_eq!(
        ready.message,
        "scale-down disabled: no window is open; applied to 1 ClusterAutoscaler"
    );
    assert_eq!(ready.observed_generation, Some(3));
    assert!(!find(&c, CONDITION_PAUSED).status);
    assert!(!find(&c, CONDITION_TARGET_CONFLICT).status);
    assert!(!find(&c, CONDITION_TARGET_NOT_FOUND).status);
    assert!(find(&c, CONDITION_SCHEDULE_VALID).status);

    // The fail-safe: applied, but not Ready, and the field named.
    let mut broken = workday_nights();
    broken.windows[1].time_zone = "Mars/Olympus".into();
    let fail_safe = decide(&broken, at, &cv(false));
    let c = conditions(&fail_safe, &planned(managed.clone(), false), None);
    let valid = find(&c, CONDITION_SCHEDULE_VALID);
    assert_eq!(
        (valid.status, valid.reason.as_str()),
        (false, "InvalidSchedule")
    );
    assert!(
        valid
            .message
            .starts_with("spec.windows[1].timeZone: unknown time zone \"Mars/Olympus\""),
        "{}",
        valid.message
    );
    assert_eq!(find(&c, CONDITION_READY).reason, "InvalidSchedule");
    assert!(!find(&c, CONDITION_READY).status);

    // Lost everything to another schedule.
    let lost = TargetDecision {
        selected: 1,
        managed: 0,
        conflicts: vec![Conflict {
            object: "ClusterAutoscaler default".into(),
            managed_by: "older".into(),
        }],
        ..TargetDecision::default()
    };
    let c = conditions(&ok, &planned(lost, false), None);
    assert_eq!(find(&c, CONDITION_READY).reason, "TargetConflict");
    let conflict = find(&c, CONDITION_TARGET_CONFLICT);
    assert!(conflict.status);
    assert!(
        conflict
            .message
            .contains("ClusterAutoscaler default (managed by older)")
    );

    // Dry-run with an intended change.
    let intended = TargetDecision {
        changes: vec![Change::ClusterAutoscaler {
            name: "default".into(),
            uid: Some("ca-uid".into()),
            enabled: false,
        }],
        ..managed.clone()
    };
    let c = conditions(&ok, &planned(intended, true), None);
    assert_eq!(find(&c, CONDITION_READY).reason, "DryRun");
    assert!(
        find(&c, CONDITION_READY).message.ends_with(
            "dry-run, would set spec.scaleDown.enabled=false on ClusterAutoscaler default"
        )
    );

    // Not found, paused, switched off.
    let c = conditions(&ok, &planned(TargetDecision::default(), false), None);
    assert!(find(&c, CONDITION_TARGET_NOT_FOUND).status);
    assert_eq!(find(&c, CONDITION_READY).reason, "TargetNotFound");
    let c = conditions(
        &ok,
        &TargetOutcome::Paused("paused by annotation scaling.ebb.dev/paused".into()),
        None,
    );
    assert!(find(&c, CONDITION_PAUSED).status);
    assert_eq!(find(&c, CONDITION_READY).reason, "Paused");
    assert_eq!(
        c.len(),
        3,
        "target conditions are only reported when the target was read"
    );
    let c = conditions(
        &ok,
        &TargetOutcome::Disabled(TargetKind::KarpenterNodePools),
        None,
    );
    assert!(
        find(&c, CONDITION_READY)
            .message
            .contains("--enable-karpenter")
    );
}

fn machine_autoscalers_with(cluster_autoscaler: ClusterAutoscalerScaleDown) -> TargetObjects {
    TargetObjects::MachineAutoscalers {
        autoscalers: vec![MachineAutoscalerView {
            namespace: "openshift-machine-api".into(),
            name: "worker-a".into(),
            min_replicas: Some(1),
            max_replicas: Some(6),
            target: Some(ScaleTargetRef {
                api_version: "machine.openshift.io/v1beta1".into(),
                kind: "MachineSet".into(),
                name: "worker-a".into(),
            }),
            ..MachineAutoscalerView::default()
        }],
        machine_sets: BTreeMap::from([("worker-a".to_owned(), 3)]),
        cluster_autoscaler,
    }
}

#[test]
fn machine_autoscaler_targets_report_whether_the_cluster_autoscaler_allows_scale_down() {
    assert_eq!(
        ClusterAutoscalerScaleDown::from_lookup(None),
        ClusterAutoscalerScaleDown::Missing
    );
    assert_eq!(
        ClusterAutoscalerScaleDown::from_lookup(Some(Some(true))),
        ClusterAutoscalerScaleDown::On
    );
    assert_eq!(
        ClusterAutoscalerScaleDown::from_lookup(Some(None)),
        ClusterAutoscalerScaleDown::Off(None)
    );
    let claimants = vec![Claimant {
        name: "me".into(),
        created: None,
        target: ResolvedTarget::MachineAutoscalers {
            namespace: "openshift-machine-api".into(),
            selector: None,
        },
    }];
    let decision = decide(&workday_nights(), utc("2026-03-27T20:00:00Z"), &cv(false));
    let cases = [
        (
            ClusterAutoscalerScaleDown::On,
            true,
            "ClusterAutoscalerScaleDownEnabled",
            "has",
        ),
        (
            ClusterAutoscalerScaleDown::Off(Some(false)),
            false,
            "ClusterAutoscalerScaleDownDisabled",
            "it has spec.scaleDown.enabled: false: inside windows",
        ),
        (
            ClusterAutoscalerScaleDown::Off(None),
            false,
            "ClusterAutoscalerScaleDownDisabled",
            "it has spec.scaleDown.enabled unset",
        ),
        (
            ClusterAutoscalerScaleDown::Missing,
            false,
            "ClusterAutoscalerNotFound",
            "there is none",
        ),
    ];
    for (found, status, reason, says) in cases {
        let plan = decide_target(
            "me",
            &claimants,
            Some(true),
            &machine_autoscalers_with(found),
            T0,
        );
        assert_eq!(plan.cluster_autoscaler, Some(found));
        // It changes nothing about what is written.
        assert!(plan.changes.is_empty(), "{found:?}");
        let outcome = TargetOutcome::Planned {
            kind: TargetKind::MachineAutoscalers,
            plan,
            dry_run: false,
        };
        let c = conditions(&decision, &outcome, Some(2));
        assert_eq!(c.len(), 6);
        let ca = find(&c, CONDITION_CLUSTER_AUTOSCALER_READY);
        assert_eq!(
            (ca.status, ca.reason.as_str()),
            (status, reason),
            "{found:?}"
        );
        assert!(
            ca.message.starts_with(
                "machineAutoscalers targets depend on ClusterAutoscaler default with \
                 spec.scaleDown.enabled: true"
            ),
            "{}",
            ca.message
        );
        assert!(ca.message.contains(says), "{}", ca.message);
        assert_eq!(ca.observed_generation, Some(2));
        // Ready reports the MachineAutoscalers themselves.
        assert!(find(&c, CONDITION_READY).status);
    }
}

#[test]
fn summaries_are_bounded() {
    let items: Vec<String> = (0..5).map(|i| format!("n{i}")).collect();
    assert_eq!(summarize(&items, 3), "n0, n1, n2 and 2 more");
    assert_eq!(summarize(&items[..2], 3), "n0, n1");
}

// ----- pause on the managed objects --------------------------------------------------------------

/// Friday noon in Zurich, the instant every pause below is judged at.
const PAUSE_NOW: &str = "2026-03-27T11:00:00Z";

/// The pause cases at [`PAUSE_NOW`]: marks, whether they pause, and when the pause ends by itself.
fn pause_cases() -> Vec<(&'static str, PauseMarks, bool, Option<&'static str>)> {
    vec![
        ("none", PauseMarks::default(), false, None),
        ("paused true", PauseMarks::paused(), true, None),
        (
            "paused false",
            PauseMarks {
                paused: Some("false".into()),
                paused_until: None,
            },
            false,
            None,
        ),
        (
            "until in the future",
            PauseMarks::until("2026-03-27T13:00:00Z"),
            true,
            Some("2026-03-27T13:00:00Z"),
        ),
        (
            "until one second ahead, with an offset",
            PauseMarks::until("2026-03-27T12:00:01+01:00"),
            true,
            Some("2026-03-27T11:00:01Z"),
        ),
        (
            "until exactly now has expired",
            PauseMarks::until(PAUSE_NOW),
            false,
            None,
        ),
        (
            "until in the past",
            PauseMarks::until("2026-03-27T10:59:59Z"),
            false,
            None,
        ),
        (
            "until invalid (fail-safe)",
            PauseMarks::until("tomorrow"),
            true,
            None,
        ),
    ]
}

/// The names of the objects a plan writes.
fn written(plan: &TargetDecision) -> Vec<String> {
    plan.changes
        .iter()
        .map(|c| match c {
            Change::ClusterAutoscaler { name, .. }
            | Change::Node { name, .. }
            | Change::MachineAutoscaler { name, .. }
            | Change::NodePool { name, .. } => name.clone(),
        })
        .collect()
}

/// Checks one kind: `plan(marks, desired)` plans a target holding the object `paused` (with those
/// marks) and, for kinds of many objects, an unpaused one that needs a change too.
fn check_pause_rules(
    kind: &str,
    paused: &str,
    others: &[&str],
    plan: impl Fn(&PauseMarks, bool) -> TargetDecision,
) {
    let now = utc(PAUSE_NOW);
    for desired in [false, true] {
        for (case, marks, is_paused, resume) in pause_cases() {
            let p = plan(&marks, desired);
            let mut expected: Vec<String> = others.iter().map(|o| (*o).to_owned()).collect();
            if !is_paused {
                expected.insert(0, paused.to_owned());
            }
            let mut got = written(&p);
            got.sort();
            expected.sort();
            assert_eq!(got, expected, "{kind} {case}, desired {desired}");
            assert_eq!(p.paused.len(), usize::from(is_paused), "{kind} {case}");
            if is_paused {
                assert!(p.paused[0].object.ends_with(paused), "{kind} {case}");
                assert_eq!(p.paused[0].state, marks.state(now), "{kind} {case}");
                // Still managed: the paused object is this schedule's, only left alone.
                assert_eq!(p.managed, 1 + others.len(), "{kind} {case}");
                assert!(p.problems.is_empty(), "{kind} {case}");
            }
            assert_eq!(p.resume_at(), resume.map(utc), "{kind} {case}");
        }
    }
}

#[test]
fn a_paused_cluster_autoscaler_is_left_as_it_is_whichever_way_the_decision_goes() {
    let claimants = vec![ca_claimant("me", None)];
    check_pause_rules("ClusterAutoscaler", "default", &[], |marks, desired| {
        decide_target(
            "me",
            &claimants,
            Some(desired),
            &TargetObjects::ClusterAutoscaler {
                name: "default".into(),
                uid: Some("ca-uid".into()),
                // Always the opposite of the decision: a change is due unless paused.
                enabled: Some(Some(!desired)),
                pause: marks.clone(),
            },
            utc(PAUSE_NOW),
        )
    });
}

#[test]
fn a_paused_node_is_neither_annotated_nor_released_while_others_are() {
    let claimants = vec![node_claimant("me", "2026-01-01T00:00:00Z", &[])];
    check_pause_rules("Node", "w1", &["w2"], |marks, desired| {
        // Outside windows both need the annotation; inside, both carry ebb's.
        let by = (desired).then_some("me");
        let mut paused = node_named("w1", &[], by);
        paused.pause = marks.clone();
        let observed = TargetObjects::nodes(vec![paused, node_named("w2", &[], by)]);
        decide_target("me", &claimants, Some(desired), &observed, utc(PAUSE_NOW))
    });
}

#[test]
fn a_paused_machine_autoscaler_is_neither_pinned_nor_restored_while_others_are() {
    let claimants = vec![Claimant {
        name: "me".into(),
        created: None,
        target: ResolvedTarget::MachineAutoscalers {
            namespace: "openshift-machine-api".into(),
            selector: None,
        },
    }];
    check_pause_rules(
        "MachineAutoscaler",
        "worker-a",
        &["worker-b"],
        |marks, desired| {
            let view = |name: &str| {
                let mut m = ma(1, 6);
                m.name = name.into();
                m.target.as_mut().unwrap().name = name.into();
                if desired {
                    // Pinned earlier; inside windows it is due to be restored.
                    m.min_replicas = Some(3);
                    pinned(m, "1", "3", "me")
                } else {
                    m
                }
            };
            let mut paused = view("worker-a");
            paused.pause = marks.clone();
            let observed = TargetObjects::MachineAutoscalers {
                autoscalers: vec![paused, view("worker-b")],
                machine_sets: BTreeMap::from([
                    ("worker-a".to_owned(), 3),
                    ("worker-b".to_owned(), 3),
                ]),
                cluster_autoscaler: ClusterAutoscalerScaleDown::On,
            };
            decide_target("me", &claimants, Some(desired), &observed, utc(PAUSE_NOW))
        },
    );
}

#[test]
fn a_paused_machine_autoscaler_with_a_problem_is_left_alone_unreported() {
    let claimants = vec![Claimant {
        name: "me".into(),
        created: None,
        target: ResolvedTarget::MachineAutoscalers {
            namespace: "openshift-machine-api".into(),
            selector: None,
        },
    }];
    let mut m = ma(1, 6);
    m.pause = PauseMarks::paused();
    // Its MachineSet is missing: a problem, were it not paused.
    let observed = TargetObjects::MachineAutoscalers {
        autoscalers: vec![m],
        machine_sets: BTreeMap::new(),
        cluster_autoscaler: ClusterAutoscalerScaleDown::On,
    };
    let plan = decide_target("me", &claimants, Some(false), &observed, utc(PAUSE_NOW));
    assert!(plan.changes.is_empty());
    assert!(plan.problems.is_empty());
    assert_eq!(plan.paused.len(), 1);
}

#[test]
fn a_paused_node_pool_neither_gets_nor_loses_ebbs_budget_while_others_do() {
    let claimants = vec![Claimant {
        name: "me".into(),
        created: None,
        target: ResolvedTarget::NodePools(None, Vec::new()),
    }];
    check_pause_rules("NodePool", "batch", &["gpu"], |marks, desired| {
        let view = |name: &str| {
            let mut p = if desired {
                pool(vec![json!({"nodes": "10%"}), ebb_budget(&[])], Some("me"))
            } else {
                pool(vec![json!({"nodes": "10%"})], None)
            };
            p.name = name.into();
            p
        };
        let mut paused = view("batch");
        paused.pause = marks.clone();
        let observed = TargetObjects::NodePools(vec![paused, view("gpu")], Vec::new());
        decide_target("me", &claimants, Some(desired), &observed, utc(PAUSE_NOW))
    });
}

#[test]
fn a_paused_object_is_not_released_when_its_schedule_is_deleted() {
    // "me" is being deleted: no claimants; what it set is released except on paused objects.
    let mut paused = node_named("w1", &[], Some("me"));
    paused.pause = PauseMarks::until("2026-03-27T13:00:00Z");
    let observed = TargetObjects::nodes(vec![paused, node_named("w2", &[], Some("me"))]);
    let plan = decide_target("me", &[], None, &observed, utc(PAUSE_NOW));
    assert_eq!(written(&plan), ["w2"]);
    // Not this schedule's any more: not listed as its paused object.
    assert!(plan.paused.is_empty());
    let ca = TargetObjects::ClusterAutoscaler {
        name: "default".into(),
        uid: Some("ca-uid".into()),
        enabled: Some(Some(false)),
        pause: PauseMarks::paused(),
    };
    assert!(
        decide_target("me", &[], None, &ca, utc(PAUSE_NOW))
            .changes
            .is_empty()
    );
}

#[test]
fn objects_paused_elsewhere_are_not_reported_by_a_schedule_that_does_not_manage_them() {
    let claimants = vec![
        node_claimant("older", "2026-01-01T00:00:00Z", &[]),
        node_claimant("me", "2026-01-02T00:00:00Z", &[]),
    ];
    let mut n = node_named("w1", &[], None);
    n.pause = PauseMarks::paused();
    let plan = decide_target(
        "me",
        &claimants,
        Some(false),
        &TargetObjects::nodes(vec![n]),
        utc(PAUSE_NOW),
    );
    assert!(plan.changes.is_empty());
    assert!(plan.paused.is_empty());
    assert_eq!(plan.conflicts.len(), 1);
}

#[test]
fn the_earliest_paused_until_is_when_to_look_again() {
    let claimants = vec![node_claimant("me", "2026-01-01T00:00:00Z", &[])];
    let node = |name: &str, marks: PauseMarks| {
        let mut n = node_named(name, &[], None);
        n.pause = marks;
        n
    };
    let observed = TargetObjects::nodes(vec![
        node("w1", PauseMarks::until("2026-03-27T15:00:00Z")),
        node("w2", PauseMarks::until("2026-03-27T13:30:00+01:00")),
        node("w3", PauseMarks::paused()),
        node("w4", PauseMarks::until("garbage")),
    ]);
    let plan = decide_target("me", &claimants, Some(false), &observed, utc(PAUSE_NOW));
    assert_eq!(plan.resume_at(), Some(utc("2026-03-27T12:30:00Z")));
    assert!(plan.changes.is_empty());
    assert_eq!(plan.paused.len(), 4);
}

#[test]
fn conditions_list_the_paused_objects() {
    let decision = decide(&workday_nights(), utc(PAUSE_NOW), &cv(false));
    let paused = |name: &str, state: PauseState| PausedObject {
        object: format!("Node {name}"),
        state,
    };
    let outcome = |plan: TargetDecision| TargetOutcome::Planned {
        kind: TargetKind::NodeAnnotation,
        plan,
        dry_run: false,
    };
    // Some paused: Ready stays True for the rest, and says which are left alone.
    let some = TargetDecision {
        selected: 3,
        managed: 3,
        paused: vec![paused(
            "w1",
            PauseState::PausedUntil(utc("2026-03-27T13:00:00Z")),
        )],
        ..TargetDecision::default()
    };
    let c = conditions(&decision, &outcome(some), Some(4));
    assert_eq!(c.len(), 5, "no new condition type");
    let ready = find(&c, CONDITION_READY);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (true, "ScaleDownDisabled")
    );
    assert_eq!(
        ready.message,
        "scale-down disabled: no window is open; applied to 2 Nodes; 1 of 3 paused by \
         annotation, left as they are: Node w1 (paused until 2026-03-27T13:00:00Z by annotation \
         scaling.ebb.dev/paused-until)"
    );
    let p = find(&c, CONDITION_PAUSED);
    assert_eq!((p.status, p.reason.as_str()), (true, REASON_OBJECTS_PAUSED));
    assert_eq!(
        p.message,
        "the schedule is not paused; paused by their own annotation, left as they are: Node w1 \
         (paused until 2026-03-27T13:00:00Z by annotation scaling.ebb.dev/paused-until)"
    );

    // All paused: nothing written, not Ready; a few named, the rest counted.
    let all = TargetDecision {
        selected: 4,
        managed: 4,
        paused: (1..=4)
            .map(|i| paused(&format!("w{i}"), PauseState::Paused))
            .collect(),
        ..TargetDecision::default()
    };
    let c = conditions(&decision, &outcome(all), None);
    let ready = find(&c, CONDITION_READY);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (false, "TargetPaused")
    );
    assert!(
        ready.message.starts_with(
            "scale-down disabled: no window is open; nothing written: every managed Node is \
             paused by its own annotation: Node w1 (paused by annotation scaling.ebb.dev/paused)"
        ),
        "{}",
        ready.message
    );
    assert!(ready.message.ends_with("and 1 more"), "{}", ready.message);

    // An invalid paused-until is named as such.
    let invalid = TargetDecision {
        selected: 2,
        managed: 2,
        paused: vec![paused("w1", PauseState::InvalidPausedUntil("soon".into()))],
        ..TargetDecision::default()
    };
    let c = conditions(&decision, &outcome(invalid), None);
    assert!(
        find(&c, CONDITION_PAUSED)
            .message
            .contains("Node w1 (annotation scaling.ebb.dev/paused-until is not an RFC 3339")
    );
    assert!(
        find(&c, CONDITION_READY)
            .message
            .contains("applied to 1 Node;")
    );
}
