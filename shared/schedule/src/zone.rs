//! Time zones and the one place where a wall-clock time becomes an instant.
//!
//! Zones come from the time zone data in use ([`crate::tzdata`]); their rules are evaluated by
//! jiff, which also gives the engine its instants (`Timestamp`) and wall-clock times
//! (`civil::DateTime`).

use std::fmt;
use std::str::FromStr;

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{Timestamp, civil};

use crate::ScheduleError;
use crate::tzdata::tzdata;

/// An IANA time zone: its name and its rules from the time zone data in use.
#[derive(Clone, PartialEq, Eq)]
pub struct Zone(TimeZone);

impl Zone {
    /// UTC.
    pub fn utc() -> Self {
        Self(TimeZone::UTC)
    }

    pub(crate) fn from_jiff(tz: TimeZone) -> Self {
        Self(tz)
    }

    /// The IANA name, as written (`Europe/Zurich`).
    pub fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("UTC")
    }

    /// The zone's rules, for callers that format instants in it.
    pub fn as_jiff(&self) -> &TimeZone {
        &self.0
    }

    /// The zone's offset from UTC at `t`, in seconds (east positive).
    pub fn offset_seconds(&self, t: Timestamp) -> i32 {
        self.0.to_offset(t).seconds()
    }

    /// What a wall clock in this zone shows at `t`.
    pub fn wall_clock(&self, t: Timestamp) -> civil::DateTime {
        self.0.to_datetime(t)
    }

    /// The wall-clock time in this zone at `t`, as an RFC 3339 text with its offset
    /// (`2026-11-26T08:00:00-07:00`); `None` only at the ends of representable time.
    pub fn local_rfc3339(&self, t: Timestamp) -> Option<String> {
        Some(t.display_with_offset(self.0.to_offset(t)).to_string())
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Zone({})", self.name())
    }
}

impl FromStr for Zone {
    type Err = ScheduleError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        parse_time_zone(name)
    }
}

/// Parses an IANA time zone name such as `Europe/Zurich`, `America/New_York` or `UTC`, from the
/// time zone data in use ([`crate::tzdata::tzdata`]).
///
/// Names are matched exactly as the IANA database spells them (`Europe/Zurich`, not
/// `europe/zurich`). The window parsers use UTC when no zone is given.
///
/// # Errors
/// [`ScheduleError::UnknownTimeZone`] naming the text, or
/// [`ScheduleError::UnreadableTimeZone`] when the data for it cannot be read.
pub fn parse_time_zone(name: &str) -> Result<Zone, ScheduleError> {
    tzdata().zone(name)
}

/// The zone named, or UTC when none is.
pub(crate) fn zone_or_utc(name: Option<&str>) -> Result<Zone, ScheduleError> {
    name.map_or(Ok(Zone::utc()), parse_time_zone)
}

/// What a wall clock in `zone` shows at instant `t` (`None` only at the ends of the representable
/// range, where adding the offset would overflow).
pub(crate) fn wall_clock(zone: &Zone, t: Timestamp) -> Option<civil::DateTime> {
    Some(zone.0.to_datetime(t))
}

/// What a wall clock at a fixed UTC offset shows at instant `t` (`None` only at the ends).
pub(crate) fn fixed_wall_clock(offset: Offset, t: Timestamp) -> Option<civil::DateTime> {
    Some(offset.to_datetime(t))
}

/// The instant a wall-clock time in `zone` stands for, by the crate's DST rules:
/// - a time that exists once is that instant;
/// - a time in a fall-back fold (it happens twice) is its first, earlier occurrence;
/// - a time in a spring-forward gap (it never happens) is the instant the gap ends, when the wall
///   clock jumps past it (02:30 on a day that goes 02:00 -> 03:00 is 03:00).
///
/// The mapping never decreases: a later wall time never maps to an earlier instant. `None` only at
/// the ends of the representable range.
pub(crate) fn resolve_local(zone: &Zone, local: civil::DateTime) -> Option<Timestamp> {
    match zone.0.to_ambiguous_timestamp(local).offset() {
        AmbiguousOffset::Unambiguous { offset } => at_offset(local, offset),
        AmbiguousOffset::Fold { before, .. } => at_offset(local, before),
        AmbiguousOffset::Gap { before, after } => {
            // Read with the later offset, the wall time lies before the transition that opened
            // the gap, and nothing else changes in between: that transition is the gap's end.
            let earliest = at_offset(local, after)?;
            gap_end(&zone.0, earliest, after).or_else(|| at_offset(local, before))
        }
    }
}

