//! Standard five-field cron expressions, as in a Kubernetes CronJob, evaluated in an IANA zone.
//!
//! The `cron` crate parses the fields (lists, ranges, steps, names) into the sets of minutes, hours,
//! days of month, months and weekdays that match. Fire times are then computed here, on wall-clock
//! (naive local) times, and turned into instants by the crate's DST rules; the `cron` crate's own
//! iteration is not used because it differs from those rules (checked against cron 0.17):
//! - it skips a fire time inside a spring-forward gap (`30 2 * * *` does not fire at all that day);
//! - it fires twice for a fire time inside a fall-back fold;
//! - it requires day-of-month AND day-of-week when both are restricted, where standard cron (Vixie,
//!   and Kubernetes through robfig/cron) fires when EITHER matches.

use std::fmt;
use std::str::FromStr;

use cron::TimeUnitSpec;
use jiff::{SignedDuration, Timestamp, civil};

use crate::ScheduleError;
use crate::weekday::parse_weekday;
use crate::zone::{Zone, resolve_local, wall_clock};

const FIELD_NAMES: [&str; 5] = ["minute", "hour", "day-of-month", "month", "day-of-week"];
const FIELD_VALUES: [&str; 5] = [
    "0-59",
    "0-23",
    "1-31",
    "1-12 or JAN-DEC",
    "0-7 (0 and 7 are Sunday) or SUN-SAT",
];
const WEEKDAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Upper bound on the days (or skipped months) looked at to find the next matching day. A valid
/// expression matches at least once every eight years (`0 0 29 2 *`: about 100 months skipped and
/// 8 * 29 days looked at), so this bound is never reached by one.
const MAX_DAY_SCAN: u32 = 5_000;
/// Upper bound on fire times skipped while iterating: those inside a fold that map before the
/// starting instant, and duplicates inside a gap. A fold or gap lasts at most a few hours.
const MAX_SKIPPED_FIRES: u32 = 10_000;

/// A standard five-field cron expression in an IANA time zone.
///
/// # Dialect
/// The dialect of a Kubernetes CronJob (robfig/cron's standard parser), with `7` also accepted as
/// Sunday:
/// - fields `minute hour day-of-month month day-of-week`; six- or seven-field expressions (seconds,
///   years) are rejected;
/// - `*`, lists `1,15`, ranges `1-5`, steps `*/15`, `1-30/5` and `5/15` (from 5 to the end of the
///   field); `?` means `*` in the two day fields;
/// - months `1`-`12` or `JAN`..`DEC`; days of the week `0`-`7` with `0` and `7` Sunday, or
///   `SUN`..`SAT`; names in any case. A range may end on Sunday (`5-7`, `FRI-SUN`);
/// - `@hourly`, `@daily`, `@midnight`, `@weekly` (Sunday), `@monthly`, `@yearly`, `@annually`;
/// - when both day-of-month and day-of-week are restricted, a day matches if EITHER matches
///   (`0 0 13 * 5`: every 13th and every Friday). A field counts as unrestricted when one of its
///   list items is `*` or `?` without a step greater than 1, as in Kubernetes (`*/2` restricts).
///
/// Fire times follow the DST rules of the crate documentation: a time inside a spring-forward gap
/// fires once, when the gap ends; a time inside a fall-back fold fires once, at its first occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSchedule {
    expression: String,
    tz: Zone,
    /// Wall-clock times of day that match, ascending, never empty.
    times: Vec<civil::Time>,
    days: DayRule,
}

/// Which calendar days match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DayRule {
    /// Bit `m` set for month `m` (1-12).
    months: u16,
    /// Bit `d` set for day of month `d` (1-31).
    days_of_month: u32,
    /// Bit `w` set for the weekday `w` days from Sunday (0-6).
    days_of_week: u8,
    /// Both day fields are restricted: a day matches if either matches.
    either_day: bool,
}

impl DayRule {
    /// Whether every calendar day matches (no month, day-of-month or day-of-week restriction).
    fn every_day(&self) -> bool {
        const ALL_MONTHS: u16 = 0b1_1111_1111_1110;
        const ALL_DAYS_OF_MONTH: u32 = 0xFFFF_FFFE;
        self.months == ALL_MONTHS
            && !self.either_day
            && self.days_of_month == ALL_DAYS_OF_MONTH
            && self.days_of_week == 0x7F
    }

