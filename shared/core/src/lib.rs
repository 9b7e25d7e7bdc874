//! What ebb's rules are made of, with no client, no runtime and no clock: every controller's
//! decide depends on this crate (and on `ebb-crds` and `ebb-schedule`) and on nothing that can
//! reach the API server. `make test` checks that with `cargo tree`.
//!
//! - [`plan`]: the [`Plan`] a decide returns: the writes in order, the status, the Events, the
//!   gauges and the requeue, carried out by the runtime's one executor (`ebb_runtime::execute`).
//! - [`events`]: Events as data ([`Notice`]).
//! - [`conditions`]: status conditions whose transition time moves only on a status flip.
//! - [`time`]: instants as Kubernetes `Time` and ebb's outputs write them (whole seconds).
//! - [`patch`]: minimal merge patches ([`patch::merge_diff`]).
//! - [`pause`]: the `scaling.ebb.dev/paused` and `paused-until` annotations, reported one way.

pub mod conditions;
pub mod events;
pub mod patch;
pub mod pause;
pub mod plan;
pub mod time;

pub use conditions::{ConditionUpdate, find_condition, remove_condition, set_condition};
pub use events::{EventKind, Notice};
pub use plan::{Category, Plan, Requeue, StatusPatch, Target, Verb, Write};
pub use time::{from_k8s_time, rfc3339, to_k8s_time, whole_second};

#[cfg(test)]
mod tests_support {
    use jiff::Timestamp;

    /// The instant of an RFC 3339 text (a test's literal).
    pub fn utc(text: &str) -> Timestamp {
        match text.parse() {
            Ok(t) => t,
            Err(e) => panic!("{text:?} is not RFC 3339: {e}"),
        }
    }
}
