//! An injectable source of "now".
//!
//! Reconcilers and decisions never call `Utc::now()` themselves: they get `now` from a [`Clock`], so
//! tests can pin time and step it forward ([`ManualClock`]).

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};

/// A source of the current wall-clock instant.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The real clock: the system's wall-clock time.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Clones share the same instant, so a test can keep one
/// handle and give another to the code under test.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        Self {
            now: Arc::new(Mutex::new(now)),
        }
    }

    /// Moves the clock to `now` (backwards too: tests of clock skew need that).
    pub fn set(&self, now: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }

    /// Moves the clock by `by` (negative moves it back).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        // A panic while holding the lock cannot leave a DateTime half-written, so a poisoned lock
        // still holds a valid instant.
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Lets an `Arc<dyn Clock>` (or any shared clock) be passed where a `Clock` is expected.
impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 30, h, m, s).unwrap()
    }

    #[test]
    fn manual_clock_stands_still_until_moved() {
        let clock = ManualClock::new(at(1, 0, 0));
        assert_eq!(clock.now(), at(1, 0, 0));
        assert_eq!(clock.now(), at(1, 0, 0));
        clock.advance(chrono::Duration::seconds(90));
        assert_eq!(clock.now(), at(1, 1, 30));
        clock.set(at(0, 0, 0));
        assert_eq!(clock.now(), at(0, 0, 0));
    }

    #[test]
    fn clones_share_the_instant() {
        let clock = ManualClock::new(at(1, 0, 0));
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        clock.advance(chrono::Duration::minutes(5));
        assert_eq!(shared.now(), at(1, 5, 0));
    }

    #[test]
    fn system_clock_reads_the_wall_clock() {
        use chrono::Datelike;
        assert!(SystemClock.now().year() >= 2025);
    }
}
