//! The controller's own metrics: stage durations, failures, the current stage of every scaler.

use ebb_crds::stackable::ScalerStage;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

const STAGES: [ScalerStage; 5] = [
    ScalerStage::Idle,
    ScalerStage::PreScaling,
    ScalerStage::Scaling,
    ScalerStage::PostScaling,
    ScalerStage::Failed,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScalerStageLabels {
    namespace: String,
    name: String,
    stage: String,
}

/// `ebb_stackable_scaler_stage_duration_seconds{stage}`, `..._failures_total{stage}` and
/// `..._stage{namespace,name,stage}` (1 for the current stage, 0 for the others).
#[derive(Clone, Debug)]
pub struct Metrics {
    stage_duration: Family<StageLabels, Histogram>,
    failures: Family<StageLabels, Counter>,
    stage: Family<ScalerStageLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            // 1 s .. ~9 h: hooks drain data for minutes to hours.
            stage_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1.0, 3.0, 10))
            }),
            failures: Family::default(),
            stage: Family::default(),
        }
    }
}

impl Metrics {
    /// Registers under `ebb_stackable_scaler_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = ebb_runtime::metrics::controller_registry(registry, crate::CONTROLLER_NAME);
        sub.register_with_unit(
            "stage_duration",
            "Time spent in a stage, observed when the stage is left",
            Unit::Seconds,
            metrics.stage_duration.clone(),
        );
        sub.register(
            "failures",
            "Scaling operations that failed, by failed stage",
            metrics.failures.clone(),
        );
        sub.register(
            "stage",
            "Current stage of each StackableScaler (1 = current)",
            metrics.stage.clone(),
        );
        metrics
    }

    /// A stage was left after `seconds`.
    pub fn observe_stage(&self, stage: ScalerStage, seconds: f64) {
        self.stage_duration
            .get_or_create(&StageLabels {
                stage: stage.as_str().to_owned(),
            })
            .observe(seconds.max(0.0));
    }

    /// An operation failed in `stage`.
    pub fn record_failure(&self, stage: ScalerStage) {
        self.failures
            .get_or_create(&StageLabels {
                stage: stage.as_str().to_owned(),
            })
            .inc();
    }

    /// Sets the current stage of a scaler.
    pub fn set_stage(&self, namespace: &str, name: &str, current: ScalerStage) {
        for stage in STAGES {
            let labels = ScalerStageLabels {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                stage: stage.as_str().to_owned(),
            };
            self.stage
                .get_or_create(&labels)
                .set(i64::from(stage == current));
        }
    }

    /// Drops a deleted scaler's stage series.
    pub fn forget(&self, namespace: &str, name: &str) {
        for stage in STAGES {
            self.stage.remove(&ScalerStageLabels {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                stage: stage.as_str().to_owned(),
            });
        }
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
