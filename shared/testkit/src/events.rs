//! `RecordingEvents`: an [`EventSink`] that keeps events in memory for assertions.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;

use ebb_runtime::execute::events::{EventKind, EventSink};

/// One event a reconciler recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    /// The object the event is about.
    pub reference: ObjectReference,
    /// Normal or Warning.
    pub kind: EventKind,
    /// CamelCase reason.
    pub reason: String,
    /// The action taken (or intended, in dry-run).
    pub action: String,
    /// The human-readable note ("" for none).
    pub note: String,
}

/// An in-memory [`EventSink`]. Clones share the recorded events.
#[derive(Clone, Debug, Default)]
pub struct RecordingEvents {
    events: Arc<Mutex<Vec<RecordedEvent>>>,
}

impl RecordingEvents {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything recorded so far, in order.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The reasons recorded so far, in order.
    pub fn reasons(&self) -> Vec<String> {
        self.events().into_iter().map(|e| e.reason).collect()
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl EventSink for RecordingEvents {
    fn record<'a>(
        &'a self,
        reference: &'a ObjectReference,
        kind: EventKind,
        reason: &'a str,
        action: &'a str,
        note: &'a str,
    ) -> BoxFuture<'a, ()> {
        let event = RecordedEvent {
            reference: reference.clone(),
            kind,
            reason: reason.to_owned(),
            action: action.to_owned(),
            note: note.to_owned(),
        };
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
        Box::pin(std::future::ready(()))
    }
}
