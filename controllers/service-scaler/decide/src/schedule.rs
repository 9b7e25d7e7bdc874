//! The schedule: the windows of a validated spec's ranges, the settings each brings, and the
//! coming changes of the effective settings.

use ebb_crds::service_scaler::{HpaSettings, RangeSelection, ServiceScalerSpec, TimeRangeKind};
use ebb_schedule::{Calendars, DEFAULT_HORIZON, FirstMatch, Overlaps, Window, parse_duration};
use jiff::{SignedDuration, Timestamp};

use super::spec::{SpecError, SpecErrors, build_window, check_override, defaults_settings, merge};

/// How many matched-range changes one engine call returns while scanning for settings changes.
const CHUNK: usize = 64;
/// How often the scan jumps past a quiet year to the next one-off or cron boundary.
const MAX_QUIET_JUMPS: usize = 8;
/// The most engine steps ([`ebb_schedule::work`]) one scan for settings changes takes: a few
/// milliseconds in a release build. Ranges that hand over to each other every minute with the
/// same settings could otherwise make a pass sweep months of range changes.
pub const SCAN_STEPS: u64 = 20_000;

/// The coming changes of the effective settings, as far as one scan looked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coming {
    /// The changes found, in order.
    pub changes: Vec<Transition>,
    /// Where the scan stopped for want of steps ([`SCAN_STEPS`]) before finding as many changes
    /// as asked: nothing is known after it, so a pass looks again then. `None`: the scan
    /// found them all, or every change there is.
    pub cut: Option<Timestamp>,
}

impl Coming {
    /// When a pass must look again: the first change, or where the scan stopped.
    pub fn next_look(&self) -> Option<Timestamp> {
        let first = self.changes.first().map(|t| t.at);
        match (first, self.cut) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A coming change of the effective settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// When the settings change.
    pub at: Timestamp,
    /// The range in force from then on (`None`: the defaults).
    pub matched_range: Option<usize>,
    /// The settings in force from then on.
    pub settings: HpaSettings,
}

/// A validated ServiceScaler spec: the windows of its ranges and the settings each brings.
#[derive(Clone, Debug)]
pub struct Schedule {
    defaults: HpaSettings,
    ranges: Vec<HpaSettings>,
    windows: Ranked,
    /// Indices of one-off and cron ranges, and of ranges with excluded dates: the only ones that
    /// can change anything after a year without change.
    non_daily: Vec<usize>,
    ramp: Option<SignedDuration>,
    /// `spec.leadTime`, parsed (zero: off); see [`crate::lead`].
    lead_time: SignedDuration,
}

impl Schedule {
    /// Validates `spec` and builds its schedule; the errors name every field at fault.
    /// `calendars` holds the HolidayCalendars its ranges name: one missing or invalid is an
    /// error of the range's `excludeCalendars` entry.
    pub fn from_spec(spec: &ServiceScalerSpec, calendars: &Calendars) -> Result<Self, SpecErrors> {
        let mut errors = Vec::new();
        let defaults = defaults_settings(&spec.hpa, &mut errors);
        let mut windows = Vec::new();
        let mut ranges = Vec::new();
        let mut non_daily = Vec::new();
        for (i, range) in spec.time_range_spec.iter().enumerate() {
            let path = format!("spec.timeRangeSpec[{i}]");
            match build_window(range, &path, calendars) {
                Ok(window) => windows.push(window),
                Err(mut e) => errors.append(&mut e),
            }
            // Excluded dates change things on their days, however far ahead.
            if matches!(
                range.kind,
                TimeRangeKind::ZonedDateTime | TimeRangeKind::Cron
            ) || !range.exclude_dates.is_empty()
                || !range.exclude_calendars.is_empty()
            {
                non_daily.push(i);
            }
            let hpa_path = format!("{path}.replicaSpec.hpa");
            check_override(&range.replica_spec.hpa, &hpa_path, &mut errors);
            if let Some(defaults) = &defaults {
                let mut merged = merge(defaults, &range.replica_spec.hpa);
                merged.hibernate = range.replica_spec.hibernate;
                if merged.min_replicas > merged.max_replicas {
                    errors.push(SpecError::new(
                        hpa_path,
                        format!(
                            "minReplicas {} exceeds maxReplicas {} after merging with spec.hpa",
                            merged.min_replicas, merged.max_replicas
                        ),
                    ));
                }
                ranges.push(merged);
            }
        }
        let lead_time =
            crate::lead::parse_lead_time(spec.lead_time.as_deref()).unwrap_or_else(|e| {
                errors.push(SpecError::new("spec.leadTime", e.to_string()));
                SignedDuration::ZERO
            });
        let ramp = match spec.ramp.as_deref() {
            None => None,
            Some(text) => match parse_duration(text) {
                Ok(d) => Some(d),
                Err(e) => {
                    errors.push(SpecError::new("spec.ramp", e.to_string()));
                    None
                }
            },
        };
        if let Some(target) = &spec.scale_target_ref {
            if target.kind.trim().is_empty() {
                errors.push(SpecError::new(
                    "spec.scaleTargetRef.kind",
                    "must not be empty (e.g. Deployment)",
                ));
            }
            if target.name.trim().is_empty() {
                errors.push(SpecError::new(
                    "spec.scaleTargetRef.name",
                    "must not be empty",
                ));
            }
        }
        match defaults {
            Some(defaults) if errors.is_empty() => Ok(Self {
                defaults,
                ranges,
                windows: Ranked::new(windows, spec.range_selection.unwrap_or_default()),
                non_daily,
                ramp,
                lead_time,
            }),
            _ => Err(SpecErrors(errors)),
        }
    }