    fn matches(&self, date: civil::Date) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        // When a field is unrestricted its set is full, so AND leaves the other field's answer.
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// Whether any day at all can match; false only for a day-of-month that no selected month has.
    fn ever_matches(&self) -> bool {
        if self.either_day {
            // Every month has every weekday.
            return self.months != 0 && self.days_of_week != 0;
        }
        const LONGEST: [u32; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        (1..=12u32).any(|month| {
            self.months & (1 << month) != 0
                && (1..=LONGEST[month as usize]).any(|day| self.days_of_month & (1 << day) != 0)
        }) && self.days_of_week != 0
    }

    /// The first matching day strictly after `date`.
    fn next_after(&self, date: civil::Date) -> Option<civil::Date> {
        let mut day = date;
        for _ in 0..MAX_DAY_SCAN {
            crate::work::step();
            let next = day.tomorrow().ok()?;
            if self.months & (1 << next.month()) == 0 {
                // Skip the whole month: continue from its last day.
                day = next.last_of_month();
                continue;
            }
            if self.matches(next) {
                return Some(next);
            }
            day = next;
        }
        None
    }

    /// The last matching day strictly before `date`.
    fn prev_before(&self, date: civil::Date) -> Option<civil::Date> {
        let mut day = date;
        for _ in 0..MAX_DAY_SCAN {
            crate::work::step();
            let prev = day.yesterday().ok()?;
            if self.months & (1 << prev.month()) == 0 {
                day = prev.first_of_month();
                continue;
            }
            if self.matches(prev) {
                return Some(prev);
            }
            day = prev;
        }
        None
    }
}

impl CronSchedule {
    /// The longest wall-clock wait between two consecutive fire times, for a schedule that fires
    /// every day (`None` otherwise: then a wait can last days).
    pub(crate) fn longest_daily_gap(&self) -> Option<SignedDuration> {
        if !self.days.every_day() {
            return None;
        }
        let (first, last) = (self.times.first()?, self.times.last()?);
        let wrap = SignedDuration::from_hours(24) - last.duration_since(*first);
        let within = self
            .times
            .windows(2)
            .map(|pair| pair[1].duration_since(pair[0]))
            .max()
            .unwrap_or(SignedDuration::ZERO);
        Some(within.max(wrap))
    }

    /// The first instant after `t` at which the zone's UTC offset changes, if any.
    pub(crate) fn next_offset_change_after(&self, t: Timestamp) -> Option<Timestamp> {
        self.tz
            .as_jiff()
            .following(t)
            .next()
            .map(|transition| transition.timestamp())
    }

    /// The last instant before `t` at which the zone's UTC offset changed, if any.
    pub(crate) fn previous_offset_change_before(&self, t: Timestamp) -> Option<Timestamp> {
        self.tz
            .as_jiff()
            .preceding(t)
            .next()
            .map(|transition| transition.timestamp())
    }

    /// The zone the schedule is read in.
    /// The wall-clock times of day it fires at (on the days it fires), in order.
    pub(crate) fn times_of_day(&self) -> &[civil::Time] {
        &self.times
    }

    pub(crate) fn zone(&self) -> &Zone {
        &self.tz
    }

    /// Parses a standard five-field cron expression (see the type's documentation for the dialect)
    /// whose wall-clock times are read in `tz`.
    ///
    /// # Errors
    /// [`ScheduleError::Cron`] naming the expression and, where it can, the field at fault.
    pub fn parse(expression: &str, tz: Zone) -> Result<Self, ScheduleError> {
        let fail = |reason: String| ScheduleError::cron(expression, reason);
        let fields = standard_fields(expression).map_err(fail)?;
        for (index, field) in fields.iter().enumerate() {
            check_characters(index, field).map_err(fail)?;
        }
        let translated = to_cron_crate_dialect(&fields).map_err(fail)?;
        let parsed = cron::Schedule::from_str(&translated)
            .map_err(|_| fail(describe_invalid_field(&fields)))?;

        let mut times = Vec::new();
        for hour in parsed.hours().iter() {
            for minute in parsed.minutes().iter() {
                let (Ok(hour), Ok(minute)) = (i8::try_from(hour), i8::try_from(minute)) else {
                    continue;
                };
                times.extend(civil::Time::new(hour, minute, 0, 0).ok());
            }
        }
        let days = DayRule {
            months: parsed
                .months()
                .iter()
                .filter(|m| *m <= 12)
                .fold(0, |set, m| set | (1 << m)),
            days_of_month: parsed
                .days_of_month()
                .iter()
                .filter(|d| *d <= 31)
                .fold(0, |set, d| set | (1 << d)),
            // The cron crate numbers weekdays 1 = Sunday .. 7 = Saturday.
            days_of_week: parsed
                .days_of_week()
                .iter()
                .filter(|w| (1..=7).contains(w))
                .fold(0, |set, w| set | (1 << (w - 1))),
            either_day: !is_unrestricted(fields[2]) && !is_unrestricted(fields[4]),
        };
        if times.is_empty() {
            return Err(fail("it matches no time of day".into()));
        }
        if !days.ever_matches() {
            return Err(fail(format!(
                "day-of-month {:?} never occurs in month {:?}",
                fields[2], fields[3]
            )));
        }
        Ok(Self {
            expression: expression.to_owned(),
            tz,
            times,
            days,
        })
    }

