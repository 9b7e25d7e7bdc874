//! The uniform pause annotations every ebb controller honours on the objects it manages.
//!
//! - `scaling.ebb.dev/paused: "true"` pauses until the annotation is removed or set to anything else.
//! - `scaling.ebb.dev/paused-until: <RFC 3339>` pauses until that instant and then expires by itself.
//!
//! An unparseable `paused-until` counts as paused (fail-safe: the user clearly asked for a pause,
//! we just cannot tell until when), and is reported so the controller can set a condition naming
//! the annotation.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};

use crate::conditions::{ConditionUpdate, find_condition, set_condition};
use crate::events::EventKind;
use crate::plan::Requeue;

/// Pauses indefinitely when `"true"`.
pub const PAUSED_ANNOTATION: &str = "scaling.ebb.dev/paused";
/// Pauses until the given RFC 3339 instant.
pub const PAUSED_UNTIL_ANNOTATION: &str = "scaling.ebb.dev/paused-until";

/// Whether an object is paused at a given instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PauseState {
    /// Not paused (no annotation, `paused` not `"true"`, or `paused-until` in the past).
    Active,
    /// Paused by `paused: "true"`, with no end.
    Paused,
    /// Paused by `paused-until`, which lies in the future.
    PausedUntil(Timestamp),
    /// `paused-until` holds this value, which is not an RFC 3339 instant. Treated as paused.
    InvalidPausedUntil(String),
}

impl PauseState {
    /// Whether the controller must leave the object alone.
    pub fn is_paused(&self) -> bool {
        !matches!(self, Self::Active)
    }

    /// When the pause ends by itself, for requeueing at that instant.
    pub fn resume_at(&self) -> Option<Timestamp> {
        match self {
            Self::PausedUntil(until) => Some(*until),
            _ => None,
        }
    }
}

/// A short description for logs, Events and condition messages.
impl std::fmt::Display for PauseState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Active => f.write_str("not paused"),
            Self::Paused => write!(f, "paused by annotation {PAUSED_ANNOTATION}"),
            Self::PausedUntil(until) => write!(
                f,
                "paused until {} by annotation {PAUSED_UNTIL_ANNOTATION}",
                crate::time::rfc3339(*until)
            ),
            Self::InvalidPausedUntil(value) => write!(
                f,
                "annotation {PAUSED_UNTIL_ANNOTATION} is not an RFC 3339 instant ({value:?}); \
                 treated as paused until fixed or removed"
            ),
        }
    }
}

/// The pause state of an object at `now`.
///
/// `paused: "true"` (case-insensitive, surrounding blanks ignored) wins over `paused-until`. A
/// `paused-until` equal to `now` has expired: the pause covers instants strictly before it.
pub fn pause_state(meta: &ObjectMeta, now: Timestamp) -> PauseState {
    let annotation = |key: &str| meta.annotations.as_ref().and_then(|a| a.get(key));

    if annotation(PAUSED_ANNOTATION).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return PauseState::Paused;
    }
    let Some(raw) = annotation(PAUSED_UNTIL_ANNOTATION) else {
        return PauseState::Active;
    };
    match raw.trim().parse::<Timestamp>() {
        Ok(until) => {
            if now < until {
                PauseState::PausedUntil(until)
            } else {
                PauseState::Active
            }
        }
        Err(_) => PauseState::InvalidPausedUntil(raw.clone()),
    }
}

/// A pause found on one named object: what a controller reports when it leaves that object alone.
///
/// Displays as `HorizontalPodAutoscaler shop/web: paused until 2026-12-24T08:00:00Z by annotation
/// scaling.ebb.dev/paused-until`, for condition messages and Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectPause {
    /// The object's kind (`HorizontalPodAutoscaler`, `StatefulSet`, ...).
    pub kind: String,
    /// `namespace/name` (or `name` for a cluster-scoped object).
    pub key: String,
    /// Why and how long; never [`PauseState::Active`].
    pub state: PauseState,
}

impl ObjectPause {
    /// The condition / Event reason: `InvalidPausedUntil` for an unparseable `paused-until`,
    /// `Paused` otherwise.
    pub fn reason(&self) -> &'static str {
        match self.state {
            PauseState::InvalidPausedUntil(_) => "InvalidPausedUntil",
            _ => "Paused",
        }
    }

    /// When the pause ends by itself.
    pub fn resume_at(&self) -> Option<Timestamp> {
        self.state.resume_at()
    }
}

impl std::fmt::Display for ObjectPause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.kind, self.key, self.state)
    }
}

/// The first of `objects` (kind and metadata, in the controller's order of precedence) that is
/// paused at `now`, or `None` when none is. A controller lists its own object first, then the
/// objects it writes, so one rule (and one message shape) serves every pause it honours.
pub fn first_pause<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a ObjectMeta)>,
    now: Timestamp,
) -> Option<ObjectPause> {
    objects.into_iter().find_map(|(kind, meta)| {
        let state = pause_state(meta, now);
        state.is_paused().then(|| {
            let name = meta.name.clone().unwrap_or_default();
            ObjectPause {
                kind: kind.to_owned(),
                key: meta
                    .namespace
                    .as_ref()
                    .map_or_else(|| name.clone(), |ns| format!("{ns}/{name}")),
                state,
            }
        })
    })
}

