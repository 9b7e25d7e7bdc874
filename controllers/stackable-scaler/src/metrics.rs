//! The controller's own metrics: stage durations, failures, the current stage of every scaler.

use std::fmt;
use std::sync::Arc;

use ebb_crds::stackable::ScalerStage;
use ebb_runtime::serve::metrics::{Keep, ObjectRows};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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

/// `ebb_stackable_scaler_stage_duration_seconds{stage}`, `..._failures_total{stage}` and
/// `..._stage{namespace,name,stage}` (1 for the current stage, 0 for the others; held as one
/// row per scaler, written out at each scrape).
#[derive(Clone, Debug)]
pub struct Metrics {
    stage_duration: Family<StageLabels, Histogram>,
    failures: Family<StageLabels, Counter>,
    stage: Arc<ObjectRows<ScalerStage>>,
}

/// The current stage of every scaler, as `..._stage` samples.
#[derive(Debug)]
struct Stages(Arc<ObjectRows<ScalerStage>>);

impl Collector for Stages {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let family = (
            "stage",
            "Current stage of each StackableScaler (1 = current)",
            MetricType::Gauge,
        );
        self.0
            .encode(&mut encoder, family, |namespace, name, current, family| {
                for stage in STAGES {
                    let labels = [
                        ("namespace", namespace),
                        ("name", name),
                        ("stage", stage.as_str()),
                    ];
                    family
                        .encode_family(&labels)?
                        .encode_gauge(&i64::from(stage == *current))?;
                }
                Ok(())
            })
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            // 1 s .. ~9 h: hooks drain data for minutes to hours.
            stage_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1.0, 3.0, 10))
            }),
            failures: Family::default(),
            stage: Arc::default(),
        }
    }
}

impl Metrics {
    /// Registers under `ebb_stackable_scaler_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub =
            ebb_runtime::serve::metrics::controller_registry(registry, crate::CONTROLLER_NAME);
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
        sub.register_collector(Box::new(Stages(metrics.stage.clone())));
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
        self.stage.update(namespace, name, |stage| {
            *stage = current;
            Keep::Row
        });
    }

    /// Drops a deleted scaler's stage series.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.stage.remove(namespace, name);
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
