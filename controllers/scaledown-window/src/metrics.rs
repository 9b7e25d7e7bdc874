//! scaledown-window's own metrics, next to the shared `ControllerMetrics`, under
//! `ebb_scaledown_window_`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::CONTROLLER_NAME;
use crate::decide::writes::GaugeValues;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScheduleLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlipLabels {
    name: String,
    scale_down_enabled: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// Per-schedule gauges and counters.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    enabled: Family<ScheduleLabels, Gauge>,
    invalid: Family<ScheduleLabels, Gauge>,
    conflict: Family<ScheduleLabels, Gauge>,
    api_missing: Family<ScheduleLabels, Gauge>,
    flips: Family<FlipLabels, Counter>,
    writes: Family<KindLabels, Counter>,
}

impl Metrics {
    /// Registers the metrics in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = ebb_runtime::serve::metrics::controller_registry(registry, CONTROLLER_NAME);
        ebb_runtime::register_metrics!(sub;
            "scale_down_enabled": metrics.enabled,
                "1 while the schedule allows scale-down, 0 otherwise";
            "schedule_invalid": metrics.invalid,
                "1 while the schedule cannot be decided (scale-down held disabled), 0 otherwise";
            "target_conflict": metrics.conflict,
                "1 while another schedule manages objects this schedule selects, 0 otherwise";
            "target_api_missing": metrics.api_missing,
                "1 while the cluster does not serve the schedule's target API (CRD not installed)";
            "flips": metrics.flips, "Changes of scaleDownEnabled, by the value changed to";
            "target_writes": metrics.writes, "Writes to target objects, by kind";
        );
        metrics
    }

    fn schedule(name: &str) -> ScheduleLabels {
        ScheduleLabels {
            name: name.to_owned(),
        }
    }

    /// Sets schedule `schedule`'s gauges, and counts a flip when its decision changed.
    pub fn observe(&self, schedule: &str, values: &GaugeValues) {
        let labels = Self::schedule(schedule);
        self.enabled
            .get_or_create(&labels)
            .set(i64::from(values.enabled));
        self.invalid
            .get_or_create(&labels)
            .set(i64::from(values.invalid));
        self.conflict
            .get_or_create(&labels)
            .set(i64::from(values.conflict));
        self.api_missing
            .get_or_create(&labels)
            .set(i64::from(values.api_missing));
        if values.flipped {
            self.flip(schedule, values.enabled);
        }
    }

    /// Counts a flip of `scaleDownEnabled` to `enabled`.
    pub fn flip(&self, schedule: &str, enabled: bool) {
        self.flips
            .get_or_create(&FlipLabels {
                name: schedule.to_owned(),
                scale_down_enabled: enabled.to_string(),
            })
            .inc();
    }

    /// Counts one write to a target object of `kind` (`Node`, `ClusterAutoscaler`, ...: the
    /// write's reason, `TargetKind::object_kind`).
    pub fn write(&self, kind: &str) {
        self.writes
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// Drops a deleted schedule's series, its flip counts included: no series outlives its
    /// object (a rate over a counter that goes away reads as its last value's end).
    pub fn forget(&self, schedule: &str) {
        let labels = Self::schedule(schedule);
        self.enabled.remove(&labels);
        self.invalid.remove(&labels);
        self.conflict.remove(&labels);
        self.api_missing.remove(&labels);
        for enabled in [true, false] {
            self.flips.remove(&FlipLabels {
                name: schedule.to_owned(),
                scale_down_enabled: enabled.to_string(),
            });
        }
    }
}
