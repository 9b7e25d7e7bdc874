#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;
use jiff::SignedDuration;

use super::*;

fn t(minutes: i64) -> Timestamp {
    utc("2026-03-10T09:00:00Z") + SignedDuration::from_mins(minutes)
}

fn jobs(yaml: &str) -> HookJobs {
    HookJobs::new(serde_saphyr::from_str(yaml).unwrap())
}

#[test]
fn a_hook_runs_for_its_duration_then_succeeds() {
    let mut hooks = jobs("preScale: {duration: 3m}");
    let mut dice = Dice::seeded(1);
    assert!(hooks.create("s-prescale-1", "preScale", t(0), &mut dice));
    assert_eq!(hooks.phase("s-prescale-1", t(2)), Some(Phase::Running));
    assert_eq!(hooks.phase("s-prescale-1", t(3)), Some(Phase::Succeeded));
    assert_eq!(hooks.phase("other", t(3)), None);
}

#[test]
fn the_first_runs_fail_as_told_and_a_retry_succeeds() {
    let mut hooks = jobs("preScale: {duration: 1m, failFirst: 1}");
    let mut dice = Dice::seeded(1);
    hooks.create("s-prescale-1", "preScale", t(0), &mut dice);
    hooks.create("s-prescale-2", "preScale", t(5), &mut dice);
    assert_eq!(hooks.phase("s-prescale-1", t(1)), Some(Phase::Failed));
    assert_eq!(hooks.phase("s-prescale-2", t(6)), Some(Phase::Succeeded));
}

#[test]
fn creating_an_existing_job_is_refused_and_not_counted() {
    let mut hooks = jobs("preScale: {duration: 1m, failFirst: 1}");
    let mut dice = Dice::seeded(1);
    assert!(hooks.create("s-prescale-1", "preScale", t(0), &mut dice));
    assert!(!hooks.create("s-prescale-1", "preScale", t(1), &mut dice));
    assert_eq!(hooks.runs().len(), 1);
    // The refused create did not use up the failing attempt.
    hooks.create("s-prescale-2", "preScale", t(2), &mut dice);
    assert_eq!(hooks.phase("s-prescale-2", t(3)), Some(Phase::Succeeded));
}

#[test]
fn a_hook_without_behaviour_succeeds_at_once() {
    let mut hooks = HookJobs::default();
    hooks.create("s-post-1", "postScale", t(0), &mut Dice::seeded(1));
    assert_eq!(hooks.phase("s-post-1", t(0)), Some(Phase::Succeeded));
}

#[test]
fn named_runs_fail_and_the_others_succeed() {
    let mut hooks = jobs("prescale: {duration: 1m, failRuns: [2]}");
    let mut dice = Dice::seeded(1);
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        hooks.create(name, "prescale", t(i as i64 * 5), &mut dice);
    }
    assert_eq!(hooks.phase("a", t(1)), Some(Phase::Succeeded));
    assert_eq!(hooks.phase("b", t(6)), Some(Phase::Failed));
    assert_eq!(hooks.phase("c", t(11)), Some(Phase::Succeeded));
}
