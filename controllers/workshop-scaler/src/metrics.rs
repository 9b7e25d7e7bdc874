//! workshop-scaler's own metrics, registered as `ebb_workshop_scaler_*` next to the shared
//! reconcile metrics.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of a per-workshop series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkshopLabels {
    /// Namespace of the Workshop.
    pub namespace: String,
    /// Name of the Workshop.
    pub name: String,
}

/// Labels of a per-provision series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProvisionLabels {
    /// Namespace of the WorkshopProvision.
    pub namespace: String,
    /// Name of the WorkshopProvision.
    pub name: String,
}

/// The gauges and counters of workshop-scaler. Only provisions with auto-scaling enabled get
/// series; a deleted or disabled provision's series are removed.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    utilization: Family<WorkshopLabels, Gauge<f64, AtomicU64>>,
    count: Family<ProvisionLabels, Gauge>,
    desired_count: Family<ProvisionLabels, Gauge>,
    active: Family<ProvisionLabels, Gauge>,
    at_max: Family<ProvisionLabels, Gauge>,
    at_max_with_demand: Family<ProvisionLabels, Gauge>,
    scale_ups: Family<ProvisionLabels, Counter>,
}

/// One observation of a provision, for [`Metrics::observe`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// assigned / total of the workshop, when it has seats.
    pub utilization: Option<f64>,
    /// `spec.count`.
    pub count: i32,
    /// The count the provision should have (the target while a scale-up is in flight).
    pub desired_count: i32,
    /// `status.autoScalingActive`.
    pub active: bool,
    /// `spec.count >= maxProvisions`.
    pub at_max: bool,
    /// At `maxProvisions` while utilization is at or above the threshold: attendees may find no
    /// seat and ebb cannot help (what the at-cap alert fires on).
    pub at_max_with_demand: bool,
}

impl Metrics {
    /// Creates the metrics and registers them in `registry` under `ebb_workshop_scaler_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = ebb_runtime::metrics::controller_registry(registry, crate::CONTROLLER_NAME);
        sub.register(
            "workshop_utilization_ratio",
            "Assigned / total WorkshopUserAssignments of a workshop with auto-scaling enabled",
            metrics.utilization.clone(),
        );
        sub.register(
            "provision_size",
            "spec.count of a WorkshopProvision",
            metrics.count.clone(),
        );
        sub.register(
            "provision_desired_size",
            "The count the provision should have after the current decision",
            metrics.desired_count.clone(),
        );
        sub.register(
            "provision_active",
            "1 while a scale-up is in flight (status.autoScalingActive)",
            metrics.active.clone(),
        );
        sub.register(
            "provision_at_max",
            "1 while spec.count is at maxProvisions",
            metrics.at_max.clone(),
        );
        sub.register(
            "provision_at_max_with_demand",
            "1 while spec.count is at maxProvisions and utilization is at or above the threshold",
            metrics.at_max_with_demand.clone(),
        );
        sub.register(
            "scale_ups",
            "Scale-ups applied to spec.count",
            metrics.scale_ups.clone(),
        );
        metrics
    }

    /// Records what a reconcile observed and decided.
    pub fn observe(&self, workshop: &WorkshopLabels, provision: &ProvisionLabels, o: Observation) {
        match o.utilization {
            Some(u) => {
                self.utilization.get_or_create(workshop).set(u);
            }
            None => {
                self.utilization.remove(workshop);
            }
        }
        self.count.get_or_create(provision).set(i64::from(o.count));
        self.desired_count
            .get_or_create(provision)
            .set(i64::from(o.desired_count));
        self.active
            .get_or_create(provision)
            .set(i64::from(o.active));
        self.at_max
            .get_or_create(provision)
            .set(i64::from(o.at_max));
        self.at_max_with_demand
            .get_or_create(provision)
            .set(i64::from(o.at_max_with_demand));
    }

    /// Counts one applied scale-up.
    pub fn scaled_up(&self, provision: &ProvisionLabels) {
        self.scale_ups.get_or_create(provision).inc();
    }

    /// Drops the series of a provision that is gone or no longer auto-scaled. (The workshop's
    /// utilization stays: other provisions may share it.)
    pub fn forget(&self, provision: &ProvisionLabels) {
        self.count.remove(provision);
        self.desired_count.remove(provision);
        self.active.remove(provision);
        self.at_max.remove(provision);
        self.at_max_with_demand.remove(provision);
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
