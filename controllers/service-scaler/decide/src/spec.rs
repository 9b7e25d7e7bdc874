//! Spec validation: every rule a ServiceScaler spec must keep, each error naming the field at
//! fault, and the merge of a range's overrides into the defaults.

use std::fmt;

use ebb_crds::service_scaler::{
    HpaDefaults, HpaOverride, HpaSettings, MetricTargetSpec, TimeRange, TimeRangeKind, Weekday,
};
use ebb_schedule::{Calendars, ScheduleError, Window};
use kube_quantity::ParsedQuantity;

use super::DEFAULT_MIN_REPLICAS;

/// One violated rule, naming the field (`spec.timeRangeSpec[1].from`) and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct SpecError {
    /// The field path, e.g. `spec.timeRangeSpec[1].from`.
    pub field: String,
    /// What is wrong.
    pub rule: String,
}

impl SpecError {
    pub(super) fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// Every rule a spec breaks, in field order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}

/// `spec.hpa` as settings (`minReplicas` filled, zero targets removed), or `None` with every
/// rule it breaks added to `errors`.
pub(super) fn defaults_settings(
    hpa: &HpaDefaults,
    errors: &mut Vec<SpecError>,
) -> Option<HpaSettings> {
    let before = errors.len();
    let min = hpa.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
    if min < 1 {
        errors.push(SpecError::new(
            "spec.hpa.minReplicas",
            format!("must be at least 1 (got {min})"),
        ));
    }
    if hpa.max_replicas < 1 {
        errors.push(SpecError::new(
            "spec.hpa.maxReplicas",
            format!("must be at least 1 (got {})", hpa.max_replicas),
        ));
    }
    check_target(
        hpa.target_cpu_utilization,
        "spec.hpa.targetCPUUtilization",
        errors,
    );
    check_target(
        hpa.target_memory_utilization,
        "spec.hpa.targetMemoryUtilization",
        errors,
    );
    check_metric_targets(&hpa.metric_targets, "spec.hpa", errors);
    if errors.len() == before && min > hpa.max_replicas {
        errors.push(SpecError::new(
            "spec.hpa",
            format!("minReplicas {min} exceeds maxReplicas {}", hpa.max_replicas),
        ));
    }
    (errors.len() == before).then(|| HpaSettings {
        min_replicas: min,
        max_replicas: hpa.max_replicas,
        target_cpu_utilization: hpa.target_cpu_utilization.filter(|t| *t != 0),
        target_memory_utilization: hpa.target_memory_utilization.filter(|t| *t != 0),
        metric_targets: merge_metric_targets(&[], &hpa.metric_targets),
        hibernate: false,
    })
}

/// `base` with `overrides` replacing the targets of the same name, sorted by name.
fn merge_metric_targets(
    base: &[MetricTargetSpec],
    overrides: &[MetricTargetSpec],
) -> Vec<MetricTargetSpec> {
    let mut merged: Vec<MetricTargetSpec> = base.to_vec();
    for o in overrides {
        // A name given twice: the last one counts.
        merged.retain(|m| m.name != o.name);
        merged.push(o.clone());
    }
    merged.sort();
    merged
}

fn check_metric_targets(targets: &[MetricTargetSpec], path: &str, errors: &mut Vec<SpecError>) {
    for (i, t) in targets.iter().enumerate() {
        let given = [
            t.value.is_some(),
            t.average_value.is_some(),
            t.average_utilization.is_some(),
        ]
        .into_iter()
        .filter(|g| *g)
        .count();
        if given != 1 {
            errors.push(SpecError::new(
                format!("{path}.metricTargets[{i}]"),
                "give exactly one of value, averageValue, averageUtilization",
            ));
        }
        if t.name.trim().is_empty() {
            errors.push(SpecError::new(
                format!("{path}.metricTargets[{i}].name"),
                "must not be empty",
            ));
        }
        for (field, value) in [("value", &t.value), ("averageValue", &t.average_value)] {
            if let Some(v) = value
                && ParsedQuantity::try_from(v.as_str()).is_err()
            {
                errors.push(SpecError::new(
                    format!("{path}.metricTargets[{i}].{field}"),
                    format!("{v:?} is not a quantity (e.g. 100, 500m, 1.5k)"),
                ));
            }
        }
    }
}

/// Checks one range's overrides (`path`: `spec.timeRangeSpec[i].replicaSpec.hpa`).
pub(super) fn check_override(hpa: &HpaOverride, path: &str, errors: &mut Vec<SpecError>) {
    if let Some(min) = hpa.min_replicas.filter(|m| *m < 1) {
        errors.push(SpecError::new(
            format!("{path}.minReplicas"),
            format!("must be at least 1 (got {min})"),
        ));
    }
    if let Some(max) = hpa.max_replicas.filter(|m| *m < 1) {
        errors.push(SpecError::new(
            format!("{path}.maxReplicas"),
            format!("must be at least 1 (got {max})"),
        ));
    }
    check_target(
        hpa.target_cpu_utilization,
        &format!("{path}.targetCPUUtilization"),
        errors,
    );
    check_target(
        hpa.target_memory_utilization,
        &format!("{path}.targetMemoryUtilization"),
        errors,
    );
    check_metric_targets(&hpa.metric_targets, path, errors);
}

fn check_target(target: Option<i32>, field: &str, errors: &mut Vec<SpecError>) {
    if let Some(t) = target.filter(|t| *t < 0) {
        errors.push(SpecError::new(
            field,
            format!("must not be negative (got {t}); 0 removes the metric"),
        ));
    }
}

/// The defaults with one range's overrides: a field left out keeps the default's value, a target
/// of 0 removes the metric.
pub fn merge(defaults: &HpaSettings, overrides: &HpaOverride) -> HpaSettings {
    let target = |o: Option<i32>, d: Option<i32>| match o {
        Some(0) => None,
        Some(t) => Some(t),
        None => d,
    };
    HpaSettings {
        min_replicas: overrides.min_replicas.unwrap_or(defaults.min_replicas),
        max_replicas: overrides.max_replicas.unwrap_or(defaults.max_replicas),
        target_cpu_utilization: target(
            overrides.target_cpu_utilization,
            defaults.target_cpu_utilization,
        ),
        target_memory_utilization: target(
            overrides.target_memory_utilization,
            defaults.target_memory_utilization,
        ),
        metric_targets: merge_metric_targets(&defaults.metric_targets, &overrides.metric_targets),
        hibernate: false,
    }
}

fn weekday_name(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "Mon",
        Weekday::Tue => "Tue",
        Weekday::Wed => "Wed",
        Weekday::Thu => "Thu",
        Weekday::Fri => "Fri",
        Weekday::Sat => "Sat",
        Weekday::Sun => "Sun",
    }
}

