//! Reconcile metrics every controller exports, registered under `ebb_<controller>_`.
//!
//! Controllers add their own metrics to the same [`Registry`] (ideally with the same prefix via
//! [`metric_prefix`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::metrics::{
    counter::Counter, family::Family, gauge::Gauge, histogram::Histogram,
};
use prometheus_client::registry::{Registry, Unit};

use crate::Leader;
use crate::watch::queue::Queue;

/// Upper bounds (seconds) of the reconcile-duration buckets: API round trips take milliseconds,
/// a slow reconcile a few seconds.
const DURATION_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The metric-name prefix for a controller: `ebb_` plus its name with `-` turned into `_`
/// (`service-scaler` -> `ebb_service_scaler`).
pub fn metric_prefix(controller: &str) -> String {
    let name: String = controller
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("ebb_{name}")
}

/// Registers metrics in `registry` (a `&mut Registry`: a controller's sub-registry, say) from a
/// table, one line each, `name: handle, "help";`. The registry gets a clone of each handle; the
/// caller keeps the handle to update.
///
/// ```ignore
/// ebb_runtime::register_metrics!(sub;
///     "reconciles": metrics.reconciles, "Reconciliations started";
/// );
/// ```
#[macro_export]
macro_rules! register_metrics {
    ($registry:expr; $($name:literal: $metric:expr, $help:expr;)+) => {{
        let registry = $registry;
        $( registry.register($name, $help, ::std::clone::Clone::clone(&$metric)); )+
    }};
}

/// The part of `registry` where controller `controller`'s own metrics go: under
/// [`metric_prefix`] (`ebb_<name>_`), each series labelled `controller="<name>"` as well, so a
/// dashboard or a query can span every controller by that label while the names stay as they are.
pub fn controller_registry<'r>(registry: &'r mut Registry, controller: &str) -> &'r mut Registry {
    registry
        .sub_registry_with_prefix(metric_prefix(controller))
        .sub_registry_with_label((
            std::borrow::Cow::Borrowed("controller"),
            std::borrow::Cow::Owned(controller.to_owned()),
        ))
}

/// The error categories every controller shares, exported at 0 from the start so that a rate or
/// an alert sees the first error (a counter series that appears at 1 shows no increase):
/// reading (`observe`), a conflict that outlived the frame's passes (`conflict`), an object that
/// breaks a rule (`invalid`, `invalid_object`, `malformed`), and the executor's failed writes
/// ([`ebb_core::Category`]). A controller may add categories of its own.
pub const ERROR_CATEGORIES: [&str; 8] = [
    "observe",
    "conflict",
    "invalid",
    "invalid_object",
    "malformed",
    ebb_core::Category::Target.as_str(),
    ebb_core::Category::Metadata.as_str(),
    ebb_core::Category::Status.as_str(),
];

/// Upper bounds (seconds) of the queue-wait buckets: nothing waits while a slot is free; under a
/// burst (every object at one schedule boundary, the API server's return) an object waits for
/// the reconciles ahead of it, seconds to a minute.
const WAIT_BUCKETS: [f64; 10] = [0.001, 0.01, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    category: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// The reconcile counter, error counter and duration histogram of one controller, and the depth
/// and wait of each of its queues (one per kind it reconciles).
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    reconciles: Counter,
    errors: Family<ErrorLabels, Counter>,
    duration: Histogram,
    queues: QueueDepths,
    queue_wait: Family<KindLabels, Histogram>,
    undecodable: Family<KindLabels, Gauge>,
}

