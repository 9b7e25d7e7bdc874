//! Virtual time: the controllers' [`Clock`] reads tokio's paused clock, so a simulated week
//! takes as long as the work in it, and timers fire at exact virtual instants.

use ebb_runtime::Clock;
use jiff::{SignedDuration, Timestamp};
use tokio::time::Instant;

/// "Now" for everything in a simulation: `origin` plus the tokio time elapsed since the clock
/// was made. Run it on a runtime whose time is paused (`start_paused`), where tokio advances
/// time only when every task waits on a timer.
#[derive(Debug, Clone, Copy)]
pub struct VirtualClock {
    origin: Timestamp,
    start: Instant,
}

impl VirtualClock {
    /// A clock standing at `origin` now.
    pub fn starting_at(origin: Timestamp) -> Self {
        Self {
            origin,
            start: Instant::now(),
        }
    }

    /// The tokio instant of `at` (the start for an instant before it).
    pub fn instant_of(&self, at: Timestamp) -> Instant {
        let since =
            std::time::Duration::try_from(at.duration_since(self.origin)).unwrap_or_default();
        self.start + since
    }

    /// Sleeps until `at`, virtual time.
    pub async fn sleep_until(&self, at: Timestamp) {
        tokio::time::sleep_until(self.instant_of(at)).await;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        let elapsed = Instant::now().duration_since(self.start);
        self.origin + SignedDuration::try_from(elapsed).unwrap_or(SignedDuration::MAX)
    }
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
