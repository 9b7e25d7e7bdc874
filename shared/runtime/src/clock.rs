//! An injectable source of "now".
//!
//! Reconcilers and decisions never call `Timestamp::now()` themselves: they get `now` from a [`Clock`], so
//! tests can pin time and step it forward ([`ManualClock`]).

use std::sync::{Arc, Mutex, PoisonError};

use jiff::{SignedDuration, Timestamp};

/// A source of the current wall-clock instant.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The real clock: the system's wall-clock time.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to. Clones share the same instant, so a test can keep one
/// handle and give another to the code under test.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<Timestamp>>,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now: Arc::new(Mutex::new(now)),
        }
    }

    /// Moves the clock to `now` (backwards too: tests of clock skew need that).
    pub fn set(&self, now: Timestamp) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }

    /// Moves the clock by `by` (negative moves it back).
    pub fn advance(&self, by: SignedDuration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        // A panic while holding the lock cannot leave a DateTime half-written, so a poisoned lock
        // still holds a valid instant.
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Lets an `Arc<dyn Clock>` (or any shared clock) be passed where a `Clock` is expected.
impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn at(h: i8, m: i8, s: i8) -> Timestamp {
        jiff::civil::datetime(2025, 3, 30, h, m, s, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
    }

    #[test]
    fn manual_clock_stands_still_until_moved() {
        let clock = ManualClock::new(at(1, 0, 0));
        assert_eq!(clock.now(), at(1, 0, 0));
        assert_eq!(clock.now(), at(1, 0, 0));
        clock.advance(SignedDuration::from_secs(90));
        assert_eq!(clock.now(), at(1, 1, 30));
        clock.set(at(0, 0, 0));
        assert_eq!(clock.now(), at(0, 0, 0));
    }

    #[test]
    fn clones_share_the_instant() {
        let clock = ManualClock::new(at(1, 0, 0));
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        clock.advance(SignedDuration::from_mins(5));
        assert_eq!(shared.now(), at(1, 5, 0));
    }

    #[test]
    fn system_clock_reads_the_wall_clock() {
        assert!(SystemClock.now() >= "2025-01-01T00:00:00Z".parse().unwrap());
    }
}
