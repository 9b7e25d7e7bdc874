//! The `plan` subcommand as a user runs it: the built binary on the repository's examples and on
//! files in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use ebb_testkit::plan_cli::{PlanCli, TempFile, example};
use serde_json::{Value, json};

const PLAN: PlanCli = PlanCli(env!("CARGO_BIN_EXE_scaledown-window"));

fn run(args: &[&str]) -> Output {
    PLAN.run(args)
}

fn json_at(file: &Path, at: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "--file",
        file.to_str().unwrap(),
        "--at",
        at,
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    PLAN.json(&args)
}

fn answer(enabled: bool, window: Option<u32>, next: Option<&str>) -> Value {
    json!({
        "name": "workday-nights",
        "scaleDownEnabled": enabled,
        "activeWindow": window,
        "nextTransition": next,
        "tzdata": ebb_schedule::BUNDLED_RELEASE,
    })
}

#[test]
fn the_example_at_several_instants() {
    let file = example("scaledown-schedule.yaml");
    let cases = [
        // Friday noon in Zurich: closed until 20:00 CET.
        (
            "2026-03-27T11:00:00Z",
            answer(false, None, Some("2026-03-27T19:00:00Z")),
        ),
        // Friday 20:00 CET: the night window merges with the weekend one (48 elapsed hours from
        // Saturday 00:00 CET, ending Monday 01:00 CEST after the spring-forward night).
        (
            "2026-03-27T19:00:00Z",
            answer(true, Some(0), Some("2026-03-29T23:00:00Z")),
        ),
        (
            "2026-03-28T12:00:00Z",
            answer(true, Some(1), Some("2026-03-29T23:00:00Z")),
        ),
        // Monday afternoon: closed until 20:00 CEST.
        (
            "2026-03-30T12:00:00Z",
            answer(false, None, Some("2026-03-30T18:00:00Z")),
        ),
        (
            "2026-03-31T04:59:59Z",
            answer(true, Some(0), Some("2026-03-31T05:00:00Z")),
        ),
        // The fall-back weekend: Saturday 00:00 CEST + 48h is Sunday 23:00 CET.
        (
            "2026-10-23T18:00:00Z",
            answer(true, Some(0), Some("2026-10-25T22:00:00Z")),
        ),
        // Offsets are accepted: Friday 14:00 in Zurich.
        (
            "2026-03-27T14:00:00+01:00",
            answer(false, None, Some("2026-03-27T19:00:00Z")),
        ),
    ];
    for (at, expected) in cases {
        assert_eq!(json_at(&file, at, &[]), expected, "at {at}");
    }
}

#[test]
fn an_upgrade_enables_the_example_which_follows_upgrades() {
    let file = example("scaledown-schedule.yaml");
    assert_eq!(
        json_at(&file, "2026-03-27T11:00:00Z", &["--upgrading"]),
        answer(true, None, None)
    );
}

#[test]
fn an_updating_machine_config_pool_enables_the_example_too() {
    let file = example("scaledown-schedule.yaml");
    assert_eq!(
        json_at(
            &file,
            "2026-03-27T11:00:00Z",
            &["--updating-pool", "worker", "--updating-pool", "infra"]
        ),
        answer(true, None, None)
    );
    let out = run(&[
        "--file",
        file.to_str().unwrap(),
        "--at",
        "2026-03-27T11:00:00Z",
        "--updating-pool",
        "worker",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("scale-down: enabled (MachineConfigPool worker is updating)"),
        "{text}"
    );
    assert!(
        text.contains("next transition: when the maintenance ends"),
        "{text}"
    );
}

#[test]
fn the_karpenter_example_on_new_york_sundays() {
    let file = example("scaledown-schedule-karpenter.yaml");
    let got = json_at(&file, "2026-03-07T12:00:00Z", &[]);
    assert_eq!(
        got,
        json!({
            "name": "batch-sunday-consolidation",
            "scaleDownEnabled": false,
            "activeWindow": null,
            // Sunday 06:00 EDT, the first morning after the spring-forward night.
            "nextTransition": "2026-03-08T10:00:00Z",
            "tzdata": ebb_schedule::BUNDLED_RELEASE,
        })
    );
    let got = json_at(&file, "2026-03-08T12:00:00Z", &[]);
    assert_eq!(got["scaleDownEnabled"], json!(true));
    assert_eq!(got["nextTransition"], json!("2026-03-08T14:00:00Z"));
}

#[test]
fn text_output_by_default() {
    let out = run(&[
        "--file",
        example("scaledown-schedule.yaml").to_str().unwrap(),
        "--at",
        "2026-03-28T12:00:00Z",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "ScaleDownSchedule workday-nights at 2026-03-28T12:00:00Z (2026-03-28T13:00:00+01:00 Europe/Zurich)\n  scale-down: enabled (window 1 is open)\n  next transition: 2026-03-29T23:00:00Z (2026-03-30T01:00:00+02:00 Europe/Zurich)\n"
        ),
        "{text}"
    );
}

#[test]
fn invalid_input_exits_non_zero_naming_the_field_and_the_rule() {
    let bad_zone = TempFile::new(
        "bad-zone.yaml",
        "apiVersion: scaling.ebb.dev/v1alpha1\nkind: ScaleDownSchedule\nmetadata: {name: x}\nspec:\n  target: {clusterAutoscaler: {}}\n  windows:\n  - {schedule: '0 20 * * *', duration: 1h, timeZone: Europe/Zurch}\n",
    );
    let bad_cron = TempFile::new(
        "bad-cron.yaml",
        "apiVersion: scaling.ebb.dev/v1alpha1\nkind: ScaleDownSchedule\nmetadata: {name: x}\nspec:\n  target: {clusterAutoscaler: {}}\n  windows:\n  - {schedule: '0 20 * * 1-5', duration: 1h}\n  - {schedule: '61 * * * *', duration: 1h}\n",
    );
    let two_targets = TempFile::new(
        "two-targets.yaml",
        "apiVersion: scaling.ebb.dev/v1alpha1\nkind: ScaleDownSchedule\nmetadata: {name: x}\nspec:\n  target: {clusterAutoscaler: {}, karpenterNodePools: {}}\n  windows: []\n",
    );
    let wrong_kind = TempFile::new(
        "wrong-kind.yaml",
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: x}\nspec: {}\n",
    );
    let cases: [(&Path, &str, &str); 5] = [
        (
            &bad_zone,
            "2026-01-01T00:00:00Z",
            "spec.windows[0].timeZone: unknown time zone \"Europe/Zurch\"",
        ),
        (
            &bad_cron,
            "2026-01-01T00:00:00Z",
            "spec.windows[1].schedule: invalid cron expression \"61 * * * *\"",
        ),
        (
            &two_targets,
            "2026-01-01T00:00:00Z",
            "spec.target: must set exactly one of",
        ),
        (
            &wrong_kind,
            "2026-01-01T00:00:00Z",
            "no ScaleDownSchedule in it (1 object of another kind)",
        ),
        (
            &bad_zone,
            "tomorrow",
            "--at \"tomorrow\": not an RFC 3339 instant",
        ),
    ];
    for (file, at, message) in cases {
        let out = run(&[
            "--file",
            file.to_str().unwrap(),
            "--at",
            at,
            "--output",
            "json",
        ]);
        assert!(!out.status.success(), "{}", file.display());
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(message), "{stderr}");
        assert!(stderr.starts_with("scaledown-window plan: "), "{stderr}");
    }
}