/// The condition type every controller sets while it leaves something alone because of a pause.
pub const CONDITION_PAUSED: &str = "Paused";

/// How a controller reports a pause, the same in all four: the `Paused` condition (reason
/// `Paused` or `InvalidPausedUntil`, the message naming the object and the annotation), an Event
/// when the pause starts or changes, and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct PauseReport {
    /// The paused object and why.
    pub pause: ObjectPause,
    /// The `Paused` condition to set (status `True`).
    pub condition: ConditionUpdate,
    /// The Event to record, when the condition is new or says something new: `(kind, reason,
    /// note)`; a Warning for an unreadable `paused-until`.
    pub event: Option<(EventKind, &'static str, String)>,
    /// At `paused-until`; an indefinite (or unreadable) pause waits for a change.
    pub requeue: Requeue,
}

/// The pause report for the first of `objects` (the controller's own object first, then those it
/// writes, see [`first_pause`]) paused at `now`, given the object's current `conditions`; `None`
/// when none is paused. `generation` is the own object's `metadata.generation`.
pub fn pause_report<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a ObjectMeta)>,
    conditions: &[Condition],
    generation: Option<i64>,
    now: Timestamp,
) -> Option<PauseReport> {
    let pause = first_pause(objects, now)?;
    let message = pause.to_string();
    let condition = ConditionUpdate::new(CONDITION_PAUSED, true, pause.reason(), message.clone())
        .observed_generation(generation);
    let mut after = conditions.to_vec();
    let mut compared = condition.clone();
    // A new generation alone is no news for people: the Event follows what the condition says.
    compared.observed_generation =
        find_condition(conditions, CONDITION_PAUSED).map_or(generation, |c| c.observed_generation);
    let news = set_condition(&mut after, compared, now);
    let kind = match pause.state {
        PauseState::InvalidPausedUntil(_) => EventKind::Warning,
        _ => EventKind::Normal,
    };
    let requeue = match pause.resume_at() {
        Some(at) => Requeue::After(
            std::time::Duration::try_from(at.duration_since(now)).unwrap_or_default(),
        ),
        None => Requeue::AwaitChange,
    };
    Some(PauseReport {
        event: news.then(|| (kind, pause.reason(), message)),
        pause,
        condition,
        requeue,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::tests_support::utc;

    fn meta(annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    const NOW: &str = "2025-03-30T01:30:00Z";

    #[test]
    fn table() {
        let p = PAUSED_ANNOTATION;
        let u = PAUSED_UNTIL_ANNOTATION;
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, PauseState);
        let cases: Vec<Case> = vec![
            ("no annotations", vec![], PauseState::Active),
            ("paused true", vec![(p, "true")], PauseState::Paused),
            ("paused TRUE", vec![(p, " TRUE ")], PauseState::Paused),
            ("paused false", vec![(p, "false")], PauseState::Active),
            ("paused empty", vec![(p, "")], PauseState::Active),
            ("paused other word", vec![(p, "yes")], PauseState::Active),
            (
                "until in the future",
                vec![(u, "2025-03-30T02:00:00Z")],
                PauseState::PausedUntil(utc("2025-03-30T02:00:00Z")),
            ),
            (
                "until one second ahead",
                vec![(u, "2025-03-30T01:30:01Z")],
                PauseState::PausedUntil(utc("2025-03-30T01:30:01Z")),
            ),
            (
                "until exactly now has expired",
                vec![(u, NOW)],
                PauseState::Active,
            ),
            (
                "until in the past",
                vec![(u, "2025-03-30T01:29:59Z")],
                PauseState::Active,
            ),
            (
                "until with an offset",
                vec![(u, "2025-03-30T03:30:00+01:00")],
                PauseState::PausedUntil(utc("2025-03-30T02:30:00Z")),
            ),
            (
                "until with an offset, already past",
                vec![(u, "2025-03-30T02:00:00+01:00")],
                PauseState::Active,
            ),
            (
                "until unparseable",
                vec![(u, "tomorrow")],
                PauseState::InvalidPausedUntil("tomorrow".into()),
            ),
            (
                "until without a zone",
                vec![(u, "2025-03-30T02:00:00")],
                PauseState::InvalidPausedUntil("2025-03-30T02:00:00".into()),
            ),
            (
                "paused true wins over a past until",
                vec![(p, "true"), (u, "2025-01-01T00:00:00Z")],
                PauseState::Paused,
            ),
            (
                "paused false leaves a future until in force",
                vec![(p, "false"), (u, "2025-03-30T02:00:00Z")],
                PauseState::PausedUntil(utc("2025-03-30T02:00:00Z")),
            ),
        ];
        for (name, annotations, expected) in cases {
            assert_eq!(
                pause_state(&meta(&annotations), utc(NOW)),
                expected,
                "{name}"
            );
        }
        assert_eq!(
            pause_state(&ObjectMeta::default(), utc(NOW)),
            PauseState::Active
        );
    }

    #[test]
    fn is_paused_and_resume_at() {
        let until = utc("2025-03-30T02:00:00Z");
        assert!(!PauseState::Active.is_paused());
        assert!(PauseState::Paused.is_paused());
        assert!(PauseState::PausedUntil(until).is_paused());
        assert!(PauseState::InvalidPausedUntil("x".into()).is_paused());
        assert_eq!(PauseState::PausedUntil(until).resume_at(), Some(until));
        assert_eq!(PauseState::Paused.resume_at(), None);
        assert_eq!(PauseState::Active.resume_at(), None);
        assert_eq!(PauseState::InvalidPausedUntil("x".into()).resume_at(), None);
    }

    #[test]
    fn descriptions_name_the_annotation() {
        let until = utc("2025-03-30T02:00:00Z");
        assert_eq!(
            PauseState::PausedUntil(until).to_string(),
            "paused until 2025-03-30T02:00:00Z by annotation scaling.ebb.dev/paused-until"
        );
        assert!(
            PauseState::InvalidPausedUntil("soon".into())
                .to_string()
                .contains("scaling.ebb.dev/paused-until")
        );
        assert!(PauseState::Paused.to_string().contains(PAUSED_ANNOTATION));
    }

    #[test]
    fn first_pause_names_the_first_paused_object_and_its_annotation() {
        let now = utc(NOW);
        let mut own = meta(&[]);
        own.name = Some("web".into());
        own.namespace = Some("shop".into());
        let mut hpa = meta(&[(PAUSED_UNTIL_ANNOTATION, "2026-12-24T08:00:00Z")]);
        hpa.name = Some("web".into());
        hpa.namespace = Some("shop".into());
        let mut node = meta(&[(PAUSED_ANNOTATION, "true")]);
        node.name = Some("n1".into());

        assert_eq!(first_pause([("ServiceScaler", &own)], now), None);
        let pause = first_pause(
            [
                ("ServiceScaler", &own),
                ("HorizontalPodAutoscaler", &hpa),
                ("Node", &node),
            ],
            now,
        )
        .unwrap();
        assert_eq!(
            pause.to_string(),
            "HorizontalPodAutoscaler shop/web: paused until 2026-12-24T08:00:00Z by annotation \
             scaling.ebb.dev/paused-until"
        );
        assert_eq!(pause.reason(), "Paused");
        assert_eq!(pause.resume_at(), Some(utc("2026-12-24T08:00:00Z")));
        // Cluster-scoped: the name alone.
        let pause = first_pause([("Node", &node)], now).unwrap();
        assert_eq!(
            pause.to_string(),
            "Node n1: paused by annotation scaling.ebb.dev/paused"
        );
        let invalid = meta(&[(PAUSED_UNTIL_ANNOTATION, "soon")]);
        let pause = first_pause([("StatefulSet", &invalid)], now).unwrap();
        assert_eq!(pause.reason(), "InvalidPausedUntil");
        assert_eq!(pause.resume_at(), None);
    }

    #[test]
    fn pause_report_names_the_object_events_only_news_and_wakes_at_the_end() {
        let now = utc(NOW);
        let own = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            ..meta(&[(PAUSED_UNTIL_ANNOTATION, "2025-03-30T02:00:00Z")])
        };
        let active = meta(&[]);
        assert_eq!(pause_report([("X", &active)], &[], Some(1), now), None);

        let report = pause_report([("ServiceScaler", &own)], &[], Some(1), now).unwrap();
        assert_eq!(report.condition.type_, CONDITION_PAUSED);
        assert!(report.condition.status);
        assert_eq!(report.condition.reason, "Paused");
        assert_eq!(report.condition.observed_generation, Some(1));
        assert_eq!(
            report.condition.message,
            "ServiceScaler shop/web: paused until 2025-03-30T02:00:00Z by annotation \
             scaling.ebb.dev/paused-until"
        );
        let (kind, reason, note) = report.event.clone().unwrap();
        assert_eq!((kind, reason), (EventKind::Normal, "Paused"));
        assert_eq!(note, report.condition.message);
        assert_eq!(
            report.requeue,
            Requeue::After(std::time::Duration::from_secs(30 * 60))
        );

        // Already reported (even at an older generation): no second Event.
        let mut conditions = Vec::new();
        set_condition(&mut conditions, report.condition.clone(), now);
        let again = pause_report([("ServiceScaler", &own)], &conditions, Some(2), now).unwrap();
        assert_eq!(again.event, None);
        assert_eq!(again.condition.observed_generation, Some(2));

        // An unreadable instant: a Warning, and a wait for the annotation to change.
        let bad = meta(&[(PAUSED_UNTIL_ANNOTATION, "soon")]);
        let report = pause_report([("StatefulSet", &bad)], &conditions, None, now).unwrap();
        assert_eq!(report.event.unwrap().0, EventKind::Warning);
        assert_eq!(report.condition.reason, "InvalidPausedUntil");
        assert_eq!(report.requeue, Requeue::AwaitChange);
    }
}
