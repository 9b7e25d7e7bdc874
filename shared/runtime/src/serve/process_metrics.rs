//! The `process_*` series every Prometheus client library exports, with client_golang's names and
//! meanings: `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, `process_threads` and
//! `process_start_time_seconds`. They are read from `/proc/self` at each scrape (the `procfs` crate)
//! and carry no prefix, as the dashboards and alerts written for any process expect them. A
//! scrape that cannot read `/proc` (not Linux, a locked-down mount) leaves them out and still
//! serves the rest.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

/// Registers the `process_*` series into `registry` (its root: no prefix).
pub fn register(registry: &mut Registry) {
    registry.register_collector(Box::new(ProcessCollector));
}

/// What one scrape read of the process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessStats {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory, in bytes.
    pub resident_bytes: i64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: i64,
    /// Open file descriptors.
    pub open_fds: i64,
    /// The soft limit on open file descriptors (`None`: unlimited).
    pub max_fds: Option<i64>,
    /// OS threads.
    pub threads: i64,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
}

impl ProcessStats {
    /// This process, as `/proc/self` says now.
    ///
    /// # Errors
    /// `/proc/self` (or `/proc/stat` for the boot time) cannot be read.
    pub fn read() -> procfs::ProcResult<Self> {
        let me = procfs::process::Process::myself()?;
        let stat = me.stat()?;
        let ticks = procfs::ticks_per_second() as f64;
        let boot = procfs::boot_time_secs()? as f64;
        let max_fds = match me.limits()?.max_open_files.soft_limit {
            procfs::process::LimitValue::Value(n) => Some(saturate(n)),
            procfs::process::LimitValue::Unlimited => None,
        };
        Ok(Self {
            cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
            resident_bytes: saturate(stat.rss.saturating_mul(procfs::page_size())),
            virtual_bytes: saturate(stat.vsize),
            open_fds: saturate(me.fd_count()? as u64),
            max_fds,
            threads: stat.num_threads,
            start_time_seconds: boot + stat.starttime as f64 / ticks,
        })
    }
}

fn saturate(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Reads [`ProcessStats`] at each scrape and writes them out.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(stats) = ProcessStats::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(stats.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu",
            "Total user and system CPU time spent in seconds",
            Some(&Unit::Seconds),
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, Option<&Unit>, Option<i64>); 5] = [
            (
                "process_resident_memory",
                "Resident memory size in bytes",
                Some(&Unit::Bytes),
                Some(stats.resident_bytes),
            ),
            (
                "process_virtual_memory",
                "Virtual memory size in bytes",
                Some(&Unit::Bytes),
                Some(stats.virtual_bytes),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                None,
                Some(stats.open_fds),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                None,
                stats.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process",
                None,
                Some(stats.threads),
            ),
        ];
        for (name, help, unit, value) in gauges {
            let Some(value) = value else { continue };
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, unit, gauge.metric_type())?)?;
        }
        let start = ConstGauge::new(stats.start_time_seconds);
        start.encode(encoder.encode_descriptor(
            "process_start_time",
            "Start time of the process since the Unix epoch in seconds",
            Some(&Unit::Seconds),
            start.metric_type(),
        )?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn sample(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn a_scrape_has_the_standard_process_series_with_this_process_values() {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for (line, kind) in [
            ("process_cpu_seconds", "counter"),
            ("process_resident_memory_bytes", "gauge"),
            ("process_virtual_memory_bytes", "gauge"),
            ("process_open_fds", "gauge"),
            ("process_threads", "gauge"),
            ("process_start_time_seconds", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {line} {kind}")),
                "{line} {kind} missing in\n{text}"
            );
        }
        let now = jiff::Timestamp::now().as_second() as f64;
        let started = sample(&text, "process_start_time_seconds");
        assert!(
            started <= now + 1.0 && started > now - 86_400.0,
            "{started} vs {now}"
        );
        assert!(sample(&text, "process_resident_memory_bytes") > 1_000_000.0);
        assert!(
            sample(&text, "process_virtual_memory_bytes")
                >= sample(&text, "process_resident_memory_bytes")
        );
        assert!(sample(&text, "process_open_fds") >= 3.0);
        assert!(sample(&text, "process_threads") >= 1.0);
        assert!(sample(&text, "process_cpu_seconds_total") >= 0.0);
    }
}
