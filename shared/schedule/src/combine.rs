//! Several windows together: first match wins (service-scaler), or open while any is open
//! (scaledown-window).

use jiff::{SignedDuration, Timestamp, civil};

use crate::DEFAULT_HORIZON;
use crate::window::{Span, Window, add_saturating};

/// How many times `next_transition` jumps past a quiet year to the next boundary of a one-off or
/// cron window before it gives up.
const MAX_QUIET_JUMPS: usize = 8;

/// Ordered windows where the first one open at an instant wins (service-scaler's time ranges).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FirstMatch {
    windows: Vec<Window>,
}

/// Windows of which any one being open makes the whole open (scaledown-window). Overlapping or
/// touching windows merge: one closing at the instant another opens is no change.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AnyOpen {
    windows: Vec<Window>,
}

/// Each window's current open period, refreshed lazily as the sweep moves forward.
struct Cursors<'a> {
    windows: &'a [Window],
    spans: Vec<Option<Span>>,
    until: Timestamp,
}

impl<'a> Cursors<'a> {
    fn new(windows: &'a [Window], now: Timestamp, until: Timestamp) -> Self {
        Self {
            windows,
            spans: windows.iter().map(|w| w.next_span(now, until)).collect(),
            until,
        }
    }

    /// Window `index`'s first open period ending after `x` (the sweep only moves forward).
    fn span_at(&mut self, index: usize, x: Timestamp) -> Option<Span> {
        let slot = self.spans.get_mut(index)?;
        if let Some(span) = *slot
            && span.end.is_some_and(|end| end <= x)
        {
            *slot = self.windows[index].next_span(x, self.until);
        }
        *slot
    }

    fn is_open(&mut self, index: usize, x: Timestamp) -> bool {
        self.span_at(index, x).is_some_and(|span| span.contains(x))
    }

    fn first_open(&mut self, below: usize, x: Timestamp) -> Option<usize> {
        (0..below).find(|i| self.is_open(*i, x))
    }

    /// The earliest start strictly after `x` among windows `0..below` (all closed at `x`).
    fn next_start(&mut self, below: usize, x: Timestamp) -> Option<Timestamp> {
        (0..below)
            .filter_map(|i| self.span_at(i, x))
            .map(|span| span.start)
            .filter(|start| *start > x)
            .min()
    }
}

impl FirstMatch {
    /// Windows in priority order: the first open one wins.
    pub fn new(windows: Vec<Window>) -> Self {
        Self { windows }
    }

    /// The windows, in priority order.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// The index of the first window, in list order, open at `t`.
    pub fn matched_at(&self, t: Timestamp) -> Option<usize> {
        self.windows.iter().position(|w| w.contains(t))
    }

    /// The next instants strictly after `now`, and no later than `now + horizon`, at which the
    /// matched window changes, each with the index matched from then on (`None`: no window). A
    /// boundary of a window that is shadowed by an earlier open window is no change. At most
    /// `limit` entries; [`DEFAULT_HORIZON`] (367 days) covers a year of changes.
    ///
    /// The sweep visits only the boundaries that can change the match, so its cost grows with
    /// `limit` and the number of windows, not with the horizon.
    pub fn transitions(
        &self,
        now: Timestamp,
        limit: usize,
        horizon: SignedDuration,
    ) -> Vec<(Timestamp, Option<usize>)> {
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        let n = self.windows.len();
        let until = add_saturating(now, horizon);
        let mut cursors = Cursors::new(&self.windows, now, until);
        let mut x = now;
        let mut current = cursors.first_open(n, x);
        loop {
            // Only windows before the current match can take over (by opening), and only the
            // current match closing can hand over to a later one.
            let below = current.unwrap_or(n);
            let opening = cursors.next_start(below, x);
            let closing = current
                .and_then(|c| cursors.span_at(c, x))
                .and_then(|s| s.end);
            let Some(next) = [opening, closing].into_iter().flatten().min() else {
                break;
            };
            if next > until {
                break;
            }
            x = next;
            let matched = cursors.first_open(n, x);
            if matched != current {
                current = matched;
                out.push((x, matched));
                if out.len() >= limit {
                    break;
                }
            }
        }
        out
    }

