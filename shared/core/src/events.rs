//! The Events a decision asks for, as data: [`Notice`]. The runtime publishes them
//! (`ebb_runtime::execute::events`), once the writes they go with succeeded.

/// `Normal` or `Warning`, as in the Event's `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Something expected happened (scaled, paused, ...).
    Normal,
    /// Something needs a human's attention (invalid spec, failed action, ...).
    Warning,
}

/// An Event a decision asks for, recorded once the writes it goes with succeeded: the one shape
/// every controller's plan uses for its Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Normal or Warning.
    pub kind: EventKind,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What the controller did (or would do).
    pub action: &'static str,
    /// For humans.
    pub note: String,
}

impl Notice {
    /// A `Normal` Event.
    pub fn normal(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            kind: EventKind::Normal,
            reason,
            action,
            note: note.into(),
        }
    }

    /// A `Warning` Event.
    pub fn warning(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            kind: EventKind::Warning,
            reason,
            action,
            note: note.into(),
        }
    }
}
