//! Time zones and the one place where a wall-clock time becomes an instant.

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::{GapInfo, Tz};

use crate::ScheduleError;

/// Parses an IANA time zone name such as `Europe/Zurich`, `America/New_York` or `UTC`.
///
/// Names are matched exactly as the IANA database spells them (`Europe/Zurich`, not
/// `europe/zurich`). The window parsers use UTC when no zone is given.
///
/// # Errors
/// [`ScheduleError::UnknownTimeZone`] naming the text.
pub fn parse_time_zone(name: &str) -> Result<Tz, ScheduleError> {
    name.parse::<Tz>()
        .map_err(|_| ScheduleError::UnknownTimeZone(name.to_owned()))
}

/// The zone named, or UTC when none is.
pub(crate) fn zone_or_utc(name: Option<&str>) -> Result<Tz, ScheduleError> {
    name.map_or(Ok(Tz::UTC), parse_time_zone)
}

/// What a wall clock in `tz` shows at instant `t` (`None` only at the ends of the representable
/// range, where adding the offset would overflow).
pub(crate) fn wall_clock<Z: TimeZone>(tz: &Z, t: DateTime<Utc>) -> Option<NaiveDateTime> {
    let offset = tz.offset_from_utc_datetime(&t.naive_utc()).fix();
    t.naive_utc().checked_add_offset(offset)
}

/// The instant a wall-clock time in `tz` stands for, by the crate's DST rules:
/// - a time that exists once is that instant;
/// - a time in a fall-back fold (it happens twice) is its first, earlier occurrence;
/// - a time in a spring-forward gap (it never happens) is the instant the gap ends, when the wall
///   clock jumps past it (02:30 on a day that goes 02:00 -> 03:00 is 03:00).
///
/// The mapping never decreases: a later wall time never maps to an earlier instant. `None` only at
/// the ends of the representable range.
pub(crate) fn resolve_local(tz: &Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(earliest, _) => Some(earliest.with_timezone(&Utc)),
        LocalResult::None => GapInfo::new(&local, tz)
            .and_then(|gap| gap.end)
            .map(|end| end.with_timezone(&Utc)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use chrono::NaiveDate;
    use ebb_testkit::utc;

    fn local(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap()
    }

    #[test]
    fn parses_iana_names_and_names_the_unknown_one() {
        assert_eq!(
            parse_time_zone("Europe/Zurich").unwrap(),
            Tz::Europe__Zurich
        );
        assert_eq!(parse_time_zone("UTC").unwrap(), Tz::UTC);
        assert_eq!(zone_or_utc(None).unwrap(), Tz::UTC);
        for bad in ["", "Mars/Olympus", "europe/zurich", "CEST+2", " UTC"] {
            let err = parse_time_zone(bad).unwrap_err();
            assert_eq!(err, ScheduleError::UnknownTimeZone(bad.to_owned()));
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
    }

    #[test]
    fn a_time_in_a_spring_forward_gap_is_the_end_of_the_gap() {
        let zurich = Tz::Europe__Zurich;
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
        let new_york = Tz::America__New_York;
        // 2026-03-08: 02:00 EST -> 03:00 EDT, i.e. at 07:00Z.
        assert_eq!(
            resolve_local(&new_york, local(2026, 3, 8, 2, 30)),
            Some(utc("2026-03-08T07:00:00Z"))
        );
        // Lord Howe moves by half an hour: 02:00 -> 02:30 on 2026-10-04 (15:00Z).
        let lord_howe = Tz::Australia__Lord_Howe;
        assert_eq!(
            resolve_local(&lord_howe, local(2026, 10, 4, 2, 15)),
            Some(utc("2026-10-03T15:30:00Z"))
        );
    }

    #[test]
    fn a_time_in_a_fall_back_fold_is_its_first_occurrence() {
        let zurich = Tz::Europe__Zurich;
        // 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z; 02:30 happens at 00:30Z and 01:30Z.
        assert_eq!(
            resolve_local(&zurich, local(2026, 10, 25, 2, 30)),
            Some(utc("2026-10-25T00:30:00Z"))
        );
        assert_eq!(
            resolve_local(&zurich, local(2026, 10, 25, 3, 0)),
            Some(utc("2026-10-25T02:00:00Z"))
        );
        let sydney = Tz::Australia__Sydney;
        // 2026-04-05: 03:00 AEDT -> 02:00 AEST at 16:00Z on the 4th.
        assert_eq!(
            resolve_local(&sydney, local(2026, 4, 5, 2, 30)),
            Some(utc("2026-04-04T15:30:00Z"))
        );
    }

    #[test]
    fn wall_clock_survives_the_ends_of_time() {
        let zurich = Tz::Europe__Zurich;
        let _ = wall_clock(&zurich, DateTime::<Utc>::MAX_UTC);
        let _ = wall_clock(&zurich, DateTime::<Utc>::MIN_UTC);
        let _ = resolve_local(&zurich, NaiveDateTime::MAX);
        let _ = resolve_local(&zurich, NaiveDateTime::MIN);
        assert_eq!(
            wall_clock(&zurich, utc("2026-07-01T10:00:00Z")),
            Some(local(2026, 7, 1, 12, 0))
        );
    }
}