    /// The expression as written.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The zone whose wall clock the expression is read in.
    pub fn time_zone(&self) -> &Zone {
        &self.tz
    }

    /// Fire times strictly after `after`, ascending, without duplicates. Ends only at the end of
    /// representable time.
    pub fn fire_times_after(&self, after: Timestamp) -> impl Iterator<Item = Timestamp> + '_ {
        self.fire_times_from(after, wall_clock(&self.tz, after))
    }

    /// [`CronSchedule::fire_times_after`] from `after` and what the wall clock shows at `after`
    /// (`wall`, already known to the caller: a zone lookup saved), or from a fire time `after`
    /// and the wall-clock time it fired for (which maps to it).
    pub(crate) fn fire_times_from(
        &self,
        after: Timestamp,
        wall: Option<civil::DateTime>,
    ) -> FireTimes<'_> {
        FireTimes {
            schedule: self,
            // Every fire time whose wall-clock time is at or before `wall` maps at or before
            // `after` (the wall-clock to instant mapping never decreases), so start there.
            cursor: wall,
            after,
        }
    }

    /// The last fire time at or before `t`, if any.
    pub fn last_fire_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let wall = wall_clock(&self.tz, t)?;
        self.last_fire_from(t, wall).map(|(fire, _)| fire)
    }

    /// [`CronSchedule::last_fire_at_or_before`] from `t` and what the wall clock shows at `t`,
    /// with the wall-clock time the fire is for (to go on with [`CronSchedule::fire_times_from`]).
    pub(crate) fn last_fire_from(
        &self,
        t: Timestamp,
        wall: civil::DateTime,
    ) -> Option<(Timestamp, civil::DateTime)> {
        // Start from a wall-clock time that maps strictly after `t`; every earlier wall-clock time
        // maps no later, so iterating backwards from there misses nothing. Inside a fold the wall
        // clock just after `t` may map to the first pass, before `t`: step past the fold.
        let mut end = wall.checked_add(SignedDuration::from_secs(1)).ok()?;
        for _ in 0..4 {
            match resolve_local(&self.tz, end) {
                Some(instant) if instant > t => break,
                _ => end = end.checked_add(SignedDuration::from_hours(1)).ok()?,
            }
        }
        let mut cursor = end;
        for _ in 0..MAX_SKIPPED_FIRES {
            let local = self.prev_local_before(cursor)?;
            cursor = local;
            let instant = resolve_local(&self.tz, local)?;
            if instant <= t {
                return Some((instant, local));
            }
        }
        None
    }

    /// The first fire time at or after `t`, if any.
    pub fn first_fire_at_or_after(&self, t: Timestamp) -> Option<Timestamp> {
        let just_before = t.checked_sub(SignedDuration::from_nanos(1)).ok()?;
        self.fire_times_after(just_before).next()
    }

    /// The first matching wall-clock time strictly after `local`.
    fn next_local_after(&self, local: civil::DateTime) -> Option<civil::DateTime> {
        crate::work::step();
        let date = local.date();
        if self.days.matches(date) {
            let index = self.times.partition_point(|time| *time <= local.time());
            if let Some(time) = self.times.get(index) {
                return Some(date.to_datetime(*time));
            }
        }
        let first = *self.times.first()?;
        Some(self.days.next_after(date)?.to_datetime(first))
    }

    /// The last matching wall-clock time strictly before `local`.
    fn prev_local_before(&self, local: civil::DateTime) -> Option<civil::DateTime> {
        crate::work::step();
        let date = local.date();
        if self.days.matches(date) {
            let index = self.times.partition_point(|time| *time < local.time());
            if let Some(time) = index.checked_sub(1).and_then(|i| self.times.get(i)) {
                return Some(date.to_datetime(*time));
            }
        }
        let last = *self.times.last()?;
        Some(self.days.prev_before(date)?.to_datetime(last))
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.expression, self.tz)
    }
}

/// Fire times in order (see [`CronSchedule::fire_times_from`]).
pub(crate) struct FireTimes<'a> {
    schedule: &'a CronSchedule,
    cursor: Option<civil::DateTime>,
    /// Fire times at or before this are skipped: the start, then the last one returned (several
    /// wall-clock times inside one gap map to the same instant and fire once).
    after: Timestamp,
}

impl Iterator for FireTimes<'_> {
    type Item = Timestamp;

    fn next(&mut self) -> Option<Timestamp> {
        for _ in 0..MAX_SKIPPED_FIRES {
            let local = self.cursor.and_then(|c| self.schedule.next_local_after(c));
            self.cursor = local;
            let instant = resolve_local(&self.schedule.tz, local?);
            let Some(instant) = instant else {
                self.cursor = None;
                return None;
            };
            if instant > self.after {
                self.after = instant;
                return Some(instant);
            }
        }
        self.cursor = None;
        None
    }
}

