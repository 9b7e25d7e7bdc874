//! What a simulation reports: a timeline of the controllers' writes and the actors' key events,
//! and the figures of its summary.

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// When, RFC 3339 in whole seconds.
    pub at: String,
    /// Who acted: a controller's name or an actor's (`hpa`, `babylon`, `users` ...).
    pub who: String,
    /// What happened, in a few words.
    pub what: String,
}

/// The timeline, in time order; entries at the same instant keep the order they were added in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Timeline {
    entries: Vec<(Timestamp, Entry)>,
}

impl Timeline {
    /// Adds `what` done by `who` at `at`.
    pub fn add(&mut self, at: Timestamp, who: &str, what: impl Into<String>) {
        self.entries.push((
            at,
            Entry {
                at: ebb_runtime::time::rfc3339(at),
                who: who.to_owned(),
                what: what.into(),
            },
        ));
    }

    /// The entries in time order.
    pub fn entries(&self) -> Vec<&Entry> {
        let mut sorted: Vec<&(Timestamp, Entry)> = self.entries.iter().collect();
        // Stable: the same instant keeps insertion order.
        sorted.sort_by_key(|(at, _)| *at);
        sorted.into_iter().map(|(_, e)| e).collect()
    }

    /// One line per entry: `at  who  what`.
    pub fn text(&self) -> String {
        self.entries()
            .iter()
            .map(|e| format!("{}  {:<18} {}\n", e.at, e.who, e.what))
            .collect()
    }
}

/// How long users waited.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waits {
    /// Users counted.
    pub users: usize,
    /// Users who waited at all.
    pub waited: usize,
    /// Median wait, seconds.
    pub p50_seconds: i64,
    /// 95th percentile wait, seconds.
    pub p95_seconds: i64,
    /// Longest wait, seconds.
    pub max_seconds: i64,
}

impl Waits {
    /// The figures of `waits` (nearest-rank percentiles, in whole seconds).
    pub fn of(waits: &[SignedDuration]) -> Self {
        let mut seconds: Vec<i64> = waits.iter().map(SignedDuration::as_secs).collect();
        seconds.sort_unstable();
        Self {
            users: seconds.len(),
            waited: seconds.iter().filter(|s| **s > 0).count(),
            p50_seconds: percentile(&seconds, 50),
            p95_seconds: percentile(&seconds, 95),
            max_seconds: seconds.last().copied().unwrap_or(0),
        }
    }
}

/// The nearest-rank `p`th percentile of `sorted` (0 when empty).
pub fn percentile(sorted: &[i64], p: usize) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