fn kind_name(kind: TimeRangeKind) -> &'static str {
    match kind {
        TimeRangeKind::ZonedTime => "ZonedTime",
        TimeRangeKind::ZonedDateTime => "ZonedDateTime",
        TimeRangeKind::LocalTime => "LocalTime",
        TimeRangeKind::Cron => "Cron",
    }
}

/// The HolidayCalendars `ranges` name (`excludeCalendars`), each once.
pub fn calendar_names(ranges: &[TimeRange]) -> Vec<&str> {
    Calendars::names_in(ranges.iter().flat_map(|range| &range.exclude_calendars))
}

/// The field of a range an engine error is about.
fn schedule_field(error: &ScheduleError, range: &TimeRange) -> &'static str {
    match error {
        ScheduleError::TimeOfDay { input, .. } | ScheduleError::DateTime { input, .. } => {
            if range.from.as_deref() == Some(input.as_str()) {
                "from"
            } else {
                "to"
            }
        }
        ScheduleError::EndNotAfterStart { .. } => "to",
        ScheduleError::UnknownTimeZone(_) | ScheduleError::UnreadableTimeZone { .. } => "timeZone",
        ScheduleError::Weekday(_) | ScheduleError::NoDays => "days",
        ScheduleError::Cron { .. } => "schedule",
        ScheduleError::Duration { .. } => "duration",
        ScheduleError::ExcludedDate { .. } => "excludeDates",
        ScheduleError::CalendarNotFound { .. } | ScheduleError::CalendarInvalid { .. } => {
            "excludeCalendars"
        }
    }
}

/// The window of one range, or every rule it breaks.
pub(super) fn build_window(
    range: &TimeRange,
    path: &str,
    calendars: &Calendars,
) -> Result<Window, Vec<SpecError>> {
    let mut errors = Vec::new();
    forbid_foreign_fields(range, path, &mut errors);
    let built = if range.kind == TimeRangeKind::Cron {
        cron_window(range, path, &mut errors)
    } else {
        time_window(range, path, &mut errors)
    };
    let mut excluded = match ebb_schedule::ExcludedDays::parse(&range.exclude_dates) {
        Ok(dates) => dates,
        Err(e) => {
            errors.push(SpecError::new(
                format!("{path}.excludeDates"),
                e.to_string(),
            ));
            Vec::new()
        }
    };
    for (i, name) in range.exclude_calendars.iter().enumerate() {
        match calendars.dates(name) {
            Ok(dates) => excluded.extend_from_slice(dates),
            Err(e) => errors.push(SpecError::new(
                format!("{path}.excludeCalendars[{i}]"),
                e.to_string(),
            )),
        }
    }
    match built {
        Some(Ok(window)) if errors.is_empty() => Ok(window.excluding(excluded)),
        Some(Err(e)) => {
            errors.push(SpecError::new(
                format!("{path}.{}", schedule_field(&e, range)),
                e.to_string(),
            ));
            Err(errors)
        }
        _ => Err(errors),
    }
}

