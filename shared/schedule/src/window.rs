//! One time window: when it is open, as half-open intervals `[start, end)`.

use jiff::tz::Offset;
use jiff::{SignedDuration, Timestamp, civil};

use crate::cron::CronSchedule;
use crate::duration::parse_duration;
use crate::excluded::{DayZone, ExcludedDays};
use crate::weekday::{Weekdays, parse_weekday};
use crate::zone::{Zone, at_offset, fixed_wall_clock, resolve_local, wall_clock, zone_or_utc};
use crate::{DEFAULT_HORIZON, ScheduleError};

/// Upper bound on consecutive days merged into one open period of a daily window. Only an
/// every-day, 24-hour window would merge for ever, and that one is recognised up front.
const MAX_DAILY_CHAIN: u32 = 400;

/// Days looked at for the first occurrence of a daily window ending after a cursor: the two days
/// looked back, a week, and another week for a window on one weekday whose occurrence that week
/// lies inside a spring-forward gap and is empty (New York's Sundays 02:30-02:45 on 2024-03-10:
/// the next one opens 2024-03-17), with days to spare.
pub(crate) const MAX_DAILY_SCAN: u32 = 23;

/// A time window: a rule saying at which instants something is open.
///
/// Every window is open on half-open intervals `[start, end)`: open at `start`, closed at `end`.
/// Where intervals of one window overlap or touch they form one open period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Window {
    /// Daily, between two wall-clock times at a fixed UTC offset (udaan's `ZonedTime`, written
    /// `16:00+05:30`). A fixed offset never observes DST.
    ///
    /// `to` earlier than `from` wraps past midnight (`22:00` to `06:00` is open overnight);
    /// `to` equal to `from` is open all day, every day.
    ZonedTime {
        /// Opens at this time of day.
        from: civil::Time,
        /// Closes at this time of day.
        to: civil::Time,
        /// The UTC offset both times are read at.
        offset: Offset,
    },
    /// Once, between two instants. A window whose `to` is not after `from` is never open.
    ZonedDateTime {
        /// Opens at this instant.
        from: Timestamp,
        /// Closes at this instant.
        to: Timestamp,
    },
    /// Daily, between two wall-clock times in an IANA zone, bounded by the wall clock (see the DST
    /// rules in the crate documentation).
    ///
    /// `to` earlier than `from` wraps past midnight; `to` equal to `from` is open 24 wall-clock
    /// hours from `from`. `days` keeps only the periods that open on those weekdays (the day `from`
    /// falls on: with `days: [Fri]`, 22:00-06:00 is open Friday night into Saturday). No days means
    /// every day; an empty set means never.
    LocalTime {
        /// Opens when the wall clock shows this time.
        from: civil::Time,
        /// Closes when the wall clock shows this time.
        to: civil::Time,
        /// The zone whose wall clock is read.
        tz: Zone,
        /// The weekdays on which an open period may start; `None` for every day.
        days: Option<Weekdays>,
    },
    /// Opens at every fire time of a cron schedule and stays open for `duration` of elapsed time.
    ///
    /// Occurrences that overlap or touch form one open period. An open period that would run
    /// without a break for longer than [`DEFAULT_HORIZON`] past the instant asked about (or past
    /// the horizon asked for, if longer) is treated as never closing. A duration that is not
    /// positive is never open.
    Cron {
        /// When the window opens.
        schedule: CronSchedule,
        /// How long it stays open after each fire time (elapsed time).
        duration: SignedDuration,
    },
    /// `window`, closed on whole local days ([`ExcludedDays`]: from a date's first instant to
    /// the next date's, in the window's own zone; its open periods are cut at those edges).
    /// Made by [`Window::excluding`].
    Excluding {
        /// The window.
        window: Box<Window>,
        /// The days it is closed on.
        days: ExcludedDays,
    },
}

/// An open period `[start, end)` of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    /// The first instant it is open; `None` when it has been open for longer than the search looks
    /// back ([`DEFAULT_HORIZON`]) or always.
    pub start: Option<Timestamp>,
    /// The first instant it is closed again; `None` when it stays open for longer than the search
    /// looks ahead ([`DEFAULT_HORIZON`]) or for ever.
    pub end: Option<Timestamp>,
}

impl Interval {
    /// Whether `t` lies in `[start, end)` (a missing bound is unbounded).
    pub fn contains(&self, t: Timestamp) -> bool {
        self.start.is_none_or(|start| start <= t) && self.end.is_none_or(|end| t < end)
    }
}

/// The first open period of a window that ends after a cursor: `start` is exact when it is after
/// the cursor and otherwise only known to be at or before it; `end` is `None` when the period has
/// no end within reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: Timestamp,
    pub(crate) end: Option<Timestamp>,
}