    /// The next instant strictly after `now` at which the matched window changes, or `None` when
    /// it never changes again.
    ///
    /// It looks [`DEFAULT_HORIZON`] ahead; when nothing changes in that time, daily windows cannot
    /// change anything later either, so it jumps to the next boundary of a one-off or cron window
    /// and looks again (at most a few times).
    pub fn next_transition(&self, now: Timestamp) -> Option<Timestamp> {
        next_change(&self.windows, now, |from, horizon| {
            self.transitions(from, 1, horizon).first().map(|(t, _)| *t)
        })
    }

    /// Pairs `(i, j)`, `i < j`, of windows that can be open at the same instant, within a bounded
    /// amount of work ([`OVERLAP_STEPS`]); pairs it could not settle in that budget are
    /// [`Overlaps::unsettled`].
    ///
    /// Method: a one-off window against any other is exact (does the other window have an open
    /// period meeting `[from, to)`?). Two windows that are never open, or one that is always
    /// open, are decided up front. Two cron windows in one zone, each open less than a day at a
    /// time, whose times of day never meet on the wall clock can only meet where the zone's
    /// offset changes: only the hours around those changes are swept. Any other pair (daily and
    /// cron windows) is checked by sweeping both windows' open periods over a reference year,
    /// 2028 (a leap year, with its weekdays and the DST dates the bundled time zone database
    /// gives it), plus a week either side. That is exact for daily windows; a cron pair that only
    /// meets in other years (weekday alignments of a leap day, say) is missed.
    pub fn overlaps(&self) -> Overlaps {
        let mut out = Overlaps::default();
        let pairs: Vec<(usize, usize)> = (0..self.windows.len())
            .flat_map(|i| (i + 1..self.windows.len()).map(move |j| (i, j)))
            .collect();
        // First every pair gets an equal share of half the budget, which settles the pairs that
        // meet early or are quickly told apart; then the pairs left share what remains, in list
        // order.
        let mut budget = OVERLAP_STEPS;
        let share = OVERLAP_STEPS / 2 / u64::try_from(pairs.len().max(1)).unwrap_or(u64::MAX);
        let mut left = Vec::new();
        for (i, j) in pairs {
            let mut allowance = share.min(budget);
            let (answer, steps) = crate::work::counted(|| {
                can_overlap(&self.windows[i], &self.windows[j], &mut allowance)
            });
            budget = budget.saturating_sub(steps);
            match answer {
                Some(true) => out.pairs.push((i, j)),
                Some(false) => {}
                None => left.push((i, j)),
            }
        }
        for (i, j) in left {
            match can_overlap(&self.windows[i], &self.windows[j], &mut budget) {
                Some(true) => out.pairs.push((i, j)),
                Some(false) => {}
                None => out.unsettled.push((i, j)),
            }
        }
        out.pairs.sort_unstable();
        out
    }
}

/// The most steps ([`crate::work`]) [`FirstMatch::overlaps`] takes: under 0.1 s in a release build
/// on one core of the machine ebb is built on (`cargo bench -p ebb-schedule`). The overlap check only advises (the first range in list order wins), so past it
/// the pairs left are reported as unsettled rather than stall a controller.
pub const OVERLAP_STEPS: u64 = 600_000;

/// What [`FirstMatch::overlaps`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlaps {
    /// Pairs `(i, j)`, `i < j`, of windows that can be open at the same instant.
    pub pairs: Vec<(usize, usize)>,
    /// Pairs `(i, j)`, `i < j`, the check had no budget left to settle: they may overlap.
    pub unsettled: Vec<(usize, usize)>,
}

impl AnyOpen {
    /// The windows; their order only decides which open window [`AnyOpen::open_at`] names.
    pub fn new(windows: Vec<Window>) -> Self {
        Self { windows }
    }

