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

    /// Pairs `(i, j)`, `i < j`, of windows that can be open at the same instant.
    ///
    /// Method: a one-off window against any other is exact (does the other window have an open
    /// period meeting `[from, to)`?). Two windows that are never open, or one that is always
    /// open, are decided up front. Any other pair (daily and cron windows) is checked by sweeping
    /// both windows' open periods over a reference year, 2028 (a leap year, with its weekdays and
    /// the DST dates the bundled time zone database gives it), plus a week either side. That is
    /// exact for daily windows; a cron pair that only meets in other years (weekday alignments of
    /// a leap day, say) is missed.
    pub fn overlaps(&self) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (i, a) in self.windows.iter().enumerate() {
            for (j, b) in self.windows.iter().enumerate().skip(i + 1) {
                if can_overlap(a, b) {
                    pairs.push((i, j));
                }
            }
        }
        pairs
    }
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

/// Whether two windows can be open at the same instant (see [`FirstMatch::overlaps`]).
fn can_overlap(a: &Window, b: &Window) -> bool {
    if a.never_open() || b.never_open() {
        return false;
    }
    if a.always_open() || b.always_open() {
        return true;
    }
    match (a, b) {
        (Window::ZonedDateTime { from, to }, other)
        | (other, Window::ZonedDateTime { from, to }) => other
            .next_span(*from, *to)
            .is_some_and(|span| span.start < *to),
        _ => sweep_overlap(a, b),
    }
}

fn sweep_overlap(a: &Window, b: &Window) -> bool {
    let (Some(start), Some(end)) = (
        reference_instant(2027, 12, 25),
        reference_instant(2029, 1, 8),
    ) else {
        return false;
    };
    let mut span_a = a.next_span(start, end);
    let mut span_b = b.next_span(start, end);
    while let (Some(x), Some(y)) = (span_a, span_b) {
        if x.start >= end || y.start >= end {
            return false;
        }
        let x_end = x.end.unwrap_or(Timestamp::MAX);
        let y_end = y.end.unwrap_or(Timestamp::MAX);
        if x.start < y_end && y.start < x_end {
            return true;
        }
        // Move past whichever period ends first.
        if x_end <= y_end {
            span_a = x.end.and_then(|e| a.next_span(e, end));
        } else {
            span_b = y.end.and_then(|e| b.next_span(e, end));
        }
    }
    false
}

fn reference_instant(year: i16, month: i8, day: i8) -> Option<Timestamp> {
    civil::date(year, month, day)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}
