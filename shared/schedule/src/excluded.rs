//! Excluded days: local dates on which a window is closed, whatever its rule says.
//!
//! # The rule
//! An excluded date closes the window for that whole local day: from the first instant of the
//! date to the first instant of the next one, both in the window's own zone (its `timeZone`, the
//! fixed offset of a `ZonedTime` window, UTC for a one-off `ZonedDateTime` one), so DST changes
//! move the day's edges with the wall clock (a 23- or 25-hour day; in a zone whose clocks skip
//! midnight, the day starts at the first instant that exists). The window's open periods are cut at those edges: a
//! 22:00-06:00 window on the night into an excluded day closes at midnight, and one on the night
//! out of it opens at midnight. A window is never open inside an excluded day.

use std::collections::BTreeMap;

use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, civil};

use crate::ScheduleError;
use crate::zone::Zone;

/// The zone whose wall clock says which date an instant falls on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DayZone {
    /// An IANA zone.
    Zone(Zone),
    /// A fixed offset.
    Offset(Offset),
}

impl DayZone {
    fn tz(&self) -> TimeZone {
        match self {
            Self::Zone(zone) => zone.as_jiff().clone(),
            Self::Offset(offset) => TimeZone::fixed(*offset),
        }
    }

    fn date_of(&self, t: Timestamp) -> civil::Date {
        self.tz().to_datetime(t).date()
    }

    /// The first instant of `date` (the later side of a gap at midnight).
    fn start_of(&self, date: civil::Date) -> Option<Timestamp> {
        self.tz()
            .to_ambiguous_timestamp(date.to_datetime(civil::Time::midnight()))
            .later()
            .ok()
    }
}

/// Local dates on which a window is closed: sorted, merged runs of whole days, inclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExcludedDays {
    zone: DayZone,
    runs: Vec<(civil::Date, civil::Date)>,
}

impl ExcludedDays {
    /// Parses `entries`, each a date (`2026-12-25`) or an inclusive range of dates
    /// (`2026-12-24/2027-01-01`), into sorted runs, overlapping and adjacent ones merged.
    ///
    /// # Errors
    /// [`ScheduleError::ExcludedDate`] naming the entry at fault.
    pub fn parse<S: AsRef<str>>(
        entries: &[S],
    ) -> Result<Vec<(civil::Date, civil::Date)>, ScheduleError> {
        let date = |entry: &str, text: &str| {
            text.trim()
                .parse::<civil::Date>()
                .map_err(|e| ScheduleError::ExcludedDate {
                    input: entry.to_owned(),
                    reason: format!(
                        "{e}; expected a date such as 2026-12-25 or a range 2026-12-24/2027-01-01"
                    ),
                })
        };
        let mut runs = Vec::new();
        for entry in entries {
            let entry = entry.as_ref();
            let (first, last) = match entry.split_once('/') {
                Some((a, b)) => (date(entry, a)?, date(entry, b)?),
                None => {
                    let d = date(entry, entry)?;
                    (d, d)
                }
            };
            if last < first {
                return Err(ScheduleError::ExcludedDate {
                    input: entry.to_owned(),
                    reason: "the range ends before it starts".into(),
                });
            }
            runs.push((first, last));
        }
        Ok(merged(runs))
    }

    /// `runs` in any order (several sources' together): sorted and merged.
    pub(crate) fn new(zone: DayZone, runs: Vec<(civil::Date, civil::Date)>) -> Self {
        Self {
            zone,
            runs: merged(runs),
        }
    }

    /// Whether no date is excluded.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// `[start, end)` of run `i` as instants.
    fn run(&self, i: usize) -> Option<(Timestamp, Timestamp)> {
        let (first, last) = self.runs.get(i)?;
        let start = self.zone.start_of(*first)?;
        let end = last
            .tomorrow()
            .ok()
            .and_then(|d| self.zone.start_of(d))
            .unwrap_or(Timestamp::MAX);
        Some((start, end))
    }