    /// The windows.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// The index of the first window open at `t`, if any.
    pub fn open_at(&self, t: Timestamp) -> Option<usize> {
        self.windows.iter().position(|w| w.contains(t))
    }

    /// Whether any window is open at `t`.
    pub fn is_open(&self, t: Timestamp) -> bool {
        self.open_at(t).is_some()
    }

    /// The next instants strictly after `now`, and no later than `now + horizon`, at which the
    /// open state flips, each with the state from then on. Overlapping or touching windows merge
    /// into one open period, so consecutive entries always alternate. At most `limit` entries.
    ///
    /// The cost grows with the number of windows and with the open periods that chain into each
    /// other within the horizon.
    pub fn transitions(
        &self,
        now: Timestamp,
        limit: usize,
        horizon: SignedDuration,
    ) -> Vec<(Timestamp, bool)> {
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        let n = self.windows.len();
        let until = add_saturating(now, horizon);
        let mut cursors = Cursors::new(&self.windows, now, until);
        let mut x = now;
        let mut open = cursors.first_open(n, x).is_some();
        loop {
            let next = if open {
                // Open until every window that is open now has closed; a window opening before
                // then only extends the period, found at the next step.
                let mut latest_end = Some(x);
                for i in 0..n {
                    if let Some(span) = cursors.span_at(i, x).filter(|s| s.contains(x)) {
                        latest_end = match (latest_end, span.end) {
                            (Some(a), Some(b)) => Some(a.max(b)),
                            _ => None,
                        };
                    }
                }
                latest_end
            } else {
                cursors.next_start(n, x)
            };
            let Some(next) = next.filter(|t| *t > x) else {
                break;
            };
            if next > until {
                break;
            }
            x = next;
            let now_open = cursors.first_open(n, x).is_some();
            if now_open != open {
                open = now_open;
                out.push((x, open));
                if out.len() >= limit {
                    break;
                }
            }
        }
        out
    }

    /// The next instant strictly after `now` at which the open state flips, or `None` when it never
    /// flips again. Looks ahead like [`FirstMatch::next_transition`].
    pub fn next_transition(&self, now: Timestamp) -> Option<Timestamp> {
        next_change(&self.windows, now, |from, horizon| {
            self.transitions(from, 1, horizon).first().map(|(t, _)| *t)
        })
    }
}

/// The first change after `now` found by `within` (which looks as far ahead of the instant it is
/// given as it is told: [`DEFAULT_HORIZON`]). After a year without a change, daily windows cannot cause one later:
/// only a boundary of a one-off or cron window can, so jump just before the next of those and look
/// again.
///
/// Windows that are all `ZonedTime` (a fixed offset, every day) repeat every 24 hours, and so do
/// their combinations: a change, if there is any, comes within a day, so two days are looked at
/// instead of a year (two complementary windows that never flip: 53 µs -> 1 µs).
fn next_change(
    windows: &[Window],
    now: Timestamp,
    within: impl Fn(Timestamp, SignedDuration) -> Option<Timestamp>,
) -> Option<Timestamp> {
    if windows
        .iter()
        .all(|w| matches!(w, Window::ZonedTime { .. }))
    {
        return within(now, SignedDuration::from_hours(2 * 24));
    }
    let mut from = now;
    for _ in 0..=MAX_QUIET_JUMPS {
        if let Some(t) = within(from, DEFAULT_HORIZON) {
            return Some(t);
        }
        let edge = from.checked_add(DEFAULT_HORIZON).ok()?;
        let next_boundary = windows
            .iter()
            .filter(|w| !w.is_daily())
            .filter_map(|w| w.next_boundary_after(edge))
            .min()?;
        from = next_boundary
            .checked_sub(SignedDuration::from_nanos(1))
            .ok()?;
    }
    None
}

