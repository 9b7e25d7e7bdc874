//! Virtual time: the controllers' [`Clock`] reads tokio's paused clock, so a simulated week
//! takes as long as the work in it, and timers fire at exact virtual instants.

use chrono::{DateTime, TimeDelta, Utc};
use ebb_runtime::Clock;
use tokio::time::Instant;

/// "Now" for everything in a simulation: `origin` plus the tokio time elapsed since the clock
/// was made. Run it on a runtime whose time is paused (`start_paused`), where tokio advances
/// time only when every task waits on a timer.
#[derive(Debug, Clone, Copy)]
pub struct VirtualClock {
    origin: DateTime<Utc>,
    start: Instant,
}

impl VirtualClock {
    /// A clock standing at `origin` now.
    pub fn starting_at(origin: DateTime<Utc>) -> Self {
        Self {
            origin,
            start: Instant::now(),
        }
    }

    /// The tokio instant of `at` (the start for an instant before it).
    pub fn instant_of(&self, at: DateTime<Utc>) -> Instant {
        let since = (at - self.origin).to_std().unwrap_or_default();
        self.start + since
    }

    /// Sleeps until `at`, virtual time.
    pub async fn sleep_until(&self, at: DateTime<Utc>) {
        tokio::time::sleep_until(self.instant_of(at)).await;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = Instant::now().duration_since(self.start);
        self.origin + TimeDelta::from_std(elapsed).unwrap_or(TimeDelta::MAX)
    }
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