impl ControllerMetrics {
    /// Registers the metrics into `registry` as `ebb_<controller>_reconciles_total`,
    /// `ebb_<controller>_reconcile_errors_total{category}`,
    /// `ebb_<controller>_reconcile_duration_seconds`, `ebb_<controller>_queue_depth{kind}` and
    /// `ebb_<controller>_queue_wait_seconds{kind}` (see [`crate::watch::queue`]), and
    /// `ebb_<controller>_undecodable_objects{kind}`.
    pub fn new(registry: &mut Registry, controller: &str) -> Self {
        let metrics = Self {
            reconciles: Counter::default(),
            errors: Family::default(),
            duration: Histogram::new(DURATION_BUCKETS),
            queues: QueueDepths::default(),
            queue_wait: Family::new_with_constructor(|| Histogram::new(WAIT_BUCKETS)),
            undecodable: Family::default(),
        };
        let sub = controller_registry(registry, controller);
        crate::register_metrics!(&mut *sub;
            "reconciles": metrics.reconciles, "Reconciliations started";
            "reconcile_errors": metrics.errors, "Reconciliations that failed, by error category";
            "queue_depth": metrics.queues,
                "Objects whose reconcile is due and not started yet, every concurrent slot being busy, by kind";
            "undecodable_objects": metrics.undecodable,
                "Objects watched without a status of their own to report in that do not decode into ebb's type, by kind";
        );
        sub.register_with_unit(
            "reconcile_duration",
            "Time taken by a reconciliation",
            Unit::Seconds,
            metrics.duration.clone(),
        );
        sub.register_with_unit(
            "queue_wait",
            "Time an object waited in the queue between its reconcile being due and starting, by kind",
            Unit::Seconds,
            metrics.queue_wait.clone(),
        );
        for category in ERROR_CATEGORIES {
            let _zero = metrics.errors.get_or_create(&ErrorLabels {
                category: category.to_owned(),
            });
        }
        metrics
    }

    /// Counts a reconcile and starts timing it; the duration is recorded when the timer drops, so
    /// early returns and `?` are timed too.
    pub fn start_reconcile(&self) -> ReconcileTimer {
        self.reconciles.inc();
        ReconcileTimer {
            duration: self.duration.clone(),
            // Elapsed time for a metric is a monotonic measurement, not a decision input, so it
            // does not go through the injectable Clock.
            start: Instant::now(),
        }
    }

    /// The gauge of how many `kind` objects the controller holds that do not decode (reported
    /// nowhere else: a kind without a status of its own, such as HolidayCalendar), for the watch
    /// that sees them to set.
    pub fn undecodable(&self, kind: &str) -> Gauge {
        self.undecodable
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .clone()
    }

    /// Exports the depth of `queue`, the queue of the controller reconciling `kind`, from now on;
    /// the wait histogram to observe each start's wait in.
    pub fn watch_queue(&self, kind: &str, queue: &Queue) -> Histogram {
        self.queues.add(kind, queue);
        self.queue_wait
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .clone()
    }

    /// Counts a failed reconcile under `category` (the error's metric label).
    pub fn record_error(&self, category: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                category: category.to_owned(),
            })
            .inc();
    }

    /// Runs one reconcile: counts it, times it and counts its error under the label
    /// `categorize` gives it (typically the error's `category()` / `metric_label()`).
    pub async fn instrument<T, E, L>(
        &self,
        reconcile: impl Future<Output = Result<T, E>>,
        categorize: impl FnOnce(&E) -> L,
    ) -> Result<T, E>
    where
        L: AsRef<str>,
    {
        let _timer = self.start_reconcile();
        let result = reconcile.await;
        if let Err(error) = &result {
            self.record_error(categorize(error).as_ref());
        }
        result
    }
}

/// `ebb_<controller>_leader`: 1 while this replica may write (it holds the Lease, or runs without
/// election), 0 otherwise, read at scrape time. It reads 0 until the process has joined the
/// election ([`LeaderGauge::fill`]).
#[derive(Clone, Debug, Default)]
pub struct LeaderGauge {
    leader: Arc<OnceLock<Leader>>,
}

impl LeaderGauge {
    /// From now on the gauge follows `leader`.
    pub fn fill(&self, leader: &Leader) {
        // Filled once per process; a second call changes nothing.
        let _ = self.leader.set(leader.clone());
    }

    fn value(&self) -> i64 {
        i64::from(self.leader.get().is_some_and(Leader::is_leader))
    }
}

