//! The straightforward walk that [`Window::next_span`] and [`Window::contains`] did before their
//! zone lookups were pruned, kept word for word (as free functions) to test the faster code against.

use jiff::{SignedDuration, Timestamp, civil};

use super::{MAX_DAILY_CHAIN, MAX_DAILY_SCAN, Occurrence, Span, Window, add_saturating};
use crate::DEFAULT_HORIZON;
use crate::cron::CronSchedule;
use crate::zone::{fixed_wall_clock, wall_clock};

/// Whether the window is open at `t`.
pub(crate) fn contains(window: &Window, t: Timestamp) -> bool {
    if window.never_open() {
        return false;
    }
    if window.always_open() {
        return true;
    }
    match window {
        Window::ZonedDateTime { from, to } => *from <= t && t < *to,
        Window::Cron { schedule, duration } => schedule
            .last_fire_at_or_before(t)
            .is_some_and(|fire| fire.checked_add(*duration).ok().is_none_or(|end| t < end)),
        Window::ZonedTime { .. } | Window::LocalTime { .. } => {
            daily_raw_containing(window, t).is_some()
        }
        // Not part of the pruned walk: excluded days have their own oracle (tests/excluded.rs).
        Window::Excluding { window, days } => contains(window, t) && !days.contains(t),
    }
}

/// The first open period that ends strictly after `cursor`. A period that keeps going past
/// `until` (and past [`DEFAULT_HORIZON`] after `cursor`) without its end being found has
/// `end: None`.
pub(crate) fn next_span(window: &Window, cursor: Timestamp, until: Timestamp) -> Option<Span> {
    if window.never_open() {
        return None;
    }
    if window.always_open() {
        return Some(Span {
            start: Timestamp::MIN,
            end: None,
        });
    }
    match window {
        Window::ZonedDateTime { from, to } => (*to > cursor).then_some(Span {
            start: *from,
            end: Some(*to),
        }),
        Window::Cron { schedule, duration } => cron_next_span(schedule, *duration, cursor, until),
        Window::ZonedTime { .. } | Window::LocalTime { .. } => daily_next_span(window, cursor),
        Window::Excluding { .. } => window.next_span(cursor, until),
    }
}

/// The local calendar day of `t` in the window's zone (daily kinds only).
fn local_date(window: &Window, t: Timestamp) -> Option<civil::Date> {
    match window {
        Window::ZonedTime { offset, .. } => fixed_wall_clock(*offset, t).map(|local| local.date()),
        Window::LocalTime { tz, .. } => wall_clock(tz, t).map(|local| local.date()),
        Window::ZonedDateTime { .. } | Window::Cron { .. } | Window::Excluding { .. } => None,
    }
}

/// The local day whose daily interval contains `t`, with that interval.
fn daily_raw_containing(window: &Window, t: Timestamp) -> Option<(civil::Date, Occurrence)> {
    let today = local_date(window, t)?;
    // An interval starts on its own day and lasts about a day at most: it started today,
    // yesterday or (around DST changes) the day before, or tomorrow when the clock went back past
    // midnight (Antarctica/Casey, 2010-03-05: 02:00 +11 back to 23:00 +08 the day before).
    let mut day = today.checked_sub(SignedDuration::from_hours(2 * 24)).ok()?;
    for _ in 0..4 {
        if let Some((start, end)) = window.daily_raw(day)
            && start <= t
            && t < end
        {
            return Some((day, (start, end)));
        }
        day = day.tomorrow().ok()?;
    }
    None
}

fn daily_next_span(window: &Window, cursor: Timestamp) -> Option<Span> {
    let mut day = local_date(window, cursor)?
        .checked_sub(SignedDuration::from_hours(2 * 24))
        .ok()?;
    let mut found = None;
    for _ in 0..MAX_DAILY_SCAN {
        if let Some((start, end)) = window.daily_raw(day)
            && end > cursor
        {
            found = Some((start, end));
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
        match window.daily_raw(next_day) {
            // Touching or overlapping: one open period.
            Some((next_start, next_end)) if next_start <= end => {
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

/// The first open period of a cron window that ends after `cursor`.
fn cron_next_span(
    schedule: &CronSchedule,
    duration: SignedDuration,
    cursor: Timestamp,
    until: Timestamp,
) -> Option<Span> {
    let covering = schedule.last_fire_at_or_before(cursor).filter(|fire| {
        fire.checked_add(duration)
            .ok()
            .is_none_or(|end| end > cursor)
    });
    let start = match covering {
        Some(fire) => fire,
        None => schedule.fire_times_after(cursor).next()?,
    };
    let Some(mut end) = start.checked_add(duration).ok() else {
        return Some(Span { start, end: None });
    };
    let give_up_after = until.max(add_saturating(cursor, DEFAULT_HORIZON));
    // The latest occurrence at or before the current end decides whether the period goes on (an
    // occurrence starting exactly at the end touches it and continues it).
    while let Some(latest) = schedule.last_fire_at_or_before(end) {
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