/// Whether two windows can be open at the same instant (see [`FirstMatch::overlaps`]); `None`
/// when `budget` (steps) ran out first. The steps taken are taken off `budget`.
fn can_overlap(a: &Window, b: &Window, budget: &mut u64) -> Option<bool> {
    if a.never_open() || b.never_open() {
        return Some(false);
    }
    if a.always_open() || b.always_open() {
        return Some(true);
    }
    if *budget == 0 {
        return None;
    }
    let (answer, steps) = crate::work::counted(|| {
        let given = *budget;
        match (a, b) {
            // The other window's first open period ending after `from` meets `[from, to)` when
            // it starts before `to`; where it ends does not matter, so it is looked for up to
            // `from`'s horizon, not `to` (a period that chains for ever would be walked to a
            // `to` in 9999).
            (Window::ZonedDateTime { from, to }, other)
            | (other, Window::ZonedDateTime { from, to }) => Some(
                other
                    .next_span(*from, *from)
                    .is_some_and(|span| span.start < *to),
            ),
            _ => {
                let (start, end) = (
                    reference_instant(2027, 12, 25)?,
                    reference_instant(2029, 1, 8)?,
                );
                // The wall-clock test costs a step per time of day of either window; without
                // the budget for it, a sweep may still find the two open together early on.
                let wall_test = [a, b].iter().map(|w| w.times_of_day_count()).sum::<u64>();
                let mut left = given;
                if let Some(after_test) = given.checked_sub(wall_test) {
                    left = after_test;
                    if let Some(reach) = apart_on_the_wall_clock(a, b) {
                        return a.zone_changes(start, end).into_iter().try_fold(
                            false,
                            |met, change| {
                                if met {
                                    return Some(true);
                                }
                                let near = (
                                    add_saturating(change, -reach).max(start),
                                    add_saturating(change, reach).min(end),
                                );
                                sweep_overlap(a, b, near, &mut left)
                            },
                        );
                    }
                }
                sweep_overlap(a, b, (start, end), &mut left)
            }
        }
    });
    *budget = budget.saturating_sub(steps);
    answer
}

/// Two cron windows (excluded days aside) in one zone, each open less than a day from a fire
/// time, whose times of day never meet on the wall clock: `Some(reach)`, how close to a change
/// of the zone's offset any instant where both are open must lie. Away from such changes wall
/// clock and elapsed time agree, so they could only meet where their times of day meet on every
/// day. `None`: this cannot tell (their times of day meet, or they are not such windows).
fn apart_on_the_wall_clock(a: &Window, b: &Window) -> Option<SignedDuration> {
    let (
        Window::Cron {
            schedule: sa,
            duration: da,
        },
        Window::Cron {
            schedule: sb,
            duration: db,
        },
    ) = (a.unexcluded(), b.unexcluded())
    else {
        return None;
    };
    let day = SignedDuration::from_hours(24);
    if sa.zone() != sb.zone() || *da >= day || *db >= day {
        return None;
    }
    let seconds = |times: &[civil::Time]| -> Vec<i64> {
        times
            .iter()
            .map(|t| t.duration_since(civil::Time::midnight()).as_secs())
            .collect()
    };
    let (ta, tb) = (seconds(sa.times_of_day()), seconds(sb.times_of_day()));
    if meets(&ta, da.as_secs(), &tb) || meets(&tb, db.as_secs(), &ta) {
        return None;
    }
    // Where both are open, the later of the two fire times falls inside the other's occurrence,
    // less than the longer duration after it. Had the offset been the same at both, their
    // wall-clock times would be as close and would meet: a change lies between the two, so the
    // instant lies less than the longer duration after a change. An hour more, to spare.
    Some((*da).max(*db) + SignedDuration::from_hours(1))
}

/// Whether some occurrence opening at a time of `from` (seconds into the day, sorted) and lasting
/// `duration` seconds (less than a day) contains an opening time of `others`, on the 24-hour
/// circle (an occurrence may run past midnight).
fn meets(from: &[i64], duration: i64, others: &[i64]) -> bool {
    const DAY: i64 = 86_400;
    let Some(first) = others.first() else {
        return false;
    };
    from.iter().any(|start| {
        crate::work::step();
        // The first opening of `others` at or after `start`, around midnight if none is later.
        let index = others.partition_point(|t| t < start);
        let next = others.get(index).map_or(first + DAY, |t| *t);
        next - start < duration
    })
}

