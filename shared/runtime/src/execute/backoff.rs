//! Per-object exponential backoff for `error_policy`: a transient failure of one object retries
//! after about 1 s, 2 s, 4 s ... up to five minutes, and a success resets it. Other objects are
//! unaffected. The schedule is backon's, with jitter (each delay is stretched by a random part of
//! itself, never past the cap), so objects that failed together (an outage, a webhook down) do not
//! retry in lockstep.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use backon::BackoffBuilder as _;

/// The first wait after a failure.
pub const FIRST_DELAY: Duration = Duration::from_secs(1);
/// The longest wait between retries of one object.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

/// Retry schedules per object key.
#[derive(Debug)]
pub struct ErrorBackoff {
    schedules: Mutex<HashMap<String, backon::ExponentialBackoff>>,
    jitter: bool,
}

impl Default for ErrorBackoff {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrorBackoff {
    /// No failures recorded; delays with jitter.
    pub fn new() -> Self {
        Self {
            schedules: Mutex::default(),
            jitter: true,
        }
    }

    /// No failures recorded; the bare schedule (1 s, 2 s, 4 s ... 5 min), for tests that assert
    /// delays and for the simulator, whose runs must repeat exactly.
    pub fn without_jitter() -> Self {
        Self {
            schedules: Mutex::default(),
            jitter: false,
        }
    }

    /// Records a failure of `key` and returns how long to wait before retrying it.
    pub fn failed(&self, key: &str) -> Duration {
        let mut schedules = self
            .schedules
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let schedule = schedules
            .entry(key.to_owned())
            .or_insert_with(|| schedule(self.jitter));
        schedule.next().unwrap_or(MAX_DELAY).min(MAX_DELAY)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        self.forget(key);
    }

    /// Forgets the failures of `key`, an object that is gone.
    pub fn forget(&self, key: &str) {
        self.schedules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// How many objects have failures on record.
    pub fn tracked(&self) -> usize {
        self.schedules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// [`FIRST_DELAY`] doubling up to [`MAX_DELAY`], without end.
fn schedule(jitter: bool) -> backon::ExponentialBackoff {
    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(FIRST_DELAY)
        .with_max_delay(MAX_DELAY)
        .with_factor(2.0)
        .without_max_times();
    if jitter {
        builder.with_jitter().build()
    } else {
        builder.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300];

    #[test]
    fn delays_double_per_failure_and_cap_at_five_minutes() {
        let b = ErrorBackoff::without_jitter();
        let delays: Vec<u64> = (0..12).map(|_| b.failed("ns/a").as_secs()).collect();
        assert_eq!(delays, BARE);
    }

    #[test]
    fn jitter_stretches_each_delay_by_less_than_itself_and_never_past_the_cap() {
        let b = ErrorBackoff::new();
        let delays: Vec<Duration> = (0..12).map(|_| b.failed("ns/a")).collect();
        for (got, bare) in delays.iter().zip(BARE) {
            let bare = Duration::from_secs(bare);
            assert!(
                *got >= bare && *got <= (bare * 2).min(MAX_DELAY),
                "{got:?} for {bare:?}"
            );
        }
        // Two objects failing together are spread apart (equal only by a vanishing chance).
        let others: Vec<Duration> = (0..4).map(|_| b.failed("ns/b")).collect();
        assert_ne!(&others[..], &delays[..4]);
    }

    #[test]
    fn success_resets_only_that_object() {
        let b = ErrorBackoff::without_jitter();
        b.failed("ns/a");
        b.failed("ns/a");
        b.failed("ns/b");
        b.succeeded("ns/a");
        assert_eq!(b.failed("ns/a").as_secs(), 1);
        assert_eq!(b.failed("ns/b").as_secs(), 2);
    }
}
