//! service-scaler's own metrics, registered as `ebb_service_scaler_*` next to the shared
//! reconcile metrics (`reconciles_total`, `reconcile_errors_total{category}`,
//! `reconcile_duration_seconds`).
//!
//! - `managed_objects{state}`: ServiceScalers seen, by how they are handled (`active`, `paused`,
//!   `unmanaged`, `invalid`, `dry_run`).
//! - `transitions_total{reason}`: HPA writes, by why (`create`, `transition`, `lead`, `ramp`,
//!   `drift`, `restore`), and the `/scale` writes of hibernation (`hibernate`, `wake`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::decide::{ManagedState, WriteReason};

const STATES: [ManagedState; 5] = [
    ManagedState::Active,
    ManagedState::Paused,
    ManagedState::Unmanaged,
    ManagedState::Invalid,
    ManagedState::DryRun,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// The gauges and counters of service-scaler. Clones share the series.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    managed: Family<StateLabels, Gauge>,
    transitions: Family<ReasonLabels, Counter>,
    states: Arc<Mutex<HashMap<String, ManagedState>>>,
}

impl Metrics {
    /// Creates the metrics and registers them in `registry` under `ebb_service_scaler_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub =
            ebb_runtime::serve::metrics::controller_registry(registry, crate::CONTROLLER_NAME);
        ebb_runtime::register_metrics!(sub;
            "managed_objects": metrics.managed, "ServiceScalers handled by this controller, by state";
            "transitions": metrics.transitions,
                "HPA and /scale writes, by reason (create, transition, lead, ramp, drift, restore, hibernate, wake, fleet)";
        );
        for state in STATES {
            metrics
                .managed
                .get_or_create(&StateLabels {
                    state: state.as_str(),
                })
                .set(0);
        }
        metrics
    }

    /// Records the state of ServiceScaler `key` (`namespace/name`): the gauges move by one, no
    /// scan of every object.
    pub fn observe(&self, key: &str, state: ManagedState) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let was = states.insert(key.to_owned(), state);
        if was != Some(state) {
            if let Some(was) = was {
                self.gauge(was).dec();
            }
            self.gauge(state).inc();
        }
    }

    /// Forgets ServiceScaler `key` (deleted, or no longer selected).
    pub fn forget(&self, key: &str) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(was) = states.remove(key) {
            self.gauge(was).dec();
        }
    }

    /// Counts one HPA write.
    pub fn count_write(&self, reason: WriteReason) {
        self.count_reason(reason.as_str());
    }

    /// Counts one HPA write under `reason` ([`WriteReason::as_str`]).
    pub fn count_reason(&self, reason: &'static str) {
        self.transitions
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    fn gauge(&self, state: ManagedState) -> Gauge {
        self.managed
            .get_or_create(&StateLabels {
                state: state.as_str(),
            })
            .clone()
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
