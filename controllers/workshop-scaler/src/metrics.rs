//! workshop-scaler's own metrics, registered as `ebb_workshop_scaler_*` next to the shared
//! reconcile metrics.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use ebb_runtime::serve::metrics::{Keep, ObjectRows};

pub use crate::decide::outcome::Observation;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;

/// Labels of a per-workshop series.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct WorkshopLabels {
    /// Namespace of the Workshop.
    pub namespace: String,
    /// Name of the Workshop.
    pub name: String,
}

/// Labels of a per-provision series.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ProvisionLabels {
    /// Namespace of the WorkshopProvision.
    pub namespace: String,
    /// Name of the WorkshopProvision.
    pub name: String,
}

/// The gauges and counters of workshop-scaler. Only provisions with auto-scaling enabled get
/// gauges; a deleted or disabled provision's gauges are removed. Held as one row per workshop
/// and per provision ([`ObjectRows`]), written out at each scrape.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    utilization: Arc<ObjectRows<f64>>,
    provisions: Arc<ObjectRows<ProvisionRow>>,
    /// How many provisions last observed each workshop (`namespace`, `name`): its
    /// utilization goes when the last of them is gone.
    users: Arc<Mutex<HashMap<(String, String), usize>>>,
}

/// What is exported of one provision.
#[derive(Clone, Debug, Default)]
struct ProvisionRow {
    /// The workshop it last observed.
    workshop: Option<(String, String)>,
    /// The last observation, while auto-scaling is enabled on the provision.
    observed: Option<Observation>,
    /// Scale-ups applied to its `spec.count` (kept after the gauges go).
    scale_ups: u64,
}

/// The gauges of one provision: name, help, value.
type ProvisionGauge = (&'static str, &'static str, fn(&Observation) -> i64);

const PROVISION_GAUGES: [ProvisionGauge; 5] = [
    ("provision_size", "spec.count of a WorkshopProvision", |o| {
        i64::from(o.count)
    }),
    (
        "provision_desired_size",
        "The count the provision should have after the current decision",
        |o| i64::from(o.desired_count),
    ),
    (
        "provision_active",
        "1 while a scale-up is in flight (status.autoScalingActive)",
        |o| i64::from(o.active),
    ),
    (
        "provision_at_max",
        "1 while spec.count is at maxProvisions",
        |o| i64::from(o.at_max),
    ),
    (
        "provision_at_max_with_demand",
        "1 while spec.count is at maxProvisions and utilization is at or above the threshold",
        |o| i64::from(o.at_max_with_demand),
    ),
];

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        self.utilization.encode_gauge(
            &mut encoder,
            "workshop_utilization_ratio",
            "Assigned / total WorkshopUserAssignments of a workshop with auto-scaling enabled",
            |u| Some(*u),
        )?;
        for (name, help, value) in PROVISION_GAUGES {
            self.provisions
                .encode_gauge(&mut encoder, name, help, |row| {
                    row.observed.as_ref().map(value)
                })?;
        }
        self.provisions.encode_counter(
            &mut encoder,
            "scale_ups",
            "Scale-ups applied to spec.count",
            |row| (row.scale_ups > 0).then_some(row.scale_ups),
        )
    }
}

impl Metrics {
    /// Creates the metrics and registers them in `registry` under `ebb_workshop_scaler_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub =
            ebb_runtime::serve::metrics::controller_registry(registry, crate::CONTROLLER_NAME);
        sub.register_collector(Box::new(metrics.clone()));
        metrics
    }

    /// Records what a reconcile observed and decided.
    pub fn observe(&self, workshop: &WorkshopLabels, provision: &ProvisionLabels, o: Observation) {
        self.utilization
            .update(&workshop.namespace, &workshop.name, |u| {
                match o.utilization {
                    Some(value) => {
                        *u = value;
                        Keep::Row
                    }
                    None => Keep::Drop,
                }
            });
        let workshop = (workshop.namespace.clone(), workshop.name.clone());
        let mut was = None;
        self.provisions
            .update(&provision.namespace, &provision.name, |row| {
                row.observed = Some(o);
                if row.workshop.as_ref() != Some(&workshop) {
                    was = Some(row.workshop.replace(workshop.clone()));
                }
                Keep::Row
            });
        if let Some(was) = was {
            let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
            *users.entry(workshop).or_default() += 1;
            if let Some(was) = was {
                self.leave(&mut users, was);
            }
        }
    }

    /// One provision fewer observes `workshop`: its utilization goes with the last.
    fn leave(&self, users: &mut HashMap<(String, String), usize>, workshop: (String, String)) {
        if let Some(count) = users.get_mut(&workshop) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                users.remove(&workshop);
                self.utilization.remove(&workshop.0, &workshop.1);
            }
        }
    }

    /// A provision is gone (deleted): every series of it goes, its scale-up counter too, and
    /// its workshop's utilization once no other provision observes that workshop. No series
    /// outlives its object.
    pub fn gone(&self, provision: &ProvisionLabels) {
        let mut workshop = None;
        self.provisions
            .update(&provision.namespace, &provision.name, |row| {
                workshop = row.workshop.take();
                Keep::Drop
            });
        if let Some(workshop) = workshop {
            let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
            self.leave(&mut users, workshop);
        }
    }

    /// How many workshops and provisions have series (for tests).
    pub fn rows(&self) -> (usize, usize) {
        (self.utilization.len(), self.provisions.len())
    }

    /// Counts one applied scale-up.
    pub fn scaled_up(&self, provision: &ProvisionLabels) {
        self.provisions
            .update(&provision.namespace, &provision.name, |row| {
                row.scale_ups += 1;
                Keep::Row
            });
    }

    /// Drops the gauges of a provision that is gone or no longer auto-scaled; its scale-up
    /// counter stays. (The workshop's utilization stays: other provisions may share it.)
    pub fn forget(&self, provision: &ProvisionLabels) {
        self.provisions
            .update(&provision.namespace, &provision.name, |row| {
                row.observed = None;
                match row.scale_ups {
                    0 => Keep::Drop,
                    _ => Keep::Row,
                }
            });
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