impl Span {
    pub(crate) fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && self.end.is_none_or(|end| t < end)
    }
}

/// One occurrence `[start, end)` of a daily window, before merging.
type Occurrence = (Timestamp, Timestamp);

/// `t + d`, clamped to the representable range.
pub(crate) fn add_saturating(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d)
        .ok()
        .unwrap_or(if d < SignedDuration::ZERO {
            Timestamp::MIN
        } else {
            Timestamp::MAX
        })
}

impl Window {
    /// Parses a daily window at a fixed UTC offset from `HH:MM<offset>` texts such as
    /// `16:00+05:30`, `00:00+05:30` or `08:00Z` (`to` may also be `24:00<offset>`, midnight).
    ///
    /// When the two offsets differ, `to` is first converted to `from`'s offset (`01:00Z` after
    /// `16:00+05:30` is `06:30+05:30`).
    ///
    /// # Errors
    /// [`ScheduleError::TimeOfDay`] naming the text at fault.
    pub fn zoned_time(from: &str, to: &str) -> Result<Self, ScheduleError> {
        let (from_time, offset) = parse_zoned_time(from, false)?;
        let (to_time, to_offset) = parse_zoned_time(to, true)?;
        let shift = SignedDuration::from_secs(i64::from(offset.seconds() - to_offset.seconds()));
        let to_time = to_time.wrapping_add(shift);
        Ok(Self::ZonedTime {
            from: from_time,
            to: to_time,
            offset,
        })
    }

    /// Parses a one-off window from two RFC 3339 date-times, such as `2026-06-01T09:00:00+02:00`.
    ///
    /// # Errors
    /// [`ScheduleError::DateTime`] naming the text at fault, or
    /// [`ScheduleError::EndNotAfterStart`] when `to` is not after `from`.
    pub fn zoned_date_time(from: &str, to: &str) -> Result<Self, ScheduleError> {
        let parse = |text: &str| {
            text.parse::<Timestamp>().map_err(|e| {
                ScheduleError::date_time(
                    text,
                    format!("{e}; expected RFC 3339 such as 2026-06-01T09:00:00+02:00"),
                )
            })
        };
        let (start, end) = (parse(from)?, parse(to)?);
        if end <= start {
            return Err(ScheduleError::EndNotAfterStart {
                from: from.to_owned(),
                to: to.to_owned(),
            });
        }
        Ok(Self::ZonedDateTime {
            from: start,
            to: end,
        })
    }