    /// The defaults (`spec.hpa` with `minReplicas` filled and zero targets removed).
    pub fn defaults(&self) -> &HpaSettings {
        &self.defaults
    }

    /// `spec.ramp`, parsed.
    pub fn ramp(&self) -> Option<SignedDuration> {
        self.ramp
    }

    /// `spec.leadTime`, parsed: the default 30m when absent, zero when off.
    pub fn lead_time(&self) -> SignedDuration {
        self.lead_time
    }

    /// The settings while range `index` is in force (`None`: the defaults).
    pub fn settings(&self, index: Option<usize>) -> &HpaSettings {
        index
            .and_then(|i| self.ranges.get(i))
            .unwrap_or(&self.defaults)
    }

    /// The range in force at `t`: the first in list order containing it (the last with
    /// `spec.rangeSelection: Last`).
    pub fn matched_at(&self, t: Timestamp) -> Option<usize> {
        self.windows.matched_at(t)
    }

    /// The effective settings at `t`.
    pub fn effective_at(&self, t: Timestamp) -> &HpaSettings {
        self.settings(self.matched_at(t))
    }

    /// The next `limit` changes of the effective settings strictly after `now`, as far as
    /// [`Schedule::coming`] looks.
    pub fn transitions(&self, now: Timestamp, limit: usize) -> Vec<Transition> {
        self.coming(now, limit).changes
    }

