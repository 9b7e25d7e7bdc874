//! `ebb-sim run` as a user runs it: the same scenario gives the same JSON and the same chart,
//! byte for byte, in two separate processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

fn scenario(name: &str) -> String {
    format!(
        "{}/../examples/scenarios/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn charts_dir(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sim-cli-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ebb-sim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Every scenario in examples/scenarios/, twice, in two processes: the same bytes.
#[test]
fn every_scenario_gives_the_same_json_and_chart_in_two_processes() {
    let dir = format!("{}/../examples/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 2, "{names:?}");
    for name in names {
        let file = scenario(&name);
        let stem = name.trim_end_matches(".yaml");
        let (a_dir, b_dir) = (
            charts_dir(&format!("{stem}-a")),
            charts_dir(&format!("{stem}-b")),
        );
        let json = |dir: &PathBuf| {
            let (ok, out, err) = run(&[
                "run",
                &file,
                "--output",
                "json",
                "--charts",
                dir.to_str().unwrap(),
            ]);
            assert!(ok, "{name}: {err}");
            out
        };
        let (a, b) = (json(&a_dir), json(&b_dir));
        let strip = |text: &str, dir: &PathBuf| text.replace(dir.to_str().unwrap(), "DIR");
        assert_eq!(
            strip(&a, &a_dir),
            strip(&b, &b_dir),
            "{name}: byte for byte"
        );
        let value: serde_json::Value = serde_json::from_str(&a).unwrap();
        let chart = value["charts"][0].as_str().unwrap().to_owned();
        let other = chart.replace(a_dir.to_str().unwrap(), b_dir.to_str().unwrap());
        assert_eq!(
            std::fs::read(&chart).unwrap(),
            std::fs::read(&other).unwrap(),
            "{name}: chart"
        );
    }
}

#[test]
fn text_output_has_the_timeline_the_summary_and_where_the_chart_is() {
    let dir = charts_dir("text");
    let (ok, out, err) = run(&[
        "run",
        &scenario("scaledown-week.yaml"),
        "--charts",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("-- timeline"), "{out}");
    assert!(
        out.contains("PATCH clusterautoscalers/default spec.scaleDown.enabled=false"),
        "{out}"
    );
    assert!(out.contains("nodeHoursSaved"), "{out}");
    assert!(
        out.contains(&format!(
            "chart: {}",
            dir.join("scaledown-week.svg").display()
        )),
        "{out}"
    );
}

#[test]
fn a_broken_scenario_fails_naming_the_file_and_the_field() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("broken-scenario.yaml");
    std::fs::write(
        &file,
        "name: x\nstart: 2026-03-09T00:00:00Z\nspan: soon\nobjects: []\n",
    )
    .unwrap();
    let (ok, _, err) = run(&["run", file.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.starts_with("ebb-sim run: "), "{err}");
    assert!(err.contains("broken-scenario.yaml"), "{err}");
    assert!(err.contains("\"soon\" is not a duration"), "{err}");
}

/// docs/simulate.md shows charts from docs/sim/: they are what the scenarios draw now.
#[test]
fn the_readme_charts_are_current() {
    let docs = PathBuf::from(format!("{}/../docs/sim", env!("CARGO_MANIFEST_DIR")));
    for name in ["seed-001-provisioners", "workshop-rush"] {
        let dir = charts_dir(&format!("readme-{name}"));
        let (ok, _, err) = run(&[
            "run",
            &scenario(&format!("{name}.yaml")),
            "--charts",
            dir.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
        let fresh = std::fs::read(dir.join(format!("{name}.svg"))).unwrap();
        let kept = std::fs::read(docs.join(format!("{name}.svg"))).unwrap();
        assert!(
            fresh == kept,
            "docs/sim/{name}.svg is stale: cargo run -p ebb-sim -- run examples/scenarios/{name}.yaml --charts docs/sim"
        );
    }
}

/// A holiday in the simulator: scaledown-week with Tuesday 10 March excluded from the workday
/// nights (Zurich). The Monday night ends at Tuesday's midnight (23:00Z), Tuesday night does not
/// open at 20:00 CET but at Wednesday's midnight, and the status previews that.
#[test]
fn an_excluded_date_shows_in_the_timeline() {
    excluded_day_in_the_timeline(
        "scaledown-holiday.yaml",
        "      excludeDates: [\"2026-03-10\"]\n",
        "",
    );
}

/// The same holiday from a HolidayCalendar among the scenario's objects, which the controller
/// reads through its watch of calendars.
#[test]
fn a_holiday_calendar_shows_in_the_timeline() {
    excluded_day_in_the_timeline(
        "scaledown-calendar.yaml",
        "      excludeCalendars: [swiss-holidays]\n",
        "- apiVersion: scaling.ebb.dev/v1alpha1\n  kind: HolidayCalendar\n  metadata:\n    name: swiss-holidays\n  spec:\n    dates: [\"2026-03-10\"]\n",
    );
}

/// scaledown-week with `exclusion` added to the first window and `objects` to the objects: the
/// timeline skips Tuesday 10 March.
fn excluded_day_in_the_timeline(name: &str, exclusion: &str, objects: &str) {
    let text = std::fs::read_to_string(scenario("scaledown-week.yaml")).unwrap();
    let holiday = text.replacen(
        "      duration: 11h\n      timeZone: Europe/Zurich\n",
        &format!("      duration: 11h\n      timeZone: Europe/Zurich\n{exclusion}"),
        1,
    );
    assert_ne!(holiday, text, "the scenario's first window moved");
    let holiday = holiday.replacen("objects:\n", &format!("objects:\n{objects}"), 1);
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&file, holiday).unwrap();
    let (ok, out, err) = run(&["run", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let flip = |at: &str, enabled: bool| {
        out.lines()
            .any(|l| l.starts_with(at) && l.ends_with(&format!("spec.scaleDown.enabled={enabled}")))
    };
    assert!(flip("2026-03-09T19:00:00Z", true), "{out}");
    assert!(flip("2026-03-09T23:00:00Z", false), "{out}");
    assert!(!flip("2026-03-10T19:00:00Z", true), "{out}");
    assert!(flip("2026-03-10T23:00:00Z", true), "{out}");
    assert!(
        out.contains("status.nextTransitionTime=\"2026-03-10T23:00:00Z\""),
        "{out}"
    );
}
