//! Kubernetes Events (`events.k8s.io/v1`) for the objects a controller acts on.
//!
//! Reconcilers talk to an [`EventSink`], whose [`EventSink::record`] never fails: an Event is a
//! courtesy to humans, and failing to publish one must not fail (and retry) a reconcile. Tests use
//! the `RecordingEvents` double from the `ebb-testkit` crate.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

pub use ebb_core::events::{EventKind, Notice};

/// The Event `type` of `kind`.
fn event_type(kind: EventKind) -> EventType {
    match kind {
        EventKind::Normal => EventType::Normal,
        EventKind::Warning => EventType::Warning,
    }
}

/// Publishing an Event failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot publish event {reason} for {object}: {source}")]
pub struct EventError {
    reason: String,
    object: String,
    #[source]
    source: kube::Error,
}

/// Where reconcilers send Events. Object-safe, so reconcilers hold an `Arc<dyn EventSink>`.
pub trait EventSink: Send + Sync {
    /// Records an Event about `reference`; failures are logged at warn and swallowed.
    ///
    /// `reason` is a short CamelCase word (`Scaled`), `action` what the controller did or would do
    /// (`Scale`), `note` a human sentence (empty for none).
    fn record<'a>(
        &'a self,
        reference: &'a ObjectReference,
        kind: EventKind,
        reason: &'a str,
        action: &'a str,
        note: &'a str,
    ) -> BoxFuture<'a, ()>;

    /// Records the Event `notice` asks for about `reference`.
    fn notify<'a>(
        &'a self,
        reference: &'a ObjectReference,
        notice: &'a Notice,
    ) -> BoxFuture<'a, ()> {
        self.record(
            reference,
            notice.kind,
            notice.reason,
            notice.action,
            &notice.note,
        )
    }
}

impl<T: EventSink + ?Sized> EventSink for Arc<T> {
    fn record<'a>(
        &'a self,
        reference: &'a ObjectReference,
        kind: EventKind,
        reason: &'a str,
        action: &'a str,
        note: &'a str,
    ) -> BoxFuture<'a, ()> {
        (**self).record(reference, kind, reason, action, note)
    }
}

/// How many Events one publisher remembers to fold repeats into a series.
///
/// kube's `Recorder` keeps every Event it published in the last six minutes, in a table that
/// never shrinks, each entry a whole Event (about 2 KiB): 10 000 objects given an Event at once
/// held 35 MiB for the life of the process. client-go bounds the same memory (an LRU of 4096
/// Events); here the publisher starts a fresh `Recorder` after this many Events, so a repeat within
/// the last few hundred still joins its series and an older one starts a new Event.
pub const EVENTS_REMEMBERED: usize = 256;

/// Publishes Events through the API server, as `reportingController: <controller name>`.
///
/// kube's `Recorder` underneath folds repeats of the same event into a series (one object with a
/// count) instead of creating a new Event each time, for the last [`EVENTS_REMEMBERED`] Events.
#[derive(Clone)]
pub struct EventPublisher {
    client: Client,
    reporter: Reporter,
    /// The recorder in use and how many Events it has published.
    recorder: Arc<Mutex<(Recorder, usize)>>,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher").finish_non_exhaustive()
    }
}

impl EventPublisher {
    /// A publisher reporting as `controller_name` (the instance is the host/pod name).
    pub fn new(client: Client, controller_name: &str) -> Self {
        let reporter = Reporter::from(controller_name);
        let recorder = Recorder::new(client.clone(), reporter.clone());
        Self {
            client,
            reporter,
            recorder: Arc::new(Mutex::new((recorder, 0))),
        }
    }

    /// The recorder for one more Event: a fresh one once the current one has published
    /// [`EVENTS_REMEMBERED`] (the old one, and what it remembers, go when its last publish ends).
    fn recorder(&self) -> Recorder {
        let mut current = self.recorder.lock().unwrap_or_else(PoisonError::into_inner);
        if current.1 >= EVENTS_REMEMBERED {
            *current = (Recorder::new(self.client.clone(), self.reporter.clone()), 0);
        }
        current.1 += 1;
        current.0.clone()
    }

    /// Publishes one Event, returning the API error if any (it is also logged at warn).
    ///
    /// Reconcilers should prefer [`EventSink::record`], which cannot fail.
    pub async fn publish(
        &self,
        reference: &ObjectReference,
        kind: EventKind,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Result<(), EventError> {
        let event = Event {
            type_: event_type(kind),
            reason: reason.to_owned(),
            note: (!note.is_empty()).then(|| note.to_owned()),
            action: action.to_owned(),
            secondary: None,
        };
        self.recorder()
            .publish(&event, reference)
            .await
            .map_err(|source| {
                let error = EventError {
                    reason: reason.to_owned(),
                    object: describe(reference),
                    source,
                };
                tracing::warn!(%error, "event not published");
                error
            })
    }
}

impl EventSink for EventPublisher {
    fn record<'a>(
        &'a self,
        reference: &'a ObjectReference,
        kind: EventKind,
        reason: &'a str,
        action: &'a str,
        note: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // `publish` has already logged the failure; nothing else to do with it.
            let _ = self.publish(reference, kind, reason, action, note).await;
        })
    }
}

/// `Kind namespace/name` for log lines.
fn describe(reference: &ObjectReference) -> String {
    let kind = reference.kind.as_deref().unwrap_or("object");
    let name = reference.name.as_deref().unwrap_or("?");
    match reference.namespace.as_deref() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn describe_names_the_object() {
        let mut r = ObjectReference {
            kind: Some("Deployment".into()),
            name: Some("web".into()),
            namespace: Some("shop".into()),
            ..ObjectReference::default()
        };
        assert_eq!(describe(&r), "Deployment shop/web");
        r.namespace = None;
        assert_eq!(describe(&r), "Deployment web");
    }
}