/// The first transition after `earliest` to `offset`.
fn gap_end(tz: &TimeZone, earliest: Timestamp, offset: Offset) -> Option<Timestamp> {
    tz.following(earliest)
        .take(8)
        .find(|transition| transition.offset() == offset)
        .map(|transition| transition.timestamp())
}

/// `local` read at a fixed `offset` (`None` beyond the ends of representable time).
pub(crate) fn at_offset(local: civil::DateTime, offset: Offset) -> Option<Timestamp> {
    offset.to_timestamp(local).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ebb_testkit::utc;

    fn zone(name: &str) -> Zone {
        parse_time_zone(name).unwrap()
    }

    fn local(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> civil::DateTime {
        civil::datetime(y, mo, d, h, mi, 0, 0)
    }

    #[test]
    fn parses_iana_names_and_names_the_unknown_one() {
        assert_eq!(
            parse_time_zone("Europe/Zurich").unwrap().name(),
            "Europe/Zurich"
        );
        assert_eq!(parse_time_zone("UTC").unwrap(), Zone::utc());
        assert_eq!(zone_or_utc(None).unwrap(), Zone::utc());
        for bad in ["", "Mars/Olympus", "europe/zurich", "CEST+2", " UTC"] {
            let err = parse_time_zone(bad).unwrap_err();
            assert_eq!(err, ScheduleError::UnknownTimeZone(bad.to_owned()));
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
    }

    #[test]
    fn a_time_in_a_spring_forward_gap_is_the_end_of_the_gap() {
        let zurich = zone("Europe/Zurich");
        // 2026-03-29: 02:00 CET -> 03:00 CEST, i.e. at 01:00Z.
        for minute in [0, 1, 30, 59] {
            assert_eq!(
                resolve_local(&zurich, local(2026, 3, 29, 2, minute)),
                Some(utc("2026-03-29T01:00:00Z"))
            );
        }
        assert_eq!(
            resolve_local(&zurich, local(2026, 3, 29, 1, 59)),
            Some(utc("2026-03-29T00:59:00Z"))
        );
        assert_eq!(
            resolve_local(&zurich, local(2026, 3, 29, 3, 0)),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        let new_york = zone("America/New_York");
        // 2026-03-08: 02:00 EST -> 03:00 EDT, i.e. at 07:00Z.
        assert_eq!(
            resolve_local(&new_york, local(2026, 3, 8, 2, 30)),
            Some(utc("2026-03-08T07:00:00Z"))
        );
        // Lord Howe moves by half an hour: 02:00 -> 02:30 on 2026-10-04 (15:00Z).
        let lord_howe = zone("Australia/Lord_Howe");
        assert_eq!(
            resolve_local(&lord_howe, local(2026, 10, 4, 2, 15)),
            Some(utc("2026-10-03T15:30:00Z"))
        );
    }

    #[test]
    fn a_time_in_a_fall_back_fold_is_its_first_occurrence() {
        let zurich = zone("Europe/Zurich");
        // 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z; 02:30 happens at 00:30Z and 01:30Z.
        assert_eq!(
            resolve_local(&zurich, local(2026, 10, 25, 2, 30)),
            Some(utc("2026-10-25T00:30:00Z"))
        );
        assert_eq!(
            resolve_local(&zurich, local(2026, 10, 25, 3, 0)),
            Some(utc("2026-10-25T02:00:00Z"))
        );
        let sydney = zone("Australia/Sydney");
        // 2026-04-05: 03:00 AEDT -> 02:00 AEST at 16:00Z on the 4th.
        assert_eq!(
            resolve_local(&sydney, local(2026, 4, 5, 2, 30)),
            Some(utc("2026-04-04T15:30:00Z"))
        );
    }

    #[test]
    fn wall_clock_survives_the_ends_of_time() {
        let zurich = zone("Europe/Zurich");
        let _ = wall_clock(&zurich, Timestamp::MAX);
        let _ = wall_clock(&zurich, Timestamp::MIN);
        let _ = resolve_local(&zurich, civil::DateTime::MAX);
        let _ = resolve_local(&zurich, civil::DateTime::MIN);
        assert_eq!(
            wall_clock(&zurich, utc("2026-07-01T10:00:00Z")),
            Some(local(2026, 7, 1, 12, 0))
        );
    }
}