/// The fields a range of its kind must leave out: `schedule` and `duration` belong to kind Cron,
/// `from` and `to` to the other kinds, `timeZone` to LocalTime and Cron, `days` to LocalTime.
fn forbid_foreign_fields(range: &TimeRange, path: &str, errors: &mut Vec<SpecError>) {
    let mut forbid = |present: bool, field: &str, rule: &str| {
        if present {
            errors.push(SpecError::new(format!("{path}.{field}"), rule));
        }
    };
    let is_cron = range.kind == TimeRangeKind::Cron;
    forbid(
        !is_cron && range.schedule.is_some(),
        "schedule",
        "belongs to kind Cron only",
    );
    forbid(
        !is_cron && range.duration.is_some(),
        "duration",
        "belongs to kind Cron only",
    );
    forbid(
        is_cron && range.from.is_some(),
        "from",
        "kind Cron opens at schedule and stays open for duration; from/to do not apply",
    );
    forbid(
        is_cron && range.to.is_some(),
        "to",
        "kind Cron opens at schedule and stays open for duration; from/to do not apply",
    );
    forbid(
        matches!(
            range.kind,
            TimeRangeKind::ZonedTime | TimeRangeKind::ZonedDateTime
        ) && range.time_zone.is_some(),
        "timeZone",
        "belongs to kinds LocalTime and Cron (ZonedTime and ZonedDateTime carry an offset)",
    );
    forbid(
        range.kind != TimeRangeKind::LocalTime && range.days.is_some(),
        "days",
        "belongs to kind LocalTime only",
    );
}

/// The window of a Cron range: it needs both `schedule` and `duration` (`None`, with the
/// missing ones added to `errors`, otherwise).
fn cron_window(
    range: &TimeRange,
    path: &str,
    errors: &mut Vec<SpecError>,
) -> Option<Result<Window, ScheduleError>> {
    match (range.schedule.as_deref(), range.duration.as_deref()) {
        (Some(schedule), Some(duration)) => {
            Some(Window::cron(schedule, duration, range.time_zone.as_deref()))
        }
        (schedule, duration) => {
            if schedule.is_none() {
                errors.push(SpecError::new(
                    format!("{path}.schedule"),
                    "required for kind Cron (five-field cron, e.g. \"0 8 * * 1-5\")",
                ));
            }
            if duration.is_none() {
                errors.push(SpecError::new(
                    format!("{path}.duration"),
                    "required for kind Cron (e.g. 90m, 10h, 1h30m)",
                ));
            }
            None
        }
    }
}

/// The window of a ZonedTime, ZonedDateTime or LocalTime range: it needs both `from` and `to`
/// (`None`, with the rule added to `errors`, otherwise).
fn time_window(
    range: &TimeRange,
    path: &str,
    errors: &mut Vec<SpecError>,
) -> Option<Result<Window, ScheduleError>> {
    match (range.from.as_deref(), range.to.as_deref()) {
        (Some(from), Some(to)) => Some(match range.kind {
            TimeRangeKind::ZonedTime => Window::zoned_time(from, to),
            TimeRangeKind::ZonedDateTime => Window::zoned_date_time(from, to),
            _ => {
                let days = range
                    .days
                    .as_ref()
                    .map(|days| days.iter().map(|d| weekday_name(*d)));
                Window::local_time(from, to, range.time_zone.as_deref(), days)
            }
        }),
        (None, Some(_)) => {
            errors.push(SpecError::new(
                format!("{path}.from"),
                "to is given without from; a range needs both",
            ));
            None
        }
        (Some(_), None) => {
            errors.push(SpecError::new(
                format!("{path}.to"),
                "from is given without to; a range needs both",
            ));
            None
        }
        (None, None) => {
            errors.push(SpecError::new(
                format!("{path}.from"),
                format!("kind {} needs from and to", kind_name(range.kind)),
            ));
            None
        }
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