impl TypedMetric for LeaderGauge {
    const TYPE: MetricType = MetricType::Gauge;
}

impl EncodeMetric for LeaderGauge {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.value())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// `ebb_<controller>_queue_depth{kind}`: the depth of each queue watched, read at scrape time.
#[derive(Clone, Debug, Default)]
struct QueueDepths {
    queues: Arc<RwLock<Vec<(String, Queue)>>>,
}

impl QueueDepths {
    fn add(&self, kind: &str, queue: &Queue) {
        self.queues
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push((kind.to_owned(), queue.clone()));
    }
}

impl TypedMetric for QueueDepths {
    const TYPE: MetricType = MetricType::Gauge;
}

impl EncodeMetric for QueueDepths {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let queues = self.queues.read().unwrap_or_else(PoisonError::into_inner);
        for (kind, queue) in queues.iter() {
            let labels = KindLabels { kind: kind.clone() };
            let depth = i64::try_from(queue.depth()).unwrap_or(i64::MAX);
            encoder.encode_family(&labels)?.encode_gauge(&depth)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// What every controller process exports about itself, to fill once the process runs.
#[derive(Clone, Debug, Default)]
pub struct Process {
    /// `ebb_<controller>_leader`: to [`LeaderGauge::fill`] once the election runs.
    pub leader: LeaderGauge,
    /// `ebb_<controller>_overlapping_installs`: live installs whose scope overlaps this one's
    /// ([`crate::lead::overlap`]).
    pub overlapping: Gauge,
}

/// Registers what every controller process exports about itself:
/// `ebb_<controller>_build_info{version, tzdata}` (always 1; `tzdata` the IANA release its zones
/// are read from), `ebb_<controller>_leader` (what the "no leader" alert of every chart reads) and
/// `ebb_<controller>_overlapping_installs`.
pub fn register_process(registry: &mut Registry, controller: &str, tzdata: &str) -> Process {
    let sub = controller_registry(registry, controller);
    sub.register(
        "build",
        "The ebb release this process runs and the tzdb release it reads time zones from (always 1)",
        Info::new(vec![
            ("version", env!("CARGO_PKG_VERSION").to_owned()),
            ("tzdata", tzdata.to_owned()),
        ]),
    );
    let process = Process::default();
    crate::register_metrics!(sub;
        "leader": process.leader,
            "1 while this replica holds the leader Lease (or runs without election) and no older install overlaps it, 0 otherwise";
        "overlapping_installs": process.overlapping,
            "Other running installs of this controller whose scope overlaps this one's (the newer writes nothing)";
    );
    process
}

/// Records a reconcile's duration when dropped.
#[derive(Debug)]
pub struct ReconcileTimer {
    duration: Histogram,
    start: Instant,
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.duration.observe(self.start.elapsed().as_secs_f64());
    }
}

/// Series about many objects, held as one row per object (`namespace`, `name`) and written out
/// at each scrape by a [`Collector`](prometheus_client::collector::Collector) the controller
/// registers. A [`Family`] holds every series apart (its labels and value allocated each): with
/// six gauges of 10 000 objects that was 60 000 entries, more than the objects themselves took.
#[derive(Debug)]
pub struct ObjectRows<R> {
    rows: RwLock<HashMap<(String, String), R>>,
}

impl<R> Default for ObjectRows<R> {
    fn default() -> Self {
        Self {
            rows: RwLock::new(HashMap::new()),
        }
    }
}

impl<R: Default> ObjectRows<R> {
    /// Changes the row of `namespace/name` (a default row if it has none); a row `keep` turns
    /// down afterwards is removed.
    pub fn update(&self, namespace: &str, name: &str, change: impl FnOnce(&mut R) -> Keep) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        let key = (namespace.to_owned(), name.to_owned());
        let row = rows.entry(key.clone()).or_default();
        if change(row) == Keep::Drop {
            rows.remove(&key);
        }
    }
}