/// Splits a standard expression into its five fields, expanding the `@` macros.
fn standard_fields(expression: &str) -> Result<[&str; 5], String> {
    let trimmed = expression.trim();
    if let Some(name) = trimmed.strip_prefix('@') {
        let expanded = match name.to_ascii_lowercase().as_str() {
            "hourly" => "0 * * * *",
            "daily" | "midnight" => "0 0 * * *",
            "weekly" => "0 0 * * 0",
            "monthly" => "0 0 1 * *",
            "yearly" | "annually" => "0 0 1 1 *",
            _ => {
                return Err(format!(
                    "unknown macro @{name}; use @hourly, @daily, @midnight, @weekly, @monthly, \
                     @yearly or @annually, or five fields"
                ));
            }
        };
        return standard_fields(expanded);
    }
    if trimmed.starts_with("TZ=") || trimmed.starts_with("CRON_TZ=") {
        return Err(
            "a time zone prefix is not supported here; set the time zone separately".into(),
        );
    }
    let fields: Vec<&str> = trimmed.split_whitespace().collect();
    match <[&str; 5]>::try_from(fields.as_slice()) {
        Ok(five) => Ok(five),
        Err(_) if fields.is_empty() => Err(
            "it is empty; expected five fields: minute hour day-of-month month day-of-week".into(),
        ),
        Err(_) if fields.len() == 6 || fields.len() == 7 => Err(format!(
            "expected five fields (minute hour day-of-month month day-of-week), found {}: \
             seconds and years fields are not supported",
            fields.len()
        )),
        Err(_) => Err(format!(
            "expected five fields (minute hour day-of-month month day-of-week), found {}",
            fields.len()
        )),
    }
}

fn check_characters(index: usize, field: &str) -> Result<(), String> {
    let day_field = index == 2 || index == 4;
    let named_field = index == 3 || index == 4;
    let allowed = |c: char| {
        c.is_ascii_digit()
            || matches!(c, '*' | ',' | '-' | '/')
            || (c == '?' && day_field)
            || (c.is_ascii_alphabetic() && named_field)
    };
    match field.chars().find(|c| !allowed(*c)) {
        None => Ok(()),
        Some(c) => Err(format!(
            "the {} field {field:?} contains {c:?}; {}",
            FIELD_NAMES[index],
            field_syntax(index)
        )),
    }
}

fn field_syntax(index: usize) -> String {
    format!(
        "write values {} as *, lists (1,5), ranges (1-5) or steps (*/15, 1-30/5)",
        FIELD_VALUES[index]
    )
}

/// Names the first field the `cron` crate rejects on its own (its messages quote the translated,
/// six-field text, which would confuse a user).
fn describe_invalid_field(fields: &[&str; 5]) -> String {
    for index in 0..4 {
        let mut alone = ["0", "*", "*", "*", "*", "*"];
        alone[index + 1] = fields[index];
        if cron::Schedule::from_str(&alone.join(" ")).is_err() {
            return format!(
                "the {} field {:?} is not valid: {}",
                FIELD_NAMES[index],
                fields[index],
                field_syntax(index)
            );
        }
    }
    "the fields are not valid together".into()
}

/// Whether a day field is unrestricted in the Kubernetes (robfig/cron) sense: one of its list items
/// is `*` or `?` with no step or a step of 1. `*/2` restricts.
fn is_unrestricted(field: &str) -> bool {
    field.split(',').any(|item| {
        let (range, step) = item.split_once('/').unwrap_or((item, "1"));
        (range == "*" || range == "?") && step.parse::<u32>() == Ok(1)
    })
}

/// Translates a standard five-field expression into the dialect of the `cron` crate. This is the
/// only place where the two dialects meet:
/// - the crate wants a seconds field first: `0` is prepended, so fires fall on the minute;
/// - the crate numbers weekdays 1 = Sunday .. 7 = Saturday where standard cron has 0 (or 7) =
///   Sunday .. 6 = Saturday. The day-of-week field is expanded into the set of days it names and
///   written back as names (`MON,WED,FRI`), or `*` for all seven. Names mean the same in both
///   dialects, and expanding avoids ranges and steps that would wrap in one numbering but not the
///   other (`5-7` is Friday to Sunday; `*/2` is Sunday, Tuesday, Thursday, Saturday).
///
/// Minute, hour, day-of-month and month mean the same in both dialects and pass through unchanged.
pub(crate) fn to_cron_crate_dialect(fields: &[&str; 5]) -> Result<String, String> {
    let mask = day_of_week_set(fields[4]).map_err(|reason| {
        format!(
            "the day-of-week field {:?} is not valid: {reason}",
            fields[4]
        )
    })?;
    let day_of_week = if mask == 0x7f {
        "*".to_owned()
    } else {
        (0..7)
            .filter(|day| mask & (1 << day) != 0)
            .map(|day| WEEKDAY_NAMES[day])
            .collect::<Vec<_>>()
            .join(",")
    };
    Ok(format!(
        "0 {} {} {} {} {day_of_week}",
        fields[0], fields[1], fields[2], fields[3]
    ))
}