    /// Parses a daily wall-clock window: `from` and `to` as `HH:MM` (`to` may be `24:00`), an IANA
    /// zone (UTC when `None`) and optional weekdays (`Mon`..`Sun` or full names, any case) on which
    /// the window may open: any list of strings (`Some(["Mon", "Fri"])`, `spec.days.as_ref()`), or
    /// `None::<&[&str]>` for every day.
    ///
    /// # Errors
    /// [`ScheduleError::TimeOfDay`], [`ScheduleError::UnknownTimeZone`],
    /// [`ScheduleError::Weekday`] or [`ScheduleError::NoDays`].
    pub fn local_time<I>(
        from: &str,
        to: &str,
        tz_name: Option<&str>,
        days: Option<I>,
    ) -> Result<Self, ScheduleError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let from_time = parse_clock(from, false)?;
        let to_time = parse_clock(to, true)?;
        let tz = zone_or_utc(tz_name)?;
        let days = days.map(parse_days).transpose()?;
        Ok(Self::LocalTime {
            from: from_time,
            to: to_time,
            tz,
            days,
        })
    }

    /// Parses a cron window: a standard five-field schedule (see [`CronSchedule`]) read in an IANA
    /// zone (UTC when `None`), and how long each occurrence stays open (see
    /// [`parse_duration`](crate::parse_duration)).
    ///
    /// # Errors
    /// [`ScheduleError::Cron`], [`ScheduleError::Duration`] or
    /// [`ScheduleError::UnknownTimeZone`].
    pub fn cron(
        schedule: &str,
        duration: &str,
        tz_name: Option<&str>,
    ) -> Result<Self, ScheduleError> {
        let tz = zone_or_utc(tz_name)?;
        Ok(Self::Cron {
            schedule: CronSchedule::parse(schedule, tz)?,
            duration: parse_duration(duration)?,
        })
    }

    /// Whether the window is open at `t`.
    pub fn contains(&self, t: Timestamp) -> bool {
        if self.never_open() {
            return false;
        }
        if self.always_open() {
            return true;
        }
        match self {
            Self::ZonedDateTime { from, to } => *from <= t && t < *to,
            Self::Cron { schedule, duration } => schedule
                .last_fire_at_or_before(t)
                .is_some_and(|fire| fire.checked_add(*duration).ok().is_none_or(|end| t < end)),
            Self::ZonedTime { .. } | Self::LocalTime { .. } => {
                self.daily_raw_containing(t).is_some()
            }
            Self::Excluding { window, days } => window.contains(t) && !days.contains(t),
        }
    }

    /// This window, closed on the local days of `dates` (inclusive runs, as
    /// [`ExcludedDays::parse`] returns them) in its own zone: its `timeZone`, the fixed offset of
    /// a `ZonedTime` window, UTC for a `ZonedDateTime` one. No dates: the window as it is.
    #[must_use]
    pub fn excluding(self, dates: Vec<(civil::Date, civil::Date)>) -> Self {
        if dates.is_empty() {
            return self;
        }
        let zone = self.day_zone();
        Self::Excluding {
            window: Box::new(self),
            days: ExcludedDays::new(zone, dates),
        }
    }

    /// The zone whose local dates excluded days are.
    fn day_zone(&self) -> DayZone {
        match self {
            Self::ZonedTime { offset, .. } => DayZone::Offset(*offset),
            Self::ZonedDateTime { .. } => DayZone::Zone(crate::Zone::utc()),
            Self::LocalTime { tz, .. } => DayZone::Zone(tz.clone()),
            Self::Cron { schedule, .. } => DayZone::Zone(schedule.zone().clone()),
            Self::Excluding { window, .. } => window.day_zone(),
        }
    }

    /// The open period containing `t`, or `None` when the window is closed at `t`.
    ///
    /// Bounds farther than [`DEFAULT_HORIZON`] from `t` may be reported as unknown (`None`).
    pub fn interval_containing(&self, t: Timestamp) -> Option<Interval> {
        if !self.contains(t) {
            return None;
        }
        let since = add_saturating(t, -DEFAULT_HORIZON);
        let until = add_saturating(t, DEFAULT_HORIZON);
        Some(Interval {
            start: self.start_of_open_period(t, since),
            end: self.next_span(t, until).and_then(|span| span.end),
        })
    }

    /// The next instant strictly after `t` at which the window opens (goes from closed to open),
    /// or `None` when it never opens again (or stays open past [`DEFAULT_HORIZON`]).
    pub fn next_start_after(&self, t: Timestamp) -> Option<Timestamp> {
        let span = self.next_span(t, add_saturating(t, DEFAULT_HORIZON))?;
        if span.start > t {
            return Some(span.start);
        }
        let end = span.end?;
        self.next_span(end, add_saturating(end, DEFAULT_HORIZON))
            .map(|next| next.start)
    }

    /// The next instant strictly after `t` at which the window opens or closes, or `None` when it
    /// never changes again (a one-off window in the past, an always-open window).
    pub fn next_boundary_after(&self, t: Timestamp) -> Option<Timestamp> {
        let span = self.next_span(t, add_saturating(t, DEFAULT_HORIZON))?;
        if span.start > t {
            Some(span.start)
        } else {
            span.end
        }
    }

    /// Whether the window can never be open (an empty one-off, an empty set of days, a cron window
    /// with a duration that is not positive).
    pub(crate) fn never_open(&self) -> bool {
        match self {
            Self::ZonedDateTime { from, to } => to <= from,
            Self::LocalTime {
                days: Some(days), ..
            } => days.is_empty(),
            Self::Cron { duration, .. } => *duration <= SignedDuration::ZERO,
            Self::Excluding { window, .. } => window.never_open(),
            Self::ZonedTime { .. } | Self::LocalTime { .. } => false,
        }
    }

    /// Whether the window is open at every instant: a daily window of 24 hours on every day.
    pub(crate) fn always_open(&self) -> bool {
        match self {
            Self::ZonedTime { from, to, .. } => from == to,
            Self::LocalTime { from, to, days, .. } => {
                from == to && days.is_none_or(|days| days.len() == 7)
            }
            Self::ZonedDateTime { .. } | Self::Cron { .. } | Self::Excluding { .. } => false,
        }
    }

    /// The window under any excluded days.
    pub(crate) fn unexcluded(&self) -> &Self {
        match self {
            Self::Excluding { window, .. } => window.unexcluded(),
            other => other,
        }
    }

    /// How many times of day a cron window (excluded days aside) fires at; 0 for other kinds.
    pub(crate) fn times_of_day_count(&self) -> u64 {
        match self.unexcluded() {
            Self::Cron { schedule, .. } => {
                u64::try_from(schedule.times_of_day().len()).unwrap_or(u64::MAX)
            }
            _ => 0,
        }
    }

    /// The instants in `[from, until)` at which the offset of a cron window's zone changes (none
    /// for other kinds).
    pub(crate) fn zone_changes(&self, from: Timestamp, until: Timestamp) -> Vec<Timestamp> {
        match self.unexcluded() {
            Self::Cron { schedule, .. } => schedule
                .zone()
                .as_jiff()
                .following(from)
                .map(|change| {
                    crate::work::step();
                    change.timestamp()
                })
                .take_while(|at| *at < until)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether the window repeats every day or week for ever (its behaviour over any year repeats).
    pub(crate) fn is_daily(&self) -> bool {
        matches!(self, Self::ZonedTime { .. } | Self::LocalTime { .. })
    }

    /// The first open period that ends strictly after `cursor`. A period that keeps going past
    /// `until` (and past [`DEFAULT_HORIZON`] after `cursor`) without its end being found has
    /// `end: None`.
    pub(crate) fn next_span(&self, cursor: Timestamp, until: Timestamp) -> Option<Span> {
        crate::work::step();
        if self.never_open() {
            return None;
        }
        if self.always_open() {
            return Some(Span {
                start: Timestamp::MIN,
                end: None,
            });
        }
        match self {
            Self::ZonedDateTime { from, to } => (*to > cursor).then_some(Span {
                start: *from,
                end: Some(*to),
            }),
            Self::Cron { schedule, duration } => cron_next_span(schedule, *duration, cursor, until),
            Self::ZonedTime { .. } | Self::LocalTime { .. } => self.daily_next_span(cursor),
            Self::Excluding { window, days } => excluding_next_span(window, days, cursor, until),
        }
    }

    /// What the wall clock of the window's zone shows at `t` (daily kinds only).
    fn local_wall_clock(&self, t: Timestamp) -> Option<civil::DateTime> {
        match self {
            Self::ZonedTime { offset, .. } => fixed_wall_clock(*offset, t),
            Self::LocalTime { tz, .. } => wall_clock(tz, t),
            Self::ZonedDateTime { .. } | Self::Cron { .. } | Self::Excluding { .. } => None,
        }
    }

    /// The open interval of a daily window that starts on local day `day`, if it has one.
    fn daily_raw(&self, day: civil::Date) -> Option<Occurrence> {
        crate::work::step();
        match self {
            Self::ZonedTime { from, to, offset } => {
                let end_day = if to > from { day } else { day.tomorrow().ok()? };
                let start = at_offset(day.to_datetime(*from), *offset)?;
                let end = at_offset(end_day.to_datetime(*to), *offset)?;
                (end > start).then_some((start, end))
            }
            Self::LocalTime { from, to, tz, days } => {
                if days.is_some_and(|days| !days.contains(day.weekday())) {
                    return None;
                }
                let end_day = if to > from { day } else { day.tomorrow().ok()? };
                let start = resolve_local(tz, day.to_datetime(*from))?;
                let end = resolve_local(tz, end_day.to_datetime(*to))?;
                // A window entirely inside a spring-forward gap is empty that day.
                (end > start).then_some((start, end))
            }
            Self::ZonedDateTime { .. } | Self::Cron { .. } | Self::Excluding { .. } => None,
        }
    }

    /// [`Window::daily_raw`] of `day` when it ends after `t`, `None` otherwise; `wall` is what the
    /// zone's clock shows at `t`.
    ///
    /// Zone lookups are what a sweep spends its time on, so an interval whose wall-clock end the
    /// clock at `t` has already reached is dropped without any: wall-clock times map to instants
    /// in order, and `wall` maps to `t` (or, in the second pass of a fold, earlier), so that end
    /// is at or before `t`. The end is resolved before the start, which is then only resolved for
    /// an interval that is kept.
    fn daily_raw_ending_after(
        &self,
        day: civil::Date,
        t: Timestamp,
        wall: civil::DateTime,
    ) -> Option<Occurrence> {
        let Self::LocalTime { from, to, tz, days } = self else {
            return self.daily_raw(day).filter(|(_, end)| *end > t);
        };
        if days.is_some_and(|days| !days.contains(day.weekday())) {
            return None;
        }
        let end_day = if to > from { day } else { day.tomorrow().ok()? };
        let local_end = end_day.to_datetime(*to);
        if local_end <= wall {
            return None;
        }
        let end = resolve_local(tz, local_end)?;
        if end <= t {
            return None;
        }
        let start = resolve_local(tz, day.to_datetime(*from))?;
        (end > start).then_some((start, end))
    }

    /// [`Window::daily_raw`] of `day` when it starts at or before `end` (so it continues an open
    /// period ending at `end`), `None` otherwise. The end of `day`'s interval is only resolved
    /// when its start is close enough.
    fn daily_raw_starting_by(&self, day: civil::Date, end: Timestamp) -> Option<Occurrence> {
        let Self::LocalTime { from, to, tz, days } = self else {
            return self.daily_raw(day).filter(|(start, _)| *start <= end);
        };
        if days.is_some_and(|days| !days.contains(day.weekday())) {
            return None;
        }
        let end_day = if to > from { day } else { day.tomorrow().ok()? };
        let start = resolve_local(tz, day.to_datetime(*from))?;
        if start > end {
            return None;
        }
        let next_end = resolve_local(tz, end_day.to_datetime(*to))?;
        (next_end > start).then_some((start, next_end))
    }

    /// The local day whose daily interval contains `t`, with that interval.
    fn daily_raw_containing(&self, t: Timestamp) -> Option<(civil::Date, Occurrence)> {
        let wall = self.local_wall_clock(t)?;
        // An interval starts on its own day and lasts about a day at most: it started today,
        // yesterday or (around DST changes) the day before, or tomorrow when the clock went back past
        // midnight (Antarctica/Casey, 2010-03-05: 02:00 +11 back to 23:00 +08 the day before).
        let mut day = wall
            .date()
            .checked_sub(SignedDuration::from_hours(2 * 24))
            .ok()?;
        for _ in 0..4 {
            if let Some((start, end)) = self.daily_raw_ending_after(day, t, wall)
                && start <= t
            {
                return Some((day, (start, end)));
            }
            day = day.tomorrow().ok()?;
        }
        None
    }

    fn daily_next_span(&self, cursor: Timestamp) -> Option<Span> {
        let wall = self.local_wall_clock(cursor)?;
        let mut day = wall
            .date()
            .checked_sub(SignedDuration::from_hours(2 * 24))
            .ok()?;
        let mut found = None;
        for _ in 0..MAX_DAILY_SCAN {
            if let Some(occurrence) = self.daily_raw_ending_after(day, cursor, wall) {
                found = Some(occurrence);
                break;
            }
            day = day.tomorrow().ok()?;
        }
        let (start, mut end) = found?;
        for _ in 0..MAX_DAILY_CHAIN {
            let Some(next_day) = day.tomorrow().ok() else {
                return Some(Span {
                    start,
                    end: Some(end),
                });
            };
            match self.daily_raw_starting_by(next_day, end) {
                // Touching or overlapping: one open period.
                Some((_, next_end)) => {
                    end = end.max(next_end);
                    day = next_day;
                }
                _ => {
                    return Some(Span {
                        start,
                        end: Some(end),
                    });
                }
            }
        }
        Some(Span { start, end: None })
    }

    /// The exact start of the open period containing `t` (which must be open), or `None` when it
    /// began before `since` or the window is always open.
    fn start_of_open_period(&self, t: Timestamp, since: Timestamp) -> Option<Timestamp> {
        if self.always_open() {
            return None;
        }
        match self {
            Self::ZonedDateTime { from, .. } => Some(*from),
            Self::Excluding { window, days } => {
                let cut = days.last_end_at_or_before(t).filter(|cut| *cut >= since);
                match (window.start_of_open_period(t, since), cut) {
                    (Some(start), Some(cut)) => Some(start.max(cut)),
                    (start, cut) => start.or(cut),
                }
            }
            Self::Cron { schedule, duration } => {
                let mut start = schedule.last_fire_at_or_before(t)?;
                // As `cron_next_span` does forwards: a schedule firing every day that never waits
                // longer than `duration` chains every occurrence since the last change of the
                // zone's offset, so the walk jumps there (a minutely window would take half a
                // million steps back to `since`) and steps across the change.
                let chained = schedule
                    .longest_daily_gap()
                    .is_some_and(|gap| gap <= *duration);
                // Walk back over occurrences that reach (or touch) the current start, jumping to
                // the earliest one within `duration` before it.
                loop {
                    if chained {
                        let stop = schedule
                            .previous_offset_change_before(start)
                            .map_or(since, |change| change.max(since));
                        if let Some(jumped) = schedule
                            .first_fire_at_or_after(stop)
                            .filter(|jumped| *jumped < start)
                        {
                            start = jumped;
                        }
                    }
                    let reach = start.checked_sub(*duration).ok()?;
                    match schedule.first_fire_at_or_after(reach) {
                        Some(earlier) if earlier < start => {
                            start = earlier;
                            if start < since {
                                return None;
                            }
                        }
                        _ => return Some(start),
                    }
                }
            }
            Self::ZonedTime { .. } | Self::LocalTime { .. } => {
                let (mut day, (mut start, _)) = self.daily_raw_containing(t)?;
                for _ in 0..MAX_DAILY_CHAIN {
                    let Some(previous_day) = day.yesterday().ok() else {
                        return Some(start);
                    };
                    match self.daily_raw(previous_day) {
                        Some((previous_start, previous_end)) if previous_end >= start => {
                            start = previous_start;
                            day = previous_day;
                            if start < since {
                                return None;
                            }
                        }
                        _ => return Some(start),
                    }
                }
                None
            }
        }
    }
}

/// The first open period of a cron window that ends after `cursor`.
fn cron_next_span(
    schedule: &CronSchedule,
    duration: SignedDuration,
    cursor: Timestamp,
    until: Timestamp,
) -> Option<Span> {
    // The wall clock at `cursor` is looked up once, for both searches below.
    let wall = wall_clock(schedule.time_zone(), cursor);
    let covering = wall
        .and_then(|wall| schedule.last_fire_from(cursor, wall))
        .filter(|(fire, _)| {
            fire.checked_add(duration)
                .ok()
                .is_none_or(|end| end > cursor)
        });
    // The fire times after `start`, going on from the search that found it.
    let (start, mut later) = match covering {
        Some((fire, local)) => (fire, schedule.fire_times_from(fire, Some(local))),
        None => {
            let mut fires = schedule.fire_times_from(cursor, wall);
            (fires.next()?, fires)
        }
    };
    let Some(mut end) = start.checked_add(duration).ok() else {
        return Some(Span { start, end: None });
    };
    // Usually the next occurrence starts after this one ends: then the period is this occurrence
    // (the loop below would find the same after a search backwards from `end`, which costs more
    // zone lookups than going one fire time forwards).
    if later.next().is_none_or(|next| next > end) {
        return Some(Span {
            start,
            end: Some(end),
        });
    }
    let give_up_after = until.max(add_saturating(cursor, DEFAULT_HORIZON));
    // A schedule firing every day that never waits longer than `duration` keeps the period open
    // as long as its fire times are that close in elapsed time too: up to the next change of the
    // zone's offset (where a fall-back can stretch a wait by an hour), they are. The walk below
    // then jumps there instead of stepping one occurrence at a time (a minutely window would take
    // half a million steps to the horizon); around each change it steps as before.
    let chained = schedule
        .longest_daily_gap()
        .is_some_and(|gap| gap <= duration);
    // The latest occurrence at or before the current end decides whether the period goes on (an
    // occurrence starting exactly at the end touches it and continues it).
    while let Some(latest) = schedule.last_fire_at_or_before(end) {
        if chained {
            let stop = schedule
                .next_offset_change_after(latest)
                .map_or(give_up_after, |change| change.min(give_up_after));
            let jumped = stop
                .checked_sub(SignedDuration::from_nanos(1))
                .ok()
                .and_then(|before| schedule.last_fire_at_or_before(before))
                .filter(|last| *last > latest)
                .and_then(|last| last.checked_add(duration).ok())
                .filter(|jumped| *jumped > end);
            if let Some(jumped) = jumped {
                end = jumped;
                continue;
            }
        }
        match latest.checked_add(duration).ok() {
            Some(next_end) if next_end <= end => break,
            Some(next_end) if end <= give_up_after => end = next_end,
            _ => return Some(Span { start, end: None }),
        }
    }
    Some(Span {
        start,
        end: Some(end),
    })
}

/// Parses `HH:MM` (and `24:00` when `allow_midnight_end`).
fn parse_clock(text: &str, allow_midnight_end: bool) -> Result<civil::Time, ScheduleError> {
    clock(text, allow_midnight_end).ok_or_else(|| {
        ScheduleError::time_of_day(
            text,
            "expected a wall-clock time HH:MM from 00:00 to 23:59, such as 08:00 or 22:30",
        )
    })
}

fn clock(text: &str, allow_midnight_end: bool) -> Option<civil::Time> {
    let bytes = text.as_bytes();
    if bytes.len() != 5
        || bytes[2] != b':'
        || ![0, 1, 3, 4].iter().all(|i| bytes[*i].is_ascii_digit())
    {
        return None;
    }
    let hour = u32::from(bytes[0] - b'0') * 10 + u32::from(bytes[1] - b'0');
    let minute = u32::from(bytes[3] - b'0') * 10 + u32::from(bytes[4] - b'0');
    if allow_midnight_end && hour == 24 && minute == 0 {
        return Some(civil::Time::midnight());
    }
    civil::Time::new(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0).ok()
}

/// Parses `HH:MM` followed by `Z` or `+HH:MM` / `-HH:MM`.
fn parse_zoned_time(
    text: &str,
    allow_midnight_end: bool,
) -> Result<(civil::Time, Offset), ScheduleError> {
    let fail = || {
        ScheduleError::time_of_day(
            text,
            "expected HH:MM followed by a UTC offset, such as 16:00+05:30, 08:00-04:00 or 08:00Z",
        )
    };
    if !text.is_char_boundary(5.min(text.len())) || text.len() < 6 {
        return Err(fail());
    }
    let (time, offset) = text.split_at(5);
    let time = clock(time, allow_midnight_end).ok_or_else(fail)?;
    let offset = match offset {
        "Z" | "z" => Some(Offset::UTC),
        _ => {
            let sign = match offset.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return Err(fail()),
            };
            let hhmm = clock(&offset[1..], false).ok_or_else(fail)?;
            let seconds = i32::from(hhmm.hour()) * 3600 + i32::from(hhmm.minute()) * 60;
            Offset::from_seconds(sign * seconds).ok()
        }
    };
    Ok((time, offset.ok_or_else(fail)?))
}