impl<R> ObjectRows<R> {
    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.rows
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes the row of `namespace/name`.
    pub fn remove(&self, namespace: &str, name: &str) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        rows.remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Writes one gauge family `name`: a sample `{namespace, name}` for each row `value` gives
    /// one for.
    ///
    /// # Errors
    /// The encoder's.
    pub fn encode_gauge<N: EncodeGaugeValue>(
        &self,
        encoder: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        value: impl Fn(&R) -> Option<N>,
    ) -> fmt::Result {
        let family = (name, help, MetricType::Gauge);
        self.encode_each(encoder, family, value, |mut sample, v| {
            sample.encode_gauge(&v)
        })
    }

    /// Writes one counter family `name` (`name_total`): a sample `{namespace, name}` for each
    /// row `value` gives one for.
    ///
    /// # Errors
    /// The encoder's.
    pub fn encode_counter(
        &self,
        encoder: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        value: impl Fn(&R) -> Option<u64>,
    ) -> fmt::Result {
        let family = (name, help, MetricType::Counter);
        self.encode_each(encoder, family, value, |mut sample, v| {
            sample.encode_counter::<NoLabelSet, _, u64>(&v, None)
        })
    }

    /// One sample `{namespace, name}` per row `value` gives one for, written by `write`.
    fn encode_each<N>(
        &self,
        encoder: &mut DescriptorEncoder,
        family: (&str, &str, MetricType),
        value: impl Fn(&R) -> Option<N>,
        write: impl Fn(MetricEncoder, N) -> fmt::Result,
    ) -> fmt::Result {
        self.encode(
            encoder,
            family,
            |namespace, object, row, family| match value(row) {
                Some(v) => write(
                    family.encode_family(&[("namespace", namespace), ("name", object)])?,
                    v,
                ),
                None => Ok(()),
            },
        )
    }

    /// Writes one family of any type: `samples` is called with each row's namespace, name and
    /// row, and the family's encoder, and writes the row's samples (none, one, or several with
    /// further labels) through [`MetricEncoder::encode_family`].
    ///
    /// # Errors
    /// The encoder's.
    pub fn encode(
        &self,
        encoder: &mut DescriptorEncoder,
        (name, help, metric_type): (&str, &str, MetricType),
        mut samples: impl FnMut(&str, &str, &R, &mut MetricEncoder) -> fmt::Result,
    ) -> fmt::Result {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
        for ((namespace, object), row) in rows.iter() {
            samples(namespace, object, row, &mut family)?;
        }
        Ok(())
    }
}