#[test]
fn vancouver_keeps_daylight_time_after_2026_11_01() {
    // tzdb 2026e: British Columbia stays on UTC-7 from 2026-11-01. A window opening at 08:00
    // Vancouver time opens at 15:00Z on 2026-11-26 (under older data: 16:00Z, an hour late).
    let file = TempFile::new(
        "vancouver.yaml",
        concat!(
            "apiVersion: scaling.ebb.dev/v1alpha1\nkind: ScaleDownSchedule\n",
            "metadata: {name: vancouver}\nspec:\n",
            "  target: {clusterAutoscaler: {name: default}}\n  windows:\n",
            "  - {schedule: '0 8 * * *', duration: 1h, timeZone: America/Vancouver}\n",
        ),
    );
    let got = json_at(&file, "2026-11-26T12:00:00Z", &[]);
    assert_eq!(got["nextTransition"], json!("2026-11-26T15:00:00Z"));
    assert_eq!(got["tzdata"], json!("2026f"));
    let out = run(&["--file", file.arg(), "--at", "2026-11-26T12:00:00Z"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("tzdata: 2026f (bundled)"), "{text}");
}

#[test]
fn a_misspelt_field_is_refused_naming_the_declared_one() {
    let typo = TempFile::new(
        "typo.yaml",
        concat!(
            "apiVersion: scaling.ebb.dev/v1alpha1\nkind: ScaleDownSchedule\nmetadata: {name: x}\n",
            "spec:\n  target: {clusterAutoscaler: {}}\n  windows:\n",
            "  - {schedule: '0 20 * * *', duration: 1h, timeZon: Europe/Berlin}\n",
        ),
    );
    let out = run(&["--file", typo.arg(), "--at", "2026-03-28T12:00:00Z"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.windows[0].timeZon: unknown field, did you mean \"timeZone\"?"),
        "{stderr}"
    );
}

/// The example HolidayCalendar (`--calendars`) named by nightly windows in Zurich: the night into
/// Christmas Eve closes at midnight, the holidays stay closed, and the night out of them opens at
/// the first midnight after; without the file the entry is named.
#[test]
fn the_example_calendar_cuts_nights_at_the_holidays_midnights() {
    let file = TempFile::new(
        "nights.yaml",
        r#"apiVersion: scaling.ebb.dev/v1alpha1
kind: ScaleDownSchedule
metadata: {name: workday-nights}
spec:
  target: {clusterAutoscaler: {name: default}}
  windows:
  - schedule: "0 20 * * *"
    duration: 11h
    timeZone: Europe/Zurich
    excludeCalendars: [zurich-holidays]
"#,
    );
    let calendars = example("holiday-calendar.yaml");
    let calendars = calendars.to_str().unwrap();
    let at = |t: &str| json_at(Path::new(file.arg()), t, &["--calendars", calendars]);
    // 23 Dec 21:00 CET: open, closing at 24 Dec 00:00 CET.
    assert_eq!(
        at("2026-12-23T20:00:00Z"),
        answer(true, Some(0), Some("2026-12-23T23:00:00Z"))
    );
    // 24-26 Dec: closed, opening at 27 Dec 00:00 CET inside the night of the 26th.
    assert_eq!(
        at("2026-12-25T20:00:00Z"),
        answer(false, None, Some("2026-12-26T23:00:00Z"))
    );
    assert_eq!(
        at("2026-12-27T01:00:00Z"),
        answer(true, Some(0), Some("2026-12-27T06:00:00Z"))
    );
    let out = run(&["--file", file.arg(), "--at", "2026-12-23T20:00:00Z"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("spec.windows[0].excludeCalendars[0]")
            && said.contains("HolidayCalendar \"zurich-holidays\" not found"),
        "{said}"
    );
}
