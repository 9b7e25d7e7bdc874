#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use futures::stream;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::PartialObjectMeta;
use std::time::Duration;

fn hpa(name: &str, version: &str) -> HorizontalPodAutoscaler {
    let mut hpa = HorizontalPodAutoscaler::default();
    hpa.metadata.name = Some(name.into());
    hpa.metadata.namespace = Some("shop".into());
    hpa.metadata.resource_version = Some(version.into());
    hpa
}

fn target(name: &str) -> Target {
    Target::named::<HorizontalPodAutoscaler>(Some("shop"), name)
}

#[test]
fn only_the_event_of_the_version_written_is_own() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    own.record(&target("web"), "7");
    assert!(
        !own.is_own(&hpa("web", "6")),
        "an older change is someone else's"
    );
    assert!(!own.is_own(&hpa("api", "7")), "another object");
    assert!(own.is_own(&hpa("web", "7")));
    assert!(!own.is_own(&hpa("web", "7")), "its event came once");
    assert_eq!(own.pending(), 0);
}

/// Two watches of one kind (service-scaler's HPA watch for its ServiceScalers and the one for
/// FleetSchedule members) each see the event of one write: each passes it over.
#[test]
fn every_watch_of_the_kind_passes_over_the_event_of_an_own_write() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    own.watch::<PartialObjectMeta<HorizontalPodAutoscaler>>();
    own.record(&target("web"), "7");
    assert!(own.is_own(&hpa("web", "7")), "the first watch");
    assert!(own.is_own(&hpa("web", "7")), "the second watch");
    assert!(!own.is_own(&hpa("web", "7")), "no third");
    assert_eq!(own.pending(), 0);
}

#[test]
fn a_later_event_passes_and_earlier_writes_are_forgotten_at_a_later_own_one() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    own.record(&target("web"), "7");
    own.record(&target("web"), "9");
    assert!(
        !own.is_own(&hpa("web", "8")),
        "someone else's change in between"
    );
    assert!(own.is_own(&hpa("web", "9")));
    assert!(
        !own.is_own(&hpa("web", "7")),
        "before the last own event: gone"
    );
    assert_eq!(own.pending(), 0);
}

#[test]
fn writes_to_kinds_no_watch_asked_for_are_not_kept() {
    let own = OwnWrites::new();
    own.record(&target("web"), "7");
    own.record(&Target::named::<ConfigMap>(Some("shop"), "web"), "7");
    assert_eq!(own.pending(), 0);
    own.watch::<ConfigMap>();
    assert!(!own.is_own(&hpa("web", "7")));
}

#[test]
fn each_object_keeps_a_bounded_number_of_versions() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    for version in 0..(PER_OBJECT + 3) {
        own.record(&target("web"), &version.to_string());
    }
    assert!(!own.is_own(&hpa("web", "0")), "the oldest was let go");
    assert!(own.is_own(&hpa("web", &(PER_OBJECT + 2).to_string())));
}

#[tokio::test]
async fn a_watch_passes_over_own_events_metadata_only_too() {
    let own = OwnWrites::new();
    let meta = |version: &str| PartialObjectMeta::<HorizontalPodAutoscaler> {
        metadata: hpa("web", version).metadata,
        ..Default::default()
    };
    let events = stream::iter(vec![
        Ok::<_, ()>(meta("5")),
        Ok(meta("7")),
        Err(()),
        Ok(meta("8")),
    ]);
    // The watch asks first; the write comes after, as in a controller.
    let skipping = own.skip(events);
    own.record(&target("web"), "7");
    let passed: Vec<_> = skipping
        .map(|event| event.map(|o| o.metadata.resource_version.unwrap()))
        .collect()
        .await;
    assert_eq!(passed, vec![Ok("5".into()), Err(()), Ok("8".into())]);
}

/// The event of a write may come before the write's answer: it waits for the answer, and is
/// passed over once the answer names its version.
#[tokio::test(start_paused = true)]
async fn an_event_before_the_answer_waits_for_it() {
    let own = OwnWrites::new();
    let (events, rx) = futures::channel::mpsc::unbounded::<Result<HorizontalPodAutoscaler, ()>>();
    let mut passed = Box::pin(own.skip(rx));
    let in_flight = own.begin(&target("web"));
    events.unbounded_send(Ok(hpa("web", "7"))).unwrap();
    events.unbounded_send(Ok(hpa("api", "3"))).unwrap();
    // Nothing passes while the write is in flight (the other object's event waits behind it).
    let early = tokio::time::timeout(Duration::from_millis(500), passed.next()).await;
    assert!(early.is_err(), "judged before the answer");
    own.record(&target("web"), "7");
    drop(in_flight);
    let next = passed.next().await.unwrap().unwrap();
    assert_eq!(
        next.metadata.name.as_deref(),
        Some("api"),
        "web's own event was passed over"
    );
}

/// A write that never answers holds an event back no longer than IN_FLIGHT_WAIT.
#[tokio::test(start_paused = true)]
async fn an_unanswered_write_holds_an_event_back_for_a_bounded_time() {
    let own = OwnWrites::new();
    let (events, rx) = futures::channel::mpsc::unbounded::<Result<HorizontalPodAutoscaler, ()>>();
    let mut passed = Box::pin(own.skip(rx));
    let _in_flight = own.begin(&target("web"));
    events.unbounded_send(Ok(hpa("web", "7"))).unwrap();
    let started = tokio::time::Instant::now();
    let next = passed.next().await.unwrap().unwrap();
    assert_eq!(next.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(started.elapsed(), IN_FLIGHT_WAIT);
}

/// A write whose event never comes (the object was deleted first, or another watch covers its
/// namespace) is forgotten after [`REMEMBER`]: nothing outlives its object.
#[tokio::test(start_paused = true)]
async fn a_version_whose_event_never_comes_is_forgotten() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    own.watch::<HorizontalPodAutoscaler>();
    for i in 0..100 {
        own.record(&target(&format!("gone-{i}")), "7");
    }
    own.record(&target("web"), "8");
    assert!(own.is_own(&hpa("web", "8")), "one of two watches saw it");
    assert_eq!(own.pending(), 101);
    tokio::time::advance(REMEMBER).await;
    assert_eq!(own.pending(), 0);
    // A version recorded since is still remembered.
    own.record(&target("web"), "9");
    assert!(own.is_own(&hpa("web", "9")));
}

/// On a quiet cluster no write comes to forget the versions of deleted objects: the sweep does,
/// after [`REMEMBER`], and gives back the room the burst grew the tables to.
#[tokio::test(start_paused = true)]
async fn a_quiet_process_forgets_old_versions_and_gives_back_their_room() {
    let own = OwnWrites::new();
    own.watch::<HorizontalPodAutoscaler>();
    let shutdown = crate::Shutdown::new();
    let sweep = tokio::spawn(own.clone().forget_old_until(shutdown.clone()));
    for i in 0..5_000 {
        own.record(&target(&format!("churned-{i}")), "7");
    }
    let grown = own.lock().versions.capacity();
    assert!(grown >= 5_000, "{grown}");
    tokio::time::sleep(REMEMBER * 2).await;
    {
        let inner = own.lock();
        assert_eq!(inner.versions.len(), 0);
        assert!(
            inner.versions.capacity() <= 64,
            "room kept for {} objects",
            inner.versions.capacity()
        );
    }
    shutdown.trigger();
    sweep.await.unwrap();
}