/// What [`ObjectRows::update`] does with the row afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The row stays.
    Row,
    /// The row is removed (nothing of it is exported any more).
    Drop,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use prometheus_client::encoding::text::encode;

    fn render(registry: &Registry) -> String {
        let mut out = String::new();
        encode(&mut out, registry).unwrap();
        out
    }

    #[derive(Debug, PartialEq)]
    enum TestError {
        Kube,
    }

    impl TestError {
        fn category(&self) -> &'static str {
            "kube"
        }
    }

    #[test]
    fn build_info_and_the_leader_gauge() {
        let mut registry = Registry::default();
        let process = register_process(&mut registry, "service-scaler", "2026f");
        let gauge = process.leader.clone();
        let text = render(&registry);
        assert!(
            text.contains(&format!(
                "ebb_service_scaler_build_info{{controller=\"service-scaler\",version=\"{}\",tzdata=\"2026f\"}} 1",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
        // Not yet in the election: not the leader.
        assert!(
            text.contains("ebb_service_scaler_leader{controller=\"service-scaler\"} 0"),
            "{text}"
        );
        assert!(
            text.contains(
                "ebb_service_scaler_overlapping_installs{controller=\"service-scaler\"} 0"
            ),
            "{text}"
        );
        gauge.fill(&Leader::following());
        assert!(
            render(&registry)
                .contains("ebb_service_scaler_leader{controller=\"service-scaler\"} 0")
        );
        let gauge = register_process(&mut Registry::default(), "x", "2026f").leader;
        let leader = Leader::disabled();
        gauge.fill(&leader);
        assert_eq!(gauge.value(), 1, "without election the one replica leads");
        // Standing down for an older, overlapping install: not the leader any more.
        leader.stand_down(true);
        assert_eq!(gauge.value(), 0);
        leader.stand_down(false);
        assert_eq!(gauge.value(), 1);
    }

    #[test]
    fn prefix_is_a_valid_metric_name() {
        assert_eq!(metric_prefix("service-scaler"), "ebb_service_scaler");
        assert_eq!(metric_prefix("a.b"), "ebb_a_b");
    }

    #[test]
    fn the_shared_error_categories_are_exported_at_zero_from_the_start() {
        let mut registry = Registry::default();
        let _metrics = ControllerMetrics::new(&mut registry, "service-scaler");
        let text = render(&registry);
        for category in ERROR_CATEGORIES {
            let series = format!(
                "ebb_service_scaler_reconcile_errors_total{{controller=\"service-scaler\",category=\"{category}\"}} 0"
            );
            assert!(text.contains(&series), "{series} in\n{text}");
        }
    }

    #[tokio::test]
    async fn instrument_counts_times_and_labels_errors() {
        let mut registry = Registry::default();
        let metrics = ControllerMetrics::new(&mut registry, "workshop-scaler");

        let ok = metrics
            .instrument(async { Ok::<_, TestError>(1) }, TestError::category)
            .await;
        assert_eq!(ok, Ok(1));
        let err = metrics
            .instrument(async { Err::<u8, _>(TestError::Kube) }, |e| e.category())
            .await;
        assert_eq!(err, Err(TestError::Kube));
        metrics.record_error("invalid");

        let text = render(&registry);
        assert!(
            text.contains("ebb_workshop_scaler_reconciles_total{controller=\"workshop-scaler\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("ebb_workshop_scaler_reconcile_errors_total{controller=\"workshop-scaler\",category=\"kube\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ebb_workshop_scaler_reconcile_errors_total{controller=\"workshop-scaler\",category=\"invalid\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ebb_workshop_scaler_reconcile_duration_seconds_count{controller=\"workshop-scaler\"} 2"),
            "{text}"
        );
    }
    /// A collector over two rows, as a controller registers one.
    #[derive(Debug, Default)]
    struct Sizes(Arc<ObjectRows<(Option<i64>, u64)>>);

    impl prometheus_client::collector::Collector for Sizes {
        fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
            self.0
                .encode_gauge(&mut encoder, "size", "Size", |row| row.0)?;
            self.0
                .encode_counter(&mut encoder, "grown", "Grown", |row| Some(row.1))
        }
    }

    #[test]
    fn object_rows_are_written_as_one_series_per_object_and_family() {
        let mut registry = Registry::default();
        let sizes = Sizes::default();
        let rows = sizes.0.clone();
        controller_registry(&mut registry, "demo").register_collector(Box::new(sizes));
        rows.update("ops", "a", |row| {
            *row = (Some(3), 1);
            Keep::Row
        });
        rows.update("ops", "b", |row| {
            row.1 = 2;
            Keep::Row
        });
        let text = render(&registry);
        for line in [
            "# TYPE ebb_demo_size gauge",
            "ebb_demo_size{controller=\"demo\",namespace=\"ops\",name=\"a\"} 3",
            "# TYPE ebb_demo_grown counter",
            "ebb_demo_grown_total{controller=\"demo\",namespace=\"ops\",name=\"a\"} 1",
            "ebb_demo_grown_total{controller=\"demo\",namespace=\"ops\",name=\"b\"} 2",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        // A row without a value has no sample of that family.
        assert!(
            !text.contains("ebb_demo_size{controller=\"demo\",namespace=\"ops\",name=\"b\"}"),
            "{text}"
        );

        rows.update("ops", "a", |_| Keep::Drop);
        rows.remove("ops", "b");
        let text = render(&registry);
        assert!(!text.contains("name="), "{text}");
        assert!(text.contains("# TYPE ebb_demo_size gauge"), "{text}");
    }
}