    /// The next `limit` changes of the effective settings strictly after `now`, within
    /// [`SCAN_STEPS`] of work ([`Coming::cut`] says where it stopped if it ran out).
    ///
    /// Looks a year ([`DEFAULT_HORIZON`]) ahead; after a year without a change only a one-off or
    /// cron range can bring one, so it jumps to the next boundary of those and looks again (a few
    /// times at most).
    pub fn coming(&self, now: Timestamp, limit: usize) -> Coming {
        let mut out = Vec::new();
        if limit == 0 {
            return Coming::default();
        }
        let start = ebb_schedule::work::steps();
        let mut current = self.effective_at(now).clone();
        let mut cursor = now;
        for _ in 0..=MAX_QUIET_JUMPS {
            let Ok(horizon_end) = cursor.checked_add(DEFAULT_HORIZON) else {
                break;
            };
            let mut swept = cursor;
            loop {
                let changes =
                    self.windows
                        .transitions(swept, CHUNK, horizon_end.duration_since(swept));
                for (at, matched_range) in &changes {
                    swept = *at;
                    let settings = self.settings(*matched_range);
                    if *settings != current {
                        current = settings.clone();
                        out.push(Transition {
                            at: *at,
                            matched_range: *matched_range,
                            settings: current.clone(),
                        });
                        if out.len() >= limit {
                            return Coming {
                                changes: out,
                                cut: None,
                            };
                        }
                    }
                }
                if changes.len() < CHUNK {
                    break;
                }
                if ebb_schedule::work::steps().wrapping_sub(start) > SCAN_STEPS {
                    return Coming {
                        changes: out,
                        cut: Some(swept),
                    };
                }
            }
            // Daily ranges repeat within a year (a week, and the DST dates): what they could
            // change after it, the year has shown. Only one-off and cron boundaries remain.
            let next_boundary = self
                .non_daily
                .iter()
                .filter_map(|i| self.windows.windows().get(*i))
                .filter_map(|w| w.next_boundary_after(horizon_end))
                .min();
            match next_boundary.and_then(|b| b.checked_sub(SignedDuration::from_nanos(1)).ok()) {
                Some(next) => cursor = next,
                None => break,
            }
        }
        Coming {
            changes: out,
            cut: None,
        }
    }

    /// The next instant strictly after `now` at which the effective settings change, or `None`
    /// when they never change again.
    pub fn next_transition(&self, now: Timestamp) -> Option<Timestamp> {
        self.coming(now, 1).next_look()
    }

    /// The last instant in `(since, now]` at which the effective `minReplicas` changed, as far
    /// as [`SCAN_STEPS`] of work can look back from `now`.
    ///
    /// `spec.ramp` is any duration, and `(since, now]` as long: walked forward whole, a year of
    /// minute-level ranges took millions of steps on every pass. So the search looks back from
    /// `now` over windows four times wider each time (a minute, four, sixteen ...) and stops at
    /// the first that holds a change: the last change in it is the last of all. A change older
    /// than the budget reaches counts as none (the ramp then starts at the pass, or not at
    /// all): only a restart, or a first sight of the object, long after its last boundary
    /// between ranges that hand over every minute with the same `minReplicas` gets there; a
    /// ramp in progress is kept in `status.ramp` and needs no search.
    pub fn last_min_change(&self, since: Timestamp, now: Timestamp) -> Option<Timestamp> {
        if now <= since {
            return None;
        }
        let start = ebb_schedule::work::steps();
        let spent = || ebb_schedule::work::steps().wrapping_sub(start) > SCAN_STEPS;
        let mut width = SignedDuration::from_mins(1);
        loop {
            let from = now
                .checked_sub(width)
                .ok()
                .filter(|from| *from > since)
                .unwrap_or(since);
            let (found, complete) = self.last_min_change_walk(from, now, &spent);
            if found.is_some() || !complete || from == since {
                return found;
            }
            width = width.checked_mul(4)?;
        }
    }

    /// The last change of the effective `minReplicas` in `(from, now]`, walked forward from
    /// `from`, and whether the walk got to `now` before `spent` said stop.
    fn last_min_change_walk(
        &self,
        from: Timestamp,
        now: Timestamp,
        spent: &impl Fn() -> bool,
    ) -> (Option<Timestamp>, bool) {
        let mut min = self.effective_at(from).min_replicas;
        let mut last = None;
        let mut swept = from;
        loop {
            let changes = self
                .windows
                .transitions(swept, CHUNK, now.duration_since(swept));
            for (at, matched_range) in &changes {
                swept = *at;
                let next = self.settings(*matched_range).min_replicas;
                if next != min {
                    min = next;
                    last = Some(*at);
                }
            }
            if changes.len() < CHUNK {
                return (last, true);
            }
            if spent() {
                return (last, false);
            }
        }
    }

    /// Pairs of ranges that can be in force at the same instant, and pairs the check had no
    /// budget left to settle ([`ebb_schedule::OVERLAP_STEPS`]), in list order.
    pub fn overlaps(&self) -> Overlaps {
        self.windows.overlaps()
    }

