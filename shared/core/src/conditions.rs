//! Status conditions (`metav1.Condition`) that move `lastTransitionTime` only when `status` flips.
//!
//! Writers compare before writing: [`set_condition`] reports whether anything changed, so a
//! reconcile that changes nothing sends no status patch.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::time::to_k8s_time;

/// The `status` string of a true condition.
pub const TRUE: &str = "True";
/// The `status` string of a false condition.
pub const FALSE: &str = "False";

/// The desired state of one condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// Condition type, e.g. `Ready` or `Paused`.
    pub type_: String,
    /// `true` -> `"True"`, `false` -> `"False"`.
    pub status: bool,
    /// CamelCase machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The `metadata.generation` this condition was computed from.
    pub observed_generation: Option<i64>,
}

impl ConditionUpdate {
    /// A condition without an observed generation.
    pub fn new(
        type_: impl Into<String>,
        status: bool,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: message.into(),
            observed_generation: None,
        }
    }

    /// Sets the observed generation.
    pub fn observed_generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }
}

fn status_str(status: bool) -> &'static str {
    if status { TRUE } else { FALSE }
}

/// Sets the condition of `update.type_`, returning whether `conditions` changed.
///
/// A new condition, or a `status` flip, stamps `lastTransitionTime` with `now` (truncated to the
/// second, as stored). A change of reason, message or observed generation alone updates in place
/// and keeps the transition time.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    update: ConditionUpdate,
    now: Timestamp,
) -> bool {
    let status = status_str(update.status);
    match conditions.iter_mut().find(|c| c.type_ == update.type_) {
        Some(existing) => {
            let unchanged = existing.status == status
                && existing.reason == update.reason
                && existing.message == update.message
                && existing.observed_generation == update.observed_generation;
            if unchanged {
                return false;
            }
            if existing.status != status {
                existing.status = status.to_owned();
                existing.last_transition_time = to_k8s_time(now);
            }
            existing.reason = update.reason;
            existing.message = update.message;
            existing.observed_generation = update.observed_generation;
            true
        }
        None => {
            conditions.push(Condition {
                type_: update.type_,
                status: status.to_owned(),
                reason: update.reason,
                message: update.message,
                observed_generation: update.observed_generation,
                last_transition_time: to_k8s_time(now),
            });
            true
        }
    }
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present with status `"True"`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Removes the condition of type `type_`, returning whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::time::from_k8s_time;

    fn t(minute: u32) -> Timestamp {
        format!("2025-01-01T12:{minute:02}:00Z").parse().unwrap()
    }

    fn ready(status: bool, message: &str) -> ConditionUpdate {
        ConditionUpdate::new("Ready", status, "Reconciled", message).observed_generation(Some(3))
    }

    fn seeded() -> Vec<Condition> {
        let mut conditions = Vec::new();
        assert!(set_condition(&mut conditions, ready(true, "ok"), t(0)));
        conditions
    }

    #[test]
    fn new_condition_is_added_with_now() {
        let conditions = seeded();
        assert_eq!(conditions.len(), 1);
        let c = &conditions[0];
        assert_eq!(
            (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str()
            ),
            ("Ready", "True", "Reconciled", "ok")
        );
        assert_eq!(c.observed_generation, Some(3));
        assert_eq!(from_k8s_time(&c.last_transition_time), t(0));
    }

    #[test]
    fn identical_update_changes_nothing() {
        let mut conditions = seeded();
        let before = conditions.clone();
        assert!(!set_condition(&mut conditions, ready(true, "ok"), t(5)));
        assert_eq!(conditions, before);
    }

    #[test]
    fn message_change_keeps_transition_time() {
        let mut conditions = seeded();
        assert!(set_condition(
            &mut conditions,
            ready(true, "still ok"),
            t(5)
        ));
        assert_eq!(conditions[0].message, "still ok");
        assert_eq!(from_k8s_time(&conditions[0].last_transition_time), t(0));
    }

    #[test]
    fn reason_and_generation_changes_keep_transition_time() {
        let mut conditions = seeded();
        let update =
            ConditionUpdate::new("Ready", true, "Other", "ok").observed_generation(Some(4));
        assert!(set_condition(&mut conditions, update, t(5)));
        assert_eq!(conditions[0].reason, "Other");
        assert_eq!(conditions[0].observed_generation, Some(4));
        assert_eq!(from_k8s_time(&conditions[0].last_transition_time), t(0));
    }

    #[test]
    fn status_flip_moves_transition_time() {
        let mut conditions = seeded();
        assert!(set_condition(&mut conditions, ready(false, "broken"), t(7)));
        assert_eq!(conditions[0].status, "False");
        assert_eq!(from_k8s_time(&conditions[0].last_transition_time), t(7));
        // And back.
        assert!(set_condition(&mut conditions, ready(true, "ok"), t(9)));
        assert_eq!(from_k8s_time(&conditions[0].last_transition_time), t(9));
    }

    #[test]
    fn other_types_are_untouched() {
        let mut conditions = seeded();
        assert!(set_condition(
            &mut conditions,
            ConditionUpdate::new("Paused", false, "NotPaused", ""),
            t(1)
        ));
        assert_eq!(conditions.len(), 2);
        assert!(set_condition(&mut conditions, ready(false, "x"), t(2)));
        let paused = find_condition(&conditions, "Paused").unwrap();
        assert_eq!(from_k8s_time(&paused.last_transition_time), t(1));
        assert!(!is_condition_true(&conditions, "Paused"));
        assert!(!is_condition_true(&conditions, "Ready"));
        assert!(!is_condition_true(&conditions, "Missing"));
    }

    #[test]
    fn sub_second_now_is_stored_at_second_precision() {
        let mut conditions = Vec::new();
        let now = t(0) + jiff::SignedDuration::from_millis(750);
        set_condition(&mut conditions, ready(true, "ok"), now);
        assert_eq!(from_k8s_time(&conditions[0].last_transition_time), t(0));
    }

    #[test]
    fn remove_reports_presence() {
        let mut conditions = seeded();
        assert!(!remove_condition(&mut conditions, "Paused"));
        assert!(remove_condition(&mut conditions, "Ready"));
        assert!(conditions.is_empty());
        assert!(find_condition(&conditions, "Ready").is_none());
    }
}