/// Sweeps both windows' open periods over `[from, until)`: whether they meet there; `None` when
/// `budget` ran out first.
fn sweep_overlap(
    a: &Window,
    b: &Window,
    (from, until): (Timestamp, Timestamp),
    budget: &mut u64,
) -> Option<bool> {
    let before = crate::work::steps();
    let spent = |budget: &u64| -> Option<()> {
        let used = crate::work::steps().wrapping_sub(before);
        (used <= *budget).then_some(())
    };
    let result = (|| {
        let mut span_a = a.next_span(from, until);
        let mut span_b = b.next_span(from, until);
        while let (Some(x), Some(y)) = (span_a, span_b) {
            spent(budget)?;
            if x.start >= until || y.start >= until {
                return Some(false);
            }
            let x_end = x.end.unwrap_or(Timestamp::MAX);
            let y_end = y.end.unwrap_or(Timestamp::MAX);
            if x.start < y_end && y.start < x_end {
                return Some(true);
            }
            // Move past whichever period ends first.
            if x_end <= y_end {
                span_a = x.end.and_then(|e| a.next_span(e, until));
            } else {
                span_b = y.end.and_then(|e| b.next_span(e, until));
            }
        }
        Some(false)
    })();
    let used = crate::work::steps().wrapping_sub(before);
    *budget = budget.saturating_sub(used);
    result
}

fn reference_instant(year: i16, month: i8, day: i8) -> Option<Timestamp> {
    civil::date(year, month, day)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

#[cfg(test)]
mod tests {
    //! The wall-clock shortcut of the overlap check against the full sweep it replaces.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    const ZONES: [&str; 5] = [
        "America/New_York",
        "Australia/Lord_Howe",
        "Europe/London",
        "America/Sao_Paulo",
        "UTC",
    ];

    fn cron_window() -> impl Strategy<Value = Window> {
        (
            prop::sample::select(vec!["7", "0,30", "*/20", "59", "*/7"]),
            prop::sample::select(vec!["*", "1", "2", "0-3", "22-23", "*/5"]),
            prop::sample::select(vec!["*", "1-5", "0", "6", "1"]),
            prop::sample::select(vec!["30s", "1m", "10m", "59m", "61m", "3h", "23h"]),
            prop::sample::select(ZONES.to_vec()),
        )
            .prop_map(|(minute, hour, dow, duration, zone)| {
                Window::cron(&format!("{minute} {hour} * * {dow}"), duration, Some(zone)).unwrap()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn the_wall_clock_shortcut_answers_as_the_full_sweep(
            a in cron_window(),
            b in cron_window(),
        ) {
            let year = (
                reference_instant(2027, 12, 25).unwrap(),
                reference_instant(2029, 1, 8).unwrap(),
            );
            let full = sweep_overlap(&a, &b, year, &mut u64::MAX.clone());
            let checked = can_overlap(&a, &b, &mut u64::MAX.clone());
            prop_assert_eq!(checked, full, "{:?} and {:?}", a, b);
        }
    }

    #[test]
    fn crons_apart_on_the_wall_clock_are_swept_only_near_the_zones_changes() {
        let cron = |expr: &str| Window::cron(expr, "1m", Some("America/New_York")).unwrap();
        let steps_of = |a: &str, b: &str| {
            crate::work::counted(|| can_overlap(&cron(a), &cron(b), &mut u64::MAX.clone()))
        };
        // Minutes 7 and 8 of every hour never meet on the wall clock, but the night New York
        // springs forward both 02:07 and 02:08 fire at 03:00 (the end of the gap).
        let (meet, steps) = steps_of("7 * * * *", "8 * * * *");
        assert_eq!(meet, Some(true));
        assert!(steps < 200, "{steps} steps");
        // At noon they never meet; a sweep of the whole year takes 4 566 steps.
        let (apart, steps) = steps_of("7 12 * * *", "8 12 * * *");
        assert_eq!(apart, Some(false));
        assert!(steps < 200, "{steps} steps");
    }
}