    /// [`overlap_message`] for `overlaps` (this schedule's), naming the range that wins.
    pub fn overlap_message(&self, overlaps: &Overlaps) -> Option<String> {
        let message = overlap_message(&overlaps.pairs, &overlaps.unsettled)?;
        Some(if self.windows.last {
            message.replace(
                "the first in list order wins",
                "the last in list order wins",
            )
        } else {
            message
        })
    }
}

/// The ranges' windows with the priority `spec.rangeSelection` gives them, indices always in list
/// order: `Last` is [`FirstMatch`] over the reversed list.
#[derive(Clone, Debug)]
struct Ranked {
    ranked: FirstMatch,
    listed: Vec<Window>,
    last: bool,
}

impl Ranked {
    fn new(windows: Vec<Window>, selection: RangeSelection) -> Self {
        let last = selection == RangeSelection::Last;
        let mut ranked = windows.clone();
        if last {
            ranked.reverse();
        }
        Self {
            ranked: FirstMatch::new(ranked),
            listed: windows,
            last,
        }
    }

    /// The list index of the window at `i` in priority order.
    fn listed_index(&self, i: usize) -> usize {
        if self.last {
            self.listed.len() - 1 - i
        } else {
            i
        }
    }

    /// The windows in list order.
    fn windows(&self) -> &[Window] {
        &self.listed
    }

    fn matched_at(&self, t: Timestamp) -> Option<usize> {
        self.ranked.matched_at(t).map(|i| self.listed_index(i))
    }

    fn transitions(
        &self,
        now: Timestamp,
        limit: usize,
        horizon: SignedDuration,
    ) -> Vec<(Timestamp, Option<usize>)> {
        self.ranked
            .transitions(now, limit, horizon)
            .into_iter()
            .map(|(at, i)| (at, i.map(|i| self.listed_index(i))))
            .collect()
    }

    fn overlaps(&self) -> Overlaps {
        let found = self.ranked.overlaps();
        let listed = |pairs: Vec<(usize, usize)>| {
            let mut pairs: Vec<(usize, usize)> = pairs
                .into_iter()
                .map(|(a, b)| {
                    let (a, b) = (self.listed_index(a), self.listed_index(b));
                    (a.min(b), a.max(b))
                })
                .collect();
            pairs.sort_unstable();
            pairs
        };
        Overlaps {
            pairs: listed(found.pairs),
            unsettled: listed(found.unsettled),
        }
    }
}

/// How many overlapping pairs a message names (a condition message has a size limit).
const MAX_NAMED_OVERLAPS: usize = 10;

/// `timeRangeSpec[0] and timeRangeSpec[2] overlap; the first in list order wins`, naming the
/// first `MAX_NAMED_OVERLAPS` (10) pairs and counting the rest; pairs the check could not settle
/// within its budget (`unsettled`) are said to maybe overlap.
pub fn overlap_message(pairs: &[(usize, usize)], unsettled: &[(usize, usize)]) -> Option<String> {
    if pairs.is_empty() && unsettled.is_empty() {
        return None;
    }
    let named = |pairs: &[(usize, usize)], verb: &str| {
        let list: Vec<String> = pairs
            .iter()
            .take(MAX_NAMED_OVERLAPS)
            .map(|(a, b)| format!("timeRangeSpec[{a}] and timeRangeSpec[{b}] {verb}"))
            .collect();
        let more = match pairs.len().saturating_sub(MAX_NAMED_OVERLAPS) {
            0 => String::new(),
            n => format!(" (and {n} more pairs)"),
        };
        format!("{}{more}", list.join(", "))
    };
    let mut parts = Vec::new();
    if !pairs.is_empty() {
        parts.push(named(pairs, "overlap"));
    }
    if !unsettled.is_empty() {
        parts.push(format!(
            "{} (the overlap check stops at its budget: {} pairs were not compared to the end)",
            named(unsettled, "may overlap"),
            unsettled.len()
        ));
    }
    Some(format!(
        "{}; the first in list order wins",
        parts.join("; ")
    ))
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