    /// The excluded run `[start, end)` containing `t`.
    pub(crate) fn run_containing(&self, t: Timestamp) -> Option<(Timestamp, Timestamp)> {
        let date = self.zone.date_of(t);
        let i = self
            .runs
            .iter()
            .position(|(first, last)| *first <= date && date <= *last)?;
        self.run(i).filter(|(start, end)| *start <= t && t < *end)
    }

    /// Whether `t` lies on an excluded day.
    pub(crate) fn contains(&self, t: Timestamp) -> bool {
        self.run_containing(t).is_some()
    }

    /// The start of the first excluded run that starts strictly after `t`.
    pub(crate) fn next_start_after(&self, t: Timestamp) -> Option<Timestamp> {
        (0..self.runs.len())
            .filter_map(|i| self.run(i))
            .map(|(start, _)| start)
            .find(|start| *start > t)
    }

    /// The end of the last excluded run that ends at or before `t`.
    pub(crate) fn last_end_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        (0..self.runs.len())
            .filter_map(|i| self.run(i))
            .map(|(_, end)| end)
            .filter(|end| *end <= t)
            .max()
    }
}

/// `runs` sorted, with overlapping and adjacent runs merged into one.
fn merged(mut runs: Vec<(civil::Date, civil::Date)>) -> Vec<(civil::Date, civil::Date)> {
    runs.sort();
    let mut merged: Vec<(civil::Date, civil::Date)> = Vec::new();
    for (first, last) in runs {
        match merged.last_mut() {
            Some((_, end)) if end.tomorrow().is_ok_and(|next| first <= next) => {
                *end = (*end).max(last);
            }
            _ => merged.push((first, last)),
        }
    }
    merged
}

/// Holiday calendars by name, each one's dates parsed (or why they could not be): what the
/// calendars a window names in `excludeCalendars` are looked up in. A date of a calendar is a
/// local date in the zone of the window that names it, as the window's own excluded dates are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calendars {
    by_name: BTreeMap<String, Result<Vec<(civil::Date, civil::Date)>, ScheduleError>>,
}

impl Default for Calendars {
    fn default() -> Self {
        Self::new()
    }
}

impl Calendars {
    /// No calendar: every name is missing.
    pub const fn new() -> Self {
        Self {
            by_name: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) calendar `name` with its `dates`, as a HolidayCalendar's `spec.dates`
    /// gives them; dates that do not parse make the calendar invalid, which only a window naming
    /// it notices.
    pub fn insert<S: AsRef<str>>(&mut self, name: &str, dates: &[S]) {
        let parsed = ExcludedDays::parse(dates).map_err(|e| ScheduleError::CalendarInvalid {
            name: name.to_owned(),
            reason: e.to_string(),
        });
        self.by_name.insert(name.to_owned(), parsed);
    }

    /// Adds (or replaces) calendar `name` as one that cannot be read at all (`reason`: what is
    /// wrong, e.g. the object does not decode), which only a window naming it notices.
    pub fn insert_invalid(&mut self, name: &str, reason: impl Into<String>) {
        let invalid = ScheduleError::CalendarInvalid {
            name: name.to_owned(),
            reason: reason.into(),
        };
        self.by_name.insert(name.to_owned(), Err(invalid));
    }

    /// The calendar names of `names` (every `excludeCalendars` entry of an object's windows),
    /// each once, sorted: what an object needs looked up.
    pub fn names_in<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<&'a str> {
        let mut names: Vec<&str> = names.into_iter().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether no calendar is held.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The dates of calendar `name`, as sorted, merged runs.
    ///
    /// # Errors
    /// [`ScheduleError::CalendarNotFound`] when no calendar of that name is held,
    /// [`ScheduleError::CalendarInvalid`] when one of its dates does not parse.
    pub fn dates(&self, name: &str) -> Result<&[(civil::Date, civil::Date)], ScheduleError> {
        match self.by_name.get(name) {
            Some(Ok(runs)) => Ok(runs),
            Some(Err(e)) => Err(e.clone()),
            None => Err(ScheduleError::CalendarNotFound {
                name: name.to_owned(),
            }),
        }
    }
}