/// The days a standard day-of-week field names, as bits `w` days from Sunday.
fn day_of_week_set(field: &str) -> Result<u8, String> {
    let mut set = 0u8;
    for item in field.split(',') {
        if item.is_empty() {
            return Err("a list item is empty".into());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(parse_step(step)?)),
            None => (item, None),
        };
        let (first, last) = if range == "*" || range == "?" {
            (0, 6)
        } else if let Some((first, last)) = range.split_once('-') {
            let first = weekday_number(first)?;
            let mut last = weekday_number(last)?;
            if last == 0 && first > 0 {
                // A range may end on Sunday written as 0 or SUN: `FRI-SUN` is `5-7`.
                last = 7;
            }
            (first, last)
        } else {
            let day = weekday_number(range)?;
            // `N/step` runs from N to the end of the week, as in Kubernetes.
            (day, if step.is_some() { day.max(6) } else { day })
        };
        if first > last {
            return Err(format!("the range {range:?} runs backwards"));
        }
        let mut day = first;
        while day <= last {
            set |= 1 << (day % 7);
            match day.checked_add(step.unwrap_or(1)) {
                Some(next) => day = next,
                None => break,
            }
        }
    }
    Ok(set)
}

fn parse_step(step: &str) -> Result<u32, String> {
    match step.parse::<u32>() {
        Ok(0) => Err("a step must be at least 1".into()),
        Ok(step) => Ok(step),
        Err(_) => Err(format!(
            "{step:?} is not a step; write a whole number such as */2"
        )),
    }
}

