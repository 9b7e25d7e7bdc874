#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn hooks() -> Scenario {
    let path = format!(
        "{}/../examples/scenarios/stackable-hooks.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// stackable-scaler's documented behaviour: every scale-down runs its pre-scale hook exactly
/// once per attempt, a failed hook stops in Failed until the retry annotation, and the retried
/// operation completes.
#[tokio::test(start_paused = true)]
async fn a_failed_hook_waits_for_the_retry_and_no_hook_is_skipped_or_repeated() {
    let outcome = run("stackable-hooks.yaml", &hooks()).await.unwrap();
    let s = &outcome.summary;
    assert_eq!(s["hookRuns"]["prescale"], 3, "{s:#}");
    assert_eq!(s["failedRuns"], 1, "{s:#}");
    assert_eq!(s["repeatedRuns"], 0, "{s:#}");
    assert_eq!(s["retries"], 1, "{s:#}");
    assert_eq!(s["completed"], 2, "{s:#}");
    assert_eq!(s["finalReplicas"], 2, "{s:#}");
    let failed = s["secondsInStage"]["Failed"].as_i64().unwrap();
    assert!(
        (600..=620).contains(&failed),
        "ten minutes in Failed: {s:#}"
    );
}