fn parse_days<I>(days: I) -> Result<Weekdays, ScheduleError>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut set = Weekdays::EMPTY;
    let mut any = false;
    for day in days {
        let day = day.as_ref();
        let weekday = parse_weekday(day).ok_or_else(|| ScheduleError::Weekday(day.to_owned()))?;
        set.insert(weekday);
        any = true;
    }
    if any {
        Ok(set)
    } else {
        Err(ScheduleError::NoDays)
    }
}

/// How many open periods wholly inside excluded days one search passes over before it gives up
/// (each jump lands past an excluded run, so this is far more than any list of dates needs).
const MAX_EXCLUDED_SKIPS: usize = 10_000;

/// [`Window::next_span`] of `window` closed on `days`: its next period, cut at the edges of the
/// excluded days; a period wholly inside them is passed over.
fn excluding_next_span(
    window: &Window,
    days: &ExcludedDays,
    cursor: Timestamp,
    until: Timestamp,
) -> Option<Span> {
    let mut at = cursor;
    for _ in 0..MAX_EXCLUDED_SKIPS {
        let span = window.next_span(at, until)?;
        let exact = span.start > at;
        let mut from = if exact { span.start } else { at };
        let moved = match days.run_containing(from) {
            Some((_, end)) => {
                from = end;
                true
            }
            None => false,
        };
        if span.end.is_some_and(|end| from >= end) {
            // Wholly excluded from here: look on from the end of the excluded run.
            at = from;
            continue;
        }
        let start = match (moved, exact) {
            (true, _) => from,
            (false, true) => span.start,
            // Open at `at`: since the later of its own start and the last excluded day's end.
            (false, false) => days
                .last_end_at_or_before(at)
                .map_or(span.start, |cut| cut.max(span.start)),
        };
        let end = match days.next_start_after(from) {
            Some(cut) if span.end.is_none_or(|end| cut < end) => Some(cut),
            _ => span.end,
        };
        return Some(Span { start, end });
    }
    None
}