fn weekday_number(text: &str) -> Result<u32, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<u32>() {
            Ok(day) if day <= 7 => Ok(day),
            _ => Err(format!(
                "{text:?} is not a day of the week: use 0-7 (0 and 7 are Sunday) or SUN-SAT"
            )),
        };
    }
    parse_weekday(text)
        .and_then(|day| u32::try_from(day.to_sunday_zero_offset()).ok())
        .ok_or_else(|| {
            format!("{text:?} is not a day of the week: use 0-7 (0 and 7 are Sunday) or SUN-SAT")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn zone(name: &str) -> Zone {
        crate::parse_time_zone(name).unwrap()
    }
    use ebb_testkit::utc;

    fn fields(expression: &str) -> [&str; 5] {
        standard_fields(expression).unwrap()
    }

    fn fires(expression: &str, tz: &Zone, after: &str, count: usize) -> Vec<String> {
        CronSchedule::parse(expression, tz.clone())
            .unwrap()
            .fire_times_after(utc(after))
            .take(count)
            .map(|t| t.to_string())
            .collect()
    }

    #[test]
    fn translation_table() {
        let cases = [
            ("0 8 * * 1-5", "0 0 8 * * MON,TUE,WED,THU,FRI"),
            ("0 0 * * 0", "0 0 0 * * SUN"),
            ("0 0 * * 7", "0 0 0 * * SUN"),
            ("0 0 * * 5-7", "0 0 0 * * SUN,FRI,SAT"),
            ("0 0 * * 0-6", "0 0 0 * * *"),
            ("0 0 * * 0-7", "0 0 0 * * *"),
            ("0 0 * * 1-7", "0 0 0 * * *"),
            ("*/15 * * * *", "0 */15 * * * *"),
            ("0 0 * * */2", "0 0 0 * * SUN,TUE,THU,SAT"),
            ("0 0 * * 1-5/2", "0 0 0 * * MON,WED,FRI"),
            ("0 0 * * 1/2", "0 0 0 * * MON,WED,FRI"),
            ("0 0 * * 0-7/3", "0 0 0 * * SUN,WED,SAT"),
            ("0 0 * * mon-fri", "0 0 0 * * MON,TUE,WED,THU,FRI"),
            ("0 0 * * MON,wed,Fri", "0 0 0 * * MON,WED,FRI"),
            ("0 0 * * FRI-SUN", "0 0 0 * * SUN,FRI,SAT"),
            ("0 0 * * SUN-SAT", "0 0 0 * * *"),
            ("0 0 * * SUN", "0 0 0 * * SUN"),
            ("0 0 * * sunday,7", "0 0 0 * * SUN"),
            ("0 0 * * 6,0", "0 0 0 * * SUN,SAT"),
            ("0 0 * * ?", "0 0 0 * * *"),
            ("30 2 1,15 JAN-MAR *", "0 30 2 1,15 JAN-MAR *"),
        ];
        for (standard, crate_dialect) in cases {
            assert_eq!(
                to_cron_crate_dialect(&fields(standard)).unwrap(),
                crate_dialect,
                "{standard}"
            );
        }
    }

    #[test]
    fn day_of_week_translation_fires_on_the_right_days() {
        // 2026-06-01 is a Monday. Each expression fires at midnight UTC; list the weekdays of
        // the first fourteen fires.
        let weekdays = |expression: &str| -> Vec<jiff::civil::Weekday> {
            CronSchedule::parse(expression, Zone::utc())
                .unwrap()
                .fire_times_after(utc("2026-05-31T12:00:00Z"))
                .take(14)
                .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).weekday())
                .collect()
        };
        use jiff::civil::Weekday::{
            Friday as Fri, Monday as Mon, Saturday as Sat, Sunday as Sun, Thursday as Thu,
            Tuesday as Tue, Wednesday as Wed,
        };
        let monday_to_friday = weekdays("0 8 * * 1-5");
        assert!(monday_to_friday.iter().all(|d| ![Sat, Sun].contains(d)));
        assert_eq!(&monday_to_friday[..6], &[Mon, Tue, Wed, Thu, Fri, Mon]);
        assert!(weekdays("0 0 * * 0").iter().all(|d| *d == Sun));
        assert!(weekdays("0 0 * * 7").iter().all(|d| *d == Sun));
        assert!(weekdays("0 0 * * SUN").iter().all(|d| *d == Sun));
        assert_eq!(&weekdays("0 0 * * 5-7")[..4], &[Fri, Sat, Sun, Fri]);
        assert_eq!(&weekdays("0 0 * * FRI-SUN")[..4], &[Fri, Sat, Sun, Fri]);
        assert_eq!(&weekdays("0 0 * * 6")[..2], &[Sat, Sat]);
        assert_eq!(weekdays("0 0 * * *").len(), 14);
        assert_eq!(
            &weekdays("0 0 * * 0-6")[..7],
            &[Mon, Tue, Wed, Thu, Fri, Sat, Sun]
        );
        assert_eq!(&weekdays("0 0 * * */2")[..4], &[Tue, Thu, Sat, Sun]);
        assert_eq!(&weekdays("0 0 * * 1-5/2")[..4], &[Mon, Wed, Fri, Mon]);
    }

    #[test]
    fn minute_steps_and_macros() {
        assert_eq!(
            fires("*/15 * * * *", &Zone::utc(), "2026-06-01T10:07:00Z", 3),
            [
                "2026-06-01T10:15:00Z",
                "2026-06-01T10:30:00Z",
                "2026-06-01T10:45:00Z"
            ]
        );
        assert_eq!(
            fires("5/20 * * * *", &Zone::utc(), "2026-06-01T10:07:00Z", 3),
            [
                "2026-06-01T10:25:00Z",
                "2026-06-01T10:45:00Z",
                "2026-06-01T11:05:00Z"
            ]
        );
        let after = "2026-06-03T10:07:00Z"; // a Wednesday
        let first = |expression| fires(expression, &Zone::utc(), after, 1)[0].clone();
        assert_eq!(first("@hourly"), "2026-06-03T11:00:00Z");
        assert_eq!(first("@daily"), "2026-06-04T00:00:00Z");
        assert_eq!(first("@midnight"), "2026-06-04T00:00:00Z");
        assert_eq!(first("@weekly"), "2026-06-07T00:00:00Z");
        assert_eq!(first("@monthly"), "2026-07-01T00:00:00Z");
        assert_eq!(first("@yearly"), "2027-01-01T00:00:00Z");
        assert_eq!(first("@annually"), "2027-01-01T00:00:00Z");
        assert_eq!(first("@DAILY"), "2026-06-04T00:00:00Z");
        assert_eq!(first("0 0 1 jan *"), "2027-01-01T00:00:00Z");
        assert_eq!(first("0 0 1 JUN-AUG *"), "2026-07-01T00:00:00Z");
    }

    #[test]
    fn either_day_field_matches_when_both_are_restricted() {
        // 2026: the 13th of February and March are Fridays, November 13th too. Fridays in
        // between fire as well: every 13th OR every Friday.
        assert_eq!(
            fires("0 0 13 * 5", &Zone::utc(), "2026-02-01T00:00:00Z", 4),
            [
                "2026-02-06T00:00:00Z",
                "2026-02-13T00:00:00Z",
                "2026-02-20T00:00:00Z",
                "2026-02-27T00:00:00Z"
            ]
        );
        // The 13th of April 2026 is a Monday: it fires on the 13th and on Fridays around it.
        assert_eq!(
            fires("0 0 13 * 5", &Zone::utc(), "2026-04-09T00:00:00Z", 3),
            [
                "2026-04-10T00:00:00Z",
                "2026-04-13T00:00:00Z",
                "2026-04-17T00:00:00Z"
            ]
        );
        // One field unrestricted: the other decides alone.
        assert_eq!(
            fires("0 0 13 * *", &Zone::utc(), "2026-04-09T00:00:00Z", 2),
            ["2026-04-13T00:00:00Z", "2026-05-13T00:00:00Z"]
        );
        assert_eq!(
            fires("0 0 * * 5", &Zone::utc(), "2026-04-09T00:00:00Z", 2),
            ["2026-04-10T00:00:00Z", "2026-04-17T00:00:00Z"]
        );
        // `*/2` restricts (Kubernetes): odd days OR Mondays.
        assert_eq!(
            fires("0 0 */2 * 1", &Zone::utc(), "2026-06-01T12:00:00Z", 4),
            [
                "2026-06-03T00:00:00Z",
                "2026-06-05T00:00:00Z",
                "2026-06-07T00:00:00Z",
                "2026-06-08T00:00:00Z"
            ]
        );
        // `?` and `*/1` do not restrict: Mondays only.
        for expression in ["0 0 ? * 1", "0 0 */1 * 1", "0 0 *,3 * 1"] {
            assert_eq!(
                fires(expression, &Zone::utc(), "2026-06-01T12:00:00Z", 2),
                ["2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z"],
                "{expression}"
            );
        }
    }

    #[test]
    fn month_ends_and_leap_days() {
        assert_eq!(
            fires("0 12 31 * *", &Zone::utc(), "2026-01-31T12:00:00Z", 3),
            [
                "2026-03-31T12:00:00Z",
                "2026-05-31T12:00:00Z",
                "2026-07-31T12:00:00Z"
            ]
        );
        assert_eq!(
            fires("0 0 29 2 *", &Zone::utc(), "2026-01-01T00:00:00Z", 3),
            [
                "2028-02-29T00:00:00Z",
                "2032-02-29T00:00:00Z",
                "2036-02-29T00:00:00Z"
            ]
        );
        // 2100 is not a leap year: eight years between leap days.
        assert_eq!(
            fires("0 0 29 2 *", &Zone::utc(), "2096-03-01T00:00:00Z", 1),
            ["2104-02-29T00:00:00Z"]
        );
        let schedule = CronSchedule::parse("0 0 29 2 *", Zone::utc()).unwrap();
        assert_eq!(
            schedule.last_fire_at_or_before(utc("2031-06-01T00:00:00Z")),
            Some(utc("2028-02-29T00:00:00Z"))
        );
    }

    #[test]
    fn fire_times_are_strictly_after_and_last_fire_is_at_or_before() {
        let schedule = CronSchedule::parse("0 8 * * *", Zone::utc()).unwrap();
        let eight = utc("2026-06-01T08:00:00Z");
        assert_eq!(
            schedule.fire_times_after(eight).next(),
            Some(utc("2026-06-02T08:00:00Z"))
        );
        assert_eq!(schedule.last_fire_at_or_before(eight), Some(eight));
        assert_eq!(
            schedule.last_fire_at_or_before(utc("2026-06-01T07:59:59Z")),
            Some(utc("2026-05-31T08:00:00Z"))
        );
        assert_eq!(schedule.first_fire_at_or_after(eight), Some(eight));
    }

    #[test]
    fn spring_forward_gap_fires_once_at_the_end_of_the_gap() {
        let zurich = zone("Europe/Zurich");
        // 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z).
        assert_eq!(
            fires("30 2 * * *", &zurich, "2026-03-28T00:00:00Z", 3),
            [
                "2026-03-28T01:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-30T00:30:00Z"
            ]
        );
        // Several times inside the gap, and 03:00 itself, fire once at 03:00 CEST.
        assert_eq!(
            fires("*/20 2-3 * * *", &zurich, "2026-03-29T00:00:00Z", 4),
            [
                "2026-03-29T01:00:00Z",
                "2026-03-29T01:20:00Z",
                "2026-03-29T01:40:00Z",
                "2026-03-30T00:00:00Z"
            ]
        );
        let new_york = zone("America/New_York");
        // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z).
        assert_eq!(
            fires("30 2 * * *", &new_york, "2026-03-07T00:00:00Z", 3),
            [
                "2026-03-07T07:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-09T06:30:00Z"
            ]
        );
        // Sydney springs forward 2026-10-04 02:00 AEST -> 03:00 AEDT (16:00Z on the 3rd).
        assert_eq!(
            fires(
                "30 2 * * *",
                &zone("Australia/Sydney"),
                "2026-10-02T00:00:00Z",
                3
            ),
            [
                "2026-10-02T16:30:00Z",
                "2026-10-03T16:00:00Z",
                "2026-10-04T15:30:00Z"
            ]
        );
    }

    #[test]
    fn fall_back_fold_fires_once_at_the_first_occurrence() {
        let zurich = zone("Europe/Zurich");
        // 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z): 02:30 happens at 00:30Z and 01:30Z.
        assert_eq!(
            fires("30 2 * * *", &zurich, "2026-10-24T12:00:00Z", 2),
            ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
        );
        // Starting inside the second pass of the fold does not fire 02:30 again.
        assert_eq!(
            fires("30 2 * * *", &zurich, "2026-10-25T01:15:00Z", 1),
            ["2026-10-26T01:30:00Z"]
        );
        // Every 20 minutes through the fold: the repeated hour does not fire twice.
        assert_eq!(
            fires("*/20 * * * *", &zurich, "2026-10-24T23:50:00Z", 6),
            [
                "2026-10-25T00:00:00Z",
                "2026-10-25T00:20:00Z",
                "2026-10-25T00:40:00Z",
                "2026-10-25T02:00:00Z",
                "2026-10-25T02:20:00Z",
                "2026-10-25T02:40:00Z"
            ]
        );
        let schedule = CronSchedule::parse("30 2 * * *", zurich.clone()).unwrap();
        assert_eq!(
            schedule.last_fire_at_or_before(utc("2026-10-25T01:45:00Z")),
            Some(utc("2026-10-25T00:30:00Z"))
        );
        // New York 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z): 01:30 happens at 05:30Z and 06:30Z.
        assert_eq!(
            fires(
                "30 1 * * *",
                &zone("America/New_York"),
                "2026-10-31T12:00:00Z",
                2
            ),
            ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
        );
        // Sydney falls back 2026-04-05 03:00 AEDT -> 02:00 AEST (16:00Z on the 4th).
        assert_eq!(
            fires(
                "30 2 * * *",
                &zone("Australia/Sydney"),
                "2026-04-04T00:00:00Z",
                2
            ),
            ["2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"]
        );
    }

    #[test]
    fn last_fire_sees_through_gaps_and_folds() {
        let zurich = zone("Europe/Zurich");
        let every_20 = CronSchedule::parse("*/20 * * * *", zurich).unwrap();
        // During the second pass of the fold the last fire is 02:40 CEST (00:40Z).
        assert_eq!(
            every_20.last_fire_at_or_before(utc("2026-10-25T01:30:00Z")),
            Some(utc("2026-10-25T00:40:00Z"))
        );
        assert_eq!(
            every_20.last_fire_at_or_before(utc("2026-10-25T02:00:00Z")),
            Some(utc("2026-10-25T02:00:00Z"))
        );
        // Just after the gap the last fire is the gap end itself.
        assert_eq!(
            every_20.last_fire_at_or_before(utc("2026-03-29T01:10:00Z")),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        assert_eq!(
            every_20.last_fire_at_or_before(utc("2026-03-29T00:59:59Z")),
            Some(utc("2026-03-29T00:40:00Z"))
        );
    }

    #[test]
    fn rejects_what_is_not_five_standard_fields() {
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("0 8 * *", "found 4"),
            ("0 0 8 * * *", "found 6: seconds and years"),
            ("0 0 8 * * * 2026", "found 7: seconds and years"),
            ("0 8 * * * * * *", "found 8"),
            ("@every 1h", "unknown macro @every 1h"),
            ("@reboot", "unknown macro"),
            ("TZ=UTC 0 8 * * *", "time zone prefix"),
            ("61 * * * *", "minute field \"61\""),
            ("* 24 * * *", "hour field \"24\""),
            ("* * 0 * *", "day-of-month field \"0\""),
            ("* * 32 * *", "day-of-month field \"32\""),
            ("* * * 13 *", "month field \"13\""),
            ("* * * foo *", "month field \"foo\""),
            ("* * * * 8", "day-of-week field \"8\""),
            ("* * * * foo", "day-of-week field \"foo\""),
            ("* * * * 5-1", "runs backwards"),
            ("* * * * */0", "at least 1"),
            ("* * * * 1,,2", "empty"),
            ("*/0 * * * *", "minute field"),
            ("5-1 * * * *", "minute field"),
            ("L * * * *", "contains 'L'"),
            ("* * L * *", "contains 'L'"),
            ("* * * * 5#2", "contains '#'"),
            ("? * * * *", "contains '?'"),
            ("0 0 30 2 *", "never occurs"),
            ("0 0 31 4,6,9,11 *", "never occurs"),
        ];
        for (expression, reason) in cases {
            let err = CronSchedule::parse(expression, Zone::utc()).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(reason) && message.contains(&format!("{expression:?}")),
                "{expression:?}: {message}"
            );
        }
        // Impossible day-of-month with a weekday is fine: either matches.
        assert!(CronSchedule::parse("0 0 30 2 1", Zone::utc()).is_ok());
    }
}