#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    //! The pruned walk against the straightforward one it replaced ([`reference`]), at many
    //! instants, most of them around DST changes.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ebb_testkit::zones::{DST_CHANGES, DST_ZONES, SKIPPED_DAY, SKIPPED_DAY_ZONE};
    use proptest::prelude::*;

    /// The property tests' zones, and Samoa's skipped day.
    fn zones() -> Vec<&'static str> {
        DST_ZONES.into_iter().chain([SKIPPED_DAY_ZONE]).collect()
    }

    /// Their DST changes, Samoa's skipped day, and a change of the next year.
    fn changes() -> Vec<&'static str> {
        DST_CHANGES
            .into_iter()
            .chain([SKIPPED_DAY, "2027-03-28T01:00:00Z"])
            .collect()
    }

    /// Instants within two days of a change, on five-minute steps and on odd seconds, or anywhere
    /// in 2026-2027.
    fn any_instant() -> impl Strategy<Value = Timestamp> {
        let near_change = (
            prop::sample::select(changes()),
            -48 * 12..48 * 12i64,
            prop::sample::select(vec![0i64, 1, 59, 299]),
        )
            .prop_map(|(change, steps, seconds)| {
                change.parse::<Timestamp>().unwrap()
                    + SignedDuration::from_mins(5 * steps)
                    + SignedDuration::from_secs(seconds)
            });
        let anywhere = (0i64..2 * 365 * 24 * 3600)
            .prop_map(|s| Timestamp::from_second(1_767_225_600 + s).ok().unwrap());
        prop_oneof![3 => near_change, 1 => anywhere]
    }

    fn quarter_hour() -> impl Strategy<Value = civil::Time> {
        (0i8..96).prop_map(|q| civil::Time::new(q / 4, (q % 4) * 15, 0, 0).unwrap())
    }

    fn any_window() -> impl Strategy<Value = Window> {
        let zone = || prop::sample::select(zones()).prop_map(|z| z.parse::<Zone>().unwrap());
        let local_time = (
            quarter_hour(),
            quarter_hour(),
            zone(),
            prop::option::of(0u8..128),
        )
            .prop_map(|(from, to, tz, days)| Window::LocalTime {
                from,
                to,
                tz,
                days: days.map(|bits| {
                    let mut set = Weekdays::EMPTY;
                    for i in 0..7i8 {
                        if bits & (1 << i) != 0 {
                            set.insert(civil::Weekday::from_monday_zero_offset(i).unwrap());
                        }
                    }
                    set
                }),
            });
        let zoned_time = (
            quarter_hour(),
            quarter_hour(),
            prop::sample::select(vec![-10 * 3600, 0, 5 * 3600 + 1800, 14 * 3600]),
        )
            .prop_map(|(from, to, offset)| Window::ZonedTime {
                from,
                to,
                offset: jiff::tz::Offset::from_seconds(offset).unwrap(),
            });
        let cron = (
            0u32..60,
            0u32..24,
            prop::sample::select(vec![
                "{m} {h} * * *",
                "{m} {h} * * 1-5",
                "{m} {h} * * 0,6",
                "*/20 {h} * * *",
                "*/15 * * * *",
                "{m} */3 * * *",
                "{m} 1-3 * * *",
                "0 {h} 13 * 5",
                "{m} {h} 1,15,31 * *",
            ]),
            zone(),
            prop::sample::select(vec![1i64, 5, 30, 60, 90, 180, 11 * 60, 24 * 60, 36 * 60]),
        )
            .prop_map(|(minute, hour, template, tz, minutes)| {
                let expression = template
                    .replace("{m}", &minute.to_string())
                    .replace("{h}", &hour.to_string());
                Window::Cron {
                    schedule: CronSchedule::parse(&expression, tz).unwrap(),
                    duration: SignedDuration::from_mins(minutes),
                }
            });
        prop_oneof![2 => local_time, 1 => zoned_time, 2 => cron]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn next_span_is_the_straightforward_walk(window in any_window(), t in any_instant()) {
            let until = add_saturating(t, DEFAULT_HORIZON);
            prop_assert_eq!(window.next_span(t, until), reference::next_span(&window, t, until));
            // Where the sweep goes next: the end of that span.
            if let Some(end) = window.next_span(t, until).and_then(|span| span.end) {
                prop_assert_eq!(
                    window.next_span(end, until),
                    reference::next_span(&window, end, until)
                );
            }
        }

        #[test]
        fn contains_is_the_straightforward_walk(window in any_window(), t in any_instant()) {
            prop_assert_eq!(window.contains(t), reference::contains(&window, t));
        }
    }

    /// Every five minutes for two days around each change, every window kind in every zone.
    #[test]
    fn agrees_with_the_straightforward_walk_through_every_change() {
        let windows = [
            ("02:30", "03:30"),
            ("22:00", "06:00"),
            ("08:00", "18:00"),
            ("01:00", "02:00"),
            ("02:15", "02:45"),
            ("03:00", "03:00"),
        ];
        let crons = [
            ("30 2 * * *", "90m"),
            ("*/20 1-3 * * *", "20m"),
            ("0 20 * * 1-5", "11h"),
            ("0 8 * * 0,6", "12h"),
            ("*/15 * * * *", "5m"),
            ("30 7 * * 1-5", "90m"),
        ];
        for zone in zones() {
            let mut all = Vec::new();
            for (from, to) in windows {
                all.push(Window::local_time(from, to, Some(zone), None::<&[&str]>).unwrap());
                all.push(Window::local_time(from, to, Some(zone), Some(["Sat", "Sun"])).unwrap());
            }
            for (expression, duration) in crons {
                all.push(Window::cron(expression, duration, Some(zone)).unwrap());
            }
            for change in changes() {
                let change: Timestamp = change.parse().unwrap();
                for step in -24 * 12..24 * 12 {
                    let t = change + SignedDuration::from_mins(5 * step);
                    let until = add_saturating(t, DEFAULT_HORIZON);
                    for window in &all {
                        assert_eq!(
                            window.next_span(t, until),
                            reference::next_span(window, t, until),
                            "{window:?} at {t}"
                        );
                        assert_eq!(
                            window.contains(t),
                            reference::contains(window, t),
                            "{window:?} at {t}"
                        );
                    }
                }
            }
        }
    }
}
